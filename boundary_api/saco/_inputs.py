"""The inputs of a cgF1 evaluation read as the official evaluator reads them, into columns.

A ground-truth file (one per annotator) is read by the instance engine's column scanner
(:func:`~boundary_api.instance._gt_columns.load_ground_truth_columns`): annotation
columns, RLE strings left in the file's bytes, images and categories decoded.  A file
outside that schema is decoded whole (the evaluator then runs the per-pair path on
pycocotools' objects, as the official code does).

Predictions, the schema SAM 3's ``coco_writer.py`` writes (``image_id``, ``category_id``,
``score``, an RLE ``segmentation`` and/or a ``bbox``, and ``area``, which the official
``loadRes`` replaces), are read by the instance engine's results scanner
(:func:`~boundary_api.instance._scan_results.scan_results` with ``other_keys``: any key
but those five has its value validated and skipped) straight into columns; anything
else is decoded as plain JSON and left to the per-pair path.
"""
from __future__ import annotations

import logging
import re
import time
from typing import Any, List, Optional

import numpy as np

from .._io import AssertionValueError, InputBytes, KeyValueError, read_json, read_once
from ..instance._checks import hashable, warn_suspect
from ..instance._columns import read_file_buffer
from ..instance._files import input_name
from ..instance._gt_columns import GroundTruthColumns, load_ground_truth_columns

__all__ = ["GroundTruthFile", "Predictions", "read_predictions", "exhaustive_flag", "exhaustive_flags"]

log = logging.getLogger(__name__)


class GroundTruthFile:
    """One annotator's ground truth, read once.

    Attributes
    ----------
    name : str
        The file as given (for messages).
    columns : GroundTruthColumns or None
        The annotations as columns, masks made; None when the file is outside
        the column schema (``dataset`` then holds the decoded JSON).
    images, categories : list
        The file's ``images`` and ``categories`` (the very objects of the file;
        read as columns, the images are decoded when first read: the native
        evaluation needs only their ids and exhaustive flags).
    dataset : dict or None
        The decoded file, when read without columns.
    """

    def __init__(self, path, num_threads: Optional[int] = None, say=print):
        self.name = input_name(path)
        self.source = read_once(path, "ground truth")
        say("loading annotations into memory...")
        tic = time.time()
        cols = load_ground_truth_columns(self.source, self.name, num_threads=num_threads, lazy_images=True)
        # (the RLE strings are checked where the evaluation decodes them: _pairs)
        if cols is not None and not cols.masks_ready(num_threads, check=False):
            cols = None
        self.columns: Optional[GroundTruthColumns] = cols
        self.dataset = None
        if cols is None:
            self.dataset = read_json(self.source, "ground truth")
            if type(self.dataset) is not dict:
                # pycocotools' COCO: the very assertion, naming the file
                raise AssertionValueError(f"annotation file format {type(self.dataset)} not supported: {self.name} "
                                     "(a ground truth is a JSON object with 'images' and 'annotations')")
            self.categories = self.dataset.get("categories")
        else:
            self.categories = cols.categories
            # each image's is_instance_exhaustive (here: files are read side by side)
            self._flags = _flags_of(cols.images_json())
        say("Done (t={:0.2f}s)".format(time.time() - tic))
        say("creating index...")
        say("index created!")

    @property
    def images(self) -> Optional[list]:
        return self.columns.images if self.columns is not None else self.dataset.get("images")

    def image_ids(self) -> list:
        """The ``id`` of every image entry, in file order."""
        if self.columns is not None:
            return self.columns.image_ids().tolist()
        return [img["id"] for img in self.images]

    def flagged_ids(self, flag: bool) -> list:
        """The ``id`` of every image entry whose :func:`exhaustive_flag` is ``flag``,
        in file order (the flags of all entries first; an entry's ``id`` read only
        where taken).  Read as columns, only that key of each entry is decoded and
        no dict made."""
        if self.columns is not None:
            flags = self._flags
            if flags is not None and not any(f is _MISSING for f in flags):
                return [i for i, f in zip(self.columns.image_ids().tolist(), flags) if bool(f) == flag]
        images = self.images
        if images is None:
            raise KeyValueError(f"{self.name}: the ground truth has no 'images' (an SA-Co ground truth has one image "
                                "entry per (image, noun phrase) pair)")
        return [img["id"] for img, f in zip(images, exhaustive_flags(images, self.name)) if f == flag]

    def category_ids(self) -> list:
        """``sorted(getCatIds())``: the distinct category ids, sorted."""
        return sorted({c["id"]: c for c in self.categories or []})

    def release(self) -> None:
        """Drop the file's bytes kept for a pipe (the columns keep what they need)."""
        if isinstance(self.source, InputBytes) and self.columns is not None:
            self.source = self.name


#: an image entry without ``is_instance_exhaustive``
_MISSING = object()
_FLAG_DECODER: list = []


def _flags_of(images_json: bytes) -> Optional[list]:
    """The ``is_instance_exhaustive`` value of each image entry of an ``images``
    array (:data:`_MISSING` where absent) as ``json.loads`` gives it, without making
    the entries' dicts (msgspec, skipping the other keys); None without msgspec or
    where it refuses the text."""
    if not _FLAG_DECODER:
        try:
            import msgspec

            class _Flag(msgspec.Struct):
                is_instance_exhaustive: Any = _MISSING

            _FLAG_DECODER.append(msgspec.json.Decoder(List[_Flag]).decode)
        except ImportError:  # pragma: no cover - msgspec is optional
            _FLAG_DECODER.append(None)
    decode = _FLAG_DECODER[0]
    if decode is None:
        return None
    try:
        return [img.is_instance_exhaustive for img in decode(images_json)]
    except Exception:  # noqa: BLE001 - the dicts then say it
        return None


def exhaustive_flags(images: list, name: str) -> list:
    """:func:`exhaustive_flag` of each image, in order (its error at the first image
    without the key)."""
    try:
        return [bool(img["is_instance_exhaustive"]) for img in images]
    except KeyError:
        return [exhaustive_flag(img, name) for img in images]


def exhaustive_flag(img: Any, name: str) -> bool:
    """``img["is_instance_exhaustive"]`` as the official code tests it (Python truth),
    or KeyError naming the file and the image."""
    try:
        return bool(img["is_instance_exhaustive"])
    except KeyError:
        who = img.get("id") if isinstance(img, dict) else img
        raise KeyValueError(f"{name}: image {who!r} has no 'is_instance_exhaustive' (an SA-Co ground truth has "
                            "one image entry per (image, noun phrase) pair, each with 'is_instance_exhaustive')"
                            ) from None


class Predictions:
    """Predictions as columns (``fast``) or as decoded JSON (``objects``).

    Attributes
    ----------
    name : str
    n : int
    fast : bool
        Read into columns: every prediction a JSON object with integer
        ``image_id`` and ``category_id``, a number ``score``, and either every
        one or none with a ``bbox`` of four numbers, and a compressed-RLE
        ``segmentation`` in every one or in none.
    image_id, category_id : ndarray of int64
    score : ndarray of float64
    bbox : ndarray of float64, shape (n, 4) (zeros without boxes); ``has_bbox``
    seg_h, seg_w : ndarray of int64; ``has_segmentation``
    counts : bytes; ``counts_start``, ``counts_len`` : ndarray of int64
    objects : list or other JSON value
        The decoded file, when not ``fast``.
    """

    fast = False
    objects: Any = None
    data: Optional[np.ndarray] = None

    def decoded(self) -> Any:
        """The file's JSON value (decoded now for predictions read as columns)."""
        if self.objects is None and self.data is not None:
            from .._io import loads_json

            self.objects = loads_json(self.data)
        return self.objects

    def table(self, rows: np.ndarray):
        """The RLE strings of ``rows`` as a ``StringTable``."""
        from ..masks import _rle

        rows = np.asarray(rows, np.int64)
        return _rle.StringTable.from_buffers([self.counts], np.zeros(len(rows), np.int64),
                                              self.counts_start[rows], self.counts_len[rows])


def read_predictions(path, num_threads: Optional[int] = None) -> Predictions:
    """Read a predictions file (a pipe once): columns where the schema allows
    (the results scanner, see the module), else the decoded JSON (invalid JSON
    raises ``JSONDecodeError`` naming the file, as ``json.load`` would, with
    this package's message).  ``num_threads``: threads that scan a large file
    (None: all cores); the columns do not depend on it."""
    name = input_name(path)
    src = read_once(path, "predictions")
    out = Predictions()
    out.name = name
    try:
        data = read_file_buffer(src)[0]
    except (OSError, TypeError, ValueError, MemoryError):
        data = None
    if data is not None and bytes(data[:2]) != b"\x1f\x8b" and _columns(out, data, num_threads):
        out.data = data
        return out
    out.objects = read_json(src, "predictions")
    out.n = len(out.objects) if isinstance(out.objects, list) else 0
    return out


#: a JSON empty array, whitespace around and inside it
_EMPTY_LIST = re.compile(rb"[ \t\n\r]*\[[ \t\n\r]*\][ \t\n\r]*")


def _columns(out: Predictions, data: np.ndarray, num_threads: Optional[int]) -> bool:
    """Scan ``data`` into the columns of ``out`` (``data`` left intact: the
    counts are copied out, unescaped); False when it is outside the schema
    or what the native path evaluates (boxes or masks in some predictions
    only, non-finite numbers)."""
    from .._parallel import resolve_threads
    from ..instance import _scan_results

    threads = resolve_threads(num_threads)
    cols = _scan_results.scan_results(data, threads, other_keys=True, _escaped=True) if len(data) else None
    if cols is None:
        if not _EMPTY_LIST.fullmatch(memoryview(data)):
            return False
        z = np.zeros(0, np.int64)
        cols = {"image_id": z, "category_id": z, "score": np.zeros(0), "bbox": np.zeros((0, 4)), "seg_h": z,
                "seg_w": z, "counts_start": z, "counts_len": z, "present": np.zeros(0, np.uint8)}
    present = cols["present"]
    n = len(present)
    if n and not (present == present[0]).all():
        return False
    out.has_bbox = bool(n) and bool(present[0] & 8)
    out.has_segmentation = bool(n) and bool(present[0] & 16)
    out.image_id, out.category_id, out.score = cols["image_id"], cols["category_id"], cols["score"]
    out.bbox = cols["bbox"]
    if not (np.isfinite(out.score).all() and np.isfinite(out.bbox).all()):
        return False
    out.seg_h, out.seg_w = cols["seg_h"], cols["seg_w"]
    out.counts_start, out.counts_len = cols["counts_start"], cols["counts_len"]
    if out.has_segmentation:
        out.counts = _scan_results.gather_counts(data, out.counts_start, out.counts_len, cols["counts_esc"], 0,
                                                 threads)
    else:
        out.counts = np.zeros(1, np.uint8)
    out.n = n
    out.fast = True
    return True


def suspect(message: str, strict: bool) -> None:
    """Input the official code accepts but which is probably a mistake: a
    SuspectInputWarning, or with ``strict`` a ValueError."""
    if strict:
        raise ValueError(message + " (refused in strict mode; strict=False, or boundary-eval saco --not-strict, "
                         "evaluates it with a warning)")
    warn_suspect(message)


def warn_unknown_ids(name: str, values, known, what: str, where: str, strict: bool) -> None:
    """Predictions whose ``<what>_id`` is not in ``known``: ignored by the
    official code, warned about here (refused with ``strict``)."""
    if isinstance(values, np.ndarray) and all(type(k) is int for k in known):
        karr = np.fromiter(known, np.int64, len(known)) if len(known) else np.zeros(0, np.int64)
        bad = values[~np.isin(values, karr)].tolist()
    else:
        known = set(known)
        bad = [v for v in values if not hashable(v) or v not in known]
    if bad:
        distinct = list(dict.fromkeys(repr(v) for v in bad))
        shown = ", ".join(distinct[:5]) + (", ..." if len(distinct) > 5 else "")
        suspect(f"{name}: {len(bad)} prediction(s) of {len(distinct)} {what} id(s) that {where} ({shown}); "
                "the official evaluator ignores them", strict)
