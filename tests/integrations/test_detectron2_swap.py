"""Detectron2's own evaluators, unchanged, on boundary_api through boundary_api.swapped():
the same results as on pycocotools / lvis, and not a warning from boundary_api (optional tier,
``pytest -m detectron2``)."""
import contextlib
import copy
import importlib.util
import inspect
import io
import json
import os
import sys
import warnings

import numpy as np
import pycocotools.mask as mask_util
import pytest

import boundary_api
from conftest import COCO_DT, COCO_GT, DATA, LVIS_DT, LVIS_GT, identical

pytestmark = [pytest.mark.detectron2]
detectron2 = pytest.importorskip("detectron2")

import torch  # noqa: E402  (Detectron2 needs it)
from detectron2.data import DatasetCatalog, MetadataCatalog  # noqa: E402
from detectron2.data.datasets import register_coco_instances, register_lvis_instances  # noqa: E402
from detectron2.evaluation import COCOEvaluator, LVISEvaluator  # noqa: E402
from detectron2.structures import Boxes, Instances  # noqa: E402

COCO_NAME = "boundary_api_swap_coco_100"
LVIS_NAME = "boundary_api_swap_lvis_100"


def _load(path):
    import json

    with open(path) as f:
        return json.load(f)


def _feed(ev, gt_path, results, to_contiguous):
    gt = _load(gt_path)
    by_image = {}
    for r in results:
        by_image.setdefault(r["image_id"], []).append(r)
    ev.reset()
    for img in gt["images"]:
        rs = by_image.get(img["id"], [])
        h, w = img["height"], img["width"]
        inst = Instances((h, w))
        masks = np.stack([mask_util.decode(r["segmentation"]) for r in rs]) if rs else np.zeros((0, h, w), np.uint8)
        xywh = np.array([mask_util.toBbox(r["segmentation"]) for r in rs], np.float64).reshape(-1, 4)
        inst.pred_masks = torch.from_numpy(masks.astype(bool))
        inst.pred_boxes = Boxes(torch.from_numpy(np.hstack([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]])).float())
        inst.scores = torch.tensor([r["score"] for r in rs], dtype=torch.float64)
        inst.pred_classes = torch.tensor([to_contiguous(r["category_id"]) for r in rs], dtype=torch.int64)
        ev.process([{"image_id": img["id"], "height": h, "width": w}], [{"instances": inst}])


def _coco_results(**kwargs):
    if COCO_NAME not in DatasetCatalog.list():
        register_coco_instances(COCO_NAME, {}, COCO_GT, DATA)
    with contextlib.redirect_stdout(io.StringIO()):
        DatasetCatalog.get(COCO_NAME)
        mapping = MetadataCatalog.get(COCO_NAME).thing_dataset_id_to_contiguous_id
        ev = COCOEvaluator(COCO_NAME, distributed=False, **kwargs)
        _feed(ev, COCO_GT, _load(COCO_DT), mapping.__getitem__)
        return ev.evaluate()


@pytest.fixture
def spy(monkeypatch):
    made = []
    for cls in (boundary_api.COCOeval, boundary_api.LVISEval):
        init = cls.__init__

        def record(self, *args, __init=init, **kwargs):
            made.append(type(self).__name__)
            __init(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", record)
    yield made
    boundary_api.restore_originals()


@pytest.mark.filterwarnings("error::UserWarning")
def test_coco_evaluator_unchanged_on_boundary_api(spy):
    """detectron2.evaluation.coco_evaluation imported COCOeval before the swap: rebound."""
    theirs = _coco_results(use_fast_impl=False)
    assert spy == []
    with boundary_api.swapped():
        ours = _coco_results(use_fast_impl=False)
        assert sys.modules["detectron2.evaluation.coco_evaluation"].COCOeval is boundary_api.COCOeval
    assert spy == ["COCOeval", "COCOeval"]  # bbox and segm ran on boundary_api
    assert list(ours) == list(theirs) == ["bbox", "segm"]
    for task in theirs:
        assert identical(ours[task], theirs[task]), task
    assert sys.modules["detectron2.evaluation.coco_evaluation"].COCOeval.__module__ == "pycocotools.cocoeval"


@pytest.mark.filterwarnings("error::UserWarning")
def test_coco_evaluator_fast_impl_keeps_detectron2s_own_subclass(spy):
    """COCOeval_opt (the default use_fast_impl=True) was defined as a subclass of pycocotools'
    COCOeval when Detectron2 was imported: the swap does not change it."""
    theirs = _coco_results()
    with boundary_api.swapped():
        ours = _coco_results()
    assert spy == []
    for task in theirs:
        assert identical(ours[task], theirs[task]), task


@pytest.mark.filterwarnings("error::UserWarning")
def test_lvis_evaluator_unchanged_on_boundary_api_any_numpy(spy, monkeypatch):
    """Detectron2's LVISEvaluator imports lvis inside its functions: under the swap it runs on
    boundary_api.LVISEval, also on numpy >= 1.24, where lvis' own accumulate fails (np.float)."""
    if LVIS_NAME not in DatasetCatalog.list():
        register_lvis_instances(LVIS_NAME, {}, LVIS_GT, DATA)

    def run():
        with contextlib.redirect_stdout(io.StringIO()):
            ev = LVISEvaluator(LVIS_NAME, distributed=False)
            _feed(ev, LVIS_GT, _load(LVIS_DT), lambda c: c - 1)
            return ev.evaluate()

    with boundary_api.swapped():
        ours = run()
    assert spy == ["LVISEval", "LVISEval"]
    monkeypatch.setattr(np, "float", float, raising=False)  # lvis' own accumulate needs it
    theirs = run()
    assert list(ours) == list(theirs) == ["bbox", "segm"]
    for task in theirs:
        assert identical(ours[task], theirs[task]), task


@pytest.mark.slow
def test_swap_before_detectron2_is_imported(tmp_path):
    """The other order, in a fresh interpreter: init_as_pycocotools() first, then Detectron2.
    Its COCOeval_opt (use_fast_impl=True) is then defined on boundary_api.COCOeval and
    both implementations give Detectron2's numbers."""
    import json
    import os
    import subprocess
    import textwrap

    here = os.path.dirname(os.path.abspath(__file__))
    code = textwrap.dedent(f"""
        import json, sys, warnings
        warnings.simplefilter("ignore")
        sys.path[:0] = [{here!r}, {os.path.dirname(here)!r}]
        import boundary_api
        boundary_api.init_as_pycocotools()
        from detectron2.evaluation.fast_eval_api import COCOeval_opt
        assert COCOeval_opt.__mro__[1] is boundary_api.COCOeval
        import test_detectron2_swap as t
        out = {{"fast": t._coco_results(), "slow": t._coco_results(use_fast_impl=False)}}
        print("RESULTS", json.dumps(out))
    """)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-3000:]
    line = next(x for x in run.stdout.splitlines() if x.startswith("RESULTS "))
    got = json.loads(line[len("RESULTS "):])
    # each against Detectron2's own run of the same implementation (its C++ accumulate and
    # pycocotools' Python one differ in the last bit of some per-category APs)
    for impl, theirs in (("fast", _coco_results()), ("slow", _coco_results(use_fast_impl=False))):
        assert list(got[impl]) == list(theirs)
        for task in theirs:
            diff = {k: (got[impl][task].get(k), v) for k, v in theirs[task].items()
                    if not identical({k: got[impl][task].get(k)}, {k: v})}
            assert list(got[impl][task]) == list(theirs[task]) and not diff, (impl, task, diff)


# ------------------------------------- Detectron2's tests/data/test_coco_evaluation.py
def _detectron2_test_module():
    """Detectron2's own ``tests/data/test_coco_evaluation.py``, loaded as a module (its
    ``tests/`` folder lies next to the package in a checkout installed with ``pip install -e``)."""
    path = os.path.join(os.path.dirname(os.path.dirname(detectron2.__file__)), "tests", "data",
                        "test_coco_evaluation.py")
    if not os.path.exists(path):
        pytest.skip(f"Detectron2's tests are not next to its package ({path}): install it from a checkout "
                    "(docs/testing.md)")
    name = "detectron2_tests_data_test_coco_evaluation"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


class _Taken(Exception):
    pass


def _fast_eval_experiments(module) -> dict:
    """The experiments ``test_fast_eval`` builds, as its own code builds them: the test
    runs until its loop over ``experiments`` starts, where a trace takes a copy and stops it."""
    fn = module.TestCOCOeval.test_fast_eval
    source, first = inspect.getsourcelines(fn)
    loop = first + next(i for i, line in enumerate(source) if "in experiments.items()" in line)
    taken = {}

    def local(frame, event, arg):
        if event == "line" and frame.f_lineno == loop:
            taken.update(copy.deepcopy(frame.f_locals["experiments"]))
            raise _Taken
        return local

    sys.settrace(lambda frame, event, arg: local if frame.f_code is fn.__code__ else None)
    try:
        fn(module.TestCOCOeval("test_fast_eval"))
    except _Taken:
        pass
    finally:
        sys.settrace(None)
    return taken


def _fast_eval_outcomes(module, experiments, tmp_path) -> dict:
    """Each experiment, IoU type and implementation (pycocotools' ``COCOeval`` and
    Detectron2's ``COCOeval_opt``, as the module names them now) run as the test runs
    them: ``COCO(file)``, ``loadRes``, the parameters, evaluate, accumulate, summarize.
    Gives the failing step and exception class name, or the precision and recall arrays
    and the stats."""
    out = {}
    for name, (dt, gt, params) in experiments.items():
        path = str(tmp_path / f"gt_{name}.json")
        with open(path, "w") as f:
            json.dump(gt, f)
        for iou_type in ("bbox", "segm", "keypoints"):
            for impl in ("COCOeval", "COCOeval_opt"):
                step = "COCO"
                try:
                    with contextlib.redirect_stdout(io.StringIO()):
                        coco = module.COCO(path)
                        step = "loadRes"
                        res = coco.loadRes(copy.deepcopy(dt))
                        step = "evaluation"
                        ev = getattr(module, impl)(coco, res, iou_type)
                        for key, value in params.items():
                            setattr(ev.params, key, value)
                        ev.evaluate()
                        ev.accumulate()
                        ev.summarize()
                except Exception as exc:  # noqa: BLE001 - compared by the test
                    out[name, iou_type, impl] = (step, type(exc).__name__)
                    continue
                out[name, iou_type, impl] = ("done", ev.eval["precision"], ev.eval["recall"], list(ev.stats))
    return out


def test_detectron2_fast_eval_experiments_give_pycocotools_names_and_numbers(tmp_path):
    """Detectron2's ``test_fast_eval`` (issue 40): ~50 inputs with one field removed, empty
    inputs and odd parameters.  With boundary_api swapped in, every step fails where it
    fails on pycocotools with an exception of the same class name (the test compares
    ``type(e).__name__``), or gives the same precision, recall and stats, bit for bit; and
    boundary_api warns about none of it (``UserWarning`` is an error here)."""
    module = _detectron2_test_module()
    experiments = _fast_eval_experiments(module)
    assert {"full", "empty_dt", "omit_dt_score", "omit_gt_area", "omit_gt_segmentation"} <= set(experiments)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        theirs = _fast_eval_outcomes(module, experiments, tmp_path)
        with boundary_api.swapped():
            assert module.COCOeval is boundary_api.COCOeval and module.COCO is boundary_api.COCO
            ours = _fast_eval_outcomes(module, experiments, tmp_path)
    assert module.COCOeval is not boundary_api.COCOeval
    assert list(ours) == list(theirs)
    failed = 0
    for key, want in theirs.items():
        got = ours[key]
        if want[0] != "done":
            failed += 1
            assert got == want, key
        else:
            assert got[0] == "done", (key, got)
            for a, b in zip(got[1:3], want[1:3]):
                assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True), key
            assert got[3] == want[3], key
    # (the experiments where pycocotools fails: missing fields, empty results, no IoU thresholds, ...)
    names = {want[1] for want in theirs.values() if want[0] != "done"}
    assert failed > 50 and {"KeyError", "IndexError"} <= names, (failed, names)
