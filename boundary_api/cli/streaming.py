"""``boundary-eval --dt results.jsonl --chunk-images N`` (streaming), ``--workers N`` /
``--scheduler ADDRESS`` (Dask), and ``boundary-eval shard`` (image shards on disk).

Chosen by :func:`wanted` when the instance command gets one of these flags, a
``.jsonl`` / ``.ndjson`` result file or a folder of results; the other flags and
the ``--json-out`` document are those of the instance command.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
import time
import warnings
from typing import List

import numpy as np

from ..instance.results import per_category_metrics
from ..scale._inputs import streams_results
from ._common import (PROG, HelpFormatter, InputError, add_common_flags, check_out_path, deferred_termination,
                      positive_int, quiet)
from .output import build_document, coco_summary, write_json

log = logging.getLogger("boundary_api")

_FLAGS = ("--chunk-images", "--workers", "--scheduler", "--manifest", "--shard-dir", "--images-per-shard",
          "--allow-partial")


def wanted(argv: List[str]) -> bool:
    """True when the instance command line asks for streaming or a cluster."""
    for n, a in enumerate(argv):
        if a.split("=", 1)[0] in _FLAGS:
            return True
        if a.split("=", 1)[0] in ("--dt", "--dt-json-file"):
            value = a.split("=", 1)[1] if "=" in a else (argv[n + 1] if n + 1 < len(argv) else "")
            if value and streams_results(value):  # by name, or by content for a pipe
                return True
    return False


def parser() -> argparse.ArgumentParser:
    from .instances import instance_parser

    p = instance_parser()
    p.description = (p.description or "") + (
        " Large result sets: a JSON Lines file (one detection per line) or a folder of result "
        "files is evaluated chunk by chunk of images (--chunk-images), or shard by shard on a "
        "Dask cluster (--workers / --scheduler); the numbers equal one in-memory evaluation.")
    g = p.add_argument_group("streaming and clusters")
    g.add_argument("--chunk-images", type=positive_int, default=1000, metavar="N",
                   help="images evaluated at once when streaming (memory grows with N, not with the "
                        "number of results)")
    g.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="evaluate shards on a local Dask cluster of N worker processes")
    g.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="evaluate shards on the Dask cluster at ADDRESS (e.g. tcp://host:8786); "
                        "--shard-dir must then be a folder every worker can read")
    g.add_argument("--shard-dir", default=None, metavar="DIR",
                   help="with --workers/--scheduler: where --gt/--dt are split into shards "
                        "(default: a temporary folder, removed afterwards)")
    g.add_argument("--images-per-shard", type=positive_int, default=None, metavar="N",
                   help="with --workers/--scheduler: images per shard (default: --chunk-images)")
    g.add_argument("--manifest", default=None, metavar="PATH",
                   help="evaluate the shards of a manifest written by 'boundary-eval shard' "
                        "(instead of --gt/--dt)")
    g.add_argument("--allow-partial", action="store_true",
                   help="with --manifest: evaluate the shards it lists even when entries are missing "
                        "(refused otherwise: the numbers would cover only part of the data)")
    return p


def shard_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog=f"{PROG} shard",
        description="Split a COCO/LVIS ground truth (and its results) into image shards: "
                    "shard_NNNNN.gt.json, shard_NNNNN.dt.jsonl and manifest.json, for "
                    f"'{PROG} --manifest OUT/manifest.json --scheduler ADDRESS'.",
        formatter_class=HelpFormatter,
    )
    p.add_argument("--gt", required=True, metavar="GT.json", help="ground truth: COCO or LVIS instances JSON")
    p.add_argument("--dt", default=None, metavar="RESULTS",
                   help="results to split along: JSON list, JSON Lines file or folder of result files")
    p.add_argument("--out-dir", required=True, metavar="DIR", help="folder for the shards (created)")
    p.add_argument("--images-per-shard", type=positive_int, default=1000, metavar="N",
                   help="images per shard")
    add_common_flags(p)
    return p


def run_shard(args) -> int:
    from ..scale.streaming import shard_dataset

    manifest = shard_dataset(args.gt, args.out_dir, args.images_per_shard, results=args.dt)
    print(manifest)
    return 0


def _check(args) -> None:
    if args.slow:
        raise InputError("--slow cannot be combined with streaming or cluster evaluation")
    if args.ap != "standard":  # (the top K of a category spans every chunk)
        raise InputError(f"--ap {args.ap} cannot be combined with streaming or cluster evaluation")
    if args.workers is not None and args.scheduler is not None:
        raise InputError("--workers and --scheduler exclude each other")
    if args.manifest is not None:
        if args.gt is not None or args.dt is not None:
            raise InputError("--manifest replaces --gt and --dt")
        if args.workers is None and args.scheduler is None:
            raise InputError("--manifest needs --workers or --scheduler")
    elif args.allow_partial:
        raise InputError("--allow-partial applies to --manifest only")
    elif args.gt is None or args.dt is None:
        raise InputError("--gt and --dt are needed (or --manifest with --workers/--scheduler)")
    if args.scheduler is not None and args.manifest is None and args.shard_dir is None:
        raise InputError("--scheduler needs --shard-dir (a folder the workers can read) or --manifest")


def _quiet_dask(quiet: bool) -> None:
    """Keep dask's cluster logs (every worker start and stop, at INFO) off
    stderr: its warnings are shown, only its errors with ``-q``.  Called after
    ``dask.distributed`` is imported, since its import sets its loggers' levels."""
    level = logging.ERROR if quiet else logging.WARNING
    for name in ["distributed", *logging.root.manager.loggerDict]:
        if name == "distributed" or name.startswith(("distributed.", "tornado", "bokeh")):
            logging.getLogger(name).setLevel(level)


class _ProgressBar:
    """One line on stderr that counts the finished shards (redrawn in place
    on a terminal, written once at the end otherwise)."""

    def __init__(self, what: str, width: int = 30):
        self.what = what
        self.width = width
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self.tty and done < total:
            return
        filled = self.width * done // max(total, 1)
        line = f"{PROG}: [{'#' * filled}{'.' * (self.width - filled)}] {done}/{total} {self.what}"
        sys.stderr.write(("\r" if self.tty else "") + line + ("\n" if done >= total else ""))
        sys.stderr.flush()


def _dask(args, iou: str, params, max_dets, shards=None, gt_data=None):
    from ..scale.distributed import evaluate_dask, local_client
    from ..scale.streaming import shard_dataset, temporary_shards

    def go(manifest):
        kwargs = dict(iou_type=iou, dilation_ratio=args.dilation_ratio, max_dets=max_dets, params=params,
                      num_threads=args.threads)
        if args.scheduler is not None:
            try:
                from dask.distributed import Client
            except ImportError:
                raise InputError("--scheduler needs dask: pip install 'boundary-api[dask]'") from None
            _quiet_dask(args.quiet)
            with Client(args.scheduler) as client:
                return evaluate_dask(manifest, client, progress=bar, **kwargs)
        try:
            import dask.distributed  # noqa: F401
        except ImportError:
            raise InputError("--workers needs dask: pip install 'boundary-api[dask]'") from None
        _quiet_dask(args.quiet)
        with contextlib.ExitStack() as stack:
            with deferred_termination():  # a cluster stopped while starting cannot be closed
                client = stack.enter_context(local_client(args.workers))
            return evaluate_dask(manifest, client, progress=bar, **kwargs)

    bar = None if args.quiet else _ProgressBar("shards")

    if args.manifest is not None:
        return go(shards)
    per_shard = args.images_per_shard or args.chunk_images
    # the ground truth already read (a pipe is read once), named as given
    if args.shard_dir is not None:
        return go(shard_dataset(gt_data, args.shard_dir, per_shard, results=args.dt, source=args.gt))
    with temporary_shards(gt_data, per_shard, results=args.dt, source=args.gt) as manifest:
        return go(manifest)


def _eval_params(args, lvis: bool):
    """The instance command's --max-dets and --rec-thrs as evaluator parameters."""
    rec = np.linspace(0.0, 1.0, args.rec_thrs)
    if lvis:
        return {"rec_thrs": rec}, (args.max_dets if args.max_dets is not None else 300)
    max_dets = args.max_dets if args.max_dets is not None else 100
    params = {"recThrs": rec}
    if args.max_dets is not None:
        params["maxDets"] = [1, min(10, max_dets), max_dets]
    return params, max_dets


def run(args) -> int:
    from ..scale.streaming import evaluate_streaming, streaming_inputs

    _check(args)
    inputs = {"--gt": args.gt, "--dt": args.dt, "--manifest": args.manifest}
    check_out_path(args.json_out, files={k: v for k, v in inputs.items() if v and os.path.isfile(v)})
    tic = time.time()
    iou = args.iou_type
    if not isinstance(iou, str):
        raise InputError(f"--iou-type {' '.join(iou)}: streaming and cluster evaluation take one IoU type at a "
                         "time (run once per type)")
    loaded = streaming_inputs(args.gt if args.manifest is None else None, manifest=args.manifest,
                              allow_partial=args.allow_partial)
    gt_data, lvis, shards = loaded["dataset"], loaded["lvis"], loaded["shards"]
    if args.lvis and not lvis:
        raise InputError("--lvis: streaming and cluster evaluation choose LVIS rules from the ground "
                         "truth, and this one is not LVIS (images without neg_category_ids)")
    params, max_dets = _eval_params(args, lvis)
    with quiet(args.quiet), warnings.catch_warnings():
        # the table below reports AP at --max-dets; pycocotools' -1 at 100 is not shown
        warnings.filterwarnings("ignore", message=r"summarize\(\): params\.maxDets")
        if args.workers is not None or args.scheduler is not None:
            try:
                ev = _dask(args, iou, params, max_dets, shards, gt_data)
            except (ValueError, TypeError, OSError, MemoryError, KeyboardInterrupt):
                raise
            except Exception as exc:  # a shard's worker died, the scheduler went away, ...
                print(f"{PROG}: error: cluster evaluation failed, no metrics computed: "
                      f"{type(exc).__name__}: {exc}", file=sys.stderr)
                return 2
        else:
            ev = evaluate_streaming(gt_data, args.dt, iou, args.chunk_images, lvis=lvis,
                                    dilation_ratio=args.dilation_ratio, max_dets=max_dets, params=params,
                                    num_threads=args.threads, strict=True)
    from .instances import table_title

    print(table_title(lvis, iou, args.dilation_ratio, max_dets))
    if lvis:
        ev.print_results()
        metrics = dict(ev.results)
    else:
        metrics = coco_summary(ev)  # AP at --max-dets, not pycocotools' -1 at 100
    log.info("evaluated in %.2fs", time.time() - tic)
    extra = {"rec_thrs": args.rec_thrs}
    if shards is not None:  # what the manifest's shards held, and whether a part was allowed
        extra.update(num_images=sum(len(s["img_ids"]) for s in shards), allow_partial=args.allow_partial)
    if args.json_out:
        cats = {c["id"]: c for c in gt_data.get("categories", [])}
        per_category = {}
        for cat_id, row in per_category_metrics(ev).items():
            cat = cats.get(int(cat_id), {})
            entry = {"name": cat.get("name")}
            if lvis:
                entry["frequency"] = cat.get("frequency")
            entry.update(row)
            per_category[int(cat_id)] = entry
        doc = build_document("lvis" if lvis else "coco", iou, args.dilation_ratio,
                             {k: v for k, v in inputs.items() if v is not None}, metrics, per_category,
                             max_dets=max_dets, settings_extra=extra)
        write_json(args.json_out, doc)
    return 0
