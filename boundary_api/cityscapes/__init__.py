"""Cityscapes instance segmentation: AP and Boundary AP from cityscapesScripts' files
and rules (``evaluation``; the files, the label table and the protocol's constants in
``files``)."""
from .evaluation import evaluate_arrays, evaluate_cityscapes, evaluate_img_lists, print_results
from .files import (CLASSES, OVERLAPS, CityscapesFileNotFoundError, CityscapesInputError, CityscapesKeyError,
                    find_ground_truth, find_predictions, read_prediction_file)

__all__ = ["evaluate_cityscapes", "evaluate_img_lists", "CityscapesInputError", "CityscapesKeyError",
           "CityscapesFileNotFoundError", "evaluate_arrays", "find_ground_truth", "find_predictions",
           "read_prediction_file", "print_results", "CLASSES", "OVERLAPS"]
