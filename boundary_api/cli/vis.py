"""``boundary-eval vis``: YouTube-VIS AP or HQ-YTVIS Tube-Boundary AP of video
instance segmentation results."""
from __future__ import annotations

import argparse

from ._common import PROG, HelpFormatter, add_common_flags, check_out_path, positive_int, ratio
from .instances import IouTypes
from .output import build_document, write_json


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} vis",
        description="Video instance segmentation AP of a YouTube-VIS results file, exactly as the official "
                    "evaluators compute it: --iou-type segm gives YouTube-VIS / OVIS AP (youtubevos/cocoapi: "
                    "the IoU of two tracks is their summed per-frame intersections over their summed unions); "
                    "--iou-type boundary gives HQ-YTVIS' Tube-Boundary AP (min of that and the same sum over "
                    "the frames' Boundary IoU bands).",
        formatter_class=HelpFormatter)
    p.add_argument("--gt", metavar="GT.json", help="YouTube-VIS ground truth JSON")
    p.add_argument("--dt", metavar="RESULTS.json",
                   help="results JSON: a list of {video_id, category_id, score, segmentations}, one "
                        "compressed RLE (or null) per frame")
    p.add_argument("--demo", metavar="DIR",
                   help="write a small generated set into DIR (new or empty: DIR/valid.json, "
                        "DIR/results.json) and evaluate it")
    p.add_argument("--iou-type", nargs="+", choices=("segm", "boundary"), default="segm", action=IouTypes,
                   metavar="TYPE",
                   help="segm: YouTube-VIS AP; boundary: Tube-Boundary AP (default: segm); both (segm "
                        "boundary): each evaluated on one load of the files, its table under its name, "
                        "--json-out {TYPE: document, ...}")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="boundary width as a fraction of the frame diagonal (--iou-type boundary)")
    p.add_argument("--json-out", metavar="PATH",
                   help="write the settings, the 12 summary numbers and per-category AP to this JSON file "
                        "(schema: docs/json_output.md)")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads (default: all cores)")
    add_common_flags(p)
    return p


def run(args) -> int:
    from ..video import evaluate_vis_files

    if args.demo:
        from ..video.synthetic_vis import write_demo

        if args.gt or args.dt:
            parser().error("--demo writes its own data: leave out --gt and --dt")
        paths = write_demo(args.demo)
        if not args.quiet:
            print(f"wrote a generated YouTube-VIS set in {args.demo}")
        args.gt, args.dt = paths["gt"], paths["dt"]
    elif not args.gt or not args.dt:
        parser().error("--gt and --dt are needed (or --demo DIR)")
    inputs = {"--gt": args.gt, "--dt": args.dt}
    check_out_path(args.json_out, files=inputs)
    result = evaluate_vis_files(args.gt, args.dt, iou_type=args.iou_type, dilation_ratio=args.dilation_ratio,
                                num_threads=args.threads, strict=True, quiet=True)
    results = result if isinstance(result, dict) else {args.iou_type: result}
    docs = {}
    for n, (kind, one) in enumerate(results.items()):
        label = ("Tube-Boundary AP (HQ-YTVIS, dilation ratio {:g})".format(args.dilation_ratio)
                 if kind == "boundary" else "YouTube-VIS AP (segm: tube mask IoU)")
        if n:
            print()
        print(label)
        print("\n".join(one.lines))
        docs[kind] = build_document("ytvis", kind, args.dilation_ratio, inputs, one.metrics, one.per_category,
                                    max_dets=one.settings["max_dets"])
    if not args.quiet:
        seconds = max(r.seconds for r in results.values())
        print(f"evaluated in {seconds:.2f}s (per-category results: --json-out)")
    if args.json_out:
        write_json(args.json_out, docs if isinstance(result, dict) else docs[args.iou_type])
    return 0
