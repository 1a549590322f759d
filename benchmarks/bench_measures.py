"""Per-pair time of every measure of boundary_api.masks.measures on real COCO masks.

10,000 (ground truth, detection) mask pairs from the shipped data
(tests/data/coco: every non-crowd ground truth with every detection of its
image, cycled up to --pairs), all 640-pixel-class COCO images.  For each
measure: the CPU time per pair of the function called on one pair at a time
(process time: single-threaded, so it does not count other jobs on the machine), its
ratio to Boundary IoU's (``boundary_api.masks.boundary_iou`` on one pair), and
the plain NumPy/OpenCV oracle's time per pair (``boundary_api.masks.reference``,
on the first --oracle-pairs pairs), with the largest difference between the two.
Then ``measures()`` on lists (one ground-truth x detection matrix per image),
the path the sensitivity analysis uses.

    python benchmarks/bench_measures.py [--pairs N] [--oracle-pairs N] [--threads N]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import ROOT, md_table, print_header  # noqa: E402

GT = ROOT / "tests" / "data" / "coco" / "instances_val2014_100.json"
DT = ROOT / "tests" / "data" / "coco" / "instances_val2014_fakesegm100_results.json"


def load_pairs(n_pairs: int):
    import pycocotools.mask as mask_utils

    gt = json.loads(GT.read_text())
    dt = json.loads(DT.read_text())
    imgs = {im["id"]: im for im in gt["images"]}
    dets = {}
    for d in dt:
        dets.setdefault(d["image_id"], []).append(d["segmentation"])
    per_image = {}
    for a in gt["annotations"]:
        if a["iscrowd"] or a["image_id"] not in dets:
            continue
        im = imgs[a["image_id"]]
        seg = a["segmentation"]
        r = mask_utils.frPyObjects(seg, im["height"], im["width"])
        r = mask_utils.merge(r) if isinstance(r, list) else r
        per_image.setdefault(a["image_id"], []).append(r)
    groups = [(g, dets[i]) for i, g in per_image.items()]
    base = [(g, d) for gs, ds in groups for g in gs for d in ds]
    pairs = [base[i % len(base)] for i in range(n_pairs)]
    return pairs, groups, len(base)


def per_pair(fn, pairs) -> float:
    """CPU seconds per pair (one thread: the process time is the loop's own cost, whatever
    else the machine runs)."""
    t = time.process_time()
    for g, p in pairs:
        fn(g, p)
    return (time.process_time() - t) / len(pairs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=10000, help="mask pairs timed per measure (default 10000)")
    ap.add_argument("--oracle-pairs", type=int, default=100,
                    help="pairs timed with the NumPy/OpenCV oracle, which is slow (default 100)")
    ap.add_argument("--threads", type=int, default=None, help="threads for the list path (default: all cores)")
    args = ap.parse_args(argv)

    import pycocotools.mask as mask_utils

    from boundary_api.masks import boundary_iou as package_boundary_iou
    from boundary_api.masks import reference as R
    from boundary_api.masks.measures import MEASURES, MF_DILATION_RATIOS, measures
    import boundary_api.masks.measures as M

    print_header("boundary_api.masks.measures: per-pair time on COCO masks", args.threads)
    pairs, groups, distinct = load_pairs(args.pairs)
    print(f"- {len(pairs)} pairs ({distinct} distinct ground-truth x detection pairs of {len(groups)} "
          f"images, cycled); oracle on the first {args.oracle_pairs}\n", flush=True)

    fast = {name: getattr(M, name) for name in MEASURES}
    oracle = {
        "pixel_accuracy": R.pixel_accuracy, "mask_iou": R.mask_iou,
        "trimap_iou": lambda g, p: R.trimap_iou(g, p, 0.02), "f_measure": lambda g, p: R.f_measure(g, p, 0.02),
        "mf_measure": lambda g, p: R.mf_measure(g, p, MF_DILATION_RATIOS),
        "boundary_iou": lambda g, p: R.boundary_iou(g, p, 0.02),
        "min_mask_boundary_iou": lambda g, p: R.min_mask_boundary_iou(g, p, 0.02),
        "multiscale_iou": R.multiscale_iou,
    }
    dense = [(mask_utils.decode(g), mask_utils.decode(p)) for g, p in pairs[:args.oracle_pairs]]
    t_biou = per_pair(package_boundary_iou, pairs)
    rows = []
    for name in MEASURES:
        t_fast = per_pair(fast[name], pairs)
        t_ref = per_pair(oracle[name], dense)
        diff = max(abs(fast[name](g, p) - oracle[name](dg, dp))
                   for (g, p), (dg, dp) in zip(pairs[:args.oracle_pairs], dense))
        rows.append([name, t_fast * 1e6, t_fast / t_biou, t_ref * 1e6, t_ref / t_fast, f"{diff:.1e}"])
        print(f"  {name}: {t_fast * 1e6:.1f} us/pair", file=sys.stderr, flush=True)
    t_all = per_pair(measures, pairs)
    t_all_ref = per_pair(R.measures, dense)
    rows.append(["measures() (all 8)", t_all * 1e6, t_all / t_biou, t_all_ref * 1e6, t_all_ref / t_all, "-"])
    rows.append(["masks.boundary_iou (reference point)", t_biou * 1e6, 1.0, None, None, "-"])
    print(md_table(["measure (one pair per call)", "CPU us/pair", "x Boundary IoU", "oracle CPU us/pair",
                    "oracle / fast", "max |fast - oracle|"], rows))

    # lists: one G x D matrix per image
    n_mat = sum(len(g) * len(d) for g, d in groups)
    t = time.perf_counter()
    for g, d in groups:
        measures(g, d, num_threads=args.threads)
    t_list = (time.perf_counter() - t) / n_mat
    t = time.perf_counter()
    for g, d in groups:
        package_boundary_iou(g, d)
    t_blist = (time.perf_counter() - t) / n_mat
    G = [g for g, _ in pairs]
    D = [p for _, p in pairs]
    t = time.perf_counter()
    measures(G, D, pairwise=True, num_threads=args.threads)
    t_pw = (time.perf_counter() - t) / len(pairs)
    t = time.perf_counter()
    measures(G, D, pairwise=True, num_threads=args.threads, names=[n for n in MEASURES if n != "mf_measure"])
    t_pw7 = (time.perf_counter() - t) / len(pairs)
    print()
    print(md_table(["lists (wall time, --threads)", "pairs", "us/pair"],
                   [["measures(gt_list, dt_list), one matrix per image (all 8)", n_mat, t_list * 1e6],
                    ["masks.boundary_iou(gt_list, dt_list), one matrix per image", n_mat, t_blist * 1e6],
                    ["measures(gts, dts, pairwise=True) (all 8)", len(pairs), t_pw * 1e6],
                    ["measures(gts, dts, pairwise=True) (all but mF)", len(pairs), t_pw7 * 1e6]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
