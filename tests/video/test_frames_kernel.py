"""The label-map frame kernel (boundary_api.video._frames) and the per-frame J, F and
Boundary IoU made from its counts (boundary_api.video._jf), against the plain NumPy
oracle (oracle_vos.py) on adversarial label maps generated with hypothesis: every
label's area, boundary-map and band sizes, every pair's counts, every per-frame value."""
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oracle_vos as ov  # noqa: E402

from boundary_api.masks import reference  # noqa: E402
from boundary_api.masks.boundary import dilation_pixels  # noqa: E402
from boundary_api.video import _frames, _jf  # noqa: E402

TOL = 1e-12


@st.composite
def label_maps(draw, max_h=40, max_w=140, max_label=4):
    """A pair of label maps of one size: rectangles, discs, noise, lines, the frame's
    edges, void pixels (255) in the ground truth."""
    h = draw(st.integers(1, max_h))
    w = draw(st.integers(1, max_w))
    seed = draw(st.integers(0, 2 ** 32 - 1))
    rng = np.random.default_rng(seed)

    def one(void):
        a = np.zeros((h, w), np.uint16)
        kind = draw(st.sampled_from(["shapes", "noise", "full", "empty", "lines", "edges"]))
        if kind == "full":
            a[:] = rng.integers(1, max_label + 1)
        elif kind == "noise":
            a[:] = rng.integers(0, max_label + 1, (h, w))
        elif kind == "lines":
            a[rng.integers(0, h), :] = 1
            a[:, rng.integers(0, w)] = 2
        elif kind == "edges":
            a[0, :] = 1
            a[-1, :] = 2
            a[:, 0] = 3
            a[:, -1] = 1
        elif kind == "shapes":
            yy, xx = np.mgrid[:h, :w]
            for _ in range(rng.integers(1, 5)):
                label = rng.integers(1, max_label + 1)
                if rng.random() < 0.5:
                    y0, x0 = rng.integers(0, h), rng.integers(0, w)
                    a[y0:y0 + rng.integers(1, h + 1), x0:x0 + rng.integers(1, w + 1)] = label
                else:
                    cy, cx, r = rng.integers(0, h), rng.integers(0, w), rng.integers(1, max(2, min(h, w)))
                    a[(yy - cy) ** 2 + (xx - cx) ** 2 <= r * r] = label
        if void and rng.random() < 0.5:
            a[rng.random((h, w)) < 0.1] = 255
        return a

    return one(True), one(False)


def _check(gt, res, void_label, mask_res_by_void, pair_mode, radius, d):
    labels, pairs = _frames.frame_counts([gt], [res], void_label=void_label, mask_res_by_void=mask_res_by_void,
                                         pair_mode=pair_mode, radius=radius, d=d, want_f=True, want_b=True)
    g, r = gt.astype(np.int64), res.astype(np.int64)
    if void_label >= 0:
        void = g == void_label
        g = np.where(void, 0, g)
        if mask_res_by_void:
            r = np.where(void, 0, r)
    frame_row = labels[labels[:, 1] == 2]
    assert frame_row.tolist() == [[0, 2, int(gt.max()), int(res.max()),
                                   min(3, len(np.unique(gt))), min(3, len(np.unique(res)))]]
    got = {(int(s), int(lab)): tuple(row[3:]) for row in labels[labels[:, 1] < 2].tolist()
           for s, lab in [row[1:3]]}
    want = {}
    for side, m in ((0, g), (1, r)):
        for lab in np.unique(m):
            if lab:
                mask = m == lab
                want[(side, int(lab))] = (int(mask.sum()), int(ov.boundary_map(mask).sum()),
                                          int(reference.boundary_of_width(mask.astype(np.uint8), d).sum()))
    assert got == want
    assert pairs.shape[1] == 9 and (pairs[:, 7:9] == pairs[:, 4:6]).all()
    got_pairs = {(int(a), int(b)): tuple(row[3:7]) for row in pairs.tolist() for a, b in [row[1:3]]}
    want_pairs = {}
    for rl in np.unique(r):
        for gl in np.unique(g):
            if rl == 0 or gl == 0 or (pair_mode == _frames.DIAGONAL and rl != gl):
                continue
            mr, mg = r == rl, g == gl
            br, bg = ov.boundary_map(mr), ov.boundary_map(mg)
            fg = gm = 0
            if br.any() and bg.any():
                fg = int((br & ov.dilate_disk(bg, radius)).sum())
                gm = int((bg & ov.dilate_disk(br, radius)).sum())
            band_r = reference.boundary_of_width(mr.astype(np.uint8), d).astype(bool)
            band_g = reference.boundary_of_width(mg.astype(np.uint8), d).astype(bool)
            want_pairs[(int(rl), int(gl))] = (int((mr & mg).sum()), fg, gm, int((band_r & band_g).sum()))
    assert got_pairs == want_pairs


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(maps=label_maps(), radius=st.integers(0, 9), d=st.integers(1, 6),
       void=st.booleans(), mask_res=st.booleans(), all_pairs=st.booleans())
def test_counts_equal_the_oracle(maps, radius, d, void, mask_res, all_pairs):
    gt, res = maps
    _check(gt, res, 255 if void else -1, void and mask_res, _frames.ALL_PAIRS if all_pairs else _frames.DIAGONAL,
           radius, d)


@pytest.mark.parametrize("shape,radius", [((1, 1), 0), ((1, 200), 3), ((200, 1), 3), ((64, 64), 64),
                                          ((3, 129), 70), ((70, 128), 65), ((65, 65), 1)])
def test_counts_at_the_edges_of_the_word_layout(shape, radius):
    """Widths at and around multiples of 64 (the bitsets' words) and radii past a word."""
    rng = np.random.default_rng(sum(shape) + radius)
    for _ in range(4):
        gt = rng.integers(0, 3, shape).astype(np.uint16)
        res = np.zeros(shape, np.uint16)
        res[rng.random(shape) < 0.3] = 1
        res[:, -1] = 2
        _check(gt, res, -1, False, _frames.ALL_PAIRS, radius, 2)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(maps=label_maps(max_h=24, max_w=60, max_label=3), void=st.booleans())
def test_per_frame_values_equal_the_oracle(maps, void):
    """J, F and B of every object pair of a frame, made from the counts as the
    evaluators make them, equal the oracle's per-frame definitions (radius and band
    width from the frame's size, void left out as DAVIS' unsupervised task does)."""
    gt, res = maps
    h, w = gt.shape
    opts = _jf.CountOptions(void_label=255 if void else -1, mask_res_by_void=void, pair_mode=_jf.ALL_PAIRS,
                            want_f=True, want_b=True)
    counts = _jf.count_frames([(gt, res)], opts, None, 1)
    objs = list(range(1, 4))
    c = _jf.dense_counts(counts, objs, objs)
    J = _jf.j_values(c["inter"], c["area_res"][:, None], c["area_gt"][None])
    F = _jf.f_values(c["fg"], c["gm"], c["nb_res"][:, None], c["nb_gt"][None])
    B = _jf.b_values(c["band_inter"], c["band_res"][:, None], c["band_gt"][None])
    vmask = (gt == 255) if void else None
    g = np.where(gt == 255, 0, gt) if void else gt
    for ri, rl in enumerate(objs):
        for gi, gl in enumerate(objs):
            assert abs(J[ri, gi, 0] - ov.jaccard(g == gl, res == rl, vmask)) <= TOL
            assert abs(F[ri, gi, 0] - ov.f_measure(g == gl, res == rl, vmask)) <= TOL
            assert abs(B[ri, gi, 0] - ov.boundary_iou(g == gl, res == rl, 0.02, vmask)) <= TOL
    assert _jf.f_radius(h, w) == int(ov.disk_radius(h, w))


@pytest.mark.slow
@pytest.mark.parametrize("shape", [(480, 854), (1080, 1920)])
def test_realistic_sizes(shape):
    """854x480 and 1080p frames of discs and blobs, every label and pair."""
    rng = np.random.default_rng(shape[0])
    h, w = shape
    yy, xx = np.mgrid[:h, :w]
    gt = np.zeros(shape, np.uint16)
    res = np.zeros(shape, np.uint16)
    for k in range(1, 4):
        cy, cx, r = rng.integers(0, h), rng.integers(0, w), rng.integers(20, 300)
        gt[(yy - cy) ** 2 + (xx - cx) ** 2 <= r * r] = k
        res[(yy - cy - 5) ** 2 + (xx - cx + 3) ** 2 <= (r - 4) ** 2] = k
    gt[rng.random(shape) < 0.001] = 255
    _check(gt, res, 255, True, _frames.ALL_PAIRS, _jf.f_radius(h, w), dilation_pixels(h, w, 0.02))


def test_label_above_the_limit_names_frame_and_label():
    gt = np.zeros((4, 4), np.uint16)
    res = np.zeros((4, 4), np.uint16)
    res[1, 1] = 7
    with pytest.raises(_frames.LabelAboveLimit) as e:
        _frames.frame_counts([gt, gt], [gt, res], 10, max_res_label=5)
    assert (e.value.frame, e.value.label, e.value.limit) == (11, 7, 5)
    assert isinstance(e.value, ValueError)


def test_disk_half_widths_are_the_disks():
    for r in range(0, 30):
        hw = _frames.disk_half_widths(r)
        offsets = ov.disk_offsets(float(r))
        for dy in range(r + 1):
            assert hw[dy] == max(dx for oy, dx in offsets if oy == dy)
