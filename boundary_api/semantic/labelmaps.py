"""Reading label maps: single-channel PNGs of class ids."""
from __future__ import annotations

import os

import numpy as np
from PIL import Image

__all__ = ["read_label_map"]

# PIL modes whose pixel values are class ids ("P": palette indices, as in PASCAL VOC)
_LABEL_MODES = {"L", "P", "I", "I;16", "I;16B", "I;16L"}


def read_label_map(path) -> np.ndarray:
    """Read a PNG label map as an (H, W) array of class ids.

    Parameters
    ----------
    path : str or os.PathLike
        A single-channel image: 8-bit grey (``L``), palette (``P``, the
        indices are the ids), or 16/32-bit grey.

    Returns
    -------
    (H, W) ndarray of uint8, uint16 or int32

    Raises
    ------
    ValueError
        If the file is missing or unreadable, or is a colour image (a
        colour-coded visualisation instead of a label map).
    """
    fspath = os.fspath(path)
    if not os.path.isfile(fspath):
        raise ValueError(f"label map not found: {fspath}")
    try:
        with Image.open(fspath) as img:
            mode = img.mode
            if mode not in _LABEL_MODES:
                raise ValueError(f"{fspath}: expected a single-channel label map (class ids), got a "
                                 f"{mode} image with {len(img.getbands())} channels")
            arr = np.asarray(img)
    except ValueError:
        raise
    except (OSError, SyntaxError) as exc:
        raise ValueError(f"cannot read label map {fspath}: {exc}") from None
    if arr.ndim != 2:
        raise ValueError(f"{fspath}: expected a single-channel label map, got an array of shape {arr.shape}")
    return arr
