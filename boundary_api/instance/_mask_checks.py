"""Checks of single masks of COCO/LVIS annotations (polygons, RLEs), and of
the masks on which pycocotools' C code (and so lvis') crashes or never ends.

Such masks are refused even where suspect input is otherwise handed to the
replaced library (``strict=False``), since a crash is no evaluation.  Found
by differential fuzzing against pycocotools: polygons with non-finite or
huge coordinates, or on an image with a side of less than one pixel; RLEs
with such a side (their bounding box divides by the height), or whose counts
do not cover their size (the mask IoU of two such RLEs never ends)."""
from __future__ import annotations

import itertools
import math
import numbers
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np
import pycocotools.mask as mask_utils

from .._io import _FLOAT_SAFE_INT, finite_number, finite_numbers
from ..masks import _polygon, _rle


class UnsafePolygonError(ValueError):
    """A polygon pycocotools' C code would crash on or exhaust memory with
    (NaN, infinite or huge coordinates): refused even without ``strict``."""


class UnsafeRLEError(ValueError):
    """An RLE on which pycocotools' C code crashes or never ends (a size of
    no pixels, counts that do not cover the size): refused even without
    ``strict``."""


def _valid_size(h, w) -> bool:
    if type(h) is int and type(w) is int:
        return h >= 1 and w >= 1
    return all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v >= 1 for v in (h, w))


def _no_pixels(v) -> bool:
    """A side pycocotools' C code takes as 0 (it truncates a number to an
    unsigned integer): 0, False or a number in [0, 1)."""
    return isinstance(v, numbers.Real) and not (isinstance(v, float) and math.isnan(v)) and 0 <= v < 1


def _short(v) -> str:
    """``repr(v)`` for a message, a huge number or long value shortened."""
    text = repr(v)
    if len(text) <= 60:
        return text
    if type(v) is int:
        return f"{text[:12]}...({len(text.lstrip('-'))} digits)"
    return text[:57] + "..."


def check_rle_size(size, what: str) -> None:
    """An RLE's ``size`` on which pycocotools' C code does not crash: no side
    of no pixels (its bounding box divides by the height; a width of 0 makes
    it run forever).  :class:`UnsafeRLEError` otherwise."""
    if type(size) in (list, tuple) and len(size) == 2 and (_no_pixels(size[0]) or _no_pixels(size[1])):
        raise UnsafeRLEError(f"{what}: RLE size {_short(size)} has a side of no pixels "
                             "(pycocotools' C code crashes on it)")


def check_polygon_image_size(height, width, what: str) -> None:
    """Polygons on an image whose size is not a pair of positive integers:
    :class:`UnsafePolygonError` where pycocotools' rasteriser would take a
    side as 0 (it then crashes or never ends), else ValueError (a suspect
    input: pycocotools rasterises at the size it truncates to, or fails)."""
    if _no_pixels(height) or _no_pixels(width):
        raise UnsafePolygonError(f"{what}: its polygons need the image's size, and the image's height "
                                 f"{_short(height)} or width {_short(width)} is less than one pixel "
                                 "(pycocotools' C code crashes on it)")
    raise ValueError(f"{what}: its polygons need the image's size, but the image has no valid "
                     f"'height' and 'width' (got {_short(height)}, {_short(width)})")


#: polygon coordinates kept below this magnitude: pycocotools rasterises at
#: 5x scale in C ints, and allocates in proportion to the polygon's length
_MAX_COORD = 4e8


#: beyond this magnitude a polygon coordinate is refused even where pycocotools
#: is followed: its rasteriser would exhaust memory or overflow
_SAFE_COORD = 1e6


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


def flatten_polygons(segs: List[list]):
    """COCO polygon lists flattened for the kernels.

    Returns ``(coords, poly_off, ann_off)`` as
    :func:`boundary_api.masks._polygon.flatten_polygons` gives them, or None
    when an item is not a list of lists of numbers.
    """
    polys = list(itertools.chain.from_iterable(segs))
    if polys and set(map(type, polys)) != {list}:
        return None
    try:
        return _polygon.flatten_polygons(segs)
    except (TypeError, ValueError, OverflowError):
        return None


def polygons_valid(coords: np.ndarray, poly_off: np.ndarray, ann_off: np.ndarray,
                   height: np.ndarray, width: np.ndarray) -> np.ndarray:
    """Per annotation, whether :func:`check_polygons` accepts its polygons
    (flattened by :func:`flatten_polygons`; image sizes per annotation)."""
    return _polygon.polygons_acceptable(coords, poly_off, ann_off, np.asarray(height, np.int64),
                                     np.asarray(width, np.int64), _MAX_COORD).astype(bool)


def check_polygons(seg: list, height: Optional[int], width: Optional[int], what: str) -> None:
    """Check COCO polygons before pycocotools rasterises them.

    pycocotools' C code crashes or exhausts memory on polygons with NaN,
    infinite or huge coordinates, and rejects degenerate ones with unrelated
    messages.  Each polygon must be a list of an even number (at least 6) of
    finite numbers lying within one image size of the ``width x height``
    image (``-width <= x <= 2 * width``, likewise for y); with ``height``
    None (an image without a size) only the coordinates beyond ``1e6`` are
    refused.

    Raises
    ------
    ValueError
        Naming ``what`` and the polygon: :class:`UnsafePolygonError` for
        non-finite coordinates and coordinates beyond ``1e6`` in magnitude.
    """
    if not seg:
        raise ValueError(f"{what}: 'segmentation' is an empty list of polygons")
    sized = height is not None
    if sized:
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
            # (integers beyond the float range may cancel out in the sum)
            finite = math.isfinite(sum(poly)) and -_FLOAT_SAFE_INT < min(poly) and max(poly) < _FLOAT_SAFE_INT
        except TypeError:
            bad = next(v for v in poly if not isinstance(v, numbers.Real))
            raise ValueError(f"{what}: polygon {j} has a coordinate that is not a number: {_short(bad)}") from None
        except OverflowError:  # an integer beyond the range of a float
            finite = False
        if not finite:
            bad = next((v for v in poly if not finite_number(v)), None)
            if bad is not None:
                kind = "coordinate too large for a float:" if isinstance(bad, numbers.Integral) else \
                    "non-finite coordinate"
                raise UnsafePolygonError(f"{what}: polygon {j} has a {kind} {_short(bad)}")
        if not sized:
            far = next((v for v in poly if abs(v) > _SAFE_COORD), None)
            if far is not None:
                raise UnsafePolygonError(f"{what}: polygon {j} has a coordinate far outside any image: "
                                         f"{_short(far)}")
            continue
        xs, ys = poly[0::2], poly[1::2]
        if min(xs) < x_lo or max(xs) > x_hi or min(ys) < y_lo or max(ys) > y_hi:
            far = next(v for k, v in enumerate(poly)
                       if not ((x_lo <= v <= x_hi) if k % 2 == 0 else (y_lo <= v <= y_hi)))
            cls = UnsafePolygonError if abs(far) > _SAFE_COORD else ValueError
            raise cls(f"{what}: polygon {j} has a coordinate far outside the {width}x{height} image: "
                      f"{_short(far)}")


def check_rle_dict(seg: dict, height: Optional[int], width: Optional[int], what: str) -> None:
    """An RLE segmentation: its size is the image's (``height`` None: the
    image has none, the RLE's own size counts); uncompressed counts (a list)
    are non-negative integers covering it exactly.  (Compressed counts are
    decoded and checked where they are used.)

    Raises
    ------
    ValueError
        Naming the problem; :class:`UnsafeRLEError` for a size of no pixels,
        on which pycocotools' C code crashes or never ends.
    """
    size = seg["size"]
    check_rle_size(size, what)
    if height is None:
        if not (type(size) in (list, tuple) and len(size) == 2 and _valid_size(*size)):
            raise ValueError(f"{what}: RLE size {_short(size)} is not [height, width] in pixels "
                             "(and its image has no size either)")
        height, width = size
    elif not isinstance(size, (list, tuple)) or len(size) != 2 or size[0] != height or size[1] != width:
        raise ValueError(f"{what}: RLE size {_short(size)} is not the image's [{height}, {width}]")
    counts = seg["counts"]
    if type(counts) is list:
        if not all(type(c) is int and c >= 0 for c in counts):
            bad = next(c for c in counts if not (type(c) is int and c >= 0))
            raise ValueError(f"{what}: RLE counts must be non-negative integers, got {_short(bad)}")
        if sum(counts) != height * width:
            raise ValueError(f"{what}: RLE counts cover {sum(counts)} pixels, not the image's "
                             f"{height}x{width} = {height * width}")
    elif type(counts) not in (str, bytes):
        raise ValueError(f"{what}: RLE counts must be a list of integers or a compressed string, "
                         f"got {_json_type(counts)}")


def refuse_unsafe_masks(groups: Iterable[Tuple[Iterable[dict], Dict[Any, dict], Any]]) -> None:
    """Before pycocotools' or lvis' own mask code evaluates the masks of
    ``groups`` (``(annotations, images, describe)`` of the ground truth and
    the results evaluated together, ``describe(ann)`` naming an annotation):
    refuse a mask on which that C code crashes or never ends, also without
    ``strict``.

    That is a polygon on an image with a side of less than one pixel, or
    with a non-finite or huge coordinate (:class:`UnsafePolygonError`); an
    RLE with such a side; an RLE with foreground pixels whose counts do not
    cover exactly its ``size`` (or whose string is not a valid compressed
    RLE) where another mask of the same size lies on its image: the
    library's IoU of two masks of one size and different lengths never ends
    (:class:`UnsafeRLEError`).  Masks of different sizes are never compared
    (their IoU is -1).  What the library refuses by itself with an exception
    (counts that are not numbers, a negative integer count) is left to it.
    """
    sizes: Dict[Any, Dict[Tuple[int, int], int]] = {}  # image -> (h, w) -> masks of that size
    suspects: List[tuple] = []  # (ann, (h, w), message) of RLEs whose counts do not cover their size
    strings, keys, owners = [], [], []

    def count(a, key):
        per_image = sizes.setdefault(a.get("image_id"), {})
        per_image[key] = per_image.get(key, 0) + 1

    for anns, imgs, describe in groups:
        for a in anns:
            seg = a.get("segmentation")
            if type(seg) is list:
                img = imgs.get(a.get("image_id"))
                h, w = (img.get("height"), img.get("width")) if type(img) is dict else (None, None)
                if _no_pixels(h) or _no_pixels(w):
                    check_polygon_image_size(h, w, describe(a))
                for j, poly in enumerate(seg):  # (a result's rectangle, made of its box, was not checked)
                    if type(poly) is list and all(isinstance(v, numbers.Real) for v in poly) and poly \
                            and not (finite_numbers(poly) and max(map(abs, poly)) <= _SAFE_COORD):
                        raise UnsafePolygonError(f"{describe(a)}: polygon {j} has a non-finite or huge "
                                                 "coordinate (pycocotools' C code crashes on it)")
                if _pixel_size(h, w) is not None:
                    count(a, _pixel_size(h, w))
                continue
            if type(seg) is not dict:
                continue
            size = seg.get("size")
            check_rle_size(size, describe(a))
            key = _pixel_size(*size) if type(size) in (list, tuple) and len(size) == 2 else None
            if key is None:
                continue  # (the library's own error, or a size it takes as it is)
            count(a, key)
            h, w = key
            counts = seg.get("counts")
            if type(counts) in (str, bytes):
                strings.append(counts)
                keys.append(key)
                owners.append((a, describe))
            elif type(counts) is list:
                if not all(isinstance(c, numbers.Real) for c in counts) or any(
                        isinstance(c, numbers.Integral) and not 0 <= c < 1 << 32 for c in counts):
                    continue  # (NumPy refuses them when the library converts the counts)
                if not all(finite_number(c) and c >= 0 for c in counts):
                    raise UnsafeRLEError(f"{describe(a)}: RLE counts must be non-negative numbers "
                                         "(pycocotools' C code never ends on others)")
                ints = [int(c) for c in counts]  # (the library truncates each to an integer)
                if sum(ints) != h * w and sum(ints[1::2]):
                    suspects.append((a, key, f"{describe(a)}: RLE counts cover {sum(ints)} pixels, not its "
                                             f"{h}x{w} = {h * w}, and some of them are foreground"))
    if strings:
        status = _rle.check_strings(_rle.StringTable(strings), np.array([k[0] for k in keys], np.int64),
                                    np.array([k[1] for k in keys], np.int64))
        for i in np.flatnonzero(status).tolist():
            (h, w), (a, describe) = keys[i], owners[i]
            # (pycocotools' own decoding of the string: how many foreground pixels it reads)
            if mask_utils.area({"size": [h, w], "counts": strings[i]}):
                why = "is not a valid compressed RLE string" if status[i] == 1 else f"does not cover its {h}x{w} pixels"
                suspects.append((a, keys[i], f"{describe(a)}: segmentation counts {why}, and some of them are "
                                             "foreground"))
    for a, key, message in suspects:
        if sizes[a.get("image_id")][key] > 1:
            raise UnsafeRLEError(f"{message}, and another mask of that size lies on its image (pycocotools' "
                                 "mask IoU of the two never ends)")


def _pixel_size(h, w) -> Optional[Tuple[int, int]]:
    """The size pycocotools takes a mask to have (it truncates the numbers),
    or None where it refuses the numbers itself or they are out of range."""
    if all(isinstance(v, numbers.Real) and not isinstance(v, bool) and finite_number(v) and 1 <= v < 1 << 31
           for v in (h, w)):
        return int(h), int(w)
    return None
