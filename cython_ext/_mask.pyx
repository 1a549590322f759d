# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Run-length kernels: RLE string codec, boundary extraction and the IoU step.

Private module (``boundary_api._mask``).  Everything here works on the COCO
run-length format: a mask of ``h x w`` pixels is read in column-major order and
stored as alternating runs of zeros and ones, the counts being packed into an
ASCII string (5 bits per character, a continuation bit, and counts after the
second one stored as a difference to the count two places before).

Inside the kernels a mask is held as its *ones-intervals*: a sorted list of
half-open ``[start, end)`` pixel positions in column-major order, maximal (no
two touch).  The public wrappers in ``boundary_api.boundary`` validate input;
the ``nogil`` loops below trust it.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE, PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_Check, PyUnicode_AsUTF8AndSize
from cpython.bytes cimport PyBytes_Check
from libc.stdint cimport int64_t, uint64_t, int32_t, uint8_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memset, memcpy

import numpy as np

cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline int ba_ctz64(unsigned long long x) {
        unsigned long i; _BitScanForward64(&i, x); return (int)i;
    }
    #else
    static inline int ba_ctz64(unsigned long long x) { return __builtin_ctzll(x); }
    #endif
    """
    int ba_ctz64(unsigned long long x) nogil


# --------------------------------------------------------------------------
# small growable buffers (C only)
# --------------------------------------------------------------------------

cdef struct I64Vec:
    int64_t* data
    Py_ssize_t n
    Py_ssize_t cap

cdef struct ByteVec:
    char* data
    Py_ssize_t n
    Py_ssize_t cap

cdef struct WordBuf:
    uint64_t* data
    Py_ssize_t cap

cdef inline int _i64_reserve(I64Vec* v, Py_ssize_t need) noexcept nogil:
    cdef Py_ssize_t cap
    cdef int64_t* p
    if need <= v.cap:
        return 0
    cap = v.cap * 2 if v.cap > 0 else 64
    while cap < need:
        cap *= 2
    p = <int64_t*> realloc(v.data, cap * sizeof(int64_t))
    if p == NULL:
        return -1
    v.data = p
    v.cap = cap
    return 0

cdef inline int _bytes_reserve(ByteVec* v, Py_ssize_t need) noexcept nogil:
    cdef Py_ssize_t cap
    cdef char* p
    if need <= v.cap:
        return 0
    cap = v.cap * 2 if v.cap > 0 else 256
    while cap < need:
        cap *= 2
    p = <char*> realloc(v.data, cap)
    if p == NULL:
        return -1
    v.data = p
    v.cap = cap
    return 0

cdef inline int _words_reserve(WordBuf* v, Py_ssize_t need) noexcept nogil:
    cdef uint64_t* p
    if need <= v.cap:
        return 0
    p = <uint64_t*> realloc(v.data, need * sizeof(uint64_t))
    if p == NULL:
        return -1
    v.data = p
    v.cap = need
    return 0

# Interval append that keeps the list maximal: a run starting where the last
# one ended extends it.
cdef inline int _push_interval(I64Vec* v, int64_t s, int64_t e) noexcept nogil:
    if e <= s:
        return 0
    if v.n > 0 and v.data[v.n - 1] == s:
        v.data[v.n - 1] = e
        return 0
    if _i64_reserve(v, v.n + 2) != 0:
        return -1
    v.data[v.n] = s
    v.data[v.n + 1] = e
    v.n += 2
    return 0


# --------------------------------------------------------------------------
# RLE string codec
# --------------------------------------------------------------------------

# Decode a compressed COCO RLE string into maximal ones-intervals appended to
# ``out``.  Returns the total number of pixels the counts cover, or -1 if the
# string is malformed.
cdef int64_t _decode(const unsigned char* s, Py_ssize_t slen, I64Vec* out) noexcept nogil:
    cdef Py_ssize_t p = 0
    cdef int64_t m = 0
    cdef int64_t x, c, prev1 = 0, prev2 = 0
    cdef int k, more
    cdef int64_t pos = 0
    while p < slen:
        x = 0
        k = 0
        more = 1
        while more:
            if p >= slen or k > 12:
                return -1
            c = <int64_t> s[p] - 48
            if c < 0 or c > 63:
                return -1
            x |= (c & 0x1f) << (5 * k)
            more = c & 0x20
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= (<int64_t> -1) << (5 * k)
        if m > 2:
            x += prev2
        if x < 0 or x > <int64_t> 4294967295:
            return -1
        if m & 1:
            if _push_interval(out, pos, pos + x) != 0:
                return -1
        pos += x
        prev2 = prev1
        prev1 = x
        m += 1
    return pos


# Append one count to a compressed string.  ``hist[m & 1]`` holds count m-2.
cdef inline int _emit(int64_t cnt, Py_ssize_t m, int64_t* hist, ByteVec* out) noexcept nogil:
    cdef int64_t x = cnt, c
    cdef int more = 1
    if m > 2:
        x -= hist[m & 1]
    hist[m & 1] = cnt
    while more:
        c = x & 0x1f
        x >>= 5
        if c & 0x10:
            more = x != -1
        else:
            more = x != 0
        if more:
            c |= 0x20
        if _bytes_reserve(out, out.n + 1) != 0:
            return -1
        out.data[out.n] = <char> (c + 48)
        out.n += 1
    return 0


# Encode maximal ones-intervals covering ``total`` pixels as a compressed COCO
# RLE string appended to ``out`` (counts: zeros, ones, ..., trailing zeros if
# any), exactly as pycocotools writes it.
cdef int _encode(const int64_t* se, Py_ssize_t n, int64_t total, ByteVec* out) noexcept nogil:
    cdef int64_t hist[2]
    cdef int64_t last = 0
    cdef Py_ssize_t j = 0, m = 0
    hist[0] = 0
    hist[1] = 0
    while j < n:
        if _emit(se[j] - last, m, hist, out) != 0:
            return -1
        if _emit(se[j + 1] - se[j], m + 1, hist, out) != 0:
            return -1
        m += 2
        last = se[j + 1]
        j += 2
    if m == 0 or last < total:
        if _emit(total - last, m, hist, out) != 0:
            return -1
    return 0


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


# --------------------------------------------------------------------------
# geometry helpers
# --------------------------------------------------------------------------

cdef inline int64_t _area(const int64_t* se, Py_ssize_t n) noexcept nogil:
    cdef int64_t a = 0
    cdef Py_ssize_t i = 0
    while i < n:
        a += se[i + 1] - se[i]
        i += 2
    return a

# pixel bounding box as [x0, x1) x [y0, y1); all zero for an empty mask
cdef inline void _bbox(const int64_t* se, Py_ssize_t n, int64_t h, int64_t* bb) noexcept nogil:
    cdef Py_ssize_t i = 0
    cdef int64_t cs, ce, r0, r1
    bb[0] = 0; bb[1] = 0; bb[2] = 0; bb[3] = 0
    if n == 0:
        return
    bb[0] = se[0] // h
    bb[1] = (se[n - 1] - 1) // h + 1
    bb[2] = h
    bb[3] = 0
    while i < n:
        cs = se[i] // h
        ce = (se[i + 1] - 1) // h
        if cs != ce:
            bb[2] = 0
            bb[3] = h
            return
        r0 = se[i] - cs * h
        r1 = se[i + 1] - ce * h
        if r0 < bb[2]:
            bb[2] = r0
        if r1 > bb[3]:
            bb[3] = r1
        i += 2

# number of pixels in both interval lists
cdef int64_t _intersection(const int64_t* a, Py_ssize_t na, const int64_t* b, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i = 0, j = 0, lo, hi, mid
    cdef int64_t tot = 0, s, e
    if na == 0 or nb == 0:
        return 0
    if a[na - 1] <= b[0] or b[nb - 1] <= a[0]:
        return 0
    # skip, by binary search, the intervals of the longer list that end before
    # the other list starts
    if na > nb:
        lo = 0
        hi = na // 2
        while lo < hi:
            mid = (lo + hi) // 2
            if a[2 * mid + 1] <= b[0]:
                lo = mid + 1
            else:
                hi = mid
        i = 2 * lo
    elif nb > na:
        lo = 0
        hi = nb // 2
        while lo < hi:
            mid = (lo + hi) // 2
            if b[2 * mid + 1] <= a[0]:
                lo = mid + 1
            else:
                hi = mid
        j = 2 * lo
    while i < na and j < nb:
        s = a[i] if a[i] > b[j] else b[j]
        e = a[i + 1] if a[i + 1] < b[j + 1] else b[j + 1]
        if e > s:
            tot += e - s
        if a[i + 1] < b[j + 1]:
            i += 2
        else:
            j += 2
    return tot


# --------------------------------------------------------------------------
# string tables: borrowed pointers to RLE strings for nogil loops
# --------------------------------------------------------------------------

cdef class StringTable:
    """Pointers to a list of RLE count strings (``str`` or ``bytes``).

    Holds a reference to the list so that the pointers stay valid.
    """
    cdef const unsigned char** ptr
    cdef Py_ssize_t* size
    cdef readonly Py_ssize_t n
    cdef object _keep

    def __cinit__(self, list items):
        cdef Py_ssize_t i, sz
        cdef object it
        self.n = len(items)
        self._keep = items
        self.ptr = <const unsigned char**> malloc(max(self.n, 1) * sizeof(char*))
        self.size = <Py_ssize_t*> malloc(max(self.n, 1) * sizeof(Py_ssize_t))
        if self.ptr == NULL or self.size == NULL:
            raise MemoryError()
        for i in range(self.n):
            it = items[i]
            if PyBytes_Check(it):
                self.ptr[i] = <const unsigned char*> PyBytes_AS_STRING(it)
                self.size[i] = PyBytes_GET_SIZE(it)
            elif PyUnicode_Check(it):
                self.ptr[i] = <const unsigned char*> PyUnicode_AsUTF8AndSize(it, &sz)
                self.size[i] = sz
            else:
                raise TypeError(f"RLE counts must be str or bytes, got {type(it).__name__}")

    def __dealloc__(self):
        free(self.ptr)
        free(self.size)


# --------------------------------------------------------------------------
# Python-level entry points (private; see boundary_api.boundary)
# --------------------------------------------------------------------------

def check_strings(StringTable table, const int64_t[:] h, const int64_t[:] w):
    """Per item: 0 if the string decodes to exactly h*w pixels, 1 if it is
    malformed, 2 if it decodes to a different number of pixels."""
    cdef Py_ssize_t i, n = table.n
    status = np.zeros(n, np.uint8)
    cdef uint8_t[:] st = status
    cdef I64Vec v
    cdef int64_t tot
    v.data = NULL; v.n = 0; v.cap = 0
    with nogil:
        for i in range(n):
            v.n = 0
            tot = _decode(table.ptr[i], table.size[i], &v)
            if tot < 0:
                st[i] = 1
            elif tot != h[i] * w[i]:
                st[i] = 2
        free(v.data)
    return status


def area_bbox(StringTable table, const int64_t[:] h):
    """Areas (int64) and pycocotools-style boxes [x, y, w, h] (float64)."""
    cdef Py_ssize_t i, n = table.n
    area = np.zeros(n, np.int64)
    box = np.zeros((n, 4), np.float64)
    cdef int64_t[:] ar = area
    cdef double[:, :] bx = box
    cdef I64Vec v
    cdef int64_t bb[4]
    v.data = NULL; v.n = 0; v.cap = 0
    with nogil:
        for i in range(n):
            v.n = 0
            _decode(table.ptr[i], table.size[i], &v)
            ar[i] = _area(v.data, v.n)
            _bbox(v.data, v.n, h[i], bb)
            bx[i, 0] = bb[0]
            bx[i, 1] = bb[2]
            bx[i, 2] = bb[1] - bb[0]
            bx[i, 3] = bb[3] - bb[2]
        free(v.data)
    return area, box


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


def iou_pairs(int mode,
              StringTable gt_mask, StringTable gt_bnd, const int64_t[:] gt_h,
              const uint8_t[:] gt_crowd, const double[:, ::1] gt_box,
              StringTable dt_mask, StringTable dt_bnd, const int64_t[:] dt_h,
              const double[:, ::1] dt_box,
              const int64_t[:] pair_g, const int64_t[:] pair_d, const int64_t[:] pair_o,
              double[:] out, Py_ssize_t lo, Py_ssize_t hi):
    """The IoU step for pairs ``lo .. hi-1`` (runs without the GIL).

    Pair ``p`` owns ground truths ``pair_g[p] .. pair_g[p+1]-1`` and detections
    ``pair_d[p] .. pair_d[p+1]-1`` (indices into the gt_* / dt_* arrays,
    already in evaluation order), and writes its ``D x G`` matrix, row-major
    with one row per detection, at ``out[pair_o[p]]``.

    ``mode`` 0: mask IoU; 1: min(mask IoU, boundary IoU), plain mask IoU for
    crowd ground truth; 2: box IoU.  A crowd ground truth's IoU is the
    intersection over the detection's area, as in pycocotools.
    """
    cdef Py_ssize_t p, g, dd, G, D, ng, k
    cdef int64_t g0, d0, inter, ua, bi
    cdef double iou, biou, bw, bh, ga, da, bu
    cdef I64Vec gm, gb, dm, db
    cdef int64_t* goff = NULL      # per gt of the pair: [mask_off, mask_n, bnd_off, bnd_n, area, barea, bbox x4]
    cdef int64_t dbb[4]
    cdef int64_t* gg
    cdef int64_t dn, darea, dbn = 0, dbarea = 0
    cdef int err = 0
    cdef int have_db
    gm.data = NULL; gm.n = 0; gm.cap = 0
    gb.data = NULL; gb.n = 0; gb.cap = 0
    dm.data = NULL; dm.n = 0; dm.cap = 0
    db.data = NULL; db.n = 0; db.cap = 0
    with nogil:
        ng = 0
        for p in range(lo, hi):
            G = pair_g[p + 1] - pair_g[p]
            D = pair_d[p + 1] - pair_d[p]
            if G == 0 or D == 0:
                continue
            g0 = pair_g[p]
            d0 = pair_d[p]
            if mode == 2:
                for dd in range(D):
                    for g in range(G):
                        out[pair_o[p] + dd * G + g] = _box_iou(&dt_box[d0 + dd, 0], &gt_box[g0 + g, 0],
                                                               gt_crowd[g0 + g])
                continue
            if G > ng:
                free(goff)
                goff = <int64_t*> malloc(G * 10 * sizeof(int64_t))
                if goff == NULL:
                    err = 1
                    break
                ng = G
            gm.n = 0
            gb.n = 0
            for g in range(G):
                gg = goff + 10 * g
                gg[0] = gm.n
                if _decode(gt_mask.ptr[g0 + g], gt_mask.size[g0 + g], &gm) < 0:
                    err = 2
                    break
                gg[1] = gm.n - gg[0]
                gg[4] = _area(gm.data + gg[0], gg[1])
                _bbox(gm.data + gg[0], gg[1], gt_h[g0 + g], gg + 6)
                gg[2] = gb.n
                gg[3] = 0
                gg[5] = 0
                if mode == 1 and not gt_crowd[g0 + g]:
                    if _decode(gt_bnd.ptr[g0 + g], gt_bnd.size[g0 + g], &gb) < 0:
                        err = 2
                        break
                    gg[3] = gb.n - gg[2]
                    gg[5] = _area(gb.data + gg[2], gg[3])
            if err:
                break
            for dd in range(D):
                dm.n = 0
                if _decode(dt_mask.ptr[d0 + dd], dt_mask.size[d0 + dd], &dm) < 0:
                    err = 2
                    break
                dn = dm.n
                darea = _area(dm.data, dn)
                _bbox(dm.data, dn, dt_h[d0 + dd], dbb)
                have_db = 0
                for g in range(G):
                    gg = goff + 10 * g
                    k = pair_o[p] + dd * G + g
                    out[k] = 0.0
                    # boxes must share a pixel for the masks to intersect
                    if dn == 0 or gg[1] == 0:
                        continue
                    if dbb[1] <= gg[6] or gg[7] <= dbb[0] or dbb[3] <= gg[8] or gg[9] <= dbb[2]:
                        continue
                    inter = _intersection(dm.data, dn, gm.data + gg[0], gg[1])
                    if inter == 0:
                        continue
                    if gt_crowd[g0 + g]:
                        out[k] = <double> inter / <double> darea
                        continue
                    iou = <double> inter / <double> (darea + gg[4] - inter)
                    if mode == 1:
                        if not have_db:
                            db.n = 0
                            if _decode(dt_bnd.ptr[d0 + dd], dt_bnd.size[d0 + dd], &db) < 0:
                                err = 2
                                break
                            dbn = db.n
                            dbarea = _area(db.data, dbn)
                            have_db = 1
                        bi = _intersection(db.data, dbn, gb.data + gg[2], gg[3])
                        if bi == 0:
                            biou = 0.0
                        else:
                            biou = <double> bi / <double> (dbarea + gg[5] - bi)
                        if biou < iou:
                            iou = biou
                    out[k] = iou
                if err:
                    break
            if err:
                break
        free(goff)
        free(gm.data); free(gb.data); free(dm.data); free(db.data)
    if err == 1:
        raise MemoryError()
    if err == 2:
        raise ValueError("malformed RLE string in the IoU step")


cdef inline double _box_iou(const double* D, const double* G, int crowd) noexcept nogil:
    # pycocotools' bbIou, term for term
    cdef double w, h, i, u, ga, da
    ga = G[2] * G[3]
    da = D[2] * D[3]
    w = _fmin(D[2] + D[0], G[2] + G[0]) - _fmax(D[0], G[0])
    if w <= 0:
        return 0.0
    h = _fmin(D[3] + D[1], G[3] + G[1]) - _fmax(D[1], G[1])
    if h <= 0:
        return 0.0
    i = w * h
    u = da if crowd else da + ga - i
    return i / u

cdef inline double _fmin(double a, double b) noexcept nogil:
    return a if a < b else b

cdef inline double _fmax(double a, double b) noexcept nogil:
    return a if a > b else b


# ==========================================================================
# ---- panoptic ----
# Kernels for boundary_api.panoptic (Boundary PQ / PQ on COCO panoptic PNGs).
#
# A panoptic image is an H x W map of uint32 segment ids in C order.  Segment
# runs are collected along rows: the row-major positions of an H x W image are
# the column-major positions of its W x H transpose, and the boundary (erosion
# by a square, outside the image = background) commutes with transposition,
# so ``_boundary`` is called with h = W and w = H and its intervals are then
# row-major positions of the original image.  Same kernel as the instance
# path, one segment at a time, only over the segment's bounding box.
# ==========================================================================

from libc.stdint cimport uint32_t

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
                if _push_interval(&vecs[j], base + x0, base + x) != 0:
                    return -1
    return 0


cdef void _free_vecs(I64Vec* v, Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t j
    if v == NULL:
        return
    for j in range(k):
        free(v[j].data)
    free(v)


cdef I64Vec* _new_vecs(Py_ssize_t k) noexcept nogil:
    cdef I64Vec* v = <I64Vec*> malloc((k if k > 0 else 1) * sizeof(I64Vec))
    cdef Py_ssize_t j
    if v != NULL:
        for j in range(k):
            v[j].data = NULL
            v[j].n = 0
            v[j].cap = 0
    return v


cdef _check_sorted_ids(const uint32_t[::1] sel, str name):
    cdef Py_ssize_t j
    for j in range(1, sel.shape[0]):
        if sel[j] <= sel[j - 1]:
            raise ValueError(f"{name} must be sorted and distinct")


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
                       const int64_t[::1] pair_g, const int64_t[::1] pair_p, int64_t d):
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
        Erosion radius in pixels (>= 1).

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
    cdef WordBuf ws
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
    ws.data = NULL
    ws.cap = 0
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
            if _boundary(gm[j].data, gm[j].n, W, H, d, &ws, &gb[j]) != 0:
                err = 1
            j += 1
        j = 0
        while not err and j < kp:
            if _boundary(pm[j].data, pm[j].n, W, H, d, &ws, &pb[j]) != 0:
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
        free(ws.data)
    if err:
        raise MemoryError()
    return ga, pa, inter, pv


def pan_segment_boundaries(const uint32_t[:, ::1] ids, const uint32_t[::1] sel, int64_t d):
    """Boundaries of the segments ``sel`` of an id map, as a label map.

    Parameters
    ----------
    ids : (H, W) uint32 array, C-contiguous
        Segment id map.
    sel : uint32 array
        Sorted, distinct ids of the segments wanted.
    d : int
        Erosion radius in pixels (>= 1).

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
    cdef WordBuf ws
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
    ws.data = NULL
    ws.cap = 0
    with nogil:
        m = _new_vecs(k)
        b = _new_vecs(k)
        if m == NULL or b == NULL:
            err = 1
        if not err and _pan_runs(&ids[0, 0], H, W, &sel[0], k, m) != 0:
            err = 1
        j = 0
        while not err and j < k:
            if _boundary(m[j].data, m[j].n, W, H, d, &ws, &b[j]) != 0:
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
        free(ws.data)
    if err:
        raise MemoryError()
    return bmap, area
