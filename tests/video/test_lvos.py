"""LVOS (boundary_api.video.LVOSEvaluation) against lvos-evaluation: its stored
values on every generated case (tests/data/video/lvos_golden.json, made by
make_mose_lvos_golden.py): the three returned dicts (types included), every
object's per-frame J and F as the original places them, evaluation_method.py's
two CSV files; and where the original stops."""
import math
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mose_lvos_cases as cases  # noqa: E402
from vos_cases import close, golden, job_params, num, stored_job  # noqa: E402

from boundary_api.video import LVOS, LVOSEvaluation, evaluate_lvos  # noqa: E402

GOLD = golden("lvos_golden.json")
built = cases.CASES.fixture()


#: where lvos-evaluation stops, what this package raises: class, words of the message
ERRORS = {
    "missing_frame": (FileNotFoundError, "frame 00000015 not found"),       # the original: sys.exit(), status 0
    "no_frame_nums": (ValueError, "its frame_range has no 'frame_nums'"),   # KeyError
    "range_too_long": (IndexError, "yields 8 frames, more than its frame_nums 5"),
    "other_size": (AssertionError, "is not the size of its annotation"),
    "no_unseen_list": (FileNotFoundError, "unseen_videos.txt not found"),
    "single_unknown_value": (ValueError, "Unknown mask value"),
}


def _metric(job):
    return job["metric"][0] if len(job["metric"]) == 1 else tuple(job["metric"])


def _evaluate(job, monkeypatch):
    monkeypatch.chdir(job["cwd"] or os.path.dirname(job["lvos_root"]))
    ev = LVOSEvaluation(job["lvos_root"], job["task"], job["gt_set"], codalab=job["codalab"])
    return ev, ev.evaluate(job["res_path"], metric=_metric(job))


def _same_tree(a, b, path=""):
    """``a`` (ours) equals the stored ``b``: dicts in the same key order, lists
    of the same length, numbers to 1e-12 (NaN equal to NaN)."""
    if isinstance(b, dict):
        assert isinstance(a, dict) and list(a) == list(b), (path, list(a), list(b))
        for k in b:
            _same_tree(a[k], b[k], f"{path}/{k}")
    elif isinstance(b, list):
        assert isinstance(a, list) and len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _same_tree(x, y, f"{path}[{i}]")
    else:
        assert close(a, b), (path, a, b)


@pytest.mark.parametrize("name,k", job_params(GOLD))
def test_golden(name, k, built, monkeypatch, tmp_path):
    job, gold = stored_job(built, GOLD, name, k)
    if "error" in gold:
        cls, words = ERRORS[job["label"]]
        with pytest.raises(cls) as e:
            _evaluate(job, monkeypatch)
        assert words in str(e.value) and isinstance(e.value, ValueError)
        return
    ev, res = _evaluate(job, monkeypatch)
    _same_tree([{m: {s: (v if not isinstance(v, dict) else v) for s, v in d.items()} for m, d in r.items()}
                for r in res], gold["evaluate"])
    assert [type(r["V"]["M"]).__name__ for r in res if "V" in r] == gold["v_types"]
    # every object's per-frame values, as the original placed them in its (1, n) arrays
    seqs = ev.dataset.sequences
    for seq, values in gold["per_sequence"].items():
        for pos, obj in enumerate(seqs.get(seq, {})):
            mine = ev.per_frame[f"{seq}_{pos + 1}"]
            for m in ("J", "F"):
                if m in mine:
                    assert close(mine[m][0], values[m][str(obj)][0]), (seq, obj, m)
    if "method" in gold:
        result = evaluate_lvos(job["lvos_root"], job["res_path"], task=job["task"], gt_set=job["gt_set"])
        paths = result.write_csv(str(tmp_path))
        for path in paths:
            with open(path) as f:
                assert f.read() == gold["method"]["files"][os.path.basename(path)]


def test_b_metric(built, monkeypatch):
    root, jobs, _ = built("lvos_basic")
    job = jobs[0]
    monkeypatch.chdir(job["cwd"])
    ev = LVOSEvaluation(job["lvos_root"], "semi-supervised", "valid")
    res, seen, unseen = ev.evaluate(job["res_path"], metric=("J", "F", "B"))
    assert "V" not in res and set(res["B"]) == {"M", "R", "D", "M_per_object"}
    for key, m in res["B"]["M_per_object"].items():
        assert m == np.nanmean(ev.per_frame[key]["B"])
        assert 0 <= m <= 1
    assert len(seen["B"]["M"]) + len(unseen["B"]["M"]) == len(res["B"]["M"])
    r = evaluate_lvos(job["lvos_root"], job["res_path"], metrics=("J", "F", "V", "B"))
    assert list(r.per_object[0]) == ["Sequence", "J-Mean", "F-Mean", "V-Mean", "B-Mean"]
    assert "B-unseen-Mean" in r.metrics


def test_arguments(built, monkeypatch):
    root, jobs, _ = built("lvos_basic")
    job = jobs[0]
    monkeypatch.chdir(job["cwd"])
    ev = LVOSEvaluation(job["lvos_root"], "semi-supervised", "valid", use_cache=True)
    with pytest.raises(ValueError, match="Temporal metric not supported"):
        ev.evaluate(job["res_path"], metric=("J", "T"))
    with pytest.raises(ValueError, match="Metric possible values"):
        ev.evaluate(job["res_path"], metric=("V",))
    with pytest.raises(ValueError, match="unknown metric 'X'"):
        ev.evaluate(job["res_path"], metric=("J", "X"))
    with pytest.raises(FileNotFoundError, match="results folder not found"):
        ev.evaluate(job["res_path"] + "_no")
    with pytest.raises(ValueError, match="Subset should be in"):
        LVOS(job["lvos_root"], subset="val")
    with pytest.raises(ValueError, match="The only tasks"):
        LVOS(job["lvos_root"], task="semi", subset="valid")
    with pytest.raises(FileNotFoundError, match="test_meta.json"):
        LVOS(job["lvos_root"], subset="test")
    assert not os.path.exists("cache_data")
    # the lists can be named
    ev = LVOSEvaluation(job["lvos_root"], "semi-supervised", "valid", unseen_videos=os.path.join(job["cwd"],
                                                                                                 "unseen_videos.txt"))
    assert ev.unseen_videos == ["vidB"]


def test_bad_meta(tmp_path):
    (tmp_path / "valid_meta.json").write_text("{")
    with pytest.raises(ValueError, match="is not valid JSON"):
        LVOS(str(tmp_path), subset="valid")
    (tmp_path / "valid_meta.json").write_text('{"videos": {"a": {}}}')
    with pytest.raises(ValueError, match="video 'a': no 'objects'"):
        LVOS(str(tmp_path), subset="valid")


def test_get_mask(built):
    root, jobs, _ = built("lvos_quirks")
    d = LVOS(jobs[0]["lvos_root"], subset="valid")
    masks, void = d.get_mask("q1", "00000010", "255")
    assert masks.shape[0] == 1 and set(np.unique(masks)) <= {0, 1} and not void.any()
    labels, void = d.get_mask("q1", "00000010")
    assert 255 not in labels and (void == 1).any() == (labels.size and void.any())
    assert list(d.get_sequences()) == ["q1", "q2"]
    assert math.isnan(num("NaN"))
