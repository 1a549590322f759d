"""boundary_api.LVISEval against lvis' LVISEval, the same user code run on
both: subclasses that override a step, the evaluator's state after
``evaluate()``, edits between ``evaluate()`` and ``accumulate()``, pickling,
and ``accumulate()`` before ``evaluate()`` (issue 24 items 1 and 4, issue 25
items 10 and 11).  'boundary', which lvis lacks, is compared with lvis' own
loops run on this package's Boundary IoUs.

lvis 0.5.3's ``accumulate`` calls ``np.float`` (gone in numpy 1.24), so "the
original" here is lvis' class with its own ``accumulate`` run on a numpy that
still answers ``np.float`` (nothing else of it changed)."""
import copy
import logging
import pickle

import lvis
import numpy as np
import pytest

import boundary_api
from boundary_api.lvis.eval import _accumulate_lvis_on_any_numpy
from conftest import LVIS_DT, LVIS_GT
from synth import assert_same_eval_imgs, same_value


class ORIGINAL(lvis.LVISEval):
    """lvis' LVISEval, its accumulate run as on numpy < 1.24."""

    def accumulate(self):
        _accumulate_lvis_on_any_numpy(self)


OURS = boundary_api.LVISEval
LOADINGS = ("path", "plain")  # boundary_api's LVIS(path) (columns) / lvis' own objects
#: the images most tests evaluate (lvis' loops over 1230 categories take seconds)
SOME = 6


def load(loading):
    if loading == "path":
        gt = boundary_api.LVIS(LVIS_GT)
        return gt, boundary_api.LVISResults(gt, LVIS_DT)
    gt = lvis.LVIS(LVIS_GT)
    return gt, lvis.LVISResults(gt, LVIS_DT)


def run(cls, iou, loading="plain", steps=("evaluate", "accumulate", "summarize"), images=SOME):
    """``cls(gt, dt, iou)`` on the first ``images`` images (None: all), ``steps`` run."""
    ev = cls(*load(loading), iou)
    if images is not None:
        ev.params.img_ids = ev.params.img_ids[:images]
    for step in steps:
        getattr(ev, step)()
    return ev


def assert_same_numbers(a, b):
    for key in ("precision", "recall"):
        assert a.eval[key].dtype == b.eval[key].dtype, key
        np.testing.assert_array_equal(a.eval[key], b.eval[key], err_msg=key)
    assert list(a.results.items()) == list(b.results.items())


@pytest.fixture(autouse=True)
def _lvis_quiet():
    logger = logging.getLogger("lvis")
    level = logger.level
    logger.setLevel(logging.WARNING)
    yield
    logger.setLevel(level)


# ------------------------------------------------------------ overrides win
def halving(base):
    """The user code: a subclass whose compute_iou halves every IoU."""
    class Halving(base):
        def compute_iou(self, img_id, cat_id):
            self.calls.append((img_id, cat_id))
            ious = super().compute_iou(img_id, cat_id)
            return ious if len(ious) == 0 else ious * 0.5

    Halving.calls = []
    return Halving


@pytest.mark.parametrize("loading", LOADINGS)
@pytest.mark.parametrize("iou", ["segm", "bbox"])
def test_overridden_compute_iou_is_called_as_lvis_calls_it(iou, loading):
    orig = run(halving(ORIGINAL), iou)
    ours = run(halving(OURS), iou, loading)
    plain = run(ORIGINAL, iou)
    assert orig.results["AP"] < plain.results["AP"] / 2  # (the override's own number)
    assert_same_numbers(ours, orig)
    assert ours.calls == orig.calls
    assert [tuple(map(type, c)) for c in ours.calls] == [tuple(map(type, c)) for c in orig.calls]
    same_value(ours.ious, orig.ious)
    assert_same_eval_imgs(ours.eval_imgs, orig.eval_imgs)


@pytest.mark.parametrize("loading", LOADINGS)
@pytest.mark.parametrize("iou", ["segm", "bbox"])
def test_overridden_evaluate_img_and_prepare_are_called(iou, loading):
    def subclass(base):
        class Sub(base):
            def _prepare(self):
                super()._prepare()
                for key in list(self._dts):  # the user's own selection of detections
                    self._dts[key] = [d for d in self._dts[key] if d["score"] >= 0.3]

            def evaluate_img(self, img_id, cat_id, area_rng):
                return None if img_id % 3 == 0 else super().evaluate_img(img_id, cat_id, area_rng)
        return Sub

    orig = run(subclass(ORIGINAL), iou)
    ours = run(subclass(OURS), iou, loading)
    plain = run(ORIGINAL, iou)
    assert orig.results != plain.results
    assert_same_numbers(ours, orig)
    assert_same_eval_imgs(ours.eval_imgs, orig.eval_imgs)
    assert list(ours._dts) == list(orig._dts)


def test_overridden_accumulate_and_summarize_are_called():
    def subclass(base):
        class Sub(base):
            def accumulate(self):
                self.accumulated = True
                super().accumulate()

            def summarize(self):
                super().summarize()
                self.results["extra"] = 1.0
        return Sub

    orig = run(subclass(ORIGINAL), "segm")
    ours = run(subclass(OURS), "segm", "path")
    assert ours.accumulated and orig.accumulated
    assert ours.results["extra"] == 1.0
    assert ours._matched_state() is not None  # (overriding these keeps the native evaluation)
    assert_same_numbers(ours, orig)


@pytest.mark.parametrize("loading", LOADINGS)
def test_overridden_compute_iou_with_boundary(loading):
    """A 'boundary' subclass's compute_iou is called for the pairs a 'segm'
    one is called for in lvis, and its numbers are lvis' loops on the halved
    Boundary IoUs."""
    def seeing(base):
        class Seeing(halving(base)):
            """also notes the kinds of segmentation it finds"""
            kinds = set()

            def compute_iou(self, img_id, cat_id):
                for table in (self._gts, self._dts):
                    for cat in ([cat_id] if self.params.use_cats else []):
                        self.kinds.update(type(a["segmentation"]).__name__ for a in table[img_id, cat])
                return super().compute_iou(img_id, cat_id)
        return Seeing

    plain = run(OURS, "boundary", loading, steps=("evaluate",))
    boundary_ious = {key: (m if len(m) == 0 else m * 0.5) for key, m in plain.ious.items()}

    class Reference(ORIGINAL):
        def compute_iou(self, img_id, cat_id):
            return boundary_ious[img_id, cat_id]

    expected = run(Reference, "segm")
    ours = run(seeing(OURS), "boundary", loading)
    segm = run(seeing(ORIGINAL), "segm")
    assert ours.kinds == segm.kinds == {"dict"}
    assert ours.calls == segm.calls
    assert_same_numbers(ours, expected)
    assert_same_eval_imgs(ours.eval_imgs, expected.eval_imgs)


@pytest.mark.parametrize("loading", LOADINGS)
@pytest.mark.parametrize("iou", ["segm", "bbox", "boundary"])
def test_compute_iou_called_directly(iou, loading):
    ours = run(OURS, iou, loading, steps=("evaluate",))
    if iou == "boundary":
        slow = OURS(*load(loading), "boundary", use_fast_impl=False)
        slow.params.img_ids = slow.params.img_ids[:SOME]
        slow.evaluate()
        reference = slow.ious
    else:
        reference = run(ORIGINAL, iou, steps=("evaluate",)).ious
    keys = [k for k, m in reference.items() if len(m)][:40] + [k for k, m in reference.items() if not len(m)][:5]
    for img, cat in keys:
        same_value(ours.compute_iou(img, cat), reference[img, cat])


# --------------------------------------------------------- state and types
@pytest.mark.parametrize("loading", LOADINGS)
@pytest.mark.parametrize("iou", ["segm", "bbox"])
def test_state_after_evaluate_is_lvis(iou, loading):
    orig = run(ORIGINAL, iou, steps=("evaluate",))
    ours = run(OURS, iou, loading, steps=("evaluate",))
    names = set(vars(orig))
    assert names <= set(vars(ours))
    for name in names - {"lvis_gt", "lvis_dt"}:
        assert type(vars(ours)[name]) is type(vars(orig)[name]), name
    assert type(ours.ious) is dict
    assert type(ours.ious)(orig.ious) == orig.ious
    same_value(ours.ious, orig.ious)
    assert_same_eval_imgs(ours.eval_imgs, orig.eval_imgs)
    assert ours.img_nel == orig.img_nel and ours.freq_groups == orig.freq_groups
    for name in ("_gts", "_dts"):
        a, b = getattr(ours, name), getattr(orig, name)
        assert type(a) is type(b) and a.default_factory is b.default_factory
        assert len(a) == len(b) == 1230 * SOME
        assert list(a) == list(b), name
        coco = ours.lvis_gt if name == "_gts" else ours.lvis_dt
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
    for ev in (orig, ours):
        ev.accumulate()
        ev.summarize()
    assert ours.eval.keys() - {"dt_pointers"} == orig.eval.keys() - {"dt_pointers"}
    assert type(ours.results) is type(orig.results)
    assert_same_numbers(ours, orig)


@pytest.mark.parametrize("loading", LOADINGS)
def test_ground_truth_dicts_carry_ignore_flags(loading):
    orig = run(ORIGINAL, "segm", steps=("evaluate",))
    ours = run(OURS, "segm", loading, steps=("evaluate",))
    expected = {a["id"]: (a["ignore"], a["_ignore"]) for a in orig.lvis_gt.anns.values() if "_ignore" in a}
    assert expected
    got = {a["id"]: (a["ignore"], a["_ignore"]) for a in ours.lvis_gt.anns.values() if "_ignore" in a}
    assert got == expected
    for a in ours.lvis_gt.anns.values():
        if "_ignore" in a:
            keys = list(a)
            assert keys.index("ignore") < keys.index("_ignore")


def test_vars_shows_the_state_without_building_it_before():
    ev = run(OURS, "segm", "path", steps=("evaluate",))
    own = boundary_api.instance._lazy.instance_dict(ev)
    assert not {"eval_imgs", "ious", "_gts", "_dts"} & set(own)
    assert {"eval_imgs", "ious", "_gts", "_dts"} <= set(dir(ev))  # (tab completion lists them, building nothing)
    assert not {"eval_imgs", "ious", "_gts", "_dts"} & set(own)
    ev.accumulate()
    assert not {"eval_imgs", "ious", "_gts", "_dts"} & set(own)
    shown = vars(ev)
    assert {"eval_imgs", "ious", "_gts", "_dts", "eval", "results", "params"} <= set(shown)
    assert type(shown["eval_imgs"]) is list and type(shown["ious"]) is dict


def test_dt_pointers_only_from_lvis_accumulate():
    native = run(OURS, "segm", "path")
    assert "dt_pointers" not in native.eval
    loops = run(OURS, "segm", "path", steps=("evaluate",))
    loops.eval_imgs  # (read: lvis' own accumulate runs)
    loops.accumulate()
    orig = run(ORIGINAL, "segm", steps=("evaluate", "accumulate"))
    assert loops.eval.keys() == orig.eval.keys()
    for cat, areas in orig.eval["dt_pointers"].items():
        for area, pointers in areas.items():
            got = loops.eval["dt_pointers"][cat][area]
            assert got.keys() == pointers.keys()
            for key in pointers:
                np.testing.assert_array_equal(got[key], pointers[key])


# ------------------------------------------- edits between evaluate and accumulate
def _edit_eval_imgs(ev):
    for e in ev.eval_imgs:
        if e is not None and e["image_id"] % 2:
            e["dt_ignore"][:] = True


def _replace_eval_imgs(ev):
    ev.eval_imgs = [e if e is None or e["image_id"] % 2 else None for e in ev.eval_imgs]


def _edit_params(ev):
    ev.params.rec_thrs = np.linspace(0, 1, 11)


def _edit_ious(ev):
    # lvis' accumulate does not read ious: no change to the numbers
    for key in list(ev.ious):
        ev.ious[key] = []


@pytest.mark.parametrize("edit", [_edit_eval_imgs, _replace_eval_imgs, _edit_params, _edit_ious],
                         ids=lambda f: f.__name__[1:])
@pytest.mark.parametrize("loading", LOADINGS)
def test_edits_between_evaluate_and_accumulate_are_seen(edit, loading):
    orig = run(ORIGINAL, "segm", steps=("evaluate",))
    ours = run(OURS, "segm", loading, steps=("evaluate",))
    plain = run(OURS, "segm", loading)
    for ev in (orig, ours):
        edit(ev)
        ev.accumulate()
        ev.summarize()
    assert_same_numbers(ours, orig)
    if edit is not _edit_ious:
        assert not np.array_equal(ours.eval["precision"], plain.eval["precision"])


# ----------------------------------------------------------------- pickling
@pytest.mark.parametrize("iou,loading", [("segm", "path")] + [
    pytest.param(iou, loading, marks=pytest.mark.slow)
    for iou in ("segm", "bbox", "boundary") for loading in LOADINGS if (iou, loading) != ("segm", "path")])
def test_evaluated_object_pickles(iou, loading):
    whole = run(OURS, iou, loading)
    ev = run(OURS, iou, loading, steps=("evaluate",))
    back = pickle.loads(pickle.dumps(ev))
    back.accumulate()
    back.summarize()
    assert_same_numbers(back, whole)
    assert_same_eval_imgs(back.eval_imgs, whole.eval_imgs)
    again = pickle.loads(pickle.dumps(whole))
    assert_same_numbers(again, whole)
    if iou != "boundary":
        assert_same_numbers(back, run(ORIGINAL, iou))


@pytest.mark.slow
@pytest.mark.parametrize("iou", ["segm", "boundary"])
def test_evaluated_object_copies(iou):
    whole = run(OURS, iou, "path")
    ev = run(OURS, iou, "path", steps=("evaluate",))
    for clone in (copy.copy(ev), copy.deepcopy(ev)):
        clone.accumulate()
        clone.summarize()
        assert_same_numbers(clone, whole)


# ------------------------------------------------- accumulate before evaluate
@pytest.mark.parametrize("loading", LOADINGS)
def test_accumulate_before_evaluate(loading, caplog):
    outcomes = []
    for cls, how in ((lvis.LVISEval, "plain"), (OURS, loading)):
        ev = cls(*load(how), "segm")
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="lvis"):
            with pytest.raises(Exception) as info:
                ev.accumulate()
        lines = [(r.levelname, r.getMessage()) for r in caplog.records if r.name.startswith("lvis")]
        outcomes.append((type(info.value), str(info.value), lines))
    assert outcomes[1] == outcomes[0]
    assert outcomes[0][0] is TypeError
    assert ("WARNING", "Please run evaluate first.") in outcomes[0][2]


# ------------------------------------------------------------------ logging
def test_the_path_taken_is_logged(caplog):
    with caplog.at_level(logging.INFO, logger="boundary_api.lvis.eval"):
        run(OURS, "segm", "path")
        run(halving(OURS), "segm", "path")
    messages = [r.getMessage() for r in caplog.records if r.name == "boundary_api.lvis.eval"]
    assert messages == [
        "LVISEval.evaluate: native matching",
        "LVISEval.accumulate: native",
        "LVISEval.evaluate: lvis' loops (Halving overrides compute_iou)",
        "LVISEval.accumulate: lvis' accumulate on eval_imgs",
    ]


@pytest.mark.parametrize("loading", LOADINGS)
def test_state_without_categories_is_lvis(loading):
    """``use_cats=0``: the same numbers, and ``_gts``/``_dts`` with the
    entries lvis' pooling adds (under the key (image, -1))."""
    evs = []
    for cls, how in ((ORIGINAL, "plain"), (OURS, loading)):
        ev = cls(*load(how), "segm")
        ev.params.img_ids = ev.params.img_ids[:SOME]
        ev.params.use_cats = 0
        ev.evaluate()
        evs.append(ev)
    orig, ours = evs
    for name in ("_gts", "_dts"):
        assert list(getattr(ours, name)) == list(getattr(orig, name)), name
    same_value(ours.ious, orig.ious)
    assert_same_eval_imgs(ours.eval_imgs, orig.eval_imgs)
    errors = []
    for ev in evs:
        ev.accumulate()
        with pytest.raises(IndexError) as info:  # (lvis' summarize indexes categories)
            ev.summarize()
        errors.append(str(info.value))
    assert errors[0] == errors[1]
    for key in ("precision", "recall"):
        np.testing.assert_array_equal(ours.eval[key], orig.eval[key], err_msg=key)


# ------------------------------------------------------------ summaries
def _edit_precision(ev, rng):
    """Values of every kind where lvis' summaries read: -1, NaN, just above
    and below -1, zeros, ties (the same array given to both)."""
    p = ev.eval["precision"]
    edited = p.copy()
    pick = rng.random(p.shape)
    edited[pick < 0.3] = rng.random(int((pick < 0.3).sum()))
    edited[(pick >= 0.3) & (pick < 0.35)] = -1.0
    edited[(pick >= 0.35) & (pick < 0.36)] = np.nan
    edited[(pick >= 0.36) & (pick < 0.37)] = -0.999
    edited[(pick >= 0.37) & (pick < 0.38)] = -1.001
    return edited


@pytest.mark.parametrize("seed", range(3))
def test_summaries_equal_lvis_on_any_precision(seed, capsys):
    orig = run(ORIGINAL, "bbox", steps=("evaluate", "accumulate"))
    ours = run(OURS, "bbox", "path", steps=("evaluate", "accumulate"))
    edited = _edit_precision(ours, np.random.default_rng(seed))
    orig.eval["precision"] = edited.copy()
    ours.eval["precision"] = edited.copy()
    if seed == 2:  # a frequency group out of order, one empty: lvis' indexing decides
        for ev in (orig, ours):
            ev.freq_groups[0] = list(reversed(ev.freq_groups[2]))[:50]
            ev.freq_groups[1] = []
    capsys.readouterr()
    orig.summarize()
    orig.print_results()
    printed = capsys.readouterr().out
    ours.summarize()
    ours.print_results()
    assert capsys.readouterr().out == printed
    assert list(ours.results) == list(orig.results)
    for key, value in orig.results.items():
        assert type(ours.results[key]) is type(value), key
        same_value(ours.results[key], value)


def _precision_layouts(p, rng):
    """The same values in other memory layouts, and arrays with nothing to
    average, as a user may assign them to ``eval['precision']``."""
    wide = np.zeros(p.shape[:3] + (2 * p.shape[3],))
    wide[..., ::2] = p
    edited = _edit_precision_values(p, rng)
    padded = np.zeros(p.shape[:3] + (p.shape[3] + 1,))
    padded[..., :p.shape[3]] = edited
    return {
        "accumulated": p.copy(),
        "fortran order": np.asfortranarray(p),
        "every other area of a wider array": wide[..., ::2],
        "reversed strides": np.ascontiguousarray(p[::-1, ::-1, ::-1, ::-1])[::-1, ::-1, ::-1, ::-1],
        "edited, fortran order": np.asfortranarray(edited),
        "edited, the first areas of a wider array": padded[..., :p.shape[3]],
        "all -1": np.full(p.shape, -1.0),
        "all NaN": np.full(p.shape, np.nan),
        "-1 but one value": np.where(np.arange(p.size).reshape(p.shape) == p.size // 2, 0.5, -1.0),
    }


def _edit_precision_values(p, rng):
    edited = p.copy()
    pick = rng.random(p.shape)
    edited[pick < 0.01] = np.nan
    edited[(pick >= 0.01) & (pick < 0.02)] = -1.0
    edited[(pick >= 0.02) & (pick < 0.03)] = 0.5
    return edited


def test_summaries_equal_lvis_on_precision_of_any_layout(capsys):
    # the native summary reads any strides; every line must be lvis' float
    orig = run(ORIGINAL, "bbox", steps=("evaluate", "accumulate"))
    ours = run(OURS, "bbox", "path", steps=("evaluate", "accumulate"))
    np.testing.assert_array_equal(ours.eval["precision"], orig.eval["precision"])
    for name, precision in _precision_layouts(ours.eval["precision"], np.random.default_rng(5)).items():
        orig.eval["precision"] = np.array(precision)
        ours.eval["precision"] = precision
        capsys.readouterr()
        orig.summarize()
        orig.print_results()
        printed = capsys.readouterr().out
        ours.summarize()
        ours.print_results()
        assert capsys.readouterr().out == printed, name
        assert list(ours.results) == list(orig.results), name
        for key, value in orig.results.items():
            assert type(ours.results[key]) is type(value), (name, key)
            same_value(ours.results[key], value)


def test_overridden_summarize_step_sees_every_line():
    # lvis' summarize asks _summarize for 13 lines; a subclass's own
    # _summarize is asked for each of them, as in lvis
    def subclass(base):
        class Sub(base):
            def _summarize(self, *args, **kwargs):
                self.lines.append((args, kwargs))
                return super()._summarize(*args, **kwargs)
        return Sub

    orig = run(subclass(ORIGINAL), "bbox", steps=("evaluate", "accumulate"))
    ours = run(subclass(OURS), "bbox", "path", steps=("evaluate", "accumulate"))
    orig.lines, ours.lines = [], []
    orig.summarize()
    ours.summarize()
    assert ours.lines == orig.lines and len(ours.lines) == 13
    assert_same_numbers(ours, orig)
