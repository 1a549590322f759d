"""SA-V's J&F (``sav_dataset/utils/sav_benchmark.py`` of SAM 2, adapted from
vos-benchmark): :func:`sav_benchmark`, a drop-in for its ``benchmark``."""
from __future__ import annotations

import logging
import os
import time
from os import path
from typing import Dict, List, Sequence, Tuple

import numpy as np

from . import _jf
from .._io import input_error_class
from .._parallel import progress_bar, resolve_threads, run_ranges
from ..masks.boundary import check_dilation_ratio

__all__ = ["sav_benchmark", "evaluate_sav_video"]

log = logging.getLogger(__name__)


def _assertion(message: str) -> Exception:
    return input_error_class(AssertionError)(message)


def _scan_video(gt_root: str, pred_root: str, vid_name: str, skip_first_and_last: bool):
    """What SA-V's ``VideoEvaluator`` evaluates for one video: a list of
    (object folder or None, frame names, gt folder, prediction folder), and
    whether the video is in SA-V's per-object layout."""
    vid_gt = path.join(gt_root, vid_name)
    vid_pred = path.join(pred_root, vid_name)
    entries = sorted(_jf.listdir(vid_gt, f"ground truth of video {vid_name}"))
    todo = []
    if all(name.endswith(".png") for name in entries):
        frames = entries
        todo.append((None, frames[1:-1] if skip_first_and_last else frames, vid_gt, vid_pred))
        return todo, False
    for obj in entries:
        obj_gt = path.join(vid_gt, obj)
        frames = sorted(_jf.listdir(obj_gt, f"ground truth of object {obj} of video {vid_name}"))
        todo.append((obj, frames[1:-1] if skip_first_and_last else frames, obj_gt, path.join(vid_pred, obj)))
    return todo, True


def _object_values(frames: Sequence[str], gt_dir: str, pred_dir: str, sav_format: bool, options: _jf.CountOptions,
                   num_threads: int, video: str) -> Tuple[Dict, set]:
    """SA-V's ``Evaluator`` over one folder's frames: per object id, the
    per-frame IoU and boundary F from the frame where the object is first
    seen (in the ground truth or the prediction); and the objects seen in
    the ground truth, as the set SA-V iterates."""
    pairs = []
    for f in frames:
        pred = path.join(pred_dir, f)
        if not os.path.exists(pred):
            raise _assertion(f"{pred} not found")
        pairs.append((path.join(gt_dir, f), pred))
    if not pairs:
        return {}, set(), {}
    counts = _jf.count_frames(pairs, options, None, num_threads, shape=None,
                              shape_error=lambda g, r: _assertion(f"shape mismatch: {g}, {r}"))
    frame_rows = counts.frame_rows
    if sav_format:
        many = frame_rows[(frame_rows[:, 4] > 2) | (frame_rows[:, 5] > 2)]
        if len(many):
            t = int(many[0, 0])
            which = pairs[t][0] if many[0, 4] > 2 else pairs[t][1]
            raise _assertion(f"found more than 1 object in {which} SA-V format assumes one object mask per png file.")
    lab = counts.labels
    T = counts.frames
    present_gt = [[] for _ in range(T)]
    present_res = [[] for _ in range(T)]
    for t, side, label in lab[lab[:, 1] < 2][:, :3].tolist():
        (present_gt if side == 0 else present_res)[t].append(label)
    # the objects as SA-V's Evaluator collects them, frame by frame
    objects_in_gt, objects_in_masks = set(), set()
    first_seen: Dict[int, int] = {}
    for t in range(T):
        g = sorted(present_gt[t])
        m = sorted(present_res[t])
        objects_in_gt.update(set(g))
        objects_in_masks.update(set(m))
        for k in objects_in_gt.union(objects_in_masks):
            first_seen.setdefault(k, t)
    labels = sorted(first_seen)
    c = _jf.dense_counts(counts, labels, labels)
    k = np.arange(len(labels))
    j = _jf.j_values(c["inter"][k, k], c["area_res"], c["area_gt"])
    f = _jf.f_values(c["fg"][k, k], c["gm"][k, k], c["nb_res"], c["nb_gt"])
    b = _jf.b_values(c["band_inter"][k, k], c["band_res"], c["band_gt"]) if options.want_b else None
    per_frame = {}
    for i, label in enumerate(labels):
        t0 = first_seen[label]
        per_frame[label] = {"J": j[i, t0:], "F": f[i, t0:]}
        if b is not None:
            per_frame[label]["B"] = b[i, t0:]
    return per_frame, objects_in_gt, first_seen


def evaluate_sav_video(gt_root: str, pred_root: str, vid_name: str, *, skip_first_and_last: bool = True,
                       metrics: Sequence[str] = ("J", "F"), dilation_ratio: float = 0.02,
                       num_threads: int = 1) -> Tuple[str, Dict, Dict, Dict]:
    """One video as SA-V's ``VideoEvaluator`` evaluates it.

    Returns
    -------
    (vid_name, iou, boundary_f, extra)
        ``iou`` and ``boundary_f``: ``{object: mean * 100}`` for every object
        of the ground truth (SA-V's order and keys: folder names in the
        per-object layout, ints in the DAVIS-like one); ``extra``:
        ``{'per_frame': {object: {'J': array, 'F': array, ...}}, 'B': {object: mean * 100},
        'frames': {object: (frame file names, ground-truth folder, prediction folder, label, binary)}}``
        (the frames each object is scored on, from its first appearance; ``binary``: one object per
        mask file, SA-V's per-object layout).
    """
    todo, sav_format = _scan_video(gt_root, pred_root, vid_name, skip_first_and_last)
    options = _jf.CountOptions(binarize=sav_format, want_b="B" in metrics, dilation_ratio=dilation_ratio)
    iou_out, f_out, b_out, per_frame_out, frames_out = {}, {}, {}, {}, {}
    for obj, frames, gt_dir, pred_dir in todo:
        per_frame, objects_in_gt, first_seen = _object_values(frames, gt_dir, pred_dir, sav_format, options,
                                                              num_threads, vid_name)
        iou, bf, bb = {}, {}, {}
        for object_id in objects_in_gt:
            iou[object_id] = np.mean(per_frame[object_id]["J"]) * 100
            bf[object_id] = np.mean(per_frame[object_id]["F"]) * 100
            if "B" in per_frame[object_id]:
                bb[object_id] = np.mean(per_frame[object_id]["B"]) * 100

        def where(label):
            # the object's evaluated frames: (file names, gt folder, prediction folder, label, binary masks)
            return frames[first_seen[label]:], gt_dir, pred_dir, (1 if sav_format else int(label)), sav_format

        if sav_format:
            # SA-V keys each object by its folder; its one mask is label 1
            if len(iou) != 1:
                raise _assertion(f"object {obj} of video {vid_name} never appears in its ground-truth frames "
                                 f"({gt_dir}): SA-V cannot score it")
            key = next(iter(iou))
            iou_out[obj], f_out[obj] = iou[key], bf[key]
            if bb:
                b_out[obj] = bb[key]
            per_frame_out[obj] = per_frame[key]
            frames_out[obj] = where(key)
        else:
            iou_out, f_out, b_out = iou, bf, bb
            per_frame_out = {k: per_frame[k] for k in iou}
            frames_out = {k: where(k) for k in iou}
    return vid_name, iou_out, f_out, {"per_frame": per_frame_out, "B": b_out, "frames": frames_out}


def sav_benchmark(gt_roots, mask_roots, strict=True, num_processes=None, *, verbose=True,
                  skip_first_and_last=True, metrics=("J", "F"), dilation_ratio=0.02, write_csv=True,
                  _videos_out=None):
    """J&F of predicted masks, a drop-in for SA-V's ``benchmark`` (SAM 2's
    ``sav_dataset/utils/sav_benchmark.py``).

    Parameters
    ----------
    gt_roots, mask_roots : list of str
        Ground-truth and prediction folders, pairwise: one folder per video,
        holding either one folder of binary PNGs per object (SA-V) or
        indexed PNGs (DAVIS-like); the predictions in the same layout.
    strict : bool
        Every video of the ground truth needs a prediction folder and no
        prediction folder may lack its ground truth (else ``ValueError``
        listing them; SA-V prints them and exits).  False: the videos of both.
    num_processes : int, optional
        Threads (SA-V: processes) evaluating frames; default all cores.
    verbose : bool
        Print what SA-V prints: the frame-skipping notice, the videos, the
        per-object table, the summary (and a progress bar on a terminal).
    skip_first_and_last : bool
        Skip each object's first and last annotated frame (SA-V val/test, DAVIS
        semi-supervised).
    metrics : tuple of str
        'J' and 'F' always; add 'B' for Boundary IoU (returned in the object
        metrics as a third entry and written as a column).
    dilation_ratio : float
        Boundary IoU's band width as a fraction of the frame diagonal ('B').
    write_csv : bool
        Write ``results.csv`` into each mask root, as SA-V does.

    Returns
    -------
    (all_global_jf, all_global_j, all_global_f, all_object_metrics)
        Per dataset: the global J&F, J and F (percent), and
        ``{video: (iou, boundary_f)}`` with ``{object: value}`` dicts
        (``(iou, boundary_f, boundary_iou)`` when 'B' is asked).

    Notes
    -----
    Objects are scored from the frame where they first appear in the ground
    truth or the prediction, and only the ground truth's objects are
    reported; no void; values in percent; the global scores are means over
    all objects of all videos.
    """
    if isinstance(gt_roots, (str, os.PathLike)) or isinstance(mask_roots, (str, os.PathLike)):
        raise TypeError("gt_roots and mask_roots are lists of folders (one per dataset), as in SA-V's benchmark")
    gt_roots, mask_roots = list(gt_roots), list(mask_roots)
    if len(gt_roots) != len(mask_roots):
        raise _assertion(f"{len(gt_roots)} ground-truth roots but {len(mask_roots)} mask roots")
    unknown = [m for m in metrics if m not in ("J", "F", "B")]
    if unknown:
        raise ValueError(f"unknown metric {unknown[0]!r}: the metrics are 'J', 'F' and 'B'")
    dilation_ratio = check_dilation_ratio(dilation_ratio)
    threads = resolve_threads(num_processes)
    if verbose:
        if skip_first_and_last:
            print("We are *SKIPPING* the evaluation of the first and the last frame (standard for "
                  "semi-supervised video object segmentation).")
        else:
            print("We are *NOT SKIPPING* the evaluation of the first and the last frame (*NOT STANDARD* for "
                  "semi-supervised video object segmentation).")
    start = time.time()
    all_global_jf, all_global_j, all_global_f, all_object_metrics = [], [], [], []
    for gt_root, mask_root in zip(gt_roots, mask_roots):
        gt_root, videos = _videos(gt_root, mask_root, strict)
        if not videos:
            raise ValueError(f"no video to evaluate in {gt_root} and {mask_root}")
        if verbose:
            print(f"In dataset {gt_root}, we are evaluating on {len(videos)} videos: {videos}")
        bar = progress_bar(len(videos), "SA-V videos", unit="video") if verbose else None
        try:
            def one(lo, hi):
                out = [evaluate_sav_video(gt_root, mask_root, v, skip_first_and_last=skip_first_and_last,
                                          metrics=metrics, dilation_ratio=dilation_ratio) for v in videos[lo:hi]]
                if bar is not None:
                    bar.update(hi - lo)
                return out

            results = [r for chunk in run_ranges(one, [(i, i + 1) for i in range(len(videos))], threads)
                       for r in chunk]
        finally:
            if bar is not None:
                bar.close()
        if _videos_out is not None:  # (evaluate_sav: each video's per-frame values and frames)
            _videos_out.append((gt_root, mask_root, results))
        all_iou, all_boundary_f, all_b = [], [], []
        object_metrics = {}
        for name, iou, boundary_f, extra in results:
            all_iou.extend(list(iou.values()))
            all_boundary_f.extend(list(boundary_f.values()))
            if "B" in metrics:
                all_b.extend(list(extra["B"].values()))
                object_metrics[name] = (iou, boundary_f, extra["B"])
            else:
                object_metrics[name] = (iou, boundary_f)
        global_j = np.array(all_iou).mean()
        global_f = np.array(all_boundary_f).mean()
        global_jf = (global_j + global_f) / 2
        global_b = np.array(all_b).mean() if "B" in metrics else None
        out_string = _table(object_metrics, global_jf, global_j, global_f, global_b)
        if verbose:
            print(out_string.replace(",", " "), end="")
            print("\nSummary:")
            summary = f"Global score: J&F: {global_jf:.1f} J: {global_j:.1f} F: {global_f:.1f}"
            if global_b is not None:
                summary += f" B: {global_b:.1f}"
            print(summary)
            print(f"Time taken: {time.time() - start:.2f}s")
        if write_csv:
            result_path = path.join(mask_root, "results.csv")
            print(f"Saving the results to {result_path}")
            with open(result_path, "w") as f:
                f.write(out_string)
        all_global_jf.append(global_jf)
        all_global_j.append(global_j)
        all_global_f.append(global_f)
        all_object_metrics.append(object_metrics)
    return all_global_jf, all_global_j, all_global_f, all_object_metrics


def _videos(gt_root: str, mask_root: str, strict: bool) -> Tuple[str, List[str]]:
    """The videos SA-V evaluates (and the ground-truth root it settles on)."""
    gt_videos = _jf.listdir(gt_root, "ground-truth root")
    mask_videos = _jf.listdir(mask_root, "mask root")
    # the user passed the dataset root instead of its Annotations folder
    if len(gt_videos) != len(mask_videos) and "Annotations" in gt_videos:
        inner = _jf.listdir(path.join(gt_root, "Annotations"), "Annotations folder")
        if inner and ".png" not in inner[0]:
            gt_root = path.join(gt_root, "Annotations")
            gt_videos = _jf.listdir(gt_root, "ground-truth root")
    gt_videos = [v for v in gt_videos if path.isdir(path.join(gt_root, v))]
    mask_videos = [v for v in mask_videos if path.isdir(path.join(mask_root, v))]
    if not strict:
        return gt_root, sorted(set(gt_videos) & set(mask_videos))
    gt_extras = set(gt_videos) - set(mask_videos)
    mask_extras = set(mask_videos) - set(gt_videos)
    problems = []
    if gt_extras:
        problems.append(f"Videos that are in {gt_root} but not in {mask_root}: {gt_extras}")
    if mask_extras:
        problems.append(f"Videos that are in {mask_root} but not in {gt_root}: {mask_extras}")
    if problems:
        raise ValueError("; ".join(problems) + " (strict=False evaluates the videos of both)")
    return gt_root, sorted(gt_videos)


def _table(object_metrics: dict, global_jf, global_j, global_f, global_b=None) -> str:
    """SA-V's results table (comma-separated; printed with spaces)."""
    ml = max(*[len(n) for n in object_metrics.keys()], len("Global score"))
    b_head = f", {'B':>4}" if global_b is not None else ""
    out = f'{"sequence":<{ml}},{"obj":>3}, {"J&F":>4}, {"J":>4}, {"F":>4}{b_head}\n'
    b_glob = f", {global_b:.1f}" if global_b is not None else ""
    out += f'{"Global score":<{ml}},{"":>3}, {global_jf:.1f}, {global_j:.1f}, {global_f:.1f}{b_glob}\n'
    for name, values in object_metrics.items():
        iou, boundary_f = values[0], values[1]
        for object_idx in iou.keys():
            j, f = iou[object_idx], boundary_f[object_idx]
            jf = (j + f) / 2
            b_col = f", {values[2][object_idx]:>4.1f}" if global_b is not None else ""
            out += f"{name:<{ml}},{object_idx:03}, {jf:>4.1f}, {j:>4.1f}, {f:>4.1f}{b_col}\n"
    return out
