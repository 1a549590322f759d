"""The evaluation engine behind ``COCOeval`` and ``LVISEval``.

Both evaluators let their own library select annotations (``_prepare``), then
hand the per (image, category) lists to :class:`Evaluation`, which

1. flattens them into *pairs* in the order the library would visit them,
2. runs the IoU step (:func:`boundary_api.masks._mask.iou_pairs`) over all pairs,
3. either matches and accumulates in Cython (:mod:`boundary_api.instance._eval`), or
   exposes the IoU matrices for the library's own Python loops.

The same object later rebuilds the library's ``evalImgs`` / ``eval_imgs``
entries on demand, so nothing is materialized that nobody reads.
"""
from __future__ import annotations

import logging
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from . import _eval
from ..masks import _mask
from .._parallel import resolve_threads, run_ranges, split_by_cost
from .cache import cache_for

log = logging.getLogger(__name__)

#: IoU step modes of ``_mask.iou_pairs``
IOU_MODES = {"segm": 0, "boundary": 1, "bbox": 2}
#: detections from which the IoU step shows a progress bar (on a terminal)
LARGE = 100_000


class IouDict(dict):
    """``ious`` as the libraries keep them: ``(image_id, category_id) ->
    (D, G) array``, and ``[]`` for a pair without detections or ground truth."""

    def __missing__(self, key):
        return []


class FromState:
    """Attribute that can be assigned as usual, or, while unset (None), is
    built from the evaluator's ``_state`` (an :class:`Evaluation`) when read.

    ``build(state)`` returns the value or None when the state cannot give it.
    """

    def __init__(self, build: Callable):
        self.build = build

    def __set_name__(self, owner, name):
        self.slot = f"_{name}_value"

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        value = obj.__dict__.get(self.slot)
        if value is None:
            state = obj.__dict__.get("_state")
            if state is not None:
                value = self.build(state)
                obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj, value):
        obj.__dict__[self.slot] = value


class Evaluation:
    """Flattened pairs, the IoU step, and the Cython matching of one evaluation.

    Parameters
    ----------
    gts, dts : dict
        ``(image_id, category_id) -> list of annotation dicts``, as the
        library's ``_prepare`` leaves them in ``_gts`` / ``_dts``.
    img_ids, cat_ids : sequence
        The evaluated image and category axes (``cat_ids == [-1]`` when
        categories are not used).
    use_cats : bool
    gather : callable, optional
        ``gather(image_id) -> (gts, dts)`` for ``use_cats`` false: the
        library's own way of pooling an image's categories.
    max_det : int or None
        Detections kept per pair (highest scores first); ``None`` keeps all.
    crowd_key : str or None
        Ground-truth field that marks crowds (``'iscrowd'``), or None.
    dt_extra_ignore : callable, optional
        ``f(dt) -> bool``: unmatched detections for which it is true are
        ignored (lvis' not-exhaustively-annotated categories).
    """

    def __init__(self, gts: dict, dts: dict, img_ids: Sequence, cat_ids: Sequence, use_cats: bool,
                 gather: Optional[Callable] = None, max_det: Optional[int] = None,
                 crowd_key: Optional[str] = "iscrowd",
                 dt_extra_ignore: Optional[Callable] = None):
        self.img_ids = list(img_ids)
        self.cat_ids = list(cat_ids)
        self.max_det = max_det
        img_pos = {img: i for i, img in reversed(list(enumerate(self.img_ids)))}
        entries: List[Tuple[int, int, list, list]] = []
        if use_cats:
            cat_pos = {c: k for k, c in reversed(list(enumerate(self.cat_ids)))}
            keys = {k for k, v in gts.items() if v}
            keys.update(k for k, v in dts.items() if v)
            for key in keys:
                i = img_pos.get(key[0])
                k = cat_pos.get(key[1])
                if i is not None and k is not None:
                    entries.append((k, i, gts.get(key) or [], dts.get(key) or []))
        else:
            for i, img in enumerate(self.img_ids):
                g, d = gather(img)
                if g or d:
                    entries.append((0, i, g, d))
        entries.sort(key=lambda e: (e[0], e[1]))

        gt_anns: list = []
        dt_anns: list = []
        n = len(entries)
        self.pair_cat = np.empty(n, np.int64)
        self.pair_img = np.empty(n, np.int64)
        ng = np.empty(n, np.int64)
        nd = np.empty(n, np.int64)
        for p, (k, i, g, d) in enumerate(entries):
            self.pair_cat[p] = k
            self.pair_img[p] = i
            if len(d) > 1:
                # stable, highest score first: np.argsort(-score, kind='mergesort')
                d = sorted(d, key=_neg_score)
            if max_det is not None:
                d = d[:max_det]
            gt_anns.extend(g)
            dt_anns.extend(d)
            ng[p] = len(g)
            nd[p] = len(d)
        self.pair_g = np.concatenate(([0], np.cumsum(ng))).astype(np.int64)
        self.pair_d = np.concatenate(([0], np.cumsum(nd))).astype(np.int64)
        self.pair_o = np.concatenate(([0], np.cumsum(ng * nd))).astype(np.int64)
        self.gt_anns = gt_anns
        self.dt_anns = dt_anns
        # first pair of each category (pairs are sorted by category, then image)
        self.cat_pair_start = np.searchsorted(self.pair_cat, np.arange(len(self.cat_ids) + 1)).astype(np.int64)

        self.gt_id = _int_field(gt_anns, "id")
        self.dt_id = _int_field(dt_anns, "id")
        self.gt_area = np.array([a["area"] for a in gt_anns], np.float64)
        self.dt_area = np.array([a["area"] for a in dt_anns], np.float64)
        self.dt_score = np.array([a["score"] for a in dt_anns], np.float64)
        self.gt_ignore = np.array([bool(a.get("ignore", 0)) for a in gt_anns], np.uint8)
        if crowd_key is None:
            self.gt_crowd = np.zeros(len(gt_anns), np.uint8)
        else:
            self.gt_crowd = np.array([bool(a[crowd_key]) for a in gt_anns], np.uint8)
        if dt_extra_ignore is None:
            self.dt_extra_ignore = np.zeros(len(dt_anns), np.uint8)
        else:
            self.dt_extra_ignore = np.array([bool(dt_extra_ignore(a)) for a in dt_anns], np.uint8)
        self.ious: Optional[np.ndarray] = None
        self.matched = False

    @property
    def num_pairs(self) -> int:
        return len(self.pair_cat)

    # ------------------------------------------------------------------ IoU
    def compute_ious(self, iou_type: str, gt_dataset, dt_dataset, dilation_ratio: float,
                     num_threads: Optional[int] = None) -> None:
        """Run the IoU step over every pair.

        ``iou_type`` is 'segm', 'bbox' or 'boundary'; masks and boundaries
        come from the datasets' :func:`~boundary_api.instance.cache.cache_for` caches.
        """
        mode = IOU_MODES[iou_type]
        threads = resolve_threads(num_threads)
        G, D = len(self.gt_anns), len(self.dt_anns)
        if mode == 2:
            gt_box = _boxes(self.gt_anns)
            dt_box = _boxes(self.dt_anns)
            gm = gb = dm = db = _mask.StringTable([])
            gh = np.zeros(G, np.int64)
            dh = np.zeros(D, np.int64)
        else:
            gt_box = np.zeros((G, 4), np.float64)
            dt_box = np.zeros((D, 4), np.float64)
            gcache, dcache = cache_for(gt_dataset), cache_for(dt_dataset)
            gcounts, gh, _ = gcache.masks(self.gt_anns)
            dcounts, dh, _ = dcache.masks(self.dt_anns)
            gm, dm = _mask.StringTable(gcounts), _mask.StringTable(dcounts)
            if mode == 1:
                gb = _mask.StringTable(gcache.boundaries(self.gt_anns, dilation_ratio, threads))
                db = _mask.StringTable(dcache.boundaries(self.dt_anns, dilation_ratio, threads))
            else:
                gb, db = gm, dm
        out = np.zeros(int(self.pair_o[-1]), np.float64)
        cost = np.diff(self.pair_o) + np.diff(self.pair_g) + np.diff(self.pair_d)
        large = D > LARGE
        ranges = split_by_cost(cost, threads * (32 if large else 4))
        run_ranges(lambda lo, hi: _mask.iou_pairs(mode, gm, gb, gh, self.gt_crowd, gt_box,
                                                 dm, db, dh, dt_box, self.pair_g, self.pair_d,
                                                 self.pair_o, out, lo, hi),
                   ranges, threads, progress="IoU" if large else None, total=self.num_pairs)
        self.ious = out

    def iou_matrix(self, p: int) -> np.ndarray:
        """IoU matrix of pair ``p`` as the libraries return it (``[]`` if empty)."""
        G = int(self.pair_g[p + 1] - self.pair_g[p])
        D = int(self.pair_d[p + 1] - self.pair_d[p])
        if G == 0 or D == 0:
            return []
        o = int(self.pair_o[p])
        return self.ious[o:o + D * G].reshape(D, G).copy()

    def iou_dict(self) -> IouDict:
        """``{(image_id, category_id): matrix}`` for every pair."""
        out = IouDict()
        for p in range(self.num_pairs):
            key = (self.img_ids[self.pair_img[p]], self.cat_ids[self.pair_cat[p]])
            out[key] = self.iou_matrix(p)
        return out

    # ------------------------------------------------------------- matching
    def match(self, area_rng: Sequence, iou_thrs: Sequence[float], crowd_rule: bool,
              num_threads: Optional[int] = None) -> None:
        """Per-image matching for every pair and area range (Cython)."""
        threads = resolve_threads(num_threads)
        self.area_rng = [list(a) for a in area_rng]
        rng = np.ascontiguousarray(np.array(self.area_rng, np.float64).reshape(-1, 2))
        thrs = np.ascontiguousarray(np.asarray(iou_thrs, np.float64).reshape(-1))
        A, T = len(rng), len(thrs)
        G, D = len(self.gt_anns), len(self.dt_anns)
        self.gt_perm = np.zeros((A, G), np.int32)
        self.gt_ig = np.zeros((A, G), np.uint8)
        self.dt_match = np.zeros((A, T, D), np.int32)
        self.dt_flags = np.zeros((A, T, D), np.uint8)
        self.gt_match = np.zeros((A, T, G), np.int32)
        self.iou_thrs = thrs
        cost = (np.diff(self.pair_g) + 1) * (np.diff(self.pair_d) + 1)
        ranges = split_by_cost(cost, threads * 4)
        run_ranges(lambda lo, hi: _eval.match_pairs(
            self.pair_g, self.pair_d, self.pair_o, self.ious, self.gt_area, self.gt_ignore,
            self.gt_crowd, self.gt_id, self.dt_area, self.dt_extra_ignore, self.dt_id,
            rng, thrs, crowd_rule, self.gt_perm, self.gt_ig, self.dt_match, self.dt_flags,
            self.gt_match, lo, hi), ranges, threads)
        self.matched = True

    def accumulate(self, k_list: Sequence[int], a_list: Sequence[int], max_dets: Sequence[int],
                   img_list: Sequence[int], rec_thrs: Sequence[float], K: int, A: int, M: int,
                   with_scores: bool, num_threads: Optional[int] = None):
        """pycocotools' ``accumulate`` on the matched pairs.

        ``k_list``/``a_list``/``img_list`` index the evaluated category, area
        and image axes; output category ``k`` reads ``k_list[k]``.  Returns
        ``precision (T,R,K,A,M)``, ``recall (T,K,A,M)``, ``scores`` (or None).
        """
        threads = resolve_threads(num_threads)
        T = self.dt_flags.shape[1]
        recs = np.ascontiguousarray(np.asarray(rec_thrs, np.float64).reshape(-1))
        R = len(recs)
        precision = -np.ones((T, R, K, A, M))
        recall = -np.ones((T, K, A, M))
        scores = -np.ones((T, R, K, A, M)) if with_scores else np.empty((0, 0, 0, 0, 0))
        selected = np.zeros(max(len(self.img_ids), 1), np.uint8)
        selected[np.asarray(img_list, np.int64)] = 1
        kl = np.asarray(k_list, np.int64)
        al = np.asarray(a_list, np.int64)
        md = np.asarray(max_dets, np.int64)
        cost = np.diff(self.cat_pair_start)[kl] if len(kl) else np.zeros(0)
        ranges = split_by_cost(cost, threads * 4)
        run_ranges(lambda lo, hi: _eval.accumulate(
            self.cat_pair_start, self.pair_img, selected, self.pair_g, self.pair_d,
            self.dt_score, self.gt_ig, self.dt_flags, kl, al, md, recs,
            precision, recall, scores, with_scores, lo, hi), ranges, threads)
        return precision, recall, (scores if with_scores else None)

    # ------------------------------------------------- library-shaped output
    def eval_entry(self, p: int, a: int, style: str) -> dict:
        """One ``evalImgs`` (pycocotools) / ``eval_imgs`` (lvis) entry."""
        g0, g1 = int(self.pair_g[p]), int(self.pair_g[p + 1])
        d0, d1 = int(self.pair_d[p]), int(self.pair_d[p + 1])
        perm = self.gt_perm[a, g0:g1]
        gts = [self.gt_anns[g0 + j] for j in perm]
        dts = self.dt_anns[d0:d1]
        # the libraries store matched ids as floats, 0 for no match
        dt_matches = _ids_at(self.gt_id[g0:g1], self.dt_match[a, :, d0:d1])
        gt_matches = _ids_at(self.dt_id[d0:d1], self.gt_match[a, :, g0:g1])
        # built from a list as the libraries do (so an empty one is float64)
        gt_ignore = np.array(self.gt_ig[a, g0:g1].tolist())
        dt_ignore = (self.dt_flags[a, :, d0:d1] & 2).astype(bool)
        img = self.img_ids[self.pair_img[p]]
        cat = self.cat_ids[self.pair_cat[p]]
        if style == "coco":
            return {
                "image_id": img, "category_id": cat, "aRng": self.area_rng[a],
                "maxDet": self.max_det,
                "dtIds": [d["id"] for d in dts], "gtIds": [g["id"] for g in gts],
                "dtMatches": dt_matches, "gtMatches": gt_matches,
                "dtScores": [d["score"] for d in dts],
                "gtIgnore": gt_ignore, "dtIgnore": dt_ignore,
            }
        return {
            "image_id": img, "category_id": cat, "area_rng": self.area_rng[a],
            "dt_ids": [d["id"] for d in dts], "gt_ids": [g["id"] for g in gts],
            "dt_matches": dt_matches, "gt_matches": gt_matches,
            "dt_scores": [d["score"] for d in dts],
            "gt_ignore": gt_ignore, "dt_ignore": dt_ignore,
        }

    def eval_imgs(self, style: str) -> list:
        """The whole ``K x A x I`` list, ``None`` where a pair is empty."""
        K, A, I = len(self.cat_ids), len(self.area_rng), len(self.img_ids)
        out: list = [None] * (K * A * I)
        for p in range(self.num_pairs):
            k, i = int(self.pair_cat[p]), int(self.pair_img[p])
            for a in range(A):
                out[k * A * I + a * I + i] = self.eval_entry(p, a, style)
        return out


def _ids_at(ids: np.ndarray, local: np.ndarray) -> np.ndarray:
    """``ids[local]`` as float64, 0 where ``local`` is -1 (no match)."""
    if len(ids) == 0:
        return np.zeros(local.shape, np.float64)
    return np.where(local >= 0, ids[np.maximum(local, 0)], 0).astype(np.float64)


def _neg_score(ann) -> float:
    return -ann["score"]


def _int_field(anns: list, key: str) -> np.ndarray:
    try:
        return np.fromiter((a[key] for a in anns), np.int64, len(anns))
    except (TypeError, ValueError, OverflowError):
        # ids that are not machine integers: keep their truth value, which is
        # all the matching rules read
        return np.array([1 if a[key] else 0 for a in anns], np.int64)


def _boxes(anns: list) -> np.ndarray:
    if not anns:
        return np.zeros((0, 4), np.float64)
    return np.ascontiguousarray(np.array([a["bbox"] for a in anns], np.float64).reshape(-1, 4))
