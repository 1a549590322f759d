"""Plain NumPy oracle of the semantic metrics, written from their definitions.

The mask part follows mmsegmentation's ``intersect_and_union`` and
``total_area_to_metrics`` (``IoUMetric``): ground truth pixels equal to the
ignore label are dropped together with the prediction on them; per class the
intersection, predicted area and ground truth area are histograms over the
class ids, the union is ``pred + gt - intersection``; IoU, Acc are ratios
(NaN for 0/0) and their means skip NaN.  The boundary part builds, per image
and class, ``G_c = (gt == c) & (gt != ignore)`` and ``P_c = (pred == c) & (gt != ignore)`` and
takes their boundaries with :func:`boundary_api.masks.reference.mask_to_boundary`.
Slow; for tests and benchmarks only.
"""
from __future__ import annotations

import math
from typing import Dict, Iterable, Tuple

import numpy as np

from ..masks.reference import mask_to_boundary

__all__ = ["intersect_and_union", "boundary_intersect_and_union", "metrics_from_areas", "evaluate_pairs"]


def _hist(values: np.ndarray, num_classes: int) -> np.ndarray:
    v = values[(values >= 0) & (values < num_classes)].astype(np.int64)
    return np.bincount(v, minlength=num_classes).astype(np.int64)


def intersect_and_union(pred: np.ndarray, gt: np.ndarray, num_classes: int,
                        ignore_index: int) -> Tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per class (intersection, union, predicted area, ground truth area) of one image."""
    gt = np.asarray(gt).astype(np.int64)
    pred = np.asarray(pred).astype(np.int64)
    keep = gt != ignore_index
    g = gt[keep]
    p = pred[keep]
    inter = _hist(p[p == g], num_classes)
    area_pred = _hist(p, num_classes)
    area_gt = _hist(g, num_classes)
    return inter, area_pred + area_gt - inter, area_pred, area_gt


def boundary_intersect_and_union(pred: np.ndarray, gt: np.ndarray, num_classes: int, ignore_index: int,
                                 dilation_ratio: float) -> Tuple[np.ndarray, np.ndarray]:
    """Per class (boundary intersection, boundary union) of one image."""
    gt = np.asarray(gt).astype(np.int64)
    pred = np.asarray(pred).astype(np.int64)
    keep = gt != ignore_index
    inter = np.zeros(num_classes, np.int64)
    union = np.zeros(num_classes, np.int64)
    for c in range(num_classes):
        g_c = (gt == c) & keep
        p_c = (pred == c) & keep
        if not g_c.any() and not p_c.any():
            continue
        bg = mask_to_boundary(g_c, dilation_ratio).astype(bool)
        bp = mask_to_boundary(p_c, dilation_ratio).astype(bool)
        inter[c] = np.count_nonzero(bg & bp)
        union[c] = np.count_nonzero(bg | bp)
    return inter, union


def _div(a, b):
    return [x / y if y else math.nan for x, y in zip(a.tolist(), b.tolist())]


def _nanmean(v):
    v = [x for x in v if not math.isnan(x)]
    return sum(v) / len(v) if v else math.nan


def metrics_from_areas(inter, union, area_pred, area_gt, b_inter, b_union) -> Dict[str, object]:
    """The summary metrics from dataset totals (plain Python floats)."""
    iou = _div(inter, union)
    acc = _div(inter, area_gt)
    biou = [x / y if u else math.nan for x, y, u in zip(b_inter.tolist(), b_union.tolist(), union.tolist())]
    total = int(area_gt.sum())
    fw = sum(int(a) * i for a, i in zip(area_gt.tolist(), iou) if a > 0)
    return {
        "IoU": iou, "Acc": acc, "BoundaryIoU": biou,
        "mIoU": _nanmean(iou), "mAcc": _nanmean(acc), "mBIoU": _nanmean(biou),
        "aAcc": int(inter.sum()) / total if total else math.nan,
        "fwIoU": fw / total if total else math.nan,
    }


def evaluate_pairs(pairs: Iterable[Tuple[np.ndarray, np.ndarray]], num_classes: int, ignore_index: int = 255,
                   dilation_ratio: float = 0.02, boundary: bool = True) -> Dict[str, object]:
    """Oracle of :meth:`SemanticEvaluator.evaluate` over ``(gt, pred)`` pairs."""
    z = lambda: np.zeros(num_classes, np.int64)  # noqa: E731
    tot = [z() for _ in range(6)]
    for gt, pred in pairs:
        for k, v in enumerate(intersect_and_union(pred, gt, num_classes, ignore_index)):
            tot[k] += v
        if boundary:
            bi, bu = boundary_intersect_and_union(pred, gt, num_classes, ignore_index, dilation_ratio)
            tot[4] += bi
            tot[5] += bu
    out = metrics_from_areas(*tot)
    out.update(intersection=tot[0], union=tot[1], pred_area=tot[2], gt_area=tot[3],
               boundary_intersection=tot[4], boundary_union=tot[5])
    return out
