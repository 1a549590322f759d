"""The IoU step's kernel (``masks._iou.iou_pairs``) against dense oracles.

Boundary AP's IoU of a pair is min(mask IoU, boundary IoU) (plain mask IoU,
over the detection's area, for a crowd ground truth); the boundaries are the
OpenCV definition (``masks.reference.boundary_of_width``).  Covered here, for
every mode that extracts boundaries inside the kernel (3, with the ground
truths' boundaries made there too, their strings handed back or not, or read
as strings): masks whose boxes
overlap only in part (the intersections skip the columns outside the
overlap), masks spanning the whole image height (a boundary run then goes on
from one column into the next), masks too small for the erosion (the
boundary is the mask itself), empty masks, crowd ground truths, and the
ground truths' boundary strings handed to the cache.
"""
import numpy as np
import pycocotools.mask as mask_utils
import pytest

from boundary_api.masks import _boundary, _iou, _rle, reference


def _encode(masks):
    return [r["counts"] for r in mask_utils.encode(np.asfortranarray(np.stack(masks, 2).astype(np.uint8)))]


def _random_masks(rng, h, w, n):
    out = []
    for i in range(n):
        kind = i % 6
        m = np.zeros((h, w), bool)
        if kind == 0:  # a noisy blob somewhere
            y0, x0 = rng.integers(0, h), rng.integers(0, w)
            y1, x1 = rng.integers(y0, h + 1), rng.integers(x0, w + 1)
            m[y0:y1, x0:x1] = rng.random((y1 - y0, x1 - x0)) < 0.9
        elif kind == 1:  # full image height, some columns
            x0 = rng.integers(0, w)
            m[:, x0:rng.integers(x0, w + 1)] = True
        elif kind == 2:  # a tiny mask: its boundary is itself
            y, x = rng.integers(0, h), rng.integers(0, w)
            m[y:y + 2, x:x + 3] = True
        elif kind == 3:  # random pixels
            m = rng.random((h, w)) < rng.random()
        elif kind == 4:  # a filled rectangle
            y0, x0 = rng.integers(0, h // 2 + 1), rng.integers(0, w // 2 + 1)
            m[y0:y0 + rng.integers(1, h), x0:x0 + rng.integers(1, w)] = True
        # kind 5: empty
        out.append(m)
    return out


def _expected(dts, gts, crowd, d):
    exp = np.zeros((len(dts), len(gts)))
    bd = [reference.boundary_of_width(m.astype(np.uint8), d).astype(bool) for m in dts]
    bg = [reference.boundary_of_width(m.astype(np.uint8), d).astype(bool) for m in gts]
    for i, m in enumerate(dts):
        for j, g in enumerate(gts):
            inter = int((m & g).sum())
            if inter == 0:
                continue
            if crowd[j]:
                exp[i, j] = inter / int(m.sum())
                continue
            iou = inter / int((m | g).sum())
            bi = int((bd[i] & bg[j]).sum())
            biou = 0.0 if bi == 0 else bi / int((bd[i] | bg[j]).sum())
            exp[i, j] = min(iou, biou)
    return exp, bg


@pytest.mark.parametrize("h,w,d", [(37, 29, 2), (64, 70, 3), (130, 66, 5), (9, 200, 1), (3, 4, 2)])
# fresh: the ground truths' boundaries made in the kernel (their strings handed
# back, or with "no strings" only used there), else read as strings
@pytest.mark.parametrize("fresh", [True, False, "no strings"])
def test_boundary_ious_equal_the_dense_oracle(h, w, d, fresh):
    _check_boundary_scene(h, w, d, fresh, h * 1000 + w + d)


@pytest.fixture
def bitset_budgets():
    """Set the kernel's private budgets (boundary tile, ground-truth boundary
    bitsets per pair) for one test, restoring them after it."""
    saved = []

    def set_budgets(tile_words, pair_words):
        if tile_words is not None:
            saved.append((_boundary._set_boundary_budget, _boundary._set_boundary_budget(tile_words)))
        if pair_words is not None:
            saved.append((_iou._set_pair_bits_budget, _iou._set_pair_bits_budget(pair_words)))

    yield set_budgets
    for setter, old in reversed(saved):
        setter(old)


# Boundary IoUs are taken on bitsets where the detection's box fits one tile
# of the boundary kernel and every ground truth of the pair has its bitsets
# within the pair's budget, else on runs; the rows of both bitsets start at
# multiples of 64, so masks starting at other rows of tall images line up by
# words.  The budgets below force every mixture: detections in several tiles
# or streamed (runs) beside detections on bitsets in one pair; pairs whose
# budget runs out after some ground truths; no bitsets at all.
@pytest.mark.parametrize("tile_words,pair_words", [(None, None), (12, None), (None, 0), (None, 150), (40, 300)])
@pytest.mark.parametrize("h,w,d", [(200, 61, 4), (129, 90, 7), (70, 33, 1)])
@pytest.mark.parametrize("fresh", [True, False, "no strings"])
def test_boundary_ious_on_bitsets_and_runs_equal_the_dense_oracle(h, w, d, fresh, tile_words, pair_words,
                                                                 bitset_budgets):
    bitset_budgets(tile_words, pair_words)
    _check_boundary_scene(h, w, d, fresh, h + w + d)


def _check_boundary_scene(h, w, d, fresh, seed):
    rng = np.random.default_rng(seed)
    # two pairs (images) of the same size, the second without detections
    dts = _random_masks(rng, h, w, 24)
    gts = _random_masks(rng, h, w, 9) + _random_masks(rng, h, w, 3)
    crowd = (rng.random(len(gts)) < 0.25).astype(np.uint8)
    G, D = len(gts), len(dts)
    gc, dc = _encode(gts), _encode(dts)
    hh = lambda n: np.full(n, h, np.int64)
    ww = lambda n: np.full(n, w, np.int64)
    dd = lambda n: np.full(n, d, np.int64)
    gb = _rle.StringTable([] if fresh else [_boundary._boundary_probe(c, h, w, d)[0] for c in gc])
    pair_g = np.array([0, 9, G], np.int64)
    pair_d = np.array([0, D, D], np.int64)
    pair_o = np.array([0, 9 * D, 9 * D], np.int64)
    out = np.full(9 * D, -1.0)
    extra = (ww(G), dd(G)) if fresh else ()
    if fresh == "no strings":
        extra += (None, False)
    res = _iou.iou_pairs(3, _rle.StringTable(gc), gb, hh(G), crowd, np.zeros((G, 4)),
                         _rle.StringTable(dc), _rle.StringTable([]), hh(D), np.zeros((D, 4)),
                         pair_g, pair_d, pair_o, out, 0, 2, ww(D), dd(D), *extra)
    exp, bg = _expected(dts, gts[:9], crowd[:9], d)
    assert np.array_equal(out.reshape(D, 9), exp)
    if fresh == "no strings":
        assert res[1] == b"" and not res[2].any()
    elif fresh:
        _, buf, offs = res
        # every ground truth's boundary (crowd ones and those of the pair
        # without detections too), as pycocotools encodes the OpenCV boundary
        _, bg_all = _expected([], gts, crowd, d)
        for j in range(G):
            want = mask_utils.encode(np.asfortranarray(bg_all[j].astype(np.uint8)))["counts"]
            assert buf[offs[j]:offs[j + 1]] == want


@pytest.mark.parametrize("seed", range(6))
def test_mask_ious_with_boxes_overlapping_in_part_equal_pycocotools(seed):
    rng = np.random.default_rng(seed)
    h, w = 50, 90
    dts, gts = [], []
    for _ in range(30):
        for out in (dts, gts):
            m = np.zeros((h, w), bool)
            x0 = rng.integers(0, w - 1)
            y0 = rng.integers(0, h - 1)
            m[y0:y0 + rng.integers(1, h), x0:x0 + rng.integers(1, w)] = rng.random() < 0.5 or True
            m &= rng.random((h, w)) < 0.8
            out.append(m)
    crowd = (rng.random(len(gts)) < 0.2).astype(np.uint8)
    gc, dc = _encode(gts), _encode(dts)
    G, D = len(gts), len(dts)
    gm, dm = _rle.StringTable(gc), _rle.StringTable(dc)
    out = np.zeros(G * D)
    _iou.iou_pairs(0, gm, gm, np.full(G, h, np.int64), crowd, np.zeros((G, 4)), dm, dm,
                   np.full(D, h, np.int64), np.zeros((D, 4)), np.array([0, G], np.int64),
                   np.array([0, D], np.int64), np.array([0, G * D], np.int64), out, 0, 1)
    rles = lambda ms: mask_utils.encode(np.asfortranarray(np.stack(ms, 2).astype(np.uint8)))
    assert np.array_equal(out.reshape(D, G), np.asarray(mask_utils.iou(rles(dts), rles(gts), crowd)))


@pytest.mark.parametrize("mode,fresh", [(0, False), (3, False), (3, True), (3, "no strings")])
def test_ground_truth_strings_checked_where_decoded(mode, fresh):
    """``gt_status``: each decoded ground truth's string checked on the one decode
    (1: malformed, 2: another pixel count than ``gt_pixels``), a bad one taken as an
    empty mask; the pair without detections is not decoded unless ``fresh`` (255 stays)."""
    h, w, d = 40, 52, 2
    rng = np.random.default_rng(mode * 10 + len(str(fresh)))
    dts = _random_masks(rng, h, w, 10)
    gts = _random_masks(rng, h, w, 8) + _random_masks(rng, h, w, 2)
    crowd = (np.arange(len(gts)) % 5 == 4).astype(np.uint8)
    G, D = len(gts), len(dts)
    gc = _encode(gts)
    gc[1] = gc[1][:len(gc[1]) // 2] + b"\x01"           # malformed
    pixels = np.full(G, h * w, np.int64)
    pixels[3] = h * w + 1                              # decodes to another pixel count
    hh = lambda n: np.full(n, h, np.int64)
    pair_g = np.array([0, 8, G], np.int64)
    pair_d = np.array([0, D, D], np.int64)
    pair_o = np.array([0, 8 * D, 8 * D], np.int64)
    out = np.full(8 * D, -1.0)
    status = np.full(G, 255, np.uint8)
    if mode == 0:
        gb, extra = _rle.StringTable(gc), (np.full(D, w, np.int64), None, None, None, None, True)
    else:
        ww, dd = (lambda n: np.full(n, w, np.int64)), (lambda n: np.full(n, d, np.int64))
        gb = _rle.StringTable([] if fresh else [_boundary._boundary_probe(c, h, w, d)[0] if k != 1 else b""
                                                for k, c in enumerate(gc)])
        extra = (ww(D), dd(D)) + ((ww(G), dd(G)) if fresh else (None, None)) + (None, fresh != "no strings")
    _iou.iou_pairs(mode, _rle.StringTable(gc), gb, hh(G), crowd, np.zeros((G, 4)), _rle.StringTable(_encode(dts)),
                   _rle.StringTable([]) if mode == 3 else _rle.StringTable(_encode(dts)), hh(D), np.zeros((D, 4)),
                   pair_g, pair_d, pair_o, out, 0, 2, *extra, gt_pixels=pixels, gt_status=status)
    assert status[:8].tolist() == [0, 1, 0, 2, 0, 0, 0, 0]
    assert (status[8:] == (0 if fresh is True else 255)).all()
    empty = np.zeros((h, w), bool)
    taken = [empty if k in (1, 3) else m for k, m in enumerate(gts[:8])]
    if mode == 0:
        exp = np.zeros((D, 8))
        for i, m in enumerate(dts):
            for j, g in enumerate(taken):
                inter = int((m & g).sum())
                if inter:
                    exp[i, j] = inter / int(m.sum()) if crowd[j] else inter / int((m | g).sum())
    else:
        exp, _ = _expected(dts, taken, crowd[:8], d)
    assert np.array_equal(out.reshape(D, 8), exp)
