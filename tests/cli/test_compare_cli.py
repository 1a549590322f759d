"""boundary-eval compare / diagnose and analyze's new keys (issue 30): the JSON
documents, the differences equal to those of the plain evaluations, bad input
(one line on stderr, exit 2, nothing written)."""
import contextlib
import io
import json

import pytest

from boundary_api import COCO, COCOeval, LVISEval
from boundary_api.cli import main
from boundary_api.diagnostics.calibration import calibration
from boundary_api.diagnostics.lrp import optimal_lrp
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT


def _strict(text):
    def bad(name):
        raise AssertionError(f"{name} in the JSON")
    return json.loads(text, parse_constant=bad)


@pytest.fixture(scope="module")
def worse(tmp_path_factory):
    """The COCO results with every third score halved (a worse ranking)."""
    dts = json.load(open(COCO_DT))
    path = tmp_path_factory.mktemp("cmp") / "worse.json"
    path.write_text(json.dumps([dict(d, score=d["score"] * (0.5 if i % 3 == 0 else 1)) for i, d in enumerate(dts)]))
    return str(path)


def _coco_stats(dt, iou_type):
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(dt), iou_type)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev.stats


@pytest.mark.parametrize("iou_type", ["boundary", "segm", "bbox"])
def test_compare_coco_json_out(tmp_path, capsys, worse, iou_type):
    out = tmp_path / "c.json"
    assert main(["compare", "--gt", COCO_GT, "--dt", COCO_DT, "--dt", worse, "--iou-type", iou_type,
                 "--resamples", "100", "--seed", "3", "--json-out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "95% CI of A-B" in printed and ("within noise" in printed or "beyond noise" in printed)
    doc = _strict(out.read_text())
    assert doc["settings"]["resamples"] == 100 and doc["settings"]["seed"] == 3
    assert doc["settings"]["kind"] == "coco" and doc["settings"]["iou_type"] == iou_type
    a, b = _coco_stats(COCO_DT, iou_type), _coco_stats(worse, iou_type)
    names = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]
    assert list(doc["metrics"]) == names
    for j, name in enumerate(names):
        m = doc["metrics"][name]
        assert m["difference"] == a[j] - b[j]
        assert len(m["ci"]) == 2 and m["ci"][0] <= m["ci"][1]
        assert 0 < m["p_value"] <= 1
        assert m["within_noise"] == (m["ci"][0] <= 0 <= m["ci"][1])
    # the same seed gives the same document (but the timings)
    again = tmp_path / "d.json"
    assert main(["compare", "--gt", COCO_GT, "--dt", COCO_DT, "--dt", worse, "--iou-type", iou_type,
                 "--resamples", "100", "--seed", "3", "--json-out", str(again), "-q"]) == 0
    assert _strict(again.read_text())["metrics"] == doc["metrics"]


@pytest.mark.slow
def test_compare_lvis(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert main(["compare", "--gt", LVIS_GT, "--dt", LVIS_DT, "--dt", LVIS_DT, "--iou-type", "bbox",
                 "--resamples", "50", "--json-out", str(out)]) == 0
    doc = _strict(out.read_text())
    assert doc["settings"]["kind"] == "lvis"
    assert list(doc["metrics"])[6:10] == ["APr", "APc", "APf", "AR@300"]
    assert all(m["difference"] == 0.0 and m["within_noise"] for m in doc["metrics"].values()
               if m["difference"] is not None)


@pytest.mark.parametrize("argv, message", [
    (["--dt", COCO_DT], "exactly twice"),
    (["--dt", COCO_DT, "--dt", COCO_DT, "--dt", COCO_DT], "exactly twice"),
    (["--dt", COCO_DT, "--dt", "/nonexistent.json"], "nonexistent"),
    (["--dt", COCO_DT, "--dt", COCO_DT, "--resamples", "0"], "--resamples"),
    (["--dt", COCO_DT, "--dt", COCO_DT, "--confidence", "1"], "--confidence"),
    (["--dt", COCO_DT, "--dt", COCO_DT, "--seed", "-1"], "--seed"),
])
def test_compare_bad_input(tmp_path, capsys, argv, message):
    out = tmp_path / "c.json"
    with pytest.raises(SystemExit) if "twice" in message or message.startswith("--") else contextlib.nullcontext():
        status = main(["compare", "--gt", COCO_GT, *argv, "--json-out", str(out)])
        assert status == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_analyze_json_gains_confusion_calibration_lrp(tmp_path):
    out = tmp_path / "a.json"
    assert main(["analyze", "--gt", COCO_GT, "--dt", COCO_DT, "--confusion-iou", "0.75", "--json-out", str(out),
                 "-q"]) == 0
    doc = _strict(out.read_text())
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(COCO_DT), "boundary")
        ev.evaluate()
    cal, lrp = calibration(ev, 0.75), optimal_lrp(ev)
    assert doc["calibration"]["ece"] == cal["ece"] and doc["calibration"]["mce"] == cal["mce"]
    assert doc["lrp"]["olrp"] == lrp["olrp"]
    assert doc["confusion"]["iou_threshold"] == 0.75
    m = doc["confusion"]["matrix"]
    assert len(m) == len(m[0]) == 81


@pytest.mark.parametrize("gt, dt, iou_type", [(COCO_GT, COCO_DT, "boundary"),
                                              pytest.param(LVIS_GT, LVIS_DT, "segm", marks=pytest.mark.slow),
                                              pytest.param(LVIS_GT, LVIS_DT, "bbox", marks=pytest.mark.slow)],
                         ids=["coco-boundary", "lvis-segm", "lvis-bbox"])
def test_diagnose(tmp_path, capsys, gt, dt, iou_type):
    out = tmp_path / "d.json"
    assert main(["diagnose", "--gt", gt, "--dt", dt, "--iou-type", iou_type, "--resamples", "30",
                 "--json-out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "bootstrap intervals" in printed and "ECE" in printed and "oLRP" in printed
    doc = _strict(out.read_text())
    for key in ("metrics", "bootstrap", "confusion", "calibration", "lrp"):
        assert key in doc
    for name, m in doc["bootstrap"]["metrics"].items():
        assert m["value"] == doc["metrics"][name]
    if gt == LVIS_GT:
        ev = LVISEval(gt, dt, iou_type=iou_type)
        ev.run()
        assert doc["metrics"] == {k: (None if v == -1 else v) for k, v in ev.get_results().items()}
        assert doc["lrp"]["olrp"] == optimal_lrp(ev)["olrp"]
