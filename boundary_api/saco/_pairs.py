"""The native path of a cgF1 evaluation: every pair against every annotator file at once.

For each evaluated pair the official code loads the pair's predictions against each
file, gathers ground truths and predictions over the file's (sorted) category ids in
file order, leaves out crowd ground truths and predictions scored below the
threshold, computes the IoU matrix and matches it.  Here the same selections are made
on columns for all pairs at once; the IoUs of a pair against all files come from one
call of the instance engine's IoU step (:func:`boundary_api.masks._iou.iou_pairs`: the
pair's predictions against the ground truths of every file side by side, so that each
prediction is decoded, and its boundary extracted, once), and the matching and the
counting at every threshold from one GIL-free kernel (:mod:`._match`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence

import numpy as np

from . import _match
from .metrics import EntryScores, entry_scores
from .._parallel import resolve_threads, run_ranges, split_by_cost
from ..masks import _iou, _rle
from ..masks.boundary import check_dilation_ratio, dilation_pixels_array

__all__ = ["NotNative", "PairSelection", "select_pairs", "score_pairs"]

#: IoU step modes of ``_iou.iou_pairs``
_MODES = {"segm": 0, "boundary": 3, "bbox": 2}


class NotNative(Exception):
    """The input is outside what the native path evaluates (the per-pair path,
    on pycocotools' objects, then evaluates it as the official code does);
    the message says why."""


@dataclass
class PairSelection:
    """The predictions and ground truths of every (pair, file), in the official order.

    ``dt_rows`` (prediction rows) are grouped by pair (``dt_start``, P + 1
    offsets); per file ``f``, ``gt_rows[f]`` (annotation rows of the file's
    columns) grouped by pair (``gt_start[f]``).
    """

    num_pairs: int
    dt_rows: np.ndarray
    dt_start: np.ndarray
    gt_rows: List[np.ndarray]
    gt_start: List[np.ndarray]

    @property
    def num_dt(self) -> np.ndarray:
        return np.diff(self.dt_start)

    def num_gt(self) -> np.ndarray:
        """``(P, F)`` ground-truth counts."""
        return np.stack([np.diff(s) for s in self.gt_start], axis=1) if self.gt_start \
            else np.zeros((self.num_pairs, 0), np.int64)


def _positions(values: np.ndarray, keys: np.ndarray) -> np.ndarray:
    """Position of each value in ``keys`` (distinct int64), -1 where absent."""
    if not len(keys):
        return np.full(len(values), -1, np.int64)
    order = np.argsort(keys, kind="stable")
    sk = keys[order]
    pos = np.searchsorted(sk, values)
    pos_in = np.minimum(pos, len(sk) - 1)
    return np.where(sk[pos_in] == values, order[pos_in], -1).astype(np.int64)


def _grouped(pair: np.ndarray, cat: np.ndarray, P: int):
    """Rows with a pair and a known category, ordered by pair, then category
    position, then row (the official gathering); and the pair offsets."""
    rows = np.flatnonzero((pair >= 0) & (cat >= 0))
    order = np.lexsort((rows, cat[rows], pair[rows]))
    rows = rows[order]
    start = np.searchsorted(pair[rows], np.arange(P + 1)).astype(np.int64)
    return rows.astype(np.int64), start


def select_pairs(pair_ids: np.ndarray, cat_ids: Sequence[int], preds, gts: list, threshold: float
                 ) -> PairSelection:
    """The official selections on columns.

    ``pair_ids`` (int64, distinct) are the evaluated pairs in order;
    ``cat_ids`` the sorted category ids every file has; ``preds`` the
    predictions' columns; ``gts`` the files' :class:`GroundTruthColumns`.
    """
    P = len(pair_ids)
    cats = np.asarray(cat_ids, np.int64)
    d_pair = _positions(preds.image_id, pair_ids)
    d_cat = _positions(preds.category_id, cats)
    # ``d["score"] >= self.threshold``
    d_cat = np.where(preds.score >= threshold, d_cat, -1)
    dt_rows, dt_start = _grouped(d_pair, d_cat, P)
    gt_rows, gt_start = [], []
    for cols in gts:
        g_pair = _positions(cols.image_id, pair_ids)
        g_cat = np.where(cols.iscrowd != 0, -1, _positions(cols.category_id, cats))
        rows, start = _grouped(g_pair, g_cat, P)
        gt_rows.append(rows)
        gt_start.append(start)
    return PairSelection(P, dt_rows, dt_start, gt_rows, gt_start)


def score_pairs(sel: PairSelection, preds, gts: list, iou_type: str, iou_thrs: np.ndarray,
                dilation_ratio: float = 0.02, num_threads: Optional[int] = None) -> EntryScores:
    """IoUs, matching and the per-entry numbers of every (pair, file): an
    :class:`EntryScores` of shape ``(P, F)`` (thresholds last), without ``fp`` and
    ``fn`` (:func:`.metrics.with_counts`)."""
    threads = resolve_threads(num_threads)
    P, F = sel.num_pairs, len(gts)
    thrs = np.ascontiguousarray(np.asarray(iou_thrs, np.float64))
    T = len(thrs)
    nd = sel.num_dt
    ng = sel.num_gt()
    width = ng.sum(axis=1) if F else np.zeros(P, np.int64)
    tp = np.zeros((P, F, T), np.int64)
    todo = np.flatnonzero((nd > 0) & (width > 0))
    if iou_type != "bbox":
        # the masks of the predictions of pairs without a ground truth (the IoU step
        # checks the others where it decodes them)
        _check_masks(preds, sel.dt_rows[np.repeat(width == 0, nd)])
    if len(todo):
        ious, pair_o, col = _ious(sel, preds, gts, todo, iou_type, dilation_ratio, threads)
        # entries: (IoU pair k, file f) with a ground truth
        k_idx, f_idx = np.nonzero(ng[todo] > 0)
        e_pair = k_idx.astype(np.int64)
        e_col = np.ascontiguousarray(col[k_idx, f_idx], np.int64)
        e_ng = np.ascontiguousarray(ng[todo][k_idx, f_idx], np.int64)
        out = np.zeros((len(e_pair), T), np.int64)
        pnd = np.ascontiguousarray(nd[todo], np.int64)
        pw = np.ascontiguousarray(width[todo], np.int64)
        cost = (pnd[e_pair] * e_ng).astype(np.float64) + 1.0
        ranges = split_by_cost(cost, threads * 4 if threads > 1 else 1)
        run_ranges(lambda lo, hi: _match.match_counts(ious, pair_o, pw, pnd, e_pair, e_col, e_ng, thrs, out,
                                                      lo, hi), ranges, threads)
        tp[todo[k_idx], f_idx] = out
    for f, cols in enumerate(gts):
        # the ground truths' RLE strings the IoU step did not decode (all of them for
        # boxes), checked now, once per file
        if not cols.strings_ok(num_threads=threads):
            raise NotNative(f"ground truth {f + 1} has a malformed RLE")
    # (the false positives and negatives are made for the entries the oracle keeps)
    return entry_scores(tp, np.broadcast_to(nd[:, None], (P, F)), ng, counts=False)


def _check_masks(preds, rows: np.ndarray, status: Optional[np.ndarray] = None) -> None:
    """NotNative unless the RLE strings of the prediction ``rows`` are well formed and
    cover their own size (``status``: theirs as the IoU step found it)."""
    if status is None:
        if not len(rows):
            return
        status = _rle.check_strings(preds.table(rows), np.ascontiguousarray(preds.seg_h[rows]),
                                    np.ascontiguousarray(preds.seg_w[rows]))
    if status.any():
        k = int(np.flatnonzero(status)[0])
        raise NotNative(f"prediction {int(rows[k])} of image {int(preds.image_id[rows[k]])} has a malformed RLE")


def _ious(sel: PairSelection, preds, gts: list, todo: np.ndarray, iou_type: str, dilation_ratio: float,
          threads: int):
    """The IoU matrices of the pairs ``todo``: each ``D x W`` (the pair's
    predictions against the ground truths of every file, file after file),
    row-major at ``pair_o``; ``col[k, f]``: where file ``f``'s columns start.
    The masks of the predictions and the ground truths are checked where they
    are decoded (:func:`_check_masks`, ``GroundTruthColumns.strings_ok``)."""
    F = len(gts)
    ng = sel.num_gt()[todo]
    nd = sel.num_dt[todo]
    width = ng.sum(axis=1)
    col = np.concatenate((np.zeros((len(todo), 1), np.int64), np.cumsum(ng, axis=1)[:, :-1]), axis=1) \
        if F else np.zeros((len(todo), 0), np.int64)
    # the ground truths of the pairs, file after file within a pair
    pieces, owner, fidx = [], [], []
    for f in range(F):
        start = sel.gt_start[f]
        lo, hi = start[todo], start[todo + 1]
        counts = hi - lo
        idx = np.repeat(lo - np.cumsum(np.concatenate(([0], counts[:-1]))), counts) + np.arange(counts.sum())
        pieces.append(sel.gt_rows[f][idx])
        owner.append(np.repeat(np.arange(len(todo)), counts))
        fidx.append(np.full(int(counts.sum()), f, np.int64))
    owner_all = np.concatenate(owner) if owner else np.zeros(0, np.int64)
    f_all = np.concatenate(fidx) if fidx else np.zeros(0, np.int64)
    rows_all = np.concatenate(pieces) if pieces else np.zeros(0, np.int64)
    order = np.lexsort((f_all, owner_all))  # stable: each file's order kept
    g_rows, g_file = rows_all[order], f_all[order]
    pair_g = np.concatenate(([0], np.cumsum(width))).astype(np.int64)
    # the predictions of the pairs
    dlo, dhi = sel.dt_start[todo], sel.dt_start[todo + 1]
    didx = np.repeat(dlo - np.cumsum(np.concatenate(([0], nd[:-1]))), nd) + np.arange(nd.sum())
    d_rows = sel.dt_rows[didx]
    pair_d = np.concatenate(([0], np.cumsum(nd))).astype(np.int64)
    pair_o = np.concatenate(([0], np.cumsum(nd * width))).astype(np.int64)
    G, D = len(g_rows), len(d_rows)
    gh = np.zeros(G, np.int64)
    gbox = np.zeros((G, 4), np.float64)
    for f, cols in enumerate(gts):
        m = g_file == f
        gh[m] = cols.height[g_rows[m]]
        if iou_type == "bbox":
            gbox[m] = cols.bbox[g_rows[m]]
    crowd = np.zeros(G, np.uint8)
    mode = _MODES[iou_type]
    out = np.zeros(int(pair_o[-1]), np.float64)
    extra = ()
    status = None
    if mode == 2:
        gm = gb = dm = db = _rle.StringTable([])
        dh = np.zeros(D, np.int64)
        dbox = np.ascontiguousarray(preds.bbox[d_rows])
    else:
        gm = _combined(gts, g_rows, g_file, lambda cols, r: cols.mask_spans(r))
        dm = preds.table(d_rows)
        dh = np.ascontiguousarray(preds.seg_h[d_rows])
        dbox = np.zeros((D, 4), np.float64)
        dw = np.ascontiguousarray(preds.seg_w[d_rows])
        status = np.full(D, 255, np.uint8)
        gw = np.zeros(G, np.int64)
        for f, cols in enumerate(gts):
            m = g_file == f
            gw[m] = cols.width[g_rows[m]]
        # the ground truths' strings are checked where they are decoded too
        gstatus = np.full(G, 255, np.uint8)
        check = (gh * gw, gstatus)
        if mode == 0:
            gb, db = gm, dm
            extra = (dw, None, None, None, status, True) + check
        else:
            # the boundaries of both sides are made inside the IoU step from the masks it
            # decodes anyway and used as runs (one decode each, no string written and read)
            ratio = check_dilation_ratio(dilation_ratio)
            gb = db = _rle.StringTable([])
            extra = (dw, dilation_pixels_array(dh, dw, ratio), gw, dilation_pixels_array(gh, gw, ratio), status,
                     False) + check
    G_p = np.diff(pair_g)
    cost = (8.0 * nd * G_p + nd + G_p).astype(np.float64)
    ranges = split_by_cost(cost, threads * 16 if threads > 1 else 1)
    run_ranges(lambda lo, hi: _iou.iou_pairs(mode, gm, gb, gh, crowd, gbox, dm, db, dh, dbox, pair_g, pair_d,
                                             pair_o, out, lo, hi, *extra), ranges, threads)
    if status is not None:
        _check_masks(preds, d_rows, status)
        for f, cols in enumerate(gts):
            m = g_file == f
            if not cols.strings_ok(g_rows[m], gstatus[m], threads):
                raise NotNative(f"ground truth {f + 1} has a malformed RLE")
    return out, pair_o, col


def _combined(gts: list, rows: np.ndarray, file: np.ndarray, spans):
    """One ``StringTable`` of strings of several files' columns: ``rows[i]`` of
    file ``file[i]``; ``spans(columns, rows)`` says where a file's lie."""
    buffers: list = []
    which = np.zeros(len(rows), np.int64)
    start = np.zeros(len(rows), np.int64)
    length = np.zeros(len(rows), np.int64)
    for f, cols in enumerate(gts):
        m = np.flatnonzero(file == f)
        if not len(m):
            continue
        bufs, w, s, l = spans(cols, rows[m])
        which[m] = np.asarray(w, np.int64) + len(buffers)
        start[m] = s
        length[m] = l
        buffers.extend(bufs)
    return _rle.StringTable.from_buffers(buffers, which, start, length)
