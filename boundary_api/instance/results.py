"""Named metrics from finished evaluations (command line, Detectron2 hook)."""
from __future__ import annotations

from typing import Dict, List

import numpy as np

__all__ = ["COCO_STAT_NAMES", "coco_stat_names", "coco_stats", "coco_summary", "per_category_ap",
           "per_category_metrics"]

#: names of ``COCOeval.stats`` for detection-style evaluations, in order
#: (with pycocotools' default ``maxDets = [1, 10, 100]``)
COCO_STAT_NAMES = ("AP", "AP50", "AP75", "APs", "APm", "APl",
                   "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")

#: per-category metrics of :func:`per_category_metrics`: name -> (IoU threshold
#: or None for the mean over 0.50:0.95, area range index)
_PER_CATEGORY = (("AP", None, 0), ("AP50", 0.5, 0), ("AP75", 0.75, 0),
                 ("APs", None, 1), ("APm", None, 2), ("APl", None, 3))


def coco_stat_names(max_dets) -> List[str]:
    """Names of the 12 ``COCOeval.stats`` for ``params.maxDets``.

    pycocotools' ``summarize`` reports AP and the area-range AR at
    ``maxDets[2]`` and recall at ``maxDets[0]``, ``maxDets[1]`` and
    ``maxDets[2]``: with ``[1, 10, 100]`` these are :data:`COCO_STAT_NAMES`,
    with ``[1, 10, 300]`` the eighth and ninth are ``AR10`` and ``AR300``.
    """
    m = [int(v) for v in max_dets]
    return ["AP", "AP50", "AP75", "APs", "APm", "APl",
            f"AR{m[0]}", f"AR{m[1]}", f"AR{m[2]}", "ARs", "ARm", "ARl"]


def coco_stats(coco_eval) -> Dict[str, float]:
    """``COCOeval.stats`` (after ``summarize()``) as a name -> value dict.

    The AR names follow ``params.maxDets`` (see :func:`coco_stat_names`);
    with the default ``[1, 10, 100]`` they are :data:`COCO_STAT_NAMES`.
    """
    max_dets = getattr(coco_eval.params, "maxDets", None)
    names = coco_stat_names(max_dets) if max_dets is not None and len(max_dets) == 3 else COCO_STAT_NAMES
    return {name: float(v) for name, v in zip(names, coco_eval.stats)}


def _precision_and_cats(evaluator):
    precision = evaluator.eval["precision"]
    params = evaluator.params
    cat_ids = getattr(params, "catIds", None)
    if cat_ids is None:
        cat_ids = params.cat_ids
    iou_thrs = getattr(params, "iouThrs", None)
    if iou_thrs is None:
        iou_thrs = params.iou_thrs
    # COCOeval: (T, R, K, A, M), the last maxDets; LVISEval: (T, R, K, A)
    if precision.ndim == 5:
        precision = precision[..., -1]
    return precision, list(cat_ids), np.asarray(iou_thrs)


def _mean_valid(p: np.ndarray) -> float:
    p = p[p > -1]
    return float(np.mean(p)) if p.size else float("nan")


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
    precision, cat_ids, _ = _precision_and_cats(evaluator)
    return {cat: _mean_valid(precision[:, :, k, 0]) for k, cat in enumerate(cat_ids)}


def per_category_metrics(evaluator) -> Dict[object, Dict[str, float]]:
    """AP, AP50, AP75, APs, APm and APl of each category, computed from
    ``evaluator.eval["precision"]`` as pycocotools' ``summarize`` computes the
    overall ones (the mean of the precisions that are not -1 at the largest
    ``maxDets``), NaN where a category has no ground truth in that range.
    Works for COCOeval and LVISEval after ``accumulate()``.

    Returns
    -------
    dict
        ``category_id -> {"AP", "AP50", "AP75", "APs", "APm", "APl"}`` in the
        evaluated category order.

    Raises
    ------
    ValueError
        If the evaluation has no IoU threshold 0.5 or 0.75 or fewer than four
        area ranges (custom ``params``).
    """
    precision, cat_ids, iou_thrs = _precision_and_cats(evaluator)
    t_index = {}
    for thr in (0.5, 0.75):
        hits = np.flatnonzero(np.abs(iou_thrs - thr) < 1e-9)
        if hits.size == 0:
            raise ValueError(f"the evaluation has no IoU threshold {thr}: per-category AP{int(thr * 100)} "
                             "is undefined")
        t_index[thr] = int(hits[0])
    if precision.shape[3] < 4:
        raise ValueError("the evaluation has fewer than 4 area ranges (all, small, medium, large)")
    out = {}
    for k, cat in enumerate(cat_ids):
        row = {}
        for name, thr, a in _PER_CATEGORY:
            p = precision[:, :, k, a] if thr is None else precision[t_index[thr], :, k, a]
            row[name] = _mean_valid(p)
        out[cat] = row
    return out


#: the 12 lines of the COCO detection summary: (AP?, IoU threshold or None for
#: the mean over every threshold, area range label, index into maxDets)
_SUMMARY = ((True, None, "all", -1), (True, 0.5, "all", -1), (True, 0.75, "all", -1),
            (True, None, "small", -1), (True, None, "medium", -1), (True, None, "large", -1),
            (False, None, "all", 0), (False, None, "all", 1), (False, None, "all", 2),
            (False, None, "small", -1), (False, None, "medium", -1), (False, None, "large", -1))


def coco_summary(coco_eval, show: bool = True) -> Dict[str, float]:
    """The 12 summary metrics of a COCO evaluation after ``accumulate()``, every
    one of them at the evaluated ``maxDets`` (printed as pycocotools' lines when
    ``show``).

    pycocotools' ``summarize`` computes the first line (AP over IoU 0.50:0.95)
    at ``maxDets=100`` whatever ``params.maxDets`` says, so ``--max-dets 300``
    made it -1; here that line uses the largest ``maxDets`` like the five other
    AP lines.  With the default ``[1, 10, 100]`` every value and line is
    pycocotools'.  Each value is the mean of the entries that are not -1 among
    the precisions (recalls) of the line's IoU thresholds, area range and the
    ``maxDets`` entries equal to the line's, -1 when there are none.

    Returns
    -------
    dict
        Name (:func:`coco_stat_names`) -> value.
    """
    params = coco_eval.params
    max_dets = [int(m) for m in params.maxDets]
    iou_thrs = np.asarray(params.iouThrs)
    names = coco_stat_names(max_dets)
    out: Dict[str, float] = {}
    for name, (is_ap, thr, area, m) in zip(names, _SUMMARY):
        wanted = max_dets[m]
        a = [i for i, label in enumerate(params.areaRngLbl) if label == area]
        k = [i for i, v in enumerate(max_dets) if v == wanted]
        values = coco_eval.eval["precision" if is_ap else "recall"]
        if thr is not None:
            values = values[np.where(iou_thrs == thr)[0]]
        values = values[..., a, :][..., k]
        kept = values[values > -1]
        value = float(np.mean(kept)) if kept.size else -1.0
        out[name] = value
        if show:
            iou = f"{iou_thrs[0]:0.2f}:{iou_thrs[-1]:0.2f}" if thr is None else f"{thr:0.2f}"
            title = "Average Precision  (AP)" if is_ap else "Average Recall     (AR)"
            print(f" {title} @[ IoU={iou:<9} | area={area:>6s} | maxDets={wanted:>3d} ] = {value:0.3f}")
    return out
