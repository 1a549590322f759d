"""YouTube-VIS AP and Tube-Boundary AP of the predictions a Detectron2 video
model gathers, without Detectron2 (the framework-free half of
:mod:`boundary_api.integrations.detectron2_video`).

Mask2Former's video branch (and VITA, IDOL, SeqFormer, which reuse it) turns
each video's output into YouTube-VIS result dicts (``instances_to_coco_json_video``:
``video_id``, contiguous ``category_id``, ``score``, ``segmentations`` with one
compressed RLE per frame) and evaluates them with a vendored copy of the
YouTube-VIS API.  :func:`instances_to_ytvis_json` makes the same dicts and
:func:`ytvis_metrics` evaluates them with :class:`boundary_api.video.YTVOSeval`,
returning Detectron2's form: percent values, NaN where undefined, and
``AP-<category name>``.
"""
from __future__ import annotations

import contextlib
import copy
import io
import logging
import math
from typing import Dict, List, Mapping, Optional, Sequence

import numpy as np

from ..video import YTVOS, YTVOSeval
from ._d2_tables import format_table

__all__ = ["instances_to_ytvis_json", "ytvis_metrics", "YTVIS_METRICS"]

#: the metrics Mask2Former's YTVISEvaluator reports (``stats[0:8]``, in percent)
YTVIS_METRICS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10")


def _numpy(x) -> np.ndarray:
    """A torch tensor (on any device) or array-like as a NumPy array."""
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def instances_to_ytvis_json(inputs: Sequence[dict], outputs: Mapping) -> List[dict]:
    """YouTube-VIS result dicts of one video, as Mask2Former's
    ``instances_to_coco_json_video`` makes them.

    Parameters
    ----------
    inputs : list of one dict
        The model's input of one video: ``video_id`` (and ``length``).
    outputs : dict
        ``pred_scores`` (N), ``pred_labels`` (N, contiguous ids) and
        ``pred_masks`` (N x T x H x W booleans; tensors or arrays, or a list
        of such per instance).

    Returns
    -------
    list of dict
        ``{"video_id", "score", "category_id", "segmentations"}`` per
        instance, one compressed RLE (``counts`` a ``str``) per frame.
    """
    from pycocotools import mask as mask_util

    if len(inputs) != 1:
        raise ValueError(f"one video per call: got {len(inputs)} inputs (the models evaluate a video at a time)")
    video_id = inputs[0]["video_id"]
    out = []
    for s, label, m in zip(outputs["pred_scores"], outputs["pred_labels"], outputs["pred_masks"]):
        m = _numpy(m)
        segms = []
        for frame in m:
            rle = mask_util.encode(np.asfortranarray(frame.astype(np.uint8)))
            rle["counts"] = rle["counts"].decode("utf-8")
            segms.append(rle)
        out.append({"video_id": video_id, "score": float(_numpy(s)), "category_id": int(_numpy(label)),
                    "segmentations": segms})
    return out


def ytvis_metrics(ytvis_gt: YTVOS, predictions: List[dict], iou_type: str = "segm", *,
                  category_id_map: Optional[Mapping[int, int]] = None,
                  class_names: Optional[Sequence[str]] = None, dilation_ratio: float = 0.02,
                  use_fast_impl: bool = True, logger: Optional[logging.Logger] = None) -> Dict[str, float]:
    """One task's metrics of the gathered predictions, in Detectron2's form.

    Parameters
    ----------
    ytvis_gt : YTVOS
        The ground truth.
    predictions : list of dict
        :func:`instances_to_ytvis_json` output of every video (not modified).
    iou_type : {'segm', 'boundary'}
        YouTube-VIS AP or Tube-Boundary AP.
    category_id_map : mapping, optional
        Contiguous id -> dataset category id (``thing_dataset_id_to_contiguous_id``
        inverted); None: the ids are the dataset's.
    class_names : sequence of str, optional
        Contiguous id -> name, for ``AP-<name>`` (as Detectron2's metadata
        ``thing_classes``).
    dilation_ratio : float
        Band width for 'boundary'.

    Returns
    -------
    dict
        ``AP, AP50, AP75, APs, APm, APl, AR1, AR10`` (percent, NaN where
        undefined) and ``AP-<name>`` per category when there are several names.
    """
    log = logger or logging.getLogger(__name__)
    if not predictions:
        return {m: float("nan") for m in YTVIS_METRICS}
    results = copy.deepcopy(predictions)
    for r in results:
        r.pop("bbox", None)
        if category_id_map is not None:
            r["category_id"] = category_id_map[r["category_id"]]
    with contextlib.redirect_stdout(io.StringIO()):
        dt = ytvis_gt.loadRes(results)
        ev = YTVOSeval(ytvis_gt, dt, iou_type, dilation_ratio=dilation_ratio, use_fast_impl=use_fast_impl)
        ev.params.maxDets = [1, 10, 100]
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    metrics = {m: float(ev.stats[i] * 100) if ev.stats[i] >= 0 else float("nan")
               for i, m in enumerate(YTVIS_METRICS)}
    log.info("Evaluation results for %s: \n%s", iou_type, format_table(list(metrics), [list(metrics.values())]))
    if not all(math.isfinite(v) for v in metrics.values()):
        log.info("Some metrics cannot be computed and is shown as NaN.")
    if class_names is None or len(class_names) <= 1:
        return metrics
    precisions = ev.eval["precision"]
    if len(class_names) != precisions.shape[2]:
        raise ValueError(f"{len(class_names)} class names but {precisions.shape[2]} evaluated categories")
    per_category = []
    for idx, name in enumerate(class_names):
        p = precisions[:, :, idx, 0, -1]
        p = p[p > -1]
        per_category.append((str(name), float(np.mean(p) * 100) if p.size else float("nan")))
    pairs = min(3, len(per_category))
    flat = [x for pair in per_category for x in pair]
    rows = [flat[i:i + 2 * pairs] for i in range(0, len(flat), 2 * pairs)]
    log.info("Per-category %s AP: \n%s", iou_type, format_table(["category", "AP"] * pairs, rows, align="left"))
    metrics.update({"AP-" + name: ap for name, ap in per_category})
    return metrics
