"""LRP, the Localisation-Recall-Precision error, and optimal LRP (Oksuz et al.,
*Localization Recall Precision (LRP): A New Performance Metric for Object
Detection*, ECCV 2018; *One Metric to Measure them All: Localisation Recall
Precision (LRP) for Evaluating Visual Detection Tasks*, TPAMI 2022).

The matching is the evaluation's own (``evaluate()``) at the true-positive
IoU threshold ``tau`` (one of the evaluation's thresholds, 0.5 by default),
area range "all", largest ``maxDets``; ignored detections and ground truths
are left out.  Per category and score threshold ``s``, over the detections of
score ``>= s``: ``N_TP`` true positives with IoUs ``IoU_i``, ``N_FP`` false
positives, ``N_FN = N_G - N_TP`` missed ground truths (``N_G`` those that
count), and

``LRP(s) = (sum_i (1 - IoU_i) / (1 - tau) + N_FP + N_FN) / (N_TP + N_FP + N_FN)``

(in [0, 1]; 0 is perfect).  The IoU is the evaluation's, so with Boundary IoU
the localisation term measures the outlines.  Optimal LRP, ``oLRP``, is the
minimum over the score thresholds ``0.00, 0.01, ..., 1.00`` (the highest such
threshold when several reach it: the same detections, fewer kept at deployment);
at that threshold its components are

``oLRP_loc = mean (1 - IoU_i) / (1 - tau)`` over the true positives (in [0, 1], TPAMI 2022),
``oLRP_FP = N_FP / (N_TP + N_FP)``, ``oLRP_FN = N_FN / N_G``,

and the threshold itself is the category's optimal score threshold.  A
category without ground truth has no LRP (left out); one whose detections
never hit has oLRP 1, ``oLRP_FN`` 1, no ``oLRP_loc`` and no threshold, and
``oLRP_FP`` that of the highest threshold (0 when it keeps no detection).
The overall ``olrp``, ``fp`` and ``fn`` are means over the categories with
ground truth; ``loc`` over those with a true positive at their optimum.  On
the bundled COCO data, boundary, segm and bbox, every number equals vernier
0.5.4's (``optimal_lrp``) to 1e-12.
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from ._common import EvalView, detections_per_det, matched_ious

__all__ = ["lrp_error", "optimal_lrp", "DEFAULT_SCORE_GRID"]

#: the score thresholds searched for the optimum
DEFAULT_SCORE_GRID = tuple(i / 100 for i in range(101))


def lrp_error(ious_tp, n_fp: int, n_gt: int, tau: float = 0.5) -> float:
    """LRP of one set of detections: the IoUs of its true positives, its false
    positives and the number of ground truths (NaN when all three are 0)."""
    ious_tp = np.asarray(ious_tp, np.float64)
    n_tp = len(ious_tp)
    n_fn = n_gt - n_tp
    total = n_tp + n_fp + n_fn
    if total == 0:
        return float("nan")
    return float((np.sum(1.0 - ious_tp) / (1.0 - tau) + n_fp + n_fn) / total)


def _category(scores, tp, ious, n_gt, tau, grid):
    """oLRP of one category: (olrp, loc, fp, fn, threshold)."""
    best = None
    for s in grid:
        sel = scores >= s
        t = sel & tp
        n_tp = int(t.sum())
        n_fp = int((sel & ~tp).sum())
        n_fn = n_gt - n_tp
        loc = float(np.sum(1.0 - ious[t]))
        value = (loc / (1.0 - tau) + n_fp + n_fn) / (n_tp + n_fp + n_fn)
        if best is None or value <= best[0]:
            best = (value, n_tp, n_fp, n_fn, loc, s)
    value, n_tp, n_fp, n_fn, loc, s = best
    if n_tp == 0:
        # every threshold gives 1; at the highest one, what it keeps is all false
        # positives (FP rate 1), or nothing (0)
        return 1.0, None, (1.0 if n_fp else 0.0), 1.0, None
    return float(value), loc / (1.0 - tau) / n_tp, n_fp / (n_tp + n_fp), n_fn / n_gt, float(s)


def optimal_lrp(ev, tp_threshold: float = 0.5, score_grid: Optional[Sequence[float]] = None) -> dict:
    """Optimal LRP with its components and the per-category optimal thresholds.

    Parameters
    ----------
    ev : boundary_api.COCOeval or boundary_api.LVISEval
        After a native ``evaluate()``.
    tp_threshold : float
        ``tau``: one of the evaluation's IoU thresholds (default 0.5).
    score_grid : sequence of float, optional
        Score thresholds searched (default ``0.00, 0.01, ..., 1.00``).

    Returns
    -------
    dict
        ``olrp``, ``loc``, ``fp``, ``fn`` (means as in the module notes, None
        when nothing to average), ``per_category`` ``{category id: {"name",
        "olrp", "loc", "fp", "fn", "threshold"}}`` for the categories with
        ground truth, ``tp_threshold``, ``iou_type``.
    """
    view = EvalView(ev)
    state = view.state()
    t = view.threshold_index(tp_threshold)
    if tp_threshold >= 1.0:
        raise ValueError("tp_threshold must be below 1")
    grid = np.asarray(DEFAULT_SCORE_GRID if score_grid is None else score_grid, np.float64)
    if grid.ndim != 1 or not grid.size or np.isnan(grid).any():
        raise ValueError("score_grid must be a non-empty sequence of numbers")
    a = view.area_all()
    flags = state.dt_flags[a, t]
    keep = (flags & 2) == 0
    tp = (flags & 1) != 0
    ious = matched_ious(state, a, t)
    cat = detections_per_det(state)["cat"]
    counted = (state.gt_ig[a] == 0).astype(np.int64)
    cs = np.concatenate(([0], np.cumsum(counted)))
    per_pair = cs[state.pair_g[1:]] - cs[state.pair_g[:-1]]
    n_gt = np.bincount(state.pair_cat, weights=per_pair, minlength=len(state.cat_ids)).astype(np.int64)
    per = {}
    for k, cid in enumerate(state.cat_ids):
        if n_gt[k] == 0:
            continue
        sel = keep & (cat == k)
        olrp, loc, fp, fn, thr = _category(state.dt_score[sel], tp[sel], ious[sel], int(n_gt[k]),
                                           view.iou_thrs[t], grid)
        per[cid] = {"name": view.cats.get(cid, {}).get("name"), "olrp": olrp, "loc": loc, "fp": fp, "fn": fn,
                    "threshold": thr}

    def mean(key):
        vals = [r[key] for r in per.values() if r[key] is not None]
        return float(np.mean(vals)) if vals else None

    return {"olrp": mean("olrp"), "loc": mean("loc"), "fp": mean("fp"), "fn": mean("fn"), "per_category": per,
            "tp_threshold": float(view.iou_thrs[t]), "iou_type": view.iou_type}
