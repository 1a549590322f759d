"""``boundary_api.LVISEval``: lvis' LVISEval with ``iou_type='boundary'``."""
from __future__ import annotations

import datetime
import importlib
import logging
import os
import sys
import types
from typing import Optional

import numpy as np


def _import_lvis_without_vis() -> types.ModuleType:
    """Import the ``lvis`` package without loading ``lvis.vis`` yet.

    ``lvis/__init__.py`` imports its plotting module, which imports OpenCV and
    ``matplotlib.pyplot`` (about 0.7 s here, most of a small evaluation) and
    which no evaluation uses.  While the package initialises, a stand-in
    ``lvis.vis`` answers its ``from lvis.vis import LVISVis``; afterwards the
    stand-in is gone and the package loads the real module on first use of
    ``lvis.LVISVis`` or ``lvis.vis`` (``import lvis.vis`` works as usual).
    Everything else the package does on import (its logging set-up) is
    unchanged.  Nothing is done when lvis or lvis.vis is already loaded.
    """
    if "lvis" in sys.modules or "lvis.vis" in sys.modules:
        return importlib.import_module("lvis")
    stand_in = types.ModuleType("lvis.vis")

    class LVISVis:  # placeholder while lvis/__init__ runs
        pass

    stand_in.LVISVis = LVISVis
    sys.modules["lvis.vis"] = stand_in
    try:
        package = importlib.import_module("lvis")
    except ImportError:
        # another lvis version needing more from lvis.vis: import it plainly
        sys.modules.pop("lvis.vis", None)
        sys.modules.pop("lvis", None)
        return importlib.import_module("lvis")
    finally:
        if sys.modules.get("lvis.vis") is stand_in:
            del sys.modules["lvis.vis"]
    names = vars(package)
    for name, value in (("LVISVis", LVISVis), ("vis", stand_in)):
        if names.get(name) is value:
            del names[name]

    def __getattr__(name):
        if name in ("LVISVis", "vis"):
            vis = importlib.import_module("lvis.vis")
            names["LVISVis"] = vis.LVISVis
            return vis if name == "vis" else vis.LVISVis
        raise AttributeError(f"module 'lvis' has no attribute {name!r}")

    package.__getattr__ = __getattr__
    return package


_lvis = _import_lvis_without_vis()
import lvis.eval as _lvis_eval  # noqa: E402

from ._engine import Evaluation, FromState
from .._io import read_json, warn_large_dilation_ratio
from ._checks import check_instances_dataset, check_results, rle_strings_checked
from .._parallel import resolve_threads
from ..masks.boundary import check_dilation_ratio

__all__ = ["LVIS", "LVISResults", "LVISEval"]

IOU_TYPES = ("segm", "bbox", "boundary")


def _is_path(x) -> bool:
    return isinstance(x, (str, bytes, os.PathLike))


class _CheckedJson:
    """Routes lvis' ``_load_json`` to documents already read and checked."""

    def _load_json(self, path):
        pre = self.__dict__.get("_preloaded")
        if pre is not None and path in pre:
            return pre.pop(path)
        return read_json(path, "LVIS")


class LVIS(_CheckedJson, _lvis.LVIS):
    """lvis' ``LVIS`` ground truth, with clear errors for bad files.

    Parameters
    ----------
    annotation_path : str or path-like
        LVIS annotation JSON.

    Raises
    ------
    ValueError
        If the file is missing, not JSON, or not an LVIS dataset.
    """

    def __init__(self, annotation_path, _loaded=None):
        path = os.fspath(annotation_path) if _is_path(annotation_path) else annotation_path
        dataset = read_json(path, "ground truth") if _loaded is None else _loaded
        check_instances_dataset(dataset, str(path), lvis=True)
        self._preloaded = {path: dataset}
        super().__init__(path)

    @classmethod
    def from_dataset(cls, dataset: dict, source: str = "ground truth") -> "LVIS":
        """Build from an already loaded LVIS dict (checked, not copied)."""
        return cls(source, _loaded=dataset)


class LVISResults(_CheckedJson, _lvis.LVISResults):
    """lvis' ``LVISResults`` (results capped at ``max_dets`` per image), with
    the results checked against the ground truth before lvis touches them.

    Parameters
    ----------
    lvis_gt : LVIS or str
        Ground truth object or path.
    results : str or list of dict
        Result file or list (compressed-RLE segmentations and/or boxes, scores).
    max_dets : int, optional
        Highest-scoring results kept per image (default 300; negative: all).
    """

    _is_results = True

    def __init__(self, lvis_gt, results, max_dets=300, _loaded=None):
        if _is_path(lvis_gt):
            lvis_gt = LVIS(lvis_gt)
        elif not isinstance(lvis_gt, _lvis.LVIS):
            raise TypeError(f"lvis_gt must be an LVIS object or a path, got {type(lvis_gt).__name__}")
        if isinstance(max_dets, bool) or not isinstance(max_dets, (int, np.integer)):
            raise TypeError(f"max_dets must be an integer, got {max_dets!r}")
        if _is_path(results):
            key = os.fspath(results)
            anns = read_json(key, "results") if _loaded is None else _loaded
            check_results(anns, lvis_gt.imgs, lvis_gt.cats, str(key))
            # (asked before lvis adds boxes; it keeps the very segmentations
            # checked here, so the cache can trust them)
            checked = rle_strings_checked(anns)
            self._preloaded = {key: anns}
            super().__init__(lvis_gt, key, max_dets)
        else:
            check_results(results, lvis_gt.imgs, lvis_gt.cats, "results")
            checked = rle_strings_checked(results)
            super().__init__(lvis_gt, results, max_dets)
        self._rles_checked = checked


def _accumulate_lvis_on_any_numpy(ev) -> None:
    """Run lvis' own ``LVISEval.accumulate`` on ``ev``.

    lvis 0.5.3 calls ``np.float``, removed in numpy 1.24; the function is run
    with a module namespace whose ``np`` also answers ``float``.  Neither
    numpy nor lvis is changed.
    """
    fn = _lvis_eval.LVISEval.accumulate
    if "float" in np.__dict__:
        return fn(ev)

    class _NumpyWithFloat:
        float = float

        def __getattr__(self, name):
            return getattr(np, name)

    namespace = dict(fn.__globals__)
    namespace["np"] = _NumpyWithFloat()
    types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)(ev)


class LVISEval(_lvis_eval.LVISEval):
    """LVIS evaluation with Boundary AP, a drop-in for ``lvis.LVISEval``.

    ``iou_type='boundary'`` uses ``min(mask IoU, boundary IoU)``; 'segm' and
    'bbox' give lvis' numbers.  The federated rules (negative and
    not-exhaustive categories), the per-image detection cap and the
    frequency groups (APr/APc/APf) are lvis' own.  ``run()``,
    ``evaluate()``, ``accumulate()``, ``summarize()``, ``print_results()``,
    ``get_results()``, ``results``, ``eval``, ``eval_imgs`` and ``params``
    behave as in lvis, on numpy 1.x and 2.x.

    Parameters
    ----------
    lvis_gt : LVIS or str
        Ground truth object or annotation path.
    lvis_dt : LVISResults, str or list of dict
        Results object, result file or list.
    iou_type : {'segm', 'bbox', 'boundary'}
    max_dets : int, optional
        Detections kept per image when results are loaded here (default 300).
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02).
    use_fast_impl : bool, optional
        Match and accumulate in Cython (default); ``False`` runs lvis' own
        loops on the same IoUs with identical results.
    num_threads : int, optional
        Threads for the kernels (default: all cores).

    Notes
    -----
    With the fast implementation ``eval['dt_pointers']`` is not filled.
    """

    _state: Optional[Evaluation] = None
    #: built from the kernels' arrays when first read (fast implementation)
    eval_imgs = FromState(lambda state: state.eval_imgs("lvis") if state.matched else None)
    ious = FromState(lambda state: state.iou_dict())

    def __init__(self, lvis_gt, lvis_dt, iou_type="segm", max_dets=300, dilation_ratio=0.02,
                 use_fast_impl=True, num_threads=None):
        if iou_type not in IOU_TYPES:
            raise ValueError(f"iou_type must be one of {', '.join(IOU_TYPES)}; got {iou_type!r}")
        self.dilation_ratio = check_dilation_ratio(dilation_ratio)
        self.use_fast_impl = bool(use_fast_impl)
        self.num_threads = resolve_threads(num_threads)
        if _is_path(lvis_gt):
            lvis_gt = LVIS(lvis_gt)
        if _is_path(lvis_dt) or isinstance(lvis_dt, list):
            lvis_dt = LVISResults(lvis_gt, lvis_dt, max_dets=max_dets)
        super().__init__(lvis_gt, lvis_dt, iou_type="segm" if iou_type == "boundary" else iou_type)
        self.params.iou_type = iou_type
        self.params.max_dets = max_dets
        if iou_type == "boundary":
            warn_large_dilation_ratio(self.dilation_ratio, logging.getLogger(__name__))

    def evaluate(self):
        """Run per-image evaluation (lvis' ``evaluate``)."""
        p = self.params
        self.logger.info("Running per image evaluation.")
        self.logger.info("Evaluate annotation type *{}*".format(p.iou_type))
        p.img_ids = list(np.unique(p.img_ids))
        cat_ids = p.cat_ids if p.use_cats else [-1]
        self._state = None
        self._prepare()
        state = Evaluation(self._gts, self._dts, p.img_ids, cat_ids, bool(p.use_cats),
                           gather=lambda img_id: self._get_gt_dt(img_id, -1), max_det=None,
                           crowd_key=None,
                           dt_extra_ignore=lambda d: d["category_id"] in self.img_nel[d["image_id"]])
        state.compute_ious(p.iou_type, self.lvis_gt, self.lvis_dt, self.dilation_ratio, self.num_threads)
        if self.use_fast_impl:
            state.match(p.area_rng, p.iou_thrs, crowd_rule=False, num_threads=self.num_threads)
            self._state = state
            self.eval_imgs = None
            self.ious = None
        else:
            self.ious = state.iou_dict()
            self.eval_imgs = [self.evaluate_img(img_id, cat_id, area_rng)
                              for cat_id in cat_ids for area_rng in p.area_rng for img_id in p.img_ids]

    def compute_iou(self, img_id, cat_id):
        """IoU matrix of one image and category, (detections x ground truths)."""
        gt, dt = self._get_gt_dt(img_id, cat_id)
        if len(gt) == 0 and len(dt) == 0:
            return []
        state = Evaluation({(img_id, cat_id): gt}, {(img_id, cat_id): dt}, [img_id], [cat_id], True,
                           max_det=None, crowd_key=None)
        state.compute_ious(self.params.iou_type, self.lvis_gt, self.lvis_dt, self.dilation_ratio, 1)
        return state.iou_matrix(0)

    def accumulate(self):
        """Accumulate per-image results into ``eval`` (lvis' ``accumulate``)."""
        state = self._state
        if (state is None or not state.matched or state.nan_scores
                or np.isnan(np.asarray(self.params.rec_thrs, np.float64)).any()):
            # lvis' loops (on the same matching) sort NaN scores and index
            # NaN recall thresholds as they do
            return _accumulate_lvis_on_any_numpy(self)
        self.logger.info("Accumulating evaluation results.")
        p = self.params
        K = len(p.cat_ids) if p.use_cats else 1
        A, T, R = len(p.area_rng), len(p.iou_thrs), len(p.rec_thrs)
        precision, recall, _ = state.accumulate(
            range(K), range(A), [np.iinfo(np.int64).max], range(len(p.img_ids)), p.rec_thrs,
            K, A, 1, with_scores=False, num_threads=self.num_threads)
        self.eval = {
            "params": p,
            "counts": [T, R, K, A],
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
            "precision": precision[..., 0],
            "recall": recall[..., 0],
        }
