"""What the diagnostics share: reading an evaluator (COCO or LVIS), its matched
per-image state, and the cross-category IoUs of one image."""
from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np
import pycocotools.mask as mask_utils

from ..instance._lazy import instance_dict
from ..instance.cache import cache_for
from ..masks.boundary import check_dilation_ratio


class EvalView:
    """The parts of a ``COCOeval`` / ``LVISEval`` the diagnostics read, named alike.

    Attributes
    ----------
    style : {'coco', 'lvis'}
    gt, dt : the ground truth and results datasets
    iou_type : {'boundary', 'segm', 'bbox'}
    iou_thrs, area_labels : lists
    max_det : int or None
        Detections kept per image (COCO: the largest ``maxDets``; LVIS: None,
        the results are cut when loaded).
    dilation_ratio : float
    cats : dict
        Category id -> category dict.
    """

    def __init__(self, ev):
        p = getattr(ev, "params", None)
        if hasattr(p, "iouThrs"):
            self.style = "coco"
            self.gt, self.dt = ev.cocoGt, ev.cocoDt
            self.iou_type = p.iouType
            self.iou_thrs, self.area_labels = list(p.iouThrs), list(p.areaRngLbl)
            self.max_det = int(sorted(p.maxDets)[-1])
        elif hasattr(p, "iou_thrs"):
            self.style = "lvis"
            self.gt, self.dt = ev.lvis_gt, ev.lvis_dt
            self.iou_type = p.iou_type
            self.iou_thrs, self.area_labels = list(p.iou_thrs), list(p.area_rng_lbl)
            self.max_det = None
        else:
            raise TypeError(f"expected a boundary_api COCOeval or LVISEval, got {type(ev).__name__}")
        if self.iou_type not in ("boundary", "segm", "bbox"):
            raise ValueError(f"the diagnostics are for iou types boundary, segm and bbox, not {self.iou_type!r}")
        self.ev = ev
        self.dilation_ratio = getattr(ev, "dilation_ratio", 0.02)
        self.cats = dict(self.gt.cats)

    def state(self):
        """The native per-image evaluation (matched), or ValueError."""
        state = instance_dict(self.ev).get("_state")
        if state is None or not state.matched:
            raise ValueError("the evaluator has no native per-image evaluation: run evaluate() of a boundary_api "
                             "COCOeval / LVISEval with use_fast_impl=True (and no overridden per-image methods) "
                             "first")
        return state

    def threshold_index(self, thr: float) -> int:
        hits = [i for i, v in enumerate(self.iou_thrs) if abs(v - thr) < 1e-12]
        if not hits:
            raise ValueError(f"IoU threshold {thr} is not among the evaluation's thresholds "
                             f"({', '.join(f'{t:g}' for t in self.iou_thrs)})")
        return hits[0]

    def area_all(self) -> int:
        if "all" not in self.area_labels:
            raise ValueError("the evaluation has no area range labelled 'all'")
        return self.area_labels.index("all")

    # ------------------------------------------------------------ datasets
    def img_ids(self) -> list:
        """The evaluation's images (``params.imgIds`` / ``img_ids``), sorted."""
        p = self.ev.params
        return sorted(set(p.imgIds if self.style == "coco" else p.img_ids))

    def anns_of(self, dataset, img_id) -> List[dict]:
        if self.style == "coco":
            return list(dataset.imgToAnns.get(img_id, []))
        return list(dataset.img_ann_map.get(img_id, []))


def detections_per_det(state) -> Dict[str, np.ndarray]:
    """Per detection of a matched state: its pair, category index, image index."""
    nd = np.diff(state.pair_d)
    pair = np.repeat(np.arange(state.num_pairs), nd)
    return {"pair": pair, "cat": state.pair_cat[pair], "img": state.pair_img[pair],
            "local": np.arange(len(pair)) - state.pair_d[pair]}


def matched_ious(state, a: int, t: int) -> np.ndarray:
    """IoU of each detection with the ground truth it is matched to at area
    ``a`` and threshold ``t`` (NaN when unmatched)."""
    per = detections_per_det(state)
    out = np.full(len(per["pair"]), np.nan)
    g = state.dt_match[a, t]
    ok = np.flatnonzero(g >= 0)
    if ok.size:
        p = per["pair"][ok]
        G = state.pair_g[p + 1] - state.pair_g[p]
        out[ok] = state.ious[state.pair_o[p] + per["local"][ok] * G + g[ok]]
    return out


def _rles(cache, anns, ratio=None):
    if not anns:
        return []
    counts, h, w = cache.masks(anns)
    if ratio is not None:
        counts = cache.boundaries(anns, ratio)
    return [{"size": [int(a), int(b)], "counts": c} for c, a, b in zip(counts, h, w)]


def _iou(dts, gts, crowd: bool) -> np.ndarray:
    if not len(dts) or not len(gts):
        return np.zeros((len(dts), len(gts)))
    out = np.asarray(mask_utils.iou(dts, gts, [int(crowd)] * len(gts)), dtype=np.float64)
    return out.reshape(len(dts), len(gts))


def cross_ious(view: EvalView, dets: List[dict], gts: List[dict], crowds: List[dict]):
    """Every detection against every ground truth of one image, all categories:
    ``(iou (D x G), crowd iou (D x C))`` with the evaluation's IoU
    (boundary: ``min(mask IoU, boundary IoU)``; crowds: pycocotools' crowd IoU
    of masks, or of boxes for bbox)."""
    if view.iou_type == "bbox":
        box = lambda anns: [list(map(float, a["bbox"])) for a in anns]  # noqa: E731
        return _iou(box(dets), box(gts), False), _iou(box(dets), box(crowds), True)
    gcache, dcache = cache_for(view.gt), cache_for(view.dt)
    d, g, c = _rles(dcache, dets), _rles(gcache, gts), _rles(gcache, crowds)
    iou = _iou(d, g, False)
    if view.iou_type == "boundary" and iou.size:
        ratio = check_dilation_ratio(view.dilation_ratio)
        iou = np.minimum(iou, _iou(_rles(dcache, dets, ratio), _rles(gcache, gts, ratio), False))
    return iou, _iou(d, c, True)


def image_detections(view: EvalView, img_id, min_score: Optional[float] = None):
    """The detections of one image as the evaluation keeps them (highest
    scores first, stable; COCO: at most ``max_det``; LVIS: only categories
    verified in the image, as lvis evaluates them), and its ground truths
    that count and crowd / ignored ones."""
    anns = view.anns_of(view.gt, img_id)
    if view.style == "coco":
        gts = [a for a in anns if not a.get("iscrowd", 0) and not a.get("ignore", 0)]
        crowds = [a for a in anns if a.get("iscrowd", 0) or a.get("ignore", 0)]
    else:
        gts, crowds = [a for a in anns if not a.get("ignore", 0)], []
    dets = view.anns_of(view.dt, img_id)
    if view.style == "lvis":
        img = view.gt.imgs[img_id]
        verified = {a["category_id"] for a in anns} | set(img.get("neg_category_ids", []))
        dets = [d for d in dets if d["category_id"] in verified]
    order = np.argsort([-d["score"] for d in dets], kind="mergesort")
    dets = [dets[i] for i in order]
    if view.max_det is not None:
        dets = dets[:view.max_det]
    if min_score is not None:
        dets = [d for d in dets if d["score"] >= min_score]
    return dets, gts, crowds
