# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# Longer than 800 lines because it is everything the three scanners share, and their hot
# paths need it inline (compiled into each scanner), which only a .pxd can give: apart, each
# scanner would keep its own copy again.
# The core the three native JSON scanners share (boundary_api.instance._scan_results,
# _scan_ground_truth and boundary_api.video._scan), for cimport: the tokenizer (the
# tables, the inline token readers, compiled into each scanner, and the declarations
# of the others, which _json.pyx defines), the codes of every key a scanner knows
# and their classifier, the readers of the values they share (arrays, an RLE object,
# its size pair and counts string, four numbers, polygons), the growable column
# buffers with their typed pushes, and a split scan's chunk starts and chunk loop.
# Every reader takes the position ``p`` and the end of the buffer, never reads at or
# past ``end``, and returns the position after the token, or NULL when the bytes are
# not that token (strict JSON grammar).

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memcmp
from libc.stdlib cimport free, realloc

ctypedef const unsigned char* cptr


# byte classes inside a JSON string: 0 plain, 1 quote, 2 backslash, 3 refused
cdef uint8_t STR_CLASS[256]


# powers of ten that are exact doubles (10**22 is the largest)
cdef double POW10[23]

# compile-time tables and helpers of the number fast path (C, so that every
# scanner that cimports this file has them as constants, not as another
# module's variables reached through pointers)
cdef extern from *:
    """
    #include <float.h>
    #include <math.h>
    static const double bapi_pow10_f8[8] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7};
    static const unsigned long long bapi_pow10_u8[8] = {1ULL, 10ULL, 100ULL, 1000ULL, 10000ULL,
                                                        100000ULL, 1000000ULL, 10000000ULL};
    /* index (memory order) of the lowest flagged byte of a non-zero mask of high bits */
    static inline Py_ssize_t bapi_first_flag8(unsigned long long mask) {
    #if defined(__GNUC__) || defined(__clang__)
        return (Py_ssize_t) (__builtin_ctzll(mask) >> 3);
    #else
        unsigned long long low = mask & (~mask + 1);
        return (Py_ssize_t) (((low >> 7) * 0x0001020304050607ULL) >> 56);
    #endif
    }
    /* m * 10**e10 (m >= 1, |e10| <= 27) correctly rounded to a double, when
       long double has a 64-bit (or longer) significand: m and 10**|e10| are
       exact there (5**27 < 2**64), so r below is the exact value x rounded
       once.  Rounding to nearest is monotonic and every midpoint between two
       adjacent doubles (54 bits) is a long double, so unless r is such a
       midpoint, x lies on the same side of every midpoint as r and r's
       nearest double is x's.  Returns 0 (caller falls back to strtod) on a
       midpoint and where long double is not wide enough (also Windows, whose
       x87 may round to 53 bits). */
    #if LDBL_MANT_DIG >= 64 && !defined(_WIN32)
    static const long double bapi_pow10_ld[28] = {
        1e0L, 1e1L, 1e2L, 1e3L, 1e4L, 1e5L, 1e6L, 1e7L, 1e8L, 1e9L, 1e10L, 1e11L, 1e12L, 1e13L,
        1e14L, 1e15L, 1e16L, 1e17L, 1e18L, 1e19L, 1e20L, 1e21L, 1e22L, 1e23L, 1e24L, 1e25L,
        1e26L, 1e27L};
    static inline int bapi_ld_scale(unsigned long long m, long long e10, double* out) {
        long double r, mid;
        double d, d2;
        if (e10 >= 0) r = (long double) m * bapi_pow10_ld[e10];
        else r = (long double) m / bapi_pow10_ld[-e10];
        d = (double) r;
        if ((long double) d != r) {
            d2 = nextafter(d, r > (long double) d ? HUGE_VAL : -HUGE_VAL);
            mid = ((long double) d + (long double) d2) * 0.5L;
            if (r == mid) return 0;
        }
        *out = d;
        return 1;
    }
    #else
    static inline int bapi_ld_scale(unsigned long long m, long long e10, double* out) {
        (void) m; (void) e10; (void) out;
        return 0;
    }
    #endif
    """
    const double POW10_F8 "bapi_pow10_f8"[8]
    bint _ld_scale "bapi_ld_scale"(uint64_t m, int64_t e10, double* out) noexcept nogil
    const uint64_t POW10_U8 "bapi_pow10_u8"[8]
    Py_ssize_t _first_flag8 "bapi_first_flag8"(uint64_t mask) noexcept nogil


# eight bytes at a time (SWAR): a byte equal to zero shows as its high bit in
# (v - ONES) & ~v & HIGHS; as a whole-word test this is exact
cdef uint64_t ONES
cdef uint64_t HIGHS


# nesting limit of the whole document (the top-level object is level 1)
cdef enum:
    MAX_DEPTH = 64



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


cdef inline cptr _plain_run(cptr p, cptr end) noexcept nogil:
    """The end of the plain bytes of a string body from ``p``: the first byte
    ``_special8`` flags (a quote, a backslash, a control or a non-ASCII byte,
    eight at a time) or, in the last seven bytes, whose ``STR_CLASS`` is not
    plain; ``end`` when there is none."""
    cdef uint64_t mask
    while p + 8 <= end:
        mask = _special8(_load8(p))
        if mask:
            return p + _first8(mask)
        p += 8
    while p < end and STR_CLASS[p[0]] == 0:
        p += 1
    return p


cdef inline cptr _ws(cptr p, cptr end) noexcept nogil:
    """Skip JSON whitespace (a byte above the space is never one: one test for most)."""
    while p < end and p[0] <= 32 and (p[0] == 32 or p[0] == 10 or p[0] == 13 or p[0] == 9):
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


# Correctly rounded conversion of an already validated number token (strtod)
cdef double _strtod_token(cptr s, Py_ssize_t n, bint* ok) noexcept nogil


cdef inline uint64_t _nondigit8(uint64_t x) noexcept nogil:
    """High bits of the bytes of ``x`` that are not ASCII digits, exactly.

    ``x`` holds the bytes xor '0' (a digit is then its value 0..9); a byte is
    flagged when it is >= 10: its low seven bits plus 0x76 reach bit 7 from
    10 up, and cannot carry into the next byte (0x7f + 0x76 < 0x100); bytes
    >= 0x80 are flagged by their own high bit.
    """
    return (((x & <uint64_t> 0x7F7F7F7F7F7F7F7FULL) + <uint64_t> 0x7676767676767676ULL) | x) \
        & <uint64_t> 0x8080808080808080ULL


cdef inline uint64_t _digits8(uint64_t x, Py_ssize_t k) noexcept nogil:
    """The decimal value of the first ``k`` (1..8) digit values in ``x``.

    The first byte in memory is the most significant digit.  Shifting the
    ``k`` digits to the top of the word leaves zeros (leading zeros of an
    eight-digit number) below.
    """
    return _value8(x << (8 * (8 - k)))


cdef inline uint64_t _value8(uint64_t x) noexcept nogil:
    """The eight digit values in ``x`` (first byte most significant) as a number.

    Pairs, quads and the two halves are combined in turn, each lane staying
    below its width (99, 9999, 99999999), so nothing carries between lanes.
    """
    x = (x * 10 + (x >> 8)) & <uint64_t> 0x00FF00FF00FF00FFULL
    x = (x * 100 + (x >> 16)) & <uint64_t> 0x0000FFFF0000FFFFULL
    return (x * 10000 + (x >> 32)) & <uint64_t> 0xFFFFFFFFULL


cdef inline cptr _num(cptr p, cptr end, double* out, bint* is_int) noexcept nogil:
    """A JSON number token (strict grammar) as the double ``float(token)`` gives.

    Integer tokens have at most 15 digits (beyond, the double could not give
    back the int that ``json.loads`` makes): NULL otherwise, and NULL for
    anything that is not a number token.

    The common short tokens (``-?`` 1..7 integer digits without a leading
    zero, optionally ``.`` and 1..7 digits, no exponent, at least 17 bytes
    before ``end``) are read eight bytes at a time; their value is the
    integer of all their digits over an exact power of ten, one correctly
    rounded division as in :func:`_num_general`, which reads everything else.
    """
    cdef cptr q = p
    cdef uint64_t x, y, flags, m
    cdef Py_ssize_t k, k2
    cdef double v
    if end - p < 17:
        return _num_general(p, end, out, is_int)
    if q[0] == 45:
        q += 1
    x = _load8(q) ^ <uint64_t> 0x3030303030303030ULL
    flags = _nondigit8(x)
    if flags == 0:
        return _num_general(p, end, out, is_int)
    k = _first_flag8(flags)
    if k == 0 or (k > 1 and q[0] == 48):
        return _num_general(p, end, out, is_int)
    q += k
    if q[0] == 46:               # '.'
        y = _load8(q + 1) ^ <uint64_t> 0x3030303030303030ULL
        flags = _nondigit8(y)
        if flags == 0:
            return _num_general(p, end, out, is_int)
        k2 = _first_flag8(flags)
        if k2 == 0 or q[1 + k2] == 101 or q[1 + k2] == 69:
            return _num_general(p, end, out, is_int)
        if k + k2 <= 8:
            # both runs in one word, in reading order: the fraction's digits
            # at the top, the integer's right before them, zeros below
            m = _value8(((x << (8 * (8 - k))) >> (8 * k2)) | (y << (8 * (8 - k2))))
        else:
            m = _digits8(x, k) * POW10_U8[k2] + _digits8(y, k2)
        v = <double> m / POW10_F8[k2]
        out[0] = -v if p[0] == 45 else v
        is_int[0] = 0
        return q + 1 + k2
    if q[0] == 101 or q[0] == 69:  # 'e' 'E'
        return _num_general(p, end, out, is_int)
    m = _digits8(x, k)
    # an integer token ("-0" is the int 0, whose float is +0.0)
    out[0] = <double> (-<int64_t> m if p[0] == 45 else <int64_t> m)
    is_int[0] = 1
    return q


cdef inline cptr _num_general(cptr p, cptr end, double* out, bint* is_int) noexcept nogil:
    """:func:`_num` for any token (byte by byte)."""
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
    if nd <= 19 and -27 <= e10 <= 27 and _ld_scale(m, e10, out):
        # up to 19 digits: one extended-precision operation, kept when it
        # settles the rounding (see bapi_ld_scale)
        if neg:
            out[0] = -out[0]
        return p
    out[0] = _strtod_token(start, p - start, &ok)
    if not ok:
        return NULL
    return p


cdef inline cptr _colon(cptr p, cptr end) noexcept nogil:
    p = _ws(p, end)
    if p >= end or p[0] != 58:
        return NULL
    return _ws(p + 1, end)


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


# Validate the JSON string at ``p`` (on its quote); the byte after its closing quote
# (``esc`` set when it holds an escape)
cdef cptr _string(cptr p, cptr end, int* esc) noexcept nogil


# Decode the validated string body [s, e) into UTF-8; -1 if over ``cap`` bytes
cdef Py_ssize_t _decode(cptr s, cptr e, unsigned char* out, Py_ssize_t cap) noexcept nogil


cdef inline cptr _lit(cptr p, cptr end, const char* lit, Py_ssize_t n) noexcept nogil:
    if end - p < n or memcmp(p, lit, n) != 0:
        return NULL
    return p + n


# Validate a JSON number token of any length (strict grammar)
cdef cptr _skipnum(cptr p, cptr end) noexcept nogil


# Validate and skip any JSON value at ``p`` that lies inside ``depth`` containers
cdef cptr _skip(cptr p, cptr end, int depth) noexcept nogil


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


cdef inline cptr _next(cptr p, cptr end, unsigned char close, bint* more) noexcept nogil:
    """:func:`_sep` after a value whose reader returned ``p``: NULL when that
    was NULL (the value refused)."""
    if p == NULL:
        return NULL
    return _sep(p, end, close, more)


cdef inline cptr _open_array(cptr p, cptr end, bint* more) noexcept nogil:
    """Into the array at ``p`` (NULL unless on '['): its first value with
    ``more`` set, or, when it is empty, the byte after it with ``more`` clear
    (then, after each value, :func:`_sep` with ``]``)."""
    more[0] = 0
    if p >= end or p[0] != 91:
        return NULL
    p = _ws(p + 1, end)
    if p < end and p[0] == 93:
        return p + 1
    more[0] = 1
    return p


# First '{' in [lo, hi) preceded, whitespace aside, by ',' and then '}' (a likely
# start of an object in an array of objects, where a scan may be split); -1 if none
cdef Py_ssize_t _candidate(cptr base, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil


# A numpy array that owns the C block ``ptr[0]`` (freed with the array)
cdef object _take(void** ptr, object dtype, tuple shape)


# --------------------------------------------------------------------------- keys
# One code for every key a scanner knows (bit ``code`` of a uint32 mask says
# that a key is known in a context).  Codes 1..5 are the results scanner's
# ``key_order`` codes (3 bits each, in its output): they stay first.
cdef enum:
    K_IMAGE_ID = 1
    K_CATEGORY_ID = 2
    K_SCORE = 3
    K_BBOX = 4
    K_SEGMENTATION = 5
    K_SIZE = 6
    K_COUNTS = 7
    K_ID = 8
    K_HEIGHT = 9
    K_WIDTH = 10
    K_AREA = 11
    K_ISCROWD = 12
    K_IGNORE = 13
    K_IMAGES = 14
    K_ANNOTATIONS = 15
    K_CATEGORIES = 16
    K_VIDEO_ID = 17
    K_SEGMENTATIONS = 18
    K_AREAS = 19
    K_BBOXES = 20
    K_LENGTH = 21
    K_AVG_AREA = 22
    # keys that change which branch pycocotools' loadRes takes (the results
    # scanner refuses them where it skips other keys)
    K_CAPTION = 23
    K_KEYPOINTS = 24


cdef inline bint _is(cptr s, const char* lit, Py_ssize_t n) noexcept nogil:
    return memcmp(s, lit, n) == 0


cdef inline int _classify(cptr s, Py_ssize_t n) noexcept nogil:
    """The code of the (decoded) key ``s[:n]``, 0 when no scanner knows it."""
    if n == 2:
        return K_ID if _is(s, b"id", 2) else 0
    if n == 4:
        if _is(s, b"bbox", 4):
            return K_BBOX
        if _is(s, b"area", 4):
            return K_AREA
        if _is(s, b"size", 4):
            return K_SIZE
        return 0
    if n == 5:
        if _is(s, b"score", 5):
            return K_SCORE
        if _is(s, b"width", 5):
            return K_WIDTH
        if _is(s, b"areas", 5):
            return K_AREAS
        return 0
    if n == 6:
        if _is(s, b"counts", 6):
            return K_COUNTS
        if _is(s, b"height", 6):
            return K_HEIGHT
        if _is(s, b"ignore", 6):
            return K_IGNORE
        if _is(s, b"images", 6):
            return K_IMAGES
        if _is(s, b"bboxes", 6):
            return K_BBOXES
        if _is(s, b"length", 6):
            return K_LENGTH
        return 0
    if n == 7:
        if _is(s, b"iscrowd", 7):
            return K_ISCROWD
        return K_CAPTION if _is(s, b"caption", 7) else 0
    if n == 8:
        if _is(s, b"image_id", 8):
            return K_IMAGE_ID
        if _is(s, b"video_id", 8):
            return K_VIDEO_ID
        if _is(s, b"avg_area", 8):
            return K_AVG_AREA
        return 0
    if n == 9:
        return K_KEYPOINTS if _is(s, b"keypoints", 9) else 0
    if n == 10:
        return K_CATEGORIES if _is(s, b"categories", 10) else 0
    if n == 11:
        if _is(s, b"category_id", 11):
            return K_CATEGORY_ID
        if _is(s, b"annotations", 11):
            return K_ANNOTATIONS
        return 0
    if n == 12:
        return K_SEGMENTATION if _is(s, b"segmentation", 12) else 0
    if n == 13:
        return K_SEGMENTATIONS if _is(s, b"segmentations", 13) else 0
    return 0


cdef inline cptr _key(cptr p, cptr end, int* code) noexcept nogil:
    """A key without escapes at ``p`` (on its quote) and its code (0: no
    scanner's); NULL for anything else (an escaped key is refused)."""
    cdef cptr s
    if p >= end or p[0] != 34:
        return NULL
    p += 1
    s = p
    while p < end and STR_CLASS[p[0]] == 0:
        p += 1
    if p >= end or p[0] != 34:
        return NULL      # truncated, escaped or refused byte
    code[0] = _classify(s, p - s)
    return p + 1


cdef inline cptr _any_key(cptr p, cptr end, int* code, int* esc) noexcept nogil:
    """A key at ``p`` (on its quote), escaped or not (any valid JSON string),
    and the code of its decoded text (0: no scanner's); ``esc`` set when it
    holds an escape."""
    cdef cptr q
    cdef Py_ssize_t dl
    cdef unsigned char tmp[16]
    if p >= end or p[0] != 34:
        return NULL
    q = _string(p, end, esc)
    if q == NULL:
        return NULL
    if esc[0]:
        dl = _decode(p + 1, q - 1, tmp, 16)
        code[0] = _classify(tmp, dl) if dl >= 0 else 0
    else:
        code[0] = _classify(p + 1, q - 2 - p)
    return q


# ------------------------------------------------------------------ shared values
cdef inline cptr _int_then(cptr p, cptr end, int64_t* out, unsigned char after) noexcept nogil:
    """An integer token (:func:`_int`) at ``p`` (whitespace around it) followed by
    the byte ``after``: the byte after that."""
    p = _int(_ws(p, end), end, out)
    if p == NULL:
        return NULL
    p = _ws(p, end)
    if p >= end or p[0] != after:
        return NULL
    return p + 1


cdef inline cptr _int_pair(cptr p, cptr end, int64_t* a, int64_t* b) noexcept nogil:
    """``[a, b]`` at ``p``: an array of exactly two integer tokens (:func:`_int`),
    an RLE's ``size``."""
    if p >= end or p[0] != 91:
        return NULL
    p = _int_then(p + 1, end, a, 44)
    if p == NULL:
        return NULL
    return _int_then(p, end, b, 93)


cdef inline cptr _num4(cptr p, cptr end, double* out, uint8_t* ints) noexcept nogil:
    """``[a, b, c, d]`` at ``p``: an array of exactly four numbers (:func:`_num`),
    a box; bit ``k`` of ``ints`` says the ``k``-th was an integer token."""
    cdef int k
    cdef bint is_int
    if p >= end or p[0] != 91:
        return NULL
    p += 1
    ints[0] = 0
    for k in range(4):
        p = _num(_ws(p, end), end, &out[k], &is_int)
        if p == NULL:
            return NULL
        if is_int:
            ints[0] |= <uint8_t> (1 << k)
        p = _ws(p, end)
        if p >= end or p[0] != (93 if k == 3 else 44):
            return NULL
        p += 1
    return p


cdef inline cptr _counts_string(cptr p, cptr end, bint unicode, Py_ssize_t* esc) noexcept nogil:
    """A compressed RLE counts string at ``p`` (on its quote): printable ASCII
    (no control byte, nothing above 0x7f) with only the escapes ``\\\\``,
    ``\\"``, ``\\/`` and, with ``unicode``, ``\\uXXXX`` of a byte 0x20..0x7f.

    Returns the byte after its closing quote; ``esc`` the offset of its first
    backslash from the byte after its opening quote, -1 when it has none.
    """
    cdef cptr s = p + 1
    cdef uint32_t cp
    cdef uint8_t c
    p = s
    esc[0] = -1
    while True:
        p = _plain_run(p, end)
        if p >= end:
            return NULL
        c = STR_CLASS[p[0]]
        if c == 1:
            return p + 1
        if c == 3:
            return NULL
        if esc[0] < 0:
            esc[0] = p - s
        if p + 1 < end and (p[1] == 92 or p[1] == 34 or p[1] == 47):
            p += 2
        elif unicode:
            p = _escape(p, end, &cp)
            if p == NULL or not (0x20 <= cp <= 0x7f):
                return NULL
        else:
            return NULL


# What reads an RLE's counts value at ``p`` (its first byte) into ``ctx``: the byte
# after it, NULL when refused or out of memory
ctypedef cptr (*CountsReader)(cptr p, cptr end, cptr base, void* ctx) noexcept nogil


# ``{"size": [h, w], "counts": ...}`` at ``p``: exactly these two keys, either order
cdef cptr _rle_object(cptr p, cptr end, cptr base, bint escaped_keys, int64_t lo, int64_t hi,
                      int64_t* hw, bint* counts_first, CountsReader counts, void* ctx) noexcept nogil


# a counts string without its escapes: sixteen bytes at a time where the CPU
# has SSE2 (x86-64 always), else memchr from backslash to backslash
cdef extern from *:
    """
    #include <string.h>
    #if defined(__SSE2__) || defined(_M_X64)
    #include <emmintrin.h>
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline int ba_ctz16(unsigned int x) { unsigned long i; _BitScanForward(&i, x); return (int)i; }
    #else
    #define ba_ctz16(x) __builtin_ctz(x)
    #endif
    #endif
    /* The bytes p .. q-1 of a JSON string with each backslash dropped and the
       byte after it kept (the scan checked that no other escape occurs),
       written from out; returns how many.  Writes up to 15 bytes past them
       but never past out + (q - p): unescaping only shortens.  Not in place
       (out must not overlap p .. q-1). */
    static inline Py_ssize_t ba_unescape(const unsigned char *p, const unsigned char *q, unsigned char *out) {
        unsigned char *o = out;
    #if defined(__SSE2__) || defined(_M_X64)
        const __m128i backslash = _mm_set1_epi8(92);
        while (q - p >= 16) {
            __m128i x = _mm_loadu_si128((const __m128i *)p);
            unsigned int m = (unsigned int)_mm_movemask_epi8(_mm_cmpeq_epi8(x, backslash));
            _mm_storeu_si128((__m128i *)o, x);
            if (m == 0) { p += 16; o += 16; continue; }
            m = (unsigned int)ba_ctz16(m);
            p += m;
            o += m;
            if (p + 1 < q) *o++ = p[1];
            p += 2;
        }
        while (p < q) {
            if (*p == 92) { if (p + 1 < q) *o++ = p[1]; p += 2; }
            else *o++ = *p++;
        }
    #else
        while (p < q) {
            const unsigned char *b = (const unsigned char *)memchr(p, 92, (size_t)(q - p));
            if (b == NULL) { memcpy(o, p, (size_t)(q - p)); o += q - p; break; }
            memcpy(o, p, (size_t)(b - p));
            o += b - p;
            p = b;
            if (p + 1 < q) *o++ = p[1];
            p += 2;
        }
    #endif
        return o - out;
    }
    """
    Py_ssize_t _unescape_string "ba_unescape" (const unsigned char* p, const unsigned char* q,
                                               unsigned char* out) noexcept nogil


# ---------------------------------------------------------------- column buffers
cdef enum:
    # the most columns of one scanner
    MAX_COLS = 32
    # bytes of a memory page (mappings of columns, pages given back)
    PAGE = 4096


# A growable column (``n`` elements in room for ``cap``; ``bytes``: the size of a
# column that is a page mapping of its own, else 0) and its growth, in C: out of
# line (growing is rare: the pushes that inline _room stay small) but static, so
# that each scanner's compiler sees that growing touches nothing but the column
# (its hot loops keep their values in registers across the pushes)
cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define BAPI_COLD __attribute__((noinline, cold, unused))
    #elif defined(_MSC_VER)
    #define BAPI_COLD __declspec(noinline)
    #else
    #define BAPI_COLD
    #endif
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    typedef struct { char *data; Py_ssize_t n; Py_ssize_t cap; Py_ssize_t bytes; } bapi_vec;
    /* Room for need elements of item bytes in v, doubling its room: a malloc'ed
       block (from 256 elements) or, with mapped, a page mapping of its own
       (Linux; from 512 elements, whole pages plus a spare one: room to shift
       the elements by less than a page before their pages are moved, as
       _scan_ground_truth._move_column does); 0 when out of memory. */
    static BAPI_COLD int bapi_vgrow(bapi_vec *v, Py_ssize_t need, Py_ssize_t item, int mapped) {
        Py_ssize_t cap = v->cap ? v->cap * 2 : (mapped ? 512 : 256);
        void *t;
        while (cap < need) cap *= 2;
        if (!mapped) {
            t = realloc(v->data, (size_t) cap * (size_t) item);
            if (t == NULL) return 0;
            v->data = (char *) t;
            v->cap = cap;
            return 1;
        }
    #if defined(__linux__)
        {
            size_t nb = ((size_t) cap * (size_t) item + 4095) / 4096 * 4096 + 4096;
            t = v->data == NULL ? mmap(NULL, nb, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                                : mremap(v->data, (size_t) v->bytes, nb, MREMAP_MAYMOVE);
            if (t == MAP_FAILED) return 0;
            v->data = (char *) t;
            v->bytes = (Py_ssize_t) nb;
            v->cap = (Py_ssize_t) ((nb - 4096) / (size_t) item);
            return 1;
        }
    #else
        return 0;
    #endif
    }
    """
    ctypedef struct Vec "bapi_vec":
        char* data
        Py_ssize_t n
        Py_ssize_t cap
        Py_ssize_t bytes
    bint _vgrow "bapi_vgrow" (Vec* v, Py_ssize_t need, Py_ssize_t item, bint mapped) noexcept nogil


cdef struct Cols:
    # the columns of one scan (or of one chunk of a split scan); a scanner
    # names its own columns 0 .. NCOL-1 (NCOL <= MAX_COLS)
    Vec col[MAX_COLS]
    bint nomem        # a push ran out of memory
    bint mapped       # columns grow as page mappings of their own (Linux; chunks whose
                      # pages are then moved into the whole columns: _scan_ground_truth)


cdef inline bint _reserve(Vec* v, Py_ssize_t need, Py_ssize_t item) noexcept nogil:
    """Room for at least ``need`` elements of ``item`` bytes in ``v`` (a
    malloc'ed column), exactly ``need`` when it grows; 0 when out of memory."""
    cdef void* t
    if need <= v.cap:
        return 1
    t = realloc(v.data, <size_t> need * <size_t> item)
    if t == NULL:
        return 0
    v.data = <char*> t
    v.cap = need
    return 1


cdef inline char* _room(Cols* c, int k, Py_ssize_t more, Py_ssize_t item) noexcept nogil:
    """Where ``more`` elements of ``item`` bytes go at the end of column ``k``
    (its ``n`` is the caller's to advance); NULL, ``c.nomem`` set, when out of
    memory."""
    cdef Vec* v = &c.col[k]
    if v.n + more > v.cap and not _vgrow(v, v.n + more, item, c.mapped):
        c.nomem = 1
        return NULL
    return v.data + v.n * item


cdef inline bint _pi(Cols* c, int k, int64_t x) noexcept nogil:
    """Append the int64 ``x`` to column ``k``; 0 when out of memory."""
    cdef char* p = _room(c, k, 1, 8)
    if p == NULL:
        return 0
    (<int64_t*> p)[0] = x
    c.col[k].n += 1
    return 1


cdef inline bint _pf(Cols* c, int k, double x) noexcept nogil:
    """Append the float64 ``x`` to column ``k``; 0 when out of memory."""
    cdef char* p = _room(c, k, 1, 8)
    if p == NULL:
        return 0
    (<double*> p)[0] = x
    c.col[k].n += 1
    return 1


cdef inline bint _pu(Cols* c, int k, uint8_t x) noexcept nogil:
    """Append the uint8 ``x`` to column ``k``; 0 when out of memory."""
    cdef char* p = _room(c, k, 1, 1)
    if p == NULL:
        return 0
    (<uint8_t*> p)[0] = x
    c.col[k].n += 1
    return 1


# Free (or unmap) every column of ``c`` and empty it
cdef void _cols_free(Cols* c) noexcept nogil


# The ``n`` elements of ``v`` (a malloc'ed column) as a numpy array of ``shape``
# that takes its block, shrunk to them; zeros (the block left to the caller) when empty
cdef object _take_vec(Vec* v, Py_ssize_t item, object dtype, tuple shape)


cdef inline cptr _polygons(cptr p, cptr end, Cols* c, int coords, int ends) noexcept nogil:
    """A list of polygons ``[[x, y, ...], ...]`` at ``p`` (on its ``[``): each
    polygon's numbers appended to the float64 column ``coords``, then its end
    (the length of ``coords``: empty polygons too) to the int64 column ``ends``.

    Inline: each scanner has it with its own (constant) columns."""
    cdef bint more, more2, is_int
    cdef double x
    p = _open_array(p, end, &more)
    if p == NULL:
        return NULL
    while more:
        p = _open_array(p, end, &more2)
        if p == NULL:
            return NULL
        while more2:
            p = _num(p, end, &x, &is_int)
            if p == NULL or not _pf(c, coords, x):
                return NULL
            p = _sep(p, end, 93, &more2)
            if p == NULL:
                return NULL
        if not _pi(c, ends, c.col[coords].n):
            return NULL
        p = _sep(p, end, 93, &more)
        if p == NULL:
            return NULL
    return p


# ------------------------------------------------------------------ split scans
# What reads one object at ``p`` (on its '{') into the columns of ``ctx``: the byte
# after it, NULL when refused or out of memory (then the Cols given to _objects
# says nomem)
ctypedef cptr (*ObjectReader)(cptr p, cptr end, cptr base, void* ctx) noexcept nogil


# One chunk of a split scan: the objects of an array from the one at ``start``, each
# read by ``reader``, until the array's ']' or arriving exactly at one of ``stops``
cdef int _objects(cptr base, Py_ssize_t size, Py_ssize_t start, const Py_ssize_t* stops,
                  Py_ssize_t nstops, ObjectReader reader, void* ctx, Cols* c,
                  Py_ssize_t* reached, Py_ssize_t* end_at) noexcept nogil


# The starts of the chunks of a split scan: ``first`` and the first candidate
# (:func:`_candidate`) of each further window [origin + step * i, origin + step * (i + 1)),
# i = 1 .. k-1, the last running to ``size`` (none from a window without one)
cdef list _chunk_starts(cptr base, Py_ssize_t size, Py_ssize_t first, Py_ssize_t origin,
                        Py_ssize_t step, Py_ssize_t k)


# TypeError / ValueError unless ``num_threads`` is a positive integer
cdef int _check_threads(object num_threads) except -1
