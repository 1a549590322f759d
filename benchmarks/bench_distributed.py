"""Streaming and Dask evaluation of large result sets (issue 17); a benchmark, not a test.

Generate data (written image by image, never held in memory), then time one mode
per run so that each run's peak memory is its own::

    python benchmarks/bench_distributed.py generate --images 50000 --dets-per-image 200
    python benchmarks/bench_distributed.py stream --iou-type boundary --chunk-images 2000
    python benchmarks/bench_distributed.py dask --workers 2 --images-per-shard 2000
    python benchmarks/bench_distributed.py reduce --images 50000   # merge + accumulate of 10M

Data goes to benchmarks/_data/ (git-ignored).  Images are 240 x 320 with 7
rectangular ground truths each; detections are jittered copies (and random
boxes) as compressed RLEs over 80 categories, scores uniform.  Peak memory is
the resident-set high-water mark (``ru_maxrss``) of the process (and, for
Dask, of each worker process, read on the workers after the run).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "_data")
H, W = 240, 320
GTS_PER_IMAGE = 7
CATS = 80


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _cpu_s() -> float:
    """CPU seconds of this process, all threads (the shared machine's load inflates wall time)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _paths(images: int, dets: int):
    tag = f"{images}img_{dets}dpi"
    return os.path.join(DATA, f"gt_{tag}.json"), os.path.join(DATA, f"dt_{tag}.jsonl")


def generate(images: int, dets_per_image: int, seed: int = 0) -> None:
    import pycocotools.mask as mask_utils

    os.makedirs(DATA, exist_ok=True)
    gt_path, dt_path = _paths(images, dets_per_image)
    rng = np.random.default_rng(seed)
    imgs, anns = [], []
    aid = 1
    tic = time.time()
    with open(dt_path + ".tmp", "w") as out:
        for i in range(1, images + 1):
            imgs.append({"id": i, "height": H, "width": W, "file_name": f"{i:08d}.jpg"})
            wh = rng.uniform(8, 120, size=(GTS_PER_IMAGE, 2))
            xy = rng.uniform(0, 1, size=(GTS_PER_IMAGE, 2)) * (np.array([W, H]) - wh)
            boxes = np.round(np.concatenate([xy, wh], axis=1), 1)
            cats = rng.integers(1, CATS + 1, GTS_PER_IMAGE)
            rles = mask_utils.frPyObjects(np.ascontiguousarray(boxes, np.float64), H, W)
            for b, c, r in zip(boxes, cats, rles):
                anns.append({"id": aid, "image_id": i, "category_id": int(c), "iscrowd": 0,
                             "segmentation": {"size": r["size"], "counts": r["counts"].decode()},
                             "area": float(mask_utils.area(r)), "bbox": [float(v) for v in mask_utils.toBbox(r)]})
                aid += 1
            # detections: jittered ground truths (mostly the right category), then random boxes
            n_jit = dets_per_image // 2
            src = rng.integers(0, GTS_PER_IMAGE, n_jit)
            jit = boxes[src] + rng.normal(0, 6, size=(n_jit, 4))
            rand_wh = rng.uniform(8, 120, size=(dets_per_image - n_jit, 2))
            rand_xy = rng.uniform(0, 1, size=(dets_per_image - n_jit, 2)) * (np.array([W, H]) - rand_wh)
            dboxes = np.concatenate([jit, np.concatenate([rand_xy, rand_wh], axis=1)])
            dboxes[:, 2:] = np.maximum(dboxes[:, 2:], 2)
            dboxes[:, :2] = np.clip(dboxes[:, :2], 0, [W - 2, H - 2])
            dcats = np.concatenate([np.where(rng.random(n_jit) < 0.8, cats[src], rng.integers(1, CATS + 1, n_jit)),
                                    rng.integers(1, CATS + 1, dets_per_image - n_jit)])
            scores = np.round(rng.random(dets_per_image), 4)
            drles = mask_utils.frPyObjects(np.ascontiguousarray(np.round(dboxes, 1), np.float64), H, W)
            lines = [json.dumps({"image_id": i, "category_id": int(c), "score": float(s),
                                 "segmentation": {"size": r["size"], "counts": r["counts"].decode()}})
                     for c, s, r in zip(dcats, scores, drles)]
            out.write("\n".join(lines) + "\n")
            if i % 5000 == 0:
                print(f"  {i} images ({time.time() - tic:.0f}s)", flush=True)
    os.replace(dt_path + ".tmp", dt_path)
    cats = [{"id": c, "name": f"cat{c}", "supercategory": "x"} for c in range(1, CATS + 1)]
    with open(gt_path, "w") as f:
        json.dump({"images": imgs, "annotations": anns, "categories": cats}, f)
    print(f"generated {images} images, {images * dets_per_image} detections in {time.time() - tic:.0f}s: "
          f"{gt_path} ({os.path.getsize(gt_path) / 2**20:.0f} MB), {dt_path} "
          f"({os.path.getsize(dt_path) / 2**20:.0f} MB)")


def stream(args) -> dict:
    from boundary_api.scale.streaming import evaluate_streaming

    gt_path, dt_path = _paths(args.images, args.dets_per_image)
    tic, cpu = time.time(), _cpu_s()
    ev = evaluate_streaming(gt_path, dt_path, args.iou_type, chunk_images=args.chunk_images,
                            num_threads=args.threads)
    return {"mode": "stream", "seconds": round(time.time() - tic, 1), "cpu_seconds": round(_cpu_s() - cpu, 1),
            "peak_rss_mb": round(_peak_mb()),
            "AP": float(ev.stats[0]), "chunk_images": args.chunk_images}


def _worker_usage():
    import resource as r

    u = r.getrusage(r.RUSAGE_SELF)
    return {"peak_rss_mb": round(u.ru_maxrss / 1024.0), "cpu_seconds": round(u.ru_utime + u.ru_stime, 1)}


def dask_run(args) -> dict:
    import tempfile

    from boundary_api.scale.distributed import evaluate_dask, local_client
    from boundary_api.scale.streaming import shard_dataset

    gt_path, dt_path = _paths(args.images, args.dets_per_image)
    folder = tempfile.mkdtemp(prefix="shards_", dir=DATA)
    tic, cpu = time.time(), _cpu_s()
    manifest = shard_dataset(gt_path, folder, args.images_per_shard, results=dt_path)
    t_shard, cpu_shard = time.time() - tic, _cpu_s() - cpu
    peak_after_shard = _peak_mb()
    with local_client(args.workers, threads_per_worker=1, processes=True, memory_limit=0) as client:
        tic, cpu = time.time(), _cpu_s()
        ev = evaluate_dask(manifest, client, args.iou_type, worker_threads=1)
        t_eval, cpu_client = time.time() - tic, _cpu_s() - cpu
        workers = client.run(_worker_usage)
    return {"mode": "dask", "workers": args.workers, "shard_seconds": round(t_shard, 1),
            "shard_cpu_seconds": round(cpu_shard, 1),
            "eval_seconds": round(t_eval, 1), "client_cpu_seconds_during_eval": round(cpu_client, 1),
            "client_peak_rss_mb_after_sharding": round(peak_after_shard),
            "client_peak_rss_mb": round(_peak_mb()),
            "workers_usage": list(workers.values()),
            "AP": float(ev.stats[0]), "images_per_shard": args.images_per_shard}


def reduce_only(args) -> dict:
    """The reduce side alone at full size: synthetic partials (random scores and flags, the
    shape of COCO's 4 areas x 10 thresholds) of ``--images`` images, merged and accumulated."""
    import copy as _copy
    import pickle

    import pycocotools.cocoeval

    from boundary_api.scale.partials import Partial, _pack_flags, accumulate_partial, merge_partials

    rng = np.random.default_rng(0)
    params = pycocotools.cocoeval.Params("segm")
    params.catIds = list(range(1, CATS + 1))
    params.imgIds = []
    per_shard = args.images_per_shard
    parts, pickled = [], 0
    tic, cpu = time.time(), _cpu_s()
    for start in range(1, args.images + 1, per_shard):
        ids = np.arange(start, min(start + per_shard, args.images + 1), dtype=np.int64)
        # every image: dets spread over 20 categories
        pair_img = np.repeat(ids, 20)
        pair_cat = np.tile(np.arange(0, CATS, 4, dtype=np.int32), len(ids))
        nd = np.full(len(pair_img), args.dets_per_image // 20, np.int32)
        D = int(nd.sum())
        scores = -np.sort(-rng.random(D).reshape(-1, args.dets_per_image // 20), axis=1).reshape(-1)
        flags = (rng.random((4, 10, D)) < 0.2).astype(np.uint8) | ((rng.random((4, 10, D)) < 0.1) * 2).astype(np.uint8)
        npig = rng.integers(0, 3, size=(len(pair_img), 4)).astype(np.int32)
        part = Partial("coco", _copy.deepcopy(params), 0.02, None, ids, pair_img, pair_cat, nd, npig, scores,
                       _pack_flags(flags))
        pickled += len(pickle.dumps(part, protocol=5))
        parts.append(part)
    t_make = time.time() - tic
    peak_parts = _peak_mb()
    tic = time.time()
    merged = merge_partials(parts[::-1])
    del parts
    t_merge = time.time() - tic
    tic = time.time()
    ev = accumulate_partial(merged, num_threads=args.threads)
    t_acc = time.time() - tic
    return {"mode": "reduce", "make_partials_seconds": round(t_make, 1), "partials_pickled_mb": round(pickled / 2**20),
            "peak_rss_mb_with_partials": round(peak_parts), "merge_seconds": round(t_merge, 1),
            "accumulate_seconds": round(t_acc, 1), "cpu_seconds_total": round(_cpu_s() - cpu, 1),
            "peak_rss_mb": round(_peak_mb()), "AP": float(ev.stats[0])}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=("generate", "stream", "dask", "reduce"))
    p.add_argument("--images", type=int, default=50000)
    p.add_argument("--dets-per-image", type=int, default=200)
    p.add_argument("--iou-type", default="boundary", choices=("segm", "bbox", "boundary"))
    p.add_argument("--chunk-images", type=int, default=2000)
    p.add_argument("--images-per-shard", type=int, default=2000)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--threads", type=int, default=None)
    args = p.parse_args(argv)
    if args.mode == "generate":
        generate(args.images, args.dets_per_image)
        return 0
    out = {"stream": stream, "dask": dask_run, "reduce": reduce_only}[args.mode](args)
    out.update({"images": args.images, "detections": args.images * args.dets_per_image,
                "iou_type": args.iou_type})
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
