"""``boundary-eval diagnose --gt GT.json --dt RESULTS.json``: the headline numbers
with bootstrap intervals, the confusion matrix, the calibration of the scores
and optimal LRP, for COCO or LVIS and Boundary, Mask or Box IoU."""
from __future__ import annotations

import argparse

from ._common import PROG, HelpFormatter, add_common_flags, check_out_path, positive_int, ratio
from .analyze import add_diagnostic_flags
from .compare import add_bootstrap_flags
from .output import write_json


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} diagnose",
        description="Diagnostics of one result file on a COCO or LVIS ground truth: every headline number with "
                    "its bootstrap interval over images, the confusion matrix, the calibration of the scores "
                    "(ECE, MCE) against matched-at-IoU outcomes, and optimal LRP with its components.",
        formatter_class=HelpFormatter)
    p.add_argument("--gt", required=True, metavar="GT.json", help="ground truth: COCO or LVIS instances JSON")
    p.add_argument("--dt", required=True, metavar="DT.json", help="results: JSON list of detections")
    p.add_argument("--iou-type", choices=("boundary", "segm", "bbox"), default="boundary",
                   help="boundary: IoU = min(mask IoU, boundary IoU); segm: mask IoU; bbox: box IoU")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the image diagonal")
    add_diagnostic_flags(p)
    add_bootstrap_flags(p)
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads for the kernels (default: all cores)")
    p.add_argument("--json-out", metavar="PATH", help="write every number to this JSON file")
    add_common_flags(p)
    return p


def _fmt(x, scale=100.0):
    return "n/a" if x is None else (f"{scale * x:.2f}" if scale != 1 else f"{x:.4f}")


def run(args) -> int:
    from ..diagnostics.run import diagnose_files
    from .._version import __version__

    check_out_path(args.json_out, files={"--gt": args.gt, "--dt": args.dt})
    r = diagnose_files(args.gt, args.dt, iou_type=args.iou_type, dilation_ratio=args.dilation_ratio,
                       iou_threshold=args.confusion_iou, n_bins=args.calibration_bins,
                       tp_threshold=args.lrp_threshold, resamples=args.resamples, seed=args.seed,
                       confidence=args.confidence, num_threads=args.threads)
    pct = f"{100 * args.confidence:g}%"
    lines = [f"{r['kind'].upper()} {args.iou_type}: headline numbers x100 with {pct} bootstrap intervals "
             f"({args.resamples} resamples over images, seed {args.seed})"]
    for name, m in r["bootstrap"]["metrics"].items():
        lo, hi = m["ci"]
        lines.append(f"  {name:<9}{_fmt(m['value']):>8}   [{_fmt(lo)}, {_fmt(hi)}]")
    c = r["confusion"]
    lines.append(f"Confusion at IoU {c['iou_threshold']:g}: {sum(map(sum, c['matrix']))} counts; "
                 "most frequent confusions (ground truth -> detected):")
    lines += [f"  {t['gt']} -> {t['dt']}: {t['count']}" for t in c["top"][:5]] or ["  none"]
    cal = r["calibration"]
    lines.append(f"Calibration at IoU {cal['iou_threshold']:g} ({cal['count']} detections, {cal['n_bins']} bins): "
                 f"ECE {_fmt(cal['ece'], 1)}  MCE {_fmt(cal['mce'], 1)}")
    lrp = r["lrp"]
    lines.append(f"Optimal LRP (tau {lrp['tp_threshold']:g}): oLRP {_fmt(lrp['olrp'])}  loc {_fmt(lrp['loc'])}  "
                 f"FP {_fmt(lrp['fp'])}  FN {_fmt(lrp['fn'])}  (x100, lower is better)")
    print("\n".join(lines))
    if args.json_out:
        doc = {"boundary_api_version": __version__,
               "settings": {"kind": r["kind"], "iou_type": args.iou_type,
                            "dilation_ratio": args.dilation_ratio if args.iou_type == "boundary" else None,
                            "inputs": {"--gt": args.gt, "--dt": args.dt}}}
        doc.update(r)
        write_json(args.json_out, doc)
    return 0
