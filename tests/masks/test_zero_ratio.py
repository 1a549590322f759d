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
