"""A ground truth read as columns (``COCO(path)`` fast path) against dicts.

``COCO(path)`` on a file in the COCO instances schema reads the annotations
into arrays and makes their dicts only when somebody reads ``dataset``,
``anns``, ``imgToAnns`` or ``catToImgs``; evaluations on results read as
columns then never touch a dict.  Everything must be as with the dicts:
every statistic, ``evalImgs`` entry, IoU matrix and ``_gts`` list, and the
dicts themselves once made, including what pycocotools' evaluation writes
into them (``ignore`` flags, RLEs in place of polygons).
"""
import contextlib
import copy
import io
import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api import COCO, COCOeval
from boundary_api.instance._checks import SuspectInputWarning
from boundary_api.instance.cache import cache_for

from synth import assert_same_evaluation as _assert_same, make_dataset, write_json as _write

DATA = Path(__file__).resolve().parents[1] / "data" / "coco"
COCO_GT = str(DATA / "instances_val2014_100.json")
COCO_DT = str(DATA / "instances_val2014_fakesegm100_results.json")


def _quiet(fn, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)



def _pair(gt_path, dt_path):
    """(columnar gt, columnar dt), (dict gt, dict dt) of the same files."""
    fast_gt = _quiet(COCO, gt_path)
    assert fast_gt._gt_columns is not None
    fast_dt = _quiet(fast_gt.loadRes, dt_path)
    assert fast_dt._columns is not None
    with open(gt_path) as f:
        slow_gt = _quiet(COCO.from_dataset, json.load(f))
    with open(dt_path) as f:
        slow_dt = _quiet(slow_gt.loadRes, json.load(f))
    return (fast_gt, fast_dt), (slow_gt, slow_dt)


def _evaluate(gt, dt, iou_type, params=None):
    ev = COCOeval(gt, dt, iou_type)
    for key, value in (params or {}).items():
        setattr(ev.params, key, value(gt) if callable(value) else value)
    _quiet(ev.evaluate)
    _quiet(ev.accumulate)
    _quiet(ev.summarize)
    return ev


def _assert_same_dicts(fast_gt, slow_gt):
    assert fast_gt.dataset == slow_gt.dataset
    assert list(fast_gt.dataset) == list(slow_gt.dataset)
    for x, y in zip(fast_gt.dataset["annotations"], slow_gt.dataset["annotations"]):
        assert list(x) == list(y)
        assert [type(v) for v in x.values()] == [type(v) for v in y.values()]
    assert fast_gt.anns == slow_gt.anns
    assert dict(fast_gt.imgToAnns) == dict(slow_gt.imgToAnns)
    assert dict(fast_gt.catToImgs) == dict(slow_gt.catToImgs)


PARAMS = [
    {},
    {"useCats": 0},
    {"imgIds": lambda gt: sorted(gt.getImgIds())[::3]},
    {"catIds": [1, 2, 3, 18, 1000]},
    {"imgIds": []},
]


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["bbox", "segm", "boundary"])
@pytest.mark.parametrize("params", PARAMS, ids=["default", "useCats0", "imgIds", "catIds", "noImgIds"])
def test_shipped_coco_data(iou_type, params):
    (fast_gt, fast_dt), (slow_gt, slow_dt) = _pair(COCO_GT, COCO_DT)
    a = _evaluate(fast_gt, fast_dt, iou_type, params)
    b = _evaluate(slow_gt, slow_dt, iou_type, params)
    assert fast_gt._gt_columns is not None  # no dict was made
    _assert_same(a, b)
    assert {k: v for k, v in a._gts.items() if v} == {k: v for k, v in b._gts.items() if v}
    # made now: the dicts carry what the evaluation wrote into them
    _assert_same_dicts(fast_gt, slow_gt)


@pytest.mark.slow
def test_several_evaluations_then_the_dicts():
    """segm, then boundary, then bbox on one ground truth: the dicts made
    afterwards have each evaluation's changes, in order; and a later
    evaluation on the dicts gives what the dict path gives."""
    (fast_gt, fast_dt), (slow_gt, slow_dt) = _pair(COCO_GT, COCO_DT)
    for iou_type in ("segm", "boundary", "bbox"):
        _assert_same(_evaluate(fast_gt, fast_dt, iou_type), _evaluate(slow_gt, slow_dt, iou_type))
    assert fast_gt._gt_columns is not None
    _assert_same_dicts(fast_gt, slow_gt)
    assert fast_gt._gt_columns is None
    # from now on the dicts are read (a user may have changed them)
    for iou_type in ("boundary", "segm"):
        _assert_same(_evaluate(fast_gt, fast_dt, iou_type), _evaluate(slow_gt, slow_dt, iou_type))


def test_masks_and_boundaries_made_once_and_kept():
    gt = _quiet(COCO, COCO_GT)
    dt = _quiet(gt.loadRes, COCO_DT)
    _evaluate(gt, dt, "boundary")
    done = cache_for(gt).computed["boundaries"]
    assert done > 0
    dt2 = _quiet(gt.loadRes, COCO_DT)
    _evaluate(gt, dt2, "boundary")
    assert cache_for(gt).computed["boundaries"] == done  # the second results file reuses them
    gt.anns  # noqa: B018 - the dicts: the cache takes the boundaries over
    with open(COCO_DT) as f:
        dt3 = _quiet(gt.loadRes, json.load(f))
    _evaluate(gt, dt3, "boundary")
    assert cache_for(gt).computed["boundaries"] == done  # kept across the change to dicts


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10_000), iou_type=st.sampled_from(["bbox", "segm", "boundary"]),
       use_cats=st.sampled_from([0, 1]), indent=st.sampled_from([None, 1]))
def test_generated_ground_truths(tmp_path, seed, iou_type, use_cats, indent):
    gt_dict, dets = make_dataset(seed=seed, num_images=8, max_size=40)
    if not gt_dict["annotations"] or not dets:
        return
    # an own 'ignore' flag on some, extra keys everywhere
    for k, ann in enumerate(gt_dict["annotations"]):
        if k % 4 == 1:
            ann["ignore"] = 1
        ann["extra"] = {"note": [1, None, "x"]}
    gt_dict["info"] = {"year": 2026}
    gt_dict["licenses"] = []
    gt_path = _write(tmp_path, f"gt{seed}.json", gt_dict, indent=indent)
    dt_path = _write(tmp_path, f"dt{seed}.json", dets)
    (fast_gt, fast_dt), (slow_gt, slow_dt) = _pair(gt_path, dt_path)
    params = {"useCats": use_cats}
    _assert_same(_evaluate(fast_gt, fast_dt, iou_type, params), _evaluate(slow_gt, slow_dt, iou_type, params))
    _assert_same_dicts(fast_gt, slow_gt)
    assert fast_dt.dataset["info"] == slow_dt.dataset["info"] == {"year": 2026}


def test_categories_and_images_without_making_dicts():
    gt = _quiet(COCO, COCO_GT)
    with open(COCO_GT) as f:
        ref = _quiet(COCO.from_dataset, json.load(f))
    assert gt.getCatIds() == ref.getCatIds()
    assert gt.getCatIds(supNms=["animal"]) == ref.getCatIds(supNms=["animal"])
    assert gt.getCatIds(catNms=["person", "dog"]) == ref.getCatIds(catNms=["person", "dog"])
    assert sorted(gt.getImgIds()) == sorted(ref.getImgIds())
    assert gt.imgs == ref.imgs and gt.cats == ref.cats
    assert gt._gt_columns is not None
    # the objects handed out are the ones found in the dicts later
    first = next(iter(gt.imgs.values()))
    assert gt.dataset["images"][0] is first


OUTSIDE = {
    "string image id": lambda d: d["images"][0].update(id="x") or [a.update(image_id="x") for a in d["annotations"]
                                                                  if a["image_id"] == d["images"][0]["id"]],
    "float area as string": lambda d: d["annotations"][0].update(area="12"),
    "no iscrowd": lambda d: d["annotations"][0].pop("iscrowd"),
    "unknown image": lambda d: d["annotations"][0].update(image_id=987654321),
    "bad polygon": lambda d: d["annotations"][1].update(segmentation=[[1.0, 2.0, 3.0]]),
}


@pytest.mark.parametrize("name", list(OUTSIDE))
def test_outside_the_schema_or_bad_takes_the_dict_path(tmp_path, name):
    gt_dict, _ = make_dataset(seed=3, num_images=6, max_size=40)
    bad = copy.deepcopy(gt_dict)
    OUTSIDE[name](bad)
    path = _write(tmp_path, "gt.json", bad)
    try:
        with warnings.catch_warnings(record=True) as ref_warned:
            warnings.simplefilter("always")
            ref = _quiet(COCO.from_dataset, copy.deepcopy(bad))
        ref_error = None
    except (ValueError, TypeError) as exc:
        ref_error = exc
    if ref_error is not None:
        with pytest.raises(type(ref_error)) as info:
            _quiet(COCO, path)
        assert str(info.value).split(": ", 1)[1] == str(ref_error).split(": ", 1)[1]
        return
    with warnings.catch_warnings(record=True) as warned:
        warnings.simplefilter("always")
        gt = _quiet(COCO, path)
    # the same warnings (of the input named otherwise) on both paths
    assert [str(w.message).split(": ", 1)[1] for w in warned if issubclass(w.category, UserWarning)] == \
        [str(w.message).split(": ", 1)[1] for w in ref_warned if issubclass(w.category, UserWarning)]
    assert gt._gt_columns is None
    assert gt.dataset == ref.dataset


def test_ground_truth_without_boxes_evaluates_bbox_on_dicts(tmp_path):
    gt_dict, dets = make_dataset(seed=5, num_images=6, max_size=40)
    gt_dict["annotations"][0].pop("bbox")
    gt_path = _write(tmp_path, "gt.json", gt_dict)
    dt_path = _write(tmp_path, "dt.json", dets)
    (fast_gt, fast_dt), (slow_gt, slow_dt) = _pair(gt_path, dt_path)
    # pycocotools reads every ground truth's box: both fail alike
    with pytest.raises(KeyError):
        _evaluate(slow_gt, slow_dt, "bbox")
    with pytest.raises(KeyError):
        _evaluate(fast_gt, fast_dt, "bbox")
    _assert_same(_evaluate(fast_gt, fast_dt, "segm"), _evaluate(slow_gt, slow_dt, "segm"))


def test_repeated_annotation_ids_are_evaluated_on_dicts(tmp_path):
    """pycocotools' loadAnns gives the last annotation of a repeated id each
    time: such a ground truth is read as dicts, with a warning."""
    gt_dict, dets = make_dataset(seed=8, num_images=6, max_size=40)
    gt_dict["annotations"][2]["id"] = gt_dict["annotations"][5]["id"]
    gt_path = _write(tmp_path, "gt.json", gt_dict)
    dt_path = _write(tmp_path, "dt.json", dets)
    with pytest.warns(SuspectInputWarning, match="repeat the id of another annotation"):
        fast_gt = _quiet(COCO, gt_path)
    assert fast_gt._gt_columns is None
    fast_dt = _quiet(fast_gt.loadRes, dt_path)
    assert fast_dt._columns is not None
    with pytest.warns(SuspectInputWarning, match="repeat the id of another annotation"):
        slow_gt = _quiet(COCO.from_dataset, json.loads(open(gt_path).read()))
    slow_dt = _quiet(slow_gt.loadRes, json.loads(open(dt_path).read()))
    for iou_type in ("segm", "bbox"):
        a = _evaluate(fast_gt, fast_dt, iou_type)
        _assert_same(a, _evaluate(slow_gt, slow_dt, iou_type))
    _assert_same_dicts(fast_gt, slow_gt)


def _edge_case_files(tmp_path):
    """Ground truths and results with empty, 1-pixel, full and crowd masks,
    polygons, a pair without detections, and images whose dilation lands on
    .5 (3x4 at ratio 0.1: d = 0.5 of the 5-pixel diagonal)."""
    import pycocotools.mask as mask_utils

    def rle(m):
        r = mask_utils.encode(np.asfortranarray(m.astype(np.uint8)))
        return {"size": r["size"], "counts": r["counts"].decode()}

    rng = np.random.default_rng(27)
    images, anns, dets = [], [], []
    aid = 1
    for i, (h, w) in enumerate([(1, 1), (3, 4), (4, 3), (25, 40), (60, 7), (30, 30)], start=1):
        images.append({"id": i, "height": h, "width": w, "file_name": f"{i}.png"})
        masks = [np.zeros((h, w), bool), np.ones((h, w), bool)]
        one = np.zeros((h, w), bool)
        one[h // 2, w // 2] = True
        masks.append(one)
        for _ in range(3):
            m = np.zeros((h, w), bool)
            y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
            m[y0:y0 + int(rng.integers(1, h + 1)), x0:x0 + int(rng.integers(1, w + 1))] = True
            masks.append(m)
        for k, m in enumerate(masks):
            crowd = int(k == 3)
            seg = rle(m)
            if k == 4 and h > 2 and w > 2:
                seg = [[0.0, 0.0, float(w - 1), 0.0, float(w - 1), float(h - 1)]]
            anns.append({"id": aid, "image_id": i, "category_id": 1 + k % 3, "segmentation": seg,
                         "area": float(m.sum()), "bbox": [0.0, 0.0, float(w), float(h)], "iscrowd": crowd})
            aid += 1
        for k, m in enumerate(masks + masks[2:]):
            if i == 2 and 1 + k % 3 == 3:
                continue  # a pair (image 2, category 3) without detections
            dets.append({"image_id": i, "category_id": 1 + k % 3, "segmentation": rle(m ^ (rng.random((h, w)) < 0.1)),
                         "score": float(rng.random())})
    cats = [{"id": c, "name": f"c{c}", "supercategory": "x"} for c in (1, 2, 3)]
    gt_path = _write(tmp_path, "gt.json", {"images": images, "annotations": anns, "categories": cats})
    return gt_path, _write(tmp_path, "dt.json", dets)


@pytest.mark.parametrize("ratio", [0.02, 0.1, 0.5])
def test_ground_truth_boundaries_made_in_the_iou_step(tmp_path, ratio):
    """A first Boundary AP evaluation makes the ground truths' boundaries
    inside the IoU step (from the masks it decodes there): the IoUs, the
    cached boundary strings and the count made are those of the boundaries
    made beforehand (and read back from the cache) and of the dict path."""
    gt_path, dt_path = _edge_case_files(tmp_path)
    (fresh_gt, fresh_dt), (slow_gt, slow_dt) = _pair(gt_path, dt_path)
    made_gt = _quiet(COCO, gt_path)
    made_dt = _quiet(made_gt.loadRes, dt_path)
    cols = made_gt._gt_columns
    assert cols.masks_ready()
    cols.boundary_table(np.arange(cols.n), ratio)  # made before: the IoU step reads them
    before = cache_for(made_gt).computed["boundaries"]
    assert before == cols.n

    def run(gt, dt):
        ev = COCOeval(gt, dt, "boundary", dilation_ratio=ratio)
        _quiet(ev.evaluate)
        _quiet(ev.accumulate)
        _quiet(ev.summarize)
        return ev

    def not_called(*args, **kwargs):
        raise AssertionError("boundary_table called on a first evaluation")

    fresh_gt._gt_columns.boundary_table = not_called
    fresh, made = run(fresh_gt, fresh_dt), run(made_gt, made_dt)
    del fresh_gt._gt_columns.boundary_table
    assert cache_for(made_gt).computed["boundaries"] == before
    assert cache_for(fresh_gt).computed["boundaries"] == cols.n
    _assert_same(fresh, made)
    _assert_same(fresh, run(slow_gt, slow_dt))
    assert fresh_gt._gt_columns.made_boundaries() == cols.made_boundaries()
    # a second evaluation reads the strings the IoU step cached
    again = run(fresh_gt, _quiet(fresh_gt.loadRes, dt_path))
    assert cache_for(fresh_gt).computed["boundaries"] == cols.n
    _assert_same(fresh, again)


@pytest.fixture
def split_every_file(monkeypatch):
    """``COCO(path)`` scanning even small files on several threads."""
    from boundary_api.instance import _scan_ground_truth

    monkeypatch.setattr(_scan_ground_truth, "MIN_PARALLEL_BYTES", 0)

    def on(threads):
        monkeypatch.setattr("boundary_api._parallel.default_threads", lambda: threads)
    return on


def _columns_state(gt):
    cols = gt._gt_columns
    arrays = {k: v for k, v in cols._cols.items()}
    return cols.images, cols.categories, arrays


@pytest.mark.parametrize("threads", [2, 3, 7])
def test_threads_read_the_same_columns(tmp_path, split_every_file, threads):
    # COCO(path) scans on all cores (as loadRes): the same columns, images and
    # categories (decoded while the annotations are scanned) as on one core
    gt_dict, _ = make_dataset(seed=4, num_images=8, max_size=40)
    for order in (("images", "categories", "annotations"), ("annotations", "categories", "images"),
                  ("categories", "annotations", "images")):
        path = _write(tmp_path, "gt.json", {k: gt_dict[k] for k in order})
        split_every_file(1)
        one = _quiet(COCO, path)
        split_every_file(threads)
        many = _quiet(COCO, path)
        (i1, c1, a1), (i2, c2, a2) = _columns_state(one), _columns_state(many)
        assert i1 == i2 and c1 == c2 and set(a1) == set(a2)
        for key in a1:
            assert a1[key].dtype == a2[key].dtype and np.array_equal(a1[key], a2[key]), key
        assert many.dataset == one.dataset


@pytest.mark.parametrize("name", list(OUTSIDE) + ["truncated", "bad image", "trailing garbage"])
def test_threads_give_the_same_errors(tmp_path, split_every_file, name):
    # a file outside the schema or bad: the same fallback, warning or error
    # (class and message) whatever the threads
    import warnings

    gt_dict, _ = make_dataset(seed=3, num_images=6, max_size=40)
    bad = copy.deepcopy(gt_dict)
    if name in OUTSIDE:
        OUTSIDE[name](bad)
        raw = json.dumps(bad).encode()
    else:
        raw = json.dumps(bad).encode()
        raw = {"truncated": raw[:len(raw) * 2 // 3],
               "bad image": raw.replace(b'"height": ', b'"height": -', 1),
               "trailing garbage": raw + b" x"}[name]
    path = tmp_path / "gt.json"
    path.write_bytes(raw)
    outcomes = []
    for threads in (1, 2, 5):
        split_every_file(threads)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                gt = _quiet(COCO, str(path))
                outcome = ("ok", gt._gt_columns is None, gt.dataset)
            except Exception as exc:  # noqa: BLE001 - compared below
                outcome = ("error", type(exc), str(exc))
        outcomes.append((outcome, [(w.category, str(w.message)) for w in caught]))
    assert outcomes[1] == outcomes[0] and outcomes[2] == outcomes[0]
