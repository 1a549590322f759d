# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# Declarations of boundary_api.masks._boundary for the other kernel modules (cimport):
# the boundary kernel's per-thread scratch (inline init/free) and the kernel itself.
# Definitions: _boundary.pyx.

from libc.stdint cimport int64_t, uint64_t
from libc.stdlib cimport free

from boundary_api.masks._rle cimport I64Vec

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


cdef inline void _bw_init(BoundaryWork* bw) noexcept nogil:
    bw.words = NULL
    bw.cap = 0
    bw.peak = 0
    bw.tmp.data = NULL
    bw.tmp.n = 0
    bw.tmp.cap = 0
    bw.cur = NULL
    bw.ncur = 0


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

# Whether no (2d+1)-square fits in the box ``bb``: the boundary is then the
# whole mask (decided without arithmetic on d that could overflow).
cdef inline bint _boundary_is_mask(const int64_t* bb, int64_t d) noexcept nogil:
    return d >= (bb[3] - bb[2] + 1) // 2 or d >= (bb[1] - bb[0] + 1) // 2

# d from Python (any integer >= 0), clamped to max(h, w)
cdef int64_t _entry_d(object d, int64_t h, int64_t w) except -1
