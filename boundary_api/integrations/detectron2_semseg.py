"""Detectron2's semantic segmentation evaluator with per-class Boundary IoU by the paper's
definition.

Change the evaluator a ``train_net.py`` builds, nothing else::

    from boundary_api.integrations.detectron2_semseg import BoundarySemSegEvaluator

    class Trainer(DefaultTrainer):
        @classmethod
        def build_evaluator(cls, cfg, dataset_name, output_folder=None):
            return BoundarySemSegEvaluator(dataset_name, distributed=True, output_dir=output_folder)

``results["sem_seg"]`` keeps every key of Detectron2's ``SemSegEvaluator``
(``mIoU``, ``fwIoU``, ``IoU-<class>``, ``mACC``, ``pACC``, ``ACC-<class>``,
percentages, with Detectron2's values), and its boundary keys
``BoundaryIoU-<class>`` and ``min(IoU, B-Iou)-<class>`` now hold the numbers
of :mod:`boundary_api.semantic`; ``mBIoU`` is added.  As Detectron2 does with
its own results, the final ``results`` (boundary keys included) are logged
once and, with an ``output_dir``, saved to ``sem_seg_evaluation.pth``.

How they differ from Detectron2's own boundary IoU
--------------------------------------------------
Detectron2 erodes the whole multi-class label map with a grayscale
``cv2.erode`` and takes ``label - eroded label`` as the "boundary", then
counts those differences as if they were classes.  On a border between
classes 5 and 2 the band holds 3, so pixels are credited to the wrong class;
interior pixels hold 0 and are counted for class 0; the band of a predicted
class is not cut where the ground truth is ignored; it is limited to fewer
than 255 classes.  Here each class's boundary is taken on its own binary mask
(``M AND NOT erode(M)`` on run lengths, the paper's definition), ignore
pixels removed from both masks before the boundaries are taken, and there is
no limit on the number of classes.  Detectron2's IoU is NaN for a class that
is absent from the ground truth; ``BoundaryIoU-<class>`` is NaN only for a
class absent from both maps (0 if only predicted), and ``mBIoU`` averages
over the classes present in either map, as mmsegmentation's mIoU does.
"""
from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np

try:
    from detectron2.evaluation import SemSegEvaluator
    from detectron2.utils import comm
except ImportError as exc:  # not installed, or installed but not importable
    raise ImportError(
        "boundary_api.integrations.detectron2_semseg needs Detectron2, which is not on PyPI: install it "
        "from source, e.g. pip install 'git+https://github.com/facebookresearch/detectron2.git' (after "
        "torch). Without Detectron2, boundary_api.semantic.SemanticEvaluator evaluates label maps "
        f"directly. (Importing Detectron2 failed with: {exc})"
    ) from exc

import os
from collections.abc import Mapping

from ..masks.boundary import check_dilation_ratio
from ..semantic import SemanticEvaluator

__all__ = ["BoundarySemSegEvaluator"]

#: the file Detectron2's SemSegEvaluator saves its results to, in ``output_dir``
RESULTS_FILE = "sem_seg_evaluation.pth"


class _HoldResultsLine:
    """Detectron2's logger while its ``evaluate()`` runs, holding back the one line
    that logs the results (they are logged, with the boundary keys, afterwards)."""

    def __init__(self, logger):
        self._wrapped = logger

    def info(self, msg, *args, **kwargs):
        if isinstance(msg, Mapping) and "sem_seg" in msg:
            return
        self._wrapped.info(msg, *args, **kwargs)

    def __getattr__(self, name):
        return getattr(self._wrapped, name)


class BoundarySemSegEvaluator(SemSegEvaluator):
    """Detectron2's ``SemSegEvaluator`` whose Boundary IoU follows the paper.

    Parameters
    ----------
    dataset_name, distributed, output_dir, **kwargs
        As for ``SemSegEvaluator`` (``sem_seg_loading_fn``, ...).
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02).
    num_threads : int, optional
        Threads of the per-image kernel calls (default: all cores).
    """

    def __init__(self, dataset_name, distributed=True, output_dir=None, *, dilation_ratio=0.02,
                 num_threads=None, **kwargs):
        self._dilation_ratio = check_dilation_ratio(dilation_ratio)
        super().__init__(dataset_name, distributed, output_dir, **kwargs)
        self._semantic = SemanticEvaluator(self._num_classes, ignore_index=int(self._ignore_label),
                                           dilation_ratio=self._dilation_ratio, num_threads=num_threads)

    def reset(self):
        super().reset()
        if hasattr(self, "_semantic"):
            self._semantic.reset()

    def process(self, inputs, outputs):
        """As Detectron2's: ``outputs[i]["sem_seg"]`` are (C, H, W) scores, the
        ground truth is read from the dataset's ``sem_seg_file_name``."""
        for inp, out in zip(inputs, outputs):
            scores = out["sem_seg"] if isinstance(out, dict) else out
            pred = np.array(scores.argmax(dim=0).to(self._cpu_device), dtype=np.int64)
            gt_file = self.input_file_to_gt_file[inp["file_name"]]
            gt = self.sem_seg_loading_fn(gt_file, dtype=int)
            self._semantic.process(gt, pred, name=gt_file)
            self._predictions.extend(self.encode_json_sem_seg(pred, inp["file_name"]))

    def _detectron2_conf_matrix(self) -> np.ndarray:
        """Detectron2's layout: ``[predicted, ground truth]``, last row/column = none/ignored."""
        n = self._num_classes
        conf = self._semantic.confusion_matrix
        out = np.zeros((n + 1, n + 1), np.int64)
        out[:n, :n] = conf[:, :n].T
        out[n, :n] = conf[:, n]
        return out

    def evaluate(self):
        """Detectron2's results with this package's boundary numbers; None off the main process."""
        self._conf_matrix = self._detectron2_conf_matrix()
        counts = self._semantic.boundary_counts
        if self._distributed:
            comm.synchronize()
            counts = sum(comm.all_gather(counts))
        had = getattr(self, "_compute_boundary_iou", None)
        self._compute_boundary_iou = False  # Detectron2's own erosion of the label map: not wanted
        logger = self._logger
        self._logger = _HoldResultsLine(logger)  # logged below, with the boundary keys
        try:
            results = super().evaluate()
        finally:
            self._logger = logger
            if had is None:
                del self._compute_boundary_iou
            else:
                self._compute_boundary_iou = had
        if results is None or "sem_seg" not in results:
            return results
        n = self._num_classes
        conf = self._conf_matrix  # gathered by Detectron2 on the main process
        tp = np.diagonal(conf)[:n]
        union = conf[:n, :n].sum(axis=1) + conf[:, :n].sum(axis=0) - tp  # predicted + ground truth - both
        b_union = counts[:, 0] + counts[:, 1] - counts[:, 2]
        biou = [float(counts[c, 2] / b_union[c]) if union[c] > 0 else math.nan for c in range(n)]
        present = [b for b in biou if not math.isnan(b)]
        old = results["sem_seg"]
        index = {f"IoU-{name}": c for c, name in enumerate(self._class_names)}
        res = OrderedDict()
        for key, value in old.items():
            if key.startswith("BoundaryIoU-") or key.startswith("min(IoU, B-Iou)-"):
                continue
            res[key] = value
            if key == "fwIoU":
                res["mBIoU"] = 100 * sum(present) / len(present) if present else math.nan
            elif key in index:
                c = index[key]
                res[f"BoundaryIoU-{key[4:]}"] = 100 * biou[c]
                iou = value / 100
                res[f"min(IoU, B-Iou)-{key[4:]}"] = (math.nan if math.isnan(iou) or math.isnan(biou[c])
                                                     else 100 * min(iou, biou[c]))
        results["sem_seg"] = res
        if self._output_dir:
            # Detectron2 saved its results without the boundary keys: save them again with them
            import torch
            from detectron2.utils.file_io import PathManager

            with PathManager.open(os.path.join(self._output_dir, RESULTS_FILE), "wb") as f:
                torch.save(res, f)
        self._logger.info("Boundary IoU (dilation ratio %s): mBIoU %.2f", self._dilation_ratio, res["mBIoU"])
        self._logger.info(results)  # as Detectron2 logs its results: per-class IoU and BoundaryIoU
        return results
