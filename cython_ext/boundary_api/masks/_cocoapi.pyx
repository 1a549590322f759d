# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""What pycocotools' C mask code (``maskApi.c``) does with *any* compressed RLE,
malformed ones included, reproduced without its undefined behaviour.

Private module (``boundary_api.masks._cocoapi``).  The package's own decoder
(``_rle``) refuses malformed strings; pycocotools decodes every string, and its
evaluation of the result either gives a number or crashes or never ends.  The
drop-in gives pycocotools' number where there is one, and refuses the input
where there is none, so it needs to know, for any input, which of the two
pycocotools does.  This module computes what ``rleFrString``, ``rleArea``,
``rleToBbox``, ``bbIou`` and ``rleIou`` compute, in the same unsigned 32-bit
arithmetic, and reports where they would fail instead of failing:

- ``rleFrString`` shifts each 5-bit group as a C ``int`` by ``5 * k`` bits; on
  x86-64 the shift count is taken modulo 32 (checked against pycocotools on
  random strings, tests/masks/test_cocoapi.py).  A string whose last count is
  not terminated (its last character has the continuation bit) makes it read
  the string's terminating NUL and then the byte after it, which it does not
  own: the result is taken here as if that byte were 0 (what it reads where
  the string is followed by zero padding); ``terminated`` says which strings
  these are.  A NUL inside the string ends it (``strlen``).
- ``rleToBbox`` divides by the height: a height of 0 (as a 32-bit unsigned
  number) with a foreground run to place crashes the process (SIGFPE).
- ``rleIou`` merges the two run lists until the sum of the two remaining runs
  is 0: when one list ends before the other (counts that cover different
  numbers of pixels), it never ends.
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.math cimport fmin, fmax

import numpy as np


# --------------------------------------------------------------------------
# rleFrString
# --------------------------------------------------------------------------

cdef Py_ssize_t _frstring(const unsigned char* s, Py_ssize_t n, uint32_t* out, bint* terminated) noexcept nogil:
    """Counts of ``s[:n]`` (n: up to the first NUL) into ``out`` (room for n);
    returns how many."""
    cdef Py_ssize_t p = 0, m = 0
    cdef uint32_t x, v
    cdef unsigned k
    cdef bint more
    terminated[0] = True
    while p < n:
        x = 0
        k = 0
        more = True
        while more:
            if p < n:
                v = (<uint32_t> s[p] - 48) & 0xFF
            elif p == n:
                v = (<uint32_t> 0 - 48) & 0xFF   # the terminating NUL, read as a character
                terminated[0] = False
            else:
                v = (<uint32_t> 0 - 48) & 0xFF   # (never reached: a NUL ends the count)
            x |= (v & 0x1F) << ((5 * k) & 31)
            more = (v & 0x20) != 0
            p += 1
            k += 1
            if not more and (v & 0x10):
                x |= <uint32_t> 0xFFFFFFFF << ((5 * k) & 31)
        if m > 2:
            x += out[m - 2]
        out[m] = x
        m += 1
    return m


def frstring(data):
    """The counts (uint32) pycocotools' ``rleFrString`` reads from a string
    (``str`` as pycocotools encodes it, UTF-8, or ``bytes``), and whether its
    last count was terminated inside the string."""
    cdef bytes b = data.encode() if isinstance(data, str) else bytes(data)
    cdef Py_ssize_t n = b.find(b"\0")
    if n < 0:
        n = len(b)
    out = np.empty(n, np.uint32)
    cdef uint32_t[::1] o = out
    cdef bint term = True
    cdef const unsigned char* s = b
    cdef Py_ssize_t m
    with nogil:
        m = _frstring(s, n, &o[0] if n else NULL, &term)
    return out[:m], bool(term)


# --------------------------------------------------------------------------
# rleToBbox, bbIou, rleIou
# --------------------------------------------------------------------------

cdef int _to_bbox(const uint32_t* c, Py_ssize_t m, uint32_t h, uint32_t w, double* bb) noexcept nogil:
    """pycocotools' box of a run list; -1 where it divides by a height of 0."""
    cdef uint32_t xs = w, ys = h, xe = 0, ye = 0, cc = 0, start, y0, x0, y1, x1
    cdef Py_ssize_t j
    m = (m // 2) * 2
    bb[0] = bb[1] = bb[2] = bb[3] = 0
    if m == 0:
        return 0
    for j in range(m):
        start = cc
        cc += c[j]
        if j % 2 == 0 or c[j] == 0:
            continue
        if h == 0:
            return -1
        y0 = start % h
        x0 = (start - y0) // h
        y1 = (cc - 1) % h
        x1 = (cc - 1 - y1) // h
        xs = xs if xs < x0 else x0
        xe = xe if xe > x1 else x1
        if x0 < x1:
            ys = 0
            ye = h - 1
        else:
            ys = ys if ys < y0 else y0
            ye = ye if ye > y1 else y1
    bb[0] = xs
    bb[2] = <uint32_t> (xe - xs + 1)
    bb[1] = ys
    bb[3] = <uint32_t> (ye - ys + 1)
    return 0


def to_bbox(const uint32_t[::1] counts, uint64_t h, uint64_t w):
    """pycocotools' ``toBbox`` of a run list ([x, y, w, h] as floats), or None
    where it divides by a height of 0 (it crashes)."""
    cdef double bb[4]
    cdef int r
    with nogil:
        r = _to_bbox(&counts[0] if counts.shape[0] else NULL, counts.shape[0], <uint32_t> h, <uint32_t> w, bb)
    return None if r else [bb[0], bb[1], bb[2], bb[3]]


def area(const uint32_t[::1] counts):
    """pycocotools' ``area`` of a run list (the sum of its odd runs, modulo 2**32)."""
    cdef uint32_t a = 0
    cdef Py_ssize_t j
    for j in range(1, counts.shape[0], 2):
        a += counts[j]
    return a


cdef inline bint _advance(uint32_t* cx, const uint32_t* X, Py_ssize_t kx, Py_ssize_t* x, bint* vx,
                          uint32_t c) noexcept nogil:
    """One list's side of a step of ``rleIou``'s and ``rleMerge``'s walk over two
    run lists: its current count ``cx`` less ``c`` and, when that leaves 0 and the
    list ``X`` (``kx`` counts, the next at ``x``) has more, the next count (the
    side's value ``vx`` flips); whether it moved on to one."""
    cx[0] -= c
    if cx[0] == 0 and x[0] < kx:
        cx[0] = X[x[0]]
        x[0] += 1
        vx[0] = not vx[0]
        return True
    return False


cdef int _merge(const uint32_t* A, Py_ssize_t ka, const uint32_t* B, Py_ssize_t kb,
                uint32_t* inter, uint32_t* union_) noexcept nogil:
    """``rleIou``'s merge of two run lists: 0 with the intersection and union,
    or -1 where its loop never ends."""
    cdef uint32_t c, ca, cb, ct = 1, i = 0, u = 0
    cdef Py_ssize_t a = 1, b = 1
    cdef bint va = False, vb = False, moved
    if ka == 0 or kb == 0:
        return -2   # (pycocotools would read a count of an empty list: not reached, as its box is empty)
    ca = A[0]
    cb = B[0]
    while ct > 0:
        c = ca if ca < cb else cb
        if va or vb:
            u += c
            if va and vb:
                i += c
        moved = c != 0
        if _advance(&ca, A, ka, &a, &va, c):
            moved = True
        if _advance(&cb, B, kb, &b, &vb, c):
            moved = True
        ct = ca + cb   # (modulo 2**32, as pycocotools' unsigned sum)
        if not moved and ct > 0:
            return -1   # the same state again, for ever
    inter[0] = i
    union_[0] = u
    return 0


def rle_iou(list dt, list gt, const uint8_t[::1] crowd):
    """pycocotools' ``iou`` of two lists of RLEs, each given as
    ``(counts, h, w)`` (counts: :func:`frstring`'s; h, w: the sizes as C
    ``siz``): ``(ious, failure)``.

    ``ious`` is the (len(dt), len(gt)) float64 array pycocotools returns;
    ``failure`` is None, or where pycocotools fails instead:
    ``("height", "dt" | "gt", index)`` (a division by a height of 0) or
    ``("hang", d, g)`` (the IoU of that pair never ends).
    """
    cdef Py_ssize_t m = len(dt), n = len(gt), d, g, k
    o = np.zeros(m * n, np.float64)
    cdef double[::1] ov = o
    boxes = np.zeros((m + n, 4), np.float64)
    cdef double[:, ::1] bx = boxes
    cdef const uint32_t[::1] ca, cb
    cdef double w, hh, inter, un, ga, da
    cdef uint32_t ii, uu, bh, bw
    cdef int r
    cdef Py_ssize_t ka, kb
    items = dt + gt
    for k in range(m + n):
        ca, h, wd = items[k]
        bh = <uint32_t> (<uint64_t> h)
        bw = <uint32_t> (<uint64_t> wd)
        with nogil:
            r = _to_bbox(&ca[0] if ca.shape[0] else NULL, ca.shape[0], bh, bw, &bx[k, 0])
        if r:
            return None, ("height", "dt" if k < m else "gt", k if k < m else k - m)
    # bbIou
    for g in range(n):
        ga = bx[m + g, 2] * bx[m + g, 3]
        for d in range(m):
            da = bx[d, 2] * bx[d, 3]
            ov[g * m + d] = 0
            w = fmin(bx[d, 2] + bx[d, 0], bx[m + g, 2] + bx[m + g, 0]) - fmax(bx[d, 0], bx[m + g, 0])
            if w <= 0:
                continue
            hh = fmin(bx[d, 3] + bx[d, 1], bx[m + g, 3] + bx[m + g, 1]) - fmax(bx[d, 1], bx[m + g, 1])
            if hh <= 0:
                continue
            inter = w * hh
            un = da if crowd[g] else da + ga - inter
            ov[g * m + d] = inter / un
    # rleIou
    for g in range(n):
        cb, gh, gw = gt[g]
        kb = cb.shape[0]
        for d in range(m):
            if not ov[g * m + d] > 0:
                continue
            ca, dh, dw = dt[d]
            if dh != gh or dw != gw:
                ov[g * m + d] = -1
                continue
            ka = ca.shape[0]
            with nogil:
                r = _merge(&ca[0] if ka else NULL, ka, &cb[0] if kb else NULL, kb, &ii, &uu)
            if r:
                return None, ("hang" if r == -1 else "empty", d, g)
            if ii == 0:
                uu = 1
            elif crowd[g]:
                uu = area(ca)
            ov[g * m + d] = <double> ii / <double> uu
    return o.reshape((m, n), order="F"), None


# --------------------------------------------------------------------------
# rleFrPoly, rleToString, rleMerge (polygons, for images of a side of 0)
# --------------------------------------------------------------------------

from libc.stdint cimport int32_t, INT32_MIN
from libc.math cimport floor, ceil
from libc.stdlib cimport qsort


cdef inline int32_t _cvt(double v) noexcept nogil:
    """C's ``(int) v`` as x86-64 computes it (cvttsd2si): truncation, and
    INT_MIN for NaN and for values out of the int range."""
    if not (v > -2147483649.0 and v < 2147483648.0):
        return INT32_MIN
    return <int32_t> v


cdef inline uint32_t _uabs(int32_t a) noexcept nogil:
    """``(uint) abs(a)`` (abs(INT_MIN) is INT_MIN on x86-64)."""
    return <uint32_t> a if a >= 0 else <uint32_t> 0 - <uint32_t> a


cdef int _ucmp(const void* a, const void* b) noexcept nogil:
    cdef uint32_t c = (<uint32_t*> a)[0], d = (<uint32_t*> b)[0]
    return 1 if c > d else (-1 if c < d else 0)


def frpoly(const double[::1] xy, uint64_t h, uint64_t w, uint64_t max_points=1 << 27):
    """The counts pycocotools' ``rleFrPoly`` makes of a polygon (``xy``: x0,
    y0, x1, y1, ...; ``len(xy) // 2`` points) on an ``h x w`` image, or None
    where it would walk more than ``max_points`` boundary points (its memory
    then runs out).  Coordinates are expected within +-1e6 (the scaled
    points then fit an int)."""
    cdef Py_ssize_t k = xy.shape[0] // 2, j, n
    cdef double scale = 5
    if k == 0:
        # (pycocotools walks no point: its one count is the whole image)
        return np.array([<uint32_t> (h * w)], np.uint32)
    x = np.empty(k + 1, np.int32)
    y = np.empty(k + 1, np.int32)
    cdef int32_t[::1] X = x, Y = y
    cdef uint64_t m = 0
    cdef uint32_t ax, ay
    for j in range(k):
        X[j] = _cvt(scale * xy[2 * j] + .5)
        Y[j] = _cvt(scale * xy[2 * j + 1] + .5)
    X[k] = X[0]
    Y[k] = Y[0]
    for j in range(k):
        ax = _uabs(<int32_t> (<uint32_t> X[j] - <uint32_t> X[j + 1]))
        ay = _uabs(<int32_t> (<uint32_t> Y[j] - <uint32_t> Y[j + 1]))
        m += <uint32_t> ((ax if ax > ay else ay) + 1)
    if m > max_points:
        return None
    u = np.empty(m, np.int32)
    v = np.empty(m, np.int32)
    cdef int32_t[::1] U = u, V = v
    cdef int32_t xs, xe, ys, ye, dx, dy, t, d, steps, p0, q0
    cdef int32_t* P
    cdef int32_t* Q
    cdef bint flip
    cdef double s
    m = 0
    with nogil:
        for j in range(k):
            xs = X[j]; xe = X[j + 1]; ys = Y[j]; ye = Y[j + 1]
            dx = <int32_t> _uabs(xe - xs)
            dy = <int32_t> _uabs(ys - ye)
            flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
            if flip:
                t = xs; xs = xe; xe = t
                t = ys; ys = ye; ye = t
            # along the longer axis (P, from p0) one point a pixel, the other
            # (Q, from q0) interpolated
            if dx >= dy:
                P, Q, steps, p0, q0 = &U[0], &V[0], dx, xs, ys
                s = (<double> (ye - ys)) / dx
            else:
                P, Q, steps, p0, q0 = &V[0], &U[0], dy, ys, xs
                s = (<double> (xe - xs)) / dy
            for d in range(steps + 1):
                t = steps - d if flip else d
                P[m] = t + p0
                Q[m] = _cvt(q0 + s * t + .5)
                m += 1
    # points along the y-boundary, downsampled
    n = <Py_ssize_t> m
    a = np.empty(n + 1, np.uint32)
    cdef uint32_t[::1] A = a
    cdef double xd, yd, wm1 = <double> (w - 1), hd = <double> h
    cdef Py_ssize_t q = 0
    cdef uint32_t hi = <uint32_t> <int32_t> h
    with nogil:
        for j in range(1, n):
            if U[j] == U[j - 1]:
                continue
            xd = <double> (U[j] if U[j] < U[j - 1] else U[j] - 1)
            xd = (xd + .5) / scale - .5
            if floor(xd) != xd or xd < 0 or xd > wm1:
                continue
            yd = <double> (V[j] if V[j] < V[j - 1] else V[j - 1])
            yd = (yd + .5) / scale - .5
            if yd < 0:
                yd = 0
            elif yd > hd:
                yd = hd
            yd = ceil(yd)
            A[q] = <uint32_t> _cvt(xd) * hi + <uint32_t> _cvt(yd)
            q += 1
        A[q] = <uint32_t> (h * w)
        q += 1
        qsort(&A[0], q, sizeof(uint32_t), _ucmp)
    cdef uint32_t p = 0, tt
    for j in range(q):
        tt = A[j]
        A[j] -= p
        p = tt
    out = []
    j = 0
    out.append(A[j])
    j += 1
    while j < q:
        if A[j] > 0:
            out.append(A[j])
            j += 1
        else:
            j += 1
            if j < q:
                out[len(out) - 1] = <uint32_t> (out[len(out) - 1] + A[j])
                j += 1
    return np.array(out, np.uint32)


def tostring(const uint32_t[::1] counts):
    """pycocotools' ``rleToString`` of a run list (bytes)."""
    cdef Py_ssize_t i, p = 0, n = counts.shape[0]
    cdef int64_t x
    cdef int c
    cdef bint more
    buf = np.empty(7 * n + 1, np.uint8)   # (a count of 32 bits, with its sign: at most 7 characters)
    cdef uint8_t[::1] out = buf
    for i in range(n):
        x = <int64_t> counts[i]
        if i > 2:
            x -= <int64_t> counts[i - 2]
        more = True
        while more:
            c = <int> (x & 0x1f)
            x >>= 5
            more = (x != -1) if (c & 0x10) else (x != 0)
            if more:
                c |= 0x20
            out[p] = <uint8_t> (c + 48)
            p += 1
    return buf[:p].tobytes()


def merge(list runs, uint64_t h, uint64_t w):
    """pycocotools' ``rleMerge`` (union) of run lists of one ``h x w`` size:
    ``(counts, failure)``, failure None, ``"overflow"`` where it writes past
    its buffer of ``h * w + 1`` counts (its heap is corrupted) or ``"hang"``
    where its loop never ends."""
    cdef Py_ssize_t n = len(runs)
    if n == 1:
        return np.asarray(runs[0], np.uint32), None
    cdef uint64_t cap = h * w + 1
    cdef const uint32_t[::1] A, B
    cnts = np.asarray(runs[0], np.uint32).copy()
    if <uint64_t> cnts.shape[0] > cap:
        return None, "overflow"
    cdef uint32_t c, ca, cb, cc, ct
    cdef bint v, va, vb, vp, moved
    cdef Py_ssize_t a, b, i
    for i in range(1, n):
        A = cnts
        B = np.asarray(runs[i], np.uint32)
        out = []
        ca = A[0]
        cb = B[0]
        v = va = vb = False
        a = b = 1
        cc = 0
        ct = 1
        while ct > 0:
            c = ca if ca < cb else cb
            cc += c
            moved = c != 0
            if _advance(&ca, &A[0], A.shape[0], &a, &va, c):
                moved = True
            if _advance(&cb, &B[0], B.shape[0], &b, &vb, c):
                moved = True
            ct = ca + cb
            vp = v
            v = va or vb
            if v != vp or ct == 0:
                out.append(cc)
                cc = 0
                if <uint64_t> len(out) > cap:
                    return None, "overflow"
            if not moved and ct > 0:
                return None, "hang"
        cnts = np.array(out, np.uint32)
    return cnts, None
