"""Boundary AP checks the results' RLE strings where the IoU step decodes
them (one decode per string): a bad string must still give the error the
separate check gives (same class, same message, naming the first bad
result), whether the IoU step decodes it (its image has a ground truth of
its category) or not, and a good file must evaluate as before."""
import json

import numpy as np
import pycocotools.mask as mask_utils
import pytest

from boundary_api import COCO, COCOeval

H, W = 24, 32


def _rle(y0, x0, hh, ww):
    m = np.zeros((H, W), np.uint8, order="F")
    m[y0:y0 + hh, x0:x0 + ww] = 1
    r = mask_utils.encode(m)
    return {"size": [H, W], "counts": r["counts"].decode()}


def _files(tmp_path, bad_at=None, bad_counts=None):
    images = [{"id": i, "height": H, "width": W, "file_name": f"{i}.png"} for i in (1, 2, 3)]
    anns = [
        {"id": 1, "image_id": 1, "category_id": 1, "segmentation": _rle(2, 3, 10, 12), "area": 120.0,
         "bbox": [3, 2, 12, 10], "iscrowd": 0},
        {"id": 2, "image_id": 2, "category_id": 1, "segmentation": _rle(5, 5, 15, 20), "area": 300.0,
         "bbox": [5, 5, 20, 15], "iscrowd": 0},
        {"id": 3, "image_id": 2, "category_id": 2, "segmentation": _rle(0, 0, 6, 6), "area": 36.0,
         "bbox": [0, 0, 6, 6], "iscrowd": 1},
    ]
    gt = {"images": images, "annotations": anns, "categories": [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]}
    dts = []
    for k, (img, cat, box) in enumerate([(1, 1, (3, 4, 9, 12)), (1, 1, (0, 0, 8, 8)), (2, 1, (6, 5, 14, 18)),
                                         (2, 2, (1, 1, 5, 5)), (3, 1, (2, 2, 10, 10)), (2, 1, (4, 4, 12, 22))]):
        seg = _rle(*box)
        if k == bad_at:
            seg = {"size": [H, W], "counts": bad_counts}
        dts.append({"image_id": img, "category_id": cat, "segmentation": seg, "score": 0.9 - 0.1 * k,
                    "bbox": [box[1], box[0], box[3], box[2]]})
    (tmp_path / "gt.json").write_text(json.dumps(gt))
    (tmp_path / "dt.json").write_text(json.dumps(dts))
    return str(tmp_path / "gt.json"), str(tmp_path / "dt.json")


def _load(g, d):
    gt = COCO(g)
    dt = gt.loadRes(d)
    assert dt.__dict__.get("_columns") is not None and not dt._columns.rles_checked
    return gt, dt


# result 0 (image 1) and 5 (image 2) are decoded by the IoU step, result 4
# (image 3, no ground truth) only by the check after it
@pytest.mark.parametrize("bad_at", [0, 4, 5])
@pytest.mark.parametrize("bad_counts", ["0123~", "1", "0" * 3])
def test_bad_strings_raise_the_checks_error(tmp_path, bad_at, bad_counts, capsys):
    g, d = _files(tmp_path, bad_at, bad_counts)
    gt, dt = _load(g, d)
    with pytest.raises(Exception) as direct:
        dt._columns.check_rles()
    gt, dt = _load(g, d)
    ev = COCOeval(gt, dt, iouType="boundary", num_threads=2)
    with pytest.raises(Exception) as fused:
        ev.evaluate()
    assert type(fused.value) is type(direct.value) and isinstance(fused.value, ValueError)
    assert str(fused.value) == str(direct.value)
    assert "result id" in str(fused.value)


def test_good_strings_evaluate_as_when_checked_first(tmp_path, capsys):
    g, d = _files(tmp_path)
    gt, dt = _load(g, d)
    ev = COCOeval(gt, dt, iouType="boundary", num_threads=2)
    ev.evaluate()
    assert dt._columns.rles_checked
    ev.accumulate()
    fused = ev.eval["precision"].copy()
    gt, dt = _load(g, d)
    dt._columns.check_rles()
    ev = COCOeval(gt, dt, iouType="boundary", num_threads=1)
    ev.evaluate()
    ev.accumulate()
    assert np.array_equal(ev.eval["precision"], fused)
    assert all(np.array_equal(np.asarray(a), np.asarray(b)) for a, b in zip(ev.ious.values(), ev.ious.values()))
