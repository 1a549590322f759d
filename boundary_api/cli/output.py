"""``--json-out``: the one JSON document every subcommand writes.

Schema (a JSON object; the same for ``boundary-eval`` on COCO and LVIS,
``boundary-eval panoptic`` and the demo):

``"boundary_api_version"``
    ``boundary_api.__version__``.
``"settings"``
    ``{"kind": "coco" | "lvis" | "panoptic" | "demo", "iou_type": ...,
    "dilation_ratio": float or null (null when the IoU type does not use it),
    "max_dets": int (COCO/LVIS/demo: detections per image), then the
    subcommand's own settings (``rec_thrs``; ``num_images`` and
    ``allow_partial`` of a ``--manifest`` run; panoptic ``boundary_mode``
    when ``--boundary-mode reference`` was asked for), "inputs": {flag: path
    exactly as given}}``.  The full schema: ``docs/json_output.md``.
then every summary metric by name
    COCO: ``AP AP50 AP75 APs APm APl AR1 AR10 AR100 ARs ARm ARl``, every one
    at ``--max-dets`` (the AR names follow it: ``AR300`` with ``--max-dets
    300``); LVIS:
    lvis' ``get_results()`` names (``AP ... APr APc APf AR@300 ...``);
    panoptic: ``PQ SQ RQ PQ_th SQ_th RQ_th PQ_st SQ_st RQ_st`` and the number
    of categories averaged ``N N_th N_st``.  Fractions in [0, 1].
``"per_category"``
    keyed by category id as a string (two categories with one name keep
    both): ``{"id", "name", "AP", "AP50", "AP75", "APs", "APm", "APl"}``, plus
    ``"frequency"`` (``"r"``, ``"c"`` or ``"f"``) for LVIS; panoptic:
    ``{"id", "name", "isthing", "PQ", "SQ", "RQ"}``.
``"segm"`` (demo only)
    the Mask AP summary, to set beside the top-level Boundary AP.

An undefined value (no ground truth in an area range, a category without
ground truth or predictions, pycocotools' ``-1``) is ``null``; the document
never holds NaN or Infinity.  The file is written atomically: to
``PATH.tmp-PID`` in the same directory, then renamed; nothing is left behind
on failure.
"""
from __future__ import annotations

import json
import math
import os
from typing import Any, Dict, Mapping, Optional

import numpy as np

from .._io import write_text_atomic

__all__ = ["build_document", "write_json", "write_csv_rows", "metric_value", "coco_summary"]

# the COCO summary table is the library's (kept here for the subcommands that import it from here)
from ..instance.results import coco_summary  # noqa: E402,F401


def metric_value(x) -> Optional[float]:
    """A metric as JSON: a float, or None for NaN, infinities, None and the
    ``-1`` that pycocotools and lvis report for undefined averages."""
    if x is None:
        return None
    v = float(x)
    if not math.isfinite(v) or v == -1.0:
        return None
    return v


def _plain(v):
    """numpy scalars (ids from ``params.catIds``, counts) as Python values."""
    return v.item() if isinstance(v, np.generic) else v


def finite_or_none(x):
    """Kept for callers of the older name: see :func:`metric_value`."""
    return metric_value(x)


def build_document(kind: str, iou_type: str, dilation_ratio: Optional[float], inputs: Mapping[str, str],
                   metrics: Mapping[str, Any], per_category: Optional[Mapping[Any, Mapping[str, Any]]] = None,
                   max_dets: Optional[int] = None, extra: Optional[Mapping[str, Any]] = None,
                   settings_extra: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Build the ``--json-out`` document (see the module docstring).

    Parameters
    ----------
    kind : str
        Dataset kind: "coco", "lvis", "panoptic", "demo", ...
    iou_type : str
        IoU type evaluated.
    dilation_ratio : float or None
        Reported only when ``iou_type == "boundary"`` (else null).
    inputs : mapping
        Flag name -> path as the user gave it (flags not given are left out).
    metrics : mapping
        Summary metric name -> value (converted with :func:`metric_value`).
    per_category : mapping, optional
        Category id -> {"name": ..., other fields, metric -> value}; metric
        values (every float) are converted with :func:`metric_value`.
    max_dets : int, optional
        Detections per image, where it applies.
    extra : mapping, optional
        Further top-level keys (already JSON-ready apart from metric values).
    settings_extra : mapping, optional
        Further settings of the subcommand (JSON-ready), placed before "inputs".
    """
    from .._version import __version__

    settings: Dict[str, Any] = {"kind": kind, "iou_type": iou_type,
                                "dilation_ratio": float(dilation_ratio) if iou_type == "boundary"
                                and dilation_ratio is not None else None}
    if max_dets is not None:
        settings["max_dets"] = int(max_dets)
    settings.update(settings_extra or {})
    settings["inputs"] = {flag: os.fspath(path) for flag, path in inputs.items() if path is not None}
    doc: Dict[str, Any] = {"boundary_api_version": __version__, "settings": settings}
    for name, value in metrics.items():
        doc[str(name)] = metric_value(value) if isinstance(value, (float, np.floating)) else _plain(value)
    if per_category is not None:
        block = {}
        for cat_id, row in per_category.items():
            cat_id = _plain(cat_id)
            entry: Dict[str, Any] = {"id": cat_id}
            for key, value in row.items():
                entry[key] = metric_value(value) if isinstance(value, (float, np.floating)) else _plain(value)
            block[str(cat_id)] = entry
        doc["per_category"] = block
    if extra:
        for key, value in extra.items():
            doc[key] = {k: metric_value(v) for k, v in value.items()} if isinstance(value, Mapping) else value
    return doc


def write_json(path: str, doc, *, indent: Optional[int] = 1, separators=None) -> None:
    """Write ``doc`` to ``path`` atomically (every file a subcommand writes:
    ``--json-out``, ``synthetic --out``, the demo's files).

    The text is built first (a NaN or an object JSON cannot hold raises
    ValueError/TypeError before any file is created), written to
    ``PATH.tmp-PID`` beside ``path`` and renamed over it; on any failure,
    interruption included, the temporary file is removed.
    """
    text = json.dumps(doc, indent=indent, separators=separators, allow_nan=False)
    write_text_atomic(path, text + "\n")


def write_csv_rows(path: str, rows, columns) -> None:
    """Write ``rows`` (dicts) as a CSV file of ``columns`` (``--per-frame``),
    atomically as :func:`write_json`; floats written exactly (``repr``)."""
    import csv
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow([repr(v) if isinstance(v, float) else v for v in (row[c] for c in columns)])
    write_text_atomic(path, buf.getvalue())
