"""LVIS instance segmentation: lvis' ``LVIS``, ``LVISResults`` and ``LVISEval`` with
``iou_type='boundary'``, on the shared instance engine (:mod:`boundary_api.instance`).
Importing this package imports lvis (without its plotting module)."""
from .dataset import LVIS, LVISResults
from .eval import LVISEval

__all__ = ["LVIS", "LVISResults", "LVISEval"]
