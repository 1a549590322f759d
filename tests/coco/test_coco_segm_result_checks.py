"""Mask AP checks the results' RLE strings where the IoU step decodes them
(one decode per string) instead of in a separate pass before it.  A bad
string must still lead where the separate check led: the same warning, then
pycocotools' own evaluate (its numbers, or its failure with the same class
and message), or, for a string pycocotools' mask IoU may never end on, the
same refusal, whether the IoU step decodes the string (its pair has a
ground truth), or not (no ground truth of its pair, past maxDets); good
strings give the same numbers and printed lines.  (Which strings pycocotools
never ends on is decided as its C code would run (issue 45): here only the
string of another width, whose box meets the ground truth's; the others are
pycocotools' numbers.)"""
import json
import warnings

import numpy as np
import pycocotools.coco
import pycocotools.cocoeval
import pycocotools.mask as mask_utils
import pytest

from boundary_api import COCO, COCOeval
from boundary_api.instance._checks import UnsafeRLEError
from boundary_api.instance import _columns

H, W = 24, 32


def _rle(y0, x0, hh, ww, width=W):
    m = np.zeros((H, width), np.uint8, order="F")
    m[y0:y0 + hh, x0:x0 + ww] = 1
    r = mask_utils.encode(m)
    return {"size": [H, W], "counts": r["counts"].decode()}


#: a string that decodes, but to 24 x 30 pixels, not its image's 24 x 32
WRONG_SIZE = _rle(1, 1, 5, 5, width=30)["counts"]


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


def _run(mod_coco, mod_eval, g, d, max_dets, capsys, **kw):
    """(exception class, message, precision, warnings, printed lines) of one evaluation."""
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gt = mod_coco.COCO(g)
        dt = gt.loadRes(d)
        if kw:
            assert dt.__dict__.get("_columns") is not None and not dt._columns.rles_checked
        ev = mod_eval.COCOeval(gt, dt, iouType="segm", **kw)
        if max_dets is not None:
            ev.params.maxDets = max_dets
        try:
            ev.evaluate()
            ev.accumulate()
            out = (None, None, ev.eval["precision"].copy())
        except Exception as exc:  # noqa: BLE001 - compared by the tests
            out = (type(exc), str(exc), None)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if not ln.lower().startswith("done")]
    return out + ([str(w.message) for w in caught], lines, dt)


class _Boundary:
    COCO, COCOeval = COCO, COCOeval


class _Pycocotools:
    COCO, COCOeval = pycocotools.coco.COCO, pycocotools.cocoeval.COCOeval


def _ours(g, d, fused, monkeypatch, capsys, max_dets=None):
    with monkeypatch.context() as m:
        if not fused:  # the strings checked before the evaluation, as before
            m.setattr(_columns.ResultColumns, "sizes_ok", lambda self: False)
        return _run(_Boundary, _Boundary, g, d, max_dets, capsys, num_threads=2)


# result 0 (image 1) and 5 (image 2) are decoded by the IoU step; result 4
# (image 3, no ground truth) only by the check after it; result 1 (second
# of its pair) is past maxDets [1]
@pytest.mark.parametrize("bad_at,max_dets", [(0, None), (5, None), (4, None), (1, [1])])
@pytest.mark.parametrize("bad_counts", ["0123~", "1", WRONG_SIZE])
def test_bad_strings_lead_where_the_check_first_led(tmp_path, bad_at, max_dets, bad_counts, monkeypatch,
                                                    capsys):
    g, d = _files(tmp_path, bad_at, bad_counts)
    got = _ours(g, d, True, monkeypatch, capsys, max_dets)
    want = _ours(g, d, False, monkeypatch, capsys, max_dets)
    assert got[:2] == want[:2]
    if bad_counts == WRONG_SIZE and bad_at in (0, 5):
        # counts that do not cover the image, whose box meets a ground truth's
        # of that size: pycocotools' mask IoU of the two never ends: refused,
        # not handed to pycocotools; past maxDets (result 1) or alone on its
        # image (result 4) it is evaluated
        assert got[0] is UnsafeRLEError and got[1].startswith(f"result id {bad_at + 1} (image ")
        assert got[1].endswith("pycocotools' mask IoU of two such masks never ends")
        return
    assert (got[2] is None) == (want[2] is None)
    if got[2] is not None:
        assert np.array_equal(got[2], want[2])
    assert got[3] == want[3] and any("evaluated as pycocotools evaluates it" in w for w in got[3])
    assert got[4] == want[4]  # (nothing printed twice by the attempt)
    start = got[4].index("Running per image evaluation...")
    assert got[4][start:start + 2] == ["Running per image evaluation...", "Evaluate annotation type *segm*"]
    assert got[4].count("Running per image evaluation...") == 1
    gtc = got[5].__dict__.get("_gt_columns")
    assert gtc is None or not gtc.log
    # and pycocotools itself: it fails where we fail (our class a subclass of its)
    ref = _run(_Pycocotools, _Pycocotools, g, d, max_dets, capsys)
    assert (ref[0] is None) == (got[0] is None)
    if ref[0] is not None:
        assert issubclass(got[0], ref[0])
    else:
        assert np.array_equal(ref[2], got[2])


def test_good_strings_evaluate_as_when_checked_first(tmp_path, monkeypatch, capsys):
    g, d = _files(tmp_path)
    got = _ours(g, d, True, monkeypatch, capsys)
    want = _ours(g, d, False, monkeypatch, capsys)
    assert got[0] is None and want[0] is None
    assert np.array_equal(got[2], want[2])
    assert got[3] == want[3] == []
    assert got[4] == want[4] and got[4][-3:-1] == ["Running per image evaluation...", "Evaluate annotation type *segm*"]
    assert got[5]._columns.rles_checked
    ref = _run(_Pycocotools, _Pycocotools, g, d, None, capsys)
    assert np.array_equal(ref[2], got[2])


def test_lines_are_printed_before_the_iou_step(tmp_path, monkeypatch, capsys):
    """pycocotools prints its first two lines when evaluate() starts; so does
    the evaluation that checks the strings in its IoU step."""
    from boundary_api.instance._engine import Evaluation

    g, d = _files(tmp_path)
    seen = []
    original = Evaluation.compute_ious

    def compute_ious(self, *args, **kwargs):
        seen.append(capsys.readouterr().out)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Evaluation, "compute_ious", compute_ious)
    gt = COCO(g)
    dt = gt.loadRes(d)
    assert not dt._columns.rles_checked
    COCOeval(gt, dt, iouType="segm").evaluate()
    assert seen and seen[0].splitlines()[-2:] == ["Running per image evaluation...",
                                                  "Evaluate annotation type *segm*"]
