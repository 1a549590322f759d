"""The summary gathers of ``instance/_eval`` (``summary_values``,
``summary_values_many``) against NumPy's own selection: ``np.mean`` of what
they gather must be ``np.mean(s[s > -1])`` of lvis' / pycocotools' selection
bit for bit (the same elements in the same order), on random arrays with
-1 and NaN entries, up to 5,000 values (NumPy's pairwise sum changes its
blocking at 8 and 128 elements)."""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from boundary_api.instance import _eval


def _numpy_mean(sel):
    kept = sel[sel > -1]
    return -1 if len(kept) == 0 else np.mean(kept)


def _same(x, y):
    return type(x) is type(y) and (x == y or (x != x and y != y))


@st.composite
def _arrays(draw):
    T = draw(st.integers(1, 5))
    R = draw(st.integers(1, 12))
    K = draw(st.integers(1, 20))
    A = draw(st.integers(1, 4))
    while T * R * K * A > 5000:
        K = max(1, K // 2)
        R = max(1, R // 2)
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    s = rng.random((T, R, K, A)) * draw(st.sampled_from([1.0, 1e-300, 1e300, 3.7]))
    s[rng.random(s.shape) < draw(st.floats(0, 1))] = -1.0
    s[rng.random(s.shape) < 0.02] = np.nan
    s[rng.random(s.shape) < 0.02] = -0.5  # above -1: kept
    s[rng.random(s.shape) < 0.02] = -1.5  # below -1: dropped
    return s, rng


@settings(max_examples=200, deadline=None)
@given(_arrays())
def test_summary_values_is_numpys_selection(case):
    s, rng = case
    T, R, K, A = s.shape
    a = int(rng.integers(0, A))
    t_idx = np.sort(rng.choice(T, int(rng.integers(0, T + 1)), replace=False)).astype(np.int64)
    k_idx = rng.integers(0, K, int(rng.integers(0, 2 * K + 1))).astype(np.int64)  # any order, repeats
    out = np.empty(len(t_idx) * R * len(k_idx))
    n = _eval.summary_values(s, t_idx, k_idx, a, out)
    sel = s[t_idx][:, :, k_idx, a]
    assert out[:n].tobytes() == sel[sel > -1].tobytes()
    assert _same(-1 if n == 0 else np.mean(out[:n]), _numpy_mean(sel))


@settings(max_examples=200, deadline=None)
@given(_arrays())
def test_summary_values_many_is_numpys_selections(case):
    s, rng = case
    T, R, K, A = s.shape
    sels = []
    for _ in range(int(rng.integers(1, 12))):
        t_idx = np.flatnonzero(rng.random(T) < 0.6)
        k_idx = np.flatnonzero(rng.random(K) < 0.6)
        sels.append((t_idx, k_idx, int(rng.integers(0, A))))
    t_mask = np.zeros(T, np.uint32)
    k_mask = np.zeros(K, np.uint32)
    a_mask = np.zeros(A, np.uint32)
    for b, (t_idx, k_idx, a) in enumerate(sels):
        t_mask[t_idx] |= np.uint32(1 << b)
        k_mask[k_idx] |= np.uint32(1 << b)
        a_mask[a] |= np.uint32(1 << b)
    sizes = [len(t) * R * len(k) for t, k, _ in sels]
    offset = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    out = np.empty(int(offset[-1]))
    count = np.zeros(len(sels), np.int64)
    _eval.summary_values_many(s, t_mask, k_mask, a_mask, offset, out, count)
    for b, (t_idx, k_idx, a) in enumerate(sels):
        sel = s[t_idx][:, :, k_idx, a]
        got = out[offset[b]:offset[b] + count[b]]
        assert got.tobytes() == sel[sel > -1].tobytes()
        assert _same(-1 if len(got) == 0 else np.mean(got), _numpy_mean(sel))


def test_summary_values_of_a_strided_view():
    # pycocotools' precision[..., m]: not contiguous in its last axis
    rng = np.random.default_rng(0)
    p = rng.random((3, 7, 5, 4, 3))
    p[rng.random(p.shape) < 0.4] = -1
    s = p[..., 1]
    t_idx = np.arange(3, dtype=np.int64)
    k_idx = np.arange(5, dtype=np.int64)
    out = np.empty(3 * 7 * 5)
    n = _eval.summary_values(s, t_idx, k_idx, 2, out)
    sel = s[:, :, :, 2]
    assert out[:n].tobytes() == sel[sel > -1].tobytes()
