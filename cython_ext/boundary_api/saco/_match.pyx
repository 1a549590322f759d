# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""cgF1's per-pair matching, GIL-free: one optimal assignment of predictions to ground
truths per pair (SciPy's ``linear_sum_assignment`` on ``-IoU``, the very same
assignment, ties included), counted at every IoU threshold.

Private module (``boundary_api.saco._match``), used by ``boundary_api.saco``.

The assignment is the shortest augmenting path method of Crouse (IEEE TAES 52(4), 2016)
in the form SciPy (>= 1.6) runs it: a tall matrix is transposed, the rows are augmented
in order, the columns still open are scanned from the last one to the first with a
remove-by-swap list, and of several columns at the same shortest distance the one
scanned last wins unless an earlier one is unassigned (a new sink).  Every floating
point operation is SciPy's, in SciPy's order, so the assignment (not only its total)
is SciPy's.
"""

from libc.stdint cimport int64_t
from libc.stdlib cimport malloc, free
from libc.math cimport INFINITY

import numpy as np


cdef struct Work:
    double* cost
    double* u
    double* v
    double* spc
    int64_t* path
    int64_t* row4col
    int64_t* col4row
    int64_t* remaining
    char* SR
    char* SC
    Py_ssize_t cap_r
    Py_ssize_t cap_c


cdef int _work_reserve(Work* w, Py_ssize_t nr, Py_ssize_t nc) noexcept nogil:
    """Room for an ``nr x nc`` problem (``nr <= nc``); 0 when done, -1 out of memory."""
    cdef Py_ssize_t n = nr * nc
    if nr <= w.cap_r and nc <= w.cap_c:
        return 0
    if nr > w.cap_r:
        w.cap_r = nr if nr > 2 * w.cap_r else 2 * w.cap_r
    if nc > w.cap_c:
        w.cap_c = nc if nc > 2 * w.cap_c else 2 * w.cap_c
    _work_free(w)
    w.cost = <double*> malloc(w.cap_r * w.cap_c * sizeof(double))
    w.u = <double*> malloc(w.cap_r * sizeof(double))
    w.v = <double*> malloc(w.cap_c * sizeof(double))
    w.spc = <double*> malloc(w.cap_c * sizeof(double))
    w.path = <int64_t*> malloc(w.cap_c * sizeof(int64_t))
    w.row4col = <int64_t*> malloc(w.cap_c * sizeof(int64_t))
    w.col4row = <int64_t*> malloc(w.cap_r * sizeof(int64_t))
    w.remaining = <int64_t*> malloc(w.cap_c * sizeof(int64_t))
    w.SR = <char*> malloc(w.cap_r)
    w.SC = <char*> malloc(w.cap_c)
    if (w.cost == NULL or w.u == NULL or w.v == NULL or w.spc == NULL or w.path == NULL
            or w.row4col == NULL or w.col4row == NULL or w.remaining == NULL or w.SR == NULL or w.SC == NULL):
        _work_free(w)
        w.cap_r = 0
        w.cap_c = 0
        return -1
    return 0


cdef void _work_init(Work* w) noexcept nogil:
    w.cost = NULL; w.u = NULL; w.v = NULL; w.spc = NULL; w.path = NULL
    w.row4col = NULL; w.col4row = NULL; w.remaining = NULL; w.SR = NULL; w.SC = NULL
    w.cap_r = 0
    w.cap_c = 0


cdef void _work_free(Work* w) noexcept nogil:
    free(w.cost); free(w.u); free(w.v); free(w.spc); free(w.path)
    free(w.row4col); free(w.col4row); free(w.remaining); free(w.SR); free(w.SC)
    w.cost = NULL; w.u = NULL; w.v = NULL; w.spc = NULL; w.path = NULL
    w.row4col = NULL; w.col4row = NULL; w.remaining = NULL; w.SR = NULL; w.SC = NULL


cdef int _assign(Py_ssize_t nr, Py_ssize_t nc, Work* w) noexcept nogil:
    """Minimum-cost assignment of the ``nr`` rows of ``w.cost`` (``nr x nc``,
    row-major, ``nr <= nc``, no NaN or -inf) to distinct columns: ``w.col4row``.
    Returns 0, or -1 when infeasible (+inf everywhere a row could go)."""
    cdef const double* cost = w.cost
    cdef double* u = w.u
    cdef double* v = w.v
    cdef double* spc = w.spc
    cdef int64_t* path = w.path
    cdef int64_t* row4col = w.row4col
    cdef int64_t* col4row = w.col4row
    cdef int64_t* remaining = w.remaining
    cdef char* SR = w.SR
    cdef char* SC = w.SC
    cdef Py_ssize_t cur, i, j, it, k, index, left, sink
    cdef int64_t tmp
    cdef double min_val, lowest, r
    for i in range(nr):
        u[i] = 0.0
        col4row[i] = -1
    for j in range(nc):
        v[j] = 0.0
        path[j] = -1
        row4col[j] = -1
    for cur in range(nr):
        # the shortest augmenting path from row ``cur``
        min_val = 0.0
        left = nc
        for it in range(nc):
            remaining[it] = nc - it - 1
        for k in range(nr):
            SR[k] = 0
        for k in range(nc):
            SC[k] = 0
            spc[k] = INFINITY
        sink = -1
        i = cur
        while sink == -1:
            index = -1
            lowest = INFINITY
            SR[i] = 1
            for it in range(left):
                j = remaining[it]
                r = min_val + cost[i * nc + j] - u[i] - v[j]
                if r < spc[j]:
                    path[j] = i
                    spc[j] = r
                if spc[j] < lowest or (spc[j] == lowest and row4col[j] == -1):
                    lowest = spc[j]
                    index = it
            min_val = lowest
            if min_val == INFINITY:
                return -1
            j = remaining[index]
            if row4col[j] == -1:
                sink = j
            else:
                i = row4col[j]
            SC[j] = 1
            left -= 1
            remaining[index] = remaining[left]
        # the dual variables
        u[cur] += min_val
        for k in range(nr):
            if SR[k] and k != cur:
                u[k] += min_val - spc[col4row[k]]
        for k in range(nc):
            if SC[k]:
                v[k] -= min_val - spc[k]
        # the augmentation
        j = sink
        while True:
            i = path[j]
            row4col[j] = i
            tmp = col4row[i]
            col4row[i] = j
            j = tmp
            if i == cur:
                break
    return 0


def linear_sum_assignment(cost):
    """``scipy.optimize.linear_sum_assignment(cost)`` (minimisation) by this
    module's kernel: ``(row_ind, col_ind)``, int64, sorted by row.  For tests:
    the same assignment as SciPy's, ties included.

    Raises
    ------
    ValueError
        For NaN or -inf entries, or an infeasible matrix (as SciPy).
    """
    c = np.array(cost, dtype=np.float64, ndmin=2)
    if c.ndim != 2:
        raise ValueError("expected a matrix (2-D array), got a %d-D array" % c.ndim)
    nr0, nc0 = c.shape
    if nr0 == 0 or nc0 == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    transpose = nc0 < nr0
    if transpose:
        c = c.T
    c = np.ascontiguousarray(c)
    if np.isnan(c).any() or (c == -np.inf).any():
        raise ValueError("matrix contains invalid numeric entries")
    cdef Py_ssize_t nr = c.shape[0], nc = c.shape[1], i
    cdef Work w
    cdef double[:, ::1] cv = c
    cdef int status
    _work_init(&w)
    if _work_reserve(&w, nr, nc) != 0:
        raise MemoryError()
    try:
        for i in range(nr * nc):
            w.cost[i] = cv[i // nc, i % nc]
        with nogil:
            status = _assign(nr, nc, &w)
        if status != 0:
            raise ValueError("cost matrix is infeasible")
        col4row = np.array([w.col4row[i] for i in range(nr)], np.int64)
    finally:
        _work_free(&w)
    if transpose:
        order = np.argsort(col4row, kind="stable")
        return col4row[order], order.astype(np.int64)
    return np.arange(nr, dtype=np.int64), col4row


def match_counts(const double[::1] ious, const int64_t[::1] pair_o, const int64_t[::1] pair_w,
                 const int64_t[::1] pair_nd, const int64_t[::1] e_pair, const int64_t[::1] e_col,
                 const int64_t[::1] e_ng, const double[::1] thrs, int64_t[:, ::1] tp,
                 Py_ssize_t lo, Py_ssize_t hi):
    """True positives of entries ``lo .. hi-1`` at every threshold (without the GIL).

    Entry ``e`` is one pair against one ground truth: the pair ``e_pair[e]`` owns
    an IoU matrix of ``pair_nd`` rows (predictions) by ``pair_w`` columns at
    ``ious[pair_o]`` (row-major); the entry's ground truths are its columns
    ``e_col[e] .. e_col[e] + e_ng[e] - 1``.  The predictions are assigned to
    those ground truths as ``linear_sum_assignment(-IoU)`` assigns them, and
    ``tp[e, t]`` counts the assigned pairs whose IoU is ``>= thrs[t]``.
    Entries without a prediction or a ground truth get zeros.
    """
    cdef Py_ssize_t e, p, D, G, W, c0, nr, nc, i, j, t, T = thrs.shape[0]
    cdef int64_t o
    cdef double best, x
    cdef int any_overlap, err = 0
    cdef Work w
    if tp.shape[1] != T:
        raise ValueError("tp must have one column per threshold")
    _work_init(&w)
    with nogil:
        for e in range(lo, hi):
            for t in range(T):
                tp[e, t] = 0
            p = e_pair[e]
            D = pair_nd[p]
            G = e_ng[e]
            if D == 0 or G == 0:
                continue
            W = pair_w[p]
            c0 = e_col[e]
            o = pair_o[p]
            if D == 1 or G == 1:
                # one row (after the transpose): the assignment takes the largest IoU
                best = 0.0
                for i in range(D):
                    for j in range(G):
                        x = ious[o + i * W + c0 + j]
                        if x > best:
                            best = x
                for t in range(T):
                    if best >= thrs[t]:
                        tp[e, t] = 1
                continue
            any_overlap = 0
            for i in range(D):
                for j in range(G):
                    if ious[o + i * W + c0 + j] != 0.0:
                        any_overlap = 1
            if not any_overlap:
                continue
            if G < D:
                nr = G
                nc = D
            else:
                nr = D
                nc = G
            if _work_reserve(&w, nr, nc) != 0:
                err = 1
                break
            if G < D:
                for j in range(G):
                    for i in range(D):
                        w.cost[j * D + i] = -ious[o + i * W + c0 + j]
            else:
                for i in range(D):
                    for j in range(G):
                        w.cost[i * G + j] = -ious[o + i * W + c0 + j]
            if _assign(nr, nc, &w) != 0:
                err = 2
                break
            for i in range(nr):
                j = w.col4row[i]
                x = ious[o + j * W + c0 + i] if G < D else ious[o + i * W + c0 + j]
                for t in range(T):
                    if x >= thrs[t]:
                        tp[e, t] += 1
        _work_free(&w)
    if err == 1:
        raise MemoryError()
    if err == 2:
        raise ValueError("an IoU matrix without a feasible assignment (NaN or infinite IoUs)")
