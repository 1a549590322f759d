"""Make tests/data/video/fork_loading.json: what youtubevos/cocoapi does with the
YouTube-VIS files and calls of issue 46 (official files without ``annotations``, without
``categories``, tracks without ``areas`` / ``iscrowd``, results without or with a
non-numeric ``score`` or with COCO's ``segmentation``, ``params.imgIds`` as Mask2Former's
``_evaluate_predictions_on_coco`` sets it, and ``params.vidIds``).

The inputs are generated with :func:`boundary_api.video.synthetic_vis.scenario` (seeded)
and changed as :data:`CASES` says; the fork runs in its own Python
(``BOUNDARY_API_YTVOS_PYTHON``, built as tests/data/video/README.md says)::

    BOUNDARY_API_YTVOS_PYTHON=/work/venvs/official-ytvos/bin/python \\
    BOUNDARY_API_YTVOS_COMMIT=f3f9948a1f749fb95797f31a9616872811eea559 \\
    python tests/video/make_fork_loading_golden.py

``python make_fork_loading_golden.py --run DIR`` is the part the fork's Python executes
(standard library, NumPy and the fork's ``pycocotools`` only).
"""
import contextlib
import copy
import io
import json
import os
import subprocess
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(os.path.dirname(HERE), "data", "video", "fork_loading.json")
SCENARIO, SEED = "lifecycle", 7


def _drop(key):
    def change(gt, results):
        gt.pop(key)
    return change


def _drop_track_field(key):
    def change(gt, results):
        for ann in gt["annotations"]:
            ann.pop(key)
    return change


def _score(value):
    def change(gt, results):
        if value is KeyError:
            results[1].pop("score")
        else:
            results[1]["score"] = value
    return change


def _coco_field(gt, results):
    for r in results:
        r["segmentation"] = r.pop("segmentations")


#: case -> (how the generated ground truth and results are changed, evaluation parameters)
CASES = {
    "valid": (None, {}),
    "no_annotations": (_drop("annotations"), {}),
    "no_categories": (_drop("categories"), {}),
    "no_areas": (_drop_track_field("areas"), {}),
    "no_iscrowd": (_drop_track_field("iscrowd"), {}),
    "no_score": (_score(KeyError), {}),
    "string_score": (_score("0.5"), {}),
    "null_score": (_score(None), {}),
    "coco_segmentation": (_coco_field, {}),
    "img_ids": (None, {"imgIds": "first2"}),
    "vid_ids": (None, {"vidIds": "first2"}),
}


def inputs(case):
    """The ground truth and results of ``case`` (dicts), generated and changed."""
    from boundary_api.video import synthetic_vis

    gt, results = synthetic_vis.scenario(SCENARIO, seed=SEED)
    gt, results = copy.deepcopy(gt), copy.deepcopy(results)
    change = CASES[case][0]
    if change is not None:
        change(gt, results)
    return gt, results


def first2(gt):
    return sorted(v["id"] for v in gt["videos"])[:2]


# ---------------------------------------------------------------------------
# runner: executed by the fork's Python
# ---------------------------------------------------------------------------

def _run(folder):
    import numpy as np
    from pycocotools.ytvos import YTVOS
    from pycocotools.ytvoseval import YTVOSeval

    spec = json.load(open(os.path.join(folder, "spec.json")))
    out = {}
    for case, params in spec.items():
        gt_path, dt_path = os.path.join(folder, case, "gt.json"), os.path.join(folder, case, "results.json")
        record, stage = {}, "YTVOS"
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                gt = YTVOS(gt_path)
                record["annotations_in_dataset"] = "annotations" in gt.dataset
                stage = "loadRes"
                dt = gt.loadRes(dt_path)
                stage = "YTVOSeval"
                ev = YTVOSeval(gt, dt)
                ev.params.maxDets = [1, 10, 100]
                for name, value in params.items():
                    setattr(ev.params, name, value)
                stage = "evaluate"
                ev.evaluate()
                stage = "accumulate"
                ev.accumulate()
                stage = "summarize"
                ev.summarize()
            record["stats"] = [float(x) for x in ev.stats]
            record["vidIds"] = [int(v) for v in ev.params.vidIds]
            precision = ev.eval["precision"]
            record["per_category_ap"] = []
            for k in range(precision.shape[2]):
                p = precision[:, :, k, 0, -1]
                p = p[p > -1]
                record["per_category_ap"].append(float(np.mean(p)) if p.size else None)
        except Exception as exc:  # noqa: BLE001 - recorded
            tb = traceback.extract_tb(exc.__traceback__)[-1]
            record["error"] = {"stage": stage, "class": type(exc).__name__, "message": str(exc),
                               "where": f"{os.path.basename(tb.filename)}:{tb.lineno} {tb.line}"}
        out[case] = record
    json.dump(out, sys.stdout)


# ---------------------------------------------------------------------------
# maker: executed with boundary_api installed
# ---------------------------------------------------------------------------

def _canonical_sha(obj):
    import hashlib

    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def make():
    python = os.environ.get("BOUNDARY_API_YTVOS_PYTHON")
    if not python:
        sys.exit("set BOUNDARY_API_YTVOS_PYTHON to a Python with youtubevos/cocoapi installed")
    spec, hashes = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for case, (_, params) in CASES.items():
            gt, results = inputs(case)
            os.makedirs(os.path.join(tmp, case))
            json.dump(gt, open(os.path.join(tmp, case, "gt.json"), "w"))
            json.dump(results, open(os.path.join(tmp, case, "results.json"), "w"))
            spec[case] = {k: (first2(gt) if v == "first2" else v) for k, v in params.items()}
            hashes[case] = _canonical_sha([gt, results])
        json.dump(spec, open(os.path.join(tmp, "spec.json"), "w"))
        proc = subprocess.run([python, os.path.abspath(__file__), "--run", tmp], capture_output=True, text=True,
                              cwd=tmp)
        if proc.returncode:
            sys.exit(proc.stderr)
        runs = json.loads(proc.stdout)
        versions = subprocess.run([python, "-c", "import numpy, sys; print(sys.version.split()[0], numpy.__version__)"],
                                  capture_output=True, text=True).stdout.split()
    doc = {"about": "youtubevos/cocoapi on the cases of tests/video/make_fork_loading_golden.py",
           "official": {"repository": "youtubevos/cocoapi",
                        "commit": os.environ.get("BOUNDARY_API_YTVOS_COMMIT", "unknown"),
                        "python": versions[0], "numpy": versions[1]},
           "generator": {"scenario": SCENARIO, "seed": SEED, "sha256": hashes},
           "params": spec, "runs": runs}
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=False)
        f.write("\n")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--run":
        _run(sys.argv[2])
    else:
        make()
