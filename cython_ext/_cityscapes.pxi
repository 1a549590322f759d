# Included by _mask.pyx. Cityscapes instance kernel: the statistics of one binary
# prediction mask (a decoded PNG) against a ground-truth index map, in one pass.
#
# Positions are row-major, as in _panoptic.pxi: the row-major positions of an H x W
# image are the column-major positions of its W x H transpose and the boundary
# commutes with transposition, so ``_boundary`` is called with h = W, w = H.

from libc.stdint cimport uint32_t


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
        them), each value < ``k``; None skips the boundary statistics.
    k : int
        Number of indices.
    d : int
        Erosion radius of the prediction's boundary in pixels (>= 1).

    Returns
    -------
    area : int
        Foreground pixels of the mask.
    inter : (k,) int64 ndarray
        Foreground pixels on each index of ``gidx``.
    barea : int
        Pixels of the mask's boundary (0 when ``bidx`` is None).
    binter : (k,) int64 ndarray
        Boundary pixels of the mask on each index of ``bidx`` (zeros when
        ``bidx`` is None).
    """
    cdef Py_ssize_t H = mask.shape[0], W = mask.shape[1], i
    cdef int64_t y, x, x0, base, pos, area = 0, barea = 0
    cdef int have_b = bidx is not None
    cdef I64Vec runs
    cdef I64Vec bnd
    cdef WordBuf ws
    cdef int err = 0
    cdef uint64_t word
    cdef const uint8_t* m
    cdef const uint32_t* g
    cdef const uint32_t* b = NULL
    if gidx.shape[0] != H or gidx.shape[1] != W:
        raise ValueError(f"mask is {H}x{W} but the index map is {gidx.shape[0]}x{gidx.shape[1]}")
    if have_b and (bidx.shape[0] != H or bidx.shape[1] != W):
        raise ValueError(f"mask is {H}x{W} but the boundary index map is {bidx.shape[0]}x{bidx.shape[1]}")
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    if have_b and d < 1:
        raise ValueError(f"d must be >= 1, got {d}")
    inter = np.zeros(k, np.int64)
    binter = np.zeros(k, np.int64)
    cdef int64_t[::1] io = inter, bo = binter
    if H * W == 0:
        return 0, inter, 0, binter
    m = &mask[0, 0]
    g = &gidx[0, 0]
    if have_b:
        b = &bidx[0, 0]
    runs.data = NULL
    runs.n = runs.cap = 0
    bnd.data = NULL
    bnd.n = bnd.cap = 0
    ws.data = NULL
    ws.cap = 0
    with nogil:
        for y in range(H):
            base = y * W
            x = 0
            while x < W:
                # skip background eight bytes at a time
                while x + 8 <= W:
                    memcpy(&word, m + base + x, 8)
                    if word != 0:
                        break
                    x += 8
                while x < W and m[base + x] == 0:
                    x += 1
                if x >= W:
                    break
                x0 = x
                while x < W and m[base + x] != 0:
                    io[g[base + x]] += 1
                    x += 1
                area += x - x0
                if _push_interval(&runs, base + x0, base + x) != 0:
                    err = 1
                    break
            if err:
                break
        if not err and have_b and runs.n > 0:
            if _boundary(runs.data, runs.n, W, H, d, &ws, &bnd) != 0:
                err = 1
            else:
                i = 0
                while i < bnd.n:
                    barea += bnd.data[i + 1] - bnd.data[i]
                    for pos in range(bnd.data[i], bnd.data[i + 1]):
                        bo[b[pos]] += 1
                    i += 2
        free(runs.data)
        free(bnd.data)
        free(ws.data)
    if err:
        raise MemoryError()
    return area, inter, barea, binter
