"""Video evaluations of folders and files by one call each, for the command
line and scripts: DAVIS (:func:`evaluate_davis`), SA-V (:func:`evaluate_sav`)
and YouTube-VIS (:func:`evaluate_vis_files`), each returning the global and
per-object (per-category) numbers, the official tables and what
``--json-out`` writes."""
from __future__ import annotations

import contextlib
import io
import os
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from .davis import DAVISEvaluation
from .sav import _table as sav_table, sav_benchmark

__all__ = ["VOSResult", "VISResult", "evaluate_davis", "evaluate_sav", "evaluate_vis_files"]


@dataclass
class VOSResult:
    """A video object segmentation evaluation.

    Attributes
    ----------
    kind : str
        'davis' or 'sav'.
    metrics : dict
        The global numbers by name: DAVIS ``J&F-Mean``, ``J-Mean``,
        ``J-Recall``, ``J-Decay``, ``F-...`` (``B-...``), fractions; SA-V
        ``J&F``, ``J``, ``F`` (``B``), percent.
    per_object : list of dict
        One row per object: DAVIS ``{'Sequence', 'J-Mean', 'F-Mean'(, 'B-Mean')}``;
        SA-V ``{'video', 'object', 'J&F', 'J', 'F'(, 'B')}``.
    settings : dict
    seconds : float
    raw : object
        What the drop-in returned (DAVIS' ``metrics_res``, SA-V's tuple).
    """

    kind: str
    metrics: Dict[str, float]
    per_object: List[dict]
    settings: dict
    seconds: float
    raw: object = field(default=None, repr=False)

    def table(self) -> str:
        """The official tables as text: DAVIS' global and per-sequence
        tables (the columns of ``evaluation_method.py``'s CSV files), SA-V's
        per-object table."""
        if self.kind == "sav":
            return self.settings["_table"].replace(",", " ")
        head = list(self.metrics)
        lines = [_row(head), _row([_f3(self.metrics[k]) for k in head]), ""]
        cols = list(self.per_object[0]) if self.per_object else ["Sequence", "J-Mean", "F-Mean"]
        width = max([len("Sequence")] + [len(r["Sequence"]) for r in self.per_object])
        lines.append("  ".join([f"{cols[0]:<{width}}"] + [f"{c:>8}" for c in cols[1:]]))
        for r in self.per_object:
            lines.append("  ".join([f"{r[cols[0]]:<{width}}"] + [f"{_f3(r[c]):>8}" for c in cols[1:]]))
        return "\n".join(lines)

    def write_csv(self, folder: str) -> List[str]:
        """The official CSV files into ``folder``: DAVIS'
        ``global_results-<set>.csv`` and ``per-sequence_results-<set>.csv``
        (values with 3 decimals, as ``evaluation_method.py``), SA-V's
        ``results.csv``; returns their paths."""
        os.makedirs(folder, exist_ok=True)
        if self.kind == "sav":
            path = os.path.join(folder, "results.csv")
            _write(path, self.settings["_table"])
            return [path]
        subset = self.settings["set"]
        g = os.path.join(folder, f"global_results-{subset}.csv")
        s = os.path.join(folder, f"per-sequence_results-{subset}.csv")
        head = list(self.metrics)
        _write(g, ",".join(head) + "\n" + ",".join(_f3(self.metrics[k]) for k in head) + "\n")
        cols = list(self.per_object[0]) if self.per_object else ["Sequence", "J-Mean", "F-Mean"]
        body = "".join(",".join([r[cols[0]]] + [_f3(r[c]) for c in cols[1:]]) + "\n" for r in self.per_object)
        _write(s, ",".join(cols) + "\n" + body)
        return [g, s]


@dataclass
class VISResult:
    """A YouTube-VIS evaluation: ``metrics`` (the 12 ``stats`` by name),
    ``per_category`` ({category id: {'name', 'AP', 'AP50', ...}}), the
    printed summary ``lines``, ``settings`` and ``seconds``; ``evaluator``
    is the :class:`~boundary_api.video.YTVOSeval`."""

    metrics: Dict[str, float]
    per_category: Dict[object, dict]
    lines: List[str]
    settings: dict
    seconds: float
    evaluator: object = field(default=None, repr=False)


def _f3(v) -> str:
    return "nan" if v is None or (isinstance(v, float) and v != v) else f"{v:.3f}"


def _row(cells) -> str:
    return "  ".join(f"{c:>9}" for c in cells)


def _write(path: str, text: str) -> None:
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def evaluate_davis(davis_root, results, *, task: str = "semi-supervised", gt_set: str = "val",
                   metrics: Sequence[str] = ("J", "F"), sequences="all", codalab: bool = False,
                   num_threads: Optional[int] = None, dilation_ratio: float = 0.02,
                   decay: str = "official") -> VOSResult:
    """J&F (and Boundary IoU with 'B') of a DAVIS results folder.

    The parameters are :class:`~boundary_api.video.DAVISEvaluation`'s; the
    global numbers are ``evaluation_method.py``'s: each statistic the mean
    over every object of every sequence, ``J&F-Mean`` the mean of ``J-Mean``
    and ``F-Mean``.
    """
    tic = time.time()
    ev = DAVISEvaluation(davis_root, task, gt_set, sequences=sequences, codalab=codalab, num_threads=num_threads,
                         dilation_ratio=dilation_ratio, decay=decay)
    res = ev.evaluate(results, metric=tuple(metrics))
    names = [m for m in ("J", "F", "B") if m in res]
    g: Dict[str, float] = {}
    if "J" in res and "F" in res:
        g["J&F-Mean"] = float((np.mean(res["J"]["M"]) + np.mean(res["F"]["M"])) / 2.)
    for m in names:
        for stat, label in (("M", "Mean"), ("R", "Recall"), ("D", "Decay")):
            g[f"{m}-{label}"] = float(np.mean(res[m][stat]))
    rows = []
    first = res[names[0]]["M_per_object"]
    for seq_name in first:
        row = {"Sequence": seq_name}
        for m in names:
            row[f"{m}-Mean"] = float(res[m]["M_per_object"][seq_name])
        rows.append(row)
    settings = {"task": task, "set": gt_set, "metrics": names, "decay": decay}
    if "B" in names:
        settings["dilation_ratio"] = dilation_ratio
    return VOSResult("davis", g, rows, settings, time.time() - tic, res)


def evaluate_sav(gt_root, dt_root, *, skip_first_and_last: bool = True, metrics: Sequence[str] = ("J", "F"),
                 strict: bool = True, num_threads: Optional[int] = None, dilation_ratio: float = 0.02) -> VOSResult:
    """SA-V's J&F (percent) of a predictions folder, with
    :func:`~boundary_api.video.sav_benchmark`'s rules."""
    tic = time.time()
    with contextlib.redirect_stdout(io.StringIO()):
        jf, j, f, objects = sav_benchmark([gt_root], [dt_root], strict, num_threads, verbose=False,
                                          skip_first_and_last=skip_first_and_last, metrics=tuple(metrics),
                                          dilation_ratio=dilation_ratio, write_csv=False)
    objects = objects[0]
    with_b = "B" in metrics
    g = {"J&F": float(jf[0]), "J": float(j[0]), "F": float(f[0])}
    rows, all_b = [], []
    for video, values in objects.items():
        for obj in values[0]:
            jj, ff = float(values[0][obj]), float(values[1][obj])
            row = {"video": video, "object": obj if isinstance(obj, str) else int(obj), "J&F": (jj + ff) / 2,
                   "J": jj, "F": ff}
            if with_b:
                row["B"] = float(values[2][obj])
                all_b.append(values[2][obj])
            rows.append(row)
    global_b = float(np.array(all_b).mean()) if with_b else None
    if with_b:
        g["B"] = global_b
    settings = {"skip_first_and_last": skip_first_and_last, "metrics": [m for m in ("J", "F", "B") if m in metrics],
                "_table": sav_table(objects, jf[0], j[0], f[0], global_b)}
    if with_b:
        settings["dilation_ratio"] = dilation_ratio
    return VOSResult("sav", g, rows, settings, time.time() - tic, (jf, j, f, [objects]))


def evaluate_vis_files(gt, dt, *, iou_type: str = "segm", dilation_ratio: Optional[float] = None,
                       num_threads: Optional[int] = None, strict: bool = True, quiet: bool = True) -> VISResult:
    """YouTube-VIS AP (``iou_type='segm'``) or HQ-YTVIS Tube-Boundary AP
    ('boundary') of a results file, by :class:`~boundary_api.video.YTVOS` and
    :class:`~boundary_api.video.YTVOSeval`; ``strict`` refuses suspect input."""
    from ..instance.results import COCO_STAT_NAMES
    from .ytvos import YTVOS
    from .ytvoseval import YTVOSeval

    tic = time.time()
    with contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext():
        ytgt = YTVOS(gt, dilation_ratio=0.02 if dilation_ratio is None else dilation_ratio, strict=strict)
        ytdt = ytgt.loadRes(dt)
        ev = YTVOSeval(ytgt, ytdt, iou_type, dilation_ratio=dilation_ratio, num_threads=num_threads)
        ev.evaluate()
        ev.accumulate()
    summary = io.StringIO()
    with contextlib.redirect_stdout(summary):
        ev.summarize()
    metrics = dict(zip(COCO_STAT_NAMES, map(float, ev.stats)))
    per_category = _per_category(ev, ytgt)
    settings = {"max_dets": int(ev.params.maxDets[-1])}
    if iou_type == "boundary":
        settings["dilation_ratio"] = ev.dilation_ratio
    return VISResult(metrics, per_category, summary.getvalue().splitlines(), settings, time.time() - tic, ev)


def _per_category(ev, ytgt) -> Dict[object, dict]:
    """AP, AP50, AP75 and the area-range APs of every evaluated category."""
    p = ev.eval["precision"]
    params = ev.params
    out = {}
    thr = np.asarray(params.iouThrs)
    m = len(params.maxDets) - 1
    for k, cat in enumerate(params.catIds if params.useCats else []):
        row = {"name": ytgt.cats.get(cat, {}).get("name")}
        for name, t, a in (("AP", None, 0), ("AP50", 0.5, 0), ("AP75", 0.75, 0), ("APs", None, 1),
                           ("APm", None, 2), ("APl", None, 3)):
            s = p[:, :, k, a, m] if t is None else p[np.flatnonzero(np.isclose(thr, t)), :, k, a, m]
            s = s[s > -1]
            row[name] = float(np.mean(s)) if s.size else None
        out[cat] = row
    return out
