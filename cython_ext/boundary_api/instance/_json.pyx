# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The JSON tokenizer shared by the two native scanners.

Private module (``boundary_api.instance._json``): the tables and the token readers
that are not inline (declared, with the inline ones, in ``_json.pxd``), and the
hand-off of a C block to numpy that both scanners use for their columns.
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free, strtod
from libc.string cimport memcpy, memcmp, memchr
from cython.view cimport array as cvarray

import numpy as np

# byte classes inside a JSON string: 0 plain, 1 quote, 2 backslash, 3 refused
cdef int _i
for _i in range(256):
    STR_CLASS[_i] = 3 if (_i < 0x20 or _i >= 0x80) else 0
STR_CLASS[34] = 1
STR_CLASS[92] = 2

# powers of ten that are exact doubles (10**22 is the largest)
for _i in range(23):
    POW10[_i] = float(10 ** _i)

ONES = 0x0101010101010101ULL
HIGHS = 0x8080808080808080ULL


cdef double _strtod_token(cptr s, Py_ssize_t n, bint* ok) noexcept nogil:
    """Correctly rounded conversion of an already validated number token."""
    cdef char small[64]
    cdef char* tmp = small
    cdef char* endp
    cdef double v
    if n >= 64:
        tmp = <char*> malloc(n + 1)
        if tmp == NULL:
            ok[0] = 0
            return 0.0
    memcpy(tmp, s, n)
    tmp[n] = 0
    v = strtod(tmp, &endp)
    # a locale whose decimal point is not '.' stops strtod early: refuse then
    ok[0] = (endp == tmp + n)
    if tmp != small:
        free(tmp)
    return v


cdef cptr _string(cptr p, cptr end, int* esc) noexcept nogil:
    """Validate the JSON string at ``p`` (on its quote); the byte after its closing quote.

    ``esc`` is set when it holds an escape.  NULL for anything json.loads (on
    UTF-8 bytes) refuses, and for lone surrogate escapes.
    """
    cdef uint32_t cp
    cdef unsigned char c
    esc[0] = 0
    p += 1
    while True:
        p = _plain_run(p, end)
        if p >= end:
            return NULL
        c = p[0]
        if c == 34:
            return p + 1
        if c == 92:
            esc[0] = 1
            p = _escape(p, end, &cp)
        elif c < 0x20:
            return NULL
        else:
            p = _utf8(p, end)
        if p == NULL:
            return NULL


cdef Py_ssize_t _decode(cptr s, cptr e, unsigned char* out, Py_ssize_t cap) noexcept nogil:
    """Decode the validated string body [s, e) into UTF-8; -1 if over ``cap`` bytes."""
    cdef Py_ssize_t w = 0
    cdef uint32_t cp
    while s < e:
        if s[0] != 92:
            if w >= cap:
                return -1
            out[w] = s[0]
            w += 1
            s += 1
            continue
        s = _escape(s, e, &cp)
        if s == NULL:      # cannot happen on a validated body
            return -1
        if cp < 0x80:
            if w + 1 > cap:
                return -1
            out[w] = <unsigned char> cp
            w += 1
        elif cp < 0x800:
            if w + 2 > cap:
                return -1
            out[w] = <unsigned char> (0xC0 | (cp >> 6))
            out[w + 1] = <unsigned char> (0x80 | (cp & 0x3F))
            w += 2
        elif cp < 0x10000:
            if w + 3 > cap:
                return -1
            out[w] = <unsigned char> (0xE0 | (cp >> 12))
            out[w + 1] = <unsigned char> (0x80 | ((cp >> 6) & 0x3F))
            out[w + 2] = <unsigned char> (0x80 | (cp & 0x3F))
            w += 3
        else:
            if w + 4 > cap:
                return -1
            out[w] = <unsigned char> (0xF0 | (cp >> 18))
            out[w + 1] = <unsigned char> (0x80 | ((cp >> 12) & 0x3F))
            out[w + 2] = <unsigned char> (0x80 | ((cp >> 6) & 0x3F))
            out[w + 3] = <unsigned char> (0x80 | (cp & 0x3F))
            w += 4
    return w


cdef cptr _skipnum(cptr p, cptr end) noexcept nogil:
    """Validate a JSON number token of any length (strict grammar)."""
    if p < end and p[0] == 45:
        p += 1
    if p >= end:
        return NULL
    if p[0] == 48:
        p += 1
    elif 49 <= p[0] <= 57:
        while p < end and 48 <= p[0] <= 57:
            p += 1
    else:
        return NULL
    if p < end and p[0] == 46:
        p += 1
        if p >= end or not (48 <= p[0] <= 57):
            return NULL
        while p < end and 48 <= p[0] <= 57:
            p += 1
    if p < end and (p[0] == 101 or p[0] == 69):
        p += 1
        if p < end and (p[0] == 43 or p[0] == 45):
            p += 1
        if p >= end or not (48 <= p[0] <= 57):
            return NULL
        while p < end and 48 <= p[0] <= 57:
            p += 1
    return p


cdef cptr _skip(cptr p, cptr end, int depth) noexcept nogil:
    """Validate and skip any JSON value at ``p`` that lies inside ``depth`` containers."""
    cdef int esc
    cdef unsigned char c
    if p >= end:
        return NULL
    c = p[0]
    if c == 34:
        return _string(p, end, &esc)
    if c == 123 or c == 91:
        if depth >= MAX_DEPTH:
            return NULL
        p = _ws(p + 1, end)
        if p < end and p[0] == c + 2:       # '}' or ']'
            return p + 1
        while True:
            if c == 123:
                if p >= end or p[0] != 34:
                    return NULL
                p = _string(p, end, &esc)
                if p == NULL:
                    return NULL
                p = _colon(p, end)
                if p == NULL:
                    return NULL
            p = _skip(p, end, depth + 1)
            if p == NULL:
                return NULL
            p = _ws(p, end)
            if p >= end:
                return NULL
            if p[0] == 44:
                p = _ws(p + 1, end)
                continue
            if p[0] == c + 2:
                return p + 1
            return NULL
    if c == 116:
        return _lit(p, end, b"true", 4)
    if c == 102:
        return _lit(p, end, b"false", 5)
    if c == 110:
        return _lit(p, end, b"null", 4)
    return _skipnum(p, end)


cdef inline bint _is_ws(unsigned char c) noexcept nogil:
    return c == 32 or c == 10 or c == 13 or c == 9


cdef Py_ssize_t _candidate(cptr base, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """First ``{`` in ``[lo, hi)`` preceded, whitespace aside, by ``,`` and then
    ``}``; -1 when there is none.  Only a guess: it may lie inside a string or
    a nested array; a split scan proves it by arriving at it."""
    cdef const void* q
    cdef Py_ssize_t j, b
    while lo < hi:
        q = memchr(base + lo, 123, <size_t> (hi - lo))
        if q == NULL:
            return -1
        j = <cptr> q - base
        b = j - 1
        while b >= 0 and _is_ws(base[b]):
            b -= 1
        if b >= 0 and base[b] == 44:
            b -= 1
            while b >= 0 and _is_ws(base[b]):
                b -= 1
            if b >= 0 and base[b] == 125:
                return j
        lo = j + 1
    return -1


cdef object _take(void** ptr, object dtype, tuple shape):
    """A numpy array that owns the C block ``ptr[0]`` (freed with the array)."""
    dt = np.dtype(dtype)
    cdef cvarray a = cvarray(shape=shape, itemsize=dt.itemsize, format=dt.char,
                             allocate_buffer=False)
    a.data = <char*> ptr[0]
    a.callback_free_data = free
    ptr[0] = NULL
    out = np.asarray(a)
    assert out.dtype == dt
    return out
