"""A Detectron2 evaluator of video instance segmentation (YouTube-VIS 2019/2021,
OVIS) that reports HQ-YTVIS' Tube-Boundary AP beside the official Mask AP.

It has the interface of Mask2Former's video ``YTVISEvaluator`` (also used by
VITA, IDOL and SeqFormer): build it where the training script builds that one::

    from boundary_api.integrations.detectron2_video import BoundaryYTVISEvaluator

    class Trainer(DefaultTrainer):
        @classmethod
        def build_evaluator(cls, cfg, dataset_name, output_folder=None):
            return BoundaryYTVISEvaluator(dataset_name, output_dir=output_folder)

``evaluate()`` returns ``{"segm": {...}, "boundary": {...}}``.  Importing this
module requires Detectron2 (installed from source); the work is done by
:mod:`boundary_api.integrations.d2_video_results`, which needs neither
Detectron2 nor torch.
"""
from __future__ import annotations

try:
    from detectron2.data import MetadataCatalog
    from detectron2.evaluation import DatasetEvaluator
    from detectron2.utils import comm
    from detectron2.utils.file_io import PathManager
except ImportError as exc:  # not installed, or installed but not importable
    raise ImportError(
        "boundary_api.integrations.detectron2_video needs Detectron2, which is not on PyPI: install it from "
        "source, e.g. pip install 'git+https://github.com/facebookresearch/detectron2.git' (after torch). "
        "Without Detectron2, boundary_api.integrations.d2_video_results (instances_to_ytvis_json, ytvis_metrics) "
        f"evaluates the predictions directly. (Importing Detectron2 failed with: {exc})"
    ) from exc

import contextlib
import io
import itertools
import json
import logging
import os
from collections import OrderedDict

from ..masks.boundary import check_dilation_ratio
from ..video import YTVOS
from .d2_video_results import instances_to_ytvis_json, ytvis_metrics

__all__ = ["BoundaryYTVISEvaluator"]

#: the tasks this evaluator knows
TASKS = ("segm", "boundary")


class BoundaryYTVISEvaluator(DatasetEvaluator):
    """Mask2Former's ``YTVISEvaluator`` with the boundary task: YouTube-VIS AP
    (``"segm"``) and HQ-YTVIS Tube-Boundary AP (``"boundary"``), evaluated by
    :class:`boundary_api.video.YTVOSeval` (no vendored API needed).

    Parameters
    ----------
    dataset_name : str
        A registered dataset whose metadata has ``json_file`` (the YouTube-VIS
        ground truth) and, optionally, ``thing_dataset_id_to_contiguous_id``
        and ``thing_classes``.
    tasks : tuple of str, optional
        'segm' and/or 'boundary' (default both).
    distributed : bool
        Gather the predictions of every rank and evaluate on the main one.
    output_dir : str, optional
        Write ``instances_predictions.pth`` and ``results.json`` there, as
        Mask2Former does.
    use_fast_impl : bool
        Native matching (default); False runs the reference loops (same numbers).
    dilation_ratio : float
        Boundary width as a fraction of the frame diagonal (default 0.02).
    """

    def __init__(self, dataset_name, tasks=None, distributed=True, output_dir=None, *, use_fast_impl=True,
                 dilation_ratio=0.02):
        self._logger = logging.getLogger(__name__)
        self._distributed = distributed
        self._output_dir = output_dir
        self._use_fast_impl = use_fast_impl
        self._dilation_ratio = check_dilation_ratio(dilation_ratio)
        tasks = TASKS if tasks is None or not isinstance(tasks, (tuple, list, set, frozenset)) else tuple(tasks)
        unknown = [t for t in tasks if t not in TASKS]
        if unknown:
            raise ValueError(f"unknown task {unknown[0]!r}: the tasks are 'segm' and 'boundary'")
        self._tasks = tuple(t for t in TASKS if t in tasks)
        self._metadata = MetadataCatalog.get(dataset_name)
        json_file = PathManager.get_local_path(self._metadata.json_file)
        with contextlib.redirect_stdout(io.StringIO()):
            self._ytvis_api = YTVOS(json_file)
        self._do_evaluation = "annotations" in self._ytvis_api.dataset

    def reset(self):
        self._predictions = []

    def process(self, inputs, outputs):
        """Add one video's predictions (Mask2Former's video outputs:
        ``pred_scores``, ``pred_labels``, ``pred_masks``)."""
        self._predictions.extend(instances_to_ytvis_json(inputs, outputs))

    def evaluate(self):
        """``{"segm": metrics, "boundary": metrics}`` on the main process (``{}`` elsewhere)."""
        if self._distributed:
            comm.synchronize()
            predictions = list(itertools.chain(*comm.gather(self._predictions, dst=0)))
            if not comm.is_main_process():
                return {}
        else:
            predictions = self._predictions
        if len(predictions) == 0:
            self._logger.warning("[BoundaryYTVISEvaluator] Did not receive valid predictions.")
            return {}
        if self._output_dir:
            import torch

            PathManager.mkdirs(self._output_dir)
            with PathManager.open(os.path.join(self._output_dir, "instances_predictions.pth"), "wb") as f:
                torch.save(predictions, f)
        mapping = getattr(self._metadata, "thing_dataset_id_to_contiguous_id", None)
        reverse = None if mapping is None else {v: k for k, v in mapping.items()}
        if self._output_dir:
            file_path = os.path.join(self._output_dir, "results.json")
            self._logger.info("Saving results to %s", file_path)
            dataset_ids = [dict(p, category_id=reverse[p["category_id"]]) if reverse else p for p in predictions]
            with PathManager.open(file_path, "w") as f:
                f.write(json.dumps(dataset_ids))
        results = OrderedDict()
        if not self._do_evaluation:
            self._logger.info("Annotations are not available for evaluation.")
            return results
        for task in self._tasks:
            results[task] = ytvis_metrics(self._ytvis_api, predictions, task, category_id_map=reverse,
                                          class_names=self._metadata.get("thing_classes", None),
                                          dilation_ratio=self._dilation_ratio, use_fast_impl=self._use_fast_impl,
                                          logger=self._logger)
        return results
