"""``boundary-eval measures GT_MASK PRED_MASK``: every segmentation measure for one pair."""
from __future__ import annotations

import argparse

from ..masks.imagefiles import DEFAULT_MAX_PIXELS
from ..masks.measures import MEASURE_LABELS, MEASURES, MF_DILATION_RATIOS, measures_of_files
from ._common import PROG, HelpFormatter, InputError, add_common_flags, check_out_path, positive_int, ratio
from .output import build_document, write_json

LABELS = MEASURE_LABELS


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} measures",
        description="Print every segmentation measure of boundary_api.measures (pixel accuracy, Mask IoU, "
                    "Trimap IoU, F-measure, mF-measure, Boundary IoU, min(Mask, Boundary IoU), Multiscale IoU) "
                    "for one ground-truth mask and one predicted mask of the same size.",
        formatter_class=HelpFormatter,
    )
    p.add_argument("gt_mask", metavar="GT_MASK",
                   help="ground-truth mask: an image file (PNG, ...; any nonzero pixel is foreground) or a "
                        "JSON file holding a COCO RLE {size, counts} or an object with such a 'segmentation'")
    p.add_argument("pred_mask", metavar="PRED_MASK", help="predicted mask, in the same forms as GT_MASK")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="d of Trimap IoU, F-measure and Boundary IoU as a fraction of the image diagonal")
    p.add_argument("--num-scales", type=positive_int, default=10, metavar="N",
                   help="Multiscale IoU grid sizes 1, 2, .., 2^(N-1) (at least 2)")
    p.add_argument("--json-out", metavar="PATH", help="write the measures to this JSON file")
    p.add_argument("--max-pixels", type=positive_int, default=DEFAULT_MAX_PIXELS, metavar="N",
                   help="refuse images of more than N pixels (width x height), checked from the file "
                        "header before decoding: a guard against decompression bombs")
    add_common_flags(p)
    return p


def run(args) -> int:
    check_out_path(args.json_out, files={"GT_MASK": args.gt_mask, "PRED_MASK": args.pred_mask})
    if args.num_scales < 2:
        raise InputError(f"--num-scales must be at least 2, got {args.num_scales}")
    values = measures_of_files(args.gt_mask, args.pred_mask, args.dilation_ratio, num_scales=args.num_scales,
                               max_pixels=args.max_pixels, what=("GT_MASK", "PRED_MASK"))
    width = max(len(v) for v in LABELS.values())
    for name in MEASURES:
        print(f"{LABELS[name]:<{width}}  {values[name]:.4f}")
    if args.json_out:
        write_json(args.json_out, build_document(
            "measures", None, None, {"GT_MASK": args.gt_mask, "PRED_MASK": args.pred_mask}, values,
            settings_extra={"dilation_ratio": args.dilation_ratio,
                            "mf_dilation_ratios": list(MF_DILATION_RATIOS), "num_scales": args.num_scales}))
    return 0

