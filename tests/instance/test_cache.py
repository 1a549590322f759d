"""One boundary per annotation and dilation ratio, for the life of the dataset object."""
import contextlib
import copy
import gc
import io
import json

import numpy as np

import boundary_api.instance.cache as cache_mod
from boundary_api import COCO, COCOeval, cache_for
from conftest import COCO_DT, COCO_GT


def evaluate(gt, results, ratio=0.02):
    with contextlib.redirect_stdout(io.StringIO()):
        dt = gt.loadRes(results)
        ev = COCOeval(gt, dt, "boundary", dilation_ratio=ratio)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev, dt


def three_result_lists():
    with open(COCO_DT) as f:
        base = json.load(f)
    rng = np.random.default_rng(0)
    out = []
    for _ in range(3):
        res = [dict(d, score=float(rng.random())) for d in base]
        out.append(res)
    return out


def test_ground_truth_boundaries_are_computed_once(monkeypatch):
    calls = []
    real = cache_mod.boundary_counts

    def spy(counts, *args, **kwargs):
        calls.append(len(counts))
        return real(counts, *args, **kwargs)

    monkeypatch.setattr(cache_mod, "boundary_counts", spy)
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
    gt_cache = cache_for(gt)
    dts, n_dt = [], []
    for res in three_result_lists():
        ev, dt = evaluate(gt, res)
        dts.append(dt)
        n_dt.append(len(ev._state.dt_anns))
        n_gt = len(ev._state.gt_anns)
        # ground truth: computed on the first evaluation only
        assert gt_cache.computed["boundaries"] == n_gt
        # each result file: its own detections, once
        assert cache_for(dt).computed["boundaries"] == len(ev._state.dt_anns)
    # 1 call for the ground truth + 1 per result file, nothing else
    assert len(calls) == 4
    assert calls[0] == n_gt
    assert calls[1:] == n_dt
    # a second evaluation of the same pair computes nothing at all
    before = len(calls)
    with contextlib.redirect_stdout(io.StringIO()):
        ev = COCOeval(gt, dts[0], "boundary")
        ev.evaluate()
    assert len(calls) == before
    # another dilation ratio is another boundary
    evaluate(gt, three_result_lists()[0], ratio=0.05)
    assert gt_cache.computed["boundaries"] == 2 * n_gt


def test_cached_numbers_equal_fresh_numbers():
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
    first, _ = evaluate(gt, json.load(open(COCO_DT)))
    again, _ = evaluate(gt, json.load(open(COCO_DT)))
    with contextlib.redirect_stdout(io.StringIO()):
        fresh_gt = COCO(COCO_GT)
    fresh, _ = evaluate(fresh_gt, json.load(open(COCO_DT)))
    np.testing.assert_array_equal(first.stats, again.stats)
    np.testing.assert_array_equal(first.stats, fresh.stats)


def test_cache_goes_away_with_its_dataset():
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
    evaluate(gt, json.load(open(COCO_DT)))
    assert gt in cache_mod._CACHES
    n = len(cache_mod._CACHES)
    del gt
    gc.collect()
    assert len(cache_mod._CACHES) < n


def test_masks_and_boundaries_are_keyed_by_annotation_object():
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
    c = cache_for(gt)
    anns = gt.dataset["annotations"][:5]
    b1 = c.boundaries(anns, 0.02)
    b2 = c.boundaries(list(reversed(anns)), 0.02)
    assert b2 == list(reversed(b1))
    assert c.computed["boundaries"] == 5
    assert c.computed["masks"] == 5


def _boundary_stats(gt, dt):
    with contextlib.redirect_stdout(io.StringIO()):
        ev = COCOeval(gt, dt, "boundary")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev.stats


def _fresh_copy(ds):
    """A new dataset object of the same (edited) annotations."""
    with contextlib.redirect_stdout(io.StringIO()):
        return COCO.from_dataset(copy.deepcopy(ds.dataset))


def test_segmentations_edited_in_place_are_seen():
    """Edited dicts are seen; only what changed is computed again.  (Results
    here come from a list: read from a file, a results object finds its
    detections' boundaries inside the IoU step and keeps none, see
    tests/instance/test_columns.py.)"""
    import pycocotools.mask as mask_utils

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        with open(COCO_DT) as f:
            dt = gt.loadRes(json.load(f))
    before = _boundary_stats(gt, dt)
    gt_done = cache_for(gt).computed["boundaries"]
    dt_done = cache_for(dt).computed["boundaries"]
    # results: new counts in the same dict (a mask moved 6 px to the right)
    edited_dt = 0
    for ann in list(dt.anns.values())[::2]:
        m = mask_utils.decode(ann["segmentation"])
        ann["segmentation"]["counts"] = mask_utils.encode(np.asfortranarray(np.roll(m, 6, 1)))["counts"].decode()
        edited_dt += 1
    # ground truth: polygon coordinates changed in place, a segmentation replaced
    polygons = [a for a in gt.anns.values() if type(a["segmentation"]) is list]
    for ann in polygons[::3]:
        ann["segmentation"][0][0] += 9.0
    polygons[1]["segmentation"] = copy.deepcopy(polygons[2]["segmentation"])
    edited_gt = len(polygons[::3]) + 1
    after = _boundary_stats(gt, dt)
    assert not np.array_equal(after, before)
    np.testing.assert_array_equal(after, _boundary_stats(_fresh_copy(gt), _fresh_copy(dt)))
    # only the edited annotations got new boundaries
    assert cache_for(dt).computed["boundaries"] == dt_done + edited_dt
    assert cache_for(gt).computed["boundaries"] <= gt_done + edited_gt


def test_pycocotools_polygon_to_rle_replacement_keeps_boundaries():
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        dt = gt.loadRes(COCO_DT)
    stats = _boundary_stats(gt, dt)
    c = cache_for(gt)
    done = (c.computed["boundaries"], c.computed["masks"])
    polygon = next(a for a in gt.anns.values() if type(a["segmentation"]) is list)
    with contextlib.redirect_stdout(io.StringIO()):
        ev = COCOeval(gt, dt, "segm")
        ev.evaluate()  # pycocotools' _prepare replaces polygons by their RLE
    assert type(polygon["segmentation"]) is dict
    np.testing.assert_array_equal(_boundary_stats(gt, dt), stats)
    assert (c.computed["boundaries"], c.computed["masks"]) == done
