"""``boundary-eval --gt GT.json --dt RESULTS.json``: COCO / LVIS instance evaluation."""
from __future__ import annotations

import argparse
import logging
import time

import numpy as np

from .._io import read_json
from ..instance._checks import check_instances_dataset, unknown_categories
from ..instance.results import coco_stats, per_category_ap
from ._common import PROG, InputError, positive_int, quiet, ratio
from .output import finite_or_none, write_json

log = logging.getLogger("boundary_api")


def instance_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Boundary AP (Cheng et al., CVPR 2021) and COCO/LVIS Mask and box AP for a "
                    "result JSON against a ground-truth JSON. Without arguments: run the bundled demo.",
        epilog=f"Panoptic segmentation (Boundary PQ): '{PROG} panoptic --help'. "
               f"Semantic segmentation (mIoU, Boundary IoU per class): '{PROG} semantic --help'.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--gt", "--gt-json-file", dest="gt", metavar="GT.json",
                   help="ground truth: COCO or LVIS instances JSON")
    p.add_argument("--dt", "--dt-json-file", dest="dt", metavar="DT.json",
                   help="results: JSON list of {image_id, category_id, segmentation (compressed RLE) "
                        "or bbox, score}")
    p.add_argument("--iou-type", choices=("boundary", "segm", "bbox"), default="boundary",
                   help="boundary: min(mask IoU, boundary IoU) = Boundary AP; segm: Mask AP; bbox: box AP")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the image diagonal (0.02 for COCO/LVIS)")
    p.add_argument("--json-out", metavar="PATH",
                   help="write the summary metrics and per-category AP to this JSON file")
    p.add_argument("--lvis", action="store_true",
                   help="evaluate with LVIS rules (also chosen automatically for LVIS ground truth)")
    p.add_argument("--max-dets", type=positive_int, default=300, metavar="N",
                   help="LVIS only: detections kept per image")
    p.add_argument("--rec-thrs", type=rec_thrs, default=101, metavar="N",
                   help="recall points at which the interpolated precision is sampled: 101 (COCO) or "
                        "11 (PASCAL VOC2007 11-point AP)")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads for the kernels (default: all cores)")
    p.add_argument("--slow", action="store_true",
                   help="match and accumulate with pycocotools'/lvis' own Python loops (same numbers)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print only the summary table")
    return p


def rec_thrs(text: str) -> int:
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"needs at least 2 recall points (0 and 1), got {value}")
    return value


def _looks_like_lvis(dataset) -> bool:
    imgs = dataset.get("images") or [{}]
    cats = dataset.get("categories") or [{}]
    return "neg_category_ids" in imgs[0] and "frequency" in cats[0]


def run(args) -> int:
    from ..instance.coco import COCO
    from ..instance.cocoeval import COCOeval

    tic = time.time()
    gt_data = read_json(args.gt, "ground truth")
    lvis = args.lvis or _looks_like_lvis(gt_data)
    check_instances_dataset(gt_data, args.gt, lvis=lvis)
    dt_data = read_json(args.dt, "results")
    if isinstance(dt_data, list):
        bad = unknown_categories([a for a in dt_data if isinstance(a, dict)],
                                 [c["id"] for c in gt_data["categories"]])
        if bad:
            shown = ", ".join(map(str, bad[:10])) + (" ..." if len(bad) > 10 else "")
            raise InputError(f"{args.dt}: results use category ids that {args.gt} does not have: {shown} "
                             "(were categories mapped to contiguous ids?)")
    iou = args.iou_type
    if lvis:
        from ..instance.lvis import LVIS, LVISEval, LVISResults

        with quiet(args.quiet):
            gt = LVIS(args.gt, _loaded=gt_data)
            dt = LVISResults(gt, args.dt, max_dets=args.max_dets, _loaded=dt_data)
            ev = LVISEval(gt, dt, iou_type=iou, max_dets=args.max_dets, dilation_ratio=args.dilation_ratio,
                          use_fast_impl=not args.slow, num_threads=args.threads)
            ev.params.rec_thrs = np.linspace(0.0, 1.0, args.rec_thrs)
            ev.run()
        ev.print_results()
        metrics = {k: float(v) for k, v in ev.get_results().items()}
        cats = gt.cats
    else:
        with quiet(args.quiet):
            gt = COCO.from_dataset(gt_data, args.gt)
            dt = gt.loadRes(dt_data)
            ev = COCOeval(gt, dt, iouType=iou, dilation_ratio=args.dilation_ratio,
                          use_fast_impl=not args.slow, num_threads=args.threads)
            ev.params.recThrs = np.linspace(0.0, 1.0, args.rec_thrs)
            ev.evaluate()
            ev.accumulate()
        ev.summarize()
        metrics = coco_stats(ev)
        cats = gt.cats
    log.info("evaluated in %.2fs", time.time() - tic)
    if args.json_out:
        per_cat = per_category_ap(ev)
        doc = {
            "gt": args.gt, "dt": args.dt, "dataset": "lvis" if lvis else "coco",
            "iou_type": iou, "dilation_ratio": args.dilation_ratio if iou == "boundary" else None,
            "metrics": metrics,
            "per_category_ap": {str(cats[c].get("name", c)): finite_or_none(ap) for c, ap in per_cat.items()},
        }
        write_json(args.json_out, doc)
    return 0
