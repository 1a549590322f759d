"""Detectron2's ``CityscapesInstanceEvaluator`` plus Boundary AP.

Change the evaluator a ``train_net.py`` builds for Cityscapes instance
segmentation, nothing else::

    from boundary_api.integrations.detectron2 import BoundaryCityscapesInstanceEvaluator

    if evaluator_type == "cityscapes_instance":
        return BoundaryCityscapesInstanceEvaluator(dataset_name)

``evaluate()`` returns Detectron2's ``results["segm"]`` (computed by
cityscapesScripts, as in Detectron2) and ``results["boundary"]``: ``AP``,
``AP50`` and ``AP-<class>`` in percent (NaN for a class without ground truth),
computed by :mod:`boundary_api.cityscapes` on the very files written
for cityscapesScripts.  Importing it requires Detectron2.

Known upstream breakages, worked around here (each logged when it applies):

* Detectron2's ``process()`` and ``evaluate()`` import cityscapesScripts from a
  path that exists only inside Meta (``deeplearning.projects.cityscapesApi``,
  since December 2024), so they fail everywhere else.  ``process()`` is this
  class's own (the same files: ``<image>_pred.txt`` and one ``mask * 255``
  PNG per instance, Cityscapes label ids from the label table), and the
  ``"segm"`` part of ``evaluate()`` runs the public ``cityscapesscripts``
  package the way Detectron2 runs its copy.
* cityscapesScripts 2.3.0 calls ``np.in1d``, which numpy 2.4 removed (a
  stand-in based on ``np.isin`` is present while it runs), and its
  ``writeDict2JSON`` cannot write numpy integers (its ``gtInstances.json``
  and ``matches.json`` are written with numpy scalars as numbers, both in the
  temporary folder, which is removed afterwards).

If cityscapesScripts' part still fails, the error is logged and ``results``
keeps ``"boundary"`` (computed first), without ``"segm"``.
"""
from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import tempfile
from collections import OrderedDict

import numpy as np

try:
    from detectron2.evaluation import CityscapesInstanceEvaluator
    from detectron2.utils import comm
    from detectron2.utils.file_io import PathManager
except ImportError as exc:  # not installed, or installed but not importable
    raise ImportError(
        "boundary_api's Cityscapes evaluator for Detectron2 needs Detectron2, which is not on PyPI: install "
        "it from source, e.g. pip install 'git+https://github.com/facebookresearch/detectron2.git' (after "
        "torch). Without Detectron2, boundary_api.cityscapes.evaluate_cityscapes evaluates "
        f"cityscapesScripts' result files directly. (Importing Detectron2 failed with: {exc})"
    ) from exc

from .._parallel import resolve_threads
from ..cityscapes.evaluation import evaluate_img_lists
from ..cityscapes.files import CLASSES, LABELS, find_ground_truth, find_predictions
from ..masks.boundary import check_dilation_ratio

__all__ = ["BoundaryCityscapesInstanceEvaluator"]

TASK = "boundary"
#: Cityscapes label id of each class name (cityscapesScripts' ``name2label[name].id``)
LABEL_ID = {name: label_id for label_id, (name, _, _) in LABELS.items()}


def _json_value(obj):
    """What ``json`` cannot write itself: numpy scalars and arrays as numbers and lists,
    other objects by their attributes (cityscapesScripts' own rule)."""
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    return obj.__dict__


@contextlib.contextmanager
def _cityscapes_scripts_on_this_numpy(module, folder, logger):
    """cityscapesScripts' instance evaluation ``module`` with the known breakages worked around.

    While the block runs: ``np.in1d`` exists (numpy >= 2.4 removed it) and
    ``module.writeDict2JSON`` writes numpy scalars, with relative file names
    (``matches.json``) in ``folder``.  Everything is put back afterwards.
    """
    added_in1d = not hasattr(np, "in1d")
    if added_in1d:
        logger.info("cityscapesScripts calls np.in1d, which numpy %s no longer has: using np.isin while "
                    "it evaluates", np.__version__)
        np.in1d = lambda ar1, ar2, assume_unique=False, invert=False: np.isin(
            ar1, ar2, assume_unique=assume_unique, invert=invert).ravel()
    original_write = module.__dict__.get("writeDict2JSON")

    def write_dict_to_json(data, file_name):
        path = file_name if os.path.isabs(file_name) else os.path.join(folder, file_name)
        with open(path, "w") as f:
            f.write(json.dumps(data, default=_json_value, sort_keys=True, indent=4))

    module.writeDict2JSON = write_dict_to_json
    try:
        yield module
    finally:
        if original_write is None:
            del module.writeDict2JSON
        else:
            module.writeDict2JSON = original_write
        if added_in1d and hasattr(np, "in1d"):
            del np.in1d


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

    # ----------------------------------------------------------------- pickling
    def __getstate__(self) -> dict:
        """The evaluator with the files written so far in place of its
        temporary folder (an open ``TemporaryDirectory`` belongs to this
        process, and the folder is removed by ``evaluate()``): a clone gets
        a folder of its own with the same files."""
        state = self.__dict__.copy()
        working = state.pop("_working_dir", None)
        if working is not None:
            files = {}
            for name in sorted(os.listdir(self._temp_dir)) if os.path.isdir(self._temp_dir) else ():
                path = os.path.join(self._temp_dir, name)
                if os.path.isfile(path):
                    with open(path, "rb") as f:
                        files[name] = f.read()
            state["_temp_files"] = files
            state.pop("_temp_dir", None)
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        files = state.pop("_temp_files", None)
        self.__dict__.update(state)
        if files is not None:  # as Detectron2's reset() makes it, with the files back
            self._working_dir = tempfile.TemporaryDirectory(prefix="cityscapes_eval_")
            self._temp_dir = self._working_dir.name
            for name, data in files.items():
                with open(os.path.join(self._temp_dir, name), "wb") as f:
                    f.write(data)

    # ------------------------------------------------------------------ process
    def process(self, inputs, outputs):
        """Write the files cityscapesScripts reads, as Detectron2's ``process()`` does.

        Per input image ``<image>_pred.txt`` in the temporary folder, one line
        ``<png> <label id> <score>`` per instance, and the instance's mask as
        ``<image>_<i>_<class>.png`` (0 / 255); an empty text file for an
        output without ``"instances"``.
        """
        for inp, out in zip(inputs, outputs):
            base = os.path.splitext(os.path.basename(inp["file_name"]))[0]
            pred_txt = os.path.join(self._temp_dir, base + "_pred.txt")
            lines = []
            if "instances" in out:
                from PIL import Image

                instances = out["instances"].to(self._cpu_device)
                for i in range(len(instances)):
                    name = self._metadata.thing_classes[int(instances.pred_classes[i])]
                    if name not in LABEL_ID:
                        raise ValueError(f"thing class {name!r} is not a Cityscapes label name")
                    png = os.path.join(self._temp_dir, f"{base}_{i}_{name}.png")
                    mask = np.asarray(instances.pred_masks[i]).astype(np.uint8)  # a CPU tensor or an array
                    Image.fromarray(mask * 255).save(png)
                    lines.append(f"{os.path.basename(png)} {LABEL_ID[name]} {float(instances.scores[i])}\n")
            with open(pred_txt, "w") as f:
                f.writelines(lines)

    # ----------------------------------------------------------------- evaluate
    def _evaluate_boundary(self):
        gt_dir = PathManager.get_local_path(self._metadata.gt_dir)
        gt_files = find_ground_truth(gt_dir)
        res = evaluate_img_lists(find_predictions(gt_files, self._temp_dir), gt_files, iou_type="boundary",
                                 dilation_ratio=self._dilation_ratio, num_threads=self._num_threads)
        averages = res["averages"]  # cityscapesScripts' keys
        out = OrderedDict([("AP", averages["allAp"] * 100), ("AP50", averages["allAp50%"] * 100)])
        for name in CLASSES:
            out[f"AP-{name}"] = averages["classes"][name]["ap"] * 100
        return out

    def _evaluate_segm(self):
        """Detectron2's ``"segm"`` result, by the public cityscapesScripts package."""
        import cityscapesscripts.evaluation.evalInstanceLevelSemanticLabeling as cityscapes_eval

        self._logger.info("Running cityscapesScripts (the public package: Detectron2's own evaluate() "
                          "imports it from a path that exists only inside Meta) ...")
        args = cityscapes_eval.args
        args.predictionPath = os.path.abspath(self._temp_dir)
        args.predictionWalk = None
        args.JSONOutput = False
        args.colorized = False
        args.gtInstancesFile = os.path.join(self._temp_dir, "gtInstances.json")
        gt_dir = PathManager.get_local_path(self._metadata.gt_dir)
        gt_files = glob.glob(os.path.join(gt_dir, "*", "*_gtFine_instanceIds.png"))
        if not gt_files:
            raise FileNotFoundError(f"no ground truth images (*_gtFine_instanceIds.png) under {gt_dir}")
        with _cityscapes_scripts_on_this_numpy(cityscapes_eval, self._temp_dir, self._logger):
            predictions = [cityscapes_eval.getPrediction(gt, args) for gt in gt_files]
            averages = cityscapes_eval.evaluateImgLists(predictions, gt_files, args)["averages"]
        return {"AP": averages["allAp"] * 100, "AP50": averages["allAp50%"] * 100}

    def evaluate(self):
        """Detectron2's results plus ``"boundary"`` (on the main process; None elsewhere).

        The boundary task runs first; if cityscapesScripts' part fails, the
        error is logged and the results hold ``"boundary"`` only.  The
        temporary folder is removed in either case, as Detectron2 does.
        """
        comm.synchronize()
        if comm.get_rank() > 0:
            return None
        try:
            self._logger.info("Evaluating Boundary AP under %s ...", self._temp_dir)
            boundary = self._evaluate_boundary()
            self._logger.info("Boundary AP: %.3f, AP50: %.3f", boundary["AP"], boundary["AP50"])
            results = OrderedDict()
            try:
                results["segm"] = self._evaluate_segm()
            except Exception:  # cityscapesScripts' own part: the boundary result is kept
                self._logger.error("cityscapesScripts' evaluation failed; the results keep the %s task "
                                   "only", TASK, exc_info=True)
            results[TASK] = boundary
            return results
        finally:
            self._working_dir.cleanup()
