"""boundary-eval: the demo, the flags, --json-out, and bad input (one line, exit 2)."""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from boundary_api.cli import instance_parser, main
from boundary_api.cli.main import SUBCOMMANDS
from boundary_api.instance.results import COCO_STAT_NAMES
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT, golden_cases

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "examples")


def golden(kind, iou, ratio=None):
    for c in golden_cases("instance_eval.json", kind):
        if c["iou_type"] == iou and (ratio is None or c.get("dilation_ratio") == ratio):
            return c
    raise KeyError((kind, iou, ratio))


def test_demo_without_arguments(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "Mask AP" in out and "Boundary AP" in out
    rows = [line.split() for line in out.splitlines() if line.strip().split()[:1] and
            line.split()[0] in ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl")]
    assert len(rows) == 12
    mask_ap, boundary_ap = float(rows[0][1]), float(rows[0][2])
    assert 0 < boundary_ap < mask_ap < 1


def test_demo_json_out(tmp_path, capsys):
    out = tmp_path / "demo.json"
    assert main(["--json-out", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert doc["settings"]["kind"] == "demo" and doc["settings"]["iou_type"] == "boundary"
    assert list(doc["segm"]) == list(COCO_STAT_NAMES)
    assert doc["AP"] < doc["segm"]["AP"]
    assert set(doc["per_category"]) == {"1", "2", "3"}


@pytest.mark.parametrize("flags", [["--gt", COCO_GT, "--dt", COCO_DT],
                                   ["--gt-json-file", COCO_GT, "--dt-json-file", COCO_DT]])
def test_coco_boundary_json_out(tmp_path, capsys, flags):
    out = tmp_path / "m.json"
    assert main(flags + ["--json-out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.226" in printed
    doc = json.loads(out.read_text())
    case = golden("coco", "boundary", 0.02)
    np.testing.assert_allclose([doc[k] for k in COCO_STAT_NAMES], case["stats"], rtol=0, atol=1e-12)
    gt = json.load(open(COCO_GT))
    assert set(doc["per_category"]) == {str(c["id"]) for c in gt["categories"]}
    assert doc["settings"]["iou_type"] == "boundary" and doc["settings"]["dilation_ratio"] == 0.02
    aps = [v["AP"] for v in doc["per_category"].values() if v["AP"] is not None]
    assert aps and all(0 <= v <= 1 for v in aps)
    assert any(v["AP"] is None for v in doc["per_category"].values())  # categories without ground truth


@pytest.mark.parametrize("iou, ratio", [("segm", None), ("boundary", 0.05), ("boundary", 0.005)])
def test_iou_type_and_ratio_flags(tmp_path, capsys, iou, ratio):
    out = tmp_path / "m.json"
    args = ["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", iou, "--json-out", str(out), "-q"]
    if ratio is not None:
        args += ["--dilation-ratio", str(ratio)]
    assert main(args) == 0
    case = golden("coco", iou, ratio)
    doc = json.loads(out.read_text())
    np.testing.assert_allclose([doc[k] for k in COCO_STAT_NAMES], case["stats"], rtol=0, atol=1e-12)


def test_bbox_threads_and_slow_flags(tmp_path, capsys):
    outs = []
    for extra in ([], ["--threads", "1"], ["--slow"]):
        out = tmp_path / f"m{len(outs)}.json"
        assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "bbox", "--json-out", str(out), "-q"] + extra) == 0
        outs.append({k: v for k, v in json.loads(out.read_text()).items() if k != "settings"})
    assert outs[0] == outs[1] == outs[2]


def test_lvis_is_detected_and_reported(tmp_path, capsys):
    out = tmp_path / "lvis.json"
    assert main(["--gt", LVIS_GT, "--dt", LVIS_DT, "--json-out", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    assert "catIds=  r" in printed and "maxDets=300" in printed
    doc = json.loads(out.read_text())
    case = golden("lvis", "boundary", 0.02)
    assert doc["settings"]["kind"] == "lvis" and doc["settings"]["max_dets"] == 300
    np.testing.assert_allclose([doc[k] for k in case["results"]], list(case["results"].values()),
                               rtol=0, atol=1e-12)
    assert len(doc["per_category"]) == len(json.load(open(LVIS_GT))["categories"])


def test_lvis_max_dets(tmp_path, capsys):
    out = tmp_path / "lvis.json"
    assert main(["--gt", LVIS_GT, "--dt", LVIS_DT, "--lvis", "--max-dets", "10", "--json-out", str(out), "-q"]) == 0
    assert "AR@10" in json.loads(out.read_text())


def _bad_files(tmp_path):
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{oops")
    res = json.load(open(COCO_DT))
    not_list = tmp_path / "dict.json"
    not_list.write_text(json.dumps({"results": res}))
    unknown_img = tmp_path / "img.json"
    unknown_img.write_text(json.dumps([dict(res[0], image_id=424242)] + res[1:]))
    wrong_size = tmp_path / "size.json"
    r = [dict(x) for x in res]
    r[1] = dict(r[1], segmentation=dict(r[1]["segmentation"], size=[1, 1]))
    wrong_size.write_text(json.dumps(r))
    no_score = tmp_path / "score.json"
    no_score.write_text(json.dumps([{k: v for k, v in x.items() if k != "score"} for x in res]))
    contiguous = tmp_path / "cats.json"
    contiguous.write_text(json.dumps([dict(x, category_id=x["category_id"] + 100) for x in res]))
    not_coco = tmp_path / "notcoco.json"
    not_coco.write_text(json.dumps({"foo": 1}))
    return [
        (["--gt", str(tmp_path / "missing.json"), "--dt", COCO_DT], "ground truth file not found"),
        (["--gt", COCO_GT, "--dt", str(bad_json)], "results file is not valid JSON"),
        (["--gt", str(bad_json), "--dt", COCO_DT], "ground truth file is not valid JSON"),
        (["--gt", str(not_coco), "--dt", COCO_DT], "not a COCO ground truth"),
        (["--gt", COCO_GT, "--dt", str(not_list)], "results must be a list"),
        (["--gt", COCO_GT, "--dt", str(unknown_img)], "image ids not in the ground truth: 424242"),
        (["--gt", COCO_GT, "--dt", str(wrong_size)], r"result #1 (image"),
        (["--gt", COCO_GT, "--dt", str(no_score)], "has no 'score'"),
        (["--gt", COCO_GT, "--dt", str(contiguous)], "category ids that"),
        (["--gt", COCO_GT, "--dt", COCO_DT, "--json-out", COCO_DT], "would be overwritten"),
        (["--gt", COCO_GT, "--dt", COCO_DT, "--json-out", str(tmp_path / "no" / "dir.json")], "does not exist"),
        (["--gt", COCO_GT], "--gt and --dt are needed together"),
        (["--gt", COCO_GT, "--dt", COCO_DT, "--dilation-ratio", "-0.5"],
         "argument --dilation-ratio: must be a finite number >= 0"),
        (["--gt", COCO_GT, "--dt", COCO_DT, "--dilation-ratio", "nan"],
         "argument --dilation-ratio: must be a finite number >= 0"),
        (["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "mask"], "invalid choice"),
        (["--gt", COCO_GT, "--dt", COCO_DT, "--threads", "0"], "must be >= 1"),
    ]


def test_bad_input_gives_one_line_and_exit_2(tmp_path, capsys):
    before = {p: open(p, "rb").read() for p in (COCO_GT, COCO_DT)}
    for args, message in _bad_files(tmp_path):
        with pytest.raises(SystemExit) if any(a in args for a in ("--dilation-ratio", "--iou-type", "--threads"))\
                or args == ["--gt", COCO_GT] else _no_raise():
            code = main(args)
            assert code == 2, args
        err = capsys.readouterr().err
        assert message in err, (args, err)
        assert "Traceback" not in err
        if "usage:" not in err:
            assert err.count("\n") == 1, err
            assert err.startswith("boundary-eval: error: ")
    assert {p: open(p, "rb").read() for p in (COCO_GT, COCO_DT)} == before


class _no_raise:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_real_process_bad_input_has_no_traceback(tmp_path):
    # run outside the checkout so that the installed package is the one imported
    proc = subprocess.run([sys.executable, "-m", "boundary_api.cli", "--gt", str(tmp_path / "x.json"),
                           "--dt", COCO_DT], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"boundary-eval: error: ground truth file not found: {tmp_path / 'x.json'}"
    assert proc.stdout == ""


def test_help_explains_every_flag(capsys):
    parser = instance_parser()
    text = parser.format_help()
    for action in parser._actions:
        for opt in action.option_strings:
            assert opt in text
        assert action.help, action.option_strings
    assert "panoptic" in text
    with pytest.raises(SystemExit) as e:
        main(["panoptic", "--help"])
    assert e.value.code == 0
    assert "--pred-folder" in capsys.readouterr().out


@pytest.mark.parametrize("words", [[]] + [[sub] for sub in SUBCOMMANDS], ids=lambda w: w[0] if w else "main")
def test_help_wraps_to_the_terminal(words, monkeypatch, capsys):
    """Every --help fits the terminal's width (COLUMNS), as the manual's command-line page
    shows it at 100 columns (docs/_ext/clihelp.py); a description laid out by hand once
    ran to 197."""
    monkeypatch.setenv("COLUMNS", "100")
    with pytest.raises(SystemExit) as e:
        main(words + ["--help"])
    assert e.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) > 5
    assert [line for line in lines if len(line) > 100] == []


def test_example_script_and_console_script(tmp_path):
    out = tmp_path / "m.json"
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, "coco_eval.py"), "--gt-json-file", COCO_GT,
                           "--dt-json-file", COCO_DT, "--iou-type", "segm", "--json-out", str(out)],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    np.testing.assert_allclose([doc[k] for k in COCO_STAT_NAMES], golden("coco", "segm")["stats"],
                               rtol=0, atol=1e-12)
    exe = shutil.which("boundary-eval")
    assert exe is not None, "the boundary-eval console script is not installed"
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and "--dilation-ratio" in proc.stdout
