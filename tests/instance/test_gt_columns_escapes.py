"""RLE strings with JSON escapes in a ground truth read as columns: unescaped natively
(one copy), to the very strings the JSON decoder gives; an escape the native copy does
not take (``\\u00XX``) and a read-only buffer leave them to the decoder."""
import json

import numpy as np
import pycocotools.mask as mask_utils

from boundary_api.instance._gt_columns import _unescaped, load_ground_truth_columns


def _gt(n=40, seed=0):
    rng = np.random.default_rng(seed)
    anns = []
    for k in range(n):
        m = np.zeros((30, 40), np.uint8)
        y, x = rng.integers(0, 25), rng.integers(0, 35)
        m[y:y + rng.integers(2, 6), x:x + rng.integers(2, 6)] = 1
        counts = mask_utils.encode(np.asfortranarray(m))["counts"].decode()
        anns.append({"id": k + 1, "image_id": 1, "category_id": 1, "iscrowd": 0, "area": float(m.sum()),
                     "bbox": [0, 0, 1, 1], "segmentation": {"size": [30, 40], "counts": counts}})
    return {"images": [{"id": 1, "height": 30, "width": 40}], "categories": [{"id": 1}], "annotations": anns}


def test_escaped_strings_are_the_decoders(tmp_path):
    gt = _gt(200)
    assert any("\\" in a["segmentation"]["counts"] for a in gt["annotations"])
    for escape_slash in (False, True):
        text = json.dumps(gt)
        if escape_slash:  # "\/" is a valid escape too (not in RLEs, but in the schema)
            text = text.replace('"counts": "', '"counts": "\\/')
        p = tmp_path / "gt.json"
        p.write_text(text)
        cols = load_ground_truth_columns(str(p), "gt")
        if escape_slash:
            assert cols is None or not cols.masks_ready()
            continue
        assert cols.masks_ready()
        counts, _, _ = cols.made_masks()
        assert counts == [a["segmentation"]["counts"].encode() for a in gt["annotations"]]


def test_unicode_escapes_and_read_only_buffers_fall_back():
    raw = b'"ab\\\\c" "x\\u0041y"'
    buf = np.frombuffer(bytearray(raw), np.uint8).copy()
    got = _unescaped(buf, np.array([1]), np.array([5]))
    assert bytes(got[0][got[1][0]:got[1][0] + got[2][0]]) == b"ab\\c"
    assert _unescaped(buf, np.array([1, 9]), np.array([5, 8])) is None  # \u0041: the decoder's
    ro = np.frombuffer(raw, np.uint8)
    assert _unescaped(ro, np.array([1]), np.array([5])) is None
