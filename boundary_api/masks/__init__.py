"""The mask layer every evaluator shares: boundary extraction, Boundary IoU of mask pairs,
the run-length kernels (``_mask``) and the plain NumPy/OpenCV oracle (``reference``)."""
from .boundary import boundary_iou, dilation_pixels, mask_to_boundary, rle_to_boundary

__all__ = ["boundary_iou", "dilation_pixels", "mask_to_boundary", "rle_to_boundary"]
