"""polygons_to_rle: byte for byte what pycocotools writes for COCO polygons
(``merge(frPyObjects(polygons, h, w))['counts']``, i.e. ``COCO.annToRLE``)."""
import json
import os

import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api.masks import _polygon
from boundary_api.masks.polygons import polygons_to_rle

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")


def reference(seg, h, w):
    return mask_utils.merge(mask_utils.frPyObjects(seg, h, w))["counts"]


def check_batch(segs, hs, ws, threads=(1, 2)):
    expected = [reference(s, h, w) for s, h, w in zip(segs, hs, ws)]
    for t in threads:
        got = polygons_to_rle(segs, hs, ws, num_threads=t)
        for i, (g, e) in enumerate(zip(got, expected)):
            assert g == e, (i, segs[i], hs[i], ws[i], g, e)
        assert len(got) == len(expected)


# --------------------------------------------------------------------------
# generated polygons
# --------------------------------------------------------------------------

@st.composite
def image_sizes(draw):
    kind = draw(st.sampled_from(["small", "small", "small", "row", "column", "large"]))
    if kind == "row":
        return 1, draw(st.integers(1, 80))
    if kind == "column":
        return draw(st.integers(1, 80)), 1
    if kind == "large":
        return draw(st.integers(200, 1500)), draw(st.integers(200, 1500))
    return draw(st.integers(1, 40)), draw(st.integers(1, 40))


@st.composite
def coordinate(draw, size):
    """One coordinate for an axis of ``size`` pixels: inside, on the border,
    outside, on the 1/10 grid (where 5 * c + .5 is a rounding tie), tiny, huge."""
    kind = draw(st.sampled_from(["float", "float", "grid", "grid", "int", "border", "tiny", "far", "huge"]))
    if kind == "float":
        return draw(st.floats(-0.5 * size - 2, 1.5 * size + 2, allow_nan=False))
    if kind == "grid":
        return draw(st.integers(-10 * size - 20, 20 * size + 20)) / 10
    if kind == "int":
        return float(draw(st.integers(-3, size + 3)))
    if kind == "border":
        return draw(st.sampled_from([0.0, -0.5, 0.5, size - 0.5, float(size), size + 0.5, -0.1, -0.3]))
    if kind == "tiny":
        return draw(st.sampled_from([1e-300, -1e-300, 5e-324, -5e-324, 1e-9, -1e-9, 0.0, -0.0]))
    if kind == "far":
        return draw(st.floats(-4.0 * size - 10, 5.0 * size + 10, allow_nan=False))
    return draw(st.floats(-3e4, 3e4, allow_nan=False))


@st.composite
def polygon(draw, h, w):
    k = draw(st.sampled_from([3, 3, 4, 5, 8]))
    pts = [(draw(coordinate(w)), draw(coordinate(h))) for _ in range(k)]
    shape = draw(st.sampled_from(["free", "free", "repeat", "collinear", "same"]))
    if shape == "repeat":  # repeated vertices (zero-length edges)
        i = draw(st.integers(0, k - 1))
        pts.insert(i, pts[i])
        if draw(st.booleans()):
            pts.insert(i, pts[i])
    elif shape == "collinear":  # points on one line, fractional steps
        (x0, y0), (x1, y1) = pts[0], pts[1]
        ts = [draw(st.integers(-4, 8)) / 4 for _ in range(k)]
        pts = [(x0 + t * (x1 - x0), y0 + t * (y1 - y0)) for t in ts]
    elif shape == "same":  # every point equal
        pts = [pts[0]] * k
    return [c for p in pts for c in p]


@st.composite
def annotation(draw):
    h, w = draw(image_sizes())
    n = draw(st.sampled_from([1, 1, 2, 3, 6]))
    return [draw(polygon(h, w)) for _ in range(n)], h, w


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.lists(annotation(), min_size=1, max_size=3))
def test_matches_pycocotools_generated(batch):
    segs = [a[0] for a in batch]
    check_batch(segs, [a[1] for a in batch], [a[2] for a in batch])


# --------------------------------------------------------------------------
# chosen cases
# --------------------------------------------------------------------------

CASES = [
    ([[1, 1, 5, 1, 5, 5]], 10, 10),                              # a triangle
    ([[2, 2, 2, 2, 2, 2]], 10, 10),                              # all points equal
    ([[0, 0, 0, 0, 0, 0]], 10, 10),
    ([[1, 1, 3, 3, 7, 7, 2, 2]], 10, 10),                        # collinear
    ([[1, 1, 9, 1, 4, 1]], 10, 10),                              # collinear, horizontal
    ([[3, 1, 3, 9, 3, 4]], 10, 10),                              # collinear, vertical
    ([[-1.3, 1, -1.3, 1, -1.3, 7, -1.3, 7, 3, 3]], 10, 10),      # repeats left of the image
    ([[-5, -5, 15, -5, 15, 15, -5, 15]], 10, 10),                # covers the image
    ([[0, 0, 10, 0, 10, 10, 0, 10]], 10, 10),                    # the image's outline
    ([[-0.5, -0.5, 9.5, -0.5, 9.5, 9.5, -0.5, 9.5]], 10, 10),    # the pixel centres' outline
    ([[-20, 1, -12, 3, -15, 8]], 10, 10),                        # left of the image
    ([[20, 1, 32, 3, 25, 8]], 10, 10),                           # right of it
    ([[1, -20, 3, -12, 8, -15]], 10, 10),                        # above
    ([[1, 20, 3, 32, 8, 25]], 10, 10),                           # below
    ([[1, -20, 3, 32, 8, -15]], 10, 10),                         # through, tall
    ([[0.1, 0.3, 4.7, 0.1, 2.3, 6.9]], 10, 10),                  # rounding ties of 5 * c + .5
    ([[-0.1, -0.3, -4.7, 0.1, -2.3, 6.9]], 10, 10),
    ([[1, 1, 5, 1, 5, 5], [2, 2, 8, 2, 8, 8], [0, 6, 3, 9, 0, 9]], 10, 10),  # overlapping polygons
    ([[1, 1, 5, 1, 5, 5], [1, 1, 5, 1, 5, 5]], 10, 10),          # the same polygon twice
    ([[0, 0, 3, 0, 3, 1], [5, 0, 9, 0, 9, 1]], 1, 10),           # a 1 x N image
    ([[0, 0, 1, 0, 1, 7], [0, 8, 1, 9, 0, 9]], 10, 1),           # an N x 1 image
    ([[-3e4, -3e4, 3e4, -2e4, 1e4, 3e4]], 10, 10),               # huge, around the image
    ([[5, -3e4, 5.5, 3e4, 6, -3e4]], 40, 30),                    # huge, thin and tall
    ([[-3e4, 5, 3e4, 5.5, -3e4, 6]], 40, 30),                    # huge, thin and wide
    ([[10.5, 20.25, 900.75, 33.5, 700, 1200.5, 5, 1000]], 1300, 1000),  # a large image
    ([[1e-300, -1e-300, 5, 5e-324, 5, 5]], 10, 10),              # tiny
]


@pytest.mark.parametrize("seg,h,w", CASES)
def test_matches_pycocotools_cases(seg, h, w):
    check_batch([seg], [h], [w], threads=(1,))


def test_all_cases_in_one_batch():
    check_batch([c[0] for c in CASES], [c[1] for c in CASES], [c[2] for c in CASES], threads=(1, 2, 3))


def test_coco_ground_truth_polygons():
    """Every polygon annotation of the shipped COCO ground truth."""
    with open(os.path.join(DATA, "coco", "instances_val2014_100.json")) as f:
        gt = json.load(f)
    imgs = {img["id"]: img for img in gt["images"]}
    anns = [a for a in gt["annotations"] if isinstance(a["segmentation"], list)]
    assert len(anns) > 500
    segs = [a["segmentation"] for a in anns]
    hs = [imgs[a["image_id"]]["height"] for a in anns]
    ws = [imgs[a["image_id"]]["width"] for a in anns]
    check_batch(segs, hs, ws, threads=(1, 2))


def test_thread_count_independence():
    rng = np.random.default_rng(7)
    segs, hs, ws = [], [], []
    for _ in range(3000):  # enough for several ranges per thread
        h, w = int(rng.integers(1, 300)), int(rng.integers(1, 300))
        segs.append([rng.uniform(-0.2 * w, 1.2 * w, 2 * int(rng.integers(3, 12))).tolist()
                     for _ in range(int(rng.integers(1, 4)))])
        hs.append(h)
        ws.append(w)
    one = polygons_to_rle(segs, hs, ws, num_threads=1)
    for t in (2, 3, 5):
        assert polygons_to_rle(segs, hs, ws, num_threads=t) == one
    assert one[:200] == [reference(s, h, w) for s, h, w in zip(segs[:200], hs[:200], ws[:200])]


def test_huge_coordinates_do_not_walk_the_perimeter():
    """The kernel's work does not grow with the perimeter: a square of side
    2e8 around a small image is the whole image, as a smaller square is for
    pycocotools (which would need gigabytes for the large one)."""
    big = [[-1e8, -1e8, 1e8, -1e8, 1e8, 1e8, -1e8, 1e8]]
    small = [[-100, -100, 100, -100, 100, 100, -100, 100]]
    got = polygons_to_rle([big], [30], [20])[0]
    assert got == reference(small, 30, 20)
    assert mask_utils.decode({"size": [30, 20], "counts": got}).all()


def test_empty_batch():
    assert polygons_to_rle([], [], []) == []


def test_tuples_and_integer_coordinates():
    """Coordinates are converted as float() converts them (pycocotools:
    np.array(polygon, dtype=np.double)); tuples are read like lists."""
    seg = [[1, 1, 5, 1, 5, 5], [2, 7, 9, 8, 3, 9]]
    expected = reference(seg, 10, 10)
    assert polygons_to_rle([seg], [10], [10]) == [expected]
    assert polygons_to_rle((tuple(tuple(p) for p in seg),), (10,), (10,)) == [expected]
    assert polygons_to_rle([[[float(c) for c in p] for p in seg]], np.array([10]), np.array([10])) == [expected]


def test_empty_polygon_list_is_an_error():
    """pycocotools cannot convert an annotation without polygons either:
    frPyObjects([], h, w) raises IndexError (merge([]) of nothing would give
    an RLE of size 0x0 with empty counts, not an h x w mask).  We raise a
    ValueError naming the item."""
    with pytest.raises(IndexError):
        mask_utils.frPyObjects([], 10, 10)
    with pytest.raises(ValueError, match="item 1 is an empty list of polygons"):
        polygons_to_rle([[[1, 1, 5, 1, 5, 5]], []], [10, 10], [10, 10])


@pytest.mark.parametrize("segs,hs,ws,match", [
    ([[[1, 1, 5, 1, 5, 5]]], [10, 10], [10], "1 segmentations but 2 heights and 1 widths"),
    ([[[1, 1, 5, 1, 5, 5]]], [0], [10], "item 0 has an image size 0x10"),
    ([[[1, 1, 5, 1, 5, 5]], [[1, 1, 5, 1, 5]]], [10, 10], [10, 10], "item 1, polygon 0 has 5 coordinates"),
    ([[[1, 1, 5, 1, 5, 5], [1, 1, 5, 1]]], [10], [10], "item 0, polygon 1 has 4 coordinates"),
    ([[[1, 1, 5, float("nan"), 5, 5]]], [10], [10], "item 0, polygon 0 has a coordinate nan"),
    ([[[1, 1, 5, 1, float("inf"), 5]]], [10], [10], "item 0, polygon 0 has a coordinate inf"),
    ([[[1, 1, 5, 1, 5, 5]], [[1, 1, 5, 1, 5, 5], [1, 1, 3e8, 1, 5, 5]]], [10, 10], [10, 10],
     "item 1, polygon 1 has a coordinate 300000000.0"),
    ([[[1, 1, 5, 1, 5, "a"]]], [10], [10], "lists of polygons, each a list of numbers: item 0, polygon 0 has a coordinate that is not a number: .a."),
    ([[1, 1, 5, 1, 5, 5]], [10], [10], "item 0, polygon 0 is not a list of coordinates .got int."),
    ([[[1, 1, 5, 1, 5, 5]], {"counts": "", "size": [10, 10]}], [10, 10], [10, 10],
     "item 1 is not a list of polygons .got dict."),
])
def test_bad_input(segs, hs, ws, match):
    with pytest.raises(ValueError, match=match):
        polygons_to_rle(segs, hs, ws)


def test_kernel_refuses_inconsistent_arrays():
    """The kernel checks the structure it is given (so a columnar caller cannot
    make it read out of bounds) and the coordinates' range."""
    coords = np.array([1, 1, 5, 1, 5, 5, 2, 2, 8, 2, 8, 8], np.float64)
    poly_off = np.array([0, 6, 12], np.int64)
    ann_off = np.array([0, 1, 2], np.int64)
    h = np.array([10, 10], np.int64)
    w = np.array([10, 10], np.int64)
    buf, offs = _polygon.polygons_rle(coords, poly_off, ann_off, h, w, 0, 2)
    assert [buf[offs[i]:offs[i + 1]] for i in range(2)] == [
        reference([[1, 1, 5, 1, 5, 5]], 10, 10), reference([[2, 2, 8, 2, 8, 8]], 10, 10)]
    with pytest.raises(ValueError, match="outside the arrays"):
        _polygon.polygons_rle(coords, poly_off, ann_off, h, w, 0, 3)
    with pytest.raises(ValueError, match="item 1 has an image size 0x10"):
        _polygon.polygons_rle(coords, poly_off, ann_off, np.array([10, 0], np.int64), w, 0, 2)
    with pytest.raises(ValueError, match="item 1 has no polygons"):
        _polygon.polygons_rle(coords, poly_off, np.array([0, 2, 2], np.int64), h, w, 0, 2)
    with pytest.raises(ValueError, match="item 0 has no polygons or its polygon offsets are out of range"):
        _polygon.polygons_rle(coords, poly_off, np.array([0, 3, 3], np.int64), h, w, 0, 1)
    with pytest.raises(ValueError, match="item 1, polygon 0: offsets out of range"):
        _polygon.polygons_rle(coords, np.array([0, 6, 13], np.int64), ann_off, h, w, 0, 2)
    with pytest.raises(ValueError, match="item 0, polygon 0: offsets out of range"):
        _polygon.polygons_rle(coords, np.array([0, 4, 12], np.int64), ann_off, h, w, 0, 1)
    for bad in (np.nan, np.inf, 3e8):
        c = coords.copy()
        c[9] = bad
        with pytest.raises(ValueError, match="item 1, polygon 0 has a coordinate that is not finite or too large"):
            _polygon.polygons_rle(c, poly_off, ann_off, h, w, 0, 2)
