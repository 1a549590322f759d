"""Issue 46, items 1, 2 and 5: YouTube-VIS files and calls as the youtubevos/cocoapi fork
takes them, against what the fork did on the same inputs (tests/data/video/fork_loading.json,
made by make_fork_loading_golden.py): official files without ``annotations``, files
without ``categories``, tracks without ``areas`` / ``iscrowd``, results without a numeric
``score`` or with COCO's ``segmentation``, ``params.imgIds`` (which the fork never reads)
and ``params.vidIds``; and the YouTube-VIS API calls Mask2Former's ``YTVISEvaluator`` and
``_evaluate_predictions_on_coco`` make, done directly (the same code on real Detectron2 runs
in tests/integrations/test_mask2former_ytvis.py)."""
import contextlib
import copy
import io
import json
import os
import sys
import warnings

import numpy as np
import pytest

from boundary_api import SuspectInputWarning
from boundary_api.video import YTVOS, YTVOSeval, synthetic_vis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_fork_loading_golden as maker  # noqa: E402

GOLDEN = json.load(open(maker.OUT))
RUNS = GOLDEN["runs"]
TOL = 1e-12


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("fork_loading")
    out = {}
    for case in maker.CASES:
        gt, results = maker.inputs(case)
        assert maker._canonical_sha([gt, results]) == GOLDEN["generator"]["sha256"][case], case
        os.makedirs(root / case)
        json.dump(gt, open(root / case / "gt.json", "w"))
        json.dump(results, open(root / case / "results.json", "w"))
        out[case] = (str(root / case / "gt.json"), str(root / case / "results.json"))
    return out


def _evaluate(gt_path, dt_path, params, strict=False, stages=None):
    """The fork's steps (as make_fork_loading_golden.py runs them); ``stages`` records the
    stage reached."""
    stages = [] if stages is None else stages
    with contextlib.redirect_stdout(io.StringIO()):
        stages.append("YTVOS")
        gt = YTVOS(gt_path, strict=strict)
        stages.append("loadRes")
        dt = gt.loadRes(dt_path)
        stages.append("YTVOSeval")
        ev = YTVOSeval(gt, dt)
        ev.params.maxDets = [1, 10, 100]
        for name, value in params.items():
            setattr(ev.params, name, value)
        stages.append("evaluate")
        ev.evaluate()
        stages.append("accumulate")
        ev.accumulate()
        stages.append("summarize")
        ev.summarize()
    return gt, ev


def _close(a, b):
    return len(a) == len(b) and all(abs(x - y) <= TOL for x, y in zip(a, b))


@pytest.mark.parametrize("case", sorted(RUNS))
def test_same_outcome_as_the_fork(case, files):
    """The fork's numbers, or its exception class raised at the same step, with a message
    naming the file, the track or result and the field (one line)."""
    gold = RUNS[case]
    params = GOLDEN["params"][case]
    stages = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SuspectInputWarning)
        warnings.simplefilter("ignore", UserWarning)
        if "error" in gold:
            with pytest.raises(Exception) as info:
                _evaluate(*files[case], params, stages=stages)
            exc = info.value
            assert type(exc).__name__ == gold["error"]["class"] and isinstance(exc, ValueError), repr(exc)
            assert stages[-1] == gold["error"]["stage"]
            gt_side = case in ("no_categories", "no_areas", "no_iscrowd")
            assert "\n" not in str(exc) and files[case][0 if gt_side else 1] in str(exc)
            return
        gt, ev = _evaluate(*files[case], params)
    assert ("annotations" in gt.dataset) == gold["annotations_in_dataset"]
    assert _close(ev.stats, gold["stats"])
    assert [int(v) for v in ev.params.vidIds] == gold["vidIds"]
    precision = ev.eval["precision"]
    for k, want in enumerate(gold["per_category_ap"]):
        p = precision[:, :, k, 0, -1]
        p = p[p > -1]
        assert (float(np.mean(p)) if p.size else None) == pytest.approx(want, abs=TOL)


def test_messages_name_the_field_and_the_fix(files):
    cases = {"no_categories": "has no 'categories', which loadRes needs",
             "no_areas": "annotation id 1 has no 'areas'",
             "no_iscrowd": "annotation id 1 has no 'iscrowd' (0, or 1 for a crowd track",
             "no_score": "result 1 has no 'score'",
             "string_score": "result 1 has a 'score' that is not a number: '0.5'",
             "null_score": "result 1 has a 'score' that is not a number: null",
             "coco_segmentation": "it has 'segmentation', COCO's field for one image"}
    for case, words in cases.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SuspectInputWarning)
            with pytest.raises(ValueError, match=None) as info:
                _evaluate(*files[case], {})
        assert words in str(info.value), (case, str(info.value))


def test_what_the_fork_loads_is_warned_about_unless_official(files):
    """Loaded as the fork loads them: a file without annotations (YouTube-VIS' own valid and
    test files) silently, the others with one SuspectInputWarning each."""
    with warnings.catch_warnings(record=True) as said, contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        gt = YTVOS(files["no_annotations"][0])
    assert said == [] and "annotations" not in gt.dataset
    for case, field in (("no_categories", "'categories'"), ("no_areas", "'areas'"), ("no_iscrowd", "'iscrowd'")):
        with pytest.warns(SuspectInputWarning) as said, contextlib.redirect_stdout(io.StringIO()):
            YTVOS(files[case][0])
        assert len(said) == 1 and field in str(said[0].message) and "strict=True refuses it" in str(said[0].message)


def test_no_annotations_evaluates_to_minus_one_with_a_warning(files):
    gt_path, dt_path = files["no_annotations"]
    with pytest.warns(SuspectInputWarning, match="has no 'annotations'.*every AP is undefined"):
        gt, ev = _evaluate(gt_path, dt_path, {})
    assert list(ev.stats) == [-1.0] * 12
    # strict: refused where the evaluation would start, naming the official files
    with pytest.raises(KeyError, match="distributed without them") as info:
        _evaluate(gt_path, dt_path, {}, strict=True)
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("case", ["no_categories", "no_areas", "no_iscrowd", "no_score", "string_score",
                                  "null_score"])
def test_strict_refuses_on_loading(case, files):
    stages = []
    with pytest.raises(ValueError):
        _evaluate(*files[case], {}, strict=True, stages=stages)
    assert stages[-1] in ("YTVOS", "loadRes")


def test_img_ids_has_no_effect_as_in_the_fork(files):
    gt_path, dt_path = files["img_ids"]
    with contextlib.redirect_stdout(io.StringIO()):
        gt = YTVOS(gt_path)
        ev = YTVOSeval(gt, gt.loadRes(dt_path))
    assert ev.params.imgIds == ev.params.vidIds  # (until assigned: what pycocotools' loops read)
    with pytest.warns(UserWarning, match="params.imgIds has no effect.*vidIds"):
        ev.params.imgIds = [1, 2]
    assert ev.params.imgIds == [1, 2] and ev.params.vidIds == sorted(gt.getVidIds())
    with contextlib.redirect_stdout(io.StringIO()):
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    assert _close(ev.stats, RUNS["img_ids"]["stats"]) and _close(ev.stats, RUNS["valid"]["stats"])
    assert not _close(RUNS["vid_ids"]["stats"], RUNS["valid"]["stats"])  # (vidIds does restrict)
    # pycocotools' own loops (accumulate's fallback) read vidIds, not the assigned imgIds
    ev.evalImgs  # noqa: B018 - read: accumulate then runs pycocotools' loops
    with contextlib.redirect_stdout(io.StringIO()):
        ev.accumulate()
        ev.summarize()
    assert _close(ev.stats, RUNS["valid"]["stats"]) and ev.params.imgIds == [1, 2]


# ---------------------------------------------------------------------------
# Mask2Former's YTVISEvaluator, its YouTube-VIS API calls done directly
# ---------------------------------------------------------------------------

def _mask2former_evaluate(json_file, predictions, output_dir, img_ids=None):
    """What YTVISEvaluator.__init__, _eval_predictions and _evaluate_predictions_on_coco
    call on YTVOS / YTVOSeval (mask2former_video/data_video/ytvis_eval.py at
    facebookresearch/Mask2Former 9b0651c), for one rank."""
    with contextlib.redirect_stdout(io.StringIO()):
        api = YTVOS(json_file)
    do_evaluation = "annotations" in api.dataset
    with open(os.path.join(output_dir, "results.json"), "w") as f:  # written before the check, as there
        f.write(json.dumps(predictions))
    if not do_evaluation:
        return None
    coco_results = copy.deepcopy(predictions)
    for c in coco_results:
        c.pop("bbox", None)
    with contextlib.redirect_stdout(io.StringIO()):
        coco_dt = api.loadRes(coco_results)
        coco_eval = YTVOSeval(api, coco_dt)
        coco_eval.params.maxDets = [1, 10, 100]
        if img_ids is not None:
            coco_eval.params.imgIds = img_ids
        coco_eval.evaluate()
        coco_eval.accumulate()
        coco_eval.summarize()
    metrics = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10"]
    return {m: float(coco_eval.stats[i] * 100 if coco_eval.stats[i] >= 0 else "nan") for i, m in enumerate(metrics)}


@pytest.mark.parametrize("img_ids", [None, "first2"])
def test_mask2former_calls_with_annotations(files, tmp_path, img_ids):
    gt_path, dt_path = files["valid"]
    predictions = json.load(open(dt_path))
    ids = maker.first2(json.load(open(gt_path))) if img_ids else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore" if img_ids else "error", UserWarning)
        res = _mask2former_evaluate(gt_path, predictions, str(tmp_path), ids)
    want = RUNS["valid"]["stats"]
    for i, m in enumerate(["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10"]):
        assert (res[m] != res[m] and want[i] < 0) or res[m] == pytest.approx(want[i] * 100, abs=1e-10), m
    assert json.load(open(tmp_path / "results.json")) == predictions  # (the given dicts, unchanged)


def test_mask2former_calls_without_annotations(files, tmp_path):
    """YouTube-VIS' valid.json / test.json as distributed: the evaluator is made, writes
    results.json for the server, and evaluates nothing (no warning)."""
    gt_path, dt_path = files["no_annotations"]
    predictions = json.load(open(dt_path))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _mask2former_evaluate(gt_path, predictions, str(tmp_path)) is None
    assert json.load(open(tmp_path / "results.json")) == predictions


def test_demo_files_are_the_fork_valid_shape(tmp_path):
    """(The generated scenario is the one of the demo: a check that the cases stay small.)"""
    gt, results = synthetic_vis.scenario(maker.SCENARIO, seed=maker.SEED)
    assert len(gt["videos"]) == 8 and len(results) < 200
