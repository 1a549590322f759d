"""LVIS results loaded as columns (``LVISResults(gt, path)`` fast path)
against the dict path, which follows lvis 0.5.3.

Given a results file in the COCO results schema, ``LVISResults`` parses it
into column arrays, applies lvis' per-image cap on them, and ``LVISEval``
evaluates from them; given the same results as a list it takes lvis' path
of one dict per result.  Everything a user can read must be the same: every
eval array and result, every ``eval_imgs`` entry (with the types of its
values), every ``ious`` matrix, ``_dts``, and the dataset, dicts and indices
themselves once somebody reads them (the same as plain lvis makes, types
included).
"""
import copy
import pickle
import warnings

import lvis
import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api import LVIS, LVISEval, LVISResults
from boundary_api.instance._checks import SuspectInputWarning
from boundary_api.instance.cache import cache_for

from synth import assert_same_evaluation as _assert_same, assert_same_eval_imgs, assert_same_lvis_index, evaluate_lvis as _evaluate, make_lvis_dataset
from synth import same_value as _same_value
from synth import with_boxes as _with_boxes, write_json as _write




@pytest.fixture(scope="module")
def scene():
    return make_lvis_dataset(seed=3, num_images=24)


PARAMS = [
    {},
    {"cat_ids": [4, 2]},
    {"cat_ids": [3, 1, 3]},
    {"img_ids": [3, 1, 2, 5, 8, 13]},
    {"area_rng": [[0, 1e5], [10, 200], [200, 1e5]], "area_rng_lbl": ["all", "a", "b"]},
    {"iou_thrs": np.array([0.3, 0.5, 0.9])},
]


@pytest.mark.parametrize("iou_type", ["bbox", "segm", "boundary"])
@pytest.mark.parametrize("params", PARAMS, ids=lambda p: ",".join(p) or "default")
def test_columns_equal_dict_path(tmp_path, scene, iou_type, params):
    gt_dict, dets = scene
    results = _with_boxes(dets)
    path = _write(tmp_path, "dt.json", results)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    fast = LVISResults(gt, path)
    assert fast._columns is not None
    slow = LVISResults(gt, copy.deepcopy(results))
    assert slow._columns is None
    a = _evaluate(gt, fast, iou_type, params)
    b = _evaluate(gt, slow, iou_type, params)
    assert fast._columns is not None  # nothing was materialised by the evaluation
    assert a._state.dt_columns is not None
    _assert_same(a, b)
    # after the evaluation, the results read as lvis' (image look-ups included)
    assert_same_lvis_index(fast, slow)


@pytest.mark.parametrize("iou_type", ["segm", "boundary", "bbox"])
@pytest.mark.parametrize("max_dets", [300, 3, 1, 0, -1, 2 ** 70])
def test_max_dets(tmp_path, scene, iou_type, max_dets):
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", dets, indent=1)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    if max_dets == 0:  # nothing left: lvis fails on result #0, and so does the dict path
        with pytest.raises(IndexError):
            LVISResults(gt, copy.deepcopy(dets), max_dets=0)
        with pytest.raises(IndexError):
            LVISResults(gt, path, max_dets=0)
        return
    a = _evaluate(gt, path, iou_type, max_dets=max_dets)
    assert a.lvis_dt._columns is not None and a._state.dt_columns is not None
    b = _evaluate(gt, copy.deepcopy(dets), iou_type, max_dets=max_dets)
    _assert_same(a, b)
    if max_dets > 0:
        assert max(len(v) for v in a.lvis_dt.img_ann_map.values()) <= max_dets


def test_materialised_results_are_lvis_results(tmp_path, scene):
    """Read, the results are what plain lvis makes: keys in file order,
    integers stay integers, areas numpy.uint32 and boxes arrays from masks,
    grouped by image with ids in that order."""
    gt_dict, dets = scene
    results = copy.deepcopy(dets)
    for k, d in enumerate(results):
        if k % 3 == 0:
            results[k] = dict(reversed(list(d.items())))
            results[k]["segmentation"] = dict(reversed(list(d["segmentation"].items())))
        if k % 5 == 0:
            results[k]["score"] = 1
    path = _write(tmp_path, "dt.json", results, indent=2)
    plain_gt = lvis.LVIS(_write(tmp_path, "gt.json", gt_dict))
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    for cap in (300, 2, -1):
        fast = LVISResults(gt, path, max_dets=cap)
        ref = lvis.LVISResults(plain_gt, path, max_dets=cap)
        assert fast._columns is not None
        assert_same_lvis_index(fast, ref)
        assert fast._columns is None  # materialised once read
        assert isinstance(fast.anns[1]["area"], np.uint32)
        assert isinstance(fast.anns[1]["bbox"], np.ndarray)
        assert "iscrowd" not in fast.anns[1]
        assert fast.get_ann_ids(img_ids=[1, 2]) == ref.get_ann_ids(img_ids=[1, 2])
    # box results: areas w * h of the values as written, no iscrowd
    boxes = [{k: v for k, v in b.items() if k != "segmentation"} for b in _with_boxes(results, int_boxes=True)]
    path = _write(tmp_path, "boxes.json", boxes)
    fast = LVISResults(gt, path, max_dets=3)
    ref = lvis.LVISResults(plain_gt, path, max_dets=3)
    assert fast._columns is not None
    assert_same_lvis_index(fast, ref)


def test_tied_scores_cut_by_the_cap(tmp_path):
    """Many results of one image with equal scores (integers and floats
    that compare equal): the cap keeps lvis' stable order."""
    gt_dict, dets = make_lvis_dataset(seed=5, num_images=4)
    img = gt_dict["images"][0]
    rng = np.random.default_rng(0)
    extra = []
    for j in range(40):
        d = copy.deepcopy(dets[j % len(dets)])
        d["image_id"] = img["id"] if j % 3 else gt_dict["images"][1]["id"]
        other = next(i for i in gt_dict["images"] if i["id"] == d["image_id"])
        m = np.zeros((other["height"], other["width"]), np.uint8)
        m[j % 5:j % 5 + 6, :7] = 1
        r = mask_utils.encode(np.asfortranarray(m))
        d["segmentation"] = {"size": [other["height"], other["width"]], "counts": r["counts"].decode()}
        d["score"] = [1, 1.0, 0.5, 0][int(rng.integers(0, 4))]
        extra.append(d)
    results = extra + dets
    path = _write(tmp_path, "dt.json", results)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    for cap in (1, 5, 13):
        fast = LVISResults(gt, path, max_dets=cap)
        assert fast._columns is not None
        slow = LVISResults(gt, copy.deepcopy(results), max_dets=cap)
        for iou_type in ("segm", "bbox"):
            _assert_same(_evaluate(gt, fast, iou_type), _evaluate(gt, slow, iou_type))
        assert_same_lvis_index(fast, slow)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), max_dets=st.integers(-1, 6), int_scores=st.booleans(),
       int_boxes=st.booleans(), with_boxes=st.booleans(),
       iou_type=st.sampled_from(["bbox", "segm", "boundary"]))
def test_generated_scenes(tmp_path, seed, max_dets, int_scores, int_boxes, with_boxes, iou_type):
    gt_dict, dets = make_lvis_dataset(seed=seed, num_images=6)
    if not dets:
        return
    results = _with_boxes(dets, int_boxes=int_boxes) if with_boxes else copy.deepcopy(dets)
    if int_scores:  # many ties, written as JSON integers
        for d in results:
            d["score"] = int(d["score"] * 3)
    path = _write(tmp_path, f"dt{seed}.json", results, separators=(",", ":"))
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    try:
        slow = LVISResults(gt, copy.deepcopy(results), max_dets=max_dets)
    except IndexError:  # every image capped to nothing
        with pytest.raises(IndexError):
            LVISResults(gt, path, max_dets=max_dets)
        return
    fast = LVISResults(gt, path, max_dets=max_dets)
    assert fast._columns is not None
    _assert_same(_evaluate(gt, fast, iou_type), _evaluate(gt, slow, iou_type))
    assert_same_lvis_index(fast, slow)


def test_lazy_dts_and_compute_iou(tmp_path, scene):
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", _with_boxes(dets))
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    fast = LVISResults(gt, path)
    slow = LVISResults(gt, _with_boxes(dets))
    a, b = _evaluate(gt, fast, "segm"), _evaluate(gt, slow, "segm")
    assert fast._columns is not None
    assert dict(a._dts) == dict(b._dts) and list(a._dts) == list(b._dts)
    assert dict(a._gts) == dict(b._gts)
    for img, cat in [(1, 1), (2, 3), (5, 2)]:
        np.testing.assert_array_equal(np.asarray(a.compute_iou(img, cat)), np.asarray(b.compute_iou(img, cat)))


def test_second_evaluation_and_slow_loops(tmp_path, scene):
    """lvis' _prepare adds to what an earlier evaluation left: a second
    ``evaluate`` of the same evaluator gives what lvis gives; the lvis loops
    (``use_fast_impl=False``) read the dicts."""
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", dets)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    a = _evaluate(gt, LVISResults(gt, path), "segm")
    b = _evaluate(gt, LVISResults(gt, copy.deepcopy(dets)), "segm")
    a.run()
    b.run()
    _assert_same(a, b)
    slow_loops = _evaluate(gt, LVISResults(gt, path), "segm", use_fast_impl=False)
    assert slow_loops.lvis_dt._columns is None
    c = _evaluate(gt, LVISResults(gt, path), "segm")
    for k in ("precision", "recall"):
        np.testing.assert_array_equal(slow_loops.eval[k], c.eval[k])


def test_changed_dicts_are_evaluated(tmp_path, scene):
    """Once read, the dicts are what is evaluated, as in lvis."""
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", _with_boxes(dets))
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    fast = LVISResults(gt, path)
    slow = LVISResults(gt, _with_boxes(dets))
    for res in (fast, slow):
        for ann in list(res.anns.values())[::4]:
            ann["score"] = 1.0 - ann["score"]
    for iou_type in ("bbox", "boundary"):
        _assert_same(_evaluate(gt, fast, iou_type), _evaluate(gt, slow, iou_type))


def test_boundaries_after_the_dicts_are_made(tmp_path, scene):
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", dets)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    dt = LVISResults(gt, path)
    first = _evaluate(gt, dt, "boundary")
    done = cache_for(dt).computed["boundaries"]
    # extracted in the IoU step, only for detections that meet a ground truth
    assert 0 < done <= len(first._state.dt_rows)
    dt.anns  # noqa: B018 - materialise
    again = _evaluate(gt, dt, "boundary")
    assert again._state.dt_columns is None
    assert first.get_results() == again.get_results()


def test_pickle_and_copy_of_unread_results(tmp_path, scene):
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", dets)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    fast = LVISResults(gt, path)
    clone = pickle.loads(pickle.dumps(fast))
    _same_value(clone.dataset, copy.deepcopy(fast).dataset)
    _same_value(clone.dataset, fast.dataset)


# ---------------------------------------------------------------- fallbacks
FALLBACKS = {
    "polygon segmentation": lambda r: r[0].update(segmentation=[[1.0, 1.0, 5.0, 1.0, 5.0, 5.0]]),
    "unknown key": lambda r: r[1].update(extra=1),
    "string image id": lambda r: r[2].update(image_id="3"),
    "float category id": lambda r: r[2].update(category_id=1.0),
    "null score": lambda r: r[0].update(score=None),
    "huge integer score": lambda r: r[0].update(score=2 ** 60),
}


@pytest.mark.parametrize("name", list(FALLBACKS))
def test_outside_the_schema_takes_the_dict_path(tmp_path, scene, name):
    gt_dict, dets = scene
    results = _with_boxes(dets)
    FALLBACKS[name](results)
    path = _write(tmp_path, "dt.json", results)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    try:
        slow_error = None
        with warnings.catch_warnings(record=True) as slow_warned:
            warnings.simplefilter("always")
            slow = LVISResults(gt, copy.deepcopy(results))
    except (ValueError, TypeError) as exc:
        slow_error = exc
    if slow_error is not None:
        with pytest.raises(type(slow_error)) as info:
            LVISResults(gt, path)
        assert str(info.value).split(": ", 1)[1] == str(slow_error).split(": ", 1)[1]
        return
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        fast = LVISResults(gt, path)
    # the same warnings (of the input named otherwise) on both paths
    assert [str(w.message).split(": ", 1)[1] for w in warned if issubclass(w.category, UserWarning)] == \
        [str(w.message).split(": ", 1)[1] for w in slow_warned if issubclass(w.category, UserWarning)]
    assert fast._columns is None
    assert_same_lvis_index(fast, slow)


@pytest.mark.parametrize("params", [{"cat_ids": [2, 99]}, {"img_ids": [1, 4242]}], ids=["cat", "img"])
def test_unknown_ids_in_params_fail_as_in_lvis(tmp_path, scene, params):
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", dets)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    with pytest.raises(KeyError) as a:
        _evaluate(gt, path, "segm", params)
    with pytest.raises(KeyError) as b:
        _evaluate(gt, copy.deepcopy(dets), "segm", params)
    assert a.value.args == b.value.args


def test_evaluations_the_columns_do_not_cover(tmp_path, scene):
    """use_cats=0, an empty category list, box-only results for masks:
    the dict path runs, with lvis' answers."""
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", dets)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    for params in ({"use_cats": 0}, {"cat_ids": []}):
        # (lvis' summaries fail on these: evaluate and accumulate only)
        evs = []
        for dt in (path, copy.deepcopy(dets)):
            ev = LVISEval(gt, dt, "segm")
            for key, value in params.items():
                setattr(ev.params, key, value)
            ev.evaluate()
            ev.accumulate()
            evs.append(ev)
        assert evs[0].lvis_dt._columns is None
        for key in ("precision", "recall"):
            np.testing.assert_array_equal(evs[0].eval[key], evs[1].eval[key])
        assert_same_eval_imgs(evs[0].eval_imgs, evs[1].eval_imgs)
    boxes = [{k: v for k, v in d.items() if k != "segmentation"} for d in _with_boxes(dets)]
    path = _write(tmp_path, "boxes.json", boxes)
    a = _evaluate(gt, LVISResults(gt, path), "bbox")
    assert a._state.dt_columns is not None
    _assert_same(a, _evaluate(gt, copy.deepcopy(boxes), "bbox"))


BAD = {
    "unknown image": (lambda r: r[3].update(image_id=123456), "image ids not in the ground truth"),
    "wrong RLE size": (lambda r: r[3]["segmentation"].update(size=[2, 2]), "is not the image's"),
    "infinite score": (lambda r: r[3].update(score=1e400), "invalid score"),
    "malformed RLE": (lambda r: r[3]["segmentation"].update(counts="0000"), "segmentation counts"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_results_are_refused_as_before(tmp_path, scene, name):
    gt_dict, dets = scene
    results = copy.deepcopy(dets)
    edit, message = BAD[name]
    edit(results)
    path = _write(tmp_path, "dt.json", results)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    with pytest.raises(ValueError, match=message) as fast:
        LVISResults(gt, path, strict=True)
    with pytest.raises(ValueError, match=message) as slow:
        LVISResults(gt, copy.deepcopy(results), strict=True)
    assert str(fast.value).split(": ", 1)[1] == str(slow.value).split(": ", 1)[1]
    if name == "unknown image":  # lvis asserts
        with pytest.raises(AssertionError, match=message):
            LVISResults(gt, path)
    else:  # lvis loads the others: a warning without strict
        with pytest.warns(SuspectInputWarning, match=message):
            assert LVISResults(gt, path)._columns is None


def test_malformed_rle_with_boxes_named_at_mask_evaluation(tmp_path, scene):
    gt_dict, dets = scene
    results = _with_boxes(dets)
    results[4]["segmentation"]["counts"] = "0000"
    path = _write(tmp_path, "dt.json", results)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    fast = LVISResults(gt, path)
    slow = LVISResults(gt, copy.deepcopy(results))
    assert fast._columns is not None
    _assert_same(_evaluate(gt, fast, "bbox"), _evaluate(gt, slow, "bbox"))  # box AP never reads masks
    for iou_type in ("segm", "boundary"):  # (without strict, lvis' code evaluates 'segm': tests/lvis/test_lvis.py)
        with pytest.raises(ValueError, match=r"^result id \d+ \(image \d+\): segmentation counts") as a:
            _evaluate(gt, LVISResults(gt, path, strict=True), iou_type)
        with pytest.raises(ValueError) as b:
            _evaluate(gt, LVISResults(gt, copy.deepcopy(results), strict=True), iou_type)
        assert str(a.value) == str(b.value)


def test_ground_truth_copied_as_lvis_copies_it(tmp_path, scene):
    """lvis deep-copies the ground truth dataset: the results' images and
    categories are copies (shared objects stay shared among themselves)."""
    gt_dict, dets = scene
    gt_dict = copy.deepcopy(gt_dict)
    shared = [1, 2]
    gt_dict["images"][0]["neg_category_ids"] = shared
    gt_dict["images"][1]["neg_category_ids"] = shared
    gt_dict["info"] = {"year": 2020, "nested": [{"a": (1, 2)}, None, 1.5, True]}
    path = _write(tmp_path, "dt.json", dets)
    gt = LVIS.from_dataset(gt_dict)
    fast, slow = LVISResults(gt, path), LVISResults(gt, copy.deepcopy(dets))
    for res in (fast, slow):
        images = res.dataset["images"]
        assert images[0]["neg_category_ids"] is images[1]["neg_category_ids"]
        assert images[0]["neg_category_ids"] is not shared
        assert images[0] is not gt.dataset["images"][0] and res.imgs[images[0]["id"]] is images[0]
        assert res.dataset["info"]["nested"][0] is not gt_dict["info"]["nested"][0]
        assert res.cats[1] is res.dataset["categories"][0] is not gt.cats[1]
    assert_same_lvis_index(fast, slow)


@pytest.mark.parametrize("iou_type", ["bbox", "boundary"])
def test_thread_count_does_not_matter(tmp_path, scene, iou_type):
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", _with_boxes(dets))
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    one = _evaluate(gt, LVISResults(gt, path, max_dets=4), iou_type, num_threads=1)
    two = _evaluate(gt, LVISResults(gt, path, max_dets=4), iou_type, num_threads=2)
    assert one._state.dt_columns is not None and two._state.dt_columns is not None
    _assert_same(one, two)


@pytest.mark.parametrize("max_dets", [300, 3])
def test_box_results_gather_their_strings_when_first_needed(tmp_path, scene, max_dets):
    """A mapped file of box results, capped per image (rows taken before any
    string is read): Box AP reads no RLE string, Mask AP gathers those of
    the kept rows, also after the file was removed."""
    import os

    gt_dict, dets = scene
    results = _with_boxes(dets)
    path = _write(tmp_path, "dt.json", results)
    gt = LVIS.from_dataset(copy.deepcopy(gt_dict))
    fast = LVISResults(gt, path, max_dets=max_dets)
    slow = LVISResults(gt, copy.deepcopy(results), max_dets=max_dets)
    columns = fast._columns
    assert columns.kind == "bbox" and columns.counts_pending
    if max_dets == 3:
        assert columns.n < len(results)  # (the cap took rows)
    _assert_same(_evaluate(gt, fast, "bbox"), _evaluate(gt, slow, "bbox"))
    assert columns.counts_pending
    os.remove(path)
    _assert_same(_evaluate(gt, fast, "segm"), _evaluate(gt, slow, "segm"))
    assert not columns.counts_pending
    assert_same_lvis_index(fast, slow)
