# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Native scanner of YouTube-VIS JSON: ground truths and results into column arrays.

Private module (``boundary_api.video._scan``).  A YouTube-VIS file holds one
segmentation per frame of every track; as Python objects that is a dict, a
list of counts (ground truth: uncompressed RLE) or a string (results) per
frame, which costs more than the evaluation.  This scanner reads the bytes
once, without the GIL, on the core the instance scanners share
(``instance/_json.pxd``: tokenizer, key codes, column buffers, a split scan's
chunk loop), and returns one array per field:

- per track: ``id``, ``video_id``, ``category_id``, ``iscrowd``, ``height``,
  ``width`` (ground truth), ``score`` (results), its frames and its ``areas``;
- per frame: absent (``null``), a compressed RLE string (where it lies: in the
  scanned buffer, or, when it holds escapes, unescaped in a side buffer of its
  own), or an uncompressed RLE (its counts in a uint16 array, see :data:`ESCAPE`);
- the ground truth's top-level members (``videos``, ``categories``, ``info``,
  ...) as byte ranges, for the caller's JSON reader.

Nothing is written into the scanned buffer: the caller may parse it again
(the annotation dicts, made when somebody reads them).

It accepts a narrow schema (see :func:`scan_ground_truth` and
:func:`scan_results`) and returns ``None`` for anything else, never raising
for bad input and never reading outside the buffer; the caller then reads the
file with its general JSON path, which also words any error.  A large array
of tracks may be scanned in chunks on several threads, cut at guessed object
starts that the chunk before proves by arriving at them (as the instance
scanners do); the columns do not depend on it.
"""

from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport realloc, free
from libc.string cimport memcpy, memcmp, memset

from boundary_api.instance._json cimport (
    cptr, _ws, _int, _num, _colon, _string, _lit, _skip, _sep, _next, _open_array, _candidate, K_ID, K_VIDEO_ID,
    K_CATEGORY_ID, K_ISCROWD, K_SEGMENTATIONS, K_AREAS, K_BBOXES, K_HEIGHT, K_WIDTH, K_LENGTH, K_SCORE,
    K_SIZE, K_COUNTS, K_IGNORE, K_AVG_AREA, K_ANNOTATIONS, _classify, _key, _counts_string, _rle_object,
    _unescape_string, Cols, _room, _pi, _pf, _pu, _cols_free, _take_vec, _polygons, _objects)
from boundary_api.masks._rle cimport I64Vec, _decode, _area

import threading

import numpy as np

# ---------------------------------------------------------------------- columns
cdef enum:
    A_ID = 0       # int64   (ground truth) annotation id
    A_VID          # int64   video_id
    A_CAT          # int64   category_id
    A_CROWD        # int64   (ground truth) iscrowd
    A_SCORE        # float64 (results) score
    A_SCORE_INT    # uint8   (results) the score was an integer token
    A_H            # int64   height when an int >= 0, else -1 (also absent)
    A_W            # int64   width likewise
    A_F0           # int64   first frame entry
    A_NF           # int64   number of frames
    A_R0           # int64   (ground truth) first entry of its areas
    A_NR           # int64   number of areas
    F_KIND         # uint8   0 absent (null, [], {}), 1 compressed string, 2 uncompressed counts,
                   #         3 polygons
    F_H            # int64   RLE size (0 for polygons)
    F_W            # int64
    F_WHICH        # uint8   0 the scanned buffer, 1 the side buffer, 2 the counts, 3 polygons
    F_START        # int64   where the string / counts lie (bytes); the first polygon
    F_LEN          # int64   their length (bytes); the number of polygons
    F_AREA         # int64   pixels (results, uncompressed counts); results: -1 malformed
                   #         string, -2 not height x width pixels; 0 ground-truth strings
    R_VAL          # float64 (ground truth) an 'areas' value
    R_KIND         # uint8   0 null, 1 integer token, 2 other number
    CNT            # uint16  uncompressed counts (ESCAPE, then two words: a count >= ESCAPE)
    SIDE           # uint8   unescaped strings
    P_COORD        # float64 polygon coordinates
    P_END          # int64   end of each polygon in P_COORD
    NCOL

cdef Py_ssize_t _ITEM[NCOL]
_DTYPES = (np.int64, np.int64, np.int64, np.int64, np.float64, np.uint8, np.int64, np.int64, np.int64, np.int64,
           np.int64, np.int64, np.uint8, np.int64, np.int64, np.uint8, np.int64, np.int64, np.int64, np.float64,
           np.uint8, np.uint16, np.uint8, np.float64, np.int64)
_NAMES = ("ann_id", "video_id", "category_id", "iscrowd", "score", "score_int", "height", "width", "frame0",
          "nframes", "area0", "nareas", "frame_kind", "frame_h", "frame_w", "frame_which", "frame_start",
          "frame_len", "frame_area", "area_value", "area_kind", "counts", "side", "poly_coords", "poly_end")
assert len(_DTYPES) == len(_NAMES) == NCOL
for _c in range(NCOL):
    _ITEM[_c] = np.dtype(_DTYPES[_c]).itemsize
del _c

#: the ground-truth / results columns (the others stay empty)
GT_TRACK = ("ann_id", "video_id", "category_id", "iscrowd", "height", "width", "frame0", "nframes", "area0",
            "nareas")
RESULT_TRACK = ("video_id", "category_id", "score", "score_int", "height", "width", "frame0", "nframes")
FRAME = ("frame_kind", "frame_h", "frame_w", "frame_which", "frame_start", "frame_len", "frame_area")

cdef enum:
    # largest RLE side accepted (beyond, the general path decides)
    _MAX_SIDE = 2147483647

#: an uncompressed count below this is one uint16 of the counts column; one
#: at least this is this word, then its high and its low 16 bits (most counts
#: of a mask are a column's runs: the column halves, and its page faults)
ESCAPE = 0xFFFF

# largest uncompressed count (pycocotools reads them as uint32)
cdef int64_t _MAX_COUNT = 4294967295


cdef struct Scan:
    Cols c            # columns 0 .. NCOL-1
    I64Vec runs       # scratch of the results' decode
    bint gt           # a ground truth's annotations (else results)


cdef void _scan_free(Scan* t) noexcept nogil:
    _cols_free(&t.c)
    free(t.runs.data)
    t.runs.data = NULL
    t.runs.n = t.runs.cap = 0


# ------------------------------------------------------------------------- keys
# (bits of the key codes of _json.pxd)
cdef enum:
    GT_KEYS = ((1 << K_ID) | (1 << K_VIDEO_ID) | (1 << K_CATEGORY_ID) | (1 << K_ISCROWD) | (1 << K_SEGMENTATIONS)
               | (1 << K_AREAS) | (1 << K_BBOXES) | (1 << K_HEIGHT) | (1 << K_WIDTH) | (1 << K_LENGTH)
               | (1 << K_IGNORE) | (1 << K_AVG_AREA))
    # what the YouTube-VIS API's checks need in every annotation
    GT_REQUIRED = ((1 << K_ID) | (1 << K_VIDEO_ID) | (1 << K_CATEGORY_ID) | (1 << K_ISCROWD)
                   | (1 << K_SEGMENTATIONS) | (1 << K_AREAS))
    # (a result's id, iscrowd, areas, avg_area are overwritten by loadRes, its
    # bboxes completed; height and width size its absent frames' bands)
    RES_KEYS = ((1 << K_VIDEO_ID) | (1 << K_CATEGORY_ID) | (1 << K_SCORE) | (1 << K_SEGMENTATIONS)
                | (1 << K_HEIGHT) | (1 << K_WIDTH) | (1 << K_BBOXES) | (1 << K_ID) | (1 << K_ISCROWD)
                | (1 << K_AREAS) | (1 << K_AVG_AREA))
    RES_REQUIRED = (1 << K_VIDEO_ID) | (1 << K_CATEGORY_ID) | (1 << K_SCORE) | (1 << K_SEGMENTATIONS)


# ------------------------------------------------------------------ values
cdef cptr _size_value(cptr p, cptr end, int64_t* out, int depth) noexcept nogil:
    """A track's ``height`` / ``width``: the int when it is one >= 0, else -1
    (any other JSON value); NULL for an integer too long to be read exactly."""
    cdef double x
    cdef bint is_int
    out[0] = -1
    if p < end and (p[0] == 45 or 48 <= p[0] <= 57):
        p = _num(p, end, &x, &is_int)
        if p != NULL and is_int and x >= 0:
            out[0] = <int64_t> x
        return p
    return _skip(p, end, depth)


cdef cptr _areas(cptr p, cptr end, Cols* c) noexcept nogil:
    """``[null | number, ...]``: appended to R_VAL / R_KIND."""
    cdef bint more, is_int
    cdef double x
    p = _open_array(p, end, &more)
    if p == NULL:
        return NULL
    while more:
        if p < end and p[0] == 110:
            p = _lit(p, end, b"null", 4)
            if p == NULL or not (_pf(c, R_VAL, 0.0) and _pu(c, R_KIND, 0)):
                return NULL
        else:
            p = _num(p, end, &x, &is_int)
            if p == NULL or not (_pf(c, R_VAL, x) and _pu(c, R_KIND, 1 if is_int else 2)):
                return NULL
        p = _sep(p, end, 93, &more)
        if p == NULL:
            return NULL
    return p


cdef cptr _rle_string(cptr p, cptr end, cptr base, Cols* c, int64_t* which, int64_t* start,
                      int64_t* length) noexcept nogil:
    """A compressed counts string at ``p`` (on its quote): printable ASCII with
    at most the escapes ``\\\\ \\" \\/``; one that holds escapes is copied,
    unescaped, to the side buffer."""
    cdef cptr s = p + 1
    cdef cptr e
    cdef char* o
    cdef Py_ssize_t esc, n
    e = _counts_string(p, end, 0, &esc)
    if e == NULL:
        return NULL
    e -= 1   # its closing quote
    if esc < 0:
        which[0] = 0
        start[0] = s - base
        length[0] = e - s
        return e + 1
    # unescaped into the side buffer (never longer than the escaped string)
    o = _room(c, SIDE, e - s, 1)
    if o == NULL:
        return NULL
    memcpy(o, s, <size_t> esc)
    n = esc + _unescape_string(s + esc, e, <unsigned char*> o + esc)
    which[0] = 1
    start[0] = c.col[SIDE].n
    length[0] = n
    c.col[SIDE].n += n
    return e + 1


cdef cptr _counts_array(cptr p, cptr end, Cols* c, int64_t* start, int64_t* length,
                        int64_t* area) noexcept nogil:
    """``[int, ...]`` of uncompressed counts (each 0 .. 2**32-1), appended to CNT
    (``start``, ``length``: where, in bytes)."""
    cdef bint more
    cdef int64_t v, i = 0
    cdef char* o
    start[0] = c.col[CNT].n * 2
    area[0] = 0
    p = _open_array(p, end, &more)
    if p == NULL:
        return NULL
    while more:
        p = _int(p, end, &v)
        if p == NULL or v < 0 or v > _MAX_COUNT:
            return NULL
        if v < 0xFFFF:
            o = _room(c, CNT, 1, 2)
            if o == NULL:
                return NULL
            (<uint16_t*> o)[0] = <uint16_t> v
            c.col[CNT].n += 1
        else:
            o = _room(c, CNT, 3, 2)
            if o == NULL:
                return NULL
            (<uint16_t*> o)[0] = 0xFFFF
            (<uint16_t*> o)[1] = <uint16_t> (v >> 16)
            (<uint16_t*> o)[2] = <uint16_t> (v & 0xFFFF)
            c.col[CNT].n += 3
        if i & 1:
            area[0] += v
        i += 1
        p = _sep(p, end, 93, &more)
        if p == NULL:
            return NULL
    length[0] = c.col[CNT].n * 2 - start[0]
    return p


cdef inline bint _push_frame(Cols* c, uint8_t kind, int64_t h, int64_t w, uint8_t which, int64_t start,
                             int64_t length, int64_t area) noexcept nogil:
    return (_pu(c, F_KIND, kind) and _pi(c, F_H, h) and _pi(c, F_W, w) and _pu(c, F_WHICH, which)
            and _pi(c, F_START, start) and _pi(c, F_LEN, length) and _pi(c, F_AREA, area))


cdef struct Frame:
    # one frame's RLE (what _frame_counts leaves)
    Scan* t
    int64_t which     # F_WHICH
    int64_t start     # F_START
    int64_t length    # F_LEN
    int64_t area      # F_AREA
    uint8_t kind      # F_KIND


cdef cptr _frame_counts(cptr p, cptr end, cptr base, void* ctx) noexcept nogil:
    """A frame's counts (``_json._rle_object``'s counts reader): a string, or
    (ground truth) a list of counts."""
    cdef Frame* f = <Frame*> ctx
    if p < end and p[0] == 34:
        f.kind = 1
        return _rle_string(p, end, base, &f.t.c, &f.which, &f.start, &f.length)
    if p < end and p[0] == 91 and f.t.gt:
        f.kind = 2
        f.which = 2
        return _counts_array(p, end, &f.t.c, &f.start, &f.length, &f.area)
    return NULL


cdef cptr _frame(cptr p, cptr end, cptr base, Scan* t) noexcept nogil:
    """One frame's RLE ``{"size": [h, w], "counts": ...}`` (either key order, sides
    0 .. 2**31-1) at ``p`` (on '{'): a string, or (ground truth) a list of counts."""
    cdef int64_t hw[2]
    cdef int64_t total
    cdef bint counts_first
    cdef const unsigned char* s
    cdef Cols* c = &t.c
    cdef Frame f
    memset(&f, 0, sizeof(Frame))
    f.t = t
    hw[0] = hw[1] = 0
    p = _rle_object(p, end, base, 0, 0, _MAX_SIDE, hw, &counts_first, _frame_counts, &f)
    if p == NULL:
        return NULL
    if f.kind == 1 and not t.gt:
        # a result's string, decoded once here: the check loadRes makes, and its area
        s = <const unsigned char*> (c.col[SIDE].data + f.start) if f.which == 1 else base + f.start
        t.runs.n = 0
        total = _decode(s, f.length, &t.runs)
        if total < 0:
            f.area = -1
        elif total != hw[0] * hw[1]:
            f.area = -2
        else:
            f.area = _area(t.runs.data, t.runs.n)
    if not _push_frame(c, f.kind, hw[0], hw[1], <uint8_t> f.which, f.start, f.length, f.area):
        return NULL
    return p


cdef cptr _frames(cptr p, cptr end, cptr base, Scan* t) noexcept nogil:
    """``[frame, ...]`` at ``p``: one frame entry each; a frame is absent
    (``null``, ``[]``, ``{}``: what the YouTube-VIS API skips as falsy), an
    RLE, or (ground truth) a list of polygons."""
    cdef bint more
    cdef cptr q
    cdef int64_t start
    cdef Cols* c = &t.c
    p = _open_array(p, end, &more)
    if p == NULL:
        return NULL
    while more:
        if p >= end:
            return NULL
        if p[0] == 110:
            p = _lit(p, end, b"null", 4)
            if p == NULL or not _push_frame(c, 0, 0, 0, 0, 0, 0, 0):
                return NULL
        elif p[0] == 123 or p[0] == 91:
            q = _ws(p + 1, end)
            if q < end and q[0] == p[0] + 2:      # {} or []
                p = q + 1
                if not _push_frame(c, 0, 0, 0, 0, 0, 0, 0):
                    return NULL
            elif p[0] == 123:
                p = _frame(p, end, base, t)
                if p == NULL:
                    return NULL
            elif t.gt:
                # a non-empty list of polygons (empty polygons too: what they
                # mean is the rasteriser's to say)
                start = c.col[P_END].n
                p = _polygons(p, end, c, P_COORD, P_END)
                if p == NULL or not _push_frame(c, 3, 0, 0, 3, start, c.col[P_END].n - start, 0):
                    return NULL
            else:
                return NULL
        else:
            return NULL
        p = _sep(p, end, 93, &more)
        if p == NULL:
            return NULL
    return p


cdef cptr _track(cptr p, cptr end, cptr base, void* ctx) noexcept nogil:
    """One annotation (``t.gt``) or result object at ``p`` (on '{'), into the
    columns of ``ctx``, a ``Scan`` (a split scan's object reader)."""
    cdef Scan* t = <Scan*> ctx
    cdef Cols* c = &t.c
    cdef bint gt = t.gt
    cdef int code
    cdef uint32_t seen = 0
    cdef uint32_t allowed = GT_KEYS if gt else RES_KEYS
    cdef uint32_t required = GT_REQUIRED if gt else RES_REQUIRED
    cdef int depth = 3 if gt else 2
    cdef int64_t ann_id = 0, vid = 0, cat = 0, crowd = 0, h = -1, w = -1
    cdef int64_t f0 = c.col[F_KIND].n, r0 = c.col[R_KIND].n
    cdef double score = 0.0
    cdef bint more = 1, is_int = 0
    p = _ws(p + 1, end)
    while more:
        p = _key(p, end, &code)
        if p == NULL or code == 0 or not ((allowed >> code) & 1) or ((seen >> code) & 1):
            return NULL
        seen |= 1u << code
        p = _colon(p, end)
        if p == NULL:
            return NULL
        if code == K_ID and gt:
            p = _int(p, end, &ann_id)
        elif code == K_VIDEO_ID:
            p = _int(p, end, &vid)
        elif code == K_CATEGORY_ID:
            p = _int(p, end, &cat)
        elif code == K_ISCROWD and gt:
            p = _int(p, end, &crowd)
        elif code == K_SCORE:
            p = _num(p, end, &score, &is_int)
        elif code == K_SEGMENTATIONS:
            p = _frames(p, end, base, t)
        elif code == K_AREAS and gt:
            p = _areas(p, end, c)
        elif code == K_HEIGHT:
            p = _size_value(p, end, &h, depth)
        elif code == K_WIDTH:
            p = _size_value(p, end, &w, depth)
        elif code == K_BBOXES and not gt and (p >= end or p[0] != 91):
            return NULL   # (loadRes appends to a result's own bboxes list)
        else:   # read again by the JSON reader when the dicts are made
            p = _skip(p, end, depth)
        p = _next(p, end, 125, &more)
        if p == NULL:
            return NULL
    if (seen & required) != required:
        return NULL
    if gt:
        if not (_pi(c, A_ID, ann_id) and _pi(c, A_CROWD, crowd) and _pi(c, A_R0, r0)
                and _pi(c, A_NR, c.col[R_KIND].n - r0)):
            return NULL
    elif not (_pf(c, A_SCORE, score) and _pu(c, A_SCORE_INT, 1 if is_int else 0)):
        return NULL
    if not (_pi(c, A_VID, vid) and _pi(c, A_CAT, cat) and _pi(c, A_H, h) and _pi(c, A_W, w) and _pi(c, A_F0, f0)
            and _pi(c, A_NF, c.col[F_KIND].n - f0)):
        return NULL
    return p


# -------------------------------------------------------------------- chunks
cdef class _Chunk:
    """One chunk of a split scan (its columns, outcome and where it ended):
    the tracks from the one at ``start`` to the array's ``]`` or to one of
    ``stops`` (``_json._objects``)."""
    cdef Scan t
    cdef Py_ssize_t* stops
    cdef Py_ssize_t nstops, start, end_at, reached
    cdef int status

    def __cinit__(self):
        memset(&self.t, 0, sizeof(Scan))
        self.stops = NULL
        self.status = -1

    def __dealloc__(self):
        _scan_free(&self.t)
        free(self.stops)

    cdef int run(self, const unsigned char[::1] buf):
        cdef Py_ssize_t size = buf.shape[0]
        with nogil:
            self.status = _objects(&buf[0], size, self.start, self.stops, self.nstops, _track, &self.t,
                                   &self.t.c, &self.reached, &self.end_at)
        return self.status

    def run_py(self, buf):
        self.run(buf)

    cdef dict columns(self):
        """The chunk's columns as arrays (taking their blocks)."""
        cdef int k
        out = {_NAMES[k]: _take_vec(&self.t.c.col[k], _ITEM[k], _DTYPES[k], (self.t.c.col[k].n,))
               for k in range(NCOL)}
        _scan_free(&self.t)   # what was not taken (empty columns), and the scratch
        return out


#: arrays of tracks smaller than this are scanned on one thread
MIN_PARALLEL_BYTES = 1 << 20
#: most chunks of a split scan
MAX_CHUNKS = 64


cdef bint _frame_like(cptr base, Py_ssize_t size, Py_ssize_t j) noexcept nogil:
    """Whether the object at ``j`` starts with a key of a frame's RLE ("size",
    "counts"): then it is no track."""
    cdef cptr end = base + size
    cdef cptr p = _ws(base + j + 1, end)
    cdef int code
    p = _key(p, end, &code)
    return p != NULL and (code == K_SIZE or code == K_COUNTS)


def _candidates(const unsigned char[::1] buf, Py_ssize_t first, Py_ssize_t k):
    """Guessed object starts cutting ``buf[first:]`` into ``k`` parts (fewer
    where a part has none): '{' after '}' ',' that does not open a frame."""
    cdef Py_ssize_t size = buf.shape[0], i, lo, hi, j, last = first
    cdef cptr base = &buf[0]
    out = [first]
    for i in range(1, k):
        lo = max(first + (size - first) // k * i, last + 1)
        hi = size
        with nogil:
            j = _candidate(base, lo, hi)
            while j >= 0 and _frame_like(base, size, j):
                j = _candidate(base, j + 1, hi)
        if j < 0:
            break
        if j > last:
            out.append(j)
            last = j
    return out


cdef object _scan_array(const unsigned char[::1] buf, Py_ssize_t first, bint gt, Py_ssize_t num_threads,
                        Py_ssize_t min_bytes):
    """Scan the array of tracks whose first object starts at ``first``:
    ``(status, end_at, [columns of each chunk on the chain])``."""
    cdef Py_ssize_t size = buf.shape[0], i, j, k
    cdef _Chunk ch
    starts = [first]
    if num_threads > 1 and size - first >= min_bytes:
        starts = _candidates(buf, first, min(num_threads, MAX_CHUNKS))
    k = len(starts)
    chunks = []
    for i in range(k):
        ch = _Chunk()
        ch.t.gt = gt
        ch.start = starts[i]
        ch.nstops = k - 1 - i
        if ch.nstops:
            ch.stops = <Py_ssize_t*> realloc(NULL, ch.nstops * sizeof(Py_ssize_t))
            if ch.stops == NULL:
                raise MemoryError()
            for j in range(ch.nstops):
                ch.stops[j] = starts[i + 1 + j]
        chunks.append(ch)
    threads = [threading.Thread(target=(<_Chunk> chunks[i]).run_py, args=(buf,)) for i in range(1, k)]
    for t in threads:
        t.start()
    try:
        (<_Chunk> chunks[0]).run(buf)
    finally:
        for t in threads:
            t.join()
    chain = []
    i = 0
    while True:
        ch = chunks[i]
        if ch.status != 0:
            return ch.status, 0, None
        chain.append(ch.columns())
        if ch.reached < 0:
            return 0, ch.end_at, chain
        i = i + 1 + ch.reached


# ------------------------------------------------------------------ top level
cdef enum:
    MAX_MEMBERS = 256

cdef struct Top:
    int64_t ks[MAX_MEMBERS]    # key: start and length (bytes, no quotes, no escapes)
    int64_t kl[MAX_MEMBERS]
    int64_t vs[MAX_MEMBERS]    # value: [start, end)
    int64_t ve[MAX_MEMBERS]
    int n
    int ann                    # member index of "annotations" (-1: none yet)
    Py_ssize_t pos


cdef int _top(cptr base, Py_ssize_t size, Top* t, bint resume) noexcept nogil:
    """The ground truth's top-level object: 0 accepted, 1 refused, 5 paused
    on the annotations array (``t.pos``: its '['); with ``resume`` the scan
    goes on after it (``t.pos``: the byte after its ']')."""
    cdef cptr end = base + size
    cdef cptr p
    cdef cptr q
    cdef int esc, i
    cdef bint more = 1, after = resume
    cdef Py_ssize_t kl
    if resume:
        p = base + t.pos
    else:
        t.n = 0
        t.ann = -1
        p = _ws(base, end)
        if p >= end or p[0] != 123:
            return 1
        p = _ws(p + 1, end)
        if p < end and p[0] == 125:
            return 1
    while more:
        if not after:
            if p >= end or p[0] != 34 or t.n == MAX_MEMBERS:
                return 1
            q = _string(p, end, &esc)
            if q == NULL or esc:
                return 1
            kl = q - 1 - (p + 1)
            for i in range(t.n):
                if t.kl[i] == kl and memcmp(base + t.ks[i], p + 1, <size_t> kl) == 0:
                    return 1
            t.ks[t.n] = p + 1 - base
            t.kl[t.n] = kl
            p = _colon(q, end)
            if p == NULL or p >= end:
                return 1
            t.vs[t.n] = p - base
            if _classify(base + t.ks[t.n], kl) == K_ANNOTATIONS:
                if p[0] != 91:
                    return 1
                t.ann = t.n
                t.n += 1
                t.pos = p - base
                return 5
            p = _skip(p, end, 1)
            if p == NULL:
                return 1
            t.ve[t.n] = p - base
            t.n += 1
        after = 0
        p = _sep(p, end, 125, &more)
        if p == NULL:
            return 1
    p = _ws(p, end)
    return 0 if p == end else 1


def scan_ground_truth(const unsigned char[::1] buf not None, Py_ssize_t num_threads=1, *,
                      Py_ssize_t _min_parallel_bytes=MIN_PARALLEL_BYTES):
    """Scan a YouTube-VIS ground truth into columns, or None.

    The schema: a JSON object (whitespace around it, no byte order mark) whose
    keys are not escaped and do not repeat; its ``annotations`` an array of
    objects with the keys ``id``, ``video_id``, ``category_id``, ``iscrowd``
    (integer tokens of at most 18 digits), ``segmentations``, ``areas`` (all
    required), ``bboxes``, ``height``, ``width``, ``length``, ``ignore``,
    ``avg_area``, each at most once, no other and none escaped.
    ``segmentations``: an array of frames, each ``null``, ``[]`` or ``{}``
    (absent), ``{"size": [h, w], "counts": ...}`` (either order, ``h``, ``w``
    integers 0 .. 2**31-1; the counts a string of printable ASCII with only
    the escapes ``\\\\ \\" \\/``, or an array of integers 0 .. 2**32-1), or
    a list of polygons (arrays of numbers); ``areas`` an array of ``null`` or
    numbers (numbers here and below: integer tokens of at most 15 digits);
    ``height``/``width`` any value (only an int >= 0 is a size); the others
    any value.  Every other top-level member any JSON value (the caller
    decodes them).  Anything else, any malformed JSON included, gives None.

    Parameters
    ----------
    buf : bytes-like
        The file's bytes (only read).
    num_threads : int
        Threads the annotations array may be scanned on (in chunks).

    Returns
    -------
    dict or None
        ``members``: ``[(key bytes, value start, value end), ...]`` in file
        order; ``annotations``: the index of that member; ``chunks``: the
        column dicts of the chunks, in order (their track columns
        :data:`GT_TRACK`, frame columns :data:`FRAME`, ``area_value``,
        ``area_kind``, and their own ``counts`` and ``side`` buffers, to
        which ``frame_which`` 2 and 1 point, and ``poly_coords``,
        ``poly_end``, to which ``frame_which`` 3 points: polygons
        ``frame_start .. frame_start + frame_len - 1``, polygon ``j`` the
        coordinates ``poly_end[j - 1] .. poly_end[j] - 1``).
    """
    cdef Py_ssize_t size = buf.shape[0], p, end_at
    cdef Top t
    cdef int status
    if size == 0:
        return None
    with nogil:
        status = _top(&buf[0], size, &t, 0)
    if status != 5:
        return None
    with nogil:
        p = _ws(&buf[0] + t.pos + 1, &buf[0] + size) - &buf[0]
    if p < size and buf[p] == 93:
        chain = []
        end_at = p + 1
    else:
        status, end_at, chain = _scan_array(buf, p, 1, num_threads, _min_parallel_bytes)
        if status == 2:
            raise MemoryError("boundary_api: no memory to scan the ground truth")
        if status != 0:
            return None
    t.ve[t.ann] = end_at
    t.pos = end_at
    with nogil:
        status = _top(&buf[0], size, &t, 1)
    if status != 0:
        return None
    members = [(bytes(buf[t.ks[i]:t.ks[i] + t.kl[i]]), t.vs[i], t.ve[i]) for i in range(t.n)]
    return {"members": members, "annotations": t.ann, "chunks": chain}


def scan_results(const unsigned char[::1] buf not None, Py_ssize_t num_threads=1, *,
                 Py_ssize_t _min_parallel_bytes=MIN_PARALLEL_BYTES):
    """Scan a YouTube-VIS results file into columns, or None.

    The schema: a non-empty JSON array (whitespace around it, no byte order
    mark) of objects with the keys ``video_id``, ``category_id`` (integer
    tokens of at most 18 digits), ``score`` (a number), ``segmentations``
    (frames as in :func:`scan_ground_truth`, but no polygons and only string
    counts), and optionally ``height``, ``width`` (as there), ``bboxes`` (an
    array), ``id``, ``iscrowd``, ``areas``, ``avg_area`` (any value:
    ``loadRes`` sets them), none escaped or repeated.  Every string is decoded
    once: ``frame_area`` its pixels, -1 when it is no RLE string, -2 when it
    does not hold ``h x w`` pixels.  Anything else gives None.

    Returns
    -------
    list of dict or None
        The column dicts of the chunks, in order (track columns
        :data:`RESULT_TRACK`, frame columns :data:`FRAME`, ``side``).
    """
    cdef Py_ssize_t size = buf.shape[0], p, end_at
    cdef int status
    if size == 0:
        return None
    with nogil:
        p = _ws(&buf[0], &buf[0] + size) - &buf[0]
    if p >= size or buf[p] != 91:
        return None
    with nogil:
        p = _ws(&buf[0] + p + 1, &buf[0] + size) - &buf[0]
    if p >= size or buf[p] != 123:
        return None
    status, end_at, chain = _scan_array(buf, p, 0, num_threads, _min_parallel_bytes)
    if status == 2:
        raise MemoryError("boundary_api: no memory to scan the results")
    if status != 0:
        return None
    with nogil:
        p = _ws(&buf[0] + end_at, &buf[0] + size) - &buf[0]
    if p != size:
        return None
    return chain
