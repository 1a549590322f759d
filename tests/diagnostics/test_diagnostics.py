"""Confusion matrix, calibration and LRP on hand-computed cases (issue 30), and
their boundary numbers read from the evaluation's own Boundary IoU matching."""
import contextlib
import io

import numpy as np
import pycocotools.mask as mask_utils
import pytest

from boundary_api import COCO, COCOeval, LVISEval
from boundary_api.diagnostics.calibration import calibration, calibration_error
from boundary_api.diagnostics.confusion import confusion_matrix, top_confusions
from boundary_api.diagnostics.lrp import lrp_error, optimal_lrp
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT


def _rect(x, y, w, h):
    return [[x, y, x + w, y, x + w, y + h, x, y + h]]


def _rle(x, y, w, h, size=64):
    m = np.zeros((size, size), np.uint8, order="F")
    m[y:y + h, x:x + w] = 1
    r = mask_utils.encode(m)
    r["counts"] = r["counts"].decode()
    return r


GT = {"images": [{"id": 1, "width": 64, "height": 64}, {"id": 2, "width": 64, "height": 64}],
      "categories": [{"id": 1, "name": "cat"}, {"id": 2, "name": "dog"}],
      "annotations": [
          {"id": 1, "image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0,
           "segmentation": _rect(0, 0, 10, 10)},
          {"id": 2, "image_id": 1, "category_id": 2, "bbox": [20, 20, 10, 10], "area": 100, "iscrowd": 0,
           "segmentation": _rect(20, 20, 10, 10)},
          {"id": 3, "image_id": 2, "category_id": 1, "bbox": [0, 0, 10, 10], "area": 100, "iscrowd": 0,
           "segmentation": _rect(0, 0, 10, 10)}]}
# d1: a cat, box IoU 0.8; d2: the dog taken for a cat; d3: a dog on nothing
DETS = [(1, 1, (0, 0, 10, 8), 0.9), (1, 1, (20, 20, 10, 10), 0.8), (1, 2, (40, 40, 5, 5), 0.3)]


def _evaluated(iou_type):
    if iou_type == "bbox":
        dts = [{"image_id": i, "category_id": c, "bbox": list(b), "score": s} for i, c, b, s in DETS]
    else:
        dts = [{"image_id": i, "category_id": c, "segmentation": _rle(*b), "score": s} for i, c, b, s in DETS]
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO.from_dataset({k: (list(v) if isinstance(v, list) else v) for k, v in GT.items()})
        ev = COCOeval(gt, gt.loadRes(dts), iou_type)
        ev.evaluate()
    return ev


def test_hand_computed_bbox():
    ev = _evaluated("bbox")
    cm = confusion_matrix(ev, 0.5)
    expected = np.zeros((3, 3), np.int64)
    expected[0, 0] = 1  # cat found as cat
    expected[1, 0] = 1  # dog taken for a cat
    expected[2, 1] = 1  # a dog on background
    expected[0, 2] = 1  # the cat of image 2 missed
    np.testing.assert_array_equal(cm["matrix"], expected)
    np.testing.assert_allclose(cm["normalized"][0], [0.5, 0, 0.5])
    assert top_confusions(cm) == [{"gt": "dog", "dt": "cat", "count": 1}]
    cal = calibration(ev, 0.5, 10)
    # bins 9 (0.9, right), 8 (0.8, wrong), 3 (0.3, wrong)
    assert cal["ece"] == pytest.approx((0.1 + 0.8 + 0.3) / 3, abs=1e-12)
    assert cal["mce"] == pytest.approx(0.8, abs=1e-12)
    assert [b["count"] for b in cal["bins"]] == [0, 0, 0, 1, 0, 0, 0, 0, 1, 1]
    assert cal["per_category"][2]["ece"] == pytest.approx(0.3, abs=1e-12)
    lrp = optimal_lrp(ev)
    cat = lrp["per_category"][1]
    # at s in (0.8, 0.9]: one TP of IoU 0.8, one FN: (0.2/0.5 + 1) / 2
    assert cat["olrp"] == pytest.approx(0.7, abs=1e-12)
    assert cat["threshold"] == 0.9
    assert cat["loc"] == pytest.approx(0.4, abs=1e-12) and cat["fp"] == 0.0 and cat["fn"] == 0.5
    assert lrp["per_category"][2] == {"name": "dog", "olrp": 1.0, "loc": None, "fp": 0.0, "fn": 1.0,
                                      "threshold": None}
    assert lrp["olrp"] == pytest.approx(0.85, abs=1e-12) and lrp["fn"] == pytest.approx(0.75)
    assert lrp["loc"] == pytest.approx(0.4, abs=1e-12)
    assert lrp_error([0.8], 1, 2) == pytest.approx((0.4 + 1 + 1) / 3)


def test_min_score_and_crowd_option():
    ev = _evaluated("bbox")
    cm = confusion_matrix(ev, 0.5, min_score=0.5)
    assert cm["matrix"][2, 1] == 0 and cm["matrix"].sum() == 3
    with pytest.raises(ValueError):
        confusion_matrix(ev, 1.5)
    with pytest.raises(ValueError):
        confusion_matrix(ev, 0.5, crowd="count")


@pytest.mark.parametrize("iou_type", ["boundary", "segm"])
def test_masks_use_the_evaluations_iou(iou_type):
    """LRP's localisation reads the evaluation's own IoU (Boundary IoU for
    'boundary': lower than the mask IoU 0.8 of d1)."""
    ev = _evaluated(iou_type)
    iou = ev.ious[1, 1][0, 0]
    assert (iou < 0.8) if iou_type == "boundary" else iou == pytest.approx(0.8)
    lrp = optimal_lrp(ev)
    if iou >= 0.5:
        assert lrp["per_category"][1]["loc"] == pytest.approx((1 - iou) / 0.5, abs=1e-12)
    cal = calibration(ev, 0.5)
    assert cal["count"] == 3
    cm = confusion_matrix(ev, 0.5)
    assert cm["matrix"][1, 0] == 1 and cm["iou_type"] == iou_type


def test_calibration_error_edges():
    r = calibration_error([0.0, 1.0, 1.0, 0.55], [False, True, True, True], n_bins=2)
    assert [b["count"] for b in r["bins"]] == [1, 3]
    assert r["ece"] == pytest.approx(0.25 * 0 + 0.75 * abs(1 - (2.55 / 3)))
    assert calibration_error([], [], 5)["ece"] is None
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError):
            calibration_error([0.5], [True], bad)
    with pytest.raises(ValueError):
        calibration_error([float("nan")], [True])


def test_thresholds_must_be_evaluated():
    ev = _evaluated("bbox")
    with pytest.raises(ValueError, match="not among"):
        calibration(ev, 0.52)
    with pytest.raises(ValueError, match="not among"):
        optimal_lrp(ev, 0.33)


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["boundary", "segm", "bbox"])
def test_lvis_runs(iou_type):
    ev = LVISEval(LVIS_GT, LVIS_DT, iou_type=iou_type)
    ev.evaluate()
    cm = confusion_matrix(ev, 0.5)
    cal = calibration(ev, 0.5)
    lrp = optimal_lrp(ev)
    K = len(cm["cat_ids"])
    assert cm["matrix"].shape == (K + 1, K + 1) and cm["matrix"].trace() > 0
    assert 0 <= cal["ece"] <= 1 and 0 <= lrp["olrp"] <= 1
    # calibration's correct detections are the evaluation's true positives at 0.5
    assert cal["count"] == int(((ev._state.dt_flags[0, 0] & 2) == 0).sum())


def test_coco_boundary_is_harder_than_segm():
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        dt = gt.loadRes(COCO_DT)
        evs = {t: COCOeval(gt, dt, t) for t in ("boundary", "segm")}
        for ev in evs.values():
            ev.evaluate()
    b, s = optimal_lrp(evs["boundary"]), optimal_lrp(evs["segm"])
    assert b["olrp"] > s["olrp"]
    assert np.trace(confusion_matrix(evs["boundary"])["matrix"][:-1, :-1]) < \
        np.trace(confusion_matrix(evs["segm"])["matrix"][:-1, :-1])


def test_only_the_evaluated_images_count():
    ev = _evaluated("bbox")
    ev.params.imgIds = [1]
    with contextlib.redirect_stdout(io.StringIO()):
        ev.evaluate()
    cm = confusion_matrix(ev, 0.5)
    assert cm["matrix"][0, 2] == 0 and cm["matrix"].sum() == 3  # image 2's missed cat is not evaluated
    assert optimal_lrp(ev)["per_category"][1]["fn"] == 0.0
