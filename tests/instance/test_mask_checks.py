"""boundary_api.instance._mask_checks: masks on which pycocotools' C code (and so
lvis') crashes or never ends are refused, never handed to it (issue 40 item 3,
found by differential fuzzing).

The end-to-end cases run the public API in a child process with a timeout, so
that a crash or a hang fails the test instead of ending pytest; pycocotools
itself runs there too wherever it survives, for its numbers.  The checks alone
(which never reach pycocotools) run in this process.
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
                                                check_rle_dict, check_rle_size, refuse_unsafe_masks)

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

# case -> (ground truth, results, iou type, library, expected outcome of
# boundary_api: an exception class name and a part of its message, or
# "pycocotools" for pycocotools' numbers, pycocotools surviving it)
CASES = {
    "result RLE of height 0": (_gt(), _results(size=[0, W]), "segm", "coco",
                               ("UnsafeRLEError", "res.json: result #0 (image 1): RLE size [0, 20] has a side of "
                                                  "no pixels (pycocotools' C code crashes on it)")),
    "result RLE of height 0.5": (_gt(), _results(size=[0.5, W]), "bbox", "coco",
                                 ("UnsafeRLEError", "result #0 (image 1): RLE size [0.5, 20] has a side of no "
                                                    "pixels")),
    "result RLE of width 0": (_gt(), _results(size=[H, 0]), "segm", "coco",
                              ("UnsafeRLEError", "RLE size [20, 0] has a side of no pixels")),
    "LVIS result RLE of height 0": (_gt(lvis=True), _results(size=[0, W]), "segm", "lvis",
                                    ("UnsafeRLEError", "result #0 (image 1): RLE size [0, 20] has a side")),
    "image height 5e-324": (_gt(height=5e-324), _results(), "segm", "coco",
                            ("UnsafePolygonError", "gt.json: annotation id 1 (image 1): its polygons need the "
                                                   "image's size, and the image's height 5e-324 or width 20 is "
                                                   "less than one pixel")),
    "image width 0": (_gt(width=0), _results(), "bbox", "coco",
                      ("UnsafePolygonError", "the image's height 20 or width 0 is less than one pixel")),
    "float counts not covering the image": (
        _gt(segmentation={"size": [H, W], "counts": FLOAT_COUNTS}), _results(), "segm", "coco",
        ("UnsafeRLEError", "ground truth annotation id 1 (image 1): RLE counts cover 399 pixels, not its 20x20 = "
                           "400, and some of them are foreground, and another mask of that size lies on its "
                           "image (pycocotools' mask IoU of the two never ends)")),
    "float counts not covering the image, box AP": (
        _gt(segmentation={"size": [H, W], "counts": FLOAT_COUNTS}),
        _results(bbox=[4.0, 3.0, 8.0, 6.0]), "bbox", "coco", "pycocotools"),
    "float counts covering the image": (
        _gt(segmentation={"size": [H, W], "counts": [float(c) for c in _counts()]}), _results(), "segm", "coco",
        "pycocotools"),
    "result string shorter than its image": (_gt(), _results(counts=SHORT), "segm", "coco",
                                             ("UnsafeRLEError", "result id 1 (image 1): segmentation counts does "
                                                                "not cover its 20x20 pixels")),
    "LVIS result string shorter than its image": (_gt(lvis=True), _results(counts=SHORT), "segm", "lvis",
                                                  ("UnsafeRLEError", "segmentation counts does not cover")),
    "polygon coordinate of 401 digits": (_gt(segmentation=[[4, 3, 12, 3, 12, 9, 4, 10 ** 400]]), _results(),
                                         "bbox", "coco",
                                         ("UnsafePolygonError", "gt.json: annotation id 1 (image 1): polygon 0 "
                                                                "has a coordinate too large for a float: "
                                                                "100000000000...(401 digits)")),
    "score of 401 digits": (_gt(), _results(score=10 ** 400), "segm", "coco", "pycocotools"),
    "score of 401 digits, box AP": (_gt(), _results(score=10 ** 400, bbox=[4.0, 3.0, 8.0, 6.0]), "bbox", "coco",
                                    "pycocotools"),
    "box-only results with a NaN box, Mask AP": (
        _gt(), [{"image_id": 1, "category_id": 1, "bbox": [4.0, float("nan"), 8.0, 6.0], "score": 0.9}], "segm",
        "coco", ("UnsafePolygonError", "result id 1 (image 1): polygon 0 has a non-finite or huge coordinate")),
}

_CHILD = textwrap.dedent("""
    import contextlib, io, json, logging, sys, warnings
    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)
    lib, gt, dt, iou = sys.argv[1:5]
    if lib == "coco":
        from boundary_api import COCO, COCOeval
    elif lib == "pycocotools":
        from pycocotools.coco import COCO
        from pycocotools.cocoeval import COCOeval
    else:
        from boundary_api import LVIS, LVISEval, LVISResults
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            if lib == "lvis":
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
    except Exception as exc:
        print("ERROR", type(exc).__name__, str(exc))
""")


def _child(lib, gt, dt, iou, tmp_path):
    """The outcome line of the child: ``RESULT [stats]`` or ``ERROR class message``;
    a crash or a hang fails the test."""
    run = subprocess.run([sys.executable, "-c", _CHILD, lib, gt, dt, iou], capture_output=True, text=True,
                         timeout=120, cwd=str(tmp_path))
    assert run.returncode == 0, f"{lib} ended with {run.returncode}: {run.stderr[-2000:]}"
    lines = [ln for ln in run.stdout.splitlines() if ln.startswith(("RESULT ", "ERROR "))]
    assert len(lines) == 1, run.stdout
    return lines[0]


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_crashes_of_pycocotools_are_refused_in_a_child_process(case, tmp_path):
    gt, dt, iou, lib, expected = CASES[case]
    gt_path, dt_path = str(tmp_path / "gt.json"), str(tmp_path / "res.json")
    with open(gt_path, "w") as f:
        json.dump(gt, f)
    with open(dt_path, "w") as f:
        json.dump(dt, f)
    got = _child(lib, gt_path, dt_path, iou, tmp_path)
    if expected == "pycocotools":
        assert got == _child("pycocotools", gt_path, dt_path, iou, tmp_path)
        assert got.startswith("RESULT ")
    else:
        name, message = expected
        assert got.startswith(f"ERROR {name} ") and message in got, got
        assert "\n" not in got


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


def _refuse(*anns, imgs=None):
    imgs = imgs or {1: {"id": 1, "height": H, "width": W}, 2: {"id": 2, "height": 0.5, "width": W},
                    3: {"id": 3, "height": H, "width": W}}
    refuse_unsafe_masks([(list(anns), imgs, _describe)])


def test_refuse_unsafe_masks():
    safe = [{"id": 1, "image_id": 1, "segmentation": [[1, 1, 5, 1, 5, 5]]},
            {"id": 2, "image_id": 1, "segmentation": _rle()},
            {"id": 3, "image_id": 1, "segmentation": {"size": [H, W], "counts": _counts()}},
            {"id": 4, "image_id": 1, "segmentation": {"size": [H, W], "counts": [float(c) for c in _counts()]}},
            # no foreground: pycocotools' IoU never walks them
            {"id": 5, "image_id": 1, "segmentation": {"size": [H, W], "counts": [399]}},
            {"id": 6, "image_id": 1, "segmentation": {"size": [H, W], "counts": "1"}},
            # what pycocotools refuses by itself, with an exception
            {"id": 7, "image_id": 1, "segmentation": {"size": [H, W], "counts": [-1, 401]}},
            {"id": 8, "image_id": 1, "segmentation": {"size": [H, W], "counts": ["a"]}},
            {"id": 9, "image_id": 1}]
    _refuse(*safe)
    unsafe = [({"id": 10, "image_id": 2, "segmentation": [[1, 1, 5, 1, 5, 5]]}, UnsafePolygonError,
               "ann 10: its polygons need the image's size, and the image's height 0.5 or width 20 is less than"),
              ({"id": 11, "image_id": 1, "segmentation": [[1, 1, 5, 1, 5, float("nan")]]}, UnsafePolygonError,
               "ann 11: polygon 0 has a non-finite or huge coordinate"),
              ({"id": 12, "image_id": 1, "segmentation": {"size": [0, W], "counts": "abc"}}, UnsafeRLEError,
               "ann 12: RLE size [0, 20] has a side of no pixels"),
              ({"id": 13, "image_id": 1, "segmentation": {"size": [H, W], "counts": FLOAT_COUNTS}}, UnsafeRLEError,
               "ann 13: RLE counts cover 399 pixels, not its 20x20 = 400, and some of them are foreground, and "
               "another mask of that size lies on its image (pycocotools' mask IoU of the two never ends)"),
              ({"id": 14, "image_id": 1, "segmentation": {"size": [H, W], "counts": [1.0, float("nan")]}},
               UnsafeRLEError, "ann 14: RLE counts must be non-negative numbers"),
              ({"id": 15, "image_id": 1, "segmentation": {"size": [H, W], "counts": SHORT}}, UnsafeRLEError,
               "ann 15: segmentation counts does not cover its 20x20 pixels, and some of them are foreground"),
              ({"id": 16, "image_id": 1, "segmentation": {"size": [H, W], "counts": "0123~"}}, UnsafeRLEError,
               "ann 16: segmentation counts is not a valid compressed RLE string")]
    for ann, cls, message in unsafe:
        with pytest.raises(cls) as info:
            _refuse(*safe, ann)
        assert str(info.value).startswith(message), str(info.value)


@pytest.mark.parametrize("counts", [FLOAT_COUNTS, SHORT, "0123~"], ids=["floats", "short", "invalid"])
def test_counts_not_covering_their_size_are_refused_only_beside_a_mask_of_that_size(counts):
    """pycocotools compares masks of one size only (the IoU of two sizes is -1): alone
    on its image, or beside masks of other sizes only, such an RLE is evaluated."""
    bad = {"id": 1, "image_id": 3, "segmentation": {"size": [H, W], "counts": counts}}
    other_size = {"id": 2, "image_id": 3, "segmentation": _rle(10, 10)}
    other_image = {"id": 3, "image_id": 1, "segmentation": _rle()}
    _refuse(bad, other_size, other_image)
    for peer in ({"id": 4, "image_id": 3, "segmentation": _rle()},
                 {"id": 5, "image_id": 3, "segmentation": [[1, 1, 5, 1, 5, 5]]}):  # (a polygon: its image's size)
        with pytest.raises(UnsafeRLEError, match="ann 1: .*, and another mask of that size lies on its image"):
            _refuse(bad, other_size, other_image, peer)
    # the ground truth and the results together: a peer in the other group counts too
    with pytest.raises(UnsafeRLEError):
        refuse_unsafe_masks([([bad], {3: {"id": 3}}, _describe),
                             ([{"id": 9, "image_id": 3, "segmentation": _rle()}], {}, _describe)])


def test_child_processes_import_this_boundary_api():
    out = subprocess.run([sys.executable, "-c", "import boundary_api; print(boundary_api.__file__)"],
                         capture_output=True, text=True, check=True).stdout.strip()
    import boundary_api

    assert os.path.samefile(out, boundary_api.__file__)
