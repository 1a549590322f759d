"""--json-out: one schema for COCO, LVIS, panoptic and the demo (issue 9, item 12)."""
import contextlib
import importlib.metadata
import io
import json
import math
import os
import shutil

import numpy as np

import boundary_api
from boundary_api import COCO, COCOeval, LVISEval, pq_compute
from boundary_api.cli import main
from boundary_api.instance.results import COCO_STAT_NAMES, per_category_metrics
from conftest import COCO_DT, COCO_GT, DATA, LVIS_DT, LVIS_GT, golden_cases

PAN = os.path.join(DATA, "panoptic")
PER_CAT = ["AP", "AP50", "AP75", "APs", "APm", "APl"]


def strict_load(path):
    """json.load that fails on NaN/Infinity (not JSON)."""
    def refuse(name):
        raise AssertionError(f"{path} holds {name}")
    with open(path) as f:
        return json.load(f, parse_constant=refuse)


def same(json_value, value):
    if value is None or (isinstance(value, float) and (math.isnan(value) or value == -1)):
        return json_value is None
    return json_value == value


def test_version_is_the_distribution_version():
    assert boundary_api.__version__ == importlib.metadata.version("boundary-api")


def test_coco_document(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--json-out", str(out), "-q"]) == 0
    doc = strict_load(out)
    assert list(doc) == ["boundary_api_version", "settings", *COCO_STAT_NAMES, "per_category"]
    assert doc["boundary_api_version"] == boundary_api.__version__
    assert doc["settings"] == {"kind": "coco", "iou_type": "boundary", "dilation_ratio": 0.02, "max_dets": 100, "rec_thrs": 101,
                               "inputs": {"--gt": COCO_GT, "--dt": COCO_DT}}
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(COCO_DT), "boundary")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    for name, value in zip(COCO_STAT_NAMES, ev.stats):
        assert same(doc[name], float(value)), name
    expected = per_category_metrics(ev)
    assert list(doc["per_category"]) == [str(c) for c in ev.params.catIds]
    undefined = 0
    for cat_id, row in expected.items():
        entry = doc["per_category"][str(cat_id)]
        assert list(entry) == ["id", "name", *PER_CAT]
        assert entry["id"] == cat_id and entry["name"] == gt.cats[cat_id]["name"]
        for name in PER_CAT:
            assert same(entry[name], row[name]), (cat_id, name)
        undefined += entry["AP"] is None
    assert 0 < undefined < len(expected)  # categories without ground truth are null, not NaN


def test_segm_document_has_no_dilation_ratio(tmp_path, capsys):
    out = tmp_path / "m.json"
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", "segm", "--dilation-ratio", "0.05",
                 "--json-out", str(out), "-q"]) == 0
    settings = strict_load(out)["settings"]
    assert settings["iou_type"] == "segm" and settings["dilation_ratio"] is None


def test_categories_with_one_name_keep_both(tmp_path, capsys):
    gt = json.load(open(COCO_GT))
    used = sorted({a["category_id"] for a in gt["annotations"]})
    a, b = used[0], used[1]
    for c in gt["categories"]:
        if c["id"] in (a, b):
            c["name"] = "twin"
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    out = tmp_path / "m.json"
    assert main(["--gt", str(path), "--dt", COCO_DT, "--json-out", str(out), "-q"]) == 0
    per_cat = strict_load(out)["per_category"]
    assert per_cat[str(a)]["name"] == per_cat[str(b)]["name"] == "twin"
    assert per_cat[str(a)]["AP"] is not None and per_cat[str(b)]["AP"] is not None
    assert len(per_cat) == len(gt["categories"])


def test_lvis_document(tmp_path, capsys):
    out = tmp_path / "lvis.json"
    assert main(["--gt", LVIS_GT, "--dt", LVIS_DT, "--json-out", str(out), "-q"]) == 0
    doc = strict_load(out)
    case = next(c for c in golden_cases("instance_eval.json", "lvis")
                if c["iou_type"] == "boundary" and c.get("dilation_ratio") == 0.02)
    assert list(doc) == ["boundary_api_version", "settings", *case["results"], "per_category"]
    np.testing.assert_allclose([doc[k] for k in case["results"]], list(case["results"].values()), rtol=0, atol=1e-12)
    assert doc["settings"] == {"kind": "lvis", "iou_type": "boundary", "dilation_ratio": 0.02, "max_dets": 300, "rec_thrs": 101,
                               "inputs": {"--gt": LVIS_GT, "--dt": LVIS_DT}}
    ev = LVISEval(LVIS_GT, LVIS_DT, iou_type="boundary")
    ev.run()
    expected = per_category_metrics(ev)
    cats = {c["id"]: c for c in json.load(open(LVIS_GT))["categories"]}
    for cat_id, row in expected.items():
        entry = doc["per_category"][str(cat_id)]
        assert list(entry) == ["id", "name", "frequency", *PER_CAT]
        assert entry["frequency"] == cats[cat_id]["frequency"] and entry["name"] == cats[cat_id]["name"]
        for name in PER_CAT:
            assert same(entry[name], row[name]), (cat_id, name)
    # APr is the mean AP of the rare categories with a defined AP (lvis' own rule)
    rare = [e["AP"] for e in doc["per_category"].values() if e["frequency"] == "r" and e["AP"] is not None]
    assert abs(np.mean(rare) - doc["APr"]) <= 1e-12


def test_panoptic_document(tmp_path, capsys):
    pan = tmp_path / "pan"
    shutil.copytree(PAN, pan)
    gt_json = pan / "panoptic_examples.json"
    gt = json.loads(gt_json.read_text())
    out = tmp_path / "pq.json"
    argv = ["panoptic", "--gt-json", str(gt_json), "--pred-json", str(pan / "pred_shift3.json"),
            "--json-out", str(out), "--threads", "1"]
    assert main(argv) == 0
    doc = strict_load(out)
    names = ["PQ", "SQ", "RQ", "PQ_th", "SQ_th", "RQ_th", "PQ_st", "SQ_st", "RQ_st", "N", "N_th", "N_st"]
    assert list(doc) == ["boundary_api_version", "settings", *names, "per_category"]
    assert doc["settings"] == {"kind": "panoptic", "iou_type": "boundary", "dilation_ratio": 0.02,
                               "inputs": {"--gt-json": str(gt_json), "--pred-json": str(pan / "pred_shift3.json")}}
    with contextlib.redirect_stdout(io.StringIO()):
        res = pq_compute(str(gt_json), str(pan / "pred_shift3.json"), iou_type="boundary", num_threads=1)
    for group, suffix in (("All", ""), ("Things", "_th"), ("Stuff", "_st")):
        assert doc["N" + suffix] == res[group]["n"] > 0
        for k in ("pq", "sq", "rq"):
            assert doc[k.upper() + suffix] == res[group][k]
    assert list(doc["per_category"]) == [str(c["id"]) for c in gt["categories"]]
    defined = 0
    for c in gt["categories"]:
        entry = doc["per_category"][str(c["id"])]
        r = res["per_class"][c["id"]]
        assert entry["id"] == c["id"] and entry["name"] == c["name"] and entry["isthing"] == c["isthing"]
        assert (entry["tp"], entry["fp"], entry["fn"]) == (r["tp"], r["fp"], r["fn"])
        if r["tp"] + r["fp"] + r["fn"] == 0:  # undefined: null, where pq_compute says 0 as panopticapi does
            assert entry["PQ"] is entry["SQ"] is entry["RQ"] is None and r["pq"] == 0.0
        else:
            defined += 1
            assert (entry["PQ"], entry["SQ"], entry["RQ"]) == (r["pq"], r["sq"], r["rq"])
    assert defined == res["All"]["n"]
    # a group without categories (no stuff at all): null, not pq_compute's 0
    for c in gt["categories"]:
        c["isthing"] = 1
    gt_json.write_text(json.dumps(gt))
    out.unlink()
    assert main(argv + ["-q"]) == 0
    doc = strict_load(out)
    assert doc["N_st"] == 0 and doc["PQ_st"] is doc["SQ_st"] is doc["RQ_st"] is None
    assert doc["PQ_th"] == doc["PQ"]


def test_demo_document(tmp_path, capsys):
    out = tmp_path / "demo.json"
    assert main(["--json-out", str(out), "-q"]) == 0
    doc = strict_load(out)
    assert list(doc) == ["boundary_api_version", "settings", *COCO_STAT_NAMES, "per_category", "segm"]
    assert doc["settings"]["kind"] == "demo" and doc["settings"]["max_dets"] == 100
    assert set(doc["settings"]["inputs"]) == {"--gt", "--dt"}
    assert list(doc["segm"]) == list(COCO_STAT_NAMES)
    assert doc["AP"] < doc["segm"]["AP"]
    assert [e["name"] for e in doc["per_category"].values()] == ["ellipse", "rectangle", "star"]


def test_video_documents(tmp_path, capsys):
    """vos (DAVIS, SA-V) and vis write the common header, then their numbers."""
    from boundary_api.video import synthetic, synthetic_vis

    d = synthetic.write_demo("davis", tmp_path / "d")
    s = synthetic.write_demo("sav", tmp_path / "s")
    v = synthetic_vis.write_demo(tmp_path / "v")
    runs = {
        "davis": ["vos", "--davis-root", d["davis_root"], "--results", d["results"], "--metric", "J", "F", "B"],
        "sav": ["vos", "--protocol", "sav", "--gt-root", s["gt_root"], "--dt-root", s["pred_root"]],
        "ytvis": ["vis", "--gt", v["gt"], "--dt", v["dt"]],
    }
    for kind, argv in runs.items():
        out = tmp_path / f"{kind}.json"
        assert main(argv + ["--json-out", str(out), "-q"]) == 0
        doc = strict_load(out)
        assert list(doc)[:2] == ["boundary_api_version", "settings"]
        assert doc["boundary_api_version"] == boundary_api.__version__
        assert doc["settings"]["kind"] == kind and list(doc["settings"])[-1] == "inputs"
        if kind == "davis":
            assert doc["settings"]["dilation_ratio"] == 0.02 and "B-Mean" in doc and doc["per_object"]
        elif kind == "sav":
            assert doc["settings"]["dilation_ratio"] is None and 0 <= doc["J&F"] <= 100
        else:
            assert list(doc)[2:14] == list(COCO_STAT_NAMES) and doc["per_category"]
    capsys.readouterr()
