"""Semantic segmentation: mIoU and Boundary IoU per class on label maps (SemanticEvaluator,
evaluate_folders; definitions in evaluator), and the NumPy oracle (reference)."""
from .evaluator import SemanticEvaluator, evaluate_folders, pair_label_maps
from .labelmaps import read_class_names, read_label_map

__all__ = ["SemanticEvaluator", "evaluate_folders", "pair_label_maps", "read_label_map", "read_class_names"]
