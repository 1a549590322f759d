"""``IncrementalEvaluator``: COCO-style AP (Boundary, mask and box) fed batch by batch.

Made for validation inside a training loop: ``update(preds, target)`` takes
one batch in torchmetrics' input format, and a background thread computes
that batch's IoUs and per-image matches right away (the loop goes on); the
evaluator keeps only what ``accumulate`` needs (per detection its score and
match flags, per ground truth its ignore flags), never a mask.  ``compute()``
then runs the accumulation and gives ``COCOeval``'s numbers, bit for bit, for
the same data written to COCO JSON files (see :class:`IncrementalEvaluator`).

The matching and the accumulation are the instance engine's
(:class:`boundary_api.instance._engine.Evaluation`, the ``_eval`` kernels);
the IoUs the mask layer's kernels, or, for masks that are torch tensors on a
GPU, :mod:`boundary_api.masks.torch_kernels` on that GPU.
"""
from __future__ import annotations

import logging
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..instance import _eval
from ..instance._engine import Evaluation
from ..masks import _iou, _rle
from ..masks.boundary import boundary_counts, check_dilation_ratio, dilation_pixels_array
from .._parallel import resolve_threads, run_ranges, split_by_cost
from ._batch_input import Image, check_side, encode_masks, is_torch, to_numpy, xywh

__all__ = ["IncrementalEvaluator"]

log = logging.getLogger(__name__)

IOU_TYPES = ("boundary", "segm", "bbox")
BOX_FORMATS = ("xyxy", "xywh", "cxcywh")
_MODES = {"segm": 0, "boundary": 3, "bbox": 2}
#: the per-detection / per-pair tables one IoU type keeps
_FIELDS = ("pair_key", "pair_label", "pair_ng", "pair_nd", "gt_ig", "dt_score", "dt_flags")


def _coco_params():
    """pycocotools' default ``Params`` for detections (the source of the defaults)."""
    from pycocotools.cocoeval import Params

    return Params(iouType="segm")


class IncrementalEvaluator:
    """COCO AP for Boundary IoU, mask IoU and box IoU, fed one batch at a time.

    Parameters
    ----------
    iou_type : {'boundary', 'segm', 'bbox'} or tuple of them
        What to evaluate; a tuple evaluates each (one set of results per type).
    iouThrs, recThrs, maxDets, areaRng, areaRngLbl, useCats
        As ``COCOeval.params`` (pycocotools' defaults when None).  ``maxDets``
        is sorted, as ``COCOeval.evaluate()`` sorts it.
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02).
    box_format : {'xyxy', 'xywh', 'cxcywh'}
        How ``boxes`` are given (default ``'xyxy'``, as in torchmetrics).
    torch_masks : {'auto', True, False}
        Where the boundary and IoU step runs for masks that are torch
        tensors: ``'auto'`` (default) on their GPU when they are on one, on
        the host (the RLE kernels) otherwise; True always with torch on the
        masks' device (CPU too); False always on the host.
    background : bool
        Compute each batch on a background thread (default) or within ``update``.
    max_pending : int
        Batches that may wait for the background thread before ``update``
        blocks (default 2): bounds the memory held by masks not yet processed.
    num_threads : int, optional
        Threads for the kernels (default: all cores).  Results do not depend on it.

    Notes
    -----
    **Input.**  ``update(preds, target)`` takes two lists with one dict per
    image, as torchmetrics' ``MeanAveragePrecision`` does: ``preds`` with
    ``boxes`` (N, 4), ``scores`` (N,), ``labels`` (N,), ``masks`` (N, H, W);
    ``target`` with ``boxes``, ``labels``, ``masks``, optional ``iscrowd``
    and ``area``.  ``boxes`` are needed for 'bbox', ``masks`` for 'segm' and
    'boundary'.  Values are NumPy arrays or any array NumPy reads
    (``__array__``, ``__dlpack__``), torch tensors included, on any device.
    The arrays must not be changed in place until the batch is processed
    (:meth:`wait`): the background thread reads them.

    **What the numbers equal.**  ``compute()`` gives, bit for bit, what
    :class:`boundary_api.COCOeval` (and, for 'segm' and 'bbox',
    pycocotools' ``COCOeval``) gives on the same data written to COCO JSON:
    one image per image given, ids in the order given (or ``image_ids``);
    ground truths with their ``iscrowd``, their ``area`` where given and
    positive (else, as torchmetrics does, the mask's pixel count for
    'segm'/'boundary', the box's ``w * h`` for 'bbox'), detections as
    pycocotools' ``loadRes`` makes them (area: the mask's pixel count, or the
    box's ``w * h`` for 'bbox'), boxes converted to ``[x, y, w, h]``; one
    category per label seen.  Masks are compressed to RLE exactly as
    ``pycocotools.mask.encode`` does.

    **Order.**  Images are ordered by their ids (``image_ids`` of
    ``update``), or, without ids, in the order they were given; the order
    only matters where detection scores tie across images, as in
    ``COCOeval`` (which sorts the image ids).  :meth:`merge` appends the
    other evaluator's images after this one's (or merges by id).
    """

    def __init__(self, iou_type: Union[str, Sequence[str]] = "boundary", *, iouThrs=None, recThrs=None,
                 maxDets=None, areaRng=None, areaRngLbl=None, useCats: bool = True,
                 dilation_ratio: float = 0.02, box_format: str = "xyxy", torch_masks="auto",
                 background: bool = True, max_pending: int = 2, num_threads: Optional[int] = None):
        types = (iou_type,) if isinstance(iou_type, str) else tuple(iou_type)
        if not types or any(t not in IOU_TYPES for t in types) or len(set(types)) != len(types):
            raise ValueError(f"iou_type must be one of {', '.join(IOU_TYPES)} or a tuple of distinct ones; "
                             f"got {iou_type!r}")
        if box_format not in BOX_FORMATS:
            raise ValueError(f"box_format must be one of {', '.join(BOX_FORMATS)}; got {box_format!r}")
        if torch_masks not in ("auto", True, False):
            raise ValueError(f"torch_masks must be 'auto', True or False; got {torch_masks!r}")
        if isinstance(max_pending, bool) or not isinstance(max_pending, (int, np.integer)) or max_pending < 1:
            raise ValueError(f"max_pending must be a positive integer; got {max_pending!r}")
        defaults = _coco_params()
        self.iou_types: Tuple[str, ...] = types
        self.iouThrs = np.asarray(defaults.iouThrs if iouThrs is None else iouThrs, np.float64).reshape(-1)
        self.recThrs = np.asarray(defaults.recThrs if recThrs is None else recThrs, np.float64).reshape(-1)
        max_dets = defaults.maxDets if maxDets is None else maxDets
        self.maxDets = sorted(int(m) for m in max_dets)
        if not self.maxDets or self.maxDets[0] < 0:
            raise ValueError(f"maxDets must be non-negative integers; got {maxDets!r}")
        self.areaRng = [[float(a), float(b)] for a, b in (defaults.areaRng if areaRng is None else areaRng)]
        labels = defaults.areaRngLbl if areaRngLbl is None else list(areaRngLbl)
        if areaRngLbl is None and areaRng is not None and len(self.areaRng) != len(labels):
            labels = [f"range{i}" for i in range(len(self.areaRng))]
        if len(labels) != len(self.areaRng):
            raise ValueError(f"areaRngLbl has {len(labels)} labels for {len(self.areaRng)} area ranges")
        self.areaRngLbl = list(labels)
        if len(self.iouThrs) == 0 or len(self.recThrs) == 0 or not self.areaRng:
            raise ValueError("iouThrs, recThrs and areaRng must not be empty")
        self.useCats = bool(useCats)
        self.dilation_ratio = check_dilation_ratio(dilation_ratio)
        self.box_format = box_format
        self.torch_masks = torch_masks
        self.background = bool(background)
        self.max_pending = int(max_pending)
        self.num_threads = resolve_threads(num_threads)
        #: keep each pair's IoU matrix (for :meth:`ious`); off by default: it grows with the data
        self._keep_ious = False
        #: a ground truth's area for 'bbox' from its mask, when masks are evaluated too (torchmetrics')
        self._gt_area_from_masks = False
        #: every label evaluated as one category 0 (torchmetrics' micro average); the labels seen are kept
        self._micro = False
        self._lock = threading.Lock()
        self._executor: Optional[ThreadPoolExecutor] = None
        self._pending: list = []
        self._clear()

    # ------------------------------------------------------------------ state
    def _clear(self) -> None:
        self._chunks: Dict[str, List[dict]] = {t: [] for t in self.iou_types}
        self._image_keys: List[np.ndarray] = []
        self._labels: set = set()
        self._n_images = 0
        #: whether the image ids were given (True), counted (False), or not yet known (None)
        self._explicit_ids: Optional[bool] = None

    def _settings(self) -> tuple:
        return (self.iou_types, self.iouThrs.tolist(), self.recThrs.tolist(), self.maxDets, self.areaRng,
                self.areaRngLbl, self.useCats, self.dilation_ratio)

    @property
    def num_images(self) -> int:
        """Images given so far (those still being processed included)."""
        return self._n_images

    def reset(self) -> None:
        """Forget every image (work still running is waited for, its result dropped)."""
        self._drain(raise_errors=False)
        self._clear()

    def wait(self) -> None:
        """Wait until every batch given is processed; re-raise the first error
        met on the background thread."""
        self._drain(raise_errors=True)

    def _drain(self, raise_errors: bool) -> None:
        pending, self._pending = self._pending, []
        first = None
        for fut in pending:
            try:
                fut.result()
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                first = first or exc
        if first is not None and raise_errors:
            raise first

    # ------------------------------------------------------------------ input
    def update(self, preds: Sequence[dict], target: Sequence[dict], image_ids=None) -> None:
        """Add one batch.

        Parameters
        ----------
        preds, target : list of dict
            One dict per image (see the class notes).
        image_ids : sequence of int, optional
            The images' ids (unique over everything given): images are then
            ordered by id, as ``COCOeval`` orders them; default: the order of
            the ``update`` calls.

        Raises
        ------
        ValueError, TypeError
            For input of the wrong structure (checked here); problems found
            while computing (a malformed value) are raised by the next
            ``update``, :meth:`wait` or :meth:`compute`.
        """
        images = self._check_batch(preds, target, image_ids)
        self._submit(images)

    def _check_batch(self, preds, target, image_ids=None, evaluated=None) -> List[Image]:
        if isinstance(preds, dict) or isinstance(target, dict) or not hasattr(preds, "__len__") \
                or not hasattr(target, "__len__"):
            raise ValueError("preds and target must be lists with one dict per image")
        if len(preds) != len(target):
            raise ValueError(f"preds and target must have the same length, got {len(preds)} and {len(target)}")
        if image_ids is not None:
            ids = [int(i) for i in image_ids]
            if len(ids) != len(preds):
                raise ValueError(f"image_ids has {len(ids)} ids for {len(preds)} images")
            if self._explicit_ids is False:
                raise ValueError("image_ids given after updates without them")
        elif self._explicit_ids is True:
            raise ValueError("image_ids missing: earlier updates gave them")
        need_masks = any(t in ("segm", "boundary") for t in self.iou_types)
        need_boxes = "bbox" in self.iou_types
        images = []
        for n, (p, t) in enumerate(zip(preds, target)):
            if not isinstance(p, dict) or not isinstance(t, dict):
                raise ValueError(f"image {n}: preds and target must hold one dict per image")
            gt = check_side(t, n, "target", need_masks, need_boxes, False)
            dt = check_side(p, n, "preds", need_masks, need_boxes, True)
            h = w = None
            if need_masks:
                sizes = {s for s in (gt.get("hw"), dt.get("hw")) if s is not None}
                if len(sizes) > 1:
                    raise ValueError(f"image {n}: masks of preds {dt['hw']} and target {gt['hw']} differ in size")
                h, w = sizes.pop() if sizes else (None, None)
            key = ids[n] if image_ids is not None else None
            images.append(Image(key, h, w, gt, dt, True if evaluated is None else bool(evaluated[n])))
        return images

    def _submit(self, images: List[Image]) -> None:
        # an error of an earlier batch surfaces here, before this batch counts
        for f in [f for f in self._pending if f.done()]:
            self._pending.remove(f)
            f.result()
        # image keys are fixed now, in the order of the calls
        if images:
            if images[0].key is None:
                for i, im in enumerate(images):
                    im.key = self._n_images + i
                self._explicit_ids = False
            else:
                self._explicit_ids = True
            self._n_images += len(images)
            self._image_keys.append(np.array([im.key for im in images if im.evaluated], np.int64))
        if not self.background:
            self._process(images)
            return
        while len(self._pending) >= self.max_pending:
            self._pending.pop(0).result()
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="boundary_api-incremental")
        self._pending.append(self._executor.submit(self._process, images))

    # -------------------------------------------------------------- the work
    def _process(self, images: List[Image]) -> None:
        prepared = [self._prepare(im) for im in images]
        labels = set()
        for im in prepared:
            labels.update(im.gt.get("seen", im.gt["labels"]).tolist())
            labels.update(im.dt.get("seen", im.dt["labels"]).tolist())
        tables = {t: self._evaluate(t, [im for im in prepared if im.evaluated]) for t in self.iou_types}
        with self._lock:
            self._labels |= labels
            for t, tab in tables.items():
                if tab is not None:
                    self._chunks[t].append(tab)

    def _use_torch(self, masks) -> bool:
        if masks is None or not is_torch(masks):
            return False
        if self.torch_masks == "auto":
            return masks.device.type != "cpu"
        return bool(self.torch_masks)

    def _prepare(self, im: Image) -> Image:
        """Arrays on the host; masks as RLE (or, on a device, their pixel counts)."""
        for side, is_pred in ((im.gt, False), (im.dt, True)):
            n = side["n"]
            labels = to_numpy(side["labels"], "labels").reshape(-1)
            if labels.dtype.kind not in "iu" and not (labels.dtype.kind == "f" and np.all(np.mod(labels, 1) == 0)):
                raise ValueError(f"labels must be integers, got {labels.dtype} values {labels[:3].tolist()}")
            side["labels"] = labels.astype(np.int64)
            if self._micro:
                side["seen"] = side["labels"]
                side["labels"] = np.zeros(len(labels), np.int64)
            if is_pred:
                side["scores"] = to_numpy(side["scores"], "scores").reshape(-1).astype(np.float64)
            else:
                crowd = side.get("iscrowd")
                side["iscrowd"] = (np.zeros(n, np.int64) if crowd is None
                                   else to_numpy(crowd, "iscrowd").reshape(-1).astype(np.int64))
                area = side.get("area")
                side["area"] = None if area is None else to_numpy(area, "area").reshape(-1).astype(np.float64)
            if "boxes" in side:
                side["boxes"] = xywh(to_numpy(side["boxes"], "boxes"), self.box_format)
        masks_types = [t for t in self.iou_types if t != "bbox"]
        if masks_types:
            gm, dm = im.gt.get("masks"), im.dt.get("masks")
            if self._use_torch(gm) or self._use_torch(dm):
                self._device_counts(im, gm, dm, "boundary" in masks_types)
            else:
                for side in (im.gt, im.dt):
                    side["rle"] = encode_masks(side.get("masks"), im)
                    side["mask_area"] = _mask_areas(side["rle"], im.h)
            im.gt.pop("masks", None)
            im.dt.pop("masks", None)
        return im

    def _device_counts(self, im: Image, gm, dm, boundary: bool) -> None:
        """Pixel counts of the masks on their device (torch)."""
        from ..masks import torch_kernels

        h, w = im.h, im.w
        import torch

        device = (gm if is_torch(gm) else dm).device

        def on_device(m, n):
            if m is None:
                return torch.zeros((n, h, w), dtype=torch.bool, device=device)
            if not is_torch(m):
                m = torch.from_numpy(np.ascontiguousarray(to_numpy(m, "masks")))
            return m.to(device)

        g = on_device(gm, im.gt["n"])
        d = on_device(dm, im.dt["n"])
        counts = torch_kernels.mask_counts(d, g, self.dilation_ratio if boundary else None)
        im.gt["mask_area"] = counts["gt_area"].astype(np.float64)
        im.dt["mask_area"] = counts["dt_area"].astype(np.float64)
        im.gt["device_counts"] = counts

    def _evaluate(self, iou_type: str, images: List[Image]) -> Optional[dict]:
        """IoUs and per-image matches of one batch for one IoU type: the tables
        ``accumulate`` reads (see ``_FIELDS``)."""
        if not images:
            return None
        gts: dict = defaultdict(list)
        dts: dict = defaultdict(list)
        cats = set()
        for pos, im in enumerate(images):
            g, d = im.gt, im.dt
            if iou_type == "bbox":
                g_area = g["boxes"][:, 2] * g["boxes"][:, 3]
                if self._gt_area_from_masks and "mask_area" in g:
                    g_area = g["mask_area"]
                d_area = d["boxes"][:, 2] * d["boxes"][:, 3]
            else:
                g_area, d_area = g["mask_area"], d["mask_area"]
            if g["area"] is not None:
                given = g["area"]
                g_area = np.where(given > 0, given, g_area)
            crowd = g["iscrowd"]
            for j, (lab, area, c) in enumerate(zip(g["labels"].tolist(), g_area.tolist(), crowd.tolist())):
                gts[pos, lab].append({"id": 1, "area": area, "iscrowd": c, "ignore": int(bool(c)),
                                      "_pos": pos, "_row": j})
                cats.add(lab)
            for j, (lab, area, s) in enumerate(zip(d["labels"].tolist(), d_area.tolist(), d["scores"].tolist())):
                dts[pos, lab].append({"id": 1, "area": area, "score": s, "_pos": pos, "_row": j})
                cats.add(lab)
        cat_ids = sorted(cats)
        img_ids = list(range(len(images)))
        if self.useCats:
            state = Evaluation(gts, dts, img_ids, cat_ids, True, max_det=self.maxDets[-1], crowd_key="iscrowd")
        else:
            def gather(pos):
                return ([a for c in cat_ids for a in gts.get((pos, c), ())],
                        [a for c in cat_ids for a in dts.get((pos, c), ())])

            state = Evaluation(gts, dts, img_ids, [-1], False, gather=gather, max_det=self.maxDets[-1],
                               crowd_key="iscrowd")
        state.ious = self._ious(iou_type, state, images)
        state.match(self.areaRng, self.iouThrs, crowd_rule=True, num_threads=self.num_threads)
        keys = np.array([im.key for im in images], np.int64)
        labels = np.array(cat_ids if self.useCats else [-1], np.int64)
        extra = {"ious": state.ious} if self._keep_ious else {}
        return {**extra,
            "pair_key": keys[state.pair_img],
            "pair_label": labels[state.pair_cat] if state.num_pairs else np.zeros(0, np.int64),
            "pair_ng": np.diff(state.pair_g),
            "pair_nd": np.diff(state.pair_d),
            "gt_ig": state.gt_ig,
            "dt_score": state.dt_score,
            "dt_flags": state.dt_flags,
        }

    def _ious(self, iou_type: str, state: Evaluation, images: List[Image]) -> np.ndarray:
        out = np.zeros(int(state.pair_o[-1]), np.float64)
        if state.num_pairs == 0:
            return out
        gpos = np.array([a["_pos"] for a in state.gt_anns], np.int64)
        grow = np.array([a["_row"] for a in state.gt_anns], np.int64)
        dpos = np.array([a["_pos"] for a in state.dt_anns], np.int64)
        drow = np.array([a["_row"] for a in state.dt_anns], np.int64)
        if iou_type != "bbox" and any("device_counts" in im.gt for im in images):
            from ..masks.torch_kernels import iou_matrix

            full = [iou_matrix(im.gt["device_counts"], im.gt["iscrowd"], iou_type == "boundary")
                    if "device_counts" in im.gt else None for im in images]
            for p in range(state.num_pairs):
                g0, g1 = state.pair_g[p], state.pair_g[p + 1]
                d0, d1 = state.pair_d[p], state.pair_d[p + 1]
                if g1 == g0 or d1 == d0:
                    continue
                m = full[int(gpos[g0])]
                out[state.pair_o[p]:state.pair_o[p + 1]] = m[np.ix_(drow[d0:d1], grow[g0:g1])].reshape(-1)
            return out
        mode = _MODES[iou_type]
        G, D = len(grow), len(drow)
        gh = np.zeros(G, np.int64)
        dh = np.zeros(D, np.int64)
        extra = (None, None)
        if mode == 2:
            gt_box = np.ascontiguousarray(np.concatenate([images[i].gt["boxes"][j:j + 1] for i, j in zip(gpos, grow)])
                                          if G else np.zeros((0, 4)), np.float64)
            dt_box = np.ascontiguousarray(np.concatenate([images[i].dt["boxes"][j:j + 1] for i, j in zip(dpos, drow)])
                                          if D else np.zeros((0, 4)), np.float64)
            gm = gb = dm = db = _rle.StringTable([])
        else:
            gt_box = np.zeros((G, 4), np.float64)
            dt_box = np.zeros((D, 4), np.float64)
            gcounts = [images[i].gt["rle"][j] for i, j in zip(gpos.tolist(), grow.tolist())]
            dcounts = [images[i].dt["rle"][j] for i, j in zip(dpos.tolist(), drow.tolist())]
            gh = np.array([images[i].h for i in gpos.tolist()], np.int64)
            dh = np.array([images[i].h for i in dpos.tolist()], np.int64)
            gm, dm = _rle.StringTable(gcounts), _rle.StringTable(dcounts)
            if mode == 3:
                gw = np.array([images[i].w for i in gpos.tolist()], np.int64)
                dw = np.array([images[i].w for i in dpos.tolist()], np.int64)
                gd = dilation_pixels_array(gh, gw, self.dilation_ratio)
                dd = dilation_pixels_array(dh, dw, self.dilation_ratio)
                gb = _rle.StringTable(boundary_counts(gcounts, gh, gw, gd, self.num_threads))
                db = _rle.StringTable([])
                extra = (dw, dd)
            else:
                gb, db = gm, dm
        cost = np.diff(state.pair_o) + np.diff(state.pair_g) + np.diff(state.pair_d)
        ranges = split_by_cost(cost, self.num_threads * 4)
        run_ranges(lambda lo, hi: _iou.iou_pairs(mode, gm, gb, gh, state.gt_crowd, gt_box, dm, db, dh, dt_box,
                                                  state.pair_g, state.pair_d, state.pair_o, out, lo, hi, *extra),
                   ranges, self.num_threads)
        return out

    # ---------------------------------------------------------------- results
    def _tables(self, iou_type: str) -> dict:
        """The type's tables, the chunks joined into one set (kept so)."""
        with self._lock:
            chunks = self._chunks[iou_type]
            if len(chunks) != 1:
                A, T = len(self.areaRng), len(self.iouThrs)
                if not chunks:
                    joined = {"pair_key": np.zeros(0, np.int64), "pair_label": np.zeros(0, np.int64),
                              "pair_ng": np.zeros(0, np.int64), "pair_nd": np.zeros(0, np.int64),
                              "gt_ig": np.zeros((A, 0), np.uint8), "dt_score": np.zeros(0, np.float64),
                              "dt_flags": np.zeros((A, T, 0), np.uint8)}
                else:
                    joined = {k: np.concatenate([c[k] for c in chunks], axis=-1) for k in _FIELDS}
                    if all("ious" in c for c in chunks):
                        joined["ious"] = np.concatenate([c["ious"] for c in chunks])
                self._chunks[iou_type] = [joined]
            return self._chunks[iou_type][0]

    def _keys(self) -> np.ndarray:
        keys = np.concatenate(self._image_keys) if self._image_keys else np.zeros(0, np.int64)
        self._image_keys = [keys] if len(keys) else []
        return keys

    def _categories(self) -> list:
        """The evaluated category axis: every label seen, sorted (``[-1]`` without categories)."""
        if not self.useCats:
            return [-1]
        if self._micro:
            return [0] if self._labels else []
        return sorted(self._labels)

    def accumulate(self, iou_type: Optional[str] = None) -> dict:
        """``COCOeval.eval`` of one IoU type: ``precision`` (T, R, K, A, M),
        ``recall`` (T, K, A, M), ``scores`` (T, R, K, A, M) and ``classes``
        (the K category ids; ``[-1]`` without categories)."""
        self.wait()
        iou_type = iou_type or self.iou_types[0]
        if iou_type not in self.iou_types:
            raise ValueError(f"iou_type {iou_type!r} is not evaluated here ({', '.join(self.iou_types)})")
        tab = self._tables(iou_type)
        keys = np.sort(self._keys(), kind="stable")
        if len(keys) > 1 and (keys[1:] == keys[:-1]).any():
            dup = keys[1:][keys[1:] == keys[:-1]][0]
            raise ValueError(f"image id {int(dup)} was given twice")
        cats = np.array(self._categories(), np.int64)
        K, A, M = len(cats), len(self.areaRng), len(self.maxDets)
        T, R = len(self.iouThrs), len(self.recThrs)
        ng, nd = tab["pair_ng"], tab["pair_nd"]
        P = len(ng)
        k_idx = np.searchsorted(cats, tab["pair_label"]) if self.useCats else np.zeros(P, np.int64)
        i_idx = np.searchsorted(keys, tab["pair_key"])
        order = np.lexsort((i_idx, k_idx))
        g_start = np.concatenate(([0], np.cumsum(ng)))[:-1]
        d_start = np.concatenate(([0], np.cumsum(nd)))[:-1]
        g_take = _ranges(g_start[order], ng[order])
        d_take = _ranges(d_start[order], nd[order])
        pair_g = np.concatenate(([0], np.cumsum(ng[order]))).astype(np.int64)
        pair_d = np.concatenate(([0], np.cumsum(nd[order]))).astype(np.int64)
        pair_img = np.ascontiguousarray(i_idx[order], np.int64)
        pair_cat = k_idx[order]
        cat_pair_start = np.searchsorted(pair_cat, np.arange(K + 1)).astype(np.int64)
        gt_ig = np.ascontiguousarray(tab["gt_ig"][:, g_take])
        dt_score = np.ascontiguousarray(tab["dt_score"][d_take])
        dt_flags = np.ascontiguousarray(tab["dt_flags"][:, :, d_take])
        precision = -np.ones((T, R, K, A, M))
        recall = -np.ones((T, K, A, M))
        scores = -np.ones((T, R, K, A, M))
        selected = np.ones(max(len(keys), 1), np.uint8)
        kl = np.arange(K, dtype=np.int64)
        al = np.arange(A, dtype=np.int64)
        md = np.asarray(self.maxDets, np.int64)
        cost = np.diff(cat_pair_start).astype(np.float64)
        ranges = split_by_cost(cost, self.num_threads * 4)
        run_ranges(lambda lo, hi: _eval.accumulate(cat_pair_start, pair_img, selected, pair_g, pair_d, dt_score,
                                                   gt_ig, dt_flags, kl, al, md, self.recThrs, precision, recall,
                                                   scores, True, lo, hi), ranges, self.num_threads)
        return {"precision": precision, "recall": recall, "scores": scores, "classes": cats,
                "counts": [T, R, K, A, M]}

    def ious(self, iou_type: Optional[str] = None) -> dict:
        """``COCOeval.ious`` of one IoU type: ``{(image_id, category_id): (D, G)
        matrix}`` for every evaluated image and category, ``[]`` where either
        side is empty.  Only for an evaluator made with ``_keep_ious = True``
        before its first update (the matrices are otherwise not kept)."""
        self.wait()
        iou_type = iou_type or self.iou_types[0]
        tab = self._tables(iou_type)
        if "ious" not in tab:
            raise ValueError("the IoU matrices were not kept (set _keep_ious = True before the first update)")
        ng, nd = tab["pair_ng"], tab["pair_nd"]
        off = np.concatenate(([0], np.cumsum(ng * nd)))
        where = {(k, c): p for p, (k, c) in enumerate(zip(tab["pair_key"].tolist(), tab["pair_label"].tolist()))}
        keys = np.unique(self._keys()).tolist()
        cats = self._categories()
        out = {}
        for img in keys:
            for cat in cats:
                p = where.get((img, cat))
                if p is None or ng[p] == 0 or nd[p] == 0:
                    out[img, cat] = []
                else:
                    out[img, cat] = tab["ious"][off[p]:off[p + 1]].reshape(int(nd[p]), int(ng[p])).copy()
        return out

    def summarize(self, precision: np.ndarray, recall: np.ndarray) -> np.ndarray:
        """The 12 numbers of ``COCOeval.stats`` (detections) from ``precision``
        and ``recall`` (as :meth:`accumulate` returns them)."""
        thrs = self.iouThrs
        max_dets = self.maxDets
        last = max_dets[2] if len(max_dets) > 2 else None

        def one(ap: bool, iou_thr=None, area="all", max_det=100) -> float:
            aind = [i for i, lbl in enumerate(self.areaRngLbl) if lbl == area]
            mind = [i for i, m in enumerate(max_dets) if m == max_det]
            if ap:
                s = precision
                if iou_thr is not None:
                    s = s[np.where(iou_thr == thrs)[0]]
                s = s[:, :, :, aind, mind]
            else:
                s = recall
                if iou_thr is not None:
                    s = s[np.where(iou_thr == thrs)[0]]
                s = s[:, :, aind, mind]
            valid = s[s > -1]
            return -1.0 if len(valid) == 0 else float(np.mean(valid))

        if last is None:
            raise ValueError("the summary needs 3 maxDets values, as COCOeval's")
        stats = np.zeros(12)
        stats[0] = one(True)
        stats[1] = one(True, iou_thr=.5, max_det=last)
        stats[2] = one(True, iou_thr=.75, max_det=last)
        stats[3] = one(True, area="small", max_det=last)
        stats[4] = one(True, area="medium", max_det=last)
        stats[5] = one(True, area="large", max_det=last)
        stats[6] = one(False, max_det=max_dets[0])
        stats[7] = one(False, max_det=max_dets[1])
        stats[8] = one(False, max_det=last)
        stats[9] = one(False, area="small", max_det=last)
        stats[10] = one(False, area="medium", max_det=last)
        stats[11] = one(False, area="large", max_det=last)
        return stats

    def compute(self, per_class: bool = True) -> Dict[str, dict]:
        """The results of every IoU type.

        Returns
        -------
        dict
            ``{iou_type: {"stats", "precision", "recall", "scores", "classes",
            "per_class_stats"}}``: ``stats`` the 12 numbers of
            ``COCOeval.stats``; ``precision``/``recall``/``scores``
            ``COCOeval.eval``'s arrays; ``classes`` the category ids (K,);
            ``per_class_stats`` (K, 12) the stats of each category evaluated
            alone (``COCOeval`` with ``params.catIds = [c]``), when ``per_class``.
        """
        out = {}
        for t in self.iou_types:
            ev = self.accumulate(t)
            res = {"stats": self.summarize(ev["precision"], ev["recall"]), **ev}
            if per_class:
                K = len(ev["classes"])
                res["per_class_stats"] = np.array(
                    [self.summarize(ev["precision"][:, :, k:k + 1], ev["recall"][:, k:k + 1]) for k in range(K)],
                    np.float64).reshape(K, 12)
            out[t] = res
        return out

    # --------------------------------------------------------- merge, pickle
    def merge(self, other: "IncrementalEvaluator") -> "IncrementalEvaluator":
        """Add ``other``'s images to this evaluator (``other`` is unchanged).

        Images without ids come after this evaluator's; images with ids keep
        them (an id given on both sides is an error at :meth:`compute`).

        Raises
        ------
        ValueError
            If the two evaluate with different settings, or one was given
            image ids and the other not.
        """
        if not isinstance(other, IncrementalEvaluator):
            raise TypeError(f"can only merge an IncrementalEvaluator, got {type(other).__name__}")
        if other._settings() != self._settings():
            raise ValueError("cannot merge evaluators with different settings (IoU types, thresholds, "
                             "maxDets, area ranges, useCats or dilation_ratio)")
        self.wait()
        other.wait()
        if other._n_images == 0:
            return self
        if None not in (self._explicit_ids, other._explicit_ids) and self._explicit_ids != other._explicit_ids:
            raise ValueError("cannot merge an evaluator given image ids with one that was not")
        shift = 0 if other._explicit_ids else self._n_images
        with other._lock:
            for t in self.iou_types:
                for c in other._chunks[t]:
                    c = dict(c)
                    c["pair_key"] = c["pair_key"] + shift
                    self._chunks[t].append(c)
            self._image_keys.extend(k + shift for k in other._image_keys)
            self._labels |= other._labels
        self._n_images += other._n_images
        self._explicit_ids = other._explicit_ids if self._explicit_ids is None else self._explicit_ids
        return self

    def state_dict(self) -> dict:
        """The evaluator's data as plain NumPy arrays (what pickling keeps)."""
        self.wait()
        return {"tables": {t: dict(self._tables(t)) for t in self.iou_types}, "image_keys": self._keys(),
                "labels": np.array(sorted(self._labels), np.int64), "n_images": self._n_images,
                "explicit_ids": self._explicit_ids}

    def load_state_dict(self, state: dict) -> None:
        """Replace the data by that of :meth:`state_dict`."""
        self.reset()
        self._chunks = {t: [dict(state["tables"][t])] for t in self.iou_types}
        keys = np.asarray(state["image_keys"], np.int64)
        self._image_keys = [keys] if len(keys) else []
        self._labels = set(np.asarray(state["labels"]).tolist())
        self._n_images = int(state["n_images"])
        self._explicit_ids = state["explicit_ids"]

    def __getstate__(self):
        data = self.state_dict()
        d = {k: v for k, v in self.__dict__.items()
             if k not in ("_lock", "_executor", "_pending", "_chunks", "_image_keys", "_labels")}
        d["_data"] = data
        return d

    def __setstate__(self, d):
        data = d.pop("_data")
        self.__dict__.update(d)
        self._lock = threading.Lock()
        self._executor = None
        self._pending = []
        self._clear()
        self.load_state_dict(data)

    def __del__(self):
        ex = self.__dict__.get("_executor")
        if ex is not None:
            ex.shutdown(wait=False)

    def __repr__(self):
        return (f"IncrementalEvaluator(iou_type={self.iou_types if len(self.iou_types) > 1 else self.iou_types[0]!r}, "
                f"images={self._n_images})")


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """``concatenate([arange(s, s + n) for s, n in zip(starts, lengths)])``."""
    lengths = np.asarray(lengths, np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    offsets = np.concatenate(([0], np.cumsum(lengths)))[:-1]
    return np.repeat(np.asarray(starts, np.int64) - offsets, lengths) + np.arange(total, dtype=np.int64)


def _mask_areas(counts: list, h: int) -> np.ndarray:
    """Pixel counts (float64) of compressed RLE strings of one image of height ``h``."""
    if not counts:
        return np.zeros(0, np.float64)
    area, _ = _rle.area_bbox(_rle.StringTable(counts), np.full(len(counts), h, np.int64))
    return np.asarray(area, np.float64)
