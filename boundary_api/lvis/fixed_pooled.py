"""LVIS Fixed AP and Pooled AP (Dave, Dollar, Ramanan, Kirillov, Girshick,
"Evaluating Large-Vocabulary Object Detectors: The Devil is in the Details",
2021), for 'boundary', 'segm' and 'bbox'.

- **Fixed AP**: per category, the K (default 10,000) highest-scoring results
  over the whole dataset, no limit per image, then LVIS' usual AP.
- **Pooled AP**: the same results; the matching is LVIS' own, per image and
  category, but precision and recall are accumulated over *all* categories of
  a pool at once (all categories, and each of the rare / common / frequent
  groups), so that scores must be comparable across categories.

The numbers are those of the paper's code (``scripts/evaluate_ap_fixed.py``
and ``scripts/evaluate_ap_pooled.py`` of large-vocab-devil, on lvis 0.5.3),
ties in score included.  :class:`boundary_api.LVISEval` calls in here when
given ``ap='fixed'`` or ``ap='pooled'``; see docs/lvis_fixed_pooled.md.
"""
from __future__ import annotations

import logging
import os
import warnings
from collections import defaultdict
from typing import Optional, Tuple

import numpy as np

from .._io import InputBytes, read_json, read_once

__all__ = ["AP_KINDS", "POOLS", "check_ap", "check_dets_per_cat", "load_results", "top_k_per_category"]

log = logging.getLogger(__name__)

#: the values of ``LVISEval(..., ap=)``
AP_KINDS = ("standard", "fixed", "pooled")
#: Pooled AP's pools: all categories, then LVIS' frequency groups
POOLS = ("all", "r", "c", "f")
#: the keys ``get_results()`` gives for each pool
POOL_KEYS = {"all": "AP", "r": "APr", "c": "APc", "f": "APf"}
#: the paper's K
DEFAULT_DETS_PER_CAT = 10000


def check_ap(ap) -> str:
    """``ap`` if it is one of :data:`AP_KINDS`, else ValueError (one line)."""
    if not isinstance(ap, str) or ap not in AP_KINDS:
        raise ValueError(f"ap must be one of {', '.join(map(repr, AP_KINDS))}; got {ap!r}")
    return ap


def check_dets_per_cat(dets_per_cat) -> Optional[int]:
    """``dets_per_cat`` as an int (a positive integer) or None (no limit),
    else ValueError (one line)."""
    if dets_per_cat is None:
        return None
    if isinstance(dets_per_cat, bool) or not isinstance(dets_per_cat, (int, np.integer)) or dets_per_cat < 1:
        raise ValueError(f"dets_per_cat must be a positive integer (or None: no limit); got {dets_per_cat!r}")
    return int(dets_per_cat)


# --------------------------------------------------------------- loading
def top_k_per_category(results: list, k: Optional[int]) -> Tuple[list, int]:
    """The ``k`` highest-scoring results of each category, over the whole list.

    Categories come in the order of their first result, each with its results
    sorted by decreasing score, results of equal score in list order (a
    stable sort): the order the paper's scripts hand to ``LVISResults``, so
    that result ids are theirs too.  ``k=None`` keeps every result (in that
    order).

    Returns
    -------
    list
        The kept results (the same dicts).
    int
        How many categories with results have fewer than ``k`` (0 for None).
    """
    by_cat = defaultdict(list)
    for ann in results:
        by_cat[ann["category_id"]].append(ann)
    out = []
    short = 0
    for anns in by_cat.values():
        if k is not None and len(anns) < k:
            short += 1
        ranked = sorted(anns, key=lambda ann: ann["score"], reverse=True)
        out.extend(ranked if k is None else ranked[:k])
    return out, short


def _top_k_rows(columns, k: Optional[int]) -> Tuple[Optional[np.ndarray], int]:
    """:func:`top_k_per_category` on result columns: the rows kept, in that
    order, and the number of short categories; rows None when float64's
    order of the scores could differ from Python's (integers past 2**53)."""
    score = columns.score
    if ((columns.int_kind & 1).astype(bool) & (np.abs(score) >= 2.0 ** 53)).any():
        return None, 0
    n = columns.n
    _, first, group = np.unique(columns.category_id, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    rank_of_group = np.empty(len(first), np.int64)
    rank_of_group[np.argsort(first, kind="stable")] = np.arange(len(first))
    sizes = np.bincount(group, minlength=len(first))
    key = rank_of_group[group]
    rows = np.arange(n, dtype=np.int64)
    order = np.lexsort((rows, -score, key))
    if k is None:
        return order, 0
    key = key[order]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1]))) if n else np.zeros(0, np.int64)
    counts = np.diff(np.concatenate((starts, [n])))
    within = np.arange(n) - np.repeat(starts, counts)
    return order[within < k], int((sizes < k).sum())


def _without_boxes(columns):
    """Columns of results whose ``bbox`` is dropped before lvis reads them
    (the scripts do so for 'segm': areas and boxes then come from the masks);
    None when their RLEs cannot be read (the general path words it)."""
    from ..instance._columns import HAS_BBOX, _COUNTS_FIRST

    if columns.kind != "bbox":
        return columns
    try:
        area, box = columns.check_rles(area_bbox=True)  # (one decode of each string)
    except ValueError:
        return None
    new = columns.take(np.arange(columns.n, dtype=np.int64))
    new.mask_area = area
    new.bbox = np.ascontiguousarray(box)
    new.area = area.astype(np.float64)
    new.kind = "segmentation"
    new.present = new.present & ~HAS_BBOX
    order = new.key_order.astype(np.int64)
    codes = order & ~_COUNTS_FIRST
    kept = np.zeros_like(codes)
    placed = np.zeros_like(codes)
    for pos in range(6):
        code = (codes >> (3 * pos)) & 7
        keep = (code != 0) & (code != 4)
        kept |= np.where(keep, code << (3 * placed), 0)
        placed += keep
    new.key_order = (kept | (order & _COUNTS_FIRST)).astype(columns.key_order.dtype)
    new.rles_checked = True
    return new


def load_results(lvis_gt, results, iou_type: str = "segm", dets_per_cat: Optional[int] = DEFAULT_DETS_PER_CAT,
                 max_dets: int = -1, strict: Optional[bool] = None, warn: bool = True):
    """Results loaded as the paper's scripts load them for Fixed and Pooled AP.

    The ``dets_per_cat`` highest-scoring results of each category over the
    whole dataset (:func:`top_k_per_category`); for 'segm' and 'boundary'
    their ``bbox`` dropped, so that areas (and the area ranges of APs, APm,
    APl) are mask areas; then ``LVISResults(lvis_gt, kept, max_dets)``,
    ``max_dets=-1`` meaning no limit per image.

    Parameters
    ----------
    lvis_gt : LVIS or str
    results : str, path-like or list of dict
        A results file (read into columns when in the results schema) or list
        (its dicts are not changed: the kept ones are copied).
    iou_type : {'segm', 'bbox', 'boundary'}
    dets_per_cat : int or None
        K (default 10,000); None keeps every result.
    max_dets : int
        Results kept per image after the per-category cut (default -1: all).
    strict : bool, optional
        As for :class:`LVISResults`.
    warn : bool
        Warn (``UserWarning``, one line) when some categories have fewer than
        ``dets_per_cat`` results: Fixed AP is then lower than the model could
        reach (as the paper's script warns).

    Returns
    -------
    LVISResults
    """
    from ..instance._columns import load_result_columns
    from .dataset import LVIS, LVISResults, _is_path

    dets_per_cat = check_dets_per_cat(dets_per_cat)
    if _is_path(lvis_gt):
        lvis_gt = LVIS(lvis_gt, strict=bool(strict))
    if strict is None:
        strict = getattr(lvis_gt, "_strict", False)
    drop_boxes = iou_type != "bbox"
    if _is_path(results) or isinstance(results, InputBytes):
        key = results.name if isinstance(results, InputBytes) else os.fspath(results)
        src = read_once(key, "results") if not isinstance(results, InputBytes) else results
        columns = None
        if isinstance(key, str):
            try:
                columns = load_result_columns(lvis_gt, src, key, strict=strict)
            except (ValueError, TypeError):
                columns = None
        if columns is not None:
            rows, short = _top_k_rows(columns, dets_per_cat)
            if rows is not None:
                kept = columns if len(rows) == columns.n and (rows == np.arange(columns.n)).all() \
                    else columns.take(rows)
                if drop_boxes and kept.has_segmentation:
                    kept = _without_boxes(kept)
                if kept is not None and kept.n and max_dets < 0:
                    _warn_short(short, dets_per_cat, len(np.unique(columns.category_id)), warn)
                    out = LVISResults.__new__(LVISResults)
                    out._strict = bool(strict)
                    out._init_from_columns(lvis_gt, kept)
                    return out
        anns = read_json(src, "results")
    else:
        anns = results
    if not isinstance(anns, list) or not all(isinstance(a, dict) and "category_id" in a and "score" in a
                                             for a in anns):
        # LVISResults words what is wrong with them
        return LVISResults(lvis_gt, anns, max_dets=max_dets, strict=strict)
    kept, short = top_k_per_category(anns, dets_per_cat)
    kept = [dict(a) for a in kept]
    if drop_boxes:
        for a in kept:
            a.pop("bbox", None)
    _warn_short(short, dets_per_cat, len({a["category_id"] for a in anns}), warn)
    return LVISResults(lvis_gt, kept, max_dets=max_dets, strict=strict)


def _warn_short(short: int, k: Optional[int], num_cats: int, warn: bool) -> None:
    if short and warn:
        warnings.warn(f"{short} of the {num_cats} categories with results have fewer than {k} detections; "
                      f"Fixed and Pooled AP would be higher with {k} per category (see "
                      f"docs/lvis_fixed_pooled.md on making a detector output them)", UserWarning, stacklevel=4)


def count_per_category(lvis_dt) -> np.ndarray:
    """Results per category of a loaded :class:`LVISResults` (columns or dicts)."""
    columns = lvis_dt.__dict__.get("_columns")
    if columns is not None:
        return np.unique(columns.category_id, return_counts=True)[1]
    cats = [a["category_id"] for a in lvis_dt.dataset["annotations"]]
    return np.unique(np.asarray(cats), return_counts=True)[1] if cats else np.zeros(0, np.int64)


def check_loaded(lvis_dt, k: Optional[int]) -> None:
    """Warn (one line) when already loaded results hold more than ``k``
    results of some category: they are evaluated as given (as the paper's
    evaluator classes evaluate what they are given), while Fixed and Pooled
    AP take the top ``k`` of each category (:func:`load_results` does)."""
    if k is None:
        return
    try:
        counts = count_per_category(lvis_dt)
    except (AttributeError, KeyError, TypeError):
        return
    over = int((counts > k).sum())
    if over:
        warnings.warn(f"lvis_dt holds more than {k} results for {over} categories and is evaluated as given; "
                      f"Fixed and Pooled AP keep the top {k} of each: pass the results file or list, or load "
                      f"them with boundary_api.lvis.fixed_pooled.load_results", UserWarning, stacklevel=3)


def only_area_all(params) -> None:
    """Keep area range 'all' only, as the paper's Pooled AP script does."""
    keep = [i for i, lbl in enumerate(params.area_rng_lbl) if lbl == "all"]
    params.area_rng = [params.area_rng[i] for i in keep]
    params.area_rng_lbl = [params.area_rng_lbl[i] for i in keep]


# ------------------------------------------------------------ pooled AP
def pool_members(ev) -> dict:
    """Category indices (into ``params.cat_ids``) of each pool."""
    p = ev.params
    groups = ev.freq_groups
    out = {"all": list(range(len(p.cat_ids)))}
    for name in ("r", "c", "f"):
        out[name] = list(groups[p.img_count_lbl.index(name)])
    return out


def _curve(scores: np.ndarray, flags: np.ndarray, num_gt: int, rec_thrs: np.ndarray, precision: np.ndarray,
           recall: np.ndarray) -> None:
    """LVIS' accumulation for one set of detections pooled in gather order:
    ranked by decreasing score (stable), cumulative true and false positives
    per IoU threshold, interpolated precision sampled at ``rec_thrs``.

    ``flags[t, i]``: bit 1 the detection is matched, bit 2 it is ignored.
    Fills ``precision (T, R)`` and ``recall (T,)``.
    """
    order = np.argsort(-scores, kind="mergesort")
    n = len(order)
    R = len(rec_thrs)
    eps = np.spacing(1)
    for t in range(flags.shape[0]):
        fl = flags[t, order]
        counted = (fl & 2) == 0
        tp = np.cumsum(counted & ((fl & 1) != 0)).astype(np.float64)
        fp = np.cumsum(counted & ((fl & 1) == 0)).astype(np.float64)
        rc = tp / num_gt
        recall[t] = rc[-1] if n else 0
        if not n:
            precision[t] = 0.0
            continue
        pr = tp / (fp + tp + eps)
        pr = np.maximum.accumulate(pr[::-1])[::-1]
        at = np.searchsorted(rc, rec_thrs, side="left")
        row = np.where(at < n, pr[np.minimum(at, n - 1)], 0.0)
        past = np.flatnonzero(at >= n)
        if len(past):
            row[past[0]:] = 0.0  # (lvis stops at the first recall threshold past the curve)
        precision[t] = row


def accumulate_pooled(ev, state=None) -> None:
    """Pooled AP's ``accumulate``: ``ev.eval`` with ``precision`` of shape
    ``(T, R, pools, A)`` and ``recall`` ``(T, pools, A)``, -1 where a pool
    has no ground truth to count (pools in :data:`POOLS` order).

    From the native evaluation ``state`` when given, else from
    ``ev.eval_imgs`` (lvis' per-image results, in its order).
    """
    import datetime

    p = ev.params
    T, R, A = len(p.iou_thrs), len(p.rec_thrs), len(p.area_rng)
    I = len(p.img_ids)
    K = len(p.cat_ids)
    rec_thrs = np.asarray(p.rec_thrs, np.float64)
    precision = -np.ones((T, R, len(POOLS), A))
    recall = -np.ones((T, len(POOLS), A))
    members = pool_members(ev)
    if state is None:
        eval_imgs = ev.eval_imgs
    for j, pool in enumerate(POOLS):
        cats = members[pool]
        if state is not None:
            in_pool = np.zeros(max(K, 1), bool)
            in_pool[np.asarray(cats, np.int64)] = True
            pairs = np.flatnonzero(in_pool[state.pair_cat])
            # lvis' gather order: image by image, the pool's categories in order
            pairs = pairs[np.lexsort((state.pair_cat[pairs], state.pair_img[pairs]))]
            if not len(pairs):
                continue
            nd = state.pair_d[pairs + 1] - state.pair_d[pairs]
            dets = np.repeat(state.pair_d[pairs] - np.concatenate(([0], np.cumsum(nd)[:-1])), nd) \
                + np.arange(int(nd.sum()))
            ng = state.pair_g[pairs + 1] - state.pair_g[pairs]
            gts = np.repeat(state.pair_g[pairs] - np.concatenate(([0], np.cumsum(ng)[:-1])), ng) \
                + np.arange(int(ng.sum()))
            scores = state.dt_score[dets]
        for a in range(A):
            if state is not None:
                num_gt = int(np.count_nonzero(state.gt_ig[a, gts] == 0))
                if num_gt == 0:
                    continue
                flags = state.dt_flags[a][:, dets]
            else:
                entries = [eval_imgs[k * A * I + a * I + i] for i in range(I) for k in cats]
                entries = [e for e in entries if e is not None]
                if not entries:
                    continue
                gt_ig = np.concatenate([e["gt_ignore"] for e in entries])
                num_gt = int(np.count_nonzero(gt_ig == 0))
                if num_gt == 0:
                    continue
                scores = np.concatenate([e["dt_scores"] for e in entries], axis=0)
                matched = np.concatenate([e["dt_matches"] for e in entries], axis=1)
                ignored = np.concatenate([e["dt_ignore"] for e in entries], axis=1)
                flags = ((matched != 0).astype(np.uint8) | (ignored != 0).astype(np.uint8) << 1).reshape(T, -1)
            _curve(np.asarray(scores, np.float64), flags, num_gt, rec_thrs, precision[:, :, j, a],
                   recall[:, j, a])
    ev.eval = {
        "params": p,
        "counts": [T, R, len(POOLS), A],
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        "precision": precision,
        "recall": recall,
    }


def summarize_pooled(ev) -> None:
    """Pooled AP's ``summarize``: ``ev.results`` gets ``AP`` (the pool of
    all categories), ``APr``, ``APc``, ``APf`` (each frequency group), over
    every IoU threshold and area range 'all'; -1 for a pool without ground
    truth."""
    if not ev.eval:
        raise RuntimeError("Please run accumulate() first.")
    p = ev.params
    aidx = [i for i, lbl in enumerate(p.area_rng_lbl) if lbl == "all"]
    for j, pool in enumerate(POOLS):
        s = ev.eval["precision"][:, :, j, aidx]
        valid = s[s > -1]
        ev.results[POOL_KEYS[pool]] = np.mean(valid) if len(valid) else -1
