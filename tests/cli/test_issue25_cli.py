"""Issue 25, "no silent wrong answer", on the command line: every case gives the
right number or a one-line refusal (exit 2, no traceback, no stray file)."""
import contextlib
import io
import json
import os

import numpy as np
import pytest

from boundary_api.cli import main
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT, child_env


def _doc(path):
    with open(path) as f:
        return json.load(f)


def _jsonl(path, src):
    with open(src) as f:
        dets = json.load(f)
    with open(path, "w") as f:
        for d in dets:
            f.write(json.dumps(d) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def coco_300():
    """COCOeval at maxDets [1, 10, 300]: the AP every line of the table must show."""
    from boundary_api.coco.dataset import COCO
    from boundary_api.coco.cocoeval import COCOeval

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(COCO_DT), iouType="boundary")
        ev.params.maxDets = [1, 10, 300]
        ev.evaluate()
        ev.accumulate()
    precision = ev.eval["precision"][:, :, :, 0, -1]
    return float(np.mean(precision[precision > -1]))


# ----------------------------------------------------------------- item 2: --max-dets
@pytest.mark.parametrize("streaming", [False, True], ids=["in_memory", "streaming"])
def test_max_dets_300_reports_ap_at_300(tmp_path, capsys, coco_300, streaming):
    out = str(tmp_path / "m.json")
    dt = _jsonl(tmp_path / "r.jsonl", COCO_DT) if streaming else COCO_DT
    assert main(["--gt", COCO_GT, "--dt", dt, "--max-dets", "300", "-q", "--json-out", out]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "COCO Boundary AP (dilation ratio 0.02), up to 300 detections per image:"
    assert lines[1] == (" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=300 ] = "
                        f"{coco_300:0.3f}")
    assert "-1.000" not in "\n".join(lines)
    doc = _doc(out)
    assert doc["AP"] == coco_300 and doc["settings"]["max_dets"] == 300
    assert "AR300" in doc


def test_default_max_dets_table_is_pycocotools(tmp_path, capsys):
    """With maxDets [1, 10, 100] the table is pycocotools' summarize() line for line."""
    from boundary_api.coco.dataset import COCO
    from boundary_api.coco.cocoeval import COCOeval

    out = str(tmp_path / "m.json")
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "segm", "-q", "--json-out", out]) == 0
    printed = capsys.readouterr().out.splitlines()
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(COCO_DT), iouType="segm")
        ev.evaluate()
        ev.accumulate()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ev.summarize()
    assert printed[1:] == buf.getvalue().splitlines()
    doc = _doc(out)
    assert [doc[k] for k in ("AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs",
                             "ARm", "ARl")] == [float(v) for v in ev.stats]


def test_demo_max_dets_300_has_an_ap(tmp_path, capsys):
    out = str(tmp_path / "m.json")
    assert main(["--max-dets", "300", "-q", "--json-out", out]) == 0
    doc = _doc(out)
    assert doc["AP"] is not None and doc["segm"]["AP"] is not None
    assert "-1.000" not in capsys.readouterr().out


def _run(args, stdin=None, env=None, shell=False):
    """boundary-eval in a subprocess (bash, for process substitution, when ``shell``)."""
    import subprocess
    import sys

    cmd = f"{sys.executable} -m boundary_api.cli " + args if shell else [sys.executable, "-m", "boundary_api.cli",
                                                                        *args]
    # the boundary_api this process imported, not another copy installed elsewhere
    env = child_env(env)
    return subprocess.run(["bash", "-c", cmd] if shell else cmd, input=stdin, capture_output=True,
                          env=env, timeout=300)


def _one_line_error(proc):
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("boundary-eval: error: ") and "Traceback" not in err
    return err


# -------------------------------------------------- item 3: every file of a --dt folder
def _split_folder(folder, src):
    """``src`` split into a .json, a .json.gz, a .jsonl.gz and a sub-folder's .jsonl."""
    import gzip

    with open(src) as f:
        dets = json.load(f)
    n = len(dets) // 4
    os.makedirs(folder / "sub")
    with open(folder / "a.json", "w") as f:
        json.dump(dets[:n], f)
    with gzip.open(folder / "b.json.gz", "wt") as f:
        json.dump(dets[n:2 * n], f)
    with gzip.open(folder / "c.jsonl.gz", "wt") as f:
        f.write("\n".join(json.dumps(d) for d in dets[2 * n:3 * n]))
    with open(folder / "sub" / "d.jsonl", "w") as f:
        f.write("\n".join(json.dumps(d) for d in dets[3 * n:]))
    return str(folder)


def test_dt_folder_reads_gz_files_and_sub_folders(tmp_path, capsys):
    ref, got = str(tmp_path / "ref.json"), str(tmp_path / "got.json")
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "-q", "--json-out", ref]) == 0
    folder = _split_folder(tmp_path / "res", COCO_DT)
    assert main(["--gt", COCO_GT, "--dt", folder, "-q", "--json-out", got]) == 0
    ref, got = _doc(ref), _doc(got)
    assert got["AP"] == ref["AP"] and got["per_category"] == ref["per_category"]


@pytest.mark.parametrize("name", ["README.txt", "results.json.bak", "sub/x.csv"])
def test_dt_folder_with_a_file_it_cannot_read_is_refused(tmp_path, capsys, name):
    folder = _split_folder(tmp_path / "res", COCO_DT)
    (tmp_path / "res" / name).write_text("x")
    out = tmp_path / "m.json"
    assert main(["--gt", COCO_GT, "--dt", folder, "-q", "--json-out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and os.path.join(folder, name) in err and "not a results file" in err
    assert not out.exists() and os.listdir(tmp_path) == ["res"]


# ----------------------------------------------------------- item 4: incomplete manifest
@pytest.fixture(scope="module")
def manifests(tmp_path_factory):
    """A complete manifest, one with a shard entry deleted, and their pre-'num_shards' forms."""
    from boundary_api.scale.streaming import shard_dataset

    folder = tmp_path_factory.mktemp("shards")
    with contextlib.redirect_stdout(io.StringIO()):
        path = shard_dataset(COCO_GT, folder, 30, results=COCO_DT)
    doc = _doc(path)
    out = {"whole": path}

    def write(name, d):
        out[name] = str(folder / f"{name}.json")
        with open(out[name], "w") as f:
            json.dump(d, f)

    write("missing", dict(doc, shards=doc["shards"][:1] + doc["shards"][2:]))
    old = {k: v for k, v in doc.items() if k not in ("num_shards", "version")}
    old["shards"] = [{k: v for k, v in s.items() if k != "index"} for s in doc["shards"]]
    write("old", old)
    write("old_missing", dict(old, shards=old["shards"][:-1]))
    write("bare", {"shards": old["shards"]})
    return out


@pytest.mark.slow
def test_manifest_with_a_shard_deleted_is_refused_on_the_command_line(manifests, tmp_path, capsys):
    out = tmp_path / "m.json"
    for name in ("missing", "old_missing", "bare"):
        assert main(["--manifest", manifests[name], "--workers", "1", "-q", "--json-out", str(out)]) == 2, name
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "incomplete shard manifest" in err and "--allow-partial" in err
        assert not out.exists()
    # asked for: the shards listed, with one warning line
    assert main(["--manifest", manifests["missing"], "--workers", "1", "-q", "--allow-partial",
                 "--json-out", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("boundary-eval: warning: ") and "3 of its 4 shards" in err
    doc = _doc(out)
    assert doc["AP"] is not None and doc["settings"]["num_images"] == 70 and doc["settings"]["allow_partial"]
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--allow-partial", "-q"]) == 2
    assert "--allow-partial applies to --manifest only" in capsys.readouterr().err


# ------------------------------------------------------- item 13: pipes as input files
def test_pipes_and_process_substitution(tmp_path):
    import gzip

    gz = tmp_path / "gt.json.gz"
    with open(COCO_GT, "rb") as f:
        gz.write_bytes(gzip.compress(f.read()))
    ref = tmp_path / "ref.json"
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "-q", "--json-out", str(ref)]) == 0
    out = tmp_path / "m.json"
    with open(COCO_DT, "rb") as f:
        proc = _run(f"--gt <(zcat {gz}) --dt /dev/stdin -q --json-out {out}", stdin=f.read(), shell=True)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert _doc(out)["AP"] == _doc(ref)["AP"]
    assert _doc(out)["settings"]["inputs"] == {"--gt": "/dev/fd/63", "--dt": "/dev/stdin"}
    # JSON Lines through a pipe: streamed (its content says so), gzip or not
    jl = _jsonl(tmp_path / "r.jsonl", COCO_DT)
    for source in (f"<(cat {jl})", f"<(gzip -c {jl})"):
        proc = _run(f"--gt <(cat {COCO_GT}) --dt {source} -q --json-out {out}", shell=True)
        assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
        assert _doc(out)["AP"] == _doc(ref)["AP"]
    # a bad pipe is named as the user named it
    proc = _run("--gt <(echo '{') --dt /dev/stdin -q", stdin=b"[]", shell=True)
    err = _one_line_error(proc)
    assert "/dev/fd/63" in err and "boundary_api_input_" not in err


@pytest.mark.slow
def test_lvis_results_from_a_pipe(tmp_path):
    ref, out = tmp_path / "ref.json", tmp_path / "m.json"
    assert main(["--gt", LVIS_GT, "--dt", LVIS_DT, "-q", "--json-out", str(ref)]) == 0
    proc = _run(f"--gt <(cat {LVIS_GT}) --dt <(cat {LVIS_DT}) -q --json-out {out}", shell=True)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert _doc(out)["AP"] == _doc(ref)["AP"] and _doc(out)["APr"] == _doc(ref)["APr"]


def test_pipe_copies_leave_nothing_behind(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    with open(COCO_DT, "rb") as f:
        proc = _run(["--gt", COCO_GT, "--dt", "/dev/stdin", "--iou-type", "bbox", "-q"], stdin=f.read(), env=env)
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path) == []


def test_manifest_from_a_pipe_with_relative_paths_is_refused(manifests):
    proc = _run(f"--manifest <(cat {manifests['whole']}) --workers 1 -q", shell=True)
    assert "a pipe does not have" in _one_line_error(proc)


# ----------------------------------------------------- item 14: Dask quiet on stderr
@pytest.mark.slow
def test_workers_write_nothing_on_stderr_with_q_and_one_progress_line_without(manifests, tmp_path):
    proc = _run(["--manifest", manifests["whole"], "--workers", "2", "-q"])
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    assert proc.stdout.decode().splitlines()[0] == \
        "COCO Boundary AP (dilation ratio 0.02), up to 100 detections per image:"
    proc = _run(["--gt", COCO_GT, "--dt", COCO_DT, "--workers", "2", "--images-per-shard", "40"])
    assert proc.returncode == 0
    lines = proc.stderr.decode().splitlines()
    assert lines == ["boundary-eval: [" + "#" * 30 + "] 3/3 shards"], lines


# ------------------------------------------------ item 12: SIGTERM / SIGINT clean up
def _default_sigint():
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _signal_when(tmp_path, argv, prefix, signum):
    """Run boundary-eval with TMPDIR=tmp_path/tmp, send ``signum`` once a
    temporary folder named ``prefix*`` is there; (exit status, stderr, what is
    left in the temporary folder).

    The process is stopped (SIGSTOP) as soon as the folder is seen, and the
    signal is sent only if the folder is still there then, so that it lands
    while the folder exists: a run that got past it in between (a busy
    machine can delay this process for longer than the run's last steps take)
    is let finish and started again, up to five times.  The child starts with
    SIGINT at its default, as under a terminal: a command run in the
    background of a non-interactive shell (``cmd &``, as a CI script may run
    this suite) inherits SIGINT ignored, and Python then leaves it ignored."""
    import signal
    import subprocess
    import sys
    import time

    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp))
    before = set(os.listdir(tmp_path))
    for _ in range(5):
        proc = subprocess.Popen([sys.executable, "-m", "boundary_api.cli", *argv], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                preexec_fn=_default_sigint)
        try:
            deadline = time.time() + 120
            while not any(n.startswith(prefix) for n in os.listdir(tmp)):
                assert proc.poll() is None and time.time() < deadline, "finished before the signal could be sent"
                time.sleep(0.01)
            proc.send_signal(signal.SIGSTOP)
            there = any(n.startswith(prefix) for n in os.listdir(tmp))
            if there:
                proc.send_signal(signum)
            proc.send_signal(signal.SIGCONT)
            _, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        if there:
            return proc.returncode, err.decode(), sorted(os.listdir(tmp))
        for name in set(os.listdir(tmp_path)) - before:  # (what the finished run wrote)
            os.remove(tmp_path / name)
    raise AssertionError("five runs got past their temporary folder before they could be stopped")


@pytest.mark.slow
@pytest.mark.parametrize("signame, status, word", [("SIGTERM", 143, "terminated"), ("SIGINT", 130, "interrupted")])
def test_signal_during_streaming_leaves_no_chunk_folder(tmp_path, signame, status, word):
    import signal

    jl = _jsonl(tmp_path / "r.jsonl", COCO_DT)
    out = tmp_path / "m.json"
    rc, err, left = _signal_when(tmp_path, ["--gt", COCO_GT, "--dt", jl, "--chunk-images", "1", "-q",
                                            "--json-out", str(out)], "boundary_api_chunks_", getattr(signal, signame))
    assert (rc, err, left) == (status, f"boundary-eval: {word}\n", [])
    assert not out.exists() and sorted(os.listdir(tmp_path)) == ["r.jsonl", "tmp"]


@pytest.mark.slow
def test_sigterm_during_cluster_evaluation_leaves_nothing(tmp_path):
    import signal

    rc, err, left = _signal_when(tmp_path, ["--gt", COCO_GT, "--dt", COCO_DT, "--workers", "2",
                                            "--images-per-shard", "5", "-q"], "boundary_api_dask_", signal.SIGTERM)
    assert (rc, err, left) == (143, "boundary-eval: terminated\n", [])


@pytest.mark.slow
def test_cluster_evaluation_leaves_no_scratch_space(tmp_path):
    env = dict(os.environ, TMPDIR=str(tmp_path))
    proc = _run(["--gt", COCO_GT, "--dt", COCO_DT, "--workers", "1", "-q"], env=env)
    assert proc.returncode == 0 and proc.stderr == b""
    assert os.listdir(tmp_path) == []


# ----------------------------------------------------- item 7: --dilation-ratio 0
@pytest.mark.parametrize("argv", [
    ["--gt", COCO_GT, "--dt", COCO_DT],
    ["--gt", COCO_GT, "--dt", COCO_DT, "--chunk-images", "10"],
    ["panoptic", "--gt-json", "g.json", "--pred-json", "p.json"],
    ["cityscapes", "--gt-dir", "g", "--result-dir", "r"],
    ["semantic", "--gt-dir", "g", "--pred-dir", "p", "--num-classes", "2"],
    ["analyze", "--gt", COCO_GT, "--dt", COCO_DT],
    ["measures", "--help-not"],
])
def test_dilation_ratio_0_is_refused_everywhere(tmp_path, capsys, argv):
    if argv[0] == "measures":
        argv = ["measures", str(tmp_path / "a.png"), str(tmp_path / "b.png")]
    out = tmp_path / "m.json"
    with pytest.raises(SystemExit) as exit_:
        main(argv + ["--dilation-ratio", "0", "--json-out", str(out)])
    assert exit_.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "argument --dilation-ratio" in last
    assert last.endswith(": must be > 0: 0 does not give an empty boundary but the "
                         "thinnest one, d = 1 pixel on every image; give the fraction of the image diagonal "
                         "you mean (e.g. 0.001)")
    assert not out.exists()


# ------------------------------- items 15 and 16: -q prints the table, which names the IoU type
CITYSCAPES = os.path.join(os.path.dirname(COCO_GT), "..", "cityscapes", "visible")
PANOPTIC = os.path.join(os.path.dirname(COCO_GT), "..", "panoptic")


def _semantic_folders(tmp_path):
    from PIL import Image

    for sub in ("gt", "pred"):
        os.makedirs(tmp_path / sub)
    g = np.zeros((24, 36), np.uint8)
    g[4:20, 6:30] = 1
    Image.fromarray(g).save(tmp_path / "gt" / "a.png")
    Image.fromarray(np.roll(g, 2, axis=1)).save(tmp_path / "pred" / "a.png")
    return ["--gt-dir", str(tmp_path / "gt"), "--pred-dir", str(tmp_path / "pred"), "--num-classes", "2"]


@pytest.mark.parametrize("case, first", [
    ("coco boundary", "COCO Boundary AP (dilation ratio 0.02), up to 100 detections per image:"),
    ("coco segm", "COCO Mask AP, up to 100 detections per image:"),
    ("coco bbox", "COCO Box AP, up to 100 detections per image:"),
    ("lvis segm", "LVIS Mask AP, up to 300 detections per image:"),
    ("streaming segm", "COCO Mask AP, up to 100 detections per image:"),
    ("streaming boundary", "COCO Boundary AP (dilation ratio 0.01), up to 100 detections per image:"),
    ("panoptic boundary", "Boundary PQ (dilation ratio 0.02), SQ and RQ:"),
    ("panoptic segm", "PQ (segm: mask IoU), SQ and RQ:"),
    ("cityscapes boundary", "Cityscapes Boundary AP (dilation ratio 0.005) over 12 images:"),
    ("cityscapes segm", "Cityscapes Mask AP (segm, cityscapesScripts' AP) over 12 images:"),
    ("semantic", "Semantic segmentation: IoU, Boundary IoU (BIoU, dilation ratio 0.02) and accuracy per class, "
                 "in %:"),
    ("analyze segm", "TIDE AP (IoU 0.5; Mask AP): "),
    ("analyze boundary", "TIDE AP (IoU 0.5; Boundary AP, dilation ratio 0.02): "),
    ("demo", "  metric     Mask AP   Boundary AP"),
])
def test_quiet_prints_the_table_and_it_names_the_iou_type(tmp_path, capsys, case, first):
    kind, _, iou = case.partition(" ")
    argv = {
        "coco": ["--gt", COCO_GT, "--dt", COCO_DT],
        "lvis": ["--gt", LVIS_GT, "--dt", LVIS_DT],
        "streaming": ["--gt", COCO_GT, "--dt", COCO_DT, "--chunk-images", "40"]
        + (["--dilation-ratio", "0.01"] if iou == "boundary" else []),
        "panoptic": ["panoptic", "--gt-json", os.path.join(PANOPTIC, "panoptic_examples.json"),
                     "--pred-json", os.path.join(PANOPTIC, "pred_shift3.json")],
        "cityscapes": ["cityscapes", "--gt-dir", os.path.join(CITYSCAPES, "gtFine", "val"),
                       "--result-dir", os.path.join(CITYSCAPES, "results")],
        "semantic": ["semantic"] + _semantic_folders(tmp_path) if kind == "semantic" else [],
        "analyze": ["analyze", "--gt", COCO_GT, "--dt", COCO_DT],
        "demo": [],
    }[kind]
    if iou:
        argv += ["--iou-type", iou]
    assert main(argv + ["-q"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines and lines[0].startswith(first), lines[:2]
    assert len(lines) >= 4


def test_panoptic_json_from_pipes(tmp_path):
    gt, pred = os.path.join(PANOPTIC, "panoptic_examples.json"), os.path.join(PANOPTIC, "pred_shift3.json")
    ref, out = tmp_path / "ref.json", tmp_path / "m.json"
    assert main(["panoptic", "--gt-json", gt, "--pred-json", pred, "-q", "--json-out", str(ref)]) == 0
    folders = (f"--gt-folder {PANOPTIC}/panoptic_examples --pred-folder {PANOPTIC}/pred_shift3")
    proc = _run(f"panoptic --gt-json <(cat {gt}) --pred-json <(gzip -c {pred}) {folders} -q --json-out {out}",
                shell=True)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert {k: v for k, v in _doc(out).items() if k != "settings"} == \
        {k: v for k, v in _doc(ref).items() if k != "settings"}
    # without its folder, a piped JSON has no folder next to it
    proc = _run(f"panoptic --gt-json <(cat {gt}) --pred-json {pred} -q", shell=True)
    assert "is a pipe, so its PNG folder cannot be found next to it: give gt_folder (--gt-folder)" \
        in _one_line_error(proc)


@pytest.mark.parametrize("names", ["a\nb\n", '["a", "b"]'], ids=["text", "json"])
def test_semantic_class_names_from_a_pipe(tmp_path, names):
    argv = " ".join(_semantic_folders(tmp_path))
    proc = _run(f"semantic {argv} --class-names /dev/stdin -q", stdin=names.encode(), shell=True)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr
    assert proc.stdout.decode().splitlines()[2].split()[:2] == ["0", "a"]
