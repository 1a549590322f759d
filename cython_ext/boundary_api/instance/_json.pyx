# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The core the three native JSON scanners share.

Private module (``boundary_api.instance._json``): the tables and the readers that
are not inline (declared, with the inline ones, the key codes and the column
buffers, in ``_json.pxd``): the tokens', an RLE object's; the freeing of the
column buffers and their hand-off to numpy; a split scan's chunk starts and chunk
loop.
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free, strtod
from libc.string cimport memcpy, memcmp, memchr, memset
from cython.view cimport array as cvarray

import numpy as np

# columns that are page mappings of their own (Linux: _json.pxd's bapi_vgrow) are unmapped
cdef extern from *:
    """
    #if defined(__linux__)
    static void ba_unmap(void *p, size_t n) { if (p != NULL) munmap(p, n); }
    #else
    static void ba_unmap(void *p, size_t n) { (void)p; (void)n; }
    #endif
    """
    void _unmap "ba_unmap" (void* p, size_t n) noexcept nogil

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


cdef cptr _rle_object(cptr p, cptr end, cptr base, bint escaped_keys, int64_t lo, int64_t hi,
                      int64_t* hw, bint* counts_first, CountsReader counts, void* ctx) noexcept nogil:
    """``{"size": [h, w], "counts": ...}`` at ``p``: an object of exactly these
    two keys, in either order (escaped ones too with ``escaped_keys``).

    ``hw`` receives the size (two integer tokens; a side outside ``[lo, hi]``
    gives NULL), ``counts`` reads the counts value (into ``ctx``), and
    ``counts_first`` says whether it came first.  Returns the byte after the
    object, NULL when refused or out of memory.
    """
    cdef int code, k, esc
    cdef uint32_t seen = 0
    cdef bint more
    if p >= end or p[0] != 123:
        return NULL
    p = _ws(p + 1, end)
    for k in range(2):
        p = _any_key(p, end, &code, &esc) if escaped_keys else _key(p, end, &code)
        if p == NULL or (code != K_SIZE and code != K_COUNTS) or (seen >> code) & 1:
            return NULL
        seen |= 1u << code
        p = _colon(p, end)
        if p == NULL:
            return NULL
        if code == K_SIZE:
            p = _int_pair(p, end, &hw[0], &hw[1])
            if p == NULL or hw[0] < lo or hw[1] < lo or hw[0] > hi or hw[1] > hi:
                return NULL
        else:
            counts_first[0] = k == 0
            p = counts(p, end, base, ctx)
            if p == NULL:
                return NULL
        # ',' after the first member, '}' after the second
        p = _sep(p, end, 125, &more)
        if p == NULL or more != (k == 0):
            return NULL
    return p


# ---------------------------------------------------------------- column buffers
cdef void _cols_free(Cols* c) noexcept nogil:
    """Free (or unmap) every column of ``c`` and empty it."""
    cdef int k
    for k in range(MAX_COLS):
        if c.col[k].bytes:
            _unmap(c.col[k].data, <size_t> c.col[k].bytes)
        else:
            free(c.col[k].data)
        memset(&c.col[k], 0, sizeof(Vec))


cdef object _take_vec(Vec* v, Py_ssize_t item, object dtype, tuple shape):
    """The ``n`` elements of ``v`` (a malloc'ed column) as a numpy array of
    ``shape``, which takes the block, shrunk to them (the doubling's spare
    room given back); zeros when there are none (the block left to the caller)."""
    cdef void* shrunk
    if v.n == 0:
        return np.zeros(shape, dtype)
    shrunk = realloc(v.data, <size_t> v.n * <size_t> item)
    if shrunk != NULL:
        v.data = <char*> shrunk
    return _take(<void**> &v.data, dtype, shape)


# ------------------------------------------------------------------ split scans
#
# A large array of objects is cut at k-1 candidate object starts (a '{' after
# '}' ',' with only whitespace between: _candidate) and scanned as k chunks on
# several threads, each into columns of its own.  A candidate is only a guess
# (it may lie inside a string, a nested array of objects, or after the array):
# the chunk before it proves it by arriving at it exactly as the start of its
# next object, and then hands over to that candidate's chunk; a candidate it
# passes is dropped.  The chain of hand-overs from the array's first object is
# thus the very sequence of objects a scan of the whole array reads, its first
# refusal is that scan's first refusal, and the columns of its chunks, in
# order, are that scan's.

cdef int _objects(cptr base, Py_ssize_t size, Py_ssize_t start, const Py_ssize_t* stops,
                  Py_ssize_t nstops, ObjectReader reader, void* ctx, Cols* c,
                  Py_ssize_t* reached, Py_ssize_t* end_at) noexcept nogil:
    """One chunk of a split scan: the objects of an array from the one at
    ``start``, each read by ``reader`` (into ``ctx``, whose columns ``c`` say
    when memory ran out).

    The scan ends at the array's ``]`` (``reached`` -1, ``end_at`` the byte
    after it), or on arriving exactly at one of the (increasing) ``stops`` as
    the start of its next object (``reached``: which one, ``end_at`` it);
    stops it passes are dropped.  0 done, 1 refused, 2 out of memory.
    """
    cdef cptr end = base + size
    cdef cptr p = base + start
    cdef bint more
    cdef Py_ssize_t t = 0, at
    reached[0] = -1
    while True:
        if p >= end or p[0] != 123:
            return 1
        p = reader(p, end, base, ctx)
        if p == NULL:
            return 2 if c.nomem else 1
        p = _sep(p, end, 93, &more)
        if p == NULL:
            return 1
        if not more:
            end_at[0] = p - base
            return 0
        at = p - base
        while t < nstops and stops[t] < at:
            t += 1
        if t < nstops and stops[t] == at:
            reached[0] = t
            end_at[0] = at
            return 0


cdef list _chunk_starts(cptr base, Py_ssize_t size, Py_ssize_t first, Py_ssize_t origin,
                        Py_ssize_t step, Py_ssize_t k):
    """The starts of the chunks of a split scan: ``first``, then the first
    candidate (:func:`_candidate`) after the previous start in each window
    ``[origin + step * i, origin + step * (i + 1))``, ``i`` = 1 .. k-1, the
    last window running to ``size`` (a window without one adds none)."""
    cdef Py_ssize_t i, lo, hi, cand = first
    starts = [first]
    for i in range(1, k):
        # (no negative indexing here: the module is compiled without wraparound)
        lo = max(origin + step * i, cand + 1)
        hi = size if i == k - 1 else origin + step * (i + 1)
        if lo >= hi:
            continue
        with nogil:
            lo = _candidate(base, lo, hi)
        if lo >= 0:
            cand = lo
            starts.append(cand)
    return starts


cdef int _check_threads(object num_threads) except -1:
    """TypeError / ValueError unless ``num_threads`` is a positive integer."""
    if isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)):
        raise TypeError(f"num_threads must be a positive integer, got {num_threads!r}")
    if num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    return 0
