"""Detection results as column arrays: the fast path of ``loadRes``.

A results file in the COCO results schema (a list of objects with
``image_id``, ``category_id``, ``score`` and a ``bbox`` and/or a compressed-RLE
``segmentation``) is parsed by the native scanner (:mod:`._scan_results`) straight
into arrays, with every RLE string left in one byte buffer.  The evaluation
reads the arrays (box results' RLE strings are copied out of the file
mapping only when a mask evaluation or the dicts first need them:
:class:`PendingCounts`); the per-result dicts that pycocotools' ``loadRes`` would
have made are built only if somebody reads ``dataset``, ``anns``,
``imgToAnns`` or ``catToImgs`` (:meth:`ResultColumns.annotations`), and are
then exactly those dicts: same keys in the same order, same value types.

Anything outside that schema, or results that fail a check, return ``None``
from :func:`load_result_columns`: the caller then takes the general path,
which parses with a general JSON parser and words the error.
"""
from __future__ import annotations

import logging
import mmap
import os
import stat
import sys
import threading
import weakref
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..masks import _rle
from ..masks.boundary import MAX_PIXELS, MAX_SIDE, check_rle_strings
from .._io import InputBytes
from .._parallel import resolve_threads, run_ranges, split_by_cost
from . import _checks

__all__ = ["ResultColumns", "load_result_columns"]

log = logging.getLogger(__name__)

#: ``present`` bits of the scanner
HAS_IMAGE, HAS_CATEGORY, HAS_SCORE, HAS_BBOX, HAS_SEGMENTATION = 1, 2, 4, 8, 16
#: key codes of ``key_order`` (3 bits each, first key lowest)
_KEYS = {1: "image_id", 2: "category_id", 3: "score", 4: "bbox", 5: "segmentation"}
#: ``key_order`` bit: the segmentation object had ``counts`` before ``size``
_COUNTS_FIRST = 1 << 30


class ResultColumns:
    """Detection results of one file, one array entry per result (file order).

    Attributes
    ----------
    n : int
        Number of results; result ``r`` gets annotation id ``r + 1``.
    kind : {'bbox', 'segmentation'}
        pycocotools' ``loadRes`` branch: 'bbox' when the results carry boxes
        (areas are ``w * h``), 'segmentation' when they carry only masks
        (areas and boxes come from the RLEs).
    image_id, category_id : ndarray of int64
    score : ndarray of float64
    bbox : ndarray of float64, shape (n, 4)
    area : ndarray of float64
    seg_h, seg_w : ndarray of int64
        RLE size of each result (0 without a segmentation).
    has_segmentation : bool
    rles_checked : bool
        Whether every RLE string was decoded and found to cover its image.
    buf : ndarray of uint8
        The RLE strings, one after the other; ``counts_start`` and
        ``counts_len`` (int64) say where each result's lies.  With a pending
        gather (:class:`PendingCounts`, box results of a mapped file) they
        are made on first read, exactly once, also across threads.
    """

    def __init__(self, buf: Optional[np.ndarray], cols: Dict[str, np.ndarray], source: str,
                 pending: Optional["PendingCounts"] = None):
        self.source = source
        #: the counts not yet gathered out of the file mapping (None: ``_buf`` holds them)
        self._pending = pending
        #: rows of the pending gather's arrays these columns hold (None: all, in order)
        self._pending_rows = None
        self._buf = buf
        self.n = len(cols["image_id"])
        self.image_id = cols["image_id"]
        self.category_id = cols["category_id"]
        self.score = cols["score"]
        self.bbox = np.ascontiguousarray(cols["bbox"], np.float64).reshape(-1, 4)
        self.seg_h = cols["seg_h"]
        self.seg_w = cols["seg_w"]
        self._counts_start = None if pending is not None else cols["counts_start"]
        self._counts_len = None if pending is not None else cols["counts_len"]
        self.present = int(cols["present"][0])
        self.int_kind = cols["int_kind"]
        self.key_order = cols["key_order"]
        self.has_segmentation = bool(self.present & HAS_SEGMENTATION)
        self.kind = "bbox" if self.present & HAS_BBOX else "segmentation"
        self.area = None
        self.mask_area = None
        self.rles_checked = False
        #: the owner's cache counter (:attr:`AnnotationCache.computed`): boundaries
        #: extracted by the IoU step are counted there
        self.computed = None

    # ------------------------------------------------------------- strings
    def _gather(self) -> None:
        """Take the counts from the pending gather (made by the first caller)."""
        pending = self._pending
        if pending is None:
            return
        buf, start, length = pending.gathered()
        with pending.lock:
            if self._pending is None:  # another thread took them meanwhile
                return
            rows = self._pending_rows
            if rows is not None:
                start, length = start[rows], length[rows]
            self._buf, self._counts_start, self._counts_len = buf, start, length
            self._pending_rows = None
            self._pending = None

    @property
    def buf(self) -> np.ndarray:
        if self._pending is not None:
            self._gather()
        return self._buf

    @property
    def counts_start(self) -> np.ndarray:
        if self._pending is not None:
            self._gather()
        return self._counts_start

    @counts_start.setter
    def counts_start(self, value) -> None:
        self._gather()
        self._counts_start = value

    @property
    def counts_len(self) -> np.ndarray:
        if self._pending is not None:
            self._gather()
        return self._counts_len

    @counts_len.setter
    def counts_len(self, value) -> None:
        self._gather()
        self._counts_len = value

    @property
    def counts_pending(self) -> bool:
        """Whether these columns have not yet taken their RLE strings from
        the file mapping (they do on first use of ``buf``, ``counts_start``,
        ``counts_len``; the gather itself is shared with every
        :meth:`take` of them and runs once)."""
        return self._pending is not None

    def __getstate__(self) -> dict:
        """``__dict__`` with the counts gathered (a mapping does not pickle)."""
        self._gather()
        return dict(self.__dict__)

    def counts_table(self, rows: np.ndarray):
        """:class:`StringTable` of the RLE strings of ``rows`` (no copy)."""
        rows = np.asarray(rows, np.int64)
        return _rle.StringTable.from_buffers([self.buf], np.zeros(len(rows), np.int64),
                                              self.counts_start[rows], self.counts_len[rows])

    def counts_str(self, r: int) -> str:
        s = int(self.counts_start[r])
        return str(memoryview(self.buf)[s:s + int(self.counts_len[r])], "ascii")

    def describe(self, r: int) -> str:
        """How the annotation cache names a result in its messages."""
        return f"result id {r + 1} (image {int(self.image_id[r])!r})"

    def sizes_ok(self) -> bool:
        """Whether every result's image size is one the kernels take (sides
        and area within the limits :meth:`check_rles` checks first)."""
        h, w = self.seg_h, self.seg_w
        sides_ok = (h >= 1) & (w >= 1) & (h <= MAX_SIDE) & (w <= MAX_SIDE)
        return bool((sides_ok & (np.where(sides_ok, h, 0) * np.where(sides_ok, w, 0) <= MAX_PIXELS)).all())

    def finish_check(self, rows: np.ndarray, status: np.ndarray, num_threads: Optional[int] = None) -> None:
        """:meth:`check_rles` when the strings of ``rows`` were decoded
        elsewhere (the IoU step) with ``status`` per row: 0 good, 1 malformed,
        2 not covering its image, 255 not decoded.  The other strings are
        decoded here; if any string is bad, :meth:`check_rles` raises the
        error it always raises (naming the first bad result)."""
        if self.rles_checked:
            return
        st = np.full(self.n, 255, np.uint8)
        st[rows] = status
        rest = np.flatnonzero(st == 255)
        if len(rest):
            st[rest] = _rle.check_strings(self.counts_table(rest), np.ascontiguousarray(self.seg_h[rest]),
                                          np.ascontiguousarray(self.seg_w[rest]))
        if st.any():
            self.check_rles(num_threads)
            raise AssertionError("unreachable")  # pragma: no cover
        self.rles_checked = True

    def check_rles(self, num_threads: Optional[int] = None, area_bbox: bool = False):
        """Decode every RLE string once; raise ValueError naming the first
        result whose string is malformed or does not cover its image.  The
        strings are decoded on ``num_threads`` threads (None: all cores).

        With ``area_bbox``, returns the masks' areas (int64) and
        pycocotools-style boxes (float64, shape (n, 4)) found by the same
        decode (by a decode of their own if the strings were checked
        before); otherwise None.
        """
        if self.rles_checked and not area_bbox:
            return None
        h, w = self.seg_h, self.seg_w
        sides_ok = (h >= 1) & (w >= 1) & (h <= MAX_SIDE) & (w <= MAX_SIDE)
        size_ok = sides_ok & (np.where(sides_ok, h, 0) * np.where(sides_ok, w, 0) <= MAX_PIXELS)
        status = np.where(size_ok, 0, 3).astype(np.uint8)
        area = box = None
        if size_ok.all():
            threads = resolve_threads(num_threads)
            ranges = split_by_cost(self.counts_len, threads * 4) if threads > 1 and self.n > 4096 \
                else [(0, self.n)]

            def part(lo, hi):
                table = self.counts_table(np.arange(lo, hi, dtype=np.int64))
                if not area_bbox:
                    return _rle.check_strings(table, h[lo:hi], w[lo:hi]), None, None
                if self.rles_checked:
                    return (np.zeros(hi - lo, np.uint8),) + _rle.area_bbox(table, h[lo:hi])
                return _rle.check_area_bbox(table, h[lo:hi], w[lo:hi])

            parts = run_ranges(part, ranges, threads)
            status = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.uint8)
            if area_bbox:
                area = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0, np.int64)
                box = np.concatenate([p[2] for p in parts]) if parts else np.zeros((0, 4), np.float64)
        bad = np.flatnonzero(status)
        if len(bad):
            # the shared check words the error exactly as for dict results
            check_rle_strings([self.counts_str(int(i)) for i in bad], h[bad], w[bad],
                              lambda k: self.describe(int(bad[k])))
            raise AssertionError("unreachable")  # pragma: no cover
        self.rles_checked = True
        return (area, box) if area_bbox else None

    # -------------------------------------------------------------- values
    def score_values(self, rows: np.ndarray) -> list:
        """Scores of ``rows`` as the JSON parser gives them (int or float)."""
        rows = np.asarray(rows, np.int64)
        vals = self.score[rows].tolist()
        ints = np.flatnonzero(self.int_kind[rows] & 1)
        for j in ints.tolist():
            vals[j] = int(vals[j])
        return vals

    def take(self, rows: np.ndarray) -> "ResultColumns":
        """The results ``rows`` (in that order) as new columns sharing this
        byte buffer; row ``j`` of the new columns gets annotation id ``j + 1``.
        Boundaries computed so far are not carried over."""
        rows = np.asarray(rows, np.int64)
        new = object.__new__(type(self))
        pending = self._pending
        if pending is not None:
            with pending.lock:
                pending = self._pending
                base_rows = self._pending_rows
                new.__dict__.update(self.__dict__)
        else:
            new.__dict__.update(self.__dict__)
        if pending is not None:
            # the gather stays pending; the new columns remember which of its rows they hold
            new._pending_rows = rows.copy() if base_rows is None else base_rows[rows]
        else:
            for name in ("_counts_start", "_counts_len"):
                setattr(new, name, np.ascontiguousarray(getattr(self, name)[rows]))
        for name in ("image_id", "category_id", "score", "seg_h", "seg_w",
                     "int_kind", "key_order", "area", "mask_area"):
            value = getattr(self, name)
            if value is not None:
                setattr(new, name, np.ascontiguousarray(value[rows]))
        new.bbox = np.ascontiguousarray(self.bbox[rows])
        new.n = len(rows)
        new.computed = None
        return new

    def annotations(self, style: str = "coco") -> List[dict]:
        """The result dicts pycocotools' ``loadRes`` (``style='coco'``) or
        lvis' ``LVISResults`` (``style='lvis'``: no ``iscrowd``; from masks,
        ``area`` a ``numpy.uint32`` and ``bbox`` a float64 array as
        ``pycocotools.mask`` gives them) leaves in ``dataset['annotations']``."""
        coco = style == "coco"
        n = self.n
        image = self.image_id.tolist()
        cat = self.category_id.tolist()
        score = self.score.tolist()
        box = self.bbox.tolist()
        kinds = self.int_kind.tolist()
        orders = self.key_order.tolist()
        seg_h, seg_w = self.seg_h.tolist(), self.seg_w.tolist()
        cs, cl = self.counts_start.tolist(), self.counts_len.tolist()
        buf = memoryview(self.buf)
        has_seg = self.has_segmentation
        if self.kind == "segmentation":
            # as pycocotools.mask gives them: numpy.uint32 areas, float64 box arrays
            areas = list(self.mask_area.astype(np.uint32))
            boxes = list(self.bbox.copy())
        out = []
        for r in range(n):
            kind = kinds[r]
            s = score[r]
            if kind & 1:
                s = int(s)
            b = box[r]
            if kind & 30:
                b = [int(v) if kind & (2 << j) else v for j, v in enumerate(b)]
            values = {1: image[r], 2: cat[r], 3: s, 4: b}
            if has_seg:
                counts = str(buf[cs[r]:cs[r] + cl[r]], "ascii")
                size = [seg_h[r], seg_w[r]]
                values[5] = {"counts": counts, "size": size} if orders[r] & _COUNTS_FIRST \
                    else {"size": size, "counts": counts}
            code = orders[r] & ~_COUNTS_FIRST
            ann = {}
            while code:
                key = code & 7
                ann[_KEYS[key]] = values[key]
                code >>= 3
            if self.kind == "bbox":
                x, y, w, h = ann["bbox"]
                if not has_seg:
                    ann["segmentation"] = [[x, y, x, y + h, x + w, y + h, x + w, y]]
                ann["area"] = w * h
            else:
                ann["area"] = areas[r]
                ann["bbox"] = boxes[r]
            ann["id"] = r + 1
            if coco:
                ann["iscrowd"] = 0
            out.append(ann)
        return out


def read_file_buffer(path):
    """A whole file in one writable uint8 buffer that can later shrink in place.

    On Linux the buffer is an anonymous mapping populated up front
    (``MAP_POPULATE``): faulting in a fresh buffer page by page, as
    ``numpy.fromfile`` does, took 0.1-1.4 s for a 459 MB file here, the
    populated mapping a steady 0.2 s.  Returns ``(array, mapping or None)``;
    ``(None, None)`` if the file changed size while being read.  ``path``
    may be :class:`.._io.InputBytes` (an input already read, a pipe): the
    array is then a copy of its bytes (the scanners write into it).
    """
    if isinstance(path, InputBytes):
        return np.frombuffer(path.data, np.uint8).copy(), None
    with open(path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        populate = getattr(mmap, "MAP_POPULATE", 0)
        if size == 0 or not populate or not hasattr(mmap, "MAP_ANONYMOUS"):
            return np.fromfile(f, np.uint8), None
        region = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
        got = 0
        view = memoryview(region)
        try:
            while got < size:
                n = f.readinto(view[got:])
                if not n:
                    break
                got += n
        finally:
            view.release()
        if got != size:
            region.close()
            return None, None
        return np.frombuffer(region, np.uint8), region


#: Python 3.13+ maps a file without keeping a descriptor of it open
_NO_FD = {"trackfd": False} if sys.version_info >= (3, 13) else {}

#: a results file is scanned from a file mapping whose pages are given back
#: behind the scan (and behind the copy of its RLE counts) every this many bytes
RELEASE_BYTES = 8 << 20


def map_file(path):
    """A regular file as a private, page-aligned mapping nothing writes, or None.

    Returns ``(array, mapping)``: the scanner reads the array and gives the
    pages behind its cursor back to the system (they stay in the page cache,
    a later read faults them in again), so the whole file is never resident
    in this process at once.  None for an :class:`.._io.InputBytes`, an empty
    or non-regular file (a pipe) or where mapping fails; the caller then
    reads the file with :func:`read_file_buffer`.
    """
    if isinstance(path, InputBytes) or not hasattr(mmap, "MADV_DONTNEED"):
        return None
    try:
        with open(path, "rb", buffering=0) as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
                return None
            # ACCESS_COPY: a writable (for the scanner's buffer type), private
            # mapping; nothing writes it, so every page stays the file's
            region = mmap.mmap(f.fileno(), st.st_size, access=mmap.ACCESS_COPY, **_NO_FD)
    except (OSError, ValueError, TypeError, OverflowError):
        return None
    return np.frombuffer(region, np.uint8), region


def shrink_mapping(region, used: int) -> np.ndarray:
    """The first ``used`` bytes of a :func:`read_file_buffer` mapping as an
    array, the rest given back to the system (``mremap`` in place, else a
    copy)."""
    try:
        region.resize(used)
        return np.frombuffer(region, np.uint8)
    except (BufferError, OSError, SystemError, ValueError, TypeError):
        out = np.frombuffer(region, np.uint8)[:used].copy()
        return out


def _image_table(coco_gt):
    """Sorted int64 image ids of the ground truth with their heights and
    widths, or None when ids or sizes are not all plain integers."""
    imgs = coco_gt.imgs
    ids = list(imgs)
    if not all(type(k) is int for k in ids):
        return None
    try:
        arr = np.array(ids, np.int64)
        h = np.array([imgs[k]["height"] for k in ids], np.int64)
        w = np.array([imgs[k]["width"] for k in ids], np.int64)
    except (KeyError, TypeError, ValueError, OverflowError):
        return None
    order = np.argsort(arr, kind="stable")
    return arr[order], h[order], w[order]


#: most gathers left pending at once where each holds a file descriptor
MAX_PENDING = 64


class PendingCounts:
    """The RLE strings of a scanned file mapping, gathered on first use.

    A releasing scan (:func:`map_file`, ``_release``) leaves the counts
    escaped in the file; box results are evaluated without them, so they are
    copied out (``_scan_results.gather_counts``) only when something first
    needs them, exactly once, under a lock: two threads evaluating the same
    results gather once.  Until then the mapping (and its file descriptor)
    stays open; its pages were given back behind the scan, so it holds no
    memory, and the file may be removed or renamed meanwhile (the mapping
    keeps it).  Afterwards the mapping is closed.
    """

    def __init__(self, buf: np.ndarray, region, counts_start: np.ndarray, counts_len: np.ndarray,
                 counts_esc: np.ndarray, num_threads: int = 1):
        self.lock = threading.Lock()
        self.num_threads = num_threads
        self._mapped = (buf, region)
        self._start, self._len, self._esc = counts_start, counts_len, counts_esc
        self._counts = None
        _OPEN.add(self)

    @staticmethod
    def may_wait() -> bool:
        """Whether one more gather may be left pending: each pending one holds
        a file descriptor before Python 3.13, so at most :data:`MAX_PENDING`
        do (then the strings are gathered at load, as before)."""
        return bool(_NO_FD) or sum(p._mapped is not None for p in list(_OPEN)) < MAX_PENDING

    def gathered(self):
        """``(buf, counts_start, counts_len)`` of every row, gathered now if
        not yet."""
        with self.lock:
            if self._counts is None:
                buf, region = self._mapped
                try:
                    self._counts = _gather_mapped(buf, self._start, self._len, self._esc, self.num_threads)
                finally:
                    del buf
                    self._mapped = None
                    _close_mapping(region)
                    _OPEN.discard(self)
                self._esc = None
            return self._counts, self._start, self._len

    def discard(self) -> None:
        """Close the mapping without gathering (the columns were refused)."""
        with self.lock:
            if self._mapped is not None:
                region = self._mapped[1]
                self._mapped = None
                _close_mapping(region)
                _OPEN.discard(self)


#: the pending gathers alive (their mappings may still be open)
_OPEN: "weakref.WeakSet[PendingCounts]" = weakref.WeakSet()


def _gather_mapped(buf, counts_start, counts_len, counts_esc, num_threads: int = 1) -> np.ndarray:
    """The counts of a releasing scan of ``buf`` (updating ``counts_start``
    and ``counts_len`` in place), unescaped, in an array as long as they,
    copied on ``num_threads`` threads."""
    from . import _scan_results

    counts = _scan_results.gather_counts(buf, counts_start, counts_len, counts_esc, RELEASE_BYTES,
                                         num_threads)
    n = len(counts_len)
    used = int(counts_start[n - 1] + counts_len[n - 1]) if n else 0
    counts.resize(max(used, 1), refcheck=False)
    return counts


def _close_mapping(region) -> None:
    try:
        region.close()
    except BufferError:  # a view still alive: unmapped when the last one goes
        pass


def load_result_columns(coco_gt, path, source: str, num_threads: Optional[int] = None,
                        strict: bool = False) -> Optional[ResultColumns]:
    """Parse and check a results file into :class:`ResultColumns`.

    Returns None when the file is not in the fast schema or does not pass
    every check (the general path then reports the problem); results of
    categories not in the ground truth are warned about, or with ``strict``
    left to the general path, which refuses them.  A large file
    is scanned on ``num_threads`` threads (None: all cores); the columns do
    not depend on it.  The RLE strings of box results in a mapped file are
    gathered when first needed (:class:`PendingCounts`), mask-only results'
    at once (their areas and boxes come from the masks).
    """
    from . import _scan_results

    table = _image_table(coco_gt)
    if table is None:
        return None
    mapped = map_file(path)
    if mapped is not None:
        buf, region = mapped
        mapped = None
        pending = None
        counts = np.zeros(1, np.uint8)
        try:
            cols = _scan_results.scan_results(buf, resolve_threads(num_threads),
                                              _release=RELEASE_BYTES)
            p0 = int(cols["present"][0]) if cols is not None and len(cols["present"]) else 0
            if p0 & HAS_SEGMENTATION and p0 & HAS_BBOX and PendingCounts.may_wait():
                # box results: the strings are not read unless a mask evaluation
                # or the dicts need them
                pending = PendingCounts(buf, region, cols["counts_start"], cols["counts_len"],
                                        cols.pop("counts_esc"), resolve_threads(num_threads))
            elif p0 & HAS_SEGMENTATION:
                counts = _gather_mapped(buf, cols["counts_start"], cols["counts_len"], cols["counts_esc"],
                                        resolve_threads(num_threads))
        finally:
            del buf
            if pending is None:
                _close_mapping(region)
        if cols is None:
            return None
        cols.pop("counts_esc", None)
        res = _checked_columns(coco_gt, table, cols, None if pending else counts, None, source,
                               num_threads, strict, pending=pending)
        if res is None and pending is not None:
            pending.discard()
        return res
    try:
        buf, region = read_file_buffer(path)
    except (OSError, ValueError, TypeError, MemoryError):
        return None
    if buf is None:
        return None
    cols = _scan_results.scan_results(buf, resolve_threads(num_threads))
    if cols is None:
        return None
    return _checked_columns(coco_gt, table, cols, buf, region, source, num_threads, strict,
                            compact=True)


def _checked_columns(coco_gt, table, cols, buf, region, source: str, num_threads, strict: bool,
                     compact: bool = False, pending: Optional[PendingCounts] = None
                     ) -> Optional[ResultColumns]:
    """:class:`ResultColumns` of scanned ``cols`` whose counts lie in ``buf``
    (or are gathered from ``pending`` when first needed), or None when they
    fail a check.  With ``compact`` the counts are first moved to the front
    of ``buf`` (the whole file read into ``region`` or a heap array) and the
    rest of it given back."""
    from . import _scan_results

    present = cols["present"]
    p0 = int(present[0])
    if not (present == p0).all() or not p0 & (HAS_BBOX | HAS_SEGMENTATION):
        return None
    ids, heights, widths = table
    pos = _image_positions(ids, cols["image_id"])
    if pos is None:
        return None  # unknown image ids: the general path names them
    if not np.isfinite(cols["score"]).all():
        return None
    if p0 & HAS_BBOX and not np.isfinite(cols["bbox"]).all():
        return None
    if p0 & HAS_SEGMENTATION:
        if not ((cols["seg_h"] == heights[pos]) & (cols["seg_w"] == widths[pos])).all():
            return None
    if p0 & HAS_SEGMENTATION and compact:
        used = max(_scan_results.compact_counts(buf, cols["counts_start"], cols["counts_len"]), 1)
        if region is None:
            buf.resize(used, refcheck=False)  # realloc: the rest of the file is given back
        else:
            del buf  # a mapping can change size only while nothing views it
            buf = shrink_mapping(region, used)
    res = ResultColumns(buf, cols, source, pending)
    if res.kind == "segmentation":
        try:
            area, box = res.check_rles(num_threads, area_bbox=True)
        except ValueError:
            return None
        res.mask_area = area
        res.bbox = np.ascontiguousarray(box)
        res.area = area.astype(np.float64)
    else:
        res.area = res.bbox[:, 2] * res.bbox[:, 3]
    if not _unknown_categories_allowed(res, coco_gt, source, strict):
        return None
    return res


def _image_positions(ids: np.ndarray, image_id: np.ndarray) -> Optional[np.ndarray]:
    """Position of each of ``image_id`` in the sorted unique ``ids``, or None
    if one is not there.  A lookup table over the ids' range when it is not
    much larger than the inputs (a gather instead of a binary search per
    result), else a binary search."""
    n = len(image_id)
    if not len(ids):
        return None if n else np.zeros(0, np.int64)
    lo, hi = int(ids[0]), int(ids[-1])
    if n and hi - lo < (1 << 26) and hi - lo <= 4 * (n + len(ids)):
        if int(image_id.min()) < lo or int(image_id.max()) > hi:
            return None
        lut = np.full(hi - lo + 1, -1, np.int32 if len(ids) < (1 << 31) else np.int64)
        lut[ids - lo] = np.arange(len(ids), dtype=lut.dtype)
        pos = lut[image_id - lo]
        return None if int(pos.min()) < 0 else pos
    pos = np.searchsorted(ids, image_id)
    if not (pos < len(ids)).all() or not (ids[pos] == image_id).all():
        return None
    return pos


def _category_counts(category_id: np.ndarray):
    """``np.unique(category_id, return_counts=True)``; by counting over the
    ids' range when it is small (no sort of every result)."""
    if len(category_id):
        lo, hi = int(category_id.min()), int(category_id.max())
        if hi - lo < (1 << 20):
            counts = np.bincount(category_id - lo)
            uniq = np.flatnonzero(counts)
            return uniq + lo, counts[uniq]
    return np.unique(category_id, return_counts=True)


def _unknown_categories_allowed(res: ResultColumns, coco_gt, source: str, strict: bool) -> bool:
    """For category ids not in the ground truth: the warning
    :func:`._checks.check_results` gives (True), or with ``strict`` False."""
    known = set(coco_gt.cats)
    uniq, counts = _category_counts(res.category_id)
    bad = [(c, k) for c, k in zip(uniq.tolist(), counts.tolist()) if c not in known]
    if bad:
        if strict:
            return False
        ids = sorted((c for c, _ in bad), key=repr)
        _checks.warn_suspect(f"{source}: {sum(k for _, k in bad)} result(s) have category ids not in the "
                             f"ground truth ({_checks.describe_unknown_ids(ids, known)}); they are never matched")
    return True


def select_rows(values: np.ndarray, keys: Sequence) -> np.ndarray:
    """Position of each value in ``keys`` (first occurrence), -1 when absent."""
    fast = _select_int_rows(values, keys)
    if fast is not None:
        return fast
    first: dict = {}
    for j, k in enumerate(keys):
        try:
            first.setdefault(k, j)
        except TypeError:  # unhashable: pycocotools would fail on it too
            continue
    uniq, inverse = np.unique(values, return_inverse=True)
    lut = np.array([first.get(u, -1) for u in uniq.tolist()], np.int64)
    return lut[inverse.reshape(-1)] if len(values) else np.zeros(0, np.int64)


#: key types :func:`_select_int_rows` takes (Python ints, and NumPy's
#: signed ints, which ``sorted_unique`` leaves in ``params.imgIds``)
_INT_TYPES = frozenset((int, np.int64, np.int32, np.int16, np.int8))


def _select_int_rows(values: np.ndarray, keys: Sequence) -> Optional[np.ndarray]:
    """:func:`select_rows` for int64 ``values`` and keys that are all plain
    ``int`` or NumPy signed ints (image and category ids), without sorting the
    values: a lookup table over the keys' range when it is small, else a
    binary search in the sorted keys.  None for any other input."""
    values = np.asarray(values)
    if values.dtype != np.int64 or values.ndim != 1 or not len(keys):
        return None
    if not _INT_TYPES.issuperset(map(type, keys)):  # (map: no Python frame per key)
        return None
    try:
        karr = np.array(keys, np.int64)
    except OverflowError:
        return None
    uniq, first = np.unique(karr, return_index=True)  # first occurrence of each key
    first = first.astype(np.int64)
    lo, hi = int(uniq[0]), int(uniq[-1])
    if not len(values):
        return np.zeros(0, np.int64)
    if hi - lo <= 4 * (len(values) + len(uniq)) and hi - lo < (1 << 26):
        lut = np.full(hi - lo + 1, -1, np.int64)
        lut[uniq - lo] = first
        inside = (values >= lo) & (values <= hi)
        out = np.full(len(values), -1, np.int64)
        out[inside] = lut[values[inside] - lo]
        return out
    pos = np.searchsorted(uniq, values)
    pos_in = np.minimum(pos, len(uniq) - 1)
    return np.where(uniq[pos_in] == values, first[pos_in], -1)
