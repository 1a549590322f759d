"""Mask2Former's video evaluation path with boundary_api.video swapped in (issue 46):
``mask2former_video/data_video/ytvis_eval.py`` of a Mask2Former checkout, run unchanged on
real Detectron2, its ``YTVOS`` / ``YTVOSeval`` (Mask2Former's copy of the YouTube-VIS API)
replaced by boundary_api's. On a ground truth with annotations ``YTVISEvaluator`` reports
the fork's numbers (tests/data/video/fork_loading.json); on one without (YouTube-VIS'
valid.json / test.json as distributed) it is made, writes ``results.json`` for the server
and evaluates nothing; ``_evaluate_predictions_on_coco(..., img_ids=...)`` gives the fork's
numbers (where ``imgIds`` is never read).

Detectron2 tier (``pytest -m detectron2``); needs ``BOUNDARY_API_MASK2FORMER``, a checkout of
facebookresearch/Mask2Former (docs/testing.md; only that one file of it is executed: the
rest of Mask2Former, its models and compiled ops, is not imported).  The same calls without
Detectron2: tests/video/test_ytvos_loading.py.
"""
import importlib.util
import json
import logging
import os
import sys
import types
import warnings

import numpy as np
import pytest
from pycocotools import mask as mask_util

import boundary_api.video as video

pytestmark = pytest.mark.detectron2

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "video"))
import make_fork_loading_golden as maker  # noqa: E402

GOLDEN = json.load(open(maker.OUT))
METRICS = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10"]
EVAL_FILE = os.path.join("mask2former_video", "data_video", "ytvis_eval.py")


@pytest.fixture(scope="module")
def ytvis_eval():
    """Mask2Former's ytvis_eval module, unchanged, with boundary_api.video as its YouTube-VIS API."""
    pytest.importorskip("detectron2")
    pytest.importorskip("torch")
    pytest.importorskip("tabulate")
    root = os.environ.get("BOUNDARY_API_MASK2FORMER")
    if not root:
        pytest.skip("no Mask2Former checkout: set BOUNDARY_API_MASK2FORMER")
    path = os.path.join(root, EVAL_FILE)
    if not os.path.isfile(path):
        pytest.skip(f"BOUNDARY_API_MASK2FORMER has no {EVAL_FILE}")
    saved = {}
    # the packages around the file, empty: only the API modules it imports are given
    names = ["mask2former_video", "mask2former_video.data_video", "mask2former_video.data_video.datasets",
             "mask2former_video.data_video.datasets.ytvis_api"]
    for name in names:
        saved[name] = sys.modules.get(name)
        pkg = types.ModuleType(name)
        pkg.__path__ = []
        sys.modules[name] = pkg
    for name, attr in (("ytvos", "YTVOS"), ("ytvoseval", "YTVOSeval")):
        full = f"mask2former_video.data_video.datasets.ytvis_api.{name}"
        saved[full] = sys.modules.get(full)
        mod = types.ModuleType(full)
        setattr(mod, attr, getattr(video, attr))  # the swap: boundary_api's classes
        sys.modules[full] = mod
    full = "mask2former_video.data_video.ytvis_eval"
    saved[full] = sys.modules.get(full)
    spec = importlib.util.spec_from_file_location(full, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[full] = module
    spec.loader.exec_module(module)
    yield module
    for name, mod in saved.items():
        if mod is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = mod


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("m2f")
    out = {}
    for case in ("valid", "no_annotations"):
        gt, results = maker.inputs(case)
        json.dump(gt, open(root / f"{case}.json", "w"))
        out[case] = (str(root / f"{case}.json"), gt, results)
    return out


def _register(name, json_file, gt):
    from detectron2.data import MetadataCatalog

    meta = MetadataCatalog.get(name)
    if not hasattr(meta, "json_file"):
        meta.set(json_file=json_file, thing_classes=[c["name"] for c in gt["categories"]],
                 thing_dataset_id_to_contiguous_id={c["id"]: i for i, c in enumerate(gt["categories"])})
    return meta


def _feed(evaluator, gt, results, to_contiguous):
    """Each video's results as a Mask2Former video model outputs them (N x T x H x W masks,
    contiguous labels); absent frames are empty masks."""
    for v in gt["videos"]:
        mine = [r for r in results if r["video_id"] == v["id"]]
        masks = [np.stack([mask_util.decode(s).astype(bool) if s else np.zeros((v["height"], v["width"]), bool)
                           for s in r["segmentations"]]) for r in mine]
        evaluator.process([{"video_id": v["id"], "length": v["length"]}],
                          {"pred_scores": [r["score"] for r in mine],
                           "pred_labels": [to_contiguous[r["category_id"]] for r in mine], "pred_masks": masks})


def test_ytvis_evaluator_with_annotations(ytvis_eval, files, tmp_path, caplog):
    json_file, gt, results = files["valid"]
    meta = _register("boundary_api_m2f_valid", json_file, gt)
    evaluator = ytvis_eval.YTVISEvaluator("boundary_api_m2f_valid", distributed=False, output_dir=str(tmp_path))
    assert evaluator._do_evaluation is True
    evaluator.reset()
    _feed(evaluator, gt, results, meta.thing_dataset_id_to_contiguous_id)
    with warnings.catch_warnings(), caplog.at_level(logging.INFO):
        warnings.simplefilter("error", UserWarning)  # (no imgIds here: nothing to warn about)
        res = evaluator.evaluate()
    want = GOLDEN["runs"]["valid"]
    assert list(res) == ["segm"]
    for i, m in enumerate(METRICS):
        assert (np.isnan(res["segm"][m]) and want["stats"][i] < 0) or \
            res["segm"][m] == pytest.approx(want["stats"][i] * 100, abs=1e-10), m
    for cat, ap in zip(gt["categories"], want["per_category_ap"]):
        got = res["segm"][f"AP-{cat['name']}"]
        assert (np.isnan(got) and ap is None) or got == pytest.approx(ap * 100, abs=1e-10), cat["name"]
    assert "Evaluation results for segm" in caplog.text
    assert (tmp_path / "results.json").exists() and (tmp_path / "instances_predictions.pth").exists()


def test_ytvis_evaluator_without_annotations(ytvis_eval, files, tmp_path, caplog):
    """The official valid/test file: the evaluator is made (the fork's YTVOS loads it),
    results.json is written for the server, nothing is evaluated, nothing warned about."""
    json_file, gt, results = files["no_annotations"]
    meta = _register("boundary_api_m2f_noann", json_file, gt)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        evaluator = ytvis_eval.YTVISEvaluator("boundary_api_m2f_noann", distributed=False,
                                              output_dir=str(tmp_path))
    assert evaluator._do_evaluation is False
    evaluator.reset()
    _feed(evaluator, gt, results, meta.thing_dataset_id_to_contiguous_id)
    with caplog.at_level(logging.INFO):
        assert evaluator.evaluate() == {}
    assert "Annotations are not available for evaluation." in caplog.text
    written = json.load(open(tmp_path / "results.json"))
    assert len(written) == len(results) and {r["category_id"] for r in written} <= {c["id"] for c in gt["categories"]}


def test_evaluate_predictions_with_img_ids(ytvis_eval, files):
    """``_evaluate_predictions_on_coco(..., img_ids=...)`` sets params.imgIds, which the
    YouTube-VIS API never reads: the whole set's numbers, with a warning saying so."""
    import contextlib
    import io

    json_file, gt, results = files["valid"]
    with contextlib.redirect_stdout(io.StringIO()):
        api = video.YTVOS(json_file)
        with pytest.warns(UserWarning, match="params.imgIds has no effect"):
            coco_eval = ytvis_eval._evaluate_predictions_on_coco(api, results, img_ids=maker.first2(gt))
    want = GOLDEN["runs"]["img_ids"]["stats"]
    assert np.allclose(coco_eval.stats, want, rtol=0, atol=1e-12)
    assert want == GOLDEN["runs"]["valid"]["stats"]
