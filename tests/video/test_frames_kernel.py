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


# ----------------------------------------------------------------------------
# MOSEv2: footprints of any radius (scikit-image's off-centre disks), the
# object-adaptive F_new, J + 1 smoothed
# ----------------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(radius=st.one_of(st.integers(0, 12).map(float), st.floats(0, 12.5, allow_nan=False)))
def test_disk_footprint_is_scikit_images_disk(radius):
    skimage = pytest.importorskip("skimage.morphology")
    assert np.array_equal(_frames.disk_footprint(radius), skimage.disk(radius).astype(bool))
    assert np.array_equal(ov.disk_kernel(radius), skimage.disk(radius).astype(bool))


def test_the_cap_disk_of_854x480():
    """The uncut cap at 854x480 is 7.837 pixels: its disk has 191 pixels, disk(8) 197."""
    cap, fps = _jf.adaptive_footprints(480, 854)
    assert abs(cap - 7.837) < 1e-3 and len(fps) == 10
    size = [int((f[:, 2] - f[:, 1] + 1).sum()) for f in fps]
    assert size[-1] == 191 and size[8] == 197


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(maps=label_maps(max_h=30, max_w=90, max_label=3), cap=st.floats(0.2, 9.5, allow_nan=False),
       th=st.sampled_from([0.1, 0.05, 0.3, 1.0]))
def test_adaptive_counts_equal_the_oracle(maps, cap, th):
    """F and F_new of every pair of labels, with footprints of a drawn cap
    (fractional: off-centre) and adaptive factor, equal the oracle's."""
    gt, res = maps
    top = int(np.ceil(cap))
    fps = [_frames.footprint_rows(_frames.disk_footprint(float(k))) for k in range(top + 1)]
    fps.append(_frames.footprint_rows(_frames.disk_footprint(cap)))
    labels, pairs = _frames.frame_counts([gt], [res], pair_mode=_frames.DIAGONAL, footprints=fps, adaptive_th=th,
                                         adaptive_cap=cap)
    area = {(int(r[1]), int(r[2])): (int(r[3]), int(r[4])) for r in labels.tolist() if r[1] < 2}
    for row in pairs.tolist():
        lab = row[1]
        mg, mr = gt == lab, res == lab
        f_want, fn_want = ov.mosev2_f(mg, mr, th, cap)
        n_res, n_gt = area[(1, lab)][1], area[(0, lab)][1]
        f = _jf.f_values(np.array([row[4]]), np.array([row[5]]), np.array([n_res]), np.array([n_gt]))[0]
        fn = _jf.f_values(np.array([row[7]]), np.array([row[8]]), np.array([n_res]), np.array([n_gt]))[0]
        assert abs(f - f_want) <= TOL and abs(fn - fn_want) <= TOL, (lab, cap, th)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(maps=label_maps(max_h=90, max_w=260, max_label=3))
def test_mosev2_per_frame_values_equal_the_oracle(maps):
    """J (+ 1 smoothed), F, F_new and B of each object of a frame, made as
    mosev2_benchmark makes them (cap from the frame's size), equal the oracle's."""
    gt, res = maps
    gt = np.where(gt == 255, 0, gt).astype(np.uint16)
    opts = _jf.CountOptions(want_f=True, want_b=True, adaptive_th=0.1)
    counts = _jf.count_frames([(gt, res)], opts, None, 1)
    objs = [1, 2, 3]
    c = _jf.dense_counts(counts, objs, objs)
    k = np.arange(3)
    J = _jf.j_values_smoothed(c["inter"][k, k], c["area_res"], c["area_gt"])
    F = _jf.f_values(c["fg"][k, k], c["gm"][k, k], c["nb_res"], c["nb_gt"])
    Fn = _jf.f_values(c["fg_new"][k, k], c["gm_new"][k, k], c["nb_res"], c["nb_gt"])
    B = _jf.b_values(c["band_inter"][k, k], c["band_res"], c["band_gt"])
    for i, lab in enumerate(objs):
        f, fn = ov.mosev2_f(gt == lab, res == lab)
        assert abs(J[i, 0] - ov.mosev2_jaccard(gt == lab, res == lab)) <= TOL
        assert abs(F[i, 0] - f) <= TOL and abs(Fn[i, 0] - fn) <= TOL
        assert abs(B[i, 0] - ov.boundary_iou(gt == lab, res == lab, 0.02)) <= TOL


@pytest.mark.parametrize("shape", [(480, 854), pytest.param((1080, 1920), marks=pytest.mark.slow)])
def test_mosev2_realistic_sizes(shape):
    """Objects across the cap at 854x480 and 1080p: tiny (radius 1-2), medium,
    large (the cap's disk)."""
    rng = np.random.default_rng(shape[0] + 1)
    h, w = shape
    yy, xx = np.mgrid[:h, :w]
    gt = np.zeros(shape, np.uint16)
    res = np.zeros(shape, np.uint16)
    for k, r in enumerate((3, 12, 40, 150), start=1):
        cy, cx = rng.integers(r, h - r), rng.integers(r, w - r)
        gt[(yy - cy) ** 2 + (xx - cx) ** 2 <= r * r] = k
        res[(yy - cy - 2) ** 2 + (xx - cx + 1) ** 2 <= (r + 1) ** 2] = k
    opts = _jf.CountOptions(want_f=True, adaptive_th=0.1)
    counts = _jf.count_frames([(gt, res)], opts, None, 1)
    c = _jf.dense_counts(counts, [1, 2, 3, 4], [1, 2, 3, 4])
    k = np.arange(4)
    F = _jf.f_values(c["fg"][k, k], c["gm"][k, k], c["nb_res"], c["nb_gt"])
    Fn = _jf.f_values(c["fg_new"][k, k], c["gm_new"][k, k], c["nb_res"], c["nb_gt"])
    for i in range(4):
        f, fn = ov.mosev2_f(gt == i + 1, res == i + 1)
        assert abs(F[i, 0] - f) <= TOL and abs(Fn[i, 0] - fn) <= TOL


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(maps=label_maps(max_label=6), limit=st.integers(0, 7), binarize=st.booleans())
def test_binarized_and_limited_labels_equal_the_oracle(maps, limit, binarize):
    """The transformed rows (ground-truth labels above ``max_gt_label`` as
    background, or both maps binarised) against NumPy: every label's area and
    every pair's intersection; the frame row keeps the raw maps' values."""
    gt, res = maps
    labels, pairs = _frames.frame_counts([gt], [res], binarize=binarize, max_gt_label=limit,
                                         pair_mode=_frames.ALL_PAIRS, want_f=False, want_b=False)
    if binarize:
        g, r = (gt != 0).astype(np.int64), (res != 0).astype(np.int64)
    else:
        g, r = np.where(gt > limit, 0, gt).astype(np.int64), res.astype(np.int64)
    frame_row = labels[labels[:, 1] == 2]
    assert frame_row.tolist() == [[0, 2, int(gt.max()), int(res.max()),
                                   min(3, len(np.unique(gt))), min(3, len(np.unique(res)))]]
    got = {(int(row[1]), int(row[2])): int(row[3]) for row in labels[labels[:, 1] < 2].tolist()}
    want = {(side, int(lab)): int((m == lab).sum()) for side, m in ((0, g), (1, r)) for lab in np.unique(m) if lab}
    assert got == want
    got_pairs = {(int(row[1]), int(row[2])): int(row[3]) for row in pairs.tolist()}
    want_pairs = {(int(a), int(b)): int(((r == a) & (g == b)).sum())
                  for a in np.unique(r) if a for b in np.unique(g) if b}
    assert got_pairs == want_pairs


@settings(max_examples=100, deadline=None)
@given(maps=label_maps(max_label=9), limit=st.integers(0, 9))
def test_the_first_label_above_the_limit_in_raster_order(maps, limit):
    gt, res = maps
    above = res[res > limit]
    if not len(above):
        _frames.frame_counts([gt], [res], max_res_label=limit)
        return
    with pytest.raises(_frames.LabelAboveLimit) as e:
        _frames.frame_counts([gt], [res], max_res_label=limit)
    assert e.value.label == int(above[0])
