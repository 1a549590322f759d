"""Objects that touch: every IoU matrix must be the reference's, exactly.

The IoU step decodes all ground truths of an (image, category) pair into one
buffer.  Masks must never share runs there: when the last run of one object is
followed, in column-major order, by the first run of the next (two objects
stacked in a column, a tiling, a label map cut in raster order), the two are
still two masks.  These tests build scenes made of such objects and compare
every ``ious`` matrix with

* pycocotools' ``COCOeval`` ('segm') and lvis' own ``LVISEval`` ('segm'),
* for 'boundary', ``min(mask IoU, boundary IoU)`` computed from the
  NumPy/OpenCV oracle (:mod:`boundary_api.masks.reference`) and
  ``pycocotools.mask.iou`` -- a crowd column keeps pycocotools' crowd mask IoU,
* for :func:`boundary_api.boundary_iou` on lists, the oracle's Boundary IoU.
"""
import contextlib
import copy
import io

import lvis
import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pycocotools.coco import COCO as PlainCOCO
from pycocotools.cocoeval import COCOeval as PlainCOCOeval

from boundary_api import COCO, LVIS, COCOeval, LVISEval, LVISResults, boundary_iou
from boundary_api.masks import reference
from conftest import COCO_DT, COCO_GT

# ratios from 0 are swept on purpose: the warning that 0 gives d = 1, not an empty
# boundary, is asserted by tests/masks/test_zero_ratio.py
pytestmark = pytest.mark.filterwarnings("ignore:dilation_ratio 0 gives the thinnest boundary")

SCENES = ["tiling", "columns", "raster", "noise", "stacked"]


# ----------------------------------------------------------------- scenes
def label_map(kind, h, w, k, rng):
    """An h x w map of labels 0..k (0 = background) whose objects touch."""
    if kind == "tiling":  # rectangles sharing edges
        ys = np.unique(np.r_[0, rng.integers(0, h + 1, size=rng.integers(0, 4)), h])
        xs = np.unique(np.r_[0, rng.integers(0, w + 1, size=rng.integers(0, 4)), w])
        lab = np.zeros((h, w), np.int64)
        for a, b in zip(ys[:-1], ys[1:]):
            for c, d in zip(xs[:-1], xs[1:]):
                lab[a:b, c:d] = rng.integers(0, k + 1) if rng.random() < 0.8 else 0
        return lab
    if kind == "columns":  # each column cut into stacked pieces
        lab = np.zeros((h, w), np.int64)
        for x in range(w):
            cuts = np.unique(np.r_[0, rng.integers(0, h + 1, size=rng.integers(1, 4)), h])
            for a, b in zip(cuts[:-1], cuts[1:]):
                lab[a:b, x] = rng.integers(0, k + 1)
        return lab
    if kind == "raster":  # consecutive column-major chunks: an object's last
        # run is followed by the next object's first run, across columns too
        flat = np.zeros(h * w, np.int64)
        pos = 0
        while pos < h * w:
            n = int(rng.integers(1, 2 * h + 1))
            flat[pos:pos + n] = rng.integers(0, k + 1)
            pos += n
        return flat.reshape((w, h)).T
    if kind == "noise":
        return rng.integers(0, k + 1, size=(h, w))
    # "stacked": bars one above the other in a few columns (the case)
    lab = np.zeros((h, w), np.int64)
    for x in rng.choice(w, size=min(w, int(rng.integers(1, 4))), replace=False):
        cut = int(rng.integers(1, h)) if h > 1 else 1
        lab[:cut, x] = 1 + (x % k)
        lab[cut:, x] = 1 + ((x + 1) % k)
    return lab


def objects(lab):
    """The non-empty masks of labels 1.. of a label map (uint8, disjoint)."""
    return [(lab == v).astype(np.uint8) for v in np.unique(lab) if v != 0]


def detections(masks, rng, h, w):
    """Exact copies (themselves touching), shifted, thinned and merged masks."""
    out = []
    for i, m in enumerate(masks):
        r = rng.random()
        if r < 0.5:
            out.append(m.copy())
        elif r < 0.65:
            out.append(np.roll(m, int(rng.integers(-1, 2)), axis=int(rng.integers(0, 2))))
        elif r < 0.8:
            out.append((m & (rng.random((h, w)) < 0.8)).astype(np.uint8))
        elif r < 0.9 and len(masks) > 1:
            out.append(m | masks[(i + 1) % len(masks)])
    if rng.random() < 0.5:
        out.append((rng.random((h, w)) < 0.3).astype(np.uint8))
    return [m for m in out if m.any()]


def rle(m):
    r = mask_utils.encode(np.asfortranarray(m.astype(np.uint8)))
    r["counts"] = r["counts"].decode("ascii")
    return r


def make_scene_dataset(seed, kinds, size, lvis_style=False, crowd_rate=0.2):
    """(gt dict, results list) with 1-3 images of touching objects in 1-2 categories."""
    rng = np.random.default_rng(seed)
    images, anns, dets = [], [], []
    cats = [{"id": c, "name": f"c{c}", "supercategory": "x"} for c in (1, 2)]
    if lvis_style:
        for c in cats:
            c["frequency"] = "rcf"[c["id"] % 3]
    for i, kind in enumerate(kinds, start=1):
        h, w = size(rng)
        img = {"id": i, "height": h, "width": w, "file_name": f"{i}.png"}
        images.append(img)
        masks = objects(label_map(kind, h, w, int(rng.integers(1, 6)), rng))
        present = set()
        for m in masks:
            cat = 1 if rng.random() < 0.75 else 2
            present.add(cat)
            ann = {"id": len(anns) + 1, "image_id": i, "category_id": cat, "segmentation": rle(m),
                   "area": float(m.sum()),
                   "bbox": [float(v) for v in mask_utils.toBbox(mask_utils.encode(np.asfortranarray(m)))]}
            if not lvis_style:
                ann["iscrowd"] = int(rng.random() < crowd_rate)
            anns.append(ann)
        for m in detections(masks, rng, h, w):
            dets.append({"image_id": i, "category_id": 1 if rng.random() < 0.8 else 2,
                         "segmentation": rle(m), "score": float(rng.integers(1, 20)) / 20})
        if lvis_style:
            img["neg_category_ids"] = [c for c in (1, 2) if c not in present]
            img["not_exhaustive_category_ids"] = []
    return {"images": images, "annotations": anns, "categories": cats}, dets


def boundary_rle(r, ratio):
    return mask_utils.encode(np.asfortranarray(reference.mask_to_boundary(mask_utils.decode(r), ratio)))


def expected_boundary_matrix(gts, dts, crowd, ratio):
    """min(mask IoU, boundary IoU) by pycocotools.mask.iou on the oracle's boundaries;
    a crowd column keeps the crowd mask IoU.  (D, G) like the evaluators."""
    if not gts or not dts:
        return None
    gr = [g["segmentation"] for g in gts]
    dr = [d["segmentation"] for d in dts]
    mask_iou = np.asarray(mask_utils.iou(dr, gr, list(crowd)))
    b_iou = np.asarray(mask_utils.iou([boundary_rle(r, ratio) for r in dr],
                                      [boundary_rle(r, ratio) for r in gr], [0] * len(gr)))
    return np.where(np.asarray(crowd, bool)[None, :], mask_iou, np.minimum(mask_iou, b_iou))


def nonempty(ious):
    return {k: np.asarray(v) for k, v in ious.items() if len(v)}


def quietly(fn):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn()


def plain_coco(gt, dets):
    def build():
        c = PlainCOCO()
        c.dataset = copy.deepcopy(gt)
        c.createIndex()
        return c, c.loadRes(copy.deepcopy(dets))
    return quietly(build)


def run_coco(gt_obj, dt_obj, iou_type, ratio=0.02, use_cats=True, fast=True):
    def go():
        ev = COCOeval(gt_obj, dt_obj, iou_type, dilation_ratio=ratio, use_fast_impl=fast)
        ev.params.useCats = int(use_cats)
        ev.evaluate()
        return ev
    return quietly(go)


def run_reference_coco(gt, dets, use_cats=True):
    g, d = plain_coco(gt, dets)

    def go():
        ev = PlainCOCOeval(g, d, "segm")
        ev.params.useCats = int(use_cats)
        ev.evaluate()
        return ev
    return quietly(go)


def sorted_dets(dts):
    # pycocotools / lvis: stable sort by decreasing score
    order = np.argsort([-d["score"] for d in dts], kind="mergesort")
    return [dts[i] for i in order]


def check_coco_scene(gt, dets, ratio, use_cats):
    ref = run_reference_coco(gt, dets, use_cats)
    want_segm = nonempty(ref.ious)
    for objs in (plain_coco(gt, dets), None):
        if objs is None:  # the package's own COCO / loadRes
            g = quietly(lambda: COCO.from_dataset(copy.deepcopy(gt)))
            objs = (g, quietly(lambda: g.loadRes(copy.deepcopy(dets))))
        for fast in (True, False):
            segm = run_coco(*objs, "segm", ratio, use_cats, fast)
            got = nonempty(segm.ious)
            assert got.keys() == want_segm.keys()
            for key, want in want_segm.items():
                np.testing.assert_array_equal(got[key], want, err_msg=f"segm {key}")
            bnd = run_coco(*objs, "boundary", ratio, use_cats, fast)
            got = nonempty(bnd.ious)
            assert got.keys() == want_segm.keys()
            for key in want_segm:
                img, cat = key
                if use_cats:
                    gts, dts = ref._gts[img, cat], ref._dts[img, cat]
                else:
                    gts = [g for c in ref.params.catIds for g in ref._gts[img, c]]
                    dts = [d for c in ref.params.catIds for d in ref._dts[img, c]]
                want = expected_boundary_matrix(gts, sorted_dets(dts), [g["iscrowd"] for g in gts], ratio)
                np.testing.assert_array_equal(got[key], want, err_msg=f"boundary {key}")


size_small = st.tuples(st.integers(1, 14), st.integers(1, 14))
size_any = st.one_of(size_small, st.tuples(st.integers(1, 40), st.integers(1, 40)))


def sizer(hw_list):
    it = iter(hw_list)
    return lambda rng: next(it)


# ------------------------------------------------------------------ tests
def test_two_stacked_bars_are_two_masks():
    a = np.zeros((4, 4)); a[0:2, 1] = 1
    b = np.zeros((4, 4)); b[2:4, 1] = 1
    # rows: ground truths, columns: predictions
    np.testing.assert_array_equal(boundary_iou([a, b], [b]), [[0.0], [1.0]])
    np.testing.assert_array_equal(boundary_iou([b, a], [a, b]), [[0.0, 1.0], [1.0, 0.0]])
    # the same through both evaluators, and their AP: perfect predictions score 1
    gt = {"images": [{"id": 1, "height": 4, "width": 4}],
          "categories": [{"id": 1, "name": "bar"}],
          "annotations": [{"id": i + 1, "image_id": 1, "category_id": 1, "segmentation": rle(m),
                           "area": float(m.sum()), "bbox": [1.0, 2.0 * i, 1.0, 2.0], "iscrowd": 0}
                          for i, m in enumerate((a, b))]}
    dets = [{"image_id": 1, "category_id": 1, "segmentation": rle(m), "score": s}
            for m, s in ((a, 0.9), (b, 0.8))]
    for iou_type in ("segm", "boundary"):
        g = quietly(lambda: COCO.from_dataset(copy.deepcopy(gt)))
        ev = run_coco(g, quietly(lambda: g.loadRes(copy.deepcopy(dets))), iou_type)
        np.testing.assert_array_equal(ev.ious[1, 1], np.eye(2))
        quietly(ev.accumulate)
        quietly(ev.summarize)
        assert ev.stats[0] == 1.0
        lgt = copy.deepcopy(gt)
        for ann in lgt["annotations"]:
            del ann["iscrowd"]
        lgt["images"][0].update(neg_category_ids=[], not_exhaustive_category_ids=[])
        lgt["categories"][0]["frequency"] = "f"
        lg = LVIS.from_dataset(lgt)
        lev = LVISEval(lg, LVISResults(lg, copy.deepcopy(dets)), iou_type)
        lev.run()
        np.testing.assert_array_equal(lev.ious[1, 1], np.eye(2))
        assert lev.get_results()["AP"] == 1.0


def test_shipped_coco_data_ious_equal_pycocotools():
    """(164, 46) has two touching ground truths: 0.7259 in pycocotools."""
    gt = quietly(lambda: PlainCOCO(COCO_GT))
    dt = quietly(lambda: gt.loadRes(COCO_DT))
    ref = quietly(lambda: (lambda e: (e.evaluate(), e)[1])(PlainCOCOeval(gt, dt, "segm")))
    want = nonempty(ref.ious)
    got = nonempty(run_coco(gt, dt, "segm").ious)
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=str(key))
    assert round(float(want[164, 46][1, 5]), 4) == 0.7259
    np.testing.assert_array_equal(got[164, 46], want[164, 46])


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), kinds=st.lists(st.sampled_from(SCENES), min_size=1, max_size=3),
       sizes=st.lists(size_any, min_size=3, max_size=3), ratio=st.sampled_from([0.02, 0.1, 0.3]),
       use_cats=st.booleans())
def test_coco_ious_equal_reference_on_touching_objects(seed, kinds, sizes, ratio, use_cats):
    gt, dets = make_scene_dataset(seed, kinds, sizer(sizes))
    if not gt["annotations"] or not dets:
        return
    check_coco_scene(gt, dets, ratio, use_cats)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), kinds=st.lists(st.sampled_from(SCENES), min_size=1, max_size=3),
       sizes=st.lists(size_any, min_size=3, max_size=3), ratio=st.sampled_from([0.02, 0.1, 0.3]))
def test_lvis_ious_equal_reference_on_touching_objects(seed, kinds, sizes, ratio):
    gt, dets = make_scene_dataset(seed, kinds, sizer(sizes), lvis_style=True)
    if not gt["annotations"] or not dets:
        return
    # lvis' own evaluation on lvis' own objects is the reference for 'segm'
    rg = LVIS.from_dataset(copy.deepcopy(gt))
    ref = lvis.LVISEval(rg, lvis.LVISResults(rg, copy.deepcopy(dets)), "segm")
    ref.evaluate()
    want_segm = nonempty(ref.ious)
    for fast in (True, False):
        g = LVIS.from_dataset(copy.deepcopy(gt))
        res = LVISResults(g, copy.deepcopy(dets))
        segm = LVISEval(g, res, "segm", use_fast_impl=fast)
        segm.evaluate()
        got = nonempty(segm.ious)
        assert got.keys() == want_segm.keys()
        for key, want in want_segm.items():
            np.testing.assert_array_equal(got[key], want, err_msg=f"segm {key}")
        bnd = LVISEval(g, res, "boundary", dilation_ratio=ratio, use_fast_impl=fast)
        bnd.evaluate()
        got = nonempty(bnd.ious)
        assert got.keys() == want_segm.keys()
        for key in want_segm:
            gts, dts = ref._gts[key], ref._dts[key]
            want = expected_boundary_matrix(gts, sorted_dets(dts), [0] * len(gts), ratio)
            np.testing.assert_array_equal(got[key], want, err_msg=f"boundary {key}")


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), kind=st.sampled_from(SCENES), hw=size_any,
       ratio=st.sampled_from([0.0, 0.02, 0.1, 0.3, 1.0]), form=st.sampled_from(["list", "stack", "rle"]))
def test_boundary_iou_lists_equal_oracle_on_touching_objects(seed, kind, hw, ratio, form):
    rng = np.random.default_rng(seed)
    h, w = hw
    gts = objects(label_map(kind, h, w, int(rng.integers(1, 6)), rng))
    dts = detections(gts, rng, h, w) + gts[::-1]
    if not gts:
        return

    def as_form(ms):
        if form == "stack":
            return np.stack(ms)
        if form == "rle":
            return [rle(m) for m in ms]
        return list(ms)

    got = boundary_iou(as_form(gts), as_form(dts), ratio)
    want = np.array([[reference.boundary_iou(g, d, ratio) for d in dts] for g in gts])
    assert got.shape == (len(gts), len(dts))
    np.testing.assert_array_equal(got, want)


def test_touching_crowd_regions():
    """Crowds touching plain objects and each other in raster order."""
    for seed in range(8):
        gt, dets = make_scene_dataset(seed, ["raster", "columns", "tiling"],
                                      lambda rng: (int(rng.integers(3, 16)), int(rng.integers(3, 16))),
                                      crowd_rate=0.6)
        assert any(a["iscrowd"] for a in gt["annotations"])
        check_coco_scene(gt, dets, 0.1, True)
