"""The one reader of COCO / LVIS files given by path: a ground-truth file and a
results file read (a pipe once), told COCO from LVIS and checked together,
before either is loaded, so that an error names both files.  What
:func:`boundary_api.evaluate.evaluate_files`, the diagnostics' file-level entry
points (``compare``, ``diagnose``, ``analyze``, ``report``), streaming and the
sensitivity study read their files with; the dataset classes
(:class:`~boundary_api.coco.COCO`, :class:`~boundary_api.lvis.LVIS`) keep their
own drop-in readers (and the column scanners).

The messages keep the words of ``boundary-eval``, which reports them as they
are (``--iou-type`` is the ``iou_type`` argument).
"""
from __future__ import annotations

import os
from typing import Any, Optional, Tuple

from .._io import InputBytes, read_json
from ._checks import _valid_size, check_instances_dataset, check_rle_dict, describe_unknown_ids, unknown_categories

__all__ = ["looks_like_lvis", "check_ground_truth_masks", "check_results_file", "input_name",
           "load_ground_truth_json", "read_ground_truth_file", "read_results_file"]

#: iou types that measure masks (a ground truth needs segmentations, results RLEs)
MASK_IOU_TYPES = ("segm", "boundary")


def input_name(path) -> str:
    """How messages name an input: the path as given (a pipe's too)."""
    if isinstance(path, InputBytes):
        return path.name
    if isinstance(path, (str, bytes, os.PathLike)):
        return os.fsdecode(os.fspath(path))
    return str(path)


def load_ground_truth_json(gt, what: str = "ground truth") -> Any:
    """The decoded JSON of a ground-truth file (gzip content too; a pipe or
    :class:`~boundary_api._io.InputBytes` read once), unchecked: for readers
    that check it their own way (streaming's image index, shards)."""
    return read_json(gt, what)


def read_ground_truth_file(gt, iou_type: Optional[str] = None, *, lvis: Optional[bool] = None) -> Tuple[dict, bool]:
    """A COCO or LVIS ground-truth file read and checked: ``(dataset, lvis)``.

    Parameters
    ----------
    gt : str, path-like or InputBytes
        The file (gzip content too; a pipe already read by
        :func:`~boundary_api._io.read_once`).
    iou_type : {"boundary", "segm", "bbox"}, optional
        For "boundary" and "segm" every annotation needs a segmentation that
        fits its image (:func:`check_ground_truth_masks`).
    lvis : bool, optional
        None: LVIS when the content says so (:func:`looks_like_lvis`);
        True / False: checked with LVIS / COCO rules.

    Raises
    ------
    ValueError
        (also of the class pycocotools / lvis raise) naming the file: not
        found, not JSON, not a ground truth
        (:func:`~._checks.check_instances_dataset`), a mask missing.
    """
    name = input_name(gt)
    dataset = read_json(gt, "ground truth")
    if isinstance(dataset, dict) and "videos" in dataset and "images" not in dataset:
        raise ValueError(f"{name}: a YouTube-VIS ground truth ('videos', no 'images'), not a COCO or LVIS one: "
                         "boundary-eval vis --gt evaluates it (boundary_api.video.YTVOS in Python)")
    is_lvis = looks_like_lvis(dataset) if lvis is None else bool(lvis)
    # the "no annotations" warning is left to the dataset object loaded from it
    check_instances_dataset(dataset, name, lvis=is_lvis, warn_empty=False)
    if iou_type in MASK_IOU_TYPES:
        check_ground_truth_masks(dataset, name, iou_type)
    return dataset, is_lvis


def read_results_file(dt, gt_data: dict, gt_name: str, iou_type: str) -> Any:
    """A results file read and checked against its ground truth
    (:func:`check_results_file`); what is not a list is left to the results
    loader, which words it."""
    dt_data = read_json(dt, "results")
    check_results_file(dt_data, input_name(dt), gt_data, gt_name, iou_type)
    return dt_data


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
            h, w = img.get("height"), img.get("width")
            if not _valid_size(h, w):  # (polygons on such an image were refused on loading)
                raise ValueError(f"{where}: its image has no valid 'height' and 'width' (got {h!r}, {w!r}), "
                                 f"which --iou-type {iou_type} needs")
            check_rle_dict(seg, h, w, where)


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
    if "video_id" in first and "image_id" not in first:
        raise ValueError(f"{dt_source}: YouTube-VIS results ('video_id', 'segmentations'), not COCO ones: "
                         "boundary-eval vis --dt evaluates them against a YouTube-VIS ground truth")
    if iou_type in ("segm", "boundary") and "segmentation" not in first and first.get("bbox") not in (None, []):
        raise ValueError(f"--iou-type {iou_type} needs results with a 'segmentation' (compressed RLE); "
                         f"{dt_source} only has boxes (use --iou-type bbox)")
    gt_cats = [c["id"] for c in gt_data["categories"]]
    bad = unknown_categories([a for a in dt_data if isinstance(a, dict)], gt_cats)
    if bad:
        raise ValueError(f"{dt_source}: results use category ids that {gt_source} does not have: "
                         f"{describe_unknown_ids(bad, gt_cats)}")
