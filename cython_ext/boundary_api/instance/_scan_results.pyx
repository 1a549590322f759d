# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# Longer than 800 lines because the whole-file scan and the chunked parallel scan share
# the column buffers and both passes: apart, they would export those through a .pxd.
"""Native scanner for COCO *results* JSON: the file straight into column arrays.

Private module (``boundary_api.instance._scan_results``).  A results file is a JSON
array of detections, each an object with ``image_id``, ``category_id``,
``score`` and optionally ``bbox`` and an RLE ``segmentation``.  Turning it into
one Python dict per detection costs more than the evaluation of box AP itself;
this scanner reads the bytes once, without the GIL, and returns one numpy
array per field, with every RLE ``counts`` string left in the caller's buffer
(unescaped in place) and located by offset and length.

It only accepts a narrow, common schema (see :func:`scan_results`); for
anything else it returns ``None`` and leaves the buffer untouched, so that the
caller can hand the same bytes to a general JSON parser, which also words any
error.  It never raises for bad input and never reads outside the buffer.
A large file may be scanned in chunks on several threads, with the very same
outcome as on one (see :func:`scan_results`).  The core the scanners share
(token readers, key codes, the RLE object, the chunk starts) is ``_json``; the
columns here are rows of fixed width, grown together.
"""

from libc.stdint cimport int64_t, int32_t, uint8_t, uint64_t, INT64_MIN, INT64_MAX
from libc.stdlib cimport calloc, realloc, free
from libc.string cimport memcpy, memmove, memset, memchr

# madvise where the platform has it; elsewhere (Windows) a stub that is never
# called: instance._columns maps results files only where mmap has MADV_DONTNEED,
# and reads them otherwise, so the module builds on every platform
cdef extern from *:
    """
    #if defined(_WIN32)
    static int ba_madvise(void *p, size_t n, int advice) { (void)p; (void)n; (void)advice; return -1; }
    #define BA_MADV_DONTNEED 0
    #else
    #include <sys/mman.h>
    #define ba_madvise madvise
    #define BA_MADV_DONTNEED MADV_DONTNEED
    #endif
    """
    int madvise "ba_madvise" (void* addr, size_t length, int advice) nogil
    int MADV_DONTNEED "BA_MADV_DONTNEED"

from boundary_api.instance._json cimport (
    cptr, PAGE, _load8, _backslash8, _first8, _ws, _num, _colon, _take, _int, K_IMAGE_ID,
    K_CATEGORY_ID, K_SCORE, K_BBOX, K_SEGMENTATION, K_CAPTION, K_KEYPOINTS, _key, _num4, _skip,
    _counts_string, _rle_object, _unescape_string, _chunk_starts, _check_threads)

import numpy as np

# bits of ``present`` (bit ``code - 1`` for the key codes 1..5 of _json.pxd)
cdef enum:
    P_IMAGE = 1
    P_CAT = 2
    P_SCORE = 4
    P_BBOX = 8
    P_SEG = 16

# bit of ``key_order``: segmentation had "counts" before "size"
cdef enum:
    K_COUNTS_FIRST = 1 << 30

# the result being parsed; copied into the columns once its object closed
cdef struct Rec:
    int64_t image_id
    int64_t category_id
    double score
    double bbox[4]
    int64_t seg_h
    int64_t seg_w
    int64_t cstart     # offset of the counts string (first byte after the quote)
    int64_t clen       # escaped length while scanning, unescaped length after
    int64_t cesc       # offset of the first backslash in counts from cstart, or -1
    int32_t key_order
    uint8_t present
    uint8_t int_kind


cdef cptr _result_counts(cptr p, cptr end, cptr base, void* r) noexcept nogil:
    """A result's counts string (``_json._rle_object``'s counts reader): only
    the escapes ``\\\\ \\" \\/`` (each the byte after its backslash),
    validated and located; nothing is written here (unescaping waits until
    the whole file passed)."""
    cdef Rec* rec = <Rec*> r
    cdef Py_ssize_t esc
    cdef cptr q
    if p >= end or p[0] != 34:
        return NULL
    q = _counts_string(p, end, 0, &esc)
    if q == NULL:
        return NULL
    rec.cstart = p + 1 - base
    rec.clen = q - 1 - (p + 1)
    rec.cesc = esc
    return q


cdef inline cptr _segm(cptr p, cptr end, cptr base, Rec* r) noexcept nogil:
    """``{"size": [h, w], "counts": "..."}`` in either key order."""
    cdef int64_t hw[2]
    cdef bint counts_first = 0
    p = _rle_object(p, end, base, 0, INT64_MIN, INT64_MAX, hw, &counts_first, _result_counts, r)
    if p != NULL:
        r.seg_h = hw[0]
        r.seg_w = hw[1]
        if counts_first:
            r.key_order |= K_COUNTS_FIRST
    return p


cdef struct Cols:
    # one C array per output column (the returned numpy arrays take them over)
    int64_t* image_id
    int64_t* category_id
    double* score
    double* bbox          # 4 per result
    int64_t* seg_h
    int64_t* seg_w
    int64_t* cstart
    int64_t* clen
    uint8_t* present
    uint8_t* int_kind
    int32_t* key_order
    int64_t* cesc         # scratch for pass two, freed before returning


cdef void _cols_free(Cols* c) noexcept nogil:
    free(c.image_id)
    free(c.category_id)
    free(c.score)
    free(c.bbox)
    free(c.seg_h)
    free(c.seg_w)
    free(c.cstart)
    free(c.clen)
    free(c.present)
    free(c.int_kind)
    free(c.key_order)
    free(c.cesc)
    memset(c, 0, sizeof(Cols))


cdef bint _grow(void** ptr, size_t nbytes) noexcept nogil:
    """realloc ``ptr[0]``; on failure it keeps its old block."""
    cdef void* t = realloc(ptr[0], nbytes if nbytes else 1)
    if t == NULL:
        return 0
    ptr[0] = t
    return 1


cdef bint _cols_resize_outputs(Cols* c, Py_ssize_t cap) noexcept nogil:
    """Resize the returned columns (every one but ``cesc``) to ``cap`` rows."""
    cdef size_t n = <size_t> cap
    return (_grow(<void**> &c.image_id, n * 8) and _grow(<void**> &c.category_id, n * 8)
            and _grow(<void**> &c.score, n * 8) and _grow(<void**> &c.bbox, n * 32)
            and _grow(<void**> &c.seg_h, n * 8) and _grow(<void**> &c.seg_w, n * 8)
            and _grow(<void**> &c.cstart, n * 8) and _grow(<void**> &c.clen, n * 8)
            and _grow(<void**> &c.present, n) and _grow(<void**> &c.int_kind, n)
            and _grow(<void**> &c.key_order, n * 4))


cdef bint _cols_resize(Cols* c, Py_ssize_t cap) noexcept nogil:
    """Resize every column, ``cesc`` included, to ``cap`` rows."""
    return _cols_resize_outputs(c, cap) and _grow(<void**> &c.cesc, <size_t> cap * 8)


#: a releasing scan gives pages back in steps of at least this many bytes
RELEASE_STEP = 4 << 20


cdef void _give_back(cptr base, Py_ssize_t lo, Py_ssize_t hi) noexcept nogil:
    """Drop the whole pages of ``base[lo:hi]`` from the process (``base`` page
    aligned, a read-only use of a file mapping: a later read faults them in
    again from the file, unchanged)."""
    lo = (lo + PAGE - 1) // PAGE * PAGE
    hi = hi // PAGE * PAGE
    if hi > lo:
        madvise(<void*> (base + lo), <size_t> (hi - lo), MADV_DONTNEED)


# madvise advice of Linux 5.14+ (older kernels refuse it: then pages fault in one by one)
DEF _MADV_POPULATE_READ = 22
DEF _MADV_POPULATE_WRITE = 23


cdef void _populate(const unsigned char* base, Py_ssize_t lo, Py_ssize_t hi, Py_ssize_t size,
                    int advice) noexcept nogil:
    """Map the pages of ``base[lo:hi]`` (clipped to ``size``) in one call,
    instead of one fault per few pages as they are read (or written)."""
    if hi > size:
        hi = size
    lo = lo // PAGE * PAGE
    if hi > lo:
        madvise(<void*> (base + lo), <size_t> (hi - lo), advice)


cdef int _scan_objects(cptr base, Py_ssize_t size, Py_ssize_t start, Py_ssize_t stop,
                       Cols* cols, Py_ssize_t* n_out, Py_ssize_t release=0,
                       bint other_keys=0) noexcept nogil:
    """Pass one from the object that starts at ``start``: validate and fill the columns.

    With ``stop < 0`` the objects run to the closing ``]`` of the array, which
    only whitespace may follow (the whole rest of the file).  With
    ``stop >= 0`` (a chunk of a split scan) the scan ends as soon as the next
    object would start at or after ``stop``.

    Returns 0 when every object passed (and, with ``stop >= 0``, the next
    object starts exactly at ``stop``), 1 when an object or the array's end is
    refused by the grammar, 2 when memory ran out, 3 (only with
    ``stop >= 0``) when the objects did not lead exactly to ``stop``: the
    array ended first, or an object straddles it.

    With ``release > 0`` (``base`` a page-aligned file mapping, never written)
    the pages behind the cursor are given back every ``release`` bytes, never
    past ``stop``.  With ``other_keys`` a key other than the five has its
    value validated and skipped (``caption`` and ``keypoints`` are refused).
    """
    cdef cptr p = base + start
    cdef cptr end = base + size
    cdef Rec rec
    cdef Rec* r = &rec
    cdef Py_ssize_t n = 0, cap
    cdef int code, nk, k
    cdef bint is_int
    cdef uint8_t ints
    cdef Py_ssize_t rel = start, here, ahead = start
    if release > 0:
        ahead = start + release
        _populate(base, start, ahead, size, _MADV_POPULATE_READ)
    # grown by doubling; a result takes under 100 bytes
    cap = ((stop if stop >= 0 else size) - start) // 1024 + 16
    if not _cols_resize(cols, cap):
        return 2
    while True:
        if n == cap:
            cap = cap * 2
            if not _cols_resize(cols, cap):
                return 2
        r.present = 0
        r.int_kind = 0
        r.key_order = 0
        r.bbox[0] = r.bbox[1] = r.bbox[2] = r.bbox[3] = 0.0
        r.seg_h = r.seg_w = r.cstart = r.clen = 0
        r.cesc = -1
        if p >= end or p[0] != 123:
            return 1
        p = _ws(p + 1, end)
        nk = 0
        while True:
            p = _key(p, end, &code)
            if p == NULL:
                return 1
            if code == 0 or code > K_SEGMENTATION:
                # another key: refused, or with other_keys skipped (but for the
                # two that change loadRes' branch)
                if not other_keys or code == K_CAPTION or code == K_KEYPOINTS:
                    return 1
                code = 0
            elif r.present & (1 << (code - 1)):
                return 1   # a repeated key
            else:
                r.present |= <uint8_t> (1 << (code - 1))
                r.key_order |= code << (3 * nk)
                nk += 1
            p = _colon(p, end)
            if p == NULL:
                return 1
            if code == 0:
                p = _skip(p, end, 2)
            elif code == K_IMAGE_ID:
                p = _int(p, end, &r.image_id)
            elif code == K_CATEGORY_ID:
                p = _int(p, end, &r.category_id)
            elif code == K_SCORE:
                p = _num(p, end, &r.score, &is_int)
                if is_int:
                    r.int_kind |= 1
            elif code == K_BBOX:
                p = _num4(p, end, r.bbox, &ints)
                r.int_kind |= <uint8_t> (ints << 1)
            else:
                p = _segm(p, end, base, r)
            if p == NULL:
                return 1
            p = _ws(p, end)
            if p >= end:
                return 1
            if p[0] == 44:
                p = _ws(p + 1, end)
                continue
            if p[0] == 125:
                p += 1
                break
            return 1
        if (r.present & (P_IMAGE | P_CAT | P_SCORE)) != (P_IMAGE | P_CAT | P_SCORE):
            return 1
        cols.image_id[n] = r.image_id
        cols.category_id[n] = r.category_id
        cols.score[n] = r.score
        for k in range(4):
            cols.bbox[4 * n + k] = r.bbox[k]
        cols.seg_h[n] = r.seg_h
        cols.seg_w[n] = r.seg_w
        cols.cstart[n] = r.cstart
        cols.clen[n] = r.clen
        cols.cesc[n] = r.cesc
        cols.present[n] = r.present
        cols.int_kind[n] = r.int_kind
        cols.key_order[n] = r.key_order
        n += 1
        if release > 0:
            here = p - base
            if stop >= 0 and here > stop:
                here = stop
            if here - rel >= release:
                _give_back(base, rel, here)
                rel = here // PAGE * PAGE
            if p - base >= ahead - (release >> 1):
                _populate(base, ahead, ahead + release, size, _MADV_POPULATE_READ)
                ahead += release
        p = _ws(p, end)
        if p >= end:
            return 1
        if p[0] == 44:
            p = _ws(p + 1, end)
            if stop >= 0 and p - base >= stop:
                n_out[0] = n
                # the next object must begin exactly where the next chunk began
                return 0 if p - base == stop else 3
            continue
        if p[0] == 93:
            if stop >= 0:
                return 3   # the array ended before the next chunk's start
            break
        return 1
    p = _ws(p + 1, end)
    if p != end:
        return 1
    n_out[0] = n
    return 0


cdef int _head(cptr base, Py_ssize_t size, Py_ssize_t* first) noexcept nogil:
    """Offset of the first object of the array (its ``{`` unchecked): 0 ok, 1 refused."""
    cdef cptr p = _ws(base, base + size)
    cdef cptr end = base + size
    if p >= end or p[0] != 91:
        return 1
    p = _ws(p + 1, end)
    if p >= end or p[0] == 93:
        return 1          # truncated, or empty: left to the general parser
    first[0] = p - base
    return 0


cdef int _scan(cptr base, Py_ssize_t size, Cols* cols, Py_ssize_t* n_out,
               Py_ssize_t release=0, bint other_keys=0) noexcept nogil:
    """Pass one over the whole file.  0 ok, 1 refused, 2 no memory."""
    cdef Py_ssize_t first = 0
    cdef int status
    if _head(base, size, &first):
        return 1
    status = _scan_objects(base, size, first, -1, cols, n_out, release, other_keys)
    if status == 0:
        # hand back the unused tail; if shrinking failed the larger blocks still serve
        _cols_resize(cols, n_out[0])
    return status


cdef void _unescape(unsigned char* base, Cols* cols, Py_ssize_t n) noexcept nogil:
    """Pass two, only after the whole file passed: unescape counts in place."""
    cdef Py_ssize_t i
    cdef unsigned char* p
    cdef unsigned char* w
    cdef unsigned char* q
    cdef unsigned char c
    cdef uint64_t x, mask
    cdef Py_ssize_t k, j
    for i in range(n):
        if cols.cesc[i] < 0:
            continue
        w = p = base + cols.cstart[i] + cols.cesc[i]
        q = base + cols.cstart[i] + cols.clen[i]
        while p < q:
            if p + 8 <= q:
                x = _load8(p)
                mask = _backslash8(x)
                if mask == 0:
                    memmove(w, p, 8)   # w <= p
                    p += 8
                    w += 8
                    continue
                # only the bytes before the backslash: writing more would
                # overwrite source bytes not yet read
                k = _first8(mask)
                for j in range(k):
                    w[j] = p[j]
                p += k
                w += k
            c = p[0]
            if c == 92:
                # validated: the escaped byte is the byte itself (backslash, quote, slash)
                c = p[1]
                p += 2
            else:
                p += 1
            w[0] = c
            w += 1
        cols.clen[i] = w - (base + cols.cstart[i])


# --------------------------------------------------------------------------- split scan
#
# A large file is cut at k-1 candidate object starts (a '{' after '}' ',' with
# only whitespace between) and the chunks are scanned on k threads.  A
# candidate may lie inside a string; chunk i-1, which starts at a verified
# object start, proves chunk i's candidate only by arriving at it exactly as
# the start of its next object.  Chunk 0 starts where the whole-file scan
# starts, so by induction every chunk then scans exactly the objects the
# whole-file scan would, and the columns concatenate to its output.

#: files below this size are scanned on one thread (a split costs thread starts)
MIN_PARALLEL_BYTES = 8 << 20
#: at most this many chunks (and threads) whatever ``num_threads`` says
MAX_CHUNKS = 256


cdef void _cols_copy(Cols* dst, Py_ssize_t at, Cols* src, Py_ssize_t n) noexcept nogil:
    """Rows ``[0, n)`` of ``src`` into rows ``[at, at + n)`` of ``dst`` (not ``cesc``)."""
    cdef size_t m = <size_t> n
    if n == 0:
        return
    memcpy(dst.image_id + at, src.image_id, m * 8)
    memcpy(dst.category_id + at, src.category_id, m * 8)
    memcpy(dst.score + at, src.score, m * 8)
    memcpy(dst.bbox + 4 * at, src.bbox, m * 32)
    memcpy(dst.seg_h + at, src.seg_h, m * 8)
    memcpy(dst.seg_w + at, src.seg_w, m * 8)
    memcpy(dst.cstart + at, src.cstart, m * 8)
    memcpy(dst.clen + at, src.clen, m * 8)
    memcpy(dst.present + at, src.present, m)
    memcpy(dst.int_kind + at, src.int_kind, m)
    memcpy(dst.key_order + at, src.key_order, m * 4)


cdef class _SplitScan:
    """The state of one split scan: chunk starts, per-chunk columns and statuses.

    Its methods take a range of chunk indices and run without the GIL; the C
    blocks still owned when it dies are freed then.
    """
    cdef unsigned char* base
    cdef Py_ssize_t size
    cdef Py_ssize_t k
    cdef Py_ssize_t* starts   # k + 1 entries, the last -1 (to the end of the array)
    cdef Py_ssize_t* ns       # results per chunk
    cdef Py_ssize_t* offs     # first output row per chunk
    cdef int* status
    cdef Cols* cols           # cols[0] becomes the output once all chunks passed
    cdef Py_ssize_t release   # > 0: give pages back behind the cursors
    cdef bint escaped         # keep counts escaped (write nothing)
    cdef bint other_keys      # skip keys other than the five

    def __cinit__(self, Py_ssize_t k):
        self.k = k
        self.starts = <Py_ssize_t*> calloc(k + 1, sizeof(Py_ssize_t))
        self.ns = <Py_ssize_t*> calloc(k, sizeof(Py_ssize_t))
        self.offs = <Py_ssize_t*> calloc(k, sizeof(Py_ssize_t))
        self.status = <int*> calloc(k, sizeof(int))
        self.cols = <Cols*> calloc(k, sizeof(Cols))
        if (self.starts == NULL or self.ns == NULL or self.offs == NULL or self.status == NULL
                or self.cols == NULL):
            raise MemoryError("boundary_api: no memory to split the results scan")

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.cols != NULL:
            for i in range(self.k):
                _cols_free(&self.cols[i])
        free(self.cols)
        free(self.starts)
        free(self.ns)
        free(self.offs)
        free(self.status)

    def scan(self, Py_ssize_t lo, Py_ssize_t hi):
        """Pass one over chunks ``[lo, hi)``."""
        cdef Py_ssize_t i
        with nogil:
            for i in range(lo, hi):
                self.status[i] = _scan_objects(self.base, self.size, self.starts[i],
                                               self.starts[i + 1], &self.cols[i], &self.ns[i],
                                               self.release, self.other_keys)

    def finish(self, Py_ssize_t lo, Py_ssize_t hi):
        """Pass two over chunks ``[lo, hi)``: unescape their counts in place and
        move their rows into the output (``cols[0]``, already grown to all rows)."""
        cdef Py_ssize_t i
        with nogil:
            for i in range(lo, hi):
                if self.escaped:
                    # counts stay escaped; their first escapes go into the output
                    if i > 0 and self.ns[i] > 0:
                        memcpy(self.cols[0].cesc + self.offs[i], self.cols[i].cesc,
                               <size_t> self.ns[i] * 8)
                else:
                    _unescape(self.base, &self.cols[i], self.ns[i])
                if i > 0 or not self.escaped:
                    free(self.cols[i].cesc)
                    self.cols[i].cesc = NULL
                if i > 0:
                    _cols_copy(&self.cols[0], self.offs[i], &self.cols[i], self.ns[i])
                    _cols_free(&self.cols[i])


cdef int _split_scan(_SplitScan job, unsigned char* base, Py_ssize_t size, int num_threads,
                     Py_ssize_t* n_out, list trace) except -1:
    """Scan ``base[:size]`` as ``job.k`` chunks on ``num_threads`` threads.

    Returns 0 when the columns are in ``job.cols[0]`` (``n_out[0]`` rows, counts
    unescaped), 1 when the file is certainly refused (the whole-file scan
    would refuse it; the buffer untouched), 4 when the split proved nothing
    (the buffer untouched; the caller scans the whole file).
    """
    from concurrent.futures import ThreadPoolExecutor

    cdef Py_ssize_t i, k = job.k, total = 0
    cdef int s
    job.base = base
    job.size = size
    # chunk i is the range [i, i + 1); one pool for both passes (threads start once)
    with ThreadPoolExecutor(max_workers=min(num_threads, k)) as pool:
        list(pool.map(job.scan, range(k), range(1, k + 1)))
        for i in range(k):
            s = job.status[i]
            if s == 0:
                continue
            # chunks 0..i-1 passed and led exactly to chunk i's start, so the
            # whole-file scan reaches chunk i's start too and refuses what chunk i refused
            if s == 1:
                if trace is not None:
                    trace.append(("refused", k, i))
                return 1
            if trace is not None:
                trace.append(("fallback", k, i))
            return 4
        for i in range(k):
            job.offs[i] = total
            total += job.ns[i]
        if not (_cols_resize_outputs(&job.cols[0], total)
                and (not job.escaped or _grow(<void**> &job.cols[0].cesc, <size_t> total * 8 + 8))):
            if trace is not None:
                trace.append(("fallback", k, -1))
            return 4
        # from here on the buffer changes: every chunk passed and every start is proven
        list(pool.map(job.finish, range(k), range(1, k + 1)))
    n_out[0] = total
    if trace is not None:
        trace.append(("split", k, -1))
    return 0


def scan_results(unsigned char[::1] buf not None, num_threads=1, *, other_keys=False, _escaped=False,
                 _min_parallel_bytes=None, _trace=None, _release=0):
    """Parse a COCO results JSON file into column arrays, or return ``None``.

    Parameters
    ----------
    buf : bytearray
        The whole file, writable (any writable contiguous byte buffer).  On
        success the RLE ``counts`` strings are unescaped in place; on ``None``
        the buffer is left exactly as it was.
    num_threads : int, default 1
        Threads to scan with.  A file of at least :data:`MIN_PARALLEL_BYTES`
        is cut into ``num_threads`` chunks (at most :data:`MAX_CHUNKS`) at
        likely object starts, scanned side by side; the result (columns,
        offsets, buffer) is the same as on one thread for every input.  A cut that the scan does not confirm as
        an object start (one inside a string, say) makes it scan the whole
        file on one thread instead.
    other_keys : bool, default False
        Accept keys other than the five of the schema (an SA-Co prediction's
        ``area``, say): each one's value is validated as JSON and skipped, and
        such a key may repeat.  ``caption`` and ``keypoints``, which change
        the branch pycocotools' ``loadRes`` takes, are still refused.
    _escaped : bool, default False
        Private (:func:`boundary_api.saco._inputs.read_predictions`): write
        nothing and leave the counts escaped, as with ``_release`` (below), but
        without giving pages back (``buf`` is then any buffer, kept intact).
    _min_parallel_bytes : int, optional
        Private (tests): the file size from which to split, instead of
        :data:`MIN_PARALLEL_BYTES`.
    _trace : list, optional
        Private (tests): receives one tuple saying how the scan went:
        ``("single", 1, -1)``, ``("split", k, -1)`` (``k`` chunks, all
        confirmed), ``("refused", k, i)`` (chunk ``i`` refused after every
        earlier one was confirmed: ``None`` without a second scan) or
        ``("fallback", k, i)`` (chunk ``i``'s start unconfirmed or no memory;
        then the whole-file scan's tuple follows).
    _release : int, optional
        Private (:func:`.._columns.load_result_columns`): when positive, ``buf``
        is a page-aligned mapping of a file that nothing writes; the scan then
        writes nothing, gives the pages behind its cursors back to the system
        every ``_release`` bytes (a later read faults them in again from the
        file), and leaves the counts escaped: ``counts_len`` is the escaped
        length and an extra column ``counts_esc`` (int64) holds the offset of
        each string's first backslash, or -1; :func:`gather_counts` then
        copies them out unescaped.

    Returns
    -------
    dict of numpy.ndarray or None
        ``None`` when the input is not in the fast schema: a non-empty JSON
        array (whitespace around it allowed, no BOM) of objects whose keys are
        among ``image_id``, ``category_id``, ``score`` (all three required),
        ``bbox`` and ``segmentation`` (others too with ``other_keys``), each at
        most once, in any order, not escaped; ids integer tokens of at most 18
        digits; ``score`` and the four ``bbox`` values JSON numbers (integer
        tokens of at most 15 digits); ``segmentation`` exactly ``{"size": [h, w], "counts": str}``
        with integer ``h``, ``w`` and ASCII ``counts`` (no control bytes, only
        the escapes ``\\\\``, ``\\"``, ``\\/``).  Anything else, including any
        malformed JSON, gives ``None``.

        Otherwise a dict, every array of length ``n`` (number of results):

        ``image_id``, ``category_id`` : int64
        ``score`` : float64, equal to ``float`` of the parsed value
        ``bbox`` : float64, shape (n, 4), zeros where absent
        ``seg_h``, ``seg_w`` : int64, ``segmentation["size"]``, 0 where absent
        ``counts_start``, ``counts_len`` : int64, where the unescaped counts
            string lies in ``buf`` (0, 0 where absent)
        ``present`` : uint8, bits 1 image_id, 2 category_id, 4 score, 8 bbox,
            16 segmentation
        ``int_kind`` : uint8, bit 0 the score was an integer token, bits 1..4
            ``bbox[0..3]`` were
        ``key_order`` : int32, 3 bits per key in order of appearance (first key
            lowest; codes 1 image_id, 2 category_id, 3 score, 4 bbox,
            5 segmentation), plus bit 30 when ``counts`` came before ``size``

    Examples
    --------
    >>> buf = bytearray(b'[{"image_id": 1, "category_id": 2, "score": 0.5,'
    ...                 b' "segmentation": {"size": [4, 4], "counts": "a\\\\/b"}}]')
    >>> cols = scan_results(buf)
    >>> s, n = cols["counts_start"][0], cols["counts_len"][0]
    >>> bytes(buf[s:s + n])
    b'a/b'
    >>> int(cols["present"][0]) == 1 | 2 | 4 | 16
    True
    >>> scan_results(bytearray(b'[{"image_id": 1.0, "category_id": 2, "score": 0.5}]')) is None
    True
    """
    cdef Py_ssize_t size = buf.shape[0], n = 0, first = 0, i, k
    cdef Cols c
    cdef int status
    cdef unsigned char* base
    cdef _SplitScan job
    _check_threads(num_threads)
    cdef Py_ssize_t release = max(int(_release), 0)
    if release:
        release = max(release, PAGE)
    cdef bint escaped = release > 0 or bool(_escaped)
    cdef bint others = bool(other_keys)
    min_bytes = MIN_PARALLEL_BYTES if _min_parallel_bytes is None else int(_min_parallel_bytes)
    if size == 0:
        return None
    memset(&c, 0, sizeof(Cols))
    base = &buf[0]
    if num_threads > 1 and size >= min_bytes and _head(base, size, &first) == 0:
        # chunk starts: the first object, then one candidate in each further
        # k-th of the file (none when that part has no candidate)
        k = min(num_threads, MAX_CHUNKS)
        starts = _chunk_starts(base, size, first, 0, size // k, k)
        if len(starts) > 1:
            job = _SplitScan(len(starts))
            job.release = release
            job.escaped = escaped
            job.other_keys = others
            for i in range(len(starts)):
                job.starts[i] = starts[i]
            job.starts[len(starts)] = -1
            status = _split_scan(job, base, size, int(num_threads), &n, _trace)
            if status == 1:
                return None
            if status == 0:
                c = job.cols[0]
                memset(&job.cols[0], 0, sizeof(Cols))   # the output now belongs to c
                return _columns(&c, n, escaped)
            job = None   # its blocks are freed before the whole-file scan
    if _trace is not None:
        _trace.append(("single", 1, -1))
    with nogil:
        status = _scan(base, size, &c, &n, release, others)
        if status == 0 and not escaped:
            _unescape(base, &c, n)
        if status != 0 or not escaped:
            free(c.cesc)
            c.cesc = NULL
        elif not _grow(<void**> &c.cesc, <size_t> n * 8 + 8):
            status = 2
    if status != 0:
        _cols_free(&c)
        if status == 2:
            raise MemoryError("boundary_api: no memory to scan the results file")
        return None
    return _columns(&c, n, escaped)


cdef dict _columns(Cols* cp, Py_ssize_t n, bint keep_esc=False):
    """The output dict of :func:`scan_results`; takes the blocks of ``cp[0]``
    (``cesc`` too, as ``counts_esc``, with ``keep_esc``)."""
    cdef Cols c = cp[0]
    cdef dict out
    memset(cp, 0, sizeof(Cols))
    if not keep_esc:
        free(c.cesc)
        c.cesc = NULL
    try:
        out = {
            "image_id": _take(<void**> &c.image_id, np.int64, (n,)),
            "category_id": _take(<void**> &c.category_id, np.int64, (n,)),
            "score": _take(<void**> &c.score, np.float64, (n,)),
            "bbox": _take(<void**> &c.bbox, np.float64, (n, 4)),
            "seg_h": _take(<void**> &c.seg_h, np.int64, (n,)),
            "seg_w": _take(<void**> &c.seg_w, np.int64, (n,)),
            "counts_start": _take(<void**> &c.cstart, np.int64, (n,)),
            "counts_len": _take(<void**> &c.clen, np.int64, (n,)),
            "present": _take(<void**> &c.present, np.uint8, (n,)),
            "int_kind": _take(<void**> &c.int_kind, np.uint8, (n,)),
            "key_order": _take(<void**> &c.key_order, np.int32, (n,)),
        }
        if keep_esc:
            out["counts_esc"] = _take(<void**> &c.cesc, np.int64, (n,))
        return out
    finally:
        _cols_free(&c)   # frees only what an exception left untaken


def compact_counts(unsigned char[::1] buf not None, int64_t[::1] counts_start not None,
                   const int64_t[::1] counts_len not None):
    """Move every counts string to the front of ``buf``, contiguously, in order.

    Parameters
    ----------
    buf : bytearray
        The buffer :func:`scan_results` scanned.
    counts_start : numpy.ndarray of int64
        Offsets of the strings; updated in place to their new offsets.
    counts_len : numpy.ndarray of int64
        Their lengths (entries of length 0 are given the current end).

    Returns
    -------
    int
        The number of bytes now used at the front of ``buf``; the caller may
        ``del buf[used:]`` to free the rest.

    Raises
    ------
    ValueError
        If the arrays differ in length, a string lies outside ``buf``, or the
        non-empty strings are not in increasing, non-overlapping order (moving
        them would overwrite one not yet moved).
    """
    cdef Py_ssize_t n = counts_start.shape[0], i, size = buf.shape[0]
    cdef int64_t pos = 0, prev_end = 0, s, l
    cdef unsigned char* base
    if counts_len.shape[0] != n:
        raise ValueError(f"counts_start has {n} entries but counts_len {counts_len.shape[0]}")
    for i in range(n):
        s = counts_start[i]
        l = counts_len[i]
        if l == 0:
            continue
        if l < 0 or s < prev_end or s > size - l:
            raise ValueError(f"counts string {i} (start {s}, length {l}) lies outside the buffer "
                             f"or before the end of the previous one ({prev_end})")
        prev_end = s + l
    if size == 0:
        counts_start[:] = 0
        return 0
    base = &buf[0]
    with nogil:
        for i in range(n):
            l = counts_len[i]
            if l:
                memmove(base + pos, base + counts_start[i], l)
            counts_start[i] = pos
            pos += l
    return pos


#: fewest escaped bytes :func:`gather_counts` splits between threads (the first
#: copy out of a mapping is mostly page faults, which a second thread does not
#: share out: the LVIS-like set's 17 MB take 7.6-8.7 ms on one thread, 6.3-11 on
#: two, in fresh processes)
_MIN_PARALLEL_GATHER = 1 << 26


def gather_counts(unsigned char[::1] buf not None, int64_t[::1] counts_start not None,
                  int64_t[::1] counts_len not None, const int64_t[::1] counts_esc not None,
                  Py_ssize_t release=0, int num_threads=1, Py_ssize_t _min_parallel=_MIN_PARALLEL_GATHER):
    """Copy the escaped counts strings of a releasing scan out of ``buf``, unescaped.

    Parameters
    ----------
    buf : buffer
        What :func:`scan_results` scanned with ``_release``; only read.
    counts_start, counts_len : numpy.ndarray of int64
        Where the escaped strings lie (``counts_len`` 0: no string); updated in
        place to where the unescaped strings lie in the returned array.
    counts_esc : numpy.ndarray of int64
        Offset of each string's first backslash from its start, or -1.
    release : int, default 0
        When positive (``buf`` a page-aligned file mapping), the pages of
        ``buf`` behind the copy are given back every ``release`` bytes.
    num_threads : int, default 1
        Threads that copy, each a contiguous run of rows (when the strings
        hold at least ``_min_parallel`` bytes).

    Returns
    -------
    numpy.ndarray of uint8
        The strings in row order, from its start; each run of rows starts
        where its escaped strings would (so a few bytes may lie unused between
        two runs: ``counts_start`` says where each string is).  The array is as
        long as the escaped strings together (at least one byte); the caller
        may shrink it to the end of the last string.

    Raises
    ------
    ValueError
        If the arrays differ in length, a string or its first escape lies
        outside ``buf``, or the strings are not in increasing,
        non-overlapping order.
    """
    cdef Py_ssize_t n = counts_start.shape[0], i, size = buf.shape[0], j, k
    cdef int64_t prev_end = 0, s, l, e, total = 0, acc
    if counts_len.shape[0] != n or counts_esc.shape[0] != n:
        raise ValueError(f"counts_start has {n} entries but counts_len {counts_len.shape[0]} "
                         f"and counts_esc {counts_esc.shape[0]}")
    for i in range(n):
        s = counts_start[i]
        l = counts_len[i]
        e = counts_esc[i]
        if l == 0:
            continue
        if l < 0 or s < prev_end or s > size - l or e >= l or e < -1:
            raise ValueError(f"counts string {i} (start {s}, length {l}, escape {e}) lies outside "
                             f"the buffer or before the end of the previous one ({prev_end})")
        prev_end = s + l
        total += l
    arr = np.empty(max(total, 1), np.uint8)
    cdef unsigned char[::1] dst = arr
    if total == 0:
        counts_start[:] = 0
        return arr
    if release > 0:
        release = max(release, PAGE)
    k = num_threads if num_threads > 1 and total >= _min_parallel else 1
    if k == 1:
        with nogil:
            _gather_rows(&buf[0], size, &dst[0], total, counts_start, counts_len, counts_esc, 0, n, 0, release)
        return arr
    # k runs of rows with about the same escaped bytes; run j writes from
    # the escaped bytes before it (unescaping only shortens a string)
    cuts = [0]
    bases = [0]
    acc = 0
    j = 1
    for i in range(n):
        if j < k and acc >= total * j // k:
            cuts.append(i)
            bases.append(acc)
            j += 1
        acc += counts_len[i]
    cuts.append(n)
    from concurrent.futures import ThreadPoolExecutor

    def run(Py_ssize_t r):
        cdef Py_ssize_t lo = cuts[r], hi = cuts[r + 1]
        cdef int64_t at = bases[r]
        with nogil:
            _gather_rows(&buf[0], size, &dst[0], total, counts_start, counts_len, counts_esc,
                         lo, hi, at, release)

    with ThreadPoolExecutor(max_workers=len(cuts) - 1) as pool:
        list(pool.map(run, range(len(cuts) - 1)))
    return arr


cdef void _gather_rows(const unsigned char* base, Py_ssize_t size, unsigned char* out, int64_t total,
                       int64_t[::1] counts_start, int64_t[::1] counts_len, const int64_t[::1] counts_esc,
                       Py_ssize_t i0, Py_ssize_t i1, int64_t pos, Py_ssize_t release) noexcept nogil:
    """:func:`gather_counts` of rows ``i0:i1`` (validated), written from
    ``out + pos``; the pages of ``base`` behind them given back every
    ``release`` bytes (when positive)."""
    cdef Py_ssize_t i
    cdef int64_t s, l, e, rel = -1, ahead = 0
    for i in range(i0, i1):
        l = counts_len[i]
        if l == 0:
            counts_start[i] = pos
            continue
        s = counts_start[i]
        e = counts_esc[i]
        if release > 0 and rel < 0:
            rel = s // PAGE * PAGE
            ahead = s + release
            _populate(base, s, ahead, size, _MADV_POPULATE_READ)
            _populate(out, pos, pos + release, total, _MADV_POPULATE_WRITE)
        counts_start[i] = pos
        if e < 0:
            memcpy(out + pos, base + s, <size_t> l)
            pos += l
        else:
            # validated by the scan: a backslash is followed by the byte it stands for
            memcpy(out + pos, base + s, <size_t> e)
            pos += e
            pos += _unescape_string(base + s + e, base + s + l, out + pos)
            counts_len[i] = pos - counts_start[i]
        if release > 0 and s + l - rel >= release:
            _give_back(<cptr> base, rel, s + l)
            rel = (s + l) // PAGE * PAGE
        if release > 0 and s + l >= ahead - (release >> 1):
            _populate(base, ahead, ahead + release, size, _MADV_POPULATE_READ)
            _populate(out, pos, pos + release, total, _MADV_POPULATE_WRITE)
            ahead += release
