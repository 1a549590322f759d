"""Checks of COCO/LVIS instance files: one clear error per problem, nothing modified."""
from __future__ import annotations

import contextlib
import itertools
import logging
import numbers
import operator
import os
import sys
import warnings
from typing import Any, Dict, Iterable, List, Optional

import numpy as np

from .._io import (AssertionValueError, IndexValueError, KeyValueError, TypeValueError, finite_number,
                   finite_numbers, named_as)
from ..masks.boundary import check_rle_strings
# (the checks of single masks; imported by the rest of the package from here)
from ._mask_checks import (_MAX_COORD, UnsafePolygonError, UnsafeRLEError, _json_type, _short,  # noqa: F401
                           _valid_size, check_polygon_image_size, check_polygons, check_rle_dict, check_rle_size,
                           describe_annotation, flatten_polygons, hashable, polygons_valid, pycocotools_area_bbox,
                           pycocotools_iou, refuse_unsafe_polygons, terminated_for_pycocotools)

log = logging.getLogger(__name__)


class SuspectInputWarning(UserWarning):
    """Input that pycocotools / lvis accept but which is probably wrong
    (``strict=True`` refuses it)."""


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_stacklevel() -> int:
    """The ``stacklevel`` of the first caller outside this package."""
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR + os.sep):
        frame, level = frame.f_back, level + 1
    return level


def warn_suspect(message: str) -> None:
    """One warning line naming a problem of the input (category
    :class:`SuspectInputWarning`), attributed to the caller's code."""
    warnings.warn(message, SuspectInputWarning, stacklevel=_user_stacklevel())


class Problems:
    """What the checks of one input found.

    A problem the replaced library also fails on when loading (``fail``) is
    raised at once, as a subclass of ``ValueError`` named as the class that
    library raises.  Any other problem: with ``strict`` raised at once as
    ``ValueError``; otherwise remembered, the check going on.  Of those, a
    ``suspect`` one (the library evaluates it silently) is warned about (one
    line) by :meth:`warn`; an ``unusable`` one (a field that the library's
    evaluation reads and fails without, such as a missing score or area) is
    not: the evaluation runs the library's own code, whose error then
    carries the problem as a note.

    Parameters
    ----------
    strict : bool
    original : str
        The replaced library, named in the warning.
    """

    def __init__(self, strict: bool, original: str = "pycocotools"):
        self.strict = bool(strict)
        self.original = original
        self.found: List[str] = []
        self.unused: List[str] = []

    def fail(self, cls: type, message: str):
        raise cls(message)

    def suspect(self, message: str) -> None:
        if self.strict:
            raise ValueError(message)
        self.found.append(message)

    def unusable(self, message: str) -> None:
        if self.strict:
            raise ValueError(message)
        self.unused.append(message)

    def warn(self) -> List[str]:
        """Warn about the suspect problems (one line); returns them and the
        unusable ones (every problem the package's own evaluation must not see)."""
        if self.found:
            more = f" (and {len(self.found) - 1} more problems)" if len(self.found) > 1 else ""
            warn_suspect(f"{self.found[0]}{more}; loaded as {self.original} loads it "
                         "(strict=True refuses it)")
        return self.found + self.unused


def check_instances_dataset(dataset: Any, source: str, lvis: bool = False, warn_empty: bool = True,
                            strict: bool = True) -> List[str]:
    """Check that a ground truth is a COCO (or LVIS) instances dataset.

    Polygons are checked with :func:`check_polygons`.  A dataset without
    annotations is valid but logs a warning (unless ``warn_empty`` is False).

    Parameters
    ----------
    dataset : object
        The decoded JSON document.
    source : str
        How the input is named in messages.
    lvis : bool, optional
        Check it as an LVIS ground truth.
    warn_empty : bool, optional
    strict : bool, optional
        Refuse (``ValueError``) what pycocotools / lvis load but what is
        probably wrong (images without a size, annotations on unknown images
        or without an area, invalid polygons, RLEs of another size, repeated
        annotation ids, annotations of unknown categories, ...).  With False,
        such problems are warned about (:class:`SuspectInputWarning`).

    Returns
    -------
    list of str
        The problems warned about that make the package's own evaluation
        unsafe (the evaluators then run the replaced library's code).

    Raises
    ------
    ValueError
        A problem, naming it; where pycocotools' ``COCO`` (lvis' ``LVIS``)
        fails on the input too, a subclass of the class it raises
        (``AssertionError``, ``KeyError``, ``TypeError``).  Masks on which
        pycocotools' C code crashes (polygons with NaN, infinite or huge
        coordinates, or on an image with a side of no pixels; RLEs of such a
        size) load as pycocotools loads them, with a warning; a mask
        evaluation refuses them where it makes those masks, also without
        ``strict`` (:mod:`._mask_checks`).
    """
    kind = "LVIS" if lvis else "COCO"
    problems = Problems(strict, "lvis" if lvis else "pycocotools")
    if not isinstance(dataset, dict):
        hint = ""
        if isinstance(dataset, list) and dataset and isinstance(dataset[0], dict) and "score" in dataset[0]:
            hint = ": it looks like a results file (were the ground truth and the results swapped?)"
        problems.fail(AssertionValueError, f"{source}: not a {kind} ground truth (expected a JSON object with "
                                           f"'images', 'annotations' and 'categories', got a "
                                           f"{type(dataset).__name__}){hint}")
    missing = [k for k in ("images", "annotations", "categories") if not isinstance(dataset.get(k), list)]
    lists = {k: dataset[k] if k not in missing else [] for k in ("images", "annotations", "categories")}
    if missing:
        got = ", ".join(f"{m!r} is {_json_type(dataset.get(m))}" for m in missing)
        message = (f"{source}: not a {kind} ground truth (no list of "
                   f"{', '.join(repr(m) for m in missing)}: {got})")
        for m in missing:
            v = dataset.get(m)
            if m not in dataset:
                if lvis:  # lvis indexes all three
                    problems.fail(KeyValueError, message)
            elif not _empty_iterable(v):  # both libraries iterate it and index its items by key
                problems.fail(TypeValueError, message)
        problems.suspect(message)
    images = _check_images(lists["images"], source, lvis, problems)
    _check_categories(lists["categories"], source, lvis, problems)
    # what the evaluators read from every ground truth ('iscrowd': COCO only)
    required = ("id", "image_id", "category_id", "area") + (() if lvis else ("iscrowd",))
    anns = lists["annotations"]
    if problems.found or not _annotations_plainly_valid(anns, images, required):
        # (pycocotools reads 'category_id' only when there are 'categories')
        fatal = ("id", "image_id") + (("category_id",) if lvis or "categories" in dataset else ())
        _check_annotations(anns, images, required, source, problems, fatal)
    found = problems.warn()
    _check_ids_and_categories(anns, lists["categories"], source, strict)
    if warn_empty and not anns:
        log.warning("%s: " + _EMPTY_GROUND_TRUTH + ": there is nothing to detect and every "
                    "AP will be undefined (-1)", source)
    return found


_EMPTY_GROUND_TRUTH = "the ground truth has no annotations"


class _NoEmptyWarning(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return _EMPTY_GROUND_TRUTH not in record.getMessage()


@contextlib.contextmanager
def no_empty_warning():
    """Leave out the "no annotations" warning for datasets this package makes
    itself (a chunk or shard of a ground truth checked whole already, the
    empty results of images without detections)."""
    quiet = _NoEmptyWarning()
    log.addFilter(quiet)
    try:
        yield
    finally:
        log.removeFilter(quiet)


def _empty_iterable(v) -> bool:
    """Iterating ``v`` gives nothing (pycocotools and lvis then index nothing)."""
    return isinstance(v, (dict, str, list, tuple)) and not v


def _check_images(images: list, source: str, lvis: bool, problems: Problems) -> dict:
    """The ``images`` entries: ``{id: image}`` of those with a usable id.
    (An image's size is checked where it is used: pycocotools and lvis read
    it only to rasterise the polygons on the image.)"""
    out = {}
    for i, img in enumerate(images):
        if not isinstance(img, dict):
            problems.fail(TypeValueError, f"{source}: images[{i}] is not an object (got {_json_type(img)} "
                                          f"{img!r:.40})")
        if "id" not in img:
            problems.fail(KeyValueError, f"{source}: images[{i}] has no 'id'")
        if not _is_id(img["id"]):
            message = f"{source}: images[{i}] has an invalid 'id' {img['id']!r} (expected a number or a string)"
            if not hashable(img["id"]):
                problems.fail(TypeValueError, message)
            problems.suspect(message)
        if lvis:
            for key in ("neg_category_ids", "not_exhaustive_category_ids"):
                if not isinstance(img.get(key), list):
                    problems.suspect(f"{source}: image {img['id']!r} has no '{key}' list (not an LVIS "
                                     "ground truth?)")
                    break
        out[img["id"]] = img
    return out


def _check_categories(categories: list, source: str, lvis: bool, problems: Problems) -> None:
    for i, cat in enumerate(categories):
        if not isinstance(cat, dict):
            problems.fail(TypeValueError, f"{source}: categories[{i}] is not an object (got {_json_type(cat)})")
        if "id" not in cat:
            problems.fail(KeyValueError, f"{source}: categories[{i}] has no 'id'")
        if not _is_id(cat["id"]):
            message = (f"{source}: categories[{i}] has an invalid 'id' {cat['id']!r} "
                       "(expected a number or a string)")
            if not hashable(cat["id"]):
                problems.fail(TypeValueError, message)
            problems.suspect(message)
        if lvis and cat.get("frequency") not in ("r", "c", "f"):
            problems.suspect(f"{source}: category {cat['id']!r} has no 'frequency' of 'r', 'c' or 'f'")


def _check_ids_and_categories(anns: list, categories: list, source: str, strict: bool) -> None:
    """Repeated annotation ids (an index by id keeps the last) and
    annotations of categories not in ``categories`` (never evaluated):
    refused with ``strict``, else warned about."""
    ids = [a["id"] for a in anns if type(a) is dict and hashable(a.get("id"))]
    if len(set(ids)) != len(ids):
        seen, repeated = set(), set()
        for i in ids:
            (repeated if i in seen else seen).add(i)
        count = len(ids) - len(seen)
        shown = sorted(repeated, key=repr)
        _refuse_or_warn(strict, f"{source}: {count} annotation(s) repeat the id of another annotation "
                                f"({_list_ids(shown)}); an index by id keeps only the last of them")
    if not categories:
        return
    known = {c["id"] for c in categories if type(c) is dict and hashable(c.get("id"))}
    cat_ids = [a.get("category_id") for a in anns if type(a) is dict]
    if all(type(c) is int for c in cat_ids) and all(type(k) is int for k in known):
        bad_counts = np.unique(np.array(cat_ids, np.int64), return_counts=True) if cat_ids else ((), ())
        bad = [(c, n) for c, n in zip(*(v.tolist() for v in bad_counts)) if c not in known] if cat_ids else []
    else:
        counts: Dict[Any, int] = {}
        for c in cat_ids:
            if hashable(c) and c not in known:
                counts[c] = counts.get(c, 0) + 1
        bad = list(counts.items())
    if bad:
        ids = sorted((c for c, _ in bad), key=repr)
        _refuse_or_warn(strict, f"{source}: {sum(n for _, n in bad)} annotation(s) have category ids not in "
                                f"'categories' ({describe_unknown_ids(ids, known)}); they are never evaluated")


def _list_ids(ids: List) -> str:
    return ", ".join(repr(b) for b in ids[:10]) + (f" (and {len(ids) - 10} more)" if len(ids) > 10 else "")


def _refuse_or_warn(strict: bool, message: str) -> None:
    if strict:
        raise ValueError(message)
    warn_suspect(message)


_PLAIN_NUMBERS = frozenset((int, float))
_ID_TYPES = frozenset((int, str))
_MISSING = object()


def _annotations_plainly_valid(anns: list, images: dict, required: tuple) -> bool:
    """Whether every annotation passes :func:`_check_annotations`, found by
    whole-column tests; False only means "look closer" (the per-annotation
    check then finds and words the first problem)."""
    if not anns:
        return True
    if set(map(type, anns)) != {dict}:
        return False
    try:
        column = {key: list(map(operator.itemgetter(key), anns)) for key in required}
    except KeyError:
        return False
    for key in ("id", "image_id", "category_id"):
        if not set(map(type, column[key])) <= _ID_TYPES:
            return False
    image_ids = column["image_id"]
    if not set(image_ids) <= images.keys():
        return False
    if not all(_sized(images[k]) for k in set(image_ids)):
        return False
    areas = column["area"]
    if not set(map(type, areas)) <= _PLAIN_NUMBERS or not _finite_values(areas):
        return False
    boxes = list(map(dict.get, anns, itertools.repeat("bbox")))
    if boxes.count(None):
        boxes = [b for b in boxes if b is not None]
    if boxes:
        if set(map(type, boxes)) != {list} or set(map(len, boxes)) != {4}:
            return False
        flat = list(itertools.chain.from_iterable(boxes))
        if not set(map(type, flat)) <= _PLAIN_NUMBERS or not _finite_values(flat):
            return False
    segs = list(map(dict.get, anns, itertools.repeat("segmentation")))
    kinds = set(map(type, segs))
    if not kinds <= {list, dict, type(None)}:
        return False
    if dict in kinds:
        if not all("counts" in s and "size" in s for s in segs if type(s) is dict):
            return False
        for j, s in enumerate(segs):
            if type(s) is dict:
                img, size = images[image_ids[j]], s["size"]
                if type(size) is not list or len(size) != 2 or size[0] != img["height"] or size[1] != img["width"]:
                    return False
                counts = s["counts"]
                if type(counts) is not str:  # uncompressed: what check_rle_dict accepts
                    if type(counts) is not list or not set(map(type, counts)) <= {int} \
                            or (counts and min(counts) < 0) or sum(counts) != size[0] * size[1]:
                        return False
    if list in kinds:
        sel = [j for j, s in enumerate(segs) if type(s) is list]
        h = np.array([images[image_ids[j]]["height"] for j in sel], np.int64)
        w = np.array([images[image_ids[j]]["width"] for j in sel], np.int64)
        flat = flatten_polygons([segs[j] for j in sel])
        if flat is None or not polygons_valid(*flat, h, w).all():
            return False
    return True


def _finite_values(values: list) -> bool:
    try:
        return bool(np.isfinite(np.array(values, np.float64)).all())
    except (OverflowError, ValueError, TypeError):
        return False


def _check_annotations(anns: list, images: dict, required: tuple, source: str,
                       problems: Optional[Problems] = None, fatal: tuple = ("id", "image_id")) -> None:
    """The per-annotation checks of :func:`check_instances_dataset`
    (``problems`` None: strict; ``fatal``: the keys without which the
    replaced library fails to index an annotation)."""
    if problems is None:
        problems = Problems(True)
    for i, ann in enumerate(anns):
        if type(ann) is not dict:
            problems.fail(TypeValueError, f"{source}: annotations[{i}] is not an object")
        what = f"annotation id {ann['id']!r}" if "id" in ann else f"annotations[{i}]"
        for key in fatal:
            if key not in ann:
                problems.fail(KeyValueError, f"{source}: {what} has no '{key}'")
        for key in ("id", "image_id", "category_id"):
            if key in ann and not hashable(ann[key]):
                problems.fail(TypeValueError, f"{source}: annotations[{i}] has an invalid '{key}' {ann[key]!r} "
                                              "(expected a number or a string)")
        try:
            _check_annotation(ann, i, images, required, source)
        except (UnsafePolygonError, UnsafeRLEError) as exc:
            # (loaded as the library loads it: refused where its mask is made)
            problems.suspect(f"{exc}; refused where a mask evaluation makes its mask")
        except Unusable as exc:
            problems.unusable(str(exc))
        except ValueError as exc:
            problems.suspect(str(exc))


def _check_annotation(ann: dict, i: int, images: dict, required: tuple, source: str) -> None:
    """One annotation (a dict): ValueError naming its first problem
    (:class:`Unusable` for a field the evaluations read and fail without)."""
    for key in required:
        if key not in ann:
            what = f"annotation id {ann['id']!r}" if "id" in ann else f"annotations[{i}]"
            raise Unusable(f"{source}: {what} has no '{key}'")
    for key in ("id", "image_id", "category_id"):
        if not _is_id(ann[key]):
            raise ValueError(f"{source}: annotations[{i}] has an invalid '{key}' {ann[key]!r} "
                             "(expected a number or a string)")
    box = ann.get("bbox")
    if type(box) is np.ndarray and box.shape == (4,) and box.dtype.kind in "iuf":
        box = box.tolist()  # (as pycocotools' loadRes leaves boxes made from RLEs)
    if box is not None and not (type(box) is list and len(box) == 4 and finite_numbers(box)):
        raise ValueError(f"{source}: annotation id {ann['id']!r} has an invalid 'bbox' {box!r:.60} "
                         "(expected [x, y, width, height])")
    if ann["image_id"] not in images:
        raise ValueError(f"{source}: annotation id {ann['id']!r} refers to image "
                         f"{ann['image_id']!r}, which is not in 'images'")
    img = images[ann["image_id"]]
    if not finite_number(ann["area"]):
        raise ValueError(f"{source}: annotation id {ann['id']!r} has an invalid area {_short(ann['area'])}")
    seg = ann.get("segmentation")
    if seg is None:
        return
    where = f"{source}: annotation id {ann['id']!r} (image {ann['image_id']!r})"
    h, w = img.get("height"), img.get("width")
    if type(seg) is list:
        if _sized(img):
            check_polygons(seg, h, w, where)
        else:
            check_polygons(seg, None, None, where)  # (unsafe coordinates first)
            check_polygon_image_size(h, w, where)
        return
    if not (type(seg) is dict and "counts" in seg and "size" in seg):
        raise ValueError(f"{source}: annotation id {ann['id']!r} has a 'segmentation' that is neither "
                         f"a list of polygons nor an RLE {{'size', 'counts'}} (got {_json_type(seg)})")
    # (compressed RLE strings are decoded and checked where masks are used:
    # box evaluations do not need them; an RLE carries its own size, so an
    # image without one is no problem here)
    if _sized(img):
        check_rle_dict(seg, h, w, where)
    else:
        check_rle_dict(seg, None, None, where)


class Unusable(ValueError):
    """A field that pycocotools' / lvis' evaluation reads and fails without
    (a missing score, area or iscrowd): the input loads without a warning,
    and that evaluation's own error, when it comes, names the problem in a
    note (``strict=True`` refuses it at once)."""


class NotEvaluatedHere(ValueError):
    """A mask this package's kernels do not evaluate and which is no
    problem of the input (a missing segmentation, on which the replaced
    library's evaluation fails; an RLE on an image without a size, which
    carries its own): the library's own code runs, without a warning."""


def _sized(img) -> bool:
    """Whether an image record has a usable size (positive integers)."""
    return type(img) is dict and _valid_size(img.get("height"), img.get("width"))


def _is_id(v) -> bool:
    """An id pycocotools/lvis can index by: a string or a finite number (not a bool)."""
    return type(v) is int or isinstance(v, str) or finite_number(v)


@named_as("AssertionError")
class NotAListError(TypeValueError, AssertionError):
    """Results that are not a list (pycocotools and lvis assert that they are)."""


def check_results(anns: Any, images: Dict[Any, dict], categories: Iterable, source: str,
                  strict: bool = True, original: str = "pycocotools") -> List[str]:
    """Check detection results before any library touches them.

    ``images`` maps image id to the image record.  Nothing is modified.

    Problems pycocotools' ``loadRes`` (``original='lvis'``: lvis'
    ``LVISResults``) fails on too are raised as a subclass of ``ValueError``
    and of the class it raises: not a list (``AssertionError``, also a
    ``TypeError``), empty (``IndexError``), an entry that is not an object
    (``TypeError``), a missing ``image_id`` or ``category_id``
    (``KeyError``), unknown image ids (``AssertionError``), a missing or
    malformed box or segmentation (``KeyError``/``IndexError``/
    ``TypeError``).  Problems it accepts (a missing or non-finite score or
    box value, an RLE whose size is not its image's or whose string does
    not decode to it, invalid polygons, category ids not in the ground
    truth) raise ``ValueError`` with ``strict``, else are warned about
    (:class:`SuspectInputWarning`, one line).

    Returns
    -------
    list of str
        The problems warned about that make the package's own evaluation
        unsafe (unknown categories are not among them).

    Notes
    -----
    The RLE strings themselves are decoded and checked here only for
    segmentation results (see :func:`rle_strings_checked`).  Box results
    (the first result has a ``bbox``) may carry masks too: box AP never
    reads them, so their strings are checked by the annotation cache when a
    mask evaluation first uses them, with the same message.
    """
    problems = Problems(strict, original)
    lvis = original == "lvis"
    if not isinstance(anns, list):
        hint = ""
        if isinstance(anns, dict) and any(k in anns for k in ("images", "annotations", "categories")):
            hint = ": it looks like a ground truth file (were the ground truth and the results swapped?)"
        got = "null" if anns is None else f"a {type(anns).__name__}"
        problems.fail(NotAListError, f"{source}: results must be a list of objects, got {got}{hint}")
    if not anns:
        problems.fail(IndexValueError, f"{source}: results are empty: there is nothing to evaluate")
    for i, a in enumerate(anns):
        if type(a) is not dict:
            problems.fail(TypeValueError, f"{source}: result #{i} is not an object")
        if "image_id" not in a:
            problems.fail(KeyValueError, f"{source}: result #{i} has no 'image_id'")
    unknown = [a["image_id"] for a in anns if not (hashable(a["image_id"]) and a["image_id"] in images)]
    if unknown:
        if not all(map(hashable, unknown)):
            bad = next(v for v in unknown if not hashable(v))
            problems.fail(TypeValueError, f"{source}: results have an invalid 'image_id' {bad!r:.40}")
        shown = sorted({repr(v) for v in unknown})
        more = f" (and {len(shown) - 5} more)" if len(shown) > 5 else ""
        problems.fail(AssertionValueError, f"{source}: results refer to image ids not in the ground truth: "
                                           f"{', '.join(shown[:5])}{more}"
                                           f"{_type_hint(unknown_ids(anns, images, 'image_id'), images)}")
    first = anns[0]
    if "caption" in first:
        return []
    kind = ("bbox" if "bbox" in first and first["bbox"] != [] else
            "segmentation" if "segmentation" in first else
            "keypoints" if "keypoints" in first else None)
    if kind is None:
        message = f"{source}: result #0 has neither 'segmentation', 'bbox' nor 'keypoints'"
        if "id" not in first:  # the index of the results reads the id the library did not give
            problems.fail(KeyValueError, message)
        problems.suspect(message)

    def name(i):
        return f"{source}: result #{i} (image {anns[i]['image_id']!r})"

    known = set(categories)
    unknown_cats = 0
    rle_items, heights, widths = [], [], []
    plain_id = _ID_TYPES.__contains__
    for i, a in enumerate(anns):
        cat = a.get("category_id", _MISSING)
        if not plain_id(type(cat)):
            if cat is _MISSING:
                problems.fail(KeyValueError, f"{name(i)} has no 'category_id'")
            if not hashable(cat):
                problems.fail(TypeValueError, f"{name(i)} has an invalid 'category_id' {cat!r}")
        if cat not in known:
            unknown_cats += 1
        if kind == "bbox":
            b = a.get("bbox", _MISSING)
            if type(b) is list and len(b) == 4 and finite_numbers(b) and "segmentation" not in a \
                    and finite_number(a.get("score")):
                continue  # (the common case, checked whole)
            if b is _MISSING:
                problems.fail(KeyValueError, f"{name(i)} has no 'bbox' (result #0 has one)")
            _check_result_box(b, name(i), lvis, problems)
        elif kind is not None and kind not in a:
            problems.fail(KeyValueError, f"{name(i)} has no '{kind}' (result #0 has one)")
        if kind == "segmentation":
            seg = a["segmentation"]
            if type(seg) is dict and type(seg.get("counts")) is str and type(seg.get("size")) is list \
                    and finite_number(a.get("score")):
                img = images[a["image_id"]]
                h, w = img.get("height"), img.get("width")
                if type(h) is int and type(w) is int and h >= 1 and w >= 1 and seg["size"] == [h, w]:
                    rle_items.append(i)  # (the common case, checked whole; the strings below)
                    heights.append(h)
                    widths.append(w)
                    continue
            if seg is None:
                problems.fail(TypeValueError, f"{name(i)} has 'segmentation': null")
            if type(seg) is not dict or "size" not in seg or "counts" not in seg \
                    or type(seg["counts"]) not in (str, bytes):
                cls = KeyValueError if type(seg) is dict else TypeValueError
                if type(seg) is dict and "size" in seg and "counts" in seg:
                    cls = TypeValueError
                problems.fail(cls, f"{name(i)}: 'segmentation' must be a compressed RLE "
                                   f"{{'size': [h, w], 'counts': str}} as in the COCO results format")
        try:
            _check_result(a, i, kind, images[a["image_id"]], name)
        except (UnsafePolygonError, UnsafeRLEError) as exc:
            problems.suspect(f"{exc}; refused where a mask evaluation makes its mask")
            continue
        except Unusable as exc:
            problems.unusable(str(exc))
            continue
        except ValueError as exc:
            problems.suspect(str(exc))
            continue
        img = images[a["image_id"]]
        if kind == "segmentation" and _valid_size(img.get("height"), img.get("width")):
            rle_items.append(i)
            heights.append(img["height"])
            widths.append(img["width"])
    if rle_items:
        try:
            check_rle_strings([anns[i]["segmentation"]["counts"] for i in rle_items],
                              np.array(heights, np.int64), np.array(widths, np.int64),
                              lambda j: name(rle_items[j]))
        except ValueError as exc:
            problems.suspect(str(exc))
    found = problems.warn()
    if unknown_cats:
        bad = unknown_categories(anns, known)
        message = (f"{source}: {unknown_cats} result(s) have category ids not in the ground truth "
                   f"({describe_unknown_ids(bad, known)}); they are never matched")
        _refuse_or_warn(strict, message)
    return found


def _check_result_box(b, what: str, lvis: bool, problems: Problems) -> None:
    """A result's ``bbox`` as the library reads it: four numbers."""
    message = f"{what} has no valid 'bbox' [x, y, w, h]"
    if not isinstance(b, (list, tuple)):
        problems.fail(TypeValueError, message)
    if len(b) != 4:
        if lvis:  # x, y, w, h = bbox
            problems.fail(ValueError, message)
        if len(b) < 4:
            problems.fail(IndexValueError, message)
    if not all(isinstance(v, numbers.Real) for v in b[:4]):
        problems.fail(TypeValueError, message)


def _check_result(a: dict, i: int, kind: Optional[str], img: dict, name) -> None:
    """What the library accepts in one result but the evaluation should not
    see: ValueError naming the problem (:class:`Unusable` for a score the
    library's evaluation fails on; :class:`UnsafePolygonError` and
    :class:`UnsafeRLEError` for masks its C code crashes on)."""
    score = a.get("score")
    if not finite_number(score):
        if score is None:
            raise Unusable(f"{name(i)} has 'score': null" if "score" in a else f"{name(i)} has no 'score'")
        if not isinstance(score, numbers.Real):  # (the evaluation negates it to sort)
            raise Unusable(f"{name(i)} has a score that is not a number: {_short(score)}")
        raise ValueError(f"{name(i)} has an invalid score {_short(score)}")
    if kind == "bbox":
        b = a["bbox"]
        if len(b) != 4 or not finite_numbers(b):
            raise ValueError(f"{name(i)} has no valid 'bbox' [x, y, w, h]")
    seg = a.get("segmentation")
    if seg is None:
        return
    h, w = img.get("height"), img.get("width")
    sized = _valid_size(h, w)
    if type(seg) is list and kind == "bbox":
        # polygons next to boxes: pycocotools rasterizes them, at the image's size
        if sized:
            check_polygons(seg, h, w, name(i))
        else:
            check_polygons(seg, None, None, name(i))
            check_polygon_image_size(h, w, name(i))
        return
    if type(seg) is not dict or type(seg.get("counts")) not in (str, bytes) or "size" not in seg:
        raise ValueError(f"{name(i)}: 'segmentation' must be a compressed RLE "
                         f"{{'size': [h, w], 'counts': str}} as in the COCO results format")
    size = seg["size"]
    check_rle_size(size, name(i))
    if not sized:  # (an RLE carries its own size)
        if not (type(size) in (list, tuple) and len(size) == 2 and _valid_size(*size)):
            raise ValueError(f"{name(i)}: RLE size {_short(size)} is not [height, width] in pixels "
                             "(and its image has no size either)")
    elif not isinstance(size, (list, tuple)) or len(size) != 2 or size[0] != h or size[1] != w:
        raise ValueError(f"{name(i)}: RLE size {_short(size)} is not the image's [{h}, {w}]")


def rle_strings_checked(anns: List[dict], images: Dict[Any, dict]) -> bool:
    """Whether :func:`check_results` decoded and checked every RLE string of
    ``anns`` (segmentation results, the first without a ``bbox``, each on an
    image with a size), so that the annotation cache need not check them
    again."""
    first = anns[0]
    return ("caption" not in first and not ("bbox" in first and first["bbox"] != []) and "segmentation" in first
            and results_images_sized(anns, images))


def results_images_sized(anns: List[dict], images: Dict[Any, dict]) -> bool:
    """Whether every result's image has a size (positive integers)."""
    return all(_sized(images.get(k)) for k in {a["image_id"] for a in anns})


def unknown_ids(anns: List[dict], known, key: str) -> List:
    """Values of ``key`` used by results but absent from ``known``, sorted by repr."""
    known = known if isinstance(known, (set, dict)) else set(known)
    return sorted({a.get(key) for a in anns if isinstance(a, dict) and hashable(a.get(key))
                   and a.get(key) not in known}, key=repr)


def unknown_categories(anns: List[dict], categories: Iterable) -> List:
    """Category ids used by results but absent from the ground truth."""
    return unknown_ids(anns, set(categories), "category_id")


def _type_hint(bad: List, known: Iterable) -> str:
    """Why ids may be unknown: strings against integers or the reverse."""
    known = list(known)
    known_int = bool(known) and all(isinstance(k, numbers.Integral) and not isinstance(k, bool) for k in known)
    known_str = bool(known) and all(isinstance(k, str) for k in known)
    if known_int and any(isinstance(b, str) for b in bad):
        return " (the results' ids are strings, the ground truth's are integers)"
    if known_str and any(isinstance(b, numbers.Integral) for b in bad):
        return " (the results' ids are integers, the ground truth's are strings)"
    return ""


def describe_unknown_ids(bad: List, known: Iterable) -> str:
    """The unknown category ids, quoted with repr (a string "1000" never reads
    as the integer 1000), and what probably went wrong: ids of another type,
    or categories renumbered to 0..K-1 / 1..K."""
    known = list(known)
    shown = ", ".join(repr(b) for b in bad[:10]) + (f" (and {len(bad) - 10} more)" if len(bad) > 10 else "")
    hint = _type_hint(bad, known)
    if not hint and bad and all(type(b) is int for b in bad) and all(type(k) is int for k in known) \
            and all(0 <= b <= len(known) for b in bad):
        hint = " (were categories mapped to contiguous ids?)"
    return shown + hint
