"""BoundaryCityscapesInstanceEvaluator: Detectron2's CityscapesInstanceEvaluator plus Boundary AP.

Every test runs twice: on a stand-in for the parts of Detectron2 the subclass still
inherits (``__init__`` keeps the metadata and a logger, ``reset()`` makes a temporary
folder shared by all processes), written for these tests from Detectron2's documented
behaviour, and, in the optional tier (``pytest -m detectron2``, skipped without it), on
real Detectron2: ``Instances`` through ``process()``, Detectron2's own catalog and comm.
``process()`` and ``evaluate()`` are the subclass's own (Detectron2's import a module that
exists only inside Meta); the ``"segm"`` part runs the real cityscapesScripts.
Predictions are the golden set's, so both tasks have known values.
"""
import copy
import importlib
import importlib.util
import logging
import os
import pickle
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

from conftest import DATA, golden_cases

HAVE_DETECTRON2 = importlib.util.find_spec("detectron2") is not None
VISIBLE = os.path.join(DATA, "cityscapes", "visible")
GOLDEN = {c["name"]: c["results"] for c in golden_cases("cityscapes_instance_eval.json")}
CLASSES = ["person", "rider", "car", "truck", "bus", "train", "motorcycle", "bicycle"]
LABEL_IDS = {24: "person", 25: "rider", 26: "car", 27: "truck", 28: "bus", 31: "train", 32: "motorcycle",
             33: "bicycle"}

STAND_IN = {
    "detectron2/__init__.py": "",
    "detectron2/utils/__init__.py": "",
    "detectron2/utils/logger.py": '''
def create_small_table(small_dict):  # imported by boundary_api.integrations.detectron2
    return " ".join(f"{k}={v}" for k, v in small_dict.items())
''',
    "detectron2/utils/comm.py": '''
        RANK = [0]
        CALLS = []

        def get_rank():
            return RANK[0]

        def is_main_process():
            return RANK[0] == 0

        def synchronize():
            CALLS.append("synchronize")

        def all_gather(data, group=None):
            return [data]
    ''',
    "detectron2/utils/file_io.py": '''
        class PathManager:
            @staticmethod
            def get_local_path(path):
                return path
    ''',
    "detectron2/data/__init__.py": '''
        import types

        class MetadataCatalog:
            _all = {}

            @classmethod
            def get(cls, name):
                return cls._all.setdefault(name, types.SimpleNamespace())
    ''',
    "detectron2/evaluation/__init__.py": '''
        """Stand-in: Detectron2's CityscapesInstanceEvaluator as the subclass relies on it."""
        import glob, logging, os, tempfile
        from collections import OrderedDict

        import numpy as np
        from PIL import Image

        from detectron2.data import MetadataCatalog
        from detectron2.utils import comm
        from detectron2.utils.file_io import PathManager

        class COCOEvaluator:  # imported by the COCO/LVIS hooks; not used here
            pass

        class LVISEvaluator:
            pass

        class CityscapesInstanceEvaluator:
            def __init__(self, dataset_name):
                self._metadata = MetadataCatalog.get(dataset_name)
                self._cpu_device = "cpu"
                self._logger = logging.getLogger("detectron2.evaluation.cityscapes_evaluation")

            def reset(self):
                self._working_dir = tempfile.TemporaryDirectory(prefix="cityscapes_eval_")
                self._temp_dir = comm.all_gather(self._working_dir.name)[0]

            def process(self, inputs, outputs):  # Detectron2's: fails outside Meta
                from deeplearning.projects.cityscapesApi.cityscapesscripts.helpers.labels import name2label

            def evaluate(self):  # Detectron2's: fails outside Meta
                import deeplearning.projects.cityscapesApi.cityscapesscripts.evaluation.evalInstanceLevelSemanticLabeling
    ''',
}


def _forget_detectron2():
    """Take Detectron2 (real or stand-in) and the hooks out of sys.modules; return them."""
    names = [m for m in sys.modules if m.split(".")[0] == "detectron2"
             or m.startswith("boundary_api.integrations.detectron2")]
    return {name: sys.modules.pop(name) for name in names}


@pytest.fixture(scope="module", params=["stand-in", pytest.param("detectron2", marks=pytest.mark.detectron2)])
def d2(request, tmp_path_factory):
    """boundary_api.integrations.detectron2 on the stand-in, or on real Detectron2 (optional tier)."""
    real = request.param == "detectron2"
    if real and not HAVE_DETECTRON2:
        pytest.skip("Detectron2 is not installed")
    saved = _forget_detectron2()
    added = None
    if not real:
        root = tmp_path_factory.mktemp("d2_stand_in")
        for rel, text in STAND_IN.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        sys.path.insert(0, str(root))
        added = str(root)
    else:  # the real modules, if a stand-in test ran before
        sys.modules.update({k: v for k, v in saved.items() if k.split(".")[0] == "detectron2"})
    module = importlib.import_module("boundary_api.integrations.detectron2")
    module.REAL = real
    yield module
    _forget_detectron2()
    if added:
        sys.path.remove(added)
    sys.modules.update(saved)


def register(name):
    from detectron2.data import MetadataCatalog

    meta = MetadataCatalog.get(name)
    meta.thing_classes = CLASSES
    meta.gt_dir = os.path.join(VISIBLE, "gtFine", "val")
    return meta


class StandInInstances:
    """What the subclass's process() reads of Detectron2's ``Instances`` (stand-in tier)."""

    def __init__(self, pred_classes, scores, pred_masks):
        self.pred_classes, self.scores, self.pred_masks = pred_classes, scores, pred_masks

    def to(self, device):
        return self

    def __len__(self):
        return len(self.scores)


def golden_predictions():
    """The golden set's predictions as model outputs, per ground truth image."""
    out = []
    gt_dir = os.path.join(VISIBLE, "gtFine", "val")
    for city in sorted(os.listdir(gt_dir)):
        for f in sorted(os.listdir(os.path.join(gt_dir, city))):
            core = f[: -len("_gtFine_instanceIds.png")]
            lines = open(os.path.join(VISIBLE, "results", core + "_pred.txt")).read().split("\n")
            cls, scores, masks = [], [], []
            for line in filter(None, lines):
                rel, lab, score = line.split()
                if int(lab) not in LABEL_IDS:
                    continue
                cls.append(CLASSES.index(LABEL_IDS[int(lab)]))
                scores.append(float(score))
                masks.append(np.asarray(Image.open(os.path.join(VISIBLE, "results", rel))) != 0)
            out.append(({"file_name": os.path.join("leftImg8bit", city, core + "_leftImg8bit.png")},
                        {"instances": {"pred_classes": cls, "scores": scores, "pred_masks": masks}}))
    return out


def feed(d2, ev, preds):
    ev.reset()
    for inp, out in preds:
        feed_one(d2, ev, inp, out)


def feed_one(d2, ev, inp, out):
    """Hand one image's predictions to ``ev.process()``."""
    i = out["instances"]
    masks = np.stack(i["pred_masks"]) if i["pred_masks"] else np.zeros((0, 1, 1), bool)
    if d2.REAL:
        import torch
        from detectron2.structures import Instances

        inst = Instances(masks.shape[1:])
        inst.pred_classes = torch.tensor(i["pred_classes"], dtype=torch.int64)
        inst.scores = torch.tensor(i["scores"], dtype=torch.float64)
        inst.pred_masks = torch.from_numpy(masks)
    else:
        inst = StandInInstances(i["pred_classes"], i["scores"], list(masks))
    ev.process([inp], [{"instances": inst}])


def test_segm_and_boundary(d2):
    register("bapi_cityscapes_visible")
    ev = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible")
    feed(d2, ev, golden_predictions())
    temp = ev._temp_dir
    res = ev.evaluate()
    segm, bnd = GOLDEN["visible_segm_0.005"], GOLDEN["visible_boundary_0.005"]
    assert res["segm"]["AP"] == pytest.approx(segm["AP"] * 100, abs=1e-9)
    assert res["segm"]["AP50"] == pytest.approx(segm["AP50"] * 100, abs=1e-9)
    assert list(res["boundary"])[:2] == ["AP", "AP50"]
    assert res["boundary"]["AP"] == pytest.approx(bnd["AP"] * 100, abs=1e-9)
    assert res["boundary"]["AP50"] == pytest.approx(bnd["AP50"] * 100, abs=1e-9)
    for name in CLASSES:
        want = bnd["classes"][name]["ap"]
        got = res["boundary"][f"AP-{name}"]
        assert (want is None and np.isnan(got)) or got == pytest.approx(want * 100, abs=1e-9)
    assert not os.path.exists(temp)  # Detectron2's cleanup still runs


def test_dilation_ratio_and_options(d2):
    register("bapi_cityscapes_visible")
    ev = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible", dilation_ratio=0.01, num_threads=1)
    feed(d2, ev, golden_predictions())
    assert ev.evaluate()["boundary"]["AP"] == pytest.approx(GOLDEN["visible_boundary_0.01"]["AP"] * 100, abs=1e-9)
    with pytest.raises(ValueError, match="dilation_ratio"):
        d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible", dilation_ratio=-0.1)


def test_other_ranks_return_none_and_do_not_evaluate(d2, monkeypatch):
    if d2.REAL:
        pytest.skip("simulates ranks on the stand-in's comm")
    from detectron2.utils import comm

    register("bapi_cityscapes_visible")
    ev = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible")
    feed(d2, ev, golden_predictions()[:2])
    monkeypatch.setattr(ev, "_evaluate_boundary", lambda: pytest.fail("evaluated on rank 1"))
    comm.CALLS.clear()
    comm.RANK[0] = 1
    try:
        assert ev.evaluate() is None
    finally:
        comm.RANK[0] = 0
    assert comm.CALLS == ["synchronize"]  # the barrier of Detectron2's evaluate(), as on rank 0
    ev._working_dir.cleanup()


def test_missing_prediction_file_is_a_clear_error(d2):
    register("bapi_cityscapes_visible")
    ev = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible")
    feed(d2, ev, golden_predictions()[:3])  # 9 ground truth images have no predictions
    with pytest.raises(ValueError, match="no prediction file"):
        ev.evaluate()
    ev._working_dir.cleanup()


def test_exported_from_the_detectron2_paths(d2):
    assert "BoundaryCityscapesInstanceEvaluator" in d2.__all__
    from boundary_api.integrations.detectron2_cityscapes import BoundaryCityscapesInstanceEvaluator

    assert d2.BoundaryCityscapesInstanceEvaluator is BoundaryCityscapesInstanceEvaluator


def test_process_writes_the_files_detectron2_writes(d2):
    register("bapi_cityscapes_visible")
    ev = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible")
    preds = golden_predictions()[:1]
    feed(d2, ev, preds)
    inp, out = preds[0]
    base = os.path.splitext(os.path.basename(inp["file_name"]))[0]
    lines = open(os.path.join(ev._temp_dir, base + "_pred.txt")).read().splitlines()
    i = out["instances"]
    assert len(lines) == len(i["scores"]) > 0
    for k, line in enumerate(lines):
        name = CLASSES[i["pred_classes"][k]]
        png, label_id, score = line.split()
        assert png == f"{base}_{k}_{name}.png"
        assert LABEL_IDS[int(label_id)] == name
        assert float(score) == pytest.approx(i["scores"][k], abs=1e-6)
        mask = np.asarray(Image.open(os.path.join(ev._temp_dir, png)))
        assert set(np.unique(mask)) <= {0, 255} and np.array_equal(mask == 255, i["pred_masks"][k])
    ev._working_dir.cleanup()


@pytest.mark.slow
def test_known_upstream_breakages_are_worked_around_and_logged(d2, caplog, tmp_path, monkeypatch):
    import cityscapesscripts.evaluation.evalInstanceLevelSemanticLabeling as cs_eval

    monkeypatch.chdir(tmp_path)  # cityscapesScripts writes matches.json to the working directory
    writer = cs_eval.writeDict2JSON
    had_in1d = hasattr(np, "in1d")
    register("bapi_cityscapes_visible")
    ev = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible")
    feed(d2, ev, golden_predictions())
    with caplog.at_level(logging.INFO):
        res = ev.evaluate()
    assert list(res) == ["segm", "boundary"]
    assert res["segm"]["AP"] == pytest.approx(GOLDEN["visible_segm_0.005"]["AP"] * 100, abs=1e-9)
    assert "public package" in caplog.text and "exists only inside Meta" in caplog.text
    if not had_in1d:
        assert "np.in1d" in caplog.text
    assert hasattr(np, "in1d") == had_in1d and cs_eval.writeDict2JSON is writer  # put back
    assert os.listdir(tmp_path) == []  # matches.json went to the removed temporary folder


def test_a_failing_cityscapes_scripts_keeps_the_boundary_result(d2, caplog, monkeypatch):
    import cityscapesscripts.evaluation.evalInstanceLevelSemanticLabeling as cs_eval

    def broken(*args, **kwargs):
        raise RuntimeError("cityscapesScripts broke")

    monkeypatch.setattr(cs_eval, "evaluateImgLists", broken)
    register("bapi_cityscapes_visible")
    ev = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible")
    feed(d2, ev, golden_predictions())
    temp = ev._temp_dir
    with caplog.at_level(logging.INFO):
        res = ev.evaluate()
    assert list(res) == ["boundary"]
    assert res["boundary"]["AP"] == pytest.approx(GOLDEN["visible_boundary_0.005"]["AP"] * 100, abs=1e-9)
    assert "cityscapesScripts' evaluation failed" in caplog.text and "cityscapesScripts broke" in caplog.text
    assert not os.path.exists(temp)


@pytest.mark.parametrize("clone", ["pickle", "deepcopy"])
def test_evaluator_pickles_with_its_prediction_files(d2, clone):
    """A clone (made mid-stream or before evaluate()) has a temporary
    folder of its own with the files written so far: it goes on, and
    evaluates, independently of the original (issue 25; the other
    evaluators: tests/test_pickling.py)."""
    cloned = {"pickle": lambda o: pickle.loads(pickle.dumps(o)), "deepcopy": copy.deepcopy}[clone]
    register("bapi_cityscapes_visible")
    preds = golden_predictions()
    whole = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible")
    feed(d2, whole, preds)
    half = len(preds) // 2
    ev = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible")
    feed(d2, ev, preds[:half])
    mid = cloned(ev)
    assert mid._temp_dir != ev._temp_dir and sorted(os.listdir(mid._temp_dir)) == sorted(os.listdir(ev._temp_dir))
    for inp, out in preds[half:]:
        feed_one(d2, mid, inp, out)
        feed_one(d2, ev, inp, out)
    before = cloned(whole)
    want = whole.evaluate()
    for other in (ev, mid, before):  # the original's evaluate() removed its folder, not the clone's
        temp = other._temp_dir
        got = other.evaluate()
        assert list(got) == list(want)
        for task in want:
            assert list(got[task]) == list(want[task])
            np.testing.assert_array_equal(list(got[task].values()), list(want[task].values()))
        assert not os.path.exists(temp)
