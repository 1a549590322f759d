# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Panoptic kernels (Boundary PQ / PQ on COCO panoptic PNGs): colour images to
segment ids, pair counts of two id maps and the per-segment boundary statistics
of segment pairs.

Private module (``boundary_api.panoptic._kernels``).  A panoptic image is an H x W
map of uint32 segment ids in C order; segment runs and boundaries come from
``boundary_api.masks._idmaps`` (row-major positions, see there).
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from boundary_api.masks._rle cimport I64Vec, _area, _intersection, _new_vecs, _free_vecs
from boundary_api.masks._boundary cimport BoundaryWork, _bw_init, _bw_free, _boundary, _entry_d
from boundary_api.masks._idmaps cimport _pan_run_vecs, _check_sorted_ids

import numpy as np


cdef extern from *:
    """
    static inline unsigned long long ba_pan_mix(unsigned long long k) {
        k ^= k >> 33;
        k *= 0xff51afd7ed558ccdULL;
        k ^= k >> 33;
        return k;
    }
    """
    unsigned long long ba_pan_mix(unsigned long long k) nogil


# open-addressing table uint64 key -> int64 count; a slot is free iff its
# count is 0 (every stored key has a count >= 1)
cdef struct PairTable:
    uint64_t* keys
    int64_t* cnt
    Py_ssize_t cap
    Py_ssize_t n

cdef int _pt_init(PairTable* t, Py_ssize_t cap) noexcept nogil:
    t.keys = <uint64_t*> malloc(cap * sizeof(uint64_t))
    t.cnt = <int64_t*> malloc(cap * sizeof(int64_t))
    t.cap = cap
    t.n = 0
    if t.keys == NULL or t.cnt == NULL:
        return -1
    memset(t.cnt, 0, cap * sizeof(int64_t))
    return 0

cdef inline void _pt_free(PairTable* t) noexcept nogil:
    free(t.keys)
    free(t.cnt)
    t.keys = NULL
    t.cnt = NULL

cdef inline Py_ssize_t _pt_slot(uint64_t* keys, int64_t* cnt, Py_ssize_t cap, uint64_t key) noexcept nogil:
    cdef Py_ssize_t i = <Py_ssize_t> (ba_pan_mix(key) & <uint64_t> (cap - 1))
    while cnt[i] != 0 and keys[i] != key:
        i = (i + 1) & (cap - 1)
    return i

cdef int _pt_add(PairTable* t, uint64_t key, int64_t c) noexcept nogil:
    cdef Py_ssize_t i, j, cap
    cdef uint64_t* nk
    cdef int64_t* nc
    if 2 * (t.n + 1) > t.cap:
        cap = 2 * t.cap
        nk = <uint64_t*> malloc(cap * sizeof(uint64_t))
        nc = <int64_t*> malloc(cap * sizeof(int64_t))
        if nk == NULL or nc == NULL:
            free(nk)
            free(nc)
            return -1
        memset(nc, 0, cap * sizeof(int64_t))
        for i in range(t.cap):
            if t.cnt[i] != 0:
                j = _pt_slot(nk, nc, cap, t.keys[i])
                nk[j] = t.keys[i]
                nc[j] = t.cnt[i]
        free(t.keys)
        free(t.cnt)
        t.keys = nk
        t.cnt = nc
        t.cap = cap
    i = _pt_slot(t.keys, t.cnt, t.cap, key)
    if t.cnt[i] == 0:
        t.keys[i] = key
        t.n += 1
    t.cnt[i] += c
    return 0


def pan_color_to_id(const uint8_t[:, :, ::1] img, bint bgr=False):
    """Segment id map of a colour panoptic PNG: ``R + 256 G + 65536 B``.

    Parameters
    ----------
    img : (H, W, C) uint8 array, C >= 3, C-contiguous
        RGB(A) pixels, or BGR(A) as OpenCV reads them when ``bgr`` is true.
    bgr : bool
        Channel order of ``img``.

    Returns
    -------
    (H, W) uint32 ndarray
    """
    cdef Py_ssize_t H = img.shape[0], W = img.shape[1], C = img.shape[2], y, x
    cdef Py_ssize_t ri = 2 if bgr else 0, bi = 0 if bgr else 2
    if C < 3:
        raise ValueError(f"a colour panoptic image needs at least 3 channels, got {C}")
    out = np.empty((H, W), np.uint32)
    cdef uint32_t[:, ::1] o = out
    cdef const uint8_t* row
    cdef uint32_t* dst
    if H == 0 or W == 0:
        return out
    with nogil:
        for y in range(H):
            row = &img[y, 0, 0]
            dst = &o[y, 0]
            for x in range(W):
                dst[x] = (<uint32_t> row[ri]) | ((<uint32_t> row[1]) << 8) | ((<uint32_t> row[bi]) << 16)
                row += C
    return out


def pan_pair_counts(const uint32_t[:, ::1] gt, const uint32_t[:, ::1] pred):
    """Joint histogram of two id maps of the same shape.

    Parameters
    ----------
    gt, pred : (H, W) uint32 arrays, C-contiguous

    Returns
    -------
    keys : (K,) uint64 ndarray
        ``gt_id << 32 | pred_id`` of every pair that occurs, ascending (so
        ordered by ground truth id, then predicted id).
    counts : (K,) int64 ndarray
        Number of pixels of each pair.
    """
    cdef Py_ssize_t H = gt.shape[0], W = gt.shape[1], N, i, j
    cdef const uint32_t* g
    cdef const uint32_t* p
    cdef uint64_t cur, k
    cdef int64_t run
    cdef PairTable t
    cdef int err = 0
    if pred.shape[0] != H or pred.shape[1] != W:
        raise ValueError(f"id maps differ in size: {H}x{W} and {pred.shape[0]}x{pred.shape[1]}")
    N = H * W
    if N == 0:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    g = &gt[0, 0]
    p = &pred[0, 0]
    if _pt_init(&t, 256) != 0:
        _pt_free(&t)
        raise MemoryError()
    with nogil:
        cur = ((<uint64_t> g[0]) << 32) | p[0]
        run = 1
        for i in range(1, N):
            k = ((<uint64_t> g[i]) << 32) | p[i]
            if k == cur:
                run += 1
            else:
                if _pt_add(&t, cur, run) != 0:
                    err = 1
                    break
                cur = k
                run = 1
        if not err and _pt_add(&t, cur, run) != 0:
            err = 1
    if err:
        _pt_free(&t)
        raise MemoryError()
    keys = np.empty(t.n, np.uint64)
    counts = np.empty(t.n, np.int64)
    cdef uint64_t[::1] ko = keys
    cdef int64_t[::1] co = counts
    j = 0
    for i in range(t.cap):
        if t.cnt[i] != 0:
            ko[j] = t.keys[i]
            co[j] = t.cnt[i]
            j += 1
    _pt_free(&t)
    order = np.argsort(keys, kind="stable")
    return keys[order], counts[order]


# --------------------------------------------------------------------------
# on runs (see boundary_api.masks._idmaps.pan_ids_to_runs): the images as the
# PNG decoder gives them, without an id map
# --------------------------------------------------------------------------

cdef struct KeyCount:
    uint64_t key
    int64_t cnt

cdef extern from "stdlib.h":
    void qsort(void* base, size_t n, size_t size, int (*cmp)(const void*, const void*) noexcept nogil) nogil

cdef int _cmp_key(const void* a, const void* b) noexcept nogil:
    cdef uint64_t x = (<const KeyCount*> a).key, y = (<const KeyCount*> b).key
    return -1 if x < y else (1 if x > y else 0)


cdef _check_runs(const int64_t[::1] ends, const uint32_t[::1] ids, str name):
    cdef Py_ssize_t n = ends.shape[0], r
    if ids.shape[0] != n:
        raise ValueError(f"{name}: ends and ids differ in length")
    for r in range(n):
        if ends[r] <= (ends[r - 1] if r > 0 else 0):
            raise ValueError(f"{name}: run ends must increase from above 0")


def pan_run_pair_counts(const int64_t[::1] gt_ends, const uint32_t[::1] gt_ids,
                        const int64_t[::1] pred_ends, const uint32_t[::1] pred_ids):
    """Joint histogram of two images given as runs (:func:`pan_pair_counts` on runs).

    Parameters
    ----------
    gt_ends, gt_ids, pred_ends, pred_ids : int64 / uint32 arrays
        The runs of the two images (same number of pixels).

    Returns
    -------
    gt_id, pred_id, count : lists of int
        Every pair of ids that occurs on some pixel and its number of pixels,
        ordered by ground truth id, then predicted id.
    """
    cdef Py_ssize_t ng = gt_ends.shape[0], np_ = pred_ends.shape[0], i = 0, j = 0, m
    cdef int64_t pos = 0, e, run = 0
    cdef uint64_t cur = 0, k
    cdef PairTable t
    cdef int err = 0
    cdef KeyCount* kc
    _check_runs(gt_ends, gt_ids, "ground truth runs")
    _check_runs(pred_ends, pred_ids, "predicted runs")
    if (ng == 0) != (np_ == 0) or (ng and gt_ends[ng - 1] != pred_ends[np_ - 1]):
        raise ValueError("the two images differ in size")
    if ng == 0:
        return [], [], []
    if _pt_init(&t, 256) != 0:
        _pt_free(&t)
        raise MemoryError()
    with nogil:
        while i < ng:
            e = gt_ends[i] if gt_ends[i] < pred_ends[j] else pred_ends[j]
            k = ((<uint64_t> gt_ids[i]) << 32) | pred_ids[j]
            if run and k == cur:
                run += e - pos
            else:
                if run and _pt_add(&t, cur, run) != 0:
                    err = 1
                    break
                cur = k
                run = e - pos
            pos = e
            if gt_ends[i] == e:
                i += 1
            if pred_ends[j] == e:
                j += 1
        if not err and run and _pt_add(&t, cur, run) != 0:
            err = 1
    if err:
        _pt_free(&t)
        raise MemoryError()
    kc = <KeyCount*> malloc((t.n if t.n else 1) * sizeof(KeyCount))
    if kc == NULL:
        _pt_free(&t)
        raise MemoryError()
    m = 0
    for i in range(t.cap):
        if t.cnt[i] != 0:
            kc[m].key = t.keys[i]
            kc[m].cnt = t.cnt[i]
            m += 1
    _pt_free(&t)
    qsort(kc, m, sizeof(KeyCount), _cmp_key)
    try:
        g = [None] * m
        p = [None] * m
        c = [None] * m
        for i in range(m):
            g[i] = <uint32_t> (kc[i].key >> 32)
            p[i] = <uint32_t> (kc[i].key & 0xFFFFFFFFU)
            c[i] = kc[i].cnt
    finally:
        free(kc)
    return g, p, c


def pan_run_boundary_pairs(const int64_t[::1] gt_ends, const uint32_t[::1] gt_ids,
                           const int64_t[::1] pred_ends, const uint32_t[::1] pred_ids,
                           Py_ssize_t H, Py_ssize_t W,
                           const uint32_t[::1] gt_sel, const uint32_t[::1] pred_sel,
                           const int64_t[::1] pair_g, const int64_t[::1] pair_p, d):
    """:func:`pan_boundary_pairs` of two H x W images given as runs.

    Returns
    -------
    gt_area, pred_area, inter, pred_void : lists of int
        Per pair, as :func:`pan_boundary_pairs`.
    """
    cdef Py_ssize_t kg = gt_sel.shape[0], kp = pred_sel.shape[0], P = pair_g.shape[0]
    cdef Py_ssize_t i, j
    cdef I64Vec* gm = NULL
    cdef I64Vec* gb = NULL
    cdef I64Vec* pm = NULL
    cdef I64Vec* pb = NULL
    cdef I64Vec gv
    cdef I64Vec* a
    cdef I64Vec* b
    cdef BoundaryWork ws
    cdef int64_t dd
    cdef int err = 0
    _check_runs(gt_ends, gt_ids, "ground truth runs")
    _check_runs(pred_ends, pred_ids, "predicted runs")
    if H < 0 or W < 0 or gt_ends.shape[0] == 0 or gt_ends[gt_ends.shape[0] - 1] != H * W \
            or pred_ends.shape[0] == 0 or pred_ends[pred_ends.shape[0] - 1] != H * W:
        raise ValueError(f"the runs do not cover a {H}x{W} image")
    if pair_p.shape[0] != P:
        raise ValueError("pair_g and pair_p differ in length")
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    _check_sorted_ids(gt_sel, "gt_sel")
    _check_sorted_ids(pred_sel, "pred_sel")
    for i in range(P):
        if pair_g[i] < 0 or pair_g[i] >= kg or pair_p[i] < 0 or pair_p[i] >= kp:
            raise ValueError(f"pair {i} indexes outside gt_sel/pred_sel")
    if P == 0:
        return [], [], [], []
    cdef int64_t* out = <int64_t*> malloc(4 * P * sizeof(int64_t))
    if out == NULL:
        raise MemoryError()
    dd = _entry_d(d, H, W)
    _bw_init(&ws)
    gv.data = NULL
    gv.n = gv.cap = 0
    with nogil:
        gm = _new_vecs(kg)
        gb = _new_vecs(kg)
        pm = _new_vecs(kp)
        pb = _new_vecs(kp)
        if gm == NULL or gb == NULL or pm == NULL or pb == NULL:
            err = 1
        if not err and _pan_run_vecs(&gt_ends[0], &gt_ids[0], gt_ends.shape[0], &gt_sel[0], kg, gm, &gv) != 0:
            err = 1
        if not err and _pan_run_vecs(&pred_ends[0], &pred_ids[0], pred_ends.shape[0], &pred_sel[0], kp, pm,
                                     NULL) != 0:
            err = 1
        j = 0
        while not err and j < kg:
            if _boundary(gm[j].data, gm[j].n, W, H, dd, &ws, &gb[j]) != 0:
                err = 1
            j += 1
        j = 0
        while not err and j < kp:
            if _boundary(pm[j].data, pm[j].n, W, H, dd, &ws, &pb[j]) != 0:
                err = 1
            j += 1
        if not err:
            for i in range(P):
                a = &gb[pair_g[i]]
                b = &pb[pair_p[i]]
                out[i] = _area(a.data, a.n)
                out[P + i] = _area(b.data, b.n)
                out[2 * P + i] = _intersection(a.data, a.n, b.data, b.n)
                out[3 * P + i] = _intersection(b.data, b.n, gv.data, gv.n)
        _free_vecs(gm, kg)
        _free_vecs(gb, kg)
        _free_vecs(pm, kp)
        _free_vecs(pb, kp)
        _bw_free(&ws)
        free(gv.data)
    try:
        if err:
            raise MemoryError()
        return ([out[i] for i in range(P)], [out[P + i] for i in range(P)],
                [out[2 * P + i] for i in range(P)], [out[3 * P + i] for i in range(P)])
    finally:
        free(out)
