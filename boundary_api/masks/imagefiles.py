"""Image files read by the package: their size from the header, before decoding.

A PNG of a few kilobytes can declare billions of pixels (a decompression
bomb): decoding it takes gigabytes of memory before any check on the pixels
can run, and Pillow or OpenCV then refuse it with their own exceptions.  Every
reader of the package calls :func:`check_image_file` first, which reads the
width and height from the file's header (a PNG's IHDR chunk; Pillow's lazy
header parsing for other formats) and refuses an image of more than
``max_pixels`` pixels with one :class:`ImageTooLargeError` naming the file.
"""
from __future__ import annotations

import io
import os
from typing import Optional, Tuple

__all__ = ["DEFAULT_MAX_PIXELS", "ImageTooLargeError", "check_image_file", "check_max_pixels",
           "image_file_size", "read_mask_file"]

#: largest image (width x height) read unless the caller raises the limit:
#: 2**27 is e.g. 16384 x 8192, far above COCO, Cityscapes, ADE20K or Mapillary
#: images
DEFAULT_MAX_PIXELS = 2 ** 27

_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


class ImageTooLargeError(ValueError):
    """An image file declares more pixels than the reader's ``max_pixels``."""


def check_max_pixels(max_pixels) -> Optional[int]:
    """Validate a ``max_pixels`` argument: a positive integer, or None for no limit."""
    import numpy as np

    if max_pixels is None:
        return None
    if isinstance(max_pixels, bool) or not isinstance(max_pixels, (int, np.integer)) or max_pixels < 1:
        raise ValueError(f"max_pixels must be a positive integer or None, got {max_pixels!r}")
    return int(max_pixels)


def image_file_size(path, head: Optional[bytes] = None, what: str = "image") -> Tuple[int, int]:
    """(width, height) of an image file from its header, without decoding pixels.

    Parameters
    ----------
    path : str or os.PathLike
    head : bytes, optional
        The file's first bytes (at least 24), if already read.
    what : str, optional
        What the file is, for messages.

    Returns
    -------
    (int, int)

    Raises
    ------
    ValueError
        If the file cannot be opened or is not an image (an
        :class:`ImageTooLargeError` if Pillow's own size limit refuses it).
    """
    from .._io import InputBytes

    if isinstance(path, InputBytes):  # a pipe already read: its bytes
        fspath, head, source = path.name, path.data[:24], io.BytesIO(path.data)
    else:
        fspath = source = os.fspath(path)
    if head is None or len(head) < 24 and not isinstance(path, InputBytes):
        try:
            with open(fspath, "rb") as f:
                head = f.read(24)
        except OSError as exc:
            raise ValueError(f"cannot read {what} {fspath}: {exc.strerror or exc}") from None
    if head[:8] == _PNG_SIGNATURE and head[12:16] == b"IHDR":
        return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    from PIL import Image

    try:
        with Image.open(source) as im:  # parses the header only
            return im.size
    except Image.DecompressionBombError as exc:
        raise ImageTooLargeError(f"{what} {fspath} is too large to read: {exc}") from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise ValueError(f"cannot read {what} {fspath}: {exc}") from None


def check_image_file(path, what: str = "image", max_pixels: Optional[int] = DEFAULT_MAX_PIXELS,
                     head: Optional[bytes] = None) -> Tuple[int, int]:
    """Refuse an image file of more than ``max_pixels`` pixels, from its header.

    Parameters
    ----------
    path : str or os.PathLike
    what : str, optional
        What the file is, for the message ("label map", "ground truth image").
    max_pixels : int or None, optional
        Largest ``width * height`` accepted; ``None``: no limit.
    head : bytes, optional
        The file's first bytes, if already read.

    Returns
    -------
    (width, height)

    Raises
    ------
    ImageTooLargeError
        If the image is larger than ``max_pixels`` (a ValueError).
    ValueError
        If the header cannot be read.
    """
    from .._io import InputBytes

    fspath = path.name if isinstance(path, InputBytes) else os.fspath(path)
    width, height = image_file_size(path if isinstance(path, InputBytes) else fspath, head, what)
    if max_pixels is not None and width * height > max_pixels:
        raise ImageTooLargeError(
            f"{what} {fspath} is {width}x{height} = {width * height} pixels, more than the limit of "
            f"{max_pixels} (a guard against decompression bombs); raise it with max_pixels=... "
            "(command line: --max-pixels) if the image is genuine")
    return width, height


def read_mask_file(path, what: str = "mask", max_pixels: Optional[int] = DEFAULT_MAX_PIXELS):
    """One binary mask from a file: an image (any nonzero pixel, of any
    channel, is foreground) as an (H, W) uint8 array, or a ``.json`` file
    holding a COCO RLE ``{"size", "counts"}`` (or an object with such a
    ``"segmentation"``) as that dict.

    An image of more than ``max_pixels`` pixels is refused from its header
    (:func:`check_image_file`), before decoding.

    Raises
    ------
    ValueError
        One line naming ``what`` and the path: no such file, not valid JSON
        or not an RLE, not an image OpenCV can read, too large.
    """
    import numpy as np

    from .._io import InputBytes, read_json, read_once

    source = read_once(path, what)  # a pipe (/dev/stdin, <(...)) is read once
    if isinstance(source, InputBytes):
        path = source.name
        is_json = source.data.lstrip()[:1] == b"{"  # no name to go by: an RLE object or an image
    else:
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise ValueError(f"{what} {path}: no such file")
        is_json = path.lower().endswith(".json")
    if is_json:
        doc = read_json(source, what)
        if isinstance(doc, dict) and "segmentation" in doc:
            doc = doc["segmentation"]
        if not (isinstance(doc, dict) and "size" in doc and "counts" in doc):
            raise ValueError(f"{what} {path}: expected a COCO RLE {{'size': [h, w], 'counts': ...}} "
                             "or an object with such a 'segmentation'")
        return doc
    import cv2

    check_image_file(source, f"{what} image", max_pixels)
    try:
        if isinstance(source, InputBytes):
            img = cv2.imdecode(np.frombuffer(source.data, np.uint8), cv2.IMREAD_UNCHANGED) if source.data else None
        else:
            img = cv2.imread(path, cv2.IMREAD_UNCHANGED)
    except cv2.error as exc:  # e.g. beyond OpenCV's own size limit, with a raised max_pixels
        raise ValueError(f"{what} {path}: OpenCV cannot read it: {str(exc).strip().splitlines()[-1]}") from None
    if img is None:
        raise ValueError(f"{what} {path}: not an image OpenCV can read (nor a .json RLE)")
    if img.ndim == 3:
        img = img.any(axis=2)
    return (img != 0).astype(np.uint8)
