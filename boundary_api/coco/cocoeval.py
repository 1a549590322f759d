"""``boundary_api.COCOeval``: pycocotools' COCOeval with ``iouType='boundary'``."""
from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections import defaultdict
from typing import Optional

import numpy as np
import pycocotools.cocoeval

from ..instance._columns import select_rows
from ..instance._gt_columns import ground_truths_by_pair
from ..instance._checks import (UnsafePolygonError, UnsafeRLEError, pycocotools_iou, refuse_unsafe_polygons,
                                describe_annotation as _describe)
from ..instance._cocolike import (copy_params, iou_type_as, native_accumulate, native_lists, start_evaluate,
                                  summarize_detections, summary_lines, warn_missing_summary_max_dets)
from ..instance._engine import Evaluation, leave_ignore_flags
from ..instance._lazy import Lazy, LazyEvaluator, reset_lazy, touch_pairs
from ..instance.cache import cache_for
from ..instance._dataset import masks_unusable
from .dataset import COCO, prepare_ground_truths
from .._io import add_note, warn_large_dilation_ratio
from .._parallel import resolve_threads
from ..masks.boundary import check_dilation_ratio

__all__ = ["COCOeval"]

IOU_TYPES = ("segm", "bbox", "keypoints", "boundary")

log = logging.getLogger(__name__)


class COCOeval(LazyEvaluator, pycocotools.cocoeval.COCOeval):
    """COCO evaluation with Boundary AP, a drop-in for pycocotools' COCOeval.

    ``iouType='boundary'`` scores a detection against a ground truth with
    ``min(mask IoU, boundary IoU)`` (Cheng et al., CVPR 2021); against a crowd
    ground truth the IoU stays pycocotools' crowd mask IoU.  'segm', 'bbox'
    and 'keypoints' give pycocotools' numbers.  ``evaluate()``,
    ``accumulate()``, ``summarize()``, ``params``, ``stats``, ``eval``,
    ``evalImgs`` and ``ious`` are used as in pycocotools.

    Parameters
    ----------
    cocoGt, cocoDt : pycocotools.coco.COCO
        Ground truth and results (``cocoGt.loadRes(...)``); ``boundary_api.COCO``
        objects check their input, plain pycocotools ones work too.
    iouType : {'segm', 'bbox', 'keypoints', 'boundary'}
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02).
    use_fast_impl : bool, optional
        Match and accumulate in Cython (default).  ``False`` runs
        pycocotools' own ``evaluateImg`` and ``accumulate`` loops on the same
        IoUs; the results are identical.
    num_threads : int, optional
        Threads for the kernels (default: all cores).  Results do not depend on it.

    Notes
    -----
    Which path runs.  ``evaluate()`` takes the native path (IoUs, matching
    and later ``accumulate()`` in Cython) only when ``use_fast_impl`` is true
    and the subclass overrides none of ``_prepare``, ``computeIoU`` and
    ``evaluateImg``; otherwise it runs as pycocotools' ``evaluate`` does,
    calling ``self._prepare()``, ``self.computeIoU`` for every image and
    category (the native IoUs of all pairs at once when ``computeIoU`` is
    this class's own) and ``self.evaluateImg``.  ``accumulate()`` uses the
    kernels only after a native evaluation whose ``evalImgs`` nobody has read
    or assigned since; otherwise it is pycocotools' ``accumulate`` on
    ``evalImgs``, so that changes made to them are seen.  An overridden
    ``accumulate``, ``summarize`` or ``computeOks`` is always the one called.
    The path taken is logged (``logging``, level INFO, logger
    ``boundary_api.coco.cocoeval``).

    After a native evaluation ``evalImgs``, ``ious`` (a dict), ``_gts`` and
    ``_dts`` (``defaultdict(list)``, with the (image, category) entries
    pycocotools' loops add) are built from the kernels' arrays the first time
    they are read, ``vars(ev)`` included; they then have pycocotools' types
    and contents.  An evaluated object pickles and copies (with those
    attributes built); the copy accumulates with pycocotools' loops, to the
    same numbers.  'keypoints' always uses pycocotools' loops.
    """

    _state: Optional[Evaluation] = None
    #: run pycocotools' own evaluation code (inputs it accepts that this
    #: package's checks flagged: the numbers are pycocotools')
    _reference = False
    #: the attributes a native evaluation builds when first read
    _LAZY = ("evalImgs", "ious", "_gts", "_dts")
    evalImgs = Lazy("_build_eval_imgs")
    ious = Lazy("_build_ious")
    _gts = Lazy("_build_gts")
    _dts = Lazy("_build_dts")
    #: the methods the native path stands in for; overriding one of them in
    #: a subclass makes ``evaluate()`` call it as pycocotools does
    _NATIVE_METHODS = ("_prepare", "computeIoU", "evaluateImg")
    _EVAL_IMGS_STYLE = "coco"

    def __init__(self, cocoGt=None, cocoDt=None, iouType="segm", dilation_ratio=0.02,
                 use_fast_impl=True, num_threads=None):
        if iouType not in IOU_TYPES:
            raise ValueError(f"iouType must be one of {', '.join(IOU_TYPES)}; got {iouType!r}")
        self.dilation_ratio = check_dilation_ratio(dilation_ratio)
        self.use_fast_impl = bool(use_fast_impl)
        self.num_threads = resolve_threads(num_threads)
        super().__init__(cocoGt, cocoDt, iouType="segm" if iouType == "boundary" else iouType)
        self.params.iouType = iouType
        if iouType == "boundary":
            warn_large_dilation_ratio(self.dilation_ratio, log)
        if cocoDt is not None and iouType in ("segm", "boundary"):
            if isinstance(cocoDt, COCO):
                from_boxes = cocoDt._segm_from_bbox
            else:
                # plain pycocotools results: loadRes gave box-only results the
                # rectangle polygons of their boxes; Mask AP of those is
                # pycocotools' answer, a "Boundary AP" of them is not
                from_boxes = _segmentations_from_boxes(cocoDt) if iouType == "boundary" else 0
            if from_boxes:
                message = (f"iouType={iouType!r} needs results with a 'segmentation' (compressed RLE); "
                           "these results only have boxes")
                if iouType == "boundary" or _strict(cocoGt, cocoDt):
                    raise ValueError(message)
                # pycocotools evaluates the rectangles its loadRes made of the
                # boxes: what it builds itself is no suspect input (logged, not warned)
                log.warning("%s: evaluating the rectangles of the boxes, as pycocotools does "
                            "(strict=True refuses this)", message)
                self._reference = True
        problems = _input_problems(cocoGt, cocoDt)
        if problems:
            if iouType == "boundary":
                raise ValueError(f"iouType='boundary' cannot evaluate input that failed the checks "
                                 f"(load it with strict=True to see every problem): {problems[0]}")
            if iouType in ("segm", "bbox"):
                self._reference = True  # pycocotools' own code, on what it accepts
        if cocoGt is not None:
            # the ground truths' own 'ignore' flags, before pycocotools overwrites them
            cache_for(cocoGt).remember_ignore_flags()

    def _prepare(self):
        """pycocotools' ``_prepare`` (polygons rasterised in one native batch,
        the same RLEs); for 'boundary', a ground truth's own ``ignore`` flag
        counts as in the Boundary IoU reference (``ignore or iscrowd``), where
        pycocotools replaces it with ``iscrowd``.  With 'boundary' and an
        overridden ``computeIoU``, segmentations are made RLEs as for 'segm'."""
        p = self.params
        if p.iouType not in ("segm", "bbox", "boundary") or self._reference:
            return super()._prepare()
        gts = self._prepare_gts()
        self._dts = self._detections_by_pair(self.params)
        if p.iouType == "boundary" and "computeIoU" in self._overridden():
            # an overriding computeIoU finds RLEs in _gts and _dts, as a
            # 'segm' one does in pycocotools
            for gt in gts:
                gt["segmentation"] = self.cocoGt.annToRLE(gt)
            for dts in self._dts.values():
                for dt in dts:
                    dt["segmentation"] = self.cocoDt.annToRLE(dt)
        self.evalImgs = defaultdict(list)
        self.eval = {}

    def _prepare_gts(self) -> list:
        """The ground-truth half of ``_prepare``: select, convert (segm), set
        ``ignore``, group into ``_gts``; returns the selected list."""
        p = self.params
        ids = {"imgIds": p.imgIds, "catIds": p.catIds} if p.useCats else {"imgIds": p.imgIds}
        gts = self.cocoGt.loadAnns(self.cocoGt.getAnnIds(**ids))
        prepare_ground_truths(self.cocoGt, gts, p.iouType, self.num_threads)
        self._gts = defaultdict(list)
        for gt in gts:
            self._gts[gt["image_id"], gt["category_id"]].append(gt)
        return gts

    def _ground_truth_columns(self):
        """The ground truth's columns when this evaluation can read them
        (unread dicts, every mask or box it needs usable), else None."""
        gtc = self.cocoGt.__dict__.get("_gt_columns") if isinstance(self.cocoGt, COCO) else None
        if gtc is None or not gtc.ids_unique():
            # (pycocotools' loadAnns gives, for a repeated annotation id, the last such annotation each time)
            return None
        if self.params.iouType == "bbox":
            return gtc if gtc.has_bbox.all() else None
        return gtc if gtc.masks_ready(self.num_threads) else None

    def _select_ground_truth_columns(self, gtc):
        """``_prepare``'s ground-truth selection (``getAnnIds``) on columns:
        the selected rows in file order and every row's ``ignore`` flag as
        ``_prepare`` would set it; logged so that dicts made later carry the
        same changes."""
        p = self.params
        sel = np.ones(gtc.n, bool)
        # getAnnIds: an empty id list selects everything
        if len(p.imgIds):
            sel &= select_rows(gtc.image_id, p.imgIds) >= 0
        if p.useCats and len(p.catIds):
            sel &= select_rows(gtc.category_id, p.catIds) >= 0
        rows = np.flatnonzero(sel)
        gtc.log.append((p.iouType, rows))
        crowd = gtc.iscrowd != 0
        ignore = crowd | gtc.own_ignore if p.iouType == "boundary" else crowd
        return rows, ignore

    def _ground_truths_by_pair(self, rows) -> defaultdict:
        """pycocotools' ``_gts`` of an evaluation run on columns."""
        return ground_truths_by_pair(self.cocoGt.dataset["annotations"], rows)

    def _detections_by_pair(self, p) -> defaultdict:
        """pycocotools' ``_dts``: the selected results by (image, category)."""
        ids = {"imgIds": p.imgIds, "catIds": p.catIds} if p.useCats else {"imgIds": p.imgIds}
        dts = self.cocoDt.loadAnns(self.cocoDt.getAnnIds(**ids))
        if p.iouType == "segm":
            for dt in dts:
                dt["segmentation"] = self.cocoDt.annToRLE(dt)
        out = defaultdict(list)
        for dt in dts:
            out[dt["image_id"], dt["category_id"]].append(dt)
        return out

    # ------------------------------------------------------------------------
    def evaluate(self):
        """Run per-image evaluation (pycocotools' ``evaluate``).

        Native unless ``use_fast_impl`` is false or a subclass overrides
        ``_prepare``, ``computeIoU`` or ``evaluateImg`` (then those are
        called as pycocotools calls them); see the class notes.
        """
        p = self.params
        if p.iouType == "keypoints":
            log.info("COCOeval.evaluate: pycocotools' evaluate (iouType 'keypoints')")
            return self._evaluate_reference()
        deferred = None
        if p.iouType == "segm" and not self._reference and not _strict(self.cocoGt, self.cocoDt):
            # results read as columns: their strings are checked where the IoU
            # step decodes them (one decode each); a bad one then leads here
            # as when it was checked first (see _evaluate_checking)
            deferred = self._results_checked_in_iou_step(p)
            why = masks_unusable(self.cocoGt, *(() if deferred is not None else (self.cocoDt,)))
            if why is not None:
                self._reference, self._reference_why = True, why
        if self._reference and p.iouType in ("segm", "bbox"):
            return self._evaluate_reference()
        if deferred is not None:
            return self._evaluate_checking(p, deferred)
        self._evaluate_main(p)

    def _evaluate_reference(self):
        """pycocotools' own ``evaluate`` (input it evaluates otherwise than this
        package).  Masks its C code would crash or hang on are refused first;
        an exception of pycocotools' own code comes through as it is (its
        class and message), with a note naming the input's problem."""
        self._state = None
        try:
            if self.params.iouType == "segm":
                # (the polygons its _prepare rasterises, refused before: pycocotools'
                # own COCO objects have no annToRLE that refuses them; RLEs are
                # refused where their IoU is computed, computeIoU)
                refuse_unsafe_polygons_of(self.cocoGt, self.cocoDt, self.params)
            return super().evaluate()
        except (UnsafePolygonError, UnsafeRLEError):
            raise
        except Exception as exc:  # noqa: BLE001 - pycocotools' own failure, explained
            why = (_input_problems(self.cocoGt, self.cocoDt) or (self.__dict__.get("_reference_why"),))[0]
            if why:
                add_note(exc, f"boundary_api: pycocotools' own evaluation fails on this input ({why})")
            raise

    def _results_checked_in_iou_step(self, p):
        """The results' columns when Mask AP's IoU step will check their RLE
        strings itself (native path, strings not yet checked, every image
        size one the kernels take), else None."""
        dt = self.cocoDt
        columns = dt.__dict__.get("_columns") if isinstance(dt, COCO) else None
        if (columns is None or not columns.has_segmentation or columns.rles_checked
                or getattr(dt, "_rles_checked", False) or not hasattr(dt, "_input_problems")
                or not self.use_fast_impl or self._overridden() or p.useSegm is not None):
            return None
        return columns if columns.sizes_ok() else None

    def _evaluate_checking(self, p, columns) -> None:
        """The native evaluation with the results' strings checked in the IoU
        step.  A bad string leaves nothing done (the ground truth's selection
        log undone) and then leads where the check before the evaluation
        leads: the warning and pycocotools' evaluate, whose first lines, the
        ones already printed here, are not printed a second time."""
        gtc = self.cocoGt.__dict__.get("_gt_columns") if isinstance(self.cocoGt, COCO) else None
        logged = len(gtc.log) if gtc is not None else 0
        printed = []

        def say(line):
            print(line)
            printed.append(line)

        try:
            self._evaluate_main(p, say)
        except ValueError:
            if columns.rles_checked:
                raise
            if gtc is not None:
                del gtc.log[logged:]
            self._state = None
            why = masks_unusable(self.cocoDt)  # (warns when a string is bad)
            if why is None:
                raise
            self._reference, self._reference_why = True, why
            with contextlib.redirect_stdout(_DropRepeatedLines(sys.stdout, printed)):
                return self._evaluate_reference()

    def _evaluate_main(self, p, say=print) -> None:
        """``evaluate`` once the input is known to be this package's to evaluate
        (its lines printed by ``say``)."""
        tic = time.time()
        start_evaluate(p, "imgIds", say)
        self.params = p

        self._state = None
        overridden = self._overridden()
        if overridden or not self.use_fast_impl or p.iouType not in ("segm", "bbox", "boundary"):
            why = (f"{type(self).__name__} overrides {', '.join(overridden)}" if overridden
                   else "use_fast_impl=False")
            log.info("COCOeval.evaluate: pycocotools' loops (%s)", why)
            self._evaluate_loops(p, native_iou="computeIoU" not in overridden)
        else:
            log.info("COCOeval.evaluate: native matching")
            self._evaluate_native(p)
        self._paramsEval = copy_params(self.params)
        say("DONE (t={:0.2f}s).".format(time.time() - tic))

    def _evaluate_loops(self, p, native_iou: bool) -> None:
        """pycocotools' ``evaluate`` after the parameters are normalised:
        ``self._prepare()``, ``self.computeIoU`` per pair (all pairs at once
        natively when it is this class's own), ``self.evaluateImg`` per
        image, category and area range."""
        self._prepare()
        cat_ids = p.catIds if p.useCats else [-1]
        if native_iou and p.iouType in ("segm", "bbox", "boundary"):
            state = self._pairs(p, cat_ids)
            state.compute_ious(p.iouType, self.cocoGt, self.cocoDt, self.dilation_ratio, self.num_threads)
            # the entries pycocotools' computeIoU loop adds to _gts/_dts, in its order
            touch_pairs(self._gts, p.imgIds, cat_ids, bool(p.useCats), p.catIds)
            touch_pairs(self._dts, p.imgIds, cat_ids, bool(p.useCats), p.catIds)
            self.ious = state.iou_dict().copy()
        else:
            computeIoU = self.computeIoU
            self.ious = {(imgId, catId): computeIoU(imgId, catId) for imgId in p.imgIds for catId in cat_ids}
        evaluateImg = self.evaluateImg
        maxDet = p.maxDets[-1]
        self.evalImgs = [evaluateImg(imgId, catId, areaRng, maxDet)
                         for catId in cat_ids for areaRng in p.areaRng for imgId in p.imgIds]

    def _pairs(self, p, cat_ids) -> Evaluation:
        """The evaluated pairs of ``_gts``/``_dts`` (as ``_prepare`` left them)."""
        gts, dts = self._gts, self._dts

        def gather(img_id):
            return ([g for c in p.catIds for g in gts[img_id, c]],
                    [d for c in p.catIds for d in dts[img_id, c]])

        return Evaluation(gts, dts, p.imgIds, cat_ids, bool(p.useCats), gather=gather,
                          max_det=p.maxDets[-1], crowd_key="iscrowd")

    def _evaluate_native(self, p) -> None:
        """IoUs and matching of every pair in the kernels; ``evalImgs``,
        ``ious``, ``_gts`` and ``_dts`` are built when read."""
        cat_ids = p.catIds if p.useCats else [-1]
        columns = self.cocoDt.__dict__.get("_columns") if isinstance(self.cocoDt, COCO) else None
        if columns is not None:
            # results loaded as columns: no per-result dict is made
            gtc = self._ground_truth_columns()
            self.evalImgs = defaultdict(list)
            self.eval = {}
            if gtc is not None:
                selected, ignore = self._select_ground_truth_columns(gtc)
                state = Evaluation.from_columns(None, columns, p.imgIds, cat_ids, bool(p.useCats), p.catIds,
                                                max_det=p.maxDets[-1], gt_columns=gtc, gt_selected=selected,
                                                gt_ignore=ignore)
                order = self._pycocotools_order(gtc, selected, p.imgIds)
                state.build_gts = lambda: self._ground_truths_by_pair(order)
            else:
                gts = self._prepare_gts()
                state = Evaluation.from_columns(gts, columns, p.imgIds, cat_ids, bool(p.useCats), p.catIds,
                                                max_det=p.maxDets[-1], crowd_key="iscrowd")
                base_gts = self._gts
                state.build_gts = lambda: base_gts
            frozen = copy_params(p)
            state.build_dts = lambda: self._detections_by_pair(frozen)
        else:
            self._prepare()
            state = self._pairs(p, cat_ids)
            base_gts, base_dts = self._gts, self._dts
            state.build_gts = lambda: base_gts
            state.build_dts = lambda: base_dts
        state.compute_ious(p.iouType, self.cocoGt, self.cocoDt, self.dilation_ratio, self.num_threads)
        state.match(p.areaRng, p.iouThrs, crowd_rule=True, num_threads=self.num_threads)
        state.use_cats = bool(p.useCats)
        state.pooled_cats = list(p.catIds)
        leave_ignore_flags(state)  # (pycocotools' evaluateImg leaves them)
        self._state = state
        reset_lazy(self, self._LAZY)

    @staticmethod
    def _pycocotools_order(gtc, rows, img_ids):
        """``rows`` (file order) in the order of pycocotools' ``getAnnIds``:
        by evaluated image, then file order (file order when no image is
        given)."""
        if not len(img_ids) or not len(rows):
            return rows
        pos = select_rows(gtc.image_id[rows], img_ids)
        return rows[np.lexsort((rows, pos))]

    def computeIoU(self, imgId, catId):
        """IoU matrix of one image and category, (detections x ground truths).

        For 'boundary', ``min(mask IoU, boundary IoU)`` (mask IoU for crowds).
        """
        p = self.params
        if p.iouType not in ("segm", "bbox", "boundary") or self._reference:
            if self._reference and p.iouType == "segm":
                ious = self._reference_mask_ious(imgId, catId)
                if ious is not None:
                    return ious
            return super().computeIoU(imgId, catId)
        if p.useCats:
            gts, dts = {(imgId, catId): self._gts[imgId, catId]}, {(imgId, catId): self._dts[imgId, catId]}
        else:
            gts = {(imgId, -1): [g for c in p.catIds for g in self._gts[imgId, c]]}
            dts = {(imgId, -1): [d for c in p.catIds for d in self._dts[imgId, c]]}
        key = next(iter(gts))
        state = Evaluation(gts, dts, [imgId], [key[1]], True, max_det=p.maxDets[-1])
        if state.num_pairs == 0:
            return []
        state.compute_ious(p.iouType, self.cocoGt, self.cocoDt, self.dilation_ratio, 1)
        return state.iou_matrix(0)

    def _reference_mask_ious(self, imgId, catId):
        """pycocotools' 'segm' ``computeIoU`` where its C code would misread a
        mask (:func:`~boundary_api.instance._mask_checks.pycocotools_iou`):
        the same masks selected, the same array computed here, or the masks
        it crashes or never ends on refused; None where its own runs."""
        p = self.params
        try:
            if p.useCats:
                gt, dt = self._gts[imgId, catId], self._dts[imgId, catId]
            else:
                gt = [g for c in p.catIds for g in self._gts[imgId, c]]
                dt = [d for c in p.catIds for d in self._dts[imgId, c]]
            if not gt and not dt:
                return None  # (its own [])
            order = np.argsort([-d["score"] for d in dt], kind="mergesort")
            dt = [dt[i] for i in order][:p.maxDets[-1]]
            iscrowd = [int(g["iscrowd"]) for g in gt]
            d_segs, g_segs = [d["segmentation"] for d in dt], [g["segmentation"] for g in gt]
        except (KeyError, TypeError, ValueError, IndexError):  # (pycocotools' own code raises)
            return None
        return pycocotools_iou(d_segs, g_segs, iscrowd, lambda i: _describe("result", dt[i]),
                               lambda j: _describe("ground truth annotation", gt[j]))

    def accumulate(self, p=None):
        """Accumulate per-image results into ``eval`` (pycocotools' ``accumulate``).

        Native after a native ``evaluate()`` whose ``evalImgs`` nobody has
        read or assigned since, and for parameters that line up with the
        evaluation; otherwise pycocotools' own ``accumulate`` on ``evalImgs``.
        """
        state = self._matched_state()
        if state is None:
            log.info("COCOeval.accumulate: pycocotools' accumulate on evalImgs")
            return super().accumulate(p)
        if p is None:
            p = self.params
        p.catIds = p.catIds if p.useCats == 1 else [-1]
        _pe = self._paramsEval
        lists = native_lists(p, _pe, state)
        if lists is None:
            # parameters that do not line up with the evaluation, NaN scores
            # or recall thresholds: pycocotools' loops (on the same matching)
            # index and sort them as they do
            log.info("COCOeval.accumulate: pycocotools' accumulate (parameters unlike the evaluation's)")
            return super().accumulate(p)
        log.info("COCOeval.accumulate: native")
        self.eval = native_accumulate(p, state, self.num_threads, lists)

    def summarize(self):
        """Compute and print the 12 summary metrics, as pycocotools does.

        As in pycocotools, the first line (AP over IoU 0.50:0.95) is taken at
        ``maxDets=100`` (every line at 20 for keypoints) whatever
        ``params.maxDets`` holds, so it prints -1 when that value is not
        evaluated; a one-line warning says so (``boundary-eval --max-dets N``
        reports that AP at N).
        """
        # (the warning follows a summary that printed: where pycocotools' own
        # summary fails, its exception is all there is, as in pycocotools)
        if self.eval and self.params.iouType in ("segm", "bbox", "boundary"):
            try:
                lines = summary_lines(self.params)
            except (AttributeError, IndexError, KeyError, TypeError):
                lines = None  # (pycocotools fails where it fails, after the lines before)
            if lines is not None:
                # pycocotools' detection summary (Boundary AP's too), its AP
                # lines gathered in one pass over the precision array
                self.stats = summarize_detections(self, lines)
                warn_missing_summary_max_dets(self.params)
                return
        if self.params.iouType != "boundary":
            super().summarize()
        else:
            with iou_type_as(self.params, "segm"):
                super().summarize()
        warn_missing_summary_max_dets(self.params)


def refuse_unsafe_polygons_of(coco_gt, coco_dt, p) -> None:
    """:func:`refuse_unsafe_polygons` on the ground truths and results that
    pycocotools' 'segm' ``evaluate`` selects and rasterises (as its
    ``_prepare`` does)."""
    for coco, kind in ((coco_gt, "ground truth annotation"), (coco_dt, "result")):
        if coco is not None:
            ids = coco.getAnnIds(imgIds=p.imgIds, catIds=p.catIds) if p.useCats else \
                coco.getAnnIds(imgIds=p.imgIds)
            refuse_unsafe_polygons(coco.loadAnns(ids), coco.imgs, lambda a, kind=kind: _describe(kind, a))


def _strict(*objs) -> bool:
    """Whether one of the loaded objects was made with ``strict=True``."""
    return any(getattr(o, "_strict", False) for o in objs)


def _input_problems(*objs) -> tuple:
    """The problems of the loaded objects' input that were warned about."""
    return tuple(p for o in objs if o is not None for p in getattr(o, "_input_problems", ()))


def _segmentations_from_boxes(coco_dt) -> int:
    """How many results carry the polygon pycocotools' ``loadRes`` makes
    from a box when a result has no segmentation."""
    n = 0
    for ann in coco_dt.anns.values():
        seg = ann.get("segmentation")
        if type(seg) is list and len(seg) == 1 and type(seg[0]) is list and len(seg[0]) == 8:
            box = ann.get("bbox")
            try:
                x1, y1, w, h = box
                x2, y2 = x1 + w, y1 + h
            except (TypeError, ValueError):
                continue
            if seg[0] == [x1, y1, x1, y2, x2, y2, x2, y1]:
                n += 1
    return n


class _DropRepeatedLines:
    """A stand-in for ``sys.stdout`` that drops ``lines``, in order, as long as
    what is printed starts with them, and passes everything else on: the
    lines ``evaluate`` printed before handing over to pycocotools' own
    ``evaluate``, which prints them first too."""

    def __init__(self, out, lines):
        self._out = out
        self._lines = list(lines)
        self._pending = ""

    def write(self, text: str) -> int:
        if not self._lines:
            return self._out.write(text)
        self._pending += text
        while self._lines and "\n" in self._pending:
            line, rest = self._pending.split("\n", 1)
            if line != self._lines[0]:
                self._lines = []  # something else: from here on, everything passes
                break
            self._lines.pop(0)
            self._pending = rest
        if not self._lines and self._pending:
            self._out.write(self._pending)
            self._pending = ""
        return len(text)

    def flush(self) -> None:
        self._out.flush()

    def __getattr__(self, name):
        return getattr(self._out, name)
