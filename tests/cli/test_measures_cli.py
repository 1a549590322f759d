"""boundary-eval measures GT_MASK PRED_MASK: every measure of one pair, --json-out, bad input."""
import json
import subprocess
import sys

import cv2
import numpy as np
import pycocotools.mask as mask_utils
import pytest

from boundary_api.cli import main
from boundary_api.masks import reference
from boundary_api.masks.measures import MEASURES, measures


@pytest.fixture
def pair(tmp_path):
    g = np.zeros((60, 80), np.uint8)
    cv2.circle(g, (40, 30), 20, 255, -1)
    p = np.zeros((60, 80), np.uint8)
    cv2.circle(p, (43, 31), 19, 255, -1)
    gp, pp = tmp_path / "g.png", tmp_path / "p.png"
    cv2.imwrite(str(gp), g)
    cv2.imwrite(str(pp), p)
    return g, p, gp, pp


def test_prints_every_measure(pair, capsys):
    g, p, gp, pp = pair
    assert main(["measures", str(gp), str(pp)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(MEASURES)
    want = measures(g, p)
    for line, name in zip(lines, MEASURES):
        assert float(line.split()[-1]) == pytest.approx(want[name], abs=5e-5)
    assert lines[0].startswith("Pixel accuracy") and lines[-1].startswith("Multiscale IoU")


def test_json_out_schema_and_rle_json_input(pair, tmp_path, capsys):
    g, p, gp, _ = pair
    rle = mask_utils.encode(np.asfortranarray((p != 0).astype(np.uint8)))
    rj = tmp_path / "pred.json"
    rj.write_text(json.dumps({"segmentation": {"size": rle["size"], "counts": rle["counts"].decode()}}))
    out = tmp_path / "m.json"
    assert main(["measures", str(gp), str(rj), "--dilation-ratio", "0.05", "--json-out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["boundary_api_version"] == __import__("boundary_api").__version__
    s = doc["settings"]
    assert s["kind"] == "measures" and s["dilation_ratio"] == 0.05 and s["iou_type"] is None
    assert s["inputs"] == {"GT_MASK": str(gp), "PRED_MASK": str(rj)}
    ref = reference.measures(g, p, 0.05)
    for name in MEASURES:
        assert abs(doc[name] - ref[name]) <= 1e-12
    assert list(doc)[2:] == list(MEASURES)


@pytest.mark.parametrize("case", ["missing", "not_image", "bad_json", "size", "scales", "ratio"])
def test_bad_input_one_line_exit_2(pair, tmp_path, capsys, case):
    g, p, gp, pp = pair
    other = tmp_path / "o.png"
    args = ["measures", str(gp), str(pp)]
    if case == "missing":
        args[2] = str(tmp_path / "nope.png")
    elif case == "not_image":
        other.write_text("hello")
        args[2] = str(other)
    elif case == "bad_json":
        j = tmp_path / "x.json"
        j.write_text('{"size": [2, 2]}')
        args[2] = str(j)
    elif case == "size":
        cv2.imwrite(str(other), np.zeros((10, 10), np.uint8))
        args[2] = str(other)
    elif case == "scales":
        args += ["--num-scales", "1"]
    elif case == "ratio":
        args += ["--dilation-ratio", "-1"]
    code = None
    try:
        code = main(args)
    except SystemExit as e:   # argparse: usage + one error line, exit 2
        code = e.code
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err
    if "usage:" not in err:
        assert err.count("\n") == 1 and err.startswith("boundary-eval: error: "), err
    assert not (tmp_path / "m.json").exists()


def test_real_process(pair, tmp_path):
    _, _, gp, pp = pair
    proc = subprocess.run([sys.executable, "-m", "boundary_api.cli", "measures", str(gp), str(pp)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Boundary IoU" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "boundary_api.cli", "measures", "--help"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0
    for flag in ("--dilation-ratio", "--num-scales", "--json-out", "GT_MASK", "PRED_MASK"):
        assert flag in proc.stdout
