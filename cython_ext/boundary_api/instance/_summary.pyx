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
       or NULL.  On Linux a block of 1 MB or more is 2 MB aligned, rounded up
       to 2 MB and advised to use huge pages: the first touch of its pages
       (the kernel zero-fills each) is then a few faults instead of one per
       4 kB (a thousand at the LVIS-like set's 4 MB).  Freed with free(). */
    static void *ba_grow(void *old, size_t old_bytes, size_t new_bytes) {
        void *p = NULL;
    #if defined(__linux__) && defined(MADV_HUGEPAGE)
        const size_t huge = (size_t)1 << 21;
        if (new_bytes >= huge / 2) {
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
       Returns nonzero if any bit changed.  A plane that is one run of values
       sa bytes apart (sk == A * sa: LVIS' precision, and pycocotools' at one
       maxDets entry) is read two doubles at a time where the CPU has SSE2. */
    static uint64_t ba_above_bits(const char *p, Py_ssize_t K, Py_ssize_t sk, Py_ssize_t A,
                                  Py_ssize_t sa, uint64_t *words) {
        uint64_t changed = 0, word = 0;
        Py_ssize_t i = 0, w = 0, n = K * A, k, a;
        if (sk == A * sa) {
    #ifdef BA_HAVE_SSE2
            const __m128d minus_one = _mm_set1_pd(-1.0);
            for (; i + 64 <= n; i += 64, w++) {
                const char *b = p + i * sa;
                int j;
                word = 0;
                if (sa == (Py_ssize_t)sizeof(double)) {
                    for (j = 0; j < 64; j += 2) {
                        __m128d x = _mm_loadu_pd((const double *)(b + j * sa));
                        word |= (uint64_t)_mm_movemask_pd(_mm_cmpgt_pd(x, minus_one)) << j;
                    }
                } else {
                    for (j = 0; j < 64; j += 2) {
                        __m128d x = _mm_loadh_pd(_mm_load_sd((const double *)(b + j * sa)),
                                                 (const double *)(b + (j + 1) * sa));
                        word |= (uint64_t)_mm_movemask_pd(_mm_cmpgt_pd(x, minus_one)) << j;
                    }
                }
                changed |= word ^ words[w];
                words[w] = word;
            }
    #endif
            word = 0;
            for (; i < n; i++) {
                word |= (uint64_t)(ba_load_double(p + i * sa) > -1.0) << (i & 63);
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


cdef class _Part:
    """:func:`summary_gather`'s two passes over the planes ``q0 .. q1-1`` of
    its list of planes, with their own buffers; parts of the list run side by
    side."""
    cdef Plane pl
    cdef const char* base
    cdef const int64_t* plane_off   # where each plane starts, bytes from base
    cdef const uint32_t* plane_bt   # the selections its t takes part in
    cdef Py_ssize_t q0, q1, nw, nb
    cdef uint64_t* own_words        # pl.words as allocated (the write points it at saved words)
    cdef uint8_t* changed           # per plane of the part: its list made again
    cdef double* vals               # the values taken, plane after plane
    cdef uint64_t* saved            # the words of each plane whose list was made again
    cdef Py_ssize_t n_vals, cap_vals, n_saved, cap_saved
    cdef int64_t count[32]          # values per selection
    cdef int64_t pos[32]            # where the next one goes in the output
    cdef int64_t end[32]
    cdef bint no_memory, bad
    cdef bint reread                # the write reads the values from s again (no copy)

    def __dealloc__(self):
        free(self.own_words)
        free(self.pl.act_off)
        free(self.pl.act_bits)
        free(self.changed)
        free(self.vals)
        free(self.saved)

    def scan(self):
        with nogil:
            self._scan()

    def write(self, double[::1] out):
        if out.shape[0] > 0:
            with nogil:
                self._write(&out[0])

    cdef void _scan(self) noexcept nogil:
        cdef Py_ssize_t q, j, b, nw = self.nw, planes = self.q1 - self.q0
        cdef uint32_t bt, last_bt = 0, bits
        cdef int64_t row_count[32]
        cdef bint first = True
        cdef const char* row
        memset(row_count, 0, sizeof(row_count))
        memset(self.count, 0, sizeof(self.count))
        for q in range(self.q0, self.q1):
            bt = self.plane_bt[q]
            row = self.base + self.plane_off[q]
            if _read_plane(row, &self.pl) or first or bt != last_bt:
                first = False
                last_bt = bt
                self.changed[q - self.q0] = 1
                if not _reserve(<void**>&self.saved, &self.cap_saved, (self.n_saved + 1) * nw,
                                sizeof(uint64_t)):
                    self.no_memory = True
                    return
                memcpy(self.saved + self.n_saved * nw, self.pl.words, nw * sizeof(uint64_t))
                self.n_saved += 1
                _list_values(&self.pl, bt)
                memset(row_count, 0, sizeof(row_count))
                for j in range(self.pl.n_act):
                    bits = self.pl.act_bits[j]
                    while bits:
                        row_count[ctz32(bits)] += 1
                        bits &= bits - 1
                # room for this list on every plane left (the common case: the
                # values above -1 in the same places on every plane): one allocation
                if not self.reread and not _reserve(<void**>&self.vals, &self.cap_vals,
                                                    self.n_vals + self.pl.n_act * (self.q1 - q), sizeof(double)):
                    self.no_memory = True
                    return
            if not self.reread:
                if not _reserve(<void**>&self.vals, &self.cap_vals, self.n_vals + self.pl.n_act, sizeof(double)):
                    self.no_memory = True
                    return
                for j in range(self.pl.n_act):
                    self.vals[self.n_vals + j] = load_double(row + self.pl.act_off[j])
                self.n_vals += self.pl.n_act
            for b in range(self.nb):
                self.count[b] += row_count[b]

    cdef void _write(self, double* dst) noexcept nogil:
        # the same planes in the same order, their lists made again from the saved words
        cdef Py_ssize_t q, j, b, n_saved = 0, n_vals = 0
        cdef uint32_t bits
        cdef double v
        cdef const char* row
        for q in range(self.q0, self.q1):
            if self.changed[q - self.q0]:
                self.pl.words = self.saved + n_saved * self.nw
                n_saved += 1
                _list_values(&self.pl, self.plane_bt[q])
            row = self.base + self.plane_off[q]
            for j in range(self.pl.n_act):
                v = load_double(row + self.pl.act_off[j]) if self.reread else self.vals[n_vals + j]
                if not (v > -1.0):
                    self.bad = True
                    continue
                bits = self.pl.act_bits[j]
                while bits:
                    b = ctz32(bits)
                    dst[self.pos[b]] = v  # at most count[b] writes: the lists are the scan's
                    self.pos[b] += 1
                    bits &= bits - 1
            n_vals += self.pl.n_act
        self.pl.words = self.own_words
        for b in range(self.nb):
            if self.pos[b] != self.end[b]:
                self.bad = True


cdef _Part _new_part(const char* base, const int64_t* plane_off, const uint32_t* plane_bt,
                     Py_ssize_t q0, Py_ssize_t q1, Py_ssize_t K, Py_ssize_t A, Py_ssize_t sk,
                     Py_ssize_t sa, const uint32_t* ka, const Py_ssize_t* off, Py_ssize_t nb):
    cdef _Part part = _Part.__new__(_Part)
    cdef Py_ssize_t KA = K * A
    part.base, part.plane_off, part.plane_bt = base, plane_off, plane_bt
    part.q0, part.q1, part.nb, part.nw = q0, q1, nb, (KA + 63) // 64
    part.pl.K, part.pl.A, part.pl.sk, part.pl.sa, part.pl.n_act = K, A, sk, sa, 0
    part.pl.ka, part.pl.off = ka, off
    part.own_words = <uint64_t*>calloc(part.nw, sizeof(uint64_t))
    part.pl.words = part.own_words
    part.pl.act_off = <Py_ssize_t*>malloc(KA * sizeof(Py_ssize_t))
    part.pl.act_bits = <uint32_t*>malloc(KA * sizeof(uint32_t))
    part.changed = <uint8_t*>calloc(q1 - q0 if q1 > q0 else 1, 1)
    if not (part.pl.words and part.pl.act_off and part.pl.act_bits and part.changed):
        raise MemoryError()
    return part


#: fewest values in the planes read that :func:`summary_gather` splits between
#: threads (8 MB of doubles, 2-3 ms of reading on one thread)
_MIN_PARALLEL_SUMMARY = 1 << 20

#: most values in the planes read for which the write reads them from the
#: array again (it is then still in the caches: pycocotools' precision at 80
#: categories) rather than from a copy the scan made (LVIS': 40 MB)
_MAX_REREAD_SUMMARY = 1 << 19


def summary_gather(const double[:, :, :, :] s, const uint32_t[:] t_mask, const uint32_t[:] k_mask,
                   const uint32_t[:] a_mask, Py_ssize_t nb, int num_threads=1,
                   Py_ssize_t _min_parallel=_MIN_PARALLEL_SUMMARY, Py_ssize_t _max_reread=_MAX_REREAD_SUMMARY):
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
    other and counted per selection (not copied when the planes read hold
    at most ``_max_reread`` values: they are read again).  Then each goes to
    its selections' places in an array of the exact size.  With ``num_threads`` above 1 and
    at least ``_min_parallel`` values in the planes read, runs of planes do
    both on threads side by side (the output does not depend on it).

    Raises
    ------
    ValueError
        If the masks do not match ``s`` or ``nb`` is not in 0..32.
    RuntimeError
        If a value of ``s`` changed while it was read (another thread wrote it).
    """
    cdef Py_ssize_t T = s.shape[0], R = s.shape[1], K = s.shape[2], A = s.shape[3]
    cdef Py_ssize_t t, r, j, b, c, q, Q = 0, total = 0, KA = K * A, n_parts
    cdef Py_ssize_t st = s.strides[0], sr = s.strides[1]
    cdef int64_t at
    cdef _Part part
    if t_mask.shape[0] != T or k_mask.shape[0] != K or a_mask.shape[0] != A or not 0 <= nb <= 32:
        raise ValueError("summary_gather: masks do not match the array")
    offset_arr = np.zeros(nb + 1, np.int64)
    cdef int64_t[::1] offset = offset_arr
    if T == 0 or R == 0 or KA == 0 or nb == 0:
        return np.empty(0, np.float64), offset_arr
    # the planes read, where each starts and the selections of its t
    for t in range(T):
        if t_mask[t]:
            Q += R
    plane_off_arr = np.empty(max(Q, 1), np.int64)
    plane_bt_arr = np.empty(max(Q, 1), np.uint32)
    cdef int64_t[::1] plane_off = plane_off_arr
    cdef uint32_t[::1] plane_bt = plane_bt_arr
    q = 0
    for t in range(T):
        if t_mask[t]:
            for r in range(R):
                plane_off[q] = t * st + r * sr
                plane_bt[q] = t_mask[t]
                q += 1
    if Q == 0:
        return np.empty(0, np.float64), offset_arr
    # each value's selections and place in its plane
    ka_arr = np.empty(KA, np.uint32)
    off_arr = np.empty(KA, np.intp)
    cdef uint32_t[::1] ka = ka_arr
    cdef Py_ssize_t[::1] off = off_arr
    for j in range(KA):
        ka[j] = k_mask[j // A] & a_mask[j % A]
        off[j] = (j // A) * s.strides[2] + (j % A) * s.strides[3]
    n_parts = 1
    if num_threads > 1 and Q * KA >= _min_parallel:
        n_parts = min(num_threads, Q)
    parts = [_new_part(<const char*>&s[0, 0, 0, 0], &plane_off[0], &plane_bt[0], Q * c // n_parts,
                       Q * (c + 1) // n_parts, K, A, s.strides[2], s.strides[3], &ka[0], &off[0], nb)
             for c in range(n_parts)]
    for part in parts:
        part.reread = Q * KA <= _max_reread
    pool = None
    if n_parts > 1:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=n_parts)
    try:
        if pool is None:
            parts[0].scan()
        else:
            list(pool.map(_Part.scan, parts))
        for part in parts:
            if part.no_memory:
                raise MemoryError()
        for b in range(nb):
            for part in parts:
                total += part.count[b]
            offset[b + 1] = total
        for b in range(nb):
            at = offset[b]
            for part in parts:
                part.pos[b] = at
                at += part.count[b]
                part.end[b] = at
        out_arr = np.empty(total, np.float64)
        if pool is None:
            parts[0].write(out_arr)
        else:
            list(pool.map(_Part.write, parts, [out_arr] * n_parts))
    finally:
        if pool is not None:
            pool.shutdown()
    for part in parts:
        if part.bad:
            raise RuntimeError("summary_gather: the array changed while it was read")
    return out_arr, offset_arr
