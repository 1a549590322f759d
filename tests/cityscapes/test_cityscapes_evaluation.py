"""Cityscapes instance AP / Boundary AP (boundary_api.cityscapes).

* the reference implementation's numbers on tests/data/cityscapes/visible (golden, 1e-12);
* segm equal to cityscapesScripts itself, run here on the same files (golden data and
  generated crowds of touching instances on odd image sizes);
* the intermediate values (pixel, boundary and intersection counts per prediction and
  ground-truth segment) against dense NumPy/OpenCV computations, for sizes whose
  dilation falls on .5;
* the PNG decoder against Pillow; input errors; nothing written.
"""
import math
import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from boundary_api.cityscapes import evaluation as cs
from boundary_api.cityscapes import files as cs_files
from boundary_api.cityscapes import _kernels as cityscapes_kernels
from boundary_api.masks import dilation_pixels
from boundary_api.masks.reference import mask_to_boundary as dense_boundary
from conftest import DATA, golden_cases

VISIBLE = os.path.join(DATA, "cityscapes", "visible")
GOLDEN = golden_cases("cityscapes_instance_eval.json")


def same_matrix(a, b):
    return np.array_equal(np.array(a["resultApMatrix"]), np.array(b["resultApMatrix"]), equal_nan=True)


def _same(a, b, tol=1e-12):
    if b is None or (isinstance(b, float) and math.isnan(b)):
        return isinstance(a, float) and math.isnan(a)
    return abs(a - b) <= tol


# ----------------------------------------------------------------------------
# golden numbers of the reference implementation
# ----------------------------------------------------------------------------
@pytest.mark.parametrize("case", GOLDEN, ids=[c["name"] for c in GOLDEN])
def test_golden(case):
    data = os.path.join(os.path.dirname(DATA), "data", "cityscapes", "visible")
    r = cs.evaluate_cityscapes(os.path.join(data, "gtFine", "val"), os.path.join(data, "results"),
                               iou_type=case["iou_type"], dilation_ratio=case["dilation_ratio"])
    want = case["results"]
    assert r["n_images"] == case["n_images"]
    assert _same(r["AP"], want["AP"]) and _same(r["AP50"], want["AP50"])
    assert r["thresholds"] == pytest.approx(want["overlaps"], abs=0)
    for name, v in want["classes"].items():
        assert _same(r["per_class"][name]["AP"], v["ap"]), name
        assert _same(r["per_class"][name]["AP50"], v["ap50"]), name
        got = r["per_class"][name]["AP_per_threshold"]
        assert all(_same(a, b) for a, b in zip(got, want["ap_per_threshold"][name])), name
    # cityscapesScripts' own result keys carry the same numbers
    assert r["averages"]["allAp"] == r["AP"] or (math.isnan(r["AP"]) and math.isnan(r["averages"]["allAp"]))
    assert r["instLabels"] == list(want["classes"])


# ----------------------------------------------------------------------------
# cityscapesScripts itself
# ----------------------------------------------------------------------------
def run_cityscapesscripts(gt_dir, result_dir, monkeypatch, tmp_path):
    """Unmodified cityscapesScripts on these files: AP matrix (classes x thresholds).

    Two shims, neither touching the computation: numpy >= 2.4 has no
    ``np.in1d`` (used for the void mask), and its JSON side files (the
    gtInstances.json cache, matches.json, which numpy 2 integers break) are
    not written.
    """
    import glob

    # (a skip where only the golden-number tests' needs are installed: .ci/run's older/newer Pythons)
    ev = pytest.importorskip("cityscapesscripts.evaluation.evalInstanceLevelSemanticLabeling")

    if not hasattr(np, "in1d"):
        monkeypatch.setattr(np, "in1d", lambda a, b: np.isin(a, b).ravel(), raising=False)
    monkeypatch.setattr(ev, "writeDict2JSON", lambda *a, **k: None)
    monkeypatch.chdir(tmp_path)
    args = ev.args
    monkeypatch.setattr(args, "predictionPath", os.path.abspath(result_dir))
    monkeypatch.setattr(args, "predictionWalk", None)
    monkeypatch.setattr(args, "gtInstancesFile", str(tmp_path / "no-such-cache.json"))
    monkeypatch.setattr(args, "JSONOutput", False)
    monkeypatch.setattr(args, "quiet", True)
    gts = sorted(glob.glob(os.path.join(gt_dir, "*", "*_gtFine_instanceIds.png")))
    preds = [ev.getPrediction(g, args) for g in gts]
    res = ev.evaluateImgLists(preds, gts, args)
    return np.asarray(res["resultApMatrix"])[0], res["averages"]


def assert_ap_equal(ours, theirs_matrix, theirs_avg):
    got = np.array([ours["per_class"][c]["AP_per_threshold"] for c in cs.CLASSES])
    assert np.array_equal(np.isnan(got), np.isnan(theirs_matrix))
    assert np.array_equal(np.nan_to_num(got), np.nan_to_num(theirs_matrix))  # bit for bit
    assert _same(ours["AP"], theirs_avg["allAp"], 0) and _same(ours["AP50"], theirs_avg["allAp50%"], 0)


def test_segm_equals_cityscapesscripts_on_golden_data(monkeypatch, tmp_path):
    gt_dir, res_dir = os.path.join(VISIBLE, "gtFine", "val"), os.path.join(VISIBLE, "results")
    ours = cs.evaluate_cityscapes(gt_dir, res_dir, iou_type="segm")
    assert_ap_equal(ours, *run_cityscapesscripts(gt_dir, res_dir, monkeypatch, tmp_path))


def write_dataset(root, images):
    """images: list of (gt uint16 array, [(mask, label_id, score), ...]) -> (gt_dir, result_dir)."""
    gt_dir, res_dir = root / "gtFine" / "val", root / "results"
    for i, (gt, preds) in enumerate(images):
        city = ("aachen", "bochum")[i % 2]
        core = f"{city}_{i:06d}_000019"
        (gt_dir / city).mkdir(parents=True, exist_ok=True)
        (res_dir / "m").mkdir(parents=True, exist_ok=True)
        Image.fromarray(gt.astype(np.uint16)).save(gt_dir / city / f"{core}_gtFine_instanceIds.png")
        lines = []
        for j, (mask, label, score) in enumerate(preds):
            Image.fromarray(mask.astype(np.uint8) * 255).save(res_dir / "m" / f"{core}_{j}.png")
            lines.append(f"m/{core}_{j}.png {label} {score}")
        (res_dir / f"{core}_pred.txt").write_text("\n".join(lines) + ("\n" if lines else ""))
    return str(gt_dir), str(res_dir)


def crowd_image(rng, h, w):
    """Crowds of touching instances (a grid of abutting boxes), a group, void, small ones,
    and predictions shifted, grown, shrunk, duplicated and mislabelled."""
    gt = np.full((h, w), 7, np.uint16)
    gt[: h // 5] = 23
    gt[:, : max(1, w // 15)] = 0  # void
    k = {24: 0, 26: 0, 33: 0}
    y0 = h // 4
    while y0 < h - 4:
        x0 = int(rng.integers(0, 4))
        bh = int(rng.integers(3, max(4, h // 5)))
        while x0 < w - 2:
            bw = int(rng.integers(2, max(3, w // 6)))
            lab = int(rng.choice([24, 26, 33]))
            if rng.random() < 0.1:
                iid = lab  # a group
            else:
                k[lab] += 1
                iid = lab * 1000 + k[lab]
            gt[y0:y0 + bh, x0:x0 + bw] = iid  # boxes touch their neighbours
            x0 += bw
        y0 += bh
    preds = []
    for iid in np.unique(gt):
        if iid < 24:
            continue
        lab = int(iid) // 1000 if iid >= 1000 else int(iid)
        m = gt == iid
        for _ in range(int(rng.integers(0, 3))):
            p = np.roll(m, tuple(int(v) for v in rng.integers(-2, 3, 2)), (0, 1))
            if rng.random() < 0.3:
                p = p | np.roll(p, 1, 1)
            if rng.random() < 0.2:
                p = p & np.roll(p, 1, 0)
            preds.append((p, lab if rng.random() > 0.1 else 26, round(float(rng.random()), 3)))
    # a false positive on void only, and one covering everything
    fp = np.zeros((h, w), bool)
    fp[:, : max(1, w // 15)] = True
    preds.append((fp, 24, 0.5))
    preds.append((np.ones((h, w), bool), 26, 0.01))
    return gt, preds


# odd sizes whose dilation at ratio 0.005 (and 0.1) falls on .5 or near it
ODD_SIZES = [(33, 56), (99, 168), (65, 72), (41, 40), (257, 511)]


@pytest.fixture(scope="module")
def crowd_data(tmp_path_factory):
    rng = np.random.default_rng(12)
    root = tmp_path_factory.mktemp("crowds")
    images = [crowd_image(rng, h, w) for h, w in ODD_SIZES]
    return images, write_dataset(root, images)


def test_segm_equals_cityscapesscripts_on_crowds(crowd_data, monkeypatch, tmp_path):
    _, (gt_dir, res_dir) = crowd_data
    ours = cs.evaluate_cityscapes(gt_dir, res_dir, iou_type="segm")
    theirs = run_cityscapesscripts(gt_dir, res_dir, monkeypatch, tmp_path)
    assert_ap_equal(ours, *theirs)
    assert not np.isnan(theirs[0]).all()


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 3), st.booleans())
def test_segm_equals_cityscapesscripts_generated(tmp_path_factory, seed, n_images, tied):
    # random crowds; with ``tied`` all scores in {0.1, 0.2, ..., 1.0} (many ties)
    from _pytest.monkeypatch import MonkeyPatch

    rng = np.random.default_rng(seed)
    images = []
    for _ in range(n_images):
        gt, preds = crowd_image(rng, int(rng.integers(8, 90)), int(rng.integers(8, 120)))
        if tied:
            preds = [(m, lab, round(s, 1)) for m, lab, s in preds]
        images.append((gt, preds))
    root = tmp_path_factory.mktemp("gen")
    gt_dir, res_dir = write_dataset(root / "d", images)
    ours = cs.evaluate_cityscapes(gt_dir, res_dir, iou_type="segm", num_threads=2)
    mp = MonkeyPatch()
    try:
        theirs = run_cityscapesscripts(gt_dir, res_dir, mp, root)
    except IndexError:  # a class whose predictions were all ignored: ours says 0
        return
    finally:
        mp.undo()
    assert_ap_equal(ours, *theirs)


def test_dilation_on_half_pixels():
    # 0.1 * 65 = 6.5 and 0.005 * 1300 = 6.5: Python rounds to even
    assert dilation_pixels(33, 56, 0.1) == 6
    assert dilation_pixels(500, 1200, 0.005) == 6
    assert dilation_pixels(3, 4, 0.5) == 2
    assert dilation_pixels(65, 72, 0.005) == 1  # 0.485 -> 0 -> at least 1


# ----------------------------------------------------------------------------
# intermediate values against dense NumPy / OpenCV
# ----------------------------------------------------------------------------
def dense_stats(gt, mask, ratio):
    """Per ground-truth id (of the evaluated classes): pixels, boundary pixels,
    intersection with the mask and of the boundaries, by full-image operations."""
    out = {}
    pb = dense_boundary(mask.astype(np.uint8), ratio).astype(bool)
    for iid in np.unique(gt):
        lab = iid if iid < 1000 else iid // 1000
        if cs.LABELS[int(lab)][0] not in cs.CLASSES:
            continue
        g = gt == iid
        gb = dense_boundary(g.astype(np.uint8), ratio).astype(bool)
        out[int(iid)] = (int(g.sum()), int(gb.sum()), int((g & mask).sum()), int((gb & pb).sum()))
    void = int((np.isin(gt, cs._VOID_LABELS) & mask).sum())
    return out, int(mask.sum()), int(pb.sum()), void


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.sampled_from(ODD_SIZES + [(1, 7), (6, 1), (2, 2)]),
       st.sampled_from([0.005, 0.01, 0.1, 0.5]))
def test_pixel_counts_equal_dense_computation(seed, size, ratio):
    rng = np.random.default_rng(seed)
    gt, preds = crowd_image(rng, *size)
    g = cs._GroundTruth(gt, "gt", "boundary", ratio)
    assert g.d == dilation_pixels(size[0], size[1], ratio)
    for mask, _, _ in preds[:6]:
        area, inter, barea, binter = cityscapes_kernels.cs_mask_stats(mask.astype(np.uint8), g.index, g.bindex, g.k, g.d)
        want, w_area, w_barea, w_void = dense_stats(gt, mask, ratio)
        assert (area, barea, int(inter[g.k - 1])) == (w_area, w_barea, w_void)
        for j, iid in enumerate(g.inst_id):
            assert (int(g.pixels[j]), int(g.bpixels[j]), int(inter[j + 1]), int(binter[j + 1])) == want[int(iid)]


def test_in_memory_equals_files(crowd_data):
    images, (gt_dir, res_dir) = crowd_data
    for iou in ("segm", "boundary"):
        files = cs.evaluate_cityscapes(gt_dir, res_dir, iou_type=iou, dilation_ratio=0.1)
        # write_dataset alternates cities, so sorted file order differs from list order
        order = sorted(range(len(images)), key=lambda i: (("aachen", "bochum")[i % 2], i))
        mem = cs.evaluate_arrays([images[i][0] for i in order],
                                 [[{"mask": m, "label_id": lab, "score": s} for m, lab, s in images[i][1]]
                                  for i in order], iou_type=iou, dilation_ratio=0.1, num_threads=1)
        assert np.array_equal(np.array(files["resultApMatrix"]), np.array(mem["resultApMatrix"]), equal_nan=True)


def test_threads_give_identical_results(crowd_data):
    _, (gt_dir, res_dir) = crowd_data
    one = cs.evaluate_cityscapes(gt_dir, res_dir, num_threads=1)
    two = cs.evaluate_cityscapes(gt_dir, res_dir, num_threads=3)
    assert np.array_equal(np.array(one["resultApMatrix"]), np.array(two["resultApMatrix"]), equal_nan=True)


def test_boundary_pairs_need_touching_boundaries():
    # the prediction covers the inside of the instance but none of its boundary band:
    # segm pairs them, boundary does not (so the prediction is a false positive)
    gt = np.full((200, 200), 7, np.uint16)
    gt[20:180, 20:180] = 26001
    inner = np.zeros((200, 200), bool)
    inner[40:160, 40:160] = True
    seg = cs.evaluate_arrays([gt], [[{"mask": inner, "label_id": 26, "score": 0.9}]], iou_type="segm")
    bnd = cs.evaluate_arrays([gt], [[{"mask": inner, "label_id": 26, "score": 0.9}]], iou_type="boundary",
                             dilation_ratio=0.05)
    assert seg["per_class"]["car"]["AP50"] == 1.0  # IoU 0.5625
    assert bnd["per_class"]["car"]["AP50"] == 0.0
    assert math.isnan(bnd["per_class"]["person"]["AP"])


def test_class_with_all_predictions_ignored_is_zero(tmp_path, monkeypatch):
    # the only car prediction lies on void: ignored at every threshold.  The
    # definition gives a curve with only the added point, AP 0; cityscapesScripts
    # (and the reference) raise IndexError
    gt = np.full((64, 64), 7, np.uint16)
    gt[:, :16] = 0
    gt[30:60, 30:60] = 26001
    on_void = np.zeros((64, 64), bool)
    on_void[5:20, 2:12] = True
    gt_dir, res_dir = write_dataset(tmp_path / "d", [(gt, [(on_void, 26, 0.8)])])
    for iou in ("segm", "boundary"):
        r = cs.evaluate_cityscapes(gt_dir, res_dir, iou_type=iou)
        assert r["per_class"]["car"]["AP_per_threshold"] == [0.0] * 10
        assert r["AP"] == 0.0
    with pytest.raises(IndexError):
        run_cityscapesscripts(gt_dir, res_dir, monkeypatch, tmp_path)


# ----------------------------------------------------------------------------
# the PNG decoder
# ----------------------------------------------------------------------------
@settings(max_examples=60, deadline=None)
@given(st.integers(1, 80), st.integers(1, 80), st.sampled_from(["binary", "noise", "zeros", "ramp"]),
       st.sampled_from([0, 1, 6, 9]), st.sampled_from([8, 16]), st.integers(0, 2 ** 32 - 1))
def test_png_decoder_equals_pillow(tmp_path_factory, h, w, kind, level, depth, seed):
    rng = np.random.default_rng(seed)
    top = 255 if depth == 8 else 65535
    a = {"binary": lambda: (rng.random((h, w)) < 0.5) * top,
         "noise": lambda: rng.integers(0, top + 1, (h, w)),
         "zeros": lambda: np.zeros((h, w)),
         "ramp": lambda: np.add.outer(np.arange(h), np.arange(w)) % (top + 1)}[kind]()
    a = a.astype(np.uint8 if depth == 8 else np.uint16)
    path = str(tmp_path_factory.mktemp("png") / "x.png")
    Image.fromarray(a).save(path, compress_level=level)
    got = cs._read_png(path, "x", mask=False)
    assert got.dtype == a.dtype and np.array_equal(got, a)
    assert cs_files._native_gray(open(path, "rb").read(), (depth,))
    if depth == 8:
        assert np.array_equal(cs._read_png(path, "x", mask=True), a)
        # decoding and scanning row by row gives the statistics of the decoded image
        src = cs._mask_source(path, "x")
        assert isinstance(src, cs._PngMask) and src.shape == (h, w)
        gidx = rng.integers(0, 5, (h, w)).astype(np.uint32)
        bidx = np.where(rng.random((h, w)) < 0.3, gidx, 0).astype(np.uint32)
        for d in (0, 1, 3):
            fused = cityscapes_kernels.cs_png_mask_stats(src.zdata, h, w, gidx, bidx, 5, d)
            dense = cityscapes_kernels.cs_mask_stats(a, gidx, bidx, 5, d)
            assert fused[0] == dense[0] and fused[2] == dense[2]
            assert np.array_equal(fused[1], dense[1]) and np.array_equal(fused[3], dense[3])
        assert cityscapes_kernels.cs_png_mask_stats(b"\x00" + src.zdata[1:], h, w, gidx, bidx, 5, 1) is None  # bad header


def test_inflate_mixed_blocks():
    # Huffman blocks followed by stored blocks (a full flush ends with an empty
    # stored block, level 0 then stores): the byte alignment after read-ahead
    import zlib

    rng = np.random.default_rng(3)
    for cut in (1, 7, 20, 39):
        # compressible rows, then incompressible ones (which zlib stores)
        rows = [bytes([0]) + bytes(rng.integers(0, 4 if i < cut else 256, 50, dtype=np.uint8)) for i in range(40)]
        c = zlib.compressobj(9)
        z = c.compress(b"".join(rows[:cut])) + c.flush(zlib.Z_FULL_FLUSH)
        z += c.compress(b"".join(rows[cut:])) + c.flush(zlib.Z_SYNC_FLUSH) + c.flush()
        got = cityscapes_kernels.cs_png_gray(z, 40, 50, 1)
        assert got is not None and got.tobytes() == b"".join(r[1:] for r in rows)


def test_png_decoder_rejects_corrupt_streams():
    import zlib

    good = zlib.compress(b"\x00\x01\x02\x03" * 3)
    assert cityscapes_kernels.cs_png_gray(good, 3, 3, 1).tolist() == [[1, 2, 3]] * 3
    for bad in (b"", b"\x78\x9c", good[:-8], good[:2] + b"\xff" * 8, zlib.compress(b"\x00" * 11)):
        assert cityscapes_kernels.cs_png_gray(bad, 3, 3, 1) is None
    assert cityscapes_kernels.cs_png_gray(zlib.compress(b"\x07\x01\x02\x03" * 3), 3, 3, 1) is None  # bad filter


def test_masks_in_other_modes_read_as_pillow_L(tmp_path):
    a = np.zeros((9, 11, 3), np.uint8)
    a[2:5, 3:9] = (255, 0, 0)
    a[6, 1] = (1, 0, 0)  # converts to 0 in mode L, as cityscapesScripts reads it
    Image.fromarray(a).save(tmp_path / "rgb.png")
    want = np.asarray(Image.fromarray(a).convert("L"))
    assert np.array_equal(cs._read_png(str(tmp_path / "rgb.png"), "x", mask=True), want)


def test_every_png_kind_read_as_cityscapes_scripts_reads_it(tmp_path):
    """Issue 40, item 4: ground truth as ``np.array(Image.open(p))`` (a palette
    image's indices, a 1-bit image's 0/1), prediction masks as
    ``np.array(Image.open(p).convert("L"))``, as cityscapesScripts reads them,
    whichever decoder reads the file."""
    from pngfiles import CHANNELS, DEPTHS, random_samples, write_png

    rng = np.random.default_rng(21)
    for color_type, depths in DEPTHS.items():
        for depth in depths:
            for interlace in (0, 1):
                s = random_samples(rng, 7, 13, CHANNELS[color_type], depth, True)
                path = tmp_path / f"{color_type}_{depth}_{interlace}.png"
                path.write_bytes(write_png(s, color_type, depth, interlace=interlace))
                with Image.open(path) as im:
                    gt, mask = np.array(im), np.array(im.convert("L"))
                np.testing.assert_array_equal(cs._read_png(str(path), "x", mask=False), gt)
                np.testing.assert_array_equal(cs._read_png(str(path), "x", mask=True), mask)
                src = cs._mask_source(str(path), "x")
                if isinstance(src, cs._PngMask):
                    assert color_type == 0 and depth == 8 and not interlace
                else:
                    np.testing.assert_array_equal(src, mask)


def test_short_import_path():
    import boundary_api.cityscapes as short

    assert short.evaluate_cityscapes is cs.evaluate_cityscapes
    assert set(short.__all__) == set(cs.__all__)


def test_labels_table_is_cityscapes():
    labels = pytest.importorskip("cityscapesscripts.helpers.labels").labels

    assert {lab.id: (lab.name, lab.hasInstances, lab.ignoreInEval) for lab in labels} == cs.LABELS
    assert cs.CLASSES == ("person", "rider", "car", "truck", "bus", "train", "motorcycle", "bicycle")


# ----------------------------------------------------------------------------
# errors, lenient lines, nothing written
# ----------------------------------------------------------------------------
@pytest.fixture
def small(tmp_path):
    gt = np.full((20, 30), 7, np.uint16)
    gt[5:15, 5:15] = 24001
    m = np.zeros((20, 30), bool)
    m[5:15, 5:14] = True
    gt_dir, res_dir = write_dataset(tmp_path / "d", [(gt, [(m, 24, 0.9)])])
    txt = [os.path.join(res_dir, f) for f in os.listdir(res_dir) if f.endswith(".txt")][0]
    return gt_dir, res_dir, txt


def test_trailing_blank_lines_and_spaces_are_fine(small):
    gt_dir, res_dir, txt = small
    want = cs.evaluate_cityscapes(gt_dir, res_dir)
    with open(txt) as f:
        line = f.read().strip()
    with open(txt, "w") as f:
        f.write(line + "   \n\n  \n")
    assert same_matrix(cs.evaluate_cityscapes(gt_dir, res_dir), want)
    segm = cs.evaluate_cityscapes(gt_dir, res_dir, iou_type="segm")
    assert segm["per_class"]["person"]["AP_per_threshold"] == [1.0] * 8 + [0.0] * 2  # IoU 0.9


@pytest.mark.parametrize("line, message", [
    ("m/x.png 24", "expected 'relPath labelID confidence'"),
    ("m/x.png 24 0.5 extra", "expected 'relPath labelID confidence'"),
    ("m/x.png 99 0.5", "unknown Cityscapes label id '99'"),
    ("m/x.png car 0.5", "label id is not a number"),
    ("m/x.png 24 high", "confidence is not a number"),
    ("m/x.png 24 nan", "confidence must be finite"),
    ("/abs/x.png 24 0.5", "must be relative"),
])
def test_malformed_lines(small, line, message):
    gt_dir, res_dir, txt = small
    with open(txt, "a") as f:
        f.write(line + "\n")
    with pytest.raises(ValueError, match=message) as info:
        cs.evaluate_cityscapes(gt_dir, res_dir)
    assert f"{txt}, line 2" in str(info.value)


def test_image_without_prediction_file(small):
    gt_dir, res_dir, txt = small
    os.remove(txt)
    with pytest.raises(ValueError, match=r"no prediction file aachen_000000_000019\*\.txt"):
        cs.evaluate_cityscapes(gt_dir, res_dir)


def test_several_prediction_files(small):
    gt_dir, res_dir, txt = small
    os.makedirs(os.path.join(res_dir, "sub"))
    open(os.path.join(res_dir, "sub", "aachen_000000_000019_other.txt"), "w").close()
    with pytest.raises(ValueError, match="several prediction files"):
        cs.evaluate_cityscapes(gt_dir, res_dir)


def test_mask_of_the_wrong_size(small):
    gt_dir, res_dir, txt = small
    mask = os.path.join(res_dir, open(txt).read().split()[0])
    Image.fromarray(np.full((21, 30), 255, np.uint8)).save(mask)
    with pytest.raises(ValueError, match=r"mask is 21x30 but the ground truth .* is 20x30"):
        cs.evaluate_cityscapes(gt_dir, res_dir)


def test_missing_and_unreadable_masks(small):
    gt_dir, res_dir, txt = small
    mask = os.path.join(res_dir, open(txt).read().split()[0])
    with open(mask, "wb") as f:
        f.write(b"not a png")
    with pytest.raises(ValueError, match="cannot read mask of"):
        cs.evaluate_cityscapes(gt_dir, res_dir)
    os.remove(mask)
    with pytest.raises(ValueError, match="mask of .* not found"):
        cs.evaluate_cityscapes(gt_dir, res_dir)


def test_bad_ground_truth(small, tmp_path):
    gt_dir, res_dir, _ = small
    path = [os.path.join(r, f) for r, _, fs in os.walk(gt_dir) for f in fs][0]
    Image.fromarray(np.full((20, 30), 40000, np.uint16)).save(path)
    with pytest.raises(ValueError, match="pixel value 40000 is not a Cityscapes id"):
        cs.evaluate_cityscapes(gt_dir, res_dir)
    with pytest.raises(ValueError, match="ground truth folder not found"):
        cs.evaluate_cityscapes(str(tmp_path / "nope"), res_dir)
    with pytest.raises(ValueError, match="no ground truth images"):
        cs.evaluate_cityscapes(res_dir, res_dir)
    with pytest.raises(ValueError, match="results folder not found"):
        cs.evaluate_cityscapes(gt_dir, str(tmp_path / "nope"))


def test_bad_options(small):
    gt_dir, res_dir, _ = small
    with pytest.raises(ValueError, match="iou_type"):
        cs.evaluate_cityscapes(gt_dir, res_dir, iou_type="bbox")
    with pytest.raises(ValueError, match="dilation_ratio"):
        cs.evaluate_cityscapes(gt_dir, res_dir, dilation_ratio=-1)
    with pytest.raises(ValueError, match="num_threads"):
        cs.evaluate_cityscapes(gt_dir, res_dir, num_threads=0)
    with pytest.raises(ValueError, match="unknown Cityscapes label id"):
        cs.evaluate_arrays([np.zeros((4, 4), np.uint16)], [[{"mask": np.ones((4, 4)), "label_id": 77, "score": 1}]])


def test_other_labels_are_skipped_unread_and_duplicates_count_once(small):
    gt_dir, res_dir, txt = small
    want = cs.evaluate_cityscapes(gt_dir, res_dir)
    first = open(txt).read().split()[0]
    with open(txt, "a") as f:
        f.write("m/missing.png 7 0.5\n")  # road: not evaluated, never read
        f.write(f"{first} 24 0.9\n")  # the same mask again: one prediction, as in cityscapesScripts
    with pytest.warns(UserWarning, match="is listed more than once; its last line counts"):
        assert same_matrix(cs.evaluate_cityscapes(gt_dir, res_dir), want)


def test_nothing_is_written(small):
    gt_dir, res_dir, _ = small
    root = os.path.dirname(os.path.dirname(gt_dir))

    def snapshot():
        return sorted((os.path.join(r, f), os.stat(os.path.join(r, f)).st_mtime_ns)
                      for r, _, fs in os.walk(root) for f in fs)

    before = snapshot()
    cs.evaluate_cityscapes(gt_dir, res_dir, iou_type="segm")
    cs.evaluate_cityscapes(gt_dir, res_dir, iou_type="boundary")
    assert snapshot() == before


def test_print_results_is_cityscapesscripts_table(capsys):
    r = cs.evaluate_cityscapes(os.path.join(VISIBLE, "gtFine", "val"), os.path.join(VISIBLE, "results"),
                               iou_type="segm")
    cs.print_results(r)
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "#" * 50 and out[2].split() == ["what", ":", "AP", "AP_50%"]
    assert out[4].split() == ["person", ":", f"{r['per_class']['person']['AP']:.3f}",
                              f"{r['per_class']['person']['AP50']:.3f}"]
    assert out[9].split()[2] == "nan"  # train has no ground truth
    assert out[13].split() == ["average", ":", f"{r['AP']:.3f}", f"{r['AP50']:.3f}"]
