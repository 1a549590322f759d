"""boundary_api.LVISEval(ap='pooled' | 'fixed') against large-vocab-devil's own classes
(Dave et al. 2021, github.com/achalddave/large-vocab-devil): the same user code run on
both, comparing ``eval['precision']``, ``eval['recall']`` and ``results``.

large-vocab-devil is not on a package index and not part of this repository: these
tests import it from a checkout at ``LVDEVIL_DIR`` (default /tmp/lvdevil) and are
skipped without one.  numpy 2 lacks the ``np.float`` its ``accumulate`` (and lvis')
calls: restored with ``monkeypatch`` for each test, nothing else changed.  The numbers
of its scripts are also kept in tests/data/lvis_fixed_pooled.json, which the quick
tests (tests/lvis/test_fixed_pooled.py) compare with everywhere."""
import importlib
import logging
import sys
import warnings

import lvis
import numpy as np
import pytest

import boundary_api
import lvdevil_oracle as oracle
from conftest import LVIS_DT, LVIS_GT

pytestmark = [pytest.mark.slow,  # (lvis' loops: 3-5 s a test)
              pytest.mark.skipif(not oracle.available(),
                                 reason=f"no large-vocab-devil checkout at {oracle.lvdevil_dir()} (LVDEVIL_DIR)")]

POOLED_KEYS = {"AP-pooled-all": "AP", "AP-pooled-r": "APr", "AP-pooled-c": "APc", "AP-pooled-f": "APf"}
#: the first images only: lvis' loops over 1230 categories take seconds
SOME = 40


@pytest.fixture
def eval_wrapper(monkeypatch):
    monkeypatch.setattr(np, "float", float, raising=False)  # numpy 2: their accumulate calls np.float
    monkeypatch.syspath_prepend(oracle.lvdevil_dir())
    sys.modules.pop("lvdevil.eval_wrapper", None)
    logger = logging.getLogger("lvis")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield importlib.import_module("lvdevil.eval_wrapper")
    logger.setLevel(level)
    sys.modules.pop("lvdevil.eval_wrapper", None)


def top_k_results(k):
    """The results as the scripts hand them to LVISResults (top ``k`` per
    category, boxes dropped for masks): this package's own loader, checked
    against the scripts' in tests/lvis/test_fixed_pooled.py."""
    import json

    from boundary_api.lvis.fixed_pooled import top_k_per_category

    with open(LVIS_DT) as f:
        anns, _ = top_k_per_category(json.load(f), k)
    return anns


@pytest.mark.parametrize("iou", ["segm", "bbox"])
def test_pooled_eval_class(eval_wrapper, iou):
    """``LVISPooledEval(gt, dt, iou, pools=[...])`` with the script's
    parameters, against ``LVISEval(gt, dt, iou, ap='pooled')``."""
    def user_code(make_eval, gt_cls, dt_cls):
        gt = gt_cls(LVIS_GT)
        dt = dt_cls(gt, [dict(a) for a in top_k_results(5)], max_dets=-1)
        ev = make_eval(gt, dt)
        ev.params.max_dets = -1
        ev.params.img_ids = ev.params.img_ids[:SOME]
        ev.run()
        return ev

    theirs = user_code(lambda gt, dt: eval_wrapper.LVISPooledEval(gt, dt, iou, pools=["all", "r", "c", "f"]),
                       lvis.LVIS, lvis.LVISResults)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ours = user_code(lambda gt, dt: boundary_api.LVISEval(gt, dt, iou, ap="pooled", dets_per_cat=5),
                         boundary_api.LVIS, boundary_api.LVISResults)
    # the script keeps area range 'all' only; LVISEval(ap='pooled') does so itself
    np.testing.assert_array_equal(ours.eval["precision"], theirs.eval["precision"][:, :, :, :1])
    np.testing.assert_array_equal(ours.eval["recall"], theirs.eval["recall"][:, :, :1])
    assert {POOLED_KEYS[k]: v for k, v in theirs.results.items()} == dict(ours.results)


@pytest.mark.parametrize("iou", ["segm", "bbox"])
def test_fixed_is_lvis_eval_without_a_limit_per_image(iou):
    """The Fixed AP script's evaluation: lvis' LVISEval with params.max_dets = -1 on
    the top-K results loaded with max_dets=-1, against LVISEval(ap='fixed')."""
    def user_code(make_eval, gt_cls, dt_cls):
        gt = gt_cls(LVIS_GT)
        dt = dt_cls(gt, [dict(a) for a in top_k_results(5)], max_dets=-1)
        ev = make_eval(gt, dt)
        ev.params.max_dets = -1
        ev.params.img_ids = ev.params.img_ids[:SOME]
        ev.evaluate()
        return ev

    theirs = user_code(lambda gt, dt: lvis.LVISEval(gt, dt, iou), lvis.LVIS, lvis.LVISResults)
    from boundary_api.lvis.eval import _accumulate_lvis_on_any_numpy

    _accumulate_lvis_on_any_numpy(theirs)
    theirs.summarize()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ours = user_code(lambda gt, dt: boundary_api.LVISEval(gt, dt, iou, ap="fixed", dets_per_cat=5),
                         boundary_api.LVIS, boundary_api.LVISResults)
    ours.accumulate()
    ours.summarize()
    np.testing.assert_array_equal(ours.eval["precision"], theirs.eval["precision"])
    assert list(ours.results.items()) == list(theirs.results.items())
    assert "AR@-1" in ours.results
