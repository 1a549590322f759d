# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""COCO polygons to compressed RLE strings, natively (``boundary_api.masks.polygons``).

Private module (``boundary_api.masks._polygon``).
"""

# Byte for byte what pycocotools writes for ``merge(frPyObjects(polygons, h, w))``.
#
# The rasterisation follows pycocotools' rules (maskApi.c, rleFrPoly):
#   * vertices are scaled by 5 and rounded as the C cast ``(int)(5*c + .5)``
#     (truncation toward zero, so negative coordinates round up);
#   * each closed edge is walked on the 5x grid one step at a time along its
#     longer axis; the other coordinate is ``(int)(start + slope*t + .5)``
#     where the start and the sign of the slope are chosen so that the edge is
#     always rasterised from its lower end (the walk order itself follows the
#     polygon); an edge of length zero yields one point whose rounded
#     coordinate is the cast of a NaN (INT_MIN on x86-64);
#   * along the concatenated walk (no step from the last point back to the
#     first), every step that changes the fine x gives, if the lower x of the
#     two points (the upper one minus one when the step goes right) is
#     u = 5*x + 2 for an image column x, a toggle at row
#     ceil(clamp((v + .5)/5 - .5, 0, h)) of column x, where v is the lower
#     fine y of the two points;
#   * the toggles, sorted in column-major order, switch the mask on and off
#     (two toggles at one place cancel);
#   * the polygons of one annotation are united.
#
# Instead of materialising every fine point of the walk, the kernel only
# evaluates the points whose step can make a toggle: along an edge walked in
# x (|dx| >= |dy|) those are every fifth x; along an edge walked in y the fine
# x is a monotone function of the step, so the step where it passes a
# candidate value is estimated from the slope and settled by evaluating the
# exact rounded values around the estimate.  Every double of the walk is
# computed with the operations, in the order, pycocotools uses, so the
# rounding is the same (no fast-math; on x86-64 nothing is fused into an
# FMA); the column and row of a toggle, which pycocotools computes in doubles
# too, are computed in integers, which gives the same values (see _poly_push).

from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.float cimport PyFloat_AsDouble
from cpython.list cimport PyList_Check
from cpython.tuple cimport PyTuple_Check
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free
from libc.string cimport memset

from boundary_api.masks._rle cimport I64Vec, ByteVec, _i64_reserve, _encode

import numpy as np

# bound on the scaled coordinates |5*c + .5|: pycocotools computes with them
# (and their differences) in C ints, and needs memory in proportion to them
cdef double _POLY_LIMIT = 1073741824.0

# what the C cast of a NaN gives on x86-64 (pycocotools' zero-length edges;
# the value only ever meets a step at a negative fine x, which makes no
# toggle, but the walk is kept as pycocotools walks it)
cdef int64_t _INT_MIN = -2147483648


# Append the toggle of image column ``x`` whose row comes from the fine y ``vv``,
# as the pair (x, row).  pycocotools computes the row in doubles as
# ceil(clamp((vv + .5) / 5 - .5, 0, h)); for an int vv that is exactly
# clamp(ceil((vv - 2) / 5), 0, h): (vv + .5) / 5 - .5 is (vv - 2) / 5 up to a
# rounding far smaller than its distance to the next integer (at least 1/5),
# and exact when it is an integer.  Likewise a fine x u is a column exactly
# when u - 2 is a multiple of 5, the column being (u - 2) / 5.
cdef inline int _poly_push(int64_t x, int64_t vv, int64_t h, I64Vec* pos) noexcept nogil:
    cdef int64_t y
    if vv <= 2:
        y = 0
    else:
        y = (vv + 2) // 5
        if y > h:
            y = h
    if pos.n + 2 > pos.cap:
        if _i64_reserve(pos, pos.n + 2) != 0:
            return -1
    pos.data[pos.n] = x
    pos.data[pos.n + 1] = y
    pos.n += 2
    return 0


# The step between two consecutive walk points (u0, v0) -> (u1, v1), taken as
# pycocotools takes it: the lower x (minus one when going right), the lower y.
# Used where the walk passes from one edge to the next, where x may jump.
cdef inline int _poly_step(int64_t u0, int64_t v0, int64_t u1, int64_t v1,
                           int64_t h, int64_t w, I64Vec* pos) noexcept nogil:
    cdef int64_t uu
    if u1 == u0:
        return 0
    uu = (u1 if u1 < u0 else u1 - 1) - 2
    if uu < 0 or uu % 5 != 0 or uu // 5 > w - 1:
        return 0
    return _poly_push(uu // 5, v1 if v1 < v0 else v0, h, pos)


# first fine column >= lo that is a candidate (5*x + 2), as int64
cdef inline int64_t _first_candidate(int64_t lo) noexcept nogil:
    cdef int64_t r = (lo - 2) % 5
    if r < 0:
        r += 5
    return lo if r == 0 else lo + 5 - r


# fine x of step t of an edge walked in y
cdef inline int64_t _ux(int64_t xs, double s, int64_t t) noexcept nogil:
    return <int> (<double> xs + s * <double> t + .5)


# fine y of step t of an edge walked in x (dx >= 1)
cdef inline int64_t _vy(int64_t ys, double s, int64_t t) noexcept nogil:
    return <int> (<double> ys + s * <double> t + .5)


# The toggles of one closed polygon of ``k`` vertices ``xy`` (x0, y0, x1, ...),
# appended to ``pos`` as (column, row) pairs.  Returns 0, -1 when out of
# memory, -2 when a coordinate is not finite or |5*c + .5| >= _POLY_LIMIT.
cdef int _polygon_toggles(const double* xy, Py_ssize_t k, int64_t h, int64_t w, I64Vec* pos) noexcept nogil:
    cdef Py_ssize_t j
    cdef int64_t x0, y0, x1, y1, xs, ys, xe, ye, dx, dy, uu, hi_u, lo_u, ua, ub, a, b
    cdef int64_t fu, fv, lu, lv, pu = 0, pv = 0
    cdef int64_t u_max = 5 * (w - 1) + 2
    cdef int flip, inc, have_prev = 0
    cdef double s, te, sx0, sy0, sx1, sy1
    for j in range(k):
        sx0 = 5.0 * xy[2 * j] + .5
        sy0 = 5.0 * xy[2 * j + 1] + .5
        if j + 1 < k:
            sx1 = 5.0 * xy[2 * j + 2] + .5
            sy1 = 5.0 * xy[2 * j + 3] + .5
        else:
            sx1 = 5.0 * xy[0] + .5
            sy1 = 5.0 * xy[1] + .5
        if not (-_POLY_LIMIT < sx0 < _POLY_LIMIT and -_POLY_LIMIT < sy0 < _POLY_LIMIT
                and -_POLY_LIMIT < sx1 < _POLY_LIMIT and -_POLY_LIMIT < sy1 < _POLY_LIMIT):
            return -2
        x0 = <int> sx0
        y0 = <int> sy0
        x1 = <int> sx1
        y1 = <int> sy1
        xs = x0; ys = y0; xe = x1; ye = y1
        dx = xe - xs if xe >= xs else xs - xe
        dy = ys - ye if ys >= ye else ye - ys
        flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
        if flip:
            xs = x1; xe = x0; ys = y1; ye = y0
        if dx >= dy:
            if dx == 0:
                # one point; its y is the cast of 0/0 (x86-64: INT_MIN)
                fu = xs; fv = _INT_MIN; lu = fu; lv = fv
            else:
                s = (<double> (ye - ys)) / <double> dx
                # walk order: t = 0..dx, or dx..0 when flipped; u = xs + t
                if flip:
                    fu = xs + dx; fv = _vy(ys, s, dx); lu = xs; lv = _vy(ys, s, 0)
                else:
                    fu = xs; fv = _vy(ys, s, 0); lu = xs + dx; lv = _vy(ys, s, dx)
        else:
            s = (<double> (xe - xs)) / <double> dy
            if flip:
                fv = ys + dy; fu = _ux(xs, s, dy); lv = ys; lu = _ux(xs, s, 0)
            else:
                fv = ys; fu = _ux(xs, s, 0); lv = ys + dy; lu = _ux(xs, s, dy)
        if have_prev:
            if _poly_step(pu, pv, fu, fv, h, w, pos) != 0:
                return -1
        have_prev = 1
        pu = lu; pv = lv
        if dx >= dy:
            if dx == 0:
                continue
            # steps (xs + t, xs + t + 1), t = 0..dx-1: a toggle at column
            # xs + t, row from the lower of the two fine y
            hi_u = xs + dx - 1
            if hi_u > u_max:
                hi_u = u_max
            uu = _first_candidate(xs if xs > 2 else 2)
            while uu <= hi_u:
                a = _vy(ys, s, uu - xs)
                b = _vy(ys, s, uu - xs + 1)
                if _poly_push((uu - 2) // 5, a if a < b else b, h, pos) != 0:
                    return -1
                uu += 5
        else:
            # u(t) is monotone in t and moves by at most 1 per step; for every
            # candidate column U between u(0) and u(dy), the toggle is at the
            # step between the points at U and U + 1 and takes the lower fine
            # y of the two (v = ys + t grows with t).
            ua = _ux(xs, s, 0)
            ub = _ux(xs, s, dy)
            if ua == ub:
                continue
            lo_u = ua if ua < ub else ub
            hi_u = (ub if ua < ub else ua) - 1
            if hi_u > u_max:
                hi_u = u_max
            uu = _first_candidate(lo_u if lo_u > 2 else 2)
            inc = ua < ub
            while uu <= hi_u:
                # the step T (1 <= T <= dy) where the walk passes from U to
                # U + 1: the first t with u(t) > U when u grows, the first t
                # with u(t) <= U when it shrinks.  Since U >= 2, u(t) > U
                # means xs + s*t + .5 >= U + 1, so T is about
                # (U + .5 - xs) / s; the estimate is then corrected by exact
                # evaluations (any estimate gives the same T).
                te = (<double> uu + .5 - <double> xs) / s
                if not (te >= 0):
                    te = 0
                elif te > <double> dy:
                    te = <double> dy
                a = (<int64_t> te) + 1
                if a > dy:
                    a = dy
                while a > 1 and (_ux(xs, s, a - 1) > uu) == inc:
                    a -= 1
                while (_ux(xs, s, a) > uu) != inc:
                    a += 1
                # the lower fine y of the two points is that of step T - 1
                if _poly_push((uu - 2) // 5, ys + a - 1, h, pos) != 0:
                    return -1
                uu += 5
    return 0


# In-place sort of int64 keys (insertion sort for short runs, quicksort with a
# median of three above; recursion only into the smaller half).
cdef void _sort_i64(int64_t* a, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i, j, lo, hi, mid
    cdef int64_t key, p, tmp
    while n > 24:
        mid = n // 2
        # median of a[0], a[mid], a[n-1] into a[mid]
        if a[mid] < a[0]:
            tmp = a[mid]; a[mid] = a[0]; a[0] = tmp
        if a[n - 1] < a[mid]:
            tmp = a[n - 1]; a[n - 1] = a[mid]; a[mid] = tmp
            if a[mid] < a[0]:
                tmp = a[mid]; a[mid] = a[0]; a[0] = tmp
        p = a[mid]
        lo = 0
        hi = n - 1
        while lo <= hi:
            while a[lo] < p:
                lo += 1
            while a[hi] > p:
                hi -= 1
            if lo <= hi:
                tmp = a[lo]; a[lo] = a[hi]; a[hi] = tmp
                lo += 1
                hi -= 1
        # [0, hi] <= p <= [lo, n)
        if hi + 1 < n - lo:
            _sort_i64(a, hi + 1)
            a = a + lo
            n = n - lo
        else:
            _sort_i64(a + lo, n - lo)
            n = hi + 1
    for i in range(1, n):
        key = a[i]
        j = i - 1
        while j >= 0 and a[j] > key:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = key


# Toggles given as (column, row) pairs -> their positions column * h + row,
# sorted, in ``out`` (cleared first): a counting sort on the column (a polygon
# crosses most of its columns twice), then the few rows of each column sorted.
cdef int _sort_toggles(const int64_t* xy, Py_ssize_t n, int64_t h, I64Vec* cnt, I64Vec* out) noexcept nogil:
    cdef Py_ssize_t i, j, c, span, lo, hi
    cdef int64_t xmin, xmax, x, key
    out.n = 0
    if n == 0:
        return 0
    xmin = xy[0]
    xmax = xy[0]
    for i in range(1, n):
        x = xy[2 * i]
        if x < xmin:
            xmin = x
        elif x > xmax:
            xmax = x
    span = xmax - xmin + 1
    if _i64_reserve(cnt, span + 1) != 0 or _i64_reserve(out, n) != 0:
        return -1
    memset(cnt.data, 0, (span + 1) * sizeof(int64_t))
    for i in range(n):
        cnt.data[xy[2 * i] - xmin + 1] += 1
    for c in range(span):
        cnt.data[c + 1] += cnt.data[c]
    for i in range(n):
        c = xy[2 * i] - xmin
        out.data[cnt.data[c]] = xy[2 * i] * h + xy[2 * i + 1]
        cnt.data[c] += 1
    out.n = n
    # cnt[c] is now the end of column c's block (and the start of c + 1's)
    lo = 0
    for c in range(span):
        hi = cnt.data[c]
        if hi - lo > 32:
            _sort_i64(out.data + lo, hi - lo)
        else:
            for i in range(lo + 1, hi):
                key = out.data[i]
                j = i - 1
                while j >= lo and out.data[j] > key:
                    out.data[j + 1] = out.data[j]
                    j -= 1
                out.data[j + 1] = key
        lo = hi
    return 0


# Sorted toggles -> maximal ones-intervals (positions of even multiplicity
# cancel; an unmatched last toggle runs to ``total``), appended to ``out``.
cdef int _toggles_to_intervals(const int64_t* p, Py_ssize_t n, int64_t total, I64Vec* out) noexcept nogil:
    cdef Py_ssize_t i = 0, j
    cdef int on = 0
    cdef int64_t start = 0
    while i < n:
        j = i + 1
        while j < n and p[j] == p[i]:
            j += 1
        if (j - i) & 1:
            if on:
                if p[i] > start:
                    if _i64_reserve(out, out.n + 2) != 0:
                        return -1
                    out.data[out.n] = start
                    out.data[out.n + 1] = p[i]
                    out.n += 2
                on = 0
            else:
                start = p[i]
                on = 1
        i = j
    if on and total > start:
        if _i64_reserve(out, out.n + 2) != 0:
            return -1
        out.data[out.n] = start
        out.data[out.n + 1] = total
        out.n += 2
    return 0


# Union of two sorted lists of maximal intervals into ``out`` (cleared first).
cdef int _union_intervals(const int64_t* a, Py_ssize_t na, const int64_t* b, Py_ssize_t nb,
                          I64Vec* out) noexcept nogil:
    cdef Py_ssize_t i = 0, j = 0
    cdef int64_t s, e
    out.n = 0
    if _i64_reserve(out, na + nb) != 0:
        return -1
    while i < na or j < nb:
        if j >= nb or (i < na and a[i] <= b[j]):
            s = a[i]; e = a[i + 1]; i += 2
        else:
            s = b[j]; e = b[j + 1]; j += 2
        if out.n > 0 and s <= out.data[out.n - 1]:
            if e > out.data[out.n - 1]:
                out.data[out.n - 1] = e
        else:
            out.data[out.n] = s
            out.data[out.n + 1] = e
            out.n += 2
    return 0


def polygons_rle(const double[:] coords, const int64_t[:] poly_off, const int64_t[:] ann_off,
                 const int64_t[:] h, const int64_t[:] w, Py_ssize_t lo, Py_ssize_t hi):
    """Compressed RLE strings of the polygon annotations ``lo .. hi-1``.

    Annotation ``i`` is made of polygons ``ann_off[i] .. ann_off[i+1]-1``;
    polygon ``p`` has the vertices ``coords[poly_off[p] .. poly_off[p+1]-1]``
    (x0, y0, x1, y1, ...: an even number, at least 6, of finite numbers with
    ``|5*c + .5| < 2**30``); its image is ``h[i] x w[i]`` (both >= 1).  All
    this is checked (``ValueError``), so that no input reads out of bounds.

    Returns ``(buffer, offsets)``: the strings one after the other in one
    ``bytes`` object, and an int64 array of ``hi - lo + 1`` offsets into it.
    """
    cdef Py_ssize_t i, p, n = hi - lo
    cdef I64Vec tog, acc, poly, tmp, swap, cnt, srt
    cdef ByteVec enc
    cdef int err = 0, r
    cdef int64_t ln
    # the structure, checked here so that no input can make the loop read
    # out of bounds (polygons_to_rle checks all this with messages for users)
    if lo < 0 or hi < lo or ann_off.shape[0] < hi + 1 or h.shape[0] < hi or w.shape[0] < hi:
        raise ValueError(f"polygons_rle: range {lo}..{hi} outside the arrays")
    for i in range(lo, hi):
        if not (1 <= h[i] <= 2147483647 and 1 <= w[i] <= 2147483647):
            raise ValueError(f"polygons_rle: item {i} has an image size {h[i]}x{w[i]}")
        if not (0 <= ann_off[i] < ann_off[i + 1] < poly_off.shape[0]):
            raise ValueError(f"polygons_rle: item {i} has no polygons or its polygon offsets are out of range")
        for p in range(ann_off[i], ann_off[i + 1]):
            ln = poly_off[p + 1] - poly_off[p]
            if poly_off[p] < 0 or poly_off[p + 1] > coords.shape[0] or ln < 6 or ln % 2:
                raise ValueError(f"polygons_rle: item {i}, polygon {p - ann_off[i]}: offsets out of range "
                                 "or not an even number of at least 6 coordinates")
    offs = np.zeros(n + 1, np.int64)
    cdef int64_t[:] of = offs
    tog.data = NULL; tog.n = 0; tog.cap = 0
    acc.data = NULL; acc.n = 0; acc.cap = 0
    poly.data = NULL; poly.n = 0; poly.cap = 0
    tmp.data = NULL; tmp.n = 0; tmp.cap = 0
    cnt.data = NULL; cnt.n = 0; cnt.cap = 0
    srt.data = NULL; srt.n = 0; srt.cap = 0
    enc.data = NULL; enc.n = 0; enc.cap = 0
    try:
        with nogil:
            for i in range(lo, hi):
                acc.n = 0
                for p in range(ann_off[i], ann_off[i + 1]):
                    tog.n = 0
                    r = _polygon_toggles(&coords[poly_off[p]], (poly_off[p + 1] - poly_off[p]) // 2,
                                         h[i], w[i], &tog)
                    if r != 0:
                        err = 1 if r == -1 else 2
                        break
                    if _sort_toggles(tog.data, tog.n // 2, h[i], &cnt, &srt) != 0:
                        err = 1
                        break
                    if p == ann_off[i]:
                        if _toggles_to_intervals(srt.data, srt.n, h[i] * w[i], &acc) != 0:
                            err = 1
                            break
                    else:
                        poly.n = 0
                        if _toggles_to_intervals(srt.data, srt.n, h[i] * w[i], &poly) != 0:
                            err = 1
                            break
                        if _union_intervals(acc.data, acc.n, poly.data, poly.n, &tmp) != 0:
                            err = 1
                            break
                        swap = acc
                        acc = tmp
                        tmp = swap
                if err:
                    break
                if _encode(acc.data, acc.n, h[i] * w[i], &enc) != 0:
                    err = 1
                    break
                of[i - lo + 1] = enc.n
        if err == 2:
            raise ValueError(f"polygons_rle: item {i}, polygon {p - ann_off[i]} has a coordinate that is "
                             "not finite or too large (|5 * c + 0.5| must be below 2**30)")
        if err:
            raise MemoryError()
        return PyBytes_FromStringAndSize(enc.data, enc.n), offs
    finally:
        free(tog.data); free(acc.data); free(poly.data); free(tmp.data); free(enc.data)
        free(cnt.data); free(srt.data)



def flatten_polygons(list segmentations):
    """``(coords, poly_off, ann_off)`` of a list of COCO polygon lists.

    Item ``i`` of ``segmentations`` is a list (or tuple) of polygons, each a
    list (or tuple) of numbers; ``coords`` (float64) holds every number in
    order, converted as ``float()`` converts it, polygon ``p`` being
    ``coords[poly_off[p]:poly_off[p + 1]]`` and annotation ``i`` the polygons
    ``ann_off[i] .. ann_off[i + 1] - 1``.  Raises ``TypeError`` naming the item
    and polygon when something is not a list of lists of numbers.
    """
    cdef Py_ssize_t n = len(segmentations), i, j, k, m, npoly = 0, ncoord = 0, p, c
    cdef object seg, poly
    for i in range(n):
        seg = segmentations[i]
        if not (PyList_Check(seg) or PyTuple_Check(seg)):
            raise TypeError(f"item {i} is not a list of polygons (got {type(seg).__name__})")
        m = len(seg)
        npoly += m
        for j in range(m):
            poly = seg[j]
            if not (PyList_Check(poly) or PyTuple_Check(poly)):
                raise TypeError(f"item {i}, polygon {j} is not a list of coordinates "
                                f"(got {type(poly).__name__})")
            ncoord += len(poly)
    coords = np.empty(ncoord, np.float64)
    poly_off = np.empty(npoly + 1, np.int64)
    ann_off = np.empty(n + 1, np.int64)
    cdef double[:] co = coords
    cdef int64_t[:] po = poly_off
    cdef int64_t[:] ao = ann_off
    p = 0
    c = 0
    po[0] = 0
    ao[0] = 0
    for i in range(n):
        seg = segmentations[i]
        for j in range(len(seg)):
            poly = seg[j]
            for k in range(len(poly)):
                try:
                    co[c] = PyFloat_AsDouble(poly[k])
                except (TypeError, ValueError, OverflowError) as exc:
                    raise TypeError(f"item {i}, polygon {j} has a coordinate that is not a number: "
                                    f"{poly[k]!r:.40}") from None
                c += 1
            p += 1
            po[p] = c
        ao[i + 1] = p
    return coords, poly_off, ann_off


def polygons_acceptable(const double[:] coords, const int64_t[:] poly_off, const int64_t[:] ann_off,
                        const int64_t[:] h, const int64_t[:] w, double max_coord):
    """Per annotation (flattened by :func:`flatten_polygons`), 1 when the
    instance checks accept its polygons: at least one polygon, each of an
    even number (>= 6) of finite coordinates with ``-min(w, max_coord) <= x
    <= min(2w, max_coord)`` and likewise for y; else 0.  (The checks word the
    problem of a refused annotation themselves.)"""
    cdef Py_ssize_t n = ann_off.shape[0] - 1, i, p, k, m
    cdef double x_lo, x_hi, y_lo, y_hi, v
    cdef uint8_t good
    out = np.zeros(max(n, 0), np.uint8)
    cdef uint8_t[:] ok = out
    if h.shape[0] < n or w.shape[0] < n or poly_off.shape[0] < 1 or ann_off[n] >= poly_off.shape[0] \
            or poly_off[poly_off.shape[0] - 1] > coords.shape[0]:
        raise ValueError("polygons_acceptable: inconsistent arrays")
    with nogil:
        for i in range(n):
            good = ann_off[i + 1] > ann_off[i]
            x_lo = -min(<double> w[i], max_coord)
            x_hi = min(2.0 * w[i], max_coord)
            y_lo = -min(<double> h[i], max_coord)
            y_hi = min(2.0 * h[i], max_coord)
            p = ann_off[i]
            while good and p < ann_off[i + 1]:
                m = poly_off[p + 1] - poly_off[p]
                if m < 6 or m % 2:
                    good = 0
                    break
                for k in range(poly_off[p], poly_off[p + 1], 2):
                    v = coords[k]
                    if not (v >= x_lo and v <= x_hi):  # NaN fails too
                        good = 0
                        break
                    v = coords[k + 1]
                    if not (v >= y_lo and v <= y_hi):
                        good = 0
                        break
                p += 1
            ok[i] = good
    return out
