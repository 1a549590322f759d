"""Detectron2 evaluators that report Boundary AP next to Mask AP.

Change the evaluator a ``train_net.py`` builds, nothing else::

    from boundary_api.detectron2 import BoundaryCOCOEvaluator, BoundaryLVISEvaluator

    class Trainer(DefaultTrainer):
        @classmethod
        def build_evaluator(cls, cfg, dataset_name, output_folder=None):
            output_folder = output_folder or os.path.join(cfg.OUTPUT_DIR, "inference")
            if "lvis" in dataset_name:
                return BoundaryLVISEvaluator(dataset_name, output_dir=output_folder)
            return BoundaryCOCOEvaluator(dataset_name, output_dir=output_folder)

The results gain ``results["boundary"]`` with the keys of
``results["segm"]``.  This module is a thin layer over
:mod:`boundary_api.d2_results`, which does the work without Detectron2.
Importing it requires Detectron2, which is installed from source.
"""
from __future__ import annotations

try:
    from detectron2.evaluation import COCOEvaluator, LVISEvaluator
    from detectron2.utils import comm
    from detectron2.utils.file_io import PathManager
    from detectron2.utils.logger import create_small_table
except ImportError as exc:  # not installed, or installed but not importable
    raise ImportError(
        "boundary_api.detectron2 needs Detectron2, which is not on PyPI: install it from source, "
        "e.g. pip install 'git+https://github.com/facebookresearch/detectron2.git' (after torch; see "
        "https://detectron2.readthedocs.io/en/latest/tutorials/install.html). Without Detectron2, "
        "boundary_api.integrations.d2_results (coco_boundary_metrics, lvis_boundary_metrics) evaluates "
        f"instances_to_coco_json output directly. (Importing Detectron2 failed with: {exc})"
    ) from exc

import itertools
import json
import os

from ..instance.cache import cache_for
from ..masks.boundary import check_dilation_ratio
from .d2_results import TASK, coco_boundary_metrics, lvis_boundary_metrics, lvis_task_metrics, shared_ground_truth

__all__ = ["BoundaryCOCOEvaluator", "BoundaryLVISEvaluator", "BoundaryCityscapesInstanceEvaluator"]


class _BoundaryTask:
    """What both evaluators add: the ``"boundary"`` task.

    Detectron2 only accepts its own task names, so ``"boundary"`` is taken
    out of the tasks handed to it and evaluated after Detectron2's tasks, on
    a copy of the predictions made before Detectron2 rewrites their category
    ids in place.
    """

    def _take_boundary_task(self, tasks, dilation_ratio):
        """Remember whether the boundary task was asked for; return Detectron2's tasks."""
        self._dilation_ratio = check_dilation_ratio(dilation_ratio)
        if isinstance(tasks, (list, tuple, set, frozenset)) and len(tasks) > 0:
            tasks = tuple(tasks)
            # explicit tasks: boundary when asked for, or next to "segm"
            self._boundary_requested = TASK in tasks or "segm" in tasks
            return tuple(t for t in tasks if t != TASK)
        # None (or a deprecated CfgNode): derived from the predictions
        self._boundary_requested = None
        return tasks

    def _tasks_from_predictions(self, predictions):
        # Detectron2 asks only when its tasks are empty: with explicit tasks
        # that means tasks=("boundary",), so it has nothing of its own to do
        if self._boundary_requested is not None:
            return ()
        return super()._tasks_from_predictions(predictions)

    def _boundary_snapshot(self, predictions):
        """Copies of the result dicts if the boundary task runs, else None."""
        results = [r for p in predictions for r in p.get("instances", ())]
        has_masks = any("segmentation" in r for r in results)
        if self._boundary_requested is None:
            wanted = has_masks
        elif self._boundary_requested and results and not has_masks:
            self._logger.warning("The %s task needs mask predictions; these have none.", TASK)
            wanted = False
        else:
            wanted = self._boundary_requested
        return [dict(r) for r in results] if wanted else None

    def _shared_ground_truth(self, gt):
        """The ground truth loaded before from the same file, so that its
        cached boundaries are reused; only in the process that evaluates."""
        if self._distributed and not comm.is_main_process():
            return gt
        try:
            path = PathManager.get_local_path(self._metadata.json_file)
        except Exception:  # no usable local file: keep Detectron2's object
            return gt
        return shared_ground_truth(gt, path)


class BoundaryCOCOEvaluator(_BoundaryTask, COCOEvaluator):
    """Detectron2's ``COCOEvaluator`` plus Boundary AP.

    Whenever the predictions carry masks (and ``tasks`` is None or contains
    ``"segm"`` or ``"boundary"``), ``evaluate()`` also returns
    ``results["boundary"]``: ``AP, AP50, AP75, APs, APm, APl`` and
    ``AP-<category name>``, in percent, NaN where undefined, logged like
    Detectron2's ``"segm"`` tables.  Only the main process evaluates when
    ``distributed=True``, as in Detectron2.

    Ground-truth boundaries are computed once per annotation file and process:
    the evaluators of later evaluations (Detectron2 builds a new one each
    time) reuse the ground-truth object, and so its cached boundaries.  It
    stays in memory; :func:`boundary_api.d2_results.release_shared_ground_truth`
    drops it.

    Parameters
    ----------
    dataset_name, tasks, distributed, output_dir, **kwargs
        As for ``COCOEvaluator`` (``max_dets_per_image``, ``use_fast_impl``,
        ``kpt_oks_sigmas``, ``allow_cached_coco``, ...).  ``tasks`` may also
        name ``"boundary"``.
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02).
    """

    def __init__(self, dataset_name, tasks=None, distributed=True, output_dir=None, *,
                 dilation_ratio=0.02, **kwargs):
        tasks = self._take_boundary_task(tasks, dilation_ratio)
        super().__init__(dataset_name, tasks, distributed, output_dir, **kwargs)
        self._coco_api = self._shared_ground_truth(self._coco_api)
        # Detectron2's own evaluation overwrites the ground truths' 'ignore'
        # flags with iscrowd; Boundary AP reads their own (the reference's rule)
        cache_for(self._coco_api).remember_ignore_flags()

    def _eval_predictions(self, predictions, img_ids=None):
        results = self._boundary_snapshot(predictions)
        super()._eval_predictions(predictions, img_ids=img_ids)
        if results is None or not self._do_evaluation:
            return
        mapping = self._metadata.get("thing_dataset_id_to_contiguous_id", None)
        self._results[TASK] = coco_boundary_metrics(
            self._coco_api, results,
            category_id_map=None if mapping is None else {v: k for k, v in mapping.items()},
            class_names=self._metadata.get("thing_classes", None),
            dilation_ratio=self._dilation_ratio,
            max_dets_per_image=getattr(self, "_max_dets_per_image", None),
            img_ids=img_ids,
            logger=self._logger,
        )


class BoundaryLVISEvaluator(_BoundaryTask, LVISEvaluator):
    """Detectron2's ``LVISEvaluator`` plus Boundary AP, on any numpy.

    Whenever the predictions carry masks (and ``tasks`` is None or contains
    ``"segm"`` or ``"boundary"``), ``evaluate()`` also returns
    ``results["boundary"]``: ``AP, AP50, AP75, APs, APm, APl, APr, APc, APf``
    in percent, ``-100`` where LVIS reports -1 (as Detectron2's LVIS tables).
    Ground truth is shared and cached as for
    :class:`BoundaryCOCOEvaluator`.

    The ``"bbox"`` and ``"segm"`` tasks run through
    :class:`boundary_api.LVISEval` instead of ``lvis.LVISEval``: the same
    numbers, keys (``-100`` where LVIS reports -1), log lines and tables as
    Detectron2's, but also on numpy >= 1.24, where lvis 0.5.3's own
    ``accumulate`` fails on ``np.float``.

    Parameters
    ----------
    dataset_name, tasks, distributed, output_dir, **kwargs
        As for ``LVISEvaluator`` (``max_dets_per_image``, ...).  ``tasks``
        may also name ``"boundary"``.
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02).
    ap : {'standard', 'fixed', 'pooled'}, optional
        'fixed': every task ("bbox", "segm", "boundary") reports Fixed AP
        (Dave et al. 2021): the ``dets_per_cat`` best results of each
        category over the dataset, no limit per image (``max_dets_per_image``
        is not used); 'pooled': Pooled AP (``AP, APr, APc, APf``).  The
        model must output enough results per category: see
        docs/lvis_fixed_pooled.md.  Default 'standard': LVIS' AP.
    dets_per_cat : int, optional
        K of Fixed / Pooled AP (default 10,000).
    """

    def __init__(self, dataset_name, tasks=None, distributed=True, output_dir=None, *,
                 dilation_ratio=0.02, ap="standard", dets_per_cat=10000, **kwargs):
        from ..lvis.fixed_pooled import check_ap, check_dets_per_cat

        self._ap = check_ap(ap)
        self._dets_per_cat = check_dets_per_cat(dets_per_cat)
        tasks = self._take_boundary_task(tasks, dilation_ratio)
        super().__init__(dataset_name, tasks, distributed, output_dir, **kwargs)
        self._lvis_api = self._shared_ground_truth(self._lvis_api)

    def _eval_predictions(self, predictions):
        """Detectron2's ``LVISEvaluator._eval_predictions``, its tasks
        evaluated with boundary_api, then the boundary task."""
        results = self._boundary_snapshot(predictions)
        self._logger.info("Preparing results in the LVIS format ...")
        lvis_results = list(itertools.chain(*[x["instances"] for x in predictions]))
        tasks = self._tasks or self._tasks_from_predictions(lvis_results)
        mapping = self._metadata.get("thing_dataset_id_to_contiguous_id", None)
        # dataset category ids, in place as Detectron2 does
        if mapping is not None:
            reverse = {v: k for k, v in mapping.items()}
            for r in lvis_results:
                r["category_id"] = reverse[r["category_id"]]
        else:  # LVIS: contiguous ids are the dataset ids minus one
            for r in lvis_results:
                r["category_id"] += 1
        if self._output_dir:
            file_path = os.path.join(self._output_dir, "lvis_instances_results.json")
            self._logger.info("Saving results to {}".format(file_path))
            with PathManager.open(file_path, "w") as f:
                f.write(json.dumps(lvis_results))
                f.flush()
        if not self._do_evaluation:
            self._logger.info("Annotations are not available for evaluation.")
            return
        self._logger.info("Evaluating predictions ...")
        for task in sorted(tasks):
            self._results[task] = lvis_task_metrics(
                self._lvis_api, lvis_results, task,
                max_dets_per_image=getattr(self, "_max_dets_per_image", None),
                logger=self._logger, table=create_small_table, ap=self._ap, dets_per_cat=self._dets_per_cat)
        if results is None:
            return
        self._results[TASK] = lvis_boundary_metrics(
            self._lvis_api, results,
            # Detectron2's LVIS ids are the dataset ids minus one
            category_id_map=_plus_one if mapping is None else {v: k for k, v in mapping.items()},
            dilation_ratio=self._dilation_ratio,
            max_dets_per_image=getattr(self, "_max_dets_per_image", None),
            logger=self._logger, ap=self._ap, dets_per_cat=self._dets_per_cat,
        )


def _plus_one(category_id):
    return category_id + 1
# Cityscapes instance segmentation has its own module; its evaluator is exported here too.
from .detectron2_cityscapes import BoundaryCityscapesInstanceEvaluator  # noqa: E402
