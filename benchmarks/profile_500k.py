#!/usr/bin/env python3
"""Where the time and memory of boundary_api go on the 500k-detection workload,
and what the JSON parsers cost (findings: benchmarks/PROFILE.md).

    python benchmarks/profile_500k.py phases  --iou bbox       # whole process: start, steps, inner steps, exit
    python benchmarks/profile_500k.py phases  --iou segm --lvis  # the same on LVIS 300k
    python benchmarks/profile_500k.py cprofile --iou bbox      # cProfile, top functions
    python benchmarks/profile_500k.py parsers                  # json / orjson / msgspec -> columns

Data: the ``val500k`` workload of run_all.py (make_data.val_set with 100
detections per image: 5,000 images, ~36.7k GT, ~492k detections, every mask
distinct, every result with a box).  Uses boundary_api through its public API
only.  Each mode runs in its own process (``parsers`` starts one process per
parser, so peak RSS is that parser's).
"""
from __future__ import annotations

import time

T0 = time.perf_counter()

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def data_paths(quick: bool = False, name: str = "val500k"):
    """A workload of run_all.py (default val500k), built in a separate process
    if missing (so that this process does not import make_data, OpenCV and
    pycocotools and its memory numbers are boundary_api's)."""
    out = subprocess.run([sys.executable, str(HERE / "run_all.py"), "--build-only", name]
                         + (["--quick"] if quick else []), stdout=subprocess.PIPE, text=True, check=True).stdout
    info = json.loads(out.strip().splitlines()[-1])
    meta = json.loads((Path(info["dt"]).parent / "meta.json").read_text())
    return info["gt"], info["dt"], meta


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# --------------------------------------------------------------------------
#: (module candidates, attribute path, label): the library's inner steps that
#: ``phases`` times by wrapping them (first module that has it; the names
#: moved with the layout change, both spellings are listed)
INNER = [
    (["boundary_api.instance._columns"], "read_file_buffer", "results: read file into buffer"),
    (["boundary_api.instance._scan_results"], "scan_results", "results: native scan"),
    (["boundary_api.instance._scan_results"], "compact_counts", "results: compact RLE counts"),
    (["boundary_api.instance._scan_results"], "gather_counts", "results: gather RLE counts (mapped file)"),
    (["boundary_api.instance._columns"], "ResultColumns.check_rles", "results: decode-check every RLE"),
    (["boundary_api.masks._rle"], "area_bbox", "results: area + box of every mask"),
    (["boundary_api.instance._scan_ground_truth"], "scan_ground_truth", "ground truth: native scan"),
    (["boundary_api.instance._gt_columns"], "GroundTruthColumns._make_masks", "ground truth: polygons -> RLE"),
    (["boundary_api.instance._gt_columns"], "GroundTruthColumns.boundary_table", "ground truth: boundaries"),
    (["boundary_api.instance._engine"], "Evaluation.from_columns", "evaluate: selection (sort, pairs)"),
    (["boundary_api.instance._engine"], "Evaluation.compute_ious", "evaluate: IoU step"),
    (["boundary_api.instance._engine"], "Evaluation.match", "evaluate: matching"),
    (["boundary_api.instance._engine"], "Evaluation.accumulate", "accumulate: kernel"),
]


def _wrap_inner(totals: dict) -> None:
    """Wrap the functions of :data:`INNER` so that each call adds its wall
    and CPU time to ``totals[label]`` (inclusive times)."""
    import importlib

    for mods, attr, label in INNER:
        for m in mods:
            try:
                owner = importlib.import_module(m)
            except ImportError:
                continue
            *path, name = attr.split(".")
            for part in path:
                owner = getattr(owner, part, None)
            if owner is None or name not in vars(owner) and not hasattr(owner, name):
                continue
            raw = vars(owner).get(name, getattr(owner, name))
            kind = type(raw)
            fn = raw.__func__ if isinstance(raw, (classmethod, staticmethod)) else raw

            def timed(*a, _fn=fn, _label=label, **k):
                t, c = time.perf_counter(), time.process_time()
                try:
                    return _fn(*a, **k)
                finally:
                    w = totals.setdefault(_label, [0.0, 0.0, 0])
                    w[0] += time.perf_counter() - t
                    w[1] += time.process_time() - c
                    w[2] += 1
            setattr(owner, name, kind(timed) if kind in (classmethod, staticmethod) else timed)
            break


def phases(args) -> None:
    """The run_all.py child's steps (``COCO(path)``, ``loadRes(path)``,
    ``COCOeval``, evaluate, accumulate, summarize) in a fresh process, timed
    from the parent's ``Popen`` to the child's exit: interpreter start,
    imports, each step with the library's inner steps, and the interpreter's
    exit (freeing everything)."""
    name = args.set or ("lvis300k" if args.lvis else "val500k")
    kind = "lvis" if name.startswith("lvis") else "coco"
    gt_path, dt_path, meta = data_paths(args.quick, name)
    spec = {"kind": kind, "gt": gt_path, "dt": dt_path, "iou": args.iou, "threads": args.threads}
    runs = []
    for _ in range(args.repeats):
        t0 = time.time()
        proc = subprocess.run([sys.executable, __file__, "_phases", json.dumps(spec)], stdout=subprocess.PIPE,
                              text=True, check=True)
        t_end = time.time()
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        r["startup"] = r["t_first"] - t0
        r["exit"] = t_end - r["t_last"]
        r["total"] = t_end - t0
        runs.append(r)
    r = min(runs, key=lambda r: r["total"])
    print(f"# phases: boundary_api {args.iou} ({kind}), threads={args.threads or 'all'}, "
          f"{meta['dets']} detections; best of {args.repeats} by total wall; load average {os.getloadavg()}\n")
    print("Wall and process CPU time (all threads).  Indented rows are inner steps of the row above "
          "them (inclusive times, summed over calls).\n")
    print("| phase | wall s | CPU s | RSS after MB | peak RSS MB |\n|---|---:|---:|---:|---:|")
    print(f"| interpreter start (Popen to first line) | {r['startup']:.3f} | | | |")
    for name, s, cs, rss, peak, inner in r["rows"]:
        print(f"| {name} | {s:.3f} | {cs:.3f} | {rss:.0f} | {peak:.0f} |")
        for label, (w, c, n) in inner:
            print(f"| &nbsp;&nbsp;{label} ({n}x) | {w:.3f} | {c:.3f} | | |")
    print(f"| interpreter exit (last line to process end) | {r['exit']:.3f} | | | |")
    print(f"| **whole process** | **{r['total']:.3f}** | {r['cpu_total']:.3f} | | {r['peak']:.0f} |")


def _phases_child(spec: dict) -> dict:
    t_first = time.time()
    import contextlib
    import io

    rows = []
    totals: dict = {}
    t = time.perf_counter()
    c = time.process_time()
    seen: set = set()

    def lap(name):
        nonlocal t, c
        now, cnow = time.perf_counter(), time.process_time()
        inner = [(k, v) for k, v in totals.items() if k not in seen]
        seen.update(totals)
        rows.append((name, now - t, cnow - c, rss_mb(), peak_mb(), inner))
        t, c = now, cnow

    if spec["kind"] == "lvis":
        from boundary_api import LVIS, LVISEval, LVISResults
    else:
        from boundary_api import COCO, COCOeval
    lap("import boundary_api (+ numpy, pycocotools)")
    _wrap_inner(totals)
    lap("(wrapping for this profile)")
    with contextlib.redirect_stdout(io.StringIO()):
        if spec["kind"] == "lvis":
            gt = LVIS(spec["gt"])
            lap("LVIS(gt path)")
            dt = LVISResults(gt, spec["dt"], max_dets=300)
            lap("LVISResults(gt, dt path)")
            ev = LVISEval(gt, dt, iou_type=spec["iou"], num_threads=spec["threads"])
            lap("LVISEval()")
        else:
            gt = COCO(spec["gt"])
            lap("COCO(gt path)")
            dt = gt.loadRes(spec["dt"])
            lap("loadRes(dt path)")
            ev = COCOeval(gt, dt, iouType=spec["iou"], num_threads=spec["threads"])
            lap("COCOeval()")
        ev.evaluate()
        lap("evaluate()")
        ev.accumulate()
        lap("accumulate()")
        ev.summarize()
        if spec["kind"] == "lvis":
            ev.print_results()
        lap("summarize()")
    peak = peak_mb()
    return {"t_first": t_first, "rows": rows, "cpu_total": time.process_time(), "peak": peak,
            "t_last": time.time()}


def cprofile(args) -> None:
    import contextlib
    import cProfile
    import io
    import pstats

    gt_path, dt_path, meta = data_paths(args.quick)
    from boundary_api import COCO, COCOeval

    # process CPU time as the clock: robust to other load on the machine; time
    # spent in worker threads shows up in the main thread's wait on them
    pr = cProfile.Profile(time.process_time) if args.cpu_timer else cProfile.Profile()
    with contextlib.redirect_stdout(io.StringIO()):
        pr.enable()
        gt = COCO(gt_path)
        dt = gt.loadRes(dt_path)
        ev = COCOeval(gt, dt, iouType=args.iou, num_threads=args.threads)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        del ev, dt, gt
        gc.collect()
        pr.disable()
    out = io.StringIO()
    st = pstats.Stats(pr, stream=out)
    st.sort_stats("tottime").print_stats(args.top)
    st.sort_stats("cumulative").print_stats(args.top)
    print(f"# cProfile: boundary_api {args.iou}, {meta['dets']} detections, "
          f"clock: {'process CPU time' if args.cpu_timer else 'wall time'}\n")
    print(out.getvalue())


# --------------------------------------------------------------------------
PARSERS = ["json", "orjson", "msgspec", "msgspec_typed"]


def _columns_from_dicts(dets):
    """Columnar arrays from a list of result dicts."""
    import numpy as np

    n = len(dets)
    image_id = np.fromiter((d["image_id"] for d in dets), np.int64, n)
    category_id = np.fromiter((d["category_id"] for d in dets), np.int64, n)
    score = np.fromiter((d["score"] for d in dets), np.float64, n)
    bbox = np.array([d["bbox"] for d in dets], np.float64).reshape(n, 4)
    hw = np.array([d["segmentation"]["size"] for d in dets], np.int32).reshape(n, 2)
    counts = [d["segmentation"]["counts"] for d in dets]
    lens = np.fromiter(map(len, counts), np.int64, n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offsets[1:])
    buf = "".join(counts).encode("ascii")
    return image_id, category_id, score, bbox, hw, offsets, buf


def _typed_schema():
    """msgspec Struct types of a COCO result (built on first use, at module
    level so that msgspec can resolve the annotations).  ``counts`` stays
    ``str``: a msgspec ``bytes`` field would expect base64, which COCO counts
    are not."""
    global SegS, DetS
    import msgspec

    class SegS(msgspec.Struct):
        size: list
        counts: str

    class DetS(msgspec.Struct):
        image_id: int
        category_id: int
        score: float
        segmentation: SegS
        bbox: list = []

    globals().update(SegS=SegS, DetS=DetS)
    return DetS


def parse_one(name: str, path: str) -> dict:
    t0 = time.perf_counter()
    c0 = time.process_time()
    base = rss_mb()
    with open(path, "rb") as f:
        raw = f.read()
    t_read = time.perf_counter() - t0
    t = time.perf_counter()
    c = time.process_time()
    if name == "json":
        dets = json.loads(raw)
        conv = _columns_from_dicts
    elif name == "orjson":
        import orjson

        dets = orjson.loads(raw)
        conv = _columns_from_dicts
    elif name == "msgspec":
        import msgspec

        dets = msgspec.json.decode(raw)
        conv = _columns_from_dicts
    elif name == "msgspec_typed":
        from typing import List

        import msgspec

        dets = msgspec.json.Decoder(List[_typed_schema()]).decode(raw)

        def conv(ds):
            import numpy as np

            n = len(ds)
            image_id = np.fromiter((d.image_id for d in ds), np.int64, n)
            category_id = np.fromiter((d.category_id for d in ds), np.int64, n)
            score = np.fromiter((d.score for d in ds), np.float64, n)
            bbox = np.array([d.bbox for d in ds], np.float64).reshape(n, 4)
            hw = np.array([d.segmentation.size for d in ds], np.int32).reshape(n, 2)
            counts = [d.segmentation.counts for d in ds]
            lens = np.fromiter(map(len, counts), np.int64, n)
            offsets = np.zeros(n + 1, np.int64)
            np.cumsum(lens, out=offsets[1:])
            buf = "".join(counts).encode("ascii")
            return image_id, category_id, score, bbox, hw, offsets, buf
    else:
        raise ValueError(name)
    t_parse, c_parse = time.perf_counter() - t, time.process_time() - c
    rss_parsed = rss_mb() - len(raw) / 2**20
    del raw
    t, c = time.perf_counter(), time.process_time()
    cols = conv(dets)
    t_cols, c_cols = time.perf_counter() - t, time.process_time() - c
    t, c = time.perf_counter(), time.process_time()
    del dets
    gc.collect()
    t_free, c_free = time.perf_counter() - t, time.process_time() - c
    cols_mb = sum(getattr(c, "nbytes", None) or len(c) for c in cols) / 2**20
    return {"parser": name, "n": len(cols[0]), "read_s": t_read, "parse_s": t_parse, "columns_s": t_cols,
            "free_s": t_free, "rss_parsed_mb": rss_parsed - base, "peak_mb": peak_mb(), "columns_mb": cols_mb,
            "total_s": time.perf_counter() - t0, "parse_cpu": c_parse, "columns_cpu": c_cols,
            "free_cpu": c_free, "total_cpu": time.process_time() - c0}


def parsers(args) -> None:
    _, dt_path, meta = data_paths(args.quick)
    size = os.path.getsize(dt_path) / 2**20
    rows = []
    for name in PARSERS:
        for _ in range(args.repeats):
            out = subprocess.run([sys.executable, __file__, "_parse", name, dt_path], stdout=subprocess.PIPE,
                                 text=True, check=True).stdout
            rows.append(json.loads(out.strip().splitlines()[-1]))
    print(f"# JSON parsers on the results file ({meta['dets']} detections, {size:.0f} MB), "
          f"best of {args.repeats} by total CPU time\n")
    print("CPU s = process CPU time (robust to other load); objects MB = RSS growth from parsing, "
          "without the raw file bytes; columns = ids, category ids, scores, boxes, sizes, RLE offsets "
          "and all counts in one byte buffer.\n")
    print("| parser | parse CPU s | to columns CPU s | free objects CPU s | total CPU s (read+parse+columns+free) "
          "| total wall s | objects MB | peak RSS MB | columns MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name in PARSERS:
        r = min((r for r in rows if r["parser"] == name), key=lambda r: r["total_cpu"])
        print(f"| {name} | {r['parse_cpu']:.2f} | {r['columns_cpu']:.2f} | {r['free_cpu']:.2f} | "
              f"{r['total_cpu']:.2f} | {r['total_s']:.2f} | {r['rss_parsed_mb']:.0f} | {r['peak_mb']:.0f} | "
              f"{r['columns_mb']:.0f} |")


def main(argv=None) -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "_phases":
        r = _phases_child(json.loads(sys.argv[2]))
        r["t_last"] = time.time()
        print(json.dumps(r), flush=True)
        return 0
    if len(sys.argv) > 1 and sys.argv[1] == "_parse":
        print(json.dumps(parse_one(sys.argv[2], sys.argv[3])))
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["phases", "cprofile", "parsers"])
    ap.add_argument("--iou", default="boundary", choices=["boundary", "segm", "bbox"])
    ap.add_argument("--threads", type=int, default=None, help="boundary_api num_threads (default: all cores)")
    ap.add_argument("--top", type=int, default=30, help="cprofile: functions listed")
    ap.add_argument("--cpu-timer", action="store_true",
                    help="cprofile: time functions by process CPU time instead of wall time")
    ap.add_argument("--repeats", type=int, default=2, help="parsers: runs per parser; phases: runs (best kept)")
    ap.add_argument("--lvis", action="store_true", help="phases: the LVIS 300k set (lvis300k) with LVISEval")
    ap.add_argument("--set", choices=["val500k", "lvis300k", "coco500", "val2017", "lvis", "val2m"],
                    help="phases: this workload of run_all.py instead (the lvis* ones with LVISEval)")
    ap.add_argument("--quick", action="store_true", help="the 10k-detection quick set instead")
    args = ap.parse_args(argv)
    {"phases": phases, "cprofile": cprofile, "parsers": parsers}[args.mode](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
