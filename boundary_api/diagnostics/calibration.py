"""Are the scores calibrated for the quality that is measured?  Reliability
diagram, expected and maximum calibration error of the detection scores
against "matched at IoU t" (Guo et al., *On Calibration of Modern Neural
Networks*, ICML 2017; for detection, Kuppers et al., *Multivariate
Confidence Calibration for Object Detection*, CVPR-W 2020).

The outcomes are those of the evaluation's own matching (``evaluate()``):
at IoU threshold ``t`` (one of the evaluation's), area range "all" and the
largest ``maxDets``, a detection that is not ignored is *correct* when it is
matched (a true positive) and wrong otherwise; ignored detections (matched to
a crowd or ignored ground truth, or, for LVIS, of a category not
exhaustively annotated and unmatched) are left out.  With Boundary IoU, a
detection is correct only if its outline is.

The scores are put into ``n_bins`` bins of equal width on [0, 1]
(bin ``b`` holds ``b/n <= score < (b+1)/n``, the last one includes 1; scores
outside [0, 1] are clipped into the first or last bin).  Per bin: the mean
score (confidence), the fraction correct (accuracy) and the count.
``ECE = sum_b (n_b / N) |accuracy_b - confidence_b|``;
``MCE = max_b |accuracy_b - confidence_b|`` over the bins that are not empty.
Per category, the same over that category's detections.  On the bundled COCO
data, ECE, MCE, the bins and the per-category ECE for segm and bbox equal
hotcoco 1.3.0's (``COCOeval.calibration``).
"""
from __future__ import annotations

import numpy as np

from ._common import EvalView, detections_per_det

__all__ = ["calibration", "calibration_error"]


def calibration_error(scores, correct, n_bins: int = 10) -> dict:
    """ECE, MCE and the bins of scores against binary outcomes.

    Parameters
    ----------
    scores : array of float
    correct : array of bool
    n_bins : int

    Returns
    -------
    dict
        ``{"ece", "mce", "count", "bins": [{"lower", "upper", "confidence",
        "accuracy", "count"}]}``; ``ece`` and ``mce`` are None without scores.
    """
    if isinstance(n_bins, bool) or not isinstance(n_bins, (int, np.integer)) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    scores = np.asarray(scores, np.float64).reshape(-1)
    correct = np.asarray(correct, bool).reshape(-1)
    if scores.shape != correct.shape:
        raise ValueError("scores and correct differ in length")
    if np.isnan(scores).any():
        raise ValueError("NaN scores cannot be binned")
    b = np.clip(np.floor(scores * n_bins).astype(np.int64), 0, n_bins - 1)
    bins, ece, mce, N = [], 0.0, None, len(scores)
    for k in range(n_bins):
        sel = b == k
        n = int(sel.sum())
        entry = {"lower": k / n_bins, "upper": (k + 1) / n_bins, "count": n, "confidence": None, "accuracy": None}
        if n:
            conf = float(scores[sel].mean())
            acc = float(correct[sel].mean())
            gap = abs(acc - conf)
            entry["confidence"], entry["accuracy"] = conf, acc
            ece += n / N * gap
            mce = gap if mce is None else max(mce, gap)
        bins.append(entry)
    return {"ece": ece if N else None, "mce": mce, "count": N, "bins": bins}


def calibration(ev, iou_threshold: float = 0.5, n_bins: int = 10) -> dict:
    """Calibration of an evaluation's scores, overall and per category.

    Parameters
    ----------
    ev : boundary_api.COCOeval or boundary_api.LVISEval
        After a native ``evaluate()``.
    iou_threshold : float
        One of the evaluation's IoU thresholds: correct = matched at it.
    n_bins : int
        Bins of equal width on [0, 1].

    Returns
    -------
    dict
        :func:`calibration_error`'s keys overall, plus ``per_category``
        ``{category id: {"name", "ece", "mce", "count"}}`` (categories with
        detections), ``iou_threshold``, ``n_bins``, ``iou_type``.
    """
    view = EvalView(ev)
    state = view.state()
    t = view.threshold_index(iou_threshold)
    a = view.area_all()
    flags = state.dt_flags[a, t]
    keep = (flags & 2) == 0
    correct = (flags & 1) != 0
    scores = state.dt_score
    out = calibration_error(scores[keep], correct[keep], n_bins)
    cat = detections_per_det(state)["cat"]
    out["per_category"] = {}
    for k in np.unique(cat[keep]).tolist():
        sel = keep & (cat == k)
        r = calibration_error(scores[sel], correct[sel], n_bins)
        cid = state.cat_ids[k]
        out["per_category"][cid] = {"name": view.cats.get(cid, {}).get("name"), "ece": r["ece"], "mce": r["mce"],
                                    "count": r["count"]}
    out.update(iou_threshold=float(view.iou_thrs[t]), n_bins=int(n_bins), iou_type=view.iou_type)
    return out
