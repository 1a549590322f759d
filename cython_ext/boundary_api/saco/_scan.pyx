# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Native scanner of SA-Co predictions: the JSON list SAM 3's ``coco_writer.py`` writes,
straight into column arrays, without the GIL.

Private module (``boundary_api.saco._scan``).  The schema: a JSON array of objects with
``image_id`` and ``category_id`` (integer tokens), ``score`` (a number), and optionally
``bbox`` (four numbers) and ``segmentation`` (exactly ``{"size": [h, w], "counts":
"..."}`` in either order, the counts a string whose only escapes are ``\\\\``,
``\\"`` and ``\\/``).  Any other key's value is validated and skipped (``area``, which
the official ``loadRes`` replaces); ``caption`` and ``keypoints`` (which change
``loadRes``' branch), a repeated key, or anything else outside the schema give ``None``
(the caller then decodes the file as plain JSON).  Uses the JSON tokenizer of the
instance scanners (``boundary_api.instance._json``).
"""

from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport realloc, free
from libc.string cimport memcpy

from boundary_api.instance._json cimport (cptr, STR_CLASS, _plain_run, _ws, _int, _num, _colon, _skip, _take)

import numpy as np

# keys (bit in ``seen``)
cdef enum:
    K_OTHER = 0
    K_IMAGE = 1
    K_CAT = 2
    K_SCORE = 4
    K_BBOX = 8
    K_SEG = 16
    K_REFUSED = 64


cdef struct Out:
    int64_t* image_id
    int64_t* category_id
    double* score
    double* bbox
    int64_t* seg_h
    int64_t* seg_w
    int64_t* cstart
    int64_t* clen
    uint8_t* present
    unsigned char* counts
    Py_ssize_t cap
    Py_ssize_t ccap
    Py_ssize_t cn


cdef bint _grow(void** p, size_t n) noexcept nogil:
    cdef void* q = realloc(p[0], n if n else 1)
    if q == NULL:
        return 0
    p[0] = q
    return 1


cdef bint _reserve(Out* o, Py_ssize_t n) noexcept nogil:
    if n <= o.cap:
        return 1
    n = n if n > 2 * o.cap else 2 * o.cap
    if not (_grow(<void**> &o.image_id, n * 8) and _grow(<void**> &o.category_id, n * 8)
            and _grow(<void**> &o.score, n * 8) and _grow(<void**> &o.bbox, n * 32)
            and _grow(<void**> &o.seg_h, n * 8) and _grow(<void**> &o.seg_w, n * 8)
            and _grow(<void**> &o.cstart, n * 8) and _grow(<void**> &o.clen, n * 8)
            and _grow(<void**> &o.present, n)):
        return 0
    o.cap = n
    return 1


cdef void _free(Out* o) noexcept nogil:
    free(o.image_id); free(o.category_id); free(o.score); free(o.bbox); free(o.seg_h); free(o.seg_w)
    free(o.cstart); free(o.clen); free(o.present); free(o.counts)


cdef int _key(cptr s, Py_ssize_t n) noexcept nogil:
    """The code of a key's (plain) bytes."""
    if n == 8 and s[0] == 105 and s[1] == 109 and s[2] == 97 and s[3] == 103 and s[4] == 101 \
            and s[5] == 95 and s[6] == 105 and s[7] == 100:                       # image_id
        return K_IMAGE
    if n == 11 and s[0] == 99 and s[1] == 97 and s[2] == 116 and s[3] == 101 and s[4] == 103 \
            and s[5] == 111 and s[6] == 114 and s[7] == 121 and s[8] == 95 and s[9] == 105 \
            and s[10] == 100:                                                     # category_id
        return K_CAT
    if n == 5 and s[0] == 115 and s[1] == 99 and s[2] == 111 and s[3] == 114 and s[4] == 101:
        return K_SCORE                                                            # score
    if n == 4 and s[0] == 98 and s[1] == 98 and s[2] == 111 and s[3] == 120:
        return K_BBOX                                                             # bbox
    if n == 12 and s[0] == 115 and s[1] == 101 and s[2] == 103 and s[3] == 109 and s[4] == 101 \
            and s[5] == 110 and s[6] == 116 and s[7] == 97 and s[8] == 116 and s[9] == 105 \
            and s[10] == 111 and s[11] == 110:                                    # segmentation
        return K_SEG
    if (n == 7 and s[0] == 99 and s[1] == 97 and s[2] == 112 and s[3] == 116 and s[4] == 105
            and s[5] == 111 and s[6] == 110):                                     # caption
        return K_REFUSED
    if (n == 9 and s[0] == 107 and s[1] == 101 and s[2] == 121 and s[3] == 112 and s[4] == 111
            and s[5] == 105 and s[6] == 110 and s[7] == 116 and s[8] == 115):    # keypoints
        return K_REFUSED
    return K_OTHER


cdef cptr _plain_key(cptr p, cptr end, cptr* s, Py_ssize_t* n) noexcept nogil:
    """A key string without escapes at ``p`` (its quote); NULL otherwise."""
    if p >= end or p[0] != 34:
        return NULL
    p += 1
    s[0] = p
    p = _plain_run(p, end)
    if p >= end or p[0] != 34:
        return NULL
    n[0] = p - s[0]
    return p + 1


cdef cptr _counts(cptr p, cptr end, Out* o, Py_ssize_t row) noexcept nogil:
    """The counts string at ``p``, copied unescaped to ``o.counts``."""
    cdef cptr s
    cdef Py_ssize_t need
    if p >= end or p[0] != 34:
        return NULL
    p += 1
    o.cstart[row] = o.cn
    while True:
        s = p
        p = _plain_run(p, end)
        if p >= end:
            return NULL
        need = o.cn + (p - s) + 1
        if need > o.ccap:
            need = need if need > 2 * o.ccap else 2 * o.ccap
            if not _grow(<void**> &o.counts, need):
                return NULL
            o.ccap = need
        memcpy(o.counts + o.cn, s, p - s)
        o.cn += p - s
        if p[0] == 34:
            o.clen[row] = o.cn - o.cstart[row]
            return p + 1
        if p[0] != 92 or p + 1 >= end or not (p[1] == 92 or p[1] == 34 or p[1] == 47):
            return NULL
        o.counts[o.cn] = p[1]
        o.cn += 1
        p += 2


cdef cptr _segmentation(cptr p, cptr end, Out* o, Py_ssize_t row) noexcept nogil:
    """``{"size": [h, w], "counts": "..."}`` in either order."""
    cdef int k, have = 0
    cdef cptr s
    cdef Py_ssize_t n
    if p >= end or p[0] != 123:
        return NULL
    p = _ws(p + 1, end)
    for k in range(2):
        p = _plain_key(p, end, &s, &n)
        if p == NULL:
            return NULL
        p = _colon(p, end)
        if p == NULL:
            return NULL
        if n == 4 and s[0] == 115 and s[1] == 105 and s[2] == 122 and s[3] == 101 and not (have & 1):
            have |= 1
            if p >= end or p[0] != 91:
                return NULL
            p = _int(_ws(p + 1, end), end, &o.seg_h[row])
            if p == NULL:
                return NULL
            p = _ws(p, end)
            if p >= end or p[0] != 44:
                return NULL
            p = _int(_ws(p + 1, end), end, &o.seg_w[row])
            if p == NULL:
                return NULL
            p = _ws(p, end)
            if p >= end or p[0] != 93:
                return NULL
            p += 1
        elif (n == 6 and s[0] == 99 and s[1] == 111 and s[2] == 117 and s[3] == 110 and s[4] == 116
              and s[5] == 115 and not (have & 2)):
            have |= 2
            p = _counts(p, end, o, row)
            if p == NULL:
                return NULL
        else:
            return NULL
        p = _ws(p, end)
        if p >= end:
            return NULL
        if k == 0:
            if p[0] != 44:
                return NULL
            p = _ws(p + 1, end)
        elif p[0] != 125:
            return NULL
    return p + 1


cdef cptr _box(cptr p, cptr end, double* box) noexcept nogil:
    cdef int k
    cdef bint is_int
    if p >= end or p[0] != 91:
        return NULL
    p += 1
    for k in range(4):
        p = _num(_ws(p, end), end, &box[k], &is_int)
        if p == NULL:
            return NULL
        p = _ws(p, end)
        if p >= end or p[0] != (93 if k == 3 else 44):
            return NULL
        p += 1
    return p


cdef int _scan(cptr base, Py_ssize_t size, Out* o, Py_ssize_t* n_out) noexcept nogil:
    """0 when the whole buffer is the schema's array, 1 when not, 2 out of memory."""
    cdef cptr p = base
    cdef cptr end = base + size
    cdef cptr s
    cdef Py_ssize_t n = 0, klen
    cdef int code, seen
    cdef bint is_int
    p = _ws(p, end)
    if p >= end or p[0] != 91:
        return 1
    p = _ws(p + 1, end)
    if p < end and p[0] == 93:
        p = _ws(p + 1, end)
        n_out[0] = 0
        return 0 if p == end else 1
    while True:
        if not _reserve(o, n + 1):
            return 2
        if p >= end or p[0] != 123:
            return 1
        seen = 0
        o.bbox[4 * n] = o.bbox[4 * n + 1] = o.bbox[4 * n + 2] = o.bbox[4 * n + 3] = 0.0
        o.seg_h[n] = o.seg_w[n] = o.cstart[n] = o.clen[n] = 0
        p = _ws(p + 1, end)
        if p < end and p[0] == 125:
            return 1   # {} has no image_id
        while True:
            p = _plain_key(p, end, &s, &klen)
            if p == NULL:
                return 1
            code = _key(s, klen)
            if code == K_REFUSED or (code != K_OTHER and (seen & code)):
                return 1
            seen |= code
            p = _colon(p, end)
            if p == NULL:
                return 1
            if code == K_IMAGE:
                p = _int(p, end, &o.image_id[n])
            elif code == K_CAT:
                p = _int(p, end, &o.category_id[n])
            elif code == K_SCORE:
                p = _num(p, end, &o.score[n], &is_int)
            elif code == K_BBOX:
                p = _box(p, end, &o.bbox[4 * n])
            elif code == K_SEG:
                p = _segmentation(p, end, o, n)
            else:
                p = _skip(p, end, 2)
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
        if (seen & (K_IMAGE | K_CAT | K_SCORE)) != (K_IMAGE | K_CAT | K_SCORE):
            return 1
        o.present[n] = <uint8_t> (seen & (K_BBOX | K_SEG))
        n += 1
        p = _ws(p, end)
        if p >= end:
            return 1
        if p[0] == 44:
            p = _ws(p + 1, end)
            continue
        if p[0] == 93:
            p = _ws(p + 1, end)
            break
        return 1
    if p != end:
        return 1
    n_out[0] = n
    return 0


def scan_predictions(const unsigned char[::1] buf not None):
    """Parse SA-Co predictions JSON into column arrays, or return ``None``.

    Returns
    -------
    dict of numpy.ndarray or None
        ``None`` outside the schema (see the module).  Otherwise, per
        prediction: ``image_id``, ``category_id`` (int64), ``score``
        (float64, as ``float()`` of the token), ``bbox`` (float64, (n, 4),
        zeros without one), ``seg_h``, ``seg_w`` (int64, 0 without a
        segmentation), ``counts_start``, ``counts_len`` (int64: where the
        unescaped counts lie in ``counts``), ``present`` (uint8: 8 has a
        bbox, 16 a segmentation), and ``counts`` (uint8, the strings).

    Examples
    --------
    >>> cols = scan_predictions(b'[{"image_id": 7, "category_id": 1, "score": 0.5, "area": 0.1,'
    ...                         b' "segmentation": {"size": [2, 2], "counts": "a\\\\\\\\b"}}]')
    >>> int(cols["image_id"][0]), bytes(cols["counts"][:int(cols["counts_len"][0])])
    (7, b'a\\\\b')
    >>> scan_predictions(b'[{"image_id": 7.0, "category_id": 1, "score": 0.5}]') is None
    True
    """
    cdef Out o
    cdef Py_ssize_t n = 0, size = buf.shape[0]
    cdef int status
    o.image_id = NULL; o.category_id = NULL; o.score = NULL; o.bbox = NULL; o.seg_h = NULL; o.seg_w = NULL
    o.cstart = NULL; o.clen = NULL; o.present = NULL; o.counts = NULL
    o.cap = 0; o.ccap = 0; o.cn = 0
    if size == 0:
        return None
    with nogil:
        status = _scan(&buf[0], size, &o, &n)
    if status != 0:
        _free(&o)
        if status == 2:
            raise MemoryError("boundary_api: no memory to scan the predictions")
        return None
    if n == 0:
        _free(&o)
        z = np.zeros(0, np.int64)
        return {"image_id": z, "category_id": z.copy(), "score": np.zeros(0), "bbox": np.zeros((0, 4)),
                "seg_h": z.copy(), "seg_w": z.copy(), "counts_start": z.copy(), "counts_len": z.copy(),
                "present": np.zeros(0, np.uint8), "counts": np.zeros(0, np.uint8)}
    if o.cn == 0:
        o.cn = 1
        if not _grow(<void**> &o.counts, 1):
            _free(&o)
            raise MemoryError("boundary_api: no memory to scan the predictions")
        o.counts[0] = 0
    try:
        return {
            "image_id": _take(<void**> &o.image_id, np.int64, (n,)),
            "category_id": _take(<void**> &o.category_id, np.int64, (n,)),
            "score": _take(<void**> &o.score, np.float64, (n,)),
            "bbox": _take(<void**> &o.bbox, np.float64, (n, 4)),
            "seg_h": _take(<void**> &o.seg_h, np.int64, (n,)),
            "seg_w": _take(<void**> &o.seg_w, np.int64, (n,)),
            "counts_start": _take(<void**> &o.cstart, np.int64, (n,)),
            "counts_len": _take(<void**> &o.clen, np.int64, (n,)),
            "present": _take(<void**> &o.present, np.uint8, (n,)),
            "counts": _take(<void**> &o.counts, np.uint8, (o.cn,)),
        }
    finally:
        _free(&o)
