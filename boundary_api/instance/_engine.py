"""The evaluation engine behind ``COCOeval`` and ``LVISEval``.

Both evaluators let their own library select annotations (``_prepare``), then
hand the per (image, category) lists to :class:`Evaluation`, which

1. flattens them into *pairs* in the order the library would visit them,
2. runs the IoU step (:func:`boundary_api.masks._iou.iou_pairs`) over all pairs,
3. either matches and accumulates in Cython (:mod:`boundary_api.instance._eval`), or
   exposes the IoU matrices for the library's own Python loops.

The same object later rebuilds the library's ``evalImgs`` / ``eval_imgs``
entries on demand, so nothing is materialized that nobody reads.
"""
from __future__ import annotations

import logging
from itertools import repeat
from operator import itemgetter
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from . import _eval
from ..masks import _iou, _rle
from ..masks.boundary import dilation_pixels_array
from .._parallel import full as parallel_full, resolve_threads, run_ranges, split_by_cost
from .cache import cache_for

from ._lazy import IouDict

log = logging.getLogger(__name__)

#: IoU step modes of ``_iou.iou_pairs``
IOU_MODES = {"segm": 0, "boundary": 1, "bbox": 2}
#: detections from which the IoU step shows a progress bar (on a terminal)
LARGE = 100_000


def leave_ignore_flags(state: "Evaluation") -> None:
    """Leave in the ground truths of a native evaluation the ``_ignore``
    flag that the originals' per-image evaluation leaves in each of them
    (that of the last area range evaluated): set in the dicts, or, for a
    ground truth read as columns, noted for the dicts made later
    (``GroundTruthColumns.ignore_marks``)."""
    if not len(state.area_rng) or not state.num_pairs:
        return
    lo, hi = state.area_rng[-1][0], state.area_rng[-1][1]
    flags = (state.gt_ignore != 0) | (state.gt_area < lo) | (state.gt_area > hi)
    if state.gt_columns is not None:
        state.gt_columns.ignore_marks.append((state.gt_rows.copy(), flags.astype(np.uint8)))
        return
    for g, flag in zip(state.gt_anns, flags.astype(np.int64).tolist()):
        g["_ignore"] = flag


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
    area_key : str
        The annotation field the area ranges read (``'avg_area'`` for
        YouTube-VIS tracks).
    """

    def __init__(self, gts: dict, dts: dict, img_ids: Sequence, cat_ids: Sequence, use_cats: bool,
                 gather: Optional[Callable] = None, max_det: Optional[int] = None,
                 crowd_key: Optional[str] = "iscrowd",
                 dt_extra_ignore: Optional[Callable] = None, area_key: str = "area"):
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

        dropped = self._flatten(entries, max_det, _neg_score)
        self.dt_score = np.array([a["score"] for a in self.dt_anns], np.float64)
        #: NaN scores (kept or cut by max_det): pycocotools' and lvis' stable
        #: sorts put them last, and so must this order
        self.nan_scores = bool(np.isnan(self.dt_score).any() or np.isnan(dropped).any())
        if self.nan_scores:
            self._flatten(entries, max_det, _neg_score_nan_last)
            self.dt_score = np.array([a["score"] for a in self.dt_anns], np.float64)
        gt_anns, dt_anns = self.gt_anns, self.dt_anns
        # first pair of each category (pairs are sorted by category, then image)
        self.cat_pair_start = np.searchsorted(self.pair_cat, np.arange(len(self.cat_ids) + 1)).astype(np.int64)

        # ids as the libraries store matched ids (float64); the kernels read
        # whether a ground truth's id is nonzero and a detection's positive
        self.gt_id = _id_values(gt_anns, "ground truth")
        self.dt_id = _id_values(dt_anns, "detection")
        self.gt_id_nonzero = (self.gt_id != 0).astype(np.int64)
        self.dt_id_positive = (self.dt_id > 0).astype(np.int64)
        self.gt_area = np.array([a[area_key] for a in gt_anns], np.float64)
        self.dt_area = np.array([a[area_key] for a in dt_anns], np.float64)
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

    #: results parsed into columns (:class:`._columns.ResultColumns`) when the
    #: detections are rows of them (``dt_rows``) instead of dicts (``dt_anns``)
    dt_columns = None
    dt_rows: Optional[np.ndarray] = None

    @classmethod
    def from_columns(cls, gt_anns: Optional[List[dict]], columns, img_ids: Sequence, cat_ids: Sequence,
                     use_cats: bool, cat_ids_used: Sequence, max_det: Optional[int],
                     crowd_key: Optional[str] = "iscrowd", dt_keep: Optional[np.ndarray] = None,
                     dt_extra_ignore: Optional[np.ndarray] = None, gt_columns=None,
                     gt_selected: Optional[np.ndarray] = None,
                     gt_ignore: Optional[np.ndarray] = None) -> "Evaluation":
        """The same evaluation as the constructor, detections read from columns.

        Parameters
        ----------
        gt_anns : list of dict
            The ground truths as the library's ``_prepare`` selects them
            (``getAnnIds`` order), ``ignore`` already set.
        columns : ResultColumns
            The detections, every row of which is a candidate.
        img_ids, cat_ids : sequence
            The evaluated axes (``cat_ids == [-1]`` without categories).
        use_cats : bool
        cat_ids_used : sequence
            ``params.catIds``: without categories, an image pools the
            annotations of these categories, in this order.
        max_det : int or None
        crowd_key : str or None
            None: no ground truth is a crowd (lvis), columns included.
        dt_keep : ndarray of bool, optional
            Per row of ``columns``: whether the row is a candidate at all
            (lvis' area and federated selection); default every row.
        dt_extra_ignore : ndarray of bool, optional
            Per row of ``columns``: unmatched detections for which it is true
            are ignored (lvis' not-exhaustively-annotated categories).
        gt_columns : GroundTruthColumns, optional
            Ground truths read as columns, instead of ``gt_anns``: the rows
            ``gt_selected`` (file order) are the selected ones, ``gt_ignore``
            (per row of the columns) their ignore flags.
        """
        self = cls.__new__(cls)
        self.img_ids = list(img_ids)
        self.cat_ids = list(cat_ids)
        self.max_det = max_det
        from ._columns import select_rows

        I = max(len(self.img_ids), 1)
        # ---- ground truths: pair key (k, i), kept in their given order within a pair
        if gt_columns is not None:
            gsel = np.asarray(gt_selected, np.int64)
            g_img = select_rows(gt_columns.image_id[gsel], self.img_ids)
            g_cat = select_rows(gt_columns.category_id[gsel], cat_ids_used)
        else:
            ng = len(gt_anns)
            img_pos = _first_positions(self.img_ids)
            cat_pos = _first_positions(cat_ids_used)
            g_img = np.fromiter(map(img_pos.get, map(itemgetter("image_id"), gt_anns), repeat(-1)), np.int64, ng)
            g_cat = np.fromiter(map(cat_pos.get, map(itemgetter("category_id"), gt_anns), repeat(-1)), np.int64, ng)
        keep = (g_img >= 0) & (g_cat >= 0)
        g_sel = np.flatnonzero(keep)
        if use_cats:
            g_key = g_cat[g_sel] * I + g_img[g_sel]
            g_order = np.lexsort((g_sel, g_key))
        else:
            g_key = g_img[g_sel]
            g_order = np.lexsort((g_sel, g_cat[g_sel], g_key))
        g_sel = g_sel[g_order]
        g_key = g_key[g_order]
        # ---- detections: pair key, then score (highest first, stable, NaN last), cut to max_det
        d_img = select_rows(columns.image_id, self.img_ids)
        d_cat = select_rows(columns.category_id, cat_ids_used)
        d_ok = (d_img >= 0) & (d_cat >= 0)
        if dt_keep is not None:
            d_ok &= np.asarray(dt_keep, bool)
        d_sel = np.flatnonzero(d_ok)
        neg = -columns.score[d_sel]
        if use_cats:
            d_key = d_cat[d_sel] * I + d_img[d_sel]
            n_keys = max(len(cat_ids_used), 1) * I
            if n_keys <= 4 * len(d_key) + (1 << 20):
                # = np.lexsort((d_sel, neg, d_key)): d_sel is increasing
                d_order = np.empty(len(d_key), np.int64)
                _eval.order_by_key_and_score(d_key, neg, n_keys, d_order)
            else:
                d_order = np.lexsort((neg, d_key))
        else:
            d_key = d_img[d_sel]
            d_order = np.lexsort((d_sel, d_cat[d_sel], neg, d_key))
        d_sel = d_sel[d_order]
        d_key = d_key[d_order]
        dropped = np.zeros(0, np.float64)
        # a pair whose detections are all cut still counts as evaluated (as in the libraries)
        d_key_uncut = d_key
        if max_det is not None and len(d_key):
            # each pair keeps d[:max_det] (a Python slice: a negative max_det drops the last ones)
            first = np.flatnonzero(np.concatenate(([True], d_key[1:] != d_key[:-1])))
            sizes = np.diff(np.concatenate((first, [len(d_key)])))
            rank = np.arange(len(d_key)) - np.repeat(first, sizes)
            limit = np.repeat(sizes, sizes)
            kept = rank < (max_det if max_det >= 0 else np.maximum(limit + max_det, 0))
            dropped = columns.score[d_sel[~kept]]
            d_sel, d_key = d_sel[kept], d_key[kept]
        # ---- pairs: every key with a ground truth or a detection, by category then image
        keys = np.sort(np.concatenate((_distinct_sorted(g_key), _distinct_sorted(d_key_uncut))).astype(np.int64))
        keys = _distinct_sorted(keys)
        if use_cats:
            self.pair_cat, self.pair_img = keys // I, keys % I
        else:
            self.pair_cat, self.pair_img = np.zeros(len(keys), np.int64), keys
        self.pair_g = np.searchsorted(g_key, keys, side="left").astype(np.int64)
        self.pair_g = np.append(self.pair_g, len(g_key)).astype(np.int64)
        self.pair_d = np.append(np.searchsorted(d_key, keys, side="left"), len(d_key)).astype(np.int64)
        ng_p, nd_p = np.diff(self.pair_g), np.diff(self.pair_d)
        self.pair_o = np.concatenate(([0], np.cumsum(ng_p * nd_p))).astype(np.int64)
        if gt_columns is not None:
            self.gt_anns = None
            self.gt_columns = gt_columns
            self.gt_rows = gsel[g_sel]
        else:
            self.gt_anns = [gt_anns[j] for j in g_sel.tolist()]
        self.dt_anns = None
        self.dt_columns = columns
        self.dt_rows = d_sel.astype(np.int64)
        self.dt_score = columns.score[self.dt_rows]
        self.nan_scores = bool(np.isnan(self.dt_score).any() or np.isnan(dropped).any())
        self.cat_pair_start = np.searchsorted(self.pair_cat, np.arange(len(self.cat_ids) + 1)).astype(np.int64)
        # result ids are row + 1 (made when read); every one is positive
        self.dt_id_positive = np.broadcast_to(np.int64(1), (len(self.dt_rows),))
        self.dt_area = np.ascontiguousarray(columns.area[self.dt_rows], np.float64)
        if gt_columns is not None:
            r = self.gt_rows
            self.gt_id = gt_columns.ann_id[r].astype(np.float64)
            self.gt_area = np.ascontiguousarray(gt_columns.area[r])
            self.gt_ignore = np.asarray(gt_ignore, bool)[r].astype(np.uint8)
            if crowd_key is None:
                self.gt_crowd = np.zeros(len(r), np.uint8)
            else:
                self.gt_crowd = (gt_columns.iscrowd[r] != 0).astype(np.uint8)
        else:
            gts = self.gt_anns
            self.gt_id = _id_values(gts, "ground truth")
            self.gt_area = np.array(list(map(itemgetter("area"), gts)), np.float64)
            self.gt_ignore = np.fromiter(map(bool, map(dict.get, gts, repeat("ignore"), repeat(0))), np.uint8,
                                         len(gts))
            if crowd_key is None:
                self.gt_crowd = np.zeros(len(gts), np.uint8)
            else:
                self.gt_crowd = np.fromiter(map(bool, map(itemgetter(crowd_key), gts)), np.uint8, len(gts))
        self.gt_id_nonzero = (self.gt_id != 0).astype(np.int64)
        if dt_extra_ignore is None:
            self.dt_extra_ignore = np.zeros(len(self.dt_rows), np.uint8)
        else:
            self.dt_extra_ignore = np.asarray(dt_extra_ignore, bool)[self.dt_rows].astype(np.uint8)
        self.ious = None
        self.matched = False
        return self

    #: ground truths read as columns (``gt_rows`` of them) instead of dicts (``gt_anns``)
    gt_columns = None
    gt_rows: Optional[np.ndarray] = None

    @property
    def num_gt(self) -> int:
        return len(self.gt_rows) if self.gt_columns is not None else len(self.gt_anns)

    @property
    def num_dt(self) -> int:
        return len(self.dt_rows) if self.dt_columns is not None else len(self.dt_anns)

    def _flatten(self, entries: list, max_det: Optional[int], score_key: Callable) -> np.ndarray:
        """Pairs in order, each pair's detections sorted by ``score_key``
        (stable) and cut to ``max_det``; returns the scores of those cut."""
        gt_anns: list = []
        dt_anns: list = []
        dropped: list = []
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
                d = sorted(d, key=score_key)
            if max_det is not None and len(d) > max_det:
                dropped.extend(a["score"] for a in d[max_det:])
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
        return np.array(dropped, np.float64)

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
        gw = gd = dt_status = None
        G, D = self.num_gt, self.num_dt
        cols, rows = self.dt_columns, self.dt_rows
        gtc, grows = self.gt_columns, self.gt_rows
        if mode == 2:
            gt_box = np.ascontiguousarray(gtc.bbox[grows]) if gtc is not None else _boxes(self.gt_anns)
            dt_box = np.ascontiguousarray(cols.bbox[rows]) if cols is not None else _boxes(self.dt_anns)
            gm = gb = dm = db = _rle.StringTable([])
            gh = np.zeros(G, np.int64)
            dh = np.zeros(D, np.int64)
        else:
            gt_box = np.zeros((G, 4), np.float64)
            dt_box = np.zeros((D, 4), np.float64)
            gcache = cache_for(gt_dataset)
            if cols is not None:
                if mode in (0, 1) and not cols.rles_checked and cols.sizes_ok():
                    # the strings are checked where the IoU step decodes them
                    # (and those it does not decode after it): one decode each
                    dt_status = np.full(D, 255, np.uint8)
                else:
                    cols.check_rles(threads)
                dm, dh = cols.counts_table(rows), np.ascontiguousarray(cols.seg_h[rows])
                if mode == 1:
                    # the detections' boundaries are extracted inside the IoU step,
                    # from the masks it decodes anyway, and only where needed
                    mode = 3
                    dw = np.ascontiguousarray(cols.seg_w[rows])
                    dd = dilation_pixels_array(dh, dw, dilation_ratio)
                    db = _rle.StringTable([])
            if gtc is not None:
                gm, gh = gtc.mask_table(grows), np.ascontiguousarray(gtc.height[grows])
                if mode in (1, 3):
                    if gtc.boundaries_none_made(grows, dilation_ratio):
                        # none cached yet: each ground truth's boundary is made inside
                        # the IoU step from the mask it decodes anyway, used as runs,
                        # and its string handed to the cache (one decode, no re-read)
                        gw = np.ascontiguousarray(gtc.width[grows])
                        gd = dilation_pixels_array(gh, gw, dilation_ratio)
                        gb = _rle.StringTable([])
                    else:
                        gb = gtc.boundary_table(grows, dilation_ratio, threads)
            elif mode in (1, 3):
                gcounts, gh, _, gbound = gcache.masks_and_boundaries(self.gt_anns, dilation_ratio, threads)
                gb = _rle.StringTable(gbound)
                if cols is None:
                    dcounts, dh, _, dbound = cache_for(dt_dataset).masks_and_boundaries(
                        self.dt_anns, dilation_ratio, threads)
                    db = _rle.StringTable(dbound)
            else:
                gcounts, gh, _ = gcache.masks(self.gt_anns)
                if cols is None:
                    dcounts, dh, _ = cache_for(dt_dataset).masks(self.dt_anns)
            if gtc is None:
                gm = _rle.StringTable(gcounts)
            if cols is None:
                dm = _rle.StringTable(dcounts)
            if mode == 0:
                gb, db = gm, dm
        out = np.zeros(int(self.pair_o[-1]), np.float64)
        large = D > LARGE
        ranges = split_by_cost(self._iou_costs(mode), threads * (32 if large else 16) if threads > 1 else 1)
        extra = (dw, dd) if mode == 3 else (None, None)
        if mode == 0 and dt_status is not None:
            extra = (np.ascontiguousarray(cols.seg_w[rows]), None)  # (for the check)
        extra += (gw, gd) if gd is not None else (None, None)
        extra += (dt_status,)
        counts = run_ranges(lambda lo, hi: _iou.iou_pairs(mode, gm, gb, gh, self.gt_crowd, gt_box,
                                                          dm, db, dh, dt_box, self.pair_g, self.pair_d,
                                                          self.pair_o, out, lo, hi, *extra),
                            ranges, threads, progress="IoU" if large else None, total=self.num_pairs)
        if dt_status is not None:
            cols.finish_check(rows, dt_status, threads)  # raises where check_rles raises
        if gd is not None:
            pg = self.pair_g
            gtc.keep_boundaries(grows, dilation_ratio,
                                [((int(pg[lo]), int(pg[hi])), (data, offs)) for (lo, hi), (_, data, offs)
                                 in zip(ranges, counts)])
            counts = [c[0] for c in counts]
        if mode == 3 and cols.computed is not None:
            cols.computed["boundaries"] += sum(counts)
        self.ious = out

    def _iou_costs(self, mode: int) -> np.ndarray:
        """Estimated work of the IoU step per pair, for splitting it between
        threads: with masks, the characters of the RLE strings it decodes
        (the detections' only where the pair has a ground truth; decoding
        and the boundaries grow with them) plus the intersections; with
        boxes, the matrix size."""
        G = np.diff(self.pair_g)
        D = np.diff(self.pair_d)
        cost = (G * D).astype(np.float64)
        cols, gtc = self.dt_columns, self.gt_columns
        glen = gtc.mask_lengths(self.gt_rows) if mode != 2 and cols is not None and gtc is not None else None
        if glen is None:
            return cost + G + D
        chars = np.concatenate(([0], np.cumsum(cols.counts_len[self.dt_rows], dtype=np.int64)))
        dt_chars = np.diff(chars[self.pair_d]) * (G > 0)
        gchars = np.concatenate(([0], np.cumsum(glen, dtype=np.int64)))
        return 8.0 * cost + dt_chars + np.diff(gchars[self.pair_g])

    def iou_matrix(self, p: int) -> np.ndarray:
        """IoU matrix of pair ``p`` as the libraries return it (``[]`` if empty)."""
        G = int(self.pair_g[p + 1] - self.pair_g[p])
        D = int(self.pair_d[p + 1] - self.pair_d[p])
        if G == 0 or D == 0:
            return []
        o = int(self.pair_o[p])
        return self.ious[o:o + D * G].reshape(D, G).copy()

    def iou_dict(self) -> IouDict:
        """``{(image_id, category_id): matrix}`` for every evaluated pair, built
        lazily (the evaluators hand out its plain-dict ``copy()``)."""
        return IouDict(self)

    # ------------------------------------------------------------- matching
    def match(self, area_rng: Sequence, iou_thrs: Sequence[float], crowd_rule: bool,
              num_threads: Optional[int] = None) -> None:
        """Per-image matching for every pair and area range (Cython)."""
        threads = resolve_threads(num_threads)
        self.area_rng = [list(a) for a in area_rng]
        rng = np.ascontiguousarray(np.array(self.area_rng, np.float64).reshape(-1, 2))
        thrs = np.ascontiguousarray(np.asarray(iou_thrs, np.float64).reshape(-1))
        A, T = len(rng), len(thrs)
        G, D = self.num_gt, self.num_dt
        self.gt_perm = np.zeros((A, G), np.int32)
        self.gt_ig = np.zeros((A, G), np.uint8)
        self.dt_flags = np.zeros((A, T, D), np.uint8)
        self.iou_thrs = thrs
        self.__dict__.pop("_dt_match", None)
        self.__dict__.pop("_gt_match", None)
        # dt_match and gt_match (4 bytes per area range, threshold and
        # detection / ground truth: 85 MB at 500k detections) are made again
        # from the same IoUs when first read
        self._match_args = (rng, thrs, bool(crowd_rule), num_threads)
        self._run_match(self.gt_perm, self.gt_ig, None, self.dt_flags, np.zeros((A, T, G), np.int32), rng, thrs,
                        crowd_rule, threads)
        self.matched = True

    def _run_match(self, gt_perm, gt_ig, dt_match, dt_flags, gt_match, rng, thrs, crowd_rule, threads) -> None:
        """:func:`._eval.match_pairs` over every pair on ``threads`` threads;
        ``dt_match`` None: not stored."""
        store = dt_match is not None
        if not store:
            dt_match = np.zeros((1, 1, 1), np.int32)
        cost = (np.diff(self.pair_g) + 1) * (np.diff(self.pair_d) + 1)
        ranges = split_by_cost(cost, threads * 4)
        run_ranges(lambda lo, hi: _eval.match_pairs(
            self.pair_g, self.pair_d, self.pair_o, self.ious, self.gt_area, self.gt_ignore,
            self.gt_crowd, self.gt_id_nonzero, self.dt_area, self.dt_extra_ignore, self.dt_id_positive,
            rng, thrs, crowd_rule, gt_perm, gt_ig, dt_match, dt_flags,
            gt_match, lo, hi, store), ranges, threads)

    def _rematch(self) -> None:
        """Make ``dt_match`` and ``gt_match`` by matching again (the same
        kernel on the same IoUs)."""
        rng, thrs, crowd_rule, num_threads = self._match_args
        A, T = len(rng), len(thrs)
        G, D = self.num_gt, self.num_dt
        dt_match = np.zeros((A, T, D), np.int32)
        gt_match = np.zeros((A, T, G), np.int32)
        self._run_match(np.zeros((A, G), np.int32), np.zeros((A, G), np.uint8), dt_match,
                        np.zeros((A, T, D), np.uint8), gt_match, rng, thrs, crowd_rule,
                        resolve_threads(num_threads))
        self.__dict__.setdefault("_dt_match", dt_match)
        self.__dict__.setdefault("_gt_match", gt_match)

    @property
    def dt_match(self) -> np.ndarray:
        """``dt_match[a, t, d]``: the local index of the ground truth matched
        to detection ``d`` at area range ``a`` and threshold ``t``, or -1;
        made when first read, since only ``evalImgs``-style output needs it."""
        if self.__dict__.get("_dt_match") is None:
            self._rematch()
        return self.__dict__["_dt_match"]

    @dt_match.setter
    def dt_match(self, value) -> None:
        self.__dict__["_dt_match"] = value

    @property
    def gt_match(self) -> np.ndarray:
        """``gt_match[a, t, j]``: the local index of the detection matched to
        the j-th sorted ground truth, or -1; made when first read."""
        if self.__dict__.get("_gt_match") is None:
            self._rematch()
        return self.__dict__["_gt_match"]

    @gt_match.setter
    def gt_match(self, value) -> None:
        self.__dict__["_gt_match"] = value

    @property
    def dt_id(self) -> np.ndarray:
        """Detection ids as float64 (as the libraries store matched ids);
        for results read as columns, row + 1, made when read."""
        out = self.__dict__.get("_dt_id")
        if out is None:
            out = (self.dt_rows + 1).astype(np.float64)
            self.__dict__["_dt_id"] = out
        return out

    @dt_id.setter
    def dt_id(self, value) -> None:
        self.__dict__["_dt_id"] = value

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
        # pycocotools' -np.ones(...), in one pass and without the temporary
        # (LVIS: 39 MB per array at 1,203 categories)
        precision = parallel_full((T, R, K, A, M), -1.0, threads)
        recall = np.full((T, K, A, M), -1.0)
        scores = parallel_full((T, R, K, A, M), -1.0, threads) if with_scores else np.empty((0, 0, 0, 0, 0))
        selected = np.zeros(max(len(self.img_ids), 1), np.uint8)
        selected[np.asarray(img_list, np.int64)] = 1
        kl = np.asarray(k_list, np.int64)
        al = np.asarray(a_list, np.int64)
        md = np.asarray(max_dets, np.int64)
        # a category costs its detections (sorted, walked per area and
        # threshold) and its pairs (ground truths counted per area)
        cost = ((np.diff(self.cat_pair_start) + np.diff(self.pair_d[self.cat_pair_start]))[kl]
                if len(kl) else np.zeros(0))
        # many small ranges, the costliest first: one category can be a
        # fifth of the work (val500k's first), and the ranges are taken in
        # turn by whichever thread is free
        ranges = split_by_cost(cost, threads * 16)
        if threads > 1 and len(ranges) > 1:
            cum = np.concatenate(([0], np.cumsum(cost)))
            ranges.sort(key=lambda r: cum[r[0]] - cum[r[1]])
        run_ranges(lambda lo, hi: _eval.accumulate(
            self.cat_pair_start, self.pair_img, selected, self.pair_g, self.pair_d,
            self.dt_score, self.gt_ig, self.dt_flags, kl, al, md, recs,
            precision, recall, scores, with_scores, lo, hi), ranges, threads)
        return precision, recall, (scores if with_scores else None)

    # ------------------------------------------------- library-shaped output
    def eval_entry(self, p: int, a: int, style: str) -> dict:
        """One ``evalImgs`` (pycocotools; 'ytvos': keyed by ``video_id``) /
        ``eval_imgs`` (lvis) entry."""
        g0, g1 = int(self.pair_g[p]), int(self.pair_g[p + 1])
        d0, d1 = int(self.pair_d[p]), int(self.pair_d[p + 1])
        perm = self.gt_perm[a, g0:g1]
        if self.gt_columns is not None:
            gt_ids = self.gt_columns.ann_id[self.gt_rows[g0 + perm]].tolist()
        else:
            gt_ids = [self.gt_anns[g0 + j]["id"] for j in perm]
        if self.dt_columns is not None:
            rows = self.dt_rows[d0:d1]
            dt_ids = (rows + 1).tolist()
            dt_scores = self.dt_columns.score_values(rows)
        else:
            dts = self.dt_anns[d0:d1]
            dt_ids = [d["id"] for d in dts]
            dt_scores = [d["score"] for d in dts]
        # the libraries store matched ids as floats, 0 for no match
        dt_matches = _ids_at(self.gt_id[g0:g1], self.dt_match[a, :, d0:d1])
        gt_matches = _ids_at(self.dt_id[d0:d1], self.gt_match[a, :, g0:g1])
        # built from a list as the libraries do (so an empty one is float64)
        gt_ignore = np.array(self.gt_ig[a, g0:g1].tolist())
        dt_ignore = (self.dt_flags[a, :, d0:d1] & 2).astype(bool)
        img = self.img_ids[self.pair_img[p]]
        cat = self.cat_ids[self.pair_cat[p]]
        if style in ("coco", "ytvos"):
            return {
                "image_id" if style == "coco" else "video_id": img, "category_id": cat, "aRng": self.area_rng[a],
                "maxDet": self.max_det,
                "dtIds": dt_ids, "gtIds": gt_ids,
                "dtMatches": dt_matches, "gtMatches": gt_matches,
                "dtScores": dt_scores,
                "gtIgnore": gt_ignore, "dtIgnore": dt_ignore,
            }
        return {
            "image_id": img, "category_id": cat, "area_rng": self.area_rng[a],
            "dt_ids": dt_ids, "gt_ids": gt_ids,
            "dt_matches": dt_matches, "gt_matches": gt_matches,
            "dt_scores": dt_scores,
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


def sorted_unique(values) -> list:
    """``list(np.unique(values))``, as pycocotools and lvis normalise their
    id lists, without ``np.unique``'s own import of ``numpy.ma`` (50 ms of a
    small evaluation).  Same values, same NumPy scalar types, same order."""
    a = np.asarray(values)
    if a.dtype.kind not in "iub" or a.ndim != 1:
        return list(np.unique(a))  # floats (NaN), strings, objects: NumPy's own rules
    a = np.sort(a, kind="stable")
    if len(a) > 1:
        a = a[np.concatenate(([True], a[1:] != a[:-1]))]
    return list(a)


def _distinct_sorted(a: np.ndarray) -> np.ndarray:
    """The distinct values of a sorted 1-d array, in order."""
    if len(a) < 2:
        return a
    return a[np.concatenate(([True], a[1:] != a[:-1]))]


def _first_positions(keys: Sequence) -> dict:
    """``key -> position of its first occurrence`` (unhashable keys skipped)."""
    out: dict = {}
    for j, k in enumerate(keys):
        try:
            out.setdefault(k, j)
        except TypeError:
            continue
    return out


def _ids_at(ids: np.ndarray, local: np.ndarray) -> np.ndarray:
    """``ids[local]`` as float64, 0 where ``local`` is -1 (no match)."""
    if len(ids) == 0:
        return np.zeros(local.shape, np.float64)
    return np.where(local >= 0, ids[np.maximum(local, 0)], 0).astype(np.float64)


def _neg_score(ann) -> float:
    return -ann["score"]


def _neg_score_nan_last(ann) -> tuple:
    # np.argsort(-score, kind='mergesort') with NaN scores: those last, in order
    score = ann["score"]
    return (score != score, -score)


def _id_values(anns: list, what: str) -> np.ndarray:
    """Each annotation's ``id`` as the libraries store a matched id: in a
    float64 array (0.5 stays 0.5, 2**64 becomes 1.8e19, '7' becomes 7.0).

    Raises
    ------
    ValueError
        For an id that cannot be stored so (pycocotools and lvis would fail
        on it at the first match).
    """
    try:
        return np.fromiter(map(itemgetter("id"), anns), np.float64, len(anns))
    except (TypeError, ValueError, OverflowError):
        pass
    for a in anns:
        try:
            np.fromiter((a["id"],), np.float64, 1)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"{what} id {a['id']!r} (image {a.get('image_id')!r}) is not a number: "
                             f"matched ids are stored as float64 numbers ({exc})") from None
    raise AssertionError("unreachable")  # pragma: no cover


def _boxes(anns: list) -> np.ndarray:
    if not anns:
        return np.zeros((0, 4), np.float64)
    return np.ascontiguousarray(np.array([a["bbox"] for a in anns], np.float64).reshape(-1, 4))
