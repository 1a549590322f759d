"""The diagnostics of a ground-truth file and a results file: read, checked and
analysed by one call (what ``boundary-eval analyze`` and ``boundary-eval
report`` run)."""
from __future__ import annotations

import contextlib
import io
import time
from typing import Dict, Optional, Tuple

from .._io import read_once

__all__ = ["IOU_TYPES", "load_files", "analyze_files"]

#: the detections per image each dataset keeps by default (COCO's maxDets, LVIS' max_dets)
COCO_MAX_DETS, LVIS_MAX_DETS = 100, 300

#: what analyze_files measures
IOU_TYPES = ("boundary", "segm", "bbox")


def load_files(gt, dt, *, iou_type: str = "boundary", max_dets: Optional[int] = None) -> Tuple[object, object]:
    """A ground truth (COCO or LVIS, told apart by its content) and its
    results, read and checked by :mod:`boundary_api.instance._files` as
    :func:`boundary_api.evaluate.evaluate_files` reads them (nothing printed).

    Parameters
    ----------
    gt : str or path-like
        COCO instances JSON or an LVIS JSON (gzip content too; a pipe is read once).
    dt : str or path-like
        Results: segmentations (compressed RLE) for boundary and segm, boxes
        suffice for bbox.
    iou_type : {"boundary", "segm", "bbox"}
        What the analysis will measure (named in the messages).
    max_dets : int, optional
        LVIS: the detections ``LVISResults`` keeps per image (highest
        scores; default LVIS' 300).  COCO results are kept whole (the
        evaluation's ``maxDets`` limits them).

    Returns
    -------
    (COCO, COCO) or (LVIS, LVISResults)
        The ground truth and the results.

    Raises
    ------
    ValueError
        (also of the class pycocotools raises) naming the file and the
        problem: unreadable or invalid files, results that look like a ground
        truth, categories the ground truth lacks, box-only results for
        boundary or segm.
    """
    from ..coco.dataset import COCO
    from ..instance._files import input_name, read_ground_truth_file, read_results_file
    from ..lvis.dataset import LVIS, LVISResults

    if iou_type not in IOU_TYPES:
        raise ValueError(f"iou_type must be boundary, segm or bbox, got {iou_type!r}")
    gt = read_once(gt, "ground truth")
    dt = read_once(dt, "results")
    gt_name, dt_name = input_name(gt), input_name(dt)
    gt_data, lvis = read_ground_truth_file(gt, iou_type)  # the reader evaluate_files uses
    dt_data = read_results_file(dt, gt_data, gt_name, iou_type)
    with contextlib.redirect_stdout(io.StringIO()):
        if lvis:
            lvis_gt = LVIS.from_dataset(gt_data, gt_name, strict=True)
            return lvis_gt, LVISResults(lvis_gt, dt_data, max_dets=LVIS_MAX_DETS if max_dets is None else max_dets,
                                        strict=True)
        coco_gt = COCO.from_dataset(gt_data, gt_name, strict=True)
        coco_dt = coco_gt.loadRes(dt_data, _source=dt_name, strict=True)
    if iou_type != "bbox" and getattr(coco_dt, "_segm_from_bbox", False):
        raise ValueError(f"{dt_name}: results have no 'segmentation' (boxes only); --iou-type {iou_type} "
                         "needs masks (--iou-type bbox measures boxes)")
    return coco_gt, coco_dt


def analyze_files(gt, dt, *, iou_type: str = "boundary", dilation_ratio: float = 0.02,
                  pos_threshold: float = 0.5, background_threshold: float = 0.1,
                  max_dets: Optional[int] = None, confusion_iou: float = 0.5, calibration_bins: int = 10,
                  lrp_threshold: float = 0.5, num_threads=None) -> dict:
    """The diagnostics of two files, read and checked by :func:`load_files`:
    TIDE's error breakdown with the boundary error (:func:`~.tide.analyze_errors`),
    the boundary coverage of the ground truth (:func:`~.tide.boundary_coverage`),
    the confusion matrix, the calibration and optimal LRP
    (:func:`~.run.diagnose_datasets`).

    The confusion matrix, calibration and LRP exist for every ground truth
    (COCO or LVIS) and ``iou_type``.  TIDE's breakdown exists for COCO ground
    truth (TIDE defines no error types for LVIS' federated categories), the
    boundary coverage for boundary and segm (it measures masks); where one
    does not exist it is ``None`` and ``notes`` says why.

    Parameters
    ----------
    gt, dt : str or path-like
        The ground truth and results files (see :func:`load_files`).
    iou_type : {"boundary", "segm", "bbox"}
        ``min(mask IoU, boundary IoU)``, mask IoU or box IoU.
    dilation_ratio, pos_threshold, background_threshold, max_dets
        As for :func:`~.tide.analyze_errors`; ``max_dets`` (default: 100 for
        COCO, 300 for LVIS) limits the detections per image of every
        diagnostic (COCO: ``maxDets`` [1, 10, N]; LVIS: ``LVISResults(...,
        max_dets=N)``, highest scores kept).
    confusion_iou, calibration_bins, lrp_threshold, num_threads
        Of the confusion matrix and calibration (IoU threshold, bins) and of
        LRP (true-positive threshold): :func:`~.run.diagnose_datasets`.

    Returns
    -------
    dict
        ``{"kind": "coco" | "lvis", "iou_type", "errors": analyze_errors'
        result or None, "coverage": boundary_coverage's result or None,
        "notes": {"errors" / "boundary_coverage": why it is None}, "max_dets":
        the value used,
        "diagnostics": {"confusion", "calibration", "lrp"}, "gt": the ground
        truth, "dt": the results, "seconds": wall time}``.

    Raises
    ------
    ValueError
        Bad files (see :func:`load_files`) or ``background_threshold`` above
        ``pos_threshold``.
    """
    from ..lvis.dataset import LVIS
    from .run import diagnose_datasets
    from .tide import analyze_errors, boundary_coverage

    if pos_threshold < background_threshold:
        raise ValueError(f"background_threshold ({background_threshold}) is above pos_threshold "
                         f"({pos_threshold})")
    tic = time.time()
    gt_obj, dt_obj = load_files(gt, dt, iou_type=iou_type, max_dets=max_dets)
    kind = "lvis" if isinstance(gt_obj, LVIS) else "coco"
    if max_dets is None:
        max_dets = LVIS_MAX_DETS if kind == "lvis" else COCO_MAX_DETS
    notes = tide_notes(kind, iou_type)
    errors = coverage = None
    if "errors" not in notes:
        errors = analyze_errors(gt_obj, dt_obj, iou=iou_type, dilation_ratio=dilation_ratio,
                                pos_threshold=pos_threshold, background_threshold=background_threshold,
                                max_dets=max_dets)
    if "boundary_coverage" not in notes:
        coverage = boundary_coverage(gt_obj, dilation_ratio)
    diagnostics = diagnose_datasets(gt_obj, dt_obj, iou_type, dilation_ratio, max_dets, confusion_iou,
                                    calibration_bins, lrp_threshold, num_threads)
    return {"kind": kind, "iou_type": iou_type, "max_dets": max_dets, "errors": errors, "coverage": coverage, "notes": notes,
            "diagnostics": diagnostics, "gt": gt_obj, "dt": dt_obj, "seconds": time.time() - tic}


def tide_notes(kind: str, iou_type: str) -> Dict[str, str]:
    """Why TIDE's error breakdown or the boundary coverage is not computed for
    this ground truth (``"coco"`` / ``"lvis"``) and IoU type: ``{part: one
    sentence}``, empty when both are."""
    notes = {}
    if kind == "lvis":
        notes["errors"] = ("TIDE's error breakdown is not computed for LVIS ground truth: TIDE defines its "
                           "error types for exhaustively annotated images, not for LVIS' federated "
                           "negative and not-exhaustive categories")
    if iou_type == "bbox":
        notes["boundary_coverage"] = ("the boundary coverage measures ground-truth masks; box IoU (bbox) "
                                      "uses no boundary")
    return notes
