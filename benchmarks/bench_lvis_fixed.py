#!/usr/bin/env python3
"""LVIS Fixed AP and Pooled AP (issue 29): boundary_api.LVISEval(ap='fixed' |
'pooled') against large-vocab-devil's own scripts (scripts/evaluate_ap_fixed.py,
scripts/evaluate_ap_pooled.py) on lvis 0.5.3.

Builds (or reuses) make_data.lvis_fixed_set: the 100 LVIS v0.5 val test images x
10 (1,000 images), 1,000 detections on every image and six categories topped up
to 12,000 detections, scores with three decimals: about 1.07M detections, K =
10,000 cutting several categories inside runs of equal scores.  Each evaluation
runs in its own Python process, timed as a whole (interpreter start, imports,
loading with the top K per category, evaluate, accumulate, summarize); peak RSS
is the child's ``ru_maxrss``.

The scripts are not part of this repository: they run from a checkout at
``LVDEVIL_DIR`` (default /tmp/lvdevil) through tests/lvdevil_oracle.py, unchanged
but for ``np.float`` restored (numpy 2) and a stand-in for their logger set-up;
they know 'segm' and 'bbox' only, so the comparison is on 'segm' and 'boundary'
is measured for boundary_api alone.  Without a checkout (or with --skip-slow)
their rows are left out.

Prints a markdown table, ratios and value checks (boundary_api segm == the
scripts' segm on every get_results() number).  No assertions.
"""
from __future__ import annotations

import argparse
import sys

import _harness as H
import make_data


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each boundary_api case; the best (lowest wall time) is reported (default 1)")
    ap.add_argument("--slow-repeat", type=int, default=1, help="runs of each script (default 1)")
    ap.add_argument("--skip-slow", action="store_true", help="leave out large-vocab-devil's scripts")
    ap.add_argument("--threads", type=int, default=None, help="threads for boundary_api (default: all cores)")
    ap.add_argument("--copies", type=int, default=10, help="copies of the 100 LVIS images (default 10)")
    ap.add_argument("--dets-per-image", type=int, default=1000, help="detections per image (default 1000)")
    ap.add_argument("--dets-per-cat", type=int, default=10000, help="K (default 10000)")
    ap.add_argument("--seed", type=int, default=0, help="data set seed (default 0)")
    ap.add_argument("--force-data", action="store_true", help="rebuild the data set even if cached")
    ap.add_argument("--verbose", action="store_true", help="show the children's output")
    args = ap.parse_args(argv)

    sys.path.insert(0, str(H.ROOT / "tests"))
    import lvdevil_oracle

    H.print_header("bench_lvis_fixed: LVIS Fixed AP / Pooled AP", args.threads)
    ds = make_data.lvis_fixed_set(args.copies, args.dets_per_image, seed=args.seed, force=args.force_data)
    m = ds.meta
    print(f"data: {ds.describe()}; {m['categories_over_10000']} categories with more than 10,000 detections "
          f"(largest {m['largest_category']})\n", flush=True)
    base = {"kind": "lvis_fixed", "gt": str(ds.gt), "dt": str(ds.dt), "threads": args.threads,
            "dets_per_cat": args.dets_per_cat}
    slow = args.skip_slow or not lvdevil_oracle.available()
    if not args.skip_slow and slow:
        print(f"large-vocab-devil: no checkout at {lvdevil_oracle.lvdevil_dir()} (LVDEVIL_DIR); its rows are "
              "left out\n")
    cases = [  # key, label, spec, slow
        ("ba_fixed_boundary", "boundary_api Fixed AP boundary", dict(lib="boundary_api", ap="fixed", iou="boundary"), False),
        ("ba_fixed_segm", "boundary_api Fixed AP segm", dict(lib="boundary_api", ap="fixed", iou="segm"), False),
        ("dev_fixed_segm", "large-vocab-devil evaluate_ap_fixed.py segm", dict(lib="lvdevil", ap="fixed", iou="segm"), True),
        ("ba_pooled_boundary", "boundary_api Pooled AP boundary", dict(lib="boundary_api", ap="pooled", iou="boundary"), False),
        ("ba_pooled_segm", "boundary_api Pooled AP segm", dict(lib="boundary_api", ap="pooled", iou="segm"), False),
        ("dev_pooled_segm", "large-vocab-devil evaluate_ap_pooled.py segm", dict(lib="lvdevil", ap="pooled", iou="segm"), True),
    ]
    res, ok = H.run_section(cases, base, args, f"Whole-process Fixed / Pooled AP, {m['images']} images, "
                            f"{m['gt']} GT, {m['dets']} detections, K = {args.dets_per_cat}", "boundary_api", "scripts",
                            [("dev_fixed_segm", "vs script fixed segm"), ("dev_pooled_segm", "vs script pooled segm")],
                            note="; the scripts' time is all under 'evaluate'", skip_slow=slow)
    print("\n## Values (max |diff| over every get_results() number)\n")
    rows = []
    for label, a, b in (("Fixed AP segm: boundary_api vs evaluate_ap_fixed.py", "ba_fixed_segm", "dev_fixed_segm"),
                        ("Pooled AP segm: boundary_api vs evaluate_ap_pooled.py", "ba_pooled_segm",
                         "dev_pooled_segm")):
        sa = ok[a]["stats"] if a in ok else None
        sb = ok[b]["stats"] if b in ok else None
        d = H.max_abs_diff(sa, sb)
        rows.append([label, "not run" if d is None else f"{d:.3g}", H.equality(d)])
    print(H.md_table(["comparison", "max abs diff", "verdict"], rows))
    print(f"\nload average at end: {H.load_average()}")
    return H.exit_status(res)


if __name__ == "__main__":
    sys.exit(main())
