"""Fixed AP and Pooled AP (issue 29) from the Detectron2 side: the LVIS evaluator's
``ap=`` option (on the stand-in, and on real Detectron2 in its tier) and the
Detectron2-free functions it calls, against the numbers of large-vocab-devil's
scripts (tests/data/lvis_fixed_pooled.json)."""
import json
import warnings

import pytest

from boundary_api.integrations.d2_results import (LVIS_METRICS, POOLED_METRICS, lvis_boundary_metrics,
                                                  lvis_task_metrics)
from conftest import LVIS_DT, LVIS_GT
import lvdevil_oracle as oracle
from test_detectron2 import LVIS_NAME, d2, evaluate_lvis, lvis_predictions  # noqa: F401 (d2: the fixture)

POOLED_KEYS = {"AP-pooled-all": "AP", "AP-pooled-r": "APr", "AP-pooled-c": "APc", "AP-pooled-f": "APf"}
#: metrics that do not depend on areas (Detectron2's results carry boxes: box
#: areas for the bbox task, where the stored case has mask areas)
NO_AREA = ("AP", "AP50", "AP75", "APr", "APc", "APf")


def golden(name):
    with open(oracle.GOLDEN) as f:
        case = next(c for c in json.load(f)["cases"] if c["name"] == name)
    return {POOLED_KEYS.get(k, k): float.fromhex(v) for k, v in case["results"].items()}


def names(ap):
    return POOLED_METRICS if ap == "pooled" else LVIS_METRICS


def load_results():
    with open(LVIS_DT) as f:
        return json.load(f)


@pytest.mark.slow
@pytest.mark.parametrize("ap", ["fixed", "pooled"])
def test_lvis_evaluator_reports_fixed_or_pooled_ap(d2, caplog, ap):
    d2.register_lvis(LVIS_NAME)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # (fewer than 10,000 per category)
        ev, results, lines, _ = evaluate_lvis(d2, d2.module.BoundaryLVISEvaluator, lvis_predictions(), caplog,
                                              ap=ap, max_dets_per_image=300)
    assert list(results) == ["bbox", "segm", "boundary"]
    for task in ("bbox", "segm", "boundary"):
        want = golden(f"{ap}-bundled-{task}-10000")
        assert list(results[task]) == list(names(ap))
        for key in (NO_AREA if task == "bbox" else names(ap)):
            if key in want:
                assert results[task][key] == pytest.approx(100 * want[key], abs=1e-10), (task, key)
    assert any(f"with {ap.capitalize()} AP: the top 10000 detections of each category" in line for line in lines)
    with pytest.raises(ValueError, match="ap must be one of"):
        d2.module.BoundaryLVISEvaluator(LVIS_NAME, distributed=False, ap="fix")


@pytest.mark.parametrize("ap", ["fixed", "pooled"])
@pytest.mark.parametrize("iou", ["segm", "bbox"])
def test_lvis_task_metrics(ap, iou):
    """Detectron2's bbox / segm tasks with ``ap=``: the scripts' numbers in
    percent (the stored cases' results have no boxes, as these)."""
    import lvis

    gt = lvis.LVIS(LVIS_GT)
    results = load_results()
    before = json.dumps(results)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        metrics = lvis_task_metrics(gt, results, iou, ap=ap, dets_per_cat=5)
    assert json.dumps(results) == before  # the result dicts are left alone
    want = golden(f"{ap}-bundled-{iou}-5")
    assert list(metrics) == list(names(ap))
    for key in metrics:
        assert metrics[key] == pytest.approx(100 * want[key], abs=1e-10), key


@pytest.mark.parametrize("ap", ["fixed", "pooled"])
def test_lvis_boundary_metrics(ap):
    import lvis

    gt = lvis.LVIS(LVIS_GT)
    preds = [dict(r, category_id=r["category_id"] - 1) for r in load_results()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        metrics = lvis_boundary_metrics(gt, preds, category_id_map=lambda c: c + 1, ap=ap, dets_per_cat=5)
    want = golden(f"{ap}-bundled-boundary-5")
    assert list(metrics) == list(names(ap))
    for key in metrics:
        assert metrics[key] == pytest.approx(100 * want[key], abs=1e-10), key
