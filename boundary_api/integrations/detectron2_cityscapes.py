"""Detectron2's ``CityscapesInstanceEvaluator`` plus Boundary AP.

Change the evaluator a ``train_net.py`` builds for Cityscapes instance
segmentation, nothing else::

    from boundary_api.integrations.detectron2 import BoundaryCityscapesInstanceEvaluator

    if evaluator_type == "cityscapes_instance":
        return BoundaryCityscapesInstanceEvaluator(dataset_name)

``evaluate()`` returns Detectron2's ``results["segm"]`` (computed by
cityscapesScripts, as before) and ``results["boundary"]``: ``AP``, ``AP50``
and ``AP-<class>`` in percent (NaN for a class without ground truth), computed
by :mod:`boundary_api.instance.cityscapes` on the very files Detectron2 wrote
for cityscapesScripts.  Importing it requires Detectron2.
"""
from __future__ import annotations

import logging
from collections import OrderedDict

try:
    from detectron2.evaluation import CityscapesInstanceEvaluator
    from detectron2.utils import comm
    from detectron2.utils.file_io import PathManager
except ImportError as exc:  # not installed, or installed but not importable
    raise ImportError(
        "boundary_api's Cityscapes evaluator for Detectron2 needs Detectron2, which is not on PyPI: install "
        "it from source, e.g. pip install 'git+https://github.com/facebookresearch/detectron2.git' (after "
        "torch). Without Detectron2, boundary_api.instance.cityscapes.evaluate_cityscapes evaluates "
        f"cityscapesScripts' result files directly. (Importing Detectron2 failed with: {exc})"
    ) from exc

from .._parallel import resolve_threads
from ..instance.cityscapes import CLASSES, evaluate_img_lists, find_ground_truth, find_predictions
from ..masks.boundary import check_dilation_ratio

__all__ = ["BoundaryCityscapesInstanceEvaluator"]

TASK = "boundary"


class BoundaryCityscapesInstanceEvaluator(CityscapesInstanceEvaluator):
    """Detectron2's ``CityscapesInstanceEvaluator`` plus Boundary AP.

    As in Detectron2, every process writes its predictions to a shared
    temporary folder, ``evaluate()`` must be called on all processes, and only
    the main process evaluates (the others return None).

    Parameters
    ----------
    dataset_name : str
        A dataset whose metadata has ``thing_classes`` and ``gt_dir`` (as
        Detectron2's Cityscapes registration sets them).
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (0.005, the
        paper's value for Cityscapes).
    num_threads : int, optional
        Threads for the boundary evaluation (default: all cores).
    """

    def __init__(self, dataset_name, *, dilation_ratio=0.005, num_threads=None):
        super().__init__(dataset_name)
        self._dilation_ratio = check_dilation_ratio(dilation_ratio)
        self._num_threads = resolve_threads(num_threads)
        if not hasattr(self, "_logger"):
            self._logger = logging.getLogger(__name__)

    def _evaluate_boundary(self):
        gt_dir = PathManager.get_local_path(self._metadata.gt_dir)
        gt_files = find_ground_truth(gt_dir)
        res = evaluate_img_lists(find_predictions(gt_files, self._temp_dir), gt_files, iou_type="boundary",
                                 dilation_ratio=self._dilation_ratio, num_threads=self._num_threads)
        out = OrderedDict([("AP", res["AP"] * 100), ("AP50", res["AP50"] * 100)])
        for name in CLASSES:
            out[f"AP-{name}"] = res["per_class"][name]["AP"] * 100
        return out

    def evaluate(self):
        """Detectron2's results plus ``"boundary"`` (on the main process; None elsewhere)."""
        comm.synchronize()
        boundary = None
        if comm.get_rank() == 0:
            # before Detectron2's evaluate(), which removes the prediction files
            self._logger.info("Evaluating Boundary AP under %s ...", self._temp_dir)
            boundary = self._evaluate_boundary()
        results = super().evaluate()
        if results is None or boundary is None:
            return results
        results[TASK] = boundary
        self._logger.info("Boundary AP: %.3f, AP50: %.3f", boundary["AP"], boundary["AP50"])
        return results
