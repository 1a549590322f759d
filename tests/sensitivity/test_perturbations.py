"""The error generators of the paper's section 3 and the synthetic predictions, on real
COCO/LVIS annotations: severity 0 is the ground truth, each error does what it says
(checked on intermediate quantities: distances, offsets, vertex tolerance), and the
same seed gives the same mask."""
import json
import math
import os

import cv2
import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import LineString, Polygon

from boundary_api.sensitivity import perturbations as E
from boundary_api.panoptic import read_panoptic_png
from conftest import COCO_GT, DATA, LVIS_GT


def _anns(path, n=None, min_area=0, polygons=None):
    with open(path) as f:
        d = json.load(f)
    imgs = {i["id"]: i for i in d["images"]}
    out = []
    for a in sorted(d["annotations"], key=lambda a: a["id"]):
        if a["area"] <= min_area:
            continue
        if polygons is not None and isinstance(a["segmentation"], list) != polygons:
            continue
        i = imgs[a["image_id"]]
        out.append((a, i["height"], i["width"]))
    return out[:n] if n else out


COCO = _anns(COCO_GT)
LARGE = _anns(LVIS_GT, 12, min_area=96 ** 2)
RLE = _anns(COCO_GT, polygons=False)  # the crowd annotations are RLE


def _ann_mask(a, h, w):
    rles = mask_utils.frPyObjects(a["segmentation"], h, w)
    rle = mask_utils.merge(rles) if isinstance(rles, list) else rles
    return mask_utils.decode(rle)


def test_segmentation_mask_is_ann_to_mask():
    for a, h, w in COCO:
        assert np.array_equal(E.segmentation_mask(a["segmentation"], h, w), _ann_mask(a, h, w))


@pytest.mark.parametrize("kind", E.ERRORS)
def test_severity_zero_is_the_ground_truth(kind):
    for a, h, w in LARGE[:4] + RLE[:3]:
        got = E.apply_error(kind, a["segmentation"], h, w, 0, seed=1)
        assert got.dtype == np.uint8 and got.shape == (h, w)
        assert np.array_equal(got, _ann_mask(a, h, w)), (kind, a["id"])


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 24), st.integers(1, 24), st.floats(0.05, 0.95), st.integers(0, 2 ** 32 - 1))
def test_traced_rings_fill_back_to_any_mask(h, w, density, seed):
    # noise masks: islands inside holes inside objects, diagonal touches, 1-pixel parts, borders
    m = (np.random.default_rng(seed).random((h, w)) < density).astype(np.uint8)
    rings, holes = E._trace(m)
    assert np.array_equal(E._fill_traced(rings, holes, h, w), m)


def test_traced_rle_rings_fill_back_to_the_mask():
    # the polygon errors on RLE masks trace rings; filled back unchanged they give the mask
    for a, h, w in COCO:
        m = _ann_mask(a, h, w)
        rings, holes = E._trace(m)
        assert np.array_equal(E._fill_traced(rings, holes, h, w), m), a["id"]


@pytest.mark.parametrize("r", [1, 3, 6])
def test_dilation_and_erosion_are_discs_of_radius_r(r):
    for a, h, w in LARGE[:5]:
        g = _ann_mask(a, h, w)
        dil = E.dilation_error(a["segmentation"], h, w, r)
        ero = E.erosion_error(a["segmentation"], h, w, r)
        assert (dil >= g).all() and (ero <= g).all()
        # distance of every added pixel to the object, of every removed pixel to the background
        to_obj = cv2.distanceTransform((1 - g).astype(np.uint8), cv2.DIST_L2, cv2.DIST_MASK_PRECISE)
        assert to_obj[dil > g].max() <= r + 0.5
        assert (dil[to_obj <= r - 0.5] == 1).all()
        to_bg = cv2.distanceTransform(np.pad(g, 1, constant_values=1), cv2.DIST_L2, cv2.DIST_MASK_PRECISE)[1:-1, 1:-1]
        assert to_bg[g > ero].max() <= r + 0.5
        assert (ero[to_bg > r + 0.5] == 1).all()
        assert np.array_equal(E.scale_error(a["segmentation"], h, w, -r), ero)


def test_object_localization_moves_by_the_length():
    for a, h, w in LARGE[:6]:
        g = _ann_mask(a, h, w)
        for length in (3, 10):
            m = E.object_localization_error(a["segmentation"], h, w, length, seed=7)
            ys, xs = np.nonzero(g)
            ys2, xs2 = np.nonzero(m)
            inside = g[:, [0, -1]].sum() + g[[0, -1], :].sum() == 0 and m[:, [0, -1]].sum() + m[[0, -1], :].sum() == 0
            shift = math.hypot(xs2.mean() - xs.mean(), ys2.mean() - ys.mean())
            if inside:
                assert abs(shift - length) < 1.0
                assert abs(int(m.sum()) - int(g.sum())) <= 0.02 * g.sum()


def test_object_localization_of_rle_is_a_whole_pixel_shift():
    a, h, w = RLE[0]
    g = _ann_mask(a, h, w)
    m = E.object_localization_error(a["segmentation"], h, w, 5, seed=3)
    angle = np.random.default_rng(3).uniform(0, 2 * math.pi)
    dx, dy = round(5 * math.cos(angle)), round(5 * math.sin(angle))
    expect = np.zeros_like(g)
    expect[max(0, dy):h + min(0, dy), max(0, dx):w + min(0, dx)] = \
        g[max(0, -dy):h - max(0, dy), max(0, -dx):w - max(0, dx)]
    assert np.array_equal(m, expect)


def test_boundary_localization_noise_has_the_given_std():
    # re-create the draws: every vertex moves by N(0, std) in x and y
    a, h, w = LARGE[0]
    rng = np.random.default_rng(11)
    rings = [np.asarray(p, float).reshape(-1, 2) for p in a["segmentation"]]
    noisy = [r + rng.normal(0, 3.0, r.shape) for r in rings]
    expect = mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects([r.reshape(-1).tolist() for r in noisy], h, w)))
    assert np.array_equal(E.boundary_localization_error(a["segmentation"], h, w, 3.0, seed=11), expect)
    d = np.concatenate(noisy) - np.concatenate(rings)
    assert abs(d.std() - 3.0) < 0.5


def test_boundary_localization_on_rle_stays_near_the_mask():
    a, h, w = RLE[1]
    g = _ann_mask(a, h, w)
    m = E.boundary_localization_error(a["segmentation"], h, w, 1.0, seed=0)
    iou = (g & m).sum() / (g | m).sum()
    assert 0.6 < iou < 1.0


@pytest.mark.parametrize("tol", [1.0, 3.0])
def test_boundary_approximation_is_shapely_simplify(tol):
    for a, h, w in LARGE[:5]:
        m = E.boundary_approximation_error(a["segmentation"], h, w, tol)
        rings = []
        for p in a["segmentation"]:
            r = np.asarray(p, float).reshape(-1, 2)
            s = np.asarray(LineString(np.vstack([r, r[:1]])).simplify(tol, preserve_topology=False).coords)
            # the simplified ring stays within the tolerance of the original and drops vertices
            assert Polygon(r).exterior.hausdorff_distance(LineString(s)) <= tol + 1e-9
            assert len(s) - 1 <= len(r)
            if len(s) >= 4:
                rings.append(s[:-1].reshape(-1).tolist())
        expect = mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(rings, h, w)))
        assert np.array_equal(m, expect)


def test_inner_mask_error_makes_holes_inside():
    for a, h, w in LARGE[:6]:
        g = _ann_mask(a, h, w)
        m = E.inner_mask_error(a["segmentation"], h, w, 3, seed=5)
        assert (m <= g).all() and m.sum() < g.sum()
        removed = (g - m).astype(np.uint8)
        n, _ = cv2.connectedComponents(removed)
        assert 1 <= n - 1 <= 3
        # the object's own contour is untouched when the object is deep enough
        depth = cv2.distanceTransform(np.pad(g, 1), cv2.DIST_L2, 5)[1:-1, 1:-1]
        a_max = 0.15 * math.sqrt(g.sum())
        if (depth > a_max + 1).any():
            contour = (g == 1) & (depth <= 1.0)
            assert (m[contour] == 1).all()


@pytest.mark.parametrize("kind", ["boundary_localization", "object_localization", "inner_mask"])
def test_same_seed_same_mask(kind):
    a, h, w = LARGE[1]
    sev = 2
    one = E.apply_error(kind, a["segmentation"], h, w, sev, seed=42)
    two = E.apply_error(kind, a["segmentation"], h, w, sev, seed=42)
    other = E.apply_error(kind, a["segmentation"], h, w, sev, seed=43)
    assert np.array_equal(one, two)
    assert not np.array_equal(one, other)


@pytest.mark.parametrize("kind, sev, message", [
    ("shear", 1, "unknown error type"),
    ("dilation", 1.5, "whole number"),
    ("erosion", -1, ">= 0"),
    ("boundary_localization", float("nan"), "finite"),
    ("inner_mask", 2.5, "whole number"),
])
def test_bad_error_arguments(kind, sev, message):
    a, h, w = LARGE[0]
    with pytest.raises(ValueError, match=message):
        E.apply_error(kind, a["segmentation"], h, w, sev, seed=0)


def test_bad_segmentation_and_size():
    with pytest.raises(TypeError, match="segmentation must be"):
        E.segmentation_mask("nope", 10, 10)
    with pytest.raises(ValueError, match="RLE size"):
        E.segmentation_mask({"size": [5, 5], "counts": [25]}, 10, 10)
    with pytest.raises(ValueError, match="height must be"):
        E.segmentation_mask([[0, 0, 5, 0, 5, 5]], 0, 10)
    with pytest.raises(TypeError, match="seed"):
        E.boundary_localization_error([[0, 0, 5, 0, 5, 5]], 10, 10, 1.0, seed="x")


# --------------------------------------------------------------------------
# synthetic low-resolution masks and panoptic downscaling
# --------------------------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(0, 10), st.integers(0, 10), st.integers(0, 2 ** 32 - 1))
def test_low_resolution_mask_at_the_box_size_is_the_mask(n, oy, ox, seed):
    # a square box of side n resampled to n x n and back is the identity
    rng = np.random.default_rng(seed)
    h, w = n + oy + 3, n + ox + 3
    m = np.zeros((h, w), np.uint8)
    m[oy:oy + n, ox:ox + n] = rng.integers(0, 2, (n, n))
    m[oy, ox] = m[oy + n - 1, ox + n - 1] = 1  # the tight box is the square
    assert np.array_equal(E.low_resolution_mask(m, h, w, n), m)
    assert np.array_equal(E.low_resolution_mask(m, h, w, n, bbox=[ox, oy, n, n]), m)


def test_low_resolution_mask_stays_in_the_box_and_improves_with_resolution():
    ious = {14: [], 28: [], 56: []}
    for a, h, w in LARGE:
        g = _ann_mask(a, h, w)
        x, y, bw, bh = a["bbox"]
        outside = np.ones_like(g, bool)
        outside[int(math.floor(y)):int(math.ceil(y + bh)), int(math.floor(x)):int(math.ceil(x + bw))] = False
        for n in ious:
            m = E.low_resolution_mask(a["segmentation"], h, w, n, bbox=a["bbox"])
            assert not m[outside].any()
            ious[n].append((g & m).sum() / (g | m).sum())
    assert np.mean(ious[14]) < np.mean(ious[28]) < np.mean(ious[56]) <= 1
    assert np.mean(ious[28]) > 0.9


def test_low_resolution_mask_downsamples_by_area_then_bilinear():
    a, h, w = LARGE[2]
    g = _ann_mask(a, h, w)
    ys, xs = np.nonzero(g)
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    small = cv2.resize(g[y0:y1, x0:x1].astype(np.float32), (28, 28), interpolation=cv2.INTER_AREA)
    # each cell holds the covered fraction of its part of the box
    cell = g[y0:y0 + (y1 - y0) * 1 // 28, x0:x0 + (x1 - x0) * 1 // 28]
    assert 0 <= small.min() and small.max() <= 1
    assert abs(small[0, 0] - cell.mean()) < 0.2
    up = cv2.resize(small, (x1 - x0, y1 - y0), interpolation=cv2.INTER_LINEAR) >= 0.5
    expect = np.zeros_like(g)
    expect[y0:y1, x0:x1] = up
    assert np.array_equal(E.low_resolution_mask(a["segmentation"], h, w, 28), expect)


def test_downscale_panoptic_reproduces_the_shipped_down4_predictions():
    gt_dir = os.path.join(DATA, "panoptic", "panoptic_examples")
    pred_dir = os.path.join(DATA, "panoptic", "pred_down4")
    for name in sorted(os.listdir(gt_dir)):
        ids = read_panoptic_png(os.path.join(gt_dir, name))
        assert np.array_equal(E.downscale_panoptic(ids, 4), read_panoptic_png(os.path.join(pred_dir, name)))
        assert np.array_equal(E.downscale_panoptic(ids, 1), ids)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 30), st.integers(1, 30), st.sampled_from([1, 1.5, 2, 3, 4.5, 40]))
def test_downscale_panoptic_is_constant_on_cells(h, w, f):
    ids = np.arange(h * w, dtype=np.int64).reshape(h, w)
    out = E.downscale_panoptic(ids, f)
    assert out.shape == (h, w)
    for y in range(h):
        for x in range(w):
            sy, sx = min(math.floor(math.floor(y / f) * f), h - 1), min(math.floor(math.floor(x / f) * f), w - 1)
            assert out[y, x] == ids[sy, sx]
    rgb = np.stack([ids % 256, ids // 256 % 256, ids // 65536], axis=-1).astype(np.uint8)
    assert np.array_equal(E.downscale_panoptic(rgb, f)[..., 0], (out % 256).astype(np.uint8))


def test_downscale_panoptic_bad_factor():
    with pytest.raises(ValueError, match="factor must be >= 1"):
        E.downscale_panoptic(np.zeros((4, 4)), 0.5)


@pytest.mark.parametrize("r", [2, 15])
def test_scale_error_on_the_box_equals_whole_image_morphology(r):
    # the generator works on the object's box; OpenCV on the whole image is the definition
    disc = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * r + 1, 2 * r + 1))
    for a, h, w in COCO[::10] + RLE:
        g = _ann_mask(a, h, w)
        assert np.array_equal(E.scale_error(a["segmentation"], h, w, r), cv2.dilate(g, disc))
        assert np.array_equal(E.scale_error(a["segmentation"], h, w, -r), cv2.erode(g, disc))
