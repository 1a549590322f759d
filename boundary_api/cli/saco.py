"""``boundary-eval saco``: cgF1 of SA-Co predictions (SAM 3's concept segmentation metric),
as SAM 3's ``CGF1Evaluator`` computes it, and Boundary cgF1 (``--iou-type boundary``)."""
from __future__ import annotations

import argparse

from ._common import PROG, HelpFormatter, add_common_flags, check_out_path, positive_int, ratio
from .output import build_document, write_json

EXAMPLES = """examples:
  boundary-eval saco --gt gold_a.json gold_b.json gold_c.json --dt coco_predictions_segm.json
  boundary-eval saco --gt gold_a.json gold_b.json gold_c.json --dt preds.json --iou-type segm boundary
  boundary-eval saco --gt gold_a.json --dt preds.json --iou-type bbox --json-out cgf1.json
"""


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} saco",
        description="cgF1 of promptable concept segmentation (SAM 3's SA-Co benchmark), exactly as SAM 3's "
                    "CGF1Evaluator computes it: per (image, noun phrase) pair one matching of the predictions "
                    "scored >= 0.5 to the ground truth, counted at IoU 0.5:0.95, times the image-level "
                    "Matthews correlation; with several ground truths (SA-Co/Gold's three annotators) each "
                    "pair is scored against the annotator that suits the predictions best. --iou-type "
                    "boundary: Boundary cgF1, the same on min(mask IoU, Boundary IoU).",
        epilog=EXAMPLES, formatter_class=lambda prog: HelpFormatter(prog, max_help_position=30))
    p.add_argument("--gt", nargs="+", required=True, metavar="GT",
                   help="ground-truth file(s), one per annotator (one image entry per pair, with "
                        "is_instance_exhaustive)")
    p.add_argument("--dt", required=True, metavar="PREDICTIONS",
                   help="predictions: the JSON list SAM 3's coco_writer.py writes (RLE masks, scores, "
                        "normalised boxes)")
    p.add_argument("--iou-type", nargs="+", choices=("segm", "bbox", "boundary"), default=["segm"],
                   help="segm, bbox (the official ones) or boundary (Boundary cgF1); several are evaluated on "
                        "one read of the files")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="Boundary IoU's band width as a fraction of the image diagonal (--iou-type boundary)")
    p.add_argument("--not-strict", dest="strict", action="store_false",
                   help="evaluate, with a warning, what the official evaluator silently ignores but is "
                        "probably a mistake (predictions for pairs or categories the ground truth does not "
                        "have) instead of refusing it")
    p.add_argument("--json-out", metavar="PATH",
                   help="write the settings and the 26 values to this JSON file (several --iou-type values: "
                        "one document per type; schema: docs/json_output.md)")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads for the kernels (default: all cores)")
    add_common_flags(p)
    return p


def run(args) -> int:
    from ..saco.files import evaluate_saco_files

    inputs = {f"--gt {i + 1}": g for i, g in enumerate(args.gt)}
    inputs["--dt"] = args.dt
    check_out_path(args.json_out, files=inputs)
    results = evaluate_saco_files(args.gt, args.dt, args.iou_type, dilation_ratio=args.dilation_ratio,
                                  strict=args.strict, num_threads=args.threads)
    docs = {}
    for i, res in enumerate(results):
        if i:
            print()
        print(res.table())
        if not args.quiet:
            print(f"{res.num_pairs} pairs evaluated in {res.seconds:.2f}s")
        doc = build_document("saco", res.iou_type, res.dilation_ratio, {}, res.metrics,
                             settings_extra=res.settings)
        doc["settings"]["inputs"] = {"--gt": list(args.gt), "--dt": args.dt}
        docs[res.iou_type] = doc
    if args.json_out:
        write_json(args.json_out, docs[results[0].iou_type] if len(docs) == 1 else docs)
    return 0
