"""Why is Boundary AP low?  TIDE's error breakdown with Boundary IoU, plus the
"boundary error", PR curves and how often the boundary band covers the object.

Error types (TIDE, Bolya et al., ECCV 2020), computed per image with the
IoU ``min(mask IoU, boundary IoU)`` (``iou='boundary'``), mask IoU
(``iou='segm'``) or box IoU (``iou='bbox'``: pycocotools' IoU of the
``bbox`` fields, detections sized by box area as COCOeval's bbox evaluation
does; no boundary errors), the foreground threshold ``t_f`` (``pos_threshold``,
0.5) and the background threshold ``t_b`` (``background_threshold``, 0.1):

Detections are sorted by score (the ``max_dets`` best per image kept) and
matched greedily: each takes the unmatched ground truth of its category with
the highest IoU if that IoU is >= ``t_f`` (a true positive).  An unmatched
detection whose crowd IoU with a crowd region of its category is > ``t_f`` is
ignored.  Every other unmatched detection (a false positive) gets the first
type that applies:

``loc``
    its highest IoU with a ground truth of its category is in ``[t_b, t_f]``.
``cls``
    its IoU with a ground truth of another category is >= ``t_f``.
``dupe``
    its IoU with an already matched ground truth of its category is >= ``t_f``.
``bkg``
    its IoU with every ground truth is <= ``t_b`` (or the image has none).
``both``
    anything else (wrong category and poorly localized).

``miss``: a ground truth that is matched by no detection and is not the
target of a ``cls`` or ``loc`` error.

Each type's ΔAP is the AP (TIDE's: per category, IoU ``t_f``, 101 recall
points, precision made monotone, the mean over categories with ground truth
or detections) after fixing every error of that type alone, minus the AP
before, clamped at 0 as TIDE does.  Fixes: ``cls`` -- the detection moves to
the ground truth's category as a true positive; ``loc`` -- it becomes a true
positive; in both cases only the highest-scoring such detection of a ground
truth that no detection matched, the others are removed; ``dupe``, ``bkg``,
``both`` -- the detection is removed; ``miss`` -- the ground truth is removed.

``boundary`` (this package's type, only for ``iou='boundary'``): a false
positive of the matching above that is a true positive when the same greedy
matching uses mask IoU alone -- a detection whose mask overlaps well but
whose outline does not.  Fix: it becomes a true positive (the
highest-scoring such detection per ground truth; removed when that ground
truth is already matched).  Boundary errors are also counted among the six
types (nearly always as ``loc``): the six are exactly TIDE's.

Per object size, ground truths are kept when their ``area`` is in COCO's
range (small ``[0, 32**2]``, medium ``[32**2, 96**2]``, large
``[96**2, 1e10]``) and detections when their mask area is; the analysis is
run on what is kept.  Per category, the ΔAP of a type is the change of that
category's AP (None when the fix leaves the category with neither ground
truth nor detections).  On tests/data/coco with ``iou='segm'`` every number
equals the tidecv package's (1.0.1) to 1e-12 (and with ``iou='bbox'``,
on the boxes ``loadRes`` derives from the masks, those of its BOX mode).

Differences from the tidecv package: an ignored detection (crowd) is never an
error (tidecv classifies it, and adds it back when "fixing" it).  Ties of score
are ranked as tidecv ranks them: in the results' order before a fix, false
positives before true positives after one.
"""
from __future__ import annotations

import logging
from typing import Dict, Optional

import numpy as np
import pycocotools.mask as mask_utils

from ..instance.cache import cache_for
from ..masks.boundary import check_dilation_ratio

__all__ = ["ERROR_TYPES", "SIZES", "analyze_errors", "pr_curves", "boundary_coverage", "ImageIoUs"]

log = logging.getLogger(__name__)

#: error types in report order
ERROR_TYPES = ("cls", "loc", "both", "dupe", "bkg", "miss", "boundary")
#: COCO's object size ranges (areas in pixels, both ends included)
SIZES = {"small": (0.0, 32.0 ** 2), "medium": (32.0 ** 2, 96.0 ** 2), "large": (96.0 ** 2, 1e10)}


class ImageIoUs:
    """Detections, ground truths and every cross-category IoU of one image.

    Attributes
    ----------
    dets, gts, crowds : list of dict
        Detections (sorted by score, at most ``max_dets``), non-crowd and crowd
        ground truths.
    mask, boundary : ndarray, (len(dets), len(gts))
        Mask IoU and boundary IoU.
    crowd : ndarray, (len(dets), len(crowds))
        Crowd mask IoU (pycocotools' ``iscrowd`` rule).
    det_area, gt_area : ndarray
        Mask area of each detection; ``area`` field of each ground truth.
    """

    def __init__(self, dets, gts, crowds, mask, boundary, crowd, det_area, gt_area):
        self.dets, self.gts, self.crowds = dets, gts, crowds
        self.mask, self.boundary, self.crowd = mask, boundary, crowd
        self.det_area, self.gt_area = det_area, gt_area


def _rles(cache, anns, boundary_ratio=None):
    if not anns:
        return []
    counts, h, w = cache.masks(anns)
    if boundary_ratio is not None:
        counts = cache.boundaries(anns, boundary_ratio)
    return [{"size": [int(a), int(b)], "counts": c} for c, a, b in zip(counts, h, w)]


def _iou(dts, gts, crowd):
    if not dts or not gts:
        return np.zeros((len(dts), len(gts)))
    out = np.asarray(mask_utils.iou(dts, gts, [int(crowd)] * len(gts)), dtype=np.float64)
    return out.reshape(len(dts), len(gts))


def _box_iou(dts, gts, crowd):
    if not dts or not gts:
        return np.zeros((len(dts), len(gts)))
    out = np.asarray(mask_utils.iou([list(map(float, d)) for d in dts], [list(map(float, g)) for g in gts],
                                    [int(crowd)] * len(gts)), dtype=np.float64)
    return out.reshape(len(dts), len(gts))


def image_ious(coco_gt, coco_dt, dilation_ratio=0.02, max_dets=100, iou_type: str = "boundary") \
        -> Dict[object, ImageIoUs]:
    """Every detection against every ground truth of its image (all categories).

    The same-category entries equal ``COCOeval(..., iouType='segm').ious`` and
    the boundary IoUs whose minimum with them gives ``iouType='boundary'``.
    With ``iou_type='bbox'`` both ``mask`` and ``boundary`` hold box IoU
    (``iouType='bbox'``; pycocotools' IoU of ``[x, y, w, h]`` boxes, crowd
    rule included) and ``det_area`` is the box area, as COCOeval's bbox
    evaluation sizes detections.
    """
    ratio = check_dilation_ratio(dilation_ratio)
    boxes = iou_type == "bbox"
    if not boxes:
        gcache, dcache = cache_for(coco_gt), cache_for(coco_dt)
    out = {}
    for img_id in [im["id"] for im in coco_gt.dataset.get("images", [])]:
        anns = coco_gt.imgToAnns.get(img_id, [])
        gts = [a for a in anns if not a.get("iscrowd", 0)]
        crowds = [a for a in anns if a.get("iscrowd", 0)]
        dets = list(coco_dt.imgToAnns.get(img_id, []))
        order = np.argsort([-d["score"] for d in dets], kind="mergesort")
        dets = [dets[i] for i in order[:max_dets]]
        gt_area = np.array([a["area"] for a in gts], dtype=np.float64)
        if boxes:
            d_box, g_box, c_box = ([a["bbox"] for a in x] for x in (dets, gts, crowds))
            box = _box_iou(d_box, g_box, False)
            det_area = np.array([float(b[2]) * float(b[3]) for b in d_box], dtype=np.float64)
            out[img_id] = ImageIoUs(dets, gts, crowds, box, box, _box_iou(d_box, c_box, True), det_area, gt_area)
            continue
        d_rle, g_rle, c_rle = _rles(dcache, dets), _rles(gcache, gts), _rles(gcache, crowds)
        d_b, g_b = _rles(dcache, dets, ratio), _rles(gcache, gts, ratio)
        det_area = np.array([mask_utils.area(r) for r in d_rle], dtype=np.float64).reshape(-1)
        out[img_id] = ImageIoUs(dets, gts, crowds, _iou(d_rle, g_rle, False), _iou(d_b, g_b, False),
                                _iou(d_rle, c_rle, True), det_area, gt_area)
    return out


# ----------------------------------------------------------------------------
# TIDE's matching, error classification and AP
# ----------------------------------------------------------------------------
def _match(iou, same, pos):
    """Greedy matching in score order; returns the matched gt per det (-1) and used gts."""
    n_d, n_g = iou.shape
    buf = np.where(same, iou, 0.0)
    match = np.full(n_d, -1)
    used = np.zeros(n_g, bool)
    for i in range(n_d):
        if n_g == 0:
            break
        j = int(np.argmax(buf[i]))
        if buf[i, j] >= pos:
            match[i], used[j] = j, True
            buf[:, j] = 0.0
    return match, used


class _Fixable:
    """TIDE's BestGTMatch: per ground truth, only the highest-scoring error is fixed."""

    def __init__(self):
        self.best = {}

    def offer(self, gt_key, score, det_key):
        if gt_key not in self.best or self.best[gt_key][0] < score:
            self.best[gt_key] = (score, det_key)

    def wins(self, gt_key, det_key):
        return self.best.get(gt_key, (None, None))[1] == det_key


def _tide(images: Dict[object, ImageIoUs], pos, bg, iou_kind, keep_det=None, keep_gt=None):
    """Run TIDE over the images; returns (points, errors, gt_count,
    boundary_rows), the last a row per boundary error (see
    :func:`analyze_errors`)."""
    points = []  # (cat, score, order, is_tp, det_key)
    boundary_rows = []
    errors = []  # (type, cat, det_key or None, target gt_key or None, fixed_cat)
    gt_count: Dict[object, int] = {}
    usable = set()
    fix_main, fix_bnd = _Fixable(), _Fixable()
    order = 0
    for img_id, im in images.items():
        di = np.arange(len(im.dets)) if keep_det is None else np.flatnonzero(keep_det(im))
        gi = np.arange(len(im.gts)) if keep_gt is None else np.flatnonzero(keep_gt(im))
        dets = [im.dets[i] for i in di]
        gts = [im.gts[j] for j in gi]
        mask = im.mask[np.ix_(di, gi)]
        iou = np.minimum(mask, im.boundary[np.ix_(di, gi)]) if iou_kind == "boundary" else mask
        crowd = im.crowd[di]
        dcat = np.array([d["category_id"] for d in dets])
        gcat = np.array([g["category_id"] for g in gts])
        for g in gts:
            gt_count[g["category_id"]] = gt_count.get(g["category_id"], 0) + 1
        same = dcat[:, None] == gcat[None, :]
        match, used = _match(iou, same, pos)
        mask_match = _match(mask, same, pos)[0] if iou_kind == "boundary" else None
        ccat = np.array([c["category_id"] for c in im.crowds])
        cls_iou = np.where(same, iou, 0.0)
        non_iou = np.where(same, 0.0, iou)
        used_iou = cls_iou * used[None, :]
        for i, d in enumerate(dets):
            key = id(d)
            cat, score = d["category_id"], d["score"]
            order += 1
            if match[i] >= 0:
                points.append((cat, score, order, True, key))
                continue
            if crowd.shape[1] and np.any((crowd[i] > pos) & (ccat == cat)):
                continue  # ignored
            points.append((cat, score, order, False, key))
            if mask_match is not None and mask_match[i] >= 0:
                j = int(mask_match[i])
                gkey = id(gts[j])
                if not used[j]:
                    fix_bnd.offer(gkey, score, key)
                errors.append(("boundary", cat, key, None if used[j] else gkey, cat))
                boundary_rows.append({"image_id": img_id, "dt": d, "gt": gts[j],
                                      "mask_iou": float(mask[i, j]),
                                      "boundary_iou": float(im.boundary[di[i], gi[j]])})
            if not gts:
                errors.append(("bkg", cat, key, None, None))
                continue
            j = int(np.argmax(cls_iou[i]))
            if bg <= cls_iou[i, j] <= pos:
                t = ("loc", cat)
            else:
                j = int(np.argmax(non_iou[i]))
                if non_iou[i, j] >= pos:
                    t = ("cls", int(gcat[j]))
                elif used_iou[i].max() >= pos:
                    errors.append(("dupe", cat, key, None, None))
                    continue
                elif iou[i].max() <= bg:
                    errors.append(("bkg", cat, key, None, None))
                    continue
                else:
                    errors.append(("both", cat, key, None, None))
                    continue
            gkey = id(gts[j])
            if not used[j]:
                usable.add(gkey)
                fix_main.offer(gkey, score, key)
                errors.append((t[0], cat, key, gkey, t[1]))
            else:
                errors.append((t[0], cat, key, None, t[1]))
        for j, g in enumerate(gts):
            if not used[j] and id(g) not in usable:
                errors.append(("miss", g["category_id"], None, id(g), None))
    # resolve which cls/loc/boundary errors are fixed into true positives
    resolved = []
    for t, cat, key, gkey, fcat in errors:
        if t in ("cls", "loc"):
            ok = gkey is not None and fix_main.wins(gkey, key)
        elif t == "boundary":
            ok = gkey is not None and fix_bnd.wins(gkey, key)
        else:
            ok = False
        resolved.append((t, cat, key, fcat if ok else None))
    boundary_rows.sort(key=lambda r: (r["boundary_iou"] - r["mask_iou"], -r["dt"]["score"]))
    return points, resolved, gt_count, boundary_rows


def _ap(scores, orders, tps, n_gt):
    """TIDE's AP of one category (a fraction)."""
    if n_gt == 0:
        return 0.0
    idx = np.lexsort((orders, -np.asarray(scores, dtype=np.float64)))
    tp = np.asarray(tps, bool)[idx]
    ntp = np.cumsum(tp)
    prec = ntp / np.arange(1, len(tp) + 1)
    rec = ntp / n_gt
    prec = np.maximum.accumulate(prec[::-1])[::-1]
    if not len(prec):
        return 0.0
    k = np.searchsorted(rec, np.arange(101) / 100.0, side="left")  # TIDE samples recall at i / 100
    y = np.zeros(101)
    ok = k < len(prec)
    y[ok] = prec[k[ok]]
    return float(np.mean(y))


def _category_aps(points, gt_count, remove=(), replace=None, gt_delta=None, fixed=False):
    """Per-category AP after removing detections, changing some and removing ground truths.

    In a ``fixed`` run, detections of equal score are ranked as tidecv ranks
    them after a fix: the former false positives first, then the true positives.
    """
    replace = replace or {}
    per: Dict[object, list] = {}
    n_pts = len(points)
    for cat, score, order, tp, key in points:
        if key in remove:
            continue
        rank = order + (n_pts if fixed and tp else 0)
        if key in replace:
            cat, tp = replace[key], True
        per.setdefault(cat, []).append((score, rank, tp))
    counts = dict(gt_count)
    for cat, n in (gt_delta or {}).items():
        counts[cat] = counts.get(cat, 0) - n
    cats = set(per) | {c for c, n in gt_count.items()}
    out = {}
    for c in cats:
        pts = per.get(c, [])
        n = counts.get(c, 0)
        if not pts and n == 0:  # TIDE leaves out a category left with nothing
            continue
        out[c] = _ap([p[0] for p in pts], [p[1] for p in pts], [p[2] for p in pts], n)
    return out


def _mean(aps):
    return float(np.mean(list(aps.values()))) if aps else float("nan")


def _breakdown(points, errors, gt_count):
    base = _category_aps(points, gt_count)
    result = {"ap": _mean(base), "errors": {}, "counts": {},
              "per_category": {c: {"ap": v, "errors": {}} for c, v in base.items()}}
    for t in ERROR_TYPES:
        mine = [e for e in errors if e[0] == t]
        result["counts"][t] = len(mine)
        if t == "miss":
            delta: Dict[object, int] = {}
            for _, cat, _, _ in mine:
                delta[cat] = delta.get(cat, 0) + 1
            fixed = _category_aps(points, gt_count, gt_delta=delta, fixed=True)
        else:
            remove = {key for _, _, key, fcat in mine if fcat is None}
            replace = {key: fcat for _, _, key, fcat in mine if fcat is not None}
            fixed = _category_aps(points, gt_count, remove=remove, replace=replace, fixed=True)
        result["errors"][t] = max(_mean(fixed) - result["ap"], 0.0) if base else 0.0
        for c in result["per_category"]:
            # None: the fix left the category with nothing (it leaves the mean)
            result["per_category"][c]["errors"][t] = max(fixed[c] - base[c], 0.0) if c in fixed else None
    return result


def analyze_errors(coco_gt, coco_dt, *, iou: str = "boundary", dilation_ratio: float = 0.02,
                   pos_threshold: float = 0.5, background_threshold: float = 0.1, max_dets: int = 100,
                   images: Optional[Dict[object, ImageIoUs]] = None) -> dict:
    """TIDE's six error types and the boundary error, overall, per size and per category.

    Parameters
    ----------
    coco_gt, coco_dt : pycocotools.coco.COCO
        Ground truth and results with segmentations (``coco_gt.loadRes``).
    iou : {'boundary', 'segm', 'bbox'}
        ``min(mask IoU, boundary IoU)`` (default), mask IoU or box IoU.  The
        boundary error exists only for 'boundary' (its ΔAP is 0 otherwise).
    dilation_ratio : float
        Boundary width as a fraction of the image diagonal.
    pos_threshold, background_threshold : float
        TIDE's foreground (0.5) and background (0.1) IoU thresholds.
    max_dets : int
        Detections kept per image, highest scores first.
    images : dict, optional
        The output of :func:`image_ious` when it was computed already.

    Returns
    -------
    dict
        ``{"ap", "errors": {type: ΔAP}, "counts": {type: n}, "per_category":
        {cat: {"ap", "errors"}}, "per_size": {size: {"ap", "errors", "counts"}},
        "boundary_errors": [...]}``; AP and ΔAP are fractions (TIDE prints
        them x100).  ``boundary_errors`` lists each boundary error's image,
        detection, ground truth and IoUs, highest mask IoU first.

    Raises
    ------
    ValueError
        For an unknown ``iou`` or thresholds outside ``0 <= t_b <= t_f <= 1``.
    """
    if iou not in ("boundary", "segm", "bbox"):
        raise ValueError(f"iou must be 'boundary', 'segm' or 'bbox', got {iou!r}")
    if not (0.0 <= background_threshold <= pos_threshold <= 1.0):
        raise ValueError(f"thresholds need 0 <= background_threshold ({background_threshold}) <= "
                         f"pos_threshold ({pos_threshold}) <= 1")
    if images is None:
        images = image_ious(coco_gt, coco_dt, dilation_ratio, max_dets, "bbox" if iou == "bbox" else "boundary")
    pts, errs, n_gt, boundary_rows = _tide(images, pos_threshold, background_threshold, iou)
    out = _breakdown(pts, errs, n_gt)
    out["per_size"] = {}
    for name, (lo, hi) in SIZES.items():
        p, e, n, _ = _tide(images, pos_threshold, background_threshold, iou,
                        keep_det=lambda im, lo=lo, hi=hi: (im.det_area >= lo) & (im.det_area <= hi),
                        keep_gt=lambda im, lo=lo, hi=hi: (im.gt_area >= lo) & (im.gt_area <= hi))
        b = _breakdown(p, e, n)
        out["per_size"][name] = {"ap": b["ap"], "errors": b["errors"], "counts": b["counts"]}
    # (the rows are those of the errors counted above: detections a crowd
    # region ignores are no error)
    out["boundary_errors"] = boundary_rows
    return out


# ----------------------------------------------------------------------------
# curves and coverage
# ----------------------------------------------------------------------------
def pr_curves(coco_eval, iou_thrs=(0.5, 0.75)) -> Dict[str, Dict[float, np.ndarray]]:
    """Precision at each recall threshold, mean over categories, per area range.

    Parameters
    ----------
    coco_eval : boundary_api.COCOeval or boundary_api.LVISEval
        After ``accumulate()``.
    iou_thrs : sequence of float
        IoU thresholds among the evaluation's (``params.iouThrs`` or ``params.iou_thrs``).

    Returns
    -------
    dict
        ``{area label: {iou threshold: precision array over the recall
        thresholds}}`` (COCOeval: for the largest ``maxDets``); a point where no
        category has a value is NaN.
    """
    p = coco_eval.params
    prec = np.asarray(coco_eval.eval["precision"])
    if prec.ndim == 5:  # COCOeval: (T, R, K, A, M); LVISEval: (T, R, K, A)
        prec = prec[..., -1]
    thrs = np.asarray(p.iouThrs if hasattr(p, "iouThrs") else p.iou_thrs)
    labels = p.areaRngLbl if hasattr(p, "areaRngLbl") else p.area_rng_lbl
    out = {}
    for a, label in enumerate(labels):
        out[label] = {}
        for t in iou_thrs:
            k = np.flatnonzero(np.isclose(thrs, t))
            if not k.size:
                raise ValueError(f"IoU threshold {t} is not among the evaluation's IoU thresholds")
            x = prec[k[0], :, :, a]
            valid = x > -1
            n = valid.sum(axis=1)
            with np.errstate(invalid="ignore"):
                out[label][float(t)] = np.where(n > 0, np.where(valid, x, 0).sum(axis=1) / np.maximum(n, 1), np.nan)
    return out


def boundary_coverage(coco_gt, dilation_ratio: float = 0.02) -> Dict[str, dict]:
    """How many ground-truth objects are all boundary (the band covers the whole
    mask, so Boundary IoU equals Mask IoU), per size.

    Returns
    -------
    dict
        ``{size or 'all': {"objects": n, "covered": m, "fraction": m / n or None}}``
        over non-crowd ground truths; size by their ``area`` as in COCO.
    """
    ratio = check_dilation_ratio(dilation_ratio)
    anns = [a for a in coco_gt.dataset.get("annotations", []) if not a.get("iscrowd", 0)]
    cache = cache_for(coco_gt)
    masks = _rles(cache, anns)
    bounds = _rles(cache, anns, ratio)
    m_area = np.array([mask_utils.area(r) for r in masks], dtype=np.float64).reshape(-1)
    b_area = np.array([mask_utils.area(r) for r in bounds], dtype=np.float64).reshape(-1)
    covered = b_area == m_area
    area = np.array([a["area"] for a in anns], dtype=np.float64)
    out = {}
    for name, (lo, hi) in [("all", (0.0, 1e10))] + list(SIZES.items()):
        sel = (area >= lo) & (area <= hi)
        n, m = int(sel.sum()), int((covered & sel).sum())
        out[name] = {"objects": n, "covered": m, "fraction": (m / n) if n else None}
    return out
