"""The Python entry points read JSON from pipes (FIFOs, ``/dev/fd/N``) as
from regular files (issue 25): the same numbers, and nothing hangs.

A FIFO can be read once: a reader that opens it a second time (a fast
column scanner, then the general path on its fallback) waits for a writer
that never comes.  Each call here runs in a thread with a time limit; on
timeout the FIFOs are released (opened for writing and closed, so the
blocked reader sees their end) and the test fails.
"""
import contextlib
import gzip
import json
import os
import threading
import warnings

import numpy as np
import pytest

from boundary_api import COCO, LVIS, COCOeval, LVISEval, LVISResults, pq_compute
from boundary_api._io import InputBytes, read_json, read_once
from boundary_api.scale.streaming import evaluate_streaming
from conftest import COCO_DT, COCO_GT, DATA, LVIS_DT, LVIS_GT

TIMEOUT = 60
PANOPTIC = os.path.join(DATA, "panoptic")


def _bytes(path: str, compress: bool = False) -> bytes:
    with open(path, "rb") as f:
        data = f.read()
    return gzip.compress(data) if compress else data


class _Fifos:
    """FIFOs in ``folder``, each fed ``payload`` by a writer thread."""

    def __init__(self, folder):
        self.folder = folder
        self.paths, self.threads = [], []

    def add(self, name: str, payload: bytes) -> str:
        path = os.path.join(self.folder, name)
        os.mkfifo(path)

        def feed():
            try:
                with open(path, "wb") as f:  # waits for the reader
                    f.write(payload)
            except BrokenPipeError:  # the reader stopped early (the test reports it)
                pass

        thread = threading.Thread(target=feed, daemon=True)
        thread.start()
        self.paths.append(path)
        self.threads.append(thread)
        return path

    def release(self) -> None:
        """Unblock whoever still waits on a FIFO: a writer whose reader never
        came, a reader that opened a FIFO again after its writer left."""
        for path in self.paths:
            for flags in (os.O_RDONLY | os.O_NONBLOCK, os.O_WRONLY | os.O_NONBLOCK):
                try:
                    os.close(os.open(path, flags))
                except OSError:  # ENXIO: nobody reads it
                    pass
        for thread in self.threads:
            thread.join(5)


@pytest.fixture
def fifos(tmp_path):
    f = _Fifos(str(tmp_path))
    yield f
    f.release()
    assert not any(t.is_alive() for t in f.threads), "a FIFO writer is still blocked"


def within(fifos: _Fifos, fn, seconds: float = TIMEOUT):
    """``fn()`` in a thread; fails the test if it is not done in ``seconds``."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        fifos.release()
        thread.join(10)
        pytest.fail(f"{fn} still waited on a pipe after {seconds} s")
    if "error" in out:
        raise out["error"]
    return out["value"]


def _stats(gt, dt, iou_type="segm", cls=COCOeval):
    ev = cls(gt, dt, iou_type)
    with contextlib.redirect_stdout(None):
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    return np.asarray(ev.stats) if cls is COCOeval else ev.results


@pytest.fixture(scope="module")
def coco_reference():
    with contextlib.redirect_stdout(None):
        gt = COCO(COCO_GT)
        return gt, _stats(gt, gt.loadRes(COCO_DT))


@pytest.fixture(scope="module")
def lvis_reference():
    gt = LVIS(LVIS_GT)
    return gt, _stats(gt, LVISResults(gt, LVIS_DT), cls=LVISEval)


# ------------------------------------------------------------- read_once
def test_read_once_keeps_regular_files_and_reads_pipes(fifos):
    assert read_once(COCO_GT, "ground truth") == COCO_GT
    assert read_once("/no/such/file.json", "ground truth") == "/no/such/file.json"
    assert read_once(12, "ground truth") == 12
    path = fifos.add("gt.json", b'{"a": 1}')
    got = within(fifos, lambda: read_once(path, "ground truth"))
    assert isinstance(got, InputBytes) and got.name == path and got.data == b'{"a": 1}'
    assert str(got) == path and not isinstance(got, os.PathLike)  # never reopened as a path
    assert read_json(got, "ground truth") == {"a": 1}
    assert read_once(got, "ground truth") is got


def test_bad_json_from_a_pipe_names_the_pipe(fifos):
    path = fifos.add("gt.json", b"{")
    with pytest.raises(json.JSONDecodeError, match="ground truth file is not valid JSON: .*gt.json"):
        within(fifos, lambda: COCO(path))


# ------------------------------------------------------------------- COCO
@pytest.mark.parametrize("compress", [False, True], ids=["columns", "gzip-fallback"])
def test_coco_ground_truth_and_results_from_fifos(fifos, coco_reference, compress, capsys):
    gt_ref, stats_ref = coco_reference
    gt_path = fifos.add("gt.json", _bytes(COCO_GT, compress))
    dt_path = fifos.add("dt.json", _bytes(COCO_DT, compress))
    gt = within(fifos, lambda: COCO(gt_path))
    assert (gt.__dict__.get("_gt_columns") is None) == compress  # the fast path for plain JSON
    dt = within(fifos, lambda: gt.loadRes(dt_path))
    np.testing.assert_array_equal(_stats(gt, dt), stats_ref)
    assert gt.dataset == gt_ref.dataset


def test_coco_results_fallback_reads_the_same_bytes(fifos, coco_reference):
    """Results the column scanner gives up on (here: an extra key) go to the
    general path, which must not open the pipe again."""
    gt_ref, _ = coco_reference
    anns = json.loads(_bytes(COCO_DT))
    for a in anns:
        a["extra"] = 1
    dt_path = fifos.add("dt.json", json.dumps(anns).encode())
    dt = within(fifos, lambda: gt_ref.loadRes(dt_path))
    assert len(dt.anns) == len(anns)
    ref = gt_ref.loadRes(anns)
    np.testing.assert_array_equal(_stats(gt_ref, dt), _stats(gt_ref, ref))


def test_coco_ground_truth_fallback_reads_the_same_bytes(fifos, coco_reference):
    """A ground truth outside the column schema (an annotation without
    ``iscrowd`` is warned about, read by the general path)."""
    doc = json.loads(_bytes(COCO_GT))
    del doc["annotations"][0]["iscrowd"]
    path = fifos.add("gt.json", json.dumps(doc).encode())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gt = within(fifos, lambda: COCO(path))
    assert gt.__dict__.get("_gt_columns") is None
    assert len(gt.anns) == len(doc["annotations"])


def test_dev_fd_paths(coco_reference):
    """``/dev/fd/N`` (process substitution) of an anonymous pipe."""
    gt_ref, stats_ref = coco_reference
    fds = []
    threads = []
    for payload in (_bytes(COCO_GT), _bytes(COCO_DT)):
        r, w = os.pipe()

        def feed(w=w, payload=payload):
            with contextlib.suppress(BrokenPipeError), os.fdopen(w, "wb") as f:
                f.write(payload)

        threads.append(threading.Thread(target=feed, daemon=True))
        threads[-1].start()
        fds.append(r)
    try:
        with contextlib.redirect_stdout(None):
            gt = COCO(f"/dev/fd/{fds[0]}")
            dt = gt.loadRes(f"/dev/fd/{fds[1]}")
        np.testing.assert_array_equal(_stats(gt, dt), stats_ref)
    finally:
        for fd in fds:
            os.close(fd)
        for t in threads:
            t.join(5)


# ------------------------------------------------------------------- LVIS
@pytest.mark.parametrize("compress", [False, True], ids=["columns", "gzip-fallback"])
def test_lvis_ground_truth_and_results_from_fifos(fifos, lvis_reference, compress):
    gt_ref, results_ref = lvis_reference
    gt_path = fifos.add("gt.json", _bytes(LVIS_GT, compress))
    dt_path = fifos.add("dt.json", _bytes(LVIS_DT, compress))
    gt = within(fifos, lambda: LVIS(gt_path))
    dt = within(fifos, lambda: LVISResults(gt, dt_path))
    assert _stats(gt, dt, cls=LVISEval) == results_ref


def test_lvis_eval_of_two_paths_from_fifos(fifos, lvis_reference):
    _, results_ref = lvis_reference
    gt_path = fifos.add("gt.json", _bytes(LVIS_GT))
    dt_path = fifos.add("dt.json", _bytes(LVIS_DT))
    ev = within(fifos, lambda: LVISEval(gt_path, dt_path, "segm"))
    ev.run()
    assert ev.results == results_ref


def test_lvis_results_of_a_ground_truth_path_from_fifos(fifos, lvis_reference):
    _, results_ref = lvis_reference
    gt_path = fifos.add("gt.json", _bytes(LVIS_GT, compress=True))
    dt_path = fifos.add("dt.json", _bytes(LVIS_DT))
    dt = within(fifos, lambda: LVISResults(gt_path, dt_path))
    assert _stats(LVIS(LVIS_GT), dt, cls=LVISEval) == results_ref


# -------------------------------------------------------- streaming, panoptic
def test_streaming_from_fifos(fifos, tmp_path):
    ref = evaluate_streaming(COCO_GT, COCO_DT, "bbox", chunk_images=40, tmp_dir=str(tmp_path))
    gt_path = fifos.add("gt.json", _bytes(COCO_GT, compress=True))
    dt_path = fifos.add("dt.json", _bytes(COCO_DT))
    got = within(fifos, lambda: evaluate_streaming(gt_path, dt_path, "bbox", chunk_images=40,
                                                   tmp_dir=str(tmp_path)))
    assert _numbers(got) == _numbers(ref)


def _numbers(out):
    stats = getattr(out, "stats", None)
    if stats is not None:
        return np.asarray(stats).tolist()
    return out if isinstance(out, dict) else vars(out)


def test_panoptic_json_from_fifos(fifos):
    gt_json = os.path.join(PANOPTIC, "panoptic_examples.json")
    pred_json = os.path.join(PANOPTIC, "pred_shift3.json")
    folders = dict(gt_folder=os.path.join(PANOPTIC, "panoptic_examples"),
                   pred_folder=os.path.join(PANOPTIC, "pred_shift3"), print_progress=False)
    ref = pq_compute(gt_json, pred_json, **folders)
    gt_path = fifos.add("gt.json", _bytes(gt_json))
    pred_path = fifos.add("pred.json", _bytes(pred_json, compress=True))
    assert within(fifos, lambda: pq_compute(gt_path, pred_path, **folders)) == ref
