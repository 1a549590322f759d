"""The differential fuzz suite's YouTube-VIS family (run by fuzz_worker.py):
a ground truth or results file loaded and evaluated through the public API
(``YTVOS``, ``loadRes``, ``YTVOSeval`` 'segm' and 'boundary') twice, with the
native scanner (video/_scan.pyx) and with it switched off, so that the file
is read by the JSON reader (json / msgspec) and checked as dicts: the
printed lines, warnings, errors, numbers and every dict a user reads must be
equal, types and key order included (tests/video/vis_paths.py)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "video"))

import vis_paths  # noqa: E402

STEPS = [("segm", {}, {}), ("boundary", {}, {})]


def _write(name, data):
    with open(name, "wb") as f:
        f.write(data)
    return os.path.abspath(name)


def compare_vis(case: dict, side: str):
    from fuzz_compare import diff

    if case["api"] == "vis_gt":
        gt_path, res_path = _write("gt.json", case["data"]), _write("results.json", case["other"])
    else:
        gt_path, res_path = _write("gt.json", case["other"]), _write("results.json", case["data"])

    def ours():
        return vis_paths.run(gt_path, res_path, STEPS, get_boundary=True)

    def theirs():
        return vis_paths.run(gt_path, res_path, STEPS, get_boundary=True, columns=False)

    if side != "both":
        (ours if side == "ours" else theirs)()
        return {"status": "ran"}
    a, b = ours(), theirs()
    d = vis_paths.compare(a, b, diff)
    if d:
        return {"status": "mismatch", "detail": d}
    native = dict(a["paths"]).get("gt" if case["api"] == "vis_gt" else "results")
    if "error" in a:
        return {"status": "both_refused" + (", read natively" if native else ""), "detail": a["error"][0]}
    return {"status": "same, read natively" if native else "same"}
