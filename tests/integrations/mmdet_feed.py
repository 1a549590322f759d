"""The bundled COCO / LVIS results as an MMDetection model's outputs (the mmdet tier's data).

Each image of a ground-truth file becomes the data sample a detector's
``test_step`` hands to a metric's ``process()``: ``img_id``, ``ori_shape`` and
``pred_instances`` with the results' masks (boolean tensors, as a mask head
gives them), boxes (the masks' boxes, ``xyxy``), scores (float64, so that
MMDetection's ``float(score)`` is the file's score) and labels (the category's
index in the ground truth).  Needs torch; used by tests/integrations/test_mmdet.py
and the child processes it starts.
"""
import json
from collections import defaultdict

import numpy as np
import pycocotools.mask as mask_util
import torch


def load(path):
    with open(path) as f:
        return json.load(f)


def dataset_meta(gt_path) -> dict:
    """``dataset_meta`` of a dataset over ``gt_path``: the class names in the file's order."""
    return {"classes": tuple(c["name"] for c in load(gt_path)["categories"])}


def data_samples(gt_path, dt_path, images=None):
    """The data samples of the ground truth's images (or of ``images``, indices), one by one."""
    gt = load(gt_path)
    label = {c["id"]: i for i, c in enumerate(gt["categories"])}
    by_image = defaultdict(list)
    for r in load(dt_path):
        by_image[r["image_id"]].append(r)
    chosen = gt["images"] if images is None else [gt["images"][i] for i in images]
    for img in chosen:
        rs = by_image.get(img["id"], [])
        h, w = img["height"], img["width"]
        if rs:
            masks = np.stack([mask_util.decode(r["segmentation"]) for r in rs]).astype(bool)
            xywh = np.array([mask_util.toBbox(r["segmentation"]) for r in rs], np.float64)
        else:
            masks, xywh = np.zeros((0, h, w), bool), np.zeros((0, 4), np.float64)
        yield {
            "img_id": img["id"],
            "ori_shape": (h, w),
            "pred_instances": {
                "bboxes": torch.from_numpy(np.hstack([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]])),
                "scores": torch.tensor([r["score"] for r in rs], dtype=torch.float64),
                "labels": torch.tensor([label[r["category_id"]] for r in rs], dtype=torch.int64),
                "masks": torch.from_numpy(masks),
            },
        }


def processed(metric, gt_path, dt_path, images=None) -> list:
    """``metric.results`` after ``process()`` of every image, one image per batch."""
    metric.dataset_meta = dataset_meta(gt_path)
    for sample in data_samples(gt_path, dt_path, images):
        metric.process({}, [sample])
    return metric.results
