"""BoundaryCityscapesInstanceEvaluator: Detectron2's CityscapesInstanceEvaluator plus Boundary AP.

With Detectron2 importable the tests run on it; otherwise on a stand-in for the parts
the subclass builds on, written for these tests from Detectron2's documented behaviour
(``reset()`` makes a temporary folder shared by all processes, ``process()`` writes one
``<image>_pred.txt`` and one ``mask * 255`` PNG per instance there, ``evaluate()``
synchronizes, returns None on other ranks, runs cityscapesScripts on the folder for
``results["segm"]`` in percent and removes the folder).  The stand-in runs the real
cityscapesScripts.  Predictions are the golden set's, so both tasks have known values.
"""
import importlib
import importlib.util
import os
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
                self._logger = logging.getLogger("detectron2.evaluation.cityscapes_evaluation")

            def reset(self):
                self._working_dir = tempfile.TemporaryDirectory(prefix="cityscapes_eval_")
                self._temp_dir = comm.all_gather(self._working_dir.name)[0]

            def process(self, inputs, outputs):
                from cityscapesscripts.helpers.labels import name2label
                for inp, out in zip(inputs, outputs):
                    base = os.path.splitext(os.path.basename(inp["file_name"]))[0]
                    inst = out["instances"]
                    with open(os.path.join(self._temp_dir, base + "_pred.txt"), "w") as f:
                        for i in range(len(inst["scores"])):
                            name = self._metadata.thing_classes[inst["pred_classes"][i]]
                            png = os.path.join(self._temp_dir, base + "_{}_{}.png".format(i, name))
                            Image.fromarray(inst["pred_masks"][i].astype("uint8") * 255).save(png)
                            f.write("{} {} {}\\n".format(os.path.basename(png), name2label[name].id,
                                                          inst["scores"][i]))

            def evaluate(self):
                comm.synchronize()
                if comm.get_rank() > 0:
                    return
                import cityscapesscripts.evaluation.evalInstanceLevelSemanticLabeling as ev
                if not hasattr(np, "in1d"):  # numpy >= 2.4
                    np.in1d = lambda a, b: np.isin(a, b).ravel()
                ev.writeDict2JSON = lambda *a, **k: None  # matches.json breaks on numpy 2 integers
                ev.args.predictionPath = os.path.abspath(self._temp_dir)
                ev.args.predictionWalk = None
                ev.args.JSONOutput = False
                ev.args.colorized = False
                ev.args.quiet = True
                ev.args.gtInstancesFile = os.path.join(self._temp_dir, "gtInstances.json")
                gt_dir = PathManager.get_local_path(self._metadata.gt_dir)
                gts = glob.glob(os.path.join(gt_dir, "*", "*_gtFine_instanceIds.png"))
                preds = [ev.getPrediction(g, ev.args) for g in gts]
                cwd = os.getcwd()
                os.chdir(self._temp_dir)
                try:
                    res = ev.evaluateImgLists(preds, gts, ev.args)["averages"]
                finally:
                    os.chdir(cwd)
                ret = OrderedDict()
                ret["segm"] = {"AP": res["allAp"] * 100, "AP50": res["allAp50%"] * 100}
                self._working_dir.cleanup()
                return ret
    ''',
}


@pytest.fixture(scope="module")
def d2(tmp_path_factory):
    """boundary_api.integrations.detectron2 on real Detectron2, else on the stand-in."""
    added = None
    if not HAVE_DETECTRON2:
        root = tmp_path_factory.mktemp("d2_stand_in")
        for rel, text in STAND_IN.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        sys.path.insert(0, str(root))
        added = str(root)
    for name in [m for m in sys.modules if m.split(".")[0] == "detectron2"
                 or m.startswith("boundary_api.integrations.detectron2")]:
        sys.modules.pop(name)
    module = importlib.import_module("boundary_api.integrations.detectron2")
    yield module
    for name in [m for m in sys.modules if m.split(".")[0] == "detectron2"
                 or m.startswith("boundary_api.integrations.detectron2")]:
        sys.modules.pop(name)
    if added:
        sys.path.remove(added)


def register(name):
    from detectron2.data import MetadataCatalog

    meta = MetadataCatalog.get(name)
    if not HAVE_DETECTRON2:
        meta.thing_classes = CLASSES
        meta.gt_dir = os.path.join(VISIBLE, "gtFine", "val")
    return meta


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


def feed(ev, preds):
    ev.reset()
    if HAVE_DETECTRON2:
        import torch
        from detectron2.structures import Instances

        for inp, out in preds:
            i = out["instances"]
            inst = Instances((1, 1))
            inst.pred_classes = torch.tensor(i["pred_classes"], dtype=torch.int64)
            inst.scores = torch.tensor(i["scores"], dtype=torch.float64)
            inst.pred_masks = torch.from_numpy(np.stack(i["pred_masks"]) if i["pred_masks"] else
                                               np.zeros((0, 1, 1), bool))
            ev.process([inp], [{"instances": inst}])
    else:
        for inp, out in preds:
            ev.process([inp], [out])


def test_segm_and_boundary(d2):
    register("bapi_cityscapes_visible")
    ev = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible")
    feed(ev, golden_predictions())
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
    feed(ev, golden_predictions())
    assert ev.evaluate()["boundary"]["AP"] == pytest.approx(GOLDEN["visible_boundary_0.01"]["AP"] * 100, abs=1e-9)
    with pytest.raises(ValueError, match="dilation_ratio"):
        d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible", dilation_ratio=-0.1)


@pytest.mark.skipif(HAVE_DETECTRON2, reason="simulates ranks on the stand-in's comm")
def test_other_ranks_return_none_and_do_not_evaluate(d2, monkeypatch):
    from detectron2.utils import comm

    register("bapi_cityscapes_visible")
    ev = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible")
    feed(ev, golden_predictions()[:2])
    monkeypatch.setattr(ev, "_evaluate_boundary", lambda: pytest.fail("evaluated on rank 1"))
    comm.CALLS.clear()
    comm.RANK[0] = 1
    try:
        assert ev.evaluate() is None
    finally:
        comm.RANK[0] = 0
    assert comm.CALLS == ["synchronize", "synchronize"]  # both barriers reached, as on rank 0
    ev._working_dir.cleanup()


def test_missing_prediction_file_is_a_clear_error(d2):
    register("bapi_cityscapes_visible")
    ev = d2.BoundaryCityscapesInstanceEvaluator("bapi_cityscapes_visible")
    feed(ev, golden_predictions()[:3])  # 9 ground truth images have no predictions
    with pytest.raises(ValueError, match="no prediction file"):
        ev.evaluate()
    ev._working_dir.cleanup()


def test_exported_from_the_detectron2_paths(d2):
    assert "BoundaryCityscapesInstanceEvaluator" in d2.__all__
    from boundary_api.integrations.detectron2_cityscapes import BoundaryCityscapesInstanceEvaluator

    assert d2.BoundaryCityscapesInstanceEvaluator is BoundaryCityscapesInstanceEvaluator
