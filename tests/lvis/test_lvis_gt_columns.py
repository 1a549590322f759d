"""An LVIS ground truth read as columns (``LVIS(path)`` fast path) against
the dict path, which follows lvis 0.5.3.

``LVIS(path)`` on a file in the LVIS ground-truth schema reads the
annotations into arrays; ``dataset``, ``anns``, ``img_ann_map`` and
``cat_img_map`` are made only when somebody reads them, and ``LVISEval``
evaluates from the arrays.  Everything must be as with the dicts: every eval
array and result, every ``eval_imgs`` entry, every ``ious`` matrix, ``_gts``,
and the dicts and indices themselves once made (key order and value types
included), with what lvis' evaluation writes into them (``ignore``, RLEs in
place of polygons for 'segm') and the empty ``img_ann_map`` entries its
look-ups leave.
"""
import copy
import gzip
import json
import logging
import warnings

import lvis
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api import LVIS, LVISResults
from boundary_api.instance._checks import SuspectInputWarning
from boundary_api.instance.cache import cache_for

from conftest import LVIS_DT, LVIS_GT
from synth import assert_same_evaluation as _assert_same, assert_same_eval_imgs, assert_same_lvis_index, evaluate_lvis as _evaluate, make_lvis_dataset
from synth import same_value as _same_value
from synth import with_boxes, write_json as _write


def _dict_gt(path):
    with open(path) as f:
        return LVIS.from_dataset(json.load(f))


def _assert_same_ground_truth(fast, ref):
    """The dataset, dicts and indices of two ground truths, types included."""
    assert_same_lvis_index(fast, ref)
    # the objects indexed are the ones in the dataset
    for img in fast.dataset["images"]:
        assert fast.imgs[img["id"]] is img
    index = {ann["id"]: ann for ann in fast.dataset["annotations"]}  # (a repeated id: the last)
    assert all(fast.anns[k] is v for k, v in index.items())


def _assert_same_gts(a, b):
    """``_gts`` of two evaluators: same keys in the same order, same dicts."""
    ga, gb = a._gts, b._gts
    assert list(ga) == list(gb)
    _same_value(dict(ga), dict(gb))


# ------------------------------------------------------------------ shipped data

PARAMS = [
    {},
    {"cat_ids": [852, 1, 3, 99, 1000]},
    {"img_ids": [565853, 266409]},
    {"area_rng": [[0, 1e5 ** 2], [100, 1000], [1000, 1e10]], "area_rng_lbl": ["all", "small", "medium"]},
    {"iou_thrs": np.array([0.3, 0.5, 0.95])},
]


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["segm", "bbox", "boundary"])
@pytest.mark.parametrize("params", PARAMS, ids=["default", "cat_ids", "img_ids", "area_rng", "iou_thrs"])
def test_shipped_lvis_data(iou_type, params):
    fast_gt = LVIS(LVIS_GT)
    assert fast_gt._gt_columns is not None
    slow_gt = _dict_gt(LVIS_GT)
    assert slow_gt._gt_columns is None
    fast_dt = LVISResults(fast_gt, LVIS_DT)
    slow_dt = LVISResults(slow_gt, LVIS_DT)
    assert fast_dt._columns is not None and slow_dt._columns is not None
    assert fast_gt._gt_columns is not None  # the results did not make the dicts
    a = _evaluate(fast_gt, fast_dt, iou_type, params)
    b = _evaluate(slow_gt, slow_dt, iou_type, params)
    assert a._state.gt_columns is not None and b._state.gt_columns is None
    assert fast_gt._gt_columns is not None  # no dict was made
    _assert_same(a, b)
    _assert_same_gts(a, b)
    # made now: the dicts carry what the evaluation wrote into them
    _assert_same_ground_truth(fast_gt, slow_gt)
    if iou_type == "segm":
        segs = [ann["segmentation"] for ann in a._gts[next(iter(a._gts))]]
        assert all(type(s) is dict and type(s["counts"]) is bytes for s in segs)
    _assert_same_ground_truth(LVISResults(fast_gt, LVIS_DT), LVISResults(slow_gt, LVIS_DT))


def test_materialised_dicts_are_plain_lvis():
    """Read before any evaluation, the dicts are what plain lvis makes."""
    fast = LVIS(LVIS_GT)
    ref = lvis.LVIS(LVIS_GT)
    assert fast.get_img_ids() == ref.get_img_ids()
    assert fast.get_cat_ids() == ref.get_cat_ids()
    ids = ref.get_img_ids()[:5]
    assert fast.load_imgs(ids) == ref.load_imgs(ids)
    assert fast.load_cats(None) == ref.load_cats(None)
    assert fast._gt_columns is not None  # images and categories are read without the annotations
    assert fast.get_ann_ids(img_ids=ids, cat_ids=[852, 3]) == ref.get_ann_ids(img_ids=ids, cat_ids=[852, 3])
    assert fast._gt_columns is None
    _assert_same_ground_truth(fast, ref)
    assert fast.get_ann_ids() == ref.get_ann_ids()
    assert fast.get_ann_ids(cat_ids=[852], area_rng=[10, 1000]) == ref.get_ann_ids(cat_ids=[852], area_rng=[10, 1000])
    first = ref.get_ann_ids()[:7]
    _same_value(fast.load_anns(first), ref.load_anns(first))
    assert "iscrowd" not in fast.anns[first[0]]
    np.testing.assert_array_equal(fast.ann_to_mask(fast.anns[first[0]]), ref.ann_to_mask(ref.anns[first[0]]))


def test_log_messages_are_lvis(caplog):
    with caplog.at_level(logging.INFO, logger="lvis"):
        LVIS(LVIS_GT)
    fast = [(r.name, r.getMessage()) for r in caplog.records]
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="lvis"):
        lvis.LVIS(LVIS_GT)
    assert fast == [(r.name, r.getMessage()) for r in caplog.records]


def test_several_evaluations_then_the_dicts():
    """segm, then bbox on one ground truth, then boundary with an unknown
    image (lvis' KeyError, raised on the dicts, made then): the dicts have
    each evaluation's changes, in order; a later evaluation on the dicts
    gives what the dict path gives."""
    fast_gt, slow_gt = LVIS(LVIS_GT), _dict_gt(LVIS_GT)
    subsets = [{}, {"cat_ids": [852, 1]}, {"img_ids": [565853, 266409, 12345678]}]
    for iou_type, params in zip(("segm", "bbox", "boundary"), subsets):
        a = _evaluate(fast_gt, LVISResults(fast_gt, LVIS_DT), iou_type, params) if "img_ids" not in params else None
        if a is None:  # an unknown image id: lvis' KeyError, from the dicts (made now)
            with pytest.raises(KeyError) as ka:
                _evaluate(fast_gt, LVISResults(fast_gt, LVIS_DT), iou_type, params)
            with pytest.raises(KeyError) as kb:
                _evaluate(slow_gt, LVISResults(slow_gt, LVIS_DT), iou_type, params)
            assert ka.value.args == kb.value.args
            assert fast_gt._gt_columns is None
            continue
        _assert_same(a, _evaluate(slow_gt, LVISResults(slow_gt, LVIS_DT), iou_type, params), full=False)
        assert a._state.gt_columns is not None
    _assert_same_ground_truth(fast_gt, slow_gt)
    for iou_type in ("boundary", "segm"):
        a = _evaluate(fast_gt, LVISResults(fast_gt, LVIS_DT), iou_type)
        assert a._state.gt_columns is None
        _assert_same(a, _evaluate(slow_gt, LVISResults(slow_gt, LVIS_DT), iou_type), full=False)
    _assert_same_ground_truth(fast_gt, slow_gt)


def test_evaluations_in_a_row_on_columns():
    fast_gt, slow_gt = LVIS(LVIS_GT), _dict_gt(LVIS_GT)
    for iou_type in ("bbox", "segm", "boundary"):
        a = _evaluate(fast_gt, LVISResults(fast_gt, LVIS_DT), iou_type)
        b = _evaluate(slow_gt, LVISResults(slow_gt, LVIS_DT), iou_type)
        assert a._state.gt_columns is not None
        _assert_same(a, b, full=False)
    assert fast_gt._gt_columns is not None
    _assert_same_ground_truth(fast_gt, slow_gt)


def test_second_run_of_one_evaluator():
    """lvis' _prepare adds to what an earlier evaluation left in _gts: a
    second ``run`` of the same evaluator gives what lvis gives."""
    fast_gt, slow_gt = LVIS(LVIS_GT), _dict_gt(LVIS_GT)
    a = _evaluate(fast_gt, LVISResults(fast_gt, LVIS_DT), "segm")
    b = _evaluate(slow_gt, LVISResults(slow_gt, LVIS_DT), "segm")
    a.run()
    b.run()
    _assert_same(a, b, full=False)
    _assert_same_ground_truth(fast_gt, slow_gt)



def test_slow_loops_read_the_dicts(tmp_path):
    gt_dict, dets = make_lvis_dataset(seed=9, num_images=8)
    gt_path = _write(tmp_path, "gt.json", gt_dict)
    fast_gt = LVIS(gt_path)
    loops = _evaluate(fast_gt, copy.deepcopy(dets), "segm", use_fast_impl=False)
    assert fast_gt._gt_columns is None
    ref = _evaluate(LVIS.from_dataset(copy.deepcopy(gt_dict)), copy.deepcopy(dets), "segm", use_fast_impl=False)
    for key in ("precision", "recall"):
        np.testing.assert_array_equal(loops.eval[key], ref.eval[key])
    assert_same_eval_imgs(loops.eval_imgs, ref.eval_imgs)


def test_lazy_gts_and_compute_iou():
    fast_gt, slow_gt = LVIS(LVIS_GT), _dict_gt(LVIS_GT)
    a = _evaluate(fast_gt, LVISResults(fast_gt, LVIS_DT), "segm")
    b = _evaluate(slow_gt, LVISResults(slow_gt, LVIS_DT), "segm")
    keys = list(b._gts)[:4]
    for img, cat in keys:
        np.testing.assert_array_equal(np.asarray(a.compute_iou(img, cat)), np.asarray(b.compute_iou(img, cat)))
    _assert_same_gts(a, b)


def test_masks_and_boundaries_made_once_and_kept():
    gt = LVIS(LVIS_GT)
    _evaluate(gt, LVISResults(gt, LVIS_DT), "boundary")
    done = cache_for(gt).computed["boundaries"]
    assert done > 0
    _evaluate(gt, LVISResults(gt, LVIS_DT), "boundary")
    assert cache_for(gt).computed["boundaries"] == done  # a second evaluation reuses them
    gt.anns  # noqa: B018 - the dicts: the cache takes the boundaries over
    a = _evaluate(gt, LVISResults(gt, LVIS_DT), "boundary")
    assert a._state.gt_columns is None
    assert cache_for(gt).computed["boundaries"] == done


@pytest.mark.parametrize("iou_type", ["bbox", "boundary"])
def test_thread_count_does_not_matter(tmp_path, iou_type):
    gt_dict, dets = make_lvis_dataset(seed=12, num_images=12)
    gt = LVIS(_write(tmp_path, "gt.json", gt_dict))
    dt_path = _write(tmp_path, "dt.json", dets)
    one = _evaluate(gt, LVISResults(gt, dt_path), iou_type, num_threads=1)
    two = _evaluate(gt, LVISResults(gt, dt_path), iou_type, num_threads=2)
    assert one._state.gt_columns is not None
    _assert_same(one, two)


# ------------------------------------------------------------------ generated scenes

def _rle_ground_truths(gt_dict, every=3):
    """Some polygon ground truths as uncompressed RLEs (lists of counts)."""
    import pycocotools.mask as mask_utils

    imgs = {img["id"]: img for img in gt_dict["images"]}
    for k, ann in enumerate(gt_dict["annotations"]):
        if k % every == 0 and type(ann["segmentation"]) is list:
            img = imgs[ann["image_id"]]
            h, w = img["height"], img["width"]
            m = mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(ann["segmentation"], h, w)))
            flat = m.flatten(order="F")
            changes = np.flatnonzero(np.diff(np.concatenate(([0], flat, [1 - flat[-1]]))))
            counts = np.diff(np.concatenate(([0], changes))).tolist()
            ann["segmentation"] = {"size": [h, w], "counts": counts}


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), iou_type=st.sampled_from(["bbox", "segm", "boundary"]),
       indent=st.sampled_from([None, 1]), extra=st.booleans(), uncompressed=st.booleans(),
       subset=st.sampled_from(["none", "img_ids", "cat_ids", "repeated cat_ids", "area_rng", "iou_thrs"]))
def test_generated_ground_truths(tmp_path, seed, iou_type, indent, extra, uncompressed, subset):
    gt_dict, dets = make_lvis_dataset(seed=seed, num_images=8)
    if not gt_dict["annotations"] or not dets:
        return
    if uncompressed:
        _rle_ground_truths(gt_dict)
    if extra:  # keys outside the schema everywhere, a crowd flag lvis ignores, zero areas
        for k, ann in enumerate(gt_dict["annotations"]):
            ann["extra"] = {"note": [1, None, "x"]}
            if k % 5 == 2:
                ann["iscrowd"] = 1
            if k % 7 == 3:
                ann["area"] = 0
        gt_dict["info"] = {"year": 2026}
        gt_dict["licenses"] = []
        gt_dict["images"][0]["coco_url"] = "http://x/y.jpg"
    gt_path = _write(tmp_path, f"gt{seed}.json", gt_dict, indent=indent)
    dt_path = _write(tmp_path, f"dt{seed}.json", with_boxes(dets))
    rng = np.random.default_rng(seed)
    params = {
        "none": {},
        "img_ids": {"img_ids": sorted(rng.choice([i["id"] for i in gt_dict["images"]], 4, replace=False).tolist())},
        "cat_ids": {"cat_ids": [4, 2]},
        "repeated cat_ids": {"cat_ids": [3, 1, 3]},
        "area_rng": {"area_rng": [[0, 1e5], [10, 200], [200, 1e5]], "area_rng_lbl": ["all", "a", "b"]},
        "iou_thrs": {"iou_thrs": np.array([0.2, 0.5, 0.8])},
    }[subset]
    fast_gt = LVIS(gt_path)
    assert fast_gt._gt_columns is not None
    slow_gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    a = _evaluate(fast_gt, LVISResults(fast_gt, dt_path), iou_type, params)
    b = _evaluate(slow_gt, LVISResults(slow_gt, dt_path), iou_type, params)
    assert a._state.gt_columns is not None and fast_gt._gt_columns is not None
    _assert_same(a, b)
    _assert_same_gts(a, b)
    _assert_same_ground_truth(fast_gt, slow_gt)


@pytest.mark.parametrize("max_dets", [300, 2, -1])
def test_max_dets_and_results_from_the_columns(tmp_path, max_dets):
    gt_dict, dets = make_lvis_dataset(seed=11, num_images=10)
    gt_path = _write(tmp_path, "gt.json", gt_dict)
    dt_path = _write(tmp_path, "dt.json", dets)
    fast_gt, slow_gt = LVIS(gt_path), LVIS.from_dataset(copy.deepcopy(gt_dict))
    for iou_type in ("segm", "boundary"):
        a = _evaluate(fast_gt, dt_path, iou_type, max_dets=max_dets)
        b = _evaluate(slow_gt, dt_path, iou_type, max_dets=max_dets)
        assert a._state.gt_columns is not None
        _assert_same(a, b)
    # the results' dataset: a copy of the ground truth's entries, made without its annotations
    fast_dt = LVISResults(fast_gt, dt_path, max_dets=max_dets)
    assert fast_gt._gt_columns is not None
    slow_dt = LVISResults(slow_gt, dt_path, max_dets=max_dets)
    _same_value(fast_dt.dataset, slow_dt.dataset)
    assert fast_dt.dataset["images"][0] is not fast_gt.imgs[fast_dt.dataset["images"][0]["id"]]
    _assert_same_ground_truth(fast_gt, slow_gt)


def test_dict_results_with_a_columnar_ground_truth(tmp_path):
    gt_dict, dets = make_lvis_dataset(seed=2, num_images=8)
    gt_path = _write(tmp_path, "gt.json", gt_dict)
    fast_gt, slow_gt = LVIS(gt_path), LVIS.from_dataset(copy.deepcopy(gt_dict))
    a = _evaluate(fast_gt, copy.deepcopy(dets), "segm")
    b = _evaluate(slow_gt, copy.deepcopy(dets), "segm")
    _assert_same(a, b)
    _assert_same_ground_truth(fast_gt, slow_gt)


def test_images_looked_up_without_annotations(tmp_path):
    """lvis' get_ann_ids leaves an empty img_ann_map entry (keyed by the
    NumPy integer of params.img_ids) for each evaluated image without
    annotations."""
    gt_dict, dets = make_lvis_dataset(seed=4, num_images=15)
    empty = [i["id"] for i in gt_dict["images"] if not any(a["image_id"] == i["id"] for a in gt_dict["annotations"])]
    assert empty
    gt_path = _write(tmp_path, "gt.json", gt_dict)
    dt_path = _write(tmp_path, "dt.json", dets)
    fast_gt, slow_gt = LVIS(gt_path), LVIS.from_dataset(copy.deepcopy(gt_dict))
    _assert_same(_evaluate(fast_gt, dt_path, "bbox"), _evaluate(slow_gt, dt_path, "bbox"))
    assert fast_gt._gt_columns is not None
    assert empty[0] in fast_gt.img_ann_map and fast_gt.img_ann_map[empty[0]] == []
    assert type(list(fast_gt.img_ann_map)[-1]) is np.int64
    _assert_same_ground_truth(fast_gt, slow_gt)


@pytest.mark.parametrize("params", [{"cat_ids": [2, 99]}, {"img_ids": [1, 4242]}], ids=["cat", "img"])
def test_unknown_ids_in_params_fail_as_in_lvis(tmp_path, params):
    gt_dict, dets = make_lvis_dataset(seed=3, num_images=6)
    gt_path = _write(tmp_path, "gt.json", gt_dict)
    dt_path = _write(tmp_path, "dt.json", dets)
    fast_gt, slow_gt = LVIS(gt_path), LVIS.from_dataset(copy.deepcopy(gt_dict))
    with pytest.raises(KeyError) as a:
        _evaluate(fast_gt, dt_path, "segm", params)
    with pytest.raises(KeyError) as b:
        _evaluate(slow_gt, dt_path, "segm", params)
    assert a.value.args == b.value.args
    _assert_same_ground_truth(fast_gt, slow_gt)


def test_changed_dicts_are_evaluated(tmp_path):
    """Once read, the dicts are what is evaluated, as in lvis."""
    gt_dict, dets = make_lvis_dataset(seed=6, num_images=8)
    gt_path = _write(tmp_path, "gt.json", gt_dict)
    dt_path = _write(tmp_path, "dt.json", dets)
    fast_gt, slow_gt = LVIS(gt_path), LVIS.from_dataset(copy.deepcopy(gt_dict))
    for gt in (fast_gt, slow_gt):
        for ann in list(gt.anns.values())[::3]:
            ann["ignore"] = 1
    for iou_type in ("bbox", "boundary"):
        a = _evaluate(fast_gt, dt_path, iou_type)
        assert a._state.gt_columns is None
        _assert_same(a, _evaluate(slow_gt, dt_path, iou_type))


# ---------------------------------------------------------------- fallbacks

def _drop(key):
    return lambda d: d["images"][1].pop(key)


OUTSIDE = {
    "string image id": lambda d: [a.update(image_id=str(a["image_id"])) for a in d["annotations"]]
    and [i.update(id=str(i["id"])) for i in d["images"]],
    "no neg_category_ids": _drop("neg_category_ids"),
    "no not_exhaustive_category_ids": _drop("not_exhaustive_category_ids"),
    "neg_category_ids null": lambda d: d["images"][2].update(neg_category_ids=None),
    "bad frequency": lambda d: d["categories"][1].update(frequency="x"),
    "no frequency": lambda d: d["categories"][1].pop("frequency"),
    "no area": lambda d: d["annotations"][0].pop("area"),
    "string area": lambda d: d["annotations"][0].update(area="12"),
    "unknown image": lambda d: d["annotations"][0].update(image_id=987654321),
    "bad polygon": lambda d: d["annotations"][1].update(segmentation=[[1.0, 2.0, 3.0]]),
    "iscrowd true": lambda d: d["annotations"][1].update(iscrowd=True),
    "no annotations": lambda d: d.update(annotations=[]),
}


@pytest.mark.parametrize("name", list(OUTSIDE))
def test_outside_the_schema_or_bad_takes_the_dict_path(tmp_path, name):
    gt_dict, _ = make_lvis_dataset(seed=3, num_images=6)
    bad = copy.deepcopy(gt_dict)
    OUTSIDE[name](bad)
    path = _write(tmp_path, "gt.json", bad)
    try:
        with warnings.catch_warnings(record=True) as ref_warned:
            warnings.simplefilter("always")
            ref = LVIS.from_dataset(copy.deepcopy(bad))
        ref_error = None
    except (ValueError, TypeError) as exc:
        ref_error = exc
    if ref_error is not None:
        with pytest.raises(type(ref_error)) as info:
            LVIS(path)
        assert str(info.value).split(": ", 1)[1] == str(ref_error).split(": ", 1)[1]
        return
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        gt = LVIS(path)
    # the same warnings (of the input named otherwise) on both paths
    assert [str(w.message).split(": ", 1)[1] for w in warned if issubclass(w.category, UserWarning)] == \
        [str(w.message).split(": ", 1)[1] for w in ref_warned if issubclass(w.category, UserWarning)]
    assert gt._gt_columns is None
    _assert_same_ground_truth(gt, ref)


def test_duplicate_annotation_ids_are_evaluated_on_dicts(tmp_path):
    """lvis' load_anns gives the last annotation of a repeated id each time:
    such a ground truth is read as dicts, with a warning."""
    gt_dict, dets = make_lvis_dataset(seed=8, num_images=6)
    gt_dict["annotations"][2]["id"] = gt_dict["annotations"][5]["id"]
    gt_path = _write(tmp_path, "gt.json", gt_dict)
    dt_path = _write(tmp_path, "dt.json", dets)
    with pytest.warns(SuspectInputWarning, match="repeat the id of another annotation"):
        fast_gt, slow_gt = LVIS(gt_path), LVIS.from_dataset(copy.deepcopy(gt_dict))
    assert fast_gt._gt_columns is None
    a, b = _evaluate(fast_gt, dt_path, "segm"), _evaluate(slow_gt, dt_path, "segm")
    assert a._state.gt_columns is None
    _assert_same(a, b)
    _assert_same_ground_truth(fast_gt, slow_gt)


def test_other_inputs_keep_the_dict_path(tmp_path):
    with open(LVIS_GT, "rb") as f:
        raw = f.read()
    gz = tmp_path / "gt.json.gz"
    gz.write_bytes(gzip.compress(raw))
    gt = LVIS(str(gz))
    assert gt._gt_columns is None
    _assert_same_ground_truth(gt, lvis.LVIS(LVIS_GT))
    assert LVIS.from_dataset(json.loads(raw))._gt_columns is None
    assert LVIS(LVIS_GT.encode())._gt_columns is None  # bytes paths: lvis' own way
    from pathlib import Path

    assert LVIS(Path(LVIS_GT))._gt_columns is not None


def test_pickle_and_copy_of_an_unread_ground_truth():
    import pickle

    gt = LVIS(LVIS_GT)
    _evaluate(gt, LVISResults(gt, LVIS_DT), "segm")
    clone = pickle.loads(pickle.dumps(gt))
    twin = copy.deepcopy(gt)
    assert clone._gt_columns is not None and twin._gt_columns is not None
    ref = _dict_gt(LVIS_GT)
    _evaluate(ref, LVISResults(ref, LVIS_DT), "segm")
    for other in (clone, twin, gt):
        _assert_same_ground_truth(other, ref)


def test_missing_file_error_as_before(tmp_path):
    with pytest.raises(ValueError, match="ground truth file not found"):
        LVIS(str(tmp_path / "nope.json"))
