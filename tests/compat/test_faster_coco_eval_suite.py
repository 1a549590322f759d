"""faster-coco-eval's own published tests of the pycocotools API, run with
boundary_api swapped in (issue 24 item 7).

Nothing of faster-coco-eval's test code is in this repository: the test
fetches faster-coco-eval's source distribution from PyPI with pip, at test
time, into a temporary folder, checks its SHA-256, and runs the tests it
ships in a pytest subprocess with our plugin ``_fce_swap_plugin`` (this
folder), which

* calls :func:`boundary_api.init_as_pycocotools`, so the tests' ``from
  pycocotools.coco import COCO`` / ``from pycocotools.cocoeval import
  COCOeval`` give boundary_api's classes, and
* gives the test modules boundary_api's ``COCO`` / ``COCOeval`` where they
  import faster-coco-eval's (``COCO``, ``COCOeval_faster``), except in the
  module that compares faster-coco-eval with pycocotools, which so compares
  faster-coco-eval with boundary_api.

Which tests: those that drive ``COCO`` / ``COCOeval`` and pass with
pycocotools' own classes put in the same places (the plugin's
``pycocotools`` target) -- they use nothing but the pycocotools API.  Of the
190 tests that faster-coco-eval 1.8.0's source distribution collects here
(5 more modules skip themselves: torch, torchvision, torchmetrics, its
drawing extras), these are the 20 in ``SELECTED``.  The others use its own
extensions (``print_function``, ``rle_iou_max_workers``, ``to_dict``, dict
ground truths and ``pathlib`` result files, warnings of its own,
``ExtraEval``, ``PreviewResults``...), test its C++ or mask modules and not
``COCO`` / ``COCOeval``, or read data files that its source distribution
does not ship (``tests/dataset``, ``keypoints_dataset``, ``cocoapi``,
``lvis``).  Both targets run, and every selected test must pass in both; the
selection is spelled out so that a change of it fails here.

Slow tier: two pip downloads and two pytest runs of about 10 s each.
"""
import hashlib
import json
import os
import shutil
import site
import subprocess
import sys
import tarfile

import pytest

import boundary_api

HERE = os.path.dirname(os.path.abspath(__file__))
PLUGIN = os.path.join(HERE, "_fce_swap_plugin.py")

SDIST_REQUIREMENT = "faster-coco-eval==1.8.0"
SDIST_NAME = "faster_coco_eval-1.8.0.tar.gz"
SDIST_SHA256 = "0d342e22228a2a41b734694b3b8811888b0b8aeeca34fe86b7455836b62c5a85"
# pip prepares an sdist's metadata before saving it, and faster-coco-eval's
# setup.py imports pybind11: that wheel goes on the PYTHONPATH of that pip
# call (nothing is built).  parameterized: what its tests import.
HELPER_WHEELS = ("pybind11==2.13.6", "parameterized==0.9.0")

#: test modules that compare faster-coco-eval with ``pycocotools``: they keep
#: faster-coco-eval's own classes (then compared with boundary_api's)
KEEP_FASTER = ("test_extensive_pycocotools_comparison",)

SELECTED = (
    # pycocotools' and faster-coco-eval's names, both the class under test:
    # all-1.0 AP of 10x10 RLE masks, Detectron2's COCO val sample
    "tests/test_coco_metric.py::TestCocoMetric::test_detectron2_eval_0",
    "tests/test_coco_metric.py::TestCocoMetric::test_detectron2_eval_1",
    "tests/test_coco_metric.py::TestCocoMetric::test_evaluate_0",
    "tests/test_coco_metric.py::TestCocoMetric::test_evaluate_1",
    # COCO(): showAnns of an annotation without payload; createIndex without categories
    "tests/test_coco_api_and_evaluator_regressions.py::test_show_anns_rejects_unsupported_annotation_types",
    "tests/test_orphan_annotations.py::TestOrphanAnnotations::test_create_index_skips_category_index_without_categories",
    # faster-coco-eval's stats against the `pycocotools` ones to 1e-10 on generated data
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_bbox_detection_extensive_0_small_dataset",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_bbox_detection_extensive_1_medium_dataset",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_bbox_detection_extensive_2_large_dataset",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_crowd_annotations_extensive_0_bbox",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_crowd_annotations_extensive_1_segm",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_edge_case_no_predictions",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_edge_case_perfect_predictions",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_keypoints_extensive_0_small_dataset",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_keypoints_extensive_1_medium_dataset",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_keypoints_extensive_2_large_dataset",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_mixed_object_sizes",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_segmentation_extensive_0_small_dataset",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_segmentation_extensive_1_medium_dataset",
    "tests/test_extensive_pycocotools_comparison.py::TestExtensivePycocotoolsComparison::test_segmentation_extensive_2_large_dataset",
)

#: what the test modules must have bound, per target: module -> name -> class
BOUNDARY_API_COCO = "boundary_api.coco.dataset.COCO"
BOUNDARY_API_COCOEVAL = "boundary_api.coco.cocoeval.COCOeval"
EXPECTED_BINDINGS = {
    "boundary_api": {
        "test_coco_metric": {"COCO": BOUNDARY_API_COCO, "COCOeval_faster": BOUNDARY_API_COCOEVAL,
                             "origCOCO": BOUNDARY_API_COCO, "origCOCOeval": BOUNDARY_API_COCOEVAL},
        "test_coco_api_and_evaluator_regressions": {"COCO": BOUNDARY_API_COCO,
                                                    "COCOeval_faster": BOUNDARY_API_COCOEVAL},
        "test_orphan_annotations": {"COCO": BOUNDARY_API_COCO},
        "test_extensive_pycocotools_comparison": {
            "COCO": "faster_coco_eval.core.coco.COCO",
            "COCOeval_faster": "faster_coco_eval.core.faster_eval_api.COCOeval_faster",
            "origCOCO": BOUNDARY_API_COCO, "origCOCOeval": BOUNDARY_API_COCOEVAL},
    },
    "pycocotools": {
        "test_coco_metric": {"COCO": "pycocotools.coco.COCO", "COCOeval_faster": "pycocotools.cocoeval.COCOeval",
                             "origCOCO": "pycocotools.coco.COCO", "origCOCOeval": "pycocotools.cocoeval.COCOeval"},
        "test_coco_api_and_evaluator_regressions": {"COCO": "pycocotools.coco.COCO",
                                                    "COCOeval_faster": "pycocotools.cocoeval.COCOeval"},
        "test_orphan_annotations": {"COCO": "pycocotools.coco.COCO"},
        "test_extensive_pycocotools_comparison": {
            "COCO": "faster_coco_eval.core.coco.COCO",
            "COCOeval_faster": "faster_coco_eval.core.faster_eval_api.COCOeval_faster",
            "origCOCO": "pycocotools.coco.COCO", "origCOCOeval": "pycocotools.cocoeval.COCOeval"},
    },
}


def _pip(args, cwd, env=None):
    """Run ``python -m pip download ...``; fail (never skip) with pip's
    output when it does not succeed."""
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check",
               "--no-input", *args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        pytest.fail(f"pip could not download {args}: exit {done.returncode}\n"
                    f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}", pytrace=False)


def _extract_tests(sdist, into):
    """The sdist's ``tests/`` folder only (its package source would shadow the
    installed, compiled faster_coco_eval)."""
    top = SDIST_NAME[: -len(".tar.gz")]
    with tarfile.open(sdist, "r:gz") as archive:
        members = []
        for member in archive.getmembers():
            parts = member.name.split("/")
            if len(parts) < 3 or parts[0] != top or parts[1] != "tests" or ".." in parts:
                continue
            if not (member.isfile() or member.isdir()):
                continue
            member.name = "/".join(parts[1:])
            members.append(member)
        safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        archive.extractall(into, members=members, **safe)
    assert os.path.isdir(os.path.join(into, "tests")), f"{SDIST_NAME} has no tests/ folder"


@pytest.fixture(scope="session")
def faster_suite(tmp_path_factory):
    """(folder with faster-coco-eval's tests/, PYTHONPATH entries) for the
    subprocess; downloaded once per session."""
    work = str(tmp_path_factory.mktemp("faster_coco_eval_suite"))
    wheels = os.path.join(work, "wheels")
    _pip(["--only-binary", ":all:", "--dest", wheels, *HELPER_WHEELS], cwd=work)
    found = {name.split("-")[0]: os.path.join(wheels, name) for name in os.listdir(wheels)}
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [found["pybind11"]] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    sdists = os.path.join(work, "sdist")
    _pip(["--no-binary", ":all:", "--no-build-isolation", "--dest", sdists, SDIST_REQUIREMENT], cwd=work, env=env)
    sdist = os.path.join(sdists, SDIST_NAME)
    with open(sdist, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    assert digest == SDIST_SHA256, f"{SDIST_NAME}: SHA-256 {digest}, expected {SDIST_SHA256}"
    run_dir = os.path.join(work, "run")
    os.makedirs(run_dir)
    _extract_tests(sdist, run_dir)
    with open(os.path.join(run_dir, "pytest.ini"), "w") as f:
        f.write("[pytest]\nmarkers =\n    slow: faster-coco-eval's slow tests\n")
    plugin_dir = os.path.join(work, "plugin")
    os.makedirs(plugin_dir)
    shutil.copy(PLUGIN, plugin_dir)
    path = [plugin_dir, found["parameterized"]]
    # the boundary_api this session imports, also when it is not installed
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(boundary_api.__file__)))
    site_dirs = list(getattr(site, "getsitepackages", list)()) + [site.getusersitepackages()]
    if package_parent not in site_dirs:
        path.append(package_parent)
    return run_dir, path


def _run(run_dir, path, target):
    report = os.path.join(run_dir, f"report-{target}.json")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    env.update(
        PYTHONPATH=os.pathsep.join(path + [p for p in [os.environ.get("PYTHONPATH")] if p]),
        BOUNDARY_API_FCE_TARGET=target,
        BOUNDARY_API_FCE_KEEP=",".join(KEEP_FASTER),
        BOUNDARY_API_FCE_REPORT=report,
    )
    command = [sys.executable, "-m", "pytest", "-c", "pytest.ini", "--rootdir", ".", "-p", "no:cacheprovider",
               "-p", "_fce_swap_plugin", "-q", "-rfEs", *SELECTED]
    done = subprocess.run(command, cwd=run_dir, env=env, capture_output=True, text=True, timeout=1800)
    output = f"exit {done.returncode}\n{done.stdout[-6000:]}\n{done.stderr[-3000:]}"
    assert os.path.exists(report), f"the subprocess wrote no report:\n{output}"
    with open(report) as f:
        return json.load(f), done.returncode, output


@pytest.mark.slow
@pytest.mark.parametrize("target", ["boundary_api", "pycocotools"])
def test_pycocotools_api_tests_of_faster_coco_eval_pass(faster_suite, target):
    """Every selected test passes; with target boundary_api, it evaluates
    with boundary_api (with target pycocotools, with pycocotools' classes:
    it is a pycocotools-API test)."""
    run_dir, path = faster_suite
    report, code, output = _run(run_dir, path, target)
    assert report["collected"] == list(SELECTED), output
    for module, names in EXPECTED_BINDINGS[target].items():
        assert report["bindings"][module] == names, (module, output)
    if target == "boundary_api":
        assert report["boundary_api"] == boundary_api.__file__, output
    not_passed = {test: report["outcomes"].get(test) for test in SELECTED
                  if report["outcomes"].get(test) != "passed"}
    assert not not_passed, f"{not_passed}\n" + "\n".join(
        report["longrepr"].get(test, "")[-2000:] for test in not_passed) + output
    assert code == 0, output
    assert len(SELECTED) == 20
