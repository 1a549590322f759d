"""boundary_api.COCOeval against pycocotools' COCOeval, the same user code run
on both: subclasses that override a step, the evaluator's state after
``evaluate()``, edits between ``evaluate()`` and ``accumulate()``, pickling,
and ``accumulate()`` before ``evaluate()`` (issue 24 items 1 and 4, issue 25
items 10 and 11).  'boundary', which pycocotools lacks, is compared with
pycocotools' own loops run on this package's Boundary IoUs."""
import contextlib
import copy
import io
import logging
import pickle

import numpy as np
import pycocotools.coco
import pycocotools.cocoeval
import pytest

import boundary_api
from conftest import COCO_DT, COCO_GT
from synth import assert_same_eval_imgs, same_value

ORIGINAL = pycocotools.cocoeval.COCOeval
OURS = boundary_api.COCOeval
LOADINGS = ("path", "plain")  # boundary_api.COCO(path) (columns) / pycocotools' own objects


def quiet(fn, *args, **kwargs):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*args, **kwargs)


def load(loading):
    """Ground truth and results of the bundled COCO data, freshly loaded."""
    if loading == "path":
        gt = quiet(boundary_api.COCO, COCO_GT)
    else:
        gt = quiet(pycocotools.coco.COCO, COCO_GT)
    return gt, quiet(gt.loadRes, COCO_DT)


#: the images most tests evaluate (pycocotools' loops on all 100 take seconds)
SOME = 24


def run(cls, iou, loading="plain", steps=("evaluate", "accumulate", "summarize"), images=SOME):
    """``cls(gt, dt, iou)`` on the first ``images`` images (None: all), ``steps`` run."""
    gt, dt = load(loading)
    ev = cls(gt, dt, iou)
    if images is not None:
        ev.params.imgIds = ev.params.imgIds[:images]
    for step in steps:
        quiet(getattr(ev, step))
    return ev


def assert_same_numbers(a, b):
    for key in ("precision", "recall", "scores"):
        assert a.eval[key].dtype == b.eval[key].dtype, key
        np.testing.assert_array_equal(a.eval[key], b.eval[key], err_msg=key)
    np.testing.assert_array_equal(a.stats, b.stats)


# ------------------------------------------------------------ overrides win
def halving(base):
    """The user code: a subclass whose computeIoU halves every IoU."""
    class Halving(base):
        calls = []

        def computeIoU(self, imgId, catId):
            self.calls.append((imgId, catId))
            ious = super().computeIoU(imgId, catId)
            return ious if len(ious) == 0 else ious * 0.5

    Halving.calls = []
    return Halving


@pytest.mark.parametrize("loading", LOADINGS)
@pytest.mark.parametrize("iou", ["segm", "bbox"])
def test_overridden_compute_iou_is_called_as_pycocotools_calls_it(iou, loading):
    orig = run(halving(ORIGINAL), iou)
    ours = run(halving(OURS), iou, loading)
    assert orig.stats[0] < 0.01  # (the override's own number, not the plain one)
    assert_same_numbers(ours, orig)
    # called for the same pairs, in the same order, with the same argument types
    assert ours.calls == orig.calls
    assert [tuple(map(type, c)) for c in ours.calls] == [tuple(map(type, c)) for c in orig.calls]
    same_value(ours.ious, orig.ious)
    assert_same_eval_imgs(ours.evalImgs, orig.evalImgs)


@pytest.mark.parametrize("loading", LOADINGS)
@pytest.mark.parametrize("iou", ["segm", "bbox"])
def test_overridden_evaluate_img_and_prepare_are_called(iou, loading):
    def subclass(base):
        class Sub(base):
            def _prepare(self):
                super()._prepare()
                for key in list(self._dts):  # the user's own selection of detections
                    self._dts[key] = [d for d in self._dts[key] if d["score"] >= 0.3]

            def evaluateImg(self, imgId, catId, aRng, maxDet):
                return None if imgId % 3 == 0 else super().evaluateImg(imgId, catId, aRng, maxDet)
        return Sub

    orig = run(subclass(ORIGINAL), iou)
    ours = run(subclass(OURS), iou, loading)
    plain = run(ORIGINAL, iou)
    assert not np.array_equal(orig.stats, plain.stats)
    assert_same_numbers(ours, orig)
    assert_same_eval_imgs(ours.evalImgs, orig.evalImgs)
    assert list(ours._dts) == list(orig._dts)


def test_overridden_accumulate_and_summarize_are_called():
    def subclass(base):
        class Sub(base):
            def accumulate(self, p=None):
                self.accumulated = True
                super().accumulate(p)

            def summarize(self):
                super().summarize()
                self.stats = self.stats[:3]
        return Sub

    orig = run(subclass(ORIGINAL), "segm")
    ours = run(subclass(OURS), "segm", "path")
    assert ours.accumulated and orig.accumulated
    assert len(ours.stats) == 3
    # (overriding these keeps the native evaluation)
    assert ours._matched_state() is not None
    assert_same_numbers(ours, orig)


def test_overridden_compute_oks_is_called():
    from synth import make_dataset
    # keypoints data: every ground truth and result gets three keypoints
    gt_data, dets = make_dataset(seed=5, num_images=6, num_cats=2, polygons=False)
    rng = np.random.default_rng(0)
    for a in gt_data["annotations"] + dets:
        x, y, w, h = a["bbox"] if "bbox" in a else (0, 0, 10, 10)
        a["keypoints"] = [float(v) for i in range(3)
                          for v in (x + rng.random() * w, y + rng.random() * h, 2)]
        a["num_keypoints"] = 3
    for cat in gt_data["categories"]:
        cat["keypoints"] = ["a", "b", "c"]

    def subclass(base):
        class Sub(base):
            def computeOks(self, imgId, catId):
                oks = super().computeOks(imgId, catId)
                return oks if len(oks) == 0 else np.sqrt(oks)
        return Sub

    results = []
    for base, coco in ((ORIGINAL, pycocotools.coco.COCO), (OURS, boundary_api.COCO)):
        gt = coco()
        gt.dataset = copy.deepcopy(gt_data)
        quiet(gt.createIndex)
        dt = quiet(gt.loadRes, copy.deepcopy(dets))
        ev = subclass(base)(gt, dt, "keypoints")
        ev.params.kpt_oks_sigmas = np.array([0.5, 0.5, 0.5])
        for step in ("evaluate", "accumulate", "summarize"):
            quiet(getattr(ev, step))
        results.append(ev)
    assert_same_numbers(results[1], results[0])


@pytest.mark.parametrize("loading", LOADINGS)
def test_overridden_compute_iou_with_boundary(loading):
    """A 'boundary' subclass's computeIoU gets what a 'segm' one gets from
    pycocotools (the pair, ``_gts``/``_dts`` with RLE detections), and its
    numbers are pycocotools' loops on the halved Boundary IoUs."""
    def seeing(base):
        class Seeing(halving(base)):
            """also notes the kinds of segmentation it finds"""
            kinds = set()

            def computeIoU(self, imgId, catId):
                for table in (self._gts, self._dts):
                    for cat in ([catId] if self.params.useCats else []):
                        self.kinds.update(type(a["segmentation"]).__name__ for a in table[imgId, cat])
                return super().computeIoU(imgId, catId)
        return Seeing

    plain = run(OURS, "boundary", loading, steps=("evaluate",))
    boundary_ious = {key: (m if len(m) == 0 else m * 0.5) for key, m in plain.ious.items()}

    class Reference(ORIGINAL):
        def computeIoU(self, imgId, catId):
            return boundary_ious[imgId, catId]

    expected = run(Reference, "segm")
    ours = run(seeing(OURS), "boundary", loading)
    segm = run(seeing(ORIGINAL), "segm")
    assert ours.kinds == segm.kinds == {"dict"}
    assert ours.calls == segm.calls
    assert_same_numbers(ours, expected)
    assert_same_eval_imgs(ours.evalImgs, expected.evalImgs)


@pytest.mark.parametrize("loading", LOADINGS)
@pytest.mark.parametrize("iou", ["segm", "bbox", "boundary"])
def test_compute_iou_called_directly(iou, loading):
    """``ev.computeIoU(img, cat)`` after a native evaluation: pycocotools'
    matrices (segm, bbox), the evaluation's own IoUs (boundary)."""
    ours = run(OURS, iou, loading, steps=("evaluate",))
    if iou == "boundary":
        slow = OURS(*load(loading), "boundary", use_fast_impl=False)
        slow.params.imgIds = slow.params.imgIds[:SOME]
        quiet(slow.evaluate)
        reference = slow.ious
    else:
        reference = run(ORIGINAL, iou, steps=("evaluate",)).ious
    keys = [k for k, m in reference.items() if len(m)][:40] + [k for k, m in reference.items() if not len(m)][:5]
    for img, cat in keys:
        same_value(ours.computeIoU(img, cat), reference[img, cat])


# --------------------------------------------------------- state and types
@pytest.mark.parametrize("loading", LOADINGS)
@pytest.mark.parametrize("iou", ["segm", "bbox"])
@pytest.mark.parametrize("images", [SOME, pytest.param(None, marks=pytest.mark.slow)], ids=["some", "all"])
def test_state_after_evaluate_is_pycocotools(iou, loading, images):
    orig = run(ORIGINAL, iou, steps=("evaluate",), images=images)
    ours = run(OURS, iou, loading, steps=("evaluate",), images=images)
    names = set(vars(orig))
    assert names <= set(vars(ours))
    for name in names - {"cocoGt", "cocoDt"}:
        assert type(vars(ours)[name]) is type(vars(orig)[name]), name
    assert type(ours.ious) is dict
    assert type(ours.ious)(orig.ious) == orig.ious  # (torchmetrics rebuilds it so)
    same_value(ours.ious, orig.ious)
    assert_same_eval_imgs(ours.evalImgs, orig.evalImgs)
    for name in ("_gts", "_dts"):
        a, b = getattr(ours, name), getattr(orig, name)
        assert type(a) is type(b) and a.default_factory is b.default_factory
        assert len(a) == len(b) == (8000 if images is None else 80 * SOME)
        assert list(a) == list(b), name
        coco = ours.cocoGt if name == "_gts" else ours.cocoDt
        for key in b:
            # the same annotations, '_ignore' of the ground truths included
            assert [x["id"] for x in a[key]] == [x["id"] for x in b[key]]
            for x, y in zip(a[key], b[key]):
                assert x is coco.anns[x["id"]]  # (the dataset's own dicts)
                if loading == "plain":
                    same_value(x, y)
                else:
                    # (the scalar types of dicts made from columns are the loader's business)
                    assert list(x) == list(y)
                    np.testing.assert_equal(x, y)
    assert vars(ours._paramsEval).keys() == vars(orig._paramsEval).keys()
    for key, value in vars(orig._paramsEval).items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(getattr(ours._paramsEval, key), value)
        else:
            assert getattr(ours._paramsEval, key) == value, key
    quiet(orig.accumulate)
    quiet(ours.accumulate)
    quiet(orig.summarize)
    quiet(ours.summarize)
    assert type(ours.stats) is type(orig.stats)
    assert ours.eval.keys() == orig.eval.keys()
    assert_same_numbers(ours, orig)


@pytest.mark.parametrize("loading", LOADINGS)
def test_ground_truth_dicts_carry_ignore_flags(loading):
    """``_ignore`` as pycocotools' evaluateImg leaves it, in the evaluator's
    lists and in the ground truth's own dicts."""
    orig = run(ORIGINAL, "segm", steps=("evaluate",))
    ours = run(OURS, "segm", loading, steps=("evaluate",))
    expected = {a["id"]: (a["ignore"], a["_ignore"]) for a in orig.cocoGt.anns.values() if "_ignore" in a}
    assert expected
    got = {a["id"]: (a["ignore"], a["_ignore"]) for a in ours.cocoGt.anns.values() if "_ignore" in a}
    assert got == expected
    for a in ours.cocoGt.anns.values():  # ('ignore' placed before '_ignore', as pycocotools places them)
        if "_ignore" in a:
            keys = list(a)
            assert keys.index("ignore") < keys.index("_ignore")


def test_vars_shows_the_state_without_building_it_before():
    ev = run(OURS, "segm", "path", steps=("evaluate",))
    own = boundary_api.instance._lazy.instance_dict(ev)
    assert not {"evalImgs", "ious", "_gts", "_dts"} & set(own)  # nothing built yet
    assert {"evalImgs", "ious", "_gts", "_dts"} <= set(dir(ev))  # (tab completion lists them, building nothing)
    assert not {"evalImgs", "ious", "_gts", "_dts"} & set(own)
    quiet(ev.accumulate)
    assert not {"evalImgs", "ious", "_gts", "_dts"} & set(own)  # the native accumulate built nothing
    shown = vars(ev)
    assert {"evalImgs", "ious", "_gts", "_dts", "eval", "stats", "_paramsEval", "params"} <= set(shown)
    assert type(shown["evalImgs"]) is list and type(shown["ious"]) is dict


# ------------------------------------------- edits between evaluate and accumulate
def _edit_eval_imgs(ev):
    for e in ev.evalImgs:
        if e is not None and e["image_id"] % 2:
            e["dtIgnore"][:] = True
    ev.evalImgs[5] = None


def _replace_eval_imgs(ev):
    ev.evalImgs = [e if e is None or e["image_id"] % 2 else None for e in ev.evalImgs]


def _edit_params(ev):
    ev.params.recThrs = np.linspace(0, 1, 11)
    ev.params.maxDets = [1, 100]
    ev.params.areaRng = ev.params.areaRng[:2]
    ev.params.areaRngLbl = ev.params.areaRngLbl[:2]


def _edit_params_eval(ev):
    ev._paramsEval.catIds = ev._paramsEval.catIds[::2]


def _edit_ious(ev):
    # pycocotools' accumulate does not read ious: no change to the numbers
    for key in list(ev.ious):
        ev.ious[key] = []


@pytest.mark.parametrize("edit", [_edit_eval_imgs, _replace_eval_imgs, _edit_params, _edit_params_eval, _edit_ious],
                         ids=lambda f: f.__name__[1:])
@pytest.mark.parametrize("loading", LOADINGS)
def test_edits_between_evaluate_and_accumulate_are_seen(edit, loading):
    orig = run(ORIGINAL, "segm", steps=("evaluate",))
    ours = run(OURS, "segm", loading, steps=("evaluate",))
    plain = run(OURS, "segm", loading)
    edit(orig)
    edit(ours)
    for ev in (orig, ours):
        quiet(ev.accumulate)
    for key in ("precision", "recall", "scores"):
        np.testing.assert_array_equal(ours.eval[key], orig.eval[key], err_msg=key)
    if edit is not _edit_ious:
        assert not np.array_equal(ours.eval["precision"], plain.eval["precision"])
    if edit is not _edit_params:
        quiet(orig.summarize)
        quiet(ours.summarize)
        np.testing.assert_array_equal(ours.stats, orig.stats)


# ----------------------------------------------------------------- pickling
@pytest.mark.parametrize("iou,loading", [("segm", "path")] + [
    pytest.param(iou, loading, marks=pytest.mark.slow)
    for iou in ("segm", "bbox", "boundary") for loading in LOADINGS if (iou, loading) != ("segm", "path")])
def test_evaluated_object_pickles(iou, loading):
    whole = run(OURS, iou, loading, images=12)
    ev = run(OURS, iou, loading, steps=("evaluate",), images=12)
    back = pickle.loads(pickle.dumps(ev))
    quiet(back.accumulate)
    quiet(back.summarize)
    assert_same_numbers(back, whole)
    assert_same_eval_imgs(back.evalImgs, whole.evalImgs)
    # after accumulate and summarize too, and copies
    again = pickle.loads(pickle.dumps(whole))
    assert_same_numbers(again, whole)
    if iou != "boundary":
        assert_same_numbers(back, run(ORIGINAL, iou, images=12))


@pytest.mark.slow
@pytest.mark.parametrize("iou", ["segm", "boundary"])
def test_evaluated_object_copies(iou):
    whole = run(OURS, iou, "path", images=12)
    ev = run(OURS, iou, "path", steps=("evaluate",), images=12)
    for clone in (copy.copy(ev), copy.deepcopy(ev)):
        quiet(clone.accumulate)
        quiet(clone.summarize)
        assert_same_numbers(clone, whole)


# ------------------------------------------------- accumulate before evaluate
@pytest.mark.parametrize("loading", LOADINGS)
def test_accumulate_before_evaluate(loading, capsys):
    outcomes = []
    for cls, how in ((ORIGINAL, "plain"), (OURS, loading)):
        ev = cls(*load(how), "segm")
        ev.params.imgIds = ev.params.imgIds[:SOME]
        capsys.readouterr()
        with pytest.raises(Exception) as info:
            ev.accumulate()
        outcomes.append((type(info.value), str(info.value), capsys.readouterr().out.splitlines()))
    assert outcomes[1] == outcomes[0]
    assert outcomes[0][2] == ["Accumulating evaluation results...", "Please run evaluate() first"]


# ------------------------------------------------------------------ logging
def test_the_path_taken_is_logged(caplog):
    with caplog.at_level(logging.INFO, logger="boundary_api.coco.cocoeval"):
        run(OURS, "segm", "path")
        run(halving(OURS), "segm", "path")
    messages = [r.getMessage() for r in caplog.records if r.name == "boundary_api.coco.cocoeval"]
    assert messages == [
        "COCOeval.evaluate: native matching",
        "COCOeval.accumulate: native",
        "COCOeval.evaluate: pycocotools' loops (Halving overrides computeIoU)",
        "COCOeval.accumulate: pycocotools' accumulate on evalImgs",
    ]


@pytest.mark.parametrize("loading", LOADINGS)
def test_state_without_categories_is_pycocotools(loading):
    """``useCats=0``: the same numbers, and ``_gts``/``_dts`` with the
    (image, category) entries pycocotools' pooling adds."""
    evs = []
    for cls, how in ((ORIGINAL, "plain"), (OURS, loading)):
        ev = cls(*load(how), "segm")
        ev.params.imgIds = ev.params.imgIds[:SOME]
        ev.params.useCats = 0
        quiet(ev.evaluate)
        evs.append(ev)
    orig, ours = evs
    for name in ("_gts", "_dts"):
        assert list(getattr(ours, name)) == list(getattr(orig, name)), name
    same_value(ours.ious, orig.ious)
    assert_same_eval_imgs(ours.evalImgs, orig.evalImgs)
    for ev in evs:
        quiet(ev.accumulate)
        quiet(ev.summarize)
    assert_same_numbers(ours, orig)


# ------------------------------------------------------------ summaries
def _edit(ev, rng):
    """Values of every kind where the summary reads: -1, NaN, just above and
    below -1 (the same arrays given to both)."""
    for key in ("precision", "recall"):
        a = ev.eval[key].copy()
        pick = rng.random(a.shape)
        a[pick < 0.3] = rng.random(int((pick < 0.3).sum()))
        a[(pick >= 0.3) & (pick < 0.35)] = -1.0
        a[(pick >= 0.35) & (pick < 0.36)] = np.nan
        a[(pick >= 0.36) & (pick < 0.37)] = -0.999
        a[(pick >= 0.37) & (pick < 0.38)] = -1.001
        ev.eval[key] = a


def _params_edit(case, p):
    if case == "labels twice":  # two areas labelled 'small': pycocotools' indexing decides
        p.areaRngLbl = ["all", "small", "small", "large"]
    elif case == "no 100":
        p.maxDets = [1, 10, 50]
    elif case == "thresholds unlike":
        p.iouThrs = p.iouThrs + 0.001


# (maxDets without 100 on purpose: tests/coco/test_summarize_max_dets.py asserts the warning)
@pytest.mark.filterwarnings("ignore:summarize\\(\\). params.maxDets")
@pytest.mark.parametrize("case", ["plain", "labels twice", "no 100", "thresholds unlike", "two maxDets"])
@pytest.mark.parametrize("iou", ["bbox", "boundary"])
def test_summary_equals_pycocotools_on_any_arrays(case, iou, capsys):
    ours = run(OURS, iou, "path", steps=("evaluate", "accumulate"))
    if iou == "boundary":  # pycocotools' summary on the same arrays
        orig = ORIGINAL(*load("plain"), "segm")
        orig.params = copy.deepcopy(ours.params)
        orig.params.iouType = "segm"
        orig.eval = copy.deepcopy(ours.eval)
    else:
        orig = run(ORIGINAL, iou, steps=("evaluate", "accumulate"))
    _edit(ours, np.random.default_rng(len(case)))
    orig.eval["precision"], orig.eval["recall"] = ours.eval["precision"].copy(), ours.eval["recall"].copy()
    for ev in (ours, orig):
        _params_edit(case, ev.params)
        if case == "two maxDets":
            ev.params.maxDets = [1, 100]
    capsys.readouterr()
    outcomes = []
    for ev in (orig, ours):
        try:
            ev.summarize()
            outcomes.append(None)
        except Exception as e:  # noqa: BLE001 - the same failure is the point
            outcomes.append(type(e))
        outcomes.append(capsys.readouterr().out)
    assert outcomes[2:] == outcomes[:2]
    if outcomes[0] is None:
        assert ours.stats.dtype == orig.stats.dtype
        assert ours.stats.tobytes() == orig.stats.tobytes()


def _precision_layouts(p, rng):
    """The same values in other memory layouts, and arrays with nothing to
    average, as a user may assign them to ``eval['precision']``."""
    edited = p.copy()
    pick = rng.random(p.shape)
    edited[pick < 0.01] = np.nan
    edited[(pick >= 0.01) & (pick < 0.02)] = -1.0
    edited[(pick >= 0.02) & (pick < 0.03)] = 0.5
    wide = np.zeros(p.shape[:4] + (2 * p.shape[4],))
    wide[..., 1::2] = edited
    return {
        "accumulated": p.copy(),
        "fortran order": np.asfortranarray(p),
        "edited, every other maxDets entry of a wider array": wide[..., 1::2],
        "edited, reversed strides": np.ascontiguousarray(edited[::-1, ::-1, ::-1, ::-1])[::-1, ::-1, ::-1, ::-1],
        "all -1": np.full(p.shape, -1.0),
        "all NaN": np.full(p.shape, np.nan),
        "-1 but one value": np.where(np.arange(p.size).reshape(p.shape) == p.size // 3, 0.5, -1.0),
    }


def test_summary_equals_pycocotools_on_precision_of_any_layout(capsys):
    # the native summary reads any strides; every line must be pycocotools' float
    orig = run(ORIGINAL, "segm", steps=("evaluate", "accumulate"))
    ours = run(OURS, "segm", "path", steps=("evaluate", "accumulate"))
    assert_same_numbers(ours, orig)
    for name, precision in _precision_layouts(ours.eval["precision"], np.random.default_rng(3)).items():
        orig.eval["precision"] = np.array(precision)
        ours.eval["precision"] = precision
        capsys.readouterr()
        orig.summarize()
        printed = capsys.readouterr().out
        ours.summarize()
        assert capsys.readouterr().out == printed, name
        assert ours.stats.dtype == orig.stats.dtype
        assert ours.stats.tobytes() == orig.stats.tobytes(), name
