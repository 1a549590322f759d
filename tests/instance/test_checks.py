"""Input checks of the instance evaluators (issue 9, item 6): polygons are validated before
pycocotools' C code sees them (it crashes or exhausts memory on NaN or huge coordinates),
malformed ground truths and swapped files get clear errors, .json.gz is read."""
import contextlib
import copy
import gzip
import io
import json
import logging
import re

import numpy as np
import pycocotools.coco
import pycocotools.cocoeval
import pycocotools.mask as mask_utils
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boundary_api import COCO, COCOeval, LVIS
from boundary_api._io import read_json
from boundary_api.instance._checks import (SuspectInputWarning, UnsafePolygonError, check_instances_dataset,
                                          check_polygons, check_rle_dict, describe_unknown_ids)
from conftest import COCO_DT, COCO_GT, LVIS_GT

GT = json.load(open(COCO_GT))


def _polygon_ann(gt):
    return next(a for a in gt["annotations"] if isinstance(a["segmentation"], list))


@pytest.mark.parametrize("seg, message", [
    ([], "'segmentation' is an empty list of polygons"),
    ([[]], "polygon 0 has 0 coordinates; a polygon needs an even number of them, at least 6 (3 points)"),
    ([[1, 2, 3, 4]], "polygon 0 has 4 coordinates"),
    ([[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 5, 6, 7]], "polygon 1 has 7 coordinates"),
    ([[1, 2, 3, 4, 5, float("nan")]], "polygon 0 has a non-finite coordinate nan"),
    ([[1, 2, 3, 4, 5, float("-inf")]], "polygon 0 has a non-finite coordinate -inf"),
    ([[1, 2, 3, 4, 5, None]], "polygon 0 has a coordinate that is not a number: None"),
    ([[1e30, 2, 3, 4, 5, 6]], "polygon 0 has a coordinate far outside the 40x30 image: 1e+30"),
    ([[1, 2, 3, 4, 5, 61]], "polygon 0 has a coordinate far outside the 40x30 image: 61"),  # y > 2 h
    ([[-41, 2, 3, 4, 5, 6]], "polygon 0 has a coordinate far outside the 40x30 image: -41"),
    ([[1e308, 1e308, 1e308, 1, 2, 3]], "polygon 0 has a coordinate far outside the 40x30 image: 1e+308"),  # sum: inf
    ([(1, 2, 3, 4, 5, 6)], "polygon 0 is not a list of coordinates (got a tuple)"),
    ([{"counts": "x"}], "polygon 0 is not a list of coordinates (got an object)"),
])
def test_bad_polygons(seg, message):
    with pytest.raises(ValueError) as exc:
        check_polygons(seg, 30, 40, "gt.json: annotation id 7")
    assert str(exc.value).startswith(f"gt.json: annotation id 7: {message}")


def test_good_polygons_pass():
    check_polygons([[0, 0, 40, 0, 40, 30], [-40.0, -30.0, 80, 60, 1.5, 2.5]], 30, 40, "x")


coord = st.one_of(st.integers(-100, 200), st.floats(allow_nan=True, allow_infinity=True),
                  st.floats(-100, 200), st.sampled_from([1e9, -1e9, 4.3e8, 1e30]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(coord, max_size=14), max_size=3), st.integers(1, 64), st.integers(1, 64))
def test_accepted_polygons_are_rasterised_by_pycocotools(seg, h, w):
    """Whatever passes the check is safe for pycocotools (no crash, the image's size);
    whatever is refused is a ValueError."""
    try:
        check_polygons(seg, h, w, "x")
    except ValueError:
        return
    rles = mask_utils.frPyObjects(seg, h, w)
    rle = mask_utils.merge(rles)
    assert list(rle["size"]) == [h, w]
    assert 0 <= mask_utils.area(rle) <= h * w


def test_ground_truth_polygons_checked_on_load(tmp_path):
    """A NaN polygon coordinate: loaded as pycocotools loads it, with a warning
    (issue 45: box AP never rasterises it); strict=True refuses it; a mask
    evaluation refuses it where the mask is made."""
    gt = copy.deepcopy(GT)
    ann = _polygon_ann(gt)
    ann["segmentation"] = [[float("nan"), 1, 2, 3, 4, 5]]
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(gt))
    message = (f"{path}: annotation id {ann['id']} (image {ann['image_id']}): polygon 0 has a non-finite "
               "coordinate nan")
    with pytest.raises(ValueError) as exc, contextlib.redirect_stdout(io.StringIO()):
        COCO(str(path), strict=True)
    assert str(exc.value) == message + "; refused where a mask evaluation makes its mask"
    with pytest.warns(SuspectInputWarning, match=re.escape(message)), contextlib.redirect_stdout(io.StringIO()):
        coco = COCO(str(path))
    with contextlib.redirect_stdout(io.StringIO()):
        plain = pycocotools.coco.COCO(str(path))
        for iou_type in ("bbox", "segm"):
            ev = COCOeval(coco, coco.loadRes(COCO_DT), iou_type)
            if iou_type == "segm":
                with pytest.raises(UnsafePolygonError, match=f"^ground truth annotation id {ann['id']} "):
                    ev.evaluate()
                continue
            ev.evaluate()
            ev.accumulate()
            ev.summarize()
            ref = pycocotools.cocoeval.COCOeval(plain, plain.loadRes(COCO_DT), iou_type)
            ref.evaluate()
            ref.accumulate()
            ref.summarize()
            assert np.array_equal(ev.stats, ref.stats)
        with pytest.raises(UnsafePolygonError, match=f"^annotation id {ann['id']} "):
            coco.annToMask(ann)


def test_plain_pycocotools_objects_are_checked_before_rasterising(tmp_path):
    """A plain pycocotools COCO (not checked on load) with a 1e30 polygon: the boundary
    evaluation raises instead of crashing in pycocotools' C code."""
    gt = copy.deepcopy(GT)
    ann = _polygon_ann(gt)
    ann["segmentation"] = [[1e30, 1, 2, 3, 4, 5]]
    with contextlib.redirect_stdout(io.StringIO()):
        plain = pycocotools.coco.COCO()
        plain.dataset = gt
        plain.createIndex()
        dt = plain.loadRes(COCO_DT)
        ev = COCOeval(plain, dt, "boundary")
        with pytest.raises(ValueError) as exc:
            ev.evaluate()
    assert str(exc.value) == (f"annotation id {ann['id']} (image {ann['image_id']}): polygon 0 has a coordinate "
                              f"far outside the {plain.imgs[ann['image_id']]['width']}x"
                              f"{plain.imgs[ann['image_id']]['height']} image: 1e+30")


def test_swapped_and_malformed_ground_truth():
    res = json.load(open(COCO_DT))
    with pytest.raises(ValueError, match=r"it looks like a results file \(were the ground truth and the results "
                                         r"swapped\?\)"):
        check_instances_dataset(res, "r.json")
    with pytest.raises(ValueError, match=r"^g.json: not a COCO ground truth \(no list of 'images': 'images' is "
                                         r"an object\)$"):
        check_instances_dataset(dict(GT, images={"1": {}}), "g.json")
    with pytest.raises(ValueError, match=r"^g.json: images\[0\] is not an object \(got an integer 5\)$"):
        check_instances_dataset(dict(GT, images=[5]), "g.json")
    with pytest.raises(ValueError, match="(got a string)"):
        gt = copy.deepcopy(GT)
        gt["annotations"][0]["segmentation"] = "polygon"
        check_instances_dataset(gt, "g.json")
    with contextlib.redirect_stdout(io.StringIO()), pytest.raises(TypeError, match=r"it looks like a ground "
                                                                                     r"truth file"):
        COCO(COCO_GT).loadRes(copy.deepcopy(GT))


def test_empty_ground_truth_warns(caplog):
    with caplog.at_level(logging.WARNING):
        check_instances_dataset(dict(GT, annotations=[]), "g.json")
        check_instances_dataset(dict(GT, annotations=[]), "g.json", warn_empty=False)
    assert [r.getMessage() for r in caplog.records] == [
        "g.json: the ground truth has no annotations: there is nothing to detect and every AP will be "
        "undefined (-1)"]


def test_unknown_ids_are_quoted():
    assert describe_unknown_ids(["1000"], [1, 2, 1000]) == \
        "'1000' (the results' ids are strings, the ground truth's are integers)"
    assert describe_unknown_ids([0], [1, 2, 3]) == "0 (were categories mapped to contiguous ids?)"
    assert describe_unknown_ids([7], ["a", "b"]) == "7 (the results' ids are integers, the ground truth's are strings)"
    assert describe_unknown_ids(list(range(100, 115)), [1]) == \
        "100, 101, 102, 103, 104, 105, 106, 107, 108, 109 (and 5 more)"


def test_json_gz_and_deep_nesting(tmp_path):
    gz = tmp_path / "gt.json.gz"
    with gzip.open(gz, "wb") as f:
        f.write(open(COCO_GT, "rb").read())
    assert read_json(str(gz), "ground truth") == GT
    with contextlib.redirect_stdout(io.StringIO()):
        a, b = COCO(COCO_GT), COCO(str(gz))
    assert a.dataset == b.dataset
    lvis_gz = tmp_path / "lvis.json.gz"
    with gzip.open(lvis_gz, "wb") as f:
        f.write(open(LVIS_GT, "rb").read())
    assert len(LVIS(str(lvis_gz)).anns) == len(LVIS(LVIS_GT).anns)
    deep = tmp_path / "deep.json"
    deep.write_text('{"a":' * 100000 + "1" + "}" * 100000)
    with pytest.raises(ValueError, match=f"^x file is nested too deeply to be read: {deep}$"):
        read_json(str(deep), "x")
    not_gz = tmp_path / "bad.json.gz"
    not_gz.write_bytes(b"\x1f\x8b" + b"\x00" * 20)
    with pytest.raises(ValueError, match="is not a valid gzip file"):
        read_json(str(not_gz), "x")


@pytest.mark.parametrize("counts, message", [
    ([-5, 10], "RLE counts must be non-negative integers, got -5"),
    ([1e12, 3], "RLE counts must be non-negative integers, got 1000000000000.0"),
    ([float("nan")], "RLE counts must be non-negative integers, got nan"),
    ([10 ** 30], "RLE counts cover 1000000000000000000000000000000 pixels, not the image's 30x40 = 1200"),
    ([5, 5], "RLE counts cover 10 pixels, not the image's 30x40 = 1200"),
    (None, "RLE counts must be a list of integers or a compressed string, got null"),
])
def test_rle_dict_check(counts, message):
    with pytest.raises(ValueError) as exc:
        check_rle_dict({"size": [30, 40], "counts": counts}, 30, 40, "g.json: annotation id 9")
    assert str(exc.value) == f"g.json: annotation id 9: {message}"
    with pytest.raises(ValueError, match=r"^x: RLE size \[40, 30\] is not the image's \[30, 40\]$"):
        check_rle_dict({"size": [40, 30], "counts": [1200]}, 30, 40, "x")
    check_rle_dict({"size": [30, 40], "counts": [600, 600]}, 30, 40, "x")
    check_rle_dict({"size": (30, 40), "counts": "Xd0"}, 30, 40, "x")


def test_ids_and_boxes_of_the_ground_truth():
    def gt_with(**changes):
        gt = {"images": [{"id": 1, "height": 30, "width": 40}], "categories": [{"id": 1}],
              "annotations": [{"id": 9, "image_id": 1, "category_id": 1, "area": 1, "iscrowd": 0,
                               "bbox": [1, 2, 3, 4]}]}
        for where, key, value in changes.values():
            gt[where][0][key] = value
        return gt
    cases = [
        (("images", "id", [1]), "images[0] has an invalid 'id' [1] (expected a number or a string)"),
        (("categories", "id", None), "categories[0] has an invalid 'id' None (expected a number or a string)"),
        (("annotations", "category_id", {"a": 1}),
         "annotations[0] has an invalid 'category_id' {'a': 1} (expected a number or a string)"),
        (("annotations", "id", float("nan")), "annotations[0] has an invalid 'id' nan (expected a number or a string)"),
        (("annotations", "bbox", "x"), "annotation id 9 has an invalid 'bbox' 'x' (expected [x, y, width, height])"),
        (("annotations", "bbox", [1, 2, 3]), "annotation id 9 has an invalid 'bbox' [1, 2, 3]"),
    ]
    for change, message in cases:
        with pytest.raises(ValueError) as exc:
            check_instances_dataset(gt_with(c=change), "g.json")
        assert str(exc.value).startswith(f"g.json: {message}"), str(exc.value)
    # string and non-integer ids are ids too (pycocotools indexes by them)
    check_instances_dataset(gt_with(a=("annotations", "id", 0.5), b=("images", "id", "img"),
                                    c=("annotations", "image_id", "img")), "g.json")


# ------------------------------------------------------------- the JSON reader
@pytest.fixture(params=["default", "msgspec"])
def json_reader(request, monkeypatch):
    """Both readers of ``_io._loads``: json for small documents (the default
    for every document here), and msgspec-first (the small-document limit at 0),
    which larger files take."""
    import boundary_api._io as io_mod

    if request.param == "msgspec":
        monkeypatch.setattr(io_mod, "SMALL_JSON", 0)
    return request.param


@pytest.mark.parametrize("text", [
    b'[NaN, Infinity, -Infinity]',          # json accepts them, msgspec does not
    b'[1e400, -1e400]',                     # overflow to infinity in json
    b'\xef\xbb\xbf{"a": [1, 2]}',           # UTF-8 byte order mark
    b'["\\ud800", "\\udc00x"]',             # lone surrogate escapes
    '{"a": [1.5, "\u00e9"]}'.encode("utf-16"),  # UTF-16 text
    b'[123456789012345678901234567890, -9223372036854775809, 18446744073709551616]',
    b'{"a": 1, "a": 2.0}',                  # duplicate keys: the last wins
    b'[-0.0, 5e-324, 1.7976931348623157e308, 0.1, 1E5, 1.0, 100]',
])
def test_read_json_values_and_types_are_json_s(tmp_path, text, json_reader):
    p = tmp_path / "x.json"
    p.write_bytes(text)
    got, want = read_json(str(p), "x"), json.loads(text)
    assert repr(got) == repr(want)  # same values and types (NaN compares unequal)
    assert json.dumps(got) == json.dumps(want)


@pytest.mark.parametrize("text", [b"", b"[1, 2", b"{'a': 1}", b"[1] x", b"\xff\xfe\xfa"])
def test_read_json_errors_are_json_s(tmp_path, text, json_reader):
    p = tmp_path / "x.json"
    p.write_bytes(text)
    with pytest.raises(ValueError, match=r"^x file is not valid JSON"):
        read_json(str(p), "x")


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5),
    max_leaves=30)


@settings(max_examples=200, deadline=None)
@given(_json_values, st.sampled_from([0, 1 << 18]))
def test_read_json_equals_json_loads(tmp_path_factory, value, small_json):
    import boundary_api._io as io_mod

    p = tmp_path_factory.mktemp("j") / "x.json"
    text = json.dumps(value)
    p.write_text(text)
    saved, io_mod.SMALL_JSON = io_mod.SMALL_JSON, small_json  # 0: msgspec first, as for large files
    try:
        got = read_json(str(p), "x")
    finally:
        io_mod.SMALL_JSON = saved
    assert got == json.loads(text)
    assert repr(got) == repr(json.loads(text))  # int stays int, float stays float, key order kept


def test_loads_json_takes_any_bytes_like_small_or_large():
    import numpy as np

    from boundary_api._io import loads_json

    small = b'{"a": [1, 2.5, "x"]}'
    big = b'[' + b','.join([b'1.25'] * 70000) + b']'
    for data in (small, big):
        want = json.loads(data)
        for form in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
            assert repr(loads_json(form)) == repr(want)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats() | st.integers() | st.integers(min_value=10 ** 300, max_value=10 ** 400)
                | st.booleans() | st.none() | st.just(float("inf")) | st.just(float("nan")), max_size=6))
def test_finite_numbers_is_finite_number_of_each(values):
    from boundary_api._io import finite_number, finite_numbers

    assert finite_numbers(values) == all(finite_number(v) for v in values)
    assert finite_numbers(tuple(values)) == all(finite_number(v) for v in values)
