"""``boundary-eval``: Boundary AP / Boundary PQ from result files.

Instance segmentation (COCO or LVIS)::

    boundary-eval --gt instances_val2017.json --dt segm_results.json
    boundary-eval --gt lvis_v1_val.json --dt results.json --iou-type boundary

Cityscapes instance segmentation (cityscapesScripts' files)::

    boundary-eval cityscapes --gt-dir gtFine/val --result-dir results/ --iou-type boundary

Panoptic segmentation::

    boundary-eval panoptic --gt-json panoptic_val2017.json --gt-folder panoptic_val2017/ \\
        --pred-json pred.json --pred-folder pred/ --iou-type boundary

Is A better than B, beyond the noise of the evaluation set (paired bootstrap)::

    boundary-eval compare --gt instances_val2017.json --dt A.json --dt B.json --resamples 1000

Semantic segmentation (PNG label maps)::

    boundary-eval semantic --gt-dir gt/ --pred-dir pred/ --num-classes 19 --json-out m.json

Video object segmentation (DAVIS 2017 / SA-V J&F) and video instance
segmentation (YouTube-VIS AP, HQ-YTVIS Tube-Boundary AP)::

    boundary-eval vos --davis-root DAVIS --results results/ --metric J F B
    boundary-eval vis --gt valid.json --dt results.json --iou-type boundary

SAM 3's cgF1 of concept segmentation on SA-Co (and Boundary cgF1)::

    boundary-eval saco --gt gold_a.json gold_b.json gold_c.json --dt preds.json --iou-type segm boundary

With no arguments it evaluates a small bundled demo and prints Mask AP and
Boundary AP side by side.

Exit status: 0 on success, 2 on bad input or arguments (one line on stderr),
130 when interrupted (Ctrl-C), 143 on SIGTERM (temporary files are removed
in both cases), 141 (128 + SIGPIPE, as for a tool killed by SIGPIPE)
when the reader of standard output went away, e.g. ``| head -1``; the
evaluation still finishes and ``--json-out`` is still written then.
"""
from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
import warnings
from typing import List, Optional

from . import demo, instances, streaming
from ._common import PROG, Terminated, terminate_cleanly

#: exit status when standard output is a closed pipe (as if killed by SIGPIPE)
EXIT_BROKEN_PIPE = 128 + getattr(signal, "SIGPIPE", 13)


class _PipeGuard:
    """Standard output that stops writing, instead of raising, once its reader
    has gone away (``BrokenPipeError``), so the evaluation and ``--json-out``
    are not lost to ``boundary-eval ... | head -1``."""

    def __init__(self, target):
        self.target = target
        self.broken = False

    def write(self, text):
        if self.broken:
            return len(text)
        try:
            return self.target.write(text)
        except BrokenPipeError:
            self.broken = True
            return len(text)

    def flush(self):
        if self.broken:
            return
        try:
            self.target.flush()
        except BrokenPipeError:
            self.broken = True

    def __getattr__(self, name):
        return getattr(self.target, name)


def _silence_stdout(stream) -> None:
    """Point the process's standard output at the null device, so that the
    interpreter's last flush cannot fail again."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


#: subcommands: name -> module of boundary_api.cli with ``parser()`` and ``run(args)``;
#: without one of these first, the words are the instance command's (or the demo's)
SUBCOMMANDS = ("panoptic", "cityscapes", "semantic", "measures", "sensitivity", "synthetic", "analyze",
               "report", "shard", "compare", "diagnose", "vos", "vis", "saco")


def _route(argv: List[str]) -> int:
    if argv and argv[0] in SUBCOMMANDS:
        module = importlib.import_module(f".{argv[0]}", __package__)
        return module.run(module.parser().parse_args(argv[1:]))
    if streaming.wanted(argv):  # JSON Lines / folders, --chunk-images, Dask (issue 17)
        return streaming.run(streaming.parser().parse_args(argv))
    if "-h" in argv or "--help" in argv:  # the instance command's help, streaming flags included
        streaming.parser().parse_args(["--help"])
    parser = instances.instance_parser()
    args = parser.parse_args(argv)
    if args.gt is None and args.dt is None:
        return demo.run(args)
    if args.gt is None or args.dt is None:
        parser.error("--gt and --dt are needed together (or neither, for the demo)")
    return instances.run(args)


#: exit status after SIGTERM (as if killed by it)
EXIT_TERMINATED = 128 + signal.SIGTERM


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A Python warning as one line on stderr, like the command's other messages."""
    print(f"{PROG}: warning: {message}", file=sys.stderr if file is None else file)


def main(argv: Optional[List[str]] = None) -> int:
    """Entry point of ``boundary-eval``; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.WARNING, format=f"{PROG}: %(levelname)s: %(message)s")
    original = sys.stdout
    guard = _PipeGuard(original)
    sys.stdout = guard
    saved_show = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        with terminate_cleanly():
            status = _route(argv)
        guard.flush()
    except SystemExit:  # argparse: --help, --version, usage errors
        guard.flush()
        if not guard.broken:
            raise
        status = EXIT_BROKEN_PIPE
    except BrokenPipeError:  # written past the guard (a stream saved before main ran)
        guard.broken = True
        status = EXIT_BROKEN_PIPE
    except (ValueError, TypeError, OSError, MemoryError, RecursionError, OverflowError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        status = 2
    except Terminated:
        print(f"{PROG}: terminated", file=sys.stderr)
        status = EXIT_TERMINATED
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        status = 130
    finally:
        sys.stdout = original
        warnings.showwarning = saved_show
    if guard.broken:
        _silence_stdout(original)
        return EXIT_BROKEN_PIPE
    return status


if __name__ == "__main__":
    sys.exit(main())
