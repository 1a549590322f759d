"""The NumPy oracle of the tube IoUs (tests/video/oracle_vis.py) equals what the official
forks computed (tests/data/video/vis/, made by tests/video/make_vis_golden.py) on every
stored case, and a per-pixel computation on tiny tracks (hypothesis)."""
import math

import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import oracle_vis as ov
import vis_cases as vc

#: the cases too big for the quick tier (720x1280 frames; 40 videos)
BIG = {"large_frames", "mixed"}


def _runs_with_ious():
    out = []
    for case in vc.CASES:
        golden = vc.load_golden(case)
        for run in golden["runs"]:
            rec = vc.run_record(golden, run)
            if rec["error"] is None:
                marks = [pytest.mark.slow] if case in BIG else []
                out.append(pytest.param(case, run, marks=marks, id=f"{case}-{run}"))
    return out


def _oracle_for(case, run, **kw):
    gt, results = vc.load_inputs(case)
    rec = vc.run_record(vc.load_golden(case), run)
    spec = rec["spec"]
    args = dict(iou_type=spec["iouType"], dilation_ratio=spec.get("dilation_ratio", 0.02),
                max_dets=rec["params"]["maxDets"][-1], use_cats=bool(rec["params"]["useCats"]),
                hq=run.startswith("hq"))
    args.update(kw)
    return ov.iou_matrices(gt, results, **args), vc.stored_ious(rec)


def _same(got, expected, tol=1e-12):
    assert list(got) == list(expected)  # the same pairs, in the same order
    for key, e in expected.items():
        g = got[key]
        if isinstance(e, list):
            assert isinstance(g, list) and g == [], key
            continue
        assert g.shape == e.shape, key
        np.testing.assert_allclose(g, e, rtol=0, atol=tol, err_msg=str(key))


@pytest.mark.parametrize("case, run", _runs_with_ious())
def test_oracle_equals_official_ious(case, run):
    got, expected = _oracle_for(case, run)
    _same(got, expected)


def test_every_case_has_a_completed_run_of_each_iou_type():
    for case in vc.SCENARIO_CASES:
        runs = vc.load_golden(case)["runs"]
        for run in ("ytvos_segm", "hq_segm", "hq_boundary_0.02", "hq_boundary_0.05"):
            assert vc.run_record({"runs": runs}, run)["error"] is None, (case, run)


def test_results_bands_are_made_at_the_default_ratio():
    """HQ-YTVIS' loadRes makes the results' bands at 0.02 whatever the ground truth's
    ratio: at 0.05 the stored matrices are the oracle's with results at 0.02, not 0.05."""
    got, expected = _oracle_for("lifecycle", "hq_boundary_0.05", result_dilation_ratio=0.05)
    differs = [k for k, e in expected.items()
               if not isinstance(e, list) and e.size and np.abs(got[k] - e).max() > 1e-12]
    assert differs
    got, expected = _oracle_for("lifecycle", "hq_boundary_0.05", result_dilation_ratio=0.02)
    _same(got, expected)


def test_refined_segmentations_make_the_boundary_only():
    """With ``segmentations_refined``, HQ-YTVIS' bands come from it, its mask IoU from
    ``segmentations``; youtubevos ignores the key."""
    got, expected = _oracle_for("suspect_segmentations_refined", "hq_boundary_0.02", hq=True)
    _same(got, expected)
    got, _ = _oracle_for("suspect_segmentations_refined", "hq_boundary_0.02", hq=False)
    assert any(not isinstance(e, list) and e.size and np.abs(got[k] - e).max() > 1e-12
               for k, e in expected.items())
    got, expected = _oracle_for("suspect_segmentations_refined", "ytvos_segm", hq=True)
    _same(got, expected)


@pytest.mark.parametrize("case", [pytest.param(c, marks=[pytest.mark.slow] if c in BIG else [])
                                  for c in vc.CASES
                                  if "gt_avg_area" in vc.run_record(vc.load_golden(c), "ytvos_segm")])
def test_avg_area_equals_official(case):
    gt, results = vc.load_inputs(case)
    rec = vc.run_record(vc.load_golden(case), "ytvos_segm")
    anns = {a["id"]: a for a in gt["annotations"]}
    for ann_id, value in rec["gt_avg_area"].items():
        assert ov.avg_area(anns[int(ann_id)]["areas"]) == value, ann_id
    for r, value in zip(results, rec["results_avg_area"]):
        areas = [int(mask_utils.area(s)) if s else None for s in r["segmentations"]]
        assert ov.avg_area(areas) == value
    # loadRes' areas and boxes of the results: pycocotools' area and toBbox, None where absent
    for d in rec["results_derived"]:
        r = results[d["id"] - 1]
        assert d["areas"] == [float(mask_utils.area(s)) if s else None for s in r["segmentations"]]
        assert d["bboxes"] == [[float(v) for v in mask_utils.toBbox(s)] if s else None
                               for s in r["segmentations"]]
        assert d["iscrowd"] == 0


def test_float_areas_need_numpy_mean():
    """On 9 or more float areas Python's sum / len is not the official avg_area (NumPy's
    pairwise sum): the case keeps at least one such track."""
    gt, _ = vc.load_inputs("float_areas")
    rec = vc.run_record(vc.load_golden("float_areas"), "ytvos_segm")
    anns = {a["id"]: a for a in gt["annotations"]}
    plain = [sum(k) / len(k) for k in ([a for a in anns[int(i)]["areas"] if a] for i in rec["gt_avg_area"])]
    assert any(p != v for p, v in zip(plain, rec["gt_avg_area"].values()))


def test_absent_frames_without_size_raise_keyerror_as_hq():
    rec = vc.load_golden("suspect_result_none_frames_no_size")["runs"]["hq_boundary_0.02"]
    assert rec["error"]["class"] == "KeyError" and rec["error"]["message"] == "'height'"
    with pytest.raises(KeyError):
        ov.tube_iou_matrix([[None]], [[np.ones((2, 2), np.uint8)]], iou_type="boundary",
                           gt_absent_shapes=[(2, 2)])


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.data())
def test_decode_counts_string_is_pycocotools(h, w, data):
    bits = data.draw(st.lists(st.booleans(), min_size=h * w, max_size=h * w))
    m = np.array(bits, np.uint8).reshape(h, w)
    rle = mask_utils.encode(np.asfortranarray(m))
    np.testing.assert_array_equal(ov.decode_frame(rle, h, w), m)
    np.testing.assert_array_equal(ov.decode_frame(dict(rle, counts=rle["counts"].decode()), h, w), m)


# ---------------------------------------------------------------------------
# per pixel, on tiny tracks
# ---------------------------------------------------------------------------

def _dense_band(mask, ratio):
    """Pixels of the mask within chessboard distance d of a background pixel or of the
    outside of the frame (erosion by a 3x3 square d times, outside counting as 0)."""
    h, w = mask.shape
    d = max(1, int(round(ratio * math.sqrt(h * h + w * w))))
    band = np.zeros((h, w), np.uint8)
    for y in range(h):
        for x in range(w):
            if not mask[y, x]:
                continue
            for yy in range(y - d, y + d + 1):
                for xx in range(x - d, x + d + 1):
                    if not (0 <= yy < h and 0 <= xx < w) or not mask[yy, xx]:
                        band[y, x] = 1
    return band


def _dense_tube(a_frames, b_frames):
    """Sum of intersections / sum of unions, counted pixel by pixel over the common
    frames (an absent frame: the other's pixels count in the union; two sizes: nothing)."""
    inter = union = 0
    for a, b in zip(a_frames, b_frames):
        if a is None and b is None:
            continue
        if a is not None and b is not None and a.shape != b.shape:
            continue
        h, w = (a if a is not None else b).shape
        for y in range(h):
            for x in range(w):
                in_a = a is not None and bool(a[y, x])
                in_b = b is not None and bool(b[y, x])
                inter += in_a and in_b
                union += in_a or in_b
    return inter / union if union else 0.0


_SIZES = [(1, 1), (1, 5), (4, 1), (2, 3), (3, 3), (4, 5), (5, 4), (6, 6)]


@st.composite
def _track(draw):
    shape = draw(st.sampled_from(_SIZES))
    frames = []
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["mask", "mask", "mask", "none", "other_size"]))
        if kind == "none":
            frames.append(None)
            continue
        h, w = shape if kind == "mask" else draw(st.sampled_from(_SIZES))
        bits = draw(st.lists(st.booleans(), min_size=h * w, max_size=h * w))
        frames.append(np.array(bits, np.uint8).reshape(h, w))
    absent = shape if draw(st.integers(0, 5)) else draw(st.sampled_from(_SIZES))
    return frames, absent


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_track(), max_size=3), st.lists(_track(), max_size=3), st.data(),
       st.sampled_from([0.02, 0.1, 0.2, 0.3, 0.5, 1.0]), st.sampled_from([0.02, 0.1, 0.3, 1.0]))
def test_oracle_equals_per_pixel_count(dts, gts, data, gt_ratio, dt_ratio):
    crowd = [data.draw(st.integers(0, 1)) for _ in gts]
    d_frames, g_frames = [t for t, _ in dts], [t for t, _ in gts]
    d_abs, g_abs = [s for _, s in dts], [s for _, s in gts]
    segm = ov.tube_iou_matrix(d_frames, g_frames)
    bnd = ov.tube_iou_matrix(d_frames, g_frames, crowd, "boundary", gt_ratio=gt_ratio, dt_ratio=dt_ratio,
                             dt_absent_shapes=d_abs, gt_absent_shapes=g_abs)
    assert segm.shape == bnd.shape == (len(dts), len(gts))
    for i, (df, da) in enumerate(dts):
        db = [_dense_band(m, dt_ratio) if m is not None else np.zeros(da, np.uint8) for m in df]
        for j, (gf, ga) in enumerate(gts):
            gb = [_dense_band(m, gt_ratio) if m is not None else np.zeros(ga, np.uint8) for m in gf]
            mask_iou = _dense_tube(df, gf)
            assert segm[i, j] == mask_iou
            assert bnd[i, j] == (mask_iou if crowd[j] else min(mask_iou, _dense_tube(db, gb)))


def test_per_pixel_examples():
    """Hand-made: absent frames add the other's area; zip stops at the shorter track;
    masks of two sizes add nothing; an empty union gives 0."""
    one = np.ones((2, 2), np.uint8)
    half = np.array([[1, 0], [1, 0]], np.uint8)
    assert ov.tube_mask_iou([one, None], [half, half]) == 2 / 6
    assert ov.tube_mask_iou([one], [half, half]) == 2 / 4
    assert ov.tube_mask_iou([np.ones((2, 3), np.uint8), one], [one, half]) == 2 / 4
    assert ov.tube_mask_iou([np.ones((2, 3), np.uint8)], [one]) == 0.0
    assert ov.tube_mask_iou([None, np.zeros((2, 2), np.uint8)], [None, np.zeros((2, 2), np.uint8)]) == 0.0
    # the band of an absent result frame is empty of its own size: another size adds nothing
    b = ov.tube_iou_matrix([[None]], [[one]], [0], "boundary", dt_absent_shapes=[(3, 2)],
                           gt_absent_shapes=[(2, 2)])
    assert b[0, 0] == 0.0
    # crowd ground truth keeps the mask IoU (0.95 here; the bands' IoU is lower)
    full = np.ones((20, 20), np.uint8)
    cut = full.copy()
    cut[0] = 0
    b = ov.tube_iou_matrix([[cut]], [[full], [full]], [1, 0], "boundary")
    assert b[0, 0] == 0.95 and b[0, 1] < 0.95
    assert ov.avg_area([None, 0, 3, 5]) == 4.0 and ov.avg_area([None, 0]) == 0
