"""Every stateful object of the package pickles and copies (issue 25), before
and after it is used, and the copy goes on to the same numbers.

Covered elsewhere, not repeated here:

* ``COCOeval``: tests/compat/test_pycocotools_eval.py
  (``test_evaluated_object_pickles``, ``test_evaluated_object_copies``);
* ``LVISEval``: tests/compat/test_lvis_eval.py (``test_evaluated_object_pickles``);
* ``SemanticEvaluator``: tests/semantic/test_semantic.py
  (``test_pickle_round_trip_gives_the_same_numbers``);
* results and LVIS ground truths still in columns, unread:
  tests/instance/test_columns.py, test_lvis_columns.py, test_lvis_gt_columns.py
  (``test_pickle_and_copy_of_unread_*``);
* the Detectron2 evaluators (on the stand-in, and on Detectron2 in its tier):
  tests/integrations/test_detectron2.py
  (``test_evaluators_pickle_before_and_after_evaluation``),
  test_detectron2_semseg.py (``test_evaluator_pickles_mid_stream_and_after_evaluation``),
  test_detectron2_cityscapes.py (``test_evaluator_pickles_with_its_prediction_files``).

Functions without state between calls (``pq_compute``, the Cityscapes
``evaluate_img_lists``, ``evaluate_streaming``, ``evaluate_shard``) have
nothing to pickle: their results are plain dicts and evaluators covered here.

Here: the datasets (``COCO`` ground truth and results, ``LVIS``,
``LVISResults``) before and after an evaluation ran on them, and after their
dicts were read; their annotation cache; ``Partial`` (what the sharded,
distributed and Detectron2 multi-rank evaluations send between processes);
the TIDE-style per-image IoUs and the sensitivity result.
"""
import contextlib
import copy
import pickle

import numpy as np
import pytest

from boundary_api import COCO, LVIS, COCOeval, LVISEval, LVISResults
from boundary_api.sensitivity.curves import sensitivity_analysis
from boundary_api.diagnostics.tide import analyze_errors, image_ious
from boundary_api.instance.cache import cache_for
from boundary_api.scale.partials import accumulate_partial, evaluate_partial, merge_partials
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT

CLONES = {
    "pickle": lambda obj: pickle.loads(pickle.dumps(obj)),
    "deepcopy": copy.deepcopy,
}


def _coco_stats(gt, dt, iou_type):
    ev = COCOeval(gt, dt, iou_type)
    with contextlib.redirect_stdout(None):
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return np.asarray(ev.stats)


def _lvis_results(gt, dt, iou_type):
    ev = LVISEval(gt, dt, iou_type)
    ev.run()
    return ev.results


def _coco(how):
    with contextlib.redirect_stdout(None):
        gt = COCO(COCO_GT)
        dt = gt.loadRes(COCO_DT)
    if how == "dicts":  # the column objects turned into pycocotools' dicts
        gt.anns, dt.anns
    return gt, dt


def _lvis(how):
    gt = LVIS(LVIS_GT)
    dt = LVISResults(gt, LVIS_DT)
    if how == "dicts":
        gt.anns, dt.anns
    return gt, dt


DATASETS = {"coco": (_coco, _coco_stats), "lvis": (_lvis, _lvis_results)}


@pytest.fixture(scope="module")
def reference():
    out = {}
    for name, (load, score) in DATASETS.items():
        for iou_type in ("segm", "boundary"):
            out[name, iou_type] = score(*load("columns"), iou_type)
    return out


# ---------------------------------------------------------------- datasets
@pytest.mark.parametrize("clone", CLONES)
@pytest.mark.parametrize("how", ["columns", "dicts"])
@pytest.mark.parametrize("name", DATASETS)
@pytest.mark.parametrize("when", ["before", "after"])
def test_datasets_clone_before_and_after_an_evaluation(reference, name, how, clone, when):
    """Cloned before any evaluation, or after one ran on them (caches filled,
    pycocotools' ``ignore`` flags written), the copies evaluate to the same
    numbers, twice, and the originals still do too."""
    load, score = DATASETS[name]
    gt, dt = load(how)
    if when == "after":
        assert np.array_equal(np.asarray(score(gt, dt, "boundary")), np.asarray(reference[name, "boundary"])) \
            if name == "coco" else score(gt, dt, "boundary") == reference[name, "boundary"]
    gt2, dt2 = CLONES[clone]((gt, dt))
    for iou_type in ("boundary", "segm", "boundary"):
        for g, d in ((gt2, dt2), (gt, dt)):
            got = score(g, d, iou_type)
            if name == "coco":
                np.testing.assert_array_equal(got, reference[name, iou_type])
            else:
                assert got == reference[name, iou_type]
    assert _same(gt2.dataset, gt.dataset) and _same(dt2.dataset, dt.dataset)


def _same(a, b) -> bool:
    """Equal nested values (NumPy arrays and scalars compared by value and type)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and np.array_equal(a, b)
    return a == b


@pytest.mark.parametrize("clone", CLONES)
def test_results_cloned_alone_against_the_original_ground_truth(reference, clone):
    gt, dt = _coco("columns")
    np.testing.assert_array_equal(_coco_stats(gt, CLONES[clone](dt), "boundary"), reference["coco", "boundary"])


# ----------------------------------------------------------- annotation cache
@pytest.mark.parametrize("clone", CLONES)
def test_annotation_cache_clones_with_its_dataset(clone):
    """A cloned dataset brings its cache: what was computed is not computed
    again; the original keeps its own."""
    gt, dt = _coco("dicts")
    ref = _coco_stats(gt, dt, "boundary")
    cache = cache_for(gt)
    done = cache.computed["boundaries"]
    assert done > 0
    gt2, dt2 = CLONES[clone]((gt, dt))
    cache2 = cache_for(gt2)
    assert cache2 is not cache and cache_for(gt) is cache
    assert cache2.computed["boundaries"] == done
    np.testing.assert_array_equal(_coco_stats(gt2, dt2, "boundary"), ref)
    assert cache2.computed["boundaries"] == done  # every boundary came from the clone's cache
    # the cache cloned with its dataset stays that dataset's
    gt3, cache3 = CLONES[clone]((gt, cache))
    assert cache_for(gt3) is cache3 and cache3.computed == cache.computed
    np.testing.assert_array_equal(_coco_stats(gt3, dt, "boundary"), ref)
    assert cache3.computed == cache.computed


@pytest.mark.parametrize("clone", CLONES)
@pytest.mark.parametrize("how", ["columns", "dicts"])
def test_own_ignore_flags_survive_a_clone_after_a_segm_evaluation(tmp_path, clone, how):
    """pycocotools' evaluation overwrites ``ignore`` with ``iscrowd``; the
    Boundary IoU evaluation keeps each ground truth's own flag, which only
    the cache remembers.  A ground truth cloned after a 'segm' evaluation
    gives the 'boundary' numbers of the original."""
    import json

    with open(COCO_GT) as f:
        doc = json.load(f)
    for ann in doc["annotations"][::7]:
        if not ann["iscrowd"]:
            ann["ignore"] = 1
    path = tmp_path / "gt.json"
    path.write_text(json.dumps(doc))
    with contextlib.redirect_stdout(None):
        gt = COCO(str(path))
        dt = gt.loadRes(COCO_DT)
    if how == "dicts":
        gt.anns
    fresh_gt, fresh_dt = CLONES[clone]((gt, dt))
    ref = _coco_stats(fresh_gt, fresh_dt, "boundary")
    _coco_stats(gt, dt, "segm")
    gt2, dt2 = CLONES[clone]((gt, dt))
    np.testing.assert_array_equal(_coco_stats(gt2, dt2, "boundary"), ref)
    np.testing.assert_array_equal(_coco_stats(gt, dt, "boundary"), ref)


# ----------------------------------------------------------------- partials
@pytest.mark.parametrize("clone", CLONES)
@pytest.mark.parametrize("name", DATASETS)
def test_partials_clone_then_merge_and_accumulate(reference, name, clone):
    load, _ = DATASETS[name]
    gt, dt = load("columns")
    ids = sorted(gt.getImgIds() if name == "coco" else gt.get_img_ids())
    parts = [evaluate_partial(gt, dt, "boundary", ids[i::3]) for i in range(3)]
    clones = [CLONES[clone](p) for p in parts]
    merged = CLONES[clone](merge_partials(clones))
    with contextlib.redirect_stdout(None):
        ev = accumulate_partial(merged, img_ids=ids)
    if name == "coco":
        np.testing.assert_array_equal(ev.stats, reference[name, "boundary"])
    else:
        assert ev.results == reference[name, "boundary"]


# ------------------------------------------------------------------ analysis
@pytest.mark.parametrize("clone", CLONES)
def test_image_ious_and_error_analysis_clone(clone):
    gt, dt = _coco("dicts")
    ious = image_ious(gt, dt)
    back = CLONES[clone](ious)
    assert list(back) == list(ious)
    for k, im in ious.items():
        for attr in ("mask", "boundary", "crowd", "det_area", "gt_area"):
            np.testing.assert_array_equal(getattr(back[k], attr), getattr(im, attr))
        assert _same(back[k].dets, im.dets) and _same(back[k].gts, im.gts) and _same(back[k].crowds, im.crowds)
    report = analyze_errors(gt, dt, images=ious)
    assert _same(CLONES[clone](report), report)
    assert _same(analyze_errors(gt, dt, images=back), report)


@pytest.mark.parametrize("clone", CLONES)
def test_sensitivity_result_clones(clone):
    res = sensitivity_analysis(COCO_GT, errors=("dilation",), severities={"dilation": (1,)}, samples=6,
                               seed=0)
    back = CLONES[clone](res)
    assert back.to_json() == res.to_json()
