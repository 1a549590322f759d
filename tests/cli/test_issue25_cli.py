"""Issue 25, "no silent wrong answer", on the command line: every case gives the
right number or a one-line refusal (exit 2, no traceback, no stray file)."""
import contextlib
import io
import json
import os

import numpy as np
import pytest

from boundary_api.cli import main
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT


def _doc(path):
    with open(path) as f:
        return json.load(f)


def _jsonl(path, src):
    with open(src) as f:
        dets = json.load(f)
    with open(path, "w") as f:
        for d in dets:
            f.write(json.dumps(d) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def coco_300():
    """COCOeval at maxDets [1, 10, 300]: the AP every line of the table must show."""
    from boundary_api.instance.coco import COCO
    from boundary_api.instance.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(COCO_DT), iouType="boundary")
        ev.params.maxDets = [1, 10, 300]
        ev.evaluate()
        ev.accumulate()
    precision = ev.eval["precision"][:, :, :, 0, -1]
    return float(np.mean(precision[precision > -1]))


# ----------------------------------------------------------------- item 2: --max-dets
@pytest.mark.parametrize("streaming", [False, True], ids=["in_memory", "streaming"])
def test_max_dets_300_reports_ap_at_300(tmp_path, capsys, coco_300, streaming):
    out = str(tmp_path / "m.json")
    dt = _jsonl(tmp_path / "r.jsonl", COCO_DT) if streaming else COCO_DT
    assert main(["--gt", COCO_GT, "--dt", dt, "--max-dets", "300", "-q", "--json-out", out]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "COCO Boundary AP (dilation ratio 0.02), up to 300 detections per image:"
    assert lines[1] == (" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=300 ] = "
                        f"{coco_300:0.3f}")
    assert "-1.000" not in "\n".join(lines)
    doc = _doc(out)
    assert doc["AP"] == coco_300 and doc["settings"]["max_dets"] == 300
    assert "AR300" in doc


def test_default_max_dets_table_is_pycocotools(tmp_path, capsys):
    """With maxDets [1, 10, 100] the table is pycocotools' summarize() line for line."""
    from boundary_api.instance.coco import COCO
    from boundary_api.instance.cocoeval import COCOeval

    out = str(tmp_path / "m.json")
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "segm", "-q", "--json-out", out]) == 0
    printed = capsys.readouterr().out.splitlines()
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(COCO_DT), iouType="segm")
        ev.evaluate()
        ev.accumulate()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ev.summarize()
    assert printed[1:] == buf.getvalue().splitlines()
    doc = _doc(out)
    assert [doc[k] for k in ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs",
                             "ARm", "ARl")] == [float(v) for v in ev.stats]


def test_demo_max_dets_300_has_an_ap(tmp_path, capsys):
    out = str(tmp_path / "m.json")
    assert main(["--max-dets", "300", "-q", "--json-out", out]) == 0
    doc = _doc(out)
    assert doc["AP"] is not None and doc["segm"]["AP"] is not None
    assert "-1.000" not in capsys.readouterr().out
