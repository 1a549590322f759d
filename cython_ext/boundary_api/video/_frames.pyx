# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Per-frame counts of video object segmentation on label maps.

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
  boundary, recall the other way round;
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
from libc.string cimport memset

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
#: ground-truth boundary pixels near the result's, band intersection
PAIR_COLUMNS = ("frame", "result", "truth", "inter", "fg_match", "gt_match", "band_inter")

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
    int dilated                 # plane D made


cdef struct Side:
    int32_t* lut                # label -> slot, -1
    Slot* slots
    Py_ssize_t n, cap


cdef struct Work:
    Side side[2]
    uint16_t* rows              # two transformed rows
    WordBuf arena
    WordBuf hscratch            # horizontally dilated boundary rows (F)
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
    cdef Slot* sl
    cdef int64_t base = y * W
    while x < W:
        v = row[x]
        if v == 0:
            x += 1
            continue
        xs = x
        x += 1
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


cdef int _dilate(Work* wk, Slot* sl, int64_t H, int64_t W, int64_t NW, int64_t r, const int64_t* hw) noexcept nogil:
    """Plane D: the boundary map dilated by the disk of radius ``r``
    (``hw[|dy|]``: the half-width of the disk's row dy), clipped to the frame."""
    cdef uint64_t* B = wk.arena.data + sl.off + sl.nrows * NW
    cdef uint64_t* D = B + sl.nrows * NW
    cdef uint64_t* Hk
    cdef uint64_t* prev
    cdef uint64_t* b
    cdef uint64_t* dst
    cdef int64_t spread = (r + 63) >> 6
    cdef int64_t w0 = sl.bw0 - spread, w1 = sl.bw1 + spread, y, w, k, dy, ty, ylo
    cdef int64_t lastw = (W - 1) >> 6
    cdef uint64_t lastmask
    cdef uint64_t left, right, v
    cdef int any
    if w0 < 0:
        w0 = 0
    if w1 > NW:
        w1 = NW
    if (W & 63) == 0:
        lastmask = ~(<uint64_t> 0)
    else:
        lastmask = ((<uint64_t> 1) << (W & 63)) - 1
    if _words_reserve(&wk.hscratch, (r + 1) * NW) != 0:
        return -1
    Hk = wk.hscratch.data
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
        # H_0 = the row; H_k = H_{k-1} dilated by one pixel sideways
        for w in range(w0, w1):
            Hk[w] = b[w]
        for k in range(1, r + 1):
            prev = Hk + (k - 1) * NW
            dst = Hk + k * NW
            for w in range(w0, w1):
                v = prev[w]
                # (words outside w0 .. w1 are zero: the spread covers the disk)
                left = v << 1
                if w > w0:
                    left |= prev[w - 1] >> 63
                right = v >> 1
                if w + 1 < w1:
                    right |= prev[w + 1] << 63
                dst[w] = v | left | right
            if w1 > lastw:
                dst[lastw] &= lastmask
        for dy in range(-r, r + 1):
            ty = y + dy
            if ty < 0 or ty >= H:
                continue
            prev = Hk + hw[dy if dy >= 0 else -dy] * NW
            dst = D + (ty - sl.ry0) * NW
            for w in range(w0, w1):
                dst[w] |= prev[w]
    sl.dilated = 1
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


cdef int _frame(Work* wk, const uint16_t* G, const uint16_t* R, int64_t H, int64_t W, int64_t frame,
                int64_t void_label, int mask_res_by_void, int binarize, int64_t max_gt_label,
                int64_t max_res_label, int pair_mode, int64_t r, int64_t d, int want_f, int want_b,
                const int64_t* hw, int64_t* bad) noexcept nogil:
    """Counts of one frame appended to wk.lab / wk.pairs; 0, -1 out of memory,
    -2 a result label above ``max_res_label`` (in ``bad``)."""
    cdef Side* gs = &wk.side[0]
    cdef Side* rs = &wk.side[1]
    cdef uint16_t* tg = wk.rows
    cdef uint16_t* tr = wk.rows + W
    cdef int64_t y, x, NW = (W + 63) >> 6
    cdef uint16_t g, v
    cdef Py_ssize_t i, j, side, total
    cdef Slot* a
    cdef Slot* b
    cdef int64_t row[7]
    cdef int64_t inter, fg, gm, bi
    cdef int err = 0
    cdef uint16_t gmax = 0, rmax = 0, gd0 = G[0], gd1 = 0, rd0 = R[0], rd1 = 0
    cdef int gn = 1, rn = 1      # distinct raw values seen (0 included), up to 3
    _side_reset(gs)
    _side_reset(rs)
    for y in range(H):
        for x in range(W):
            g = G[y * W + x]
            v = R[y * W + x]
            if v > max_res_label:
                bad[0] = v
                return -2
            # the raw maps' largest labels and how many distinct values they hold (up to 3)
            if g > gmax:
                gmax = g
            if v > rmax:
                rmax = v
            if g != gd0 and gn < 3:
                if gn == 1:
                    gd1 = g
                    gn = 2
                elif g != gd1:
                    gn = 3
            if v != rd0 and rn < 3:
                if rn == 1:
                    rd1 = v
                    rn = 2
                elif v != rd1:
                    rn = 3
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
        if _scan_row(gs, tg, y, W) != 0 or _scan_row(rs, tr, y, W) != 0:
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
            fg = gm = bi = 0
            if want_f and a.nb > 0 and b.nb > 0:
                if not a.dilated and _dilate(wk, a, H, W, NW, r, hw) != 0:
                    return -1
                if not b.dilated and _dilate(wk, b, H, W, NW, r, hw) != 0:
                    return -1
                fg = _near(wk, a, b, NW)
                gm = _near(wk, b, a, NW)
            if want_b:
                bi = _intersection(a.band.data, a.band.n, b.band.data, b.band.n)
            row[0] = frame
            row[1] = a.label
            row[2] = b.label
            row[3] = inter
            row[4] = fg
            row[5] = gm
            row[6] = bi
            if _emit(&wk.pairs, row, 7) != 0:
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


def frame_counts(list gts, list ress, Py_ssize_t first_frame=0, *, int64_t void_label=-1,
                 bint mask_res_by_void=False, bint binarize=False, int64_t max_gt_label=65535,
                 int64_t max_res_label=65535, int pair_mode=_DIAGONAL, int64_t radius=0, int64_t d=1,
                 bint want_f=True, bint want_b=False):
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
        F's tolerance in pixels.
    d : int
        B's band width in pixels (>= 0).
    want_f, want_b : bool
        Count F's and B's terms (else they are 0).

    Returns
    -------
    labels : (n, 6) int64 ndarray
        One row per label present in a frame, columns ``LABEL_COLUMNS``, and
        one frame row (side 2) per frame.
    pairs : (m, 7) int64 ndarray
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
    hw_arr = disk_half_widths(radius)
    cdef const int64_t[::1] hw = hw_arr
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
                                    max_gt_label, max_res_label, pair_mode, radius, d, want_f, want_b,
                                    &hw[0], &bad)
                    if status != 0:
                        break
            if dstatus:
                raise DamagedPNG(frame, bad_side)
            if status == -1:
                raise MemoryError()
            if status == -2:
                raise LabelAboveLimit(frame, bad, max_res_label)
        return _rows(&wk.lab, 6), _rows(&wk.pairs, 7)
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
