"""``--iou-type`` of several types (issue 46 item 10) for the image command: each type
evaluated on one load of the files, each table under its name, ``--json-out`` one document
per type (a single type keeps its schema); the numbers are each type's alone."""
import json

import pytest

import boundary_api.evaluate as evaluate_module
from boundary_api.cli import main
from boundary_api.evaluate import evaluate_files
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT


@pytest.mark.parametrize("gt, dt, types", [(COCO_GT, COCO_DT, ["segm", "boundary"]),
                                           (COCO_GT, COCO_DT, ["bbox", "boundary", "segm"]),
                                           pytest.param(LVIS_GT, LVIS_DT, ["boundary", "segm"],
                                                        marks=pytest.mark.slow)], ids=["coco", "coco3", "lvis"])
def test_each_type_on_one_load(gt, dt, types, monkeypatch, tmp_path, capsys):
    loads = []
    for name in ("as_columns", "as_dicts"):
        original = getattr(evaluate_module._Request, name)

        def spy(self, _original=original, _name=name):
            loads.append(_name)
            return _original(self)

        monkeypatch.setattr(evaluate_module._Request, name, spy)
    out = tmp_path / "m.json"
    assert main(["--gt", gt, "--dt", dt, "--iou-type", *types, "--json-out", str(out), "-q"]) == 0
    assert loads in (["as_columns"], ["as_columns", "as_dicts"])  # one load (the dicts only when not columns)
    printed = capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert list(doc) == types
    monkeypatch.undo()
    positions = []
    for kind in types:
        alone = evaluate_files(gt, dt, iou_type=kind)
        positions.append(printed.index(alone.title))
        for name, value in alone.metrics.items():
            assert doc[kind][name] == (None if value == -1 else value), (kind, name)
        single = tmp_path / f"{kind}.json"
        assert main(["--gt", gt, "--dt", dt, "--iou-type", kind, "--json-out", str(single), "-q"]) == 0
        assert doc[kind] == json.loads(single.read_text())  # each entry: today's single-type document
    assert positions == sorted(positions)


def test_python_takes_a_sequence():
    both = evaluate_files(COCO_GT, COCO_DT, iou_type=("boundary", "segm"))
    assert list(both) == ["boundary", "segm"] and both["segm"].iou_type == "segm"
    assert both["boundary"].metrics == evaluate_files(COCO_GT, COCO_DT).metrics
    for bad in ((), ("segm", "segm"), ("segm", "mask")):
        with pytest.raises(ValueError):
            evaluate_files(COCO_GT, COCO_DT, iou_type=bad)
    with pytest.raises(ValueError, match="two calls"):
        evaluate_files(LVIS_GT, LVIS_DT, iou_type=("bbox", "segm"), ap="fixed")


def test_refusals(tmp_path, capsys):
    with pytest.raises(SystemExit) as info:
        main(["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "segm", "segm"])
    assert info.value.code == 2 and "each type once" in capsys.readouterr().err
    lines = tmp_path / "r.jsonl"
    lines.write_text("\n".join(json.dumps(r) for r in json.load(open(COCO_DT))) + "\n")
    assert main(["--gt", COCO_GT, "--dt", str(lines), "--iou-type", "segm", "boundary"]) == 2
    err = capsys.readouterr().err
    assert "one IoU type at a time" in err and err.count("\n") == 1
