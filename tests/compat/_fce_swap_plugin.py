"""pytest plugin that runs faster-coco-eval's published tests with other
classes behind the names they evaluate with.

Only ``tests/compat/test_faster_coco_eval_suite.py`` uses it, in the pytest
subprocess it starts on the tests of faster-coco-eval's source distribution
(``-p _fce_swap_plugin``); it is never loaded into our own test session.

Those tests reach pycocotools' classes in two ways, and the plugin replaces
both, according to ``BOUNDARY_API_FCE_TARGET``:

``boundary_api``
    :func:`boundary_api.init_as_pycocotools` is called first, so
    ``from pycocotools.coco import COCO`` / ``from pycocotools.cocoeval import
    COCOeval`` in a test module give boundary_api's classes; and the names
    faster-coco-eval exports for the same roles (``COCO``,
    ``COCOeval_faster``, ``core.cocoeval.COCOeval``,
    ``core.faster_eval_api.COCOeval``) are boundary_api's ``COCO`` and
    ``COCOeval`` for the test modules.
``pycocotools``
    nothing is swapped for pycocotools; faster-coco-eval's names are
    pycocotools' own ``COCO`` and ``COCOeval``.  A test that passes so uses
    nothing but what pycocotools offers: this is how the suite checks that
    the tests it selects are pycocotools-API tests.

In both, faster-coco-eval's ``Params`` is pycocotools' (which boundary_api's
``COCOeval`` uses too); its mask functions (``faster_coco_eval.core.mask``)
stay faster-coco-eval's.

How: after importing faster_coco_eval and every submodule it can import,
stand-in module objects are made for each of them (the same names, the
classes above replaced, submodule attributes pointing at the stand-ins).  They
are put into ``sys.modules`` while a test module is imported and while its
tests run, and taken out again afterwards, so faster-coco-eval's own code
keeps its own classes.  Test modules named in ``BOUNDARY_API_FCE_KEEP``
(comma-separated file names without ``.py``) see faster-coco-eval's real
modules: those compare faster-coco-eval with ``pycocotools``, which is then
boundary_api (target ``boundary_api``).

``BOUNDARY_API_FCE_REPORT``: a JSON file written at the end of the session,
``{"target": ..., "boundary_api": <file of the boundary_api package
imported>, "collected": [node ids], "bindings": {test module: {name: class}}
(the classes the module bound at import to COCO, COCOeval, COCOeval_faster,
origCOCO, origCOCOeval), "outcomes": {node id: "passed" | "failed" |
"skipped"}, "longrepr": {node id: text}}``.
"""
import contextlib
import importlib
import json
import os
import pkgutil
import sys
import types

import pytest

_TARGETS = ("boundary_api", "pycocotools")


class _State:
    target = None
    keep = frozenset()
    stand_ins = {}
    report_path = None
    boundary_api_file = None
    collected = []
    outcomes = {}
    longrepr = {}
    bindings = {}


#: module-level names of the test modules whose classes the report lists
_REPORTED_NAMES = ("COCO", "COCOeval", "COCOeval_faster", "origCOCO", "origCOCOeval")


def _import_faster_coco_eval():
    """faster_coco_eval and every submodule that imports here (the optional
    ones that need torch etc. may fail; they stay out)."""
    package = importlib.import_module("faster_coco_eval")
    for info in pkgutil.walk_packages(package.__path__, "faster_coco_eval.", onerror=lambda name: None):
        try:
            importlib.import_module(info.name)
        except Exception:  # noqa: BLE001 - an optional extra that cannot import here
            continue
    return {name: module for name, module in sys.modules.items()
            if isinstance(module, types.ModuleType)
            and (name == "faster_coco_eval" or name.startswith("faster_coco_eval."))}


def _replacements(target):
    """id(faster-coco-eval class) -> the class the test modules get instead."""
    import faster_coco_eval
    import faster_coco_eval.core.cocoeval as fce_cocoeval
    import faster_coco_eval.core.faster_eval_api as fce_api
    import pycocotools.cocoeval

    if target == "boundary_api":
        import boundary_api

        boundary_api.init_as_pycocotools()
        coco_cls, eval_cls = boundary_api.COCO, boundary_api.COCOeval
        _State.boundary_api_file = boundary_api.__file__
    else:
        import pycocotools.coco

        coco_cls, eval_cls = pycocotools.coco.COCO, pycocotools.cocoeval.COCOeval
    pairs = [
        (faster_coco_eval.COCO, coco_cls),
        (faster_coco_eval.COCOeval_faster, eval_cls),
        (fce_cocoeval.COCOeval, eval_cls),
        (fce_api.COCOeval, eval_cls),
        (fce_cocoeval.Params, pycocotools.cocoeval.Params),
    ]
    return {id(original): new for original, new in pairs}


def _make_stand_ins(modules, replace):
    stand_ins = {}
    for name, original in modules.items():
        stand_in = types.ModuleType(name)
        names = vars(stand_in)
        for key, value in vars(original).items():
            names[key] = replace.get(id(value), value)
        stand_ins[name] = stand_in
    by_id = {id(modules[name]): stand_in for name, stand_in in stand_ins.items()}
    for stand_in in stand_ins.values():
        names = vars(stand_in)
        for key, value in list(names.items()):
            if isinstance(value, types.ModuleType) and id(value) in by_id:
                names[key] = by_id[id(value)]
    return stand_ins


@contextlib.contextmanager
def _installed(module_name):
    """The stand-ins in sys.modules while a test module (by file stem) is
    imported or run, unless it keeps faster-coco-eval's real modules."""
    if module_name in _State.keep:
        yield
        return
    saved = {name: sys.modules.get(name) for name in _State.stand_ins}
    sys.modules.update(_State.stand_ins)
    try:
        yield
    finally:
        for name, previous in saved.items():
            if previous is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = previous


def _stem(path):
    return os.path.splitext(os.path.basename(str(path)))[0]


def pytest_configure(config):
    target = os.environ.get("BOUNDARY_API_FCE_TARGET")
    if target not in _TARGETS:
        raise pytest.UsageError(f"BOUNDARY_API_FCE_TARGET must be one of {_TARGETS}; got {target!r}")
    _State.target = target
    _State.keep = frozenset(filter(None, os.environ.get("BOUNDARY_API_FCE_KEEP", "").split(",")))
    _State.report_path = os.environ.get("BOUNDARY_API_FCE_REPORT")
    modules = _import_faster_coco_eval()
    _State.stand_ins = _make_stand_ins(modules, _replacements(target))


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector):
    if not isinstance(collector, pytest.Module):
        yield
        return
    stem = _stem(collector.path)
    with _installed(stem):
        outcome = yield
    report = outcome.get_result()
    if report.passed:
        names = vars(collector.obj)
        _State.bindings[stem] = {name: f"{names[name].__module__}.{names[name].__qualname__}"
                                 for name in _REPORTED_NAMES if isinstance(names.get(name), type)}


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    with _installed(_stem(item.path)):
        yield


def pytest_collection_finish(session):
    _State.collected = [item.nodeid for item in session.items]


def pytest_runtest_logreport(report):
    # a failure in any phase fails the test; a skip in setup skips it
    previous = _State.outcomes.get(report.nodeid)
    if report.failed:
        _State.outcomes[report.nodeid] = "failed"
        _State.longrepr[report.nodeid] = str(report.longrepr)[-4000:]
    elif report.skipped and previous is None:
        _State.outcomes[report.nodeid] = "skipped"
        _State.longrepr[report.nodeid] = str(report.longrepr)[-1000:]
    elif report.when == "call" and report.passed and previous is None:
        _State.outcomes[report.nodeid] = "passed"


def pytest_sessionfinish(session, exitstatus):
    if _State.report_path:
        with open(_State.report_path, "w") as f:
            json.dump({"target": _State.target, "boundary_api": _State.boundary_api_file,
                       "collected": _State.collected, "bindings": _State.bindings, "outcomes": _State.outcomes,
                       "longrepr": _State.longrepr}, f, indent=1)
