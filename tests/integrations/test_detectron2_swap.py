"""Detectron2's own evaluators, unchanged, on boundary_api through boundary_api.swapped():
the same results as on pycocotools / lvis (optional tier, ``pytest -m detectron2``)."""
import contextlib
import io
import sys

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


def test_coco_evaluator_fast_impl_keeps_detectron2s_own_subclass(spy):
    """COCOeval_opt (the default use_fast_impl=True) was defined as a subclass of pycocotools'
    COCOeval when Detectron2 was imported: the swap does not change it."""
    theirs = _coco_results()
    with boundary_api.swapped():
        ours = _coco_results()
    assert spy == []
    for task in theirs:
        assert identical(ours[task], theirs[task]), task


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
