"""Boundary AP for the predictions Detectron2 gathers, without Detectron2.

Detectron2's ``COCOEvaluator`` / ``LVISEvaluator`` turn each image's
``Instances`` into COCO-format result dicts (``instances_to_coco_json``:
``image_id``, contiguous ``category_id``, ``bbox`` in XYWH, ``score`` and, for
mask models, a compressed-RLE ``segmentation`` whose ``counts`` is a ``str``)
and gather them on the main process.  The functions here take that list and
the ground-truth object and return the ``"boundary"`` task's metrics in
Detectron2's form: percent values under Detectron2's ``"segm"`` keys, metrics
that cannot be computed as Detectron2 shows them (NaN for COCO, -100 for
LVIS), logged as the same kind of tables.

:mod:`boundary_api.detectron2` is the thin Detectron2 layer on top; this
module imports neither torch nor Detectron2 and can be used directly::

    from boundary_api import COCO
    from boundary_api.d2_results import coco_boundary_metrics

    gt = COCO("instances_val2017.json")
    metrics = coco_boundary_metrics(
        gt, coco_results,                                  # instances_to_coco_json output
        category_id_map={0: 1, 1: 2, 2: 3},                # contiguous id -> dataset id
        class_names=["person", "bicycle", "car"])
    metrics["AP"], metrics["AP-person"]

Ground-truth boundaries are cached on the ground-truth object
(:func:`boundary_api.instance.cache.cache_for`), so evaluating again against the same
object only computes the predictions' boundaries.  :func:`shared_ground_truth`
keeps one ground-truth object per annotation file, for callers (such as
Detectron2's trainer) that load the file again for every evaluation.
"""
from __future__ import annotations

import contextlib
import copy
import io
import logging
import warnings
from collections.abc import Callable, Mapping
from typing import Dict, Iterable, List, Optional, Sequence, Union

import numpy as np
import pycocotools.coco

from ..instance._checks import check_results
from ..coco.dataset import COCO
from ..coco.cocoeval import COCOeval
from ..instance.results import coco_stats, per_category_ap
from ._d2_ground_truth import release_shared_ground_truth, shared_ground_truth  # noqa: F401 (public here)
from ._d2_tables import TASK, _log_metrics, _log_per_category, format_table  # noqa: F401 (public here)

__all__ = [
    "TASK",
    "COCO_METRICS",
    "LVIS_METRICS",
    "POOLED_METRICS",
    "prepare_results",
    "coco_boundary_metrics",
    "lvis_boundary_metrics",
    "lvis_task_metrics",
    "format_table",
    "shared_ground_truth",
    "release_shared_ground_truth",
]

log = logging.getLogger(__name__)

#: metrics Detectron2 reports for COCO instance segmentation, in order
COCO_METRICS = ("AP", "AP50", "AP75", "APs", "APm", "APl")
#: metrics Detectron2 reports for LVIS instance segmentation, in order
LVIS_METRICS = COCO_METRICS + ("APr", "APc", "APf")
#: LVIS Pooled AP's metrics: the pool of all categories, then each frequency group
POOLED_METRICS = ("AP", "APr", "APc", "APf")

CategoryIdMap = Union[Mapping, Callable, None]


# ----------------------------------------------------------------------------
# predictions
# ----------------------------------------------------------------------------
def _flatten(predictions: Iterable) -> List[dict]:
    """Result dicts from either a flat list or per-image ``{"instances": [...]}`` dicts."""
    out: List[dict] = []
    for p in predictions:
        if not isinstance(p, Mapping):
            raise TypeError(f"predictions must be dicts, got {type(p).__name__}")
        if "instances" in p:  # Detectron2's per-image record
            out.extend(p["instances"])
        elif "category_id" in p:  # a result dict
            out.append(p)
        # else: an image record without instances (proposals only): nothing to evaluate
    return out


def _mapper(category_id_map: CategoryIdMap):
    if category_id_map is None:
        return lambda c: c
    if isinstance(category_id_map, Mapping):
        def lookup(c):
            try:
                return category_id_map[c]
            except KeyError:
                known = sorted(category_id_map)
                raise ValueError(
                    f"a prediction has category_id={c!r}, which the category id mapping does not "
                    f"contain (it maps {len(known)} ids: {known[:10]}{' ...' if len(known) > 10 else ''})"
                ) from None
        return lookup
    if callable(category_id_map):
        return category_id_map
    raise TypeError("category_id_map must be a mapping, a callable or None, "
                    f"got {type(category_id_map).__name__}")


def prepare_results(predictions: Iterable, category_id_map: CategoryIdMap = None, *,
                    iou_type: str = "boundary") -> List[dict]:
    """Turn gathered Detectron2 predictions into results for one task.

    Parameters
    ----------
    predictions : iterable of dict
        ``instances_to_coco_json`` output: either the flat list of result
        dicts, or Detectron2's per-image ``{"image_id", "instances": [...]}``
        dicts.  Not modified.
    category_id_map : mapping, callable or None, optional
        How Detectron2's contiguous category ids become dataset ids: the
        reverse of ``thing_dataset_id_to_contiguous_id`` (a dict), a function
        (LVIS without that metadata: ``lambda c: c + 1``), or None when the ids
        are dataset ids already.
    iou_type : {'boundary', 'segm', 'bbox'}, optional
        The task the results are for (default ``"boundary"``).

    Returns
    -------
    list of dict
        New dicts with ``image_id``, dataset ``category_id`` and ``score``,
        plus, for ``"boundary"`` and ``"segm"``, the ``segmentation`` (the box
        is left out on purpose: as for Detectron2's mask AP, the
        small/medium/large ranges then use the mask area) and, for ``"bbox"``,
        the model's box (``pred_boxes`` as ``instances_to_coco_json`` wrote
        it; masks are not needed, so box-only models work).

    Raises
    ------
    ValueError
        If a prediction lacks what the task needs (a ``segmentation`` for
        the mask tasks, a ``bbox`` for ``"bbox"``), has a category id the
        mapping does not know, or ``iou_type`` is unknown.
    """
    if iou_type not in ("boundary", "segm", "bbox"):
        raise ValueError(f"iou_type must be one of boundary, segm, bbox; got {iou_type!r}")
    field = "bbox" if iou_type == "bbox" else "segmentation"
    to_dataset_id = _mapper(category_id_map)
    out = []
    for i, r in enumerate(_flatten(predictions)):
        value = r.get(field)
        if value is None:
            need = ("boxes (Instances.pred_boxes)" if field == "bbox"
                    else "mask predictions (Instances.pred_masks)")
            raise ValueError(
                f"prediction #{i} (image {r.get('image_id')!r}) has no {field!r}: the {iou_type} "
                f"task needs {need}")
        out.append({"image_id": r.get("image_id"), "category_id": to_dataset_id(r.get("category_id")),
                    field: value, "score": r.get("score")})
    return out


# ----------------------------------------------------------------------------
# metrics
# ----------------------------------------------------------------------------
def _percent(value: float) -> float:
    """Detectron2's COCO convention: fraction -> percent, negative (-1: undefined) -> NaN."""
    value = float(value)
    return value * 100 if value >= 0 else float("nan")


def _coco_max_dets(max_dets_per_image) -> List[int]:
    if max_dets_per_image is None:
        return [1, 10, 100]
    if isinstance(max_dets_per_image, (int, np.integer)) and not isinstance(max_dets_per_image, bool):
        return [1, 10, int(max_dets_per_image)]
    dets = [int(d) for d in max_dets_per_image]
    if len(dets) < 3:
        raise ValueError(f"max_dets_per_image must be an int or at least 3 ints, got {max_dets_per_image!r}")
    return dets


def _load_coco_results(coco_gt, results: List[dict]):
    if isinstance(coco_gt, COCO):
        return coco_gt.loadRes(results)  # checks the results itself
    # a plain pycocotools ground truth, as Detectron2 builds it
    check_results(results, coco_gt.imgs, coco_gt.cats, "Detectron2 predictions")
    return pycocotools.coco.COCO.loadRes(coco_gt, results)


def coco_boundary_metrics(coco_gt, predictions: Iterable, *, category_id_map: CategoryIdMap = None,
                          class_names: Optional[Sequence[str]] = None, dilation_ratio: float = 0.02,
                          max_dets_per_image=None, img_ids: Optional[Sequence] = None,
                          use_fast_impl: bool = True, num_threads: Optional[int] = None,
                          logger: Optional[logging.Logger] = None) -> Dict[str, float]:
    """Boundary AP of gathered Detectron2 predictions on a COCO-style dataset.

    Parameters
    ----------
    coco_gt : boundary_api.COCO or pycocotools.coco.COCO
        Ground truth; its boundaries are cached on it for later calls.
    predictions : iterable of dict
        ``instances_to_coco_json`` output (see :func:`prepare_results`).
    category_id_map : mapping, callable or None, optional
        Contiguous id -> dataset id (reverse of Detectron2's
        ``thing_dataset_id_to_contiguous_id``); None if ids are dataset ids.
    class_names : sequence of str, optional
        Detectron2's ``thing_classes``, one per ground-truth category in id
        order; with two or more, ``AP-<name>`` entries are added.
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02).
    max_dets_per_image : int or sequence of int, optional
        Detection cap: None (COCO's ``[1, 10, 100]``), an int N
        (``[1, 10, N]``) or the full list, as Detectron2's evaluator keeps it.
    img_ids : sequence, optional
        Evaluate on these images only.
    use_fast_impl, num_threads
        Passed to :class:`boundary_api.COCOeval`.
    logger : logging.Logger, optional
        Where the tables go (default: this module's logger).

    Returns
    -------
    dict
        ``AP, AP50, AP75, APs, APm, APl`` (and ``AP-<name>``) in percent, NaN
        where a metric cannot be computed; all NaN, with a warning, when there
        are no predictions.
    """
    logger = logger or log
    results = prepare_results(predictions, category_id_map)
    if not results:
        logger.warning("No predictions from the model: the %s metrics are NaN.", TASK)
        return {m: float("nan") for m in COCO_METRICS}

    max_dets = _coco_max_dets(max_dets_per_image)
    progress = io.StringIO()
    with contextlib.redirect_stdout(progress):  # pycocotools reports progress with print()
        coco_dt = _load_coco_results(coco_gt, results)
        ev = COCOeval(coco_gt, coco_dt, iouType=TASK, dilation_ratio=dilation_ratio,
                      use_fast_impl=use_fast_impl, num_threads=num_threads)
        ev.params.maxDets = max_dets
        if img_ids is not None:
            ev.params.imgIds = list(img_ids)
        ev.evaluate()
        ev.accumulate()
    logger.debug("%s", progress.getvalue().rstrip())
    summary = io.StringIO()
    with contextlib.redirect_stdout(summary), warnings.catch_warnings():
        # the -1 of AP at 100 is replaced below: no need to warn about it
        warnings.filterwarnings("ignore", message=r"summarize\(\): params\.maxDets")
        ev.summarize()

    stats = coco_stats(ev)
    if max(max_dets) != 100:
        # pycocotools' summary takes the overall AP at 100 detections; use the cap
        precision = ev.eval["precision"][:, :, :, 0, -1]
        valid = precision[precision > -1]
        stats["AP"] = float(np.mean(valid)) if valid.size else -1.0
    else:
        logger.info("COCOeval summary for %s (dilation ratio %g):\n%s", TASK, ev.dilation_ratio,
                    summary.getvalue().rstrip())
    metrics = {m: _percent(stats[m]) for m in COCO_METRICS}
    _log_metrics(logger, metrics)

    if class_names is None or len(class_names) <= 1:
        return metrics
    per_cat = per_category_ap(ev)
    if len(class_names) != len(per_cat):
        raise ValueError(f"{len(class_names)} class names for {len(per_cat)} ground-truth categories")
    per_category = [(str(name), float(ap) * 100) for name, ap in zip(class_names, per_cat.values())]
    _log_per_category(logger, per_category)
    metrics.update({"AP-" + name: ap for name, ap in per_category})
    return metrics


def lvis_boundary_metrics(lvis_gt, predictions: Iterable, *, category_id_map: CategoryIdMap = None,
                          dilation_ratio: float = 0.02, max_dets_per_image: Optional[int] = None,
                          use_fast_impl: bool = True, num_threads: Optional[int] = None,
                          logger: Optional[logging.Logger] = None, ap: str = "standard",
                          dets_per_cat: Optional[int] = 10000) -> Dict[str, float]:
    """Boundary AP of gathered Detectron2 predictions on an LVIS dataset.

    Parameters
    ----------
    lvis_gt : lvis.LVIS or boundary_api.LVIS
        Ground truth; its boundaries are cached on it for later calls.
    predictions : iterable of dict
        ``instances_to_coco_json`` output (see :func:`prepare_results`).
    category_id_map : mapping, callable or None, optional
        Contiguous id -> LVIS id.  Detectron2 adds 1 when the dataset has no
        ``thing_dataset_id_to_contiguous_id``: pass ``lambda c: c + 1`` then.
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02).
    max_dets_per_image : int, optional
        Results kept per image (default: LVIS' 300).
    use_fast_impl, num_threads
        Passed to :class:`boundary_api.LVISEval`.
    logger : logging.Logger, optional
        Where the table goes (default: this module's logger).
    ap : {'standard', 'fixed', 'pooled'}, optional
        LVIS' AP (default), or Fixed / Pooled AP (Dave et al. 2021): the
        ``dets_per_cat`` best results of each category over the dataset, no
        limit per image (``max_dets_per_image`` is then ignored); see
        docs/lvis_fixed_pooled.md.
    dets_per_cat : int or None, optional
        K of Fixed / Pooled AP (default 10,000).

    Returns
    -------
    dict
        ``AP, AP50, AP75, APs, APm, APl, APr, APc, APf`` in percent
        (Pooled AP: ``AP, APr, APc, APf``).  A
        metric LVIS cannot compute (it reports -1) is ``-100``, as in
        Detectron2's LVIS tables (``float(value * 100)``); all NaN, with a
        warning, when there are no predictions (as Detectron2).
    """
    logger = logger or log
    names = _lvis_metric_names(ap)
    results = prepare_results(predictions, category_id_map)
    if not results:
        logger.warning("No predictions from the model: the %s metrics are NaN.", TASK)
        return {m: float("nan") for m in names}

    from ..lvis import LVISEval  # loads lvis (and matplotlib) only here

    max_dets = 300 if max_dets_per_image is None else int(max_dets_per_image)
    lvis_dt, max_dets = _load_lvis_results(lvis_gt, results, TASK, max_dets, ap, dets_per_cat, logger)
    ev = LVISEval(lvis_gt, lvis_dt, iou_type=TASK, max_dets=max_dets, dilation_ratio=dilation_ratio,
                  use_fast_impl=use_fast_impl, num_threads=num_threads, ap=ap, dets_per_cat=dets_per_cat)
    ev.run()
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):  # lvis prints its summary
        ev.print_results()
    logger.info("LVISEval summary for %s (dilation ratio %g):\n%s", TASK, ev.dilation_ratio,
                printed.getvalue().rstrip())
    summary = ev.get_results()
    # Detectron2's LVIS convention: value * 100 as it is, so -1 (undefined) shows as -100
    metrics = {m: float(summary[m] * 100) for m in names}
    _log_metrics(logger, metrics)
    return metrics


def _lvis_metric_names(ap: str) -> tuple:
    from ..lvis.fixed_pooled import check_ap

    return POOLED_METRICS if check_ap(ap) == "pooled" else LVIS_METRICS


def _load_lvis_results(lvis_gt, results: List[dict], iou_type: str, max_dets: int, ap: str,
                       dets_per_cat: Optional[int], logger: logging.Logger):
    """``(LVISResults, max_dets)`` of result dicts: capped at ``max_dets``
    per image for LVIS' AP, the top ``dets_per_cat`` of each category with
    no limit per image for Fixed / Pooled AP (logged)."""
    from ..lvis import LVISResults
    from ..lvis.fixed_pooled import load_results

    if ap == "standard":
        logger.info("Evaluating %s with max detections per image = %d", iou_type, max_dets)
        return LVISResults(lvis_gt, results, max_dets=max_dets), max_dets
    logger.info("Evaluating %s with %s AP: the top %s detections of each category, no limit per image",
                iou_type, ap.capitalize(), dets_per_cat)
    return load_results(lvis_gt, results, iou_type, dets_per_cat, max_dets=-1), -1


def lvis_task_metrics(lvis_gt, results: List[dict], iou_type: str, *,
                      max_dets_per_image: Optional[int] = None,
                      logger: Optional[logging.Logger] = None,
                      table: Optional[Callable[[Dict[str, float]], str]] = None,
                      ap: str = "standard", dets_per_cat: Optional[int] = 10000) -> Dict[str, float]:
    """Detectron2's LVIS ``"bbox"`` / ``"segm"`` task, computed with
    :class:`boundary_api.LVISEval` (on any numpy).

    What Detectron2's ``_evaluate_predictions_on_lvis`` returns and logs
    with lvis' own ``LVISEval``, which needs numpy < 1.24: the same numbers
    (``float(value * 100)``, so a metric LVIS cannot compute is ``-100``;
    all NaN without results), the same log lines, lvis' printed summary.

    Parameters
    ----------
    lvis_gt : lvis.LVIS or boundary_api.LVIS
    results : list of dict
        Result dicts with dataset category ids (Detectron2's
        ``lvis_results``).  As with Detectron2, a ``"bbox"`` evaluation adds
        ``area`` and ``id`` to these very dicts; ``"segm"`` works on copies
        without their boxes (so that small/medium/large use mask areas).
    iou_type : {'bbox', 'segm'}
    max_dets_per_image : int, optional
        Results kept per image (default 300, LVIS' own).
    logger : logging.Logger, optional
        Where the lines go (Detectron2's evaluator logger; default: this module's).
    table : callable, optional
        ``table(metrics) -> str`` for the logged table (Detectron2's
        ``create_small_table``; default :func:`format_table`).
    ap : {'standard', 'fixed', 'pooled'}, optional
        As for :func:`lvis_boundary_metrics` (the result dicts are then
        left alone: the kept ones are copied).
    dets_per_cat : int or None, optional
        K of Fixed / Pooled AP (default 10,000).

    Returns
    -------
    dict
        ``AP, AP50, AP75, APs, APm, APl, APr, APc, APf``, in percent
        (Pooled AP: ``AP, APr, APc, APf``).
    """
    if iou_type not in ("bbox", "segm"):
        raise ValueError(f"iou_type must be 'bbox' or 'segm' (Detectron2's LVIS tasks), got {iou_type!r}")
    logger = logger or log
    names = _lvis_metric_names(ap)
    if len(results) == 0:
        logger.warning("No predictions from the model!")
        return {m: float("nan") for m in names}
    if iou_type == "segm" and ap == "standard":
        # mask areas for small/medium/large, as Detectron2 does
        results = copy.deepcopy(results)
        for r in results:
            r.pop("bbox", None)
    max_dets = 300 if max_dets_per_image is None else max_dets_per_image

    from ..lvis import LVISEval, LVISResults  # loads lvis (and matplotlib) only here

    if ap == "standard":
        logger.info(f"Evaluating with max detections per image = {max_dets}")
        lvis_dt = LVISResults(lvis_gt, results, max_dets=max_dets)
    else:
        lvis_dt, max_dets = _load_lvis_results(lvis_gt, results, iou_type, max_dets, ap, dets_per_cat, logger)
    ev = LVISEval(lvis_gt, lvis_dt, iou_type, ap=ap, dets_per_cat=dets_per_cat)
    ev.run()
    ev.print_results()
    summary = ev.get_results()
    metrics = {m: float(summary[m] * 100) for m in names}
    if table is None:
        def table(d):
            return format_table(list(d), [list(d.values())])
    logger.info("Evaluation results for {}: \n".format(iou_type) + table(metrics))
    return metrics
