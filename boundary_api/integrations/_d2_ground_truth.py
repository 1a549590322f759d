"""One ground-truth object per annotation file, so that per-annotation boundaries are
computed once across the evaluators Detectron2 builds anew for every evaluation."""
from __future__ import annotations

import logging
import os
import threading
from typing import Dict, Tuple

log = logging.getLogger("boundary_api.integrations.d2_results")

_SHARED: Dict[Tuple[str, str], Tuple[Tuple[int, int], object]] = {}
_SHARED_LOCK = threading.Lock()


def _kind(gt) -> str:
    t = type(gt)
    return f"{t.__module__}.{t.__qualname__}"


def shared_ground_truth(gt, annotation_file):
    """One ground-truth object per annotation file, across evaluator instances.

    Returns the object registered earlier for ``annotation_file`` if the file
    is unchanged (same size and modification time) and the object is of the
    same type as ``gt``; otherwise registers ``gt`` and returns it.  Since
    boundaries are cached per ground-truth object, evaluators that load the
    file anew each time (Detectron2's trainer builds a new evaluator for every
    periodic evaluation) then reuse the boundaries computed before.

    The registered object stays in memory until
    :func:`release_shared_ground_truth` or the end of the process.

    Parameters
    ----------
    gt : COCO or LVIS ground-truth object
        Freshly loaded from ``annotation_file``.
    annotation_file : str or path-like
        Local path of the annotation JSON.  If it cannot be read, ``gt`` is
        returned and nothing is registered.

    Returns
    -------
    object
        The ground-truth object to use.
    """
    try:
        path = os.path.realpath(os.fspath(annotation_file))
        st = os.stat(path)
    except (OSError, TypeError, ValueError):
        return gt
    key = (_kind(gt), path)
    signature = (st.st_mtime_ns, st.st_size)
    with _SHARED_LOCK:
        entry = _SHARED.get(key)
        if entry is not None and entry[0] == signature:
            log.debug("reusing the ground truth loaded before from %s", path)
            return entry[1]
        _SHARED[key] = (signature, gt)
    return gt


def release_shared_ground_truth(annotation_file=None) -> int:
    """Forget the ground truth registered by :func:`shared_ground_truth`.

    Parameters
    ----------
    annotation_file : str or path-like, optional
        Only this file's entries (default: all).

    Returns
    -------
    int
        Number of entries removed.
    """
    with _SHARED_LOCK:
        if annotation_file is None:
            n = len(_SHARED)
            _SHARED.clear()
            return n
        path = os.path.realpath(os.fspath(annotation_file))
        keys = [k for k in _SHARED if k[1] == path]
        for k in keys:
            del _SHARED[k]
        return len(keys)

