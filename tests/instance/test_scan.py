"""boundary_api.instance._scan_results: the native results-JSON scanner against json.loads.

Every accepted input must give exactly json.loads' view (values bit for bit,
int-vs-float kinds, presence, key order, unescaped counts strings); every other
input gives None with the buffer untouched.  Buffers are also placed against an
inaccessible page, so that a read past either end would crash the test.
"""
import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api.instance import _scan_results
from conftest import COCO_DT, LVIS_DT, draw_mutation, guarded_views

KEY_CODE = {"image_id": 1, "category_id": 2, "score": 3, "bbox": 4, "segmentation": 5}
PRESENT = {"image_id": 1, "category_id": 2, "score": 4, "bbox": 8, "segmentation": 16}
COLUMNS = {"image_id": np.int64, "category_id": np.int64, "score": np.float64, "bbox": np.float64,
           "seg_h": np.int64, "seg_w": np.int64, "counts_start": np.int64, "counts_len": np.int64,
           "present": np.uint8, "int_kind": np.uint8, "key_order": np.int32}
RLE_ALPHABET = "".join(chr(c) for c in range(48, 112))     # pycocotools' counts characters
ASCII = "".join(chr(c) for c in range(0x20, 0x7f))         # printable: json.dumps escapes 0x7f


# --------------------------------------------------------------------------- helpers

def json_view(parsed):
    """The columns the scanner must give for ``parsed`` (json.loads' result).

    Asserts that ``parsed`` lies in the fast schema as far as json.loads can see.
    """
    assert isinstance(parsed, list) and parsed
    n = len(parsed)
    out = {k: np.zeros((n, 4) if k == "bbox" else n, dt) for k, dt in COLUMNS.items()}
    counts = []
    for i, obj in enumerate(parsed):
        assert isinstance(obj, dict) and set(obj) <= set(KEY_CODE)
        assert {"image_id", "category_id", "score"} <= set(obj)
        order = 0
        for k, key in enumerate(obj):
            order |= KEY_CODE[key] << (3 * k)
            out["present"][i] |= PRESENT[key]
        for key in ("image_id", "category_id"):
            assert type(obj[key]) is int
            out[key][i] = obj[key]
        assert type(obj["score"]) in (int, float)
        out["score"][i] = float(obj["score"])
        out["int_kind"][i] = type(obj["score"]) is int
        if "bbox" in obj:
            assert type(obj["bbox"]) is list and len(obj["bbox"]) == 4
            for k, v in enumerate(obj["bbox"]):
                assert type(v) in (int, float)
                out["bbox"][i, k] = float(v)
                out["int_kind"][i] |= (type(v) is int) << (k + 1)
        seg = obj.get("segmentation")
        if seg is None:
            assert "segmentation" not in obj
            counts.append(None)
        else:
            assert type(seg) is dict and set(seg) == {"size", "counts"}
            assert [type(v) for v in seg["size"]] == [int, int]
            assert type(seg["counts"]) is str
            out["seg_h"][i], out["seg_w"][i] = seg["size"]
            counts.append(seg["counts"])
            if list(seg) == ["counts", "size"]:
                order |= 1 << 30
        out["key_order"][i] = order
    return out, counts


def assert_columns(cols, data, buf):
    """``cols`` (scanner output for ``data``, unescaped in ``buf``) equal json.loads' view."""
    expected, counts = json_view(json.loads(bytes(data).decode("ascii")))
    assert sorted(cols) == sorted(COLUMNS)
    for key, want in expected.items():
        got = cols[key]
        assert got.dtype == want.dtype and got.shape == want.shape, key
        if want.dtype == np.float64:   # bit for bit: -0.0, inf
            assert np.array_equal(got.view(np.int64), want.view(np.int64)), key
        elif key not in ("counts_start", "counts_len"):
            assert np.array_equal(got, want), key
    for i, c in enumerate(counts):
        s, n = int(cols["counts_start"][i]), int(cols["counts_len"][i])
        if c is None:
            assert (s, n) == (0, 0)
        else:
            assert 0 <= s and s + n <= len(buf)
            assert bytes(buf[s:s + n]).decode("ascii") == c


def scan_checked(data):
    """Scan a copy of ``data``: None with the buffer untouched, or json.loads' view."""
    buf = bytearray(data)
    cols = _scan_results.scan_results(buf)
    if cols is None:
        assert buf == data
    else:
        assert_columns(cols, data, buf)
    return cols


def scan_guarded(data):
    """Scan ``data`` placed right after / right before a PROT_NONE page, twice.

    A read outside the buffer then faults (the test process dies), so a pass
    proves the scanner stays inside.  Both runs must agree with :func:`scan_checked`.
    """
    data = bytes(data)
    results = []
    for view in guarded_views(data):
        cols = _scan_results.scan_results(view)
        if cols is None:
            assert bytes(view) == data
        else:
            assert_columns(cols, data, view)
        results.append(cols is None)
    assert results[0] == results[1]
    return results[0]


# --------------------------------------------------------------------------- generated results

@st.composite
def float_token(draw):
    """A strict JSON number token with a fraction and/or an exponent."""
    digits = "0123456789"
    sign = draw(st.sampled_from(["", "-"]))
    whole = draw(st.one_of(st.just("0"), st.integers(1, 10 ** 26).map(str)))
    frac = draw(st.one_of(st.just(""), st.text(digits, min_size=1, max_size=40).map("." .__add__)))
    exp = draw(st.one_of(st.just(""), st.builds("{}{}{}".format, st.sampled_from("eE"),
                                                 st.sampled_from(["", "+", "-"]),
                                                 st.text(digits, min_size=1, max_size=4))))
    if not frac and not exp:
        frac = "." + draw(st.text(digits, min_size=1, max_size=3))
    return sign + whole + frac + exp


def number_token():
    """Strict JSON number tokens: integers of at most 15 digits and any float form."""
    return st.one_of(st.integers(-10 ** 15 + 1, 10 ** 15 - 1).map(str), st.just("-0"), float_token())


def python_number():
    return st.one_of(
        st.integers(-10 ** 15 + 1, 10 ** 15 - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
        st.sampled_from([0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1.7976931348623157e308,
                         0.1, 1 / 3, 9007199254740993.0, 123456789.12345678, 1e22, 1e23]),
    )


@st.composite
def result_list(draw, raw=False):
    """A results list; with ``raw`` numbers are token strings (serialised by :func:`dump_raw`)."""
    num = number_token() if raw else python_number()
    n = draw(st.integers(1, 6))
    out = []
    for _ in range(n):
        obj = {"image_id": draw(st.integers(-10 ** 18 + 1, 10 ** 18 - 1)),
               "category_id": draw(st.integers(-10 ** 18 + 1, 10 ** 18 - 1)),
               "score": draw(num)}
        if draw(st.booleans()):
            obj["bbox"] = [draw(num) for _ in range(4)]
        if draw(st.booleans()):
            alphabet = draw(st.sampled_from([RLE_ALPHABET, ASCII, "\\\"/0aO"]))   # the last: escape-heavy
            seg = {"size": [draw(st.integers(0, 10 ** 18 - 1)), draw(st.integers(-10 ** 18 + 1, 10 ** 18 - 1))],
                   "counts": draw(st.text(alphabet=alphabet, max_size=100))}
            if draw(st.booleans()):
                seg = {"counts": seg["counts"], "size": seg["size"]}
            obj["segmentation"] = seg
        keys = draw(st.permutations(list(obj)))
        out.append({k: obj[k] for k in keys})
    return out


def dump_raw(results, rnd):
    """Serialise with number tokens as given, random whitespace, '/' sometimes as '\\/'."""
    def ws():
        return "".join(rnd.choice(" \t\n\r") for _ in range(rnd.randrange(3)))

    def string(s):
        t = json.dumps(s)
        return t.replace("/", "\\/") if rnd.random() < 0.5 else t

    def value(v):
        if isinstance(v, dict):
            return "{" + ws() + ("," + ws()).join(
                string(k) + ws() + ":" + ws() + value(x) + ws() for k, x in v.items()) + "}"
        if isinstance(v, list):
            return "[" + ws() + ("," + ws()).join(value(x) + ws() for x in v) + "]"
        if isinstance(v, int):
            return str(v)
        return v   # a number token, or already a string (never: counts go through string())

    def obj(o):
        parts = []
        for k, x in o.items():
            if k == "segmentation":
                inner = ",".join(string(kk) + ":" + (string(xx) if kk == "counts" else value(xx))
                                 for kk, xx in x.items())
                parts.append(string(k) + ws() + ":" + ws() + "{" + ws() + inner + ws() + "}")
            else:
                parts.append(string(k) + ws() + ":" + ws() + value(x))
        return "{" + ws() + ("," + ws()).join(p + ws() for p in parts) + "}"

    return ws() + "[" + ws() + ("," + ws()).join(obj(o) + ws() for o in results) + "]" + ws()


STYLES = [dict(), dict(indent=2), dict(separators=(",", ":")), dict(ensure_ascii=False),
          dict(indent="\t", ensure_ascii=True, separators=(",", ": "))]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result_list(), st.sampled_from(STYLES))
def test_json_dumps_styles_equal_json_loads(results, style):
    data = json.dumps(results, **style).encode()
    assert scan_checked(data) is not None


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result_list(raw=True), st.randoms(use_true_random=False))
def test_raw_number_tokens_and_whitespace_equal_json_loads(results, rnd):
    data = dump_raw(results, rnd).encode()
    assert scan_checked(data) is not None


@settings(max_examples=250, deadline=None)
@given(number_token(), st.booleans())
def test_numbers_equal_float_of_json_loads(token, as_bbox):
    obj = '{"image_id":1,"category_id":2,"score":%s}' % (
        "0.5,\"bbox\":[1,2,3,%s]" % token if as_bbox else token)
    cols = scan_checked(("[" + obj + "]").encode())
    assert cols is not None
    got = cols["bbox"][0, 3] if as_bbox else cols["score"][0]
    want = float(json.loads(token))   # "-0" is the int 0: +0.0
    assert np.float64(got).view(np.int64) == np.float64(want).view(np.int64)


@pytest.mark.parametrize("length", [9, 17, 26])
def test_escapes_at_every_pair_of_positions(length):
    # the scanner reads 8 bytes at a time: escapes before, inside and across words
    objs = []
    for i in range(length):
        for j in range(i, length):
            chars = [RLE_ALPHABET[(i * 7 + j + k) % 64] for k in range(length)]
            chars[i] = "\\"
            chars[j] = '"/\\'[(i + j) % 3]
            seg = {"size": [1, 1], "counts": "".join(chars)}
            objs.append({"image_id": i, "category_id": j, "score": 1.0, "segmentation": seg})
    data = json.dumps(objs, separators=(",", ":")).encode()
    assert scan_checked(data) is not None
    assert scan_checked(data.replace(b"/", b"\\/")) is not None


@pytest.mark.parametrize("token", ["0." + "1" * 5000, "1" * 300 + ".5", "9" * 400 + "e-400",
                                   "1e99999999999999999999", "-1e-99999999999999999999",
                                   "0.0000000000000000000000000000001", "1" * 15, "-0.0e7",
                                   "2.4703282292062327e-324", "2.4703282292062328e-324",
                                   "1.7976931348623158e308", "9007199254740993.0"])
def test_long_and_extreme_number_tokens(token):
    cols = scan_checked(('[{"image_id":1,"category_id":2,"score":%s}]' % token).encode())
    want = float(json.loads(token))
    assert np.float64(cols["score"][0]).view(np.int64) == np.float64(want).view(np.int64)


def test_real_results_files_equal_json_loads():
    for path in (COCO_DT, LVIS_DT):
        with open(path, "rb") as f:
            data = f.read()
        assert scan_checked(data) is not None


# --------------------------------------------------------------------------- robustness

SMALL = (b'[{"image_id": 7, "category_id": -3, "score": 0.25e1, "bbox": [1, 2.5, -0.0, 1e400],'
         b' "segmentation": {"counts": "a\\\\b\\"c\\/d", "size": [4, 5]}},\n'
         b' {"score": 3, "category_id": 0, "image_id": 123456789012345678}]\n')


def test_small_file_is_accepted():
    assert scan_guarded(SMALL) is False
    cols = scan_checked(SMALL)
    assert cols["key_order"].tolist() == [1 | 2 << 3 | 3 << 6 | 4 << 9 | 5 << 12 | 1 << 30, 3 | 2 << 3 | 1 << 6]
    assert cols["int_kind"].tolist() == [0b00010, 1]
    assert cols["present"].tolist() == [31, 7]
    assert cols["bbox"][0].tolist() == [1.0, 2.5, -0.0, float("inf")]


def test_every_truncation_is_refused():
    for k in range(len(SMALL)):
        prefix = SMALL[:k]
        accepted = not scan_guarded(prefix)
        # only the file without (part of) its trailing whitespace is still valid
        assert accepted == (k >= len(SMALL) - 1), k


MUTATION_BYTES = b'\x00\x1f "\\/,:[]{}0123456789.-+eEaz\x7f\x80\xef\xff'


def test_every_single_byte_mutation_stays_safe():
    for i in range(len(SMALL)):
        for b in MUTATION_BYTES:
            if SMALL[i] != b:
                scan_guarded(SMALL[:i] + bytes([b]) + SMALL[i + 1:])


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_random_mutations_stay_safe(data):
    scan_guarded(draw_mutation(data, SMALL))


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_random_bytes_stay_safe(data):
    scan_guarded(data)


FRAGMENTS = ['[', ']', '{', '}', ',', ':', ' ', '\n', '"image_id"', '"category_id"', '"score"',
             '"bbox"', '"segmentation"', '"size"', '"counts"', '"x"', '1', '-0', '2.5e-3', '01',
             '1.', '"a\\\\b"', '"\\u0041"', 'null', 'NaN', '"', '\\']


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=40))
def test_token_soup_stays_safe(parts):
    scan_guarded("".join(parts).encode())


# --------------------------------------------------------------------------- refused inputs

GOOD = {"image_id": 1, "category_id": 2, "score": 0.5, "bbox": [1, 2, 3, 4],
        "segmentation": {"size": [2, 3], "counts": "abc"}}


def doc(**change):
    obj = dict(GOOD)
    for k, v in change.items():
        if v is None:
            del obj[k]
        else:
            obj[k] = v
    return json.dumps([obj])


def with_value(key, token):
    """GOOD with the value of ``key`` replaced by the raw text ``token``."""
    return doc(**{key: "@@"}).replace('"@@"', token)


REFUSED = {
    "empty buffer": "",
    "whitespace only": "  \n",
    "empty array": "[]",
    "empty array with space": " [ ] ",
    "not an array": json.dumps(GOOD),
    "BOM": "\ufeff" + doc(),
    "trailing garbage": doc() + "x",
    "two arrays": doc() + doc(),
    "trailing comma in array": doc()[:-1] + ",]",
    "trailing comma in object": doc()[:-2] + ",}]",
    "missing comma": doc().replace(', "category_id"', ' "category_id"'),
    "missing colon": doc().replace('"score":', '"score"'),
    "comment": "/* c */" + doc(),
    "truncated": doc()[:-1],
    "unknown key": doc(area=3.0),
    "duplicate key": doc()[:-2] + ', "score": 0.5}]',
    "escaped key": doc().replace('"score"', '"sco\\u0072e"'),
    "escaped key backslash": doc().replace('"score"', '"sc\\/ore"'),
    "missing image_id": doc(image_id=None),
    "missing category_id": doc(category_id=None),
    "missing score": doc(score=None),
    "empty object": "[{}]",
    "array element not an object": "[1]",
    "float image_id": doc(image_id=1.0),
    "exponent category_id": with_value("category_id", "1e3"),
    "19-digit image_id": doc(image_id=10 ** 18),
    "string image_id": doc(image_id="1"),
    "16-digit integer score": doc(score=10 ** 15),
    "16-digit integer in bbox": doc(bbox=[1, 2, 3, -10 ** 15]),
    "NaN score": with_value("score", "NaN"),
    "Infinity score": with_value("score", "Infinity"),
    "-Infinity in bbox": doc(bbox="@@").replace('"@@"', "[1, 2, 3, -Infinity]"),
    "null score": with_value("score", "null"),
    "string score": doc(score="0.5"),
    "boolean score": with_value("score", "true"),
    "leading zero": with_value("score", "01"),
    "point without digits": with_value("score", "1."),
    "no integer part": with_value("score", ".5"),
    "plus sign": with_value("score", "+1"),
    "minus alone": with_value("score", "-"),
    "exponent without digits": with_value("score", "1e"),
    "exponent sign without digits": with_value("score", "1e+"),
    "bbox of 3": doc(bbox=[1, 2, 3]),
    "bbox of 5": doc(bbox=[1, 2, 3, 4, 5]),
    "bbox null": doc(bbox="@@").replace('"@@"', "null"),
    "bbox not a list": doc(bbox=5),
    "segmentation null": doc(segmentation="@@").replace('"@@"', "null"),
    "polygon segmentation": doc(segmentation=[[1, 2, 3, 4, 5, 6]]),
    "list counts": doc(segmentation={"size": [2, 3], "counts": [1, 2, 3]}),
    "segmentation without size": doc(segmentation={"counts": "abc"}),
    "segmentation without counts": doc(segmentation={"size": [2, 3]}),
    "segmentation extra key": doc(segmentation={"size": [2, 3], "counts": "abc", "x": 1}),
    "segmentation repeated key": doc().replace('"counts": "abc"', '"size": [2, 3]'),
    "size of 3": doc(segmentation={"size": [2, 3, 4], "counts": "abc"}),
    "float size": doc(segmentation={"size": [2.0, 3], "counts": "abc"}),
    "unicode escape in counts": doc(segmentation={"size": [2, 3], "counts": "a\u00e9"}),
    "raw utf-8 in counts": json.dumps([dict(GOOD, segmentation={"size": [2, 3], "counts": "a\u00e9"})],
                                      ensure_ascii=False),
    "\\u escape of ascii in counts": doc().replace('"abc"', '"a\\u0062c"'),
    "\\n escape in counts": doc().replace('"abc"', '"a\\nc"'),
    "control byte in counts": doc().replace('"abc"', '"a\tc"'),
    "backslash at end of counts": doc().replace('"abc"', '"abc\\"'),
    "single quotes": doc().replace('"abc"', "'abc'"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(name):
    data = REFUSED[name].encode("utf-8")
    assert scan_guarded(data) is True
    buf = bytearray(data)
    assert _scan_results.scan_results(buf) is None and buf == data


def test_refusal_late_in_the_file_leaves_earlier_counts_escaped():
    # the first object's counts need unescaping; the second object is refused
    data = ('[{"image_id":1,"category_id":2,"score":1,"segmentation":{"size":[1,1],"counts":"a\\\\b"}},'
            '{"image_id":1,"category_id":2,"score":NaN}]').encode()
    buf = bytearray(data)
    assert _scan_results.scan_results(buf) is None
    assert buf == data


def test_raw_delete_byte_and_slash_in_counts_are_accepted():
    data = doc().replace('"abc"', '"a\x7f/b"').encode()
    cols = scan_checked(data)
    assert cols is not None and cols["counts_len"].tolist() == [4]


def test_threads_scan_side_by_side():
    from concurrent.futures import ThreadPoolExecutor
    with open(COCO_DT, "rb") as f:
        data = f.read()
    bufs = [bytearray(data) for _ in range(4)]
    with ThreadPoolExecutor(2) as pool:
        cols = list(pool.map(_scan_results.scan_results, bufs))
    for c, b in zip(cols, bufs):
        assert_columns(c, data, b)


def test_read_only_buffer_is_a_type_error_not_a_crash():
    with pytest.raises((TypeError, ValueError, BufferError)):
        _scan_results.scan_results(doc().encode())


# --------------------------------------------------------------------------- compact_counts

@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(result_list(), st.sampled_from(STYLES))
def test_compact_counts_keeps_every_string(results, style):
    data = json.dumps(results, **style).encode()
    buf = bytearray(data)
    cols = _scan_results.scan_results(buf)
    counts = [r["segmentation"]["counts"] if "segmentation" in r else "" for r in results]
    start = cols["counts_start"]
    used = _scan_results.compact_counts(buf, start, cols["counts_len"])
    assert used == sum(len(c) for c in counts)
    del buf[used:]
    assert bytes(buf).decode("ascii") == "".join(counts)
    assert start.tolist() == np.concatenate([[0], np.cumsum(cols["counts_len"])[:-1]]).tolist()
    for i, c in enumerate(counts):
        s = int(start[i])
        assert bytes(buf[s:s + len(c)]).decode("ascii") == c


def test_compact_counts_refuses_bad_ranges():
    buf = bytearray(b"0123456789")
    with pytest.raises(ValueError, match="entries"):
        _scan_results.compact_counts(buf, np.array([0, 1], np.int64), np.array([1], np.int64))
    with pytest.raises(ValueError, match="outside"):
        _scan_results.compact_counts(buf, np.array([8], np.int64), np.array([3], np.int64))
    with pytest.raises(ValueError, match="outside"):
        _scan_results.compact_counts(buf, np.array([-1], np.int64), np.array([3], np.int64))
    with pytest.raises(ValueError, match="previous"):
        _scan_results.compact_counts(buf, np.array([5, 2], np.int64), np.array([2, 2], np.int64))
    assert buf == b"0123456789"
    start = np.array([2, 0, 6], np.int64)
    assert _scan_results.compact_counts(buf, start, np.array([3, 0, 2], np.int64)) == 5
    assert bytes(buf[:5]) == b"23467" and start.tolist() == [0, 3, 3]


def test_random_shuffled_real_file_round_trip():
    with open(COCO_DT, "rb") as f:
        results = json.load(f)
    rnd = random.Random(0)
    for r in results[:200]:
        keys = list(r)
        rnd.shuffle(keys)
        for k in keys:
            r[k] = r.pop(k)
    data = json.dumps(results[:200], indent=1).encode()
    assert scan_checked(data) is not None


def test_docstring_examples_run():
    import doctest
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in doctest.DocTestFinder().find(_scan_results.scan_results, "scan_results",
                                             globs={"scan_results": _scan_results.scan_results}):
        runner.run(test)
    assert runner.summarize(verbose=False).attempted >= 5
    assert runner.summarize(verbose=False).failed == 0
