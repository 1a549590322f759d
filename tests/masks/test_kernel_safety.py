"""The boundary kernel under hostile parameters: bounded memory (strips), any
dilation, absurd image sizes; and ``boundary_iou``'s input forms and orientation."""
import subprocess
import sys
import textwrap

import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api import boundary_iou, dilation_pixels, mask_to_boundary, rle_to_boundary
from boundary_api.masks import _boundary, _idmaps, _rle, reference
from boundary_api.semantic import _kernels as semantic_kernels
from boundary_api.masks.boundary import MAX_PIXELS, check_rle_strings
from test_boundary import make_mask, masks, ratios

# ratios from 0 are swept on purpose: the warning that 0 gives d = 1, not an empty
# boundary, is asserted by tests/masks/test_zero_ratio.py
pytestmark = pytest.mark.filterwarnings("ignore:dilation_ratio 0 gives the thinnest boundary")


def encode(m):
    return mask_utils.encode(np.asfortranarray(np.asarray(m, np.uint8)))


@pytest.fixture
def budget():
    """Set the kernel's bitset budget per tile (64-bit words); restored afterwards."""
    old = _boundary._set_boundary_budget(1 << 20)
    _boundary._set_boundary_budget(old)
    yield _boundary._set_boundary_budget
    _boundary._set_boundary_budget(old)


# --------------------------------------------------------------- strips
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(mask=masks, ratio=ratios, words=st.sampled_from([1, 2, 3, 5, 8, 17, 64, 300, 1000, 5000]))
def test_tiny_tiles_give_the_oracle(budget, mask, ratio, words):
    """Every way the kernel cuts a box to stay within its budget (column chunks
    with a margin of d, the streaming pass, its row strips) gives exactly the
    oracle's boundary."""
    budget(words)
    expected = encode(reference.mask_to_boundary(mask, ratio))["counts"]
    d = min(dilation_pixels(*mask.shape, ratio), max(mask.shape))
    got, peak = _boundary._boundary_probe(encode(mask)["counts"], mask.shape[0], mask.shape[1], d)
    assert got == expected
    np.testing.assert_array_equal(mask_to_boundary(mask, ratio), reference.mask_to_boundary(mask, ratio))
    assert rle_to_boundary(encode(mask), ratio)["counts"] == expected


@pytest.mark.parametrize("shape", [(700, 90), (90, 700), (40, 2000), (2000, 40), (257, 255)])
@pytest.mark.parametrize("kind", ["random", "blob", "holes", "full", "rect"])
@pytest.mark.parametrize("ratio", [0.002, 0.02, 0.05])
def test_many_strips_on_larger_masks(budget, shape, kind, ratio):
    mask = make_mask(kind, *shape, seed=shape[0] * 7 + shape[1], density=0.5)
    expected = encode(reference.mask_to_boundary(mask, ratio))["counts"]
    d = dilation_pixels(*shape, ratio)
    # 1, 4, 40: streaming (in row strips when tall); 1000, 3000: column chunks; 1 << 20: whole box
    for words in (1, 4, 40, 1000, 3000, 1 << 20):
        budget(words)
        got, _ = _boundary._boundary_probe(encode(mask)["counts"], *shape, d)
        assert got == expected, words


def full_frame_counts(n, d):
    """Uncompressed counts of the boundary of a full n x n mask: the pixels
    within d of the border (column-major runs, starting with zeros)."""
    counts = [0, d * n]                       # the first d columns
    for _ in range(n - 2 * d):
        counts[-1] += d
        counts += [n - 2 * d, d]              # top d rows ... bottom d rows
    counts[-1] += d * n                       # the last d columns
    return counts


def test_large_box_needs_modest_scratch(budget):
    """A 20000 x 20000 full mask: the whole-box bitsets would take 3 * 20000 *
    313 words (150 MB) per thread; the strips stay within the budget."""
    n = 20000
    rle = mask_utils.frPyObjects({"size": [n, n], "counts": [0, n * n]}, n, n)
    d = dilation_pixels(n, n)
    want = mask_utils.frPyObjects({"size": [n, n], "counts": full_frame_counts(n, d)}, n, n)["counts"]
    got, peak = _boundary._boundary_probe(rle["counts"], n, n, d)
    assert got == want
    assert peak < 16 * 2**20               # 8 MiB of bitsets, plus the strips' runs
    budget(1 << 12)                         # 32 KiB of bitsets: many more strips, same answer
    got, peak = _boundary._boundary_probe(rle["counts"], n, n, d)
    assert got == want
    assert peak < 8 * 2**20
    assert rle_to_boundary(rle)["counts"] == want


def test_full_frame_rles_on_a_huge_image_in_bounded_memory(tmp_path):
    """The issue's memory bomb: full-frame RLEs of a 46000 x 46000 image (a few
    bytes each) took 0.8 GB of scratch each per thread; measured in a fresh
    process, the peak RSS growth now stays far below that."""
    script = textwrap.dedent("""
        import resource, sys
        import pycocotools.mask as mask_utils
        from boundary_api import rle_to_boundary
        n = 46000
        rle = mask_utils.frPyObjects({"size": [n, n], "counts": [0, n * n]}, n, n)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        out = rle_to_boundary([rle] * 4, num_threads=2)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        assert len({o["counts"] for o in out}) == 1
        print((after - before) // 1024)
    """)
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=str(tmp_path),
                         timeout=300)
    assert res.returncode == 0, res.stderr
    growth_mb = int(res.stdout.strip())
    assert growth_mb < 200, growth_mb


# ------------------------------------------------------------ any d
def test_huge_dilation_gives_the_whole_mask():
    m = np.ones((4000, 2), np.uint8)
    # d overflowed the kernel's offsets (2d+1 past int64) and crashed
    np.testing.assert_array_equal(mask_to_boundary(m, 2305842720983371.5), m)
    assert rle_to_boundary(encode(m), 2305842720983371.5)["counts"] == encode(m)["counts"]
    np.testing.assert_array_equal(mask_to_boundary(m, 1e300), m)
    np.testing.assert_array_equal(reference.mask_to_boundary(m, 2305842720983371.5), m)
    rng = np.random.default_rng(0)
    for _ in range(20):
        r = make_mask("blob", 40, 30, int(rng.integers(1 << 30)), 0.5)
        for d in (15, 16, 20, 40, 2**31, 2**62, 2**63 - 1, 2**80):
            np.testing.assert_array_equal(_boundary.boundary_dense(r, d), r)
            got, _ = _boundary._boundary_probe(encode(r)["counts"], 40, 30, d)
            assert got == encode(r)["counts"]
        ids = r.astype(np.uint32)
        bmap, _ = _idmaps.pan_segment_boundaries(np.ascontiguousarray(ids), np.array([1], np.uint32), 2**80)
        np.testing.assert_array_equal(bmap, ids)


def test_d_at_half_the_box_edge_equals_the_oracle():
    """d around half the box's height/width: the whole-mask shortcut and the
    general kernel meet exactly there."""
    for h, w in [(9, 9), (10, 10), (9, 30), (30, 9), (1, 50), (50, 1), (64, 65), (129, 4)]:
        mask = np.ones((h, w), np.uint8)
        mask[0, 0] = 0
        for d in range(0, max(h, w) + 2):
            erode = reference.cv2.erode(
                reference.cv2.copyMakeBorder(mask, 1, 1, 1, 1, reference.cv2.BORDER_CONSTANT, value=0),
                np.ones((3, 3), np.uint8), iterations=d)[1:h + 1, 1:w + 1] if d else mask
            np.testing.assert_array_equal(_boundary.boundary_dense(mask, d), mask - erode, err_msg=f"{h}x{w} d={d}")


def test_dilation_that_is_not_a_finite_number_is_refused():
    with pytest.raises(ValueError, match="dilation_ratio .* too large"):
        dilation_pixels(4000, 2, 1e308)
    with pytest.raises(ValueError, match="dilation_ratio"):
        mask_to_boundary(np.ones((4, 4)), 1e308)
    with pytest.raises(ValueError, match="dilation_ratio"):
        rle_to_boundary(encode(np.ones((4, 4))), 1e308)
    with pytest.raises(ValueError, match="d must be >= 0"):
        _boundary.boundary_dense(np.ones((3, 3), np.uint8), -1)
    with pytest.raises(ValueError, match="d must be >= 0"):
        _boundary.boundary_strings(_rle.StringTable([b"03"]), np.array([3], np.int64), np.array([1], np.int64),
                               np.array([-2], np.int64), 0, 1)


# ----------------------------------------------------------- sizes
@pytest.mark.parametrize("size", [[2**32, 2**32], [2**31, 1], [1, 2**31], [2**21, 2**21], [2**40, 1]])
def test_absurd_image_sizes_are_refused(size):
    # 2**32 x 2**32 used to wrap to 0 pixels and pass with empty counts
    with pytest.raises(ValueError, match="too large"):
        rle_to_boundary({"size": size, "counts": ""})
    with pytest.raises(ValueError, match=r"rle\[1\]: .*too large"):
        rle_to_boundary([encode(np.ones((2, 2))), {"size": size, "counts": ""}])
    with pytest.raises(ValueError, match="too large"):
        dilation_pixels(*size)
    h, w = np.array([size[0]], np.int64), np.array([size[1]], np.int64)
    with pytest.raises(ValueError, match="item 0: image size .* out of range"):
        check_rle_strings([""], h, w, lambda i: f"item {i}")


def test_largest_sizes_still_work():
    n = 2**31 - 1
    full = mask_utils.frPyObjects({"size": [1, n], "counts": [0, n]}, 1, n)
    assert rle_to_boundary(full)["counts"] == full["counts"]      # one row: all boundary
    side = 2**20
    assert side * side == MAX_PIXELS
    # runs are at most 2**32 - 1 long: zero-length runs of ones split the zeros
    counts, left = [], side * side
    while left:
        counts += [min(left, 2**32 - 1), 0]
        left -= counts[-2]
    empty = mask_utils.frPyObjects({"size": [side, side], "counts": counts[:-1]}, side, side)
    assert rle_to_boundary(empty)["counts"] == empty["counts"]
    # and a run of ones that long (d >= half the box: the whole mask is its boundary)
    full = mask_utils.frPyObjects({"size": [side, side], "counts": [0] + counts[:-1]}, side, side)
    assert rle_to_boundary(full, 1.0)["counts"] == full["counts"]
    with pytest.raises(ValueError, match="does not cover"):
        rle_to_boundary({"size": [side, side], "counts": ""})


# ------------------------------------------------------ boundary_iou
def test_boundary_iou_input_forms_and_orientation():
    gts = [make_mask(k, 30, 20, i, 0.5) for i, k in enumerate(["rect", "blob", "random"])]
    dts = [make_mask(k, 30, 20, i + 9, 0.5) for i, k in enumerate(["rect", "blob"])] + [gts[2]]
    want = np.array([[reference.boundary_iou(g, d) for d in dts] for g in gts])
    assert want[2, 2] == 1.0
    forms = [lambda ms: list(ms), lambda ms: tuple(ms), lambda ms: np.stack(ms),
             lambda ms: np.stack(ms).astype(bool), lambda ms: [encode(m) for m in ms],
             lambda ms: [encode(m) if i % 2 else m for i, m in enumerate(ms)]]
    for fg in forms:
        for fd in forms:
            got = boundary_iou(fg(gts), fd(dts))
            assert got.shape == (3, 3)   # (len(gt), len(dt)): rows are ground truths
            np.testing.assert_array_equal(got, want)
    # one side a single mask: still a matrix, a list of one on that side
    np.testing.assert_array_equal(boundary_iou(np.stack(gts), dts[0]), want[:, :1])
    np.testing.assert_array_equal(boundary_iou(gts[1], np.stack(dts)), want[1:2, :])
    assert boundary_iou(gts[2], dts[2]) == 1.0
    assert boundary_iou(np.zeros((0, 30, 20)), np.stack(dts)).shape == (0, 3)
    with pytest.raises(ValueError, match=r"\(H, W\) or \(N, H, W\)"):
        boundary_iou(np.zeros((1, 2, 30, 20)), dts)
    with pytest.raises(TypeError, match="RLE dict"):
        boundary_iou("mask", dts)
    assert "rows are ground truths" in boundary_iou.__doc__



def test_huge_dilation_in_the_measures_and_semantic_kernels():
    """The kernels merged in later (measures, semantic label maps) share the
    boundary kernel: a d past the image is the same as d = max(h, w), never a crash."""
    from boundary_api.masks import measures
    g = [make_mask("blob", 30, 40, s, 0.5) for s in range(3)]
    p = [make_mask("rect", 30, 40, s + 5, 0.5) for s in range(2)]
    for fn in (measures.boundary_iou, measures.trimap_iou, measures.f_measure):
        np.testing.assert_array_equal(fn(g, p, 2305842720983371.5), fn(g, p, 1.0), err_msg=fn.__name__)
    gt = np.ascontiguousarray(make_mask("blob", 30, 40, 1, 0.5).astype(np.uint32) + 1)
    pred = np.ascontiguousarray(make_mask("blob", 30, 40, 2, 0.5).astype(np.uint32))
    out = []
    for d in (40, 2**62, 2**80):
        conf, bstat = np.zeros((3, 4), np.int64), np.zeros((3, 3), np.int64)
        assert semantic_kernels.sem_accumulate(gt, pred, 3, 255, d, conf, bstat) == (0, -1)
        out.append((conf, bstat))
    for conf, bstat in out[1:]:
        np.testing.assert_array_equal(conf, out[0][0])
        np.testing.assert_array_equal(bstat, out[0][1])
