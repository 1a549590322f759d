"""The numbers behind every figure of the report, on hand-built data; matplotlib
stays out of the evaluators."""
import contextlib
import io
import os
import subprocess
import sys

import numpy as np
import pytest

from analysis_data import build, square
from boundary_api import COCOeval
from boundary_api.diagnostics.tide import ERROR_TYPES, analyze_errors, boundary_coverage, pr_curves
from boundary_api.instance.results import coco_stats, per_category_ap
from boundary_api.report import (collect, coverage_warning, figure_errors, figure_pr_curves, figure_scatter,
                                 figure_thumbnail, figures, write_html, write_pngs)

A = square(10, 10, 40)
B = square(60, 60, 30)
SHIFTED = square(12, 12, 40)  # mask IoU 0.82 with A, boundary IoU 0.21: a boundary error
STRIP = square(10, 10, 40, 15)  # a localization error on A


@pytest.fixture(scope="module")
def case():
    gt, dt = build([(1, 1, A), (1, 1, B), (1, 2, A), (2, 2, B), (2, 1, square(5, 5, 6))],
                   [(1, 1, SHIFTED, 0.9), (1, 1, B, 0.8), (1, 2, A, 0.7), (2, 2, STRIP, 0.6),
                    (2, 2, B, 0.5), (2, 1, square(5, 5, 6), 0.4)], n_images=2)
    return gt, dt, collect(gt, dt, worst=5)


def _evals(gt, dt):
    out = {}
    for kind in ("segm", "boundary"):
        with contextlib.redirect_stdout(io.StringIO()):
            ev = COCOeval(gt, dt, iouType=kind)
            ev.evaluate()
            ev.accumulate()
            ev.summarize()
        out[kind] = ev
    return out


def test_collect_gathers_the_evaluators_numbers(case):
    gt, dt, data = case
    evs = _evals(gt, dt)
    for kind, key in (("segm", "mask"), ("boundary", "boundary")):
        stats = coco_stats(evs[kind])
        for name, v in data["summary"].items():
            assert v[key] == (None if np.isnan(stats[name]) else stats[name])
        for cat, ap in per_category_ap(evs[kind]).items():
            assert data["per_category"][cat][f"{key}_AP"] == ap
        for area, curves in pr_curves(evs[kind]).items():
            for thr, prec in curves.items():
                np.testing.assert_array_equal(data["pr"][key][area][thr], prec)
    for cat, row in data["per_category"].items():
        assert row["gap"] == pytest.approx(row["mask_AP"] - row["boundary_AP"], abs=1e-15)
    errors = analyze_errors(gt, dt)
    assert data["errors"]["errors"] == errors["errors"]
    np.testing.assert_equal(data["errors"]["per_size"], errors["per_size"])  # NaN AP: no large objects
    assert data["coverage"] == boundary_coverage(gt)
    # the one boundary error: the shifted square
    (row,) = data["worst"]
    assert row["image_id"] == 1 and row["mask_iou"] == pytest.approx(38 * 38 / (3200 - 38 * 38), abs=1e-12)


def test_error_bars_are_the_delta_ap(case):
    _, _, data = case
    fig = figure_errors(data["errors"])
    groups = [data["errors"]["errors"]] + [data["errors"]["per_size"][s]["errors"] for s in ("small", "medium", "large")]
    assert len(fig.axes) == 4
    for ax, values in zip(fig.axes, groups):
        widths = [p.get_width() for p in ax.patches]
        np.testing.assert_allclose(widths, [100 * values[t] for t in ERROR_TYPES], rtol=0, atol=1e-12)
    assert data["errors"]["errors"]["boundary"] > 0


def test_pr_curve_lines_are_the_precisions(case):
    _, _, data = case
    fig = figure_pr_curves(data["pr"], data["rec_thrs"])
    for ax, size in zip(fig.axes, ("all", "small", "medium", "large")):
        lines = ax.get_lines()
        expected = [data["pr"][k][size][t] for k in ("mask", "boundary") for t in (0.5, 0.75)]
        assert len(lines) == len(expected)
        for line, y in zip(lines, expected):
            np.testing.assert_array_equal(line.get_xdata(), data["rec_thrs"])
            np.testing.assert_array_equal(line.get_ydata(), y)


def test_scatter_points_are_the_category_aps(case):
    _, _, data = case
    fig = figure_scatter(data["per_category"])
    (points,) = fig.axes[0].collections
    rows = [r for r in data["per_category"].values() if r["mask_AP"] is not None and r["boundary_AP"] is not None]
    np.testing.assert_array_equal(points.get_offsets(), [[r["mask_AP"], r["boundary_AP"]] for r in rows])
    # the category with the boundary error lies below the diagonal and is named
    assert any(t.get_text() == "c1" for t in fig.axes[0].texts)
    assert data["per_category"][1]["gap"] > 0


def test_thumbnail_draws_the_prediction_outline_over_the_ground_truth(case, tmp_path):
    gt, dt, data = case
    row = data["worst"][0]
    img = figure_thumbnail(row, gt, dt, margin=0).axes[0].get_images()[0].get_array()
    # crop = union of the two squares: rows/cols 10..51; the prediction's corner (12, 12) is red
    assert img.shape[:2] == (42, 42)
    np.testing.assert_allclose(img[2, 2], [0.85, 0.1, 0.1])
    np.testing.assert_allclose(img[20, 20], np.ones(3) * 0.45 + np.array([0.2, 0.7, 0.3]) * 0.55)  # gt inside
    assert np.allclose(img[41, 0], 1.0)  # outside both: blank canvas
    # over the image when one is given
    from PIL import Image

    Image.fromarray(np.full((100, 100, 3), 200, np.uint8)).save(tmp_path / "1.png")
    img = figure_thumbnail(row, gt, dt, images_dir=str(tmp_path), margin=0).axes[0].get_images()[0].get_array()
    np.testing.assert_allclose(img[41, 0], np.full(3, 200 / 255 * 0.7))


def test_coverage_warning_only_when_most_objects_are_all_boundary():
    cov = {"all": {"fraction": 0.6}, "small": {"fraction": 1.0}, "medium": {"fraction": 0.2},
           "large": {"fraction": None}}
    assert "60%" in coverage_warning(cov) and "small 100%" in coverage_warning(cov)
    cov["all"]["fraction"] = 0.5
    assert coverage_warning(cov) is None


def test_pngs_and_html(case, tmp_path):
    gt, dt, data = case
    figs = figures(data, gt, dt)
    assert sorted(figs) == ["confusion.png", "errors.png", "intervals.png", "pr_curves.png", "reliability.png",
                            "scatter.png", "worst_00.png"]
    assert all(png.startswith(b"\x89PNG") for png in figs.values())
    write_pngs(str(tmp_path / "figs"), figs)
    assert sorted(os.listdir(tmp_path / "figs")) == sorted(figs)
    out = tmp_path / "r.html"
    write_html(str(out), data, figs)
    text = out.read_text()
    assert text.count("<img ") == len(figs) and "http" not in text
    # the diagnostics' sections (issue 30)
    for section in ("Confidence intervals", "Confusion matrix", "Calibration", "LRP"):
        assert f"<h2>{section}</h2>" in text
    diag = data["diagnostics"]
    assert f"<td>boundary IoU</td><td>{100 * diag['boundary']['lrp']['olrp']:.1f}</td>" in text
    assert diag["boundary"]["bootstrap"]["metrics"]["AP"]["value"] == data["summary"]["AP"]["boundary"]
    assert os.listdir(tmp_path) == ["figs", "r.html"] or sorted(os.listdir(tmp_path)) == ["figs", "r.html"]


def test_evaluators_never_import_matplotlib():
    from conftest import COCO_DT, COCO_GT

    code = (
        "import sys, contextlib, io\n"
        "import boundary_api\n"
        "from boundary_api import COCO, COCOeval\n"
        "from boundary_api.diagnostics.tide import analyze_errors\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    gt = COCO({COCO_GT!r}); dt = gt.loadRes({COCO_DT!r})\n"
        "    ev = COCOeval(gt, dt, iouType='boundary'); ev.evaluate(); ev.accumulate(); ev.summarize()\n"
        "analyze_errors(gt, dt)\n"
        "import boundary_api.report\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'matplotlib'))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
