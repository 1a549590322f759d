"""``MeanAveragePrecision``: torchmetrics' detection metric with Boundary AP, built
on :class:`boundary_api.IncrementalEvaluator`.

The constructor, ``update(preds, target)`` and the result keys are those of
``torchmetrics.detection.MeanAveragePrecision``; ``iou_type`` also accepts
``"boundary"``.  For ``"bbox"`` and ``"segm"`` the numbers equal torchmetrics'
own (its pycocotools backend), bit for bit.  The difference is the state:
torchmetrics keeps every mask of the epoch (as RLE) until ``compute()``, which
then runs the whole evaluation; this metric matches each batch on a background
thread as it comes and keeps only the per-image match tables (a few bytes per
detection), so ``compute()`` is the accumulation alone.  The tables are metric
states (``add_state``, ``dist_reduce_fx="cat"``) synchronised across processes
as any TorchMetrics state.

Needs torch and torchmetrics (``pip install "boundary_api[torch]"``).
"""
from __future__ import annotations

import warnings
from typing import Any, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch
from torchmetrics import Metric

from ..coco.incremental import IncrementalEvaluator

__all__ = ["MeanAveragePrecision"]

_ALLOWED_IOU_TYPES = ("bbox", "segm", "boundary")
_MASK_TYPES = ("segm", "boundary")


def _validate_iou_type(iou_type) -> Tuple[str, ...]:
    types = (iou_type,) if isinstance(iou_type, str) else tuple(iou_type)
    if not types or any(t not in _ALLOWED_IOU_TYPES for t in types):
        raise ValueError(f"Expected argument `iou_type` to be one of {_ALLOWED_IOU_TYPES} or a tuple of, "
                         f"but got {iou_type}")
    return types


class MeanAveragePrecision(Metric):
    """Mean average precision (COCO) for boxes, masks and mask boundaries.

    A drop-in for ``torchmetrics.detection.MeanAveragePrecision`` whose
    ``iou_type`` also takes ``"boundary"`` (Boundary AP, Cheng et al., CVPR
    2021), alone or in a tuple with ``"bbox"`` and ``"segm"``.

    Parameters
    ----------
    box_format : {'xyxy', 'xywh', 'cxcywh'}
    iou_type : str or tuple of str
        ``"bbox"``, ``"segm"``, ``"boundary"`` or a tuple of them.
    iou_thresholds, rec_thresholds : list of float, optional
        torchmetrics' defaults (``torch.linspace`` values) when None.
    max_detection_thresholds : list of 3 int, optional
        Default ``[1, 10, 100]``.
    class_metrics : bool
        Also ``map_per_class`` and ``mar_{max}_per_class``.
    extended_summary : bool
        Also ``precision``, ``recall`` and ``scores`` (``COCOeval.eval``'s
        arrays) and ``ious`` (per image and class, as ``COCOeval.ious``).
    average : {'macro', 'micro'}
        ``'micro'`` evaluates every label as one class, as torchmetrics does.
    dilation_ratio : float
        Boundary width for ``"boundary"``, a fraction of the image diagonal
        (default 0.02).
    torch_masks : {'auto', True, False}
        Where the boundary and IoU step runs (see
        :class:`~boundary_api.IncrementalEvaluator`): by default on the
        masks' GPU when they are on one.
    kwargs
        torchmetrics' ``Metric`` keyword arguments (``dist_sync_on_step``,
        ``process_group``, ``compute_on_cpu``, ...).

    Notes
    -----
    Input and results are torchmetrics' (see its documentation), with its
    conventions: images are numbered in the order given; with mask types
    only, an image without ground truth is not evaluated (its detections
    are dropped), as torchmetrics' COCO conversion leaves it out; a ground
    truth's ``area``, when positive, is used for the area ranges, else its
    mask's pixel count when masks are evaluated (for every IoU type, boxes
    included, as torchmetrics does) or its box's area.  Masks and boxes may
    be changed by the caller only after the batch is processed: a background
    thread reads them after ``update`` returns.

    Across processes, the images of rank ``r`` are numbered ``local_index *
    world_size + r`` when states are synchronised: the order torchmetrics'
    own metric gives them (and a ``DistributedSampler``'s dataset order).
    """

    is_differentiable: bool = False
    higher_is_better: Optional[bool] = True
    full_state_update: bool = True
    plot_lower_bound: float = 0.0
    plot_upper_bound: float = 1.0
    warn_on_many_detections: bool = True

    def __init__(self, box_format: str = "xyxy",
                 iou_type: Union[str, Tuple[str, ...]] = "bbox",
                 iou_thresholds: Optional[List[float]] = None,
                 rec_thresholds: Optional[List[float]] = None,
                 max_detection_thresholds: Optional[List[int]] = None,
                 class_metrics: bool = False, extended_summary: bool = False,
                 average: str = "macro", dilation_ratio: float = 0.02, torch_masks="auto",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        allowed_box_formats = ("xyxy", "xywh", "cxcywh")
        if box_format not in allowed_box_formats:
            raise ValueError(f"Expected argument `box_format` to be one of {allowed_box_formats} but got {box_format}")
        self.box_format = box_format
        self.iou_type = _validate_iou_type(iou_type)
        if iou_thresholds is not None and not isinstance(iou_thresholds, list):
            raise ValueError(f"Expected argument `iou_thresholds` to either be `None` or a list of floats "
                             f"but got {iou_thresholds}")
        self.iou_thresholds = iou_thresholds or torch.linspace(0.5, 0.95, round((0.95 - 0.5) / 0.05) + 1).tolist()
        if rec_thresholds is not None and not isinstance(rec_thresholds, list):
            raise ValueError(f"Expected argument `rec_thresholds` to either be `None` or a list of floats "
                             f"but got {rec_thresholds}")
        self.rec_thresholds = rec_thresholds or torch.linspace(0.0, 1.00, round(1.00 / 0.01) + 1).tolist()
        if max_detection_thresholds is not None and not isinstance(max_detection_thresholds, list):
            raise ValueError(f"Expected argument `max_detection_thresholds` to either be `None` or a list of ints "
                             f"but got {max_detection_thresholds}")
        if max_detection_thresholds is not None and len(max_detection_thresholds) != 3:
            raise ValueError("When providing a list of max detection thresholds it should have length 3."
                             f" Got value {len(max_detection_thresholds)}")
        self.max_detection_thresholds = sorted(int(m) for m in (max_detection_thresholds or [1, 10, 100]))
        if not isinstance(class_metrics, bool):
            raise ValueError("Expected argument `class_metrics` to be a boolean")
        self.class_metrics = class_metrics
        if not isinstance(extended_summary, bool):
            raise ValueError("Expected argument `extended_summary` to be a boolean")
        self.extended_summary = extended_summary
        if average not in ("macro", "micro"):
            raise ValueError(f"Expected argument `average` to be one of ('macro', 'micro') but got {average}")
        self.average = average
        self.dilation_ratio = dilation_ratio
        self.torch_masks = torch_masks
        # the evaluations kept: "main" (labels zeroed for micro), and the per-class one of micro
        self._evaluations = ("main", "macro") if (average == "micro" and class_metrics) else ("main",)
        self._workers = {name: self._worker(name) for name in self._evaluations}
        self._A, self._T = len(self._workers["main"].areaRng), len(self.iou_thresholds)
        for name in self._evaluations:
            for t in self.iou_type:
                for field in ("pairs", "gt_ig", "dt_score", "dt_flags", "ious"):
                    self.add_state(f"{name}_{t}_{field}", default=[], dist_reduce_fx="cat")
            self.add_state(f"{name}_labels", default=[], dist_reduce_fx="cat")
        self.add_state("image_keys", default=[], dist_reduce_fx="cat")
        self.add_state("n_pred_images", default=torch.tensor(0, dtype=torch.int64), dist_reduce_fx="sum")
        self.add_state("n_target_images", default=torch.tensor(0, dtype=torch.int64), dist_reduce_fx="sum")
        self._local_images = 0

    def _new_evaluator(self, background: bool = True) -> IncrementalEvaluator:
        ev = IncrementalEvaluator(self.iou_type, iouThrs=self.iou_thresholds, recThrs=self.rec_thresholds,
                                  maxDets=self.max_detection_thresholds, dilation_ratio=self.dilation_ratio,
                                  box_format=self.box_format, torch_masks=self.torch_masks,
                                  background=background)
        # torchmetrics' conversion: with masks, a ground truth's area is its mask's for every IoU type
        ev._gt_area_from_masks = any(t in _MASK_TYPES for t in self.iou_type)
        ev._keep_ious = self.extended_summary
        return ev

    def _worker(self, name: str) -> IncrementalEvaluator:
        ev = self._new_evaluator()
        ev._micro = name == "main" and self.average == "micro"
        return ev

    # ------------------------------------------------------------------ input
    def update(self, preds: Sequence[dict], target: Sequence[dict]) -> None:
        """Add one batch (torchmetrics' input format); its matching runs in the background."""
        if not isinstance(preds, Sequence) or isinstance(preds, (str, dict)):
            raise ValueError(f"Expected argument `preds` to be of type Sequence, but got {preds}")
        if not isinstance(target, Sequence) or isinstance(target, (str, dict)):
            raise ValueError(f"Expected argument `target` to be of type Sequence, but got {target}")
        if len(preds) != len(target):
            raise ValueError(f"Expected argument `preds` and `target` to have the same length, but got "
                             f"{len(preds)} and {len(target)}")
        n = len(preds)
        ids = list(range(self._local_images, self._local_images + n))
        with_boxes = "bbox" in self.iou_type

        def count(item):
            labels = item["labels"] if isinstance(item, dict) and "labels" in item else ()
            return int(labels.shape[0]) if hasattr(labels, "shape") and len(labels.shape) else len(labels)

        if self.warn_on_many_detections and any(count(p) > self.max_detection_thresholds[-1] for p in preds):
            warnings.warn(f"Encountered more than {self.max_detection_thresholds[-1]} detections in a single image: "
                          "those with the lowest scores are ignored (as in torchmetrics; set "
                          "warn_on_many_detections=False to silence this)", UserWarning, stacklevel=2)
        # torchmetrics' COCO conversion leaves out, with masks only, an image without annotations
        pred_in = [with_boxes or count(p) > 0 for p in preds]
        target_in = [with_boxes or count(t) > 0 for t in target]
        for name in self._evaluations:
            ev = self._workers[name]
            images = ev._check_batch(preds, target, image_ids=ids, evaluated=target_in)
            ev._submit(images)
        self._local_images += n
        device = self.n_pred_images.device
        self.image_keys.append(torch.tensor([i for i, e in zip(ids, target_in) if e], dtype=torch.int64,
                                            device=device))
        self.n_pred_images += sum(pred_in)
        self.n_target_images += sum(target_in)

    # --------------------------------------------------- state: tables only
    def _flush(self) -> None:
        """Move what the background threads finished into the metric states."""
        device = self.n_pred_images.device
        for name in self._evaluations:
            ev = self._workers[name]
            ev.wait()
            with ev._lock:
                chunks = {t: ev._chunks[t] for t in self.iou_type}
                labels, ev._labels = ev._labels, set()
                for t in self.iou_type:
                    ev._chunks[t] = []
                ev._image_keys = []
            for t, parts in chunks.items():
                for c in parts:
                    pairs = np.stack([c["pair_key"], c["pair_label"], c["pair_ng"], c["pair_nd"]], axis=1)
                    D = len(c["dt_score"])
                    getattr(self, f"{name}_{t}_pairs").append(torch.from_numpy(pairs.astype(np.int64)).to(device))
                    getattr(self, f"{name}_{t}_gt_ig").append(
                        torch.from_numpy(np.ascontiguousarray(c["gt_ig"].T)).to(device))
                    getattr(self, f"{name}_{t}_dt_score").append(torch.from_numpy(c["dt_score"]).to(device))
                    getattr(self, f"{name}_{t}_dt_flags").append(torch.from_numpy(
                        np.ascontiguousarray(c["dt_flags"].reshape(self._A * self._T, D).T)).to(device))
                    if "ious" in c:
                        getattr(self, f"{name}_{t}_ious").append(torch.from_numpy(c["ious"]).to(device))
            if labels:
                getattr(self, f"{name}_labels").append(torch.tensor(sorted(labels), dtype=torch.int64, device=device))

    def _copy_state_dict(self) -> dict:
        # (forward and sync save the states first: the background work belongs in them)
        self._flush()
        cache = super()._copy_state_dict()
        cache["_local_images"] = self._local_images
        return cache

    def reset(self) -> None:
        """Forget every image (torchmetrics' ``reset``)."""
        for ev in self.__dict__.get("_workers", {}).values():
            ev.reset()
        self._local_images = 0
        super().reset()

    def _sync_dist(self, dist_sync_fn=None, process_group=None) -> None:
        """Number each rank's images ``local_index * world_size + rank``, then
        gather the tables as TorchMetrics gathers list states."""
        import torch.distributed as dist

        self._flush()
        group = process_group or self.process_group
        world = dist.get_world_size(group)
        rank = dist.get_rank(group)
        device = self.n_pred_images.device
        A, T = self._A, self._T
        empty = {"pairs": ((0, 4), torch.int64), "gt_ig": ((0, A), torch.uint8), "dt_score": ((0,), torch.float64),
                 "dt_flags": ((0, A * T), torch.uint8), "ious": ((0,), torch.float64)}
        for name in self._evaluations:
            for t in self.iou_type:
                for field, (shape, dtype) in empty.items():
                    attr = f"{name}_{t}_{field}"
                    parts = getattr(self, attr)
                    joined = torch.cat(parts) if parts else torch.zeros(shape, dtype=dtype, device=device)
                    if field == "pairs" and len(joined):
                        joined = joined.clone()
                        joined[:, 0] = joined[:, 0] * world + rank
                    setattr(self, attr, [joined])
            if not getattr(self, f"{name}_labels"):
                setattr(self, f"{name}_labels", [torch.zeros(0, dtype=torch.int64, device=device)])
        keys = torch.cat(self.image_keys) if self.image_keys else torch.zeros(0, dtype=torch.int64, device=device)
        self.image_keys = [keys * world + rank]
        kwargs = {} if dist_sync_fn is None else {"dist_sync_fn": dist_sync_fn}
        super()._sync_dist(process_group=process_group, **kwargs)

    # ---------------------------------------------------------------- results
    def _evaluator_of(self, name: str) -> IncrementalEvaluator:
        """A (foreground) evaluator holding the states' tables of evaluation ``name``."""
        ev = self._new_evaluator(background=False)
        ev._micro = name == "main" and self.average == "micro"
        A, T = self._A, self._T
        tables = {}
        keys = []
        for t in self.iou_type:
            def cat(field, shape, dtype):
                parts = getattr(self, f"{name}_{t}_{field}")
                parts = [p for p in ([parts] if isinstance(parts, torch.Tensor) else parts)]
                if not parts:
                    return np.zeros(shape, dtype)
                return torch.cat([p.reshape((-1,) + shape[1:]) for p in parts]).cpu().numpy()

            pairs = cat("pairs", (0, 4), np.int64)
            flags = cat("dt_flags", (0, A * T), np.uint8)
            tables[t] = {"pair_key": pairs[:, 0].copy(), "pair_label": pairs[:, 1].copy(),
                         "pair_ng": pairs[:, 2].copy(), "pair_nd": pairs[:, 3].copy(),
                         "gt_ig": np.ascontiguousarray(cat("gt_ig", (0, A), np.uint8).T),
                         "dt_score": np.ascontiguousarray(cat("dt_score", (0,), np.float64), np.float64),
                         "dt_flags": np.ascontiguousarray(flags.T.reshape(A, T, -1))}
            if self.extended_summary:
                tables[t]["ious"] = cat("ious", (0,), np.float64)
            keys.append(tables[t]["pair_key"])
        labels = getattr(self, f"{name}_labels")
        labels = [labels] if isinstance(labels, torch.Tensor) else labels
        label_values = torch.cat(labels).cpu().numpy() if labels else np.zeros(0, np.int64)
        image_keys = self.image_keys
        image_keys = [image_keys] if isinstance(image_keys, torch.Tensor) else image_keys
        keys.extend(k.cpu().numpy() for k in image_keys)
        ev.load_state_dict({"tables": tables, "image_keys": np.unique(np.concatenate(keys)),
                            "labels": np.unique(label_values), "n_images": 0, "explicit_ids": True})
        return ev

    def compute(self) -> dict:
        """torchmetrics' result dict (``map``, ``map_50``, ..., ``classes``)."""
        self._flush()
        mdt = self.max_detection_thresholds
        main = self._evaluator_of("main")
        per_class_source = self._evaluator_of("macro") if "macro" in self._evaluations else main
        empty = int(self.n_pred_images) == 0 or int(self.n_target_images) == 0
        res_main = res_cls = None
        if not empty:
            # (one accumulation gives both when the per-class numbers come from the same evaluation)
            res_main = main.compute(per_class=self.class_metrics and per_class_source is main)
            if self.class_metrics:
                res_cls = res_main if per_class_source is main else per_class_source.compute(per_class=True)
        result = {}
        for t in self.iou_type:
            prefix = "" if len(self.iou_type) == 1 else f"{t}_"
            stats = [-1.0] * 12 if empty else res_main[t]["stats"].tolist()
            names = ["map", "map_50", "map_75", "map_small", "map_medium", "map_large", f"mar_{mdt[0]}",
                     f"mar_{mdt[1]}", f"mar_{mdt[2]}", "mar_small", "mar_medium", "mar_large"]
            for key, value in zip(names, stats):
                result[f"{prefix}{key}"] = torch.tensor([value], dtype=torch.float32)
            if empty:
                continue
            if self.extended_summary:
                r = res_main[t]
                result[f"{prefix}ious"] = self._ious_dict(main, t)
                result[f"{prefix}precision"] = torch.tensor(r["precision"])
                result[f"{prefix}recall"] = torch.tensor(r["recall"])
                result[f"{prefix}scores"] = torch.tensor(r["scores"])
            if self.class_metrics:
                per = res_cls[t]["per_class_stats"]
                map_pc = torch.tensor([torch.tensor([v]) for v in per[:, 0].tolist()], dtype=torch.float32)
                mar_pc = torch.tensor([torch.tensor([v]) for v in per[:, 8].tolist()], dtype=torch.float32)
            else:
                map_pc = torch.tensor([-1], dtype=torch.float32)
                mar_pc = torch.tensor([-1], dtype=torch.float32)
            result[f"{prefix}map_per_class"] = map_pc
            result[f"{prefix}mar_{mdt[-1]}_per_class"] = mar_pc
        labels = main._labels
        result["classes"] = torch.tensor(sorted(labels), dtype=torch.int32)
        return result

    def _ious_dict(self, ev: IncrementalEvaluator, iou_type: str) -> dict:
        """``COCOeval.ious`` as torchmetrics returns it (float32 tensors, ``[]`` for empty pairs)."""
        out = {}
        for key, value in ev.ious(iou_type).items():
            out[key] = torch.tensor(value, dtype=torch.float32) if isinstance(value, np.ndarray) else value
        return out

    def __getstate__(self):
        self._flush()
        state = super().__getstate__()
        state = dict(state)
        state.pop("_workers", None)
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._workers = {name: self._worker(name) for name in self._evaluations}
