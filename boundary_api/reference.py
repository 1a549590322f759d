"""Compatibility path: the oracle lives in :mod:`boundary_api.masks.reference`."""
from .masks.reference import boundary_iou, mask_to_boundary  # noqa: F401
