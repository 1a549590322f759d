"""Semantic segmentation benchmark: mIoU and Boundary IoU per class on generated
Cityscapes-like label maps (default 500 pairs of 512x1024, 19 classes, ignore 255).

Rows (all in this process, data in memory unless stated):

* boundary_api kernel, mask part only (``sem_accumulate`` with ``d = 0``) and mask +
  boundary (``d`` from the diagonal), one thread: the boundary part is the difference;
  the target is boundary part < 2x mask part;
* ``SemanticEvaluator.process_batch`` (whole evaluator: checks, dtype conversion,
  kernel), 1 thread and ``--threads``;
* the NumPy oracle (``boundary_api.semantic.reference``): its mask part (mmsegmentation
  ``IoUMetric``'s ``intersect_and_union`` with ``np.bincount``) on every image, its boundary
  part (``mask_to_boundary`` per class, OpenCV) on ``--oracle-images`` images;
* mmsegmentation's ``IoUMetric`` when ``mmseg`` and torch are importable;
* ``evaluate_folders`` on the same pairs written as PNGs (reading included).

Every boundary_api count is checked equal to the oracle's (mask on all images, boundary on
the oracle subset).  Nothing asserts a time; ``--help`` explains the flags.
"""
from __future__ import annotations

import argparse
import importlib.util
import math
import os
import shutil
import sys
import tempfile
import time

import cv2
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _harness import print_header  # noqa: E402

from boundary_api.semantic import _kernels as semantic_kernels  # noqa: E402
from boundary_api.masks.boundary import dilation_pixels  # noqa: E402
from boundary_api.semantic import SemanticEvaluator, evaluate_folders  # noqa: E402
from boundary_api.semantic import reference as ref  # noqa: E402

N_CLASSES = 19
IGNORE = 255


def cityscapes_like(rng, h=512, w=1024):
    """A street-scene-like map of Cityscapes' 19 train ids: sky, buildings and vegetation
    with a wavy skyline, road and sidewalks, cars, people, poles and signs (thin
    structures), and ignore regions (ego vehicle, rectification border)."""
    m = np.full((h, w), 10, np.uint8)  # sky
    xs = np.arange(w)
    sky = (h * (0.25 + 0.1 * np.sin(xs / rng.uniform(40, 120) + rng.uniform(0, 6)))).astype(int)
    horizon = int(h * rng.uniform(0.45, 0.55))
    yy = np.arange(h)[:, None]
    m[(yy >= sky[None, :]) & (yy < horizon)] = 2  # building
    for _ in range(int(rng.integers(2, 6))):  # vegetation and walls/fences in the band
        x0 = int(rng.integers(0, w - 50))
        x1 = x0 + int(rng.integers(30, 250))
        m[int(h * 0.2):horizon, x0:x1][m[int(h * 0.2):horizon, x0:x1] == 2] = rng.choice([8, 3, 4, 9])
    m[horizon:, :] = 0  # road
    pts = np.array([[0, horizon], [int(w * 0.3), horizon], [0, int(h * 0.8)]], np.int32)
    cv2.fillPoly(m, [pts], 1)  # sidewalk left
    pts = np.array([[w, horizon], [int(w * 0.7), horizon], [w, int(h * 0.8)]], np.int32)
    cv2.fillPoly(m, [pts], 1)  # sidewalk right
    for _ in range(int(rng.integers(3, 10))):  # cars, trucks, buses
        cx, cy = int(rng.integers(0, w)), int(rng.integers(horizon, h))
        sw, sh = int(rng.integers(20, 160)), int(rng.integers(15, 80))
        cv2.rectangle(m, (cx - sw, cy - sh), (cx + sw, cy), int(rng.choice([13, 13, 14, 15])), -1)
        cv2.ellipse(m, (cx, cy - sh), (sw, sh // 2), 0, 180, 360, 13, -1)
    for _ in range(int(rng.integers(2, 12))):  # people and riders
        cx, cy = int(rng.integers(0, w)), int(rng.integers(horizon - 20, h))
        ph = int(rng.integers(20, 90))
        cv2.ellipse(m, (cx, cy - ph // 2), (max(2, ph // 6), ph // 2), 0, 0, 360, int(rng.choice([11, 12])), -1)
    for _ in range(int(rng.integers(3, 12))):  # poles: 1-4 px wide, with signs and lights
        x = int(rng.integers(0, w))
        top = int(rng.integers(int(h * 0.1), horizon))
        cv2.line(m, (x, top), (x, int(rng.integers(horizon, h))), 5, int(rng.integers(1, 5)))
        cv2.rectangle(m, (x - 6, top), (x + 6, top + 12), int(rng.choice([6, 7])), -1)
    for _ in range(int(rng.integers(0, 3))):  # bicycles, motorcycles, trains, terrain
        cx, cy = int(rng.integers(0, w)), int(rng.integers(horizon, h))
        cv2.circle(m, (cx, cy), int(rng.integers(5, 30)), int(rng.choice([16, 17, 18, 9])), -1)
    cv2.ellipse(m, (w // 2, h + 40), (int(w * 0.45), 110), 0, 180, 360, IGNORE, -1)  # ego vehicle
    m[:, :int(rng.integers(0, 8))] = IGNORE
    return m


def predict(rng, gt):
    """A prediction: the ground truth under a smooth random warp (boundaries move by a few
    pixels), some confused regions, and classes on the ignore regions."""
    h, w = gt.shape
    gy, gx = 9, 17
    dx = cv2.resize(rng.normal(0, 3, (gy, gx)).astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    dy = cv2.resize(rng.normal(0, 3, (gy, gx)).astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    mx, my = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    p = cv2.remap(gt, mx + dx, my + dy, interpolation=cv2.INTER_NEAREST, borderMode=cv2.BORDER_REPLICATE)
    p[p == IGNORE] = 0
    for _ in range(int(rng.integers(2, 8))):
        cx, cy = int(rng.integers(0, w)), int(rng.integers(0, h))
        cv2.ellipse(p, (cx, cy), (int(rng.integers(5, 60)), int(rng.integers(5, 40))), 0, 0, 360,
                    int(rng.integers(0, N_CLASSES)), -1)
    return p


def timed(fn, repeat):
    """(best wall seconds, best CPU seconds of this process, result) over ``repeat`` runs.
    CPU time is what a loaded machine does not distort (for one thread it is the work done)."""
    best = [math.inf, math.inf]
    out = None
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        best = [min(best[0], time.perf_counter() - t), min(best[1], time.process_time() - c)]
    return best, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=500, help="number of generated map pairs (default 500)")
    ap.add_argument("--height", type=int, default=512, help="map height (default 512)")
    ap.add_argument("--width", type=int, default=1024, help="map width (default 1024)")
    ap.add_argument("--threads", type=int, default=2, help="threads for the parallel rows (default 2)")
    ap.add_argument("--repeat", type=int, default=5, help="best of N for the fast rows (default 5)")
    ap.add_argument("--oracle-images", type=int, default=10,
                    help="images for the (slow) boundary oracle row and its check (default 10)")
    ap.add_argument("--dilation-ratio", type=float, default=0.02, help="boundary width ratio (default 0.02)")
    ap.add_argument("--no-png", action="store_true", help="skip the PNG folder row")
    ap.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    args = ap.parse_args(argv)

    print_header("Semantic segmentation: mIoU and Boundary IoU per class", args.threads)
    rng = np.random.default_rng(args.seed)
    t = time.perf_counter()
    gts = [cityscapes_like(rng, args.height, args.width) for _ in range(args.images)]
    preds = [predict(rng, g) for g in gts]
    d = dilation_pixels(args.height, args.width, args.dilation_ratio)
    print(f"data: {args.images} generated {args.height}x{args.width} pairs, {N_CLASSES} classes, "
          f"ignore {IGNORE}, d = {d} px; generated in {time.perf_counter() - t:.1f} s; "
          f"{np.mean([(g == IGNORE).mean() for g in gts]) * 100:.1f}% ignore pixels\n")
    rows = []

    # --- kernel: mask part vs mask + boundary (one thread, maps already uint32)
    g32 = [g.astype(np.uint32) for g in gts]
    p32 = [p.astype(np.uint32) for p in preds]

    def kernel(dd):
        conf = np.zeros((N_CLASSES, N_CLASSES + 1), np.int64)
        bst = np.zeros((N_CLASSES, 3), np.int64)
        for g, p in zip(g32, p32):
            semantic_kernels.sem_accumulate(g, p, N_CLASSES, IGNORE, dd, conf, bst)
        return conf, bst

    # interleaved, best of --repeat each, so that load from other processes hits both alike
    t_mask = [math.inf, math.inf]
    t_both = [math.inf, math.inf]
    for _ in range(args.repeat):
        t, (conf0, _) = timed(lambda: kernel(0), 1)
        t_mask = [min(a, b) for a, b in zip(t_mask, t)]
        t, (conf1, bst) = timed(lambda: kernel(d), 1)
        t_both = [min(a, b) for a, b in zip(t_both, t)]
    del g32, p32
    rows.append(("boundary_api kernel, mask part only (1 thread)", t_mask))
    rows.append(("boundary_api kernel, mask + boundary (1 thread)", t_both))

    # --- whole evaluator
    def evaluator(threads):
        ev = SemanticEvaluator(N_CLASSES, IGNORE, args.dilation_ratio, num_threads=threads)
        ev.process_batch(gts, preds)
        return ev.evaluate()

    t_ev1, res = timed(lambda: evaluator(1), args.repeat)
    rows.append(("boundary_api SemanticEvaluator.process_batch, 1 thread", t_ev1))
    if args.threads > 1:
        t_evn, res_n = timed(lambda: evaluator(args.threads), args.repeat)
        rows.append((f"boundary_api SemanticEvaluator.process_batch, {args.threads} threads", t_evn))
        assert all(np.array_equal(res[k], res_n[k]) for k in ("intersection", "boundary_intersection"))

    # --- NumPy oracle: mask part on all images, boundary part on a subset
    def oracle_mask():
        tot = [np.zeros(N_CLASSES, np.int64) for _ in range(4)]
        for g, p in zip(gts, preds):
            for k, v in enumerate(ref.intersect_and_union(p, g, N_CLASSES, IGNORE)):
                tot[k] += v
        return tot

    t_om, (inter, union, apred, agt) = timed(oracle_mask, 1)
    rows.append(("NumPy oracle, mask part (mmsegmentation's intersect_and_union)", t_om))
    assert np.array_equal(inter, res["intersection"]) and np.array_equal(union, res["union"])
    assert np.array_equal(agt, res["gt_area"]) and np.array_equal(apred, res["pred_area"])
    assert np.array_equal(conf0, conf1)
    k = min(args.oracle_images, args.images)
    t, c = time.perf_counter(), time.process_time()
    sub = ref.evaluate_pairs(list(zip(gts[:k], preds[:k])), N_CLASSES, IGNORE, args.dilation_ratio)
    t_ob = [(time.perf_counter() - t) * args.images / max(k, 1), (time.process_time() - c) * args.images / max(k, 1)]
    ev_sub = SemanticEvaluator(N_CLASSES, IGNORE, args.dilation_ratio, num_threads=1)
    ev_sub.process_batch(gts[:k], preds[:k])
    r_sub = ev_sub.evaluate()
    for key in ("intersection", "union", "boundary_intersection", "boundary_union"):
        assert np.array_equal(r_sub[key], sub[key]), key
    rows.append((f"NumPy oracle, mask + boundary (OpenCV per class; {k} images, scaled to {args.images})", t_ob))

    # --- mmsegmentation
    if importlib.util.find_spec("mmseg") and importlib.util.find_spec("torch"):
        import torch
        from mmseg.evaluation import IoUMetric

        def mmseg_run():
            metric = IoUMetric(ignore_index=IGNORE, iou_metrics=["mIoU"])
            metric.dataset_meta = {"classes": [str(c) for c in range(N_CLASSES)]}
            for g, p in zip(gts, preds):
                metric.process([], [{"pred_sem_seg": {"data": torch.from_numpy(p[None].astype(np.int64))},
                                     "gt_sem_seg": {"data": torch.from_numpy(g[None].astype(np.int64))}}])
            return metric.compute_metrics(metric.results)

        t_mm, mm = timed(mmseg_run, 1)
        rows.append(("mmsegmentation IoUMetric (mask only)", t_mm))
        print(f"mmsegmentation mIoU {mm['mIoU']:.2f} vs boundary_api {100 * res['mIoU']:.2f}")
    else:
        print("mmsegmentation / torch not importable: no IoUMetric row\n")

    # --- PNG folders, reading included
    if not args.no_png:
        tmp = tempfile.mkdtemp(prefix="bench_semantic_")
        try:
            for i, (g, p) in enumerate(zip(gts, preds)):
                os.makedirs(os.path.join(tmp, "gt", f"city{i % 3}"), exist_ok=True)
                os.makedirs(os.path.join(tmp, "pred", f"city{i % 3}"), exist_ok=True)
                cv2.imwrite(os.path.join(tmp, "gt", f"city{i % 3}", f"{i:05d}.png"), g)
                cv2.imwrite(os.path.join(tmp, "pred", f"city{i % 3}", f"{i:05d}.png"), p)
            t_f, rf = timed(lambda: evaluate_folders(os.path.join(tmp, "gt"), os.path.join(tmp, "pred"),
                                                     N_CLASSES, IGNORE, args.dilation_ratio,
                                                     num_threads=args.threads), 1)
            assert np.array_equal(rf["boundary_intersection"], res["boundary_intersection"])
            rows.append((f"boundary_api evaluate_folders, PNG reading included, {args.threads} threads", t_f))
        finally:
            shutil.rmtree(tmp)

    print("| what | wall s | CPU s | wall ms / image |\n| --- | ---: | ---: | ---: |")
    for name, (wall, cpu) in rows:
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | {1000 * wall / args.images:.2f} |")
    for what, k in (("CPU", 1), ("wall", 0)):
        boundary_part = t_both[k] - t_mask[k]
        print(f"\nboundary part / mask part (kernel, 1 thread, {what} time): {boundary_part:.3f} s / "
              f"{t_mask[k]:.3f} s = {boundary_part / t_mask[k]:.2f}x (target < 2x); "
              f"vs the NumPy oracle's mask part: {boundary_part / t_om[k]:.3f}x")
    print(f"mIoU {100 * res['mIoU']:.2f}  mBIoU {100 * res['mBIoU']:.2f}  aAcc {100 * res['aAcc']:.2f}  "
          f"mAcc {100 * res['mAcc']:.2f}  fwIoU {100 * res['fwIoU']:.2f}")
    print("counts equal the oracle: mask on all images, boundary on the oracle subset")


if __name__ == "__main__":
    main()
