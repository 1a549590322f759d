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
"""

from libc.stdint cimport int64_t, int32_t, uint8_t, uint64_t
from libc.stdlib cimport malloc, realloc, free, strtod
from libc.string cimport memcpy, memmove, memset
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


cdef bint _cols_resize(Cols* c, Py_ssize_t cap) noexcept nogil:
    cdef size_t n = <size_t> cap
    return (_grow(<void**> &c.image_id, n * 8) and _grow(<void**> &c.category_id, n * 8)
            and _grow(<void**> &c.score, n * 8) and _grow(<void**> &c.bbox, n * 32)
            and _grow(<void**> &c.seg_h, n * 8) and _grow(<void**> &c.seg_w, n * 8)
            and _grow(<void**> &c.cstart, n * 8) and _grow(<void**> &c.clen, n * 8)
            and _grow(<void**> &c.present, n) and _grow(<void**> &c.int_kind, n)
            and _grow(<void**> &c.key_order, n * 4) and _grow(<void**> &c.cesc, n * 8))


cdef int _scan(cptr base, Py_ssize_t size, Cols* cols, Py_ssize_t* n_out) noexcept nogil:
    """Pass one: validate everything and fill the columns.  0 ok, 1 refused, 2 no memory."""
    cdef cptr p = base
    cdef cptr end = base + size
    cdef Rec rec
    cdef Rec* r = &rec
    cdef Py_ssize_t n = 0, cap
    cdef int code, nk, k
    cdef bint is_int
    cap = size // 1024 + 16   # grown by doubling; a result takes under 100 bytes
    if not _cols_resize(cols, cap):
        return 2
    p = _ws(p, end)
    if p >= end or p[0] != 91:
        return 1
    p = _ws(p + 1, end)
    if p >= end or p[0] == 93:
        return 1          # truncated, or empty: left to the general parser
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
            continue
        if p[0] == 93:
            break
        return 1
    p = _ws(p + 1, end)
    if p != end:
        return 1
    n_out[0] = n
    # hand back the unused tail; if shrinking failed the larger blocks still serve
    _cols_resize(cols, n)
    return 0


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


def scan_results(unsigned char[::1] buf not None):
    """Parse a COCO results JSON file into column arrays, or return ``None``.

    Parameters
    ----------
    buf : bytearray
        The whole file, writable (any writable contiguous byte buffer).  On
        success the RLE ``counts`` strings are unescaped in place; on ``None``
        the buffer is left exactly as it was.

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
    cdef Py_ssize_t size = buf.shape[0], n = 0
    cdef Cols c
    cdef int status
    cdef unsigned char* base
    if size == 0:
        return None
    memset(&c, 0, sizeof(Cols))
    base = &buf[0]
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
