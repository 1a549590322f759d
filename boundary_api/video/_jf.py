"""What DAVIS, SA-V, MOSEv2 and LVOS share: label-map frames read and counted by
the frame kernel (:mod:`._frames`) on threads, the counts turned into per-frame J,
F and Boundary IoU exactly as the official tools compute them, and the official
statistics (mean, recall, decay); the folders listed with one error.

The kernel only counts; every division is made here with NumPy, on the same
operands and in the same order as ``davis2017-evaluation`` and SA-V's
``sav_benchmark`` (``inters / union``, ``np.sum(fg_match) / float(n_fg)``,
``2 * precision * recall / (precision + recall)``), so the floats are the
official ones bit for bit.
"""
from __future__ import annotations

import functools
import os
import warnings
from dataclasses import dataclass
from typing import Callable, List, Optional, Sequence, Tuple

import numpy as np

from . import _frames
from .._io import FileNotFoundValueError, input_error_class
from .._parallel import run_ranges
from ..masks.boundary import dilation_pixels
from ..masks.imagefiles import DEFAULT_MAX_PIXELS, check_image_file, read_label_map

#: DAVIS' boundary tolerance: a fraction of the frame diagonal (``bound_th``)
BOUND_TH = 0.008
#: frames counted per kernel call (bounded memory: their label maps only)
FRAMES_PER_CALL = 8

DIAGONAL = _frames.DIAGONAL
ALL_PAIRS = _frames.ALL_PAIRS


def f_radius(height: int, width: int, bound_th: float = BOUND_TH) -> int:
    """F's tolerance in pixels as the official tools compute it:
    ``np.ceil(bound_th * np.linalg.norm((height, width)))`` (``bound_th`` itself
    when it is 1 or more, as in davis2017-evaluation)."""
    if bound_th >= 1:
        r = float(bound_th)
    else:
        r = float(np.ceil(bound_th * np.linalg.norm((height, width))))
    if r != int(r):
        raise ValueError(f"a boundary tolerance of {r} pixels is not a whole number")
    return int(r)


def listdir(folder: str, what: str) -> List[str]:
    """``os.listdir(folder)``; a missing folder, or a file, is a FileNotFoundError
    (also a ValueError) naming ``what``."""
    try:
        return os.listdir(folder)
    except FileNotFoundError:
        raise FileNotFoundValueError(f"{what} not found: {folder}") from None
    except NotADirectoryError:
        raise FileNotFoundValueError(f"{what} is not a folder: {folder}") from None


def read_frame(path, what: str) -> np.ndarray:
    """A label map (H, W) uint16 with the values ``np.array(Image.open(path))``
    gives (palette indices, grey levels), for a single-channel image file or
    its bytes."""
    if isinstance(path, (bytes, bytearray)):
        from .._io import InputBytes

        path = InputBytes(what, bytes(path))
    try:
        a = read_label_map(path, what=what)
    except FileNotFoundError as exc:
        raise input_error_class(FileNotFoundError)(str(exc)) from None
    if a.dtype != np.uint16:
        if a.dtype.kind not in "biu" or (a.size and (int(a.max()) > 65535 or int(a.min()) < 0)):
            raise ValueError(f"{what} has labels outside 0..65535: {_name(path)}")
        a = a.astype(np.uint16)
    return np.ascontiguousarray(a)


def _load(item, what: str):
    """A frame for the kernel: the bytes of a PNG file its native decoder
    takes, else the label map as an array; with its (height, width)."""
    if isinstance(item, np.ndarray):
        return item, item.shape
    path = os.fspath(item)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        raise input_error_class(FileNotFoundError)(f"{what} file not found: {path}") from None
    except IsADirectoryError:
        raise input_error_class(IsADirectoryError)(f"{what} file is a directory: {path}") from None
    except OSError as exc:
        raise ValueError(f"cannot read {what} file {path}: {exc.strerror or exc}") from None
    kinds, hs, ws = _frames.png_headers([data])
    if kinds[0] > 0:
        if DEFAULT_MAX_PIXELS is not None and int(hs[0]) * int(ws[0]) > DEFAULT_MAX_PIXELS:
            check_image_file(path, what=what)  # (raises ImageTooLargeError naming the file)
        return data, (int(hs[0]), int(ws[0]))
    a = read_frame(path, what)
    return a, a.shape


@dataclass
class FrameCounts:
    """Counts of a run of frames, as the kernel gives them (see
    :data:`._frames.LABEL_COLUMNS` and :data:`._frames.PAIR_COLUMNS`)."""

    labels: np.ndarray
    pairs: np.ndarray
    frames: int = 0

    @property
    def frame_rows(self) -> np.ndarray:
        """Per frame: the frame, 2, the largest raw ground-truth and result
        labels, and how many distinct values each raw map holds (0 included,
        counted up to 3)."""
        return self.labels[self.labels[:, 1] == 2]

    @property
    def max_res_label(self) -> int:
        """The largest result label of every frame (before void is applied)."""
        rows = self.frame_rows
        return int(rows[:, 3].max()) if len(rows) else 0


@dataclass
class CountOptions:
    """How the kernel reads the two label maps of a frame."""

    void_label: int = -1
    mask_res_by_void: bool = False
    binarize: bool = False
    max_gt_label: int = 65535
    max_res_label: int = 65535
    pair_mode: int = DIAGONAL
    want_f: bool = True
    want_b: bool = False
    dilation_ratio: float = 0.02
    bound_th: float = BOUND_TH
    #: > 0: MOSEv2's object-adaptive F_new (``bound_th=0.1, bound_mode='area'``):
    #: its radius ``ceil(adaptive_th * sqrt(ground-truth area))`` capped at
    #: ``bound_th * diagonal`` (see :func:`adaptive_footprints`)
    adaptive_th: float = 0.0


@functools.lru_cache(maxsize=16)
def adaptive_footprints(height: int, width: int, bound_th: float = BOUND_TH) -> Tuple[float, tuple]:
    """The cap and the footprints of MOSEv2's ``f_measure_adaptive`` at a
    frame size: the cap ``bound_th * np.linalg.norm((height, width))`` (not
    rounded), and the disks of radius 0 .. ``ceil(cap)`` and of the cap
    itself, as scikit-image's ``disk`` makes them and OpenCV's ``dilate``
    applies them (:func:`._frames.disk_footprint`)."""
    cap = float(bound_th * np.linalg.norm((height, width)))
    top = int(np.ceil(cap))
    kernels = [_frames.disk_footprint(float(k)) for k in range(top + 1)] + [_frames.disk_footprint(cap)]
    return cap, tuple(_frames.footprint_rows(k) for k in kernels)


def count_frames(pairs: Sequence[Tuple[object, object]], options: CountOptions,
                 read: Optional[Callable[[object, str], tuple]], num_threads: int,
                 on_label_error: Optional[Callable[[int, int], Exception]] = None,
                 shape: Optional[Tuple[int, int]] = None,
                 shape_error: Optional[Callable[[object, object], Exception]] = None,
                 shape_source: str = "the sequence's first annotation") -> FrameCounts:
    """Read and count the frames ``pairs`` = [(ground truth, result), ...] on
    ``num_threads`` threads, a few frames per kernel call; frame numbers in
    the output are positions in ``pairs``.

    Items are paths of label-map files (read natively where the PNG decoder
    takes them, by Pillow otherwise) or (H, W) uint16 arrays; ``read(item,
    which)`` may replace that reading: it gives ``(frame, (height, width))``,
    a frame being the bytes of a PNG the native decoder takes or an array.
    ``shape``: the size every frame must have (DAVIS, which stacks a
    sequence's frames); None: each frame's result must have its ground
    truth's size (``shape_error(gt, result)`` makes the exception), and F's
    radius and B's width follow each frame's size (SA-V).
    ``shape_source`` says where ``shape`` comes from (for messages).
    ``on_label_error(frame, label)`` makes the exception for a result label
    above ``options.max_res_label``.
    """
    n = len(pairs)
    if n == 0:
        return FrameCounts(np.zeros((0, 6), np.int64), np.zeros((0, 9), np.int64), 0)
    read = read or _load

    def kernel(gts, ress, first, H, W):
        adaptive = {}
        if options.want_f and options.adaptive_th > 0:
            cap, footprints = adaptive_footprints(H, W, options.bound_th)
            radius = 0
            adaptive = dict(footprints=list(footprints), adaptive_th=options.adaptive_th, adaptive_cap=cap)
        else:
            radius = f_radius(H, W, options.bound_th) if options.want_f else 0
        d = min(dilation_pixels(H, W, options.dilation_ratio), max(H, W)) if options.want_b else 1
        try:
            return _frames.frame_counts(
                gts, ress, first, void_label=options.void_label, mask_res_by_void=options.mask_res_by_void,
                binarize=options.binarize, max_gt_label=options.max_gt_label,
                max_res_label=options.max_res_label, pair_mode=options.pair_mode, radius=radius, d=d,
                want_f=options.want_f, want_b=options.want_b, **adaptive)
        except _frames.LabelAboveLimit as exc:
            if on_label_error is None:
                raise
            raise on_label_error(exc.frame, exc.label) from None

    def group(gts, ress, first, H, W):
        """The kernel on frames of one size; a PNG the native decoder finds
        damaged is read by Pillow instead (which decides), and the group run again."""
        while True:
            try:
                return kernel(gts, ress, first, H, W)
            except _frames.DamagedPNG as exc:
                t = exc.frame - first
                side = gts if exc.side == 0 else ress
                item = pairs[exc.frame][exc.side]
                side[t] = read_frame(side[t], "ground truth" if exc.side == 0 else "result")
                if side[t].shape != (H, W):
                    raise ValueError(f"frame {_name(item)} is {side[t].shape[0]}x{side[t].shape[1]}, "
                                     f"not {H}x{W}") from None

    def run(lo: int, hi: int):
        out = []
        gts, ress, first, size = [], [], lo, None
        for t in range(lo, hi):
            g, gshape = read(pairs[t][0], "ground truth")
            r, rshape = read(pairs[t][1], "result")
            if shape is not None:
                for what, sh, item in (("ground truth", gshape, pairs[t][0]), ("result", rshape, pairs[t][1])):
                    if tuple(sh) != tuple(shape):
                        raise ValueError(f"{what} frame {_name(item)} is {sh[0]}x{sh[1]}, not "
                                         f"{shape[0]}x{shape[1]} like {shape_source}")
            elif tuple(gshape) != tuple(rshape):
                if shape_error is not None:
                    raise shape_error(_name(pairs[t][0]), _name(pairs[t][1]))
                raise input_error_class(AssertionError)(
                    f"result frame {_name(pairs[t][1])} is {rshape[0]}x{rshape[1]}, not "
                    f"{gshape[0]}x{gshape[1]} like its ground truth {_name(pairs[t][0])}")
            if gts and tuple(gshape) != size:
                out.append(group(gts, ress, first, *size))
                gts, ress, first = [], [], t
            size = tuple(gshape)
            gts.append(g)
            ress.append(r)
        out.append(group(gts, ress, first, *size))
        return (np.concatenate([o[0] for o in out]), np.concatenate([o[1] for o in out]))

    ranges = [(lo, min(n, lo + FRAMES_PER_CALL)) for lo in range(0, n, FRAMES_PER_CALL)]
    out = run_ranges(run, ranges, max(1, min(num_threads, len(ranges))))
    labels = np.concatenate([o[0] for o in out])
    pair_rows = np.concatenate([o[1] for o in out])
    return FrameCounts(labels, pair_rows, n)


def _name(item) -> str:
    return os.fspath(item) if isinstance(item, (str, os.PathLike)) else repr(item)


def dense_counts(counts: FrameCounts, gt_labels: Sequence[int], res_labels: Sequence[int]) -> dict:
    """The counts as dense arrays over the chosen labels and every frame:
    ``area_gt[g, t]``, ``nb_gt``, ``band_gt``, ``area_res[r, t]``, ...,
    ``inter[r, g, t]``, ``fg``, ``gm``, ``band_inter``, ``fg_new``,
    ``gm_new`` (0 where a label is absent; labels not chosen are dropped)."""
    T = counts.frames
    gi = {int(l): i for i, l in enumerate(gt_labels)}
    ri = {int(l): i for i, l in enumerate(res_labels)}
    G, R = len(gi), len(ri)
    out = {k: np.zeros((G, T), np.int64) for k in ("area_gt", "nb_gt", "band_gt")}
    out.update({k: np.zeros((R, T), np.int64) for k in ("area_res", "nb_res", "band_res")})
    pair_names = ("inter", "fg", "gm", "band_inter", "fg_new", "gm_new")
    out.update({k: np.zeros((R, G, T), np.int64) for k in pair_names})
    lab = counts.labels
    for side, idx, names in ((0, gi, ("area_gt", "nb_gt", "band_gt")), (1, ri, ("area_res", "nb_res", "band_res"))):
        rows = lab[lab[:, 1] == side]
        if not len(rows):
            continue
        pos = np.array([idx.get(int(l), -1) for l in rows[:, 2]], np.int64)
        keep = pos >= 0
        rows, pos = rows[keep], pos[keep]
        for c, name in enumerate(names):
            out[name][pos, rows[:, 0]] = rows[:, 3 + c]
    pr = counts.pairs
    if len(pr):
        rp = np.array([ri.get(int(l), -1) for l in pr[:, 1]], np.int64)
        gp = np.array([gi.get(int(l), -1) for l in pr[:, 2]], np.int64)
        keep = (rp >= 0) & (gp >= 0)
        pr, rp, gp = pr[keep], rp[keep], gp[keep]
        for c, name in enumerate(pair_names):
            out[name][rp, gp, pr[:, 0]] = pr[:, 3 + c]
    return out


def j_values(inter: np.ndarray, area_res: np.ndarray, area_gt: np.ndarray) -> np.ndarray:
    """J per frame: ``inters / union``, 1 where the union is empty
    (davis2017-evaluation's ``db_eval_iou``; SA-V's ``get_iou`` gives the same
    floats)."""
    union = area_res + area_gt - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        j = inter / union
    j[union == 0] = 1
    return j


def j_values_smoothed(inter: np.ndarray, area_res: np.ndarray, area_gt: np.ndarray) -> np.ndarray:
    """MOSEv2's J per frame: ``(inters + 1) / (union + 1)`` clipped to [0, 1],
    1 where the union is empty (``metricsv2.db_eval_iou``)."""
    union = area_res + area_gt - inter
    j = np.clip((inter + 1) / (union + 1), 0, 1)
    j[union == 0] = 1
    return j


def f_values(fg_match: np.ndarray, gt_match: np.ndarray, n_fg: np.ndarray, n_gt: np.ndarray) -> np.ndarray:
    """F per frame from the boundary counts, with the official empty cases:
    no result boundary: P=1, R=0; no ground-truth boundary: P=0, R=1; neither:
    P=R=1; F = 2PR/(P+R), 0 when P+R is 0."""
    fg_match, gt_match, n_fg, n_gt = np.broadcast_arrays(fg_match, gt_match, n_fg, n_gt)
    precision = np.ones(n_fg.shape)
    recall = np.ones(n_fg.shape)
    both = (n_fg > 0) & (n_gt > 0)
    precision[both] = fg_match[both] / n_fg[both].astype(np.float64)
    recall[both] = gt_match[both] / n_gt[both].astype(np.float64)
    only_gt = (n_fg == 0) & (n_gt > 0)
    recall[only_gt] = 0
    only_fg = (n_fg > 0) & (n_gt == 0)
    precision[only_fg] = 0
    s = precision + recall
    f = np.zeros(n_fg.shape)
    nz = s != 0
    f[nz] = 2 * precision[nz] * recall[nz] / s[nz]
    return f


def b_values(band_inter: np.ndarray, band_res: np.ndarray, band_gt: np.ndarray) -> np.ndarray:
    """Boundary IoU per frame (the paper's, of the two masks' bands): band
    intersection over band union, 1 where both masks are empty (as J)."""
    return j_values(band_inter, band_res, band_gt)


def pair_values(c: dict, names: Sequence[str]) -> dict:
    """J (always), F and B (where in ``names``) of every (result, ground truth)
    pair and frame, ``[r, g, t]`` arrays, from :func:`dense_counts`' ``c``."""
    per = {"J": j_values(c["inter"], c["area_res"][:, None], c["area_gt"][None])}
    if "F" in names:
        per["F"] = f_values(c["fg"], c["gm"], c["nb_res"][:, None], c["nb_gt"][None])
    if "B" in names:
        per["B"] = b_values(c["band_inter"], c["band_res"][:, None], c["band_gt"][None])
    return per


def db_statistics(per_frame_values, decay: str = "official"):
    """Mean, recall and decay of one object's per-frame values, as
    davis2017-evaluation's ``utils.db_statistics`` computes them.

    Parameters
    ----------
    per_frame_values : 1-d array
    decay : {'official', 'exact'}
        The four decay bins are bounded by frame indices that the official
        code casts to ``uint8``: past 256 frames they wrap around and the
        decay is that of other frames.  'official' (default) keeps that;
        'exact' uses the indices as computed.

    Returns
    -------
    (M, O, D) : np.float64
        ``nanmean`` of the values, ``nanmean`` of ``values > 0.5``, and the
        mean of the first quarter of the frames minus the mean of the last.
    """
    if decay not in ("official", "exact"):
        raise ValueError(f"decay must be 'official' or 'exact', got {decay!r}")
    v = np.asarray(per_frame_values)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)  # (an all-NaN object: NaN, as officially)
        M = np.nanmean(v)
        O = np.nanmean(v > 0.5)
        ids = np.round(np.linspace(1, len(v), 4 + 1) + 1e-10) - 1
        ids = ids.astype(np.uint8) if decay == "official" else ids.astype(np.int64)
        bins = [v[ids[i]:ids[i + 1] + 1] for i in range(4)]
        D = np.nanmean(bins[0]) - np.nanmean(bins[3])
    return M, O, D
