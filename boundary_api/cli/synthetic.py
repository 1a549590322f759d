"""``boundary-eval synthetic``: the paper's synthetic low-resolution predictions (Tables 3, 5, 11)."""
from __future__ import annotations

import argparse
import math
import os

from ._common import PROG, HelpFormatter, InputError, add_common_flags, check_out_path, positive_int, ratio
from .output import build_document, write_json


def _factor(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(v) or v < 1:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 1, got {text}")
    return v


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} synthetic",
        description="Synthetic predictions made from the ground truth, as in the Boundary IoU paper. Instances: "
                    "every non-crowd mask cropped to its box, resampled to NxN, upscaled bilinearly and "
                    "binarized at 0.5 (Tables 3 and 5; N = 28 is the paper's main setting). Panoptic "
                    "(--panoptic): every PNG down- and up-scaled by nearest neighbour by a factor (Table 11). "
                    "With --evaluate, prints Mask AP next to Boundary AP (AP, APs, APm, APl), or PQ/SQ/RQ next "
                    "to Boundary PQ/SQ/RQ.",
        formatter_class=HelpFormatter,
    )
    p.add_argument("--gt", required=True, metavar="GT.json",
                   help="COCO/LVIS instances ground truth, or COCO panoptic JSON with --panoptic")
    p.add_argument("--gt-folder", metavar="DIR",
                   help="--panoptic: ground truth PNG folder (default: the JSON path without .json)")
    p.add_argument("--panoptic", action="store_true", help="panoptic ground truth; uses --factor")
    p.add_argument("--resolution", type=positive_int, nargs="+", default=[28], metavar="N",
                   help="side of the low-resolution masks; several values evaluate each (instances)")
    p.add_argument("--factor", type=_factor, nargs="+", default=[4.0], metavar="F",
                   help="--panoptic: down-scaling factors (>= 1); several values evaluate each")
    p.add_argument("--out", metavar="PATH",
                   help="write the predictions here: a COCO results JSON (instances) or a panoptic JSON with "
                        "its PNG folder next to it (the path without .json); with several resolutions/factors "
                        "'_<N>' is added before .json")
    p.add_argument("--evaluate", action="store_true", help="print Mask AP and Boundary AP (or PQ and Boundary PQ)")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the image diagonal (0.02 COCO/LVIS, 0.005 Cityscapes)")
    p.add_argument("--json-out", metavar="PATH", help="--evaluate: write the numbers to this JSON file")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N", help="threads (default: all cores)")
    add_common_flags(p)
    return p


def _out_path(out: str, tag: str, many: bool) -> str:
    if not many:
        return out
    root, ext = os.path.splitext(out)
    return f"{root}_{tag}{ext or '.json'}"


def _check_paths(args) -> None:
    if not args.out and not args.evaluate:
        raise InputError("nothing to do: give --out to write predictions and/or --evaluate")
    if args.panoptic and args.out is None:
        raise InputError("--panoptic needs --out (the predictions are PNG files that the evaluation reads)")
    if args.json_out and not args.evaluate:
        raise InputError("--json-out needs --evaluate")
    if args.out is not None:
        parent = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(parent):
            raise InputError(f"--out: directory does not exist: {parent}")
        if os.path.exists(args.gt) and os.path.exists(args.out) and os.path.samefile(args.out, args.gt):
            raise InputError(f"--out {args.out} is the ground truth file; it would be overwritten")
    check_out_path(args.json_out, {"--gt": args.gt, "--out": args.out}, {"--gt-folder": args.gt_folder})


def run(args) -> int:
    from ..sensitivity import synthetic as syn

    _check_paths(args)
    rows = []
    if args.panoptic:
        many = len(args.factor) > 1
        outs = [_out_path(args.out, f"{f:g}", many) for f in args.factor]
        for f, out, r in syn.synthetic_panoptic_study(args.gt, args.factor, outs, gt_folder=args.gt_folder,
                                                      evaluate=args.evaluate, dilation_ratio=args.dilation_ratio,
                                                      num_threads=args.threads):
            if args.evaluate:
                rows.append((f"{f:g}x", r))
        if args.evaluate:
            _print_panoptic(rows)
            settings = {"factors": args.factor}
    else:
        many = len(args.resolution) > 1
        for n, preds, r in syn.synthetic_instance_study(args.gt, args.resolution, evaluate=args.evaluate,
                                                        dilation_ratio=args.dilation_ratio,
                                                        num_threads=args.threads, progress=not args.quiet):
            if args.out:
                out = _out_path(args.out, str(n), many)
                write_json(out, preds, indent=None)
            if args.evaluate:
                rows.append((f"{n}x{n}", r))
        if args.evaluate:
            _print_instances(rows)
            settings = {"resolutions": args.resolution}
    if args.json_out:
        # one block per resolution (factor): {"segm": {metric: ..}, "boundary": {..}}, fractions
        results = {tag: {iou: _fractions(m) for iou, m in r.items()} for tag, r in rows}
        doc = build_document("synthetic-panoptic" if args.panoptic else "synthetic", "boundary",
                             args.dilation_ratio, {"--gt": args.gt, "--gt-folder": args.gt_folder}, {},
                             settings_extra={**settings, "iou_types": ["segm", "boundary"]})
        doc["results"] = results
        write_json(args.json_out, doc)
    return 0


def _fractions(block):
    """Percentages (as printed) back to fractions, NaN as None; nested groups kept."""
    out = {}
    for k, v in block.items():
        if isinstance(v, dict):
            out[k] = _fractions(v)
        elif k == "n":
            out[k] = v
        else:
            out[k] = None if v is None or not math.isfinite(v) else v / 100.0
    return out


def _fmt(v) -> str:
    return "  nan" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:5.1f}"


def _print_instances(rows) -> None:
    keys = ("AP", "APs", "APm", "APl")
    head = "resolution  " + "  ".join(f"{'Mask ' + k:>9}" for k in keys) + "  " + \
        "  ".join(f"{'Bnd ' + k:>8}" for k in keys)
    print(head)
    for tag, r in rows:
        print(f"{tag:<10}  " + "  ".join(f"{_fmt(r['segm'][k]):>9}" for k in keys) + "  " +
              "  ".join(f"{_fmt(r['boundary'][k]):>8}" for k in keys))


def _print_panoptic(rows) -> None:
    keys = ("PQ", "SQ", "RQ")
    print("factor  group   " + "  ".join(f"{k:>5}" for k in keys) + "  " + "  ".join(f"{'B-' + k:>5}" for k in keys))
    for tag, r in rows:
        for g in ("All", "Things", "Stuff"):
            if g in r["segm"]:
                print(f"{tag:<6}  {g:<6}  " + "  ".join(_fmt(r['segm'][g][k]) for k in keys) + "  " +
                      "  ".join(_fmt(r['boundary'][g][k]) for k in keys))
