"""``boundary-eval report --gt GT.json --dt RESULTS.json --out report.html``: one
self-contained HTML report (or ``--format png``: the figures alone)."""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time

import stat

from ._common import PROG, HelpFormatter, InputError, positive_int
from .analyze import add_input_flags, load, threshold

log = logging.getLogger("boundary_api")


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} report",
        description="Why is Boundary AP low? (COCO or LVIS ground truth.) Mask AP and Boundary AP side by side, TIDE's error breakdown "
                    "with boundary errors, precision-recall curves per size, Mask AP against Boundary AP per "
                    "category (sortable by the gap), the objects whose boundary band covers them whole, and "
                    "thumbnails of the worst boundary errors, in one HTML file that needs no network.",
        formatter_class=HelpFormatter)
    add_input_flags(p)
    p.add_argument("--iou-type", choices=("boundary", "bbox"), default="boundary",
                   help="boundary: Mask IoU and Boundary IoU side by side (with TIDE's breakdown on COCO ground "
                        "truth); bbox: box IoU (results may be boxes only; no error breakdown, coverage or "
                        "thumbnails: the report says so)")
    p.add_argument("--out", required=True, metavar="PATH",
                   help="the HTML file to write (--format html) or the directory for the PNG files (--format png)")
    p.add_argument("--format", choices=("html", "png"), default="html",
                   help="html: one self-contained report; png: the figures alone, one file each")
    p.add_argument("--images", metavar="DIR",
                   help="directory of the images (by the ground truth's file_name): thumbnails are drawn over "
                        "them instead of a blank canvas")
    p.add_argument("--worst", type=positive_int, default=12, metavar="N",
                   help="how many of the worst boundary errors to show")
    p.add_argument("--resamples", type=int, default=200, metavar="N",
                   help="bootstrap resamples of the confidence intervals (0: none)")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="seed of the bootstrap")
    p.add_argument("--confusion-iou", type=threshold, default=0.5, metavar="T",
                   help="IoU threshold of the confusion matrix and the calibration (among 0.50:0.05:0.95)")
    p.add_argument("--iou-thrs", default="0.5,0.75", metavar="T,T",
                   help="IoU thresholds of the precision-recall curves (among 0.50:0.05:0.95)")
    return p


def _thresholds(text):
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise InputError(f"--iou-thrs: not a comma-separated list of numbers: {text!r}") from None
    allowed = [round(0.5 + 0.05 * i, 2) for i in range(10)]
    bad = [v for v in values if round(v, 2) not in allowed or abs(round(v, 2) - v) > 1e-9]
    if not values or bad:
        raise InputError(f"--iou-thrs: thresholds must be among 0.50, 0.55, ..., 0.95; got {text!r}")
    return values


class _Progress:
    """A tqdm bar on a terminal once the work has taken more than a few seconds."""

    def __init__(self, total):
        self.total, self.done, self.bar, self.start = total, 0, None, time.time()

    def __call__(self, label):
        self.done += 1
        if self.bar is None and sys.stderr.isatty() and time.time() - self.start > 2.0:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=self.total, initial=self.done - 1, desc=PROG, leave=False)
        if self.bar is not None:
            self.bar.set_postfix_str(label)
            self.bar.update(1)

    def close(self):
        if self.bar is not None:
            self.bar.close()


def run(args) -> int:
    from ..report import collect, figures, write_html, write_pngs

    if args.images is not None and not os.path.isdir(args.images):
        raise InputError(f"--images: not a directory: {args.images}")
    thrs = _thresholds(args.iou_thrs)
    if args.format == "html":
        if os.path.isdir(args.out):
            raise InputError(f"--out {args.out} is a directory; --format html writes one file")
        if os.path.islink(args.out) or (os.path.exists(args.out) and not stat.S_ISREG(os.stat(args.out).st_mode)):
            raise InputError(f"--out {args.out}: not a regular file")
        for flag, path in (("--gt", args.gt), ("--dt", args.dt)):
            if os.path.exists(args.out) and os.path.exists(path) and os.path.samefile(args.out, path):
                raise InputError(f"--out {args.out} is the file given to {flag}; it would be overwritten")
        parent = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(parent):
            raise InputError(f"--out: directory does not exist: {parent}")
    else:
        parent = os.path.dirname(os.path.abspath(args.out))
        if not os.path.isdir(parent):
            raise InputError(f"--out: directory does not exist: {parent}")
        if os.path.exists(args.out) and not os.path.isdir(args.out):
            raise InputError(f"--out {args.out} is a file; --format png writes a directory of PNG files")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise InputError("the report needs matplotlib: pip install matplotlib") from None
    if args.resamples < 0 or args.seed < 0:
        raise InputError("--resamples and --seed must be >= 0")
    gt, dt = load(args)
    progress = _Progress(total=6)
    try:
        data = collect(gt, dt, dilation_ratio=args.dilation_ratio, iou_thrs=thrs,
                       pos_threshold=args.pos_threshold, background_threshold=args.background_threshold,
                       max_dets=100 if args.max_dets is None else args.max_dets, num_threads=args.threads, worst=args.worst, step=progress,
                       resamples=args.resamples, seed=args.seed, diagnostics_iou=args.confusion_iou,
                       iou_type=args.iou_type)
        figs = figures(data, gt, dt, args.images)
        progress("figures")
    finally:
        progress.close()
    if args.format == "html":
        write_html(args.out, data, figs, title=f"Boundary AP report: {os.path.basename(args.dt)}")
    else:
        write_pngs(args.out, figs)
    if not args.quiet:
        print(f"{PROG}: wrote {args.out}")
    return 0
