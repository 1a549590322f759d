"""SA-Co/Gold-like data: ground truths of several annotators and SAM 3-style predictions.

Deterministic (every random choice from ``numpy.random.default_rng(seed)``) data in
the layout SAM 3's evaluator reads (facebookresearch/sam3 ``sam3/eval/cgf1_eval.py``):

* each ground-truth file is a COCO instances file with one image entry per (image, noun
  phrase) *pair*, carrying ``is_instance_exhaustive`` and the phrase (``text_input``);
  annotations are compressed RLEs with boxes and areas normalised by the image size;
  one file per annotator (three for SA-Co/Gold), the same pairs in each;
* predictions are a list as SAM 3's ``coco_writer.py`` writes them: ``image_id``,
  ``category_id``, an RLE ``segmentation``, ``score`` rounded to 5 decimals, ``area``
  (the mask's, normalised) and ``bbox`` (normalised, rounded to 5 decimals).

The data is meant to be hard for an evaluator: about 30% negative pairs, annotators who
disagree (jittered, dropped, extra and merged "group" masks marked ``iscrowd``, a pair
one of them calls negative), crowd-only pairs, pairs another file marks non-exhaustive,
annotations and predictions of a second and of unknown categories, predictions for
pairs the ground truth does not have, empty masks, duplicated masks and scores (ties in
the matching), scores exactly at and just below 0.5, and rectangles whose IoU is exactly
a threshold (0.5, 0.55, ..., 0.95).

>>> from boundary_api.saco.synthetic import gold_like
>>> gts, preds = gold_like(num_pairs=4, seed=0, height=48, width=64)
>>> len(gts), len(gts[0]["images"])
(3, 4)
>>> sorted(preds[0]) if preds else []  # doctest: +SKIP
['area', 'bbox', 'category_id', 'image_id', 'score', 'segmentation']
"""
from __future__ import annotations

import json
import os
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ["gold_like", "write_gold_like", "THRESHOLD_FRACTIONS"]

#: IoUs (numerator, denominator) the threshold pairs hit exactly: 0.5, 0.55, ..., 0.95
THRESHOLD_FRACTIONS = [(10 + k, 20) for k in range(10)]

#: the category of (almost) every annotation and prediction, a second one and one
#: that no ground truth has
CATEGORY, SECOND_CATEGORY, UNKNOWN_CATEGORY = 1, 2, 999


def _encode(mask: np.ndarray) -> dict:
    """A mask's compressed RLE as SAM 3 writes it: ``{"size": [h, w], "counts": str}``."""
    import pycocotools.mask as mask_utils

    rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": [int(mask.shape[0]), int(mask.shape[1])], "counts": rle["counts"].decode("ascii")}


def _box(mask: np.ndarray) -> List[float]:
    """pycocotools' box of a mask ``[x, y, w, h]`` (zeros for an empty mask)."""
    ys = np.flatnonzero(mask.any(axis=1))
    xs = np.flatnonzero(mask.any(axis=0))
    if not len(ys):
        return [0.0, 0.0, 0.0, 0.0]
    return [float(xs[0]), float(ys[0]), float(xs[-1] + 1 - xs[0]), float(ys[-1] + 1 - ys[0])]


class _Shape:
    """An ellipse, a rectangle or a polygon, drawn into masks of one image size."""

    def __init__(self, kind: str, params: np.ndarray):
        self.kind = kind
        self.params = np.asarray(params, np.float64)

    def jittered(self, rng: np.random.Generator, amount: float) -> "_Shape":
        scale = np.abs(self.params).mean() if self.kind == "polygon" else 1.0
        p = self.params.copy()
        if self.kind == "polygon":
            p = p + rng.normal(0.0, amount * 0.08 * max(scale, 1.0) * 0.2, p.shape)
        elif self.kind == "ellipse":  # cy, cx, ry, rx, angle
            p[:2] += rng.normal(0.0, amount * 0.15 * p[2:4].mean(), 2)
            p[2:4] *= np.exp(rng.normal(0.0, amount * 0.12, 2))
            p[4] += rng.normal(0.0, amount * 10)
        else:  # rect: y0, x0, y1, x1 (exclusive)
            size = max(p[2] - p[0], p[3] - p[1])
            p += np.round(rng.normal(0.0, amount * 0.1 * size, 4))
        return _Shape(self.kind, p)

    def draw(self, h: int, w: int) -> np.ndarray:
        import cv2

        out = np.zeros((h, w), np.uint8)
        p = self.params
        if self.kind == "ellipse":
            cy, cx, ry, rx, angle = p
            cv2.ellipse(out, (int(round(cx)), int(round(cy))), (max(int(round(rx)), 1), max(int(round(ry)), 1)),
                        float(angle), 0.0, 360.0, 1, -1)
        elif self.kind == "rect":
            y0, x0, y1, x1 = (int(round(v)) for v in p)
            out[max(y0, 0):max(min(y1, h), 0), max(x0, 0):max(min(x1, w), 0)] = 1
        else:
            pts = np.round(p.reshape(-1, 2)).astype(np.int32)
            cv2.fillPoly(out, [pts], 1)
        return out


def _random_shape(rng: np.random.Generator, h: int, w: int, small: bool = False) -> _Shape:
    side = min(h, w)
    size = rng.uniform(0.03, 0.12 if small else 0.45) * side
    cy, cx = rng.uniform(0, h), rng.uniform(0, w)
    kind = rng.choice(["ellipse", "rect", "polygon"], p=[0.45, 0.2, 0.35])
    if kind == "ellipse":
        return _Shape("ellipse", [cy, cx, size * rng.uniform(0.4, 1.0), size * rng.uniform(0.4, 1.0),
                                  rng.uniform(0, 180)])
    if kind == "rect":
        hh, ww = size * rng.uniform(0.3, 1.0), size * rng.uniform(0.3, 1.0)
        return _Shape("rect", [cy - hh, cx - ww, cy + hh, cx + ww])
    n = int(rng.integers(3, 9))
    ang = np.sort(rng.uniform(0, 2 * np.pi, n))
    rad = size * rng.uniform(0.4, 1.0, n)
    return _Shape("polygon", np.stack([cx + rad * np.cos(ang), cy + rad * np.sin(ang)], 1).reshape(-1))


def _threshold_rects(rng: np.random.Generator, h: int, w: int) -> List[Tuple[np.ndarray, np.ndarray]]:
    """(ground truth, prediction) rectangles whose mask IoU is exactly one of
    :data:`THRESHOLD_FRACTIONS`: widths ``(q + p) k`` shifted by ``(q - p) k``
    columns give ``(W - s) / (W + s) = p / q``."""
    out = []
    for _ in range(int(rng.integers(1, 4))):
        p, q = THRESHOLD_FRACTIONS[int(rng.integers(len(THRESHOLD_FRACTIONS)))]
        g = np.gcd(p, q)
        p, q = p // g, q // g
        k = 1
        while (q + p) * (k + 1) + (q - p) * (k + 1) < w // 3 and rng.random() < 0.5:
            k += 1
        width, shift = (q + p) * k, (q - p) * k
        rows = int(rng.integers(1, max(2, h // 6)))
        if width + shift >= w or rows >= h:
            continue
        y0 = int(rng.integers(0, h - rows))
        x0 = int(rng.integers(0, w - width - shift))
        gt = np.zeros((h, w), np.uint8)
        gt[y0:y0 + rows, x0:x0 + width] = 1
        dt = np.zeros((h, w), np.uint8)
        if rng.random() < 0.5:
            dt[y0:y0 + rows, x0 + shift:x0 + shift + width] = 1
        else:
            dt[y0:y0 + rows, x0:x0 + width] = 1
            gt[:] = 0
            gt[y0:y0 + rows, x0 + shift:x0 + shift + width] = 1
        out.append((gt, dt))
    return out


def _score(rng: np.random.Generator, good: bool) -> float:
    r = rng.random()
    if r < 0.06:
        return 0.5
    if r < 0.08:
        return 0.49999
    if r < 0.09:
        return 0.50001
    lo, hi = (0.3, 1.0) if good else (0.0, 0.8)
    return round(float(rng.uniform(lo, hi)), 5)


def _annotation(mask: np.ndarray, ann_id: int, image_id: int, category_id: int, crowd: int) -> dict:
    h, w = mask.shape
    x, y, bw, bh = _box(mask)
    return {"area": float(mask.sum()) / (h * w), "id": ann_id, "image_id": image_id, "source": "manual",
            "bbox": [x / w, y / h, bw / w, bh / h], "segmentation": _encode(mask),
            "category_id": category_id, "iscrowd": crowd}


def _prediction(mask: np.ndarray, image_id: int, category_id: int, score: float) -> dict:
    h, w = mask.shape
    x, y, bw, bh = _box(mask)
    return {"image_id": image_id, "category_id": category_id, "segmentation": _encode(mask), "score": score,
            "area": float(mask.sum()) / (h * w),
            "bbox": [round(x / w, 5), round(y / h, 5), round(bw / w, 5), round(bh / h, 5)]}


def gold_like(num_pairs: int = 200, seed: int = 0, *, num_files: int = 3, negative_fraction: float = 0.3,
              max_predictions: int = 10, height: int = 480, width: int = 640,
              adversarial: bool = True) -> Tuple[List[dict], List[dict]]:
    """SA-Co/Gold-like ground truths (one per annotator) and predictions, in memory.

    Parameters
    ----------
    num_pairs : int
        (image, noun phrase) pairs, a few sharing an image.
    seed : int
    num_files : int
        Annotator files (SA-Co/Gold has 3).
    negative_fraction : float
        Share of pairs without any instance in the first file (the others mostly
        agree; now and then one annotator finds an instance).
    max_predictions : int
        Predictions per pair: 0 to this many.
    height, width : int
        Image size (SA-Co/Gold-like: 480 x 640).
    adversarial : bool
        Add what is hard for an evaluator (see the module's notes): crowd-only pairs,
        exact-threshold rectangles, duplicates, unknown categories and pairs, scores
        at 0.5, empty masks, non-exhaustive pairs.  False: plain data.

    Returns
    -------
    (list of dict, list of dict)
        The ground-truth datasets (one per file) and the predictions.
    """
    if num_pairs < 0 or num_files < 1 or max_predictions < 0:
        raise ValueError("num_pairs and max_predictions must be >= 0, num_files >= 1")
    rng = np.random.default_rng(seed)
    h, w = int(height), int(width)
    adv = 1.0 if adversarial else 0.0
    categories = [{"id": CATEGORY, "name": "object"}, {"id": SECOND_CATEGORY, "name": "thing"}]
    images: List[List[dict]] = [[] for _ in range(num_files)]
    anns: List[List[dict]] = [[] for _ in range(num_files)]
    preds: List[dict] = []
    next_ann = [1] * num_files
    # pair ids: distinct, not in file order (the evaluation follows file order)
    ids = rng.choice(np.arange(1, 10 * max(num_pairs, 1) + 1), size=num_pairs, replace=False).tolist()
    pair = 0
    image_no = 0
    while pair < num_pairs:
        image_no += 1
        for _ in range(min(int(rng.integers(1, 4)), num_pairs - pair)):
            img_id = int(ids[pair])
            pair += 1
            _make_pair(rng, img_id, image_no, h, w, adv, negative_fraction, max_predictions, num_files,
                       images, anns, next_ann, preds)
    if adversarial and num_pairs:
        # predictions for pairs that no ground truth has (the official evaluator ignores them)
        for k in range(max(1, num_pairs // 200)):
            mask = _random_shape(rng, h, w).draw(h, w)
            preds.append(_prediction(mask, 10 * num_pairs + 1 + k, CATEGORY, _score(rng, True)))
        order = rng.permutation(len(preds))
        preds = [preds[i] for i in order]
    gts = []
    for f in range(num_files):
        gts.append({"info": {"description": f"SA-Co/Gold-like synthetic annotator {chr(97 + f)}",
                             "seed": int(seed)},
                    "images": images[f], "annotations": anns[f], "categories": categories})
    return gts, preds


def _make_pair(rng, img_id, image_no, h, w, adv, negative_fraction, max_predictions, num_files,
               images, anns, next_ann, preds) -> None:
    """One pair: its image entry in every file, each annotator's masks, the predictions."""
    r = rng.random()
    kind = "negative" if r < negative_fraction else "positive"
    if adv and kind == "positive":
        r2 = rng.random()
        if r2 < 0.04:
            kind = "threshold"
        elif r2 < 0.06:
            kind = "crowd_only"
    # per file: list of (mask, category, crowd)
    per_file: List[List[Tuple[np.ndarray, int, int]]] = [[] for _ in range(num_files)]
    base: List[np.ndarray] = []
    pred_masks: List[Tuple[np.ndarray, bool]] = []  # (mask, meant to match)
    if kind == "threshold":
        for gt, dt in _threshold_rects(rng, h, w):
            base.append(gt)
            for f in range(num_files):
                per_file[f].append((gt, CATEGORY, 0))
            pred_masks.append((dt, True))
    elif kind in ("positive", "crowd_only"):
        n = int(min(rng.geometric(0.3), 15))
        if rng.random() < 0.05:
            n = int(rng.integers(15, 30))  # a crowded scene
        shapes = [_random_shape(rng, h, w, small=n > 6) for _ in range(n)]
        for f in range(num_files):
            if num_files > 1 and f and rng.random() < 0.04 * adv:
                continue  # this annotator calls the pair negative
            items = []
            for s in shapes:
                u = rng.random()
                if u < 0.08 and n > 1:
                    continue  # missed
                mask = s.draw(h, w) if u < 0.4 else s.jittered(rng, float(rng.uniform(0.2, 1.0))).draw(h, w)
                if mask.any() or rng.random() < 0.5:
                    items.append([mask, CATEGORY, 0])
            if rng.random() < 0.05:
                items.append([_random_shape(rng, h, w, small=True).draw(h, w), CATEGORY, 0])  # an extra one
            if adv and len(items) > 2 and rng.random() < 0.08:
                # a group mask: some instances merged, marked iscrowd
                k = int(rng.integers(2, len(items)))
                merged = np.zeros((h, w), np.uint8)
                for m in items[:k]:
                    merged |= m[0]
                items = [[merged, CATEGORY, 1]] + items[k:]
            if kind == "crowd_only":
                merged = np.zeros((h, w), np.uint8)
                for m in items:
                    merged |= m[0]
                items = [[merged, CATEGORY, 1]] if items else []
            if adv and items and rng.random() < 0.03:
                items[int(rng.integers(len(items)))][1] = SECOND_CATEGORY
            per_file[f] = [tuple(i) for i in items]
        base = [s.draw(h, w) for s in shapes]
        for s, m in zip(shapes, base):
            if rng.random() < 0.75:
                exact = rng.random() < 0.1 * adv  # the very mask of the shape
                pred_masks.append((m if exact else s.jittered(rng, float(rng.uniform(0.1, 1.5))).draw(h, w),
                                   True))
    else:  # negative: now and then an annotator finds something
        for f in range(1, num_files):
            if rng.random() < 0.05 * (1 + adv):
                per_file[f].append((_random_shape(rng, h, w, small=True).draw(h, w), CATEGORY, 0))
    # false positives, duplicates, empty masks
    for _ in range(int(rng.integers(0, 3 if kind != "negative" else 4))):
        if rng.random() < 0.5:
            pred_masks.append((_random_shape(rng, h, w, small=rng.random() < 0.5).draw(h, w), False))
    if adv and pred_masks and rng.random() < 0.1:
        pred_masks.append(pred_masks[int(rng.integers(len(pred_masks)))])  # a duplicate
    if adv and rng.random() < 0.02:
        pred_masks.append((np.zeros((h, w), np.uint8), False))
    rng.shuffle(pred_masks)
    pred_masks = pred_masks[:int(rng.integers(0, max_predictions + 1)) if rng.random() < 0.15
                            else max_predictions]
    scores = [_score(rng, good) for _, good in pred_masks]
    if adv and len(scores) > 1 and rng.random() < 0.1:
        scores[1] = scores[0]  # tied scores
    for (m, _), s in zip(pred_masks, scores):
        cat = CATEGORY
        if adv:
            u = rng.random()
            cat = UNKNOWN_CATEGORY if u < 0.01 else SECOND_CATEGORY if u < 0.02 else CATEGORY
        preds.append(_prediction(m, img_id, cat, s))
    # the image entry of the pair in every file
    for f in range(num_files):
        exhaustive: object = 1
        if adv and rng.random() < (0.04 if f == 0 else 0.02):
            exhaustive = 0
        if f == 2 and adv:
            exhaustive = bool(exhaustive)  # one file writes JSON booleans
        images[f].append({"id": img_id, "file_name": f"sa_{image_no:08d}.jpg", "text_input": f"phrase {img_id}",
                          "width": w, "height": h, "is_instance_exhaustive": exhaustive,
                          "is_pixel_exhaustive": exhaustive})
        items = per_file[f]
        if adv and len(items) > 1 and rng.random() < 0.1:
            items = list(items[::-1])  # file order differs from the category order
        for mask, cat, crowd in items:
            anns[f].append(_annotation(mask, next_ann[f], img_id, cat, crowd))
            next_ann[f] += 1


def write_gold_like(out_dir: str, num_pairs: int = 200, seed: int = 0, *, prefix: str = "gold_synthetic",
                    **kwargs) -> Dict[str, object]:
    """Write :func:`gold_like` data: one ground-truth file per annotator
    (``<prefix>_merged_a_test.json``, ``_b``, ``_c``...) and the predictions
    (``<prefix>_predictions_segm.json``) in ``out_dir``.

    Returns ``{"gt": [paths], "dt": path}``; other keyword arguments go to
    :func:`gold_like`.
    """
    gts, preds = gold_like(num_pairs, seed, **kwargs)
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for f, gt in enumerate(gts):
        path = os.path.join(out_dir, f"{prefix}_merged_{chr(97 + f)}_test.json")
        with open(path, "w") as fh:
            json.dump(gt, fh)
        paths.append(path)
    dt = os.path.join(out_dir, f"{prefix}_predictions_segm.json")
    with open(dt, "w") as fh:
        json.dump(preds, fh)
    return {"gt": paths, "dt": dt}
