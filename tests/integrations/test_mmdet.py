"""boundary_api.integrations.mmdet on a real MMDetection (optional tier, ``pytest -m mmdet``).

The bundled COCO and LVIS results are fed through ``process()`` as a model's
outputs (tests/integrations/mmdet_feed.py); Boundary AP must equal
``boundary-eval``'s library call (:func:`boundary_api.evaluate_files`) and the
reference implementation's golden numbers to 1e-12, with the masks' areas for
the small / medium / large ranges; bbox and segm must equal MMDetection's own
metrics bit for bit.  MMDetection's own metrics on boundary_api through the
swap, in the three import orders, give the numbers they give on pycocotools.
A config with ``custom_imports`` builds the metric through mmengine's
registry, and two ranks (gloo, on this machine) gather their results as
MMDetection's metrics do.  Needs mmdet 3, mmengine and mmcv with its ops
(docs/testing.md gives the build); skips without them.
"""
import copy
import json
import logging
import os
import pickle
import socket
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import boundary_api
from boundary_api.evaluate import evaluate_files
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT, golden_cases, identical

pytestmark = [pytest.mark.mmdet]
try:
    import mmdet.evaluation.metrics  # noqa: F401  (needs mmcv with its compiled ops)
except ImportError as exc:
    pytest.skip(f"needs MMDetection 3 with mmengine and mmcv: {exc}", allow_module_level=True)

from mmdet.evaluation.metrics import CocoMetric, LVISMetric  # noqa: E402
from mmengine.logging import MMLogger  # noqa: E402

from boundary_api.integrations.mmdet import BoundaryCocoMetric, BoundaryLVISMetric  # noqa: E402
from mmdet_feed import dataset_meta, processed  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = {c["name"]: c for c in golden_cases("instance_eval.json")}
COCO_ITEMS = ("mAP", "mAP_50", "mAP_75", "mAP_s", "mAP_m", "mAP_l")
LVIS_ITEMS = ("AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf")


def _r3(v):
    return float(f"{round(v, 3)}")


@pytest.fixture(scope="module")
def coco_results():
    """The COCO results after BoundaryCocoMetric.process() (MMDetection's CocoMetric.process)."""
    m = BoundaryCocoMetric(ann_file=COCO_GT, metric=["bbox", "segm", "boundary"])
    return processed(m, COCO_GT, COCO_DT)


@pytest.fixture(scope="module")
def lvis_results():
    m = BoundaryLVISMetric(ann_file=LVIS_GT, metric=["bbox", "segm", "boundary"])
    return processed(m, LVIS_GT, LVIS_DT)


def _evaluate(metric, results, gt_path):
    """``metric.evaluate()`` (mmengine's BaseMetric: gather, compute, prefix) on a copy of results."""
    metric.dataset_meta = dataset_meta(gt_path)
    metric.results = copy.deepcopy(results)
    return metric.evaluate(len(results))


@pytest.fixture
def evaluators(monkeypatch):
    """boundary_api's COCOeval / LVISEval objects whose summary was computed, in order."""
    made = []
    for cls in (boundary_api.COCOeval, boundary_api.LVISEval):
        summarize = cls.summarize

        def record(self, __summarize=summarize):
            made.append(self)
            return __summarize(self)

        monkeypatch.setattr(cls, "summarize", record)
    return made


@pytest.fixture
def log_lines():
    """The lines logged on MMDetection's current logger."""
    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    logger = MMLogger.get_current_instance()
    handler = Keep(logging.INFO)
    logger.addHandler(handler)
    yield lines
    logger.removeHandler(handler)


def _iou_type(ev):
    return getattr(ev.params, "iouType", None) or ev.params.iou_type


# ---------------------------------------------------------------------------
# COCO
# ---------------------------------------------------------------------------
def test_coco_boundary_ap_equals_boundary_eval(coco_results, evaluators, log_lines, quiet):
    out = _evaluate(BoundaryCocoMetric(ann_file=COCO_GT, metric=["bbox", "segm", "boundary"]),
                    coco_results, COCO_GT)
    (ev,) = [e for e in evaluators if _iou_type(e) == "boundary"]
    ours = np.asarray(ev.stats[:6])
    cli = evaluate_files(COCO_GT, COCO_DT, iou_type="boundary", dilation_ratio=0.02)
    golden = GOLDEN["coco-boundary-0.02"]["stats"]
    np.testing.assert_allclose(ours, [cli.metrics[k] for k in ("AP", "AP50", "AP75", "APs", "APm", "APl")],
                               rtol=0, atol=1e-12)
    np.testing.assert_allclose(ours, golden[:6], rtol=0, atol=1e-12)
    # the masks' areas: APs/APm/APl 0.387/0.272/0.076 (the boxes' areas would give 0.409/0.291/0.071)
    assert [out[f"coco/boundary_{k}"] for k in COCO_ITEMS] == [_r3(v) for v in golden[:6]]
    assert [out[f"coco/boundary_{k}"] for k in COCO_ITEMS[3:]] == [0.387, 0.272, 0.076]
    assert "boundary_mAP_copypaste: " + " ".join(f"{v:.3f}" for v in golden[:6]) in log_lines
    assert "Evaluating boundary..." in log_lines


def test_coco_bbox_and_segm_are_mmdetections(coco_results, quiet):
    kwargs = dict(ann_file=COCO_GT, classwise=True)
    ours = _evaluate(BoundaryCocoMetric(metric=["bbox", "segm", "boundary"], **kwargs), coco_results, COCO_GT)
    plain = _evaluate(CocoMetric(metric=["bbox", "segm"], **kwargs), coco_results, COCO_GT)
    assert identical({k: ours[k] for k in plain}, plain)
    assert list(ours)[:len(plain)] == list(plain)
    # the per-category entries of 'boundary' are its own, after the parent's
    added = list(ours)[len(plain):]
    assert added[-6:] == [f"coco/boundary_{k}" for k in COCO_ITEMS]
    assert all(k.startswith("coco/boundary_") and k.endswith("_precision") for k in added[:-6])
    assert len(added) == 6 + 80


def test_coco_segm_uses_mask_areas_as_boundary_eval(coco_results, quiet):
    """The parent's 'segm' drops the boxes too: its APs/APm/APl are boundary-eval's segm."""
    out = _evaluate(BoundaryCocoMetric(ann_file=COCO_GT, metric=["segm"]), coco_results, COCO_GT)
    golden = GOLDEN["coco-segm"]["stats"]
    assert [out[f"coco/segm_{k}"] for k in COCO_ITEMS] == [_r3(v) for v in golden[:6]]


@pytest.mark.parametrize("ratio, case", [(0.005, "coco-boundary-0.005"), (0.05, "coco-boundary-0.05")])
def test_coco_dilation_ratio(coco_results, evaluators, ratio, case, quiet):
    _evaluate(BoundaryCocoMetric(ann_file=COCO_GT, metric="boundary", dilation_ratio=ratio),
              coco_results, COCO_GT)
    (ev,) = evaluators
    assert ev.dilation_ratio == ratio
    np.testing.assert_allclose(ev.stats[:6], GOLDEN[case]["stats"][:6], rtol=0, atol=1e-12)


def test_coco_boundary_alone_and_metric_items(coco_results, quiet):
    out = _evaluate(BoundaryCocoMetric(ann_file=COCO_GT, metric=["boundary"], metric_items=["mAP", "AR@100"]),
                    coco_results, COCO_GT)
    golden = GOLDEN["coco-boundary-0.02"]["stats"]
    # AR@100 is COCOeval's stats[6], its first maxDets (CocoMetric's proposal_nums: 100, 300, 1000)
    assert out == {"coco/boundary_mAP": _r3(golden[0]), "coco/boundary_AR@100": _r3(golden[8])}


def test_coco_outfile_prefix_keeps_the_parents_files(coco_results, tmp_path, quiet):
    prefix = str(tmp_path / "run")
    out = _evaluate(BoundaryCocoMetric(ann_file=COCO_GT, metric=["segm", "boundary"], outfile_prefix=prefix),
                    coco_results, COCO_GT)
    assert sorted(os.listdir(tmp_path)) == ["run.bbox.json", "run.segm.json"]
    # the trap avoided: that segm file as written keeps the boxes, whose areas would give
    # Boundary APs/APm/APl 0.409/0.291/0.071 (AP unchanged)
    gt = boundary_api.COCO(COCO_GT)
    ev = boundary_api.COCOeval(gt, gt.loadRes(prefix + ".segm.json"), "boundary")
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    assert [_r3(v) for v in ev.stats[:6]] == [0.226, 0.378, 0.226, 0.409, 0.291, 0.071]
    assert [out[f"coco/boundary_{k}"] for k in COCO_ITEMS] == [0.226, 0.378, 0.226, 0.387, 0.272, 0.076]


def test_bad_arguments_are_the_parents_errors():
    with pytest.raises(KeyError, match="'boundary'.*but got mask"):
        BoundaryCocoMetric(ann_file=COCO_GT, metric=["segm", "mask"])
    with pytest.raises(ValueError, match="dilation_ratio"):
        BoundaryCocoMetric(ann_file=COCO_GT, metric="boundary", dilation_ratio=-1)
    m = BoundaryCocoMetric(ann_file=COCO_GT, metric="boundary", metric_items=["AP"])
    m.dataset_meta = dataset_meta(COCO_GT)
    with pytest.raises(KeyError, match='metric item "AP" is not supported'):
        m.compute_metrics([({"img_id": 42, "width": 640, "height": 478},
                            {"img_id": 42, "bboxes": np.zeros((0, 4)), "scores": np.zeros(0),
                             "labels": np.zeros(0, int), "masks": []})])


def test_boundary_without_masks_says_so(coco_results, quiet):
    boxes_only = [(gt, {k: v for k, v in pred.items() if k != "masks"}) for gt, pred in coco_results]
    with pytest.raises(KeyError, match="boundary is not in results: the model gave no mask predictions"):
        _evaluate(BoundaryCocoMetric(ann_file=COCO_GT, metric=["bbox", "boundary"]), boxes_only, COCO_GT)


# ---------------------------------------------------------------------------
# LVIS
# ---------------------------------------------------------------------------
def test_lvis_boundary_ap_equals_boundary_eval(lvis_results, evaluators, log_lines, quiet):
    out = _evaluate(BoundaryLVISMetric(ann_file=LVIS_GT, metric=["bbox", "segm", "boundary"]),
                    lvis_results, LVIS_GT)
    (ev,) = [e for e in evaluators if _iou_type(e) == "boundary"]
    ours = ev.get_results()
    cli = evaluate_files(LVIS_GT, LVIS_DT, iou_type="boundary", dilation_ratio=0.02).evaluator.get_results()
    golden = GOLDEN["lvis-boundary-0.02"]["results"]
    for k in golden:
        assert abs(ours[k] - cli[k]) <= 1e-12 and abs(ours[k] - golden[k]) <= 1e-12, k
    assert [out[f"lvis/boundary_{k}"] for k in LVIS_ITEMS] == [float(f"{golden[k]:.3f}") for k in LVIS_ITEMS]
    assert "Evaluating boundary..." in log_lines


def test_lvis_bbox_and_segm_are_mmdetections(lvis_results, quiet):
    """lvis 0.5.3 stops on numpy >= 1.24 (np.float): MMDetection's LVISMetric runs
    here on boundary_api's classes through the swap (lvis' numbers, tests/compat)."""
    kwargs = dict(ann_file=LVIS_GT, classwise=True)
    ours = _evaluate(BoundaryLVISMetric(metric=["bbox", "segm", "boundary"], **kwargs), lvis_results, LVIS_GT)
    with boundary_api.swapped():
        plain = _evaluate(LVISMetric(metric=["bbox", "segm"], **kwargs), lvis_results, LVIS_GT)
    assert identical({k: ours[k] for k in plain}, plain)
    assert list(ours)[:len(plain)] == list(plain)
    assert [type(ours[k]) for k in plain] == [type(v) for v in plain.values()]


def test_lvis_segm_keeps_mmdetections_box_areas(lvis_results, quiet):
    """MMDetection's LVISMetric keeps the boxes of the segm results, so lvis takes
    their areas for APs/APm/APl; 'segm' keeps that, 'boundary' does not."""
    out = _evaluate(BoundaryLVISMetric(ann_file=LVIS_GT, metric=["segm"]), lvis_results, LVIS_GT)
    golden = GOLDEN["lvis-segm"]["results"]
    assert out["lvis/segm_AP"] == float(f"{golden['AP']:.3f}")
    assert [out[f"lvis/segm_{k}"] for k in ("APs", "APm", "APl")] != \
        [float(f"{golden[k]:.3f}") for k in ("APs", "APm", "APl")]


# ---------------------------------------------------------------------------
# the swap in three import orders; a config; two ranks
# ---------------------------------------------------------------------------
_CHILD = textwrap.dedent("""
    import copy, json, pickle, sys
    order, data = sys.argv[1], sys.argv[2]
    sys.path[:0] = [{here!r}, {tests!r}]
    import boundary_api
    if order == "before":
        boundary_api.init_as_pycocotools(); boundary_api.init_as_lvis()
    import mmdet.evaluation.metrics.coco_metric as cm, mmdet.evaluation.metrics.lvis_metric as lm
    from mmdet.evaluation.metrics import CocoMetric, LVISMetric
    from boundary_api.integrations.mmdet import BoundaryCocoMetric, BoundaryLVISMetric
    from mmdet_feed import dataset_meta
    if order == "after":
        boundary_api.init_as_pycocotools(); boundary_api.init_as_lvis()
    with open(data, "rb") as f:
        coco, lvis = pickle.load(f)

    def run(cls, gt, results, metric):
        m = cls(ann_file=gt, metric=metric, classwise=True)
        m.dataset_meta = dataset_meta(gt)
        m.results = copy.deepcopy(results)
        return m.evaluate(len(results))

    def everything():
        out = {{"swapped": [cm.COCOeval is boundary_api.COCOeval, lm.LVISEval is boundary_api.LVISEval]}}
        out["CocoMetric"] = run(CocoMetric, {coco_gt!r}, coco, ["bbox", "segm"])
        out["BoundaryCocoMetric"] = run(BoundaryCocoMetric, {coco_gt!r}, coco, ["bbox", "segm", "boundary"])
        if order != "plain":  # lvis 0.5.3 itself stops on numpy >= 1.24
            out["LVISMetric"] = run(LVISMetric, {lvis_gt!r}, lvis, ["bbox", "segm"])
        out["BoundaryLVISMetric"] = run(BoundaryLVISMetric, {lvis_gt!r}, lvis, ["bbox", "segm", "boundary"])
        return out

    if order == "context":
        with boundary_api.swapped():
            out = everything()
    else:
        out = everything()
    print("RESULT " + json.dumps(out))
""")


@pytest.fixture(scope="module")
def pickled_results(coco_results, lvis_results, tmp_path_factory):
    path = tmp_path_factory.mktemp("mmdet") / "results.pkl"
    with open(path, "wb") as f:
        pickle.dump((coco_results, lvis_results), f)
    return str(path)


def _child(order, data):
    from conftest import TESTS

    code = _CHILD.format(here=HERE, tests=TESTS, coco_gt=COCO_GT, lvis_gt=LVIS_GT)
    proc = subprocess.run([sys.executable, "-c", code, order, data], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


def test_swap_in_three_import_orders_gives_the_plain_numbers(pickled_results):
    plain = _child("plain", pickled_results)
    assert plain["swapped"] == [False, False]
    for order in ("before", "after", "context"):
        run = _child(order, pickled_results)
        assert run["swapped"] == [True, True], order
        # MMDetection's own metrics: bit for bit what they give on pycocotools (and on
        # lvis, which runs here only through the swap: what BoundaryLVISMetric gives)
        assert identical(run["CocoMetric"], plain["CocoMetric"]), order
        lvis = run["LVISMetric"]
        assert identical(lvis, {k: plain["BoundaryLVISMetric"][k] for k in lvis}), order
        # and the metrics of this module do not change with the swap
        assert identical(run["BoundaryCocoMetric"], plain["BoundaryCocoMetric"]), order
        assert identical(run["BoundaryLVISMetric"], plain["BoundaryLVISMetric"]), order


def test_config_with_custom_imports_builds_the_metric(coco_results, tmp_path, quiet):
    from mmengine.config import Config
    from mmengine.registry import EVALUATOR, init_default_scope

    config = tmp_path / "config.py"
    config.write_text(textwrap.dedent(f"""
        default_scope = 'mmdet'
        custom_imports = dict(imports=['boundary_api.integrations.mmdet'], allow_failed_imports=False)
        val_evaluator = dict(type='BoundaryCocoMetric', ann_file={COCO_GT!r},
                             metric=['bbox', 'segm', 'boundary'], dilation_ratio=0.02)
    """))
    cfg = Config.fromfile(str(config))
    init_default_scope(cfg.default_scope)
    evaluator = EVALUATOR.build(dict(type="Evaluator", metrics=cfg.val_evaluator))
    (metric,) = evaluator.metrics
    assert type(metric) is BoundaryCocoMetric and metric.dilation_ratio == 0.02
    evaluator.dataset_meta = dataset_meta(COCO_GT)
    metric.results = copy.deepcopy(coco_results)
    out = evaluator.evaluate(len(coco_results))
    golden = GOLDEN["coco-boundary-0.02"]["stats"]
    assert [out[f"coco/boundary_{k}"] for k in COCO_ITEMS] == [_r3(v) for v in golden[:6]]
    assert [out[f"coco/segm_{k}"] for k in COCO_ITEMS] == [_r3(v) for v in GOLDEN["coco-segm"]["stats"][:6]]


_RANK = textwrap.dedent("""
    import json, os, sys
    rank, world, port = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    sys.path[:0] = [{here!r}, {tests!r}]
    import torch.distributed as dist
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:" + port, rank=rank, world_size=world)
    from mmdet.evaluation.metrics import CocoMetric
    from boundary_api.integrations.mmdet import BoundaryCocoMetric
    from mmdet_feed import processed
    out = {{}}
    for cls, metric in ((CocoMetric, ["bbox", "segm"]), (BoundaryCocoMetric, ["bbox", "segm", "boundary"])):
        m = cls(ann_file={gt!r}, metric=metric)
        # mmengine's DefaultSampler hands rank r the images r, r + world, ...
        processed(m, {gt!r}, {dt!r}, images=range(rank, 100, world))
        out[cls.__name__] = m.evaluate(100)
    print("RESULT " + json.dumps(out))
    dist.destroy_process_group()
""")


def test_two_ranks_gather_their_results_as_the_parent(coco_results, quiet):
    from conftest import TESTS

    single = _evaluate(BoundaryCocoMetric(ann_file=COCO_GT, metric=["bbox", "segm", "boundary"]),
                       coco_results, COCO_GT)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    code = _RANK.format(here=HERE, tests=TESTS, gt=COCO_GT, dt=COCO_DT)
    ranks = [subprocess.Popen([sys.executable, "-c", code, str(r), "2", port], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in range(2)]
    outs = []
    for p in ranks:
        stdout, stderr = p.communicate(timeout=600)
        assert p.returncode == 0, stderr[-3000:]
        outs.append(json.loads([ln for ln in stdout.splitlines() if ln.startswith("RESULT ")][-1][7:]))
    # every rank gets the main process's numbers, which are those of one process
    assert outs[0] == outs[1]
    assert outs[0]["BoundaryCocoMetric"] == single
    assert {k: single[k] for k in outs[0]["CocoMetric"]} == outs[0]["CocoMetric"]
