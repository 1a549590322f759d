"""``boundary-eval vos --protocol mosev2`` and ``--protocol lvos``: their own flags
(:func:`add_arguments`) and evaluation (:func:`evaluate`), kept apart from DAVIS' and
SA-V's; ``vos.run`` prints and writes the result as for those."""
from __future__ import annotations

import argparse

from ._common import check_out_path

PROTOCOLS = ("mosev2", "lvos")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The MOSEv2 and LVOS flag groups (MOSEv2 also reads --gt-root, --dt-root and
    --not-strict of the SA-V group, LVOS --results and --csv-dir of DAVIS')."""
    m = p.add_argument_group("MOSEv2 (--protocol mosev2; with --gt-root ANNOTATIONS --dt-root PREDICTIONS)")
    m.add_argument("--meta", metavar="META.json",
                   help="MOSEv2's meta.json: per video its objects, length, height and width")
    m.add_argument("--output", metavar="DIR",
                   help="write score.py's metrics.json and scores.txt there")
    m.add_argument("--video-order", choices=("listdir", "sorted"), default="listdir",
                   help="listdir: the videos in the order os.listdir gives the annotations folder, as score.py "
                        "(it orders the table and, in the last bits, the means); sorted: by name")
    lv = p.add_argument_group("LVOS (--protocol lvos; with --results DIR and --csv-dir DIR)")
    lv.add_argument("--lvos-root", "--lvos_path", dest="lvos_root", metavar="DIR",
                    help="the LVOS folder: Annotations and <set>_meta.json")
    lv.add_argument("--lvos-set", choices=("valid", "test"), default="valid",
                    help="the meta file <set>_meta.json to read")
    lv.add_argument("--lvos-task", choices=("semi-supervised", "unsupervised_multiple", "unsupervised_single"),
                    default="semi-supervised", metavar="TASK",
                    help="lvos-evaluation's task: semi-supervised, unsupervised_multiple or unsupervised_single")
    lv.add_argument("--unseen-videos", metavar="FILE",
                    help="the list of unseen videos (default: unseen_videos.txt in the current directory, "
                         "as lvos-evaluation)")
    lv.add_argument("--unsupervised-videos", metavar="FILE",
                    help="the list of videos of the unsupervised_single task (default: unsupervised_videos.txt "
                         "in the current directory)")


def _error(p, message: str):
    p.error(message)


def evaluate(args, parser):
    """Evaluate with the MOSEv2 or LVOS protocol (one library call): the result,
    the line printed above its table, the inputs (for --json-out) and the folder
    of the official files (or None)."""
    from ..video import evaluate_lvos, evaluate_mosev2

    # (flags of the DAVIS and SA-V protocols that these two do not take: refused,
    # never silently left out)
    other = [flag for flag, value in (("--per-frame", args.per_frame), ("--report", args.report),
                                      ("--davis-root", args.davis_root), ("--task", args.task),
                                      ("--sequences", args.sequences), ("--codalab", args.codalab))
             if value]
    if other:
        _error(parser, f"{', '.join(other)}: not taken by --protocol {args.protocol} (davis and sav only)")
    if args.demo:
        from ..video.synthetic import write_demo

        given = [f for f, v in (("--meta", args.meta), ("--gt-root", args.gt_root), ("--dt-root", args.dt_root),
                                ("--lvos-root", args.lvos_root), ("--results", args.results)) if v]
        if given:
            _error(parser, f"--demo writes its own data: leave out {', '.join(given)}")
        paths = write_demo(args.protocol, args.demo)
        if not args.quiet:
            print(f"wrote a generated {args.protocol} set in {args.demo}")
        args.meta, args.gt_root, args.dt_root = paths.get("meta"), paths.get("gt_root"), paths.get("pred_root")
        args.lvos_root, args.results = paths.get("lvos_root"), paths.get("results")
        if args.protocol == "lvos" and not args.unseen_videos:
            args.unseen_videos, args.unsupervised_videos = paths["unseen_videos"], paths["unsupervised_videos"]
    if args.protocol == "mosev2":
        if not args.meta or not args.gt_root or not args.dt_root:
            _error(parser, "--meta, --gt-root and --dt-root are needed for --protocol mosev2")
        inputs = {"--meta": args.meta, "--gt-root": args.gt_root, "--dt-root": args.dt_root}
        check_out_path(args.json_out, files={"--meta": args.meta},
                       folders={"--gt-root": args.gt_root, "--dt-root": args.dt_root})
        result = evaluate_mosev2(args.meta, args.gt_root, args.dt_root, metrics=args.metric, strict=args.strict,
                                 num_threads=args.threads, dilation_ratio=args.dilation_ratio,
                                 video_order=args.video_order)
        title, out_dir = "MOSEv2 J, F_new and F (percent)", args.output
    else:
        if not args.lvos_root or not args.results:
            _error(parser, "--lvos-root and --results are needed for --protocol lvos")
        inputs = {"--lvos-root": args.lvos_root, "--results": args.results}
        check_out_path(args.json_out, folders=inputs)
        metrics = list(args.metric)
        if "J" in metrics and "F" in metrics:
            metrics.insert(2, "V")
        result = evaluate_lvos(args.lvos_root, args.results, task=args.lvos_task, gt_set=args.lvos_set,
                               metrics=metrics, unseen_videos=args.unseen_videos,
                               unsupervised_videos=args.unsupervised_videos, num_threads=args.threads,
                               dilation_ratio=args.dilation_ratio)
        title, out_dir = f"LVOS {args.lvos_task}, {args.lvos_set}: J&F and V", args.csv_dir
    return result, title + (" and Boundary IoU" if "B" in args.metric else ""), inputs, out_dir
