"""Masks read from files (boundary_api.masks.imagefiles.read_mask_file) and their
measures (boundary_api.masks.measures.measures_of_files, what boundary-eval
measures runs): the same values as measures() of the arrays; bad files are
one-line ValueErrors."""
import json

import cv2
import numpy as np
import pycocotools.mask as mask_utils
import pytest

from boundary_api.masks.imagefiles import ImageTooLargeError, read_mask_file
from boundary_api.masks.measures import MEASURES, measures, measures_of_files


@pytest.fixture
def pair(tmp_path):
    g = np.zeros((40, 50), np.uint8)
    g[5:30, 8:40] = 1
    p = np.zeros((40, 50), np.uint8)
    p[7:33, 10:42] = 1
    gp = tmp_path / "g.png"
    cv2.imwrite(str(gp), g * 255)
    rle = mask_utils.encode(np.asfortranarray(p))
    rle["counts"] = rle["counts"].decode("ascii")
    pj = tmp_path / "p.json"
    pj.write_text(json.dumps({"segmentation": rle}))
    return g, p, gp, pj


def test_read_mask_file(pair, tmp_path):
    g, p, gp, pj = pair
    assert np.array_equal(read_mask_file(gp), g)
    assert np.array_equal(mask_utils.decode(read_mask_file(pj)), p)
    rgb = tmp_path / "rgb.png"
    img = np.zeros((40, 50, 3), np.uint8)
    img[g == 1, 2] = 7  # any nonzero channel is foreground
    cv2.imwrite(str(rgb), img)
    assert np.array_equal(read_mask_file(rgb), g)


def test_measures_of_files_equal_measures_of_the_arrays(pair):
    g, p, gp, pj = pair
    got = measures_of_files(gp, pj, 0.05, num_scales=4)
    want = measures(g, p, 0.05, num_scales=4)
    assert list(got) == list(MEASURES) and got == want


@pytest.mark.parametrize("case, match", [
    ("missing", "predicted mask .*nope.png: no such file"),
    ("not_image", "cannot read predicted mask image .*o.png"),
    ("not_rle", r"predicted mask .*x.json: expected a COCO RLE"),
    ("size", "g.png, .*: "),
    ("large", "too large|pixels"),
])
def test_bad_files(pair, tmp_path, case, match):
    g, p, gp, pj = pair
    other = tmp_path / "o.png"
    kwargs = {}
    if case == "missing":
        other = tmp_path / "nope.png"
    elif case == "not_image":
        other.write_text("hello")
    elif case == "not_rle":
        other = tmp_path / "x.json"
        other.write_text('{"size": [2, 2]}')
    elif case == "size":
        cv2.imwrite(str(other), np.zeros((10, 10), np.uint8))
    elif case == "large":
        other = pj
        kwargs["max_pixels"] = 100
        other, gp = gp, other  # the PNG (2000 pixels) second
    with pytest.raises(ValueError, match=match) as info:
        measures_of_files(gp, other, **kwargs)
    assert "\n" not in str(info.value)
    if case == "large":
        assert isinstance(info.value, ImageTooLargeError)


def test_files_are_named_as_asked(tmp_path, pair):
    g, p, gp, pj = pair
    with pytest.raises(ValueError, match="^GT_MASK .*nope.png: no such file$"):
        measures_of_files(tmp_path / "nope.png", pj, what=("GT_MASK", "PRED_MASK"))
