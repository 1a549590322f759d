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
from boundary_api.masks._idmaps cimport _pan_runs, _check_sorted_ids

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


def pan_boundary_pairs(const uint32_t[:, ::1] gt, const uint32_t[:, ::1] pred,
                       const uint32_t[::1] gt_sel, const uint32_t[::1] pred_sel,
                       const int64_t[::1] pair_g, const int64_t[::1] pair_p, d):
    """Boundary statistics of ground truth / predicted segment pairs.

    Pair ``i`` is ground truth segment ``gt_sel[pair_g[i]]`` of ``gt`` and
    predicted segment ``pred_sel[pair_p[i]]`` of ``pred``.  Each segment's
    boundary is computed once, on its own mask (see the module notes).

    Parameters
    ----------
    gt, pred : (H, W) uint32 arrays, C-contiguous
        Segment id maps.
    gt_sel, pred_sel : uint32 arrays
        Sorted, distinct segment ids.
    pair_g, pair_p : (P,) int64 arrays
        Indices into ``gt_sel`` and ``pred_sel``.
    d : int
        Erosion radius in pixels (>= 1; any larger value is safe: beyond a
        segment's box it makes the whole segment its boundary).

    Returns
    -------
    gt_area, pred_area, inter, pred_void : (P,) int64 ndarrays
        Boundary areas of the two segments, the size of the intersection of
        their boundaries, and the number of pixels of the predicted boundary
        where ``gt`` is 0.
    """
    cdef Py_ssize_t H = gt.shape[0], W = gt.shape[1]
    cdef Py_ssize_t kg = gt_sel.shape[0], kp = pred_sel.shape[0], P = pair_g.shape[0]
    cdef Py_ssize_t i, j
    cdef int64_t pos, c
    cdef I64Vec* gm = NULL
    cdef I64Vec* gb = NULL
    cdef I64Vec* pm = NULL
    cdef I64Vec* pb = NULL
    cdef I64Vec* a
    cdef I64Vec* b
    cdef BoundaryWork ws
    cdef int64_t dd
    cdef const uint32_t* g
    cdef int err = 0
    if pred.shape[0] != H or pred.shape[1] != W:
        raise ValueError(f"id maps differ in size: {H}x{W} and {pred.shape[0]}x{pred.shape[1]}")
    if pair_p.shape[0] != P:
        raise ValueError("pair_g and pair_p differ in length")
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    _check_sorted_ids(gt_sel, "gt_sel")
    _check_sorted_ids(pred_sel, "pred_sel")
    for i in range(P):
        if pair_g[i] < 0 or pair_g[i] >= kg or pair_p[i] < 0 or pair_p[i] >= kp:
            raise ValueError(f"pair {i} indexes outside gt_sel/pred_sel")
    ga = np.zeros(P, np.int64)
    pa = np.zeros(P, np.int64)
    inter = np.zeros(P, np.int64)
    pv = np.zeros(P, np.int64)
    cdef int64_t[::1] gao = ga, pao = pa, io = inter, pvo = pv
    if P == 0 or H * W == 0:
        return ga, pa, inter, pv
    g = &gt[0, 0]
    dd = _entry_d(d, H, W)
    _bw_init(&ws)
    with nogil:
        gm = _new_vecs(kg)
        gb = _new_vecs(kg)
        pm = _new_vecs(kp)
        pb = _new_vecs(kp)
        if gm == NULL or gb == NULL or pm == NULL or pb == NULL:
            err = 1
        if not err and _pan_runs(g, H, W, &gt_sel[0], kg, gm) != 0:
            err = 1
        if not err and _pan_runs(&pred[0, 0], H, W, &pred_sel[0], kp, pm) != 0:
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
                gao[i] = _area(a.data, a.n)
                pao[i] = _area(b.data, b.n)
                io[i] = _intersection(a.data, a.n, b.data, b.n)
                c = 0
                j = 0
                while j < b.n:
                    for pos in range(b.data[j], b.data[j + 1]):
                        if g[pos] == 0:
                            c += 1
                    j += 2
                pvo[i] = c
        _free_vecs(gm, kg)
        _free_vecs(gb, kg)
        _free_vecs(pm, kp)
        _free_vecs(pb, kp)
        _bw_free(&ws)
    if err:
        raise MemoryError()
    return ga, pa, inter, pv
