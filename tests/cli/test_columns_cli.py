"""``boundary-eval`` reads standard files as columns; the numbers and the
``--json-out`` document are those of the dict path."""
import contextlib
import io
import json
from pathlib import Path

import pytest

import boundary_api.instance._gt_columns as gt_columns_module
import boundary_api.coco.dataset as coco_module
from boundary_api.cli import main
from boundary_api.coco.cocoeval import COCOeval

DATA = Path(__file__).resolve().parents[1] / "data" / "coco"
COCO_GT = str(DATA / "instances_val2014_100.json")
COCO_DT = str(DATA / "instances_val2014_fakesegm100_results.json")


def _run(argv):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(argv) == 0
    return out.getvalue()


@pytest.mark.parametrize("iou_type", ["boundary", "segm", "bbox"])
def test_columns_and_dicts_give_the_same_document(tmp_path, monkeypatch, iou_type):
    seen = []
    evaluate = COCOeval.evaluate

    def spy(self):
        seen.append((self.cocoGt._gt_columns is not None, self.cocoDt._columns is not None))
        return evaluate(self)

    monkeypatch.setattr(COCOeval, "evaluate", spy)
    fast_json, slow_json = tmp_path / "fast.json", tmp_path / "slow.json"
    fast = _run(["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", iou_type, "--json-out", str(fast_json)])
    assert seen[-1] == (True, True)
    with monkeypatch.context() as m:
        m.setattr(coco_module, "load_ground_truth_columns", lambda *a, **k: None)
        m.setattr(coco_module, "load_result_columns", lambda *a, **k: None)
        slow = _run(["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", iou_type, "--json-out", str(slow_json)])
    assert seen[-1] == (False, False)
    a, b = json.loads(fast_json.read_text()), json.loads(slow_json.read_text())
    a.pop("created", None), b.pop("created", None)
    assert {k: v for k, v in a.items() if k != "inputs"} == {k: v for k, v in b.items() if k != "inputs"}
    # the printed summary table is the same
    table = [line for line in fast.splitlines() if line.startswith(" Average")]
    assert table and table == [line for line in slow.splitlines() if line.startswith(" Average")]


LVIS_DATA = Path(__file__).resolve().parents[1] / "data" / "lvis"
LVIS_GT = str(LVIS_DATA / "lvis_val_100.json")
LVIS_DT = LVIS_DATA / "lvis_val_100_results_jitter.json"


@pytest.mark.parametrize("iou_type", ["boundary", "segm", "bbox"])
def test_lvis_files_as_columns_give_the_same_document(tmp_path, monkeypatch, iou_type):
    import boundary_api.lvis.dataset as lvis_dataset
    import boundary_api.lvis.eval as lvis_module

    gt, dt = LVIS_GT, str(LVIS_DT)
    seen = []
    evaluate = lvis_module.LVISEval.evaluate

    def spy(self):
        seen.append((self.lvis_gt.__dict__.get("_gt_columns") is not None, self.lvis_dt._columns is not None))
        return evaluate(self)

    monkeypatch.setattr(lvis_module.LVISEval, "evaluate", spy)
    fast_json, slow_json = tmp_path / "fast.json", tmp_path / "slow.json"
    fast = _run(["--gt", gt, "--dt", dt, "--iou-type", iou_type, "--json-out", str(fast_json)])
    assert seen[-1] == (True, True)
    with monkeypatch.context() as m:
        m.setattr(gt_columns_module, "load_ground_truth_columns", lambda *a, **k: None)
        m.setattr(lvis_dataset, "load_result_columns", lambda *a, **k: None)
        slow = _run(["--gt", gt, "--dt", dt, "--iou-type", iou_type, "--json-out", str(slow_json)])
    assert seen[-1] == (False, False)
    # results outside the schema: both files are read as dicts, as for COCO
    with monkeypatch.context() as m:
        m.setattr(lvis_dataset, "load_result_columns", lambda *a, **k: None)
        mixed = _run(["--gt", gt, "--dt", dt, "--iou-type", iou_type])
    assert seen[-1] == (False, False)
    assert mixed == slow
    a, b = json.loads(fast_json.read_text()), json.loads(slow_json.read_text())
    a.pop("created", None), b.pop("created", None)
    assert a == b
    assert [line for line in fast.splitlines() if "AP" in line] == [line for line in slow.splitlines() if "AP" in line]


def test_lvis_results_with_unknown_categories_are_worded_by_the_dict_path(tmp_path, capsys):
    gt = LVIS_GT
    dt = json.loads(LVIS_DT.read_text())
    dt[0]["category_id"] = 987654
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(dt))
    assert main(["--gt", gt, "--dt", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "987654" in err[0] and "dt.json" in err[0]
