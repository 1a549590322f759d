"""The diagnostics of a ground-truth file and a results file: read, checked and
analysed by one call (what ``boundary-eval analyze`` and ``boundary-eval
report`` run)."""
from __future__ import annotations

import contextlib
import io
import time
from typing import Tuple

from .._io import read_json, read_once

__all__ = ["load_files", "analyze_files"]


def load_files(gt, dt, *, iou_type: str = "boundary") -> Tuple[object, object]:
    """A COCO ground truth and its results, read and checked, as
    :class:`~boundary_api.coco.COCO` objects (nothing printed).

    Parameters
    ----------
    gt : str or path-like
        COCO instances JSON (gzip content too; a pipe is read once).
    dt : str or path-like
        Results with segmentations (compressed RLE).
    iou_type : {"boundary", "segm"}
        What the analysis will measure (named in the messages).

    Returns
    -------
    (COCO, COCO)
        The ground truth and the results (``gt.loadRes``).

    Raises
    ------
    ValueError
        (also of the class pycocotools raises) naming the file and the
        problem: unreadable or invalid files, results that look like a ground
        truth, categories the ground truth lacks, box-only results.
    """
    from ..coco.dataset import COCO
    from ..instance._checks import check_instances_dataset
    from ..instance._files import check_ground_truth_masks, check_results_file

    gt = read_once(gt, "ground truth")
    dt = read_once(dt, "results")
    gt_name, dt_name = str(gt), str(dt)
    gt_data = read_json(gt, "ground truth")
    check_instances_dataset(gt_data, gt_name)
    check_ground_truth_masks(gt_data, gt_name, iou_type)
    dt_data = read_json(dt, "results")
    check_results_file(dt_data, dt_name, gt_data, gt_name, iou_type)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_gt = COCO.from_dataset(gt_data, gt_name, strict=True)
        coco_dt = coco_gt.loadRes(dt_data, _source=dt_name, strict=True)
    if getattr(coco_dt, "_segm_from_bbox", False):
        raise ValueError(f"{dt_name}: results have no 'segmentation' (boxes only); the analysis needs masks")
    return coco_gt, coco_dt


def analyze_files(gt, dt, *, iou_type: str = "boundary", dilation_ratio: float = 0.02,
                  pos_threshold: float = 0.5, background_threshold: float = 0.1,
                  max_dets: int = 100, confusion_iou: float = 0.5, calibration_bins: int = 10,
                  lrp_threshold: float = 0.5, num_threads=None) -> dict:
    """TIDE's error breakdown with the boundary error (:func:`~.tide.analyze_errors`)
    and the boundary coverage of the ground truth (:func:`~.tide.boundary_coverage`)
    of two files, read and checked by :func:`load_files`.

    Parameters
    ----------
    gt, dt : str or path-like
        The ground truth and results files (see :func:`load_files`).
    iou_type : {"boundary", "segm"}
        ``min(mask IoU, boundary IoU)`` or mask IoU.
    dilation_ratio, pos_threshold, background_threshold, max_dets
        As for :func:`~.tide.analyze_errors`.
    confusion_iou, calibration_bins, lrp_threshold, num_threads
        Of the confusion matrix and calibration (IoU threshold, bins) and of
        LRP (true-positive threshold): :func:`~.run.diagnose_datasets`.

    Returns
    -------
    dict
        ``{"errors": analyze_errors' result, "coverage": boundary_coverage's
        result, "diagnostics": {"confusion", "calibration", "lrp"}, "gt": the
        ground truth COCO, "dt": the results COCO, "seconds": wall time}``.

    Raises
    ------
    ValueError
        Bad files (see :func:`load_files`) or ``background_threshold`` above
        ``pos_threshold``.
    """
    from .run import diagnose_datasets
    from .tide import analyze_errors, boundary_coverage

    if pos_threshold < background_threshold:
        raise ValueError(f"background_threshold ({background_threshold}) is above pos_threshold "
                         f"({pos_threshold})")
    tic = time.time()
    coco_gt, coco_dt = load_files(gt, dt, iou_type=iou_type)
    errors = analyze_errors(coco_gt, coco_dt, iou=iou_type, dilation_ratio=dilation_ratio,
                            pos_threshold=pos_threshold, background_threshold=background_threshold,
                            max_dets=max_dets)
    coverage = boundary_coverage(coco_gt, dilation_ratio)
    diagnostics = diagnose_datasets(coco_gt, coco_dt, iou_type, dilation_ratio, max_dets, confusion_iou,
                                    calibration_bins, lrp_threshold, num_threads)
    return {"errors": errors, "coverage": coverage, "diagnostics": diagnostics, "gt": coco_gt, "dt": coco_dt,
            "seconds": time.time() - tic}
