"""boundary_api.integrations.detectron2_semseg: BoundarySemSegEvaluator.

Every test runs twice: on a small stand-in for the parts of Detectron2 the evaluator builds
on (``SemSegEvaluator``'s constructor, ``reset``, ``encode_json_sem_seg`` and ``evaluate``
with Detectron2's mask metrics, gathering and its results log line;
``DatasetCatalog``/``MetadataCatalog``; ``comm``), written for these tests from Detectron2's
documented behaviour, with model outputs as NumPy score arrays behind the two tensor methods
Detectron2 calls (``argmax(dim=...)``, ``to(device)``); and, in the optional tier
(``pytest -m detectron2``, skipped without it), on real Detectron2 with torch tensors.  The
values are checked against the semantic oracle (boundary) and Detectron2's mask definitions
computed here.
"""
import importlib
import copy
import math
import pickle
import sys
import textwrap

import numpy as np
import pytest
from PIL import Image

from boundary_api.semantic import reference as ref

sys.path.insert(0, __import__("os").path.join(__import__("os").path.dirname(__file__), "..", "semantic"))
from semantic_maps import perturb, random_gt  # noqa: E402

STAND_IN = {
    "detectron2/__init__.py": "",
    "detectron2/utils/__init__.py": "",
    "detectron2/utils/logger.py": '''
def create_small_table(small_dict):  # imported by boundary_api.integrations.detectron2
    return " ".join(f"{k}={v}" for k, v in small_dict.items())
''',
    "detectron2/utils/file_io.py": '''
        class PathManager:
            @staticmethod
            def open(path, mode="r"):
                return open(path, mode)
    ''',
    "detectron2/utils/comm.py": '''
        # one process; tests replace all_gather to simulate more
        def is_main_process():
            return True

        def synchronize():
            pass

        def all_gather(data, group=None):
            return [data]
    ''',
    "detectron2/data/__init__.py": '''
        import types

        class DatasetCatalog:
            _all = {}

            @classmethod
            def register(cls, name, fn):
                cls._all[name] = fn

            @classmethod
            def get(cls, name):
                return cls._all[name]()

        class MetadataCatalog:
            _all = {}

            @classmethod
            def get(cls, name):
                return cls._all.setdefault(name, types.SimpleNamespace())
    ''',
    "detectron2/evaluation/__init__.py": '''
        """Stand-in for detectron2.evaluation.SemSegEvaluator: what the subclass relies on."""
        import itertools, logging
        from collections import OrderedDict

        import numpy as np
        from PIL import Image

        from detectron2.data import DatasetCatalog, MetadataCatalog
        from detectron2.utils.comm import all_gather, is_main_process, synchronize

        def load_image_into_numpy_array(filename, copy=False, dtype=None):
            with Image.open(filename) as img:
                arr = np.asarray(img, dtype=dtype)
                return arr.copy() if copy else arr

        class SemSegEvaluator:
            def __init__(self, dataset_name, distributed=True, output_dir=None, *,
                         sem_seg_loading_fn=load_image_into_numpy_array, num_classes=None, ignore_label=None):
                self._logger = logging.getLogger(__name__)
                self._dataset_name = dataset_name
                self._distributed = distributed
                self._output_dir = output_dir
                self._cpu_device = "cpu"
                self.input_file_to_gt_file = {r["file_name"]: r["sem_seg_file_name"]
                                              for r in DatasetCatalog.get(dataset_name)}
                meta = MetadataCatalog.get(dataset_name)
                self._class_names = meta.stuff_classes
                self.sem_seg_loading_fn = sem_seg_loading_fn
                self._num_classes = len(meta.stuff_classes)
                self._ignore_label = ignore_label if ignore_label is not None else meta.ignore_label
                self._compute_boundary_iou = self._num_classes < 255

            def reset(self):
                k = self._num_classes + 1
                self._conf_matrix = np.zeros((k, k), np.int64)
                self._b_conf_matrix = np.zeros((k, k), np.int64)
                self._predictions = []

            def encode_json_sem_seg(self, sem_seg, input_file_name):
                return [{"file_name": input_file_name, "category_id": int(c)} for c in np.unique(sem_seg)]

            def evaluate(self):
                if self._distributed:
                    synchronize()
                    conf = all_gather(self._conf_matrix)
                    b_conf = all_gather(self._b_conf_matrix)
                    self._predictions = list(itertools.chain(*all_gather(self._predictions)))
                    if not is_main_process():
                        return None
                    self._conf_matrix = sum(conf)
                    self._b_conf_matrix = sum(b_conf)
                n = self._num_classes
                c = self._conf_matrix[:n, :n].astype(float)  # [predicted, ground truth]
                tp = np.diagonal(c)
                gt = c.sum(axis=0)
                pred = c.sum(axis=1)
                has_gt = gt > 0
                acc = np.where(has_gt, tp / np.where(has_gt, gt, 1), np.nan)
                union = gt + pred - tp
                iou = np.where(has_gt & (union > 0), tp / np.where(union > 0, union, 1), np.nan)
                res = {"mIoU": 100 * np.nanmean(iou), "fwIoU": 100 * np.nansum(iou * gt / gt.sum())}
                for i, name in enumerate(self._class_names):
                    res["IoU-" + name] = 100 * iou[i]
                    if self._compute_boundary_iou:
                        res["BoundaryIoU-" + name] = -1.0  # the label-map erosion's value
                        res["min(IoU, B-Iou)-" + name] = -1.0
                res["mACC"] = 100 * np.nanmean(acc)
                res["pACC"] = 100 * tp.sum() / gt.sum()
                for i, name in enumerate(self._class_names):
                    res["ACC-" + name] = 100 * acc[i]
                results = OrderedDict({"sem_seg": res})
                self._logger.info(results)
                return results
    ''',
}

NAMES = ["road", "sidewalk", "building", "wall", "fence"]
N = len(NAMES)


class Scores:
    """(C, H, W) scores with the two tensor methods Detectron2's evaluator calls."""

    def __init__(self, arr):
        self.arr = arr

    def argmax(self, dim):
        return Scores(self.arr.argmax(axis=dim))

    def to(self, device):
        assert device == "cpu"
        return self

    def __array__(self, dtype=None, copy=None):
        return self.arr if dtype is None else self.arr.astype(dtype)


REAL = {"on": False}  # whether the current d2 fixture is real Detectron2


def scores_for(pred, n):
    s = np.zeros((n,) + pred.shape, np.float32)
    for c in range(n):
        s[c][pred == c] = 1.0
    if REAL["on"]:
        import torch

        return torch.from_numpy(s)
    return Scores(s)


def _forget_detectron2():
    names = [m for m in sys.modules if m.split(".")[0] == "detectron2"
             or m.startswith("boundary_api.integrations.detectron2")]
    return {name: sys.modules.pop(name) for name in names}


@pytest.fixture(params=["stand-in", pytest.param("detectron2", marks=pytest.mark.detectron2)])
def d2(request, tmp_path, monkeypatch):
    real = request.param == "detectron2"
    if real and importlib.util.find_spec("detectron2") is None:
        pytest.skip("Detectron2 is not installed")
    saved = _forget_detectron2()
    if real:  # the real modules, if a stand-in test ran before
        sys.modules.update({k: v for k, v in saved.items() if k.split(".")[0] == "detectron2"})
    else:
        root = tmp_path / "stand_in"
        for rel, text in STAND_IN.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text))
        monkeypatch.syspath_prepend(str(root))
    REAL["on"] = real
    module = importlib.import_module("boundary_api.integrations.detectron2_semseg")
    yield module
    REAL["on"] = False
    _forget_detectron2()
    sys.modules.update(saved)


def make_dataset(tmp_path, d2mod, name, count=4, seed=0):
    from detectron2.data import DatasetCatalog, MetadataCatalog

    if REAL["on"] and name in DatasetCatalog.list():  # Detectron2's catalog lives for the session
        DatasetCatalog.remove(name)
        MetadataCatalog.remove(name)

    rng = np.random.default_rng(seed)
    records, pairs = [], []
    for i in range(count):
        g = random_gt(rng, 40 + 8 * i, 64, N)
        p = perturb(rng, g, N)
        p[p == 255] = 0  # a model's argmax always predicts a class
        gt_file = str(tmp_path / f"{name}_{i}_gt.png")
        Image.fromarray(g).save(gt_file)
        records.append({"file_name": f"img{i}.jpg", "sem_seg_file_name": gt_file})
        pairs.append((g, p))
    DatasetCatalog.register(name, lambda: records)
    meta = MetadataCatalog.get(name)
    meta.stuff_classes = NAMES
    meta.ignore_label = 255
    return records, pairs


def d2_mask_metrics(pairs, n):
    """Detectron2's mask definitions: IoU/Acc NaN for classes absent from the ground truth."""
    conf = np.zeros((n, n), np.int64)  # [pred, gt]
    for g, p in pairs:
        keep = g != 255
        conf += np.bincount(p[keep].astype(np.int64) * n + g[keep], minlength=n * n).reshape(n, n)
    tp = np.diagonal(conf).astype(float)
    gt = conf.sum(axis=0)
    pred = conf.sum(axis=1)
    iou = [tp[c] / (gt[c] + pred[c] - tp[c]) if gt[c] > 0 else math.nan for c in range(n)]
    acc = [tp[c] / gt[c] if gt[c] > 0 else math.nan for c in range(n)]
    return iou, acc, tp.sum() / gt.sum()


def run(ev, records, pairs):
    ev.reset()
    for r, (g, p) in zip(records, pairs):
        ev.process([r], [{"sem_seg": scores_for(p, N)}])


def test_results_keep_detectron2_keys_with_paper_boundaries(d2, tmp_path):
    records, pairs = make_dataset(tmp_path, d2, "sem_a")
    ev = d2.BoundarySemSegEvaluator("sem_a", distributed=False, dilation_ratio=0.05)
    run(ev, records, pairs)
    res = ev.evaluate()["sem_seg"]
    keys = ["mIoU", "fwIoU", "mBIoU"]
    for name in NAMES:
        keys += [f"IoU-{name}", f"BoundaryIoU-{name}", f"min(IoU, B-Iou)-{name}"]
    keys += ["mACC", "pACC"] + [f"ACC-{name}" for name in NAMES]
    assert list(res) == keys
    want = ref.evaluate_pairs(pairs, N, 255, 0.05)
    iou, acc, pacc = d2_mask_metrics(pairs, N)
    for c, name in enumerate(NAMES):
        assert res[f"IoU-{name}"] == pytest.approx(100 * iou[c], abs=1e-10)
        assert res[f"ACC-{name}"] == pytest.approx(100 * acc[c], abs=1e-10)
        assert res[f"BoundaryIoU-{name}"] == pytest.approx(100 * want["BoundaryIoU"][c], abs=1e-10)
        assert res[f"min(IoU, B-Iou)-{name}"] == pytest.approx(100 * min(iou[c], want["BoundaryIoU"][c]),
                                                              abs=1e-10)
    assert res["pACC"] == pytest.approx(100 * pacc, abs=1e-10)
    assert res["mBIoU"] == pytest.approx(100 * want["mBIoU"], abs=1e-10)
    assert ev._compute_boundary_iou is True  # Detectron2's flag is restored after evaluate()
    assert len(ev._predictions) > 0
    # evaluate() again gives the same results (as a trainer's periodic evaluation calls it)
    assert ev.evaluate()["sem_seg"] == res


def test_distributed_gathers_the_boundary_counts(d2, tmp_path, monkeypatch):
    records, pairs = make_dataset(tmp_path, d2, "sem_b", count=4, seed=1)
    whole = d2.BoundarySemSegEvaluator("sem_b", distributed=False)
    run(whole, records, pairs)
    want = whole.evaluate()["sem_seg"]

    a = d2.BoundarySemSegEvaluator("sem_b", distributed=True)
    b = d2.BoundarySemSegEvaluator("sem_b", distributed=True)
    run(a, records[:2], pairs[:2])
    run(b, records[2:], pairs[2:])
    b_parts = {"counts": b._semantic.boundary_counts, "conf": b._detectron2_conf_matrix(),
               "b_conf": b._b_conf_matrix, "pred": b._predictions}

    def all_gather(data, group=None):
        if isinstance(data, list):
            return [data, b_parts["pred"]]
        if data.shape == (N, 3):
            return [data, b_parts["counts"]]
        if data is a._b_conf_matrix:
            return [data, b_parts["b_conf"]]
        return [data, b_parts["conf"]]

    import detectron2.evaluation as evaluation
    import detectron2.utils.comm as comm
    monkeypatch.setattr(comm, "all_gather", all_gather)
    # where SemSegEvaluator finds all_gather: Detectron2's module, or the stand-in's package
    monkeypatch.setattr(sys.modules.get("detectron2.evaluation.sem_seg_evaluation", evaluation), "all_gather",
                        all_gather)
    got = a.evaluate()["sem_seg"]
    assert list(got) == list(want)
    for k in want:
        assert got[k] == pytest.approx(want[k], abs=1e-10, nan_ok=True), k


def test_bad_ground_truth_names_the_file(d2, tmp_path):
    records, pairs = make_dataset(tmp_path, d2, "sem_c", count=1)
    bad = pairs[0][0].copy()
    bad[0, 0] = 7
    Image.fromarray(bad).save(records[0]["sem_seg_file_name"])
    ev = d2.BoundarySemSegEvaluator("sem_c", distributed=False)
    ev.reset()
    with pytest.raises(ValueError, match=r"sem_c_0_gt\.png: the ground truth has value 7 at row 0, column 0"):
        ev.process(records, [{"sem_seg": scores_for(pairs[0][1], N)}])


def test_results_with_boundary_keys_are_logged_once(d2, tmp_path, caplog):
    """Detectron2 logs its results dict; here that line carries the boundary keys and comes once."""
    import logging
    from collections.abc import Mapping

    records, pairs = make_dataset(tmp_path, d2, "sem_log")
    ev = d2.BoundarySemSegEvaluator("sem_log", distributed=False)
    run(ev, records, pairs)
    with caplog.at_level(logging.INFO):
        results = ev.evaluate()
    logged = [r.msg for r in caplog.records if isinstance(r.msg, Mapping) and "sem_seg" in r.msg]
    assert len(logged) == 1 and logged[0] is results
    assert f"BoundaryIoU-{NAMES[0]}" in caplog.text and "mBIoU" in caplog.text
    assert "Boundary IoU (dilation ratio" in caplog.text


@pytest.mark.torch
def test_results_with_boundary_keys_are_saved_as_detectron2_saves_its_own(d2, tmp_path):
    """With an output_dir, sem_seg_evaluation.pth holds the final results (boundary keys included)."""
    torch = pytest.importorskip("torch")
    records, pairs = make_dataset(tmp_path, d2, "sem_save")
    out = tmp_path / "out"
    out.mkdir()
    ev = d2.BoundarySemSegEvaluator("sem_save", distributed=False, output_dir=str(out))
    run(ev, records, pairs)
    res = ev.evaluate()["sem_seg"]
    saved = torch.load(str(out / d2.RESULTS_FILE), weights_only=False)
    assert list(saved) == list(res)
    for key, value in res.items():
        assert saved[key] == value or (math.isnan(value) and math.isnan(saved[key])), key
    assert "mBIoU" in saved and f"BoundaryIoU-{NAMES[0]}" in saved


def test_import_without_detectron2_says_how_to_install_it():
    sys.modules.pop("boundary_api.integrations.detectron2_semseg", None)
    if importlib.util.find_spec("detectron2") is not None:  # real Detectron2: the import works
        assert importlib.import_module("boundary_api.integrations.detectron2_semseg").BoundarySemSegEvaluator
        return
    with pytest.raises(ImportError, match=r"pip install 'git\+https://github.com/facebookresearch/detectron2"):
        importlib.import_module("boundary_api.integrations.detectron2_semseg")


@pytest.mark.parametrize("clone", ["pickle", "deepcopy"])
def test_evaluator_pickles_mid_stream_and_after_evaluation(d2, tmp_path, clone):
    """Cloned halfway through process(), the clone takes the other half and
    gives the numbers of the evaluator that saw everything; cloned after
    evaluate(), it evaluates again to them too (issue 25; the other
    evaluators: tests/test_pickling.py)."""
    cloned = {"pickle": lambda o: pickle.loads(pickle.dumps(o)), "deepcopy": copy.deepcopy}[clone]
    records, pairs = make_dataset(tmp_path, d2, "sem_p")
    whole = d2.BoundarySemSegEvaluator("sem_p", distributed=False)
    run(whole, records, pairs)
    want = whole.evaluate()["sem_seg"]
    ev = d2.BoundarySemSegEvaluator("sem_p", distributed=False)
    run(ev, records[:2], pairs[:2])
    ev = cloned(ev)
    for r, (g, p) in zip(records[2:], pairs[2:]):
        ev.process([r], [{"sem_seg": scores_for(p, N)}])
    assert ev.evaluate()["sem_seg"] == want
    assert cloned(ev).evaluate()["sem_seg"] == want
