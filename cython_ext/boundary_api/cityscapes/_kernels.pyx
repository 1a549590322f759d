# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cityscapes instance kernels: pixel and boundary counts of binary prediction masks
against a ground-truth index map, and the ground truth's own PNG decoding helpers.

Private module (``boundary_api.cityscapes._kernels``).
"""

# Cityscapes instance kernel: the statistics of one binary
# prediction mask (a decoded PNG) against a ground-truth index map, in one pass.
#
# Positions are row-major, as in boundary_api.masks._idmaps: the row-major positions of an H x W
# image are the column-major positions of its W x H transpose and the boundary
# commutes with transposition, so ``_boundary`` is called with h = W, w = H.

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy

from boundary_api.masks._rle cimport I64Vec, _push_interval
from boundary_api.masks._boundary cimport BoundaryWork, _bw_init, _bw_free, _boundary
from boundary_api.masks._png cimport _inflate, _unfilter_row

import numpy as np


cdef inline int _scan_row(const uint8_t* row, int64_t base, int64_t W, const uint32_t* g,
                          int64_t* io, I64Vec* runs, int64_t* area) noexcept nogil:
    """Append the nonzero runs of one mask row (row-major positions from
    ``base``) to ``runs``, counting their pixels per index of ``g``."""
    cdef int64_t x = 0, x0
    cdef uint64_t word
    while x < W:
        # skip background eight bytes at a time
        while x + 8 <= W:
            memcpy(&word, row + x, 8)
            if word != 0:
                break
            x += 8
        while x < W and row[x] == 0:
            x += 1
        if x >= W:
            break
        x0 = x
        while x < W and row[x] != 0:
            io[g[base + x]] += 1
            x += 1
        area[0] += x - x0
        if _push_interval(runs, 0, base + x0, base + x) != 0:  # one mask per vector
            return -1
    return 0


cdef inline int _runs_boundary(I64Vec* runs, int64_t H, int64_t W, int64_t d, const uint32_t* b,
                               int64_t* bo, int64_t* barea) noexcept nogil:
    """Boundary of the mask given by ``runs``: its area, and its pixels per
    index of ``b`` (if not NULL)."""
    cdef I64Vec bnd
    cdef BoundaryWork ws
    cdef Py_ssize_t i
    cdef int64_t pos
    cdef int err = 0
    if runs.n == 0 or d <= 0:
        return 0
    bnd.data = NULL
    bnd.n = bnd.cap = 0
    _bw_init(&ws)
    if _boundary(runs.data, runs.n, W, H, d, &ws, &bnd) != 0:
        err = -1
    else:
        i = 0
        while i < bnd.n:
            barea[0] += bnd.data[i + 1] - bnd.data[i]
            if b != NULL:
                for pos in range(bnd.data[i], bnd.data[i + 1]):
                    bo[b[pos]] += 1
            i += 2
    free(bnd.data)
    _bw_free(&ws)
    return err


cdef _check_maps(Py_ssize_t H, Py_ssize_t W, const uint32_t[:, ::1] gidx, const uint32_t[:, ::1] bidx,
                 Py_ssize_t k, int64_t d):
    if gidx.shape[0] != H or gidx.shape[1] != W:
        raise ValueError(f"mask is {H}x{W} but the index map is {gidx.shape[0]}x{gidx.shape[1]}")
    if bidx is not None and (bidx.shape[0] != H or bidx.shape[1] != W):
        raise ValueError(f"mask is {H}x{W} but the boundary index map is {bidx.shape[0]}x{bidx.shape[1]}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if d < 0:
        raise ValueError(f"d must be >= 0, got {d}")


def cs_mask_stats(const uint8_t[:, ::1] mask, const uint32_t[:, ::1] gidx,
                  const uint32_t[:, ::1] bidx, Py_ssize_t k, int64_t d):
    """Pixel counts of one predicted mask against ground-truth index maps.

    Parameters
    ----------
    mask : (H, W) uint8 array, C-contiguous
        The prediction; every nonzero pixel is foreground.
    gidx : (H, W) uint32 array, C-contiguous
        Ground-truth index of every pixel, each value < ``k``.
    bidx : (H, W) uint32 array, C-contiguous, or None
        Ground-truth index of every pixel on a ground-truth boundary (0 off
        them), each value < ``k``; None when there is none.
    k : int
        Number of indices.
    d : int
        Erosion radius of the prediction's boundary in pixels; 0 skips the
        boundary statistics.

    Returns
    -------
    area : int
        Foreground pixels of the mask.
    inter : (k,) int64 ndarray
        Foreground pixels on each index of ``gidx``.
    barea : int
        Pixels of the mask's boundary (0 when ``d`` is 0).
    binter : (k,) int64 ndarray
        Boundary pixels of the mask on each index of ``bidx`` (zeros when
        ``d`` is 0 or ``bidx`` is None).
    """
    cdef Py_ssize_t H = mask.shape[0], W = mask.shape[1], y
    cdef int64_t area = 0, barea = 0
    cdef I64Vec runs
    cdef int err = 0
    cdef const uint32_t* b = NULL
    _check_maps(H, W, gidx, bidx, k, d)
    inter = np.zeros(k, np.int64)
    binter = np.zeros(k, np.int64)
    cdef int64_t[::1] io = inter, bo = binter
    if H * W == 0:
        return 0, inter, 0, binter
    if bidx is not None:
        b = &bidx[0, 0]
    runs.data = NULL
    runs.n = runs.cap = 0
    with nogil:
        for y in range(H):
            if _scan_row(&mask[y, 0], y * W, W, &gidx[0, 0], &io[0], &runs, &area) != 0:
                err = 1
                break
        if not err and _runs_boundary(&runs, H, W, d, b, &bo[0], &barea) != 0:
            err = 1
        free(runs.data)
    if err:
        raise MemoryError()
    return area, inter, barea, binter


# --------------------------------------------------------------------------
# 8-bit greyscale PNG masks, decoded by the inflater of _png.pxi
# --------------------------------------------------------------------------

def cs_png_gray(const uint8_t[::1] zdata, Py_ssize_t H, Py_ssize_t W, int bpp):
    """Unfiltered pixel bytes of a non-interlaced greyscale PNG from its IDAT data.

    Parameters
    ----------
    zdata : bytes-like
        The concatenated IDAT chunk data (a zlib stream).
    H, W : int
        Image size from the IHDR chunk.
    bpp : {1, 2}
        Bytes per pixel (bit depth 8 or 16).

    Returns
    -------
    (H, W * bpp) uint8 ndarray (16-bit samples big-endian, as stored), or
    None if the data is not a valid image of that size.
    """
    cdef Py_ssize_t rb = W * bpp, stride = W * bpp + 1, y, x
    cdef int bad = 0, f, a, bb, c, p, pa, pb, pc
    if H < 1 or W < 1 or bpp < 1 or bpp > 2 or zdata.shape[0] == 0:
        return None
    raw = np.zeros(H * stride, np.uint8)
    img = np.empty((H, rb), np.uint8)
    cdef uint8_t[::1] rv = raw
    cdef uint8_t[:, ::1] iv = img
    cdef uint8_t* r = &rv[0]
    cdef uint8_t* cur
    cdef uint8_t* prev
    cdef const uint8_t* line
    with nogil:
        if _inflate(&zdata[0], zdata.shape[0], r, H * stride) != 0:
            bad = 1
        y = 0
        while not bad and y < H:
            line = r + y * stride
            f = line[0]
            line += 1
            cur = &iv[y, 0]
            prev = &iv[y - 1, 0] if y > 0 else NULL
            if f == 0 or (f == 2 and prev == NULL):
                memcpy(cur, line, rb)
            elif f == 1:
                for x in range(rb):
                    cur[x] = <uint8_t> (line[x] + (cur[x - bpp] if x >= bpp else 0))
            elif f == 2:
                for x in range(rb):
                    cur[x] = <uint8_t> (line[x] + prev[x])
            elif f == 3:
                for x in range(rb):
                    a = cur[x - bpp] if x >= bpp else 0
                    bb = prev[x] if prev != NULL else 0
                    cur[x] = <uint8_t> (line[x] + ((a + bb) >> 1))
            elif f == 4:
                for x in range(rb):
                    a = cur[x - bpp] if x >= bpp else 0
                    bb = prev[x] if prev != NULL else 0
                    c = prev[x - bpp] if (prev != NULL and x >= bpp) else 0
                    p = a + bb - c
                    pa = p - a if p >= a else a - p
                    pb = p - bb if p >= bb else bb - p
                    pc = p - c if p >= c else c - p
                    if pa <= pb and pa <= pc:
                        cur[x] = <uint8_t> (line[x] + a)
                    elif pb <= pc:
                        cur[x] = <uint8_t> (line[x] + bb)
                    else:
                        cur[x] = <uint8_t> (line[x] + c)
            else:
                bad = 1
            y += 1
    if bad:
        return None
    return img


def cs_relabel16(const uint16_t[:, ::1] ids, const uint32_t[::1] lut):
    """``lut[ids]`` for a 16-bit id map (every id must be < ``len(lut)``).

    Returns
    -------
    (H, W) uint32 ndarray
    """
    cdef Py_ssize_t H = ids.shape[0], W = ids.shape[1], y, x, n = lut.shape[0]
    cdef int bad = 0
    out = np.empty((H, W), np.uint32)
    cdef uint32_t[:, ::1] o = out
    if H * W == 0:
        return out
    with nogil:
        for y in range(H):
            for x in range(W):
                if ids[y, x] >= n:
                    bad = 1
                    break
                o[y, x] = lut[ids[y, x]]
            if bad:
                break
    if bad:
        raise ValueError("an id is outside the lookup table")
    return out


def cs_hist16(const uint16_t[:, ::1] ids):
    """Pixel count of every value of a 16-bit id map: (65536,) int64 ndarray."""
    cdef Py_ssize_t H = ids.shape[0], W = ids.shape[1], y, x
    counts = np.zeros(65536, np.int64)
    cdef int64_t[::1] c = counts
    with nogil:
        for y in range(H):
            for x in range(W):
                c[ids[y, x]] += 1
    return counts


def cs_png_mask_stats(const uint8_t[::1] zdata, Py_ssize_t H, Py_ssize_t W, const uint32_t[:, ::1] gidx,
                      const uint32_t[:, ::1] bidx, Py_ssize_t k, int64_t d):
    """:func:`cs_mask_stats` of an 8-bit greyscale PNG mask, from its IDAT data.

    The rows are reconstructed one at a time and scanned as they come (the
    image is never stored).  Returns None if the data is not a valid
    non-interlaced 8-bit greyscale image of ``H x W`` (the caller then reads
    the file another way).
    """
    cdef Py_ssize_t stride = W + 1, y
    cdef int64_t area = 0, barea = 0
    cdef int bad = 0, err = 0, f
    cdef I64Vec runs
    cdef const uint32_t* b = NULL
    cdef uint8_t* rows = NULL
    cdef uint8_t* cur
    cdef const uint8_t* prev = NULL
    cdef const uint8_t* line
    if H < 1 or W < 1 or zdata.shape[0] == 0:
        return None
    _check_maps(H, W, gidx, bidx, k, d)
    raw = np.zeros(H * stride, np.uint8)
    inter = np.zeros(k, np.int64)
    binter = np.zeros(k, np.int64)
    cdef uint8_t[::1] rv = raw
    cdef int64_t[::1] io = inter, bo = binter
    if bidx is not None:
        b = &bidx[0, 0]
    runs.data = NULL
    runs.n = runs.cap = 0
    with nogil:
        rows = <uint8_t*> malloc(2 * W)
        if rows == NULL:
            err = 1
        elif _inflate(&zdata[0], zdata.shape[0], &rv[0], H * stride) != 0:
            bad = 1
        y = 0
        while not err and not bad and y < H:
            line = &rv[0] + y * stride
            f = line[0]
            line += 1
            if f == 0:
                cur = <uint8_t*> line  # used as is (read only)
            elif f <= 4:
                cur = rows + (y & 1) * W
                _unfilter_row(f, line, prev, cur, W, 1)
            else:
                bad = 1
                break
            if _scan_row(cur, y * W, W, &gidx[0, 0], &io[0], &runs, &area) != 0:
                err = 1
            prev = cur
            y += 1
        if not err and not bad and _runs_boundary(&runs, H, W, d, b, &bo[0], &barea) != 0:
            err = 1
        free(runs.data)
        free(rows)
    if err:
        raise MemoryError()
    if bad:
        return None
    return area, inter, barea, binter
