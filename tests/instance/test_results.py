"""boundary_api.instance.results: named stats and per-category AP from finished evaluations."""
import contextlib
import io
import math

import numpy as np
import pytest

from boundary_api import COCO, COCOeval, LVISEval
from boundary_api.instance.results import (COCO_STAT_NAMES, coco_stat_names, coco_stats, per_category_ap,
                                          per_category_metrics)
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT


def test_coco_stats_and_per_category_ap():
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(COCO_DT), "boundary")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    stats = coco_stats(ev)
    assert list(stats) == list(COCO_STAT_NAMES)
    assert list(stats.values()) == [float(v) for v in ev.stats]
    per_cat = per_category_ap(ev)
    assert list(per_cat) == list(ev.params.catIds)
    prec = ev.eval["precision"]
    for k, cat in enumerate(ev.params.catIds):
        p = prec[:, :, k, 0, -1]
        if (p > -1).any():
            assert per_cat[cat] == np.mean(p[p > -1])
        else:
            assert math.isnan(per_cat[cat])
    # every category with ground truth has T x R precisions, so the overall AP is
    # the mean of the per-category APs (summed in another order)
    valid = [v for v in per_cat.values() if not math.isnan(v)]
    assert abs(np.mean(valid) - stats["AP"]) <= 1e-15


def test_per_category_ap_lvis():
    ev = LVISEval(LVIS_GT, LVIS_DT, iou_type="boundary")
    ev.run()
    per_cat = per_category_ap(ev)
    assert len(per_cat) == len(ev.params.cat_ids)
    prec = ev.eval["precision"]
    k = next(i for i in range(prec.shape[2]) if (prec[:, :, i, 0] > -1).any())
    p = prec[:, :, k, 0]
    assert per_cat[ev.params.cat_ids[k]] == np.mean(p[p > -1])


def _ap(p):
    p = p[p > -1]
    return float(np.mean(p)) if p.size else float("nan")


def test_per_category_metrics_from_the_precision_array():
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(COCO_DT), "boundary")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    rows = per_category_metrics(ev)
    prec = ev.eval["precision"]
    assert list(ev.params.iouThrs[[0, 5]]) == [0.5, 0.75]
    for k, cat in enumerate(ev.params.catIds):
        expected = {"AP": _ap(prec[:, :, k, 0, -1]), "AP50": _ap(prec[0, :, k, 0, -1]),
                    "AP75": _ap(prec[5, :, k, 0, -1]), "APs": _ap(prec[:, :, k, 1, -1]),
                    "APm": _ap(prec[:, :, k, 2, -1]), "APl": _ap(prec[:, :, k, 3, -1])}
        assert list(rows[cat]) == list(expected)
        for name, value in expected.items():
            got = rows[cat][name]
            assert got == value or (math.isnan(got) and math.isnan(value)), (cat, name)
        assert rows[cat]["AP"] == per_category_ap(ev)[cat] or math.isnan(rows[cat]["AP"])
    # each summary value is the mean of the defined per-category values (every category
    # with ground truth in a range has R precisions per threshold there)
    stats = coco_stats(ev)
    for name in ("AP", "AP50", "AP75", "APs", "APm", "APl"):
        valid = [r[name] for r in rows.values() if not math.isnan(r[name])]
        assert abs(np.mean(valid) - stats[name]) <= 1e-15, name


# (maxDets without 100 on purpose: tests/coco/test_summarize_max_dets.py asserts the warning)
@pytest.mark.filterwarnings("ignore:summarize\\(\\). params.maxDets")
def test_coco_stat_names_follow_max_dets():
    assert coco_stat_names([1, 10, 100]) == list(COCO_STAT_NAMES)
    assert coco_stat_names([1, 10, 300])[6:9] == ["AR1", "AR10", "AR300"]
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(COCO_DT), "segm")
        ev.params.maxDets = [1, 5, 20]
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    stats = coco_stats(ev)
    assert list(stats)[6:9] == ["AR1", "AR5", "AR20"]
    assert list(stats.values()) == [float(v) for v in ev.stats]
