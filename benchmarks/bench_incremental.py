"""Validation inside a training loop (issue 28): an epoch fed batch by batch.

A 5,000-image epoch (val2017 size) in batches of 8, val2017-size masks
(480 x 640), about 7 ground truths and 100 detections per image, masks as
``(N, H, W)`` bool torch tensors on the CPU as a model would hand them over.
For each tool, in its own process:

* **update**: the time one ``update(preds, target)`` call keeps the loop
  (mean and 95th percentile per batch), and the loop's whole stall over the
  epoch per batch (the ``update`` calls plus the wait, at the end, for the
  background work still running: work done while the loop makes the next
  batch costs the loop nothing);
* **compute**: ``compute()`` at the end of the epoch, wall and CPU (process) time: on a
  machine shared with other work the CPU time is the steadier figure;
* **state**: the bytes the metric keeps (its state arrays / tensors / RLE
  strings), and the process' peak RSS.

Tools: ``boundary_api`` ``IncrementalEvaluator`` (iou_type 'boundary' and
'segm'), its TorchMetrics metric, torchmetrics' ``MeanAveragePrecision(
iou_type="segm")`` (pycocotools backend), and vernier's background evaluator
fed per-image mask arrays (``BackgroundEvaluator.submit``; it needs the whole
ground truth as COCO JSON before the first batch), when installed.  Data
generation (the stand-in for the model) is not timed.

    python benchmarks/bench_incremental.py [--images N] [--batch B] [--dets K] [--tools a,b,...]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import have, md_table, print_header  # noqa: E402

H, W = 480, 640
TOOLS = ("boundary_api:boundary", "boundary_api:segm", "boundary_api-metric:boundary", "torchmetrics:segm",
         "vernier:boundary", "vernier:segm")
POOL = 256


def _pool(seed: int = 0):
    """A pool of object-like masks (ellipses and rectangles of COCO-like sizes)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    yy, xx = np.ogrid[:H, :W]
    masks = np.zeros((POOL, H, W), bool)
    for i in range(POOL):
        size = max(2, int(rng.choice([12, 40, 120]) * min(H / 480, W / 640)))
        cy, cx = rng.integers(0, H), rng.integers(0, W)
        ry, rx = rng.integers(size // 2, size + 1), rng.integers(size // 2, size + 1)
        if i % 2:
            masks[i] = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1
        else:
            masks[i, max(cy - ry, 0):cy + ry, max(cx - rx, 0):cx + rx] = True
    # a detection of each: shifted by a few pixels
    shifted = np.zeros_like(masks)
    for i in range(POOL):
        dy, dx = rng.integers(-4, 5, 2)
        shifted[i] = np.roll(np.roll(masks[i], dy, 0), dx, 1)
    return masks, shifted


def _boxes(masks):
    import numpy as np

    rows, cols = masks.any(2), masks.any(1)
    out = np.zeros((len(masks), 4), np.float32)
    for i in range(len(masks)):
        r, c = np.flatnonzero(rows[i]), np.flatnonzero(cols[i])
        if len(r):
            out[i] = [c[0], r[0], c[-1] + 1, r[-1] + 1]
    return out


def image_plan(n_images: int, dets: int, seed: int = 1):
    """Per image: indices into the pool for ground truths and detections, labels, scores."""
    import numpy as np

    rng = np.random.default_rng(seed)
    plan = []
    for _ in range(n_images):
        g = rng.integers(0, POOL, int(rng.integers(1, 15)))
        glab = rng.integers(1, 81, len(g))
        found = np.flatnonzero(rng.random(len(g)) < 0.8)[:dets]
        # the found ground truths get a shifted copy of their mask, with their label and a higher score
        d_true = np.concatenate([g[found], rng.integers(0, POOL, dets - len(found))])
        d_shift = np.arange(dets) < len(found)
        dlab = np.concatenate([glab[found], rng.integers(1, 81, dets - len(found))])
        scores = np.where(d_shift, 0.5 + rng.random(dets) / 2, rng.random(dets) * 0.7).astype(np.float32)
        plan.append((g, glab, d_true, d_shift, dlab, scores))
    return plan


def batches(plan, batch: int, pool):
    """The epoch as torchmetrics-style batches of torch tensors (made here, not timed)."""
    import numpy as np
    import torch

    masks, shifted = pool
    for i in range(0, len(plan), batch):
        preds, target = [], []
        for g, glab, d_true, d_shift, dlab, scores in plan[i:i + batch]:
            gm = masks[g]
            dm = np.where(d_shift[:, None, None], shifted[d_true], masks[(d_true * 7 + 3) % POOL])
            target.append({"boxes": torch.from_numpy(_boxes(gm)), "labels": torch.from_numpy(glab),
                           "masks": torch.from_numpy(gm)})
            preds.append({"boxes": torch.from_numpy(_boxes(dm)), "scores": torch.from_numpy(scores),
                          "labels": torch.from_numpy(dlab), "masks": torch.from_numpy(dm)})
        yield preds, target


def _tensor_bytes(value) -> int:
    import torch

    if isinstance(value, torch.Tensor):
        return value.element_size() * value.numel()
    if isinstance(value, (list, tuple)):
        return sum(_tensor_bytes(v) for v in value)
    if isinstance(value, (bytes, str)):
        return len(value)
    return 0


def child(tool: str, images: int, batch: int, dets: int) -> dict:
    import numpy as np

    name, iou_type = tool.split(":")
    pool = _pool()
    plan = image_plan(images, dets)
    update_times = []
    vernier_gt = None
    if name == "boundary_api":
        from boundary_api import IncrementalEvaluator

        metric = IncrementalEvaluator(iou_type)
        update, finish = metric.update, metric.wait
    elif name == "boundary_api-metric":
        from boundary_api.integrations.torchmetrics import MeanAveragePrecision

        metric = MeanAveragePrecision(iou_type=iou_type)
        update, finish = metric.update, metric._flush
    elif name == "torchmetrics":
        from torchmetrics.detection import MeanAveragePrecision

        metric = MeanAveragePrecision(iou_type=iou_type, backend="pycocotools")
        update, finish = metric.update, (lambda: None)
    elif name == "vernier":
        import vernier
        import pycocotools.mask as mask_utils

        # vernier needs the whole ground truth before the first batch: written here, not timed
        gt = {"images": [], "annotations": [], "categories": [{"id": c, "name": str(c)} for c in range(1, 81)]}
        masks = pool[0]
        rles = [mask_utils.encode(np.asfortranarray(m.astype(np.uint8))) for m in masks]
        boxes = _boxes(masks)
        k = 1
        for img, (g, glab, *_rest) in enumerate(plan):
            gt["images"].append({"id": img, "height": H, "width": W})
            for j, lab in zip(g.tolist(), glab.tolist()):
                b = boxes[j].astype(float)
                gt["annotations"].append({"id": k, "image_id": img, "category_id": lab, "iscrowd": 0,
                                          "area": float(masks[j].sum()), "bbox": [b[0], b[1], b[2] - b[0], b[3] - b[1]],
                                          "segmentation": {"size": [H, W], "counts": rles[j]["counts"].decode()}})
                k += 1
        vernier_gt = json.dumps(gt).encode()
        iou = vernier.instance.Boundary() if iou_type == "boundary" else vernier.instance.Segm()
        metric = vernier.instance.Evaluator(iou=iou).background(vernier_gt)
        counter = [0]

        def update(preds, target):
            for p in preds:
                b = p["boxes"].numpy().astype(np.float64)
                metric.submit({"image_id": counter[0], "boxes": np.ascontiguousarray(
                    np.c_[b[:, :2], b[:, 2:] - b[:, :2]]), "scores": p["scores"].numpy().astype(np.float64),
                    "labels": p["labels"].numpy().astype(np.int64), "rles": list(p["masks"].numpy())})
                counter[0] += 1

        finish = lambda: None  # noqa: E731
    else:
        raise SystemExit(f"unknown tool {tool}")
    t_epoch = 0.0
    for k, (preds, target) in enumerate(batches(plan, batch, pool)):
        if k and k % 100 == 0:
            print(f"    {tool}: batch {k}", file=sys.stderr, flush=True)
        t0 = time.perf_counter()
        update(preds, target)
        dt = time.perf_counter() - t0
        update_times.append(dt)
        t_epoch += dt
        del preds, target
    t0 = time.perf_counter()
    finish()
    tail = time.perf_counter() - t0
    # the state kept for compute()
    if name == "boundary_api":
        state = metric.state_dict()
        state_bytes = sum(a.nbytes for t in state["tables"].values() for a in t.values()) + state["image_keys"].nbytes
    elif name == "vernier":
        state_bytes = None
    else:
        state_bytes = sum(_tensor_bytes(v) for v in metric.metric_state.values())
    t0, c0 = time.perf_counter(), time.process_time()
    if name == "vernier":
        result = metric.finalize()
        stats = [float(x) for x in getattr(result, "stats", [])][:12]
    else:
        result = metric.compute()
        if name == "boundary_api":
            stats = result[iou_type]["stats"].tolist()
        else:
            stats = [float(result["map"]), float(result["map_50"])]
    compute = time.perf_counter() - t0
    compute_cpu = time.process_time() - c0
    n = len(update_times)
    return {"tool": tool, "batches": n, "update_mean": float(np.mean(update_times)),
            "update_p95": float(np.percentile(update_times, 95)), "epoch_per_batch": (t_epoch + tail) / n,
            "tail": tail, "compute": compute, "compute_cpu": compute_cpu, "state_bytes": state_bytes,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "stats": stats[:2]}


def main() -> int:
    global H, W
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--images", type=int, default=5000)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--dets", type=int, default=100)
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--size", default=f"{H}x{W}", help="mask size HxW (default 480x640, val2017's); smaller "
                    "masks measure compute() and the state at full image and detection counts quickly")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    H, W = (int(v) for v in args.size.lower().split("x"))
    if args.child:
        print("@@RESULT@@ " + json.dumps(child(args.child, args.images, args.batch, args.dets)), flush=True)
        return 0
    print_header(f"Incremental evaluation: {args.images} images of {H}x{W} masks, batches of {args.batch}, "
                 f"{args.dets} detections per image", None)
    rows, failed = [], 0
    for tool in args.tools.split(","):
        module = {"torchmetrics": "torchmetrics", "vernier": "vernier"}.get(tool.split(":")[0], "boundary_api")
        if not have(module) or not have("torch"):
            rows.append([tool, "not installed"] + [None] * 7)
            continue
        out = subprocess.run([sys.executable, __file__, "--child", tool, "--images", str(args.images),
                              "--batch", str(args.batch), "--dets", str(args.dets), "--size", args.size],
                             capture_output=True, text=True)
        line = [x for x in out.stdout.splitlines() if x.startswith("@@RESULT@@ ")]
        if out.returncode or not line:
            failed += 1
            rows.append([tool, "failed: " + (out.stderr.strip().splitlines() or ["?"])[-1][:80]] + [None] * 7)
            continue
        r = json.loads(line[0][len("@@RESULT@@ "):])
        mb = None if r["state_bytes"] is None else f"{r['state_bytes'] / 2**20:.1f}"
        rows.append([tool, f"{r['update_mean'] * 1e3:.1f}", f"{r['update_p95'] * 1e3:.1f}",
                     f"{r['epoch_per_batch'] * 1e3:.1f}", f"{r['compute']:.2f} ({r.get('compute_cpu', 0):.2f})", mb, f"{r['peak_rss_mb']:.0f}",
                     " / ".join(f"{s:.4f}" for s in r["stats"])])
        print(f"  {tool}: done", file=sys.stderr, flush=True)
    print(md_table(["tool", "update ms (mean)", "update ms (p95)", "loop stall ms / batch", "compute() s (CPU s)",
                    "state MB", "peak RSS MB", "AP / AP50"], rows))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
