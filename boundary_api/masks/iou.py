"""``boundary_api.boundary_iou``: Boundary IoU of every pair of two lists of masks, the
matrix oriented ground truth by prediction (the measures' pairwise kernel underneath)."""
import numpy as np

from .boundary import _as_mask_list, check_dilation_ratio
from .measures import boundary_iou as pairwise_boundary_iou

__all__ = ["boundary_iou"]


def boundary_iou(gt, dt, dilation_ratio: float = 0.02):
    """Boundary IoU between ground truth and predicted masks.

    ``|G_b & P_b| / |G_b | P_b|`` where ``X_b`` is the boundary of ``X``
    (:func:`mask_to_boundary`); 0 when both boundaries are empty.  Each mask's
    boundary is computed on its own, whatever else is in the list.

    Parameters
    ----------
    gt, dt : array, RLE dict, or a sequence of them
        One mask (an ``(H, W)`` array, nonzero = foreground, or a COCO RLE
        dict), an ``(N, H, W)`` array of ``N`` masks, or a list/tuple of
        ``(H, W)`` arrays and/or RLE dicts.  Every mask must have the same size.
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02).

    Returns
    -------
    float or ndarray
        A float when ``gt`` and ``dt`` are single masks.  Otherwise a float64
        array of shape ``(len(gt), len(dt))`` -- **rows are ground truths,
        columns are predictions**: ``out[i, j]`` is the Boundary IoU of
        ``gt[i]`` and ``dt[j]`` (a single mask counts as a list of one).
        Note that ``pycocotools.mask.iou(dt, gt, iscrowd)`` is oriented the
        other way, ``(len(dt), len(gt))``.

    Examples
    --------
    >>> a = np.zeros((4, 4), np.uint8); a[0:2, 1] = 1
    >>> b = np.zeros((4, 4), np.uint8); b[2:4, 1] = 1
    >>> boundary_iou([a, b], [b])
    array([[0.],
           [1.]])
    """
    ratio = check_dilation_ratio(dilation_ratio)
    g_items, _ = _as_mask_list(gt, "gt")
    d_items, _ = _as_mask_list(dt, "dt")
    sizes = {tuple(x["size"]) if isinstance(x, dict) and "size" in x else np.shape(x) for x in g_items + d_items}
    if len(sizes) > 1:
        raise ValueError(f"all masks must have the same size, got {sorted(sizes)}")
    return pairwise_boundary_iou(gt, dt, ratio)
