"""Checks of COCO panoptic JSON files: one clear error per problem."""
from __future__ import annotations

import numbers
import os
import warnings
from typing import Any, Dict

from .._io import finite_number, named_as


@named_as("KeyError")
class PanopticKeyError(ValueError, KeyError):
    """A prediction that does not fit its PNG or the categories: the COCO
    panoptic API raises KeyError here, the rest of this package ValueError."""

    __str__ = BaseException.__str__   # the message as is (KeyError would quote it)


def suspect(message: str, strict: bool, stacklevel: int = 5) -> None:
    """Input the COCO panoptic API accepts silently: a warning, or with
    ``strict=True`` a ValueError (``stacklevel``: how far up the caller of
    ``pq_compute`` is)."""
    if strict:
        raise ValueError(message)
    warnings.warn(message, stacklevel=stacklevel)


# ---------------------------------------------------------------------------
# input checks
# ---------------------------------------------------------------------------

def _is_int(v) -> bool:
    return type(v) is int or (isinstance(v, numbers.Integral) and not isinstance(v, bool))


def _check_categories(gt_json: Any, source: str, strict: bool = False) -> Dict[int, dict]:
    if not isinstance(gt_json, dict):
        raise ValueError(f"{source}: not a COCO panoptic ground truth (expected a JSON object, "
                         f"got a {type(gt_json).__name__})")
    for key in ("annotations", "categories"):
        if key not in gt_json:
            raise PanopticKeyError(f"{source}: not a COCO panoptic ground truth (no '{key}')")
        if not isinstance(gt_json[key], list):
            raise ValueError(f"{source}: not a COCO panoptic ground truth (no list of '{key}')")
    categories: Dict[int, dict] = {}
    for i, cat in enumerate(gt_json["categories"]):
        if isinstance(cat, dict) and "id" not in cat:
            raise PanopticKeyError(f"{source}: categories[{i}] has no 'id'")
        if not isinstance(cat, dict) or not _is_int(cat.get("id")):
            raise ValueError(f"{source}: categories[{i}] has no integer 'id'")
        if cat["id"] in categories:
            # the COCO panoptic API keeps the last one
            suspect(f"{source}: category id {cat['id']} appears more than once; the last entry counts",
                    strict, stacklevel=4)
        if "isthing" not in cat:
            raise PanopticKeyError(f"{source}: category {cat['id']} has no 'isthing'")
        if cat["isthing"] not in (0, 1):
            # the COCO panoptic API takes anything but 1 as stuff
            suspect(f"{source}: category {cat['id']} has an 'isthing' of neither 0 nor 1 "
                    f"(got {cat['isthing']!r}); it counts as stuff", strict, stacklevel=4)
        categories[int(cat["id"])] = cat
    if not categories:
        raise ValueError(f"{source}: the list of categories is empty")
    return categories


def _check_annotation(ann: Any, i: int, source: str) -> None:
    if not isinstance(ann, dict):
        raise ValueError(f"{source}: annotations[{i}] is not an object")
    for key in ("image_id", "file_name", "segments_info"):
        if key not in ann:
            raise PanopticKeyError(f"{source}: annotations[{i}] has no '{key}'")
    if not isinstance(ann["image_id"], (str, numbers.Integral)) or isinstance(ann["image_id"], bool):
        raise ValueError(f"{source}: annotations[{i}] has an image_id that is neither a string nor an integer")
    if not isinstance(ann["file_name"], str) or not ann["file_name"]:
        raise ValueError(f"{source}: image {ann['image_id']!r} has no valid 'file_name'")
    if not isinstance(ann["segments_info"], list):
        raise ValueError(f"{source}: image {ann['image_id']!r}: 'segments_info' is not a list")


def _check_segment(seg: Any, image_id, k: int, source: str, categories, what: str,
                   strict: bool = False) -> int:
    if not isinstance(seg, dict):
        raise ValueError(f"{source}: image {image_id!r}: segments_info[{k}] is not an object")
    for key in ("id", "category_id"):
        if key not in seg:
            raise PanopticKeyError(f"{source}: image {image_id!r}: segments_info[{k}] has no '{key}'")
    sid = seg.get("id")
    if not _is_int(sid):
        raise ValueError(f"{source}: image {image_id!r}: segments_info[{k}] has no integer 'id'")
    cat = seg.get("category_id")
    if not _is_int(cat):
        raise ValueError(f"{source}: image {image_id!r}: {what} segment {sid} has no integer category_id "
                         f"(got {cat!r})")
    if cat not in categories:
        message = f"{source}: image {image_id!r}: {what} segment {sid} has unknown category_id {cat!r}"
        if what == "predicted":
            raise PanopticKeyError(message)
        # the COCO panoptic API keeps such a ground truth segment: it never
        # matches and counts for no category
        suspect(message + " (it counts for no category)", strict)
    return int(sid)


def _duplicate(source: str, image_id, sid: int, strict: bool) -> None:
    suspect(f"{source}: image {image_id!r}: segment id {sid} appears more than once in segments_info; "
            "the last entry counts", strict)


def _gt_segments(ann: dict, i: int, source: str, categories, strict: bool = False) -> Dict[int, tuple]:
    """id -> (category_id, is_crowd, area), in JSON order (of first appearance;
    a repeated id takes its last entry, as in the COCO panoptic API)."""
    _check_annotation(ann, i, source)
    image_id = ann["image_id"]
    segs: Dict[int, tuple] = {}
    for k, seg in enumerate(ann["segments_info"]):
        # (plain segments pass without the full check, which then finds nothing)
        if type(seg) is dict and type(seg.get("id")) is int and type(seg.get("category_id")) is int \
                and seg["category_id"] in categories:
            sid = seg["id"]
        else:
            sid = _check_segment(seg, image_id, k, source, categories, "ground truth", strict)
        if sid in segs:
            _duplicate(source, image_id, sid, strict)
        if "area" not in seg:
            raise PanopticKeyError(f"{source}: image {image_id!r}: segment {sid} has no 'area'")
        area = seg.get("area")
        if not finite_number(area):
            raise ValueError(f"{source}: image {image_id!r}: segment {sid} has no numeric 'area'")
        segs[sid] = (int(seg["category_id"]), seg.get("iscrowd", 0) == 1, area)
    return segs


def _pred_segments(ann: dict, i: int, source: str, categories, strict: bool = False) -> Dict[int, int]:
    """id -> category_id, in JSON order (as :func:`_gt_segments`)."""
    _check_annotation(ann, i, source)
    image_id = ann["image_id"]
    segs: Dict[int, int] = {}
    for k, seg in enumerate(ann["segments_info"]):
        if type(seg) is dict and type(seg.get("id")) is int and type(seg.get("category_id")) is int \
                and seg["category_id"] in categories:
            sid = seg["id"]
        else:
            sid = _check_segment(seg, image_id, k, source, categories, "predicted", strict)
        if sid in segs:
            _duplicate(source, image_id, sid, strict)
        segs[sid] = int(seg["category_id"])
    return segs


def default_folder(json_file) -> str:
    """The PNG folder beside a panoptic JSON: its path without ``.json``
    (or ``.json.gz``)."""
    path = os.fspath(json_file)
    for ext in (".json.gz", ".json"):
        if path.lower().endswith(ext):
            return path[:-len(ext)]
    return path


def _folder(folder, json_file, what: str) -> str:
    if folder is None:
        folder = default_folder(json_file)
    try:
        folder = os.fspath(folder)
    except TypeError:
        raise TypeError(f"{what} folder must be a path, got {type(folder).__name__}") from None
    if not os.path.isdir(folder):
        raise ValueError(f"folder with {what} segmentations does not exist: {folder}")
    return folder


