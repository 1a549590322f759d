"""A COCO ground truth as column arrays: the fast path of ``COCO(path)``.

The native scanner (:func:`._scan_ground_truth.scan_ground_truth`) reads the file into
per-annotation arrays (ids, areas, crowd and ignore flags, boxes, polygons as
one coordinate array, RLE strings as spans of the file).  Images and
categories become the usual dicts at once (they are few); the annotation dicts
are made only when somebody reads ``dataset``/``anns``/``imgToAnns``/
``catToImgs``, by parsing the very same bytes, and then carry whatever the
evaluations run so far would have written into them in pycocotools
(``ignore`` flags, RLEs in place of polygons): each evaluation logs what it
selected and the dicts replay that log (see ``COCO._materialize``).

Masks are converted to RLE once per annotation (polygons natively), and
boundaries computed once per annotation and dilation ratio, for as long as
the ground truth lives: the annotation cache's promise, kept in arrays.
"""
from __future__ import annotations

import json
import logging
import threading
from collections import defaultdict
from typing import Dict, List, Optional, Tuple

import numpy as np

from ..masks import _boundary, _polygon, _rle
from ..masks.boundary import MAX_PIXELS, MAX_SIDE, dilation_pixels_array
from .._parallel import resolve_threads, run_ranges, split_by_cost
from ..masks.polygons import rle_chunks_of_flat_polygons
from ._checks import _MAX_COORD

__all__ = ["GroundTruthColumns", "load_ground_truth_columns"]

log = logging.getLogger(__name__)

#: one decode of lazily read images at a time (their first readers may be threads)
_LAZY = threading.Lock()

#: ``seg_kind`` codes of the scanner
NO_SEGMENTATION, POLYGONS, RLE_STRING, RLE_COUNTS = 0, 1, 2, 3


class GroundTruthColumns:
    """The annotations of one ground-truth file, one array entry per
    annotation (file order), plus the decoded images and categories.

    Attributes
    ----------
    n : int
    ann_id, image_id, category_id, iscrowd : ndarray of int64
        (``iscrowd`` is 0 where the annotation has none)
    has_iscrowd : ndarray of bool
        The annotation has an ``iscrowd`` (LVIS annotations have none).
    area : ndarray of float64
    bbox : ndarray of float64, shape (n, 4); ``has_bbox`` says where present
    own_ignore : ndarray of bool
        The annotation's own ``ignore`` flag is set (truthy).
    height, width : ndarray of int64
        Size of each annotation's image.
    images, categories : list of dict
        The ground truth's ``images`` and ``categories``, as the JSON parser
        gives them (the very objects later found in ``dataset``); the images
        decoded when first read where the file was loaded with
        ``lazy_images`` (:func:`load_ground_truth_columns`).
    log : list of (str, ndarray)
        Evaluations run on the columns: iouType and the selected rows, in
        order (what pycocotools' ``_prepare`` would have changed in the dicts).
    ignore_marks : list of (ndarray, ndarray)
        Per evaluation run on the columns, in order: the rows it matched and
        the ``_ignore`` flag pycocotools' / lvis' per-image evaluation would
        have left in each (see :meth:`AnnotationCache.adopt_ground_truth`).
    """

    def __init__(self, buf: np.ndarray, cols: Dict[str, np.ndarray], images: list, categories: list,
                 height: np.ndarray, width: np.ndarray, source: str):
        self.buf = buf
        self.source = source
        self._images = images
        self.categories = categories
        self.n = len(cols["ann_id"])
        self.ann_id = cols["ann_id"]
        self.image_id = cols["ann_image_id"]
        self.category_id = cols["ann_category_id"]
        self.iscrowd = cols["ann_iscrowd"]
        self.has_iscrowd = cols["ann_has_iscrowd"].astype(bool)
        self.area = np.ascontiguousarray(cols["ann_area"], np.float64)
        self.bbox = np.ascontiguousarray(cols["ann_bbox"], np.float64).reshape(-1, 4)
        self.has_bbox = cols["ann_has_bbox"].astype(bool)
        self.own_ignore = cols["ann_ignore"] == 2
        self.seg_kind = cols["ann_seg_kind"]
        self.height = height
        self.width = width
        self._cols = cols
        self.log: List[tuple] = []
        self.ignore_marks: List[tuple] = []
        self._masks = None        # (buffers, which, start, length) once made; False: cannot be
        self._unchecked = False   # masks made, their RLE strings not yet checked (masks_ready)
        self._boundaries: Dict[float, list] = {}
        self._ids_unique: Optional[bool] = None
        #: the owner's cache counter (:attr:`AnnotationCache.computed`)
        self.computed = None

    def ids_unique(self) -> bool:
        """Whether no annotation id repeats (found once, then remembered)."""
        if self._ids_unique is None:
            ids = np.sort(self.ann_id)
            self._ids_unique = not bool((ids[1:] == ids[:-1]).any())
        return self._ids_unique

    @property
    def images(self) -> list:
        if self._images is None:
            with _LAZY:
                if self._images is None:
                    from .._io import loads_json

                    self._images = loads_json(self.images_json())
        return self._images

    @images.setter
    def images(self, value: list) -> None:
        self._images = value

    def images_json(self) -> bytes:
        """The text of the file's ``images`` array."""
        s, e = (int(v) for v in self._cols["images_span"])
        return bytes(self.buf[s:e])

    def image_ids(self) -> np.ndarray:
        """The ``id`` of every image entry (int64), in file order."""
        return self._cols["img_id"]

    def describe(self, r: int) -> str:
        return f"annotation id {int(self.ann_id[r])!r} (image {int(self.image_id[r])!r})"

    # --------------------------------------------------------------- masks
    def masks_ready(self, num_threads: Optional[int] = None, check: bool = True) -> bool:
        """Make every annotation's compressed RLE (once); False when some
        annotation has no usable mask (the dict path then words the problem).

        With ``check`` false the RLE strings are not decoded to check them yet:
        the caller checks them where it decodes them and hands the outcome to
        :meth:`strings_ok` (a later call with ``check`` checks them all)."""
        if self._masks is None:
            self._masks = self._make_masks(resolve_threads(num_threads)) or False
            self._unchecked = self._masks is not False
        if check and self._unchecked:
            self.strings_ok(num_threads=num_threads)
        return self._masks is not False

    def strings_ok(self, rows: Optional[np.ndarray] = None, status: Optional[np.ndarray] = None,
                   num_threads: Optional[int] = None) -> bool:
        """Whether every annotation's RLE string (masks made) decodes to its
        image's pixels, once per file: ``status`` (0 good) is that of ``rows``
        as found where they were decoded (``masks._iou.iou_pairs``'
        ``gt_status``), the other strings are checked now.  False (the masks
        then unusable) when one is not."""
        if not self._unchecked or self._masks is False:
            return self._masks is not False
        todo = np.ones(self.n, bool)
        if rows is not None:
            if np.asarray(status).any():
                todo[:] = False
                self._masks = False
            todo[np.asarray(rows, np.int64)] = False
        rest = np.flatnonzero(todo & (self.seg_kind >= RLE_STRING))
        if len(rest):
            threads = resolve_threads(num_threads)
            h = np.ascontiguousarray(self.height[rest])
            w = np.ascontiguousarray(self.width[rest])
            ranges = split_by_cost(self._masks[3][rest].astype(np.float64), threads * 4 if threads > 1 else 1)
            bad = run_ranges(lambda lo, hi: bool(_rle.check_strings(self.mask_table(rest[lo:hi]), h[lo:hi],
                                                                    w[lo:hi]).any()), ranges, threads)
            if any(bad):
                self._masks = False
        self._unchecked = False
        return self._masks is not False

    def _make_masks(self, threads: int):
        n = self.n
        kind = self.seg_kind
        if (kind == NO_SEGMENTATION).any():
            return None
        c = self._cols
        h, w = self.height, self.width
        buffers: list = []
        which = np.full(n, -1, np.int64)
        start = np.zeros(n, np.int64)
        length = np.zeros(n, np.int64)
        # polygons: one native batch (they own consecutive polygon ranges)
        poly = np.flatnonzero(kind == POLYGONS)
        if len(poly):
            chunks = rle_chunks_of_flat_polygons(c["poly_coords"], c["poly_off"], _polygon_ann_off(c, poly),
                                                 h[poly], w[poly], threads)
            _place(chunks, poly, buffers, which, start, length)
        rle = np.flatnonzero(kind >= RLE_STRING)
        if len(rle):
            if not ((c["ann_rle_h"][rle] == h[rle]) & (c["ann_rle_w"][rle] == w[rle])).all():
                return None
            sides_ok = (h[rle] <= MAX_SIDE) & (w[rle] <= MAX_SIDE) & (h[rle] * w[rle] <= MAX_PIXELS)
            if not sides_ok.all():
                return None
            plain = rle[(kind[rle] == RLE_STRING) & (c["ann_counts_escaped"][rle] == 0)]
            which[plain] = len(buffers)
            start[plain] = c["ann_counts_start"][plain]
            length[plain] = c["ann_counts_len"][plain]
            buffers.append(self.buf)
            other = rle[~np.isin(rle, plain)] if len(plain) else rle
            escaped = other[kind[other] == RLE_STRING]
            if len(escaped):
                # the strings with JSON escapes, unescaped natively (one copy);
                # an escape the copy does not take (\u00XX: a 'u' in the copy,
                # never a byte of an RLE) leaves them to the JSON decoder below
                gathered = _unescaped(self.buf, c["ann_counts_start"][escaped], c["ann_counts_len"][escaped])
                if gathered is not None:
                    which[escaped] = len(buffers)
                    start[escaped], length[escaped] = gathered[1], gathered[2]
                    buffers.append(gathered[0])
                    other = other[kind[other] != RLE_STRING]
            if len(other):
                import pycocotools.mask as mask_utils

                extra, offs = [], [0]
                for r in other.tolist():
                    hh, ww = int(h[r]), int(w[r])
                    if kind[r] == RLE_STRING:
                        s0, l0 = int(c["ann_counts_start"][r]), int(c["ann_counts_len"][r])
                        counts = json.loads(b'"' + bytes(self.buf[s0:s0 + l0]) + b'"').encode("ascii")
                    else:
                        lst = c["rle_counts"][c["ann_rle_off"][r]:c["ann_rle_off"][r + 1]].tolist()
                        if sum(lst) != hh * ww:
                            return None
                        counts = mask_utils.frPyObjects({"size": [hh, ww], "counts": lst}, hh, ww)["counts"]
                    extra.append(counts)
                    offs.append(offs[-1] + len(counts))
                which[other] = len(buffers)
                start[other] = offs[:-1]
                length[other] = np.diff(offs)
                buffers.append(b"".join(extra))
            # (the strings are checked by masks_ready / strings_ok)
        return buffers, which, start, length

    def mask_lengths(self, rows: np.ndarray) -> Optional[np.ndarray]:
        """Lengths of the RLE strings of ``rows`` if the masks are made, else None."""
        if not self._masks:
            return None
        return self._masks[3][rows]

    def mask_table(self, rows: np.ndarray):
        buffers, which, start, length = self._masks
        return _rle.StringTable.from_buffers(buffers, which[rows], start[rows], length[rows])

    def mask_spans(self, rows: np.ndarray) -> Tuple[list, np.ndarray, np.ndarray, np.ndarray]:
        """Where the RLE strings of ``rows`` lie (masks made):
        ``(buffers, which, start, length)`` as ``StringTable.from_buffers``
        takes them, so that the strings of several files make one table."""
        buffers, which, start, length = self._masks
        return buffers, which[rows], start[rows], length[rows]

    def boundary_spans(self, rows: np.ndarray, dilation_ratio: float, num_threads: Optional[int] = None
                       ) -> Tuple[list, np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`mask_spans` of the boundary strings of ``rows`` (those not
        made yet are made, as :meth:`boundary_table` makes them)."""
        self.boundary_table(rows, dilation_ratio, num_threads)
        buffers, which, start, length = self._boundaries[dilation_ratio]
        return buffers, which[rows], start[rows], length[rows]

    def boundary_table(self, rows: np.ndarray, dilation_ratio: float, num_threads: Optional[int] = None):
        """Boundary RLEs of ``rows``, computing (in parallel, once per
        annotation and ratio) those not made yet."""
        rows = np.asarray(rows, np.int64)
        entry = self._boundaries.get(dilation_ratio)
        if entry is None:
            entry = [[], np.full(self.n, -1, np.int64), np.zeros(self.n, np.int64), np.zeros(self.n, np.int64)]
            self._boundaries[dilation_ratio] = entry
        buffers, which, start, length = entry
        need = rows[which[rows] < 0]
        if len(need):
            missing = np.flatnonzero(np.bincount(need, minlength=self.n))
            table = self.mask_table(missing)
            h = np.ascontiguousarray(self.height[missing])
            w = np.ascontiguousarray(self.width[missing])
            d = dilation_pixels_array(h, w, dilation_ratio)
            threads = resolve_threads(num_threads)
            m = len(missing)
            ranges = split_by_cost(self._masks[3][missing].astype(np.float64), threads * 8 if m > 2000 else threads)
            chunks = run_ranges(lambda lo, hi: _boundary.boundary_buffer(table, h, w, d, lo, hi), ranges, threads)
            _place(zip(ranges, chunks), missing, buffers, which, start, length)
            if self.computed is not None:
                self.computed["boundaries"] += m
        return _rle.StringTable.from_buffers(buffers, which[rows], start[rows], length[rows])

    def boundaries_none_made(self, rows: np.ndarray, dilation_ratio: float) -> bool:
        """Whether ``rows`` (each once) have no boundary made yet at this ratio."""
        rows = np.asarray(rows, np.int64)
        if len(rows) and int(np.bincount(rows).max()) > 1:
            return False
        entry = self._boundaries.get(dilation_ratio)
        return entry is None or not bool((entry[1][rows] >= 0).any())

    def keep_boundaries(self, rows: np.ndarray, dilation_ratio: float, chunks) -> None:
        """Cache the boundary strings of ``rows`` made elsewhere (the IoU step):
        ``chunks`` as :func:`_place` takes them, over ``rows``."""
        rows = np.asarray(rows, np.int64)
        entry = self._boundaries.get(dilation_ratio)
        if entry is None:
            entry = [[], np.full(self.n, -1, np.int64), np.zeros(self.n, np.int64), np.zeros(self.n, np.int64)]
            self._boundaries[dilation_ratio] = entry
        _place(chunks, rows, *entry)
        if self.computed is not None:
            self.computed["boundaries"] += len(rows)

    def made_masks(self):
        """Every annotation's RLE string (bytes), heights and widths, if made."""
        if not self._masks:
            return None
        buffers, which, start, length = self._masks
        counts = [bytes(buffers[b][s:s + l]) for b, s, l in zip(which.tolist(), start.tolist(), length.tolist())]
        return counts, self.height, self.width

    def made_boundaries(self) -> Dict[float, list]:
        """Ratio -> each annotation's boundary string (bytes) or None, as made so far."""
        out = {}
        for ratio, (buffers, which, start, length) in self._boundaries.items():
            vals = [None] * self.n
            done = np.flatnonzero(which >= 0)
            for r, b, s, l in zip(done.tolist(), which[done].tolist(), start[done].tolist(), length[done].tolist()):
                vals[r] = bytes(buffers[b][s:s + l])
            out[ratio] = vals
        return out

    # ------------------------------------------------------------- values
    def info(self) -> dict:
        """The file's ``info`` (``{}`` without one), a fresh object."""
        from .._io import loads_json

        value = loads_json(self.buf)
        return value.get("info", {}) if type(value) is dict else {}

    def header(self, loads) -> dict:
        """Every top-level entry of the file, in file order, without parsing
        the annotations: ``annotations`` is an empty list, ``images`` and
        ``categories`` are the lists already handed out, the other values
        fresh objects as the JSON parser gives them."""
        c = self._cols
        spans = sorted((int(c[k][0]), int(c[k][1])) for k in ("images_span", "categories_span",
                                                               "annotations_span"))
        pieces, at = [], 0
        for s, e in spans:
            pieces.append(bytes(self.buf[at:s]))
            pieces.append(b"[]")
            at = e
        pieces.append(bytes(self.buf[at:]))
        header = loads(b"".join(pieces))
        header["images"] = self.images
        header["categories"] = self.categories
        return header

    def dataset(self, loads) -> dict:
        """The whole ground truth as the JSON parser gives it, ``images`` and
        ``categories`` being the lists already handed out."""
        dataset = loads(self.buf)
        dataset["images"] = self.images
        dataset["categories"] = self.categories
        return dataset


def _unescaped(buf: np.ndarray, start: np.ndarray, length: np.ndarray):
    """The JSON strings ``buf[start:start + length]`` (escaped, in file order)
    without their escapes ``\\\\``, ``\\"``, ``\\/``: ``(array, start, length)``
    of the copies; None when one holds another escape or ``buf`` is read-only."""
    from . import _scan_results

    if not buf.flags.writeable:
        return None
    s = np.ascontiguousarray(start, np.int64).copy()
    n = np.ascontiguousarray(length, np.int64).copy()
    out = _scan_results.gather_counts(buf, s, n, np.zeros(len(s), np.int64))
    if (out == 117).any():  # 'u': a \\u escape was copied as the letter
        return None
    return out, s, n


def _polygon_ann_off(cols: dict, poly: np.ndarray) -> np.ndarray:
    """Polygon offsets of the polygon annotations ``poly`` alone: the others
    own no polygon, so these own consecutive ranges."""
    return np.concatenate((cols["ann_poly_off"][poly], [cols["ann_poly_off"][poly[-1] + 1]])).astype(np.int64)


def _place(chunks, rows: np.ndarray, buffers: list, which, start, length) -> None:
    """Record where the strings of ``rows`` made range by range lie:
    ``chunks`` is ``[((lo, hi), (buffer, offsets)), ...]`` over ``rows``."""
    for (lo, hi), (data, offs) in chunks:
        sel = rows[lo:hi]
        which[sel] = len(buffers)
        start[sel] = offs[:-1]
        length[sel] = np.diff(offs)
        buffers.append(data)


def index_annotations(anns: list) -> Tuple[dict, defaultdict, defaultdict]:
    """The index pycocotools' ``createIndex`` and lvis' ``_create_index`` make
    of annotation dicts: ``{id: ann}``, ``{image_id: [ann]}`` and
    ``{category_id: [image_id]}`` (the last two ``defaultdict(list)``)."""
    index = {}
    by_image, by_category = defaultdict(list), defaultdict(list)
    for ann in anns:
        by_image[ann["image_id"]].append(ann)
        index[ann["id"]] = ann
    for ann in anns:
        by_category[ann["category_id"]].append(ann["image_id"])
    return index, by_image, by_category


def ground_truths_by_pair(anns: list, rows: np.ndarray) -> defaultdict:
    """The evaluators' ``_gts`` of an evaluation run on ground-truth columns:
    ``{(image_id, category_id): [ann]}`` of the annotation dicts at ``rows``
    (selection order)."""
    out = defaultdict(list)
    for r in rows.tolist():
        gt = anns[r]
        out[gt["image_id"], gt["category_id"]].append(gt)
    return out


def load_ground_truth_columns(path, source: str, lvis: bool = False, num_threads: Optional[int] = None,
                              lazy_images: bool = False) -> Optional[GroundTruthColumns]:
    """Scan and check a ground-truth file into :class:`GroundTruthColumns`.

    Parameters
    ----------
    path : str, path-like or InputBytes
        The ground-truth JSON file (or a pipe's content, read by
        :func:`.._io.read_once`).
    source : str
        How the file is named in messages.
    lvis : bool, optional
        Check it as an LVIS ground truth (annotations without ``iscrowd``;
        images with ``neg_category_ids`` and ``not_exhaustive_category_ids``
        lists, categories with a ``frequency`` of 'r', 'c' or 'f'), as
        ``check_instances_dataset(..., lvis=True)`` does; otherwise every
        annotation needs an ``iscrowd``.
    num_threads : int, optional
        Threads to scan a large file with (None: all cores, as ``loadRes``
        reads results); the columns do not depend on it.  While other
        threads scan the annotations, this one decodes the images and
        categories that come before them in the file.
    lazy_images : bool, optional
        Decode the ``images`` when first read (:attr:`GroundTruthColumns.images`),
        not now (not for LVIS, whose images are checked on load): the scan has
        validated their JSON, and a caller that needs only some of their values
        (:meth:`GroundTruthColumns.images_json`) then builds no dict of them.

    Returns
    -------
    GroundTruthColumns or None
        None when the file is outside the fast schema or fails a check (the
        general path then reads it and words the problem).
    """
    from . import _scan_ground_truth
    from ._columns import read_file_buffer
    from .._io import InputBytes, loads_json

    try:
        if isinstance(path, InputBytes):  # a pipe already read (the scanner only reads the bytes)
            buf = np.frombuffer(path.data, np.uint8)
        else:
            # a populated mapping: a fresh heap buffer faults its pages in one by one
            # (a 31 MB file: 15 ms so, 50-60 ms with numpy.fromfile in a new process)
            buf = read_file_buffer(path)[0]
    except (OSError, ValueError, TypeError, MemoryError):
        return None
    if buf is None:
        return None  # (the file changed size while read: the general path reads it)
    decoded: dict = {}
    lazy = lazy_images and not lvis

    def decode_early(spans: dict) -> None:
        # while other threads scan the annotations: the images and categories
        # already scanned (msgspec's import and decoding hold the GIL, the scan not)
        # (what it raises is raised, or refused, where the one-thread path decodes)
        for key, (s, e) in spans.items():
            if lazy and key == "images_span":
                continue
            try:
                decoded[key] = (s, e, loads_json(bytes(buf[s:e])), None)
            except Exception as exc:  # noqa: BLE001 - kept for later, see above
                decoded[key] = (s, e, None, exc)

    cols = _scan_ground_truth.scan_ground_truth(buf, resolve_threads(num_threads), meanwhile=decode_early)
    if cols is None or len(cols["ann_id"]) == 0:
        return None
    values = []
    for key in ("images_span", "categories_span"):
        if lazy and key == "images_span":
            values.append(None)  # (an array: the scan saw its brackets)
            continue
        s, e = (int(v) for v in cols[key])
        early = decoded.get(key)
        try:
            if early is not None and early[:2] == (s, e):
                if early[3] is not None:
                    raise early[3]
                value = early[2]
            else:
                value = loads_json(bytes(buf[s:e]))
        except ValueError:
            return None
        values.append(value)
    images, categories = values
    if (images is not None and type(images) is not list) or type(categories) is not list:
        return None
    if lvis:
        if not _lvis_images_and_categories(images, categories):
            return None
    elif not cols["ann_has_iscrowd"].all():
        return None
    # what check_instances_dataset demands, on whole columns
    img_ids = cols["img_id"]
    if (cols["img_height"] < 1).any() or (cols["img_width"] < 1).any():
        return None
    if len(img_ids) == 0:
        return None  # annotations on unknown images: the general path warns or refuses
    order = np.argsort(img_ids, kind="stable")
    sorted_ids = img_ids[order]
    # duplicate image ids: the last one wins in pycocotools' index
    last = np.concatenate((sorted_ids[1:] != sorted_ids[:-1], [True]))
    uniq_ids, uniq_rows = sorted_ids[last], order[last]
    pos = np.searchsorted(uniq_ids, cols["ann_image_id"])
    pos = np.minimum(pos, len(uniq_ids) - 1)
    if not (uniq_ids[pos] == cols["ann_image_id"]).all():
        return None
    height = cols["img_height"][uniq_rows[pos]]
    width = cols["img_width"][uniq_rows[pos]]
    if not np.isfinite(cols["ann_area"]).all():
        return None
    has_bbox = cols["ann_has_bbox"].astype(bool)
    if not np.isfinite(cols["ann_bbox"][has_bbox]).all():
        return None
    kind = cols["ann_seg_kind"]
    rle = kind >= RLE_STRING
    if rle.any() and not ((cols["ann_rle_h"][rle] == height[rle]) & (cols["ann_rle_w"][rle] == width[rle])).all():
        return None  # RLEs of another size than their image's: the general path warns or refuses
    poly = np.flatnonzero(kind == POLYGONS)
    if len(poly):
        ok = _polygon.polygons_acceptable(cols["poly_coords"], cols["poly_off"], _polygon_ann_off(cols, poly),
                                       np.ascontiguousarray(height[poly]), np.ascontiguousarray(width[poly]),
                                       _MAX_COORD)
        if not ok.all():
            return None
    # repeated annotation ids, annotations of unknown categories: the general path warns or refuses
    ann_ids = np.sort(cols["ann_id"])
    if (ann_ids[1:] == ann_ids[:-1]).any():
        return None
    cat_ids = [cat.get("id") if type(cat) is dict else None for cat in categories]
    if not all(type(c) is int for c in cat_ids):
        return None
    if not np.isin(cols["ann_category_id"], np.array(cat_ids, np.int64)).all():
        return None
    return GroundTruthColumns(buf, cols, images, categories, height, width, source)


def _lvis_images_and_categories(images: list, categories: list) -> bool:
    """Whether the images and categories (decoded objects of a file the
    scanner accepted) are what ``check_instances_dataset(..., lvis=True)``
    demands beyond the scanner's schema."""
    for img in images:
        if type(img.get("neg_category_ids")) is not list or type(img.get("not_exhaustive_category_ids")) is not list:
            return False
    return all(cat.get("frequency") in ("r", "c", "f") for cat in categories)
