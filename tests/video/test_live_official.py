"""boundary_api.video against the official evaluators run live, where a checkout of
them is present (skipped cleanly otherwise; the stored golden values always run):
fresh data from the generators with seeds the golden values do not use, i.e. sets made
the same way as the stored ones but never seen by the tests before.

Environment (tests/data/video/README.md says how to build these):

- ``BOUNDARY_API_VOS_PYTHON``: a Python that runs davis2017-evaluation and SA-V's
  benchmark; ``BOUNDARY_API_DAVIS2017``, ``BOUNDARY_API_SAV``: their checkouts;
- ``BOUNDARY_API_YTVOS_PYTHON``, ``BOUNDARY_API_HQYTVIS_PYTHON``: Pythons with
  youtubevos/cocoapi and SysCV/vmt cocoapi_hq installed.
"""
import contextlib
import io
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from vos_cases import need as _need  # noqa: E402

from boundary_api.video import DAVISEvaluation, YTVOS, YTVOSeval, sav_benchmark, synthetic, synthetic_vis  # noqa

VOS_ENV = ("BOUNDARY_API_VOS_PYTHON", "BOUNDARY_API_DAVIS2017", "BOUNDARY_API_SAV")
VIS_ENV = ("BOUNDARY_API_YTVOS_PYTHON", "BOUNDARY_API_HQYTVIS_PYTHON")
SEEDS = (1001, 1002, 1003)

pytestmark = pytest.mark.slow


def _num(x):
    if isinstance(x, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[x]
    return x


def close(a, b, tol=1e-12):
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    a, b = float(_num(a)), float(_num(b))
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol


def _vos_set(root, seed):
    """A DAVIS root (semi-supervised and unsupervised, void), its results, and SA-V folders."""
    rng = np.random.default_rng(seed)
    truth, semi, unsup, voids = {}, {}, {}, {}
    for k in range(3):
        h, w = int(rng.integers(30, 140)), int(rng.integers(30, 200))
        labels = synthetic.render_sequence(int(rng.integers(4, 20)), h, w, objects=int(rng.integers(1, 4)),
                                           seed=seed + k, deforming=bool(rng.random() < .5),
                                           touching=bool(rng.random() < .5), edges=bool(rng.random() < .5),
                                           vanishing=bool(rng.random() < .4), tiny=int(rng.integers(0, 2)))
        name = f"s{k}"
        truth[name] = labels
        voids[name] = synthetic.void_mask(labels, seed=seed + k)
        semi[name] = synthetic.perturb(labels, seed=seed + k, shift=(int(rng.integers(-2, 3)), 1),
                                       jitter=int(rng.integers(0, 3)), noise=float(rng.random() * 0.02),
                                       missing=[1] if rng.random() < .3 else (), spurious=int(rng.integers(0, 2)))
        unsup[name] = synthetic.proposals(labels, int(rng.integers(1, 6)), seed=seed + k)
    synthetic.write_davis(os.path.join(root, "DAVIS"), truth, void=voids, unsupervised=truth)
    synthetic.write_davis_results(os.path.join(root, "semi"), semi)
    synthetic.write_davis_results(os.path.join(root, "unsup"), unsup)
    synthetic.write_sav(os.path.join(root, "sav_gt"), truth)
    synthetic.write_sav(os.path.join(root, "sav_pred"), semi)


def _official_vos(jobs, tmp_path):
    jpath, opath = tmp_path / "jobs.json", tmp_path / "out.json"
    jpath.write_text(json.dumps(jobs))
    proc = subprocess.run([os.environ["BOUNDARY_API_VOS_PYTHON"], os.path.join(HERE, "official_vos.py"),
                           str(jpath), str(opath), "--davis2017", os.environ["BOUNDARY_API_DAVIS2017"],
                           "--sav", os.environ["BOUNDARY_API_SAV"]], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(opath.read_text())["results"]


@pytest.mark.parametrize("seed", SEEDS)
def test_davis_and_sav_equal_the_official_code_live(seed, tmp_path):
    _need(VOS_ENV)
    _vos_set(str(tmp_path), seed)
    root = str(tmp_path)
    jobs = [dict(kind="davis", davis_root=os.path.join(root, "DAVIS"), task=task, gt_set="val",
                 res_path=os.path.join(root, res)) for task, res in (("semi-supervised", "semi"),
                                                                       ("unsupervised", "unsup"))]
    jobs += [dict(kind="sav", gt_root=os.path.join(root, "sav_gt"), pred_root=os.path.join(root, "sav_pred"),
                  skip_first_and_last=skip) for skip in (True, False)]
    official = _official_vos(jobs, tmp_path)
    for job, gold in zip(jobs, official):
        if job["kind"] == "davis":
            if "error" in gold:
                with pytest.raises(ValueError):
                    DAVISEvaluation(job["davis_root"], job["task"], "val").evaluate(job["res_path"])
                continue
            mine = DAVISEvaluation(job["davis_root"], job["task"], "val").evaluate(job["res_path"])
            assert list(mine) == list(gold["evaluate"])
            for m, stats in gold["evaluate"].items():
                for k in ("M", "R", "D"):
                    assert close(mine[m][k], stats[k]), (job["task"], m, k)
                assert list(mine[m]["M_per_object"]) == list(stats["M_per_object"])
        else:
            if "error" in gold:
                with pytest.raises(ValueError), contextlib.redirect_stdout(io.StringIO()):
                    sav_benchmark([job["gt_root"]], [job["pred_root"]], True, 1,
                                  skip_first_and_last=job["skip_first_and_last"], write_csv=False)
                continue
            with contextlib.redirect_stdout(io.StringIO()):
                jf, j, f, objects = sav_benchmark([job["gt_root"]], [job["pred_root"]], True, 1,
                                                  skip_first_and_last=job["skip_first_and_last"], write_csv=False)
            b = gold["benchmark"]
            assert close(jf, b["global_jf"]) and close(j, b["global_j"]) and close(f, b["global_f"])


def _official_vis(python, spec, tmp_path):
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    proc = subprocess.run([python, os.path.join(HERE, "make_vis_golden.py"), "--run", str(path)],
                          capture_output=True, text=True, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_ytvis_equals_the_official_forks_live(seed, iou_type, tmp_path):
    _need(VIS_ENV)
    gt, results = synthetic_vis.generate(seed=seed)
    gt_path, res_path = tmp_path / "gt.json", tmp_path / "results.json"
    gt_path.write_text(json.dumps(gt))
    res_path.write_text(json.dumps(results))
    spec = {"iouType": iou_type, "gt": str(gt_path), "results": str(res_path), "npz": str(tmp_path / "e.npz"),
            "n_derived": 0}
    python = os.environ["BOUNDARY_API_YTVOS_PYTHON"]
    if iou_type == "boundary":
        spec.update(get_boundary=True, dilation_ratio=0.02)
        python = os.environ["BOUNDARY_API_HQYTVIS_PYTHON"]
    gold = _official_vis(python, spec, tmp_path)
    with contextlib.redirect_stdout(io.StringIO()):
        ytgt = YTVOS(str(gt_path))
        ev = YTVOSeval(ytgt, ytgt.loadRes(str(res_path)), iou_type)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    assert gold["error"] is None, gold["error"]
    assert close(list(map(float, ev.stats)), gold["stats"])
    for e in gold["ious"]:
        got = ev.ious[e["video_id"], e["category_id"]]
        if e["kind"] == "list":
            assert got == []
        else:
            assert close(np.asarray(got).reshape(-1).tolist(), e["values"])


@pytest.mark.parametrize("seed", SEEDS[:2])
def test_evaluation_method_command_line_live(seed, tmp_path):
    """Issue 46: davis2017-evaluation's own command line, ``evaluation_method.py
    --davis_path D --results_path R`` (its default task: unsupervised), and the same words
    given to ``boundary-eval vos``: the same two tables (boundary-eval's titles also name
    the task) and byte-identical CSV files."""
    import shutil

    from boundary_api.cli import main

    _need(VOS_ENV[:2])
    _vos_set(str(tmp_path), seed)
    davis, res = str(tmp_path / "DAVIS"), str(tmp_path / "unsup")
    official_res = str(tmp_path / "official_res")
    shutil.copytree(res, official_res)  # (the script writes its CSV files into the results folder)
    script = os.path.join(os.environ["BOUNDARY_API_DAVIS2017"], "evaluation_method.py")
    proc = subprocess.run([os.environ["BOUNDARY_API_VOS_PYTHON"], script, "--davis_path", davis,
                           "--results_path", official_res], capture_output=True, text=True,
                          cwd=os.environ["BOUNDARY_API_DAVIS2017"])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Evaluating sequences for the unsupervised task..." in proc.stdout
    tables = proc.stdout[proc.stdout.index("---"):proc.stdout.index("\n\nTotal time")]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["vos", "--davis_path", davis, "--results_path", res, "--csv-dir", str(tmp_path / "csv"),
                     "-q"]) == 0
    printed = out.getvalue()
    assert "unsupervised task" in printed.splitlines()[0]
    assert tables in printed.replace(", unsupervised task", "")
    for name in ("global_results-val.csv", "per-sequence_results-val.csv"):
        with open(os.path.join(official_res, name)) as a, open(tmp_path / "csv" / name) as b:
            assert a.read() == b.read(), name


def test_fork_loading_live(tmp_path):
    """Issue 46: make_fork_loading_golden.py's cases run on the fork now, the same as stored."""
    _need(VIS_ENV[:1])
    sys.path.insert(0, HERE)
    import make_fork_loading_golden as maker

    spec = {}
    for case, (_, params) in maker.CASES.items():
        gt, results = maker.inputs(case)
        os.makedirs(tmp_path / case)
        (tmp_path / case / "gt.json").write_text(json.dumps(gt))
        (tmp_path / case / "results.json").write_text(json.dumps(results))
        spec[case] = {k: (maker.first2(gt) if v == "first2" else v) for k, v in params.items()}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    proc = subprocess.run([os.environ["BOUNDARY_API_YTVOS_PYTHON"], os.path.join(HERE, "make_fork_loading_golden.py"),
                           "--run", str(tmp_path)], capture_output=True, text=True, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-2000:]
    stored = json.load(open(maker.OUT))["runs"]
    live = json.loads(proc.stdout)
    assert live.keys() == stored.keys()
    for case in live:
        a, b = live[case], stored[case]
        if "error" in b:
            assert a["error"]["class"] == b["error"]["class"] and a["error"]["stage"] == b["error"]["stage"], case
        else:
            assert close(a["stats"], b["stats"]) and a["vidIds"] == b["vidIds"], case
