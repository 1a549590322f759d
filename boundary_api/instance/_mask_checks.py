"""Checks of single masks of COCO/LVIS annotations (polygons, RLEs), and of
the masks on which pycocotools' C code (and so lvis') crashes or never ends.

Loading and box evaluations take such masks as pycocotools does (a
:class:`SuspectInputWarning`, ``strict=True`` refusing them); a mask is
refused, also without ``strict``, only where pycocotools' C code is about to
make it and would crash or never end there, since a crash is no evaluation:
a polygon with non-finite or huge coordinates, or on an image with a side of
less than one pixel, when it is rasterised (:func:`refuse_unsafe_polygons`);
an RLE of a height of 0 pixels whose box is computed, and two RLEs of one
size whose counts cover different numbers of pixels, whose IoU never ends
(:func:`pycocotools_iou`, :func:`pycocotools_area_bbox`).  Where
pycocotools' C code reads an RLE string otherwise than as a valid mask but
gives a number, the same number is computed here
(:mod:`boundary_api.masks._cocoapi`), never by its code reading past the
string's end."""
from __future__ import annotations

import itertools
import math
import numbers
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np
import pycocotools.mask as mask_utils

from .._io import _FLOAT_SAFE_INT, finite_number, finite_numbers
from ..masks import _cocoapi, _polygon, _rle


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


def refuse_unsafe_polygons(anns: Iterable[dict], images: Dict[Any, dict], describe) -> None:
    """Before pycocotools' or lvis' own code rasterises the polygons of
    ``anns`` (``annToRLE`` / ``ann_to_rle``, as their mask evaluations and
    ``annToMask`` call it): refuse a polygon its C code crashes on, never
    ends on or exhausts memory with, also without ``strict``
    (:class:`UnsafePolygonError`, naming ``describe(ann)``): one with a
    non-finite or huge (beyond 1e6) coordinate, whatever pycocotools makes of
    it (C leaves the conversion of such a number to an int undefined); on an
    image with a side of no pixels as pycocotools reads it, the polygons of
    an annotation that its rasteriser and merge write past their buffer or
    never end on (:func:`pycocotools_polygon_rle`).  Other masks are left to
    the library."""
    for a in anns:
        seg = a.get("segmentation") if type(a) is dict else None
        if type(seg) is not list:
            continue
        for j, poly in enumerate(seg):  # (a result's rectangle, made of its box, was not checked)
            if type(poly) is list and all(isinstance(v, numbers.Real) for v in poly) and poly \
                    and not (finite_numbers(poly) and max(map(abs, poly)) <= _SAFE_COORD):
                raise UnsafePolygonError(f"{describe(a)}: polygon {j} has a non-finite or huge "
                                         "coordinate (pycocotools' C code crashes on it)")
        img = images.get(a.get("image_id")) if hashable(a.get("image_id")) else None
        if type(img) is dict:
            pycocotools_polygon_rle(seg, img.get("height"), img.get("width"), describe(a))


def pycocotools_polygon_rle(seg: list, height, width, what: str) -> Optional[dict]:
    """What pycocotools' ``annToRLE`` makes of polygons (``frPyObjects`` and
    ``merge``) on an image with a side that it reads as 0 pixels (a height
    or width of 0, or below 1: it truncates them), computed here
    (:mod:`boundary_api.masks._cocoapi`); None for any other image size, or
    polygons it refuses by itself with an exception.

    Raises
    ------
    UnsafePolygonError
        Where its merge of the annotation's polygons writes past its buffer
        of ``h * w + 1`` counts or never ends, naming ``what``.
    """
    h, w = _as_siz(height), _as_siz(width)
    if h is None or w is None or (h and w) or not seg or type(seg[0]) is not list or len(seg[0]) <= 4:
        return None
    try:
        polys = [np.array(p, np.float64) for p in seg]
    except (TypeError, ValueError):
        return None
    if any(p.ndim != 1 or not np.isfinite(p).all() or (p.size and np.abs(p).max() > _SAFE_COORD) for p in polys):
        return None  # (its own error, or refused by refuse_unsafe_polygons)
    runs = [_cocoapi.frstring(_cocoapi.tostring(_cocoapi.frpoly(np.ascontiguousarray(p), h, w)))[0] for p in polys]
    counts, failure = _cocoapi.merge(runs, h, w)
    if failure is not None:
        why = "writes past the end of its buffer" if failure == "overflow" else "never ends"
        raise UnsafePolygonError(f"{what}: its polygons need the image's size, and pycocotools reads the image's "
                                 f"height {_short(height)} and width {_short(width)} as {h}x{w} pixels: its merge of "
                                 f"the {len(polys)} polygons {why} (its process crashes or hangs)")
    return {"size": [h, w], "counts": _cocoapi.tostring(counts)}


def describe_annotation(kind: str, ann) -> str:
    """How a message names an annotation: ``"<kind> id 3 (image 42)"``."""
    return f"{kind} id {ann.get('id')!r} (image {ann.get('image_id')!r})"


def hashable(v) -> bool:
    """Whether ``v`` can be a dict key or set member (an id of any JSON type)."""
    if type(v) is int or type(v) is str:
        return True
    try:
        hash(v)
    except TypeError:
        return False
    return True


def _as_siz(v) -> Optional[int]:
    """A size as pycocotools' C code takes it (an unsigned 64-bit integer; a
    float truncated towards 0), or None where its conversion raises instead
    (NaN, infinities, negative numbers, too large ones, no numbers)."""
    if isinstance(v, numbers.Integral):
        return int(v) if 0 <= v < 1 << 64 else None
    if isinstance(v, numbers.Real) and math.isfinite(v):
        v = int(v)
        return v if 0 <= v < 1 << 64 else None
    return None


def _coco_rle(seg):
    """``(counts, h, w, terminated)`` of a compressed RLE as pycocotools' C
    code reads it (:func:`boundary_api.masks._cocoapi.frstring`), or None
    where pycocotools raises before its C code sees it (no dict, counts
    that are no string, a size that is no pair of integers, a string it
    cannot encode)."""
    if type(seg) is not dict:
        return None
    counts, size = seg.get("counts"), seg.get("size")
    if type(counts) not in (str, bytes) or type(size) not in (list, tuple) or len(size) < 2:
        return None
    h, w = _as_siz(size[0]), _as_siz(size[1])
    if h is None or w is None:
        return None
    try:
        c, terminated = _cocoapi.frstring(counts)
    except UnicodeEncodeError:
        return None
    return c, h, w, terminated


def _misread(rle) -> bool:
    """Whether pycocotools' C code reads this mask otherwise than as a valid
    mask of its size: a string whose last count runs past its end, counts
    that do not cover the size, a side of 0 (as a 32-bit number)."""
    c, h, w, terminated = rle
    return (not terminated or h & 0xFFFFFFFF == 0 or w & 0xFFFFFFFF == 0
            or int(c.sum(dtype=np.uint64)) != h * w)


def pycocotools_iou(dts: List[Any], gts: List[Any], iscrowd: List[Any], describe_dt, describe_gt):
    """pycocotools' ``maskUtils.iou(dts, gts, iscrowd)`` of two lists of
    segmentations, where its C code misreads one of the masks (see
    :func:`_misread`): the same array, computed here without its undefined
    behaviour; None where pycocotools' own call is to run (every mask valid,
    or an input it raises on by itself).

    Raises
    ------
    UnsafeRLEError
        Where pycocotools crashes (a height of 0 pixels with a foreground run:
        its box divides by it) or never ends (the IoU of two masks of one
        size whose counts cover different numbers of pixels), naming the
        masks with ``describe_dt(i)`` / ``describe_gt(j)``.
    """
    rles = [_coco_rle(s) for s in itertools.chain(dts, gts)]
    if not any(r is not None and _misread(r) for r in rles):
        return None
    if not dts or not gts or any(r is None for r in rles) or len(iscrowd) != len(gts) \
            or not all(isinstance(c, numbers.Integral) and 0 <= c < 256 for c in iscrowd):
        # pycocotools decodes every string before it returns [] for an empty list or
        # raises on a mask or crowd flag it cannot take: its own call, on copies of
        # the strings it would read past their end, each ended by a NUL
        return mask_utils.iou([_nul_ended(x) for x in dts], [_nul_ended(x) for x in gts], iscrowd)
    m = len(dts)
    ious, failure = _cocoapi.rle_iou([r[:3] for r in rles[:m]], [r[:3] for r in rles[m:]],
                                     np.array([int(c) for c in iscrowd], np.uint8))
    if failure is None:
        return ious
    if failure[0] == "height":
        what = describe_dt(failure[2]) if failure[1] == "dt" else describe_gt(failure[2])
        size = (dts if failure[1] == "dt" else gts)[failure[2]]["size"]
        raise UnsafeRLEError(f"{what}: RLE size {_short(size)} has a height of 0 pixels as pycocotools reads it, "
                             "and a foreground run: pycocotools' box of the mask divides by it (its process "
                             "crashes)")
    d, g = failure[1], failure[2]
    (cd, h, w, _), (cg, _, _, _) = rles[d], rles[m + g]
    raise UnsafeRLEError(f"{describe_dt(d)} and {describe_gt(g)}: their RLE counts cover "
                         f"{int(cd.sum(dtype=np.uint64))} and {int(cg.sum(dtype=np.uint64))} pixels of a "
                         f"{h}x{w} = {h * w} mask, and pycocotools' mask IoU of two such masks never ends")


def pycocotools_area_bbox(seg, box: bool, what: str):
    """``(area, box)`` as pycocotools' ``maskUtils.area`` and ``toBbox``
    (``box``: it is asked for) compute them for a result's segmentation in
    ``loadRes`` (a ``numpy.uint32`` and a float64 array), without its
    undefined behaviour on a string whose last count runs past its end;
    pycocotools' own functions where its C code reads the mask as a valid
    one or raises by itself.

    Raises
    ------
    UnsafeRLEError
        ``box`` for a mask of a height of 0 pixels with a foreground run
        (pycocotools' ``toBbox`` divides by it: its process crashes).
    """
    rle = _coco_rle(seg)
    if rle is None or not _misread(rle):
        return mask_utils.area(seg), (mask_utils.toBbox(seg) if box else None)
    c, h, w, _ = rle
    bb = None
    if box:
        bb = _cocoapi.to_bbox(c, h, w)
        if bb is None:
            raise UnsafeRLEError(f"{what}: RLE size {_short(seg['size'])} has a height of 0 pixels as "
                                 "pycocotools reads it, and a foreground run: its box divides by it "
                                 "(pycocotools' process crashes); give the result a 'bbox', or its mask "
                                 "its image's size")
        bb = np.array(bb, np.float64)
    return np.uint32(_cocoapi.area(c)), bb


def _nul_ended(seg):
    """``seg``, or a copy whose string gets the NUL of
    :func:`terminated_for_pycocotools`."""
    counts = terminated_for_pycocotools(seg)
    return seg if counts is None else dict(seg, counts=counts)


def terminated_for_pycocotools(seg):
    """The segmentation's counts as given to pycocotools' own code without
    its reading past the string's end: a string whose last count is not
    terminated gets a NUL after it, which pycocotools reads as it reads the
    byte after a string (here: 0) and stops at; None for any other."""
    rle = _coco_rle(seg)
    if rle is None or rle[3]:
        return None
    counts = seg["counts"]
    return counts + (b"\0" if type(counts) is bytes else "\0")


def _pixel_size(h, w) -> Optional[Tuple[int, int]]:
    """The size pycocotools takes a mask to have (it truncates the numbers),
    or None where it refuses the numbers itself or they are out of range."""
    if all(isinstance(v, numbers.Real) and not isinstance(v, bool) and finite_number(v) and 1 <= v < 1 << 31
           for v in (h, w)):
        return int(h), int(w)
    return None
