"""What the benchmark child processes share (not a benchmark itself).

A child is one fresh Python process that runs one case and prints one line
``MARKER {json}``: ``_harness.py`` (the cases of bench_coco.py, bench_lvis.py,
...), ``_run_one.py`` (run_all.py) and ``_video_child.py`` (bench_video.py).
This module imports only the standard library, so that a child's imports and
memory stay those of the tool it measures (each tool is imported inside the
child's function for it).
"""
from __future__ import annotations

import json
import time
from typing import Dict

#: the line a child prints its result on starts with this
MARKER = "@@RESULT@@ "

#: lvis get_results() keys, and where faster-coco-eval (lvis_style, maxDets=[300]) puts them
LVIS_KEYS = ["AP", "AP50", "AP75", "APs", "APm", "APl", "APr", "APc", "APf",
             "AR@300", "ARs@300", "ARm@300", "ARl@300"]
FASTER_LVIS_INDEX = [0, 1, 2, 3, 4, 5, 14, 15, 16, 6, 9, 10, 11]


class Timer:
    """Seconds per named phase, each lap from the end of the previous one
    (the first from ``start``, the process' start where given)."""

    def __init__(self, start: float = None):
        self.phases: Dict[str, float] = {}
        self._t = time.perf_counter() if start is None else start

    def lap(self, name: str) -> None:
        now = time.perf_counter()
        self.phases[name] = self.phases.get(name, 0.0) + now - self._t
        self._t = now


def run_eval(t: Timer, ev, split: bool = False, after=()):
    """A pycocotools-style evaluator's run, timed: ``evaluate`` (the phase
    "evaluate"), then ``accumulate`` and ``summarize`` and the methods named in
    ``after`` (``print_results``, say): one phase "accumulate+summarize", or
    with ``split`` the phases "accumulate" and "summarize"."""
    ev.evaluate()
    t.lap("evaluate")
    ev.accumulate()
    if split:
        t.lap("accumulate")
    ev.summarize()
    for name in after:
        getattr(ev, name)()
    t.lap("summarize" if split else "accumulate+summarize")
    return ev


def import_lvis():
    """lvis' ``LVIS``, ``LVISEval``, ``LVISResults``; lvis 0.5.3 calls
    ``np.float`` (gone since numpy 1.24) in accumulate, patched here, in this
    benchmark process only."""
    import numpy as np

    np.float = float
    from lvis import LVIS, LVISEval, LVISResults

    return LVIS, LVISEval, LVISResults


def faster_lvis_results(gt, path: str, max_dets: int, prefilter: bool = True) -> list:
    """The results of ``path`` as faster-coco-eval evaluates LVIS: the
    ``max_dets`` best of each image (as LVISResults keeps them) and, with
    ``prefilter``, only those in categories the federated rule scores on their
    image (present or verified absent: faster-coco-eval 1.8.0 stops with
    IndexError, unordered_map::at, when all of an image's results are in
    categories the rule drops; lvis ignores them too)."""
    from collections import defaultdict

    with open(path) as f:
        anns = json.load(f)
    per_img = defaultdict(list)
    for a in anns:
        per_img[a["image_id"]].append(a)
    anns = [a for v in per_img.values() for a in sorted(v, key=lambda a: a["score"], reverse=True)[:max_dets]]
    if prefilter:
        scored = {im["id"]: set(im.get("neg_category_ids", [])) for im in gt.dataset["images"]}
        for g in gt.dataset["annotations"]:
            scored[g["image_id"]].add(g["category_id"])
        anns = [a for a in anns if a["category_id"] in scored[a["image_id"]]]
    return anns
