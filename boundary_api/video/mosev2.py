"""MOSEv2's J&F (henghuiding/MOSE-api, ``MOSEv2/sam2_rcms/tools/score.py`` with
``metricsv2.py``): :func:`mosev2_benchmark`, its numbers before they are rounded.

Per object and evaluated frame: J smoothed as ``(I + 1) / (U + 1)``; F, the DAVIS
boundary F-measure at ``0.008 x`` the frame diagonal; and F_new, a boundary F
whose tolerance adapts to the object: ``ceil(0.1 x sqrt(ground-truth area))``
pixels, capped at ``0.008 x`` the diagonal (see :func:`._jf.adaptive_footprints`
for the cap's disk).  Then the means over the frames, and over the segments where
the object is absent from the ground truth (disappear) or back (reappear).
"""
from __future__ import annotations

import json
import logging
import os
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _jf
from .._io import FileNotFoundValueError as _file_error
from .._parallel import progress_bar, resolve_threads
from ..instance._checks import warn_suspect
from ..masks.boundary import check_dilation_ratio

__all__ = ["mosev2_benchmark", "mosev2_report", "mosev2_files", "ADAPTIVE_TH"]

log = logging.getLogger(__name__)

#: score.py's ``bound_th`` for F_new (mode 'area': a fraction of sqrt(area))
ADAPTIVE_TH = 0.1

#: the global numbers in score.py's order
GLOBAL_KEYS = ("J&F_new", "J", "F_new", "disappear_J&F_new", "reappear_J&F_new", "F", "J&F")
#: the per-object values (fractions), score.py's list in this order
OBJECT_KEYS = ("J", "F_new", "F", "disappear_J", "disappear_F", "reappear_J", "reappear_F")


def _frame_number(name: str, folder: str) -> int:
    try:
        return int(name.split('.')[0])
    except ValueError:
        raise ValueError(f"{os.path.join(folder, name)}: MOSEv2 frames are named by their number "
                         "(00000.png, 00001.png, ...)") from None


def _pngs(folder: str, what: str) -> List[str]:
    """The frame names (without '.png') of a folder in score.py's order: the
    PNG files not starting with '.', by the number before the first dot."""
    names = [x for x in _jf.listdir(folder, what) if not x.startswith('.') and x.endswith('.png')]
    names = sorted(names, key=lambda x: _frame_number(x, folder))
    return [x.split('.')[0] for x in names]


def _read_meta(meta_path) -> dict:
    meta_path = os.fspath(meta_path)
    try:
        with open(meta_path, 'r') as fp:
            doc = json.load(fp)
    except FileNotFoundError:
        raise _file_error(f"meta file not found: {meta_path}") from None
    except IsADirectoryError:
        raise _file_error(f"meta file is a directory: {meta_path}") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"{meta_path} is not valid JSON: {exc}") from None
    videos = doc.get('videos') if isinstance(doc, dict) else None
    if not isinstance(videos, dict):
        raise ValueError(f"{meta_path}: no 'videos' object (MOSEv2's meta.json: "
                         "{\"videos\": {\"<video>\": {\"objects\": ..., \"length\": N, ...}}})")
    return videos


def _video_meta(videos: dict, vid: str, meta_path) -> Tuple[int, list, Optional[int], Optional[int]]:
    """length, object ids (as the meta spells them), height and width of a video."""
    if vid not in videos:
        raise ValueError(f"{meta_path} has no entry for video {vid!r} (a folder of the ground truth)")
    v = videos[vid]
    where = f"{meta_path}, video {vid!r}"
    if not isinstance(v, dict):
        raise ValueError(f"{where}: not an object")
    for key in ('length', 'objects', 'height', 'width'):
        if key not in v:
            raise ValueError(f"{where}: no {key!r}")
    length = v['length']
    if isinstance(length, bool) or not isinstance(length, int):
        raise ValueError(f"{where}: 'length' is {length!r}, not a frame count")
    objs = v['objects']
    if not isinstance(objs, (dict, list)):
        raise ValueError(f"{where}: 'objects' is neither an object nor a list")
    objs = list(objs)
    for o in objs:
        try:
            k = int(o)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: object id {o!r} is not a number") from None
        if not 1 <= k <= 65535:
            raise ValueError(f"{where}: object id {o!r} is not in 1..65535 (0 is the background)")
    h, w = v['height'], v['width']
    for name, x in (('height', h), ('width', w)):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 1):
            raise ValueError(f"{where}: {name!r} is {x!r}")
    return length, objs, h, w


def _pred_root(pred_root: str, gt_videos: Sequence[str], strict: bool) -> str:
    """score.py descends into a prediction root holding one folder (a
    submission zip's top folder).  When that one folder is a video of the
    ground truth it is used as it is, unless ``strict`` is False (score.py
    then looks for every video inside it and scores them 0)."""
    entries = [x for x in _jf.listdir(pred_root, "prediction root") if not x.startswith('.')]
    if len(entries) == 1 and os.path.isdir(os.path.join(pred_root, entries[0])):
        if strict and entries[0] in gt_videos:
            return pred_root
        return os.path.join(pred_root, entries[0])
    return pred_root


def _load_p(item, what: str):
    """A frame as score.py reads it, ``Image.open(path).convert('P')``: palette
    and 8-bit greyscale PNGs as they are (their indices / samples); a 1-bit
    image becomes 0/255; an image Pillow's conversion would quantise (colour,
    16 bits) is refused."""
    frame, shape = _jf._load(item, what)
    if isinstance(frame, (bytes, bytearray)):
        depth, color = frame[24], frame[25]
        if color == 3 or (color == 0 and depth in (2, 4, 8)):
            return frame, shape
        a = _jf.read_frame(bytes(frame), what)
        if color == 0 and depth == 1:
            return (a * 255).astype(np.uint16), shape
        raise ValueError(f"{what} frame {os.fspath(item)} is a {depth}-bit greyscale PNG: score.py's "
                         "convert('P') would quantise it; MOSEv2 frames are palette (or 8-bit) PNGs")
    from PIL import Image

    with Image.open(os.fspath(item)) as im:
        mode = im.mode
    if mode == '1':
        return (frame * 255).astype(np.uint16), shape
    if mode not in ('P', 'L'):
        raise ValueError(f"{what} frame {os.fspath(item)} has Pillow mode {mode}: score.py's convert('P') "
                         "would quantise it; MOSEv2 frames are palette (or 8-bit) PNGs")
    return frame, shape


def _segments(j: np.ndarray, f: np.ndarray, empty: np.ndarray):
    """The disappear / reappear means of score.py's ``merge_chunk_results``:
    a disappearance runs from a frame where the object leaves the ground
    truth to the next frame where it is back (or the end), a reappearance
    from there to the next departure; each segment's mean J and F_new, then
    the mean over the segments (None when there is none).  A disappearance
    starting at the first evaluated frame (the object absent there) is not
    counted, but still pairs with the first return."""
    leave = np.flatnonzero(~empty[:-1] & empty[1:]) + 1
    if len(empty) and empty[0]:
        leave = np.insert(leave, 0, 0)
    back = np.flatnonzero(empty[:-1] & ~empty[1:]) + 1
    dj = df = rj = rf = None
    segs = []
    for i, start in enumerate(leave):
        end = back[i] if i < len(back) else len(empty)
        if start > 0:
            segs.append((j[start:end].mean(), f[start:end].mean()))
    if segs:
        dj, df = np.mean([s[0] for s in segs]), np.mean([s[1] for s in segs])
    segs = []
    for i, start in enumerate(back):
        end = leave[i + 1] if i + 1 < len(leave) else len(empty)
        segs.append((j[start:end].mean(), f[start:end].mean()))
    if segs:
        rj, rf = np.mean([s[0] for s in segs]), np.mean([s[1] for s in segs])
    return dj, df, rj, rf


def _zero_row() -> list:
    # score.py's row for a video it could not score (the ints as there)
    return [0, 0, 0, None, None, None, None]


def _mean(values):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (a mean of nothing: NaN, as score.py)
        return np.mean(values)


def _evaluate(meta_path, gt_root, pred_root, *, metrics=("J", "F"), strict=True, num_threads=None,
              dilation_ratio=0.02, video_order="listdir"):
    """Everything: ``(rows, per_frame, extra)`` with ``rows`` {'<video>_<object>':
    score.py's list}, ``per_frame`` {key: {'J', 'F', 'F_new', ('B')}: arrays} and
    ``extra`` {'B': {key: mean}, 'pred_root': the folder read}."""
    unknown = [m for m in metrics if m not in ("J", "F", "B")]
    if unknown:
        raise ValueError(f"unknown metric {unknown[0]!r}: the metrics are 'J', 'F' and 'B'")
    if video_order not in ("listdir", "sorted"):
        raise ValueError(f"video_order must be 'listdir' or 'sorted', got {video_order!r}")
    dilation_ratio = check_dilation_ratio(dilation_ratio)
    threads = resolve_threads(num_threads)
    meta_path, gt_root, pred_root = os.fspath(meta_path), os.fspath(gt_root), os.fspath(pred_root)
    videos_meta = _read_meta(meta_path)
    video_list = list(_jf.listdir(gt_root, "ground-truth root"))
    if video_order == "sorted":
        video_list = sorted(video_list)
    # score.py's integrity check: the meta's length is the number of entries of the video's folder
    lengths = {}
    for vid in video_list:
        length, objs, h, w = _video_meta(videos_meta, vid, meta_path)
        n = len(_jf.listdir(os.path.join(gt_root, vid), f"ground truth of video {vid}"))
        if length != n:
            raise ValueError(f"{meta_path}: video {vid!r} has length {length} but its ground-truth folder "
                             f"{os.path.join(gt_root, vid)} holds {n} files (score.py: 'Server-side error')")
        lengths[vid] = (length, objs, h, w)
    pred_root = _pred_root(pred_root, video_list, strict)
    want_b = "B" in metrics
    options = _jf.CountOptions(want_f=True, want_b=want_b, dilation_ratio=dilation_ratio, adaptive_th=ADAPTIVE_TH)
    rows: Dict[str, list] = {}
    per_frame: Dict[str, dict] = {}
    b_means: Dict[str, float] = {}
    bar = progress_bar(len(video_list), "MOSEv2 videos", unit="video")
    try:
        for vid in video_list:
            length, objs, h, w = lengths[vid]
            pred_dir = os.path.join(pred_root, vid)
            keys = [f'{vid}_{o}' for o in objs]
            if not os.path.exists(pred_dir):
                if strict:
                    raise _file_error(f"no prediction folder for video {vid}: {pred_dir} (score.py scores its "
                                      "objects 0; strict=False does the same)")
                warn_suspect(f"no prediction folder for video {vid} ({pred_dir}): its objects score 0, as in "
                             "score.py (strict=True refuses it)")
                rows.update({k: _zero_row() for k in keys})
                continue
            if length < 3:
                if strict:
                    raise ValueError(f"video {vid} has {length} frames: MOSEv2 evaluates all but the first and "
                                     "the last, so it needs at least 3 (score.py scores its objects 0; "
                                     "strict=False does the same)")
                warn_suspect(f"video {vid} has {length} frames, none evaluated: its objects score 0, as in "
                             "score.py (strict=True refuses it)")
                rows.update({k: _zero_row() for k in keys})
                continue
            names = _pngs(pred_dir, f"prediction folder of video {vid}")
            if len(names) < length - 1:
                raise _file_error(f"prediction folder {pred_dir} has {len(names)} frames, but video {vid} has "
                                  f"{length} and score.py evaluates frames 1 to {length - 2}")
            evaluated = names[1:length - 1]
            gt_names = _pngs(os.path.join(gt_root, vid), f"ground truth of video {vid}")
            want = gt_names[1:length - 1]
            if evaluated != want:
                k = next(i for i in range(len(want)) if i >= len(evaluated) or evaluated[i] != want[i])
                what = (f"prediction frame {os.path.join(pred_dir, want[k] + '.png')} "
                        + ("not found" if want[k] not in set(names) else f"is not frame {k + 1} of the predictions"))
                if strict:
                    raise _file_error(what + " (score.py takes the frame names from the prediction folder: a "
                                      "missing or extra frame shifts every later one; strict=False does the same)")
                warn_suspect(what + ": the later frames are shifted, as score.py shifts them (strict=True refuses "
                             "it)")
            pairs = [(os.path.join(gt_root, vid, n + '.png'), os.path.join(pred_dir, n + '.png')) for n in evaluated]
            if h is None or w is None:
                shape = _jf.read_frame(os.path.join(gt_root, vid, names[0] + '.png'), "ground truth").shape
            else:
                shape = (h, w)
            counts = _jf.count_frames(pairs, options, _load_p, threads, shape=tuple(shape),
                                      shape_source=f"the size {meta_path} gives video {vid}")
            labels = [int(o) for o in objs]
            c = _jf.dense_counts(counts, labels, labels)
            k = np.arange(len(labels))
            J = _jf.j_values_smoothed(c["inter"][k, k], c["area_res"], c["area_gt"])
            F = _jf.f_values(c["fg"][k, k], c["gm"][k, k], c["nb_res"], c["nb_gt"])
            Fn = _jf.f_values(c["fg_new"][k, k], c["gm_new"][k, k], c["nb_res"], c["nb_gt"])
            B = _jf.b_values(c["band_inter"][k, k], c["band_res"], c["band_gt"]) if want_b else None
            empty = c["area_gt"] == 0
            for i, key in enumerate(keys):
                dj, df, rj, rf = _segments(J[i], Fn[i], empty[i])
                rows[key] = [J[i].mean(), Fn[i].mean(), F[i].mean(), dj, df, rj, rf]
                per_frame[key] = {"J": J[i], "F": F[i], "F_new": Fn[i]}
                if want_b:
                    per_frame[key]["B"] = B[i]
                    b_means[key] = B[i].mean()
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    return rows, per_frame, {"B": b_means if want_b else None, "pred_root": pred_root}


def _result(rows: Dict[str, list], b_means: Optional[dict]) -> dict:
    per_object = {}
    for key, v in rows.items():
        per_object[key] = {"J": v[0], "F": v[2], "F_new": v[1], "disappear_J": v[3], "disappear_F": v[4],
                           "reappear_J": v[5], "reappear_F": v[6]}
        if b_means is not None:
            per_object[key]["B"] = b_means.get(key, 0)
    col = {i: [v[i] for v in rows.values()] for i in range(7)}
    present = {i: [x for x in col[i] if x is not None] for i in range(3, 7)}
    j, fn, f = _mean(col[0]), _mean(col[1]), _mean(col[2])
    out = {"per_object": per_object,
           "J&F_new": (j + fn) / 2, "J": j, "F_new": fn,
           "disappear_J&F_new": (_mean(present[3]) + _mean(present[4])) / 2,
           "reappear_J&F_new": (_mean(present[5]) + _mean(present[6])) / 2,
           "F": f, "J&F": (j + f) / 2}
    if b_means is not None:
        out["B"] = _mean([per_object[k]["B"] for k in per_object])
    return out


def mosev2_benchmark(meta_path, gt_root, pred_root, *, metrics=("J", "F"), strict=True, num_threads=None,
                     dilation_ratio=0.02, video_order="listdir") -> dict:
    """MOSEv2's J, F and F_new of a predictions folder, as MOSE-api's
    ``score.py`` computes them, before its ``round(x * 100, 2)``.

    Parameters
    ----------
    meta_path : str
        MOSEv2's ``meta.json``: ``{"videos": {"<video>": {"objects": {"1": ...,
        ...}, "length": N, "height": H, "width": W}}}`` (``objects`` may also be
        a list of ids; ``height`` / ``width`` null: the first frame's size).
    gt_root : str
        The annotations: one folder per video of palette PNGs named by frame
        number (``00000.png`` ...), ``length`` files each.
    pred_root : str
        The predictions in the same layout (a folder holding only one folder
        is descended into, as score.py does).
    metrics : tuple of str
        'J' and 'F' (always computed, with F_new); add 'B' for the Boundary IoU
        of each evaluated frame's masks (per object ``'B'`` and a global ``'B'``).
    strict : bool
        True (default): refuse what score.py silently scores otherwise: a video
        without a prediction folder or with fewer than 3 frames (scored 0
        there), predictions whose frames are not the ground truth's (score.py
        names the frames after the prediction folder, so a missing frame
        shifts every later one).  False: score them as score.py does, with a
        :class:`~boundary_api.SuspectInputWarning`.
    num_threads : int, optional
        Threads reading and evaluating frames (default: all cores).
    dilation_ratio : float
        Boundary IoU's band width as a fraction of the frame diagonal ('B').
    video_order : {'listdir', 'sorted'}
        score.py takes the videos in ``os.listdir`` order of ``gt_root``
        (default: the same), which orders the per-object results and, in the
        last bits, the means; 'sorted' sorts them by name.

    Returns
    -------
    dict
        ``{"per_object": {"<video>_<object>": {"J", "F", "F_new", "disappear_J",
        "disappear_F", "reappear_J", "reappear_F"}}, "J&F_new", "J", "F_new",
        "disappear_J&F_new", "reappear_J&F_new", "F", "J&F"}``: fractions
        (np.float64), None where score.py has None (no disappearance or
        reappearance), NaN where its mean is of nothing.  ``F`` is DAVIS'
        boundary F (radius ``ceil(0.008 x diagonal)``) for objects whose
        adaptive radius is below the cap, and the F at the uncut cap's disk for
        the others; ``disappear_F`` and ``reappear_F`` are F_new.

    Raises
    ------
    FileNotFoundError
        A missing meta file, root, video folder or frame (also a ``ValueError``).
    ValueError
        Invalid JSON or meta entries, a ``length`` that is not the number of
        files in the video's folder, a frame of another size than the meta's,
        a frame Pillow's ``convert('P')`` would quantise, and with ``strict``
        the cases above.
    """
    rows, _, extra = _evaluate(meta_path, gt_root, pred_root, metrics=metrics, strict=strict,
                               num_threads=num_threads, dilation_ratio=dilation_ratio, video_order=video_order)
    return _result(rows, extra["B"])


def _r2(x):
    return round(x * 100, 2)


def _formatted(rows: Dict[str, list]) -> dict:
    """score.py's metrics.json entries (percent, rounded as it rounds them)."""
    out = {}
    for key, v in rows.items():
        out[key] = {
            'J&F_new': _r2((v[0] + v[1]) / 2),
            'J': _r2(v[0]),
            'F_new': _r2(v[1]),
            'disappear_J&F_new': _r2((v[3] + v[4]) / 2) if v[3] is not None and v[4] is not None else None,
            'reappear_J&F_new': _r2((v[5] + v[6]) / 2) if v[5] is not None and v[6] is not None else None,
            'F': _r2(v[2]),
            'J&F': _r2((v[0] + v[2]) / 2),
        }
    return out


def _summary(result: dict) -> List[str]:
    g = {k: _r2(result[k]) for k in GLOBAL_KEYS}
    lines = [f"{k}: {g[k]}" for k in GLOBAL_KEYS]
    lines.append("Copy-Paste: " + ",".join(f"{g[k]:.1f}" for k in GLOBAL_KEYS))
    return lines


def mosev2_report(rows: Dict[str, list], result: dict) -> str:
    """What score.py prints after its progress bar: the per-object table
    (percent) and the global numbers (without its time line)."""
    out = [f"{'Video':<50}, {'J':>8}, {'F_new':>8}, {'F':>8}, {'disappear_J':>12}, {'disappear_F_new':>15}, "
           f"{'reappear_J':>11}, {'reappear_F_new':>14}"]
    for key, (j, f, f_, dj, df, rj, rf) in rows.items():
        vid = key.rsplit('_', 1)[0]
        s = [_r2(x) if x is not None else "N/A" for x in (dj, df, rj, rf)]
        out.append(f'{vid:>50}, {j*100:>8.2f}, {f*100:>8.2f}, {f_*100:>8.2f}, {s[0]:>12}, {s[1]:>15}, '
                   f'{s[2]:>11}, {s[3]:>14}')
    out.append('Metric evaluation finished')
    out.extend(_summary(result))
    return "\n".join(out) + "\n"


def mosev2_files(rows: Dict[str, list], result: dict, total_time: float = 0.0) -> Dict[str, str]:
    """The text of the two files score.py writes into its ``--output`` folder:
    ``metrics.json`` (per object, percent rounded to 2 decimals, then
    ``total_time``) and ``scores.txt`` (the global numbers)."""
    doc = _formatted(rows)
    doc['total_time'] = total_time
    return {"metrics.json": json.dumps(doc, indent=4), "scores.txt": "\n".join(_summary(result)) + "\n"}
