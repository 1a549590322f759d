"""Child side of ``run_all.py``: one evaluation by one tool in this process.

    python benchmarks/_run_one.py '<json spec>'

The spec names the workload kind (``coco``, ``lvis``, ``panoptic``), the
files, the metric (``boundary``, ``segm``, ``bbox``, ``pq``, ``bpq``), the
tool (``boundary_api``, ``vernier``, ``hotcoco``, ``faster``, ``ultrafast``, ``reference``
= pycocotools for COCO, lvis for LVIS) and ``threads`` (an int; the parent
also sets the thread environment variables).  Only the tool measured is
imported, inside its function, so imports and memory are that tool's.

Everything from JSON on disk to the summary happens here: reading and
parsing the files, evaluation, accumulation and the printed summary (the
tools' own prints go to this process' stdout, as in real use).  The last
line is ``@@RESULT@@ {json}`` with the statistics in a canonical order
(COCO: the 12 ``stats``; LVIS: the 13 ``get_results()`` numbers in
``LVIS_KEYS`` order; panoptic: PQ, SQ, RQ of All, Things, Stuff) and the
in-process phase times.  Wall time, peak RSS and CPU time are measured by
the parent.
"""
from __future__ import annotations

import time

T_START = time.perf_counter()

import json  # noqa: E402
import sys  # noqa: E402

from _child import (FASTER_LVIS_INDEX, LVIS_KEYS, MARKER, Timer, faster_lvis_results,  # noqa: E402
                    import_lvis, run_eval)

PANOPTIC_KEYS = [f"{g}.{m}" for g in ("All", "Things", "Stuff") for m in ("pq", "sq", "rq")]


def _load(t, COCO, s, load_res="loadRes"):
    """The ground truth and the results of spec ``s`` with a COCO-like class
    (``load_res`` its loadRes), then the lap "load"."""
    gt = COCO(s["gt"])
    dt = getattr(gt, load_res)(s["dt"])
    t.lap("load")
    return gt, dt


def _faster_kw(s):
    kw = {"boundary_cpu_count": s["threads"], "rle_iou_max_workers": s["threads"]}
    if s["metric"] == "boundary":
        kw["boundary_dilation_ratio"] = s["dilation_ratio"]
    return kw


# --------------------------------------------------------------------------
# COCO (instances) workloads
# --------------------------------------------------------------------------
def coco_boundary_api(s, t):
    from boundary_api import COCO, COCOeval

    t.lap("import")
    gt, dt = _load(t, COCO, s)
    ev = COCOeval(gt, dt, iouType=s["metric"], dilation_ratio=s["dilation_ratio"], num_threads=s["threads"])
    return list(run_eval(t, ev).stats)


def coco_vernier(s, t):
    from vernier.instance import Bbox, Boundary, Evaluator, Segm

    t.lap("import")
    with open(s["gt"], "rb") as f:
        gt = f.read()
    with open(s["dt"], "rb") as f:
        dt = f.read()
    t.lap("load")
    iou = {"bbox": Bbox(), "segm": Segm(), "boundary": Boundary(dilation_ratio=s["dilation_ratio"])}[s["metric"]]
    summary = Evaluator(iou=iou, parity_mode="strict").evaluate(gt, dt, num_threads=s["threads"])
    t.lap("evaluate")
    print("\n".join(summary.pretty_lines()))
    return list(summary.stats)


def coco_hotcoco(s, t):
    import hotcoco

    t.lap("import")
    gt, dt = _load(t, hotcoco.COCO, s, "load_res")
    return list(run_eval(t, hotcoco.COCOeval(gt, dt, s["metric"])).stats)


def coco_faster(s, t):
    from faster_coco_eval import COCO, COCOeval_faster

    t.lap("import")
    gt, dt = _load(t, COCO, s)
    return list(run_eval(t, COCOeval_faster(gt, dt, iouType=s["metric"], **_faster_kw(s))).stats)[:12]


def coco_ultrafast(s, t):
    from ultrafast_pycocotools.coco import COCO
    from ultrafast_pycocotools.cocoeval import COCOeval

    t.lap("import")
    gt, dt = _load(t, COCO, s)
    return list(run_eval(t, COCOeval(gt, dt, s["metric"])).stats)


def coco_reference(s, t):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval

    t.lap("import")
    gt, dt = _load(t, COCO, s)
    return list(run_eval(t, COCOeval(gt, dt, s["metric"])).stats)


# --------------------------------------------------------------------------
# LVIS workloads (federated rules, 300 detections per image)
# --------------------------------------------------------------------------
def _lvis_stats(ev):
    res = ev.get_results()
    return [res[k] for k in LVIS_KEYS]


def lvis_boundary_api(s, t):
    from boundary_api import LVIS, LVISEval, LVISResults

    t.lap("import")
    gt = LVIS(s["gt"])
    dt = LVISResults(gt, s["dt"], max_dets=300)
    t.lap("load")
    ev = LVISEval(gt, dt, iou_type=s["metric"], dilation_ratio=s["dilation_ratio"], num_threads=s["threads"])
    return _lvis_stats(run_eval(t, ev, after=["print_results"]))


def lvis_vernier(s, t):
    from vernier.instance import CocoDataset
    from vernier import _core

    t.lap("import")
    with open(s["gt"], "rb") as f:
        gt = CocoDataset.from_lvis_json(f.read())
    with open(s["dt"], "rb") as f:
        dt = f.read()
    t.lap("load")
    # vernier's public Evaluator.evaluate has only the COCO 12-stat plan; its
    # LVIS summary is the grid -> accumulate -> summarize_lvis route
    kw = dict(parity_mode="strict", max_dets_per_image=300, use_cats=True, num_threads=s["threads"])
    if s["metric"] == "boundary":
        grid = _core.evaluate_boundary_grid(gt, dt, dilation_ratio=s["dilation_ratio"], **kw)
    else:
        grid = getattr(_core, f"evaluate_{s['metric']}_grid")(gt, dt, **kw)
    t.lap("evaluate")
    summary = grid.accumulate([300]).summarize_lvis(gt, [300])
    print("\n".join(summary.pretty_lines()))
    t.lap("accumulate+summarize")
    return list(summary.stats)


def lvis_hotcoco(s, t):
    import hotcoco

    t.lap("import")
    gt = hotcoco.LVIS(s["gt"])
    dt = hotcoco.LVISResults(gt, s["dt"], max_dets=300)
    t.lap("load")
    ev = hotcoco.LVISEval(gt, dt, s["metric"])
    ev.run()
    t.lap("evaluate")
    return _lvis_stats(ev)


def lvis_faster(s, t):
    from faster_coco_eval import COCO, COCOeval_faster

    t.lap("import")
    gt = COCO(s["gt"])
    dt = gt.loadRes(faster_lvis_results(gt, s["dt"], 300))
    t.lap("load")
    ev = COCOeval_faster(gt, dt, iouType=s["metric"], lvis_style=True, **_faster_kw(s))
    ev.params.maxDets = [300]
    run_eval(t, ev)
    return [ev.all_stats[i] for i in FASTER_LVIS_INDEX]


def lvis_ultrafast(s, t):
    # ultrafast-pycocotools' LVIS mode: its COCOeval with lvis_style=True (the
    # official federated protocol: 300 results per image, negative and
    # not-exhaustive category lists, frequency groups); its 13 stats are in
    # LVIS_KEYS order
    from ultrafast_pycocotools.coco import COCO
    from ultrafast_pycocotools.cocoeval import COCOeval

    t.lap("import")
    gt, dt = _load(t, COCO, s)
    return list(run_eval(t, COCOeval(gt, dt, s["metric"], lvis_style=True)).stats)


def lvis_reference(s, t):
    LVIS, LVISEval, LVISResults = import_lvis()
    t.lap("import")
    gt = LVIS(s["gt"])
    dt = LVISResults(gt, s["dt"], max_dets=300)
    t.lap("load")
    return _lvis_stats(run_eval(t, LVISEval(gt, dt, s["metric"]), after=["print_results"]))


# --------------------------------------------------------------------------
# panoptic workloads
# --------------------------------------------------------------------------
def _panoptic_stats(res):
    return [res[g][m] for g in ("All", "Things", "Stuff") for m in ("pq", "sq", "rq")]


def panoptic_boundary_api(s, t):
    from boundary_api.panoptic import pq_compute

    t.lap("import")
    res = pq_compute(s["gt"], s["dt"], s["gt_folder"], s["pred_folder"],
                     iou_type="boundary" if s["metric"] == "bpq" else "segm",
                     dilation_ratio=s["dilation_ratio"], num_threads=s["threads"])
    t.lap("evaluate")
    return _panoptic_stats(res)


def panoptic_vernier(s, t):
    import os

    from vernier.panoptic import Dataset, Evaluator, Predictions, decode_label_map_png

    t.lap("import")
    with open(s["gt"]) as f:
        gt = json.load(f)
    with open(s["dt"]) as f:
        pr = json.load(f)
    # vernier 0.5.4 has no file loader for panoptic sets: label maps decoded
    # with its own PNG helper, segments_info as JSON {image_id: [...]}
    gmaps = {a["image_id"]: decode_label_map_png(os.path.join(s["gt_folder"], a["file_name"]))
             for a in gt["annotations"]}
    pmaps = {a["image_id"]: decode_label_map_png(os.path.join(s["pred_folder"], a["file_name"]))
             for a in pr["annotations"]}
    ds = Dataset.from_arrays(gmaps, json.dumps({str(a["image_id"]): a["segments_info"]
                                                for a in gt["annotations"]}).encode(),
                             json.dumps(gt["categories"]).encode())
    pd = Predictions.from_arrays(pmaps, json.dumps({str(a["image_id"]): a["segments_info"]
                                                    for a in pr["annotations"]}).encode())
    t.lap("load")
    summary = Evaluator(parity_mode="strict", boundary=s["metric"] == "bpq",
                        dilation_ratio=s["dilation_ratio"]).evaluate(ds, pd, num_threads=s["threads"])
    t.lap("evaluate")
    res = summary.to_dict()
    print({k: res[k] for k in ("All", "Things", "Stuff")})
    return _panoptic_stats(res)


def panoptic_hotcoco(s, t):
    from hotcoco.panoptic import pq_compute

    t.lap("import")
    res = pq_compute(s["gt"], s["dt"], s["gt_folder"], s["pred_folder"])
    t.lap("evaluate")
    return _panoptic_stats(res)


RUNNERS = {
    ("coco", "boundary_api"): coco_boundary_api,
    ("coco", "vernier"): coco_vernier,
    ("coco", "hotcoco"): coco_hotcoco,
    ("coco", "faster"): coco_faster,
    ("coco", "ultrafast"): coco_ultrafast,
    ("coco", "reference"): coco_reference,
    ("lvis", "boundary_api"): lvis_boundary_api,
    ("lvis", "vernier"): lvis_vernier,
    ("lvis", "hotcoco"): lvis_hotcoco,
    ("lvis", "faster"): lvis_faster,
    ("lvis", "ultrafast"): lvis_ultrafast,
    ("lvis", "reference"): lvis_reference,
    ("panoptic", "boundary_api"): panoptic_boundary_api,
    ("panoptic", "vernier"): panoptic_vernier,
    ("panoptic", "hotcoco"): panoptic_hotcoco,
}
# ``baseline``: another build of boundary_api (run_all.py --baseline DIR puts it first on PYTHONPATH)
RUNNERS.update({(kind, "baseline"): fn for (kind, tool), fn in list(RUNNERS.items()) if tool == "boundary_api"})

#: metrics each tool computes, by workload kind (what run_all.py schedules)
SUPPORTS = {
    "boundary_api": {"coco": {"boundary", "segm", "bbox"}, "lvis": {"boundary", "segm", "bbox"},
                     "panoptic": {"pq", "bpq"}},
    "vernier": {"coco": {"boundary", "segm", "bbox"}, "lvis": {"boundary", "segm", "bbox"},
                "panoptic": {"pq", "bpq"}},
    "hotcoco": {"coco": {"segm", "bbox"}, "lvis": {"segm", "bbox"}, "panoptic": {"pq"}},
    "faster": {"coco": {"boundary", "segm", "bbox"}, "lvis": {"boundary", "segm", "bbox"}},
    "ultrafast": {"coco": {"segm", "bbox"}, "lvis": {"segm", "bbox"}},
    "baseline": {"coco": {"boundary", "segm", "bbox"}, "lvis": {"boundary", "segm", "bbox"},
                 "panoptic": {"pq", "bpq"}},
    "reference": {"coco": {"segm", "bbox"}, "lvis": {"segm", "bbox"}},
}


def main(arg: str) -> None:
    spec = json.loads(arg)
    t = Timer(T_START)
    stats = RUNNERS[(spec["kind"], spec["tool"])](spec, t)
    out = {"stats": [float(x) for x in stats], "phases": t.phases,
           "in_process": time.perf_counter() - T_START}
    sys.stdout.flush()
    print(MARKER + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
