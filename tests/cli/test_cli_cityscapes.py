"""boundary-eval cityscapes: golden numbers through --json-out, the table, the reference's
flag spellings, bad input (one line on stderr, exit 2) and nothing written."""
import json
import math
import os
import shutil
import subprocess
import sys

import pytest

from boundary_api.cli import main
from conftest import DATA, golden_cases

VISIBLE = os.path.join(DATA, "cityscapes", "visible")
GT_DIR = os.path.join(VISIBLE, "gtFine", "val")
RES_DIR = os.path.join(VISIBLE, "results")
GOLDEN = golden_cases("cityscapes_instance_eval.json")


def same(a, b):
    return (a is None and b is None) or (a is not None and b is not None and abs(a - b) <= 1e-12)


@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_golden_json_out(case, tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["cityscapes", "--gt-dir", GT_DIR, "--result-dir", RES_DIR, "--iou-type", case["iou_type"],
                 "--dilation-ratio", str(case["dilation_ratio"]), "--json-out", str(out), "-q"]) == 0
    # -q prints the table only (issue 25: it used to print nothing), under a title naming the IoU type
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("Cityscapes Boundary AP (" if case["iou_type"] == "boundary"
                                 else "Cityscapes Mask AP (segm")
    assert printed[3].split() == ["what", ":", "AP", "AP_50%"] and printed[-2].split()[0] == "average"
    assert len(printed) == 16
    doc = json.loads(out.read_text())
    want = case["results"]
    assert same(doc["AP"], want["AP"]) and same(doc["AP50"], want["AP50"])
    for name, v in want["classes"].items():
        assert same(doc["per_class"][name]["AP"], v["ap"]) and same(doc["per_class"][name]["AP50"], v["ap50"])
        assert all(same(a, b) for a, b in zip(doc["per_class"][name]["AP_per_threshold"],
                                              want["ap_per_threshold"][name]))
    assert list(doc)[:4] == ["boundary_api_version", "settings", "AP", "AP50"]
    assert doc["settings"] == {
        "kind": "cityscapes", "iou_type": case["iou_type"],
        "dilation_ratio": case["dilation_ratio"] if case["iou_type"] == "boundary" else None,
        "inputs": {"--gt-dir": GT_DIR, "--result-dir": RES_DIR}}
    assert "NaN" not in out.read_text()


def test_table_and_reference_spellings(capsys):
    assert main(["cityscapes", "--gt_dir", GT_DIR, "--result_dir", RES_DIR, "--iou-type", "segm"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Cityscapes Mask AP (segm, cityscapesScripts' AP) over 12 images:"
    assert out[3].split() == ["what", ":", "AP", "AP_50%"]
    want = {c["name"]: c for c in GOLDEN}["visible_segm_0.005"]["results"]
    assert out[14].split() == ["average", ":", f"{want['AP']:.3f}", f"{want['AP50']:.3f}"]


def test_console_script_matches_golden(tmp_path):
    exe = shutil.which("boundary-eval", path=os.path.dirname(sys.executable))
    assert exe, "boundary-eval is not installed next to this Python"
    out = tmp_path / "m.json"
    p = subprocess.run([exe, "cityscapes", "--gt-dir", GT_DIR, "--result-dir", RES_DIR, "--json-out", str(out)],
                       capture_output=True, text=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    want = {c["name"]: c for c in GOLDEN}["visible_boundary_0.005"]["results"]
    assert same(json.loads(out.read_text())["AP"], want["AP"])


@pytest.fixture
def copy(tmp_path):
    root = tmp_path / "visible"
    shutil.copytree(VISIBLE, root)
    return root


def run_error(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("boundary-eval: error: ")
    return err[0]


@pytest.mark.parametrize("breakage, message", [
    (lambda r: os.remove(r / "results" / "lindau_603470_000019_pred.txt"), "no prediction file lindau_603470_000019*.txt"),
    (lambda r: open(r / "results" / "munster_643260_000019_pred.txt", "a").write("masks/x.png 77 0.5\n"),
     "unknown Cityscapes label id '77'"),
    (lambda r: open(r / "results" / "munster_643260_000019_pred.txt", "a").write("masks/x.png 24\n"),
     "expected 'relPath labelID confidence'"),
])
def test_bad_input_is_one_line(copy, capsys, tmp_path, breakage, message):
    breakage(copy)
    out = tmp_path / "m.json"
    line = run_error(["cityscapes", "--gt-dir", str(copy / "gtFine" / "val"), "--result-dir", str(copy / "results"),
                      "--json-out", str(out)], capsys)
    assert message in line
    assert not out.exists()


def test_missing_folders_and_bad_flags(tmp_path, capsys):
    assert "ground truth folder not found" in run_error(
        ["cityscapes", "--gt-dir", str(tmp_path / "x"), "--result-dir", RES_DIR], capsys)
    assert "--json-out " + str(tmp_path / "a" / "m.json") + ": directory does not exist" in run_error(
        ["cityscapes", "--gt-dir", GT_DIR, "--result-dir", RES_DIR, "--json-out", str(tmp_path / "a" / "m.json")], capsys)
    with pytest.raises(SystemExit) as info:
        main(["cityscapes", "--gt-dir", GT_DIR, "--result-dir", RES_DIR, "--iou-type", "bbox"])
    assert info.value.code == 2


def test_help_explains_every_flag(capsys):
    with pytest.raises(SystemExit):
        main(["cityscapes", "--help"])
    out = capsys.readouterr().out
    for flag in ("--gt-dir", "--gt_dir", "--result-dir", "--result_dir", "--iou-type", "--dilation-ratio",
                 "--json-out", "--threads", "--quiet"):
        assert flag in out


def test_inputs_are_not_written(copy, tmp_path, capsys):
    def snapshot():
        return sorted((os.path.join(r, f), os.stat(os.path.join(r, f)).st_mtime_ns)
                      for r, _, fs in os.walk(copy) for f in fs)

    before = snapshot()
    assert main(["cityscapes", "--gt-dir", str(copy / "gtFine" / "val"), "--result-dir", str(copy / "results"),
                 "--json-out", str(tmp_path / "m.json")]) == 0
    assert snapshot() == before
    assert sorted(os.listdir(tmp_path)) == ["m.json", "visible"]
