"""The video drop-ins behave like the originals beyond their numbers: the DAVIS
reader's attributes and arrays, YTVOS' index and lookups, YTVOSeval's parameters,
attributes, pickling and subclass overrides, and strict / suspect input."""
import contextlib
import copy
import io
import json
import pickle
import warnings

import numpy as np
import pytest
from pycocotools import mask as mask_util

from boundary_api.instance._checks import SuspectInputWarning
from boundary_api.video import DAVIS, DAVISEvaluation, Params, YTVOS, YTVOSeval, synthetic, synthetic_vis


@pytest.fixture(scope="module")
def davis(tmp_path_factory):
    return synthetic.write_demo("davis", tmp_path_factory.mktemp("davis") / "d")


@pytest.fixture(scope="module")
def vis(tmp_path_factory):
    return synthetic_vis.write_demo(tmp_path_factory.mktemp("vis") / "v")


def _quiet():
    return contextlib.redirect_stdout(io.StringIO())


# ------------------------------------------------------------------ DAVIS
def test_davis_reader_lists_as_the_original(davis):
    d = DAVIS(davis["davis_root"], task="semi-supervised", subset="val")
    assert list(d.get_sequences()) == ["bear", "kite", "car"]  # ImageSets order
    seq = d.sequences["bear"]
    assert len(seq["images"]) == len(seq["masks"]) == 24
    assert seq["masks"] == sorted(seq["masks"]) and seq["masks"][0].endswith("00000.png")
    masks, void, ids = d.get_all_masks("bear", True)
    assert masks.shape == (2, 24, 120, 160) and masks.dtype == bool
    assert void.shape == (24, 120, 160) and ids[:2] == ["00000", "00001"]
    frames = list(d.get_frames("car"))
    assert len(frames) == 24 and frames[0][1].shape == (120, 160)
    assert DAVIS.VOID_LABEL == 255 and DAVIS.TASKS == ["semi-supervised", "unsupervised"]


@pytest.mark.parametrize("kw, error", [({"subset": "nope"}, ValueError), ({"task": "semisupervised"}, ValueError)])
def test_davis_reader_refuses_as_the_original(davis, kw, error):
    args = {"root": davis["davis_root"], "task": "semi-supervised", "subset": "val"}
    args.update(kw)
    with pytest.raises(error):
        DAVIS(**args)


def test_davis_evaluation_keeps_the_dataset_attribute(davis):
    ev = DAVISEvaluation(davis["davis_root"], "unsupervised", "val", sequences=["car"])
    assert ev.davis_root == davis["davis_root"] and ev.task == "unsupervised"
    assert list(ev.dataset.get_sequences()) == ["car"]
    res = ev.evaluate(davis["results"], metric="J")
    assert list(res) == ["J"] and list(res["J"]["M_per_object"]) == ["car_1"]


# ------------------------------------------------------------------ YTVOS
def _ytvos(path):
    with _quiet():
        return YTVOS(path)


def test_ytvos_index_and_lookups(vis):
    gt = _ytvos(vis["gt"])
    doc = json.load(open(vis["gt"]))
    assert sorted(gt.getVidIds()) == sorted(v["id"] for v in doc["videos"])
    assert gt.getCatIds() == [c["id"] for c in doc["categories"]]
    cat = doc["categories"][0]
    assert gt.getCatIds(catNms=[cat["name"]]) == [cat["id"]]
    vid = doc["annotations"][0]["video_id"]
    ids = gt.getAnnIds(vidIds=[vid])
    assert ids == [a["id"] for a in doc["annotations"] if a["video_id"] == vid]
    assert gt.loadAnns(ids[0])[0]["id"] == ids[0]
    assert gt.loadVids(vid)[0]["id"] == vid
    assert gt.loadCats(cat["id"])[0] == cat
    assert set(gt.getVidIds(catIds=[cat["id"]])) == set(gt.catToVids[cat["id"]])
    ann = gt.loadAnns(ids[0])[0]
    f = next(i for i, s in enumerate(ann["segmentations"]) if s)
    rle = gt.annToRLE(ann, f)
    m = gt.annToMask(ann, f)
    assert m.shape == tuple(rle["size"]) and int(m.sum()) == int(mask_util.area(rle))


def test_load_res_adds_the_originals_fields(vis):
    gt = _ytvos(vis["gt"])
    results = json.load(open(vis["dt"]))
    with _quiet():
        dt = gt.loadRes(results)
    ann = dt.anns[1]
    assert ann["id"] == 1 and ann["iscrowd"] == 0
    present = [s for s in ann["segmentations"] if s]
    assert all(type(a).__name__ == "uint32" for a in ann["areas"] if a is not None)
    assert [int(a) for a in ann["areas"] if a is not None] == [int(mask_util.area(s)) for s in present]
    assert all(isinstance(b, np.ndarray) and b.shape == (4,) for b in ann["bboxes"] if b is not None)
    assert results[0] is dt.dataset["annotations"][0]  # the given dicts, annotated in place as there


def test_params_are_the_originals():
    p = Params("segm")
    assert p.areaRng == [[0, 1e10], [0, 128 ** 2], [128 ** 2, 256 ** 2], [256 ** 2, 1e10]]
    assert p.areaRngLbl == ["all", "small", "medium", "large"] and p.maxDets == [1, 10, 100]
    assert len(p.iouThrs) == 10 and len(p.recThrs) == 101 and p.useSegm is None
    p.vidIds = [3, 4]
    assert p.imgIds == [3, 4]
    with pytest.raises(Exception, match="iouType not supported"):
        Params("nope")


def _evaluated(vis, cls=YTVOSeval, iou_type="segm", **kw):
    gt = _ytvos(vis["gt"])
    with _quiet():
        ev = cls(gt, gt.loadRes(vis["dt"]), iou_type, **kw)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


def test_evaluator_attributes_and_pickle(vis):
    ev = _evaluated(vis, iou_type="boundary")
    assert ev.params.iouType == "boundary" and ev.params.vidIds == sorted(ev.params.vidIds)
    assert ev.eval["counts"] == [10, 101, len(ev.params.catIds), 4, 3]
    assert set(vars(ev)) >= {"evalImgs", "ious", "_gts", "_dts", "eval", "stats", "params", "_paramsEval"}
    assert all(k in ev.evalImgs[0] for k in ("video_id", "category_id", "aRng", "dtMatches")) or \
        ev.evalImgs[0] is None
    copied = pickle.loads(pickle.dumps(ev))
    with _quiet():
        copied.accumulate()
        copied.summarize()
    assert np.array_equal(copied.stats, ev.stats)
    assert np.array_equal(copy.deepcopy(ev).stats, ev.stats)


def test_edited_eval_imgs_are_accumulated(vis):
    """Reading evalImgs before accumulate() makes accumulate() the original's loops on them."""
    ev = _evaluated(vis)
    gt = _ytvos(vis["gt"])
    with _quiet():
        again = YTVOSeval(gt, gt.loadRes(vis["dt"]), "segm")
        again.evaluate()
        for e in again.evalImgs:
            if e is not None:
                e["dtScores"] = [0.0] * len(e["dtScores"])
        again.accumulate()
        again.summarize()
    assert not np.array_equal(again.eval["scores"], ev.eval["scores"])


def test_overridden_evaluate_vid_is_called(vis):
    calls = []

    class Counting(YTVOSeval):
        def evaluateVid(self, vidId, catId, aRng, maxDet):
            calls.append(vidId)
            return super().evaluateVid(vidId, catId, aRng, maxDet)

    ev = _evaluated(vis, Counting)
    assert calls and np.array_equal(ev.stats, _evaluated(vis).stats)


def test_overridden_prepare_is_called(vis):
    class NoCrowd(YTVOSeval):
        def _prepare(self):
            super()._prepare()
            for gts in self._gts.values():
                for g in gts:
                    g["ignore"] = 0

    assert np.array_equal(_evaluated(vis, NoCrowd).stats, _evaluated(vis).stats)


def test_use_cats_off_and_max_dets(vis):
    gt = _ytvos(vis["gt"])
    with _quiet():
        ev = YTVOSeval(gt, gt.loadRes(vis["dt"]), "segm")
        ev.params.useCats = 0
        ev.params.maxDets = [1, 5, 50]
        ev.evaluate()
        ev.accumulate()
        with pytest.warns(UserWarning, match="has no 100"):
            ev.summarize()
    assert ev.stats[0] == -1  # (the original's first line is read at maxDets=100)
    assert list(ev.ious)[0][1] == -1 and ev.eval["counts"][2] == 1


def test_suspect_results_warned_and_refused_with_strict(vis, tmp_path):
    results = json.load(open(vis["dt"]))
    results[0]["segmentations"] = results[0]["segmentations"][:-1]
    gt = _ytvos(vis["gt"])
    with _quiet(), pytest.warns(SuspectInputWarning, match="segmentations for a video of"):
        gt.loadRes(copy.deepcopy(results))
    with _quiet(), pytest.raises(ValueError, match="strict"):
        gt.loadRes(copy.deepcopy(results), strict=True)


def test_bbox_is_refused_clearly(vis):
    gt = _ytvos(vis["gt"])
    with _quiet():
        ev = YTVOSeval(gt, gt.loadRes(vis["dt"]), "bbox")
        with pytest.raises(ValueError, match="bbox"):
            ev.evaluate()


def test_no_warning_on_valid_input(vis):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _evaluated(vis, iou_type="boundary")
