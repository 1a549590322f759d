"""The benchmark entry point (``python -m benchmarks`` = ``benchmarks/run_all.py``):
its exit status, the versions and core count it prints, and the sizes and
hashes of the inputs it records.  No benchmark runs here: the evaluations are
replaced by stand-ins."""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import _harness  # noqa: E402
import run_all  # noqa: E402


def test_file_record_of_a_file_and_of_a_folder(tmp_path):
    f = tmp_path / "a.json"
    f.write_bytes(b"[1, 2, 3]")
    rec = run_all.file_record(f)
    assert rec == {"path": str(f), "bytes": 9, "sha256": hashlib.sha256(b"[1, 2, 3]").hexdigest()}
    d = tmp_path / "pngs"
    d.mkdir()
    (d / "x.png").write_bytes(b"xx")
    (d / "y.png").write_bytes(b"yyy")
    rec = run_all.file_record(d)
    assert (rec["bytes"], rec["files"]) == (5, 2)
    (d / "y.png").write_bytes(b"yyz")  # same size, other content: another hash
    assert run_all.file_record(d)["sha256"] != rec["sha256"]


def _fake(monkeypatch, tmp_path, fail_tool=None):
    gt = tmp_path / "gt.json"
    dt = tmp_path / "dt.json"
    gt.write_text('{"images": []}')
    dt.write_text("[]")

    def build_workload(name, quick):
        return {"kind": "coco", "gt": str(gt), "dt": str(dt), "size": "tiny"}

    def run_process(spec, threads, n_all, pin, timeout):
        if spec["tool"] == fail_tool:
            return {"wall": 0.1, "rss_mb": 1.0, "cpu": 0.1, "max_threads": 1, "error": "exit 1: boom"}
        return {"wall": 0.1, "rss_mb": 1.0, "cpu": 0.1, "max_threads": 1, "stats": [0.5] * 12, "phases": {}}

    monkeypatch.setattr(run_all, "build_workload", build_workload)
    monkeypatch.setattr(run_all, "run_process", run_process)
    return gt, dt


def test_all_runs_ok_exit_0_and_the_result_file_records_versions_cores_and_inputs(monkeypatch, tmp_path, capsys):
    gt, dt = _fake(monkeypatch, tmp_path)
    out = tmp_path / "res.json"
    md = tmp_path / "res.md"
    status = run_all.main(["--workloads", "coco500", "--metrics", "segm", "--tools", "boundary_api,reference",
                           "--threads", "1", "--repeats", "1", "--out", str(out), "--markdown", str(md)])
    assert status == 0
    err = capsys.readouterr().err
    assert f"os.cpu_count()={os.cpu_count()}" in err
    assert "versions: python" in err and "pycocotools" in err and "vernier" in err
    report = json.loads(out.read_text())
    assert report["inputs"]["coco500"]["gt"]["sha256"] == hashlib.sha256(gt.read_bytes()).hexdigest()
    assert report["inputs"]["coco500"]["dt"]["bytes"] == 2
    assert "hotcoco" in report["versions"] and "cores" in report["machine"]
    assert "## Inputs" in md.read_text()


def test_a_failed_run_makes_the_exit_status_non_zero(monkeypatch, tmp_path, capsys):
    _fake(monkeypatch, tmp_path, fail_tool="reference")
    status = run_all.main(["--workloads", "coco500", "--metrics", "segm", "--tools", "boundary_api,reference",
                           "--threads", "1", "--repeats", "1"])
    assert status == 1
    assert "1 run(s) failed" in capsys.readouterr().err


def test_nothing_to_run_is_a_failure(monkeypatch, tmp_path):
    _fake(monkeypatch, tmp_path)
    assert run_all.main(["--workloads", "coco500", "--metrics", "pq", "--threads", "1"]) == 1


def test_single_scripts_exit_non_zero_when_a_case_failed(capsys):
    assert _harness.exit_status({"a": {"wall": 1.0}}) == 0
    assert _harness.exit_status({"a": {"wall": 1.0}, "b": {"error": "exit 1: ImportError"}}) == 1
    assert "FAILED b" in capsys.readouterr().err


def test_python_dash_m_benchmarks_is_the_entry_point():
    proc = subprocess.run([sys.executable, "-m", "benchmarks", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "--quick" in proc.stdout and "exit status" in proc.stdout


def test_the_bench_extra_installs_every_peer():
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        tomllib = pytest.importorskip("tomli")
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    names = {r.split(">")[0].split("=")[0].split("[")[0].strip() for r in extras["bench"]}
    used = {run_all.DISTS[t] for t in run_all.TOOLS if t not in ("boundary_api", "reference")}
    assert used | {"psutil"} <= names


def test_baseline_runs_another_build_beside_the_installed_one(monkeypatch, tmp_path, capsys):
    _fake(monkeypatch, tmp_path)
    out = tmp_path / "res.json"
    status = run_all.main(["--workloads", "coco500", "--metrics", "segm", "--tools", "boundary_api,ultrafast",
                           "--threads", "1", "--repeats", "1", "--out", str(out), "--baseline", str(tmp_path)])
    assert status == 0
    report = json.loads(out.read_text())
    assert report["tools"] == ["boundary_api", "baseline", "ultrafast"]
    assert set(report["cells"][0]["results"]) == {"boundary_api", "baseline", "ultrafast"}
    assert run_all.child_env(1, 2, "baseline")["PYTHONPATH"] == str(tmp_path.resolve())
    with pytest.raises(SystemExit):
        run_all.main(["--tools", "baseline", "--workloads", "coco500"])


def test_every_peer_that_has_an_lvis_mode_runs_on_the_lvis_workloads():
    import _run_one

    assert {"segm", "bbox"} <= _run_one.SUPPORTS["ultrafast"]["lvis"]
    assert ("lvis", "ultrafast") in _run_one.RUNNERS and ("lvis", "baseline") in _run_one.RUNNERS
    assert {"lvis300k", "val2m"} <= set(run_all.WORKLOADS)


def _child(tmp_path, body):
    """A stand-in for ``_run_one.py`` in its own folder (``run_process``
    starts ``HERE / "_run_one.py"``)."""
    (tmp_path / "_run_one.py").write_text("import json, sys, threading, time\n" + body)
    return tmp_path


def test_run_process_times_the_child_counts_its_threads_and_reads_its_result(monkeypatch, tmp_path):
    here = _child(tmp_path, (
        "t = threading.Thread(target=time.sleep, args=(0.3,)); t.start()\n"
        "time.sleep(0.1)\n"
        "print('@@RESULT@@ ' + json.dumps({'stats': [1.0], 'phases': {}}), flush=True)\n"
        "t.join()\n"))
    monkeypatch.setattr(run_all, "HERE", here)
    res = run_all.run_process({"tool": "x"}, 2, 2, False, 30.0)
    assert "error" not in res
    assert res["stats"] == [1.0]
    assert res["max_threads"] == 2
    # the wall time ends with the child (it sleeps 0.3 s), not seconds later
    assert 0.3 <= res["wall"] < 5.0
    assert res["rss_mb"] > 0 and res["cpu"] >= 0


def test_run_process_kills_a_child_past_the_timeout(monkeypatch, tmp_path):
    monkeypatch.setattr(run_all, "HERE", _child(tmp_path, "time.sleep(60)\n"))
    res = run_all.run_process({"tool": "x"}, 1, 2, False, 0.5)
    assert res["error"].startswith("timed out after")
    assert res["wall"] < 30.0


def test_run_process_reports_a_failing_child(monkeypatch, tmp_path):
    monkeypatch.setattr(run_all, "HERE", _child(tmp_path, "sys.exit('boom')\n"))
    res = run_all.run_process({"tool": "x"}, 1, 2, False, 30.0)
    assert res["error"] == "exit 1: boom"
