# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Per-image matching and accumulation, term for term as pycocotools / lvis.

Private module (``boundary_api.instance._eval``).  The Python side (``_engine``)
flattens the evaluation into *pairs* (one image x one category, or one image
when categories are not used).  Pair ``p`` owns ground truths
``pair_g[p] .. pair_g[p+1]-1`` in the order the reference API keeps them, and
detections ``pair_d[p] .. pair_d[p+1]-1`` sorted by decreasing score (stable)
and already cut to the largest ``maxDets``.  Its IoU matrix is at
``ious[pair_o[p]]``, row-major, ``D x G``, columns in ground-truth order.

Both kernels run without the GIL on a range of pairs / categories so that the
caller can spread them over threads; results do not depend on the split.
"""

from libc.stdint cimport int64_t, int32_t, uint8_t
from libc.stdlib cimport malloc, free, qsort

# flags stored per (area, threshold, detection)
cdef enum:
    F_MATCHED = 1   # dtMatches != 0 in pycocotools' terms
    F_IGNORE = 2    # dtIgnore


def match_pairs(const int64_t[:] pair_g, const int64_t[:] pair_d, const int64_t[:] pair_o,
                const double[:] ious,
                const double[:] gt_area, const uint8_t[:] gt_ignore, const uint8_t[:] gt_crowd,
                const int64_t[:] gt_id,
                const double[:] dt_area, const uint8_t[:] dt_extra_ignore, const int64_t[:] dt_id,
                const double[:, ::1] area_rng, const double[:] iou_thrs, bint crowd_rule,
                int32_t[:, ::1] gt_perm, uint8_t[:, ::1] gt_ig,
                int32_t[:, :, ::1] dt_match, uint8_t[:, :, ::1] dt_flags,
                int32_t[:, :, ::1] gt_match,
                Py_ssize_t lo, Py_ssize_t hi):
    """Match detections to ground truths for pairs ``lo .. hi-1``, every area range.

    Outputs, per area range ``a`` (first axis) and threshold ``t``:
    ``gt_perm[a, g0 + j]`` the local index of the j-th ground truth once sorted
    with ignored ones last (stable), ``gt_ig[a, g0 + j]`` its ignore flag;
    ``dt_match[a, t, d]`` the local index of the matched ground truth or -1;
    ``dt_flags[a, t, d]`` bit 1: pycocotools' dtMatches is nonzero, bit 2:
    dtIgnore; ``gt_match[a, t, g0 + j]`` the local index of the detection
    matched to the j-th sorted ground truth, or -1.

    ``crowd_rule``: a ground truth that is already matched stays available if
    it is a crowd (pycocotools); without it, never (lvis).
    """
    cdef Py_ssize_t p, a, t, j, jj, d, G, D, A = area_rng.shape[0], T = iou_thrs.shape[0]
    cdef int64_t g0, d0, o0
    cdef double lo_a, hi_a, thr, best, v
    cdef int32_t m, g, gm
    cdef uint8_t ig, fl
    cdef int nonzero_match
    with nogil:
        for p in range(lo, hi):
            g0 = pair_g[p]
            d0 = pair_d[p]
            o0 = pair_o[p]
            G = pair_g[p + 1] - g0
            D = pair_d[p + 1] - d0
            for a in range(A):
                lo_a = area_rng[a, 0]
                hi_a = area_rng[a, 1]
                # ground truths: not ignored first, then ignored, each in order
                jj = 0
                for j in range(G):
                    if not (gt_ignore[g0 + j] or gt_area[g0 + j] < lo_a or gt_area[g0 + j] > hi_a):
                        gt_perm[a, g0 + jj] = <int32_t> j
                        gt_ig[a, g0 + jj] = 0
                        jj += 1
                for j in range(G):
                    if gt_ignore[g0 + j] or gt_area[g0 + j] < lo_a or gt_area[g0 + j] > hi_a:
                        gt_perm[a, g0 + jj] = <int32_t> j
                        gt_ig[a, g0 + jj] = 1
                        jj += 1
                for t in range(T):
                    for j in range(G):
                        gt_match[a, t, g0 + j] = -1
                    thr = iou_thrs[t]
                    if thr > 1 - 1e-10:
                        thr = 1 - 1e-10
                    for d in range(D):
                        dt_match[a, t, d0 + d] = -1
                        fl = 0
                        if G > 0:
                            best = thr
                            m = -1
                            for j in range(G):
                                g = gt_perm[a, g0 + j]
                                gm = gt_match[a, t, g0 + j]
                                # already matched (pycocotools tests gtm > 0 on the detection id)
                                if gm >= 0 and dt_id[d0 + gm] > 0:
                                    if not (crowd_rule and gt_crowd[g0 + g]):
                                        continue
                                if m > -1 and gt_ig[a, g0 + m] == 0 and gt_ig[a, g0 + j] == 1:
                                    break
                                v = ious[o0 + d * G + g]
                                if v < best:
                                    continue
                                best = v
                                m = <int32_t> j
                            if m > -1:
                                g = gt_perm[a, g0 + m]
                                dt_match[a, t, d0 + d] = g
                                gt_match[a, t, g0 + m] = <int32_t> d
                                if gt_ig[a, g0 + m]:
                                    fl = F_IGNORE
                                if gt_id[g0 + g] != 0:
                                    fl = fl | F_MATCHED
                        # unmatched detections outside the area range (or, for
                        # lvis, of a category not exhaustively annotated) are ignored
                        if not (fl & F_MATCHED):
                            if dt_area[d0 + d] < lo_a or dt_area[d0 + d] > hi_a or dt_extra_ignore[d0 + d]:
                                fl = fl | F_IGNORE
                        dt_flags[a, t, d0 + d] = fl


# How many of ``cnt`` items ``items[0:maxdet]`` keeps, Python slice rules: a
# negative ``maxdet`` drops that many from the end (pycocotools slices
# ``dtScores[0:maxDet]``, so ``maxDets = [-1]`` means "all but the last").
cdef inline int64_t _first_n(int64_t cnt, int64_t maxdet) noexcept nogil:
    if maxdet >= 0:
        return cnt if cnt < maxdet else maxdet
    cnt += maxdet
    return cnt if cnt > 0 else 0


cdef struct Det:
    double score
    int64_t seq
    int64_t idx

cdef int _det_cmp(const void* pa, const void* pb) noexcept nogil:
    # decreasing score, then increasing position: what a stable sort of -score gives
    cdef const Det* a = <const Det*> pa
    cdef const Det* b = <const Det*> pb
    if a.score > b.score:
        return -1
    if a.score < b.score:
        return 1
    if a.seq < b.seq:
        return -1
    if a.seq > b.seq:
        return 1
    return 0


def accumulate(const int64_t[:] cat_pair_start, const int64_t[:] pair_img,
               const uint8_t[:] img_selected,
               const int64_t[:] pair_g, const int64_t[:] pair_d,
               const double[:] dt_score, const uint8_t[:, ::1] gt_ig,
               const uint8_t[:, :, ::1] dt_flags,
               const int64_t[:] k_list, const int64_t[:] a_list, const int64_t[:] max_dets,
               const double[:] rec_thrs,
               double[:, :, :, :, ::1] precision, double[:, :, :, ::1] recall,
               double[:, :, :, :, ::1] scores, bint with_scores,
               Py_ssize_t lo, Py_ssize_t hi):
    """pycocotools' ``accumulate`` for output categories ``lo .. hi-1``.

    Output category ``k`` reads evaluated category ``k_list[k]``, whose pairs
    are ``cat_pair_start[kk] .. cat_pair_start[kk+1]-1`` in image order; only
    pairs whose image is selected take part.  Area ``a`` reads evaluated area
    ``a_list[a]``; each image keeps its first ``max_dets[m]`` detections, by
    Python slice rules as pycocotools slices them (negative: all but that many
    from the end; no entry may exceed what the pairs hold).  ``precision``/``scores`` are
    ``T x R x K x A x M`` and ``recall`` ``T x K x A x M``, pre-filled with -1.
    """
    cdef Py_ssize_t k, a, mi, t, r, i, n, nd, p, c, lo_i, hi_i, mid
    cdef Py_ssize_t T = dt_flags.shape[1], R = rec_thrs.shape[0]
    cdef Py_ssize_t A = a_list.shape[0], M = max_dets.shape[0]
    cdef int64_t kk, aa, maxdet, npig, g, cnt, seq, tp, fp, nsel
    cdef Det* dets = NULL
    cdef double* rc = NULL
    cdef double* pr = NULL
    cdef Py_ssize_t cap = 0
    cdef uint8_t fl
    cdef double eps = 2.220446049250313e-16   # np.spacing(1)
    cdef int err = 0
    with nogil:
        for k in range(lo, hi):
            kk = k_list[k]
            for a in range(A):
                aa = a_list[a]
                for mi in range(M):
                    maxdet = max_dets[mi]
                    # gather the detections of the selected images, image by image
                    n = 0
                    npig = 0
                    nsel = 0
                    for p in range(cat_pair_start[kk], cat_pair_start[kk + 1]):
                        if not img_selected[pair_img[p]]:
                            continue
                        nsel += 1
                        for g in range(pair_g[p], pair_g[p + 1]):
                            if gt_ig[aa, g] == 0:
                                npig += 1
                        cnt = _first_n(pair_d[p + 1] - pair_d[p], maxdet)
                        n += cnt
                    if nsel == 0 or npig == 0:
                        continue
                    if n > cap:
                        free(dets); free(rc); free(pr)
                        cap = n
                        dets = <Det*> malloc(cap * sizeof(Det))
                        rc = <double*> malloc(cap * sizeof(double))
                        pr = <double*> malloc(cap * sizeof(double))
                        if dets == NULL or rc == NULL or pr == NULL:
                            err = 1
                            break
                    seq = 0
                    for p in range(cat_pair_start[kk], cat_pair_start[kk + 1]):
                        if not img_selected[pair_img[p]]:
                            continue
                        cnt = _first_n(pair_d[p + 1] - pair_d[p], maxdet)
                        for i in range(cnt):
                            dets[seq].score = dt_score[pair_d[p] + i]
                            dets[seq].seq = seq
                            dets[seq].idx = pair_d[p] + i
                            seq += 1
                    qsort(dets, n, sizeof(Det), _det_cmp)
                    nd = n
                    for t in range(T):
                        tp = 0
                        fp = 0
                        for i in range(nd):
                            fl = dt_flags[aa, t, dets[i].idx]
                            if not (fl & F_IGNORE):
                                if fl & F_MATCHED:
                                    tp += 1
                                else:
                                    fp += 1
                            rc[i] = <double> tp / <double> npig
                            pr[i] = <double> tp / ((<double> fp + <double> tp) + eps)
                        recall[t, k, a, mi] = rc[nd - 1] if nd > 0 else 0.0
                        i = nd - 1
                        while i > 0:
                            if pr[i] > pr[i - 1]:
                                pr[i - 1] = pr[i]
                            i -= 1
                        for r in range(R):
                            # np.searchsorted(rc, thr, side='left')
                            lo_i = 0
                            hi_i = nd
                            while lo_i < hi_i:
                                mid = (lo_i + hi_i) // 2
                                if rc[mid] < rec_thrs[r]:
                                    lo_i = mid + 1
                                else:
                                    hi_i = mid
                            if lo_i < nd:
                                precision[t, r, k, a, mi] = pr[lo_i]
                                if with_scores:
                                    scores[t, r, k, a, mi] = dets[lo_i].score
                            else:
                                # pycocotools stops at the first out-of-range
                                # index: the rest stay 0
                                for c in range(r, R):
                                    precision[t, c, k, a, mi] = 0.0
                                    if with_scores:
                                        scores[t, c, k, a, mi] = 0.0
                                break
                if err:
                    break
            if err:
                break
        free(dets); free(rc); free(pr)
    if err:
        raise MemoryError()
