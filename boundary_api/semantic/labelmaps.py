"""Reading label maps: single-channel PNGs of class ids."""
from __future__ import annotations

import os
from typing import Optional

import numpy as np

from ..masks import imagefiles
from ..masks.imagefiles import DEFAULT_MAX_PIXELS

__all__ = ["read_label_map", "read_class_names"]


def read_label_map(path, max_pixels: Optional[int] = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """Read a label map as an (H, W) array of class ids: the values of
    Pillow's ``np.array(Image.open(path))``
    (:func:`boundary_api.masks.imagefiles.read_label_map`).

    Parameters
    ----------
    path : str or os.PathLike
        A single-channel image: palette (``P``, the indices are the ids, as
        in PASCAL VOC), 1-, 8- or 16-bit grey, 32-bit integers.
    max_pixels : int or None, optional
        Largest ``width * height`` read (default 2**27), checked from the
        file's header before decoding: a guard against decompression bombs.
        ``None``: no limit.

    Returns
    -------
    (H, W) ndarray of uint8, uint16 or int32
        A 1-bit image gives uint8 0/1.

    Raises
    ------
    ValueError
        If the file is missing or unreadable, or is a colour image (a
        colour-coded visualisation instead of a label map); an
        :class:`~boundary_api.masks.imagefiles.ImageTooLargeError` if it has
        more than ``max_pixels`` pixels.
    """
    return imagefiles.read_label_map(os.fspath(path), max_pixels, "label map")


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
