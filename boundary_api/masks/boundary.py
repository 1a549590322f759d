"""Boundary extraction and Boundary IoU on binary masks and COCO RLEs.

The boundary of a mask ``M`` is ``M AND NOT erode(M)``, the erosion being by a
``(2d+1) x (2d+1)`` square with every pixel outside the image counting as
background, and ``d = dilation_pixels(h, w, dilation_ratio)``.  This is the
definition of Cheng et al., "Boundary IoU: Improving Object-Centric Image
Segmentation Evaluation" (CVPR 2021), and what their reference code computes
with OpenCV (see :mod:`boundary_api.reference`).  Here it runs on run-length
encodings in Cython and never decodes the full image.
"""
from __future__ import annotations

import math
import numbers
import warnings
from typing import List, Optional, Tuple, Union

import numpy as np
import pycocotools.mask as mask_utils

from . import _boundary, _rle
from .._parallel import resolve_threads, run_ranges, split_by_cost

__all__ = ["dilation_pixels", "mask_to_boundary", "rle_to_boundary"]

RLE = dict

#: largest image side accepted (pixels); sizes beyond it are refused up front
MAX_SIDE = 2**31 - 1
#: largest image area accepted (pixels): 2**40, e.g. 1,048,576 x 1,048,576.  The
#: kernels index pixels with 64-bit integers and do work proportional to a
#: mask's bounding box, so a few bytes of RLE must not declare an absurd image.
MAX_PIXELS = 2**40


def check_dilation_ratio(dilation_ratio) -> float:
    """Return ``dilation_ratio`` as a float, or raise if it is not a finite number >= 0.

    0 is accepted, as the reference implementation accepts it, with a
    one-line warning: it does not give an empty boundary but the thinnest
    one, ``d = 1`` pixel on every image (as any ratio does whose ``d`` rounds
    below 1); ``boundary-eval --dilation-ratio 0`` is refused.
    """
    if isinstance(dilation_ratio, bool) or not isinstance(dilation_ratio, numbers.Real):
        raise TypeError(f"dilation_ratio must be a number, got {type(dilation_ratio).__name__}")
    ratio = float(dilation_ratio)
    if not math.isfinite(ratio) or ratio < 0:
        raise ValueError(f"dilation_ratio must be a finite number >= 0, got {dilation_ratio!r}")
    if ratio == 0:
        warnings.warn(ZERO_RATIO_WARNING, stacklevel=2)
    return ratio


#: the warning for ``dilation_ratio=0``
ZERO_RATIO_WARNING = ("dilation_ratio 0 gives the thinnest boundary, d = 1 pixel on every image (d is "
                      "never below 1), not an empty one; give a positive ratio for a boundary that grows "
                      "with the image")


def dilation_pixels(height: int, width: int, dilation_ratio: float = 0.02) -> int:
    """Dilation ``d`` in pixels for an image of ``height x width``.

    ``d = max(1, int(round(dilation_ratio * sqrt(height**2 + width**2))))``
    with Python's ``round`` (ties to even), as in the reference implementation.

    Parameters
    ----------
    height, width : int
        Image size in pixels (positive).
    dilation_ratio : float, optional
        Fraction of the image diagonal; 0.02 for COCO/LVIS, 0.005 for Cityscapes.

    Returns
    -------
    int
        ``d >= 1``.  Any ``d`` is safe to use: once ``2d+1`` exceeds a mask's
        bounding box, the whole mask is its boundary.

    Raises
    ------
    ValueError
        If the size is not positive or too large (sides up to
        :data:`MAX_SIDE`, at most :data:`MAX_PIXELS` pixels), or the ratio
        times the diagonal is not a finite number.

    Examples
    --------
    >>> dilation_pixels(480, 640)
    16
    >>> dilation_pixels(3, 4, 0.5)  # 2.5 rounds to 2
    2
    """
    ratio = check_dilation_ratio(dilation_ratio)
    h, w = _check_size(height, width)
    x = ratio * math.sqrt(h * h + w * w)
    if not math.isfinite(x):
        raise ValueError(f"dilation_ratio {dilation_ratio!r} is too large: the dilation of a "
                         f"{h}x{w} image would be {x} pixels, not a finite number")
    return max(1, int(round(x)))


def dilation_pixels_array(h: np.ndarray, w: np.ndarray, dilation_ratio: float) -> np.ndarray:
    """:func:`dilation_pixels` for arrays of sizes (evaluated once per distinct size),
    as int64 clamped to ``max(h, w)`` (a larger d gives the same boundaries: the
    whole mask), ready for the kernels."""
    sizes = np.stack([np.asarray(h, np.int64), np.asarray(w, np.int64)], axis=1).reshape(-1, 2)
    if len(sizes) == 0:
        return np.zeros(0, np.int64)
    if sizes.min() >= 0 and sizes.max() <= MAX_SIDE:
        # one int64 key per size, in the order of (h, w): a plain sort instead
        # of np.unique(axis=0)'s sort of row records (~15 ms at 33k masks)
        key = (sizes[:, 0] << 31) | sizes[:, 1]
        ukey, inverse = np.unique(key, return_inverse=True)
        uniq = np.stack([ukey >> 31, ukey & MAX_SIDE], axis=1)
    else:
        uniq, inverse = np.unique(sizes, axis=0, return_inverse=True)
    d = np.array([min(dilation_pixels(int(a), int(b), dilation_ratio), int(max(a, b))) for a, b in uniq],
                 np.int64)
    return d[inverse.reshape(-1)]


def _check_size(height, width) -> Tuple[int, int]:
    for name, v in (("height", height), ("width", width)):
        if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
            raise ValueError(f"image {name} must be a positive integer, got {v!r}")
        if v > MAX_SIDE:
            raise ValueError(f"image {name} {v!r} is too large (at most {MAX_SIDE} pixels)")
    if int(height) * int(width) > MAX_PIXELS:
        raise ValueError(f"image size {height}x{width} is too large (at most {MAX_PIXELS} pixels)")
    return int(height), int(width)


def mask_to_boundary(mask, dilation_ratio: float = 0.02) -> np.ndarray:
    """Boundary of a binary mask.

    Parameters
    ----------
    mask : (H, W) array_like
        Binary mask; any nonzero value is foreground.
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02).

    Returns
    -------
    (H, W) uint8 ndarray
        1 on the boundary pixels, 0 elsewhere.

    Raises
    ------
    ValueError
        If the mask is not 2-D or empty, or the ratio is negative, not
        finite, or too large for the image (see :func:`dilation_pixels`).

    Examples
    --------
    >>> m = np.zeros((5, 5), np.uint8); m[1:4, 1:4] = 1
    >>> mask_to_boundary(m, 0.0)[2]
    array([0, 1, 0, 1, 0], dtype=uint8)
    """
    arr = np.asarray(mask)
    if arr.ndim != 2:
        raise ValueError(f"mask must be a 2-D (H, W) array, got shape {arr.shape}")
    if arr.dtype == object or not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
        raise TypeError(f"mask must be a numeric or boolean array, got dtype {arr.dtype}")
    if arr.size == 0:
        raise ValueError(f"mask must have at least one pixel, got shape {arr.shape}")
    d = dilation_pixels(arr.shape[0], arr.shape[1], dilation_ratio)
    return _boundary.boundary_dense(np.ascontiguousarray(arr != 0).view(np.uint8), d)


def _normalize_rle(rle, where: str = "rle") -> Tuple[Union[str, bytes], int, int]:
    """(counts string, h, w) of a COCO RLE dict; uncompressed counts are compressed."""
    if type(rle) is dict:  # the common case, checked cheaply
        size, counts = rle.get("size"), rle.get("counts")
        if (type(size) is list and len(size) == 2 and type(size[0]) is int and type(size[1]) is int
                and 0 < size[0] <= MAX_SIDE and 0 < size[1] <= MAX_SIDE
                and size[0] * size[1] <= MAX_PIXELS and type(counts) in (str, bytes)):
            return counts, size[0], size[1]
    if not isinstance(rle, dict) or "size" not in rle or "counts" not in rle:
        raise TypeError(f"{where}: expected a COCO RLE dict with 'size' and 'counts', got {type(rle).__name__}")
    size = rle["size"]
    if not isinstance(size, (list, tuple)) or len(size) != 2:
        raise ValueError(f"{where}: 'size' must be [height, width], got {size!r}")
    try:
        h, w = _check_size(*size)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    counts = rle["counts"]
    if isinstance(counts, (list, tuple, np.ndarray)):
        counts = mask_utils.frPyObjects({"size": [h, w], "counts": list(counts)}, h, w)["counts"]
    elif not isinstance(counts, (str, bytes)):
        raise TypeError(f"{where}: 'counts' must be a string, bytes or a list, got {type(counts).__name__}")
    return counts, h, w


def check_rle_strings(counts: list, h: np.ndarray, w: np.ndarray, name_of) -> None:
    """Raise ValueError naming the first RLE string that is malformed or does
    not cover exactly its h*w pixels, or whose image size is out of range
    (see :data:`MAX_PIXELS`).  ``name_of(i)`` describes item ``i``."""
    h = np.asarray(h, np.int64)
    w = np.asarray(w, np.int64)
    sides_ok = (h >= 1) & (w >= 1) & (h <= MAX_SIDE) & (w <= MAX_SIDE)
    size_ok = sides_ok & (np.where(sides_ok, h, 0) * np.where(sides_ok, w, 0) <= MAX_PIXELS)
    if not size_ok.all():
        i = int(np.flatnonzero(~size_ok)[0])
        raise ValueError(f"{name_of(i)}: image size {h[i]}x{w[i]} is out of range "
                         f"(sides 1..{MAX_SIDE}, at most {MAX_PIXELS} pixels)")
    status = _rle.check_strings(_rle.StringTable(counts), h, w)
    bad = np.flatnonzero(status)
    if len(bad):
        i = int(bad[0])
        why = ("is not a valid compressed RLE string" if status[i] == 1
               else f"does not cover its {h[i]}x{w[i]} pixels")
        more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
        raise ValueError(f"{name_of(i)}: segmentation counts {why}{more}")


def boundary_counts(counts: list, h: np.ndarray, w: np.ndarray, d: np.ndarray,
                    num_threads: Optional[int] = None, progress: Optional[str] = None) -> List[bytes]:
    """Boundary RLE strings of many (already validated) RLE strings, in parallel."""
    n = len(counts)
    if n == 0:
        return []
    table = _rle.StringTable(counts)
    threads = resolve_threads(num_threads)
    sizes = np.fromiter((len(c) for c in counts), np.float64, n)
    parts = threads * 8 if n > 2000 else threads
    ranges = split_by_cost(sizes, parts)
    hh, ww, dd = (np.ascontiguousarray(x, dtype=np.int64) for x in (h, w, d))
    chunks = run_ranges(lambda lo, hi: _boundary.boundary_strings(table, hh, ww, dd, lo, hi),
                        ranges, threads, progress=progress if n > 20000 else None, total=n)
    return [b for chunk in chunks for b in chunk]


def rle_to_boundary(rle, dilation_ratio: float = 0.02, num_threads: Optional[int] = None):
    """Boundary of one or many masks given as COCO run-length encodings.

    Parameters
    ----------
    rle : dict or list of dict
        pycocotools RLE ``{'size': [h, w], 'counts': ...}``; compressed
        (``str``/``bytes``) or uncompressed (list) counts.
    dilation_ratio : float, optional
        Boundary width as a fraction of each image's diagonal (default 0.02).
    num_threads : int, optional
        Threads for a list (default: all cores).

    Returns
    -------
    dict or list of dict
        Compressed RLE(s) of the boundary, ``counts`` as ``bytes``, exactly as
        ``pycocotools.mask.encode`` would write them (a run of 2**32 pixels or
        more, which pycocotools cannot write, is split by empty runs).

    Raises
    ------
    ValueError
        If an RLE is malformed, does not cover its ``h x w`` pixels, or its size
        is out of range (sides up to :data:`MAX_SIDE`, at most
        :data:`MAX_PIXELS` pixels); the message names the item.

    Notes
    -----
    Memory does not grow with the masks' size: the kernel's scratch per
    thread is bounded (about 8 MiB of bitsets), however large the image.
    """
    ratio = check_dilation_ratio(dilation_ratio)
    single = isinstance(rle, dict)
    items = [rle] if single else list(rle)
    norm = [_normalize_rle(r, "rle" if single else f"rle[{i}]") for i, r in enumerate(items)]
    counts = [c for c, _, _ in norm]
    h = np.fromiter((x[1] for x in norm), np.int64, len(norm))
    w = np.fromiter((x[2] for x in norm), np.int64, len(norm))
    check_rle_strings(counts, h, w, lambda i: "rle" if single else f"rle[{i}]")
    d = dilation_pixels_array(h, w, ratio)
    out = boundary_counts(counts, h, w, d, num_threads)
    res = [{"size": [a, b], "counts": c} for (_, a, b), c in zip(norm, out)]
    return res[0] if single else res


def _as_mask_list(masks, name: str):
    """(items, single) from an (H, W) array, an (N, H, W) stack, an RLE dict,
    or a list/tuple of arrays and RLE dicts."""
    if isinstance(masks, dict):
        return [masks], True
    if isinstance(masks, np.ndarray):
        if masks.ndim == 2:
            return [masks], True
        if masks.ndim == 3:
            return list(masks), False
        raise ValueError(f"{name}: an array of masks must be (H, W) or (N, H, W), got shape {masks.shape}")
    if isinstance(masks, (list, tuple)):
        return list(masks), False
    raise TypeError(f"{name} must be an (H, W) array, an (N, H, W) stack, an RLE dict, or a list of "
                    f"arrays / RLE dicts; got {type(masks).__name__}")
