"""Bootstrap intervals and the paired comparison (issue 30): the accumulation of a
resampled image multiset equals a plain evaluation of the dataset in which the
drawn images are repeated, for COCO and LVIS, boundary, segm and bbox."""
import contextlib
import copy
import io
import json

import numpy as np
import pytest

from boundary_api import COCO, LVIS, COCOeval, LVISEval, LVISResults
from boundary_api.diagnostics import bootstrap as bs
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT


def load(path):
    with open(path) as f:
        return json.load(f)


def duplicated(gt_data, dts, img_ids, counts):
    """The ground truth and results with image ``img_ids[i]`` repeated
    ``counts[i]`` times, copies next to one another in the image order."""
    by_img, dt_by_img = {}, {}
    for a in gt_data["annotations"]:
        by_img.setdefault(a["image_id"], []).append(a)
    for d in dts:
        dt_by_img.setdefault(d["image_id"], []).append(d)
    images = {im["id"]: im for im in gt_data["images"]}
    out = {k: v for k, v in gt_data.items() if k not in ("images", "annotations")}
    out["images"], out["annotations"] = [], []
    new_dts = []
    nid = aid = 0
    for i, img in enumerate(img_ids):
        for _ in range(int(counts[i])):
            nid += 1
            im = dict(images[img], id=nid)
            out["images"].append(im)
            for a in by_img.get(img, []):
                aid += 1
                out["annotations"].append(dict(copy.deepcopy(a), id=aid, image_id=nid))
            for d in dt_by_img.get(img, []):
                d = dict(copy.deepcopy(d), image_id=nid)
                d.pop("id", None)
                new_dts.append(d)
    return out, new_dts


def coco_eval(gt_data, dts, iou_type):
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO.from_dataset(copy.deepcopy(gt_data))
        ev = COCOeval(gt, gt.loadRes(copy.deepcopy(dts)), iou_type)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return ev


def lvis_eval(gt_data, dts, iou_type):
    gt = LVIS.from_dataset(copy.deepcopy(gt_data))
    ev = LVISEval(gt, LVISResults(gt, copy.deepcopy(dts)), iou_type=iou_type)
    ev.run()
    return ev


def tied(dts):
    """The results with scores rounded to one decimal: many ties, within and across images."""
    return [dict(d, score=round(d["score"], 1)) for d in dts]


@pytest.mark.parametrize("ties", [False, True], ids=["scores", "tied-scores"])
@pytest.mark.parametrize("iou_type", ["boundary", "segm", "bbox"])
def test_coco_resample_equals_the_duplicated_dataset(iou_type, ties):
    gt_data, dts = load(COCO_GT), load(COCO_DT)
    if ties:
        dts = tied(dts)
    ev = coco_eval(gt_data, dts, iou_type)
    streams = bs._Streams(ev)
    counts = bs.draw_counts(len(streams.img_ids), 2, seed=3)
    got = streams.run(counts)
    # the identity multiset is the plain evaluation
    np.testing.assert_allclose(streams.run(np.ones((1, len(streams.img_ids))))[0], ev.stats, rtol=0, atol=1e-12)
    for b in range(2):
        assert counts[b].max() > 1 and (counts[b] == 0).any()
        g2, d2 = duplicated(gt_data, dts, streams.img_ids, counts[b])
        plain = coco_eval(g2, d2, iou_type).stats
        np.testing.assert_allclose(np.where(np.isnan(got[b]), -1, got[b]), plain, rtol=0, atol=1e-12)


@pytest.mark.slow
@pytest.mark.parametrize("ties", [False, True], ids=["scores", "tied-scores"])
@pytest.mark.parametrize("iou_type", ["boundary", "segm", "bbox"])
def test_lvis_resample_equals_the_duplicated_dataset(iou_type, ties):
    gt_data, dts = load(LVIS_GT), load(LVIS_DT)
    if ties:
        dts = tied(dts)
    ev = lvis_eval(gt_data, dts, iou_type)
    streams = bs._Streams(ev)
    plain0 = ev.get_results()
    np.testing.assert_allclose(streams.run(np.ones((1, len(streams.img_ids))))[0], list(plain0.values()),
                               rtol=0, atol=1e-12)
    counts = bs.draw_counts(len(streams.img_ids), 1, seed=5)
    got = streams.run(counts)[0]
    g2, d2 = duplicated(gt_data, dts, streams.img_ids, counts[0])
    plain = lvis_eval(g2, d2, iou_type).get_results()
    np.testing.assert_allclose(np.where(np.isnan(got), -1, got), list(plain.values()), rtol=0, atol=1e-12)


def test_hand_computed_case():
    """Two images, one category: image 1 has a hit (0.9) and a miss (0.8), image 2
    a miss (0.7) and one object not found.  Drawing image 1 twice gives AP50
    (101-point) = 1.0 precision up to recall 2/2: 1.0; drawing image 2 twice gives 0."""
    sq = lambda x, y: [[x, y, x + 10, y, x + 10, y + 10, x, y + 10]]
    gt_data = {"images": [{"id": 1, "width": 50, "height": 50}, {"id": 2, "width": 50, "height": 50}],
               "categories": [{"id": 1, "name": "a"}],
               "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "segmentation": sq(0, 0), "area": 100,
                                "bbox": [0, 0, 10, 10], "iscrowd": 0},
                               {"id": 2, "image_id": 2, "category_id": 1, "segmentation": sq(0, 0), "area": 100,
                                "bbox": [0, 0, 10, 10], "iscrowd": 0}]}
    dts = [{"image_id": 1, "category_id": 1, "bbox": [0, 0, 10, 10], "score": 0.9},
           {"image_id": 1, "category_id": 1, "bbox": [30, 30, 10, 10], "score": 0.8},
           {"image_id": 2, "category_id": 1, "bbox": [30, 30, 10, 10], "score": 0.7}]
    ev = coco_eval(gt_data, dts, "bbox")
    streams = bs._Streams(ev)
    got = streams.run(np.array([[2, 0], [0, 2], [1, 1]]))
    ap50 = streams.heads.index(next(h for h in streams.heads if h.name == "AP50"))
    assert got[0, ap50] == pytest.approx(1.0, abs=1e-12)
    assert got[1, ap50] == 0.0
    # plain: hit (p=1, r=.5), miss, miss: AP50 = 51 thresholds at 1.0 / 101
    assert got[2, ap50] == pytest.approx(51 / 101, abs=1e-12)
    assert ev.stats[1] == pytest.approx(51 / 101, abs=1e-12)


def test_bootstrap_is_seeded_and_brackets_the_value():
    ev = coco_eval(load(COCO_GT), load(COCO_DT), "boundary")
    a = bs.bootstrap(ev, resamples=200, seed=7)
    b = bs.bootstrap(ev, resamples=200, seed=7)
    c = bs.bootstrap(ev, resamples=200, seed=8)
    np.testing.assert_array_equal(a.samples, b.samples)
    assert not np.array_equal(a.samples, c.samples)
    assert a.names == ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]
    assert a.samples.shape == (200, 12)
    for j, name in enumerate(a.names):
        assert a[name]["value"] == pytest.approx(ev.stats[j], abs=1e-15)
        lo, hi = a[name]["ci"]
        assert lo <= hi and a[name]["std"] > 0
    assert a["AP"]["ci"][0] < a["AP"]["value"] < a["AP"]["ci"][1]
    # threads do not change the numbers
    one = bs.bootstrap(ev, resamples=50, seed=1, num_threads=1)
    two = bs.bootstrap(ev, resamples=50, seed=1, num_threads=2)
    np.testing.assert_array_equal(one.samples, two.samples)


def test_compare_difference_is_that_of_the_plain_evaluations():
    gt_data, dts = load(COCO_GT), load(COCO_DT)
    worse = [dict(d, score=d["score"] * (0.5 if i % 3 == 0 else 1.0)) for i, d in enumerate(dts)]
    ea, eb = coco_eval(gt_data, dts, "boundary"), coco_eval(gt_data, worse, "boundary")
    r = bs.compare(ea, eb, resamples=300, seed=0)
    for j, name in enumerate(r.names):
        assert r[name]["difference"] == ea.stats[j] - eb.stats[j]
        assert r[name]["a"] == ea.stats[j] and r[name]["b"] == eb.stats[j]
        assert 0 < r[name]["p_value"] <= 1
        lo, hi = r[name]["ci"]
        assert r[name]["within_noise"] == (lo <= 0 <= hi)
    # a result set against itself: no difference, within noise, p = 1
    same = bs.compare(ea, ea, resamples=50, seed=0)
    assert all(same[n]["difference"] == 0.0 and same[n]["within_noise"] and same[n]["p_value"] == 1.0
               for n in same.names)
    lines = bs.describe(r)
    assert lines[0].startswith("metric") and len(lines) == 13
    assert any("within noise" in x or "beyond noise" in x for x in lines[1:])


def test_refusals():
    ev = coco_eval(load(COCO_GT), load(COCO_DT), "segm")
    for bad in (0, -3, 1.5, True):
        with pytest.raises(ValueError, match="resamples"):
            bs.bootstrap(ev, resamples=bad)
    with pytest.raises(ValueError, match="confidence"):
        bs.bootstrap(ev, resamples=10, confidence=1.0)
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        slow = COCOeval(gt, gt.loadRes(COCO_DT), "segm", use_fast_impl=False)
        slow.evaluate()
    with pytest.raises(ValueError, match="native"):
        bs.bootstrap(slow, resamples=10)
    with pytest.raises(TypeError):
        bs.bootstrap(object(), resamples=10)
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        part = COCOeval(gt, gt.loadRes(COCO_DT), "segm")
        part.params.imgIds = sorted(gt.getImgIds())[:50]
        part.evaluate()
    with pytest.raises(ValueError, match="different images"):
        bs.compare(ev, part, resamples=10)
    lv = lvis_eval(load(LVIS_GT), load(LVIS_DT), "bbox")
    with pytest.raises(ValueError, match="COCO evaluation with an LVIS"):
        bs.compare(ev, lv, resamples=10)
