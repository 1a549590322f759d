"""The oracle (boundary_api.masks.reference) against the definition written out by hand."""
import numpy as np
import pytest

from boundary_api.masks import reference
from boundary_api.masks.boundary import dilation_pixels

# ratios from 0 are swept on purpose: the warning that 0 gives d = 1, not an empty
# boundary, is asserted by tests/masks/test_zero_ratio.py
pytestmark = pytest.mark.filterwarnings("ignore:dilation_ratio 0 gives the thinnest boundary")


def boundary_by_definition(mask, d):
    """M AND NOT erode(M) with a (2d+1)^2 square, outside the image = background."""
    m = (np.asarray(mask) != 0)
    h, w = m.shape
    padded = np.zeros((h + 2 * d, w + 2 * d), bool)
    padded[d:d + h, d:d + w] = m
    eroded = np.ones((h, w), bool)
    for dy in range(2 * d + 1):
        for dx in range(2 * d + 1):
            eroded &= padded[dy:dy + h, dx:dx + w]
    return (m & ~eroded).astype(np.uint8)


@pytest.mark.parametrize("seed", range(40))
def test_oracle_matches_definition(seed):
    rng = np.random.default_rng(seed)
    h, w = rng.integers(1, 30, size=2)
    mask = (rng.random((h, w)) < rng.uniform(0.3, 1.0)).astype(np.uint8)
    if seed % 5 == 0:
        mask[:] = 1
    ratio = [0.0, 0.02, 0.1, 0.3][seed % 4]
    d = dilation_pixels(int(h), int(w), ratio)
    np.testing.assert_array_equal(reference.mask_to_boundary(mask, ratio), boundary_by_definition(mask, d))


def test_oracle_boundary_iou():
    g = np.zeros((10, 10), np.uint8)
    g[2:8, 2:8] = 1
    assert reference.boundary_iou(g, g, 0.0) == 1.0
    assert reference.boundary_iou(g, np.zeros_like(g), 0.0) == 0.0
    assert reference.boundary_iou(np.zeros_like(g), np.zeros_like(g), 0.0) == 0.0
