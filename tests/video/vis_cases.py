"""The stored video instance segmentation cases (tests/data/video/vis/): generated inputs
and what the official forks computed on them (tests/video/make_vis_golden.py)."""
import functools
import gzip
import json
import os

import numpy as np

VIS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "video", "vis")

#: every stored case
CASES = sorted(d for d in os.listdir(VIS) if os.path.isfile(os.path.join(VIS, d, "golden.json.gz")))
#: the scenarios (valid input), and the suspect-input cases
SCENARIO_CASES = [c for c in CASES if not c.startswith("suspect_")]
SUSPECT_CASES = [c for c in CASES if c.startswith("suspect_")]


@functools.lru_cache(maxsize=None)
def _text(path):
    with gzip.open(path, "rt") as f:
        return f.read()


def _read_gz(path):
    """The file's JSON (a fresh object each call: evaluators annotate what they are given)."""
    text = _text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text  # the cases of files that are not JSON


def load_inputs(case):
    """``(gt, results)`` of a case as stored (a ``str`` where the file is not JSON)."""
    folder = os.path.join(VIS, case)
    return _read_gz(os.path.join(folder, "gt.json.gz")), _read_gz(os.path.join(folder, "results.json.gz"))


def write_inputs(case, folder):
    """The case's ground truth and results as plain files in ``folder``: their paths."""
    paths = []
    for name, obj in zip(("gt.json", "results.json"), load_inputs(case)):
        path = os.path.join(str(folder), name)
        with open(path, "w") as f:
            f.write(obj if isinstance(obj, str) else json.dumps(obj))
        paths.append(path)
    return tuple(paths)


def load_golden(case):
    """What the official forks printed, raised and computed on the case."""
    return json.loads(_text(os.path.join(VIS, case, "golden.json.gz")))


def load_arrays(case):
    """``{"<run>/precision": array, "<run>/recall": ..., "<run>/scores": ...}``."""
    path = os.path.join(VIS, case, "eval.npz")
    if not os.path.exists(path):
        return {}
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def run_record(golden, run):
    """A run's record, a run stored as ``same_as`` another completed from that one."""
    rec = dict(golden["runs"][run])
    if "same_as" in rec:
        base = golden["runs"][rec["same_as"]]
        for k, v in base.items():
            rec.setdefault(k, v)
    return rec


def stored_ious(record):
    """``{(video_id, category_id): ndarray or []}`` of a run's record."""
    out = {}
    for e in record["ious"]:
        key = (e["video_id"], e["category_id"])
        if e["kind"] == "list":
            out[key] = []
        else:
            out[key] = np.array(e["values"], float).reshape(e["shape"])
    return out
