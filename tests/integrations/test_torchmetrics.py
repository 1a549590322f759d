"""torchmetrics' ``MeanAveragePrecision(backend="pycocotools")`` run unchanged on
boundary_api through ``boundary_api.swapped()`` / ``init_as_pycocotools()``: every
result (``extended_summary`` included) equals its own run on pycocotools.

Optional tier (``pytest -m torch``): skipped when torch or torchmetrics is missing."""
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")
from torchmetrics.detection import MeanAveragePrecision  # noqa: E402

import pycocotools.mask as mask_utils  # noqa: E402
from pycocotools.coco import COCO as OriginalCOCO  # noqa: E402

import boundary_api  # noqa: E402
from boundary_api.swap import is_swapped  # noqa: E402

from conftest import COCO_DT, COCO_GT  # noqa: E402

pytestmark = [pytest.mark.torch]


def _xyxy(boxes):
    boxes = np.asarray(boxes, dtype=np.float64).reshape(-1, 4)
    return torch.tensor(np.c_[boxes[:, :2], boxes[:, :2] + boxes[:, 2:]], dtype=torch.float32)


def _images(n_images=None):
    """(preds, target) of the bundled COCO data, one image at a time, as torchmetrics takes them."""
    import json
    import contextlib
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        gt = OriginalCOCO(COCO_GT)
    with open(COCO_DT) as f:
        results = json.load(f)
    by_image = {}
    for r in results:
        by_image.setdefault(r["image_id"], []).append(r)
    for img_id in sorted(gt.getImgIds())[:n_images]:
        info = gt.imgs[img_id]
        h, w = info["height"], info["width"]
        anns = gt.loadAnns(gt.getAnnIds(imgIds=[img_id]))
        gmasks = np.stack([gt.annToMask(a) for a in anns]) if anns else np.zeros((0, h, w), np.uint8)
        target = {
            "boxes": _xyxy([a["bbox"] for a in anns]),
            "labels": torch.tensor([a["category_id"] for a in anns], dtype=torch.int64),
            "masks": torch.from_numpy(gmasks.astype(bool)),
            "iscrowd": torch.tensor([a["iscrowd"] for a in anns], dtype=torch.int64),
            "area": torch.tensor([a["area"] for a in anns], dtype=torch.float32),
        }
        dets = by_image.get(img_id, [])
        rles = [d["segmentation"] for d in dets]
        dmasks = mask_utils.decode(rles).transpose(2, 0, 1) if rles else np.zeros((0, h, w), np.uint8)
        preds = {
            "boxes": _xyxy(mask_utils.toBbox(rles) if rles else []),
            "scores": torch.tensor([d["score"] for d in dets], dtype=torch.float32),
            "labels": torch.tensor([d["category_id"] for d in dets], dtype=torch.int64),
            "masks": torch.from_numpy(dmasks.astype(bool)),
        }
        yield preds, target


def _compute(n_images=None, **options):
    metric = MeanAveragePrecision(backend="pycocotools", **options)
    for preds, target in _images(n_images):
        metric.update([preds], [target])
    return metric.compute()


def _assert_same(ours, theirs):
    """Same keys, types, dtypes, shapes and bit-for-bit values (NaN == NaN)."""
    assert list(ours) == list(theirs)
    for key in theirs:
        a, b = ours[key], theirs[key]
        assert type(a) is type(b), key
        if isinstance(b, dict):
            assert list(a) == list(b), key
            for k in b:
                assert type(a[k]) is type(b[k]), (key, k)
                if isinstance(b[k], torch.Tensor):
                    assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape, (key, k)
                    assert torch.equal(a[k], b[k]), (key, k)
                else:
                    assert a[k] == b[k], (key, k)
        else:
            assert a.dtype == b.dtype and a.shape == b.shape, key
            assert torch.allclose(a, b, rtol=0, atol=0, equal_nan=True), key


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_mean_average_precision_on_boundary_api_equals_pycocotools(iou_type):
    """The whole bundled COCO sample, class metrics and extended summary included."""
    options = dict(iou_type=iou_type, class_metrics=True, extended_summary=True)
    theirs = _compute(**options)
    with boundary_api.swapped(lvis=False):
        assert is_swapped("pycocotools")
        ours = _compute(**options)
    assert not is_swapped("pycocotools")
    _assert_same(ours, theirs)


@pytest.mark.filterwarnings("error::UserWarning")
@pytest.mark.parametrize("iou_type", ["bbox", "segm", ("bbox", "segm")], ids=["bbox", "segm", "both"])
def test_no_warning_on_what_torchmetrics_builds(iou_type):
    """torchmetrics builds its COCO dicts itself, its images without a
    height and width where no mask gives them (issue 40): boxes need no
    image size and RLEs carry their own, so boundary_api warns about
    nothing (any UserWarning fails this test) and gives the same numbers."""
    options = dict(iou_type=iou_type, class_metrics=True)
    theirs = _compute(25, **options)
    with boundary_api.swapped(lvis=False):
        ours = _compute(25, **options)
    _assert_same(ours, theirs)


def test_both_iou_types_at_once_on_a_few_images():
    options = dict(iou_type=("bbox", "segm"), extended_summary=True)
    theirs = _compute(12, **options)
    with boundary_api.swapped(lvis=False):
        ours = _compute(12, **options)
    _assert_same(ours, theirs)


def test_the_metric_really_runs_on_boundary_api(monkeypatch):
    """Not only equal numbers: torchmetrics' evaluator is boundary_api.COCOeval."""
    made = []
    original_init = boundary_api.COCOeval.__init__

    def spy(self, *args, **kwargs):
        made.append(type(self))
        original_init(self, *args, **kwargs)

    monkeypatch.setattr(boundary_api.COCOeval, "__init__", spy)
    boundary_api.init_as_pycocotools()
    try:
        _compute(3, iou_type="segm")
    finally:
        boundary_api.restore_originals("pycocotools")
    assert made and all(t is boundary_api.COCOeval for t in made)
    made.clear()
    _compute(3, iou_type="segm")
    assert made == []
    assert "boundary_api" not in repr(sys.modules["pycocotools.cocoeval"])
