"""``boundary-eval --gt GT.json --dt RESULTS.json``: COCO / LVIS instance evaluation."""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import logging
import time

import numpy as np

from .._io import read_json
from ..instance._checks import check_instances_dataset, check_rle_dict, describe_unknown_ids, unknown_categories
from ..instance.results import per_category_metrics
from ._common import PROG, HelpFormatter, InputError, add_common_flags, check_out_path, positive_int, quiet, ratio
from .output import build_document, coco_summary, write_json

log = logging.getLogger("boundary_api")

#: what each --iou-type reports, for the header line above the table
LABELS = {"boundary": "Boundary AP", "segm": "Mask AP", "bbox": "Box AP"}


def instance_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=PROG,
        description="Boundary AP (Cheng et al., CVPR 2021) and COCO/LVIS Mask and box AP for a "
                    "result JSON against a ground-truth JSON (.json or .json.gz). "
                    "Without --gt/--dt: run the bundled demo.",
        epilog=f"Other subcommands (each with --help): '{PROG} panoptic' (Boundary PQ), "
               f"'{PROG} cityscapes' (Cityscapes instance Boundary AP), '{PROG} semantic' (mIoU and "
               f"Boundary IoU per class), '{PROG} measures' (every measure for one mask pair), "
               f"'{PROG} analyze' and '{PROG} report' (error analysis, HTML report), "
               f"'{PROG} sensitivity' and '{PROG} synthetic' (the paper's analysis), "
               f"'{PROG} shard' (split files into image shards).",
        formatter_class=HelpFormatter,
    )
    p.add_argument("--gt", "--gt-json-file", dest="gt", metavar="GT.json",
                   help="ground truth: COCO or LVIS instances JSON")
    p.add_argument("--dt", "--dt-json-file", dest="dt", metavar="DT.json",
                   help="results: JSON list of {image_id, category_id, segmentation (compressed RLE) "
                        "or bbox, score}")
    p.add_argument("--iou-type", choices=("boundary", "segm", "bbox"), default="boundary",
                   help="boundary: min(mask IoU, boundary IoU) = Boundary AP; segm: Mask AP; bbox: box AP")
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
                        "as in pycocotools; 300 for LVIS)")
    p.add_argument("--rec-thrs", type=rec_thrs, default=101, metavar="N",
                   help="recall points at which the interpolated precision is sampled: 101 (COCO) or "
                        "11 (PASCAL VOC2007 11-point AP)")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads for the kernels (default: all cores)")
    p.add_argument("--slow", action="store_true",
                   help="match and accumulate with pycocotools'/lvis' own Python loops (same numbers)")
    add_common_flags(p)
    return p


def rec_thrs(text: str) -> int:
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"needs at least 2 recall points (0 and 1), got {value}")
    return value


def _looks_like_lvis(dataset) -> bool:
    if not isinstance(dataset, dict):
        return False
    imgs, cats = dataset.get("images"), dataset.get("categories")
    if not isinstance(imgs, list) or not isinstance(cats, list) or not imgs or not cats:
        return False
    return (isinstance(imgs[0], dict) and "neg_category_ids" in imgs[0]
            and isinstance(cats[0], dict) and "frequency" in cats[0])


def _check_ground_truth_masks(gt_data, args) -> None:
    """What mask evaluations need of the ground truth, checked up front so that
    the error names the file: every annotation has a segmentation, and RLEs
    fit their image (polygons are checked on loading)."""
    images = {img["id"]: img for img in gt_data["images"]}
    for ann in gt_data["annotations"]:
        seg = ann.get("segmentation")
        where = f"{args.gt}: annotation id {ann['id']!r} (image {ann['image_id']!r})"
        if seg is None:
            raise InputError(f"{where} has no 'segmentation', which --iou-type {args.iou_type} needs")
        if type(seg) is dict:
            img = images[ann["image_id"]]
            check_rle_dict(seg, img["height"], img["width"], where)


def _check_results_file(dt_data, args, gt_data) -> None:
    """Command-line checks of the results, with flag names and both file names."""
    if isinstance(dt_data, dict) and any(k in dt_data for k in ("images", "annotations", "categories")):
        raise InputError(f"{args.dt}: results must be a list of objects, got a JSON object: it looks like "
                         "a ground truth file (were --gt and --dt swapped?)")
    if not isinstance(dt_data, list):
        return  # check_results names the problem
    first = dt_data[0] if dt_data and isinstance(dt_data[0], dict) else {}
    if (args.iou_type in ("segm", "boundary") and "segmentation" not in first
            and first.get("bbox") not in (None, [])):
        raise InputError(f"--iou-type {args.iou_type} needs results with a 'segmentation' (compressed RLE); "
                         f"{args.dt} only has boxes (use --iou-type bbox)")
    gt_cats = [c["id"] for c in gt_data["categories"]]
    bad = unknown_categories([a for a in dt_data if isinstance(a, dict)], gt_cats)
    if bad:
        raise InputError(f"{args.dt}: results use category ids that {args.gt} does not have: "
                         f"{describe_unknown_ids(bad, gt_cats)}")


def _load_as_columns(args):
    """Ground truth and results read as columns (``COCO(path)`` and
    ``loadRes(path)``, or ``LVIS(path)`` and ``LVISResults(gt, path)``), when
    both files are in the schemas and pass every check this command makes:
    ``(lvis, gt, dt)``; else None (the files are then read as dicts and checked
    one by one, which words the problem)."""
    from ..coco import dataset as coco_module

    printed = io.StringIO()  # shown only if this path is taken (else the dict path prints its own)
    try:
        with contextlib.redirect_stdout(printed):
            tic = time.time()
            gtc = None if args.lvis else coco_module.load_ground_truth_columns(args.gt, args.gt)
            if gtc is not None and not _looks_like_lvis({"images": gtc.images, "categories": gtc.categories}):
                loaded = _coco_columns(args, coco_module.COCO._from_columns(gtc, tic, strict=True), gtc)
            else:
                loaded = _lvis_columns(args)
    except (ValueError, TypeError):
        return None
    if loaded is not None and not args.quiet:
        sys.stdout.write(printed.getvalue())
    return loaded


def _coco_columns(args, gt, gtc):
    if args.iou_type in ("segm", "boundary") and not gtc.masks_ready(args.threads):
        return None
    dt = gt.loadRes(args.dt, strict=True)
    cols = dt._columns
    if cols is None or (args.iou_type in ("segm", "boundary") and not cols.has_segmentation):
        return None
    if not _known_categories(cols, gt):
        return None
    return False, gt, dt


def _lvis_columns(args):
    from ..instance._gt_columns import load_ground_truth_columns
    from ..lvis import LVIS

    gtc = load_ground_truth_columns(args.gt, args.gt, lvis=True)
    if gtc is None or not (args.lvis or _looks_like_lvis({"images": gtc.images, "categories": gtc.categories})):
        return None
    if args.iou_type in ("segm", "boundary") and not gtc.masks_ready(args.threads):
        return None
    with quiet(args.quiet):
        gt = LVIS._from_columns(gtc, strict=True)
    dt = _lvis_results_as_columns(args, gt, _lvis_max_dets(args))
    return None if dt is None else (True, gt, dt)


def _known_categories(cols, gt) -> bool:
    """Whether every result's category is in the ground truth (else the dict
    path words the error)."""
    return set(np.unique(cols.category_id).tolist()) <= gt.cats.keys()


def _lvis_max_dets(args) -> int:
    return args.max_dets if args.max_dets is not None else 300


def _lvis_results_as_columns(args, gt, max_dets: int):
    """LVIS results read as columns (``LVISResults(gt, path)``) when the file
    is in the schema and passes every check this command makes; else None
    (the file is then read as dicts and checked one by one, which words the
    problem)."""
    from ..lvis import LVISResults

    try:
        dt = LVISResults(gt, args.dt, max_dets=max_dets, strict=True)
    except (ValueError, TypeError):
        return None
    cols = dt._columns
    if cols is None or (args.iou_type in ("segm", "boundary") and not cols.has_segmentation):
        return None
    return dt if _known_categories(cols, gt) else None


def run(args) -> int:
    from ..coco.dataset import COCO
    from ..coco.cocoeval import COCOeval

    inputs = {"--gt": args.gt, "--dt": args.dt}
    check_out_path(args.json_out, files=inputs)
    tic = time.time()
    loaded = _load_as_columns(args)
    if loaded is not None:
        lvis, gt, dt = loaded
        if lvis:
            _evaluate_lvis(args, gt, dt, inputs, tic)
        else:
            _evaluate_coco(args, gt, dt, COCOeval, inputs, tic)
        return 0
    gt_data = read_json(args.gt, "ground truth")
    lvis = args.lvis or _looks_like_lvis(gt_data)
    check_instances_dataset(gt_data, args.gt, lvis=lvis, warn_empty=False)  # warned when loaded below
    if args.iou_type in ("segm", "boundary"):
        _check_ground_truth_masks(gt_data, args)
    if lvis:
        from ..lvis import LVIS, LVISResults

        max_dets = _lvis_max_dets(args)
        with quiet(args.quiet):
            gt = LVIS(args.gt, _loaded=gt_data, strict=True)
            dt = _lvis_results_as_columns(args, gt, max_dets)
        if dt is None:
            dt_data = read_json(args.dt, "results")
            _check_results_file(dt_data, args, gt_data)
            with quiet(args.quiet):
                dt = LVISResults(gt, args.dt, max_dets=max_dets, _loaded=dt_data, strict=True)
        _evaluate_lvis(args, gt, dt, inputs, tic)
    else:
        dt_data = read_json(args.dt, "results")
        _check_results_file(dt_data, args, gt_data)
        with quiet(args.quiet):
            gt = COCO.from_dataset(gt_data, args.gt, strict=True)
            dt = gt.loadRes(dt_data, _source=args.dt, strict=True)
        _evaluate_coco(args, gt, dt, COCOeval, inputs, tic)
    return 0


def table_title(lvis: bool, iou_type: str, dilation_ratio: float, max_dets: int) -> str:
    """The line above every instance table: the rules, what was measured (the
    IoU type, with its dilation ratio) and the detections per image."""
    label = LABELS[iou_type] + (f" (dilation ratio {dilation_ratio:g})" if iou_type == "boundary" else "")
    return f"{'LVIS' if lvis else 'COCO'} {label}, up to {max_dets} detections per image:"


def _evaluate_lvis(args, gt, dt, inputs, tic) -> None:
    from ..lvis import LVISEval

    iou = args.iou_type
    max_dets = _lvis_max_dets(args)
    with quiet(args.quiet):
        ev = LVISEval(gt, dt, iou_type=iou, max_dets=max_dets, dilation_ratio=args.dilation_ratio,
                      use_fast_impl=not args.slow, num_threads=args.threads)
        ev.params.rec_thrs = np.linspace(0.0, 1.0, args.rec_thrs)
        ev.run()
    print(table_title(True, iou, args.dilation_ratio, max_dets))
    ev.print_results()
    _report(args, ev, gt, dict(ev.get_results()), True, max_dets, inputs, tic)


def _evaluate_coco(args, gt, dt, COCOeval, inputs, tic) -> None:
    iou = args.iou_type
    max_dets = args.max_dets if args.max_dets is not None else 100
    with quiet(args.quiet):
        ev = COCOeval(gt, dt, iouType=iou, dilation_ratio=args.dilation_ratio,
                      use_fast_impl=not args.slow, num_threads=args.threads)
        ev.params.recThrs = np.linspace(0.0, 1.0, args.rec_thrs)
        if args.max_dets is not None:
            ev.params.maxDets = [1, min(10, max_dets), max_dets]
        ev.evaluate()
        ev.accumulate()
    print(table_title(False, iou, args.dilation_ratio, max_dets))
    metrics = coco_summary(ev)  # AP at --max-dets, not pycocotools' -1 at 100 (issue 25)
    _report(args, ev, gt, metrics, False, max_dets, inputs, tic)


def _report(args, ev, gt, metrics, lvis, max_dets, inputs, tic) -> None:
    iou = args.iou_type
    log.info("evaluated in %.2fs", time.time() - tic)
    if args.json_out:
        cats = gt.cats
        per_category = {}
        for cat_id, row in per_category_metrics(ev).items():
            entry = {"name": cats[cat_id].get("name")}
            if lvis:
                entry["frequency"] = cats[cat_id].get("frequency")
            entry.update(row)
            per_category[cat_id] = entry
        doc = build_document("lvis" if lvis else "coco", iou, args.dilation_ratio, inputs, metrics,
                             per_category, max_dets=max_dets,
                             settings_extra={"rec_thrs": args.rec_thrs})
        write_json(args.json_out, doc)
