"""Make the golden values of the video instance segmentation tests (tests/data/video/vis/).

Generates the cases with :mod:`boundary_api.video.synthetic_vis`, stores them (gzipped
JSON) and runs the two official forks on them, each in its own Python environment (both
install a package named ``pycocotools``):

- youtubevos/cocoapi (``PythonAPI``): ``BOUNDARY_API_YTVOS_PYTHON`` names its Python;
- SysCV/vmt ``cocoapi_hq/PythonAPI``: ``BOUNDARY_API_HQYTVIS_PYTHON`` names its Python.

Optional ``BOUNDARY_API_YTVOS_COMMIT`` / ``BOUNDARY_API_HQYTVIS_COMMIT`` are written into
the provenance of each golden file.  tests/data/video/README.md says how the
environments were built.

Usage::

    BOUNDARY_API_YTVOS_PYTHON=/path/to/ytvos/bin/python \\
    BOUNDARY_API_HQYTVIS_PYTHON=/path/to/hqytvis/bin/python \\
    python tests/video/make_vis_golden.py [CASE ...]

The same file is the runner that the official Pythons execute
(``python make_vis_golden.py --run SPEC.json``): that part imports only the standard
library, NumPy and the official ``pycocotools``; nothing of boundary_api.
"""
import contextlib
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "data", "video", "vis")

#: derived fields of loadRes are recorded for this many results (all of them in small cases)
N_DERIVED = 25
#: the ratio other than 0.02 at which HQ-YTVIS' boundary AP is recorded
OTHER_RATIO = 0.05


# ---------------------------------------------------------------------------
# runner: executed by the official Pythons
# ---------------------------------------------------------------------------

def _norm(text):
    """Printed text with the run-dependent timings replaced."""
    text = re.sub(r"\(t=[0-9.]+s\)", "(t=<t>s)", text)
    return re.sub(r"0x[0-9a-f]+", "0x<address>", text).splitlines()


def _float_list(a):
    return [float(x) for x in a]


def _compact_eval_img(e, np):
    if e is None:
        return None
    return {
        "video_id": int(e["video_id"]), "category_id": int(e["category_id"]),
        "aRng": [float(x) for x in e["aRng"]], "maxDet": int(e["maxDet"]),
        "dtIds": [int(x) for x in e["dtIds"]], "gtIds": [int(x) for x in e["gtIds"]],
        "dtMatches": np.asarray(e["dtMatches"]).tolist(), "gtMatches": np.asarray(e["gtMatches"]).tolist(),
        "dtScores": _float_list(e["dtScores"]), "gtIgnore": np.asarray(e["gtIgnore"]).astype(int).tolist(),
        "dtIgnore": np.asarray(e["dtIgnore"]).astype(int).tolist(),
    }


def _types_of_eval_img(e):
    return {k: type(v).__name__ + (f"[{v.dtype}]" if hasattr(v, "dtype") else "") for k, v in e.items()}


def _derived(ann, boundary):
    out = {"id": ann.get("id"), "iscrowd": ann.get("iscrowd"),
           "areas": [None if a is None else float(a) for a in ann.get("areas", [])],
           "avg_area": float(ann["avg_area"]) if "avg_area" in ann else None,
           "bboxes": [None if b is None else _float_list(b) for b in ann.get("bboxes", [])]}
    if boundary and "boundary_list" in ann:
        from pycocotools import mask as mask_utils
        out["boundary_areas"] = [int(mask_utils.area(b)) for b in ann["boundary_list"]]
        out["boundary_sizes"] = [list(map(int, b["size"])) for b in ann["boundary_list"]]
    return out


def run_official(spec):
    """Run one evaluation of an official fork as ``spec`` says; a JSON-ready dict of what
    it printed, raised and computed.  ``precision``/``recall``/``scores`` go to
    ``spec["npz"]``."""
    import numpy as np
    import pycocotools
    from pycocotools.ytvos import YTVOS
    from pycocotools.ytvoseval import YTVOSeval

    record = {"spec": {k: v for k, v in spec.items() if k not in ("gt", "results", "npz")},
              "stdout": {}, "error": None}
    boundary_kw = {}
    if spec.get("get_boundary"):
        boundary_kw = {"get_boundary": True, "dilation_ratio": spec["dilation_ratio"]}
    stage = "YTVOS"
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf):
            gt = YTVOS(spec["gt"], **boundary_kw)
        record["stdout"]["YTVOS"], buf = _norm(buf.getvalue()), io.StringIO()
        stage = "loadRes"
        with contextlib.redirect_stdout(buf):
            if spec.get("results_as_list"):
                with open(spec["results"]) as f:
                    dt = gt.loadRes(json.load(f))
            else:
                dt = gt.loadRes(spec["results"])
        record["stdout"]["loadRes"], buf = _norm(buf.getvalue()), io.StringIO()
        res_ids = sorted(dt.anns)
        record["results_derived"] = [_derived(dt.anns[i], True) for i in res_ids[:spec.get("n_derived", N_DERIVED)]]
        record["results_avg_area"] = [float(dt.anns[i]["avg_area"]) for i in res_ids]
        record["types"] = {"result_area": type(dt.anns[res_ids[0]]["areas"][0]).__name__ if res_ids else None}
        stage = "YTVOSeval"
        with contextlib.redirect_stdout(buf):
            E = YTVOSeval(gt, dt, spec["iouType"])
            for k, v in spec.get("params", {}).items():
                setattr(E.params, k, v)
        stage = "evaluate"
        with contextlib.redirect_stdout(buf):
            E.evaluate()
        record["stdout"]["evaluate"], buf = _norm(buf.getvalue()), io.StringIO()
        record["params"] = {"vidIds": [int(x) for x in E.params.vidIds], "catIds": [int(x) for x in E.params.catIds],
                            "maxDets": [int(x) for x in E.params.maxDets], "useCats": int(E.params.useCats),
                            "iouThrs": _float_list(E.params.iouThrs), "recThrs": _float_list(E.params.recThrs),
                            "areaRng": [_float_list(a) for a in E.params.areaRng], "iouType": E.params.iouType}
        record["ious"] = []
        for (v, c), m in E.ious.items():
            kind = type(m).__name__
            arr = np.asarray(m, dtype=float)
            record["ious"].append({"video_id": int(v), "category_id": int(c), "kind": kind,
                                   "shape": list(arr.shape) if kind == "ndarray" else [len(m)],
                                   "values": arr.ravel().tolist()})
        gts = [a for key in sorted(E._gts) for a in E._gts[key]]
        record["gt_avg_area"] = {str(a["id"]): float(a["avg_area"]) for a in gts if "avg_area" in a}
        record["gt_derived"] = [_derived(a, True) for a in sorted(gts, key=lambda a: a["id"])[:spec.get("n_derived", N_DERIVED)]]
        record["evalImgs"] = [_compact_eval_img(e, np) for e in E.evalImgs]
        first = next((e for e in E.evalImgs if e is not None), None)
        record["types"]["evalImgs"] = _types_of_eval_img(first) if first else None
        stage = "accumulate"
        with contextlib.redirect_stdout(buf):
            E.accumulate()
        record["stdout"]["accumulate"], buf = _norm(buf.getvalue()), io.StringIO()
        np.savez_compressed(spec["npz"], precision=E.eval["precision"], recall=E.eval["recall"],
                            scores=E.eval["scores"])
        record["counts"] = [int(x) for x in E.eval["counts"]]
        stage = "summarize"
        with contextlib.redirect_stdout(buf):
            E.summarize()
        record["stdout"]["summarize"], buf = _norm(buf.getvalue()), io.StringIO()
        record["stats"] = _float_list(E.stats)
        record["types"]["stats"] = type(E.stats).__name__ + f"[{E.stats.dtype}]"
    except BaseException as exc:  # what the official code raises is the record
        record["stdout"][stage] = _norm(buf.getvalue())
        tb = traceback.extract_tb(exc.__traceback__)
        record["error"] = {"stage": stage, "class": type(exc).__name__, "message": str(exc),
                           "where": f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno} {tb[-1].line}"
                           if tb else None}
    record["official"] = {"python": sys.version.split()[0], "numpy": np.__version__,
                          "pycocotools": os.path.dirname(pycocotools.__file__)}
    record["official"]["sha256"] = {
        f: hashlib.sha256(open(os.path.join(record["official"]["pycocotools"], f), "rb").read()).hexdigest()
        for f in ("ytvos.py", "ytvoseval.py", "mask.py", "boundary_utils.py")
        if os.path.exists(os.path.join(record["official"]["pycocotools"], f))}
    return record


# ---------------------------------------------------------------------------
# driver: executed by the project's Python
# ---------------------------------------------------------------------------

def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _write_gz(path, obj):
    data = obj.encode() if isinstance(obj, str) else json.dumps(obj, separators=(",", ":")).encode()
    with gzip.GzipFile(path, "wb", mtime=0) as f:
        f.write(data)


def _write_npz(path, arrays):
    """``np.savez_compressed`` with fixed member times: the same arrays, the same bytes."""
    import zipfile

    import numpy as np

    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name in sorted(arrays):
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arrays[name]), allow_pickle=False)
            z.writestr(info, buf.getvalue())


def _runs_for(case, suspect):
    """The evaluations recorded for a case: (name, fork, spec)."""
    runs = [("ytvos_segm", "ytvos", {"iouType": "segm"}),
            ("hq_segm", "hq", {"iouType": "segm"}),
            ("hq_boundary_0.02", "hq", {"iouType": "boundary", "get_boundary": True, "dilation_ratio": 0.02}),
            (f"hq_boundary_{OTHER_RATIO}", "hq",
             {"iouType": "boundary", "get_boundary": True, "dilation_ratio": OTHER_RATIO})]
    if suspect:
        runs = runs[:3]
    if case == "crowds":
        runs += [("ytvos_segm_usecats0", "ytvos", {"iouType": "segm", "params": {"useCats": 0}}),
                 ("hq_boundary_0.02_usecats0", "hq", {"iouType": "boundary", "get_boundary": True,
                                                      "dilation_ratio": 0.02, "params": {"useCats": 0}})]
    if case == "ties_many":
        runs += [("ytvos_segm_maxdets", "ytvos", {"iouType": "segm", "params": {"maxDets": [1, 5, 50]}}),
                 ("hq_boundary_0.02_maxdets", "hq", {"iouType": "boundary", "get_boundary": True,
                                                     "dilation_ratio": 0.02, "params": {"maxDets": [1, 5, 50]}})]
    if case == "lifecycle":
        runs += [("ytvos_bbox", "ytvos", {"iouType": "bbox"}),
                 ("hq_bbox", "hq", {"iouType": "bbox"}),
                 ("ytvos_segm_results_list", "ytvos", {"iouType": "segm", "results_as_list": True}),
                 ("hq_boundary_results_list", "hq", {"iouType": "boundary", "get_boundary": True,
                                                     "dilation_ratio": 0.02, "results_as_list": True})]
    return runs


def main(argv):
    from boundary_api.video import synthetic_vis as sv

    pythons = {"ytvos": os.environ.get("BOUNDARY_API_YTVOS_PYTHON"),
               "hq": os.environ.get("BOUNDARY_API_HQYTVIS_PYTHON")}
    missing = [k for k, v in (("BOUNDARY_API_YTVOS_PYTHON", pythons["ytvos"]),
                              ("BOUNDARY_API_HQYTVIS_PYTHON", pythons["hq"])) if not v]
    if missing:
        print(f"make_vis_golden: set {' and '.join(missing)} to the Python of the official fork's "
              "environment (tests/data/video/README.md)", file=sys.stderr)
        return 2
    commits = {"ytvos": os.environ.get("BOUNDARY_API_YTVOS_COMMIT"),
               "hq": os.environ.get("BOUNDARY_API_HQYTVIS_COMMIT")}
    cases = {name: {"gt": None, "results": None, "suspect": False, "seed": 0} for name in sv.SCENARIOS}
    for name in cases:
        cases[name]["gt"], cases[name]["results"] = sv.scenario(name, seed=0)
    for name, c in sv.suspect_inputs(seed=0).items():
        cases["suspect_" + name] = {"gt": c["gt"], "results": c["results"], "suspect": True, "seed": 0,
                                    "note": c["note"]}
    wanted = argv or list(cases)
    unknown = [w for w in wanted if w not in cases]
    if unknown:
        print(f"make_vis_golden: unknown case(s) {unknown}; known: {list(cases)}", file=sys.stderr)
        return 2
    os.makedirs(OUT, exist_ok=True)
    import numpy as np

    for name in wanted:
        case = cases[name]
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        _write_gz(os.path.join(folder, "gt.json.gz"), case["gt"])
        _write_gz(os.path.join(folder, "results.json.gz"), case["results"])
        golden = {"case": name, "generator": {
            "function": "suspect_inputs" if case["suspect"] else "scenario",
            "name": name[len("suspect_"):] if case["suspect"] else name, "seed": case["seed"],
            "gt_sha256": hashlib.sha256(case["gt"].encode() if isinstance(case["gt"], str)
                                        else _canonical(case["gt"])).hexdigest(),
            "results_sha256": hashlib.sha256(case["results"].encode() if isinstance(case["results"], str)
                                             else _canonical(case["results"])).hexdigest()},
            "note": case.get("note"), "provenance": {"ytvos_commit": commits["ytvos"],
                                                    "hqytvis_commit": commits["hq"]},
            "runs": {}}
        arrays = {}
        with tempfile.TemporaryDirectory() as tmp:
            gt_path, res_path = os.path.join(tmp, "gt.json"), os.path.join(tmp, "results.json")
            for path, obj in ((gt_path, case["gt"]), (res_path, case["results"])):
                with open(path, "w") as f:
                    f.write(obj if isinstance(obj, str) else json.dumps(obj))
            for run_name, fork, spec in _runs_for(name[len("suspect_"):] if case["suspect"] else name,
                                                  case["suspect"]):
                spec = dict(spec, gt=gt_path, results=res_path, npz=os.path.join(tmp, run_name + ".npz"),
                            n_derived=10 ** 9 if len(case["results"]) <= 60 else N_DERIVED)
                spec_path = os.path.join(tmp, "spec.json")
                with open(spec_path, "w") as f:
                    json.dump(spec, f)
                proc = subprocess.run([pythons[fork], os.path.abspath(__file__), "--run", spec_path],
                                      capture_output=True, text=True, cwd=tmp)
                if proc.returncode != 0:
                    print(proc.stderr, file=sys.stderr)
                    raise SystemExit(f"make_vis_golden: the runner failed on {name} / {run_name}")
                record = json.loads(proc.stdout.splitlines()[-1])
                # (stderr: at most the warnings of an interpreter's exit, such as HQ-YTVIS'
                # Pool left open when a worker raised; not recorded: paths and addresses)
                if os.path.exists(spec["npz"]):
                    with np.load(spec["npz"]) as z:
                        for k in z.files:
                            arrays[f"{run_name}/{k}"] = z[k]
                golden["runs"][run_name] = record
                err = record["error"]
                print(f"{name:40s} {run_name:28s} "
                      + (f"{err['stage']}: {err['class']}: {err['message'][:60]}" if err
                         else f"AP {record['stats'][0]:.4f}"))
        _check_hq_segm(golden, arrays)
        _write_gz(os.path.join(folder, "golden.json.gz"), golden)
        npz = os.path.join(folder, "eval.npz")
        if arrays:
            _write_npz(npz, arrays)
        elif os.path.exists(npz):
            os.remove(npz)
    return 0


def _check_hq_segm(golden, arrays):
    """Record whether HQ-YTVIS' segm equals youtubevos' (every array and entry)."""
    import numpy as np

    a, b = golden["runs"].get("ytvos_segm"), golden["runs"].get("hq_segm")
    if not a or not b:
        return
    def err(r):  # the class, message and step (the line numbers differ between the forks)
        return r["error"] and {k: r["error"][k] for k in ("stage", "class", "message")}

    same = err(a) == err(b) and all(a.get(k) == b.get(k) for k in (
        "stats", "ious", "evalImgs", "gt_avg_area", "results_avg_area"))
    same = same and all(np.array_equal(arrays.get(f"ytvos_segm/{k}"), arrays.get(f"hq_segm/{k}"))
                        if f"ytvos_segm/{k}" in arrays else f"hq_segm/{k}" not in arrays
                        for k in ("precision", "recall", "scores"))
    golden["hq_segm_equals_ytvos_segm"] = bool(same)
    if same:  # keep one copy: the HQ run's bulky records are youtubevos'
        for k in ("ious", "evalImgs", "gt_avg_area", "gt_derived", "results_derived", "results_avg_area"):
            b.pop(k, None)
        b["same_as"] = "ytvos_segm"
        for k in ("precision", "recall", "scores"):
            arrays.pop(f"hq_segm/{k}", None)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--run":
        with open(sys.argv[2]) as f:
            _spec = json.load(f)
        print(json.dumps(run_official(_spec)))
        sys.exit(0)
    sys.exit(main(sys.argv[1:]))
