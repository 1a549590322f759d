# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# Declarations of boundary_api.masks._boundary for the other kernel modules (cimport):
# the boundary kernel's per-thread scratch (inline init/free) and the kernel itself.
# Definitions: _boundary.pyx.

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free

from boundary_api.masks._rle cimport I64Vec, _push_interval

# index of the lowest set bit of a non-zero word (the bitset kernels' run finder)
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


cdef inline int _push_bits(I64Vec* out, Py_ssize_t first, int64_t base, uint64_t word) noexcept nogil:
    """The runs of set bits of ``word`` (bit ``k``: pixel ``base + k``) appended
    to ``out`` as intervals (:func:`_rle._push_interval`, merging from element
    ``first``); -1 when out of memory."""
    cdef int64_t tz, run
    cdef uint64_t inv
    while word:
        tz = ba_ctz64(word)
        inv = ~(word >> tz)
        if inv == 0:
            run = 64 - tz
        else:
            run = ba_ctz64(inv)
        if _push_interval(out, first, base + tz, base + tz + run) != 0:
            return -1
        if tz + run >= 64:
            word = 0
        else:
            word &= (~(<uint64_t> 0)) << (tz + run)
    return 0

# Population counts of bitsets: the number of set bits of ``a[0:n]``, and of
# ``a & b`` over ``ncol`` columns of ``nw`` words (column ``c`` at ``a + c *
# sa`` and ``b + c * sb``).  On x86 the POPCNT instruction is used where the
# processor has it (checked at run time: the extension is built for any
# x86-64), elsewhere the compiler's portable popcount.
cdef extern from *:
    """
    #include <stdint.h>
    #define BA_POPCOUNT_LOOPS(SUFFIX, ATTR, POP) \
    ATTR static CYTHON_INLINE int64_t ba_popcount_##SUFFIX(const uint64_t* a, Py_ssize_t n) { \
        int64_t s = 0; Py_ssize_t i; \
        for (i = 0; i < n; i++) s += (int64_t) POP(a[i]); \
        return s; \
    } \
    ATTR static CYTHON_INLINE int64_t ba_and_popcount2d_##SUFFIX(const uint64_t* a, Py_ssize_t sa, const uint64_t* b, \
                                                    Py_ssize_t sb, Py_ssize_t ncol, Py_ssize_t nw) { \
        int64_t s = 0; Py_ssize_t c, i; \
        for (c = 0; c < ncol; c++) { \
            for (i = 0; i < nw; i++) s += (int64_t) POP(a[i] & b[i]); \
            a += sa; b += sb; \
        } \
        return s; \
    }
    #if defined(_MSC_VER)
    #include <intrin.h>
    #if defined(_M_X64)
    #define BA_POP_PORTABLE(x) __popcnt64(x)
    #else
    static __inline unsigned ba_pop_swar(uint64_t x) {
        x = x - ((x >> 1) & 0x5555555555555555ULL);
        x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
        x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fULL;
        return (unsigned) ((x * 0x0101010101010101ULL) >> 56);
    }
    #define BA_POP_PORTABLE(x) ba_pop_swar(x)
    #endif
    BA_POPCOUNT_LOOPS(any, , BA_POP_PORTABLE)
    #define ba_popcount(a, n) ba_popcount_any(a, n)
    #define ba_and_popcount2d(a, sa, b, sb, c, w) ba_and_popcount2d_any(a, sa, b, sb, c, w)
    #elif (defined(__GNUC__) || defined(__clang__)) && (defined(__x86_64__) || defined(__i386__))
    BA_POPCOUNT_LOOPS(any, , __builtin_popcountll)
    BA_POPCOUNT_LOOPS(hw, __attribute__((target("popcnt"))), __builtin_popcountll)
    #define ba_popcount(a, n) \
        (__builtin_cpu_supports("popcnt") ? ba_popcount_hw(a, n) : ba_popcount_any(a, n))
    #define ba_and_popcount2d(a, sa, b, sb, c, w) \
        (__builtin_cpu_supports("popcnt") ? ba_and_popcount2d_hw(a, sa, b, sb, c, w) \
                                          : ba_and_popcount2d_any(a, sa, b, sb, c, w))
    #else
    BA_POPCOUNT_LOOPS(any, , __builtin_popcountll)
    #define ba_popcount(a, n) ba_popcount_any(a, n)
    #define ba_and_popcount2d(a, sa, b, sb, c, w) ba_and_popcount2d_any(a, sa, b, sb, c, w)
    #endif
    """
    int64_t ba_popcount(const uint64_t* a, Py_ssize_t n) nogil
    int64_t ba_and_popcount2d(const uint64_t* a, Py_ssize_t sa, const uint64_t* b, Py_ssize_t sb,
                              Py_ssize_t ncol, Py_ssize_t nw) nogil


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


# Bits of a mask's runs (``se[:n]``, h-pixel columns) ORed into column
# bitsets: column ``x0 + c`` at ``dst + c * nws``, bit 0 of its first word
# being image row ``row0``.  Every run must lie within those columns and the
# rows ``row0 .. row0 + 64 * nws - 1``.
cdef inline void _runs_to_bits(const int64_t* se, Py_ssize_t n, int64_t h, int64_t x0, int64_t row0,
                               int64_t nws, uint64_t* dst) noexcept nogil:
    cdef Py_ssize_t i = 0
    cdef int64_t s, e, c, top, b
    cdef int64_t cb = x0 * h        # first pixel of the current run's column
    cdef uint64_t* col = dst
    while i < n:
        s = se[i]
        e = se[i + 1]
        # the run's column: stepped from the last one (runs are sorted), a
        # division only for a jump of 8 columns or more
        if s - cb >= 8 * h:
            c = s // h
            cb = c * h
            col = dst + (c - x0) * nws
        while s - cb >= h:
            cb += h
            col += nws
        while True:
            top = cb + h
            b = e if e < top else top
            _set_bits(col, s - cb - row0, b - cb - row0)
            if e <= top:
                break
            s = top
            cb = top
            col += nws
        i += 2


# Scratch of the boundary kernel, one per thread.  The bitsets cover a part of
# the mask's bounding box at a time (see ``_boundary``), so their size is
# bounded by ``_budget_words`` rather than by the box's area.
cdef struct BoundaryWork:
    uint64_t* words      # bitsets of the current tile
    Py_ssize_t cap       # words allocated
    Py_ssize_t peak      # most words any tile asked for (for tests)
    I64Vec tmp           # outputs of the row strips, before they are merged
    int64_t* cur         # per row strip: a cursor into tmp, then (from ncur/2 on) its end
    Py_ssize_t ncur
    # > 0 when the last boundary left the whole box's boundary in ``words``:
    # that many words per column, one column per box column, bit 0 of a
    # column's first word being image row ``_bits_row0(bb)``; else 0
    Py_ssize_t bits_nws


cdef inline void _bw_init(BoundaryWork* bw) noexcept nogil:
    bw.words = NULL
    bw.cap = 0
    bw.peak = 0
    bw.tmp.data = NULL
    bw.tmp.n = 0
    bw.tmp.cap = 0
    bw.cur = NULL
    bw.ncur = 0
    bw.bits_nws = 0


cdef inline void _bw_free(BoundaryWork* bw) noexcept nogil:
    free(bw.words)
    free(bw.tmp.data)
    free(bw.cur)
    _bw_init(bw)


# Boundary (M AND NOT erode(M) by a (2d+1)-square) of a mask given as maximal
# ones-intervals of an h x w image, appended to ``out`` as a mask of its own;
# 0, or -1 when out of memory.  See _boundary.pyx.
cdef int _boundary(const int64_t* se, Py_ssize_t n, int64_t h, int64_t w, int64_t d,
                   BoundaryWork* bw, I64Vec* out) noexcept nogil

# The same for a non-empty mask whose bounding box ``bb`` (as ``_rle._bbox``
# gives it) is known.
cdef int _boundary_in_box(const int64_t* se, Py_ssize_t n, int64_t h, int64_t w, int64_t d,
                          const int64_t* bb, BoundaryWork* bw, I64Vec* out) noexcept nogil

# The boundary kernel's bitsets start at a row that is a multiple of 64 (the
# box's first row rounded down), so that the bitsets of two masks of one
# image line up word for word.
cdef inline int64_t _bits_row0(const int64_t* bb) noexcept nogil:
    return (bb[2] >> 6) << 6

# The boundary of a non-empty mask (bounding box ``bb``) as bitsets only, in
# two steps, where the whole box fits one tile and a (2d+1)-square fits in
# it.  ``_box_fill`` returns 1 and leaves the mask's bits in ``bw.words``
# (``bw.bits_nws`` words per box column, as the boundary's will be); 0
# (nothing done) otherwise; -1 when out of memory.  ``_box_erode`` then turns
# those bits into the boundary's.
cdef int _box_fill(const int64_t* se, Py_ssize_t n, int64_t h, int64_t d,
                   const int64_t* bb, BoundaryWork* bw) noexcept nogil
cdef void _box_erode(const int64_t* bb, int64_t d, BoundaryWork* bw) noexcept nogil

# Whether no (2d+1)-square fits in the box ``bb``: the boundary is then the
# whole mask (decided without arithmetic on d that could overflow).
cdef inline bint _boundary_is_mask(const int64_t* bb, int64_t d) noexcept nogil:
    return d >= (bb[3] - bb[2] + 1) // 2 or d >= (bb[1] - bb[0] + 1) // 2

# d from Python (any integer >= 0), clamped to max(h, w)
cdef int64_t _entry_d(object d, int64_t h, int64_t w) except -1
