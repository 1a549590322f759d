"""The vectorised federated-rule lookup (``_pair_membership``) gives the
answers of the per-pair Python test (``_pair_flags``) it replaces, and steps
aside (None) whenever the per-pair test must word a problem."""
import types

import numpy as np
import pytest

from boundary_api.lvis.eval import _pair_flags, _pair_membership


def _columns(img, cat):
    return types.SimpleNamespace(n=len(img), image_id=np.asarray(img, np.int64),
                                 category_id=np.asarray(cat, np.int64))


@pytest.mark.parametrize("seed", range(20))
def test_membership_equals_the_per_pair_test(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(0, 400))
    img_ids = rng.choice([1, 7, 42, 10**12, -3], 5, replace=False).tolist()
    cols = _columns(rng.choice(img_ids, n), rng.integers(-2, 30, n))
    rows = rng.random(n) < 0.8
    cats = list(range(-2, 30))
    tables = [{i: set(rng.choice(cats, rng.integers(0, 8)).tolist()) for i in img_ids} for _ in range(3)]
    tables[1] = {i: sorted(v) for i, v in tables[1].items()}  # lists behave as sets do
    a, b, c = tables
    fast = _pair_membership(cols, rows, (a, b), (c,))
    slow = _pair_flags(cols, rows, lambda i, k: k in a[i] or k in b[i], lambda i, k: k in c[i])
    assert fast is not None
    for x, y in zip(fast, slow):
        assert x.dtype == y.dtype == bool
        assert (x == y).all()


def test_membership_steps_aside_for_what_the_per_pair_test_words_or_compares_loosely():
    cols = _columns([1, 2], [5, 6])
    rows = np.ones(2, bool)
    assert _pair_membership(cols, rows, ({1: {5}},)) is None            # image 2 missing: KeyError there
    assert _pair_membership(cols, rows, ({1: {5.0}, 2: {6}},)) is None  # 5.0 == 5 for `in`
    assert _pair_membership(cols, rows, ({1: {True}, 2: {6}},)) is None
    got = _pair_membership(cols, rows, ({1: {5}, 2: {7}},))
    assert got[0].tolist() == [True, False]
