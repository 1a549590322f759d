"""COCOeval.summarize() keeps pycocotools' lines for any maxDets (the first one
-1 without 100), and says so in one warning (issue 25)."""
import contextlib
import io
import warnings

import pycocotools.coco
import pycocotools.cocoeval
import pytest

from boundary_api.coco.dataset import COCO
from boundary_api.coco.cocoeval import COCOeval
from conftest import COCO_DT, COCO_GT


def _summary(coco_cls, eval_cls, max_dets):
    with contextlib.redirect_stdout(io.StringIO()):
        gt = coco_cls(COCO_GT)
        ev = eval_cls(gt, gt.loadRes(COCO_DT), "segm")
        ev.params.maxDets = max_dets
        ev.evaluate()
        ev.accumulate()
    buf = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(buf):
        warnings.simplefilter("always")
        ev.summarize()
    return buf.getvalue(), list(ev.stats), [str(w.message) for w in caught if w.category is UserWarning]


def test_max_dets_without_100_prints_pycocotools_lines_and_warns_once():
    ours, stats, caught = _summary(COCO, COCOeval, [1, 10, 300])
    theirs, ref_stats, _ = _summary(pycocotools.coco.COCO, pycocotools.cocoeval.COCOeval, [1, 10, 300])
    assert ours == theirs and stats == ref_stats and stats[0] == -1
    assert len(caught) == 1 and "\n" not in caught[0]
    assert "maxDets [1, 10, 300] has no 100" in caught[0] and "-1" in caught[0]


@pytest.mark.parametrize("max_dets", [[1, 10, 100], [1, 100, 300]])
def test_no_warning_when_100_is_evaluated(max_dets):
    ours, stats, caught = _summary(COCO, COCOeval, max_dets)
    assert caught == [] and stats[0] != -1



def _small_summary(coco_cls, eval_cls, max_dets):
    """summarize() of a one-image box evaluation, warnings as the caller's filters say."""
    gt = {"images": [{"id": 1, "height": 20, "width": 20}], "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [2, 2, 8, 8], "area": 64.0,
                           "iscrowd": 0}]}
    with contextlib.redirect_stdout(io.StringIO()):
        coco = coco_cls()
        coco.dataset = gt
        coco.createIndex()
        ev = eval_cls(coco, coco.loadRes([{"image_id": 1, "category_id": 1, "bbox": [3, 2, 8, 8], "score": 0.5}]),
                      "bbox")
        ev.params.maxDets = max_dets
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return list(ev.stats)


@pytest.mark.parametrize("max_dets", [[1], [10, 300]])
def test_no_warning_where_pycocotools_summary_fails(max_dets):
    """pycocotools' summary reads maxDets[2]: with fewer entries it raises
    IndexError, and so does boundary_api, without a warning before it (under
    ``-W error::UserWarning`` the warning would stand in for the IndexError:
    Detectron2's test_fast_eval compares the class names, issue 40)."""
    with pytest.raises(IndexError):
        _small_summary(pycocotools.coco.COCO, pycocotools.cocoeval.COCOeval, max_dets)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(IndexError):
            _small_summary(COCO, COCOeval, max_dets)
    with pytest.warns(UserWarning, match=r"maxDets \[1, 10, 300\] has no 100"):
        assert _small_summary(COCO, COCOeval, [1, 10, 300])[0] == -1
