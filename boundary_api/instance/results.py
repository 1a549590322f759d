"""Named metrics from finished evaluations (command line, Detectron2 hook)."""
from __future__ import annotations

from typing import Dict

import numpy as np

__all__ = ["COCO_STAT_NAMES", "coco_stats", "per_category_ap"]

#: names of ``COCOeval.stats`` for detection-style evaluations, in order
COCO_STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl",
                   "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")


def coco_stats(coco_eval) -> Dict[str, float]:
    """``COCOeval.stats`` (after ``summarize()``) as a name -> value dict."""
    return {name: float(v) for name, v in zip(COCO_STAT_NAMES, coco_eval.stats)}


def per_category_ap(evaluator) -> Dict[object, float]:
    """AP of each category over IoU 0.50:0.95, area 'all' and the largest
    ``maxDets``: the mean of the precisions that are not -1, or NaN for a
    category without ground truth.  Works for COCOeval and LVISEval after
    ``accumulate()``.

    Returns
    -------
    dict
        ``category_id -> AP`` in the evaluated category order.
    """
    precision = evaluator.eval["precision"]
    params = evaluator.params
    cat_ids = getattr(params, "catIds", None)
    if cat_ids is None:
        cat_ids = params.cat_ids
    out = {}
    for k, cat in enumerate(cat_ids):
        p = precision[:, :, k, 0, -1] if precision.ndim == 5 else precision[:, :, k, 0]
        p = p[p > -1]
        out[cat] = float(np.mean(p)) if p.size else float("nan")
    return out
