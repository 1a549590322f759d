"""boundary_api.masks._cocoapi: what pycocotools' C mask code computes for any
RLE string or polygon, against pycocotools itself on the inputs where its code
is safe to run in this process (issue 45): strings whose last count ends
inside them, heights of at least 1, masks of equal coverage; polygons on
images of a side of 0 whose merge stays in its buffer.  Where pycocotools
crashes or never ends the kernels say so instead; those predictions are
checked against pycocotools in child processes by the differential fuzz
suite (tests/fuzz/test_suspect_fuzz.py)."""
import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api.masks import _cocoapi

#: characters of every kind for pycocotools' reader: the format's own ('0'..'o'),
#: ones above it, below it and beyond ASCII
ALPHABETS = ("0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmno", "!~p{|}0O", "1234PQ",
             "".join(chr(i) for i in range(1, 256)))


def _terminated(s: str) -> bool:
    b = s.encode()
    return not b or not ((b[-1] - 48) & 0x20)


@st.composite
def strings(draw, terminated=True):
    alphabet = draw(st.sampled_from(ALPHABETS))
    s = draw(st.text(alphabet=alphabet, max_size=40))
    if terminated and not _terminated(s):
        s += draw(st.sampled_from("0123456789:;<=>?p~"))
    return s


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strings(), st.integers(1, 60), st.integers(0, 60))
def test_area_and_box_of_any_terminated_string(s, h, w):
    rle = {"size": [h, w], "counts": s}
    counts, terminated = _cocoapi.frstring(s)
    assert terminated and counts.dtype == np.uint32
    assert _cocoapi.area(counts) == int(mask_utils.area(rle))
    assert _cocoapi.to_bbox(counts, h, w) == mask_utils.toBbox(rle).tolist()


def test_strings_read_past_their_end():
    """A last count whose last character has the continuation bit: pycocotools
    reads the NUL after the string and the byte after it; the kernel reads them
    as 0 (what pycocotools reads when the string is followed by a NUL)."""
    for s in ("!!!garbage", "0a", "P", "ab"):
        counts, terminated = _cocoapi.frstring(s)
        assert not terminated
        rle = {"size": [427, 640], "counts": s + "\0"}
        assert _cocoapi.area(counts) == int(mask_utils.area(rle))
        assert _cocoapi.to_bbox(counts, 427, 640) == mask_utils.toBbox(rle).tolist()
    assert _cocoapi.area(_cocoapi.frstring("!!!garbage")[0]) == 4278902322
    # a NUL inside ends the string (strlen)
    assert _cocoapi.frstring("42\x0053")[0].tolist() == _cocoapi.frstring("42")[0].tolist() == [4, 2]


def test_height_of_zero():
    counts = _cocoapi.frstring(mask_utils.encode(np.ones((4, 5), np.uint8, order="F"))["counts"])[0]
    assert _cocoapi.to_bbox(counts, 0, 5) is None            # pycocotools divides by it
    assert _cocoapi.to_bbox(np.array([7], np.uint32), 0, 5) == [0.0, 0.0, 0.0, 0.0]  # no run to place
    # (a foreground run of 0 pixels is skipped: the box of nothing, in unsigned arithmetic)
    assert _cocoapi.to_bbox(np.array([3, 0, 4], np.uint32), 0, 5) == [5.0, 0.0, 4294967292.0, 1.0]
    ious, failure = _cocoapi.rle_iou([(counts, 0, 5)], [(counts, 4, 5)], np.zeros(1, np.uint8))
    assert ious is None and failure == ("height", "dt", 0)
    ious, failure = _cocoapi.rle_iou([(counts, 4, 5)], [(counts, 2 ** 32, 5)], np.zeros(1, np.uint8))
    assert failure == ("height", "gt", 0)  # (its box reads the height as 32 bits)


def _masks(rng, h, w, n):
    return [(rng.random((h, w)) < rng.random()).astype(np.uint8) for _ in range(n)]


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 4), st.integers(1, 4), st.integers(0, 2 ** 32 - 1))
def test_iou_of_valid_masks_is_pycocotools(h, w, m, n, seed):
    rng = np.random.default_rng(seed)
    dt = [mask_utils.encode(np.asfortranarray(x)) for x in _masks(rng, h, w, m)]
    gt = [mask_utils.encode(np.asfortranarray(x)) for x in _masks(rng, h, w, n)]
    crowd = rng.integers(0, 2, n).tolist()
    want = mask_utils.iou(dt, gt, crowd)
    got, failure = _cocoapi.rle_iou([(_cocoapi.frstring(r["counts"])[0], h, w) for r in dt],
                                    [(_cocoapi.frstring(r["counts"])[0], h, w) for r in gt],
                                    np.array(crowd, np.uint8))
    assert failure is None
    assert got.dtype == want.dtype and got.shape == want.shape and np.array_equal(got, want)


def test_iou_of_masks_covering_different_pixels():
    """The merge of two run lists that end apart never ends when their boxes
    overlap; masks of two sizes are -1; boxes apart are 0, whatever the counts."""
    a = np.array([2, 10, 2], np.uint32)          # 14 of 25 pixels
    b = np.array([5, 20], np.uint32)             # 25 of 25
    z = np.zeros(1, np.uint8)
    assert _cocoapi.rle_iou([(a, 5, 5)], [(b, 5, 5)], z)[1] == ("hang", 0, 0)
    ious, failure = _cocoapi.rle_iou([(a, 5, 5)], [(b, 5, 6)], z)
    assert failure is None and ious.tolist() == [[-1.0]]
    ious, failure = _cocoapi.rle_iou([(np.array([2, 3, 9], np.uint32), 5, 5)],
                                     [(np.array([15, 10], np.uint32), 5, 5)], z)
    assert failure is None and ious.tolist() == [[0.0]]
    # counts that add up to 2**32 with the other list's: pycocotools' sum wraps to 0 and stops
    ious, failure = _cocoapi.rle_iou([(np.array([0, 2 ** 32 - 20], np.uint32), 5, 4)],
                                     [(np.array([0, 20], np.uint32), 5, 4)], z)
    assert failure is None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.lists(st.floats(-30, 120, allow_nan=False).map(lambda v: round(v, 1)), min_size=6, max_size=16),
                min_size=1, max_size=3),
       st.sampled_from([0, 1, 2, 7, 40]), st.sampled_from([0, 1, 3, 50]), st.booleans())
def test_polygons_are_pycocotools(polys, h, w, repeat):
    """frPyObjects + merge of polygons, as pycocotools' annToRLE makes them,
    on any image size (a side of 0 included), byte for byte."""
    if repeat:
        polys[0][2:4] = polys[0][0:2]  # (a repeated point: pycocotools' slope is 0/0 there)
    if w == 0 and h:
        polys = polys[:1]  # (the merge of several writes past its buffer: below)
    want = mask_utils.merge(mask_utils.frPyObjects(polys, h, w))
    runs = [_cocoapi.frstring(_cocoapi.tostring(_cocoapi.frpoly(np.array(p, np.float64), h, w)))[0] for p in polys]
    counts, failure = _cocoapi.merge(runs, h, w)
    assert failure is None
    assert {"size": [h, w], "counts": _cocoapi.tostring(counts)} == want


def test_merge_past_its_buffer():
    """pycocotools' merge keeps h * w + 1 counts: polygons on an image of width
    0 make more, and it writes past that buffer."""
    runs = [_cocoapi.frpoly(np.array(p, np.float64), 5, 0) for p in ([1, 1, 4, 1, 4, 4], [2, 0, 3, 3, 0, 3])]
    assert len(runs[0]) > 1
    assert _cocoapi.merge(runs, 5, 0) == (None, "overflow")
    # an empty polygon walks no point: the whole image is its one count
    assert _cocoapi.frpoly(np.zeros(0), 4, 5).tolist() == [20]


def test_tostring_is_pycocotools_encoder():
    rng = np.random.default_rng(45)
    for _ in range(200):
        m = (rng.random((int(rng.integers(1, 30)), int(rng.integers(1, 30)))) < rng.random()).astype(np.uint8)
        r = mask_utils.encode(np.asfortranarray(m))
        assert _cocoapi.tostring(_cocoapi.frstring(r["counts"])[0]) == r["counts"]


@pytest.mark.parametrize("s", ["", "0", "1", "00", "ab0"])
def test_frstring_edges(s):
    counts, terminated = _cocoapi.frstring(s.encode())
    assert counts.dtype == np.uint32 and terminated == _terminated(s)
