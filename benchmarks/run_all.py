#!/usr/bin/env python3
"""The whole comparison table in one command: workloads x metrics x thread
counts x tools, whole processes, interleaved, medians, peak RSS, and a check
that every pair of tools computing the same metric agrees.

    python -m benchmarks --quick                              # the same as run_all.py
    python benchmarks/run_all.py --quick                      # a couple of minutes
    python benchmarks/run_all.py --out results.json --markdown table.md
    python benchmarks/run_all.py --workloads coco500,lvis --tools boundary_api,vernier \\
        --threads 1,all --repeats 5

Workloads (built on first use by make_data.py / bench_panoptic.py into the
git-ignored benchmarks/_data/; every detection has its own jittered mask,
no two equal, and the box of its mask, so every tool reads the same file):

  coco500    500 images (COCO val2014 x 5), 4,195 GT, ~33k detections (8 per GT)
  val2017    5,000 images, ~36.8k GT (COCO val2017 size), 1 detection per GT
  lvis       100 LVIS v0.5 images, 977 GT, 300 detections per image (30k)
  val500k    5,000 images, ~36.8k GT, 100 detections per image (500k)
  lvis300k   the LVIS images x 10 (1,000 images), 300 detections per image (300k)
  val2m      5,000 images, ~36.8k GT, 400 detections per image (~1.97M; 1.7 GB of JSON)
  panoptic   240 synthetic panoptic images of 480x640 (PQ and Boundary PQ)

Metrics: boundary (Boundary AP), segm, bbox; pq and bpq (Boundary PQ) on
panoptic.  Tools: boundary_api, vernier, hotcoco, faster (faster-coco-eval),
ultrafast (ultrafast-pycocotools; its ``lvis_style=True`` mode on LVIS
workloads), reference (pycocotools on COCO workloads, lvis on the LVIS ones);
a tool runs only the metrics it has (vernier: all; hotcoco: segm, bbox, pq;
faster: boundary, segm, bbox; ultrafast: segm, bbox; reference: segm, bbox).

Each run is a fresh ``python benchmarks/_run_one.py`` process doing
everything from the JSON files on disk to the printed summary.  Runs are
interleaved: for every repeat, every (workload, metric, threads) cell runs
each of its tools once, in an order rotated by one each repeat, so drifts in
machine load hit all tools alike.  Reported: median wall time of the
process, median peak RSS (``ru_maxrss`` of that process from ``os.wait4``,
i.e. getrusage of the one child, exact), median CPU time (user+sys, same
source), and, from psutil polling every 20 ms on a watcher thread, the
largest number of threads the process had.  The wall time stops when the
process exits (a blocking wait), not at the next poll.

Thread counts: ``1`` or ``all`` (= ``len(os.sched_getaffinity(0))``).  For
``1``: every tool's own option is set to 1 (boundary_api ``num_threads``,
vernier ``num_threads``, faster-coco-eval ``boundary_cpu_count`` and
``rle_iou_max_workers``; hotcoco and pycocotools/lvis have none), the
environment has RAYON_NUM_THREADS=1 (hotcoco and vernier use rayon),
VERNIER_NUM_THREADS=1, OMP/OPENBLAS/MKL/NUMEXPR_NUM_THREADS=1, and the
process is pinned to one CPU with ``taskset -c <first allowed CPU>`` (unless
``--no-pin``), so whatever threads a tool starts share one core: CPU time can
never exceed wall time.  For ``all``: the options are set to the core count
and the environment variables are removed.

Values: for every cell, every pair of tools is compared on all the
statistics (COCO: the 12 ``stats``; LVIS: the 13 ``get_results()``
numbers; panoptic: PQ/SQ/RQ of All/Things/Stuff) and on the two thread
counts of the same tool; differences above ``--tolerance`` (1e-12) are
reported with the statistic and the pair, never hidden and never fatal.

Before the first run it prints the core count and the version of every
tool; the ``--out`` file records them, and the size and SHA-256 of every
input file, so a result can be traced to its data.  The exit status is 1
when any run failed (a tool missing, crashing or timing out), 0 otherwise;
``pip install ".[bench]"`` installs every tool.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import _run_one  # noqa: E402

TOOLS = ["boundary_api", "vernier", "hotcoco", "faster", "ultrafast", "reference"]
TOOL_LABEL = {"boundary_api": "boundary_api", "baseline": "boundary_api baseline", "vernier": "vernier",
              "hotcoco": "hotcoco",
              "faster": "faster-coco-eval", "ultrafast": "ultrafast-pycocotools", "reference": "pycocotools/lvis"}
WORKLOADS = ["coco500", "val2017", "lvis", "val500k", "lvis300k", "val2m", "panoptic"]
WORKLOAD_LABEL = {
    "coco500": "500 img, ~33k dets", "val2017": "5,000 img, 1 det/GT (val2017 size)",
    "lvis": "LVIS-like, 300 dets/img", "val500k": "5,000 img, 500k dets",
    "lvis300k": "LVIS 300k (1,000 img, 300 dets/img)", "val2m": "5,000 img, ~2M dets",
    "panoptic": "240 panoptic images",
}
QUICK_LABEL = {
    "coco500": "100 img, 2 dets/GT", "val2017": "500 img, 1 det/GT", "lvis": "LVIS-like, 50 dets/img",
    "val500k": "100 img, 100 dets/img", "lvis300k": "LVIS-like x2, 100 dets/img",
    "val2m": "100 img, 400 dets/img", "panoptic": "24 panoptic images",
}
METRICS = {"coco": ["boundary", "segm", "bbox"], "lvis": ["boundary", "segm", "bbox"], "panoptic": ["pq", "bpq"]}
METRIC_LABEL = {"boundary": "boundary", "segm": "segm", "bbox": "bbox", "pq": "PQ", "bpq": "Boundary PQ"}
THREAD_ENV = ["OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
              "RAYON_NUM_THREADS", "VERNIER_NUM_THREADS"]
DISTS = {"boundary_api": "boundary-api", "vernier": "vernier", "hotcoco": "hotcoco",
         "faster": "faster-coco-eval", "ultrafast": "ultrafast-pycocotools", "pycocotools": "pycocotools",
         "lvis": "lvis", "numpy": "numpy"}


# --------------------------------------------------------------------------
# data
# --------------------------------------------------------------------------
def build_workload(name: str, quick: bool) -> dict:
    """Build (or reuse) a workload's files in a separate process (so that this
    process stays small: a child's ``ru_maxrss`` starts from its parent's at
    fork and is kept across exec); returns its kind, paths and size."""
    cmd = [sys.executable, str(HERE / "run_all.py"), "--build-only", name] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, cwd=str(ROOT), stdout=subprocess.PIPE, check=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _build_workload(name: str, quick: bool) -> dict:
    import make_data

    if name == "panoptic":
        import bench_panoptic

        n, h, w = (24, 480, 640) if quick else (240, 480, 640)
        root = HERE / "_data" / f"panoptic_{n}_{h}x{w}"
        gt, dt = bench_panoptic.generate(str(root), n, h, w)
        return {"kind": "panoptic", "gt": gt, "dt": dt, "gt_folder": str(root / "gt"),
                "pred_folder": str(root / "pred"), "size": f"{n} images of {h}x{w}"}
    if name == "coco500":
        ds = make_data.coco_set(1, 2, distinct=True) if quick else make_data.coco_set(5, 8, distinct=True)
    elif name == "lvis":
        ds = make_data.lvis_set(1, 50 if quick else 300, distinct=True)
    elif name == "lvis300k":
        ds = make_data.lvis_set(2, 100, distinct=True) if quick else make_data.lvis_set(10, 300, distinct=True)
    elif name == "val2017":
        ds = make_data.val_set(5 if quick else 50, dets_per_gt=1, target_gt=3678 if quick else make_data.COCO_VAL_GT)
    elif name == "val500k":
        ds = make_data.val_set(1 if quick else 50, dets_per_image=100,
                               target_gt=736 if quick else make_data.COCO_VAL_GT)
    elif name == "val2m":
        ds = make_data.val_set(1 if quick else 50, dets_per_image=400,
                               target_gt=736 if quick else make_data.COCO_VAL_GT)
    else:
        raise ValueError(name)
    m = ds.meta
    return {"kind": "lvis" if name.startswith("lvis") else "coco", "gt": str(ds.gt), "dt": str(ds.dt),
            "size": f"{m['images']} images, {m['gt']} GT, {m['dets']} detections"}


# --------------------------------------------------------------------------
# running one process
# --------------------------------------------------------------------------
#: ``--baseline DIR``: a folder holding another build of boundary_api (the
#: ``baseline`` tool runs it, by PYTHONPATH, beside the installed one)
BASELINE = {"path": None}


def child_env(threads: int, n_all: int, tool: str = "") -> dict:
    # The installed boundary_api is measured: the checkout is not put on the
    # path (its uncompiled sources would shadow a plain `pip install .`).
    env = dict(os.environ)
    if tool == "baseline":
        env["PYTHONPATH"] = str(BASELINE["path"])
    for k in THREAD_ENV:
        if threads == 1:
            env[k] = "1"
        else:
            env.pop(k, None)
    return env


def run_process(spec: dict, threads: int, n_all: int, pin: bool, timeout: float) -> dict:
    """One evaluation in a new process; wall, peak RSS, CPU time, threads."""
    import psutil

    cmd = [sys.executable, str(HERE / "_run_one.py"), json.dumps(spec)]
    if threads == 1 and pin and shutil.which("taskset"):
        cpu = min(os.sched_getaffinity(0))
        cmd = ["taskset", "-c", str(cpu)] + cmd
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=str(ROOT), env=child_env(threads, n_all, spec.get("tool", "")),
                                stdout=out, stderr=err)
        try:
            ps = psutil.Process(proc.pid)
        except psutil.Error:
            ps = None
        # The thread count is polled (every 20 ms) and the timeout enforced
        # on a watcher thread, while this thread blocks until the child
        # exits: the wall time ends when the child does, not at the next
        # poll (which added 0-20 ms to every run).  The child is waited for
        # without being reaped (WNOWAIT), so the watcher can never signal a
        # reused pid; it is reaped, with its resource usage, afterwards.
        stop = threading.Event()
        seen = {"max_threads": 0, "timed_out": False}

        def watch():
            while True:
                if ps is not None:
                    try:
                        seen["max_threads"] = max(seen["max_threads"], ps.num_threads())
                    except psutil.Error:
                        pass
                if time.perf_counter() - t0 > timeout:
                    seen["timed_out"] = True
                    proc.kill()
                    return
                if stop.wait(0.02):
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
        wall = time.perf_counter() - t0
        stop.set()
        watcher.join()
        pid, status, ru = os.wait4(proc.pid, 0)
        max_threads, timed_out = seen["max_threads"], seen["timed_out"]
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    res = {"wall": wall, "rss_mb": ru.ru_maxrss / 1024.0, "cpu": ru.ru_utime + ru.ru_stime,
           "max_threads": max_threads}
    result = None
    for line in stdout.splitlines():
        if line.startswith(_run_one.MARKER):
            result = json.loads(line[len(_run_one.MARKER):])
    if timed_out or proc.returncode != 0 or result is None:
        tail = (stderr.strip().splitlines() or ["(no stderr)"])[-1]
        res["error"] = f"timed out after {timeout:.0f} s" if timed_out else f"exit {proc.returncode}: {tail[:300]}"
        return res
    res.update(result)
    return res


# --------------------------------------------------------------------------
# comparisons and tables
# --------------------------------------------------------------------------
def stat_names(kind: str) -> list:
    if kind == "lvis":
        return _run_one.LVIS_KEYS
    if kind == "panoptic":
        return _run_one.PANOPTIC_KEYS
    return ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]


def compare(a: list, b: list, names: list, tol: float = 1e-12):
    """(max |diff|, name of the worst statistic, a's value, b's value, names
    of all the statistics differing by more than ``tol``)."""
    if len(a) != len(b):
        return float("inf"), "length", len(a), len(b), ["length"]
    diffs = [abs(x - y) if not (x != x and y != y) else 0.0 for x, y in zip(a, b)]
    i = max(range(len(diffs)), key=diffs.__getitem__)
    return diffs[i], names[i], a[i], b[i], [n for n, d in zip(names, diffs) if d > tol]


def summarise(runs: list) -> dict:
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[-1]["error"] if runs else "not run", "n": 0}
    med = lambda k: statistics.median(r[k] for r in ok)  # noqa: E731
    return {"wall": med("wall"), "rss_mb": med("rss_mb"), "cpu": med("cpu"),
            "max_threads": max(r["max_threads"] for r in ok), "n": len(ok),
            "walls": [round(r["wall"], 3) for r in ok], "stats": ok[0]["stats"],
            "phases": ok[0].get("phases", {}),
            "errors": [r["error"] for r in runs if "error" in r]}


def md_table(headers, rows) -> str:
    out = ["| " + " | ".join(headers) + " |",
           "|" + "|".join("---" if i < 3 else "---:" for i in range(len(headers))) + "|"]
    out += ["| " + " | ".join("–" if v is None else str(v) for v in row) + " |" for row in rows]
    return "\n".join(out)


def fmt_s(v):
    return None if v is None else (f"{v:.3g}" if v < 10 else f"{v:.1f}")


def _seconds_rows(cells, tools, peers, key: str, runs: bool = False) -> list:
    """A row per cell: workload, metric, threads (and, with ``runs``, the runs
    per tool), each tool's seconds ``key`` ("wall" or "cpu"), then boundary_api's
    over each peer's."""
    rows = []
    for c in cells:
        r = c["results"]
        ours = r.get("boundary_api", {}).get(key)
        row = [c["workload_label"], METRIC_LABEL[c["metric"]], c["threads"]]
        if runs:
            ns = sorted({x.get("n", 0) for x in r.values()})
            row.append("-".join(str(n) for n in ns) if ns else 0)
        for t in tools:
            x = r.get(t)
            row.append(None if x is None else ("failed" if "error" in x else fmt_s(x[key])))
        for t in peers:
            x = r.get(t)
            row.append(f"{ours / x[key]:.2f}" if ours and x and key in x and "error" not in x else None)
        rows.append(row)
    return rows


def _tool_rows(cells, tools, fmt) -> list:
    """A row per cell: workload, metric, threads, then ``fmt`` of each tool's
    result (empty where the tool did not run or failed)."""
    rows = []
    for c in cells:
        row = [c["workload_label"], METRIC_LABEL[c["metric"]], c["threads"]]
        for t in tools:
            x = c["results"].get(t)
            row.append(None if x is None or "error" in x else fmt(x))
        rows.append(row)
    return rows


def markdown(report: dict) -> str:
    tools = report["tools"]
    cells = report["cells"]
    peers = [t for t in tools if t != "boundary_api"]
    lines = [f"# boundary_api vs peers ({'quick' if report['quick'] else 'full'} run"
             f"{'' if report.get('complete') else ', PARTIAL: interrupted or still running'})", ""]
    m = report["machine"]
    lines += [f"- machine: {m['platform']}; {m['cores']}; {m['memory_gib']:.1f} GiB",
              f"- load average before / after: {m['load_before']} / {m['load_after']}",
              f"- versions: " + ", ".join(f"{k} {v}" for k, v in report["versions"].items()),
              f"- median of {report['repeats']} interleaved runs per cell; wall = whole process "
              "(interpreter start, imports, JSON parsing, evaluation, summary); "
              "1 thread = tool options + env vars + taskset pinning"
              + ("" if report["pin"] else " (pinning off)"),
              f"- started {report['started']}, took {report['seconds'] / 60:.1f} min", ""]
    if report.get("inputs"):
        lines += ["## Inputs (every tool reads these files)", ""]
        rows = [[w, role, r["path"].replace(str(ROOT) + os.sep, ""), f"{r['bytes']:,}", r["sha256"][:16]]
                for w, roles in report["inputs"].items() for role, r in roles.items()]
        lines += [md_table(["workload", "file", "path", "bytes", "sha256 (first 16)"], rows), ""]
    lines += ["## Wall time (s) and ratios (boundary_api / peer; below 1 = boundary_api faster)", ""]
    headers = ["workload", "metric", "threads", "runs"] + [TOOL_LABEL[t] + " s" for t in tools] + \
              [f"ours/{TOOL_LABEL[t]}" for t in peers]
    lines += [md_table(headers, _seconds_rows(cells, tools, peers, "wall", runs=True)), ""]
    lines += ["## CPU time (s, user+sys, median) and ratios (boundary_api / peer)", "",
              "Work done regardless of how busy the machine was (on an idle machine a 1-thread run's "
              "CPU time is about its wall time).", ""]
    headers = ["workload", "metric", "threads"] + [TOOL_LABEL[t] + " cpu s" for t in tools] + \
              [f"ours/{TOOL_LABEL[t]}" for t in peers]
    lines += [md_table(headers, _seconds_rows(cells, tools, peers, "cpu")), ""]
    lines += ["## Peak RSS (MB, median) and the most threads seen (psutil)", ""]
    headers = ["workload", "metric", "threads"] + [TOOL_LABEL[t] + " MB (thr)" for t in tools]
    lines += [md_table(headers, _tool_rows(cells, tools, lambda x: f"{x['rss_mb']:.0f} ({x['max_threads']})")), ""]
    lines += ["## CPU time / wall time (1.0 = one core busy)", ""]
    headers = ["workload", "metric", "threads"] + [TOOL_LABEL[t] for t in tools]
    lines += [md_table(headers, _tool_rows(cells, tools, lambda x: f"{x['cpu'] / x['wall']:.2f}")), ""]
    lines += [f"## Agreement (max |difference| over all statistics; tolerance {report['tolerance']:g})", ""]
    rows = []
    for a in report["agreement"]:
        rows.append([a["workload_label"], METRIC_LABEL[a["metric"]], a["threads"], a["pair"],
                     f"{a['max_diff']:.3g}", "equal" if a["ok"] else
                     f"DISAGREE on {len(a['differing'])} of the statistics ({', '.join(a['differing'])}); "
                     f"largest: {a['stat']} {a['a']:.6f} vs {a['b']:.6f}"])
    lines += [md_table(["workload", "metric", "threads", "pair", "max abs diff", "verdict"], rows), ""]
    failed = [(c, t, x) for c in cells for t, x in c["results"].items() if "error" in x]
    if failed:
        lines += ["## Failed runs", ""]
        lines += [f"- {c['workload_label']} / {METRIC_LABEL[c['metric']]} / {c['threads']} thread(s) / "
                  f"{TOOL_LABEL[t]}: {x['error']}" for c, t, x in failed]
        lines.append("")
    return "\n".join(lines)


def _versions() -> dict:
    out = {"python": platform.python_version()}
    for k, d in DISTS.items():
        try:
            out[k] = version(d)
        except PackageNotFoundError:
            out[k] = "not installed"
    return out


def file_record(path) -> dict:
    """Size in bytes and SHA-256 of a file, or of every file under a folder
    (in name order: the hash covers the relative names and contents)."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    h = hashlib.sha256()
    size = 0
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                h.update(block)
                size += len(block)
    out = {"path": str(path), "bytes": size, "sha256": h.hexdigest()}
    if path.is_dir():
        out["files"] = len(files)
    return out


def input_records(infos: dict) -> dict:
    """{workload: {role: file_record}} for the files every tool reads."""
    return {w: {k: file_record(info[k]) for k in ("gt", "dt", "gt_folder", "pred_folder") if k in info}
            for w, info in infos.items()}


def failed_runs(report: dict) -> list:
    """(workload, metric, threads, tool, error) of every run that failed."""
    return [(c["workload"], c["metric"], c["threads"], t, r["error"])
            for c in report["cells"] for t, runs in c["runs"].items() for r in runs if "error" in r]


def header_lines(versions: dict, n_all: int) -> list:
    return [f"cores: os.cpu_count()={os.cpu_count()}, sched_getaffinity={n_all}",
            "versions: " + ", ".join(f"{k} {v}" for k, v in versions.items())]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def build_report(args, cells, tools, repeats, started, load_before, t_start, n_all, complete,
                 inputs=None) -> dict:
    """The summary (medians, agreement) of the runs made so far."""
    report = {"inputs": inputs or {}, "quick": args.quick, "repeats": repeats, "pin": args.pin, "tolerance": args.tolerance,
              "started": started, "tools": tools, "versions": _versions(),
              "machine": {"platform": f"{platform.machine()} {platform.system()} {platform.release()}",
                          "cores": f"os.cpu_count()={os.cpu_count()}, sched_getaffinity={n_all}",
                          "memory_gib": os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30,
                          "load_before": load_before},
              "cells": [], "agreement": []}
    for c in cells:
        res = {t: summarise(runs) for t, runs in c["runs"].items() if runs}
        report["cells"].append({k: c[k] for k in ("workload", "workload_label", "size", "kind", "metric", "threads")}
                               | {"results": res, "runs": c["runs"]})
        names = stat_names(c["kind"])
        ok = [t for t in c["tools"] if t in res and "error" not in res[t]]
        for a, b in itertools.combinations(ok, 2):
            d, name, va, vb, which = compare(res[a]["stats"], res[b]["stats"], names, args.tolerance)
            report["agreement"].append({"workload": c["workload"], "workload_label": c["workload_label"],
                                        "metric": c["metric"], "threads": c["threads"],
                                        "pair": f"{TOOL_LABEL[a]} vs {TOOL_LABEL[b]}", "max_diff": d,
                                        "stat": name, "a": va, "b": vb, "differing": which,
                                        "ok": d <= args.tolerance})
    # the same tool at different thread counts
    by_key = {}
    for c in report["cells"]:
        for t, r in c["results"].items():
            if "error" not in r:
                by_key.setdefault((c["workload"], c["metric"], t), []).append((c["threads"], r["stats"], c))
    for (w, metric, t), lst in by_key.items():
        for (th1, s1, c1), (th2, s2, _) in itertools.combinations(lst, 2):
            d, name, va, vb, which = compare(s1, s2, stat_names(c1["kind"]), args.tolerance)
            report["agreement"].append({"workload": w, "workload_label": c1["workload_label"], "metric": metric,
                                        "threads": f"{th1} vs {th2}", "pair": f"{TOOL_LABEL[t]} (thread counts)",
                                        "max_diff": d, "stat": name, "a": va, "b": vb, "differing": which,
                                        "ok": d <= args.tolerance})
    report["seconds"] = time.perf_counter() - t_start
    report["machine"]["load_after"] = _load()
    report["complete"] = complete
    return report


def write_outputs(args, report) -> str:
    text = markdown(report)
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=str) + "\n")
    if args.markdown:
        args.markdown.write_text(text + "\n")
    return text


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true",
                    help="small versions of every workload, 1 repeat (a couple of minutes)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS), help=f"comma list of {WORKLOADS}")
    ap.add_argument("--metrics", default="boundary,segm,bbox,pq,bpq", help="comma list (default: all)")
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"comma list of {TOOLS}")
    ap.add_argument("--threads", default="1,all", help="comma list of 1 and/or all (default 1,all)")
    ap.add_argument("--repeats", type=int, default=None, help="runs per cell (default 3; 1 with --quick)")
    ap.add_argument("--timeout", type=float, default=1200.0, help="seconds before a run is killed")
    ap.add_argument("--skip-slow-over", type=float, default=None,
                    help="after the first repeat, drop a tool from a cell whose run took longer than this "
                         "many seconds (its single run is kept)")
    ap.add_argument("--skip", default="",
                    help="comma list of tool:metric pairs not to run, e.g. faster:boundary (faster-coco-eval's "
                         "Boundary AP takes ~15 min at 500k detections on 2 cores)")
    ap.add_argument("--dilation-ratio", type=float, default=0.02)
    ap.add_argument("--tolerance", type=float, default=1e-12,
                    help="largest |difference| of a statistic between two tools counted as agreement")
    ap.add_argument("--no-pin", dest="pin", action="store_false", help="do not taskset the 1-thread runs")
    ap.add_argument("--out", type=Path, default=None, help="write every run and the summary as JSON here")
    ap.add_argument("--markdown", type=Path, default=None, help="write the markdown tables here")
    ap.add_argument("--build-only", metavar="WORKLOAD", help=argparse.SUPPRESS)
    ap.add_argument("--baseline", type=Path, metavar="DIR",
                    help="a folder holding another build of the boundary_api package (e.g. a copy of an "
                         "older checkout's boundary_api/ with its compiled modules): adds the tool "
                         "'baseline', run with PYTHONPATH=DIR, for before/after tables")
    ap.add_argument("--render", type=Path, metavar="RESULTS_JSON",
                    help="only print the markdown tables of an earlier --out file")
    args = ap.parse_args(argv)
    if args.render:
        print(markdown(json.loads(args.render.read_text())))
        return 0
    if args.build_only:
        print(json.dumps(_build_workload(args.build_only, args.quick)))
        return 0

    workloads = [w for w in args.workloads.split(",") if w]
    tools = [t for t in args.tools.split(",") if t]
    if args.baseline is not None:
        BASELINE["path"] = args.baseline.resolve()
        if "baseline" not in tools:
            tools.insert(1 if tools[:1] == ["boundary_api"] else 0, "baseline")
    elif "baseline" in tools:
        ap.error("the tool 'baseline' needs --baseline DIR")
    metrics = set(args.metrics.split(","))
    skip = set(x for x in args.skip.split(",") if x)
    bad = [w for w in workloads if w not in WORKLOADS] + [t for t in tools if t not in TOOLS + ["baseline"]]
    if bad:
        ap.error(f"unknown workload/tool: {bad}")
    n_all = len(os.sched_getaffinity(0))
    thread_opts = []
    for x in args.threads.split(","):
        if x not in ("1", "all"):
            ap.error("--threads takes 1 and/or all")
        thread_opts.append(1 if x == "1" else n_all)
    repeats = args.repeats or (1 if args.quick else 3)
    started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
    load_before = _load()
    t_start = time.perf_counter()

    versions = _versions()
    for line in header_lines(versions, n_all):
        print(line, file=sys.stderr, flush=True)
    missing = [t for t in tools if t not in ("reference", "baseline") and versions.get(t) == "not installed"]
    if missing:
        print(f"not installed: {', '.join(TOOL_LABEL[t] for t in missing)} (pip install \".[bench]\"); "
              "their runs will fail", file=sys.stderr, flush=True)

    cells = []
    infos = {}
    for w in workloads:
        info = build_workload(w, args.quick)
        infos[w] = info
        for metric in METRICS[info["kind"]]:
            if metric not in metrics:
                continue
            for th in thread_opts:
                cell_tools = [t for t in tools if metric in _run_one.SUPPORTS[t].get(info["kind"], ())
                              and f"{t}:{metric}" not in skip]
                if not cell_tools:
                    continue
                cells.append({"workload": w, "workload_label": (QUICK_LABEL if args.quick else WORKLOAD_LABEL)[w],
                              "size": info["size"], "kind": info["kind"], "metric": metric,
                              "threads": th, "tools": cell_tools, "info": info, "runs": {t: [] for t in cell_tools}})
    # sizes and hashes of the inputs (this also warms the page cache, so the
    # first tool does not pay the disk read)
    inputs = input_records(infos)

    total = sum(len(c["tools"]) for c in cells) * repeats
    done = 0
    dropped = set()
    for rep in range(repeats):
        for ci, c in enumerate(cells):
            order = c["tools"][rep % len(c["tools"]):] + c["tools"][:rep % len(c["tools"])]
            for tool in order:
                done += 1
                if (ci, tool) in dropped:
                    continue
                spec = dict(c["info"], metric=c["metric"], tool=tool, threads=c["threads"],
                            dilation_ratio=args.dilation_ratio)
                spec.pop("size", None)
                r = run_process(spec, c["threads"], n_all, args.pin, args.timeout)
                c["runs"][tool].append(r)
                msg = r.get("error") or f"{r['wall']:.2f} s, {r['rss_mb']:.0f} MB, cpu/wall {r['cpu'] / r['wall']:.2f}"
                print(f"[{done}/{total}] {c['workload']} {c['metric']} threads={c['threads']} {tool}: {msg}",
                      file=sys.stderr, flush=True)
                if rep == 0 and args.skip_slow_over and r["wall"] > args.skip_slow_over:
                    dropped.add((ci, tool))
                if args.out or args.markdown:  # partial results survive an interrupted run
                    write_outputs(args, build_report(args, cells, tools, repeats, started, load_before,
                                                     t_start, n_all, False, inputs))

    report = build_report(args, cells, tools, repeats, started, load_before, t_start, n_all, True, inputs)
    print(write_outputs(args, report))
    failed = failed_runs(report)
    if failed:
        print(f"{len(failed)} run(s) failed:", file=sys.stderr)
        for w, metric, th, tool, err in failed:
            print(f"  {w} {metric} threads={th} {TOOL_LABEL[tool]}: {err}", file=sys.stderr)
        return 1
    if not cells:
        print("nothing to run (no tool computes the chosen metrics on the chosen workloads)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
