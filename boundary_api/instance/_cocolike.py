"""What the pycocotools-shaped evaluators (``COCOeval``, and ``YTVOSeval`` over
videos) share on top of the engine: the native ``accumulate``'s index lists
and ``eval`` dict, the twelve-line detection summary (its AP lines gathered
from the precision array in one pass), and pycocotools' parameter copy."""
from __future__ import annotations

import contextlib
import copy
import datetime
import time
import warnings

import numpy as np

from . import _summary
from ._engine import sorted_unique

def summary_lines(params) -> list:
    """pycocotools' twelve detection summary lines: (ap, iouThr, areaRng, maxDets)."""
    md = params.maxDets
    return [(1, None, "all", 100), (1, .5, "all", md[2]), (1, .75, "all", md[2]),
            (1, None, "small", md[2]), (1, None, "medium", md[2]), (1, None, "large", md[2]),
            (0, None, "all", md[0]), (0, None, "all", md[1]), (0, None, "all", md[2]),
            (0, None, "small", md[2]), (0, None, "medium", md[2]), (0, None, "large", md[2])]


def _summary_selection(ev, ap, iou_thr, area_rng, max_dets):
    """pycocotools' ``_summarize`` selection: the array, the IoU threshold
    indices (None: all), the area and maxDets indices."""
    p = ev.params
    aind = [i for i, a in enumerate(p.areaRngLbl) if a == area_rng]
    mind = [i for i, m in enumerate(p.maxDets) if m == max_dets]
    s = ev.eval["precision"] if ap == 1 else ev.eval["recall"]
    t = None if iou_thr is None else np.where(iou_thr == p.iouThrs)[0]
    return s, t, aind, mind


def _summary_value(ev, ap, iou_thr, area_rng, max_dets):
    """One line's value as pycocotools takes it: ``np.mean(s[s > -1])``."""
    s, t, aind, mind = _summary_selection(ev, ap, iou_thr, area_rng, max_dets)
    if t is not None:
        s = s[t]
    s = s[:, :, :, aind, mind] if ap == 1 else s[:, :, aind, mind]
    kept = s[s > -1]
    return -1 if len(kept) == 0 else np.mean(kept)


def _batched_ap_values(ev, lines) -> dict:
    """The values of the AP lines whose selection is one area and one
    maxDets entry, gathered from the precision array in one pass per maxDets
    entry (``_summary.summary_gather``): the same elements in the same
    order as pycocotools' selection, so ``np.mean`` gives the same float."""
    s = ev.eval["precision"]
    if type(s) is not np.ndarray or s.ndim != 5 or s.dtype != np.float64:
        return {}
    T, R, K, A, M = s.shape
    groups: dict = {}
    for n, (ap, iou_thr, area_rng, max_dets) in enumerate(lines):
        if ap != 1:
            continue
        _, t, aind, mind = _summary_selection(ev, ap, iou_thr, area_rng, max_dets)
        if len(aind) != 1 or len(mind) != 1 or not (0 <= aind[0] < A and 0 <= mind[0] < M):
            continue
        t = np.arange(T) if t is None else t
        if len(t) and not (0 <= t.min() and t.max() < T):
            continue
        groups.setdefault(mind[0], []).append((n, t, aind[0]))
    nt = getattr(ev, "num_threads", 1)
    threads = nt if type(nt) is int and nt >= 1 else 1
    values = {}
    for m, sels in groups.items():
        t_mask, k_mask, a_mask = np.zeros(T, np.uint32), np.zeros(K, np.uint32), np.zeros(A, np.uint32)
        for b, (_, t, a) in enumerate(sels):
            t_mask[t] |= np.uint32(1 << b)
            k_mask |= np.uint32(1 << b)
            a_mask[a] |= np.uint32(1 << b)
        out, offset = _summary.summary_gather(s[..., m], t_mask, k_mask, a_mask, len(sels), threads)
        for b, (n, _, _) in enumerate(sels):
            kept = out[offset[b]:offset[b + 1]]
            values[n] = -1 if len(kept) == 0 else np.mean(kept)
    return values


def summarize_detections(ev, lines) -> np.ndarray:
    """pycocotools' ``summarize`` for detections: the twelve ``lines``,
    printed as it prints them, and ``stats``."""
    p = ev.params
    try:
        batched = _batched_ap_values(ev, lines)
    except (IndexError, KeyError, TypeError, ValueError):
        batched = {}  # (pycocotools' own indexing decides, line by line)
    template = " {:<18} {} @[ IoU={:<9} | area={:>6s} | maxDets={:>3d} ] = {:0.3f}"
    stats = np.zeros((12,))
    for n, (ap, iou_thr, area_rng, max_dets) in enumerate(lines):
        title = "Average Precision" if ap == 1 else "Average Recall"
        kind = "(AP)" if ap == 1 else "(AR)"
        iou = ("{:0.2f}:{:0.2f}".format(p.iouThrs[0], p.iouThrs[-1]) if iou_thr is None
               else "{:0.2f}".format(iou_thr))
        value = batched[n] if n in batched else _summary_value(ev, ap, iou_thr, area_rng, max_dets)
        print(template.format(title, kind, iou, area_rng, max_dets, value))
        stats[n] = value
    return stats


def warn_missing_summary_max_dets(params) -> None:
    """Warn when pycocotools' summary would print -1 because the ``maxDets``
    it reads a line at (100, or 20 for keypoints) is not in ``params.maxDets``."""
    fixed = 20 if params.iouType == "keypoints" else 100
    max_dets = [int(m) for m in getattr(params, "maxDets", [])]
    if max_dets and fixed not in max_dets:
        which = "every line" if fixed == 20 else "the first line (AP @[ IoU=0.50:0.95 | area=all ])"
        warnings.warn(f"summarize(): params.maxDets {max_dets} has no {fixed}, so {which} is read at "
                      f"maxDets={fixed} and prints -1, as in pycocotools", stacklevel=3)



def start_evaluate(p, ids: str = "imgIds", say=print) -> None:
    """The opening of pycocotools' ``evaluate`` (and its video fork's): its
    first printed lines, the deprecated ``useSegm``, and the ids (``ids``:
    ``imgIds`` or ``vidIds``), categories and ``maxDets`` sorted as it sorts
    them, in ``p``."""
    say("Running per image evaluation...")
    if p.useSegm is not None:
        p.iouType = "segm" if p.useSegm == 1 else "bbox"
        say("useSegm (deprecated) is not None. Running {} evaluation".format(p.iouType))
    say("Evaluate annotation type *{}*".format(p.iouType))
    setattr(p, ids, sorted_unique(getattr(p, ids)))
    if p.useCats:
        p.catIds = sorted_unique(p.catIds)
    p.maxDets = sorted(p.maxDets)


def copy_params(p):
    """``copy.deepcopy(p)`` for pycocotools' ``Params``, without deep-copying
    the NumPy scalars of ``imgIds`` one by one (immutable, so shared)."""
    new = copy.copy(p)
    for key, value in vars(p).items():
        if isinstance(value, list):
            if all(type(x) is list for x in value):  # areaRng
                value = [copy.deepcopy(x) for x in value]
            elif all(isinstance(x, (int, float, str, np.number)) for x in value):
                value = list(value)
            else:
                value = copy.deepcopy(value)
        elif value is not None and not isinstance(value, (int, float, str)):
            value = copy.deepcopy(value)
        setattr(new, key, value)
    return new



@contextlib.contextmanager
def iou_type_as(params, iou_type):
    saved = params.iouType
    params.iouType = iou_type
    try:
        yield
    finally:
        params.iouType = saved


def native_lists(p, _pe, state, ids: str = "imgIds"):
    """pycocotools' ``k_list``, ``a_list``, ``m_list``, ``i_list`` when
    the kernels can accumulate them from ``state``, else None (``ids``: the
    params' image axis, ``'vidIds'`` for YouTube-VIS)."""
    try:
        pe_cats = list(_pe.catIds) if _pe.useCats else [-1]
        if (pe_cats != state.cat_ids or list(getattr(_pe, ids)) != state.img_ids
                or [list(a) for a in _pe.areaRng] != state.area_rng):
            return None  # (_paramsEval changed since evaluate())
        setK = set(pe_cats)
        setA = set(map(tuple, _pe.areaRng))
        setM = set(_pe.maxDets)
        setI = set(getattr(_pe, ids))
    except (AttributeError, TypeError, ValueError):
        return None
    k_list = [n for n, k in enumerate(p.catIds) if k in setK]
    m_list = [m for n, m in enumerate(p.maxDets) if m in setM]
    a_list = [n for n, a in enumerate(map(tuple, p.areaRng)) if a in setA]
    i_list = [n for n, i in enumerate(getattr(p, ids)) if i in setI]
    I0, K0, A0 = len(state.img_ids), len(state.cat_ids), len(state.area_rng)
    same_thrs = len(p.iouThrs) == state.dt_flags.shape[1]
    if (not same_thrs or state.nan_scores or np.isnan(np.asarray(p.recThrs, np.float64)).any()
            or (k_list and max(k_list) >= K0) or (a_list and max(a_list) >= A0)
            or (i_list and max(i_list) >= I0) or any(m > state.max_det for m in m_list)):
        return None
    return k_list, a_list, m_list, i_list


def native_accumulate(p, state, threads: int, native: tuple) -> dict:
    """pycocotools' ``accumulate`` in the kernels, printed as it prints:
    the ``eval`` dict of ``precision``, ``recall`` and ``scores`` for the
    index lists ``native`` (:func:`native_lists`)."""
    print("Accumulating evaluation results...")
    tic = time.time()
    if not (len(state.cat_ids) and len(state.area_rng) and len(state.img_ids)):
        print("Please run evaluate() first")  # (pycocotools, for an empty evalImgs)
    k_list, a_list, m_list, i_list = native
    T, R = len(p.iouThrs), len(p.recThrs)
    K = len(p.catIds) if p.useCats else 1
    A, M = len(p.areaRng), len(p.maxDets)
    precision, recall, scores = state.accumulate(k_list, a_list, m_list, i_list, p.recThrs,
                                                 K, A, M, True, threads)
    out = {
        "params": p,
        "counts": [T, R, K, A, M],
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        "precision": precision,
        "recall": recall,
        "scores": scores,
    }
    print("DONE (t={:0.2f}s).".format(time.time() - tic))
    return out
