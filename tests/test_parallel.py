"""Thread helpers: ranges that cover every item once, in order."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from boundary_api._parallel import full, run_ranges, split_by_cost


@given(st.lists(st.floats(0, 1e6), max_size=200), st.integers(1, 40))
def test_split_by_cost_partitions_in_order(costs, parts):
    ranges = split_by_cost(np.array(costs), parts)
    assert len(ranges) <= parts
    covered = [i for lo, hi in ranges for i in range(lo, hi)]
    assert covered == list(range(len(costs)))
    assert all(hi > lo for lo, hi in ranges)


def test_run_ranges_keeps_range_order():
    ranges = split_by_cost(np.ones(100), 7)
    assert run_ranges(lambda lo, hi: (lo, hi), ranges, 3) == ranges


@given(st.lists(st.integers(0, 7), min_size=1, max_size=5), st.integers(1, 4), st.integers(1, 64))
def test_full_is_numpys_full(shape, threads, min_size):
    for value in (-1.0, 0.0, 2.5):
        got = full(tuple(shape), value, threads, min_size=min_size)
        want = np.full(tuple(shape), value)
        assert got.dtype == want.dtype and got.shape == want.shape and got.flags.c_contiguous
        assert got.tobytes() == want.tobytes()
