"""Semantic segmentation: mIoU and Boundary IoU per class on label maps.

:class:`SemanticEvaluator` accumulates images (``process``) and reports the
metrics (``evaluate``); :func:`evaluate_folders` does the same for two folders
of PNG label maps.  See :mod:`boundary_api.semantic.evaluator` for the
definitions.
"""
from .evaluator import SemanticEvaluator, evaluate_folders, pair_label_maps
from .labelmaps import read_label_map

__all__ = ["SemanticEvaluator", "evaluate_folders", "pair_label_maps", "read_label_map"]
