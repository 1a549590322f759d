# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Semantic segmentation kernel: confusion counts and per-class boundary counts of
a pair of label maps.

Private module (``boundary_api.semantic._kernels``).
"""

# Semantic segmentation kernel: one pass over a pair of label maps
# gives the confusion counts and the per-class runs, then each class's boundary comes from
# the shared run-length boundary kernel (_boundary), never from an erosion of the label map.

from libc.stdint cimport int64_t, uint32_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from boundary_api.masks._rle cimport (I64Vec, _i64_reserve, _push_interval, _area, _intersection,
                                      _new_vecs, _free_vecs)
from boundary_api.masks._boundary cimport BoundaryWork, _bw_init, _bw_free, _boundary

# ==========================================================================
# ---- semantic ----
# A label map is an H x W map of uint32 class ids in C order.  As for panoptic
# id maps, runs are collected along rows (row-major positions of the image are
# the column-major positions of its W x H transpose, and the boundary commutes
# with transposition), so ``_boundary`` is called with h = W and w = H.
#
# Ignore: a pixel whose ground truth is the ignore label belongs to no class in
# either map: it is left out of the confusion counts and out of both class
# masks *before* their boundaries are taken.
# ==========================================================================


cdef inline int _push_pair(I64Vec* v, int64_t a, int64_t b) noexcept nogil:
    if _i64_reserve(v, v.n + 2) != 0:
        return -1
    v.data[v.n] = a
    v.data[v.n + 1] = b
    v.n += 2
    return 0


def sem_accumulate(const uint32_t[:, ::1] gt, const uint32_t[:, ::1] pred, int64_t num_classes,
                   int64_t ignore_index, d_in, int64_t[:, ::1] conf, int64_t[:, ::1] bstat):
    """Add one image's confusion counts and per-class boundary counts.

    Parameters
    ----------
    gt, pred : (H, W) uint32 arrays, C-contiguous
        Ground truth and predicted label maps.  Every value must be a class
        id ``< num_classes`` or ``ignore_index``.
    num_classes : int
        Number of classes ``n`` (>= 1).
    ignore_index : int
        Ground truth pixels with this value are left out; a prediction with
        this value (when it is not a class id) predicts no class.
    d_in : int
        Erosion radius ``d`` of the boundary in pixels (>= 1), or 0 for no
        boundary counts; any size (beyond the image it changes nothing).
    conf : (n, n + 1) int64 array, C-contiguous
        ``conf[g, p]`` is incremented by the number of pixels with ground
        truth class ``g`` and predicted class ``p`` (``p = n``: no class).
    bstat : (n, 3) int64 array, C-contiguous
        Per class: boundary area of the ground truth mask, of the predicted
        mask, and of their intersection; incremented when ``d >= 1``.

    Returns
    -------
    (which, position) : (int, int)
        ``(0, -1)`` on success.  Otherwise nothing was added: ``which`` is 1
        for the ground truth, 2 for the prediction, and ``position`` the
        row-major index of the first pixel with an invalid value.
    """
    cdef Py_ssize_t H = gt.shape[0], W = gt.shape[1], N, i, c
    cdef int64_t n = num_classes, n1 = num_classes + 1
    cdef uint32_t g, p, gv, pv, cur_g, cur_p
    cdef int64_t key, cur_key, run, start_g, start_p
    cdef I64Vec runs        # (key, count) of each run of equal (gt, pred) pairs
    cdef int64_t* lb = NULL
    cdef I64Vec* gvec = NULL
    cdef I64Vec* pvec = NULL
    cdef I64Vec gb, pb
    cdef BoundaryWork ws
    cdef const uint32_t* G
    cdef const uint32_t* P
    cdef int err = 0, which = 0
    cdef int64_t bad = -1
    cdef uint32_t none, ign
    if pred.shape[0] != H or pred.shape[1] != W:
        raise ValueError(f"label maps differ in size: {H}x{W} and {pred.shape[0]}x{pred.shape[1]}")
    if n < 1 or n >= 4294967295:
        raise ValueError(f"num_classes must be in [1, 2**32 - 1), got {n}")
    if ignore_index < 0 or ignore_index > 4294967295:
        raise ValueError(f"ignore_index must be in [0, 2**32), got {ignore_index}")
    if d_in < 0:
        raise ValueError(f"d must be >= 0, got {d_in}")
    # any larger d gives the same boundaries (whole masks): clamp before int64
    cdef int64_t d = min(d_in, max(gt.shape[0], gt.shape[1]))
    if conf.shape[0] != n or conf.shape[1] != n1:
        raise ValueError(f"conf must be {n}x{n1}")
    if bstat.shape[0] != n or bstat.shape[1] != 3:
        raise ValueError(f"bstat must be {n}x3")
    N = H * W
    if N == 0:
        return 0, -1
    G = &gt[0, 0]
    P = &pred[0, 0]
    none = <uint32_t> n
    ign = <uint32_t> ignore_index
    _bw_init(&ws)
    runs.data = NULL
    runs.n = 0
    runs.cap = 0
    gb.data = NULL
    gb.n = 0
    gb.cap = 0
    pb.data = NULL
    pb.n = 0
    pb.cap = 0
    with nogil:
        lb = <int64_t*> malloc(n * 3 * sizeof(int64_t))
        if lb == NULL:
            err = 1
        else:
            memset(lb, 0, n * 3 * sizeof(int64_t))
        if not err and d > 0:
            gvec = _new_vecs(n)
            pvec = _new_vecs(n)
            if gvec == NULL or pvec == NULL:
                err = 1
        if not err:
            # one pass: validate, count (gt class, predicted class) runs, and
            # collect each class's maximal runs in both maps
            cur_key = -1
            run = 0
            cur_g = none
            cur_p = none
            start_g = 0
            start_p = 0
            for i in range(N):
                g = G[i]
                p = P[i]
                if g >= none and g != ign:
                    which = 1
                    bad = i
                    break
                if p >= none and p != ign:
                    which = 2
                    bad = i
                    break
                if g == ign:
                    gv = none
                    pv = none
                    key = -1
                else:
                    gv = g
                    pv = p if p < none else none
                    key = gv * n1 + pv
                if key != cur_key:
                    if cur_key >= 0 and _push_pair(&runs, cur_key, run) != 0:
                        err = 1
                        break
                    cur_key = key
                    run = 0
                run += 1
                if d > 0:
                    if gv != cur_g:
                        if cur_g != none and _push_interval(&gvec[cur_g], 0, start_g, i) != 0:
                            err = 1
                            break
                        cur_g = gv
                        start_g = i
                    if pv != cur_p:
                        if cur_p != none and _push_interval(&pvec[cur_p], 0, start_p, i) != 0:
                            err = 1
                            break
                        cur_p = pv
                        start_p = i
            if not err and which == 0:
                if cur_key >= 0 and _push_pair(&runs, cur_key, run) != 0:
                    err = 1
                if d > 0:
                    if cur_g != none and _push_interval(&gvec[cur_g], 0, start_g, N) != 0:
                        err = 1
                    if cur_p != none and _push_interval(&pvec[cur_p], 0, start_p, N) != 0:
                        err = 1
        if not err and which == 0 and d > 0:
            for c in range(n):
                if gvec[c].n == 0 and pvec[c].n == 0:
                    continue
                gb.n = 0
                pb.n = 0
                if _boundary(gvec[c].data, gvec[c].n, W, H, d, &ws, &gb) != 0:
                    err = 1
                    break
                if _boundary(pvec[c].data, pvec[c].n, W, H, d, &ws, &pb) != 0:
                    err = 1
                    break
                lb[3 * c] = _area(gb.data, gb.n)
                lb[3 * c + 1] = _area(pb.data, pb.n)
                lb[3 * c + 2] = _intersection(gb.data, gb.n, pb.data, pb.n)
        if not err and which == 0:
            # nothing is added unless the whole image went through
            i = 0
            while i < runs.n:
                conf[runs.data[i] // n1, runs.data[i] % n1] += runs.data[i + 1]
                i += 2
            if d > 0:
                for i in range(n * 3):
                    bstat[i // 3, i % 3] += lb[i]
        free(runs.data)
        free(lb)
        _free_vecs(gvec, n)
        _free_vecs(pvec, n)
        free(gb.data)
        free(pb.data)
        _bw_free(&ws)
    if err:
        raise MemoryError()
    return which, bad
