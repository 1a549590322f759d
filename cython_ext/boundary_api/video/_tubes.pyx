# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The IoU step of video instance segmentation: tube IoUs of tracks.

A track is a list of per-frame masks (compressed RLE strings, a frame absent
where the track has no mask).  As YouTube-VIS' evaluator defines it, the IoU
of two tracks is the sum over frames of their intersections divided by the
sum over frames of their unions, frames walked pairwise up to the shorter
track's length (Python's ``zip``): a frame where one track is absent adds
the other's area to the union, two masks of different sizes add nothing
(pycocotools' merge of such masks is empty), and an empty total union gives
0.  HQ-YTVIS' Tube-Boundary IoU is ``min(tube mask IoU, tube boundary IoU)``,
the boundary IoU summed the same way over the frames' Boundary IoU bands
(the mask layer's boundary kernel, ``d`` per frame), and the plain tube mask
IoU for crowd ground truth.

Pairs (video x category) are laid out as the instance engine lays them out
(``pair_g``, ``pair_d``, ``pair_o``), so that its matching and accumulation
run on the result unchanged.
"""
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from boundary_api.masks._rle cimport I64Vec, StringTable, _decode, _area, _bbox, _intersection, _new_vecs, _free_vecs
from boundary_api.masks._boundary cimport BoundaryWork, _bw_init, _bw_free, _boundary_in_box


class BadMask(ValueError):
    """A frame's RLE string that does not decode to its ``h x w`` pixels
    (``frame``: its index in the frame table)."""

    def __init__(self, frame):
        super().__init__(f"frame mask {frame} is not a valid RLE of its size")
        self.frame = frame


cdef inline double _ratio(int64_t i, int64_t u) noexcept nogil:
    return (<double> i) / (<double> u) if u > 0 else 0.0


cdef int _load(Py_ssize_t k, StringTable masks, const int64_t* fh, const int64_t* fw, const int64_t* fd,
               int mode, I64Vec* m, I64Vec* b, int64_t* area, int64_t* barea,
               BoundaryWork* bw) noexcept nogil:
    """Decode frame ``k`` into ``m`` (and its band into ``b``); 0, -1 out of
    memory, -2 a bad string."""
    cdef int64_t total, bb[4]
    cdef Py_ssize_t j
    m.n = 0
    total = _decode(masks.ptr[k], masks.size[k], m)
    if total < 0 or total != fh[k] * fw[k]:
        return -2
    area[0] = _area(m.data, m.n)
    if mode == 1:
        b.n = 0
        barea[0] = 0
        if m.n:
            _bbox(m.data, m.n, fh[k], bb)
            if _boundary_in_box(m.data, m.n, fh[k], fw[k], fd[k], bb, bw, b) != 0:
                return -1
            for j in range(0, b.n, 2):
                barea[0] += b.data[j + 1] - b.data[j]
    return 0


def tube_ious(int mode, StringTable masks, const int64_t[::1] fh, const int64_t[::1] fw, const int64_t[::1] fd,
              const int64_t[::1] track_f0, const int64_t[::1] track_nf,
              const int64_t[::1] gt_track, const int64_t[::1] dt_track, const uint8_t[::1] gt_crowd,
              const int64_t[::1] pair_g, const int64_t[::1] pair_d, const int64_t[::1] pair_o,
              double[::1] out, Py_ssize_t lo, Py_ssize_t hi, uint8_t[::1] empty=None):
    """Tube IoUs of pairs ``lo .. hi-1`` (runs without the GIL).

    Parameters
    ----------
    mode : int
        0: tube mask IoU; 1: HQ-YTVIS' tube boundary IoU (min with the mask
        IoU; the mask IoU for crowd ground truth).
    masks : StringTable
        One compressed RLE string per frame entry.
    fh, fw, fd : int64 arrays
        Per frame entry: height (-1: the track has no mask in that frame),
        width, and the band's erosion radius (mode 1).
    track_f0, track_nf : int64 arrays
        Per track: its first frame entry and its number of frames.
    gt_track, dt_track : int64 arrays
        The track of each ground truth / detection, in the engine's order.
    gt_crowd : uint8 array
    pair_g, pair_d, pair_o, out
        The engine's pair layout; pair ``p`` writes its D x G matrix (one
        row per detection) at ``out[pair_o[p]]``.
    empty : uint8 array, optional
        Laid out as ``out``: bit 0 set where the summed mask union is 0, bit 1
        where the summed band union is (mode 1): where YouTube-VIS' evaluator
        prints that mask sizes may not match.

    Raises
    ------
    BadMask
        A frame's string is not a valid RLE of ``fh x fw`` pixels.
    """
    cdef Py_ssize_t p, g, d, G, D, n, f, nf, k, kd, kg, nmax
    cdef int64_t g0, d0, inter
    cdef int status = 0
    cdef Py_ssize_t bad = -1
    cdef I64Vec* mv = NULL
    cdef I64Vec* bv = NULL
    cdef int64_t* acc = NULL        # per (d, g): mask inter, mask union, band inter, band union
    cdef int64_t* area = NULL       # per track of the pair: area, band area, frame entry (-1 absent)
    cdef int64_t* ent = NULL
    cdef int64_t* barea = NULL
    cdef int64_t* nfr = NULL
    cdef double mi, bi
    cdef BoundaryWork bw
    cdef int64_t* a
    cdef uint8_t* em = &empty[0] if empty is not None and empty.shape[0] > 0 else NULL
    if mode != 0 and mode != 1:
        raise ValueError(f"tube_ious: mode must be 0 or 1, got {mode}")
    if hi <= lo:
        return
    nmax = 0
    for p in range(lo, hi):
        n = (pair_g[p + 1] - pair_g[p]) + (pair_d[p + 1] - pair_d[p])
        if n > nmax:
            nmax = n
    _bw_init(&bw)
    mv = _new_vecs(max(nmax, 1))
    bv = _new_vecs(max(nmax, 1))
    area = <int64_t*> calloc(max(nmax, 1), sizeof(int64_t))
    barea = <int64_t*> calloc(max(nmax, 1), sizeof(int64_t))
    ent = <int64_t*> calloc(max(nmax, 1), sizeof(int64_t))
    nfr = <int64_t*> calloc(max(nmax, 1), sizeof(int64_t))
    try:
        if mv == NULL or bv == NULL or area == NULL or barea == NULL or ent == NULL or nfr == NULL:
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
                    nfr[k] = track_nf[gt_track[g0 + k]] if k < G else track_nf[dt_track[d0 + k - G]]
                    if nfr[k] > nf:
                        nf = nfr[k]
                for f in range(nf):
                    for k in range(n):
                        ent[k] = -1
                        if f < nfr[k]:
                            kd = (track_f0[gt_track[g0 + k]] if k < G else track_f0[dt_track[d0 + k - G]]) + f
                            if fh[kd] >= 0:
                                ent[k] = kd
                                status = _load(kd, masks, &fh[0], &fw[0], &fd[0], mode, &mv[k], &bv[k],
                                               &area[k], &barea[k], &bw)
                                if status != 0:
                                    bad = kd
                                    break
                    if status != 0:
                        break
                    for d in range(D):
                        kd = G + d
                        for g in range(G):
                            if f >= nfr[kd] or f >= nfr[g]:
                                continue  # (zip stops at the shorter track)
                            a = acc + 4 * (d * G + g)
                            if ent[kd] >= 0 and ent[g] >= 0:
                                if fh[ent[kd]] != fh[ent[g]] or fw[ent[kd]] != fw[ent[g]]:
                                    continue  # (masks of two sizes merge into nothing)
                                inter = _intersection(mv[kd].data, mv[kd].n, mv[g].data, mv[g].n)
                                a[0] += inter
                                a[1] += area[kd] + area[g] - inter
                                if mode == 1:
                                    inter = _intersection(bv[kd].data, bv[kd].n, bv[g].data, bv[g].n)
                                    a[2] += inter
                                    a[3] += barea[kd] + barea[g] - inter
                            elif ent[g] >= 0:
                                a[1] += area[g]
                                a[3] += barea[g]
                            elif ent[kd] >= 0:
                                a[1] += area[kd]
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
            raise BadMask(bad)
    finally:
        free(acc)
        _free_vecs(mv, max(nmax, 1))
        _free_vecs(bv, max(nmax, 1))
        free(area)
        free(barea)
        free(ent)
        free(nfr)
        _bw_free(&bw)
