"""Shared fixtures: the real COCO/LVIS/panoptic data under tests/data and the
reference implementation's expected metrics for it."""
import ctypes
import json
import mmap
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

TESTS = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(TESTS, "data")

COCO_GT = os.path.join(DATA, "coco", "instances_val2014_100.json")
COCO_DT = os.path.join(DATA, "coco", "instances_val2014_fakesegm100_results.json")
LVIS_GT = os.path.join(DATA, "lvis", "lvis_val_100.json")
LVIS_DT = os.path.join(DATA, "lvis", "lvis_val_100_results_jitter.json")

# a headless browser for the render tests (the HTML report, the manual); they skip without one
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
BROWSER = next((shutil.which(b) for b in BROWSERS if shutil.which(b)), None)


def golden_cases(name: str, kind: str = None):
    """Cases of tests/data/<name>.json with their paths made absolute."""
    with open(os.path.join(DATA, name)) as f:
        doc = json.load(f)
    out = []
    for case in doc["cases"]:
        if kind and case["kind"] != kind:
            continue
        case = dict(case)
        for key in ("gt", "dt", "gt_json", "gt_folder", "pred_json", "pred_folder"):
            if key in case:
                case[key] = os.path.join(TESTS, case[key])
        out.append(case)
    return out


def identical(a: dict, b: dict) -> bool:
    """Same keys and bit-for-bit the same values, NaN counting as equal to NaN."""
    return list(a) == list(b) and all(
        x == y or (isinstance(x, float) and isinstance(y, float) and x != x and y != y)
        for x, y in zip(a.values(), b.values()))


def child_env(env=None) -> dict:
    """``env`` (default: this process's environment) for a child Python that must
    import the boundary_api these tests import: when that is a checkout
    (PYTHONPATH, an editable install) its folder goes first on PYTHONPATH, or
    another copy installed in the base Python would answer.  An installed
    package (site-packages) adds nothing: putting site-packages on PYTHONPATH
    would put it before the standard library (a ``typing`` backport there then
    shadows the real one)."""
    import boundary_api

    env = dict(os.environ if env is None else env)
    parent = os.path.dirname(os.path.dirname(os.path.abspath(boundary_api.__file__)))
    if os.path.basename(parent) in ("site-packages", "dist-packages"):
        return env
    path = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != parent]
    env["PYTHONPATH"] = os.pathsep.join([parent] + path)
    return env


@pytest.fixture(autouse=True, scope="session")
def _outside_the_source_tree(tmp_path_factory):
    """Every test runs in an empty folder, so that a ``python -c`` or ``python -m``
    it starts imports the installed boundary_api, never the uncompiled source tree
    of the checkout (CI installs with ``pip install .`` and runs pytest from the
    root).  Tests name their files by absolute path."""
    here = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("cwd"))
    # a subprocess runs the boundary_api these tests import
    old_path = os.environ.get("PYTHONPATH")
    os.environ.update(child_env({"PYTHONPATH": old_path} if old_path else {}))
    yield
    os.chdir(here)
    if old_path is None:
        os.environ.pop("PYTHONPATH", None)
    else:
        os.environ["PYTHONPATH"] = old_path


@pytest.fixture
def quiet(capsys):
    """Swallow pycocotools' prints; yields capsys for tests that read them."""
    yield capsys


def modules_after(code: str) -> set:
    """Names in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code) + "\nimport sys\nprint(' '.join(sys.modules))"],
                         capture_output=True, text=True, check=True)
    return set(out.stdout.strip().splitlines()[-1].split())


_libc = ctypes.CDLL(None, use_errno=True)
_libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
PAGE = mmap.PAGESIZE


def guarded_views(data):
    """``data`` in a writable view placed right before, then right after, a
    page that may not be touched (PROT_NONE): a read outside the view faults
    (the test process dies), so a scanner that passes stays inside."""
    data = bytes(data)
    npages = (len(data) + PAGE - 1) // PAGE + 1
    for at_end in (True, False):
        m = mmap.mmap(-1, (npages + 1) * PAGE)
        anchor = ctypes.c_char.from_buffer(m)
        addr = ctypes.addressof(anchor)
        del anchor   # the mmap cannot be closed while ctypes holds it
        guard = addr + npages * PAGE if at_end else addr
        assert _libc.mprotect(guard, PAGE, 0) == 0
        lo = npages * PAGE - len(data) if at_end else PAGE
        view = memoryview(m)[lo:lo + len(data)]
        view[:] = data
        try:
            yield view
        finally:
            view.release()
            assert _libc.mprotect(guard, PAGE, 3) == 0   # PROT_READ | PROT_WRITE
            m.close()


def draw_mutation(data, raw: bytes) -> bytes:
    """``raw`` with 1 to 4 bytes set, inserted or deleted, drawn from
    hypothesis' ``st.data()`` object ``data``."""
    from hypothesis import strategies as st

    out = bytearray(raw)
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["set", "insert", "delete"]))
        i = data.draw(st.integers(0, len(out) - 1))
        if op == "set":
            out[i] = data.draw(st.integers(0, 255))
        elif op == "insert":
            out.insert(i, data.draw(st.integers(0, 255)))
        elif len(out) > 1:
            del out[i]
    return bytes(out)


# Test modules of an optional tier that import its package at module level
# (pytest.importorskip): left out of collection unless the tier is asked for
# with -m, so that the quick tier reports them as neither skipped nor failed.
# With -m torch / -m detectron2 / -m mmdet and the package missing, they are collected
# and skip, saying what is missing.
_OPTIONAL_MODULES = {
    "test_torchmetrics.py": "torch",
    "test_torchmetrics_metric.py": "torch",
    "test_torch_kernels.py": "torch",
    "test_detectron2_swap.py": "detectron2",
    "test_mmdet.py": "mmdet",
}


def pytest_ignore_collect(collection_path, config):
    marker = _OPTIONAL_MODULES.get(collection_path.name)
    if marker is None:
        return None
    return marker not in (config.getoption("markexpr") or "").replace("not " + marker, "")


_SLOW_TIER = os.path.join(TESTS, "slow_tier.txt")


def slow_tier_ids() -> list:
    """The node ids listed in tests/slow_tier.txt."""
    with open(_SLOW_TIER, encoding="utf-8") as f:
        return [line.strip() for line in f if line.strip() and not line.startswith("#")]


def pytest_collection_modifyitems(config, items):
    # tests listed in slow_tier.txt join the slow tier (and leave the quick one)
    listed = set(slow_tier_ids())
    for item in items:
        if item.nodeid in listed:
            item.add_marker(pytest.mark.slow)


#: the fuzz suite's counts sent by pytest-xdist's workers (tests/fuzz run there)
_WORKER_FUZZ_COUNTS = {}


def pytest_sessionfinish(session):
    # in a pytest-xdist worker: its fuzz families' counts go to the controller
    runner = sys.modules.get("fuzz_runner")
    if hasattr(session.config, "workeroutput") and runner is not None and runner.SESSION:
        session.config.workeroutput["fuzz_counts"] = json.dumps(
            {family: {"n": r["n"], "seconds": r["seconds"], "counts": r["counts"], "kinds": dict(r["kinds"])}
             for family, r in runner.SESSION.items()})


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    counts = getattr(node, "workeroutput", {}).get("fuzz_counts")
    if counts:
        _WORKER_FUZZ_COUNTS.update(json.loads(counts))


def pytest_terminal_summary(terminalreporter):
    """The differential fuzz suite's counts (tests/fuzz, issue 40 item 5): the
    inputs of each family and what came of them, printed at the end of the run
    so that they can be quoted (from pytest-xdist's workers too)."""
    runner = sys.modules.get("fuzz_runner")
    families = dict(runner.SESSION) if runner is not None else {}
    families.update(_WORKER_FUZZ_COUNTS)
    if not families:
        return
    tr = terminalreporter
    tr.section("differential fuzzing: inputs per family")
    total = 0
    for family, res in families.items():
        total += res["n"]
        outcomes = ", ".join(f"{k} {v}" for k, v in sorted(res["counts"].items()))
        tr.write_line(f"{family:18s} {res['n']:6d} inputs  {res['seconds']:6.1f} s  ({outcomes})")
        for kind, n in sorted(res["kinds"].items()):
            tr.write_line(f"    {kind:44s} {n:6d}")
    tr.write_line(f"{'total':18s} {total:6d} inputs")
