#!/usr/bin/env python3
"""COCO-val sized benchmark: Boundary AP on 5,000 images, ~36.8k ground
truths and 500,000 detections (100 per image).

Builds (or reuses) make_data.scale_set (first build: some seconds and ~290 MB
on disk) and runs boundary_api's Boundary AP in its own Python process,
timing the whole process (interpreter start, imports, loading both JSON
files, evaluate, accumulate, summarize); peak RSS is the child's
``ru_maxrss``.  Targets: < 60 s and < 8 GiB on 2 cores.

Optional extra rows: boundary_api Mask AP (``--with-segm``), pycocotools
Mask AP (``--with-baseline``, the slow baseline), faster-coco-eval Mask AP
(``--with-faster``).  No assertions.
"""
from __future__ import annotations

import argparse
import sys

import _harness as H
import make_data

TARGET_S = 60.0
TARGET_MB = 8 * 1024.0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each case; the best (lowest wall time) is reported (default 1)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for boundary_api (num_threads) and faster-coco-eval "
                         "(boundary_cpu_count, rle_iou_max_workers); default: each library's default")
    ap.add_argument("--with-segm", action="store_true", help="also run boundary_api Mask AP")
    ap.add_argument("--with-baseline", action="store_true",
                    help="also run pycocotools Mask AP (the slow baseline: over a minute here)")
    ap.add_argument("--with-faster", action="store_true",
                    help="also run faster-coco-eval Mask AP, if installed")
    ap.add_argument("--copies", type=int, default=50, help="copies of the 100 COCO images (default 50: 5,000 images)")
    ap.add_argument("--dets-per-image", type=int, default=100, help="detections per image (default 100)")
    ap.add_argument("--variants", type=int, default=16,
                    help="jittered versions encoded per base mask and reused across copies (default 16)")
    ap.add_argument("--target-gt", type=int, default=make_data.COCO_VAL_GT,
                    help=f"about this many ground truths (default {make_data.COCO_VAL_GT}, as COCO val2017)")
    ap.add_argument("--seed", type=int, default=0, help="data set seed (default 0)")
    ap.add_argument("--force-data", action="store_true", help="rebuild the data set even if cached")
    ap.add_argument("--verbose", action="store_true", help="show the children's output")
    args = ap.parse_args(argv)

    H.print_header("bench_scale: COCO-val sized Boundary AP", args.threads)
    ds = make_data.scale_set(args.copies, args.dets_per_image, args.variants, args.target_gt, args.seed,
                             force=args.force_data)
    print(f"data: {ds.describe()}\n", flush=True)
    base = {"gt": str(ds.gt), "dt": str(ds.dt), "threads": args.threads}

    cases = [("ba_boundary", "boundary_api Boundary AP", dict(kind="coco", lib="boundary_api", iou="boundary"), False)]
    if args.with_segm:
        cases.append(("ba_segm", "boundary_api Mask AP", dict(kind="coco", lib="boundary_api", iou="segm"), False))
    if args.with_faster:
        if H.have("faster_coco_eval"):
            cases.append(("fce_segm", "faster-coco-eval Mask AP", dict(kind="coco", lib="faster", iou="segm"), False))
        else:
            print("faster-coco-eval: not installed; --with-faster ignored\n")
    if args.with_baseline:
        cases.append(("pc_segm", "pycocotools Mask AP", dict(kind="coco", lib="pycocotools", iou="segm"), False))

    res = H.run_cases(cases, base, args.repeat, verbose=args.verbose)
    print(f"\n## Whole-process evaluation, {ds.meta['images']} images, {ds.meta['gt']} GT, "
          f"{ds.meta['dets']} detections ({H.cores()})\n")
    print(f"Best of {args.repeat} run(s), each in a new process; wall = whole process.\n")
    print(H.timing_table(cases, res, digits=1))

    ok = {k: r for k, r in res.items() if "error" not in r}
    if "ba_segm" in ok and "pc_segm" in ok:
        d = H.max_abs_diff(ok["ba_segm"]["stats"], ok["pc_segm"]["stats"])
        print(f"\nboundary_api Mask AP vs pycocotools Mask AP: max |diff| of stats = {d:.3g}")
    if "ba_segm" in ok and "fce_segm" in ok:
        d = H.max_abs_diff(ok["ba_segm"]["stats"], ok["fce_segm"]["stats"])
        print(f"\nboundary_api Mask AP vs faster-coco-eval Mask AP: max |diff| of stats = {d:.3g}")

    b = ok.get("ba_boundary")
    print("\n## Targets\n")
    print(H.md_table(["target", "measured", "verdict"], [
        ["Boundary AP whole process < 60 s", None if not b else f"{b['wall']:.1f} s",
         H.verdict(None if not b else b["wall"] < TARGET_S)],
        ["Boundary AP peak RSS < 8 GiB", None if not b else f"{b['rss_mb']:.0f} MB",
         H.verdict(None if not b else b["rss_mb"] < TARGET_MB)],
    ] + ([["Boundary AP vs pycocotools Mask AP wall", H.ratio(b, ok.get("pc_segm")), "(info)"]]
         if "pc_segm" in ok else [])))
    print(f"\nload average at end: {H.load_average()}")
    return H.exit_status(res)


if __name__ == "__main__":
    sys.exit(main())
