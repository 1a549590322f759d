# Included by _mask.pyx. Cityscapes instance kernel: the statistics of one binary
# prediction mask (a decoded PNG) against a ground-truth index map, in one pass.
#
# Positions are row-major, as in _panoptic.pxi: the row-major positions of an H x W
# image are the column-major positions of its W x H transpose and the boundary
# commutes with transposition, so ``_boundary`` is called with h = W, w = H.

from libc.stdint cimport uint32_t, uint16_t, int16_t, int8_t


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
# 8-bit greyscale PNG masks
#
# A mask PNG of 1024 x 2048 inflates to 2 MB that are almost all zeros, which
# zlib writes one byte at a time (a run of zeros is a string of length-258
# copies at distance 1).  This inflater (RFC 1951, canonical Huffman codes
# decoded bit by bit: masks compress to a few thousand symbols) fills such runs
# with memset, and not at all into the zeroed output when the byte is 0.
# --------------------------------------------------------------------------

cdef struct _Bits:
    const uint8_t* src
    Py_ssize_t n
    Py_ssize_t pos
    uint64_t buf
    int cnt

DEF _FAST = 9  # codes up to this length are decoded with one table lookup

cdef struct _Huff:
    int16_t count[16]
    int16_t symbol[320]
    uint16_t fast[1 << _FAST]  # (symbol << 4) | length by the next _FAST bits, 0: longer code

cdef int16_t _LEN_BASE[29]
cdef int8_t _LEN_EXTRA[29]
cdef int32_t _DIST_BASE[30]
cdef int8_t _DIST_EXTRA[30]
cdef int8_t _CL_ORDER[19]


def _init_inflate_tables():
    cdef int i, base = 3, extra
    for i in range(28):
        extra = 0 if i < 8 else (i - 4) // 4
        _LEN_BASE[i] = base
        _LEN_EXTRA[i] = extra
        base += 1 << extra
    _LEN_BASE[28] = 258
    _LEN_EXTRA[28] = 0
    base = 1
    for i in range(30):
        extra = 0 if i < 4 else (i - 2) // 2
        _DIST_BASE[i] = base
        _DIST_EXTRA[i] = extra
        base += 1 << extra
    for i, v in enumerate((16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)):
        _CL_ORDER[i] = v


_init_inflate_tables()


cdef inline int _bits(_Bits* b, int k, int* out) noexcept nogil:
    """The next ``k`` (<= 16) bits, least significant first; -1 past the end."""
    while b.cnt < k:
        if b.pos >= b.n:
            return -1
        b.buf |= (<uint64_t> b.src[b.pos]) << b.cnt
        b.pos += 1
        b.cnt += 8
    out[0] = <int> (b.buf & ((1ULL << k) - 1))
    b.buf >>= k
    b.cnt -= k
    return 0


cdef int _huff_build(_Huff* h, const uint8_t* lengths, int n) noexcept nogil:
    """Canonical code from code lengths; -1 if over-subscribed."""
    cdef int i, j, left = 1, length, code, rev, idx
    cdef int16_t offs[16]
    for i in range(16):
        h.count[i] = 0
    for i in range(n):
        h.count[lengths[i]] += 1
    for i in range(1, 16):
        left = (left << 1) - h.count[i]
        if left < 0:
            return -1
    offs[1] = 0
    for i in range(1, 15):
        offs[i + 1] = offs[i] + h.count[i]
    for i in range(n):
        if lengths[i] != 0:
            h.symbol[offs[lengths[i]]] = i
            offs[lengths[i]] += 1
    # lookup table of the short codes; Deflate sends codes most significant bit
    # first into a least-significant-first bit stream, hence the reversal
    memset(h.fast, 0, sizeof(h.fast))
    code = 0
    idx = 0
    for length in range(1, _FAST + 1):
        for i in range(h.count[length]):
            rev = 0
            for j in range(length):
                rev |= ((code >> j) & 1) << (length - 1 - j)
            j = rev
            while j < (1 << _FAST):
                h.fast[j] = <uint16_t> ((h.symbol[idx] << 4) | length)
                j += 1 << length
            code += 1
            idx += 1
        code <<= 1
    return 0


cdef inline int _huff_decode(_Bits* b, const _Huff* h) noexcept nogil:
    """One symbol; -1 on a bad code or the end of the data."""
    cdef int code = 0, first = 0, index = 0, length, count
    cdef uint16_t e
    while b.cnt < _FAST and b.pos < b.n:
        b.buf |= (<uint64_t> b.src[b.pos]) << b.cnt
        b.pos += 1
        b.cnt += 8
    if b.cnt >= _FAST:
        e = h.fast[b.buf & ((1 << _FAST) - 1)]
        if e != 0:
            b.buf >>= e & 15
            b.cnt -= e & 15
            return e >> 4
    for length in range(1, 16):
        if b.cnt == 0:
            if b.pos >= b.n:
                return -1
            b.buf = b.src[b.pos]
            b.pos += 1
            b.cnt = 8
        code |= <int> (b.buf & 1)
        b.buf >>= 1
        b.cnt -= 1
        count = h.count[length]
        if code - first < count:
            return h.symbol[index + code - first]
        index += count
        first = (first + count) << 1
        code <<= 1
    return -1


cdef int _inflate_block(_Bits* b, const _Huff* lit, const _Huff* dist, uint8_t* out, Py_ssize_t cap,
                        Py_ssize_t* o) noexcept nogil:
    cdef int sym, e, ds
    cdef Py_ssize_t length, d, p = o[0], i, e2
    cdef uint8_t v
    while True:
        sym = _huff_decode(b, lit)
        if sym < 0:
            return -1
        if sym < 256:
            if p >= cap:
                return -1
            out[p] = <uint8_t> sym
            p += 1
        elif sym == 256:
            o[0] = p
            return 0
        else:
            sym -= 257
            if sym >= 29 or _bits(b, _LEN_EXTRA[sym], &e) != 0:
                return -1
            length = _LEN_BASE[sym] + e
            ds = _huff_decode(b, dist)
            if ds < 0 or ds >= 30 or _bits(b, _DIST_EXTRA[ds], &e) != 0:
                return -1
            d = _DIST_BASE[ds] + e
            if d > p or p + length > cap:
                return -1
            if d == 1:
                v = out[p - 1]
                if v != 0:  # the output starts zeroed
                    memset(out + p, v, length)
            elif d >= length:
                memcpy(out + p, out + p - d, length)
            else:  # a period-d pattern: copy it in doubling non-overlapping pieces
                i = 0
                while i < length:
                    e2 = i + d
                    if e2 > length - i:
                        e2 = length - i
                    memcpy(out + p + i, out + p - d, e2)
                    i += e2
            p += length


cdef int _inflate(const uint8_t* src, Py_ssize_t n, uint8_t* out, Py_ssize_t cap) noexcept nogil:
    """zlib stream -> ``out`` (zeroed, exactly ``cap`` bytes expected); 0 or -1."""
    cdef _Bits b
    cdef _Huff lit, dist, cl
    cdef uint8_t lengths[320]
    cdef int final = 0, kind, i, hlit, hdist, hclen, sym, rep, val
    cdef Py_ssize_t o = 0, ln
    if n < 2 or (src[0] & 15) != 8 or (src[1] & 32) or ((<int> src[0]) * 256 + src[1]) % 31:
        return -1
    b.src = src + 2
    b.n = n - 2
    b.pos = 0
    b.buf = 0
    b.cnt = 0
    while not final:
        if _bits(&b, 1, &final) != 0 or _bits(&b, 2, &kind) != 0:
            return -1
        if kind == 0:
            b.pos -= b.cnt >> 3  # whole bytes read ahead go back; the partial one is dropped
            b.buf = 0
            b.cnt = 0
            if b.pos + 4 > b.n:
                return -1
            ln = b.src[b.pos] | (b.src[b.pos + 1] << 8)
            if (ln ^ (b.src[b.pos + 2] | (b.src[b.pos + 3] << 8))) != 0xFFFF:
                return -1
            b.pos += 4
            if b.pos + ln > b.n or o + ln > cap:
                return -1
            memcpy(out + o, b.src + b.pos, ln)
            b.pos += ln
            o += ln
        elif kind == 1:
            for i in range(288):
                lengths[i] = 8 if i < 144 else (9 if i < 256 else (7 if i < 280 else 8))
            _huff_build(&lit, lengths, 288)
            for i in range(30):
                lengths[i] = 5
            _huff_build(&dist, lengths, 30)
            if _inflate_block(&b, &lit, &dist, out, cap, &o) != 0:
                return -1
        elif kind == 2:
            if _bits(&b, 5, &hlit) != 0 or _bits(&b, 5, &hdist) != 0 or _bits(&b, 4, &hclen) != 0:
                return -1
            hlit += 257
            hdist += 1
            hclen += 4
            if hlit > 286 or hdist > 30:
                return -1
            for i in range(19):
                lengths[i] = 0
            for i in range(hclen):
                if _bits(&b, 3, &val) != 0:
                    return -1
                lengths[_CL_ORDER[i]] = <uint8_t> val
            if _huff_build(&cl, lengths, 19) != 0:
                return -1
            i = 0
            while i < hlit + hdist:
                sym = _huff_decode(&b, &cl)
                if sym < 0:
                    return -1
                if sym < 16:
                    lengths[i] = <uint8_t> sym
                    i += 1
                    continue
                if sym == 16:
                    if i == 0 or _bits(&b, 2, &rep) != 0:
                        return -1
                    val = lengths[i - 1]
                    rep += 3
                elif sym == 17:
                    if _bits(&b, 3, &rep) != 0:
                        return -1
                    val = 0
                    rep += 3
                else:
                    if _bits(&b, 7, &rep) != 0:
                        return -1
                    val = 0
                    rep += 11
                if i + rep > hlit + hdist:
                    return -1
                while rep > 0:
                    lengths[i] = <uint8_t> val
                    i += 1
                    rep -= 1
            if lengths[256] == 0:
                return -1
            if _huff_build(&lit, lengths, hlit) != 0 or _huff_build(&dist, lengths + hlit, hdist) != 0:
                return -1
            if _inflate_block(&b, &lit, &dist, out, cap, &o) != 0:
                return -1
        else:
            return -1
    return 0 if o == cap else -1


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


cdef inline void _unfilter_row(int f, const uint8_t* line, const uint8_t* prev, uint8_t* cur,
                               Py_ssize_t rb, int bpp) noexcept nogil:
    """PNG row reconstruction (filters 1-4; ``prev`` NULL on the first row)."""
    cdef Py_ssize_t x
    cdef int a, bb, c, p, pa, pb, pc
    if f == 2 and prev == NULL:
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
    else:
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
