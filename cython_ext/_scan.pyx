# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Native scanner for COCO *results* JSON: the file straight into column arrays.

Private module (``boundary_api.instance._scan``).  A results file is a JSON
array of detections, each an object with ``image_id``, ``category_id``,
``score`` and optionally ``bbox`` and an RLE ``segmentation``.  Turning it into
one Python dict per detection costs more than the evaluation of box AP itself;
this scanner reads the bytes once, without the GIL, and returns one numpy
array per field, with every RLE ``counts`` string left in the caller's buffer
(unescaped in place) and located by offset and length.

It only accepts a narrow, common schema (see :func:`scan_results`); for
anything else it returns ``None`` and leaves the buffer untouched, so that the
caller can hand the same bytes to a general JSON parser, which also words any
error.  It never raises for bad input and never reads outside the buffer.
A large file may be scanned in chunks on several threads, with the very same
outcome as on one (see :func:`scan_results`).
"""

from libc.stdint cimport int64_t, int32_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, calloc, realloc, free, strtod
from libc.string cimport memcpy, memmove, memset, memcmp, memchr
from cython.view cimport array as cvarray

import numpy as np

# bits of ``present``
cdef enum:
    P_IMAGE = 1
    P_CAT = 2
    P_SCORE = 4
    P_BBOX = 8
    P_SEG = 16

# bit of ``key_order``: segmentation had "counts" before "size"
cdef enum:
    K_COUNTS_FIRST = 1 << 30

# byte classes inside a JSON string: 0 plain, 1 quote, 2 backslash, 3 refused
cdef uint8_t STR_CLASS[256]
cdef int _i
for _i in range(256):
    STR_CLASS[_i] = 3 if (_i < 0x20 or _i >= 0x80) else 0
STR_CLASS[34] = 1
STR_CLASS[92] = 2

# powers of ten that are exact doubles (10**22 is the largest)
cdef double POW10[23]
for _i in range(23):
    POW10[_i] = float(10 ** _i)

# the result being parsed; copied into the columns once its object closed
cdef struct Rec:
    int64_t image_id
    int64_t category_id
    double score
    double bbox[4]
    int64_t seg_h
    int64_t seg_w
    int64_t cstart     # offset of the counts string (first byte after the quote)
    int64_t clen       # escaped length while scanning, unescaped length after
    int64_t cesc       # offset of the first backslash in counts from cstart, or -1
    int32_t key_order
    uint8_t present
    uint8_t int_kind

ctypedef const unsigned char* cptr

# eight bytes at a time (SWAR): a byte equal to zero shows as its high bit in
# (v - ONES) & ~v & HIGHS; as a whole-word test this is exact
cdef uint64_t ONES = 0x0101010101010101ULL
cdef uint64_t HIGHS = 0x8080808080808080ULL


cdef inline uint64_t _load8(cptr p) noexcept nogil:
    """Eight bytes as a little-endian word whatever the machine (first byte lowest).

    Compilers turn this into one load on little-endian machines.
    """
    return (<uint64_t> p[0] | (<uint64_t> p[1] << 8) | (<uint64_t> p[2] << 16)
            | (<uint64_t> p[3] << 24) | (<uint64_t> p[4] << 32) | (<uint64_t> p[5] << 40)
            | (<uint64_t> p[6] << 48) | (<uint64_t> p[7] << 56))


cdef inline uint64_t _special8(uint64_t x) noexcept nogil:
    """High bits of the bytes that are a quote, a backslash, < 0x20 or >= 0x80.

    Borrows only run towards higher bytes, so the lowest flagged byte is
    always a true one (higher flags may be spurious); zero means none.
    """
    cdef uint64_t q = x ^ (ONES * 0x22)
    cdef uint64_t b = x ^ (ONES * 0x5c)
    return (((x - ONES * 0x20) & ~x) | ((q - ONES) & ~q) | ((b - ONES) & ~b) | x) & HIGHS


cdef inline uint64_t _backslash8(uint64_t x) noexcept nogil:
    """High bits of the backslash bytes (the lowest one exact, as above)."""
    cdef uint64_t b = x ^ (ONES * 0x5c)
    return ((b - ONES) & ~b) & HIGHS


cdef inline Py_ssize_t _first8(uint64_t mask) noexcept nogil:
    """Index (in memory order) of the lowest flagged byte of a non-zero mask."""
    cdef uint64_t low = mask & (~mask + 1)
    return <Py_ssize_t> (((low >> 7) * <uint64_t> 0x0001020304050607ULL) >> 56)


cdef inline cptr _ws(cptr p, cptr end) noexcept nogil:
    """Skip JSON whitespace."""
    while p < end and (p[0] == 32 or p[0] == 10 or p[0] == 13 or p[0] == 9):
        p += 1
    return p


cdef inline cptr _int(cptr p, cptr end, int64_t* out) noexcept nogil:
    """A JSON integer token of at most 18 digits; NULL when not one."""
    cdef bint neg = 0
    cdef int64_t v = 0
    cdef int nd = 0
    if p < end and p[0] == 45:   # '-'
        neg = 1
        p += 1
    if p >= end:
        return NULL
    if p[0] == 48:               # '0'
        p += 1
    elif 49 <= p[0] <= 57:
        while p < end and 48 <= p[0] <= 57:
            nd += 1
            if nd > 18:
                return NULL
            v = v * 10 + (p[0] - 48)
            p += 1
    else:
        return NULL
    # a fraction or an exponent makes it a float token: refused
    if p < end and (p[0] == 46 or p[0] == 101 or p[0] == 69):
        return NULL
    out[0] = -v if neg else v
    return p


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


cdef inline cptr _num(cptr p, cptr end, double* out, bint* is_int) noexcept nogil:
    """A JSON number token (strict grammar) as the double ``float(token)`` gives.

    Integer tokens have at most 15 digits (beyond, the double could not give
    back the int that ``json.loads`` makes): NULL otherwise, and NULL for
    anything that is not a number token.
    """
    cdef cptr start = p
    cdef bint neg = 0, frac = 0, expo = 0, eneg = 0, ok = 1
    cdef uint64_t m = 0
    # 64-bit counters: no overflow whatever the token's length
    cdef int64_t nd = 0      # significant digits (leading zeros skipped)
    cdef int64_t ndig = 0    # digits of the integer part
    cdef int64_t fd = 0      # digits after the point that shift the exponent
    cdef int64_t e = 0, e10
    cdef int d
    is_int[0] = 0
    if p < end and p[0] == 45:
        neg = 1
        p += 1
    if p >= end:
        return NULL
    if p[0] == 48:
        p += 1
        ndig = 1
    elif 49 <= p[0] <= 57:
        while p < end and 48 <= p[0] <= 57:
            if nd < 19:
                m = m * 10 + (p[0] - 48)
            nd += 1
            ndig += 1
            p += 1
    else:
        return NULL
    if p < end and p[0] == 46:            # '.'
        frac = 1
        p += 1
        if p >= end or not (48 <= p[0] <= 57):
            return NULL
        while p < end and 48 <= p[0] <= 57:
            d = p[0] - 48
            if nd or d:
                if nd < 19:
                    m = m * 10 + d
                    fd += 1   # only digits kept in m shift the exponent
                nd += 1
            else:
                fd += 1       # a leading zero after the point
            p += 1
    if p < end and (p[0] == 101 or p[0] == 69):   # 'e' 'E'
        expo = 1
        p += 1
        if p < end and (p[0] == 43 or p[0] == 45):
            eneg = p[0] == 45
            p += 1
        if p >= end or not (48 <= p[0] <= 57):
            return NULL
        while p < end and 48 <= p[0] <= 57:
            if e < 100000:
                e = e * 10 + (p[0] - 48)
            p += 1
    if not frac and not expo:
        is_int[0] = 1
        if ndig > 15:
            return NULL
        # "-0" is the int 0, whose float is +0.0
        out[0] = <double> (-<int64_t> m if neg else <int64_t> m)
        return p
    is_int[0] = 0
    if m == 0 and nd <= 19:
        out[0] = -0.0 if neg else 0.0
        return p
    e10 = (-e if eneg else e) - fd
    if nd <= 19 and m <= (<uint64_t> 1 << 53) and -22 <= e10 <= 22:
        # exact operands, one correctly rounded operation (Clinger's fast path)
        if e10 >= 0:
            out[0] = <double> m * POW10[e10]
        else:
            out[0] = <double> m / POW10[-e10]
        if neg:
            out[0] = -out[0]
        return p
    out[0] = _strtod_token(start, p - start, &ok)
    if not ok:
        return NULL
    return p


cdef inline cptr _key(cptr p, cptr end, int* code) noexcept nogil:
    """A key string at ``p`` (on its opening quote): the code of the known key."""
    cdef cptr s
    cdef Py_ssize_t n
    if p >= end or p[0] != 34:
        return NULL
    p += 1
    s = p
    while p < end and STR_CLASS[p[0]] == 0:
        p += 1
    if p >= end or p[0] != 34:
        return NULL      # truncated, escaped or refused byte
    n = p - s
    code[0] = 0
    if n == 8 and s[0] == 105 and s[1] == 109 and s[2] == 97 and s[3] == 103 and s[4] == 101 \
            and s[5] == 95 and s[6] == 105 and s[7] == 100:                      # image_id
        code[0] = 1
    elif n == 11 and s[0] == 99 and s[1] == 97 and s[2] == 116 and s[3] == 101 and s[4] == 103 \
            and s[5] == 111 and s[6] == 114 and s[7] == 121 and s[8] == 95 and s[9] == 105 \
            and s[10] == 100:                                                    # category_id
        code[0] = 2
    elif n == 5 and s[0] == 115 and s[1] == 99 and s[2] == 111 and s[3] == 114 and s[4] == 101:
        code[0] = 3                                                              # score
    elif n == 4 and s[0] == 98 and s[1] == 98 and s[2] == 111 and s[3] == 120:
        code[0] = 4                                                              # bbox
    elif n == 12 and s[0] == 115 and s[1] == 101 and s[2] == 103 and s[3] == 109 and s[4] == 101 \
            and s[5] == 110 and s[6] == 116 and s[7] == 97 and s[8] == 116 and s[9] == 105 \
            and s[10] == 111 and s[11] == 110:                                   # segmentation
        code[0] = 5
    elif n == 4 and s[0] == 115 and s[1] == 105 and s[2] == 122 and s[3] == 101:
        code[0] = 6                                                              # size
    elif n == 6 and s[0] == 99 and s[1] == 111 and s[2] == 117 and s[3] == 110 and s[4] == 116 \
            and s[5] == 115:                                                     # counts
        code[0] = 7
    return p + 1


cdef inline cptr _colon(cptr p, cptr end) noexcept nogil:
    p = _ws(p, end)
    if p >= end or p[0] != 58:
        return NULL
    return _ws(p + 1, end)


cdef inline cptr _counts(cptr p, cptr end, cptr base, Rec* r) noexcept nogil:
    """Validate the counts string at ``p`` (on its quote); record where it is.

    Nothing is written here: unescaping waits until the whole file passed.
    """
    cdef cptr s
    cdef uint8_t c
    cdef uint64_t mask
    if p >= end or p[0] != 34:
        return NULL
    p += 1
    s = p
    r.cstart = s - base
    r.cesc = -1
    while True:
        while p + 8 <= end:
            mask = _special8(_load8(p))
            if mask:
                p += _first8(mask)
                break
            p += 8
        else:
            while p < end and STR_CLASS[p[0]] == 0:
                p += 1
        if p >= end:
            return NULL
        c = STR_CLASS[p[0]]
        if c == 1:
            r.clen = p - s
            return p + 1
        if c == 3:
            return NULL
        # backslash: only \\ \" \/ are in the schema
        if p + 1 >= end or not (p[1] == 92 or p[1] == 34 or p[1] == 47):
            return NULL
        if r.cesc < 0:
            r.cesc = p - s
        p += 2


cdef cptr _segm(cptr p, cptr end, cptr base, Rec* r) noexcept nogil:
    """``{"size": [h, w], "counts": "..."}`` in either key order."""
    cdef int code, seen = 0, k
    cdef int64_t v
    if p >= end or p[0] != 123:
        return NULL
    p = _ws(p + 1, end)
    for k in range(2):
        p = _key(p, end, &code)
        if p == NULL:
            return NULL
        p = _colon(p, end)
        if p == NULL:
            return NULL
        if code == 6 and not (seen & 1):
            seen |= 1
            if p >= end or p[0] != 91:
                return NULL
            p = _int(_ws(p + 1, end), end, &r.seg_h)
            if p == NULL:
                return NULL
            p = _ws(p, end)
            if p >= end or p[0] != 44:
                return NULL
            p = _int(_ws(p + 1, end), end, &r.seg_w)
            if p == NULL:
                return NULL
            p = _ws(p, end)
            if p >= end or p[0] != 93:
                return NULL
            p += 1
        elif code == 7 and not (seen & 2):
            if seen == 0:
                r.key_order |= K_COUNTS_FIRST
            seen |= 2
            p = _counts(p, end, base, r)
            if p == NULL:
                return NULL
        else:
            return NULL
        p = _ws(p, end)
        if p >= end:
            return NULL
        if k == 0:
            if p[0] != 44:
                return NULL
            p = _ws(p + 1, end)
        elif p[0] != 125:
            return NULL
    return p + 1


cdef cptr _bbox(cptr p, cptr end, Rec* r) noexcept nogil:
    """An array of exactly four numbers."""
    cdef int k
    cdef bint is_int
    if p >= end or p[0] != 91:
        return NULL
    p += 1
    for k in range(4):
        p = _num(_ws(p, end), end, &r.bbox[k], &is_int)
        if p == NULL:
            return NULL
        if is_int:
            r.int_kind |= <uint8_t> (2 << k)
        p = _ws(p, end)
        if p >= end or p[0] != (93 if k == 3 else 44):
            return NULL
        p += 1
    return p


cdef struct Cols:
    # one C array per output column (the returned numpy arrays take them over)
    int64_t* image_id
    int64_t* category_id
    double* score
    double* bbox          # 4 per result
    int64_t* seg_h
    int64_t* seg_w
    int64_t* cstart
    int64_t* clen
    uint8_t* present
    uint8_t* int_kind
    int32_t* key_order
    int64_t* cesc         # scratch for pass two, freed before returning


cdef void _cols_free(Cols* c) noexcept nogil:
    free(c.image_id)
    free(c.category_id)
    free(c.score)
    free(c.bbox)
    free(c.seg_h)
    free(c.seg_w)
    free(c.cstart)
    free(c.clen)
    free(c.present)
    free(c.int_kind)
    free(c.key_order)
    free(c.cesc)
    memset(c, 0, sizeof(Cols))


cdef bint _grow(void** ptr, size_t nbytes) noexcept nogil:
    """realloc ``ptr[0]``; on failure it keeps its old block."""
    cdef void* t = realloc(ptr[0], nbytes if nbytes else 1)
    if t == NULL:
        return 0
    ptr[0] = t
    return 1


cdef bint _cols_resize_outputs(Cols* c, Py_ssize_t cap) noexcept nogil:
    """Resize the returned columns (every one but ``cesc``) to ``cap`` rows."""
    cdef size_t n = <size_t> cap
    return (_grow(<void**> &c.image_id, n * 8) and _grow(<void**> &c.category_id, n * 8)
            and _grow(<void**> &c.score, n * 8) and _grow(<void**> &c.bbox, n * 32)
            and _grow(<void**> &c.seg_h, n * 8) and _grow(<void**> &c.seg_w, n * 8)
            and _grow(<void**> &c.cstart, n * 8) and _grow(<void**> &c.clen, n * 8)
            and _grow(<void**> &c.present, n) and _grow(<void**> &c.int_kind, n)
            and _grow(<void**> &c.key_order, n * 4))


cdef bint _cols_resize(Cols* c, Py_ssize_t cap) noexcept nogil:
    """Resize every column, ``cesc`` included, to ``cap`` rows."""
    return _cols_resize_outputs(c, cap) and _grow(<void**> &c.cesc, <size_t> cap * 8)


cdef int _scan_objects(cptr base, Py_ssize_t size, Py_ssize_t start, Py_ssize_t stop,
                       Cols* cols, Py_ssize_t* n_out) noexcept nogil:
    """Pass one from the object that starts at ``start``: validate and fill the columns.

    With ``stop < 0`` the objects run to the closing ``]`` of the array, which
    only whitespace may follow (the whole rest of the file).  With
    ``stop >= 0`` (a chunk of a split scan) the scan ends as soon as the next
    object would start at or after ``stop``.

    Returns 0 when every object passed (and, with ``stop >= 0``, the next
    object starts exactly at ``stop``), 1 when an object or the array's end is
    refused by the grammar, 2 when memory ran out, 3 (only with
    ``stop >= 0``) when the objects did not lead exactly to ``stop``: the
    array ended first, or an object straddles it.
    """
    cdef cptr p = base + start
    cdef cptr end = base + size
    cdef Rec rec
    cdef Rec* r = &rec
    cdef Py_ssize_t n = 0, cap
    cdef int code, nk, k
    cdef bint is_int
    # grown by doubling; a result takes under 100 bytes
    cap = ((stop if stop >= 0 else size) - start) // 1024 + 16
    if not _cols_resize(cols, cap):
        return 2
    while True:
        if n == cap:
            cap = cap * 2
            if not _cols_resize(cols, cap):
                return 2
        r.present = 0
        r.int_kind = 0
        r.key_order = 0
        r.bbox[0] = r.bbox[1] = r.bbox[2] = r.bbox[3] = 0.0
        r.seg_h = r.seg_w = r.cstart = r.clen = 0
        r.cesc = -1
        if p >= end or p[0] != 123:
            return 1
        p = _ws(p + 1, end)
        nk = 0
        while True:
            p = _key(p, end, &code)
            if p == NULL or code == 0 or code > 5 or (r.present & (1 << (code - 1))):
                return 1   # unknown or repeated key
            r.present |= <uint8_t> (1 << (code - 1))
            r.key_order |= code << (3 * nk)
            nk += 1
            p = _colon(p, end)
            if p == NULL:
                return 1
            if code == 1:
                p = _int(p, end, &r.image_id)
            elif code == 2:
                p = _int(p, end, &r.category_id)
            elif code == 3:
                p = _num(p, end, &r.score, &is_int)
                if is_int:
                    r.int_kind |= 1
            elif code == 4:
                p = _bbox(p, end, r)
            else:
                p = _segm(p, end, base, r)
            if p == NULL:
                return 1
            p = _ws(p, end)
            if p >= end:
                return 1
            if p[0] == 44:
                p = _ws(p + 1, end)
                continue
            if p[0] == 125:
                p += 1
                break
            return 1
        if (r.present & (P_IMAGE | P_CAT | P_SCORE)) != (P_IMAGE | P_CAT | P_SCORE):
            return 1
        cols.image_id[n] = r.image_id
        cols.category_id[n] = r.category_id
        cols.score[n] = r.score
        for k in range(4):
            cols.bbox[4 * n + k] = r.bbox[k]
        cols.seg_h[n] = r.seg_h
        cols.seg_w[n] = r.seg_w
        cols.cstart[n] = r.cstart
        cols.clen[n] = r.clen
        cols.cesc[n] = r.cesc
        cols.present[n] = r.present
        cols.int_kind[n] = r.int_kind
        cols.key_order[n] = r.key_order
        n += 1
        p = _ws(p, end)
        if p >= end:
            return 1
        if p[0] == 44:
            p = _ws(p + 1, end)
            if stop >= 0 and p - base >= stop:
                n_out[0] = n
                # the next object must begin exactly where the next chunk began
                return 0 if p - base == stop else 3
            continue
        if p[0] == 93:
            if stop >= 0:
                return 3   # the array ended before the next chunk's start
            break
        return 1
    p = _ws(p + 1, end)
    if p != end:
        return 1
    n_out[0] = n
    return 0


cdef int _head(cptr base, Py_ssize_t size, Py_ssize_t* first) noexcept nogil:
    """Offset of the first object of the array (its ``{`` unchecked): 0 ok, 1 refused."""
    cdef cptr p = _ws(base, base + size)
    cdef cptr end = base + size
    if p >= end or p[0] != 91:
        return 1
    p = _ws(p + 1, end)
    if p >= end or p[0] == 93:
        return 1          # truncated, or empty: left to the general parser
    first[0] = p - base
    return 0


cdef int _scan(cptr base, Py_ssize_t size, Cols* cols, Py_ssize_t* n_out) noexcept nogil:
    """Pass one over the whole file.  0 ok, 1 refused, 2 no memory."""
    cdef Py_ssize_t first = 0
    cdef int status
    if _head(base, size, &first):
        return 1
    status = _scan_objects(base, size, first, -1, cols, n_out)
    if status == 0:
        # hand back the unused tail; if shrinking failed the larger blocks still serve
        _cols_resize(cols, n_out[0])
    return status


cdef void _unescape(unsigned char* base, Cols* cols, Py_ssize_t n) noexcept nogil:
    """Pass two, only after the whole file passed: unescape counts in place."""
    cdef Py_ssize_t i
    cdef unsigned char* p
    cdef unsigned char* w
    cdef unsigned char* q
    cdef unsigned char c
    cdef uint64_t x, mask
    cdef Py_ssize_t k, j
    for i in range(n):
        if cols.cesc[i] < 0:
            continue
        w = p = base + cols.cstart[i] + cols.cesc[i]
        q = base + cols.cstart[i] + cols.clen[i]
        while p < q:
            if p + 8 <= q:
                x = _load8(p)
                mask = _backslash8(x)
                if mask == 0:
                    memmove(w, p, 8)   # w <= p
                    p += 8
                    w += 8
                    continue
                # only the bytes before the backslash: writing more would
                # overwrite source bytes not yet read
                k = _first8(mask)
                for j in range(k):
                    w[j] = p[j]
                p += k
                w += k
            c = p[0]
            if c == 92:
                # validated: the escaped byte is the byte itself (backslash, quote, slash)
                c = p[1]
                p += 2
            else:
                p += 1
            w[0] = c
            w += 1
        cols.clen[i] = w - (base + cols.cstart[i])


# --------------------------------------------------------------------------- split scan
#
# A large file is cut at k-1 candidate object starts (a '{' after '}' ',' with
# only whitespace between) and the chunks are scanned on k threads.  A
# candidate may lie inside a string; chunk i-1, which starts at a verified
# object start, proves chunk i's candidate only by arriving at it exactly as
# the start of its next object.  Chunk 0 starts where the whole-file scan
# starts, so by induction every chunk then scans exactly the objects the
# whole-file scan would, and the columns concatenate to its output.

#: files below this size are scanned on one thread (a split costs thread starts)
MIN_PARALLEL_BYTES = 8 << 20
#: at most this many chunks (and threads) whatever ``num_threads`` says
MAX_CHUNKS = 256


cdef inline bint _is_ws(unsigned char c) noexcept nogil:
    return c == 32 or c == 10 or c == 13 or c == 9


cdef Py_ssize_t _candidate(cptr base, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """First ``{`` in ``[lo, hi)`` preceded, whitespace aside, by ``,`` and then
    ``}``; -1 when there is none."""
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


cdef void _cols_copy(Cols* dst, Py_ssize_t at, Cols* src, Py_ssize_t n) noexcept nogil:
    """Rows ``[0, n)`` of ``src`` into rows ``[at, at + n)`` of ``dst`` (not ``cesc``)."""
    cdef size_t m = <size_t> n
    if n == 0:
        return
    memcpy(dst.image_id + at, src.image_id, m * 8)
    memcpy(dst.category_id + at, src.category_id, m * 8)
    memcpy(dst.score + at, src.score, m * 8)
    memcpy(dst.bbox + 4 * at, src.bbox, m * 32)
    memcpy(dst.seg_h + at, src.seg_h, m * 8)
    memcpy(dst.seg_w + at, src.seg_w, m * 8)
    memcpy(dst.cstart + at, src.cstart, m * 8)
    memcpy(dst.clen + at, src.clen, m * 8)
    memcpy(dst.present + at, src.present, m)
    memcpy(dst.int_kind + at, src.int_kind, m)
    memcpy(dst.key_order + at, src.key_order, m * 4)


cdef class _SplitScan:
    """The state of one split scan: chunk starts, per-chunk columns and statuses.

    Its methods take a range of chunk indices and run without the GIL; the C
    blocks still owned when it dies are freed then.
    """
    cdef unsigned char* base
    cdef Py_ssize_t size
    cdef Py_ssize_t k
    cdef Py_ssize_t* starts   # k + 1 entries, the last -1 (to the end of the array)
    cdef Py_ssize_t* ns       # results per chunk
    cdef Py_ssize_t* offs     # first output row per chunk
    cdef int* status
    cdef Cols* cols           # cols[0] becomes the output once all chunks passed

    def __cinit__(self, Py_ssize_t k):
        self.k = k
        self.starts = <Py_ssize_t*> calloc(k + 1, sizeof(Py_ssize_t))
        self.ns = <Py_ssize_t*> calloc(k, sizeof(Py_ssize_t))
        self.offs = <Py_ssize_t*> calloc(k, sizeof(Py_ssize_t))
        self.status = <int*> calloc(k, sizeof(int))
        self.cols = <Cols*> calloc(k, sizeof(Cols))
        if (self.starts == NULL or self.ns == NULL or self.offs == NULL or self.status == NULL
                or self.cols == NULL):
            raise MemoryError("boundary_api: no memory to split the results scan")

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.cols != NULL:
            for i in range(self.k):
                _cols_free(&self.cols[i])
        free(self.cols)
        free(self.starts)
        free(self.ns)
        free(self.offs)
        free(self.status)

    def scan(self, Py_ssize_t lo, Py_ssize_t hi):
        """Pass one over chunks ``[lo, hi)``."""
        cdef Py_ssize_t i
        with nogil:
            for i in range(lo, hi):
                self.status[i] = _scan_objects(self.base, self.size, self.starts[i],
                                               self.starts[i + 1], &self.cols[i], &self.ns[i])

    def finish(self, Py_ssize_t lo, Py_ssize_t hi):
        """Pass two over chunks ``[lo, hi)``: unescape their counts in place and
        move their rows into the output (``cols[0]``, already grown to all rows)."""
        cdef Py_ssize_t i
        with nogil:
            for i in range(lo, hi):
                _unescape(self.base, &self.cols[i], self.ns[i])
                free(self.cols[i].cesc)
                self.cols[i].cesc = NULL
                if i > 0:
                    _cols_copy(&self.cols[0], self.offs[i], &self.cols[i], self.ns[i])
                    _cols_free(&self.cols[i])


cdef int _split_scan(_SplitScan job, unsigned char* base, Py_ssize_t size, int num_threads,
                     Py_ssize_t* n_out, list trace) except -1:
    """Scan ``base[:size]`` as ``job.k`` chunks on ``num_threads`` threads.

    Returns 0 when the columns are in ``job.cols[0]`` (``n_out[0]`` rows, counts
    unescaped), 1 when the file is certainly refused (the whole-file scan
    would refuse it; the buffer untouched), 4 when the split proved nothing
    (the buffer untouched; the caller scans the whole file).
    """
    from concurrent.futures import ThreadPoolExecutor

    cdef Py_ssize_t i, k = job.k, total = 0
    cdef int s
    job.base = base
    job.size = size
    # chunk i is the range [i, i + 1); one pool for both passes (threads start once)
    with ThreadPoolExecutor(max_workers=min(num_threads, k)) as pool:
        list(pool.map(job.scan, range(k), range(1, k + 1)))
        for i in range(k):
            s = job.status[i]
            if s == 0:
                continue
            # chunks 0..i-1 passed and led exactly to chunk i's start, so the
            # whole-file scan reaches chunk i's start too and refuses what chunk i refused
            if s == 1:
                if trace is not None:
                    trace.append(("refused", k, i))
                return 1
            if trace is not None:
                trace.append(("fallback", k, i))
            return 4
        for i in range(k):
            job.offs[i] = total
            total += job.ns[i]
        if not _cols_resize_outputs(&job.cols[0], total):
            if trace is not None:
                trace.append(("fallback", k, -1))
            return 4
        # from here on the buffer changes: every chunk passed and every start is proven
        list(pool.map(job.finish, range(k), range(1, k + 1)))
    n_out[0] = total
    if trace is not None:
        trace.append(("split", k, -1))
    return 0


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


def scan_results(unsigned char[::1] buf not None, num_threads=1, *, _min_parallel_bytes=None,
                 _trace=None):
    """Parse a COCO results JSON file into column arrays, or return ``None``.

    Parameters
    ----------
    buf : bytearray
        The whole file, writable (any writable contiguous byte buffer).  On
        success the RLE ``counts`` strings are unescaped in place; on ``None``
        the buffer is left exactly as it was.
    num_threads : int, default 1
        Threads to scan with.  A file of at least :data:`MIN_PARALLEL_BYTES`
        is cut into ``num_threads`` chunks (at most :data:`MAX_CHUNKS`) at
        likely object starts, scanned side by side; the result (columns,
        offsets, buffer) is the same as on one thread for every input.  A cut that the scan does not confirm as
        an object start (one inside a string, say) makes it scan the whole
        file on one thread instead.
    _min_parallel_bytes : int, optional
        Private (tests): the file size from which to split, instead of
        :data:`MIN_PARALLEL_BYTES`.
    _trace : list, optional
        Private (tests): receives one tuple saying how the scan went:
        ``("single", 1, -1)``, ``("split", k, -1)`` (``k`` chunks, all
        confirmed), ``("refused", k, i)`` (chunk ``i`` refused after every
        earlier one was confirmed: ``None`` without a second scan) or
        ``("fallback", k, i)`` (chunk ``i``'s start unconfirmed or no memory;
        then the whole-file scan's tuple follows).

    Returns
    -------
    dict of numpy.ndarray or None
        ``None`` when the input is not in the fast schema: a non-empty JSON
        array (whitespace around it allowed, no BOM) of objects whose keys are
        among ``image_id``, ``category_id``, ``score`` (all three required),
        ``bbox`` and ``segmentation``, each at most once, in any order, not
        escaped; ids integer tokens of at most 18 digits; ``score`` and the
        four ``bbox`` values JSON numbers (integer tokens of at most 15
        digits); ``segmentation`` exactly ``{"size": [h, w], "counts": str}``
        with integer ``h``, ``w`` and ASCII ``counts`` (no control bytes, only
        the escapes ``\\\\``, ``\\"``, ``\\/``).  Anything else, including any
        malformed JSON, gives ``None``.

        Otherwise a dict, every array of length ``n`` (number of results):

        ``image_id``, ``category_id`` : int64
        ``score`` : float64, equal to ``float`` of the parsed value
        ``bbox`` : float64, shape (n, 4), zeros where absent
        ``seg_h``, ``seg_w`` : int64, ``segmentation["size"]``, 0 where absent
        ``counts_start``, ``counts_len`` : int64, where the unescaped counts
            string lies in ``buf`` (0, 0 where absent)
        ``present`` : uint8, bits 1 image_id, 2 category_id, 4 score, 8 bbox,
            16 segmentation
        ``int_kind`` : uint8, bit 0 the score was an integer token, bits 1..4
            ``bbox[0..3]`` were
        ``key_order`` : int32, 3 bits per key in order of appearance (first key
            lowest; codes 1 image_id, 2 category_id, 3 score, 4 bbox,
            5 segmentation), plus bit 30 when ``counts`` came before ``size``

    Examples
    --------
    >>> buf = bytearray(b'[{"image_id": 1, "category_id": 2, "score": 0.5,'
    ...                 b' "segmentation": {"size": [4, 4], "counts": "a\\\\/b"}}]')
    >>> cols = scan_results(buf)
    >>> s, n = cols["counts_start"][0], cols["counts_len"][0]
    >>> bytes(buf[s:s + n])
    b'a/b'
    >>> int(cols["present"][0]) == 1 | 2 | 4 | 16
    True
    >>> scan_results(bytearray(b'[{"image_id": 1.0, "category_id": 2, "score": 0.5}]')) is None
    True
    """
    cdef Py_ssize_t size = buf.shape[0], n = 0, first = 0, lo, hi, cand, i, k
    cdef Cols c
    cdef int status
    cdef unsigned char* base
    cdef _SplitScan job
    if isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)):
        raise TypeError(f"num_threads must be a positive integer, got {num_threads!r}")
    if num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    min_bytes = MIN_PARALLEL_BYTES if _min_parallel_bytes is None else int(_min_parallel_bytes)
    if size == 0:
        return None
    memset(&c, 0, sizeof(Cols))
    base = &buf[0]
    if num_threads > 1 and size >= min_bytes and _head(base, size, &first) == 0:
        # chunk starts: the first object, then one candidate in each further
        # k-th of the file (none when that part has no candidate)
        k = min(num_threads, MAX_CHUNKS)
        starts = [first]
        cand = first
        for i in range(1, k):
            # (no negative indexing here: the module is compiled without wraparound)
            lo = max(size // k * i, cand + 1)
            hi = size if i == k - 1 else size // k * (i + 1)
            if lo >= hi:
                continue
            with nogil:
                lo = _candidate(base, lo, hi)
            if lo >= 0:
                cand = lo
                starts.append(cand)
        if len(starts) > 1:
            job = _SplitScan(len(starts))
            for i in range(len(starts)):
                job.starts[i] = starts[i]
            job.starts[len(starts)] = -1
            status = _split_scan(job, base, size, int(num_threads), &n, _trace)
            if status == 1:
                return None
            if status == 0:
                c = job.cols[0]
                memset(&job.cols[0], 0, sizeof(Cols))   # the output now belongs to c
                return _columns(&c, n)
            job = None   # its blocks are freed before the whole-file scan
    if _trace is not None:
        _trace.append(("single", 1, -1))
    with nogil:
        status = _scan(base, size, &c, &n)
        if status == 0:
            _unescape(base, &c, n)
        free(c.cesc)
        c.cesc = NULL
    if status != 0:
        _cols_free(&c)
        if status == 2:
            raise MemoryError("boundary_api: no memory to scan the results file")
        return None
    return _columns(&c, n)


cdef dict _columns(Cols* cp, Py_ssize_t n):
    """The output dict of :func:`scan_results`; takes the blocks of ``cp[0]``."""
    cdef Cols c = cp[0]
    memset(cp, 0, sizeof(Cols))
    free(c.cesc)
    c.cesc = NULL
    try:
        return {
            "image_id": _take(<void**> &c.image_id, np.int64, (n,)),
            "category_id": _take(<void**> &c.category_id, np.int64, (n,)),
            "score": _take(<void**> &c.score, np.float64, (n,)),
            "bbox": _take(<void**> &c.bbox, np.float64, (n, 4)),
            "seg_h": _take(<void**> &c.seg_h, np.int64, (n,)),
            "seg_w": _take(<void**> &c.seg_w, np.int64, (n,)),
            "counts_start": _take(<void**> &c.cstart, np.int64, (n,)),
            "counts_len": _take(<void**> &c.clen, np.int64, (n,)),
            "present": _take(<void**> &c.present, np.uint8, (n,)),
            "int_kind": _take(<void**> &c.int_kind, np.uint8, (n,)),
            "key_order": _take(<void**> &c.key_order, np.int32, (n,)),
        }
    finally:
        _cols_free(&c)   # frees only what an exception left untaken


def compact_counts(unsigned char[::1] buf not None, int64_t[::1] counts_start not None,
                   const int64_t[::1] counts_len not None):
    """Move every counts string to the front of ``buf``, contiguously, in order.

    Parameters
    ----------
    buf : bytearray
        The buffer :func:`scan_results` scanned.
    counts_start : numpy.ndarray of int64
        Offsets of the strings; updated in place to their new offsets.
    counts_len : numpy.ndarray of int64
        Their lengths (entries of length 0 are given the current end).

    Returns
    -------
    int
        The number of bytes now used at the front of ``buf``; the caller may
        ``del buf[used:]`` to free the rest.

    Raises
    ------
    ValueError
        If the arrays differ in length, a string lies outside ``buf``, or the
        non-empty strings are not in increasing, non-overlapping order (moving
        them would overwrite one not yet moved).
    """
    cdef Py_ssize_t n = counts_start.shape[0], i, size = buf.shape[0]
    cdef int64_t pos = 0, prev_end = 0, s, l
    cdef unsigned char* base
    if counts_len.shape[0] != n:
        raise ValueError(f"counts_start has {n} entries but counts_len {counts_len.shape[0]}")
    for i in range(n):
        s = counts_start[i]
        l = counts_len[i]
        if l == 0:
            continue
        if l < 0 or s < prev_end or s > size - l:
            raise ValueError(f"counts string {i} (start {s}, length {l}) lies outside the buffer "
                             f"or before the end of the previous one ({prev_end})")
        prev_end = s + l
    if size == 0:
        counts_start[:] = 0
        return 0
    base = &buf[0]
    with nogil:
        for i in range(n):
            l = counts_len[i]
            if l:
                memmove(base + pos, base + counts_start[i], l)
            counts_start[i] = pos
            pos += l
    return pos


# =========================================================================== ground truth
#
# scan_ground_truth: a COCO *instances ground-truth* file into column arrays.
# Same conventions as scan_results (strict JSON grammar, numbers exactly as
# float() gives them, None for anything outside the schema, never a read
# outside the buffer), but every JSON value of a key outside the schema is
# accepted and skipped, so strings are validated in full (UTF-8, escapes).

# key codes (bit ``code`` of a context mask says the key is known there)
cdef enum:
    KC_IMAGES = 1
    KC_ANNOTATIONS = 2
    KC_CATEGORIES = 3
    KC_ID = 4
    KC_HEIGHT = 5
    KC_WIDTH = 6
    KC_IMAGE_ID = 7
    KC_CATEGORY_ID = 8
    KC_AREA = 9
    KC_ISCROWD = 10
    KC_BBOX = 11
    KC_IGNORE = 12
    KC_SEGMENTATION = 13
    KC_SIZE = 14
    KC_COUNTS = 15

cdef enum:
    M_TOP = (1 << KC_IMAGES) | (1 << KC_ANNOTATIONS) | (1 << KC_CATEGORIES)
    M_IMG = (1 << KC_ID) | (1 << KC_HEIGHT) | (1 << KC_WIDTH)
    M_CAT = 1 << KC_ID
    M_ANN = ((1 << KC_ID) | (1 << KC_IMAGE_ID) | (1 << KC_CATEGORY_ID) | (1 << KC_AREA)
             | (1 << KC_ISCROWD) | (1 << KC_BBOX) | (1 << KC_IGNORE) | (1 << KC_SEGMENTATION))
    # (``iscrowd`` is optional: LVIS annotations have none; ``ann_has_iscrowd`` says which do)
    M_ANN_REQUIRED = (1 << KC_ID) | (1 << KC_IMAGE_ID) | (1 << KC_CATEGORY_ID) | (1 << KC_AREA)
    M_RLE = (1 << KC_SIZE) | (1 << KC_COUNTS)

# nesting limit of the whole document (the top-level object is level 1)
cdef enum:
    MAX_DEPTH = 64
    # most keys outside the schema in one interpreted object (duplicates are
    # looked for among them pairwise); more gives None
    KS_CAP = 64

# output columns
cdef enum:
    C_IMG_ID = 0
    C_IMG_H
    C_IMG_W
    C_CAT_ID
    C_ANN_ID
    C_ANN_IMG
    C_ANN_CAT
    C_ANN_AREA        # float64
    C_ANN_CROWD
    C_ANN_BBOX        # float64, 4 per annotation
    C_ANN_HAS_BBOX    # uint8
    C_ANN_IGNORE      # uint8
    C_ANN_KIND        # uint8
    C_ANN_RLE_H
    C_ANN_RLE_W
    C_ANN_CSTART
    C_ANN_CLEN
    C_ANN_CESC        # uint8
    C_POLY_COORDS     # float64
    C_POLY_OFF
    C_ANN_POLY_OFF
    C_RLE_COUNTS
    C_ANN_RLE_OFF
    C_ANN_HAS_CROWD   # uint8
    NCOL


cdef struct Vec:
    char* data
    Py_ssize_t n      # elements
    Py_ssize_t cap    # elements


cdef struct KeySet:
    # keys outside the schema seen in the current object: offset into the
    # buffer (>= 0) or -(offset into buf) - 1 for a decoded escaped key
    int64_t ref[KS_CAP]
    Py_ssize_t len[KS_CAP]
    int n
    Vec buf           # decoded escaped keys (bytes)


cdef struct GT:
    Vec col[NCOL]
    KeySet top
    KeySet obj
    int64_t span[6]   # images, categories, annotations: [start, end) each
    bint nomem


cdef bint _vgrow(Vec* v, Py_ssize_t need, Py_ssize_t item) noexcept nogil:
    """Room for ``need`` elements of ``item`` bytes (doubling); 0 when out of memory."""
    cdef Py_ssize_t cap = v.cap * 2 if v.cap else 256
    cdef void* t
    while cap < need:
        cap *= 2
    t = realloc(v.data, <size_t> cap * <size_t> item)
    if t == NULL:
        return 0
    v.data = <char*> t
    v.cap = cap
    return 1


cdef inline Vec* _room(GT* g, int c, Py_ssize_t item) noexcept nogil:
    """Column ``c`` with room for one more element of ``item`` bytes; NULL
    (and ``g.nomem`` set) when out of memory."""
    cdef Vec* v = &g.col[c]
    if v.n == v.cap and not _vgrow(v, v.n + 1, item):
        g.nomem = 1
        return NULL
    return v


cdef inline bint _pi(GT* g, int c, int64_t x) noexcept nogil:
    cdef Vec* v = _room(g, c, 8)
    if v == NULL:
        return 0
    (<int64_t*> v.data)[v.n] = x
    v.n += 1
    return 1


cdef inline bint _pf(GT* g, int c, double x) noexcept nogil:
    cdef Vec* v = _room(g, c, 8)
    if v == NULL:
        return 0
    (<double*> v.data)[v.n] = x
    v.n += 1
    return 1


cdef inline bint _pu(GT* g, int c, uint8_t x) noexcept nogil:
    cdef Vec* v = _room(g, c, 1)
    if v == NULL:
        return 0
    (<uint8_t*> v.data)[v.n] = x
    v.n += 1
    return 1


cdef inline int _hex4(cptr p) noexcept nogil:
    """Four hex digits (in bounds) as an int, -1 when not hex."""
    cdef int v = 0, k, c
    for k in range(4):
        c = p[k]
        if 48 <= c <= 57:
            c -= 48
        elif 97 <= c <= 102:
            c -= 87
        elif 65 <= c <= 70:
            c -= 55
        else:
            return -1
        v = v * 16 + c
    return v


cdef inline cptr _escape(cptr p, cptr end, uint32_t* cp) noexcept nogil:
    """The escape at ``p`` (a backslash) and its code point; NULL when invalid.

    Surrogates must come in valid pairs (lone ones give NULL: stricter than
    json.loads, as strict as UTF-8).
    """
    cdef int h, l
    cdef unsigned char c
    if p + 1 >= end:
        return NULL
    c = p[1]
    if c == 34 or c == 92 or c == 47:
        cp[0] = c
    elif c == 98:
        cp[0] = 8
    elif c == 102:
        cp[0] = 12
    elif c == 110:
        cp[0] = 10
    elif c == 114:
        cp[0] = 13
    elif c == 116:
        cp[0] = 9
    elif c == 117:
        if end - p < 6:
            return NULL
        h = _hex4(p + 2)
        if h < 0 or 0xDC00 <= h < 0xE000:
            return NULL
        if 0xD800 <= h < 0xDC00:
            if end - p < 12 or p[6] != 92 or p[7] != 117:
                return NULL
            l = _hex4(p + 8)
            if not (0xDC00 <= l < 0xE000):
                return NULL
            cp[0] = 0x10000 + ((<uint32_t> (h - 0xD800)) << 10) + <uint32_t> (l - 0xDC00)
            return p + 12
        cp[0] = <uint32_t> h
        return p + 6
    else:
        return NULL
    return p + 2


cdef inline cptr _utf8(cptr p, cptr end) noexcept nogil:
    """One strict UTF-8 sequence at ``p`` (first byte >= 0x80), as Python decodes it."""
    cdef unsigned char c = p[0]
    cdef unsigned char lo = 0x80, hi = 0xBF
    if c < 0xC2:
        return NULL
    if c < 0xE0:
        if end - p < 2 or (p[1] & 0xC0) != 0x80:
            return NULL
        return p + 2
    if c < 0xF0:
        if end - p < 3:
            return NULL
        if c == 0xE0:
            lo = 0xA0
        elif c == 0xED:
            hi = 0x9F     # no encoded surrogates
        if not (lo <= p[1] <= hi) or (p[2] & 0xC0) != 0x80:
            return NULL
        return p + 3
    if c < 0xF5:
        if end - p < 4:
            return NULL
        if c == 0xF0:
            lo = 0x90
        elif c == 0xF4:
            hi = 0x8F     # at most U+10FFFF
        if not (lo <= p[1] <= hi) or (p[2] & 0xC0) != 0x80 or (p[3] & 0xC0) != 0x80:
            return NULL
        return p + 4
    return NULL


cdef cptr _string(cptr p, cptr end, int* esc) noexcept nogil:
    """Validate the JSON string at ``p`` (on its quote); the byte after its closing quote.

    ``esc`` is set when it holds an escape.  NULL for anything json.loads (on
    UTF-8 bytes) refuses, and for lone surrogate escapes.
    """
    cdef uint64_t mask
    cdef uint32_t cp
    cdef unsigned char c
    esc[0] = 0
    p += 1
    while True:
        while p + 8 <= end:
            mask = _special8(_load8(p))
            if mask:
                p += _first8(mask)
                break
            p += 8
        else:
            while p < end and STR_CLASS[p[0]] == 0:
                p += 1
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


cdef inline bint _is(cptr s, const char* lit, Py_ssize_t n) noexcept nogil:
    return memcmp(s, lit, n) == 0


cdef int _classify(cptr s, Py_ssize_t n) noexcept nogil:
    """The code of a (decoded) key, 0 when it is none of the schema's."""
    if n == 2:
        return KC_ID if _is(s, b"id", 2) else 0
    if n == 4:
        if _is(s, b"bbox", 4):
            return KC_BBOX
        if _is(s, b"area", 4):
            return KC_AREA
        if _is(s, b"size", 4):
            return KC_SIZE
        return 0
    if n == 5:
        return KC_WIDTH if _is(s, b"width", 5) else 0
    if n == 6:
        if _is(s, b"images", 6):
            return KC_IMAGES
        if _is(s, b"height", 6):
            return KC_HEIGHT
        if _is(s, b"ignore", 6):
            return KC_IGNORE
        if _is(s, b"counts", 6):
            return KC_COUNTS
        return 0
    if n == 7:
        return KC_ISCROWD if _is(s, b"iscrowd", 7) else 0
    if n == 8:
        return KC_IMAGE_ID if _is(s, b"image_id", 8) else 0
    if n == 10:
        return KC_CATEGORIES if _is(s, b"categories", 10) else 0
    if n == 11:
        if _is(s, b"annotations", 11):
            return KC_ANNOTATIONS
        if _is(s, b"category_id", 11):
            return KC_CATEGORY_ID
        return 0
    if n == 12:
        return KC_SEGMENTATION if _is(s, b"segmentation", 12) else 0
    return 0


cdef cptr _gkey(cptr p, cptr end, cptr base, GT* g, KeySet* ks, uint32_t known,
                int* code) noexcept nogil:
    """A key at ``p`` (NULL unless on a quote); its code when in ``known``, else 0.

    Keys outside ``known`` are remembered in ``ks`` (when given) and a repeated
    one gives NULL; repeats of known keys are the caller's to refuse.
    """
    cdef int esc, c, i
    cdef cptr q, s, kp, other
    cdef Py_ssize_t n, dl, off
    cdef unsigned char tmp[16]
    cdef int64_t ref
    if p >= end or p[0] != 34:
        return NULL
    q = _string(p, end, &esc)
    if q == NULL:
        return NULL
    s = p + 1
    n = q - 1 - s
    if esc:
        dl = _decode(s, q - 1, tmp, 16)
        c = _classify(tmp, dl) if dl >= 0 else 0
    else:
        c = _classify(s, n)
    if c and ((known >> c) & 1):
        code[0] = c
        return q
    code[0] = 0
    if ks == NULL:
        return q
    if ks.n == KS_CAP:
        return NULL
    if esc:
        off = ks.buf.n
        if off + n > ks.buf.cap and not _vgrow(&ks.buf, off + n, 1):
            g.nomem = 1
            return NULL
        dl = _decode(s, q - 1, <unsigned char*> ks.buf.data + off, n)
        if dl < 0:
            return NULL
        ks.buf.n = off + dl
        ref = -(<int64_t> off) - 1
        kp = <cptr> ks.buf.data + off
        n = dl
    else:
        ref = s - base
        kp = s
    for i in range(ks.n):
        if ks.len[i] == n:
            if ks.ref[i] >= 0:
                other = base + ks.ref[i]
            else:
                other = <cptr> ks.buf.data + (-ks.ref[i] - 1)
            if memcmp(other, kp, n) == 0:
                return NULL
    ks.ref[ks.n] = ref
    ks.len[ks.n] = n
    ks.n += 1
    return q


cdef inline cptr _lit(cptr p, cptr end, const char* lit, Py_ssize_t n) noexcept nogil:
    if end - p < n or memcmp(p, lit, n) != 0:
        return NULL
    return p + n


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


cdef inline cptr _sep(cptr p, cptr end, unsigned char close, bint* more) noexcept nogil:
    """After a member: ',' (``more``) or the closing byte; NULL otherwise."""
    p = _ws(p, end)
    if p >= end:
        return NULL
    if p[0] == 44:
        more[0] = 1
        return _ws(p + 1, end)
    if p[0] == close:
        more[0] = 0
        return p + 1
    return NULL


cdef cptr _image(cptr p, cptr end, cptr base, GT* g) noexcept nogil:
    """One image object at ``p`` (on '{')."""
    cdef int code
    cdef uint32_t seen = 0
    cdef int64_t v[3]
    cdef bint more = 1
    g.obj.n = 0
    g.obj.buf.n = 0
    p = _ws(p + 1, end)
    while more:
        p = _gkey(p, end, base, g, &g.obj, M_IMG, &code)
        if p == NULL:
            return NULL
        p = _colon(p, end)
        if p == NULL:
            return NULL
        if code == 0:
            p = _skip(p, end, 3)
        else:
            if seen & (1u << code):
                return NULL
            seen |= 1u << code
            p = _int(p, end, &v[code - KC_ID])
            if p != NULL and code != KC_ID and v[code - KC_ID] < 1:
                return NULL
        if p == NULL:
            return NULL
        p = _sep(p, end, 125, &more)
        if p == NULL:
            return NULL
    if seen != M_IMG:
        return NULL
    if not (_pi(g, C_IMG_ID, v[0]) and _pi(g, C_IMG_H, v[1]) and _pi(g, C_IMG_W, v[2])):
        return NULL
    return p


cdef cptr _category(cptr p, cptr end, cptr base, GT* g) noexcept nogil:
    """One category object at ``p`` (on '{')."""
    cdef int code
    cdef bint seen = 0, more = 1
    cdef int64_t v = 0
    g.obj.n = 0
    g.obj.buf.n = 0
    p = _ws(p + 1, end)
    while more:
        p = _gkey(p, end, base, g, &g.obj, M_CAT, &code)
        if p == NULL:
            return NULL
        p = _colon(p, end)
        if p == NULL:
            return NULL
        if code == 0:
            p = _skip(p, end, 3)
        else:
            if seen:
                return NULL
            seen = 1
            p = _int(p, end, &v)
        if p == NULL:
            return NULL
        p = _sep(p, end, 125, &more)
        if p == NULL:
            return NULL
    if not seen or not _pi(g, C_CAT_ID, v):
        return NULL
    return p


cdef cptr _polygons(cptr p, cptr end, GT* g) noexcept nogil:
    """``[[x, y, ...], ...]`` at ``p`` (on '['): coordinates and offsets appended."""
    cdef bint more, more2, is_int
    cdef double x
    p = _ws(p + 1, end)
    if p < end and p[0] == 93:
        return p + 1
    more = 1
    while more:
        if p >= end or p[0] != 91:
            return NULL
        p = _ws(p + 1, end)
        if p < end and p[0] == 93:
            p += 1
        else:
            more2 = 1
            while more2:
                p = _num(p, end, &x, &is_int)
                if p == NULL or not _pf(g, C_POLY_COORDS, x):
                    return NULL
                p = _sep(p, end, 93, &more2)
                if p == NULL:
                    return NULL
        if not _pi(g, C_POLY_OFF, g.col[C_POLY_COORDS].n):
            return NULL
        p = _sep(p, end, 93, &more)
        if p == NULL:
            return NULL
    return p


cdef inline cptr _counts_string(cptr p, cptr end, int64_t* clen, uint8_t* escaped) noexcept nogil:
    """A compressed counts string at ``p`` (on its quote): printable ASCII only.

    Escapes allowed: ``\\\\ \\" \\/`` and ``\\uXXXX`` of a byte 0x20..0x7f.
    """
    cdef cptr s = p + 1
    cdef uint64_t mask
    cdef uint32_t cp
    cdef unsigned char c
    p = s
    escaped[0] = 0
    while True:
        while p + 8 <= end:
            mask = _special8(_load8(p))
            if mask:
                p += _first8(mask)
                break
            p += 8
        else:
            while p < end and STR_CLASS[p[0]] == 0:
                p += 1
        if p >= end:
            return NULL
        c = STR_CLASS[p[0]]
        if c == 1:
            clen[0] = p - s
            return p + 1
        if c == 3:
            return NULL
        escaped[0] = 1
        p = _escape(p, end, &cp)
        if p == NULL or not (0x20 <= cp <= 0x7f):
            return NULL


cdef cptr _rle(cptr p, cptr end, cptr base, GT* g, int64_t* hw, int64_t* cse,
               uint8_t* kind, uint8_t* escaped) noexcept nogil:
    """``{"size": [h, w], "counts": str | [int, ...]}`` at ``p`` (on '{'), either order."""
    cdef int code, k
    cdef uint32_t seen = 0
    cdef bint more
    cdef int64_t v
    p = _ws(p + 1, end)
    for k in range(2):
        p = _gkey(p, end, base, g, NULL, M_RLE, &code)
        if p == NULL or code == 0 or (seen & (1u << code)):
            return NULL
        seen |= 1u << code
        p = _colon(p, end)
        if p == NULL:
            return NULL
        if code == KC_SIZE:
            if p >= end or p[0] != 91:
                return NULL
            p = _int(_ws(p + 1, end), end, &hw[0])
            if p == NULL:
                return NULL
            p = _ws(p, end)
            if p >= end or p[0] != 44:
                return NULL
            p = _int(_ws(p + 1, end), end, &hw[1])
            if p == NULL:
                return NULL
            p = _ws(p, end)
            if p >= end or p[0] != 93:
                return NULL
            p += 1
        elif p < end and p[0] == 34:
            kind[0] = 2
            cse[0] = p + 1 - base
            p = _counts_string(p, end, &cse[1], escaped)
        elif p < end and p[0] == 91:
            kind[0] = 3
            p = _ws(p + 1, end)
            if p < end and p[0] == 93:
                p += 1
            else:
                more = 1
                while more:
                    p = _int(p, end, &v)
                    if p == NULL or v < 0 or not _pi(g, C_RLE_COUNTS, v):
                        return NULL
                    p = _sep(p, end, 93, &more)
                    if p == NULL:
                        return NULL
        else:
            return NULL
        if p == NULL:
            return NULL
        p = _ws(p, end)
        if p >= end or p[0] != (44 if k == 0 else 125):
            return NULL
        p = _ws(p + 1, end) if k == 0 else p + 1
    return p


cdef cptr _annotation(cptr p, cptr end, cptr base, GT* g) noexcept nogil:
    """One annotation object at ``p`` (on '{')."""
    cdef int code, k
    cdef uint32_t seen = 0
    cdef int64_t ids[3]
    cdef int64_t crowd = 0
    cdef int64_t hw[2]
    cdef int64_t cse[2]
    cdef double area = 0.0, x = 0.0
    cdef double box[4]
    cdef uint8_t ignore = 0, kind = 0, escaped = 0
    cdef bint more = 1, is_int
    hw[0] = hw[1] = cse[0] = cse[1] = 0
    box[0] = box[1] = box[2] = box[3] = 0.0
    g.obj.n = 0
    g.obj.buf.n = 0
    p = _ws(p + 1, end)
    while more:
        p = _gkey(p, end, base, g, &g.obj, M_ANN, &code)
        if p == NULL:
            return NULL
        p = _colon(p, end)
        if p == NULL:
            return NULL
        if code == 0:
            p = _skip(p, end, 3)
        else:
            if seen & (1u << code):
                return NULL
            seen |= 1u << code
            if code == KC_ID or code == KC_IMAGE_ID or code == KC_CATEGORY_ID:
                p = _int(p, end, &ids[0 if code == KC_ID else (1 if code == KC_IMAGE_ID else 2)])
            elif code == KC_AREA:
                p = _num(p, end, &area, &is_int)
            elif code == KC_ISCROWD:
                p = _int(p, end, &crowd)
                if p != NULL and crowd != 0 and crowd != 1:
                    return NULL
            elif code == KC_BBOX:
                if p >= end or p[0] != 91:
                    return NULL
                p += 1
                for k in range(4):
                    p = _num(_ws(p, end), end, &box[k], &is_int)
                    if p == NULL:
                        return NULL
                    p = _ws(p, end)
                    if p >= end or p[0] != (93 if k == 3 else 44):
                        return NULL
                    p += 1
            elif code == KC_IGNORE:
                if p < end and p[0] == 116:
                    ignore = 2
                    p = _lit(p, end, b"true", 4)
                elif p < end and p[0] == 102:
                    ignore = 1
                    p = _lit(p, end, b"false", 5)
                else:
                    p = _num(p, end, &x, &is_int)
                    ignore = 1 if x == 0.0 else 2
            else:   # segmentation
                if p < end and p[0] == 91:
                    kind = 1
                    p = _polygons(p, end, g)
                elif p < end and p[0] == 123:
                    p = _rle(p, end, base, g, hw, cse, &kind, &escaped)
                else:
                    return NULL
        if p == NULL:
            return NULL
        p = _sep(p, end, 125, &more)
        if p == NULL:
            return NULL
    if (seen & M_ANN_REQUIRED) != M_ANN_REQUIRED:
        return NULL
    for k in range(4):
        if not _pf(g, C_ANN_BBOX, box[k]):
            return NULL
    if not (_pi(g, C_ANN_ID, ids[0]) and _pi(g, C_ANN_IMG, ids[1])
            and _pi(g, C_ANN_CAT, ids[2]) and _pf(g, C_ANN_AREA, area)
            and _pi(g, C_ANN_CROWD, crowd)
            and _pu(g, C_ANN_HAS_BBOX, 1 if seen & (1u << KC_BBOX) else 0)
            and _pu(g, C_ANN_IGNORE, ignore) and _pu(g, C_ANN_KIND, kind)
            and _pi(g, C_ANN_RLE_H, hw[0]) and _pi(g, C_ANN_RLE_W, hw[1])
            and _pi(g, C_ANN_CSTART, cse[0] if kind == 2 else 0)
            and _pi(g, C_ANN_CLEN, cse[1] if kind == 2 else 0)
            and _pu(g, C_ANN_CESC, escaped)
            and _pi(g, C_ANN_POLY_OFF, g.col[C_POLY_OFF].n - 1)
            and _pi(g, C_ANN_RLE_OFF, g.col[C_RLE_COUNTS].n)
            and _pu(g, C_ANN_HAS_CROWD, 1 if seen & (1u << KC_ISCROWD) else 0)):
        return NULL
    return p


cdef cptr _array_of(cptr p, cptr end, cptr base, GT* g, int which) noexcept nogil:
    """The array of images (1), annotations (2) or categories (3) at ``p`` (on '[')."""
    cdef bint more = 1
    p = _ws(p + 1, end)
    if p < end and p[0] == 93:
        return p + 1
    while more:
        if p >= end or p[0] != 123:
            return NULL
        if which == KC_IMAGES:
            p = _image(p, end, base, g)
        elif which == KC_ANNOTATIONS:
            p = _annotation(p, end, base, g)
        else:
            p = _category(p, end, base, g)
        if p == NULL:
            return NULL
        p = _sep(p, end, 93, &more)
        if p == NULL:
            return NULL
    return p


cdef int _gt(cptr base, Py_ssize_t size, GT* g) noexcept nogil:
    """Scan the whole file: 0 accepted, 1 refused, 2 out of memory."""
    cdef cptr p = base
    cdef cptr end = base + size
    cdef cptr start
    cdef int code, k
    cdef uint32_t seen = 0
    cdef bint more = 1
    if not (_pi(g, C_POLY_OFF, 0) and _pi(g, C_ANN_POLY_OFF, 0) and _pi(g, C_ANN_RLE_OFF, 0)):
        return 2
    p = _ws(p, end)
    if p >= end or p[0] != 123:
        return 1
    p = _ws(p + 1, end)
    while more:
        p = _gkey(p, end, base, g, &g.top, M_TOP, &code)
        if p != NULL:
            p = _colon(p, end)
        if p != NULL:
            if code == 0:
                p = _skip(p, end, 1)
            elif (seen & (1u << code)) or p >= end or p[0] != 91:
                p = NULL
            else:
                seen |= 1u << code
                start = p
                p = _array_of(p, end, base, g, code)
                if p != NULL:
                    k = 0 if code == KC_IMAGES else (2 if code == KC_CATEGORIES else 4)
                    g.span[k] = start - base
                    g.span[k + 1] = p - base
        if p != NULL:
            p = _sep(p, end, 125, &more)
        if p == NULL:
            return 2 if g.nomem else 1
    if seen != M_TOP:
        return 1
    p = _ws(p, end)
    return 0 if p == end else 1


cdef void _gt_free(GT* g) noexcept nogil:
    cdef int c
    for c in range(NCOL):
        free(g.col[c].data)
        g.col[c].data = NULL
    free(g.top.buf.data)
    free(g.obj.buf.data)
    g.top.buf.data = NULL
    g.obj.buf.data = NULL


# name, dtype, which count gives its length (0 images, 1 categories, 2 annotations,
# 3 own element count), width
_GT_COLUMNS = (
    ("img_id", np.int64, 0, 1), ("img_height", np.int64, 0, 1), ("img_width", np.int64, 0, 1),
    ("cat_id", np.int64, 1, 1),
    ("ann_id", np.int64, 2, 1), ("ann_image_id", np.int64, 2, 1),
    ("ann_category_id", np.int64, 2, 1), ("ann_area", np.float64, 2, 1),
    ("ann_iscrowd", np.int64, 2, 1), ("ann_bbox", np.float64, 2, 4),
    ("ann_has_bbox", np.uint8, 2, 1), ("ann_ignore", np.uint8, 2, 1),
    ("ann_seg_kind", np.uint8, 2, 1), ("ann_rle_h", np.int64, 2, 1),
    ("ann_rle_w", np.int64, 2, 1), ("ann_counts_start", np.int64, 2, 1),
    ("ann_counts_len", np.int64, 2, 1), ("ann_counts_escaped", np.uint8, 2, 1),
    ("poly_coords", np.float64, 3, 1), ("poly_off", np.int64, 3, 1),
    ("ann_poly_off", np.int64, 3, 1), ("rle_counts", np.int64, 3, 1),
    ("ann_rle_off", np.int64, 3, 1), ("ann_has_iscrowd", np.uint8, 2, 1),
)


assert len(_GT_COLUMNS) == NCOL


def scan_ground_truth(const unsigned char[::1] buf not None):
    """Parse a COCO instances ground-truth JSON file into column arrays, or return ``None``.

    Parameters
    ----------
    buf : numpy.ndarray of uint8, bytes or bytearray
        The whole file (any contiguous byte buffer, read-only is enough; it is
        never modified).

    Returns
    -------
    dict of numpy.ndarray or None
        ``None`` for anything outside the schema (the caller then falls back
        to a general JSON parser, which also words any error): the top level
        must be an object (whitespace around it, no BOM) with ``images``,
        ``annotations`` and ``categories`` once each, arrays of objects; any
        other key may hold any valid JSON value (skipped, nesting at most 64
        levels in the whole document).  No key may repeat within the top
        level, an image, a category or an annotation, and at most 64 keys
        outside the schema per such object.  Images need ``id``, ``height``,
        ``width`` (integer tokens of at most 18 digits, sizes >= 1),
        categories ``id``; annotations ``id``, ``image_id``, ``category_id``
        (integer tokens), ``area`` (a number), optionally ``iscrowd`` (the
        integer token 0 or 1; LVIS has none), ``bbox`` (exactly 4 numbers), ``ignore`` (a
        number, ``true`` or ``false``) and ``segmentation``: polygons (an
        array of arrays of numbers) or an RLE object with exactly ``size``
        (2 integer tokens) and ``counts`` (a string of bytes 0x20..0x7f,
        escapes only ``\\\\ \\" \\/`` or ``\\u00XX`` of such a byte, or an
        array of integer tokens >= 0).  Numbers follow the strict JSON grammar
        (integer tokens used as numbers at most 15 digits).  Strings must be
        valid UTF-8; lone surrogate escapes and encoded surrogates, which
        json.loads lets through, are refused too.

        Otherwise a dict with, for I images, C categories, A annotations,
        P polygons:

        ``images_span``, ``categories_span``, ``annotations_span`` : int64 (2,),
            ``[start, end)`` of the array values in ``buf``
        ``img_id``, ``img_height``, ``img_width`` : int64 (I,)
        ``cat_id`` : int64 (C,)
        ``ann_id``, ``ann_image_id``, ``ann_category_id``, ``ann_iscrowd`` : int64 (A,)
            (``ann_iscrowd`` 0 where absent; ``ann_has_iscrowd`` uint8 says where present)
        ``ann_area`` : float64 (A,), ``float`` of the value
        ``ann_bbox`` : float64 (A, 4), zeros where absent; ``ann_has_bbox`` uint8
        ``ann_ignore`` : uint8, 0 absent, 1 falsy, 2 truthy
        ``ann_seg_kind`` : uint8, 0 none, 1 polygons, 2 compressed RLE,
            3 uncompressed RLE
        ``poly_coords`` : float64, every polygon coordinate in order;
            ``poly_off`` int64 (P + 1); ``ann_poly_off`` int64 (A + 1)
        ``ann_rle_h``, ``ann_rle_w`` : int64 (A,), RLE size, 0 for other kinds
        ``ann_counts_start``, ``ann_counts_len`` : int64 (A,), the raw (still
            escaped) counts string in ``buf`` for kind 2, else 0;
            ``ann_counts_escaped`` uint8, 1 when it holds a backslash
        ``rle_counts`` : int64, uncompressed counts in order; ``ann_rle_off``
            int64 (A + 1)

    Examples
    --------
    >>> cols = scan_ground_truth(b'{"images": [{"id": 1, "height": 4, "width": 5}],'
    ...     b' "annotations": [{"id": 3, "image_id": 1, "category_id": 2, "area": 2,'
    ...     b' "iscrowd": 0, "segmentation": [[0, 0, 1, 0, 1, 1]]}],'
    ...     b' "categories": [{"id": 2, "name": "x"}], "info": null}')
    >>> cols["poly_coords"].tolist(), cols["poly_off"].tolist(), cols["ann_poly_off"].tolist()
    ([0.0, 0.0, 1.0, 0.0, 1.0, 1.0], [0, 6], [0, 1])
    >>> scan_ground_truth(b'{"images": [], "annotations": [], "categories": {}}') is None
    True
    """
    cdef Py_ssize_t size = buf.shape[0]
    cdef GT g
    cdef int status, c
    cdef cptr base
    cdef Py_ssize_t n
    cdef Py_ssize_t counts[3]
    cdef void* shrunk
    if size == 0:
        return None
    memset(&g, 0, sizeof(GT))
    base = &buf[0]
    with nogil:
        status = _gt(base, size, &g)
    if status != 0:
        _gt_free(&g)
        if status == 2:
            raise MemoryError("boundary_api: no memory to scan the ground-truth file")
        return None
    counts[0] = g.col[C_IMG_ID].n
    counts[1] = g.col[C_CAT_ID].n
    counts[2] = g.col[C_ANN_ID].n
    try:
        out = {"images_span": np.array([g.span[0], g.span[1]], np.int64),
               "categories_span": np.array([g.span[2], g.span[3]], np.int64),
               "annotations_span": np.array([g.span[4], g.span[5]], np.int64)}
        for c in range(NCOL):
            name, dtype, which, width = _GT_COLUMNS[c]
            n = g.col[c].n if which == 3 else counts[which]
            shape = (n, width) if width > 1 else (n,)
            if n == 0:
                out[name] = np.zeros(shape, dtype)
            else:
                # hand back the unused tail (up to half of a doubled block)
                shrunk = realloc(g.col[c].data, <size_t> g.col[c].n * <size_t> np.dtype(dtype).itemsize)
                if shrunk != NULL:
                    g.col[c].data = <char*> shrunk
                out[name] = _take(<void**> &g.col[c].data, dtype, shape)
        return out
    finally:
        _gt_free(&g)   # frees only what was not taken
