"""The per-pair matching and counting against a plain SciPy oracle, on adversarial input
from hypothesis: the assignment kernel is SciPy's ``linear_sum_assignment`` (the very
assignment, ties included), the counting kernel gives per entry the true positives of
that assignment at every threshold, and whole evaluations of generated sets (segm,
bbox and Boundary cgF1) give the oracle's numbers, entry by entry."""
import contextlib
import io
import json
import os
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy.optimize import linear_sum_assignment

from boundary_api.saco import CGF1Evaluator, _match
from boundary_api.saco.metrics import TN, entry_scores, iou_thresholds, select_best, with_counts
from boundary_api.saco.synthetic import gold_like

from . import oracle

THRS = iou_thresholds()

# IoU-like values with many exact ties: k / q for small q, zeros, the thresholds themselves
_values = st.one_of(st.sampled_from([0.0, 0.0, 0.5, 0.75, 0.55, 0.95, 1.0, float(THRS[8])]),
                    st.builds(lambda k, q: k / q, st.integers(0, 8), st.integers(1, 8)),
                    st.floats(0.0, 1.0, allow_nan=False))


@st.composite
def matrices(draw, max_side=7):
    r = draw(st.integers(1, max_side))
    c = draw(st.integers(1, max_side))
    vals = draw(st.lists(_values, min_size=r * c, max_size=r * c))
    return np.array(vals, np.float64).reshape(r, c)


@settings(max_examples=150, deadline=None)
@given(matrices())
def test_assignment_is_scipys(m):
    for cost in (-m, m, np.round(-m * 3)):
        want = linear_sum_assignment(cost)
        got = _match.linear_sum_assignment(cost)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_assignment_on_constant_and_integer_matrices():
    rng = np.random.default_rng(3)
    for _ in range(300):
        r, c = rng.integers(1, 9, 2)
        cost = rng.integers(-2, 2, (r, c)).astype(float) if rng.random() < 0.7 else np.zeros((r, c))
        want = linear_sum_assignment(cost)
        got = _match.linear_sum_assignment(cost)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    with pytest.raises(ValueError):
        _match.linear_sum_assignment(np.array([[np.nan, 1.0]]))


def _tp_oracle(ious):
    if ious.size == 0:
        return np.zeros(len(THRS), np.int64)
    r, c = linear_sum_assignment(-ious)
    s = ious[r, c]
    return np.array([(s >= t).sum() for t in THRS], np.int64)


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(matrices(6), st.lists(st.integers(0, 4), min_size=1, max_size=3)), min_size=1,
                max_size=6))
def test_counting_kernel_per_entry(pairs):
    """Pairs of several files side by side (one wide matrix per pair, each file a block
    of columns): every entry's true positives are those of SciPy's assignment on the
    entry's block."""
    ious, pair_o, pair_w, pair_nd, e_pair, e_col, e_ng, blocks = [], [0], [], [], [], [], [], []
    for p, (m, widths) in enumerate(pairs):
        D = m.shape[0]
        cols = [m[:, :0]]
        rng = np.random.default_rng(p)
        for w in widths:
            cols.append(np.round(rng.random((D, w)) * 4) / 4)
        wide = np.concatenate([m] + cols[1:], axis=1)
        starts = np.concatenate(([0], np.cumsum([m.shape[1]] + widths)))
        ious.append(wide.reshape(-1))
        pair_o.append(pair_o[-1] + wide.size)
        pair_w.append(wide.shape[1])
        pair_nd.append(D)
        for f in range(len(widths) + 1):
            e_pair.append(p)
            e_col.append(starts[f])
            e_ng.append(starts[f + 1] - starts[f])
            blocks.append(wide[:, starts[f]:starts[f + 1]])
    i64 = lambda a: np.ascontiguousarray(a, np.int64)  # noqa: E731
    out = np.zeros((len(e_pair), len(THRS)), np.int64)
    _match.match_counts(np.concatenate(ious), i64(pair_o), i64(pair_w), i64(pair_nd), i64(e_pair), i64(e_col),
                        i64(e_ng), np.ascontiguousarray(THRS), out, 0, len(e_pair))
    for k, block in enumerate(blocks):
        assert out[k].tolist() == _tp_oracle(block).tolist()


def test_mean_local_f1_is_numpys_own():
    """The oracle compares ``local_F1s.mean()`` (NumPy's reduction of each entry);
    the native path's means are the same floats."""
    rng = np.random.default_rng(5)
    tp = rng.integers(0, 5, (2000, 3, len(THRS)))
    nd = tp.max(axis=2) + rng.integers(0, 3, (2000, 3))
    ng = tp.max(axis=2) + rng.integers(0, 3, (2000, 3))
    s = entry_scores(tp, nd, ng)
    for i in range(0, 2000, 7):
        for f in range(3):
            assert s.mean_f1[i, f] == s.f1[i, f].copy().mean()
    # the counts made afterwards (for the entries the oracle keeps): the same arrays
    later = with_counts(entry_scores(tp, nd, ng, counts=False))
    for name in s.__dataclass_fields__:
        a, b = getattr(s, name), getattr(later, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(st.tuples(st.sampled_from([0, 1, 2]), st.sampled_from([0.0, 0.25, 0.5, 0.7])),
                         min_size=1, max_size=4), min_size=1, max_size=8))
def test_oracle_over_annotators(rows):
    """The choice of file per pair: the first, replaced by a later one with a strictly
    higher mean local F1 (both not true negatives), or by a later true negative."""
    F = max(len(r) for r in rows)
    kind = np.full((len(rows), F), TN, np.int8)
    mean = np.zeros((len(rows), F))
    for i, r in enumerate(rows):
        r = r + [r[-1]] * (F - len(r))
        kind[i] = [k for k, _ in r]
        mean[i] = [m for _, m in r]
    got = select_best(kind, mean)
    for i in range(len(rows)):
        best = 0
        for f in range(1, F):
            if kind[i, best] != TN and kind[i, f] != TN:
                if mean[i, f] > mean[i, best]:
                    best = f
            elif kind[i, f] == TN:
                best = f
        assert got[i] == best


def _evaluate(tmp, gts, preds, iou_type):
    paths = []
    for f, gt in enumerate(gts):
        paths.append(os.path.join(tmp, f"gt{f}.json"))
        with open(paths[-1], "w") as fh:
            json.dump(gt, fh)
    with open(os.path.join(tmp, "dt.json"), "w") as fh:
        json.dump(preds, fh)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        ev = CGF1Evaluator(paths, iou_type)
        out = ev.evaluate(os.path.join(tmp, "dt.json"))
    return ev, out


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10 ** 6), files=st.integers(1, 3), iou_type=st.sampled_from(["segm", "bbox",
                                                                                        "boundary"]))
def test_generated_sets_equal_the_oracle(tmp_path, seed, files, iou_type):
    """Whole evaluations of small generated sets (ties, crowds, thresholds hit exactly,
    unknown ids): every value and every chosen entry is the oracle's."""
    gts, preds = gold_like(num_pairs=12, seed=seed, num_files=files, height=40, width=56)
    ev, out = _evaluate(str(tmp_path), gts, preds, iou_type)
    want, chosen = oracle.evaluate(gts, preds, iou_type)
    assert list(out) == list(want)
    for k in want:
        assert oracle.same(out[k], want[k]), k
    entries = ev.coco_evals[0].evalImgs
    assert len(entries) == len(chosen)
    for got, (kind, tp, fp, fn, f1) in zip(entries, chosen):
        if kind == "TN":
            assert "TPs" not in got
            continue
        assert got["TPs"].tolist() == tp.tolist() and got["FPs"].tolist() == fp.tolist()
        assert got["FNs"].tolist() == fn.tolist() and got["local_F1s"].tolist() == f1.tolist()


@pytest.mark.parametrize("name", ["gold3", "gold1"])
def test_boundary_cgf1_of_the_stored_sets_is_the_oracles(name, tmp_path):
    """Boundary cgF1 has no official code: on the stored sets it is the oracle's
    (min(mask IoU, Boundary IoU) by the OpenCV definition, SciPy's assignment)."""
    data = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "saco")
    paths = [os.path.join(data, f) for f in sorted(os.listdir(data)) if f.startswith(f"{name}_gt_")]
    gts = [json.load(open(p)) for p in paths]
    preds = json.load(open(os.path.join(data, f"{name}_pred.json")))
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        out = CGF1Evaluator(paths, "boundary").evaluate(os.path.join(data, f"{name}_pred.json"))
    want, _ = oracle.evaluate(gts, preds, "boundary")
    for k in want:
        assert oracle.same(out[k], want[k]), k
    # and it differs from cgF1: the boundaries are stricter than the masks
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        segm = CGF1Evaluator(paths, "segm").evaluate(os.path.join(data, f"{name}_pred.json"))
    assert out["cgF1_eval_boundary_cgF1"] < segm["cgF1_eval_segm_cgF1"]


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["segm", "bbox", "boundary"])
def test_larger_generated_sets_equal_the_oracle(tmp_path, iou_type):
    """The same on SA-Co/Gold-sized images (480 x 640), more pairs and seeds."""
    for seed in (11, 12, 13):
        gts, preds = gold_like(num_pairs=40, seed=seed)
        ev, out = _evaluate(str(tmp_path), gts, preds, iou_type)
        want, chosen = oracle.evaluate(gts, preds, iou_type)
        for k in want:
            assert oracle.same(out[k], want[k]), (seed, k)
        for got, (kind, tp, *_rest) in zip(ev.coco_evals[0].evalImgs, chosen):
            assert kind == "TN" or got["TPs"].tolist() == tp.tolist()
