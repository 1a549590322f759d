"""Image files read by the package: their size from the header, before decoding.

A PNG of a few kilobytes can declare billions of pixels (a decompression
bomb): decoding it takes gigabytes of memory before any check on the pixels
can run, and Pillow or OpenCV then refuse it with their own exceptions.  Every
reader of the package calls :func:`check_image_file` first, which reads the
width and height from the file's header (a PNG's IHDR chunk; Pillow's lazy
header parsing for other formats) and refuses an image of more than
``max_pixels`` pixels with one :class:`ImageTooLargeError` naming the file.

Pixel values are those of Pillow's ``np.array(Image.open(path))``, whoever
decodes the file: a palette image gives its indices (never the palette's
colours), a 1-bit image 0/1, a 2- or 4-bit greyscale image Pillow's scaled
values (0/85/170/255, 0/17/.../255), 16-bit greyscale its samples.
Single-channel PNGs (palette and greyscale, not interlaced) are decoded by the
package's own decoder (``_png``, without the GIL, several times faster than
Pillow on label maps), exactly as Pillow reads them; every other file by
Pillow itself.
"""
from __future__ import annotations

import io
import os
from typing import Optional, Tuple

__all__ = ["DEFAULT_MAX_PIXELS", "ImageTooLargeError", "check_image_file", "check_max_pixels",
           "image_file_size", "read_label_map", "read_mask_file"]

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


# Pillow's modes of one channel of integers; "1" (bool in Pillow's array) is
# read as uint8 0/1
_LABEL_MODES = frozenset({"1", "L", "P", "I", "I;16", "I;16B", "I;16L", "I;16N"})


def _source_bytes(path, what: str):
    """(name for messages, the file's bytes) of a path or a pipe read once."""
    from .._io import InputBytes, read_once

    source = read_once(path, what)
    if isinstance(source, InputBytes):
        return source.name, source.data
    fspath = os.fspath(path)
    if not os.path.isfile(fspath):
        raise ValueError(f"{what} not found: {fspath}")
    try:
        with open(fspath, "rb") as f:
            return fspath, f.read()
    except OSError as exc:
        raise ValueError(f"cannot read {what} {fspath}: {exc.strerror or exc}") from None


def _pillow_bomb_limit(width: int, height: int) -> bool:
    """Whether Pillow would refuse an image of this size as a decompression
    bomb (more than twice ``Image.MAX_IMAGE_PIXELS``)."""
    from PIL import Image

    limit = Image.MAX_IMAGE_PIXELS
    return bool(limit) and width * height > 2 * limit


def _image_values(name: str, data: bytes, what: str, max_pixels: Optional[int], label_map: bool):
    """Pillow's ``np.array(Image.open(file))`` of a file's bytes, after the
    size check; single-channel PNGs decoded natively.  With ``label_map``,
    only single-channel images of integers are accepted (mode "1" as uint8)."""
    import numpy as np

    from .._io import InputBytes

    width, height = check_image_file(InputBytes(name, data), what, max_pixels)
    # (an image Pillow refuses as a bomb is left to Pillow, which says so)
    if data[:8] == _PNG_SIGNATURE and not _pillow_bomb_limit(width, height):
        from . import _png

        try:
            arr = _png.png_label_map(data)
        except MemoryError:
            raise ImageTooLargeError(f"{what} {name} is too large to read into memory") from None
        if arr is not None:
            return arr
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as img:
            mode, bands = img.mode, len(img.getbands())
            arr = None if label_map and mode not in _LABEL_MODES else np.array(img)
    except Image.DecompressionBombError as exc:  # Pillow's own limit, with max_pixels=None
        raise ImageTooLargeError(f"{what} {name} is too large to read: {exc}") from None
    except MemoryError:
        raise ImageTooLargeError(f"{what} {name} is too large to read into memory") from None
    except Exception as exc:  # whatever Pillow raises on a file it cannot read
        raise ValueError(f"cannot read {what} {name}: {exc or type(exc).__name__}") from None
    if arr is None:
        raise ValueError(f"{name}: expected a single-channel label map (class ids), got a {mode} image "
                         f"with {bands} channels")
    if label_map:
        if arr.ndim != 2:
            raise ValueError(f"{name}: expected a single-channel label map, got an array of shape {arr.shape}")
        if arr.dtype == bool:
            arr = arr.astype(np.uint8)  # (Pillow's bool bytes are 0 and 255)
        elif not arr.dtype.isnative:  # e.g. mode I;16B
            arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr


def read_label_map(path, max_pixels: Optional[int] = DEFAULT_MAX_PIXELS, what: str = "label map"):
    """A single-channel image file as the (H, W) array of its values: what
    Pillow's ``np.array(Image.open(path))`` gives.

    Palette images give their indices (PASCAL VOC, DAVIS), greyscale images
    their samples, as Pillow reads them.  PNGs of these kinds that are not
    interlaced are decoded by the package's own decoder (several times
    faster than Pillow; the same values); every other file by Pillow.

    Parameters
    ----------
    path : str or os.PathLike
        An image file of one channel of integers (Pillow's modes ``1``,
        ``L``, ``P``, ``I;16``, ``I``); a pipe (``/dev/stdin``, ``<(...)``)
        is read once.
    max_pixels : int or None, optional
        Largest ``width * height`` read (default :data:`DEFAULT_MAX_PIXELS`),
        checked from the file's header before anything is decoded: a guard
        against decompression bombs.  ``None``: no limit of the package's
        (Pillow's own limit, ``Image.MAX_IMAGE_PIXELS``, still applies).
    what : str, optional
        What the file is, for messages.

    Returns
    -------
    (H, W) ndarray
        Pillow's values and dtype: uint8 for palette images (the indices)
        and greyscale up to 8 bits (2- and 4-bit samples scaled to 0..255
        as Pillow scales them: 0/85/170/255 and 0/17/.../255), uint16 for
        16-bit greyscale PNGs, int32 for Pillow's mode ``I``; a 1-bit image
        (Pillow's mode ``1``, a bool array) gives uint8 0/1.  Writable and
        C-contiguous.

    Raises
    ------
    ValueError
        One line naming ``what`` and the file: missing, unreadable or
        damaged, or an image of several channels (colour, or with an alpha
        channel: a colour-coded visualisation is not a label map);
        :class:`ImageTooLargeError` if it has more than ``max_pixels``
        pixels.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from PIL import Image
    >>> im = Image.fromarray(np.array([[0, 1], [2, 1]], np.uint8), "P")
    >>> im.putpalette([255, 255, 255, 200, 0, 0, 0, 0, 200])  # index 0 is white
    >>> with tempfile.TemporaryDirectory() as d:
    ...     im.save(d + "/a.png")
    ...     read_label_map(d + "/a.png")
    array([[0, 1],
           [2, 1]], dtype=uint8)
    """
    max_pixels = check_max_pixels(max_pixels)
    name, data = _source_bytes(path, what)
    return _image_values(name, data, what, max_pixels, True)


def read_mask_file(path, what: str = "mask", max_pixels: Optional[int] = DEFAULT_MAX_PIXELS):
    """One binary mask from a file: an image as an (H, W) uint8 array of
    0/1, or a ``.json`` file holding a COCO RLE ``{"size", "counts"}`` (or an
    object with such a ``"segmentation"``) as that dict.

    An image's foreground is where any value of Pillow's
    ``np.array(Image.open(path))`` is nonzero: the index of a palette image
    (whatever its colour), the sample of a greyscale image (a 1-bit image's
    1s), any channel of a colour image (alpha included when the file has an
    alpha channel; a tRNS chunk adds none, so black stays background).  An
    image of more than ``max_pixels`` pixels is refused from its header
    (:func:`check_image_file`), before decoding.

    Raises
    ------
    ValueError
        One line naming ``what`` and the path: no such file, not valid JSON
        or not an RLE, not an image Pillow can read, too large.
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
    name, data = _source_bytes(source, f"{what} image")
    img = _image_values(name, data, f"{what} image", max_pixels, False)
    if img.ndim == 3:
        img = img.any(axis=2)
    return (img != 0).astype(np.uint8)
