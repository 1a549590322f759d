# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The boundary kernel (M AND NOT erode(M)) on ones-intervals and its entry points
for RLE strings and dense masks.

Private module (``boundary_api.masks._boundary``); the masks are held as in
``boundary_api.masks._rle`` (maximal ones-intervals in column-major order).  The
scratch struct and the declarations other kernel modules cimport are in
``_boundary.pxd``.
"""

from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint64_t, uint8_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset, memcpy

from boundary_api.masks._rle cimport (I64Vec, ByteVec, StringTable, _push_interval, _i64_reserve, _decode, _encode,
                                      _bbox, _first_ending_after)

import numpy as np


# --------------------------------------------------------------------------
# boundary
# --------------------------------------------------------------------------

# Words of bitset scratch a tile may use (per thread): 8 MiB.  Private;
# tests lower it with ``_set_boundary_budget`` to force many small tiles.
cdef Py_ssize_t _budget_words = 1 << 20


cdef inline int _bw_reserve(BoundaryWork* bw, Py_ssize_t need) noexcept nogil:
    cdef uint64_t* p
    if need > bw.peak:
        bw.peak = need
    if need <= bw.cap:
        return 0
    p = <uint64_t*> realloc(bw.words, need * sizeof(uint64_t))
    if p == NULL:
        return -1
    bw.words = p
    bw.cap = need
    return 0


# The bits of a mask's runs (M) and of its vertically eroded runs (V: each
# column piece [a, b) shrunk to [a+d, b-d)) over its whole bounding box
# (columns from x0, rows from y0, ``nws`` words per column), every run being
# inside it.  The runs' columns are stepped, not divided out.
cdef inline void _box_bits(const int64_t* se, Py_ssize_t n, int64_t h, int64_t d, int64_t x0, int64_t y0,
                           int64_t nws, uint64_t* M, uint64_t* V) noexcept nogil:
    cdef Py_ssize_t i = 0
    cdef int64_t s, e, a, b, top
    cdef int64_t cb = x0 * h        # first pixel of the current run's column
    cdef uint64_t* Mc = M
    cdef uint64_t* Vc = V
    while i < n:
        s = se[i]
        e = se[i + 1]
        if s - cb >= 8 * h:
            top = s // h
            Mc = M + (top - x0) * nws
            Vc = V + (top - x0) * nws
            cb = top * h
        while s - cb >= h:
            cb += h
            Mc += nws
            Vc += nws
        while True:
            a = s - cb - y0
            top = cb + h
            if e <= top:
                b = e - cb - y0
                _set_bits(Mc, a, b)
                if b - a > 2 * d:
                    _set_bits(Vc, a + d, b - d)
                break
            # the run goes on into the next column
            b = h - y0
            _set_bits(Mc, a, b)
            if b - a > 2 * d:
                _set_bits(Vc, a + d, b - d)
            s = top
            cb = top
            Mc += nws
            Vc += nws
        i += 2


# The horizontal erosion of a tile (see ``_boundary_tile``: M, V and H of
# ``nws`` words per column, output columns [cx, cx1), region columns from rx0
# on, rw of them, box width wb): M &= ~erode(V) over windows of 2d+1 columns.
cdef inline void _erode_tile(uint64_t* M, uint64_t* V, uint64_t* H, int64_t nws, int64_t rw, int64_t cx,
                             int64_t cx1, int64_t rx0, int64_t wb, int64_t d) noexcept nogil:
    cdef int64_t K = 2 * d + 1, x, xr, st, lo, hi, m
    cdef Py_ssize_t k
    cdef uint64_t* Mc
    cdef uint64_t* Hs
    cdef uint64_t* Ge
    # horizontal erosion over windows of K columns (van Herk/Gil-Werman blocks
    # of the region), written as M &= ~E for the output columns whose window
    # stays inside the box (outside it the window holds background: no erosion)
    # (the block positions x % K are stepped, not divided out per column)
    x = rw - 1
    m = rw % K                   # (x + 1) % K
    while x >= 0:
        if x == rw - 1 or m == 0:
            memcpy(H + x * nws, V + x * nws, nws * sizeof(uint64_t))
        else:
            for k in range(nws):
                H[x * nws + k] = V[x * nws + k] & H[(x + 1) * nws + k]
        m = m - 1 if m > 0 else K - 1
        x -= 1
    m = 1 % K                    # x % K
    for x in range(1, rw):
        if m != 0:
            for k in range(nws):
                V[x * nws + k] &= V[(x - 1) * nws + k]
        m = m + 1 if m + 1 < K else 0
    lo = cx if cx > d else d
    hi = cx1 if cx1 < wb - d else wb - d
    m = (lo - rx0 - d) % K if hi > lo else 0     # st % K (st >= 0)
    for x in range(lo, hi):
        xr = x - rx0
        st = xr - d
        Mc = M + (x - cx) * nws
        Hs = H + st * nws
        if m == 0:
            for k in range(nws):
                Mc[k] &= ~Hs[k]
        else:
            Ge = V + (st + K - 1) * nws
            for k in range(nws):
                Mc[k] &= ~(Hs[k] & Ge[k])
        m = m + 1 if m + 1 < K else 0


# One tile of the boundary: box rows [r0, r1) (``nws`` words per column) and
# output box columns [cx, cx1).  The bitsets span the columns [rx0, rx1): the
# output columns widened by d on each side (clipped to the box), all that the
# horizontal erosion of an output column reads.  The vertical erosion needs
# no such margin: it is done on each column's whole runs.  Appends the output
# columns' boundary runs, in column-major order, to ``out`` (merging only
# into runs from ``first`` on).
cdef int _boundary_tile(const int64_t* se, Py_ssize_t n, int64_t h, int64_t d,
                        int64_t x0, int64_t y0, int64_t wb,
                        int64_t r0, int64_t r1, int64_t nws, int64_t cx, int64_t cx1,
                        BoundaryWork* bw, I64Vec* out, Py_ssize_t first) noexcept nogil:
    cdef int64_t rx0 = cx - d if cx > d else 0
    cdef int64_t rx1 = cx1 + d if cx1 + d < wb else wb
    cdef int64_t rw = rx1 - rx0, S = cx1 - cx
    cdef int64_t p0, p1, s, e, cs, ce, fc, col, a, b, c, x
    cdef Py_ssize_t i
    cdef uint64_t* M
    cdef uint64_t* V
    cdef uint64_t* H
    if _bw_reserve(bw, (S + 2 * rw) * nws) != 0:
        return -1
    M = bw.words                 # output columns
    V = M + S * nws              # vertical erosion, region columns
    H = V + rw * nws             # suffix ANDs, region columns
    memset(M, 0, (S + rw) * nws * sizeof(uint64_t))
    if cx == 0 and cx1 == wb and r0 == 0:
        # the whole box (the usual tile): every run is inside, nothing to clip
        _box_bits(se, n, h, d, x0, y0, nws, M, V)
        i = n
    else:
        # the intervals that reach the region's columns (binary search for the first)
        p0 = (x0 + rx0) * h
        i = _first_ending_after(se, n, p0)
    p1 = (x0 + rx1) * h
    cs = -1
    while i < n and se[i] < p1:
        s = se[i]
        e = se[i + 1]
        # the run's first and last column: stepped from the last run's first
        # column (runs are sorted) rather than divided out for every run
        if cs < 0 or s - cs * h >= 8 * h:
            cs = s // h
        else:
            cs += <int64_t> (s - cs * h >= h)   # (no branch: see _rle._bbox)
            while s - cs * h >= h:
                cs += 1
        fc = cs
        ce = cs if e - cs * h <= h else (e - 1) // h
        if cs < x0 + rx0:
            cs = x0 + rx0
        if ce > x0 + rx1 - 1:
            ce = x0 + rx1 - 1
        col = cs
        while col <= ce:
            # the column piece [a, b) of the run, in box rows; whole in its column
            a = s - col * h if s > col * h else 0
            b = e - col * h if e < (col + 1) * h else h
            a -= y0
            b -= y0
            c = col - x0
            if c >= cx and c < cx1:
                _set_bits(M + (c - cx) * nws, (a if a > r0 else r0) - r0, (b if b < r1 else r1) - r0)
            if b - a > 2 * d:
                _set_bits(V + (c - rx0) * nws, (a + d if a + d > r0 else r0) - r0,
                          (b - d if b - d < r1 else r1) - r0)
            col += 1
        cs = fc
        i += 2
    _erode_tile(M, V, H, nws, rw, cx, cx1, rx0, wb, d)
    # M now holds the boundary of the output columns: emit its runs
    for x in range(cx, cx1):
        if _emit_column(M + (x - cx) * nws, nws, (x0 + x) * h + y0 + r0, r1 - r0, out, first) != 0:
            return -1
    return 0


# Append the runs of one column's bitset (``nws`` words, bits [0, rows) in
# use, the rest clear) to ``out`` as intervals starting at pixel ``base``.
# The runs' ends are the set bits of ``word ^ (word << 1)`` (with the last
# word's top bit carried in), starts and ends alternating, so they are
# written one after the other, two instructions per transition; a run still
# open at the last row ends there.  The column's first run is merged into
# the previous interval (from ``first`` on) where that ends at ``base``.
cdef inline int _emit_column(const uint64_t* Mc, int64_t nws, int64_t base, int64_t rows,
                             I64Vec* out, Py_ssize_t first) noexcept nogil:
    cdef Py_ssize_t n0 = out.n, n, k
    cdef uint64_t word, t, carry = 0
    cdef int64_t* o
    cdef int64_t kb
    if _i64_reserve(out, n0 + 64 * nws + 2) != 0:
        return -1
    o = out.data
    n = n0
    kb = base
    for k in range(nws):
        word = Mc[k]
        t = word ^ ((word << 1) | carry)
        carry = word >> 63
        while t:
            o[n] = kb + ba_ctz64(t)
            n += 1
            t &= t - 1
        kb += 64
    if n & 1:
        o[n] = base + rows
        n += 1
    if n > n0 and n0 > first and o[n0 - 1] == o[n0]:
        # the column's first run continues the previous one: drop the pair
        o[n0 - 1] = o[n0 + 1]
        for k in range(n0, n - 2):
            o[k] = o[k + 2]
        n -= 2
    out.n = n
    return 0


# Column ``col`` (image column) of a mask as bits of box rows [r0, r1), OR-ed
# into ``dst``; with ``shrink`` each of the column's runs [a, b) first becomes
# [a+d, b-d) (the vertical erosion: the runs are whole within the column, the
# intervals being maximal).  ``i`` is a cursor into the intervals for columns
# visited in increasing order; returns the cursor for the next column.
cdef inline Py_ssize_t _column_bits(const int64_t* se, Py_ssize_t n, int64_t h, int64_t col,
                                    int64_t y0, int64_t d, bint shrink, int64_t r0, int64_t r1,
                                    Py_ssize_t i, uint64_t* dst) noexcept nogil:
    cdef int64_t cs = col * h, ce = cs + h, a, b
    cdef Py_ssize_t j
    while i < n and se[i + 1] <= cs:
        i += 2
    j = i
    while j < n and se[j] < ce:
        a = (se[j] if se[j] > cs else cs) - cs - y0
        b = (se[j + 1] if se[j + 1] < ce else ce) - cs - y0
        j += 2
        if shrink:
            if b - a <= 2 * d:
                continue
            a += d
            b -= d
        if a < r0:
            a = r0
        if b > r1:
            b = r1
        _set_bits(dst, a - r0, b - r0)
    return i


# The boundary of box rows [r0, r1) (``nws`` words per column), streaming
# over the columns with O(log d) bitsets of one column each, whatever the box
# width and d: per row, a bit-sliced counter of the consecutive columns whose
# vertically eroded mask V is set, saturating into F once it reaches 2d+1.
# After column x + d, F holds "V is set on columns x-d .. x+d", the erosion at
# column x (columns outside the box are background, so the counters start at
# 0 and run out past the right edge), and the boundary of column x is its
# mask bits AND NOT F.  Appends the runs to ``out`` in column-major order.
cdef int _boundary_stream(const int64_t* se, Py_ssize_t n, int64_t h, int64_t d,
                          int64_t x0, int64_t y0, int64_t wb,
                          int64_t r0, int64_t r1, int64_t nws,
                          BoundaryWork* bw, I64Vec* out, Py_ssize_t first) noexcept nogil:
    cdef int64_t K = 2 * d + 1, xp, x, base, tz, run
    cdef int L = 0, l
    cdef Py_ssize_t k, lead = 0, lag = 0
    cdef uint64_t v, carry, eq, t, nt, word, inv
    cdef uint64_t* C
    cdef uint64_t* F
    cdef uint64_t* Vc
    cdef uint64_t* Mc
    cdef uint64_t* Z
    cdef uint64_t ones = ~(<uint64_t> 0)
    while (K >> L) != 0:
        L += 1
    if _bw_reserve(bw, (L + 4) * nws) != 0:
        return -1
    C = bw.words                 # L counter planes
    F = C + L * nws
    Z = F + nws                  # per word: 1 if its counters and F are all 0
    Vc = Z + nws
    Mc = Vc + nws
    memset(C, 0, (L + 1) * nws * sizeof(uint64_t))
    for k in range(nws):
        Z[k] = 1
    for xp in range(wb + d):
        memset(Vc, 0, nws * sizeof(uint64_t))
        if xp < wb:
            lead = _column_bits(se, n, h, x0 + xp, y0, d, True, r0, r1, lead, Vc)
        for k in range(nws):
            v = Vc[k]
            # words with nothing to do: all rows saturated and still set (the
            # stale counters of saturated rows are never read), or all clear
            if v == ones and F[k] == ones:
                continue
            if v == 0:
                if Z[k]:
                    continue
                Z[k] = 1
            else:
                Z[k] = 0
            carry = v
            eq = v
            for l in range(L):
                t = C[l * nws + k]
                nt = (t ^ carry) & v
                carry = t & carry
                C[l * nws + k] = nt
                if (K >> l) & 1:
                    eq &= nt
                else:
                    eq &= ~nt
            F[k] = v & (F[k] | eq)
        x = xp - d
        if x < 0:
            continue
        memset(Mc, 0, nws * sizeof(uint64_t))
        lag = _column_bits(se, n, h, x0 + x, y0, 0, False, r0, r1, lag, Mc)
        base = (x0 + x) * h + y0 + r0
        for k in range(nws):
            if _push_bits(out, first, base + k * 64, Mc[k] & ~F[k]) != 0:
                return -1
    return 0


# Boundary of a mask given as maximal ones-intervals of an h x w image:
#     boundary = M AND NOT erode(M, (2d+1) x (2d+1) square),
# pixels outside the image counting as background.  Only the mask's bounding
# box is touched, column by column as bitsets; the vertical erosion is done
# on the runs (a run [a, b) of a column shrinks to [a+d, b-d)).
#
# The horizontal erosion, by box size against the per-thread budget
# ``_budget_words`` (so that memory never grows with the box's area):
# * the whole box fits: van Herk/Gil-Werman block prefix/suffix ANDs over
#   its columns, O(runs + box area / 64) whatever d;
# * a full-height chunk of at least 4d columns (plus the 2d columns of margin
#   its erosion reads) fits: the same, chunk by chunk;
# * otherwise: ``_boundary_stream`` (O(log d) column bitsets), in row strips
#   if even those exceed the budget (a very tall box); the strips' runs are
#   then merged in column-major order.
# The result does not depend on the choice.
#
# If no (2d+1)-square fits in the box (2d+1 > its height or width), nothing
# survives the erosion and the whole mask is its boundary; this is decided
# before any arithmetic on d, so any d >= 0 is safe.
#
# Appends the boundary's ones-intervals (image coordinates) to ``out`` as a
# mask of its own (never merged with what ``out`` holds already).
cdef int _boundary(const int64_t* se, Py_ssize_t n, int64_t h, int64_t w, int64_t d,
                   BoundaryWork* bw, I64Vec* out) noexcept nogil:
    cdef int64_t bb[4]
    if n == 0:
        return 0
    _bbox(se, n, h, bb)
    return _boundary_in_box(se, n, h, w, d, bb, bw, out)


# ``_boundary`` of a non-empty mask whose bounding box ``bb`` (as ``_bbox``
# gives it) the caller has already.
cdef int _boundary_in_box(const int64_t* se, Py_ssize_t n, int64_t h, int64_t w, int64_t d,
                          const int64_t* bb, BoundaryWork* bw, I64Vec* out) noexcept nogil:
    cdef Py_ssize_t first = out.n, i, ns, j, tfirst
    cdef int64_t s, e, cs, ce, r0, r1, x0, x1, y0, y1, hb, wb, nw, sw, S, B, cx, lim, x
    cdef int L
    cdef int64_t* cur
    if n == 0:
        return 0
    # bounding box (columns x0..x1-1, rows y0..y1-1)
    x0 = bb[0]
    x1 = bb[1]
    y0 = _bits_row0(bb)   # (the bitsets' rows start at a multiple of 64)
    y1 = bb[3]
    hb = y1 - y0
    wb = x1 - x0
    bw.bits_nws = 0
    if _boundary_is_mask(bb, d):
        i = 0
        while i < n:
            if _push_interval(out, first, se[i], se[i + 1]) != 0:
                return -1
            i += 2
        return 0
    nw = (hb + 63) >> 6
    B = _budget_words
    if 3 * wb * nw <= B:
        if _boundary_tile(se, n, h, d, x0, y0, wb, 0, hb, nw, 0, wb, bw, out, first) != 0:
            return -1
        bw.bits_nws = nw
        return 0
    S = B // (3 * nw) - 2 * d
    if S >= 4 * d and S >= 64:
        cx = 0
        while cx < wb:
            if _boundary_tile(se, n, h, d, x0, y0, wb, 0, hb, nw, cx, cx + S if cx + S < wb else wb,
                              bw, out, first) != 0:
                return -1
            cx += S
        return 0
    L = 0
    while ((2 * d + 1) >> L) != 0:
        L += 1
    sw = B // (L + 4)
    if sw < 1:
        sw = 1
    if sw >= nw:
        return _boundary_stream(se, n, h, d, x0, y0, wb, 0, hb, nw, bw, out, first)
    # row strips, merged column by column at the end
    ns = (nw + sw - 1) // sw
    if 2 * ns > bw.ncur:
        free(bw.cur)
        bw.cur = <int64_t*> malloc(2 * ns * sizeof(int64_t))
        if bw.cur == NULL:
            bw.ncur = 0
            return -1
        bw.ncur = 2 * ns
    cur = bw.cur
    bw.tmp.n = 0
    for j in range(ns):
        r0 = j * sw * 64
        r1 = r0 + sw * 64
        if r1 > hb:
            r1 = hb
        tfirst = bw.tmp.n
        cur[j] = tfirst
        if _boundary_stream(se, n, h, d, x0, y0, wb, r0, r1, (r1 - r0 + 63) >> 6, bw, &bw.tmp, tfirst) != 0:
            return -1
        cur[ns + j] = bw.tmp.n
    # a strip's runs never cross a column (no strip spans the whole column)
    for x in range(x0, x1):
        lim = (x + 1) * h
        for j in range(ns):
            while cur[j] < cur[ns + j] and bw.tmp.data[cur[j]] < lim:
                if _push_interval(out, first, bw.tmp.data[cur[j]], bw.tmp.data[cur[j] + 1]) != 0:
                    return -1
                cur[j] += 2
    return 0


cdef int _box_fill(const int64_t* se, Py_ssize_t n, int64_t h, int64_t d,
                   const int64_t* bb, BoundaryWork* bw) noexcept nogil:
    cdef int64_t y0 = _bits_row0(bb), wb = bb[1] - bb[0]
    cdef int64_t nw = (bb[3] - y0 + 63) >> 6
    bw.bits_nws = 0
    if n == 0 or _boundary_is_mask(bb, d) or 3 * wb * nw > _budget_words:
        return 0
    if _bw_reserve(bw, 3 * wb * nw) != 0:
        return -1
    memset(bw.words, 0, 2 * wb * nw * sizeof(uint64_t))
    _box_bits(se, n, h, d, bb[0], y0, nw, bw.words, bw.words + wb * nw)
    bw.bits_nws = nw
    return 1


cdef void _box_erode(const int64_t* bb, int64_t d, BoundaryWork* bw) noexcept nogil:
    cdef int64_t wb = bb[1] - bb[0], nw = bw.bits_nws
    _erode_tile(bw.words, bw.words + wb * nw, bw.words + 2 * wb * nw, nw, wb, 0, wb, 0, wb, d)


cdef int64_t _entry_d(object d, int64_t h, int64_t w) except -1:
    # d from Python (any integer >= 0), clamped to max(h, w): every d with
    # 2d+1 > the box gives the same boundary (the whole mask)
    if d < 0:
        raise ValueError(f"d must be >= 0, got {d!r}")
    if d > max(h, w):
        return max(h, w)
    return d


def boundary_strings(StringTable table, const int64_t[:] h, const int64_t[:] w,
                     const int64_t[:] d, Py_ssize_t lo, Py_ssize_t hi):
    """Boundary RLE strings of items ``lo .. hi-1``, as a list of bytes.

    ``d[i] >= 0`` is item i's erosion radius (any value; beyond the mask's
    box it gives the whole mask)."""
    return _boundaries(table, h, w, d, lo, hi, False)


def boundary_buffer(StringTable table, const int64_t[:] h, const int64_t[:] w,
                    const int64_t[:] d, Py_ssize_t lo, Py_ssize_t hi):
    """Boundary RLE strings of items ``lo .. hi-1`` in one buffer.

    Same strings as :func:`boundary_strings`; returns ``(buffer, offsets)``,
    item ``lo + i`` being ``buffer[offsets[i]:offsets[i + 1]]`` (``bytes``
    and int64 offsets of length ``hi - lo + 1``): no Python object per item."""
    return _boundaries(table, h, w, d, lo, hi, True)


cdef object _boundaries(StringTable table, const int64_t[:] h, const int64_t[:] w,
                        const int64_t[:] d, Py_ssize_t lo, Py_ssize_t hi, bint one_buffer):
    """:func:`boundary_strings` or, with ``one_buffer``, :func:`boundary_buffer`."""
    cdef Py_ssize_t i, n = hi - lo
    cdef I64Vec mask, bnd
    cdef ByteVec enc
    cdef BoundaryWork bw
    cdef int err = 0
    offs = np.zeros(n + 1, np.int64)
    cdef int64_t[:] of = offs
    for i in range(lo, hi):
        if d[i] < 0:
            raise ValueError(f"d must be >= 0, got {d[i]} at item {i}")
    mask.data = NULL; mask.n = 0; mask.cap = 0
    bnd.data = NULL; bnd.n = 0; bnd.cap = 0
    enc.data = NULL; enc.n = 0; enc.cap = 0
    _bw_init(&bw)
    with nogil:
        for i in range(lo, hi):
            mask.n = 0
            bnd.n = 0
            if _decode(table.ptr[i], table.size[i], &mask) < 0:
                err = 1
                break
            if _boundary(mask.data, mask.n, h[i], w[i], d[i], &bw, &bnd) != 0:
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
        if one_buffer:
            return PyBytes_FromStringAndSize(enc.data, enc.n), offs
        return [PyBytes_FromStringAndSize(enc.data + of[i], of[i + 1] - of[i]) for i in range(n)]
    finally:
        free(mask.data); free(bnd.data); free(enc.data)
        _bw_free(&bw)


def boundary_dense(const uint8_t[:, :] mask, d):
    """Boundary of a dense HxW mask (nonzero = foreground) as a uint8 array.

    ``d`` is any integer >= 0."""
    cdef int64_t h = mask.shape[0], w = mask.shape[1]
    cdef int64_t dd = _entry_d(d, h, w)
    cdef int64_t x, y, start
    cdef Py_ssize_t i
    cdef I64Vec m, bnd
    cdef BoundaryWork bw
    cdef int err = 0
    out = np.zeros((h, w), np.uint8)
    cdef uint8_t[:, :] o = out
    m.data = NULL; m.n = 0; m.cap = 0
    bnd.data = NULL; bnd.n = 0; bnd.cap = 0
    _bw_init(&bw)
    with nogil:
        for x in range(w):
            y = 0
            while y < h and not err:
                if mask[y, x]:
                    start = y
                    while y < h and mask[y, x]:
                        y += 1
                    if _push_interval(&m, 0, x * h + start, x * h + y) != 0:
                        err = 1
                else:
                    y += 1
        if not err and _boundary(m.data, m.n, h, w, dd, &bw, &bnd) != 0:
            err = 1
        if not err:
            i = 0
            while i < bnd.n:
                for start in range(bnd.data[i], bnd.data[i + 1]):
                    o[start % h, start // h] = 1
                i += 2
    free(m.data); free(bnd.data)
    _bw_free(&bw)
    if err:
        raise MemoryError()
    return out


def _set_boundary_budget(Py_ssize_t words):
    """Private (tests): set the boundary kernel's bitset budget per tile, in
    64-bit words (>= 1); returns the previous value.  Results do not depend on it."""
    global _budget_words
    if words < 1:
        raise ValueError(f"budget must be >= 1 word, got {words}")
    old = _budget_words
    _budget_words = words
    return old


def _boundary_probe(counts, int64_t h, int64_t w, d):
    """Private (tests): boundary RLE string of one RLE string, and the peak
    bytes of scratch the kernel used for it (bitsets, strip outputs, cursors)."""
    cdef StringTable table = StringTable([counts])
    cdef int64_t dd = _entry_d(d, h, w)
    cdef I64Vec mask, bnd
    cdef ByteVec enc
    cdef BoundaryWork bw
    cdef int err = 0
    cdef Py_ssize_t peak
    mask.data = NULL; mask.n = 0; mask.cap = 0
    bnd.data = NULL; bnd.n = 0; bnd.cap = 0
    enc.data = NULL; enc.n = 0; enc.cap = 0
    _bw_init(&bw)
    with nogil:
        if _decode(table.ptr[0], table.size[0], &mask) != h * w:
            err = 1
        elif _boundary(mask.data, mask.n, h, w, dd, &bw, &bnd) != 0:
            err = 2
        elif _encode(bnd.data, bnd.n, h * w, &enc) != 0:
            err = 2
    try:
        if err == 1:
            raise ValueError("malformed RLE string")
        if err == 2:
            raise MemoryError()
        peak = (bw.peak + bw.tmp.cap + bw.ncur) * 8
        return PyBytes_FromStringAndSize(enc.data, enc.n), peak
    finally:
        free(mask.data); free(bnd.data); free(enc.data)
        _bw_free(&bw)
