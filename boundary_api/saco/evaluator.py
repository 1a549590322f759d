"""``CGF1Evaluator``: SAM 3's cgF1 evaluator (``sam3/eval/cgf1_eval.py``) as a drop-in.

The official wrapper loads each annotator's ground truth, and for every evaluated pair
and every file loads the pair's predictions (pycocotools' ``loadRes``), evaluates them
(``CGF1Eval``), keeps the best file per pair (the oracle), then accumulates and prints
the summary with the first file's evaluator.  Here the files are read as columns and
every pair against every file is evaluated at once (:mod:`._pairs`); the numbers, the
printed lines, the returned dict and the state left behind (``coco_evals[0].stats``,
``.eval``, ``.evalImgs``, ``eval_img_ids``) are the official ones.  Input outside the
columns' schema, and subclasses that override a step, run the official per-pair
structure instead (:mod:`._loops`), on pycocotools' objects, to the same numbers.
"""
from __future__ import annotations

import copy
import logging
from typing import List, Optional, Union

import numpy as np

from ._inputs import (GroundTruthFile, Predictions, read_predictions, suspect as _suspect,
                      warn_unknown_ids)
from ._pairs import NotNative, score_pairs, select_pairs
from .metrics import (TN, accumulate, eval_img_entry, iou_thresholds, result_dict, select_best, summarize,
                      with_counts)
from .._io import AssertionValueError, warn_large_dilation_ratio
from .._parallel import resolve_threads
from ..masks import _rle
from ..masks.boundary import check_dilation_ratio

__all__ = ["CGF1Evaluator", "IOU_TYPES"]

log = logging.getLogger(__name__)

#: what ``iou_type`` may be: the official 'segm' and 'bbox', and Boundary cgF1
IOU_TYPES = ("segm", "bbox", "boundary")


class CGF1Evaluator:
    """cgF1 of SA-Co predictions against one or several annotators' ground truths.

    A drop-in for SAM 3's ``sam3.eval.cgf1_eval.CGF1Evaluator``: the same
    constructor and ``evaluate(pred_file)``, the same printed summary, the same
    returned dict (``cgF1_eval_<iou_type>_<metric>``, 26 keys) and the same
    state afterwards.  With several ground truths each pair is scored against
    the annotator that suits the predictions best (the oracle).

    Parameters
    ----------
    gt_path : str, path-like, or list of them
        The ground-truth file(s), one per annotator (SA-Co/Gold: three).  Each
        has one image entry per (image, noun phrase) pair with
        ``is_instance_exhaustive``; only pairs exhaustively annotated in every
        file are evaluated, in the first file's order.
    iou_type : {'segm', 'bbox', 'boundary'}
        'segm' and 'bbox' as the official evaluator; 'boundary' is Boundary
        cgF1: the same matching and counting on ``min(mask IoU, Boundary IoU)``.
    verbose : bool
        Print what is loaded and a progress bar, as the official evaluator.
    dilation_ratio : float
        Boundary width as a fraction of the image diagonal ('boundary' only).
    strict : bool
        Refuse input the official code accepts silently but which is probably
        wrong (predictions for pairs the ground truth does not have, ...),
        instead of warning (:class:`~boundary_api.instance.SuspectInputWarning`).
    num_threads : int, optional
        Threads for the kernels (default: all cores); results do not depend on it.

    Attributes
    ----------
    gt_paths : list
    iou_type : str
    eval_img_ids : list
        The evaluated pairs, in order.
    coco_gts, coco_evals : list
        pycocotools ``COCO`` objects of the files and a :class:`CGF1Eval` per
        file (made when first used); after :meth:`evaluate`,
        ``coco_evals[0]`` holds ``stats``, ``eval`` and ``evalImgs``.
    """

    def __init__(self, gt_path, iou_type: str = "segm", verbose: bool = False, *, dilation_ratio: float = 0.02,
                 strict: bool = False, num_threads: Optional[int] = None):
        if iou_type not in IOU_TYPES:
            raise ValueError(f"iou_type must be one of {', '.join(IOU_TYPES)}; got {iou_type!r}")
        self.gt_paths = gt_path if isinstance(gt_path, list) else [gt_path]
        if not self.gt_paths:
            raise ValueError("CGF1Evaluator needs at least one ground-truth file")
        self.iou_type = iou_type
        self.verbose = verbose
        self.dilation_ratio = check_dilation_ratio(dilation_ratio)
        if iou_type == "boundary":
            warn_large_dilation_ratio(self.dilation_ratio, log)
        self.strict = bool(strict)
        self.num_threads = resolve_threads(num_threads)
        self._files = _read_files(self.gt_paths, self.num_threads)
        self._coco_gts = None
        self._coco_evals = None
        self._result = None
        self._native_why = self._native_problem()
        if self._native_why is not None:
            # the per-pair path: pycocotools' objects made now, as the official constructor makes them
            log.info("CGF1Evaluator: the per-pair path (%s)", self._native_why)
            self.coco_evals  # noqa: B018 - (its exceptions are the official constructor's)
        exclude = set()
        for gt in self._files[1:]:
            exclude.update(gt.flagged_ids(False))
        self.eval_img_ids = [i for i in self._files[0].flagged_ids(True) if i not in exclude]

    # ------------------------------------------------------------ pycocotools' objects
    @property
    def coco_gts(self) -> list:
        """pycocotools ``COCO`` objects of the ground truths (made on first use)."""
        if self._coco_gts is None:
            from . import _loops

            self._coco_gts = [_loops.coco_from_file(gt) for gt in self._files]
        return self._coco_gts

    @coco_gts.setter
    def coco_gts(self, value) -> None:
        self._coco_gts = value

    @property
    def coco_evals(self) -> list:
        """One :class:`CGF1Eval` per ground truth (made on first use); after
        :meth:`evaluate`, the first holds the accumulated state."""
        if self._coco_evals is None:
            from .cgf1eval import CGF1Eval

            evals = []
            for gt in self.coco_gts:
                ev = CGF1Eval(coco_gt=gt, iouType=self.iou_type, dilation_ratio=self.dilation_ratio,
                              num_threads=self.num_threads, strict=self.strict)
                ev.useCats = False
                evals.append(ev)
            self._coco_evals = evals
            if self._result is not None:
                self._result.install(evals[0])
        return self._coco_evals

    @coco_evals.setter
    def coco_evals(self, value) -> None:
        self._coco_evals = value

    # ------------------------------------------------------------------ evaluation
    def _native_problem(self) -> Optional[str]:
        """Why the native path cannot evaluate these ground truths (None: it can)."""
        if type(self)._select_best_scoring is not CGF1Evaluator._select_best_scoring:
            return f"{type(self).__name__} overrides _select_best_scoring"
        for gt in self._files:
            if gt.columns is None:
                return f"{gt.name} is outside the column schema"
        cats = [gt.category_ids() for gt in self._files]
        if any(c != cats[0] for c in cats[1:]):
            return "the ground truths have different categories"
        ids = self._files[0].image_ids()
        if len(set(ids)) != len(ids):
            return f"{self._files[0].name} repeats image ids"
        return None

    def evaluate(self, pred_file) -> dict:
        """Evaluate a predictions file: print the summary, return the 26 values.

        Parameters
        ----------
        pred_file : str or path-like
            The predictions, a JSON list as SAM 3's ``coco_writer.py`` writes
            it (a pipe is read once).

        Returns
        -------
        dict
            ``{"cgF1_eval_<iou_type>_<metric>": float}`` in the official order.
        """
        assert len(self._files) > 0, "No ground truth provided for evaluation."
        if self.verbose:
            print(f"Loading predictions from {pred_file}")
        preds = read_predictions(pred_file, self.num_threads)
        if self.verbose:
            print(f"Loaded {preds.n} predictions")
        result = self._evaluate_predictions(preds)
        print("cgF1 metric, IoU type={}".format(self.iou_type))
        for line in result.lines:
            print(line)
        print()
        return result_dict(result.stats, self.iou_type)

    def _evaluate_predictions(self, preds: Predictions) -> "Result":
        """:meth:`evaluate` of predictions already read, without printing the
        summary: the native path where it applies, else the per-pair path."""
        self._warn_suspect(preds)
        why = self._native_why or self._predictions_problem(preds)
        result = None
        if why is None:
            try:
                result = self._evaluate_native(preds)
                log.info("CGF1Evaluator.evaluate: native")
            except NotNative as exc:
                why = str(exc)
        if result is None:
            from . import _loops

            log.info("CGF1Evaluator.evaluate: the per-pair path (%s)", why)
            if self._coco_evals is not None and self._coco_evals[0].params.iouType != self.iou_type:
                self._coco_evals = None  # (made for another IoU type)
            result = _loops.evaluate(self, preds)
        self._result = result
        if self._coco_evals is not None:
            result.install(self._coco_evals[0])
        return result

    def _warn_suspect(self, preds: Predictions) -> None:
        """What the official code silently ignores but is probably a mistake:
        predictions for image ids the first ground truth does not have, of
        categories no ground truth has (a SuspectInputWarning; ``strict``
        refuses)."""
        try:
            known = self._files[0].image_ids()
            cats = set().union(*(gt.category_ids() for gt in self._files))
        except (KeyError, TypeError, AttributeError):
            return  # (the evaluation words it)
        if preds.fast:
            ids, cat_ids = preds.image_id, preds.category_id
        elif isinstance(preds.objects, list):
            recs = [p for p in preds.objects if isinstance(p, dict)]
            ids = [p["image_id"] for p in recs if "image_id" in p]
            cat_ids = [p["category_id"] for p in recs if "category_id" in p]
        else:
            if isinstance(preds.objects, dict) and not preds.objects:
                _suspect(f"{preds.name}: the predictions are an empty JSON object, not a list: the official "
                         "evaluator takes it as no prediction at all", self.strict)
            return
        warn_unknown_ids(preds.name, ids, known, "image", "the ground truth does not have", self.strict)
        warn_unknown_ids(preds.name, cat_ids, cats, "category", "no ground truth has", self.strict)

    def _predictions_problem(self, preds: Predictions) -> Optional[str]:
        """Why the native path cannot evaluate these predictions (None: it can)."""
        if not preds.fast:
            if not isinstance(preds.objects, list):
                return "the predictions are not a list"
            return "the predictions are outside the column schema"
        if not preds.n:
            return None
        if not preds.has_segmentation and (self.iou_type != "bbox" or not preds.has_bbox):
            if preds.has_bbox:
                _suspect(f"{preds.name}: the predictions have boxes but no masks; evaluating the rectangles of "
                         f"the boxes with iou_type {self.iou_type!r}, as the official code does", self.strict)
            return "predictions without masks"
        return None

    def _evaluate_native(self, preds: Predictions) -> "Result":
        files = self._files
        if not self.eval_img_ids:
            raise NotNative("no pair to evaluate")
        for gt in files:
            if not gt.columns.masks_ready(self.num_threads, check=False):
                raise NotNative(f"{gt.name} has a malformed RLE")
        pair_ids = np.asarray(self.eval_img_ids, np.int64)
        # pycocotools' loadRes: a pair's predictions against a file without the pair
        with_preds = np.isin(pair_ids, preds.image_id)
        for gt in files[1:]:
            missing = with_preds & ~np.isin(pair_ids, np.asarray(gt.image_ids(), np.int64))
            if missing.any():
                raise AssertionValueError(f"Results do not correspond to current coco set: {preds.name} has predictions "
                                     f"for image id {int(pair_ids[missing][0])}, which {gt.name} does not have")
        if self.iou_type == "bbox" and preds.n and not preds.has_bbox:
            # the official loadRes' box of a mask-only prediction: the mask's
            preds.bbox = np.ascontiguousarray(_rle.area_bbox(preds.table(np.arange(preds.n)), preds.seg_h)[1])
            preds.has_bbox = True
        cols = [gt.columns for gt in files]
        sel = select_pairs(pair_ids, files[0].category_ids(), preds, cols, threshold=0.5)
        thrs = iou_thresholds()
        # (the predictions' RLEs the evaluation decodes are checked there: well formed and of
        # their own size, else NotNative: the per-pair path, which is pycocotools')
        scores = score_pairs(sel, preds, cols, self.iou_type, thrs, self.dilation_ratio, self.num_threads)
        best = select_best(scores.kind, scores.mean_f1) if len(files) > 1 else np.zeros(sel.num_pairs, np.int64)
        rows = np.arange(sel.num_pairs)
        chosen = with_counts(type(scores)(*(None if getattr(scores, k) is None else getattr(scores, k)[rows, best]
                                            for k in scores.__dataclass_fields__)))
        if self.verbose:
            print("Accumulating results")
        ev = accumulate(chosen, thrs)
        stats, lines = summarize(ev, thrs)
        return Result(self.eval_img_ids, chosen, ev, stats, lines, thrs)

    @staticmethod
    def _select_best_scoring(scorings):
        """The official oracle on ``evalImgs`` arrays ``(1, 1, pairs)`` of each
        file: per pair, the first file's entry, replaced by a later file's when
        both have local F1s and the later one's mean is strictly higher, or when
        the later one is a true negative (no ``local_F1s``)."""
        from . import _loops

        return _loops.select_best_scoring(scorings)


class Result:
    """What an evaluation leaves: the chosen entries per pair, ``eval``, ``stats``,
    the printed lines; installed into ``coco_evals[0]`` when that is made."""

    def __init__(self, img_ids: list, chosen, ev: dict, stats: np.ndarray, lines: List[str], thrs: np.ndarray,
                 eval_imgs: Optional[list] = None):
        self.img_ids = img_ids
        self.chosen = chosen
        self.eval = ev
        self.stats = stats
        self.lines = lines
        self.thrs = thrs
        self._eval_imgs = eval_imgs

    def eval_imgs(self) -> list:
        """The official ``evalImgs`` list: one entry per pair, in order."""
        if self._eval_imgs is None:
            c = self.chosen
            ids = [np.array([i])[0] for i in self.img_ids] if self.img_ids else []
            self._eval_imgs = [eval_img_entry(ids[p], int(c.kind[p]), int(c.num_dt[p]), int(c.num_gt[p]),
                                              c.tp[p], c.fp[p], c.fn[p], c.f1[p]) for p in range(len(ids))]
        return self._eval_imgs

    def install(self, ev) -> None:
        """Leave the official state in the first file's evaluator."""
        ev.params.imgIds = list(self.img_ids)
        ev.params.useCats = False
        ev._paramsEval = copy.deepcopy(ev.params)
        self.eval["params"] = ev.params
        ev.eval = self.eval
        ev.stats = self.stats
        ev._set_eval_imgs(self)


def _read_files(paths: list, threads: int) -> List[GroundTruthFile]:
    """Each ground truth read (:class:`GroundTruthFile`), several side by side (each
    file's own scan then on ``threads // len(paths)`` threads: one thread per file
    scans with less work than a split scan); the loading lines printed in file
    order, and the first file's error, in order, raised, as reading them one after
    the other prints and raises.  Up to ``2 * threads`` files are read at once (three
    files on two cores: the system shares the cores out, and all end together)."""
    if threads <= 1 or len(paths) <= 1:
        return [GroundTruthFile(p, threads) for p in paths]
    from concurrent.futures import ThreadPoolExecutor

    def read(path):
        lines: list = []
        try:
            return GroundTruthFile(path, max(1, threads // len(paths)), say=lines.append), lines, None
        except Exception as exc:  # noqa: BLE001 - raised below, in file order
            return None, lines, exc

    with ThreadPoolExecutor(min(2 * threads, len(paths))) as pool:
        done = list(pool.map(read, paths))
    files = []
    for gt, lines, exc in done:
        for line in lines:
            print(line)
        if exc is not None:
            raise exc
        files.append(gt)
    return files
