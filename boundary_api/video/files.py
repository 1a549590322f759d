"""Video evaluations of folders and files by one call each, for the command
line and scripts: DAVIS (:func:`evaluate_davis`), SA-V (:func:`evaluate_sav`)
and YouTube-VIS (:func:`evaluate_vis_files`), each returning the global and
per-object (per-category) numbers, the official tables and what
``--json-out`` writes."""
from __future__ import annotations

import contextlib
import io
import os
import re
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence

import numpy as np

from .._io import input_error_class, write_text_atomic
from .davis import DAVISEvaluation
from .sav import _table as sav_table, sav_benchmark

__all__ = ["VOSResult", "VISResult", "ObjectFrames", "evaluate_davis", "evaluate_sav", "evaluate_vis_files"]


@dataclass
class ObjectFrames:
    """One object's evaluated frames and their per-frame values.

    Attributes
    ----------
    name : str
        The object as the official tables name it: DAVIS ``<sequence>_<n>``
        (the rows of its "Sequence" column), SA-V ``<video>_<object>`` (the
        object's folder name, or its id in the DAVIS-like layout).
    frames : list of str
        The evaluated frames (the annotation's file name without extension),
        in order: DAVIS all but the first and last (semi-supervised), SA-V
        from the object's first appearance.
    values : dict
        ``{'J': array, 'F': array(, 'B': array)}``, one value per frame
        (``DAVISEvaluation.per_frame``).
    annotations, results : list of str
        Each frame's ground-truth and result label-map files.
    images : list of str or None
        Each frame's image (DAVIS' JPEG) where there is one.
    gt_label, result_label : int
        The object's label in the annotations and in the results (the
        matched proposal, unsupervised); ``binary``: any nonzero pixel is the
        object (SA-V's per-object layout).
    """

    name: str
    frames: List[str]
    values: Dict[str, np.ndarray]
    annotations: List[str]
    results: List[str]
    images: List[Optional[str]]
    gt_label: int
    result_label: int
    binary: bool = False


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
    objects : list of ObjectFrames
        Every object's per-frame values and frames, in the rows' order.
    """

    kind: str
    metrics: Dict[str, float]
    per_object: List[dict]
    settings: dict
    seconds: float
    raw: object = field(default=None, repr=False)
    objects: List[ObjectFrames] = field(default_factory=list, repr=False)

    def per_frame_rows(self) -> List[dict]:
        """One row per object and evaluated frame: ``Sequence`` (the object,
        :attr:`ObjectFrames.name`), ``Frame``, ``J``, ``F`` (and ``B``), the
        values of ``DAVISEvaluation.per_frame`` (SA-V: fractions, as its
        per-frame values; its tables are in percent)."""
        names = self.settings["metrics"]
        rows = []
        for obj in self.objects:
            for t, frame in enumerate(obj.frames):
                row = {"Sequence": obj.name, "Frame": frame}
                for m in names:
                    row[m] = float(obj.values[m][t])
                rows.append(row)
        return rows

    def table(self) -> str:
        """The official tables as text.

        DAVIS: ``evaluation_method.py``'s two tables, global and per object
        (its heading "Sequence" kept: the rows are the objects
        ``<sequence>_<n>``), laid out and with the values formatted as pandas
        prints them there (6 decimals, ``DataFrame.to_string(index=False)``),
        each title also naming the task (``... for val, semi-supervised
        task``); SA-V: its per-object table (1 decimal, percent)."""
        if self.kind == "sav":
            return self.settings["_table"].replace(",", " ")
        subset, task = self.settings["set"], self.settings["task"]
        head = list(self.metrics)
        cols = list(self.per_object[0]) if self.per_object else ["Sequence"] + [k for k in head if k.endswith("-Mean")
                                                                              and k != "J&F-Mean"]
        return (f"--------------------------- Global results for {subset}, {task} task "
                "---------------------------\n"
                + pandas_table([(k, [self.metrics[k]]) for k in head])
                + f"\n\n---------- Per sequence results for {subset}, {task} task ----------\n"
                + pandas_table([(c, [r[c] for r in self.per_object]) for c in cols]))

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


def pandas_table(columns: Sequence[tuple]) -> str:
    """``pandas.DataFrame(...).to_string(index=False)`` of ``[(heading,
    values), ...]`` as pandas 1-3 prints it: a float column formatted with 6
    decimals (``NaN`` for NaN), its trailing zeros trimmed equally from every
    value (at least one decimal kept), or with ``{:.6e}`` when one value is
    nonzero and below 1e-6; a numeric heading given one leading space; every
    cell right-justified to its column's width; columns one space apart."""
    if not columns or not len(columns[0][1]):
        return f"Empty DataFrame\nColumns: [{', '.join(h for h, _ in columns)}]\nIndex: []"
    cells = []
    for heading, values in columns:
        numeric = all(isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, bool)
                      for v in values)
        if numeric:
            floats = np.asarray(values, np.float64)
            text = _pandas_floats(floats)
            heading = " " + heading
        else:
            text = [str(v).replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r") for v in values]
        width = max([len(heading)] + [len(t) for t in text])
        cells.append([heading.rjust(width)] + [t.rjust(width) for t in text])
    rows = len(cells[0]) if cells else 0
    return "\n".join(" ".join(col[i] for col in cells) for i in range(rows))


_DECIMAL_NUMBER = re.compile(r"^\s*[+-]?[0-9]+\.[0-9]*$")


def _pandas_floats(values: np.ndarray) -> List[str]:
    """pandas' ``FloatArrayFormatter`` at its default precision (6)."""
    finite = values[~np.isnan(values)]
    small = ((np.abs(finite) < 1e-6) & (finite != 0)).any()
    fmt = "{:.6e}" if small else "{:.6f}"
    text = ["NaN" if v != v else fmt.format(v) for v in values.tolist()]
    while True:
        numbers = [t for t in text if _DECIMAL_NUMBER.match(t)]
        if not numbers or not all(t.endswith("0") for t in numbers):
            break
        text = [t[:-1] if _DECIMAL_NUMBER.match(t) else t for t in text]
    return [t + "0" if _DECIMAL_NUMBER.match(t) and t.endswith(".") else t for t in text]


def _f3(v) -> str:
    return "nan" if v is None or (isinstance(v, float) and v != v) else f"{v:.3f}"


def _row(cells) -> str:
    return "  ".join(f"{c:>9}" for c in cells)


def _write(path: str, text: str) -> None:
    write_text_atomic(path, text)


def evaluate_davis(davis_root, results, *, task: str = "semi-supervised", gt_set: str = "val",
                   metrics: Sequence[str] = ("J", "F"), sequences="all", codalab: bool = False,
                   num_threads: Optional[int] = None, dilation_ratio: float = 0.02,
                   decay: str = "official") -> VOSResult:
    """J&F (and Boundary IoU with 'B') of a DAVIS results folder.

    The parameters are :class:`~boundary_api.video.DAVISEvaluation`'s
    (``metrics`` is its ``evaluate(metric=...)``: the drop-in keeps the
    original's name, this package's functions say ``metrics``); the global
    numbers are ``evaluation_method.py``'s: each statistic the mean over
    every object of every sequence, ``J&F-Mean`` the mean of ``J-Mean`` and
    ``F-Mean``. The result's ``objects`` hold every object's per-frame
    values and frames (``DAVISEvaluation.per_frame``).
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
    objects = []
    for name, values in ev.per_frame.items():
        frames, annotations, results_, images, gt_label, res_label = ev._frames[name]
        objects.append(ObjectFrames(name, list(frames), {m: values[m] for m in names}, list(annotations),
                                    list(results_), list(images), gt_label, res_label))
    return VOSResult("davis", g, rows, settings, time.time() - tic, res, objects)


def evaluate_sav(gt_root, dt_root, *, skip_first_and_last: bool = True, metrics: Sequence[str] = ("J", "F"),
                 strict: bool = True, num_threads: Optional[int] = None, dilation_ratio: float = 0.02) -> VOSResult:
    """SA-V's J&F (percent) of a predictions folder, with
    :func:`~boundary_api.video.sav_benchmark`'s rules; the result's
    ``objects`` hold every object's per-frame values (fractions) and frames,
    from its first appearance."""
    tic = time.time()
    videos: list = []
    with contextlib.redirect_stdout(io.StringIO()):
        jf, j, f, objects = sav_benchmark([gt_root], [dt_root], strict, num_threads, verbose=False,
                                          skip_first_and_last=skip_first_and_last, metrics=tuple(metrics),
                                          dilation_ratio=dilation_ratio, write_csv=False, _videos_out=videos)
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
    names = settings["metrics"]
    frames_of = []
    for video, _, _, extra in videos[0][2]:
        for obj, (files, gt_dir, pred_dir, label, binary) in extra["frames"].items():
            values = extra["per_frame"][obj]
            frames_of.append(ObjectFrames(
                f"{video}_{obj}", [os.path.splitext(n)[0] for n in files], {m: values[m] for m in names},
                [os.path.join(gt_dir, n) for n in files], [os.path.join(pred_dir, n) for n in files],
                [None] * len(files), label, label, binary))
    return VOSResult("sav", g, rows, settings, time.time() - tic, (jf, j, f, [objects]), frames_of)


def evaluate_vis_files(gt, dt, *, iou_type="segm", dilation_ratio: Optional[float] = None,
                       num_threads: Optional[int] = None, strict: bool = True, quiet: bool = True):
    """YouTube-VIS AP (``iou_type='segm'``) or HQ-YTVIS Tube-Boundary AP
    ('boundary') of a results file, by :class:`~boundary_api.video.YTVOS` and
    :class:`~boundary_api.video.YTVOSeval`; ``strict`` refuses suspect input.

    ``iou_type`` may be a sequence of both (e.g. ``("segm", "boundary")``):
    each is evaluated, in that order, on one load of the files, and the
    result is ``{iou_type: VISResult}``.
    """
    from ..instance.results import COCO_STAT_NAMES
    from .ytvos import YTVOS
    from .ytvoseval import YTVOSeval

    types = [iou_type] if isinstance(iou_type, str) else list(iou_type)
    if not types or len(set(types)) != len(types) or not all(t in ("segm", "boundary") for t in types):
        raise ValueError(f"iou_type must be 'segm', 'boundary' or a sequence of them (each once), got {iou_type!r}")
    tic = time.time()
    for flag, path in (("ground truth", gt), ("results", dt)):
        _not_a_folder(path, flag)
    out = {}
    with contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext():
        ytgt = YTVOS(gt, dilation_ratio=0.02 if dilation_ratio is None else dilation_ratio, strict=strict)
        ytdt = ytgt.loadRes(dt)
    for kind in types:
        with contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext():
            ev = YTVOSeval(ytgt, ytdt, kind, dilation_ratio=dilation_ratio, num_threads=num_threads)
            ev.evaluate()
            ev.accumulate()
        summary = io.StringIO()
        with contextlib.redirect_stdout(summary):
            ev.summarize()
        metrics = dict(zip(COCO_STAT_NAMES, map(float, ev.stats)))
        settings = {"max_dets": int(ev.params.maxDets[-1])}
        if kind == "boundary":
            settings["dilation_ratio"] = ev.dilation_ratio
        out[kind] = VISResult(metrics, _per_category(ev, ytgt), summary.getvalue().splitlines(), settings,
                              time.time() - tic, ev)
    return out[iou_type] if isinstance(iou_type, str) else out


#: what a DAVIS dataset folder holds
_DAVIS_FOLDERS = ("JPEGImages", "Annotations", "ImageSets", "Annotations_unsupervised")


def _not_a_folder(path, what: str) -> None:
    """A folder given as a YouTube-VIS file: refused, saying what it looks
    like (a DAVIS dataset or results folder) and what evaluates that."""
    if not isinstance(path, (str, os.PathLike)) or not os.path.isdir(path):
        return
    path = os.fspath(path)
    entries = set(os.listdir(path))
    inner = [e for e in sorted(entries) if os.path.isdir(os.path.join(path, e))
             and set(os.listdir(os.path.join(path, e))) & set(_DAVIS_FOLDERS)]
    if entries & set(_DAVIS_FOLDERS) or inner:
        hint = (f": it looks like a DAVIS dataset ({'/'.join(sorted(entries & set(_DAVIS_FOLDERS))) or inner[0]}), "
                "which boundary-eval vos --davis-root evaluates (boundary_api.video.evaluate_davis)")
    else:
        hint = ("; a folder of per-sequence PNGs (DAVIS or SA-V results) is evaluated by boundary-eval vos "
                "(boundary_api.video.evaluate_davis / evaluate_sav)")
    raise input_error_class(IsADirectoryError)(f"{what} {path} is a folder, not a YouTube-VIS JSON file{hint}")


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
