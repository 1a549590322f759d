# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""PNG decoding for the panoptic and Cityscapes readers.

Private module (``boundary_api.masks._png``): a Deflate inflater, the PNG
container and the row filters, and :func:`pan_png_ids` (a whole PNG file into
one word per pixel) and :func:`pan_png_runs` (a whole PNG file into its runs).
``_png.pxd`` declares what the protocol kernels cimport.

The module is longer than 800 lines because the inflater, the row filters and
the two row decoders share inline helpers in their inner loops: split into
modules, those would become calls across modules.
"""

# PNG decoding for the panoptic and Cityscapes readers: a
# Deflate inflater (RFC 1950/1951), the PNG container (chunks, CRCs) and the row
# filters, the last ones also straight into the segment ids of colour images.
#
# Segmentation PNGs are made of large flat regions: once filtered, rows are
# almost all zero bytes, and the zlib stream is mostly long copies.  The work is
# therefore in the row filters, done here a pixel at a time on packed words
# (a pixel's bytes, first byte lowest), with shortcuts where the filtered pixel
# is zero or the neighbours agree.

from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int8_t, int16_t, int32_t, int64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset, memcpy

from boundary_api.masks._rle cimport I64Vec, _i64_reserve

import numpy as np


# --------------------------------------------------------------------------
# Inflater
#
# A mask PNG of 1024 x 2048 inflates to 2 MB that are almost all zeros, which
# zlib writes one byte at a time (a run of zeros is a string of length-258
# copies at distance 1).  This inflater (RFC 1951, canonical Huffman codes
# decoded bit by bit: masks compress to a few thousand symbols) fills such runs
# with memset, and not at all into the zeroed output when the byte is 0.
# --------------------------------------------------------------------------

cdef struct _Bits:
    const uint8_t* src
    Py_ssize_t n
    Py_ssize_t pos
    uint64_t buf
    int cnt

DEF _FAST = 11  # codes up to this length are decoded with one table lookup

cdef struct _Huff:
    int16_t count[16]
    int16_t symbol[320]
    uint16_t fast[1 << _FAST]  # (symbol << 4) | length by the next _FAST bits, 0: longer code

# an inflation that can pause (see _inflate_run)
cdef struct _Inflater:
    _Bits b
    _Huff lit
    _Huff dist
    Py_ssize_t o      # bytes out
    int final         # the current block is the last
    int in_block      # inside a Huffman block (lit, dist set)
    int done          # the last block has ended

cdef int16_t _LEN_BASE[29]
cdef int8_t _LEN_EXTRA[29]
cdef int32_t _DIST_BASE[30]
cdef int8_t _DIST_EXTRA[30]
cdef int8_t _CL_ORDER[19]


def _init_inflate_tables():
    cdef int i, base = 3, extra
    for i in range(28):
        extra = 0 if i < 8 else (i - 4) // 4
        _LEN_BASE[i] = base
        _LEN_EXTRA[i] = extra
        base += 1 << extra
    _LEN_BASE[28] = 258
    _LEN_EXTRA[28] = 0
    base = 1
    for i in range(30):
        extra = 0 if i < 4 else (i - 2) // 2
        _DIST_BASE[i] = base
        _DIST_EXTRA[i] = extra
        base += 1 << extra
    for i, v in enumerate((16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15)):
        _CL_ORDER[i] = v


_init_inflate_tables()


cdef inline int _bits(_Bits* b, int k, int* out) noexcept nogil:
    """The next ``k`` (<= 16) bits, least significant first; -1 past the end."""
    while b.cnt < k:
        if b.pos >= b.n:
            return -1
        b.buf |= (<uint64_t> b.src[b.pos]) << b.cnt
        b.pos += 1
        b.cnt += 8
    out[0] = <int> (b.buf & ((1ULL << k) - 1))
    b.buf >>= k
    b.cnt -= k
    return 0


cdef int _huff_build(_Huff* h, const uint8_t* lengths, int n) noexcept nogil:
    """Canonical code from code lengths; -1 if over-subscribed."""
    cdef int i, j, left = 1, length, code, rev, idx
    cdef int16_t offs[16]
    for i in range(16):
        h.count[i] = 0
    for i in range(n):
        h.count[lengths[i]] += 1
    for i in range(1, 16):
        left = (left << 1) - h.count[i]
        if left < 0:
            return -1
    offs[1] = 0
    for i in range(1, 15):
        offs[i + 1] = offs[i] + h.count[i]
    for i in range(n):
        if lengths[i] != 0:
            h.symbol[offs[lengths[i]]] = i
            offs[lengths[i]] += 1
    # lookup table of the short codes; Deflate sends codes most significant bit
    # first into a least-significant-first bit stream, hence the reversal
    memset(h.fast, 0, sizeof(h.fast))
    code = 0
    idx = 0
    for length in range(1, _FAST + 1):
        for i in range(h.count[length]):
            rev = 0
            for j in range(length):
                rev |= ((code >> j) & 1) << (length - 1 - j)
            j = rev
            while j < (1 << _FAST):
                h.fast[j] = <uint16_t> ((h.symbol[idx] << 4) | length)
                j += 1 << length
            code += 1
            idx += 1
        code <<= 1
    return 0


cdef inline int _huff_decode(_Bits* b, const _Huff* h) noexcept nogil:
    """One symbol; -1 on a bad code or the end of the data."""
    cdef int code = 0, first = 0, index = 0, length, count
    cdef uint16_t e
    cdef uint64_t w
    if b.cnt < _FAST:
        if b.pos + 8 <= b.n:
            # whole bytes up to 56 bits at once
            memcpy(&w, b.src + b.pos, 8)
            b.buf |= w << b.cnt
            b.pos += (63 - b.cnt) >> 3
            b.cnt |= 56
            b.buf &= (1ULL << b.cnt) - 1   # (the bits above stay zero, as everywhere)
        else:
            while b.cnt < _FAST and b.pos < b.n:
                b.buf |= (<uint64_t> b.src[b.pos]) << b.cnt
                b.pos += 1
                b.cnt += 8
    if b.cnt >= _FAST:
        e = h.fast[b.buf & ((1 << _FAST) - 1)]
        if e != 0:
            b.buf >>= e & 15
            b.cnt -= e & 15
            return e >> 4
    for length in range(1, 16):
        if b.cnt == 0:
            if b.pos >= b.n:
                return -1
            b.buf = b.src[b.pos]
            b.pos += 1
            b.cnt = 8
        code |= <int> (b.buf & 1)
        b.buf >>= 1
        b.cnt -= 1
        count = h.count[length]
        if code - first < count:
            return h.symbol[index + code - first]
        index += count
        first = (first + count) << 1
        code <<= 1
    return -1


cdef int _inflate_block(_Bits* bits, const _Huff* lit, const _Huff* dist, uint8_t* out, Py_ssize_t cap,
                        Py_ssize_t* o, Py_ssize_t limit) noexcept nogil:
    """Symbols of a Huffman block into ``out`` from ``o[0]`` on: 0 at the end
    of the block, 1 paused once ``limit`` bytes are out (to resume with the
    same arguments), -1 on bad data."""
    # the bit reader in a local copy, which the compiler keeps in registers
    # (the output bytes could otherwise alias it), written back at the end
    cdef _Bits lb = bits[0]
    cdef _Bits* b = &lb
    cdef int sym, e, ds
    cdef Py_ssize_t length, d, p = o[0], i, e2
    cdef uint8_t v
    while True:
        if p >= limit:
            o[0] = p
            bits[0] = lb
            return 1
        sym = _huff_decode(b, lit)
        if sym < 0:
            return -1
        if sym < 256:
            if p >= cap:
                return -1
            out[p] = <uint8_t> sym
            p += 1
        elif sym == 256:
            o[0] = p
            bits[0] = lb
            return 0
        else:
            sym -= 257
            if sym >= 29 or _bits(b, _LEN_EXTRA[sym], &e) != 0:
                return -1
            length = _LEN_BASE[sym] + e
            ds = _huff_decode(b, dist)
            if ds < 0 or ds >= 30 or _bits(b, _DIST_EXTRA[ds], &e) != 0:
                return -1
            d = _DIST_BASE[ds] + e
            if d > p or p + length > cap:
                return -1
            if d == 1:
                v = out[p - 1]
                if v != 0:  # the output starts zeroed
                    memset(out + p, v, length)
            elif d >= length:
                memcpy(out + p, out + p - d, length)
            else:  # a period-d pattern: copy it in doubling non-overlapping pieces
                i = 0
                while i < length:
                    e2 = i + d
                    if e2 > length - i:
                        e2 = length - i
                    memcpy(out + p + i, out + p - d, e2)
                    i += e2
            p += length


cdef inline uint32_t _be32(const uint8_t* p) noexcept nogil:
    return ((<uint32_t> p[0]) << 24) | ((<uint32_t> p[1]) << 16) | ((<uint32_t> p[2]) << 8) | p[3]


cdef inline bint _zero(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """Whether the ``n`` (a multiple of 8, at most 32) bytes at ``p`` are all zero."""
    cdef uint64_t w[4]
    memcpy(w, p, n)
    if n == 8:
        return w[0] == 0
    if n == 16:
        return (w[0] | w[1]) == 0
    if n == 24:
        return (w[0] | w[1] | w[2]) == 0
    return (w[0] | w[1] | w[2] | w[3]) == 0


cdef uint32_t _adler32(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    """Adler-32 of ``p[:n]``, a word at a time where the bytes are zero (a
    zero byte leaves the first sum as it is and adds it to the second)."""
    cdef uint64_t a = 1, b = 0, a_next
    cdef uint32_t s1, s2
    cdef Py_ssize_t i = 0, block
    cdef int k
    while i < n:
        # sums stay far below 2**64 over a block of 4096 words
        block = i + 8 * 4096
        if block > n:
            block = n
        while i + 32 <= block:
            if not _zero(p + i, 32):
                # 32 steps of (a += x; b += a) at once: b gains 32 a plus each
                # byte weighted by the steps left, a the plain sum
                s1 = s2 = 0
                for k in range(32):
                    s1 += p[i + k]
                    s2 += (32 - k) * p[i + k]
                b += s2
                a_next = a + s1
            else:
                a_next = a
            b += 32 * a
            a = a_next
            i += 32
        while i < block:
            a += p[i]
            b += a
            i += 1
        a %= 65521
        b %= 65521
    return <uint32_t> ((b << 16) | a)


cdef int _inflate(const uint8_t* src, Py_ssize_t n, uint8_t* out, Py_ssize_t cap) noexcept nogil:
    """zlib stream -> ``out`` (zeroed, exactly ``cap`` bytes expected, checked
    against the stream's Adler-32); 0 or -1."""
    cdef uint32_t adler
    if _inflate_unchecked(src, n, out, cap, &adler) != 0:
        return -1
    if adler != _adler32(out, cap):
        return -1
    return 0


cdef int _inflate_unchecked(const uint8_t* src, Py_ssize_t n, uint8_t* out, Py_ssize_t cap,
                            uint32_t* adler) noexcept nogil:
    """:func:`_inflate` without the checksum test: the stream's Adler-32 goes
    to ``adler``, for the caller to compare with the output's."""
    cdef _Inflater st
    if _inflate_start(&st, src, n) != 0 or _inflate_run(&st, out, cap, cap + 1) != 0:
        return -1
    return _inflate_finish(&st, cap, adler)


cdef int _inflate_start(_Inflater* st, const uint8_t* src, Py_ssize_t n) noexcept nogil:
    """A zlib stream's inflation set up in ``st``; 0, or -1 for a bad header."""
    if n < 2 or (src[0] & 15) != 8 or (src[1] & 32) or ((<int> src[0]) * 256 + src[1]) % 31:
        return -1
    st.b.src = src + 2
    st.b.n = n - 2
    st.b.pos = 0
    st.b.buf = 0
    st.b.cnt = 0
    st.o = 0
    st.final = 0
    st.in_block = 0
    st.done = 0
    return 0


cdef int _inflate_run(_Inflater* st, uint8_t* out, Py_ssize_t cap, Py_ssize_t limit) noexcept nogil:
    """Inflate on until ``limit`` bytes are out (``st.o >= limit``, possibly
    more) or the last block has ended (``st.done``); 0, or -1 on bad data.
    Bytes below ``st.o`` are final.  ``limit`` past ``cap``: to the end."""
    cdef _Bits* b = &st.b
    cdef _Huff cl
    cdef uint8_t lengths[320]
    cdef int kind, i, hlit, hdist, hclen, sym, rep, val, r
    cdef Py_ssize_t ln
    while not st.done and st.o < limit:
        if st.in_block:
            r = _inflate_block(b, &st.lit, &st.dist, out, cap, &st.o, limit)
            if r < 0:
                return -1
            if r == 0:
                st.in_block = 0
                if st.final:
                    st.done = 1
            continue
        if _bits(b, 1, &st.final) != 0 or _bits(b, 2, &kind) != 0:
            return -1
        if kind == 0:
            b.pos -= b.cnt >> 3  # whole bytes read ahead go back; the partial one is dropped
            b.buf = 0
            b.cnt = 0
            if b.pos + 4 > b.n:
                return -1
            ln = b.src[b.pos] | (b.src[b.pos + 1] << 8)
            if (ln ^ (b.src[b.pos + 2] | (b.src[b.pos + 3] << 8))) != 0xFFFF:
                return -1
            b.pos += 4
            if b.pos + ln > b.n or st.o + ln > cap:
                return -1
            memcpy(out + st.o, b.src + b.pos, ln)
            b.pos += ln
            st.o += ln
            if st.final:
                st.done = 1
        elif kind == 1:
            for i in range(288):
                lengths[i] = 8 if i < 144 else (9 if i < 256 else (7 if i < 280 else 8))
            _huff_build(&st.lit, lengths, 288)
            for i in range(30):
                lengths[i] = 5
            _huff_build(&st.dist, lengths, 30)
            st.in_block = 1
        elif kind == 2:
            if _bits(b, 5, &hlit) != 0 or _bits(b, 5, &hdist) != 0 or _bits(b, 4, &hclen) != 0:
                return -1
            hlit += 257
            hdist += 1
            hclen += 4
            if hlit > 286 or hdist > 30:
                return -1
            for i in range(19):
                lengths[i] = 0
            for i in range(hclen):
                if _bits(b, 3, &val) != 0:
                    return -1
                lengths[_CL_ORDER[i]] = <uint8_t> val
            if _huff_build(&cl, lengths, 19) != 0:
                return -1
            i = 0
            while i < hlit + hdist:
                sym = _huff_decode(b, &cl)
                if sym < 0:
                    return -1
                if sym < 16:
                    lengths[i] = <uint8_t> sym
                    i += 1
                    continue
                if sym == 16:
                    if i == 0 or _bits(b, 2, &rep) != 0:
                        return -1
                    val = lengths[i - 1]
                    rep += 3
                elif sym == 17:
                    if _bits(b, 3, &rep) != 0:
                        return -1
                    val = 0
                    rep += 3
                else:
                    if _bits(b, 7, &rep) != 0:
                        return -1
                    val = 0
                    rep += 11
                if i + rep > hlit + hdist:
                    return -1
                while rep > 0:
                    lengths[i] = <uint8_t> val
                    i += 1
                    rep -= 1
            if lengths[256] == 0:
                return -1
            if _huff_build(&st.lit, lengths, hlit) != 0 or _huff_build(&st.dist, lengths + hlit, hdist) != 0:
                return -1
            st.in_block = 1
        else:
            return -1
    return 0


cdef int _inflate_finish(_Inflater* st, Py_ssize_t cap, uint32_t* adler) noexcept nogil:
    """After the last block: 0 with the stream's Adler-32 in ``adler`` if
    exactly ``cap`` bytes came out, else -1."""
    cdef Py_ssize_t ln
    if not st.done or st.o != cap:
        return -1
    # the checksum: the 4 bytes after the last block, from its next whole byte
    ln = st.b.pos - (st.b.cnt >> 3)
    if ln + 4 > st.b.n:
        return -1
    adler[0] = _be32(st.b.src + ln)
    return 0


# --------------------------------------------------------------------------
# Container: chunks and their CRCs
# --------------------------------------------------------------------------

# _CRC_TABLE[0]: the byte-wise table; _CRC_TABLE[k]: the same byte k positions
# further back, for eight bytes per step ("slicing by 8")
cdef uint32_t _CRC_TABLE[8][256]


def _init_crc_table():
    cdef uint32_t c
    cdef int n, k
    for n in range(256):
        c = <uint32_t> n
        for k in range(8):
            c = (0xEDB88320U ^ (c >> 1)) if (c & 1) else (c >> 1)
        _CRC_TABLE[0][n] = c
    for k in range(1, 8):
        for n in range(256):
            c = _CRC_TABLE[k - 1][n]
            _CRC_TABLE[k][n] = (c >> 8) ^ _CRC_TABLE[0][c & 255]


_init_crc_table()


cdef inline uint32_t _le32(const uint8_t* p) noexcept nogil:
    return p[0] | ((<uint32_t> p[1]) << 8) | ((<uint32_t> p[2]) << 16) | ((<uint32_t> p[3]) << 24)


cdef inline uint32_t _crc32(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    cdef uint32_t c = 0xFFFFFFFFU, c2
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        c ^= _le32(p + i)
        c2 = _le32(p + i + 4)
        c = (_CRC_TABLE[7][c & 255] ^ _CRC_TABLE[6][(c >> 8) & 255] ^ _CRC_TABLE[5][(c >> 16) & 255]
             ^ _CRC_TABLE[4][c >> 24] ^ _CRC_TABLE[3][c2 & 255] ^ _CRC_TABLE[2][(c2 >> 8) & 255]
             ^ _CRC_TABLE[1][(c2 >> 16) & 255] ^ _CRC_TABLE[0][c2 >> 24])
        i += 8
    while i < n:
        c = _CRC_TABLE[0][(c ^ p[i]) & 255] ^ (c >> 8)
        i += 1
    return c ^ 0xFFFFFFFFU


# chunk types as big-endian words
cdef enum:
    _CT_IHDR = 0x49484452
    _CT_IDAT = 0x49444154
    _CT_IEND = 0x49454E44
    _CT_PLTE = 0x504C5445
    _CT_TRNS = 0x74524E53
    _CT_GAMA = 0x67414D41
    _CT_CHRM = 0x6348524D
    _CT_SRGB = 0x73524742
    _CT_PHYS = 0x70485973
    _CT_TEXT = 0x74455874
    _CT_ZTXT = 0x7A545874
    _CT_ITXT = 0x69545874
    _CT_EXIF = 0x65584966
    _CT_ICCP = 0x69434350
    _CT_ACTL = 0x6163544C
    _CT_FCTL = 0x6663544C
    _CT_FDAT = 0x66644154

# tEXt bytes accepted natively (Pillow refuses more than 64 MB of text)
DEF _MAX_TEXT = 1 << 20

cdef inline bint _chunk_name(const uint8_t* t) noexcept nogil:
    """Whether the 4 bytes are ASCII letters, as chunk types are."""
    cdef int k
    for k in range(4):
        if not ((t[k] >= 65 and t[k] <= 90) or (t[k] >= 97 and t[k] <= 122)):
            return False
    return True


cdef int _walk_chunks(const uint8_t* s, Py_ssize_t n, int trns_min, Py_ssize_t* idat, Py_ssize_t* chunks,
                      Py_ssize_t* zlen) noexcept nogil:
    """Walk the chunks of a PNG file after its IHDR (checked by the caller)
    up to IEND, as far as Pillow would read them the same way.

    0 with the offset of the first IDAT chunk, the number of IDAT chunks and
    their bytes of data; -1 for a file Pillow reads differently, or may
    refuse, or that is malformed: no IEND, a chunk running past the end, a
    wrong CRC anywhere, IDAT chunks not consecutive, a chunk type not of
    letters, an unknown critical chunk (Pillow ignores those; libpng
    refuses them), a PLTE of more than 256 colours or after the image data, a
    tRNS shorter than ``trns_min`` bytes (Pillow's minimum for the image's
    mode: 2 for grey, 6 for RGB, 0 where it reads none), a gAMA, cHRM, sRGB
    or pHYs shorter than Pillow requires, more than _MAX_TEXT bytes of tEXt,
    and the chunks Pillow interprets in ways that may fail or change the
    image: zTXt, iTXt, iCCP and the APNG chunks.
    """
    cdef Py_ssize_t pos = 33, length, text = 0
    cdef const uint8_t* t
    cdef uint32_t ct
    cdef int run = 0   # 0 before the IDAT chunks, 1 in them, 2 after
    idat[0] = 0
    chunks[0] = 0
    zlen[0] = 0
    while True:
        if pos + 12 > n:          # no IEND
            return -1
        length = _be32(s + pos)
        if length > 0x7FFFFFFF or length > n - pos - 12:
            return -1
        t = s + pos + 4
        if not _chunk_name(t) or _crc32(t, length + 4) != _be32(t + 4 + length):
            return -1
        ct = _be32(t)
        if ct == _CT_IDAT:
            if run == 2:          # IDAT chunks must be consecutive
                return -1
            if run == 0:
                idat[0] = pos
            run = 1
            chunks[0] += 1
            zlen[0] += length
        else:
            if run == 1:
                run = 2
            if ct == _CT_IEND:
                break
            # what Pillow requires of the chunks it interprets (before the
            # image data, and after it, where Pillow reads them after decoding)
            if ct == _CT_PLTE:
                if run != 0 or length > 768:
                    return -1
            elif ct == _CT_TRNS:
                if length < trns_min:
                    return -1
            elif ct == _CT_GAMA:
                if length < 4:
                    return -1
            elif ct == _CT_CHRM:
                if length < 32:
                    return -1
            elif ct == _CT_SRGB:
                if length < 1:
                    return -1
            elif ct == _CT_PHYS:
                if length < 9:
                    return -1
            elif ct == _CT_TEXT:
                text += length
                if text > _MAX_TEXT:
                    return -1
            elif ct == _CT_EXIF:
                pass
            elif ct == _CT_ZTXT or ct == _CT_ITXT or ct == _CT_ICCP or ct == _CT_ACTL or ct == _CT_FCTL \
                    or ct == _CT_FDAT:
                return -1
            elif not (t[0] & 32):     # another critical chunk (IHDR again, ...)
                return -1
        pos += 12 + length
    return 0 if chunks[0] > 0 else -1


cdef struct _PngInfo:
    Py_ssize_t width
    Py_ssize_t height
    int depth
    int color
    const uint8_t* zdata   # the IDAT data: into the file when one chunk holds it, else ``zbuf``
    Py_ssize_t zlen
    uint8_t* zbuf          # malloc'ed concatenation of several IDAT chunks (or NULL)


# the kinds of image decoded natively, by (colour type, depth)
DEF _PNG_GRAY8 = 1
DEF _PNG_GRAY16 = 2
DEF _PNG_RGB8 = 3
DEF _PNG_RGBA8 = 4


cdef int _png_parse(const uint8_t* s, Py_ssize_t n, _PngInfo* info) noexcept nogil:
    """Walk the chunks of a PNG file.

    Returns the image kind (``_PNG_*``) with ``info`` filled, 0 when the file
    is not one this decoder takes (interlaced, palette, grey with alpha,
    16-bit colour, 1/2/4-bit grey, a chunk :func:`_walk_chunks` refuses, a
    bad CRC or any malformation: the caller reads such files another way;
    a tRNS chunk is no reason, Pillow's values do not depend on it), or -1 when
    out of memory.  On success with several IDAT chunks ``info.zbuf`` must be
    freed by the caller.
    """
    cdef Py_ssize_t pos = 8, length, total = 0, chunks = 0, k, first = 0
    cdef const uint8_t* t
    cdef int kind = 0
    info.zbuf = NULL
    info.zdata = NULL
    info.zlen = 0
    if n < 8 + 25 or s[0] != 0x89 or s[1] != 0x50 or s[2] != 0x4E or s[3] != 0x47 \
            or s[4] != 0x0D or s[5] != 0x0A or s[6] != 0x1A or s[7] != 0x0A:
        return 0
    # IHDR, first and 13 bytes long
    if _be32(s + 8) != 13 or s[12] != 0x49 or s[13] != 0x48 or s[14] != 0x44 or s[15] != 0x52:
        return 0
    if _crc32(s + 12, 17) != _be32(s + 29):
        return 0
    info.width = _be32(s + 16)
    info.height = _be32(s + 20)
    info.depth = s[24]
    info.color = s[25]
    if info.width < 1 or info.height < 1 or info.width > 0x7FFFFFFF or info.height > 0x7FFFFFFF:
        return 0
    if s[26] != 0 or s[27] != 0 or s[28] != 0:   # compression, filter method, interlace
        return 0
    if info.color == 0 and info.depth == 8:
        kind = _PNG_GRAY8
    elif info.color == 0 and info.depth == 16:
        kind = _PNG_GRAY16
    elif info.color == 2 and info.depth == 8:
        kind = _PNG_RGB8
    elif info.color == 6 and info.depth == 8:
        kind = _PNG_RGBA8
    else:
        return 0
    if info.width * info.height > (<Py_ssize_t> 1 << 40):
        return 0
    # the chunks as Pillow reads them (tRNS: 6 bytes at least for RGB, 2 for grey)
    if _walk_chunks(s, n, 6 if kind == _PNG_RGB8 else (0 if kind == _PNG_RGBA8 else 2), &first, &chunks,
                    &total) != 0:
        return 0
    # Deflate expands at most 1032 times (a 258-byte copy in two 1-bit codes):
    # a header promising more than the data can hold is refused before any
    # memory is set aside for it
    if info.height * (info.width * (4 if kind == _PNG_RGBA8 else (3 if kind == _PNG_RGB8 else
                                    (2 if kind == _PNG_GRAY16 else 1))) + 1) > 1032 * total:
        return 0
    # second walk: point at (or gather) the IDAT data
    pos = first
    k = 0
    if chunks > 1:
        info.zbuf = <uint8_t*> malloc(total)
        if info.zbuf == NULL:
            return -1
    while k < chunks:
        length = _be32(s + pos)
        t = s + pos + 4
        if t[0] == 0x49 and t[1] == 0x44 and t[2] == 0x41 and t[3] == 0x54:
            if chunks == 1:
                info.zdata = t + 4
            else:
                memcpy(info.zbuf + info.zlen, t + 4, length)
            info.zlen += length
            k += 1
        pos += 12 + length
    if chunks > 1:
        info.zdata = info.zbuf
    return kind


# --------------------------------------------------------------------------
# Row filters on packed pixels
#
# A pixel of ``bpp`` (1 to 4) bytes is held as a uint32 whose byte k is its
# k-th byte.  PNG's filters add bytes modulo 256, channel by channel, which
# on words is a carry-free add; the Average filter's floor((a + b) / 2) per
# byte is carry-free too.  Paeth goes byte by byte, except where the three
# neighbours are equal (inside a flat region), where it predicts the left one.
# --------------------------------------------------------------------------

cdef inline uint32_t _add_bytes(uint32_t a, uint32_t b) noexcept nogil:
    return ((a & 0x7F7F7F7F) + (b & 0x7F7F7F7F)) ^ ((a ^ b) & 0x80808080U)


cdef inline uint32_t _avg_bytes(uint32_t a, uint32_t b) noexcept nogil:
    return (a & b) + (((a ^ b) & 0xFEFEFEFEU) >> 1)


cdef inline uint32_t _paeth_bytes(uint32_t a, uint32_t b, uint32_t c, int bpp) noexcept nogil:
    cdef uint32_t out = 0
    cdef int k, x, y, z, p, pa, pb, pc, pred
    for k in range(bpp):
        x = (a >> (8 * k)) & 255
        y = (b >> (8 * k)) & 255
        z = (c >> (8 * k)) & 255
        p = x + y - z
        pa = p - x if p >= x else x - p
        pb = p - y if p >= y else y - p
        pc = p - z if p >= z else z - p
        if pa <= pb and pa <= pc:
            pred = x
        elif pb <= pc:
            pred = y
        else:
            pred = z
        out |= (<uint32_t> pred) << (8 * k)
    return out


cdef inline uint32_t _pixel(const uint8_t* p, uint32_t mask) noexcept nogil:
    """The pixel at ``p`` (reads 4 bytes: the buffer has slack), masked to ``bpp`` bytes."""
    return (p[0] | ((<uint32_t> p[1]) << 8) | ((<uint32_t> p[2]) << 16) | ((<uint32_t> p[3]) << 24)) & mask


cdef int _unfilter_words(int f, const uint8_t* line, const uint32_t* prev, uint32_t* cur,
                         Py_ssize_t W, int bpp) noexcept nogil:
    """One row of packed pixels from its filtered bytes; ``prev``: the row above
    (zeros above the first row).  0, or -1 for an unknown filter type."""
    cdef uint32_t mask = 0xFFFFFFFFU if bpp == 4 else (((<uint32_t> 1) << (8 * bpp)) - 1)
    cdef uint32_t v, left = 0, up, upleft = 0
    cdef Py_ssize_t x
    if f == 0:
        for x in range(W):
            cur[x] = _pixel(line + bpp * x, mask)
    elif f == 1:
        x = 0
        while x < W:
            # four pixels at once inside flat stretches (zero filtered bytes);
            # the test may read into the next row or the slack, which only
            # makes it stricter
            if x + 4 <= W and _zero(line + bpp * x, 16):
                cur[x] = cur[x + 1] = cur[x + 2] = cur[x + 3] = left
                x += 4
                continue
            v = _pixel(line + bpp * x, mask)
            if v != 0:
                left = _add_bytes(v, left)
            cur[x] = left
            x += 1
    elif f == 2:
        x = 0
        while x < W:
            if x + 4 <= W and _zero(line + bpp * x, 16):
                memcpy(cur + x, prev + x, 16)
                x += 4
                continue
            v = _pixel(line + bpp * x, mask)
            cur[x] = _add_bytes(v, prev[x]) if v != 0 else prev[x]
            x += 1
    elif f == 3:
        for x in range(W):
            v = _pixel(line + bpp * x, mask)
            left = _add_bytes(v, _avg_bytes(left, prev[x]))
            cur[x] = left
    elif f == 4:
        for x in range(W):
            v = _pixel(line + bpp * x, mask)
            up = prev[x]
            if left == up and up == upleft:
                left = _add_bytes(v, left)
            else:
                left = _add_bytes(v, _paeth_bytes(left, up, upleft, bpp))
            upleft = up
            cur[x] = left
    else:
        return -1
    return 0


cdef inline Py_ssize_t _png_scratch_size(const _PngInfo* info, int kind) noexcept nogil:
    """Bytes of scratch :func:`_png_decode_words` needs."""
    cdef int bpp = 1 if kind == _PNG_GRAY8 else (2 if kind == _PNG_GRAY16 else (3 if kind == _PNG_RGB8 else 4))
    # the inflated rows (+ 16: the row filters read up to 16 bytes from a pixel),
    # then a zero row and two rows of words, aligned
    return ((info.height * (info.width * bpp + 1) + 16 + 15) // 16) * 16 + 3 * 4 * info.width


cdef int _png_decode_words(const _PngInfo* info, int kind, uint32_t* out, uint8_t* scratch) noexcept nogil:
    """Inflate and unfilter the image into ``out`` (H x W), one value per pixel:
    the pixel word for grey 8 and RGB, RGB without alpha for RGBA, the 16-bit
    sample for grey 16.  ``scratch``: :func:`_png_scratch_size` bytes, any
    content.  0 ok, 1 not decodable (bad data)."""
    cdef Py_ssize_t H = info.height, W = info.width, y, x
    cdef int bpp = 1 if kind == _PNG_GRAY8 else (2 if kind == _PNG_GRAY16 else (3 if kind == _PNG_RGB8 else 4))
    cdef Py_ssize_t stride = W * bpp + 1
    cdef uint8_t* raw = scratch
    cdef uint32_t* rows = <uint32_t*> (scratch + ((H * stride + 16 + 15) // 16) * 16)
    cdef uint32_t* cur
    cdef const uint32_t* prev
    cdef const uint8_t* line
    cdef uint32_t v
    cdef int status = 0
    # the inflater leaves runs of zero bytes unwritten
    memset(raw, 0, H * stride + 16)
    memset(rows, 0, W * sizeof(uint32_t))
    if _inflate(info.zdata, info.zlen, raw, H * stride) != 0:
        status = 1
    prev = rows
    y = 0
    while status == 0 and y < H:
        line = raw + y * stride
        cur = out + y * W if bpp == 1 or bpp == 3 else rows + W * (1 + (y & 1))
        if _unfilter_words(line[0], line + 1, prev, cur, W, bpp) != 0:
            status = 1
            break
        if kind == _PNG_GRAY16:
            for x in range(W):
                v = cur[x]
                out[y * W + x] = ((v & 255) << 8) | (v >> 8)
        elif kind == _PNG_RGBA8:
            for x in range(W):
                out[y * W + x] = cur[x] & 0xFFFFFF
        prev = cur
        y += 1
    return status


def pan_png_ids(const uint8_t[::1] png, uint8_t[::1] scratch=None, uint32_t[::1] out=None):
    """Segment ids of a panoptic PNG file, decoded natively, or None.

    Parameters
    ----------
    png : bytes-like
        The whole file.
    scratch : uint8 ndarray, optional
        Working memory reused from call to call (used when large enough,
        else memory is allocated for the call).
    out : uint32 ndarray, optional
        Where to write the ids when it has room for them; the result is then
        a view of it (valid until it is reused).

    Returns
    -------
    (H, W) uint32 ndarray or None
        ``R + 256 G + 65536 B`` of an 8-bit RGB or RGBA image (alpha
        ignored); the sample of an 8- or 16-bit greyscale image.  None for
        any other file: interlaced, palette, grey with alpha, 16-bit colour,
        with a transparency chunk, a wrong CRC or malformed (the caller
        decodes those, or reports them, another way).

    Raises
    ------
    MemoryError
        If the image does not fit in memory.
    """
    cdef _PngInfo info
    cdef int kind, status
    cdef Py_ssize_t n = png.shape[0], need
    cdef uint32_t[::1] o
    cdef uint8_t[::1] w
    if n == 0:
        return None
    with nogil:
        kind = _png_parse(&png[0], n, &info)
    if kind == 0:
        return None
    if kind < 0:
        raise MemoryError()
    try:
        need = _png_scratch_size(&info, kind)
        if scratch is not None and scratch.shape[0] >= need:
            w = scratch
        else:
            w = np.empty(need, np.uint8)
        if out is not None and out.shape[0] >= info.height * info.width:
            ids = np.asarray(out)[:info.height * info.width].reshape(info.height, info.width)
        else:
            ids = np.empty((info.height, info.width), np.uint32)
    except MemoryError:
        free(info.zbuf)
        raise
    o = ids.reshape(-1)
    with nogil:
        status = _png_decode_words(&info, kind, &o[0], &w[0])
        free(info.zbuf)
    if status:
        return None
    return ids


# --------------------------------------------------------------------------
# Straight to runs
#
# Panoptic evaluation needs each image as its runs (maximal stretches of one
# id in row-major order), not as an id map.  In a Sub-filtered row a pixel
# differs from its left neighbour exactly where its filtered bytes are not
# all zero, and an Up-filtered row of zero bytes repeats the row above, so
# these rows go from the inflated bytes to runs by skipping zero words,
# without writing a word per pixel.  Rows of the other filters (and of Up
# with changes) are unfiltered into words, from the row above materialised
# only then, and cut into runs.
# --------------------------------------------------------------------------

cdef extern from *:
    """
    /* offset of the first (lowest-address) non-zero byte of the non-zero word
       w, read from memory with memcpy */
    #if defined(_MSC_VER)
    #include <intrin.h>
    static inline int ba_png_first_byte(unsigned long long w) {
        unsigned long i; _BitScanForward64(&i, w); return (int)(i >> 3);
    }
    #elif defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    static inline int ba_png_first_byte(unsigned long long w) { return __builtin_clzll(w) >> 3; }
    #else
    static inline int ba_png_first_byte(unsigned long long w) { return __builtin_ctzll(w) >> 3; }
    #endif
    """
    int ba_png_first_byte(unsigned long long w) nogil


cdef inline uint64_t _load64(const uint8_t* p) noexcept nogil:
    cdef uint64_t w
    memcpy(&w, p, 8)
    return w


cdef inline bint _row_zero(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t i = 0
    while i + 8 <= n:
        if _load64(p + i) != 0:
            return False
        i += 8
    while i < n:
        if p[i] != 0:
            return False
        i += 1
    return True


cdef inline uint32_t _word_id(uint32_t v, int kind) noexcept nogil:
    if kind == _PNG_GRAY16:
        return ((v & 255) << 8) | ((v >> 8) & 255)
    if kind == _PNG_RGBA8:
        return v & 0xFFFFFF
    return v


cdef inline Py_ssize_t _png_runs_scratch_size(const _PngInfo* info, int kind) noexcept nogil:
    """Bytes of scratch :func:`_png_decode_runs` needs."""
    cdef int bpp = 1 if kind == _PNG_GRAY8 else (2 if kind == _PNG_GRAY16 else (3 if kind == _PNG_RGB8 else 4))
    # the inflated rows (+ 16 slack, aligned), a zero row and two rows of words,
    # two rows of runs (end column and word)
    return ((info.height * (info.width * bpp + 1) + 16 + 15) // 16) * 16 + 3 * 4 * info.width \
        + 2 * 8 * (info.width + 1)


cdef int _png_decode_runs(const _PngInfo* info, int kind, uint8_t* scratch, I64Vec* ends,
                          I64Vec* ids) noexcept nogil:
    """Inflate and unfilter the image into its runs: ``ends`` gets the
    row-major end of each run, ``ids`` its id (as :func:`_png_decode_words`
    maps a pixel to a value); consecutive runs differ in id and the last ends
    at H * W.  ``scratch``: :func:`_png_runs_scratch_size` bytes.  0 ok, 1 not
    decodable (bad data), -1 out of memory."""
    cdef Py_ssize_t H = info.height, W = info.width, y, x, i, r, rb
    cdef int bpp = 1 if kind == _PNG_GRAY8 else (2 if kind == _PNG_GRAY16 else (3 if kind == _PNG_RGB8 else 4))
    cdef uint32_t mask = 0xFFFFFFFFU if bpp == 4 else (((<uint32_t> 1) << (8 * bpp)) - 1)
    cdef Py_ssize_t stride = W * bpp + 1
    cdef uint8_t* raw = scratch
    cdef uint32_t* zero_row = <uint32_t*> (scratch + ((H * stride + 16 + 15) // 16) * 16)
    cdef uint32_t* wrow[2]
    cdef uint32_t* run_x[2]
    cdef uint32_t* run_v[2]
    cdef Py_ssize_t run_n[2]
    cdef int c = 0            # the current row's run buffers: index c; the row above: 1 - c
    cdef int words_ok = 1     # whether wrow[1 - c] holds the row above
    cdef const uint32_t* prev
    cdef uint32_t* cur
    cdef const uint8_t* line
    cdef uint32_t v, left, idv
    cdef int f
    cdef int64_t base, end
    wrow[0] = zero_row + W
    wrow[1] = zero_row + 2 * W
    run_x[0] = <uint32_t*> (zero_row + 3 * W)
    run_v[0] = run_x[0] + (W + 1)
    run_x[1] = run_v[0] + (W + 1)
    run_v[1] = run_x[1] + (W + 1)
    cdef uint32_t adler
    cdef uint64_t w64
    cdef uint64_t sa = 1, sb = 0    # the Adler-32 sums, taken row by row
    cdef Py_ssize_t done            # bytes of the row in the sums
    cdef int k
    # inflated a slice of rows at a time, so that the rows are still in the
    # cache when they are cut into runs; the inflater writes no zero runs, so
    # the memory ahead of it is zeroed slice by slice too
    cdef _Inflater inf
    cdef Py_ssize_t total = H * stride, ready = 0, slice_rows = 32768 // stride + 1, zeroed = 0, target, z0, z1
    memset(zero_row, 0, W * sizeof(uint32_t))
    if _inflate_start(&inf, info.zdata, info.zlen) != 0:
        return 1
    ends.n = 0
    ids.n = 0
    # the row above the first: zeros, one run
    run_x[1][0] = <uint32_t> W
    run_v[1][0] = 0
    run_n[1] = 1
    wrow[1] = zero_row   # (never written: a current row's words go to the other buffers)
    wrow[0] = zero_row + W
    rb = W * bpp
    for y in range(H):
        if y >= ready:
            target = (y + slice_rows) * stride
            if target >= total:
                target = total + 1
            # (zero runs are only skipped by copies starting below the target)
            z0 = zeroed if zeroed > inf.o else inf.o
            z1 = target + 258 + 16
            if z1 > total + 16:
                z1 = total + 16
            if z1 > z0:
                memset(raw + z0, 0, z1 - z0)
                zeroed = z1
            if _inflate_run(&inf, raw, total, target) != 0:
                return 1
            ready = H if inf.done else inf.o // stride
            if ready <= y:
                return 1
        line = raw + y * stride
        f = line[0]
        line += 1
        sa += f
        sb += sa
        if f == 1:
            # the checksum over the zero stretches in one step each: a zero
            # byte adds the first sum to the second
            r = 0
            left = 0
            i = 0
            done = 0
            while True:
                while i + 32 <= rb and (_load64(line + i) | _load64(line + i + 8) | _load64(line + i + 16)
                                        | _load64(line + i + 24)) == 0:
                    i += 32
                while i + 8 <= rb:
                    w64 = _load64(line + i)
                    if w64 != 0:
                        i += ba_png_first_byte(w64)
                        break
                    i += 8
                else:
                    while i < rb and line[i] == 0:
                        i += 1
                if i >= rb:
                    break
                x = (<size_t> i) // 3 if bpp == 3 else ((<size_t> i) >> (bpp >> 1))
                sb += sa * <uint64_t> (bpp * x - done)
                for k in range(bpp):
                    sa += line[bpp * x + k]
                    sb += sa
                done = bpp * (x + 1)
                v = _pixel(line + bpp * x, mask)
                if v != 0:
                    if x > 0:
                        run_x[c][r] = <uint32_t> x
                        run_v[c][r] = left
                        r += 1
                    left = _add_bytes(v, left)
                i = done
            sb += sa * <uint64_t> (rb - done)
            run_x[c][r] = <uint32_t> W
            run_v[c][r] = left
            run_n[c] = r + 1
            words_ok = 0
        elif f == 2 and _row_zero(line, rb):
            # the row above again: its runs (and words) stay where they are
            sb += sa * <uint64_t> rb
            c = 1 - c
        else:
            for i in range(rb):
                sa += line[i]
                sb += sa
            prev = wrow[1 - c]
            if not words_ok:
                # the row above, from its runs, into the buffer of the row
                # above (never the zero row: words_ok is 1 before the first row)
                prev = wrow[1 - c] = zero_row + W * (1 + (1 - c))
                x = 0
                for r in range(run_n[1 - c]):
                    v = run_v[1 - c][r]
                    while x < run_x[1 - c][r]:
                        wrow[1 - c][x] = v
                        x += 1
            cur = wrow[c] = zero_row + W * (1 + c)
            if _unfilter_words(f, line, prev, cur, W, bpp) != 0:
                return 1
            r = 0
            left = cur[0]
            for x in range(1, W):
                if cur[x] != left:
                    run_x[c][r] = <uint32_t> x
                    run_v[c][r] = left
                    r += 1
                    left = cur[x]
            run_x[c][r] = <uint32_t> W
            run_v[c][r] = left
            run_n[c] = r + 1
            words_ok = 1
        sa %= 65521
        sb %= 65521
        # the row's runs onto the image's, merged across the row start
        base = y * W
        for r in range(run_n[c]):
            idv = _word_id(run_v[c][r], kind)
            end = base + run_x[c][r]
            if ids.n > 0 and ids.data[ids.n - 1] == idv:
                ends.data[ends.n - 1] = end
            else:
                if _i64_reserve(ends, ends.n + 1) != 0 or _i64_reserve(ids, ids.n + 1) != 0:
                    return -1
                ends.data[ends.n] = end
                ids.data[ids.n] = idv
                ends.n += 1
                ids.n += 1
        c = 1 - c
    # (the rows may all be out before the stream's last symbols are read)
    if _inflate_run(&inf, raw, total, total + 1) != 0 or _inflate_finish(&inf, total, &adler) != 0 \
            or ((sb << 16) | sa) != adler:
        return 1
    return 0


def pan_png_runs(const uint8_t[::1] png, uint8_t[::1] scratch=None):
    """Runs of a panoptic PNG file, decoded natively, or None.

    Parameters
    ----------
    png : bytes-like
        The whole file.
    scratch : uint8 ndarray, optional
        Working memory reused from call to call (used when large enough,
        else memory is allocated for the call).

    Returns
    -------
    (height, width, ends, ids) or None
        ``ends`` (int64) the row-major end of each run, ``ids`` (uint32) its
        segment id (as :func:`pan_png_ids` reads them); consecutive runs
        have different ids, the first starts at 0 and the last ends at
        ``height * width``.  None for any file :func:`pan_png_ids` does not
        decode.

    Raises
    ------
    MemoryError
        If the image does not fit in memory.
    """
    cdef _PngInfo info
    cdef int kind, status
    cdef Py_ssize_t n = png.shape[0], need, i
    cdef uint8_t[::1] w
    cdef I64Vec ends, idv
    cdef int64_t[::1] eo
    cdef uint32_t[::1] io
    if n == 0:
        return None
    with nogil:
        kind = _png_parse(&png[0], n, &info)
    if kind == 0:
        return None
    if kind < 0:
        raise MemoryError()
    try:
        need = _png_runs_scratch_size(&info, kind)
        if scratch is not None and scratch.shape[0] >= need:
            w = scratch
        else:
            w = np.empty(need, np.uint8)
    except MemoryError:
        free(info.zbuf)
        raise
    ends.data = NULL
    ends.n = ends.cap = 0
    idv.data = NULL
    idv.n = idv.cap = 0
    with nogil:
        status = _png_decode_runs(&info, kind, &w[0], &ends, &idv)
        free(info.zbuf)
    try:
        if status < 0:
            raise MemoryError()
        if status:
            return None
        e = np.empty(ends.n, np.int64)
        d = np.empty(ends.n, np.uint32)
        eo = e
        io = d
        for i in range(ends.n):
            eo[i] = ends.data[i]
            io[i] = <uint32_t> idv.data[i]
        return info.height, info.width, e, d
    finally:
        free(ends.data)
        free(idv.data)


# --------------------------------------------------------------------------
# Label maps: single-channel PNGs (palette indices, grey samples) as the
# values Pillow's ``np.array(Image.open(path))`` gives (declared in _png.pxd)
#
# The decoder takes a file only when Pillow is known to read it the same way:
# non-interlaced palette (1/2/4/8 bits) and greyscale (1/2/4/8/16 bits), every
# chunk's CRC right, the chunks Pillow interprets well-formed as Pillow
# requires them (a grey tRNS of at least 2 bytes, a PLTE of at most 256
# colours, ...), no chunk Pillow reads in a way that could change the pixels
# or fail (APNG frames, compressed text or ICC profiles).  Anything else,
# and any damaged image data, is left to Pillow by the caller, so the values
# are Pillow's either way.
# --------------------------------------------------------------------------

# sub-byte samples a byte at a time: entry [t][b * 8 + k] is sample k of the
# byte b at depth 1 << t (1, 2, 4 bits), as stored (_UNPACK_RAW: palette
# indices, 1-bit grey) and as Pillow's mode "L" gives grey (_UNPACK_GRAY:
# 2-bit samples times 85, 4-bit times 17, 1-bit as 0/1)
cdef uint8_t _UNPACK_RAW[3][256 * 8]
cdef uint8_t _UNPACK_GRAY[3][256 * 8]


def _init_unpack_tables():
    cdef int t, depth, per, b, k, v
    for t in range(3):
        depth = 1 << t
        per = 8 // depth
        for b in range(256):
            for k in range(8):
                v = (b >> (8 - depth * (k + 1))) & ((1 << depth) - 1) if k < per else 0
                _UNPACK_RAW[t][b * 8 + k] = <uint8_t> v
                _UNPACK_GRAY[t][b * 8 + k] = <uint8_t> (v if depth == 1 else v * (255 // ((1 << depth) - 1)))


_init_unpack_tables()


cdef int png_label_info(const uint8_t* s, Py_ssize_t n, PngLabelInfo* info) noexcept nogil:
    cdef Py_ssize_t width, height, rowbytes, chunks = 0, zlen = 0
    cdef int depth, color, kind
    info.kind = 0
    info.file = s
    info.file_size = n
    info.idat = 0
    info.idat_chunks = 0
    info.zlen = 0
    if n < 8 + 25 or s[0] != 0x89 or s[1] != 0x50 or s[2] != 0x4E or s[3] != 0x47 \
            or s[4] != 0x0D or s[5] != 0x0A or s[6] != 0x1A or s[7] != 0x0A:
        return 0
    if _be32(s + 8) != 13 or _be32(s + 12) != _CT_IHDR or _crc32(s + 12, 17) != _be32(s + 29):
        return 0
    width = _be32(s + 16)
    height = _be32(s + 20)
    depth = s[24]
    color = s[25]
    if width < 1 or height < 1 or width > 0x7FFFFFFF or height > 0x7FFFFFFF \
            or width * height > (<Py_ssize_t> 1 << 40):
        return 0
    if s[26] != 0 or s[27] != 0 or s[28] != 0:   # compression, filter method, interlace
        return 0
    if color == 3 and (depth == 1 or depth == 2 or depth == 4 or depth == 8):
        kind = PNG_LABEL_PALETTE
    elif color == 0 and (depth == 1 or depth == 2 or depth == 4 or depth == 8):
        kind = PNG_LABEL_GRAY
    elif color == 0 and depth == 16:
        kind = PNG_LABEL_GRAY16
    else:
        return 0
    if _walk_chunks(s, n, 0 if kind == PNG_LABEL_PALETTE else 2, &info.idat, &chunks, &zlen) != 0:
        return 0
    # Deflate expands at most 1032 times (a 258-byte copy in two 1-bit codes):
    # a header promising more than the data can hold is refused here, before
    # the caller sets memory aside for it
    rowbytes = (width * depth + 7) // 8
    if height * (rowbytes + 1) > 1032 * zlen:
        return 0
    info.height = height
    info.width = width
    info.depth = depth
    info.color_type = color
    info.kind = kind
    info.idat_chunks = chunks
    info.zlen = zlen
    return kind


cdef inline Py_ssize_t _label_raw_offset(const PngLabelInfo* info) noexcept nogil:
    """Where the inflated rows start in the scratch: after the gathered image
    data when it spans several chunks."""
    return 0 if info.idat_chunks == 1 else ((info.zlen + 15) // 16) * 16


cdef Py_ssize_t png_label_scratch_size(const PngLabelInfo* info) noexcept nogil:
    # the inflated rows (+ 16: word reads past a row's end)
    return _label_raw_offset(info) + info.height * ((info.width * info.depth + 7) // 8 + 1) + 16


cdef inline uint64_t _add_bytes64(uint64_t a, uint64_t b) noexcept nogil:
    """Eight byte-wise additions modulo 256 at once."""
    return ((a & 0x7F7F7F7F7F7F7F7FULL) + (b & 0x7F7F7F7F7F7F7F7FULL)) ^ ((a ^ b) & 0x8080808080808080ULL)


cdef int _unfilter_in_place(int f, uint8_t* line, const uint8_t* prev, Py_ssize_t rb, int bpp) noexcept nogil:
    """PNG row reconstruction of ``line`` (``rb`` bytes) where it lies;
    ``prev``: the row above, reconstructed, or NULL for the first row.  0, or
    -1 for an unknown filter type."""
    cdef Py_ssize_t x
    cdef uint64_t w
    cdef int a, b, c, p, pa, pb, pc
    if f == 0:
        return 0
    if f == 4 and prev == NULL:
        f = 1                      # Paeth of (left, 0, 0) is the left byte
    if f == 1:
        if bpp == 1:
            x = 1
            while x < rb:
                # a stretch of zero filtered bytes repeats the byte on its left
                if x + 8 <= rb and _load64(line + x) == 0:
                    memset(line + x, line[x - 1], 8)
                    x += 8
                    continue
                line[x] = <uint8_t> (line[x] + line[x - 1])
                x += 1
        else:
            for x in range(bpp, rb):
                line[x] = <uint8_t> (line[x] + line[x - bpp])
        return 0
    if f == 2:
        if prev == NULL:
            return 0
        x = 0
        while x + 8 <= rb:
            w = _add_bytes64(_load64(line + x), _load64(prev + x))
            memcpy(line + x, &w, 8)
            x += 8
        while x < rb:
            line[x] = <uint8_t> (line[x] + prev[x])
            x += 1
        return 0
    if f == 3:
        for x in range(rb):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x] if prev != NULL else 0
            line[x] = <uint8_t> (line[x] + ((a + b) >> 1))
        return 0
    if f == 4:
        for x in range(rb):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if a == b and b == c:
                line[x] = <uint8_t> (line[x] + a)
                continue
            p = a + b - c
            pa = p - a if p >= a else a - p
            pb = p - b if p >= b else b - p
            pc = p - c if p >= c else c - p
            if pa <= pb and pa <= pc:
                line[x] = <uint8_t> (line[x] + a)
            elif pb <= pc:
                line[x] = <uint8_t> (line[x] + b)
            else:
                line[x] = <uint8_t> (line[x] + c)
        return 0
    return -1


cdef inline const uint8_t* _unpack_table(const PngLabelInfo* info) noexcept nogil:
    """The unpacking table of a sub-byte depth."""
    cdef int t = 0 if info.depth == 1 else (1 if info.depth == 2 else 2)
    if info.kind == PNG_LABEL_GRAY:
        return &_UNPACK_GRAY[t][0]
    return &_UNPACK_RAW[t][0]


cdef inline void _label_row_u8(const PngLabelInfo* info, const uint8_t* line, uint8_t* o) noexcept nogil:
    """The values of one reconstructed row, one byte each (depth <= 8)."""
    cdef Py_ssize_t W = info.width, i, full, rem
    cdef int depth = info.depth, per
    cdef const uint8_t* table
    if depth == 8:
        memcpy(o, line, W)
        return
    table = _unpack_table(info)
    per = 8 // depth
    full = W // per
    rem = W - full * per
    if depth == 1:
        for i in range(full):
            memcpy(o + 8 * i, table + 8 * line[i], 8)
    elif depth == 2:
        for i in range(full):
            memcpy(o + 4 * i, table + 8 * line[i], 4)
    else:
        for i in range(full):
            memcpy(o + 2 * i, table + 8 * line[i], 2)
    if rem:
        memcpy(o + full * per, table + 8 * line[full], rem)


cdef inline void _label_row_u16(const PngLabelInfo* info, const uint8_t* line, uint16_t* o) noexcept nogil:
    """The values of one reconstructed row, two bytes each."""
    cdef Py_ssize_t W = info.width, x, i
    cdef int depth = info.depth, per, k
    cdef const uint8_t* table
    if depth == 16:
        for x in range(W):
            o[x] = <uint16_t> ((line[2 * x] << 8) | line[2 * x + 1])
    elif depth == 8:
        for x in range(W):
            o[x] = line[x]
    else:
        table = _unpack_table(info)
        per = 8 // depth
        x = 0
        i = 0
        while x < W:
            for k in range(per):
                if x + k < W:
                    o[x + k] = table[8 * line[i] + k]
            x += per
            i += 1


cdef int _decode_labels(const PngLabelInfo* info, uint8_t* out8, uint16_t* out16, uint8_t* scratch) noexcept nogil:
    """png_decode_labels (``out16``) or png_decode_labels_u8 (``out8``)."""
    cdef Py_ssize_t H = info.height, W = info.width, y, k, pos, length, got = 0
    cdef Py_ssize_t rb = (W * info.depth + 7) // 8
    cdef Py_ssize_t stride = rb + 1
    cdef int bpp = 2 if info.depth == 16 else 1
    cdef const uint8_t* z
    cdef uint8_t* raw
    cdef uint8_t* line
    if info.kind < PNG_LABEL_PALETTE or info.kind > PNG_LABEL_GRAY16:
        return 1
    # the image data: in the file when one chunk holds it, else gathered
    if info.idat_chunks == 1:
        z = info.file + info.idat + 8
    else:
        pos = info.idat
        for k in range(info.idat_chunks):
            length = _be32(info.file + pos)
            memcpy(scratch + got, info.file + pos + 8, length)
            got += length
            pos += 12 + length
        z = scratch
    raw = scratch + _label_raw_offset(info)
    # the inflater leaves runs of zero bytes unwritten
    memset(raw, 0, H * stride + 16)
    if _inflate(z, info.zlen, raw, H * stride) != 0:
        return 1
    for y in range(H):
        line = raw + y * stride
        if _unfilter_in_place(line[0], line + 1, line + 1 - stride if y > 0 else NULL, rb, bpp) != 0:
            return 1
        if out8 != NULL:
            _label_row_u8(info, line + 1, out8 + y * W)
        else:
            _label_row_u16(info, line + 1, out16 + y * W)
    return 0


cdef int png_decode_labels(const PngLabelInfo* info, uint16_t* out, uint8_t* scratch) noexcept nogil:
    return _decode_labels(info, NULL, out, scratch)


cdef int png_decode_labels_u8(const PngLabelInfo* info, uint8_t* out, uint8_t* scratch) noexcept nogil:
    if info.depth > 8:
        return 2
    return _decode_labels(info, out, NULL, scratch)


def png_label_map(const uint8_t[::1] png, uint8_t[::1] scratch=None):
    """A single-channel PNG file's label map, decoded natively, or None.

    Parameters
    ----------
    png : bytes-like
        The whole file.
    scratch : uint8 ndarray, optional
        Working memory reused from call to call (used when large enough,
        else memory is allocated for the call).

    Returns
    -------
    (H, W) ndarray or None
        The values of ``np.array(Image.open(file))``: uint8 for palette
        images (the indices) and greyscale up to 8 bits (a 1-bit image as
        0/1, where Pillow's array is bool; 2- and 4-bit samples scaled to
        0..255 as Pillow does), uint16 for 16-bit greyscale.  None for any
        file this decoder does not take (see ``png_label_info`` in
        ``_png.pxd``) or whose image data is damaged: the caller reads those
        with Pillow.  The header's size is not checked against any limit
        (the caller's).

    Raises
    ------
    MemoryError
        If the image does not fit in memory.
    """
    cdef PngLabelInfo info
    cdef int kind, status
    cdef Py_ssize_t n = png.shape[0], need
    cdef uint8_t[::1] w
    cdef uint8_t[:, ::1] o8
    cdef uint16_t[:, ::1] o16
    if n == 0:
        return None
    with nogil:
        kind = png_label_info(&png[0], n, &info)
    if kind == 0:
        return None
    need = png_label_scratch_size(&info)
    if scratch is not None and scratch.shape[0] >= need:
        w = scratch
    else:
        w = np.empty(need, np.uint8)
    if kind == PNG_LABEL_GRAY16:
        arr = np.empty((info.height, info.width), np.uint16)
        o16 = arr
        with nogil:
            status = png_decode_labels(&info, &o16[0, 0], &w[0])
    else:
        arr = np.empty((info.height, info.width), np.uint8)
        o8 = arr
        with nogil:
            status = png_decode_labels_u8(&info, &o8[0, 0], &w[0])
    return None if status else arr


def png_label_header(const uint8_t[::1] png):
    """What ``png_label_info`` says of a file, as a dict (``kind``, ``height``,
    ``width``, ``depth``, ``color_type``, ``idat_chunks``, ``zlen``,
    ``scratch``), or None when the file is not one :func:`png_label_map`
    decodes (then Pillow reads it).  Walks the chunks and checks their CRCs;
    decodes nothing."""
    cdef PngLabelInfo info
    cdef int kind = 0
    if png.shape[0]:
        kind = png_label_info(&png[0], png.shape[0], &info)
    if kind == 0:
        return None
    return {"kind": kind, "height": info.height, "width": info.width, "depth": info.depth,
            "color_type": info.color_type, "idat_chunks": info.idat_chunks, "zlen": info.zlen,
            "scratch": png_label_scratch_size(&info)}


def _label_map_u16(const uint8_t[::1] png):
    """The label map through ``png_decode_labels`` (two bytes per value, every
    kind), or None: for the tests of the C interface."""
    cdef PngLabelInfo info
    cdef int kind = 0, status
    cdef uint8_t[::1] w
    cdef uint16_t[:, ::1] o
    if png.shape[0]:
        kind = png_label_info(&png[0], png.shape[0], &info)
    if kind == 0:
        return None
    w = np.empty(png_label_scratch_size(&info), np.uint8)
    arr = np.empty((info.height, info.width), np.uint16)
    o = arr
    with nogil:
        status = png_decode_labels(&info, &o[0, 0], &w[0])
    return None if status else arr
