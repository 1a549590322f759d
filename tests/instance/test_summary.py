"""The summary gathers of ``instance/_summary`` (``summary_values``,
``summary_gather``) against NumPy's own selection: ``np.mean`` of what they
gather must be ``np.mean(s[s > -1])`` of lvis' / pycocotools' selection bit
for bit (the same elements in the same order), on random arrays with -1 and
NaN entries, up to 5,000 values per array (NumPy's pairwise sum changes its
blocking at 8 and 128 elements), laid out in memory every way a precision
array can be (C order, Fortran order, a maxDets entry of pycocotools' 5-D
array, reversed axes, values at odd byte offsets), on one thread or several,
the values copied as the array is read or read again."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boundary_api.instance import _summary


def _numpy_mean(sel):
    kept = sel[sel > -1]
    return -1 if len(kept) == 0 else np.mean(kept)


def _same(x, y):
    return type(x) is type(y) and (x == y or (x != x and y != y))


def _fill(rng, shape, minus_one, pattern):
    """Random values with -1 (at rate ``minus_one``), NaN, -0.5 (kept) and
    -1.5 (dropped); with ``pattern`` the -1 entries are in the same (k, a)
    places on every (t, r) plane, as accumulation leaves them, but for a few
    planes where some differ."""
    s = rng.random(shape) * rng.choice([1.0, 1e-300, 1e300, 3.7])
    if pattern:
        s[:, :, rng.random(shape[2:]) < minus_one] = -1.0
        for _ in range(int(rng.integers(0, 3))):
            t, r = rng.integers(0, shape[0]), rng.integers(0, shape[1])
            s[t, r][rng.random(shape[2:]) < 0.1] = rng.choice([-1.0, 0.25])
    else:
        s[rng.random(shape) < minus_one] = -1.0
    s[rng.random(shape) < 0.02] = np.nan
    s[rng.random(shape) < 0.02] = -0.5  # above -1: kept
    s[rng.random(shape) < 0.02] = -1.5  # below -1: dropped
    return s


def _laid_out(s, layout, rng):
    """``s`` (the same values) in another memory layout."""
    if layout == "C":
        return s
    if layout == "F":
        return np.asfortranarray(s)
    if layout == "maxDets entry":  # pycocotools' precision[..., m]
        big = rng.random(s.shape + (3,))
        big[..., 1] = s
        return big[..., 1]
    if layout == "reversed":
        return np.ascontiguousarray(s[::-1, :, ::-1, ::-1])[::-1, :, ::-1, ::-1]
    if layout == "odd offset":  # doubles not on 8-byte boundaries
        buf = np.zeros(s.size * 8 + 3, np.uint8)
        view = np.frombuffer(buf.data, np.float64, s.size, offset=3).reshape(s.shape)
        view[...] = s
        return view
    raise AssertionError(layout)


LAYOUTS = ["C", "F", "maxDets entry", "reversed", "odd offset"]


@st.composite
def _arrays(draw, wide=False):
    T = draw(st.integers(1, 5))
    R = draw(st.integers(1, 12))
    # wide: (k, a) planes past 64 values (the word-at-a-time read, with a tail)
    K = draw(st.integers(16, 80) if wide else st.integers(1, 20))
    A = draw(st.integers(1, 4))
    while T * R * K * A > 5000:
        R = max(1, R // 2)
        T = max(1, T // 2) if R == 1 else T
        K = max(1, K // 2) if R == 1 and T == 1 else K
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    s = _fill(rng, (T, R, K, A), draw(st.floats(0, 1)), draw(st.booleans()))
    return _laid_out(s, draw(st.sampled_from(LAYOUTS)), rng), rng


@settings(max_examples=200, deadline=None)
@given(_arrays())
def test_summary_values_is_numpys_selection(case):
    s, rng = case
    T, R, K, A = s.shape
    a = int(rng.integers(0, A))
    t_idx = np.sort(rng.choice(T, int(rng.integers(0, T + 1)), replace=False)).astype(np.int64)
    k_idx = rng.integers(0, K, int(rng.integers(0, 2 * K + 1))).astype(np.int64)  # any order, repeats
    out = np.empty(len(t_idx) * R * len(k_idx))
    n = _summary.summary_values(s, t_idx, k_idx, a, out)
    sel = s[t_idx][:, :, k_idx, a]
    assert out[:n].tobytes() == sel[sel > -1].tobytes()
    assert _same(-1 if n == 0 else np.mean(out[:n]), _numpy_mean(sel))


def _masks(s, sels):
    T, R, K, A = s.shape
    t_mask = np.zeros(T, np.uint32)
    k_mask = np.zeros(K, np.uint32)
    a_mask = np.zeros(A, np.uint32)
    for b, (t_idx, k_idx, a) in enumerate(sels):
        t_mask[t_idx] |= np.uint32(1 << b)
        k_mask[k_idx] |= np.uint32(1 << b)
        a_mask[a] |= np.uint32(1 << b)
    return t_mask, k_mask, a_mask


def _assert_gathers_numpys_selections(s, sels):
    out, offset = _summary.summary_gather(s, *_masks(s, sels), len(sels))
    # runs of planes side by side (the split forced), the values copied by the
    # scan or read again by the write (either forced): the same arrays
    for threads, reread in [(1, 0), (2, 0), (5, 1 << 40), (2, 1 << 40)]:
        got, got_offset = _summary.summary_gather(s, *_masks(s, sels), len(sels), threads, _min_parallel=1,
                                                  _max_reread=reread)
        assert got.tobytes() == out.tobytes() and got_offset.tobytes() == offset.tobytes()
    assert out.dtype == np.float64 and out.flags.c_contiguous
    assert offset.dtype == np.int64 and len(offset) == len(sels) + 1 and offset[0] == 0
    assert len(out) == offset[-1]  # exactly the values taken
    for b, (t_idx, k_idx, a) in enumerate(sels):
        sel = s[t_idx][:, :, k_idx, a]
        got = out[offset[b]:offset[b + 1]]
        assert got.tobytes() == sel[sel > -1].tobytes()
        assert _same(-1 if len(got) == 0 else np.mean(got), _numpy_mean(sel))


def _random_selections(s, rng, n):
    T, R, K, A = s.shape
    return [(np.flatnonzero(rng.random(T) < 0.6), np.flatnonzero(rng.random(K) < 0.6), int(rng.integers(0, A)))
            for _ in range(n)]


@settings(max_examples=200, deadline=None)
@given(_arrays())
def test_summary_gather_is_numpys_selections(case):
    s, rng = case
    _assert_gathers_numpys_selections(s, _random_selections(s, rng, int(rng.integers(1, 12))))


@settings(max_examples=100, deadline=None)
@given(_arrays(wide=True))
def test_summary_gather_of_wide_planes_is_numpys_selections(case):
    s, rng = case
    _assert_gathers_numpys_selections(s, _random_selections(s, rng, int(rng.integers(1, 33))))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_summary_gather_at_lvis_shape(layout):
    # lvis' nine AP lines on a precision array of its shape, with its -1 pattern
    rng = np.random.default_rng(7)
    s = _laid_out(_fill(rng, (10, 101, 150, 4), 0.85, pattern=True), layout, rng)
    every_t, every_k = np.arange(10), np.arange(150)
    groups = np.array_split(np.sort(rng.permutation(150)[:120]), 3)
    sels = ([(every_t, every_k, 0), ([0], every_k, 0), ([5], every_k, 0)]
            + [(every_t, every_k, a) for a in (1, 2, 3)] + [(every_t, g, 0) for g in groups])
    _assert_gathers_numpys_selections(s, sels)


def test_summary_gather_of_nothing():
    rng = np.random.default_rng(1)
    s = _fill(rng, (3, 4, 5, 2), 0.5, pattern=False)
    # no selection, selections that take no element or only -1 and NaN
    out, offset = _summary.summary_gather(s, *_masks(s, []), 0)
    assert len(out) == 0 and offset.tolist() == [0]
    _assert_gathers_numpys_selections(s, [([], np.arange(5), 0), ([1], [], 1)])
    s[...] = -1
    s[0, 0, 0, 0] = np.nan
    _assert_gathers_numpys_selections(s, [(np.arange(3), np.arange(5), 0), ([2], [4], 1)])
    for shape in [(0, 4, 5, 2), (3, 0, 5, 2), (3, 4, 0, 2), (3, 4, 5, 0)]:
        empty = np.zeros(shape)
        out, offset = _summary.summary_gather(empty, np.ones(shape[0], np.uint32), np.ones(shape[2], np.uint32),
                                              np.ones(shape[3], np.uint32), 1)
        assert len(out) == 0 and offset.tolist() == [0, 0]


def test_summary_gather_refuses_masks_unlike_the_array():
    s = np.zeros((3, 4, 5, 2))
    ones = [np.ones(n, np.uint32) for n in (3, 5, 2)]
    for bad in range(3):
        masks = list(ones)
        masks[bad] = np.ones(len(masks[bad]) + 1, np.uint32)
        with pytest.raises(ValueError, match="masks do not match"):
            _summary.summary_gather(s, *masks, 1)
    with pytest.raises(ValueError, match="masks do not match"):
        _summary.summary_gather(s, *ones, 33)


def test_summary_gather_past_its_first_estimate():
    # the values are copied into a buffer sized for the first plane's count
    # on every plane; here later planes hold more (it grows, past 2 MB: the
    # huge-page block on Linux) and some fewer
    rng = np.random.default_rng(11)
    s = np.full((4, 101, 700, 4), -1.0)
    s[0, :, :10] = rng.random((101, 10, 4))              # few values on the first planes
    s[1:, :, :, :2] = rng.random((3, 101, 700, 2))      # then two areas everywhere
    s[2, 50] = -1.0
    s[3, 7, ::3] = np.nan
    every_t, every_k = np.arange(4), np.arange(700)
    _assert_gathers_numpys_selections(s, [(every_t, every_k, 0), (every_t, every_k, 1), ([0, 2], every_k[::2], 0),
                                          ([3], every_k, 3)])
