"""boundary_api.integrations.torchmetrics.MeanAveragePrecision (issue 28): the same
results as torchmetrics' MeanAveragePrecision (pycocotools backend) for bbox and segm,
Boundary AP equal to COCOeval's, state synchronised over 2 CPU processes (gloo) into the
single-process result, and a state of match tables, never masks.

Optional tier (``pytest -m torch``)."""
import contextlib
import io
import json
import os
import pickle
import socket
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("torchmetrics")
from torchmetrics.detection import MeanAveragePrecision as TorchmetricsMAP  # noqa: E402

import pycocotools.mask as mask_utils  # noqa: E402

import boundary_api  # noqa: E402
from boundary_api.integrations.torchmetrics import MeanAveragePrecision  # noqa: E402

from conftest import COCO_DT, COCO_GT, TESTS  # noqa: E402
from incremental_data import make_images  # noqa: E402

pytestmark = [pytest.mark.torch]


def _coco_images(n_images=None):
    """The bundled COCO sample, one (preds, target) per image, areas in float64."""
    with contextlib.redirect_stdout(io.StringIO()):
        gt = boundary_api.COCO(COCO_GT)
    with open(COCO_DT) as f:
        results = json.load(f)
    by_image = {}
    for r in results:
        by_image.setdefault(r["image_id"], []).append(r)
    out = []
    for img_id in sorted(gt.getImgIds())[:n_images]:
        info = gt.imgs[img_id]
        h, w = info["height"], info["width"]
        anns = gt.loadAnns(gt.getAnnIds(imgIds=[img_id]))
        gm = np.stack([gt.annToMask(a) for a in anns]) if anns else np.zeros((0, h, w), np.uint8)
        gb = np.array([a["bbox"] for a in anns], np.float64).reshape(-1, 4)
        dets = by_image.get(img_id, [])
        rles = [d["segmentation"] for d in dets]
        dm = mask_utils.decode(rles).transpose(2, 0, 1) if rles else np.zeros((0, h, w), np.uint8)
        db = np.asarray(mask_utils.toBbox(rles) if rles else np.zeros((0, 4)), np.float64).reshape(-1, 4)
        xyxy = lambda b: torch.tensor(np.c_[b[:, :2], b[:, :2] + b[:, 2:]], dtype=torch.float32)
        target = {"boxes": xyxy(gb), "labels": torch.tensor([a["category_id"] for a in anns], dtype=torch.int64),
                  "masks": torch.from_numpy(gm.astype(bool)),
                  "iscrowd": torch.tensor([a["iscrowd"] for a in anns], dtype=torch.int64),
                  "area": torch.tensor([a["area"] for a in anns], dtype=torch.float64)}
        preds = {"boxes": xyxy(db), "scores": torch.tensor([d["score"] for d in dets], dtype=torch.float32),
                 "labels": torch.tensor([d["category_id"] for d in dets], dtype=torch.int64),
                 "masks": torch.from_numpy(dm.astype(bool))}
        out.append((preds, target))
    return out


def _synthetic(n_images=24, seed=5):
    def t(d):
        return {k: torch.from_numpy(np.asarray(v)) for k, v in d.items()}
    return [(t(p), t(g)) for p, g in make_images(seed=seed, n_images=n_images, max_side=60)]


def _run(cls, images, batch=4, **options):
    metric = cls(**options)
    for i in range(0, len(images), batch):
        part = images[i:i + batch]
        metric.update([p for p, _ in part], [t for _, t in part])
    return metric.compute()


def _assert_same(ours, theirs):
    """Same keys (in order), types, dtypes, shapes and bit-for-bit values."""
    assert list(ours) == list(theirs)
    for key in theirs:
        a, b = ours[key], theirs[key]
        assert type(a) is type(b), key
        if isinstance(b, dict):
            assert list(a) == list(b), key
            for k in b:
                assert type(a[k]) is type(b[k]), (key, k)
                if isinstance(b[k], torch.Tensor):
                    assert a[k].dtype == b[k].dtype and a[k].shape == b[k].shape and torch.equal(a[k], b[k]), (key, k)
                else:
                    assert a[k] == b[k], (key, k)
        else:
            assert a.dtype == b.dtype and a.shape == b.shape, (key, a, b)
            assert torch.equal(a, b) or torch.allclose(a, b, rtol=0, atol=0, equal_nan=True), (key, a, b)


@pytest.fixture(scope="module")
def coco():
    return _coco_images()


@pytest.fixture(scope="module")
def synthetic():
    return _synthetic()


@pytest.mark.slow
@pytest.mark.parametrize("iou_type", ["bbox", "segm"])
def test_equals_torchmetrics_on_the_bundled_coco_sample(coco, iou_type):
    options = dict(iou_type=iou_type, class_metrics=True)
    _assert_same(_run(MeanAveragePrecision, coco, batch=8, **options),
                 _run(TorchmetricsMAP, coco, batch=8, **options))


@pytest.mark.parametrize("options", [
    dict(iou_type="bbox"),
    dict(iou_type="segm", class_metrics=True),
    dict(iou_type=("bbox", "segm"), extended_summary=True),
    dict(iou_type="segm", class_metrics=True, average="micro", extended_summary=True),
    dict(iou_type=("segm", "bbox"), average="micro"),
    dict(iou_type="bbox", box_format="xyxy", iou_thresholds=[0.3, 0.5, 0.8], rec_thresholds=[0.0, 0.2, 1.0],
         max_detection_thresholds=[1, 3, 5]),
])
def test_equals_torchmetrics(synthetic, options):
    if "max_detection_thresholds" in options:
        pytest.importorskip("torchvision")
    many = "max_detection_thresholds" in options
    with pytest.warns(UserWarning, match="more than 5 detections") if many else contextlib.nullcontext():
        theirs = _run(TorchmetricsMAP, synthetic, **options)
    with pytest.warns(UserWarning, match="more than 5 detections") if many else contextlib.nullcontext():
        ours = _run(MeanAveragePrecision, synthetic, **options)
    _assert_same(ours, theirs)


@pytest.mark.slow
def test_equals_torchmetrics_on_coco_images_with_several_types(coco):
    options = dict(iou_type=("bbox", "segm"), class_metrics=True, extended_summary=True)
    _assert_same(_run(MeanAveragePrecision, coco[:12], **options), _run(TorchmetricsMAP, coco[:12], **options))


@pytest.mark.slow
def test_boundary_ap_equals_cocoeval_on_the_bundled_files(coco):
    """With boxes too, every image is evaluated, as COCOeval does on the files."""
    with contextlib.redirect_stdout(io.StringIO()):
        gt = boundary_api.COCO(COCO_GT)
        ev = boundary_api.COCOeval(gt, gt.loadRes(COCO_DT), iouType="boundary")
        ev.params.iouThrs = np.array(torch.linspace(0.5, 0.95, 10).tolist())
        ev.params.recThrs = np.array(torch.linspace(0.0, 1.0, 101).tolist())
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    ours = _run(MeanAveragePrecision, coco, batch=8, iou_type=("bbox", "boundary"))
    names = ["map", "map_50", "map_75", "map_small", "map_medium", "map_large", "mar_1", "mar_10", "mar_100",
             "mar_small", "mar_medium", "mar_large"]
    got = [ours[f"boundary_{n}"] for n in names]
    assert got == [torch.tensor(s, dtype=torch.float32) for s in ev.stats.tolist()]
    assert 0.2 < float(ours["boundary_map"]) < float(ours["bbox_map"]) + 0.5


def test_state_is_match_tables_not_masks(synthetic):
    metric = MeanAveragePrecision(iou_type=("segm", "boundary"))
    for preds, target in synthetic:
        metric.update([preds], [target])
    metric._flush()
    n_dets = sum(len(p["labels"]) for p, _ in synthetic)
    for name, value in metric.metric_state.items():
        for tensor in value if isinstance(value, list) else [value]:
            assert tensor.dim() <= 2, name
            assert tensor.numel() <= 40 * n_dets + 1000, name
    flags = torch.cat(metric.main_segm_dt_flags)
    assert flags.dtype == torch.uint8 and flags.shape[1] == 4 * 10 and flags.shape[0] <= n_dets


def test_forward_pickle_and_reset(synthetic):
    options = dict(iou_type=("boundary", "segm"), class_metrics=True)
    whole = _run(MeanAveragePrecision, synthetic, **options)
    metric = MeanAveragePrecision(**options)
    first = synthetic[:4]
    batch_value = metric([p for p, _ in first], [t for _, t in first])
    _assert_same(batch_value, _run(MeanAveragePrecision, first, **options))
    metric = pickle.loads(pickle.dumps(metric))
    for i in range(4, len(synthetic), 4):
        part = synthetic[i:i + 4]
        metric.update([p for p, _ in part], [t for _, t in part])
    _assert_same(metric.compute(), whole)
    metric.reset()
    for i in range(0, len(synthetic), 5):
        part = synthetic[i:i + 5]
        metric.update([p for p, _ in part], [t for _, t in part])
    _assert_same(metric.compute(), whole)


def test_without_predictions_every_number_is_minus_one(synthetic):
    empty = [({**p, "boxes": p["boxes"][:0], "scores": p["scores"][:0], "labels": p["labels"][:0],
               "masks": p["masks"][:0]}, t) for p, t in synthetic[:6]]
    options = dict(iou_type="segm", class_metrics=True)
    _assert_same(_run(MeanAveragePrecision, empty, **options), _run(TorchmetricsMAP, empty, **options))


def test_bad_arguments_are_refused_as_torchmetrics_does():
    for kwargs in (dict(box_format="yxyx"), dict(iou_type="keypoints"), dict(iou_thresholds=0.5),
                   dict(max_detection_thresholds=[1, 10]), dict(class_metrics=1), dict(average="weighted")):
        with pytest.raises(ValueError):
            TorchmetricsMAP(**kwargs)
        with pytest.raises(ValueError):
            MeanAveragePrecision(**kwargs)
    metric = MeanAveragePrecision(iou_type="segm")
    with pytest.raises(ValueError, match="same length"):
        metric.update([], [{"labels": torch.zeros(0)}])


_WORKER = r"""
import os, sys
sys.path.insert(0, {tests!r})
import torch, torch.distributed as dist
from torchmetrics.detection import MeanAveragePrecision as TorchmetricsMAP
from boundary_api.integrations.torchmetrics import MeanAveragePrecision
from test_torchmetrics_metric import _synthetic

rank, world, port, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{{port}}", rank=rank, world_size=world)
images = _synthetic(n_images=20, seed=9)
mine = images[rank::world]          # a DistributedSampler's shard (no shuffling)
results = {{}}
for name, cls, options in (("ours", MeanAveragePrecision, dict(iou_type=("boundary", "segm", "bbox"),
                                                                  class_metrics=True)),
                           ("theirs", TorchmetricsMAP, dict(iou_type=("segm", "bbox"), class_metrics=True))):
    metric = cls(**options)
    for i in range(0, len(mine), 3):
        metric.update([p for p, _ in mine[i:i + 3]], [t for _, t in mine[i:i + 3]])
    results[name] = metric.compute()
    # after compute() the local state is back: a second compute gives the same numbers
    metric._computed = None
    again = metric.compute()
    assert all(torch.equal(again[k], results[name][k]) for k in again if isinstance(again[k], torch.Tensor))
if rank == 0:
    torch.save(results, out)
dist.destroy_process_group()
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_two_processes_over_gloo_give_the_single_process_result(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(_WORKER.format(tests=os.path.join(TESTS, "integrations")))
    out = tmp_path / "results.pt"
    port = str(_free_port())
    env = dict(os.environ, PYTHONPATH=TESTS + os.pathsep + os.environ.get("PYTHONPATH", ""))
    procs = [subprocess.Popen([sys.executable, str(script), str(r), "2", port, str(out)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
    got = torch.load(out, weights_only=False)
    images = _synthetic(n_images=20, seed=9)
    single = _run(MeanAveragePrecision, images, batch=3, iou_type=("boundary", "segm", "bbox"), class_metrics=True)
    _assert_same(got["ours"], single)
    theirs_single = _run(TorchmetricsMAP, images, batch=3, iou_type=("segm", "bbox"), class_metrics=True)
    _assert_same(got["theirs"], theirs_single)  # (torchmetrics orders the gathered images the same way)
    for key, value in theirs_single.items():
        if key.startswith("segm_") and "per_class" not in key:
            assert torch.equal(got["ours"][key], value), key


def test_micro_with_class_metrics_is_micro_for_every_iou_type(synthetic):
    """Known difference: torchmetrics evaluates the IoU types after the first with macro
    averaging when class_metrics is on (it reuses its per-class data sets)."""
    options = dict(iou_type=("segm", "bbox"), class_metrics=True, average="micro")
    ours = _run(MeanAveragePrecision, synthetic, **options)
    theirs = _run(TorchmetricsMAP, synthetic, **options)
    assert torch.equal(ours["segm_map"], theirs["segm_map"])
    micro = _run(MeanAveragePrecision, synthetic, iou_type=("segm", "bbox"), average="micro")
    assert torch.equal(ours["bbox_map"], micro["bbox_map"])
    assert torch.equal(micro["bbox_map"], _run(TorchmetricsMAP, synthetic, iou_type=("segm", "bbox"),
                                               average="micro")["bbox_map"])
    macro = _run(TorchmetricsMAP, synthetic, iou_type=("segm", "bbox"))
    assert torch.equal(theirs["bbox_map"], macro["bbox_map"]) and not torch.equal(theirs["bbox_map"], ours["bbox_map"])


def test_per_class_box_numbers_with_several_types_use_box_areas(synthetic):
    """Known difference: torchmetrics' per-class box numbers with several IoU types read
    the detections' mask areas for the area ranges (a box of negative area counts as in
    range); ours are its single-type box numbers."""
    ours = _run(MeanAveragePrecision, synthetic, iou_type=("bbox", "segm"), class_metrics=True)
    single = _run(TorchmetricsMAP, synthetic, iou_type="bbox", class_metrics=True)
    assert torch.equal(ours["bbox_map_per_class"], single["map_per_class"])
    assert torch.equal(ours["bbox_mar_100_per_class"], single["mar_100_per_class"])
    theirs = _run(TorchmetricsMAP, synthetic, iou_type=("bbox", "segm"), class_metrics=True)
    assert not torch.equal(theirs["bbox_map_per_class"], single["map_per_class"])
