"""Each subcommand calls one library function, which reads, checks and evaluates
the files (issue 31): the command line's numbers are that function's, and its
one-line errors are the function's ValueErrors."""
import json
import os

import cv2
import numpy as np
import pytest

import boundary_api.diagnostics.files as diagnostics_files
import boundary_api.evaluate as evaluate_module
import boundary_api.masks.measures as measures_module
import boundary_api.panoptic as panoptic_module
from boundary_api.cli import main
from boundary_api.evaluate import evaluate_files
from conftest import COCO_DT, COCO_GT, DATA, LVIS_DT, LVIS_GT


def _spy(monkeypatch, module, name):
    calls = []
    original = getattr(module, name)

    def spy(*args, **kwargs):
        calls.append((args, kwargs))
        result = original(*args, **kwargs)
        calls[-1] = (args, kwargs, result)
        return result

    monkeypatch.setattr(module, name, spy)
    return calls


@pytest.mark.parametrize("gt, dt, iou", [(COCO_GT, COCO_DT, "segm"), (LVIS_GT, LVIS_DT, "boundary")],
                         ids=["coco", "lvis"])
def test_instance_command_is_evaluate_files(monkeypatch, tmp_path, capsys, gt, dt, iou):
    calls = _spy(monkeypatch, evaluate_module, "evaluate_files")
    out = tmp_path / "m.json"
    assert main(["--gt", gt, "--dt", dt, "--iou-type", iou, "--json-out", str(out), "-q"]) == 0
    assert len(calls) == 1
    result = calls[0][2]
    printed = capsys.readouterr().out
    assert printed.splitlines()[0] == result.title
    doc = json.loads(out.read_text())
    for name, value in result.metrics.items():
        assert doc[name] == (None if value == -1 else value), name
    assert len(doc["per_category"]) == len(result.per_category)


def test_instance_command_error_is_the_functions(tmp_path, capsys):
    swapped = ["--gt", COCO_GT, "--dt", COCO_GT]
    with pytest.raises(ValueError) as info:
        evaluate_files(COCO_GT, COCO_GT)
    assert main(swapped) == 2
    assert capsys.readouterr().err == f"boundary-eval: error: {info.value}\n"


def test_analyze_is_analyze_files(monkeypatch, capsys):
    calls = _spy(monkeypatch, diagnostics_files, "analyze_files")
    assert main(["analyze", "--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "segm"]) == 0
    assert len(calls) == 1
    errors = calls[0][2]["errors"]
    assert f"{100 * errors['ap']:.2f}" in capsys.readouterr().out.splitlines()[0]


def test_panoptic_is_pq_compute_files(monkeypatch, tmp_path, capsys):
    calls = _spy(monkeypatch, panoptic_module, "pq_compute_files")
    pan = os.path.join(DATA, "panoptic")
    out = tmp_path / "pq.json"
    assert main(["panoptic", "--gt-json", os.path.join(pan, "panoptic_examples.json"),
                 "--pred-json", os.path.join(pan, "pred_down4.json"), "--json-out", str(out)]) == 0
    assert len(calls) == 1
    results = calls[0][2]["results"]
    doc = json.loads(out.read_text())
    assert doc["PQ"] == results["All"]["pq"] and doc["N"] == results["All"]["n"]


def test_measures_is_measures_of_files(monkeypatch, tmp_path, capsys):
    import boundary_api.cli.measures as cli_measures

    assert cli_measures.measures_of_files is measures_module.measures_of_files
    calls = _spy(monkeypatch, cli_measures, "measures_of_files")
    g = np.zeros((30, 40), np.uint8)
    g[5:20, 5:30] = 255
    gp, pp = tmp_path / "g.png", tmp_path / "p.png"
    cv2.imwrite(str(gp), g)
    cv2.imwrite(str(pp), np.roll(g, 2, axis=1))
    out = tmp_path / "m.json"
    assert main(["measures", str(gp), str(pp), "--json-out", str(out)]) == 0
    assert len(calls) == 1
    values = calls[0][2]
    doc = json.loads(out.read_text())
    assert {k: doc[k] for k in values} == values
