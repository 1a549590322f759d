"""cgF1's numbers from per-pair counts: the per-pair F1s, the oracle over annotators,
the accumulation, the summary lines and the returned dict, as SAM 3's
``sam3/eval/cgf1_eval.py`` computes them (every epsilon, every operation in its
order), vectorised over pairs.

A *pair* is one (image, noun phrase) entry of the ground truth; an *entry* is one
pair scored against one annotator's file.  Per entry the matching gives, at each
IoU threshold, the true positives ``TP`` of the assignment; with the entry's
prediction count ``D`` (scores ``>= 0.5``) and ground-truth count ``G`` (crowds
left out) that is all the official numbers need.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = ["Metric", "CGF1_METRICS", "iou_thresholds", "EntryScores", "entry_scores", "with_counts", "select_best",
           "accumulate", "summarize", "result_dict", "TN", "FN", "SCORED"]


@dataclass
class Metric:
    """One summary value: its name, whether it is image-level (one number) or
    instance-level (one per IoU threshold, averaged or taken at one)."""

    name: str
    image_level: bool
    iou_threshold: Union[float, None]


def _metrics() -> List[Metric]:
    box = ["cgF1", "precision", "recall", "F1", "positive_macro_F1", "positive_micro_F1",
           "positive_micro_precision"]
    out = [Metric(n, False, None) for n in box]
    out += [Metric(n, True, None) for n in ("IL_precision", "IL_recall", "IL_F1", "IL_FPR", "IL_MCC")]
    for thr in (0.5, 0.75):
        out += [Metric(n, False, thr) for n in box]
    return out


#: the 26 summary values, in the order of ``stats`` and of the returned dict
CGF1_METRICS = _metrics()

#: kinds of entry (the official ``evalImgs`` entries have different keys for each):
#: no ground truth and no prediction; ground truth without predictions; predictions
TN, FN, SCORED = 0, 1, 2


def iou_thresholds() -> np.ndarray:
    """pycocotools' detection thresholds 0.5:0.05:0.95 (``linspace``: the
    ninth is 0.8999999999999999)."""
    return np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)


@dataclass
class EntryScores:
    """Per entry (any leading shape, thresholds last): the kind (:data:`TN`,
    :data:`FN`, :data:`SCORED`), the counts, the local F1 and its mean."""

    kind: np.ndarray
    num_dt: np.ndarray
    num_gt: np.ndarray
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray
    f1: np.ndarray
    mean_f1: np.ndarray


def entry_scores(tp: np.ndarray, num_dt: np.ndarray, num_gt: np.ndarray, counts: bool = True) -> EntryScores:
    """The official per-entry evaluation from the matching's true positives.

    ``tp`` (..., T) int64; ``num_dt``, ``num_gt`` (...) int64.  An entry
    without predictions has zero true and false positives and ``G`` false
    negatives and a local F1 of 0 (integers in the official code); otherwise
    precision, recall and F1 carry the 1e-4 epsilons: ``TP / (TP + FP + 1e-4)``
    where ``TP + FP`` is the prediction count (an integer, so the very same
    double), and likewise for the recall.  With ``counts`` false ``fp`` and
    ``fn`` are left None (:func:`with_counts` makes them, for the entries the
    oracle keeps, say).
    """
    tp = np.asarray(tp, np.int64)
    nd = np.asarray(num_dt, np.int64)
    ng = np.asarray(num_gt, np.int64)
    kind = np.where(nd == 0, np.where(ng == 0, TN, FN), SCORED).astype(np.int8)
    scored = (kind == SCORED)[..., None]
    tp = tp * scored
    fp = fn = None
    if counts:
        fp, fn = _counts(kind, nd, ng, tp)
    # 2 * precision * recall / (precision + recall + 1e-4), operation for operation,
    # in place (each temporary of the Gold-sized set is 5.5 MB of fresh pages)
    precision = tp / (nd[..., None] + 1e-4)
    recall = tp / (ng[..., None] + 1e-4)
    den = np.add(precision, recall)
    den += 1e-4
    f1 = precision
    f1 *= 2
    f1 *= recall
    f1 /= den
    f1 *= scored  # (0 where not scored: 0 / positive there, never NaN)
    # ``local_F1s.mean()`` of each entry: NumPy's own reduction of each row
    mean_f1 = np.add.reduce(f1, axis=-1) / f1.shape[-1]
    return EntryScores(kind, nd, ng, tp, fp, fn, f1, mean_f1)


def _counts(kind: np.ndarray, nd: np.ndarray, ng: np.ndarray, tp: np.ndarray):
    """The false positives and negatives of entries (``tp`` zero where not scored)."""
    fp = (nd[..., None] - tp) * (kind == SCORED)[..., None]
    fn = np.where(kind[..., None] == TN, 0, ng[..., None] - tp)
    return fp, fn


def with_counts(scores: EntryScores) -> EntryScores:
    """``scores`` (of :func:`entry_scores` without ``counts``) with ``fp`` and ``fn``."""
    fp, fn = _counts(scores.kind, scores.num_dt, scores.num_gt, scores.tp)
    return EntryScores(scores.kind, scores.num_dt, scores.num_gt, scores.tp, fp, fn, scores.f1, scores.mean_f1)


def select_best(kind: np.ndarray, mean_f1: np.ndarray) -> np.ndarray:
    """The official oracle over annotator files: per pair (rows of the
    ``(pairs, files)`` arrays) the file whose evaluation is kept.

    The first file is the start; a later one replaces the current choice
    when both have a local F1 (not a true negative) and its mean local F1 is
    strictly higher, or when the later one is a true negative.
    """
    kind = np.asarray(kind)
    best = np.zeros(kind.shape[0], np.int64)
    if kind.ndim < 2:
        return best
    rows = np.arange(kind.shape[0])
    for f in range(1, kind.shape[1]):
        cur_tn = kind[:, f] == TN
        best_tn = kind[rows, best] == TN
        better = ~cur_tn & ~best_tn & (mean_f1[:, f] > mean_f1[rows, best])
        best = np.where(cur_tn | better, f, best)
    return best


def accumulate(scores: EntryScores, iou_thrs: np.ndarray, params=None) -> dict:
    """The official ``accumulate`` over the chosen entries (1-d over pairs, in
    evaluation order): ``self.eval`` (``params`` under ``'params'``)."""
    kind = scores.kind
    scored_or_fn = kind != TN
    positive = ((kind == SCORED) & (scores.num_gt > 0)) | (kind == FN)
    T = len(iou_thrs)
    # integer sums: any order
    TPs = scores.tp[scored_or_fn].sum(axis=0, dtype=np.int64).reshape(T)
    FPs = scores.fp[scored_or_fn].sum(axis=0, dtype=np.int64).reshape(T)
    FNs = scores.fn[scored_or_fn].sum(axis=0, dtype=np.int64).reshape(T)
    pmFPs = scores.fp[positive].sum(axis=0, dtype=np.int64).reshape(T)
    # the local F1s are added one pair after the other, in order
    local = scores.f1[positive]
    local_F1s = np.add.accumulate(local, axis=0)[-1] if len(local) else np.zeros(T, np.float64)
    local_F1s = np.asarray(local_F1s, np.float64).reshape(T)
    valid_F1_count = int(np.count_nonzero(positive & (scores.num_dt > 0)))
    IL_TPs = int(np.count_nonzero((kind == SCORED) & (scores.num_gt > 0)))
    IL_FPs = int(np.count_nonzero((kind == SCORED) & (scores.num_gt == 0)))
    IL_TNs = int(np.count_nonzero(kind == TN))
    IL_FNs = int(np.count_nonzero(kind == FN))

    precision = TPs / (TPs + FPs + 1e-4)
    positive_micro_precision = TPs / (TPs + pmFPs + 1e-4)
    recall = TPs / (TPs + FNs + 1e-4)
    F1 = 2 * precision * recall / (precision + recall + 1e-4)
    positive_micro_F1 = 2 * positive_micro_precision * recall / (positive_micro_precision + recall + 1e-4)
    IL_rec = IL_TPs / (IL_TPs + IL_FNs + 1e-6)
    IL_prec = IL_TPs / (IL_TPs + IL_FPs + 1e-6)
    IL_F1 = 2 * IL_prec * IL_rec / (IL_prec + IL_rec + 1e-6)
    IL_FPR = IL_FPs / (IL_FPs + IL_TNs + 1e-6)
    IL_MCC = float(IL_TPs * IL_TNs - IL_FPs * IL_FNs) / (
        (float(IL_TPs + IL_FPs) * float(IL_TPs + IL_FNs) * float(IL_TNs + IL_FPs) * float(IL_TNs + IL_FNs)) ** 0.5
        + 1e-6)
    with np.errstate(divide="ignore", invalid="ignore"):
        # no pair with a ground truth and a prediction: NaN (0 / 0), as in the official code
        macro = local_F1s / valid_F1_count
    out = {
        "params": params,
        "TPs": TPs, "FPs": FPs, "positive_micro_FPs": pmFPs, "FNs": FNs,
        "precision": precision, "positive_micro_precision": positive_micro_precision, "recall": recall,
        "F1": F1, "positive_micro_F1": positive_micro_F1, "positive_macro_F1": macro,
        "IL_recall": IL_rec, "IL_precision": IL_prec, "IL_F1": IL_F1, "IL_FPR": IL_FPR, "IL_MCC": IL_MCC,
    }
    out["cgF1"] = out["positive_micro_F1"] * out["IL_MCC"]
    return out


def summarize(ev: dict, iou_thrs: np.ndarray) -> Tuple[np.ndarray, List[str]]:
    """The official ``summarize``: ``stats`` (26 values) and the printed lines.

    A per-threshold value averages the entries above -1 (NaN is not above -1:
    a ``positive_macro_F1`` without any qualifying pair is -1 here)."""
    stats = []
    lines = []
    for m in CGF1_METRICS:
        title = "Average " + m.name
        s = ev[m.name]
        if m.image_level:
            lines.append(" {:<35} = {:0.3f}".format(title, s))
            stats.append(s)
            continue
        if m.iou_threshold is None:
            iou_str = "{:0.2f}:{:0.2f}".format(iou_thrs[0], iou_thrs[-1])
        else:
            iou_str = "{:0.2f}".format(m.iou_threshold)
            s = s[np.where(m.iou_threshold == iou_thrs)[0]]
        kept = s[s > -1]
        value = -1 if len(kept) == 0 else np.mean(kept)
        lines.append(" {:<18} @[ IoU={:<9}] = {:0.3f}".format(title, iou_str, value))
        stats.append(value)
    return np.asarray(stats), lines


def result_dict(stats: Sequence[float], iou_type: str) -> Dict[str, float]:
    """``evaluate()``'s returned dict: ``cgF1_eval_<iou type>_<name>[@<threshold>]``."""
    out = {}
    for m, value in zip(CGF1_METRICS, stats):
        name = m.name if m.iou_threshold is None else f"{m.name}@{m.iou_threshold}"
        out[f"cgF1_eval_{iou_type}_{name}"] = float(value)
    return out


def eval_img_entry(image_id, kind: int, num_dt: int, num_gt: int, tp: np.ndarray, fp: np.ndarray,
                   fn: np.ndarray, f1: np.ndarray) -> dict:
    """One official ``evalImgs`` entry (its keys depend on the kind)."""
    if kind == TN:
        return {"image_id": image_id, "IL_TP": 0, "IL_TN": 1, "IL_FP": 0, "IL_FN": 0, "num_dt": int(num_dt)}
    T = len(tp)
    if kind == FN:
        return {"image_id": image_id, "IL_TP": 0, "IL_TN": 0, "IL_FP": 0, "IL_FN": 1,
                "TPs": np.zeros((T,), dtype=np.int64), "FPs": np.zeros((T,), dtype=np.int64),
                "FNs": np.ones((T,), dtype=np.int64) * int(num_gt),
                "local_F1s": np.zeros((T,), dtype=np.int64), "local_positive_F1s": np.zeros((T,), dtype=np.int64),
                "num_dt": int(num_dt)}
    f1 = np.array(f1, np.float64)
    out = {"image_id": image_id, "TPs": np.array(tp, np.int64), "FPs": np.array(fp, np.int64),
           "FNs": np.array(fn, np.int64), "local_F1s": f1,
           "IL_TP": bool(num_gt > 0 and num_dt > 0), "IL_FP": bool(num_gt == 0 and num_dt > 0),
           "IL_TN": bool(num_gt == 0 and num_dt == 0), "IL_FN": bool(num_gt > 0 and num_dt == 0),
           "num_dt": int(num_dt)}
    if num_gt > 0:
        out["local_positive_F1s"] = f1
    return out
