"""boundary_api.integrations.detectron2: the Detectron2 evaluators with a "boundary" task.

Detectron2 is installed from source, not from PyPI, so most environments
lack it.  Then importing ``boundary_api`` must not import torch or
Detectron2, and ``boundary_api.integrations.detectron2`` must fail with an ImportError
that says how to install Detectron2.

The behavioural tests of the subclasses (tasks, box-only and empty
predictions, dilation ratio, LVIS, distributed evaluation, ground truth
reused by later evaluators) take the ``d2`` fixture, which provides
Detectron2's evaluator classes and the helpers to register a dataset and
feed predictions; each runs twice:

* in the optional tier (``pytest -m detectron2``; skipped without it), on
  real Detectron2: datasets registered with ``register_coco_instances`` / ``register_lvis_instances``, predictions as a
  model's ``Instances`` through ``process()``, Detectron2's own ``evaluate()``;
* always, on a small stand-in for the parts of Detectron2's evaluators
  the subclasses build on (constructor, task derivation, in-place category
  remapping, ``evaluate()`` with gathering on the main process), written for
  these tests from Detectron2's documented behaviour.  It checks the thin
  layer's own logic, not Detectron2 itself.

``test_end_to_end_with_detectron2`` runs only with real Detectron2: a
registered COCO json dataset, ``Instances`` through ``process()``,
``evaluate()`` twice, as a trainer's periodic evaluation does.
"""
import contextlib
import copy
import importlib
import importlib.util
import io
import json
import logging
import math
import pickle
import subprocess
import sys
import textwrap

import pycocotools.mask as mask_util
import pytest

from boundary_api.instance.cache import cache_for
from boundary_api.integrations.d2_results import (COCO_METRICS, LVIS_METRICS, lvis_task_metrics,
                                                  release_shared_ground_truth)
from conftest import COCO_DT, COCO_GT, DATA, LVIS_DT, LVIS_GT, golden_cases, identical

HAVE_DETECTRON2 = importlib.util.find_spec("detectron2") is not None

GOLDEN = {c["name"]: c for c in golden_cases("instance_eval.json")}
COCO_BOUNDARY = GOLDEN["coco-boundary-0.02"]["stats"]
COCO_SEGM = GOLDEN["coco-segm"]["stats"]
LVIS_BOUNDARY = GOLDEN["lvis-boundary-0.02"]["results"]


def load_json(path):
    with open(path) as f:
        return json.load(f)


# ----------------------------------------------------------------------------
# without Detectron2
# ----------------------------------------------------------------------------
def test_import_boundary_api_imports_neither_torch_nor_detectron2(tmp_path):
    code = textwrap.dedent("""
        import sys
        import boundary_api, boundary_api.integrations.d2_results
        boundary_api.LVISEval  # the lazily imported LVIS part too
        heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "detectron2"))
        print(heavy)
    """)
    # outside the checkout, so that the installed package is imported
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path)
    assert out.stdout.strip() == "[]"


@pytest.mark.skipif(HAVE_DETECTRON2, reason="Detectron2 is installed")
def test_import_without_detectron2_says_how_to_install_it():
    sys.modules.pop("boundary_api.integrations.detectron2", None)
    with pytest.raises(ImportError) as info:
        importlib.import_module("boundary_api.integrations.detectron2")
    message = str(info.value)
    assert "pip install 'git+https://github.com/facebookresearch/detectron2.git'" in message
    assert "not on PyPI" in message
    assert "boundary_api.integrations.d2_results" in message
    assert "boundary_api.integrations.detectron2" not in sys.modules


# ----------------------------------------------------------------------------
# the subclasses on real Detectron2 if it is importable, else on a stand-in
# ----------------------------------------------------------------------------
STAND_IN = {
    "detectron2/__init__.py": "",
    "detectron2/utils/__init__.py": "",
    "detectron2/utils/comm.py": '''
        # one process, as Detectron2's comm without a process group;
        # D2.processes() simulates others for real Detectron2 and this alike
        def is_main_process():
            return True

        def synchronize():
            pass

        def gather(data, dst=0, group=None):
            return [data]
    ''',
    "detectron2/utils/file_io.py": '''
        class PathManager:
            @staticmethod
            def get_local_path(path):
                return path
    ''',
    "detectron2/utils/logger.py": '''
        def create_small_table(small_dict):
            # a one-row pipe table, floats with 3 decimals, as Detectron2's
            keys, values = tuple(zip(*small_dict.items()))
            cells = [f"{v:.3f}" if isinstance(v, float) else str(v) for v in values]
            widths = [max(len(k), len(c)) for k, c in zip(keys, cells)]
            head = "|" + "|".join(f" {k:^{w}} " for k, w in zip(keys, widths)) + "|"
            rule = "|" + "|".join(":" + "-" * w + ":" for w in widths) + "|"
            row = "|" + "|".join(f" {c:^{w}} " for c, w in zip(cells, widths)) + "|"
            return "\\n".join([head, rule, row])
    ''',
    "detectron2/evaluation/lvis_evaluation.py": '''
        """Stand-in for Detectron2's LVISEvaluator: its task derivation, id
        mapping and per-task evaluation with lvis' own LVISEval (which needs
        np.float, gone since numpy 1.24)."""
        import copy, itertools, logging

        from detectron2.data import MetadataCatalog
        from detectron2.evaluation import SEEN_TASKS, _Base
        from detectron2.utils.file_io import PathManager
        from detectron2.utils.logger import create_small_table

        class LVISEvaluator(_Base):
            def __init__(self, dataset_name, tasks=None, distributed=True, output_dir=None, *,
                         max_dets_per_image=None):
                from lvis import LVIS
                self._logger = logging.getLogger(__name__)
                self._tasks = tasks
                self._distributed = distributed
                self._output_dir = output_dir
                self._max_dets_per_image = max_dets_per_image
                self._metadata = MetadataCatalog.get(dataset_name)
                self._lvis_api = LVIS(PathManager.get_local_path(self._metadata.json_file))
                self._do_evaluation = len(self._lvis_api.get_ann_ids()) > 0

            def _eval_predictions(self, predictions):
                self._logger.info("Preparing results in the LVIS format ...")
                results = list(itertools.chain(*[x["instances"] for x in predictions]))
                tasks = self._tasks or self._tasks_from_predictions(results)
                if hasattr(self._metadata, "thing_dataset_id_to_contiguous_id"):
                    reverse = {v: k for k, v in self._metadata.thing_dataset_id_to_contiguous_id.items()}
                    for r in results:
                        r["category_id"] = reverse[r["category_id"]]
                else:
                    for r in results:  # in place, as Detectron2 does
                        r["category_id"] += 1
                if not self._do_evaluation:
                    return
                self._logger.info("Evaluating predictions ...")
                for task in sorted(tasks):
                    self._results[task] = _evaluate_predictions_on_lvis(
                        self._lvis_api, results, task, max_dets_per_image=self._max_dets_per_image,
                        class_names=self._metadata.get("thing_classes"))

        def _evaluate_predictions_on_lvis(lvis_gt, lvis_results, iou_type, max_dets_per_image=None,
                                          class_names=None):
            SEEN_TASKS.append(iou_type)
            metrics = ["AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf"]
            logger = logging.getLogger(__name__)
            if len(lvis_results) == 0:
                logger.warning("No predictions from the model!")
                return {m: float("nan") for m in metrics}
            if iou_type == "segm":
                lvis_results = copy.deepcopy(lvis_results)
                for c in lvis_results:
                    c.pop("bbox", None)
            if max_dets_per_image is None:
                max_dets_per_image = 300
            from lvis import LVISEval, LVISResults
            logger.info(f"Evaluating with max detections per image = {max_dets_per_image}")
            lvis_results = LVISResults(lvis_gt, lvis_results, max_dets=max_dets_per_image)
            lvis_eval = LVISEval(lvis_gt, lvis_results, iou_type)
            lvis_eval.run()
            lvis_eval.print_results()
            results = lvis_eval.get_results()
            results = {m: float(results[m] * 100) for m in metrics}
            logger.info("Evaluation results for {}: \\n".format(iou_type) + create_small_table(results))
            return results
    ''',
    "detectron2/data/__init__.py": '''
        import types

        class _Metadata(types.SimpleNamespace):
            def get(self, key, default=None):
                return getattr(self, key, default)

        class MetadataCatalog:
            _all = {}

            @classmethod
            def get(cls, name):
                return cls._all.setdefault(name, _Metadata())
    ''',
    "detectron2/evaluation/__init__.py": '''
        """Stand-in: what the Boundary evaluators rely on, nothing more."""
        import contextlib, copy, io, itertools, logging
        from collections import OrderedDict

        import pycocotools.coco

        from detectron2.data import MetadataCatalog
        from detectron2.utils import comm
        from detectron2.utils.file_io import PathManager

        SEEN_TASKS = []  # the tasks the stand-in evaluated, in order

        def _ap(gt, results, task):
            # a real number for the stand-in's own tasks, via boundary_api
            from boundary_api import COCOeval
            results = copy.deepcopy(results)
            if task == "segm":
                for r in results:
                    r.pop("bbox", None)
            with contextlib.redirect_stdout(io.StringIO()):
                ev = COCOeval(gt, gt.loadRes(results), task)
                ev.evaluate(); ev.accumulate(); ev.summarize()
            return {"AP": ev.stats[0] * 100}

        class _Base:
            def reset(self):
                self._predictions = []

            def evaluate(self, img_ids=None):
                if self._distributed:
                    comm.synchronize()
                    predictions = list(itertools.chain(*comm.gather(self._predictions, dst=0)))
                    if not comm.is_main_process():
                        return {}
                else:
                    predictions = self._predictions
                if not predictions:
                    return {}
                self._results = OrderedDict()
                if "instances" in predictions[0]:
                    if img_ids is None:
                        self._eval_predictions(predictions)
                    else:
                        self._eval_predictions(predictions, img_ids=img_ids)
                return copy.deepcopy(self._results)

            def _tasks_from_predictions(self, predictions):
                tasks = {"bbox"}
                if any("segmentation" in p for p in predictions):
                    tasks.add("segm")
                return sorted(tasks)

        class COCOEvaluator(_Base):
            def __init__(self, dataset_name, tasks=None, distributed=True, output_dir=None, *,
                         max_dets_per_image=None, use_fast_impl=True, kpt_oks_sigmas=(),
                         allow_cached_coco=True):
                self._logger = logging.getLogger("detectron2.evaluation.coco_evaluation")
                self._distributed = distributed
                self._output_dir = output_dir
                self._max_dets_per_image = ([1, 10, 100] if max_dets_per_image is None
                                            else [1, 10, max_dets_per_image])
                self._tasks = tasks
                self._metadata = MetadataCatalog.get(dataset_name)
                with contextlib.redirect_stdout(io.StringIO()):
                    self._coco_api = pycocotools.coco.COCO(
                        PathManager.get_local_path(self._metadata.json_file))
                self._do_evaluation = "annotations" in self._coco_api.dataset

            def _eval_predictions(self, predictions, img_ids=None):
                results = list(itertools.chain(*[x["instances"] for x in predictions]))
                tasks = self._tasks or self._tasks_from_predictions(results)
                mapping = self._metadata.get("thing_dataset_id_to_contiguous_id")
                if mapping is not None:  # in place, as Detectron2 does
                    reverse = {v: k for k, v in mapping.items()}
                    for r in results:
                        r["category_id"] = reverse[r["category_id"]]
                if not self._do_evaluation:
                    return
                for task in sorted(tasks):
                    assert task in {"bbox", "segm", "keypoints"}, f"Got unknown task: {task}!"
                    SEEN_TASKS.append(task)
                    if not results:  # Detectron2 does not run COCOeval without results
                        self._results[task] = {"AP": float("nan")}
                    elif task == "bbox":  # loadRes adds area/id/iscrowd to these very dicts
                        with contextlib.redirect_stdout(io.StringIO()):
                            self._coco_api.loadRes(results)
                        self._results[task] = {"AP": 0.0}
                    else:
                        self._results[task] = _ap(self._coco_api, results, task)

        class CityscapesInstanceEvaluator:  # imported by the Cityscapes hook; tested elsewhere
            pass

        # Detectron2's LVIS evaluator, whose bbox/segm tasks run lvis' own LVISEval
        from detectron2.evaluation.lvis_evaluation import LVISEvaluator  # noqa: E402
    ''',
}


COCO_NAME = "boundary_api_test_coco_100"
LVIS_NAME = "boundary_api_test_lvis_100"


class D2:
    """Detectron2 for the behavioural tests: the real one or the stand-in.

    ``module`` is boundary_api.integrations.detectron2 imported on top of it;
    ``COCOEvaluator`` / ``LVISEvaluator`` are Detectron2's base classes;
    ``seen_tasks`` lists the tasks Detectron2's own evaluation ran, in order.
    """

    def __init__(self, real, module, comm, COCOEvaluator, LVISEvaluator, seen_tasks):
        self.real = real
        self.module = module
        self.comm = comm
        self.COCOEvaluator = COCOEvaluator
        self.LVISEvaluator = LVISEvaluator
        self.seen_tasks = seen_tasks

    def register_coco(self, name):
        """Register the COCO test set; its metadata with the id mapping and class names."""
        if self.real:
            from detectron2.data import DatasetCatalog, MetadataCatalog
            from detectron2.data.datasets import register_coco_instances
            if name not in DatasetCatalog.list():
                register_coco_instances(name, {}, COCO_GT, DATA)
                # loading the json sets thing_classes and the id mapping
                with contextlib.redirect_stdout(io.StringIO()):
                    DatasetCatalog.get(name)
            return MetadataCatalog.get(name)
        from detectron2.data import MetadataCatalog
        gt = load_json(COCO_GT)
        cat_ids = sorted(c["id"] for c in gt["categories"])
        meta = MetadataCatalog.get(name)
        meta.json_file = COCO_GT
        meta.thing_dataset_id_to_contiguous_id = {cid: i for i, cid in enumerate(cat_ids)}
        meta.thing_classes = [next(c["name"] for c in gt["categories"] if c["id"] == cid)
                              for cid in cat_ids]
        return meta

    def register_lvis(self, name):
        """Register the LVIS test set (Detectron2's ids are its ids minus one)."""
        from detectron2.data import MetadataCatalog
        if self.real:
            from detectron2.data import DatasetCatalog
            from detectron2.data.datasets import register_lvis_instances
            if name not in DatasetCatalog.list():
                register_lvis_instances(name, {}, LVIS_GT, DATA)
            return MetadataCatalog.get(name)
        meta = MetadataCatalog.get(name)
        meta.json_file = LVIS_GT
        return meta

    def feed(self, ev, records):
        """Hand per-image records (see gathered()) to ``ev`` as inference does:
        reset(), then, with real Detectron2, each image's predictions as a
        model's ``Instances`` through process(); the stand-in has no process()
        and takes the records it would store."""
        ev.reset()
        if not self.real:
            ev._predictions.extend(records)
            return
        import numpy as np
        import torch
        from detectron2.structures import Boxes, Instances

        api = ev._coco_api if hasattr(ev, "_coco_api") else ev._lvis_api
        for rec in records:
            rs = rec["instances"]
            img = api.imgs[rec["image_id"]]
            inst = Instances((img["height"], img["width"]))
            xywh = np.array([r["bbox"] for r in rs], np.float64).reshape(-1, 4)
            xyxy = np.hstack([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]])
            inst.pred_boxes = Boxes(torch.from_numpy(xyxy).float())
            # float64 scores survive process() exactly, so the golden numbers apply
            inst.scores = torch.tensor([r["score"] for r in rs], dtype=torch.float64)
            inst.pred_classes = torch.tensor([r["category_id"] for r in rs], dtype=torch.int64)
            if rs and "segmentation" in rs[0]:
                masks = np.stack([mask_util.decode(r["segmentation"]) for r in rs])
                inst.pred_masks = torch.from_numpy(masks.astype(bool))
            ev.process([{"image_id": rec["image_id"], "height": img["height"], "width": img["width"]}],
                       [{"instances": inst}])
        assert len(ev._predictions) == len(records)

    @contextlib.contextmanager
    def processes(self, rank=0, others=()):
        """Simulate a process group: this process has ``rank``, and to rank 0
        the other processes send ``others`` (their lists of predictions).

        Detectron2's comm.synchronize/gather/is_main_process are replaced, for
        real Detectron2 as for the stand-in: no process group is started, but
        the evaluate() that gathers and returns early is Detectron2's own.
        """
        def gather(data, dst=0, group=None):
            return [data, *others] if rank == dst else []

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(self.comm, "synchronize", lambda: None)
            mp.setattr(self.comm, "gather", gather)
            mp.setattr(self.comm, "is_main_process", lambda: rank == 0)
            yield


def real_detectron2(monkeypatch):
    from detectron2.evaluation import COCOEvaluator, LVISEvaluator, lvis_evaluation
    from detectron2.utils import comm

    module = importlib.import_module("boundary_api.integrations.detectron2")
    seen_tasks = []
    # which tasks Detectron2 evaluates itself: a spy on the functions it runs per task
    derive = COCOEvaluator._derive_coco_results

    def derive_spy(self, coco_eval, iou_type, class_names=None):
        seen_tasks.append(iou_type)
        return derive(self, coco_eval, iou_type, class_names=class_names)

    on_lvis = lvis_evaluation._evaluate_predictions_on_lvis

    def on_lvis_spy(lvis_gt, lvis_results, iou_type, *args, **kwargs):
        seen_tasks.append(iou_type)
        return on_lvis(lvis_gt, lvis_results, iou_type, *args, **kwargs)

    monkeypatch.setattr(COCOEvaluator, "_derive_coco_results", derive_spy)
    monkeypatch.setattr(lvis_evaluation, "_evaluate_predictions_on_lvis", on_lvis_spy)
    return D2(True, module, comm, COCOEvaluator, LVISEvaluator, seen_tasks)


def _forget_detectron2():
    """Take Detectron2 (real or stand-in) and the hooks out of sys.modules; return them."""
    import boundary_api.integrations

    names = [m for m in sys.modules if m.split(".")[0] == "detectron2"
             or m.startswith("boundary_api.integrations.detectron2")]
    boundary_api.integrations.__dict__.pop("detectron2", None)
    return {name: sys.modules.pop(name) for name in names}


@pytest.fixture(params=["stand-in", pytest.param("detectron2", marks=pytest.mark.detectron2)])
def d2(request, tmp_path, monkeypatch):
    """boundary_api.integrations.detectron2 on the stand-in (imported from tmp_path and
    forgotten afterwards), or on real Detectron2 (the optional tier, ``-m detectron2``)."""
    real = request.param == "detectron2"
    if real and not HAVE_DETECTRON2:
        pytest.skip("Detectron2 is not installed")
    release_shared_ground_truth()
    saved = _forget_detectron2()
    try:
        if real:  # the real modules, if a stand-in test ran before
            sys.modules.update({k: v for k, v in saved.items() if k.split(".")[0] == "detectron2"})
            yield real_detectron2(monkeypatch)
        else:
            for rel, text in STAND_IN.items():
                path = tmp_path / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(textwrap.dedent(text))
            monkeypatch.syspath_prepend(str(tmp_path))
            module = importlib.import_module("boundary_api.integrations.detectron2")
            evaluation = importlib.import_module("detectron2.evaluation")
            yield D2(False, module, importlib.import_module("detectron2.utils.comm"),
                     evaluation.COCOEvaluator, evaluation.LVISEvaluator, evaluation.SEEN_TASKS)
    finally:
        _forget_detectron2()
        sys.modules.update(saved)
        release_shared_ground_truth()


def gathered(results, to_contiguous, with_masks=True):
    """Per-image records as Detectron2's process() stores them."""
    by_image = {}
    for r in results:
        rec = {"image_id": r["image_id"], "category_id": to_contiguous(r["category_id"]),
               "bbox": [float(v) for v in mask_util.toBbox(r["segmentation"])], "score": r["score"]}
        if with_masks:
            rec["segmentation"] = dict(r["segmentation"])
        by_image.setdefault(r["image_id"], []).append(rec)
    return [{"image_id": i, "instances": v} for i, v in sorted(by_image.items())]


def coco_predictions(meta, **kw):
    mapping = meta.thing_dataset_id_to_contiguous_id
    return gathered(load_json(COCO_DT), mapping.__getitem__, **kw)


def lvis_predictions():
    return gathered(load_json(LVIS_DT), lambda c: c - 1)


def test_coco_evaluator_adds_boundary_next_to_segm(d2):
    """Also gathers from a second, simulated process (see D2.processes)."""
    meta = d2.register_coco(COCO_NAME)
    ev = d2.module.BoundaryCOCOEvaluator(COCO_NAME, output_dir=None)
    assert isinstance(ev, d2.COCOEvaluator)
    d2.feed(ev, coco_predictions(meta))
    # rank 0 holds half the images, the other rank the rest
    mine, other = ev._predictions[::2], ev._predictions[1::2]
    ev._predictions = mine
    with d2.processes(rank=0, others=[other]):
        results = ev.evaluate()
    assert list(results) == ["bbox", "segm", "boundary"]
    assert d2.seen_tasks[-2:] == ["bbox", "segm"]  # Detectron2 never sees "boundary"
    boundary = results["boundary"]
    for i, name in enumerate(COCO_METRICS):
        assert boundary[name] == pytest.approx(100 * COCO_BOUNDARY[i], abs=1e-10), name
    assert results["segm"]["AP"] == pytest.approx(100 * COCO_SEGM[0], abs=1e-10)
    assert set(boundary) == set(COCO_METRICS) | {"AP-" + n for n in meta.thing_classes}
    assert math.isnan(boundary["AP-fire hydrant"])  # no ground truth in these images


def test_periodic_evaluation_reuses_ground_truth_boundaries(d2):
    meta = d2.register_coco(COCO_NAME)
    first = d2.module.BoundaryCOCOEvaluator(COCO_NAME, distributed=False)
    d2.feed(first, coco_predictions(meta))
    ap = first.evaluate()["boundary"]["AP"]
    computed = cache_for(first._coco_api).computed["boundaries"]
    assert computed > 0
    # the trainer builds a new evaluator for every evaluation
    second = d2.module.BoundaryCOCOEvaluator(COCO_NAME, distributed=False)
    assert second._coco_api is first._coco_api
    d2.feed(second, coco_predictions(meta))
    assert second.evaluate()["boundary"]["AP"] == ap
    assert cache_for(second._coco_api).computed["boundaries"] == computed


def test_only_the_main_process_evaluates(d2):
    """This process is rank 1 of a simulated process group (see D2.processes)."""
    meta = d2.register_coco(COCO_NAME)
    with d2.processes(rank=1):
        ev = d2.module.BoundaryCOCOEvaluator(COCO_NAME, distributed=True)
        d2.feed(ev, coco_predictions(meta))
        assert ev.evaluate() == {}
        assert d2.seen_tasks == []
        # nothing kept alive on the other processes
        main = d2.module.BoundaryCOCOEvaluator(COCO_NAME, distributed=False)
        assert main._coco_api is not ev._coco_api


@pytest.mark.parametrize("tasks, expected, seen", [
    (None, ["bbox", "segm", "boundary"], ["bbox", "segm"]),
    (("bbox",), ["bbox"], ["bbox"]),
    (("segm",), ["segm", "boundary"], ["segm"]),
    (("bbox", "boundary"), ["bbox", "boundary"], ["bbox"]),
    (("boundary",), ["boundary"], []),
])
def test_tasks(d2, tasks, expected, seen):
    meta = d2.register_coco(COCO_NAME)
    ev = d2.module.BoundaryCOCOEvaluator(COCO_NAME, tasks, False, dilation_ratio=0.02, max_dets_per_image=100)
    d2.feed(ev, coco_predictions(meta))
    del d2.seen_tasks[:]
    results = ev.evaluate()
    assert list(results) == expected
    assert d2.seen_tasks == seen
    if "boundary" in expected:
        assert results["boundary"]["AP"] == pytest.approx(100 * COCO_BOUNDARY[0], abs=1e-10)


def test_box_only_predictions_have_no_boundary_task(d2, caplog):
    meta = d2.register_coco(COCO_NAME)
    ev = d2.module.BoundaryCOCOEvaluator(COCO_NAME, distributed=False)
    d2.feed(ev, coco_predictions(meta, with_masks=False))
    assert list(ev.evaluate()) == ["bbox"]
    explicit = d2.module.BoundaryCOCOEvaluator(COCO_NAME, ("bbox", "boundary"), False)
    d2.feed(explicit, coco_predictions(meta, with_masks=False))
    assert list(explicit.evaluate()) == ["bbox"]
    assert "needs mask predictions" in caplog.text


def test_empty_predictions(d2):
    d2.register_coco(COCO_NAME)
    ev = d2.module.BoundaryCOCOEvaluator(COCO_NAME, ("bbox", "segm"), False)
    d2.feed(ev, [{"image_id": 42, "instances": []}])
    assert ev._predictions == [{"image_id": 42, "instances": []}]
    boundary = ev.evaluate()["boundary"]
    assert list(boundary) == list(COCO_METRICS)
    assert all(math.isnan(v) for v in boundary.values())


def test_dilation_ratio(d2):
    meta = d2.register_coco(COCO_NAME)
    ev = d2.module.BoundaryCOCOEvaluator(COCO_NAME, distributed=False, dilation_ratio=0.005)
    d2.feed(ev, coco_predictions(meta))
    assert ev.evaluate()["boundary"]["AP"] == pytest.approx(
        100 * GOLDEN["coco-boundary-0.005"]["stats"][0], abs=1e-10)
    with pytest.raises(ValueError):
        d2.module.BoundaryCOCOEvaluator(COCO_NAME, dilation_ratio=-1)


LVIS_LOGGER = "detectron2.evaluation.lvis_evaluation"


def lvis_direct(records, task, max_dets=300):
    """Detectron2's numbers for an LVIS task, computed directly with
    boundary_api.LVISEval on the results Detectron2 hands to LVIS."""
    from boundary_api import LVIS, LVISEval, LVISResults
    results = [dict(r, category_id=r["category_id"] + 1) for rec in records for r in rec["instances"]]
    if task == "segm":
        for r in results:
            r.pop("bbox", None)
    gt = LVIS(LVIS_GT)
    ev = LVISEval(gt, LVISResults(gt, results, max_dets=max_dets), iou_type=task)
    ev.run()
    return {m: float(ev.get_results()[m] * 100) for m in LVIS_METRICS}


def evaluate_lvis(d2, cls, records, caplog, **kwargs):
    """``cls(...)`` fed ``records`` and evaluated: the evaluator, its results,
    the lines it logged to Detectron2's LVIS logger, and a copy of the
    predictions it held before evaluating (which rewrites their category ids)."""
    ev = cls(LVIS_NAME, distributed=False, **kwargs)
    d2.feed(ev, copy.deepcopy(records))
    fed = copy.deepcopy(ev._predictions)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=LVIS_LOGGER), contextlib.redirect_stdout(io.StringIO()):
        results = ev.evaluate()  # LVIS prints its tables
    lines = [r.getMessage() for r in caplog.records if r.name == LVIS_LOGGER]
    return ev, results, lines, fed


def test_lvis_evaluator_gives_bbox_segm_and_boundary_on_any_numpy(d2, caplog):
    """Detectron2's own bbox/segm evaluation calls lvis 0.5.3's LVISEval, which
    uses np.float (removed in numpy 1.24); the Boundary evaluator runs those
    tasks through boundary_api.LVISEval, so nothing is patched here."""
    from detectron2.utils.logger import create_small_table

    d2.register_lvis(LVIS_NAME)
    records = lvis_predictions()
    del d2.seen_tasks[:]
    ev, results, lines, fed = evaluate_lvis(d2, d2.module.BoundaryLVISEvaluator, records, caplog,
                                            max_dets_per_image=300)
    assert isinstance(ev, d2.LVISEvaluator)
    assert list(results) == ["bbox", "segm", "boundary"]
    assert d2.seen_tasks == []  # Detectron2's lvis-based evaluation never ran
    for task in ("bbox", "segm"):
        assert list(results[task]) == list(LVIS_METRICS)
        assert identical(results[task], lvis_direct(fed, task)), task
        assert f"Evaluation results for {task}: \n" + create_small_table(results[task]) in lines
    assert results["segm"]["AP"] == pytest.approx(100 * GOLDEN["lvis-segm"]["results"]["AP"], abs=1e-10)
    assert lines.count("Evaluating with max detections per image = 300") == 2
    assert list(results["boundary"]) == list(LVIS_METRICS)
    for name in LVIS_METRICS:
        assert results["boundary"][name] == pytest.approx(100 * LVIS_BOUNDARY[name], abs=1e-10), name
    computed = cache_for(ev._lvis_api).computed["boundaries"]
    again = d2.module.BoundaryLVISEvaluator(LVIS_NAME, distributed=False)
    assert again._lvis_api is ev._lvis_api
    d2.feed(again, lvis_predictions())
    with contextlib.redirect_stdout(io.StringIO()):
        assert identical(again.evaluate()["segm"], results["segm"])
    assert cache_for(ev._lvis_api).computed["boundaries"] == computed


@pytest.mark.slow
def test_lvis_evaluator_equals_detectron2_with_lvis_own_evaluation(d2, caplog, monkeypatch):
    """Where lvis' LVISEval runs (np.float restored for this test only), the
    plain Detectron2 evaluator's bbox/segm results and logged lines are the
    Boundary evaluator's, which does not need it."""
    import numpy as np

    d2.register_lvis(LVIS_NAME)
    records = lvis_predictions()
    if "float" not in np.__dict__:
        # what users of Detectron2 get on numpy >= 1.24
        with pytest.raises(AttributeError, match="float"):
            evaluate_lvis(d2, d2.LVISEvaluator, records, caplog)
    _, ours_results, ours_lines, _ = evaluate_lvis(d2, d2.module.BoundaryLVISEvaluator, records, caplog)
    monkeypatch.setattr(np, "float", float, raising=False)
    del d2.seen_tasks[:]
    _, theirs_results, theirs_lines, _ = evaluate_lvis(d2, d2.LVISEvaluator, records, caplog)
    assert d2.seen_tasks == ["bbox", "segm"]
    assert list(theirs_results) == ["bbox", "segm"]
    for task in ("bbox", "segm"):
        assert identical(ours_results[task], theirs_results[task]), task
    # Detectron2's lines, in order, among the Boundary evaluator's
    rest = iter(ours_lines)
    assert all(any(line == mine for mine in rest) for line in theirs_lines), (theirs_lines, ours_lines)


@pytest.mark.parametrize("tasks, expected", [
    (("bbox",), ["bbox"]),
    (("segm",), ["segm", "boundary"]),
    (("boundary",), ["boundary"]),
])
def test_lvis_tasks(d2, caplog, tasks, expected):
    d2.register_lvis(LVIS_NAME)
    del d2.seen_tasks[:]
    _, results, _, _ = evaluate_lvis(d2, d2.module.BoundaryLVISEvaluator, lvis_predictions(), caplog,
                                     tasks=tasks)
    assert list(results) == expected
    assert d2.seen_tasks == []
    if "boundary" in expected:
        assert results["boundary"]["AP"] == pytest.approx(100 * LVIS_BOUNDARY["AP"], abs=1e-10)


def test_lvis_task_metrics_without_results_or_with_other_tasks():
    import lvis

    gt = lvis.LVIS(LVIS_GT)
    empty = lvis_task_metrics(gt, [], "segm")
    assert list(empty) == list(LVIS_METRICS) and all(math.isnan(v) for v in empty.values())
    with pytest.raises(ValueError, match="keypoints"):
        lvis_task_metrics(gt, [], "keypoints")


# ----------------------------------------------------------------------------
# the real thing
# ----------------------------------------------------------------------------
@pytest.mark.detectron2
def test_end_to_end_with_detectron2(tmp_path):
    pytest.importorskip("detectron2")
    import numpy as np
    import torch
    from detectron2.data import DatasetCatalog, MetadataCatalog
    from detectron2.data.datasets import register_coco_instances
    from detectron2.structures import Boxes, Instances

    sys.modules.pop("boundary_api.integrations.detectron2", None)
    from boundary_api.integrations.detectron2 import BoundaryCOCOEvaluator

    name = "boundary_api_test_coco_val2014_100"
    if name not in DatasetCatalog.list():
        register_coco_instances(name, {}, COCO_GT, str(tmp_path))
    DatasetCatalog.get(name)  # loads the json: thing_classes and the id mapping
    meta = MetadataCatalog.get(name)
    to_contiguous = meta.thing_dataset_id_to_contiguous_id
    gt = load_json(COCO_GT)
    images = {img["id"]: img for img in gt["images"]}
    by_image = {}
    for r in load_json(COCO_DT):
        by_image.setdefault(r["image_id"], []).append(r)

    def evaluate_once():
        ev = BoundaryCOCOEvaluator(name, output_dir=str(tmp_path / "out"))
        ev.reset()
        for img_id, img in images.items():
            rs = by_image.get(img_id, [])
            h, w = img["height"], img["width"]
            inst = Instances((h, w))
            masks = np.stack([mask_util.decode(r["segmentation"]) for r in rs]) if rs else \
                np.zeros((0, h, w), np.uint8)
            xywh = np.array([mask_util.toBbox(r["segmentation"]) for r in rs], np.float64).reshape(-1, 4)
            inst.pred_masks = torch.from_numpy(masks.astype(bool))
            inst.pred_boxes = Boxes(torch.from_numpy(np.hstack([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]])).float())
            inst.scores = torch.tensor([r["score"] for r in rs], dtype=torch.float64)
            inst.pred_classes = torch.tensor([to_contiguous[r["category_id"]] for r in rs], dtype=torch.int64)
            ev.process([{"image_id": img_id, "height": h, "width": w}], [{"instances": inst}])
        with contextlib.redirect_stdout(io.StringIO()):
            return ev, ev.evaluate()

    first, results = evaluate_once()
    assert "segm" in results and "boundary" in results
    boundary = results["boundary"]
    for i, metric in enumerate(COCO_METRICS):
        assert boundary[metric] == pytest.approx(100 * COCO_BOUNDARY[i], abs=1e-10), metric
    # Detectron2's own segm number (its C++ COCOeval), not boundary_api's
    assert results["segm"]["AP"] == pytest.approx(100 * COCO_SEGM[0], abs=1e-6)
    assert set(boundary) == set(results["segm"])
    computed = cache_for(first._coco_api).computed["boundaries"]
    second, again = evaluate_once()
    assert second._coco_api is first._coco_api
    assert cache_for(second._coco_api).computed["boundaries"] == computed
    assert identical(again["boundary"], boundary)
    release_shared_ground_truth()


# ------------------------------------------------------------------ pickling
CLONES = {"pickle": lambda obj: pickle.loads(pickle.dumps(obj)), "deepcopy": copy.deepcopy}


@pytest.mark.parametrize("clone", CLONES)
@pytest.mark.parametrize("dataset", ["coco", "lvis"])
def test_evaluators_pickle_before_and_after_evaluation(d2, dataset, clone):
    """The evaluators (with their predictions and shared ground truth) pickle
    and copy before evaluate() and after it; the clones give the same
    numbers (issue 25; the other evaluators: tests/test_pickling.py)."""
    if dataset == "coco":
        meta = d2.register_coco(COCO_NAME)
        make, records = (lambda: d2.module.BoundaryCOCOEvaluator(COCO_NAME, distributed=False),
                         lambda: coco_predictions(meta))
    else:
        d2.register_lvis(LVIS_NAME)
        make, records = (lambda: d2.module.BoundaryLVISEvaluator(LVIS_NAME, distributed=False),
                         lvis_predictions)
    ev = make()
    d2.feed(ev, records())
    before = CLONES[clone](ev)
    results = ev.evaluate()
    after = CLONES[clone](ev)
    # Detectron2 remaps the category ids of its predictions in place: an
    # evaluated evaluator goes on after reset() and new predictions, as in training
    d2.feed(after, records())
    for other in (before, after):
        got = other.evaluate()
        assert list(got) == list(results)
        for task in results:
            assert identical(got[task], results[task]), task
