"""Issue 31: every subcommand reads each of its input files from a pipe (process
substitution ``<(...)``, ``/dev/stdin``, a FIFO) itself, through the library,
once: the numbers are those of the same files given by path, messages name
the path as the user gave it, and no temporary file is left behind (also
after an error).  The command line copies nothing (tests/test_layout.py)."""
import gzip
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

from conftest import COCO_DT, COCO_GT, DATA, child_env

PANOPTIC = os.path.join(DATA, "panoptic")


def _bash(cmd, tmp_path, stdin=None):
    """``boundary-eval CMD`` run by bash (for process substitution), with its
    temporary folder in ``tmp_path/tmp``, which must be empty afterwards."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(exist_ok=True)
    proc = subprocess.run(["bash", "-c", f"{sys.executable} -m boundary_api.cli {cmd}"], input=stdin,
                          capture_output=True, env=_env(TMPDIR=str(tmp)), cwd=str(tmp_path), timeout=600)
    assert os.listdir(tmp) == [], f"left behind: {os.listdir(tmp)}"
    return proc


def _env(**extra):
    return dict(child_env(), **extra)


def _ok(proc):
    assert proc.returncode == 0, proc.stderr.decode()
    return proc


def _one_line_error(proc):
    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert err.count("\n") == 1 and err.startswith("boundary-eval: error: ") and "Traceback" not in err, err
    return err


def _numbers(path):
    """A --json-out document without what names the inputs or measures time."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k not in ("inputs", "seconds", "boundary_api_version")}
        if isinstance(value, list):
            return [strip(v) for v in value]
        return value

    with open(path) as f:
        return strip(json.load(f))


def _jsonl(path, src=COCO_DT):
    with open(src) as f:
        dets = json.load(f)
    with open(path, "w") as f:
        for d in dets:
            f.write(json.dumps(d) + "\n")
    return str(path)


def _second_results(path):
    """Another results file: COCO_DT with every other detection's score halved."""
    with open(COCO_DT) as f:
        dets = json.load(f)
    for d in dets[::2]:
        d["score"] = d["score"] / 2
    with open(path, "w") as f:
        json.dump(dets, f)
    return str(path)


def _masks(tmp_path):
    from PIL import Image
    import pycocotools.mask as mask_utils

    a = np.zeros((40, 50), np.uint8)
    a[5:30, 8:40] = 1
    b = np.roll(a, 3, axis=1)
    Image.fromarray(a * 255).save(tmp_path / "a.png")
    rle = mask_utils.encode(np.asfortranarray(b))
    (tmp_path / "b.json").write_text(json.dumps({"size": rle["size"], "counts": rle["counts"].decode()}))
    return str(tmp_path / "a.png"), str(tmp_path / "b.json")


def _semantic(tmp_path):
    from PIL import Image

    for sub in ("gt", "pred"):
        os.makedirs(tmp_path / sub)
    g = np.zeros((24, 36), np.uint8)
    g[4:20, 6:30] = 1
    Image.fromarray(g).save(tmp_path / "gt" / "a.png")
    Image.fromarray(np.roll(g, 2, axis=1)).save(tmp_path / "pred" / "a.png")
    (tmp_path / "names.txt").write_text("road\ncar\n")
    (tmp_path / "names.json").write_text('["road", "car"]')
    return f"--gt-dir {tmp_path / 'gt'} --pred-dir {tmp_path / 'pred'} --num-classes 2"


# subcommand -> (its command line with {FLAG} for each input file, the files); each input
# is given once by path and once as <(cat FILE) (or <(gzip -c FILE) where marked "gz:")
def _cases(tmp_path):
    jl = _jsonl(tmp_path / "r.jsonl")
    d2 = _second_results(tmp_path / "dt2.json")
    a, b = _masks(tmp_path)
    sem = _semantic(tmp_path)
    out = tmp_path / "out.json"
    folders = f"--gt-folder {PANOPTIC}/panoptic_examples --pred-folder {PANOPTIC}/pred_shift3"
    return {
        "instances": (f"--gt {{gt}} --dt {{dt}} --iou-type segm -q --json-out {out}",
                      {"gt": COCO_GT, "dt": "gz:" + COCO_DT}),
        "streaming": (f"--gt {{gt}} --dt {{dt}} --chunk-images 30 -q --json-out {out}",
                      {"gt": COCO_GT, "dt": "gz:" + jl}),
        "compare": (f"compare --gt {{gt}} --dt {{a}} --dt {{b}} --resamples 20 -q --json-out {out}",
                    {"gt": COCO_GT, "a": COCO_DT, "b": d2}),
        "diagnose": (f"diagnose --gt {{gt}} --dt {{dt}} --iou-type segm -q --json-out {out}",
                     {"gt": "gz:" + COCO_GT, "dt": COCO_DT}),
        "analyze": (f"analyze --gt {{gt}} --dt {{dt}} -q --json-out {out}", {"gt": COCO_GT, "dt": COCO_DT}),
        "panoptic": (f"panoptic --gt-json {{gt}} --pred-json {{pred}} {folders} -q --json-out {out}",
                     {"gt": os.path.join(PANOPTIC, "panoptic_examples.json"),
                      "pred": "gz:" + os.path.join(PANOPTIC, "pred_shift3.json")}),
        "semantic-text": (f"semantic {sem} --class-names {{names}} -q --json-out {out}",
                          {"names": str(tmp_path / "names.txt")}),
        "semantic-json": (f"semantic {sem} --class-names {{names}} -q --json-out {out}",
                          {"names": str(tmp_path / "names.json")}),
        "measures": (f"measures {{a}} {{b}} --json-out {out}", {"a": a, "b": b}),
        "synthetic": (f"synthetic --gt {{gt}} --evaluate --resolution 14 -q --json-out {out}", {"gt": COCO_GT}),
        "synthetic-panoptic": (f"synthetic --panoptic --gt {{gt}} --gt-folder {PANOPTIC}/panoptic_examples "
                               f"--factor 4 8 --out {tmp_path / 'pan.json'} --evaluate -q --json-out {out}",
                               {"gt": os.path.join(PANOPTIC, "panoptic_examples.json")}),
    }


def _pipe(spec):
    return f"<(gzip -c {spec[3:]})" if spec.startswith("gz:") else f"<(cat {spec})"


def _path(spec):
    return spec[3:] if spec.startswith("gz:") else spec


@pytest.mark.parametrize("case", ["instances", "streaming", "compare", "diagnose", "analyze", "panoptic",
                                  "semantic-text", "semantic-json", "measures", "synthetic",
                                  "synthetic-panoptic"])
def test_every_input_as_a_pipe_gives_the_numbers_of_the_files(tmp_path, case):
    cmd, files = _cases(tmp_path)[case]
    out = tmp_path / "out.json"
    _ok(_bash(cmd.format(**{k: _path(v) for k, v in files.items()}), tmp_path))
    by_path = _numbers(out)
    os.unlink(out)
    proc = _ok(_bash(cmd.format(**{k: _pipe(v) for k, v in files.items()}), tmp_path))
    assert proc.stderr == b"" or case in ("analyze",), proc.stderr.decode()  # analyze warns about coverage
    assert _numbers(out) == by_path
    with open(out) as f:
        inputs = json.load(f)["settings"].get("inputs", {})
    # the inputs are recorded as the user named them (bash's /dev/fd/N), never a copy
    assert all("boundary_api_input" not in str(v) for v in inputs.values())
    assert any(str(v).startswith("/dev/fd/") for v in inputs.values()) or case.startswith("synthetic"), inputs


def test_shard_reads_pipes_and_writes_the_same_shards(tmp_path):
    jl = _jsonl(tmp_path / "r.jsonl")
    _ok(_bash(f"shard --gt {COCO_GT} --dt {jl} --out-dir {tmp_path / 'a'} --images-per-shard 30", tmp_path))
    _ok(_bash(f"shard --gt <(cat {COCO_GT}) --dt <(gzip -c {jl}) --out-dir {tmp_path / 'b'} "
              "--images-per-shard 30", tmp_path))
    names = sorted(os.listdir(tmp_path / "a"))
    assert names == sorted(os.listdir(tmp_path / "b")) and "manifest.json" in names and len(names) == 9
    for name in names:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_a_named_fifo_and_stdin(tmp_path):
    """A FIFO made with mkfifo (written by a thread) and /dev/stdin, for diagnose."""
    fifo = str(tmp_path / "gt.fifo")
    os.mkfifo(fifo)
    out = tmp_path / "out.json"
    _ok(_bash(f"diagnose --gt {COCO_GT} --dt {COCO_DT} -q --json-out {out}", tmp_path))
    by_path = _numbers(out)

    def feed():
        with open(fifo, "wb") as f, open(COCO_GT, "rb") as src:
            f.write(src.read())

    writer = threading.Thread(target=feed)
    writer.start()
    with open(COCO_DT, "rb") as f:
        proc = _bash(f"diagnose --gt {fifo} --dt /dev/stdin -q --json-out {out}", tmp_path, stdin=f.read())
    writer.join(60)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    assert _numbers(out) == by_path
    with open(out) as f:
        assert json.load(f)["settings"]["inputs"] == {"--gt": fifo, "--dt": "/dev/stdin"}


@pytest.mark.parametrize("cmd", [
    "--gt <(echo '{') --dt {dt} -q",
    "--gt <(echo '{') --dt {jl} -q",  # streaming
    "compare --gt <(echo '{') --dt {dt} --dt {dt} -q",
    "diagnose --gt <(echo '{') --dt {dt} -q",
    "analyze --gt <(echo '{') --dt {dt} -q",
    "report --gt <(echo '{') --dt {dt} --out {tmp}/r.html -q",
    "shard --gt <(echo '{') --out-dir {tmp}/shards",
    "synthetic --gt <(echo '{') --evaluate -q",
    "sensitivity --gt <(echo '{') --out {tmp}/sens -q",
    "panoptic --gt-json <(echo '{') --pred-json {pred} --gt-folder {tmp} -q",
    "semantic {sem} --class-names <(echo '[1') -q",
    "measures <(echo '{') {mask}",
], ids=["instances", "streaming", "compare", "diagnose", "analyze", "report", "shard", "synthetic", "sensitivity",
        "panoptic", "semantic", "measures"])
def test_a_bad_pipe_is_named_as_given_and_leaves_nothing(tmp_path, cmd):
    jl = _jsonl(tmp_path / "r.jsonl")
    a, _ = _masks(tmp_path)
    sem = _semantic(tmp_path)
    line = cmd
    for key, value in dict(dt=COCO_DT, jl=jl, tmp=tmp_path, pred=os.path.join(PANOPTIC, "pred_shift3.json"),
                           sem=sem, mask=a).items():
        line = line.replace("{%s}" % key, str(value))
    err = _one_line_error(_bash(line, tmp_path))
    assert "/dev/fd/63" in err and "boundary_api_input" not in err


@pytest.mark.slow
def test_report_and_sensitivity_read_pipes(tmp_path):
    html_a, html_b = tmp_path / "a.html", tmp_path / "b.html"
    _ok(_bash(f"report --gt {COCO_GT} --dt {COCO_DT} --out {html_a} --resamples 0 -q", tmp_path))
    _ok(_bash(f"report --gt <(cat {COCO_GT}) --dt <(gzip -c {COCO_DT}) --out {html_b} --resamples 0 -q", tmp_path))
    # the same page, the files named as given (bash's /dev/fd/63 and 62)
    a = html_a.read_text().replace(COCO_GT, "/dev/fd/63").replace(COCO_DT, "/dev/fd/62")
    a = a.replace(os.path.basename(COCO_GT), "63").replace(os.path.basename(COCO_DT), "62")
    assert a == html_b.read_text()
    for name, gt in (("a", COCO_GT), ("b", f"<(cat {COCO_GT})")):
        _ok(_bash(f"sensitivity --gt {gt} --out {tmp_path / name} --samples 2 --formats png -q", tmp_path))
    assert _numbers(tmp_path / "a" / "curves.json") == _numbers(tmp_path / "b" / "curves.json")


@pytest.mark.slow
def test_cluster_evaluation_reads_the_ground_truth_pipe_once(tmp_path):
    pytest.importorskip("dask.distributed")
    out = tmp_path / "out.json"
    proc = subprocess.run([sys.executable, "-m", "boundary_api.cli", "--gt", COCO_GT, "--dt", COCO_DT, "--workers",
                           "1", "--images-per-shard", "50", "-q", "--json-out", str(out)],
                          capture_output=True, env=_env(), cwd=str(tmp_path), timeout=600)
    _ok(proc)
    by_path = _numbers(out)
    os.unlink(out)
    _ok(_bash(f"--gt <(cat {COCO_GT}) --dt <(cat {COCO_DT}) --workers 1 --images-per-shard 50 -q "
              f"--json-out {out}", tmp_path))
    assert _numbers(out) == by_path


def test_gzip_json_lines_pipe_is_streamed(tmp_path):
    """JSON Lines through a pipe is told by its content (no name to go by) and
    streamed; a JSON list through a pipe is not."""
    from boundary_api.scale.streaming import streams_results

    jl = _jsonl(tmp_path / "r.jsonl")
    r, w = os.pipe()
    data = gzip.compress(open(jl, "rb").read())

    def feed():
        with os.fdopen(w, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=feed)
    writer.start()
    name = f"/dev/fd/{r}"
    try:
        assert streams_results(name)
        from boundary_api.scale.streaming import iter_results

        assert list(iter_results(name)) == json.load(open(COCO_DT))  # every byte still there
    finally:
        writer.join(60)
        os.close(r)
    assert not streams_results(COCO_DT) and streams_results(jl) and streams_results(str(tmp_path))
