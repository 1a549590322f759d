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
    if tool == "boundary_api" and kind == "mosev2":
        from boundary_api.video import mosev2_benchmark

        out = mosev2_benchmark(job["meta"], job["ann"], job["pred"], num_threads=threads)
        return {k: float(v) for k, v in out.items() if k != "per_object"}
    if tool == "boundary_api" and kind == "lvos":
        from boundary_api.video import LVOSEvaluation

        os.chdir(job["lvos_root"])
        return _lvos_numbers(LVOSEvaluation(job["lvos_root"], "semi-supervised", "valid",
                                            num_threads=threads).evaluate(job["lvos_results"]))
    if tool == "score.py":
        return _score_py(job)
    if tool in ("lvos-evaluation", "lvos-evaluation-mp"):
        sys.path.insert(0, job["code"])
        os.chdir(job["lvos_root"])
        with _quiet(), contextlib.redirect_stderr(io.StringIO()):
            if tool == "lvos-evaluation":
                from lvos.evaluation import LVOSEvaluation

                ev = LVOSEvaluation(job["lvos_root"], "semi-supervised", "valid")
            else:
                from lvos.evaluation_mp import LVOSEvaluation

                ev = LVOSEvaluation(job["lvos_root"], "semi-supervised", "valid", mp_procs=job["threads"])
            return _lvos_numbers(ev.evaluate(job["lvos_results"]))
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


def _lvos_numbers(res) -> dict:
    import numpy as np

    m, seen, unseen = res
    return {"J": float(np.mean(m["J"]["M"])), "F": float(np.mean(m["F"]["M"])),
            "JR": float(np.mean(m["J"]["R"])), "V": float(np.mean(seen["V"]["M"] + unseen["V"]["M"]))}


def _score_py(job: dict) -> dict:
    """MOSE-api's score.py as its command line runs it (its own process pool), its
    numbers before rounding taken from the rows it merges (a wrapper records them)."""
    import tempfile

    import numpy as np

    sys.path.insert(0, os.path.join(job["code"], "MOSEv2", "sam2_rcms", "tools"))
    with _quiet():
        import score
    rows = {}
    merge = score.merge_chunk_results

    def record(chunk_results, vid_name, anno_id):
        rows[f"{vid_name}_{anno_id}"] = value = merge(chunk_results, vid_name, anno_id)
        return value

    score.merge_chunk_results = record
    with tempfile.TemporaryDirectory() as out, _quiet(), contextlib.redirect_stderr(io.StringIO()):
        sys.argv = ["score.py", "--meta", job["meta"], "--ann", job["ann"], "--pred", job["pred"], "--output", out]
        score.main()
    col = list(zip(*rows.values()))
    present = [[x for x in col[i] if x is not None] for i in range(7)]
    j, fn, f = np.mean(col[0]), np.mean(col[1]), np.mean(col[2])
    return {"J&F_new": float((j + fn) / 2), "J": float(j), "F_new": float(fn),
            "disappear_J&F_new": float((np.mean(present[3]) + np.mean(present[4])) / 2),
            "reappear_J&F_new": float((np.mean(present[5]) + np.mean(present[6])) / 2), "F": float(f),
            "J&F": float((j + f) / 2)}


def _pin(job: dict) -> None:
    """A 1-thread run gets one core, whatever threads its libraries start
    (file readers included), so that its column means one core."""
    if job.get("threads") == 1 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})


if __name__ == "__main__":
    _pin(json.loads(sys.argv[1]))
    print(MARKER + json.dumps(run(json.loads(sys.argv[1]))), flush=True)
