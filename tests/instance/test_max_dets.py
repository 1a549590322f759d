"""``params.maxDets`` with negative entries: pycocotools slices ``[0:maxDet]``,
so ``-1`` means "all but the last" (and LVIS uses -1 for "no cap" when loading
results).  Both paths must answer exactly as pycocotools' own COCOeval; the
Cython accumulate used to hand a negative count to qsort and crash."""
import contextlib
import copy
import io

import numpy as np
import pytest
from pycocotools.coco import COCO as PlainCOCO
from pycocotools.cocoeval import COCOeval as PlainCOCOeval

from boundary_api import COCOeval, LVIS, LVISEval, LVISResults
from synth import make_dataset, make_lvis_dataset

MAX_DETS = [[1, 10, -1], [-1], [0, 3, -2], [-5, 100], [1, 10, 100]]


def quietly(fn):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn()


@pytest.fixture(scope="module")
def data():
    gt, dets = make_dataset(seed=3, num_images=20)

    def build():
        c = PlainCOCO()
        c.dataset = copy.deepcopy(gt)
        c.createIndex()
        return c, c.loadRes(copy.deepcopy(dets))
    return quietly(build)


# (maxDets without 100 on purpose: tests/coco/test_summarize_max_dets.py asserts the warning)
@pytest.mark.filterwarnings("ignore:summarize\\(\\). params.maxDets")
@pytest.mark.parametrize("max_dets", MAX_DETS)
@pytest.mark.parametrize("iou_type", ["segm", "bbox"])
def test_negative_max_dets_equal_pycocotools(data, max_dets, iou_type):
    gt, dt = data

    def run(cls, **kw):
        ev = cls(gt, dt, iou_type, **kw)
        ev.params.maxDets = list(max_dets)
        ev.evaluate()
        ev.accumulate()
        return ev
    ref = quietly(lambda: run(PlainCOCOeval))
    for fast in (True, False):
        ours = quietly(lambda: run(COCOeval, use_fast_impl=fast))
        assert ours.eval["counts"] == ref.eval["counts"]
        for key in ("precision", "recall", "scores"):
            np.testing.assert_array_equal(ours.eval[key], ref.eval[key], err_msg=f"{key} fast={fast}")
        for e_ours, e_ref in zip(ours.evalImgs, ref.evalImgs):
            assert (e_ours is None) == (e_ref is None)
            if e_ref is not None:
                assert e_ours["maxDet"] == e_ref["maxDet"]
                assert e_ours["dtIds"] == e_ref["dtIds"]
                np.testing.assert_array_equal(e_ours["dtMatches"], e_ref["dtMatches"])
        if len(max_dets) >= 3:  # pycocotools' summary reads maxDets[2]
            quietly(ours.summarize)
            quietly(ref.summarize)
            np.testing.assert_array_equal(ours.stats, ref.stats)
    assert (ref.eval["precision"] > -1).any()


@pytest.mark.parametrize("max_dets", MAX_DETS[:3])
def test_negative_max_dets_boundary_fast_equals_pycocotools_loops(data, max_dets):
    gt, dt = data
    evs = []
    for fast in (True, False):
        ev = COCOeval(gt, dt, "boundary", use_fast_impl=fast)
        ev.params.maxDets = list(max_dets)
        quietly(ev.evaluate)
        quietly(ev.accumulate)
        evs.append(ev)
    for key in ("precision", "recall", "scores"):
        np.testing.assert_array_equal(evs[0].eval[key], evs[1].eval[key])


def test_lvis_no_cap():
    """max_dets=-1 loads every result (lvis' own rule); both paths agree."""
    gt, dets = make_lvis_dataset(seed=2, num_images=12)
    res = []
    for fast in (True, False):
        g = LVIS.from_dataset(copy.deepcopy(gt))
        ev = LVISEval(g, LVISResults(g, copy.deepcopy(dets), max_dets=-1), "segm", max_dets=-1,
                      use_fast_impl=fast)
        ev.run()
        res.append(ev)
    assert len(res[0].lvis_dt.anns) == len(dets)
    for key in ("precision", "recall"):
        np.testing.assert_array_equal(res[0].eval[key], res[1].eval[key])
