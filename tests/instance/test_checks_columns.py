"""The whole-column ground-truth checks agree with the per-annotation ones.

``check_instances_dataset`` first tests every annotation field by field over
whole columns (and polygons natively); only when that finds something does the
per-annotation loop run and word the problem.  The quick pass must never
accept what the loop refuses, and must accept what the loop accepts for
plain JSON data.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boundary_api.instance import _checks

H, W = 40, 30
numbers = st.one_of(
    st.floats(-2 * W, 3 * W, allow_nan=False), st.integers(-2 * W, 3 * W),
    st.sampled_from([-W, 2 * W, -H, 2 * H, 2 * W + 1e-9, math.nan, math.inf, -math.inf, True, 4e8, 1e300]),
)
polygon = st.lists(numbers, min_size=0, max_size=12)
odd = st.one_of(st.none(), st.text(max_size=2), st.tuples(numbers, numbers, numbers, numbers, numbers, numbers))
segmentation = st.one_of(
    st.lists(polygon, min_size=0, max_size=3),
    st.lists(st.one_of(polygon, odd), min_size=1, max_size=3),
    st.just({"size": [H, W], "counts": "PP0"}),
)


def _loop_accepts(anns, images, required):
    try:
        _checks._check_annotations(anns, images, required, "gt")
    except ValueError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(segs=st.lists(segmentation, min_size=1, max_size=4),
       boxes=st.lists(st.one_of(st.none(), st.lists(numbers, min_size=3, max_size=5)), min_size=4, max_size=4),
       areas=st.lists(numbers, min_size=4, max_size=4))
def test_quick_pass_agrees_with_the_loop(segs, boxes, areas):
    images = {1: {"id": 1, "height": H, "width": W}}
    anns = []
    for k, seg in enumerate(segs):
        ann = {"id": k + 1, "image_id": 1, "category_id": 1, "area": areas[k], "iscrowd": 0, "segmentation": seg}
        if boxes[k] is not None:
            ann["bbox"] = boxes[k]
        anns.append(ann)
    required = ("id", "image_id", "category_id", "area", "iscrowd")
    quick = _checks._annotations_plainly_valid(anns, images, required)
    loop = _loop_accepts(anns, images, required)
    if quick:
        assert loop
    plain = all(type(v) in (int, float) for s in segs if type(s) is list for p in s if type(p) is list for v in p) \
        and all(type(p) is list for s in segs if type(s) is list for p in s) \
        and all(type(v) in (int, float) for b in boxes if b is not None for v in b) \
        and all(type(v) in (int, float) for v in areas)
    if loop and plain:
        assert quick


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(polygon, min_size=0, max_size=3), min_size=1, max_size=6))
def test_polygons_valid_is_check_polygons(segs):
    flat = _checks.flatten_polygons(segs)
    assert flat is not None
    got = _checks.polygons_valid(*flat, np.full(len(segs), H), np.full(len(segs), W))
    for seg, ok in zip(segs, got):
        try:
            _checks.check_polygons(seg, H, W, "x")
            expected = True
        except ValueError:
            expected = False
        assert bool(ok) == expected, seg


def test_tuples_and_text_are_left_to_the_loop():
    assert _checks.flatten_polygons([[(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)]]) is None
    assert _checks.flatten_polygons([[[1.0, "2", 3.0, 4.0, 5.0, 6.0]]]) is None
    with pytest.raises(ValueError, match="not a list of coordinates"):
        _checks.check_polygons([(1.0, 2.0, 3.0, 4.0, 5.0, 6.0)], H, W, "x")
