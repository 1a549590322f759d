"""boundary_api.video.sav_benchmark against SA-V's ``benchmark`` (SAM 2's
sav_dataset/utils/sav_benchmark.py) on its stored runs (tests/data/video/sav_golden.json):
the returned globals and per-object dicts (keys, their types and order, values), the
per-frame IoU and boundary F, results.csv, the printed lines, and the refusals."""
import contextlib
import io
import json
import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import vos_cases  # noqa: E402

from boundary_api.video import sav_benchmark  # noqa: E402
from boundary_api.video.sav import evaluate_sav_video  # noqa: E402

DATA = os.path.join(os.path.dirname(HERE), "data", "video")

with open(os.path.join(DATA, "sav_golden.json")) as _f:
    SAV = json.load(_f)

#: where SA-V stops: what boundary_api raises instead (its exit(1) becomes a ValueError,
#: its TypeError on an empty dataset a ValueError saying so)
ERRORS = {"hole": AssertionError, "size": AssertionError, "two": AssertionError, "edge": AssertionError,
          "short": AssertionError, "extra_strict": ValueError, "missing_strict": ValueError, "none": ValueError}


close = vos_cases.close


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    get = vos_cases.builder(tmp_path_factory)

    def case(name):
        root, jobs, fp = get(name)
        assert fp == SAV["cases"][name]["fingerprint"]
        return root, jobs
    return case


def _text(text, job, root):
    text = text.replace(job["gt_root"], "<gt_root>").replace(job["pred_root"], "<pred_root>").replace(root, "<case>")
    return re.sub(r"Time taken: \d+\.\d+s", "Time taken: <t>s", text)


@pytest.mark.parametrize("name,k", vos_cases.job_params(SAV))
def test_sav_equals_the_official_code(name, k, built):
    root, jobs = built(name)
    job = jobs[k]
    gold = SAV["cases"][name]["jobs"][k]["result"]
    strict = job.get("strict", True)
    csv = os.path.join(job["pred_root"], "results.csv")
    if os.path.exists(csv):
        os.remove(csv)
    if "error" in gold:
        label = job["label"].rsplit("skip", 1)[0].rstrip("_")
        with pytest.raises(ERRORS[label]) as e:
            with contextlib.redirect_stdout(io.StringIO()):
                sav_benchmark([job["gt_root"]], [job["pred_root"]], strict, 2,
                              skip_first_and_last=job["skip_first_and_last"])
        assert isinstance(e.value, ValueError) and "\n" not in str(e.value)
        if gold["error"]["type"] == "AssertionError" and gold["error"]["message"]:
            assert str(e.value).replace(root, "<case>") == gold["error"]["message"]
        return
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        jf, j, f, objects = sav_benchmark([job["gt_root"]], [job["pred_root"]], strict, 2,
                                          skip_first_and_last=job["skip_first_and_last"])
    b = gold["benchmark"]
    assert close(jf, b["global_jf"]) and close(j, b["global_j"]) and close(f, b["global_f"])
    assert [type(x).__name__ for x in jf] == b["global_types"]
    assert len(objects) == len(b["videos"]) == 1
    mine = objects[0]
    assert list(mine) == [v[0] for v in b["videos"][0]]
    for (video, iou, bf) in b["videos"][0]:
        got_iou, got_f = mine[video]
        assert [_key(x) for x in got_iou] == [_key(x[0]) for x in iou], video  # keys, their types and order
        assert close(list(got_iou.values()), [x[1] for x in iou]) and close(list(got_f.values()), [x[1] for x in bf])
        assert all(type(v).__name__ == b["types"][0] for v in got_iou.values())
    with open(csv) as fh:
        assert fh.read() == gold["results_csv"]
    assert _text(out.getvalue(), job, root) == gold["stdout"]
    # the per-frame values of every object, from its first sight
    for pv in gold["per_frame"]:
        _, _, _, extra = evaluate_sav_video(job["gt_root"], job["pred_root"], pv["video"],
                                            skip_first_and_last=job["skip_first_and_last"])
        for po in pv["objects"]:
            for key, values in po["iou"]:
                if key not in po["in_gt"]:
                    continue
                mine_key = po["obj_id"] if po["obj_id"] is not None else key
                frames = extra["per_frame"][mine_key]
                assert close(list(frames["J"]), values), (pv["video"], key)
                fvalues = dict((_key(k2), v) for k2, v in po["f"])[_key(key)]
                assert close(list(frames["F"]), fvalues), (pv["video"], key)


def _key(k):
    """A key as the stored JSON has it (True and ints stay, names stay strings)."""
    return k


def test_boundary_iou_option_adds_a_third_entry(built):
    root, jobs = built("sav_basic")
    job = jobs[0]
    with contextlib.redirect_stdout(io.StringIO()):
        jf, j, f, objects = sav_benchmark([job["gt_root"]], [job["pred_root"]], True, 1, metrics=("J", "F", "B"),
                                          write_csv=False)
        jf2, j2, f2, plain = sav_benchmark([job["gt_root"]], [job["pred_root"]], True, 1, write_csv=False)
    assert (jf, j, f) == (jf2, j2, f2)
    for video, values in objects[0].items():
        assert len(values) == 3 and list(values[2]) == list(values[0])
        assert all(0 <= v <= 100 for v in values[2].values())
        assert values[:2] == plain[0][video]


def test_threads_do_not_change_the_numbers(built):
    root, jobs = built("sav_davislayout")
    job = jobs[0]
    runs = []
    for threads in (1, 2, 3):
        with contextlib.redirect_stdout(io.StringIO()):
            runs.append(sav_benchmark([job["gt_root"]], [job["pred_root"]], True, threads, write_csv=False))
    assert runs[0] == runs[1] == runs[2]


def test_gt_roots_must_be_lists(built):
    root, jobs = built("sav_basic")
    with pytest.raises(TypeError):
        sav_benchmark(jobs[0]["gt_root"], jobs[0]["pred_root"])
