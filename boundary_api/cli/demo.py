"""The bundled demo: synthetic shapes and blobby low-resolution predictions.

``boundary-eval`` with no arguments evaluates ``data/demo_gt.json`` against
``data/demo_results.json``.  Both are written by :func:`write_demo` from
:func:`make_demo`; ``python -m boundary_api.cli.demo`` regenerates them.

The ground truth holds ellipses, rectangles and stars as polygons.  Each
prediction is a ground-truth mask squeezed to a 14x14 grid in its box and
blown back up bilinearly, as a Mask R-CNN head does, sometimes shifted: its
mask IoU stays high while its boundary drifts, which is what Boundary AP
notices and Mask AP does not.
"""
from __future__ import annotations

import contextlib
import io
import os
import time
from typing import List, Tuple

import numpy as np
import pycocotools.mask as mask_utils

from .output import build_document, coco_summary, write_json

__all__ = ["make_demo", "write_demo", "demo_paths"]

CATEGORIES = [{"id": 1, "name": "ellipse", "supercategory": "shape"},
              {"id": 2, "name": "rectangle", "supercategory": "shape"},
              {"id": 3, "name": "star", "supercategory": "shape"}]


def demo_paths() -> Tuple[str, str]:
    """Paths of the bundled ground truth and results."""
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
    return os.path.join(here, "demo_gt.json"), os.path.join(here, "demo_results.json")


def _polygon(cat: int, cx: float, cy: float, rx: float, ry: float, angle: float) -> List[float]:
    if cat == 1:
        t = np.linspace(0, 2 * np.pi, 40, endpoint=False)
        x, y = rx * np.cos(t), ry * np.sin(t)
    elif cat == 2:
        x = np.array([-rx, rx, rx, -rx])
        y = np.array([-ry, -ry, ry, ry])
    else:
        t = np.linspace(0, 2 * np.pi, 10, endpoint=False)
        r = np.where(np.arange(10) % 2 == 0, 1.0, 0.45)
        x, y = rx * r * np.cos(t), ry * r * np.sin(t)
    c, s = np.cos(angle), np.sin(angle)
    px, py = cx + c * x - s * y, cy + s * x + c * y
    return np.round(np.stack([px, py], 1).reshape(-1), 2).tolist()


def _upsample(small: np.ndarray, h: int, w: int) -> np.ndarray:
    """Bilinear resize of a small float grid to h x w (pixel centres aligned)."""
    sh, sw = small.shape
    ys = np.clip((np.arange(h) + 0.5) * sh / h - 0.5, 0, sh - 1)
    xs = np.clip((np.arange(w) + 0.5) * sw / w - 0.5, 0, sw - 1)
    y0 = np.floor(ys).astype(int)
    x0 = np.floor(xs).astype(int)
    y1 = np.minimum(y0 + 1, sh - 1)
    x1 = np.minimum(x0 + 1, sw - 1)
    fy = (ys - y0)[:, None]
    fx = (xs - x0)[None, :]
    top = small[y0][:, x0] * (1 - fx) + small[y0][:, x1] * fx
    bot = small[y1][:, x0] * (1 - fx) + small[y1][:, x1] * fx
    return top * (1 - fy) + bot * fy


def _blobby(mask: np.ndarray, grid: int, shift: Tuple[int, int]) -> np.ndarray:
    ys, xs = np.nonzero(mask)
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    crop = mask[y0:y1, x0:x1].astype(np.float64)
    h, w = crop.shape
    # average into grid x grid cells, then back up
    yi = np.minimum((np.arange(h) * grid) // h, grid - 1)
    xi = np.minimum((np.arange(w) * grid) // w, grid - 1)
    small = np.zeros((grid, grid))
    count = np.zeros((grid, grid))
    np.add.at(small, (yi[:, None], xi[None, :]), crop)
    np.add.at(count, (yi[:, None], xi[None, :]), 1)
    small = small / np.maximum(count, 1)
    out = np.zeros_like(mask)
    big = _upsample(small, h, w) >= 0.5
    H, W = mask.shape
    dy, dx = shift
    ty0, tx0 = max(0, y0 + dy), max(0, x0 + dx)
    ty1, tx1 = min(H, y1 + dy), min(W, x1 + dx)
    if ty1 > ty0 and tx1 > tx0:
        out[ty0:ty1, tx0:tx1] = big[ty0 - y0 - dy:ty1 - y0 - dy, tx0 - x0 - dx:tx1 - x0 - dx]
    return out


def make_demo(num_images: int = 40, seed: int = 0) -> Tuple[dict, list]:
    """Build the demo ground truth (COCO dict) and results (list).

    Parameters
    ----------
    num_images : int
        Images of 320 x 240 pixels, 2 to 5 shapes each.
    seed : int
        Seed of ``numpy.random.default_rng``.
    """
    rng = np.random.default_rng(seed)
    images, anns, results = [], [], []
    H, W = 240, 320
    for i in range(1, num_images + 1):
        images.append({"id": i, "width": W, "height": H, "file_name": f"demo_{i:03d}.png"})
        for _ in range(int(rng.integers(2, 6))):
            cat = int(rng.integers(1, 4))
            rx, ry = float(rng.uniform(8, 60)), float(rng.uniform(8, 60))
            cx, cy = float(rng.uniform(rx, W - rx)), float(rng.uniform(ry, H - ry))
            poly = _polygon(cat, cx, cy, rx, ry, float(rng.uniform(0, np.pi)))
            rle = mask_utils.merge(mask_utils.frPyObjects([poly], H, W))
            area = float(mask_utils.area(rle))
            if area < 16:
                continue
            x, y, w, h = (float(v) for v in mask_utils.toBbox(rle))
            ann_id = len(anns) + 1
            anns.append({"id": ann_id, "image_id": i, "category_id": cat, "segmentation": [poly],
                         "area": area, "bbox": [x, y, w, h], "iscrowd": 0})
            mask = mask_utils.decode(rle)
            for _ in range(int(rng.integers(1, 3))):
                shift = tuple(int(v) for v in rng.integers(-3, 4, size=2)) if rng.random() < 0.5 else (0, 0)
                grid = int(rng.choice([7, 14, 28]))
                pred = _blobby(mask, grid, shift)
                if pred.sum() == 0:
                    continue
                r = mask_utils.encode(np.asfortranarray(pred))
                quality = 1.0 - 0.02 * (abs(shift[0]) + abs(shift[1])) - (0.1 if grid == 7 else 0.0)
                results.append({"image_id": i, "category_id": cat,
                                "segmentation": {"size": [H, W], "counts": r["counts"].decode("ascii")},
                                "score": round(float(np.clip(quality - 0.3 * rng.random(), 0.01, 1.0)), 4)})
        # a false positive per image, in a random category
        cat = int(rng.integers(1, 4))
        m = np.zeros((H, W), np.uint8)
        y0, x0 = int(rng.integers(0, H - 30)), int(rng.integers(0, W - 30))
        m[y0:y0 + int(rng.integers(10, 30)), x0:x0 + int(rng.integers(10, 30))] = 1
        r = mask_utils.encode(np.asfortranarray(m))
        results.append({"image_id": i, "category_id": cat,
                        "segmentation": {"size": [H, W], "counts": r["counts"].decode("ascii")},
                        "score": round(float(rng.uniform(0.05, 0.6)), 4)})
    gt = {"info": {"description": "boundary_api synthetic demo"}, "images": images,
          "annotations": anns, "categories": CATEGORIES}
    return gt, results


def write_demo(gt_path: str, results_path: str, num_images: int = 40, seed: int = 0) -> None:
    """Write :func:`make_demo` output as JSON files."""
    gt, res = make_demo(num_images, seed)
    write_json(gt_path, gt, indent=None, separators=(",", ":"))
    write_json(results_path, res, indent=None, separators=(",", ":"))




def run(args) -> int:
    """Evaluate the bundled demo with Mask AP and Boundary AP and print both.

    ``args`` are the instance command's (``--dilation-ratio``, ``--max-dets``,
    ``--threads``, ``--slow``, ``--json-out``, ``-q``; ``--iou-type`` is not
    used: the demo always reports both).
    """
    from ..coco.dataset import COCO
    from ..coco.cocoeval import COCOeval
    from ..instance.results import coco_stat_names, per_category_metrics
    from ._common import check_out_path

    gt_path, dt_path = demo_paths()
    check_out_path(args.json_out, files={"--gt": gt_path, "--dt": dt_path})
    if not args.quiet:
        print(f"No --gt/--dt given: evaluating the bundled demo ({os.path.basename(gt_path)}, "
              f"{os.path.basename(dt_path)}): synthetic shapes, blobby low-resolution predictions.")
    max_dets = args.max_dets if args.max_dets is not None else 100
    stats, evals = {}, {}
    tic = time.time()
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(gt_path, strict=True)
        dt = gt.loadRes(dt_path)
        for iou in ("segm", "boundary"):
            ev = COCOeval(gt, dt, iouType=iou, dilation_ratio=args.dilation_ratio,
                          use_fast_impl=not args.slow, num_threads=args.threads)
            ev.params.maxDets = [1, min(10, max_dets), max_dets]
            ev.evaluate()
            ev.accumulate()
            stats[iou] = coco_summary(ev, show=False)
            evals[iou] = ev
    names = list(dict.fromkeys(coco_stat_names(evals["boundary"].params.maxDets)))
    if not args.quiet:
        n_img, n_gt, n_dt = len(gt.imgs), len(gt.anns), len(dt.anns)
        print(f"{n_img} images, {n_gt} ground-truth masks, {n_dt} predictions "
              f"(dilation ratio {args.dilation_ratio:g}), evaluated twice in {time.time() - tic:.2f}s\n")
    print(f"  {'metric':<8}{'Mask AP':>10}{'Boundary AP':>14}")
    for name in names:
        print(f"  {name:<8}{stats['segm'][name]:>10.3f}{stats['boundary'][name]:>14.3f}")
    if not args.quiet:
        print("\nBoundary AP is lower: the predictions' outlines are off by a few pixels, which mask IoU "
              "hardly sees.\nEvaluate your own results: boundary-eval --gt GT.json --dt RESULTS.json")
    if args.json_out:
        per_category = {}
        for cat_id, row in per_category_metrics(evals["boundary"]).items():
            per_category[cat_id] = dict({"name": gt.cats[cat_id].get("name")}, **row)
        doc = build_document("demo", "boundary", args.dilation_ratio, {"--gt": gt_path, "--dt": dt_path},
                             stats["boundary"], per_category, max_dets=max_dets,
                             extra={"segm": stats["segm"]})
        write_json(args.json_out, doc)
    return 0


if __name__ == "__main__":  # regenerate the bundled files
    write_demo(*demo_paths())
    print("wrote", *demo_paths())
