"""A worker of the differential fuzz suite (see fuzz_runner.py): caps its address
space, then compares the cases it is given one after the other and prints one
JSON line per case.

    python fuzz_worker.py FAMILY CASES.pkl INDICES.json SIDE MEMORY_CAP

SIDE is "both" (compare), "ours" or "theirs" (run one side only: which of the
two crashes on a case that killed a worker).
"""
import json
import os
import pickle
import resource
import sys
import tempfile
import traceback
import warnings


def main() -> int:
    family, cases_path, idx_path, side, cap = sys.argv[1:6]
    cap = int(cap)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    warnings.simplefilter("ignore")
    import fuzz_compare

    compare = fuzz_compare.FAMILIES[family.split("-")[0]]
    with open(cases_path, "rb") as f:
        cases = pickle.load(f)
    with open(idx_path) as f:
        indices = json.load(f)
    os.chdir(tempfile.mkdtemp(dir="."))   # the files of this worker's cases
    # the records go to the real stdout; anything the libraries print (Python
    # or C) goes to stderr
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    for i in indices:
        try:
            rec = compare(cases[i], side)
        except Exception as exc:  # a bug of the comparison itself
            rec = {"status": "error", "detail": "".join(traceback.format_exception_only(type(exc), exc)).strip()
                   + " | " + traceback.format_exc().strip().splitlines()[-3]}
        out.write(json.dumps(rec, default=str) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(main())
