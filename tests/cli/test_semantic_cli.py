"""boundary-eval semantic: JSON schema and values (equal to boundary_api.semantic and its
oracle), the printed table, class names, suffix pairing, and bad input as one error line."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import boundary_api
from boundary_api.cli import main
from boundary_api.cli.semantic import parser
from boundary_api.semantic import reference as ref

N = 4


def write(path, arr):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(arr).save(path)


@pytest.fixture
def folders(tmp_path):
    rng = np.random.default_rng(3)
    pairs = []
    for name in ("c1/f1", "c1/f2", "c2/f3"):
        g = rng.integers(0, N - 1, (6, 9)).repeat(4, 0).repeat(4, 1).astype(np.uint8)  # class 3 never in gt
        g[:3, :5] = 255
        p = g.copy()
        p[5:9, 4:20] = (p[5:9, 4:20] + 1) % N
        p[0, 0] = 255
        write(str(tmp_path / "gt" / f"{name}_gtFine_labelTrainIds.png"), g)
        write(str(tmp_path / "pred" / f"{name}.png"), p)
        pairs.append((g, p))
    return tmp_path, pairs


def test_json_out_schema_and_values(folders, capsys):
    tmp, pairs = folders
    names = tmp / "names.txt"
    names.write_text("road\nsidewalk\nbuilding\nwall\n")
    out = tmp / "m.json"
    gt, pred = str(tmp / "gt"), str(tmp / "pred")
    argv = ["semantic", "--gt-dir", gt, "--pred-dir", pred, "--num-classes", str(N), "--gt-suffix",
            "_gtFine_labelTrainIds.png", "--class-names", str(names), "--dilation-ratio", "0.05",
            "--json-out", str(out), "--threads", "2"]
    assert main(argv) == 0
    doc = json.loads(out.read_text())
    want = ref.evaluate_pairs(pairs, N, 255, 0.05)
    assert list(doc)[:2] == ["boundary_api_version", "settings"]
    assert doc["boundary_api_version"] == boundary_api.__version__
    assert doc["settings"] == {"kind": "semantic", "iou_type": "boundary", "dilation_ratio": 0.05,
                               "num_classes": N, "ignore_index": 255, "reduce_zero_label": False,
                               "inputs": {"--gt-dir": gt, "--pred-dir": pred, "--class-names": str(names)}}
    for k in ("mIoU", "mBIoU", "aAcc", "mAcc", "fwIoU"):
        assert doc[k] == pytest.approx(want[k], abs=1e-12)
    assert doc["num_images"] == 3
    assert list(doc["per_class"]) == ["0", "1", "2", "3"]
    for c in range(N):
        e = doc["per_class"][str(c)]
        assert e["name"] == ["road", "sidewalk", "building", "wall"][c]
        for k in ("IoU", "BoundaryIoU", "Acc"):
            if math.isnan(want[k][c]):
                assert e[k] is None
            else:
                assert e[k] == pytest.approx(want[k][c], abs=1e-12)
    assert doc["per_class"]["3"]["IoU"] == 0.0 and doc["per_class"]["3"]["Acc"] is None
    text = out.read_text()
    assert "NaN" not in text and "Infinity" not in text
    printed = capsys.readouterr().out
    assert "sidewalk" in printed and "mBIoU" in printed and f"mIoU {100 * want['mIoU']:.2f}" in printed


def test_absent_class_is_null(tmp_path, capsys):
    g = np.zeros((8, 8), np.uint8)
    write(str(tmp_path / "g" / "a.png"), g)
    write(str(tmp_path / "p" / "a.png"), g)
    out = tmp_path / "m.json"
    assert main(["semantic", "--gt-dir", str(tmp_path / "g"), "--pred-dir", str(tmp_path / "p"),
                 "--num-classes", "2", "--json-out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["mIoU"] == 1.0 and doc["mBIoU"] == 1.0
    assert doc["per_class"]["1"] == {"name": "1", "IoU": None, "BoundaryIoU": None, "Acc": None}


def _err(capsys):
    cap = capsys.readouterr()
    lines = cap.err.strip().splitlines()
    assert len(lines) == 1, cap.err
    assert lines[0].startswith("boundary-eval: error: ")
    return lines[0]


def test_bad_input_is_one_line_and_exit_2(folders, capsys):
    tmp, _ = folders
    gt, pred = str(tmp / "gt"), str(tmp / "pred")
    base = ["semantic", "--gt-dir", gt, "--pred-dir", pred, "--gt-suffix", "_gtFine_labelTrainIds.png"]
    out = tmp / "never.json"
    # values >= num_classes
    assert main(base + ["--num-classes", "2", "--json-out", str(out)]) == 2
    assert "neither a class id (< 2) nor the ignore label 255" in _err(capsys)
    # wrong number of class names
    names = tmp / "names.txt"
    names.write_text("a\nb\n")
    assert main(base + ["--num-classes", str(N), "--class-names", str(names)]) == 2
    assert "has 2 names but --num-classes is 4" in _err(capsys)
    # missing prediction file
    os.remove(tmp / "pred" / "c2" / "f3.png")
    assert main(base + ["--num-classes", str(N)]) == 2
    assert f"prediction file missing: {os.path.join(pred, 'c2', 'f3.png')}" in _err(capsys)
    # RGB where a label map was expected
    write(str(tmp / "pred" / "c2" / "f3.png"), np.zeros((24, 36, 3), np.uint8))
    assert main(base + ["--num-classes", str(N)]) == 2
    assert f"{os.path.join(pred, 'c2', 'f3.png')}: expected a single-channel label map" in _err(capsys)
    # different sizes
    write(str(tmp / "pred" / "c2" / "f3.png"), np.zeros((24, 35), np.uint8))
    assert main(base + ["--num-classes", str(N)]) == 2
    assert "f3.png: the prediction is 24x35 but the ground truth" in _err(capsys)
    # bad flag values
    with pytest.raises(SystemExit) as e:
        main(base + ["--num-classes", "0"])
    assert e.value.code == 2
    capsys.readouterr()
    assert main(base + ["--num-classes", str(N), "--ignore-index", "-1"]) == 2
    assert "--ignore-index must be in" in _err(capsys)
    assert not out.exists()


def test_real_process_has_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "boundary_api.cli", "semantic", "--gt-dir", str(tmp_path / "g"),
                           "--pred-dir", str(tmp_path), "--num-classes", "3"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"boundary-eval: error: ground truth folder not found: {tmp_path / 'g'}"
    assert proc.stdout == ""


def test_help_explains_every_flag_and_the_layouts(capsys):
    p = parser()
    text = p.format_help()
    for action in p._actions:
        for opt in action.option_strings:
            assert opt in text
        assert action.help, action.option_strings
    for layout in ("_gtFine_labelTrainIds.png", "_gtFine_labelIds.png", "ADE20K", "--reduce-zero-label"):
        assert layout in text
    with pytest.raises(SystemExit) as e:
        main(["semantic", "--help"])
    assert e.value.code == 0
    assert "--pred-dir" in capsys.readouterr().out


def test_reduce_zero_label_ade20k_layout(tmp_path, capsys):
    rng = np.random.default_rng(5)
    g = rng.integers(0, 4, (16, 24)).repeat(2, 0).astype(np.uint8)  # 0 = "other", 1..3 classes
    p = np.where(g == 0, 0, g - 1).astype(np.uint8)
    p[:4] = 2
    write(str(tmp_path / "annotations" / "validation" / "ADE_val_00000001.png"), g)
    write(str(tmp_path / "pred" / "ADE_val_00000001.png"), p)
    out = tmp_path / "m.json"
    assert main(["semantic", "--gt-dir", str(tmp_path / "annotations" / "validation"), "--pred-dir",
                 str(tmp_path / "pred"), "--num-classes", "3", "--reduce-zero-label", "--json-out", str(out)]) == 0
    doc = json.loads(out.read_text())
    reduced = np.where(g == 0, 255, g.astype(int) - 1).astype(np.uint8)
    want = ref.evaluate_pairs([(reduced, p)], 3, 255, 0.02)
    assert doc["settings"]["reduce_zero_label"] is True
    assert doc["mIoU"] == pytest.approx(want["mIoU"], abs=1e-12)
    assert doc["mBIoU"] == pytest.approx(want["mBIoU"], abs=1e-12)


def test_json_out_inside_an_input_folder_and_common_flags(folders, capsys):
    tmp, _ = folders
    base = ["semantic", "--gt-dir", str(tmp / "gt"), "--pred-dir", str(tmp / "pred"), "--num-classes", str(N),
            "--gt-suffix", "_gtFine_labelTrainIds.png"]
    for folder, flag in (("gt", "--gt-dir"), ("pred", "--pred-dir")):
        target = tmp / folder / "c1" / "m.json"
        assert main(base + ["--json-out", str(target)]) == 2
        captured = capsys.readouterr()
        assert captured.err == (f"boundary-eval: error: --json-out {target} is inside the folder given to {flag} "
                                f"({tmp / folder}); write it elsewhere\n")
        assert captured.out == "" and not target.exists()
    with pytest.raises(SystemExit) as exc:
        main(["semantic", "--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out == f"boundary-eval (boundary_api) {boundary_api.__version__}\n"
    assert main(base + ["-q"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith("mIoU ")
