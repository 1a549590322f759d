"""Partial evaluations of image subsets, merged into the numbers of one evaluation.

COCO and LVIS evaluation is a map over images (IoUs and greedy matching per
image and category) followed by a reduce over every image (``accumulate``).
:func:`evaluate_partial` runs the map on a subset of the images and keeps only
what ``accumulate`` reads, in a compact, picklable :class:`Partial`:

* per (image, category) *pair*: the image id, the category index, the number
  of kept detections and, per area range, the number of non-ignored ground
  truths;
* per detection, in the pair's order (highest score first, stable, already
  cut to the largest ``maxDets``): its score and, per area range and IoU
  threshold, two flags (matched; ignored).

:func:`merge_partials` concatenates partials of disjoint image sets in the
*global* order (category, then image id: the order in which pycocotools and
lvis concatenate detections before their stable sort on score, which decides
ties), and :func:`accumulate_partial` runs the package's accumulation kernel on
the merged arrays.  The resulting ``eval`` arrays and ``stats`` / ``results``
are bit-for-bit those of one ``COCOeval`` / ``LVISEval`` over all the images,
whatever the sharding and the order of the shards.

The per-image rules stay per image: pycocotools' crowd rule, LVIS' federated
rules (negative / not-exhaustive categories, read from each image record) and
LVIS' per-image detection cap (applied when the results are loaded, so every
image's detections must be in the same partial, which image sharding ensures).
"""
from __future__ import annotations

import contextlib
import copy
import datetime
import io
import logging
from dataclasses import dataclass, field
from typing import Iterable, Optional, Sequence

import numpy as np

from ..instance import _eval
from ..instance._checks import no_empty_warning
from ..instance._lazy import instance_dict
from .._parallel import resolve_threads, run_ranges, split_by_cost

__all__ = ["Partial", "evaluate_partial", "partial_from_evaluator", "merge_partials",
           "accumulate_partial"]

log = logging.getLogger(__name__)

F_MATCHED = 1   # flag bits, as in the kernels
F_IGNORE = 2

# parameters that must agree for partials to be merged (COCO / LVIS names)
_COCO_KEYS = ("iouType", "iouThrs", "recThrs", "maxDets", "areaRng", "areaRngLbl", "useCats", "catIds")
_LVIS_KEYS = ("iou_type", "iou_thrs", "rec_thrs", "max_dets", "area_rng", "area_rng_lbl", "use_cats",
              "cat_ids", "img_count_lbl")


@dataclass
class Partial:
    """What ``accumulate`` needs from the evaluation of a set of images.

    Attributes
    ----------
    kind : {'coco', 'lvis'}
    params : object
        The evaluator's parameters (pycocotools' or lvis' ``Params``) with
        the image list emptied; ``iouType`` / ``iou_type`` may be 'boundary'.
    dilation_ratio : float
    freq_groups : list or None
        LVIS frequency groups (category indices per 'r', 'c', 'f').
    img_ids : ndarray of int64
        The evaluated images, sorted.
    pair_img : ndarray of int64, shape (P,)
        Image id of each (image, category) pair with a ground truth or a detection.
    pair_cat : ndarray of int32, shape (P,)
        Category index of each pair (0 when categories are not used).
    pair_nd : ndarray of int32, shape (P,)
        Detections kept in each pair.
    npig : ndarray of int32, shape (P, A)
        Non-ignored ground truths of each pair per area range.
    dt_score : ndarray of float64, shape (D,)
        Scores, pair by pair, highest first within a pair (stable).  With
        the packed flags, a detection takes 8 + ceil(2AT/8) bytes (18 for
        COCO's 4 areas x 10 thresholds).
    dt_flags : ndarray of uint8, shape (D, ceil(2 * A * T / 8))
        Per detection, bit-packed (``np.packbits``) ``(2, A, T)`` planes:
        matched at threshold ``t`` for area ``a``, then ignored;
        :meth:`flags` unpacks them.
    """

    kind: str
    params: object
    dilation_ratio: float
    freq_groups: Optional[list]
    img_ids: np.ndarray
    pair_img: np.ndarray
    pair_cat: np.ndarray
    pair_nd: np.ndarray
    npig: np.ndarray
    dt_score: np.ndarray
    dt_flags: np.ndarray
    _checked: bool = field(default=False, repr=False, compare=False)

    def flags(self) -> np.ndarray:
        """The flags as the kernels read them: ``(A, T, D)`` uint8, bit 1 matched, bit 2 ignored."""
        return _unpack_flags(self.dt_flags, self.npig.shape[1], self.num_thresholds)

    @property
    def num_thresholds(self) -> int:
        return len(self.params.iouThrs if self.kind == "coco" else self.params.iou_thrs)

    @property
    def num_images(self) -> int:
        return len(self.img_ids)

    @property
    def num_detections(self) -> int:
        return len(self.dt_score)

    @property
    def nbytes(self) -> int:
        """Size of the arrays (what travels between processes, roughly)."""
        return sum(a.nbytes for a in (self.img_ids, self.pair_img, self.pair_cat, self.pair_nd,
                                      self.npig, self.dt_score, self.dt_flags))

    @property
    def iou_type(self) -> str:
        return self.params.iouType if self.kind == "coco" else self.params.iou_type

    @property
    def cat_ids(self) -> list:
        return list(self.params.catIds if self.kind == "coco" else self.params.cat_ids)

    @property
    def use_cats(self) -> bool:
        return bool(self.params.useCats if self.kind == "coco" else self.params.use_cats)


# ----------------------------------------------------------------------------- map
def evaluate_partial(gt, dt, iou_type: str = "segm", img_ids: Optional[Iterable[int]] = None, *,
                     dilation_ratio: float = 0.02, max_dets: int = 300, params: Optional[dict] = None,
                     num_threads: Optional[int] = None) -> Partial:
    """Evaluate the images ``img_ids`` and return their :class:`Partial`.

    Parameters
    ----------
    gt : boundary_api.COCO or boundary_api.LVIS (or pycocotools / lvis objects)
        Ground truth; LVIS ground truth selects LVIS' rules.  It may hold
        only a shard of the images, but must hold every category.
    dt : loaded results or list of dict
        COCO: ``gt.loadRes(...)`` or a list; LVIS: ``LVISResults`` or a list
        (capped at ``max_dets`` per image when loaded here).  Every
        detection of an evaluated image must be there.
    iou_type : {'segm', 'bbox', 'boundary'}
    img_ids : iterable of int, optional
        Images to evaluate (default: every image of ``gt``).
    dilation_ratio : float, optional
        Boundary width for 'boundary' (default 0.02).
    max_dets : int, optional
        LVIS only: detections kept per image (default 300).
    params : dict, optional
        Evaluator parameters to set before evaluating, by their library
        names (e.g. ``{"iouThrs": ..., "areaRng": ..., "maxDets": ...}`` for
        COCO, ``{"area_rng": ...}`` for LVIS).  Every partial to be merged
        must use the same.
    num_threads : int, optional
        Threads for the kernels (default: all cores).

    Returns
    -------
    Partial
    """
    # the original lvis package, also while boundary_api.init_as_lvis() stands in for it
    from ..lvis._original import _lvis

    if iou_type not in ("segm", "bbox", "boundary"):
        raise ValueError(f"iou_type must be one of segm, bbox, boundary; got {iou_type!r}")
    if isinstance(gt, _lvis.LVIS):
        from ..lvis import LVISEval, LVISResults

        if isinstance(dt, list) and not dt:
            dt = _empty_lvis_results(gt)
        if isinstance(dt, list):
            # lvis warns on every list it is given ("Assuming user provided ..."): once is enough
            with _quiet_logger("lvis.results"):
                dt = LVISResults(gt, dt, max_dets=max_dets)
        ev = LVISEval(gt, dt, iou_type=iou_type, max_dets=max_dets, dilation_ratio=dilation_ratio,
                      num_threads=num_threads)
        id_key = "img_ids"
    else:
        from ..coco.cocoeval import COCOeval

        if isinstance(dt, list):
            with contextlib.redirect_stdout(io.StringIO()):
                dt = gt.loadRes(dt) if dt else _empty_results(gt)
        ev = COCOeval(gt, dt, iouType=iou_type, dilation_ratio=dilation_ratio, num_threads=num_threads)
        id_key = "imgIds"
    for key, value in (params or {}).items():
        if key in ("imgIds", "img_ids") or not hasattr(ev.params, key):
            raise ValueError(f"params: {key!r} is not a parameter that can be set here")
        setattr(ev.params, key, copy.deepcopy(value))
    if img_ids is not None:
        ids = _int_ids(img_ids, "img_ids")
        known = set(getattr(ev.params, id_key))
        missing = [i for i in ids.tolist() if i not in known]
        if missing:
            raise ValueError(f"img_ids: images not in the ground truth: {missing[:10]}")
        setattr(ev.params, id_key, ids.tolist())
    with contextlib.redirect_stdout(io.StringIO()):
        ev.evaluate()
    return partial_from_evaluator(ev)


@contextlib.contextmanager
def _quiet_logger(name: str):
    logger = logging.getLogger(name)
    saved = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(saved)


def _empty_lvis_results(gt):
    """LVIS results without detections (lvis itself cannot load an empty list)."""
    from ..lvis import LVISResults

    res = LVISResults.__new__(LVISResults)
    res.dataset = {k: v for k, v in gt.dataset.items() if k != "annotations"}
    res.dataset["annotations"] = []
    res.logger = logging.getLogger("lvis.results")
    res._create_index()
    return res


def _empty_results(gt):
    from ..coco.dataset import COCO

    res = COCO()
    res.dataset["images"] = list(gt.dataset["images"])
    res.dataset["categories"] = copy.deepcopy(gt.dataset.get("categories", []))
    res.dataset["annotations"] = []
    with no_empty_warning():  # (results of images without detections: nothing to warn about)
        res.createIndex()
    return res


def partial_from_evaluator(ev) -> Partial:
    """The :class:`Partial` of an evaluator after ``evaluate()``.

    ``ev`` is a ``boundary_api`` ``COCOeval`` or ``LVISEval`` (or
    pycocotools' / lvis' own, read through their public ``evalImgs`` /
    ``eval_imgs``) that has run ``evaluate()``.
    """
    # (asked of the class and the instance dict: reading the attribute would
    # build it after a native evaluation)
    own = instance_dict(ev)
    lvis = hasattr(type(ev), "eval_imgs") or ("eval_imgs" in own and "evalImgs" not in own)
    p = ev.params
    if lvis:
        img_ids = list(p.img_ids)
        cat_ids = list(p.cat_ids) if p.use_cats else [-1]
        A, T = len(p.area_rng), len(p.iou_thrs)
        freq_groups = copy.deepcopy(getattr(ev, "freq_groups", None))
        if freq_groups is None:
            freq_groups = ev._prepare_freq_group()
    else:
        img_ids = list(p.imgIds)
        cat_ids = list(p.catIds) if p.useCats else [-1]
        A, T = len(p.areaRng), len(p.iouThrs)
        freq_groups = None
    params = copy.copy(p)
    if lvis:
        params.img_ids = []
    else:
        params.imgIds = []
    params = copy.deepcopy(params)
    ids = _int_ids(img_ids, "image ids")
    matched_state = getattr(ev, "_matched_state", None)
    state = matched_state() if matched_state is not None else None
    if state is not None:
        arrays = _from_state(state, ids, A)
    else:
        entries = ev.eval_imgs if lvis else ev.evalImgs
        if entries is None or len(entries) != len(cat_ids) * A * len(img_ids):
            raise ValueError("the evaluator has not run evaluate() on these parameters")
        arrays = _from_eval_imgs(entries, ids, len(cat_ids), A, T, lvis)
    return Partial("lvis" if lvis else "coco", params, float(getattr(ev, "dilation_ratio", 0.02)),
                   freq_groups, np.unique(ids), *arrays)


def _int_ids(ids, what: str) -> np.ndarray:
    ids = list(ids)
    try:
        out = np.array(ids, dtype=np.int64).reshape(-1)
    except (TypeError, ValueError, OverflowError):
        raise TypeError(f"{what} must be integers") from None
    if len(ids) and not all(int(a) == a for a in ids):
        raise TypeError(f"{what} must be integers")
    return out


def _from_state(state, ids: np.ndarray, A: int):
    """Arrays of a partial from the engine's matched state (no copies of dicts)."""
    P = state.num_pairs
    pair_g, pair_d = state.pair_g, state.pair_d
    pair_img = ids[state.pair_img] if P else np.zeros(0, np.int64)
    pair_cat = state.pair_cat.astype(np.int32)
    pair_nd = np.diff(pair_d).astype(np.int32)
    kept = (state.gt_ig == 0)
    csum = np.zeros((A, kept.shape[1] + 1), np.int64)
    np.cumsum(kept, axis=1, out=csum[:, 1:])
    npig = (csum[:, pair_g[1:]] - csum[:, pair_g[:-1]]).T.astype(np.int32)
    return (pair_img, pair_cat, pair_nd, np.ascontiguousarray(npig.reshape(P, A)),
            np.array(state.dt_score, np.float64), _pack_flags(state.dt_flags))


def _from_eval_imgs(entries: list, ids: np.ndarray, K: int, A: int, T: int, lvis: bool):
    """Arrays of a partial from pycocotools' ``evalImgs`` / lvis' ``eval_imgs``."""
    I = len(ids)
    sk, mk, ik, gk = (("dt_scores", "dt_matches", "dt_ignore", "gt_ignore") if lvis else
                      ("dtScores", "dtMatches", "dtIgnore", "gtIgnore"))
    pair_img, pair_cat, pair_nd, npig, scores, flags = [], [], [], [], [], []
    for k in range(K):
        for i in range(I):
            first = entries[k * A * I + i]
            if first is None:
                continue
            pair_img.append(ids[i])
            pair_cat.append(k)
            pair_nd.append(len(first[sk]))
            scores.append(np.asarray(first[sk], np.float64).reshape(-1))
            row, fl = [], np.zeros((A, T, len(first[sk])), np.uint8)
            for a in range(A):
                e = entries[k * A * I + a * I + i]
                row.append(int(np.count_nonzero(np.asarray(e[gk]) == 0)))
                m = np.asarray(e[mk]).reshape(T, -1)
                ig = np.asarray(e[ik]).reshape(T, -1)
                fl[a] = (m != 0) * F_MATCHED + (ig != 0) * F_IGNORE
            npig.append(row)
            flags.append(fl)
    P = len(pair_img)
    return (np.array(pair_img, np.int64), np.array(pair_cat, np.int32), np.array(pair_nd, np.int32),
            np.array(npig, np.int32).reshape(P, A),
            np.concatenate(scores) if scores else np.zeros(0, np.float64),
            _pack_flags(np.concatenate(flags, axis=2) if flags else np.zeros((A, T, 0), np.uint8)))


def _pack_flags(flags: np.ndarray) -> np.ndarray:
    """``(A, T, D)`` flag bytes -> ``(D, ceil(2AT/8))`` packed bits (a quarter of the size)."""
    A, T, D = flags.shape
    planes = np.empty((D, 2, A, T), np.uint8)
    per_det = np.moveaxis(flags, 2, 0)
    np.bitwise_and(per_det, F_MATCHED, out=planes[:, 0])
    np.right_shift(per_det & F_IGNORE, 1, out=planes[:, 1])
    return np.packbits(planes.reshape(D, 2 * A * T), axis=1)


def _unpack_flags(packed: np.ndarray, A: int, T: int, block: int = 1 << 18) -> np.ndarray:
    """Inverse of :func:`_pack_flags`, a block of detections at a time (bounded scratch memory)."""
    D = packed.shape[0]
    out = np.empty((A, T, D), np.uint8)
    for lo in range(0, D, block):
        hi = min(lo + block, D)
        bits = np.unpackbits(packed[lo:hi], axis=1, count=2 * A * T).reshape(hi - lo, 2, A, T)
        bits[:, 1] <<= 1
        bits[:, 0] |= bits[:, 1]
        out[:, :, lo:hi] = np.moveaxis(bits[:, 0], 0, 2)
    return out


# --------------------------------------------------------------------------- merge
def _signature(part: Partial):
    keys = _LVIS_KEYS if part.kind == "lvis" else _COCO_KEYS
    out = [part.kind, part.dilation_ratio if part.iou_type == "boundary" else None]
    for key in keys:
        v = getattr(part.params, key, None)
        out.append(repr(np.asarray(v).tolist()) if isinstance(v, (list, tuple, np.ndarray)) else repr(v))
    return tuple(out)


def _check(part) -> Partial:
    if not isinstance(part, Partial):
        raise TypeError(f"expected a Partial, got {type(part).__name__}")
    if part._checked:
        return part
    P = len(part.pair_img)
    A = part.npig.shape[1] if part.npig.ndim == 2 else -1
    D = len(part.dt_score)
    if (part.pair_cat.shape != (P,) or part.pair_nd.shape != (P,) or part.npig.shape[0] != P
            or part.dt_flags.ndim != 2 or part.dt_flags.shape != (D, (2 * A * part.num_thresholds + 7) // 8)
            or int(part.pair_nd.sum()) != D):
        raise ValueError("inconsistent Partial: array shapes do not agree")
    part._checked = True
    return part


def merge_partials(partials: Sequence[Partial]) -> Partial:
    """Merge partials of disjoint image sets, in any order.

    Parameters
    ----------
    partials : sequence of Partial
        Computed with the same kind, IoU type, dilation ratio and parameters.

    Returns
    -------
    Partial
        Pairs in the global order (category, then image id).

    Raises
    ------
    ValueError
        If there is no partial, the parameters differ, or an image is in
        two partials.
    """
    parts = [_check(p) for p in partials]
    if not parts:
        raise ValueError("merge_partials: no partials to merge")
    sig = _signature(parts[0])
    for n, p in enumerate(parts[1:], 1):
        if _signature(p) != sig:
            raise ValueError(f"merge_partials: partial {n} was computed with other parameters "
                             f"({_signature(p)} != {sig})")
    img_ids = np.concatenate([p.img_ids for p in parts])
    uniq = np.unique(img_ids)
    if len(uniq) != len(img_ids):
        vals, counts = np.unique(img_ids, return_counts=True)
        raise ValueError(f"merge_partials: images evaluated in more than one partial: "
                         f"{vals[counts > 1][:10].tolist()}")
    pair_img = np.concatenate([p.pair_img for p in parts])
    pair_cat = np.concatenate([p.pair_cat for p in parts])
    pair_nd = np.concatenate([p.pair_nd for p in parts])
    npig = np.concatenate([p.npig for p in parts])
    dt_score = np.concatenate([p.dt_score for p in parts])
    dt_flags = np.concatenate([p.dt_flags for p in parts], axis=0)
    order = np.lexsort((pair_img, pair_cat))
    if not np.array_equal(order, np.arange(len(order))):
        starts = np.concatenate(([0], np.cumsum(pair_nd)[:-1])).astype(np.int64)
        nd = pair_nd[order].astype(np.int64)
        # detection indices of the pairs in their new order, each pair's run kept as it was
        run_start = np.repeat(starts[order], nd)
        within = np.arange(int(nd.sum()), dtype=np.int64) - np.repeat(np.cumsum(nd) - nd, nd)
        det = run_start + within
        pair_img, pair_cat, pair_nd, npig = pair_img[order], pair_cat[order], pair_nd[order], npig[order]
        dt_score = dt_score[det]
        dt_flags = dt_flags[det]
    first = parts[0]
    return _check(Partial(first.kind, first.params, first.dilation_ratio, first.freq_groups, uniq,
                          pair_img, pair_cat, pair_nd, npig, dt_score, dt_flags))


# ---------------------------------------------------------------------- accumulate
def accumulate_partial(merged: Partial, params=None, img_ids: Optional[Iterable[int]] = None, *,
                       summarize: bool = True, verbose: bool = False,
                       num_threads: Optional[int] = None):
    """``accumulate()`` (and ``summarize()``) on a merged partial.

    Parameters
    ----------
    merged : Partial
        Usually the output of :func:`merge_partials`.
    params : Params, optional
        COCO only: pycocotools parameters to accumulate with, as
        ``COCOeval.accumulate(p)`` takes them (their ``recThrs``,
        ``maxDets`` among the evaluated ones and ``imgIds`` among the
        evaluated images may differ; the rest must equal the evaluated).
        As in pycocotools, an image subset selects the evaluated images at
        the *positions* of ``p.imgIds`` that were evaluated.
    img_ids : iterable of int, optional
        The images the evaluation must cover, e.g. every image of the
        ground truth: a ValueError is raised if any of them is missing from
        ``merged`` (a lost shard), instead of returning numbers of a part.
    summarize : bool, optional
        Also compute ``stats`` (COCO) / ``results`` (LVIS) (default True).
    verbose : bool, optional
        Print the summary as the libraries do (default False).
    num_threads : int, optional

    Returns
    -------
    COCOeval or LVISEval
        An evaluator (of this package) with ``params``, ``eval`` and
        ``stats`` (COCO) or ``results`` (LVIS) set as after ``accumulate()``
        and ``summarize()`` on one evaluator over every image; it has no
        ground truth, so only ``summarize()`` / ``print_results()`` may be
        called again.
    """
    merged = _check(merged)
    if img_ids is not None:
        want = np.unique(_int_ids(img_ids, "img_ids"))
        missing = np.setdiff1d(want, merged.img_ids)
        if len(missing):
            raise ValueError(f"the partials do not cover {len(missing)} of the {len(want)} images "
                             f"(e.g. {missing[:10].tolist()}): a shard is missing")
    if merged.kind == "lvis":
        if params is not None:
            raise ValueError("params: LVIS accumulates with the evaluated parameters only")
        return _accumulate_lvis(merged, summarize, verbose, num_threads)
    return _accumulate_coco(merged, params, summarize, verbose, num_threads)


#: detections whose flags are unpacked at once during accumulation (whole categories at a time)
ACCUMULATE_BLOCK = 1 << 23


def _gt_ignore_of(npig: np.ndarray):
    """Ground-truth ignore flags as the kernel reads them: per pair, npig zeros then ones."""
    P, A0 = npig.shape
    G_p = npig.max(axis=1).astype(np.int64) if P else np.zeros(0, np.int64)
    pair_g = np.concatenate(([0], np.cumsum(G_p))).astype(np.int64)
    local = np.arange(int(pair_g[-1]), dtype=np.int64) - np.repeat(pair_g[:-1], G_p)
    gt_ig = np.ascontiguousarray((local[None, :] >= np.repeat(npig.T, G_p, axis=1)).astype(np.uint8)
                                 .reshape(A0, -1))
    return pair_g, gt_ig


def _run_kernel(merged: Partial, selected: np.ndarray, k_list, a_list, max_dets, rec_thrs, K, A, M,
                with_scores: bool, num_threads):
    """The accumulation kernel over blocks of whole categories (pairs are sorted by category,
    so a block is a contiguous run of pairs and detections); only a block's flags are
    unpacked at a time.  Output category ``k`` is evaluated category ``k``."""
    threads = resolve_threads(num_threads)
    K0 = len(merged.cat_ids) if merged.use_cats else 1
    if list(k_list) != list(range(K)) or K != K0:
        raise ValueError("accumulation over a subset or reordering of the categories is not supported")
    A0, T = merged.npig.shape[1], merged.num_thresholds
    pair_d = np.concatenate(([0], np.cumsum(merged.pair_nd, dtype=np.int64))).astype(np.int64)
    cat_pair_start = np.searchsorted(merged.pair_cat, np.arange(K0 + 1)).astype(np.int64)
    recs = np.ascontiguousarray(np.asarray(rec_thrs, np.float64).reshape(-1))
    R = len(recs)
    precision = -np.ones((T, R, K, A, M))
    recall = -np.ones((T, K, A, M))
    scores = -np.ones((T, R, K, A, M)) if with_scores else np.empty((0, 0, 0, 0, 0))
    kl = np.arange(K, dtype=np.int64)
    al = np.asarray(a_list, np.int64)
    md = np.asarray(max_dets, np.int64)
    sel_all = np.ascontiguousarray(selected.astype(np.uint8))
    dets_at = pair_d[cat_pair_start]  # first detection of each category
    k0 = 0
    while k0 < K:
        # whole categories up to ACCUMULATE_BLOCK detections (at least one category)
        k1 = int(np.searchsorted(dets_at, dets_at[k0] + ACCUMULATE_BLOCK, side="right")) - 1
        k1 = min(max(k1, k0 + 1), K)
        p0, p1 = int(cat_pair_start[k0]), int(cat_pair_start[k1])
        d0, d1 = int(pair_d[p0]), int(pair_d[p1])
        pair_g, gt_ig = _gt_ignore_of(merged.npig[p0:p1].reshape(-1, A0))
        sub_d = np.ascontiguousarray(pair_d[p0:p1 + 1] - d0)
        cps = np.ascontiguousarray(np.clip(cat_pair_start - p0, 0, p1 - p0))
        sel = sel_all[p0:p1] if p1 > p0 else np.zeros(1, np.uint8)
        pos = np.arange(p1 - p0, dtype=np.int64)
        dt_score = np.ascontiguousarray(merged.dt_score[d0:d1], np.float64)
        dt_flags = _unpack_flags(merged.dt_flags[d0:d1], A0, T)
        cost = np.diff(cat_pair_start)[k0:k1]
        ranges = [(k0 + lo, k0 + hi) for lo, hi in split_by_cost(cost, threads * 4)]
        run_ranges(lambda lo, hi: _eval.accumulate(
            cps, pos, sel, pair_g, sub_d, dt_score, gt_ig, dt_flags, kl, al, md, recs,
            precision, recall, scores, with_scores, lo, hi), ranges, threads)
        del dt_flags, gt_ig
        k0 = k1
    return precision, recall, (scores if with_scores else None)


def _same(a, b) -> bool:
    return np.asarray(a).shape == np.asarray(b).shape and np.array_equal(np.asarray(a), np.asarray(b))


def _accumulate_coco(merged: Partial, p, summarize: bool, verbose: bool, num_threads):
    from ..coco.cocoeval import COCOeval

    pe = copy.deepcopy(merged.params)
    pe.imgIds = merged.img_ids.tolist()
    if p is None:
        p = copy.deepcopy(pe)
    else:
        p = copy.deepcopy(p)
        for key in ("iouThrs", "areaRng", "useCats"):
            if not _same(getattr(p, key), getattr(pe, key)):
                raise ValueError(f"params.{key} differs from the evaluated {key}")
        if p.useCats and not _same(p.catIds, pe.catIds):
            raise ValueError("params.catIds differs from the evaluated catIds")
        extra = [m for m in p.maxDets if m not in set(pe.maxDets)]
        if extra:
            raise ValueError(f"params.maxDets {extra} were not evaluated (evaluated: {pe.maxDets})")
        missing = np.setdiff1d(_int_ids(p.imgIds, "params.imgIds"), merged.img_ids)
        if len(missing):
            raise ValueError(f"params.imgIds: {len(missing)} images were not evaluated "
                             f"(e.g. {missing[:10].tolist()})")
    cats = p.catIds if p.useCats else [-1]
    K, A, M = len(cats), len(p.areaRng), len(p.maxDets)
    T, R = len(p.iouThrs), len(p.recThrs)
    # pycocotools reads the evaluated images at the *positions* of p.imgIds
    # that were evaluated (``i_list``), not those images: kept as it does
    evaluated = merged.img_ids
    known = set(evaluated.tolist())
    positions = [n for n, i in enumerate(p.imgIds) if i in known and n < len(evaluated)]
    selected = np.isin(merged.pair_img, evaluated[np.asarray(positions, np.int64)])
    precision, recall, scores = _run_kernel(merged, selected, range(K), range(A), list(p.maxDets),
                                            p.recThrs, K, A, M, True, num_threads)
    ev = COCOeval(iouType=pe.iouType, dilation_ratio=merged.dilation_ratio, num_threads=num_threads)
    ev.params = p
    ev._paramsEval = pe
    ev.eval = {
        "params": p,
        "counts": [T, R, K, A, M],
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        "precision": precision,
        "recall": recall,
        "scores": scores,
    }
    if summarize:
        if verbose:
            ev.summarize()
        else:
            with contextlib.redirect_stdout(io.StringIO()):
                ev.summarize()
    return ev


def _accumulate_lvis(merged: Partial, summarize: bool, verbose: bool, num_threads):
    from collections import OrderedDict

    from ..lvis import LVISEval

    p = copy.deepcopy(merged.params)
    p.img_ids = merged.img_ids.tolist()
    K = len(p.cat_ids) if p.use_cats else 1
    A, T, R = len(p.area_rng), len(p.iou_thrs), len(p.rec_thrs)
    selected = np.ones(len(merged.pair_img), bool)
    precision, recall, _ = _run_kernel(merged, selected, range(K), range(A), [np.iinfo(np.int64).max],
                                       p.rec_thrs, K, A, 1, False, num_threads)
    ev = LVISEval.__new__(LVISEval)
    ev.logger = logging.getLogger("lvis.eval")
    ev.lvis_gt = ev.lvis_dt = None
    ev.params = p
    ev.dilation_ratio = merged.dilation_ratio
    ev.use_fast_impl = True
    ev.num_threads = resolve_threads(num_threads)
    ev.freq_groups = copy.deepcopy(merged.freq_groups)
    ev.results = OrderedDict()
    ev.ious = {}
    ev.eval = {
        "params": p,
        "counts": [T, R, K, A],
        "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
        "precision": precision[..., 0],
        "recall": recall[..., 0],
    }
    if summarize:
        ev.summarize()
        if verbose:
            ev.print_results()
    return ev


def evaluate_sharded(gt, dt, iou_type: str, shards: Sequence[Sequence[int]], **kwargs):
    """Evaluate ``shards`` (lists of image ids) one by one, merge and accumulate.

    A convenience for one process (and for tests): the result equals one
    evaluation over the union of the shards.  ``kwargs`` go to
    :func:`evaluate_partial`.
    """
    parts = [evaluate_partial(gt, dt, iou_type, s, **kwargs) for s in shards]
    return accumulate_partial(merge_partials(parts))


__all__.append("evaluate_sharded")
