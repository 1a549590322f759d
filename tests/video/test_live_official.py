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

from boundary_api.video import DAVISEvaluation, YTVOS, YTVOSeval, sav_benchmark, synthetic, synthetic_vis  # noqa

VOS_ENV = ("BOUNDARY_API_VOS_PYTHON", "BOUNDARY_API_DAVIS2017", "BOUNDARY_API_SAV")
VIS_ENV = ("BOUNDARY_API_YTVOS_PYTHON", "BOUNDARY_API_HQYTVIS_PYTHON")
SEEDS = (1001, 1002, 1003)

pytestmark = pytest.mark.slow


def _need(names):
    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        pytest.skip(f"no official checkout: set {', '.join(missing)}")


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
