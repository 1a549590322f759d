"""boundary_api.LVISEval: the reference's golden numbers, lvis' own rules and
loops, objects vs paths, the detection cap, numpy 2."""
import copy
import json
import types

import lvis
import numpy as np
import pycocotools.mask as mask_utils
import pytest

from boundary_api import LVIS, LVISEval, LVISResults
from boundary_api.instance._checks import SuspectInputWarning
from conftest import LVIS_DT, LVIS_GT, golden_cases


def load(path):
    with open(path) as f:
        return json.load(f)


@pytest.mark.parametrize("case", golden_cases("instance_eval.json", "lvis"), ids=lambda c: c["name"])
def test_golden_reference_numbers(case):
    ev = LVISEval(case["gt"], case["dt"], iou_type=case["iou_type"], max_dets=case["max_dets"],
                  dilation_ratio=case.get("dilation_ratio", 0.02))
    ev.run()
    got = ev.get_results()
    assert list(got) == list(case["results"])
    np.testing.assert_allclose([got[k] for k in case["results"]], list(case["results"].values()),
                               rtol=0, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("iou", ["boundary", "segm", "bbox"])
def test_fast_path_equals_lvis_loops(iou):
    fast = LVISEval(LVIS_GT, LVIS_DT, iou_type=iou)
    slow = LVISEval(LVIS_GT, LVIS_DT, iou_type=iou, use_fast_impl=False)
    fast.run()
    slow.run()
    for k in ("precision", "recall"):
        np.testing.assert_array_equal(fast.eval[k], slow.eval[k])
    assert fast.get_results() == slow.get_results()
    for x, y in zip(fast.eval_imgs, slow.eval_imgs):
        assert (x is None) == (y is None)
        if x is None:
            continue
        for key in y:
            if isinstance(y[key], np.ndarray):
                assert x[key].dtype == y[key].dtype
                np.testing.assert_array_equal(x[key], y[key])
            else:
                assert x[key] == y[key]


def test_objects_and_paths_give_the_same_numbers():
    by_path = LVISEval(LVIS_GT, LVIS_DT, iou_type="boundary")
    by_path.run()
    gt = LVIS(LVIS_GT)
    dt = LVISResults(gt, LVIS_DT)
    by_obj = LVISEval(gt, dt, iou_type="boundary")
    by_obj.run()
    assert by_obj.get_results() == by_path.get_results()
    # plain lvis objects work as well
    plain_gt = lvis.LVIS(LVIS_GT)
    plain = LVISEval(plain_gt, lvis.LVISResults(plain_gt, LVIS_DT), iou_type="boundary")
    plain.run()
    assert plain.get_results() == by_path.get_results()
    # and a list of results
    listed = LVISEval(LVIS_GT, load(LVIS_DT), iou_type="boundary")
    listed.run()
    assert listed.get_results() == by_path.get_results()


@pytest.mark.slow
def test_numpy2_without_global_patching():
    slow = LVISEval(LVIS_GT, LVIS_DT, iou_type="segm", use_fast_impl=False)
    slow.run()
    assert slow.get_results()["AP"] > 0
    assert lvis.eval.np is np
    if np.lib.NumpyVersion(np.__version__) >= "1.24.0":
        assert "float" not in np.__dict__


@pytest.mark.slow
def test_max_dets_caps_detections_per_image():
    dt = load(LVIS_DT)
    counts = np.bincount([d["image_id"] for d in dt])
    cap = int(counts.max()) - 20
    assert cap > 5
    capped = LVISEval(LVIS_GT, dt, iou_type="boundary", max_dets=cap)
    assert max(len(v) for v in capped.lvis_dt.img_ann_map.values()) == cap
    capped.run()
    full = LVISEval(LVIS_GT, load(LVIS_DT), iou_type="boundary", max_dets=-1)
    full.run()
    assert capped.params.max_dets == cap
    assert capped.get_results()[f"AR@{cap}"] != full.get_results()["AR@-1"]
    slow = LVISEval(LVIS_GT, load(LVIS_DT), iou_type="boundary", max_dets=cap, use_fast_impl=False)
    slow.run()
    assert slow.get_results() == capped.get_results()


# ---------------------------------------------------------------- federated rules
def _square(h, w, y, x, s):
    m = np.zeros((h, w), np.uint8)
    m[y:y + s, x:x + s] = 1
    r = mask_utils.encode(np.asfortranarray(m))
    return {"size": [h, w], "counts": r["counts"].decode()}


def _tiny_lvis(neg2=(), nel1=()):
    """Two 40x40 images; category 1 has one object in image 1."""
    gt = {
        "images": [
            {"id": 1, "height": 40, "width": 40, "neg_category_ids": [], "not_exhaustive_category_ids": list(nel1)},
            {"id": 2, "height": 40, "width": 40, "neg_category_ids": list(neg2), "not_exhaustive_category_ids": []},
        ],
        "categories": [{"id": 1, "name": "a", "frequency": "f"}, {"id": 2, "name": "b", "frequency": "r"}],
        "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "segmentation": _square(40, 40, 5, 5, 20),
                         "area": 400.0, "bbox": [5, 5, 20, 20]},
                        {"id": 2, "image_id": 2, "category_id": 2, "segmentation": _square(40, 40, 2, 2, 10),
                         "area": 100.0, "bbox": [2, 2, 10, 10]}],
    }
    return gt


def _ap_cat1(gt, dets, iou="boundary"):
    out = []
    for fast in (True, False):
        ev = LVISEval(LVIS.from_dataset(copy.deepcopy(gt)), copy.deepcopy(dets), iou_type=iou,
                      use_fast_impl=fast)
        ev.run()
        p = ev.eval["precision"][:, :, 0, 0]
        out.append(float(np.mean(p[p > -1])))
    assert out[0] == out[1]
    return out[0]


# precision at full recall with tp hits and fp false positives, as lvis computes it
def _pr(tp, fp):
    return tp / (fp + tp + np.spacing(1))


def test_negative_categories_count_false_positives():
    hit = {"image_id": 1, "category_id": 1, "segmentation": _square(40, 40, 5, 5, 20), "score": 0.9}
    fp_img2 = {"image_id": 2, "category_id": 1, "segmentation": _square(40, 40, 10, 10, 15), "score": 0.95}
    # category 1 unknown for image 2: the detection there is not judged
    assert _ap_cat1(_tiny_lvis(), [hit, fp_img2]) == _pr(1, 0)
    # category 1 verified absent from image 2: a false positive ranked first
    assert _ap_cat1(_tiny_lvis(neg2=[1]), [hit, fp_img2]) == _pr(1, 1)


def test_not_exhaustive_categories_ignore_unmatched_detections():
    hit = {"image_id": 1, "category_id": 1, "segmentation": _square(40, 40, 5, 5, 20), "score": 0.9}
    extra = {"image_id": 1, "category_id": 1, "segmentation": _square(40, 40, 28, 28, 10), "score": 0.95}
    assert _ap_cat1(_tiny_lvis(), [hit, extra]) == _pr(1, 1)
    assert _ap_cat1(_tiny_lvis(nel1=[1]), [hit, extra]) == _pr(1, 0)


def test_bad_inputs(tmp_path):
    with pytest.raises(ValueError, match="not found"):
        LVISEval(str(tmp_path / "missing.json"), LVIS_DT)
    coco_like = {"images": [{"id": 1, "height": 5, "width": 5}], "annotations": [], "categories": []}
    p = tmp_path / "coco.json"
    p.write_text(json.dumps(coco_like))
    with pytest.raises(ValueError, match="neg_category_ids"):
        LVIS(str(p), strict=True)
    with pytest.warns(SuspectInputWarning, match="neg_category_ids"):  # lvis loads it
        LVIS(str(p))
    dt = load(LVIS_DT)
    dt[3]["image_id"] = 123456789
    before = copy.deepcopy(dt)
    with pytest.raises(ValueError, match="123456789"):
        LVISEval(LVIS_GT, dt, iou_type="boundary")
    assert dt == before
    with pytest.raises(ValueError, match="iou_type"):
        LVISEval(LVIS_GT, LVIS_DT, iou_type="keypoints")
    with pytest.raises(ValueError, match="dilation_ratio"):
        LVISEval(LVIS_GT, LVIS_DT, iou_type="boundary", dilation_ratio=float("nan"))


@pytest.mark.parametrize("iou", ["boundary", "segm", "bbox"])
@pytest.mark.parametrize("seed", [0, 1])
def test_fast_path_equals_lvis_loops_on_generated_data(iou, seed):
    from synth import boxes_only, make_lvis_dataset

    gt, dt = make_lvis_dataset(seed=seed)
    if iou == "bbox":
        dt = boxes_only(dt)
    evs = []
    for fast in (True, False):
        ev = LVISEval(LVIS.from_dataset(copy.deepcopy(gt)), copy.deepcopy(dt), iou_type=iou,
                      max_dets=50, use_fast_impl=fast)
        ev.run()
        evs.append(ev)
    for k in ("precision", "recall"):
        np.testing.assert_array_equal(evs[0].eval[k], evs[1].eval[k])
    assert evs[0].get_results() == evs[1].get_results()
    assert evs[0].get_results()["AP"] > 0


@pytest.mark.slow
def test_segmentation_results_are_checked_once_box_results_where_masks_are_used():
    gt = LVIS(LVIS_GT)
    # segmentation results: checked on loading, trusted by the cache after
    assert LVISResults(gt, LVIS_DT)._rles_checked
    assert LVISResults(gt, load(LVIS_DT))._rles_checked
    # results with boxes: their masks are checked when a mask evaluation uses them
    res = load(LVIS_DT)
    for r in res:
        r["bbox"] = [float(v) for v in mask_utils.toBbox(r["segmentation"])]
    bad = next(r for r in res if r["segmentation"]["counts"] != "0000")
    bad["segmentation"]["counts"] = "0000"
    dt = LVISResults(gt, copy.deepcopy(res))
    assert not dt._rles_checked
    ev = LVISEval(gt, dt, iou_type="bbox")
    ev.run()  # box AP never reads the masks
    plain_gt = lvis.LVIS(LVIS_GT)
    ref = LVISEval(plain_gt, lvis.LVISResults(plain_gt, copy.deepcopy(res)), iou_type="bbox")
    ref.run()
    assert ev.get_results() == ref.get_results()
    for iou in ("segm", "boundary"):
        with pytest.raises(ValueError, match=r"^result id \d+ \(image \d+\): segmentation counts does not cover"):
            LVISEval(gt, LVISResults(gt, copy.deepcopy(res), strict=True), iou_type=iou).run()
    with pytest.raises(ValueError, match=r"^result id \d+ \(image \d+\): segmentation counts does not cover"):
        LVISEval(gt, LVISResults(gt, copy.deepcopy(res)), iou_type="boundary").run()


def test_mask_ap_of_box_results_with_a_bad_mask_is_lvis(monkeypatch):
    """lvis evaluates a corrupted RLE string as it decodes it: without
    strict, a warning naming the result and lvis' numbers."""
    monkeypatch.setattr(np, "float", float, raising=False)  # lvis 0.5.3 on numpy >= 1.24
    res = load(LVIS_DT)[:400]
    for r in res:
        r["bbox"] = [float(v) for v in mask_utils.toBbox(r["segmentation"])]
    res[7]["segmentation"]["counts"] = "0000"
    gt = LVIS(LVIS_GT)
    ev = LVISEval(gt, LVISResults(gt, copy.deepcopy(res)), iou_type="segm")
    with pytest.warns(SuspectInputWarning, match=r"^result id \d+ \(image \d+\): segmentation counts does not"):
        ev.run()
    plain_gt = lvis.LVIS(LVIS_GT)
    ref = lvis.LVISEval(plain_gt, lvis.LVISResults(plain_gt, copy.deepcopy(res)), iou_type="segm")
    ref.run()
    assert ev.get_results() == ref.get_results()
    np.testing.assert_array_equal(ev.eval["precision"], ref.eval["precision"])


@pytest.mark.slow
def test_evaluation_imports_neither_matplotlib_nor_opencv_and_lvis_stays_whole():
    # lvis/__init__ imports lvis.vis (matplotlib.pyplot, cv2: ~0.7 s) which no
    # evaluation uses; boundary_api defers it, and the package stays complete
    import subprocess
    import sys

    code = """
import logging, sys
from boundary_api import LVIS, LVISEval, LVISResults
import boundary_api.masks
assert not {"matplotlib", "cv2", "lvis.vis"} & set(sys.modules), sorted(sys.modules)
import lvis
assert logging.getLogger().handlers  # lvis' own logging set-up still ran
assert lvis.__all__ == ["LVIS", "LVISResults", "LVISEval", "LVISVis"]
assert LVISResults.__mro__[2] is lvis.LVISResults and lvis.LVIS is lvis.lvis.LVIS
from lvis import LVISVis
import lvis.vis
assert LVISVis is lvis.vis.LVISVis is lvis.LVISVis and lvis.vis.__file__.endswith("vis.py")
assert "matplotlib.pyplot" in sys.modules
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
    # lvis imported first: used as it is
    code = "import lvis, sys; from boundary_api import LVISEval; assert lvis.LVISVis and 'lvis.vis' in sys.modules"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr


_SUMMARIZE_ARGS = [("ap",), ("ap", 0.5), ("ap", 0.75), ("ap", None, "small"), ("ap", None, "medium"),
                   ("ap", None, "large"), ("ap", None, "all", 0), ("ap", None, "all", 1), ("ap", None, "all", 2),
                   ("ar",), ("ar", None, "small"), ("ar", None, "medium"), ("ar", None, "large"),
                   ("ap", 0.33), ("ar", 0.9), ("ar", 0.5, "large"), ("ap", 0.5, "small", 1), ("ap", None, "nope"),
                   ("ar", None, "nope")]


def _same_number(a, b):
    return type(a) is type(b) and (a == b or (a != a and b != b))


def _outcome(fn, *args):
    """fn(*args), or the class and message of what it raised."""
    try:
        return fn(*args)
    except Exception as exc:  # noqa: BLE001 - compared with the original's
        return (type(exc), str(exc))


@pytest.mark.parametrize("area_lbl", [None, ["all", "small", "small", "large"]])
def test_summarize_takes_lvis_values_in_lvis_order(area_lbl):
    """_summarize (a view per area range, one selection) gives lvis' own
    _summarize's float bit for bit, on the accumulated arrays, on edited ones
    (-1 everywhere, NaN) and with repeated area labels (lvis' fancy-indexing
    path); summarize() gives lvis' results."""
    import lvis.eval as lvis_eval

    ev = LVISEval(LVIS_GT, LVIS_DT, iou_type="bbox")
    ev.evaluate()
    ev.accumulate()
    if area_lbl is not None:
        ev.params.area_rng_lbl = area_lbl
    edits = [lambda e: None,
             lambda e: e.eval["precision"].__setitem__((slice(None), slice(None), 0), -1.0),
             lambda e: e.eval["precision"].__setitem__((0, 3, 1, 0), np.nan),
             lambda e: e.eval.__setitem__("precision", np.full_like(e.eval["precision"], -1.0)),
             lambda e: e.eval.__setitem__("recall", e.eval["recall"][:, :, ::-1].copy())]
    for edit in edits:
        edit(ev)
        want = [_outcome(lvis_eval.LVISEval._summarize, ev, *a) for a in _SUMMARIZE_ARGS]
        got = [_outcome(ev._summarize, *a) for a in _SUMMARIZE_ARGS]
        for a, w, g in zip(_SUMMARIZE_ARGS, want, got):
            if isinstance(w, tuple):
                assert g == w, (a, w, g)
            else:
                assert _same_number(g, w), (a, w, g)
    if area_lbl is not None:
        return  # lvis' summarize itself raises on repeated labels (checked above, call by call)
    ev.summarize()
    mine = list(ev.results.items())
    ev.results.clear()
    ev._summarize = types.MethodType(lvis_eval.LVISEval._summarize, ev)  # lvis' own, every call
    lvis_eval.LVISEval.summarize(ev)
    assert repr(list(ev.results.items())) == repr(mine)
