"""mosev2_benchmark and LVOSEvaluation against MOSE-api's score.py and lvos-evaluation
run live, where checkouts are present (skipped cleanly otherwise; the stored golden
values always run): fresh sets from the generators with seeds the golden values do not
use, made the same way as the stored ones.

Environment (tests/data/video/README.md says how to build these):

- ``BOUNDARY_API_MOSE`` (a MOSE-api checkout) and ``BOUNDARY_API_MOSE_PYTHON`` (a Python
  that runs its score.py);
- ``BOUNDARY_API_LVOS`` (an lvos-evaluation checkout) and ``BOUNDARY_API_LVOS_PYTHON`` (a
  Python with NumPy < 2.4 that runs it).
"""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from vos_cases import close, need as _need  # noqa: E402

from boundary_api.video import LVOSEvaluation, synthetic  # noqa: E402
from boundary_api.video import mosev2 as M  # noqa: E402

SEEDS = (2001, 2002, 2003)
pytestmark = pytest.mark.slow


def _set(root, seed):
    rng = np.random.default_rng(seed)
    gt, pred = {}, {}
    for k in range(3):
        h, w = int(rng.integers(40, 260)), int(rng.integers(40, 320))
        g = synthetic.render_sequence(int(rng.integers(5, 18)), h, w, objects=int(rng.integers(1, 4)),
                                      seed=int(rng.integers(2 ** 31)), vanishing=bool(k % 2), late=k % 2,
                                      tiny=int(rng.integers(0, 3)), size=(0.02, 0.45), deforming=bool(k == 2))
        gt[f"v{k}"] = g
        pred[f"v{k}"] = synthetic.perturb(g, seed=seed + k, jitter=int(rng.integers(0, 3)),
                                          dilate=int(rng.integers(0, 2)), noise=0.003)
    return gt, pred


def _official(root, job, flag, code, python):
    jobs, out = os.path.join(root, "jobs.json"), os.path.join(root, "out.json")
    with open(jobs, "w") as f:
        json.dump([job], f)
    subprocess.run([python, os.path.join(HERE, "official_mose_lvos.py"), jobs, out, flag, code], check=True,
                   cwd=root, capture_output=True)
    with open(out) as f:
        return json.load(f)["results"][0]


@pytest.mark.parametrize("seed", SEEDS)
def test_mosev2_live(seed, tmp_path):
    _need(("BOUNDARY_API_MOSE", "BOUNDARY_API_MOSE_PYTHON"))
    gt, pred = _set(tmp_path, seed)
    paths = synthetic.write_mosev2(tmp_path / "gt", gt)
    synthetic.write_mosev2_predictions(tmp_path / "pred", pred)
    job = {"kind": "mosev2", "label": "live", "meta": paths["meta"], "ann": paths["gt_root"],
           "pred": str(tmp_path / "pred")}
    gold = _official(str(tmp_path), job, "--mose", os.environ["BOUNDARY_API_MOSE"],
                     os.environ["BOUNDARY_API_MOSE_PYTHON"])
    rows, per_frame, _ = M._evaluate(paths["meta"], paths["gt_root"], str(tmp_path / "pred"))
    assert list(rows) == list(gold["rows"])
    for key, want in gold["rows"].items():
        assert all((a is None and b is None) or close(a, b) for a, b in zip(rows[key], want)), key
        for m in ("J", "F", "F_new"):
            assert close(per_frame[key][m], gold["per_frame"][key][m]), (key, m)
    files = M.mosev2_files(rows, M._result(rows, None), gold["total_time"])
    assert files == gold["files"]


@pytest.mark.parametrize("seed", SEEDS)
def test_lvos_live(seed, tmp_path, monkeypatch):
    _need(("BOUNDARY_API_LVOS", "BOUNDARY_API_LVOS_PYTHON"))
    gt, pred = _set(tmp_path, seed)
    synthetic.write_lvos(tmp_path / "LVOS", gt, unseen=["v1"], unsupervised=["v0"], lists_in=tmp_path / "lists")
    synthetic.write_lvos_results(tmp_path / "res", pred)
    for task in ("semi-supervised", "unsupervised_multiple"):
        job = {"kind": "lvos", "label": task, "lvos_root": str(tmp_path / "LVOS"), "task": task,
               "gt_set": "valid", "codalab": False, "res_path": str(tmp_path / "res"),
               "metric": ["J", "F", "V"], "cwd": str(tmp_path / "lists"), "method_script": False}
        gold = _official(str(tmp_path), job, "--lvos", os.environ["BOUNDARY_API_LVOS"],
                         os.environ["BOUNDARY_API_LVOS_PYTHON"])
        monkeypatch.chdir(tmp_path / "lists")
        res = LVOSEvaluation(str(tmp_path / "LVOS"), task, "valid").evaluate(str(tmp_path / "res"))
        for mine, want in zip(res, gold["evaluate"]):
            for m in want:
                for stat, v in want[m].items():
                    got = mine[m][stat]
                    if isinstance(v, dict):
                        assert list(got) == list(v) and all(close(got[k], v[k]) for k in v), (task, m, stat)
                    else:
                        assert close(got, v), (task, m, stat)
