"""Benchmark: Boundary PQ against PQ (segm) of the same code.

Generates a synthetic COCO-format panoptic set (ground truth with stuff
regions, things, crowd things and VOID; predictions made from it by shifting,
median filtering or down/up-scaling the id map, plus dropped, relabelled and
spurious segments), then times ``pq_compute`` with ``iou_type="segm"`` and
``iou_type="boundary"`` on it and prints images per second and the ratio.

    python benchmarks/bench_panoptic.py                   # 240 images of 480x640
    python benchmarks/bench_panoptic.py --images 500 --threads 1

The data goes to ``benchmarks/_data/panoptic_<n>_<h>x<w>/`` (git-ignored) and
is reused when present.  Target: boundary time <= 1.5x segm time.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
import time

import cv2
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))

from boundary_api.panoptic import id2rgb, pq_compute

THINGS = list(range(1, 11))          # category ids of things
STUFF = list(range(20, 26))          # category ids of stuff


def categories():
    cats = [{"id": c, "name": f"thing{c}", "isthing": 1} for c in THINGS]
    cats += [{"id": c, "name": f"stuff{c}", "isthing": 0} for c in STUFF]
    return cats


def new_ids(rng, n, taken):
    """n distinct random segment ids in [1, 2**24) not in ``taken``."""
    out = []
    while len(out) < n:
        v = int(rng.integers(1, 1 << 24))
        if v not in taken:
            taken.add(v)
            out.append(v)
    return out


def make_gt(rng, h, w):
    """(id map int32, {id: (category, iscrowd)}) of one synthetic image."""
    taken = set()
    segs = {}
    # stuff: a perturbed Voronoi partition into 3..6 regions
    k = int(rng.integers(3, 7))
    ys = rng.uniform(0, h, k)
    xs = rng.uniform(0, w, k)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    wob = 12 * np.sin(yy / rng.uniform(15, 40)) + 12 * np.cos(xx / rng.uniform(15, 40))
    dist = np.stack([(yy - y) ** 2 + (xx - x + wob) ** 2 for y, x in zip(ys, xs)])
    region = np.argmin(dist, axis=0)
    ids = np.zeros((h, w), np.int32)
    stuff_cats = rng.choice(STUFF, size=k, replace=False)
    for r, (sid, cat) in enumerate(zip(new_ids(rng, k, taken), stuff_cats)):
        ids[region == r] = sid
        segs[sid] = (int(cat), 0)
    # VOID: a few thick lines and a blob
    for _ in range(int(rng.integers(1, 4))):
        p0 = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        p1 = (int(rng.integers(0, w)), int(rng.integers(0, h)))
        cv2.line(ids, p0, p1, 0, int(rng.integers(2, 6)))
    cv2.circle(ids, (int(rng.integers(0, w)), int(rng.integers(0, h))), int(rng.integers(5, 30)), 0, -1)
    # things: star-shaped polygons, some of them crowd
    n_things = int(rng.integers(3, 16))
    for sid in new_ids(rng, n_things, taken):
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        r0 = rng.uniform(10, min(h, w) / 4)
        m = int(rng.integers(6, 16))
        ang = np.sort(rng.uniform(0, 2 * np.pi, m))
        rad = r0 * rng.uniform(0.5, 1.2, m)
        pts = np.stack([cx + rad * np.cos(ang), cy + rad * np.sin(ang)], axis=1).astype(np.int32)
        cv2.fillPoly(ids, [pts], int(sid))
        if rng.random() < 0.3:          # unlabelled outline around some things
            cv2.polylines(ids, [pts], True, 0, 2)
        segs[sid] = (int(rng.choice(THINGS)), int(rng.random() < 0.08))
    present = set(np.unique(ids).tolist())
    return ids, {s: v for s, v in segs.items() if s in present}


def make_pred(rng, gt, segs):
    """A prediction id map and its {id: category}, made from the ground truth."""
    h, w = gt.shape
    kind = rng.choice(["shift", "median", "downup"])
    if kind == "shift":
        dy, dx = (int(v) for v in rng.integers(-5, 6, 2))
        pred = np.zeros_like(gt)
        ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
        xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
        pred[yd, xd] = gt[ys, xs]
    elif kind == "median":
        uniq, inv = np.unique(gt, return_inverse=True)
        idx = inv.reshape(gt.shape).astype(np.uint8)       # < 256 segments per image
        pred = uniq[cv2.medianBlur(idx, int(rng.choice([5, 7, 9])))]
    else:
        s = int(rng.integers(2, 5))
        small = cv2.resize(gt, (w // s, h // s), interpolation=cv2.INTER_NEAREST)
        pred = cv2.resize(small, (w, h), interpolation=cv2.INTER_NEAREST)
    pred = np.ascontiguousarray(pred, dtype=np.int32)
    cats = {s: c for s, (c, _) in segs.items()}
    things = [s for s, (c, _) in segs.items() if c in THINGS]
    taken = set(segs)
    for sid in things:
        u = rng.random()
        if u < 0.10:                                     # missed thing
            pred[pred == sid] = 0
        elif u < 0.15:                                   # wrong category
            cats[sid] = int(rng.choice(THINGS))
    for sid in new_ids(rng, int(rng.integers(0, 3)), taken):   # spurious things
        cv2.circle(pred, (int(rng.integers(0, w)), int(rng.integers(0, h))), int(rng.integers(5, 40)),
                   int(sid), -1)
        cats[sid] = int(rng.choice(THINGS))
    present = set(np.unique(pred).tolist())
    return pred, {s: c for s, c in cats.items() if s in present}


def write_png(path, ids):
    cv2.imwrite(path, id2rgb(ids)[..., ::-1])


def generate(root, n, h, w, seed=0):
    """Write the set under ``root`` (skipped if already complete)."""
    gt_json = os.path.join(root, "gt.json")
    pred_json = os.path.join(root, "pred.json")
    if os.path.exists(gt_json) and os.path.exists(pred_json):
        return gt_json, pred_json
    rng = np.random.default_rng(seed)
    os.makedirs(os.path.join(root, "gt"), exist_ok=True)
    os.makedirs(os.path.join(root, "pred"), exist_ok=True)
    images, gt_anns, pred_anns = [], [], []
    t0 = time.perf_counter()
    for i in range(n):
        gt, segs = make_gt(rng, h, w)
        pred, pcats = make_pred(rng, gt, segs)
        name = f"{i:06d}.png"
        write_png(os.path.join(root, "gt", name), gt)
        write_png(os.path.join(root, "pred", name), pred)
        sid, cnt = np.unique(gt, return_counts=True)
        area = dict(zip(sid.tolist(), cnt.tolist()))
        images.append({"id": i, "file_name": f"{i:06d}.jpg", "height": h, "width": w})
        gt_anns.append({"image_id": i, "file_name": name, "segments_info": [
            {"id": s, "category_id": c, "iscrowd": crowd, "area": area[s]} for s, (c, crowd) in segs.items()]})
        pred_anns.append({"image_id": i, "file_name": name, "segments_info": [
            {"id": s, "category_id": c} for s, c in pcats.items()]})
    with open(gt_json + ".tmp", "w") as f:
        json.dump({"images": images, "annotations": gt_anns, "categories": categories()}, f)
    with open(pred_json + ".tmp", "w") as f:
        json.dump({"annotations": pred_anns}, f)
    os.replace(gt_json + ".tmp", gt_json)
    os.replace(pred_json + ".tmp", pred_json)
    print(f"generated {n} images of {h}x{w} in {time.perf_counter() - t0:.1f} s under {root}")
    return gt_json, pred_json


def timed(gt_json, pred_json, root, iou_type, ratio, threads):
    with contextlib.redirect_stdout(io.StringIO()):
        t = time.perf_counter()
        res = pq_compute(gt_json, pred_json, os.path.join(root, "gt"), os.path.join(root, "pred"),
                         iou_type=iou_type, dilation_ratio=ratio, num_threads=threads)
        return time.perf_counter() - t, res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=240)
    ap.add_argument("--size", default="480x640", help="HxW")
    ap.add_argument("--repeat", type=int, default=5, help="runs per mode; the median is reported")
    ap.add_argument("--threads", type=int, default=None, help="default: all cores")
    ap.add_argument("--dilation-ratio", type=float, default=0.02)
    ap.add_argument("--out", default=os.path.join(HERE, "_data"))
    args = ap.parse_args(argv)
    if args.images < 1:
        ap.error("--images must be >= 1")
    h, w = (int(v) for v in args.size.lower().split("x"))
    root = os.path.join(args.out, f"panoptic_{args.images}_{h}x{w}")
    gt_json, pred_json = generate(root, args.images, h, w)
    threads = args.threads or len(os.sched_getaffinity(0))

    timed(gt_json, pred_json, root, "segm", args.dilation_ratio, threads)   # warm the file cache
    times = {"segm": [], "boundary": []}
    results = {}
    for _ in range(args.repeat):
        for mode in ("segm", "boundary"):     # interleaved, so drifts hit both
            t, results[mode] = timed(gt_json, pred_json, root, mode, args.dilation_ratio, threads)
            times[mode].append(t)
    med = {m: float(np.median(v)) for m, v in times.items()}
    print(f"\n{args.images} images of {h}x{w}, {threads} thread(s) on {os.cpu_count()} core(s), "
          f"dilation_ratio={args.dilation_ratio}, median of {args.repeat} runs")
    print(f"{'mode':10s} {'seconds':>8s} {'images/s':>9s} {'PQ':>6s} {'SQ':>6s} {'RQ':>6s}")
    for m in ("segm", "boundary"):
        r = results[m]["All"]
        print(f"{m:10s} {med[m]:8.3f} {args.images / med[m]:9.1f} {100 * r['pq']:6.1f} "
              f"{100 * r['sq']:6.1f} {100 * r['rq']:6.1f}")
    ratio = med["boundary"] / med["segm"]
    print(f"boundary / segm time: {ratio:.2f}x (target <= 1.5x: {'met' if ratio <= 1.5 else 'NOT met'})")
    return 0 if ratio <= 1.5 else 1


if __name__ == "__main__":
    sys.exit(main())
