"""``boundary-eval vos``: J&F of video object segmentation results (DAVIS 2017,
SA-V), with Boundary IoU per frame as a third measure (``--metric J F B``)."""
from __future__ import annotations

import argparse

from ._common import (PROG, ExamplesHelpFormatter, InputError, add_common_flags, check_out_path, positive_int,
                      ratio)
from .output import build_document, write_csv_rows, write_json
from . import vos_mosev2_lvos

EXAMPLES = """examples:
  boundary-eval vos --demo davis_demo
      a small generated DAVIS set written into davis_demo/, then evaluated
  boundary-eval vos --davis-root DAVIS --results results/my_method
      DAVIS 2017 val, semi-supervised: J&F, recall and decay per object
  boundary-eval vos --davis-root DAVIS --results props/ --task unsupervised \\
      --csv-dir out/
      the unsupervised task; evaluation_method.py's CSV files written to out/
  boundary-eval vos --davis_path DAVIS --results_path proposals/
      evaluation_method.py's own command line, with its defaults
      (--task unsupervised, --set val)
  boundary-eval vos --davis-root DAVIS --results res/ --metric J F B \\
      --per-frame f.csv --report r.html
      with Boundary IoU; every frame's values in f.csv; the worst frames'
      outlines in r.html
  boundary-eval vos --protocol sav --gt-root Annotations_6fps --dt-root preds/
      SA-V val (SAM 2's sav_evaluator.py): J&F in percent
  boundary-eval vos --protocol mosev2 --meta meta.json --gt-root Annotations \\
      --dt-root preds/
      MOSEv2 (MOSE-api's score.py): J, F and the object-adaptive F_new
  boundary-eval vos --protocol lvos --lvos-root LVOS/valid --results res/ \\
      --csv-dir out/
      LVOS (lvos-evaluation): J, F and V, seen and unseen

The DAVIS tables are evaluation_method.py's, printed as it prints them: a
global table and a per-object table, whose rows (<sequence>_<n>) are objects
under its heading "Sequence".
"""

#: the spellings of davis2017-evaluation's evaluation_method.py: given, its defaults apply
OFFICIAL_SPELLINGS = ("--davis_path", "--results_path")
#: --task when it is not given: evaluation_method.py's with its spellings, else semi-supervised
DEFAULT_TASK = {True: "unsupervised", False: "semi-supervised"}


class _Path(argparse.Action):
    """Stores a path and remembers whether evaluation_method.py's spelling gave it."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        if option_string in OFFICIAL_SPELLINGS:
            namespace.official_spelling = True


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} vos",
        description="J&F of video object segmentation results, exactly as the official tools compute it: "
                    "DAVIS 2017 (davis2017-evaluation: region similarity J, boundary F-measure F, their "
                    "mean, recall and decay per object) or SA-V (SAM 2's sav_benchmark: objects scored from "
                    "their first appearance, percent). --metric B adds the paper's Boundary IoU per frame.",
        epilog=EXAMPLES, formatter_class=lambda prog: ExamplesHelpFormatter(prog, max_help_position=30))
    p.set_defaults(official_spelling=False)
    p.add_argument("--protocol", choices=("davis", "sav") + vos_mosev2_lvos.PROTOCOLS, default="davis",
                   help="davis: davis2017-evaluation's DAVISEvaluation; sav: SA-V's benchmark; mosev2: MOSE-api's "
                        "score.py (J, F and the object-adaptive F_new); lvos: lvos-evaluation's LVOSEvaluation")
    d = p.add_argument_group("DAVIS (--protocol davis)")
    d.add_argument("--davis-root", "--davis_path", dest="davis_root", metavar="DIR", action=_Path,
                   help="the DAVIS folder: JPEGImages/480p, Annotations/480p (semi-supervised), "
                        "Annotations_unsupervised/480p, ImageSets/2017 (docs/video.md shows the tree)")
    d.add_argument("--results", "--results_path", dest="results", metavar="DIR", action=_Path,
                   help="results folder: one folder per sequence of indexed PNGs named as the annotations")
    d.add_argument("--task", choices=("semi-supervised", "unsupervised"), default=None,
                   help="semi-supervised: first and last frames not evaluated; unsupervised: up to 20 "
                        "proposals matched to the objects, void pixels left out (default: semi-supervised; "
                        "unsupervised, as evaluation_method.py, when its spellings --davis_path / "
                        "--results_path are used)")
    d.add_argument("--set", dest="gt_set", choices=("train", "val", "test-dev", "test-challenge"), default="val",
                   help="the ImageSets list of sequences to evaluate")
    d.add_argument("--sequences", nargs="+", metavar="NAME",
                   help="evaluate these sequences only (default: all of --set)")
    d.add_argument("--codalab", action="store_true",
                   help="sequences need no JPEGImages (only the annotations), as the official codalab mode")
    d.add_argument("--decay", choices=("official", "exact"), default="official",
                   help="official: the decay bins as davis2017-evaluation makes them (wrong past 256 frames, "
                        "where its bin bounds wrap around); exact: without that wrap")
    d.add_argument("--csv-dir", metavar="DIR",
                   help="also write the official CSV files there: DAVIS' global_results-<set>.csv and "
                        "per-sequence_results-<set>.csv, SA-V's results.csv")
    s = p.add_argument_group("SA-V (--protocol sav)")
    s.add_argument("--gt-root", "--gt_root", dest="gt_root", metavar="DIR",
                   help="ground truth: one folder per video, of per-object folders of binary PNGs (SA-V) or "
                        "of indexed PNGs (DAVIS-like)")
    s.add_argument("--dt-root", "--pred-root", "--pred_root", dest="dt_root", metavar="DIR",
                   help="predictions, in the layout of --gt-root")
    s.add_argument("--do-not-skip-first-and-last-frame", "--do_not_skip_first_and_last_frame",
                   dest="no_skip", action="store_true",
                   help="evaluate each object's first and last annotated frames too (not standard for SA-V "
                        "val/test)")
    s.add_argument("--not-strict", dest="strict", action="store_false",
                   help="evaluate the videos that are in both folders (by default a folder that lacks videos "
                        "of the other is refused)")
    vos_mosev2_lvos.add_arguments(p)
    p.add_argument("--demo", metavar="DIR",
                   help="write a small generated set in the layout of --protocol into DIR (new or empty) "
                        "and evaluate it: DIR/DAVIS and DIR/results, or DIR/gt and DIR/pred")
    p.add_argument("--metric", nargs="+", choices=("J", "F", "B"), default=["J", "F"],
                   help="J: region similarity (mask IoU); F: DAVIS' boundary F-measure; B: Boundary IoU "
                        "(Cheng et al. 2021) of each frame's masks (default: J F)")
    p.add_argument("--dilation-ratio", type=ratio, default=0.02, metavar="R",
                   help="Boundary IoU's band width as a fraction of the frame diagonal (metric B)")
    p.add_argument("--json-out", metavar="PATH",
                   help="write the settings, the global numbers and one entry per object to this JSON file "
                        "(schema: docs/json_output.md)")
    p.add_argument("--per-frame", metavar="FILE.csv",
                   help="write one row per object and evaluated frame: Sequence (the object, as the tables "
                        "name it), Frame (the annotation's file name without extension), J, F (and B) "
                        "(schema: docs/json_output.md)")
    p.add_argument("--report", metavar="FILE.html",
                   help="write one self-contained page: per object J, F (and B) over the frames, and the "
                        "outlines of its worst frames over the frame (the JPEG if there is one, else the "
                        "ground truth); needs matplotlib")
    p.add_argument("--threads", type=positive_int, default=None, metavar="N",
                   help="threads reading and evaluating frames (default: all cores)")
    add_common_flags(p)
    return p


def run(args) -> int:
    """Evaluate with the protocol (one library call), print the official table,
    write what was asked."""
    if args.protocol in vos_mosev2_lvos.PROTOCOLS:
        result, heading, inputs, out_dir = vos_mosev2_lvos.evaluate(args, parser())
        title = heading
    else:
        result, title, inputs = _evaluate(args)
        heading = title + (", with Boundary IoU (B)" if "B" in args.metric else "")
        out_dir = args.csv_dir
    print(heading)
    print(result.table())
    if not args.quiet:
        print(f"evaluated in {result.seconds:.2f}s")
    if out_dir:
        for path in result.write_csv(out_dir):
            if not args.quiet:
                print(f"wrote {path}")
    if args.per_frame:
        write_csv_rows(args.per_frame, result.per_frame_rows(), ["Sequence", "Frame"] + result.settings["metrics"])
    if args.report:
        from ..report.video import write_vos_report

        write_vos_report(args.report, result, title=title)
        if not args.quiet:
            print(f"wrote {args.report}")
    if args.json_out:
        settings = {k: v for k, v in result.settings.items() if not k.startswith("_")}
        settings["protocol"] = args.protocol
        doc = build_document(result.kind, "j&f", None, inputs, result.metrics, settings_extra=settings,
                             extra={"per_object": result.per_object})
        write_json(args.json_out, doc)
    return 0


def _evaluate(args):
    """DAVIS or SA-V (one library call): the result, its title and the inputs."""
    from ..video import evaluate_davis, evaluate_sav

    if args.demo:
        from ..video.synthetic import write_demo

        given = [f for f, v in (("--davis-root", args.davis_root), ("--results", args.results),
                                ("--gt-root", args.gt_root), ("--dt-root", args.dt_root)) if v]
        if given:
            parser().error(f"--demo writes its own data: leave out {', '.join(given)}")
        paths = write_demo(args.protocol, args.demo)
        if not args.quiet:
            print(f"wrote a generated {args.protocol} set in {args.demo}")
        args.davis_root, args.results = paths.get("davis_root"), paths.get("results")
        args.gt_root, args.dt_root = paths.get("gt_root"), paths.get("pred_root")
    if args.protocol == "davis":
        if not args.davis_root or not args.results:
            parser().error("--davis-root and --results are needed for --protocol davis")
        task = args.task or DEFAULT_TASK[args.official_spelling]
        inputs = {"--davis-root": args.davis_root, "--results": args.results}
        _check_outputs(args, inputs)
        result = evaluate_davis(args.davis_root, args.results, task=task, gt_set=args.gt_set,
                                metrics=args.metric, sequences=args.sequences or "all", codalab=args.codalab,
                                num_threads=args.threads, dilation_ratio=args.dilation_ratio, decay=args.decay)
        title = f"DAVIS 2017 J&F (davis2017-evaluation), {task} task, set {args.gt_set}"
    else:
        if not args.gt_root or not args.dt_root:
            parser().error("--gt-root and --dt-root are needed for --protocol sav")
        inputs = {"--gt-root": args.gt_root, "--dt-root": args.dt_root}
        _check_outputs(args, inputs)
        result = evaluate_sav(args.gt_root, args.dt_root, skip_first_and_last=not args.no_skip,
                              metrics=args.metric, strict=args.strict, num_threads=args.threads,
                              dilation_ratio=args.dilation_ratio)
        title = "SA-V J&F (sav_benchmark), semi-supervised task, percent"
    return result, title, inputs


def _check_outputs(args, inputs) -> None:
    """Refuse an output path before anything is evaluated (the checks of
    ``--json-out``), and ``--report`` without matplotlib."""
    for flag, out in (("--json-out", args.json_out), ("--per-frame", args.per_frame), ("--report", args.report)):
        check_out_path(out, folders=inputs, flag=flag)
    if args.report:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise InputError("--report needs matplotlib: pip install matplotlib") from None
