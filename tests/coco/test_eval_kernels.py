"""The matching and accumulation kernels against pycocotools on random box
scenes: tied scores, many detections per image, several ``maxDets`` and
image subsets.  Every ``eval`` array is compared bit for bit, and the
``evalImgs`` matches (made again from the IoUs when first read) too."""
import contextlib
import copy
import io

import numpy as np
import pycocotools.coco
import pycocotools.cocoeval
import pytest

from boundary_api import COCO, COCOeval


def _scene(seed):
    rng = np.random.default_rng(seed)
    images = [{"id": i, "height": 200, "width": 300} for i in range(1, 9)]
    cats = [{"id": c, "name": str(c)} for c in (1, 2, 3)]
    anns, dets = [], []
    for im in images:
        for _ in range(int(rng.integers(0, 6))):
            x, y = rng.integers(0, 250), rng.integers(0, 150)
            w, h = rng.integers(2, 60), rng.integers(2, 60)
            anns.append({"id": len(anns) + 1, "image_id": im["id"], "category_id": int(rng.integers(1, 4)),
                         "bbox": [float(x), float(y), float(w), float(h)], "area": float(w * h),
                         "iscrowd": int(rng.random() < 0.1)})
        for _ in range(int(rng.integers(0, 40))):
            base = anns[int(rng.integers(0, len(anns)))]["bbox"] if anns and rng.random() < 0.7 else [50, 50, 20, 20]
            box = [float(v + rng.integers(-6, 7)) for v in base]
            box[2], box[3] = max(box[2], 1.0), max(box[3], 1.0)
            dets.append({"image_id": im["id"], "category_id": int(rng.integers(1, 4)), "bbox": box,
                         "score": float(rng.choice([0.9, 0.5, 0.5, 0.3])) if rng.random() < 0.5 else float(rng.random())})
    return {"images": images, "categories": cats, "annotations": anns}, dets


def _run(coco_cls, eval_cls, gt_d, dets, max_dets, img_ids):
    with contextlib.redirect_stdout(io.StringIO()):
        gt = coco_cls()
        gt.dataset = copy.deepcopy(gt_d)
        gt.createIndex()
        dt = gt.loadRes(copy.deepcopy(dets))
        ev = eval_cls(gt, dt, "bbox")
        ev.params.maxDets = list(max_dets)
        if img_ids is not None:
            ev.params.imgIds = img_ids
        ev.evaluate()
        ev.accumulate()
    return ev


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("max_dets,img_ids", [([1, 10, 100], None), ([3], [2, 3, 5]), ([0, 2, 7], None)])
def test_eval_arrays_and_matches_equal_pycocotools(seed, max_dets, img_ids):
    gt_d, dets = _scene(seed)
    if not dets:
        pytest.skip("no detections drawn")
    ours = _run(COCO, COCOeval, gt_d, dets, max_dets, img_ids)
    theirs = _run(pycocotools.coco.COCO, pycocotools.cocoeval.COCOeval, gt_d, dets, max_dets, img_ids)
    for k in ("precision", "recall", "scores"):
        assert ours.eval[k].tobytes() == theirs.eval[k].tobytes(), k
    assert len(ours.evalImgs) == len(theirs.evalImgs)
    for a, b in zip(ours.evalImgs, theirs.evalImgs):
        assert (a is None) == (b is None)
        if a is not None:
            for k in ("dtMatches", "gtMatches", "dtIgnore", "gtIgnore"):
                np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def _crowded_scene(seed):
    """Many detections per category (the sort's radix path, past 48), scores
    with ties, signed zeros and negatives, images holding more detections
    than some maxDets and fewer than others."""
    gt_d, dets = _scene(seed)
    rng = np.random.default_rng(1000 + seed)
    more = []
    for d in dets:
        for _ in range(int(rng.integers(0, 4))):
            e = dict(d, bbox=[v + float(rng.integers(-3, 4)) for v in d["bbox"]])
            e["bbox"][2], e["bbox"][3] = max(e["bbox"][2], 1.0), max(e["bbox"][3], 1.0)
            e["score"] = float(rng.choice([0.0, -0.0, -0.25, 0.5, 1e-300, -1e-300, 2.0, float(rng.random())]))
            more.append(e)
    return gt_d, dets + more


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("max_dets,rec_thrs", [
    ([1, 10, 100], None),                      # the usual: 100 keeps all, 10 some
    ([5, 5, 300], None),                       # an entry repeated: its cells copied
    ([2, 1000, 300], [0.3, 0.0, 1.0, 0.5]),    # thresholds not sorted: searched one by one
    ([7], np.linspace(0.0, 1.0, 11)[::-1]),
])
def test_crowded_categories_equal_pycocotools(seed, max_dets, rec_thrs):
    gt_d, dets = _crowded_scene(seed)
    if not dets:
        pytest.skip("no detections drawn")
    evs = []
    for coco_cls, eval_cls in ((COCO, COCOeval), (pycocotools.coco.COCO, pycocotools.cocoeval.COCOeval)):
        with contextlib.redirect_stdout(io.StringIO()):
            gt = coco_cls()
            gt.dataset = copy.deepcopy(gt_d)
            gt.createIndex()
            dt = gt.loadRes(copy.deepcopy(dets))
            ev = eval_cls(gt, dt, "bbox")
            ev.params.maxDets = list(max_dets)
            if rec_thrs is not None:
                ev.params.recThrs = np.asarray(rec_thrs, np.float64)
            ev.evaluate()
            ev.accumulate()
        evs.append(ev)
    ours, theirs = evs
    for k in ("precision", "recall", "scores"):
        assert ours.eval[k].tobytes() == theirs.eval[k].tobytes(), k
