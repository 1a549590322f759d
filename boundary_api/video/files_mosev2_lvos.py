"""MOSEv2 and LVOS evaluations of folders by one call each, for the command line
and scripts (:func:`evaluate_mosev2`, :func:`evaluate_lvos`): the numbers, the
official tables and files, and what ``--json-out`` writes."""
from __future__ import annotations

import contextlib
import csv
import io
import os
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

from .files import VOSResult, _write
from .lvos import LVOSEvaluation
from . import mosev2 as _mosev2

__all__ = ["MOSEv2Result", "LVOSResult", "evaluate_mosev2", "evaluate_lvos"]


def _num(x):
    """A value as JSON takes it: float, or None."""
    return None if x is None else float(x)


class MOSEv2Result(VOSResult):
    """A MOSEv2 evaluation (``kind`` 'mosev2'): ``metrics`` the seven global
    numbers (fractions, and ``B``), ``per_object`` one row per object,
    ``raw`` what :func:`~boundary_api.video.mosev2_benchmark` returns."""

    def table(self) -> str:
        """score.py's printed table and summary (percent)."""
        return _mosev2.mosev2_report(self.settings["_rows"], self.raw).rstrip("\n")

    def write_output(self, folder: str) -> List[str]:
        """score.py's ``--output`` files into ``folder``: ``metrics.json`` and
        ``scores.txt``, byte for byte (``total_time``: this evaluation's)."""
        os.makedirs(folder, exist_ok=True)
        paths = []
        for name, text in _mosev2.mosev2_files(self.settings["_rows"], self.raw, self.seconds).items():
            path = os.path.join(folder, name)
            _write(path, text)
            paths.append(path)
        return paths

    def write_csv(self, folder: str) -> List[str]:
        return self.write_output(folder)


def evaluate_mosev2(meta_path, gt_root, dt_root, *, metrics: Sequence[str] = ("J", "F"), strict: bool = True,
                    num_threads: Optional[int] = None, dilation_ratio: float = 0.02,
                    video_order: str = "listdir") -> MOSEv2Result:
    """MOSEv2's J, F and F_new of a predictions folder, with
    :func:`~boundary_api.video.mosev2_benchmark`'s parameters."""
    tic = time.time()
    rows, _, extra = _mosev2._evaluate(meta_path, gt_root, dt_root, metrics=metrics, strict=strict,
                                       num_threads=num_threads, dilation_ratio=dilation_ratio,
                                       video_order=video_order)
    res = _mosev2._result(rows, extra["B"])
    g = {k: _num(res[k]) for k in _mosev2.GLOBAL_KEYS}
    if "B" in res:
        g["B"] = _num(res["B"])
    per = []
    for key, values in res["per_object"].items():
        video, obj = key.rsplit("_", 1)
        per.append({"video": video, "object": obj, **{k: _num(v) for k, v in values.items()}})
    settings = {"strict": strict, "metrics": [m for m in ("J", "F", "B") if m in metrics], "video_order": video_order,
                "_rows": rows}
    if "B" in metrics:
        settings["dilation_ratio"] = dilation_ratio
    return MOSEv2Result("mosev2", g, per, settings, time.time() - tic, res)


#: evaluation_method.py's global columns
LVOS_GLOBAL = ("J&F-Mean", "J-Mean", "J-seen-Mean", "J-unseen-Mean", "F-Mean", "F-seen-Mean", "F-unseen-Mean",
               "V-Mean", "V-seen-Mean", "V-unseen-Mean")


class LVOSResult(VOSResult):
    """An LVOS evaluation (``kind`` 'lvos'): ``metrics`` evaluation_method.py's
    global numbers (and ``B-...``), ``per_object`` its per-sequence rows,
    ``raw`` the three dicts :class:`~boundary_api.video.LVOSEvaluation`
    returns."""

    def write_csv(self, folder: str) -> List[str]:
        """evaluation_method.py's ``global_results-<set>.csv`` and
        ``per-sequence_results-<set>.csv`` (pandas' ``float_format='%.3f'``:
        NaN as an empty field)."""
        os.makedirs(folder, exist_ok=True)
        subset = self.settings["set"]
        g = os.path.join(folder, f"global_results-{subset}.csv")
        s = os.path.join(folder, f"per-sequence_results-{subset}.csv")
        head = list(self.metrics)
        _write(g, _csv([head, [_pandas3(self.metrics[k]) for k in head]]))
        cols = list(self.per_object[0]) if self.per_object else ["Sequence", "J-Mean", "F-Mean", "V-Mean"]
        _write(s, _csv([cols] + [[r[cols[0]]] + [_pandas3(r[c]) for c in cols[1:]] for r in self.per_object]))
        return [g, s]


def _pandas3(v) -> str:
    return "" if v is None or v != v else "%.3f" % v


def _csv(rows) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerows(rows)
    return buf.getvalue()


def _mean(values):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(np.mean(values))


def evaluate_lvos(lvos_root, results, *, task: str = "semi-supervised", gt_set: str = "valid",
                  metrics: Sequence[str] = ("J", "F", "V"), codalab: bool = False,
                  unseen_videos: Optional[str] = None, unsupervised_videos: Optional[str] = None,
                  num_threads: Optional[int] = None, dilation_ratio: float = 0.02) -> LVOSResult:
    """J, F and V of an LVOS results folder, with
    :class:`~boundary_api.video.LVOSEvaluation`'s parameters, and the global
    numbers of lvos-evaluation's ``evaluation_method.py``: each the mean of
    the seen and the unseen videos' means (NaN when one half is empty),
    J&F-Mean the mean of the four."""
    tic = time.time()
    ev = LVOSEvaluation(lvos_root, task, gt_set, codalab=codalab, num_threads=num_threads,
                        dilation_ratio=dilation_ratio, unseen_videos=unseen_videos,
                        unsupervised_videos=unsupervised_videos)
    with contextlib.redirect_stdout(io.StringIO()):
        res, seen, unseen = ev.evaluate(results, metric=tuple(metrics))
    names = [m for m in ("J", "F", "V", "B") if m in res and (m != "V" or ("J" in res and "F" in res))]
    g: Dict[str, float] = {}
    if "J" in res and "F" in res:
        g["J&F-Mean"] = ((_mean(seen["J"]["M"]) + _mean(seen["F"]["M"]))
                         + (_mean(unseen["J"]["M"]) + _mean(unseen["F"]["M"]))) / 4.0
    for m in names:
        g[f"{m}-Mean"] = (_mean(seen[m]["M"]) + _mean(unseen[m]["M"])) / 2
        g[f"{m}-seen-Mean"] = _mean(seen[m]["M"])
        g[f"{m}-unseen-Mean"] = _mean(unseen[m]["M"])
    rows = []
    for key in res[names[0]]["M_per_object"]:
        row = {"Sequence": key}
        for m in names:
            row[f"{m}-Mean"] = float(res[m]["M_per_object"][key])
        rows.append(row)
    settings = {"task": task, "set": gt_set, "metrics": names}
    if "B" in names:
        settings["dilation_ratio"] = dilation_ratio
    return LVOSResult("lvos", g, rows, settings, time.time() - tic, (res, seen, unseen))
