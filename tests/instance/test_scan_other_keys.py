"""boundary_api.instance._scan_results with ``other_keys`` (the schema of SA-Co predictions,
SAM 3's ``coco_writer.py``: the results keys and ``area``, any other key skipped) and
``_escaped`` (nothing written; the counts copied out by ``gather_counts``), against
json.loads.

An accepted input must give json.loads' view of the five keys (values bit for bit,
int-vs-float kinds, presence, key order, unescaped counts), whatever other keys lie
between them; ``caption`` and ``keypoints`` (which change pycocotools' ``loadRes``
branch), a key with an escape or a non-ASCII byte, or any malformed value give None.  The buffer is never
written, and is placed against an inaccessible page (a read outside it would crash).
"""
import itertools
import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api.instance import _scan_results
from conftest import draw_mutation, guarded_views
from test_scan import KEY_CODE, assert_columns, number_token, result_list

SKIPPED = ("caption", "keypoints")


def scan(view, **kw):
    """``scan_results(view, other_keys=True, _escaped=True)`` with the counts
    gathered: ``(columns, counts)`` or None; ``view`` must stay as it was."""
    before = bytes(view)
    cols = _scan_results.scan_results(view, other_keys=True, _escaped=True, **kw)
    assert bytes(view) == before
    if cols is None:
        return None
    esc = cols.pop("counts_esc")
    counts = _scan_results.gather_counts(view, cols["counts_start"], cols["counts_len"], esc)
    cols["counts_start"][(cols["present"] & 16) == 0] = 0   # (gather_counts: where the next one goes)
    return cols, counts


def expect_same(data, got):
    """``got`` (columns, gathered counts) equal json.loads' view of the five keys."""
    parsed = json.loads(bytes(data).decode("utf-8"))
    five = [{k: v for k, v in obj.items() if k in KEY_CODE} for obj in parsed]
    cols, counts = got
    assert_columns(cols, json.dumps(five).encode(), counts)


def checked(data):
    """Scan a copy of ``data`` and the same bytes against guard pages: all agree
    with json.loads, or all refuse.  Returns whether it was accepted."""
    data = bytes(data)
    outcomes = []
    for view in itertools.chain([bytearray(data)], guarded_views(data)):
        got = scan(view)
        if got is not None:
            expect_same(data, got)
        outcomes.append(got is not None)
        del got
    assert len(set(outcomes)) == 1
    return outcomes[0]


# --------------------------------------------------------------------------- generated

def json_values():
    leaf = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 30, 10 ** 30),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
    return st.recursive(leaf, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                      st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                        max_leaves=8)


def other_key():
    """A key other than the five (and the two refused ones) of printable ASCII
    without escapes (a key with an escape or a non-ASCII byte is refused)."""
    plain = st.sampled_from([chr(c) for c in range(0x20, 0x7f) if chr(c) not in '"\\'])
    return st.one_of(st.just("area"), st.sampled_from(["id", "iscrowd", "size", "counts", "image", "bboxes"]),
                     st.text(plain, max_size=10)).filter(lambda k: k not in KEY_CODE and k not in SKIPPED)


@st.composite
def predictions(draw):
    """A results list with other keys (repeated ones too) anywhere in each
    object: ``(list of [(key, value), ...], serialised bytes)``."""
    base = draw(result_list())
    rnd = random.Random(draw(st.integers(0, 2 ** 32)))
    objs = []
    for obj in base:
        items = list(obj.items())
        for _ in range(draw(st.integers(0, 3))):
            items.insert(draw(st.integers(0, len(items))), (draw(other_key()), draw(json_values())))
        objs.append(items)

    def ws():
        return "".join(rnd.choice(" \t\n\r") for _ in range(rnd.randrange(3)))

    def enc(v):
        return json.dumps(v, ensure_ascii=rnd.random() < 0.5)

    text = "[" + ws() + ",".join(
        "{" + ws() + ",".join(json.dumps(k, ensure_ascii=False) + ws() + ":" + ws() + enc(v) + ws()
                              for k, v in items) + "}" + ws()
        for items in objs) + "]"
    return objs, text.encode("utf-8")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(predictions())
def test_other_keys_are_skipped_and_the_five_equal_json_loads(case):
    assert checked(case[1])


@pytest.mark.slow
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(predictions())
def test_other_keys_are_skipped_and_the_five_equal_json_loads_more(case):
    assert checked(case[1])


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(number_token())
def test_area_as_any_number_token(token):
    data = ('[{"image_id":1,"category_id":2,"area":%s,"score":0.5,"area":%s}]' % (token, token)).encode()
    assert checked(data)


def test_sam3_writer_record():
    data = json.dumps([{"image_id": 3, "category_id": 1,
                        "segmentation": {"size": [4, 5], "counts": "a\\b/c\"d"}, "score": 0.5,
                        "area": 0.125, "bbox": [0.1, 0.2, 0.3, 0.4]}]).encode()
    assert checked(data)
    cols, counts = scan(bytearray(data))
    s, n = int(cols["counts_start"][0]), int(cols["counts_len"][0])
    assert bytes(counts[s:s + n]) == b'a\\b/c"d'
    # without other_keys the record is refused as before
    assert _scan_results.scan_results(bytearray(data)) is None


GOOD = '{"image_id": 1, "category_id": 2, "score": 0.5, "area": 0.25, ' \
       '"segmentation": {"size": [2, 3], "counts": "abc"}}'

REFUSED = {
    "caption": GOOD[:-1] + ', "caption": "a cat"}',
    "keypoints": GOOD[:-1] + ', "keypoints": [1, 2, 2]}',
    "caption first": '{"caption": "x", ' + GOOD[1:],
    "escaped other key": GOOD.replace('"area"', '"are\\u0061"'),
    "non-ASCII other key": GOOD.replace('"area"', '"ar\u00e9a"'),
    "escaped known key": GOOD.replace('"score"', '"sc\\/ore"'),
    "NaN area": GOOD.replace("0.25", "NaN"),
    "Infinity area": GOOD.replace("0.25", "Infinity"),
    "leading zero area": GOOD.replace("0.25", "00.25"),
    "trailing comma in other value": GOOD.replace("0.25", "[1, 2,]"),
    "unterminated other string": GOOD.replace("0.25", '"abc'),
    "lone surrogate in other string": GOOD.replace("0.25", '"\\ud800"'),
    "bad escape in other string": GOOD.replace("0.25", '"\\x41"'),
    "control byte in other string": GOOD.replace("0.25", '"a\tb"'),
    "nesting deeper than 64": GOOD.replace("0.25", "[" * 70 + "]" * 70),
    "other key without value": GOOD.replace("0.25", ""),
    "repeated score": GOOD[:-1] + ', "score": 0.5}',
    "missing score": GOOD.replace('"score": 0.5, ', ""),
    "empty array": "",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(name):
    data = ("[" + REFUSED[name] + "]").encode("utf-8")
    assert checked(data) is False


def test_invalid_utf8_in_an_other_value_is_refused():
    data = ("[" + GOOD.replace("0.25", '"@"') + "]").encode().replace(b"@", b"\xc3\x28")
    assert checked(data) is False


def test_deep_but_allowed_nesting_is_skipped():
    data = ("[" + GOOD.replace("0.25", "[" * 60 + "{}" + "]" * 60) + "]").encode()
    assert checked(data)


SMALL = (b'[{"image_id": 7, "area": {"a": [1, "x\\u00e9\\"", null, true]}, "category_id": -3, "score": 0.25e1,'
         b' "segmentation": {"counts": "a\\\\b\\"c\\/d", "size": [4, 5]}, "area": 1e-3, "bbox": [1, 2, 3, 4]},\n'
         b' {"score": 3, "": false, "category_id": 0, "image_id": 12, "segmentation": {"size": [1, 2],'
         b' "counts": "x"}, "bbox": [0, 0, 1, 1]}]\n')


def test_every_truncation_is_refused():
    for k in range(len(SMALL) + 1):
        # only the file without (part of) its trailing whitespace is still valid
        assert checked(SMALL[:k]) == (k >= len(SMALL) - 1), k


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_mutations_are_refused_or_equal_json_loads(data):
    checked(draw_mutation(data, SMALL))


@pytest.mark.parametrize("threads", [2, 3, 8])
def test_split_scan_equals_the_whole_file_scan(threads):
    rnd = random.Random(threads)
    objs = []
    for i in range(400):
        objs.append({"image_id": i, "area": [rnd.random()] * rnd.randrange(3), "category_id": 1,
                     "segmentation": {"size": [3, 4], "counts": "".join(rnd.choice("ab\\/\"") for _ in range(9))},
                     "score": rnd.random(), "note": {"k": [None, "x"]}})
    data = json.dumps(objs).encode()
    one = scan(bytearray(data))
    trace = []
    split = scan(bytearray(data), num_threads=threads, _min_parallel_bytes=1, _trace=trace)
    assert trace == [("split", threads, -1)]
    expect_same(data, one)
    expect_same(data, split)
    for k in one[0]:
        assert np.array_equal(one[0][k], split[0][k]), k
