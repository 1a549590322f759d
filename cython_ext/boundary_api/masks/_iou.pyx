# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The IoU step of the instance evaluators: mask, boundary and box IoU of
(detection, ground truth) pairs, GIL-free.

Private module (``boundary_api.masks._iou``), used by ``boundary_api.instance._engine``.
"""

from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from cpython.bytes cimport PyBytes_FromStringAndSize

import numpy as np

from boundary_api.masks._rle cimport (I64Vec, ByteVec, WordBuf, StringTable, _decode, _encode, _area, _bbox,
                                      _intersection, _words_reserve)
from boundary_api.masks._boundary cimport (BoundaryWork, _bw_init, _bw_free, _boundary_in_box, _boundary_is_mask,
                                           _box_fill, _box_erode, _bits_row0, _runs_to_bits, ba_popcount,
                                           ba_and_popcount2d)


# Most words of ground-truth bitsets (masks and boundaries) one pair may hold
# (per thread, 16 MiB); a pair needing more is intersected as runs.
# Private; tests lower it with ``_set_pair_bits_budget``.
cdef Py_ssize_t _pair_bits_words = 1 << 21
# per ground truth of a pair: [mask_off, mask_n, bnd_off, bnd_n, area, barea,
# bbox x4 (x0, x1, y0, y1), boundary bits offset (-1: none), the bitsets'
# first word row (first row // 64), their words per column, mask bits offset
# (-1: none), the current detection's intersection]
cdef enum:
    _GSLOTS = 15


# Pixels set in both of two masks' bitsets over their bounding boxes (``bb``
# as ``_rle._bbox`` gives it, first word row ``w0``, ``nw`` words per
# column): an AND and a popcount over the columns and word rows they share.
cdef inline int64_t _bits_inter(const uint64_t* a, const int64_t* abb, int64_t aw0, int64_t anw,
                                const uint64_t* b, const int64_t* bbb, int64_t bw0, int64_t bnw) noexcept nogil:
    cdef int64_t c0 = abb[0] if abb[0] > bbb[0] else bbb[0]
    cdef int64_t c1 = abb[1] if abb[1] < bbb[1] else bbb[1]
    cdef int64_t w0 = aw0 if aw0 > bw0 else bw0
    cdef int64_t w1 = aw0 + anw if aw0 + anw < bw0 + bnw else bw0 + bnw
    if c0 >= c1 or w0 >= w1:
        return 0
    return ba_and_popcount2d(a + (c0 - abb[0]) * anw + (w0 - aw0), anw,
                             b + (c0 - bbb[0]) * bnw + (w0 - bw0), bnw, c1 - c0, w1 - w0)


cdef int _late_boundary(int64_t* gg, const int64_t* gm, int64_t h, int64_t w, int64_t d, BoundaryWork* bw,
                        I64Vec* gb, uint64_t* gbits) noexcept nogil:
    """The boundary of the ground truth ``gg`` (its mask's runs at ``gm + gg[0]``), made
    when first needed: its runs appended to ``gb`` (``gg[2]``, ``gg[3]``, its area
    ``gg[5]``) and, where it has a bitset slot (``gg[10] >= 0``), its bits set there as
    the eager path sets them.  0, or -1 when out of memory."""
    cdef int64_t need
    gg[2] = gb.n
    if _boundary_in_box(gm + gg[0], gg[1], h, w, d, gg + 6, bw, gb) != 0:
        return -1
    gg[3] = gb.n - gg[2]
    gg[5] = _area(gb.data + gg[2], gg[3])
    if gg[10] >= 0:
        need = (gg[7] - gg[6]) * gg[12]
        if bw.bits_nws == gg[12]:
            memcpy(gbits + gg[10], bw.words, need * sizeof(uint64_t))
        else:
            memset(gbits + gg[10], 0, need * sizeof(uint64_t))
            _runs_to_bits(gb.data + gg[2], gg[3], h, gg[6], gg[11] << 6, gg[12], gbits + gg[10])
    return 0


def iou_pairs(int mode,
              StringTable gt_mask, StringTable gt_bnd, const int64_t[:] gt_h,
              const uint8_t[:] gt_crowd, const double[:, ::1] gt_box,
              StringTable dt_mask, StringTable dt_bnd, const int64_t[:] dt_h,
              const double[:, ::1] dt_box,
              const int64_t[:] pair_g, const int64_t[:] pair_d, const int64_t[:] pair_o,
              double[:] out, Py_ssize_t lo, Py_ssize_t hi,
              const int64_t[:] dt_w=None, const int64_t[:] dt_d=None,
              const int64_t[:] gt_w=None, const int64_t[:] gt_d=None,
              uint8_t[:] dt_status=None, bint gt_strings=True, const int64_t[:] gt_pixels=None,
              uint8_t[:] gt_status=None):
    """The IoU step for pairs ``lo .. hi-1`` (runs without the GIL).

    Pair ``p`` owns ground truths ``pair_g[p] .. pair_g[p+1]-1`` and detections
    ``pair_d[p] .. pair_d[p+1]-1`` (indices into the gt_* / dt_* arrays,
    already in evaluation order), and writes its ``D x G`` matrix, row-major
    with one row per detection, at ``out[pair_o[p]]``.

    ``mode`` 0: mask IoU; 1: min(mask IoU, boundary IoU), plain mask IoU for
    crowd ground truth; 2: box IoU; 3: as 1, the detections' boundaries not
    read from ``dt_bnd`` but extracted here from their decoded masks
    (``dt_w``: widths, ``dt_d``: erosion radii >= 0), and only for the
    detections whose mask meets a non-crowd ground truth's: no boundary
    string is written or decoded.  A crowd ground truth's IoU is the
    intersection over the detection's area, as in pycocotools.

    ``gt_w`` and ``gt_d`` given (modes 1 and 3: widths and erosion radii >= 0
    of every ground truth): ``gt_bnd`` is not read; the boundary of every
    ground truth of the pairs (crowd ones and those of pairs without
    detections included) is extracted from the mask decoded here, used as
    runs, and encoded once for the per-annotation cache.  With ``gt_strings``
    false nothing is encoded (the returned buffer is empty) and a ground
    truth's boundary is made only when a detection's mask meets its mask
    (crowd ones never), the pairs without detections skipped.

    ``dt_status`` given (modes 0 and 3, with ``dt_w``): the detections'
    strings are checked where they are decoded instead of trusted:
    ``dt_status[k]`` becomes 0 (good), 1 (malformed) or 2 (not
    ``dt_h * dt_w`` pixels) for every detection decoded
    (those of pairs with a ground truth), and a bad one is skipped (its row
    of IoUs stays as ``out`` held it) rather than raising.

    ``gt_pixels`` and ``gt_status`` given (modes 0 and 3): the ground truths'
    strings are checked where they are decoded: ``gt_status[k]`` becomes 0
    (good), 1 (malformed) or 2 (not ``gt_pixels[k]`` pixels) for every ground
    truth decoded (those of pairs with a detection), and a bad one is taken as
    an empty mask (its column of IoUs is then 0) rather than raising.

    Returns the number of detection boundaries extracted (mode 3); with
    ``gt_w``, ``(that number, buffer, offsets)``: ground truth
    ``pair_g[lo] + i``'s boundary string is ``buffer[offsets[i]:offsets[i + 1]]``
    (the strings :func:`boundary_api.masks._boundary.boundary_buffer` makes).
    """
    cdef Py_ssize_t p, g, dd, G, D, ng, k
    cdef int64_t g0, d0, inter, ua, bi
    cdef double iou, biou, bw, bh, ga, da, bu
    cdef I64Vec gm, gb, dm, db
    cdef int64_t* goff = NULL      # per gt of the pair: _GSLOTS values
    cdef int64_t dbb[4]
    cdef int64_t* gg
    cdef int64_t dn, darea, dbn = 0, dbarea = 0
    cdef int64_t* dbp = NULL
    cdef int err = 0
    cdef int have_db
    cdef Py_ssize_t extracted = 0
    cdef BoundaryWork bwk
    cdef BoundaryWork bwk2         # the ground truths' late boundaries (bwk may hold a detection's bits)
    cdef ByteVec enc
    cdef int fresh = gt_w is not None
    cdef int late = fresh and not gt_strings
    cdef int checking = dt_status is not None
    cdef int gt_checking = gt_status is not None
    cdef int64_t tot
    cdef int64_t gbase = 0
    cdef int64_t[:] of
    cdef WordBuf gbits             # the pair's ground-truth boundaries as bitsets (mode 3)
    cdef int64_t gbn, need, nwg, r0
    cdef int pair_bits, use_bits, need_b
    cdef int64_t dr0w = 0, dnw = 0
    if fresh:
        if mode != 1 and mode != 3:
            raise ValueError("iou_pairs: gt_w and gt_d are for modes 1 and 3")
        if gt_d is None or gt_w.shape[0] < gt_h.shape[0] or gt_d.shape[0] < gt_h.shape[0]:
            raise ValueError("iou_pairs needs gt_w and gt_d for every ground truth")
        if hi > lo:
            gbase = pair_g[lo]
            for k in range(pair_g[lo], pair_g[hi]):
                if gt_d[k] < 0:
                    raise ValueError(f"d must be >= 0, got {gt_d[k]} at ground truth {k}")
            offs = np.zeros(pair_g[hi] - pair_g[lo] + 1, np.int64)
        else:
            offs = np.zeros(1, np.int64)
    else:
        offs = np.zeros(1, np.int64)
    of = offs
    enc.data = NULL; enc.n = 0; enc.cap = 0
    if checking and ((mode != 0 and mode != 3) or dt_status.shape[0] < dt_h.shape[0]
                     or dt_w is None or dt_w.shape[0] < dt_h.shape[0]):
        raise ValueError("iou_pairs: dt_status is for modes 0 and 3, one per detection, with dt_w")
    if gt_checking and ((mode != 0 and mode != 3) or gt_pixels is None or gt_status.shape[0] < gt_h.shape[0]
                        or gt_pixels.shape[0] < gt_h.shape[0]):
        raise ValueError("iou_pairs: gt_status is for modes 0 and 3, one per ground truth, with gt_pixels")
    if mode == 3:
        if dt_w is None or dt_d is None or dt_w.shape[0] < dt_h.shape[0] or dt_d.shape[0] < dt_h.shape[0]:
            raise ValueError("iou_pairs mode 3 needs dt_w and dt_d for every detection")
        for k in range(pair_d[lo] if hi > lo else 0, pair_d[hi] if hi > lo else 0):
            if dt_d[k] < 0:
                raise ValueError(f"d must be >= 0, got {dt_d[k]} at detection {k}")
    _bw_init(&bwk)
    _bw_init(&bwk2)
    gbits.data = NULL; gbits.cap = 0
    gm.data = NULL; gm.n = 0; gm.cap = 0
    gb.data = NULL; gb.n = 0; gb.cap = 0
    dm.data = NULL; dm.n = 0; dm.cap = 0
    db.data = NULL; db.n = 0; db.cap = 0
    with nogil:
        ng = 0
        for p in range(lo, hi):
            G = pair_g[p + 1] - pair_g[p]
            D = pair_d[p + 1] - pair_d[p]
            if G == 0 or (D == 0 and (not fresh or late)):
                continue
            g0 = pair_g[p]
            d0 = pair_d[p]
            if mode == 2:
                for dd in range(D):
                    for g in range(G):
                        out[pair_o[p] + dd * G + g] = _box_iou(&dt_box[d0 + dd, 0], &gt_box[g0 + g, 0],
                                                               gt_crowd[g0 + g])
                continue
            if G > ng:
                free(goff)
                goff = <int64_t*> malloc(G * _GSLOTS * sizeof(int64_t))
                if goff == NULL:
                    err = 1
                    break
                ng = G
            gm.n = 0
            gb.n = 0
            gbn = 0
            # the detections' masks and boundaries meet the ground truths' as
            # bitsets when every ground truth of the pair has them (mode 3)
            pair_bits = mode == 3 and D > 0
            for g in range(G):
                gg = goff + _GSLOTS * g
                gg[0] = gm.n
                tot = _decode(gt_mask.ptr[g0 + g], gt_mask.size[g0 + g], &gm)
                if gt_checking:
                    # (the ground truth's check, done here on the one decode)
                    if tot < 0 or tot != gt_pixels[g0 + g]:
                        gt_status[g0 + g] = 1 if tot < 0 else 2
                        gm.n = gg[0]   # (an empty mask)
                    else:
                        gt_status[g0 + g] = 0
                elif tot < 0:
                    err = 2
                    break
                gg[1] = gm.n - gg[0]
                gg[4] = _area(gm.data + gg[0], gg[1])
                _bbox(gm.data + gg[0], gg[1], gt_h[g0 + g], gg + 6)
                gg[2] = gb.n
                gg[3] = 0
                gg[5] = 0
                if late:
                    gg[3] = -1  # (made when first needed: _late_boundary)
                elif fresh:
                    # every ground truth's boundary, from the runs just decoded:
                    # used as runs here, encoded once for the cache
                    if gg[1] > 0 and _boundary_in_box(gm.data + gg[0], gg[1], gt_h[g0 + g], gt_w[g0 + g],
                                                      gt_d[g0 + g], gg + 6, &bwk, &gb) != 0:
                        err = 1
                        break
                    gg[3] = gb.n - gg[2]
                    gg[5] = _area(gb.data + gg[2], gg[3])
                    if gt_strings and _encode(gb.data + gg[2], gg[3], gt_h[g0 + g] * gt_w[g0 + g], &enc) != 0:
                        err = 1
                        break
                    of[g0 + g - gbase + 1] = enc.n
                elif (mode == 1 or mode == 3) and not gt_crowd[g0 + g]:
                    if _decode(gt_bnd.ptr[g0 + g], gt_bnd.size[g0 + g], &gb) < 0:
                        err = 2
                        break
                    gg[3] = gb.n - gg[2]
                    gg[5] = _area(gb.data + gg[2], gg[3])
                gg[10] = -1
                gg[13] = -1
                if pair_bits and gg[1] > 0:
                    # the mask and (not crowd) the boundary as bitsets over the
                    # mask's box, rows from a multiple of 64 (as the
                    # detections' below): the boundary's just left by the
                    # boundary kernel, or set from the runs
                    r0 = _bits_row0(gg + 6)
                    nwg = (gg[9] - r0 + 63) >> 6
                    need = (gg[7] - gg[6]) * nwg
                    if gbn + (need if gt_crowd[g0 + g] else 2 * need) > _pair_bits_words:
                        pair_bits = 0
                        continue
                    if _words_reserve(&gbits, gbn + 2 * need) != 0:
                        err = 1
                        break
                    gg[11] = r0 >> 6
                    gg[12] = nwg
                    if not gt_crowd[g0 + g]:
                        if late:
                            pass  # (set with the boundary, when first needed)
                        elif fresh and bwk.bits_nws == nwg:
                            memcpy(gbits.data + gbn, bwk.words, need * sizeof(uint64_t))
                        else:
                            memset(gbits.data + gbn, 0, need * sizeof(uint64_t))
                            _runs_to_bits(gb.data + gg[2], gg[3], gt_h[g0 + g], gg[6], r0, nwg, gbits.data + gbn)
                        gg[10] = gbn
                        gbn += need
                    memset(gbits.data + gbn, 0, need * sizeof(uint64_t))
                    _runs_to_bits(gm.data + gg[0], gg[1], gt_h[g0 + g], gg[6], r0, nwg, gbits.data + gbn)
                    gg[13] = gbn
                    gbn += need
            if err:
                break
            for dd in range(D):
                dm.n = 0
                tot = _decode(dt_mask.ptr[d0 + dd], dt_mask.size[d0 + dd], &dm)
                if checking:
                    # (the results' check, done here on the one decode)
                    if tot < 0:
                        dt_status[d0 + dd] = 1
                        continue
                    if tot != dt_h[d0 + dd] * dt_w[d0 + dd]:
                        dt_status[d0 + dd] = 2
                        continue
                    dt_status[d0 + dd] = 0
                elif tot < 0:
                    err = 2
                    break
                dn = dm.n
                darea = _area(dm.data, dn)
                _bbox(dm.data, dn, dt_h[d0 + dd], dbb)
                have_db = 0
                use_bits = 0
                if pair_bits and dn > 0:
                    for g in range(G):
                        gg = goff + _GSLOTS * g
                        if gg[1] > 0 and not (dbb[1] <= gg[6] or gg[7] <= dbb[0] or dbb[3] <= gg[8]
                                              or gg[9] <= dbb[2]):
                            use_bits = 1
                            break
                    if use_bits:
                        # the mask's bits over its box (when it fits one tile
                        # of the boundary kernel and is more than its boundary)
                        use_bits = _box_fill(dm.data, dn, dt_h[d0 + dd], dt_d[d0 + dd], dbb, &bwk)
                        if use_bits < 0:
                            err = 1
                            break
                if use_bits:
                    # intersections with every ground truth's mask, then (once)
                    # the boundary from the same bits and its intersections
                    dr0w = _bits_row0(dbb) >> 6
                    dnw = bwk.bits_nws
                    need_b = 0
                    for g in range(G):
                        gg = goff + _GSLOTS * g
                        out[pair_o[p] + dd * G + g] = 0.0
                        gg[14] = 0
                        if gg[1] == 0 or dbb[1] <= gg[6] or gg[7] <= dbb[0] or dbb[3] <= gg[8] or gg[9] <= dbb[2]:
                            continue
                        gg[14] = _bits_inter(bwk.words, dbb, dr0w, dnw, gbits.data + gg[13], gg + 6, gg[11], gg[12])
                        if gg[14] > 0 and not gt_crowd[g0 + g]:
                            need_b = 1
                    if need_b:
                        extracted += 1
                        _box_erode(dbb, dt_d[d0 + dd], &bwk)
                        dbarea = ba_popcount(bwk.words, (dbb[1] - dbb[0]) * dnw)
                    for g in range(G):
                        gg = goff + _GSLOTS * g
                        inter = gg[14]
                        if inter == 0:
                            continue
                        k = pair_o[p] + dd * G + g
                        if gt_crowd[g0 + g]:
                            out[k] = <double> inter / <double> darea
                            continue
                        iou = <double> inter / <double> (darea + gg[4] - inter)
                        if gg[3] < 0 and _late_boundary(gg, gm.data, gt_h[g0 + g], gt_w[g0 + g], gt_d[g0 + g],
                                                        &bwk2, &gb, gbits.data) != 0:
                            err = 1
                            break
                        bi = _bits_inter(bwk.words, dbb, dr0w, dnw, gbits.data + gg[10], gg + 6, gg[11], gg[12])
                        if bi == 0:
                            biou = 0.0
                        else:
                            biou = <double> bi / <double> (dbarea + gg[5] - bi)
                        out[k] = biou if biou < iou else iou
                    if err:
                        break
                    continue
                for g in range(G):
                    gg = goff + _GSLOTS * g
                    k = pair_o[p] + dd * G + g
                    out[k] = 0.0
                    # boxes must share a pixel for the masks to intersect
                    if dn == 0 or gg[1] == 0:
                        continue
                    if dbb[1] <= gg[6] or gg[7] <= dbb[0] or dbb[3] <= gg[8] or gg[9] <= dbb[2]:
                        continue
                    inter = _intersection(dm.data, dn, gm.data + gg[0], gg[1])
                    if inter == 0:
                        continue
                    if gt_crowd[g0 + g]:
                        out[k] = <double> inter / <double> darea
                        continue
                    iou = <double> inter / <double> (darea + gg[4] - inter)
                    if mode == 1 or mode == 3:
                        if not have_db:
                            db.n = 0
                            if mode == 3:
                                extracted += 1
                                if _boundary_is_mask(dbb, dt_d[d0 + dd]):
                                    # no (2d+1)-square fits: the boundary is the mask itself
                                    dbp = dm.data
                                    dbn = dn
                                    dbarea = darea
                                    have_db = 1
                                elif _boundary_in_box(dm.data, dn, dt_h[d0 + dd], dt_w[d0 + dd], dt_d[d0 + dd],
                                                      dbb, &bwk, &db) != 0:
                                    err = 1
                                    break
                            elif _decode(dt_bnd.ptr[d0 + dd], dt_bnd.size[d0 + dd], &db) < 0:
                                err = 2
                                break
                            if not have_db:
                                dbp = db.data
                                dbn = db.n
                                dbarea = _area(dbp, dbn)
                                have_db = 1
                        if gg[3] < 0 and _late_boundary(gg, gm.data, gt_h[g0 + g], gt_w[g0 + g], gt_d[g0 + g],
                                                        &bwk2, &gb, gbits.data) != 0:
                            err = 1
                            break
                        bi = _intersection(dbp, dbn, gb.data + gg[2], gg[3])
                        if bi == 0:
                            biou = 0.0
                        else:
                            biou = <double> bi / <double> (dbarea + gg[5] - bi)
                        if biou < iou:
                            iou = biou
                    out[k] = iou
                if err:
                    break
            if err:
                break
        free(goff)
        free(gm.data); free(gb.data); free(dm.data); free(db.data); free(gbits.data)
    _bw_free(&bwk)
    _bw_free(&bwk2)
    try:
        if err == 1:
            raise MemoryError()
        if err == 2:
            raise ValueError("malformed RLE string in the IoU step")
        if fresh:
            return extracted, PyBytes_FromStringAndSize(enc.data, enc.n), offs
        return extracted
    finally:
        free(enc.data)


cdef inline double _box_iou(const double* D, const double* G, int crowd) noexcept nogil:
    # pycocotools' bbIou, term for term
    cdef double w, h, i, u, ga, da
    ga = G[2] * G[3]
    da = D[2] * D[3]
    w = _fmin(D[2] + D[0], G[2] + G[0]) - _fmax(D[0], G[0])
    if w <= 0:
        return 0.0
    h = _fmin(D[3] + D[1], G[3] + G[1]) - _fmax(D[1], G[1])
    if h <= 0:
        return 0.0
    i = w * h
    u = da if crowd else da + ga - i
    return i / u

cdef inline double _fmin(double a, double b) noexcept nogil:
    return a if a < b else b

cdef inline double _fmax(double a, double b) noexcept nogil:
    return a if a > b else b


def _set_pair_bits_budget(Py_ssize_t words):
    """Private (tests): set how many words of ground-truth boundary bitsets
    one pair may hold before its boundaries are intersected as runs (>= 0);
    returns the previous value.  Results do not depend on it."""
    global _pair_bits_words
    if words < 0:
        raise ValueError(f"budget must be >= 0 words, got {words}")
    old = _pair_bits_words
    _pair_bits_words = words
    return old
