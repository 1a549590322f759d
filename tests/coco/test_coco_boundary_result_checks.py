"""Boundary AP checks the results' RLE strings where the IoU step decodes
them (one decode per string): a bad string must still give the error the
separate check gives (same class, same message, naming the first bad
result), whether the IoU step decodes it (its image has a ground truth of
its category) or not, and a good file must evaluate as before."""
import numpy as np
import pytest

from boundary_api import COCO, COCOeval
# the same scene as Mask AP's checks: three images, a crowd, six results
from test_coco_segm_result_checks import _files


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
