"""``boundary-eval``: Boundary AP / Boundary PQ from result files.

Instance segmentation (COCO or LVIS)::

    boundary-eval --gt instances_val2017.json --dt segm_results.json
    boundary-eval --gt lvis_v1_val.json --dt results.json --iou-type boundary

Panoptic segmentation::

    boundary-eval panoptic --gt-json panoptic_val2017.json --gt-folder panoptic_val2017/ \\
        --pred-json pred.json --pred-folder pred/ --iou-type boundary

With no arguments it evaluates a small bundled demo and prints Mask AP and
Boundary AP side by side.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import math
import os
import sys
import time
from typing import List, Optional

from ._io import check_instances_dataset, read_json, unknown_categories
from .boundary import check_dilation_ratio
from .results import COCO_STAT_NAMES, coco_stats, per_category_ap

log = logging.getLogger("boundary_api")

PROG = "boundary-eval"


class InputError(ValueError):
    """Bad input found by the command line itself."""


def _ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    try:
        return check_dilation_ratio(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def instance_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Boundary AP (Cheng et al., CVPR 2021) and COCO/LVIS Mask and box AP for a "
                    "result JSON against a ground-truth JSON. Without arguments: run the bundled demo.",
        epilog=f"Panoptic segmentation (Boundary PQ): '{PROG} panoptic --help'.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    p.add_argument("--gt", "--gt-json-file", dest="gt", metavar="GT.json",
                   help="ground truth: COCO or LVIS instances JSON")
    p.add_argument("--dt", "--dt-json-file", dest="dt", metavar="DT.json",
                   help="results: JSON list of {image_id, category_id, segmentation (compressed RLE) "
                        "or bbox, score}")
    p.add_argument("--iou-type", choices=("boundary", "segm", "bbox"), default="boundary",
                   help="boundary: min(mask IoU, boundary IoU) = Boundary AP; segm: Mask AP; bbox: box AP")
    p.add_argument("--dilation-ratio", type=_ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the image diagonal (0.02 for COCO/LVIS)")
    p.add_argument("--json-out", metavar="PATH",
                   help="write the summary metrics and per-category AP to this JSON file")
    p.add_argument("--lvis", action="store_true",
                   help="evaluate with LVIS rules (also chosen automatically for LVIS ground truth)")
    p.add_argument("--max-dets", type=_positive_int, default=300, metavar="N",
                   help="LVIS only: detections kept per image")
    p.add_argument("--threads", type=_positive_int, default=None, metavar="N",
                   help="threads for the kernels (default: all cores)")
    p.add_argument("--slow", action="store_true",
                   help="match and accumulate with pycocotools'/lvis' own Python loops (same numbers)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print only the summary table")
    return p


def panoptic_parser() -> argparse.ArgumentParser:
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
    p.add_argument("--dilation-ratio", type=_ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the image diagonal (Cityscapes: 0.005)")
    p.add_argument("--json-out", metavar="PATH", help="write PQ/SQ/RQ and per-class results to this JSON file")
    p.add_argument("--threads", type=_positive_int, default=None, metavar="N",
                   help="threads (default: all cores)")
    return p


# ---------------------------------------------------------------------------
def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``boundary-eval``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format=f"{PROG}: %(levelname)s: %(message)s")
    try:
        if argv and argv[0] == "panoptic":
            args = panoptic_parser().parse_args(argv[1:])
            _check_out_path(args.json_out, [args.gt_json, args.pred_json])
            return _run_panoptic(args)
        parser = instance_parser()
        args = parser.parse_args(argv)
        if args.gt is None and args.dt is None:
            return _run_demo(args)
        if args.gt is None or args.dt is None:
            parser.error("--gt and --dt are needed together (or neither, for the demo)")
        _check_out_path(args.json_out, [args.gt, args.dt])
        return _run_instances(args)
    except (ValueError, TypeError, OSError, MemoryError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def _check_out_path(out: Optional[str], inputs: List[str]) -> None:
    if out is None:
        return
    for path in inputs:
        if path and os.path.exists(path) and os.path.exists(out) and os.path.samefile(out, path):
            raise InputError(f"--json-out {out} is one of the input files; it would be overwritten")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise InputError(f"--json-out: directory does not exist: {parent}")


def _looks_like_lvis(dataset) -> bool:
    imgs = dataset.get("images") or [{}]
    cats = dataset.get("categories") or [{}]
    return "neg_category_ids" in imgs[0] and "frequency" in cats[0]


@contextlib.contextmanager
def _quiet(enabled: bool):
    if not enabled:
        yield
        return
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def _run_instances(args) -> int:
    from .coco import COCO
    from .cocoeval import COCOeval

    tic = time.time()
    gt_data = read_json(args.gt, "ground truth")
    lvis = args.lvis or _looks_like_lvis(gt_data)
    check_instances_dataset(gt_data, args.gt, lvis=lvis)
    dt_data = read_json(args.dt, "results")
    if isinstance(dt_data, list):
        bad = unknown_categories([a for a in dt_data if isinstance(a, dict)],
                                 [c["id"] for c in gt_data["categories"]])
        if bad:
            shown = ", ".join(map(str, bad[:10])) + (" ..." if len(bad) > 10 else "")
            raise InputError(f"{args.dt}: results use category ids that {args.gt} does not have: {shown} "
                             "(were categories mapped to contiguous ids?)")
    iou = args.iou_type
    if lvis:
        from .lvis import LVIS, LVISEval, LVISResults

        with _quiet(args.quiet):
            gt = LVIS(args.gt, _loaded=gt_data)
            dt = LVISResults(gt, args.dt, max_dets=args.max_dets, _loaded=dt_data)
            ev = LVISEval(gt, dt, iou_type=iou, max_dets=args.max_dets, dilation_ratio=args.dilation_ratio,
                          use_fast_impl=not args.slow, num_threads=args.threads)
            ev.run()
        ev.print_results()
        metrics = {k: float(v) for k, v in ev.get_results().items()}
        cats = gt.cats
    else:
        with _quiet(args.quiet):
            gt = COCO.from_dataset(gt_data, args.gt)
            dt = gt.loadRes(dt_data)
            ev = COCOeval(gt, dt, iouType=iou, dilation_ratio=args.dilation_ratio,
                          use_fast_impl=not args.slow, num_threads=args.threads)
            ev.evaluate()
            ev.accumulate()
        ev.summarize()
        metrics = coco_stats(ev)
        cats = gt.cats
    log.info("evaluated in %.2fs", time.time() - tic)
    if args.json_out:
        per_cat = per_category_ap(ev)
        doc = {
            "gt": args.gt, "dt": args.dt, "dataset": "lvis" if lvis else "coco",
            "iou_type": iou, "dilation_ratio": args.dilation_ratio if iou == "boundary" else None,
            "metrics": metrics,
            "per_category_ap": {str(cats[c].get("name", c)): _finite_or_none(ap) for c, ap in per_cat.items()},
        }
        _write_json(args.json_out, doc)
    return 0


def _finite_or_none(x: float):
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def _write_json(path: str, doc) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(tmp, path)


def _run_demo(args) -> int:
    from .coco import COCO
    from .cocoeval import COCOeval
    from .demo import demo_paths

    gt_path, dt_path = demo_paths()
    print(f"No --gt/--dt given: evaluating the bundled demo ({os.path.basename(gt_path)}, "
          f"{os.path.basename(dt_path)}): synthetic shapes, blobby low-resolution predictions.")
    stats = {}
    tic = time.time()
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(gt_path)
        dt = gt.loadRes(dt_path)
        for iou in ("segm", "boundary"):
            ev = COCOeval(gt, dt, iouType=iou, dilation_ratio=args.dilation_ratio,
                          use_fast_impl=not args.slow, num_threads=args.threads)
            ev.evaluate()
            ev.accumulate()
            ev.summarize()
            stats[iou] = coco_stats(ev)
    n_img, n_gt, n_dt = len(gt.imgs), len(gt.anns), len(dt.anns)
    print(f"{n_img} images, {n_gt} ground-truth masks, {n_dt} predictions "
          f"(dilation ratio {args.dilation_ratio:g}), evaluated twice in {time.time() - tic:.2f}s\n")
    print(f"  {'metric':<8}{'Mask AP':>10}{'Boundary AP':>14}")
    for name in COCO_STAT_NAMES:
        print(f"  {name:<8}{stats['segm'][name]:>10.3f}{stats['boundary'][name]:>14.3f}")
    print("\nBoundary AP is lower: the predictions' outlines are off by a few pixels, which mask IoU "
          "hardly sees.\nEvaluate your own results: boundary-eval --gt GT.json --dt RESULTS.json")
    if args.json_out:
        _write_json(args.json_out, {"gt": gt_path, "dt": dt_path, "dataset": "demo",
                                    "metrics": {"segm": stats["segm"], "boundary": stats["boundary"]}})
    return 0


def _run_panoptic(args) -> int:
    from .panoptic import pq_compute

    results = pq_compute(args.gt_json, args.pred_json, gt_folder=args.gt_folder,
                         pred_folder=args.pred_folder, iou_type=args.iou_type,
                         dilation_ratio=args.dilation_ratio, num_threads=args.threads)
    if args.json_out:
        doc = {"gt_json": args.gt_json, "pred_json": args.pred_json, "iou_type": args.iou_type,
               "dilation_ratio": args.dilation_ratio if args.iou_type == "boundary" else None}
        doc.update({k: results[k] for k in ("All", "Things", "Stuff") if k in results})
        doc["per_class"] = {str(k): v for k, v in results.get("per_class", {}).items()}
        _write_json(args.json_out, doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
