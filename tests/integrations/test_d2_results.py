"""boundary_api.integrations.d2_results: Boundary AP of Detectron2-shaped predictions,
without Detectron2, on the real COCO/LVIS test data and the reference's
golden numbers."""
import contextlib
import copy
import io
import json
import logging
import math
import os
import shutil

import numpy as np
import pycocotools.coco
import pycocotools.mask as mask_util
import pytest

from boundary_api import COCO, COCOeval
from boundary_api.instance.cache import cache_for
from boundary_api.integrations.d2_results import (COCO_METRICS, LVIS_METRICS, coco_boundary_metrics, format_table,
                                     lvis_boundary_metrics, prepare_results, release_shared_ground_truth,
                                     shared_ground_truth)
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT, golden_cases, identical

BOUNDARY_CASES = [c for c in golden_cases("instance_eval.json", "coco") if c["iou_type"] == "boundary"]
GOLDEN_002 = next(c for c in BOUNDARY_CASES if c["dilation_ratio"] == 0.02)


def silent(fn, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)


def load_json(path):
    with open(path) as f:
        return json.load(f)


def d2_gt(path=COCO_GT):
    """The ground truth as Detectron2's COCOEvaluator builds it: plain pycocotools."""
    return silent(pycocotools.coco.COCO, path)


def d2_shaped(results, dataset_to_contiguous):
    """What instances_to_coco_json gives for these results: contiguous
    category ids, an XYWH box, a float score and a str-counts RLE."""
    out = []
    for r in results:
        rle = dict(r["segmentation"])
        assert isinstance(rle["counts"], str)
        out.append({
            "image_id": r["image_id"],
            "category_id": dataset_to_contiguous[r["category_id"]],
            "bbox": [float(v) for v in mask_util.toBbox(rle)],
            "score": float(r["score"]),
            "segmentation": rle,
        })
    return out


@pytest.fixture(scope="module")
def coco_setup():
    gt = load_json(COCO_GT)
    cat_ids = sorted(c["id"] for c in gt["categories"])
    # Detectron2's load_coco_json: contiguous ids in sorted dataset-id order
    to_contiguous = {cid: i for i, cid in enumerate(cat_ids)}
    names = [next(c["name"] for c in gt["categories"] if c["id"] == cid) for cid in cat_ids]
    preds = d2_shaped(load_json(COCO_DT), to_contiguous)
    return {"preds": preds, "reverse": {v: k for k, v in to_contiguous.items()}, "names": names,
            "cat_ids": cat_ids}


def run_coco(gt, setup, **kw):
    kw.setdefault("category_id_map", setup["reverse"])
    kw.setdefault("class_names", setup["names"])
    return coco_boundary_metrics(gt, setup["preds"], **kw)


# ----------------------------------------------------------------------------
# golden numbers
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("case", BOUNDARY_CASES, ids=[c["name"] for c in BOUNDARY_CASES])
def test_coco_golden_stats_in_percent(coco_setup, case):
    metrics = run_coco(d2_gt(), coco_setup, dilation_ratio=case["dilation_ratio"])
    for i, name in enumerate(COCO_METRICS):
        assert metrics[name] == pytest.approx(100 * case["stats"][i], abs=1e-10), name


def test_coco_golden_ap_with_boundary_api_ground_truth(coco_setup):
    gt = silent(COCO, COCO_GT)
    metrics = run_coco(gt, coco_setup)
    assert metrics["AP"] == pytest.approx(100 * GOLDEN_002["stats"][0], abs=1e-10)
    assert metrics["APl"] == pytest.approx(100 * GOLDEN_002["stats"][5], abs=1e-10)


def test_coco_keys_and_per_category_ap(coco_setup):
    gt = d2_gt()
    metrics = run_coco(gt, coco_setup)
    names = coco_setup["names"]
    assert list(metrics)[:6] == list(COCO_METRICS)
    assert set(metrics) == set(COCO_METRICS) | {"AP-" + n for n in names}
    # against a direct boundary COCOeval on the original results
    ev = COCOeval(gt, silent(gt.loadRes, copy.deepcopy(load_json(COCO_DT))), "boundary")
    silent(ev.evaluate)
    silent(ev.accumulate)
    precision = ev.eval["precision"]
    n_nan = 0
    for k, name in enumerate(names):
        p = precision[:, :, k, 0, -1]
        p = p[p > -1]
        got = metrics["AP-" + name]
        if p.size:
            assert got == pytest.approx(100 * float(np.mean(p)), abs=1e-10), name
        else:
            assert math.isnan(got), name
            n_nan += 1
    # categories without ground truth in these 100 images
    assert n_nan == sum(1 for c in coco_setup["cat_ids"] if not gt.getAnnIds(catIds=[c]))
    assert n_nan > 0


def test_no_per_category_entries_for_one_or_no_class_names(coco_setup):
    gt = d2_gt()
    assert set(run_coco(gt, coco_setup, class_names=None)) == set(COCO_METRICS)
    one = {**coco_setup, "preds": [p for p in coco_setup["preds"] if p["category_id"] == 0]}
    assert set(run_coco(gt, one, class_names=["person"])) == set(COCO_METRICS)


def test_per_image_records_give_the_same_metrics(coco_setup):
    gt = d2_gt()
    by_image = {}
    for p in coco_setup["preds"]:
        by_image.setdefault(p["image_id"], []).append(p)
    records = [{"image_id": i, "instances": v} for i, v in by_image.items()]
    records.append({"image_id": -1, "instances": []})  # an image without detections
    flat = run_coco(gt, coco_setup)
    nested = coco_boundary_metrics(gt, records, category_id_map=coco_setup["reverse"],
                                   class_names=coco_setup["names"])
    assert identical(nested, flat)


def test_predictions_are_not_modified(coco_setup):
    before = copy.deepcopy(coco_setup["preds"])
    run_coco(d2_gt(), coco_setup)
    assert coco_setup["preds"] == before


def test_undefined_metrics_are_nan_like_detectron2(coco_setup):
    gt = d2_gt()
    # one image: some area ranges have no ground truth there
    img = coco_setup["preds"][0]["image_id"]
    metrics = run_coco(gt, coco_setup, img_ids=[img], class_names=None)
    ev = COCOeval(gt, silent(gt.loadRes, copy.deepcopy(load_json(COCO_DT))), "boundary")
    ev.params.imgIds = [img]
    for step in (ev.evaluate, ev.accumulate, ev.summarize):
        silent(step)
    assert any(s < 0 for s in ev.stats[:6])
    for i, name in enumerate(COCO_METRICS):
        if ev.stats[i] < 0:
            assert math.isnan(metrics[name]), name
        else:
            assert metrics[name] == pytest.approx(100 * ev.stats[i], abs=1e-10), name


# (maxDets without 100 on purpose: tests/coco/test_summarize_max_dets.py asserts the warning)
@pytest.mark.filterwarnings("ignore:summarize\\(\\). params.maxDets")
def test_detection_cap(coco_setup):
    gt = d2_gt()
    # no image has more than 100 results: a cap of 300 changes nothing
    metrics = run_coco(gt, coco_setup, max_dets_per_image=300, class_names=None)
    for i, name in enumerate(COCO_METRICS):
        assert metrics[name] == pytest.approx(100 * GOLDEN_002["stats"][i], abs=1e-10), name
    # a cap of 5: AP is taken at 5 detections per image, not at pycocotools' fixed 100
    capped = run_coco(gt, coco_setup, max_dets_per_image=[1, 5, 5], class_names=None)
    ev = COCOeval(gt, silent(gt.loadRes, copy.deepcopy(load_json(COCO_DT))), "boundary")
    ev.params.maxDets = [1, 5, 5]
    for step in (ev.evaluate, ev.accumulate, ev.summarize):
        silent(step)
    p = ev.eval["precision"][:, :, :, 0, -1]
    assert capped["AP"] == pytest.approx(100 * float(np.mean(p[p > -1])), abs=1e-10)
    assert capped["AP50"] == pytest.approx(100 * ev.stats[1], abs=1e-10)
    assert capped["AP"] < metrics["AP"]


# ----------------------------------------------------------------------------
# ground truth boundaries are computed once
# ----------------------------------------------------------------------------
def test_second_evaluation_reuses_ground_truth_boundaries(coco_setup):
    gt = d2_gt()
    first = run_coco(gt, coco_setup)
    computed = cache_for(gt).computed["boundaries"]
    assert computed == len(gt.anns)
    second = run_coco(gt, coco_setup)
    assert cache_for(gt).computed["boundaries"] == computed  # nothing new for the ground truth
    assert identical(second, first)


def test_shared_ground_truth_across_loads(tmp_path, coco_setup):
    path = tmp_path / "gt.json"
    shutil.copy(COCO_GT, path)
    try:
        first = shared_ground_truth(d2_gt(str(path)), str(path))
        run_coco(first, coco_setup)
        computed = cache_for(first).computed["boundaries"]
        again = d2_gt(str(path))  # a new evaluator loads the file again
        shared = shared_ground_truth(again, str(path))
        assert shared is first
        run_coco(shared, coco_setup)
        assert cache_for(first).computed["boundaries"] == computed
        # another type for the same file is not mixed up
        other = silent(COCO, str(path))
        assert shared_ground_truth(other, str(path)) is other
        # a changed file is loaded anew
        st = os.stat(path)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        changed = d2_gt(str(path))
        assert shared_ground_truth(changed, str(path)) is changed
        assert shared_ground_truth(d2_gt(str(path)), str(path)) is changed
    finally:
        assert release_shared_ground_truth(str(path)) == 2
    fresh = d2_gt(str(path))
    assert shared_ground_truth(fresh, str(path)) is fresh
    assert release_shared_ground_truth() >= 1


def test_shared_ground_truth_without_a_local_file():
    gt = object.__new__(pycocotools.coco.COCO)
    assert shared_ground_truth(gt, "/nonexistent/instances.json") is gt
    assert release_shared_ground_truth("/nonexistent/instances.json") == 0


# ----------------------------------------------------------------------------
# empty and bad input
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("preds", [[], [{"image_id": 1, "instances": []}]], ids=["flat", "per-image"])
def test_no_predictions_give_nan_and_a_warning(caplog, preds):
    gt = d2_gt()
    with caplog.at_level(logging.WARNING, logger="boundary_api.integrations.d2_results"):
        metrics = coco_boundary_metrics(gt, preds, class_names=["a", "b"])
    assert list(metrics) == list(COCO_METRICS)
    assert all(math.isnan(v) for v in metrics.values())
    assert "No predictions" in caplog.text
    lvis_metrics = lvis_boundary_metrics(None, preds)
    assert list(lvis_metrics) == list(LVIS_METRICS)
    assert all(math.isnan(v) for v in lvis_metrics.values())


def test_bad_predictions(coco_setup):
    gt = d2_gt()
    preds = coco_setup["preds"]
    with pytest.raises(ValueError, match="category_id=80"):
        coco_boundary_metrics(gt, [dict(preds[0], category_id=80)] + preds[1:],
                              category_id_map=coco_setup["reverse"])
    no_mask = [{k: v for k, v in p.items() if k != "segmentation"} for p in preds]
    with pytest.raises(ValueError, match="pred_masks"):
        coco_boundary_metrics(gt, no_mask, category_id_map=coco_setup["reverse"])
    with pytest.raises(ValueError, match="3 class names for 80"):
        run_coco(gt, coco_setup, class_names=["a", "b", "c"])
    with pytest.raises(ValueError, match="image ids not in the ground truth"):
        coco_boundary_metrics(gt, [dict(preds[0], image_id=-5)], category_id_map=coco_setup["reverse"])
    with pytest.raises(TypeError):
        prepare_results(preds, category_id_map=3)


def test_prepare_results():
    preds = [{"image_id": 7, "category_id": 0, "bbox": [0, 0, 1, 1], "score": 0.5,
              "segmentation": {"size": [2, 2], "counts": "04"}},
             {"image_id": 8, "proposals": object()}]
    out = prepare_results(preds, {0: 3})
    assert out == [{"image_id": 7, "category_id": 3, "score": 0.5,
                    "segmentation": {"size": [2, 2], "counts": "04"}}]
    assert preds[0]["category_id"] == 0 and "bbox" in preds[0]
    assert prepare_results(preds[:1], lambda c: c + 1)[0]["category_id"] == 1
    assert prepare_results(preds[:1])[0]["category_id"] == 0


# ----------------------------------------------------------------------------
# logging
# ----------------------------------------------------------------------------
def test_tables_are_logged(caplog, coco_setup):
    logger = logging.getLogger("detectron2.evaluation.coco_evaluation.test")
    with caplog.at_level(logging.INFO, logger=logger.name):
        metrics = run_coco(d2_gt(), coco_setup, logger=logger)
    text = "\n".join(r.getMessage() for r in caplog.records if r.name == logger.name)
    assert "Evaluation results for boundary: \n|   AP   |  AP50  |" in text
    assert f"| {metrics['AP']:.3f} |" in text
    assert "Per-category boundary AP: \n| category" in text
    assert "| person        |" in text
    assert "Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.226" in text


def test_format_table():
    assert format_table(["AP", "AP50"], [[1.0, float("nan")]]) == (
        "|   AP  | AP50 |\n"
        "|:-----:|:----:|\n"
        "| 1.000 | nan  |")
    assert format_table(["category", "AP"] * 2, [["a", 12.5, "bb", 3.0], ["c", 0.0]], align="left") == (
        "| category | AP     | category | AP    |\n"
        "|:---------|:-------|:---------|:------|\n"
        "| a        | 12.500 | bb       | 3.000 |\n"
        "| c        | 0.000  |          |       |")
    with pytest.raises(ValueError):
        format_table(["a"], [], align="right")


# ----------------------------------------------------------------------------
# LVIS
# ----------------------------------------------------------------------------
def test_lvis_golden_metrics_in_percent():
    import lvis

    case = next(c for c in golden_cases("instance_eval.json", "lvis")
                if c["iou_type"] == "boundary" and c["dilation_ratio"] == 0.02)
    gt = lvis.LVIS(LVIS_GT)
    # Detectron2's LVIS ids are the dataset ids minus one
    preds = [dict(r, category_id=r["category_id"] - 1) for r in load_json(LVIS_DT)]
    metrics = lvis_boundary_metrics(gt, preds, category_id_map=lambda c: c + 1,
                                    max_dets_per_image=case["max_dets"])
    assert list(metrics) == list(LVIS_METRICS)
    for name in LVIS_METRICS:
        assert metrics[name] == pytest.approx(100 * case["results"][name], abs=1e-10), name
    computed = cache_for(gt).computed["boundaries"]
    assert computed == len(gt.anns)
    assert identical(lvis_boundary_metrics(gt, preds, category_id_map=lambda c: c + 1), metrics)
    assert cache_for(gt).computed["boundaries"] == computed


def test_lvis_metric_lvis_cannot_compute_is_minus_100_as_in_detectron2(tmp_path, caplog):
    """LVIS reports -1 for APr without rare ground truth; Detectron2's LVIS tables show
    ``float(-1 * 100)``, and so does the boundary task."""
    import lvis

    from boundary_api import LVISEval

    dataset = load_json(LVIS_GT)
    rare = {c["id"] for c in dataset["categories"] if c["frequency"] == "r"}
    dataset["annotations"] = [a for a in dataset["annotations"] if a["category_id"] not in rare]
    path = tmp_path / "no_rare.json"
    path.write_text(json.dumps(dataset))
    gt = lvis.LVIS(str(path))
    results = load_json(LVIS_DT)
    ref = LVISEval(gt, copy.deepcopy(results), "boundary")
    ref.run()
    assert ref.results["APr"] == -1
    preds = [dict(r, category_id=r["category_id"] - 1) for r in results]
    with caplog.at_level(logging.INFO):
        metrics = lvis_boundary_metrics(gt, preds, category_id_map=lambda c: c + 1)
    assert metrics == {m: float(ref.results[m] * 100) for m in LVIS_METRICS}
    assert metrics["APr"] == -100.0
    assert "-100.000" in caplog.text and "shown as -100 could not be computed" in caplog.text
