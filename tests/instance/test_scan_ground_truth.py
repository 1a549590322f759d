"""boundary_api.instance._scan_ground_truth.scan_ground_truth: the native ground-truth scanner against json.loads.

Every accepted input must give exactly json.loads' view (ids, sizes, areas
and coordinates bit for bit as ``float()`` gives them, flags, offsets, spans
that decode to the same lists, counts strings that decode to the same text);
everything outside the schema gives None.  Buffers are also placed against an
inaccessible page, so that a read past either end would crash the test.
"""
import contextlib
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api.instance import _scan_ground_truth
from conftest import COCO_GT, LVIS_GT, draw_mutation, guarded_views

INT64 = ["img_id", "img_height", "img_width", "cat_id", "ann_id", "ann_image_id",
         "ann_category_id", "ann_iscrowd", "ann_rle_h", "ann_rle_w", "poly_off", "ann_poly_off",
         "rle_counts", "ann_rle_off", "images_span", "categories_span", "annotations_span",
         "ann_counts_start", "ann_counts_len"]
FLOAT64 = ["ann_area", "ann_bbox", "poly_coords"]
UINT8 = ["ann_has_bbox", "ann_ignore", "ann_seg_kind", "ann_counts_escaped", "ann_has_iscrowd"]
COLUMNS = set(INT64) | set(FLOAT64) | set(UINT8)
IMAGE_KEYS = {"id", "height", "width"}
ANN_KEYS = {"id", "image_id", "category_id", "area", "iscrowd", "bbox", "ignore", "segmentation"}
TOP_KEYS = {"images", "annotations", "categories"}
RLE_ALPHABET = "".join(chr(c) for c in range(48, 112))   # pycocotools' counts characters
ASCII = "".join(chr(c) for c in range(0x20, 0x80))       # printable and DEL (escaped by json.dumps)


# --------------------------------------------------------------------------- reference view

class Obj(dict):
    """A JSON object from json.loads that remembers whether a key repeated."""
    dup = False


def _pairs(pairs):
    out = Obj(pairs)
    out.dup = len(out) != len(pairs)
    return out


def is_int(v):
    return type(v) is int


def is_num(v):
    return type(v) in (int, float)


def gt_view(data):
    """The columns (minus counts positions) the scanner must give for ``data``.

    Asserts that json.loads sees the file inside the schema, so an accepted
    input that json.loads reads differently fails here.
    """
    d = json.loads(bytes(data), object_pairs_hook=_pairs)
    assert type(d) is Obj and not d.dup and TOP_KEYS <= set(d)
    images, anns, cats = d["images"], d["annotations"], d["categories"]
    assert type(images) is list and type(anns) is list and type(cats) is list
    out = {k: [] for k in COLUMNS}
    for img in images:
        assert type(img) is Obj and not img.dup and IMAGE_KEYS <= set(img)
        assert all(is_int(img[k]) for k in IMAGE_KEYS) and img["height"] >= 1 and img["width"] >= 1
        out["img_id"].append(img["id"])
        out["img_height"].append(img["height"])
        out["img_width"].append(img["width"])
    for cat in cats:
        assert type(cat) is Obj and not cat.dup and is_int(cat["id"])
        out["cat_id"].append(cat["id"])
    counts_text = []
    out["poly_off"].append(0)
    out["ann_poly_off"].append(0)
    out["ann_rle_off"].append(0)
    for a in anns:
        assert type(a) is Obj and not a.dup
        for k in ("id", "image_id", "category_id"):
            assert is_int(a[k])
        # iscrowd is optional (LVIS has none)
        assert ("iscrowd" not in a or (is_int(a["iscrowd"]) and a["iscrowd"] in (0, 1))) and is_num(a["area"])
        out["ann_id"].append(a["id"])
        out["ann_image_id"].append(a["image_id"])
        out["ann_category_id"].append(a["category_id"])
        out["ann_iscrowd"].append(a.get("iscrowd", 0))
        out["ann_has_iscrowd"].append(int("iscrowd" in a))
        out["ann_area"].append(float(a["area"]))
        if "bbox" in a:
            assert type(a["bbox"]) is list and len(a["bbox"]) == 4 and all(map(is_num, a["bbox"]))
            out["ann_bbox"].append([float(v) for v in a["bbox"]])
        else:
            out["ann_bbox"].append([0.0] * 4)
        out["ann_has_bbox"].append(int("bbox" in a))
        if "ignore" not in a:
            out["ann_ignore"].append(0)
        else:
            assert type(a["ignore"]) in (bool, int, float)
            out["ann_ignore"].append(2 if a["ignore"] else 1)
        seg = a.get("segmentation", "absent")
        kind, h, w, text = 0, 0, 0, None
        if type(seg) is list:
            kind = 1
            for poly in seg:
                assert type(poly) is list and all(map(is_num, poly))
                out["poly_coords"].extend(float(v) for v in poly)
                out["poly_off"].append(len(out["poly_coords"]))
        elif seg != "absent":
            assert type(seg) is Obj and not seg.dup and set(seg) == {"size", "counts"}
            assert type(seg["size"]) is list and len(seg["size"]) == 2 and all(map(is_int, seg["size"]))
            h, w = seg["size"]
            if type(seg["counts"]) is str:
                kind, text = 2, seg["counts"]
                assert all(0x20 <= ord(c) <= 0x7f for c in text)
            else:
                kind = 3
                assert type(seg["counts"]) is list
                assert all(is_int(v) and v >= 0 for v in seg["counts"])
                out["rle_counts"].extend(seg["counts"])
        counts_text.append(text)
        out["ann_seg_kind"].append(kind)
        out["ann_rle_h"].append(h)
        out["ann_rle_w"].append(w)
        out["ann_poly_off"].append(len(out["poly_off"]) - 1)
        out["ann_rle_off"].append(len(out["rle_counts"]))
    dtypes = {**{k: np.int64 for k in INT64}, **{k: np.float64 for k in FLOAT64},
              **{k: np.uint8 for k in UINT8}}
    view = {k: np.array(v, dtypes[k]) for k, v in out.items() if v or k not in ("ann_bbox",)}
    view["ann_bbox"] = np.array(out["ann_bbox"], np.float64).reshape(-1, 4)
    return d, view, counts_text


def assert_columns(cols, data):
    """``cols`` (scanner output for ``data``) equal json.loads' view of ``data``."""
    data = bytes(data)
    d, view, counts_text = gt_view(data)
    assert set(cols) == COLUMNS
    for key, want in view.items():
        if key in ("images_span", "categories_span", "annotations_span", "ann_counts_start",
                   "ann_counts_len", "ann_counts_escaped"):
            continue
        got = cols[key]
        assert got.dtype == want.dtype and got.shape == want.shape, key
        assert got.flags.c_contiguous and got.flags.owndata is not None, key
        if want.dtype == np.float64:   # bit for bit: -0.0, inf
            assert np.array_equal(got.view(np.int64), want.view(np.int64)), key
        else:
            assert np.array_equal(got, want), key
    for key, name in (("images_span", "images"), ("categories_span", "categories"),
                      ("annotations_span", "annotations")):
        span = cols[key]
        assert span.dtype == np.int64 and span.shape == (2,)
        s, e = int(span[0]), int(span[1])
        assert 0 <= s < e <= len(data) and data[s:s + 1] == b"[" and data[e - 1:e] == b"]"
        assert json.loads(data[s:e]) == d[name]
    n = len(counts_text)
    for key in ("ann_counts_start", "ann_counts_len", "ann_counts_escaped"):
        assert cols[key].shape == (n,)
    for i, text in enumerate(counts_text):
        s, length = int(cols["ann_counts_start"][i]), int(cols["ann_counts_len"][i])
        if text is None:
            assert (s, length, int(cols["ann_counts_escaped"][i])) == (0, 0, 0)
            continue
        raw = data[s:s + length]
        assert 1 <= s and s + length < len(data) and data[s - 1] == data[s + length] == ord('"')
        assert json.loads(b'"' + raw + b'"') == text
        assert int(cols["ann_counts_escaped"][i]) == (b"\\" in raw)


def scan_guarded(data):
    """Scan ``data`` placed right after / right before a PROT_NONE page, read-only.

    A read outside the buffer faults (the test process dies), so a pass proves
    the scanner stays inside.  Returns True when refused (None), after checking
    that both placements agree and an accepted result equals json.loads' view.
    """
    data = bytes(data)
    results = []
    for view in guarded_views(data):
        cols = _scan_ground_truth.scan_ground_truth(view.toreadonly())
        assert bytes(view) == data
        if cols is not None:
            assert_columns(cols, data)
        results.append(cols is None)
    assert results[0] == results[1]
    return results[0]


def scan_checked(data):
    cols = _scan_ground_truth.scan_ground_truth(np.frombuffer(bytes(data), np.uint8))
    if cols is not None:
        assert_columns(cols, data)
    return cols


# --------------------------------------------------------------------------- generated ground truths

@st.composite
def float_token(draw):
    """A strict JSON number token with a fraction and/or an exponent."""
    digits = "0123456789"
    sign = draw(st.sampled_from(["", "-"]))
    whole = draw(st.one_of(st.just("0"), st.integers(1, 10 ** 26).map(str)))
    frac = draw(st.one_of(st.just(""), st.text(digits, min_size=1, max_size=30).map("." .__add__)))
    exp = draw(st.one_of(st.just(""), st.builds("{}{}{}".format, st.sampled_from("eE"),
                                                 st.sampled_from(["", "+", "-"]),
                                                 st.text(digits, min_size=1, max_size=4))))
    if not frac and not exp:
        frac = "." + draw(st.text(digits, min_size=1, max_size=3))
    return sign + whole + frac + exp


def number_token():
    """Number tokens the scanner takes as numbers: integers of at most 15 digits, any float."""
    return st.one_of(st.integers(-10 ** 15 + 1, 10 ** 15 - 1).map(str), st.just("-0"), float_token(),
                     st.floats(allow_nan=False, allow_infinity=False).map(repr))


def json_value():
    """Any JSON value (for keys outside the schema), nested a little."""
    scalars = st.one_of(st.none(), st.booleans(), st.integers(-10 ** 30, 10 ** 30),
                        st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=8))
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
        max_leaves=8)


def extra_keys(known):
    return st.dictionaries(st.text(max_size=6).filter(lambda k: k not in known), json_value(),
                           max_size=2)


class Tokens:
    """Raw number tokens put in place of marker strings after json.dumps."""

    def __init__(self):
        self.tokens = []

    def mark(self, token):
        self.tokens.append(token)
        return "@@%d@@" % (len(self.tokens) - 1)

    def fill(self, text):
        for i in reversed(range(len(self.tokens))):   # @@1@@ is no prefix of @@10@@ here
            text = text.replace('"@@%d@@"' % i, self.tokens[i])
        return text


@st.composite
def ground_truth(draw, toks, max_annotations=4):
    ids = st.integers(-10 ** 18 + 1, 10 ** 18 - 1)
    num = number_token().map(toks.mark)

    def shuffled(obj):
        keys = draw(st.permutations(list(obj)))
        return {k: obj[k] for k in keys}

    images = []
    for _ in range(draw(st.integers(0, 3))):
        img = {"id": draw(ids), "height": draw(st.integers(1, 10 ** 18 - 1)),
               "width": draw(st.integers(1, 10 ** 18 - 1))}
        img.update(draw(extra_keys(IMAGE_KEYS)))
        images.append(shuffled(img))
    cats = []
    for _ in range(draw(st.integers(0, 3))):
        cat = {"id": draw(ids)}
        cat.update(draw(extra_keys({"id"})))
        cats.append(shuffled(cat))
    anns = []
    for _ in range(draw(st.integers(0, max_annotations))):
        a = {"id": draw(ids), "image_id": draw(ids), "category_id": draw(ids), "area": draw(num)}
        if draw(st.integers(0, 3)):  # (LVIS annotations have none)
            a["iscrowd"] = draw(st.sampled_from([0, 1]))
        if draw(st.booleans()):
            a["bbox"] = [draw(num) for _ in range(4)]
        if draw(st.booleans()):
            a["ignore"] = draw(st.one_of(st.booleans(), num))
        kind = draw(st.integers(0, 3))
        if kind == 1:
            a["segmentation"] = draw(st.lists(st.lists(num, max_size=8), max_size=3))
        elif kind:
            size = [draw(st.integers(-10 ** 18 + 1, 10 ** 18 - 1)) for _ in range(2)]
            if kind == 2:
                alphabet = draw(st.sampled_from([RLE_ALPHABET, ASCII, "\\\"/0aO"]))
                counts = draw(st.text(alphabet=alphabet, max_size=40))
            else:
                counts = draw(st.lists(st.integers(0, 10 ** 18 - 1), max_size=8))
            seg = {"size": size, "counts": counts}
            if draw(st.booleans()):
                seg = {"counts": counts, "size": size}
            a["segmentation"] = seg
        a.update(draw(extra_keys(ANN_KEYS)))
        anns.append(shuffled(a))
    top = {"images": images, "annotations": anns, "categories": cats}
    top.update(draw(extra_keys(TOP_KEYS)))
    if draw(st.booleans()):
        top["info"] = {"description": "x", "year": 2014}
        top["licenses"] = [{"id": 1, "name": "é", "url": "http://a/b"}]
    return shuffled(top)


STYLES = [dict(), dict(indent=2), dict(separators=(",", ":")), dict(ensure_ascii=False),
          dict(indent="\t", ensure_ascii=True, separators=(",", ": "))]


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(STYLES))
def test_generated_ground_truths_equal_json_loads(data, style):
    toks = Tokens()
    gt = data.draw(ground_truth(toks))
    text = toks.fill(json.dumps(gt, **style))
    raw = text.encode("utf-8")
    assert scan_checked(raw) is not None
    assert scan_guarded(raw) is False


@settings(max_examples=300, deadline=None)
@given(number_token(), st.sampled_from(["area", "bbox", "poly", "ignore"]))
def test_numbers_equal_float_of_json_loads(token, where):
    ann = {"id": 1, "image_id": 2, "category_id": 3, "area": 1, "iscrowd": 0}
    if where == "area":
        ann["area"] = "@@"
    elif where == "bbox":
        ann["bbox"] = [1, "@@", 2, 3]
    elif where == "poly":
        ann["segmentation"] = [[0, "@@"], ["@@"]]
    else:
        ann["ignore"] = "@@"
    data = json.dumps({"images": [], "annotations": [ann], "categories": []}).replace('"@@"', token)
    cols = scan_checked(data.encode())
    assert cols is not None
    want = float(json.loads(token))
    got = {"area": lambda: cols["ann_area"][0], "bbox": lambda: cols["ann_bbox"][0, 1],
           "poly": lambda: cols["poly_coords"][1], "ignore": lambda: want}[where]()
    assert np.float64(got).view(np.int64) == np.float64(want).view(np.int64)
    if where == "ignore":
        assert cols["ann_ignore"][0] == (2 if want else 1)


def test_real_ground_truth_equals_json_loads():
    with open(COCO_GT, "rb") as f:
        data = f.read()
    cols = scan_checked(data)
    assert cols is not None
    kinds = cols["ann_seg_kind"]
    assert (kinds == 1).any() and (kinds == 3).any()      # polygons and crowd RLEs
    # numpy array from numpy.fromfile, as the loader reads it
    again = _scan_ground_truth.scan_ground_truth(np.fromfile(COCO_GT, np.uint8))
    for k in cols:
        assert np.array_equal(cols[k], again[k])


def test_lvis_ground_truth_without_iscrowd():
    # LVIS annotations carry no "iscrowd": read, and recorded as absent
    with open(LVIS_GT, "rb") as f:
        data = f.read()
    assert "iscrowd" not in json.loads(data)["annotations"][0]
    cols = scan_checked(data)
    assert cols is not None and not cols["ann_has_iscrowd"].any() and not cols["ann_iscrowd"].any()
    assert (cols["ann_seg_kind"] == 1).all()


def test_compressed_counts_located_raw():
    gt = {"images": [], "categories": [], "annotations": [
        {"id": 1, "image_id": 1, "category_id": 1, "area": 0.5, "iscrowd": 1,
         "segmentation": {"counts": "a\\b\"c/d\u007f", "size": [3, 4]}},
        {"id": 2, "image_id": 1, "category_id": 1, "area": 0.5, "iscrowd": 0,
         "segmentation": {"size": [3, 4], "counts": "plain"}}]}
    data = json.dumps(gt).encode()
    cols = scan_checked(data)
    assert cols["ann_seg_kind"].tolist() == [2, 2]
    assert cols["ann_counts_escaped"].tolist() == [1, 0]
    s, n = cols["ann_counts_start"][1], cols["ann_counts_len"][1]
    assert data[s:s + n] == b"plain"
    assert cols["ann_rle_h"].tolist() == [3, 3] and cols["ann_rle_w"].tolist() == [4, 4]


def test_offsets_with_mixed_kinds_and_empty_polygons():
    ann = {"image_id": 1, "category_id": 1, "area": 1, "iscrowd": 0}
    anns = [dict(ann, id=1, segmentation=[[1, 2, 3, 4, 5, 6], [], [7, 8]]),
            dict(ann, id=2, segmentation={"size": [2, 2], "counts": [1, 2, 1]}),
            dict(ann, id=3),
            dict(ann, id=4, segmentation=[]),
            dict(ann, id=5, segmentation={"counts": [], "size": [0, 0]}),
            dict(ann, id=6, segmentation=[[9.5, -1e3]])]
    cols = scan_checked(json.dumps({"images": [], "annotations": anns, "categories": []}).encode())
    assert cols["ann_seg_kind"].tolist() == [1, 3, 0, 1, 3, 1]
    assert cols["poly_off"].tolist() == [0, 6, 6, 8, 10]
    assert cols["ann_poly_off"].tolist() == [0, 3, 3, 3, 3, 3, 4]
    assert cols["rle_counts"].tolist() == [1, 2, 1]
    assert cols["ann_rle_off"].tolist() == [0, 0, 3, 3, 3, 3, 3]
    assert cols["poly_coords"].tolist() == [1, 2, 3, 4, 5, 6, 7, 8, 9.5, -1000.0]


def test_empty_ground_truth():
    cols = scan_checked(b'{"images":[],"annotations":[],"categories":[]}')
    assert cols["ann_bbox"].shape == (0, 4) and cols["img_id"].shape == (0,)
    assert cols["poly_off"].tolist() == [0] and cols["ann_poly_off"].tolist() == [0]


def test_escaped_keys_are_decoded():
    # "\u0069d" is "id" to json.loads: the scanner must read it as id too
    data = (b'{"images": [{"\\u0069d": 5, "h\\u0065ight": 2, "width": 3, "\\u00e9": 1}],'
            b' "annotations": [], "c\\u0061tegories": [{"id": 4}]}')
    cols = scan_checked(data)
    assert cols["img_id"].tolist() == [5] and cols["cat_id"].tolist() == [4]


def test_read_only_inputs_are_accepted_and_untouched():
    with open(COCO_GT, "rb") as f:
        data = f.read()
    arr = np.frombuffer(data, np.uint8)
    assert not arr.flags.writeable
    cols = _scan_ground_truth.scan_ground_truth(arr)
    assert cols is not None and _scan_ground_truth.scan_ground_truth(data) is not None
    buf = bytearray(data)
    _scan_ground_truth.scan_ground_truth(buf)
    assert buf == data


def test_nesting_limit():
    def doc(k):
        return ('{"images": [], "annotations": [], "categories": [], "info": %s}'
                % ("[" * k + "]" * k)).encode()
    assert scan_checked(doc(63)) is not None    # 64 levels with the top-level object
    assert scan_checked(doc(64)) is None
    assert scan_checked(doc(10000)) is None


# --------------------------------------------------------------------------- safety

SMALL = json.dumps({
    "info": {"v": [1, 2.5e3, None, True, False, "\u00e9\\"]},
    "images": [{"id": 1, "height": 4, "width": 5, "file_name": "a.jpg"}],
    "annotations": [
        {"id": 7, "image_id": 1, "category_id": 2, "area": 3.5, "iscrowd": 0,
         "bbox": [0, 1.5, -2, 3e-1], "ignore": 0, "segmentation": [[0, 1, 2.5, 3], []]},
        {"segmentation": {"counts": "a\\b", "size": [4, 5]}, "iscrowd": 1, "area": 2,
         "category_id": 2, "image_id": 1, "id": 8, "ignore": True},
        {"id": 9, "image_id": 1, "category_id": 2, "area": 0, "iscrowd": 1,
         "segmentation": {"size": [1, 2], "counts": [0, 2]}, "num_keypoints": 0}],
    "categories": [{"id": 2, "name": "x", "supercategory": "y"}],
}, ensure_ascii=False).encode() + b"\n"


def test_small_file_is_accepted():
    assert scan_guarded(SMALL) is False
    cols = scan_checked(SMALL)
    assert cols["ann_seg_kind"].tolist() == [1, 2, 3]
    assert cols["ann_ignore"].tolist() == [1, 2, 0]
    assert cols["ann_has_bbox"].tolist() == [1, 0, 0]


def test_every_truncation_is_refused():
    for k in range(len(SMALL)):
        accepted = not scan_guarded(SMALL[:k])
        assert accepted == (k == len(SMALL) - 1), k   # only the trailing newline may go


MUTATION_BYTES = b'\x00\x1f "\\/,:[]{}0123456789.-+eEaz\x7f\x80\xc3\xef\xff'


@pytest.mark.slow
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
def test_random_bytes_are_refused(data):
    assert scan_guarded(data) is True


FRAGMENTS = ['[', ']', '{', '}', ',', ':', ' ', '"images"', '"annotations"', '"categories"',
             '"id"', '"height"', '"width"', '"image_id"', '"category_id"', '"area"', '"iscrowd"',
             '"bbox"', '"ignore"', '"segmentation"', '"size"', '"counts"', '"x"', '1', '0', '-0',
             '2.5e-3', '01', 'true', 'null', 'NaN', '"', '\\', '"\\u00e9"', '"\\ud800"']


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60))
def test_token_soup_stays_safe(parts):
    scan_guarded("".join(parts).encode())


# --------------------------------------------------------------------------- refused inputs

ANN = {"id": 1, "image_id": 1, "category_id": 1, "area": 2.0, "iscrowd": 0,
       "bbox": [1, 2, 3, 4], "segmentation": [[1, 2, 3, 4, 5, 6]]}
IMG = {"id": 1, "height": 4, "width": 5}
CAT = {"id": 1, "name": "a"}


def gt(ann=None, img=None, cat=None, **top):
    doc = {"images": [img or IMG], "annotations": [ann or ANN], "categories": [cat or CAT]}
    for k, v in top.items():
        if v is None:
            del doc[k]
        else:
            doc[k] = v
    return json.dumps(doc)


def ann_with(**change):
    a = dict(ANN)
    for k, v in change.items():
        if v is None:
            del a[k]
        else:
            a[k] = v
    return gt(a)


def ann_raw(key, token):
    """GOOD with annotation key ``key`` given the raw text ``token``."""
    return ann_with(**{key: "@@"}).replace('"@@"', token)


def img_with(**change):
    i = dict(IMG)
    for k, v in change.items():
        if v is None:
            del i[k]
        else:
            i[k] = v
    return gt(img=i)


RLE = {"size": [2, 3], "counts": "abc"}

REFUSED = {
    "empty buffer": "",
    "whitespace only": " \n",
    "top-level array": "[" + gt() + "]",
    "BOM": "\ufeff" + gt(),
    "trailing garbage": gt() + "x",
    "two objects": gt() + gt(),
    "trailing comma": gt()[:-1] + ",}",
    "comment": "/* c */" + gt(),
    "missing images": gt(images=None),
    "missing annotations": gt(annotations=None),
    "missing categories": gt(categories=None),
    "images not an array": gt(images={}),
    "annotations null": gt(annotations="@@").replace('"@@"', "null"),
    "categories an object": gt(categories={"id": 1}),
    "duplicate images": gt()[:-1] + ', "images": []}',
    "duplicate extra top-level key": gt(info=1)[:-1] + ', "info": 2}',
    "duplicate extra key decoded equal": gt(info=1)[:-1] + ', "inf\\u006f": 2}',
    "duplicate images escaped": gt()[:-1] + ', "imag\\u0065s": []}',
    "invalid extra value": gt(info="@@").replace('"@@"', "[1, 2,]"),
    "NaN in extra value": gt(info="@@").replace('"@@"', "NaN"),
    "invalid utf-8 in extra string": gt(info="@@").replace('"@@"', '"\udcff"'),  # surrogate text
    "lone surrogate escape": gt(info="@@").replace('"@@"', '"\\ud800"'),
    "control byte in string": gt(info="@@").replace('"@@"', '"a\tb"'),
    "bad escape": gt(info="@@").replace('"@@"', '"a\\x"'),
    "image not an object": gt(img="@@").replace('"@@"', "1"),
    "image missing id": img_with(id=None),
    "image missing height": img_with(height=None),
    "image missing width": img_with(width=None),
    "image height 0": img_with(height=0),
    "image width negative": img_with(width=-5),
    "image float id": img_with(id=1.0),
    "image string id": img_with(id="1"),
    "image 19-digit id": img_with(id=10 ** 18),
    "image duplicate id": gt().replace('"id": 1, "height"', '"id": 1, "id": 1, "height"', 1),
    "image duplicate extra key": img_with(file_name="a").replace(
        '"file_name": "a"', '"file_name": "a", "file_name": "b"'),
    "category missing id": gt(cat={"name": "a"}),
    "category float id": gt(cat={"id": 1.5}),
    "annotation missing id": ann_with(id=None),
    "annotation missing image_id": ann_with(image_id=None),
    "annotation missing category_id": ann_with(category_id=None),
    "annotation missing area": ann_with(area=None),
    "iscrowd 2": ann_with(iscrowd=2),
    "iscrowd true": ann_with(iscrowd=True),
    "iscrowd float": ann_with(iscrowd=0.0),
    "area string": ann_with(area="1"),
    "area null": ann_raw("area", "null"),
    "area NaN": ann_raw("area", "NaN"),
    "area 16-digit integer": ann_with(area=10 ** 15),
    "leading zero": ann_raw("area", "01"),
    "point without digits": ann_raw("area", "1."),
    "plus sign": ann_raw("area", "+1"),
    "exponent without digits": ann_raw("area", "1e"),
    "duplicate annotation key": ann_with().replace('"iscrowd": 0', '"iscrowd": 0, "area": 1'),
    "duplicate annotation extra key": ann_with(x=1).replace('"x": 1', '"x": 1, "x": 2'),
    "bbox of 3": ann_with(bbox=[1, 2, 3]),
    "bbox of 5": ann_with(bbox=[1, 2, 3, 4, 5]),
    "bbox null": ann_raw("bbox", "null"),
    "bbox with string": ann_with(bbox=[1, 2, 3, "4"]),
    "bbox with Infinity": ann_raw("bbox", "[1, 2, 3, Infinity]"),
    "ignore null": ann_raw("ignore", "null"),
    "ignore string": ann_with(ignore="0"),
    "ignore list": ann_with(ignore=[0]),
    "segmentation null": ann_raw("segmentation", "null"),
    "segmentation string": ann_with(segmentation="abc"),
    "segmentation number": ann_with(segmentation=1),
    "polygon of strings": ann_with(segmentation=[["1", 2]]),
    "polygon with null": ann_raw("segmentation", "[[1, null]]"),
    "polygon with NaN": ann_raw("segmentation", "[[1, NaN]]"),
    "polygon with Infinity": ann_raw("segmentation", "[[1, -Infinity]]"),
    "polygon not nested": ann_with(segmentation=[1, 2, 3, 4]),
    "polygon nested too deep": ann_with(segmentation=[[[1, 2]]]),
    "rle without size": ann_with(segmentation={"counts": "abc"}),
    "rle without counts": ann_with(segmentation={"size": [2, 3]}),
    "rle extra key": ann_with(segmentation=dict(RLE, x=1)),
    "rle repeated key": ann_with(segmentation=RLE).replace('"counts": "abc"', '"size": [2, 3]'),
    "rle size of 3": ann_with(segmentation={"size": [2, 3, 4], "counts": "abc"}),
    "rle float size": ann_with(segmentation={"size": [2.0, 3], "counts": "abc"}),
    "rle counts null": ann_with(segmentation=RLE).replace('"abc"', "null"),
    "rle counts negative": ann_with(segmentation={"size": [2, 3], "counts": [1, -1]}),
    "rle counts float": ann_with(segmentation={"size": [2, 3], "counts": [1, 2.0]}),
    "non-ascii counts escaped": ann_with(segmentation={"size": [2, 3], "counts": "a\u00e9"}),
    "non-ascii counts raw": json.dumps({"images": [], "categories": [], "annotations": [
        dict(ANN, segmentation={"size": [2, 3], "counts": "a\u00e9"})]}, ensure_ascii=False),
    "\\n escape in counts": ann_with(segmentation=RLE).replace('"abc"', '"a\\nc"'),
    "control escape \\u0001 in counts": ann_with(segmentation=RLE).replace('"abc"', '"a\\u0001c"'),
    "raw tab in counts": ann_with(segmentation=RLE).replace('"abc"', '"a\tc"'),
    "too many extra keys": ann_with(**{"k%d" % i: i for i in range(65)}),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(name):
    data = REFUSED[name].encode("utf-8", "surrogatepass")
    assert scan_guarded(data) is True


def test_refused_cases_are_valid_neighbours():
    # the cases above differ from accepted files only where their name says
    assert scan_checked(gt().encode()) is not None
    assert scan_checked(ann_with(**{"k%d" % i: i for i in range(64)}).encode()) is not None
    assert scan_checked(gt(info=1).encode()) is not None
    assert scan_checked(ann_with(segmentation=RLE).encode()) is not None
    assert scan_checked(ann_with(ignore=0.0).encode())["ann_ignore"].tolist() == [1]
    assert scan_checked(ann_with(ignore=-1e-3).encode())["ann_ignore"].tolist() == [2]
    no_crowd = scan_checked(ann_with(iscrowd=None).encode())
    assert no_crowd["ann_has_iscrowd"].tolist() == [0] and no_crowd["ann_iscrowd"].tolist() == [0]
    assert scan_checked(ann_with(iscrowd=1).encode())["ann_has_iscrowd"].tolist() == [1]


def test_threads_scan_side_by_side():
    from concurrent.futures import ThreadPoolExecutor
    with open(COCO_GT, "rb") as f:
        data = np.frombuffer(f.read(), np.uint8)
    with ThreadPoolExecutor(4) as pool:
        outs = list(pool.map(_scan_ground_truth.scan_ground_truth, [data] * 8))
    for out in outs[1:]:
        assert all(np.array_equal(out[k], outs[0][k]) for k in out)


def test_docstring_examples_run():
    import doctest
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    for t in finder.find(_scan_ground_truth.scan_ground_truth, "scan_ground_truth",
                         globs={"scan_ground_truth": _scan_ground_truth.scan_ground_truth}):
        runner.run(t)
    assert runner.failures == 0 and runner.tries >= 3


@pytest.mark.parametrize("raw, accepted", [
    (b"\xe2\x82\xac", True), (b"\xf0\x9f\x98\x80", True), (b"\xc3\xa9", True), (b"\x7f", True),
    (b"\xff", False), (b"\x80", False), (b"\xc0\x80", False), (b"\xc1\xbf", False),
    (b"\xe0\x80\x80", False), (b"\xed\xa0\x80", False), (b"\xf4\x90\x80\x80", False),
    (b"\xf5\x80\x80\x80", False), (b"\xe2\x82", False), (b"\xc3", False), (b"\xc3(", False),
])
def test_utf8_in_skipped_strings(raw, accepted):
    # strict UTF-8 as Python decodes it; encoded surrogates, which json.loads lets
    # through with 'surrogatepass', are refused too
    for where in (b'"info": "a%sb"', b'"info": {"k%s": 1}'):
        data = (b'{"images": [], "annotations": [], "categories": [], '
                + where.replace(b"%s", raw) + b"}")
        assert scan_guarded(data) is (not accepted)


# --------------------------------------------------------------------------- split scan
#
# A file scanned on several threads (its annotations array cut at likely
# object starts) must give exactly what the one-thread scan gives: the same
# columns bit for bit, the same refusals.  _min_parallel_bytes=0 splits even
# the smallest file, so many threads make many cuts, some of them inside
# strings, nested arrays of objects or after the annotations array.

def assert_same_scan(one, other):
    assert (one is None) == (other is None)
    if one is None:
        return
    assert set(one) == set(other)
    for key in one:
        a, b = one[key], other[key]
        assert a.dtype == b.dtype and a.shape == b.shape, key
        assert np.array_equal(a.view(np.uint8), b.view(np.uint8)), key


def scan_split(data, threads, guarded=True):
    """The scan of ``data`` on ``threads`` threads (split however small),
    checked against the one-thread scan, also in guarded views; returns the
    one-thread scan and the trace of the last split scan."""
    data = bytes(data)
    one = _scan_ground_truth.scan_ground_truth(np.frombuffer(data, np.uint8)) if data else None
    views = guarded_views(data) if guarded and data else [np.frombuffer(data, np.uint8)]
    trace = []
    for view in views:
        # the chunks' pages moved into the whole columns (even the smallest), or copied
        for move, min_bytes in ((True, 0), (False, 0), (True, 1 << 16)):
            trace = []
            with split_mode(move, min_bytes):
                got = _scan_ground_truth.scan_ground_truth(
                    view.toreadonly() if hasattr(view, "toreadonly") else view, threads,
                    _min_parallel_bytes=0, _trace=trace)
            assert_same_scan(one, got)
    return one, trace


@contextlib.contextmanager
def split_mode(move, min_bytes):
    saved = _scan_ground_truth.MOVE_PAGES, _scan_ground_truth.MOVE_MIN_BYTES
    _scan_ground_truth.MOVE_PAGES, _scan_ground_truth.MOVE_MIN_BYTES = move, min_bytes
    try:
        yield
    finally:
        _scan_ground_truth.MOVE_PAGES, _scan_ground_truth.MOVE_MIN_BYTES = saved


def many_annotations(n, **extra):
    anns = [dict(ANN, id=i + 1, **extra) for i in range(n)]
    return {"images": [IMG], "annotations": anns, "categories": [CAT]}


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(STYLES), st.integers(2, 12))
def test_split_scan_equals_one_thread_on_generated_ground_truths(data, style, threads):
    # polygons, RLEs (escaped strings, uncompressed counts), crowds, unicode and
    # escaped keys, unknown keys holding nested objects and arrays, any key order
    toks = Tokens()
    gt = data.draw(ground_truth(toks, max_annotations=25))
    raw = toks.fill(json.dumps(gt, **style)).encode("utf-8")
    one, trace = scan_split(raw, threads)
    assert one is not None
    assert_columns(one, raw)
    if gt["annotations"]:
        assert trace[-1][0] == "split"
    else:
        assert trace == [("unsplit", 1, -1)]


@settings(max_examples=40, deadline=None)
@given(st.data(), st.integers(2, 9))
def test_split_scan_equals_one_thread_small(data, threads):
    toks = Tokens()
    gt = data.draw(ground_truth(toks, max_annotations=10))
    raw = toks.fill(json.dumps(gt, separators=(",", ":"))).encode("utf-8")
    one, _ = scan_split(raw, threads)
    assert one is not None


@pytest.mark.parametrize("threads", [2, 3, 5, 8, 16, 64])
def test_split_scan_of_real_ground_truths(threads):
    for path in (COCO_GT, LVIS_GT):
        with open(path, "rb") as f:
            data = f.read()
        one, trace = scan_split(data, threads, guarded=False)
        assert one is not None and trace[-1][0] == "split"
        # cut into several chunks, most of them on the chain (a cut among the
        # categories after the annotations is dropped)
        assert trace[-1][1] >= 2 and trace[-1][2] >= 2


@pytest.mark.parametrize("threads", [2, 3, 4, 7, 13])
def test_split_candidates_that_are_no_annotation_starts(threads):
    # '}, {' inside strings, inside nested arrays of objects in annotations, and
    # after the annotations array (categories, an unknown key): cuts there are
    # dropped, and the chain of hand-overs still reads every annotation once
    tricky = many_annotations(6, note='x}, {"id": 1, "image_id": 1}, {y',
                              parts=[{"a": 1}, {"b": [{"c": 2}, {"d": 3}]}])
    tricky["categories"] = [dict(CAT, id=i) for i in range(1, 40)]
    tricky["zzz"] = [{"k": i} for i in range(40)]
    for doc in (tricky, {"zzz": tricky["zzz"], **tricky}):
        one, trace = scan_split(json.dumps(doc).encode(), threads)
        assert one is not None and one["ann_id"].tolist() == list(range(1, 7))
        assert trace[-1][0] == "split"


def test_split_hand_over_and_drop_are_traced():
    # two chunks: the cut lies inside an annotation's string, so chunk 0 passes
    # it, reads the array alone and the second chunk's work is dropped
    doc = many_annotations(2)
    doc["annotations"][1]["note"] = "}," + " " * 4000 + "{"
    data = json.dumps(doc).encode()
    trace = []
    cols = _scan_ground_truth.scan_ground_truth(data, 2, _min_parallel_bytes=0, _trace=trace)
    assert trace == [("split", 2, 1)]
    assert_same_scan(cols, _scan_ground_truth.scan_ground_truth(data))
    # a cut at a true annotation start: handed over
    data = json.dumps(many_annotations(200)).encode()
    trace = []
    _scan_ground_truth.scan_ground_truth(data, 2, _min_parallel_bytes=0, _trace=trace)
    assert trace == [("split", 2, 2)]
    # below the size threshold, or on one thread: one scan
    for threads, kw in ((2, {}), (1, {"_min_parallel_bytes": 0})):
        trace = []
        _scan_ground_truth.scan_ground_truth(data, threads, _trace=trace, **kw)
        assert trace == [("single", 1, -1)]


@pytest.mark.parametrize("name", sorted(REFUSED))
@pytest.mark.parametrize("threads", [2, 3, 6])
def test_split_refuses_what_one_thread_refuses(name, threads):
    # each refused case, also with many annotations before the fault (which then
    # lies in a later chunk; test_split_mutations_* puts faults anywhere)
    data = REFUSED[name].encode("utf-8", "surrogatepass")
    one, _ = scan_split(data, threads)
    assert one is None
    if '"annotations": [' in REFUSED[name]:
        body = json.dumps(ANN)
        padded = REFUSED[name].replace('"annotations": [', '"annotations": [' + (body + ", ") * 30, 1)
        one, _ = scan_split(padded.encode("utf-8", "surrogatepass"), threads)
        assert one is None


BIG = json.dumps(many_annotations(12, extra={"k": [{"a": 1}, {"b": 2}]}), ensure_ascii=False).encode()


@settings(max_examples=300, deadline=None)
@given(st.data(), st.integers(2, 6))
def test_split_mutations_give_the_one_thread_outcome(data, threads):
    # a fault anywhere (before, in or after the annotations array, in any chunk):
    # refused at 1 thread if and only if at several, the same columns otherwise
    scan_split(draw_mutation(data, BIG), threads)


@pytest.mark.slow
def test_split_every_truncation_and_byte_mutation():
    for k in range(len(BIG)):
        one, _ = scan_split(BIG[:k], 3, guarded=False)
        assert one is None
    for i in range(0, len(BIG), 3):
        for b in MUTATION_BYTES:
            scan_split(BIG[:i] + bytes([b]) + BIG[i + 1:], 3, guarded=False)


def test_split_meanwhile_sees_spans_before_the_annotations():
    doc = {"info": {"x": 1}, "images": [IMG, dict(IMG, id=2)], "categories": [CAT],
           "annotations": [dict(ANN, id=i) for i in range(50)], "licenses": []}
    data = json.dumps(doc).encode()
    seen = []
    cols = _scan_ground_truth.scan_ground_truth(data, 2, meanwhile=seen.append, _min_parallel_bytes=0)
    assert len(seen) == 1 and set(seen[0]) == {"images_span", "categories_span"}
    for key, name in (("images_span", "images"), ("categories_span", "categories")):
        s, e = seen[0][key]
        assert (s, e) == tuple(cols[key].tolist()) and json.loads(data[s:e]) == doc[name]
    # categories after the annotations: not yet scanned, not passed
    doc2 = {"images": [IMG], "annotations": doc["annotations"], "categories": [CAT]}
    seen = []
    _scan_ground_truth.scan_ground_truth(json.dumps(doc2).encode(), 2, meanwhile=seen.append,
                                         _min_parallel_bytes=0)
    assert len(seen) == 1 and set(seen[0]) == {"images_span"}
    # one thread, or a file below the threshold: not called
    seen = []
    _scan_ground_truth.scan_ground_truth(data, 1, meanwhile=seen.append, _min_parallel_bytes=0)
    _scan_ground_truth.scan_ground_truth(data, 2, meanwhile=seen.append)
    assert seen == []


def test_split_meanwhile_errors_are_raised_after_the_scan():
    data = json.dumps(many_annotations(300)).encode()

    def fail(spans):
        raise KeyError("meanwhile")

    with pytest.raises(KeyError, match="meanwhile"):
        _scan_ground_truth.scan_ground_truth(data, 3, meanwhile=fail, _min_parallel_bytes=0)
    with pytest.raises(TypeError, match="meanwhile"):
        _scan_ground_truth.scan_ground_truth(data, 2, meanwhile=1)


@pytest.mark.parametrize("bad, exc", [(0, ValueError), (-1, ValueError), (1.0, TypeError),
                                      (True, TypeError), ("2", TypeError), (None, TypeError)])
def test_split_num_threads_checked(bad, exc):
    with pytest.raises(exc, match="num_threads"):
        _scan_ground_truth.scan_ground_truth(b"{}", bad)


@pytest.mark.parametrize("threads", [2, 3])
def test_split_pages_moved_into_large_columns(threads):
    # columns of several pages, chunks ending anywhere within a page: every
    # chunk's pages moved (the default threshold) give the one-thread columns
    anns = []
    for i in range(3000):
        poly = [[float(j % 97) + i / 7 for j in range(2 * (3 + i % 11))]]
        seg = poly if i % 5 else {"size": [3, 4], "counts": [i % 3, 12 - i % 3]}
        anns.append(dict(ANN, id=i, segmentation=seg, iscrowd=int(i % 5 == 0)))
    data = json.dumps({"images": [IMG], "annotations": anns, "categories": [CAT]}).encode()
    assert len(data) > 1 << 20
    one = _scan_ground_truth.scan_ground_truth(data)
    for move in (True, False):
        with split_mode(move, 1 << 16):
            trace = []
            got = _scan_ground_truth.scan_ground_truth(data, threads, _min_parallel_bytes=0, _trace=trace)
        assert trace[-1][0] == "split" and trace[-1][2] == threads
        assert_same_scan(one, got)
        assert got["poly_coords"].nbytes > threads << 16   # each chunk's over MOVE_MIN_BYTES


def test_split_without_threads_scans_the_whole_file(monkeypatch):
    # no thread can be started (a process limit, say): the one-thread scan, same columns
    from concurrent.futures import ThreadPoolExecutor

    def refuse(self, *args, **kwargs):
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(ThreadPoolExecutor, "submit", refuse)
    data = json.dumps(many_annotations(300)).encode()
    trace = []
    got = _scan_ground_truth.scan_ground_truth(data, 2, _min_parallel_bytes=0, _trace=trace)
    assert trace == [("fallback", 2, -1), ("single", 1, -1)]
    assert_same_scan(_scan_ground_truth.scan_ground_truth(data), got)
