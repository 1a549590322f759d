"""boundary-eval with JSON Lines, --chunk-images, --workers, --manifest and 'shard':
the --json-out of the in-memory command, and one-line errors."""
import json
import os

import pytest

from boundary_api.cli import main
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT

METRICS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")


def _jsonl(path, src):
    with open(src) as f:
        dets = json.load(f)
    with open(path, "w") as f:
        for d in dets:
            f.write(json.dumps(d) + "\n")
    return str(path)


def _doc(path):
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def in_memory(tmp_path_factory):
    """The in-memory command's summary metrics (whatever its --json-out layout)."""
    out = {}
    for kind, gt, dt in (("coco", COCO_GT, COCO_DT), ("lvis", LVIS_GT, LVIS_DT)):
        path = str(tmp_path_factory.mktemp(kind) / "m.json")
        assert main(["--gt", gt, "--dt", dt, "--iou-type", "boundary", "-q", "--json-out", path]) == 0
        doc = _doc(path)
        out[kind] = doc.get("metrics", doc)
    return out


def test_jsonl_with_chunks_equals_in_memory(tmp_path, in_memory, capsys):
    out = str(tmp_path / "s.json")
    assert main(["--gt", COCO_GT, "--dt", _jsonl(tmp_path / "r.jsonl", COCO_DT), "--chunk-images", "7",
                 "--json-out", out, "-q"]) == 0
    doc = _doc(out)
    assert {m: doc[m] for m in METRICS} == {m: in_memory["coco"][m] for m in METRICS}
    # the whole document is the in-memory command's, but for the input paths
    same = {k: v for k, v in doc.items() if k != "settings"}
    assert same == {k: v for k, v in in_memory["coco"].items() if k != "settings"}
    assert {k: v for k, v in doc["settings"].items() if k != "inputs"} == \
        {k: v for k, v in in_memory["coco"]["settings"].items() if k != "inputs"}
    assert doc["settings"]["kind"] == "coco" and doc["settings"]["iou_type"] == "boundary"
    assert doc["settings"]["inputs"] == {"--gt": COCO_GT, "--dt": str(tmp_path / "r.jsonl")}
    assert doc["per_category"]["1"]["name"] == "person"
    assert "Average Precision" in capsys.readouterr().out


def test_lvis_jsonl(tmp_path, in_memory):
    out = str(tmp_path / "s.json")
    assert main(["--gt", LVIS_GT, "--dt", _jsonl(tmp_path / "r.jsonl", LVIS_DT), "--json-out", out, "-q"]) == 0
    doc = _doc(out)
    assert doc["settings"]["kind"] == "lvis"
    for key, value in in_memory["lvis"].items():
        if key in doc and not isinstance(value, dict):
            assert doc[key] == value, key
    assert doc["APr"] == in_memory["lvis"]["APr"]


def test_workers_and_shard_subcommand(tmp_path, in_memory, capsys):
    # (--gt/--dt with --workers shard into a temporary folder, then run as --manifest does)
    jl = _jsonl(tmp_path / "r.jsonl", COCO_DT)
    assert main(["shard", "--gt", COCO_GT, "--dt", jl, "--out-dir", str(tmp_path / "sh"),
                 "--images-per-shard", "30"]) == 0
    manifest = capsys.readouterr().out.strip().splitlines()[-1]
    assert os.path.exists(manifest) and len(_doc(manifest)["shards"]) == 4
    out2 = str(tmp_path / "m.json")
    assert main(["--manifest", manifest, "--workers", "1", "--json-out", out2, "-q"]) == 0
    assert {m: _doc(out2)[m] for m in METRICS} == {m: in_memory["coco"][m] for m in METRICS}


@pytest.mark.parametrize("argv, message", [
    (["--dt", "x.jsonl"], "--gt and --dt are needed"),
    (["--gt", COCO_GT, "--dt", "missing.jsonl"], "missing.jsonl: results file does not exist"),
    (["--gt", COCO_GT, "--dt", "r.jsonl", "--workers", "2", "--scheduler", "tcp://x:1"], "exclude each other"),
    (["--gt", COCO_GT, "--dt", "r.jsonl", "--scheduler", "tcp://x:1"], "--shard-dir"),
    (["--manifest", "m.json"], "--manifest needs --workers or --scheduler"),
    (["--gt", COCO_GT, "--dt", "r.jsonl", "--chunk-images", "5", "--slow"], "--slow cannot"),
])
def test_errors_are_one_line(tmp_path, capsys, monkeypatch, argv, message):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "r.jsonl").write_text("")
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("boundary-eval: error: ") and message in err
    assert sorted(os.listdir(tmp_path)) == ["r.jsonl"]


def test_bad_line_is_named(tmp_path, capsys):
    path = tmp_path / "r.jsonl"
    with open(COCO_DT) as f:
        first = json.load(f)[0]
    path.write_text(json.dumps(first) + '\n[1, 2\n')
    assert main(["--gt", COCO_GT, "--dt", str(path), "--json-out", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert "line 2 is not valid JSON" in err and err.count("\n") == 1
    assert not os.path.exists(tmp_path / "o.json")
