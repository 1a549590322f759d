"""``boundary-eval semantic``: mIoU and Boundary IoU per class of PNG label maps."""
from __future__ import annotations

import argparse
import math

import boundary_api
from ..masks.imagefiles import DEFAULT_MAX_PIXELS
from ._common import PROG, InputError, add_common_flags, check_out_path, positive_int, ratio
from .output import write_json

_EPILOG = """\
Ground truth and prediction PNGs pair up by relative path (after replacing --gt-suffix with
--pred-suffix). Layouts:
  Cityscapes, trainIds (the usual 19 classes): --gt-dir gtFine/val
      --gt-suffix _gtFine_labelTrainIds.png --num-classes 19 --ignore-index 255
      --dilation-ratio 0.005 (the files come from cityscapesscripts' csCreateTrainIdLabelImgs;
      predictions in trainIds as <city>/<frame>.png).
  Cityscapes, labelIds: --gt-suffix _gtFine_labelIds.png --num-classes 34; all 34 label ids
      are then classes (convert to trainIds for the benchmark's 19).
  ADE20K (ADEChallengeData2016): --gt-dir annotations/validation --num-classes 150
      --reduce-zero-label (0 is "other" and ignored, 1..150 become 0..149; predictions 0..149).
"""


class _HelpFormatter(argparse.HelpFormatter):
    """Wraps the one-paragraph description to the terminal's width, like every other
    subcommand, and keeps the epilog's lines as written (its flags are laid out by
    hand)."""

    def _fill_text(self, text, width, indent):
        if "\n" in text.strip("\n"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} semantic",
        description="mIoU and Boundary IoU per class (mBIoU), pixel accuracy (aAcc), mean class "
                    "accuracy (mAcc) and frequency-weighted IoU (fwIoU) of semantic segmentation "
                    "label maps (single-channel PNGs of class ids).",
        epilog=_EPILOG,
        formatter_class=_HelpFormatter,
    )
    p.add_argument("--gt-dir", required=True, metavar="DIR",
                   help="folder of ground truth label maps (searched recursively)")
    p.add_argument("--pred-dir", required=True, metavar="DIR",
                   help="folder of predicted label maps, same relative paths as the ground truth")
    p.add_argument("--num-classes", required=True, type=positive_int, metavar="N",
                   help="number of classes; class ids are 0..N-1")
    p.add_argument("--ignore-index", type=int, default=255, metavar="K",
                   help="ground truth label left out of the evaluation; in a prediction it means "
                        "'no class' (default: 255)")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the image diagonal (default: 0.02; "
                        "Cityscapes in the paper: 0.005)")
    p.add_argument("--class-names", metavar="FILE",
                   help="class names, one per line in class id order (or a JSON list)")
    p.add_argument("--gt-suffix", default=".png", metavar="SUFFIX",
                   help="end of the ground truth file names (default: .png)")
    p.add_argument("--pred-suffix", default=".png", metavar="SUFFIX",
                   help="end of the prediction file names, replacing --gt-suffix (default: .png)")
    p.add_argument("--reduce-zero-label", action="store_true",
                   help="ground truth 0 is ignored and k becomes k-1 (mmsegmentation's ADE20K setting)")
    p.add_argument("--json-out", metavar="PATH", help="write the metrics and per-class results to this JSON file")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads (default: all cores)")
    p.add_argument("--max-pixels", type=positive_int, default=DEFAULT_MAX_PIXELS, metavar="N",
                   help="refuse images of more than N pixels (width x height), checked from the file "
                        "header before decoding: a guard against decompression bombs")
    add_common_flags(p)
    return p


def _pct(x: float) -> str:
    return "nan" if math.isnan(x) else f"{100 * x:.2f}"


def _frac(x):
    x = float(x)
    return None if math.isnan(x) else x


def print_table(res) -> None:
    names = res["class_names"]
    width = max([5] + [len(n) for n in names])
    print(f"{'id':>4}  {'class':<{width}}  {'IoU':>7}  {'BIoU':>7}  {'Acc':>7}")
    for c, name in enumerate(names):
        print(f"{c:>4}  {name:<{width}}  {_pct(res['IoU'][c]):>7}  {_pct(res['BoundaryIoU'][c]):>7}  "
              f"{_pct(res['Acc'][c]):>7}")
    print("  ".join(f"{k} {_pct(res[k])}" for k in ("mIoU", "mBIoU", "aAcc", "mAcc", "fwIoU"))
          + f"  ({res['num_images']} images)")


def run(args) -> int:
    from ..semantic import evaluate_folders

    check_out_path(args.json_out, files={"--class-names": args.class_names},
                   folders={"--gt-dir": args.gt_dir, "--pred-dir": args.pred_dir})
    if not 0 <= args.ignore_index < 2 ** 32:
        raise InputError(f"--ignore-index must be in [0, 2**32), got {args.ignore_index}")
    res = evaluate_folders(args.gt_dir, args.pred_dir, args.num_classes, ignore_index=args.ignore_index,
                           dilation_ratio=args.dilation_ratio, num_threads=args.threads,
                           class_names=args.class_names or None, gt_suffix=args.gt_suffix, pred_suffix=args.pred_suffix,
                           reduce_zero_label=args.reduce_zero_label, max_pixels=args.max_pixels)
    print(f"Semantic segmentation: IoU, Boundary IoU (BIoU, dilation ratio {args.dilation_ratio:g}) "
          "and accuracy per class, in %:")
    print_table(res)
    if args.json_out:
        inputs = {"--gt-dir": args.gt_dir, "--pred-dir": args.pred_dir}
        if args.class_names:
            inputs["--class-names"] = args.class_names
        doc = {
            "boundary_api_version": boundary_api.__version__,
            "settings": {"kind": "semantic", "iou_type": "boundary", "dilation_ratio": args.dilation_ratio,
                         "num_classes": args.num_classes, "ignore_index": args.ignore_index,
                         "reduce_zero_label": args.reduce_zero_label, "inputs": inputs},
        }
        doc.update({k: _frac(res[k]) for k in ("mIoU", "mBIoU", "aAcc", "mAcc", "fwIoU")})
        doc["num_images"] = res["num_images"]
        doc["per_class"] = {
            str(c): {"name": res["class_names"][c], "IoU": _frac(res["IoU"][c]),
                     "BoundaryIoU": _frac(res["BoundaryIoU"][c]), "Acc": _frac(res["Acc"][c])}
            for c in range(args.num_classes)}
        write_json(args.json_out, doc)
    return 0
