"""LVOS (long-term video object segmentation): ``LVOS`` and ``LVOSEvaluation``,
drop-ins for LingyiHongfd/lvos-evaluation's ``lvos.lvos_seperate.LVOS`` and
``lvos.evaluation.LVOSEvaluation``, on the frame kernel DAVIS and SA-V use, with
Boundary IoU per frame as metric 'B'.

LVOS annotates every 5th frame; each object has its own frame range in the
meta JSON (``start``, ``end``, ``frame_nums``), evaluated every 5th frame from
``start``.  The statistics are DAVIS' (``db_statistics``) on a (1, frames)
array, plus V, the standard deviation of J&F over the frames (rounded variance).
"""
from __future__ import annotations

import json
import math
import os
import sys
import warnings
from typing import Dict, List, Optional, Sequence

import numpy as np

from . import _jf
from .._io import FileNotFoundValueError as _file_error, input_error_class
from .._parallel import progress_bar, resolve_threads
from ..masks.boundary import check_dilation_ratio

__all__ = ["LVOS", "LVOSEvaluation", "STEP"]

#: LVOS evaluates every 5th frame of an object's range
STEP = 5
#: the most proposals the unsupervised_multiple task reads
MAX_PROPOSALS = 20


class LVOS:
    """An LVOS root as lvos-evaluation's ``LVOS`` reads it.

    Parameters
    ----------
    root : str
        The folder holding ``Annotations/<video>/<frame:08d>.png`` and
        ``<subset>_meta.json``.
    task : {'semi-supervised', 'unsupervised_multiple', 'unsupervised_single'}
    subset : {'valid', 'test'}
    codalab : bool
        Accepted (the original reads it only in ``LVOSEvaluation``).

    Attributes
    ----------
    json_data : dict
        The meta's ``videos``.
    sequences : dict
        ``{video: its meta 'objects'}``, videos sorted by name.

    Raises
    ------
    ValueError
        An unknown task or subset (as the original); a meta file that is not
        JSON or has no ``videos``.
    FileNotFoundError
        A missing meta file (also a ``ValueError``).
    """

    SUBSET_OPTIONS = ["valid", "test"]
    TASKS = ["semi-supervised", "unsupervised_multiple", "unsupervised_single"]
    DATASET_WEB = "https://lingyihongfd.github.io/lvos.github.io/"
    VOID_LABEL = 255

    def __init__(self, root, task="semi-supervised", subset="val", codalab=False):
        if subset not in self.SUBSET_OPTIONS:
            raise ValueError(f"Subset should be in {self.SUBSET_OPTIONS}")
        if task not in self.TASKS:
            raise ValueError(f"The only tasks that are supported are {self.TASKS}")
        self.task = task
        self.subset = subset
        self.root = root
        self.img_path = self.root
        self.mask_path = os.path.join(self.root, "Annotations")
        self.meta_path = os.path.join(root, self.subset + "_meta.json")
        try:
            with open(self.meta_path, "r") as f:
                doc = json.load(f)
        except FileNotFoundError:
            raise _file_error(f"LVOS meta file not found: {self.meta_path} (download LVOS from "
                              f"{self.DATASET_WEB})") from None
        except IsADirectoryError:
            raise _file_error(f"LVOS meta file is a directory: {self.meta_path}") from None
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"{self.meta_path} is not valid JSON: {exc}") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("videos"), dict):
            raise ValueError(f"{self.meta_path}: no 'videos' object")
        self.json_data = doc["videos"]
        self.sequences_names = list(self.json_data.keys())
        self.sequences: Dict[str, dict] = {}
        for seq in sorted(self.sequences_names):
            v = self.json_data[seq]
            if not isinstance(v, dict) or not isinstance(v.get("objects"), dict):
                raise ValueError(f"{self.meta_path}, video {seq!r}: no 'objects' object")
            self.sequences[seq] = v["objects"]

    def get_sequences(self):
        """The video names, sorted."""
        for seq in self.sequences:
            yield seq

    def get_sequence(self, sequence):
        """``{sequence: its objects}`` (empty objects for a name not in the meta)."""
        return {sequence: self.sequences.get(sequence, {})}

    def get_mask(self, sequence, frame, target_obj=None):
        """One annotation frame as the original returns it: ``(masks, void)``,
        (1, H, W) arrays, ``masks`` the 0/1 mask of ``target_obj`` (or the
        labels); void is always empty (255 is background once an object is
        chosen)."""
        path = os.path.join(self.mask_path, sequence, frame + ".png")
        masks = _jf.read_frame(path, "LVOS annotation")[None]
        if target_obj is not None:
            masks = (masks == int(target_obj)).astype(masks.dtype)
        void = np.zeros_like(masks)
        if target_obj is None:
            void[masks == 255] = 1
            masks[masks == 255] = 0
        return masks, void


class _Object:
    """What the evaluation needs of one meta object."""

    def __init__(self, seq: str, key, spec, meta_path: str):
        where = f"{meta_path}, video {seq!r}, object {key!r}"
        fr = spec.get("frame_range") if isinstance(spec, dict) else None
        if not isinstance(fr, dict):
            raise ValueError(f"{where}: no 'frame_range'")
        for k in ("start", "end", "frame_nums"):
            if k not in fr:
                raise ValueError(f"{where}: its frame_range has no {k!r}")
        try:
            self.start, self.end, self.n = int(fr["start"]), int(fr["end"]), int(fr["frame_nums"])
            self.label = int(key)
        except (TypeError, ValueError):
            raise ValueError(f"{where}: start, end, frame_nums and the object id must be whole numbers") from None
        self.key = key
        self.where = where

    def numbers(self) -> List[int]:
        return list(range(self.start, self.end, STEP))


def _place(arr: np.ndarray, row, index: int, value, obj: _Object) -> None:
    """``arr[row, index] = value`` as the original indexes (negative indices
    wrap around); an index past the end is the original's IndexError."""
    try:
        arr[row, index] = value
    except IndexError:
        raise input_error_class(IndexError)(
            f"{obj.where}: its frame range {obj.start}..{obj.end} (every {STEP}th frame) yields "
            f"{len(obj.numbers())} frames, more than its frame_nums {obj.n}") from None


def _salient(path, what: str):
    """A result as ``Results.read_mask_salient`` binarises it: more than two
    values: >= 127; one value 0 / 255 / 1 or the values {0, 1} / {0, 255}: that
    value; anything else refused."""
    a = _jf.read_frame(path, what)
    vals = np.unique(a)
    if len(vals) > 2:
        m = a >= 127
    elif len(vals) == 1 and vals[0] in (0, 1, 255):
        m = a == vals[0] if vals[0] else np.zeros(a.shape, bool)
    elif len(vals) == 2 and vals.tolist() in ([0, 1], [0, 255]):
        m = a == vals[1]
    else:
        raise ValueError(f"Unknown mask value: {path} holds {vals.tolist()} (a salient-object result is a mask "
                         "of 0 and 1 or 255, or a map thresholded at 127)")
    return m.astype(np.uint16), a.shape


class LVOSEvaluation:
    """J, F and V of an LVOS results folder, a drop-in for lvos-evaluation's
    ``LVOSEvaluation``, with Boundary IoU per frame as metric 'B'.

    Parameters
    ----------
    lvos_root : str
        The LVOS folder (``Annotations``, ``<gt_set>_meta.json``).
    task : {'semi-supervised', 'unsupervised_multiple', 'unsupervised_single'}
    gt_set : {'valid', 'test'}
    codalab : bool
        Read ``unseen_videos.txt`` and ``unsupervised_videos.txt`` from
        ``lvos_root``; False (default, as the original): from the current
        directory.
    use_cache : bool
        Accepted and ignored: the original caches dilated ground-truth
        boundaries in ``./cache_data`` (and reuses whatever is there); this
        package needs no cache.
    num_threads : int, optional
        Threads reading and evaluating frames (default: all cores).
    dilation_ratio : float
        Boundary IoU's band width as a fraction of the frame diagonal ('B').
    unseen_videos, unsupervised_videos : str, optional
        The two list files, instead of the places above.

    Raises
    ------
    FileNotFoundError
        A missing list of unseen videos, or of unsupervised videos with the
        task unsupervised_single (also a ``ValueError``; the original needs
        both lists for every task).
    """

    def __init__(self, lvos_root, task, gt_set, codalab=False, use_cache=False, *, num_threads=None,
                 dilation_ratio=0.02, unseen_videos=None, unsupervised_videos=None):
        self.lvos_root = lvos_root
        self.task = task
        self.use_cache = use_cache
        self.dataset = LVOS(root=lvos_root, task=task, subset=gt_set, codalab=codalab)
        self.num_threads = resolve_threads(num_threads)
        self.dilation_ratio = check_dilation_ratio(dilation_ratio)
        here = lvos_root if codalab else "."
        self.unseen_videos = self._lines(unseen_videos or os.path.join(here, "unseen_videos.txt"), "unseen_videos")
        unsup = unsupervised_videos or os.path.join(here, "unsupervised_videos.txt")
        if task != "unsupervised_single" and not os.path.exists(unsup):
            self.unsup_videos = []      # (read only by that task; the original stops without it)
        else:
            self.unsup_videos = self._lines(unsup, "unsupervised_videos")
        #: per-frame values of the last evaluation: ``{'<seq>_<n>': {'J': (1, n) array, ...}}``
        self.per_frame: Dict[str, Dict[str, np.ndarray]] = {}

    @staticmethod
    def _lines(path, what) -> List[str]:
        try:
            with open(path, mode="r") as f:
                return [line.strip() for line in f.readlines()]
        except FileNotFoundError:
            raise _file_error(f"{path} not found: LVOSEvaluation reads the list of {what.replace('_', ' ')} "
                              "there (lvos-evaluation ships it; codalab=True reads it from the LVOS root, "
                              f"{what}= names the file)") from None

    # ------------------------------------------------------------------
    def evaluate(self, res_path, metric=("J", "F", "V"), debug=False):
        """Evaluate a results folder (``<res_path>/<video>/<frame:08d>.png``).

        Parameters
        ----------
        res_path : str
        metric : str or tuple of str
            'J', 'F', 'V' (as the original; V needs J and F), plus 'B'.
        debug : bool
            Accepted (the original does not use it).

        Returns
        -------
        (metrics_res, metrics_res_seen, metrics_res_unseen)
            As the original: per metric ``{'M': [...], 'R': [...], 'D': [...],
            'M_per_object': {'<video>_<position>': M}}``; ``V`` has ``M`` and
            ``M_per_object`` only, and the first dict's ``V['M']`` is the last
            object's V (a float), as there.

        Raises
        ------
        ValueError
            A metric 'T', neither J nor F, an unknown metric; a result of
            another size than its annotation; an object whose frame range
            yields more frames than its ``frame_nums``; unsupervised_multiple
            with more than 20 objects in a video.
        FileNotFoundError
            A missing results folder, result or annotation frame (the original
            exits with status 0).
        """
        metric = metric if isinstance(metric, (tuple, list)) else [metric]
        if "T" in metric:
            raise ValueError("Temporal metric not supported!")
        if "J" not in metric and "F" not in metric:
            raise ValueError("Metric possible values are J for IoU or F for Boundary")
        unknown = [m for m in metric if m not in ("J", "F", "V", "B")]
        if unknown:
            raise ValueError(f"unknown metric {unknown[0]!r}: the metrics are 'J', 'F', 'V' and 'B'")
        if not os.path.isdir(res_path):
            raise _file_error(f"results folder not found: {res_path}")
        names = [m for m in ("J", "F", "B") if m in metric]
        out = tuple({} for _ in range(3))
        for m in names:
            for d in out:
                d[m] = {"M": [], "R": [], "D": [], "M_per_object": {}}
        if "V" in metric:
            for d in out:
                d["V"] = {"M": [], "M_per_object": {}}
        metrics_res, metrics_res_seen, metrics_res_unseen = out
        if self.task == "unsupervised_single":
            seqs = list(self.unsup_videos)
        else:
            seqs = list(self.dataset.get_sequences())
        self.per_frame = {}
        bar = progress_bar(len(seqs), "LVOS videos", unit="video")
        try:
            for seq_name in seqs:
                objs = list(self.dataset.get_sequence(seq_name)[seq_name])
                values = self._evaluate_sequence(seq_name, res_path, names)
                split = metrics_res_unseen if seq_name in self.unseen_videos else metrics_res_seen
                for ii, obj in enumerate(objs):
                    key = f"{seq_name}_{ii + 1}"
                    v = values[str(obj)]
                    self.per_frame[key] = v
                    for m in names:
                        M, R, D = _jf.db_statistics(v[m])
                        for d in (metrics_res, split):
                            d[m]["M"].append(M)
                            d[m]["R"].append(R)
                            d[m]["D"].append(D)
                            d[m]["M_per_object"][key] = M
                    if "V" in metric and "J" in metric and "F" in metric:
                        VM = _variation(v["J"], v["F"])
                        metrics_res["V"]["M"] = VM
                        metrics_res["V"]["M_per_object"][key] = VM
                        split["V"]["M"].append(VM)
                        split["V"]["M_per_object"][key] = VM
                if debug:
                    sys.stdout.write(seq_name + "\n")
                if bar is not None:
                    bar.update(1)
        finally:
            if bar is not None:
                bar.close()
        return metrics_res, metrics_res_seen, metrics_res_unseen

    # ------------------------------------------------------------------
    def _evaluate_sequence(self, seq: str, res_path: str, names: Sequence[str]) -> Dict[str, dict]:
        """Per object (by its meta key): ``{'J': (1, n) array, 'F': ..., 'B': ...}``
        placed as the original places each frame's value."""
        objs = [_Object(seq, k, spec, self.dataset.meta_path)
                for k, spec in self.dataset.get_sequence(seq)[seq].items()]
        if not objs:
            return {}
        task = self.task
        semi = task == "semi-supervised"
        # the frames each object evaluates, and the union read once
        evaluated = {}
        for o in objs:
            if (o.n - 2 if semi else o.n) < 0:
                raise ValueError(f"{o.where}: frame_nums is {o.n}: the original cannot make its arrays")
            nums = o.numbers()
            evaluated[o.key] = [(k, nums[k]) for k in range(len(nums)) if not (semi and (k == 0 or k == o.n - 1))]
        frames = sorted({f for o in objs for _, f in evaluated[o.key]})
        pos = {f: t for t, f in enumerate(frames)}
        ann = self.dataset.mask_path
        pairs = []
        for f in frames:
            name = f"{f:08d}.png"
            r = os.path.join(res_path, seq, name)
            if not os.path.isfile(r):
                raise _file_error(f"{seq} frame {f:08d} not found: {r} (the frames have to be indexed PNG files "
                                  "placed inside the corresponding sequence folder; the indexes have to match "
                                  "with the initial frame)")
            pairs.append((os.path.join(ann, seq, name), r))
        labels = [o.label for o in objs]
        read = None
        if semi:
            options = _jf.CountOptions(pair_mode=_jf.DIAGONAL, want_f="F" in names, want_b="B" in names,
                                       dilation_ratio=self.dilation_ratio)
            res_labels = labels
        elif task == "unsupervised_multiple":
            options = _jf.CountOptions(pair_mode=_jf.ALL_PAIRS, want_f="F" in names, want_b="B" in names,
                                       dilation_ratio=self.dilation_ratio)
            res_labels = list(range(1, MAX_PROPOSALS + 1))
        else:
            options = _jf.CountOptions(pair_mode=_jf.ALL_PAIRS, want_f="F" in names, want_b="B" in names,
                                       dilation_ratio=self.dilation_ratio)
            res_labels = [1]

            def read(item, what):
                if what == "result":
                    return _salient(item, "LVOS result")
                return _jf._load(item, what)

        counts = _jf.count_frames(pairs, options, read, self.num_threads, shape=None, shape_error=lambda g, r: (
            input_error_class(AssertionError)(f"result frame {r} is not the size of its annotation {g}")))
        c = _jf.dense_counts(counts, labels, res_labels)
        per = _jf.pair_values(c, names)
        out = {}
        if semi or task == "unsupervised_single":
            for i, o in enumerate(objs):
                n = o.n - 2 if semi else o.n
                v = {m: np.zeros((1, n)) for m in names}
                for k, f in evaluated[o.key]:
                    # semi: frame k of the range goes to k - 1 (the first and the last skipped);
                    # unsupervised_single: to k - 1 as well, so the first frame goes to the end
                    for m in names:
                        _place(v[m], 0, k - 1, per[m][i if semi else 0, i, pos[f]], o)
                out[str(o.key)] = v
            return out
        # unsupervised_multiple: every proposal against every object, then the matching
        if len(objs) > MAX_PROPOSALS:
            raise ValueError(f"video {seq} has {len(objs)} objects: the unsupervised_multiple task matches at most "
                             f"{MAX_PROPOSALS} proposals to them")
        allv = {}
        for i, o in enumerate(objs):
            a = {m: np.zeros((MAX_PROPOSALS, o.n)) for m in names}
            for k, f in evaluated[o.key]:
                for m in names:
                    _place(a[m], slice(None), k, per[m][:, i, pos[f]], o)
            allv[o.key] = a
        score = np.zeros((MAX_PROPOSALS, len(objs)))
        for i, o in enumerate(objs):
            if "J" in names and "F" in names:
                score[:, i] = (np.mean(allv[o.key]["J"], axis=1) + np.mean(allv[o.key]["F"], axis=1)) / 2
            else:
                score[:, i] = np.mean(allv[o.key]["J" if "J" in names else "F"], axis=1)
        from scipy.optimize import linear_sum_assignment

        rows, cols = linear_sum_assignment(-score)
        for i, o in enumerate(objs):
            src = objs[cols[i]].key
            out[str(o.key)] = {m: allv[src][m][rows[i]][None] for m in names}
        return out


def _variation(j: np.ndarray, f: np.ndarray) -> float:
    """LVOS' V of one object (``utils.db_statistics_var``): the square root of
    the variance of (J + F) / 2 over its frames, the variance rounded to 4
    decimals by NumPy first."""
    jf = (j + f) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        jfm = np.nanmean(jf)
        var = np.nansum((jfm - jf) ** 2) / jf.shape[1]
    return math.sqrt(round(var, 4))
