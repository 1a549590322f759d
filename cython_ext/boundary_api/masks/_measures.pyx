# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The segmentation measures side by side (``boundary_api.masks.measures``).

Private module (``boundary_api.masks._measures``).
"""

# The segmentation measures of boundary_api.measures (Mask IoU,
# pixel accuracy, Trimap IoU, F-measure, mF-measure, Boundary IoU, Multiscale IoU): per
# mask, a fixed list of ones-interval sets ("features": the mask, its contour, its
# boundary, two-sided bands of the contour, grid cells of the contour); per pair, the
# sizes of intersections of features.  Every measure is a ratio of such counts.
#
# Feature slots of one mask (unrequested slots are empty):
#   0 mask M
#   1 contour X_1 = M AND NOT erode(M, 3x3)            (_boundary with d = 1)
#   2 boundary M AND NOT erode(M, (2d+1)^2)            (_boundary with the given d)
#   3 .. 3+nb-1      band X_{d_k} = dilate(X_1, (2 d_k + 1)^2), clipped to the image
#   3+nb             inner band M AND X_{d_0}
#   4+nb .. 4+nb+ns-1  cells of X_1 on grids of 2^k x 2^k pixels (coarse column-major)

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free
from libc.string cimport memset, memcpy

from boundary_api.masks._rle cimport (I64Vec, WordBuf, StringTable, _words_reserve, _i64_reserve,
                                      _push_interval, _decode, _bbox, _intersection)
from boundary_api.masks._boundary cimport BoundaryWork, _bw_init, _bw_free, _boundary, _set_bits, ba_ctz64, _push_bits

import numpy as np


# Append the runs of ``ncol`` column bitsets (``nw`` words each; column x holds rows
# y0 .. of image column x0 + x, in an image of height h) to ``out``, in order, as
# part of the set that starts at ``out[first]`` (never merged into an earlier set).
cdef int _m_emit(const uint64_t* bits, int64_t ncol, int64_t nw, int64_t x0, int64_t y0,
                 int64_t h, I64Vec* out, Py_ssize_t first) noexcept nogil:
    cdef int64_t x, k, base
    for x in range(ncol):
        base = (x0 + x) * h + y0
        for k in range(nw):
            if _push_bits(out, first, base + k * 64, bits[x * nw + k]) != 0:
                return -1
    return 0


# Dilation of a set of pixels (maximal ones-intervals of an h x w image) by a
# (2d+1) x (2d+1) square, clipped to the image.  Works on the set's bounding box
# grown by d: each column a bitset; the vertical dilation on the runs (a run
# [a, b) of a column grows to [a-d, b+d)), the horizontal one with van
# Herk/Gil-Werman block prefix/suffix ORs over columns, so the cost is
# O(runs + box_width * box_height / 64), whatever d.  Appends to ``out``.
cdef int _m_dilate(const int64_t* se, Py_ssize_t n, int64_t h, int64_t w, int64_t d,
                   WordBuf* ws, I64Vec* out) noexcept nogil:
    cdef Py_ssize_t first = out.n
    cdef int64_t bb[4]
    cdef int64_t X0, X1, Y0, Y1, hb, wb, nw, K, x, lo, hi, s, e, cs, ce, col, a, b, k
    cdef Py_ssize_t i
    cdef uint64_t* V
    cdef uint64_t* P
    cdef uint64_t* S
    if n == 0:
        return 0
    _bbox(se, n, h, bb)
    X0 = bb[0] - d if bb[0] > d else 0
    X1 = bb[1] + d if bb[1] + d < w else w
    Y0 = bb[2] - d if bb[2] > d else 0
    Y1 = bb[3] + d if bb[3] + d < h else h
    hb = Y1 - Y0
    wb = X1 - X0
    nw = (hb + 63) >> 6
    if _words_reserve(ws, 3 * wb * nw) != 0:
        return -1
    V = ws.data
    P = V + wb * nw
    S = P + wb * nw
    memset(V, 0, wb * nw * sizeof(uint64_t))
    i = 0
    while i < n:
        s = se[i]
        e = se[i + 1]
        cs = s // h
        ce = (e - 1) // h
        col = cs
        while col <= ce:
            a = s - col * h if col == cs else 0
            b = e - col * h if col == ce else h
            a = a - d if a - d > Y0 else Y0
            b = b + d if b + d < Y1 else Y1
            _set_bits(V + (col - X0) * nw, a - Y0, b - Y0)
            col += 1
        i += 2
    if d > 0 and wb > 1:
        K = 2 * d + 1
        # P[x]: OR of V from the start of x's block to x; S[x]: from x to the end
        # of x's block (or of the box)
        for x in range(wb):
            if x % K == 0:
                memcpy(P + x * nw, V + x * nw, nw * sizeof(uint64_t))
            else:
                for k in range(nw):
                    P[x * nw + k] = V[x * nw + k] | P[(x - 1) * nw + k]
        x = wb - 1
        while x >= 0:
            if x == wb - 1 or (x + 1) % K == 0:
                memcpy(S + x * nw, V + x * nw, nw * sizeof(uint64_t))
            else:
                for k in range(nw):
                    S[x * nw + k] = V[x * nw + k] | S[(x + 1) * nw + k]
            x -= 1
        # V[x] becomes the OR over the window [x-d, x+d] clipped to the box: the
        # window spans at most two blocks; a window inside one block either
        # starts at the block's start or (clipped) ends at the box's end.
        for x in range(wb):
            lo = x - d if x > d else 0
            hi = x + d if x + d < wb else wb - 1
            if lo // K == hi // K:
                if lo % K == 0:
                    memcpy(V + x * nw, P + hi * nw, nw * sizeof(uint64_t))
                else:
                    memcpy(V + x * nw, S + lo * nw, nw * sizeof(uint64_t))
            else:
                for k in range(nw):
                    V[x * nw + k] = S[lo * nw + k] | P[hi * nw + k]
    return _m_emit(V, wb, nw, X0, Y0, h, out, first)


# Intersection of two interval lists, appended to ``out``.
cdef int _m_and(const int64_t* a, Py_ssize_t na, const int64_t* b, Py_ssize_t nb, I64Vec* out) noexcept nogil:
    cdef Py_ssize_t i = 0, j = 0, first = out.n
    cdef int64_t s, e
    while i < na and j < nb:
        s = a[i] if a[i] > b[j] else b[j]
        e = a[i + 1] if a[i + 1] < b[j + 1] else b[j + 1]
        if e > s:
            if _push_interval(out, first, s, e) != 0:
                return -1
        if a[i + 1] < b[j + 1]:
            i += 2
        else:
            j += 2
    return 0


# The cells of a 2^shift x 2^shift grid (anchored at the image's top-left corner,
# partial cells at the right and bottom edges included) that hold at least one
# pixel of the set, as intervals of cell positions in the coarse grid's
# column-major order (cx * hc + cy, hc = ceil(h / 2^shift)).
cdef int _m_cells(const int64_t* se, Py_ssize_t n, int64_t h, int shift,
                  WordBuf* ws, I64Vec* out) noexcept nogil:
    cdef int64_t hc, nw, s, e, cs, ce, col, a, b, cx, cur = -1
    cdef Py_ssize_t i, first = out.n
    cdef uint64_t* C
    if n == 0:
        return 0
    if shift == 0:
        i = 0
        while i < n:
            if _push_interval(out, first, se[i], se[i + 1]) != 0:
                return -1
            i += 2
        return 0
    hc = (h + (1 << shift) - 1) >> shift
    nw = (hc + 63) >> 6
    if _words_reserve(ws, nw) != 0:
        return -1
    C = ws.data
    memset(C, 0, nw * sizeof(uint64_t))
    i = 0
    while i < n:
        s = se[i]
        e = se[i + 1]
        cs = s // h
        ce = (e - 1) // h
        col = cs
        while col <= ce:
            cx = col >> shift
            if cx != cur:
                if cur >= 0:
                    if _m_emit(C, 1, nw, cur, 0, hc, out, first) != 0:
                        return -1
                    memset(C, 0, nw * sizeof(uint64_t))
                cur = cx
            a = s - col * h if col == cs else 0
            b = e - col * h if col == ce else h
            _set_bits(C, a >> shift, ((b - 1) >> shift) + 1)
            col += 1
        i += 2
    if cur >= 0:
        if _m_emit(C, 1, nw, cur, 0, hc, out, first) != 0:
            return -1
    return 0


cdef inline int _m_append(I64Vec* dst, const I64Vec* src) noexcept nogil:
    if _i64_reserve(dst, dst.n + src.n) != 0:
        return -1
    if src.n:
        memcpy(dst.data + dst.n, src.data, src.n * sizeof(int64_t))
    dst.n += src.n
    return 0


def measure_features(StringTable table, const int64_t[:] h, const int64_t[:] w,
                     const int64_t[:, :] band_d, const int64_t[:] bnd_d, int contour, int inner,
                     int n_scales, Py_ssize_t lo, Py_ssize_t hi):
    """Features of items ``lo .. hi-1`` (runs without the GIL).

    Item ``i`` is ``h[i] x w[i]``.  ``contour``: fill slot 1 (implied by bands and
    scales); ``bnd_d[i]`` > 0: slot 2 with that d; ``band_d[i, k]``: the d of band
    slot ``k`` (a band whose d equals an earlier one's is copied, not recomputed);
    ``inner``: the inner band slot, from band 0; ``n_scales``: cell slots for grids
    1, 2, .., 2^(n-1).

    Returns ``(flat, offsets, areas)``: the intervals of every slot of every item
    back to back (int64), ``offsets[i, s] .. offsets[i, s+1]`` the slice of item
    ``lo + i``'s slot ``s`` (relative to this call), and ``areas[i, s]`` its size.
    """
    cdef Py_ssize_t nb = band_d.shape[1]
    cdef Py_ssize_t ns = 4 + nb + n_scales
    cdef Py_ssize_t n = hi - lo
    cdef Py_ssize_t i, k, j, src
    cdef I64Vec allv, vm, vc, vt, vb
    cdef WordBuf ws
    cdef BoundaryWork bws
    cdef int err = 0
    cdef int need_c = contour or nb > 0 or n_scales > 0
    cdef int64_t a, hh, ww, ln
    cdef int64_t[:] fv
    offs = np.zeros((n, ns + 1), np.int64)
    areas = np.zeros((n, ns), np.int64)
    cdef int64_t[:, :] of = offs
    cdef int64_t[:, :] ar = areas
    allv.data = NULL; allv.n = 0; allv.cap = 0
    vm.data = NULL; vm.n = 0; vm.cap = 0
    vc.data = NULL; vc.n = 0; vc.cap = 0
    vt.data = NULL; vt.n = 0; vt.cap = 0
    vb.data = NULL; vb.n = 0; vb.cap = 0
    ws.data = NULL; ws.cap = 0
    _bw_init(&bws)
    with nogil:
        for i in range(n):
            hh = h[lo + i]
            ww = w[lo + i]
            vm.n = 0; vc.n = 0; vb.n = 0
            of[i, 0] = allv.n
            if _decode(table.ptr[lo + i], table.size[lo + i], &vm) != hh * ww:
                err = 1
                break
            if _m_append(&allv, &vm) != 0:
                err = 2
                break
            of[i, 1] = allv.n
            if need_c:
                if _boundary(vm.data, vm.n, hh, ww, 1, &bws, &vc) != 0 or _m_append(&allv, &vc) != 0:
                    err = 2
                    break
            of[i, 2] = allv.n
            if bnd_d[lo + i] > 0:
                vt.n = 0
                if _boundary(vm.data, vm.n, hh, ww, bnd_d[lo + i], &bws, &vt) != 0 or _m_append(&allv, &vt) != 0:
                    err = 2
                    break
            of[i, 3] = allv.n
            for k in range(nb):
                src = -1
                for j in range(k):
                    if band_d[lo + i, j] == band_d[lo + i, k]:
                        src = j
                        break
                if src >= 0:  # the same band again: copy it
                    ln = of[i, 4 + src] - of[i, 3 + src]
                    if _i64_reserve(&allv, allv.n + ln) != 0:
                        err = 2
                        break
                    if ln:
                        memcpy(allv.data + allv.n, allv.data + of[i, 3 + src], ln * sizeof(int64_t))
                    allv.n += ln
                else:
                    vt.n = 0
                    if (_m_dilate(vc.data, vc.n, hh, ww, band_d[lo + i, k], &ws, &vt) != 0
                            or _m_append(&allv, &vt) != 0):
                        err = 2
                        break
                    if k == 0 and inner:
                        if _m_and(vm.data, vm.n, vt.data, vt.n, &vb) != 0:
                            err = 2
                            break
                of[i, 4 + k] = allv.n
            if err:
                break
            if inner and nb > 0:
                if _m_append(&allv, &vb) != 0:
                    err = 2
                    break
            of[i, 4 + nb] = allv.n
            for k in range(n_scales):
                vt.n = 0
                if _m_cells(vc.data, vc.n, hh, <int> k, &ws, &vt) != 0 or _m_append(&allv, &vt) != 0:
                    err = 2
                    break
                of[i, 5 + nb + k] = allv.n
            if err:
                break
            for k in range(ns):
                a = 0
                j = of[i, k]
                while j < of[i, k + 1]:
                    a += allv.data[j + 1] - allv.data[j]
                    j += 2
                ar[i, k] = a
    try:
        if err == 1:
            raise ValueError(f"item {lo + i}: malformed RLE string or not {h[lo + i]}x{w[lo + i]} pixels")
        if err == 2:
            raise MemoryError()
        flat = np.empty(allv.n, np.int64)
        if allv.n:
            fv = flat
            memcpy(&fv[0], allv.data, allv.n * sizeof(int64_t))
    finally:
        free(allv.data); free(vm.data); free(vc.data); free(vt.data); free(vb.data); free(ws.data)
        _bw_free(&bws)
    return flat, offs, areas


def pair_counts(const int64_t[:] gflat, const int64_t[:, :] goff,
                const int64_t[:] pflat, const int64_t[:, :] poff,
                const int64_t[:, :] spec, int64_t[:, :, :] out, Py_ssize_t lo, Py_ssize_t hi):
    """``out[g, p, k] = |gt g's slot spec[k, 0] AND pred p's slot spec[k, 1]|`` for
    ground truths ``lo .. hi-1`` and every prediction (runs without the GIL)."""
    cdef Py_ssize_t g, p, k, K = spec.shape[0], P = poff.shape[0]
    cdef int64_t sg, sp
    with nogil:
        for g in range(lo, hi):
            for p in range(P):
                for k in range(K):
                    sg = spec[k, 0]
                    sp = spec[k, 1]
                    if goff[g, sg + 1] == goff[g, sg] or poff[p, sp + 1] == poff[p, sp]:
                        out[g, p, k] = 0
                    else:
                        out[g, p, k] = _intersection(&gflat[goff[g, sg]], goff[g, sg + 1] - goff[g, sg],
                                                     &pflat[poff[p, sp]], poff[p, sp + 1] - poff[p, sp])


def pair_counts_diag(const int64_t[:] gflat, const int64_t[:, :] goff,
                     const int64_t[:] pflat, const int64_t[:, :] poff,
                     const int64_t[:, :] spec, int64_t[:, :] out, Py_ssize_t lo, Py_ssize_t hi):
    """``out[i, k] = |gt i's slot spec[k, 0] AND pred i's slot spec[k, 1]|`` for the
    pairs ``lo .. hi-1`` (gt i with pred i; runs without the GIL)."""
    cdef Py_ssize_t i, k, K = spec.shape[0]
    cdef int64_t sg, sp
    with nogil:
        for i in range(lo, hi):
            for k in range(K):
                sg = spec[k, 0]
                sp = spec[k, 1]
                if goff[i, sg + 1] == goff[i, sg] or poff[i, sp + 1] == poff[i, sp]:
                    out[i, k] = 0
                else:
                    out[i, k] = _intersection(&gflat[goff[i, sg]], goff[i, sg + 1] - goff[i, sg],
                                              &pflat[poff[i, sp]], poff[i, sp + 1] - poff[i, sp])
