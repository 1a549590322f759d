"""``boundary-eval panoptic``: PQ / Boundary PQ of COCO-format panoptic predictions."""
from __future__ import annotations

import argparse

from ._common import PROG, positive_int, ratio
from .output import write_json


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} panoptic",
        description="Boundary PQ (or PQ) of COCO-format panoptic predictions; Cityscapes panoptic "
                    "data converted to the COCO panoptic format works the same way "
                    "(use --dilation-ratio 0.005 as in the paper).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--gt-json", "--gt-json-file", dest="gt_json", required=True, metavar="GT.json",
                   help="ground truth panoptic JSON")
    p.add_argument("--gt-folder", dest="gt_folder", metavar="DIR",
                   help="ground truth PNG folder (default: the JSON path without .json)")
    p.add_argument("--pred-json", "--pred-json-file", dest="pred_json", required=True, metavar="PRED.json",
                   help="predictions panoptic JSON")
    p.add_argument("--pred-folder", dest="pred_folder", metavar="DIR",
                   help="predictions PNG folder (default: the JSON path without .json)")
    p.add_argument("--iou-type", choices=("boundary", "segm"), default="boundary",
                   help="boundary: Boundary PQ; segm: PQ")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the image diagonal (Cityscapes: 0.005)")
    p.add_argument("--json-out", metavar="PATH", help="write PQ/SQ/RQ and per-class results to this JSON file")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads (default: all cores)")
    return p


def run(args) -> int:
    from ..panoptic import pq_compute

    results = pq_compute(args.gt_json, args.pred_json, gt_folder=args.gt_folder,
                         pred_folder=args.pred_folder, iou_type=args.iou_type,
                         dilation_ratio=args.dilation_ratio, num_threads=args.threads)
    if args.json_out:
        doc = {"gt_json": args.gt_json, "pred_json": args.pred_json, "iou_type": args.iou_type,
               "dilation_ratio": args.dilation_ratio if args.iou_type == "boundary" else None}
        doc.update({k: results[k] for k in ("All", "Things", "Stuff") if k in results})
        doc["per_class"] = {str(k): v for k, v in results.get("per_class", {}).items()}
        write_json(args.json_out, doc)
    return 0
