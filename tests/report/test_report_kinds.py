"""The report on LVIS ground truth and with --iou-type bbox (issue 30): the
summary, per-category AP, PR curves and diagnostics of each evaluation equal
the evaluators' and boundary_api.diagnostics' own; TIDE's parts are a note."""
import contextlib
import io
import json
import os
import sys

import numpy as np
import pytest

from boundary_api import COCO, COCOeval, LVIS, LVISEval, LVISResults
from boundary_api.cli import main
from boundary_api.diagnostics.bootstrap import bootstrap, headline_values
from boundary_api.diagnostics.run import diagnose
from boundary_api.diagnostics.tide import analyze_errors, boundary_coverage, pr_curves
from boundary_api.instance.results import coco_stats, per_category_ap
from boundary_api.report import collect, figures, write_html
from conftest import COCO_DT, COCO_GT

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "cli"))
from test_analyze_cli import small_lvis  # noqa: E402


def _evaluate(gt, dt, iou_type):
    with contextlib.redirect_stdout(io.StringIO()):
        if isinstance(gt, LVIS):
            ev = LVISEval(gt, dt, iou_type=iou_type)
        else:
            ev = COCOeval(gt, dt, iou_type)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


@pytest.fixture(scope="module")
def lvis_case(tmp_path_factory):
    gt_path, dt_path = small_lvis(tmp_path_factory.mktemp("lvis"))
    with contextlib.redirect_stdout(io.StringIO()):
        gt = LVIS(gt_path)
        dt = LVISResults(gt, dt_path)
    return gt_path, dt_path, gt, dt, collect(gt, dt, resamples=20, worst=3)


def _assert_equals_evaluators(data, gt, dt, kinds, lvis):
    assert data["kinds"] == kinds and data["kind"] == ("lvis" if lvis else "coco")
    for label, iou_type in kinds.items():
        ev = _evaluate(gt, dt, iou_type)
        stats = headline_values(ev) if lvis else coco_stats(ev)
        assert set(data["summary"]) == set(stats)
        for name, v in data["summary"].items():
            ref = stats[name]
            assert v[label] == (None if ref == -1 and lvis or np.isnan(ref) else ref), (label, name)
        for cat, ap in per_category_ap(ev).items():
            assert data["per_category"][cat][f"{label}_AP"] == (None if np.isnan(ap) else ap)
        for area, curves in pr_curves(ev).items():
            for thr, prec in curves.items():
                np.testing.assert_array_equal(data["pr"][label][area][thr], prec)
        ref = diagnose(ev, resamples=20)
        got = data["diagnostics"][label]
        for part in ("confusion", "calibration", "lrp"):
            assert got[part] == ref[part], (label, part)
        b = bootstrap(ev, resamples=20, seed=0)
        assert got["bootstrap"]["metrics"]["AP"]["ci"] == list(b["AP"]["ci"])


def test_lvis_report_equals_the_evaluators(lvis_case):
    _, _, gt, dt, data = lvis_case
    _assert_equals_evaluators(data, gt, dt, {"mask": "segm", "boundary": "boundary"}, lvis=True)
    assert "APr" in data["summary"]
    assert data["errors"] is None and data["worst"] == [] and "LVIS" in data["notes"]["errors"]
    assert data["coverage"] == boundary_coverage(gt)  # masks: the coverage exists for LVIS too


@pytest.mark.slow
def test_lvis_report_figures(lvis_case):
    _, _, gt, dt, data = lvis_case
    figs = figures(data, gt, dt)
    assert sorted(figs) == ["confusion.png", "intervals.png", "pr_curves.png", "reliability.png", "scatter.png"]


def test_lvis_report_html_says_what_is_left_out(lvis_case, tmp_path):
    _, _, gt, dt, data = lvis_case
    out = tmp_path / "r.html"
    write_html(str(out), data, {})  # (the figures: test_lvis_report_figures)
    text = out.read_text()
    assert "<p class='note' id='note_errors'>Error breakdown: not computed: TIDE&#x27;s error breakdown is " \
           "not computed for LVIS ground truth" in text
    for section in ("Summary", "Confidence intervals", "Confusion matrix", "Calibration", "LRP"):
        assert f"<h2>{section}</h2>" in text
    olrp = data["diagnostics"]["boundary"]["lrp"]["olrp"]
    assert f"<td>boundary IoU</td><td>{100 * olrp:.1f}</td>" in text


@pytest.mark.slow
def test_bbox_report_on_coco_equals_the_evaluator(tmp_path):
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        dt = gt.loadRes(COCO_DT)
    data = collect(gt, dt, iou_type="bbox", resamples=20)
    _assert_equals_evaluators(data, gt, dt, {"box": "bbox"}, lvis=False)
    ref = analyze_errors(gt, dt, iou="bbox")  # TIDE with box IoU (equal to tidecv's: tests/diagnostics)
    assert data["errors"]["errors"] == ref["errors"] and data["errors"]["counts"] == ref["counts"]
    assert data["worst"] == [] and data["coverage"] is None and list(data["notes"]) == ["boundary_coverage"]
    assert all(r["gap"] is None for r in data["per_category"].values())
    figs = figures(data, gt, dt)
    assert sorted(figs) == ["confusion.png", "errors.png", "intervals.png", "pr_curves.png", "reliability.png"]
    out = tmp_path / "r.html"
    write_html(str(out), data, figs)
    text = out.read_text()
    assert "id='note_errors'" not in text and "id='note_boundary_coverage'" in text
    assert "IoU = box IoU, foreground 0.5" in text
    assert "<th>Box</th>" in text and "<th>Mask</th>" not in text
    assert f"<td>box IoU</td><td>{100 * data['diagnostics']['box']['lrp']['olrp']:.1f}</td>" in text


def test_bbox_report_on_small_lvis(lvis_case, tmp_path):
    _, _, gt, dt, _ = lvis_case
    data = collect(gt, dt, iou_type="bbox", resamples=20)
    _assert_equals_evaluators(data, gt, dt, {"box": "bbox"}, lvis=True)
    assert data["errors"] is None and data["coverage"] is None and set(data["notes"]) == {"errors",
                                                                                           "boundary_coverage"}
    out = tmp_path / "r.html"
    write_html(str(out), data, {})
    text = out.read_text()
    assert "id='note_errors'" in text and "id='note_boundary_coverage'" in text and "<th>Box</th>" in text
    assert "<th>Box 95%</th>" in text and "<h2>Per category</h2>" in text


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["boundary", "bbox"])
def test_report_command_on_lvis(lvis_case, tmp_path, capsys, iou_type):
    gt_path, dt_path, gt, dt, data = lvis_case
    out = tmp_path / "figs"
    assert main(["report", "--gt", gt_path, "--dt", dt_path, "--out", str(out), "--format", "png",
                 "--iou-type", iou_type, "--resamples", "20"]) == 0
    names = ["confusion.png", "intervals.png", "pr_curves.png", "reliability.png"]
    if iou_type == "boundary":
        names.append("scatter.png")
    assert sorted(os.listdir(out)) == sorted(names)
    html_out = tmp_path / "r.html"
    assert main(["report", "--gt", gt_path, "--dt", dt_path, "--out", str(html_out), "--iou-type", iou_type,
                 "--resamples", "0"]) == 0
    text = html_out.read_text()
    assert "id='note_errors'" in text and "Confidence intervals" not in text
    with contextlib.redirect_stdout(io.StringIO()):
        ev = LVISEval(gt, dt, iou_type="boundary" if iou_type == "boundary" else "bbox")
        ev.evaluate()
        ev.accumulate()
    ece = diagnose(ev)["calibration"]["ece"]
    label = "boundary" if iou_type == "boundary" else "box"
    assert f"<td>{label} IoU 0.5</td><td>{ece:.1f}</td>" in text
