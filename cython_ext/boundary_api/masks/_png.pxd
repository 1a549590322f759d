# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# Declarations of boundary_api.masks._png for the protocol kernels (cimport): the
# inflater and the byte-wise row filter (inline).  Definitions: _png.pyx.

from libc.stdint cimport uint8_t
from libc.string cimport memcpy

# zlib stream -> ``out`` (zeroed, exactly ``cap`` bytes expected, checked against
# the stream's Adler-32); 0 or -1
cdef int _inflate(const uint8_t* src, Py_ssize_t n, uint8_t* out, Py_ssize_t cap) noexcept nogil


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
