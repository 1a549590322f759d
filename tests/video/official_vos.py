"""Run the official video object segmentation evaluators, unmodified, and capture
everything they compute and print (our own code; the official code is imported
from a checkout outside the repository).

Used by ``make_vos_golden.py`` in a child process that has the official code's
dependencies (``pandas``, ``scipy``, ``scikit-image``...); it never imports
``boundary_api``.  Usage::

    python official_vos.py JOBS.json OUT.json --davis2017 DIR --sav DIR [--vos-benchmark DIR]

``JOBS.json`` is a list of jobs (see :func:`run_davis` and :func:`run_sav`);
``OUT.json`` receives one result per job, floats written with ``repr`` (exact),
NaN as the string ``"NaN"``.

The per-frame values the official code keeps internally are captured by
wrapping (never editing) its functions for the duration of a run:
``davis2017.evaluation``'s ``db_eval_iou``, ``db_eval_boundary`` and
``linear_sum_assignment`` and ``DAVISEvaluation``'s two ``_evaluate_*`` static
methods; SA-V's ``Evaluator.conclude``.
"""
import argparse
import contextlib
import io
import json
import math
import os
import runpy
import shutil
import sys
import tempfile
import traceback


def plain(x):
    """numpy scalars and arrays as Python values, non-finite floats as strings."""
    import numpy as np

    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.ndarray):
        return plain(x.tolist())
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (float, np.floating)):
        x = float(x)
        if math.isnan(x):
            return "NaN"
        if math.isinf(x):
            return "Infinity" if x > 0 else "-Infinity"
        return x
    return x


def key_of(k):
    """A dict key as JSON keeps it: bool, int or str (the type is the contract)."""
    import numpy as np

    if isinstance(k, (bool, np.bool_)):
        return bool(k)
    if isinstance(k, (int, np.integer)):
        return int(k)
    return str(k)


def _error(exc, out, err):
    tb = traceback.extract_tb(exc.__traceback__)
    where = tb[-1] if tb else None
    return {
        "type": type(exc).__name__,
        "message": "" if isinstance(exc, SystemExit) else str(exc),
        "exit_code": plain(exc.code) if isinstance(exc, SystemExit) else None,
        "stdout": out,
        "stderr": _no_progress(err),
        "raised_in": f"{os.path.basename(where.filename)}:{where.name}" if where else None,
    }


def _no_progress(text):
    """stderr without tqdm's progress bars (their timings change from run to run)."""
    lines = text.replace("\r", "\n").split("\n")
    return "\n".join(line for line in lines if line and "|" not in line and "it/s]" not in line
                     and "s/it]" not in line)


# ----------------------------------------------------------------------------
# DAVIS 2017
# ----------------------------------------------------------------------------

def _davis_modules(davis2017):
    if davis2017 not in sys.path:
        sys.path.insert(0, davis2017)
    import davis2017.evaluation as ev
    import davis2017.davis as dv

    return ev, dv


class _DavisRecorder:
    """Wraps the official functions for one run and records what they compute."""

    def __init__(self, ev, dv):
        self.ev, self.dv = ev, dv
        self.seqs = []

    def __enter__(self):
        ev, dv = self.ev, self.dv
        self.saved = dict(iou=ev.db_eval_iou, boundary=ev.db_eval_boundary, lsa=ev.linear_sum_assignment,
                          semi=ev.DAVISEvaluation.__dict__["_evaluate_semisupervised"],
                          unsup=ev.DAVISEvaluation.__dict__["_evaluate_unsupervised"],
                          masks=dv.DAVIS.get_all_masks)
        rec = self
        saved = self.saved

        def get_all_masks(this, sequence, separate_objects_masks=False):
            out = saved["masks"](this, sequence, separate_objects_masks)
            rec.seqs.append(dict(sequence=sequence, gt_objects=int(out[0].shape[0]), frames=list(out[2]),
                                 calls=[], matching=None))
            return out

        def iou(*a, **k):
            r = saved["iou"](*a, **k)
            rec.seqs[-1]["calls"].append(("J", r))
            return r

        def boundary(*a, **k):
            r = saved["boundary"](*a, **k)
            rec.seqs[-1]["calls"].append(("F", r))
            return r

        def lsa(cost, *a, **k):
            r = saved["lsa"](cost, *a, **k)
            rec.seqs[-1]["matching"] = dict(cost=plain(cost), rows=plain(r[0]), cols=plain(r[1]))
            return r

        def semi(all_gt_masks, all_res_masks, all_void_masks, metric):
            rec.seqs[-1]["res_objects"] = int(all_res_masks.shape[0])
            j, f = saved["semi"].__func__(all_gt_masks, all_res_masks, all_void_masks, metric)
            rec.seqs[-1]["J"], rec.seqs[-1]["F"] = plain(j), plain(f)
            return j, f

        def unsup(all_gt_masks, all_res_masks, all_void_masks, metric, max_n_proposals=20):
            rec.seqs[-1]["res_objects"] = int(all_res_masks.shape[0])
            j, f = saved["unsup"].__func__(all_gt_masks, all_res_masks, all_void_masks, metric, max_n_proposals)
            rec.seqs[-1]["J"], rec.seqs[-1]["F"] = plain(j), plain(f)
            return j, f

        ev.db_eval_iou, ev.db_eval_boundary, ev.linear_sum_assignment = iou, boundary, lsa
        ev.DAVISEvaluation._evaluate_semisupervised = staticmethod(semi)
        ev.DAVISEvaluation._evaluate_unsupervised = staticmethod(unsup)
        dv.DAVIS.get_all_masks = get_all_masks
        return self

    def __exit__(self, *exc):
        ev, dv, s = self.ev, self.dv, self.saved
        ev.db_eval_iou, ev.db_eval_boundary, ev.linear_sum_assignment = s["iou"], s["boundary"], s["lsa"]
        ev.DAVISEvaluation._evaluate_semisupervised = s["semi"]
        ev.DAVISEvaluation._evaluate_unsupervised = s["unsup"]
        dv.DAVIS.get_all_masks = s["masks"]
        return False

    def per_sequence(self, task, full):
        """Per sequence: the matched per-object per-frame J and F (``J``, ``F``) and,
        for the unsupervised task, the proposal x object x frame arrays before the
        matching (``J_all``, ``F_all``, only when ``full``) and the matching."""
        out = []
        for s in self.seqs:
            d = {k: s[k] for k in ("sequence", "gt_objects", "frames") if k in s}
            for k in ("res_objects", "J", "F", "matching"):
                if s.get(k) is not None:
                    d[k] = s[k]
            if task == "unsupervised" and full and s["calls"]:
                n_obj, n_res = s["gt_objects"], s.get("res_objects", 0)
                n_res = max(n_res, n_obj)  # padded to the object count
                for m in ("J", "F"):
                    vals = [plain(v) for kind, v in s["calls"] if kind == m]
                    if vals:  # the official loop: objects outside, proposals inside
                        d[m + "_all"] = [[vals[ii * n_res + jj] for ii in range(n_obj)] for jj in range(n_res)]
            out.append(d)
        return out


def run_davis(job, davis2017):
    """One DAVISEvaluation run.

    ``job``: ``davis_root``, ``task``, ``gt_set``, ``res_path``, optional ``sequences``
    ('all' or a list), ``codalab``, ``metric`` (a list, or a string passed as is),
    ``full`` (keep the unsupervised pre-matching arrays), ``method_script``
    (also run evaluation_method.py on a copy of the results folder).

    Returns ``evaluate`` (the returned dict, ``types``), ``per_sequence``,
    ``stdout`` or ``error``; and ``method`` (CSV files and printed text).
    """
    ev, dv = _davis_modules(davis2017)
    res = {}
    metric = job.get("metric", ["J", "F"])
    if isinstance(metric, list):
        metric = tuple(metric)
    out, err = io.StringIO(), io.StringIO()
    rec = _DavisRecorder(ev, dv)
    try:
        with rec, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            e = ev.DAVISEvaluation(davis_root=job["davis_root"], task=job["task"], gt_set=job["gt_set"],
                                   sequences=job.get("sequences", "all"), codalab=job.get("codalab", False))
            r = e.evaluate(job["res_path"], metric=metric)
        res["evaluate"] = plain(r)
        res["types"] = {m: {k: type(v[0]).__name__ if isinstance(v, list) and v else type(v).__name__
                            for k, v in r[m].items()} for m in r}
        res["types_per_object"] = {m: sorted({type(v).__name__ for v in r[m]["M_per_object"].values()}) for m in r}
        res["stdout"] = out.getvalue()
    except BaseException as exc:  # SystemExit and AssertionError are what the official code does
        if isinstance(exc, KeyboardInterrupt):
            raise
        res["error"] = _error(exc, out.getvalue(), err.getvalue())
    res["per_sequence"] = rec.per_sequence(job["task"], job.get("full", False))
    if job.get("method_script") and "error" not in res:
        res["method"] = run_method_script(job, davis2017)
    return res


def run_method_script(job, davis2017):
    """evaluation_method.py, unmodified, on a copy of the results folder (it writes its
    CSV files there): the two CSV files and its printed text (the last line, the
    time taken, is replaced by ``Total time:<t>``)."""
    tmp = tempfile.mkdtemp(prefix="davis_method_")
    try:
        res_copy = os.path.join(tmp, "results")
        shutil.copytree(job["res_path"], res_copy)
        argv = ["evaluation_method.py", "--davis_path", job["davis_root"], "--set", job["gt_set"],
                "--task", job["task"], "--results_path", res_copy]
        out, err = io.StringIO(), io.StringIO()
        saved = sys.argv
        sys.argv = argv
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                runpy.run_path(os.path.join(davis2017, "evaluation_method.py"), run_name="__main__")
        finally:
            sys.argv = saved
        text = out.getvalue().replace(res_copy, "<results_path>")
        head, sep, _ = text.rpartition("\nTotal time:")
        printed = head + sep + "<t>" if sep else text
        files = {}
        for name in sorted(os.listdir(res_copy)):
            if name.endswith(".csv"):
                with open(os.path.join(res_copy, name)) as f:
                    files[name] = f.read()
        return {"argv": argv[1:-1] + ["<results_path>"], "stdout": printed, "csv": files}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ----------------------------------------------------------------------------
# SA-V (sam2's sav_dataset) and vos-benchmark
# ----------------------------------------------------------------------------

def _sav_module(sav):
    path = os.path.join(sav, "sav_dataset")
    if path not in sys.path:
        sys.path.insert(0, path)
    import utils.sav_benchmark as sb

    return sb


def _keyed(d):
    return [[key_of(k), plain(v)] for k, v in d.items()]


def run_sav(job, sav, vos_benchmark=None):
    """One ``benchmark`` run of sav_benchmark.

    ``job``: ``gt_root``, ``pred_root``, ``skip_first_and_last``, optional
    ``strict`` (default True, the function's default), ``num_processes`` (1),
    ``per_frame`` (also record each object's per-frame IoU and boundary F by
    calling VideoEvaluator in this process), ``vos_benchmark`` (also run
    hkchengrex/vos-benchmark's benchmark on the same folders).

    Returns ``benchmark`` (global J&F, J, F, and per video the objects' J and F
    as [key, value] pairs in the order of the returned dicts), ``results_csv``,
    ``stdout`` (paths replaced by <gt_root> / <pred_root>, the time by <t>) or
    ``error``; ``per_frame``.
    """
    sb = _sav_module(sav)
    res = {}
    out, err = io.StringIO(), io.StringIO()
    gt, pred = job["gt_root"], job["pred_root"]
    csv_path = os.path.join(pred, "results.csv")
    if os.path.exists(csv_path):
        os.remove(csv_path)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            r = sb.benchmark([gt], [pred], job.get("strict", True), job.get("num_processes", 1), verbose=True,
                             skip_first_and_last=job["skip_first_and_last"])
        res["benchmark"] = _sav_return(r)
        res["stdout"] = _sav_text(out.getvalue(), gt, pred)
        with open(csv_path) as f:
            res["results_csv"] = f.read()
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        res["error"] = _error(exc, _sav_text(out.getvalue(), gt, pred), err.getvalue())
    finally:
        if os.path.exists(csv_path):
            os.remove(csv_path)
    if job.get("per_frame"):
        res["per_frame"] = sav_per_frame(sb, gt, pred, job["skip_first_and_last"], job.get("strict", True))
    if job.get("vos_benchmark") and vos_benchmark:
        res["vos_benchmark"] = run_vos_benchmark(job, vos_benchmark)
    return res


def _sav_return(r):
    jf, j, f, objs = r
    return {"global_jf": plain(jf), "global_j": plain(j), "global_f": plain(f),
            "videos": [[[name, _keyed(iou), _keyed(bf)] for name, (iou, bf) in om.items()] for om in objs],
            "types": sorted({type(v).__name__ for om in objs for iou, bf in om.values() for v in iou.values()}),
            "global_types": [type(jf[0]).__name__] if jf else []}


def _sav_text(text, gt, pred):
    text = text.replace(gt, "<gt_root>").replace(pred, "<pred_root>")
    lines = []
    for line in text.split("\n"):
        if line.startswith("Time taken: "):
            line = "Time taken: <t>s"
        lines.append(line)
    return "\n".join(lines)


def sav_per_frame(sb, gt, pred, skip, strict):
    """Each video's per-object per-frame lists (Evaluator.object_iou / boundary_f),
    keys as the Evaluator keys them, from VideoEvaluator run in this process."""
    recorded = []
    original = sb.Evaluator.conclude

    def conclude(self):
        recorded.append(dict(obj_id=self.obj_id, iou=_keyed(self.object_iou), f=_keyed(self.boundary_f),
                             in_gt=sorted(key_of(k) for k in self.objects_in_gt),
                             in_masks=sorted(key_of(k) for k in self.objects_in_masks)))
        return original(self)

    gt_videos = sorted(v for v in os.listdir(gt) if os.path.isdir(os.path.join(gt, v)))
    pred_videos = {v for v in os.listdir(pred) if os.path.isdir(os.path.join(pred, v))}
    out = []
    sb.Evaluator.conclude = conclude
    try:
        for vid in gt_videos:
            if vid not in pred_videos:
                continue
            recorded.clear()
            try:
                sb.VideoEvaluator(gt, pred, skip_first_and_last=skip)(vid)
                out.append({"video": vid, "objects": list(recorded)})
            except BaseException as exc:
                if isinstance(exc, KeyboardInterrupt):
                    raise
                out.append({"video": vid, "objects": list(recorded), "error": type(exc).__name__})
    finally:
        sb.Evaluator.conclude = original
    return out


def run_vos_benchmark(job, vos_benchmark):
    if vos_benchmark not in sys.path:
        sys.path.insert(0, vos_benchmark)
    from vos_benchmark.benchmark import benchmark

    out, err = io.StringIO(), io.StringIO()
    csv_path = os.path.join(job["pred_root"], "results.csv")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            r = benchmark([job["gt_root"]], [job["pred_root"]], job.get("strict", True), job.get("num_processes", 1),
                          verbose=True, skip_first_and_last=job["skip_first_and_last"])
        with open(csv_path) as f:
            csv = f.read()
        return {"benchmark": _sav_return(r), "results_csv": csv,
                "stdout": _sav_text(out.getvalue(), job["gt_root"], job["pred_root"])}
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        return {"error": _error(exc, _sav_text(out.getvalue(), job["gt_root"], job["pred_root"]), err.getvalue())}
    finally:
        if os.path.exists(csv_path):
            os.remove(csv_path)


#: the packages whose versions the golden files record
PACKAGES = ("numpy", "Pillow", "opencv-python", "scikit-image", "scipy", "pandas", "tqdm")


def versions(packages):
    """The Python version and those of ``packages`` (None where not installed)."""
    import importlib.metadata as md

    out = {"python": sys.version.split()[0]}
    for p in packages:
        try:
            out[p] = md.version(p)
        except md.PackageNotFoundError:
            out[p] = None
    return out


def run_jobs(jobs_path, out_path, run, packages):
    """``run(job)`` of every job of the file ``jobs_path``; the file ``out_path``:
    the :func:`versions` of ``packages`` and the results, in the jobs' order."""
    with open(jobs_path) as f:
        jobs = json.load(f)
    results = [run(job) for job in jobs]
    with open(out_path, "w") as f:
        json.dump({"versions": versions(packages), "results": results}, f)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("jobs")
    ap.add_argument("out")
    ap.add_argument("--davis2017", default=os.environ.get("BOUNDARY_API_DAVIS2017"))
    ap.add_argument("--sav", default=os.environ.get("BOUNDARY_API_SAV"))
    ap.add_argument("--vos-benchmark", default=os.environ.get("BOUNDARY_API_VOS_BENCHMARK"))
    a = ap.parse_args(argv)

    def run(job):
        return run_davis(job, a.davis2017) if job["kind"] == "davis" else run_sav(job, a.sav, a.vos_benchmark)
    run_jobs(a.jobs, a.out, run, PACKAGES)


if __name__ == "__main__":
    main()
