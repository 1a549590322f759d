"""The Cython boundary kernels against the NumPy/OpenCV oracle, pixel for pixel."""
import math

import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api import boundary_iou, dilation_pixels, mask_to_boundary, rle_to_boundary
from boundary_api.masks import reference

# ratios from 0 are swept on purpose: the warning that 0 gives d = 1, not an empty
# boundary, is asserted by tests/masks/test_zero_ratio.py
pytestmark = pytest.mark.filterwarnings("ignore:dilation_ratio 0 gives the thinnest boundary")

RATIOS = [0.0, 1e-4, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 1.0, 3.0]


def make_mask(kind, h, w, seed, density):
    rng = np.random.default_rng(seed)
    m = np.zeros((h, w), np.uint8)
    if kind == "empty":
        pass
    elif kind == "full":
        m[:] = 1
    elif kind == "random":
        m = (rng.random((h, w)) < density).astype(np.uint8)
    elif kind == "rect":  # may touch any border
        y0, y1 = sorted(rng.integers(0, h + 1, size=2))
        x0, x1 = sorted(rng.integers(0, w + 1, size=2))
        m[y0:y1, x0:x1] = 1
    elif kind == "hline":
        m[rng.integers(0, h), :] = 1
    elif kind == "vline":
        m[:, rng.integers(0, w)] = 1
    elif kind == "holes":
        m[:] = 1
        m[rng.random((h, w)) < density * 0.2] = 0
    elif kind == "blob":
        small = (rng.random((max(1, h // 8), max(1, w // 8))) < density).astype(np.uint8)
        big = np.kron(small, np.ones((8, 8), np.uint8))[:h, :w]
        m[: big.shape[0], : big.shape[1]] = big
    elif kind == "border":
        side = rng.integers(0, 4)
        t = int(rng.integers(1, max(2, min(h, w))))
        if side == 0:
            m[:t, :] = 1
        elif side == 1:
            m[-t:, :] = 1
        elif side == 2:
            m[:, :t] = 1
        else:
            m[:, -t:] = 1
    return m


masks = st.builds(
    make_mask,
    kind=st.sampled_from(["empty", "full", "random", "rect", "hline", "vline", "holes", "blob", "border"]),
    h=st.one_of(st.integers(1, 12), st.integers(1, 150)),
    w=st.one_of(st.integers(1, 12), st.integers(1, 150)),
    seed=st.integers(0, 2**32 - 1),
    density=st.floats(0.05, 0.95),
)
ratios = st.one_of(st.sampled_from(RATIOS), st.floats(0, 2, allow_nan=False))


def encode(m):
    return mask_utils.encode(np.asfortranarray(m.astype(np.uint8)))


@pytest.mark.slow
@settings(max_examples=2500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mask=masks, ratio=ratios)
def test_kernels_equal_oracle(mask, ratio):
    expected = reference.mask_to_boundary(mask, ratio)
    # dense path
    got = mask_to_boundary(mask, ratio)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, expected)
    # run-length path: same pixels and the very bytes pycocotools would write
    out = rle_to_boundary(encode(mask), ratio)
    assert out["size"] == list(mask.shape)
    assert out["counts"] == encode(expected)["counts"]


@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (7, 1), (1, 200), (200, 1), (2, 2), (64, 64), (65, 3), (130, 129)])
@pytest.mark.parametrize("fill", ["empty", "full", "random"])
@pytest.mark.parametrize("ratio", [0.0, 0.02, 0.5, 10.0])
def test_small_and_degenerate_shapes(shape, fill, ratio):
    mask = make_mask(fill, *shape, seed=sum(shape), density=0.6)
    expected = reference.mask_to_boundary(mask, ratio)
    np.testing.assert_array_equal(mask_to_boundary(mask, ratio), expected)
    np.testing.assert_array_equal(mask_utils.decode(rle_to_boundary(encode(mask), ratio)), expected)


def test_full_mask_boundary_is_a_frame_of_width_d():
    m = np.ones((50, 40), np.uint8)
    d = dilation_pixels(50, 40, 0.05)
    b = mask_to_boundary(m, 0.05)
    assert b[d:-d, d:-d].sum() == 0
    assert b.sum() == m.size - (50 - 2 * d) * (40 - 2 * d)


@pytest.mark.parametrize("h, w, ratio, d", [
    (3, 4, 0.5, 2),          # 2.5 -> 2 (half to even)
    (6, 8, 0.35, 4),         # 3.5 -> 4
    (5, 12, 1.5 / 13, 2),    # 1.5 -> 2
    (480, 640, 0.02, 16),
    (1, 1, 0.02, 1),         # never below 1
    (1, 1, 0.0, 1),
])
def test_dilation_pixels_rounding(h, w, ratio, d):
    assert dilation_pixels(h, w, ratio) == d
    # the reference's own expression
    assert max(1, int(round(ratio * np.sqrt(h ** 2 + w ** 2)))) == d


@pytest.mark.parametrize("h, w, ratio", [(3, 4, 0.5), (6, 8, 0.35), (5, 12, 1.5 / 13)])
def test_half_cases_pixelwise(h, w, ratio):
    for seed in range(20):
        mask = make_mask("random", h, w, seed, 0.8)
        expected = reference.mask_to_boundary(mask, ratio)
        np.testing.assert_array_equal(mask_to_boundary(mask, ratio), expected)
        np.testing.assert_array_equal(mask_utils.decode(rle_to_boundary(encode(mask), ratio)), expected)


def test_rle_list_in_parallel_equals_one_by_one():
    rng = np.random.default_rng(3)
    rles, expected = [], []
    for i in range(300):
        h, w = rng.integers(1, 120, size=2)
        m = make_mask(["random", "rect", "blob", "full"][i % 4], h, w, i, 0.5)
        rles.append(encode(m))
        expected.append(encode(reference.mask_to_boundary(m, 0.05))["counts"])
    for threads in (1, 2, 3):
        out = rle_to_boundary(rles, 0.05, num_threads=threads)
        assert [o["counts"] for o in out] == expected


def test_rle_input_forms():
    m = make_mask("rect", 20, 30, 1, 0.5)
    compressed = encode(m)
    expected = rle_to_boundary(compressed)
    as_str = {"size": compressed["size"], "counts": compressed["counts"].decode()}
    assert rle_to_boundary(as_str) == expected
    # uncompressed counts (column-major runs starting with zeros)
    flat = m.flatten(order="F")
    runs, cur, n = [], 0, 0
    for v in flat:
        if v != cur:
            runs.append(n)
            cur, n = v, 0
        n += 1
    runs.append(n)
    assert rle_to_boundary({"size": [20, 30], "counts": runs}) == expected


def test_boundary_iou_against_oracle():
    rng = np.random.default_rng(0)
    gts = [make_mask(k, 40, 50, i, 0.5) for i, k in enumerate(["rect", "blob", "random", "empty"])]
    dts = [make_mask(k, 40, 50, i + 10, 0.5) for i, k in enumerate(["rect", "blob", "full"])]
    dts.append(gts[0])
    mat = boundary_iou(gts, dts, 0.05)
    assert mat.shape == (4, 4)
    for i, g in enumerate(gts):
        for j, d in enumerate(dts):
            assert mat[i, j] == pytest.approx(reference.boundary_iou(g, d, 0.05), abs=1e-15)
    assert boundary_iou(gts[0], dts[3], 0.05) == 1.0
    assert isinstance(boundary_iou(encode(gts[1]), encode(dts[1]), 0.05), float)
    del rng


@pytest.mark.parametrize("bad", [-0.01, float("nan"), float("inf"), -math.inf])
def test_bad_ratio_is_rejected(bad):
    m = np.ones((4, 4), np.uint8)
    for call in (lambda: mask_to_boundary(m, bad), lambda: rle_to_boundary(encode(m), bad),
                 lambda: dilation_pixels(4, 4, bad), lambda: boundary_iou(m, m, bad)):
        with pytest.raises(ValueError, match="dilation_ratio"):
            call()
    with pytest.raises(TypeError, match="dilation_ratio"):
        mask_to_boundary(m, "0.02")


def test_bad_masks_are_rejected():
    with pytest.raises(ValueError, match="2-D"):
        mask_to_boundary(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="at least one pixel"):
        mask_to_boundary(np.ones((0, 4)))
    with pytest.raises(ValueError, match="does not cover"):
        rle_to_boundary({"size": [10, 10], "counts": encode(np.ones((5, 5), np.uint8))["counts"]})
    with pytest.raises(ValueError, match="not a valid compressed RLE"):
        rle_to_boundary({"size": [10, 10], "counts": "\x01\x02"})
    with pytest.raises(TypeError, match="RLE dict"):
        rle_to_boundary([{"counts": "00"}])
    with pytest.raises(ValueError, match="height"):
        dilation_pixels(0, 5)
    with pytest.raises(ValueError, match="same size"):
        boundary_iou(np.ones((3, 3)), np.ones((4, 4)))
