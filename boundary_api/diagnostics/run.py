"""From files to diagnostics, for the command line and the report: read and check
a ground truth (COCO or LVIS, told apart by its content) and result files,
evaluate, and compute the bootstrap comparison or the diagnostics as JSON-ready
dictionaries."""
from __future__ import annotations

import contextlib
import io
import logging
import math
import time
from typing import Optional

import numpy as np

from .._io import read_once
from ..instance._files import input_name, looks_like_lvis, read_ground_truth_file, read_results_file
from .bootstrap import bootstrap, compare
from .calibration import calibration
from .confusion import confusion_matrix, top_confusions
from .lrp import optimal_lrp

__all__ = ["is_lvis", "evaluate_files", "compare_files", "diagnose", "diagnose_files"]

log = logging.getLogger(__name__)


def is_lvis(gt_data: dict) -> bool:
    """Whether a ground-truth dataset is LVIS (federated: images list their
    negative categories, categories their frequency): the rule every reader of
    the package applies (:func:`boundary_api.instance._files.looks_like_lvis`)."""
    return looks_like_lvis(gt_data)


def _load_gt(gt, iou_type: Optional[str] = None):
    """The ground truth object (COCO or LVIS, from the content) of a file read
    and checked by :func:`boundary_api.instance._files.read_ground_truth_file`
    (a pipe is read once)."""
    from ..coco.dataset import COCO
    from ..lvis.dataset import LVIS

    gt = read_once(gt, "ground truth")
    name = input_name(gt)
    data, lvis = read_ground_truth_file(gt, iou_type)
    with contextlib.redirect_stdout(io.StringIO()):
        obj = LVIS.from_dataset(data, name, strict=True) if lvis else COCO.from_dataset(data, name, strict=True)
    obj._file_name = name  # what the results' messages call it
    return obj


def _gt_name(gt) -> str:
    return getattr(gt, "_file_name", "ground truth")


def evaluate_files(gt, dt_path: str, iou_type: str = "boundary", dilation_ratio: float = 0.02,
                   num_threads: Optional[int] = None):
    """Evaluate one results file: returns the accumulated ``COCOeval`` or ``LVISEval``.

    Parameters
    ----------
    gt : str or loaded ground truth
        A path (read and checked) or what an earlier call loaded (``ev``'s
        ground truth), so that several result files share it.
    dt_path : str
        Results: a JSON list (segmentations as compressed RLE for boundary and segm).
    iou_type : {'boundary', 'segm', 'bbox'}
    """
    from ..coco.cocoeval import COCOeval
    from ..coco.dataset import COCO
    from ..lvis.dataset import LVIS, LVISResults
    from ..lvis.eval import LVISEval

    if iou_type not in ("boundary", "segm", "bbox"):
        raise ValueError(f"iou_type must be boundary, segm or bbox, got {iou_type!r}")
    if not isinstance(gt, (LVIS, COCO)):  # a path: read and checked
        gt = _load_gt(gt, iou_type)
    dt_path = read_once(dt_path, "results")
    dt_data = read_results_file(dt_path, gt.dataset, _gt_name(gt), iou_type)
    with contextlib.redirect_stdout(io.StringIO()):
        if isinstance(gt, LVIS):
            dt = LVISResults(gt, dt_data, strict=True)
            ev = LVISEval(gt, dt, iou_type=iou_type, dilation_ratio=dilation_ratio, num_threads=num_threads)
        else:
            dt = gt.loadRes(dt_data, _source=input_name(dt_path), strict=True)
            ev = COCOeval(gt, dt, iou_type, dilation_ratio=dilation_ratio, num_threads=num_threads)
        ev.evaluate()
        ev.accumulate()
    return ev


def _num(x):
    return None if x is None or (isinstance(x, float) and not math.isfinite(x)) else float(x)


def _finite_or_none(a) -> list:
    """A float matrix as nested lists, None where it is not finite (vectorised:
    LVIS' confusion matrix has over a million cells)."""
    a = np.asarray(a, dtype=np.float64)
    bad = ~np.isfinite(a)
    if not bad.any():
        return a.tolist()
    out = a.astype(object)
    out[bad] = None
    return out.tolist()


def compare_files(gt_path: str, dt_a: str, dt_b: str, iou_type: str = "boundary", resamples: int = 1000,
                  seed: Optional[int] = 0, confidence: float = 0.95, dilation_ratio: float = 0.02,
                  num_threads: Optional[int] = None) -> dict:
    """``boundary-eval compare``: evaluate two result files on one ground truth
    and compare them with the paired bootstrap
    (:func:`boundary_api.diagnostics.bootstrap.compare`).

    Returns
    -------
    dict
        ``{"kind": "coco" | "lvis", "metrics": {name: {"a", "b", "difference",
        "ci", "p_value", "within_noise"}}, "names", "resamples", "seed",
        "confidence", "seconds": {"evaluate", "bootstrap"}}``.
    """
    from ..lvis.dataset import LVIS

    tic = time.perf_counter()
    gt = _load_gt(gt_path, iou_type)
    ev_a = evaluate_files(gt, dt_a, iou_type, dilation_ratio, num_threads)
    ev_b = evaluate_files(gt, dt_b, iou_type, dilation_ratio, num_threads)
    evaluated = time.perf_counter() - tic
    result = compare(ev_a, ev_b, resamples=resamples, seed=seed, confidence=confidence, num_threads=num_threads)
    metrics = {name: {"a": _num(r["a"]), "b": _num(r["b"]), "difference": _num(r["difference"]),
                      "ci": [_num(v) for v in r["ci"]], "p_value": _num(r["p_value"]),
                      "within_noise": r["within_noise"]} for name, r in result.items()}
    return {"kind": "lvis" if isinstance(gt, LVIS) else "coco", "metrics": metrics, "names": result.names,
            "resamples": resamples, "seed": seed, "confidence": confidence,
            "seconds": {"evaluate": evaluated, "bootstrap": result.seconds}}


def diagnose(ev, iou_threshold: float = 0.5, n_bins: int = 10, tp_threshold: float = 0.5,
             resamples: int = 0, seed: Optional[int] = 0, confidence: float = 0.95,
             num_threads: Optional[int] = None) -> dict:
    """Every diagnostic of issue 30 for one evaluation, JSON-ready.

    Parameters
    ----------
    ev : boundary_api.COCOeval or boundary_api.LVISEval
        After a native ``evaluate()``.
    iou_threshold : float
        Of the confusion matrix and the calibration (among the evaluation's thresholds).
    n_bins : int
        Calibration bins.
    tp_threshold : float
        LRP's true-positive threshold.
    resamples : int
        Bootstrap resamples for the intervals of the headline numbers (0: none).

    Returns
    -------
    dict
        ``{"confusion": {"cat_ids", "names", "matrix", "normalized",
        "iou_threshold", "top"}, "calibration": {"ece", "mce", "bins",
        "per_category", ...}, "lrp": {"olrp", "loc", "fp", "fn",
        "per_category", ...}, "bootstrap": {name: {"value", "ci", "std"}}}``
        (``bootstrap`` only with resamples).
    """
    cm = confusion_matrix(ev, iou_threshold)
    cal = calibration(ev, iou_threshold, n_bins)
    lrp = optimal_lrp(ev, tp_threshold)
    out = {
        "confusion": {"iou_threshold": cm["iou_threshold"], "crowd": cm["crowd"], "cat_ids": cm["cat_ids"],
                      "names": cm["names"], "matrix": cm["matrix"].tolist(),
                      "normalized": _finite_or_none(cm["normalized"]),
                      "top": top_confusions(cm)},
        "calibration": {"iou_threshold": cal["iou_threshold"], "n_bins": cal["n_bins"], "ece": _num(cal["ece"]),
                        "mce": _num(cal["mce"]), "count": cal["count"], "bins": cal["bins"],
                        "per_category": {str(k): v for k, v in cal["per_category"].items()}},
        "lrp": {"tp_threshold": lrp["tp_threshold"], "olrp": _num(lrp["olrp"]), "loc": _num(lrp["loc"]),
                "fp": _num(lrp["fp"]), "fn": _num(lrp["fn"]),
                "per_category": {str(k): {kk: (_num(vv) if kk != "name" else vv) for kk, vv in v.items()}
                                 for k, v in lrp["per_category"].items()}},
    }
    if resamples:
        b = bootstrap(ev, resamples=resamples, seed=seed, confidence=confidence, num_threads=num_threads)
        out["bootstrap"] = {"resamples": resamples, "seed": seed, "confidence": confidence,
                            "metrics": {n: {"value": _num(r["value"]), "ci": [_num(v) for v in r["ci"]],
                                            "std": _num(r["std"])} for n, r in b.items()}}
    return out


def diagnose_files(gt_path: str, dt_path: str, iou_type: str = "boundary", dilation_ratio: float = 0.02,
                   iou_threshold: float = 0.5, n_bins: int = 10, tp_threshold: float = 0.5,
                   resamples: int = 1000, seed: Optional[int] = 0, confidence: float = 0.95,
                   num_threads: Optional[int] = None) -> dict:
    """``boundary-eval diagnose``: read, check and evaluate one result file, then
    :func:`diagnose` (with bootstrap intervals); adds ``kind``, ``iou_type``
    and the plain headline numbers (``metrics``)."""
    from .bootstrap import headline_values

    ev = evaluate_files(gt_path, dt_path, iou_type, dilation_ratio, num_threads)
    out = {"kind": "coco" if hasattr(ev.params, "iouThrs") else "lvis", "iou_type": iou_type,
           "metrics": {k: _num(v) if v != -1 else None for k, v in headline_values(ev).items()}}
    out.update(diagnose(ev, iou_threshold, n_bins, tp_threshold, resamples, seed, confidence, num_threads))
    return out


def diagnose_datasets(gt, dt, iou_type: str = "boundary", dilation_ratio: float = 0.02, max_dets: int = 100,
                      iou_threshold: float = 0.5, n_bins: int = 10, tp_threshold: float = 0.5,
                      num_threads: Optional[int] = None) -> dict:
    """:func:`diagnose` (no bootstrap) of a loaded ground truth and its results
    (``boundary-eval analyze``).

    COCO (``COCO`` and ``gt.loadRes``) is evaluated by ``COCOeval`` with
    ``maxDets`` up to ``max_dets``; LVIS (``LVIS`` and ``LVISResults``) by
    ``LVISEval`` (its ``params.max_dets`` set to ``max_dets``: LVIS limits the
    detections per image when ``LVISResults`` is built, see
    :func:`~.files.load_files`).
    """
    ev = diagnostics_evaluator(gt, dt, iou_type, dilation_ratio, max_dets, num_threads)
    return diagnose(ev, iou_threshold, n_bins, tp_threshold, 0, num_threads=num_threads)


def diagnostics_evaluator(gt, dt, iou_type: str = "boundary", dilation_ratio: float = 0.02, max_dets: int = 100,
                          num_threads: Optional[int] = None):
    """The evaluator (after ``evaluate()``) that :func:`diagnose_datasets` diagnoses."""
    from ..coco.cocoeval import COCOeval
    from ..lvis.dataset import LVIS
    from ..lvis.eval import LVISEval

    if iou_type not in ("boundary", "segm", "bbox"):
        raise ValueError(f"iou_type must be boundary, segm or bbox, got {iou_type!r}")
    with contextlib.redirect_stdout(io.StringIO()):
        if isinstance(gt, LVIS):
            ev = LVISEval(gt, dt, iou_type=iou_type, dilation_ratio=dilation_ratio, num_threads=num_threads)
            ev.params.max_dets = max_dets
        else:
            ev = COCOeval(gt, dt, iou_type, dilation_ratio=dilation_ratio, num_threads=num_threads)
            ev.params.maxDets = sorted({min(1, max_dets), min(10, max_dets), max_dets})
        ev.evaluate()
    return ev
