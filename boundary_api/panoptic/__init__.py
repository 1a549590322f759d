"""Panoptic segmentation (Boundary PQ): COCO panoptic PNG/JSON reading and ``pq_compute``,
with the COCO panoptic API's rules and the boundary term on the shared mask kernels."""
from .idmaps import id2rgb, read_panoptic_png, rgb2id, segment_boundaries
from ._checks import PanopticKeyError, default_folder
from .pq import pq_compute
from .files import pq_compute_files

__all__ = ["pq_compute", "pq_compute_files", "default_folder", "PanopticKeyError", "rgb2id", "id2rgb", "read_panoptic_png", "segment_boundaries"]
