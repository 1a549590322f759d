# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Kernels on id maps (H x W maps of uint32 segment ids in C order): the runs of
chosen segments and their boundaries, shared by the panoptic and Cityscapes kernels.

Private module (``boundary_api.masks._idmaps``).  Segment runs are collected along
rows: the row-major positions of an H x W image are the column-major positions of
its W x H transpose, and the boundary (erosion by a square, outside the image =
background) commutes with transposition, so ``_boundary`` is called with h = W and
w = H and its intervals are then row-major positions of the original image.  Same
kernel as the instance path, one segment at a time, only over the segment's
bounding box.
"""

from libc.stdint cimport int32_t, int64_t, uint32_t
from libc.string cimport memset

from boundary_api.masks._rle cimport I64Vec, _push_interval, _area, _new_vecs, _free_vecs
from boundary_api.masks._boundary cimport BoundaryWork, _bw_init, _bw_free, _boundary, _entry_d

import numpy as np


# index of ``v`` in the sorted array ``sel[0:k]``, or -1
cdef inline Py_ssize_t _pan_find(const uint32_t* sel, Py_ssize_t k, uint32_t v) noexcept nogil:
    cdef Py_ssize_t lo = 0, hi = k, mid
    while lo < hi:
        mid = (lo + hi) >> 1
        if sel[mid] < v:
            lo = mid + 1
        else:
            hi = mid
    if lo < k and sel[lo] == v:
        return lo
    return -1


# Append to vecs[j] the maximal ones-intervals (row-major positions) of the
# segment sel[j], for every j, in one pass over the H x W id map.
cdef int _pan_runs(const uint32_t* ids, int64_t H, int64_t W, const uint32_t* sel, Py_ssize_t k,
                   I64Vec* vecs) noexcept nogil:
    cdef int64_t y, x, x0, base
    cdef uint32_t v, last_v = 0
    cdef Py_ssize_t j = -1
    cdef int have_last = 0
    if k == 0:
        return 0
    for y in range(H):
        base = y * W
        x = 0
        while x < W:
            v = ids[base + x]
            x0 = x
            x += 1
            while x < W and ids[base + x] == v:
                x += 1
            if not have_last or v != last_v:
                j = _pan_find(sel, k, v)
                last_v = v
                have_last = 1
            if j >= 0:
                if _push_interval(&vecs[j], 0, base + x0, base + x) != 0:
                    return -1
    return 0


cdef _check_sorted_ids(const uint32_t[::1] sel, str name):
    cdef Py_ssize_t j
    for j in range(1, sel.shape[0]):
        if sel[j] <= sel[j - 1]:
            raise ValueError(f"{name} must be sorted and distinct")


def pan_segment_boundaries(const uint32_t[:, ::1] ids, const uint32_t[::1] sel, d):
    """Boundaries of the segments ``sel`` of an id map, as a label map.

    Parameters
    ----------
    ids : (H, W) uint32 array, C-contiguous
        Segment id map.
    sel : uint32 array
        Sorted, distinct ids of the segments wanted.
    d : int
        Erosion radius in pixels (>= 1; any larger value is safe: beyond a
        segment's box it makes the whole segment its boundary).

    Returns
    -------
    bmap : (H, W) uint32 ndarray
        The segment's id on each pixel of a wanted segment's boundary, 0
        elsewhere (segments are disjoint, so this is well defined).
    area : (K,) int64 ndarray
        Boundary area of each wanted segment.
    """
    cdef Py_ssize_t H = ids.shape[0], W = ids.shape[1], k = sel.shape[0], j, i
    cdef int64_t pos
    cdef uint32_t v
    cdef I64Vec* m = NULL
    cdef I64Vec* b = NULL
    cdef BoundaryWork ws
    cdef int64_t dd
    cdef int err = 0
    if d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    _check_sorted_ids(sel, "sel")
    bmap = np.zeros((H, W), np.uint32)
    area = np.zeros(k, np.int64)
    cdef uint32_t[:, ::1] bo = bmap
    cdef int64_t[::1] ao = area
    if k == 0 or H * W == 0:
        return bmap, area
    cdef uint32_t* out = &bo[0, 0]
    dd = _entry_d(d, H, W)
    _bw_init(&ws)
    with nogil:
        m = _new_vecs(k)
        b = _new_vecs(k)
        if m == NULL or b == NULL:
            err = 1
        if not err and _pan_runs(&ids[0, 0], H, W, &sel[0], k, m) != 0:
            err = 1
        j = 0
        while not err and j < k:
            if _boundary(m[j].data, m[j].n, W, H, dd, &ws, &b[j]) != 0:
                err = 1
                break
            v = sel[j]
            ao[j] = _area(b[j].data, b[j].n)
            i = 0
            while i < b[j].n:
                for pos in range(b[j].data[i], b[j].data[i + 1]):
                    out[pos] = v
                i += 2
            j += 1
        _free_vecs(m, k)
        _free_vecs(b, k)
        _bw_free(&ws)
    if err:
        raise MemoryError()
    return bmap, area


# --------------------------------------------------------------------------
# runs: an id map as its maximal stretches of one id in row-major order
# (``ends[i]`` the end of run i, which starts where run i - 1 ends; ``ids[i]``
# its id), the form panoptic evaluation works on
# --------------------------------------------------------------------------

def pan_ids_to_runs(const uint32_t[:, ::1] ids):
    """Runs of an id map.

    Parameters
    ----------
    ids : (H, W) uint32 array, C-contiguous

    Returns
    -------
    ends : (R,) int64 ndarray
        Row-major end of each run (the last is ``H * W``).
    run_ids : (R,) uint32 ndarray
        Id of each run; consecutive runs differ.
    """
    cdef Py_ssize_t N = ids.shape[0] * ids.shape[1], i, r = 0
    if N == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.uint32)
    cdef const uint32_t* p = &ids[0, 0]
    # count first, then fill
    cdef Py_ssize_t n = 1
    with nogil:
        for i in range(1, N):
            if p[i] != p[i - 1]:
                n += 1
    ends = np.empty(n, np.int64)
    run_ids = np.empty(n, np.uint32)
    cdef int64_t[::1] eo = ends
    cdef uint32_t[::1] io = run_ids
    with nogil:
        for i in range(1, N):
            if p[i] != p[i - 1]:
                eo[r] = i
                io[r] = p[i - 1]
                r += 1
        eo[r] = N
        io[r] = p[N - 1]
    return ends, run_ids


def pan_runs_to_ids(const int64_t[::1] ends, const uint32_t[::1] run_ids, Py_ssize_t H, Py_ssize_t W):
    """The (H, W) uint32 id map of runs (the inverse of :func:`pan_ids_to_runs`)."""
    cdef Py_ssize_t n = ends.shape[0], r
    cdef int64_t pos = 0, e
    cdef uint32_t v
    if run_ids.shape[0] != n:
        raise ValueError("ends and run_ids differ in length")
    if (n == 0 and H * W != 0) or (n > 0 and ends[n - 1] != H * W):
        raise ValueError(f"the runs do not cover a {H}x{W} image")
    for r in range(n):
        if ends[r] <= (ends[r - 1] if r > 0 else 0):
            raise ValueError("run ends must increase")
    out = np.empty((H, W), np.uint32)
    if n == 0:
        return out
    cdef uint32_t[:, ::1] o = out
    cdef uint32_t* q = &o[0, 0]
    with nogil:
        for r in range(n):
            e = ends[r]
            v = run_ids[r]
            while pos < e:
                q[pos] = v
                pos += 1
    return out


DEF _RUN_TABLE = 512   # slots of the id -> index table of _pan_run_vecs (at most half full)


cdef int _pan_run_vecs(const int64_t* ends, const uint32_t* ids, Py_ssize_t n, const uint32_t* sel,
                       Py_ssize_t k, I64Vec* vecs, I64Vec* void_runs) noexcept nogil:
    cdef Py_ssize_t r, j
    cdef int64_t s = 0
    cdef uint32_t v
    cdef uint32_t key[_RUN_TABLE]
    cdef int32_t slot[_RUN_TABLE]    # index into sel + 1; 0: free
    cdef bint table = 0 < k <= _RUN_TABLE // 2
    if table:
        # a few dozen segments are wanted out of thousands of runs: an
        # open-addressing table answers a run's id in a probe or two
        memset(slot, 0, sizeof(slot))
        for j in range(k):
            r = (sel[j] * 2654435761U) & (_RUN_TABLE - 1)
            while slot[r] != 0:
                r = (r + 1) & (_RUN_TABLE - 1)
            key[r] = sel[j]
            slot[r] = <int32_t> (j + 1)
    for r in range(n):
        v = ids[r]
        if v == 0 and void_runs != NULL:
            if _push_interval(void_runs, 0, s, ends[r]) != 0:
                return -1
        if table:
            j = (v * 2654435761U) & (_RUN_TABLE - 1)
            while slot[j] != 0 and key[j] != v:
                j = (j + 1) & (_RUN_TABLE - 1)
            j = slot[j] - 1
        elif k > 0:
            j = _pan_find(sel, k, v)
        else:
            j = -1
        if j >= 0 and _push_interval(&vecs[j], 0, s, ends[r]) != 0:
            return -1
        s = ends[r]
    return 0
