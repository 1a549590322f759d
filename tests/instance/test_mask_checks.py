"""boundary_api.instance._mask_checks: input on which pycocotools' C code (and
so lvis') gives a number is evaluated to that number, and input on which it
crashes or never ends is refused where the mask is made, never handed to it
(issue 40 item 3, found by differential fuzzing; issue 45: loading and box
evaluations take what pycocotools takes, and the refusal happens when a mask
evaluation is about to make the mask).

The end-to-end cases run the public API in a child process with a timeout, so
that a crash or a hang fails the test instead of ending pytest; pycocotools
and lvis run there too, for their numbers, and, where boundary_api refuses, to
show that they crash or hang on the input.  The checks alone (which never
reach pycocotools) run in this process.
"""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pycocotools.mask as mask_utils
import pytest

from boundary_api.instance._mask_checks import (UnsafePolygonError, UnsafeRLEError, check_polygons,
                                                check_rle_dict, check_rle_size, pycocotools_area_bbox,
                                                pycocotools_iou, pycocotools_polygon_rle, refuse_unsafe_polygons,
                                                terminated_for_pycocotools)

H, W = 20, 20


def _rle(h=H, w=W):
    m = np.zeros((h, w), np.uint8, order="F")
    m[3:9, 4:12] = 1
    r = mask_utils.encode(m)
    return {"size": [h, w], "counts": r["counts"].decode()}


def _counts(h=H, w=W):
    """The mask of :func:`_rle` as uncompressed counts."""
    m = np.zeros((h, w), np.uint8, order="F")
    m[3:9, 4:12] = 1
    flat, out, run, cur = m.flatten(order="F"), [], 0, 0
    for v in flat:
        if v != cur:
            out.append(run)
            run, cur = 0, v
        run += 1
    return out + [run]


def _gt(height=H, width=W, segmentation=None, lvis=False):
    seg = segmentation if segmentation is not None else [[4, 3, 12, 3, 12, 9, 4, 9]]
    image = {"id": 1, "height": height, "width": width}
    category = {"id": 1, "name": "a"}
    if lvis:
        image.update(neg_category_ids=[], not_exhaustive_category_ids=[])
        category["frequency"] = "f"
    return {"images": [image], "categories": [category],
            "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "segmentation": seg, "area": 48.0,
                             "bbox": [4, 3, 8, 6], "iscrowd": 0}]}


def _results(size=None, score=0.9, counts=None, bbox=None):
    seg = _rle()
    if size is not None:
        seg["size"] = size
    if counts is not None:
        seg["counts"] = counts
    r = {"image_id": 1, "category_id": 1, "segmentation": seg, "score": score}
    if bbox is not None:
        r["bbox"] = bbox
    return [r]


#: a string that decodes, but to 20 x 18 pixels, not its 20 x 20: its mask
#: IoU with a mask of the whole image never ends in pycocotools
SHORT = _rle(H, 18)["counts"]
#: the fuzzer's finding: counts written as floats, one of them fractional,
#: so that pycocotools' truncated counts cover 399 of the 400 pixels
FLOAT_COUNTS = [float(c) for c in _counts()][:-1] + [_counts()[-1] - 0.5]

#: pycocotools' string of a mask of the whole 20 x 20 image
FULL = mask_utils.encode(np.ones((H, W), np.uint8, order="F"))["counts"].decode()
#: a mask of the whole image and a run past it: 416 pixels of 400
LONG = FULL + "`0"

# case -> (ground truth, results, iou type, library, expected outcome of
# boundary_api: an exception class name and a part of its message, where the
# original crashes or never ends (or, "documented", where the difference is in
# docs/known_differences.md); "original" for the original's numbers)
CASES = {
    # issue 45: what pycocotools evaluates, boundary_api evaluates
    "ground-truth image of height 0, box AP": (_gt(height=0), _results(bbox=[4.0, 3.0, 8.0, 6.0]), "bbox", "coco",
                                               "original"),
    "ground-truth image of height 0, Mask AP": (_gt(height=0), _results(), "segm", "coco", "original"),
    "LVIS ground-truth image of height 0, Mask AP": (_gt(height=0, lvis=True), _results(), "segm", "lvis",
                                                     "original"),
    "result string '!!!garbage'": (_gt(), _results(counts="!!!garbage"), "segm", "coco", "original"),
    "LVIS result string '!!!garbage'": (_gt(lvis=True), _results(counts="!!!garbage"), "segm", "lvis", "original"),
    "result string past its image, boxes apart": (
        _gt(segmentation=[[14, 14, 18, 14, 18, 18, 14, 18]]), _results(counts="1`0"), "segm", "coco", "original"),
    "result RLE of height 0 with its box": (_gt(), _results(size=[0, W], bbox=[4.0, 3.0, 8.0, 6.0]), "bbox",
                                            "coco", "original"),
    "result RLE of width 0": (_gt(), _results(size=[H, 0]), "segm", "coco", "original"),
    "image height 5e-324": (_gt(height=5e-324), _results(), "segm", "coco", "original"),
    "image width 0": (_gt(width=0), _results(), "bbox", "coco", "original"),
    "image width 0, Mask AP": (_gt(width=0), _results(), "segm", "coco", "original"),
    "float counts not covering the image, box AP": (
        _gt(segmentation={"size": [H, W], "counts": FLOAT_COUNTS}),
        _results(bbox=[4.0, 3.0, 8.0, 6.0]), "bbox", "coco", "original"),
    "float counts covering the image": (
        _gt(segmentation={"size": [H, W], "counts": [float(c) for c in _counts()]}), _results(), "segm", "coco",
        "original"),
    "polygon coordinate of 401 digits, box AP": (_gt(segmentation=[[4, 3, 12, 3, 12, 9, 4, 10 ** 400]]), _results(),
                                                 "bbox", "coco", "original"),
    "score of 401 digits": (_gt(), _results(score=10 ** 400), "segm", "coco", "original"),
    "score of 401 digits, box AP": (_gt(), _results(score=10 ** 400, bbox=[4.0, 3.0, 8.0, 6.0]), "bbox", "coco",
                                    "original"),
    # where the original crashes or never ends: refused
    "result RLE of height 0": (_gt(), _results(size=[0, W]), "segm", "coco",
                               ("UnsafeRLEError", "res.json: result #0 (image 1): RLE size [0, 20] has a height of "
                                                  "0 pixels as pycocotools reads it, and a foreground run")),
    "result RLE of height 0.5": (_gt(), _results(size=[0.5, W]), "bbox", "coco",
                                 ("UnsafeRLEError", "result #0 (image 1): RLE size [0.5, 20] has a height of 0")),
    "LVIS result RLE of height 0": (_gt(lvis=True), _results(size=[0, W]), "segm", "lvis",
                                    ("UnsafeRLEError", "res.json: result #0 (image 1): RLE size [0, 20] has a height")),
    "float counts not covering the image": (
        _gt(segmentation={"size": [H, W], "counts": FLOAT_COUNTS}), _results(), "segm", "coco",
        ("UnsafeRLEError", "result id 1 (image 1) and ground truth annotation id 1 (image 1): their RLE counts cover "
                           "400 and 399 pixels of a 20x20 = 400 mask, and pycocotools' mask IoU of two such masks "
                           "never ends")),
    "result string shorter than its image": (_gt(), _results(counts=SHORT), "segm", "coco",
                                             ("UnsafeRLEError", "their RLE counts cover 360 and 400 pixels")),
    "LVIS result string shorter than its image": (_gt(lvis=True), _results(counts=SHORT), "segm", "lvis",
                                                  ("UnsafeRLEError", "their RLE counts cover 360 and 400 pixels")),
    "result string past its image": (_gt(), _results(counts=LONG), "segm", "coco",
                                     ("UnsafeRLEError", "their RLE counts cover 416 and 400 pixels")),
    "polygons on an image of width 0": (
        _gt(width=0, segmentation=[[4, 3, 12, 3, 12, 9, 4, 9], [1, 1, 3, 1, 3, 3]]), _results(), "segm", "coco",
        ("UnsafePolygonError", "ground truth annotation id 1 (image 1): its polygons need the image's size, and "
                               "pycocotools reads the image's height 20 and width 0 as 20x0 pixels: its merge of "
                               "the 2 polygons writes past the end of its buffer")),
    # documented: C leaves the conversion of a NaN to an int undefined
    "polygon coordinate of 401 digits": (_gt(segmentation=[[4, 3, 12, 3, 12, 9, 4, 10 ** 400]]), _results(),
                                         "segm", "coco",
                                         ("UnsafePolygonError", "ground truth annotation id 1 (image 1): polygon 0 "
                                                                "has a non-finite or huge coordinate", "documented")),
    "box-only results with a NaN box, Mask AP": (
        _gt(), [{"image_id": 1, "category_id": 1, "bbox": [4.0, float("nan"), 8.0, 6.0], "score": 0.9}], "segm",
        "coco", ("UnsafePolygonError", "result id 1 (image 1): polygon 0 has a non-finite or huge coordinate",
                 "documented")),
}

_CHILD = textwrap.dedent("""
    import contextlib, io, json, logging, sys, warnings
    warnings.simplefilter("always")
    logging.disable(logging.CRITICAL)
    lib, gt, dt, iou = sys.argv[1:5]
    if lib == "coco":
        from boundary_api import COCO, COCOeval
    elif lib == "pycocotools":
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    elif lib == "lvis":
        from boundary_api import LVIS, LVISEval, LVISResults
    else:  # lvis itself (its accumulate as on numpy < 1.24, which still had np.float)
        import numpy
        numpy.float = float
        from lvis import LVIS, LVISEval, LVISResults
    try:
        with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings(record=True) as caught:
            if lib in ("lvis", "lvis-original"):
                ev = LVISEval(LVIS(gt), LVISResults(LVIS(gt), dt), iou)
                ev.run()
                stats = list(ev.get_results().values())
            else:
                coco = COCO(gt)
                ev = COCOeval(coco, coco.loadRes(dt), iou)
                ev.evaluate()
                ev.accumulate()
                ev.summarize()
                stats = list(ev.stats)
        print("RESULT", json.dumps([float(v) for v in stats]))
        print("WARNINGS", json.dumps(sorted({w.category.__name__ for w in caught})))
    except Exception as exc:
        print("ERROR", type(exc).__name__, str(exc))
""")

#: seconds after which the original is taken to never end on a case
HANG = 20


def _child(lib, gt, dt, iou, tmp_path):
    """``(outcome, warnings)`` of the child: ``RESULT [stats]`` or ``ERROR class
    message``, and the warning classes it saw; for the originals, ``CRASH
    <signal>`` and ``HANG`` where they crash or never end."""
    original = lib in ("pycocotools", "lvis-original")
    try:
        run = subprocess.run([sys.executable, "-c", _CHILD, lib, gt, dt, iou], capture_output=True, text=True,
                             timeout=HANG if original else 120, cwd=str(tmp_path))
    except subprocess.TimeoutExpired:
        assert original, f"{lib} never ended"
        return "HANG", []
    if original and run.returncode < 0:
        return f"CRASH {-run.returncode}", []
    assert run.returncode == 0, f"{lib} ended with {run.returncode}: {run.stderr[-2000:]}"
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith(("RESULT ", "ERROR "))]
    assert len(lines) == 1, run.stdout
    caught = [json.loads(ln[9:]) for ln in run.stdout.splitlines() if ln.startswith("WARNINGS ")]
    return lines[0], caught[0] if caught else []


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_what_the_original_evaluates_is_evaluated_and_its_crashes_refused(case, tmp_path):
    gt, dt, iou, lib, expected = CASES[case]
    gt_path, dt_path = str(tmp_path / "gt.json"), str(tmp_path / "res.json")
    with open(gt_path, "w") as f:
        json.dump(gt, f)
    with open(dt_path, "w") as f:
        json.dump(dt, f)
    got, caught = _child(lib, gt_path, dt_path, iou, tmp_path)
    theirs, _ = _child("pycocotools" if lib == "coco" else "lvis-original", gt_path, dt_path, iou, tmp_path)
    if expected == "original":
        assert got == theirs and got.startswith("RESULT "), (got, theirs)
        assert "SuspectInputWarning" in caught or case.startswith("score")
        return
    name, message = expected[:2]
    assert got.startswith(f"ERROR {name} ") and message in got, got
    assert "\n" not in got
    if expected[2:] != ("documented",):
        assert theirs == "HANG" or theirs.startswith("CRASH "), theirs


# ----------------------------------------------------- the checks, in this process
@pytest.mark.parametrize("size", [[0, 5], [0.5, 5], [5, 0], [5, 0.99], [False, 5], (0, 5)])
def test_rle_sizes_of_no_pixels_are_refused(size):
    with pytest.raises(UnsafeRLEError, match=r"^x: RLE size .* has a side of no pixels"):
        check_rle_size(size, "x")
    with pytest.raises(UnsafeRLEError):
        check_rle_dict({"size": size, "counts": "abc"}, None, None, "x")


@pytest.mark.parametrize("size", [[1, 1], [5.0, 5], [None, 5], ["5", 5], [float("nan"), 5], [-1, 5], [5]])
def test_other_rle_sizes_are_left_to_the_other_checks(size):
    check_rle_size(size, "x")  # (pycocotools raises by itself on them, or takes them as they are)


def test_polygons_with_coordinates_beyond_the_float_range():
    for poly in ([4, 3, 12, 3, 12, 9, 4, 10 ** 400], [10 ** 400, -(10 ** 400), 1, 1, 2, 2]):
        with pytest.raises(UnsafePolygonError, match="too large for a float: 1000000000"):
            check_polygons([poly], H, W, "x")
        with pytest.raises(UnsafePolygonError, match="too large for a float"):
            check_polygons([poly], None, None, "x")
    with pytest.raises(UnsafePolygonError, match="far outside any image: 2000000.0"):
        check_polygons([[1, 1, 2, 2, 3, 2e6]], None, None, "x")
    check_polygons([[1, 1, 2, 2, 3, 4e5]], None, None, "x")  # (no image size to compare with)


def _describe(a):
    return f"ann {a['id']}"


def _dt(i):
    return f"dt {i}"


def _gt_name(j):
    return f"gt {j}"


def test_refuse_unsafe_polygons():
    imgs = {1: {"id": 1, "height": H, "width": W}, 2: {"id": 2, "height": 0.5, "width": W},
            3: {"id": 3, "height": H, "width": 0}}
    safe = [{"id": 1, "image_id": 1, "segmentation": [[1, 1, 5, 1, 5, 5]]},
            {"id": 2, "image_id": 1, "segmentation": _rle()},
            # an image pycocotools reads as 0 pixels high: its polygons are empty masks there
            {"id": 3, "image_id": 2, "segmentation": [[1, 1, 5, 1, 5, 5], [6, 6, 9, 6, 9, 9]]},
            # one polygon on an image of width 0: no merge, nothing written past a buffer
            {"id": 4, "image_id": 3, "segmentation": [[1, 1, 5, 1, 5, 5]]},
            {"id": 5, "image_id": 9, "segmentation": [[1, 1, 5, 1, 5, 5]]},   # (no such image: its KeyError)
            {"id": 6, "image_id": 1}]
    refuse_unsafe_polygons(safe, imgs, _describe)
    for ann, message in (
            ({"id": 10, "image_id": 1, "segmentation": [[1, 1, 5, 1, 5, float("nan")]]},
             "ann 10: polygon 0 has a non-finite or huge coordinate"),
            ({"id": 11, "image_id": 1, "segmentation": [[1, 1, 5, 1, 5, 2e6]]},
             "ann 11: polygon 0 has a non-finite or huge coordinate"),
            ({"id": 12, "image_id": 3, "segmentation": [[1, 1, 5, 1, 5, 5], [6, 6, 9, 6, 9, 9]]},
             "ann 12: its polygons need the image's size, and pycocotools reads the image's height 20 and width "
             "0 as 20x0 pixels: its merge of the 2 polygons writes past the end of its buffer")):
        with pytest.raises(UnsafePolygonError) as info:
            refuse_unsafe_polygons(safe + [ann], imgs, _describe)
        assert str(info.value).startswith(message), str(info.value)


def test_polygons_on_an_image_of_no_pixels_are_pycocotools():
    polys = [[1, 1, 5, 1, 5, 5], [6, 6, 9, 6, 9, 9.5]]
    for h, w in ((0, W), (0.7, W), (5e-324, 0), (False, 3)):
        want = mask_utils.merge(mask_utils.frPyObjects(polys, h, w))
        assert pycocotools_polygon_rle(polys, h, w, "x") == want
    assert pycocotools_polygon_rle(polys, H, W, "x") is None        # (pycocotools' own code runs)
    assert pycocotools_polygon_rle(polys, float("nan"), W, "x") is None   # (it raises by itself)
    assert pycocotools_polygon_rle([[1, 2, 3, 4]], 0, W, "x") is None     # (likewise: a box, not a list of them)


def test_pycocotools_iou():
    full, short = {"size": [H, W], "counts": FULL}, {"size": [H, W], "counts": SHORT}
    # valid masks: pycocotools' own iou runs
    assert pycocotools_iou([full], [full], [0], _dt, _gt_name) is None
    # one list empty: pycocotools still decodes every string (its own call, on a NUL-ended copy)
    assert pycocotools_iou([], [short], [0], _dt, _gt_name) == []
    assert pycocotools_iou([], [full], [0], _dt, _gt_name) is None
    # a string past its end, of the right length: pycocotools' number, computed here
    garbage = {"size": [427, 640], "counts": "!!!garbage"}
    got = pycocotools_iou([garbage], [{"size": [427, 640], "counts": "0"}], [0], _dt, _gt_name)
    assert got.shape == (1, 1) and got.dtype == np.float64
    # two masks of one size and different coverage whose boxes overlap: never ends
    with pytest.raises(UnsafeRLEError, match=r"^dt 0 and gt 1: their RLE counts cover 360 and 400 pixels of a "
                                             r"20x20 = 400 mask, and pycocotools' mask IoU of two such masks never "
                                             r"ends$"):
        pycocotools_iou([short], [{"size": [H, W], "counts": "`<"}, full], [0, 1], _dt, _gt_name)
    # a height of 0 with a foreground run: its box divides by it
    with pytest.raises(UnsafeRLEError, match=r"^gt 0: RLE size \[0, 20\] has a height of 0 pixels"):
        pycocotools_iou([full], [{"size": [0, W], "counts": FULL}], [0], _dt, _gt_name)
    # sizes or crowd flags pycocotools refuses by itself: its own call, and its own exception
    with pytest.raises(OverflowError):
        pycocotools_iou([short], [{"size": [-1, W], "counts": FULL}], [0], _dt, _gt_name)
    with pytest.raises(OverflowError):
        pycocotools_iou([short], [full], [300], _dt, _gt_name)


def test_pycocotools_area_bbox():
    full = {"size": [H, W], "counts": FULL}
    area, box = pycocotools_area_bbox(full, True, "x")
    assert type(area) is np.uint32 and area == 400 and box.tolist() == [0.0, 0.0, 20.0, 20.0]
    garbage = {"size": [427, 640], "counts": "!!!garbage"}
    area, box = pycocotools_area_bbox(garbage, True, "x")
    fixed = dict(garbage, counts=terminated_for_pycocotools(garbage))
    assert fixed["counts"] == "!!!garbage\0"
    assert area == mask_utils.area(fixed) == 4278902322 and box.tolist() == mask_utils.toBbox(fixed).tolist()
    assert pycocotools_area_bbox({"size": [0, W], "counts": FULL}, False, "x")[1] is None
    with pytest.raises(UnsafeRLEError, match="^x: RLE size .0, 20. has a height of 0 pixels"):
        pycocotools_area_bbox({"size": [0, W], "counts": FULL}, True, "x")
    assert terminated_for_pycocotools(full) is None
    assert terminated_for_pycocotools({"size": [1, 1], "counts": b"P"}) == b"P\0"


def test_child_processes_import_this_boundary_api():
    out = subprocess.run([sys.executable, "-c", "import boundary_api; print(boundary_api.__file__)"],
                         capture_output=True, text=True, check=True).stdout.strip()
    import boundary_api

    assert os.path.samefile(out, boundary_api.__file__)
