"""IncrementalEvaluator (issue 28): batch-by-batch COCO AP equal, bit for bit, to
COCOeval on the same data written to JSON; merge, pickling, reset.  No torch here
(quick tier)."""
import contextlib
import gc
import io
import pickle
import weakref

import numpy as np
import pytest
from pycocotools.coco import COCO as OriginalCOCO
from pycocotools.cocoeval import COCOeval as OriginalCOCOeval

import boundary_api
from boundary_api import IncrementalEvaluator

from incremental_data import make_images, write_coco

TYPES = ("boundary", "segm", "bbox")


def _feed(ev, images, batch=8, ids=None):
    for i in range(0, len(images), batch):
        part = images[i:i + batch]
        ev.update([p for p, _ in part], [t for _, t in part],
                  image_ids=None if ids is None else ids[i:i + batch])
    return ev


def _cocoeval(gt_path, dt_path, iou_type, original=False, **params):
    with contextlib.redirect_stdout(io.StringIO()):
        if original:
            gt = OriginalCOCO(gt_path)
            ev = OriginalCOCOeval(gt, gt.loadRes(dt_path), iouType=iou_type)
        else:
            gt = boundary_api.COCO(gt_path)
            ev = boundary_api.COCOeval(gt, gt.loadRes(dt_path), iouType=iou_type)
        for k, v in params.items():
            setattr(ev.params, k, v)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


def _assert_equal_to(res, ev):
    assert np.array_equal(res["stats"], ev.stats), (res["stats"], ev.stats)
    for key in ("precision", "recall", "scores"):
        assert res[key].shape == ev.eval[key].shape, key
        assert np.array_equal(res[key], ev.eval[key]), key


@pytest.fixture(scope="module")
def images():
    return make_images(seed=3, n_images=40, max_side=70)


@pytest.fixture(scope="module")
def results(images):
    return _feed(IncrementalEvaluator(TYPES), images).compute()


@pytest.mark.parametrize("iou_type", TYPES)
def test_equals_cocoeval_on_the_data_as_json(images, results, iou_type, tmp_path):
    gt, dt = write_coco(images, iou_type, str(tmp_path))
    res = results[iou_type]
    _assert_equal_to(res, _cocoeval(gt, dt, iou_type))
    if iou_type != "boundary":
        _assert_equal_to(res, _cocoeval(gt, dt, iou_type, original=True))
    assert res["stats"][1] > 0.01  # a meaningful evaluation, not all zeros


@pytest.mark.parametrize("iou_type", TYPES)
def test_per_class_stats_are_cocoeval_of_each_category_alone(images, results, iou_type, tmp_path):
    gt, dt = write_coco(images, iou_type, str(tmp_path))
    res = results[iou_type]
    assert res["classes"].tolist() == [1, 2, 3, 7]
    for k, c in enumerate(res["classes"].tolist()):
        ev = _cocoeval(gt, dt, iou_type, catIds=[c])
        assert np.array_equal(res["per_class_stats"][k], ev.stats), c


def test_batching_threads_and_background_do_not_change_results(images, results):
    for ev in (IncrementalEvaluator(TYPES, num_threads=1, background=False),
               IncrementalEvaluator(TYPES, num_threads=2, max_pending=1)):
        for batch in (1, 40):
            other = _feed(ev, images, batch=batch).compute()
            for t in TYPES:
                for key in ("stats", "precision", "recall", "scores", "per_class_stats"):
                    assert np.array_equal(other[t][key], results[t][key]), (t, key, batch)
            ev.reset()


def test_image_ids_order_images_as_cocoeval_does(images, tmp_path):
    rng = np.random.default_rng(0)
    ids = rng.permutation(1000)[:len(images)] * 3 + 5
    res = _feed(IncrementalEvaluator("segm"), images, ids=ids.tolist()).compute()["segm"]
    gt, dt = write_coco(images, "segm", str(tmp_path), image_ids=ids)
    _assert_equal_to(res, _cocoeval(gt, dt, "segm", original=True))


def test_merge_of_pickled_parts_is_the_single_process_result(images, results):
    # two data-parallel workers, each with every other image, ids = dataset index
    parts = []
    for rank in range(2):
        ev = IncrementalEvaluator(TYPES)
        mine = list(range(rank, len(images), 2))
        _feed(ev, [images[i] for i in mine], batch=3, ids=mine)
        parts.append(pickle.loads(pickle.dumps(ev)))
    merged = parts[0].merge(parts[1]).compute()
    for t in TYPES:
        for key in ("stats", "precision", "recall", "scores", "per_class_stats"):
            assert np.array_equal(merged[t][key], results[t][key]), (t, key)


def test_merge_without_ids_appends_in_order(images, results):
    first = _feed(IncrementalEvaluator(TYPES), images[:17])
    second = _feed(IncrementalEvaluator(TYPES), images[17:])
    merged = first.merge(second)
    assert merged.num_images == len(images) and second.num_images == len(images) - 17
    out = merged.compute()
    for t in TYPES:
        assert np.array_equal(out[t]["precision"], results[t]["precision"])


def test_merge_refuses_other_settings_and_mixed_ids(images):
    with pytest.raises(ValueError, match="different settings"):
        IncrementalEvaluator("segm").merge(IncrementalEvaluator("segm", maxDets=[1, 10, 50]))
    a = _feed(IncrementalEvaluator("segm"), images[:2])
    b = _feed(IncrementalEvaluator("segm"), images[2:4], ids=[5, 6])
    with pytest.raises(ValueError, match="image ids"):
        a.merge(b)
    with pytest.raises(ValueError, match="image_ids"):
        a.update([images[0][0]], [images[0][1]], image_ids=[9])
    c = _feed(IncrementalEvaluator("segm"), images[:2], ids=[1, 2])
    c.update([images[3][0]], [images[3][1]], image_ids=[2])
    with pytest.raises(ValueError, match="image id 2 was given twice"):
        c.compute()


def test_pickled_evaluator_goes_on_updating(images, results):
    ev = _feed(IncrementalEvaluator(TYPES), images[:24])
    ev = pickle.loads(pickle.dumps(ev))
    out = _feed(ev, images[24:]).compute()
    for t in TYPES:
        assert np.array_equal(out[t]["stats"], results[t]["stats"])


def test_reset_forgets_everything(images, results):
    ev = _feed(IncrementalEvaluator(TYPES), images[:5])
    ev.reset()
    assert ev.num_images == 0
    out = _feed(ev, images).compute()
    for t in TYPES:
        assert np.array_equal(out[t]["precision"], results[t]["precision"])


def test_nothing_given_gives_minus_one():
    out = IncrementalEvaluator(TYPES).compute()
    for t in TYPES:
        assert out[t]["stats"].tolist() == [-1.0] * 12
        assert out[t]["precision"].shape == (10, 101, 0, 4, 3)


@pytest.mark.parametrize("params", [
    dict(useCats=False),
    dict(iouThrs=[0.3, 0.5, 0.75], recThrs=[0.0, 0.25, 0.5, 1.0], maxDets=[2, 100, 5]),
    dict(areaRng=[[0, 1e10], [0, 100], [100, 500], [500, 1e10]]),
])
def test_other_parameters_equal_cocoeval(images, params, tmp_path):
    iou_type = "boundary"
    res = _feed(IncrementalEvaluator(iou_type, **params), images).compute(per_class=False)[iou_type]
    gt, dt = write_coco(images, iou_type, str(tmp_path))
    coco_params = {k: (int(v) if k == "useCats" else np.array(v) if k in ("iouThrs", "recThrs") else
                       sorted(v) if k == "maxDets" else v) for k, v in params.items()}
    _assert_equal_to(res, _cocoeval(gt, dt, iou_type, **coco_params))


def test_dilation_ratio_and_box_formats(images, tmp_path):
    res = _feed(IncrementalEvaluator("boundary", dilation_ratio=0.05), images).compute()["boundary"]
    gt, dt = write_coco(images, "boundary", str(tmp_path))
    with contextlib.redirect_stdout(io.StringIO()):
        g = boundary_api.COCO(gt)
        ev = boundary_api.COCOeval(g, g.loadRes(dt), iouType="boundary", dilation_ratio=0.05)
        ev.evaluate(); ev.accumulate(); ev.summarize()
    _assert_equal_to(res, ev)
    # the same boxes given as xywh and cxcywh
    ref = _feed(IncrementalEvaluator("bbox"), images).compute()["bbox"]
    for fmt in ("xywh", "cxcywh"):
        conv = []
        for p, t in images:
            p, t = dict(p), dict(t)
            for d in (p, t):
                b = d["boxes"].astype(np.float64)
                w, h = b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]
                d["boxes"] = (np.stack([b[:, 0], b[:, 1], w, h], 1) if fmt == "xywh"
                              else np.stack([b[:, 0] + w / 2, b[:, 1] + h / 2, w, h], 1))
            conv.append((p, t))
        out = _feed(IncrementalEvaluator("bbox", box_format=fmt), conv).compute()["bbox"]
        assert np.allclose(out["stats"], ref["stats"], rtol=0, atol=1e-12)


def test_no_mask_is_kept(images):
    preds, target = next(im for im in images if len(im[0]["labels"]) and len(im[1]["labels"]))
    masks = [preds["masks"].copy(), target["masks"].copy()]
    refs = [weakref.ref(m) for m in masks]
    ev = IncrementalEvaluator(TYPES)
    ev.update([dict(preds, masks=masks[0])], [dict(target, masks=masks[1])])
    ev.wait()
    del masks
    gc.collect()
    assert all(r() is None for r in refs)
    state = ev.state_dict()
    for t in TYPES:
        tab = state["tables"][t]
        D = len(tab["dt_score"])
        assert tab["dt_flags"].shape == (4, 10, D) and tab["dt_flags"].dtype == np.uint8
        assert D <= len(preds["labels"])


def test_bad_input_is_refused_at_update(images):
    preds, target = images[1]
    ev = IncrementalEvaluator(TYPES)
    with pytest.raises(ValueError, match="same length"):
        ev.update([preds], [])
    with pytest.raises(ValueError, match="needs 'scores'"):
        ev.update([{k: v for k, v in preds.items() if k != "scores"}], [target])
    with pytest.raises(ValueError, match="'masks' must be"):
        ev.update([dict(preds, masks=preds["masks"][:, 0])], [target])
    with pytest.raises(ValueError, match="differ in size"):
        ev.update([dict(preds, masks=np.zeros((len(preds["labels"]), 3, 3), bool))], [target])
    with pytest.raises(ValueError, match="'boxes' must be"):
        ev.update([preds], [dict(target, boxes=np.zeros((len(target["labels"]), 3)))])
    with pytest.raises(ValueError, match="iou_type"):
        IncrementalEvaluator("keypoints")
    with pytest.raises(ValueError, match="box_format"):
        IncrementalEvaluator("bbox", box_format="yxyx")
    assert ev.num_images == 0


def test_an_error_on_the_background_thread_surfaces(images):
    preds, target = next(im for im in images if len(im[0]["labels"]))
    ev = IncrementalEvaluator("segm")
    ev.update([dict(preds, labels=preds["labels"] + 0.5)], [target])
    with pytest.raises(ValueError, match="labels must be integers"):
        ev.wait()
