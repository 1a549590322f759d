"""MMDetection metrics that report Boundary AP next to Mask AP.

A config needs two lines::

    custom_imports = dict(imports=['boundary_api.integrations.mmdet'])
    val_evaluator = dict(type='BoundaryCocoMetric', ann_file='...',
                         metric=['bbox', 'segm', 'boundary'])

:class:`BoundaryCocoMetric` and :class:`BoundaryLVISMetric` are MMDetection's
``CocoMetric`` and ``LVISMetric`` (same arguments, same ``process()``, the
results gathered from every rank as the parent gathers them) with one more
metric, ``'boundary'``: Boundary AP under the keys, log lines and tables of
``'segm'`` (``coco/boundary_mAP``, ``coco/boundary_mAP_s``, ...,
``lvis/boundary_AP``, ...), measured with ``dilation_ratio`` (default 0.02).
It evaluates the mask predictions that ``'segm'`` evaluates, without their
boxes, so that the small / medium / large ranges use the masks' areas, as
``boundary-eval`` does: its numbers equal ``boundary-eval``'s on the same
predictions.

Importing this module registers both classes in MMDetection's ``METRICS``
registry; it needs MMDetection 3 (with mmengine and mmcv).
"""
from __future__ import annotations

try:
    from mmdet.evaluation.metrics import CocoMetric, LVISMetric
    from mmdet.registry import METRICS
    from mmengine.logging import MMLogger
except ImportError as exc:  # not installed, or installed but not importable (mmcv without its ops)
    raise ImportError(
        "boundary_api.integrations.mmdet needs MMDetection 3: pip install mmdet mmengine, and mmcv "
        "(built from source for recent torch, see the boundary_api manual's MMDetection page); "
        f"importing it failed with: {exc}") from exc

import itertools
import os
import tempfile
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..coco.cocoeval import COCOeval
from ..masks.boundary import check_dilation_ratio

__all__ = ["BoundaryCocoMetric", "BoundaryLVISMetric"]

#: the metric this module adds
BOUNDARY = "boundary"
#: the metrics MMDetection's CocoMetric and LVISMetric accept
_PARENT_METRICS = ("bbox", "segm", "proposal", "proposal_fast")
#: CocoMetric's names of COCOeval's twelve summary numbers (``metric_items``), in order
_COCO_ITEMS = ("mAP", "mAP_50", "mAP_75", "mAP_s", "mAP_m", "mAP_l",
               "AR@100", "AR@300", "AR@1000", "AR_s@1000", "AR_m@1000", "AR_l@1000")
_LVIS_DEFAULT_ITEMS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf")
_EMPTY = "The testing results of the whole dataset is empty."


def _split_metrics(metric) -> List[str]:
    """The metrics asked for, as the parent reads ``metric``, checked with 'boundary' allowed."""
    metrics = metric if isinstance(metric, list) else [metric]
    for m in metrics:
        if m not in _PARENT_METRICS + (BOUNDARY,):
            # the parent's error class, naming the metric this class adds
            raise KeyError("metric should be one of 'bbox', 'segm', 'boundary', 'proposal', "
                           f"'proposal_fast', but got {m}.")
    return list(metrics)


def _fmt(value: float) -> float:
    """MMDetection's three decimals."""
    return float(f"{round(value, 3)}")


class _BoundaryMetric:
    """What both metrics add: the 'boundary' metric, evaluated after the
    parent's metrics on the mask predictions the parent's ``results2json``
    wrote for 'segm'."""

    #: metrics this class evaluates itself; the rest go to the parent
    _OWN: tuple = (BOUNDARY,)

    def _init_boundary(self, metrics: List[str], dilation_ratio) -> None:
        self.metrics = metrics
        self.dilation_ratio = check_dilation_ratio(dilation_ratio)
        self._boundary_files = None

    def results2json(self, results: Sequence[dict], outfile_prefix: str) -> dict:
        """The parent's files (``<prefix>.bbox.json``, ``<prefix>.segm.json``);
        the names are kept for the metrics evaluated here."""
        files = super().results2json(results, outfile_prefix)
        self._boundary_files = files
        return files

    def _segm_results(self, preds: Sequence[dict]) -> List[dict]:
        """The mask results ``results2json`` wrote for 'segm', without their
        boxes: COCO and LVIS then take each result's area from its mask."""
        out = []
        for idx, result in enumerate(preds):
            masks = result["masks"]
            scores = result.get("mask_scores", result["scores"])
            for i, label in enumerate(result["labels"]):
                segmentation = dict(masks[i])
                if isinstance(segmentation["counts"], bytes):
                    segmentation["counts"] = segmentation["counts"].decode()
                out.append({"image_id": result.get("img_id", idx), "category_id": self.cat_ids[label],
                            "segmentation": segmentation, "score": float(scores[i])})
        return out

    def compute_metrics(self, results: list) -> Dict[str, float]:
        """The parent's metrics, then the ones evaluated here, in the order asked.

        Parameters
        ----------
        results : list
            ``(ground truth, prediction)`` pairs of every image, as
            ``process()`` made them and mmengine gathered them from every rank.

        Returns
        -------
        dict
            The parent's keys, then ``boundary_<item>`` (and ``bbox_`` /
            ``segm_`` keys evaluated here for LVIS), three decimals.
        """
        logger: MMLogger = MMLogger.get_current_instance()
        metrics = list(self.metrics)
        own = [m for m in metrics if m in self._OWN]
        prefix, tmp_dir = self.outfile_prefix, None
        if own and prefix is None:
            # the parent would delete its files before the metrics evaluated here run
            tmp_dir = tempfile.TemporaryDirectory()
            self.outfile_prefix = os.path.join(tmp_dir.name, "results")
        self._boundary_files = None
        try:
            self.metrics = [m for m in metrics if m not in own]
            eval_results = super().compute_metrics(results)  # also the lazy init and the files
            self.metrics = metrics
            if self.format_only or not own:
                return eval_results
            preds = [pred for _, pred in results]
            for metric in own:
                logger.info(f"Evaluating {metric}...")
                if metric != "bbox" and "segm" not in (self._boundary_files or {}):
                    # the parent's error for 'segm'; for 'boundary' it says why
                    raise KeyError(f"{metric} is not in results" if metric == "segm" else
                                   f"{metric} is not in results: the model gave no mask predictions")
                if not self._evaluate_own(metric, preds, eval_results, logger):
                    break
            return eval_results
        finally:
            self.metrics = metrics
            self.outfile_prefix = prefix
            if tmp_dir is not None:
                tmp_dir.cleanup()

    def _check_metric_items(self, names) -> None:
        for item in self.metric_items or ():
            if item not in names:
                raise KeyError(f'metric item "{item}" is not supported')


@METRICS.register_module()
class BoundaryCocoMetric(_BoundaryMetric, CocoMetric):
    """MMDetection's ``CocoMetric`` plus Boundary AP (``metric='boundary'``).

    ``'bbox'``, ``'segm'``, ``'proposal'`` and ``'proposal_fast'`` are the
    parent's, evaluated by the parent.  ``'boundary'`` is Boundary AP of the
    mask predictions ``'segm'`` evaluates (their boxes left out, so that the
    area ranges use mask areas, as the parent does for ``'segm'``), with the
    parent's settings (``iou_thrs``, ``proposal_nums`` as ``maxDets``, the
    categories and images of the dataset), reported as ``'segm'`` is:
    ``boundary_mAP``, ``boundary_mAP_50``, ... (``metric_items`` chooses), the
    ``boundary_mAP_copypaste`` log line, COCO's printed summary, and with
    ``classwise=True`` the per-category table, whose entries are named
    ``boundary_<category>_precision`` (the parent names ``'bbox'``'s and
    ``'segm'``'s both ``<category>_precision``).

    Parameters
    ----------
    ann_file : str, optional
        As for ``CocoMetric``.
    metric : str or list of str
        As for ``CocoMetric``, and ``'boundary'``.
    *args, **kwargs
        ``CocoMetric``'s other arguments (``classwise``, ``iou_thrs``,
        ``metric_items``, ``format_only``, ``outfile_prefix``,
        ``collect_device``, ``prefix``, ...).
    dilation_ratio : float, default 0.02
        Boundary width as a fraction of the image diagonal.

    Raises
    ------
    KeyError
        For an unknown metric (the parent's error), or, when evaluating,
        ``'boundary'`` without mask predictions.
    """

    def __init__(self, ann_file: Optional[str] = None, metric="bbox", *args, dilation_ratio: float = 0.02,
                 **kwargs) -> None:
        metrics = _split_metrics(metric)
        super().__init__(ann_file, [m for m in metrics if m not in self._OWN], *args, **kwargs)
        self._init_boundary(metrics, dilation_ratio)

    def _evaluate_own(self, metric: str, preds, eval_results: dict, logger) -> bool:
        self._check_metric_items(_COCO_ITEMS)
        predictions = self._segm_results(preds)
        if not predictions:
            logger.error(_EMPTY)
            return False
        coco_dt = self._coco_api.loadRes(predictions)
        coco_eval = COCOeval(self._coco_api, coco_dt, BOUNDARY, dilation_ratio=self.dilation_ratio)
        coco_eval.params.catIds = self.cat_ids
        coco_eval.params.imgIds = self.img_ids
        coco_eval.params.maxDets = list(self.proposal_nums)
        coco_eval.params.iouThrs = self.iou_thrs
        coco_eval.evaluate()
        coco_eval.accumulate()
        coco_eval.summarize()
        if self.classwise:
            self._coco_per_category(coco_eval, eval_results, logger)
        for item in self.metric_items or _COCO_ITEMS[:6]:
            eval_results[f"{metric}_{item}"] = _fmt(coco_eval.stats[_COCO_ITEMS.index(item)])
        ap = coco_eval.stats[:6]
        logger.info(f"{metric}_mAP_copypaste: " + " ".join(f"{v:.3f}" for v in ap))
        return True

    def _coco_per_category(self, coco_eval, eval_results: dict, logger) -> None:
        """The per-category table (AP, AP50, AP75, APs, APm, APl) of CocoMetric's ``classwise``."""
        from terminaltables import AsciiTable  # an MMDetection requirement

        precisions = coco_eval.eval["precision"]  # iou, recall, category, area range, max dets
        rows = []
        for idx, cat_id in enumerate(self.cat_ids):
            name = self._coco_api.loadCats(cat_id)[0]["name"]
            cells = []
            for iou, area in ((slice(None), 0), (0, 0), (5, 0), (slice(None), 1), (slice(None), 2),
                              (slice(None), 3)):
                p = precisions[iou, :, idx, area, -1]
                p = p[p > -1]
                cells.append(np.mean(p) if p.size else float("nan"))
            eval_results[f"{BOUNDARY}_{name}_precision"] = round(cells[0], 3)
            rows.append([name] + [f"{round(v, 3)}" for v in cells])
        headers = ["category", "mAP", "mAP_50", "mAP_75", "mAP_s", "mAP_m", "mAP_l"]
        logger.info("\n" + AsciiTable([headers] + rows).table)


@METRICS.register_module()
class BoundaryLVISMetric(_BoundaryMetric, LVISMetric):
    """MMDetection's ``LVISMetric`` plus Boundary AP (``metric='boundary'``).

    ``'bbox'``, ``'segm'`` and ``'boundary'`` are evaluated with
    :class:`boundary_api.LVISEval` (lvis' numbers and printed lines on any
    numpy; lvis 0.5.3's own ``LVISEval`` needs numpy < 1.24), each as the
    parent evaluates ``'segm'``: the same results files, up to 300 detections
    per image, the keys ``<metric>_AP``, ``<metric>_AP50``, ...,
    ``<metric>_APf`` (``metric_items`` chooses), lvis' printed summary, and
    with ``classwise=True`` the per-category table.  ``'bbox'`` and
    ``'segm'`` equal the parent's; note that the parent's ``'segm'`` keeps
    the boxes, so lvis takes the boxes' areas for its small / medium / large
    ranges there, while ``'boundary'`` uses the masks' areas (as
    ``boundary-eval`` does).  ``'proposal'`` and ``'proposal_fast'`` are the
    parent's.  Per-category entries of ``'boundary'`` are named
    ``boundary_<category>_precision``.

    Parameters
    ----------
    ann_file : str, optional
        As for ``LVISMetric``.
    metric : str or list of str
        As for ``LVISMetric``, and ``'boundary'``.
    *args, **kwargs
        ``LVISMetric``'s other arguments.
    dilation_ratio : float, default 0.02
        Boundary width as a fraction of the image diagonal.
    """

    _OWN = ("bbox", "segm", BOUNDARY)

    def __init__(self, ann_file: Optional[str] = None, metric="bbox", *args, dilation_ratio: float = 0.02,
                 **kwargs) -> None:
        metrics = _split_metrics(metric)
        super().__init__(ann_file, [m for m in metrics if m not in self._OWN], *args, **kwargs)
        self._init_boundary(metrics, dilation_ratio)

    def _evaluate_own(self, metric: str, preds, eval_results: dict, logger) -> bool:
        from ..lvis import LVISEval, LVISResults

        if metric == BOUNDARY:
            dt = self._segm_results(preds)
        else:
            dt = self._boundary_files[metric]  # the parent's file, read as the parent reads it
        try:
            lvis_dt = LVISResults(self._lvis_api, dt)
        except IndexError:
            logger.info(_EMPTY)
            return False
        # (the parent sets params.imgIds, which LVISEval does not read: it evaluates
        # every image of the ground truth, params.img_ids, as here)
        lvis_eval = LVISEval(self._lvis_api, lvis_dt, metric, dilation_ratio=self.dilation_ratio)
        lvis_eval.evaluate()
        lvis_eval.accumulate()
        lvis_eval.summarize()
        lvis_results = lvis_eval.get_results()
        if self.classwise:
            self._lvis_per_category(metric, lvis_eval, eval_results, logger)
        items = self.metric_items or _LVIS_DEFAULT_ITEMS
        for k, v in lvis_results.items():
            if k in items:
                eval_results[f"{metric}_{k}"] = float(f"{float(v):.3f}")
        lvis_eval.print_results()
        return True

    def _lvis_per_category(self, metric: str, lvis_eval, eval_results: dict, logger) -> None:
        """LVISMetric's ``classwise`` table: AP per category, three pairs of columns."""
        from terminaltables import AsciiTable  # an MMDetection requirement

        precisions = lvis_eval.eval["precision"]  # iou, recall, category, area range
        cells = []
        for idx, cat_id in enumerate(self.cat_ids):
            name = self._lvis_api.load_cats([cat_id])[0]["name"]
            p = precisions[:, :, idx, 0]
            p = p[p > -1]
            ap = np.mean(p) if p.size else float("nan")
            key = f"{name}_precision" if metric != BOUNDARY else f"{BOUNDARY}_{name}_precision"
            eval_results[key] = round(ap, 3)
            cells += [name, f"{float(ap):0.3f}"]
        columns = min(6, len(cells))
        rows = itertools.zip_longest(*[cells[i::columns] for i in range(columns)])
        logger.info("\n" + AsciiTable([["category", "AP"] * (columns // 2)] + list(rows)).table)

