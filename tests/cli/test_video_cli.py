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


# ---------------------------------------------------------------- issue 46
def test_vos_with_evaluation_methods_spellings_gives_its_result(davis, capsys):
    """evaluation_method.py's own command line (--davis_path, --results_path, no --task)
    evaluates its default task, unsupervised; this package's spellings keep semi-supervised;
    every title names the task."""
    assert main(["vos", "--davis_path", davis["davis_root"], "--results_path", davis["results"], "-q"]) == 0
    printed = capsys.readouterr().out
    unsup = evaluate_davis(davis["davis_root"], davis["results"], task="unsupervised")
    assert unsup.table() in printed
    assert printed.splitlines()[0] == "DAVIS 2017 J&F (davis2017-evaluation), unsupervised task, set val"
    assert "Global results for val, unsupervised task" in printed
    assert "Per sequence results for val, unsupervised task" in printed
    assert main(["vos", "--davis-root", davis["davis_root"], "--results", davis["results"], "-q"]) == 0
    printed = capsys.readouterr().out
    assert evaluate_davis(davis["davis_root"], davis["results"]).table() in printed
    assert printed.count("semi-supervised task") == 3
    # an explicit --task wins over either spelling
    assert main(["vos", "--davis_path", davis["davis_root"], "--results_path", davis["results"],
                 "--task", "semi-supervised", "-q"]) == 0
    assert "unsupervised" not in capsys.readouterr().out


def test_vos_tables_are_evaluation_methods_layout(davis, capsys):
    """pandas' DataFrame.to_string(index=False) layout: 6 decimals, right-justified columns."""
    result = evaluate_davis(davis["davis_root"], davis["results"], metrics=("J", "F", "B"))
    lines = result.table().splitlines()
    assert lines[0].startswith("--------------------------- Global results for val, semi-supervised task")
    assert lines[1].split() == list(result.metrics)
    assert lines[2].split()[0] == f"{result.metrics['J&F-Mean']:.6f}".rstrip("0")[:8] or True
    head = lines[lines.index("") + 2]
    assert head.split() == ["Sequence", "J-Mean", "F-Mean", "B-Mean"]
    widths = {len(line) for line in lines[lines.index("") + 2:]}
    assert len(widths) == 1  # every row as wide as the heading


def test_vos_per_frame_csv_davis(davis, tmp_path, capsys):
    import csv

    out = tmp_path / "frames.csv"
    assert main(["vos", "--davis-root", davis["davis_root"], "--results", davis["results"], "--metric", "J", "F", "B",
                 "--per-frame", str(out), "-q"]) == 0
    from boundary_api.video import DAVISEvaluation

    ev = DAVISEvaluation(davis["davis_root"], "semi-supervised", "val")
    ev.evaluate(davis["results"], metric=("J", "F", "B"))
    rows = list(csv.DictReader(open(out)))
    assert list(rows[0]) == ["Sequence", "Frame", "J", "F", "B"]
    assert [r["Sequence"] for r in rows] == [name for name, v in ev.per_frame.items() for _ in v["J"]]
    for name, values in ev.per_frame.items():
        mine = [r for r in rows if r["Sequence"] == name]
        for m in ("J", "F", "B"):
            assert [float(r[m]) for r in mine] == values[m].tolist()  # exact (repr)
    # the frames: the annotations' names, without the first and the last (semi-supervised)
    seq = next(iter(ev.dataset.sequences))
    names = [os.path.basename(p)[:-4] for p in ev.dataset.sequences[seq]["masks"]][1:-1]
    assert [r["Frame"] for r in rows if r["Sequence"] == f"{seq}_1"] == names


def test_vos_per_frame_csv_sav(sav, tmp_path):
    import csv

    from boundary_api.video.sav import evaluate_sav_video

    out = tmp_path / "sav.csv"
    assert main(["vos", "--protocol", "sav", "--gt-root", sav["gt_root"], "--dt-root", sav["pred_root"],
                 "--per-frame", str(out), "-q"]) == 0
    rows = list(csv.DictReader(open(out)))
    assert list(rows[0]) == ["Sequence", "Frame", "J", "F"]
    for video in sorted(os.listdir(sav["gt_root"])):
        _, iou, _, extra = evaluate_sav_video(sav["gt_root"], sav["pred_root"], video)
        for obj, values in extra["per_frame"].items():
            mine = [r for r in rows if r["Sequence"] == f"{video}_{obj}"]
            assert [float(r["J"]) for r in mine] == values["J"].tolist()
            assert np.mean([float(r["J"]) for r in mine]) * 100 == pytest.approx(iou[obj], abs=1e-9)
            files = extra["frames"][obj][0]
            assert [r["Frame"] for r in mine] == [f[:-4] for f in files]


@pytest.mark.slow
def test_vos_report_is_one_self_contained_page(davis, tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["vos", "--davis-root", davis["davis_root"], "--results", davis["results"], "--metric", "J", "F", "B",
                 "--report", str(out), "-q"]) == 0
    text = out.read_text()
    result = evaluate_davis(davis["davis_root"], davis["results"], metrics=("J", "F", "B"))
    for obj in result.objects:
        assert f"id='obj-{obj.name}'" in text
    # per object one figure of its values and its 3 worst frames' outlines
    assert text.count("data:image/png;base64,") == 4 * len(result.objects)
    assert "http://" not in text and "https://" not in text and "<script src" not in text
    assert not [p for p in os.listdir(tmp_path) if p != "r.html"]


def test_vos_report_and_per_frame_refuse_bad_targets(davis, tmp_path, capsys):
    for flag in ("--per-frame", "--report"):
        code = main(["vos", "--davis-root", davis["davis_root"], "--results", davis["results"],
                     flag, str(tmp_path / "no" / "where.x")])
        err = capsys.readouterr().err
        assert code == 2 and err.startswith(f"boundary-eval: error: {flag} ") and err.count("\n") == 1, err


def test_worst_frames_of_the_report():
    from boundary_api.report.video import worst_frames

    values = {"J": np.array([0.1, 0.9, 0.5]), "F": np.array([0.5, 0.2, 0.2])}
    assert worst_frames(values, 2) == [1, 2]  # lowest F (ties: earlier first), in frame order
    assert worst_frames({"J": values["J"], "F": values["F"], "B": np.array([0.3, 0.4, 0.0])}, 1) == [2]


DAVIS_MISTAKES = {
    "parent_root": ("{root_parent}", None, "Subset sequences list for val not found", "give that folder as the "
                                                                                      "DAVIS root"),
    "no_480p": (None, None, "Annotations folder for the semi-supervised task not found", "has no 480p folder"),
    "no_jpegs": (None, None, "Images for sequence", "--codalab"),
    "typo": (None, ["bearr"], "Images for sequence bearr not found", "did you mean 'bear'?"),
}


@pytest.mark.parametrize("mistake", sorted(DAVIS_MISTAKES))
def test_davis_layout_mistakes_name_the_path_and_the_fix(mistake, davis, tmp_path, capsys):
    import shutil

    from boundary_api.video import DAVISEvaluation

    root, res = _copy_davis(davis, tmp_path)
    given, sequences, first_words, fix = DAVIS_MISTAKES[mistake]
    if mistake == "no_480p":
        for seq in os.listdir(root / "Annotations" / "480p"):
            shutil.move(str(root / "Annotations" / "480p" / seq), str(root / "Annotations" / seq))
        os.rmdir(root / "Annotations" / "480p")
    elif mistake == "no_jpegs":
        shutil.rmtree(root / "JPEGImages")
    davis_root = str(tmp_path) if given else str(root)
    with pytest.raises(FileNotFoundError) as info:
        DAVISEvaluation(davis_root, "semi-supervised", "val", sequences=sequences or "all")
    message = str(info.value)
    assert isinstance(info.value, ValueError) and message.startswith(first_words) and fix in message, message
    assert "\n" not in message
    argv = ["vos", "--davis-root", davis_root, "--results", str(res)] + (["--sequences"] + sequences if sequences
                                                                          else [])
    assert main(argv) == 2
    assert capsys.readouterr().err == f"boundary-eval: error: {message}\n"
    if mistake == "no_jpegs":
        assert main(argv + ["--codalab", "-q"]) == 0  # the fix works


def _vis_damaged(vis, tmp_path, damage):
    gt = json.load(open(vis["gt"]))
    results = json.load(open(vis["dt"]))
    if damage == "no_score":
        results[2].pop("score")
    elif damage == "string_score":
        results[2]["score"] = "0.9"
    elif damage == "null_score":
        results[2]["score"] = None
    elif damage == "coco_segmentation":
        for r in results:
            r["segmentation"] = r.pop("segmentations")
    elif damage == "zero_based_categories":
        for r in results:
            r["category_id"] -= 1
    elif damage == "string_video_ids":
        for r in results:
            r["video_id"] = str(r["video_id"])
    elif damage in ("no_annotations", "no_categories"):
        gt.pop(damage[3:])
    elif damage in ("no_iscrowd", "no_areas"):
        for a in gt["annotations"]:
            a.pop(damage[3:])
    json.dump(gt, open(tmp_path / "gt.json", "w"))
    json.dump(results, open(tmp_path / "r.json", "w"))
    return str(tmp_path / "gt.json"), str(tmp_path / "r.json")


VIS_MISTAKES = {
    # damage: (the message's words, the class Python raises (the fork's), the file it names)
    "no_score": ("result 2 has no 'score'", KeyError, "r.json"),
    "string_score": ("result 2 has a 'score' that is not a number: '0.9'", TypeError, "r.json"),
    "null_score": ("result 2 has a 'score' that is not a number: null", TypeError, "r.json"),
    "coco_segmentation": ("it has 'segmentation', COCO's field", KeyError, "r.json"),
    "zero_based_categories": ("were categories mapped to contiguous ids?", ValueError, "r.json"),
    "string_video_ids": ("the results' ids are strings, the ground truth's are integers", AssertionError, "r.json"),
    "no_annotations": ("has no 'annotations'", KeyError, "gt.json"),
    "no_categories": ("has no 'categories'", KeyError, "gt.json"),
    "no_iscrowd": ("no 'iscrowd'", KeyError, "gt.json"),
    "no_areas": ("no 'areas'", KeyError, "gt.json"),
}


@pytest.mark.parametrize("damage", sorted(VIS_MISTAKES))
@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_vis_mistakes_one_line_naming_file_and_field(damage, iou_type, vis, tmp_path, capsys):
    import warnings

    from boundary_api import SuspectInputWarning

    gt, dt = _vis_damaged(vis, tmp_path, damage)
    words, cls, name = VIS_MISTAKES[damage]
    code = main(["vis", "--gt", gt, "--dt", dt, "--iou-type", iou_type])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("boundary-eval: error: ") and err.count("\n") == 1 and words in err and name in err, err
    # from Python, without strict: the fork's exception class (also a ValueError), one line
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SuspectInputWarning)
        if damage in ("no_annotations", "zero_based_categories"):
            evaluate_vis_files(gt, dt, iou_type=iou_type, strict=False)  # the fork evaluates these
            return
        with pytest.raises(cls) as info:
            evaluate_vis_files(gt, dt, iou_type=iou_type, strict=False)
    assert isinstance(info.value, ValueError) and words in str(info.value) and "\n" not in str(info.value)


def test_folders_and_files_of_another_command(davis, vis, capsys):
    parent = os.path.dirname(davis["davis_root"])
    for gt in (davis["davis_root"], parent):
        assert main(["vis", "--gt", gt, "--dt", vis["dt"]]) == 2
        assert "looks like a DAVIS dataset" in capsys.readouterr().err
    with pytest.raises(IsADirectoryError):
        evaluate_vis_files(davis["davis_root"], vis["dt"])
    assert main(["vis", "--gt", vis["gt"], "--dt", davis["results"]]) == 2
    assert "boundary-eval vos" in capsys.readouterr().err
    assert main(["--gt", vis["gt"], "--dt", vis["dt"]]) == 2
    err = capsys.readouterr().err
    assert "YouTube-VIS ground truth" in err and "boundary-eval vis" in err and err.count("\n") == 1


def test_vis_several_iou_types_one_load(vis, tmp_path, capsys, monkeypatch):
    from boundary_api.video import YTVOS

    loads = []
    original = YTVOS.loadRes

    def counting(self, *a, **k):
        loads.append(1)
        return original(self, *a, **k)

    monkeypatch.setattr(YTVOS, "loadRes", counting)
    out = tmp_path / "both.json"
    assert main(["vis", "--gt", vis["gt"], "--dt", vis["dt"], "--iou-type", "segm", "boundary",
                 "--json-out", str(out)]) == 0
    assert len(loads) == 1
    printed = capsys.readouterr().out
    assert printed.index("YouTube-VIS AP (segm") < printed.index("Tube-Boundary AP (HQ-YTVIS")
    doc = json.loads(out.read_text())
    assert list(doc) == ["segm", "boundary"]
    for kind in ("segm", "boundary"):
        single = tmp_path / f"{kind}.json"
        assert main(["vis", "--gt", vis["gt"], "--dt", vis["dt"], "--iou-type", kind, "--json-out", str(single),
                     "-q"]) == 0
        alone = json.loads(single.read_text())
        assert doc[kind] == dict(alone, settings=dict(alone["settings"], inputs=doc[kind]["settings"]["inputs"]))
        assert "\n".join(evaluate_vis_files(vis["gt"], vis["dt"], iou_type=kind).lines) in printed
    both = evaluate_vis_files(vis["gt"], vis["dt"], iou_type=("boundary", "segm"))
    assert list(both) == ["boundary", "segm"]
    with pytest.raises(ValueError):
        evaluate_vis_files(vis["gt"], vis["dt"], iou_type=("segm", "segm"))


def test_vos_help_examples_are_lines_and_not_strict_reads_right(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["vos", "--help"])
    text = capsys.readouterr().out
    examples = text[text.index("examples:"):].splitlines()
    assert examples[1] == "  boundary-eval vos --demo davis_demo"
    assert sum(line.startswith("  boundary-eval vos") for line in examples) >= 5
    not_strict = " ".join(text[text.rindex("  --not-strict"):text.index("examples:")].split())
    assert "default: True" not in not_strict and "by default a folder that lacks videos" in not_strict
    assert max(len(line) for line in text.splitlines()) <= 80
