# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# Declarations of boundary_api.masks._rle for the other kernel modules (cimport):
# growable C buffers, interval helpers (inline: compiled into each user), the RLE
# string codec and the string table.  Definitions of the non-inline functions: _rle.pyx.

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport realloc

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

# scratch bitsets of the measures' own kernels (the boundary kernel keeps its
# own, bounded, BoundaryWork)
cdef struct WordBuf:
    uint64_t* data
    Py_ssize_t cap

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

# index (even) of the first interval of se[:n] (sorted start, end pairs)
# that ends after t, n when none does: a binary search
cdef inline Py_ssize_t _first_ending_after(const int64_t* se, Py_ssize_t n, int64_t t) noexcept nogil:
    cdef Py_ssize_t lo = 0, hi = n // 2, mid
    while lo < hi:
        mid = (lo + hi) // 2
        if se[2 * mid + 1] <= t:
            lo = mid + 1
        else:
            hi = mid
    return 2 * lo

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

# Interval append that keeps one mask's list maximal: a run starting where the
# last one ended extends it.  ``first`` is where the current mask's intervals
# begin in ``v``: a buffer may hold several masks one after the other, and a
# run is never merged into an interval of an earlier mask, even when the two
# touch in column-major order (the last run of one object followed by the
# first run of the next).
cdef inline int _push_interval(I64Vec* v, Py_ssize_t first, int64_t s, int64_t e) noexcept nogil:
    if e <= s:
        return 0
    if v.n > first and v.data[v.n - 1] == s:
        v.data[v.n - 1] = e
        return 0
    if _i64_reserve(v, v.n + 2) != 0:
        return -1
    v.data[v.n] = s
    v.data[v.n + 1] = e
    v.n += 2
    return 0



# Decode a compressed RLE string into ``out`` (see _rle.pyx); the pixel total, or -1
# (``out.n`` unchanged).
cdef int64_t _decode(const unsigned char* s, Py_ssize_t slen, I64Vec* out) noexcept nogil
# The pixel total of a compressed RLE string, or -1 (see _rle.pyx); no runs written.
cdef int64_t _rle_total(const unsigned char* s, Py_ssize_t slen) noexcept nogil
# Encode ones-intervals covering ``total`` pixels as a compressed RLE string (see _rle.pyx).
cdef int _encode(const int64_t* se, Py_ssize_t n, int64_t total, ByteVec* out) noexcept nogil

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

# pixel bounding box as [x0, x1) x [y0, y1); all zero for an empty mask.  The
# column of each run is followed by stepping from the last one (a division
# only for a jump of 8 columns or more): two divisions per run were a
# noticeable part of the IoU step's time on masks of many runs.
cdef inline void _bbox(const int64_t* se, Py_ssize_t n, int64_t h, int64_t* bb) noexcept nogil:
    cdef Py_ssize_t i = 0
    cdef int64_t base, s, e, r0, r1, lo, hi
    bb[0] = 0; bb[1] = 0; bb[2] = 0; bb[3] = 0
    if n == 0:
        return
    bb[0] = se[0] // h
    bb[1] = (se[n - 1] - 1) // h + 1
    # (the extremes in locals, not in bb: the compiler may then keep them in
    # registers and take them with conditional moves, bb possibly aliasing se)
    lo = h
    hi = 0
    base = bb[0] * h               # first pixel of the current run's column
    while i < n:
        s = se[i]
        e = se[i + 1]
        if s - base >= 8 * h:
            base = (s // h) * h
        else:
            # one column on without a branch (a run is in the same column as
            # the last one or the next about equally often), more in a loop
            base += h & -(<int64_t> (s - base >= h))
            while s - base >= h:
                base += h
        if e - base > h:           # the run goes on into the next column
            bb[2] = 0
            bb[3] = h
            return
        r0 = s - base
        r1 = e - base
        lo = r0 if r0 < lo else lo
        hi = r1 if r1 > hi else hi
        i += 2
    bb[2] = lo
    bb[3] = hi

# number of pixels in both interval lists (see _rle.pyx)
cdef int64_t _intersection(const int64_t* a, Py_ssize_t na, const int64_t* b, Py_ssize_t nb) noexcept nogil

# k empty interval vectors (malloc'ed; NULL when out of memory), and their release
cdef I64Vec* _new_vecs(Py_ssize_t k) noexcept nogil
cdef void _free_vecs(I64Vec* v, Py_ssize_t k) noexcept nogil


# --------------------------------------------------------------------------
# string tables: borrowed pointers to RLE strings for nogil loops
# --------------------------------------------------------------------------

cdef class StringTable:
    cdef const unsigned char** ptr
    cdef Py_ssize_t* size
    cdef readonly Py_ssize_t n
    cdef object _keep
