"""Is a gain real?  Bootstrap confidence intervals over images for the headline
numbers, and the paired bootstrap comparison of two result sets.

The evaluation set is a sample of images; a headline number (AP, AP50, ...,
APr, AR@300, ...) computed on another sample of the same size would differ.
The bootstrap (Efron and Tibshirani, *An Introduction to the Bootstrap*, 1993,
ch. 13 and 16) estimates by how much: it draws ``resamples`` multisets of the
evaluated images, each of the same size, with replacement, and recomputes the
number on each.  A multiset is evaluated as if each image were in the
evaluation as often as it was drawn (its ground truths and detections
repeated); the matching of detections to ground truths is per image, so
it is computed once (by ``evaluate()``) and only the accumulation runs per
resample -- in the compiled kernel ``_eval.bootstrap_cells``, which gives
what ``accumulate()`` + ``summarize()`` give on the dataset with the drawn
images repeated (copies next to one another in the image order), up to the
order of a floating-point sum (1e-12).

Interval: the percentile interval (the ``(1 - confidence) / 2`` and
``(1 + confidence) / 2`` quantiles of the resampled numbers).

Paired comparison (Koehn, *Statistical significance tests for machine
translation evaluation*, EMNLP 2004; Efron and Tibshirani 16.4): both result
sets are scored on the same drawn multisets, so the interval is that of the
difference ``d_b = A_b - B_b``.  The difference reported is that of the two
plain evaluations, ``d = A - B``.  The two-sided p-value tests "no
difference" with the bootstrap distribution shifted to the null:
``p = (1 + #{b : |d_b - d| >= |d|}) / (resamples + 1)``.  A difference is
*within noise* when its interval contains 0.

AP over resampled image sets is biased upward (the precision envelope takes
the maximum of a noisier curve): one model's percentile interval can lie above
its plain AP.  The bias is nearly the same for two models on the same
resamples; the interval of the paired difference is the one to judge a gain by.
"""
from __future__ import annotations

import logging
import time
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .._parallel import resolve_threads, run_ranges
from ..instance import _eval
from ..instance._lazy import instance_dict

__all__ = ["bootstrap", "compare", "headline_values", "describe", "describe_rows", "BootstrapResult"]

log = logging.getLogger(__name__)


class _Headline:
    """One headline number: the mean of precision (``ap``) or recall (``ar``)
    over the cells ``(threshold, category)`` of area ``area`` and maxDets
    ``max_det`` that have ground truth, as pycocotools' / lvis' ``_summarize``."""

    def __init__(self, name, kind, thr_idx, area_idx, max_det_idx, cat_idx=None):
        self.name, self.kind = name, kind
        self.thr_idx, self.area_idx, self.max_det_idx = thr_idx, area_idx, max_det_idx
        self.cat_idx = cat_idx  # None: every category


def _style(ev) -> str:
    p = getattr(ev, "params", None)
    if hasattr(p, "iouThrs"):
        return "coco"
    if hasattr(p, "iou_thrs"):
        return "lvis"
    raise TypeError(f"expected a boundary_api COCOeval or LVISEval, got {type(ev).__name__}")


def _state(ev):
    state = instance_dict(ev).get("_state")
    if state is None or not state.matched:
        raise ValueError("the evaluator has no native per-image evaluation: run evaluate() of a boundary_api "
                         "COCOeval / LVISEval with use_fast_impl=True (and no overridden per-image methods) first")
    if state.nan_scores:
        raise ValueError("the results have NaN scores: their order is undefined, the bootstrap refuses them")
    return state


def _where(values, x) -> list:
    return [i for i, v in enumerate(values) if v == x]


def _headlines(ev) -> Tuple[List[_Headline], Sequence[float], list]:
    """The headline numbers of ``ev`` (in the order of ``stats`` / ``results``),
    the IoU thresholds and the area labels."""
    p = ev.params
    if _style(ev) == "coco":
        thrs, labels, max_dets = list(p.iouThrs), list(p.areaRngLbl), list(p.maxDets)
        spec = [("AP", "ap", None, "all", 100), ("AP50", "ap", 0.5, "all", 100), ("AP75", "ap", 0.75, "all", 100),
                ("APs", "ap", None, "small", 100), ("APm", "ap", None, "medium", 100),
                ("APl", "ap", None, "large", 100), ("AR1", "ar", None, "all", 1), ("AR10", "ar", None, "all", 10),
                ("AR100", "ar", None, "all", 100), ("ARs", "ar", None, "small", 100),
                ("ARm", "ar", None, "medium", 100), ("ARl", "ar", None, "large", 100)]
        groups = {}
    else:
        thrs, labels, max_dets = list(p.iou_thrs), list(p.area_rng_lbl), [None]
        m = p.max_dets
        spec = [("AP", "ap", None, "all", None), ("AP50", "ap", 0.5, "all", None), ("AP75", "ap", 0.75, "all", None),
                ("APs", "ap", None, "small", None), ("APm", "ap", None, "medium", None),
                ("APl", "ap", None, "large", None), ("APr", "ap", None, "all", None),
                ("APc", "ap", None, "all", None), ("APf", "ap", None, "all", None),
                (f"AR@{m}", "ar", None, "all", None), (f"ARs@{m}", "ar", None, "small", None),
                (f"ARm@{m}", "ar", None, "medium", None), (f"ARl@{m}", "ar", None, "large", None)]
        freq = getattr(ev, "freq_groups", None) or [[], [], []]
        groups = {"APr": list(freq[0]), "APc": list(freq[1]), "APf": list(freq[2])}
    out = []
    for name, kind, thr, area, md in spec:
        t_idx = list(range(len(thrs))) if thr is None else [i for i, v in enumerate(thrs) if v == thr]
        a_idx = _where(labels, area)
        m_idx = _where(max_dets, md)
        if not (t_idx and a_idx and m_idx):
            out.append(_Headline(name, kind, [], None, None))  # summarize gives -1
            continue
        out.append(_Headline(name, kind, t_idx, a_idx[0], m_idx[0], groups.get(name)))
    return out, thrs, labels


def headline_values(ev) -> Dict[str, float]:
    """The headline numbers of an accumulated evaluator, as ``summarize()``
    computes them (``stats`` of COCOeval, ``results`` of LVISEval; -1 where
    there is nothing to average), without printing."""
    if not getattr(ev, "eval", None):
        raise ValueError("run accumulate() first")
    heads, _, _ = _headlines(ev)
    prec, rec = np.asarray(ev.eval["precision"]), np.asarray(ev.eval["recall"])
    coco = _style(ev) == "coco"
    out = {}
    for h in heads:
        if h.area_idx is None:
            out[h.name] = -1.0
            continue
        if h.kind == "ap":
            s = prec[h.thr_idx]
            s = s[..., h.area_idx, h.max_det_idx] if coco else s[..., h.area_idx]
            if h.cat_idx is not None:
                s = s[:, :, h.cat_idx]
        else:
            s = rec[h.thr_idx]
            s = s[..., h.area_idx, h.max_det_idx] if coco else s[..., h.area_idx]
        v = s[s > -1]
        out[h.name] = float(np.mean(v)) if v.size else -1.0
    return out


class _Streams:
    """The per-image evaluation of one evaluator, laid out for the kernel:
    for every (area, maxDets) a headline reads, every IoU threshold and
    category, the detections that are not ignored in ``accumulate()``'s order."""

    def __init__(self, ev):
        state = _state(ev)
        self.heads, thrs, _ = _headlines(ev)
        coco = _style(ev) == "coco"
        p = ev.params
        rec_thrs = np.ascontiguousarray(np.asarray(p.recThrs if coco else p.rec_thrs, np.float64))
        if np.any(np.diff(rec_thrs) < 0) or np.isnan(rec_thrs).any():
            raise ValueError("the bootstrap needs ascending recall thresholds")
        self.rec_thrs = rec_thrs
        T, K = state.dt_flags.shape[1], len(state.cat_ids)
        if T != len(thrs) or state.dt_flags.shape[0] != len(p.areaRng if coco else p.area_rng):
            raise ValueError("the parameters changed since evaluate(): evaluate again")
        self.img_ids = list(state.img_ids)
        self.T, self.K = T, K
        combos = sorted({(h.area_idx, h.max_det_idx) for h in self.heads if h.area_idx is not None})
        max_dets = list(p.maxDets) if coco else [None]
        D = len(state.dt_score)
        nd = np.diff(state.pair_d)
        det_pair = np.repeat(np.arange(state.num_pairs), nd)
        det_cat = state.pair_cat[det_pair]
        det_img = state.pair_img[det_pair]
        det_rank = np.arange(D) - state.pair_d[det_pair]
        score = state.dt_score
        # accumulate()'s order: category, decreasing score, then image order and rank (stable)
        order = np.lexsort((np.arange(D), -score, det_cat))
        areas = sorted({a for a, _ in combos})
        # ground truths that count, per (area, category): CSR over images
        g_start, g_img, g_n = [0], [], []
        group_of = {}
        for a in areas:
            counted = (state.gt_ig[a] == 0).astype(np.int64)
            cs = np.concatenate(([0], np.cumsum(counted)))
            per_pair = cs[state.pair_g[1:]] - cs[state.pair_g[:-1]]
            for k in range(K):
                lo, hi = state.cat_pair_start[k], state.cat_pair_start[k + 1]
                sel = np.flatnonzero(per_pair[lo:hi] > 0) + lo
                group_of[a, k] = len(g_start) - 1
                g_img.extend(state.pair_img[sel].tolist())
                g_n.extend(per_pair[sel].tolist())
                g_start.append(len(g_img))
        self.group_start = np.asarray(g_start, np.int64)
        self.group_img = np.asarray(g_img, np.int64)
        self.group_ngt = np.asarray(g_n, np.int64)
        if T > 16:
            raise ValueError(f"the bootstrap handles at most 16 IoU thresholds, the evaluation has {T}")
        starts, groups, ents, bits_list = [0], [], [], []
        self.stream_of = {}
        sorted_cat = det_cat[order]
        weights_t = (np.uint32(1) << np.arange(T, dtype=np.uint32))[:, None]
        for a, m in combos:
            md = max_dets[m]
            keep_m = np.ones(D, bool) if md is None else (det_rank < md if md >= 0 else
                                                         det_rank < (nd[det_pair] + md))
            ignored = (state.dt_flags[a] & 2) != 0          # T x D
            matched = ((state.dt_flags[a] & 1) != 0) & ~ignored
            bits = ((matched * weights_t).sum(axis=0) | ((ignored * weights_t).sum(axis=0) << 16)).astype(np.uint32)
            keep = keep_m & ~ignored.all(axis=0)
            sel = order[keep[order]]
            bounds = np.searchsorted(sorted_cat[keep[order]], np.arange(K + 1))
            for k in range(K):
                cell = len(groups)
                for t in range(T):
                    self.stream_of[a, m, t, k] = cell * T + t
                groups.append(group_of[a, k])
                ents.append(sel[bounds[k]:bounds[k + 1]])
                bits_list.append(bits[ents[-1]])
                starts.append(starts[-1] + bounds[k + 1] - bounds[k])
        ent = np.concatenate(ents) if ents else np.zeros(0, np.int64)
        ent_bits = np.concatenate(bits_list) if bits_list else np.zeros(0, np.uint32)
        self.cell_start = np.asarray(starts, np.int64)
        self.cell_group = np.asarray(groups, np.int64)
        self.ent_img = np.ascontiguousarray(det_img[ent], np.int32)
        # blocks: entries of one cell, image and score in a row
        cid = np.repeat(np.arange(len(groups)), np.diff(self.cell_start))
        ent_score = score[ent]
        cont = np.zeros(len(ent), bool)  # the block goes on with the next entry
        if len(ent) > 1:
            cont[:-1] = ((self.ent_img[1:] == self.ent_img[:-1]) & (ent_score[1:] == ent_score[:-1])
                         & (cid[1:] == cid[:-1]))
        multi = cont.copy()
        multi[1:] |= cont[:-1]
        ent_bits = ent_bits | (multi.astype(np.uint32) << np.uint32(30)) | (cont.astype(np.uint32) << np.uint32(31))
        self.ent_bits = np.ascontiguousarray(ent_bits, np.uint32)
        self.cell_multi = np.zeros(len(groups), np.uint8)
        if multi.any():
            self.cell_multi[np.unique(cid[multi])] = 1

    def run(self, counts: np.ndarray, num_threads: Optional[int] = None) -> np.ndarray:
        """The headline numbers for each row of ``counts`` (resamples x images):
        an array (resamples x headlines), NaN where ``summarize`` would give -1."""
        counts = np.ascontiguousarray(counts, np.int32)
        B, S = counts.shape[0], len(self.cell_group) * self.T
        psum = np.empty((B, S), np.float64)
        recall = np.empty((B, S), np.float64)
        threads = resolve_threads(num_threads)
        step = max(1, -(-B // (threads * 4)))
        ranges = [(lo, min(B, lo + step)) for lo in range(0, B, step)]
        run_ranges(lambda lo, hi: _eval.bootstrap_cells(
            self.cell_start, self.cell_group, self.T, self.ent_img, self.ent_bits, self.cell_multi,
            self.group_start, self.group_img, self.group_ngt, counts, self.rec_thrs, psum, recall, lo, hi),
            ranges, threads)
        R = len(self.rec_thrs)
        out = np.full((B, len(self.heads)), np.nan)
        for j, h in enumerate(self.heads):
            if h.area_idx is None:
                continue
            cats = range(self.K) if h.cat_idx is None else h.cat_idx
            idx = [self.stream_of[h.area_idx, h.max_det_idx, t, k] for t in h.thr_idx for k in cats]
            if not idx:
                continue
            vals = (psum if h.kind == "ap" else recall)[:, idx]
            valid = vals > -1
            n = valid.sum(axis=1)
            total = np.where(valid, vals, 0.0).sum(axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[:, j] = np.where(n > 0, total / (n * (R if h.kind == "ap" else 1)), np.nan)
        return out


def draw_counts(num_images: int, resamples: int, seed: Optional[int]) -> np.ndarray:
    """``resamples`` multisets of ``num_images`` images drawn with replacement:
    how often each image is drawn (resamples x images, int32)."""
    rng = np.random.default_rng(seed)
    if num_images == 0:
        return np.zeros((resamples, 0), np.int32)
    out = np.empty((resamples, num_images), np.int32)
    for b in range(resamples):
        out[b] = np.bincount(rng.integers(0, num_images, num_images), minlength=num_images)
    return out


def _check(resamples, confidence):
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    if not (isinstance(confidence, (int, float)) and 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def _interval(samples: np.ndarray, confidence: float) -> List[Optional[float]]:
    s = samples[~np.isnan(samples)]
    if not s.size:
        return [None, None]
    lo, hi = np.quantile(s, [(1 - confidence) / 2, (1 + confidence) / 2])
    return [float(lo), float(hi)]


class BootstrapResult(dict):
    """``{metric: {"value", "ci", "std"}}`` (or, from :func:`compare`,
    ``{metric: {"a", "b", "difference", "ci", "p_value", "within_noise"}}``);
    ``samples`` holds the resampled numbers (resamples x metrics, NaN where
    a resample has nothing to average) and ``names`` the metric order."""

    samples: np.ndarray
    names: List[str]
    seconds: float


def _prepare(ev):
    _style(ev)
    if not getattr(ev, "eval", None):
        ev.accumulate()
    return _Streams(ev)


def bootstrap(ev, resamples: int = 1000, seed: Optional[int] = 0, confidence: float = 0.95,
              num_threads: Optional[int] = None) -> BootstrapResult:
    """Bootstrap confidence intervals of every headline number.

    Parameters
    ----------
    ev : boundary_api.COCOeval or boundary_api.LVISEval
        Evaluated (``evaluate()``; ``accumulate()`` is run if it was not),
        natively (the default ``use_fast_impl=True``).  Any ``iouType``
        but keypoints.
    resamples : int
        Number of image multisets drawn.
    seed : int or None
        Seed of NumPy's ``default_rng``; the same seed draws the same multisets.
    confidence : float
        Coverage of the percentile interval.
    num_threads : int, optional
        Threads for the kernel (results do not depend on it).

    Returns
    -------
    BootstrapResult
        Per headline name (``stats`` order for COCO, ``results`` order for
        LVIS): ``value`` (the plain evaluation's number, None for -1),
        ``ci`` ``[low, high]`` and ``std`` (standard deviation of the resampled
        numbers).

    Raises
    ------
    ValueError
        Without a native evaluation, with NaN scores, bad ``resamples`` or
        ``confidence``.
    """
    _check(resamples, confidence)
    tic = time.perf_counter()
    streams = _prepare(ev)
    plain = headline_values(ev)
    samples = streams.run(draw_counts(len(streams.img_ids), resamples, seed), num_threads)
    out = BootstrapResult()
    for j, h in enumerate(streams.heads):
        s = samples[:, j]
        ok = s[~np.isnan(s)]
        out[h.name] = {"value": None if plain[h.name] == -1 else plain[h.name],
                       "ci": _interval(s, confidence),
                       "std": float(np.std(ok, ddof=1)) if ok.size > 1 else None}
    out.samples, out.names = samples, [h.name for h in streams.heads]
    out.seconds = time.perf_counter() - tic
    log.info("bootstrap: %d resamples of %d images in %.2fs", resamples, len(streams.img_ids), out.seconds)
    return out


def compare(ev_a, ev_b, resamples: int = 1000, seed: Optional[int] = 0, confidence: float = 0.95,
            num_threads: Optional[int] = None) -> BootstrapResult:
    """Paired bootstrap comparison of two evaluations of the same images.

    Parameters
    ----------
    ev_a, ev_b : boundary_api.COCOeval or boundary_api.LVISEval
        Two evaluations (same kind, ground truth images and parameters) of
        two result sets, evaluated as for :func:`bootstrap`.
    resamples, seed, confidence, num_threads
        As for :func:`bootstrap`; both are scored on the same multisets.

    Returns
    -------
    BootstrapResult
        Per headline name: ``a``, ``b`` (the plain numbers), ``difference``
        (``a - b``, exactly), ``ci`` (interval of the difference), ``p_value``
        (two-sided, paired) and ``within_noise`` (the interval contains 0);
        None where either side has nothing to average.

    Raises
    ------
    ValueError
        When the two evaluations are of different images, kinds or parameters.
    """
    _check(resamples, confidence)
    if _style(ev_a) != _style(ev_b):
        raise ValueError("cannot compare a COCO evaluation with an LVIS one")
    tic = time.perf_counter()
    sa, sb = _prepare(ev_a), _prepare(ev_b)
    if sa.img_ids != sb.img_ids:
        raise ValueError(f"the two evaluations are of different images ({len(sa.img_ids)} and "
                         f"{len(sb.img_ids)}): compare results on the same ground truth")
    if [h.name for h in sa.heads] != [h.name for h in sb.heads] or sa.T != sb.T or sa.K != sb.K:
        raise ValueError("the two evaluations have different parameters")
    va, vb = headline_values(ev_a), headline_values(ev_b)
    counts = draw_counts(len(sa.img_ids), resamples, seed)
    xa, xb = sa.run(counts, num_threads), sb.run(counts, num_threads)
    diff = xa - xb
    out = BootstrapResult()
    for j, h in enumerate(sa.heads):
        a, b = va[h.name], vb[h.name]
        if a == -1 or b == -1:
            out[h.name] = {"a": None if a == -1 else a, "b": None if b == -1 else b, "difference": None,
                           "ci": [None, None], "p_value": None, "within_noise": None}
            continue
        d = a - b
        s = diff[:, j]
        s = s[~np.isnan(s)]
        ci = _interval(s, confidence)
        p = float((1 + np.count_nonzero(np.abs(s - d) >= abs(d))) / (s.size + 1)) if s.size else None
        out[h.name] = {"a": a, "b": b, "difference": d, "ci": ci, "p_value": p,
                       "within_noise": None if ci[0] is None else bool(ci[0] <= 0.0 <= ci[1])}
    out.samples, out.names = diff, [h.name for h in sa.heads]
    out.seconds = time.perf_counter() - tic
    log.info("compare: %d paired resamples of %d images in %.2fs", resamples, len(sa.img_ids), out.seconds)
    return out


def describe(result: BootstrapResult, confidence: float = 0.95) -> List[str]:
    """Lines of text for a :func:`compare` result: per metric the difference
    x100, its interval, the p-value, and whether it is within noise."""
    return describe_rows(result, result.names, confidence)


def describe_rows(metrics: Dict[str, dict], names: Sequence[str], confidence: float = 0.95) -> List[str]:
    """:func:`describe` for ``{name: {"a", "b", "difference", "ci", "p_value",
    "within_noise"}}`` in the order of ``names``."""
    pct = f"{100 * confidence:g}%"
    lines = [f"{'metric':<10}{'A':>8}{'B':>8}{'A-B':>8}   {pct + ' CI of A-B':<20}{'p':>7}  verdict"]
    for name in names:
        r = metrics[name]
        if r["difference"] is None:
            lines.append(f"{name:<10}{'n/a':>8}")
            continue
        lo, hi = r["ci"]
        ci = "n/a" if lo is None else f"[{100 * lo:+.2f}, {100 * hi:+.2f}]"
        verdict = ("within noise (the interval contains 0)" if r["within_noise"]
                   else ("A better" if r["difference"] > 0 else "B better") + " beyond noise")
        p = "n/a" if r["p_value"] is None else f"{r['p_value']:.3f}"
        lines.append(f"{name:<10}{100 * r['a']:8.2f}{100 * r['b']:8.2f}{100 * r['difference']:+8.2f}   "
                     f"{ci:<20}{p:>7}  {verdict}")
    return lines
