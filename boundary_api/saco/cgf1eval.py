"""``CGF1Eval``: SAM 3's per-pair cgF1 evaluation, a pycocotools ``COCOeval`` subclass.

The official ``CGF1Eval(COCOeval)`` evaluates each (image, noun phrase) pair without
categories: ground truths and predictions pooled over the ground truth's categories in
file order (no sorting by score), crowd ground truths and predictions below the
threshold left out, one optimal assignment on the raw IoUs, counted at every IoU
threshold; ``accumulate`` adds the pairs up into cgF1, and ``summarize`` prints its 26
lines.  This class does the same with the instance engine's IoUs (masks and boundaries
from its per-annotation cache, one GIL-free kernel), and adds ``iouType='boundary'``
(Boundary cgF1: ``min(mask IoU, Boundary IoU)``).
"""
from __future__ import annotations

import copy
import logging
import time
from typing import Optional

import numpy as np
import pycocotools.cocoeval

from .metrics import TN, FN, SCORED, accumulate as accumulate_scores, iou_thresholds, summarize as summary
from .metrics import EntryScores
from ._inputs import suspect
from .._parallel import resolve_threads
from ..instance._lazy import Lazy, LazyEvaluator, instance_dict, reset_lazy
from ..instance._mask_checks import describe_annotation, pycocotools_iou
from ..instance.cache import cache_for
from ..masks import _iou, _rle
from ..masks.boundary import check_dilation_ratio

__all__ = ["CGF1Eval"]

log = logging.getLogger(__name__)

IOU_TYPES = ("segm", "bbox", "boundary")


class CGF1Eval(LazyEvaluator, pycocotools.cocoeval.COCOeval):
    """cgF1 evaluation of (image, noun phrase) pairs: a drop-in for SAM 3's
    ``sam3.eval.cgf1_eval.CGF1Eval``.

    As the official class it is meant to be driven by :class:`CGF1Evaluator`;
    used alone it evaluates like a ``COCOeval`` (``evaluate()``,
    ``accumulate()``, ``summarize()``) without the oracle over annotators.

    Parameters
    ----------
    coco_gt, coco_dt : pycocotools.coco.COCO
        Ground truth (one image entry per pair) and predictions
        (``coco_gt.loadRes(...)``); any pycocotools ``COCO`` object.
    iouType : {'segm', 'bbox', 'boundary'}
        'boundary': Boundary cgF1, ``min(mask IoU, Boundary IoU)`` (mask IoU
        against a crowd, which the matching leaves out anyway).
    threshold : float
        Predictions scored ``>=`` this are kept (0.5).
    dilation_ratio : float
        Boundary width as a fraction of the image diagonal ('boundary').
    num_threads : int, optional
        Threads for the kernels (default: all cores).
    strict : bool
        Refuse (``ValueError``) a segmentation pycocotools reads otherwise
        than as a valid mask of its size (a string that is no compressed RLE,
        counts that do not cover the size), instead of evaluating it as the
        official class does with a
        :class:`~boundary_api.instance.SuspectInputWarning`.
    """

    _LAZY = ("evalImgs",)
    evalImgs = Lazy("_build_eval_imgs")
    _NATIVE_METHODS = ()

    def __init__(self, coco_gt=None, coco_dt=None, iouType="segm", threshold=0.5, *, dilation_ratio=0.02,
                 num_threads=None, strict=False):
        if iouType not in IOU_TYPES:
            raise ValueError(f"iouType must be one of {', '.join(IOU_TYPES)}; got {iouType!r}")
        self.dilation_ratio = check_dilation_ratio(dilation_ratio)
        self.num_threads = resolve_threads(num_threads)
        self.strict = bool(strict)
        super().__init__(coco_gt, coco_dt, "segm" if iouType == "boundary" else iouType)
        self.params.iouType = iouType
        self.threshold = threshold
        self.params.useCats = False
        self.params.areaRng = [[0 ** 2, 1e5 ** 2]]
        self.params.areaRngLbl = ["all"]
        self.params.maxDets = [1000000]

    # ----------------------------------------------------------------- state
    def _build_eval_imgs(self, state):
        return state.eval_imgs()

    def _set_eval_imgs(self, state) -> None:
        """``evalImgs`` built from ``state`` (``state.eval_imgs()``) when first read."""
        instance_dict(self)["_state"] = state
        reset_lazy(self, self._LAZY)

    # --------------------------------------------------------------- evaluate
    def _prepare(self):
        """pycocotools' ``_prepare``; 'boundary' converts segmentations to RLE as 'segm' does."""
        p = self.params
        if p.iouType != "boundary":
            return super()._prepare()
        p.iouType = "segm"
        try:
            return super()._prepare()
        finally:
            p.iouType = "boundary"

    def evaluate(self):
        """pycocotools' ``evaluate`` with this class's ``computeIoU`` and
        ``evaluateImg`` (the official class inherits it unchanged)."""
        tic = time.time()
        print("Running per image evaluation...")
        p = self.params
        print("Evaluate annotation type *{}*".format(p.iouType))
        self._evaluate_pairs()
        self.evalImgs = list(self._last_eval_imgs.reshape(-1))
        self._paramsEval = copy.deepcopy(self.params)
        print("DONE (t={:0.2f}s).".format(time.time() - tic))

    def _evaluate_pairs(self):
        """The official module's ``_evaluate(coco_eval)``: per-pair evaluation
        of ``params.imgIds`` without categories; returns ``(imgIds, evalImgs)``
        with ``evalImgs`` an object array ``(1, areas, images)``."""
        p = self.params
        p.imgIds = list(np.unique(p.imgIds))
        p.useCats = False
        p.maxDets = sorted(p.maxDets)
        self.params = p
        self._prepare()
        cat_ids = [-1]
        if p.iouType not in IOU_TYPES:
            raise RuntimeError(f"Unsupported iou {p.iouType}")
        computeIoU = self.computeIoU
        self.ious = {(img, cat): computeIoU(img, cat) for img in p.imgIds for cat in cat_ids}
        maxDet = p.maxDets[-1]
        eval_imgs = [self.evaluateImg(img, cat, area, maxDet)
                     for cat in cat_ids for area in p.areaRng for img in p.imgIds]
        eval_imgs = np.asarray(eval_imgs).reshape(len(cat_ids), len(p.areaRng), len(p.imgIds))
        self._last_eval_imgs = eval_imgs
        return p.imgIds, eval_imgs

    def computeIoU(self, imgId, catId):
        """IoU matrix (predictions x ground truths, file order, unsorted) of
        one pair; ``[]`` when it has neither."""
        p = self.params
        if p.useCats:
            gt, dt = self._gts[imgId, catId], self._dts[imgId, catId]
        else:
            gt = [g for c in p.catIds for g in self._gts[imgId, c]]
            dt = [d for c in p.catIds for d in self._dts[imgId, c]]
        if len(gt) == 0 and len(dt) == 0:
            return []
        if p.iouType not in IOU_TYPES:
            raise Exception("unknown iouType for iou computation")
        iscrowd = [int(o["iscrowd"]) for o in gt]
        if p.iouType == "segm":
            # a mask pycocotools misreads (the official maskUtils.iou reads every
            # prediction of the pair, kept or not): its number, never its undefined
            # behaviour; UnsafeRLEError where its code would crash or never end
            ious = pycocotools_iou([d["segmentation"] for d in dt], [g["segmentation"] for g in gt], iscrowd,
                                   lambda i: describe_annotation("prediction", dt[i]),
                                   lambda j: describe_annotation("ground truth", gt[j]))
            if ious is not None:
                image = imgId.item() if isinstance(imgId, np.generic) else imgId
                suspect(f"pair (image {image!r}): a segmentation pycocotools reads otherwise than as a valid "
                        "mask of its size (a string that is no compressed RLE, or counts that do not cover "
                        "its size), which the official evaluator takes as pycocotools reads it", self.strict)
                return ious
        return pair_ious(self.cocoGt, self.cocoDt, gt, dt, iscrowd, p.iouType, self.dilation_ratio)

    def evaluateImg(self, imgId, catId, aRng, maxDet):
        """The official per-pair evaluation: one assignment, counted at every threshold."""
        from scipy.optimize import linear_sum_assignment

        p = self.params
        assert not p.useCats, "This evaluator does not support per-category evaluation."
        assert catId == -1
        all_gts = [g for c in p.catIds for g in self._gts[imgId, c]]
        keep_gt = np.array([not g["ignore"] for g in all_gts], dtype=bool)
        gt = [g for g in all_gts if not g["ignore"]]
        all_dts = [d for c in p.catIds for d in self._dts[imgId, c]]
        keep_dt = np.array([d["score"] >= self.threshold for d in all_dts], dtype=bool)
        dt = [d for d in all_dts if d["score"] >= self.threshold]
        T = len(p.iouThrs)
        if len(gt) == 0 and len(dt) == 0:
            return entry(imgId, TN, 0, 0, None, T)
        if len(gt) > 0 and len(dt) == 0:
            return entry(imgId, FN, 0, len(gt), None, T)
        ious = self.ious[(imgId, catId)]
        if len(ious) == 0:
            ious = np.zeros((len(dt), len(gt)))
        else:
            ious = ious[keep_dt, :][:, keep_gt]
        assert ious.shape == (len(dt), len(gt))
        rows, cols = linear_sum_assignment(-ious)
        scores = ious[rows, cols]
        tp = np.array([(scores >= t).sum() for t in p.iouThrs], dtype=np.int64)
        return entry(imgId, SCORED, len(dt), len(gt), tp, T)

    # ------------------------------------------------------------- accumulate
    def accumulate(self, p=None):
        """Add up the pairs of ``evalImgs`` (those of ``p.imgIds``) into ``eval``."""
        if self.evalImgs is None or len(self.evalImgs) == 0:
            print("Please run evaluate() first")
        if p is None:
            p = self.params
        wanted = set(p.imgIds)
        seen = set()
        picked = []
        for res in self.evalImgs:
            if res["image_id"] not in wanted:
                continue
            seen.add(res["image_id"])
            picked.append(res)
        missing = wanted - seen
        assert len(missing) == 0, (f"{len(missing)} images not evaluated. "
                                   f"Here are the IDs of the first 3: {list(missing)[:3]}")
        self.eval = accumulate_scores(scores_of_entries(picked, len(p.iouThrs)), np.asarray(p.iouThrs), p)

    def summarize(self):
        """Print the 26 summary lines; ``stats`` holds their values."""
        if not self.eval:
            raise Exception("Please run accumulate() first")
        self.stats, lines = summary(self.eval, self.params.iouThrs)
        for line in lines:
            print(line)


def entry(image_id, kind: int, num_dt: int, num_gt: int, tp: Optional[np.ndarray], T: int) -> dict:
    """One official ``evalImgs`` entry from the assignment's true positives."""
    from .metrics import eval_img_entry

    if kind != SCORED:
        z = np.zeros(T, np.int64)
        return eval_img_entry(image_id, kind, num_dt, num_gt, z, z, z, z)
    fp = num_dt - tp
    fn = num_gt - tp
    assert (fp >= 0).all() and (fn >= 0).all()
    precision = tp / (tp + fp + 1e-4)
    recall = tp / (tp + fn + 1e-4)
    f1 = 2 * precision * recall / (precision + recall + 1e-4)
    return eval_img_entry(image_id, kind, num_dt, num_gt, tp, fp, fn, f1)


def scores_of_entries(entries: list, T: int) -> EntryScores:
    """:class:`EntryScores` (1-d, in order) of ``evalImgs`` entries, read as
    the official ``accumulate`` reads them: an entry without ``TPs`` is a
    true negative; one with ``local_positive_F1s`` has a ground truth."""
    n = len(entries)
    kind = np.zeros(n, np.int8)
    num_dt = np.zeros(n, np.int64)
    num_gt = np.zeros(n, np.int64)
    tp = np.zeros((n, T), np.int64)
    fp = np.zeros((n, T), np.int64)
    fn = np.zeros((n, T), np.int64)
    f1 = np.zeros((n, T), np.float64)
    for i, res in enumerate(entries):
        num_dt[i] = res["num_dt"]
        if "TPs" not in res:
            kind[i] = TN
            continue
        tp[i], fp[i], fn[i] = res["TPs"], res["FPs"], res["FNs"]
        if "local_positive_F1s" in res:
            f1[i] = res["local_positive_F1s"]
            num_gt[i] = 1
            kind[i] = SCORED if res["num_dt"] > 0 else FN
        else:
            kind[i] = SCORED
    mean = np.add.reduce(f1, axis=-1) / T if T else np.zeros(n)
    return EntryScores(kind, num_dt, num_gt, tp, fp, fn, f1, mean)


def pair_ious(coco_gt, coco_dt, gt: list, dt: list, iscrowd: list, iou_type: str, dilation_ratio: float):
    """IoUs of one pair's predictions (rows) with its ground truths, as
    pycocotools' ``maskUtils.iou`` gives them (crowd: intersection over the
    prediction's area), by the instance engine's IoU step; 'boundary':
    ``min(mask IoU, Boundary IoU)``.  ``[]`` when either side is empty."""
    if len(gt) == 0 or len(dt) == 0:
        return []
    G, D = len(gt), len(dt)
    crowd = np.array(iscrowd, np.uint8).reshape(G)
    pair_g = np.array([0, G], np.int64)
    pair_d = np.array([0, D], np.int64)
    pair_o = np.array([0, D * G], np.int64)
    out = np.zeros(D * G, np.float64)
    if iou_type == "bbox":
        gbox = np.ascontiguousarray(np.array([g["bbox"] for g in gt], np.float64).reshape(G, 4))
        dbox = np.ascontiguousarray(np.array([d["bbox"] for d in dt], np.float64).reshape(D, 4))
        empty = _rle.StringTable([])
        _iou.iou_pairs(2, empty, empty, np.zeros(G, np.int64), crowd, gbox, empty, empty, np.zeros(D, np.int64),
                       dbox, pair_g, pair_d, pair_o, out, 0, 1)
        return out.reshape(D, G)
    gcache, dcache = cache_for(coco_gt), cache_for(coco_dt)
    if iou_type == "boundary":
        gm, gh, gw, gb = gcache.masks_and_boundaries(gt, dilation_ratio, 1)
        dm, dh, dw, db = dcache.masks_and_boundaries(dt, dilation_ratio, 1)
        mode = 1
    else:
        gm, gh, gw = gcache.masks(gt)
        dm, dh, dw = dcache.masks(dt)
        gb, db, mode = gm, dm, 0
    if not ((gh == gh[0]).all() and (gw == gw[0]).all() and (dh == gh[0]).all() and (dw == gw[0]).all()):
        if iou_type == "boundary":
            raise ValueError(f"masks of different sizes in one pair (image {gt[0].get('image_id')!r}): "
                             "Boundary IoU needs masks of one size")
        import pycocotools.mask as mask_utils

        return mask_utils.iou([d["segmentation"] for d in dt], [g["segmentation"] for g in gt], list(iscrowd))
    _iou.iou_pairs(mode, _rle.StringTable(gm), _rle.StringTable(gb), np.ascontiguousarray(gh, np.int64), crowd,
                   np.zeros((G, 4)), _rle.StringTable(dm), _rle.StringTable(db), np.ascontiguousarray(dh, np.int64),
                   np.zeros((D, 4)), pair_g, pair_d, pair_o, out, 0, 1)
    return out.reshape(D, G)
