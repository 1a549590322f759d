"""``evaluate_saco_files``: cgF1 of a predictions file against SA-Co ground truths, read
once and evaluated for one or several IoU types (what ``boundary-eval saco`` calls)."""
from __future__ import annotations

import contextlib
import io
import os
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from .evaluator import IOU_TYPES, CGF1Evaluator
from .._parallel import resolve_threads
from ._inputs import read_predictions
from .metrics import CGF1_METRICS, result_dict
from .._io import input_error_class

__all__ = ["SacoResult", "evaluate_saco_files"]


@dataclass
class SacoResult:
    """One IoU type's evaluation of :func:`evaluate_saco_files`.

    Attributes
    ----------
    iou_type : str
    results : dict
        What the official ``CGF1Evaluator.evaluate`` returns
        (``cgF1_eval_<iou_type>_<metric>``).
    metrics : dict
        The same 26 values by metric name (``cgF1``, ..., ``cgF1@0.5``, ...).
    lines : list of str
        The official summary as printed (its title line first).
    num_pairs : int
        Pairs evaluated.
    seconds : float
    """

    iou_type: str
    results: Dict[str, float]
    metrics: Dict[str, float]
    lines: List[str]
    num_pairs: int
    seconds: float = 0.0
    dilation_ratio: Optional[float] = None
    settings: dict = field(default_factory=dict)

    def table(self) -> str:
        """The official summary as it prints it."""
        return "\n".join(self.lines)


def _metric_names() -> List[str]:
    return [m.name if m.iou_threshold is None else f"{m.name}@{m.iou_threshold}" for m in CGF1_METRICS]


def evaluate_saco_files(gt: Union[str, os.PathLike, Sequence], dt, iou_types: Sequence[str] = ("segm",), *,
                        dilation_ratio: float = 0.02, strict: bool = False,
                        num_threads: Optional[int] = None) -> List[SacoResult]:
    """cgF1 of ``dt`` against the SA-Co ground truth file(s) ``gt``.

    The files are read once; each IoU type is evaluated as
    ``CGF1Evaluator(gt, iou_type).evaluate(dt)`` evaluates it (same numbers),
    without printing.

    Parameters
    ----------
    gt : path or list of paths
        One ground-truth file per annotator (a pipe is read once).
    dt : path
        The predictions (SAM 3's ``coco_writer.py`` format).
    iou_types : sequence of {'segm', 'bbox', 'boundary'}
        'boundary' is Boundary cgF1 (``min(mask IoU, Boundary IoU)``).
    dilation_ratio : float
        Boundary width as a fraction of the image diagonal ('boundary').
    strict : bool
        Refuse what the official code accepts but is probably a mistake
        (predictions for image or category ids the ground truth does not
        have, box-only predictions for a mask IoU type, ...) instead of
        warning.
    num_threads : int, optional
        Threads for the kernels (default: all cores).

    Returns
    -------
    list of SacoResult
        One per IoU type, in the order given.

    Raises
    ------
    ValueError
        (also of the class the official code raises, as KeyError for a pair
        without ``is_instance_exhaustive``) naming the file and the problem.
    """
    types = list(dict.fromkeys(iou_types))
    bad = [t for t in types if t not in IOU_TYPES]
    if not types or bad:
        raise ValueError(f"iou_types must be some of {', '.join(IOU_TYPES)}; got {list(iou_types)!r}")
    gts = [gt] if isinstance(gt, (str, bytes, os.PathLike)) else list(gt)
    tic = time.time()
    try:
        with contextlib.ExitStack() as stack:
            pending = None
            if resolve_threads(num_threads) > 1:
                # the predictions read (on one thread: the others read the ground truths)
                # while the ground truths are; an error of theirs is still the one raised
                from concurrent.futures import ThreadPoolExecutor

                pending = stack.enter_context(ThreadPoolExecutor(1)).submit(read_predictions, dt, 1)
            with contextlib.redirect_stdout(io.StringIO()):  # (the official constructor's loading lines)
                ev = CGF1Evaluator(gts, types[0], dilation_ratio=dilation_ratio, strict=strict,
                                   num_threads=num_threads)
            preds = pending.result() if pending is not None else read_predictions(dt, num_threads)
        read_seconds = time.time() - tic
        out = []
        for t in types:
            t0 = time.time()
            ev.iou_type = t
            with contextlib.redirect_stdout(io.StringIO()):
                result = ev._evaluate_predictions(preds)
            values = result_dict(result.stats, t)
            metrics = dict(zip(_metric_names(), values.values()))
            lines = ["cgF1 metric, IoU type={}".format(t)] + list(result.lines)
            out.append(SacoResult(t, values, metrics, lines, len(ev.eval_img_ids),
                                  time.time() - t0 + (read_seconds if not out else 0.0),
                                  ev.dilation_ratio if t == "boundary" else None,
                                  {"num_gt_files": len(gts), "num_pairs": len(ev.eval_img_ids)}))
        return out
    except (KeyError, AssertionError, IndexError, AttributeError) as exc:
        if isinstance(exc, ValueError):
            raise
        # what the official code's own steps raise on this input: the same class, one line
        raise input_error_class(type(exc))(
            f"the official cgF1 evaluation fails on this input ({type(exc).__name__}: {exc}); ground truth "
            f"{', '.join(os.fspath(g) if isinstance(g, (str, os.PathLike)) else str(g) for g in gts)}, "
            f"predictions {os.fspath(dt) if isinstance(dt, (str, os.PathLike)) else dt}") from None
