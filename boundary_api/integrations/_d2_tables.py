"""Markdown tables and log lines in Detectron2's style, for the boundary task's results."""
from __future__ import annotations

import logging
import math
from typing import Dict, Iterable, List, Sequence, Tuple

import numpy as np

#: name of the task in Detectron2's result dict
TASK = "boundary"


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        return f"{float(value):.3f}"
    return str(value)


def format_table(headers: Sequence[str], rows: Iterable[Sequence], align: str = "center") -> str:
    """A Markdown ("pipe") table, floats with three decimals.

    Parameters
    ----------
    headers : sequence of str
    rows : iterable of sequences
        Cells: floats (shown as ``12.345`` or ``nan``), strings, or None (empty).
    align : {'center', 'left'}

    Returns
    -------
    str
    """
    if align not in ("center", "left"):
        raise ValueError(f"align must be 'center' or 'left', got {align!r}")
    body = [[_cell(v) for v in row] for row in rows]
    widths = [max([len(str(h))] + [len(r[i]) for r in body if i < len(r)]) for i, h in enumerate(headers)]

    def line(cells):
        cells = list(cells) + [""] * (len(widths) - len(cells))
        padded = [c.center(w) if align == "center" else c.ljust(w) for c, w in zip(cells, widths)]
        return "| " + " | ".join(padded) + " |"

    if align == "center":
        rule = "|" + "|".join(":" + "-" * w + ":" for w in widths) + "|"
    else:
        rule = "|" + "|".join(":" + "-" * (w + 1) for w in widths) + "|"
    return "\n".join([line([str(h) for h in headers]), rule] + [line(r) for r in body])


def _log_metrics(logger: logging.Logger, metrics: Dict[str, float]) -> None:
    logger.info("Evaluation results for %s: \n%s", TASK,
                format_table(list(metrics), [list(metrics.values())]))
    if not all(math.isfinite(v) for v in metrics.values()):
        logger.info("Metrics shown as NaN could not be computed (no ground truth or "
                    "no predictions in that range).")
    elif any(v == -100 for v in metrics.values()):
        logger.info("Metrics shown as -100 could not be computed (LVIS reports -1 there, "
                    "Detectron2 shows it as -100).")


def _log_per_category(logger: logging.Logger, per_category: List[Tuple[str, float]]) -> None:
    pairs_per_row = min(3, len(per_category))
    flat = [x for pair in per_category for x in pair]
    width = 2 * pairs_per_row
    rows = [flat[i:i + width] for i in range(0, len(flat), width)]
    logger.info("Per-category %s AP: \n%s", TASK,
                format_table(["category", "AP"] * pairs_per_row, rows, align="left"))


