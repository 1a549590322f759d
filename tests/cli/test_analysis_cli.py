"""``boundary-eval sensitivity`` and ``boundary-eval synthetic``: files written, tables
printed, the JSON document, and one-line errors."""
import json
import os

import cv2
import pytest

from boundary_api.cli import main
from conftest import COCO_GT, DATA, LVIS_GT

PAN_GT = os.path.join(DATA, "panoptic", "panoptic_examples.json")


def test_sensitivity_writes_figures_and_curves(tmp_path, capsys):
    out = tmp_path / "sens"
    rc = main(["sensitivity", "--gt", LVIS_GT, "--out", str(out), "--errors", "dilation", "inner_mask",
               "--measures", "mask_iou", "trimap_iou", "f_measure", "mf_measure", "boundary_iou",
               "--samples", "2", "--seed", "1"])
    assert rc == 0
    names = sorted(os.listdir(out))
    for fig in ("fig4_scale_error_sizes", "fig6_severity", "fig7_object_size", "fig8_inner_mask",
                "fig9_mf_vs_boundary_iou"):
        assert f"{fig}.png" in names and f"{fig}.svg" in names
        img = cv2.imread(str(out / f"{fig}.png"))
        assert img is not None and img.shape[0] > 200 and img.shape[1] > 400
    doc = json.load(open(out / "curves.json"))
    assert doc["settings"]["kind"] == "sensitivity" and doc["settings"]["inputs"] == {"--gt": LVIS_GT}
    assert doc["settings"]["seed"] == 1 and doc["settings"]["samples"] == 2
    assert {r["error"] for r in doc["curves"]} == {"dilation", "inner_mask"}
    lines = open(out / "curves.csv").read().splitlines()
    assert lines[0] == "sample,error,severity,size_lo,size_hi,measure,mean,std,n"
    assert len(lines) == len(doc["curves"]) + 1
    printed = capsys.readouterr().out
    assert "fig6_severity.png" in printed


def test_sensitivity_without_sizes_draws_the_severity_figures_only(tmp_path):
    rc = main(["sensitivity", "--gt", COCO_GT, "--out", str(tmp_path), "--errors", "object_localization",
               "--measures", "boundary_iou", "--samples", "2", "--no-sizes", "--formats", "png", "-q"])
    assert rc == 0
    assert sorted(os.listdir(tmp_path)) == ["curves.csv", "curves.json", "fig6_severity.png"]


def test_synthetic_evaluates_several_resolutions(tmp_path, capsys):
    rc = main(["synthetic", "--gt", COCO_GT, "--resolution", "14", "28", "--out", str(tmp_path / "p.json"),
               "--evaluate", "--json-out", str(tmp_path / "m.json")])
    assert rc == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["resolution", "Mask", "AP"]
    assert [line.split()[0] for line in out[1:]] == ["14x14", "28x28"]
    preds = json.load(open(tmp_path / "p_28.json"))
    assert len(preds) == 830 and os.path.exists(tmp_path / "p_14.json")
    doc = json.load(open(tmp_path / "m.json"))
    assert doc["settings"]["kind"] == "synthetic" and doc["settings"]["resolutions"] == [14, 28]
    r28 = doc["results"]["28x28"]
    assert doc["settings"]["inputs"] == {"--gt": COCO_GT} and doc["settings"]["dilation_ratio"] == 0.02
    assert r28["segm"]["AP"] > 0.9 and r28["boundary"]["APl"] <= r28["segm"]["APl"] - 0.1
    assert float(out[2].split()[1]) == pytest.approx(100 * r28["segm"]["AP"], abs=0.05)


def test_synthetic_writes_predictions_only(tmp_path, capsys):
    rc = main(["synthetic", "--gt", COCO_GT, "--out", str(tmp_path / "p.json")])
    assert rc == 0 and capsys.readouterr().out == ""
    assert os.listdir(tmp_path) == ["p.json"]


def test_synthetic_panoptic(tmp_path, capsys):
    rc = main(["synthetic", "--panoptic", "--gt", PAN_GT, "--factor", "4", "--out", str(tmp_path / "pan.json"),
               "--evaluate"])
    assert rc == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["factor", "group", "PQ", "SQ", "RQ", "B-PQ", "B-SQ", "B-RQ"]
    row = out[1].split()
    assert row[:2] == ["4x", "All"] and float(row[5]) < float(row[2])
    assert sorted(os.listdir(tmp_path / "pan")) == ["000000142238.png", "000000439180.png"]


@pytest.mark.parametrize("argv, message", [
    (["sensitivity", "--gt", "missing.json", "--out", "OUT"], "ground truth file not found: missing.json"),
    (["synthetic", "--gt", COCO_GT], "nothing to do"),
    (["synthetic", "--gt", COCO_GT, "--out", "/no/such/dir/p.json"], "--out: directory does not exist"),
    (["synthetic", "--gt", COCO_GT, "--out", COCO_GT], "is the ground truth file"),
    (["synthetic", "--panoptic", "--gt", PAN_GT, "--evaluate"], "--panoptic needs --out"),
])
def test_errors_are_one_line(argv, message, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("boundary-eval: error: ") and message in err
    assert os.listdir(tmp_path) == []


def test_sensitivity_out_is_a_file(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    assert main(["sensitivity", "--gt", LVIS_GT, "--out", str(f)]) == 2
    assert "is not a directory" in capsys.readouterr().err


@pytest.mark.parametrize("sub", ["sensitivity", "synthetic"])
def test_help_and_version(sub, capsys):
    with pytest.raises(SystemExit) as exc:
        main([sub, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "--gt" in text and "--out" in text and "--version" in text and "(default: None)" not in text
    with pytest.raises(SystemExit) as exc:
        main([sub, "--version"])
    assert exc.value.code == 0 and "boundary_api" in capsys.readouterr().out


def test_synthetic_json_out_target_checked_first(tmp_path, capsys):
    (tmp_path / "d").mkdir()
    rc = main(["synthetic", "--gt", COCO_GT, "--evaluate", "--json-out", str(tmp_path / "d")])
    assert rc == 2 and "is a directory" in capsys.readouterr().err
    assert os.listdir(tmp_path / "d") == []


def test_bad_annotation_is_named(tmp_path, capsys):
    data = json.load(open(COCO_GT))
    data["annotations"][0]["segmentation"] = "oops"
    gt = tmp_path / "gt.json"
    gt.write_text(json.dumps(data))
    assert main(["synthetic", "--gt", str(gt), "--out", str(tmp_path / "p.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"annotation {data['annotations'][0]['id']}" in err
    assert sorted(os.listdir(tmp_path)) == ["gt.json"]
