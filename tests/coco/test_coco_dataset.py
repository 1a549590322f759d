"""boundary_api.COCO: pycocotools' loading, plus clear errors for bad input
that leave the user's files and objects as they were."""
import contextlib
import copy
import hashlib
import io
import json
import logging
import re
import warnings

import numpy as np
import pycocotools.coco
import pycocotools.cocoeval
import pycocotools.mask as mask_utils
import pytest

from boundary_api import COCO, COCOeval, cache_for
from boundary_api.instance._checks import SuspectInputWarning
from conftest import COCO_DT, COCO_GT


def silent(fn, *a, **k):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*a, **k)


def load(path):
    with open(path) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def gt():
    return silent(COCO, COCO_GT)


def test_loadres_matches_pycocotools(gt):
    ours = silent(gt.loadRes, COCO_DT)
    ref_gt = silent(pycocotools.coco.COCO, COCO_GT)
    theirs = silent(ref_gt.loadRes, COCO_DT)
    assert isinstance(ours, COCO)
    assert ours.getAnnIds() == theirs.getAnnIds()
    for i in ours.getAnnIds():
        a, b = ours.anns[i], theirs.anns[i]
        assert a.keys() == b.keys()
        assert a["area"] == b["area"]
        np.testing.assert_array_equal(np.asarray(a["bbox"], float), np.asarray(b["bbox"], float))
        assert (a["id"], a["iscrowd"], a["image_id"], a["category_id"]) == (b["id"], b["iscrowd"], b["image_id"], b["category_id"])
    assert ours.dataset["categories"] == theirs.dataset["categories"]
    assert ours.getImgIds() == theirs.getImgIds()


def test_loadres_accepts_list_and_array(gt):
    res = load(COCO_DT)
    from_list = silent(gt.loadRes, res)
    assert len(from_list.anns) == len(res)
    arr = np.array([[r["image_id"], 10, 10, 20, 30, 0.5, r["category_id"]] for r in load(COCO_DT)[:10]])
    boxes = silent(gt.loadRes, arr)
    assert len(boxes.anns) == 10
    assert boxes.anns[1]["area"] == 600


def test_printed_messages_are_pycocotools(capsys):
    COCO(COCO_GT)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "loading annotations into memory..."
    assert out[1].startswith("Done (t=")
    assert out[2:] == ["creating index...", "index created!"]


# ----------------------------------------------------------------- bad ground truth
def test_missing_file(tmp_path):
    with pytest.raises(ValueError, match="ground truth file not found: .*nope.json"):
        silent(COCO, str(tmp_path / "nope.json"))


def test_invalid_json(tmp_path):
    p = tmp_path / "broken.json"
    p.write_text('{"images": [')
    with pytest.raises(ValueError, match=r"not valid JSON: .*broken.json \(line 1"):
        silent(COCO, str(p))


def test_directory_instead_of_file(tmp_path):
    with pytest.raises(ValueError, match="is a directory"):
        silent(COCO, str(tmp_path))


def test_not_a_coco_ground_truth(tmp_path):
    p = tmp_path / "gt.json"
    p.write_text(json.dumps([1, 2]))
    for strict in (False, True):
        # pycocotools asserts that the file holds an object
        with pytest.raises(AssertionError, match="not a COCO ground truth .*got a list"):
            silent(COCO, str(p), strict=strict)


@pytest.mark.parametrize("doc, message", [
    ({"images": []}, "no list of 'annotations', 'categories'"),
    ({"images": [{"id": 1, "width": 3}], "categories": [],
      "annotations": [{"id": 7, "image_id": 1, "category_id": 1, "area": 1, "iscrowd": 0,
                       "segmentation": [[0, 0, 2, 0, 2, 2]]}]},
     r"annotation id 7 \(image 1\): its polygons need the image's size, but the image has no valid 'height' "
     r"and 'width' \(got None, 3\)"),
    ({"images": [{"id": 1, "width": 3, "height": 3}], "categories": [],
      "annotations": [{"id": 7, "image_id": 2, "category_id": 1, "area": 1, "iscrowd": 0}]},
     "annotation id 7 refers to image 2"),
])
def test_suspect_ground_truth(tmp_path, doc, message):
    """pycocotools loads these: a warning naming the problem; strict=True
    refuses them with that message (as the command line does)."""
    p = tmp_path / "gt.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=message):
        silent(COCO, str(p), strict=True)
    with pytest.warns(SuspectInputWarning, match=message):
        ours = silent(COCO, str(p))
    theirs = silent(pycocotools.coco.COCO, str(p))
    assert ours.dataset == theirs.dataset and ours.anns == theirs.anns and ours.imgs == theirs.imgs


@pytest.mark.parametrize("doc, message", [
    ({"images": [{"id": 1, "width": 3}], "annotations": [], "categories": []}, None),
    ({"images": [{"id": 1, "width": 3}], "categories": [],
      "annotations": [{"id": 7, "image_id": 1, "category_id": 1, "area": 1, "iscrowd": 0, "bbox": [0, 0, 1, 1],
                       "segmentation": {"size": [3, 3], "counts": [0, 1, 8]}}]}, None),
    ({"images": [{"id": 1, "width": 3, "height": 3}], "categories": [],
      "annotations": [{"id": 7, "image_id": 1, "category_id": 1, "iscrowd": 0}]}, "annotation id 7 has no 'area'"),
    ({"images": [{"id": 1, "width": 3, "height": 3}], "categories": [],
      "annotations": [{"id": 7, "image_id": 1, "category_id": 1, "area": 4}]}, "annotation id 7 has no 'iscrowd'"),
])
def test_ground_truth_loaded_without_a_warning(tmp_path, doc, message):
    """Issue 40: an image without a size where no polygon needs it (boxes
    need none, an RLE carries its own); a field pycocotools' evaluation
    reads and fails without (its error then carries the problem as a note):
    loaded as pycocotools loads it, without a warning; strict=True refuses
    the second kind."""
    p = tmp_path / "gt.json"
    p.write_text(json.dumps(doc))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = silent(COCO, str(p))
        if message is None:
            silent(COCO, str(p), strict=True)
    if message is not None:
        with pytest.raises(ValueError, match=message):
            silent(COCO, str(p), strict=True)
        assert any(message in problem for problem in ours._input_problems)
    theirs = silent(pycocotools.coco.COCO, str(p))
    assert ours.dataset == theirs.dataset and ours.anns == theirs.anns and ours.imgs == theirs.imgs


def test_ground_truth_rle_of_the_wrong_size(tmp_path):
    doc = load(COCO_GT)
    crowd = next(a for a in doc["annotations"] if a["iscrowd"])
    crowd["segmentation"]["size"] = [10, 10]
    p = tmp_path / "gt.json"
    p.write_text(json.dumps(doc))
    message = rf"annotation id {crowd['id']} \(image {crowd['image_id']}\): RLE size \[10, 10\] is not the image's"
    with pytest.raises(ValueError, match=message):
        silent(COCO, str(p), strict=True)
    with pytest.warns(SuspectInputWarning, match=message):
        g = silent(COCO, str(p))
    # Boundary AP (no pycocotools original) refuses it, naming the problem
    with pytest.raises(ValueError, match="iouType='boundary' cannot evaluate input that failed the checks .*"
                                         + message):
        COCOeval(g, silent(g.loadRes, COCO_DT), "boundary")
    # Mask AP is pycocotools' (the crowd region's mask is compared at its own size)
    ours = COCOeval(g, silent(g.loadRes, COCO_DT), "segm")
    ref = silent(pycocotools.coco.COCO, str(p))
    theirs = pycocotools.cocoeval.COCOeval(ref, silent(ref.loadRes, COCO_DT), "segm")
    for ev in (ours, theirs):
        for step in (ev.evaluate, ev.accumulate, ev.summarize):
            silent(step)
    np.testing.assert_array_equal(ours.stats, theirs.stats)


# -------------------------------------------------------------------- bad results
def _broken(kind):
    res = load(COCO_DT)
    if kind == "dict":
        return {"annotations": res}, TypeError, "results must be a list of objects, got a dict"
    if kind == "empty":
        return [], ValueError, "results are empty"
    if kind == "image":
        res[5]["image_id"] = 999999999
        return res, ValueError, "image ids not in the ground truth: 999999999"
    if kind == "size":
        res[3]["segmentation"]["size"] = [100, 100]
        return res, ValueError, r"result #3 \(image \d+\): RLE size \[100, 100\] is not the image's"
    if kind == "counts":
        res[4]["segmentation"]["counts"] = res[5]["segmentation"]["counts"][:-3] + "@@@" \
            if res[5]["segmentation"]["size"] == res[4]["segmentation"]["size"] else "0000"
        return res, ValueError, r"result #4 .*segmentation counts"
    if kind == "no_score":
        del res[2]["score"]
        return res, ValueError, r"result #2 \(image \d+\) has no 'score'"
    if kind == "nan_score":
        res[2]["score"] = float("nan")
        return res, ValueError, r"result #2 .* invalid score nan"
    if kind == "no_segmentation":
        del res[9]["segmentation"]
        return res, ValueError, r"result #9 .* has no 'segmentation'"
    if kind == "polygon":
        res[0]["segmentation"] = [[1, 1, 5, 1, 5, 5]]
        return res, ValueError, r"result #0 .*compressed RLE"
    if kind == "not_object":
        res[1] = [1, 2, 3]
        return res, ValueError, r"result #1 is not an object"
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["dict", "empty", "image", "size", "counts", "no_score", "nan_score",
                                  "no_segmentation", "polygon", "not_object"])
def test_bad_results_raise_and_change_nothing(gt, kind, tmp_path):
    res, exc, message = _broken(kind)
    before = copy.deepcopy(res)
    gt_before = copy.deepcopy(gt.dataset)
    with pytest.raises(exc, match=message):
        silent(gt.loadRes, res, strict=True)
    assert res == before
    assert gt.dataset == gt_before
    # the same through a file: the message names it
    p = tmp_path / "res.json"
    p.write_text(json.dumps(res))
    text = p.read_text()
    with pytest.raises(exc, match=message):
        silent(gt.loadRes, str(p), strict=True)
    assert p.read_text() == text


@pytest.mark.parametrize("kind", ["size", "counts", "no_score", "nan_score"])
def test_suspect_results_warn_and_load_as_pycocotools(gt, kind, tmp_path):
    """pycocotools loads these: without strict a warning naming the
    problem (none for a missing score, on which pycocotools' evaluation
    fails: its error names it), and the very dicts pycocotools makes."""
    res, _, message = _broken(kind)
    if kind == "no_score":
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            ours = silent(gt.loadRes, copy.deepcopy(res))
        assert re.search(message, ours._input_problems[0])
    else:
        with pytest.warns(SuspectInputWarning, match=message):
            ours = silent(gt.loadRes, copy.deepcopy(res))
    ref = silent(pycocotools.coco.COCO, COCO_GT)
    theirs = silent(ref.loadRes, copy.deepcopy(res))
    for a, b in zip(ours.dataset["annotations"], theirs.dataset["annotations"]):
        assert list(a) == list(b)
        assert type(a["area"]) is type(b["area"]) and type(a["bbox"]) is type(b["bbox"])
        assert str(a) == str(b)


def _boxes_with_a_bad_mask():
    """Results with a box and an RLE each, result #4's RLE string corrupted."""
    res = load(COCO_DT)
    for r in res:
        r["bbox"] = [float(v) for v in mask_utils.toBbox(r["segmentation"])]
    res[4]["segmentation"]["counts"] = "0000"
    return res


@pytest.mark.parametrize("iou, strict", [("segm", True), ("boundary", True), ("boundary", False)])
def test_box_results_masks_are_checked_where_masks_are_used(gt, iou, strict):
    # loading box results does not decode their masks (box AP never reads
    # them); a mask evaluation checks them once, naming the result
    dt = silent(gt.loadRes, _boxes_with_a_bad_mask(), strict=strict)
    assert not dt._rles_checked
    ev = COCOeval(gt, dt, iou)
    with pytest.raises(ValueError, match=r"^result id 5 \(image \d+\): segmentation counts does not cover its \d+x\d+ pixels$"):
        silent(ev.evaluate)


def test_mask_ap_of_box_results_with_a_bad_mask_is_pycocotools(gt):
    """pycocotools evaluates the corrupted RLE string as it decodes it:
    without strict, a warning naming the result, and its numbers."""
    res = _boxes_with_a_bad_mask()
    ours = COCOeval(gt, silent(gt.loadRes, copy.deepcopy(res)), "segm")
    with pytest.warns(SuspectInputWarning, match=r"^result id 5 \(image \d+\): segmentation counts does not"):
        silent(ours.evaluate)
    ref_gt = silent(pycocotools.coco.COCO, COCO_GT)
    theirs = pycocotools.cocoeval.COCOeval(ref_gt, silent(ref_gt.loadRes, copy.deepcopy(res)), "segm")
    silent(theirs.evaluate)
    for ev in (ours, theirs):
        silent(ev.accumulate)
        silent(ev.summarize)
    np.testing.assert_array_equal(ours.stats, theirs.stats)


def test_box_ap_of_results_with_masks_is_pycocotools_and_skips_the_masks(gt):
    res = _boxes_with_a_bad_mask()
    dt = silent(gt.loadRes, copy.deepcopy(res))
    ours = COCOeval(gt, dt, "bbox")
    for step in (ours.evaluate, ours.accumulate, ours.summarize):
        silent(step)
    ref_gt = silent(pycocotools.coco.COCO, COCO_GT)
    theirs = pycocotools.cocoeval.COCOeval(ref_gt, silent(ref_gt.loadRes, copy.deepcopy(res)), "bbox")
    for step in (theirs.evaluate, theirs.accumulate, theirs.summarize):
        silent(step)
    np.testing.assert_array_equal(ours.eval["precision"], theirs.eval["precision"])
    np.testing.assert_array_equal(ours.stats, theirs.stats)
    # good masks next to the boxes: checked once, by the cache, when first used
    good = load(COCO_DT)
    for r in good:
        r["bbox"] = [float(v) for v in mask_utils.toBbox(r["segmentation"])]
    dt = silent(gt.loadRes, good)
    assert not dt._rles_checked
    ev = COCOeval(gt, dt, "segm")
    silent(ev.evaluate)
    assert cache_for(dt).computed["masks"] == len(good)


def test_segmentation_results_are_trusted_by_the_cache(gt):
    dt = silent(gt.loadRes, COCO_DT)
    assert dt._rles_checked


def test_results_file_missing_or_invalid(gt, tmp_path):
    with pytest.raises(ValueError, match="results file not found"):
        silent(gt.loadRes, str(tmp_path / "x.json"))
    p = tmp_path / "bad.json"
    p.write_text("not json")
    with pytest.raises(ValueError, match="results file is not valid JSON"):
        silent(gt.loadRes, str(p))


def test_unknown_category_ids_warn_and_behave_as_pycocotools(gt, caplog):
    res = load(COCO_DT)
    for r in res[:50]:
        r["category_id"] = 1000 + r["category_id"]
    with pytest.warns(SuspectInputWarning, match=r"50 result\(s\) have category ids not in the ground truth"):
        dt = silent(gt.loadRes, copy.deepcopy(res))
    with pytest.raises(ValueError, match=r"50 result\(s\) have category ids not in the ground truth"):
        silent(gt.loadRes, copy.deepcopy(res), strict=True)
    ours = COCOeval(gt, dt, "segm")
    silent(ours.evaluate)
    silent(ours.accumulate)
    silent(ours.summarize)
    ref_gt = silent(pycocotools.coco.COCO, COCO_GT)
    t = pycocotools.cocoeval.COCOeval(ref_gt, silent(ref_gt.loadRes, copy.deepcopy(res)), "segm")
    silent(t.evaluate)
    silent(t.accumulate)
    silent(t.summarize)
    np.testing.assert_array_equal(ours.stats, t.stats)


def test_input_files_are_never_modified(tmp_path):
    gt_path, dt_path = tmp_path / "gt.json", tmp_path / "dt.json"
    gt_path.write_bytes(open(COCO_GT, "rb").read())
    dt_path.write_bytes(open(COCO_DT, "rb").read())
    digest = {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (gt_path, dt_path)}
    g = silent(COCO, str(gt_path))
    for iou in ("boundary", "segm", "bbox"):
        ev = COCOeval(g, silent(g.loadRes, str(dt_path)), iou)
        silent(ev.evaluate)
        silent(ev.accumulate)
        silent(ev.summarize)
    assert {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in (gt_path, dt_path)} == digest
