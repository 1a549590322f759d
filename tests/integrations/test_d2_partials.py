"""Detectron2 with several ranks: each rank's partial, gathered and merged, gives the
numbers of one evaluation over every gathered prediction (ranks simulated in-process)."""
import contextlib
import copy
import io
import json

import numpy as np
import pytest

from boundary_api import COCO, COCOeval, LVIS, LVISEval
from boundary_api.integrations.d2_partials import evaluate_in_ranks, merge_rank_partials, rank_partial
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT


def _silent(fn, *a, **k):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*a, **k)


def _predictions(dets, img_ids):
    """Detectron2's per-image predictions: every processed image, with or without instances."""
    by_img = {i: [] for i in img_ids}
    for d in dets:
        by_img[d["image_id"]].append({k: d[k] for k in ("image_id", "category_id", "segmentation", "score")})
    return [{"image_id": i, "instances": v} for i, v in by_img.items()]


def _ranks(predictions, n):
    # Detectron2's InferenceSampler: contiguous slices of the dataset per rank
    return [list(s) for s in np.array_split(np.array(predictions, dtype=object), n)]


# (maxDets without 100 on purpose: tests/coco/test_summarize_max_dets.py asserts the warning)
@pytest.mark.filterwarnings("ignore:summarize\\(\\). params.maxDets")
@pytest.mark.parametrize("max_dets", (None, 20))
def test_coco_ranks_give_the_single_process_numbers(max_dets):
    gt = _silent(COCO, COCO_GT)
    with open(COCO_DT) as f:
        dets = json.load(f)
    ev = COCOeval(gt, _silent(gt.loadRes, copy.deepcopy(dets)), "boundary")
    ev.params.maxDets = [1, 10, 100 if max_dets is None else max_dets]
    for step in (ev.evaluate, ev.accumulate, ev.summarize):
        _silent(step)
    preds = _predictions(dets, sorted(gt.getImgIds()))
    parts = [rank_partial(gt, r, "boundary", max_dets_per_image=max_dets) for r in _ranks(preds, 3)]
    got = merge_rank_partials(gt, parts[::-1], "boundary", max_dets_per_image=max_dets)
    for key in ("precision", "recall", "scores"):
        assert np.array_equal(got.eval[key], ev.eval[key]), key
    assert np.array_equal(got.stats, ev.stats)


def test_lvis_ranks_and_images_no_rank_processed():
    gt = LVIS(LVIS_GT)
    with open(LVIS_DT) as f:
        dets = json.load(f)
    ref = LVISEval(gt, copy.deepcopy(dets), "segm")
    ref.run()
    ids = sorted(gt.get_img_ids())
    preds = _predictions(dets, ids)
    # the last 5 images were processed by no rank and have no detections: their ground
    # truths still count, as in one evaluation over the ground truth's images
    dropped = {p["image_id"] for p in preds[-5:]}
    ref = LVISEval(gt, [d for d in copy.deepcopy(dets) if d["image_id"] not in dropped], "segm")
    ref.run()
    ranks = _ranks(preds[:-5], 2)
    gathered = []
    outputs = [evaluate_in_ranks(gt, r, "segm", gather=lambda p, k=k: gathered.append(p) or
                                 (list(gathered) if k == len(ranks) - 1 else []))
               for k, r in enumerate(ranks)]
    assert outputs[0] is None
    got = outputs[-1]
    assert np.array_equal(got.eval["precision"], ref.eval["precision"])
    assert list(got.results.items()) == list(ref.results.items())


def test_category_ids_are_mapped_back_and_single_process_default():
    gt = _silent(COCO, COCO_GT)
    with open(COCO_DT) as f:
        dets = json.load(f)
    ev = COCOeval(gt, _silent(gt.loadRes, copy.deepcopy(dets)), "segm")
    for step in (ev.evaluate, ev.accumulate, ev.summarize):
        _silent(step)
    cats = sorted(gt.getCatIds())
    to_contiguous = {c: n for n, c in enumerate(cats)}
    contiguous = [dict(d, category_id=to_contiguous[d["category_id"]]) for d in dets]
    preds = _predictions(contiguous, sorted(gt.getImgIds()))
    # no Detectron2, no torch.distributed: the gather is this process alone
    got = evaluate_in_ranks(gt, preds, "segm", category_id_map={n: c for c, n in to_contiguous.items()})
    assert np.array_equal(got.stats, ev.stats)


def test_images_outside_the_evaluation_are_refused():
    gt = _silent(COCO, COCO_GT)
    ids = sorted(gt.getImgIds())
    part = rank_partial(gt, [{"image_id": ids[0], "instances": []}], "segm")
    with pytest.raises(ValueError, match="outside the evaluation"):
        merge_rank_partials(gt, [part], "segm", img_ids=ids[1:])


def _boxed_detections(dets):
    """The detections with a model box of their own: the mask's box, shifted and scaled (a
    model's ``pred_boxes`` are not its masks' boxes)."""
    import pycocotools.mask as mask_utils

    rng = np.random.default_rng(7)
    boxes = mask_utils.toBbox([d["segmentation"] for d in dets])
    out = []
    for d, (x, y, w, h) in zip(dets, boxes):
        dx, dy, sw, sh = rng.uniform(-4, 4), rng.uniform(-4, 4), rng.uniform(0.8, 1.2), rng.uniform(0.8, 1.2)
        out.append(dict(d, bbox=[float(x + dx), float(y + dy), float(w * sw), float(h * sh)]))
    return out


def _per_image(dets, img_ids, keys):
    by_img = {i: [] for i in img_ids}
    for d in dets:
        by_img[d["image_id"]].append({k: d[k] for k in keys})
    return [{"image_id": i, "instances": v} for i, v in by_img.items()]


@pytest.mark.parametrize("masks", (True, False), ids=("mask-model", "box-only-model"))
def test_bbox_scores_the_models_boxes(masks):
    """iou_type='bbox' evaluates pred_boxes (instances_to_coco_json's 'bbox'), as Detectron2's
    box AP does, not boxes taken from the masks; a box-only model (no 'segmentation') works."""
    gt = _silent(COCO, COCO_GT)
    with open(COCO_DT) as f:
        dets = _boxed_detections(json.load(f))
    box_only = [{k: d[k] for k in ("image_id", "category_id", "bbox", "score")} for d in dets]
    ev = COCOeval(gt, _silent(gt.loadRes, copy.deepcopy(box_only)), "bbox")
    for step in (ev.evaluate, ev.accumulate, ev.summarize):
        _silent(step)
    from_masks = COCOeval(gt, _silent(gt.loadRes, [{k: d[k] for k in ("image_id", "category_id", "segmentation",
                                                                       "score")} for d in dets]), "bbox")
    for step in (from_masks.evaluate, from_masks.accumulate, from_masks.summarize):
        _silent(step)
    assert not np.array_equal(from_masks.stats, ev.stats)  # the two readings differ on this data
    keys = ("image_id", "category_id", "bbox", "score") + (("segmentation",) if masks else ())
    preds = _per_image(dets, sorted(gt.getImgIds()), keys)
    parts = [rank_partial(gt, r, "bbox") for r in _ranks(preds, 2)]
    got = merge_rank_partials(gt, parts, "bbox")
    for key in ("precision", "recall", "scores"):
        assert np.array_equal(got.eval[key], ev.eval[key]), key
    assert np.array_equal(got.stats, ev.stats)


def test_mask_tasks_of_a_box_only_model_say_what_is_missing():
    gt = _silent(COCO, COCO_GT)
    preds = [{"image_id": 42, "instances": [{"image_id": 42, "category_id": 1, "bbox": [1, 2, 3, 4],
                                             "score": 0.5}]}]
    for iou_type in ("segm", "boundary"):
        with pytest.raises(ValueError, match="pred_masks"):
            rank_partial(gt, preds, iou_type)


def test_lvis_bbox_scores_the_models_boxes():
    gt = LVIS(LVIS_GT)
    with open(LVIS_DT) as f:
        dets = _boxed_detections(json.load(f))
    box_only = [{k: d[k] for k in ("image_id", "category_id", "bbox", "score")} for d in dets]
    ref = LVISEval(gt, copy.deepcopy(box_only), "bbox")
    ref.run()
    preds = _per_image(dets, sorted(gt.get_img_ids()), ("image_id", "category_id", "bbox", "score"))
    got = merge_rank_partials(gt, [rank_partial(gt, r, "bbox") for r in _ranks(preds, 2)], "bbox")
    assert np.array_equal(got.eval["precision"], ref.eval["precision"])
    assert list(got.results.items()) == list(ref.results.items())


@pytest.mark.detectron2
@pytest.mark.parametrize("masks", (True, False), ids=("mask-model", "box-only-model"))
def test_bbox_partials_give_detectron2s_box_ap(masks):
    """Real Detectron2 (optional tier): ``instances_to_coco_json`` of a model's Instances, the
    ranks' partials merged, equal the box AP of Detectron2's own COCOEvaluator on them."""
    pytest.importorskip("detectron2")
    import torch
    from detectron2.data import DatasetCatalog, MetadataCatalog
    from detectron2.data.datasets import register_coco_instances
    from detectron2.evaluation import COCOEvaluator
    from detectron2.evaluation.coco_evaluation import instances_to_coco_json
    from detectron2.structures import Boxes, Instances
    import pycocotools.mask as mask_utils

    from conftest import DATA

    name = "boundary_api_partials_coco_100"
    if name not in DatasetCatalog.list():
        register_coco_instances(name, {}, COCO_GT, DATA)
    _silent(DatasetCatalog.get, name)
    to_contiguous = MetadataCatalog.get(name).thing_dataset_id_to_contiguous_id
    gt = _silent(COCO, COCO_GT)
    with open(COCO_DT) as f:
        dets = _boxed_detections(json.load(f))
    ev = _silent(COCOEvaluator, name, ("bbox",), False, use_fast_impl=False)
    ev.reset()
    predictions = []
    for img_id in sorted(gt.getImgIds()):
        img = gt.imgs[img_id]
        rs = [d for d in dets if d["image_id"] == img_id]
        inst = Instances((img["height"], img["width"]))
        xywh = np.array([d["bbox"] for d in rs], np.float64).reshape(-1, 4)
        inst.pred_boxes = Boxes(torch.from_numpy(np.hstack([xywh[:, :2], xywh[:, :2] + xywh[:, 2:]])).float())
        inst.scores = torch.tensor([d["score"] for d in rs], dtype=torch.float64)
        inst.pred_classes = torch.tensor([to_contiguous[d["category_id"]] for d in rs], dtype=torch.int64)
        if masks and rs:
            inst.pred_masks = torch.from_numpy(np.stack([mask_utils.decode(d["segmentation"]) for d in rs]) > 0)
        inp = {"image_id": img_id, "height": img["height"], "width": img["width"]}
        ev.process([inp], [{"instances": inst}])
        predictions.append({"image_id": img_id, "instances": instances_to_coco_json(inst, img_id)})
    theirs = _silent(ev.evaluate)["bbox"]
    reverse = {v: k for k, v in to_contiguous.items()}
    parts = [rank_partial(gt, r, "bbox", category_id_map=reverse) for r in _ranks(predictions, 2)]
    got = merge_rank_partials(gt, parts, "bbox")
    assert got.stats[0] * 100 == pytest.approx(theirs["AP"], abs=1e-12)
    assert got.stats[1] * 100 == pytest.approx(theirs["AP50"], abs=1e-12)
