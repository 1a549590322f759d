"""The segmentation measures (boundary_api.masks.measures): the run-length kernels against the
NumPy/OpenCV oracle on adversarial masks, the properties the papers state (as values),
the basics against pycocotools, and input errors."""
import json
import os

import cv2
import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import boundary_api.masks as masks_pkg
from boundary_api.masks import dilation_pixels
from boundary_api.masks import reference as R
from boundary_api.masks.measures import (
    MEASURES,
    MF_DILATION_RATIOS,
    boundary_iou,
    box_iou,
    crowd_iof,
    f_measure,
    label_jaccard,
    mask_iou,
    measures,
    mf_measure,
    min_mask_boundary_iou,
    multiscale_iou,
    pixel_accuracy,
    trimap_iou,
)

# ratios from 0 are swept on purpose: the warning that 0 gives d = 1, not an empty
# boundary, is asserted by tests/masks/test_zero_ratio.py
pytestmark = pytest.mark.filterwarnings("ignore:dilation_ratio 0 gives the thinnest boundary")

DATA = os.path.join(os.path.dirname(__file__), "..", "data", "coco")
SQUARE = np.ones((3, 3), np.uint8)


def rle(m):
    return mask_utils.encode(np.asfortranarray(np.asarray(m, np.uint8)))


# --------------------------------------------------------------------------
# masks hypothesis draws: empty, full, border-touching, one pixel, thin lines,
# holes, random blobs; sizes with exact diagonals so that ratio * diagonal hits .5
# --------------------------------------------------------------------------

EXACT = [(3, 4), (6, 8), (12, 16), (24, 32), (5, 12)]  # diagonals 5, 10, 20, 40, 13
HALF_RATIOS = [0.5, 0.3, 0.25, 0.125, 0.0625, 0.7, 0.9, 1.5 / 13, 2.5 / 13]


@st.composite
def mask_of(draw, h, w):
    kind = draw(st.sampled_from(["empty", "full", "pixel", "hline", "vline", "rect", "holes", "random",
                                 "border", "blob"]))
    m = np.zeros((h, w), np.uint8)
    if kind == "full":
        m[:] = 1
    elif kind == "pixel":
        m[draw(st.integers(0, h - 1)), draw(st.integers(0, w - 1))] = 1
    elif kind == "hline":
        m[draw(st.integers(0, h - 1)), draw(st.integers(0, w - 1)):] = 1
    elif kind == "vline":
        m[draw(st.integers(0, h - 1)):, draw(st.integers(0, w - 1))] = 1
    elif kind in ("rect", "holes", "border"):
        y0, x0 = draw(st.integers(0, h - 1)), draw(st.integers(0, w - 1))
        y1, x1 = draw(st.integers(y0 + 1, h)), draw(st.integers(x0 + 1, w))
        if kind == "border":
            y0, x1 = 0, w
        m[y0:y1, x0:x1] = 1
        if kind == "holes":
            seed = draw(st.integers(0, 2**31))
            m &= (np.random.default_rng(seed).random((h, w)) > 0.3).astype(np.uint8)
    elif kind in ("random", "blob"):
        seed = draw(st.integers(0, 2**31))
        rng = np.random.default_rng(seed)
        m = (rng.random((h, w)) < rng.uniform(0.05, 0.95)).astype(np.uint8)
        if kind == "blob":
            m = cv2.morphologyEx(m, cv2.MORPH_CLOSE, SQUARE)
    return m


@st.composite
def pairs(draw):
    if draw(st.booleans()):
        h, w = draw(st.sampled_from(EXACT))
        if draw(st.booleans()):
            h, w = w, h
        ratio = draw(st.sampled_from(HALF_RATIOS))
    elif draw(st.integers(0, 4)) > 0:
        h, w = draw(st.integers(1, 40)), draw(st.integers(1, 40))
        ratio = draw(st.sampled_from([0.0, 0.02, 0.05, 0.1, 0.2, 0.35]))
    else:  # taller than 64 and 128 rows: several words per column, several cells per grid column
        h, w = draw(st.integers(60, 300)), draw(st.integers(1, 120))
        ratio = draw(st.sampled_from([0.0, 0.01, 0.02, 0.05, 0.3]))
    return draw(mask_of(h, w)), draw(mask_of(h, w)), ratio


MF_SHORT = (0.01, 0.05, 0.1, 0.3)


@pytest.mark.slow
@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pairs())
def test_every_measure_equals_the_oracle(pair):
    g, p, ratio = pair
    fast = measures(g, p, ratio, mf_ratios=MF_SHORT)
    ref = R.measures(g, p, ratio, mf_ratios=MF_SHORT)
    assert list(fast) == list(MEASURES)
    for name in MEASURES:
        assert abs(fast[name] - ref[name]) <= 1e-12, (name, fast[name], ref[name])
    # Boundary IoU is the package's, value for value
    assert fast["boundary_iou"] == masks_pkg.boundary_iou(g, p, ratio)


@settings(max_examples=60, deadline=None)
@given(st.lists(pairs(), min_size=1, max_size=1), st.integers(0, 3), st.integers(0, 3))
def test_lists_give_the_matrix_of_single_calls(first, ng, npred):
    g0, p0, ratio = first[0]
    h, w = g0.shape
    rng = np.random.default_rng(ng * 7 + npred)
    G = [g0] + [(rng.random((h, w)) < 0.5).astype(np.uint8) for _ in range(ng)]
    P = [p0] + [(rng.random((h, w)) < 0.5).astype(np.uint8) for _ in range(npred)]
    M = measures([rle(x) for x in G], P, ratio, mf_ratios=MF_SHORT, num_threads=2)
    for name in MEASURES:
        assert M[name].shape == (len(G), len(P))
        for i, g in enumerate(G):
            for j, p in enumerate(P):
                assert M[name][i, j] == measures(g, p, ratio, mf_ratios=MF_SHORT)[name]


@settings(max_examples=40, deadline=None)
@given(st.lists(pairs(), min_size=0, max_size=6))
def test_pairwise_lists_of_mixed_sizes_give_the_single_values(items):
    G = [g for g, _, _ in items]
    P = [rle(p) for _, p, _ in items]
    for ratio in (0.02, 0.25):
        M = measures(G, P, ratio, mf_ratios=MF_SHORT, pairwise=True, num_threads=2)
        for name in MEASURES:
            assert M[name].shape == (len(items),)
            for i in range(len(items)):
                assert M[name][i] == measures(G[i], P[i], ratio, mf_ratios=MF_SHORT)[name], name
    if items:
        assert np.array_equal(boundary_iou(G, P, 0.25, pairwise=True), M["boundary_iou"])
        assert np.array_equal(mf_measure(G, P, MF_SHORT, pairwise=True), M["mf_measure"])


def test_pairwise_many_pairs_in_threads():
    rng = np.random.default_rng(9)
    G, P = [], []
    for i in range(150):
        h, w = int(rng.integers(20, 90)), int(rng.integers(20, 90))
        G.append(cv2.dilate((rng.random((h, w)) < 0.01).astype(np.uint8), SQUARE, iterations=3))
        P.append(cv2.dilate((rng.random((h, w)) < 0.01).astype(np.uint8), SQUARE, iterations=3))
    M = measures(G, P, pairwise=True, num_threads=2)
    for i in range(0, 150, 10):
        ref = R.measures(G[i], P[i])
        for name in MEASURES:
            assert abs(M[name][i] - ref[name]) <= 1e-12
    crowd = rng.random(150) < 0.5
    np.testing.assert_array_equal(
        mask_iou([rle(g) for g in G], [rle(p) for p in P], iscrowd=crowd, pairwise=True),
        [mask_utils.iou([rle(P[i])], [rle(G[i])], [crowd[i]])[0, 0] for i in range(150)])


def test_matrix_in_threads_equals_one_thread_and_the_oracle():
    rng = np.random.default_rng(11)
    G = [cv2.dilate((rng.random((70, 90)) < 0.004).astype(np.uint8), SQUARE, iterations=4) for _ in range(12)]
    P = [cv2.dilate((rng.random((70, 90)) < 0.004).astype(np.uint8), SQUARE, iterations=4) for _ in range(10)]
    two = measures(G, [rle(p) for p in P], 0.05, num_threads=2)
    one = measures(G, P, 0.05, num_threads=1)
    for name in MEASURES:
        assert two[name].shape == (12, 10)
        np.testing.assert_array_equal(two[name], one[name])
    for i, j in [(0, 0), (3, 7), (11, 9), (5, 2)]:
        ref = R.measures(G[i], P[j], 0.05)
        for name in MEASURES:
            assert abs(two[name][i, j] - ref[name]) <= 1e-12


def test_default_mf_ratios_and_one_function_per_measure():
    rng = np.random.default_rng(5)
    for _ in range(6):
        g = cv2.dilate((rng.random((60, 80)) < 0.02).astype(np.uint8), SQUARE, iterations=3)
        p = cv2.dilate((rng.random((60, 80)) < 0.02).astype(np.uint8), SQUARE, iterations=2)
        all_ = measures(g, p, 0.05)
        assert all_["mf_measure"] == pytest.approx(R.mf_measure(g, p, MF_DILATION_RATIOS), abs=1e-12)
        single = {
            "pixel_accuracy": pixel_accuracy(g, p), "mask_iou": mask_iou(g, p), "trimap_iou": trimap_iou(g, p, 0.05),
            "f_measure": f_measure(g, p, 0.05), "mf_measure": mf_measure(g, p),
            "boundary_iou": boundary_iou(g, p, 0.05), "min_mask_boundary_iou": min_mask_boundary_iou(g, p, 0.05),
            "multiscale_iou": multiscale_iou(g, p),
        }
        assert single == all_


def test_mf_default_is_1_to_17_pixels_on_coco_sized_images():
    assert [dilation_pixels(480, 640, r) for r in MF_DILATION_RATIOS] == list(range(1, 18))


def test_real_coco_masks_against_the_oracle():
    gt = json.load(open(os.path.join(DATA, "instances_val2014_100.json")))
    dt = json.load(open(os.path.join(DATA, "instances_val2014_fakesegm100_results.json")))
    imgs = {im["id"]: im for im in gt["images"]}
    by_img = {}
    for a in dt:
        by_img.setdefault(a["image_id"], []).append(a["segmentation"])
    checked = 0
    for a in gt["annotations"]:
        if a["iscrowd"] or a["image_id"] not in by_img or checked >= 8:
            continue
        im = imgs[a["image_id"]]
        g = mask_utils.decode(mask_utils.frPyObjects(a["segmentation"], im["height"], im["width"]))
        g = g.max(axis=2) if g.ndim == 3 else g
        p_rle = by_img[a["image_id"]][0]
        p = mask_utils.decode(p_rle)
        fast = measures(rle(g), p_rle)
        ref = R.measures(g, p)
        for name in MEASURES:
            assert abs(fast[name] - ref[name]) <= 1e-12, name
        checked += 1
    assert checked == 8


# --------------------------------------------------------------------------
# properties the papers state, as values
# --------------------------------------------------------------------------

def disc(h, w, cx, cy, r):
    m = np.zeros((h, w), np.uint8)
    cv2.circle(m, (cx, cy), r, 1, -1)
    return m


def test_symmetry():
    rng = np.random.default_rng(0)
    for _ in range(20):
        g = cv2.dilate((rng.random((50, 60)) < 0.01).astype(np.uint8), SQUARE, iterations=4)
        p = cv2.dilate((rng.random((50, 60)) < 0.01).astype(np.uint8), SQUARE, iterations=4)
        for f in (mask_iou, boundary_iou, f_measure, min_mask_boundary_iou):
            assert f(g, p) == f(p, g)
    # not symmetric: a prediction covering the ground truth and more
    g = disc(100, 100, 50, 50, 20)
    p = disc(100, 100, 50, 50, 30)
    assert pixel_accuracy(g, p) == 1.0 and pixel_accuracy(p, g) == g.sum() / p.sum()
    assert trimap_iou(g, p) != trimap_iou(p, g)
    assert multiscale_iou(g, p) != multiscale_iou(p, g)


def test_boundary_iou_is_mask_iou_once_d_covers_the_object():
    g = np.zeros((100, 100), np.uint8)
    g[40:60, 30:70] = 1          # 20 rows: d >= 10 covers it
    p = np.zeros_like(g)
    p[45:62, 35:75] = 1
    assert boundary_iou(g, p, 0.02) < mask_iou(g, p)   # d = 3
    ratio = 10 / (100 * 2 ** 0.5)                      # d = 10
    assert dilation_pixels(100, 100, ratio) == 10
    assert boundary_iou(g, p, ratio) == mask_iou(g, p) == min_mask_boundary_iou(g, p, ratio)


def test_disc_and_ring_of_figure_10():
    h = w = 200
    ratio = 0.02
    d = dilation_pixels(h, w, ratio)
    g = disc(h, w, 100, 100, 60)
    # the ring: the same outer edge, inner edge exactly d inside (the package's metric)
    ring = g - cv2.erode(cv2.copyMakeBorder(g, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0),
                         SQUARE, iterations=d)[1:-1, 1:-1]
    assert boundary_iou(g, ring, ratio) == 1.0
    assert mask_iou(g, ring) == ring.sum() / g.sum() < 0.25


def test_trimap_iou_dilations_keep_a_floor_erosions_fall_to_zero():
    h = w = 200
    ratio = 0.02   # d = 6
    g = disc(h, w, 100, 100, 50)
    dil = [trimap_iou(g, cv2.dilate(g, SQUARE, iterations=k), ratio) for k in range(1, 30, 2)]
    ero = [trimap_iou(g, cv2.erode(g, SQUARE, iterations=k), ratio) for k in range(1, 30, 2)]
    # dilation covers the inner band and the outer band: |G_d & G| / |G_d|, about 1/2
    assert min(dil) == dil[-1] > 0.45
    floor = (R.band(g, 6).astype(bool) & g.astype(bool)).sum() / R.band(g, 6).sum()
    assert dil[-1] == floor
    assert ero[0] > 0.8 and ero[3:] == [0.0] * (len(ero) - 3)
    assert all(a >= b for a, b in zip(dil, dil[1:])) and all(a >= b for a, b in zip(ero, ero[1:]))


def test_f_measure_of_a_shifted_mask_steps_past_d():
    h = w = 200
    ratio = 0.02
    d = dilation_pixels(h, w, ratio)
    g = np.zeros((h, w), np.uint8)
    g[60:140, 60:140] = 1
    f = []
    for s in range(0, 2 * d):
        p = np.zeros_like(g)
        p[60 + s:140 + s, 60 + s:140 + s] = 1
        f.append(f_measure(g, p, ratio))
    assert f[:d + 1] == [1.0] * (d + 1)          # every contour pixel within d of the other
    assert max(f[d + 1:]) < 0.1                  # only the crossings of the two outlines remain
    assert mask_iou(g, np.roll(np.roll(g, d, 0), d, 1)) < 0.8   # while Mask IoU falls smoothly


def test_multiscale_iou_prefers_the_jagged_outline_to_the_box():
    # ground truth: a block with 8 teeth; box prediction: its bounding box; jagged
    # prediction: the exact outline with 512 wrong pixels elsewhere: the same Mask IoU
    g = np.zeros((128, 128), np.uint8)
    g[32:96, 32:64] = 1
    for t in range(8):
        g[32 + 8 * t:36 + 8 * t, 64:80] = 1
    box = np.zeros_like(g)
    box[32:96, 32:80] = 1
    jagged = g.copy()
    jagged[48:80, 16:32] = 1
    assert mask_iou(g, box) == mask_iou(g, jagged) == 2560 / 3072
    assert multiscale_iou(g, jagged) > multiscale_iou(g, box) + 0.15


# --------------------------------------------------------------------------
# 0/0 conventions and the oracle's own building blocks
# --------------------------------------------------------------------------

def test_empty_masks_score_zero():
    z = np.zeros((10, 12), np.uint8)
    m = z.copy()
    m[2:5, 3:9] = 1
    for name, v in measures(z, z).items():
        assert v == 0.0, name
    for name, v in measures(z, m).items():
        assert v == 0.0, name
    got = measures(m, z)
    assert got == {n: 0.0 for n in MEASURES}
    full = np.ones_like(z)
    assert measures(full, full) == {n: 1.0 for n in MEASURES}


def test_oracle_band_and_cells_by_hand():
    m = np.zeros((6, 7), np.uint8)
    m[1:5, 1:6] = 1
    c = R.contour(m)
    assert c.sum() == 4 * 5 - 2 * 3 and c[2, 2] == 0
    big = np.zeros((10, 11), np.uint8)
    big[1:9, 1:10] = 1
    b1 = R.band(big, 1)   # everything but the pixels 2 or more away from the contour
    assert b1.sum() == 110 - 4 * 5 and b1[3:7, 3:8].sum() == 0
    # the inner band is d + 1 = 2 pixels deep, the package boundary (d = 1) one pixel
    assert (R.band(big, 1) & big).sum() == big.sum() - 4 * 5 > masks_pkg.mask_to_boundary(big, 0.0).sum() == 30
    cells = R.grid_cells(m, 4)
    assert cells.shape == (2, 2) and cells.all()
    assert R.grid_cells(m, 8).shape == (1, 1)


# --------------------------------------------------------------------------
# the basics against pycocotools, and label sets
# --------------------------------------------------------------------------

def test_box_iou_equals_pycocotools():
    rng = np.random.default_rng(3)
    g = np.concatenate([rng.uniform(0, 50, (13, 2)), rng.uniform(0, 40, (13, 2))], axis=1)
    p = np.concatenate([rng.uniform(0, 50, (11, 2)), rng.uniform(0, 40, (11, 2))], axis=1)
    g[0] = [10, 10, 0, 5]       # zero-area boxes
    p[0] = [10, 10, 5, 0]
    crowd = rng.random(13) < 0.4
    np.testing.assert_array_equal(box_iou(g, p), mask_utils.iou(p, g, [0] * 13).T)
    np.testing.assert_array_equal(box_iou(g, p, iscrowd=crowd), mask_utils.iou(p, g, crowd.astype(np.uint8)).T)
    gx = np.concatenate([g[:, :2], g[:, :2] + g[:, 2:]], axis=1)
    px = np.concatenate([p[:, :2], p[:, :2] + p[:, 2:]], axis=1)
    gw = np.concatenate([gx[:, :2], gx[:, 2:] - gx[:, :2]], axis=1)
    pw = np.concatenate([px[:, :2], px[:, 2:] - px[:, :2]], axis=1)
    np.testing.assert_array_equal(box_iou(gx, px, "xyxy"), mask_utils.iou(pw, gw, [0] * 13).T)
    assert box_iou([0, 0, 10, 10], [5, 0, 10, 10]) == 50 / 150
    assert box_iou([0, 0, 10, 10], [5, 0, 15, 10], "xyxy") == 50 / 150
    assert box_iou([0, 0, 10, 10], [5, 0, 10, 10], iscrowd=[1]) == 0.5


def test_mask_iou_and_crowd_iof_equal_pycocotools():
    rng = np.random.default_rng(4)
    G = [rle(cv2.dilate((rng.random((40, 50)) < 0.01).astype(np.uint8), SQUARE, iterations=3)) for _ in range(9)]
    P = [rle(cv2.dilate((rng.random((40, 50)) < 0.01).astype(np.uint8), SQUARE, iterations=3)) for _ in range(7)]
    G[0] = rle(np.zeros((40, 50)))
    P[0] = rle(np.zeros((40, 50)))
    crowd = np.array([0, 1, 0, 1, 1, 0, 0, 1, 0], np.uint8)
    np.testing.assert_array_equal(mask_iou(G, P), mask_utils.iou(P, G, [0] * 9).T)
    np.testing.assert_array_equal(mask_iou(G, P, iscrowd=crowd), mask_utils.iou(P, G, crowd).T)
    np.testing.assert_array_equal(crowd_iof(G, P), mask_utils.iou(P, G, [1] * 9).T)


def test_label_jaccard():
    t = np.array([[1, 0, 1, 0], [1, 1, 0, 0], [0, 0, 1, 0]])
    p = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 0]])
    np.testing.assert_array_equal(label_jaccard(t, p), [1.0, 0.5, 0.5, 0.0])
    assert label_jaccard(t, p, "macro") == 2.0 / 4
    assert label_jaccard(t, p, "micro") == 4 / 6
    assert label_jaccard(t, p, "samples") == (1 / 3 + 1 + 1) / 3
    assert label_jaccard(np.zeros((2, 3)), np.zeros((2, 3)), "micro") == 0.0


# --------------------------------------------------------------------------
# input errors
# --------------------------------------------------------------------------

def test_bad_input_is_named():
    g = np.zeros((5, 5), np.uint8)
    with pytest.raises(ValueError, match="same size"):
        measures(g, np.zeros((5, 6)))
    with pytest.raises(ValueError, match="same size"):
        mask_iou([g, np.zeros((4, 4))], [g])
    with pytest.raises(TypeError, match="gt must be"):
        mask_iou(3, g)
    with pytest.raises(ValueError, match=r"pred\[1\]"):
        boundary_iou([g], [g, np.zeros((0, 5))])
    with pytest.raises(ValueError, match=r"pred\[1\].*counts"):
        boundary_iou([g], [rle(g), {"size": [5, 5], "counts": "00"}])
    with pytest.raises(ValueError, match="dilation_ratio"):
        trimap_iou(g, g, -1)
    with pytest.raises(ValueError, match="unknown measure"):
        measures(g, g, names=["dice"])
    with pytest.raises(ValueError, match="num_scales"):
        multiscale_iou(g, g, num_scales=1)
    with pytest.raises(ValueError, match="iscrowd"):
        mask_iou([g, g], [g], iscrowd=[1])
    with pytest.raises(ValueError, match="box"):
        box_iou([[1, 2, 3]], [[1, 2, 3, 4]])
    with pytest.raises(ValueError, match="box_format"):
        box_iou([1, 2, 3, 4], [1, 2, 3, 4], "cxcywh")
    with pytest.raises(ValueError, match="average"):
        label_jaccard(np.zeros((2, 2)), np.zeros((2, 2)), "weighted")
    with pytest.raises(TypeError, match="sequence"):
        mf_measure(g, g, 0.02)
    with pytest.raises(TypeError, match="pairwise"):
        measures(g, [g], pairwise=True)
    with pytest.raises(ValueError, match="as many"):
        measures([g], [g, g], pairwise=True)
    with pytest.raises(ValueError, match=r"gt\[1\] is 5x5 but pred\[1\] is 4x4"):
        measures([g, g], [g, np.zeros((4, 4))], pairwise=True)


def test_empty_lists():
    g = np.zeros((5, 5), np.uint8)
    assert measures([], [g])["mask_iou"].shape == (0, 1)
    assert mask_iou([g, g], []).shape == (2, 0)
