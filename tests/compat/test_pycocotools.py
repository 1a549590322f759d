"""boundary_api.COCO / COCOeval against pycocotools: the same user code run
with both, comparing numbers, exception classes, value types and printed
lines (issue 24 items 2-4, issue 25 items 5, 6, 8)."""
import copy
import json
import os

import numpy as np
import pycocotools.coco
import pycocotools.cocoeval
import pycocotools.mask as mask_utils
import pytest

import boundary_api
from boundary_api import SuspectInputWarning

from ._same import assert_same, assert_same_value, run

ORIGINAL = (pycocotools.coco.COCO, pycocotools.cocoeval.COCOeval)
OURS = (boundary_api.COCO, boundary_api.COCOeval)


def both(fn, *args, printed=True):
    """Run ``fn(COCO, COCOeval, *args)`` with pycocotools and with
    boundary_api; assert they agree; return boundary_api's outcome."""
    original = run(fn, *ORIGINAL, *copy.deepcopy(args))
    ours = run(fn, *OURS, *copy.deepcopy(args))
    assert_same(original, ours, printed=printed)
    return original, ours


def rle(mask) -> dict:
    r = mask_utils.encode(np.asfortranarray(np.asarray(mask, np.uint8)))
    r["counts"] = r["counts"].decode("ascii")
    return r


def square(h, w, y0, x0, size):
    m = np.zeros((h, w), np.uint8)
    m[y0:y0 + size, x0:x0 + size] = 1
    return m


def small_gt(h=40, w=50):
    """Two images, two categories, polygons, boxes and an RLE."""
    anns = [
        {"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 100.0, "bbox": [5, 5, 10, 10],
         "segmentation": [[5, 5, 15, 5, 15, 15, 5, 15]]},
        {"id": 2, "image_id": 1, "category_id": 2, "iscrowd": 0, "area": 64.0, "bbox": [20, 20, 8, 8],
         "segmentation": rle(square(h, w, 20, 20, 8))},
        {"id": 3, "image_id": 2, "category_id": 1, "iscrowd": 0, "area": 144.0, "bbox": [10, 12, 12, 12],
         "segmentation": [[10, 12, 22, 12, 22, 24, 10, 24]]},
    ]
    return {"info": {"description": "small"},
            "images": [{"id": 1, "height": h, "width": w}, {"id": 2, "height": h, "width": w}],
            "categories": [{"id": 1, "name": "a", "supercategory": "s"}, {"id": 2, "name": "b", "supercategory": "s"}],
            "annotations": anns}


def small_dets(h=40, w=50):
    return [
        {"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": rle(square(h, w, 6, 5, 10))},
        {"image_id": 1, "category_id": 2, "score": 0.8, "segmentation": rle(square(h, w, 20, 21, 8))},
        {"image_id": 2, "category_id": 1, "score": 0.7, "segmentation": rle(square(h, w, 11, 10, 12))},
        {"image_id": 2, "category_id": 2, "score": 0.6, "segmentation": rle(square(h, w, 1, 1, 5))},
    ]


def box_dets():
    return [{"image_id": 1, "category_id": 1, "score": 0.9, "bbox": [5.5, 5.0, 10.0, 9.0]},
            {"image_id": 1, "category_id": 2, "score": 0.8, "bbox": [20.0, 21.0, 8.0, 8.0]},
            {"image_id": 2, "category_id": 1, "score": 0.7, "bbox": [10.0, 11.0, 12.0, 13.0]},
            {"image_id": 2, "category_id": 2, "score": 0.6, "bbox": [1.0, 1.0, 5.0, 5.0]}]


def write(tmp_path, name, doc) -> str:
    path = str(tmp_path / name)
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def evaluate(COCO, COCOeval, gt, dets, iou_type):
    """The usual user code: load, loadRes, evaluate, summarize; the stats
    and the result dicts as loadRes left them."""
    coco = COCO(gt)
    res = coco.loadRes(dets)
    ev = COCOeval(coco, res, iou_type)
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    return [float(v) for v in ev.stats], res.dataset["annotations"]


def evaluate_dicts(COCO, COCOeval, gt, dets, iou_type):
    """Ground truth from a dict, as torchmetrics and detectron2 build it."""
    coco = COCO()
    coco.dataset = gt
    coco.createIndex()
    res = coco.loadRes(dets)
    ev = COCOeval(coco, res, iou_type)
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    return [float(v) for v in ev.stats]


@pytest.mark.parametrize("change", ["results: no score", "results: score null", "results: score not a number",
                                    "ground truth: no area", "ground truth: no iscrowd",
                                    "ground truth: no segmentation"])
def test_fields_pycocotools_fails_without_come_with_its_own_error(tmp_path, change):
    """A field pycocotools' evaluation reads and fails without (Detectron2's
    test_fast_eval removes each, issue 40): no warning on loading;
    pycocotools' own exception, its class and message, with a note naming
    the problem; strict=True refuses it on loading."""
    gt, dets = small_gt(), small_dets()
    what, field = change.split(": ")
    if change == "results: score null":
        dets[0]["score"] = None
    elif change == "results: score not a number":
        dets[0]["score"] = "high"
    elif what == "results":
        del dets[0]["score"]
    else:
        del gt["annotations"][0][field.split()[1]]
    path = write(tmp_path, "gt.json", gt)
    for iou in ("segm", "bbox"):
        if field == "no segmentation" and iou == "bbox":
            continue  # (box AP never reads it)
        original, ours = both(evaluate, path, dets, iou)
        assert ours.warned == []
        assert type(ours.error) is type(original.error) and str(ours.error) == str(original.error)
        problem = {"results: no score": "results: result #0 (image 1) has no 'score'",
                   "results: score null": "results: result #0 (image 1) has 'score': null",
                   "results: score not a number": "results: result #0 (image 1) has a score that is not a "
                                                  "number: 'high'",
                   "ground truth: no segmentation": "annotation id 1 (image 1): has no 'segmentation'"
                   }.get(change, f"{path}: annotation id 1 has {field.replace('no ', 'no ' + chr(39))}'")
        assert ours.error.__notes__ == [f"boundary_api: pycocotools' own evaluation fails on this input ({problem})"]
    if field != "no segmentation":
        with pytest.raises(ValueError):
            silent(boundary_api.COCO(path, strict=True).loadRes, dets)


# --------------------------------------------------- inputs pycocotools evaluates
def test_plain_input_gives_pycocotools_numbers_types_and_lines(tmp_path):
    gt = write(tmp_path, "gt.json", small_gt())
    for iou in ("segm", "bbox"):
        _, ours = both(evaluate, gt, small_dets(), iou)
        assert ours.warned == []
        assert ours.value[0][0] > 0


def test_rle_size_not_the_images_is_evaluated_as_pycocotools_does(tmp_path):
    """What faster-coco-eval's test_coco_metric does: 10x10 RLEs (ground
    truth and results) on a 640x640 image; pycocotools compares the masks
    at their own size."""
    m = np.zeros((10, 10), np.uint8)
    m[:5, :5] = 1
    boxes = [[50, 60, 20, 20], [100, 120, 30, 30], [150, 160, 40, 40], [250, 260, 100, 100]]
    gt = {"images": [{"id": 0, "width": 640, "height": 640, "file_name": "x.jpg"}],
          "categories": [{"id": 0, "name": "car"}, {"id": 1, "name": "bicycle"}], "info": "fake info",
          "annotations": [{"id": k + 1, "image_id": 0, "category_id": c, "area": b[2] * b[3], "bbox": b,
                           "iscrowd": 0, "segmentation": rle(m)}
                          for k, (b, c) in enumerate(zip(boxes, [0, 0, 1, 0]))]}
    dets = [{"id": k + 1, "image_id": 0, "category_id": np.int64(c), "bbox": [np.int64(v) for v in b],
             "area": np.int64(b[2] * b[3]), "score": np.float64(s), "segmentation": rle(m)}
            for k, (b, c, s) in enumerate(zip(boxes, [0, 0, 1, 0], [1.0, 0.98, 0.96, 0.95]))]
    path = write(tmp_path, "gt.json", gt)
    for iou in ("segm", "bbox"):
        _, ours = both(evaluate, path, dets, iou)
        assert ours.value[0][:4] == [1.0, 1.0, 1.0, 1.0]
        assert any("RLE size [10, 10] is not the image's [640, 640]" in w for w in ours.warned)
        assert all("\n" not in w for w in ours.warned)
    # strict refuses, in one line
    with pytest.raises(ValueError, match=r"RLE size \[10, 10\] is not the image's \[640, 640\]$"):
        boundary_api.COCO(path, strict=True)
    with pytest.warns(SuspectInputWarning):
        coco = boundary_api.COCO(path)
    with pytest.raises(ValueError, match=r"^results: result #0 \(image 0\): RLE size \[10, 10\]"):
        coco.loadRes(copy.deepcopy(dets), strict=True)
    # Boundary AP has no pycocotools original: refused, naming the problem
    with pytest.warns(SuspectInputWarning):
        res = coco.loadRes(copy.deepcopy(dets))
    with pytest.raises(ValueError, match=r"iouType='boundary' cannot evaluate input that failed the checks"):
        boundary_api.COCOeval(coco, res, "boundary")


def _without_image_sizes(gt, value=KeyError):
    """``gt`` whose images have no 'height' and 'width' (``value``: the keys
    themselves missing) or have them with that value."""
    gt = copy.deepcopy(gt)
    for img in gt["images"]:
        del img["height"], img["width"]
        if value is not KeyError:
            img["height"] = img["width"] = value
    return gt


def test_images_without_size_are_no_problem_for_boxes(tmp_path):
    """torchmetrics' tm_to_coco writes images without height and width:
    boxes need no image size, so nothing is warned about (issue 40), and
    strict=True accepts it."""
    gt = _without_image_sizes(small_gt())
    for a in gt["annotations"]:
        del a["segmentation"]
    path = write(tmp_path, "gt.json", gt)
    _, ours = both(evaluate, path, box_dets(), "bbox")
    assert ours.warned == []
    _, ours = both(evaluate_dicts, gt, box_dets(), "bbox")
    assert ours.warned == []
    silent(boundary_api.COCO, path, strict=True).loadRes(box_dets())


@pytest.mark.parametrize("value", [KeyError, None], ids=["keys missing", "null"])
def test_images_without_size_are_no_problem_for_rles(value):
    """An RLE carries its own size: no warning (issue 40).  Box AP is
    pycocotools'; so is Mask AP, which pycocotools evaluates where the image
    has the keys (its annToRLE reads them, then takes the RLE as it is) and
    fails on where it has not (KeyError, its own, as it raises it)."""
    gt = _without_image_sizes(small_gt(), value)
    gt["annotations"] = [a for a in gt["annotations"] if type(a["segmentation"]) is dict]
    for iou in ("bbox", "segm"):
        original, ours = both(evaluate_dicts, gt, small_dets(), iou)
        assert ours.warned == []
        if iou == "bbox" or value is None:
            assert original.error is None
        else:
            assert type(ours.error) is KeyError and str(ours.error) == "'height'"


def test_polygons_on_images_without_size_are_warned_about(tmp_path):
    """A polygon needs its image's size: warned about, pycocotools' code
    then runs (and fails, as pycocotools does); strict=True refuses it."""
    gt = _without_image_sizes(small_gt())
    path = write(tmp_path, "gt.json", gt)
    for iou in ("bbox", "segm"):
        _, ours = both(evaluate, path, small_dets(), iou)
        assert [w.split(";")[0] for w in ours.warned] == [
            f"{path}: annotation id 1 (image 1): its polygons need the image's size, but the image has no valid "
            "'height' and 'width' (got None, None) (and 1 more problems)"]
    with pytest.raises(ValueError, match="annotation id 1 \\(image 1\\): its polygons need the image's size"):
        silent(boundary_api.COCO, path, strict=True)


def test_segm_of_box_only_results_evaluates_the_rectangles(tmp_path, caplog):
    """pycocotools' loadRes makes the rectangles itself: logged, not warned
    about (issue 40: no SuspectInputWarning on what libraries build)."""
    path = write(tmp_path, "gt.json", small_gt())
    _, ours = both(evaluate, path, box_dets(), "segm")
    assert ours.warned == []
    assert any("these results only have boxes" in r.getMessage() for r in caplog.records)
    coco = boundary_api.COCO(path)
    res = coco.loadRes(box_dets())
    with pytest.raises(ValueError, match="these results only have boxes$"):
        boundary_api.COCOeval(coco, res, "boundary")
    strict = boundary_api.COCO(path, strict=True)
    with pytest.raises(ValueError, match="these results only have boxes$"):
        boundary_api.COCOeval(strict, strict.loadRes(box_dets()), "segm")


@pytest.mark.parametrize("change", ["nan score", "nan box", "box of 5"])
def test_suspect_results_are_evaluated_as_pycocotools_does(tmp_path, change):
    path = write(tmp_path, "gt.json", small_gt())
    dets = box_dets()
    if change == "nan score":
        dets[1]["score"] = float("nan")
    elif change == "nan box":
        dets[2]["bbox"][1] = float("nan")
    else:
        dets[0]["bbox"].append(3.0)
    _, ours = both(evaluate, path, dets, "bbox")
    assert len(ours.warned) == 1
    with pytest.raises(ValueError):
        boundary_api.COCO(path).loadRes(dets, strict=True)


@pytest.mark.parametrize("change", ["empty polygon list", "odd polygon", "short polygon", "height 0.0 (RLE)",
                                    "annotation on unknown image"])
def test_suspect_ground_truth_is_evaluated_as_pycocotools_does(tmp_path, change):
    gt = small_gt()
    a = gt["annotations"][0]
    if change == "empty polygon list":
        a["segmentation"] = []
    elif change == "odd polygon":
        a["segmentation"] = [[5, 5, 15, 5, 15, 15, 5]]
    elif change == "short polygon":
        a["segmentation"] = [[5, 5, 15, 5]]
    elif change == "height 0.0 (RLE)":  # (image 1 also holds a polygon: it needs the size)
        gt["images"][0]["height"] = 40.0
    elif change == "annotation on unknown image":
        a["image_id"] = 99
    path = write(tmp_path, "gt.json", gt)
    for iou in ("segm", "bbox"):
        original, ours = both(evaluate, path, small_dets(), iou)
        assert ours.warned
    with pytest.raises(ValueError):
        boundary_api.COCO(path, strict=True)


def test_captions_file(tmp_path):
    gt = {"info": {}, "images": [{"id": 1, "height": 4, "width": 4}, {"id": 2, "height": 4, "width": 4}],
          "annotations": [{"id": 1, "image_id": 1, "caption": "a cat"}, {"id": 2, "image_id": 2, "caption": "x"}]}
    path = write(tmp_path, "captions.json", gt)

    def load(COCO, COCOeval):
        coco = COCO(path)
        res = coco.loadRes([{"image_id": 2, "caption": "a dog"}])
        return coco.dataset, res.dataset, dict(res.anns), dict(res.imgToAnns)

    both(load)


def test_keypoint_file_without_area(tmp_path):
    gt = {"images": [{"id": 1, "height": 40, "width": 40}],
          "categories": [{"id": 1, "name": "person", "keypoints": ["a", "b"], "skeleton": []}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "num_keypoints": 2,
                           "keypoints": [5, 5, 2, 9, 9, 2], "bbox": [4, 4, 6, 6]}]}
    path = write(tmp_path, "kp.json", gt)
    dets = [{"image_id": 1, "category_id": 1, "score": 0.9, "keypoints": [5, 6, 1, 9, 9, 1]}]

    def load(COCO, COCOeval):
        coco = COCO(path)
        return coco.dataset, coco.loadRes(copy.deepcopy(dets)).dataset["annotations"]

    _, ours = both(load)
    assert ours.warned == []  # (the evaluation fails without it: its error names it)
    # pycocotools fails: so does boundary_api, as it does, the problem named in a note
    original, ours = both(evaluate, path, dets, "keypoints")
    assert type(ours.error) is type(original.error) and ours.error.__notes__ == [
        f"boundary_api: pycocotools' own evaluation fails on this input ({path}: annotation id 1 has no 'area')"]


# -------------------------------------------------- issue 25: ids and categories
def test_ground_truth_of_unknown_categories_is_warned_about(tmp_path):
    gt = small_gt()
    for k in range(3):
        gt["annotations"].append(dict(gt["annotations"][0], id=100 + k, category_id=7 + k % 2))
    path = write(tmp_path, "gt.json", gt)
    for iou in ("segm", "bbox"):
        _, ours = both(evaluate, path, small_dets(), iou)
        assert ours.warned == [f"{path}: 3 annotation(s) have category ids not in 'categories' (7, 8); "
                               "they are never evaluated"]
    with pytest.raises(ValueError, match=r"3 annotation\(s\) have category ids not in 'categories' \(7, 8\)"):
        boundary_api.COCO(path, strict=True)


def test_repeated_annotation_ids_are_warned_about(tmp_path):
    gt = small_gt()
    gt["annotations"][2]["id"] = 1
    path = write(tmp_path, "gt.json", gt)
    for iou in ("segm", "bbox"):
        _, ours = both(evaluate, path, small_dets(), iou)
        assert ours.warned == [f"{path}: 1 annotation(s) repeat the id of another annotation (1); an index "
                               "by id keeps only the last of them"]
    with pytest.raises(ValueError, match="repeat the id of another annotation"):
        boundary_api.COCO(path, strict=True)


def test_no_images_but_annotations(tmp_path):
    """pycocotools loads it; results for its images are then unknown."""
    gt = dict(small_gt(), images=[])
    path = write(tmp_path, "gt.json", gt)

    def load(COCO, COCOeval):
        coco = COCO(path)
        return coco.getImgIds(), len(coco.anns)

    _, ours = both(load)
    assert any("which is not in 'images'" in w for w in ours.warned)
    both(evaluate, path, small_dets(), "bbox")  # AssertionError in loadRes, for both
    with pytest.raises(ValueError, match="which is not in 'images'"):
        boundary_api.COCO(path, strict=True)


# ------------------------------------------------------- the exception classes
def _results_case(change):
    dets = box_dets()
    if change == "not a list":
        return {"annotations": dets}
    if change == "empty":
        return []
    if change == "unknown image":
        dets[1]["image_id"] = 77
    elif change == "entry not an object":
        dets[0] = [1, 2]
    elif change == "no image_id":
        del dets[2]["image_id"]
    elif change == "no category_id":
        del dets[2]["category_id"]
    elif change == "unhashable category_id":
        dets[2]["category_id"] = [1]
    elif change == "no bbox":
        del dets[3]["bbox"]
    elif change == "short bbox":
        dets[3]["bbox"] = [1, 2, 3]
    elif change == "bbox null":
        dets[3]["bbox"] = None
    elif change == "bbox of strings":
        dets[0]["bbox"] = ["1", "2", "3", "4"]
    elif change == "nothing to evaluate":
        dets = [{"image_id": 1, "category_id": 1, "score": 0.5}]
    return dets


RESULT_ERRORS = ["not a list", "empty", "unknown image", "entry not an object", "no image_id", "no category_id",
                 "unhashable category_id", "no bbox", "short bbox", "bbox null", "bbox of strings",
                 "nothing to evaluate"]


@pytest.mark.parametrize("change", RESULT_ERRORS)
def test_results_refused_with_pycocotools_exception_class(tmp_path, change):
    path = write(tmp_path, "gt.json", small_gt())
    original, ours = both(lambda COCO, COCOeval: COCO(path).loadRes(_results_case(change)) and None)
    assert original.error is not None
    for strict in (True, False):
        coco = boundary_api.COCO(path, strict=strict)
        with pytest.raises(type(original.error)):
            coco.loadRes(_results_case(change))


@pytest.mark.parametrize("seg", [None, [[1, 1, 5, 1, 5, 5]], {"size": [40, 50], "counts": [0, 2000]},
                                 {"counts": "abc"}, 5])
def test_segmentation_results_refused_with_pycocotools_exception_class(tmp_path, seg):
    path = write(tmp_path, "gt.json", small_gt())
    dets = small_dets()
    dets[1]["segmentation"] = seg
    original, ours = both(lambda COCO, COCOeval: COCO(path).loadRes(copy.deepcopy(dets)) and None)
    assert original.error is not None


def _gt_case(change):
    gt = small_gt()
    if change == "not an object":
        return [gt]
    if change == "annotation not an object":
        gt["annotations"][1] = "ann"
    elif change == "annotation without id":
        del gt["annotations"][1]["id"]
    elif change == "annotation without image_id":
        del gt["annotations"][1]["image_id"]
    elif change == "annotation without category_id":
        del gt["annotations"][1]["category_id"]
    elif change == "image without id":
        del gt["images"][1]["id"]
    elif change == "category without id":
        del gt["categories"][1]["id"]
    elif change == "annotations not a list":
        gt["annotations"] = 5
    return gt


GT_ERRORS = ["not an object", "annotation not an object", "annotation without id", "annotation without image_id",
             "annotation without category_id", "image without id", "category without id",
             "annotations not a list"]


@pytest.mark.parametrize("change", GT_ERRORS)
def test_ground_truth_refused_with_pycocotools_exception_class(tmp_path, change):
    path = write(tmp_path, "gt.json", _gt_case(change))
    original, _ = both(lambda COCO, COCOeval: COCO(path) and None)
    assert original.error is not None
    with pytest.raises(type(original.error)):
        boundary_api.COCO(path, strict=True)


def test_files_missing_or_not_json(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{'images': []")
    gt = write(tmp_path, "gt.json", small_gt())
    for path in (str(tmp_path / "missing.json"), str(bad), str(tmp_path)):
        original, ours = both(lambda COCO, COCOeval: COCO(path) and None)
        assert type(original.error).__name__ in ("FileNotFoundError", "JSONDecodeError", "IsADirectoryError")
        original, ours = both(lambda COCO, COCOeval: COCO(gt).loadRes(path) and None)
        assert ours.error is not None and path in str(ours.error)


def test_lookups_of_unknown_ids(tmp_path):
    path = write(tmp_path, "gt.json", small_gt())
    for call in (lambda c: c.loadAnns([99]), lambda c: c.loadImgs([99]), lambda c: c.loadCats([99])):
        original, ours = both(lambda COCO, COCOeval: call(COCO(path)))
        assert type(original.error) is KeyError
        assert str(ours.error).endswith("id 99 is not in this dataset")
    for call in (lambda c: c.getAnnIds(imgIds=[99]), lambda c: c.getImgIds(catIds=[99]),
                 lambda c: c.getCatIds(catIds=[99]), lambda c: c.loadAnns(c.getAnnIds(imgIds=[1], catIds=[99]))):
        original, ours = both(lambda COCO, COCOeval: call(COCO(path)))
        assert original.error is None


# ------------------------------------------------- state user code reads (loading)
def test_load_res_edits_and_types_as_pycocotools(tmp_path):
    path = write(tmp_path, "gt.json", small_gt())

    def load(COCO, COCOeval, dets):
        res = COCO(path).loadRes(dets)
        return dets, res.dataset, dict(res.anns), type(res).__name__

    for dets in (small_dets(), box_dets()):
        _, ours = both(load, dets)
        assert ours.value[0] is not None
    # from a file, read as columns: the same dicts once read
    dt_path = write(tmp_path, "dt.json", small_dets())
    both(lambda COCO, COCOeval: COCO(path).loadRes(dt_path).dataset)


def test_load_res_of_an_array_prints_in_pycocotools_order(tmp_path):
    path = write(tmp_path, "gt.json", small_gt())
    arr = np.array([[1, 5, 5, 10, 10, 0.9, 1], [2, 10, 12, 12, 12, 0.8, 1]], np.float64)
    both(lambda COCO, COCOeval: COCO(path).loadRes(arr).dataset)


def test_load_res_of_a_subclass_needing_a_path(tmp_path):
    path = write(tmp_path, "gt.json", small_gt())

    def load(COCO, COCOeval):
        class Mine(COCO):
            def __init__(self, annotation_file):
                super().__init__(annotation_file)

        res = Mine(path).loadRes(small_dets())
        from_file = Mine(path).loadRes(dt_path)  # (read as columns by boundary_api)
        return type(res) is COCO, type(from_file) is COCO, res.dataset["annotations"], from_file.dataset

    dt_path = write(tmp_path, "dt.json", small_dets())
    both(load)


def test_the_warning_is_one_line_pointing_at_the_callers_code(tmp_path):
    gt = small_gt()
    gt["annotations"][0]["image_id"] = 99
    path = write(tmp_path, "gt.json", gt)
    with pytest.warns(SuspectInputWarning) as caught:
        coco = silent(boundary_api.COCO, path)
    assert [w.filename for w in caught] == [__file__]
    assert str(caught[0].message) == (f"{path}: annotation id 1 refers to image 99, which is not in 'images'; "
                                      "loaded as pycocotools loads it (strict=True refuses it)")
    dets = small_dets()
    dets[0]["score"] = float("nan")
    with pytest.warns(SuspectInputWarning) as caught:
        silent(coco.loadRes, dets)
    assert [w.filename for w in caught] == [__file__]
    assert "\n" not in str(caught[0].message)


def silent(fn, *args, **kwargs):
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)


def test_ground_truth_rle_string_that_does_not_decode_to_its_image(tmp_path):
    """pycocotools evaluates it as it decodes it: Mask AP with a warning
    naming the annotation (box AP does not read it)."""
    gt = small_gt()
    gt["annotations"][1]["segmentation"]["counts"] = "0000"
    path = write(tmp_path, "gt.json", gt)
    _, ours = both(evaluate, path, small_dets(), "segm")
    assert len(ours.warned) == 1 and ours.warned[0].startswith("annotation id 2 (image 1): ")
    _, ours = both(evaluate, path, small_dets(), "bbox")
    assert ours.warned == []
    coco = silent(boundary_api.COCO, path, strict=True)
    ev = boundary_api.COCOeval(coco, silent(coco.loadRes, small_dets()), "segm")
    with pytest.raises(ValueError, match="^annotation id 2 \\(image 1\\): "):
        silent(ev.evaluate)


# ------------------------------------------- results file removed after loadRes
def _with_boxes(dets):
    """Results that carry a box and a mask (loadRes' 'bbox' branch)."""
    out = []
    for d in dets:
        x = dict(d)
        x["bbox"] = [float(v) for v in mask_utils.toBbox(d["segmentation"])]
        out.append(x)
    return out


@pytest.mark.parametrize("dets", [small_dets, lambda: _with_boxes(small_dets())], ids=["masks", "boxes+masks"])
def test_results_file_removed_after_load_res(tmp_path, dets):
    """loadRes(path), the file removed, then Box AP, Mask AP and the dicts:
    boundary_api gathers box results' RLE strings only when first needed,
    from the mapping of the file it holds (pycocotools has read them all)."""
    gt = write(tmp_path, "gt.json", small_gt())

    def removed(COCO, COCOeval, first):
        dt_path = write(tmp_path, f"dt_{COCO.__module__}.json", dets())
        coco = COCO(gt)
        res = coco.loadRes(dt_path)
        os.remove(dt_path)
        out = []
        for iou in ("bbox", first, "bbox" if first == "segm" else "segm"):
            if iou == "anns":
                out.append((res.dataset["annotations"], dict(res.anns), dict(res.imgToAnns)))
                continue
            ev = COCOeval(coco, res, iou)
            ev.evaluate()
            ev.accumulate()
            ev.summarize()
            out.append([float(v) for v in ev.stats])
        return out

    for first in ("segm", "anns"):
        _, ours = both(removed, first)
        assert ours.warned == [] and ours.error is None
