# Included by _mask.pyx. The boundary kernel (M AND NOT erode(M)) on ones-intervals and
# its entry points for RLE strings and dense masks.

# --------------------------------------------------------------------------
# boundary
# --------------------------------------------------------------------------

cdef inline void _set_bits(uint64_t* col, int64_t a, int64_t b) noexcept nogil:
    # set bits [a, b) of a column bitset
    cdef int64_t wa, wb, k
    cdef uint64_t ma, mb
    if a >= b:
        return
    wa = a >> 6
    wb = (b - 1) >> 6
    ma = (~(<uint64_t> 0)) << (a & 63)
    mb = (~(<uint64_t> 0)) >> (63 - ((b - 1) & 63))
    if wa == wb:
        col[wa] |= ma & mb
        return
    col[wa] |= ma
    for k in range(wa + 1, wb):
        col[k] = ~(<uint64_t> 0)
    col[wb] |= mb


# Boundary of a mask given as maximal ones-intervals of an h x w image:
#     boundary = M AND NOT erode(M, (2d+1) x (2d+1) square),
# pixels outside the image counting as background.  Only the mask's bounding
# box is touched.  Inside it each column is a bitset; the vertical erosion is
# done on the runs (a run [a, b) of a column shrinks to [a+d, b-d)), the
# horizontal one with van Herk/Gil-Werman block prefix/suffix ANDs over
# columns, so the cost is O(runs + box_width * box_height / 64), whatever d.
# Appends the boundary's ones-intervals (image coordinates) to ``out``.
cdef int _boundary(const int64_t* se, Py_ssize_t n, int64_t h, int64_t w, int64_t d,
                   WordBuf* ws, I64Vec* out) noexcept nogil:
    cdef Py_ssize_t i, k
    cdef int64_t s, e, cs, ce, col, a, b, r0, r1
    cdef int64_t x0, x1, y0, y1, hb, wb, nw, x, K, st, base, tz, run
    cdef uint64_t word, inv
    cdef uint64_t* M
    cdef uint64_t* V
    cdef uint64_t* H
    cdef uint64_t* Mc
    cdef uint64_t* Hs
    cdef uint64_t* Ge
    if n == 0:
        return 0
    # bounding box (columns x0..x1-1, rows y0..y1-1)
    x0 = se[0] // h
    x1 = (se[n - 1] - 1) // h + 1
    y0 = h
    y1 = 0
    i = 0
    while i < n:
        s = se[i]
        e = se[i + 1]
        cs = s // h
        ce = (e - 1) // h
        if cs != ce:
            y0 = 0
            y1 = h
            break
        r0 = s - cs * h
        r1 = e - ce * h
        if r0 < y0:
            y0 = r0
        if r1 > y1:
            y1 = r1
        i += 2
    hb = y1 - y0
    wb = x1 - x0
    nw = (hb + 63) >> 6
    if _words_reserve(ws, 3 * wb * nw) != 0:
        return -1
    M = ws.data
    V = M + wb * nw
    H = V + wb * nw
    memset(M, 0, 2 * wb * nw * sizeof(uint64_t))
    # fill M, and V = vertical erosion of M, from the column pieces of each run
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
            Mc = M + (col - x0) * nw
            _set_bits(Mc, a - y0, b - y0)
            if b - a > 2 * d:
                _set_bits(V + (col - x0) * nw, a + d - y0, b - d - y0)
            col += 1
        i += 2
    # horizontal erosion over windows of K columns, written as M &= ~E
    K = 2 * d + 1
    if wb >= K:
        # H[x] = AND of V over x .. end of x's block (suffix)
        x = wb - 1
        while x >= 0:
            if x == wb - 1 or (x + 1) % K == 0:
                memcpy(H + x * nw, V + x * nw, nw * sizeof(uint64_t))
            else:
                for k in range(nw):
                    H[x * nw + k] = V[x * nw + k] & H[(x + 1) * nw + k]
            x -= 1
        # V becomes G[x] = AND of V over start of x's block .. x (prefix)
        for x in range(1, wb):
            if x % K != 0:
                for k in range(nw):
                    V[x * nw + k] &= V[(x - 1) * nw + k]
        for x in range(d, wb - d):
            st = x - d
            Mc = M + x * nw
            Hs = H + st * nw
            if st % K == 0:
                for k in range(nw):
                    Mc[k] &= ~Hs[k]
            else:
                Ge = V + (st + K - 1) * nw
                for k in range(nw):
                    Mc[k] &= ~(Hs[k] & Ge[k])
    # M now holds the boundary: emit its runs in image coordinates
    for x in range(wb):
        base = (x0 + x) * h + y0
        Mc = M + x * nw
        for k in range(nw):
            word = Mc[k]
            while word:
                tz = ba_ctz64(word)
                inv = ~(word >> tz)
                if inv == 0:
                    run = 64 - tz
                else:
                    run = ba_ctz64(inv)
                if _push_interval(out, base + k * 64 + tz, base + k * 64 + tz + run) != 0:
                    return -1
                if tz + run >= 64:
                    word = 0
                else:
                    word &= (~(<uint64_t> 0)) << (tz + run)
    return 0




def boundary_strings(StringTable table, const int64_t[:] h, const int64_t[:] w,
                     const int64_t[:] d, Py_ssize_t lo, Py_ssize_t hi):
    """Boundary RLE strings of items ``lo .. hi-1``, as a list of bytes."""
    cdef Py_ssize_t i, n = hi - lo
    cdef I64Vec mask, bnd
    cdef ByteVec enc
    cdef WordBuf ws
    cdef int err = 0
    offs = np.zeros(n + 1, np.int64)
    cdef int64_t[:] of = offs
    mask.data = NULL; mask.n = 0; mask.cap = 0
    bnd.data = NULL; bnd.n = 0; bnd.cap = 0
    enc.data = NULL; enc.n = 0; enc.cap = 0
    ws.data = NULL; ws.cap = 0
    with nogil:
        for i in range(lo, hi):
            mask.n = 0
            bnd.n = 0
            if _decode(table.ptr[i], table.size[i], &mask) < 0:
                err = 1
                break
            if _boundary(mask.data, mask.n, h[i], w[i], d[i], &ws, &bnd) != 0:
                err = 2
                break
            if _encode(bnd.data, bnd.n, h[i] * w[i], &enc) != 0:
                err = 2
                break
            of[i - lo + 1] = enc.n
    try:
        if err == 1:
            raise ValueError(f"malformed RLE string at item {i}")
        if err == 2:
            raise MemoryError()
        out = [PyBytes_FromStringAndSize(enc.data + of[i], of[i + 1] - of[i]) for i in range(n)]
    finally:
        free(mask.data); free(bnd.data); free(enc.data); free(ws.data)
    return out


def boundary_dense(const uint8_t[:, :] mask, int64_t d):
    """Boundary of a dense HxW mask (nonzero = foreground) as a uint8 array."""
    cdef int64_t h = mask.shape[0], w = mask.shape[1]
    cdef int64_t x, y, start
    cdef Py_ssize_t i
    cdef I64Vec m, bnd
    cdef WordBuf ws
    cdef int err = 0
    out = np.zeros((h, w), np.uint8)
    cdef uint8_t[:, :] o = out
    m.data = NULL; m.n = 0; m.cap = 0
    bnd.data = NULL; bnd.n = 0; bnd.cap = 0
    ws.data = NULL; ws.cap = 0
    with nogil:
        for x in range(w):
            y = 0
            while y < h and not err:
                if mask[y, x]:
                    start = y
                    while y < h and mask[y, x]:
                        y += 1
                    if _push_interval(&m, x * h + start, x * h + y) != 0:
                        err = 1
                else:
                    y += 1
        if not err and _boundary(m.data, m.n, h, w, d, &ws, &bnd) != 0:
            err = 1
        if not err:
            i = 0
            while i < bnd.n:
                for start in range(bnd.data[i], bnd.data[i + 1]):
                    o[start % h, start // h] = 1
                i += 2
    free(m.data); free(bnd.data); free(ws.data)
    if err:
        raise MemoryError()
    return out


