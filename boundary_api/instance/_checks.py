"""Checks of COCO/LVIS instance files: one clear error per problem, nothing modified."""
from __future__ import annotations

import logging
import numbers
from typing import Any, Dict, Iterable, List

import numpy as np

from .._io import finite_number
from ..masks.boundary import check_rle_strings

log = logging.getLogger(__name__)


def check_instances_dataset(dataset: Any, source: str, lvis: bool = False) -> None:
    """Check that a ground truth is a COCO (or LVIS) instances dataset."""
    kind = "LVIS" if lvis else "COCO"
    if not isinstance(dataset, dict):
        raise ValueError(f"{source}: not a {kind} ground truth (expected a JSON object with "
                         f"'images', 'annotations' and 'categories', got a {type(dataset).__name__})")
    missing = [k for k in ("images", "annotations", "categories") if not isinstance(dataset.get(k), list)]
    if missing:
        raise ValueError(f"{source}: not a {kind} ground truth (no list of {', '.join(repr(m) for m in missing)})")
    for i, img in enumerate(dataset["images"]):
        if not isinstance(img, dict) or "id" not in img:
            raise ValueError(f"{source}: images[{i}] has no 'id'")
        for key in ("height", "width"):
            v = img.get(key)
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < 1:
                raise ValueError(f"{source}: image {img['id']!r} has no valid '{key}' (got {v!r})")
        if lvis:
            for key in ("neg_category_ids", "not_exhaustive_category_ids"):
                if not isinstance(img.get(key), list):
                    raise ValueError(f"{source}: image {img['id']!r} has no '{key}' list (not an LVIS ground truth?)")
    image_ids = {img["id"] for img in dataset["images"]}
    for i, cat in enumerate(dataset["categories"]):
        if not isinstance(cat, dict) or "id" not in cat:
            raise ValueError(f"{source}: categories[{i}] has no 'id'")
        if lvis and cat.get("frequency") not in ("r", "c", "f"):
            raise ValueError(f"{source}: category {cat['id']!r} has no 'frequency' of 'r', 'c' or 'f'")
    # what the evaluators read from every ground truth ('iscrowd': COCO only)
    required = ("id", "image_id", "category_id", "area") + (() if lvis else ("iscrowd",))
    for i, ann in enumerate(dataset["annotations"]):
        if type(ann) is not dict:
            raise ValueError(f"{source}: annotations[{i}] is not an object")
        for key in required:
            if key not in ann:
                what = f"annotation id {ann['id']!r}" if "id" in ann else f"annotations[{i}]"
                raise ValueError(f"{source}: {what} has no '{key}'")
        if ann["image_id"] not in image_ids:
            raise ValueError(f"{source}: annotation id {ann['id']!r} refers to image "
                             f"{ann['image_id']!r}, which is not in 'images'")
        if not finite_number(ann["area"]):
            raise ValueError(f"{source}: annotation id {ann['id']!r} has an invalid area {ann['area']!r}")


def check_results(anns: Any, images: Dict[Any, dict], categories: Iterable, source: str) -> List[dict]:
    """Check detection results before any library touches them.

    ``images`` maps image id to the image record.  Returns the list.  Raises
    ValueError/TypeError naming the first problem: not a list, an entry that
    is not an object, an unknown image id, a missing or non-finite score, a
    missing category, an invalid box, a segmentation that is not a compressed
    RLE of its image's size.  Unknown category ids are only logged
    (pycocotools accepts them).
    """
    if not isinstance(anns, list):
        raise TypeError(f"{source}: results must be a list of objects, got a {type(anns).__name__}")
    if not anns:
        raise ValueError(f"{source}: results are empty: there is nothing to evaluate")
    first = anns[0]
    if not isinstance(first, dict):
        raise ValueError(f"{source}: result #0 is not an object")
    if "caption" in first:
        for i, a in enumerate(anns):
            if not isinstance(a, dict):
                raise ValueError(f"{source}: result #{i} is not an object")
        return anns
    kind = ("bbox" if "bbox" in first and first["bbox"] != [] else
            "segmentation" if "segmentation" in first else
            "keypoints" if "keypoints" in first else None)
    if kind is None:
        raise ValueError(f"{source}: result #0 has neither 'segmentation', 'bbox' nor 'keypoints'")

    def name(i):
        return f"{source}: result #{i} (image {anns[i]['image_id']!r})"

    known = set(categories)
    unknown_cats = 0
    rle_items, heights, widths = [], [], []
    for i, a in enumerate(anns):
        if type(a) is not dict:
            raise ValueError(f"{source}: result #{i} is not an object")
        img = images.get(a.get("image_id"))
        if img is None:
            unknown = sorted({str(r.get("image_id")) for r in anns
                              if isinstance(r, dict) and r.get("image_id") not in images})
            more = f" (and {len(unknown) - 5} more)" if len(unknown) > 5 else ""
            raise ValueError(f"{source}: results refer to image ids not in the ground truth: "
                             f"{', '.join(unknown[:5])}{more}")
        score = a.get("score")
        if not finite_number(score):
            if score is None:
                raise ValueError(f"{name(i)} has no 'score'")
            raise ValueError(f"{name(i)} has an invalid score {score!r}")
        if "category_id" not in a:
            raise ValueError(f"{name(i)} has no 'category_id'")
        if a["category_id"] not in known:
            unknown_cats += 1
        if kind == "bbox":
            b = a.get("bbox")
            if not isinstance(b, (list, tuple)) or len(b) != 4 or not all(finite_number(v) for v in b):
                raise ValueError(f"{name(i)} has no valid 'bbox' [x, y, w, h]")
        elif kind not in a:
            raise ValueError(f"{name(i)} has no '{kind}' (result #0 has one)")
        seg = a.get("segmentation")
        if seg is None:
            continue
        if type(seg) is list and kind == "bbox":
            continue  # polygons next to boxes: pycocotools rasterizes them
        if type(seg) is not dict or type(seg.get("counts")) not in (str, bytes) or "size" not in seg:
            raise ValueError(f"{name(i)}: 'segmentation' must be a compressed RLE "
                             f"{{'size': [h, w], 'counts': str}} as in the COCO results format")
        size = seg["size"]
        h, w = img["height"], img["width"]
        if not isinstance(size, (list, tuple)) or len(size) != 2 or size[0] != h or size[1] != w:
            raise ValueError(f"{name(i)}: RLE size {size!r} is not the image's [{h}, {w}]")
        rle_items.append(i)
        heights.append(h)
        widths.append(w)
    if rle_items:
        check_rle_strings([anns[i]["segmentation"]["counts"] for i in rle_items],
                          np.array(heights, np.int64), np.array(widths, np.int64),
                          lambda j: name(rle_items[j]))
    if unknown_cats:
        bad = unknown_categories(anns, known)
        log.warning("%s: %d result(s) have category ids not in the ground truth (%s); "
                    "they are never matched", source, unknown_cats, ", ".join(map(str, bad[:10])))
    return anns


def unknown_categories(anns: List[dict], categories: Iterable) -> List:
    """Category ids used by results but absent from the ground truth."""
    known = set(categories)
    return sorted({a.get("category_id") for a in anns if a.get("category_id") not in known}, key=str)
