"""Differential fuzzing of suspect masks (issue 45): what pycocotools (lvis)
evaluates without crashing, boundary_api evaluates to the same number; where
it crashes or never ends, boundary_api raises one clear error; where it
raises, boundary_api raises the same class.  In child processes with a
memory cap, the original under an alarm (fuzz_suspect.py).

Inputs from a fixed seed (``BOUNDARY_API_FUZZ_SEED`` picks another): images
of a side of 0, below 1 or fractional; polygons (several per annotation, a
few with a NaN or huge coordinate: documented refusals); RLE strings of
pycocotools' encoder, garbage strings of any characters, strings whose last
count runs past their end, counts covering fewer or more pixels than their
size, RLEs of their own size; uncompressed crowd counts, as floats too;
results with and without boxes; COCO and LVIS, box and mask AP.
"""
import os

import numpy as np
import pytest

import fuzz_suspect as S
from fuzz_runner import describe, run_cases

pytestmark = pytest.mark.slow

SEED = int(os.environ.get("BOUNDARY_API_FUZZ_SEED", 45_01))
N_CASES = int(os.environ.get("BOUNDARY_API_FUZZ_CASES", 240))


#: glibc's checking allocator, where the system has it: a write past a heap
#: buffer (the original's, given a string it reads past its end) then ends the
#: worker at once instead of some cases later
MALLOC_DEBUG = "/lib/x86_64-linux-gnu/libc_malloc_debug.so.0"


def test_what_the_original_evaluates_is_evaluated_and_its_crashes_refused():
    rng = np.random.default_rng(SEED)
    cases = [S.case(rng) for _ in range(N_CASES)]
    env = {"LD_PRELOAD": MALLOC_DEBUG, "MALLOC_CHECK_": "3"} if os.path.exists(MALLOC_DEBUG) else {}
    result = run_cases("suspect", cases, env_extra=env)
    assert not result["failures"], describe(result)
    refused = {}
    for i, out in result["outcomes"].items():
        if out["status"] == "crash_theirs":
            # the original crashed or never ended: boundary_api refused it, with one line
            ours = out["ours"]
            assert ours["refused"] in ("UnsafeRLEError", "UnsafePolygonError"), (i, out)
            assert "\n" not in ours["message"]
            refused[ours["refused"]] = refused.get(ours["refused"], 0) + 1
    counts = result["counts"]
    # the generator reaches every outcome
    assert counts.get("same", 0) > N_CASES // 3 and counts.get("crash_theirs", 0) >= 10, counts
    assert counts.get("both_refused", 0) >= 1, counts
    result["kinds"]["refused where the original crashed or hung"] = sum(refused.values())
