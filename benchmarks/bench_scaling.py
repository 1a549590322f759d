"""Scaling with the number of detections: time and peak memory per million.

    python benchmarks/bench_scaling.py [--dets-per-image 100,400] [--tools boundary_api,vernier]
                                       [--metrics boundary,segm,bbox] [--threads all]

Builds (``make_data.val_set``, every detection its own mask, with its box) the
val2017-size ground truth with each number of detections per image (100 per
image = 492k detections, 400 = ~2M), then runs each tool on each set once, as
``run_all.py`` runs a cell (a whole process, JSON on disk to summary, the same
files for every tool), and prints wall time, CPU time and peak RSS, each also
per million detections, so linear scaling shows as constant per-million
columns.  Statistics of the tools are compared as in ``run_all.py``.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import make_data  # noqa: E402
import run_all  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dets-per-image", default="100,400",
                    help="comma-separated detections per image, one data set each (default 100,400)")
    ap.add_argument("--tools", default="boundary_api,vernier", help="tools to run (default boundary_api,vernier)")
    ap.add_argument("--metrics", default="boundary,segm,bbox", help="metrics (default boundary,segm,bbox)")
    ap.add_argument("--threads", default="all", help="1 or all (default all)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per run (default 1800)")
    args = ap.parse_args(argv)
    n_all = len(os.sched_getaffinity(0))
    threads = n_all if args.threads == "all" else int(args.threads)
    print(f"cores: os.cpu_count()={os.cpu_count()}, sched_getaffinity={n_all}; threads {threads}")
    rows = []
    failures = 0
    for n in [int(v) for v in args.dets_per_image.split(",")]:
        ds = make_data.val_set(50, dets_per_image=n, target_gt=make_data.COCO_VAL_GT)
        dets = ds.meta["dets"]
        for metric in args.metrics.split(","):
            stats = {}
            for tool in args.tools.split(","):
                spec = {"kind": "coco", "gt": str(ds.gt), "dt": str(ds.dt), "metric": metric, "tool": tool,
                        "threads": threads, "dilation_ratio": 0.02}
                r = run_all.run_process(spec, threads, n_all, pin=threads == 1, timeout=args.timeout)
                if "error" in r:
                    print(f"{tool} {metric} {dets}: {r['error']}")
                    failures += 1
                    continue
                stats[tool] = r["stats"]
                m = dets / 1e6
                rows.append((dets, metric, tool, r["wall"], r["cpu"], r["rss_mb"], r["wall"] / m, r["rss_mb"] / m))
                print(f"{dets} dets {metric} {tool}: {r['wall']:.1f} s, cpu {r['cpu']:.1f} s, "
                      f"{r['rss_mb']:.0f} MB", flush=True)
            names = list(stats)
            for i, a in enumerate(names):
                for b in names[i + 1:]:
                    diff = max(abs(x - y) for x, y in zip(stats[a], stats[b]))
                    print(f"  {a} vs {b}: max |difference| {diff:.3g}")
    print("\n| detections | metric | tool | wall s | cpu s | peak RSS MB | wall s per M | MB per M |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for dets, metric, tool, wall, cpu, rss, wpm, mpm in rows:
        print(f"| {dets:,} | {metric} | {tool} | {wall:.1f} | {cpu:.1f} | {rss:,.0f} | {wpm:.1f} | {mpm:,.0f} |")
    if failures:
        print(f"{failures} run(s) failed", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
