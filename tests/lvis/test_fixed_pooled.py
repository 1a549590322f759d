"""LVIS Fixed AP and Pooled AP (issue 29) against the paper's code:
large-vocab-devil's ``scripts/evaluate_ap_fixed.py`` and
``scripts/evaluate_ap_pooled.py`` on lvis 0.5.3.

The quick tests compare with the numbers those scripts printed, stored in
tests/data/lvis_fixed_pooled.json (made by tests/lvdevil_oracle.py; 'boundary'
is their protocol with lvis' ``compute_iou`` returning min(mask IoU, boundary
IoU)).  The slow tests run the scripts themselves when a checkout of
large-vocab-devil is at ``LVDEVIL_DIR`` (default /tmp/lvdevil)."""
import json
import logging
import warnings

import numpy as np
import pytest

import boundary_api
from boundary_api.lvis import fixed_pooled
import lvdevil_oracle as oracle

POOLED_KEYS = {"AP-pooled-all": "AP", "AP-pooled-r": "APr", "AP-pooled-c": "APc", "AP-pooled-f": "APf"}


def golden():
    with open(oracle.GOLDEN) as f:
        return json.load(f)["cases"]


def expected(case):
    res = {k: float.fromhex(v) for k, v in case["results"].items()}
    if case["ap"] == "pooled":
        res = {POOLED_KEYS[k]: v for k, v in res.items()}
    return res


def assert_close(ours: dict, theirs: dict):
    assert list(ours) == list(theirs)
    for key, value in theirs.items():
        assert abs(float(ours[key]) - value) <= 1e-12, (key, float(ours[key]), value)


def evaluate(ap, dt, iou, k, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ev = boundary_api.LVISEval(oracle.LVIS_GT, dt, iou, ap=ap, dets_per_cat=k, **kw)
        ev.run()
    return ev


@pytest.fixture(autouse=True)
def _lvis_quiet():
    logger = logging.getLogger("lvis")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    return str(tmp_path_factory.mktemp("fixed_pooled"))


QUICK = [c for c in golden() if c["data"] != "crowded"]
CROWDED = [c for c in golden() if c["data"] == "crowded"]


@pytest.mark.parametrize("case", QUICK, ids=[c["name"] for c in QUICK])
def test_equals_the_scripts(case, folder):
    """Fixed and Pooled AP for segm, bbox and boundary, on the bundled LVIS
    results (K = 10,000 and K = 5) and on them with scores rounded to one
    decimal (K = 3: the cut falls inside runs of equal scores)."""
    ev = evaluate(case["ap"], oracle.results_path(case["data"], folder), case["iou_type"], case["dets_per_cat"])
    assert_close(ev.get_results(), expected(case))


@pytest.mark.slow
@pytest.mark.parametrize("case", CROWDED, ids=[c["name"] for c in CROWDED])
def test_equals_the_scripts_crowded(case, folder):
    """More than 10,000 results for three categories (one of each frequency
    group), scores with two decimals: the cap K = 10,000 cuts each of them,
    inside a run of equal scores, and some images hold more than 300."""
    path = oracle.results_path("crowded", folder)
    ev = evaluate(case["ap"], path, case["iou_type"], case["dets_per_cat"])
    assert_close(ev.get_results(), expected(case))


@pytest.mark.slow
def test_crowded_set_has_ties_at_the_cap(folder):
    """The crowded set is what its cases claim: each crowded category has
    more than 10,000 results and equal scores at ranks 10,000 and 10,001;
    some image has more than 300 results."""
    with open(oracle.results_path("crowded", folder)) as f:
        res = json.load(f)
    for cat in oracle.CROWDED_CATS:
        scores = sorted((r["score"] for r in res if r["category_id"] == cat), reverse=True)
        assert len(scores) > 10000
        assert scores[9999] == scores[10000]
    per_image = np.bincount([r["image_id"] for r in res])
    assert per_image.max() > 300


# ------------------------------------------------------ the same from a list
@pytest.mark.parametrize("ap", ["fixed", "pooled"])
@pytest.mark.parametrize("iou", ["segm", "bbox", "boundary"])
def test_list_and_file_agree(ap, iou, folder):
    """Results given as a list (lvis' dict path) and as a file (columns) give
    the same numbers and the same result dicts, in the scripts' order."""
    path = oracle.results_path("rounded", folder)
    case = next(c for c in golden() if c["name"] == f"{ap}-rounded-{iou}-3")
    with open(path) as f:
        anns = json.load(f)
    before = json.dumps(anns)
    from_list = evaluate(ap, anns, iou, 3)
    assert json.dumps(anns) == before  # the caller's dicts are left alone
    from_file = evaluate(ap, path, iou, 3)
    assert from_file.lvis_dt.__dict__.get("_columns") is not None  # evaluated from columns
    assert_close(from_list.get_results(), expected(case))
    assert_close(from_file.get_results(), expected(case))
    a = from_list.lvis_dt.dataset["annotations"]
    b = from_file.lvis_dt.dataset["annotations"]
    assert [x["id"] for x in a] == [x["id"] for x in b]
    assert [(x["image_id"], x["category_id"], x["score"]) for x in a] == \
        [(x["image_id"], x["category_id"], x["score"]) for x in b]
    assert [sorted(x) for x in a] == [sorted(x) for x in b]
    assert [float(x["area"]) for x in a] == [float(x["area"]) for x in b]


def test_top_k_order_is_the_scripts():
    """Categories in order of first result, each by decreasing score, equal
    scores in list order, cut at K; the count of categories short of K."""
    anns = [{"category_id": c, "score": s, "n": i} for i, (c, s) in
            enumerate([(2, 0.5), (1, 0.5), (2, 0.9), (2, 0.5), (1, 0.7), (3, 0.1), (2, 0.5)])]
    kept, short = fixed_pooled.top_k_per_category(anns, 3)
    assert [a["n"] for a in kept] == [2, 0, 3, 4, 1, 5]
    assert short == 2
    kept, short = fixed_pooled.top_k_per_category(anns, None)
    assert [a["n"] for a in kept] == [2, 0, 3, 6, 4, 1, 5] and short == 0


# ------------------------------------------------------------ pooled paths
@pytest.mark.slow
@pytest.mark.parametrize("iou", ["segm", "boundary"])
def test_pooled_native_equals_loops(iou):
    """The pooled accumulation from the native matching equals the one on
    lvis-style eval_imgs (use_fast_impl=False: lvis' loops), array for array."""
    fast = evaluate("pooled", oracle.LVIS_DT, iou, 5)
    slow = evaluate("pooled", oracle.LVIS_DT, iou, 5, use_fast_impl=False)
    np.testing.assert_array_equal(fast.eval["precision"], slow.eval["precision"])
    np.testing.assert_array_equal(fast.eval["recall"], slow.eval["recall"])
    assert fast.eval["precision"].shape[2:] == (4, 1)
    assert list(fast.get_results()) == ["AP", "APr", "APc", "APf"]
    assert fast.params.area_rng_lbl == ["all"]


def test_pooled_after_eval_imgs_read():
    """Reading eval_imgs between evaluate() and accumulate() takes the
    eval_imgs path, to the same numbers."""
    with pytest.warns(UserWarning, match="fewer than 10000"):
        a = boundary_api.LVISEval(oracle.LVIS_GT, oracle.LVIS_DT, "segm", ap="pooled")
    a.evaluate()
    assert len(a.eval_imgs) == len(a.params.cat_ids) * len(a.params.img_ids)
    a.accumulate()
    a.summarize()
    b = evaluate("pooled", oracle.LVIS_DT, "segm", 10000)
    assert list(a.get_results().items()) == list(b.get_results().items())


def test_standard_is_unchanged():
    """ap='standard' (the default) is lvis' AP with 300 detections per image."""
    a = boundary_api.LVISEval(oracle.LVIS_GT, oracle.LVIS_DT, "segm")
    b = boundary_api.LVISEval(oracle.LVIS_GT, oracle.LVIS_DT, "segm", ap="standard")
    a.run()
    b.run()
    assert a.ap == "standard" and a.params.max_dets == 300
    assert list(a.get_results().items()) == list(b.get_results().items())
    assert "AR@300" in a.get_results()


# ----------------------------------------------------------------- checks
@pytest.mark.parametrize("bad", ["Fixed", "", None, 1, "pool"])
def test_bad_ap(bad):
    with pytest.raises(ValueError, match="ap must be one of 'standard', 'fixed', 'pooled'") as exc:
        boundary_api.LVISEval(oracle.LVIS_GT, oracle.LVIS_DT, "segm", ap=bad)
    assert "\n" not in str(exc.value)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "10"])
def test_bad_dets_per_cat(bad):
    with pytest.raises(ValueError, match="dets_per_cat must be a positive integer") as exc:
        boundary_api.LVISEval(oracle.LVIS_GT, oracle.LVIS_DT, "segm", ap="fixed", dets_per_cat=bad)
    assert "\n" not in str(exc.value)


def test_ap_is_keyword_only():
    """lvis' positional signature (lvis_gt, lvis_dt, iou_type) is kept; the
    new parameters are keyword-only."""
    import inspect

    params = inspect.signature(boundary_api.LVISEval).parameters
    assert list(params)[:3] == ["lvis_gt", "lvis_dt", "iou_type"]
    assert params["ap"].kind is inspect.Parameter.KEYWORD_ONLY
    assert params["dets_per_cat"].kind is inspect.Parameter.KEYWORD_ONLY


def test_warns_categories_short_of_k():
    """One warning line naming how many categories have fewer than K results
    (the script counts 581 for the bundled results and K = 10,000)."""
    with pytest.warns(UserWarning, match=r"^581 of the 581 categories with results have fewer than 10000 "
                                         r"detections") as rec:
        boundary_api.LVISEval(oracle.LVIS_GT, oracle.LVIS_DT, "segm", ap="fixed")
    assert all("\n" not in str(w.message) for w in rec)


def test_loaded_results_are_evaluated_as_given():
    """An LVISResults already loaded is evaluated as given, as the paper's
    evaluator classes evaluate theirs (the per-category cut is the loading
    step): with load_results it equals the path; with more than K results in
    some category a warning says so."""
    gt = boundary_api.LVIS(oracle.LVIS_GT)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        dt = fixed_pooled.load_results(gt, oracle.LVIS_DT, "segm", 5)
    a = boundary_api.LVISEval(gt, dt, "segm", ap="fixed", dets_per_cat=5)
    a.run()
    b = evaluate("fixed", oracle.LVIS_DT, "segm", 5)
    assert list(a.get_results().items()) == list(b.get_results().items())
    with pytest.warns(UserWarning, match=r"lvis_dt holds more than 5 results for \d+ categories"):
        boundary_api.LVISEval(gt, boundary_api.LVISResults(gt, oracle.LVIS_DT, max_dets=-1), "segm",
                              ap="fixed", dets_per_cat=5)


def test_print_results(capsys):
    """print_results prints lvis' lines: Fixed AP with maxDets -1, Pooled AP
    one line per pool."""
    ev = evaluate("pooled", oracle.LVIS_DT, "segm", 10000)
    capsys.readouterr()
    ev.print_results()
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 4
    assert lines[0].startswith(" Average Precision  (AP) @[ IoU=0.50:0.95 | area=   all | maxDets= -1 catIds=all]")
    assert "catIds=  r]" in lines[1]


# ------------------------------------------------------ the scripts, live
needs_oracle = pytest.mark.skipif(not oracle.available(),
                                  reason=f"no large-vocab-devil checkout at {oracle.lvdevil_dir()} (LVDEVIL_DIR)")


@pytest.mark.slow
@needs_oracle
@pytest.mark.parametrize("ap", ["fixed", "pooled"])
@pytest.mark.parametrize("iou", ["segm", "bbox", "boundary"])
def test_live_against_the_scripts(ap, iou, folder):
    """The scripts run here (rounded scores, K = 3), results and the loaded
    result dicts (their order, ids, areas) compared with this package's."""
    path = oracle.results_path("rounded", folder)
    theirs, their_ev = oracle.run_original(ap, oracle.LVIS_GT, path, iou, 3)
    ours = evaluate(ap, path, iou, 3)
    if ap == "pooled":
        theirs = {POOLED_KEYS[k]: v for k, v in theirs.items()}
    assert_close(ours.get_results(), theirs)
    a = their_ev.lvis_dt.dataset["annotations"]
    b = ours.lvis_dt.dataset["annotations"]
    assert [(x["id"], x["image_id"], x["category_id"], x["score"], float(x["area"])) for x in a] == \
        [(x["id"], x["image_id"], x["category_id"], x["score"], float(x["area"])) for x in b]
    assert [list(x) for x in a] == [list(x) for x in b]


@pytest.mark.slow
@needs_oracle
def test_golden_file_is_the_scripts(folder):
    """The stored numbers are what the scripts print today (two cases)."""
    for case in [c for c in golden() if c["name"] in ("fixed-bundled-boundary-5", "pooled-rounded-bbox-3")]:
        res, _ = oracle.run_original(case["ap"], oracle.LVIS_GT, oracle.results_path(case["data"], folder),
                                     case["iou_type"], case["dets_per_cat"])
        assert {k: v.hex() for k, v in res.items()} == case["results"]


@pytest.mark.slow
def test_evaluated_pooled_object_pickles():
    """A pickled evaluated Pooled AP evaluator accumulates (from its eval_imgs)
    to the same arrays and numbers."""
    import pickle

    with pytest.warns(UserWarning, match="categories with results have fewer than 5 detections"):
        ev = boundary_api.LVISEval(oracle.LVIS_GT, oracle.LVIS_DT, "segm", ap="pooled", dets_per_cat=5)
    ev.evaluate()
    copy = pickle.loads(pickle.dumps(ev))
    assert copy.ap == "pooled" and copy.dets_per_cat == 5
    for e in (ev, copy):
        e.accumulate()
        e.summarize()
    np.testing.assert_array_equal(ev.eval["precision"], copy.eval["precision"])
    assert list(ev.get_results().items()) == list(copy.get_results().items())


@pytest.mark.parametrize("ap", ["fixed", "pooled"])
@pytest.mark.parametrize("iou", ["segm", "boundary"])
def test_boxes_are_dropped_for_masks(ap, iou, tmp_path):
    """Results that carry boxes: for 'segm' and 'boundary' the boxes are
    dropped before loading, as the scripts drop them (areas from the masks),
    so the numbers are those of the same results without boxes; the loaded
    dicts are lvis' (keys in file order without 'bbox', then area, bbox, id),
    from a file (columns) as from a list."""
    import pycocotools.mask as mask_utils

    with open(oracle.LVIS_DT) as f:
        anns = json.load(f)
    boxed = [dict(a, bbox=mask_utils.toBbox(a["segmentation"]).tolist()) for a in anns]
    path = tmp_path / "boxed.json"
    path.write_text(json.dumps(boxed))
    case = next(c for c in golden() if c["name"] == f"{ap}-bundled-{iou}-5")
    from_file = evaluate(ap, str(path), iou, 5)
    from_list = evaluate(ap, boxed, iou, 5)
    assert from_file.lvis_dt.__dict__.get("_columns") is not None
    for ev in (from_file, from_list):
        assert_close(ev.get_results(), expected(case))
    a = from_file.lvis_dt.dataset["annotations"]
    b = from_list.lvis_dt.dataset["annotations"]
    assert [list(x) for x in a] == [list(x) for x in b] == \
        [["image_id", "category_id", "segmentation", "score", "area", "bbox", "id"]] * len(a)
    assert [float(x["area"]) for x in a] == [float(x["area"]) for x in b]
    assert all(type(x["area"]) is type(y["area"]) for x, y in zip(a, b))
    np.testing.assert_array_equal(np.array([x["bbox"] for x in a]), np.array([x["bbox"] for x in b]))
