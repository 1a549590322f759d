"""COCO instance segmentation: pycocotools' ``COCO`` and ``COCOeval`` with
``iouType='boundary'`` (Boundary AP), on the shared instance engine
(:mod:`boundary_api.instance`)."""
from .cocoeval import COCOeval
from .dataset import COCO

__all__ = ["COCO", "COCOeval"]
