"""Issue 31: one reader of COCO / LVIS files (boundary_api.instance._files).  The
same bad ground-truth or results file gives the same one-line message, exit 2,
through the instance command (evaluate_files) and through diagnose, compare and
analyze (the diagnostics), and the same file pair gives the same numbers."""
import json

import pytest

from boundary_api.cli import main
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT


def _error(capsys, argv):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("boundary-eval: error: ") and "Traceback" not in err, err
    return err


def _bad_inputs(tmp_path):
    with open(COCO_DT) as f:
        dets = json.load(f)
    with open(COCO_GT) as f:
        gt = json.load(f)
    boxes = tmp_path / "boxes.json"
    boxes.write_text(json.dumps([{k: v for k, v in d.items() if k != "segmentation"} for d in dets]))
    unknown = tmp_path / "unknown_category.json"
    unknown.write_text(json.dumps([dict(d, category_id=9999) if n == 3 else d for n, d in enumerate(dets)]))
    not_json = tmp_path / "not.json"
    not_json.write_text("{\"images\": [")
    no_mask = tmp_path / "no_mask.json"
    del gt["annotations"][0]["segmentation"]
    no_mask.write_text(json.dumps(gt))
    not_an_object = tmp_path / "list.json"
    not_an_object.write_text("[1, 2]")
    return {
        "results are a ground truth": (COCO_GT, COCO_GT),
        "files swapped": (COCO_DT, COCO_GT),
        "boxes only": (COCO_GT, str(boxes)),
        "unknown category": (COCO_GT, str(unknown)),
        "ground truth not JSON": (str(not_json), COCO_DT),
        "results not JSON": (COCO_GT, str(not_json)),
        "ground truth missing": (str(tmp_path / "missing.json"), COCO_DT),
        "results missing": (COCO_GT, str(tmp_path / "missing.json")),
        "ground truth without a mask": (str(no_mask), COCO_DT),
        "ground truth not an object": (str(not_an_object), COCO_DT),
    }


CASES = ["results are a ground truth", "files swapped", "boxes only", "unknown category", "ground truth not JSON",
         "results not JSON", "ground truth missing", "results missing", "ground truth without a mask",
         "ground truth not an object"]


@pytest.mark.parametrize("case", CASES)
def test_same_bad_file_same_message_everywhere(tmp_path, capsys, case):
    gt, dt = _bad_inputs(tmp_path)[case]
    common = ["--gt", gt, "--dt", dt, "--iou-type", "boundary", "-q"]
    lines = {
        "evaluate": _error(capsys, common),
        "diagnose": _error(capsys, ["diagnose", *common]),
        "analyze": _error(capsys, ["analyze", *common]),
        "compare": _error(capsys, ["compare", "--gt", gt, "--dt", dt, "--dt", dt, "--iou-type", "boundary", "-q"]),
    }
    assert len(set(lines.values())) == 1, lines
    # and it names the file(s) as given
    line = lines["evaluate"]
    assert (gt in line) or (dt in line), line


@pytest.mark.slow
def test_lvis_ground_truth_is_told_by_the_same_rule(tmp_path, capsys):
    """An LVIS file pair: the instance command and diagnose both evaluate it with
    LVIS rules (one decision, instance._files.looks_like_lvis), to the same AP."""
    out_e, out_d = tmp_path / "e.json", tmp_path / "d.json"
    assert main(["--gt", LVIS_GT, "--dt", LVIS_DT, "--iou-type", "segm", "-q", "--json-out", str(out_e)]) == 0
    assert main(["diagnose", "--gt", LVIS_GT, "--dt", LVIS_DT, "--iou-type", "segm", "-q",
                 "--json-out", str(out_d)]) == 0
    e, d = json.loads(out_e.read_text()), json.loads(out_d.read_text())
    assert e["settings"]["kind"] == d["settings"]["kind"] == "lvis"
    assert d["metrics"]["AP"] == pytest.approx(e["AP"], abs=1e-12)
