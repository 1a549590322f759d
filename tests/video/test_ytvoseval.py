"""boundary_api.video.YTVOS / YTVOSeval against the official forks' stored runs
(tests/data/video/vis/, made by make_vis_golden.py): youtubevos/cocoapi for 'segm',
SysCV/vmt cocoapi_hq for 'boundary' (and 'segm').  Every run's numbers, IoU
matrices, per-video matches, accumulated arrays, derived fields and printed lines;
the runs where the official code stops, and the suspect inputs, as the drop-in
policy says (warned and evaluated as the original where it evaluates, refused with
``strict=True``)."""
import contextlib
import io
import json
import os
import re
import sys
import warnings

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oracle_vis as ovis  # noqa: E402
import vis_cases as vc  # noqa: E402

from boundary_api.instance._checks import SuspectInputWarning  # noqa: E402
from boundary_api.video import YTVOS, YTVOSeval  # noqa: E402

TOL = 1e-12

#: lines cocoapi_hq prints while it makes every annotation's boundaries on loading;
#: boundary_api makes them during the evaluation and prints nothing then
HQ_LOADING = ("Adding `boundary` to annotation.", "Number of cores:", "`boundary` added!")

#: suspect inputs the originals evaluate: warned about (and refused with strict=True)
WARNED = {"suspect_gt_length_long", "suspect_gt_length_short", "suspect_gt_rle_other_size",
          "suspect_result_length_long", "suspect_result_length_short",
          "suspect_result_rle_other_size", "suspect_unknown_category"}


def _runs():
    out = []
    for case in vc.CASES:
        g = vc.load_golden(case)
        for run in g["runs"]:
            marks = [pytest.mark.slow] if case == "mixed" else []
            out.append(pytest.param(case, run, id=f"{case}-{run}", marks=marks))
    return out


def _lines(text):
    return [re.sub(r"t=\d+\.\d+s", "t=<t>s", line) for line in text.splitlines()]


class _Steps:
    """Run the original's steps on boundary_api, capturing each step's lines."""

    def __init__(self):
        self.stdout = {}

    @contextlib.contextmanager
    def step(self, name):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            yield
        self.stdout[name] = _lines(buf.getvalue())


def _evaluate(case, record, tmp_path, strict=False):
    spec = record["spec"]
    gt_path, res_path = vc.write_inputs(case, tmp_path)
    steps = _Steps()
    ev = None
    with steps.step("YTVOS"):
        gt = YTVOS(gt_path, get_boundary=spec.get("get_boundary", False),
                   dilation_ratio=spec.get("dilation_ratio", 0.02), strict=strict)
    with steps.step("loadRes"):
        res = res_path
        if spec.get("results_as_list"):
            with open(res_path) as f:
                res = json.load(f)
        dt = gt.loadRes(res)
    ev = YTVOSeval(gt, dt, spec["iouType"])
    for k, v in spec.get("params", {}).items():
        setattr(ev.params, k, v)
    with steps.step("evaluate"):
        ev.evaluate()
    with steps.step("accumulate"):
        ev.accumulate()
    with steps.step("summarize"):
        ev.summarize()
    return gt, dt, ev, steps


def _close(a, b):
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.all((a == b) | (np.abs(a - b) <= TOL) | (np.isnan(a) & np.isnan(b))))


def _check_same(case, run, record, gt, dt, ev, steps):
    # the numbers
    assert _close(ev.stats, record["stats"])
    assert type(ev.stats).__name__ == "ndarray"
    arrays = vc.load_arrays(case)
    for name in ("precision", "recall", "scores"):
        key = f"{run}/{name}" if f"{run}/{name}" in arrays else f"{record.get('same_as', run)}/{name}"
        assert _close(ev.eval[name], arrays[key]), name
    # every IoU matrix, in the original's order and form
    want = vc.stored_ious(record)
    assert list(ev.ious) == list(want)
    for key, value in want.items():
        got = ev.ious[key]
        if isinstance(value, list):
            assert isinstance(got, list) and got == []
        else:
            assert isinstance(got, np.ndarray) and _close(got, value), key
    # every per-video entry
    assert len(ev.evalImgs) == len(record["evalImgs"])
    for mine, gold in zip(ev.evalImgs, record["evalImgs"]):
        if gold is None:
            assert mine is None
            continue
        assert list(mine) == list(gold)
        for k in gold:
            if k in ("dtMatches", "gtMatches", "gtIgnore", "dtIgnore", "dtScores", "aRng"):
                assert _close(np.asarray(mine[k], float), np.asarray(gold[k], float)), k
            else:
                assert mine[k] == gold[k], k
    # what loadRes and _prepare add to the annotations
    for d in record["results_derived"]:
        ann = dt.anns[d["id"]]
        assert ann["iscrowd"] == d["iscrowd"]
        assert [None if a is None else float(a) for a in ann["areas"]] == d["areas"]
        assert _close(ann["avg_area"], d["avg_area"])
        assert [None if b is None else [float(x) for x in b] for b in ann["bboxes"]] == d["bboxes"]
    for ann_id, area in record["gt_avg_area"].items():
        assert _close(gt.anns[int(ann_id)]["avg_area"], area), ann_id
    # the printed lines (cocoapi_hq's boundary-making lines are not printed here)
    for name, lines in record["stdout"].items():
        gold_lines = [line for line in lines if not line.startswith(HQ_LOADING)]
        assert steps.stdout[name] == gold_lines, name


@pytest.mark.parametrize("case,run", _runs())
def test_run_equals_the_official_fork(case, run, tmp_path):
    golden = vc.load_golden(case)
    record = vc.run_record(golden, run)
    error = record.get("error")
    if error and error["class"] == "NameError":
        # the original's loadRes of a list: a NameError (Python 2's `unicode`); here the
        # list is read as the file is, to the file's numbers
        base = vc.run_record(golden, "ytvos_segm" if record["spec"]["iouType"] == "segm" else "hq_boundary_0.02")
        gt, dt, ev, steps = _evaluate(case, record, tmp_path)
        assert _close(ev.stats, base["stats"])
        return
    if error and error["stage"] in ("YTVOS", "loadRes") and error["class"] in ("KeyError", "IndexError") \
            and "pool.py" in error.get("where", ""):
        # cocoapi_hq fails making a boundary of a frame it cannot size (an absent frame
        # without the annotation's height/width, an empty segmentation list); here such a
        # frame has an empty band: the IoUs are the oracle's with empty bands (and input
        # the original would refuse later anyway gives that refusal's class)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SuspectInputWarning)
            try:
                gt, dt, ev, steps = _evaluate(case, record, tmp_path)
            except ValueError as exc:
                assert error["class"] in [k.__name__ for k in type(exc).__mro__], (type(exc), error)
                return
        _check_against_oracle(gt, dt, ev, record["spec"].get("dilation_ratio", 0.02))
        return
    if error:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SuspectInputWarning)
            with pytest.raises(Exception) as exc_info:
                _evaluate(case, record, tmp_path)
        exc = exc_info.value
        if error["class"] == "JSONDecodeError":
            assert isinstance(exc, json.JSONDecodeError)
        else:
            assert error["class"] in [k.__name__ for k in type(exc).__mro__], (type(exc), error)
        assert isinstance(exc, ValueError) or error["class"] == "ValueError"
        assert "\n" not in str(exc)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gt, dt, ev, steps = _evaluate(case, record, tmp_path)
    suspect = [w for w in caught if issubclass(w.category, SuspectInputWarning)]
    if case in WARNED:
        assert suspect, "suspect input must be warned about"
    else:
        assert not suspect, [str(w.message) for w in suspect]
    _check_same(case, run, record, gt, dt, ev, steps)


@pytest.mark.parametrize("case", sorted(WARNED))
def test_suspect_input_refused_with_strict(case, tmp_path):
    record = vc.run_record(vc.load_golden(case), "ytvos_segm")
    with pytest.raises(ValueError) as exc_info:
        _evaluate(case, record, tmp_path, strict=True)
    assert "strict" in str(exc_info.value)


def _check_against_oracle(gt, dt, ev, ratio):
    """Every IoU matrix against the oracle (absent frames: empty bands)."""
    p = ev.params
    for (vid, cat), got in ev.ious.items():
        g = ev._gts[vid, cat]
        d = sorted(ev._dts[vid, cat], key=lambda a: -a["score"])[:p.maxDets[-1]]
        if not g and not d:
            assert got == []
            continue
        video = gt.vids[vid]
        h, w = video["height"], video["width"]
        gtr = [ovis.track_frames(a["segmentations"], h, w) for a in g]
        dtr = [ovis.track_frames(a["segmentations"], h, w) for a in d]
        want = ovis.tube_iou_matrix(dtr, gtr, gt_iscrowd=[a["iscrowd"] for a in g], iou_type=p.iouType,
                                    gt_ratio=ratio, dt_ratio=0.02,
                                    dt_absent_shapes=[(h, w)] * len(d), gt_absent_shapes=[(h, w)] * len(g))
        assert _close(got, want), (vid, cat)


def test_native_and_reference_loops_agree(tmp_path):
    """use_fast_impl=False (the original's loops on the engine's matching of each pair)
    gives the native path's arrays."""
    record = vc.run_record(vc.load_golden("crowds"), "hq_boundary_0.02")
    _, _, fast, _ = _evaluate("crowds", record, tmp_path)
    gt_path, res_path = vc.write_inputs("crowds", tmp_path)
    with contextlib.redirect_stdout(io.StringIO()):
        gt = YTVOS(gt_path)
        slow = YTVOSeval(gt, gt.loadRes(res_path), "boundary", use_fast_impl=False)
        slow.evaluate()
        slow.accumulate()
        slow.summarize()
    assert np.array_equal(fast.stats, slow.stats)
    assert np.array_equal(fast.eval["precision"], slow.eval["precision"])


def test_overridden_compute_iou_is_used(tmp_path):
    """A subclass's computeIoU decides the matching, as in the original."""
    gt_path, res_path = vc.write_inputs("crowds", tmp_path)

    class Perfect(YTVOSeval):
        def computeIoU(self, vidId, catId):
            ious = super().computeIoU(vidId, catId)
            return np.ones_like(ious) if len(ious) else ious

    with contextlib.redirect_stdout(io.StringIO()):
        gt = YTVOS(gt_path)
        ev = Perfect(gt, gt.loadRes(res_path), "segm")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
        plain = YTVOSeval(gt, gt.loadRes(res_path), "segm")
        plain.evaluate()
        plain.accumulate()
        plain.summarize()
    assert ev.stats[1] >= plain.stats[1] and not np.array_equal(ev.stats, plain.stats)
    assert all(np.all(np.asarray(v) == 1) for v in ev.ious.values() if len(v))
