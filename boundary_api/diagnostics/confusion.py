"""Which category is taken for which: the confusion matrix of detections and
ground truths at one IoU threshold, with a background row and column.

Per image, the detections (as the evaluation keeps them: highest scores
first, at most ``maxDets``; for LVIS only the categories verified in the
image) with a score of at least ``min_score`` are matched greedily in score
order, across categories: each takes the ground truth not yet taken, of any
category, with which its IoU is highest, if that IoU is at least the threshold
(ties: the first ground truth in the file's order).  A match counts in row
"ground-truth category", column "detected category": the diagonal holds the
true positives, the rest of the matrix the confusions.  A detection left
unmatched counts in the background row, unless its crowd IoU (pycocotools'
rule) with a crowd region of its category is at least the threshold (then it is
not counted, as the evaluation ignores it);
a ground truth left unmatched counts in the background column.  The IoU is
the evaluation's: ``min(mask IoU, boundary IoU)`` for boundary, mask IoU for
segm, box IoU for bbox.  The normalised matrix divides each row by its sum
(rows of nothing stay 0).

This is the class-agnostic matching of the confusion matrices of hotcoco
(``COCOeval.confusion_matrix``) and of YOLO-style detectors.  hotcoco counts a
detection on a crowd region as a false positive; ``crowd='background'`` does
the same, and then on the bundled COCO data the counts for segm and bbox
equal hotcoco 1.3.0's at every threshold tested.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from ._common import EvalView, cross_ious, image_detections

__all__ = ["confusion_matrix"]


def confusion_matrix(ev, iou_threshold: float = 0.5, min_score: Optional[float] = None,
                     crowd: str = "ignore") -> dict:
    """The confusion matrix of an evaluation at one IoU threshold.

    Parameters
    ----------
    ev : boundary_api.COCOeval or boundary_api.LVISEval
        Constructed on the ground truth and results (evaluation not needed);
        its ``iouType``, dilation ratio and largest ``maxDets`` are used.
    iou_threshold : float
        A detection and a ground truth match at this IoU or above.
    min_score : float, optional
        Detections below this score are left out.
    crowd : {'ignore', 'background'}
        An unmatched detection on a crowd region of its category: not
        counted, as the evaluation ignores it ('ignore'), or counted in the
        background row as every other unmatched detection ('background', as
        hotcoco counts it).

    Returns
    -------
    dict
        ``cat_ids`` (the K categories, sorted), ``names``, ``matrix`` ((K+1) x
        (K+1) int64: row = ground-truth category, column = detected category,
        index K = background), ``normalized`` (rows divided by their sums),
        ``iou_threshold``, ``iou_type``.

    Raises
    ------
    ValueError
        For a threshold outside [0, 1].
    """
    if not (isinstance(iou_threshold, (int, float)) and 0.0 <= iou_threshold <= 1.0):
        raise ValueError(f"iou_threshold must be in [0, 1], got {iou_threshold!r}")
    if crowd not in ("ignore", "background"):
        raise ValueError(f"crowd must be 'ignore' or 'background', got {crowd!r}")
    view = EvalView(ev)
    cat_ids = sorted(view.cats)
    index = {c: k for k, c in enumerate(cat_ids)}
    K = len(cat_ids)
    matrix = np.zeros((K + 1, K + 1), np.int64)
    for img_id in view.img_ids():
        dets, gts, crowds = image_detections(view, img_id, min_score)
        iou, crowd_iou = cross_ious(view, dets, gts, crowds)
        taken = np.zeros(len(gts), bool)
        for i, d in enumerate(dets):
            col = index[d["category_id"]]
            best, j_best = iou_threshold, -1
            for j in range(len(gts)):
                if not taken[j] and iou[i, j] >= best and (j_best < 0 or iou[i, j] > best):
                    best, j_best = iou[i, j], j
            if j_best >= 0:
                taken[j_best] = True
                matrix[index[gts[j_best]["category_id"]], col] += 1
            elif crowd == "ignore" and any(crowd_iou[i, c] >= iou_threshold and r["category_id"] == d["category_id"]
                     for c, r in enumerate(crowds)):
                continue
            else:
                matrix[K, col] += 1
        for j, g in enumerate(gts):
            if not taken[j]:
                matrix[index[g["category_id"]], K] += 1
    rows = matrix.sum(axis=1, keepdims=True)
    normalized = np.divide(matrix, rows, out=np.zeros(matrix.shape), where=rows > 0)
    return {"cat_ids": cat_ids, "names": [view.cats[c].get("name", str(c)) for c in cat_ids],
            "matrix": matrix, "normalized": normalized, "iou_threshold": float(iou_threshold),
            "iou_type": view.iou_type, "crowd": crowd}


def top_confusions(result: dict, n: int = 10) -> list:
    """The ``n`` largest off-diagonal cells between two categories:
    ``[{"gt", "dt", "count"}]`` (category names), largest first."""
    K = len(result["cat_ids"])
    m = np.array(result["matrix"])[:K, :K]  # (vectorised: LVIS has over a thousand categories)
    np.fill_diagonal(m, 0)
    rows, cols = np.nonzero(m > 0)
    counts = m[rows, cols]
    order = np.lexsort((cols, rows, -counts))[:n]
    return [{"gt": result["names"][int(rows[k])], "dt": result["names"][int(cols[k])], "count": int(counts[k])}
            for k in order]
