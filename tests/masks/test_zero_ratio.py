"""dilation_ratio 0 (issue 25): accepted as the reference accepts it, the
boundary of d = 1, with one warning line; the command line refuses it."""
import contextlib
import io
import warnings

import numpy as np
import pytest

from boundary_api import COCO, COCOeval, mask_to_boundary
from boundary_api.masks import reference
from boundary_api.masks.boundary import ZERO_RATIO_WARNING, check_dilation_ratio
from conftest import COCO_DT, COCO_GT


def test_zero_is_d_1_with_one_warning():
    mask = np.zeros((40, 60), np.uint8)
    mask[5:30, 10:50] = 1
    with pytest.warns(UserWarning) as caught:
        got = mask_to_boundary(mask, 0)
    assert [str(w.message) for w in caught] == [ZERO_RATIO_WARNING] and "\n" not in ZERO_RATIO_WARNING
    with pytest.warns(UserWarning, match="dilation_ratio 0"):
        assert np.array_equal(got, reference.mask_to_boundary(mask, 0))
    # d = 1: the ratio 1 / diagonal gives the same boundary
    assert np.array_equal(got, mask_to_boundary(mask, 1 / np.hypot(40, 60)))


def test_evaluator_with_zero_warns_and_no_other_ratio_does():
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        dt = gt.loadRes(COCO_DT)
    with pytest.warns(UserWarning, match="dilation_ratio 0 gives the thinnest boundary"):
        COCOeval(gt, dt, "boundary", dilation_ratio=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for ratio in (1e-9, 0.02, 2):
            assert check_dilation_ratio(ratio) == ratio


def _python_entry_points():
    """Every Python entry point that takes a dilation ratio, called with 0
    on small input (the command line's counterpart:
    tests/cli/test_issue25_cli.py::test_dilation_ratio_0_is_refused_everywhere)."""
    import os

    from boundary_api import LVIS, LVISEval, LVISResults, pq_compute
    from boundary_api.diagnostics.tide import image_ious
    from boundary_api.cityscapes import evaluate_cityscapes
    from boundary_api.scale.partials import evaluate_partial
    from boundary_api.masks.measures import boundary_iou, measures
    from boundary_api.semantic import SemanticEvaluator
    from conftest import DATA, LVIS_DT, LVIS_GT

    def coco():
        with contextlib.redirect_stdout(io.StringIO()):
            gt = COCO(COCO_GT)
            return gt, gt.loadRes(COCO_DT)

    mask = np.zeros((1, 20, 30), np.uint8)
    mask[0, 4:15, 5:25] = 1
    panoptic = os.path.join(DATA, "panoptic")
    return {
        "LVISEval": lambda: LVISEval(LVIS(LVIS_GT), LVISResults(LVIS(LVIS_GT), LVIS_DT), "boundary",
                                     dilation_ratio=0),
        "SemanticEvaluator": lambda: SemanticEvaluator(3, dilation_ratio=0),
        "pq_compute": lambda: pq_compute(os.path.join(panoptic, "panoptic_examples.json"),
                                         os.path.join(panoptic, "pred_shift3.json"), iou_type="boundary",
                                         dilation_ratio=0, print_progress=False),
        "evaluate_cityscapes": lambda: evaluate_cityscapes(os.path.join(DATA, "cityscapes", "visible", "gtFine", "val"),
                                                           os.path.join(DATA, "cityscapes", "visible", "results"),
                                                           dilation_ratio=0, num_threads=1),
        "boundary_iou": lambda: boundary_iou(mask, mask, dilation_ratio=0),
        "measures": lambda: measures(mask, mask, dilation_ratio=0),
        "image_ious": lambda: image_ious(*coco(), dilation_ratio=0),
        "evaluate_partial": lambda: evaluate_partial(*coco(), "boundary", coco()[0].getImgIds()[:3],
                                                     dilation_ratio=0),
    }


@pytest.mark.parametrize("name", sorted(_python_entry_points()))
def test_every_python_entry_point_warns_for_zero(name):
    with pytest.warns(UserWarning, match="dilation_ratio 0 gives the thinnest boundary"):
        _python_entry_points()[name]()
