"""boundary_api.COCOeval: the reference's golden numbers, pycocotools' own
numbers for segm/bbox, faster-coco-eval's Boundary AP, and the fast path
against pycocotools' Python loops."""
import contextlib
import copy
import io
import json

import numpy as np
import pycocotools.coco
import pycocotools.cocoeval
import pytest

from boundary_api import COCO, COCOeval
from conftest import COCO_DT, COCO_GT, golden_cases
from synth import assert_same_eval_imgs, boxes_only, fresh, make_dataset


def silent(fn, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)


def run(gt, dt, iou, **kw):
    """Evaluate with boundary_api (gt/dt: dict/list, copied first)."""
    g = silent(COCO.from_dataset, fresh(gt))
    d = silent(g.loadRes, fresh(dt))
    ev = COCOeval(g, d, iou, **kw)
    silent(ev.evaluate)
    silent(ev.accumulate)
    silent(ev.summarize)
    return ev


def run_pycocotools(gt, dt, iou):
    g = pycocotools.coco.COCO()
    g.dataset = fresh(gt)
    silent(g.createIndex)
    d = silent(g.loadRes, fresh(dt))
    ev = pycocotools.cocoeval.COCOeval(g, d, iou)
    silent(ev.evaluate)
    silent(ev.accumulate)
    silent(ev.summarize)
    return ev


def load(path):
    with open(path) as f:
        return json.load(f)


def assert_same_eval(a, b, keys=("precision", "recall", "scores")):
    for k in keys:
        np.testing.assert_array_equal(a.eval[k], b.eval[k], err_msg=k)
    np.testing.assert_array_equal(np.asarray(a.stats), np.asarray(b.stats))


# --------------------------------------------------------------------------- golden
@pytest.mark.parametrize("case", golden_cases("instance_eval.json", "coco"), ids=lambda c: c["name"])
def test_golden_reference_numbers(case):
    g = silent(COCO, case["gt"])
    d = silent(g.loadRes, case["dt"])
    ev = COCOeval(g, d, iouType=case["iou_type"], dilation_ratio=case.get("dilation_ratio", 0.02))
    silent(ev.evaluate)
    silent(ev.accumulate)
    silent(ev.summarize)
    assert len(ev.stats) == 12
    np.testing.assert_allclose(ev.stats, case["stats"], rtol=0, atol=1e-12)


def test_summary_table_is_pycocotools(capsys):
    ev = run(load(COCO_GT), load(COCO_DT), "boundary")
    silent(ev.evaluate)
    silent(ev.accumulate)
    capsys.readouterr()
    ev.summarize()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 12
    assert lines[0] == " Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets=100 ] = 0.226"
    assert lines[11] == " Average Recall     (AR) @[ IoU=0.50:0.95 | area= large | maxDets=100 ] = 0.104"


# ------------------------------------------------------------- pycocotools parity
@pytest.mark.parametrize("iou", ["segm", "bbox"])
@pytest.mark.parametrize("data", ["golden", "synth0", "synth1"])
def test_segm_and_bbox_equal_pycocotools(iou, data):
    if data == "golden":
        gt, dt = load(COCO_GT), load(COCO_DT)
    else:
        gt, dt = make_dataset(seed=int(data[-1]))
    if iou == "bbox" and data != "golden":
        dt = boxes_only(dt)
    ours = run(gt, dt, iou)
    theirs = run_pycocotools(gt, dt, iou)
    assert_same_eval(ours, theirs)
    assert_same_eval_imgs(ours.evalImgs, theirs.evalImgs)


def test_keypoints_are_pycocotools():
    rng = np.random.default_rng(0)
    gt = {"images": [{"id": i, "height": 100, "width": 100} for i in range(1, 6)],
          "categories": [{"id": 1, "name": "person", "keypoints": [str(k) for k in range(17)],
                          "skeleton": []}],
          "annotations": []}
    dt = []
    for i in range(1, 6):
        for j in range(2):
            kp = np.column_stack([rng.uniform(10, 90, 17), rng.uniform(10, 90, 17), np.full(17, 2)])
            gt["annotations"].append({"id": len(gt["annotations"]) + 1, "image_id": i, "category_id": 1,
                                      "keypoints": kp.ravel().tolist(), "num_keypoints": 17,
                                      "area": 2000.0, "bbox": [10, 10, 80, 80], "iscrowd": 0})
            noisy = kp.copy()
            noisy[:, :2] += rng.normal(0, 3, (17, 2))
            dt.append({"image_id": i, "category_id": 1, "keypoints": noisy.ravel().tolist(),
                       "score": float(rng.random())})
    ours = run(gt, dt, "keypoints")
    theirs = run_pycocotools(gt, dt, "keypoints")
    assert_same_eval(ours, theirs)
    assert ours.stats[0] > 0


# ----------------------------------------------------------- faster-coco-eval parity
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("ratio", [0.02, 0.1])
def test_boundary_equals_faster_coco_eval(seed, ratio):
    faster = pytest.importorskip("faster_coco_eval")
    gt, dt = make_dataset(seed=seed, max_size=90)
    ours = run(gt, dt, "boundary", dilation_ratio=ratio)
    g = faster.COCO(fresh(gt))
    d = g.loadRes(fresh(dt))
    theirs = faster.COCOeval_faster(g, d, iouType="boundary", boundary_dilation_ratio=ratio)
    silent(theirs.evaluate)
    silent(theirs.accumulate)
    silent(theirs.summarize)
    np.testing.assert_allclose(ours.stats, np.asarray(theirs.stats)[:12], rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours.eval["precision"], theirs.eval["precision"], rtol=0, atol=1e-12)
    assert ours.stats[0] > 0


# ---------------------------------------------------------- fast path == slow path
@pytest.mark.parametrize("iou", ["boundary", "segm", "bbox"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_fast_path_equals_pycocotools_loops(iou, seed):
    gt, dt = make_dataset(seed=seed)
    if iou == "bbox":
        dt = boxes_only(dt)
    fast = run(gt, dt, iou)
    slow = run(gt, dt, iou, use_fast_impl=False)
    assert_same_eval(fast, slow)
    assert_same_eval_imgs(fast.evalImgs, slow.evalImgs)
    assert fast.ious.keys() == slow.ious.keys()
    for key, m in slow.ious.items():
        np.testing.assert_array_equal(fast.ious[key], m)


def test_fast_path_equals_slow_on_golden_data():
    gt, dt = load(COCO_GT), load(COCO_DT)
    for iou in ("boundary", "segm"):
        fast = run(gt, dt, iou)
        slow = run(gt, dt, iou, use_fast_impl=False)
        assert_same_eval(fast, slow)
        assert_same_eval_imgs(fast.evalImgs, slow.evalImgs)


def test_results_do_not_depend_on_thread_count():
    gt, dt = make_dataset(seed=5, num_images=60)
    runs = [run(gt, dt, "boundary", num_threads=n) for n in (1, 2, 5)]
    for other in runs[1:]:
        assert_same_eval(runs[0], other)


def test_matching_edge_cases_are_covered_by_the_generator():
    gt, dt = make_dataset(seed=0)
    assert any(a["iscrowd"] for a in gt["annotations"])
    images_with_gt = {a["image_id"] for a in gt["annotations"]}
    assert len(images_with_gt) < len(gt["images"])
    cats_with_gt = {a["category_id"] for a in gt["annotations"]}
    assert len(cats_with_gt) < len(gt["categories"])
    per_image = np.bincount([d["image_id"] for d in dt])
    assert per_image.max() > 100
    scores = [d["score"] for d in dt]
    assert len(set(scores)) < len(scores)


def _custom_params(ev, gt):
    p = ev.params
    p.imgIds = sorted(img["id"] for img in gt["images"])[::2]
    p.catIds = [1, 2, 4]
    p.maxDets = [1, 5, 20]
    p.areaRng = [[0, 1e10], [0, 200], [200, 1e10]]
    p.areaRngLbl = ["all", "small", "large"]
    p.iouThrs = np.array([0.3, 0.5, 0.7])
    p.recThrs = np.linspace(0, 1, 11)


@pytest.mark.parametrize("use_cats", [1, 0])
def test_custom_params_match_pycocotools(use_cats):
    gt, dt = make_dataset(seed=7)
    g = silent(COCO.from_dataset, fresh(gt))
    ours = COCOeval(g, silent(g.loadRes, fresh(dt)), "segm")
    pg = pycocotools.coco.COCO()
    pg.dataset = fresh(gt)
    silent(pg.createIndex)
    theirs = pycocotools.cocoeval.COCOeval(pg, silent(pg.loadRes, fresh(dt)), "segm")
    for ev in (ours, theirs):
        _custom_params(ev, gt)
        ev.params.useCats = use_cats
        silent(ev.evaluate)
        silent(ev.accumulate)
    for k in ("precision", "recall", "scores"):
        np.testing.assert_array_equal(ours.eval[k], theirs.eval[k])
    assert_same_eval_imgs(ours.evalImgs, theirs.evalImgs)


def test_accumulate_with_other_params_matches_slow_path():
    gt, dt = make_dataset(seed=8)
    evs = []
    for fast in (True, False):
        g = silent(COCO.from_dataset, fresh(gt))
        ev = COCOeval(g, silent(g.loadRes, fresh(dt)), "boundary", use_fast_impl=fast)
        silent(ev.evaluate)
        p = copy.deepcopy(ev.params)
        p.catIds = [2, 3]
        p.maxDets = [10, 100]
        silent(ev.accumulate, p)
        evs.append(ev)
    for k in ("precision", "recall", "scores"):
        np.testing.assert_array_equal(evs[0].eval[k], evs[1].eval[k])


def test_compute_iou_single_pair():
    gt, dt = load(COCO_GT), load(COCO_DT)
    ev = run(gt, dt, "boundary")
    key = next(k for k, v in ev.ious.items() if len(v))
    np.testing.assert_array_equal(ev.computeIoU(*key), ev.ious[key])


def test_boundary_iou_is_min_of_mask_and_boundary_iou_and_crowd_keeps_mask_iou():
    from boundary_api import boundary_iou
    import pycocotools.mask as mask_utils

    gt, dt = make_dataset(seed=2)
    b = run(gt, dt, "boundary")
    s = run(gt, dt, "segm")
    checked_crowd = checked_min = 0
    for key, m in b.ious.items():
        if not len(m):
            continue
        gts = b._state.gt_anns
        img, cat = key
        g_anns = [a for a in b.cocoGt.loadAnns(b.cocoGt.getAnnIds(imgIds=[img], catIds=[cat]))]
        d_anns = sorted(b.cocoDt.loadAnns(b.cocoDt.getAnnIds(imgIds=[img], catIds=[cat])),
                        key=lambda d: -d["score"])[:100]
        for j, ga in enumerate(g_anns):
            for i, da in enumerate(d_anns):
                if ga["iscrowd"]:
                    assert m[i, j] == s.ious[key][i, j]
                    checked_crowd += 1
                else:
                    g_rle = b.cocoGt.annToRLE(ga)
                    bi = boundary_iou(g_rle, da["segmentation"], 0.02)
                    assert m[i, j] == min(s.ious[key][i, j], bi)
                    checked_min += 1
        del gts
    assert checked_crowd > 0 and checked_min > 50
    del mask_utils


def test_bad_iou_type_and_ratio():
    g = silent(COCO, COCO_GT)
    d = silent(g.loadRes, COCO_DT)
    with pytest.raises(ValueError, match="iouType"):
        COCOeval(g, d, "boundry")
    with pytest.raises(ValueError, match="dilation_ratio"):
        COCOeval(g, d, "boundary", dilation_ratio=-0.1)
    with pytest.raises(ValueError, match="num_threads"):
        COCOeval(g, d, "boundary", num_threads=0)


def test_box_only_results_cannot_be_evaluated_as_masks():
    gt, dt = make_dataset(seed=1)
    g = silent(COCO.from_dataset, fresh(gt))
    d = silent(g.loadRes, boxes_only(dt))
    with pytest.raises(ValueError, match="only have boxes"):
        COCOeval(g, d, "boundary")
    COCOeval(g, d, "bbox")  # fine
