"""``boundary-eval panoptic``: PQ / Boundary PQ of COCO-format panoptic predictions."""
from __future__ import annotations

import argparse

from ..panoptic import default_folder
from ..panoptic.idmaps import DEFAULT_MAX_PIXELS
from ._common import PROG, HelpFormatter, add_common_flags, check_out_path, positive_int, ratio
from .output import build_document, write_json

#: what each --iou-type reports, for the title line above the table
LABELS = {"boundary": "Boundary PQ", "segm": "PQ (segm: mask IoU)"}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} panoptic",
        description="Boundary PQ (or PQ) of COCO-format panoptic predictions; Cityscapes panoptic "
                    "data converted to the COCO panoptic format works the same way "
                    "(use --dilation-ratio 0.005 as in the paper).",
        formatter_class=HelpFormatter,
    )
    p.add_argument("--gt-json", "--gt-json-file", dest="gt_json", required=True, metavar="GT.json",
                   help="ground truth panoptic JSON")
    p.add_argument("--gt-folder", dest="gt_folder", metavar="DIR",
                   help="ground truth PNG folder (default: the JSON path without .json or .json.gz)")
    p.add_argument("--pred-json", "--pred-json-file", dest="pred_json", required=True, metavar="PRED.json",
                   help="predictions panoptic JSON")
    p.add_argument("--pred-folder", dest="pred_folder", metavar="DIR",
                   help="predictions PNG folder (default: the JSON path without .json or .json.gz)")
    p.add_argument("--iou-type", choices=("boundary", "segm"), default="boundary",
                   help="boundary: Boundary PQ; segm: PQ")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the image diagonal (default 0.02, i.e. 2%%; "
                        "Cityscapes: 0.005)")
    p.add_argument("--boundary-mode", choices=("per-segment", "reference"), default="per-segment",
                   help="per-segment: each segment's boundary on its own mask, independent of segment "
                        "ids; reference: the published reference's construction, which changes where a "
                        "segment id equals the largest category id + 1 (to reproduce published numbers)")
    p.add_argument("--json-out", metavar="PATH",
                   help="write the settings, PQ/SQ/RQ and per-category results to this JSON file "
                        "(schema: docs/json_output.md); not inside an input folder")
    p.add_argument("--max-pixels", type=positive_int, default=DEFAULT_MAX_PIXELS, metavar="N",
                   help="refuse PNGs of more than N pixels (width x height), a guard against "
                        "decompression bombs")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads (default: all cores)")
    add_common_flags(p)
    return p


def _default_folder(folder, json_file):
    return folder if folder is not None else default_folder(json_file)


#: top-level metric names of the JSON document, from pq_compute's groups
_GROUP_SUFFIX = (("All", ""), ("Things", "_th"), ("Stuff", "_st"))


def _metrics(results: dict) -> dict:
    metrics = {}
    for group, suffix in _GROUP_SUFFIX:
        r = results[group]
        undefined = r["n"] == 0
        for key in ("pq", "sq", "rq"):
            metrics[key.upper() + suffix] = None if undefined else r[key]
    for group, suffix in _GROUP_SUFFIX:
        metrics["N" + suffix] = results[group]["n"]
    return metrics


def run(args) -> int:
    from ..panoptic import pq_compute_files

    inputs = {"--gt-json": args.gt_json, "--gt-folder": args.gt_folder,
              "--pred-json": args.pred_json, "--pred-folder": args.pred_folder}
    check_out_path(args.json_out, files=inputs,
                   folders={"--gt-folder": _default_folder(args.gt_folder, args.gt_json),
                            "--pred-folder": _default_folder(args.pred_folder, args.pred_json)})
    label = LABELS[args.iou_type] + (f" (dilation ratio {args.dilation_ratio:g})"
                                     if args.iou_type == "boundary" else "")
    print(f"{label}, SQ and RQ:")
    evaluation = pq_compute_files(args.gt_json, args.pred_json, gt_folder=args.gt_folder,
                                  pred_folder=args.pred_folder, iou_type=args.iou_type,
                                  dilation_ratio=args.dilation_ratio, num_threads=args.threads,
                                  max_pixels=args.max_pixels,
                                  boundary_mode=args.boundary_mode.replace("-", "_"), strict=True,
                                  print_progress=False)
    results = evaluation["results"]
    if not args.quiet:
        print(f"evaluated in {evaluation['seconds']:.2f}s (per-category results: --json-out)")
    if args.json_out:
        cats = evaluation["categories"]
        per_category = {}
        for cat_id, r in results["per_class"].items():
            undefined = r["tp"] + r["fp"] + r["fn"] == 0
            entry = {"name": cats[cat_id].get("name"), "isthing": cats[cat_id].get("isthing")}
            entry.update({key.upper(): None if undefined else r[key] for key in ("pq", "sq", "rq")})
            entry.update({key: r[key] for key in ("tp", "fp", "fn")})
            per_category[cat_id] = entry
        # the reference's boundary construction is recorded; the default is not
        reference = args.iou_type == "boundary" and args.boundary_mode == "reference"
        doc = build_document("panoptic", args.iou_type, args.dilation_ratio, inputs, _metrics(results),
                             per_category, settings_extra={"boundary_mode": "reference"} if reference else None)
        write_json(args.json_out, doc)
    return 0

