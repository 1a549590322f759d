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

from libc.stdint cimport int64_t, uint32_t

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
