"""Synthetic per-image detection data for the incremental evaluator's tests, and the
same data written as COCO JSON (ground truth and results), as the evaluator
documents the correspondence."""
import json
import os

import numpy as np
import pycocotools.mask as mask_utils


def random_mask(rng, h, w, kind=None):
    """A (h, w) bool mask: rectangles, a disc, a thin line, a single pixel,
    something touching the border, or empty."""
    m = np.zeros((h, w), bool)
    kind = kind or rng.choice(["rect", "disc", "blob", "line", "pixel", "border", "empty", "full"],
                              p=[.25, .2, .25, .08, .06, .1, .03, .03])
    if kind == "rect":
        y0, x0 = rng.integers(0, h), rng.integers(0, w)
        m[y0:y0 + rng.integers(1, h + 1), x0:x0 + rng.integers(1, w + 1)] = True
    elif kind == "disc":
        cy, cx, r = rng.integers(0, h), rng.integers(0, w), rng.integers(1, max(2, min(h, w) // 2))
        yy, xx = np.ogrid[:h, :w]
        m[(yy - cy) ** 2 + (xx - cx) ** 2 <= r * r] = True
    elif kind == "blob":
        m = rng.random((h, w)) < rng.uniform(0.2, 0.7)
        y0, x0 = rng.integers(0, h // 2 + 1), rng.integers(0, w // 2 + 1)
        keep = np.zeros_like(m)
        keep[y0:y0 + h // 2 + 1, x0:x0 + w // 2 + 1] = True
        m &= keep
    elif kind == "line":
        m[rng.integers(0, h), :] = True
    elif kind == "pixel":
        m[rng.integers(0, h), rng.integers(0, w)] = True
    elif kind == "border":
        m[:, : rng.integers(1, w + 1)] = True
        m[rng.integers(0, h):, :] = True
    elif kind == "full":
        m[:] = True
    return m


def _boxes_xyxy(masks, rng, jitter):
    out = []
    for m in masks:
        ys, xs = np.nonzero(m)
        if len(ys):
            b = [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
        else:
            b = [0, 0, 0, 0]
        b = np.array(b, np.float64) + (rng.normal(0, jitter, 4) if jitter else 0)
        out.append(b)
    return np.array(out, np.float32).reshape(-1, 4)


def make_images(seed=0, n_images=24, labels=(1, 2, 3, 7), max_side=48, with_area=True, score_levels=6):
    """Per-image (preds, target) dicts of NumPy arrays, torchmetrics' format
    (boxes xyxy float32, masks (N, H, W) bool).  Scores are quantized so that
    they tie, within and across images."""
    rng = np.random.default_rng(seed)
    images = []
    for n in range(n_images):
        h, w = int(rng.integers(1, max_side)), int(rng.integers(1, max_side))
        if n % 7 == 3:
            h, w = 1, int(rng.integers(1, max_side))
        ng = int(rng.integers(0, 6)) if n % 5 else 0
        gmasks = np.array([random_mask(rng, h, w) for _ in range(ng)], bool).reshape(ng, h, w)
        glabels = rng.choice(labels, ng).astype(np.int64)
        crowd = (rng.random(ng) < 0.15).astype(np.int64)
        target = {"boxes": _boxes_xyxy(gmasks, rng, 0.0), "labels": glabels, "masks": gmasks, "iscrowd": crowd}
        if with_area:
            area = gmasks.reshape(ng, h * w).sum(1).astype(np.float32)
            # some given (also ones unlike the pixel count), some left to compute (0)
            area = np.where(rng.random(ng) < 0.3, rng.uniform(1, 4000, ng).astype(np.float32), area)
            area = np.where(rng.random(ng) < 0.3, 0, area).astype(np.float32)
            target["area"] = area
        nd = int(rng.integers(0, 9)) if n % 6 else 0
        dmasks = []
        dlabels = []
        for k in range(nd):
            if ng and rng.random() < 0.7:
                j = int(rng.integers(0, ng))
                m = gmasks[j].copy()
                flip = rng.random((h, w)) < rng.uniform(0, 0.08)
                m ^= flip
                dmasks.append(m)
                dlabels.append(glabels[j] if rng.random() < 0.85 else rng.choice(labels))
            else:
                dmasks.append(random_mask(rng, h, w))
                dlabels.append(rng.choice(labels))
        dmasks = np.array(dmasks, bool).reshape(nd, h, w)
        preds = {
            "boxes": _boxes_xyxy(dmasks, rng, 0.4),
            "scores": (np.floor(rng.random(nd) * score_levels) / score_levels + 0.05).astype(np.float32),
            "labels": np.array(dlabels, np.int64).reshape(nd),
            "masks": dmasks,
        }
        images.append((preds, target))
    return images


def _xywh(b):
    b = np.asarray(b).reshape(-1, 4)
    return np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], 1).astype(np.float64)


def write_coco(images, iou_type, folder, image_ids=None):
    """The ground truth and results JSON files of ``images`` for ``iou_type``
    (as IncrementalEvaluator documents them); returns their paths."""
    ids = list(range(len(images))) if image_ids is None else [int(i) for i in image_ids]
    gt = {"images": [], "annotations": [], "categories": []}
    results = []
    labels = set()
    ann_id = 1
    for img_id, (preds, target) in zip(ids, images):
        masks = target["masks"]
        h, w = (masks.shape[1], masks.shape[2])
        if preds["masks"].shape[0]:
            h, w = preds["masks"].shape[1:]
        gt["images"].append({"id": img_id, "height": int(h), "width": int(w)})
        gboxes = _xywh(target["boxes"])
        for j in range(len(target["labels"])):
            rle = mask_utils.encode(np.asfortranarray(masks[j].astype(np.uint8)))
            if iou_type == "bbox":
                computed = gboxes[j, 2] * gboxes[j, 3]
            else:
                computed = int(mask_utils.area(rle))
            given = float(target["area"][j]) if "area" in target else 0.0
            ann = {"id": ann_id, "image_id": img_id, "category_id": int(target["labels"][j]),
                   "iscrowd": int(target["iscrowd"][j]), "area": given if given > 0 else computed,
                   "bbox": gboxes[j].tolist(),
                   "segmentation": {"size": [int(h), int(w)], "counts": rle["counts"].decode()}}
            gt["annotations"].append(ann)
            labels.add(int(target["labels"][j]))
            ann_id += 1
        dboxes = _xywh(preds["boxes"])
        for j in range(len(preds["labels"])):
            r = {"image_id": img_id, "category_id": int(preds["labels"][j]), "score": float(preds["scores"][j])}
            if iou_type == "bbox":
                r["bbox"] = dboxes[j].tolist()
            else:
                rle = mask_utils.encode(np.asfortranarray(preds["masks"][j].astype(np.uint8)))
                r["segmentation"] = {"size": [int(h), int(w)], "counts": rle["counts"].decode()}
            results.append(r)
            labels.add(int(preds["labels"][j]))
    gt["categories"] = [{"id": c, "name": str(c)} for c in sorted(labels)]
    gt_path = os.path.join(folder, f"gt_{iou_type}.json")
    dt_path = os.path.join(folder, f"dt_{iou_type}.json")
    with open(gt_path, "w") as f:
        json.dump(gt, f)
    with open(dt_path, "w") as f:
        json.dump(results, f)
    return gt_path, dt_path
