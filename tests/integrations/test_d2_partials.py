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
