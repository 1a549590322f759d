# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Run-length plumbing: the RLE string codec, interval geometry and string tables.

Private module (``boundary_api.masks._rle``).  Everything here works on the COCO
run-length format: a mask of ``h x w`` pixels is read in column-major order and
stored as alternating runs of zeros and ones, the counts being packed into an
ASCII string (5 bits per character, a continuation bit, and counts after the
second one stored as a difference to the count two places before).

Inside the kernels a mask is held as its *ones-intervals*: a sorted list of
half-open ``[start, end)`` pixel positions in column-major order, maximal (no
two touch).  The public wrappers in ``boundary_api.masks.boundary`` validate input;
the ``nogil`` loops below trust it.  The buffers, the inline interval helpers and
the declarations the other kernel modules cimport are in ``_rle.pxd``.  The
module is longer than 800 lines because the previous string decoder stays
beside the current one, as the reference the tests compare it with.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_Check, PyUnicode_AsUTF8AndSize
from cpython.bytes cimport PyBytes_Check
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset

import numpy as np


# --------------------------------------------------------------------------
# RLE string codec
# --------------------------------------------------------------------------

# Decoding.  The string is read in windows of 64 characters: one pass (SSE2
# on x86, 64-bit words elsewhere, see ``ba_rle_ends64``) checks a window's
# characters and gives a 64-bit mask of the last characters of counts (those
# without the continuation bit 0x20).  The counts are then taken from that
# mask's set bits, two at a time (a ones run and the zeros run after it), so
# that where the next count starts never waits for a count's value: reading
# one character after the other made it wait on a branch per continuation
# bit, mispredicted about every other count (real counts are 1 or 2
# characters long in about equal shares).  The next window starts after the
# last pair read, so that a count always lies in the window it is read from.
# A pair of at most 4 characters -- 96-98% of the pairs of real masks -- is
# assembled from one load: the 5-bit groups are moved side by side with
# shifts and masks (32-bit ones: the loop keeps no 64-bit constant in a
# register), and each count is cut out and sign-extended from the top bit of
# its last group (the sign bit 0x10 of its last character) by two shifts; a
# pair of 5 to 8 characters takes the same steps on 64 bits, longer counts
# are read character by character.  The counts after the second are
# differences to the count two places before: a ones run and a zeros run
# each keep their own running sum.  A ones run is appended as an interval or,
# after an empty zeros run, merged into the last one.  The last 71
# characters or fewer are read from a padded copy, so that no load goes past
# the string.
#
# Malformed, -1, exactly where the plain loop that reads one count after the
# other says so (and the previous decoder, ``_decode_ref_impl``, kept below):
# a character outside '0'..'o', a count of more than 13 characters, a string
# that ends inside a count, or a count (after the differences are added)
# outside 0 .. 2**32-1; the sign of a 13th character is shifted by 65 mod 64
# bits, as the x86 shift does.  The checks of the characters and of the
# counts' range are gathered and tested once per window and at the end:
# until then a malformed string may give garbage counts, which only change the
# values written (every load stays inside the string or the padded copy, and
# at most one interval is appended per count, into room reserved beforehand).

cdef extern from *:
    """
    #include <string.h>
    #include <stdint.h>
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline Py_ssize_t ba_rle_ctz64(uint64_t x) {
        unsigned long i; _BitScanForward64(&i, x); return (Py_ssize_t)i;
    }
    #else
    static inline Py_ssize_t ba_rle_ctz64(uint64_t x) { return (Py_ssize_t)(unsigned)__builtin_ctzll(x); }
    #endif
    #if defined(__GNUC__) || defined(__clang__)
    #define ba_rle_likely(c) __builtin_expect(!!(c), 1)
    #else
    #define ba_rle_likely(c) (c)
    #endif
    /* 8 bytes from p as a little-endian word (byte k in bits 8k..8k+7) */
    static inline uint64_t ba_rle_load64(const unsigned char* p) {
        uint64_t x;
        memcpy(&x, p, 8);
    #if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        x = __builtin_bswap64(x);
    #endif
        return x;
    }
    """
    Py_ssize_t ba_rle_ctz64(uint64_t x) nogil
    uint64_t ba_rle_load64(const unsigned char* p) nogil
    bint ba_rle_likely(bint c) nogil   # the branch layout hint of GCC and clang


# The mask of the last characters of counts among the 64 characters at p (bit
# k for p[k]), ORing into bad[0] a word that is not 0 if a character is
# outside '0'..'o'.  Per byte: x = c - '0', which must be below 64, and the
# character ends its count where bit 5 of x is clear.  With SSE2 (every
# x86-64 CPU): 16 characters per step, the flags gathered by movemask.
# Otherwise 8 per step in a 64-bit word (SWAR): a byte below '0' borrows
# from the byte above, which may then look valid, but the lowest such byte
# is itself >= 0xd0 and so is caught; the 8 flags (bit 0 of each byte after
# the shift) are gathered into one byte by a multiply whose partial products
# all fall on distinct bits.  (Both are compiled; ``_window_masks`` lets the
# tests compare them.)
cdef extern from *:
    """
    static inline uint64_t ba_rle_ends64_swar(const unsigned char* p, uint64_t* bad) {
        uint64_t m = 0, acc = 0, x;
        int j;
        for (j = 0; j < 8; j++) {
            x = ba_rle_load64(p + 8 * j) - (uint64_t)0x3030303030303030ULL;
            acc |= x;
            m |= (((~x & 0x2020202020202020ULL) >> 5) * 0x0102040810204080ULL >> 56) << (8 * j);
        }
        *bad |= acc & 0xC0C0C0C0C0C0C0C0ULL;
        return m;
    }
    #if defined(__SSE2__) || defined(_M_X64) || (defined(_M_IX86_FP) && _M_IX86_FP >= 2)
    #include <emmintrin.h>
    #define BA_RLE_SSE2 1
    static inline uint64_t ba_rle_ends64(const unsigned char* p, uint64_t* bad) {
        const __m128i k0 = _mm_set1_epi8(0x30);
        __m128i x0 = _mm_sub_epi8(_mm_loadu_si128((const __m128i*)p), k0);
        __m128i x1 = _mm_sub_epi8(_mm_loadu_si128((const __m128i*)(p + 16)), k0);
        __m128i x2 = _mm_sub_epi8(_mm_loadu_si128((const __m128i*)(p + 32)), k0);
        __m128i x3 = _mm_sub_epi8(_mm_loadu_si128((const __m128i*)(p + 48)), k0);
        __m128i acc = _mm_or_si128(_mm_or_si128(x0, x1), _mm_or_si128(x2, x3));
        /* bits 6 and 7 of a byte into bit 7: shifting a 16-bit lane left by 1
           moves bit 6 of each byte to its bit 7 (bit 7 of the low byte goes
           to the high byte, which the OR with acc keeps anyway) */
        *bad |= (unsigned)_mm_movemask_epi8(_mm_or_si128(acc, _mm_slli_epi16(acc, 1)));
        /* bit 5 of each byte into its bit 7 */
        uint64_t m = (unsigned)_mm_movemask_epi8(_mm_slli_epi16(x0, 2))
            | ((uint64_t)(unsigned)_mm_movemask_epi8(_mm_slli_epi16(x1, 2)) << 16)
            | ((uint64_t)(unsigned)_mm_movemask_epi8(_mm_slli_epi16(x2, 2)) << 32)
            | ((uint64_t)(unsigned)_mm_movemask_epi8(_mm_slli_epi16(x3, 2)) << 48);
        return ~m;
    }
    #else
    #define BA_RLE_SSE2 0
    #define ba_rle_ends64 ba_rle_ends64_swar
    #endif
    """
    uint64_t ba_rle_ends64(const unsigned char* p, uint64_t* bad) nogil
    uint64_t ba_rle_ends64_swar(const unsigned char* p, uint64_t* bad) nogil
    bint BA_RLE_SSE2


# The value (before the difference is added) of a count of L >= 1 characters
# at q, which has 8 readable bytes: the plain loop's 5 bits per character and
# the sign of the last one shifted by 5*L mod 64 bits.  bad[0] = 1 if L > 13.
cdef inline uint64_t _count_value(const unsigned char* q, Py_ssize_t L, uint64_t* bad) noexcept nogil:
    cdef uint64_t x = 0, c = 0
    cdef Py_ssize_t k
    cdef int sh
    if L <= 4:
        x = ba_rle_load64(q) - <uint64_t> 0x3030303030303030
        x = (x & <uint64_t> 0x001f001f) | ((x >> 3) & <uint64_t> 0x03e003e0)
        x = (x & <uint64_t> 0x3ff) | ((x >> 6) & <uint64_t> 0xffc00)
        sh = (-5 * <int> L) & 63
        return <uint64_t> ((<int64_t> (x << sh)) >> sh)
    if L > 13:
        bad[0] = 1
        return 0
    for k in range(L):
        c = <uint64_t> q[k] - 48
        x |= (c & 31) << ((5 * k) & 63)
    return x | ((0 - ((c >> 4) & 1)) << ((5 * L) & 63))


# A ones run of v pixels at pos appended to the intervals d0 .. d (exclusive):
# merged into the last one if it ends at pos, nothing if v is 0; the new end.
cdef inline int64_t* _push_run(int64_t* d0, int64_t* d, uint64_t pos, uint64_t v) noexcept nogil:
    if v == 0:
        return d
    if d > d0 and <uint64_t> (d - 1)[0] == pos:
        (d - 1)[0] = <int64_t> (pos + v)
        return d
    d[0] = <int64_t> pos
    d[1] = <int64_t> (pos + v)
    return d + 2


cdef inline int64_t _decode_impl(const unsigned char* s, Py_ssize_t slen, I64Vec* out,
                                 bint push) noexcept nogil:
    cdef unsigned char pad[144]
    cdef const unsigned char* src = s   # where windows are read: the string, then the padded copy
    cdef const unsigned char* b         # the window's first character
    cdef const unsigned char* q
    cdef Py_ssize_t off = 0             # the position in the string of src[0]
    cdef Py_ssize_t wb = 0, rem
    cdef Py_ssize_t p, e1, e2           # in the window: end of the last count read, of the next two
    cdef uint64_t M, M1, x, v1, v2, bad = 0, chk = 0, pos = 0
    cdef uint64_t h1 = 0, h0 = 0        # the last ones count and zeros count after count 0
    cdef int64_t* d0 = NULL             # the mask's first interval
    cdef int64_t* d = NULL              # where the next interval goes
    cdef Py_ssize_t first = 0, n = 0
    cdef int sh
    cdef bint started = 0
    if push:
        first = out.n
        n = out.n
    while wb < slen:
        if push:
            # room for an interval per count that ends in the window, and one more
            if started:
                n = first + (d - d0)
            if n + 68 > out.cap:
                if _i64_reserve(out, n + 68) != 0:
                    return -1
            d0 = out.data + first
            d = out.data + n
        rem = slen - wb
        if rem < 72 and src == s:
            # the rest of the string and 64 characters '0': a window starts
            # before the string's end and reads 64 bytes, a pair or count 8
            memcpy(pad, s + wb, rem)
            memset(pad + rem, 48, 64)
            src = pad
            off = wb
        b = src + (wb - off)
        M = ba_rle_ends64(b, &bad)
        if rem < 64:
            M &= ((<uint64_t> 1) << rem) - 1
        p = -1
        if not started:
            # count 0 (zeros), not a difference
            if M == 0:
                bad = 1
                break
            p = ba_rle_ctz64(M)
            M &= M - 1
            v1 = _count_value(b, p + 1, &bad)
            chk |= v1
            pos = v1
            started = 1
        while True:
            M1 = M & (M - 1)
            if M1 == 0:
                break
            e1 = ba_rle_ctz64(M)
            e2 = ba_rle_ctz64(M1)
            M = M1 & (M1 - 1)
            q = b + p + 1
            if ba_rle_likely(e2 - p <= 4):
                # (32-bit constants: the loop keeps none in a register)
                x = ba_rle_load64(q) - <uint64_t> 0x30303030
                x = (x & <uint64_t> 0x001f001f) | ((x >> 3) & <uint64_t> 0x03e003e0)
                x = (x & <uint64_t> 0x3ff) | ((x >> 6) & <uint64_t> 0xffc00)
                sh = (-5 * <int> (e1 - p)) & 63
                v1 = <uint64_t> ((<int64_t> (x << sh)) >> sh)
                v2 = <uint64_t> ((<int64_t> (x << ((-5 * <int> (e2 - p)) & 63))) >> ((-5 * <int> (e2 - e1)) & 63))
            elif e2 - p <= 8:
                x = ba_rle_load64(q) - <uint64_t> 0x3030303030303030
                x = (x & <uint64_t> 0x001f001f001f001f) | (((x >> 8) & <uint64_t> 0x001f001f001f001f) << 5)
                x = (x & <uint64_t> 0x000003ff000003ff) | (((x >> 16) & <uint64_t> 0x000003ff000003ff) << 10)
                x = (x & <uint64_t> 0xffffffff) | ((x >> 32) << 20)
                sh = (-5 * <int> (e1 - p)) & 63
                v1 = <uint64_t> ((<int64_t> (x << sh)) >> sh)
                v2 = <uint64_t> ((<int64_t> (x << ((-5 * <int> (e2 - p)) & 63))) >> ((-5 * <int> (e2 - e1)) & 63))
            else:
                v1 = _count_value(q, e1 - p, &bad)
                v2 = _count_value(b + e1 + 1, e2 - e1, &bad)
            v1 += h1
            h1 = v1
            if push:
                # a new interval unless this run or the zeros run before it
                # is empty (h0 is 0 before the first pair, too)
                if ba_rle_likely(v1 != 0 and h0 != 0):
                    d[0] = <int64_t> pos
                    d[1] = <int64_t> (pos + v1)
                    d += 2
                else:
                    d = _push_run(d0, d, pos, v1)
            v2 += h0
            h0 = v2
            chk |= v1 | v2
            pos += v1 + v2
            p = e2
        if bad:
            break
        if M != 0 and wb + ba_rle_ctz64(M) == slen - 1:
            # the string's last count, a ones run
            e1 = ba_rle_ctz64(M)
            v1 = _count_value(b + p + 1, e1 - p, &bad) + h1
            chk |= v1
            if push:
                d = _push_run(d0, d, pos, v1)
            pos += v1
            p = e1
        elif p < 0:
            # no count ends in the window, or a single one that is not the
            # last: a count of more than 13 characters or one the string
            # ends inside
            bad = 1
            break
        wb += p + 1
    if bad or (chk >> 32) != 0:
        return -1
    if push and started:
        out.n = first + (d - d0)
    return <int64_t> pos


# The previous decoder, kept as the reference that the tests and the decoding
# benchmark compare ``_decode_impl`` with (``_decode_table``); not used by
# the kernels.  It runs in two phases over chunks of the string.  Phase one turns
# characters into the raw count values (5 bits per character, a continuation
# bit, the sign of the last character) with no branch that depends on the
# data: the counts of real masks are 1 or 2 characters long in about equal
# shares, so a branch per count was mispredicted about every other count.
# Phase two adds the deltas (a count after the second is stored as the
# difference to the count two places before, so the counts of each parity
# are prefix sums), checks each count's range and appends the ones-runs.
# Both phases reproduce, for every input, the result of the plain loop that
# reads one count after the other: a character outside '0'..'o', a count of
# more than 13 characters, a string that ends inside a count, or a count
# outside 0 .. 2**32-1 makes the string malformed (-1); the sign of a 13th
# character shifts by 65 mod 64 bits, as the x86 shift does.
DEF _CHUNK = 256


cdef inline int64_t _decode_ref_impl(const unsigned char* s, Py_ssize_t slen, I64Vec* out,
                                     bint push) noexcept nogil:
    cdef uint64_t tmp[_CHUNK]
    cdef Py_ssize_t first = 0
    cdef Py_ssize_t p = 0, q, stop, j, nm
    cdef uint64_t x = 0, c, bad = 0, sh = 0, tm, o = 0, e = 0, v
    cdef int64_t pos = 0, m = 0
    if push:
        first = out.n
    while p < slen:
        stop = p + _CHUNK if slen - p > _CHUNK else slen
        nm = 0
        # phase one: raw count values of the counts that end in this chunk;
        # tmp[nm] holds the count being read (final at its last character)
        for q in range(p, stop):
            c = <uint64_t> s[q] - 48
            bad |= (c & ~(<uint64_t> 63)) | ((sh + 3) & ~(<uint64_t> 63))
            x |= (c & 31) << (sh & 63)
            sh += 5
            tmp[nm] = x | ((0 - ((c >> 4) & 1)) << (sh & 63))
            tm = ((c >> 5) & 1) - 1          # all ones on a count's last character
            nm += <Py_ssize_t> (tm & 1)
            x &= ~tm
            sh &= ~tm
        if bad:
            return -1
        p = stop
        if push and _i64_reserve(out, out.n + nm + 2) != 0:
            return -1
        # phase two: deltas, range, runs
        for j in range(nm):
            v = tmp[j]
            if m == 0:
                pass
            elif m & 1:
                o += v
                v = o
            else:
                e += v
                v = e
            if v > <uint64_t> 4294967295:
                return -1
            if push and (m & 1) and v != 0:
                if out.n > first and out.data[out.n - 1] == pos:
                    out.data[out.n - 1] = pos + <int64_t> v
                else:
                    if out.n + 2 > out.cap and _i64_reserve(out, out.n + 2) != 0:
                        return -1
                    out.data[out.n] = pos
                    out.data[out.n + 1] = pos + <int64_t> v
                    out.n += 2
            pos += <int64_t> v
            m += 1
    if sh != 0:
        return -1
    return pos


# Decode a compressed COCO RLE string into maximal ones-intervals appended to
# ``out`` (as a mask of its own: never merged with what ``out`` holds already).
# Returns the total number of pixels the counts cover, or -1 if the string is
# malformed (or memory runs out); then ``out.n`` is what it was.
cdef int64_t _decode(const unsigned char* s, Py_ssize_t slen, I64Vec* out) noexcept nogil:
    return _decode_impl(s, slen, out, 1)


# The number of pixels a compressed RLE string covers (what ``_decode``
# returns), or -1 if it is malformed, without writing its runs.
cdef int64_t _rle_total(const unsigned char* s, Py_ssize_t slen) noexcept nogil:
    return _decode_impl(s, slen, NULL, 0)


# Append one count to a compressed string.  ``hist[m & 1]`` holds count m-2.
cdef inline int _emit(int64_t cnt, Py_ssize_t m, int64_t* hist, ByteVec* out) noexcept nogil:
    cdef int64_t x = cnt, c
    cdef int more = 1
    if m > 2:
        x -= hist[m & 1]
    hist[m & 1] = cnt
    while more:
        c = x & 0x1f
        x >>= 5
        if c & 0x10:
            more = x != -1
        else:
            more = x != 0
        if more:
            c |= 0x20
        if _bytes_reserve(out, out.n + 1) != 0:
            return -1
        out.data[out.n] = <char> (c + 48)
        out.n += 1
    return 0


# Append one run of ``cnt`` pixels as count number ``m[0]``.  A COCO count is
# a 32-bit unsigned integer (pycocotools' ``uint``, and ``_decode`` checks
# it), so a longer run is written as runs of 2**32 - 1 separated by empty runs
# of the other value, which every decoder reads back as the one run.
cdef inline int _emit_run(int64_t cnt, Py_ssize_t* m, int64_t* hist, ByteVec* out) noexcept nogil:
    while cnt > <int64_t> 4294967295:
        if _emit(<int64_t> 4294967295, m[0], hist, out) != 0:
            return -1
        if _emit(0, m[0] + 1, hist, out) != 0:
            return -1
        m[0] += 2
        cnt -= <int64_t> 4294967295
    if _emit(cnt, m[0], hist, out) != 0:
        return -1
    m[0] += 1
    return 0


# Write one (already delta-coded) count at ``p`` in COCO's 6-bit characters;
# returns the position after it.  The caller reserved the room.
cdef inline char* _put(char* p, int64_t x) noexcept nogil:
    cdef int64_t c
    while True:
        c = x & 0x1f
        x >>= 5
        if (x != -1) if (c & 0x10) else (x != 0):
            p[0] = <char> ((c | 0x20) + 48)
            p += 1
        else:
            p[0] = <char> (c + 48)
            return p + 1


# ``_encode`` for masks of at most 2**32 - 1 pixels (every run a single
# count): each count's difference from the count two before lies within
# (-2**32, 2**32), 7 characters at most (13 for any 64-bit value, which is
# what is reserved, so that even runs outside ``total`` cannot overrun), so
# the room for the whole string is reserved once instead of once per
# character.  Same output as the general path.
cdef int _encode_small(const int64_t* se, Py_ssize_t n, int64_t total, ByteVec* out) noexcept nogil:
    cdef int64_t hist[2]
    cdef int64_t last = 0, cnt
    cdef Py_ssize_t j = 0, m = 0
    cdef char* p
    if _bytes_reserve(out, out.n + 13 * (n + 1)) != 0:
        return -1
    p = out.data + out.n
    hist[0] = 0
    hist[1] = 0
    # counts 0, 1 and 2 are written as they are, later ones as the difference
    # from the count two before (pycocotools' ``i > 2``)
    while j < n:
        cnt = se[j] - last
        p = _put(p, cnt - hist[0] if m > 2 else cnt)
        hist[0] = cnt
        cnt = se[j + 1] - se[j]
        p = _put(p, cnt - hist[1] if m + 1 > 2 else cnt)
        hist[1] = cnt
        m += 2
        last = se[j + 1]
        j += 2
    if m == 0 or last < total:
        cnt = total - last
        p = _put(p, cnt - hist[0] if m > 2 else cnt)
    out.n = p - out.data
    return 0


# Encode maximal ones-intervals covering ``total`` pixels as a compressed COCO
# RLE string appended to ``out`` (counts: zeros, ones, ..., trailing zeros if
# any), exactly as pycocotools writes it (for runs below 2**32).
cdef int _encode(const int64_t* se, Py_ssize_t n, int64_t total, ByteVec* out) noexcept nogil:
    cdef int64_t hist[2]
    cdef int64_t last = 0
    cdef Py_ssize_t j = 0, m = 0
    if total <= <int64_t> 4294967295:
        return _encode_small(se, n, total, out)
    hist[0] = 0
    hist[1] = 0
    while j < n:
        if _emit_run(se[j] - last, &m, hist, out) != 0:
            return -1
        if _emit_run(se[j + 1] - se[j], &m, hist, out) != 0:
            return -1
        last = se[j + 1]
        j += 2
    if m == 0 or last < total:
        if _emit_run(total - last, &m, hist, out) != 0:
            return -1
    return 0


# --------------------------------------------------------------------------
# geometry helpers
# --------------------------------------------------------------------------

# number of pixels in both interval lists
cdef int64_t _intersection(const int64_t* a, Py_ssize_t na, const int64_t* b, Py_ssize_t nb) noexcept nogil:
    cdef Py_ssize_t i = 0, j = 0
    cdef int64_t tot = 0, s, e, ae, be, t
    cdef const int64_t* x
    cdef Py_ssize_t nx
    cdef Py_ssize_t* ix
    if na == 0 or nb == 0:
        return 0
    if a[na - 1] <= b[0] or b[nb - 1] <= a[0]:
        return 0
    # skip, by binary search, the intervals of the list that starts first
    # that end before the other list starts (the masks' boxes overlap only
    # in part: without the skip the merge walks the columns left of it)
    if a[0] < b[0]:
        x = a; nx = na; ix = &i; t = b[0]
    else:
        x = b; nx = nb; ix = &j; t = a[0]
    ix[0] = _first_ending_after(x, nx, t)
    # the merge, without a branch on which list steps (it would be
    # mispredicted about every other step)
    while i < na and j < nb:
        ae = a[i + 1]
        be = b[j + 1]
        s = a[i] if a[i] > b[j] else b[j]
        e = ae if ae < be else be
        tot += e - s if e > s else 0
        # (positions are below 2**62: the differences' sign bits say which
        # list steps, 2 when its interval ends first or both end together;
        # written so that the compiler emits no branch for it)
        i += 2 + 2 * ((be - ae) >> 63)
        j += 2 + 2 * ((ae - be) >> 63)
    return tot



cdef void _free_vecs(I64Vec* v, Py_ssize_t k) noexcept nogil:
    cdef Py_ssize_t j
    if v == NULL:
        return
    for j in range(k):
        free(v[j].data)
    free(v)


cdef I64Vec* _new_vecs(Py_ssize_t k) noexcept nogil:
    cdef I64Vec* v = <I64Vec*> malloc((k if k > 0 else 1) * sizeof(I64Vec))
    cdef Py_ssize_t j
    if v != NULL:
        for j in range(k):
            v[j].data = NULL
            v[j].n = 0
            v[j].cap = 0
    return v


# --------------------------------------------------------------------------
# string tables: borrowed pointers to RLE strings for nogil loops
# --------------------------------------------------------------------------

cdef class StringTable:
    """Pointers to a list of RLE count strings (``str`` or ``bytes``).

    Holds a reference to the list so that the pointers stay valid.  (Its C
    attributes are declared in ``_rle.pxd``.)
    """

    def __cinit__(self, list items):
        cdef Py_ssize_t i, sz
        cdef object it
        self.n = len(items)
        self._keep = items
        self.ptr = <const unsigned char**> malloc(max(self.n, 1) * sizeof(char*))
        self.size = <Py_ssize_t*> malloc(max(self.n, 1) * sizeof(Py_ssize_t))
        if self.ptr == NULL or self.size == NULL:
            raise MemoryError()
        for i in range(self.n):
            it = items[i]
            if PyBytes_Check(it):
                self.ptr[i] = <const unsigned char*> PyBytes_AS_STRING(it)
                self.size[i] = PyBytes_GET_SIZE(it)
            elif PyUnicode_Check(it):
                self.ptr[i] = <const unsigned char*> PyUnicode_AsUTF8AndSize(it, &sz)
                self.size[i] = sz
            else:
                raise TypeError(f"RLE counts must be str or bytes, got {type(it).__name__}")

    def __dealloc__(self):
        free(self.ptr)
        free(self.size)

    @staticmethod
    def from_buffers(list buffers, const int64_t[:] which, const int64_t[:] start, const int64_t[:] length):
        """Table of strings that lie in byte buffers: item ``i`` is
        ``buffers[which[i]][start[i] : start[i] + length[i]]``.

        The buffers (``bytes``, ``bytearray`` or uint8 arrays) are kept alive,
        and a ``bytearray`` unresizable, while the table lives.

        Raises
        ------
        ValueError
            If an item does not lie inside its buffer.
        """
        cdef Py_ssize_t i, n = which.shape[0], nb = len(buffers)
        cdef StringTable t = StringTable.__new__(StringTable, [])
        if start.shape[0] != n or length.shape[0] != n:
            raise ValueError("which, start and length must have the same length")
        cdef const unsigned char** base = <const unsigned char**> malloc(max(nb, 1) * sizeof(char*))
        cdef Py_ssize_t* blen = <Py_ssize_t*> malloc(max(nb, 1) * sizeof(Py_ssize_t))
        cdef const unsigned char[::1] view
        if base == NULL or blen == NULL:
            free(base); free(blen)
            raise MemoryError()
        try:
            for i in range(nb):
                view = buffers[i]
                base[i] = &view[0] if view.shape[0] > 0 else <const unsigned char*> ""
                blen[i] = view.shape[0]
            free(t.ptr); free(t.size)
            t.ptr = NULL; t.size = NULL
            t.ptr = <const unsigned char**> malloc(max(n, 1) * sizeof(char*))
            t.size = <Py_ssize_t*> malloc(max(n, 1) * sizeof(Py_ssize_t))
            if t.ptr == NULL or t.size == NULL:
                raise MemoryError()
            for i in range(n):
                if which[i] < 0 or which[i] >= nb or start[i] < 0 or length[i] < 0 \
                        or start[i] + length[i] > blen[which[i]]:
                    raise ValueError(f"item {i} does not lie inside its buffer")
                t.ptr[i] = base[which[i]] + start[i]
                t.size[i] = length[i]
            t.n = n
            # memoryviews pin the buffers: a bytearray cannot be resized under the table
            t._keep = [memoryview(b) for b in buffers]
        finally:
            free(base); free(blen)
        return t


# --------------------------------------------------------------------------
# Python-level entry points (private; see boundary_api.masks.boundary)
# --------------------------------------------------------------------------

def check_strings(StringTable table, const int64_t[:] h, const int64_t[:] w):
    """Per item: 0 if the string decodes to exactly h*w pixels, 1 if it is
    malformed, 2 if it decodes to a different number of pixels."""
    cdef Py_ssize_t i, n = table.n
    status = np.zeros(n, np.uint8)
    cdef uint8_t[:] st = status
    cdef int64_t tot
    with nogil:
        for i in range(n):
            tot = _rle_total(table.ptr[i], table.size[i])
            if tot < 0:
                st[i] = 1
            elif tot != h[i] * w[i]:
                st[i] = 2
    return status


def check_area_bbox(StringTable table, const int64_t[:] h, const int64_t[:] w):
    """:func:`check_strings` and :func:`area_bbox` in one decode of each
    string: ``(status, area, box)``; area and box are meaningful only where
    the status is 0."""
    cdef Py_ssize_t i, n = table.n
    status = np.zeros(n, np.uint8)
    area = np.zeros(n, np.int64)
    box = np.zeros((n, 4), np.float64)
    cdef uint8_t[:] st = status
    cdef int64_t[:] ar = area
    cdef double[:, :] bx = box
    cdef I64Vec v
    cdef int64_t bb[4]
    cdef int64_t tot
    v.data = NULL; v.n = 0; v.cap = 0
    with nogil:
        for i in range(n):
            v.n = 0
            tot = _decode(table.ptr[i], table.size[i], &v)
            if tot < 0:
                st[i] = 1
                continue
            if tot != h[i] * w[i]:
                st[i] = 2
                continue
            ar[i] = _area(v.data, v.n)
            _bbox(v.data, v.n, h[i], bb)
            bx[i, 0] = bb[0]
            bx[i, 1] = bb[2]
            bx[i, 2] = bb[1] - bb[0]
            bx[i, 3] = bb[3] - bb[2]
        free(v.data)
    return status, area, box


def area_bbox(StringTable table, const int64_t[:] h):
    """Areas (int64) and pycocotools-style boxes [x, y, w, h] (float64)."""
    cdef Py_ssize_t i, n = table.n
    area = np.zeros(n, np.int64)
    box = np.zeros((n, 4), np.float64)
    cdef int64_t[:] ar = area
    cdef double[:, :] bx = box
    cdef I64Vec v
    cdef int64_t bb[4]
    v.data = NULL; v.n = 0; v.cap = 0
    with nogil:
        for i in range(n):
            v.n = 0
            _decode(table.ptr[i], table.size[i], &v)
            ar[i] = _area(v.data, v.n)
            _bbox(v.data, v.n, h[i], bb)
            bx[i, 0] = bb[0]
            bx[i, 1] = bb[2]
            bx[i, 2] = bb[1] - bb[0]
            bx[i, 3] = bb[3] - bb[2]
        free(v.data)
    return area, box




def _decode_table(StringTable table, bint reference=False, bint runs=True, bint keep=True):
    """Decode every string of ``table`` (private: tests and benchmarks).

    Parameters
    ----------
    table : StringTable
        The strings.
    reference : bool
        Use the previous decoder (``_decode_ref_impl``) instead of the
        kernels' one.
    runs : bool
        Decode into intervals (``_decode``); otherwise only the totals
        (``_rle_total``).
    keep : bool
        Keep every string's intervals; otherwise each string is decoded
        into the same buffer, as the IoU step does, and none are returned
        (for timing).

    Returns
    -------
    totals : numpy.ndarray
        int64, per string: the pixels its counts cover, -1 if malformed.
    offsets : numpy.ndarray
        int64, ``len(table) + 1``: string ``i``'s intervals are
        ``intervals[offsets[i]:offsets[i + 1]]`` (none for a malformed one:
        the kernels' decoder leaves the buffer as it was).
    intervals : numpy.ndarray
        int64 start, end pairs, flat.
    """
    cdef Py_ssize_t i, n = table.n
    cdef I64Vec v
    cdef int64_t tot
    totals = np.zeros(n, np.int64)
    offsets = np.zeros(n + 1, np.int64)
    cdef int64_t[:] tt = totals
    cdef int64_t[:] of = offsets
    v.data = NULL; v.n = 0; v.cap = 0
    with nogil:
        for i in range(n):
            if not keep:
                v.n = 0
            of[i] = v.n
            if not runs:
                tot = _decode_ref_impl(table.ptr[i], table.size[i], NULL, 0) if reference \
                    else _rle_total(table.ptr[i], table.size[i])
            elif reference:
                tot = _decode_ref_impl(table.ptr[i], table.size[i], &v, 1)
                if tot < 0:
                    v.n = of[i]     # (the previous decoder left what it had appended)
            else:
                tot = _decode(table.ptr[i], table.size[i], &v)
            tt[i] = tot
        of[n] = v.n
        if not keep:
            v.n = 0
    intervals = np.empty(v.n, np.int64)
    cdef int64_t[:] iv = intervals
    if v.n > 0:
        memcpy(&iv[0], v.data, v.n * sizeof(int64_t))
    free(v.data)
    return totals, offsets, intervals


def _window_masks(const unsigned char[::1] chars):
    """The window pass on 64 characters (private: tests): ``(sse2, mask,
    bad, swar_mask, swar_bad)``, the kernels' pass (SSE2 where the build has
    it, else the SWAR one) and the SWAR one, ``bad`` true if a character is
    outside '0'..'o'."""
    cdef uint64_t b1 = 0, b2 = 0, m1, m2
    if chars.shape[0] != 64:
        raise ValueError("a window is 64 characters")
    m1 = ba_rle_ends64(&chars[0], &b1)
    m2 = ba_rle_ends64_swar(&chars[0], &b2)
    return bool(BA_RLE_SSE2), int(m1), b1 != 0, int(m2), b2 != 0
