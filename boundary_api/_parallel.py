"""Thread helpers: the Cython kernels release the GIL, so plain threads scale."""
from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

Range = Tuple[int, int]


def default_threads() -> int:
    """Number of cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def resolve_threads(num_threads: Optional[int]) -> int:
    """Validate a ``num_threads`` argument; ``None`` means all cores."""
    if num_threads is None:
        return default_threads()
    if isinstance(num_threads, bool) or not isinstance(num_threads, (int, np.integer)):
        raise TypeError(f"num_threads must be a positive integer or None, got {num_threads!r}")
    if num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    return int(num_threads)


def split_by_cost(costs: np.ndarray, parts: int) -> List[Range]:
    """Cut ``range(len(costs))`` into at most ``parts`` contiguous ranges of
    about equal total cost."""
    n = len(costs)
    if n == 0:
        return []
    parts = max(1, min(parts, n))
    cum = np.cumsum(np.asarray(costs, dtype=np.float64) + 1.0)
    cuts = np.searchsorted(cum, cum[-1] * np.arange(1, parts) / parts)
    bounds = np.concatenate(([0], cuts, [n]))  # non-decreasing: drop repeats (np.unique would import numpy.ma)
    bounds = bounds[np.concatenate(([True], bounds[1:] != bounds[:-1]))]
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def progress_bar(total: Optional[int], desc: str, unit: str = "it"):
    """A tqdm bar on standard error when it is a terminal, else None (tqdm is
    then not even imported: it costs tens of milliseconds, more than a small
    evaluation)."""
    try:
        if sys.stderr is None or not sys.stderr.isatty():
            return None
    except (AttributeError, ValueError):  # replaced or closed stream
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False)


def run_ranges(fn: Callable[[int, int], object], ranges: Sequence[Range], num_threads: int,
               progress: Optional[str] = None, total: Optional[int] = None) -> list:
    """Call ``fn(lo, hi)`` for every range, on up to ``num_threads`` threads.

    Results come back in range order.  ``progress`` names a tqdm bar, shown
    when stderr is a terminal (``total`` counts the items of all ranges).
    """
    bar = None if progress is None else progress_bar(total, progress)

    def call(r: Range):
        out = fn(*r)
        if bar is not None:
            bar.update(r[1] - r[0])
        return out

    try:
        if num_threads <= 1 or len(ranges) <= 1:
            return [call(r) for r in ranges]
        with ThreadPoolExecutor(max_workers=num_threads) as pool:
            return list(pool.map(call, ranges))
    finally:
        if bar is not None:
            bar.close()


def full(shape, fill_value: float, num_threads: int, min_size: int = 1 << 18) -> np.ndarray:
    """``np.full(shape, fill_value)`` (float64), filled in ``num_threads``
    contiguous parts side by side when it holds at least ``min_size``
    elements (NumPy's fill releases the GIL; the pages are first touched by
    the thread that fills them).  The same array, sooner: LVIS' precision
    array is 39 MB at 1,203 categories."""
    size = int(np.prod(shape, dtype=np.int64))
    if num_threads <= 1 or size < min_size:
        return np.full(shape, fill_value, dtype=np.float64)
    out = np.empty(shape, dtype=np.float64)
    flat = out.reshape(-1)
    step = -(-size // num_threads)
    run_ranges(lambda lo, hi: flat[lo:hi].fill(fill_value),
               [(lo, min(lo + step, size)) for lo in range(0, size, step)], num_threads)
    return out
