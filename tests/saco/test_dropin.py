"""CGF1Evaluator and CGF1Eval as drop-ins: the constructor's printed lines, the state left
behind, pycocotools' objects, subclass overrides, CGF1Eval used alone, suspect input
warned about (strict: refused), and the official exception classes."""
import contextlib
import io
import json
import os
import warnings

import numpy as np
import pycocotools.coco
import pytest

from boundary_api.instance import SuspectInputWarning
from boundary_api.saco import CGF1Eval, CGF1Evaluator, CGF1_METRICS
from boundary_api.saco.files import evaluate_saco_files

from . import oracle

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "saco")
GT = [os.path.join(DATA, f"gold3_gt_{c}.json") for c in "abc"]
DT = os.path.join(DATA, "gold3_pred.json")


def quiet(fn, *args, **kwargs):
    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs), out.getvalue()


def test_constructor_prints_and_state():
    ev, printed = quiet(CGF1Evaluator, GT, "segm")
    lines = printed.splitlines()
    assert lines[::4] == ["loading annotations into memory..."] * 3
    assert lines[2::4] == ["creating index..."] * 3 and lines[3::4] == ["index created!"] * 3
    assert ev.gt_paths == GT and ev.iou_type == "segm" and ev.verbose is False
    result, printed = quiet(ev.evaluate, DT)
    assert printed.splitlines()[0] == "cgF1 metric, IoU type=segm" and printed.endswith("\n\n")
    assert len(result) == 26 and len(CGF1_METRICS) == 26
    # pycocotools' objects, made when first used, with the official state in the first evaluator
    assert all(isinstance(g, pycocotools.coco.COCO) for g in ev.coco_gts)
    e0 = ev.coco_evals[0]
    assert isinstance(e0, CGF1Eval) and e0.useCats is False and e0.params.useCats is False
    assert list(result.values()) == [float(v) for v in e0.stats]
    assert e0.params.imgIds == ev.eval_img_ids and e0._paramsEval.imgIds == ev.eval_img_ids
    assert e0.eval["params"] is e0.params
    assert len(e0.evalImgs) == len(ev.eval_img_ids)
    assert isinstance(e0.evalImgs[0]["image_id"], np.integer)
    assert "evalImgs" in vars(e0)


def test_a_subclass_override_is_called():
    calls = []

    class Mine(CGF1Evaluator):
        @staticmethod
        def _select_best_scoring(scorings):
            calls.append(len(scorings))
            return scorings[-1]  # always the last annotator

    ev, _ = quiet(Mine, GT, "segm")
    result, _ = quiet(ev.evaluate, DT)
    assert calls and set(calls) == {3}
    assert ev.coco_evals[0].stats.tolist() == list(result.values())


def test_cgf1eval_alone_is_the_oracle_on_one_file(tmp_path):
    gt = json.load(open(GT[0]))
    for img in gt["images"]:
        img["is_instance_exhaustive"] = 1
    known = {i["id"] for i in gt["images"]}
    preds = [p for p in json.load(open(DT)) if p["image_id"] in known]
    coco = pycocotools.coco.COCO()
    coco.dataset = gt
    with contextlib.redirect_stdout(io.StringIO()):
        coco.createIndex()
        dt = coco.loadRes(json.loads(json.dumps(preds)))
    for iou_type in ("segm", "bbox", "boundary"):
        ev = CGF1Eval(coco, dt, iou_type)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            ev.evaluate()
            ev.accumulate()
            ev.summarize()
        lines = out.getvalue().splitlines()
        assert lines[0] == "Running per image evaluation..." and lines[1] == f"Evaluate annotation type *{iou_type}*"
        assert lines[-26].startswith(" Average cgF1       @[ IoU=0.50:0.95] = ")
        # the oracle in CGF1Eval's own order (sorted image ids)
        gt_sorted = dict(gt, images=sorted(gt["images"], key=lambda i: i["id"]))
        want, _ = oracle.evaluate([gt_sorted], preds, iou_type)
        for value, k in zip(ev.stats, want):
            assert oracle.same(value, want[k]), (iou_type, k)
        assert len(ev.evalImgs) == len(gt["images"])
        assert isinstance(ev.ious, dict) and len(ev.ious) == len(gt["images"])


def test_suspect_input_warned_or_refused():
    ev, _ = quiet(CGF1Evaluator, GT, "segm")
    with pytest.warns(SuspectInputWarning) as record, contextlib.redirect_stdout(io.StringIO()):
        ev.evaluate(DT)
    assert {("image id" in str(w.message), "category id" in str(w.message)) for w in record} == {(True, False),
                                                                                                  (False, True)}
    strict, _ = quiet(CGF1Evaluator, GT, "segm", strict=True)
    with pytest.raises(ValueError, match="strict"), contextlib.redirect_stdout(io.StringIO()):
        strict.evaluate(DT)


def test_official_exception_classes(tmp_path):
    gt = json.load(open(GT[0]))
    del gt["images"][0]["is_instance_exhaustive"]
    p = tmp_path / "g.json"
    p.write_text(json.dumps(gt))
    with pytest.raises(KeyError) as e, contextlib.redirect_stdout(io.StringIO()):
        CGF1Evaluator(str(p))
    assert type(e.value).__name__ == "KeyError" and isinstance(e.value, ValueError)
    assert "is_instance_exhaustive" in str(e.value)
    # no pair to evaluate: the official code fails in np.concatenate (ValueError)
    for img in gt["images"]:
        img["is_instance_exhaustive"] = 0
    p.write_text(json.dumps(gt))
    ev, _ = quiet(CGF1Evaluator, str(p))
    with pytest.raises(ValueError, match="no pair"), contextlib.redirect_stdout(io.StringIO()), \
            warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev.evaluate(DT)
    # predictions that are not a list of objects
    bad = tmp_path / "d.json"
    bad.write_text(json.dumps({"x": 1}))
    ev, _ = quiet(CGF1Evaluator, GT)
    with pytest.raises(TypeError) as e, contextlib.redirect_stdout(io.StringIO()):
        ev.evaluate(str(bad))
    assert type(e.value).__name__ == "TypeError" and "JSON list" in str(e.value)


def test_evaluate_saco_files_several_types_one_read():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = evaluate_saco_files(GT, DT, ["segm", "boundary", "bbox"])
    assert [r.iou_type for r in res] == ["segm", "boundary", "bbox"]
    for r in res:
        one, _ = quiet(lambda: CGF1Evaluator(GT, r.iou_type).evaluate(DT))
        assert r.results == one
        assert r.lines[0] == f"cgF1 metric, IoU type={r.iou_type}" and len(r.lines) == 27
    with pytest.raises(ValueError):
        evaluate_saco_files(GT, DT, ["keypoints"])


@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_mask_only_predictions_with_several_files(tmp_path, iou_type):
    """The official loadRes fails here (it leaves a numpy box in each prediction dict,
    which the next file's loadRes compares with []); evaluated here, the boxes taken
    from the masks as the official code takes them for the first file."""
    preds = [{k: v for k, v in p.items() if k != "bbox"} for p in json.load(open(DT))]
    dt = tmp_path / "p.json"
    dt.write_text(json.dumps(preds))
    gts = [json.load(open(p)) for p in GT]
    want, _ = oracle.evaluate(gts, preds, iou_type)
    from .test_goldens import PerPair

    for cls in (CGF1Evaluator, PerPair):
        ev, _ = quiet(cls, GT, iou_type)
        got, _ = quiet(ev.evaluate, str(dt))
        for k in want:
            assert oracle.same(got[k], want[k]), (cls.__name__, k)


def test_gzip_read_and_iou_types_refused(tmp_path):
    import gzip

    gz = tmp_path / "p.json.gz"
    gz.write_bytes(gzip.compress(open(DT, "rb").read()))
    plain, _ = quiet(lambda: CGF1Evaluator(GT).evaluate(DT))
    packed, _ = quiet(lambda: CGF1Evaluator(GT).evaluate(str(gz)))
    assert packed == plain
    with pytest.raises(ValueError, match="iou_type"):
        CGF1Evaluator(GT, "keypoints")
    with pytest.raises(ValueError, match="iouType"):
        CGF1Eval(None, None, "keypoints")


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
def test_threads_and_repeated_evaluations_do_not_change_the_numbers(iou_type):
    one, _ = quiet(CGF1Evaluator, GT, iou_type, num_threads=1)
    two, _ = quiet(CGF1Evaluator, GT, iou_type, num_threads=2)
    a, _ = quiet(one.evaluate, DT)
    b, _ = quiet(two.evaluate, DT)
    c, _ = quiet(two.evaluate, DT)  # (the ground truths' bands cached by the first)
    assert a == b == c


def _outcome(cls, gt, dt, iou_type):
    try:
        ev, _ = quiet(cls, gt, iou_type)
        return quiet(ev.evaluate, dt)[0]
    except Exception as exc:  # noqa: BLE001 - compared between the paths
        return type(exc).__name__


@pytest.mark.parametrize("iou_type", ["segm", "boundary"])
@pytest.mark.parametrize("where", ["pair with ground truth", "pair without ground truth"])
@pytest.mark.parametrize("how", ["truncated counts", "other size"])
def test_a_malformed_prediction_mask_is_left_to_the_per_pair_path(tmp_path, caplog, iou_type, where, how):
    """A prediction the evaluation decodes (score >= 0.5, an evaluated pair) whose RLE is
    malformed or covers another size than its own: the native path finds it where it
    decodes it (the IoU step, or before it for pairs without ground truth) and leaves
    the input to the per-pair path, whose outcome (pycocotools' structure) it is."""
    import logging

    from boundary_api.saco.synthetic import gold_like

    from .test_goldens import PerPair

    gts, preds = gold_like(40, seed=5, height=48, width=64)
    paths = []
    for n, g in enumerate(gts):
        paths.append(str(tmp_path / f"gt{n}.json"))
        with open(paths[-1], "w") as f:
            json.dump(g, f)
    with_gt = set.union(*({a["image_id"] for a in g["annotations"] if not a["iscrowd"]} for g in gts))
    ev, _ = quiet(CGF1Evaluator, paths, iou_type)
    pairs = set(ev.eval_img_ids)
    cats = {c["id"] for c in gts[0]["categories"]}
    k = next(i for i, p in enumerate(preds) if p["score"] >= 0.5 and p["image_id"] in pairs
             and p["category_id"] in cats and (p["image_id"] in with_gt) == (where == "pair with ground truth"))
    seg = preds[k]["segmentation"]
    if how == "truncated counts":
        seg["counts"] = seg["counts"][:len(seg["counts"]) // 2]
    else:
        seg["size"] = [seg["size"][0] + 1, seg["size"][1]]
    dt = tmp_path / "p.json"
    dt.write_text(json.dumps(preds))
    with caplog.at_level(logging.INFO, logger="boundary_api.saco.evaluator"):
        got = _outcome(CGF1Evaluator, paths, str(dt), iou_type)
    assert "per-pair path (prediction" in caplog.text and "malformed RLE" in caplog.text
    assert got == _outcome(PerPair, paths, str(dt), iou_type)
    # segm: pycocotools' number for a size its counts do not cover (with a warning);
    # counts covering fewer pixels than a mask of their size they meet: its IoU never
    # ends, refused.  Boundary IoU has no official reading of such masks: refused.
    if iou_type == "boundary":
        assert got == "ValueError"
    elif how == "truncated counts":
        assert got == "UnsafeRLEError"
    else:
        assert isinstance(got, dict)


@pytest.mark.parametrize("bad", [None, 1, 2])
def test_files_read_side_by_side_print_and_fail_as_one_after_the_other(tmp_path, bad):
    """With several threads the ground truths are read side by side: the same lines in
    the same order, and the first bad file's error, as when read one after the other."""
    paths = list(GT)
    if bad is not None:
        paths[bad] = str(tmp_path / "bad.json")
        with open(paths[bad], "w") as f:
            f.write('{"images": [{"id": 1, "is_instance_exhaustive": true}], "annotations": [')

    def outcome(threads):
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                ev = CGF1Evaluator(paths, num_threads=threads)
            got = ev.eval_img_ids
        except Exception as exc:  # noqa: BLE001 - compared between thread counts
            got = (type(exc).__name__, str(exc))
        return got, [line for line in out.getvalue().splitlines() if not line.startswith("Done (t=")]

    one, two = outcome(1), outcome(2)
    assert one == two
    assert len(one[1]) == 3 * 3 if bad is None else isinstance(one[0], tuple)


@pytest.mark.parametrize("iou_type", ["segm", "bbox", "boundary"])
@pytest.mark.parametrize("where", ["pair with predictions", "pair without predictions", "crowd annotation"])
def test_a_malformed_ground_truth_mask_is_left_to_the_per_pair_path(tmp_path, caplog, iou_type, where):
    """A ground-truth RLE that does not decode to its image's pixels, in the second
    annotator's file: the native path checks the strings where the IoU step decodes
    them and the others after it (all of them for boxes), and leaves the input to the
    per-pair path, whose outcome it is."""
    import logging

    from boundary_api.saco.synthetic import gold_like

    from .test_goldens import PerPair

    gts, preds = gold_like(40, seed=9, height=40, width=56)
    with_preds = {p["image_id"] for p in preds if p["score"] >= 0.5}
    anns = gts[1]["annotations"]
    if where == "crowd annotation":
        k = next(i for i, a in enumerate(anns) if a["iscrowd"])
    else:
        k = next(i for i, a in enumerate(anns) if not a["iscrowd"]
                 and (a["image_id"] in with_preds) == (where == "pair with predictions"))
    anns[k]["segmentation"]["counts"] = anns[k]["segmentation"]["counts"][:-1]
    paths = []
    for n, g in enumerate(gts):
        paths.append(str(tmp_path / f"gt{n}.json"))
        with open(paths[-1], "w") as f:
            json.dump(g, f)
    dt = tmp_path / "p.json"
    dt.write_text(json.dumps(preds))
    with caplog.at_level(logging.INFO, logger="boundary_api.saco.evaluator"):
        got = _outcome(CGF1Evaluator, paths, str(dt), iou_type)
    assert "per-pair path (ground truth 2 has a malformed RLE)" in caplog.text
    assert got == _outcome(PerPair, paths, str(dt), iou_type)


def test_evaluate_saco_files_reads_the_predictions_beside_the_ground_truths(tmp_path):
    """With threads the predictions are read while the ground truths are: the same
    values, and the same error (the ground truth's first when both are bad)."""
    bad = tmp_path / "bad.json"
    bad.write_text('[{"image_id": 1,')
    bad_gt = tmp_path / "bad_gt.json"
    bad_gt.write_text('{"images": [')

    def outcome(gt, dt, threads):
        try:
            return [r.metrics for r in evaluate_saco_files(gt, dt, ["segm"], num_threads=threads, strict=False)]
        except Exception as exc:  # noqa: BLE001 - compared between thread counts
            return type(exc).__name__, str(exc)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for gt, dt in ((GT, DT), (GT, str(bad)), ([GT[0], str(bad_gt)], str(bad)), ([GT[0], str(bad_gt)], DT)):
            one, two = outcome(gt, dt, 1), outcome(gt, dt, 2)
            assert one == two
            if gt is not GT:
                assert isinstance(one, tuple) and "bad_gt.json" in one[1]
            elif dt != DT:
                assert isinstance(one, tuple) and "bad.json" in one[1]


def test_exhaustive_flags_of_any_json_value_are_python_truth_without_image_dicts(tmp_path):
    """The pairs evaluated come from each image entry's ``is_instance_exhaustive`` as
    the official code tests it (Python truth of the JSON value); read as columns, only
    that key is decoded: the image dicts are made only when something reads them."""
    values = [True, False, 0, 1, 2.5, 0.0, -0.0, "", "no", [], [0], {}, {"a": 0}, None, 10 ** 30]
    gts = [json.load(open(p)) for p in GT]
    for g in gts:
        for k, img in enumerate(g["images"]):
            img["is_instance_exhaustive"] = values[(k * 7 + len(g["annotations"])) % len(values)]
    paths = []
    for n, g in enumerate(gts):
        paths.append(str(tmp_path / f"gt{n}.json"))
        with open(paths[-1], "w") as f:
            json.dump(g, f)
    ev, _ = quiet(CGF1Evaluator, paths)
    excluded = {img["id"] for g in gts[1:] for img in g["images"] if not img["is_instance_exhaustive"]}
    want = [img["id"] for img in gts[0]["images"] if img["is_instance_exhaustive"] and img["id"] not in excluded]
    assert ev.eval_img_ids == want and all(type(i) is int for i in ev.eval_img_ids)
    quiet(ev.evaluate, DT)
    assert all(gt.columns is not None and gt.columns._images is None for gt in ev._files)
    assert ev._files[1].images == gts[1]["images"]  # (made now, as the file has them)
