"""MOSEv2 (boundary_api.video.mosev2_benchmark) against MOSE-api's score.py: its
stored values on every generated case (tests/data/video/mosev2_golden.json, made
by make_mose_lvos_golden.py): every per-frame J, F and F_new, every object's row,
the global numbers, the printed table, metrics.json and scores.txt byte for byte;
what it scores silently (strict=False) and where it stops."""
import json
import math
import os
import sys
import warnings

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import mose_lvos_cases as cases  # noqa: E402
from vos_cases import close, golden, job_params, num, stored_job  # noqa: E402

from boundary_api import SuspectInputWarning  # noqa: E402
from boundary_api.video import evaluate_mosev2, mosev2_benchmark  # noqa: E402
from boundary_api.video import mosev2 as M  # noqa: E402

GOLD = golden("mosev2_golden.json")
built = cases.CASES.fixture()


#: where score.py stops, what this package raises (class, words of the message)
ERRORS = {
    "length": (ValueError, "has length 7 but its ground-truth folder"),
    "size": (ValueError, "is 42x48, not 40x48 like the size"),
    "no_meta_entry": (ValueError, "has no entry for video 'v'"),
    "frame_name": (ValueError, "x2.png: MOSEv2 frames are named by their number"),
    "short": (FileNotFoundError, "has 4 frames, but video v has 6"),
}
#: jobs score.py scores without complaint that strict=True refuses
REFUSED = {"silent": (FileNotFoundError, "not found"), "single": None}


def _run(job, strict=None, **kw):
    strict = job["strict"] if strict is None else strict
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if not strict else "error", SuspectInputWarning)
        return M._evaluate(job["meta"], job["ann"], job["pred"], strict=strict, **kw)


def _same(a, b):
    if a is None or b is None:
        return a is None and b is None
    return close(a, b)


@pytest.mark.parametrize("name,k", job_params(GOLD))
def test_golden(name, k, built):
    job, gold = stored_job(built, GOLD, name, k)
    if "error" in gold:
        cls, words = ERRORS[job["label"]]
        with pytest.raises(cls) as e:
            mosev2_benchmark(job["meta"], job["ann"], job["pred"])
        assert words in str(e.value)
        return
    rows, per_frame, _ = _run(job)
    assert list(rows) == [k for v in os.listdir(job["ann"]) for k in gold["rows"] if k.rsplit("_", 1)[0] == v]
    assert set(rows) == set(gold["rows"])
    for key, want in gold["rows"].items():
        assert all(_same(a, b) for a, b in zip(rows[key], want)), (key, rows[key], want)
        # score.py's ints for a video it could not score
        assert [type(x) is int for x in rows[key][:3]] == [type(x) is int for x in want[:3]]
        pf = gold["per_frame"][key]
        if pf["errors"] or not pf["J"]:
            assert key not in per_frame
            continue
        for m in ("J", "F", "F_new"):
            assert close(per_frame[key][m], pf[m]), (key, m)
    # the global numbers: score.py's means over its rows (in its order)
    ordered = {key: rows[key] for key in gold["rows"]}
    res = M._result(ordered, None)
    text = M.mosev2_files(ordered, res, num(gold["total_time"]))
    assert text["scores.txt"] == gold["files"]["scores.txt"]
    assert text["metrics.json"] == gold["files"]["metrics.json"]
    start = gold["stdout"].index("Video ")
    assert M.mosev2_report(ordered, res) == gold["stdout"][start:]
    if REFUSED.get(job["label"]):
        with pytest.raises(ValueError):
            mosev2_benchmark(job["meta"], job["ann"], job["pred"])


def _global_from_rows(rows):
    """score.py's global numbers from its rows, with plain NumPy."""
    col = list(zip(*rows.values()))
    present = [[x for x in col[i] if x is not None] for i in range(7)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        j, fn, f = np.mean(col[0]), np.mean(col[1]), np.mean(col[2])
        return {"J&F_new": (j + fn) / 2, "J": j, "F_new": fn,
                "disappear_J&F_new": (np.mean(present[3]) + np.mean(present[4])) / 2,
                "reappear_J&F_new": (np.mean(present[5]) + np.mean(present[6])) / 2, "F": f, "J&F": (j + f) / 2}


@pytest.mark.parametrize("name,k", [p for p in job_params(GOLD)
                                    if "error" not in GOLD["cases"][p.values[0]]["jobs"][p.values[1]]["result"]])
def test_benchmark_return_value(name, k, built):
    """mosev2_benchmark's dict: the rows as named fractions, the globals unrounded
    (score.py's rounded ones come from them)."""
    root, jobs, _ = built(name)
    job, gold = jobs[k], GOLD["cases"][name]["jobs"][k]["result"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SuspectInputWarning)
        out = mosev2_benchmark(job["meta"], job["ann"], job["pred"], strict=job["strict"], video_order="sorted")
    want = _global_from_rows({k: [num(x) if x is not None else None for x in v] for k, v in gold["rows"].items()})
    for g in M.GLOBAL_KEYS:
        assert close(out[g], want[g]), g
    names = ("J", "F_new", "F", "disappear_J", "disappear_F", "reappear_J", "reappear_F")
    for key, v in gold["rows"].items():
        got = out["per_object"][key]
        assert set(got) == set(names)
        assert all(_same(got[n], x) for n, x in zip(names, v))
    videos = [k.rsplit("_", 1)[0] for k in out["per_object"]]
    assert videos == sorted(videos)


def test_strict_refusals(built):
    root, jobs, _ = built("mose_silent")
    job = jobs[0]
    with pytest.raises(ValueError) as e:
        mosev2_benchmark(job["meta"], job["ann"], job["pred"])
    msg = str(e.value)
    assert ("00004.png not found" in msg) or ("no prediction folder" in msg) or ("needs at least 3" in msg)
    with pytest.warns(SuspectInputWarning):
        mosev2_benchmark(job["meta"], job["ann"], job["pred"], strict=False)
    # the single-video set: strict reads the one folder as the video, score.py descends into it
    single = jobs[1]
    out = mosev2_benchmark(single["meta"], single["ann"], single["pred"])
    assert out["J"] > 0.5
    gold = GOLD["cases"]["mose_silent"]["jobs"][1]["result"]
    assert all(v[0] == 0 for v in gold["rows"].values())


def test_b_metric_and_result(built):
    root, jobs, _ = built("mose_basic")
    job = jobs[0]
    out = mosev2_benchmark(job["meta"], job["ann"], job["pred"], metrics=("J", "F", "B"))
    rows, per_frame, extra = M._evaluate(job["meta"], job["ann"], job["pred"], metrics=("J", "F", "B"))
    for key, v in out["per_object"].items():
        assert 0 <= v["B"] <= 1
        assert v["B"] == per_frame[key]["B"].mean()
    assert close(out["B"], np.mean([v["B"] for v in out["per_object"].values()]))
    res = evaluate_mosev2(job["meta"], job["ann"], job["pred"], metrics=("J", "F", "B"), video_order="sorted")
    assert res.kind == "mosev2" and set(res.metrics) == set(M.GLOBAL_KEYS) | {"B"}
    assert res.per_object[0]["video"] == "a" and res.per_object[0]["object"] == "1"
    assert "Copy-Paste" in res.table()


@pytest.mark.parametrize("bad,words", [
    ("notjson", "is not valid JSON"),
    ("novideos", "no 'videos' object"),
    ("nolength", "no 'length'"),
    ("badid", "object id 'x' is not a number"),
    ("zeroid", "is not in 1..65535"),
    ("missing", "meta file not found"),
])
def test_bad_meta(tmp_path, built, bad, words):
    root, jobs, _ = built("mose_layout")
    job = jobs[0]
    meta = tmp_path / "meta.json"
    with open(job["meta"]) as f:
        doc = json.load(f)
    v = doc["videos"]["vid_a"]
    text = {"notjson": "{", "novideos": "{}", "missing": None}.get(bad)
    if bad == "nolength":
        del v["length"]
    elif bad == "badid":
        v["objects"] = ["x"]
    elif bad == "zeroid":
        v["objects"] = [0]
    if text is None and bad != "missing":
        text = json.dumps(doc)
    if text is not None:
        meta.write_text(text)
    with pytest.raises(ValueError) as e:
        mosev2_benchmark(str(meta), job["ann"], job["pred"])
    assert words in str(e.value) and str(meta) in str(e.value)


def test_argument_checks(built):
    root, jobs, _ = built("mose_layout")
    job = jobs[0]
    with pytest.raises(ValueError, match="unknown metric 'T'"):
        mosev2_benchmark(job["meta"], job["ann"], job["pred"], metrics=("J", "T"))
    with pytest.raises(ValueError, match="video_order"):
        mosev2_benchmark(job["meta"], job["ann"], job["pred"], video_order="random")
    with pytest.raises(FileNotFoundError, match="ground-truth root not found"):
        mosev2_benchmark(job["meta"], job["ann"] + "_no", job["pred"])


def test_frame_modes(tmp_path):
    """Frames as score.py's convert('P') reads them: 1-bit images become 0/255,
    16-bit and colour images are refused (Pillow would quantise them)."""
    from PIL import Image

    from boundary_api.video import synthetic as syn

    g = syn.render_sequence(4, 20, 24, objects=1, seed=1, size=(0.3, 0.4))
    syn.write_mosev2(tmp_path / "gt", {"v": g}, objects={"v": [1, 255]})
    pred = tmp_path / "pred"
    for t in range(4):
        (pred / "v").mkdir(parents=True, exist_ok=True)
        Image.fromarray(g[t] > 0).convert("1").save(pred / "v" / f"{t:05d}.png")
    (pred / "x").mkdir()
    out = mosev2_benchmark(tmp_path / "gt" / "meta.json", tmp_path / "gt" / "Annotations", pred)
    assert out["per_object"]["v_255"]["J"] < 1 and out["per_object"]["v_1"]["J"] < 0.1
    Image.fromarray(g[1].astype(np.uint16) * 300).save(pred / "v" / "00001.png")
    with pytest.raises(ValueError, match="16-bit greyscale PNG"):
        mosev2_benchmark(tmp_path / "gt" / "meta.json", tmp_path / "gt" / "Annotations", pred)
    Image.fromarray(np.stack([g[1]] * 3, -1)).save(pred / "v" / "00001.png")
    with pytest.raises(ValueError, match="00001.png"):
        mosev2_benchmark(tmp_path / "gt" / "meta.json", tmp_path / "gt" / "Annotations", pred)


def test_segments_rules():
    """The disappear / reappear segments, as score.py pairs them."""
    j = np.array([1., .9, .1, .2, .8, .7, .3, .6])
    f = j / 2
    e = np.array([0, 0, 1, 1, 0, 0, 1, 0], bool)
    dj, df, rj, rf = M._segments(j, f, e)
    assert math.isclose(dj, np.mean([np.mean([.1, .2]), .3]))
    assert math.isclose(rj, np.mean([np.mean([.8, .7]), .6]))
    # absent at the first frame: that absence is not a disappearance, its return is a reappearance
    e0 = np.array([1, 1, 0, 0, 1, 0, 0, 0], bool)
    dj, df, rj, rf = M._segments(j, f, e0)
    assert math.isclose(dj, .8) and math.isclose(rj, np.mean([np.mean([.1, .2]), np.mean([.7, .3, .6])]))
    assert M._segments(j, f, np.zeros(8, bool)) == (None, None, None, None)


@pytest.mark.parametrize("name", ["mose_basic", pytest.param("mose_real480", marks=pytest.mark.slow)])
def test_oracle_equals_the_stored_per_frame_values(name, built):
    """The NumPy / scikit-image oracle (oracle_vos.mosev2_*) gives score.py's
    per-frame J, F and F_new on the stored cases: the contract the kernel is
    tested against with hypothesis (test_frames_kernel.py)."""
    import oracle_vos as ov
    from boundary_api.video import _jf

    root, jobs, _ = built(name)
    job = jobs[0]
    gold = GOLD["cases"][name]["jobs"][0]["result"]
    with open(job["meta"]) as f:
        meta = json.load(f)["videos"]
    for vid in sorted(meta)[:2]:
        n = meta[vid]["length"]
        for t in range(1, n - 1):
            g = _jf.read_frame(os.path.join(job["ann"], vid, f"{t:05d}.png"), "gt")
            p = _jf.read_frame(os.path.join(job["pred"], vid, f"{t:05d}.png"), "pred")
            for obj in meta[vid]["objects"]:
                pf = gold["per_frame"][f"{vid}_{obj}"]
                k = int(obj)
                f, fn = ov.mosev2_f(g == k, p == k)
                assert close(ov.mosev2_jaccard(g == k, p == k), pf["J"][t - 1])
                assert close(f, pf["F"][t - 1]) and close(fn, pf["F_new"][t - 1]), (vid, obj, t)


@pytest.mark.parametrize("video,words", [
    ("shifted", "00004.png not found"),
    ("nopred", "no prediction folder for video nopred"),
    ("one", "video one has 1 frames"),
    ("two", "video two has 2 frames"),
])
def test_each_silent_case_is_refused_alone(video, words, built, tmp_path):
    """Each thing score.py scores silently, alone in a set: refused with strict
    (the default), scored as score.py scores it with a warning otherwise."""
    import shutil

    root, jobs, _ = built("mose_silent")
    job = jobs[0]
    with open(job["meta"]) as f:
        meta = json.load(f)
    gt = tmp_path / "gt"
    shutil.copytree(os.path.join(job["ann"], video), gt / video)
    (tmp_path / "meta.json").write_text(json.dumps({"videos": {video: meta["videos"][video]}}))
    pred = tmp_path / "pred"
    pred.mkdir()
    (pred / "unrelated").mkdir()
    if os.path.isdir(os.path.join(job["pred"], video)):
        shutil.copytree(os.path.join(job["pred"], video), pred / video)
    with pytest.raises(ValueError) as e:
        mosev2_benchmark(tmp_path / "meta.json", gt, pred)
    assert words in str(e.value)
    with pytest.warns(SuspectInputWarning):
        out = mosev2_benchmark(tmp_path / "meta.json", gt, pred, strict=False)
    gold = GOLD["cases"]["mose_silent"]["jobs"][0]["result"]["rows"]
    for key, v in out["per_object"].items():
        assert _same(v["J"], gold[key][0]) and _same(v["F_new"], gold[key][1]) and _same(v["F"], gold[key][2])
