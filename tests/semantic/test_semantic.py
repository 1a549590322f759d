"""boundary_api.semantic: mask and boundary numbers equal the plain NumPy oracle
(boundary_api.semantic.reference: mmsegmentation's IoUMetric definitions for the mask part,
boundary_api.masks.reference.mask_to_boundary per class for the boundary part), on generated
maps with ignore regions, many touching classes, thin structures and classes present in only
one map; hypothesis-generated maps; bad input."""
import json
import math
import os

import cv2
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from PIL import Image

from boundary_api.masks.boundary import dilation_pixels
from boundary_api.semantic import SemanticEvaluator, evaluate_folders, pair_label_maps, read_label_map
from boundary_api.semantic import reference as ref
from semantic_maps import perturb, random_gt

# ratios from 0 are swept on purpose: the warning that 0 gives d = 1, not an empty
# boundary, is asserted by tests/masks/test_zero_ratio.py
pytestmark = pytest.mark.filterwarnings("ignore:dilation_ratio 0 gives the thinnest boundary")

SUMS = ("intersection", "union", "gt_area", "pred_area", "boundary_intersection", "boundary_union")
MEANS = ("mIoU", "mBIoU", "aAcc", "mAcc", "fwIoU")


def same_float(a, b, tol=1e-12):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol


def assert_matches_oracle(res, want):
    for k in SUMS:
        np.testing.assert_array_equal(res[k], want[k], err_msg=k)
    for k in ("IoU", "BoundaryIoU", "Acc"):
        assert len(res[k]) == len(want[k])
        for c, (a, b) in enumerate(zip(res[k], want[k])):
            assert same_float(float(a), b), (k, c, a, b)
    for k in MEANS:
        assert same_float(res[k], want[k]), (k, res[k], want[k])


def evaluate(pairs, n, ignore=255, ratio=0.02, **kw):
    ev = SemanticEvaluator(n, ignore_index=ignore, dilation_ratio=ratio, **kw)
    for g, p in pairs:
        ev.process(g, p)
    return ev.evaluate()


def dataset(seed, count, n, sizes=((48, 96), (37, 53), (64, 64))):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        h, w = sizes[i % len(sizes)]
        g = random_gt(rng, h, w, n)
        out.append((g, perturb(rng, g, n)))
    return out


# ---------------------------------------------------------------------------
# exactness
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("seed,n,ratio", [(0, 19, 0.02), (1, 5, 0.02), (2, 19, 0.005), (3, 40, 0.05),
                                          (4, 2, 0.0)])
def test_generated_maps_equal_the_oracle(seed, n, ratio):
    pairs = dataset(seed, 6, n)
    res = evaluate(pairs, n, ratio=ratio)
    want = ref.evaluate_pairs(pairs, n, 255, ratio)
    assert_matches_oracle(res, want)
    assert res["num_images"] == 6
    # the data exercise what they should: ignore pixels, unpredicted pixels, several classes
    assert any((g == 255).any() for g, _ in pairs) and any((p == 255).any() for _, p in pairs)
    assert (res["union"] > 0).sum() >= min(n, 3)


def test_per_image_counts_equal_the_oracle():
    """Intermediate values: every image's per-class counts, not only the totals."""
    n = 19
    for g, p in dataset(7, 4, n):
        res = evaluate([(g, p)], n)
        inter, union, ap, ag = ref.intersect_and_union(p, g, n, 255)
        bi, bu = ref.boundary_intersect_and_union(p, g, n, 255, 0.02)
        for k, v in zip(SUMS, (inter, union, ag, ap, bi, bu)):
            np.testing.assert_array_equal(res[k], v, err_msg=k)


def test_confusion_matrix_is_the_joint_histogram():
    n = 6
    g, p = dataset(8, 1, n)[0]
    ev = SemanticEvaluator(n)
    ev.process(g, p)
    keep = g != 255
    pp = np.where(p[keep] < n, p[keep], n).astype(np.int64)
    want = np.bincount(g[keep].astype(np.int64) * (n + 1) + pp, minlength=n * (n + 1)).reshape(n, n + 1)
    np.testing.assert_array_equal(ev.confusion_matrix, want)


def test_many_touching_classes_and_thin_structures():
    n = 30
    rng = np.random.default_rng(11)
    # a 2-pixel checkerboard of 30 classes: every region touches others on all sides
    yy, xx = np.mgrid[0:40, 0:60]
    g = ((yy // 2) * 7 + (xx // 2) * 3) % n
    g = g.astype(np.uint8)
    g[:, 30] = 29  # a one-pixel-wide vertical line
    g[5, :] = 28   # and a horizontal one
    g[20:24, 40:50] = 255
    p = g.copy()
    p[::3, ::5] = (p[::3, ::5] + 1) % n
    p[:, 31] = 29  # the thin line predicted one pixel off
    pairs = [(g, p), (np.ascontiguousarray(g.T), np.ascontiguousarray(p.T))]
    for ratio in (0.0, 0.02, 0.1):
        assert_matches_oracle(evaluate(pairs, n, ratio=ratio), ref.evaluate_pairs(pairs, n, 255, ratio))
    res = evaluate(pairs, n)
    assert res["BoundaryIoU"][29] < 1.0 and res["IoU"][29] < 1.0
    del rng


def test_classes_present_in_one_map_only():
    n = 5
    g = np.zeros((20, 30), np.uint8)
    g[:, 15:] = 1
    g[0:5, 0:5] = 3    # class 3 only in the ground truth
    p = g.copy()
    p[0:5, 0:5] = 0
    p[10:15, 20:25] = 2  # class 2 only in the prediction
    res = evaluate([(g, p)], n)
    assert_matches_oracle(res, ref.evaluate_pairs([(g, p)], n))
    assert res["IoU"][3] == 0.0 and res["BoundaryIoU"][3] == 0.0 and res["Acc"][3] == 0.0
    assert res["IoU"][2] == 0.0 and res["BoundaryIoU"][2] == 0.0 and math.isnan(res["Acc"][2])
    assert math.isnan(res["IoU"][4]) and math.isnan(res["BoundaryIoU"][4]) and math.isnan(res["Acc"][4])
    # class 4 (absent from both) is skipped in the means; 2 and 3 count as 0
    assert res["mIoU"] == pytest.approx(np.mean(res["IoU"][:4]), abs=1e-15)
    assert res["mBIoU"] == pytest.approx(np.mean(res["BoundaryIoU"][:4]), abs=1e-15)
    assert res["mAcc"] == pytest.approx(np.mean(res["Acc"][[0, 1, 3]]), abs=1e-15)


def test_ignore_is_removed_before_the_boundaries():
    """A prediction that runs into an ignore region is judged on the visible part only:
    its band along the ignore region matches the ground truth's."""
    g = np.zeros((40, 40), np.uint8)
    g[:, 20:] = 1
    g[10:30, 25:40] = 255
    p = g.copy()
    p[10:30, 25:40] = 1   # class 1 continues under the ignore region
    res = evaluate([(g, p)], 2)
    assert res["IoU"].tolist() == [1.0, 1.0]
    assert res["BoundaryIoU"].tolist() == [1.0, 1.0]
    p[10:30, 25:40] = 0   # or class 0: just as invisible
    assert evaluate([(g, p)], 2)["BoundaryIoU"].tolist() == [1.0, 1.0]


def test_boundary_width_follows_each_images_diagonal():
    n = 3
    pairs = dataset(12, 3, n, sizes=((10, 200), (120, 90), (33, 33)))
    assert len({dilation_pixels(*g.shape, 0.05) for g, _ in pairs}) == 3
    assert_matches_oracle(evaluate(pairs, n, ratio=0.05), ref.evaluate_pairs(pairs, n, 255, 0.05))


def test_ignore_index_other_than_255_and_wide_dtypes():
    n = 4
    rng = np.random.default_rng(13)
    g = random_gt(rng, 30, 40, n, ignore=7)
    p = perturb(rng, g, n, ignore=7)
    res = evaluate([(g.astype(np.int64), p.astype(np.uint16))], n, ignore=7)
    assert_matches_oracle(res, ref.evaluate_pairs([(g, p)], n, 7, 0.02))
    g16 = g.astype(np.uint16)
    g16[g16 == 7] = 1000
    p16 = p.astype(np.uint16)
    p16[p16 == 7] = 1000
    assert_matches_oracle(evaluate([(g16, p16)], n, ignore=1000), ref.evaluate_pairs([(g16, p16)], n, 1000, 0.02))


def test_reduce_zero_label_is_mmsegmentations_ade20k_convention():
    n = 5
    rng = np.random.default_rng(14)
    g = random_gt(rng, 30, 40, n + 1, ignore_boxes=0)  # ADE20K: 0 = "other", 1..n classes
    g[0:3, 0:3] = 255
    reduced = np.where(g == 0, 255, np.where(g == 255, 255, g.astype(int) - 1)).astype(np.uint8)
    p = perturb(rng, reduced, n)
    res = evaluate([(g, p)], n, reduce_zero_label=True)
    assert_matches_oracle(res, ref.evaluate_pairs([(reduced, p)], n, 255, 0.02))


def test_batch_and_threads_give_identical_results():
    n = 19
    pairs = dataset(15, 9, n)
    one = evaluate(pairs, n, num_threads=1)
    for threads in (1, 2):
        ev = SemanticEvaluator(n, num_threads=threads)
        ev.process_batch([g for g, _ in pairs], [p for _, p in pairs])
        res = ev.evaluate()
        for k in SUMS:
            np.testing.assert_array_equal(res[k], one[k])
        assert [res[k] for k in MEANS] == [one[k] for k in MEANS]


def test_pickle_round_trip_gives_the_same_numbers():
    """An evaluator pickles (its lock is rebuilt on loading), half-way through
    and at the end, and the loaded copy goes on accumulating (issue 25, item 10)."""
    import copy
    import pickle

    n = 19
    pairs = dataset(16, 6, n)
    ev = SemanticEvaluator(n, ignore_index=255, dilation_ratio=0.01, num_threads=2,
                           class_names=[f"c{i}" for i in range(n)])
    for g, p in pairs[:3]:
        ev.process(g, p)
    loaded = pickle.loads(pickle.dumps(ev))
    assert loaded.confusion_matrix is not ev.confusion_matrix
    for g, p in pairs[3:]:
        ev.process(g, p)
    loaded.process_batch([g for g, _ in pairs[3:]], [p for _, p in pairs[3:]])
    want = ev.evaluate()
    for res in (loaded.evaluate(), pickle.loads(pickle.dumps(ev)).evaluate(), copy.deepcopy(ev).evaluate()):
        for k in SUMS + ("IoU", "BoundaryIoU", "Acc"):
            np.testing.assert_array_equal(res[k], want[k], err_msg=k)
        assert [res[k] for k in MEANS] == [want[k] for k in MEANS]
        assert res["num_images"] == want["num_images"] == 6
    assert (loaded.num_classes, loaded.dilation_ratio, loaded.class_names) == (n, 0.01, ev.class_names)


def test_no_images_and_reset():
    ev = SemanticEvaluator(3)
    res = ev.evaluate()
    assert all(math.isnan(res[k]) for k in MEANS) and np.isnan(res["IoU"]).all()
    ev.process(np.zeros((4, 4), np.uint8), np.zeros((4, 4), np.uint8))
    assert ev.evaluate()["mIoU"] == 1.0
    ev.reset()
    assert ev.num_images == 0 and not ev.confusion_matrix.any()


def test_many_classes():
    n = 4096
    rng = np.random.default_rng(17)
    g = rng.integers(0, n, (20, 30)).astype(np.uint16)
    p = g.copy()
    p[::2] = rng.integers(0, n, (10, 30))
    assert_matches_oracle(evaluate([(g, p)], n, ignore=65535), ref.evaluate_pairs([(g, p)], n, 65535, 0.02))


def test_all_ignored_image_adds_nothing():
    ev = SemanticEvaluator(3)
    ev.process(np.full((5, 6), 255, np.uint8), np.ones((5, 6), np.uint8))
    assert not ev.confusion_matrix.any() and not ev.boundary_counts.any() and ev.num_images == 1


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 14), st.integers(1, 14), st.integers(1, 6), st.sampled_from([0.0, 0.05, 0.1, 0.3]),
       st.data())
def test_hypothesis_maps_equal_the_oracle(h, w, n, ratio, data):
    # the ignore label may also be a class id (then predicting it predicts that class)
    ignore = data.draw(st.sampled_from([255, n, 0]))
    values = st.one_of(st.integers(0, n - 1), st.just(ignore))
    flat = st.lists(values, min_size=h * w, max_size=h * w)
    g = np.array(data.draw(flat), np.uint8).reshape(h, w)
    p = np.array(data.draw(flat), np.uint8).reshape(h, w)
    assert_matches_oracle(evaluate([(g, p)], n, ignore=ignore, ratio=ratio),
                          ref.evaluate_pairs([(g, p)], n, ignore, ratio))


# ---------------------------------------------------------------------------
# folders
# ---------------------------------------------------------------------------
def write_png(path, arr, mode=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(arr, mode).save(path) if mode else Image.fromarray(arr).save(path)


def test_folders_pair_by_relative_path(tmp_path):
    n = 19
    pairs = dataset(16, 5, n)
    names = ["a/x1", "a/x2", "b/y1", "b/c/z", "top"]
    for name, (g, p) in zip(names, pairs):
        write_png(str(tmp_path / "gt" / f"{name}_gtFine_labelTrainIds.png"), g)
        write_png(str(tmp_path / "pred" / f"{name}.png"), p)
    (tmp_path / "pred" / "unrelated.png").write_bytes(b"not read")
    res = evaluate_folders(tmp_path / "gt", tmp_path / "pred", n, gt_suffix="_gtFine_labelTrainIds.png",
                           num_threads=2)
    order = sorted(range(5), key=lambda i: names[i].replace("/", os.sep))
    assert_matches_oracle(res, ref.evaluate_pairs([pairs[i] for i in order], n))
    got = pair_label_maps(tmp_path / "gt", tmp_path / "pred", "_gtFine_labelTrainIds.png")
    assert [os.path.relpath(p, tmp_path / "pred") for _, p in got] == \
        sorted(f"{x}.png".replace("/", os.sep) for x in names)


def test_palette_and_16_bit_pngs_are_label_maps(tmp_path):
    g = np.arange(12, dtype=np.uint8).reshape(3, 4)
    img = Image.fromarray(g, "L").convert("P")
    img.putpalette([v for i in range(256) for v in (i, 255 - i, 0)])
    img.save(tmp_path / "p.png")
    np.testing.assert_array_equal(read_label_map(tmp_path / "p.png"), g)
    g16 = (np.arange(12, dtype=np.uint16) * 1000).reshape(3, 4)
    cv2.imwrite(str(tmp_path / "w.png"), g16)
    np.testing.assert_array_equal(read_label_map(tmp_path / "w.png"), g16)


# ---------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------
def test_bad_maps_name_the_problem_and_add_nothing():
    ev = SemanticEvaluator(3)
    g = np.zeros((4, 5), np.uint8)
    with pytest.raises(ValueError, match=r"frame7: the prediction is 4x4 but the ground truth is 4x5"):
        ev.process(g, np.zeros((4, 4), np.uint8), name="frame7")
    bad = g.copy()
    bad[2, 3] = 3
    with pytest.raises(ValueError, match=r"img: the ground truth has value 3 at row 2, column 3, which is "
                                         r"neither a class id \(< 3\) nor the ignore label 255"):
        ev.process(bad, g, name="img")
    with pytest.raises(ValueError, match=r"the prediction has value 3 at row 2, column 3"):
        ev.process(g, bad)
    with pytest.raises(ValueError, match=r"colour image"):
        ev.process(np.zeros((4, 5, 3), np.uint8), g)
    with pytest.raises(TypeError, match=r"integer class ids, got dtype float"):
        ev.process(g.astype(float), g)
    with pytest.raises(ValueError, match=r"negative values"):
        ev.process(g.astype(np.int8) - 1, g)
    assert ev.num_images == 0 and not ev.confusion_matrix.any() and not ev.boundary_counts.any()
    # a bad image in a batch: nothing of the batch is added
    with pytest.raises(ValueError, match=r"image 1: the prediction has value 3"):
        ev.process_batch([g, g], [g, bad])
    assert ev.num_images == 0 and not ev.confusion_matrix.any()


@pytest.mark.parametrize("kw,exc,msg", [
    (dict(num_classes=0), ValueError, "num_classes must be in"),
    (dict(num_classes=4097), ValueError, r"num_classes must be in \[1, 4096\]"),
    (dict(num_classes=2.5), TypeError, "num_classes must be an integer"),
    (dict(num_classes=3, ignore_index=-1), ValueError, "ignore_index must be in"),
    (dict(num_classes=3, dilation_ratio=-0.1), ValueError, "dilation_ratio"),
    (dict(num_classes=3, num_threads=0), ValueError, "num_threads"),
    (dict(num_classes=3, class_names=["a"]), ValueError, "class_names has 1 names for 3 classes"),
])
def test_bad_parameters(kw, exc, msg):
    with pytest.raises(exc, match=msg):
        SemanticEvaluator(**kw)


def test_bad_files_name_the_file(tmp_path):
    g = np.zeros((6, 8), np.uint8)
    write_png(str(tmp_path / "gt" / "a.png"), g)
    write_png(str(tmp_path / "gt" / "b.png"), g)
    write_png(str(tmp_path / "pred" / "a.png"), g)
    with pytest.raises(ValueError, match=r"prediction file missing: .*pred/b\.png"):
        evaluate_folders(tmp_path / "gt", tmp_path / "pred", 3)
    write_png(str(tmp_path / "pred" / "b.png"), np.zeros((6, 8, 3), np.uint8))
    with pytest.raises(ValueError, match=r"pred/b\.png: expected a single-channel label map .* RGB image"):
        evaluate_folders(tmp_path / "gt", tmp_path / "pred", 3)
    write_png(str(tmp_path / "pred" / "b.png"), np.zeros((6, 7), np.uint8))
    with pytest.raises(ValueError, match=r"pred/b\.png: the prediction is 6x7 but the ground truth .*gt/b\.png "
                                         r"is 6x8"):
        evaluate_folders(tmp_path / "gt", tmp_path / "pred", 3)
    bad = g.copy()
    bad[1, 2] = 9
    write_png(str(tmp_path / "pred" / "b.png"), bad)
    with pytest.raises(ValueError, match=r"pred/b\.png \(ground truth .*gt/b\.png\): the prediction has value 9 "
                                         r"at row 1, column 2"):
        evaluate_folders(tmp_path / "gt", tmp_path / "pred", 3)
    (tmp_path / "pred" / "b.png").write_bytes(b"garbage")
    with pytest.raises(ValueError, match=r"cannot read label map .*pred/b\.png"):
        evaluate_folders(tmp_path / "gt", tmp_path / "pred", 3)
    with pytest.raises(ValueError, match=r"prediction folder not found: .*nowhere"):
        evaluate_folders(tmp_path / "gt", tmp_path / "nowhere", 3)
    with pytest.raises(ValueError, match=r"no ground truth label maps"):
        evaluate_folders(tmp_path / "pred", tmp_path / "pred", 3, gt_suffix=".jpg")


def test_class_names_from_a_file(tmp_path):
    from boundary_api.semantic import read_class_names

    n = 3
    (g, p), = dataset(8, 1, n)
    write_png(str(tmp_path / "gt" / "x.png"), g)
    write_png(str(tmp_path / "pred" / "x.png"), p)
    text = tmp_path / "names.txt"
    text.write_text(" road\nsky \ncar\n\n")
    listed = tmp_path / "names.json"
    listed.write_text(json.dumps(["road", "sky", "car"]))
    assert read_class_names(text, n) == read_class_names(str(listed), n) == ["road", "sky", "car"]
    by_list = evaluate_folders(tmp_path / "gt", tmp_path / "pred", n, class_names=["road", "sky", "car"])
    for path in (text, str(listed)):
        res = evaluate_folders(tmp_path / "gt", tmp_path / "pred", n, class_names=path)
        assert res["class_names"] == ["road", "sky", "car"]
        assert res["mIoU"] == by_list["mIoU"] and list(res["IoU"]) == list(by_list["IoU"])
    with pytest.raises(ValueError, match="names.txt has 3 names but --num-classes is 4"):
        evaluate_folders(tmp_path / "gt", tmp_path / "pred", 4, class_names=text)
    bad = tmp_path / "bad.json"
    bad.write_text('{"a": 1}')
    with pytest.raises(ValueError, match="must hold a JSON list of strings"):
        read_class_names(bad, n)
    with pytest.raises(ValueError, match="file not found"):
        read_class_names(tmp_path / "none.txt", n)
