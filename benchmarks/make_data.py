#!/usr/bin/env python3
"""Benchmark data sets made from the real ground truth shipped in tests/data.

Three generators, each writing ``benchmarks/_data/<name>/gt.json`` and
``dt.json`` (plus ``meta.json``, written last, which marks a complete set).
A set is built only when it is missing or when ``force`` / ``--force`` is
given; the directory name carries the parameters, so different parameters
never share a cache entry.  Everything is deterministic for a seed.

``coco``
    The COCO ground truth replicated ``copies`` times (new image ids, new
    annotation ids).  For every non-crowd ground truth of every copy,
    ``dets_per_gt`` detections, each a jittered copy of its mask; 20% of them
    get a random wrong category.  With the defaults (5 copies, 8 per ground
    truth): 500 images, 4,195 ground truths, ~32.7k detections.
``lvis``
    The LVIS ground truth (``neg_category_ids``,
    ``not_exhaustive_category_ids`` and category ``frequency`` kept),
    replicated ``copies`` times, with ``dets_per_image`` detections on every
    image: jittered ground-truth masks, and random ellipses on the images
    that have no ground truth.
``lvis_fixed`` (:func:`lvis_fixed_set`)
    For LVIS Fixed / Pooled AP: the LVIS ground truth x 10 (1,000 images),
    1,000 detections on every image (1M), and the six categories with most
    ground truths topped up to 12,000 detections each (so that K = 10,000
    cuts them); scores with three decimals.
``scale``
    COCO-val sized: the COCO ground truth replicated 50 times (5,000 images)
    and thinned at random to ~36.8k ground truths, 100 detections per image
    (500k).  Each base mask is jittered ``variants`` ways once; the encoded
    strings are reused across the copies, with new scores and categories.

``val`` (:func:`val_set`)
    COCO-val sized like ``scale`` (5,000 images, ~36.8k ground truths), but
    every detection is drawn fresh by :func:`distinct_rle` (no two RLE
    strings equal) and carries the box of its mask: 1 detection per ground
    truth (``val2017`` on the command line) or 100 per image (``val500k``).
    ``coco_set``/``lvis_set`` take ``distinct=True`` for the same treatment.

Jitters (one picked at random per detection): a shift of up to 8 px in x and
y, dilation or erosion by 1-5 iterations of a 3x3 kernel, a Mask R-CNN-like
28x28 resample of the box crop, or the mask unchanged.  A jitter that
empties the mask drops that detection.  Results carry compressed RLE
(``counts`` as ``str``), a random score; no box except in the ``distinct`` sets.

Use from Python (the benchmark scripts do)::

    import make_data
    ds = make_data.coco_set()            # -> DataSet(dir, gt, dt, meta)

or from the shell: ``python benchmarks/make_data.py {coco,lvis,scale,all}``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional

import cv2
import numpy as np
import pycocotools.mask as mask_utils

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA_DIR = HERE / "_data"
COCO_GT = ROOT / "tests" / "data" / "coco" / "instances_val2014_100.json"
LVIS_GT = ROOT / "tests" / "data" / "lvis" / "lvis_val_100.json"

#: COCO val2017 has 36,781 instance annotations on 5,000 images
COCO_VAL_GT = 36781
#: pixels kept around a mask's box: more than the largest shift (8) and dilation (5)
MARGIN = 10
WRONG_CATEGORY = 0.2
_KERNEL = np.ones((3, 3), np.uint8)


@dataclass
class DataSet:
    """A generated benchmark set on disk."""

    dir: Path
    gt: Path
    dt: Path
    meta: dict

    def describe(self) -> str:
        m = self.meta
        return (f"{self.dir.name}: {m['images']} images, {m['gt']} ground truths, "
                f"{m['dets']} detections")


# --------------------------------------------------------------------------
# masks
# --------------------------------------------------------------------------
class BaseMask:
    """A ground-truth mask kept as the crop of its box plus MARGIN pixels."""

    __slots__ = ("crop", "y0", "x0", "h", "w", "box")

    def __init__(self, crop: np.ndarray, y0: int, x0: int, h: int, w: int, box):
        self.crop, self.y0, self.x0, self.h, self.w = crop, y0, x0, h, w
        self.box = box  # (y0, y1, x0, x1) of the mask inside the crop


def ann_to_rle(ann: dict, h: int, w: int) -> dict:
    """Compressed RLE of a COCO/LVIS annotation (polygons, uncompressed or compressed RLE)."""
    seg = ann["segmentation"]
    if isinstance(seg, list):
        return mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
    if isinstance(seg["counts"], list):
        return mask_utils.frPyObjects(seg, h, w)
    return seg


def base_mask(ann: dict, h: int, w: int) -> Optional[BaseMask]:
    """The annotation's mask cropped around its box, or None if it is empty."""
    full = mask_utils.decode(ann_to_rle(ann, h, w))
    ys = np.flatnonzero(full.any(axis=1))
    if len(ys) == 0:
        return None
    xs = np.flatnonzero(full.any(axis=0))
    y0, y1 = max(0, ys[0] - MARGIN), min(h, ys[-1] + 1 + MARGIN)
    x0, x1 = max(0, xs[0] - MARGIN), min(w, xs[-1] + 1 + MARGIN)
    crop = np.ascontiguousarray(full[y0:y1, x0:x1])
    box = (int(ys[0] - y0), int(ys[-1] + 1 - y0), int(xs[0] - x0), int(xs[-1] + 1 - x0))
    return BaseMask(crop, int(y0), int(x0), h, w, box)


def _shift(a: np.ndarray, dy: int, dx: int) -> np.ndarray:
    """``a`` moved by (dy, dx), zeros shifted in (no wrap-around)."""
    out = np.zeros_like(a)
    h, w = a.shape
    if abs(dy) >= h or abs(dx) >= w:
        return out
    src_y, dst_y = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
    src_x, dst_x = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
    out[dst_y, dst_x] = a[src_y, src_x]
    return out


def jitter(base: BaseMask, rng: np.random.Generator) -> np.ndarray:
    """A jittered copy of ``base.crop`` (same shape; pixels past the image are lost)."""
    m = base.crop
    kind = int(rng.integers(4))
    if kind == 0:  # shift by up to 8 px
        dy, dx = (int(v) for v in rng.integers(-8, 9, size=2))
        return _shift(m, dy, dx)
    if kind == 1:  # dilate or erode, 1-5 iterations of a 3x3 kernel
        k = int(rng.integers(1, 6))
        op = cv2.dilate if rng.random() < 0.5 else cv2.erode
        # erode treats pixels past the border as foreground, as on the full
        # image; the crop's inner borders are MARGIN pixels of background
        return op(m, _KERNEL, iterations=k)
    if kind == 2:  # Mask R-CNN-like: 28x28 mask of the box, pasted back bilinearly
        by0, by1, bx0, bx1 = base.box
        small = cv2.resize(m[by0:by1, bx0:bx1].astype(np.float32), (28, 28), interpolation=cv2.INTER_AREA)
        big = cv2.resize(small, (bx1 - bx0, by1 - by0), interpolation=cv2.INTER_LINEAR)
        out = np.zeros_like(m)
        out[by0:by1, bx0:bx1] = big >= 0.5
        return out
    return m  # unchanged


def encode_crop(crop: np.ndarray, y0: int, x0: int, h: int, w: int) -> Optional[dict]:
    """Compressed RLE (counts as str) of ``crop`` placed at (y0, x0) in an h x w image."""
    if not crop.any():
        return None
    full = np.zeros((h, w), np.uint8, order="F")
    full[y0:y0 + crop.shape[0], x0:x0 + crop.shape[1]] = crop
    rle = mask_utils.encode(full)
    return {"size": [h, w], "counts": rle["counts"].decode("ascii")}


def jittered_rle(base: BaseMask, rng: np.random.Generator) -> Optional[dict]:
    return encode_crop(jitter(base, rng), base.y0, base.x0, base.h, base.w)


def noisy_jitter(base: BaseMask, rng: np.random.Generator) -> np.ndarray:
    """A realistic, practically never repeated jitter of ``base.crop``: a shift
    of up to 6 px, then a dilation/erosion by 0-3 px or a 28x28 resample of the
    box (Mask R-CNN-like), then 5-25% of the pixels of the mask's 1-px
    boundary band flipped at random (a predicted mask's ragged outline)."""
    dy, dx = (int(v) for v in rng.integers(-6, 7, size=2))
    m = _shift(base.crop, dy, dx)
    kind = int(rng.integers(3))
    if kind == 0:
        k = int(rng.integers(0, 4))
        if k:
            op = cv2.dilate if rng.random() < 0.5 else cv2.erode
            m = op(m, _KERNEL, iterations=k)
    elif kind == 1:
        by0, by1, bx0, bx1 = base.box
        small = cv2.resize(base.crop[by0:by1, bx0:bx1].astype(np.float32), (28, 28),
                           interpolation=cv2.INTER_AREA)
        big = cv2.resize(small, (bx1 - bx0, by1 - by0), interpolation=cv2.INTER_LINEAR)
        m = np.zeros_like(base.crop)
        m[by0:by1, bx0:bx1] = big >= rng.uniform(0.4, 0.6)
        m = _shift(m, dy, dx)
    band = np.flatnonzero((cv2.dilate(m, _KERNEL) != cv2.erode(m, _KERNEL)).ravel())
    if len(band):
        flip = band[rng.random(len(band)) < rng.uniform(0.05, 0.25)]
        flat = m.ravel().copy()
        flat[flip] ^= 1
        m = flat.reshape(m.shape)
    return m


def distinct_rle(base: BaseMask, rng: np.random.Generator, seen: set) -> dict:
    """Compressed RLE of a noisy jitter of ``base`` that no earlier call with
    the same ``seen`` set produced (redrawn until new and non-empty)."""
    for _ in range(1000):
        rle = encode_crop(noisy_jitter(base, rng), base.y0, base.x0, base.h, base.w)
        if rle is None:
            continue
        key = hash(rle["counts"])
        if key not in seen:
            seen.add(key)
            return rle
    raise RuntimeError("could not draw a distinct jittered mask")


def add_boxes(dets: list) -> None:
    """Give every detection the box of its mask ([x, y, w, h], as
    ``pycocotools.mask.toBbox``), so every tool reads the same file."""
    rles = [dict(d["segmentation"], counts=d["segmentation"]["counts"].encode("ascii")) for d in dets]
    for d, b in zip(dets, mask_utils.toBbox(rles).tolist()):
        d["bbox"] = b


def ellipse_rle(h: int, w: int, rng: np.random.Generator) -> dict:
    """A random filled ellipse (for images without ground truth)."""
    m = np.zeros((h, w), np.uint8)
    cy, cx = int(rng.integers(h)), int(rng.integers(w))
    ay = int(rng.integers(4, max(5, h // 4)))
    ax = int(rng.integers(4, max(5, w // 4)))
    cv2.ellipse(m, (cx, cy), (ax, ay), float(rng.uniform(0, 180)), 0, 360, 1, -1)
    if not m.any():
        m[cy, cx] = 1
    rle = mask_utils.encode(np.asfortranarray(m))
    return {"size": [h, w], "counts": rle["counts"].decode("ascii")}


def wrong_category(cat: int, cat_ids: List[int], rng: np.random.Generator) -> int:
    """A category id other than ``cat``, uniformly."""
    i = int(rng.integers(len(cat_ids) - 1))
    return cat_ids[i] if cat_ids[i] != cat else cat_ids[-1]


def base_masks(dataset: dict) -> Dict[int, Optional[BaseMask]]:
    """BaseMask of every non-crowd annotation, by annotation id."""
    imgs = {im["id"]: im for im in dataset["images"]}
    out = {}
    for ann in dataset["annotations"]:
        if ann.get("iscrowd", 0):
            continue
        im = imgs[ann["image_id"]]
        out[ann["id"]] = base_mask(ann, im["height"], im["width"])
    return out


# --------------------------------------------------------------------------
# caching and writing
# --------------------------------------------------------------------------
def _set_dir(kind: str, gt_path: Path, params: dict) -> Path:
    name = kind + "_" + "_".join(f"{k}{v}" for k, v in params.items())
    default = {"coco": COCO_GT, "lvis": LVIS_GT, "scale": COCO_GT, "val": COCO_GT}[kind]
    if Path(gt_path).resolve() != default.resolve():
        name += "_" + hashlib.sha1(str(Path(gt_path).resolve()).encode()).hexdigest()[:8]
    return DATA_DIR / name


def _cached(d: Path) -> Optional[DataSet]:
    meta, gt, dt = d / "meta.json", d / "gt.json", d / "dt.json"
    if meta.exists() and gt.exists() and dt.exists():
        return DataSet(d, gt, dt, json.loads(meta.read_text()))
    return None


def _write_json(obj, path: Path) -> None:
    tmp = path.with_name(path.name + f".tmp{os.getpid()}")
    with open(tmp, "w") as f:
        f.write(json.dumps(obj, separators=(",", ":")))  # one-shot: the C encoder
    os.replace(tmp, path)


def _save(d: Path, gt: dict, dets: list, meta: dict, t0: float, verbose: bool) -> DataSet:
    d.mkdir(parents=True, exist_ok=True)
    (d / "meta.json").unlink(missing_ok=True)
    _write_json(gt, d / "gt.json")
    _write_json(dets, d / "dt.json")
    meta = dict(meta, images=len(gt["images"]), gt=len(gt["annotations"]), dets=len(dets),
                seconds=round(time.perf_counter() - t0, 1))
    (d / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    ds = DataSet(d, d / "gt.json", d / "dt.json", meta)
    if verbose:
        print(f"[make_data] built {ds.describe()} in {meta['seconds']} s", file=sys.stderr)
    return ds


def _log(verbose: bool, msg: str) -> None:
    if verbose:
        print(f"[make_data] {msg}", file=sys.stderr, flush=True)


class _Build:
    """A set being built (:func:`_begin`): its directory, the source ground
    truth, the random stream, the source's base masks, and the new ground
    truth (the source's other keys; images and annotations added copy by copy)."""

    def __init__(self, d: Path, gt_path: Path, seed: int, stream: int, verbose: bool):
        self.d, self.verbose, self.t0 = d, verbose, time.perf_counter()
        _log(verbose, f"building {d.name} ...")
        self.src = json.loads(Path(gt_path).read_text())
        self.rng = np.random.default_rng([seed, stream])
        self.bases = base_masks(self.src)
        self.gt = {k: v for k, v in self.src.items() if k not in ("images", "annotations")}
        self.gt["images"], self.gt["annotations"] = [], []

    def copy(self, c: int) -> Dict[int, int]:
        """Copy ``c`` of the source images added (ids ``c * n + i + 1`` for
        the ``n`` source images); the old->new id map."""
        n, ids = len(self.src["images"]), {}
        for i, im in enumerate(self.src["images"]):
            ids[im["id"]] = c * n + i + 1
            self.gt["images"].append(dict(im, id=ids[im["id"]]))
        return ids

    def add(self, ann: dict, ids: Dict[int, int]) -> dict:
        """``ann`` added on its image's copy (``ids``), with the next id."""
        a2 = dict(ann, image_id=ids[ann["image_id"]], id=len(self.gt["annotations"]) + 1)
        self.gt["annotations"].append(a2)
        return a2

    def by_image(self) -> Dict[int, list]:
        """The source annotations that have a base mask, by source image."""
        by_img: Dict[int, list] = {im["id"]: [] for im in self.src["images"]}
        for ann in self.src["annotations"]:
            if self.bases.get(ann["id"]) is not None:
                by_img[ann["image_id"]].append(ann)
        return by_img

    def pool(self, variants: int) -> Dict[int, List[dict]]:
        """Every base mask unchanged and jittered ``variants - 1`` ways, encoded
        once, by annotation id."""
        pool: Dict[int, List[dict]] = {}
        for ann_id, base in self.bases.items():
            if base is None:
                continue
            rles = []
            while len(rles) < variants:
                rle = (jittered_rle(base, self.rng) if rles
                       else encode_crop(base.crop, base.y0, base.x0, base.h, base.w))
                if rle is not None:
                    rles.append(rle)
            pool[ann_id] = rles
        _log(self.verbose, f"{sum(map(len, pool.values()))} jittered masks encoded "
                           f"({time.perf_counter() - self.t0:.1f} s)")
        return pool

    def keep(self, copies: int, target_gt: int) -> float:
        """The share of non-crowd ground truths to keep (crowd ones all kept)
        for about ``target_gt`` in ``copies`` copies."""
        n_crowd = sum(1 for a in self.src["annotations"] if a.get("iscrowd", 0))
        n_plain = len(self.src["annotations"]) - n_crowd
        return min(1.0, max(0.0, (target_gt - copies * n_crowd) / max(1, copies * n_plain)))

    def save(self, dets: list, meta: dict) -> DataSet:
        return _save(self.d, self.gt, dets, meta, self.t0, self.verbose)


def _begin(kind: str, gt_path: Path, params: dict, seed: int, stream: int, force: bool, verbose: bool):
    """The cached set of ``params`` (unless ``force``), else a :class:`_Build`
    of it with the random stream ``[seed, stream]``."""
    d = _set_dir(kind, gt_path, params)
    if not force and (ds := _cached(d)):
        return ds
    return _Build(d, gt_path, seed, stream, verbose)


# --------------------------------------------------------------------------
# generators
# --------------------------------------------------------------------------
def coco_set(copies: int = 5, dets_per_gt: int = 8, seed: int = 0, gt_path: Path = COCO_GT,
             force: bool = False, verbose: bool = True, distinct: bool = False) -> DataSet:
    """COCO ground truth x ``copies``, ``dets_per_gt`` jittered detections per non-crowd GT.

    ``distinct``: every detection gets its own noisy jitter (:func:`distinct_rle`)
    and the box of its mask (:func:`add_boxes`)."""
    params = {"c": copies, "d": dets_per_gt, "s": seed}
    if distinct:
        params["x"] = 1
    b = _begin("coco", gt_path, params, seed, 1, force, verbose)
    if isinstance(b, DataSet):
        return b
    rng = b.rng
    cat_ids = sorted(c["id"] for c in b.src["categories"])
    dets: list = []
    seen: set = set()
    for c in range(copies):
        ids = b.copy(c)
        for ann in b.src["annotations"]:
            a2 = b.add(ann, ids)
            base = b.bases.get(ann["id"])
            if base is None:  # crowd or empty
                continue
            for _ in range(dets_per_gt):
                rle = distinct_rle(base, rng, seen) if distinct else jittered_rle(base, rng)
                cat = ann["category_id"]
                if rng.random() < WRONG_CATEGORY:
                    cat = wrong_category(cat, cat_ids, rng)
                score = float(rng.random())
                if rle is not None:
                    dets.append({"image_id": a2["image_id"], "category_id": cat,
                                 "segmentation": rle, "score": score})
    if distinct:
        add_boxes(dets)
    meta = {"kind": "coco", "source": str(gt_path), "copies": copies, "dets_per_gt": dets_per_gt,
            "seed": seed, "distinct": distinct}
    return b.save(dets, meta)


def lvis_set(copies: int = 1, dets_per_image: int = 300, seed: int = 0, gt_path: Path = LVIS_GT,
             force: bool = False, verbose: bool = True, distinct: bool = False) -> DataSet:
    """LVIS ground truth x ``copies``, ``dets_per_image`` detections on every image.

    ``distinct``: as for :func:`coco_set`."""
    params = {"c": copies, "n": dets_per_image, "s": seed}
    if distinct:
        params["x"] = 1
    b = _begin("lvis", gt_path, params, seed, 2, force, verbose)
    if isinstance(b, DataSet):
        return b
    src, rng, bases = b.src, b.rng, b.bases
    cat_ids = sorted(c["id"] for c in src["categories"])
    by_img = b.by_image()
    dets: list = []
    seen: set = set()
    for c in range(copies):
        ids = b.copy(c)
        for ann in src["annotations"]:
            b.add(ann, ids)
        for im in src["images"]:
            anns = by_img[im["id"]]
            # categories an LVIS detector is scored on here: present or verified absent
            scored = sorted(set(im.get("neg_category_ids", [])) | {a["category_id"] for a in anns})
            new_id = ids[im["id"]]
            made = 0
            order = rng.permutation(len(anns)) if anns else None
            while made < dets_per_image:
                if anns:
                    ann = anns[order[made % len(anns)]]
                    rle = (distinct_rle(bases[ann["id"]], rng, seen) if distinct
                           else jittered_rle(bases[ann["id"]], rng))
                    cat = ann["category_id"]
                    if rng.random() < WRONG_CATEGORY:
                        pool = [x for x in scored if x != cat]
                        cat = (pool[int(rng.integers(len(pool)))] if pool and rng.random() < 0.5
                               else wrong_category(cat, cat_ids, rng))
                else:
                    rle = ellipse_rle(im["height"], im["width"], rng)
                    cat = (scored[int(rng.integers(len(scored)))] if scored and rng.random() < 0.5
                           else cat_ids[int(rng.integers(len(cat_ids)))])
                if rle is None:  # jittered away: try another
                    continue
                dets.append({"image_id": new_id, "category_id": cat, "segmentation": rle,
                             "score": float(rng.random())})
                made += 1
    if distinct:
        add_boxes(dets)
    meta = {"kind": "lvis", "source": str(gt_path), "copies": copies,
            "dets_per_image": dets_per_image, "seed": seed, "distinct": distinct}
    return b.save(dets, meta)


def scale_set(copies: int = 50, dets_per_image: int = 100, variants: int = 16,
              target_gt: int = COCO_VAL_GT, seed: int = 0, gt_path: Path = COCO_GT,
              force: bool = False, verbose: bool = True) -> DataSet:
    """COCO-val sized set: ``copies`` x the COCO images, thinned to about
    ``target_gt`` ground truths, ``dets_per_image`` detections per image drawn
    from ``variants`` pre-encoded jitters of each base mask."""
    b = _begin("scale", gt_path, {"c": copies, "n": dets_per_image, "v": variants, "g": target_gt, "s": seed},
               seed, 3, force, verbose)
    if isinstance(b, DataSet):
        return b
    src, rng = b.src, b.rng
    cat_ids = np.array(sorted(c["id"] for c in src["categories"]), np.int64)
    pool = b.pool(variants)
    by_img = b.by_image()
    keep = b.keep(copies, target_gt)
    dets: list = []
    for c in range(copies):
        ids = b.copy(c)
        kept = rng.random(len(src["annotations"])) < keep
        for ann, k in zip(src["annotations"], kept):
            if k or ann.get("iscrowd", 0):
                b.add(ann, ids)
        for im in src["images"]:
            anns = by_img[im["id"]]
            if not anns:
                continue
            new_id = ids[im["id"]]
            which = rng.permutation(np.arange(dets_per_image) % len(anns))
            variant = rng.integers(variants, size=dets_per_image)
            wrong = rng.random(dets_per_image) < WRONG_CATEGORY
            other = rng.integers(len(cat_ids) - 1, size=dets_per_image)
            scores = rng.random(dets_per_image)
            for j in range(dets_per_image):
                ann = anns[which[j]]
                cat = ann["category_id"]
                if wrong[j]:
                    cat = int(cat_ids[other[j]]) if cat_ids[other[j]] != cat else int(cat_ids[-1])
                dets.append({"image_id": new_id, "category_id": cat,
                             "segmentation": pool[ann["id"]][variant[j]], "score": float(scores[j])})
    meta = {"kind": "scale", "source": str(gt_path), "copies": copies,
            "dets_per_image": dets_per_image, "variants": variants, "target_gt": target_gt,
            "seed": seed}
    return b.save(dets, meta)


def lvis_fixed_set(copies: int = 10, dets_per_image: int = 1000, big_cats: int = 6, big_count: int = 12000,
                   variants: int = 8, seed: int = 0, gt_path: Path = LVIS_GT, force: bool = False,
                   verbose: bool = True) -> DataSet:
    """An LVIS set for Fixed / Pooled AP (issue 29): the LVIS ground truth x
    ``copies`` with ``dets_per_image`` detections on every image (jittered
    ground truths, 20% with a wrong category among those scored on the image;
    ellipses on images without ground truth), then more detections for the
    ``big_cats`` categories with most ground truths until each has at least
    ``big_count`` (so that K = 10,000 cuts them).  Scores have three decimals
    (ties, at the cut too); every base mask is jittered ``variants`` ways once
    and the encoded strings reused, as in :func:`scale_set`."""
    b = _begin("lvis", gt_path, {"fixed": 1, "c": copies, "n": dets_per_image, "b": big_cats,
                                 "k": big_count, "v": variants, "s": seed}, seed, 5, force, verbose)
    if isinstance(b, DataSet):
        return b
    src, rng = b.src, b.rng
    pool = b.pool(variants)
    cat_ids = sorted(c["id"] for c in src["categories"])
    by_img = b.by_image()
    ellipses = {im["id"]: [ellipse_rle(im["height"], im["width"], rng) for _ in range(variants)]
                for im in src["images"] if not by_img[im["id"]]}
    scored = {im["id"]: sorted(set(im.get("neg_category_ids", [])) | {a["category_id"] for a in by_img[im["id"]]})
              for im in src["images"]}
    dets: list = []
    copy_ids = []
    for c in range(copies):
        ids = b.copy(c)
        copy_ids.append(ids)
        for ann in src["annotations"]:
            b.add(ann, ids)
        for im in src["images"]:
            anns, new_id, cats = by_img[im["id"]], ids[im["id"]], scored[im["id"]] or cat_ids
            scores = np.round(rng.random(dets_per_image), 3)
            variant = rng.integers(variants, size=dets_per_image)
            if anns:
                which = rng.integers(len(anns), size=dets_per_image)
                wrong = rng.random(dets_per_image) < WRONG_CATEGORY
                other = rng.integers(len(cats), size=dets_per_image)
                for j in range(dets_per_image):
                    ann = anns[which[j]]
                    cat = cats[other[j]] if wrong[j] else ann["category_id"]
                    dets.append({"image_id": new_id, "category_id": cat,
                                 "segmentation": pool[ann["id"]][variant[j]], "score": float(scores[j])})
            else:
                other = rng.integers(len(cats), size=dets_per_image)
                for j in range(dets_per_image):
                    dets.append({"image_id": new_id, "category_id": cats[other[j]],
                                 "segmentation": ellipses[im["id"]][variant[j]], "score": float(scores[j])})
    counts: Dict[int, int] = {}
    for det in dets:
        counts[det["category_id"]] = counts.get(det["category_id"], 0) + 1
    gt_count: Dict[int, int] = {}
    for ann in src["annotations"]:
        if ann["id"] in pool:
            gt_count[ann["category_id"]] = gt_count.get(ann["category_id"], 0) + 1
    big = sorted(gt_count, key=lambda cat: (-gt_count[cat], cat))[:big_cats]
    for cat in big:
        anns = [a for a in src["annotations"] if a["category_id"] == cat and a["id"] in pool]
        extra = max(0, big_count - counts.get(cat, 0))
        which = rng.integers(len(anns), size=extra)
        copy = rng.integers(copies, size=extra)
        variant = rng.integers(variants, size=extra)
        scores = np.round(rng.random(extra), 3)
        for j in range(extra):
            ann = anns[which[j]]
            dets.append({"image_id": copy_ids[copy[j]][ann["image_id"]], "category_id": cat,
                         "segmentation": pool[ann["id"]][variant[j]], "score": float(scores[j])})
    order = rng.permutation(len(dets))
    dets = [dets[i] for i in order]
    counts = {}
    for det in dets:
        counts[det["category_id"]] = counts.get(det["category_id"], 0) + 1
    meta = {"kind": "lvis_fixed", "source": str(gt_path), "copies": copies, "dets_per_image": dets_per_image,
            "big_cats": big, "big_count": big_count, "variants": variants, "seed": seed,
            "categories_over_10000": sum(1 for v in counts.values() if v > 10000),
            "largest_category": max(counts.values())}
    return b.save(dets, meta)


def val_set(copies: int = 50, dets_per_gt: int = 0, dets_per_image: int = 0,
            target_gt: int = COCO_VAL_GT, seed: int = 0, gt_path: Path = COCO_GT,
            force: bool = False, verbose: bool = True) -> DataSet:
    """COCO-val sized set in which every detection is its own mask.

    ``copies`` x the COCO images (5,000 by default), ground truths thinned at
    random to about ``target_gt`` (crowd ones all kept), then either
    ``dets_per_gt`` detections per kept non-crowd ground truth or
    ``dets_per_image`` detections per image (spread over the image's ground
    truths in random order).  Every detection is a fresh noisy jitter
    (:func:`distinct_rle`, no two equal in the whole set), 20% of them in a
    wrong category, with a random score and the box of its mask.  Unlike
    :func:`scale_set`, nothing is reused, so caches keyed on the RLE string
    gain nothing.
    """
    if (dets_per_gt > 0) == (dets_per_image > 0):
        raise ValueError("give exactly one of dets_per_gt and dets_per_image")
    b = _begin("val", gt_path, {"c": copies, "d": dets_per_gt, "n": dets_per_image, "g": target_gt, "s": seed},
               seed, 4, force, verbose)
    if isinstance(b, DataSet):
        return b
    src, rng, bases = b.src, b.rng, b.bases
    cat_ids = np.array(sorted(c["id"] for c in src["categories"]), np.int64)
    keep = b.keep(copies, target_gt)
    dets: list = []
    seen: set = set()

    def detection(image_id: int, ann: dict) -> dict:
        cat = ann["category_id"]
        if rng.random() < WRONG_CATEGORY:
            cat = wrong_category(cat, cat_ids.tolist(), rng)
        return {"image_id": image_id, "category_id": int(cat),
                "segmentation": distinct_rle(bases[ann["id"]], rng, seen), "score": float(rng.random())}

    for c in range(copies):
        ids = b.copy(c)
        kept = rng.random(len(src["annotations"])) < keep
        by_img: Dict[int, list] = {}
        for ann, k in zip(src["annotations"], kept):
            if k or ann.get("iscrowd", 0):
                b.add(ann, ids)
                if bases.get(ann["id"]) is not None:
                    by_img.setdefault(ann["image_id"], []).append(ann)
        for im in src["images"]:
            anns = by_img.get(im["id"], [])
            new_id = ids[im["id"]]
            if dets_per_gt:
                for ann in anns:
                    for _ in range(dets_per_gt):
                        dets.append(detection(new_id, ann))
            elif anns:
                for j in rng.permutation(np.arange(dets_per_image) % len(anns)):
                    dets.append(detection(new_id, anns[j]))
        _log(verbose, f"copy {c + 1}/{copies}: {len(dets)} detections ({time.perf_counter() - b.t0:.0f} s)")
    add_boxes(dets)
    meta = {"kind": "val", "source": str(gt_path), "copies": copies, "dets_per_gt": dets_per_gt,
            "dets_per_image": dets_per_image, "target_gt": target_gt, "seed": seed, "distinct": True,
            "distinct_masks": len(seen)}
    return b.save(dets, meta)


# --------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        description="Build the benchmark data sets in benchmarks/_data/<name>/{gt,dt,meta}.json "
                    "(skipped when already there, unless --force).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Defaults: coco = 5 copies x 8 detections per ground truth (500 images, ~32.7k "
               "detections); lvis = 1 copy x 300 detections per image (100 images, 30k); "
               "scale = 50 copies, ~36.8k ground truths, 100 detections per image (500k).")
    ap.add_argument("which", choices=["coco", "lvis", "lvis_fixed", "scale", "val2017", "val500k", "all"],
                    help="which set to build (val2017 / val500k: val_set with 1 detection per ground "
                         "truth / 100 per image, every mask distinct, with boxes)")
    ap.add_argument("--distinct", action="store_true",
                    help="coco/lvis: every detection its own noisy jitter, with the box of its mask "
                         "(the sets run_all.py uses)")
    ap.add_argument("--force", action="store_true", help="rebuild even if the set is cached")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    ap.add_argument("--copies", type=int, default=None,
                    help="times the ground-truth images are replicated (default: 5 coco, 1 lvis, 50 scale)")
    ap.add_argument("--dets-per-gt", type=int, default=8,
                    help="coco: jittered detections per non-crowd ground truth (default 8)")
    ap.add_argument("--dets-per-image", type=int, default=None,
                    help="lvis/scale: detections per image (default: 300 lvis, 100 scale)")
    ap.add_argument("--variants", type=int, default=16,
                    help="scale: jittered versions encoded per base mask (default 16)")
    ap.add_argument("--target-gt", type=int, default=COCO_VAL_GT,
                    help=f"scale: about this many ground truths in total (default {COCO_VAL_GT}, COCO val2017)")
    ap.add_argument("--coco-gt", type=Path, default=COCO_GT, help=f"COCO ground truth (default {COCO_GT.relative_to(ROOT)})")
    ap.add_argument("--lvis-gt", type=Path, default=LVIS_GT, help=f"LVIS ground truth (default {LVIS_GT.relative_to(ROOT)})")
    args = ap.parse_args(argv)
    todo = ["coco", "lvis", "scale"] if args.which == "all" else [args.which]
    for kind in todo:
        if kind == "coco":
            ds = coco_set(args.copies or 5, args.dets_per_gt, args.seed, args.coco_gt, args.force,
                          distinct=args.distinct)
        elif kind == "lvis":
            ds = lvis_set(args.copies or 1, args.dets_per_image or 300, args.seed, args.lvis_gt, args.force,
                          distinct=args.distinct)
        elif kind == "lvis_fixed":
            ds = lvis_fixed_set(args.copies or 10, args.dets_per_image or 1000, seed=args.seed,
                                gt_path=args.lvis_gt, force=args.force)
        elif kind == "val2017":
            ds = val_set(args.copies or 50, dets_per_gt=1, target_gt=args.target_gt, seed=args.seed,
                         gt_path=args.coco_gt, force=args.force)
        elif kind == "val500k":
            ds = val_set(args.copies or 50, dets_per_image=args.dets_per_image or 100, target_gt=args.target_gt,
                         seed=args.seed, gt_path=args.coco_gt, force=args.force)
        else:
            ds = scale_set(args.copies or 50, args.dets_per_image or 100, args.variants, args.target_gt,
                           args.seed, args.coco_gt, args.force)
        print(f"{ds.describe()}  ->  {ds.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
