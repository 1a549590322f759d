"""The numbers of the report: Mask AP and Boundary AP side by side, the error
breakdown, PR curves, per-category AP and the boundary coverage."""
from __future__ import annotations

import contextlib
import io
import logging
import math
from typing import Callable, Optional, Sequence

import numpy as np

from ..diagnostics.bootstrap import headline_values
from ..diagnostics.run import diagnose
from ..diagnostics.tide import analyze_errors, boundary_coverage, image_ious, pr_curves
from ..coco.cocoeval import COCOeval
from ..instance.results import COCO_STAT_NAMES, coco_stats, per_category_ap

__all__ = ["KINDS", "collect", "coverage_warning"]

log = logging.getLogger(__name__)


def _nan_to_none(x):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def coverage_warning(coverage: dict) -> Optional[str]:
    """A sentence when most ground-truth objects are all boundary (else None)."""
    frac = coverage["all"]["fraction"]
    if frac is None or frac <= 0.5:
        return None
    parts = ", ".join(f"{s} {coverage[s]['fraction']:.0%}" for s in ("small", "medium", "large")
                      if coverage[s]["fraction"] is not None)
    return (f"{frac:.0%} of the ground-truth objects ({parts}) are so small that the boundary band "
            "covers the whole object: for them Boundary IoU equals Mask IoU, so Boundary AP cannot "
            "differ from Mask AP there.")


#: the report's evaluations per IoU type: label -> iou_type
KINDS = {"boundary": {"mask": "segm", "boundary": "boundary"}, "bbox": {"box": "bbox"}}


def _evaluate(gt, dt, iou_type, dilation_ratio, num_threads):
    from ..lvis.dataset import LVIS
    from ..lvis.eval import LVISEval

    with contextlib.redirect_stdout(io.StringIO()):
        if isinstance(gt, LVIS):
            ev = LVISEval(gt, dt, iou_type=iou_type, dilation_ratio=dilation_ratio, num_threads=num_threads)
        else:
            ev = COCOeval(gt, dt, iouType=iou_type, dilation_ratio=dilation_ratio, num_threads=num_threads)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


def _summary(ev, lvis: bool) -> dict:
    if lvis:  # LVISEval's results (AP, AP50, AP75, APs, APm, APl, APr, APc, APf, AR@300, ARs@300, ...)
        return {k: (None if v == -1 else v) for k, v in headline_values(ev).items()}
    return coco_stats(ev)


def collect(coco_gt, coco_dt, *, dilation_ratio: float = 0.02, iou_thrs: Sequence[float] = (0.5, 0.75),
            pos_threshold: float = 0.5, background_threshold: float = 0.1, max_dets: int = 100,
            num_threads: Optional[int] = None, worst: int = 12,
            step: Optional[Callable[[str], None]] = None, resamples: int = 200, seed: Optional[int] = 0,
            diagnostics_iou: float = 0.5, iou_type: str = "boundary") -> dict:
    """Every number of the report.

    Parameters
    ----------
    coco_gt, coco_dt : COCO and its results, or LVIS and LVISResults
        Ground truth and results (with segmentations unless ``iou_type`` is bbox).
    dilation_ratio : float
        Boundary width as a fraction of the image diagonal.
    iou_thrs : sequence of float
        IoU thresholds of the PR curves (among 0.50:0.05:0.95).
    pos_threshold, background_threshold, max_dets
        Of the error analysis (:func:`boundary_api.diagnostics.tide.analyze_errors`).
    num_threads : int, optional
        Threads of the evaluators.
    worst : int
        How many of the worst boundary errors to keep for thumbnails.
    step : callable, optional
        Called with a label after each stage (a progress bar).
    resamples, seed : int
        Bootstrap resamples (0: no intervals) and their seed.
    diagnostics_iou : float
        IoU threshold of the confusion matrix and the calibration.
    iou_type : {"boundary", "bbox"}
        boundary: Mask IoU and Boundary IoU side by side (labels ``mask`` and
        ``boundary``); bbox: box IoU alone (label ``box``).

    Returns
    -------
    dict
        ``kinds`` {label: iou_type}, ``kind`` ("coco" or "lvis"), ``summary``
        {metric: {label: value}} (COCOeval's stats or LVISEval's results),
        ``per_category`` {cat: {"id", "name", "<label>_AP", "gap"}} (``gap``:
        mask - boundary, None for bbox), ``pr`` {label: {area: {thr:
        precision}}}, ``rec_thrs``, ``errors`` (overall, per size, per
        category), ``coverage``, ``warning``, ``worst`` (boundary errors,
        largest mask-boundary IoU gap first), ``notes`` {part: why it is None}
        and ``diagnostics`` {label: :func:`boundary_api.diagnostics.run.diagnose`}
        (bootstrap intervals, confusion matrix, calibration, LRP).  TIDE's
        ``errors`` exist for COCO ground truth (with box IoU for bbox, which has
        no boundary errors: ``worst`` is then empty),
        ``coverage`` for boundary (else None, [] and a note:
        :func:`boundary_api.diagnostics.files.tide_notes`).
    """
    from ..diagnostics.files import tide_notes
    from ..lvis.dataset import LVIS

    if iou_type not in KINDS:
        raise ValueError(f"iou_type must be 'boundary' or 'bbox', got {iou_type!r}")
    kinds = KINDS[iou_type]
    lvis = isinstance(coco_gt, LVIS)
    step = step or (lambda label: None)
    evals = {}
    for label, kind in kinds.items():
        evals[label] = _evaluate(coco_gt, coco_dt, kind, dilation_ratio, num_threads)
        step(f"{kind} evaluation")
    stats = {label: _summary(ev, lvis) for label, ev in evals.items()}
    first = next(iter(stats.values()))
    summary = {name: {label: _nan_to_none(stats[label][name]) for label in kinds} for name in first}
    per_ap = {label: per_category_ap(ev) for label, ev in evals.items()}
    per_category = {}
    for cat in per_ap[next(iter(kinds))]:
        row = {"id": cat, "name": coco_gt.cats.get(cat, {}).get("name", str(cat))}
        for label in kinds:
            row[f"{label}_AP"] = _nan_to_none(per_ap[label][cat])
        m, b = per_ap.get("mask", {}).get(cat), per_ap.get("boundary", {}).get(cat)
        row["gap"] = None if m is None or b is None or math.isnan(m) or math.isnan(b) else m - b
        per_category[cat] = row
    pr = {label: pr_curves(ev, iou_thrs) for label, ev in evals.items()}
    notes = tide_notes("lvis" if lvis else "coco", iou_type)
    errors, worst_rows = None, []
    if "errors" not in notes:
        images = image_ious(coco_gt, coco_dt, dilation_ratio, max_dets, iou_type)
        result = analyze_errors(coco_gt, coco_dt, iou=iou_type, pos_threshold=pos_threshold,
                                background_threshold=background_threshold, max_dets=max_dets, images=images)
        errors = {k: result[k] for k in ("ap", "errors", "counts", "per_size", "per_category")}
        worst_rows = result["boundary_errors"][:worst]
    step("error analysis")
    coverage = None if "boundary_coverage" in notes else boundary_coverage(coco_gt, dilation_ratio)
    step("boundary coverage")
    diagnostics = {label: diagnose(ev, iou_threshold=diagnostics_iou, resamples=resamples, seed=seed,
                                   num_threads=num_threads) for label, ev in evals.items()}
    step("diagnostics")
    warning = coverage_warning(coverage) if coverage is not None else None
    if warning:
        log.warning("%s", warning)
    params = next(iter(evals.values())).params
    rec_thrs = getattr(params, "recThrs", None)
    if rec_thrs is None:
        rec_thrs = params.rec_thrs
    return {
        "kind": "lvis" if lvis else "coco",
        "kinds": dict(kinds),
        "summary": summary,
        "per_category": per_category,
        "pr": pr,
        "rec_thrs": np.array(rec_thrs, dtype=np.float64),
        "errors": errors,
        "coverage": coverage,
        "warning": warning,
        "worst": worst_rows,
        "notes": notes,
        "diagnostics": diagnostics,
        "settings": {"dilation_ratio": dilation_ratio, "iou_thrs": [float(t) for t in iou_thrs],
                     "pos_threshold": pos_threshold, "background_threshold": background_threshold,
                     "max_dets": max_dets, "resamples": resamples, "seed": seed,
                     "diagnostics_iou": diagnostics_iou, "iou_type": iou_type},
    }
