# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The IoU step of video instance segmentation: tube IoUs of tracks.

A track is a list of per-frame masks (compressed RLE strings, or a ground
truth's uncompressed counts as read from its file, a frame absent where the
track has no mask).  As YouTube-VIS' evaluator defines it, the IoU
of two tracks is the sum over frames of their intersections divided by the
sum over frames of their unions, frames walked pairwise up to the shorter
track's length (Python's ``zip``): a frame where one track is absent adds
the other's area to the union, two masks of different sizes add nothing
(pycocotools' merge of such masks is empty), and an empty total union gives
0.  HQ-YTVIS' Tube-Boundary IoU is ``min(tube mask IoU, tube boundary IoU)``,
the boundary IoU summed the same way over the frames' Boundary IoU bands
(the mask layer's boundary kernel, ``d`` per frame), and the plain tube mask
IoU for crowd ground truth.  The bands have tracks of their own: HQ-YTVIS
makes a band for every frame, an absent one too (an empty band of the size
its annotation declares, which then counts as a mask of that size), and
from another list of masks where a ground truth has ``segmentations_refined``.

Pairs (video x category) are laid out as the instance engine lays them out
(``pair_g``, ``pair_d``, ``pair_o``), so that its matching and accumulation
run on the result unchanged.
"""
from libc.stdint cimport int64_t, int32_t, uint8_t, uint16_t, uint32_t
from libc.stdlib cimport calloc, realloc, free
from libc.string cimport memset

from boundary_api.masks._rle cimport (I64Vec, StringTable, _decode, _area, _bbox, _intersection, _new_vecs,
                                      _free_vecs, _i64_reserve)
from boundary_api.masks._boundary cimport BoundaryWork, _bw_init, _bw_free, _boundary_in_box


class BadMask(ValueError):
    """A frame's RLE string that does not decode to its ``h x w`` pixels
    (``frame``: its index in its frame table; ``band``: whether that is the
    band table)."""

    def __init__(self, frame, band=False):
        super().__init__(f"frame mask {frame} is not a valid RLE of its size")
        self.frame = frame
        self.band = band


# --------------------------------------------------------------------------
# column tables: a mask whose every column holds at most one run, as that run's
# first and last row per column; two such masks of one size intersect in one
# pass over their common columns (a loop the compiler vectorises) instead of a
# merge of their interval lists (about twice as many steps, each a branch-free
# but serial one).  Masks with a column of several runs keep the merge.
# --------------------------------------------------------------------------
cdef struct ColTab:
    int32_t* rs            # per column c0 .. c1-1: first row of its run (0, 0: none)
    int32_t* re            # one past its last row
    Py_ssize_t cap
    int64_t c0
    int64_t c1
    bint single            # every column holds at most one run (else the table is not used)


cdef extern from *:
    """
    /* pixels in both of two masks given as column tables over the same n columns */
    static int64_t ba_col_inter(const int32_t *pa, const int32_t *qa, const int32_t *pb,
                                const int32_t *qb, Py_ssize_t n) {
        int64_t tot = 0;
        Py_ssize_t j;
        for (j = 0; j < n; j++) {
            int32_t s = pa[j] > pb[j] ? pa[j] : pb[j];
            int32_t e = qa[j] < qb[j] ? qa[j] : qb[j];
            int32_t t = e - s;
            tot += t > 0 ? t : 0;
        }
        return tot;
    }
    /* fill the zeroed column table rs/re (columns c0 ..) of the n/2 sorted
       intervals se of a mask of h rows; 0 when a column holds two runs */
    static int ba_col_fill(const int64_t *se, Py_ssize_t n, int64_t h, int64_t c0,
                           int32_t *rs, int32_t *re) {
        int64_t c = c0, cb = c0 * h;
        Py_ssize_t i;
        for (i = 0; i < n; i += 2) {
            int64_t s = se[i], e = se[i + 1];
            /* the column of s, stepped to from the last one (a division only for a jump) */
            if (s - cb >= 8 * h) {
                c = s / h;
                cb = c * h;
            } else {
                while (s - cb >= h) {
                    c++;
                    cb += h;
                }
            }
            for (;;) {
                int64_t j = c - c0;
                if (re[j] != 0)
                    return 0;
                rs[j] = (int32_t) (s - cb);
                if (e - cb <= h) {
                    re[j] = (int32_t) (e - cb);
                    break;
                }
                re[j] = (int32_t) h;
                c++;
                cb += h;
                s = cb;
            }
        }
        return 1;
    }
    """
    int64_t _col_inter "ba_col_inter" (const int32_t* pa, const int32_t* qa, const int32_t* pb,
                                       const int32_t* qb, Py_ssize_t n) noexcept nogil
    int _col_fill "ba_col_fill" (const int64_t* se, Py_ssize_t n, int64_t h, int64_t c0, int32_t* rs,
                                 int32_t* re) noexcept nogil


cdef int _col_table(const int64_t* se, Py_ssize_t n, int64_t h, ColTab* t) noexcept nogil:
    """The column table of a mask's intervals (``single`` cleared when a
    column holds two runs, or rows do not fit int32); 0, -1 out of memory."""
    cdef int64_t ncol
    cdef int32_t* p
    t.single = 0
    t.c0 = t.c1 = 0
    if n == 0:
        t.single = 1
        return 0
    if h <= 0 or h > 2147483647:
        return 0
    t.c0 = se[0] // h
    t.c1 = (se[n - 1] - 1) // h + 1
    ncol = t.c1 - t.c0
    if ncol > t.cap:
        p = <int32_t*> realloc(t.rs, <size_t> ncol * sizeof(int32_t))
        if p == NULL:
            return -1
        t.rs = p
        p = <int32_t*> realloc(t.re, <size_t> ncol * sizeof(int32_t))
        if p == NULL:
            return -1
        t.re = p
        t.cap = ncol
    memset(t.rs, 0, <size_t> ncol * sizeof(int32_t))
    memset(t.re, 0, <size_t> ncol * sizeof(int32_t))
    t.single = _col_fill(se, n, h, t.c0, t.rs, t.re)
    return 0


cdef inline int64_t _tab_intersection(ColTab* a, ColTab* b) noexcept nogil:
    cdef int64_t lo = a.c0 if a.c0 > b.c0 else b.c0
    cdef int64_t hi = a.c1 if a.c1 < b.c1 else b.c1
    if hi <= lo:
        return 0
    return _col_inter(a.rs + (lo - a.c0), a.re + (lo - a.c0), b.rs + (lo - b.c0), b.re + (lo - b.c0), hi - lo)


cdef inline double _ratio(int64_t i, int64_t u) noexcept nogil:
    return (<double> i) / (<double> u) if u > 0 else 0.0


cdef int64_t _counts_runs(const unsigned char* p, Py_ssize_t nbytes, I64Vec* m) noexcept nogil:
    """An uncompressed RLE (counts: zeros, then ones, ...; as the scanner
    writes them, ``nbytes / 2`` uint16 words in native byte order, a count of
    2**16 - 1 or more as that word and then its high and low 16 bits) as
    maximal ones-intervals in ``m``, as pycocotools' ``frPyObjects`` and a
    decode of its string would give them; the pixel total, -1 out of memory
    or for words that end inside a count."""
    cdef const uint16_t* c = <const uint16_t*> p
    cdef Py_ssize_t n = nbytes // 2, i = 0, k = 0
    cdef int64_t pos = 0, v
    if _i64_reserve(m, n + 2) != 0:
        return -1
    while i < n:
        v = c[i]
        i += 1
        if v == 0xFFFF:
            if i + 2 > n:
                return -1
            v = (<int64_t> c[i] << 16) | c[i + 1]
            i += 2
        if (k & 1) and v:
            if m.n > 0 and m.data[m.n - 1] == pos:
                m.data[m.n - 1] = pos + v
            else:
                m.data[m.n] = pos
                m.data[m.n + 1] = pos + v
                m.n += 2
        pos += v
        k += 1
    return pos


cdef int _decode_frame(Py_ssize_t k, StringTable masks, const int64_t* fh, const int64_t* fw,
                       I64Vec* m, const uint8_t* kind) noexcept nogil:
    """Decode frame ``k`` into ``m`` (a compressed string, or where ``kind[k]``
    is 2 uncompressed counts); 0, or -2 for a bad one."""
    cdef int64_t total
    m.n = 0
    if kind != NULL and kind[k] == 2:
        total = _counts_runs(masks.ptr[k], masks.size[k], m)
    else:
        total = _decode(masks.ptr[k], masks.size[k], m)
    if total < 0 or total != fh[k] * fw[k]:
        return -2
    return 0


cdef int _band(Py_ssize_t k, StringTable masks, const int64_t* fh, const int64_t* fw, const int64_t* fd,
               I64Vec* m, I64Vec* b, int64_t* barea, BoundaryWork* bw, const uint8_t* kind) noexcept nogil:
    """The band of frame ``k`` of the band table into ``b`` (``m``: scratch);
    0, -1 out of memory, -2 a bad string."""
    cdef int64_t bb[4]
    cdef Py_ssize_t j
    b.n = 0
    barea[0] = 0
    if _decode_frame(k, masks, fh, fw, m, kind) != 0:
        return -2
    if m.n:
        _bbox(m.data, m.n, fh[k], bb)
        if _boundary_in_box(m.data, m.n, fh[k], fw[k], fd[k], bb, bw, b) != 0:
            return -1
        for j in range(0, b.n, 2):
            barea[0] += b.data[j + 1] - b.data[j]
    return 0


def tube_ious(int mode, StringTable masks, const int64_t[::1] fh, const int64_t[::1] fw,
              const int64_t[::1] track_f0, const int64_t[::1] track_nf,
              const int64_t[::1] gt_track, const int64_t[::1] dt_track, const uint8_t[::1] gt_crowd,
              const int64_t[::1] pair_g, const int64_t[::1] pair_d, const int64_t[::1] pair_o,
              double[::1] out, Py_ssize_t lo, Py_ssize_t hi, uint8_t[::1] empty=None,
              StringTable bands=None, const int64_t[::1] bfh=None, const int64_t[::1] bfw=None,
              const int64_t[::1] bsh=None, const int64_t[::1] bsw=None, const int64_t[::1] bfd=None,
              const int64_t[::1] band_f0=None, const int64_t[::1] band_nf=None,
              const uint8_t[::1] fkind=None, const uint8_t[::1] bkind=None):
    """Tube IoUs of pairs ``lo .. hi-1`` (runs without the GIL).

    Parameters
    ----------
    mode : int
        0: tube mask IoU; 1: HQ-YTVIS' tube boundary IoU (min with the mask
        IoU; the mask IoU for crowd ground truth).
    masks : StringTable
        One compressed RLE string per frame entry (or, where ``fkind`` is 2,
        the bytes of its uncompressed counts as ``video._scan`` writes them).
    fh, fw : int64 arrays
        Per frame entry: height (-1: the track has no mask in that frame) and width.
    track_f0, track_nf : int64 arrays
        Per track: its first frame entry and its number of frames.
    gt_track, dt_track : int64 arrays
        The track of each ground truth / detection, in the engine's order
        (also the indices of their band tracks).
    gt_crowd : uint8 array
    pair_g, pair_d, pair_o, out
        The engine's pair layout; pair ``p`` writes its D x G matrix (one
        row per detection) at ``out[pair_o[p]]``.
    empty : uint8 array, optional
        Laid out as ``out``: bit 0 set where the summed mask union is 0, bit 1
        where the summed band union is (mode 1): where YouTube-VIS' evaluator
        prints that mask sizes may not match.
    bands, bfh, bfw, bsh, bsw, bfd, band_f0, band_nf
        Mode 1: the band tracks.  Per band frame entry: the mask its band is
        made of (``bfh`` -1: none, an empty band), the band's size as the
        frames are compared (``bsh`` -1: no band at all, as an absent mask),
        the erosion radius ``bfd``; per track its entries.
    fkind, bkind : uint8 arrays, optional
        Per frame entry of ``masks`` / ``bands``: 2 where it holds
        uncompressed counts (a ground truth's ``{"size", "counts": [...]}``,
        evaluated as pycocotools' ``frPyObjects`` would encode it), else
        anything (a compressed string); None: every entry a string.

    Raises
    ------
    BadMask
        A frame's string is not a valid RLE of its size.
    """
    cdef Py_ssize_t p, g, d, G, D, n, f, nf, k, kd, kb, nmax
    cdef int64_t g0, d0, inter
    cdef int status = 0
    cdef int in_band = 0
    cdef Py_ssize_t bad = -1
    cdef I64Vec* mv = NULL
    cdef ColTab* ct = NULL          # per track of the pair: its mask's column table
    cdef I64Vec* bv = NULL
    cdef I64Vec scratch
    cdef int64_t* acc = NULL        # per (d, g): mask inter, mask union, band inter, band union
    cdef int64_t* area = NULL       # per track of the pair
    cdef int64_t* ent = NULL        # its frame entry at the current frame (-1 absent)
    cdef int64_t* barea = NULL
    cdef int64_t* bent = NULL       # its band entry at the current frame (-1 none)
    cdef int64_t* nfr = NULL
    cdef int64_t* bnfr = NULL
    cdef double mi, bi
    cdef BoundaryWork bw
    cdef int64_t* a
    cdef uint8_t* em = &empty[0] if empty is not None and empty.shape[0] > 0 else NULL
    cdef const uint8_t* mk = NULL
    cdef const uint8_t* bk = NULL
    if mode != 0 and mode != 1:
        raise ValueError(f"tube_ious: mode must be 0 or 1, got {mode}")
    if mode == 1 and (bands is None or bfh is None or bfw is None or bsh is None or bsw is None or bfd is None
                      or band_f0 is None or band_nf is None):
        raise ValueError("tube_ious: mode 1 needs the band tracks")
    if fkind is not None:
        if fkind.shape[0] != masks.n:
            raise ValueError("tube_ious: fkind must have one entry per frame entry of masks")
        if masks.n:
            mk = &fkind[0]
    if bkind is not None and mode == 1:
        if bkind.shape[0] != bands.n:
            raise ValueError("tube_ious: bkind must have one entry per frame entry of bands")
        if bands.n:
            bk = &bkind[0]
    if hi <= lo:
        return
    nmax = 1
    for p in range(lo, hi):
        n = (pair_g[p + 1] - pair_g[p]) + (pair_d[p + 1] - pair_d[p])
        if n > nmax:
            nmax = n
    _bw_init(&bw)
    scratch.data = NULL
    scratch.n = scratch.cap = 0
    mv = _new_vecs(nmax)
    ct = <ColTab*> calloc(nmax, sizeof(ColTab))
    bv = _new_vecs(nmax)
    area = <int64_t*> calloc(nmax, sizeof(int64_t))
    barea = <int64_t*> calloc(nmax, sizeof(int64_t))
    ent = <int64_t*> calloc(nmax, sizeof(int64_t))
    bent = <int64_t*> calloc(nmax, sizeof(int64_t))
    nfr = <int64_t*> calloc(nmax, sizeof(int64_t))
    bnfr = <int64_t*> calloc(nmax, sizeof(int64_t))
    try:
        if (mv == NULL or ct == NULL or bv == NULL or area == NULL or barea == NULL or ent == NULL or bent == NULL
                or nfr == NULL or bnfr == NULL):
            raise MemoryError()
        with nogil:
            for p in range(lo, hi):
                g0 = pair_g[p]
                d0 = pair_d[p]
                G = pair_g[p + 1] - g0
                D = pair_d[p + 1] - d0
                if G == 0 or D == 0:
                    continue
                n = G + D
                free(acc)
                acc = <int64_t*> calloc(D * G * 4, sizeof(int64_t))
                if acc == NULL:
                    status = -1
                    break
                # tracks of the pair: ground truths first, then detections
                nf = 0
                for k in range(n):
                    kd = gt_track[g0 + k] if k < G else dt_track[d0 + k - G]
                    nfr[k] = track_nf[kd]
                    bnfr[k] = band_nf[kd] if mode == 1 else 0
                    if nfr[k] > nf:
                        nf = nfr[k]
                    if bnfr[k] > nf:
                        nf = bnfr[k]
                for f in range(nf):
                    for k in range(n):
                        kd = gt_track[g0 + k] if k < G else dt_track[d0 + k - G]
                        ent[k] = -1
                        if f < nfr[k] and fh[track_f0[kd] + f] >= 0:
                            ent[k] = track_f0[kd] + f
                            if _decode_frame(ent[k], masks, &fh[0], &fw[0], &mv[k], mk) != 0:
                                status = -2
                                bad = ent[k]
                                break
                            area[k] = _area(mv[k].data, mv[k].n)
                            if _col_table(mv[k].data, mv[k].n, fh[ent[k]], &ct[k]) != 0:
                                status = -1
                                break
                        bent[k] = -1
                        barea[k] = 0
                        bv[k].n = 0
                        if mode == 1 and f < bnfr[k] and bsh[band_f0[kd] + f] >= 0:
                            kb = band_f0[kd] + f
                            bent[k] = kb
                            if bfh[kb] >= 0:
                                status = _band(kb, bands, &bfh[0], &bfw[0], &bfd[0], &scratch, &bv[k], &barea[k],
                                               &bw, bk)
                                if status != 0:
                                    bad = kb
                                    in_band = 1
                                    break
                    if status != 0:
                        break
                    for d in range(D):
                        kd = G + d
                        for g in range(G):
                            a = acc + 4 * (d * G + g)
                            if f < nfr[kd] and f < nfr[g]:  # (zip stops at the shorter track)
                                if ent[kd] >= 0 and ent[g] >= 0:
                                    # (masks of two sizes merge into nothing)
                                    if fh[ent[kd]] == fh[ent[g]] and fw[ent[kd]] == fw[ent[g]]:
                                        if ct[kd].single and ct[g].single:
                                            inter = _tab_intersection(&ct[kd], &ct[g])
                                        else:
                                            inter = _intersection(mv[kd].data, mv[kd].n, mv[g].data, mv[g].n)
                                        a[0] += inter
                                        a[1] += area[kd] + area[g] - inter
                                elif ent[g] >= 0:
                                    a[1] += area[g]
                                elif ent[kd] >= 0:
                                    a[1] += area[kd]
                            if mode == 1 and f < bnfr[kd] and f < bnfr[g]:
                                if bent[kd] >= 0 and bent[g] >= 0:
                                    if bsh[bent[kd]] == bsh[bent[g]] and bsw[bent[kd]] == bsw[bent[g]]:
                                        inter = _intersection(bv[kd].data, bv[kd].n, bv[g].data, bv[g].n)
                                        a[2] += inter
                                        a[3] += barea[kd] + barea[g] - inter
                                elif bent[g] >= 0:
                                    a[3] += barea[g]
                                elif bent[kd] >= 0:
                                    a[3] += barea[kd]
                if status != 0:
                    break
                for d in range(D):
                    for g in range(G):
                        a = acc + 4 * (d * G + g)
                        mi = _ratio(a[0], a[1])
                        if mode == 1 and not gt_crowd[g0 + g]:
                            bi = _ratio(a[2], a[3])
                            if bi < mi:
                                mi = bi
                        out[pair_o[p] + d * G + g] = mi
                        if em != NULL:
                            em[pair_o[p] + d * G + g] = (a[1] == 0) | ((mode == 1 and a[3] == 0) << 1)
        if status == -1:
            raise MemoryError()
        if status == -2:
            raise BadMask(bad, bool(in_band))
    finally:
        free(acc)
        _free_vecs(mv, nmax)
        if ct != NULL:
            for k in range(nmax):
                free(ct[k].rs)
                free(ct[k].re)
        free(ct)
        _free_vecs(bv, nmax)
        free(scratch.data)
        free(area)
        free(barea)
        free(ent)
        free(bent)
        free(nfr)
        free(bnfr)
        _bw_free(&bw)
