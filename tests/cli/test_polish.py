"""Command-line polish and settings that used to be ignored (issue 9, items 8 and 13):
--max-dets for COCO, dilation ratios of 1 or more, --version, -q everywhere, which IoU
type is reported, --help without doubled defaults, empty ground truth, progress bars."""
import contextlib
import fcntl
import io
import json
import logging
import os
import pty
import re
import struct
import subprocess
import sys
import termios

import numpy as np
import pycocotools.coco
import pycocotools.cocoeval
import pytest

import boundary_api
from boundary_api import COCO, COCOeval, LVISEval, pq_compute
from boundary_api.cli import instance_parser, main
from boundary_api.cli import panoptic as panoptic_cli
from boundary_api.cli import semantic as semantic_cli
from conftest import COCO_DT, COCO_GT, DATA, LVIS_DT, LVIS_GT, golden_cases
from test_output_files import console_script

PAN = os.path.join(DATA, "panoptic")
PAN_ARGS = ["panoptic", "--gt-json", os.path.join(PAN, "panoptic_examples.json"),
            "--pred-json", os.path.join(PAN, "pred_down4.json"), "--threads", "1"]


def golden(kind, iou, ratio=None):
    return next(c for c in golden_cases("instance_eval.json", kind)
                if c["iou_type"] == iou and (ratio is None or c.get("dilation_ratio") == ratio))


# --------------------------------------------------------------------------- item 8

@pytest.mark.parametrize("n", [10, 300, 3])
def test_max_dets_applies_to_coco(tmp_path, capsys, n):
    out = tmp_path / "m.json"
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "segm", "--max-dets", str(n),
                 "--json-out", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    # pycocotools' own evaluation with maxDets [1, min(10, N), N]
    with contextlib.redirect_stdout(io.StringIO()):
        gt = pycocotools.coco.COCO(COCO_GT)
        ev = pycocotools.cocoeval.COCOeval(gt, gt.loadRes(COCO_DT), "segm")
        ev.params.maxDets = [1, min(10, n), n]
        ev.evaluate()
        ev.accumulate()
        table = io.StringIO()
        with contextlib.redirect_stdout(table):
            ev.summarize()
    # pycocotools' lines, but the first one at maxDets=N instead of its fixed 100 (-1 when
    # N != 100; issue 25): the mean of the precisions that are not -1 at N
    # (over every maxDets entry equal to N, as pycocotools' other lines read it)
    at_n = [m for m, v in enumerate(ev.params.maxDets) if v == n]
    precision = ev.eval["precision"][:, :, :, 0, :][..., at_n]
    ap_at_n = float(np.mean(precision[precision > -1]))
    theirs = table.getvalue().splitlines()
    ours = printed.splitlines()
    first = f" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets={n:>3d} ] = {ap_at_n:0.3f}"
    assert ours[-12:] == [first] + theirs[1:]
    assert f"| maxDets={n:>3d} ] = " in printed
    doc = json.loads(out.read_text())
    assert doc["settings"]["max_dets"] == n
    names = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", f"AR{min(10, n)}", f"AR{n}", "ARs", "ARm", "ARl"]
    assert doc["AP"] == ap_at_n
    for name, value in list(zip(names, ev.stats))[1:]:
        assert doc[name] == (None if value == -1 else float(value)), name
    if n != 100:
        assert "AR100" not in doc


def test_default_max_dets_is_100_for_coco_and_300_for_lvis(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--json-out", str(out), "-q"]) == 0
    assert "maxDets=100 ]" in capsys.readouterr().out
    assert json.loads(out.read_text())["settings"]["max_dets"] == 100


def test_ratio_of_one_or_more_warns_and_gives_mask_ap(tmp_path, caplog, capsys):
    out = tmp_path / "m.json"
    with caplog.at_level(logging.WARNING):
        assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--dilation-ratio", "2", "--json-out", str(out), "-q"]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["dilation ratio 2 is at least the whole image diagonal: every boundary is the entire "
                        "mask, so this reports mask IoU (the ratio is a fraction: 0.02 means 2%)"]
    doc = json.loads(out.read_text())
    np.testing.assert_allclose([doc[k] for k in list(doc)[2:14]], golden("coco", "segm")["stats"],
                               rtol=0, atol=1e-12)
    # the library warns too, for every evaluator, and only for boundary
    caplog.clear()
    with caplog.at_level(logging.WARNING), contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        dt = gt.loadRes(COCO_DT)
        COCOeval(gt, dt, "segm", dilation_ratio=1.0)
        COCOeval(gt, dt, "boundary", dilation_ratio=0.99)
        COCOeval(gt, dt, "boundary", dilation_ratio=1.0)
        LVISEval(LVIS_GT, LVIS_DT, iou_type="boundary", dilation_ratio=5)
        pq_compute(os.path.join(PAN, "panoptic_examples.json"), os.path.join(PAN, "pred_down4.json"),
                   iou_type="boundary", dilation_ratio=1.5, num_threads=1)
    ratios = [re.match(r"dilation ratio (\S+) is at least", r.getMessage()).group(1)
              for r in caplog.records if "is at least the whole image diagonal" in r.getMessage()]
    assert ratios == ["1", "5", "1.5"]


def test_ratio_warning_in_a_real_process(tmp_path):
    proc = subprocess.run([console_script(), "--gt", COCO_GT, "--dt", COCO_DT, "--dilation-ratio", "2", "-q"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stderr == ("boundary-eval: WARNING: dilation ratio 2 is at least the whole image diagonal: every "
                           "boundary is the entire mask, so this reports mask IoU (the ratio is a fraction: "
                           "0.02 means 2%)\n")


# --------------------------------------------------------------------------- item 13

def test_version(capsys):
    for argv in (["--version"], ["panoptic", "--version"]):
        with pytest.raises(SystemExit) as exc:
            main(argv)
        assert exc.value.code == 0
        assert capsys.readouterr().out == f"boundary-eval (boundary_api) {boundary_api.__version__}\n"


def test_quiet_on_every_subcommand(capsys):
    # COCO: the header and pycocotools' table, nothing else
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "COCO Boundary AP (dilation ratio 0.02), up to 100 detections per image:"
    assert len(lines) == 13 and all(line.startswith(" Average ") for line in lines[1:])
    # LVIS: a header naming the IoU type, then lvis' table
    assert main(["--gt", LVIS_GT, "--dt", LVIS_DT, "-q", "--iou-type", "segm"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "LVIS Mask AP, up to 300 detections per image:"
    assert len(lines) == 14 and all(line.startswith(" Average ") for line in lines[1:])
    # the demo: its table only
    assert main(["-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["metric", "Mask", "AP", "Boundary", "AP"] and len(lines) == 13
    assert main([]) == 0
    assert len(capsys.readouterr().out.splitlines()) > 16
    # panoptic: the titled table only; without -q a closing line
    assert main(PAN_ARGS + ["-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "Boundary PQ (dilation ratio 0.02), SQ and RQ:"
    assert [line.split("|")[0].strip() for line in lines[3:]] == ["All", "Things", "Stuff"]
    assert main(PAN_ARGS + ["--iou-type", "segm"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "PQ (segm: mask IoU), SQ and RQ:" and len(lines) == 7 and lines[-1].startswith("evaluated in ")


def _help_entries(text):
    """Each flag's help entry of a --help text, wrapped lines joined."""
    entries, current = [], None
    for line in text.splitlines():
        if line.startswith("  -"):
            current = [line.strip()]
            entries.append(current)
        elif current is not None and line.startswith("    "):
            current.append(line.strip())
        else:
            current = None
    return [" ".join(e) for e in entries]


@pytest.mark.parametrize("make", [instance_parser, panoptic_cli.parser, semantic_cli.parser],
                         ids=["instances", "panoptic", "semantic"])
def test_help_has_no_doubled_defaults(make):
    parser = make()
    entries = _help_entries(parser.format_help())
    assert len(entries) == len(parser._actions)
    for entry in entries:
        assert entry.count("default") <= 1, entry
        if entry.startswith("--dilation-ratio"):
            assert entry.count("0.02") == 1, entry
        assert "(default: None)" not in entry and "(default: False)" not in entry, entry
    text = " ".join(entries)
    if make is not semantic_cli.parser:  # (semantic has no --iou-type)
        assert "(default: boundary)" in text  # defaults the help does not state are still shown
    assert "default: all cores" in text


def test_empty_ground_truth_warns(tmp_path, caplog, capsys):
    gt = json.load(open(COCO_GT))
    gt["annotations"] = []
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(gt))
    out = tmp_path / "m.json"
    with caplog.at_level(logging.WARNING):
        assert main(["--gt", str(path), "--dt", COCO_DT, "-q", "--json-out", str(out)]) == 0
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"{path}: the ground truth has no annotations: there is nothing to detect and every AP "
                        "will be undefined (-1)"]
    doc = json.loads(out.read_text())
    assert all(doc[k] is None for k in list(doc)[2:14])
    proc = subprocess.run([console_script(), "--gt", str(path), "--dt", COCO_DT, "-q"],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr.count("WARNING") == 1


def _run_on_terminal(code, cwd):
    """Run python code with stderr on a pseudo-terminal; return what it wrote there."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))  # a 120-column terminal
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=slave, cwd=cwd)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    assert proc.wait() == 0
    return b"".join(chunks).decode(errors="replace")


def test_progress_bar_while_converting_masks(tmp_path):
    # the dict path (files outside the columnar schemas) converts masks one by one, with a bar;
    # read as columns, masks are converted natively in a fraction of a second and need none
    code = ("import boundary_api.instance.cache as cache; cache.PROGRESS_FROM = 100\n"
            "import boundary_api.coco.dataset as c\n"
            "c.load_ground_truth_columns = c.load_result_columns = lambda *a, **k: None\n"
            "from boundary_api.cli import main\n"
            f"raise SystemExit(main(['--gt', {COCO_GT!r}, '--dt', {COCO_DT!r}, '-q']))\n")
    shown = _run_on_terminal(code, tmp_path)
    assert "\rmasks:   0%" in shown
    assert "| 0/839 [" in shown and "| 0/734 [" in shown  # ground truth, then results
    # not on a terminal: no bar
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
