"""Simulated segmentation errors (Cheng et al., CVPR 2021, section 3) and the
synthetic low-resolution predictions of the paper's Tables 3, 5 and 11.

Every generator takes a COCO-style ``segmentation`` (a list of polygons
``[x0, y0, x1, y1, ...]`` in COCO's continuous pixel coordinates, or an RLE
dict, compressed or not) with the image ``height`` and ``width``, one severity
and, where randomness is involved, a ``seed`` (an int or a
``numpy.random.Generator``); it returns the erroneous mask as an ``(H, W)``
uint8 array.  The same arguments always give the same mask.

=========================  ===============================  ======================
error                      what is done                     severity
=========================  ===============================  ======================
scale (dilation)           dilate with a disc               kernel radius, pixels
scale (erosion)            erode with a disc                kernel radius, pixels
boundary localization      Gaussian noise on every vertex   noise std, pixels
object localization        shift in a random direction      shift length, pixels
boundary approximation     Shapely ``simplify`` per ring    tolerance, pixels
inner mask                 random elliptical holes          number of holes
=========================  ===============================  ======================

Polygons are rasterized with pycocotools (as ``COCO.annToMask`` does), so a
severity of 0 returns the ground truth's own mask.  The two polygon errors
need polygons: an RLE mask is traced into rings through its boundary pixels'
centres (OpenCV, holes kept) and rasterized back with OpenCV, which gives the
mask back unchanged at severity 0.
"""
from __future__ import annotations

import math
import numbers
from typing import List, Optional, Sequence, Tuple, Union

import cv2
import numpy as np
import pycocotools.mask as mask_utils

__all__ = [
    "ERRORS",
    "segmentation_mask",
    "dilation_error",
    "erosion_error",
    "scale_error",
    "boundary_localization_error",
    "object_localization_error",
    "boundary_approximation_error",
    "inner_mask_error",
    "apply_error",
    "low_resolution_mask",
    "downscale_panoptic",
]

#: The error types :func:`apply_error` knows, in the paper's order.
ERRORS: Tuple[str, ...] = ("dilation", "erosion", "boundary_localization", "object_localization",
                           "boundary_approximation", "inner_mask")

Seed = Union[None, int, np.random.Generator]


# --------------------------------------------------------------------------
# input
# --------------------------------------------------------------------------

def _size(height, width) -> Tuple[int, int]:
    for name, v in (("height", height), ("width", width)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    return int(height), int(width)


def _rng(seed: Seed) -> np.random.Generator:
    if isinstance(seed, np.random.Generator):
        return seed
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0):
        return np.random.default_rng(seed)
    raise TypeError(f"seed must be a non-negative integer, a numpy Generator or None, got {seed!r}")


def _severity(value, name: str, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}")
    if integer and value != int(value):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return float(value)


def _is_polygons(segmentation) -> bool:
    return isinstance(segmentation, (list, tuple))


def _polygons(segmentation) -> List[np.ndarray]:
    """COCO polygons as (k, 2) float arrays (rings of fewer than 3 points dropped)."""
    out = []
    for i, poly in enumerate(segmentation):
        a = np.asarray(poly, dtype=np.float64).reshape(-1)
        if a.size % 2 or not np.isfinite(a).all():
            raise ValueError(f"segmentation polygon {i}: expected an even number of finite coordinates")
        if a.size >= 6:
            out.append(a.reshape(-1, 2))
    return out


def _rasterize_polygons(rings: Sequence[np.ndarray], h: int, w: int) -> np.ndarray:
    rings = [r for r in rings if len(r) >= 3]
    if not rings:
        return np.zeros((h, w), np.uint8)
    rles = mask_utils.frPyObjects([r.reshape(-1).tolist() for r in rings], h, w)
    return mask_utils.decode(mask_utils.merge(rles))


def segmentation_mask(segmentation, height: int, width: int) -> np.ndarray:
    """The ``(H, W)`` uint8 mask of a COCO segmentation (polygons or RLE), as
    ``COCO.annToMask`` rasterizes it; an ``(H, W)`` array is returned as 0/1."""
    h, w = _size(height, width)
    if isinstance(segmentation, np.ndarray):
        if segmentation.shape != (h, w):
            raise ValueError(f"mask has shape {segmentation.shape}, expected {(h, w)}")
        return (segmentation != 0).astype(np.uint8)
    if _is_polygons(segmentation):
        return _rasterize_polygons(_polygons(segmentation), h, w)
    if isinstance(segmentation, dict) and "counts" in segmentation and "size" in segmentation:
        if list(segmentation["size"]) != [h, w]:
            raise ValueError(f"RLE size {segmentation['size']} is not the image size {[h, w]}")
        rle = segmentation
        if isinstance(rle["counts"], list):
            rle = mask_utils.frPyObjects(rle, h, w)
        return mask_utils.decode(rle)
    raise TypeError("segmentation must be a list of polygons, a COCO RLE dict or an (H, W) array, "
                    f"got {type(segmentation).__name__}")


# RLE masks as rings: traced through boundary pixel centres, filled back with OpenCV

def _trace(mask: np.ndarray) -> Tuple[List[np.ndarray], List[bool]]:
    """Rings through boundary pixel centres, outermost first, and whether each is a hole."""
    contours, hierarchy = cv2.findContours(mask.astype(np.uint8), cv2.RETR_TREE, cv2.CHAIN_APPROX_NONE)
    if hierarchy is None:
        return [], []
    parent = hierarchy[0][:, 3]
    depth = np.zeros(len(contours), np.int64)
    for i in range(len(contours)):
        j = parent[i]
        while j >= 0:
            depth[i] += 1
            j = parent[j]
    order = np.argsort(depth, kind="stable")
    return ([contours[i].reshape(-1, 2).astype(np.float64) for i in order],
            [bool(depth[i] % 2) for i in order])


def _fill_traced(rings: Sequence[np.ndarray], holes: Sequence[bool], h: int, w: int) -> np.ndarray:
    """Fill rings outermost first: an object ring sets its inside, a hole ring clears
    its inside but keeps the ring (it runs through the object pixels around the hole);
    islands inside holes come later and are drawn again."""
    out = np.zeros((h, w), np.uint8)
    for r, hole in zip(rings, holes):
        if len(r):
            pts = [np.round(r).astype(np.int32).reshape(-1, 1, 2)]
            cv2.fillPoly(out, pts, 0 if hole else 1)
            cv2.polylines(out, pts, True, 1)
    return out


def _box(m: np.ndarray, pad: int):
    """``(y0, y1, x0, x1)``: the mask's bounding box grown by ``pad``, clipped to the image."""
    rows = np.flatnonzero(m.any(axis=1))
    if not len(rows):
        return None
    cols = np.flatnonzero(m.any(axis=0))
    h, w = m.shape
    return (max(0, int(rows[0]) - pad), min(h, int(rows[-1]) + 1 + pad),
            max(0, int(cols[0]) - pad), min(w, int(cols[-1]) + 1 + pad))


def _disc(radius: int) -> np.ndarray:
    return cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))


# --------------------------------------------------------------------------
# the error generators
# --------------------------------------------------------------------------

def scale_error(segmentation, height: int, width: int, radius: int) -> np.ndarray:
    """Scale error: dilation (``radius > 0``) or erosion (``radius < 0``) of the
    mask by a disc of ``|radius|`` pixels (a ``(2r+1) x (2r+1)`` ellipse kernel).

    Erosion does not eat into the object from the image border (pixels outside
    the image count as foreground), as the border is not the object's contour.
    """
    if isinstance(radius, bool) or not isinstance(radius, numbers.Integral):
        raise ValueError(f"radius must be an integer number of pixels, got {radius!r}")
    m = segmentation_mask(segmentation, height, width)
    r = int(radius)
    box = _box(m, abs(r) + 1)
    if r == 0 or box is None:
        return m
    op = cv2.dilate if r > 0 else cv2.erode
    # on the object's box grown by r + 1 (the same result as on the whole image: no object
    # pixel's disc reaches a cut edge, and cut edges at the image border stay image borders)
    y0, y1, x0, x1 = box
    out = np.zeros_like(m)
    out[y0:y1, x0:x1] = op(m[y0:y1, x0:x1], _disc(abs(r)))
    return out


def dilation_error(segmentation, height: int, width: int, radius: int) -> np.ndarray:
    """Scale error by dilation with a disc of ``radius`` pixels (see :func:`scale_error`)."""
    return scale_error(segmentation, height, width, int(_severity(radius, "radius", True)))


def erosion_error(segmentation, height: int, width: int, radius: int) -> np.ndarray:
    """Scale error by erosion with a disc of ``radius`` pixels (see :func:`scale_error`)."""
    return scale_error(segmentation, height, width, -int(_severity(radius, "radius", True)))


def boundary_localization_error(segmentation, height: int, width: int, std: float,
                                seed: Seed = None) -> np.ndarray:
    """Boundary localization error: independent Gaussian noise of standard
    deviation ``std`` pixels added to both coordinates of every polygon vertex,
    then rasterized again."""
    std = _severity(std, "std")
    h, w = _size(height, width)
    rng = _rng(seed)
    if _is_polygons(segmentation):
        rings = _polygons(segmentation)
        if std == 0:
            return _rasterize_polygons(rings, h, w)
        return _rasterize_polygons([r + rng.normal(0.0, std, r.shape) for r in rings], h, w)
    m = segmentation_mask(segmentation, h, w)
    if std == 0:
        return m
    rings, holes = _trace(m)
    return _fill_traced([r + rng.normal(0.0, std, r.shape) for r in rings], holes, h, w)


def object_localization_error(segmentation, height: int, width: int, length: float,
                              seed: Seed = None) -> np.ndarray:
    """Object localization error: the object shifted by ``length`` pixels in a
    direction drawn uniformly from [0, 2 pi).  Polygons move by the exact
    offset; RLE masks by the offset rounded to whole pixels.  What leaves the
    image is lost."""
    length = _severity(length, "length")
    h, w = _size(height, width)
    angle = _rng(seed).uniform(0.0, 2.0 * math.pi)
    dx, dy = length * math.cos(angle), length * math.sin(angle)
    if _is_polygons(segmentation):
        return _rasterize_polygons([r + (dx, dy) for r in _polygons(segmentation)], h, w)
    m = segmentation_mask(segmentation, h, w)
    ix, iy = int(round(dx)), int(round(dy))
    out = np.zeros_like(m)
    ys, yd = (slice(0, h - iy), slice(iy, h)) if iy >= 0 else (slice(-iy, h), slice(0, h + iy))
    xs, xd = (slice(0, w - ix), slice(ix, w)) if ix >= 0 else (slice(-ix, w), slice(0, w + ix))
    if abs(ix) < w and abs(iy) < h:
        out[yd, xd] = m[ys, xs]
    return out


def boundary_approximation_error(segmentation, height: int, width: int, tolerance: float) -> np.ndarray:
    """Boundary approximation error: every ring simplified with Shapely's
    ``simplify(tolerance)`` (Douglas-Peucker: vertices are removed while the
    simplified ring stays within ``tolerance`` pixels of the original), then
    rasterized again.  Deterministic."""
    from shapely.geometry import LineString

    tolerance = _severity(tolerance, "tolerance")
    h, w = _size(height, width)

    def simplify(r: np.ndarray) -> np.ndarray:
        if tolerance == 0 or len(r) < 3:
            return r
        closed = np.vstack([r, r[:1]])
        s = np.asarray(LineString(closed).simplify(tolerance, preserve_topology=False).coords)
        return s[:-1] if len(s) >= 4 else np.zeros((0, 2))

    if _is_polygons(segmentation):
        return _rasterize_polygons([simplify(r) for r in _polygons(segmentation)], h, w)
    m = segmentation_mask(segmentation, h, w)
    if tolerance == 0:
        return m
    rings, holes = _trace(m)
    return _fill_traced([simplify(r) for r in rings], holes, h, w)


def inner_mask_error(segmentation, height: int, width: int, holes: int, seed: Seed = None,
                     hole_size: Tuple[float, float] = (0.05, 0.15)) -> np.ndarray:
    """Inner mask error: ``holes`` random elliptical holes inside the object.

    Each hole has semi-axes drawn uniformly from ``hole_size`` times the square
    root of the object's area (at least 1 pixel), a random orientation, and a
    centre drawn among the object pixels deep enough for the hole to stay
    clear of the contour (the deepest pixel when none is).
    """
    n = int(_severity(holes, "holes", True))
    lo, hi = (float(hole_size[0]), float(hole_size[1])) if len(hole_size) == 2 else (None, None)
    if lo is None or not 0 < lo <= hi:
        raise ValueError(f"hole_size must be (low, high) with 0 < low <= high, got {hole_size!r}")
    m = segmentation_mask(segmentation, height, width)
    if n == 0 or not m.any():
        return m
    rng = _rng(seed)
    scale = math.sqrt(float(m.sum()))
    # everything happens inside the object's box (outside it there is nothing to cut)
    y0, y1, x0, x1 = _box(m, 0)
    full, m = m, m[y0:y1, x0:x1]
    depth = cv2.distanceTransform(np.pad(m, 1), cv2.DIST_L2, 5)[1:-1, 1:-1]
    out = m.copy()
    for _ in range(n):
        a, b = np.maximum(1.0, rng.uniform(lo, hi, 2) * scale)
        angle = float(rng.uniform(0.0, 180.0))
        ok = np.flatnonzero(depth.reshape(-1) > max(a, b) + 1.0)
        if len(ok):
            k = int(ok[rng.integers(len(ok))])
        else:
            k = int(np.argmax(depth))
        cy, cx = divmod(k, m.shape[1])
        cv2.ellipse(out, (int(cx), int(cy)), (int(round(a)), int(round(b))), angle, 0, 360, 0, -1)
    result = np.zeros_like(full)
    result[y0:y1, x0:x1] = out
    return result


_ERROR_FUNCS = {
    "dilation": lambda s, h, w, v, rng: dilation_error(s, h, w, int(v)),
    "erosion": lambda s, h, w, v, rng: erosion_error(s, h, w, int(v)),
    "boundary_localization": boundary_localization_error,
    "object_localization": object_localization_error,
    "boundary_approximation": lambda s, h, w, v, rng: boundary_approximation_error(s, h, w, v),
    "inner_mask": lambda s, h, w, v, rng: inner_mask_error(s, h, w, int(v), rng),
}


def apply_error(kind: str, segmentation, height: int, width: int, severity: float, seed: Seed = None) -> np.ndarray:
    """The mask of ``segmentation`` with error ``kind`` (one of :data:`ERRORS`) at ``severity``.

    Parameters
    ----------
    kind : str
        ``"dilation"``, ``"erosion"`` (radius), ``"boundary_localization"``
        (noise std), ``"object_localization"`` (shift length),
        ``"boundary_approximation"`` (simplify tolerance), ``"inner_mask"``
        (number of holes).
    segmentation : list of polygons, COCO RLE dict, or (H, W) array
    height, width : int
        Image size.
    severity : float
        In pixels, or the number of holes.
    seed : int or numpy.random.Generator, optional
        Randomness of the boundary/object localization and inner mask errors.

    Returns
    -------
    (H, W) uint8 ndarray
    """
    if kind not in _ERROR_FUNCS:
        raise ValueError(f"unknown error type {kind!r}; choose from {list(ERRORS)}")
    _severity(severity, f"{kind} severity", integer=kind in ("dilation", "erosion", "inner_mask"))
    return _ERROR_FUNCS[kind](segmentation, height, width, severity, seed)


# --------------------------------------------------------------------------
# synthetic predictions
# --------------------------------------------------------------------------

def low_resolution_mask(segmentation, height: int, width: int, resolution: int = 28,
                        bbox: Optional[Sequence[float]] = None) -> np.ndarray:
    """The paper's synthetic prediction: the mask cropped to its box, resampled
    to ``resolution x resolution``, upscaled back bilinearly and binarized at 0.5.

    The crop is the box ``[x, y, w, h]`` (default: the mask's own tight box)
    rounded outwards to whole pixels.  Downsampling averages the covered area
    of each cell (the soft target a mask head learns); upscaling is bilinear
    with pixel centres aligned (OpenCV ``INTER_LINEAR``); a pixel is foreground
    when its value is at least 0.5.  Nothing outside the box is foreground.
    """
    if isinstance(resolution, bool) or not isinstance(resolution, numbers.Integral) or resolution < 1:
        raise ValueError(f"resolution must be a positive integer, got {resolution!r}")
    m = segmentation_mask(segmentation, height, width)
    h, w = m.shape
    if bbox is None:
        ys, xs = np.nonzero(m)
        if not len(ys):
            return m
        x0, y0, x1, y1 = xs.min(), ys.min(), xs.max() + 1, ys.max() + 1
    else:
        bx, by, bw, bh = (float(v) for v in bbox)
        x0, y0 = max(0, int(math.floor(bx))), max(0, int(math.floor(by)))
        x1, y1 = min(w, int(math.ceil(bx + bw))), min(h, int(math.ceil(by + bh)))
    out = np.zeros_like(m)
    if x1 <= x0 or y1 <= y0:
        return out
    crop = m[y0:y1, x0:x1].astype(np.float32)
    small = cv2.resize(crop, (int(resolution), int(resolution)), interpolation=cv2.INTER_AREA)
    big = cv2.resize(small, (x1 - x0, y1 - y0), interpolation=cv2.INTER_LINEAR)
    out[y0:y1, x0:x1] = big >= 0.5
    return out


def downscale_panoptic(ids: np.ndarray, factor: float) -> np.ndarray:
    """Nearest-neighbour down- and up-scaling of a whole panoptic id map by
    ``factor`` (the paper's Table 11 protocol).

    Downscaling keeps the pixel at the top-left corner of every ``factor x
    factor`` cell (rows and columns ``floor(k * factor)``, giving ``ceil(H /
    factor) x ceil(W / factor)`` pixels); upscaling gives every pixel the value
    of the cell it falls in (``floor(y / factor)``).  For an integer factor
    this is ``ids[::f, ::f]`` repeated ``f`` times along both axes, cut to
    ``(H, W)``.  Works on integer id maps and on ``(H, W, 3)`` RGB arrays.
    """
    f = _severity(factor, "factor")
    if f < 1:
        raise ValueError(f"factor must be >= 1, got {factor!r}")
    a = np.asarray(ids)
    if a.ndim not in (2, 3) or a.size == 0:
        raise ValueError(f"expected an (H, W) id map or an (H, W, 3) image, got shape {a.shape}")
    h, w = a.shape[:2]
    sh, sw = int(math.ceil(h / f)), int(math.ceil(w / f))
    rows = np.minimum(np.floor(np.arange(sh) * f).astype(np.int64), h - 1)
    cols = np.minimum(np.floor(np.arange(sw) * f).astype(np.int64), w - 1)
    small = a[rows][:, cols]
    up_r = np.minimum(np.floor(np.arange(h) / f).astype(np.int64), sh - 1)
    up_c = np.minimum(np.floor(np.arange(w) / f).astype(np.int64), sw - 1)
    return small[up_r][:, up_c]
