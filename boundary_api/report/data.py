"""The numbers of the report: Mask AP and Boundary AP side by side, the error
breakdown, PR curves, per-category AP and the boundary coverage."""
from __future__ import annotations

import contextlib
import io
import logging
import math
from typing import Callable, Optional, Sequence

from ..diagnostics.run import diagnose
from ..diagnostics.tide import analyze_errors, boundary_coverage, image_ious, pr_curves
from ..coco.cocoeval import COCOeval
from ..instance.results import COCO_STAT_NAMES, coco_stats, per_category_ap

__all__ = ["collect", "coverage_warning"]

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


def collect(coco_gt, coco_dt, *, dilation_ratio: float = 0.02, iou_thrs: Sequence[float] = (0.5, 0.75),
            pos_threshold: float = 0.5, background_threshold: float = 0.1, max_dets: int = 100,
            num_threads: Optional[int] = None, worst: int = 12,
            step: Optional[Callable[[str], None]] = None, resamples: int = 200, seed: Optional[int] = 0,
            diagnostics_iou: float = 0.5) -> dict:
    """Every number of the report.

    Parameters
    ----------
    coco_gt, coco_dt : pycocotools.coco.COCO
        Ground truth and results with segmentations.
    dilation_ratio : float
        Boundary width as a fraction of the image diagonal.
    iou_thrs : sequence of float
        IoU thresholds of the PR curves (among COCO's 0.50:0.05:0.95).
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

    Returns
    -------
    dict
        ``summary`` {metric: {"mask", "boundary"}}, ``per_category``
        {cat: {"id", "name", "mask_AP", "boundary_AP", "gap"}}, ``pr``
        {"mask"/"boundary": {area: {thr: precision}}}, ``rec_thrs``, ``errors``
        (overall, per size, per category), ``coverage``, ``warning``,
        ``worst`` (boundary errors, largest mask-boundary IoU gap first) and
        ``diagnostics`` {"mask"/"boundary": :func:`boundary_api.diagnostics.run.diagnose`}
        (bootstrap intervals, confusion matrix, calibration, LRP).
    """
    step = step or (lambda label: None)
    evals = {}
    for kind in ("segm", "boundary"):
        with contextlib.redirect_stdout(io.StringIO()):
            ev = COCOeval(coco_gt, coco_dt, iouType=kind, dilation_ratio=dilation_ratio, num_threads=num_threads)
            ev.evaluate()
            ev.accumulate()
            ev.summarize()
        evals[kind] = ev
        step(f"{kind} evaluation")
    stats = {k: coco_stats(ev) for k, ev in evals.items()}
    summary = {name: {"mask": _nan_to_none(stats["segm"][name]), "boundary": _nan_to_none(stats["boundary"][name])}
               for name in COCO_STAT_NAMES}
    per_mask, per_bnd = per_category_ap(evals["segm"]), per_category_ap(evals["boundary"])
    per_category = {}
    for cat, m in per_mask.items():
        b = per_bnd[cat]
        per_category[cat] = {"id": cat, "name": coco_gt.cats.get(cat, {}).get("name", str(cat)),
                             "mask_AP": _nan_to_none(m), "boundary_AP": _nan_to_none(b),
                             "gap": None if math.isnan(m) or math.isnan(b) else m - b}
    pr = {"mask": pr_curves(evals["segm"], iou_thrs), "boundary": pr_curves(evals["boundary"], iou_thrs)}
    images = image_ious(coco_gt, coco_dt, dilation_ratio, max_dets)
    errors = analyze_errors(coco_gt, coco_dt, iou="boundary", pos_threshold=pos_threshold,
                            background_threshold=background_threshold, max_dets=max_dets, images=images)
    step("error analysis")
    coverage = boundary_coverage(coco_gt, dilation_ratio)
    step("boundary coverage")
    diagnostics = {name: diagnose(evals[kind], iou_threshold=diagnostics_iou, resamples=resamples, seed=seed,
                                  num_threads=num_threads) for name, kind in (("mask", "segm"), ("boundary", "boundary"))}
    step("diagnostics")
    warning = coverage_warning(coverage)
    if warning:
        log.warning("%s", warning)
    return {
        "summary": summary,
        "per_category": per_category,
        "pr": pr,
        "rec_thrs": evals["segm"].params.recThrs.copy(),
        "errors": {k: errors[k] for k in ("ap", "errors", "counts", "per_size", "per_category")},
        "coverage": coverage,
        "warning": warning,
        "worst": errors["boundary_errors"][:worst],
        "diagnostics": diagnostics,
        "settings": {"dilation_ratio": dilation_ratio, "iou_thrs": [float(t) for t in iou_thrs],
                     "pos_threshold": pos_threshold, "background_threshold": background_threshold,
                     "max_dets": max_dets, "resamples": resamples, "seed": seed,
                     "diagnostics_iou": diagnostics_iou},
    }
