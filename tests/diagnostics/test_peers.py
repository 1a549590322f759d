"""The confusion matrix, calibration and LRP against independent implementations
on the bundled COCO data, for bbox and segm (issue 30): hotcoco 1.3.0
(confusion matrix, calibration) and vernier 0.5.4 (optimal LRP, also with
Boundary IoU, which vernier computes too).  Each test
skips only when its peer is not importable (both are in the ``test`` extra)."""
import contextlib
import io
import json
import math

import numpy as np
import pycocotools.mask as mask_utils
import pytest

from boundary_api import COCO, COCOeval
from boundary_api.diagnostics.calibration import calibration
from boundary_api.diagnostics.confusion import confusion_matrix
from boundary_api.diagnostics.lrp import optimal_lrp
from conftest import COCO_DT, COCO_GT


def _results_with_boxes():
    # vernier reads a result's box; pycocotools' loadRes derives it from the mask the same way
    dts = json.load(open(COCO_DT))
    for d in dts:
        d["bbox"] = [float(x) for x in mask_utils.toBbox(d["segmentation"])]
    return dts


def _ours(iou_type, dts=None):
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(dts if dts is not None else COCO_DT), iou_type)
        ev.evaluate()
    return ev


def _hotcoco(iou_type):
    hotcoco = pytest.importorskip("hotcoco")
    with contextlib.redirect_stdout(io.StringIO()):
        gt = hotcoco.COCO(COCO_GT)
        ev = hotcoco.COCOeval(gt, gt.load_res(COCO_DT), iou_type)
        ev.evaluate()
    return ev


@pytest.mark.parametrize("thr", [0.3, 0.5, 0.75, 0.9])
@pytest.mark.parametrize("iou_type", ["segm", "bbox"])
def test_confusion_matrix_equals_hotcoco(iou_type, thr):
    peer = _hotcoco(iou_type).confusion_matrix(iou_thr=thr)
    ev = _ours(iou_type)
    ours = confusion_matrix(ev, thr, crowd="background")
    # by default, detections on crowd regions of their category are not counted:
    # only the background row can differ, and only downwards
    default = confusion_matrix(ev, thr)
    np.testing.assert_array_equal(default["matrix"][:-1], ours["matrix"][:-1])
    assert (default["matrix"][-1] <= ours["matrix"][-1]).all()
    assert ours["cat_ids"] == list(peer["cat_ids"])
    np.testing.assert_array_equal(ours["matrix"], np.asarray(peer["matrix"]))
    np.testing.assert_allclose(ours["normalized"], np.asarray(peer["normalized"]), rtol=0, atol=1e-12)
    assert ours["matrix"].sum() > 800


@pytest.mark.parametrize("thr", [0.5, 0.75])
@pytest.mark.parametrize("iou_type", ["segm", "bbox"])
def test_calibration_equals_hotcoco(iou_type, thr):
    peer = _hotcoco(iou_type).calibration(n_bins=10, iou_threshold=thr)
    ours = calibration(_ours(iou_type), thr, 10)
    assert ours["ece"] == pytest.approx(peer["ece"], abs=1e-12)
    assert ours["mce"] == pytest.approx(peer["mce"], abs=1e-12)
    assert ours["count"] == peer["num_detections"]
    for mine, theirs in zip(ours["bins"], peer["bins"]):
        assert mine["count"] == theirs["count"]
        if mine["count"]:
            assert mine["confidence"] == pytest.approx(theirs["avg_confidence"], abs=1e-12)
            assert mine["accuracy"] == pytest.approx(theirs["avg_accuracy"], abs=1e-12)
    by_name = {r["name"]: r["ece"] for r in ours["per_category"].values()}
    assert set(by_name) == set(peer["per_category"])
    for name, ece in peer["per_category"].items():
        assert by_name[name] == pytest.approx(ece, abs=1e-12)


@pytest.mark.parametrize("iou_type", ["boundary", "segm", "bbox"])
def test_optimal_lrp_equals_vernier(iou_type):
    vernier = pytest.importorskip("vernier")
    from vernier._lrp import optimal_lrp as peer_lrp

    dts = _results_with_boxes()
    kind = {"boundary": lambda: vernier.instance.Boundary(dilation_ratio=0.02), "segm": vernier.instance.Segm,
            "bbox": vernier.instance.Bbox}[iou_type]()
    peer = peer_lrp(open(COCO_GT, "rb").read(), json.dumps(dts).encode(), iou=kind)
    ours = optimal_lrp(_ours(iou_type, dts))
    for key, theirs in (("olrp", peer.olrp), ("loc", peer.loc), ("fp", peer.fp), ("fn", peer.fn)):
        assert ours[key] == pytest.approx(theirs, abs=1e-12), key
    n = 0
    for row in peer.per_class:
        if math.isnan(row.olrp):
            assert row.category_id not in ours["per_category"]
            continue
        mine = ours["per_category"][row.category_id]
        for key, theirs in (("olrp", row.olrp), ("loc", row.olrp_loc), ("fp", row.olrp_fp), ("fn", row.olrp_fn),
                            ("threshold", row.tau)):
            if math.isnan(theirs):
                assert mine[key] is None, (row.category_id, key)
            else:
                assert mine[key] == pytest.approx(theirs, abs=1e-12), (row.category_id, key)
        n += 1
    assert n == len(ours["per_category"]) == 70
