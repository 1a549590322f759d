"""``boundary-eval --gt GT.json --dt RESULTS.json``: COCO / LVIS instance evaluation."""
from __future__ import annotations

import argparse
import logging

from ..evaluate import IOU_TYPES as LABELS, table_title  # noqa: F401 (the table's title, used by streaming)
from ._common import PROG, HelpFormatter, add_common_flags, check_out_path, positive_int, quiet, ratio
from .output import build_document, write_json

log = logging.getLogger("boundary_api")


def instance_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Boundary AP (Cheng et al., CVPR 2021) and COCO/LVIS Mask and box AP for a "
                    "result JSON against a ground-truth JSON (.json or .json.gz). "
                    "Without --gt/--dt: run the bundled demo.",
        epilog=f"Other subcommands (each with --help): '{PROG} panoptic' (Boundary PQ), "
               f"'{PROG} cityscapes' (Cityscapes instance Boundary AP), '{PROG} semantic' (mIoU and "
               f"Boundary IoU per class), '{PROG} vos' (video object segmentation: DAVIS 2017 and SA-V "
               f"J&F, MOSEv2 and LVOS, with Boundary IoU per frame), '{PROG} vis' (video instance "
               f"segmentation: YouTube-VIS AP, HQ-YTVIS Tube-Boundary AP), '{PROG} saco' (SAM 3's SA-Co "
               f"cgF1, and Boundary cgF1), '{PROG} measures' (every measure for one mask pair), "
               f"'{PROG} analyze' and '{PROG} report' (error analysis, HTML report), '{PROG} diagnose' "
               f"and '{PROG} compare' (bootstrap intervals, confusion, calibration; two result files "
               f"compared), "
               f"'{PROG} sensitivity' and '{PROG} synthetic' (the paper's analysis), "
               f"'{PROG} shard' (split files into image shards).",
        formatter_class=HelpFormatter,
    )
    p.add_argument("--gt", "--gt-json-file", dest="gt", metavar="GT.json",
                   help="ground truth: COCO or LVIS instances JSON")
    p.add_argument("--dt", "--dt-json-file", dest="dt", metavar="DT.json",
                   help="results: JSON list of {image_id, category_id, segmentation (compressed RLE) "
                        "or bbox, score}")
    p.add_argument("--iou-type", nargs="+", choices=("boundary", "segm", "bbox"), default="boundary",
                   action=IouTypes, metavar="TYPE",
                   help="boundary: min(mask IoU, boundary IoU) = Boundary AP; segm: Mask AP; bbox: box AP "
                        "(default: boundary); several (e.g. segm boundary): each evaluated on one load of "
                        "the files, its table under its name, --json-out {TYPE: document, ...}")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the image diagonal (default 0.02, i.e. 2%%, "
                        "the paper's COCO/LVIS setting; 1 or more gives mask IoU)")
    p.add_argument("--json-out", metavar="PATH",
                   help="write the settings, summary metrics and per-category AP to this JSON file "
                        "(schema: docs/json_output.md)")
    p.add_argument("--lvis", action="store_true",
                   help="evaluate with LVIS rules (also chosen automatically for LVIS ground truth)")
    p.add_argument("--max-dets", type=positive_int, default=None, metavar="N",
                   help="detections kept per image (default: 100 for COCO, giving maxDets [1, 10, N] "
                        "as in pycocotools; 300 for LVIS; no limit for --ap fixed / pooled)")
    p.add_argument("--ap", choices=("standard", "fixed", "pooled"), default="standard",
                   help="LVIS only. standard: lvis' AP (at most --max-dets per image); fixed: Fixed AP and "
                        "pooled: Pooled AP (Dave et al. 2021): the --dets-per-cat best results of each "
                        "category over the whole dataset, no limit per image; pooled ranks all categories "
                        "together (AP) and each frequency group (APr, APc, APf)")
    p.add_argument("--dets-per-cat", type=positive_int, default=10000, metavar="K",
                   help="results kept per category for --ap fixed / pooled (default 10000, the paper's)")
    p.add_argument("--rec-thrs", type=rec_thrs, default=101, metavar="N",
                   help="recall points at which the interpolated precision is sampled: 101 (COCO) or "
                        "11 (PASCAL VOC2007 11-point AP)")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads for the kernels (default: all cores)")
    p.add_argument("--slow", action="store_true",
                   help="match and accumulate with pycocotools'/lvis' own Python loops (same numbers)")
    add_common_flags(p)
    return p


class IouTypes(argparse.Action):
    """``--iou-type`` of one or more types: the name when one is given (as
    before), the list of names when several are (each once)."""

    def __call__(self, parser, namespace, values, option_string=None):
        if len(set(values)) != len(values):
            parser.error(f"{option_string}: each type once, got {' '.join(values)}")
        setattr(namespace, self.dest, values[0] if len(values) == 1 else list(values))


def rec_thrs(text: str) -> int:
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"needs at least 2 recall points (0 and 1), got {value}")
    return value


def run(args) -> int:
    from ..evaluate import evaluate_files

    inputs = {"--gt": args.gt, "--dt": args.dt}
    check_out_path(args.json_out, files=inputs)
    with quiet(args.quiet):  # what pycocotools / lvis print while loading and evaluating
        result = evaluate_files(args.gt, args.dt, iou_type=args.iou_type, dilation_ratio=args.dilation_ratio,
                                lvis=True if args.lvis else None, max_dets=args.max_dets,
                                rec_thrs=args.rec_thrs, num_threads=args.threads, use_fast_impl=not args.slow,
                                strict=True, ap=args.ap, dets_per_cat=args.dets_per_cat)
    results = result if isinstance(result, dict) else {args.iou_type: result}
    for n, one in enumerate(results.values()):
        if n:
            print()
        print(one.title)
        one.print_table()
    _report(args, result, inputs)
    return 0


def _report(args, result, inputs) -> None:
    """Log the time taken and write ``--json-out``: the document of one
    evaluation, or ``{iou_type: document}`` for several."""
    results = result if isinstance(result, dict) else {None: result}
    log.info("evaluated in %.2fs", max(r.seconds for r in results.values()))
    if args.json_out:
        docs = {kind: build_document(r.kind, r.iou_type, args.dilation_ratio, inputs, r.metrics, r.per_category,
                                     max_dets=r.max_dets, settings_extra=r.settings)
                for kind, r in results.items()}
        write_json(args.json_out, docs if isinstance(result, dict) else docs[None])
