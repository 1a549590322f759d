"""Reading label maps: single-channel PNGs of class ids."""
from __future__ import annotations

import os
from typing import Optional

import numpy as np
from PIL import Image

from ..masks.imagefiles import DEFAULT_MAX_PIXELS, ImageTooLargeError, check_image_file, check_max_pixels

__all__ = ["read_label_map", "read_class_names"]

# PIL modes whose pixel values are class ids ("P": palette indices, as in PASCAL VOC)
_LABEL_MODES = {"L", "P", "I", "I;16", "I;16B", "I;16L"}


def read_label_map(path, max_pixels: Optional[int] = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """Read a PNG label map as an (H, W) array of class ids.

    Parameters
    ----------
    path : str or os.PathLike
        A single-channel image: 8-bit grey (``L``), palette (``P``, the
        indices are the ids), or 16/32-bit grey.
    max_pixels : int or None, optional
        Largest ``width * height`` read (default 2**27), checked from the
        file's header before decoding: a guard against decompression bombs.
        ``None``: no limit.

    Returns
    -------
    (H, W) ndarray of uint8, uint16 or int32

    Raises
    ------
    ValueError
        If the file is missing or unreadable, or is a colour image (a
        colour-coded visualisation instead of a label map); an
        :class:`~boundary_api.masks.imagefiles.ImageTooLargeError` if it has
        more than ``max_pixels`` pixels.
    """
    fspath = os.fspath(path)
    max_pixels = check_max_pixels(max_pixels)
    if not os.path.isfile(fspath):
        raise ValueError(f"label map not found: {fspath}")
    check_image_file(fspath, "label map", max_pixels)
    try:
        with Image.open(fspath) as img:
            mode = img.mode
            if mode not in _LABEL_MODES:
                raise ValueError(f"{fspath}: expected a single-channel label map (class ids), got a "
                                 f"{mode} image with {len(img.getbands())} channels")
            arr = np.asarray(img)
    except ValueError:
        raise
    except Image.DecompressionBombError as exc:  # Pillow's own limit, with max_pixels=None
        raise ImageTooLargeError(f"label map {fspath} is too large to read: {exc}") from None
    except MemoryError:
        raise ImageTooLargeError(f"label map {fspath} is too large to read into memory") from None
    except (OSError, SyntaxError) as exc:
        raise ValueError(f"cannot read label map {fspath}: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(f"{fspath}: expected a single-channel label map, got an array of shape {arr.shape}")
    return arr


def read_class_names(path, num_classes: int, what: str = "--class-names") -> list:
    """Class names from a text file (one name a line, trailing blank lines
    left out, each name stripped) or a ``.json`` file holding a list of
    strings; exactly ``num_classes`` of them.  A pipe (``/dev/stdin``,
    ``<(...)``) is read once and is a JSON list when its content opens one.

    Raises
    ------
    ValueError
        One line starting with ``what``: no such file, unreadable, not a list
        of strings, or another number of names than ``num_classes``.
    """
    from .._io import InputBytes, read_json, read_once

    source = read_once(path, what)  # a pipe (/dev/stdin, <(...)) is read once
    if isinstance(source, InputBytes):
        path = source.name
        is_json = source.data.lstrip()[:1] == b"["  # no name to go by: a JSON list or lines of text
    else:
        path = os.fspath(path)
        if not os.path.isfile(path):
            raise ValueError(f"{what}: file not found: {path}")
        is_json = path.endswith(".json")
    if is_json:
        names = read_json(source, what)
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ValueError(f"{what}: {path} must hold a JSON list of strings")
    else:
        try:
            if isinstance(source, InputBytes):
                text = source.data.decode("utf-8")
            else:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"{what}: cannot read {path}: {exc}") from None
        lines = text.splitlines()
        while lines and not lines[-1].strip():
            lines.pop()
        names = [line.strip() for line in lines]
    if len(names) != num_classes:
        raise ValueError(f"{what}: {path} has {len(names)} names but --num-classes is {num_classes}")
    return names
