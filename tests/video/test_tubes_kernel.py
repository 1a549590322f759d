"""The tube IoU step of YTVOSeval (boundary_api.video._tubes through YTVOSeval.computeIoU /
computeBoundaryIoU) against the plain NumPy oracle (oracle_vis.py) on tracks generated with
hypothesis: absent frames, tracks of different lengths (zip), masks of another size, empty
masks, crowds, several dilation ratios; every matrix, not only the summary."""
import contextlib
import io
import os
import sys

import numpy as np
from hypothesis import HealthCheck, given, settings, strategies as st
from pycocotools import mask as mask_util

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oracle_vis as ovis  # noqa: E402

from boundary_api.video import YTVOS, YTVOSeval  # noqa: E402

TOL = 1e-12


def _rle(m):
    r = mask_util.encode(np.asfortranarray(m.astype(np.uint8)))
    r["counts"] = r["counts"].decode()
    return r


@st.composite
def videos(draw):
    """One video of a few tracks and results (seeded NumPy draws for the pixels)."""
    h, w = draw(st.integers(1, 24)), draw(st.integers(1, 40))
    n = draw(st.integers(1, 6))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))

    def frames(length):
        out = []
        for _ in range(length):
            u = rng.random()
            if u < 0.2:
                out.append(None)
                continue
            fh, fw = (h, w) if rng.random() < 0.9 else (h + 1, w)  # sometimes another size
            m = np.zeros((fh, fw), np.uint8)
            if u > 0.3:
                y0, x0 = rng.integers(0, fh), rng.integers(0, fw)
                m[y0:y0 + rng.integers(1, fh + 1), x0:x0 + rng.integers(1, fw + 1)] = 1
                if rng.random() < 0.3:
                    m[rng.random((fh, fw)) < 0.2] ^= 1
            out.append(m)
        return out

    gts = [(frames(n if rng.random() < 0.8 else int(rng.integers(1, n + 2))), int(rng.random() < 0.2))
           for _ in range(draw(st.integers(1, 3)))]
    dts = [(frames(n if rng.random() < 0.8 else int(rng.integers(1, n + 2))), float(rng.integers(0, 4)) / 4)
           for _ in range(draw(st.integers(1, 4)))]
    return h, w, n, gts, dts


def _datasets(h, w, n, gts, dts):
    anns = []
    for i, (frames, crowd) in enumerate(gts):
        anns.append({"id": i + 1, "video_id": 1, "category_id": 1, "iscrowd": crowd, "height": h, "width": w,
                     "segmentations": [None if m is None else _rle(m) for m in frames],
                     "areas": [None if m is None else float(m.sum()) for m in frames]})
    dataset = {"videos": [{"id": 1, "height": h, "width": w, "length": n}], "annotations": anns,
               "categories": [{"id": 1, "name": "a"}]}
    results = [{"video_id": 1, "category_id": 1, "score": s, "height": h, "width": w,
                "segmentations": [None if m is None else _rle(m) for m in frames]} for frames, s in dts]
    return dataset, results


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(video=videos(), ratio=st.sampled_from([0.02, 0.05, 0.3]), boundary=st.booleans())
def test_tube_ious_equal_the_oracle(video, ratio, boundary, tmp_path_factory):
    h, w, n, gts, dts = video
    dataset, results = _datasets(h, w, n, gts, dts)
    import json
    import warnings

    path = tmp_path_factory.mktemp("tube") / "gt.json"
    path.write_text(json.dumps(dataset))
    iou_type = "boundary" if boundary else "segm"
    with contextlib.redirect_stdout(io.StringIO()), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gt = YTVOS(str(path))
        ev = YTVOSeval(gt, gt.loadRes(results), iou_type, dilation_ratio=ratio)
        ev.evaluate()
    got = ev.ious[1, 1]
    order = np.argsort([-s for _, s in dts], kind="mergesort")
    want = ovis.tube_iou_matrix([dts[i][0] for i in order], [g for g, _ in gts], gt_iscrowd=[c for _, c in gts],
                                iou_type=iou_type, gt_ratio=ratio, dt_ratio=ratio,
                                dt_absent_shapes=[(h, w)] * len(dts), gt_absent_shapes=[(h, w)] * len(gts))
    assert np.asarray(got).shape == want.shape
    assert np.abs(np.asarray(got) - want).max() <= TOL
