"""Plain NumPy/OpenCV implementation of the boundary definition.

This module is the oracle the Cython kernels are tested against.  It is kept
deliberately literal: decode the whole image, pad, erode with OpenCV, crop,
subtract.  Do not use it for evaluation; it is slow.
"""
from __future__ import annotations

import cv2
import numpy as np

from .boundary import dilation_pixels

__all__ = ["mask_to_boundary", "boundary_iou"]


def mask_to_boundary(mask: np.ndarray, dilation_ratio: float = 0.02) -> np.ndarray:
    """Boundary of a binary mask, by the definition.

    ``boundary = mask - erode(mask)``, where the erosion is ``d`` iterations of
    a 3x3 ones kernel on the mask padded with one pixel of zeros, so that
    pixels outside the image count as background.

    Parameters
    ----------
    mask : (H, W) array
        Binary mask; nonzero is foreground.
    dilation_ratio : float
        ``d`` is this fraction of the image diagonal (see :func:`dilation_pixels`).

    Returns
    -------
    (H, W) uint8 array with ones on the boundary.
    """
    m = (np.asarray(mask) != 0).astype(np.uint8)
    h, w = m.shape
    # more than max(h, w) iterations erode nothing further (the image is gone)
    d = min(dilation_pixels(h, w, dilation_ratio), max(h, w))
    padded = cv2.copyMakeBorder(m, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    eroded = cv2.erode(padded, np.ones((3, 3), np.uint8), iterations=d)
    return m - eroded[1 : h + 1, 1 : w + 1]


def boundary_iou(gt: np.ndarray, dt: np.ndarray, dilation_ratio: float = 0.02) -> float:
    """Boundary IoU of two binary masks of the same shape, by the definition."""
    g = mask_to_boundary(gt, dilation_ratio).astype(bool)
    p = mask_to_boundary(dt, dilation_ratio).astype(bool)
    union = np.logical_or(g, p).sum()
    return float(np.logical_and(g, p).sum() / union) if union else 0.0
