"""Inputs boundary_api reads where pycocotools and lvis refuse them, or reads to
other values, each run through both (docs/known_differences.md; issue 40,
item 5; the differential fuzz suite, tests/fuzz, runs thousands more):

- text encodings pycocotools and lvis cannot read (they read the file as UTF-8
  text): a UTF-8 byte-order mark, UTF-16 and UTF-32 (with or without a BOM,
  either byte order), and lone surrogates written raw (WTF-8 / CESU-8 bytes):
  read as ``json.loads`` reads bytes, to the values the originals read from the
  same document in plain UTF-8 (escaped lone surrogates: both read them, alike);
- JSON nested within a few levels of Python's recursion limit (about 985):
  refused by both from one depth on, that depth differing by a few levels;
- RLE strings with empty runs after the first (pycocotools never writes them):
  pycocotools' ``toBbox`` of an empty mask so written wraps around, and its
  ``iou`` of two masks with empty runs at the same place stops there;
  boundary_api gives the masks' values.
"""
import contextlib
import io
import json
import warnings

import lvis
import numpy as np
import pycocotools.coco
import pycocotools.cocoeval
import pycocotools.mask
import pytest

import boundary_api

GT = {"images": [{"id": 1, "height": 10, "width": 12, "file_name": "a\u00e9.jpg", "neg_category_ids": [],
                  "not_exhaustive_category_ids": []}],
      "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 3, 3], "area": 9, "iscrowd": 0,
                       "segmentation": [[1, 1, 4, 1, 4, 4, 1, 4]]}],
      "categories": [{"id": 1, "name": "x\U0001F600", "frequency": "f"}]}
RESULTS = [{"image_id": 1, "category_id": 1, "bbox": [1, 1, 3, 3], "score": 0.5, "note": "\u00e9"}]

ENCODINGS = {
    "utf-8 bom": lambda t: b"\xef\xbb\xbf" + t.encode(),
    "utf-16": lambda t: t.encode("utf-16"), "utf-16-le": lambda t: t.encode("utf-16-le"),
    "utf-16-be": lambda t: t.encode("utf-16-be"), "utf-32": lambda t: t.encode("utf-32"),
    "utf-32-le": lambda t: t.encode("utf-32-le"), "utf-32-be": lambda t: t.encode("utf-32-be"),
}


def _load(fn):
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        return fn()


def _views(tmp_path, gt_bytes, res_bytes=None):
    """(boundary_api's, pycocotools'/lvis' or the exception) of loading the files."""
    gp, rp, plain = tmp_path / "gt.json", tmp_path / "res.json", tmp_path / "plain_gt.json"
    gp.write_bytes(gt_bytes)
    plain.write_text(json.dumps(GT))
    out = {}
    if res_bytes is None:
        calls = {"coco": (lambda: boundary_api.COCO(str(gp)), lambda: pycocotools.coco.COCO(str(gp))),
                 "lvis": (lambda: boundary_api.LVIS(str(gp)), lambda: lvis.LVIS(str(gp)))}
    else:
        rp.write_bytes(res_bytes)
        calls = {"coco": (lambda: boundary_api.COCO(str(plain)).loadRes(str(rp)),
                          lambda: pycocotools.coco.COCO(str(plain)).loadRes(str(rp))),
                 "lvis": (lambda: boundary_api.LVISResults(boundary_api.LVIS(str(plain)), str(rp)),
                          lambda: lvis.LVISResults(lvis.LVIS(str(plain)), str(rp)))}
    for name, (ours, theirs) in calls.items():
        got = []
        for fn in (ours, theirs):
            try:
                got.append(_load(fn).dataset)
            except Exception as exc:  # noqa: BLE001 (the original's, whatever it is)
                got.append(exc)
        out[name] = got
    return out


@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
@pytest.mark.parametrize("what", ["ground truth", "results"])
def test_text_encodings_the_originals_cannot_read(tmp_path, encoding, what):
    doc = GT if what == "ground truth" else RESULTS
    text = json.dumps(doc, ensure_ascii=False)
    data = ENCODINGS[encoding](text)
    got = _views(tmp_path, data) if what == "ground truth" else _views(tmp_path, json.dumps(GT).encode(), data)
    want = _views(tmp_path, text.encode()) if what == "ground truth" else \
        _views(tmp_path, json.dumps(GT).encode(), text.encode())
    for name in ("coco", "lvis"):
        ours, theirs = got[name]
        assert isinstance(theirs, (UnicodeDecodeError, json.JSONDecodeError)), (name, theirs)
        assert ours == want[name][1] == want[name][0]


@pytest.mark.parametrize("what", ["ground truth", "results"])
def test_lone_surrogates(tmp_path, what):
    """Raw (WTF-8 bytes): read by boundary_api, refused by the originals;
    escaped (\\ud800): read by both, the same string."""
    if what == "ground truth":
        doc = dict(GT, images=[dict(GT["images"][0], file_name="a\ud800b")])
    else:
        doc = [dict(RESULTS[0], note="\udfff")]
    raw = json.dumps(doc, ensure_ascii=False).encode("utf-8", "surrogatepass")
    escaped = json.dumps(doc).encode()
    if what == "ground truth":
        got, want = _views(tmp_path, raw), _views(tmp_path, escaped)
    else:
        got, want = _views(tmp_path, json.dumps(GT).encode(), raw), _views(tmp_path, json.dumps(GT).encode(), escaped)
    for name in ("coco", "lvis"):
        assert isinstance(got[name][1], UnicodeDecodeError)
        assert got[name][0] == want[name][0] == want[name][1]


def test_nesting_near_the_recursion_limit(tmp_path):
    """Both refuse deep nesting (RecursionError in json; a ValueError naming the
    file here) from a depth that depends on the Python (json's decoder: about 990
    levels up to 3.11, 1,500 on 3.12, 10,000 on 3.13) and varies by a few levels
    with the call stack; far from it they agree."""
    def ok(depth, ours):
        doc = json.dumps(GT)[:-1] + ', "deep": ' + "[" * depth + "]" * depth + "}"
        path = tmp_path / "deep.json"
        path.write_text(doc)
        try:
            _load(lambda: (boundary_api.COCO if ours else pycocotools.coco.COCO)(str(path)))
            return True
        except (RecursionError, ValueError):
            return False

    for depth in (100, 900):
        assert ok(depth, True) and ok(depth, False)
    for depth in (1100, 5000):  # refused up to 3.11 (and 5000 on 3.12), read on 3.13
        assert ok(depth, True) == ok(depth, False)
    assert not ok(50000, True) and not ok(50000, False)


def _rle_string(counts) -> str:
    out = []
    for i, c in enumerate(counts):
        x = c - (counts[i - 2] if i > 2 else 0)
        while True:
            ch, x = x & 0x1F, x >> 5
            more = not ((ch & 0x10) == 0 and x == 0 or (ch & 0x10) != 0 and x == -1)
            out.append(chr((ch | 0x20 if more else ch) + 48))
            if not more:
                break
    return "".join(out)


def test_rle_strings_with_empty_runs(tmp_path):
    """Run lengths 2, 0, 2, 12 (pixels 4..15 of a 4 x 4 image; pycocotools
    writes 4, 12): pycocotools scores the mask against itself 0, boundary_api
    1; an empty mask written 8, 0, 8: pycocotools' box [4, 4, 2**32 - 3,
    2**32 - 3], boundary_api's [0, 0, 0, 0] (pycocotools' for 16)."""
    full, empty = _rle_string([2, 0, 2, 12]), _rle_string([8, 0, 8])
    gt = {"images": [{"id": 1, "height": 4, "width": 4}], "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": 12, "bbox": [1, 0, 3, 4],
                           "segmentation": {"size": [4, 4], "counts": full}}]}
    dt = [{"image_id": 1, "category_id": 1, "score": 0.9, "segmentation": {"size": [4, 4], "counts": full}},
          {"image_id": 1, "category_id": 1, "score": 0.8, "segmentation": {"size": [4, 4], "counts": empty}}]
    (tmp_path / "g.json").write_text(json.dumps(gt))
    (tmp_path / "d.json").write_text(json.dumps(dt))
    got = {}
    for name, (C, E) in {"ours": (boundary_api.COCO, boundary_api.COCOeval),
                         "theirs": (pycocotools.coco.COCO, pycocotools.cocoeval.COCOeval)}.items():
        def run():
            g = C(str(tmp_path / "g.json"))
            d = g.loadRes(str(tmp_path / "d.json"))
            e = E(g, d, "segm")
            e.evaluate()
            return [d.anns[2]["bbox"].tolist(), e.ious[(1, 1)].tolist()]
        got[name] = _load(run)
    assert got["theirs"] == [[4.0, 4.0, 2.0 ** 32 - 3, 2.0 ** 32 - 3], [[0.0], [0.0]]]
    assert got["ours"] == [[0.0, 0.0, 0.0, 0.0], [[1.0], [0.0]]]
    np.testing.assert_array_equal(pycocotools.mask.toBbox({"size": [4, 4], "counts": b"`0"}), [0, 0, 0, 0])
