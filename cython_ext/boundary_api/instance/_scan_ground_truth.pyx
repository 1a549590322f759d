# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# Longer than 800 lines because the whole-file scan and the split (parallel) scan share the
# grammar of every object and the top-level scan that pauses at the annotations: apart, they
# would export those through a .pxd.
"""Native scanner for COCO instances *ground-truth* JSON: the file into column arrays.

Private module (``boundary_api.instance._scan_ground_truth``).  Same conventions
as the results scanner (``_scan_results``: strict JSON grammar, numbers exactly as
float() gives them, None for anything outside the schema, never a read outside
the buffer), but every JSON value of a key outside the schema is accepted and
skipped, so strings are validated in full (UTF-8, escapes).  The core the
scanners share (token readers, key codes, column buffers, a split scan's chunk
loop) is ``_json``.  A large file's annotations array may be scanned in chunks
on several threads, with the very same outcome as on one (see "split scan"
below and :func:`scan_ground_truth`).
"""

from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t, uintptr_t, INT64_MIN, INT64_MAX
from libc.stdlib cimport calloc, realloc, free
from libc.string cimport memcpy, memmove, memset, memcmp

from boundary_api.instance._json cimport (
    cptr, PAGE, _ws, _int, _num, _colon, _decode, _lit, _skip, _sep, _next, K_IMAGES, K_ANNOTATIONS,
    K_CATEGORIES, K_ID, K_HEIGHT, K_WIDTH, K_IMAGE_ID, K_CATEGORY_ID, K_AREA, K_ISCROWD, K_BBOX,
    K_IGNORE, K_SEGMENTATION, _any_key, _num4, _counts_string, _rle_object, Vec,
    Cols, _vgrow, _reserve, _pi, _pf, _pu, _cols_free, _take_vec, _polygons, _open_array, _objects,
    _chunk_starts, _check_threads)

import numpy as np

# The pages of the columns of the chunks of a split scan (page mappings of
# their own on Linux) are moved into the whole columns (mremap) instead of
# copied into pages the process has never touched, each of which costs a
# page fault (about a third of the copy's price on a plain machine, most of
# it on some virtual ones).  Elsewhere the chunks use malloc and are copied.
cdef extern from *:
    """
    #if defined(__linux__)
    #include <sys/mman.h>
    #define BA_CAN_MAP 1
    /* move the n bytes (whole pages) at src to dst (page aligned), replacing
       what was mapped there; 0 when done */
    static int ba_move(void *src, size_t n, void *dst) {
        return mremap(src, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, dst) == dst ? 0 : -1;
    }
    #else
    #define BA_CAN_MAP 0
    static int ba_move(void *src, size_t n, void *dst) { (void)src; (void)n; (void)dst; return -1; }
    #endif
    """
    bint CAN_MAP "BA_CAN_MAP"
    int _move "ba_move" (void* src, size_t n, void* dst) noexcept nogil


# the keys known in each context (bits of the key codes of _json.pxd)
cdef enum:
    M_TOP = (1 << K_IMAGES) | (1 << K_ANNOTATIONS) | (1 << K_CATEGORIES)
    M_IMG = (1 << K_ID) | (1 << K_HEIGHT) | (1 << K_WIDTH)
    M_CAT = 1 << K_ID
    M_ANN = ((1 << K_ID) | (1 << K_IMAGE_ID) | (1 << K_CATEGORY_ID) | (1 << K_AREA)
             | (1 << K_ISCROWD) | (1 << K_BBOX) | (1 << K_IGNORE) | (1 << K_SEGMENTATION))
    # (``iscrowd`` is optional: LVIS annotations have none; ``ann_has_iscrowd`` says which do)
    M_ANN_REQUIRED = (1 << K_ID) | (1 << K_IMAGE_ID) | (1 << K_CATEGORY_ID) | (1 << K_AREA)

# (the nesting limit of the whole document, MAX_DEPTH, is the tokenizer's: _json.pxd)
cdef enum:
    # most keys outside the schema in one interpreted object (duplicates are
    # looked for among them pairwise); more gives None
    KS_CAP = 64

# output columns
cdef enum:
    C_IMG_ID = 0
    C_IMG_H
    C_IMG_W
    C_CAT_ID
    C_ANN_ID
    C_ANN_IMG
    C_ANN_CAT
    C_ANN_AREA        # float64
    C_ANN_CROWD
    C_ANN_BBOX        # float64, 4 per annotation
    C_ANN_HAS_BBOX    # uint8
    C_ANN_IGNORE      # uint8
    C_ANN_KIND        # uint8
    C_ANN_RLE_H
    C_ANN_RLE_W
    C_ANN_CSTART
    C_ANN_CLEN
    C_ANN_CESC        # uint8
    C_POLY_COORDS     # float64
    C_POLY_OFF
    C_ANN_POLY_OFF
    C_RLE_COUNTS
    C_ANN_RLE_OFF
    C_ANN_HAS_CROWD   # uint8
    NCOL


cdef struct KeySet:
    # keys outside the schema seen in the current object: offset into the
    # buffer (>= 0) or -(offset into buf) - 1 for a decoded escaped key
    int64_t ref[KS_CAP]
    Py_ssize_t len[KS_CAP]
    int n
    Vec buf           # decoded escaped keys (bytes)


cdef struct GT:
    Cols c            # columns 0 .. NCOL-1 (page mappings of their own: chunks of a split scan)
    KeySet top
    KeySet obj
    int64_t span[6]   # images, categories, annotations: [start, end) each


cdef cptr _gkey(cptr p, cptr end, cptr base, GT* g, KeySet* ks, uint32_t known,
                int* code) noexcept nogil:
    """A key at ``p`` (NULL unless on a quote), escaped or not; its code
    (:func:`_json._classify`) when in ``known``, else 0.

    Keys outside ``known`` are remembered in ``ks`` (when given) and a repeated
    one gives NULL; repeats of known keys are the caller's to refuse.
    """
    cdef int esc, c, i
    cdef cptr q, s, kp, other
    cdef Py_ssize_t n, dl, off
    cdef int64_t ref
    q = _any_key(p, end, &c, &esc)
    if q == NULL:
        return NULL
    if c and ((known >> c) & 1):
        code[0] = c
        return q
    code[0] = 0
    if ks == NULL:
        return q
    s = p + 1
    n = q - 1 - s
    if ks.n == KS_CAP:
        return NULL
    if esc:
        off = ks.buf.n
        if off + n > ks.buf.cap and not _vgrow(&ks.buf, off + n, 1, 0):
            g.c.nomem = 1
            return NULL
        dl = _decode(s, q - 1, <unsigned char*> ks.buf.data + off, n)
        if dl < 0:
            return NULL
        ks.buf.n = off + dl
        ref = -(<int64_t> off) - 1
        kp = <cptr> ks.buf.data + off
        n = dl
    else:
        ref = s - base
        kp = s
    for i in range(ks.n):
        if ks.len[i] == n:
            if ks.ref[i] >= 0:
                other = base + ks.ref[i]
            else:
                other = <cptr> ks.buf.data + (-ks.ref[i] - 1)
            if memcmp(other, kp, n) == 0:
                return NULL
    ks.ref[ks.n] = ref
    ks.len[ks.n] = n
    ks.n += 1
    return q


cdef inline cptr _open(cptr p, cptr end, GT* g) noexcept nogil:
    """Into an image, category or annotation object at ``p`` (on '{'): its
    first key (no key outside the schema met yet)."""
    g.obj.n = 0
    g.obj.buf.n = 0
    return _ws(p + 1, end)


cdef inline cptr _member(cptr p, cptr end, cptr base, GT* g, uint32_t known, uint32_t* seen,
                         int* code) noexcept nogil:
    """The member of an image, category or annotation object at ``p`` (on
    its key): the position of its value and the code of its key when in
    ``known`` (a repeat, in ``seen``, gives NULL); a key outside ``known``
    (code 0) is remembered in ``g.obj`` and its value skipped (the position
    after it)."""
    p = _gkey(p, end, base, g, &g.obj, known, code)
    if p == NULL:
        return NULL
    p = _colon(p, end)
    if p == NULL:
        return NULL
    if code[0] == 0:
        return _skip(p, end, 3)
    if seen[0] & (1u << code[0]):
        return NULL
    seen[0] |= 1u << code[0]
    return p


cdef cptr _image(cptr p, cptr end, cptr base, GT* g) noexcept nogil:
    """One image object at ``p`` (on '{')."""
    cdef int code
    cdef uint32_t seen = 0
    cdef int64_t v[3]
    cdef bint more = 1
    p = _open(p, end, g)
    while more:
        p = _member(p, end, base, g, M_IMG, &seen, &code)
        if p != NULL and code:
            p = _int(p, end, &v[code - K_ID])
            if p != NULL and code != K_ID and v[code - K_ID] < 1:
                return NULL
        p = _next(p, end, 125, &more)
        if p == NULL:
            return NULL
    if seen != M_IMG:
        return NULL
    if not (_pi(&g.c, C_IMG_ID, v[0]) and _pi(&g.c, C_IMG_H, v[1]) and _pi(&g.c, C_IMG_W, v[2])):
        return NULL
    return p


cdef cptr _category(cptr p, cptr end, cptr base, GT* g) noexcept nogil:
    """One category object at ``p`` (on '{')."""
    cdef int code
    cdef uint32_t seen = 0
    cdef bint more = 1
    cdef int64_t v = 0
    p = _open(p, end, g)
    while more:
        p = _member(p, end, base, g, M_CAT, &seen, &code)
        if p != NULL and code:
            p = _int(p, end, &v)
        p = _next(p, end, 125, &more)
        if p == NULL:
            return NULL
    if seen != M_CAT or not _pi(&g.c, C_CAT_ID, v):
        return NULL
    return p


cdef struct Seg:
    # an annotation's segmentation (what _gt_counts leaves)
    GT* g
    int64_t cstart    # kind 2: where its counts string lies (after the quote, escaped)
    int64_t clen
    uint8_t kind      # 0 none, 1 polygons, 2 compressed RLE, 3 uncompressed RLE
    uint8_t escaped   # kind 2: the string holds a backslash


cdef cptr _gt_counts(cptr p, cptr end, cptr base, void* ctx) noexcept nogil:
    """An RLE's counts (``_json._rle_object``'s counts reader): a string of
    printable ASCII (escapes ``\\\\ \\" \\/`` and ``\\uXXXX`` of a
    byte 0x20..0x7f) or an array of integer tokens >= 0."""
    cdef Seg* seg = <Seg*> ctx
    cdef Cols* c = &seg.g.c
    cdef Py_ssize_t esc
    cdef bint more
    cdef int64_t v
    cdef cptr q
    if p < end and p[0] == 34:
        seg.kind = 2
        q = _counts_string(p, end, 1, &esc)
        if q == NULL:
            return NULL
        seg.cstart = p + 1 - base
        seg.clen = q - 1 - (p + 1)
        seg.escaped = esc >= 0
        return q
    seg.kind = 3
    p = _open_array(p, end, &more)
    if p == NULL:
        return NULL
    while more:
        p = _int(p, end, &v)
        if p == NULL or v < 0 or not _pi(c, C_RLE_COUNTS, v):
            return NULL
        p = _sep(p, end, 93, &more)
        if p == NULL:
            return NULL
    return p


cdef cptr _annotation(cptr p, cptr end, cptr base, GT* g) noexcept nogil:
    """One annotation object at ``p`` (on '{')."""
    cdef int code, k
    cdef uint32_t seen = 0
    cdef int64_t ids[3]
    cdef int64_t crowd = 0
    cdef int64_t hw[2]
    cdef double area = 0.0, x = 0.0
    cdef double box[4]
    cdef uint8_t ignore = 0, ints
    cdef bint more = 1, is_int, counts_first
    cdef Cols* c = &g.c
    cdef Seg seg
    memset(&seg, 0, sizeof(Seg))
    seg.g = g
    hw[0] = hw[1] = 0
    box[0] = box[1] = box[2] = box[3] = 0.0
    p = _open(p, end, g)
    while more:
        p = _member(p, end, base, g, M_ANN, &seen, &code)
        if p == NULL:
            return NULL
        if code == K_ID or code == K_IMAGE_ID or code == K_CATEGORY_ID:
            p = _int(p, end, &ids[0 if code == K_ID else (1 if code == K_IMAGE_ID else 2)])
        elif code == K_AREA:
            p = _num(p, end, &area, &is_int)
        elif code == K_ISCROWD:
            p = _int(p, end, &crowd)
            if p != NULL and crowd != 0 and crowd != 1:
                return NULL
        elif code == K_BBOX:
            p = _num4(p, end, box, &ints)
        elif code == K_IGNORE:
            if p < end and p[0] == 116:
                ignore = 2
                p = _lit(p, end, b"true", 4)
            elif p < end and p[0] == 102:
                ignore = 1
                p = _lit(p, end, b"false", 5)
            else:
                p = _num(p, end, &x, &is_int)
                ignore = 1 if x == 0.0 else 2
        elif code == K_SEGMENTATION:
            if p < end and p[0] == 91:
                seg.kind = 1
                p = _polygons(p, end, c, C_POLY_COORDS, C_POLY_OFF)
            elif p < end and p[0] == 123:
                p = _rle_object(p, end, base, 1, INT64_MIN, INT64_MAX, hw, &counts_first, _gt_counts, &seg)
            else:
                return NULL
        p = _next(p, end, 125, &more)
        if p == NULL:
            return NULL
    if (seen & M_ANN_REQUIRED) != M_ANN_REQUIRED:
        return NULL
    for k in range(4):
        if not _pf(c, C_ANN_BBOX, box[k]):
            return NULL
    if not (_pi(c, C_ANN_ID, ids[0]) and _pi(c, C_ANN_IMG, ids[1])
            and _pi(c, C_ANN_CAT, ids[2]) and _pf(c, C_ANN_AREA, area)
            and _pi(c, C_ANN_CROWD, crowd)
            and _pu(c, C_ANN_HAS_BBOX, 1 if seen & (1u << K_BBOX) else 0)
            and _pu(c, C_ANN_IGNORE, ignore) and _pu(c, C_ANN_KIND, seg.kind)
            and _pi(c, C_ANN_RLE_H, hw[0]) and _pi(c, C_ANN_RLE_W, hw[1])
            and _pi(c, C_ANN_CSTART, seg.cstart if seg.kind == 2 else 0)
            and _pi(c, C_ANN_CLEN, seg.clen if seg.kind == 2 else 0)
            and _pu(c, C_ANN_CESC, seg.escaped)
            and _pi(c, C_ANN_POLY_OFF, c.col[C_POLY_OFF].n - 1)
            and _pi(c, C_ANN_RLE_OFF, c.col[C_RLE_COUNTS].n)
            and _pu(c, C_ANN_HAS_CROWD, 1 if seen & (1u << K_ISCROWD) else 0)):
        return NULL
    return p


cdef cptr _array_of(cptr p, cptr end, cptr base, GT* g, int which) noexcept nogil:
    """The array of images (1), annotations (2) or categories (3) at ``p`` (on '[')."""
    cdef bint more
    p = _open_array(p, end, &more)
    if p == NULL:
        return NULL
    while more:
        if p >= end or p[0] != 123:
            return NULL
        if which == K_IMAGES:
            p = _image(p, end, base, g)
        elif which == K_ANNOTATIONS:
            p = _annotation(p, end, base, g)
        else:
            p = _category(p, end, base, g)
        p = _next(p, end, 93, &more)
        if p == NULL:
            return NULL
    return p


cdef struct Top:
    # where a paused top-level scan stands (see _gt_top)
    Py_ssize_t pos        # resume: the byte after the annotations array
    uint32_t seen         # top-level keys of the schema met so far
    bint resume           # the next call continues after the annotations array
    Py_ssize_t ann_open   # paused: offset of the annotations array's '['
    Py_ssize_t ann_first  # paused: offset of its first object (not checked yet)


cdef int _gt_top(cptr base, Py_ssize_t size, GT* g, Top* t, bint pause) noexcept nogil:
    """Scan the top-level object: 0 accepted, 1 refused, 2 out of memory,
    5 paused (only with ``pause``).

    With ``pause`` the scan stops on reaching a non-empty ``annotations``
    array, with ``t.ann_open`` and ``t.ann_first`` set and the key counted in
    ``t.seen``; the caller scans the array and resumes the scan after it by
    setting ``t.pos`` (the byte after its ``]``) and ``t.resume``, with the
    annotation columns in ``g`` as the array's scan here would have left them.
    Without a pause it is the whole-file scan.
    """
    cdef cptr p
    cdef cptr end = base + size
    cdef cptr start
    cdef cptr q
    cdef int code, k
    cdef uint32_t seen = t.seen
    cdef bint more = 1, after_value = t.resume
    if t.resume:
        p = base + t.pos
        t.resume = 0
    else:
        if not (_pi(&g.c, C_POLY_OFF, 0) and _pi(&g.c, C_ANN_POLY_OFF, 0) and _pi(&g.c, C_ANN_RLE_OFF, 0)):
            return 2
        p = _ws(base, end)
        if p >= end or p[0] != 123:
            return 1
        p = _ws(p + 1, end)
    while more:
        if not after_value:
            p = _gkey(p, end, base, g, &g.top, M_TOP, &code)
            if p != NULL:
                p = _colon(p, end)
            if p != NULL:
                if code == 0:
                    p = _skip(p, end, 1)
                elif (seen & (1u << code)) or p >= end or p[0] != 91:
                    p = NULL
                else:
                    seen |= 1u << code
                    start = p
                    if pause and code == K_ANNOTATIONS:
                        q = _ws(p + 1, end)
                        if q < end and q[0] != 93:
                            t.seen = seen
                            t.ann_open = p - base
                            t.ann_first = q - base
                            return 5
                    p = _array_of(p, end, base, g, code)
                    if p != NULL:
                        k = 0 if code == K_IMAGES else (2 if code == K_CATEGORIES else 4)
                        g.span[k] = start - base
                        g.span[k + 1] = p - base
        after_value = 0
        if p != NULL:
            p = _sep(p, end, 125, &more)
        if p == NULL:
            return 2 if g.c.nomem else 1
    if seen != M_TOP:
        return 1
    p = _ws(p, end)
    return 0 if p == end else 1


cdef int _gt(cptr base, Py_ssize_t size, GT* g) noexcept nogil:
    """Scan the whole file on this thread: 0 accepted, 1 refused, 2 out of memory."""
    cdef Top t
    memset(&t, 0, sizeof(Top))
    return _gt_top(base, size, g, &t, 0)


cdef void _gt_free(GT* g) noexcept nogil:
    _cols_free(&g.c)
    free(g.top.buf.data)
    free(g.obj.buf.data)
    g.top.buf.data = NULL
    g.obj.buf.data = NULL


# name, dtype, which count gives its length (0 images, 1 categories, 2 annotations,
# 3 own element count), width
_GT_COLUMNS = (
    ("img_id", np.int64, 0, 1), ("img_height", np.int64, 0, 1), ("img_width", np.int64, 0, 1),
    ("cat_id", np.int64, 1, 1),
    ("ann_id", np.int64, 2, 1), ("ann_image_id", np.int64, 2, 1),
    ("ann_category_id", np.int64, 2, 1), ("ann_area", np.float64, 2, 1),
    ("ann_iscrowd", np.int64, 2, 1), ("ann_bbox", np.float64, 2, 4),
    ("ann_has_bbox", np.uint8, 2, 1), ("ann_ignore", np.uint8, 2, 1),
    ("ann_seg_kind", np.uint8, 2, 1), ("ann_rle_h", np.int64, 2, 1),
    ("ann_rle_w", np.int64, 2, 1), ("ann_counts_start", np.int64, 2, 1),
    ("ann_counts_len", np.int64, 2, 1), ("ann_counts_escaped", np.uint8, 2, 1),
    ("poly_coords", np.float64, 3, 1), ("poly_off", np.int64, 3, 1),
    ("ann_poly_off", np.int64, 3, 1), ("rle_counts", np.int64, 3, 1),
    ("ann_rle_off", np.int64, 3, 1), ("ann_has_iscrowd", np.uint8, 2, 1),
)


assert len(_GT_COLUMNS) == NCOL


# --------------------------------------------------------------------------- split scan
#
# The top level is scanned on the calling thread up to the annotations array
# (images and categories before it included), which is then cut at k-1
# candidate object starts (spread from the array's first object to the end of
# the file) and scanned as k chunks, each into its own columns (the chain of
# hand-overs of _json.pyx, "split scans"): the first k-1 on other threads, the
# last on the calling thread once it has done the caller's ``meanwhile`` work
# (decoding the images, say).  The columns of the chunks on the chain,
# appended in order (offsets into the polygon and counts columns shifted),
# are the whole-file scan's.  The top level then goes on after the array on
# the calling thread.  Running out of memory anywhere in a split scan makes
# it scan the whole file on one thread instead, so that only that scan
# decides between its columns and a MemoryError.

#: files below this size are scanned on one thread (a split costs thread starts)
MIN_PARALLEL_BYTES = 2 << 20
#: at most this many chunks (and threads) whatever ``num_threads`` says
MAX_CHUNKS = 256
#: a byte of the images and categories the caller decodes while the other
#: threads scan (``meanwhile``) is guessed to take as long as this many bytes
#: of annotations to scan (decoding into Python objects, msgspec's import)
MEANWHILE_WEIGHT = 3

# bytes per element of each column
cdef Py_ssize_t _ITEM[NCOL]
for _c in range(NCOL):
    _ITEM[_c] = np.dtype(_GT_COLUMNS[_c][1]).itemsize
del _c

# the columns a chunk fills (every annotation column; the polygon and counts
# columns only from annotations too): C_ANN_ID .. NCOL - 1
cdef enum:
    C_FIRST_ANN = C_ANN_ID


cdef cptr _read_annotation(cptr p, cptr end, cptr base, void* g) noexcept nogil:
    """:func:`_annotation` as a split scan's object reader (``_json._objects``)."""
    return _annotation(p, end, base, <GT*> g)


cdef int _ann_chunk(cptr base, Py_ssize_t size, GT* g, const Py_ssize_t* starts, Py_ssize_t k,
                    Py_ssize_t i, Py_ssize_t* next_out, Py_ssize_t* end_out) noexcept nogil:
    """Chunk ``i`` of a split scan: annotation objects from ``starts[i]`` into ``g``.

    Returns 0 when every object passed and either the array closed
    (``next_out`` -1, ``end_out`` the byte after its ``]``) or the next object
    starts exactly at ``starts[m]`` for some ``m > i`` (``next_out`` m; the
    candidates passed before it are dropped); 1 when refused, 2 when out of
    memory.  What an object holds is scanned exactly as in the whole-file
    scan, the offsets into ``g``'s own polygon and counts columns (which a
    chunk after the first starts empty: one less polygon offset) shifted when
    the chunk's columns are appended.
    """
    cdef Py_ssize_t reached
    cdef int status = _objects(base, size, starts[i], starts + i + 1, k - i - 1, _read_annotation,
                               <void*> g, &g.c, &reached, end_out)
    if status == 0:
        next_out[0] = -1 if reached < 0 else i + 1 + reached
    return status


cdef void _append_chunk(GT* dst, GT* src, const Py_ssize_t* at, Py_ssize_t part,
                        Py_ssize_t parts) noexcept nogil:
    """Copy part ``part`` of ``parts`` (of the elements of each column) of the
    annotation columns of chunk ``src`` into ``dst`` (already large enough),
    its columns ``c`` from element ``at[c]``, shifting its offsets by the
    elements of ``dst`` before them."""
    cdef int c
    cdef Py_ssize_t j, n, lo, hi, add
    cdef int64_t* d
    cdef int64_t* s
    for c in range(C_FIRST_ANN, NCOL):
        n = src.c.col[c].n
        lo = n * part // parts
        hi = n * (part + 1) // parts
        if hi <= lo:
            continue
        if c == C_POLY_OFF or c == C_ANN_POLY_OFF or c == C_ANN_RLE_OFF:
            add = at[C_POLY_COORDS] if c == C_POLY_OFF else (at[C_POLY_OFF] if c == C_ANN_POLY_OFF
                                                             else at[C_RLE_COUNTS])
            d = (<int64_t*> dst.c.col[c].data) + at[c]
            s = <int64_t*> src.c.col[c].data
            for j in range(lo, hi):
                d[j] = s[j] + add
        else:
            memcpy(dst.c.col[c].data + (at[c] + lo) * _ITEM[c], src.c.col[c].data + lo * _ITEM[c],
                   <size_t> ((hi - lo) * _ITEM[c]))


#: a chunk's column of at least this many bytes has its pages moved into the
#: whole column where the platform can (else it is copied)
MOVE_MIN_BYTES = 64 << 10
#: private switch (tests): False copies every chunk
MOVE_PAGES = True
cdef Py_ssize_t _MOVE_MIN = MOVE_MIN_BYTES   # (read from MOVE_MIN_BYTES by each split scan)


cdef void _move_column(GT* dst, GT* src, int c, const Py_ssize_t* at) noexcept nogil:
    """Column ``c`` of chunk ``src`` (a page mapping) into ``dst`` from
    element ``at[c]``, offsets shifted as in :func:`_append_chunk`; ``dst``
    has two spare pages after its elements, and every earlier chunk is in.

    The elements are shifted within ``src``'s own pages (less than a page)
    so that they lie there as they must in ``dst``'s pages; the first page's
    part is copied (the previous chunk's end shares that page), the others
    are moved, replacing ``dst``'s untouched pages (a failed move copies)."""
    cdef Py_ssize_t item = _ITEM[c], n = src.c.col[c].n, j, nbytes, delta, first, span
    cdef int64_t add
    cdef int64_t* v
    cdef char* d
    cdef char* s = src.c.col[c].data
    if n == 0:
        return
    if c == C_POLY_OFF or c == C_ANN_POLY_OFF or c == C_ANN_RLE_OFF:
        add = at[C_POLY_COORDS] if c == C_POLY_OFF else (at[C_POLY_OFF] if c == C_ANN_POLY_OFF
                                                         else at[C_RLE_COUNTS])
        v = <int64_t*> s
        for j in range(n):
            v[j] += add
    nbytes = n * item
    d = dst.c.col[c].data + at[c] * item
    if nbytes < _MOVE_MIN:
        memcpy(d, s, <size_t> nbytes)
        return
    delta = <Py_ssize_t> (<uintptr_t> d % PAGE)
    if delta:
        memmove(s + delta, s, <size_t> nbytes)
    first = min(PAGE - delta, nbytes)
    memcpy(d, s + delta, <size_t> first)
    span = (delta + nbytes + PAGE - 1) // PAGE * PAGE
    if span > PAGE and _move(s + PAGE, <size_t> (span - PAGE), d - delta + PAGE) != 0:
        memcpy(d + first, s + PAGE, <size_t> (nbytes - first))


cdef class _SplitScan:
    """The state of one split scan: the paused top level, chunk starts,
    per-chunk columns and outcomes.  Its methods run without the GIL; the C
    blocks still owned when it dies are freed then."""
    cdef const unsigned char* base
    cdef Py_ssize_t size
    cdef Py_ssize_t k          # chunks allocated
    cdef Py_ssize_t n          # chunks in use
    cdef Py_ssize_t* starts    # first object of each chunk
    cdef Py_ssize_t* nexts     # the chunk each hands over to, -1 at the array's end
    cdef Py_ssize_t* ends      # the byte after the array's ']' (when nexts is -1)
    cdef Py_ssize_t* at        # NCOL per chunk: where its columns go in g[0]
    cdef int* status
    cdef GT* g                 # per chunk; g[0] also holds the top level and the output
    cdef Top top
    cdef bint mapped           # the columns of chunks 1.. are page mappings (see _move_column)
    cdef Py_ssize_t chain_next

    def __cinit__(self, Py_ssize_t k):
        cdef Py_ssize_t i
        self.k = k
        self.starts = <Py_ssize_t*> calloc(k, sizeof(Py_ssize_t))
        self.nexts = <Py_ssize_t*> calloc(k, sizeof(Py_ssize_t))
        self.ends = <Py_ssize_t*> calloc(k, sizeof(Py_ssize_t))
        self.at = <Py_ssize_t*> calloc(k * NCOL, sizeof(Py_ssize_t))
        self.status = <int*> calloc(k, sizeof(int))
        self.g = <GT*> calloc(k, sizeof(GT))
        memset(&self.top, 0, sizeof(Top))
        self.mapped = CAN_MAP and MOVE_PAGES
        if self.g != NULL:
            for i in range(1, k):
                self.g[i].c.mapped = self.mapped
        if (self.starts == NULL or self.nexts == NULL or self.ends == NULL or self.at == NULL
                or self.status == NULL or self.g == NULL):
            raise MemoryError("boundary_api: no memory to split the ground-truth scan")

    def __dealloc__(self):
        cdef Py_ssize_t i
        if self.g != NULL:
            for i in range(self.k):
                _gt_free(&self.g[i])
        free(self.g)
        free(self.starts)
        free(self.nexts)
        free(self.ends)
        free(self.at)
        free(self.status)

    def scan(self, Py_ssize_t i):
        """Chunk ``i`` (see :func:`_ann_chunk`)."""
        with nogil:
            self.status[i] = _ann_chunk(self.base, self.size, &self.g[i], self.starts, self.n, i,
                                        &self.nexts[i], &self.ends[i])

    def append(self, Py_ssize_t i, Py_ssize_t part, Py_ssize_t parts):
        """Part ``part`` of ``parts`` of chunk ``i``'s columns into ``g[0]`` at ``at[i]``."""
        with nogil:
            _append_chunk(&self.g[0], &self.g[i], &self.at[i * NCOL], part, parts)


# what _split returns when the whole file is to be scanned on one thread
cdef object _WHOLE = object()


cdef object _split(const unsigned char* base, Py_ssize_t size, Py_ssize_t num_threads, object meanwhile,
                   list trace):
    """The split scan of ``base[:size]`` on up to ``num_threads`` threads: the
    output dict, None (refused) or ``_WHOLE`` (scan the whole file instead).

    ``meanwhile`` (when given and the annotations are scanned on other
    threads) is called on this thread while they run, with the spans of the
    images and categories arrays already scanned (those before the
    annotations array)."""
    cdef Py_ssize_t k = min(num_threads, MAX_CHUNKS), i, first, n, c, total
    cdef Py_ssize_t rest, extra, mine, share
    cdef Py_ssize_t end_of_array = 0
    cdef _SplitScan job = _SplitScan(k)
    cdef int status
    cdef GT* g0 = &job.g[0]
    global _MOVE_MIN
    _MOVE_MIN = MOVE_MIN_BYTES
    job.base = base
    job.size = size
    with nogil:
        status = _gt_top(base, size, g0, &job.top, 1)
    if status != 5:
        # no non-empty annotations array: this was the whole-file scan
        if trace is not None:
            trace.append(("unsplit", 1, -1))
        if status == 0:
            return _output(g0)
        if status == 2:
            raise MemoryError("boundary_api: no memory to scan the ground-truth file")
        return None
    first = job.top.ann_first
    spans = {}
    if meanwhile is not None and job.top.seen & (1u << K_IMAGES):
        spans["images_span"] = (g0.span[0], g0.span[1])
    if meanwhile is not None and job.top.seen & (1u << K_CATEGORIES):
        spans["categories_span"] = (g0.span[2], g0.span[3])
    # chunks 0 .. k-2 go to other threads, each ``share`` bytes; the last to
    # this thread after ``meanwhile``, so fewer bytes (what ``meanwhile`` will
    # take, guessed from its spans), but at least half a share: the chunks
    # after the first are copied once scanned, so the smaller the better
    rest = size - first
    extra = sum(e - s for s, e in spans.values()) * MEANWHILE_WEIGHT
    mine = max((rest + extra) // k - extra, rest // (2 * k))
    share = (rest - mine) // (k - 1)
    starts = _chunk_starts(base, size, first, first, share, k)
    n = len(starts)
    job.n = n
    for i in range(n):
        job.starts[i] = starts[i]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=max(n - 1, 1)) as pool:
        try:
            futures = [pool.submit(job.scan, i) for i in range(n - 1)]
        except RuntimeError:
            # a thread could not start: once the pool has ended (chunks
            # already queued scanned or not), the whole file on this thread
            futures = None
        if futures is not None:
            if n > 1 and meanwhile is not None:
                meanwhile(spans)
            job.scan(n - 1)
            for f in futures:
                f.result()
            # the chain of hand-overs from the first object
            chain = []
            i = 0
            while True:
                status = job.status[i]
                if status == 1:
                    if trace is not None:
                        trace.append(("refused", n, i))
                    return None
                if status != 0:
                    if trace is not None:
                        trace.append(("fallback", n, i))
                    return _WHOLE
                chain.append(i)
                if job.nexts[i] < 0:
                    break
                i = job.nexts[i]
            end_of_array = job.ends[i]
            # where each chunk's columns go, the whole columns' room (two spare
            # pages when chunks' pages are moved in: see _move_column)
            for c in range(C_FIRST_ANN, NCOL):
                total = g0.c.col[c].n
                for i in chain[1:]:
                    job.at[i * NCOL + c] = total
                    total += job.g[i].c.col[c].n
                if not _reserve(&g0.c.col[c], total + (2 * PAGE // _ITEM[c] if job.mapped else 0), _ITEM[c]):
                    if trace is not None:
                        trace.append(("fallback", n, -1))
                    return _WHOLE
            for c in range(C_FIRST_ANN, NCOL):
                total = g0.c.col[c].n
                for i in chain[1:]:
                    total += job.g[i].c.col[c].n
                g0.c.col[c].n = total
            if len(chain) > 1 and job.mapped:
                # each column's chunks in order: a chunk's first page goes where the previous one ended
                chunks = [<Py_ssize_t> i for i in chain[1:]]
                for i in chunks:
                    job.chain_next = i
                    with nogil:
                        for c in range(C_FIRST_ANN, NCOL):
                            _move_column(&job.g[0], &job.g[job.chain_next], c, &job.at[job.chain_next * NCOL])
            elif len(chain) > 1:
                # the copies side by side: each chunk's in as many parts as threads
                pieces = [(i, part) for i in chain[1:] for part in range(n)]
                list(pool.map(job.append, [p[0] for p in pieces], [p[1] for p in pieces],
                              [n] * len(pieces)))
    if futures is None:
        if trace is not None:
            trace.append(("fallback", n, -1))
        return _WHOLE
    for i in range(1, n):
        _gt_free(&job.g[i])
    g0.span[4] = job.top.ann_open
    g0.span[5] = end_of_array
    job.top.pos = end_of_array
    job.top.resume = 1
    with nogil:
        status = _gt_top(base, size, g0, &job.top, 0)
    if status == 1:
        if trace is not None:
            trace.append(("refused", n, -1))
        return None
    if status != 0:
        if trace is not None:
            trace.append(("fallback", n, -1))
        return _WHOLE
    if trace is not None:
        trace.append(("split", n, len(chain)))
    return _output(g0)


cdef dict _output(GT* g):
    """The output dict of :func:`scan_ground_truth`; takes the column blocks
    of ``g`` (the caller frees what is left)."""
    cdef Py_ssize_t counts[3]
    cdef Py_ssize_t n
    cdef int c
    counts[0] = g.c.col[C_IMG_ID].n
    counts[1] = g.c.col[C_CAT_ID].n
    counts[2] = g.c.col[C_ANN_ID].n
    out = {"images_span": np.array([g.span[0], g.span[1]], np.int64),
           "categories_span": np.array([g.span[2], g.span[3]], np.int64),
           "annotations_span": np.array([g.span[4], g.span[5]], np.int64)}
    for c in range(NCOL):
        name, dtype, which, width = _GT_COLUMNS[c]
        n = g.c.col[c].n if which == 3 else counts[which]
        out[name] = _take_vec(&g.c.col[c], _ITEM[c], dtype, (n, width) if width > 1 else (n,))
    return out


def scan_ground_truth(const unsigned char[::1] buf not None, num_threads=1, *, meanwhile=None,
                      _min_parallel_bytes=None, _trace=None):
    """Parse a COCO instances ground-truth JSON file into column arrays, or return ``None``.

    Parameters
    ----------
    buf : numpy.ndarray of uint8, bytes or bytearray
        The whole file (any contiguous byte buffer, read-only is enough; it is
        never modified).
    num_threads : int, default 1
        Threads to scan with.  In a file of at least
        :data:`MIN_PARALLEL_BYTES`, the annotations array is cut into
        ``num_threads`` chunks (at most :data:`MAX_CHUNKS`) at likely object
        starts, scanned side by side; the outcome (columns, spans, ``None``,
        ``MemoryError``) is the same as on one thread for every input.
    meanwhile : callable, optional
        Called on the calling thread (with the GIL) while other threads scan
        the annotations (only then), with a dict of the ``images_span`` and
        ``categories_span`` of those arrays the scan has already passed (the
        ones before the annotations array), as ``(start, end)`` tuples; what
        it raises is raised once the scan threads ended.  The caller's own
        work (decoding the images, say) thus overlaps the scan.
    _min_parallel_bytes : int, optional
        Private (tests): the file size from which to split, instead of
        :data:`MIN_PARALLEL_BYTES`.
    _trace : list, optional
        Private (tests): receives tuples saying how the scan went:
        ``("single", 1, -1)`` (the whole file on this thread),
        ``("unsplit", 1, -1)`` (no non-empty annotations array to split: the
        top-level scan was the whole scan), ``("split", k, m)`` (``k``
        chunks, ``m`` of them on the chain of hand-overs), ``("refused", k,
        i)`` (chunk ``i`` of the chain, or ``-1``: the top level after the
        array, refused: ``None`` without a second scan) or ``("fallback", k,
        i)`` (out of memory; then the whole-file scan's tuple follows).

    Returns
    -------
    dict of numpy.ndarray or None
        ``None`` for anything outside the schema (the caller then falls back
        to a general JSON parser, which also words any error): the top level
        must be an object (whitespace around it, no BOM) with ``images``,
        ``annotations`` and ``categories`` once each, arrays of objects; any
        other key may hold any valid JSON value (skipped, nesting at most 64
        levels in the whole document).  No key may repeat within the top
        level, an image, a category or an annotation, and at most 64 keys
        outside the schema per such object.  Images need ``id``, ``height``,
        ``width`` (integer tokens of at most 18 digits, sizes >= 1),
        categories ``id``; annotations ``id``, ``image_id``, ``category_id``
        (integer tokens), ``area`` (a number), optionally ``iscrowd`` (the
        integer token 0 or 1; LVIS has none), ``bbox`` (exactly 4 numbers), ``ignore`` (a
        number, ``true`` or ``false``) and ``segmentation``: polygons (an
        array of arrays of numbers) or an RLE object with exactly ``size``
        (2 integer tokens) and ``counts`` (a string of bytes 0x20..0x7f,
        escapes only ``\\\\ \\" \\/`` or ``\\u00XX`` of such a byte, or an
        array of integer tokens >= 0).  Numbers follow the strict JSON grammar
        (integer tokens used as numbers at most 15 digits).  Strings must be
        valid UTF-8; lone surrogate escapes and encoded surrogates, which
        json.loads lets through, are refused too.

        Otherwise a dict with, for I images, C categories, A annotations,
        P polygons:

        ``images_span``, ``categories_span``, ``annotations_span`` : int64 (2,),
            ``[start, end)`` of the array values in ``buf``
        ``img_id``, ``img_height``, ``img_width`` : int64 (I,)
        ``cat_id`` : int64 (C,)
        ``ann_id``, ``ann_image_id``, ``ann_category_id``, ``ann_iscrowd`` : int64 (A,)
            (``ann_iscrowd`` 0 where absent; ``ann_has_iscrowd`` uint8 says where present)
        ``ann_area`` : float64 (A,), ``float`` of the value
        ``ann_bbox`` : float64 (A, 4), zeros where absent; ``ann_has_bbox`` uint8
        ``ann_ignore`` : uint8, 0 absent, 1 falsy, 2 truthy
        ``ann_seg_kind`` : uint8, 0 none, 1 polygons, 2 compressed RLE,
            3 uncompressed RLE
        ``poly_coords`` : float64, every polygon coordinate in order;
            ``poly_off`` int64 (P + 1); ``ann_poly_off`` int64 (A + 1)
        ``ann_rle_h``, ``ann_rle_w`` : int64 (A,), RLE size, 0 for other kinds
        ``ann_counts_start``, ``ann_counts_len`` : int64 (A,), the raw (still
            escaped) counts string in ``buf`` for kind 2, else 0;
            ``ann_counts_escaped`` uint8, 1 when it holds a backslash
        ``rle_counts`` : int64, uncompressed counts in order; ``ann_rle_off``
            int64 (A + 1)

    Examples
    --------
    >>> cols = scan_ground_truth(b'{"images": [{"id": 1, "height": 4, "width": 5}],'
    ...     b' "annotations": [{"id": 3, "image_id": 1, "category_id": 2, "area": 2,'
    ...     b' "iscrowd": 0, "segmentation": [[0, 0, 1, 0, 1, 1]]}],'
    ...     b' "categories": [{"id": 2, "name": "x"}], "info": null}')
    >>> cols["poly_coords"].tolist(), cols["poly_off"].tolist(), cols["ann_poly_off"].tolist()
    ([0.0, 0.0, 1.0, 0.0, 1.0, 1.0], [0, 6], [0, 1])
    >>> scan_ground_truth(b'{"images": [], "annotations": [], "categories": {}}') is None
    True
    """
    cdef Py_ssize_t size = buf.shape[0]
    cdef GT g
    cdef int status
    cdef const unsigned char* base
    _check_threads(num_threads)
    if meanwhile is not None and not callable(meanwhile):
        raise TypeError(f"meanwhile must be callable or None, got {meanwhile!r}")
    min_bytes = MIN_PARALLEL_BYTES if _min_parallel_bytes is None else int(_min_parallel_bytes)
    if size == 0:
        return None
    base = &buf[0]
    if num_threads > 1 and size >= min_bytes:
        out = _split(base, size, num_threads, meanwhile, _trace)
        if out is not _WHOLE:
            return out
    if _trace is not None:
        _trace.append(("single", 1, -1))
    memset(&g, 0, sizeof(GT))
    with nogil:
        status = _gt(base, size, &g)
    try:
        if status != 0:
            if status == 2:
                raise MemoryError("boundary_api: no memory to scan the ground-truth file")
            return None
        return _output(&g)
    finally:
        _gt_free(&g)   # frees only what was not taken
