"""boundary-eval analyze / report: the JSON document, the files written, bad input
(one line on stderr, exit 2, nothing written)."""
import contextlib
import io
import json
import os

import pytest

from analysis_data import build, rle, square
from boundary_api import COCO
from boundary_api.cli import main
from boundary_api.diagnostics.tide import ERROR_TYPES, analyze_errors, boundary_coverage
from conftest import COCO_DT, COCO_GT


def _strict(text):
    def bad(name):
        raise AssertionError(f"{name} in the JSON")
    return json.loads(text, parse_constant=bad)


def test_analyze_json_out_on_coco(tmp_path, capsys):
    out = tmp_path / "a.json"
    assert main(["analyze", "--gt", COCO_GT, "--dt", COCO_DT, "--json-out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "TIDE AP (IoU 0.5; Boundary AP, dilation ratio 0.02)" in printed and all(t in printed for t in ERROR_TYPES)
    doc = _strict(out.read_text())
    assert list(doc)[:2] == ["boundary_api_version", "settings"]
    assert doc["settings"] == {"kind": "coco", "iou_type": "boundary", "dilation_ratio": 0.02, "max_dets": 100,
                               "pos_threshold": 0.5, "background_threshold": 0.1,
                               "inputs": {"--gt": COCO_GT, "--dt": COCO_DT}}
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        dt = gt.loadRes(COCO_DT)
    ref = analyze_errors(gt, dt)
    assert doc["AP"] == ref["ap"]
    assert doc["errors"] == ref["errors"] and set(doc["errors"]) == set(ERROR_TYPES)
    for size in ("small", "medium", "large"):
        assert doc["per_size"][size]["errors"] == ref["per_size"][size]["errors"]
    assert set(doc["per_category"]) == {str(c) for c in ref["per_category"]}
    person = doc["per_category"]["1"]
    assert person["id"] == 1 and person["name"] == "person"
    assert person["errors"] == ref["per_category"][1]["errors"] and person["AP"] == ref["per_category"][1]["ap"]
    assert doc["boundary_coverage"] == boundary_coverage(gt)
    assert os.listdir(tmp_path) == ["a.json"]


def test_analyze_segm_has_no_boundary_errors(tmp_path):
    out = tmp_path / "a.json"
    assert main(["analyze", "--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "segm", "--json-out", str(out)]) == 0
    doc = _strict(out.read_text())
    assert doc["errors"]["boundary"] == 0.0 and doc["settings"]["dilation_ratio"] is None


@pytest.fixture
def small_case(tmp_path):
    gt, _ = build([(1, 1, square(10, 10, 40)), (1, 2, square(60, 60, 30))], [(1, 1, square(10, 10, 40), 0.5)])
    gt_path = tmp_path / "gt.json"
    gt_path.write_text(json.dumps(gt.dataset))
    dts = [{"image_id": 1, "category_id": 1, "segmentation": rle(square(12, 12, 40)), "score": 0.9},
           {"image_id": 1, "category_id": 2, "segmentation": rle(square(60, 60, 30)), "score": 0.8}]
    dt_path = tmp_path / "dt.json"
    dt_path.write_text(json.dumps(dts))
    return str(gt_path), str(dt_path)


def test_report_png_format(small_case, tmp_path, capsys):
    gt, dt = small_case
    out = tmp_path / "figs"
    assert main(["report", "--gt", gt, "--dt", dt, "--out", str(out), "--format", "png",
                 "--iou-thrs", "0.5,0.9"]) == 0
    # (with the diagnostics' figures of issue 30)
    assert sorted(os.listdir(out)) == ["confusion.png", "errors.png", "intervals.png", "pr_curves.png",
                                       "reliability.png", "scatter.png", "worst_00.png"]
    assert sorted(os.listdir(tmp_path)) == ["dt.json", "figs", "gt.json"]
    assert capsys.readouterr().out.strip() == f"boundary-eval: wrote {out}"


@pytest.mark.parametrize("argv, message", [
    (["analyze", "--gt", "missing.json", "--dt", "{dt}"], "missing.json"),
    (["analyze", "--gt", "{gt}", "--dt", "{dt}", "--pos-threshold", "0.05"], "--background-threshold"),
    (["analyze", "--gt", "{gt}", "--dt", "{gt}"], "results"),
    (["report", "--gt", "{gt}", "--dt", "{dt}", "--out", "{tmp}"], "is a directory"),
    (["report", "--gt", "{gt}", "--dt", "{dt}", "--out", "{tmp}/r.html", "--images", "{tmp}/nope"], "--images"),
    (["report", "--gt", "{gt}", "--dt", "{dt}", "--out", "{tmp}/r.html", "--iou-thrs", "0.3"], "--iou-thrs"),
    (["report", "--gt", "{gt}", "--dt", "{dt}", "--out", "{gt}"], "the file given to --gt"),
    (["analyze", "--gt", "{gt}", "--dt", "{dt}", "--json-out", "{dt}"], "the file given to --dt"),
])
def test_bad_input_is_one_line(small_case, tmp_path, capsys, argv, message):
    gt, dt = small_case
    before = sorted(os.listdir(tmp_path))
    argv = [a.format(gt=gt, dt=dt, tmp=tmp_path) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("boundary-eval: error: ") and message in err[0], err
    assert sorted(os.listdir(tmp_path)) == before


def test_bad_flag_values_are_usage_errors(small_case, capsys):
    gt, dt = small_case
    with pytest.raises(SystemExit) as exc:
        main(["analyze", "--gt", gt, "--dt", dt, "--pos-threshold", "1.5"])
    assert exc.value.code == 2 and "must be in [0, 1]" in capsys.readouterr().err


@pytest.mark.parametrize("cmd, flags", [
    ("analyze", ["--gt", "--dt", "--iou-type", "--dilation-ratio", "--pos-threshold", "--background-threshold",
                 "--max-dets", "--threads", "--json-out"]),
    ("report", ["--gt", "--dt", "--out", "--format", "--images", "--worst", "--iou-thrs", "--dilation-ratio"]),
])
def test_help_explains_every_flag(cmd, flags, capsys):
    with pytest.raises(SystemExit) as exc:
        main([cmd, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    for f in flags:
        assert f in text, f


def test_progress_bar_only_on_a_terminal_after_a_few_seconds(monkeypatch):
    from boundary_api.cli.report import _Progress

    p = _Progress(total=3)
    p.start -= 10  # as if it had been running for 10 s
    p("step")  # pytest's stderr is not a terminal: no bar
    assert p.bar is None
    monkeypatch.setattr("sys.stderr.isatty", lambda: True, raising=False)
    q = _Progress(total=3)
    q("fast step")  # under 2 s: still no bar
    assert q.bar is None
    q.start -= 10
    q("slow step")
    assert q.bar is not None and q.bar.n == 2
    q.close()


# ----------------------------------------------------------------------------
# LVIS ground truth and --iou-type bbox (issue 30): the confusion matrix,
# calibration and LRP for every combination; TIDE's parts null with a note
# ----------------------------------------------------------------------------
def _reference_evaluator(gt_path, dt_path, iou_type, max_dets=None):
    """The evaluator analyze diagnoses, built by hand from the public classes
    (detections per image: 100 for COCO, LVIS' 300, unless told)."""
    from boundary_api import LVIS, LVISEval, LVISResults, COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        if "lvis" in os.path.basename(gt_path):
            gt = LVIS(gt_path)
            max_dets = 300 if max_dets is None else max_dets
            ev = LVISEval(gt, LVISResults(gt, dt_path, max_dets=max_dets), iou_type=iou_type)
        else:
            gt = COCO(gt_path)
            ev = COCOeval(gt, gt.loadRes(dt_path), iou_type)
            ev.params.maxDets = [1, 10, 100 if max_dets is None else max_dets]
        ev.evaluate()
    return ev


def _assert_diagnostics_of(doc, ev):
    from boundary_api.diagnostics.calibration import calibration
    from boundary_api.diagnostics.confusion import confusion_matrix
    from boundary_api.diagnostics.lrp import optimal_lrp

    cm, cal, lrp = confusion_matrix(ev, 0.5), calibration(ev, 0.5, 10), optimal_lrp(ev, 0.5)
    assert cm["matrix"].sum() > 0 and lrp["olrp"] is not None
    assert doc["confusion"]["matrix"] == cm["matrix"].tolist() and doc["confusion"]["cat_ids"] == cm["cat_ids"]
    assert doc["calibration"]["ece"] == cal["ece"] and doc["calibration"]["mce"] == cal["mce"]
    assert doc["calibration"]["count"] == cal["count"] and cal["count"] > 0
    assert doc["lrp"]["olrp"] == lrp["olrp"] and doc["lrp"]["loc"] == lrp["loc"]
    assert doc["lrp"]["fp"] == lrp["fp"] and doc["lrp"]["fn"] == lrp["fn"]


def small_lvis(tmp_path, n_images=10):
    """The first images of tests/data/lvis with the categories they use (a
    small confusion matrix), written as two files."""
    from conftest import LVIS_DT, LVIS_GT

    with open(LVIS_GT) as f:
        gt = json.load(f)
    with open(LVIS_DT) as f:
        dt = json.load(f)
    images = gt["images"][:n_images]
    ids = {im["id"] for im in images}
    anns = [a for a in gt["annotations"] if a["image_id"] in ids]
    cats = {a["category_id"] for a in anns}
    for im in images:
        cats |= set(im.get("neg_category_ids", [])) | set(im.get("not_exhaustive_category_ids", []))
    gt.update(images=images, annotations=anns, categories=[c for c in gt["categories"] if c["id"] in cats])
    dt = [d for d in dt if d["image_id"] in ids and d["category_id"] in cats]
    gt_path, dt_path = tmp_path / "lvis_gt.json", tmp_path / "lvis_dt.json"
    gt_path.write_text(json.dumps(gt))
    dt_path.write_text(json.dumps(dt))
    return str(gt_path), str(dt_path)


@pytest.mark.parametrize("iou_type, full", [("segm", False), ("bbox", False), ("boundary", False),
                                            pytest.param("boundary", True, marks=pytest.mark.slow)])
def test_analyze_lvis(tmp_path, capsys, iou_type, full):
    from conftest import LVIS_DT, LVIS_GT

    data = tmp_path / "data"
    data.mkdir()
    gt, dt = (LVIS_GT, LVIS_DT) if full else small_lvis(data)
    out = tmp_path / "a.json"
    assert main(["analyze", "--gt", gt, "--dt", dt, "--iou-type", iou_type, "--json-out", str(out)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == ("TIDE error breakdown: not computed: TIDE's error breakdown is not computed for LVIS "
                          "ground truth: TIDE defines its error types for exhaustively annotated images, not for "
                          "LVIS' federated negative and not-exhaustive categories.")
    assert printed[1].startswith("Calibration (IoU 0.5): ECE ")
    doc = _strict(out.read_text())
    assert doc["settings"]["kind"] == "lvis" and doc["settings"]["iou_type"] == iou_type
    assert doc["settings"]["max_dets"] == 300  # LVIS' own default
    for key in ("AP", "errors", "counts", "per_size", "per_category"):
        assert doc[key] is None, key
    assert "LVIS" in doc["notes"]["errors"]
    if iou_type == "bbox":
        assert doc["boundary_coverage"] is None and "bbox" in doc["notes"]["boundary_coverage"]
    else:
        assert doc["boundary_coverage"]["all"]["objects"] > 0 and "boundary_coverage" not in doc["notes"]
    _assert_diagnostics_of(doc, _reference_evaluator(gt, dt, iou_type))


def test_analyze_lvis_max_dets_keeps_the_best_detections_per_image(tmp_path):
    gt, dt = small_lvis(tmp_path)
    out = tmp_path / "a.json"
    assert main(["analyze", "--gt", gt, "--dt", dt, "--iou-type", "bbox", "--max-dets", "2",
                 "--json-out", str(out)]) == 0
    doc = _strict(out.read_text())
    assert doc["settings"]["max_dets"] == 2
    ev = _reference_evaluator(gt, dt, "bbox", max_dets=2)
    _assert_diagnostics_of(doc, ev)
    full = _strict(json.dumps(analyze_files_doc(gt, dt)))
    assert doc["calibration"]["count"] < full["calibration"]["count"]


def analyze_files_doc(gt, dt):
    from boundary_api.diagnostics.files import analyze_files

    return analyze_files(gt, dt, iou_type="bbox")["diagnostics"]


def test_analyze_bbox_on_coco(tmp_path, capsys):
    out = tmp_path / "a.json"
    assert main(["analyze", "--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "bbox", "-q",
                 "--json-out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("TIDE AP (IoU 0.5; Box AP): 64.13")
    doc = _strict(out.read_text())
    assert doc["settings"]["kind"] == "coco" and doc["settings"]["iou_type"] == "bbox"
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        dt = gt.loadRes(COCO_DT)
    ref = analyze_errors(gt, dt, iou="bbox")
    assert doc["AP"] == ref["ap"] and doc["errors"] == ref["errors"] and doc["counts"] == ref["counts"]
    for size in ("small", "medium", "large"):
        assert doc["per_size"][size]["errors"] == ref["per_size"][size]["errors"]
    assert doc["per_category"]["1"]["errors"] == ref["per_category"][1]["errors"]
    # the boundary coverage measures masks: left out, with the reason
    assert doc["boundary_coverage"] is None and list(doc["notes"]) == ["boundary_coverage"]
    _assert_diagnostics_of(doc, _reference_evaluator(COCO_GT, COCO_DT, "bbox"))


def test_analyze_coco_segm_diagnostics_and_no_notes(tmp_path):
    out = tmp_path / "a.json"
    assert main(["analyze", "--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "segm", "--json-out", str(out)]) == 0
    doc = _strict(out.read_text())
    assert doc["notes"] == {} and doc["errors"] is not None
    _assert_diagnostics_of(doc, _reference_evaluator(COCO_GT, COCO_DT, "segm"))


def test_analyze_bbox_accepts_box_only_results(small_case, tmp_path, capsys):
    gt, _ = small_case
    boxes = [{"image_id": 1, "category_id": 1, "bbox": [12, 12, 40, 40], "score": 0.9},
             {"image_id": 1, "category_id": 2, "bbox": [60, 60, 30, 30], "score": 0.8}]
    dt = tmp_path / "boxes.json"
    dt.write_text(json.dumps(boxes))
    out = tmp_path / "a.json"
    assert main(["analyze", "--gt", gt, "--dt", str(dt), "--iou-type", "bbox", "--json-out", str(out)]) == 0
    doc = _strict(out.read_text())
    # both boxes match their object (IoU 38²/(2·40²-38²) = 0.82 and 1): perfectly placed, two true positives
    assert doc["confusion"]["matrix"] == [[1, 0, 0], [0, 1, 0], [0, 0, 0]]
    assert doc["lrp"]["fp"] == 0.0 and doc["lrp"]["fn"] == 0.0
    # the same boxes are refused where masks are needed
    assert main(["analyze", "--gt", gt, "--dt", str(dt), "--iou-type", "segm"]) == 2
    err = capsys.readouterr().err
    assert "segmentation" in err and "bbox" in err
