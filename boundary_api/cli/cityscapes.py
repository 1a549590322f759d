"""``boundary-eval cityscapes``: Cityscapes instance segmentation AP / Boundary AP.

Reads cityscapesScripts' formats (``gtFine/val/<city>/*_gtFine_instanceIds.png``
and a results folder of ``<city>_<seq>_<frame>*.txt`` files with
``relPath labelID confidence`` lines) and prints cityscapesScripts' table.
"""
from __future__ import annotations

import argparse
import logging
import time

from ..masks.imagefiles import DEFAULT_MAX_PIXELS
from ._common import PROG, HelpFormatter, InputError, add_common_flags, check_out_path, positive_int, ratio
from .output import build_document, metric_value, write_json

log = logging.getLogger(__name__)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} cityscapes",
        description="Boundary AP (or cityscapesScripts' mask AP) of Cityscapes instance segmentation "
                    "results, with cityscapesScripts' matching and AP rules. Nothing is written next "
                    "to the inputs (no gtInstances.json cache).",
        formatter_class=HelpFormatter,
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
    p.add_argument("--max-pixels", type=positive_int, default=DEFAULT_MAX_PIXELS, metavar="N",
                   help="refuse images of more than N pixels (width x height), checked from the file "
                        "header before decoding: a guard against decompression bombs")
    add_common_flags(p)  # --version, -q (only the table)
    return p


def table_title(iou_type: str, dilation_ratio: float, n_images: int) -> str:
    """The line above the table: what was measured, on how many images."""
    what = (f"Boundary AP (dilation ratio {dilation_ratio:g})" if iou_type == "boundary"
            else "Mask AP (segm, cityscapesScripts' AP)")
    return f"Cityscapes {what} over {n_images} images:"


def run(args) -> int:
    from ..cityscapes import CityscapesInputError, evaluate_cityscapes, print_results

    check_out_path(args.json_out, files={}, folders={"--gt-dir": args.gt_dir, "--result-dir": args.result_dir})
    tic = time.time()
    try:
        res = evaluate_cityscapes(args.gt_dir, args.result_dir, iou_type=args.iou_type,
                                  dilation_ratio=args.dilation_ratio, num_threads=args.threads,
                                  max_pixels=args.max_pixels, strict=True)
    except CityscapesInputError as exc:  # also a SystemExit (cityscapesScripts exits): one line, exit 2
        raise InputError(str(exc)) from None
    log.info("evaluated %d images in %.2fs", res["n_images"], time.time() - tic)
    # -q: only the table (as everywhere), not nothing
    print(table_title(args.iou_type, args.dilation_ratio, res["n_images"]))
    print_results(res)
    if args.json_out:
        doc = build_document("cityscapes", args.iou_type, args.dilation_ratio,
                             {"--gt-dir": args.gt_dir, "--result-dir": args.result_dir},
                             {"AP": res["AP"], "AP50": res["AP50"]})
        # per class keyed by class name, as cityscapesScripts reports it
        doc["per_class"] = {name: {"AP": metric_value(v["AP"]), "AP50": metric_value(v["AP50"]),
                                   "AP_per_threshold": [metric_value(x) for x in v["AP_per_threshold"]]}
                            for name, v in res["per_class"].items()}
        doc["thresholds"] = [float(t) for t in res["thresholds"]]
        doc["n_images"] = int(res["n_images"])
        write_json(args.json_out, doc)
    return 0
