#!/usr/bin/env python3
"""COCO-style benchmark: boundary_api vs pycocotools vs faster-coco-eval.

Builds (or reuses) the 500-image set of make_data.coco_set (5 copies of the
100 COCO val2014 test images, 8 jittered detections per ground truth:
~32.7k detections) and runs every evaluation in its own Python process,
timing the whole process: interpreter start, imports, loading the ground
truth and the results, evaluate, accumulate, summarize.  Peak RSS is the
child's ``ru_maxrss``.  Then times per-mask boundary extraction:
``boundary_api.rle_to_boundary`` (one thread) against the OpenCV full-image
path (decode, ``boundary_api.masks.reference.mask_to_boundary``, encode).

Prints a markdown table, ratios, the equality checks of the AP values and
how the numbers compare with the project's targets.  No assertions.
"""
from __future__ import annotations

import argparse
import sys

import _harness as H
import make_data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each fast case; the best (lowest wall time) is reported (default 3)")
    ap.add_argument("--slow-repeat", type=int, default=1,
                    help="runs of each slow baseline: pycocotools Mask AP and boundary_api with "
                         "use_fast_impl=False (default 1)")
    ap.add_argument("--skip-slow", action="store_true",
                    help="skip the slow baselines (pycocotools Mask AP, boundary_api use_fast_impl=False); "
                         "the ratios against pycocotools are then not shown")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for boundary_api (num_threads) and for faster-coco-eval "
                         "(boundary_cpu_count, rle_iou_max_workers); default: each library's default "
                         "(boundary_api: all cores)")
    ap.add_argument("--copies", type=int, default=5, help="ground-truth copies in the data set (default 5)")
    ap.add_argument("--dets-per-gt", type=int, default=8,
                    help="jittered detections per non-crowd ground truth (default 8)")
    ap.add_argument("--seed", type=int, default=0, help="data set seed (default 0)")
    ap.add_argument("--force-data", action="store_true", help="rebuild the data set even if cached")
    ap.add_argument("--extract-masks", type=int, default=2000,
                    help="masks for boundary_api.rle_to_boundary in the extraction benchmark (default 2000)")
    ap.add_argument("--extract-opencv-masks", type=int, default=300,
                    help="masks for the OpenCV path in the extraction benchmark (default 300)")
    ap.add_argument("--no-faster", action="store_true", help="leave out faster-coco-eval even if installed")
    ap.add_argument("--verbose", action="store_true", help="show the children's output")
    args = ap.parse_args(argv)

    H.print_header("bench_coco: Boundary AP / Mask AP, COCO-style", args.threads)
    ds = make_data.coco_set(args.copies, args.dets_per_gt, args.seed, force=args.force_data)
    print(f"data: {ds.describe()}\n", flush=True)
    base = {"gt": str(ds.gt), "dt": str(ds.dt), "threads": args.threads}
    faster = H.have("faster_coco_eval") and not args.no_faster

    cases = [  # key, label, spec, slow
        ("ba_boundary", "boundary_api Boundary AP", dict(kind="coco", lib="boundary_api", iou="boundary"), False),
        ("ba_segm", "boundary_api Mask AP", dict(kind="coco", lib="boundary_api", iou="segm"), False),
        ("ba_loops", "boundary_api Boundary AP, use_fast_impl=False",
         dict(kind="coco", lib="boundary_api", iou="boundary", fast=False), True),
        ("pc_segm", "pycocotools Mask AP", dict(kind="coco", lib="pycocotools", iou="segm"), True),
    ]
    if faster:
        cases += [
            ("fce_boundary", "faster-coco-eval Boundary AP", dict(kind="coco", lib="faster", iou="boundary"), False),
            ("fce_segm", "faster-coco-eval Mask AP", dict(kind="coco", lib="faster", iou="segm"), False),
        ]
    else:
        print("faster-coco-eval: not installed (or --no-faster); its rows are left out\n")

    res, ok = H.run_section(cases, base, args, f"Whole-process evaluation, {ds.meta['images']} images, "
                            f"{ds.meta['gt']} GT, {ds.meta['dets']} detections", "fast cases", "slow baselines",
                            [("pc_segm", "vs pycocotools Mask AP"), ("fce_segm", "vs faster-coco-eval Mask AP")])

    # ---- values
    def stats(k):
        return ok[k]["stats"] if k in ok else None

    checks = [
        ("boundary_api Boundary AP vs faster-coco-eval Boundary AP", "ba_boundary", "fce_boundary"),
        ("boundary_api Mask AP vs pycocotools Mask AP", "ba_segm", "pc_segm"),
        ("boundary_api Boundary AP: use_fast_impl=False vs True", "ba_loops", "ba_boundary"),
        ("boundary_api Mask AP vs faster-coco-eval Mask AP", "ba_segm", "fce_segm"),
    ]
    print("\n## AP values (max |diff| over the 12 `stats`)\n")
    vrows = []
    for label, a, b in checks:
        d = H.max_abs_diff(stats(a), stats(b))
        vrows.append([label, "not run" if d is None else f"{d:.3g}",
                      H.equality(d)])
    print(H.md_table(["comparison", "max abs diff", "verdict"], vrows))

    # ---- per-mask boundary extraction
    print("\n## Per-mask boundary extraction (one thread)\n", flush=True)
    ex = H.best_of(dict(base, kind="extract", n=args.extract_masks, n_cv=args.extract_opencv_masks,
                        repeat=args.repeat), 1, "boundary extraction", args.verbose)
    speedup = None
    if "error" not in ex:
        speedup = ex["us_cv"] / ex["us_ours"]
        print(H.md_table(
            ["path", "masks", "µs per mask"],
            [["boundary_api.rle_to_boundary(list, num_threads=1)", ex["n"], f"{ex['us_ours']:.1f}"],
             ["pycocotools decode + reference.mask_to_boundary (OpenCV) + encode", ex["n_cv"], f"{ex['us_cv']:.1f}"]]))
        print(f"\nspeed-up: {speedup:.0f}x; boundaries differing between the two paths: "
              f"{ex['mismatches']} of {ex['n_cv']} ({ex['n_sizes']} image sizes)")

    # ---- targets
    b, p, f = ok.get("ba_boundary"), ok.get("pc_segm"), ok.get("fce_segm")
    print("\n## Targets\n")
    trows = [
        ["Boundary AP wall <= faster-coco-eval Mask AP wall", H.ratio(b, f),
         H.verdict(None if not (b and f) else b["wall"] <= f["wall"])],
        ["Boundary AP wall <= 1.3x pycocotools Mask AP wall", H.ratio(b, p),
         H.verdict(None if not (b and p) else b["wall"] <= 1.3 * p["wall"])],
        ["Boundary AP peak RSS <= pycocotools Mask AP peak RSS",
         None if not (b and p) else f"{b['rss_mb']:.0f} vs {p['rss_mb']:.0f} MB",
         H.verdict(None if not (b and p) else b["rss_mb"] <= p["rss_mb"])],
        ["boundary extraction >= 50x faster per mask than OpenCV path",
         None if speedup is None else f"{speedup:.0f}x", H.verdict(None if speedup is None else speedup >= 50)],
    ]
    print(H.md_table(["target", "measured", "verdict"], trows))
    print(f"\nload average at end: {H.load_average()}")
    return H.exit_status(res)


if __name__ == "__main__":
    sys.exit(main())
