"""boundary_api.instance._json's number reader (``_num``) against json.loads.

Both native scanners read every number with ``_num``: short tokens (``-?``
1..7 integer digits, optionally ``.`` and 1..7 digits, no exponent, at least
17 bytes before the end of the buffer) by a word-at-a-time fast path, all
others byte by byte.  Every accepted token must give the double ``float()``
gives json.loads' value, bit for bit, and the same int / float kind; every
token json.loads refuses must be refused.  The tokens are generated around
the fast path's edges (7/8 digits, leading zeros, exponents, the 17-byte
limit) and placed in a results file's box, whose ``int_kind`` column records
the kind, and in a ground truth's polygon.
"""
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from boundary_api.instance import _scan_ground_truth, _scan_results

DIGITS = "0123456789"


@st.composite
def edge_token(draw):
    """Number tokens, mostly short decimals near the fast path's limits."""
    sign = draw(st.sampled_from(["", "-"]))
    whole = draw(st.one_of(
        st.just("0"),
        st.integers(1, 9).flatmap(lambda n: st.integers(10 ** (n - 1), 10 ** n - 1)).map(str),
        st.integers(6, 9).map(lambda n: "9" * n),
        st.integers(1, 20).flatmap(lambda n: st.integers(10 ** (n - 1), 10 ** n - 1)).map(str)))
    frac = draw(st.one_of(
        st.just(""),
        st.text(DIGITS, min_size=1, max_size=9).map("."  .__add__),
        st.integers(0, 8).map(lambda z: "." + "0" * z + "1"),
        st.integers(1, 9).map(lambda n: "." + "9" * n),
        st.text(DIGITS, min_size=10, max_size=25).map("." .__add__)))
    exp = draw(st.one_of(st.just(""), st.just(""), st.builds(
        "{}{}{}".format, st.sampled_from("eE"), st.sampled_from(["", "+", "-"]),
        st.one_of(st.integers(0, 25).map(str), st.integers(0, 400).map(str), st.just("00")))))
    return sign + whole + frac + exp


@st.composite
def near_midpoint_token(draw):
    """At most 19 significant digits at, or one unit beside, the midpoint
    between two adjacent doubles (the extended-precision path must hand the
    midpoints to strtod and round the others right), optionally scaled."""
    n = draw(st.integers(2 ** 53, 2 ** 59))   # n and n + 1 are adjacent doubles at 2**53..2**54
    n -= n % (1 << max(0, n.bit_length() - 53))  # (for larger n: doubles step by 2**k)
    step = 1 << max(0, n.bit_length() - 53)
    digits = str((2 * n + step) * 5 + draw(st.sampled_from([-1, 0, 0, 1])))   # (n + step/2) * 10
    shift = draw(st.sampled_from([0, 0, 0, -3, 5, 8, -8]))
    return digits[:-1] + "." + digits[-1] + (f"e{shift}" if shift else "")


def number_token():
    """Tokens the scanners take: integers of at most 15 digits, any float form."""
    return st.one_of(
        near_midpoint_token(),
        st.integers(2 ** 53, 10 ** 19 - 1).map(lambda n: f"{n}.0"),
        st.integers(1, 10 ** 19 - 1).flatmap(lambda n: st.integers(-27, 27).map(lambda e: f"{n}e{e}")),
        edge_token().filter(lambda t: type(json.loads(t)) is float or len(t.lstrip("-")) <= 15),
        st.floats(allow_nan=False, allow_infinity=False).map(repr),
        st.floats(allow_nan=False, allow_infinity=False, width=32).map(repr),
        st.sampled_from(["-0", "0", "-0.0", "0.0", "1234567", "-1234567", "12345678", "1234567.1234567",
                         "1234567.12345678", "9999999.9999999", "0.0000001", "0.00000001", "1.5e0",
                         "9007199254740993.0", "5e-324", "2.2250738585072014e-308", "1.7976931348623157e308",
                         "123456789012345", "-123456789012345", "0.1", "0.30000000000000004"]))


def bits(v):
    return int(np.float64(v).view(np.int64))


def scan_box(token, tail):
    """``token`` as the last box number of a results file with ``tail`` spaces
    before its end; the box value and whether it was an integer token."""
    data = ('[{"image_id":1,"category_id":2,"score":0.5,"bbox":[1,2,3,%s]}%s]' % (token, " " * tail)).encode()
    cols = _scan_results.scan_results(bytearray(data))
    if cols is None:
        return None
    return cols["bbox"][0, 3], bool(cols["int_kind"][0] & 0b10000)


def scan_poly(token, tail):
    """``token`` as a polygon coordinate of a ground truth, ``tail`` spaces after it."""
    ann = {"id": 1, "image_id": 2, "category_id": 3, "area": 1, "iscrowd": 0,
           "segmentation": [[0, "@@"]]}
    doc = json.dumps({"images": [], "annotations": [ann], "categories": []},
                     separators=(",", ":")).replace('"@@"', token + " " * tail)
    cols = _scan_ground_truth.scan_ground_truth(np.frombuffer(doc.encode(), np.uint8))
    if cols is None:
        return None
    return cols["poly_coords"][1]


def check_number(token, tail):
    want = json.loads(token)
    got = scan_box(token, tail)
    assert got is not None, token
    assert bits(got[0]) == bits(float(want)), token      # "-0" is the int 0: +0.0
    assert got[1] == (type(want) is int), token
    assert bits(scan_poly(token, tail)) == bits(float(want)), token


@settings(max_examples=150, deadline=None)
@given(number_token(), st.integers(0, 20))
def test_numbers_equal_json_loads_bit_for_bit(token, tail):
    check_number(token, tail)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None)
@given(number_token(), st.integers(0, 20))
def test_many_numbers_equal_json_loads_bit_for_bit(token, tail):
    check_number(token, tail)


@settings(max_examples=500, deadline=None)
@given(st.text("0123456789-+.eE", min_size=1, max_size=12), st.integers(0, 20))
def test_malformed_tokens_are_refused(token, tail):
    try:
        want = json.loads(token)
    except ValueError:
        want = None
    if want is None or type(want) not in (int, float):
        assert scan_box(token, tail) is None, token
        assert scan_poly(token, tail) is None, token
    elif type(want) is float or len(token.lstrip("-")) <= 15:
        assert bits(scan_box(token, tail)[0]) == bits(float(want)), token


def test_fast_path_edges():
    for token in ["1234567", "12345678", "1234567.1234567", "1234567.12345678", "12345678.1",
                  "0.0000000", "-0.0000000", "0.00000001", "1.1e1", "1.1E-1", "01", "-01.5", "00.5",
                  "1.", "-", "-.5", ".5", "1.e5", "1e", "1e+", "--1", "1.5.5", "0x1", "1_0"]:
        for tail in (0, 8, 16, 17, 30):
            try:
                want = json.loads(token)
            except ValueError:
                assert scan_box(token, tail) is None and scan_poly(token, tail) is None, (token, tail)
                continue
            got = scan_box(token, tail)
            assert bits(got[0]) == bits(float(want)) and got[1] == (type(want) is int), (token, tail)
            assert bits(scan_poly(token, tail)) == bits(float(want)), (token, tail)
