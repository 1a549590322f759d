# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The values the COCO / LVIS summaries average, gathered from the accumulated arrays.

Private module (``boundary_api.instance._summary``).  pycocotools' and lvis'
summaries take ``np.mean(s[s > -1])`` of a selection of the precision (or
recall) array: some IoU thresholds, every recall threshold, some categories,
one area range (and one maxDets entry, which the caller slices away).  The
gathers here write the same elements in the same order into one flat array,
so that ``np.mean`` of a piece of it is the same float, without the copies
of each selection and the full-size comparisons.  NaN is not above -1, as in
NumPy.

At LVIS' size the precision array holds 10 x 101 x 1,203 x 4 values of which
nine in ten are -1 (a category without ground truth in an area range), in
the same places for every IoU and recall threshold.  :func:`summary_gather`
reads each (threshold, recall) plane once to find the values above -1,
keeps the list of their places while the next plane has them in the same
places, and sizes its output exactly.
"""

import numpy as np

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, calloc, free
from libc.string cimport memcpy, memset

cdef extern from *:
    """
    #include <string.h>
    #include <stdint.h>
    #if defined(_MSC_VER)
    #include <intrin.h>
    static int ba_ctz32(unsigned int x) { unsigned long i; _BitScanForward(&i, x); return (int)i; }
    static int ba_ctz64(unsigned long long x) { unsigned long i; _BitScanForward64(&i, x); return (int)i; }
    #else
    #define ba_ctz32(x) __builtin_ctz(x)
    #define ba_ctz64(x) __builtin_ctzll(x)
    #endif
    #if defined(__SSE2__) || defined(_M_X64)
    #include <emmintrin.h>
    #define BA_HAVE_SSE2 1
    #endif
    #if defined(__linux__)
    #include <sys/mman.h>
    #endif
    #include <stdlib.h>
    /* A block of new_bytes holding the first old_bytes of old (then freed),
       or NULL.  On Linux a block of 2 MB or more is 2 MB aligned, rounded up
       to 2 MB and advised to use huge pages: the first touch of its pages
       (the kernel zero-fills each) is then a few faults instead of one per
       4 kB (a thousand at the LVIS-like set's 4 MB).  Freed with free(). */
    static void *ba_grow(void *old, size_t old_bytes, size_t new_bytes) {
        void *p = NULL;
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        const size_t huge = (size_t)1 << 21;
        if (new_bytes >= huge) {
            new_bytes = (new_bytes + huge - 1) / huge * huge;
            if (posix_memalign(&p, huge, new_bytes) != 0) return NULL;
            (void)madvise(p, new_bytes, MADV_HUGEPAGE);  /* advice: its failure changes nothing */
        } else
    #endif
        p = malloc(new_bytes);
        if (p == NULL) return NULL;
        if (old != NULL) { memcpy(p, old, old_bytes); free(old); }
        return p;
    }
    /* the double at p, wherever p points (strides need not be multiples of 8) */
    static double ba_load_double(const char *p) { double v; memcpy(&v, p, sizeof v); return v; }
    /* One plane of K x A doubles (bytes sk, sa apart) as bits: bit i % 64 of
       words[i / 64] is 1 if element i = k * A + a is above -1 (NaN is not).
       Returns nonzero if any bit changed.  Contiguous planes, the case that
       matters, are read two doubles at a time where the CPU has SSE2. */
    static uint64_t ba_above_bits(const char *p, Py_ssize_t K, Py_ssize_t sk, Py_ssize_t A,
                                  Py_ssize_t sa, uint64_t *words) {
        uint64_t changed = 0, word = 0;
        Py_ssize_t i = 0, w = 0, n = K * A, k, a;
        if (sa == (Py_ssize_t)sizeof(double) && sk == A * sa) {
            const double *q = (const double *)p;  /* read with memcpy or unaligned loads only */
    #ifdef BA_HAVE_SSE2
            const __m128d minus_one = _mm_set1_pd(-1.0);
            for (; i + 64 <= n; i += 64, w++) {
                int j;
                word = 0;
                for (j = 0; j < 64; j += 2) {
                    __m128d x = _mm_loadu_pd(q + i + j);
                    word |= (uint64_t)_mm_movemask_pd(_mm_cmpgt_pd(x, minus_one)) << j;
                }
                changed |= word ^ words[w];
                words[w] = word;
            }
    #endif
            word = 0;
            for (; i < n; i++) {
                word |= (uint64_t)(ba_load_double((const char *)(q + i)) > -1.0) << (i & 63);
                if ((i & 63) == 63) { changed |= word ^ words[w]; words[w++] = word; word = 0; }
            }
        } else {
            for (k = 0; k < K; k++) {
                for (a = 0; a < A; a++, i++) {
                    word |= (uint64_t)(ba_load_double(p + k * sk + a * sa) > -1.0) << (i & 63);
                    if ((i & 63) == 63) { changed |= word ^ words[w]; words[w++] = word; word = 0; }
                }
            }
        }
        if (n & 63) { changed |= word ^ words[w]; words[w] = word; }
        return changed;
    }
    """
    int ctz32 "ba_ctz32" (uint32_t x) noexcept nogil
    int ctz64 "ba_ctz64" (uint64_t x) noexcept nogil
    double load_double "ba_load_double" (const char* p) noexcept nogil
    void* grow "ba_grow" (void* old, size_t old_bytes, size_t new_bytes) noexcept nogil
    uint64_t above_bits "ba_above_bits" (const char* p, Py_ssize_t K, Py_ssize_t sk, Py_ssize_t A,
                                         Py_ssize_t sa, uint64_t* words) noexcept nogil


def summary_values(const double[:, :, :, :] s, const int64_t[:] t_idx, const int64_t[:] k_idx,
                   Py_ssize_t a, double[::1] out):
    """The values above -1 of ``s[t_idx][:, :, k_idx, a]`` into ``out``, in
    that array's C order (``t`` in ``t_idx`` order, then every ``r``, then
    ``k`` in ``k_idx`` order); returns how many.

    ``np.mean`` of ``out[:n]`` is ``np.mean(sel[sel > -1])`` of that
    selection (the same elements in the same order).  ``t_idx`` and
    ``k_idx`` may be in any order and repeat; every index must be in range
    (the caller checks).
    """
    cdef Py_ssize_t R = s.shape[1], i, j, r, n = 0, t, k
    cdef Py_ssize_t NT = t_idx.shape[0], NK = k_idx.shape[0]
    cdef double v
    if out.shape[0] < NT * R * NK:
        raise ValueError("summary_values: out is too small")
    with nogil:
        for i in range(NT):
            t = t_idx[i]
            for r in range(R):
                for j in range(NK):
                    k = k_idx[j]
                    v = s[t, r, k, a]
                    if v > -1.0:
                        out[n] = v
                        n += 1
    return n


cdef struct Plane:
    # one (t, r) plane of s: K x A doubles, strides in bytes
    Py_ssize_t K, A, sk, sa
    uint64_t* words       # (K * A + 63) // 64: which values are above -1 (the last plane read)
    const uint32_t* ka    # K * A: k_mask[k] & a_mask[a] of element k * A + a
    const Py_ssize_t* off # K * A: its place, in bytes from the plane's start
    Py_ssize_t* act_off   # the places of the values to write
    uint32_t* act_bits    # and the selections each goes to
    Py_ssize_t n_act


cdef inline uint64_t _read_plane(const char* p, Plane* pl) noexcept nogil:
    """Reads which values of the plane at ``p`` are above -1; nonzero if that
    changed since the last read."""
    return above_bits(p, pl.K, pl.sk, pl.A, pl.sa, pl.words)


cdef void _list_values(Plane* pl, uint32_t bt) noexcept nogil:
    """The places of the values above -1 that some selection of ``bt`` takes,
    in increasing ``k`` (then ``a``)."""
    cdef Py_ssize_t w, i, n = 0, nw = (pl.K * pl.A + 63) // 64
    cdef uint64_t word
    cdef uint32_t bits
    for w in range(nw):
        word = pl.words[w]
        while word:
            i = w * 64 + ctz64(word)
            word &= word - 1
            bits = bt & pl.ka[i]
            if bits:
                pl.act_off[n] = pl.off[i]
                pl.act_bits[n] = bits
                n += 1
    pl.n_act = n


cdef inline bint _reserve(void** buf, Py_ssize_t* cap, Py_ssize_t need, size_t item) noexcept nogil:
    """Grows ``buf`` to hold ``need`` items (at least twice what it held);
    False if out of memory."""
    cdef Py_ssize_t new_cap = 2 * cap[0]
    cdef void* grown
    if need <= cap[0]:
        return True
    if new_cap < need:
        new_cap = need
    grown = grow(buf[0], cap[0] * item, new_cap * item)
    if grown == NULL:
        return False
    buf[0] = grown
    cap[0] = new_cap
    return True


def summary_gather(const double[:, :, :, :] s, const uint32_t[:] t_mask, const uint32_t[:] k_mask,
                   const uint32_t[:] a_mask, Py_ssize_t nb):
    """The values of up to 32 selections of ``s``, each in the order its
    NumPy selection has them.

    Selection ``b`` holds ``s[t, r, k, a]`` where bit ``b`` is set in
    ``t_mask[t]``, ``k_mask[k]`` and ``a_mask[a]``.  Returns ``(out,
    offset)``: the values above -1 of selection ``b`` are
    ``out[offset[b]:offset[b + 1]]``, in increasing ``t``, ``r``, ``k`` (the
    C order of ``s[t_idx][:, :, k_idx, a]`` for increasing ``t_idx`` and
    ``k_idx`` and one ``a``).  ``s`` may have any strides.

    ``s`` is read once, (t, r) plane by plane, only the planes whose ``t``
    some selection takes: which values are above -1 (the list of their
    places is made again only where a plane has them elsewhere than the
    plane before), those that some selection takes copied one after the
    other and counted per selection.  Then each goes to its selections'
    places in an array of the exact size.

    Raises
    ------
    ValueError
        If the masks do not match ``s`` or ``nb`` is not in 0..32.
    RuntimeError
        If a value of ``s`` changed while it was read (another thread wrote it).
    """
    cdef Py_ssize_t T = s.shape[0], R = s.shape[1], K = s.shape[2], A = s.shape[3]
    cdef Py_ssize_t t, r, j, b, total = 0, KA = K * A, nw = (K * A + 63) // 64
    cdef Py_ssize_t st = s.strides[0], sr = s.strides[1]
    cdef Py_ssize_t n_vals = 0, cap_vals = 0, n_saved = 0, cap_saved = 0, n_planes = 0, done = 0
    cdef uint32_t bt, last_bt = 0, bits
    cdef int64_t count[32]
    cdef int64_t row_count[32]
    cdef int64_t pos[32]
    cdef bint first = True, bad = False, no_memory = False
    cdef double v
    cdef const char* base
    cdef const char* row
    cdef double* dst
    cdef double[::1] out_view
    cdef Plane pl
    if t_mask.shape[0] != T or k_mask.shape[0] != K or a_mask.shape[0] != A or not 0 <= nb <= 32:
        raise ValueError("summary_gather: masks do not match the array")
    offset_arr = np.zeros(nb + 1, np.int64)
    cdef int64_t[::1] offset = offset_arr
    if T == 0 or R == 0 or KA == 0 or nb == 0:
        return np.empty(0, np.float64), offset_arr
    base = <const char*>&s[0, 0, 0, 0]
    pl.K, pl.A, pl.sk, pl.sa, pl.n_act = K, A, s.strides[2], s.strides[3], 0
    cdef uint32_t* ka = <uint32_t*>malloc(KA * sizeof(uint32_t))
    cdef Py_ssize_t* off = <Py_ssize_t*>malloc(KA * sizeof(Py_ssize_t))
    cdef uint8_t* changed = <uint8_t*>calloc(T * R, 1)
    cdef uint64_t* words = <uint64_t*>calloc(nw, sizeof(uint64_t))
    cdef double* vals = NULL       # the values taken, plane after plane
    cdef uint64_t* saved = NULL    # the words of each plane whose list was made again
    pl.words = words
    pl.act_off = <Py_ssize_t*>malloc(KA * sizeof(Py_ssize_t))
    pl.act_bits = <uint32_t*>malloc(KA * sizeof(uint32_t))
    pl.ka = ka
    pl.off = off
    try:
        if not (ka and off and changed and words and pl.act_off and pl.act_bits):
            raise MemoryError()
        for j in range(KA):
            ka[j] = k_mask[j // A] & a_mask[j % A]
            off[j] = (j // A) * pl.sk + (j % A) * pl.sa
        memset(count, 0, sizeof(count))
        memset(row_count, 0, sizeof(row_count))
        for t in range(T):
            if t_mask[t]:
                n_planes += R
        with nogil:
            for t in range(T):
                bt = t_mask[t]
                if bt == 0:
                    continue
                for r in range(R):
                    row = base + t * st + r * sr
                    if _read_plane(row, &pl) or first or bt != last_bt:
                        first = False
                        last_bt = bt
                        changed[t * R + r] = 1
                        if not _reserve(<void**>&saved, &cap_saved, (n_saved + 1) * nw, sizeof(uint64_t)):
                            no_memory = True
                            break
                        memcpy(saved + n_saved * nw, words, nw * sizeof(uint64_t))
                        n_saved += 1
                        _list_values(&pl, bt)
                        memset(row_count, 0, sizeof(row_count))
                        for j in range(pl.n_act):
                            bits = pl.act_bits[j]
                            while bits:
                                row_count[ctz32(bits)] += 1
                                bits &= bits - 1
                        # room for this list on every plane left (the common case: the
                        # values above -1 in the same places on every plane): one allocation
                        if not _reserve(<void**>&vals, &cap_vals, n_vals + pl.n_act * (n_planes - done),
                                        sizeof(double)):
                            no_memory = True
                            break
                    if not _reserve(<void**>&vals, &cap_vals, n_vals + pl.n_act, sizeof(double)):
                        no_memory = True
                        break
                    for j in range(pl.n_act):
                        vals[n_vals + j] = load_double(row + pl.act_off[j])
                    n_vals += pl.n_act
                    done += 1
                    for b in range(nb):
                        count[b] += row_count[b]
                if no_memory:
                    break
        if no_memory:
            raise MemoryError()
        for b in range(nb):
            total += count[b]
            offset[b + 1] = total
        out_arr = np.empty(total, np.float64)
        if total == 0:
            return out_arr, offset_arr
        out_view = out_arr
        dst = &out_view[0]
        for b in range(nb):
            pos[b] = offset[b]
        n_saved = 0
        n_vals = 0
        with nogil:
            # the same planes in the same order, their lists made again from the saved words
            for t in range(T):
                bt = t_mask[t]
                if bt == 0:
                    continue
                for r in range(R):
                    if changed[t * R + r]:
                        pl.words = saved + n_saved * nw
                        n_saved += 1
                        _list_values(&pl, bt)
                    for j in range(pl.n_act):
                        v = vals[n_vals + j]
                        if not (v > -1.0):
                            bad = True
                            continue
                        bits = pl.act_bits[j]
                        while bits:
                            b = ctz32(bits)
                            dst[pos[b]] = v  # at most count[b] writes: the lists are pass 1's
                            pos[b] += 1
                            bits &= bits - 1
                    n_vals += pl.n_act
        for b in range(nb):
            if pos[b] != offset[b + 1]:
                bad = True
        if bad:
            raise RuntimeError("summary_gather: the array changed while it was read")
        return out_arr, offset_arr
    finally:
        free(ka)
        free(off)
        free(changed)
        free(words)
        free(vals)
        free(saved)
        free(pl.act_off)
        free(pl.act_bits)
