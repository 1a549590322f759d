"""One video evaluation in this process, for bench_video.py (not a benchmark itself).

``python benchmarks/_video_child.py '<json job>'`` runs the job and prints one
line ``@@RESULT@@ {json}`` with the numbers it computed (for the equality check
between tools).  Each tool's code is imported inside its own branch, so the
process holds that tool's imports and memory only.  The official evaluators are
imported from checkouts outside the repository (their paths are in the job); this
file is our own driver of their public functions.
"""
import contextlib
import io
import json
import os
import sys

from _child import MARKER


def _quiet():
    return contextlib.redirect_stdout(io.StringIO())


def run(job: dict) -> dict:
    tool, kind = job["tool"], job["kind"]
    threads = job.get("threads")
    if tool == "boundary_api":
        if kind == "davis":
            from boundary_api.video import DAVISEvaluation

            m = DAVISEvaluation(job["davis_root"], "semi-supervised", "val", num_threads=threads).evaluate(
                job["results"])
            return _davis_numbers(m)
        if kind == "sav":
            from boundary_api.video import sav_benchmark

            with _quiet():
                jf, j, f, _ = sav_benchmark([job["gt_root"]], [job["results"]], True, threads, verbose=False,
                                            write_csv=False)
            return {"J&F": float(jf[0]), "J": float(j[0]), "F": float(f[0])}
        if kind in ("vis_segm", "vis_boundary"):
            from boundary_api.video import YTVOS, YTVOSeval

            with _quiet():
                gt = YTVOS(job["gt"])
                ev = YTVOSeval(gt, gt.loadRes(job["dt"]), "segm" if kind == "vis_segm" else "boundary",
                               num_threads=threads)
                ev.evaluate()
                ev.accumulate()
                ev.summarize()
            return {"stats": [float(x) for x in ev.stats]}
    if tool == "davis2017-evaluation":
        sys.path.insert(0, job["code"])
        from davis2017.evaluation import DAVISEvaluation

        m = DAVISEvaluation(job["davis_root"], "semi-supervised", "val").evaluate(job["results"])
        return _davis_numbers(m)
    if tool in ("sav_benchmark", "vos-benchmark"):
        if tool == "sav_benchmark":
            sys.path.insert(0, os.path.join(job["code"], "sav_dataset"))
            from utils.sav_benchmark import benchmark
        else:
            sys.path.insert(0, job["code"])
            from vos_benchmark.benchmark import benchmark
        with _quiet():
            jf, j, f, _ = benchmark([job["gt_root"]], [job["results"]], True, threads, verbose=False)
        os.remove(os.path.join(job["results"], "results.csv"))
        return {"J&F": float(jf[0]), "J": float(j[0]), "F": float(f[0])}
    if tool in ("youtubevos-cocoapi", "cocoapi_hq"):
        from pycocotools.ytvos import YTVOS
        from pycocotools.ytvoseval import YTVOSeval

        with _quiet():
            if kind == "vis_boundary":
                gt = YTVOS(job["gt"], get_boundary=True, dilation_ratio=0.02)
            else:
                gt = YTVOS(job["gt"])
            ev = YTVOSeval(gt, gt.loadRes(job["dt"]), "segm" if kind == "vis_segm" else "boundary")
            ev.evaluate()
            ev.accumulate()
            ev.summarize()
        return {"stats": [float(x) for x in ev.stats]}
    raise ValueError(f"unknown tool/kind {tool}/{kind}")


def _davis_numbers(m) -> dict:
    import numpy as np

    return {"J&F": float((np.mean(m["J"]["M"]) + np.mean(m["F"]["M"])) / 2),
            "J": float(np.mean(m["J"]["M"])), "F": float(np.mean(m["F"]["M"])),
            "JR": float(np.mean(m["J"]["R"])), "JD": float(np.mean(m["J"]["D"])),
            "FR": float(np.mean(m["F"]["R"])), "FD": float(np.mean(m["F"]["D"]))}


def _pin(job: dict) -> None:
    """A 1-thread run gets one core, whatever threads its libraries start
    (file readers included), so that its column means one core."""
    if job.get("threads") == 1 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


if __name__ == "__main__":
    _pin(json.loads(sys.argv[1]))
    print(MARKER + json.dumps(run(json.loads(sys.argv[1]))), flush=True)
