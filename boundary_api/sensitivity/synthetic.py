"""Synthetic predictions from ground truth (the paper's Tables 3, 5 and 11) and
their Mask AP / Boundary AP (or PQ / Boundary PQ) side by side."""
from __future__ import annotations

import contextlib
import io
import logging
import os
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import pycocotools.mask as mask_utils

from ..instance._files import load_ground_truth_json, looks_like_lvis
from .._io import read_json
from .._parallel import resolve_threads, run_ranges, split_by_cost
from .perturbations import downscale_panoptic, low_resolution_mask

__all__ = [
    "synthetic_instance_predictions",
    "evaluate_instance_predictions",
    "synthetic_instance_study",
    "synthetic_panoptic_predictions",
    "evaluate_panoptic_predictions",
    "INSTANCE_METRICS",
]

#: The metrics of the paper's Tables 3 and 5, in order.
INSTANCE_METRICS = ("AP", "APs", "APm", "APl")


def _load(gt) -> dict:
    data = load_ground_truth_json(gt) if isinstance(gt, (str, os.PathLike)) else gt
    if not isinstance(data, dict) or not isinstance(data.get("annotations"), list) \
            or not isinstance(data.get("images"), list):
        raise ValueError(f"{gt if isinstance(gt, (str, os.PathLike)) else 'ground truth'}: "
                         "not a COCO/LVIS instances file (needs 'images' and 'annotations' lists)")
    return data


def synthetic_instance_predictions(gt, resolution: int = 28, num_threads: Optional[int] = None,
                                   progress: bool = False) -> List[dict]:
    """One prediction per non-crowd ground-truth instance: its mask cropped to
    its box, resampled to ``resolution x resolution``, upscaled bilinearly and
    binarized (:func:`~boundary_api.sensitivity.perturbations.low_resolution_mask`).

    Parameters
    ----------
    gt : str, os.PathLike or dict
        A COCO or LVIS instances file (or its loaded dict).
    resolution : int
        The side of the low-resolution mask (the paper's main setting: 28).
    num_threads : int, optional
        Threads (default: all cores).
    progress : bool
        Show a progress bar on a terminal.

    Returns
    -------
    list of dict
        COCO results: ``image_id``, ``category_id``, ``segmentation`` (compressed
        RLE, ``counts`` as str), ``score`` 1.0, in annotation order.  Crowd
        annotations and annotations of images the file does not list get none.
    """
    if isinstance(resolution, bool) or not isinstance(resolution, (int, np.integer)) or resolution < 1:
        raise ValueError(f"resolution must be a positive integer, got {resolution!r}")
    data = _load(gt)
    size = {img["id"]: (int(img["height"]), int(img["width"])) for img in data["images"]}
    anns = [a for a in data["annotations"] if not a.get("iscrowd", 0) and a.get("image_id") in size]
    out: List[Optional[dict]] = [None] * len(anns)

    def work(lo: int, hi: int):
        for i in range(lo, hi):
            a = anns[i]
            h, w = size[a["image_id"]]
            try:
                m = low_resolution_mask(a["segmentation"], h, w, resolution, bbox=a.get("bbox"))
            except (ValueError, TypeError) as exc:
                raise type(exc)(f"annotation {a.get('id')}: {exc}") from None
            rle = mask_utils.encode(np.asfortranarray(m))
            rle["counts"] = rle["counts"].decode("ascii")
            out[i] = {"image_id": a["image_id"], "category_id": a["category_id"], "segmentation": rle,
                      "score": 1.0}

    threads = resolve_threads(num_threads)
    cost = np.array([float(a.get("area", 1.0)) for a in anns])
    run_ranges(work, split_by_cost(cost, threads * 8), threads,
               progress=f"{resolution}x{resolution} masks" if progress else None, total=len(anns))
    return out  # type: ignore[return-value]


def evaluate_instance_predictions(gt, predictions: List[dict], iou_types: Sequence[str] = ("segm", "boundary"),
                                  dilation_ratio: float = 0.02, num_threads: Optional[int] = None
                                  ) -> Dict[str, Dict[str, float]]:
    """Mask AP and Boundary AP of ``predictions`` (COCO rules, or LVIS rules for
    an LVIS ground truth), without printing.

    Returns
    -------
    dict
        ``{iou_type: {"AP": .., "APs": .., "APm": .., "APl": .., ...}}``, in
        percent (the paper's unit), every summary metric the evaluator reports.
    """
    data = _load(gt)
    res: Dict[str, Dict[str, float]] = {}
    lvis = looks_like_lvis(data)
    for iou in iou_types:
        with contextlib.redirect_stdout(io.StringIO()):
            if lvis:
                from ..lvis import LVIS, LVISEval, LVISResults

                g = LVIS.from_dataset(data, str(gt) if isinstance(gt, (str, os.PathLike)) else "ground truth")
                # lvis warns that it trusts a results list's format; these are made here
                lvis_log = logging.getLogger("lvis.results")
                level = lvis_log.level
                lvis_log.setLevel(logging.ERROR)
                try:
                    dt = LVISResults(g, [dict(p) for p in predictions], max_dets=300)
                finally:
                    lvis_log.setLevel(level)
                ev = LVISEval(g, dt, iou_type=iou, dilation_ratio=dilation_ratio, num_threads=num_threads)
                ev.run()
                stats = {k: float(v) for k, v in ev.get_results().items()}
            else:
                from ..coco.dataset import COCO
                from ..coco.cocoeval import COCOeval
                from ..instance.results import coco_stats

                g = COCO.from_dataset(data, str(gt) if isinstance(gt, (str, os.PathLike)) else "ground truth")
                dt = g.loadRes([dict(p) for p in predictions]) if predictions else None
                if dt is None:
                    raise ValueError("no predictions to evaluate (every annotation is crowd?)")
                ev = COCOeval(g, dt, iouType=iou, dilation_ratio=dilation_ratio, num_threads=num_threads)
                ev.evaluate()
                ev.accumulate()
                ev.summarize()
                stats = coco_stats(ev)
        res[iou] = {k: (100.0 * v if v is not None and v >= 0 else float("nan")) for k, v in stats.items()}
    return res


def synthetic_instance_study(gt, resolutions: Sequence[int] = (28,), *, evaluate: bool = False,
                             dilation_ratio: float = 0.02, num_threads: Optional[int] = None,
                             progress: bool = False
                             ) -> Iterator[Tuple[int, List[dict], Optional[Dict[str, Dict[str, float]]]]]:
    """The paper's synthetic instance predictions at several resolutions
    (Tables 3 and 5), from one reading of the ground truth: what
    ``boundary-eval synthetic`` runs.

    Parameters
    ----------
    gt : str, os.PathLike or dict
        A COCO or LVIS instances file (read and checked once), or its loaded dict.
    resolutions : sequence of int
        Sides of the low-resolution masks, one study each.
    evaluate : bool
        Also evaluate each set of predictions
        (:func:`evaluate_instance_predictions`: Mask AP and Boundary AP).
    dilation_ratio, num_threads, progress
        As for :func:`synthetic_instance_predictions` and
        :func:`evaluate_instance_predictions`.

    Yields
    ------
    (int, list of dict, dict or None)
        The resolution, its predictions (:func:`synthetic_instance_predictions`)
        and, with ``evaluate``, their metrics (else None), one resolution at a
        time, so that the caller may write each before the next is made.

    Raises
    ------
    ValueError
        An unreadable or invalid ground truth (before anything is yielded).
    """
    data = _load(gt)

    def studies():
        for n in resolutions:
            preds = synthetic_instance_predictions(data, n, num_threads=num_threads, progress=progress)
            metrics = None
            if evaluate:
                metrics = evaluate_instance_predictions(data, preds, dilation_ratio=dilation_ratio,
                                                        num_threads=num_threads)
            yield n, preds, metrics

    return studies()


# --------------------------------------------------------------------------
# panoptic
# --------------------------------------------------------------------------

def synthetic_panoptic_predictions(gt_json, out_json, factor: float = 4, gt_folder=None, out_folder=None,
                                   num_threads: Optional[int] = None) -> dict:
    """Panoptic predictions made by nearest-neighbour down- and up-scaling every
    ground-truth PNG by ``factor`` (the paper's Table 11).

    Writes one PNG per image to ``out_folder`` (default: ``out_json`` without
    ``.json``) and the predictions JSON to ``out_json``: the ground truth's
    ``segments_info`` (``id``, ``category_id``) of the segments still present,
    with their new ``area``.  Returns the JSON document.
    """
    from PIL import Image

    from ..panoptic import id2rgb, read_panoptic_png

    data = read_json(gt_json, "panoptic ground truth")
    if not isinstance(data, dict) or not isinstance(data.get("annotations"), list):
        raise ValueError(f"{gt_json}: not a COCO panoptic file (needs an 'annotations' list)")
    gt_folder = os.fspath(gt_folder) if gt_folder is not None else os.path.splitext(os.fspath(gt_json))[0]
    out_folder = os.fspath(out_folder) if out_folder is not None else os.path.splitext(os.fspath(out_json))[0]
    if os.path.abspath(out_folder) == os.path.abspath(gt_folder):
        raise ValueError(f"the output PNG folder {out_folder} is the ground truth's; it would be overwritten")
    os.makedirs(out_folder, exist_ok=True)
    anns = data["annotations"]
    out: List[Optional[dict]] = [None] * len(anns)

    def work(lo: int, hi: int):
        for i in range(lo, hi):
            a = anns[i]
            path = os.path.join(gt_folder, a["file_name"])
            ids = read_panoptic_png(path).astype(np.int64)
            small = downscale_panoptic(ids, factor)
            present, counts = np.unique(small, return_counts=True)
            area = dict(zip(present.tolist(), counts.tolist()))
            segs = [{**{k: s[k] for k in ("id", "category_id")}, "area": int(area[s["id"]])}
                    for s in a.get("segments_info", []) if s["id"] in area]
            Image.fromarray(id2rgb(small).astype(np.uint8)).save(os.path.join(out_folder, a["file_name"]))
            out[i] = {"image_id": a["image_id"], "file_name": a["file_name"], "segments_info": segs}

    threads = resolve_threads(num_threads)
    run_ranges(work, [(i, i + 1) for i in range(len(anns))], threads)
    doc = {"annotations": out, "categories": data.get("categories", [])}
    tmp = f"{out_json}.tmp-{os.getpid()}"
    import json

    with open(tmp, "w") as f:
        json.dump(doc, f)
    os.replace(tmp, out_json)
    return doc


def synthetic_panoptic_study(gt_json, factors: Sequence[float], out_jsons: Sequence, *, gt_folder=None,
                             evaluate: bool = True, dilation_ratio: float = 0.02,
                             num_threads: Optional[int] = None) -> Iterator[Tuple[float, str, Optional[dict]]]:
    """For each factor, :func:`synthetic_panoptic_predictions` written to its
    path of ``out_jsons`` and, with ``evaluate``, their PQ and Boundary PQ
    (:func:`evaluate_panoptic_predictions`); the ground truth is read once (a
    pipe too: ``gt_folder`` must then be given).  Yields ``(factor, out_json,
    results or None)``."""
    from .._io import InputBytes, read_once

    gt_json = read_once(gt_json, "panoptic ground truth")
    if isinstance(gt_json, InputBytes) and gt_folder is None:
        raise ValueError(f"{gt_json.name} is a pipe, so its PNG folder cannot be found next to it: "
                         "give gt_folder (--gt-folder)")
    for factor, out in zip(factors, out_jsons):
        synthetic_panoptic_predictions(gt_json, out, factor, gt_folder=gt_folder, num_threads=num_threads)
        r = evaluate_panoptic_predictions(gt_json, out, gt_folder=gt_folder, dilation_ratio=dilation_ratio,
                                          num_threads=num_threads) if evaluate else None
        yield factor, out, r


def evaluate_panoptic_predictions(gt_json, pred_json, gt_folder=None, pred_folder=None,
                                  dilation_ratio: float = 0.02, num_threads: Optional[int] = None
                                  ) -> Dict[str, Dict[str, Dict[str, float]]]:
    """PQ and Boundary PQ, without printing: ``{"segm" | "boundary": {"All" |
    "Things" | "Stuff": {"PQ", "SQ", "RQ", "n"}}}``, PQ/SQ/RQ in percent."""
    from ..panoptic import pq_compute

    res = {}
    for iou in ("segm", "boundary"):
        with contextlib.redirect_stdout(io.StringIO()):
            r = pq_compute(gt_json, pred_json, gt_folder=gt_folder, pred_folder=pred_folder, iou_type=iou,
                           dilation_ratio=dilation_ratio, num_threads=num_threads)
        res[iou] = {g: {"PQ": 100 * r[g]["pq"], "SQ": 100 * r[g]["sq"], "RQ": 100 * r[g]["rq"], "n": r[g]["n"]}
                    for g in ("All", "Things", "Stuff") if g in r}
    return res

