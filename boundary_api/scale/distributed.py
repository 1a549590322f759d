"""Evaluation of image shards on a cluster: Dask (and Ray), with the numbers of one process.

Every worker reads its own shard (a ground-truth shard and its detections, on a
path all workers can read, as written by
:func:`boundary_api.scale.streaming.shard_dataset`), evaluates it into a
compact :class:`~boundary_api.scale.partials.Partial`, and only the partials
travel back; the client merges them and accumulates.  ``eval`` and ``stats``
(COCO) / ``results`` (LVIS) are bit-for-bit those of one ``COCOeval`` /
``LVISEval`` over every image.

A shard that fails (bad file, a worker that dies more often than the
scheduler's ``distributed.scheduler.allowed-failures``) raises; a result is
returned only when every shard of the manifest came back (checked against the
manifest's image lists), so no number is ever computed on a part of the data.
A worker that dies and whose shard is recomputed elsewhere changes nothing: the
shard's partial is a pure function of its files.

Dask is an optional dependency: ``pip install "boundary-api[dask]"``.

>>> from dask.distributed import Client                          # doctest: +SKIP
>>> from boundary_api.scale.distributed import evaluate_dask           # doctest: +SKIP
>>> ev = evaluate_dask("shards/manifest.json", Client("tcp://scheduler:8786"),
...                    iou_type="boundary")                      # doctest: +SKIP
>>> ev.stats                                                     # doctest: +SKIP
"""
from __future__ import annotations

import contextlib
import logging
import os
from typing import Callable, Iterator, List, Optional, Sequence, Union

from .._io import temporary_folder
from .partials import Partial, accumulate_partial, merge_partials
from .streaming import evaluate_shard, load_manifest

__all__ = ["evaluate_dask", "local_client", "evaluate_ray", "gather_partials"]

log = logging.getLogger(__name__)

Shards = Union[str, os.PathLike, Sequence[dict]]


def _shards(shards: Shards, allow_partial: bool = False) -> List[dict]:
    if isinstance(shards, (str, bytes, os.PathLike)):
        return load_manifest(shards, allow_partial=allow_partial)
    out = list(shards)
    for n, s in enumerate(out):
        if not isinstance(s, dict) or "gt" not in s or "dt" not in s or not isinstance(s.get("img_ids"), list):
            raise ValueError(f"shard {n} must be a dict with 'gt', 'dt' and 'img_ids'")
    if not out:
        raise ValueError("no shards to evaluate")
    return out


def _finish(shards: List[dict], partials: Sequence[Partial], verbose: bool, num_threads):
    if len(partials) != len(shards) or any(not isinstance(p, Partial) for p in partials):
        raise RuntimeError(f"{len(shards)} shards but {len(partials)} partials came back")
    want = [i for s in shards for i in s["img_ids"]]
    return accumulate_partial(merge_partials(partials), img_ids=want, verbose=verbose,
                              num_threads=num_threads)


def evaluate_dask(shards: Shards, client, iou_type: str = "segm", *, dilation_ratio: float = 0.02,
                  max_dets: int = 300, params: Optional[dict] = None, worker_threads: int = 1,
                  retries: int = 0, shard_fn: Optional[Callable] = None, verbose: bool = False,
                  num_threads: Optional[int] = None, allow_partial: bool = False,
                  progress: Optional[Callable[[int, int], None]] = None):
    """Evaluate shards on a ``dask.distributed`` cluster, merge and accumulate.

    Parameters
    ----------
    shards : str, path-like or list of dict
        A ``manifest.json`` of :func:`~boundary_api.scale.streaming.shard_dataset`,
        or its shard entries (``{"gt", "dt", "img_ids"}`` with paths the
        workers can read).
    client : dask.distributed.Client
    iou_type : {'segm', 'bbox', 'boundary'}
    dilation_ratio, max_dets, params
        As in :func:`~boundary_api.scale.partials.evaluate_partial`.
    worker_threads : int, optional
        Kernel threads per shard task (default 1: one task per worker thread).
    retries : int, optional
        Times a shard that raised is re-run before the evaluation fails
        (dask's ``retries``; default 0).  Shards on a worker that died are
        re-run by the scheduler up to its ``allowed-failures``.
    shard_fn : callable, optional
        ``shard_fn(shard, iou_type, **options) -> Partial``; default
        :func:`~boundary_api.scale.streaming.evaluate_shard`.
    verbose : bool, optional
        Print the summary as the libraries do.
    num_threads : int, optional
        Threads for the final accumulation on the client.
    allow_partial : bool, optional
        Evaluate a manifest that misses shard entries (refused by default; see
        :func:`~boundary_api.scale.streaming.load_manifest`).
    progress : callable, optional
        ``progress(done, total)``, called with 0 first and then each time a
        shard has come back.

    Returns
    -------
    COCOeval or LVISEval
        As from :func:`~boundary_api.scale.partials.accumulate_partial`.

    Raises
    ------
    Exception
        The first error of a shard (its own exception, or dask's
        ``KilledWorker``); then nothing is returned.
    """
    shards = _shards(shards, allow_partial)
    fn = shard_fn or evaluate_shard
    futures = client.map(fn, shards, iou_type=iou_type, dilation_ratio=dilation_ratio, max_dets=max_dets,
                         params=params, num_threads=worker_threads, pure=False, retries=retries,
                         key=[f"boundary-shard-{n}-{os.getpid()}-{id(shards)}" for n in range(len(shards))])
    try:
        if progress is not None:
            _report_progress(futures, progress)
        partials = client.gather(futures, errors="raise")
    finally:
        for f in futures:
            f.release()
    log.info("%d partials gathered (%d detections)", len(partials), sum(p.num_detections for p in partials))
    return _finish(shards, partials, verbose, num_threads)


def _report_progress(futures, progress: Callable[[int, int], None]) -> None:
    """Call ``progress(done, total)`` as the futures finish (a failed one
    counts as finished; ``gather`` raises its error afterwards)."""
    from dask.distributed import as_completed

    total = len(futures)
    progress(0, total)
    for done, _ in enumerate(as_completed(futures), 1):
        progress(done, total)


@contextlib.contextmanager
def local_client(workers: int = 2, threads_per_worker: int = 1, processes: bool = True,
                 memory_limit: Union[str, int] = "auto") -> Iterator:
    """A ``dask.distributed`` ``Client`` on a ``LocalCluster`` of ``workers`` workers.

    Closed (cluster included) when the ``with`` block ends.  The workers'
    scratch space is a temporary folder (``boundary_api_dask_*``) removed
    then too, not dask's ``dask-scratch-space`` left in the temporary folder.
    """
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("dask.distributed is needed: pip install 'boundary-api[dask]'") from None
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    import dask

    with temporary_folder("boundary_api_dask_") as scratch, \
            dask.config.set({"temporary-directory": scratch}):  # the scheduler's scratch space too
        with LocalCluster(n_workers=workers, threads_per_worker=threads_per_worker, processes=processes,
                          memory_limit=memory_limit, dashboard_address=":0", local_directory=scratch) as cluster:
            with Client(cluster) as client:
                yield client


def evaluate_ray(shards: Shards, iou_type: str = "segm", *, address: Optional[str] = None,
                 dilation_ratio: float = 0.02, max_dets: int = 300, params: Optional[dict] = None,
                 worker_threads: int = 1, max_retries: int = 0, shard_fn: Optional[Callable] = None,
                 verbose: bool = False, num_threads: Optional[int] = None, allow_partial: bool = False):
    """:func:`evaluate_dask` on Ray: one remote task per shard, partials gathered with ``ray.get``.

    ``address`` is passed to ``ray.init`` when Ray is not initialised yet
    (None: a local Ray).  ``max_retries`` is Ray's task retry count (also
    used when the worker process dies).  Ray is not a dependency of this
    package; it must be installed separately.
    """
    try:
        import ray
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("ray is needed for evaluate_ray: pip install ray") from None
    if not hasattr(ray, "remote"):  # e.g. Ray's own session folder /tmp/ray seen as a namespace package
        raise ImportError(f"ray is needed for evaluate_ray: pip install ray ('ray' found at "
                          f"{list(getattr(ray, '__path__', []))} is not the Ray package)")
    shards = _shards(shards, allow_partial)
    if not ray.is_initialized():
        ray.init(address=address, include_dashboard=False, log_to_driver=False)
    task = ray.remote(num_cpus=worker_threads, max_retries=max_retries)(shard_fn or evaluate_shard)
    refs = [task.remote(s, iou_type, dilation_ratio=dilation_ratio, max_dets=max_dets, params=params,
                        num_threads=worker_threads) for s in shards]
    try:
        partials = ray.get(refs)
    except BaseException:
        for r in refs:
            with contextlib.suppress(Exception):
                ray.cancel(r, force=True)
        raise
    return _finish(shards, partials, verbose, num_threads)


def gather_partials(partials: Sequence[Partial], img_ids=None, *, verbose: bool = False,
                    num_threads: Optional[int] = None):
    """Merge and accumulate partials from any engine (the last step of the functions above).

    ``img_ids``: the images that must be covered (a ValueError otherwise).
    """
    return accumulate_partial(merge_partials(partials), img_ids=img_ids, verbose=verbose,
                              num_threads=num_threads)
