"""boundary_api.swap: init_as_pycocotools / init_as_lvis / swapped() make unchanged
user code that imports pycocotools or lvis run on boundary_api, in both import
orders, and restore the originals."""
import contextlib
import io
import logging
import sys
import types

import numpy as np
import pytest

import boundary_api
from boundary_api.swap import is_swapped

from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT

USER_CODE = """
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval
import pycocotools.coco as coco_module
import pycocotools


def evaluate(gt_path, dt_path, iou_type):
    gt = COCO(gt_path)
    ev = COCOeval(gt, gt.loadRes(dt_path), iou_type)
    ev.evaluate(); ev.accumulate(); ev.summarize()
    return ev


def evaluate_late_import(gt_path, dt_path, iou_type):
    from pycocotools.coco import COCO
    from pycocotools.cocoeval import COCOeval
    gt = COCO(gt_path)
    ev = COCOeval(gt, gt.loadRes(dt_path), iou_type)
    ev.evaluate(); ev.accumulate(); ev.summarize()
    return ev
"""

LVIS_USER_CODE = """
from lvis import LVIS, LVISResults, LVISEval
import lvis


def evaluate(gt_path, dt_path, iou_type):
    gt = LVIS(gt_path)
    ev = LVISEval(gt, LVISResults(gt, dt_path), iou_type)
    ev.run()
    return ev
"""


def _user_module(name, code):
    """A module of third-party code, imported now (its module-level imports run now)."""
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(code, f"<{name}>", "exec"), vars(module))
    return module


@pytest.fixture
def user_module(request):
    made = []

    def make(code=USER_CODE):
        name = f"swap_user_{request.node.name}_{len(made)}".replace("[", "_").replace("]", "_").replace("-", "_")
        made.append(name)
        return _user_module(name, code)

    yield make
    for name in made:
        sys.modules.pop(name, None)
    boundary_api.restore_originals()


def _quiet(fn, *args):
    with contextlib.redirect_stdout(io.StringIO()) as out:
        result = fn(*args)
    return result, out.getvalue()


def _originals():
    import pycocotools.coco
    import pycocotools.cocoeval

    return sys.modules["pycocotools"], pycocotools.coco.COCO, pycocotools.cocoeval.COCOeval


def test_imported_after_the_call_resolves_to_boundary_api(user_module):
    package, original_coco, original_eval = _originals()
    boundary_api.init_as_pycocotools()
    assert is_swapped("pycocotools") and not is_swapped("lvis")
    user = user_module()
    assert user.COCO is boundary_api.COCO and user.COCOeval is boundary_api.COCOeval
    assert user.coco_module.COCO is boundary_api.COCO and user.pycocotools.cocoeval.COCOeval is boundary_api.COCOeval
    # the originals are not modified
    assert vars(package)["coco"].COCO is original_coco and vars(package)["cocoeval"].COCOeval is original_eval
    import pycocotools.mask

    assert "boundary_api" not in repr(pycocotools.mask)  # not swapped


def test_imported_before_the_call_is_rebound_and_restored(user_module, caplog):
    package, original_coco, original_eval = _originals()
    user = user_module()
    assert user.COCOeval is original_eval
    with caplog.at_level(logging.INFO, logger="boundary_api.swap"):
        boundary_api.init_as_pycocotools()
    assert user.COCO is boundary_api.COCO and user.COCOeval is boundary_api.COCOeval
    assert user.coco_module.COCO is boundary_api.COCO and user.pycocotools.coco.COCO is boundary_api.COCO
    # the log names what was rebound
    assert f"{user.__name__}.COCOeval" in caplog.text and "now resolve to boundary_api" in caplog.text
    boundary_api.restore_originals()
    assert not is_swapped("pycocotools")
    assert user.COCO is original_coco and user.COCOeval is original_eval
    assert user.pycocotools is package and sys.modules["pycocotools"] is package
    assert sys.modules["pycocotools.cocoeval"].COCOeval is original_eval


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
@pytest.mark.parametrize("order", ["before", "after"])
def test_unchanged_user_code_gives_pycocotools_numbers(user_module, order, iou_type):
    """The same user code, run on pycocotools and (swapped) on boundary_api: same stats, same printed lines."""
    reference = user_module()
    theirs, their_lines = _quiet(reference.evaluate, COCO_GT, COCO_DT, iou_type)
    assert type(theirs).__module__ == "pycocotools.cocoeval"
    if order == "before":
        user = user_module()
        boundary_api.init_as_pycocotools()
    else:
        boundary_api.init_as_pycocotools()
        user = user_module()
    for fn in (user.evaluate, user.evaluate_late_import):
        ours, our_lines = _quiet(fn, COCO_GT, COCO_DT, iou_type)
        assert type(ours) is boundary_api.COCOeval
        np.testing.assert_array_equal(ours.stats, theirs.stats)
        np.testing.assert_array_equal(ours.eval["precision"], theirs.eval["precision"])
        np.testing.assert_array_equal(ours.eval["recall"], theirs.eval["recall"])
        summary = lambda text: [l for l in text.splitlines() if l.startswith(" Average")]  # noqa: E731
        assert summary(our_lines) == summary(their_lines)


def test_the_boundary_iou_type_through_pycocotools_names(user_module):
    with boundary_api.swapped(lvis=False):
        user = user_module()
        ev, _ = _quiet(user.evaluate, COCO_GT, COCO_DT, "boundary")
    direct = boundary_api.COCOeval(boundary_api.COCO(COCO_GT), boundary_api.COCO(COCO_GT).loadRes(COCO_DT),
                                   "boundary")
    _quiet(lambda: (direct.evaluate(), direct.accumulate(), direct.summarize()))
    np.testing.assert_array_equal(ev.stats, direct.stats)


def test_the_context_manager_restores_and_nests(user_module):
    package, original_coco, original_eval = _originals()
    with boundary_api.swapped():
        assert is_swapped("pycocotools") and is_swapped("lvis")
        with boundary_api.swapped():
            pass
        assert is_swapped("pycocotools") and is_swapped("lvis")  # the inner block swapped nothing
    assert not is_swapped("pycocotools") and not is_swapped("lvis")
    assert sys.modules["pycocotools"] is package
    boundary_api.init_as_pycocotools()
    with boundary_api.swapped():
        assert is_swapped("lvis")
    assert is_swapped("pycocotools") and not is_swapped("lvis")  # swapped before the block: stays swapped
    with pytest.raises(RuntimeError):
        with boundary_api.swapped(pycocotools=False):
            raise RuntimeError("restored anyway")
    assert not is_swapped("lvis")


def test_calls_are_idempotent_and_restoring_nothing_is_fine(user_module):
    boundary_api.restore_originals()
    boundary_api.init_as_pycocotools()
    stand_in = sys.modules["pycocotools.cocoeval"]
    boundary_api.init_as_pycocotools()
    assert sys.modules["pycocotools.cocoeval"] is stand_in
    boundary_api.restore_originals("pycocotools")
    boundary_api.restore_originals("pycocotools")
    with pytest.raises(ValueError):
        boundary_api.restore_originals("panopticapi")
    with pytest.raises(ValueError):
        is_swapped("cityscapesscripts")


def test_a_stand_in_says_what_it_is(user_module):
    original_eval = _originals()[2]
    with boundary_api.swapped(lvis=False):
        module = sys.modules["pycocotools.cocoeval"]
        assert "boundary_api stand-in" in repr(module) and "boundary_api" in module.__doc__
        assert module.__boundary_api_original__.COCOeval is original_eval
        assert module.Params is module.__boundary_api_original__.Params  # the rest is pycocotools'
        user = user_module()
        try:
            user.COCOeval(None, None, "nonsense")
        except Exception as error:  # the traceback goes through boundary_api's file
            import traceback

            files = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
            assert any("boundary_api" in f for f in files), files


def test_rebind_false_leaves_earlier_names(user_module):
    _, _, original_eval = _originals()
    user = user_module()
    with boundary_api.swapped(lvis=False, rebind=False):
        assert user.COCOeval is original_eval
        from pycocotools.cocoeval import COCOeval

        assert COCOeval is boundary_api.COCOeval


@pytest.mark.slow
@pytest.mark.parametrize("order", ["before", "after"])
def test_lvis_user_code_gives_lvis_numbers(user_module, order, monkeypatch):
    monkeypatch.setattr(np, "float", float, raising=False)  # lvis' own accumulate needs it on numpy 2
    reference = user_module(LVIS_USER_CODE)
    theirs = reference.evaluate(LVIS_GT, LVIS_DT, "segm")
    assert type(theirs).__module__ == "lvis.eval"
    if order == "before":
        user = user_module(LVIS_USER_CODE)
        boundary_api.init_as_lvis()
    else:
        boundary_api.init_as_lvis()
        user = user_module(LVIS_USER_CODE)
    assert user.lvis.LVISEval is boundary_api.LVISEval and user.LVIS is boundary_api.LVIS
    ours = user.evaluate(LVIS_GT, LVIS_DT, "segm")
    assert type(ours) is boundary_api.LVISEval
    assert ours.get_results() == theirs.get_results()
    boundary_api.restore_originals("lvis")
    assert type(user.evaluate(LVIS_GT, LVIS_DT, "segm")).__module__ == ("lvis.eval" if order == "before"
                                                                        else "boundary_api.lvis.eval")


def test_partials_take_an_original_lvis_object_while_swapped():
    """boundary_api's own LVIS check still recognises lvis' (original) objects while lvis is swapped."""
    from boundary_api.lvis._original import _lvis
    from boundary_api.integrations.d2_partials import _is_lvis

    gt = _lvis.LVIS(LVIS_GT)
    with boundary_api.swapped(pycocotools=False):
        assert _is_lvis(gt) and _is_lvis(boundary_api.LVIS(LVIS_GT))
