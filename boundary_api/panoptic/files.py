"""Boundary PQ of two panoptic files by one call, with what a report needs
beside the numbers (the categories): what ``boundary-eval panoptic`` runs."""
from __future__ import annotations

import os
import time
from typing import Any, Dict, Optional

from .._io import InputBytes, read_json, read_once
from .idmaps import DEFAULT_MAX_PIXELS
from .pq import pq_compute

__all__ = ["pq_compute_files"]


def pq_compute_files(gt_json_file, pred_json_file, gt_folder=None, pred_folder=None, *,
                     iou_type: str = "boundary", dilation_ratio: float = 0.02,
                     num_threads: Optional[int] = None, max_pixels: Optional[int] = DEFAULT_MAX_PIXELS,
                     boundary_mode: str = "per_segment", strict: bool = True,
                     print_progress: bool = False) -> Dict[str, Any]:
    """:func:`~boundary_api.panoptic.pq_compute` of two files, refusing
    suspect input by default, with the ground truth's categories.

    A JSON file given as a pipe (or ``/dev/stdin``) is read once; its PNG
    folder must then be given.

    Parameters
    ----------
    gt_json_file, pred_json_file, gt_folder, pred_folder, dilation_ratio, num_threads, max_pixels, boundary_mode
        As for :func:`~boundary_api.panoptic.pq_compute`.
    iou_type : {"boundary", "segm"}
        Boundary PQ (default) or PQ.
    strict : bool
        Refuse (default) rather than warn about the suspect input
        :func:`~boundary_api.panoptic.pq_compute` lists.
    print_progress : bool
        Print the COCO panoptic API's lines around the table (the table is
        always printed).

    Returns
    -------
    dict
        ``{"results": pq_compute's result, "categories": {category_id:
        the ground truth's category dict}, "seconds": wall time}``.

    Raises
    ------
    ValueError
        As :func:`~boundary_api.panoptic.pq_compute`, and for a pipe without
        its PNG folder.
    """
    tic = time.perf_counter()
    gt_json_file = read_once(gt_json_file, "ground truth JSON")
    pred_json_file = read_once(pred_json_file, "prediction JSON")
    for src, folder, name in ((gt_json_file, gt_folder, "gt_folder"), (pred_json_file, pred_folder, "pred_folder")):
        if folder is None and isinstance(src, InputBytes):
            raise ValueError(f"{src.name} is a pipe, so its PNG folder cannot be found next to it: "
                             f"give {name} (--{name.replace('_', '-')})")
    results = pq_compute(gt_json_file, pred_json_file, gt_folder=gt_folder, pred_folder=pred_folder,
                         iou_type=iou_type, dilation_ratio=dilation_ratio, num_threads=num_threads,
                         max_pixels=max_pixels, boundary_mode=boundary_mode, strict=strict,
                         print_progress=print_progress)
    src = gt_json_file if isinstance(gt_json_file, InputBytes) else os.fspath(gt_json_file)
    categories = {c["id"]: c for c in read_json(src, "ground truth JSON")["categories"]}
    return {"results": results, "categories": categories, "seconds": time.perf_counter() - tic}
