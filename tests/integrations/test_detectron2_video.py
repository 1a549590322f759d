"""The video instance segmentation hooks: d2_video_results (framework-free, quick tier)
and BoundaryYTVISEvaluator on real Detectron2 (``pytest -m detectron2``), fed the
video outputs of Mask2Former's video models; the numbers equal YTVOSeval's."""
import contextlib
import importlib
import io
import json
import logging
import sys

import numpy as np
import pytest
from pycocotools import mask as mask_util

from boundary_api.integrations.d2_video_results import YTVIS_METRICS, instances_to_ytvis_json, ytvis_metrics
from boundary_api.video import YTVOS, YTVOSeval, synthetic_vis


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    return synthetic_vis.write_demo(tmp_path_factory.mktemp("ytvis") / "v")


def _outputs(results, video_id):
    """A video's results as a Mask2Former video model returns them (N x T x H x W masks)."""
    mine = [r for r in results if r["video_id"] == video_id]
    masks = []
    for r in mine:
        frames = [mask_util.decode(s).astype(bool) for s in r["segmentations"]]
        masks.append(np.stack(frames))
    return {"pred_scores": [r["score"] for r in mine], "pred_labels": [r["category_id"] for r in mine],
            "pred_masks": masks}


def _stats(gt_path, results, iou_type):
    with contextlib.redirect_stdout(io.StringIO()):
        gt = YTVOS(gt_path)
        ev = YTVOSeval(gt, gt.loadRes(results), iou_type)
        ev.params.maxDets = [1, 10, 100]
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev.stats


def _model_results(demo):
    results = json.load(open(demo["dt"]))
    # a model writes every frame (None frames become empty masks of the video's size)
    gt = json.load(open(demo["gt"]))
    size = {v["id"]: (v["height"], v["width"]) for v in gt["videos"]}
    for r in results:
        h, w = size[r["video_id"]]
        r["segmentations"] = [s if s else synthetic_vis._encode(np.zeros((h, w), np.uint8))
                              for s in r["segmentations"]]
    return results, gt


def test_instances_to_ytvis_json_round_trips(demo):
    results, gt = _model_results(demo)
    vid = gt["videos"][0]["id"]
    made = instances_to_ytvis_json([{"video_id": vid, "length": 0}], _outputs(results, vid))
    mine = [r for r in results if r["video_id"] == vid]
    assert [m["category_id"] for m in made] == [r["category_id"] for r in mine]
    for m, r in zip(made, mine):
        assert m["score"] == r["score"]
        assert [mask_util.area(s) for s in m["segmentations"]] == [mask_util.area(s) for s in r["segmentations"]]
        assert all(isinstance(s["counts"], str) for s in m["segmentations"])


def test_ytvis_metrics_are_the_evaluators(demo):
    results, gt = _model_results(demo)
    with contextlib.redirect_stdout(io.StringIO()):
        ytgt = YTVOS(demo["gt"])
    names = [c["name"] for c in gt["categories"]]
    contiguous = {i: c["id"] for i, c in enumerate(gt["categories"])}
    as_model = [dict(r, category_id=[k for k, v in contiguous.items() if v == r["category_id"]][0]) for r in results]
    for iou_type in ("segm", "boundary"):
        m = ytvis_metrics(ytgt, as_model, iou_type, category_id_map=contiguous, class_names=names)
        stats = _stats(demo["gt"], results, iou_type)
        for i, name in enumerate(YTVIS_METRICS):
            assert m[name] == pytest.approx(stats[i] * 100, abs=1e-12) if stats[i] >= 0 else np.isnan(m[name])
        assert {f"AP-{n}" for n in names} <= set(m)
    assert as_model[0]["category_id"] in contiguous  # the predictions are not modified


def test_no_predictions_give_nan(demo):
    with contextlib.redirect_stdout(io.StringIO()):
        ytgt = YTVOS(demo["gt"])
    m = ytvis_metrics(ytgt, [], "boundary")
    assert list(m) == list(YTVIS_METRICS) and all(np.isnan(v) for v in m.values())


def test_import_without_detectron2_says_how_to_install_it(monkeypatch):
    if importlib.util.find_spec("detectron2") is not None:
        pytest.skip("Detectron2 is installed")
    sys.modules.pop("boundary_api.integrations.detectron2_video", None)
    with pytest.raises(ImportError) as e:
        importlib.import_module("boundary_api.integrations.detectron2_video")
    assert "pip install 'git+https://github.com/facebookresearch/detectron2.git'" in str(e.value)


@pytest.mark.detectron2
def test_boundary_ytvis_evaluator_on_detectron2(demo, tmp_path, caplog):
    pytest.importorskip("detectron2")
    from detectron2.data import MetadataCatalog

    from boundary_api.integrations.detectron2_video import BoundaryYTVISEvaluator

    results, gt = _model_results(demo)
    name = "boundary_api_ytvis_demo"
    meta = MetadataCatalog.get(name)
    if not hasattr(meta, "json_file"):
        meta.set(json_file=demo["gt"], thing_classes=[c["name"] for c in gt["categories"]],
                 thing_dataset_id_to_contiguous_id={c["id"]: i for i, c in enumerate(gt["categories"])})
    to_contiguous = meta.thing_dataset_id_to_contiguous_id
    ev = BoundaryYTVISEvaluator(name, distributed=False, output_dir=str(tmp_path))
    ev.reset()
    for video in gt["videos"]:
        out = _outputs(results, video["id"])
        out["pred_labels"] = [to_contiguous[c] for c in out["pred_labels"]]
        ev.process([{"video_id": video["id"], "length": video["length"]}], out)
    with caplog.at_level(logging.INFO):
        res = ev.evaluate()
    assert list(res) == ["segm", "boundary"]
    for task in ("segm", "boundary"):
        stats = _stats(demo["gt"], results, task)
        for i, metric in enumerate(YTVIS_METRICS):
            want = stats[i] * 100
            assert (np.isnan(res[task][metric]) if want < 0 else res[task][metric] == pytest.approx(want, abs=1e-12))
    assert (tmp_path / "results.json").exists() and (tmp_path / "instances_predictions.pth").exists()
    assert "Evaluation results for boundary" in caplog.text
