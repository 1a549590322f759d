"""``boundary-eval vos`` and ``boundary-eval vis``: one library call each (the numbers
are evaluate_davis' / evaluate_sav's / evaluate_vis_files'), the official tables and
CSV files, --json-out, --demo, and one line with exit 2 on bad input."""
import json
import os
import struct
import zlib

import numpy as np
import pytest

from boundary_api.cli import main
from boundary_api.video import evaluate_davis, evaluate_sav, evaluate_vis_files, synthetic, synthetic_vis


@pytest.fixture(scope="module")
def davis(tmp_path_factory):
    return synthetic.write_demo("davis", tmp_path_factory.mktemp("davis") / "d")


@pytest.fixture(scope="module")
def sav(tmp_path_factory):
    return synthetic.write_demo("sav", tmp_path_factory.mktemp("sav") / "s")


@pytest.fixture(scope="module")
def vis(tmp_path_factory):
    return synthetic_vis.write_demo(tmp_path_factory.mktemp("vis") / "v")


def test_vos_davis_is_evaluate_davis(davis, tmp_path, capsys):
    out = tmp_path / "m.json"
    csv = tmp_path / "csv"
    argv = ["vos", "--davis-root", davis["davis_root"], "--results", davis["results"], "--metric", "J", "F", "B",
            "--json-out", str(out), "--csv-dir", str(csv), "--threads", "1"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    result = evaluate_davis(davis["davis_root"], davis["results"], metrics=("J", "F", "B"))
    assert result.table() in printed
    doc = json.loads(out.read_text())
    assert doc["settings"]["kind"] == "davis" and doc["settings"]["dilation_ratio"] == 0.02
    assert doc["settings"]["metrics"] == ["J", "F", "B"] and doc["settings"]["task"] == "semi-supervised"
    assert list(doc)[2:12] == ["J&F-Mean", "J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall", "F-Decay",
                               "B-Mean", "B-Recall", "B-Decay"]
    for name, value in result.metrics.items():
        assert doc[name] == pytest.approx(value, abs=1e-15)
    assert [r["Sequence"] for r in doc["per_object"]] == [r["Sequence"] for r in result.per_object]
    assert sorted(os.listdir(csv)) == ["global_results-val.csv", "per-sequence_results-val.csv"]
    lines = (csv / "global_results-val.csv").read_text().splitlines()
    assert lines[0].split(",")[:7] == ["J&F-Mean", "J-Mean", "J-Recall", "J-Decay", "F-Mean", "F-Recall", "F-Decay"]
    assert lines[1] == ",".join(f"{v:.3f}" for v in result.metrics.values())


def test_vos_unsupervised(davis, capsys):
    assert main(["vos", "--davis-root", davis["davis_root"], "--results", davis["results"],
                 "--task", "unsupervised", "-q"]) == 0
    assert "unsupervised" in capsys.readouterr().out


def test_vos_sav_is_evaluate_sav(sav, tmp_path, capsys):
    out = tmp_path / "s.json"
    assert main(["vos", "--protocol", "sav", "--gt-root", sav["gt_root"], "--dt-root", sav["pred_root"],
                 "--json-out", str(out), "--csv-dir", str(tmp_path / "c")]) == 0
    printed = capsys.readouterr().out
    result = evaluate_sav(sav["gt_root"], sav["pred_root"])
    assert result.table() in printed
    assert "Global score" in printed
    doc = json.loads(out.read_text())
    assert doc["settings"]["kind"] == "sav" and doc["settings"]["skip_first_and_last"] is True
    assert doc["J&F"] == pytest.approx(result.metrics["J&F"], abs=1e-12)
    assert (tmp_path / "c" / "results.csv").read_text() == result.settings["_table"]
    assert not os.path.exists(os.path.join(sav["pred_root"], "results.csv"))  # the CLI writes only --csv-dir


def test_vis_is_evaluate_vis_files(vis, tmp_path, capsys):
    out = tmp_path / "v.json"
    assert main(["vis", "--gt", vis["gt"], "--dt", vis["dt"], "--iou-type", "boundary", "--json-out", str(out)]) == 0
    printed = capsys.readouterr().out
    result = evaluate_vis_files(vis["gt"], vis["dt"], iou_type="boundary")
    assert "\n".join(result.lines) in printed
    doc = json.loads(out.read_text())
    assert doc["settings"]["kind"] == "ytvis" and doc["settings"]["iou_type"] == "boundary"
    assert list(doc)[2:14] == ["AP", "AP50", "AP75", "APs", "APm", "APl",
                               "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]
    assert doc["AP"] == pytest.approx(result.metrics["AP"], abs=1e-15)
    assert doc["per_category"]


@pytest.mark.parametrize("argv", [["vos", "--demo", "{tmp}/a"], ["vos", "--protocol", "sav", "--demo", "{tmp}/b"],
                                  ["vis", "--demo", "{tmp}/c", "--iou-type", "boundary"]])
def test_demo_writes_and_evaluates(argv, tmp_path, capsys):
    argv = [a.format(tmp=tmp_path) for a in argv]
    assert main(argv) == 0
    assert os.listdir(argv[-1] if argv[-1].startswith(str(tmp_path)) else argv[argv.index("--demo") + 1])
    # a second time: the folder is not empty any more
    assert main(argv) == 2
    assert "not empty" in capsys.readouterr().err


def _png_bomb(path, w=100000, h=100000):
    def chunk(t, data):
        return struct.pack(">I", len(data)) + t + data + struct.pack(">I", zlib.crc32(t + data) & 0xffffffff)
    raw = zlib.compress(b"\0" * 10)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", raw) + chunk(b"IEND", b""))


def _copy_davis(davis, tmp_path):
    import shutil

    root = tmp_path / "DAVIS"
    shutil.copytree(davis["davis_root"], root)
    res = tmp_path / "results"
    shutil.copytree(davis["results"], res)
    return root, res


@pytest.mark.parametrize("damage", ["missing_frame", "other_size", "index_above", "png_bomb", "not_png",
                                    "rgb", "missing_sequence", "no_results"])
def test_vos_bad_input_one_line_exit_2(damage, davis, tmp_path, capsys):
    root, res = _copy_davis(davis, tmp_path)
    frame = res / "bear" / "00005.png"
    if damage == "missing_frame":
        frame.unlink()
    elif damage == "other_size":
        synthetic.write_label_png(frame, np.zeros((10, 10), np.uint8))
    elif damage == "index_above":
        synthetic.write_label_png(frame, np.full((120, 160), 9, np.uint8))
    elif damage == "png_bomb":
        _png_bomb(frame)
    elif damage == "not_png":
        frame.write_bytes(b"not an image at all")
    elif damage == "rgb":
        from PIL import Image

        Image.fromarray(np.zeros((120, 160, 3), np.uint8)).save(frame)
    elif damage == "missing_sequence":
        import shutil

        shutil.rmtree(res / "kite")
    results = str(tmp_path / "nowhere") if damage == "no_results" else str(res)
    code = main(["vos", "--davis-root", str(root), "--results", results])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("boundary-eval: error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize("damage", ["invalid_json", "unknown_video", "length", "rle_size", "empty", "missing_file"])
def test_vis_bad_input_one_line_exit_2(damage, vis, tmp_path, capsys):
    dt = tmp_path / "r.json"
    results = json.loads(open(vis["dt"]).read())
    if damage == "invalid_json":
        dt.write_text('[{"video_id": 1,')
    else:
        if damage == "unknown_video":
            results[0]["video_id"] = 987654
        elif damage == "length":
            results[0]["segmentations"].append(None)
        elif damage == "rle_size":
            seg = next(s for s in results[0]["segmentations"] if s)
            seg["size"] = [seg["size"][0] + 1, seg["size"][1]]
        elif damage == "empty":
            results = []
        dt.write_text(json.dumps(results))
    path = str(tmp_path / "none.json") if damage == "missing_file" else str(dt)
    code = main(["vis", "--gt", vis["gt"], "--dt", path])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("boundary-eval: error: ") and err.count("\n") == 1, err


def test_vos_help_explains_every_flag(capsys):
    with pytest.raises(SystemExit):
        main(["vos", "--help"])
    text = capsys.readouterr().out
    for flag in ("--protocol", "--davis-root", "--results", "--task", "--set", "--metric", "--csv-dir",
                 "--json-out", "--gt-root", "--dt-root", "--decay", "--demo", "--threads", "--dilation-ratio"):
        assert flag in text
