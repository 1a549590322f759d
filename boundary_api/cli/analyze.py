"""``boundary-eval analyze --gt GT.json --dt RESULTS.json``: why Boundary AP is low --
TIDE's error types with Boundary IoU, the boundary error, per size and category,
the confusion matrix, calibration and optimal LRP (COCO or LVIS ground truth;
boundary, segm or bbox)."""
from __future__ import annotations

import argparse
import logging

from ._common import PROG, HelpFormatter, InputError, add_common_flags, check_out_path, positive_int, ratio
from .output import build_document, metric_value, write_json

log = logging.getLogger("boundary_api")


def threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {value}")
    return value


def add_input_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gt", required=True, metavar="GT.json", help="ground truth: COCO instances JSON or LVIS JSON (told apart by the content)")
    p.add_argument("--dt", required=True, metavar="DT.json",
                   help="results: JSON list of {image_id, category_id, segmentation (compressed RLE), score} "
                        "(bbox instead of segmentation for --iou-type bbox)")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the image diagonal")
    p.add_argument("--pos-threshold", type=threshold, default=0.5, metavar="T",
                   help="TIDE's foreground IoU threshold: a match at or above it is a true positive")
    p.add_argument("--background-threshold", type=threshold, default=0.1, metavar="T",
                   help="TIDE's background IoU threshold: a detection at or below it with every object is "
                        "a background error")
    p.add_argument("--max-dets", type=positive_int, default=None, metavar="N",
                   help="detections kept per image (highest scores); default 100 for COCO, 300 for LVIS")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads for the kernels (default: all cores)")
    add_common_flags(p)


def add_diagnostic_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--confusion-iou", type=threshold, default=0.5, metavar="T",
                   help="IoU threshold of the confusion matrix and of the calibration's outcomes (among the "
                        "evaluation's 0.50:0.05:0.95)")
    p.add_argument("--calibration-bins", type=positive_int, default=10, metavar="N",
                   help="bins of equal width on [0, 1] of the reliability diagram")
    p.add_argument("--lrp-threshold", type=threshold, default=0.5, metavar="T",
                   help="LRP's true-positive IoU threshold (among 0.50:0.05:0.95)")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} analyze",
        description="Error breakdown of instance segmentation results (TIDE's classification, localization, "
                    "both, duplicate, background and missed errors, with IoU = min(mask IoU, boundary IoU)), "
                    "plus boundary errors: detections that Mask IoU accepts and Boundary IoU rejects. "
                    "Prints ΔAP x100 per error type, overall and per object size.",
        formatter_class=HelpFormatter)
    add_input_flags(p)
    p.add_argument("--iou-type", choices=("boundary", "segm", "bbox"), default="boundary",
                   help="boundary: IoU = min(mask IoU, boundary IoU); segm: mask IoU (plain TIDE, no boundary "
                        "errors); bbox: box IoU (TIDE's error types with box IoU, no boundary errors). On LVIS ground "
                        "truth TIDE's breakdown is left out (one line says why)")
    add_diagnostic_flags(p)
    p.add_argument("--json-out", metavar="PATH",
                   help="write the breakdown (overall, per size, per category), the confusion matrix, the "
                        "calibration and optimal LRP to this JSON file")
    return p


def check_thresholds(args) -> None:
    if args.pos_threshold < args.background_threshold:
        raise InputError(f"--background-threshold ({args.background_threshold}) is above --pos-threshold "
                         f"({args.pos_threshold})")


def load(args):
    """The ground truth and results as boundary_api COCO objects, read and checked
    by the library."""
    from ..diagnostics.files import load_files

    check_thresholds(args)
    return load_files(args.gt, args.dt, iou_type=getattr(args, "iou_type", "boundary"), max_dets=args.max_dets)


def _table(result, pos_threshold, iou_type: str = "boundary", dilation_ratio: float = 0.02) -> str:
    from ..diagnostics.tide import ERROR_TYPES

    sizes = ("small", "medium", "large")
    ap = "n/a" if result["ap"] != result["ap"] else f"{100 * result['ap']:.2f}"
    what = {"boundary": f"Boundary AP, dilation ratio {dilation_ratio:g}", "segm": "Mask AP",
            "bbox": "Box AP"}[iou_type]
    lines = [f"TIDE AP (IoU {pos_threshold:g}; {what}): {ap}    ΔAP x100 from fixing each error type:",
             f"{'error':<10}{'all':>8}" + "".join(f"{s:>8}" for s in sizes) + f"{'count':>8}"]
    for t in ERROR_TYPES:
        vals = [result["errors"][t]] + [result["per_size"][s]["errors"][t] for s in sizes]
        lines.append(f"{t:<10}" + "".join(f"{100 * v:8.2f}" for v in vals) + f"{result['counts'][t]:8d}")
    return "\n".join(lines)


def document(args, analysis: dict) -> dict:
    """The ``--json-out`` document (the shared schema; see cli/output.py):
    ``errors``, ``counts``, ``per_size``, ``per_category`` and
    ``boundary_coverage`` are null where the library did not compute them, and
    ``notes`` says why."""
    def errors(values):
        return {k: metric_value(v) for k, v in values.items()}

    result, coverage = analysis["errors"], analysis["coverage"]
    cats = analysis["gt"].cats
    doc = build_document(analysis["kind"], args.iou_type, args.dilation_ratio, {"--gt": args.gt, "--dt": args.dt},
                         {"AP": None if result is None else result["ap"]}, max_dets=analysis["max_dets"],
                         settings_extra={"pos_threshold": args.pos_threshold,
                                         "background_threshold": args.background_threshold})
    out = {k: doc[k] for k in ("boundary_api_version", "settings", "AP")}
    if result is None:
        out.update({"errors": None, "counts": None, "per_size": None})
    else:
        out["errors"] = errors(result["errors"])
        out["counts"] = dict(result["counts"])
        out["per_size"] = {s: {"AP": metric_value(r["ap"]), "errors": errors(r["errors"]),
                               "counts": dict(r["counts"])} for s, r in result["per_size"].items()}
    out["boundary_coverage"] = coverage
    if result is None:
        out["per_category"] = None
    else:
        per_category = {c: {"name": cats.get(c, {}).get("name"), "AP": r["ap"], "errors": errors(r["errors"])}
                        for c, r in sorted(result["per_category"].items(), key=lambda kv: kv[0])}
        out["per_category"] = build_document(analysis["kind"], args.iou_type, None, {}, {},
                                             per_category)["per_category"]
    out.update(analysis["diagnostics"])  # confusion, calibration, lrp (issue 30)
    out["notes"] = dict(analysis["notes"])
    return out


def run(args) -> int:
    from ..diagnostics.files import analyze_files
    from ..report.data import coverage_warning

    check_out_path(args.json_out, files={"--gt": args.gt, "--dt": args.dt})
    check_thresholds(args)
    analysis = analyze_files(args.gt, args.dt, iou_type=args.iou_type, dilation_ratio=args.dilation_ratio,
                             pos_threshold=args.pos_threshold, background_threshold=args.background_threshold,
                             max_dets=args.max_dets, confusion_iou=args.confusion_iou,
                             calibration_bins=args.calibration_bins, lrp_threshold=args.lrp_threshold,
                             num_threads=args.threads)
    result, coverage = analysis["errors"], analysis["coverage"]
    warning = coverage_warning(coverage) if coverage is not None else None
    if warning and args.iou_type == "boundary":
        log.warning("%s", warning)
    if result is None:
        print(f"TIDE error breakdown: not computed: {analysis['notes']['errors']}.")
    else:
        print(_table(result, args.pos_threshold, args.iou_type, args.dilation_ratio))
    diagnostics = analysis["diagnostics"]
    cal, lrp = diagnostics["calibration"], diagnostics["lrp"]
    if not args.quiet or result is None:
        ece = "n/a" if cal["ece"] is None else f"{cal['ece']:.4f}"
        mce = "n/a" if cal["mce"] is None else f"{cal['mce']:.4f}"
        olrp = "n/a" if lrp["olrp"] is None else f"{100 * lrp['olrp']:.2f}"
        print(f"Calibration (IoU {cal['iou_threshold']:g}): ECE {ece}  MCE {mce};  optimal LRP (tau "
              f"{lrp['tp_threshold']:g}): {olrp} x100")
    log.info("analyzed in %.2fs", analysis["seconds"])
    if args.json_out:
        write_json(args.json_out, document(args, analysis))
    return 0
