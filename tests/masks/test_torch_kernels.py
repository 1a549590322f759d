"""The torch path of the boundary and IoU step (boundary_api.masks.torch_kernels), run
here on CPU tensors (the code path a GPU runs, with device="cpu"): boundaries equal
to the Cython kernel's and the OpenCV reference's, IoUs equal to the RLE kernels',
on adversarial masks (borders, 1-pixel masks and images, empty and full masks).

Optional tier (``pytest -m torch``)."""
import numpy as np
import pycocotools.mask as mask_utils
import pytest

torch = pytest.importorskip("torch")

from boundary_api.masks import _boundary, _iou, _rle, reference, torch_kernels  # noqa: E402
from boundary_api.masks.boundary import boundary_counts, dilation_pixels_array  # noqa: E402

from incremental_data import make_images, random_mask  # noqa: E402

pytestmark = [pytest.mark.torch]


def adversarial_masks(h, w, seed=0):
    rng = np.random.default_rng(seed)
    out = [np.zeros((h, w), bool), np.ones((h, w), bool)]
    one = np.zeros((h, w), bool)
    one[rng.integers(0, h), rng.integers(0, w)] = True
    out.append(one)
    corner = np.zeros((h, w), bool)
    corner[0, 0] = corner[-1, -1] = True
    out.append(corner)
    edge = np.zeros((h, w), bool)
    edge[:, 0] = True
    edge[-1, :] = True
    out.append(edge)
    checker = (np.add.outer(np.arange(h), np.arange(w)) % 2).astype(bool)
    out.append(checker)
    holes = np.ones((h, w), bool)
    holes[h // 2, w // 2] = False
    out.append(holes)
    for kind in ("rect", "disc", "blob", "line", "border", "blob", "disc"):
        out.append(random_mask(rng, h, w, kind))
    return np.stack(out)


SIZES = [(1, 1), (1, 9), (7, 1), (2, 2), (5, 8), (17, 13), (40, 31)]


@pytest.mark.parametrize("h,w", SIZES)
@pytest.mark.parametrize("d", [0, 1, 2, 5, 40])
def test_erosion_boundaries_equal_the_cython_kernel_and_opencv(h, w, d):
    masks = adversarial_masks(h, w, seed=h * 100 + w)
    t = torch.from_numpy(masks)
    eroded = torch_kernels.erode(t, d).numpy()
    for m, e in zip(masks, eroded):
        expected = _boundary.boundary_dense(np.ascontiguousarray(m).view(np.uint8), d)
        assert np.array_equal((m & ~e).astype(np.uint8), expected)


@pytest.mark.parametrize("h,w", SIZES)
@pytest.mark.filterwarnings("ignore:dilation_ratio 0")
@pytest.mark.parametrize("ratio", [0.0, 0.02, 0.1, 0.5])
def test_boundaries_equal_the_reference(h, w, ratio):
    masks = adversarial_masks(h, w, seed=h + w)
    got = torch_kernels.boundaries(torch.from_numpy(masks.astype(np.uint8)), ratio).numpy()
    for m, b in zip(masks, got):
        assert np.array_equal(b.astype(np.uint8), reference.mask_to_boundary(m, ratio))


def _rle_ious(dt, gt, crowd, mode, ratio):
    """The RLE kernels' IoU matrix (iou_pairs, one pair of all masks)."""
    enc = lambda ms: [r["counts"] for r in mask_utils.encode(np.asfortranarray(ms.transpose(1, 2, 0).astype(np.uint8)))]
    D, G = len(dt), len(gt)
    h, w = dt.shape[1:]
    dc, gc = enc(dt), enc(gt)
    hh = lambda n: np.full(n, h, np.int64)
    ww = lambda n: np.full(n, w, np.int64)
    gm, dm = _rle.StringTable(gc), _rle.StringTable(dc)
    if mode == 1:
        gb = _rle.StringTable(boundary_counts(gc, hh(G), ww(G), dilation_pixels_array(hh(G), ww(G), ratio)))
        db = _rle.StringTable(boundary_counts(dc, hh(D), ww(D), dilation_pixels_array(hh(D), ww(D), ratio)))
    else:
        gb, db = gm, dm
    out = np.zeros(D * G)
    _iou.iou_pairs(mode, gm, gb, hh(G), crowd.astype(np.uint8), np.zeros((G, 4)), dm, db, hh(D), np.zeros((D, 4)),
                    np.array([0, G], np.int64), np.array([0, D], np.int64), np.array([0, D * G], np.int64), out, 0, 1)
    return out.reshape(D, G)


@pytest.mark.parametrize("h,w", SIZES)
@pytest.mark.parametrize("boundary", [False, True])
def test_ious_equal_the_rle_kernels(h, w, boundary):
    masks = adversarial_masks(h, w, seed=7 * h + w)
    rng = np.random.default_rng(h * w)
    gt = masks[rng.permutation(len(masks))[:9]]
    crowd = rng.random(len(gt)) < 0.3
    ratio = 0.05
    counts = torch_kernels.mask_counts(torch.from_numpy(masks), torch.from_numpy(gt), ratio if boundary else None)
    got = torch_kernels.iou_matrix(counts, crowd, boundary)
    expected = _rle_ious(masks, gt, crowd, 1 if boundary else 0, ratio)
    assert got.dtype == np.float64 and np.array_equal(got, expected)
    if not boundary:  # and pycocotools' own
        enc = lambda ms: mask_utils.encode(np.asfortranarray(ms.transpose(1, 2, 0).astype(np.uint8)))
        assert np.array_equal(got, np.asarray(mask_utils.iou(enc(masks), enc(gt), crowd.astype(np.uint8))))


def test_intersections_count_exactly_past_float32_precision(monkeypatch):
    # blocks of a few pixels stand for blocks of 2**24: sums past float32's exact range stay exact
    monkeypatch.setattr(torch_kernels, "_CHUNK", 7)
    masks = adversarial_masks(23, 19, seed=5)
    got = torch_kernels.intersections(torch.from_numpy(masks), torch.from_numpy(masks))
    flat = masks.reshape(len(masks), -1).astype(np.int64)
    assert np.array_equal(got, flat @ flat.T)


def test_the_evaluator_on_tensors_equals_the_rle_path():
    from boundary_api import IncrementalEvaluator

    images = make_images(seed=11, n_images=24, max_side=40)
    as_tensors = [({k: torch.from_numpy(np.asarray(v)) for k, v in p.items()},
                   {k: torch.from_numpy(np.asarray(v)) for k, v in t.items()}) for p, t in images]
    results = []
    for data, torch_masks in ((images, False), (as_tensors, True), (as_tensors, "auto")):
        ev = IncrementalEvaluator(("boundary", "segm"), torch_masks=torch_masks)
        for i in range(0, len(data), 8):
            ev.update([p for p, _ in data[i:i + 8]], [t for _, t in data[i:i + 8]])
        results.append(ev.compute())
    for other in results[1:]:
        for t in ("boundary", "segm"):
            for key in ("stats", "precision", "recall", "scores", "per_class_stats"):
                assert np.array_equal(other[t][key], results[0][t][key]), (t, key)


def test_errors():
    with pytest.raises(ValueError, match=r"\(N, H, W\)"):
        torch_kernels.erode(torch.zeros(3, 3), 1)
    with pytest.raises(ValueError, match="d must be"):
        torch_kernels.erode(torch.zeros(1, 3, 3), -1)
    with pytest.raises(ValueError, match="different sizes"):
        torch_kernels.intersections(torch.zeros(1, 3, 3), torch.zeros(1, 3, 4))
    assert torch_kernels.is_torch_tensor(torch.zeros(1)) and not torch_kernels.is_torch_tensor(np.zeros(1))
