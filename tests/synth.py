"""Generated COCO-style data with every case the matching rules care about.

Ground truth: random ellipses, boxes and rings as polygons or RLE, crowd
regions, images without annotations, categories without any ground truth.
Results: jittered copies of ground-truth masks, duplicates, false positives,
tied scores, more detections per image than ``maxDets``.
"""
import copy

import numpy as np
import pycocotools.mask as mask_utils


def _shape_mask(rng, h, w):
    m = np.zeros((h, w), np.uint8)
    kind = rng.integers(0, 4)
    cy, cx = rng.integers(0, h), rng.integers(0, w)
    ry, rx = rng.integers(1, max(2, h // 3)), rng.integers(1, max(2, w // 3))
    yy, xx = np.mgrid[:h, :w]
    if kind == 0:  # ellipse, may cross the border
        m[((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1] = 1
    elif kind == 1:  # box
        m[max(0, cy - ry):cy + ry, max(0, cx - rx):cx + rx] = 1
    elif kind == 2:  # ring (hole)
        r = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2
        m[(r <= 1) & (r >= 0.3)] = 1
    else:  # blob of random cells
        small = (rng.random((6, 6)) < 0.5).astype(np.uint8)
        big = np.kron(small, np.ones((max(1, 2 * ry // 6 + 1), max(1, 2 * rx // 6 + 1)), np.uint8))
        y0, x0 = max(0, cy - ry), max(0, cx - rx)
        big = big[: h - y0, : w - x0]
        m[y0:y0 + big.shape[0], x0:x0 + big.shape[1]] = big
    return m


def _rle(mask):
    r = mask_utils.encode(np.asfortranarray(mask))
    r["counts"] = r["counts"].decode("ascii")
    return r


def _jitter(rng, mask):
    kind = rng.integers(0, 4)
    if kind == 0:
        dy, dx = rng.integers(-3, 4, size=2)
        return np.roll(np.roll(mask, dy, 0), dx, 1)
    if kind == 1:  # thin it out / thicken a little by random pixel flips at the edge
        flip = rng.random(mask.shape) < 0.05
        return (mask ^ flip).astype(np.uint8)
    if kind == 2:
        out = mask.copy()
        ys, xs = np.nonzero(out)
        if len(ys):
            out[ys.min():ys.min() + 2, :] = 0
        return out
    return mask.copy()


def make_dataset(seed=0, num_images=30, num_cats=5, max_size=60, polygons=True):
    """Return (gt_dict, results_list)."""
    rng = np.random.default_rng(seed)
    images, anns, dets = [], [], []
    cats = [{"id": c, "name": f"cat{c}", "supercategory": "x"} for c in range(1, num_cats + 1)]
    # category num_cats never gets ground truth
    aid = 1
    for i in range(1, num_images + 1):
        h, w = int(rng.integers(8, max_size)), int(rng.integers(8, max_size))
        images.append({"id": i, "height": h, "width": w, "file_name": f"{i}.png"})
        n = 0 if i % 7 == 0 else int(rng.integers(1, 6))  # some images without ground truth
        for _ in range(n):
            cat = int(rng.integers(1, num_cats))
            m = _shape_mask(rng, h, w)
            if m.sum() == 0:
                continue
            crowd = int(rng.random() < 0.1)
            if polygons and not crowd and rng.random() < 0.5:
                # a polygon of the mask's box corners: rasterised by pycocotools
                ys, xs = np.nonzero(m)
                x0, y0, x1, y1 = xs.min(), ys.min(), xs.max() + 1, ys.max() + 1
                seg = [[float(x0), float(y0), float(x1), float(y0), float(x1), float(y1), float(x0), float(y1)]]
                m = mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(seg, h, w)))
                if m.sum() == 0:
                    continue
            else:
                seg = _rle(m)
            area = float(m.sum())
            box = [float(v) for v in mask_utils.toBbox(mask_utils.encode(np.asfortranarray(m)))]
            anns.append({"id": aid, "image_id": i, "category_id": cat, "segmentation": seg,
                         "area": area, "bbox": box, "iscrowd": crowd})
            aid += 1
            for _ in range(int(rng.integers(0, 4))):
                jm = _jitter(rng, m)
                if jm.sum() == 0:
                    continue
                c = cat if rng.random() < 0.8 else int(rng.integers(1, num_cats + 1))
                # scores on a coarse grid: plenty of ties
                dets.append({"image_id": i, "category_id": c, "segmentation": _rle(jm),
                             "score": float(rng.integers(0, 10)) / 10})
        for _ in range(int(rng.integers(0, 4))):  # false positives
            m = _shape_mask(rng, h, w)
            if m.sum():
                dets.append({"image_id": i, "category_id": int(rng.integers(1, num_cats + 1)),
                             "segmentation": _rle(m), "score": float(rng.random())})
    # one crowded image: more detections than maxDets=100
    h, w = images[0]["height"], images[0]["width"]
    for _ in range(130):
        m = _shape_mask(rng, h, w)
        if m.sum():
            dets.append({"image_id": 1, "category_id": 1, "segmentation": _rle(m),
                         "score": float(rng.integers(0, 5)) / 5})
    gt = {"images": images, "annotations": anns, "categories": cats}
    return gt, dets


def boxes_only(dets):
    """The same results as box detections (for iouType='bbox')."""
    out = []
    for d in dets:
        box = [float(v) for v in mask_utils.toBbox(d["segmentation"])]
        out.append({"image_id": d["image_id"], "category_id": d["category_id"], "bbox": box,
                    "score": d["score"]})
    return out


def with_boxes(dets, int_boxes=False):
    """The same results, each with the box of its mask (as integers with
    ``int_boxes``), the segmentation dict copied."""
    out = []
    for d in dets:
        box = [float(v) for v in mask_utils.toBbox(d["segmentation"])]
        if int_boxes:
            box = [int(v) for v in box]
        out.append({"image_id": d["image_id"], "category_id": d["category_id"], "bbox": box,
                    "score": d["score"], "segmentation": dict(d["segmentation"])})
    return out


def write_json(tmp_path, name, obj, **dump):
    """``obj`` as JSON (``json.dumps`` options ``dump``) in ``tmp_path / name``; the path."""
    import json

    path = tmp_path / name
    path.write_text(json.dumps(obj, **dump))
    return str(path)


def fresh(obj):
    """Deep copy (evaluators annotate the dicts they are given)."""
    return copy.deepcopy(obj)


def make_lvis_dataset(seed=0, num_images=30):
    """LVIS-style version of :func:`make_dataset`: federated image lists
    (negative and not-exhaustive categories), category frequencies, a few
    ground truths flagged ``ignore``, no crowds."""
    rng = np.random.default_rng(seed + 1000)
    gt, dets = make_dataset(seed=seed, num_images=num_images)
    cat_ids = [c["id"] for c in gt["categories"]]
    for c in gt["categories"]:
        c["frequency"] = "rcf"[c["id"] % 3]
    present = {}
    for a in gt["annotations"]:
        present.setdefault(a["image_id"], set()).add(a["category_id"])
        del a["iscrowd"]
        if rng.random() < 0.05:
            a["ignore"] = 1
    for img in gt["images"]:
        here = present.get(img["id"], set())
        absent = [c for c in cat_ids if c not in here]
        img["neg_category_ids"] = [c for c in absent if rng.random() < 0.5]
        img["not_exhaustive_category_ids"] = [c for c in sorted(here) if rng.random() < 0.3]
    return gt, dets


def assert_same_eval_imgs(ea, eb):
    """Two evalImgs lists entry for entry: same keys, arrays equal with the same dtype."""
    assert len(ea) == len(eb)
    for x, y in zip(ea, eb):
        assert (x is None) == (y is None)
        if x is None:
            continue
        assert x.keys() == y.keys()
        for k in x:
            if isinstance(y[k], np.ndarray):
                assert x[k].dtype == y[k].dtype, k
                np.testing.assert_array_equal(x[k], y[k], err_msg=k)
            else:
                assert x[k] == y[k], k


def same_value(x, y):
    """Equal, with the same types (arrays: same dtype and shape), dict keys of
    the same types in the same order."""
    assert type(x) is type(y), (x, y)
    if isinstance(x, np.ndarray):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)
    elif isinstance(x, dict):
        assert list(x) == list(y)
        assert [type(k) for k in x] == [type(k) for k in y]
        for k in x:
            same_value(x[k], y[k])
    elif isinstance(x, list):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            same_value(u, v)
    else:
        assert x == y or (x != x and y != y)


def assert_same_lvis_index(fast, ref):
    """The dataset, dicts and indices of two lvis objects (ground truth or
    results), types included."""
    same_value(fast.dataset, ref.dataset)
    same_value(fast.anns, ref.anns)
    assert type(fast.img_ann_map) is type(ref.img_ann_map)
    same_value(dict(fast.img_ann_map), dict(ref.img_ann_map))
    same_value(dict(fast.cat_img_map), dict(ref.cat_img_map))
    same_value(fast.imgs, ref.imgs)
    same_value(fast.cats, ref.cats)


def evaluate_lvis(gt, dt, iou_type, params=None, **kwargs):
    """``LVISEval(gt, dt, iou_type, **kwargs)`` with ``params`` set, run."""
    from boundary_api import LVISEval

    ev = LVISEval(gt, dt, iou_type, **kwargs)
    for key, value in (params or {}).items():
        setattr(ev.params, key, value)
    ev.run()
    return ev


def assert_same_evaluation(a, b, full=True):
    """Two evaluations (pycocotools-style ``COCOeval`` or lvis-style
    ``LVISEval``) give the same numbers: summary, eval arrays (dtype included),
    and with ``full`` every evalImgs entry (with the types of its id and score
    lists) and every IoU matrix (type, dtype, shape, values)."""
    lvis_style = hasattr(a, "eval_imgs")
    if lvis_style:
        assert a.get_results() == b.get_results()
        assert list(a.results) == list(b.results)
        assert a.freq_groups == b.freq_groups
        assert a.img_nel == b.img_nel
        keys, imgs_a, imgs_b = ("precision", "recall"), a.eval_imgs, b.eval_imgs
        typed = ("gt_ids", "dt_ids", "dt_scores")
    else:
        np.testing.assert_array_equal(a.stats, b.stats)
        keys, imgs_a, imgs_b = ("precision", "recall", "scores"), a.evalImgs, b.evalImgs
        typed = ("gtIds", "dtIds", "dtScores")
    for key in keys:
        assert a.eval[key].dtype == b.eval[key].dtype, key
        np.testing.assert_array_equal(a.eval[key], b.eval[key], err_msg=key)
    if not full:
        return
    assert_same_eval_imgs(imgs_a, imgs_b)
    for x, y in zip(imgs_a, imgs_b):
        if x is not None:
            for key in typed:
                assert [type(v) for v in x[key]] == [type(v) for v in y[key]], key
    assert list(a.ious) == list(b.ious)
    for key in a.ious:
        x, y = a.ious[key], b.ious[key]
        assert type(x) is type(y), key
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and x.shape == y.shape, key
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y), err_msg=str(key))
