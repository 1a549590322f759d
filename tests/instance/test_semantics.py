"""Issue 9: what the evaluators answer on unusual but valid input.

* ``ious`` has pycocotools' / lvis' keys, order, length and values (item 10);
* a ground truth's own ``"ignore"``: Boundary AP follows the reference
  (``ignore or iscrowd``), segm/bbox pycocotools (item 3a);
* annotation ids that are not small integers: the fast path stores them as
  the libraries do (item 3b);
* NaN scores and NaN recall thresholds: the libraries' order (item 3c);
* box-only plain pycocotools results are no Boundary AP (item 8).
"""
import contextlib
import copy
import io
import pickle

import lvis
import numpy as np
import pycocotools.coco
import pycocotools.cocoeval
import pycocotools.mask as mask_utils
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api import COCO, COCOeval, LVISEval, SuspectInputWarning
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT
from synth import assert_same_eval_imgs, boxes_only, fresh, make_dataset


def silent(fn, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)


def plain_coco(gt):
    g = pycocotools.coco.COCO()
    g.dataset = fresh(gt)
    silent(g.createIndex)
    return g


def evaluated(ev, accumulate=True):
    silent(ev.evaluate)
    if accumulate:
        silent(ev.accumulate)
    return ev


def assert_same_ious(ours, theirs):
    """Same keys in the same order, same length, same values."""
    assert len(ours) == len(theirs)
    assert list(ours) == list(theirs)
    assert list(ours.keys()) == list(theirs.keys())
    assert ours.keys() == theirs.keys()
    for (k1, v1), (k2, v2), v3 in zip(ours.items(), theirs.items(), ours.values()):
        assert k1 == k2
        assert v3 is v1  # a matrix is made once
        if isinstance(v2, list):
            assert v1 == [] and v2 == []
        else:
            assert isinstance(v1, np.ndarray) and v1.shape == v2.shape
            np.testing.assert_array_equal(v1, v2)


def assert_same_eval(a, b, keys=("precision", "recall", "scores")):
    for k in keys:
        np.testing.assert_array_equal(a.eval[k], b.eval[k], err_msg=k)


def rle(mask):
    r = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
    return {"size": list(mask.shape), "counts": r["counts"].decode()}


def square(h, w, y, x, s):
    m = np.zeros((h, w), np.uint8)
    m[y:y + s, x:x + s] = 1
    return m


# ------------------------------------------------------------------ item 10: ious
@pytest.mark.parametrize("use_cats", [1, 0])
@pytest.mark.parametrize("iou", ["segm", "bbox"])
@pytest.mark.parametrize("fast", [True, False])
def test_ious_are_pycocotools_ious(iou, use_cats, fast):
    gt, dt = make_dataset(seed=3, max_size=40)
    if iou == "bbox":
        dt = boxes_only(dt)
    g = silent(COCO.from_dataset, fresh(gt))
    ours = COCOeval(g, silent(g.loadRes, fresh(dt)), iou, use_fast_impl=fast)
    pg = plain_coco(gt)
    theirs = pycocotools.cocoeval.COCOeval(pg, silent(pg.loadRes, fresh(dt)), iou)
    for ev in (ours, theirs):
        ev.params.useCats = use_cats
        evaluated(ev, accumulate=False)
    assert any(len(v) == 0 for v in theirs.ious.values())  # empty pairs are there
    assert any(len(v) > 0 for v in theirs.ious.values())
    assert_same_ious(ours.ious, theirs.ious)
    key = next(iter(theirs.ious))
    missing = (key[0], 10**9)
    assert ours.ious.get(missing, "none") == "none" == theirs.ious.get(missing, "none")
    assert (missing in ours.ious) is False and key in ours.ious
    with pytest.raises(KeyError):
        ours.ious[missing]
    empty = next(k for k, v in theirs.ious.items() if len(v) == 0)
    assert ours.ious.get(empty) == [] and ours.ious[empty] == []


def test_ious_equal_pycocotools_on_coco_data():
    g = silent(COCO, COCO_GT)
    ours = evaluated(COCOeval(g, silent(g.loadRes, COCO_DT), "segm"), accumulate=False)
    pg = silent(pycocotools.coco.COCO, COCO_GT)
    theirs = evaluated(pycocotools.cocoeval.COCOeval(pg, silent(pg.loadRes, COCO_DT), "segm"),
                       accumulate=False)
    assert_same_ious(ours.ious, theirs.ious)


@pytest.mark.slow
@pytest.mark.parametrize("iou", ["segm", "bbox"])
def test_lvis_ious_are_lvis_ious(iou):
    ours = LVISEval(LVIS_GT, LVIS_DT, iou_type=iou)
    ours.evaluate()
    gt = lvis.LVIS(LVIS_GT)
    theirs = lvis.LVISEval(gt, lvis.LVISResults(gt, LVIS_DT), iou)
    theirs.evaluate()  # lvis' accumulate needs np.float, its evaluate does not
    assert len(theirs.ious) == len(gt.get_img_ids()) * len(gt.get_cat_ids())
    assert_same_ious(ours.ious, theirs.ious)


def test_ious_behave_as_a_dict_when_changed_copied_or_pickled():
    gt, dt = make_dataset(seed=4, max_size=30, num_images=8)
    g = silent(COCO.from_dataset, fresh(gt))
    ev = evaluated(COCOeval(g, silent(g.loadRes, fresh(dt)), "boundary"), accumulate=False)
    ious = ev.ious
    keys = list(ious)
    full = {k: ious[k] for k in keys}
    assert len(ious) == len(ev.params.imgIds) * len(ev.params.catIds)
    assert list(reversed(ious)) == keys[::-1]
    plain = pickle.loads(pickle.dumps(ious))
    assert type(plain) is dict and list(plain) == keys
    assert type(ious.copy()) is dict and list(ious.copy()) == keys
    assert copy.deepcopy(ious).keys() == ious.keys()
    assert dict(ious).keys() == ious.keys() and {**ious}.keys() == ious.keys()
    # a change: an ordinary dict of every entry, in order, from then on
    first = keys[0]
    ious[("new", 1)] = "x"
    assert list(ious) == keys + [("new", 1)]
    assert all(ious[k] is full[k] for k in keys)
    del ious[first]
    assert first not in ious and len(ious) == len(keys)
    assert ious.pop(("new", 1)) == "x"
    assert list(ious) == keys[1:]
    with pytest.raises(KeyError):
        ious[first]


# ------------------------------------------------------- item 3a: "ignore": 1
def ignore_case():
    """One 40x40 image, category 1: ground truth 1 (ignore: 1, not a crowd)
    has no detection, ground truth 2 has a perfect one."""
    a, b = square(40, 40, 2, 2, 12), square(40, 40, 20, 20, 15)
    gt = {"images": [{"id": 1, "height": 40, "width": 40}],
          "categories": [{"id": 1, "name": "a"}],
          "annotations": [
              {"id": 1, "image_id": 1, "category_id": 1, "segmentation": rle(a), "area": float(a.sum()),
               "bbox": [2.0, 2.0, 12.0, 12.0], "iscrowd": 0, "ignore": 1},
              {"id": 2, "image_id": 1, "category_id": 1, "segmentation": rle(b), "area": float(b.sum()),
               "bbox": [20.0, 20.0, 15.0, 15.0], "iscrowd": 0}]}
    dt = [{"image_id": 1, "category_id": 1, "segmentation": rle(b), "bbox": [20.0, 20.0, 15.0, 15.0],
           "score": 0.9}]
    return gt, dt


def test_ignore_flag_segm_and_bbox_follow_pycocotools_boundary_the_reference():
    gt, dt = ignore_case()
    # pycocotools replaces 'ignore' by iscrowd: the missed ground truth counts
    for iou in ("segm", "bbox"):
        d = dt if iou == "segm" else boxes_only(dt)
        pg = plain_coco(gt)
        theirs = evaluated(pycocotools.cocoeval.COCOeval(pg, silent(pg.loadRes, fresh(d)), iou))
        g = silent(COCO.from_dataset, fresh(gt))
        ours = evaluated(COCOeval(g, silent(g.loadRes, fresh(d)), iou))
        assert_same_eval(ours, theirs)
        assert_same_eval_imgs(ours.evalImgs, theirs.evalImgs)
        assert ours.eval["recall"][0, 0, 0, -1] == 0.5
    # the reference keeps it: the only counted ground truth is found
    for fast in (True, False):
        g = silent(COCO.from_dataset, fresh(gt))
        ev = evaluated(COCOeval(g, silent(g.loadRes, fresh(dt)), "boundary", use_fast_impl=fast))
        assert np.all(ev.eval["precision"][:, :, 0, 0, -1] == 1 / (1 + np.spacing(1)))
        assert np.all(ev.eval["recall"][:, 0, 0, -1] == 1.0)
        assert [list(e["gtIgnore"]) for e in ev.evalImgs if e is not None][0] == [0, 1]


def test_ignore_flag_survives_pycocotools_evaluations_of_the_same_ground_truth():
    gt, dt = ignore_case()
    g = silent(COCO.from_dataset, fresh(gt))
    d = silent(g.loadRes, fresh(dt))
    assert evaluated(COCOeval(g, d, "segm")).eval["recall"][0, 0, 0, -1] == 0.5
    # pycocotools (as Detectron2 runs it) on the very same objects
    evaluated(pycocotools.cocoeval.COCOeval(g, d, "segm"))
    assert g.anns[1]["ignore"] == 0  # what pycocotools leaves behind
    assert evaluated(COCOeval(g, d, "boundary")).eval["recall"][0, 0, 0, -1] == 1.0
    assert g.anns[1]["ignore"] == 1  # what the reference leaves behind
    # a flag the user changes afterwards is read
    g.anns[2]["ignore"] = 1
    assert evaluated(COCOeval(g, d, "boundary")).eval["recall"][0, 0, 0, -1] == -1  # nothing counted


def test_ignore_flag_of_a_plain_ground_truth_remembered_before_pycocotools_runs():
    """Detectron2's case: its evaluator loads a plain pycocotools ground truth,
    BoundaryCOCOEvaluator remembers the flags, Detectron2's pycocotools
    evaluation overwrites them, then Boundary AP is computed."""
    from boundary_api import cache_for

    gt, dt = ignore_case()
    pg = plain_coco(gt)
    cache_for(pg).remember_ignore_flags()
    d = silent(pg.loadRes, fresh(dt))
    evaluated(pycocotools.cocoeval.COCOeval(pg, d, "segm"))
    assert evaluated(COCOeval(pg, d, "boundary")).eval["recall"][0, 0, 0, -1] == 1.0


def test_ignore_flag_boundary_equals_pycocotools_loops_with_the_reference_rule():
    """Generated data with a third of the ground truths ignored: Boundary AP
    equals pycocotools' own evaluateImg/accumulate run on boundary_api's
    boundary IoUs with the reference's ignore rule."""
    gt, dt = make_dataset(seed=6)
    for i, a in enumerate(gt["annotations"]):
        if i % 3 == 0:
            a["ignore"] = 1
    g = silent(COCO.from_dataset, fresh(gt))
    ours = evaluated(COCOeval(g, silent(g.loadRes, fresh(dt)), "boundary"))
    ious = {k: v for k, v in ours.ious.items()}

    class Reference(pycocotools.cocoeval.COCOeval):
        def _prepare(self):
            super()._prepare()
            own = {a["id"]: a.get("ignore", 0) for a in gt["annotations"]}
            for anns in self._gts.values():
                for a in anns:
                    a["ignore"] = own[a["id"]] or a["iscrowd"]

        def computeIoU(self, img_id, cat_id):
            return ious[img_id, cat_id]

    pg = plain_coco(gt)
    ref = evaluated(Reference(pg, silent(pg.loadRes, fresh(dt)), "segm"))
    assert_same_eval(ours, ref)
    assert_same_eval_imgs(ours.evalImgs, ref.evalImgs)
    silent(ours.summarize)
    silent(ref.summarize)
    np.testing.assert_array_equal(ours.stats, ref.stats)
    # the rule matters on these data: pycocotools' rule gives other numbers
    assert sum(a.get("ignore", 0) and not a["iscrowd"] for a in gt["annotations"]) > 5

    class PycocotoolsRule(Reference):
        def _prepare(self):
            pycocotools.cocoeval.COCOeval._prepare(self)

    pg = plain_coco(gt)
    other = evaluated(PycocotoolsRule(pg, silent(pg.loadRes, fresh(dt)), "segm"))
    assert not np.array_equal(other.eval["precision"], ours.eval["precision"])


# ----------------------------------------------------- item 3b: unusual ids
def odd_id(j, nan=True):
    """Distinct ids that are no small integers (one 0, one NaN unless ``nan`` is false:
    boundary_api.COCO refuses a NaN ground-truth id when loading)."""
    if j == 0:
        return 0
    if j == 1:
        return float("nan") if nan else 1e-300
    kind = j % 6
    return [j + 0.5, 2**64 + 4096 * j, 1e300 * j, str(j + 1000), -j, np.int64(j + 10**6)][kind]


@pytest.mark.parametrize("iou", ["segm", "bbox", "boundary"])
def test_unusual_ids_fast_path_equals_slow_path(iou):
    gt, dt = make_dataset(seed=2, max_size=40)
    if iou == "bbox":
        dt = boxes_only(dt)
    for j, a in enumerate(gt["annotations"][::2]):
        a["id"] = odd_id(j, nan=False)
    evs = []
    for fast in (True, False):
        g = silent(COCO.from_dataset, fresh(gt))
        d = silent(g.loadRes, fresh(dt))
        for j, ann in enumerate(d.dataset["annotations"][::3]):
            ann["id"] = odd_id(j + 7)
        silent(d.createIndex)
        evs.append(evaluated(COCOeval(g, d, iou, use_fast_impl=fast)))
    assert_same_eval(*evs)
    assert_same_eval_imgs(evs[0].evalImgs, evs[1].evalImgs)
    assert evs[0].eval["precision"].max() > 0


def test_nan_ground_truth_id_is_refused_on_loading():
    gt, _ = make_dataset(seed=2, max_size=40)
    gt["annotations"][0]["id"] = float("nan")
    with pytest.raises(ValueError, match=r"annotations\[0\] has an invalid 'id' nan"):
        silent(COCO.from_dataset, fresh(gt), strict=True)
    # pycocotools indexes it: without strict, a warning naming it
    with pytest.warns(SuspectInputWarning, match=r"annotations\[0\] has an invalid 'id' nan"):
        silent(COCO.from_dataset, fresh(gt))


def test_non_integer_ground_truth_id_matches():
    gt, dt = ignore_case()
    del gt["annotations"][0]["ignore"]
    gt["annotations"][1]["id"] = 0.5
    dt.append(dict(dt[0], segmentation=gt["annotations"][0]["segmentation"], score=0.8))
    for iou in ("segm", "boundary"):
        g = silent(COCO.from_dataset, fresh(gt))
        ev = evaluated(COCOeval(g, silent(g.loadRes, fresh(dt)), iou))
        silent(ev.summarize)
        assert ev.stats[0] == 1.0
        entry = next(e for e in ev.evalImgs if e is not None)
        assert entry["dtMatches"][0, 0] == 0.5


def test_ids_that_are_no_numbers_are_refused():
    gt, dt = ignore_case()
    gt["annotations"][1]["id"] = "b"
    for fast in (True, False):
        g = silent(COCO.from_dataset, fresh(gt))
        with pytest.raises(ValueError, match=r"ground truth id 'b' \(image 1\) is not a number"):
            silent(COCOeval(g, silent(g.loadRes, fresh(dt)), "segm", use_fast_impl=fast).evaluate)


# ------------------------------------------------- item 3c: NaN scores, recThrs
def nan_scored(dt, every=4):
    dt = fresh(dt)
    for i, d in enumerate(dt):
        if i % every == 0:
            d["score"] = float("nan")
    return dt


@pytest.mark.parametrize("nan_rec_thrs", [False, True])
def test_nan_scores_from_plain_pycocotools_objects_sort_as_pycocotools(nan_rec_thrs):
    gt, dt = make_dataset(seed=1, max_size=40)
    dt = nan_scored(dt)
    evs = []
    for cls in (COCOeval, pycocotools.cocoeval.COCOeval):
        pg = plain_coco(gt)
        ev = cls(pg, silent(pg.loadRes, fresh(dt)), "segm")
        if nan_rec_thrs:
            ev.params.recThrs = np.array([0.0, 0.2, np.nan, 0.5, 1.0])
        evs.append(evaluated(ev))
    assert_same_eval(*evs)
    assert_same_eval_imgs(evs[0].evalImgs, evs[1].evalImgs)
    # and Boundary AP: fast path == pycocotools' loops
    bnd = []
    for fast in (True, False):
        pg = plain_coco(gt)
        ev = COCOeval(pg, silent(pg.loadRes, fresh(dt)), "boundary", use_fast_impl=fast)
        if nan_rec_thrs:
            ev.params.recThrs = np.array([0.0, np.nan, 1.0])
        bnd.append(evaluated(ev))
    assert_same_eval(*bnd)


def test_nan_scores_sort_as_pycocotools_with_a_known_answer():
    """A perfect detection scored NaN ranks after a false positive."""
    gt, dt = ignore_case()
    del gt["annotations"][0]["ignore"]
    miss = dict(dt[0], segmentation=rle(square(40, 40, 0, 30, 5)), bbox=[30.0, 0.0, 5.0, 5.0], score=0.1)
    hit2 = dict(dt[0], segmentation=gt["annotations"][0]["segmentation"], bbox=[2.0, 2.0, 12.0, 12.0],
                score=float("nan"))
    dt = [dict(dt[0], score=float("nan")), miss, hit2]
    results = []
    for cls in (COCOeval, pycocotools.cocoeval.COCOeval):
        pg = plain_coco(gt)
        ev = evaluated(cls(pg, silent(pg.loadRes, fresh(dt)), "segm"))
        silent(ev.summarize)
        results.append(ev)
    assert_same_eval(*results)
    assert results[0].stats[0] == results[1].stats[0]
    # ranked: miss, hit, hit -> precision at full recall 2/3
    assert results[0].eval["precision"][0, -1, 0, 0, -1] == pytest.approx(2 / 3)


@pytest.mark.slow
def test_lvis_nan_scores_and_rec_thrs_equal_lvis(monkeypatch):
    import json
    with open(LVIS_DT) as f:
        dt = nan_scored(json.load(f), every=5)
    monkeypatch.setattr(np, "float", float, raising=False)  # lvis' own accumulate needs it
    gt = lvis.LVIS(LVIS_GT)
    evs = []
    for cls in (LVISEval, lvis.LVISEval):
        ev = cls(gt, lvis.LVISResults(gt, fresh(dt)), "segm")
        ev.params.rec_thrs = np.array([0.0, 0.3, np.nan, 1.0])
        ev.run()
        evs.append(ev)
    for k in ("precision", "recall"):
        np.testing.assert_array_equal(evs[0].eval[k], evs[1].eval[k])
    assert evs[0].get_results() == evs[1].get_results()


# ------------------------------------------- item 8: box-only plain results
def test_box_only_plain_pycocotools_results_are_no_boundary_ap():
    gt, dt = make_dataset(seed=1, max_size=40)
    pg = plain_coco(gt)
    boxes = silent(pg.loadRes, boxes_only(dt))
    with pytest.raises(ValueError, match="only have boxes"):
        COCOeval(pg, boxes, "boundary")
    # Mask AP of those rectangles is pycocotools' answer, as pycocotools gives it
    ours = evaluated(COCOeval(pg, boxes, "segm"))
    theirs = evaluated(pycocotools.cocoeval.COCOeval(pg, silent(pg.loadRes, boxes_only(dt)), "segm"))
    assert_same_eval(ours, theirs)
    # masks with boxes are fine
    with_masks = silent(pg.loadRes, fresh(dt))
    COCOeval(pg, with_masks, "boundary")


# ------------------------------------------ adversarial: ids, scores, flags
ODD_IDS = [0, 0.5, -2, 2**64, 7, 1e300, 3.25, float("nan"), "11", 10**6]
SCORES = [float("nan"), 0.9, 0.5, 0.5, 0.1, 0.0, 1.0]


@st.composite
def scenes(draw):
    """Two 16x16 images, two categories: small rectangles as ground truths
    (any id of ODD_IDS, crowd and ignore flags at random) and detections
    near them (scores with ties and NaN)."""
    n_gt = draw(st.integers(1, 6))
    ids = draw(st.lists(st.sampled_from(ODD_IDS), min_size=n_gt, max_size=n_gt, unique_by=repr))
    gts, dts = [], []
    for gid in ids:
        img, cat = draw(st.integers(1, 2)), draw(st.integers(1, 2))
        y, x, h, w = (draw(st.integers(0, 12)) for _ in range(4))
        m = np.zeros((16, 16), np.uint8)
        m[y:y + h + 1, x:x + w + 1] = 1
        gts.append({"id": gid, "image_id": img, "category_id": cat, "segmentation": rle(m),
                    "area": float(m.sum()), "bbox": [float(x), float(y), float(w + 1), float(h + 1)],
                    "iscrowd": int(draw(st.integers(0, 4)) == 0), "ignore": int(draw(st.integers(0, 3)) == 0)})
        for _ in range(draw(st.integers(0, 2))):
            d = np.roll(m, draw(st.integers(-2, 2)), axis=draw(st.integers(0, 1)))
            dts.append({"image_id": img, "category_id": cat, "segmentation": rle(d),
                        "score": draw(st.sampled_from(SCORES))})
    if not dts:
        dts.append({"image_id": 1, "category_id": 1, "segmentation": rle(np.ones((16, 16))), "score": 0.3})
    gt = {"images": [{"id": 1, "height": 16, "width": 16}, {"id": 2, "height": 16, "width": 16}],
          "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}], "annotations": gts}
    return gt, dts


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenes())
def test_adversarial_scenes_equal_pycocotools_and_the_slow_path(scene):
    """Odd ids, tied and NaN scores, crowd and ignore flags at random (and
    ground truths that touch in RLE order): segm equals pycocotools (arrays,
    evalImgs, ious), Boundary AP's fast path equals pycocotools' loops on
    the same IoUs."""
    gt, dt = scene
    pg = plain_coco(gt)
    ours = evaluated(COCOeval(pg, silent(pg.loadRes, fresh(dt)), "segm"))
    pg2 = plain_coco(gt)
    theirs = evaluated(pycocotools.cocoeval.COCOeval(pg2, silent(pg2.loadRes, fresh(dt)), "segm"))
    assert_same_eval(ours, theirs)
    assert_same_eval_imgs(ours.evalImgs, theirs.evalImgs)
    assert_same_ious(ours.ious, theirs.ious)
    bnd = []
    for fast in (True, False):
        g = plain_coco(gt)
        bnd.append(evaluated(COCOeval(g, silent(g.loadRes, fresh(dt)), "boundary", use_fast_impl=fast)))
    assert_same_eval(*bnd)
    assert_same_eval_imgs(bnd[0].evalImgs, bnd[1].evalImgs)
    assert_same_ious(bnd[0].ious, bnd[1].ious)
