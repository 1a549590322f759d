"""boundary_api.instance.results: named stats and per-category AP from finished evaluations."""
import contextlib
import io
import math

import numpy as np

from boundary_api import COCO, COCOeval, LVISEval
from boundary_api.instance.results import COCO_STAT_NAMES, coco_stats, per_category_ap
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
