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
What the summaries average is gathered from the accumulated arrays by
``_summary``.
"""

from libc.stdint cimport int64_t, int32_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, free, qsort
from libc.math cimport INFINITY

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
                Py_ssize_t lo, Py_ssize_t hi, bint store_dt_match=True):
    """Match detections to ground truths for pairs ``lo .. hi-1``, every area range.

    Outputs, per area range ``a`` (first axis) and threshold ``t``:
    ``gt_perm[a, g0 + j]`` the local index of the j-th ground truth once sorted
    with ignored ones last (stable), ``gt_ig[a, g0 + j]`` its ignore flag;
    ``dt_match[a, t, d]`` the local index of the matched ground truth or -1;
    ``dt_flags[a, t, d]`` bit 1: pycocotools' dtMatches is nonzero, bit 2:
    dtIgnore; ``gt_match[a, t, g0 + j]`` the local index of the detection
    matched to the j-th sorted ground truth, or -1.  Without
    ``store_dt_match``, ``dt_match`` is not written (it may then be any
    array): the flags are all accumulation needs, and ``dt_match`` (4 bytes
    per area, threshold and detection) can be made again when asked for.

    ``crowd_rule``: a ground truth that is already matched stays available if
    it is a crowd (pycocotools); without it, never (lvis).

    A detection whose largest IoU in its pair is below a threshold cannot
    match at that threshold (the search takes only IoUs >= the threshold):
    it skips the search (a NaN IoU counts as +inf here and a NaN threshold
    never skips, so both search as before).
    """
    cdef Py_ssize_t p, a, t, j, jj, d, G, D, A = area_rng.shape[0], T = iou_thrs.shape[0]
    cdef Py_ssize_t maxD = 0
    cdef int64_t g0, d0, o0
    cdef double lo_a, hi_a, thr, best, v, mx
    cdef int32_t m, g, gm
    cdef uint8_t ig, fl
    cdef int nonzero_match
    cdef double* dmax = NULL
    for p in range(lo, hi):
        if pair_d[p + 1] - pair_d[p] > maxD:
            maxD = pair_d[p + 1] - pair_d[p]
    dmax = <double*> malloc((maxD + 1) * sizeof(double))
    if dmax == NULL:
        raise MemoryError()
    with nogil:
        for p in range(lo, hi):
            g0 = pair_g[p]
            d0 = pair_d[p]
            o0 = pair_o[p]
            G = pair_g[p + 1] - g0
            D = pair_d[p + 1] - d0
            for d in range(D):
                mx = -1.0
                for j in range(G):
                    v = ious[o0 + d * G + j]
                    if v != v:
                        mx = INFINITY   # NaN never skips the search
                        break
                    if v > mx:
                        mx = v
                dmax[d] = mx
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
                        if store_dt_match:
                            dt_match[a, t, d0 + d] = -1
                        fl = 0
                        if G > 0 and not (dmax[d] < thr):
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
                                if store_dt_match:
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
    free(dmax)


# How many of ``cnt`` items ``items[0:maxdet]`` keeps, Python slice rules: a
# negative ``maxdet`` drops that many from the end (pycocotools slices
# ``dtScores[0:maxDet]``, so ``maxDets = [-1]`` means "all but the last").
cdef inline int64_t _first_n(int64_t cnt, int64_t maxdet) noexcept nogil:
    if maxdet >= 0:
        return cnt if cnt < maxdet else maxdet
    cnt += maxdet
    return cnt if cnt > 0 else 0


# A detection to sort: ``key`` orders by decreasing score (``_desc_key``),
# ``seq`` is its position in gathering order (image order, then rank).
cdef struct SortItem:
    uint64_t key
    uint64_t seq

cdef union _DoubleBits:
    double d
    uint64_t u

cdef inline uint64_t _desc_key(double score) noexcept nogil:
    # An unsigned key whose increasing order is the decreasing order of the
    # (non-NaN) scores, equal scores (0.0 and -0.0 too) giving equal keys.
    cdef _DoubleBits b
    b.d = score if score != 0.0 else 0.0
    if b.u >> 63:
        b.u = ~b.u               # negative: larger magnitude sorts lower
    else:
        b.u = b.u ^ (<uint64_t> 1 << 63)
    return ~b.u


cdef void _sort_items(SortItem* items, SortItem* tmp, Py_ssize_t n) noexcept nogil:
    """Stable sort of ``items`` by ``key`` (``tmp``: scratch of ``n``): what
    pycocotools' ``np.argsort(-scores, kind='mergesort')`` gives, as the
    items are gathered in ``seq`` order.  Insertion sort when short, else a
    least-significant-digit radix sort by bytes (stable by construction),
    skipping the bytes all keys share (the high bytes of scores in [0, 1])."""
    cdef Py_ssize_t i, j, b, c, total
    cdef SortItem x
    cdef SortItem* src = items
    cdef SortItem* dst = tmp
    cdef SortItem* sw
    cdef Py_ssize_t counts[8][256]
    cdef int shift
    cdef uint64_t key
    if n <= 48:
        for i in range(1, n):
            x = items[i]
            j = i - 1
            while j >= 0 and items[j].key > x.key:
                items[j + 1] = items[j]
                j -= 1
            items[j + 1] = x
        return
    for b in range(8):
        for c in range(256):
            counts[b][c] = 0
    for i in range(n):
        key = items[i].key
        for b in range(8):
            counts[b][(key >> (8 * b)) & 255] += 1
    for b in range(8):
        shift = 8 * b
        if counts[b][(src[0].key >> shift) & 255] == n:
            continue  # every key has this byte: the pass would not move anything
        total = 0
        for c in range(256):
            j = counts[b][c]
            counts[b][c] = total
            total += j
        for i in range(n):
            c = (src[i].key >> shift) & 255
            dst[counts[b][c]] = src[i]
            counts[b][c] += 1
        sw = src
        src = dst
        dst = sw
    if src != items:
        for i in range(n):
            items[i] = src[i]


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

    The detections of a category are gathered and sorted once, for the
    largest cut any ``max_dets`` entry makes; each (area, maxDets) cell
    then walks that order keeping the detections its cut keeps.  A subset
    of a stable order is the subset's stable order, so every cell sees the
    order pycocotools' ``np.argsort(-dtScores, kind='mergesort')`` gives it.
    A ``max_dets`` entry that keeps the same detections as an earlier one
    (no image of the category holds more than either) has that entry's
    cells, copied.
    """
    cdef Py_ssize_t k, a, mi, m2, t, r, i, j, n, nd, p, c, q, lo_i, hi_i, mid, nt
    cdef Py_ssize_t T = dt_flags.shape[1], R = rec_thrs.shape[0]
    cdef Py_ssize_t A = a_list.shape[0], M = max_dets.shape[0]
    cdef int64_t kk, aa, npig, g, cnt, cm, seq, ni, nsel
    cdef SortItem* items = NULL
    cdef SortItem* tmp = NULL
    cdef int64_t* gidx = NULL     # gathering order: detection index, rank in its pair, pair's count
    cdef int64_t* grank = NULL
    cdef int64_t* gcnt = NULL
    cdef int64_t* sidx = NULL     # sorted order: detection index
    cdef int64_t* kept = NULL     # per maxDets entry: the detections it keeps, in sorted order
    cdef int64_t* nkept = NULL
    cdef Py_ssize_t* msrc = NULL  # per maxDets entry: the first entry keeping the same
    cdef uint64_t* rec = NULL     # per true positive: not-ignored detections up to it << 32 | its position
    cdef double* tpr = NULL       # precision at each true positive, then its envelope
    cdef const int64_t* kp
    cdef const uint8_t* frow
    cdef Py_ssize_t cap = 0
    cdef uint8_t fl
    cdef int64_t nig
    cdef double eps = 2.220446049250313e-16   # np.spacing(1)
    cdef double pr0, env0, thr, dn, tp0, fp0
    cdef bint rec_sorted = 1
    cdef uint64_t low32 = 0xFFFFFFFFu
    cdef int err = 0
    for r in range(1, R):
        if not (rec_thrs[r - 1] <= rec_thrs[r]):
            rec_sorted = 0
    nkept = <int64_t*> malloc((M + 1) * sizeof(int64_t))
    msrc = <Py_ssize_t*> malloc((M + 1) * sizeof(Py_ssize_t))
    if nkept == NULL or msrc == NULL:
        free(nkept); free(msrc)
        raise MemoryError()
    with nogil:
        for k in range(lo, hi):
            kk = k_list[k]
            # gather the detections of the selected images, image by image,
            # each image's first max over m of _first_n(cnt, max_dets[m])
            n = 0
            nsel = 0
            for p in range(cat_pair_start[kk], cat_pair_start[kk + 1]):
                if not img_selected[pair_img[p]]:
                    continue
                nsel += 1
                cnt = pair_d[p + 1] - pair_d[p]
                cm = 0
                for mi in range(M):
                    c = _first_n(cnt, max_dets[mi])
                    if c > cm:
                        cm = c
                n += cm
            if nsel == 0:
                continue
            if n > cap:
                free(items); free(tmp); free(gidx); free(grank); free(gcnt); free(sidx)
                free(kept); free(rec); free(tpr)
                cap = n
                if n > 0x7fffffff:   # (positions are kept in 32 bits)
                    err = 1
                    break
                items = <SortItem*> malloc(cap * sizeof(SortItem))
                tmp = <SortItem*> malloc(cap * sizeof(SortItem))
                gidx = <int64_t*> malloc(cap * sizeof(int64_t))
                grank = <int64_t*> malloc(cap * sizeof(int64_t))
                gcnt = <int64_t*> malloc(cap * sizeof(int64_t))
                sidx = <int64_t*> malloc(cap * sizeof(int64_t))
                kept = <int64_t*> malloc(cap * (M if M > 0 else 1) * sizeof(int64_t))
                rec = <uint64_t*> malloc(cap * sizeof(uint64_t))
                tpr = <double*> malloc(cap * sizeof(double))
                if (items == NULL or tmp == NULL or gidx == NULL or grank == NULL or gcnt == NULL
                        or sidx == NULL or kept == NULL or rec == NULL or tpr == NULL):
                    err = 1
                    break
            seq = 0
            for p in range(cat_pair_start[kk], cat_pair_start[kk + 1]):
                if not img_selected[pair_img[p]]:
                    continue
                cnt = pair_d[p + 1] - pair_d[p]
                cm = 0
                for mi in range(M):
                    c = _first_n(cnt, max_dets[mi])
                    if c > cm:
                        cm = c
                for i in range(cm):
                    items[seq].key = _desc_key(dt_score[pair_d[p] + i])
                    items[seq].seq = <uint64_t> seq
                    gidx[seq] = pair_d[p] + i
                    grank[seq] = i
                    gcnt[seq] = cnt
                    seq += 1
            _sort_items(items, tmp, n)
            for i in range(n):
                sidx[i] = gidx[items[i].seq]
            for mi in range(M):
                nd = 0
                for i in range(n):
                    j = <Py_ssize_t> items[i].seq
                    if grank[j] < _first_n(gcnt[j], max_dets[mi]):
                        kept[mi * cap + nd] = sidx[i]
                        nd += 1
                nkept[mi] = nd
                # the same kept detections as an earlier entry: the same cells
                msrc[mi] = mi
                for m2 in range(mi):
                    if msrc[m2] == m2 and nkept[m2] == nd:
                        for j in range(nd):
                            if kept[m2 * cap + j] != kept[mi * cap + j]:
                                break
                        else:
                            msrc[mi] = m2
                            break
            for a in range(A):
                aa = a_list[a]
                npig = 0
                for p in range(cat_pair_start[kk], cat_pair_start[kk + 1]):
                    if not img_selected[pair_img[p]]:
                        continue
                    for g in range(pair_g[p], pair_g[p + 1]):
                        if gt_ig[aa, g] == 0:
                            npig += 1
                if npig == 0:
                    continue
                dn = <double> npig
                for t in range(T):
                    frow = &dt_flags[aa, t, 0]
                    for mi in range(M):
                        if msrc[mi] != mi:
                            m2 = msrc[mi]
                            recall[t, k, a, mi] = recall[t, k, a, m2]
                            for r in range(R):
                                precision[t, r, k, a, mi] = precision[t, r, k, a, m2]
                                if with_scores:
                                    scores[t, r, k, a, mi] = scores[t, r, k, a, m2]
                            continue
                        nd = nkept[mi]
                        kp = kept + mi * cap
                        # pycocotools: tp/fp cumulative sums, rc = tp / npig,
                        # pr = tp / (fp + tp + eps), pr made non-increasing from
                        # the right, then searchsorted(rc, recThrs, 'left').  rc
                        # only rises at a true positive and pr only peaks there, so
                        # only the true positives (and position 0) are computed:
                        # the walk records where each one is and how many
                        # detections up to it are not ignored (tp + fp there),
                        # without a branch on the flags
                        nt = 0
                        ni = 0
                        for j in range(nd):
                            fl = frow[kp[j]]
                            nig = 1 - ((fl >> 1) & 1)
                            ni += nig
                            rec[nt] = (<uint64_t> ni << 32) | <uint64_t> j
                            nt += nig & fl & 1
                        # the same terms as the cumulative sums give: at the
                        # q-th true positive tp = q + 1, fp = (not ignored) - tp
                        for q in range(nt):
                            tpr[q] = <double> (q + 1) / ((<double> (<int64_t> (rec[q] >> 32) - (q + 1))
                                                          + <double> (q + 1)) + eps)
                        pr0 = 0.0
                        if nd > 0:
                            fl = frow[kp[0]]
                            nig = 1 - ((fl >> 1) & 1)
                            tp0 = <double> (nig & fl & 1)
                            fp0 = <double> (nig - (nig & fl & 1))
                            pr0 = tp0 / ((fp0 + tp0) + eps)
                        recall[t, k, a, mi] = <double> nt / dn if nd > 0 else 0.0
                        q = nt - 1
                        while q > 0:
                            if tpr[q] > tpr[q - 1]:
                                tpr[q - 1] = tpr[q]
                            q -= 1
                        env0 = pr0
                        if nt > 0 and tpr[0] > env0:
                            env0 = tpr[0]
                        c = 0   # (sorted thresholds) where the search of the last one ended
                        for r in range(R):
                            thr = rec_thrs[r]
                            # the first position whose rc is not below thr
                            if nd == 0:
                                lo_i = 0
                                q = -1
                            elif not ((<double> (1 if nt > 0 and (rec[0] & low32) == 0 else 0)) / dn < thr):
                                lo_i = 0
                                q = -1
                            else:
                                if rec_sorted:
                                    # the first q with (q + 1) / npig >= thr does
                                    # not fall as thr rises
                                    while c < nt and <double> (c + 1) / dn < thr:
                                        c += 1
                                    q = c
                                else:
                                    lo_i = 0
                                    hi_i = nt
                                    while lo_i < hi_i:
                                        mid = (lo_i + hi_i) // 2
                                        if <double> (mid + 1) / dn < thr:
                                            lo_i = mid + 1
                                        else:
                                            hi_i = mid
                                    q = lo_i
                                lo_i = <Py_ssize_t> (rec[q] & low32) if q < nt else nd
                            if lo_i < nd:
                                precision[t, r, k, a, mi] = env0 if q < 0 else tpr[q]
                                if with_scores:
                                    scores[t, r, k, a, mi] = dt_score[kp[lo_i]]
                            else:
                                # pycocotools stops at the first out-of-range
                                # index: the rest stay 0
                                for c in range(r, R):
                                    precision[t, c, k, a, mi] = 0.0
                                    if with_scores:
                                        scores[t, c, k, a, mi] = 0.0
                                break
        free(items); free(tmp); free(gidx); free(grank); free(gcnt); free(sidx)
        free(kept); free(rec); free(tpr)
    free(nkept); free(msrc)
    if err:
        raise MemoryError()

cdef struct KeyedScore:
    double neg      # the negated score: ascending, NaN last
    int64_t idx     # position in the input: ties keep it

cdef int _neg_cmp(const void* pa, const void* pb) noexcept nogil:
    # np.lexsort's order of a float key (NaN last), ties by position: the
    # order a stable sort gives
    cdef const KeyedScore* a = <const KeyedScore*> pa
    cdef const KeyedScore* b = <const KeyedScore*> pb
    cdef bint an = a.neg != a.neg
    cdef bint bn = b.neg != b.neg
    if an != bn:
        return 1 if an else -1
    if not an:
        if a.neg < b.neg:
            return -1
        if a.neg > b.neg:
            return 1
    if a.idx < b.idx:
        return -1
    if a.idx > b.idx:
        return 1
    return 0


def order_by_key_and_score(const int64_t[:] key, const double[:] neg, int64_t nkeys, int64_t[:] order):
    """``np.lexsort((neg, key))`` into ``order``: by ``key`` (each in
    ``0 .. nkeys-1``), then ``neg`` ascending with NaN last, then position.

    A counting sort by key, then each key's run sorted by score: linear in
    the number of rows plus ``nkeys``, where a lexsort sorts twice.
    """
    cdef Py_ssize_t n = key.shape[0], i, j, s, e
    cdef int64_t* start = NULL
    cdef KeyedScore* buf = NULL
    cdef int err = 0
    if neg.shape[0] != n or order.shape[0] != n:
        raise ValueError("key, neg and order must have the same length")
    start = <int64_t*> malloc((nkeys + 1) * sizeof(int64_t))
    buf = <KeyedScore*> malloc((n if n > 0 else 1) * sizeof(KeyedScore))
    if start == NULL or buf == NULL:
        free(start); free(buf)
        raise MemoryError()
    with nogil:
        for j in range(nkeys + 1):
            start[j] = 0
        for i in range(n):
            if key[i] < 0 or key[i] >= nkeys:
                err = 1
                break
            start[key[i] + 1] += 1
        if not err:
            for j in range(nkeys):
                start[j + 1] += start[j]
            # stable placement by key
            for i in range(n):
                j = key[i]
                buf[start[j]].neg = neg[i]
                buf[start[j]].idx = i
                start[j] += 1
            # start[j] is now the end of key j's run; sort each run
            s = 0
            for j in range(nkeys):
                e = start[j]
                if e - s > 1:
                    qsort(&buf[s], e - s, sizeof(KeyedScore), _neg_cmp)
                s = e
            for i in range(n):
                order[i] = buf[i].idx
    free(start); free(buf)
    if err:
        raise ValueError("a key is outside 0 .. nkeys-1")


# bits of an entry of ``bootstrap_cells``: true positive at threshold t (bit t),
# ignored at threshold t (bit 16 + t), in a block of more than one entry, and
# the block going on with the next entry
cdef enum:
    B_IGNORE = 16
    B_MULTI = 30
    B_CONT = 31


def bootstrap_cells(const int64_t[:] cell_start, const int64_t[:] cell_group, Py_ssize_t T,
                    const int32_t[:] ent_img, const uint32_t[:] ent_bits, const uint8_t[:] cell_multi,
                    const int64_t[:] group_start, const int64_t[:] group_img, const int64_t[:] group_ngt,
                    const int32_t[:, ::1] counts, const double[:] rec_thrs,
                    double[:, ::1] psum, double[:, ::1] recall,
                    Py_ssize_t lo, Py_ssize_t hi):
    """pycocotools' ``accumulate`` of many image multisets.

    A *cell* is one (area, maxDets, category): the detections that
    ``accumulate`` reads there (not ignored at one IoU threshold at least), in
    its order (decreasing score, then image, then rank in the image).  Entry
    ``j`` belongs to image ``ent_img[j]``; ``ent_bits[j]`` says, per threshold
    ``t < T <= 16``, whether it is a true positive (bit t) or ignored (bit
    16 + t), and whether it is one of a *block* of entries of the same image and
    score (bit 30; bit 31: the block goes on with entry j + 1).  Resample ``b``
    holds image ``i`` ``counts[b, i]`` times: the result is what ``accumulate``
    gives for the image list in which each image is repeated so, copies next to
    one another (``rec_thrs`` ascending).  The ground truths that count number
    ``sum(counts[b, group_img] * group_ngt)`` over the cell's group (CSR
    ``group_start``).

    Outputs for resamples ``lo .. hi-1``, at column ``cell * T + t``:
    ``psum`` the sum over the recall thresholds of the precision, ``recall``
    the recall; both -1 where the cell has no ground truth.
    """
    cdef Py_ssize_t b, s, j, jj, be, t, e, cap = 0, lo_i, hi_i, mid, gi, prev, n
    cdef Py_ssize_t S = cell_group.shape[0], R = rec_thrs.shape[0]
    cdef Py_ssize_t NG = group_start.shape[0] - 1
    cdef int64_t w, c, need
    cdef uint32_t bits, one = 1
    cdef double npig, total, dw
    cdef double eps = 2.220446049250313e-16   # np.spacing(1)
    cdef double tp[16]
    cdef double fp[16]
    cdef Py_ssize_t ne[16]
    cdef double* ev_rc = NULL
    cdef double* ev_pr = NULL
    cdef double* ev_tp = NULL
    cdef double* ev_fp = NULL
    cdef uint8_t run[16]
    cdef double* gsum = <double*> malloc((NG if NG > 0 else 1) * sizeof(double))
    cdef int err = 0
    if gsum == NULL:
        raise MemoryError()
    if T > 16:
        free(gsum)
        raise ValueError("at most 16 IoU thresholds")
    with nogil:
        for b in range(lo, hi):
            for gi in range(NG):
                total = 0.0
                for j in range(group_start[gi], group_start[gi + 1]):
                    total = total + <double> (counts[b, group_img[j]] * group_ngt[j])
                gsum[gi] = total
            for s in range(S):
                npig = gsum[cell_group[s]]
                if npig == 0:
                    for t in range(T):
                        psum[b, s * T + t] = -1.0
                        recall[b, s * T + t] = -1.0
                    continue
                # room for the events (ends of runs of true positives) of one threshold
                n = cell_start[s + 1] - cell_start[s]
                need = n
                if cell_multi[s]:
                    need = 0
                    j = cell_start[s]
                    while j < cell_start[s + 1]:
                        be = j + 1
                        if ent_bits[j] & (one << B_MULTI):
                            while ent_bits[be - 1] & (one << B_CONT):
                                be += 1
                            need += counts[b, ent_img[j]] * (be - j)
                        else:
                            need += 1
                        j = be
                if need * T > cap:
                    cap = 2 * need * T + 64
                    free(ev_rc)
                    free(ev_pr)
                    free(ev_tp)
                    free(ev_fp)
                    ev_rc = <double*> malloc(cap * sizeof(double))
                    ev_pr = <double*> malloc(cap * sizeof(double))
                    ev_tp = <double*> malloc(cap * sizeof(double))
                    ev_fp = <double*> malloc(cap * sizeof(double))
                    if ev_rc == NULL or ev_pr == NULL or ev_tp == NULL or ev_fp == NULL:
                        err = 1
                        break
                for t in range(T):
                    tp[t] = 0.0
                    fp[t] = 0.0
                    ne[t] = 0
                    run[t] = 0
                j = cell_start[s]
                while j < cell_start[s + 1]:
                    bits = ent_bits[j]
                    w = counts[b, ent_img[j]]
                    if not (bits & (one << B_MULTI)):
                        if w > 0:
                            # w copies in a row: one run; its end has the highest precision
                            dw = <double> w
                            for t in range(T):
                                if bits & (one << (B_IGNORE + t)):
                                    continue
                                if bits & (one << t):
                                    tp[t] = tp[t] + dw
                                    if not run[t]:
                                        ev_fp[t * need + ne[t]] = fp[t]
                                        ne[t] += 1
                                        run[t] = 1
                                    ev_tp[t * need + ne[t] - 1] = tp[t]
                                else:
                                    fp[t] = fp[t] + dw
                                    run[t] = 0
                        j += 1
                        continue
                    be = j + 1
                    while ent_bits[be - 1] & (one << B_CONT):
                        be += 1
                    # equal scores in one image: the copies follow one another whole
                    for c in range(w):
                        for jj in range(j, be):
                            bits = ent_bits[jj]
                            for t in range(T):
                                if bits & (one << (B_IGNORE + t)):
                                    continue
                                if bits & (one << t):
                                    tp[t] = tp[t] + 1.0
                                    if not run[t]:
                                        ev_fp[t * need + ne[t]] = fp[t]
                                        ne[t] += 1
                                        run[t] = 1
                                    ev_tp[t * need + ne[t] - 1] = tp[t]
                                else:
                                    fp[t] = fp[t] + 1.0
                                    run[t] = 0
                    j = be
                for t in range(T):
                    recall[b, s * T + t] = tp[t] / npig
                    # each run of true positives ends at its highest precision: the
                    # recall and precision there (pycocotools' formulas)
                    for e in range(t * need, t * need + ne[t]):
                        ev_rc[e] = ev_tp[e] / npig
                        ev_pr[e] = ev_tp[e] / ((ev_fp[e] + ev_tp[e]) + eps)
                    # precision made monotone (from the right)
                    e = ne[t] - 1
                    while e > 0:
                        if ev_pr[t * need + e] > ev_pr[t * need + e - 1]:
                            ev_pr[t * need + e - 1] = ev_pr[t * need + e]
                        e -= 1
                    # recall threshold r reads the first position whose recall reaches
                    # it, inside the first run whose end does: the thresholds in
                    # (rc[e-1], rc[e]] read run e
                    total = 0.0
                    prev = 0
                    for e in range(ne[t]):
                        lo_i = prev
                        hi_i = R
                        while lo_i < hi_i:
                            mid = (lo_i + hi_i) // 2
                            if rec_thrs[mid] <= ev_rc[t * need + e]:
                                lo_i = mid + 1
                            else:
                                hi_i = mid
                        if lo_i > prev:
                            total = total + ev_pr[t * need + e] * <double> (lo_i - prev)
                            prev = lo_i
                        if prev == R:
                            break
                    psum[b, s * T + t] = total
            if err:
                break
        free(ev_rc); free(ev_pr); free(ev_tp); free(ev_fp); free(gsum)
    if err:
        raise MemoryError()
