"""Run the same user code against an original library and against
boundary_api, and compare what it gives: values (with their types), the
exception class, the printed lines."""
import contextlib
import io
import math
import re
import warnings

import numpy as np

from boundary_api import SuspectInputWarning

_TIMING = re.compile(r"\(t=\d+\.\d+s\)")


class Outcome:
    """What one run gave: ``value`` or ``error``, the printed lines and the
    SuspectInputWarning messages."""

    def __init__(self, value=None, error=None, printed="", warned=()):
        self.value, self.error, self.warned = value, error, list(warned)
        self.lines = _TIMING.sub("(t=T)", printed).splitlines()

    def __repr__(self):
        return f"Outcome(value={self.value!r:.200}, error={self.error!r}, warned={self.warned})"


def run(fn, *args) -> Outcome:
    out = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out):
        warnings.simplefilter("always")
        try:
            value = fn(*args)
        except Exception as exc:  # noqa: BLE001 - compared by the caller
            return Outcome(error=exc, printed=out.getvalue(), warned=_suspect(caught))
    return Outcome(value=value, printed=out.getvalue(), warned=_suspect(caught))


def _suspect(caught):
    return [str(w.message) for w in caught if issubclass(w.category, SuspectInputWarning)]


def assert_same_value(a, b, path="value"):
    """Equal values of equal types, recursively (NaN equal to NaN; arrays by
    dtype, shape and content)."""
    assert type(a) is type(b), f"{path}: {type(a).__name__} != {type(b).__name__} ({a!r:.80} vs {b!r:.80})"
    if isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for k in a:
            assert_same_value(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_value(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, f"{path}: {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        assert np.array_equal(a, b, equal_nan=a.dtype.kind == "f"), f"{path}: {a} != {b}"
    elif isinstance(a, (float, np.floating)) and math.isnan(a):
        assert math.isnan(b), f"{path}: {a} != {b}"
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def assert_same(original: Outcome, ours: Outcome, printed: bool = True) -> None:
    """boundary_api did what the original did: the same value, or an
    exception of the original's class name that is an instance of the
    original's class: the original's own (raised by its code, with this
    package's note) or this package's, also a ValueError; the same printed
    lines."""
    if original.error is not None:
        assert ours.error is not None, f"the original raised {original.error!r}, boundary_api gave {ours!r}"
        assert isinstance(ours.error, type(original.error)), (original.error, ours.error)
        assert type(ours.error).__name__ == type(original.error).__name__, (original.error, ours.error)
        # pycocotools' own code raising (a look-up) or a ValueError naming the problem
        assert type(ours.error) is type(original.error) or isinstance(ours.error, ValueError), ours.error
        assert "\n" not in str(ours.error)
    else:
        assert ours.error is None, f"boundary_api raised {ours.error!r}; the original gave {original!r}"
        assert_same_value(original.value, ours.value)
        if printed:
            assert ours.lines == original.lines
