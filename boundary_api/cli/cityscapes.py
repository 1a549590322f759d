"""``boundary-eval cityscapes``: Cityscapes instance segmentation AP / Boundary AP.

Reads cityscapesScripts' formats (``gtFine/val/<city>/*_gtFine_instanceIds.png``
and a results folder of ``<city>_<seq>_<frame>*.txt`` files with
``relPath labelID confidence`` lines) and prints cityscapesScripts' table.
"""
from __future__ import annotations

import argparse
import logging
import time

from ._common import PROG, positive_int, ratio
from .output import finite_or_none, write_json

log = logging.getLogger(__name__)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} cityscapes",
        description="Boundary AP (or cityscapesScripts' mask AP) of Cityscapes instance segmentation "
                    "results, with cityscapesScripts' matching and AP rules. Nothing is written next "
                    "to the inputs (no gtInstances.json cache).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--gt-dir", "--gt_dir", dest="gt_dir", required=True, metavar="DIR",
                   help="ground truth folder, e.g. gtFine/val (holds <city>/*_gtFine_instanceIds.png)")
    p.add_argument("--result-dir", "--result_dir", dest="result_dir", required=True, metavar="DIR",
                   help="results folder: one <city>_<seq>_<frame>*.txt per ground truth image "
                        "(searched recursively), lines 'relPath labelID confidence'")
    p.add_argument("--iou-type", "--iou_type", dest="iou_type", choices=("boundary", "segm"), default="boundary",
                   help="boundary: min(mask IoU, boundary IoU) = Boundary AP; segm: cityscapesScripts' AP")
    p.add_argument("--dilation-ratio", "--dilation_ratio", dest="dilation_ratio", type=ratio, default=0.005,
                   metavar="R", help="boundary width as a fraction of the image diagonal (0.005 for Cityscapes)")
    p.add_argument("--json-out", metavar="PATH",
                   help="write AP, AP50 and per-class AP/AP50/AP per threshold to this JSON file")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads over images (default: all cores)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print nothing (as cityscapesScripts' quiet); use with --json-out")
    return p


def run(args) -> int:
    from ..instance.cityscapes import evaluate_cityscapes, print_results

    tic = time.time()
    res = evaluate_cityscapes(args.gt_dir, args.result_dir, iou_type=args.iou_type,
                              dilation_ratio=args.dilation_ratio, num_threads=args.threads)
    log.info("evaluated %d images in %.2fs", res["n_images"], time.time() - tic)
    if not args.quiet:
        print_results(res)
    if args.json_out:
        import boundary_api

        doc = {
            "boundary_api_version": boundary_api.__version__,
            "settings": {
                "kind": "cityscapes",
                "iou_type": args.iou_type,
                "dilation_ratio": args.dilation_ratio if args.iou_type == "boundary" else None,
                "inputs": {"gt_dir": args.gt_dir, "result_dir": args.result_dir},
            },
            "AP": finite_or_none(res["AP"]),
            "AP50": finite_or_none(res["AP50"]),
            "per_class": {
                name: {"AP": finite_or_none(v["AP"]), "AP50": finite_or_none(v["AP50"]),
                       "AP_per_threshold": [finite_or_none(x) for x in v["AP_per_threshold"]]}
                for name, v in res["per_class"].items()
            },
            "thresholds": res["thresholds"],
            "n_images": res["n_images"],
        }
        write_json(args.json_out, doc)
    return 0
