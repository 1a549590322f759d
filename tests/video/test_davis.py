"""boundary_api.video.DAVISEvaluation against davis2017-evaluation's stored runs
(tests/data/video/davis_golden.json, made by make_vos_golden.py on generated data):
the returned dict (keys, order, types, values), every object's per-frame J and F, the
unsupervised matching, evaluation_method.py's CSV files, and the refusals."""
import contextlib
import io
import json
import os
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import vos_cases  # noqa: E402

from boundary_api.video import DAVISEvaluation, evaluate_davis  # noqa: E402

DATA = os.path.join(os.path.dirname(HERE), "data", "video")

with open(os.path.join(DATA, "davis_golden.json")) as _f:
    DAVIS = json.load(_f)

#: where the official code stops: the exception boundary_api raises instead (the
#: official SystemExit, and crashes, become one clear exception)
ERRORS = {
    "nojpg_refused": FileNotFoundError,
    "semi_above": ValueError,          # official: prints and sys.exit()
    "unsup_21": ValueError,            # official: prints and sys.exit()
    "semi_hole": FileNotFoundError,    # official: prints and sys.exit()
    "semi_size": ValueError,
    "unsup_size": ValueError,
    "semi_rgb": ValueError,
    "annotation_missing": FileNotFoundError,  # official: AttributeError reading the path -1
    "semi_two_frames": IndexError,
    "blank_line": FileNotFoundError,
    "bad_subset": ValueError,
    "bad_task": ValueError,
    "bad_metric": ValueError,
    "no_metric": ValueError,
    "missing_root": FileNotFoundError,
}


close = vos_cases.close


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    get = vos_cases.builder(tmp_path_factory)

    def jobs(name):
        root, job_list, fp = get(name)
        assert fp == DAVIS["cases"][name]["fingerprint"]
        return job_list
    return jobs


def _run(job, **kw):
    ev = DAVISEvaluation(job["davis_root"], job["task"], job["gt_set"], sequences=job.get("sequences", "all"),
                         codalab=job.get("codalab", False), **kw)
    metric = job.get("metric", ("J", "F"))
    metric = tuple(metric) if isinstance(metric, list) else metric
    return ev, ev.evaluate(job["res_path"], metric=metric)


@pytest.mark.parametrize("name,k", vos_cases.job_params(DAVIS))
def test_davis_equals_the_official_code(name, k, built):
    job = built(name)[k]
    gold = DAVIS["cases"][name]["jobs"][k]["result"]
    if "error" in gold:
        with pytest.raises(ERRORS[job["label"]]) as e:
            _run(job)
        assert isinstance(e.value, ValueError)  # (every refusal is also a ValueError)
        assert "\n" not in str(e.value)
        return
    ev, mine = _run(job)
    want = gold["evaluate"]
    assert list(mine) == list(want)
    for m in want:
        assert list(mine[m]) == ["M", "R", "D", "M_per_object"]
        for stat in ("M", "R", "D"):
            assert close(mine[m][stat], want[m][stat]), (m, stat)
            assert all(type(v) is np.float64 for v in mine[m][stat])
        assert list(mine[m]["M_per_object"]) == list(want[m]["M_per_object"])
        assert close(list(mine[m]["M_per_object"].values()), list(want[m]["M_per_object"].values()))
    # every object's per-frame values, in the official row order
    rows = [(s["sequence"], i, s) for s in gold["per_sequence"] for i in range(len(s.get("J", s.get("F", []))))]
    for seq, i, s in rows:
        got = ev.per_frame[f"{seq}_{i + 1}"]
        for m in ("J", "F"):
            if m in want:
                assert close(got[m], s[m][i]), (seq, i, m)
    # evaluation_method.py's two CSV files, from the library's numbers
    if "method" in gold:
        result = evaluate_davis(job["davis_root"], job["res_path"], task=job["task"], gt_set=job["gt_set"])
        out = os.path.join(os.path.dirname(job["res_path"]), f"csv-{name}-{k}")
        paths = result.write_csv(out)
        for p in paths:
            with open(p) as f:
                assert f.read() == gold["method"]["csv"][os.path.basename(p)], p
        # and the two tables it prints, as pandas formats them (the task added to their titles)
        printed = gold["method"]["stdout"]
        tables = printed[printed.index("---"):printed.index("\n\nTotal time")]
        assert f", {job['task']} task -" in result.table()
        assert result.table().replace(f", {job['task']} task", "") == tables


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_numbers_do_not_depend_on_threads(threads, built):
    job = built("basic")[1]  # unsupervised
    _, want = _run(job)
    _, got = _run(job, num_threads=threads)
    assert got == want


def test_boundary_iou_per_frame_is_the_oracles(built):
    """'B' (the paper's Boundary IoU of each frame's object masks) against the
    oracle on the masks the official code compares, void left out as for J."""
    import oracle_vos as ov

    for job in built("basic"):
        ev = DAVISEvaluation(job["davis_root"], job["task"], job["gt_set"])
        res = ev.evaluate(job["res_path"], metric=("J", "F", "B"))
        assert list(res) == ["J", "F", "B"]
        seq = next(iter(ev.dataset.get_sequences()))
        masks = ev.dataset.sequences[seq]["masks"]
        frames = masks[1:-1] if job["task"] == "semi-supervised" else masks
        from PIL import Image

        gts = [np.array(Image.open(p)) for p in frames]
        preds = [np.array(Image.open(os.path.join(job["res_path"], seq, os.path.basename(p)))) for p in frames]
        n_obj = int(np.where(np.array(Image.open(masks[0])) == 255, 0, np.array(Image.open(masks[0]))).max())
        if job["task"] != "semi-supervised":
            continue  # (unsupervised rows follow the matching; J and F pin them above)
        for i in range(n_obj):
            want = [ov.boundary_iou(np.where(g == 255, 0, g) == i + 1, p == i + 1, 0.02)
                    for g, p in zip(gts, preds)]
            assert close(ev.per_frame[f"{seq}_{i + 1}"]["B"], want)


@pytest.mark.slow
def test_decay_option_exact(built):
    """decay='exact' bins the frames past 256 without the official uint8 wrap."""
    import oracle_vos as ov

    job = built("decay")[0]
    ev = DAVISEvaluation(job["davis_root"], job["task"], job["gt_set"], decay="exact")
    res = ev.evaluate(job["res_path"])
    for name, values in ev.per_frame.items():
        j = values["J"]
        assert close([res["J"]["D"][list(res["J"]["M_per_object"]).index(name)]],
                     [ov.statistics(list(j), quirk=False)[2]])


def test_evaluate_prints_nothing_but_debug_lines(built):
    job = built("basic")[0]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        DAVISEvaluation(job["davis_root"], job["task"], job["gt_set"]).evaluate(job["res_path"], debug=True)
    seqs = [s for s in open(os.path.join(job["davis_root"], "ImageSets", "2017", "val.txt")).read().split()]
    assert out.getvalue().splitlines() == seqs


def test_tables_format_floats_as_pandas_does():
    """evaluation_method.py's tables are pandas' DataFrame.to_string(index=False): the
    layout reproduced on columns that exercise its float formatting, against pandas' own
    output (tests/data/video/pandas_tables.json, make_pandas_tables.py)."""
    from boundary_api.video.files import pandas_table

    stored = json.load(open(os.path.join(HERE, "..", "data", "video", "pandas_tables.json")))
    for case, gold in stored["cases"].items():
        columns = [(h, [float("nan") if v == "nan" else v for v in values]) for h, values in gold["columns"]]
        assert pandas_table(columns) == gold["text"], case
