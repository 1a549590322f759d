"""``boundary-eval vos --protocol mosev2`` and ``--protocol lvos``: one library call
each (the numbers are evaluate_mosev2's / evaluate_lvos'), score.py's table and
output files, evaluation_method.py's CSV files, --json-out, --demo, and one line
with exit 2 on bad input."""
import json
import os
import shutil

import pytest

from boundary_api.cli import main
from boundary_api.video import evaluate_lvos, evaluate_mosev2, mosev2_benchmark, synthetic


@pytest.fixture(scope="module")
def mose(tmp_path_factory):
    return synthetic.write_demo("mosev2", tmp_path_factory.mktemp("mose") / "m")


@pytest.fixture(scope="module")
def lvos(tmp_path_factory):
    return synthetic.write_demo("lvos", tmp_path_factory.mktemp("lvos") / "l")


def test_mosev2_is_evaluate_mosev2(mose, tmp_path, capsys):
    out, folder = tmp_path / "m.json", tmp_path / "out"
    argv = ["vos", "--protocol", "mosev2", "--meta", mose["meta"], "--gt-root", mose["gt_root"], "--dt-root",
            mose["pred_root"], "--metric", "J", "F", "B", "--json-out", str(out), "--output", str(folder),
            "--video-order", "sorted"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    result = evaluate_mosev2(mose["meta"], mose["gt_root"], mose["pred_root"], metrics=("J", "F", "B"),
                             video_order="sorted")
    assert result.table() in printed and "Copy-Paste: " in printed
    doc = json.loads(out.read_text())
    assert doc["settings"]["kind"] == "mosev2" and doc["settings"]["protocol"] == "mosev2"
    assert list(doc)[2:10] == ["J&F_new", "J", "F_new", "disappear_J&F_new", "reappear_J&F_new", "F", "J&F", "B"]
    for name, value in result.metrics.items():
        assert doc[name] == pytest.approx(value, abs=1e-15)
    assert [(r["video"], r["object"]) for r in doc["per_object"]] == [("bear", "1"), ("bear", "2"), ("car", "1"),
                                                                      ("kite", "1"), ("kite", "2"), ("kite", "3")]
    assert sorted(os.listdir(folder)) == ["metrics.json", "scores.txt"]
    scores = (folder / "scores.txt").read_text().splitlines()
    assert scores[1] == f"J: {round(result.raw['J'] * 100, 2)}"
    metrics = json.loads((folder / "metrics.json").read_text())
    assert list(metrics)[-1] == "total_time" and len(metrics) == 7


def test_mosev2_python_and_command_line_agree_on_bad_input(mose, tmp_path, capsys):
    pred = tmp_path / "pred"
    shutil.copytree(mose["pred_root"], pred)
    os.remove(pred / "kite" / "00005.png")
    with pytest.raises(FileNotFoundError) as info:
        mosev2_benchmark(mose["meta"], mose["gt_root"], str(pred))
    assert "00005.png not found" in str(info.value)
    argv = ["vos", "--protocol", "mosev2", "--meta", mose["meta"], "--gt-root", mose["gt_root"], "--dt-root",
            str(pred)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"boundary-eval: error: {info.value}\n"
    # --not-strict scores it as score.py does (the later frames shifted), with a warning
    assert main(argv + ["--not-strict", "-q"]) == 0
    assert "the later frames are shifted" in capsys.readouterr().err
    bad = tmp_path / "meta.json"
    bad.write_text("{")
    assert main(["vos", "--protocol", "mosev2", "--meta", str(bad), "--gt-root", mose["gt_root"], "--dt-root",
                 mose["pred_root"]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "is not valid JSON" in err and str(bad) in err


def test_mosev2_needs_its_flags(capsys):
    with pytest.raises(SystemExit) as e:
        main(["vos", "--protocol", "mosev2", "--meta", "x.json"])
    assert e.value.code == 2
    assert "--meta, --gt-root and --dt-root are needed" in capsys.readouterr().err


def test_lvos_is_evaluate_lvos(lvos, tmp_path, capsys):
    out, csv = tmp_path / "l.json", tmp_path / "csv"
    argv = ["vos", "--protocol", "lvos", "--lvos-root", lvos["lvos_root"], "--results", lvos["results"],
            "--unseen-videos", lvos["unseen_videos"], "--json-out", str(out), "--csv-dir", str(csv)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    result = evaluate_lvos(lvos["lvos_root"], lvos["results"], unseen_videos=lvos["unseen_videos"])
    assert result.table() in printed
    doc = json.loads(out.read_text())
    assert doc["settings"]["kind"] == "lvos" and doc["settings"]["task"] == "semi-supervised"
    assert list(doc)[2:12] == ["J&F-Mean", "J-Mean", "J-seen-Mean", "J-unseen-Mean", "F-Mean", "F-seen-Mean",
                               "F-unseen-Mean", "V-Mean", "V-seen-Mean", "V-unseen-Mean"]
    for name, value in result.metrics.items():
        assert doc[name] == pytest.approx(value, abs=1e-15)
    assert sorted(os.listdir(csv)) == ["global_results-valid.csv", "per-sequence_results-valid.csv"]
    assert (csv / "per-sequence_results-valid.csv").read_text().splitlines()[0] == "Sequence,J-Mean,F-Mean,V-Mean"


def test_lvos_bad_input(lvos, tmp_path, capsys, monkeypatch):
    res = tmp_path / "res"
    shutil.copytree(lvos["results"], res)
    os.remove(res / "car" / "00000025.png")
    argv = ["vos", "--protocol", "lvos", "--lvos-root", lvos["lvos_root"], "--results", str(res),
            "--unseen-videos", lvos["unseen_videos"], "--metric", "J", "F", "B"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "car frame 00000025 not found" in err
    monkeypatch.chdir(tmp_path)       # no unseen_videos.txt here
    assert main(argv[:-6] + ["--results", lvos["results"]]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unseen_videos.txt not found" in err


def test_demos(tmp_path, capsys):
    assert main(["vos", "--protocol", "mosev2", "--demo", str(tmp_path / "m"), "-q"]) == 0
    assert "Copy-Paste" in capsys.readouterr().out
    assert main(["vos", "--protocol", "lvos", "--demo", str(tmp_path / "l"), "-q"]) == 0
    assert "V-unseen-Mean" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["vos", "--protocol", "lvos", "--demo", str(tmp_path / "x"), "--lvos-root", "y"])
