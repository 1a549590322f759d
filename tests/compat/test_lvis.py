"""boundary_api.LVIS / LVISResults / LVISEval against lvis: the same user
code run with both, comparing numbers, exception classes and value types
(issue 24 items 2-4 and issue 25 items 5, 6, 8, LVIS side)."""
import copy
import json
import os
import warnings

import lvis
import numpy as np
import pycocotools.mask as mask_utils
import pytest

import boundary_api
from boundary_api import SuspectInputWarning

from ._same import assert_same, run

ORIGINAL = (lvis.LVIS, lvis.LVISResults, lvis.LVISEval)
OURS = (boundary_api.LVIS, boundary_api.LVISResults, boundary_api.LVISEval)


@pytest.fixture(autouse=True)
def _numpy_float_for_lvis(monkeypatch):
    # lvis 0.5.3's accumulate calls np.float, gone from numpy >= 1.24
    monkeypatch.setattr(np, "float", float, raising=False)


def both(fn, *args):
    original = run(fn, *ORIGINAL, *copy.deepcopy(args))
    ours = run(fn, *OURS, *copy.deepcopy(args))
    assert_same(original, ours, printed=False)
    return original, ours


def rle(h, w, y0, x0, size):
    m = np.zeros((h, w), np.uint8)
    m[y0:y0 + size, x0:x0 + size] = 1
    r = mask_utils.encode(np.asfortranarray(m))
    r["counts"] = r["counts"].decode("ascii")
    return r


def small_gt(h=40, w=50):
    images = [{"id": i, "height": h, "width": w, "neg_category_ids": [], "not_exhaustive_category_ids": []}
              for i in (1, 2)]
    cats = [{"id": 1, "name": "a", "frequency": "f"}, {"id": 2, "name": "b", "frequency": "r"}]
    anns = [{"id": 1, "image_id": 1, "category_id": 1, "area": 100.0, "bbox": [5, 5, 10, 10],
             "segmentation": [[5, 5, 15, 5, 15, 15, 5, 15]]},
            {"id": 2, "image_id": 1, "category_id": 2, "area": 64.0, "bbox": [20, 20, 8, 8],
             "segmentation": rle(h, w, 20, 20, 8)},
            {"id": 3, "image_id": 2, "category_id": 1, "area": 144.0, "bbox": [10, 12, 12, 12],
             "segmentation": [[10, 12, 22, 12, 22, 24, 10, 24]]}]
    return {"images": images, "categories": cats, "annotations": anns}


def small_dets(h=40, w=50):
    return [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": rle(h, w, 6, 5, 10)},
            {"image_id": 1, "category_id": 2, "score": 0.8, "segmentation": rle(h, w, 20, 21, 8)},
            {"image_id": 2, "category_id": 1, "score": 0.7, "segmentation": rle(h, w, 11, 10, 12)},
            {"image_id": 2, "category_id": 2, "score": 0.6, "segmentation": rle(h, w, 1, 1, 5)}]


def box_dets():
    return [{"image_id": 1, "category_id": 1, "score": 0.9, "bbox": [5.5, 5.0, 10.0, 9.0]},
            {"image_id": 1, "category_id": 2, "score": 0.8, "bbox": [20.0, 21.0, 8.0, 8.0]},
            {"image_id": 2, "category_id": 1, "score": 0.7, "bbox": [10.0, 11.0, 12.0, 13.0]}]


def write(tmp_path, name, doc) -> str:
    path = str(tmp_path / name)
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def evaluate(LVIS, LVISResults, LVISEval, gt_path, dets, iou_type):
    gt = LVIS(gt_path)
    dt = LVISResults(gt, dets)
    ev = LVISEval(gt, dt, iou_type)
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    return dict(ev.get_results()), ev.eval["precision"], dt.dataset["annotations"]


def test_plain_input(tmp_path):
    path = write(tmp_path, "gt.json", small_gt())
    for iou, dets in (("segm", small_dets()), ("bbox", box_dets()), ("segm", box_dets())):
        _, ours = both(evaluate, path, dets, iou)
        assert ours.warned == []


@pytest.mark.parametrize("change", ["rle size", "nan score", "no score"])
def test_suspect_results_are_evaluated_as_lvis_does(tmp_path, change):
    path = write(tmp_path, "gt.json", small_gt())
    dets = small_dets()
    if change == "rle size":
        dets[0]["segmentation"] = rle(10, 10, 0, 0, 5)
    elif change == "nan score":
        dets[1]["score"] = float("nan")
    else:
        del dets[2]["score"]
    for iou in ("segm", "bbox"):
        original, ours = both(evaluate, path, dets, iou)
        if change == "no score":  # (lvis fails without it: no warning, its error names it, issue 40)
            assert ours.warned == [] and type(ours.error) is type(original.error)
            assert ours.error.__notes__ == ["boundary_api: lvis' own evaluation fails on this input (results: "
                                            "result #2 (image 2) has no 'score')"]
        else:
            assert len(ours.warned) == 1
    gt = boundary_api.LVIS(path)
    with pytest.raises(ValueError):
        boundary_api.LVISResults(gt, copy.deepcopy(dets), strict=True)
    with pytest.raises(ValueError, match="iou_type='boundary' cannot evaluate input that failed the checks"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SuspectInputWarning)  # (asserted above)
            boundary_api.LVISEval(gt, boundary_api.LVISResults(gt, copy.deepcopy(dets)), "boundary")


@pytest.mark.parametrize("change", ["image without size", "annotation on unknown image", "no area"])
def test_suspect_ground_truth_is_evaluated_as_lvis_does(tmp_path, change):
    gt = small_gt()
    if change == "image without size":
        del gt["images"][1]["height"]
    elif change == "annotation on unknown image":
        gt["annotations"][0]["image_id"] = 99
    else:
        del gt["annotations"][2]["area"]
    path = write(tmp_path, "gt.json", gt)
    for iou, dets in (("bbox", box_dets()), ("segm", small_dets())):
        original, ours = both(evaluate, path, dets, iou)
        if change == "no area":  # (lvis fails without it: no warning, its error names it, issue 40)
            assert ours.warned == [] and type(ours.error) is type(original.error)
            assert ours.error.__notes__ == [f"boundary_api: lvis' own evaluation fails on this input ({path}: "
                                            "annotation id 3 has no 'area')"]
        else:
            assert ours.warned
    with pytest.raises(ValueError):
        boundary_api.LVIS(path, strict=True)


def test_unknown_categories_and_repeated_ids(tmp_path):
    gt = small_gt()
    gt["annotations"].append(dict(gt["annotations"][0], id=50, category_id=9))
    gt["annotations"][2]["id"] = 2
    path = write(tmp_path, "gt.json", gt)
    _, ours = both(evaluate, path, small_dets(), "segm")
    assert ours.warned == [
        f"{path}: 1 annotation(s) repeat the id of another annotation (2); an index by id keeps only the last "
        "of them",
        f"{path}: 1 annotation(s) have category ids not in 'categories' (9); they are never evaluated"]
    with pytest.raises(ValueError, match="repeat the id"):
        boundary_api.LVIS(path, strict=True)


def test_no_images_but_annotations(tmp_path):
    path = write(tmp_path, "gt.json", dict(small_gt(), images=[]))
    _, ours = both(lambda LVIS, LVISResults, LVISEval: sorted(LVIS(path).anns))
    assert ours.warned
    both(evaluate, path, small_dets(), "segm")  # unknown image ids: AssertionError for both
    with pytest.raises(ValueError, match="which is not in 'images'"):
        boundary_api.LVIS(path, strict=True)


RESULT_ERRORS = ["not a list", "empty", "unknown image", "entry not an object", "no image_id", "no category_id",
                 "no bbox", "short bbox", "bbox null", "segmentation null", "segmentation without size"]


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
    elif change == "no bbox":
        del dets[2]["bbox"]
    elif change == "short bbox":
        dets[2]["bbox"] = [1, 2, 3]
    elif change == "bbox null":
        dets[2]["bbox"] = None
    elif change == "segmentation null":
        dets = small_dets()
        dets[1]["segmentation"] = None
    elif change == "segmentation without size":
        dets = small_dets()
        del dets[1]["segmentation"]["size"]
    return dets


@pytest.mark.parametrize("change", RESULT_ERRORS)
def test_results_refused_with_lvis_exception_class(tmp_path, change):
    path = write(tmp_path, "gt.json", small_gt())
    original, _ = both(lambda LVIS, LVISResults, LVISEval: LVISResults(LVIS(path), _results_case(change)) and None)
    assert original.error is not None
    with pytest.raises(type(original.error)):
        boundary_api.LVISResults(boundary_api.LVIS(path), _results_case(change), strict=True)


@pytest.mark.parametrize("change", ["not an object", "no annotations", "annotation without id",
                                    "annotation without category_id", "image without id"])
def test_ground_truth_refused_with_lvis_exception_class(tmp_path, change):
    gt = small_gt()
    if change == "not an object":
        gt = [gt]
    elif change == "no annotations":
        del gt["annotations"]
    elif change == "annotation without id":
        del gt["annotations"][0]["id"]
    elif change == "annotation without category_id":
        del gt["annotations"][0]["category_id"]
    else:
        del gt["images"][0]["id"]
    path = write(tmp_path, "gt.json", gt)
    original, _ = both(lambda LVIS, LVISResults, LVISEval: LVIS(path) and None)
    assert original.error is not None


def test_files_missing_or_not_json_and_unknown_ids(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    for path in (str(tmp_path / "missing.json"), str(bad)):
        original, ours = both(lambda LVIS, LVISResults, LVISEval: LVIS(path) and None)
        assert path in str(ours.error)
    path = write(tmp_path, "gt.json", small_gt())
    for call in (lambda g: g.load_anns([99]), lambda g: g.load_imgs([99]), lambda g: g.load_cats([99])):
        original, ours = both(lambda LVIS, LVISResults, LVISEval: call(LVIS(path)))
        assert type(original.error) is KeyError
        assert str(ours.error).endswith("id 99 is not in this dataset")


def test_results_types_as_lvis(tmp_path):
    path = write(tmp_path, "gt.json", small_gt())
    dt_path = write(tmp_path, "dt.json", small_dets())

    def load(LVIS, LVISResults, LVISEval, dets):
        res = LVISResults(LVIS(path), dets)
        return res.dataset["annotations"], dets

    both(load, small_dets())
    both(load, box_dets())
    both(load, dt_path)


def test_results_file_removed_after_loading(tmp_path):
    """LVISResults(path), the file removed, then Box AP, Mask AP and the
    dicts: box results' RLE strings are gathered when first needed, from the
    mapping boundary_api holds (lvis has read them all)."""
    path = write(tmp_path, "gt.json", small_gt())
    dets = small_dets()
    for d in dets:
        d["bbox"] = [float(v) for v in mask_utils.toBbox(d["segmentation"])]

    def removed(LVIS, LVISResults, LVISEval, first):
        dt_path = write(tmp_path, f"dt_{LVIS.__module__}.json", dets)
        gt = LVIS(path)
        dt = LVISResults(gt, dt_path)
        os.remove(dt_path)
        out = []
        for iou in ("bbox", first, "segm" if first == "anns" else "bbox"):
            if iou == "anns":
                out.append((dt.dataset["annotations"], dict(dt.anns)))
                continue
            ev = LVISEval(gt, dt, iou)
            ev.evaluate()
            ev.accumulate()
            ev.summarize()
            out.append((dict(ev.get_results()), ev.eval["precision"]))
        return out

    for first in ("segm", "anns"):
        _, ours = both(removed, first)
        assert ours.error is None and ours.warned == []
