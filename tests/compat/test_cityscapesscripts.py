"""The same user code against cityscapesScripts' instance evaluation
(``evaluateImgLists``) and boundary_api's (``evaluate_img_lists``), issue 24:
the result dictionary key for key and type for type, what is accepted (with a
warning here; ``strict=True`` refuses) and the exception classes."""
import math
import os
import shutil
import warnings

import numpy as np
import pytest

from boundary_api.cityscapes import evaluation as cs
from conftest import DATA

VISIBLE = os.path.join(DATA, "cityscapes", "visible")


@pytest.fixture
def data(tmp_path):
    """A writable copy of the synthetic Cityscapes set: (gt files, prediction files, results folder)."""
    root = tmp_path / "cs"
    shutil.copytree(VISIBLE, root)
    gts = cs.find_ground_truth(str(root / "gtFine" / "val"))
    preds = cs.find_predictions(gts, str(root / "results"))
    return gts, preds, str(root / "results")


@pytest.fixture
def original(monkeypatch, tmp_path):
    """cityscapesScripts' ``evaluateImgLists(predictionList, groundTruthList, args)``,
    unmodified but for shims that touch no computation: numpy >= 2.4 has no
    ``np.in1d`` (patched only while the original runs), and its side files
    (gtInstances.json cache, matches.json, the results JSON) are not written."""
    import cityscapesscripts.evaluation.evalInstanceLevelSemanticLabeling as ev

    def run(pred_files, gt_files, result_dir):
        with monkeypatch.context() as m:
            if not hasattr(np, "in1d"):
                m.setattr(np, "in1d", lambda a, b: np.isin(a, b).ravel(), raising=False)
            m.setattr(ev, "writeDict2JSON", lambda *a, **k: None)
            m.chdir(tmp_path)
            args = ev.args
            m.setattr(args, "predictionPath", os.path.abspath(result_dir))
            m.setattr(args, "predictionWalk", None)
            m.setattr(args, "gtInstancesFile", str(tmp_path / "no-such-cache.json"))
            m.setattr(args, "JSONOutput", False)
            m.setattr(args, "quiet", True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)   # its nanmean of empty slices
                return ev.evaluateImgLists(pred_files, gt_files, args)

    return run


def ours(pred_files, gt_files, **kw):
    return cs.evaluate_img_lists(pred_files, gt_files, iou_type="segm", num_threads=1, **kw)


def assert_same_value(a, b, where="result"):
    """Equal values of identical types, recursively (NaN equals NaN)."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(b, dict):
        assert list(a) == list(b), where
        for k in b:
            assert_same_value(a[k], b[k], f"{where}[{k!r}]")
    elif isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            assert_same_value(x, y, f"{where}[{i}]")
    elif isinstance(b, float):
        assert (math.isnan(a) and math.isnan(b)) or a == b, (where, a, b)
    else:
        assert a == b, (where, a, b)


def assert_same_result(mine, theirs):
    """cityscapesScripts' keys first, in its order, each value of its type;
    this package's summary keys after them."""
    assert list(mine)[:len(theirs)] == list(theirs)
    for key in theirs:
        assert_same_value(mine[key], theirs[key], key)
    assert set(mine) - set(theirs) == {"AP", "AP50", "per_class", "thresholds", "iou_type", "dilation_ratio",
                                       "n_images"}


# ---------------------------------------------------------------------------
# the result dictionary
# ---------------------------------------------------------------------------

def test_result_dict_key_for_key_type_for_type(data, original):
    gts, preds, res_dir = data
    theirs = original(preds, gts, res_dir)
    mine = ours(preds, gts)
    assert_same_result(mine, theirs)
    assert mine["minRegionSizes"] == [100, 1000, 1000]
    assert mine["distanceThresholds"] == [math.inf, 100.0, 50.0]
    assert mine["minStereoDensities"] == [-math.inf, 0.5, 0.5]
    assert type(mine["averages"]["allAp"]) is np.float64 and type(mine["AP"]) is float
    assert np.asarray(mine["resultApMatrix"]).shape == (1, len(cs.CLASSES), 10)


def test_class_without_ground_truth_is_nan_of_the_same_type(data, original):
    gts, preds, res_dir = data
    theirs = original(preds[:1], gts[:1], res_dir)
    mine = ours(preds[:1], gts[:1])
    assert_same_result(mine, theirs)
    assert any(math.isnan(c["ap"]) for c in mine["averages"]["classes"].values())


# ---------------------------------------------------------------------------
# accepted with a warning (refused with strict=True)
# ---------------------------------------------------------------------------

def _shorter_predictions(gts, preds):
    return preds[:-2], gts


def _shorter_ground_truth(gts, preds):
    return preds, gts[:-3]


def _empty(gts, preds):
    return [], []


def _repeated_ground_truth(gts, preds):
    # the second pairing of gts[0], with half of its predictions, counts
    other = preds[0][:-len(".txt")] + "_half.txt"
    lines = _lines(preds[0])
    _write(other, lines[:len(lines) // 2])
    return preds + [other], gts + [gts[0]]


def _mask_listed_twice(gts, preds):
    # the same mask again with another label and score: its last line counts
    lines = _lines(preds[0])
    rel = lines[0].split()[0]
    _write(preds[0], lines + [f"{rel} 26 0.123"])
    return preds, gts


ACCEPTED = [(_mask_listed_twice, "is listed more than once"), (_shorter_predictions, "prediction files for"), (_shorter_ground_truth, "prediction files for"),
            (_empty, "no ground truth files"), (_repeated_ground_truth, "listed more than once")]


@pytest.mark.parametrize("change,warning", ACCEPTED, ids=[c[0].__name__[1:] for c in ACCEPTED])
def test_accepted_with_a_warning(data, original, change, warning):
    gts, preds, res_dir = data
    pred_files, gt_files = change(gts, preds)
    theirs = original(list(pred_files), list(gt_files), res_dir)
    with pytest.warns(UserWarning, match=warning) as caught:
        mine = ours(pred_files, gt_files)
    assert len([w for w in caught if issubclass(w.category, UserWarning)]) == 1
    assert_same_result(mine, theirs)
    with pytest.raises(ValueError, match=warning):
        ours(pred_files, gt_files, strict=True)


# ---------------------------------------------------------------------------
# refused: the original's exception class (and ValueError)
# ---------------------------------------------------------------------------

def _lines(path):
    with open(path) as f:
        return f.read().splitlines()


def _write(path, lines):
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def _evaluated_line(preds):
    """(prediction file, index) of a line whose label is an evaluated class."""
    for p in preds:
        for i, line in enumerate(_lines(p)):
            if line.split() and int(line.split()[1]) in (24, 25, 26, 27, 28, 31, 32, 33):
                return p, i
    raise AssertionError("no evaluated prediction")


def _missing_mask(gts, preds, tmp):
    p, i = _evaluated_line(preds)
    os.remove(os.path.join(os.path.dirname(p), _lines(p)[i].split()[0]))


def _missing_ground_truth(gts, preds, tmp):
    os.remove(gts[0])


def _unknown_label(gts, preds, tmp):
    p, i = _evaluated_line(preds)
    lines = _lines(p)
    rel, _, conf = lines[i].split()
    lines[i] = f"{rel} 99 {conf}"
    _write(p, lines)


def _two_fields(gts, preds, tmp):
    p, i = _evaluated_line(preds)
    lines = _lines(p)
    lines[i] = " ".join(lines[i].split()[:2])
    _write(p, lines)


def _absolute_path(gts, preds, tmp):
    p, i = _evaluated_line(preds)
    lines = _lines(p)
    rel, lab, conf = lines[i].split()
    lines[i] = f"{os.path.join(os.path.dirname(p), rel)} {lab} {conf}"
    _write(p, lines)


def _missing_prediction_file(gts, preds, tmp):
    os.remove(preds[0])


REFUSED = [
    (_missing_mask, FileNotFoundError, cs.CityscapesFileNotFoundError),
    (_missing_ground_truth, FileNotFoundError, cs.CityscapesFileNotFoundError),
    (_unknown_label, KeyError, cs.CityscapesKeyError),
    (_two_fields, SystemExit, cs.CityscapesInputError),
    (_absolute_path, SystemExit, cs.CityscapesInputError),
    (_missing_prediction_file, SystemExit, cs.CityscapesInputError),
]


@pytest.mark.parametrize("change,error,mine_class", REFUSED, ids=[c[0].__name__[1:] for c in REFUSED])
def test_refused_with_the_original_exception_class(data, original, tmp_path, capsys, change, error, mine_class):
    gts, preds, res_dir = data
    change(gts, preds, tmp_path)
    with pytest.raises(BaseException) as theirs:
        original(preds, gts, res_dir)
    assert type(theirs.value) is error or (error is FileNotFoundError and isinstance(theirs.value, error)), \
        theirs.value
    with pytest.raises(error) as mine:
        ours(preds, gts)
    assert type(mine.value) is mine_class
    assert isinstance(mine.value, ValueError)
    # the original's class name (issue 40): Pillow's FileNotFoundError may be a subclass
    assert type(mine.value).__name__ == error.__name__ and type(mine.value).__name__ in {
        c.__name__ for c in type(theirs.value).__mro__}
    assert not str(mine.value).startswith("'")          # the message as is
    capsys.readouterr()


def test_an_uncaught_input_error_ends_the_program_with_its_message(data, tmp_path):
    """As cityscapesScripts' printError: uncaught, the program stops and says why."""
    import subprocess
    import sys

    gts, preds, _ = data
    _missing_prediction_file(gts, preds, tmp_path)
    code = ("from boundary_api.cityscapes import evaluate_img_lists\n"
            f"evaluate_img_lists({preds!r}, {gts!r}, iou_type='segm')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 1
    assert out.stderr.strip() == f"prediction file not found: {preds[0]}"


def test_command_line_refuses_with_one_line(data, capsys):
    from boundary_api.cli import main

    gts, preds, res_dir = data
    os.remove(preds[0])
    gt_dir = os.path.dirname(os.path.dirname(gts[0]))
    assert main(["cityscapes", "--gt-dir", gt_dir, "--result-dir", res_dir, "--threads", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("boundary-eval: error: no prediction file")


def test_command_line_refuses_what_the_api_warns_about(data, capsys):
    from boundary_api.cli import main

    gts, preds, res_dir = data
    _mask_listed_twice(gts, preds)
    gt_dir = os.path.dirname(os.path.dirname(gts[0]))
    with pytest.warns(UserWarning, match="listed more than once"):
        cs.evaluate_cityscapes(gt_dir, res_dir, iou_type="segm", num_threads=1)
    assert main(["cityscapes", "--gt-dir", gt_dir, "--result-dir", res_dir, "--threads", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "is listed more than once" in err[0]
