"""Results loaded as columns (``loadRes(path)`` fast path) against the dict path.

``loadRes`` given a file in the COCO results schema parses it into column
arrays and evaluates from them; given the same results as a list it takes
pycocotools' path of one dict per result.  Everything a user can read must be
the same: every statistic and eval array, every ``evalImgs`` entry (with the
types of its values), every ``ious`` matrix, and the dicts themselves once
somebody reads ``dataset``/``anns``.
"""
import contextlib
import copy
import io
import json
import pickle
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api import COCO, COCOeval
from boundary_api.instance._checks import SuspectInputWarning
from boundary_api.instance.cache import cache_for

from synth import assert_same_evaluation as _assert_same, make_dataset, with_boxes as _with_boxes, write_json as _write


def _quiet(fn, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)




def _evaluate(gt, dt, iou_type, params=None, **kwargs):
    ev = COCOeval(gt, dt, iou_type, **kwargs)
    for key, value in (params or {}).items():
        setattr(ev.params, key, value)
    _quiet(ev.evaluate)
    _quiet(ev.accumulate)
    _quiet(ev.summarize)
    return ev


PARAMS = [
    {},
    {"useCats": 0},
    {"maxDets": [1, 3, 7]},
    {"maxDets": [0, 2, -1]},
    {"imgIds": [3, 1, 2, 5, 8, 13, 1000]},
    {"catIds": [2, 4, 99]},
    {"areaRng": [[0, 1e5], [10, 200], [200, 1e5]], "areaRngLbl": ["all", "a", "b"]},
    {"iouThrs": np.array([0.3, 0.5, 0.9])},
]


@pytest.fixture(scope="module")
def scene():
    gt, dets = make_dataset(seed=11, num_images=24)
    return gt, dets


# (maxDets without 100 on purpose: tests/coco/test_summarize_max_dets.py asserts the warning)
@pytest.mark.filterwarnings("ignore:summarize\\(\\). params.maxDets")
@pytest.mark.parametrize("iou_type", ["bbox", "segm", "boundary"])
@pytest.mark.parametrize("params", PARAMS, ids=lambda p: ",".join(p) or "default")
def test_columns_equal_dict_path(tmp_path, scene, iou_type, params):
    gt_dict, dets = scene
    results = _with_boxes(dets)
    path = _write(tmp_path, "dt.json", results)
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    fast = _quiet(gt.loadRes, path)
    assert fast._columns is not None
    slow = _quiet(gt.loadRes, copy.deepcopy(results))
    assert slow._columns is None
    a = _evaluate(gt, fast, iou_type, params)
    b = _evaluate(gt, slow, iou_type, params)
    assert fast._columns is not None  # nothing was materialised by the evaluation
    _assert_same(a, b)


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_mask_only_results_equal_dict_path(tmp_path, scene, iou_type):
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", dets, indent=1)
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    fast = _quiet(gt.loadRes, path)
    assert fast._columns is not None and fast._columns.kind == "segmentation"
    slow = _quiet(gt.loadRes, copy.deepcopy(dets))
    _assert_same(_evaluate(gt, fast, iou_type), _evaluate(gt, slow, iou_type))
    # (areas numpy.uint32, boxes float64 arrays, as pycocotools' loadRes makes them from RLEs)
    assert repr(fast.dataset) == repr(slow.dataset)
    assert {type(a["area"]) for a in fast.dataset["annotations"]} == {np.uint32}
    assert {type(a["bbox"]) for a in fast.dataset["annotations"]} == {np.ndarray}


# (maxDets without 100 on purpose: tests/coco/test_summarize_max_dets.py asserts the warning)
@pytest.mark.filterwarnings("ignore:summarize\\(\\). params.maxDets")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), use_cats=st.sampled_from([0, 1]),
       max_dets=st.lists(st.integers(-3, 12), min_size=3, max_size=3),
       int_scores=st.booleans(), int_boxes=st.booleans(), iou_type=st.sampled_from(["bbox", "segm", "boundary"]))
def test_generated_scenes(tmp_path, seed, use_cats, max_dets, int_scores, int_boxes, iou_type):
    gt_dict, dets = make_dataset(seed=seed, num_images=6, max_size=30)
    if not dets:
        return
    results = _with_boxes(dets, int_boxes=int_boxes)
    if int_scores:  # many ties, written as JSON integers
        for d in results:
            d["score"] = int(d["score"] * 3)
    path = _write(tmp_path, f"dt{seed}.json", results, separators=(",", ":"))
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    fast = _quiet(gt.loadRes, path)
    assert fast._columns is not None
    slow = _quiet(gt.loadRes, copy.deepcopy(results))
    params = {"useCats": use_cats, "maxDets": max_dets}
    _assert_same(_evaluate(gt, fast, iou_type, params), _evaluate(gt, slow, iou_type, params))


def test_dicts_are_pycocotools_dicts(tmp_path, scene):
    """Read, the results are the dicts loadRes makes: keys in file order,
    integers stay integers, added fields as pycocotools adds them."""
    gt_dict, dets = scene
    results = _with_boxes(dets, int_boxes=True)
    # shuffle key order and segmentation key order, integer scores on some
    for k, d in enumerate(results):
        if k % 3 == 0:
            results[k] = dict(reversed(list(d.items())))
            results[k]["segmentation"] = dict(reversed(list(d["segmentation"].items())))
        if k % 5 == 0:
            results[k]["score"] = 1
    path = _write(tmp_path, "dt.json", results, indent=2)
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    fast = _quiet(gt.loadRes, path)
    slow = _quiet(gt.loadRes, json.loads(open(path).read()))
    assert fast._columns is not None
    anns_fast, anns_slow = fast.dataset["annotations"], slow.dataset["annotations"]
    assert fast._columns is None  # materialised once read
    assert anns_fast == anns_slow
    for x, y in zip(anns_fast, anns_slow):
        assert list(x) == list(y)
        assert list(x["segmentation"]) == list(y["segmentation"])
        assert [type(v) for v in x.values()] == [type(v) for v in y.values()]
        assert [type(v) for v in x["bbox"]] == [type(v) for v in y["bbox"]]
    assert fast.dataset == slow.dataset and list(fast.dataset) == list(slow.dataset)
    assert fast.anns == slow.anns
    assert dict(fast.imgToAnns) == dict(slow.imgToAnns)
    assert dict(fast.catToImgs) == dict(slow.catToImgs)
    assert fast.imgs == slow.imgs and fast.cats == slow.cats
    assert fast.getAnnIds(imgIds=[1, 2]) == slow.getAnnIds(imgIds=[1, 2])


def test_box_only_results(tmp_path, scene):
    gt_dict, dets = scene
    results = [{k: v for k, v in d.items() if k != "segmentation"} for d in _with_boxes(dets)]
    path = _write(tmp_path, "dt.json", results)
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    fast = _quiet(gt.loadRes, path)
    slow = _quiet(gt.loadRes, copy.deepcopy(results))
    assert fast._columns is not None and fast._segm_from_bbox
    _assert_same(_evaluate(gt, fast, "bbox"), _evaluate(gt, slow, "bbox"))
    with pytest.raises(ValueError, match="only have boxes"):
        COCOeval(gt, fast, "boundary")
    assert fast.dataset["annotations"] == slow.dataset["annotations"]


def test_changed_dicts_are_evaluated(tmp_path, scene):
    """Once read, the dicts are what is evaluated, as in pycocotools."""
    gt_dict, dets = scene
    results = _with_boxes(dets)
    path = _write(tmp_path, "dt.json", results)
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    fast = _quiet(gt.loadRes, path)
    slow = _quiet(gt.loadRes, copy.deepcopy(results))
    for coco in (fast, slow):
        for ann in list(coco.anns.values())[::4]:
            ann["score"] = 1.0 - ann["score"]
    for iou_type in ("bbox", "boundary"):
        _assert_same(_evaluate(gt, fast, iou_type), _evaluate(gt, slow, iou_type))


def test_lazy_dts_and_compute_iou(tmp_path, scene):
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", _with_boxes(dets))
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    fast = _quiet(gt.loadRes, path)
    slow = _quiet(gt.loadRes, _with_boxes(dets))
    a, b = _evaluate(gt, fast, "segm"), _evaluate(gt, slow, "segm")
    assert fast._columns is not None
    assert dict(a._dts) == dict(b._dts)
    for img, cat in [(1, 1), (2, 3), (5, 2)]:
        np.testing.assert_array_equal(np.asarray(a.computeIoU(img, cat)), np.asarray(b.computeIoU(img, cat)))


def test_pickle_and_copy_of_unread_results(tmp_path, scene):
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", _with_boxes(dets))
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    fast = _quiet(gt.loadRes, path)
    clone = pickle.loads(pickle.dumps(fast))
    assert clone.dataset == copy.deepcopy(fast).dataset == fast.dataset


@pytest.mark.parametrize("use_cats", [1, 0])
def test_boundaries_extracted_only_where_needed(tmp_path, scene, use_cats):
    """Columnar detections get their boundary inside the IoU step, only when
    their mask meets a non-crowd ground truth's (elsewhere the IoU is the
    mask IoU or 0 anyway); the result does not depend on the thread count,
    and after the dicts are made the annotation cache's path gives the same."""
    gt_dict, dets = scene
    path = _write(tmp_path, "dt.json", _with_boxes(dets))
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    dt = _quiet(gt.loadRes, path)
    params = {"useCats": use_cats}
    one = _evaluate(gt, dt, "boundary", params, num_threads=1)
    two = _evaluate(gt, dt, "boundary", params, num_threads=2)
    _assert_same(one, two)
    segm = _evaluate(gt, dt, "segm", params).ious
    st = one._state
    needed = 0
    for p in range(st.num_pairs):
        key = (st.img_ids[st.pair_img[p]], st.cat_ids[st.pair_cat[p]])
        g0, g1 = st.pair_g[p], st.pair_g[p + 1]
        if g1 == g0 or st.pair_d[p + 1] == st.pair_d[p]:
            continue
        crowd = st.gt_crowd[g0:g1].astype(bool)
        needed += int(((np.asarray(segm[key])[:, ~crowd] > 0).any(axis=1)).sum())
    assert 0 < needed < len(st.dt_rows)
    assert cache_for(dt).computed["boundaries"] == 2 * needed
    dt.anns  # noqa: B018 - the dicts: from now on the annotation cache's path
    again = _evaluate(gt, dt, "boundary", params)
    assert again._state.dt_columns is None
    _assert_same(again, one)


# ---------------------------------------------------------------- fallbacks
FALLBACKS = {
    "polygon segmentation": lambda r: r[0].update(segmentation=[[1.0, 1.0, 5.0, 1.0, 5.0, 5.0]]),
    "unknown key": lambda r: r[1].update(extra=1),
    "string image id": lambda r: r[2].update(image_id="3"),
    "float category id": lambda r: r[2].update(category_id=1.0),
    "null score": lambda r: r[0].update(score=None),
}


@pytest.mark.parametrize("name", list(FALLBACKS))
def test_outside_the_schema_takes_the_dict_path(tmp_path, scene, name):
    gt_dict, dets = scene
    results = _with_boxes(dets)
    FALLBACKS[name](results)
    path = _write(tmp_path, "dt.json", results)
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    try:
        slow_error = None
        with warnings.catch_warnings(record=True) as slow_warned:
            warnings.simplefilter("always")
            slow = _quiet(gt.loadRes, copy.deepcopy(results))
    except (ValueError, TypeError) as exc:
        slow_error = exc
    if slow_error is not None:
        with pytest.raises(type(slow_error)) as info:
            _quiet(gt.loadRes, path)
        assert str(info.value).split(": ", 1)[1] == str(slow_error).split(": ", 1)[1]
        return
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        fast = _quiet(gt.loadRes, path)
    # the same warnings (of the input named otherwise) on both paths
    assert [str(w.message).split(": ", 1)[1] for w in warned if issubclass(w.category, UserWarning)] == \
        [str(w.message).split(": ", 1)[1] for w in slow_warned if issubclass(w.category, UserWarning)]
    assert fast._columns is None
    assert fast.dataset["annotations"] == slow.dataset["annotations"]


BAD = {
    "unknown image": (lambda r: r[3].update(image_id=123456), "image ids not in the ground truth"),
    "wrong RLE size": (lambda r: r[3]["segmentation"].update(size=[2, 2]), "is not the image's"),
    "infinite score": (lambda r: r[3].update(score=1e400), "invalid score"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_results_are_refused_as_before(tmp_path, scene, name):
    gt_dict, dets = scene
    results = _with_boxes(dets)
    edit, message = BAD[name]
    edit(results)
    path = _write(tmp_path, "dt.json", results)
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    with pytest.raises(ValueError, match=message):
        _quiet(gt.loadRes, path, strict=True)
    if name != "unknown image":  # (pycocotools loads the others: a warning without strict)
        with pytest.warns(SuspectInputWarning, match=message):
            assert _quiet(gt.loadRes, path)._columns is None
    else:
        with pytest.raises(AssertionError, match=message):  # pycocotools asserts
            _quiet(gt.loadRes, path)


def test_malformed_rle_named_at_mask_evaluation(tmp_path, scene):
    gt_dict, dets = scene
    results = _with_boxes(dets)
    results[4]["segmentation"]["counts"] = "0000"
    path = _write(tmp_path, "dt.json", results)
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict), strict=True)
    fast = _quiet(gt.loadRes, path)
    assert fast._columns is not None
    _evaluate(gt, fast, "bbox")  # box AP never reads the masks
    with pytest.raises(ValueError, match=r"result id 5 \(image %d\): segmentation counts" % results[4]["image_id"]):
        _evaluate(gt, fast, "segm")


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 70_001])
def test_file_buffer_reads_and_shrinks_in_place(tmp_path, size):
    from boundary_api.instance._columns import read_file_buffer, shrink_mapping

    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    path = tmp_path / "f.bin"
    path.write_bytes(data)
    buf, region = read_file_buffer(str(path))
    assert bytes(buf) == data
    buf[:1] = 7 if size else buf[:1]  # writable
    if region is not None and size > 10:
        del buf
        small = shrink_mapping(region, 10)
        assert len(small) == 10 and bytes(small[1:]) == data[1:10] and small[0] == 7
        assert len(region) == 10  # given back in place


# --------------------------------------- box results: RLE strings gathered when needed
def _pending_results(tmp_path, scene, name="dt.json"):
    gt_dict, dets = scene
    results = _with_boxes(dets)
    path = _write(tmp_path, name, results)
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    fast = _quiet(gt.loadRes, path)
    slow = _quiet(gt.loadRes, copy.deepcopy(results))
    return gt, fast, slow, path


def test_box_results_gather_their_strings_when_first_needed(tmp_path, scene):
    """A mapped file of box results: Box AP reads no RLE string; Mask AP
    gathers them once, from the mapping, also after the file was removed."""
    import os

    gt, fast, slow, path = _pending_results(tmp_path, scene)
    columns = fast._columns
    assert columns.kind == "bbox" and columns.counts_pending
    _assert_same(_evaluate(gt, fast, "bbox"), _evaluate(gt, slow, "bbox"))
    assert columns.counts_pending
    os.remove(path)
    for iou_type in ("segm", "boundary"):
        _assert_same(_evaluate(gt, fast, iou_type), _evaluate(gt, slow, iou_type))
    assert not columns.counts_pending and fast._columns is columns
    assert fast.dataset == slow.dataset


def test_mask_only_and_read_results_gather_at_once(tmp_path, scene, monkeypatch):
    """Mask-only results (their areas come from the masks) and files read
    rather than mapped keep the strings from the start."""
    from boundary_api.instance import _columns

    gt_dict, dets = scene
    gt = _quiet(COCO.from_dataset, copy.deepcopy(gt_dict))
    assert not _quiet(gt.loadRes, _write(tmp_path, "masks.json", dets))._columns.counts_pending
    monkeypatch.setattr(_columns, "map_file", lambda path: None)
    read = _quiet(gt.loadRes, _write(tmp_path, "boxes.json", _with_boxes(dets)))
    assert read._columns.kind == "bbox" and not read._columns.counts_pending


def test_dicts_of_pending_results_after_removal(tmp_path, scene):
    import os

    gt, fast, slow, path = _pending_results(tmp_path, scene)
    os.remove(path)
    assert fast.anns == slow.anns
    assert fast.dataset["annotations"] == slow.dataset["annotations"]


def test_pending_gather_runs_once_across_threads(tmp_path, scene, monkeypatch):
    """Threads evaluating the same loaded results gather the strings once."""
    import threading
    import time

    from boundary_api.instance import _columns

    calls = []
    gather = _columns._gather_mapped

    def slow_gather(*args):
        calls.append(1)
        time.sleep(0.05)  # (a window for the other threads to arrive)
        return gather(*args)

    monkeypatch.setattr(_columns, "_gather_mapped", slow_gather)
    gt, fast, slow, _ = _pending_results(tmp_path, scene)
    columns = fast._columns
    taken = columns.take(np.arange(columns.n - 1, -1, -1))
    assert taken.counts_pending
    out = {}

    def work(k):
        src = taken if k % 2 else columns
        out[k] = [src.counts_str(r) for r in range(src.n)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1
    strings = [a["segmentation"]["counts"] for a in slow.dataset["annotations"]]
    for k in range(6):
        assert out[k] == (strings[::-1] if k % 2 else strings)


def test_take_of_pending_columns(tmp_path, scene):
    """Rows taken (twice) before the gather hold the strings of those rows."""
    gt, fast, slow, _ = _pending_results(tmp_path, scene)
    columns = fast._columns
    rng = np.random.default_rng(3)
    rows = rng.permutation(columns.n)[: columns.n // 2]
    rows2 = rng.permutation(len(rows))[:7]
    taken = columns.take(rows).take(rows2)
    assert taken.counts_pending and columns.counts_pending
    strings = [a["segmentation"]["counts"] for a in slow.dataset["annotations"]]
    assert [taken.counts_str(r) for r in range(taken.n)] == [strings[i] for i in rows[rows2]]
    assert columns.counts_pending  # (the gather is shared; each columns takes its rows on use)
    assert [columns.counts_str(r) for r in range(columns.n)] == strings


def test_pickle_of_pending_results(tmp_path, scene):
    import os

    gt, fast, slow, path = _pending_results(tmp_path, scene)
    clone = pickle.loads(pickle.dumps(fast))
    os.remove(path)
    assert not clone._columns.counts_pending
    copied = copy.deepcopy(fast)
    _assert_same(_evaluate(gt, clone, "segm"), _evaluate(gt, slow, "segm"))
    assert clone.dataset == copied.dataset == slow.dataset


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-2 ** 63, 2 ** 63 - 1) | st.integers(-5, 40), max_size=30, unique=True),
       st.lists(st.integers(-2 ** 63, 2 ** 63 - 1) | st.integers(-5, 40), max_size=60))
def test_image_positions_and_category_counts_equal_the_sorting_ones(ids, values):
    """The lookup-table / counting versions give what searchsorted and
    np.unique give (None exactly when an id is unknown)."""
    from boundary_api.instance._columns import _category_counts, _image_positions

    ids = np.array(sorted(ids), np.int64)
    if len(ids) and values and all(v not in set(ids.tolist()) for v in values):
        values = values + [int(ids[0])]
    vals = np.array(values, np.int64)
    known = set(ids.tolist())
    pos = _image_positions(ids, vals)
    if all(v in known for v in values):
        assert pos is not None and (ids[pos] == vals).all()
    else:
        assert pos is None
    uniq, counts = _category_counts(vals)
    ref_u, ref_c = np.unique(vals, return_counts=True)
    assert uniq.tolist() == ref_u.tolist() and counts.tolist() == ref_c.tolist()


def test_pending_gathers_are_capped_where_they_hold_descriptors(tmp_path, scene, monkeypatch):
    """Before Python 3.13 each pending gather holds a file descriptor: past
    MAX_PENDING of them, box results gather their strings at load."""
    import gc

    from boundary_api.instance import _columns

    gc.collect()  # (results of earlier tests freed: their gathers no longer count)
    monkeypatch.setattr(_columns, "_NO_FD", {})
    monkeypatch.setattr(_columns, "MAX_PENDING", len([p for p in _columns._OPEN if p._mapped is not None]) + 1)
    gt, first, slow, _ = _pending_results(tmp_path, scene, "a.json")
    assert first._columns.counts_pending
    _, second, _, _ = _pending_results(tmp_path, scene, "b.json")
    assert not second._columns.counts_pending
    assert second.dataset == slow.dataset
    first._columns.counts_table([0])  # the first gathered: one more may wait
    _, third, _, _ = _pending_results(tmp_path, scene, "c.json")
    assert third._columns.counts_pending
    assert third.dataset == first.dataset == slow.dataset
