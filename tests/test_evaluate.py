"""boundary_api.evaluate.evaluate_files: a COCO or LVIS ground truth and a results
file read, checked and evaluated by one call (what boundary-eval runs): the golden
numbers, the rules chosen from the ground truth, pipes, and one-line ValueErrors."""
import gzip
import json
import os
import threading

import numpy as np
import pytest

from boundary_api.evaluate import InstanceEvaluation, evaluate_files, table_title
from boundary_api.instance.results import COCO_STAT_NAMES, per_category_metrics
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT, golden_cases


def golden(kind, iou, ratio=None):
    for c in golden_cases("instance_eval.json", kind):
        if c["iou_type"] == iou and (ratio is None or c.get("dilation_ratio") == ratio):
            return c
    raise KeyError((kind, iou, ratio))


@pytest.mark.parametrize("iou, ratio", [("boundary", 0.02), ("boundary", 0.005), ("segm", None)])
def test_coco_numbers_are_the_golden_ones(iou, ratio, capsys):
    case = golden("coco", iou, ratio)
    result = evaluate_files(COCO_GT, COCO_DT, iou_type=iou, dilation_ratio=ratio or 0.02)
    assert isinstance(result, InstanceEvaluation)
    assert not result.lvis and result.kind == "coco" and result.max_dets == 100 and result.rec_thrs == 101
    assert list(result.metrics) == list(COCO_STAT_NAMES)
    np.testing.assert_allclose([result.metrics[k] for k in COCO_STAT_NAMES], case["stats"], rtol=0, atol=1e-12)
    assert result.seconds > 0
    out = capsys.readouterr().out
    assert "loading annotations into memory..." in out  # what pycocotools prints while loading
    assert "Average Precision" not in out  # the table is printed on demand only
    result.print_table()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 12 and lines[0].startswith(" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all")
    assert lines[0].endswith(f"= {case['stats'][0]:0.3f}")


def test_lvis_is_chosen_from_the_ground_truth():
    case = golden("lvis", "boundary", 0.02)
    result = evaluate_files(LVIS_GT, LVIS_DT)
    assert result.lvis and result.kind == "lvis" and result.max_dets == 300
    np.testing.assert_allclose([result.metrics[k] for k in case["results"]], list(case["results"].values()),
                               rtol=0, atol=1e-12)
    assert result.title == "LVIS Boundary AP (dilation ratio 0.02), up to 300 detections per image:"
    cats = json.load(open(LVIS_GT))["categories"]
    per_category = result.per_category
    assert len(per_category) == len(cats)
    first = cats[0]
    assert per_category[first["id"]]["name"] == first["name"]
    assert per_category[first["id"]]["frequency"] == first["frequency"]


def test_per_category_is_per_category_metrics_with_names():
    result = evaluate_files(COCO_GT, COCO_DT, iou_type="segm")
    rows = per_category_metrics(result.evaluator)
    names = {c["id"]: c["name"] for c in json.load(open(COCO_GT))["categories"]}
    assert list(result.per_category) == list(rows)
    for cat, row in rows.items():
        entry = result.per_category[cat]
        assert entry["name"] == names[cat] and "frequency" not in entry
        np.testing.assert_array_equal([entry[k] for k in row], list(row.values()))


def test_max_dets_and_rec_thrs_change_the_evaluation():
    result = evaluate_files(COCO_GT, COCO_DT, iou_type="segm", max_dets=10, rec_thrs=11)
    assert result.max_dets == 10 and list(result.evaluator.params.maxDets) == [1, 10, 10]
    assert len(result.evaluator.params.recThrs) == 11
    assert "AR10" in result.metrics and "AR100" not in result.metrics
    assert result.title == "COCO Mask AP, up to 10 detections per image:"


def test_lvis_false_forces_coco_rules():
    forced = evaluate_files(COCO_GT, COCO_DT, iou_type="segm", lvis=False)
    assert not forced.lvis and forced.metrics == evaluate_files(COCO_GT, COCO_DT, iou_type="segm").metrics
    # an LVIS ground truth lacks what COCO's rules need
    with pytest.raises(ValueError, match=f"{LVIS_GT}: annotation id 1 has no 'iscrowd'"):
        evaluate_files(LVIS_GT, LVIS_DT, iou_type="segm", lvis=False)


@pytest.mark.parametrize("gt, dt, iou", [(COCO_GT, COCO_DT, "segm"), (LVIS_GT, LVIS_DT, "boundary")])
def test_the_same_numbers_through_the_dict_path(monkeypatch, gt, dt, iou):
    """Files the column readers do not take are read as dicts: same numbers."""
    import boundary_api.coco.dataset as coco_dataset
    import boundary_api.instance._gt_columns as gt_columns

    fast = evaluate_files(gt, dt, iou_type=iou)
    assert fast.gt.__dict__.get("_gt_columns") is not None  # read as columns
    monkeypatch.setattr(coco_dataset, "load_ground_truth_columns", lambda *a, **k: None)
    monkeypatch.setattr(gt_columns, "load_ground_truth_columns", lambda *a, **k: None)
    slow = evaluate_files(gt, dt, iou_type=iou)
    assert slow.gt.__dict__.get("_gt_columns") is None and fast.lvis == slow.lvis
    assert slow.metrics == fast.metrics


def test_gzip_ground_truth(tmp_path):
    gz = tmp_path / "gt.json.gz"
    with open(COCO_GT, "rb") as src:
        gz.write_bytes(gzip.compress(src.read()))
    assert evaluate_files(str(gz), COCO_DT, iou_type="segm").metrics == \
        evaluate_files(COCO_GT, COCO_DT, iou_type="segm").metrics


def test_a_pipe_is_read_once(tmp_path):
    fifo = tmp_path / "dt.fifo"
    os.mkfifo(fifo)
    data = open(COCO_DT, "rb").read()

    def write():
        with open(fifo, "wb") as f:
            f.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        result = evaluate_files(COCO_GT, str(fifo), iou_type="segm")
    finally:
        writer.join(timeout=30)
    np.testing.assert_allclose([result.metrics[k] for k in COCO_STAT_NAMES], golden("coco", "segm")["stats"],
                               rtol=0, atol=1e-12)


# (Fixed AP of these 100 images: the warning that categories have fewer than 10,000 results)
@pytest.mark.filterwarnings("ignore:.* categories with results have fewer than 10000 detections")
@pytest.mark.parametrize("ap", ["standard", "fixed"])
def test_lvis_files_from_pipes(tmp_path, ap):
    """An LVIS ground truth and its results, each a FIFO read once: the numbers
    of the same files given by path (issue 31: the command line no longer copies
    pipes, the library reads them)."""
    want = evaluate_files(LVIS_GT, LVIS_DT, iou_type="segm", ap=ap).metrics
    fifos = []
    for name, src in (("gt.fifo", LVIS_GT), ("dt.fifo", LVIS_DT)):
        fifo = tmp_path / name
        os.mkfifo(fifo)
        fifos.append((str(fifo), open(src, "rb").read()))

    def write(path, data):
        with open(path, "wb") as f:
            f.write(data)

    writers = [threading.Thread(target=write, args=f) for f in fifos]
    for w in writers:
        w.start()
    try:
        got = evaluate_files(fifos[0][0], fifos[1][0], iou_type="segm", ap=ap)
    finally:
        for w in writers:
            w.join(timeout=30)
    assert got.lvis and got.metrics == want


def test_table_title():
    assert table_title(False, "bbox", 0.02, 100) == "COCO Box AP, up to 100 detections per image:"
    assert table_title(True, "boundary", 0.005, 300) == \
        "LVIS Boundary AP (dilation ratio 0.005), up to 300 detections per image:"


def _write(tmp_path, name, doc):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return str(path)


def test_bad_files_are_one_line_value_errors(tmp_path):
    gt = json.load(open(COCO_GT))
    res = json.load(open(COCO_DT))
    missing = str(tmp_path / "missing.json")
    with pytest.raises(FileNotFoundError, match="ground truth file not found") as info:
        evaluate_files(missing, COCO_DT)
    assert isinstance(info.value, ValueError)
    broken = tmp_path / "broken.json"
    broken.write_text("{oops")
    with pytest.raises(json.JSONDecodeError, match="results file is not valid JSON") as info:
        evaluate_files(COCO_GT, str(broken))
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match=r"were --gt and --dt swapped\?"):
        evaluate_files(COCO_GT, COCO_GT)
    boxes = _write(tmp_path, "boxes.json", [{"image_id": r["image_id"], "category_id": r["category_id"],
                                             "score": r["score"], "bbox": [1, 2, 30, 40]} for r in res])
    with pytest.raises(ValueError) as info:
        evaluate_files(COCO_GT, boxes, iou_type="boundary")
    assert str(info.value) == (f"--iou-type boundary needs results with a 'segmentation' (compressed RLE); "
                               f"{boxes} only has boxes (use --iou-type bbox)")
    assert evaluate_files(COCO_GT, boxes, iou_type="bbox").metrics["AP"] >= 0  # boxes are fine for bbox
    unknown = _write(tmp_path, "cat.json", [dict(r, category_id=999999) for r in res])
    with pytest.raises(ValueError, match=f"results use category ids that {COCO_GT} does not have"):
        evaluate_files(COCO_GT, unknown)
    no_seg = dict(gt, annotations=[{k: v for k, v in a.items() if k != "segmentation"} if i == 0 else a
                                   for i, a in enumerate(gt["annotations"])])
    no_seg_path = _write(tmp_path, "noseg.json", no_seg)
    with pytest.raises(ValueError, match="has no 'segmentation', which --iou-type segm needs"):
        evaluate_files(no_seg_path, COCO_DT, iou_type="segm")
    with pytest.raises(ValueError) as info:
        evaluate_files(COCO_GT, unknown)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("kwargs, match", [
    ({"iou_type": "keypoints"}, "iou_type must be one of"),
    ({"dilation_ratio": -0.1}, "dilation_ratio must be a finite number"),
    ({"dilation_ratio": float("nan")}, "dilation_ratio must be a finite number"),
    ({"max_dets": 0}, "max_dets must be an integer >= 1"),
    ({"rec_thrs": 1}, "rec_thrs must be an integer >= 2"),
    ({"lvis": "yes"}, "lvis must be None"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        evaluate_files(COCO_GT, COCO_DT, **kwargs)


def test_a_result_on_an_unknown_image_is_refused(tmp_path):
    """A result on an image the ground truth lacks is refused (as by COCO.loadRes)."""
    res = json.load(open(COCO_DT))
    gt = json.load(open(COCO_GT))
    known = {img["id"] for img in gt["images"]}
    stray = max(known) + 1
    path = _write(tmp_path, "stray.json", res + [dict(res[0], image_id=stray)])
    with pytest.raises(ValueError, match=str(stray)):
        evaluate_files(COCO_GT, path, iou_type="segm")


def test_params_reach_the_evaluator():
    coco = evaluate_files(COCO_GT, COCO_DT, iou_type="segm", params={"iouThrs": np.array([0.5, 0.75])})
    assert list(coco.evaluator.params.iouThrs) == [0.5, 0.75]
    full = evaluate_files(COCO_GT, COCO_DT, iou_type="segm")
    assert coco.metrics["AP50"] == full.metrics["AP50"] and coco.metrics["AP75"] == full.metrics["AP75"]
    labels = ["all", "small", "medium", "large"]
    lvis = evaluate_files(LVIS_GT, LVIS_DT, iou_type="segm", params={"area_rng_lbl": labels})
    assert lvis.evaluator.params.area_rng_lbl is labels
    with pytest.raises(ValueError, match="the evaluator has no parameter 'nope'"):
        evaluate_files(COCO_GT, COCO_DT, iou_type="segm", params={"nope": 1})
    with pytest.raises(TypeError, match="params must be a mapping"):
        evaluate_files(COCO_GT, COCO_DT, params=[("iouThrs", [0.5])])
