"""``boundary-eval --ap fixed | pooled --dets-per-cat K`` (issue 29): the numbers of
large-vocab-devil's scripts (tests/data/lvis_fixed_pooled.json) in the table and in
--json-out, a warning naming the categories short of K, one-line errors."""
import json

import pytest

from boundary_api.cli import main
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT
import lvdevil_oracle as oracle

POOLED_KEYS = {"AP-pooled-all": "AP", "AP-pooled-r": "APr", "AP-pooled-c": "APc", "AP-pooled-f": "APf"}


def golden(name):
    with open(oracle.GOLDEN) as f:
        case = next(c for c in json.load(f)["cases"] if c["name"] == name)
    res = {k: float.fromhex(v) for k, v in case["results"].items()}
    return {POOLED_KEYS.get(k, k): v for k, v in res.items()}


def test_fixed_boundary(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["--gt", LVIS_GT, "--dt", LVIS_DT, "--ap", "fixed", "--json-out", str(out)]) == 0
    printed = capsys.readouterr()
    lines = printed.out.splitlines()
    assert lines[0] == ("LVIS Fixed Boundary AP (dilation ratio 0.02), the top 10000 results of each category, "
                        "no limit per image:")
    assert len(lines) == 14 and "maxDets= -1" in lines[1]
    warned = [line for line in printed.err.splitlines() if "warning" in line]
    assert warned == ["boundary-eval: warning: 581 of the 581 categories with results have fewer than 10000 "
                      "detections; Fixed and Pooled AP would be higher with 10000 per category (see "
                      "docs/lvis_fixed_pooled.md on making a detector output them)"]
    doc = json.loads(out.read_text())
    assert doc["settings"]["ap"] == "fixed" and doc["settings"]["dets_per_cat"] == 10000
    assert doc["settings"]["max_dets"] == -1
    for key, value in golden("fixed-bundled-boundary-10000").items():
        assert abs(doc[key] - value) <= 1e-12, key
    assert len(doc["per_category"]) == 1230


@pytest.mark.parametrize("iou", ["segm", "bbox"])
def test_pooled_with_ties(tmp_path, capsys, iou):
    """Rounded scores and K = 3: the cut falls inside runs of equal scores."""
    dt = oracle.make_rounded_results(str(tmp_path / "rounded.json"))
    out = tmp_path / "m.json"
    assert main(["--gt", LVIS_GT, "--dt", dt, "--ap", "pooled", "--dets-per-cat", "3", "--iou-type", iou,
                 "--json-out", str(out), "-q"]) == 0
    doc = json.loads(out.read_text())
    want = golden(f"pooled-rounded-{iou}-3")
    assert [k for k in doc if k in want] == list(want)
    for key, value in want.items():
        assert abs(doc[key] - value) <= 1e-12, key
    assert doc["per_category"] == {}  # Pooled AP has no per-category AP
    assert doc["settings"]["ap"] == "pooled" and doc["settings"]["dets_per_cat"] == 3


def test_standard_settings_unchanged(tmp_path):
    out = tmp_path / "m.json"
    assert main(["--gt", LVIS_GT, "--dt", LVIS_DT, "--json-out", str(out), "-q"]) == 0
    settings = json.loads(out.read_text())["settings"]
    assert "ap" not in settings and settings["max_dets"] == 300


@pytest.mark.parametrize("argv, message", [
    (["--gt", COCO_GT, "--dt", COCO_DT, "--ap", "fixed"], "'fixed' is LVIS' Fixed / Pooled AP;"),
    (["--gt", LVIS_GT, "--dt", LVIS_DT, "--ap", "fixed", "--dets-per-cat", "0"], "--dets-per-cat: must be >= 1"),
    (["--gt", LVIS_GT, "--dt", LVIS_DT, "--ap", "fixd"], "argument --ap: invalid choice"),
])
def test_bad_input(argv, message, capsys):
    """Exit status 2 and one error line (argparse's for the flags)."""
    try:
        status = main(argv + ["-q"])
    except SystemExit as exc:
        status = exc.code
    assert status == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(err) == 1 and message in err[0]
