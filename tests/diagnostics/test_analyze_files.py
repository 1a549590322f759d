"""boundary_api.diagnostics.files: the error analysis of two files (what
``boundary-eval analyze`` and ``report`` run) equals the analysis of the same
data loaded by hand; bad files are one-line ValueErrors."""
import contextlib
import io
import json

import pytest

from boundary_api import COCO
from boundary_api.diagnostics.files import analyze_files, load_files
from boundary_api.diagnostics.tide import analyze_errors, boundary_coverage
from conftest import COCO_DT, COCO_GT


def test_analyze_files_equals_the_analysis_of_the_loaded_data():
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        dt = gt.loadRes(COCO_DT)
    expected = analyze_errors(gt, dt, iou="boundary", dilation_ratio=0.02, max_dets=100)
    got = analyze_files(COCO_GT, COCO_DT, dilation_ratio=0.02)
    for key in ("ap", "errors", "counts", "per_size", "per_category"):
        assert got["errors"][key] == expected[key], key
    assert got["coverage"] == boundary_coverage(gt, 0.02)
    assert got["gt"].cats == gt.cats and got["seconds"] > 0


def test_load_files_prints_nothing_and_gives_coco_objects(capsys):
    gt, dt = load_files(COCO_GT, COCO_DT)
    assert capsys.readouterr().out == ""
    assert isinstance(gt, COCO) and isinstance(dt, COCO)
    assert len(dt.anns) == len(json.load(open(COCO_DT)))


def test_bad_files_are_one_line_value_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="ground truth file not found") as info:
        load_files(str(tmp_path / "missing.json"), COCO_DT)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match=r"were --gt and --dt swapped\?"):
        load_files(COCO_GT, COCO_GT)
    res = json.load(open(COCO_DT))
    unknown = tmp_path / "cat.json"
    unknown.write_text(json.dumps([dict(r, category_id=999999) for r in res]))
    with pytest.raises(ValueError, match=f"results use category ids that {COCO_GT} does not have") as info:
        load_files(COCO_GT, str(unknown))
    assert "\n" not in str(info.value)


def test_thresholds_in_the_wrong_order():
    with pytest.raises(ValueError, match=r"background_threshold \(0.6\) is above pos_threshold \(0.5\)"):
        analyze_files(COCO_GT, COCO_DT, pos_threshold=0.5, background_threshold=0.6)
