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
    h, w = np.shape(mask)
    return boundary_of_width(mask, dilation_pixels(h, w, dilation_ratio))


def boundary_of_width(mask: np.ndarray, d: int) -> np.ndarray:
    """:func:`mask_to_boundary` for an erosion of ``d`` pixels given directly
    (``d >= 1``; any larger value is allowed: the whole mask is then its
    boundary)."""
    m = (np.asarray(mask) != 0).astype(np.uint8)
    h, w = m.shape
    # more than max(h, w) iterations erode nothing further (the image is gone)
    d = min(int(d), max(h, w))
    padded = cv2.copyMakeBorder(m, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    eroded = cv2.erode(padded, np.ones((3, 3), np.uint8), iterations=d)
    return m - eroded[1 : h + 1, 1 : w + 1]


def boundary_iou(gt: np.ndarray, dt: np.ndarray, dilation_ratio: float = 0.02) -> float:
    """Boundary IoU of two binary masks of the same shape, by the definition."""
    g = mask_to_boundary(gt, dilation_ratio).astype(bool)
    p = mask_to_boundary(dt, dilation_ratio).astype(bool)
    union = np.logical_or(g, p).sum()
    return float(np.logical_and(g, p).sum() / union) if union else 0.0


# --------------------------------------------------------------------------
# The segmentation measures of boundary_api.masks.measures, by the definitions
# (whole images, OpenCV morphology; conventions documented there: 0/0 = 0).
# --------------------------------------------------------------------------

def _binary(mask) -> np.ndarray:
    return (np.asarray(mask) != 0).astype(np.uint8)


def _ratio(num, den) -> float:
    return float(num / den) if den else 0.0


def contour(mask: np.ndarray) -> np.ndarray:
    """``X_1``: mask pixels with a background 8-neighbour (outside = background), uint8."""
    m = _binary(mask)
    h, w = m.shape
    padded = cv2.copyMakeBorder(m, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
    eroded = cv2.erode(padded, np.ones((3, 3), np.uint8), iterations=1)
    return m - eroded[1 : h + 1, 1 : w + 1]


def band(mask: np.ndarray, d: int) -> np.ndarray:
    """``X_d``: the contour dilated by a ``(2d+1) x (2d+1)`` square, clipped to the image."""
    c = contour(mask)
    h, w = c.shape
    padded = cv2.copyMakeBorder(c, d, d, d, d, cv2.BORDER_CONSTANT, value=0)
    dil = cv2.dilate(padded, np.ones((2 * d + 1, 2 * d + 1), np.uint8))
    return dil[d : d + h, d : d + w]


def pixel_accuracy(gt: np.ndarray, dt: np.ndarray) -> float:
    """``|G & P| / |G|``."""
    g, p = _binary(gt).astype(bool), _binary(dt).astype(bool)
    return _ratio((g & p).sum(), g.sum())


def mask_iou(gt: np.ndarray, dt: np.ndarray) -> float:
    """``|G & P| / |G | P|``."""
    g, p = _binary(gt).astype(bool), _binary(dt).astype(bool)
    return _ratio((g & p).sum(), (g | p).sum())


def trimap_iou(gt: np.ndarray, dt: np.ndarray, dilation_ratio: float = 0.02) -> float:
    """``|G_d & G & P| / |G_d & (G | P)|``."""
    g, p = _binary(gt).astype(bool), _binary(dt).astype(bool)
    gd = band(gt, dilation_pixels(g.shape[0], g.shape[1], dilation_ratio)).astype(bool)
    return _ratio((gd & g & p).sum(), (gd & (g | p)).sum())


def _f_at(gt, dt, d: int) -> float:
    g1, p1 = contour(gt).astype(bool), contour(dt).astype(bool)
    gd, pd = band(gt, d).astype(bool), band(dt, d).astype(bool)
    prec = _ratio((p1 & gd).sum(), p1.sum())
    rec = _ratio((g1 & pd).sum(), g1.sum())
    return _ratio(2 * prec * rec, prec + rec)


def f_measure(gt: np.ndarray, dt: np.ndarray, dilation_ratio: float = 0.02) -> float:
    """``2 p r / (p + r)``, ``p = |P_1 & G_d| / |P_1|``, ``r = |G_1 & P_d| / |G_1|``."""
    h, w = np.asarray(gt).shape
    return _f_at(gt, dt, dilation_pixels(h, w, dilation_ratio))


def mf_measure(gt: np.ndarray, dt: np.ndarray, dilation_ratios) -> float:
    """Mean of the F-measure over ``dilation_ratios``."""
    h, w = np.asarray(gt).shape
    return float(np.mean([_f_at(gt, dt, dilation_pixels(h, w, r)) for r in dilation_ratios]))


def min_mask_boundary_iou(gt: np.ndarray, dt: np.ndarray, dilation_ratio: float = 0.02) -> float:
    """``min(Mask IoU, Boundary IoU)``."""
    return min(mask_iou(gt, dt), boundary_iou(gt, dt, dilation_ratio))


def grid_cells(mask: np.ndarray, delta: int) -> np.ndarray:
    """``s(X, delta)``: the ``delta x delta`` cells (grid from the top-left corner, partial
    cells at the right and bottom edges kept) holding a contour pixel, as a bool grid."""
    c = contour(mask).astype(bool)
    h, w = c.shape
    hc, wc = -(-h // delta), -(-w // delta)
    padded = np.zeros((hc * delta, wc * delta), bool)
    padded[:h, :w] = c
    return padded.reshape(hc, delta, wc, delta).any(axis=(1, 3))


def multiscale_iou(gt: np.ndarray, dt: np.ndarray, num_scales: int = 10) -> float:
    """Area under ``r(delta) = n(s(G) & s(P)) / n(s(G))`` for ``delta = 2^k``, ``k < num_scales``,
    by trapezoids with spacing ``1 / (num_scales - 1)``."""
    r = []
    for k in range(num_scales):
        sg, sp = grid_cells(gt, 2 ** k), grid_cells(dt, 2 ** k)
        r.append(_ratio((sg & sp).sum(), sg.sum()))
    return sum((r[k] + r[k + 1]) / 2 for k in range(num_scales - 1)) / (num_scales - 1)


def measures(gt: np.ndarray, dt: np.ndarray, dilation_ratio: float = 0.02, mf_ratios=None,
             num_scales: int = 10) -> dict:
    """Every measure of :func:`boundary_api.masks.measures.measures`, by the definitions."""
    from .measures import MF_DILATION_RATIOS

    return {
        "pixel_accuracy": pixel_accuracy(gt, dt),
        "mask_iou": mask_iou(gt, dt),
        "trimap_iou": trimap_iou(gt, dt, dilation_ratio),
        "f_measure": f_measure(gt, dt, dilation_ratio),
        "mf_measure": mf_measure(gt, dt, MF_DILATION_RATIOS if mf_ratios is None else mf_ratios),
        "boundary_iou": boundary_iou(gt, dt, dilation_ratio),
        "min_mask_boundary_iou": min_mask_boundary_iou(gt, dt, dilation_ratio),
        "multiscale_iou": multiscale_iou(gt, dt, num_scales),
    }
