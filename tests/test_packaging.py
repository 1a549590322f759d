"""The sdist and the wheel, built from this checkout, install into fresh
environments and run there.

Issue 18: an sdist without the Cython sources once built fine and could not be
installed.  These tests build both distributions the way a release does
(``python -m build``), but without build isolation so that nothing is
downloaded: the build backend (setuptools, Cython; both in the ``test`` extra)
comes from the running environment.

Each fresh environment is a new virtual environment with neither pip nor
boundary_api.  The running environment's site-packages directories are
appended to its ``sys.path`` by a ``.pth`` file, so it borrows the runtime
dependencies (numpy, pycocotools, ...) and pip instead of downloading them;
boundary_api itself comes only from the distribution under test, installed in
the fresh environment's own site-packages, which precede anything borrowed
(checked below).

The two compilations (the wheel from the checkout, pip building the sdist)
run side by side: on two cores the module takes about a minute.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

from boundary_api import COCO, COCOeval

ROOT = Path(__file__).resolve().parents[1]
EXT_SUFFIX = sysconfig.get_config_var("EXT_SUFFIX")

# What a developer's checkout typically holds besides the sources: none of it
# may reach a distribution.  Planted into the copy that is built.
PLANTED = [
    "cython_ext/_planted.c",
    "cython_ext/boundary_api/masks/_planted.c",
    f"boundary_api/_planted{EXT_SUFFIX}",
    "boundary_api/__pycache__/_planted.cpython-311.pyc",
    "build/lib/planted.py",
    "dist/planted-0.0.tar.gz",
    "benchmarks/_data/planted.json",
    "docs/_build/html/planted.html",
    ".hypothesis/examples/planted",
    ".pytest_cache/planted",
    ".ci/planted",
]
_IGNORED_ON_COPY = shutil.ignore_patterns(
    ".git", ".venv", "venv", "build", "dist", "*.egg-info", "__pycache__", ".hypothesis",
    ".pytest_cache", "_data", "*.so", "*.pyd", "*.c")


def _version_in_source():
    text = (ROOT / "boundary_api" / "_version.py").read_text()
    match = re.search(r'^__version__ = "([^"]+)"$', text, re.M)
    assert match, "boundary_api/_version.py must define __version__ = \"...\""
    return match.group(1)


def _source_files(pattern_dir, suffixes):
    """Files under ROOT/pattern_dir with one of these suffixes, relative to ROOT."""
    base = ROOT / pattern_dir
    return sorted(str(p.relative_to(ROOT)).replace(os.sep, "/") for p in base.rglob("*")
                  if p.is_file() and p.suffix in suffixes and "__pycache__" not in p.parts
                  and "_build" not in p.parts)


def _run(cmd, log, **kwargs):
    """Start cmd with its output in the file log; returns the Popen."""
    out = open(log, "w")
    return subprocess.Popen([str(c) for c in cmd], stdout=out, stderr=subprocess.STDOUT,
                            **kwargs), out


def _wait(proc_out, log, what):
    proc, out = proc_out
    proc.wait(timeout=600)
    out.close()
    text = Path(log).read_text()
    assert proc.returncode == 0, f"{what} failed:\n{text[-6000:]}"
    return text


def _without_checkout() -> dict:
    """This process's environment without PYTHONPATH: the session fixture puts an
    editable checkout there for the tests' children, and a fresh environment must
    import its own installed copy."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


class FreshEnv:
    """A new virtual environment that borrows the running one's packages."""

    def __init__(self, path):
        self.path = Path(path)
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(self.path)],
                       check=True)
        exe = "python.exe" if os.name == "nt" else "python"
        bin_dir = self.path / ("Scripts" if os.name == "nt" else "bin")
        self.python = bin_dir / exe
        paths = json.loads(subprocess.run(
            [str(self.python), "-c", "import json, sysconfig; print(json.dumps(sysconfig.get_paths()))"],
            check=True, capture_output=True, text=True).stdout)
        self.site = Path(paths["purelib"])
        self.scripts = Path(paths["scripts"])
        borrowed = [p for p in sys.path
                    if os.path.basename(p) in ("site-packages", "dist-packages") and os.path.isdir(p)]
        assert borrowed, "the running environment has no site-packages to borrow from"
        (self.site / "_borrowed_from_test_env.pth").write_text("\n".join(borrowed) + "\n")

    def pip_install(self, *args):
        """pip (borrowed) installing into this environment, never from the network."""
        return [self.python, "-m", "pip", "install", "--no-index", "--no-deps", "--ignore-installed",
                "--no-cache-dir", "--disable-pip-version-check", *args]

    def check_installed(self, version):
        """boundary_api and its compiled modules load from this environment."""
        code = ("import json, importlib.metadata as m, boundary_api;"
                "print(json.dumps([boundary_api.__file__, boundary_api.__version__,"
                " m.version('boundary-api')]))")
        out = subprocess.run([str(self.python), "-c", code], check=True, capture_output=True,
                             text=True, cwd=str(self.path), env=_without_checkout()).stdout
        location, module_version, metadata_version = json.loads(out)
        assert Path(location).resolve().is_relative_to(self.site.resolve()), location
        assert module_version == metadata_version == version

    def run_demo(self, workdir, env=None):
        """``boundary-eval -q --json-out`` (the bundled demo) with this environment's script."""
        script = self.scripts / ("boundary-eval.exe" if os.name == "nt" else "boundary-eval")
        assert script.exists(), f"the console script was not installed: {script}"
        out = Path(workdir) / "demo.json"
        proc = subprocess.run([str(script), "-q", "--json-out", str(out)], capture_output=True,
                              text=True, cwd=str(workdir), env=_without_checkout() if env is None else env)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == ""
        assert "Boundary AP" in proc.stdout
        doc = json.loads(out.read_text())
        # the demo data are the installed package's own
        gt = doc["settings"]["inputs"]["--gt"]
        assert Path(gt).resolve().is_relative_to(self.site.resolve()), gt
        # the result file records the version that produced it
        assert doc["boundary_api_version"] == _version_in_source()
        return doc


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Build the sdist and the wheel from a copy of the checkout (with planted
    junk), and install the sdist into one fresh environment."""
    tmp = tmp_path_factory.mktemp("packaging")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=_IGNORED_ON_COPY)
    for rel in PLANTED:
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_text("planted by tests/test_packaging.py\n")
    dist = tmp / "dist"

    build = [sys.executable, "-m", "build", "--no-isolation", "--outdir", dist]
    _wait(_run([*build, "--sdist", src], tmp / "sdist.log"), tmp / "sdist.log", "building the sdist")
    (sdist,) = dist.glob("*.tar.gz")

    # The wheel from the checkout and pip building the sdist, side by side.
    wheel_build = _run([*build, "--wheel", src], tmp / "wheel.log")
    sdist_env = FreshEnv(tmp / "venv-sdist")
    sdist_install = _run(sdist_env.pip_install("--no-build-isolation", "--no-binary", ":all:",
                                               sdist), tmp / "sdist-install.log", cwd=str(tmp))
    _wait(wheel_build, tmp / "wheel.log", "building the wheel")
    install_log = _wait(sdist_install, tmp / "sdist-install.log", "installing the sdist")
    (wheel,) = dist.glob("*.whl")
    return {"tmp": tmp, "sdist": sdist, "wheel": wheel, "sdist_env": sdist_env,
            "sdist_install_log": install_log}


@pytest.fixture(scope="module")
def demo_expected():
    """The bundled demo's metrics computed by the running environment's boundary_api."""
    data = ROOT / "boundary_api" / "data"
    gt = COCO(str(data / "demo_gt.json"))
    dt = gt.loadRes(str(data / "demo_results.json"))
    stats = {}
    for iou_type in ("segm", "boundary"):
        ev = COCOeval(gt, dt, iouType=iou_type)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        stats[iou_type] = ev.stats
    return stats


STAT_NAMES = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]


def _assert_demo_equal(doc, expected):
    """The demo's --json-out (Boundary AP at the top, Mask AP under "segm") equals
    the running environment's numbers exactly."""
    np.testing.assert_array_equal([doc[n] for n in STAT_NAMES], expected["boundary"])
    np.testing.assert_array_equal([doc["segm"][n] for n in STAT_NAMES], expected["segm"])


@pytest.mark.slow
def test_sdist_contents(built):
    sdist = built["sdist"]
    version = _version_in_source()
    assert sdist.name == f"boundary_api-{version}.tar.gz"
    prefix = f"boundary_api-{version}/"
    with tarfile.open(sdist) as tar:
        names = {m.name[len(prefix):] for m in tar.getmembers() if m.isfile()}
    required = {"pyproject.toml", "setup.py", "MANIFEST.in", "LICENSE", "README.md",
                "CHANGELOG.md", "PKG-INFO"}
    required |= set(_source_files("cython_ext", {".pyx", ".pxi", ".pxd", ".h"}))
    required |= set(_source_files("boundary_api", {".py", ".json"}))
    required |= set(_source_files("tests", {".py", ".json", ".png", ".md"}))
    required |= set(_source_files("docs", {".py", ".md", ".txt"}))
    assert not required - names, f"missing from the sdist: {sorted(required - names)}"
    assert any(n.endswith(".pyx") for n in names)
    # the declarations that one module cimports from another
    assert "cython_ext/boundary_api/masks/_rle.pxd" in names
    assert "tests/data/coco/instances_val2014_100.json" in names
    for rel in PLANTED:
        assert rel not in names, f"{rel} must not be in the sdist"
    junk = [n for n in names
            if n.endswith((".c", ".so", ".pyd", ".pyc")) or "__pycache__" in n
            or n.split("/")[0] in ("build", "dist", ".git", ".ci", ".github", ".hypothesis",
                                   ".pytest_cache") or n.startswith("benchmarks/_data/")]
    assert not junk, f"not sources: {junk}"
    assert sdist.stat().st_size < 5 * 2**20


@pytest.mark.slow
def test_sdist_installs_and_runs(built, demo_expected, tmp_path):
    env = built["sdist_env"]
    log = built["sdist_install_log"]
    # pip compiled the extensions from the sdist's Cython sources
    assert re.search(r"Building wheel for boundary.api", log, re.I), log[-3000:]
    env.check_installed(_version_in_source())
    _assert_demo_equal(env.run_demo(tmp_path), demo_expected)


@pytest.mark.slow
def test_wheel_contents(built):
    wheel = built["wheel"]
    version = _version_in_source()
    assert wheel.name.startswith(f"boundary_api-{version}-")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        metadata = zf.read(f"boundary_api-{version}.dist-info/METADATA").decode()
        entry_points = zf.read(f"boundary_api-{version}.dist-info/entry_points.txt").decode()
    # every Cython module compiled, for this interpreter, where its path says
    # (cython_ext/boundary_api/masks/_rle.pyx is boundary_api/masks/_rle), and the
    # utility module they share
    modules = [pyx[len("cython_ext/"):-len(".pyx")] for pyx in _source_files("cython_ext", {".pyx"})]
    assert len(modules) > 1 and all(m.startswith("boundary_api/") for m in modules), modules
    for module in modules + ["boundary_api/_cyutility"]:
        assert module + EXT_SUFFIX in names, f"{module} not compiled into the wheel: {sorted(names)}"
    compiled = [n for n in names if n.endswith(EXT_SUFFIX)]
    assert len(compiled) == len(modules) + 1, compiled
    # every module and subpackage of the source, and the demo data
    expected = set(_source_files("boundary_api", {".py", ".json"}))
    assert not expected - names, f"missing from the wheel: {sorted(expected - names)}"
    # nothing but the package and its metadata
    strays = [n for n in names if not n.startswith(("boundary_api/", f"boundary_api-{version}.dist-info/"))]
    assert not strays, strays
    assert not [n for n in names if n.endswith((".pyx", ".pxi", ".pxd", ".c", ".pyc"))]
    assert not [n for n in names if "_planted" in n]
    assert f"\nVersion: {version}\n" in metadata
    assert "boundary-eval = boundary_api.cli:main" in entry_points


@pytest.mark.slow
def test_wheel_installs_without_compiler_or_cython_and_runs(built, demo_expected, tmp_path):
    env = FreshEnv(tmp_path / "venv-wheel")
    # binaries only: pip may not build anything, and the compiler variables name `false`
    no_tools = dict(os.environ, CC="false", CXX="false", LDSHARED="false")
    proc = subprocess.run([str(c) for c in env.pip_install("--only-binary", ":all:", built["wheel"])],
                          capture_output=True, text=True, cwd=str(tmp_path), env=no_tools)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not re.search(r"Building wheel|running build_ext", proc.stdout, re.I), proc.stdout
    env.check_installed(_version_in_source())
    # Cython and pyximport cannot even be imported while the demo runs
    blocker = tmp_path / "blocker"
    for name in ("Cython", "pyximport"):
        (blocker / name).mkdir(parents=True)
        (blocker / name / "__init__.py").write_text(
            f"raise ImportError('{name} must not be needed at run time')\n")
    run_env = dict(no_tools, PYTHONPATH=str(blocker))
    _assert_demo_equal(env.run_demo(tmp_path, env=run_env), demo_expected)


def test_cibuildwheel_test_command_names_existing_tests():
    """The wheel test command in pyproject.toml cannot run here; its test
    files must at least exist (they move when the test layout changes)."""
    text = (ROOT / "pyproject.toml").read_text()
    section = text.split("[tool.cibuildwheel]", 1)[1].split("\n[", 1)[0]
    command = re.search(r"^test-command = \[(.*?)^\]", section, re.M | re.S).group(1)
    paths = re.findall(r"tests/[\w/]+\.py", command)
    assert paths
    missing = [p for p in paths if not (ROOT / p).is_file()]
    assert not missing, f"pyproject.toml [tool.cibuildwheel] test-command names missing files: {missing}"


# ---------------------------------------------------------------- the Cython sources

CYTHON_HEADER = ("# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, "
                 "initializedcheck=False")


def _cython_modules():
    """Module names of the .pyx files under cython_ext/ (their path says the name)."""
    return sorted(p[len("cython_ext/"):-len(".pyx")].replace("/", ".")
                  for p in _source_files("cython_ext", {".pyx"}))


def _load_setup():
    """setup.py as a module (its ``setup()`` call runs only as a script)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_boundary_api_setup", ROOT / "setup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cython_sources_are_modules_not_textual_includes():
    """Issue 31: one extension module per .pyx, sharing code through .pxd + cimport;
    no include file, and every source compiled with the directives the kernels' C
    division and indexing rely on (a .pxd's inline functions too)."""
    sources = _source_files("cython_ext", {".pyx", ".pxd", ".pxi"})
    assert not [p for p in sources if p.endswith(".pxi")]
    for path in sources:
        text = (ROOT / path).read_text(encoding="utf-8")
        assert text.splitlines()[0] == CYTHON_HEADER, path
        assert not re.search(r"^\s*include\s+['\"]", text, re.M), f"{path} includes a file textually"
        if path.endswith(".pxd"):
            assert (ROOT / (path[:-len(".pxd")] + ".pyx")).is_file(), f"{path} declares no module"
    modules = _cython_modules()
    assert all(m.startswith("boundary_api.") for m in modules), modules
    # the split of issue 31: the tokenizer and both scanners apart, kernels beside their protocol
    for name in ("boundary_api.instance._json", "boundary_api.instance._scan_results",
                 "boundary_api.instance._scan_ground_truth", "boundary_api.masks._rle",
                 "boundary_api.panoptic._kernels", "boundary_api.semantic._kernels",
                 "boundary_api.cityscapes._kernels"):
        assert name in modules


def test_every_compiled_module_imports():
    """The modules load, and find what they cimport from one another at import time."""
    import importlib

    for name in _cython_modules() + ["boundary_api._cyutility"]:
        module = importlib.import_module(name)
        assert module.__file__.endswith(EXT_SUFFIX), module.__file__


def test_setup_builds_every_module_side_by_side(monkeypatch):
    """setup.py declares one extension per .pyx plus the shared utility module, the
    largest first, and compiles them with one job per CPU."""
    from setuptools import Distribution

    setup = _load_setup()
    monkeypatch.chdir(ROOT)   # setup.py walks cython_ext/ relative to the checkout, as pip runs it
    extensions = setup._extensions()
    names = [e.name for e in extensions]
    assert names[0] == setup.SHARED_UTILITY == "boundary_api._cyutility"
    assert sorted(names[1:]) == _cython_modules()
    sizes = [(ROOT / e.sources[0]).stat().st_size for e in extensions[1:]]
    assert sizes == sorted(sizes, reverse=True)
    for ext in extensions:
        assert ext.extra_compile_args == (["/O2"] if sys.platform == "win32" else ["-O3", "-ffp-contract=off"])
    cmd = setup.ParallelBuildExt(Distribution())
    cmd.initialize_options()
    cmd.finalize_options()
    assert cmd.parallel == setup._cpus() >= 1
    cmd = setup.ParallelBuildExt(Distribution())
    cmd.initialize_options()
    cmd.parallel = 1   # -j 1 / --parallel 1 is obeyed
    cmd.finalize_options()
    assert cmd.parallel == 1


def test_setup_cythonizes_in_one_process_where_no_process_pool_starts(monkeypatch, capsys):
    setup = _load_setup()
    calls = []

    def fake_cythonize(extensions, **options):
        calls.append(options.get("nthreads"))
        assert options["shared_utility_qualified_name"] == "boundary_api._cyutility"
        if options.get("nthreads"):
            raise OSError("no /dev/shm")
        return extensions

    monkeypatch.setattr(setup, "cythonize", fake_cythonize)
    monkeypatch.setattr(setup, "_cpus", lambda: 2)
    monkeypatch.chdir(ROOT)
    extensions = setup._cythonize()
    assert calls == [2, None]
    assert extensions[0].name == "boundary_api._cyutility" and len(extensions) == len(_cython_modules()) + 1
    assert "cythonizing in one process" in capsys.readouterr().out


def _ci_pythons():
    """.ci/pythons.py, imported from its file (.ci is not a package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("ci_pythons", ROOT / ".ci" / "pythons.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_supported_pythons_agree():
    """requires-python, the classifiers, the wheels built and the one sentence of the
    manual that states the oldest supported Python say the same (issue 41: the README
    promised 3.9, where the test extra cannot be installed)."""
    text = (ROOT / "pyproject.toml").read_text()
    oldest, minors = _ci_pythons().supported_minors(text)
    assert minors == list(range(oldest, minors[-1] + 1))
    section = text.split("[tool.cibuildwheel]", 1)[1].split("\n[", 1)[0]
    build = re.search(r'^build = "(.*)"', section, re.M).group(1).split()
    assert build == [f"cp3{n}-*" for n in minors]
    assert f"CPython **3.{oldest} or newer**" in (ROOT / "docs" / "install.md").read_text()
    # the README links to that sentence instead of naming a version of its own
    readme = (ROOT / "README.md").read_text()
    assert "docs/install.md#python-versions" in readme
    assert not re.search(r"Python 3\.\d+ or newer", readme)


def test_ci_runs_the_golden_tests_on_the_supported_pythons():
    """The test files .ci/run gives the oldest and newest supported Python exist."""
    ci = (ROOT / ".ci" / "run").read_text()
    listed = re.search(r"^golden_tests=\((.*?)\)", ci, re.M | re.S).group(1).split()
    assert listed and all((ROOT / p).is_file() for p in listed), listed
    assert "tests/coco/test_cocoeval.py" in listed and "tests/cli/test_demo.py" in listed


def test_ci_pythons_picks_the_oldest_and_newest(tmp_path, monkeypatch, capsys):
    """.ci/pythons.py picks the newest patch release of the oldest supported Python and
    the newest supported Python from a pyenv (here a stand-in folder of versions)."""
    module = _ci_pythons()
    oldest, minors = module.supported_minors((ROOT / "pyproject.toml").read_text())
    for name in [f"3.{oldest}.1", f"3.{oldest}.12", f"3.{oldest + 2}.0", f"3.{oldest - 1}.18", "3.99.0",
                 "pypy3.10-7.3", "2.7.18"]:
        (tmp_path / "versions" / name / "bin").mkdir(parents=True)
        exe = tmp_path / "versions" / name / "bin" / "python3"
        exe.write_text("")
        exe.chmod(0o755)
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path))
    assert module.main() == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"3.{oldest}.12 {tmp_path}/versions/3.{oldest}.12/bin/python3",
                                f"3.{oldest + 2}.0 {tmp_path}/versions/3.{oldest + 2}.0/bin/python3"]
    assert "not tested" in err  # the supported versions pyenv lacks are named
    (tmp_path / "versions" / f"3.{oldest}.12" / "bin" / "python3").unlink()
    (tmp_path / "versions" / f"3.{oldest}.1" / "bin" / "python3").unlink()
    assert module.main() == 0
    out, err = capsys.readouterr()
    assert out.splitlines() == [f"3.{oldest + 2}.0 {tmp_path}/versions/3.{oldest + 2}.0/bin/python3"]
    assert f"no Python 3.{oldest} (the oldest supported)" in err
