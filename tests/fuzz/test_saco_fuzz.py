"""Differential fuzzing of the SA-Co predictions reader (issue 47): predictions files read
and evaluated through the public API (``CGF1Evaluator``, 'segm', 'bbox', 'boundary') with
the native reader (the instance results scanner with ``other_keys``) and with the JSON
reader in its place (then the per-pair path evaluates), in child processes with a memory
cap and a timeout (fuzz_runner.py, family ``saco``: fuzz_saco.py); everything a user
reads must be equal, or both must refuse the file alike, and the columns read natively
must equal json.loads' values.

The inputs, from fixed seeds: SA-Co/Gold-like ground truths (1 to 3 annotator files,
small images) with predictions as SAM 3's ``coco_writer.py`` writes them and in valid but
unusual JSON (blanks, every number spelling, escapes, key order, repeated keys, extra
keys, boxes or not, ``area`` or not); every truncation of a small predictions file;
random byte mutations; digits changed (mostly still JSON: other sizes, counts, ids,
scores).
"""
import json

import numpy as np
import pytest

import fuzz_json as F
from fuzz_runner import run_cases
from test_vis_fuzz import _check, digit_mutation

from boundary_api.saco.synthetic import gold_like

pytestmark = pytest.mark.slow

SEED = 47_01


def _documents(rng, unusual: float):
    """Ground-truth files (bytes, json.dumps) and the predictions (objects) of a small
    SA-Co/Gold-like set; the predictions with or without boxes and areas, and now and
    then extra keys, shuffled keys and repeated keys (with ``unusual``)."""
    h, w = int(rng.integers(6, 40)), int(rng.integers(6, 40))
    gts, preds = gold_like(int(rng.integers(1, 14)), int(rng.integers(2 ** 31)), num_files=int(rng.integers(1, 4)),
                           max_predictions=int(rng.integers(0, 5)), height=h, width=w)
    no_bbox, no_area = rng.random() < 0.3, rng.random() < 0.3
    out = []
    for p in preds:
        p = dict(p)
        if no_bbox:
            p.pop("bbox", None)
        if no_area:
            p.pop("area", None)
        out.append(F.shuffled(rng, F.add_extras(rng, p, unusual * 0.4), unusual))
    out = [F.with_duplicates(rng, p, unusual * 0.2) for p in out]
    return [json.dumps(g).encode() for g in gts], out


def _case(gts, data, kind):
    return {"api": "saco", "gts": gts, "data": data, "family_kind": kind}


def valid_cases(rng, n):
    cases = []
    for k in range(n):
        unusual = (0.0, 0.0, 0.3, 0.7)[k % 4]
        gts, preds = _documents(rng, unusual)
        data = json.dumps(preds).encode() if unusual == 0 else F.encode_doc(rng, preds, unusual)
        cases.append(_case(gts, data, "valid saco" if unusual == 0 else "unusual saco"))
    return cases


def _small(rng):
    while True:
        gts, preds = _documents(rng, 0.0)
        if 2 <= len(preds) <= 4:
            return gts, json.dumps(preds).encode() + b"\n"


def truncation_cases(rng):
    gts, data = _small(rng)
    return [_case(gts, data[:n], "truncation saco") for n in range(len(data))]


def mutation_cases(rng, n):
    cases = []
    for k in range(n):
        unusual = (0.0, 0.3)[k % 2]
        gts, preds = _documents(rng, unusual)
        data = F.encode_doc(rng, preds, unusual) if unusual else json.dumps(preds).encode()
        cases.append(_case(gts, F.mutate(rng, data), "mutation saco"))
    return cases


def digit_cases(rng, n):
    cases = []
    for _ in range(n):
        gts, preds = _documents(rng, 0.0)
        cases.append(_case(gts, digit_mutation(rng, json.dumps(preds).encode()), "digit mutation saco"))
    return cases


# family, cases, seed offset, count, fewest cases read natively and equal
FAMILIES = [("valid", valid_cases, 0, 600, 250), ("truncations", truncation_cases, 1, None, 0),
            ("mutations", mutation_cases, 2, 2000, 0), ("digits", digit_cases, 3, 1000, 200)]


@pytest.mark.parametrize("name,make,offset,count,native", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_saco_predictions_read_natively_equal_json_loads(name, make, offset, count, native):
    rng = np.random.default_rng(SEED + offset)
    result = run_cases(f"saco-{name}", make(rng) if count is None else make(rng, count))
    _check(result)
    assert result["counts"].get("same, read natively", 0) >= native
