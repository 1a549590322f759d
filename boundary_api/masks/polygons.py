"""COCO polygons to compressed RLE, natively and in parallel.

:func:`polygons_to_rle` gives, for many annotations at once, exactly the bytes
``pycocotools.mask.merge(pycocotools.mask.frPyObjects(polygons, h, w))['counts']``
(what ``COCO.annToRLE`` computes for a polygon annotation), without one Python
call per annotation and with the GIL released.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import numpy as np

from . import _polygon
from .._parallel import resolve_threads, run_ranges, split_by_cost

__all__ = ["polygons_to_rle", "rle_chunks_of_flat_polygons"]

# The kernel's bound on the scaled coordinates |5*c + .5| (pycocotools does its
# arithmetic on them in C ints: beyond this it overflows or exhausts memory).
POLYGON_COORD_LIMIT = 2.0 ** 30


def polygons_to_rle(segmentations: list, heights, widths, num_threads: Optional[int] = None) -> List[bytes]:
    """Compressed RLE counts of COCO polygon annotations, as pycocotools writes them.

    Parameters
    ----------
    segmentations : list of list of list of float
        Item ``i`` is one annotation's ``'segmentation'``: a non-empty list of
        polygons, each a flat list ``[x0, y0, x1, y1, ...]`` of an even number
        (at least 6) of finite coordinates.
    heights, widths : sequence of int
        The image size of every annotation (``>= 1``), one value per item.
    num_threads : int, optional
        Threads to use (default: all cores).  The result does not depend on it.

    Returns
    -------
    list of bytes
        Item ``i`` equals ``pycocotools.mask.merge(pycocotools.mask.frPyObjects(
        segmentations[i], heights[i], widths[i]))['counts']``: the same
        rasterisation (pycocotools' upsampled scan, clipping to the image
        included) and the same union of the polygons, byte for byte.

    Raises
    ------
    ValueError
        If the lengths differ, a size is below 1, an annotation has no polygon
        (pycocotools' ``frPyObjects`` fails on an empty list with an
        ``IndexError``), a polygon has an odd number of coordinates or fewer
        than 6, or a coordinate is not finite or so large that
        ``|5 * c + 0.5| >= 2**30`` (pycocotools' C integers would overflow);
        the message names the item and the polygon.

    Notes
    -----
    The input is expected to be checked already (``check_polygons`` in the
    instance evaluators); the checks here are the few the kernel needs to stay
    memory-safe, done on whole arrays.  The kernel's work per polygon grows with
    its number of vertices and the number of image columns it spans, not with
    its perimeter.

    Examples
    --------
    >>> polygons_to_rle([[[1, 1, 5, 1, 5, 5]]], [10], [10])
    [b'e0191O1`1']
    """
    n = len(segmentations)
    h = np.asarray(heights, dtype=np.int64).reshape(-1)
    w = np.asarray(widths, dtype=np.int64).reshape(-1)
    if len(h) != n or len(w) != n:
        raise ValueError(f"polygons_to_rle: {n} segmentations but {len(h)} heights and {len(w)} widths")
    if n == 0:
        return []
    if (h < 1).any() or (w < 1).any():
        i = int(np.flatnonzero((h < 1) | (w < 1))[0])
        raise ValueError(f"polygons_to_rle: item {i} has an image size {int(h[i])}x{int(w[i])} "
                         "(height and width must be >= 1)")
    try:
        coords, poly_off, ann_off = _polygon.flatten_polygons(
            segmentations if type(segmentations) is list else list(segmentations))
    except TypeError as exc:
        raise ValueError(f"polygons_to_rle: segmentations must be lists of polygons, each a list of "
                         f"numbers: {exc}") from None
    npoly = np.diff(ann_off)
    plen = np.diff(poly_off)
    if (npoly == 0).any():
        i = int(np.flatnonzero(npoly == 0)[0])
        raise ValueError(f"polygons_to_rle: item {i} is an empty list of polygons")
    bad = (plen < 6) | (plen % 2 == 1)
    if bad.any():
        p = int(np.flatnonzero(bad)[0])
        i = int(np.searchsorted(ann_off, p, side="right") - 1)
        raise ValueError(f"polygons_to_rle: item {i}, polygon {p - int(ann_off[i])} has {int(plen[p])} "
                         "coordinates; a polygon needs an even number of them, at least 6")
    scaled = np.abs(5.0 * coords + 0.5)
    if not (scaled < POLYGON_COORD_LIMIT).all():  # also catches NaN
        k = int(np.flatnonzero(~(scaled < POLYGON_COORD_LIMIT))[0])
        p = int(np.searchsorted(poly_off, k, side="right") - 1)
        i = int(np.searchsorted(ann_off, p, side="right") - 1)
        raise ValueError(f"polygons_to_rle: item {i}, polygon {p - int(ann_off[i])} has a coordinate "
                         f"{float(coords[k])!r} that is not finite or too large (|5 * c + 0.5| must be "
                         "below 2**30)")
    out: List[bytes] = []
    for _, (buf, offs) in rle_chunks_of_flat_polygons(coords, poly_off, ann_off, h, w, num_threads):
        o = offs.tolist()
        out.extend(buf[a:b] for a, b in zip(o[:-1], o[1:]))
    return out


def rle_chunks_of_flat_polygons(coords: np.ndarray, poly_off: np.ndarray, ann_off: np.ndarray,
                                heights: np.ndarray, widths: np.ndarray,
                                num_threads: Optional[int] = None) -> List[Tuple[Tuple[int, int], tuple]]:
    """:func:`polygons_to_rle` on polygons already flattened (as
    ``_polygon.flatten_polygons`` gives them) and checked, without one Python
    object per annotation: ``[((lo, hi), (buffer, offsets)), ...]``, the
    compressed RLE of annotation ``lo + i`` being
    ``buffer[offsets[i]:offsets[i + 1]]``, ranges in order covering every
    annotation.  The kernel itself refuses inconsistent arrays (ValueError)."""
    n = len(ann_off) - 1
    if n <= 0:
        return []
    h = np.ascontiguousarray(heights, dtype=np.int64)
    w = np.ascontiguousarray(widths, dtype=np.int64)
    threads = resolve_threads(num_threads)
    # cost of an annotation: its number of coordinates
    costs = (poly_off[ann_off[1:]] - poly_off[ann_off[:-1]]).astype(np.float64)
    ranges = split_by_cost(costs, threads * 8 if n > 2000 else threads)
    chunks = run_ranges(lambda lo, hi: _polygon.polygons_rle(coords, poly_off, ann_off, h, w, lo, hi),
                        ranges, threads)
    return list(zip(ranges, chunks))
