# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Per-frame counts of video object segmentation on label maps.

(This file is longer than 800 lines because the one pass over a frame makes
every measure's counts, J, F (any footprint, MOSEv2's adaptive one) and B, from
shared row runs and bitset planes, and decodes the PNGs it is given.)

One pass over a ground-truth and a result label map (row-major, one label per
pixel) gives, for every label present in either map, its pixel count, the
size of its DAVIS boundary map and of its Boundary IoU band, and, for the
pairs of labels asked for, the counts the measures need:

- J (region similarity): the intersection of the two masks (the union
  follows from the areas);
- F (DAVIS' boundary F-measure): the boundary map of a mask marks a pixel
  that differs from its east, south or south-east neighbour (the last row
  compares eastwards only, the last column southwards only, the last pixel
  never); precision counts the result's boundary pixels within a disk of
  radius ``r`` (offsets with dx^2 + dy^2 <= r^2) of the ground truth's
  boundary, recall the other way round; the disk may be any footprint given
  as rows of offsets (:func:`footprint_rows`: scikit-image's ``disk`` of a
  fractional radius is off-centre), and MOSEv2's object-adaptive F_new picks
  its footprint per object and frame from the ground truth's area;
- B (Boundary IoU): the intersection of the two masks' bands, a band being
  the mask minus its erosion by a (2d+1)-square with the outside of the
  image counted as background (the mask layer's boundary kernel, on the
  row-major runs read as the column-major runs of the transposed image:
  the band of a transposed mask is the transposed band).

Only counts come out; the divisions that make J, F and B are left to the
caller (NumPy), where the official tools make them.  Masks are held as
row-major runs (J, B) and as row bitsets over their bounding boxes' rows
(F), so the cost follows the objects' sizes, not the frame's.
"""
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint64_t, int32_t
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memset
from libc.math cimport sqrt, ceil

import numpy as np

from boundary_api.masks._rle cimport I64Vec, WordBuf, _words_reserve, _i64_reserve, _push_interval, _intersection
from boundary_api.masks._boundary cimport (BoundaryWork, _bw_init, _bw_free, _boundary, _set_bits, ba_popcount,
                                           ba_and_popcount2d)
from boundary_api.masks._png cimport PngLabelInfo, png_label_info, png_label_scratch_size, png_decode_labels

#: columns of the per-label rows: frame, side (0 ground truth, 1 result), label,
#: area, boundary-map pixels, band pixels; and one row per frame with side 2:
#: frame, 2, the largest raw ground-truth label, the largest raw result label,
#: the number of distinct raw values of the ground truth (0 included; 3 means
#: 3 or more), the same of the result ("raw": before void, ``max_gt_label`` and
#: ``binarize`` are applied)
LABEL_COLUMNS = ("frame", "side", "label", "area", "boundary", "band")
#: columns of the per-pair rows: frame, result label, ground-truth label,
#: intersection, result boundary pixels near the ground truth's boundary,
#: ground-truth boundary pixels near the result's, band intersection, and the
#: two boundary counts again with MOSEv2's adaptive footprint (F_new; equal to
#: fg_match and gt_match when no adaptive footprint is asked for)
PAIR_COLUMNS = ("frame", "result", "truth", "inter", "fg_match", "gt_match", "band_inter", "fg_match_new",
                "gt_match_new")

#: pair modes: the same label on both sides (DAVIS semi-supervised, SA-V), or
#: every result label with every ground-truth label (DAVIS unsupervised)
DIAGONAL = 0
ALL_PAIRS = 1

class DamagedPNG(ValueError):
    """A PNG given as bytes whose image data the native decoder found damaged
    (``frame``: its position in the call, ``side``: 0 ground truth, 1 result);
    the caller reads it another way (Pillow ignores some damage)."""

    def __init__(self, frame, side):
        super().__init__(f"frame {frame}: the {'result' if side else 'ground-truth'} PNG is damaged")
        self.frame = frame
        self.side = side


def png_headers(list files):
    """``(kinds, heights, widths)`` of PNG files given as bytes: the kind the
    native label-map decoder takes them as (0: not one it decodes, the caller
    reads it with Pillow), from the header and the chunks (CRCs checked), no
    pixel decoded."""
    cdef Py_ssize_t i, n = len(files)
    cdef PngLabelInfo info
    cdef const uint8_t[::1] b
    kinds = np.zeros(n, np.int64)
    heights = np.zeros(n, np.int64)
    widths = np.zeros(n, np.int64)
    cdef int64_t[::1] k = kinds, hh = heights, ww = widths
    for i in range(n):
        b = files[i]
        if b.shape[0] == 0:
            continue
        with nogil:
            k[i] = png_label_info(&b[0], b.shape[0], &info)
        if k[i] > 0:
            hh[i] = info.height
            ww[i] = info.width
    return kinds, heights, widths


class LabelAboveLimit(ValueError):
    """A result label above the limit the caller set (``frame``, ``label``, ``limit``)."""

    def __init__(self, frame, label, limit):
        super().__init__(f"frame {frame}: result label {label} is above {limit}")
        self.frame = frame
        self.label = label
        self.limit = limit


cdef enum:
    _NLAB = 65536
    _DIAGONAL = 0


cdef struct Slot:
    int64_t label
    int64_t area
    int64_t y0, y1, x0, x1      # bounding box, inclusive
    I64Vec runs                 # row-major ones-intervals (maximal)
    I64Vec band                 # the band's intervals (B)
    int64_t nb                  # boundary-map pixels (F)
    int64_t band_area
    Py_ssize_t off              # arena offset (words) of the planes M, B, D
    int64_t ry0, nrows          # rows of the planes
    int64_t bw0, bw1            # words of the boundary map that may be non-zero
    int dilated                 # plane D made: 1 + the footprint's index, 0 none


cdef struct Side:
    int32_t* lut                # label -> slot, -1
    Slot* slots
    Py_ssize_t n, cap


cdef struct Footprints:
    const int64_t* rows         # (dy, lo, hi) per row with offsets, footprint after footprint
    const int64_t* start        # rows of footprint i: start[i] .. start[i + 1] - 1
    int64_t n                   # footprints
    int64_t reach               # largest |offset| of any footprint (the planes' margin)
    const int64_t* spread       # per footprint: the largest sideways spread its rows need
    int64_t max_spread
    double adaptive_th          # > 0: MOSEv2's F / F_new choice (see _choose)
    double cap                  # its cap in pixels (0.008 x the frame diagonal, not rounded)


cdef struct Work:
    Side side[2]
    uint16_t* rows              # two transformed rows
    WordBuf arena
    WordBuf hscratch            # sideways dilated boundary rows (F)
    BoundaryWork bw
    I64Vec lab                  # output rows
    I64Vec pairs


cdef int _side_init(Side* s) noexcept nogil:
    cdef Py_ssize_t i
    s.lut = <int32_t*> malloc(_NLAB * sizeof(int32_t))
    s.slots = NULL
    s.n = 0
    s.cap = 0
    if s.lut == NULL:
        return -1
    for i in range(_NLAB):
        s.lut[i] = -1
    return 0


cdef void _side_free(Side* s) noexcept nogil:
    cdef Py_ssize_t i
    for i in range(s.cap):
        free(s.slots[i].runs.data)
        free(s.slots[i].band.data)
    free(s.slots)
    free(s.lut)
    s.slots = NULL
    s.lut = NULL
    s.n = s.cap = 0


cdef void _side_reset(Side* s) noexcept nogil:
    """Forget the frame's labels (their vectors are kept for the next frame)."""
    cdef Py_ssize_t i
    for i in range(s.n):
        s.lut[s.slots[i].label] = -1
    s.n = 0


cdef Slot* _slot(Side* s, int64_t label, int64_t y, int64_t x0, int64_t x1) noexcept nogil:
    """The slot of ``label``, made on first sight in this frame; NULL when out of memory."""
    cdef int32_t k = s.lut[label]
    cdef Slot* sl
    cdef Py_ssize_t cap, i
    if k >= 0:
        return &s.slots[k]
    if s.n == s.cap:
        cap = s.cap * 2 if s.cap else 8
        sl = <Slot*> realloc(s.slots, cap * sizeof(Slot))
        if sl == NULL:
            return NULL
        s.slots = sl
        for i in range(s.cap, cap):
            memset(&s.slots[i], 0, sizeof(Slot))
        s.cap = cap
    k = <int32_t> s.n
    s.n += 1
    s.lut[label] = k
    sl = &s.slots[k]
    sl.label = label
    sl.area = 0
    sl.y0 = y
    sl.y1 = y
    sl.x0 = x0
    sl.x1 = x1
    sl.runs.n = 0
    sl.band.n = 0
    sl.nb = 0
    sl.band_area = 0
    sl.off = -1
    sl.dilated = 0
    return sl


cdef int _scan_row(Side* s, const uint16_t* row, int64_t y, int64_t W) noexcept nogil:
    """Add the runs of one transformed row (label 0 is background)."""
    cdef int64_t x = 0, xs
    cdef uint16_t v
    cdef uint64_t word, same
    cdef Slot* sl
    cdef int64_t base = y * W
    while x < W:
        # background four pixels at a time (unaligned 8-byte loads), then pixel by pixel
        while x + 4 <= W:
            memcpy(&word, row + x, 8)
            if word != 0:
                break
            x += 4
        while x < W and row[x] == 0:
            x += 1
        if x >= W:
            break
        v = row[x]
        xs = x
        x += 1
        # the run, four pixels at a time too
        same = <uint64_t> v * <uint64_t> 0x0001000100010001
        while x + 4 <= W:
            memcpy(&word, row + x, 8)
            if word != same:
                break
            x += 4
        while x < W and row[x] == v:
            x += 1
        sl = _slot(s, v, y, xs, x - 1)
        if sl == NULL:
            return -1
        if _push_interval(&sl.runs, 0, base + xs, base + x) != 0:
            return -1
        sl.area += x - xs
        sl.y1 = y
        if xs < sl.x0:
            sl.x0 = xs
        if x - 1 > sl.x1:
            sl.x1 = x - 1
    return 0


cdef inline uint64_t _east(const uint64_t* m, int64_t w, int64_t nw) noexcept nogil:
    """Word ``w`` of the row shifted so that bit x holds bit x + 1."""
    if w + 1 < nw:
        return (m[w] >> 1) | (m[w + 1] << 63)
    return m[w] >> 1


cdef int _make_planes(Work* wk, Slot* sl, int64_t H, int64_t W, int64_t NW, int64_t r, Py_ssize_t off) noexcept nogil:
    """Planes M and B of the slot at arena offset ``off`` (words; the arena
    has room); D is zeroed for _dilate."""
    cdef int64_t ry0 = sl.y0 - 1 - r, ry1 = sl.y1 + 1 + r, y, w, wlo, whi, i, yy
    cdef uint64_t* M
    cdef uint64_t* B
    cdef const uint64_t* m0
    cdef const uint64_t* m1
    cdef uint64_t* b
    cdef uint64_t e0, e1, x0w, x1w, d01, lastbit
    cdef int64_t lastw = (W - 1) >> 6
    cdef int64_t s, e
    cdef int64_t nb = 0
    if ry0 < 0:
        ry0 = 0
    if ry1 > H - 1:
        ry1 = H - 1
    sl.ry0 = ry0
    sl.nrows = ry1 - ry0 + 1
    sl.off = off
    memset(wk.arena.data + off, 0, 3 * sl.nrows * NW * sizeof(uint64_t))
    M = wk.arena.data + off
    B = M + sl.nrows * NW
    # the mask's bits, run by run
    for i in range(0, sl.runs.n, 2):
        s = sl.runs.data[i]
        e = sl.runs.data[i + 1]
        # a run may continue over the end of a row (maximal intervals)
        while s < e:
            y = s // W
            yy = (y + 1) * W
            if yy > e:
                yy = e
            _set_bits(M + (y - ry0) * NW, s - y * W, yy - y * W)
            s = yy
    # the boundary map: rows y0-1 .. y1, words covering columns x0-1 .. x1
    wlo = (sl.x0 - 1) >> 6 if sl.x0 > 0 else 0
    whi = (sl.x1 >> 6) + 1
    sl.bw0 = wlo
    sl.bw1 = whi
    lastbit = (<uint64_t> 1) << ((W - 1) & 63)
    y = sl.y0 - 1 if sl.y0 > 0 else 0
    while y <= sl.y1:
        m0 = M + (y - ry0) * NW
        b = B + (y - ry0) * NW
        if y < H - 1:
            m1 = M + (y + 1 - ry0) * NW
            for w in range(wlo, whi):
                e0 = _east(m0, w, NW)
                e1 = _east(m1, w, NW)
                b[w] = (m0[w] ^ e0) | (m0[w] ^ m1[w]) | (m0[w] ^ e1)
            # the last column compares southwards only
            if whi > lastw:
                b[lastw] = (b[lastw] & ~lastbit) | ((m0[lastw] ^ m1[lastw]) & lastbit)
        else:
            # the last row compares eastwards only, its last pixel never
            for w in range(wlo, whi):
                b[w] = m0[w] ^ _east(m0, w, NW)
            if whi > lastw:
                b[lastw] &= ~lastbit
        nb += ba_popcount(b + wlo, whi - wlo)
        y += 1
    sl.nb = nb
    return 0


cdef inline uint64_t _up(const uint64_t* v, int64_t w, int64_t w0, int64_t q, int64_t s) noexcept nogil:
    """Word ``w`` of row ``v`` moved ``64 q + s`` columns towards higher x
    (words before ``w0`` read as zero)."""
    cdef int64_t k = w - q
    cdef uint64_t out = 0
    if k >= w0:
        out = v[k] << s
        if s and k - 1 >= w0:
            out |= v[k - 1] >> (64 - s)
    return out


cdef inline uint64_t _down(const uint64_t* v, int64_t w, int64_t w1, int64_t q, int64_t s) noexcept nogil:
    """Word ``w`` of row ``v`` moved ``64 q + s`` columns towards lower x
    (words from ``w1`` on read as zero)."""
    cdef int64_t k = w + q
    cdef uint64_t out = 0
    if k < w1:
        out = v[k] >> s
        if s and k + 1 < w1:
            out |= v[k + 1] << (64 - s)
    return out


cdef int _dilate(Work* wk, Slot* sl, int64_t H, int64_t W, int64_t NW, const Footprints* fp, int64_t which) noexcept nogil:
    """Plane D: the boundary map dilated by footprint ``which`` (rows of
    offsets: a boundary pixel (y, x) marks (y + dy, x + lo .. x + hi)),
    clipped to the frame's rows (columns past the frame are never read).

    Each boundary row is spread sideways once: ``L_k`` (bit x set when the
    row has a pixel in x .. x + k) and ``R_k`` (in x - k .. x); a footprint
    row with lo <= 0 <= hi is then ``L_-lo | R_hi``, one beside the centre
    a shifted ``R_(hi-lo)`` or ``L_(hi-lo)``."""
    cdef uint64_t* B = wk.arena.data + sl.off + sl.nrows * NW
    cdef uint64_t* D = B + sl.nrows * NW
    cdef uint64_t* Lk
    cdef uint64_t* Rk
    cdef uint64_t* prev
    cdef uint64_t* cur
    cdef const uint64_t* src
    cdef const uint64_t* src2
    cdef uint64_t* b
    cdef uint64_t* dst
    cdef int64_t K = fp.spread[which]
    cdef int64_t sw = (fp.max_spread + fp.reach + 63) >> 6
    cdef int64_t w0 = sl.bw0 - sw, w1 = sl.bw1 + sw, y, w, k, i, dy, lo, hi, ty, ylo, q, s
    cdef int64_t r0 = fp.start[which], r1 = fp.start[which + 1]
    cdef int any
    if w0 < 0:
        w0 = 0
    if w1 > NW:
        w1 = NW
    if _words_reserve(&wk.hscratch, 2 * (K + 1) * NW) != 0:
        return -1
    Lk = wk.hscratch.data
    Rk = Lk + (K + 1) * NW
    if sl.dilated:
        # (made before with another footprint: the same words, see sw)
        for ty in range(sl.nrows):
            dst = D + ty * NW
            for w in range(w0, w1):
                dst[w] = 0
    ylo = sl.y0 - 1 if sl.y0 > 0 else 0
    for y in range(ylo, sl.y1 + 1):
        b = B + (y - sl.ry0) * NW
        any = 0
        for w in range(sl.bw0, sl.bw1):
            if b[w]:
                any = 1
                break
        if not any:
            continue
        for w in range(w0, w1):
            Lk[w] = b[w]
            Rk[w] = b[w]
        for k in range(1, K + 1):
            prev = Lk + (k - 1) * NW
            cur = Lk + k * NW
            for w in range(w0, w1):
                cur[w] = prev[w] | _down(prev, w, w1, 0, 1)
            prev = Rk + (k - 1) * NW
            cur = Rk + k * NW
            for w in range(w0, w1):
                cur[w] = prev[w] | _up(prev, w, w0, 0, 1)
        for i in range(r0, r1):
            dy = fp.rows[3 * i]
            lo = fp.rows[3 * i + 1]
            hi = fp.rows[3 * i + 2]
            ty = y + dy
            if ty < 0 or ty >= H:
                continue
            dst = D + (ty - sl.ry0) * NW
            if lo <= 0 <= hi:
                src = Lk + (-lo) * NW
                src2 = Rk + hi * NW
                for w in range(w0, w1):
                    dst[w] |= src[w] | src2[w]
            elif lo > 0:
                src = Rk + (hi - lo) * NW
                q = lo >> 6
                s = lo & 63
                for w in range(w0, w1):
                    dst[w] |= _up(src, w, w0, q, s)
            else:
                src = Lk + (hi - lo) * NW
                q = (-hi) >> 6
                s = (-hi) & 63
                for w in range(w0, w1):
                    dst[w] |= _down(src, w, w1, q, s)
    sl.dilated = <int> which + 1
    return 0


cdef int64_t _near(Work* wk, Slot* a, Slot* b, int64_t NW) noexcept nogil:
    """Boundary pixels of ``a`` within the dilated boundary map of ``b``."""
    cdef int64_t ya = a.y0 - 1 if a.y0 > 0 else 0
    cdef int64_t yb = a.y1
    cdef int64_t w0 = a.bw0, w1 = a.bw1
    cdef const uint64_t* B
    cdef const uint64_t* D
    if ya < b.ry0:
        ya = b.ry0
    if yb > b.ry0 + b.nrows - 1:
        yb = b.ry0 + b.nrows - 1
    if yb < ya or w1 <= w0:
        return 0
    B = wk.arena.data + a.off + a.nrows * NW + (ya - a.ry0) * NW
    D = wk.arena.data + b.off + 2 * b.nrows * NW + (ya - b.ry0) * NW
    return ba_and_popcount2d(B + w0, NW, D + w0, NW, yb - ya + 1, w1 - w0)


cdef int _emit(I64Vec* v, int64_t* row, int n) noexcept nogil:
    cdef int i
    if _i64_reserve(v, v.n + n) != 0:
        return -1
    for i in range(n):
        v.data[v.n + i] = row[i]
    v.n += n
    return 0


cdef inline void _choose(const Footprints* fp, int64_t gt_area, int64_t* fi, int64_t* ni) noexcept nogil:
    """The footprints of F (``fi``) and F_new (``ni``) for a ground truth of
    ``gt_area`` pixels: footprint 0 without the adaptive rule.  With it
    (MOSEv2's ``f_measure_adaptive`` with mode 'area'): the radius
    ``ceil(th * sqrt(area))``; below the cap, F_new uses that whole-pixel disk
    and F the disk of ``ceil(cap)`` (footprints k = disk(k), n - 2 =
    disk(ceil(cap))); else both use the disk of the uncut cap (n - 1)."""
    cdef double ra
    if fp.adaptive_th <= 0:
        fi[0] = 0
        ni[0] = 0
        return
    ra = ceil(fp.adaptive_th * sqrt(<double> gt_area))
    if ra < fp.cap:
        fi[0] = fp.n - 2
        ni[0] = <int64_t> ra
    else:
        fi[0] = fp.n - 1
        ni[0] = fp.n - 1


cdef inline void _distinct(const uint16_t* row, int64_t W, uint16_t d0, uint16_t* d1, int* n) noexcept nogil:
    """Count the distinct values of the map up to 3 (``n``): ``d0`` its first
    value, ``d1`` the second one seen; rows are given in raster order and each
    is read only while the count can still change."""
    cdef int64_t x = 0
    cdef uint16_t v
    while n[0] < 3 and x < W:
        v = row[x]
        if v != d0:
            if n[0] == 1:
                d1[0] = v
                n[0] = 2
            elif v != d1[0]:
                n[0] = 3
        x += 1


cdef int _frame(Work* wk, const uint16_t* G, const uint16_t* R, int64_t H, int64_t W, int64_t frame,
                int64_t void_label, int mask_res_by_void, int binarize, int64_t max_gt_label,
                int64_t max_res_label, int pair_mode, const Footprints* fp, int64_t d, int want_f, int want_b,
                int64_t* bad) noexcept nogil:
    """Counts of one frame appended to wk.lab / wk.pairs; 0, -1 out of memory,
    -2 a result label above ``max_res_label`` (in ``bad``)."""
    cdef Side* gs = &wk.side[0]
    cdef Side* rs = &wk.side[1]
    cdef uint16_t* tg = wk.rows
    cdef uint16_t* tr = wk.rows + W
    cdef const uint16_t* Gy
    cdef const uint16_t* Ry
    cdef const uint16_t* rg
    cdef const uint16_t* rr
    cdef int64_t y, x, NW = (W + 63) >> 6
    cdef uint16_t g, v, ymax_g, ymax_r
    cdef int plain = void_label < 0 and not binarize
    cdef Py_ssize_t i, j, side, total
    cdef Slot* a
    cdef Slot* b
    cdef int64_t row[9]
    cdef int64_t inter, fg, gm, bi, fgn, gmn, r = fp.reach, fi, ni
    cdef int err = 0
    cdef uint16_t gmax = 0, rmax = 0, gd0 = G[0], gd1 = 0, rd0 = R[0], rd1 = 0
    cdef int gn = 1, rn = 1      # distinct raw values seen (0 included), up to 3
    _side_reset(gs)
    _side_reset(rs)
    for y in range(H):
        Gy = G + y * W
        Ry = R + y * W
        # the raw row's largest labels (a loop the compiler vectorises); a result
        # label above the limit: the first one in raster order
        ymax_g = 0
        ymax_r = 0
        for x in range(W):
            if Gy[x] > ymax_g:
                ymax_g = Gy[x]
            if Ry[x] > ymax_r:
                ymax_r = Ry[x]
        if ymax_r > max_res_label:
            for x in range(W):
                if Ry[x] > max_res_label:
                    bad[0] = Ry[x]
                    return -2
        if ymax_g > gmax:
            gmax = ymax_g
        if ymax_r > rmax:
            rmax = ymax_r
        # how many distinct raw values each map holds (up to 3), while that can change
        _distinct(Gy, W, gd0, &gd1, &gn)
        _distinct(Ry, W, rd0, &rd1, &rn)
        # the transformed rows: the raw ones where nothing changes them
        if plain:
            rr = Ry
            if ymax_g <= max_gt_label:
                rg = Gy
            else:
                for x in range(W):
                    tg[x] = Gy[x] if Gy[x] <= max_gt_label else 0
                rg = tg
        else:
            for x in range(W):
                g = Gy[x]
                v = Ry[x]
                if void_label >= 0 and g == void_label:
                    g = 0
                    if mask_res_by_void:
                        v = 0
                if binarize:
                    g = g != 0
                    v = v != 0
                elif g > max_gt_label:
                    g = 0
                tg[x] = g
                tr[x] = v
            rg = tg
            rr = tr
        if _scan_row(gs, rg, y, W) != 0 or _scan_row(rs, rr, y, W) != 0:
            return -1
    # planes (F) and bands (B) of every label present
    if want_f:
        total = 0
        for side in range(2):
            for i in range(wk.side[side].n):
                a = &wk.side[side].slots[i]
                y = a.y1 + 1 + r
                if y > H - 1:
                    y = H - 1
                x = a.y0 - 1 - r
                if x < 0:
                    x = 0
                total += 3 * (y - x + 1) * NW
        if _words_reserve(&wk.arena, total) != 0:
            return -1
        total = 0
        for side in range(2):
            for i in range(wk.side[side].n):
                a = &wk.side[side].slots[i]
                _make_planes(wk, a, H, W, NW, r, total)
                total += 3 * a.nrows * NW
    if want_b:
        for side in range(2):
            for i in range(wk.side[side].n):
                a = &wk.side[side].slots[i]
                a.band.n = 0
                # row-major runs are the column-major runs of the transposed frame
                if _boundary(a.runs.data, a.runs.n, W, H, d, &wk.bw, &a.band) != 0:
                    return -1
                a.band_area = 0
                for j in range(0, a.band.n, 2):
                    a.band_area += a.band.data[j + 1] - a.band.data[j]
    row[0] = frame
    row[1] = 2
    row[2] = gmax
    row[3] = rmax
    row[4] = gn
    row[5] = rn
    if _emit(&wk.lab, row, 6) != 0:
        return -1
    for side in range(2):
        for i in range(wk.side[side].n):
            a = &wk.side[side].slots[i]
            row[0] = frame
            row[1] = side
            row[2] = a.label
            row[3] = a.area
            row[4] = a.nb
            row[5] = a.band_area
            if _emit(&wk.lab, row, 6) != 0:
                return -1
    # pairs present on both sides
    for i in range(rs.n):
        a = &rs.slots[i]
        for j in range(gs.n):
            b = &gs.slots[j]
            if pair_mode == _DIAGONAL and a.label != b.label:
                continue
            inter = _intersection(a.runs.data, a.runs.n, b.runs.data, b.runs.n)
            fg = gm = bi = fgn = gmn = 0
            if want_f and a.nb > 0 and b.nb > 0:
                _choose(fp, b.area, &fi, &ni)
                if a.dilated != fi + 1 and _dilate(wk, a, H, W, NW, fp, fi) != 0:
                    return -1
                if b.dilated != fi + 1 and _dilate(wk, b, H, W, NW, fp, fi) != 0:
                    return -1
                fg = _near(wk, a, b, NW)
                gm = _near(wk, b, a, NW)
                if ni == fi:
                    fgn = fg
                    gmn = gm
                else:
                    if _dilate(wk, a, H, W, NW, fp, ni) != 0 or _dilate(wk, b, H, W, NW, fp, ni) != 0:
                        return -1
                    fgn = _near(wk, a, b, NW)
                    gmn = _near(wk, b, a, NW)
            if want_b:
                bi = _intersection(a.band.data, a.band.n, b.band.data, b.band.n)
            row[0] = frame
            row[1] = a.label
            row[2] = b.label
            row[3] = inter
            row[4] = fg
            row[5] = gm
            row[6] = bi
            row[7] = fgn
            row[8] = gmn
            if _emit(&wk.pairs, row, 9) != 0:
                return -1
    return 0


cdef object _rows(I64Vec* v, int ncol):
    """The rows of ``v`` as an (n, ncol) int64 array (a copy)."""
    if v.n == 0:
        return np.zeros((0, ncol), np.int64)
    return np.array(<int64_t[:v.n]> v.data, np.int64).reshape(-1, ncol)


def disk_half_widths(int64_t r):
    """Half-widths of the rows of the disk of radius ``r`` (the offsets with
    dx^2 + dy^2 <= r^2): entry dy is the largest dx, for dy = 0 .. r."""
    if r < 0:
        raise ValueError(f"radius must be >= 0, got {r}")
    out = np.zeros(r + 1, np.int64)
    cdef int64_t[::1] o = out
    cdef int64_t dy, dx
    for dy in range(r + 1):
        dx = 0
        while (dx + 1) * (dx + 1) + dy * dy <= r * r:
            dx += 1
        o[dy] = dx
    return out


def disk_footprint(double radius):
    """The disk scikit-image's ``disk(radius)`` makes, as the (n, n) bool
    kernel OpenCV's ``dilate`` applies around its centre (n // 2, n // 2):
    the points of ``np.arange(-radius, radius + 1)`` squared (both axes) whose
    sum is at most ``radius ** 2``.  A whole radius gives the centred disk;
    a fractional one an off-centre disk (``disk(7.837)`` has 191 pixels,
    ``disk(8)`` 197)."""
    if not radius >= 0:
        raise ValueError(f"radius must be >= 0, got {radius}")
    L = np.arange(-radius, radius + 1)
    X, Y = np.meshgrid(L, L)
    return (X ** 2 + Y ** 2) <= radius ** 2


def footprint_rows(kernel):
    """A dilation kernel as the frame kernel takes it: an (m, 3) int64 array
    of rows (dy, lo, hi): OpenCV's ``dilate`` with ``kernel`` (anchor at its
    centre) marks, for a boundary pixel (y, x), the pixels (y + dy, x + lo ..
    x + hi).  (OpenCV reads the source at p + offset, so the marks are the
    kernel's offsets reflected.)"""
    k = np.asarray(kernel, bool)
    if k.ndim != 2:
        raise ValueError("footprint_rows: a 2-d kernel is needed")
    ay, ax = k.shape[0] // 2, k.shape[1] // 2
    rows = []
    for i in range(k.shape[0] - 1, -1, -1):
        cols = np.flatnonzero(k[i])
        if len(cols):
            first, last = int(cols.min()), int(cols.max())
            if last - first + 1 != len(cols):
                raise ValueError("footprint_rows: each row of the kernel must be one run")
            rows.append((ay - i, ax - last, ax - first))
    return np.array(rows, np.int64).reshape(-1, 3)


def _disk_rows(int64_t r):
    hw = disk_half_widths(r)
    return np.array([(dy, -hw[abs(dy)], hw[abs(dy)]) for dy in range(-r, r + 1)], np.int64).reshape(-1, 3)


def frame_counts(list gts, list ress, Py_ssize_t first_frame=0, *, int64_t void_label=-1,
                 bint mask_res_by_void=False, bint binarize=False, int64_t max_gt_label=65535,
                 int64_t max_res_label=65535, int pair_mode=_DIAGONAL, int64_t radius=0, int64_t d=1,
                 bint want_f=True, bint want_b=False, footprints=None, double adaptive_th=0.0,
                 double adaptive_cap=0.0):
    """Counts of frames ``first_frame``, ``first_frame + 1``, ... (runs without the GIL).

    Parameters
    ----------
    gts, ress : list of (H, W) uint16 C-contiguous ndarrays or bytes
        Ground-truth and result label maps, frame by frame, all of one size:
        arrays, or PNG files (``bytes``) that the native label-map decoder
        takes (:func:`png_headers` says which), decoded here without the GIL
        (:class:`DamagedPNG` when the image data is damaged).
    first_frame : int
        Number given to the first frame in the output rows.
    void_label : int
        Ground-truth label of void pixels (-1: none): they become background
        in the ground truth and, with ``mask_res_by_void``, in the result.
    binarize : bool
        Every non-zero value is label 1 (SA-V's one-object masks).
    max_gt_label : int
        Ground-truth labels above it are background (DAVIS' objects are the
        labels of its first frame).
    max_res_label : int
        A result label above it stops with :class:`LabelAboveLimit` (a
        ``ValueError``) naming the frame and the label.
    pair_mode : {DIAGONAL, ALL_PAIRS}
    radius : int
        F's tolerance in pixels (the disk dx^2 + dy^2 <= radius^2), unless
        ``footprints`` is given.
    footprints : list of (m, 3) int64 arrays, optional
        F's dilations as :func:`footprint_rows` gives them; without
        ``adaptive_th`` the first is used.
    adaptive_th, adaptive_cap : float
        ``adaptive_th > 0``: MOSEv2's object-adaptive F_new.  Per pair the
        radius ``ceil(adaptive_th * sqrt(ground-truth area))``: below
        ``adaptive_cap``, F counts with ``footprints[-2]`` (the disk of
        ``ceil(adaptive_cap)``) and F_new with ``footprints[radius]``; else
        both with ``footprints[-1]`` (the disk of the uncut cap).  So
        ``footprints`` = disks 0 .. ceil(cap), then the cap's.
    d : int
        B's band width in pixels (>= 0).
    want_f, want_b : bool
        Count F's and B's terms (else they are 0).

    Returns
    -------
    labels : (n, 6) int64 ndarray
        One row per label present in a frame, columns ``LABEL_COLUMNS``, and
        one frame row (side 2) per frame.
    pairs : (m, 9) int64 ndarray
        One row per pair of labels both present in a frame, columns ``PAIR_COLUMNS``.
    """
    cdef Py_ssize_t n = len(gts), t, need, scratch_size = 0
    cdef Work wk
    cdef int status = 0, side, dstatus = 0, bad_side = 0
    cdef int64_t H = 0, W = 0, bad = 0, frame = 0
    cdef const uint16_t[:, ::1] gv
    cdef const uint16_t[:, ::1] rv
    cdef const uint8_t[::1] bv
    cdef const uint16_t** gp
    cdef const uint16_t** rp
    cdef PngLabelInfo* ginfo = NULL     # per frame: the PNG to decode (kind 0: an array given)
    cdef PngLabelInfo* rinfo = NULL
    cdef uint16_t* gbuf = NULL
    cdef uint16_t* rbuf = NULL
    cdef uint8_t* scratch = NULL
    cdef const uint16_t* g
    cdef const uint16_t* r
    if len(ress) != n:
        raise ValueError(f"frame_counts: {n} ground-truth frames but {len(ress)} result frames")
    if radius < 0 or d < 0:
        raise ValueError("frame_counts: radius and d must be >= 0")
    if max_gt_label > 65535:
        max_gt_label = 65535
    if footprints is None:
        footprints = [_disk_rows(radius)]
    footprints = [np.ascontiguousarray(f, np.int64).reshape(-1, 3) for f in footprints]
    if not footprints:
        raise ValueError("frame_counts: no footprint")
    if adaptive_th > 0:
        need = int(np.ceil(adaptive_cap)) + 2 if adaptive_cap > 0 else 0
        if adaptive_cap <= 0 or len(footprints) != need:
            raise ValueError(f"frame_counts: the adaptive F needs a cap > 0 and the disks 0 .. ceil(cap) and the "
                             f"cap's ({need} footprints), got {len(footprints)}")
    fp_rows = np.concatenate(footprints + [np.zeros((1, 3), np.int64)]).ravel()
    fp_start = np.cumsum([0] + [len(f) for f in footprints]).astype(np.int64)
    fp_spread = np.array([max([0] + [(max(-lo, hi) if lo <= 0 <= hi else hi - lo) for _, lo, hi in f.tolist()])
                          for f in footprints], np.int64)
    cdef const int64_t[::1] fpr = fp_rows
    cdef const int64_t[::1] fps = fp_start
    cdef const int64_t[::1] fpw = fp_spread
    cdef Footprints fp
    fp.rows = &fpr[0]
    fp.start = &fps[0]
    fp.n = len(footprints)
    fp.reach = max([0] + [int(np.abs(f).max()) for f in footprints if len(f)])
    fp.spread = &fpw[0]
    fp.max_spread = int(fp_spread.max())
    fp.adaptive_th = adaptive_th
    fp.cap = adaptive_cap
    gp = <const uint16_t**> calloc(max(n, 1), sizeof(uint16_t*))
    rp = <const uint16_t**> calloc(max(n, 1), sizeof(uint16_t*))
    ginfo = <PngLabelInfo*> calloc(max(n, 1), sizeof(PngLabelInfo))
    rinfo = <PngLabelInfo*> calloc(max(n, 1), sizeof(PngLabelInfo))
    if gp == NULL or rp == NULL or ginfo == NULL or rinfo == NULL:
        free(gp)
        free(rp)
        free(ginfo)
        free(rinfo)
        raise MemoryError()
    memset(&wk, 0, sizeof(Work))
    _bw_init(&wk.bw)
    try:
        for t in range(n):
            for side in range(2):
                item = gts[t] if side == 0 else ress[t]
                info = &ginfo[t] if side == 0 else &rinfo[t]
                if isinstance(item, bytes):
                    # a PNG file, decoded below without the GIL
                    bv = item
                    if bv.shape[0] == 0 or png_label_info(&bv[0], bv.shape[0], info) <= 0:
                        raise ValueError(f"frame_counts: frame {first_frame + t}'s PNG is not one the native "
                                         "decoder takes (read it as an array)")
                    h, w = info.height, info.width
                    need = png_label_scratch_size(info)
                    if need > scratch_size:
                        scratch_size = need
                else:
                    info.kind = 0
                    if side == 0:
                        gv = item
                        h, w = gv.shape[0], gv.shape[1]
                        gp[t] = &gv[0, 0] if h * w > 0 else NULL
                    else:
                        rv = item
                        h, w = rv.shape[0], rv.shape[1]
                        rp[t] = &rv[0, 0] if h * w > 0 else NULL
                if t == 0 and side == 0:
                    H = h
                    W = w
                if h != H or w != W:
                    raise ValueError(f"frame_counts: frame {first_frame + t} is not {H}x{W} in both maps")
        if n and H * W > 0:
            if _side_init(&wk.side[0]) != 0 or _side_init(&wk.side[1]) != 0:
                raise MemoryError()
            wk.rows = <uint16_t*> malloc(2 * W * sizeof(uint16_t))
            gbuf = <uint16_t*> malloc(H * W * sizeof(uint16_t))
            rbuf = <uint16_t*> malloc(H * W * sizeof(uint16_t))
            scratch = <uint8_t*> malloc(max(scratch_size, 1))
            if wk.rows == NULL or gbuf == NULL or rbuf == NULL or scratch == NULL:
                raise MemoryError()
            with nogil:
                for t in range(n):
                    frame = first_frame + t
                    g = gp[t]
                    r = rp[t]
                    if ginfo[t].kind > 0:
                        if png_decode_labels(&ginfo[t], gbuf, scratch) != 0:
                            dstatus = 1
                            bad_side = 0
                            break
                        g = gbuf
                    if rinfo[t].kind > 0:
                        if png_decode_labels(&rinfo[t], rbuf, scratch) != 0:
                            dstatus = 1
                            bad_side = 1
                            break
                        r = rbuf
                    status = _frame(&wk, g, r, H, W, frame, void_label, mask_res_by_void, binarize,
                                    max_gt_label, max_res_label, pair_mode, &fp, d, want_f, want_b, &bad)
                    if status != 0:
                        break
            if dstatus:
                raise DamagedPNG(frame, bad_side)
            if status == -1:
                raise MemoryError()
            if status == -2:
                raise LabelAboveLimit(frame, bad, max_res_label)
        return _rows(&wk.lab, 6), _rows(&wk.pairs, 9)
    finally:
        free(gp)
        free(rp)
        free(ginfo)
        free(rinfo)
        free(gbuf)
        free(rbuf)
        free(scratch)
        free(wk.rows)
        for side in range(2):
            if wk.side[side].lut != NULL:
                _side_free(&wk.side[side])
        free(wk.arena.data)
        free(wk.hscratch.data)
        free(wk.lab.data)
        free(wk.pairs.data)
        _bw_free(&wk.bw)
