"""Panoptic id maps: COCO panoptic PNGs to segment ids and back, and per-segment boundaries."""
from __future__ import annotations

import os
from typing import Dict, Optional, Tuple

import numpy as np

from ..masks import _idmaps, _png
from . import _kernels
from ..masks.boundary import check_dilation_ratio, dilation_pixels
from ..masks.imagefiles import DEFAULT_MAX_PIXELS, ImageTooLargeError, _pillow_bomb_limit, check_max_pixels

__all__ = ["rgb2id", "id2rgb", "read_panoptic_png", "segment_boundaries", "DEFAULT_MAX_PIXELS"]

_MAX_ID = 2 ** 32 - 1


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


# ---------------------------------------------------------------------------
# id maps
# ---------------------------------------------------------------------------

def rgb2id(color) -> np.ndarray:
    """Segment ids of a COCO panoptic colour image: ``R + 256 G + 256**2 B``.

    Parameters
    ----------
    color : (H, W, 3) or (H, W, 4) array of uint8
        RGB(A) pixels; an alpha channel is ignored.

    Returns
    -------
    (H, W) uint32 ndarray

    Examples
    --------
    >>> rgb2id(np.array([[[1, 2, 3]]], np.uint8))
    array([[197121]], dtype=uint32)
    """
    arr = np.asarray(color)
    if arr.ndim != 3 or arr.shape[2] < 3 or arr.dtype != np.uint8:
        raise ValueError(f"expected an (H, W, 3) uint8 colour image, got shape {arr.shape} and dtype {arr.dtype}")
    return _kernels.pan_color_to_id(np.ascontiguousarray(arr), False)


def id2rgb(ids) -> np.ndarray:
    """Inverse of :func:`rgb2id`: an (H, W, 3) uint8 RGB image of an id map.

    Parameters
    ----------
    ids : (H, W) array of integers in ``[0, 2**24)``

    Returns
    -------
    (H, W, 3) uint8 ndarray

    Examples
    --------
    >>> id2rgb(np.array([[197121]]))
    array([[[1, 2, 3]]], dtype=uint8)
    """
    arr = np.asarray(ids)
    if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"expected an (H, W) integer id map, got shape {arr.shape} and dtype {arr.dtype}")
    if arr.size and (arr.min() < 0 or arr.max() >= 1 << 24):
        raise ValueError("segment ids must lie in [0, 2**24) to be stored as RGB")
    a = arr.astype(np.uint32)
    return np.stack([a & 255, (a >> 8) & 255, a >> 16], axis=-1).astype(np.uint8)


def _image_size(path: str, head: bytes) -> Tuple[int, int]:
    """(width, height) from the file's header, without decoding the pixels."""
    if head[:8] == _PNG_SIGNATURE and head[12:16] == b"IHDR":
        return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    from PIL import Image

    try:
        with Image.open(path) as im:  # reads the header only
            return im.size
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(f"panoptic PNG {path} is too large to read: {exc}") from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise ValueError(f"cannot read panoptic PNG {path}: {exc}") from None


class _Buffers:
    """Decoding memory one worker reuses from image to image: the decoder's
    scratch and one id map per slot (allocating them afresh for every image
    costs more in page faults than the decoding itself)."""

    __slots__ = ("scratch", "ids")

    def __init__(self, slots: int = 2):
        self.scratch = np.empty(0, np.uint8)
        self.ids = [np.empty(0, np.uint32) for _ in range(slots)]

    def reserve(self, width: int, height: int, slot: int) -> None:
        # enough for 4 bytes per pixel, for the id maps or the runs of _png
        scratch = height * (4 * width + 1) + 28 * width + 64
        if self.scratch.size < scratch:
            self.scratch = np.empty(scratch, np.uint8)
        if slot is not None and self.ids[slot].size < width * height:
            self.ids[slot] = np.empty(width * height, np.uint32)


def read_panoptic_png(path, max_pixels: Optional[int] = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """Read a panoptic segmentation PNG as an (H, W) uint32 map of segment ids.

    The pixel values are Pillow's (``np.array(Image.open(path))``): colour
    images (RGB, RGBA) give :func:`rgb2id` of their RGB, the alpha channel
    ignored; single-channel images give their values as ids: the indices of
    a palette image (not its colours), the samples of a greyscale image as
    Pillow reads them (a 1-bit image 0/1, 2- and 4-bit samples scaled to
    0..255, 16-bit samples as they are).  The common kinds are decoded by
    the package's own decoder, the same values.

    Parameters
    ----------
    path : str or os.PathLike
    max_pixels : int or None, optional
        Largest ``width * height`` read (default :data:`DEFAULT_MAX_PIXELS`),
        checked from the file's header before anything is decoded: a guard
        against decompression bombs.  ``None``: no limit.

    Returns
    -------
    (H, W) uint32 ndarray, C-contiguous

    Raises
    ------
    ValueError
        If the file does not exist, cannot be read as such an image, or has
        more than ``max_pixels`` pixels.
    """
    return _read_ids(os.fspath(path), check_max_pixels(max_pixels))


def _read_png(path: str, limit: Optional[int], missing: Optional[str] = None):
    """The bytes of the PNG file ``path`` and its width and height, read only
    when it has at most ``limit`` pixels (its header says so first);
    ``missing`` is the message when the file does not exist."""
    if not os.path.isfile(path):
        raise ValueError(missing or f"PNG file not found: {path}")
    try:
        with open(path, "rb") as f:
            blob = f.read(24)
            width, height = _image_size(path, blob)
            if limit is not None and width * height > limit:
                raise ImageTooLargeError(
                    f"panoptic PNG {path} is {width}x{height} = {width * height} pixels, more than the limit of "
                    f"{limit} (a guard against decompression bombs); raise it with max_pixels=... "
                    "(command line: --max-pixels) if the image is genuine")
            blob += f.read()
    except OSError as exc:
        raise ValueError(f"cannot read panoptic PNG {path}: {exc.strerror or exc}") from None
    return blob, width, height


def _read_ids(path: str, limit: Optional[int], buffers: Optional[_Buffers] = None, slot: int = 0) -> np.ndarray:
    """:func:`read_panoptic_png`; with ``buffers``, the ids of a natively
    decoded file are a view of ``buffers.ids[slot]``, valid until its reuse."""
    blob, width, height = _read_png(path, limit)
    # the common kinds (8-bit RGB/RGBA, 8/16-bit grey, not interlaced) are
    # decoded by the package's own kernel, without holding the GIL
    if buffers is None or width * height > 1032 * len(blob):
        # (Deflate expands at most 1032 times: a file this small cannot hold
        # so many pixels, and no memory is set aside for them)
        ids = _png.pan_png_ids(blob)
    else:
        buffers.reserve(width, height, slot)
        ids = _png.pan_png_ids(blob, buffers.scratch, buffers.ids[slot])
    if ids is not None:
        return ids
    return _read_other(path, blob)


def _read_runs(path: str, limit: Optional[int], buffers: Optional[_Buffers] = None,
               missing: Optional[str] = None):
    """The image of :func:`read_panoptic_png` as ``(height, width, ends, ids)``:
    its runs (see ``boundary_api.masks._idmaps.pan_ids_to_runs``), decoded
    straight from the file without an id map when the package's own decoder
    takes it; ``buffers`` gives the decoder's scratch, ``missing`` the message
    when the file does not exist."""
    blob, width, height = _read_png(path, limit, missing)
    if buffers is None or width * height > 1032 * len(blob):
        # (Deflate expands at most 1032 times: a file this small cannot hold
        # so many pixels, and no memory is set aside for them)
        runs = _png.pan_png_runs(blob)
    else:
        buffers.reserve(width, height, None)
        runs = _png.pan_png_runs(blob, buffers.scratch)
    if runs is not None:
        return runs
    ids = _read_other(path, blob)
    return (ids.shape[0], ids.shape[1]) + _idmaps.pan_ids_to_runs(np.ascontiguousarray(ids, dtype=np.uint32))


def _read_other(path: str, blob: Optional[bytes] = None) -> np.ndarray:
    """Any other image, as Pillow's ``np.array(Image.open(path))`` gives it:
    a single-channel image (palette indices, grey samples; a 1-bit image 0/1)
    gives its values as ids, decoded by the package's label-map decoder when
    it takes the file; a colour image :func:`rgb2id` of its RGB (an alpha
    channel ignored)."""
    # (an image Pillow refuses as a bomb is left to Pillow, which says so)
    if blob is not None and blob[:8] == _PNG_SIGNATURE and not _pillow_bomb_limit(*_image_size(path, blob[:24])):
        try:
            labels = _png.png_label_map(blob)
        except MemoryError:
            raise ImageTooLargeError(f"panoptic PNG {path} is too large to read into memory") from None
        if labels is not None:
            return labels.astype(np.uint32)
    return _read_with_pillow(path)


def _read_with_pillow(path: str) -> np.ndarray:
    from PIL import Image

    try:
        with Image.open(path) as im:
            mode = im.mode
            arr = np.array(im)
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(f"panoptic PNG {path} is too large to read: {exc}") from None
    except MemoryError:
        raise ImageTooLargeError(f"panoptic PNG {path} is too large to read into memory") from None
    except Exception as exc:  # whatever Pillow raises on a file it cannot read
        raise ValueError(f"cannot read panoptic PNG {path}: {exc or type(exc).__name__}") from None
    if mode in ("RGB", "RGBA", "RGBX"):
        return _kernels.pan_color_to_id(np.ascontiguousarray(arr), False)
    if mode in ("LA", "La", "PA"):  # grey (or indices) with alpha: the alpha ignored, as for RGBA
        arr = arr[..., 0]
    if arr.ndim == 2 and (np.issubdtype(arr.dtype, np.integer) or arr.dtype == bool):
        if arr.dtype != bool and arr.size and arr.min() < 0:
            raise ValueError(f"panoptic PNG {path} has negative ids")
        return arr.astype(np.uint32)
    raise ValueError(f"unsupported panoptic PNG {path}: mode {mode} (expected RGB or a single channel of ids)")


def segment_boundaries(ids, segment_ids=None, dilation_ratio: float = 0.02) -> Tuple[np.ndarray, Dict[int, int]]:
    """Boundary of every segment of a panoptic id map, each on its own mask.

    Parameters
    ----------
    ids : (H, W) array of non-negative integers (< 2**32)
        Segment id map (e.g. from :func:`read_panoptic_png`).
    segment_ids : iterable of int, optional
        Segments wanted (default: every id in the map, VOID = 0 included).
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (0.02; Cityscapes 0.005).

    Returns
    -------
    bmap : (H, W) uint32 ndarray
        On each boundary pixel the id of the segment it belongs to, 0 elsewhere.
    area : dict
        Boundary area (pixels) of each wanted segment.

    Examples
    --------
    >>> ids = np.zeros((5, 5), np.uint32); ids[1:4, 1:4] = 7
    >>> bmap, area = segment_boundaries(ids, [7], 0.0)
    >>> area
    {7: 8}
    """
    ratio = check_dilation_ratio(dilation_ratio)
    arr = np.asarray(ids)
    if arr.ndim != 2 or arr.size == 0 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"ids must be a non-empty (H, W) integer array, got shape {arr.shape} and dtype {arr.dtype}")
    if arr.min() < 0 or arr.max() > _MAX_ID:
        raise ValueError("ids must lie in [0, 2**32)")
    arr = np.ascontiguousarray(arr, dtype=np.uint32)
    if segment_ids is None:
        sel = np.unique(arr)
    else:
        sel = np.unique(np.asarray(list(segment_ids), dtype=np.int64))
        if sel.size and (sel[0] < 0 or sel[-1] > _MAX_ID):
            raise ValueError("segment_ids must lie in [0, 2**32)")
        sel = sel.astype(np.uint32)
    d = dilation_pixels(arr.shape[0], arr.shape[1], ratio)
    bmap, area = _idmaps.pan_segment_boundaries(arr, sel, d)
    return bmap, {int(s): int(a) for s, a in zip(sel.tolist(), area.tolist())}


