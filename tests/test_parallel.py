"""Thread helpers: ranges that cover every item once, in order."""
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from boundary_api._parallel import run_ranges, split_by_cost


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
