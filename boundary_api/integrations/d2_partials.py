"""Detectron2 training loops with several processes: each rank evaluates its own images.

Detectron2's evaluators gather every prediction (masks included) to the main
process when ``distributed=True``.  Here each rank turns its predictions into a
compact :class:`~boundary_api.scale.partials.Partial` (scores and match
flags, no masks) and only the partials are gathered; the main process merges
them and accumulates, with the numbers of one evaluation over all predictions.

Framework-free: the gather step is a function (Detectron2's ``comm.gather`` by
default when Detectron2 is importable, ``torch.distributed.gather_object``
when torch runs distributed, else this process alone), so the functions run
and are tested without Detectron2::

    part = rank_partial(coco_gt, my_predictions, iou_type="boundary")
    parts = comm.gather(part, dst=0)          # any gather to the main rank
    if comm.is_main_process():
        ev = merge_rank_partials(coco_gt, parts, iou_type="boundary")
        ev.stats
"""
from __future__ import annotations

from typing import Callable, Iterable, List, Optional, Sequence

from ..scale.partials import Partial, accumulate_partial, evaluate_partial, merge_partials
from .d2_results import CategoryIdMap, _coco_max_dets, prepare_results

__all__ = ["rank_partial", "merge_rank_partials", "evaluate_in_ranks"]


def _is_lvis(gt) -> bool:
    # the original lvis package, also while boundary_api.init_as_lvis() stands in for it
    from ..lvis._original import _lvis

    return isinstance(gt, _lvis.LVIS)


def _all_img_ids(gt) -> List:
    return sorted(gt.get_img_ids() if _is_lvis(gt) else gt.getImgIds())


def _options(gt, max_dets_per_image):
    if _is_lvis(gt):
        return {"max_dets": 300 if max_dets_per_image is None else int(max_dets_per_image)}
    return {"params": {"maxDets": _coco_max_dets(max_dets_per_image)}}


def rank_partial(gt, predictions: Iterable[dict], iou_type: str = "boundary", *,
                 category_id_map: CategoryIdMap = None, dilation_ratio: float = 0.02,
                 max_dets_per_image=None, num_threads: Optional[int] = None) -> Partial:
    """The partial of one rank's predictions.

    Parameters
    ----------
    gt : COCO or LVIS ground truth (this package's or the libraries')
    predictions : iterable of dict
        The rank's Detectron2 predictions: ``{"image_id", "instances": [...]}``
        per image it processed (images without instances included), as
        ``COCOEvaluator.process`` keeps them.
    iou_type : {'segm', 'bbox', 'boundary'}
    category_id_map, max_dets_per_image
        As in :func:`boundary_api.integrations.d2_results.coco_boundary_metrics`
        (contiguous id -> dataset id; COCO ``maxDets`` or the LVIS per-image cap).
    dilation_ratio, num_threads
        As in :func:`~boundary_api.scale.partials.evaluate_partial`.
    """
    predictions = list(predictions)
    img_ids = sorted({p["image_id"] for p in predictions})
    # the model's boxes for "bbox" (masks not needed), its masks for "segm" and "boundary"
    results = prepare_results(predictions, category_id_map, iou_type=iou_type)
    return evaluate_partial(gt, results, iou_type, img_ids, dilation_ratio=dilation_ratio,
                            num_threads=num_threads, **_options(gt, max_dets_per_image))


def merge_rank_partials(gt, partials: Sequence[Partial], iou_type: str = "boundary", *,
                        img_ids: Optional[Sequence] = None, dilation_ratio: float = 0.02,
                        max_dets_per_image=None, num_threads: Optional[int] = None):
    """Merge the ranks' partials (on the main process) and accumulate.

    Images of the evaluation (``img_ids``, default every ground-truth image,
    as Detectron2 evaluates) that no rank processed still count their ground
    truths, as in one evaluation: they are evaluated here without detections.

    Returns
    -------
    COCOeval or LVISEval
        With ``eval`` and ``stats`` / ``results``, as from
        :func:`~boundary_api.scale.partials.accumulate_partial`.
    """
    parts = [p for p in partials if p is not None]
    want = sorted(img_ids) if img_ids is not None else _all_img_ids(gt)
    covered = {int(i) for p in parts for i in p.img_ids.tolist()}
    extra = sorted(covered - {int(i) for i in want})
    if extra:
        raise ValueError(f"ranks evaluated images outside the evaluation: {extra[:10]}")
    rest = [i for i in want if int(i) not in covered]
    if rest or not parts:
        parts.append(evaluate_partial(gt, [], iou_type, rest, dilation_ratio=dilation_ratio,
                                      num_threads=num_threads, **_options(gt, max_dets_per_image)))
    return accumulate_partial(merge_partials(parts), img_ids=want, num_threads=num_threads)


def _default_gather() -> Callable:
    try:
        from detectron2.utils import comm

        return lambda obj: comm.gather(obj, dst=0)
    except ImportError:
        pass
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            def gather(obj):
                out = [None] * dist.get_world_size() if dist.get_rank() == 0 else None
                dist.gather_object(obj, out, dst=0)
                return out or []
            return gather
    except ImportError:
        pass
    return lambda obj: [obj]


def evaluate_in_ranks(gt, predictions: Iterable[dict], iou_type: str = "boundary", *,
                      gather: Optional[Callable] = None, **kwargs):
    """Call on every rank: partial here, gather to the main rank, merge there.

    ``gather(obj)`` returns the list of every rank's object on the main rank
    and an empty list elsewhere (Detectron2's ``comm.gather(obj, dst=0)``;
    the default).  Returns the evaluator on the main rank, None elsewhere.
    ``kwargs`` go to :func:`rank_partial` and :func:`merge_rank_partials`.
    """
    own = {k: v for k, v in kwargs.items() if k != "img_ids"}
    part = rank_partial(gt, predictions, iou_type, **own)
    parts = (gather or _default_gather())(part)
    if not parts:
        return None
    merge_kw = {k: v for k, v in kwargs.items() if k != "category_id_map"}
    return merge_rank_partials(gt, parts, iou_type, **merge_kw)
