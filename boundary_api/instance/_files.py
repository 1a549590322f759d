"""Checks of a ground-truth file and a results file read together, made before
either is loaded so that an error names both files (used by
:func:`boundary_api.evaluate.evaluate_files` and the diagnostics' file-level
entry points).

The messages keep the words of ``boundary-eval``, which reports them as they
are (``--iou-type`` is the ``iou_type`` argument).
"""
from __future__ import annotations

from typing import Any

from ._checks import check_rle_dict, describe_unknown_ids, unknown_categories

__all__ = ["looks_like_lvis", "check_ground_truth_masks", "check_results_file"]


def looks_like_lvis(dataset: Any) -> bool:
    """Whether ``dataset`` (a loaded ground truth, or any object with its
    ``images`` and ``categories`` lists) is LVIS: its first image has
    ``neg_category_ids`` and its first category a ``frequency``."""
    if not isinstance(dataset, dict):
        return False
    imgs, cats = dataset.get("images"), dataset.get("categories")
    if not isinstance(imgs, list) or not isinstance(cats, list) or not imgs or not cats:
        return False
    return (isinstance(imgs[0], dict) and "neg_category_ids" in imgs[0]
            and isinstance(cats[0], dict) and "frequency" in cats[0])


def check_ground_truth_masks(gt_data: dict, gt_source: str, iou_type: str) -> None:
    """What mask evaluations need of a ground truth already checked by
    :func:`~boundary_api.instance._checks.check_instances_dataset`: every
    annotation has a segmentation, and RLEs fit their image (polygons are
    checked on loading).

    Raises
    ------
    ValueError
        Naming ``gt_source``, the annotation and its image.
    """
    images = {img["id"]: img for img in gt_data["images"]}
    for ann in gt_data["annotations"]:
        seg = ann.get("segmentation")
        where = f"{gt_source}: annotation id {ann['id']!r} (image {ann['image_id']!r})"
        if seg is None:
            raise ValueError(f"{where} has no 'segmentation', which --iou-type {iou_type} needs")
        if type(seg) is dict:
            img = images[ann["image_id"]]
            check_rle_dict(seg, img["height"], img["width"], where)


def check_results_file(dt_data: Any, dt_source: str, gt_data: dict, gt_source: str, iou_type: str) -> None:
    """Checks of a results file against its ground truth that name both files:
    a ground truth given as results (swapped files), box-only results for a
    mask evaluation, categories the ground truth does not have.  What is not
    a list is left to :func:`~boundary_api.instance._checks.check_results`,
    which words it.

    Raises
    ------
    ValueError
        Naming the file(s) and the problem.
    """
    if isinstance(dt_data, dict) and any(k in dt_data for k in ("images", "annotations", "categories")):
        raise ValueError(f"{dt_source}: results must be a list of objects, got a JSON object: it looks like "
                         "a ground truth file (were --gt and --dt swapped?)")
    if not isinstance(dt_data, list):
        return
    first = dt_data[0] if dt_data and isinstance(dt_data[0], dict) else {}
    if iou_type in ("segm", "boundary") and "segmentation" not in first and first.get("bbox") not in (None, []):
        raise ValueError(f"--iou-type {iou_type} needs results with a 'segmentation' (compressed RLE); "
                         f"{dt_source} only has boxes (use --iou-type bbox)")
    gt_cats = [c["id"] for c in gt_data["categories"]]
    bad = unknown_categories([a for a in dt_data if isinstance(a, dict)], gt_cats)
    if bad:
        raise ValueError(f"{dt_source}: results use category ids that {gt_source} does not have: "
                         f"{describe_unknown_ids(bad, gt_cats)}")
