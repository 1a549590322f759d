"""``boundary-eval compare --gt GT.json --dt A.json --dt B.json``: is the
difference between two result sets larger than the noise of the evaluation
set?  Paired bootstrap over images of every headline number."""
from __future__ import annotations

import argparse

from ._common import PROG, HelpFormatter, add_common_flags, check_out_path, positive_int, ratio
from .output import write_json


def confidence(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text!r}")
    return value


def seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value}")
    return value


def add_bootstrap_flags(p: argparse.ArgumentParser, default_resamples: int = 1000) -> None:
    p.add_argument("--resamples", type=positive_int, default=default_resamples, metavar="N",
                   help="bootstrap resamples (image multisets drawn with replacement)")
    p.add_argument("--seed", type=seed, default=0, metavar="S", help="seed of the resampling")
    p.add_argument("--confidence", type=confidence, default=0.95, metavar="C",
                   help="coverage of the percentile intervals")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} compare",
        description="Compare two result files on one ground truth (COCO or LVIS): per headline metric the "
                    "difference A - B of the two evaluations, its paired bootstrap interval over images, a "
                    "paired p-value, and whether the difference is within noise (the interval contains 0).",
        formatter_class=HelpFormatter)
    p.add_argument("--gt", required=True, metavar="GT.json", help="ground truth: COCO or LVIS instances JSON")
    p.add_argument("--dt", required=True, action="append", metavar="DT.json",
                   help="results; give it twice: A, then B")
    p.add_argument("--iou-type", choices=("boundary", "segm", "bbox"), default="boundary",
                   help="boundary: IoU = min(mask IoU, boundary IoU); segm: mask IoU; bbox: box IoU")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the image diagonal")
    add_bootstrap_flags(p)
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads for the kernels (default: all cores)")
    p.add_argument("--json-out", metavar="PATH",
                   help="write per metric difference, ci, p_value, within_noise (and A, B) to this JSON file")
    add_common_flags(p)
    return p


def run(args) -> int:
    from ..diagnostics.bootstrap import describe_rows
    from ..diagnostics.run import compare_files
    from .._version import __version__

    if len(args.dt) != 2:
        parser().error(f"--dt must be given exactly twice (A, then B), got {len(args.dt)}")
    check_out_path(args.json_out, files={"--gt": args.gt, "--dt": args.dt[0], "--dt ": args.dt[1]})
    result = compare_files(args.gt, args.dt[0], args.dt[1], iou_type=args.iou_type, resamples=args.resamples,
                           seed=args.seed, confidence=args.confidence, dilation_ratio=args.dilation_ratio,
                           num_threads=args.threads)
    if not args.quiet:
        print(f"A = {args.dt[0]}\nB = {args.dt[1]}\n{result['kind'].upper()} {args.iou_type}, "
              f"{args.resamples} paired bootstrap resamples over images (seed {args.seed}), x100:")
    print("\n".join(describe_rows(result["metrics"], result["names"], args.confidence)))
    if args.json_out:
        doc = {"boundary_api_version": __version__,
               "settings": {"kind": result["kind"], "iou_type": args.iou_type,
                            "dilation_ratio": args.dilation_ratio if args.iou_type == "boundary" else None,
                            "resamples": args.resamples, "seed": args.seed, "confidence": args.confidence,
                            "inputs": {"--gt": args.gt, "A": args.dt[0], "B": args.dt[1]}},
               "metrics": result["metrics"], "seconds": result["seconds"]}
        write_json(args.json_out, doc)
    return 0
