#!/usr/bin/env python3
"""Where the time and memory of boundary_api go on the 500k-detection workload,
and what the JSON parsers cost (findings: benchmarks/PROFILE.md).

    python benchmarks/profile_500k.py phases  --iou boundary   # timed phases + RSS, no profiler
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


def data_paths(quick: bool = False):
    """The val500k workload of run_all.py, built in a separate process if
    missing (so that this process does not import make_data, OpenCV and
    pycocotools and its memory numbers are boundary_api's)."""
    out = subprocess.run([sys.executable, str(HERE / "run_all.py"), "--build-only", "val500k"]
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
def phases(args) -> None:
    """Whole pipeline with a timer and the RSS after each phase."""
    gt_path, dt_path, meta = data_paths(args.quick)
    rows = []
    t = time.perf_counter()
    c = time.process_time()

    def lap(name):
        nonlocal t, c
        now, cnow = time.perf_counter(), time.process_time()
        rows.append((name, now - t, cnow - c, rss_mb(), peak_mb()))
        t, c = now, cnow

    lap("data lookup (subprocess)")
    import contextlib
    import io

    from boundary_api import COCO, COCOeval
    lap("import boundary_api")
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink):
        with open(dt_path, "rb") as f:
            raw = f.read()
        lap("read results file (bytes)")
        dets = json.loads(raw)
        del raw
        lap("json.loads results (stdlib)")
        gt = COCO(gt_path)
        lap("COCO(gt) (json.load + createIndex)")
        dt = gt.loadRes(dets)
        lap("loadRes(list)")
        del dets
        ev = COCOeval(gt, dt, iouType=args.iou, num_threads=args.threads)
        lap("COCOeval()")
        ev.evaluate()
        lap("evaluate")
        ev.accumulate()
        lap("accumulate")
        ev.summarize()
        lap("summarize")
        del ev, dt, gt
        gc.collect()
        lap("teardown (del + gc.collect)")
    print(f"# phases: boundary_api {args.iou}, threads={args.threads or 'all'}, {meta['dets']} detections\n")
    print("CPU s = process CPU time (all threads), robust to other load on the machine.\n")
    print("| phase | wall s | CPU s | RSS after MB | peak RSS MB |\n|---|---:|---:|---:|---:|")
    for name, s, cs, r, p in rows:
        print(f"| {name} | {s:.2f} | {cs:.2f} | {r:.0f} | {p:.0f} |")
    print(f"| total in process | {time.perf_counter() - T0:.2f} | {time.process_time():.2f} | | |")


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
    ap.add_argument("--repeats", type=int, default=2, help="parsers: runs per parser")
    ap.add_argument("--quick", action="store_true", help="the 10k-detection quick set instead")
    args = ap.parse_args(argv)
    {"phases": phases, "cprofile": cprofile, "parsers": parsers}[args.mode](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
