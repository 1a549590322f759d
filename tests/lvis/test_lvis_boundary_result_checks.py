"""LVIS Boundary AP checks the results' RLE strings where the IoU step
decodes them (ground truth read as columns); a bad string must lead to
exactly what the check before the IoU step led to (the general path, with
its error or its numbers), and good strings to the same numbers."""
import json

import numpy as np
import pytest

from boundary_api import LVIS, LVISEval, LVISResults
from boundary_api.instance import _columns
from conftest import LVIS_DT, LVIS_GT


def _results(tmp_path, bad_at=None, bad_counts=None):
    dts = json.load(open(LVIS_DT))
    for d in dts:
        x0, y0 = 0, 0
        d["bbox"] = [x0, y0, 1, 1]  # (a box makes the results load without decoding their masks)
    if bad_at is not None:
        dts[bad_at]["segmentation"] = {"size": dts[bad_at]["segmentation"]["size"], "counts": bad_counts}
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(dts))
    return str(path)


def _outcome(dt_path, fused, monkeypatch):
    with monkeypatch.context() as m:
        if not fused:  # the strings checked before the IoU step, as before
            m.setattr(_columns.ResultColumns, "sizes_ok", lambda self: False)
        gt = LVIS(LVIS_GT)
        dt = LVISResults(gt, dt_path)
        ev = LVISEval(gt, dt, iou_type="boundary", num_threads=2)
        try:
            ev.evaluate()
            ev.accumulate()
        except Exception as exc:  # noqa: BLE001 - compared below
            return type(exc), str(exc), None, dt
        return None, None, ev.eval["precision"].copy(), dt


def _first_with_ground_truth():
    gt = json.load(open(LVIS_GT))
    pairs = {(a["image_id"], a["category_id"]) for a in gt["annotations"]}
    dts = json.load(open(LVIS_DT))
    with_gt = next(i for i, d in enumerate(dts) if (d["image_id"], d["category_id"]) in pairs)
    without = next(i for i, d in enumerate(dts) if (d["image_id"], d["category_id"]) not in pairs)
    return with_gt, without


@pytest.mark.parametrize("which", [0, 1])
@pytest.mark.parametrize("bad_counts", ["0123~", "1"])
def test_a_bad_string_leads_where_the_check_first_led(tmp_path, which, bad_counts, monkeypatch, capsys):
    bad_at = _first_with_ground_truth()[which]
    path = _results(tmp_path, bad_at, bad_counts)
    got = _outcome(path, True, monkeypatch)
    want = _outcome(path, False, monkeypatch)
    assert got[:2] == want[:2]
    assert (got[2] is None) == (want[2] is None)
    if got[2] is not None:
        assert np.array_equal(got[2], want[2])
    # nothing logged twice by the fused attempt
    assert len(got[3]._looked_up) == len(want[3]._looked_up) if hasattr(got[3], "_looked_up") else True


def test_good_strings_give_the_same_numbers(tmp_path, monkeypatch, capsys):
    path = _results(tmp_path)
    got = _outcome(path, True, monkeypatch)
    want = _outcome(path, False, monkeypatch)
    assert got[0] is None and want[0] is None
    assert np.array_equal(got[2], want[2])
    assert got[3]._columns.rles_checked


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_summarize_on_the_active_categories_equals_lvis(iou_type, capsys):
    """summarize() selects from the categories with some value > -1 only (the
    LVIS-like precision array has 1,203 categories, most of them -1): every
    number equals lvis' own _summarize on the whole array, to the bit."""
    import lvis

    gt = LVIS(LVIS_GT)
    ev = LVISEval(gt, LVISResults(gt, LVIS_DT), iou_type=iou_type)
    ev.evaluate()
    ev.accumulate()
    ev.eval["precision"][0, :, 3, 0] = np.nan  # a NaN is not > -1 either
    ev.summarize()
    calls = {"AP": ("ap",), "AP50": ("ap", 0.5), "AP75": ("ap", 0.75), "APs": ("ap", None, "small"),
             "APm": ("ap", None, "medium"), "APl": ("ap", None, "large"), "APr": ("ap", None, "all", 0),
             "APc": ("ap", None, "all", 1), "APf": ("ap", None, "all", 2), "AR@300": ("ar",),
             "ARs@300": ("ar", None, "small"), "ARm@300": ("ar", None, "medium"), "ARl@300": ("ar", None, "large")}
    for key, args in calls.items():
        want = lvis.LVISEval._summarize(ev, *args)
        got = ev.results[key]
        assert (got == want) or (got != got and want != want), key
        assert type(got) is type(want)
