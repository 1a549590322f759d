"""TIDE's error types with Boundary IoU, the boundary error, PR curves and the
boundary coverage, on hand-built cases whose answers are known, and against
the tidecv package's numbers on the real COCO sample."""
import contextlib
import io

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

from boundary_api import COCO, COCOeval
from boundary_api.diagnostics.tide import (ERROR_TYPES, analyze_errors, boundary_coverage, image_ious,
                                            pr_curves)
from boundary_api.masks import boundary_iou

from analysis_data import build, square
from synth import make_dataset


def only(result, **expected):
    """Every error type's ΔAP is 0 except the ones given."""
    for t in ERROR_TYPES:
        assert result["errors"][t] == pytest.approx(expected.get(t, 0.0), abs=1e-12), t


A = square(10, 10, 40)
B = square(60, 60, 30)


def test_perfect_detections_have_no_error():
    r = analyze_errors(*build([(1, 1, A), (1, 1, B)], [(1, 1, A, 0.9), (1, 1, B, 0.8)]))
    assert r["ap"] == 1.0
    only(r)
    assert all(r["counts"][t] == 0 for t in ERROR_TYPES)


def test_localization_error():
    det = square(10, 10, 40, 15)  # mask IoU 0.375, boundary IoU 0.35
    r = analyze_errors(*build([(1, 1, A)], [(1, 1, det, 0.9)]))
    assert r["ap"] == 0.0
    only(r, loc=1.0)
    assert r["counts"]["loc"] == 1 and r["counts"]["miss"] == 0  # the target is not also missed


def test_classification_error():
    r = analyze_errors(*build([(1, 1, A)], [(1, 2, A, 0.9)]))
    assert r["ap"] == 0.0
    only(r, cls=1.0)
    assert r["per_category"][1]["errors"]["cls"] == 1.0
    assert r["per_category"][2]["errors"]["cls"] is None  # category 2 has nothing left


def test_duplicate_error():
    r = analyze_errors(*build([(1, 1, A), (1, 1, B)], [(1, 1, A, 0.9), (1, 1, A, 0.8), (1, 1, B, 0.7)]))
    # TP FP TP: precision 1, 1/2, 2/3 -> monotone 1, 2/3, 2/3 at recall 1/2, 1/2, 1
    base = (51 * 1.0 + 50 * (2 / 3)) / 101
    assert r["ap"] == pytest.approx(base, abs=1e-12)
    only(r, dupe=1.0 - base)
    assert r["counts"]["dupe"] == 1


def test_background_error():
    r = analyze_errors(*build([(1, 1, A)], [(1, 1, B, 0.95), (1, 1, A, 0.9)]))
    assert r["ap"] == pytest.approx(0.5, abs=1e-12)
    only(r, bkg=0.5)


def test_both_error():
    near = square(10, 10, 40, 15)  # min(mask, boundary) IoU 0.35 with A, another category
    r = analyze_errors(*build([(1, 1, A)], [(1, 1, A, 0.9), (1, 2, near, 0.8)]))
    assert r["ap"] == pytest.approx(0.5, abs=1e-12)  # category 2: a false positive, AP 0
    only(r, both=0.5)
    assert r["counts"]["both"] == 1


def test_missed_error():
    r = analyze_errors(*build([(1, 1, A), (1, 1, B)], [(1, 1, A, 0.9)]))
    assert r["ap"] == pytest.approx(51 / 101, abs=1e-12)
    only(r, miss=50 / 101)
    assert r["counts"]["miss"] == 1


def test_boundary_error_is_a_mask_true_positive_with_a_poor_outline():
    gt_mask, det = A, square(12, 12, 40)  # shifted by 2 pixels: mask IoU 0.82, boundary IoU 0.21
    mask_iou = 38 * 38 / (2 * 1600 - 38 * 38)
    b_iou = boundary_iou(gt_mask, det)
    assert mask_iou >= 0.5 > b_iou >= 0.1
    gt, dt = build([(1, 1, gt_mask)], [(1, 1, det, 0.9)])
    r = analyze_errors(gt, dt)
    assert r["ap"] == 0.0
    only(r, loc=1.0, boundary=1.0)  # in TIDE's six it is a localization error
    assert r["counts"]["boundary"] == 1
    (row,) = r["boundary_errors"]
    assert row["mask_iou"] == pytest.approx(mask_iou, abs=1e-12)
    assert row["boundary_iou"] == pytest.approx(b_iou, abs=1e-12)
    # with mask IoU it is a true positive and nothing is wrong
    segm = analyze_errors(gt, dt, iou="segm")
    assert segm["ap"] == 1.0
    only(segm)
    assert segm["boundary_errors"] == []


def test_crowd_region_ignores_a_detection():
    crowd = square(50, 0, 50, 50)
    r = analyze_errors(*build([(1, 1, A), (1, 1, crowd, 1)], [(1, 1, crowd, 0.95), (1, 1, A, 0.9)]))
    assert r["ap"] == 1.0
    only(r)


def test_per_size_keeps_the_objects_of_that_size():
    small = square(2, 2, 10)  # area 100
    big = square(20, 20, 70)  # area 4900: medium
    det = square(20, 20, 70, 25)  # a strip of the medium object
    r = analyze_errors(*build([(1, 1, small), (1, 1, big)], [(1, 1, small, 0.9), (1, 1, det, 0.8)]))
    assert r["per_size"]["small"]["ap"] == 1.0
    only(r["per_size"]["small"])
    assert r["per_size"]["medium"]["ap"] == 0.0
    assert r["per_size"]["medium"]["errors"]["loc"] == 1.0
    assert np.isnan(r["per_size"]["large"]["ap"])  # nothing of that size


def test_bad_arguments():
    gt, dt = build([(1, 1, A)], [(1, 1, A, 0.9)])
    with pytest.raises(ValueError, match="iou"):
        analyze_errors(gt, dt, iou="keypoints")  # (bbox is box IoU since issue 30)
    with pytest.raises(ValueError, match="background_threshold"):
        analyze_errors(gt, dt, pos_threshold=0.1, background_threshold=0.5)


# ----------------------------------------------------------------------------
# real data
# ----------------------------------------------------------------------------
@pytest.fixture(scope="module")
def coco():
    from conftest import COCO_DT, COCO_GT

    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        dt = gt.loadRes(COCO_DT)
    return gt, dt


def test_ious_are_the_evaluators(coco):
    gt, dt = coco
    ims = image_ious(gt, dt, max_dets=10 ** 6)
    evs = {}
    for kind in ("segm", "boundary"):
        with contextlib.redirect_stdout(io.StringIO()):
            ev = COCOeval(gt, dt, iouType=kind)
            ev.evaluate()
        evs[kind] = ev.ious
    checked = 0
    for img, im in ims.items():
        dcat = np.array([d["category_id"] for d in im.dets])
        for cat in set(dcat.tolist()):
            di = np.flatnonzero(dcat == cat)
            # COCOeval puts crowds after the others in its gt order? keep its own order
            gts = gt.imgToAnns[img]
            gids = [g["id"] for g in gts if g["category_id"] == cat]
            if not gids:
                continue
            for kind, ious in evs.items():
                ref = np.asarray(ious[img, cat])
                cols = []
                for gid in gids:
                    j = [g["id"] for g in im.gts].index(gid) if gid in [g["id"] for g in im.gts] else None
                    cols.append(j)
                for c, j in enumerate(cols):
                    if j is None:  # crowd
                        k = [g["id"] for g in im.crowds].index(gids[c])
                        np.testing.assert_allclose(im.crowd[di, k], ref[:, c], rtol=0, atol=1e-12)
                        continue
                    mine = im.mask[di, j] if kind == "segm" else np.minimum(im.mask[di, j], im.boundary[di, j])
                    np.testing.assert_allclose(mine, ref[:, c], rtol=0, atol=1e-12)
                    checked += 1
    assert checked > 500


# tidecv 1.0.1 (TIDE(mode=MASK), fix_main_errors) on tests/data/coco: AP and ΔAP x100
TIDECV = {"ap": 51.80081155512982, "cls": 16.186000852974452, "loc": 11.600722789458686,
          "both": 1.0128509521506288, "dupe": 0.0, "bkg": 0.2681107488310275, "miss": 7.778639338018046}
TIDECV_COUNTS = {"cls": 76, "loc": 82, "both": 7, "dupe": 0, "bkg": 4, "miss": 109}


def test_mask_iou_breakdown_equals_tidecv(coco):
    r = analyze_errors(*coco, iou="segm")
    assert r["ap"] * 100 == pytest.approx(TIDECV["ap"], abs=1e-10)
    for t in ("cls", "loc", "both", "dupe", "bkg", "miss"):
        assert r["errors"][t] * 100 == pytest.approx(TIDECV[t], abs=1e-10), t
        assert r["counts"][t] == TIDECV_COUNTS[t]


# tidecv 1.0.1 (TIDE(mode=BOX), get_main_errors) on tests/data/coco, the results' boxes those
# loadRes gives (pycocotools' toBbox of the masks): AP and ΔAP x100, error counts
TIDECV_BOX = {"ap": 64.13459396621478, "cls": 22.236283723057895, "loc": 0.29828587482657554, "both": 0.0,
              "dupe": 0.013890349797222257, "bkg": 0.0, "miss": 8.507905295666404}
TIDECV_BOX_COUNTS = {"cls": 83, "loc": 2, "both": 0, "dupe": 1, "bkg": 0, "miss": 97}


def test_box_iou_breakdown_equals_tidecv(coco):
    r = analyze_errors(*coco, iou="bbox")
    assert r["ap"] * 100 == pytest.approx(TIDECV_BOX["ap"], abs=1e-10)
    for t in ("cls", "loc", "both", "dupe", "bkg", "miss"):
        assert r["errors"][t] * 100 == pytest.approx(TIDECV_BOX[t], abs=1e-10), t
        assert r["counts"][t] == TIDECV_BOX_COUNTS[t]
    assert r["errors"]["boundary"] == 0.0 and r["boundary_errors"] == []


def test_boundary_breakdown_on_real_data(coco):
    r = analyze_errors(*coco)
    segm = analyze_errors(*coco, iou="segm")
    assert r["ap"] < segm["ap"]
    # every boundary error is a false positive of min(mask, boundary) IoU that mask IoU accepts
    assert r["counts"]["boundary"] == len(r["boundary_errors"]) > 0
    for row in r["boundary_errors"]:
        assert row["mask_iou"] >= 0.5 > row["boundary_iou"]
    # small objects are all boundary at ratio 0.02 on these images: no boundary error there
    assert r["per_size"]["small"]["errors"]["boundary"] == 0.0
    assert r["per_size"]["large"]["errors"]["boundary"] > 0.1


# ----------------------------------------------------------------------------
# curves and coverage
# ----------------------------------------------------------------------------
def test_pr_curves_are_the_mean_precision_over_categories():
    gt, dt = build([(1, 1, A), (1, 1, B), (1, 2, A)],
                   [(1, 1, A, 0.9), (1, 1, square(25, 25, 40), 0.8), (1, 1, B, 0.7), (1, 2, A, 0.6)])
    with contextlib.redirect_stdout(io.StringIO()):
        ev = COCOeval(gt, dt, iouType="boundary")
        ev.evaluate()
        ev.accumulate()
    curves = pr_curves(ev, (0.5, 0.75))
    assert set(curves) == {"all", "small", "medium", "large"}
    # category 1: TP FP TP -> precision 1 up to recall 1/2, then 2/3; category 2: 1 everywhere
    expected = np.where(ev.params.recThrs <= 0.5, 1.0, (2 / 3 + 1) / 2)
    np.testing.assert_allclose(curves["all"][0.5], expected, rtol=0, atol=1e-12)
    assert np.isnan(curves["large"][0.5]).all()  # no large objects: no category has a value
    with pytest.raises(ValueError, match="0.3"):
        pr_curves(ev, (0.3,))


def test_boundary_coverage_counts_objects_that_are_all_boundary():
    tiny = square(2, 2, 5)  # d = 3 at 100 x 100: the band covers it all
    gt, _ = build([(1, 1, tiny), (1, 1, A), (1, 1, B)], [(1, 1, A, 0.9)])
    cov = boundary_coverage(gt)
    assert cov["small"] == {"objects": 2, "covered": 1, "fraction": 0.5}  # tiny and B (30 x 30)
    assert cov["medium"] == {"objects": 1, "covered": 0, "fraction": 0.0}  # A (40 x 40)
    assert cov["all"]["fraction"] == pytest.approx(1 / 3)
    assert cov["large"]["fraction"] is None


# ----------------------------------------------------------------------------
# generated data (tests/synth.py: crowds, ties, more than max_dets, empty images)
# ----------------------------------------------------------------------------
def _load(gt_dict, dets):
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO.from_dataset(gt_dict)
        dt = gt.loadRes(dets)
    return gt, dt


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10 ** 6))
@example(seed=113)  # a detection a crowd region ignores was listed as a boundary error
def test_invariants_on_generated_data(seed):
    gt, dt = _load(*make_dataset(seed=seed, num_images=8, max_size=40))
    ims = image_ious(gt, dt)
    r = analyze_errors(gt, dt, images=ims)
    for res in [r] + list(r["per_size"].values()):
        if not np.isnan(res["ap"]):
            for t in ERROR_TYPES:
                assert 0.0 <= res["errors"][t] <= 1.0 - res["ap"] + 1e-12, t
    assert r["counts"]["boundary"] == len(r["boundary_errors"])
    for row in r["boundary_errors"]:
        assert row["mask_iou"] >= 0.5 > min(row["mask_iou"], row["boundary_iou"])
    # a band as wide as the image covers every mask: boundary IoU = mask IoU, the same
    # breakdown as mask IoU and no boundary error
    wide = analyze_errors(gt, dt, dilation_ratio=1.0)
    segm = analyze_errors(gt, dt, iou="segm", images=ims)
    assert wide["ap"] == segm["ap"] and wide["errors"] == segm["errors"] and wide["counts"] == segm["counts"]


@settings(max_examples=8, deadline=None)
@given(seed=st.integers(0, 10 ** 6))
def test_ground_truth_as_results_has_no_error(seed):
    gt_dict, _ = make_dataset(seed=seed, num_images=8, max_size=40)
    anns = [a for a in gt_dict["annotations"] if not a["iscrowd"]]
    if not anns:
        return
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO.from_dataset(gt_dict)
    dets = []
    for n, a in enumerate(anns):
        r = gt.annToRLE(a)
        dets.append({"image_id": a["image_id"], "category_id": a["category_id"],
                     "segmentation": {"size": r["size"], "counts": r["counts"] if isinstance(r["counts"], str)
                                      else r["counts"].decode("ascii")},
                     "score": 1.0 - n / (len(anns) + 1)})
    with contextlib.redirect_stdout(io.StringIO()):
        dt = gt.loadRes(dets)
    r = analyze_errors(gt, dt, max_dets=1000)
    assert r["ap"] == 1.0
    assert all(v == 0.0 for v in r["errors"].values()) and all(v == 0 for v in r["counts"].values())
