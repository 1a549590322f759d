"""Run MOSE-api's ``score.py`` (MOSEv2) or lvos-evaluation, unmodified, and capture
what they compute, print and write (our own code; the official code is imported
from a checkout outside the repository).

Used by ``make_mose_lvos_golden.py`` in a child Python with the official code's
dependencies; it never imports ``boundary_api``.  Usage::

    python official_mose_lvos.py JOBS.json OUT.json --mose DIR   (jobs of kind mosev2)
    python official_mose_lvos.py JOBS.json OUT.json --lvos DIR   (jobs of kind lvos)

The per-frame values are captured by wrapping (never editing) functions for the
duration of a run: score.py's ``merge_chunk_results`` (it receives every chunk's
per-frame J, F_new, F and empty-ground-truth lists from the worker processes);
``LVOSEvaluation._evaluate_semisupervised`` / ``_evaluate_unsupervised_*``
(the per-object arrays they return).
"""
import argparse
import contextlib
import io
import json
import os
import runpy
import sys

from official_vos import _error, plain, run_jobs  # noqa: E402  (the same JSON conventions)


def _mose_text(text, job):
    """score.py's output without what changes from run to run: the system lines,
    the progress bar and the time; paths written relative to the case."""
    keep = []
    for line in text.splitlines():
        if line.startswith(("  Physical CPU cores", "  Total memory", "time: ")) or "━" in line:
            continue
        keep.append(line)
    return "\n".join(keep) + "\n"


def run_mosev2(job, mose):
    tools = os.path.join(mose, "MOSEv2", "sam2_rcms", "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out):
        import score
    per_frame, merged = {}, {}
    original = score.merge_chunk_results

    def merge(chunk_results, vid_name, anno_id):
        value = original(chunk_results, vid_name, anno_id)
        chunks = sorted([r for r in chunk_results if r['vid_name'] == vid_name and r['anno_id'] == anno_id],
                        key=lambda r: r['chunk_start'])
        key = f'{vid_name}_{anno_id}'
        per_frame[key] = {"J": [v for c in chunks for v in c['j_list']],
                          "F_new": [v for c in chunks for v in c['f_list']],
                          "F": [v for c in chunks for v in c['f_list_']],
                          "empty_gt": [v for c in chunks for v in c['empty_gt']],
                          "errors": [c['error'] for c in chunks if c['error'] is not None]}
        merged[key] = plain(value)
        return value

    outdir = os.path.join(os.path.dirname(job["meta"]), f"_score_out_{job['label']}")
    argv = sys.argv
    sys.argv = ["score.py", "--meta", job["meta"], "--ann", job["ann"], "--pred", job["pred"], "--output", outdir]
    score.merge_chunk_results = merge
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            score.main()
        files = {}
        for name in ("metrics.json", "scores.txt"):
            with open(os.path.join(outdir, name)) as f:
                files[name] = f.read()
        doc = json.loads(files["metrics.json"])
        return {"stdout": _mose_text(out.getvalue(), job), "files": files,
                "total_time": doc.get("total_time"), "rows": merged, "per_frame": per_frame,
                "video_order": list(os.listdir(job["ann"]))}
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"error": _error(exc, _mose_text(out.getvalue(), job), err.getvalue())}
    finally:
        score.merge_chunk_results = original
        sys.argv = argv


def _lvos_module(lvos):
    if lvos not in sys.path:
        sys.path.insert(0, lvos)
    with contextlib.redirect_stdout(io.StringIO()):
        import lvos.evaluation as ev
    return ev


def run_lvos(job, lvos):
    ev = _lvos_module(lvos)
    cls = ev.LVOSEvaluation
    per_seq = {}
    names = ("_evaluate_semisupervised", "_evaluate_unsupervised_single", "_evaluate_unsupervised_multiple")
    originals = {n: getattr(cls, n) for n in names}

    def wrap(name):
        def method(self, seq, *a, **k):
            j, f = originals[name](self, seq, *a, **k)
            per_seq[list(seq.keys())[0]] = {"J": plain(j), "F": plain(f)}
            return j, f
        return method

    cwd = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    try:
        for n in names:
            setattr(cls, n, wrap(n))
        os.chdir(job["cwd"] or os.path.dirname(job["lvos_root"]))
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            e = cls(job["lvos_root"], job["task"], job["gt_set"], codalab=job["codalab"])
            metric = job["metric"][0] if len(job["metric"]) == 1 else tuple(job["metric"])
            res = e.evaluate(job["res_path"], metric=metric)
        result = {"evaluate": plain(list(res)),
                  "v_types": [type(r["V"]["M"]).__name__ for r in res if "V" in r],
                  "per_sequence": per_seq}
        if job.get("method_script"):
            result["method"] = run_method(job, lvos)
        return result
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"error": _error(exc, out.getvalue(), err.getvalue())}
    finally:
        for n in names:
            setattr(cls, n, originals[n])
        os.chdir(cwd)


def run_method(job, lvos):
    """evaluation_method.py with one process: its CSV files and printed text."""
    script = os.path.join(lvos, "evaluation_method.py")
    argv = sys.argv
    sys.argv = [script, "--lvos_path", job["lvos_root"], "--set", job["gt_set"], "--task", job["task"],
                "--results_path", job["res_path"], "--mp_nums", "1"]
    out = io.StringIO()
    files = {}
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            runpy.run_path(script, run_name="__main__")
    finally:
        sys.argv = argv
        for name in (f"global_results-{job['gt_set']}.csv", f"per-sequence_results-{job['gt_set']}.csv"):
            path = os.path.join(job["res_path"], name)
            if os.path.exists(path):
                with open(path) as f:
                    files[name] = f.read()
                os.remove(path)
    text = out.getvalue().replace(job["res_path"], "<results_path>")
    lines = [line if not line.startswith("Total time:") else "Total time:<t>" for line in text.splitlines()]
    return {"files": files, "stdout": "\n".join(lines) + "\n"}


#: the packages whose versions the golden files record
PACKAGES = ("numpy", "Pillow", "opencv-python-headless", "scikit-image", "scipy", "pandas", "tqdm", "psutil")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("jobs")
    ap.add_argument("out")
    ap.add_argument("--mose")
    ap.add_argument("--lvos")
    a = ap.parse_args(argv)

    def run(job):
        return run_mosev2(job, a.mose) if job["kind"] == "mosev2" else run_lvos(job, a.lvos)
    run_jobs(a.jobs, a.out, run, PACKAGES)


if __name__ == "__main__":
    main()
