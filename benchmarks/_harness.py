"""Shared parts of the benchmark scripts (not a benchmark itself).

Parent side: machine/version header, running one case in a fresh Python
process, best-of-N, markdown tables.

Child side: ``python benchmarks/_harness.py '<json spec>'`` runs one case
(loading, evaluation, accumulation, summary) and prints one line
``@@RESULT@@ {json}`` with its phase times, its statistics and its peak RSS
(``resource.getrusage(RUSAGE_SELF).ru_maxrss``).  Each case imports only the
library it measures, inside its own function, so imports and memory are
those of that library alone.
"""
from __future__ import annotations

import time

T_START = time.perf_counter()

import importlib.util
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, Optional, Sequence

from _child import FASTER_LVIS_INDEX, LVIS_KEYS, MARKER, Timer, faster_lvis_results, import_lvis, run_eval

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


# ==========================================================================
# parent side
# ==========================================================================
def have(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _version(dist: str) -> str:
    try:
        from importlib.metadata import version

        return version(dist)
    except Exception:
        return "not installed"


def cores() -> str:
    try:
        aff = len(os.sched_getaffinity(0))
    except AttributeError:
        aff = "n/a"
    return f"os.cpu_count()={os.cpu_count()}, len(os.sched_getaffinity(0))={aff}"


def print_header(title: str, threads: Optional[int]) -> None:
    import numpy

    print(f"# {title}\n")
    print(f"- machine: {platform.machine()} {platform.system()} {platform.release()}; {cores()}")
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
        print(f"- memory: {kb / 2**20:.1f} GiB")
    except OSError:
        pass
    print(f"- python {platform.python_version()}, numpy {numpy.__version__}, "
          f"pycocotools {_version('pycocotools')}, lvis {_version('lvis')}, "
          f"faster-coco-eval {_version('faster-coco-eval')}, opencv {_version('opencv-python')}")
    print(f"- boundary_api threads: {threads if threads else 'default (all cores)'}")
    print(f"- load average at start: {load_average()} (other work on the machine skews wall times)")
    print(flush=True)


def load_average() -> str:
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg()) + " (1/5/15 min)"
    except OSError:
        return "n/a"


def run_child(spec: dict, verbose: bool = False, timeout: Optional[float] = None) -> dict:
    """Run one case in a new Python process; wall seconds measured here, from
    start to exit (interpreter start, imports, load, evaluate, accumulate,
    summarize)."""
    cmd = [sys.executable, str(HERE / "_harness.py"), json.dumps(spec)]
    # the installed boundary_api is measured; the checkout is not put on the path
    # (its uncompiled sources would shadow a plain `pip install .`)
    env = dict(os.environ)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=str(ROOT), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout)
    wall = time.perf_counter() - t0
    if verbose:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
    result = None
    for line in proc.stdout.splitlines():
        if line.startswith(MARKER):
            result = json.loads(line[len(MARKER):])
    if proc.returncode != 0 or result is None:
        tail = (proc.stdout[-1500:] + "\n" + proc.stderr[-3000:]).strip()
        return {"error": f"exit code {proc.returncode}", "log": tail, "wall": wall}
    result["wall"] = wall
    return result


def best_of(spec: dict, repeat: int, label: str, verbose: bool = False) -> dict:
    """Run a case ``repeat`` times; keep the run with the lowest wall time."""
    runs = []
    for i in range(max(1, repeat)):
        r = run_child(spec, verbose)
        if "error" in r:
            print(f"  {label}: FAILED ({r['error']})\n" + _indent(r["log"]), file=sys.stderr, flush=True)
            return r
        runs.append(r)
        print(f"  {label} run {i + 1}/{repeat}: {r['wall']:.2f} s wall, "
              f"{r['rss_mb']:.0f} MB peak RSS", file=sys.stderr, flush=True)
    best = min(runs, key=lambda r: r["wall"])
    best["walls"] = [r["wall"] for r in runs]
    return best


def run_cases(cases: Sequence[tuple], base: dict, repeat: int, slow_repeat: int = 1,
              skip_slow: bool = False, verbose: bool = False) -> dict:
    """Run ``(key, label, spec, slow)`` cases (best of ``repeat``, or
    ``slow_repeat`` for slow ones); returns ``key -> result``."""
    res = {}
    for key, label, spec, slow in cases:
        if slow and skip_slow:
            continue
        res[key] = best_of(dict(base, **spec), slow_repeat if slow else repeat, label, verbose)
    return res


def run_section(cases: Sequence[tuple], base: dict, args, title: str, fast: str, slow: str,
                baselines: Sequence[tuple] = (), note: str = "", skip_slow: Optional[bool] = None):
    """Run ``cases`` as :func:`run_cases` does, with the repeats, ``skip_slow``
    (``args.skip_slow`` unless given) and ``verbose`` of the command line's
    ``args``, and print their section: the heading ``title``, how the runs were
    made (``fast`` and ``slow`` name the two kinds of case; ``note`` ends the
    sentence) and :func:`timing_table` with its ``baselines``.  Returns the
    results and those of them that did not fail."""
    res = run_cases(cases, base, args.repeat, args.slow_repeat, args.skip_slow if skip_slow is None else skip_slow,
                    args.verbose)
    print(f"\n## {title} ({cores()})\n")
    print(f"Best of {args.repeat} ({fast}) / {args.slow_repeat} ({slow}) runs, each in a new process; "
          f"wall = whole process{note}.\n")
    print(timing_table(cases, res, baselines))
    return res, {k: r for k, r in res.items() if "error" not in r}


def exit_status(res: dict) -> int:
    """1 (and the failures on stderr) when any case failed, else 0: a script
    whose runs failed must not exit as if it had measured something."""
    failed = {k: r["error"] for k, r in res.items() if "error" in r}
    for k, err in failed.items():
        print(f"FAILED {k}: {str(err)[-500:]}", file=sys.stderr)
    if failed:
        print(f"{len(failed)} of {len(res)} case(s) failed", file=sys.stderr)
    return 1 if failed else 0


TIMING_HEADERS = ["case", "wall s", "load s", "evaluate s", "accumulate+summarize s", "peak RSS MB"]


def timing_table(cases: Sequence[tuple], res: dict, baselines: Sequence[tuple] = (), digits: int = 2) -> str:
    """Markdown table of wall/phase seconds and peak RSS per case, a ratio
    column per ``(key, header)`` baseline, and the first statistic (AP)."""
    ok = {k: r for k, r in res.items() if "error" not in r}
    rows = []
    for key, label, *_ in cases:
        r = res.get(key)
        if r is None:
            continue
        if "error" in r:
            rows.append([label, "failed"] + [None] * (4 + len(baselines) + 1))
            continue
        ph = r["phases"]
        rows.append([label] + [f"{v:.{digits}f}" for v in (
            r["wall"], ph.get("load", 0), ph.get("evaluate", 0), ph.get("accumulate", 0) + ph.get("summarize", 0))]
            + [f"{r['rss_mb']:.0f}"] + [ratio(r, ok.get(b)) for b, _ in baselines] + [f"{r['stats'][0]:.4f}"])
    return md_table(TIMING_HEADERS + [h for _, h in baselines] + ["AP"], rows)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


def md_table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    def cell(v):
        if v is None:
            return "-"
        if isinstance(v, float):
            return f"{v:.2f}"
        return str(v)

    lines = ["| " + " | ".join(headers) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(headers))) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def ratio(a: Optional[dict], b: Optional[dict], key: str = "wall") -> Optional[str]:
    if not a or not b or "error" in a or "error" in b:
        return None
    return f"{a[key] / b[key]:.2f}x"


def max_abs_diff(a: Optional[Sequence[float]], b: Optional[Sequence[float]]) -> Optional[float]:
    if a is None or b is None:
        return None
    n = min(len(a), len(b))
    return max((abs(x - y) for x, y in zip(a[:n], b[:n])), default=0.0)


def equality(d: Optional[float]) -> str:
    """Verdict on a max |diff| of statistics."""
    if d is None:
        return "n/a"
    if d == 0:
        return "equal"
    return "equal up to float rounding" if d <= 1e-12 else "**DIFFERENT**"


def verdict(ok: Optional[bool]) -> str:
    return "n/a" if ok is None else ("met" if ok else "**MISSED**")


# ==========================================================================
# child side: one function per case, each importing only its library
# ==========================================================================
def _coco_stats_child(spec: dict, t: Timer) -> dict:
    lib, iou = spec["lib"], spec["iou"]
    threads = spec.get("threads")
    if lib == "boundary_api":
        from boundary_api import COCO, COCOeval
    elif lib == "pycocotools":
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    elif lib == "faster":
        from faster_coco_eval import COCO, COCOeval_faster
    else:
        raise ValueError(lib)
    t.lap("import")
    gt = COCO(spec["gt"])
    dt = gt.loadRes(spec["dt"])
    t.lap("load")
    if lib == "boundary_api":
        ev = COCOeval(gt, dt, iouType=iou, use_fast_impl=spec.get("fast", True), num_threads=threads)
    elif lib == "pycocotools":
        ev = COCOeval(gt, dt, iou)
    else:
        kw = {"boundary_cpu_count": threads, "rle_iou_max_workers": threads} if threads else {}
        ev = COCOeval_faster(gt, dt, iouType=iou, **kw)
    return {"stats": [float(x) for x in run_eval(t, ev, split=True).stats]}


def _lvis_stats_child(spec: dict, t: Timer) -> dict:
    lib, iou = spec["lib"], spec["iou"]
    threads = spec.get("threads")
    max_dets = spec.get("max_dets", 300)
    if lib in ("boundary_api", "lvis"):
        if lib == "boundary_api":
            from boundary_api import LVIS, LVISEval, LVISResults
        else:
            LVIS, LVISEval, LVISResults = import_lvis()
        t.lap("import")
        gt = LVIS(spec["gt"])
        dt = LVISResults(gt, spec["dt"], max_dets=max_dets)
        t.lap("load")
        if lib == "boundary_api":
            ev = LVISEval(gt, dt, iou_type=iou, num_threads=threads)
        else:
            ev = LVISEval(gt, dt, iou)
        res = run_eval(t, ev, split=True).get_results()
        return {"stats": [float(res[k]) for k in LVIS_KEYS]}
    if lib == "faster":
        from faster_coco_eval import COCO, COCOeval_faster

        t.lap("import")
        gt = COCO(spec["gt"])
        dt = gt.loadRes(faster_lvis_results(gt, spec["dt"], max_dets, spec.get("prefilter", True)))
        t.lap("load")
        kw = {"boundary_cpu_count": threads, "rle_iou_max_workers": threads} if threads else {}
        ev = COCOeval_faster(gt, dt, iouType=iou, lvis_style=True, **kw)
        ev.params.maxDets = [max_dets]
        run_eval(t, ev, split=True)
        return {"stats": [float(ev.all_stats[i]) for i in FASTER_LVIS_INDEX]}
    raise ValueError(lib)


#: get_results() keys of Fixed AP (no limit per image: lvis names the AR keys @-1) and Pooled AP
FIXED_KEYS = LVIS_KEYS[:9] + ["AR@-1", "ARs@-1", "ARm@-1", "ARl@-1"]
POOLED_KEYS = ["AP", "APr", "APc", "APf"]
#: large-vocab-devil's names for the Pooled AP keys
_LVDEVIL_POOLED = {"AP-pooled-all": "AP", "AP-pooled-r": "APr", "AP-pooled-c": "APc", "AP-pooled-f": "APf"}


def _lvis_fixed_child(spec: dict, t: Timer) -> dict:
    """LVIS Fixed / Pooled AP (``spec['ap']``) with boundary_api, or with
    large-vocab-devil's own script on lvis (``lib='lvdevil'``, run through
    tests/lvdevil_oracle.py, which needs ``LVDEVIL_DIR``; not split in phases:
    all of it counts as 'evaluate')."""
    import warnings

    ap, iou, k = spec["ap"], spec["iou"], spec.get("dets_per_cat", 10000)
    keys = POOLED_KEYS if ap == "pooled" else FIXED_KEYS
    if spec["lib"] == "boundary_api":
        from boundary_api import LVIS, LVISEval
        from boundary_api.lvis.fixed_pooled import load_results

        t.lap("import")
        gt = LVIS(spec["gt"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # (categories short of K)
            dt = load_results(gt, spec["dt"], iou, k)
        t.lap("load")
        ev = LVISEval(gt, dt, iou_type=iou, ap=ap, dets_per_cat=k, num_threads=spec.get("threads"))
        res = run_eval(t, ev, split=True).get_results()
        return {"stats": [float(res[key]) for key in keys]}
    if spec["lib"] == "lvdevil":
        sys.path.insert(0, str(ROOT / "tests"))
        import lvdevil_oracle

        t.lap("import")
        res, _ = lvdevil_oracle.run_original(ap, spec["gt"], spec["dt"], iou, k)
        t.lap("evaluate")
        res = {_LVDEVIL_POOLED.get(key, key): v for key, v in res.items()}
        return {"stats": [float(res[key]) for key in keys]}
    raise ValueError(spec["lib"])


def _extract_child(spec: dict, t: Timer) -> dict:
    """Per-mask boundary extraction: boundary_api's RLE kernel vs the OpenCV
    full-image path (decode, erode, encode)."""
    import numpy as np
    import pycocotools.mask as mask_utils

    import boundary_api
    from boundary_api.masks import reference

    t.lap("import")
    with open(spec["dt"]) as f:
        anns = json.load(f)
    n, n_cv, repeat = spec["n"], spec["n_cv"], spec["repeat"]
    step = max(1, len(anns) // n)
    rles = [a["segmentation"] for a in anns[::step][:n]]
    t.lap("load")

    def best(fn, reps):
        out, times = None, []
        for _ in range(reps):
            t0 = time.perf_counter()
            out = fn()
            times.append(time.perf_counter() - t0)
        return out, min(times)

    ours, t_ours = best(lambda: boundary_api.rle_to_boundary(rles, num_threads=1), repeat)

    def opencv_path():
        out = []
        for r in rles[:n_cv]:
            b = reference.mask_to_boundary(mask_utils.decode(r))
            out.append(mask_utils.encode(np.asfortranarray(b)))
        return out

    ref, t_cv = best(opencv_path, max(1, min(repeat, 2)))
    mismatches = sum(1 for a, b in zip(ours[:n_cv], ref) if a["counts"] != b["counts"])
    t.lap("measure")
    sizes = sorted({tuple(r["size"]) for r in rles})
    return {"n": len(rles), "n_cv": len(ref), "us_ours": t_ours / len(rles) * 1e6,
            "us_cv": t_cv / len(ref) * 1e6, "mismatches": mismatches, "n_sizes": len(sizes)}


CASES: Dict[str, Callable[[dict, Timer], dict]] = {
    "coco": _coco_stats_child,
    "lvis": _lvis_stats_child,
    "lvis_fixed": _lvis_fixed_child,
    "extract": _extract_child,
}


def child_main(arg: str) -> None:
    import resource

    spec = json.loads(arg)
    t = Timer(T_START)
    out = CASES[spec["kind"]](spec, t)
    out["phases"] = t.phases
    out["in_process"] = time.perf_counter() - T_START
    # ru_maxrss is in kilobytes on Linux (bytes on macOS)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    out["rss_mb"] = rss / (2**20 if sys.platform == "darwin" else 1024)
    sys.stdout.flush()
    print(MARKER + json.dumps(out), flush=True)


if __name__ == "__main__":
    child_main(sys.argv[1])
