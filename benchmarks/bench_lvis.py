#!/usr/bin/env python3
"""LVIS-style benchmark: boundary_api.LVISEval vs lvis' own LVISEval (and
faster-coco-eval with lvis_style=True, when installed).

Builds (or reuses) make_data.lvis_set: the 100 LVIS v0.5 val test images
(federated fields kept) with 300 detections on every image (30k).  Each
evaluation runs in its own Python process, timed as a whole (interpreter
start, imports, LVIS/LVISResults loading, evaluate, accumulate, summarize);
peak RSS is the child's ``ru_maxrss``.

lvis 0.5.3 uses ``np.float`` (removed in numpy 1.24) in ``accumulate``: the
child process that runs lvis' own evaluation sets ``np.float = float`` first.
That is done in this benchmark only; boundary_api never patches numpy.

faster-coco-eval gets the same input as lvis: results cut to the 300 best
per image (what LVISResults does), ``lvis_style=True``, ``maxDets=[300]``.
Its child also drops, before loading, the results whose category is neither
present nor verified absent on their image (lvis ignores those anyway):
faster-coco-eval 1.8.0 stops with ``IndexError: unordered_map::at`` when
every result of an image is such a one.

Prints a markdown table, ratios, value checks (boundary_api segm ==
lvis segm on all 13 ``get_results()`` numbers) and the targets.  No assertions.
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
                    help="runs of lvis' own LVISEval, the slow baseline (default 1)")
    ap.add_argument("--skip-slow", action="store_true",
                    help="skip lvis' own LVISEval (then no ratio against it and no value check)")
    ap.add_argument("--threads", type=int, default=None,
                    help="threads for boundary_api (num_threads) and faster-coco-eval "
                         "(boundary_cpu_count, rle_iou_max_workers); default: each library's default")
    ap.add_argument("--copies", type=int, default=1,
                    help="copies of the 100 LVIS images in the data set (default 1)")
    ap.add_argument("--dets-per-image", type=int, default=300, help="detections per image (default 300)")
    ap.add_argument("--seed", type=int, default=0, help="data set seed (default 0)")
    ap.add_argument("--force-data", action="store_true", help="rebuild the data set even if cached")
    ap.add_argument("--no-faster", action="store_true", help="leave out faster-coco-eval even if installed")
    ap.add_argument("--verbose", action="store_true", help="show the children's output")
    args = ap.parse_args(argv)

    H.print_header("bench_lvis: LVIS Boundary AP / Mask AP", args.threads)
    ds = make_data.lvis_set(args.copies, args.dets_per_image, args.seed, force=args.force_data)
    print(f"data: {ds.describe()}\n", flush=True)
    base = {"gt": str(ds.gt), "dt": str(ds.dt), "threads": args.threads, "max_dets": 300}
    faster = H.have("faster_coco_eval") and not args.no_faster

    cases = [  # key, label, spec, slow
        ("ba_boundary", "boundary_api LVISEval boundary", dict(kind="lvis", lib="boundary_api", iou="boundary"), False),
        ("ba_segm", "boundary_api LVISEval segm", dict(kind="lvis", lib="boundary_api", iou="segm"), False),
        ("lvis_segm", "lvis.LVISEval segm (lvis 0.5.3)", dict(kind="lvis", lib="lvis", iou="segm"), True),
    ]
    if faster:
        cases += [
            ("fce_boundary", "faster-coco-eval boundary, lvis_style", dict(kind="lvis", lib="faster", iou="boundary"), False),
            ("fce_segm", "faster-coco-eval segm, lvis_style", dict(kind="lvis", lib="faster", iou="segm"), False),
        ]
    else:
        print("faster-coco-eval: not installed (or --no-faster); its rows are left out\n")

    res, ok = H.run_section(cases, base, args, f"Whole-process LVIS evaluation, {ds.meta['images']} images, "
                            f"{ds.meta['gt']} GT, {ds.meta['dets']} detections", "fast cases", "lvis",
                            [("lvis_segm", "vs lvis segm"), ("fce_segm", "vs faster-coco-eval segm")])

    def stats(k):
        return ok[k]["stats"] if k in ok else None

    checks = [
        ("boundary_api segm vs lvis segm", "ba_segm", "lvis_segm"),
        ("boundary_api boundary vs faster-coco-eval boundary (lvis_style)", "ba_boundary", "fce_boundary"),
        ("boundary_api segm vs faster-coco-eval segm (lvis_style)", "ba_segm", "fce_segm"),
    ]
    print(f"\n## Values (max |diff| over {', '.join(H.LVIS_KEYS)})\n")
    vrows = []
    for label, a, b in checks:
        sa, sb = stats(a), stats(b)
        d = H.max_abs_diff(sa, sb)
        worst = None
        if d:
            worst = max(range(len(H.LVIS_KEYS)), key=lambda i: abs(sa[i] - sb[i]))
            worst = f"{H.LVIS_KEYS[worst]}: {sa[worst]:.4f} vs {sb[worst]:.4f}"
        vrows.append([label, "not run" if d is None else f"{d:.3g}", worst,
                      H.equality(d)])
    print(H.md_table(["comparison", "max abs diff", "largest", "verdict"], vrows))

    b, lv = ok.get("ba_boundary"), ok.get("lvis_segm")
    print("\n## Targets\n")
    print(H.md_table(["target", "measured", "verdict"], [
        ["LVIS Boundary AP wall <= 1.3x lvis' own segm wall", H.ratio(b, lv),
         H.verdict(None if not (b and lv) else b["wall"] <= 1.3 * lv["wall"])],
        ["LVIS Boundary AP peak RSS vs lvis' own segm",
         None if not (b and lv) else f"{b['rss_mb']:.0f} vs {lv['rss_mb']:.0f} MB", "(info)"],
    ]))
    print(f"\nload average at end: {H.load_average()}")
    return H.exit_status(res)


if __name__ == "__main__":
    sys.exit(main())
