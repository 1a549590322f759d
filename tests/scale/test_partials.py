"""Partials of image subsets, merged in any order, give one evaluation's numbers bit for bit."""
import contextlib
import copy
import io
import pickle

import numpy as np
import pycocotools.cocoeval
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api import COCO, COCOeval, LVIS, LVISEval, LVISResults
from boundary_api.scale.partials import (Partial, accumulate_partial, evaluate_partial, merge_partials,
                                            partial_from_evaluator)
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT
from synth import boxes_only, fresh, make_dataset, make_lvis_dataset

IOU_TYPES = ("segm", "bbox", "boundary")
ARRAYS = ("img_ids", "pair_img", "pair_cat", "pair_nd", "npig", "dt_score", "dt_flags")


def _silent(fn, *a, **k):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*a, **k)


def _coco_reference(gt, dt, iou, **params):
    ev = COCOeval(gt, dt, iou)
    for k, v in params.items():
        setattr(ev.params, k, v)
    _silent(ev.evaluate)
    _silent(ev.accumulate)
    _silent(ev.summarize)
    return ev


def assert_same_coco(ref, got):
    for key in ("precision", "recall", "scores"):
        assert got.eval[key].shape == ref.eval[key].shape
        assert np.array_equal(got.eval[key], ref.eval[key]), key
    assert np.array_equal(got.stats, ref.stats)
    assert got.eval["counts"] == ref.eval["counts"]


def assert_same_lvis(ref, got):
    for key in ("precision", "recall"):
        assert np.array_equal(got.eval[key], ref.eval[key]), key
    assert list(got.results.items()) == list(ref.results.items())


def _shards(ids, n, seed):
    ids = np.array(sorted(ids))
    np.random.default_rng(seed).shuffle(ids)
    return [list(s) for s in np.array_split(ids, n)]


# ------------------------------------------------------------------ shipped data
@pytest.fixture(scope="module")
def coco():
    gt = _silent(COCO, COCO_GT)
    dt = _silent(gt.loadRes, COCO_DT)
    return gt, dt


@pytest.mark.parametrize("iou", IOU_TYPES)
def test_coco_shipped_data_any_sharding(coco, iou):
    gt, dt = coco
    if iou == "bbox":
        dt = _silent(gt.loadRes, boxes_only([{k: a[k] for k in ("image_id", "category_id", "segmentation",
                                                                   "score")} for a in dt.dataset["annotations"]]))
    ref = _coco_reference(gt, dt, iou)
    for n, seed in ((1, 0), (3, 1), (7, 2)):
        parts = [evaluate_partial(gt, dt, iou, s) for s in _shards(gt.getImgIds(), n, seed)]
        got = accumulate_partial(merge_partials(parts[::-1]), img_ids=gt.getImgIds())
        assert_same_coco(ref, got)


@pytest.mark.parametrize("iou", IOU_TYPES)
def test_lvis_shipped_data_any_sharding(iou):
    gt = LVIS(LVIS_GT)
    dt = LVISResults(gt, LVIS_DT)
    ref = LVISEval(gt, dt, iou)
    ref.run()
    for n, seed in ((2, 0), (5, 1)):
        parts = [evaluate_partial(gt, dt, iou, s) for s in _shards(gt.get_img_ids(), n, seed)]
        got = accumulate_partial(merge_partials(parts[1:] + parts[:1]), img_ids=gt.get_img_ids())
        assert_same_lvis(ref, got)


def test_lvis_per_image_cap_applied_per_shard():
    """Each shard loads its own results with the per-image cap: same numbers as capping all at once."""
    import json

    gt = LVIS(LVIS_GT)
    with open(LVIS_DT) as f:
        dets = json.load(f)
    ref = LVISEval(gt, LVISResults(gt, fresh(dets), max_dets=5), "segm", max_dets=5)
    ref.run()
    parts = []
    for s in _shards(gt.get_img_ids(), 4, 3):
        keep = set(s)
        parts.append(evaluate_partial(gt, [fresh(d) for d in dets if d["image_id"] in keep], "segm", s,
                                      max_dets=5))
    assert_same_lvis(ref, accumulate_partial(merge_partials(parts)))


# -------------------------------------------------------------- intermediate values
@pytest.mark.parametrize("iou", ("segm", "boundary"))
def test_partial_from_kernels_equals_partial_from_library_loops(coco, iou):
    """The engine's arrays and pycocotools' public evalImgs give the same partial."""
    gt, dt = coco
    ids = _shards(gt.getImgIds(), 3, 5)[0]
    fast = evaluate_partial(gt, dt, iou, ids)
    ev = COCOeval(gt, dt, iou, use_fast_impl=False)
    ev.params.imgIds = ids
    _silent(ev.evaluate)
    slow = partial_from_evaluator(ev)
    for name in ARRAYS:
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name


def test_partial_of_plain_pycocotools(coco):
    """pycocotools' own COCOeval (public evalImgs) gives the same partial for segm."""
    gt, dt = coco
    ids = _shards(gt.getImgIds(), 2, 9)[1]
    ev = pycocotools.cocoeval.COCOeval(gt, dt, "segm")
    ev.params.imgIds = ids
    _silent(ev.evaluate)
    plain = partial_from_evaluator(ev)
    ours = evaluate_partial(gt, dt, "segm", ids)
    for name in ARRAYS:
        assert np.array_equal(getattr(plain, name), getattr(ours, name)), name


def test_partial_is_compact_and_picklable(coco):
    gt, dt = coco
    part = evaluate_partial(gt, dt, "boundary")
    back = pickle.loads(pickle.dumps(part))
    for name in ARRAYS:
        assert np.array_equal(getattr(back, name), getattr(part, name))
    # per detection: a score and 2 x A x T flag bits
    D = len(dt.dataset["annotations"])
    assert part.dt_flags.shape == (D, 10)
    assert part.flags().shape == (4, 10, D)
    assert set(np.unique(part.flags())) <= {0, 1, 2, 3}
    # and per (image, category) pair: image id, category, count, A ground-truth counts
    assert part.nbytes <= 18 * D + 32 * len(part.pair_img) + 8 * 100


# ---------------------------------------------------------- accumulate variants
def test_coco_custom_params_and_accumulate_subsets(coco):
    gt, dt = coco
    params = {"maxDets": [1, 5, 20], "iouThrs": np.array([0.3, 0.5, 0.8]), "areaRng": [[0, 1e10], [0, 2000]],
              "areaRngLbl": ["all", "small"]}
    ev = COCOeval(gt, dt, "boundary")
    for k, v in params.items():
        setattr(ev.params, k, v)
    _silent(ev.evaluate)
    parts = [evaluate_partial(gt, dt, "boundary", s, params=params) for s in _shards(gt.getImgIds(), 4, 1)]
    merged = merge_partials(parts)
    # accumulate with fewer maxDets, other recall thresholds and part of the images
    p = copy.deepcopy(ev.params)
    p.maxDets = [5, 20]
    p.recThrs = np.linspace(0, 1, 11)
    p.imgIds = sorted(gt.getImgIds())[::3]
    _silent(ev.accumulate, p)
    got = accumulate_partial(merged, params=p, summarize=False)
    for key in ("precision", "recall", "scores"):
        assert np.array_equal(got.eval[key], ev.eval[key]), key


def test_coco_without_categories(coco):
    gt, dt = coco
    ref = _coco_reference(gt, dt, "segm", useCats=0)
    parts = [evaluate_partial(gt, dt, "segm", s, params={"useCats": 0}) for s in _shards(gt.getImgIds(), 3, 4)]
    assert_same_coco(ref, accumulate_partial(merge_partials(parts)))


# --------------------------------------------------------------------- errors
def test_merge_refuses_overlaps_mixed_parameters_and_nothing(coco):
    gt, dt = coco
    a, b = _shards(gt.getImgIds(), 2, 0)
    pa = evaluate_partial(gt, dt, "segm", a)
    with pytest.raises(ValueError, match="more than one partial"):
        merge_partials([pa, evaluate_partial(gt, dt, "segm", a[:3])])
    with pytest.raises(ValueError, match="other parameters"):
        merge_partials([pa, evaluate_partial(gt, dt, "bbox", b)])
    with pytest.raises(ValueError, match="no partials"):
        merge_partials([])
    with pytest.raises(TypeError, match="Partial"):
        merge_partials([pa, {"not": "a partial"}])


def test_missing_shard_fails_instead_of_returning_numbers(coco):
    gt, dt = coco
    parts = [evaluate_partial(gt, dt, "segm", s) for s in _shards(gt.getImgIds(), 3, 0)]
    with pytest.raises(ValueError, match="shard is missing"):
        accumulate_partial(merge_partials(parts[:2]), img_ids=gt.getImgIds())


def test_bad_arguments(coco):
    gt, dt = coco
    with pytest.raises(ValueError, match="not in the ground truth"):
        evaluate_partial(gt, dt, "segm", [10 ** 12])
    with pytest.raises(ValueError, match="can be set"):
        evaluate_partial(gt, dt, "segm", params={"imgIds": [1]})
    with pytest.raises(TypeError, match="integers"):
        evaluate_partial(gt, dt, "segm", ["a"])
    with pytest.raises(ValueError, match="iou_type"):
        evaluate_partial(gt, dt, "keypoints")


# ------------------------------------------------------- generated data, hypothesis
@pytest.fixture(scope="module")
def synth_coco():
    gt_data, dets = make_dataset(seed=3, num_images=24)
    gt = COCO.from_dataset(gt_data)
    out = {}
    for iou in IOU_TYPES:
        res = boxes_only(dets) if iou == "bbox" else fresh(dets)
        dt = _silent(gt.loadRes, res)
        out[iou] = (gt, dt, _coco_reference(gt, dt, iou))
    return out


@pytest.fixture(scope="module")
def synth_lvis():
    gt_data, dets = make_lvis_dataset(seed=4, num_images=24)
    gt = LVIS.from_dataset(gt_data)
    dt = LVISResults(gt, fresh(dets), max_dets=20)
    out = {}
    for iou in IOU_TYPES:
        ref = LVISEval(gt, dt, iou, max_dets=20)
        ref.run()
        out[iou] = (gt, dt, ref)
    return out


shardings = st.tuples(st.integers(1, 6), st.integers(0, 2 ** 32 - 1), st.sampled_from(IOU_TYPES))
_settings = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@_settings
@given(shardings)
def test_random_shardings_coco(synth_coco, sharding):
    n, seed, iou = sharding
    gt, dt, ref = synth_coco[iou]
    shards = _shards(gt.getImgIds(), n, seed)
    rng = np.random.default_rng(seed)
    parts = [evaluate_partial(gt, dt, iou, s) for s in shards]
    parts = [parts[i] for i in rng.permutation(len(parts))]
    assert_same_coco(ref, accumulate_partial(merge_partials(parts), img_ids=gt.getImgIds()))


@_settings
@given(shardings)
def test_random_shardings_lvis(synth_lvis, sharding):
    n, seed, iou = sharding
    gt, dt, ref = synth_lvis[iou]
    shards = _shards(gt.get_img_ids(), n, seed)
    parts = [evaluate_partial(gt, dt, iou, s, max_dets=20) for s in shards]
    parts = [parts[i] for i in np.random.default_rng(seed).permutation(len(parts))]
    assert_same_lvis(ref, accumulate_partial(merge_partials(parts), img_ids=gt.get_img_ids()))


@_settings
@given(st.lists(st.integers(0, 5), min_size=24, max_size=24))
def test_merging_merged_partials_is_the_same(synth_coco, assignment):
    """Merging is associative: merge(merge(a, b), c) == merge(a, b, c)."""
    gt, dt, ref = synth_coco["segm"]
    ids = sorted(gt.getImgIds())
    groups = {}
    for img, g in zip(ids, assignment):
        groups.setdefault(g, []).append(img)
    parts = [evaluate_partial(gt, dt, "segm", s) for s in groups.values()]
    flat = merge_partials(parts)
    nested = merge_partials([merge_partials(parts[:1]), merge_partials(parts[1:])]) if len(parts) > 1 else flat
    for name in ARRAYS:
        assert np.array_equal(getattr(flat, name), getattr(nested, name)), name
    assert_same_coco(ref, accumulate_partial(nested))
    assert isinstance(flat, Partial)


@pytest.mark.parametrize("block", (1, 57))
def test_accumulation_in_category_blocks_is_the_same(synth_coco, synth_lvis, monkeypatch, block):
    """Accumulating a few categories' detections at a time (bounded memory) changes nothing."""
    from boundary_api.scale import partials

    monkeypatch.setattr(partials, "ACCUMULATE_BLOCK", block)
    gt, dt, ref = synth_coco["boundary"]
    parts = [evaluate_partial(gt, dt, "boundary", s) for s in _shards(gt.getImgIds(), 3, 0)]
    assert_same_coco(ref, accumulate_partial(merge_partials(parts)))
    gt, dt, ref = synth_lvis["segm"]
    assert_same_lvis(ref, accumulate_partial(evaluate_partial(gt, dt, "segm", max_dets=20)))
