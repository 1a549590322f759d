"""boundary_api.scale.distributed on a real dask.distributed LocalCluster (and Ray when installed):
the numbers of one process, and a loud failure when a shard or its worker is lost."""
import contextlib
import io
import json
import os
import sys

import numpy as np
import pytest

dask = pytest.importorskip("dask", reason="dask is an optional dependency (pip install '.[dask]')")
distributed = pytest.importorskip("distributed", reason="dask.distributed is an optional dependency")

import cloudpickle  # noqa: E402  (comes with distributed)

from boundary_api import COCO, COCOeval, LVISEval  # noqa: E402
from boundary_api.scale.distributed import evaluate_dask, evaluate_ray, gather_partials, local_client  # noqa: E402
from boundary_api.scale.partials import Partial  # noqa: E402
from boundary_api.scale.streaming import evaluate_shard, load_manifest, shard_dataset  # noqa: E402
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT  # noqa: E402

# the shard functions below run in worker processes: send them by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _silent(fn, *a, **k):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*a, **k)


@pytest.fixture(scope="module")
def coco_manifest(tmp_path_factory):
    return shard_dataset(COCO_GT, tmp_path_factory.mktemp("coco_shards"), 19, results=COCO_DT)


@pytest.fixture(scope="module")
def coco_ref():
    gt = _silent(COCO, COCO_GT)
    ev = COCOeval(gt, _silent(gt.loadRes, COCO_DT), "boundary")
    for step in (ev.evaluate, ev.accumulate, ev.summarize):
        _silent(step)
    return ev


@pytest.fixture(scope="module")
def threads_client():
    """Two workers in this process (fast to start)."""
    with local_client(2, processes=False) as client:
        yield client


def test_two_workers_give_the_single_process_numbers(threads_client, coco_manifest, coco_ref):
    got = evaluate_dask(coco_manifest, threads_client, "boundary")
    for key in ("precision", "recall", "scores"):
        assert np.array_equal(got.eval[key], coco_ref.eval[key]), key
    assert np.array_equal(got.stats, coco_ref.stats)


def test_incomplete_manifest_is_refused_unless_asked_for(threads_client, coco_manifest, coco_ref, tmp_path):
    with open(coco_manifest) as f:
        doc = json.load(f)
    base = os.path.dirname(coco_manifest)
    doc["shards"] = [dict(s, gt=os.path.join(base, s["gt"]), dt=os.path.join(base, s["dt"]))
                     for s in doc["shards"][1:]]
    path = tmp_path / "partial.json"
    path.write_text(json.dumps(doc))
    for evaluate in (lambda **k: evaluate_dask(str(path), threads_client, "boundary", **k),
                     lambda **k: evaluate_ray(str(path), "boundary", **k)):
        with pytest.raises(ValueError, match="incomplete shard manifest"):
            evaluate()
    seen = []
    with pytest.warns(UserWarning, match="evaluating only those"):
        got = evaluate_dask(str(path), threads_client, "boundary", allow_partial=True,
                            progress=lambda done, total: seen.append((done, total)))
    assert len(got.params.imgIds) == 100 - 19
    assert seen == [(n, 5) for n in range(6)]


def test_lvis_on_two_workers(threads_client, tmp_path):
    ref = LVISEval(LVIS_GT, LVIS_DT, "segm")
    ref.run()
    manifest = shard_dataset(LVIS_GT, tmp_path, 31, results=LVIS_DT)
    got = evaluate_dask(manifest, threads_client, "segm")
    assert np.array_equal(got.eval["precision"], ref.eval["precision"])
    assert list(got.results.items()) == list(ref.results.items())


def test_a_shard_that_fails_fails_the_evaluation(threads_client, coco_manifest, tmp_path):
    shards = load_manifest(coco_manifest)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"image_id": 1, "category_id"\n')
    shards[2] = dict(shards[2], dt=str(bad))
    with pytest.raises(ValueError, match="line 1 is not valid JSON"):
        evaluate_dask(shards, threads_client, "segm")


def test_partials_that_do_not_cover_the_manifest_are_refused(coco_manifest):
    shards = load_manifest(coco_manifest)
    parts = [evaluate_shard(s, "segm") for s in shards[:-1]]
    with pytest.raises(ValueError, match="shard is missing"):
        gather_partials(parts, img_ids=[i for s in shards for i in s["img_ids"]])


# --------------------------------------------------------- workers that die
def _die_once(shard, iou_type, **kwargs):
    """Kills its worker process the first time it runs shard 1, then works."""
    marker = shard.get("marker")
    if marker and not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return evaluate_shard(shard, iou_type, **kwargs)


def _always_die(shard, iou_type, **kwargs):
    if shard.get("poison"):
        os._exit(1)
    return evaluate_shard(shard, iou_type, **kwargs)


@pytest.fixture(scope="module")
def process_client():
    """Two worker processes; a task may lose its worker once and be re-run."""
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with local_client(2, processes=True, memory_limit="1GB") as client:
            yield client


def test_worker_that_dies_once_is_replaced_and_the_numbers_are_exact(process_client, coco_manifest,
                                                                     coco_ref, tmp_path):
    shards = load_manifest(coco_manifest)
    shards[1] = dict(shards[1], marker=str(tmp_path / "died"))
    got = evaluate_dask(shards, process_client, "boundary", shard_fn=_die_once)
    assert os.path.exists(tmp_path / "died")  # it did die
    assert np.array_equal(got.eval["precision"], coco_ref.eval["precision"])
    assert np.array_equal(got.stats, coco_ref.stats)


def test_worker_that_keeps_dying_fails_loudly(process_client, coco_manifest):
    shards = load_manifest(coco_manifest)
    shards[3] = dict(shards[3], poison=True)
    result = None
    with pytest.raises(distributed.KilledWorker):
        result = evaluate_dask(shards, process_client, "segm", shard_fn=_always_die)
    assert result is None


# ----------------------------------------------------------------------- Ray
@pytest.mark.slow
def test_ray_gives_the_same_numbers(coco_manifest, coco_ref):
    ray = pytest.importorskip("ray", reason="ray is not installed (it is not a dependency; "
                                            "evaluate_ray runs when it is)")
    if not hasattr(ray, "remote"):  # Ray's session folder (/tmp/ray) seen as a namespace package
        pytest.skip("ray is not installed ('ray' on sys.path is not the Ray package)")
    try:
        got = evaluate_ray(coco_manifest, "boundary", num_threads=1)
    finally:
        ray.shutdown()
    assert np.array_equal(got.eval["precision"], coco_ref.eval["precision"])
    assert np.array_equal(got.stats, coco_ref.stats)


def test_partials_cross_the_wire_small(coco_manifest):
    shards = load_manifest(coco_manifest)
    part = evaluate_shard(shards[0], "boundary")
    assert isinstance(part, Partial)
    with open(shards[0]["dt"], "rb") as f:
        raw = len(f.read())
    assert len(cloudpickle.dumps(part)) < raw / 5  # only partials travel, not detections
    assert json.loads(json.dumps(shards[0]["img_ids"])) == part.img_ids.tolist()


QUIET_SCRIPT = """
import sys
from boundary_api.scale.distributed import evaluate_dask, local_client
if __name__ == "__main__":  # the workers are spawned processes that import this file
    with local_client(2) as client:
        ev = evaluate_dask(sys.argv[1], client, iou_type="bbox")
    print(repr(float(ev.stats[0])))
"""


@pytest.mark.slow
def test_python_evaluation_on_worker_processes_writes_nothing(coco_manifest, tmp_path):
    """The Python side of the command line's quiet workers (issue 25): an
    evaluation on a local cluster of worker processes prints nothing but
    what the script prints, on stdout or stderr."""
    import subprocess

    script = tmp_path / "quiet.py"
    script.write_text(QUIET_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), coco_manifest], capture_output=True, cwd=tmp_path,
                          timeout=300)
    assert proc.returncode == 0 and proc.stderr == b"", proc.stderr.decode()
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(COCO_DT), "bbox")
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    assert proc.stdout.decode() == repr(float(ev.stats[0])) + "\n"
