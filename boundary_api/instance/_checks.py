"""Checks of COCO/LVIS instance files: one clear error per problem, nothing modified."""
from __future__ import annotations

import itertools
import logging
import math
import numbers
import operator
from typing import Any, Dict, Iterable, List

import numpy as np

from .._io import finite_number, finite_numbers
from ..masks import _mask
from ..masks.boundary import check_rle_strings

log = logging.getLogger(__name__)


def check_instances_dataset(dataset: Any, source: str, lvis: bool = False, warn_empty: bool = True) -> None:
    """Check that a ground truth is a COCO (or LVIS) instances dataset.

    Polygons are checked with :func:`check_polygons`.  A dataset without
    annotations is valid but logs a warning (unless ``warn_empty`` is False).
    """
    kind = "LVIS" if lvis else "COCO"
    if not isinstance(dataset, dict):
        hint = ""
        if isinstance(dataset, list) and dataset and isinstance(dataset[0], dict) and "score" in dataset[0]:
            hint = ": it looks like a results file (were the ground truth and the results swapped?)"
        raise ValueError(f"{source}: not a {kind} ground truth (expected a JSON object with "
                         f"'images', 'annotations' and 'categories', got a {type(dataset).__name__}){hint}")
    missing = [k for k in ("images", "annotations", "categories") if not isinstance(dataset.get(k), list)]
    if missing:
        got = ", ".join(f"{m!r} is {_json_type(dataset.get(m))}" for m in missing)
        raise ValueError(f"{source}: not a {kind} ground truth (no list of "
                         f"{', '.join(repr(m) for m in missing)}: {got})")
    for i, img in enumerate(dataset["images"]):
        if not isinstance(img, dict):
            raise ValueError(f"{source}: images[{i}] is not an object (got {_json_type(img)} {img!r:.40})")
        if "id" not in img:
            raise ValueError(f"{source}: images[{i}] has no 'id'")
        if not _is_id(img["id"]):
            raise ValueError(f"{source}: images[{i}] has an invalid 'id' {img['id']!r} (expected a number or a string)")
        for key in ("height", "width"):
            v = img.get(key)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{source}: image {img['id']!r} has no valid '{key}' (got {v!r})")
        if lvis:
            for key in ("neg_category_ids", "not_exhaustive_category_ids"):
                if not isinstance(img.get(key), list):
                    raise ValueError(f"{source}: image {img['id']!r} has no '{key}' list (not an LVIS ground truth?)")
    images = {img["id"]: img for img in dataset["images"]}
    for i, cat in enumerate(dataset["categories"]):
        if not isinstance(cat, dict) or "id" not in cat:
            raise ValueError(f"{source}: categories[{i}] has no 'id'")
        if not _is_id(cat["id"]):
            raise ValueError(f"{source}: categories[{i}] has an invalid 'id' {cat['id']!r} "
                             "(expected a number or a string)")
        if lvis and cat.get("frequency") not in ("r", "c", "f"):
            raise ValueError(f"{source}: category {cat['id']!r} has no 'frequency' of 'r', 'c' or 'f'")
    # what the evaluators read from every ground truth ('iscrowd': COCO only)
    required = ("id", "image_id", "category_id", "area") + (() if lvis else ("iscrowd",))
    if not _annotations_plainly_valid(dataset["annotations"], images, required):
        _check_annotations(dataset["annotations"], images, required, source)
    if warn_empty and not dataset["annotations"]:
        log.warning("%s: the ground truth has no annotations: there is nothing to detect and every "
                    "AP will be undefined (-1)", source)


_PLAIN_NUMBERS = frozenset((int, float))
_ID_TYPES = frozenset((int, str))


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
    if dict in kinds and not all("counts" in s and "size" in s for s in segs if type(s) is dict):
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


def flatten_polygons(segs: List[list]):
    """COCO polygon lists flattened for the kernels.

    Returns ``(coords, poly_off, ann_off)`` as
    :func:`boundary_api.masks._mask.flatten_polygons` gives them, or None
    when an item is not a list of lists of numbers.
    """
    polys = list(itertools.chain.from_iterable(segs))
    if polys and set(map(type, polys)) != {list}:
        return None
    try:
        return _mask.flatten_polygons(segs)
    except (TypeError, ValueError, OverflowError):
        return None


def polygons_valid(coords: np.ndarray, poly_off: np.ndarray, ann_off: np.ndarray,
                   height: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Per annotation, whether :func:`check_polygons` accepts its polygons
    (flattened by :func:`flatten_polygons`; image sizes per annotation)."""
    return _mask.polygons_acceptable(coords, poly_off, ann_off, np.asarray(height, np.int64),
                                     np.asarray(width, np.int64), _MAX_COORD).astype(bool)


def _check_annotations(anns: list, images: dict, required: tuple, source: str) -> None:
    """The per-annotation checks of :func:`check_instances_dataset`."""
    for i, ann in enumerate(anns):
        if type(ann) is not dict:
            raise ValueError(f"{source}: annotations[{i}] is not an object")
        for key in required:
            if key not in ann:
                what = f"annotation id {ann['id']!r}" if "id" in ann else f"annotations[{i}]"
                raise ValueError(f"{source}: {what} has no '{key}'")
        for key in ("id", "image_id", "category_id"):
            if not _is_id(ann[key]):
                raise ValueError(f"{source}: annotations[{i}] has an invalid '{key}' {ann[key]!r} "
                                 "(expected a number or a string)")
        box = ann.get("bbox")
        if box is not None and not (type(box) is list and len(box) == 4 and finite_numbers(box)):
            raise ValueError(f"{source}: annotation id {ann['id']!r} has an invalid 'bbox' {box!r:.60} "
                             "(expected [x, y, width, height])")
        img = images.get(ann["image_id"])
        if img is None:
            raise ValueError(f"{source}: annotation id {ann['id']!r} refers to image "
                             f"{ann['image_id']!r}, which is not in 'images'")
        if not finite_number(ann["area"]):
            raise ValueError(f"{source}: annotation id {ann['id']!r} has an invalid area {ann['area']!r}")
        seg = ann.get("segmentation")
        if type(seg) is list:
            check_polygons(seg, img["height"], img["width"],
                           f"{source}: annotation id {ann['id']!r} (image {ann['image_id']!r})")
        elif seg is not None:
            if not (type(seg) is dict and "counts" in seg and "size" in seg):
                raise ValueError(f"{source}: annotation id {ann['id']!r} has a 'segmentation' that is neither "
                                 f"a list of polygons nor an RLE {{'size', 'counts'}} (got {_json_type(seg)})")
            # (RLE sizes and counts are checked where masks are used: box evaluations do not need them)


def check_rle_dict(seg: dict, height: int, width: int, what: str) -> None:
    """An RLE segmentation: its size is the image's; uncompressed counts (a list)
    are non-negative integers covering the image exactly.  (Compressed counts are
    decoded and checked where they are used.)"""
    size = seg["size"]
    if not isinstance(size, (list, tuple)) or len(size) != 2 or size[0] != height or size[1] != width:
        raise ValueError(f"{what}: RLE size {size!r} is not the image's [{height}, {width}]")
    counts = seg["counts"]
    if type(counts) is list:
        if not all(type(c) is int and c >= 0 for c in counts):
            bad = next(c for c in counts if not (type(c) is int and c >= 0))
            raise ValueError(f"{what}: RLE counts must be non-negative integers, got {bad!r}")
        if sum(counts) != height * width:
            raise ValueError(f"{what}: RLE counts cover {sum(counts)} pixels, not the image's "
                             f"{height}x{width} = {height * width}")
    elif type(counts) not in (str, bytes):
        raise ValueError(f"{what}: RLE counts must be a list of integers or a compressed string, "
                         f"got {_json_type(counts)}")


def _is_id(v) -> bool:
    """An id pycocotools/lvis can index by: a string or a finite number (not a bool)."""
    return type(v) is int or isinstance(v, str) or finite_number(v)


def _json_type(v) -> str:
    """How a JSON value reads in a message: 'an object', 'a list', 'an integer', ..."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "a boolean"
    if isinstance(v, dict):
        return "an object"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, numbers.Integral):
        return "an integer"
    if isinstance(v, numbers.Real):
        return "a number"
    return f"a {type(v).__name__}"


#: polygon coordinates kept below this magnitude: pycocotools rasterises at
#: 5x scale in C ints, and allocates in proportion to the polygon's length
_MAX_COORD = 4e8


def check_polygons(seg: list, height: int, width: int, what: str) -> None:
    """Check COCO polygons before pycocotools rasterises them.

    pycocotools' C code crashes or exhausts memory on polygons with NaN,
    infinite or huge coordinates, and rejects degenerate ones with unrelated
    messages.  Each polygon must be a list of an even number (at least 6) of
    finite numbers lying within one image size of the ``width x height``
    image (``-width <= x <= 2 * width``, likewise for y).

    Raises
    ------
    ValueError
        Naming ``what`` and the polygon.
    """
    if not seg:
        raise ValueError(f"{what}: 'segmentation' is an empty list of polygons")
    x_lo, x_hi = -min(width, _MAX_COORD), min(2 * width, _MAX_COORD)
    y_lo, y_hi = -min(height, _MAX_COORD), min(2 * height, _MAX_COORD)
    for j, poly in enumerate(seg):
        if type(poly) is not list:
            raise ValueError(f"{what}: polygon {j} is not a list of coordinates (got {_json_type(poly)})")
        n = len(poly)
        if n < 6 or n % 2:
            raise ValueError(f"{what}: polygon {j} has {n} coordinates; a polygon needs an even number "
                             "of them, at least 6 (3 points)")
        try:
            total = sum(poly)
        except TypeError:
            bad = next(v for v in poly if not isinstance(v, numbers.Real))
            raise ValueError(f"{what}: polygon {j} has a coordinate that is not a number: {bad!r}") from None
        if not math.isfinite(total):
            bad = next((v for v in poly if not finite_number(v)), None)
            if bad is not None:
                raise ValueError(f"{what}: polygon {j} has a non-finite coordinate {bad!r}")
        xs, ys = poly[0::2], poly[1::2]
        if min(xs) < x_lo or max(xs) > x_hi or min(ys) < y_lo or max(ys) > y_hi:
            far = next(v for k, v in enumerate(poly)
                       if not ((x_lo <= v <= x_hi) if k % 2 == 0 else (y_lo <= v <= y_hi)))
            raise ValueError(f"{what}: polygon {j} has a coordinate far outside the {width}x{height} "
                             f"image: {far!r}")


def check_results(anns: Any, images: Dict[Any, dict], categories: Iterable, source: str) -> List[dict]:
    """Check detection results before any library touches them.

    ``images`` maps image id to the image record.  Returns the list.  Raises
    ValueError/TypeError naming the first problem: not a list, an entry that
    is not an object, an unknown image id, a missing or non-finite score, a
    missing category, an invalid box, a segmentation that is not a compressed
    RLE of its image's size.  Unknown category ids are only logged
    (pycocotools accepts them).

    The RLE strings themselves are decoded and checked here only for
    segmentation results (see :func:`rle_strings_checked`).  Box results
    (the first result has a ``bbox``) may carry masks too: box AP never
    reads them, so their strings are checked by the annotation cache when a
    mask evaluation first uses them, with the same message.
    """
    if not isinstance(anns, list):
        hint = ""
        if isinstance(anns, dict) and any(k in anns for k in ("images", "annotations", "categories")):
            hint = ": it looks like a ground truth file (were the ground truth and the results swapped?)"
        got = "null" if anns is None else f"a {type(anns).__name__}"
        raise TypeError(f"{source}: results must be a list of objects, got {got}{hint}")
    if not anns:
        raise ValueError(f"{source}: results are empty: there is nothing to evaluate")
    first = anns[0]
    if not isinstance(first, dict):
        raise ValueError(f"{source}: result #0 is not an object")
    if "caption" in first:
        for i, a in enumerate(anns):
            if not isinstance(a, dict):
                raise ValueError(f"{source}: result #{i} is not an object")
        return anns
    kind = ("bbox" if "bbox" in first and first["bbox"] != [] else
            "segmentation" if "segmentation" in first else
            "keypoints" if "keypoints" in first else None)
    if kind is None:
        raise ValueError(f"{source}: result #0 has neither 'segmentation', 'bbox' nor 'keypoints'")

    def name(i):
        return f"{source}: result #{i} (image {anns[i]['image_id']!r})"

    known = set(categories)
    unknown_cats = 0
    rle_items, heights, widths = [], [], []
    for i, a in enumerate(anns):
        if type(a) is not dict:
            raise ValueError(f"{source}: result #{i} is not an object")
        image_id = a.get("image_id")
        img = images.get(image_id) if _hashable(image_id) else None
        if img is None:
            unknown = sorted({repr(r.get("image_id")) for r in anns if isinstance(r, dict)
                              and not (_hashable(r.get("image_id")) and r.get("image_id") in images)})
            more = f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else ""
            raise ValueError(f"{source}: results refer to image ids not in the ground truth: "
                             f"{', '.join(unknown[:5])}{more}{_type_hint(unknown_ids(anns, images, 'image_id'), images)}")
        score = a.get("score")
        if not finite_number(score):
            if score is None:
                raise ValueError(f"{name(i)} has no 'score'")
            raise ValueError(f"{name(i)} has an invalid score {score!r}")
        if "category_id" not in a:
            raise ValueError(f"{name(i)} has no 'category_id'")
        if not _hashable(a["category_id"]):
            raise ValueError(f"{name(i)} has an invalid 'category_id' {a['category_id']!r}")
        if a["category_id"] not in known:
            unknown_cats += 1
        if kind == "bbox":
            b = a.get("bbox")
            if not isinstance(b, (list, tuple)) or len(b) != 4 or not finite_numbers(b):
                raise ValueError(f"{name(i)} has no valid 'bbox' [x, y, w, h]")
        elif kind not in a:
            raise ValueError(f"{name(i)} has no '{kind}' (result #0 has one)")
        seg = a.get("segmentation")
        if seg is None:
            if kind == "segmentation":
                raise ValueError(f"{name(i)} has 'segmentation': null")
            continue
        if type(seg) is list and kind == "bbox":
            # polygons next to boxes: pycocotools rasterizes them
            check_polygons(seg, img["height"], img["width"], name(i))
            continue
        if type(seg) is not dict or type(seg.get("counts")) not in (str, bytes) or "size" not in seg:
            raise ValueError(f"{name(i)}: 'segmentation' must be a compressed RLE "
                             f"{{'size': [h, w], 'counts': str}} as in the COCO results format")
        size = seg["size"]
        h, w = img["height"], img["width"]
        if not isinstance(size, (list, tuple)) or len(size) != 2 or size[0] != h or size[1] != w:
            raise ValueError(f"{name(i)}: RLE size {size!r} is not the image's [{h}, {w}]")
        if kind == "segmentation":
            rle_items.append(i)
            heights.append(h)
            widths.append(w)
    if rle_items:
        check_rle_strings([anns[i]["segmentation"]["counts"] for i in rle_items],
                          np.array(heights, np.int64), np.array(widths, np.int64),
                          lambda j: name(rle_items[j]))
    if unknown_cats:
        bad = unknown_categories(anns, known)
        log.warning("%s: %d result(s) have category ids not in the ground truth (%s); "
                    "they are never matched", source, unknown_cats, describe_unknown_ids(bad, known))
    return anns


def rle_strings_checked(anns: List[dict]) -> bool:
    """Whether :func:`check_results` decoded and checked every RLE string of
    ``anns`` (segmentation results: the first has no ``bbox``), so that the
    annotation cache need not check them again."""
    first = anns[0]
    return "caption" not in first and not ("bbox" in first and first["bbox"] != []) and "segmentation" in first


def _hashable(v) -> bool:
    if type(v) is int or type(v) is str:
        return True
    try:
        hash(v)
    except TypeError:
        return False
    return True


def unknown_ids(anns: List[dict], known, key: str) -> List:
    """Values of ``key`` used by results but absent from ``known``, sorted by repr."""
    known = known if isinstance(known, (set, dict)) else set(known)
    return sorted({a.get(key) for a in anns if isinstance(a, dict) and _hashable(a.get(key))
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
