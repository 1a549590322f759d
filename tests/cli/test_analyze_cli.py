"""boundary-eval analyze / report: the JSON document, the files written, bad input
(one line on stderr, exit 2, nothing written)."""
import contextlib
import io
import json
import os

import pytest

from analysis_data import build, rle, square
from boundary_api import COCO
from boundary_api.cli import main
from boundary_api.diagnostics.tide import ERROR_TYPES, analyze_errors, boundary_coverage
from conftest import COCO_DT, COCO_GT


def _strict(text):
    def bad(name):
        raise AssertionError(f"{name} in the JSON")
    return json.loads(text, parse_constant=bad)


def test_analyze_json_out_on_coco(tmp_path, capsys):
    out = tmp_path / "a.json"
    assert main(["analyze", "--gt", COCO_GT, "--dt", COCO_DT, "--json-out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "TIDE AP (IoU 0.5; Boundary AP, dilation ratio 0.02)" in printed and all(t in printed for t in ERROR_TYPES)
    doc = _strict(out.read_text())
    assert list(doc)[:2] == ["boundary_api_version", "settings"]
    assert doc["settings"] == {"kind": "coco", "iou_type": "boundary", "dilation_ratio": 0.02, "max_dets": 100,
                               "pos_threshold": 0.5, "background_threshold": 0.1,
                               "inputs": {"--gt": COCO_GT, "--dt": COCO_DT}}
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        dt = gt.loadRes(COCO_DT)
    ref = analyze_errors(gt, dt)
    assert doc["AP"] == ref["ap"]
    assert doc["errors"] == ref["errors"] and set(doc["errors"]) == set(ERROR_TYPES)
    for size in ("small", "medium", "large"):
        assert doc["per_size"][size]["errors"] == ref["per_size"][size]["errors"]
    assert set(doc["per_category"]) == {str(c) for c in ref["per_category"]}
    person = doc["per_category"]["1"]
    assert person["id"] == 1 and person["name"] == "person"
    assert person["errors"] == ref["per_category"][1]["errors"] and person["AP"] == ref["per_category"][1]["ap"]
    assert doc["boundary_coverage"] == boundary_coverage(gt)
    assert os.listdir(tmp_path) == ["a.json"]


def test_analyze_segm_has_no_boundary_errors(tmp_path):
    out = tmp_path / "a.json"
    assert main(["analyze", "--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "segm", "--json-out", str(out)]) == 0
    doc = _strict(out.read_text())
    assert doc["errors"]["boundary"] == 0.0 and doc["settings"]["dilation_ratio"] is None


@pytest.fixture
def small_case(tmp_path):
    gt, _ = build([(1, 1, square(10, 10, 40)), (1, 2, square(60, 60, 30))], [(1, 1, square(10, 10, 40), 0.5)])
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(gt.dataset))
    dts = [{"image_id": 1, "category_id": 1, "segmentation": rle(square(12, 12, 40)), "score": 0.9},
           {"image_id": 1, "category_id": 2, "segmentation": rle(square(60, 60, 30)), "score": 0.8}]
    dt_path = tmp_path / "dt.json"
    dt_path.write_text(json.dumps(dts))
    return str(gt_path), str(dt_path)


def test_report_png_format(small_case, tmp_path, capsys):
    gt, dt = small_case
    out = tmp_path / "figs"
    assert main(["report", "--gt", gt, "--dt", dt, "--out", str(out), "--format", "png",
                 "--iou-thrs", "0.5,0.9"]) == 0
    # (with the diagnostics' figures of issue 30)
    assert sorted(os.listdir(out)) == ["confusion.png", "errors.png", "intervals.png", "pr_curves.png",
                                       "reliability.png", "scatter.png", "worst_00.png"]
    assert sorted(os.listdir(tmp_path)) == ["dt.json", "figs", "gt.json"]
    assert capsys.readouterr().out.strip() == f"boundary-eval: wrote {out}"


@pytest.mark.parametrize("argv, message", [
    (["analyze", "--gt", "missing.json", "--dt", "{dt}"], "missing.json"),
    (["analyze", "--gt", "{gt}", "--dt", "{dt}", "--pos-threshold", "0.05"], "--background-threshold"),
    (["analyze", "--gt", "{gt}", "--dt", "{gt}"], "results"),
    (["report", "--gt", "{gt}", "--dt", "{dt}", "--out", "{tmp}"], "is a directory"),
    (["report", "--gt", "{gt}", "--dt", "{dt}", "--out", "{tmp}/r.html", "--images", "{tmp}/nope"], "--images"),
    (["report", "--gt", "{gt}", "--dt", "{dt}", "--out", "{tmp}/r.html", "--iou-thrs", "0.3"], "--iou-thrs"),
    (["report", "--gt", "{gt}", "--dt", "{dt}", "--out", "{gt}"], "the file given to --gt"),
    (["analyze", "--gt", "{gt}", "--dt", "{dt}", "--json-out", "{dt}"], "the file given to --dt"),
])
def test_bad_input_is_one_line(small_case, tmp_path, capsys, argv, message):
    gt, dt = small_case
    before = sorted(os.listdir(tmp_path))
    argv = [a.format(gt=gt, dt=dt, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("boundary-eval: error: ") and message in err[0], err
    assert sorted(os.listdir(tmp_path)) == before


def test_bad_flag_values_are_usage_errors(small_case, capsys):
    gt, dt = small_case
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "--gt", gt, "--dt", dt, "--pos-threshold", "1.5"])
    assert exc.value.code == 2 and "must be in [0, 1]" in capsys.readouterr().err


@pytest.mark.parametrize("cmd, flags", [
    ("analyze", ["--gt", "--dt", "--iou-type", "--dilation-ratio", "--pos-threshold", "--background-threshold",
                 "--max-dets", "--threads", "--json-out"]),
    ("report", ["--gt", "--dt", "--out", "--format", "--images", "--worst", "--iou-thrs", "--dilation-ratio"]),
])
def test_help_explains_every_flag(cmd, flags, capsys):
    with pytest.raises(SystemExit) as exc:
        main([cmd, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for f in flags:
        assert f in text, f


def test_progress_bar_only_on_a_terminal_after_a_few_seconds(monkeypatch):
    from boundary_api.cli.report import _Progress

    p = _Progress(total=3)
    p.start -= 10  # as if it had been running for 10 s
    p("step")  # pytest's stderr is not a terminal: no bar
    assert p.bar is None
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    q = _Progress(total=3)
    q("fast step")  # under 2 s: still no bar
    assert q.bar is None
    q.start -= 10
    q("slow step")
    assert q.bar is not None and q.bar.n == 2
    q.close()
