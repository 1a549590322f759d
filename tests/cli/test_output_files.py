"""--json-out: refused targets (before anything is evaluated), atomic writing with nothing
left behind, and a closed standard output (``| head -1``) handled like a Unix tool."""
import json
import os
import shutil
import subprocess
import sys

import pytest

from boundary_api.cli import main
from boundary_api.cli.main import EXIT_BROKEN_PIPE
from boundary_api.cli.output import write_json
from boundary_api.instance.results import COCO_STAT_NAMES
from conftest import COCO_DT, COCO_GT, DATA


def console_script():
    exe = shutil.which("boundary-eval") or os.path.join(os.path.dirname(sys.executable), "boundary-eval")
    assert os.path.exists(exe), "the boundary-eval console script is not installed"
    return exe


def leftovers(directory):
    return sorted(f for f in os.listdir(directory) if ".tmp-" in f)


def _one_error_line(capsys):
    captured = capsys.readouterr()
    err = captured.err
    assert err.count("\n") == 1 and err.startswith("boundary-eval: error: "), err
    assert "Traceback" not in err
    return captured.out, err


@pytest.fixture
def panoptic_copy(tmp_path):
    src = os.path.join(DATA, "panoptic")
    dst = tmp_path / "panoptic"
    shutil.copytree(src, dst)
    return dst


def test_json_out_onto_a_ground_truth_png_is_refused(panoptic_copy, capsys):
    gt_json = panoptic_copy / "panoptic_examples.json"
    gt_dir = panoptic_copy / "panoptic_examples"
    png = sorted(gt_dir.iterdir())[0]
    before = png.read_bytes()
    pred_json = next(p for p in panoptic_copy.iterdir() if p.name.startswith("pred_down4") and p.suffix == ".json")
    for folder_flag in (["--gt-folder", str(gt_dir)], []):  # given, and the default folder
        code = main(["panoptic", "--gt-json", str(gt_json), *folder_flag, "--pred-json", str(pred_json),
                     "--json-out", str(png)])
        assert code == 2
        out, err = _one_error_line(capsys)
        assert f"--json-out {png} is inside the folder given to --gt-folder" in err
        assert out == ""  # refused before evaluating: no table
    # the prediction folder and a new file in an input folder are refused too
    code = main(["panoptic", "--gt-json", str(gt_json), "--pred-json", str(pred_json),
                 "--json-out", str(pred_json.with_suffix("") / "new.json")])
    assert code == 2
    assert "inside the folder given to --pred-folder" in _one_error_line(capsys)[1]
    assert png.read_bytes() == before
    assert leftovers(gt_dir) == [] and leftovers(panoptic_copy) == []


@pytest.mark.parametrize("which", ["--gt", "--dt"])
def test_json_out_equal_to_an_input_is_refused(tmp_path, capsys, which):
    gt, dt = tmp_path / "gt.json", tmp_path / "dt.json"
    shutil.copy(COCO_GT, gt)
    shutil.copy(COCO_DT, dt)
    target = gt if which == "--gt" else dt
    before = target.read_bytes()
    # also through another spelling of the same file
    for spelled in (str(target), os.path.join(str(tmp_path), ".", target.name)):
        assert main(["--gt", str(gt), "--dt", str(dt), "--json-out", spelled]) == 2
        out, err = _one_error_line(capsys)
        assert f"--json-out {spelled} is the file given to {which}; it would be overwritten" in err
        assert out == ""
    assert target.read_bytes() == before


def _unwritable_place(tmp_path):
    if os.geteuid() == 0:  # root writes through permissions: use a place no one can write in
        return "/sys/boundary_eval_out.json"
    d = tmp_path / "ro"
    d.mkdir()
    d.chmod(0o555)
    return str(d / "out.json")


def test_bad_json_out_targets_are_refused_up_front(tmp_path, capsys):
    d = tmp_path / "adir"
    d.mkdir()
    real = tmp_path / "real.json"
    real.write_text("{}")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere.json")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    readonly = tmp_path / "readonly.json"
    readonly.write_text("{}")
    readonly.chmod(0o444)
    cases = [
        (str(d), f"--json-out {d}: is a directory"),
        (str(link), f"--json-out {link}: is a symbolic link"),
        (str(dangling), f"--json-out {dangling}: is a symbolic link"),
        (str(fifo), f"--json-out {fifo}: is not a regular file"),
        ("/dev/null", "--json-out /dev/null: is not a regular file"),
        (str(tmp_path / "missing" / "m.json"), "directory does not exist"),
        (_unwritable_place(tmp_path), "cannot write there"),
    ]
    if os.geteuid() != 0:
        cases.append((str(readonly), "the file is read-only"))
    for target, message in cases:
        for argv in (["--gt", COCO_GT, "--dt", COCO_DT], []):  # an evaluation and the demo
            assert main(argv + ["--json-out", target]) == 2, target
            out, err = _one_error_line(capsys)
            assert message in err, (target, err)
            assert out == ""  # nothing evaluated, nothing printed
    assert real.read_text() == "{}" and readonly.read_text() == "{}"
    assert leftovers(tmp_path) == []


def test_failed_evaluation_leaves_no_files(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    res = json.load(open(COCO_DT))
    res[3]["score"] = "high"
    bad.write_text(json.dumps(res))
    out = tmp_path / "m.json"
    assert main(["--gt", COCO_GT, "--dt", str(bad), "--json-out", str(out)]) == 2
    assert "has a score that is not a number: 'high'" in _one_error_line(capsys)[1]
    assert sorted(os.listdir(tmp_path)) == ["bad.json"]


def test_write_json_is_atomic_and_cleans_up(tmp_path):
    out = tmp_path / "m.json"
    out.write_text('{"old": 1}')
    with pytest.raises(ValueError):  # NaN is refused before any file is touched
        write_json(str(out), {"AP": float("nan")})
    with pytest.raises(TypeError):
        write_json(str(out), {"AP": object()})
    assert out.read_text() == '{"old": 1}'
    # the rename fails (the target became a directory): the temporary file goes away
    target = tmp_path / "d.json"
    target.mkdir()
    (target / "x").write_text("")
    with pytest.raises(OSError):
        write_json(str(target), {"AP": 0.5})
    assert leftovers(tmp_path) == []
    write_json(str(out), {"AP": 0.5})
    assert json.loads(out.read_text()) == {"AP": 0.5}
    assert leftovers(tmp_path) == []


def test_closed_stdout_still_writes_json_quietly(tmp_path):
    """The reader of stdout is gone before anything is printed (``| head -0``):
    no message, the JSON is written, exit status 141 as for SIGPIPE."""
    out = tmp_path / "m.json"
    proc = subprocess.Popen([console_script(), "--gt", COCO_GT, "--dt", COCO_DT, "--json-out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait() == EXIT_BROKEN_PIPE == 141
    assert err == ""
    doc = json.loads(out.read_text())
    assert all(doc[k] is not None for k in COCO_STAT_NAMES)
    assert leftovers(tmp_path) == []


@pytest.mark.parametrize("argv", [["--gt", COCO_GT, "--dt", COCO_DT], []], ids=["coco", "demo"])
def test_head_1(tmp_path, argv):
    out = tmp_path / "m.json"
    cmd = " ".join(f"'{a}'" for a in [console_script(), *argv, "--json-out", str(out)])
    env = dict(os.environ, PYTHONUNBUFFERED="1")  # every print reaches the pipe at once
    proc = subprocess.run(["bash", "-c", f"{cmd} 2>err.txt | head -1; echo \"status ${{PIPESTATUS[0]}}\""],
                          capture_output=True, text=True, cwd=tmp_path, env=env)
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 and lines[1] == f"status {EXIT_BROKEN_PIPE}", proc.stdout
    assert lines[0] == ("loading annotations into memory..." if argv else "No --gt/--dt given: evaluating the bundled demo "
                        "(demo_gt.json, demo_results.json): synthetic shapes, blobby low-resolution predictions.")
    assert (tmp_path / "err.txt").read_text() == ""
    assert json.loads(out.read_text())["AP"] > 0
