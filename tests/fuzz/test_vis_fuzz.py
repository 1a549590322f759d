"""Differential fuzzing of the YouTube-VIS reader (issue 39): ground truths and
results files loaded and evaluated through the public API with the native
scanner and with the JSON reader (json / msgspec) in its place, in child
processes with a memory cap and a timeout (fuzz_runner.py, family ``vis``:
fuzz_vis.py); everything a user reads must be equal, or both must refuse the
file alike.

The inputs, from fixed seeds (tests/video/vis_docs.py): valid but unusual
YouTube-VIS JSON (blanks, every number spelling, escapes, key order, absent
frames as null / [] / {}, compressed and uncompressed RLEs, polygons, optional
keys), also with what the YouTube-VIS API warns about or refuses; every
truncation of a small ground truth and results file; random byte mutations;
digits changed (mostly still JSON: other sizes, counts, ids, scores, areas).
"""
import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "video"))

import fuzz_json as F  # noqa: E402
import vis_docs  # noqa: E402
from fuzz_runner import describe, run_cases  # noqa: E402

pytestmark = pytest.mark.slow

SEED = 39_04


def _pair(rng, suspect, unusual):
    gt, res = vis_docs.documents(rng, suspect)
    return vis_docs.encode(rng, gt, unusual), vis_docs.encode(rng, res, unusual)


def valid_cases(rng, n):
    cases = []
    for k in range(n):
        suspect = (0.0, 0.0, 0.3, 1.0)[k % 4]
        gt, res = _pair(rng, suspect, (0.0, 0.3, 0.7)[k % 3])
        kind = "valid" if suspect == 0 else "suspect"
        cases.append({"api": "vis_gt", "data": gt, "other": res, "family_kind": f"{kind} vis_gt"})
        cases.append({"api": "vis_res", "data": res, "other": gt, "family_kind": f"{kind} vis_res"})
    return cases


def truncation_cases(rng):
    gt, res = vis_docs.small_documents(rng)
    cases = [{"api": "vis_gt", "data": gt[:n], "other": res, "family_kind": "truncation vis_gt"}
             for n in range(len(gt))]
    cases += [{"api": "vis_res", "data": res[:n], "other": gt, "family_kind": "truncation vis_res"}
              for n in range(len(res))]
    return cases


def mutation_cases(rng, n):
    cases = []
    for k in range(n):
        gt, res = _pair(rng, 0.0, (0.0, 0.3)[k % 2])
        if k % 2:
            cases.append({"api": "vis_gt", "data": F.mutate(rng, gt), "other": res, "family_kind": "mutation vis_gt"})
        else:
            cases.append({"api": "vis_res", "data": F.mutate(rng, res), "other": gt,
                          "family_kind": "mutation vis_res"})
    return cases


def digit_mutation(rng, raw: bytes) -> bytes:
    """1 to 4 digits changed, or one inserted or deleted: mostly still JSON,
    with other sizes, counts, ids, scores and areas."""
    out = bytearray(raw)
    digits = [i for i, c in enumerate(out) if 48 <= c <= 57]
    for _ in range(int(rng.integers(1, 5))):
        if not digits:
            break
        i = digits[int(rng.integers(len(digits)))]
        op = int(rng.integers(4))
        if op < 2:
            out[i] = 48 + int(rng.integers(10))
        elif op == 2:
            out.insert(i, 48 + int(rng.integers(10)))
            digits = [i for i, c in enumerate(out) if 48 <= c <= 57]
        elif i + 1 < len(out) and 48 <= out[i + 1] <= 57:
            del out[i]
            digits = [i for i, c in enumerate(out) if 48 <= c <= 57]
    return bytes(out)


def digit_cases(rng, n):
    cases = []
    for k in range(n):
        gt, res = _pair(rng, 0.0, (0.0, 0.3)[k % 2])
        if k % 2:
            cases.append({"api": "vis_gt", "data": digit_mutation(rng, gt), "other": res,
                          "family_kind": "digit mutation vis_gt"})
        else:
            cases.append({"api": "vis_res", "data": digit_mutation(rng, res), "other": gt,
                          "family_kind": "digit mutation vis_res"})
    return cases


def _check(result):
    assert not result["failures"], describe(result)


def test_valid_unusual_youtube_vis_json():
    result = run_cases("vis-valid", valid_cases(np.random.default_rng(SEED), 300))
    _check(result)
    assert result["counts"].get("same, read natively", 0) > 150


def test_every_truncation_of_small_youtube_vis_files():
    _check(run_cases("vis-truncations", truncation_cases(np.random.default_rng(SEED + 1))))


def test_random_byte_mutations_of_youtube_vis_files():
    _check(run_cases("vis-mutations", mutation_cases(np.random.default_rng(SEED + 2), 1000)))


def test_digit_mutations_of_youtube_vis_files():
    result = run_cases("vis-digits", digit_cases(np.random.default_rng(SEED + 3), 600))
    _check(result)
    assert result["counts"].get("same, read natively", 0) > 100
