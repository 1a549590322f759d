"""The boundary and IoU step on masks that are torch tensors, on their own device.

Masks that a model leaves on a GPU need not come to the host to be scored:
this module erodes them there (a min-pool, the exact definition of
:mod:`boundary_api.masks.boundary`: a ``(2d+1) x (2d+1)`` square, pixels
outside the image counting as background), and counts pixels there
(intersections as matrix products, exact: see :func:`intersections`).  Only
small integer tables come back: per mask its area (and boundary area), per
(detection, ground truth) pair its intersection (and boundary intersection).
:func:`iou_matrix` turns them into the IoUs pycocotools' kernels and
:func:`boundary_api.masks._iou.iou_pairs` compute, bit for bit.

torch is imported when a function here is first called, never when
``boundary_api`` is imported.
"""
from __future__ import annotations

from typing import Dict, Optional

import numpy as np

from .boundary import dilation_pixels

__all__ = ["is_torch_tensor", "erode", "boundaries", "intersections", "mask_counts", "iou_matrix"]

#: pixels summed in one float32 product: every partial sum is an integer of
#: at most 2**24, which float32 holds exactly whatever the summation order
_CHUNK = 1 << 24
#: masks eroded at once (bounds the float copies made on the device)
_BATCH = 16


def is_torch_tensor(x) -> bool:
    """Whether ``x`` is a torch tensor (without importing torch)."""
    t = type(x)
    return t.__module__.startswith("torch") and hasattr(x, "device") and hasattr(x, "dim")


def _torch():
    import torch

    return torch


def _float_dtype(device):
    torch = _torch()
    # 0/1 and their minima are exact in any float type; half halves the memory where it is fast
    return torch.float16 if device.type == "cuda" else torch.float32


def erode(masks, d: int):
    """Erosion of ``(N, H, W)`` masks by a ``(2d+1) x (2d+1)`` square, pixels
    outside the image counting as background.

    Parameters
    ----------
    masks : torch.Tensor
        ``(N, H, W)``, any dtype; nonzero is foreground.
    d : int
        Radius, >= 0.

    Returns
    -------
    torch.Tensor
        ``(N, H, W)`` bool, on the masks' device.

    Notes
    -----
    A min over the square is a min over its rows, then over its columns; each
    is a 1-D max-pool of the negated masks, zero-padded by ``d`` (the padding
    is the background outside the image).
    """
    torch = _torch()
    import torch.nn.functional as F

    if masks.dim() != 3:
        raise ValueError(f"masks must be (N, H, W), got shape {tuple(masks.shape)}")
    d = int(d)
    if d < 0:
        raise ValueError(f"d must be >= 0, got {d}")
    n, h, w = masks.shape
    out = torch.empty((n, h, w), dtype=torch.bool, device=masks.device)
    if n == 0 or d == 0:
        out.copy_(masks != 0)
        return out
    k = 2 * d + 1
    dtype = _float_dtype(masks.device)
    for lo in range(0, n, _BATCH):
        x = (masks[lo:lo + _BATCH] != 0).to(dtype).unsqueeze(1)      # (b, 1, H, W)
        x = F.pad(x, (d, d, 0, 0))                                     # background left and right
        x = -F.max_pool2d(-x, kernel_size=(1, k), stride=1)            # min along rows
        x = F.pad(x, (0, 0, d, d))                                     # background above and below
        x = -F.max_pool2d(-x, kernel_size=(k, 1), stride=1)            # min along columns
        out[lo:lo + _BATCH] = x.squeeze(1) > 0
    return out


def boundaries(masks, dilation_ratio: float = 0.02):
    """Boundaries of ``(N, H, W)`` masks: ``mask AND NOT erode(mask, d)`` with
    ``d = dilation_pixels(H, W, dilation_ratio)`` (bool, on the masks' device)."""
    if masks.dim() != 3:
        raise ValueError(f"masks must be (N, H, W), got shape {tuple(masks.shape)}")
    h, w = int(masks.shape[1]), int(masks.shape[2])
    # a larger d than the image's longer side erodes nothing further
    d = min(dilation_pixels(h, w, dilation_ratio), max(h, w))
    m = masks != 0
    return m & ~erode(m, d)


def intersections(a, b) -> np.ndarray:
    """Pixels shared by every pair of masks of ``a`` ``(N, H, W)`` and ``b``
    ``(M, H, W)``: an ``(N, M)`` int64 array on the host.

    Counted as float32 matrix products over at most 2**24 pixels at a time
    (every partial sum is then an exact integer), the blocks added as int64.
    """
    torch = _torch()
    n, m = int(a.shape[0]), int(b.shape[0])
    if a.shape[1:] != b.shape[1:]:
        raise ValueError(f"masks of different sizes: {tuple(a.shape[1:])} and {tuple(b.shape[1:])}")
    if n == 0 or m == 0:
        return np.zeros((n, m), np.int64)
    fa = a.reshape(n, -1)
    fb = b.reshape(m, -1)
    total = torch.zeros((n, m), dtype=torch.int64, device=a.device)
    for lo in range(0, fa.shape[1], _CHUNK):
        x = (fa[:, lo:lo + _CHUNK] != 0).to(torch.float32)
        y = (fb[:, lo:lo + _CHUNK] != 0).to(torch.float32)
        total += (x @ y.T).to(torch.int64)
    return total.cpu().numpy()


def _areas(masks) -> np.ndarray:
    torch = _torch()
    return (masks != 0).flatten(1).sum(dim=1, dtype=torch.int64).cpu().numpy()


def mask_counts(dt_masks, gt_masks, dilation_ratio: Optional[float] = None) -> Dict[str, np.ndarray]:
    """The pixel counts the IoU step needs, computed on the masks' device.

    Parameters
    ----------
    dt_masks, gt_masks : torch.Tensor
        ``(D, H, W)`` and ``(G, H, W)``, on one device.
    dilation_ratio : float, optional
        Also count boundaries (for Boundary IoU) of that width.

    Returns
    -------
    dict of ndarray (host)
        ``dt_area`` (D,), ``gt_area`` (G,), ``inter`` (D, G); with a ratio also
        ``dt_barea``, ``gt_barea``, ``binter``.  All int64.
    """
    out = {"dt_area": _areas(dt_masks), "gt_area": _areas(gt_masks),
           "inter": intersections(dt_masks, gt_masks)}
    if dilation_ratio is not None:
        db = boundaries(dt_masks, dilation_ratio)
        gb = boundaries(gt_masks, dilation_ratio)
        out.update(dt_barea=_areas(db), gt_barea=_areas(gb), binter=intersections(db, gb))
    return out


def iou_matrix(counts: Dict[str, np.ndarray], gt_crowd, boundary: bool) -> np.ndarray:
    """``(D, G)`` IoUs from :func:`mask_counts`, as the RLE kernels give them.

    Mask IoU ``i / (a_d + a_g - i)``, against a crowd ground truth ``i / a_d``,
    0 where the masks share no pixel.  With ``boundary``, against a non-crowd
    ground truth the smaller of that and the boundary IoU (0 where the
    boundaries share no pixel).
    """
    inter = counts["inter"]
    da = counts["dt_area"][:, None]
    ga = counts["gt_area"][None, :]
    crowd = np.asarray(gt_crowd, bool).reshape(1, -1)
    union = np.where(crowd, da, da + ga - inter)
    with np.errstate(divide="ignore", invalid="ignore"):
        iou = np.where(inter > 0, inter.astype(np.float64) / np.maximum(union, 1).astype(np.float64), 0.0)
        if boundary:
            bi = counts["binter"]
            bu = counts["dt_barea"][:, None] + counts["gt_barea"][None, :] - bi
            biou = np.where(bi > 0, bi.astype(np.float64) / np.maximum(bu, 1).astype(np.float64), 0.0)
            iou = np.where(crowd, iou, np.minimum(iou, biou))
    return np.ascontiguousarray(iou, np.float64)
