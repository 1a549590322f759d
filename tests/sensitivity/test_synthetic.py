"""Synthetic low-resolution predictions against the paper's Tables 3, 5 and 11 on the
shipped COCO, LVIS and panoptic samples."""
import json
import os

import numpy as np
import pycocotools.mask as mask_utils
import pytest

from boundary_api.sensitivity.perturbations import low_resolution_mask
from boundary_api.sensitivity.synthetic import (evaluate_instance_predictions, evaluate_panoptic_predictions,
                                             synthetic_instance_predictions, synthetic_panoptic_predictions)
from conftest import COCO_GT, DATA, LVIS_GT, golden_cases


@pytest.fixture(scope="module")
def coco28():
    preds = synthetic_instance_predictions(COCO_GT, 28)
    return preds, evaluate_instance_predictions(COCO_GT, preds)


def test_predictions_are_the_low_resolution_masks(coco28):
    preds, _ = coco28
    d = json.load(open(COCO_GT))
    imgs = {i["id"]: i for i in d["images"]}
    anns = [a for a in d["annotations"] if not a["iscrowd"]]
    assert len(preds) == len(anns) == 830
    for a, p in list(zip(anns, preds))[::37]:
        i = imgs[a["image_id"]]
        assert (p["image_id"], p["category_id"], p["score"]) == (a["image_id"], a["category_id"], 1.0)
        m = low_resolution_mask(a["segmentation"], i["height"], i["width"], 28, bbox=a["bbox"])
        assert np.array_equal(mask_utils.decode(p["segmentation"]), m)
    json.dumps(preds)  # serialisable as is


def test_coco_28x28_pattern_of_table_3(coco28):
    _, res = coco28
    mask, bnd = res["segm"], res["boundary"]
    # paper (COCO val): Mask AP 96.5, APl 95.0; Boundary AP 85.9, APl 73.0
    assert mask["AP"] > 90
    assert abs(bnd["APs"] - mask["APs"]) <= 1.0
    assert bnd["APl"] <= mask["APl"] - 10
    assert bnd["AP"] < mask["AP"] and bnd["APs"] >= bnd["APm"] >= bnd["APl"]


def test_lvis_28x28_same_pattern():
    res = evaluate_instance_predictions(LVIS_GT, synthetic_instance_predictions(LVIS_GT, 28))
    mask, bnd = res["segm"], res["boundary"]
    assert mask["AP"] > 90
    assert abs(bnd["APs"] - mask["APs"]) <= 1.0
    assert bnd["APl"] <= mask["APl"] - 10
    assert {"APr", "APc", "APf"} <= set(mask)


def test_higher_resolution_closes_the_gap(coco28):
    _, r28 = coco28
    r56 = evaluate_instance_predictions(COCO_GT, synthetic_instance_predictions(COCO_GT, 56), iou_types=("boundary",))
    assert r56["boundary"]["APl"] > r28["boundary"]["APl"] + 5


def test_panoptic_down4_is_the_shipped_prediction_and_its_golden_numbers(tmp_path):
    gt = os.path.join(DATA, "panoptic", "panoptic_examples.json")
    out = str(tmp_path / "down4.json")
    doc = synthetic_panoptic_predictions(gt, out, 4)
    shipped = json.load(open(os.path.join(DATA, "panoptic", "pred_down4.json")))
    for a, b in zip(doc["annotations"], shipped["annotations"]):
        assert [s["id"] for s in a["segments_info"]] == [s["id"] for s in b["segments_info"]]
    res = evaluate_panoptic_predictions(gt, out)
    checked = 0
    for case in golden_cases("panoptic_eval.json"):
        if "down4" in case["name"] and case.get("dilation_ratio") in (None, 0.02):
            checked += 1
            for g in ("All", "Things", "Stuff"):
                assert res[case["iou_type"]][g]["PQ"] == pytest.approx(100 * case["results"][g]["pq"], abs=1e-9)
    assert checked == 2
    # Table 11's pattern: Boundary PQ below PQ, the gap in SQ, not in RQ
    m, b = res["segm"]["All"], res["boundary"]["All"]
    assert b["PQ"] < m["PQ"]
    assert m["SQ"] - b["SQ"] > 0.5 * (m["PQ"] - b["PQ"]) and m["RQ"] - b["RQ"] < m["SQ"] - b["SQ"]


def test_panoptic_output_folder_must_not_be_the_ground_truth(tmp_path):
    gt = os.path.join(DATA, "panoptic", "panoptic_examples.json")
    with pytest.raises(ValueError, match="would be overwritten"):
        synthetic_panoptic_predictions(gt, gt, 2)


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="resolution must be"):
        synthetic_instance_predictions(COCO_GT, 0)
    p = tmp_path / "x.json"
    p.write_text("[]")
    with pytest.raises(ValueError, match="not a COCO/LVIS instances file"):
        synthetic_instance_predictions(str(p))


@pytest.mark.slow
def test_study_reads_once_and_gives_each_resolution(coco28, tmp_path):
    from boundary_api.sensitivity.synthetic import synthetic_instance_study

    preds28, res28 = coco28
    study = list(synthetic_instance_study(COCO_GT, [28, 14], evaluate=True))
    assert [n for n, _, _ in study] == [28, 14]
    assert study[0][1] == preds28 and study[0][2] == res28
    assert study[1][1] == synthetic_instance_predictions(COCO_GT, 14)
    assert [m for _, _, m in synthetic_instance_study(COCO_GT, [28])] == [None]  # no evaluation asked
    bad = tmp_path / "bad.json"
    bad.write_text("[]")
    with pytest.raises(ValueError, match="not a COCO/LVIS instances file"):
        synthetic_instance_study(str(bad), [28])  # refused when called, before any prediction is made
