"""mIoU and Boundary IoU per class for semantic segmentation label maps.

Definitions
-----------
For a class ``c`` and an image, ``G_c`` and ``P_c`` are the binary masks of
``c`` in the ground truth and the predicted label map, with the pixels whose
ground truth is the ignore label removed from both.  Over the dataset, per
class:

* mask: ``I_c = sum |G_c & P_c|``, ``U_c = sum |G_c | P_c|``, ``IoU_c = I_c / U_c``;
* boundary: the same sums over the inner boundary bands ``B(G_c)`` and
  ``B(P_c)``, where ``B(M) = M AND NOT erode(M)`` with a ``(2d+1) x (2d+1)``
  square, pixels outside the image counting as background and
  ``d = dilation_pixels(H, W, dilation_ratio)`` (the package's boundary
  definition, :mod:`boundary_api.masks.boundary`), so
  ``BoundaryIoU_c = sum |B(G_c) & B(P_c)| / sum |B(G_c) | B(P_c)|``.

The ignore pixels are removed from the masks *before* the boundaries are
taken: an ignore region is "not c" in both maps.  The ground truth mask of a
class next to an ignore region has a boundary along it, and so has a
prediction of that class which runs into the region; the two bands match.
(Removing the ignore pixels from the bands afterwards instead would leave the
ground truth band along the ignore region unmatched by a correct prediction.)
This is the reading of "pixels whose ground truth is the ignore label removed
from both" in the definition: ``G_c`` and ``P_c`` are the masks after removal,
and the bands are those of ``G_c`` and ``P_c``.  For comparison, Detectron2's
``SemSegEvaluator`` takes its band on the unmasked prediction and drops the
ignore pixels from its counts afterwards (and erodes the multi-class label map
rather than each class's mask); mmsegmentation's ``IoUMetric`` has no
boundary term, and drops the ignore pixels from both maps before counting,
as the mask part here does.

The mask part follows mmsegmentation's ``IoUMetric`` (and cityscapesScripts'
pixel-level evaluation): a predicted pixel counts only where the ground truth
is not ignored; a prediction equal to the ignore label (and not a class id)
predicts no class; ``Acc_c = I_c / |G_c|``; ``aAcc = sum_c I_c / sum_c |G_c|``;
a class absent from both the ground truth and the prediction has IoU,
Boundary IoU and Acc NaN (a class predicted but absent from the ground truth
has IoU 0 and Acc NaN), and the means (mIoU, mBIoU, mAcc) skip NaN.
``fwIoU = sum_c |G_c| IoU_c / sum_c |G_c|`` (frequency-weighted IoU, as in
Long et al. and Detectron2).

Boundaries are computed per class from the maps' runs with the package's
run-length kernel, never by eroding the label map itself.
"""
from __future__ import annotations

import logging
import math
import os
import threading
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from .._parallel import resolve_threads, run_ranges
from . import _kernels
from ..masks.boundary import check_dilation_ratio, dilation_pixels
from ..masks.imagefiles import DEFAULT_MAX_PIXELS, check_max_pixels
from .labelmaps import read_label_map

__all__ = ["SemanticEvaluator", "evaluate_folders", "pair_label_maps"]

log = logging.getLogger(__name__)

_MAX_U32 = 2 ** 32 - 1
#: largest ``num_classes`` (the confusion matrix is dense: 4096 classes take 134 MB)
MAX_CLASSES = 4096


def _check_int(value, name: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if not lo <= value <= hi:
        raise ValueError(f"{name} must be in [{lo}, {hi}], got {value}")
    return int(value)


def _as_label_map(arr, what: str, name: str) -> np.ndarray:
    """(H, W) C-contiguous uint32 copy or view of a label map; ``name`` names it in errors."""
    a = np.asarray(arr)
    if a.ndim == 3 and a.shape[2] in (3, 4):
        raise ValueError(f"{name}: the {what} is a colour image of shape {a.shape}; expected a "
                         "single-channel label map of class ids")
    if a.ndim != 2:
        raise ValueError(f"{name}: the {what} must be a 2-D label map, got shape {a.shape}")
    if a.dtype == np.uint32:
        return np.ascontiguousarray(a)
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name}: the {what} must hold integer class ids, got dtype {a.dtype}")
    if a.size and np.issubdtype(a.dtype, np.signedinteger) and a.min() < 0:
        raise ValueError(f"{name}: the {what} has negative values ({a.min()})")
    if a.size and a.dtype.itemsize > 4 and a.max() > _MAX_U32:
        raise ValueError(f"{name}: the {what} has values >= 2**32")
    return np.ascontiguousarray(a, dtype=np.uint32)


def _nan_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out = np.full(a.shape, np.nan)
    ok = b > 0
    out[ok] = a[ok] / b[ok]
    return out


def _nanmean(x: np.ndarray) -> float:
    ok = ~np.isnan(x)
    return float(x[ok].mean()) if ok.any() else math.nan


class SemanticEvaluator:
    """Accumulating mIoU / Boundary IoU evaluator for semantic label maps.

    Parameters
    ----------
    num_classes : int
        Number of classes; class ids are ``0 .. num_classes - 1`` (at most 4096).
    ignore_index : int, optional
        Ground truth pixels with this value are left out (default 255).  A
        prediction may use it for "no class"; any other value
        ``>= num_classes`` is an error.
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02;
        0.005 is the paper's Cityscapes setting).
    num_threads : int, optional
        Threads for :meth:`process_batch` and :meth:`process_files`
        (default: all cores).
    class_names : sequence of str, optional
        Names of the classes, used in the results.
    reduce_zero_label : bool, optional
        mmsegmentation's ADE20K convention, applied to the ground truth only:
        0 becomes the ignore label and every other id ``k`` (other than the
        ignore label) becomes ``k - 1``.

    Examples
    --------
    >>> ev = SemanticEvaluator(num_classes=3)
    >>> gt = np.array([[0, 0, 1, 1], [0, 0, 1, 255]], np.uint8)
    >>> ev.process(gt, np.array([[0, 1, 1, 1], [0, 0, 1, 2]], np.uint8))
    >>> round(ev.evaluate()["mIoU"], 4)
    0.75
    """

    def __init__(self, num_classes: int, ignore_index: int = 255, dilation_ratio: float = 0.02,
                 num_threads: Optional[int] = None, class_names: Optional[Sequence[str]] = None,
                 reduce_zero_label: bool = False):
        self.num_classes = _check_int(num_classes, "num_classes", 1, MAX_CLASSES)
        self.ignore_index = _check_int(ignore_index, "ignore_index", 0, _MAX_U32)
        self.dilation_ratio = check_dilation_ratio(dilation_ratio)
        self.num_threads = resolve_threads(num_threads)
        if class_names is not None:
            class_names = [str(n) for n in class_names]
            if len(class_names) != self.num_classes:
                raise ValueError(f"class_names has {len(class_names)} names for {self.num_classes} classes")
        self.class_names = class_names
        self.reduce_zero_label = bool(reduce_zero_label)
        self._lock = threading.Lock()
        self.reset()

    # pickling (multiprocessing, checkpoints): the lock is not state
    def __getstate__(self) -> dict:
        with self._lock:
            state = self.__dict__.copy()
            state["confusion_matrix"] = self.confusion_matrix.copy()
            state["boundary_counts"] = self.boundary_counts.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    # ------------------------------------------------------------------
    def reset(self) -> None:
        """Forget every image processed so far."""
        n = self.num_classes
        #: ``confusion_matrix[g, p]``: pixels of ground truth class ``g``
        #: predicted as ``p`` (column ``num_classes``: no class predicted)
        self.confusion_matrix = np.zeros((n, n + 1), np.int64)
        #: per class: boundary area of the ground truth, of the prediction, of both
        self.boundary_counts = np.zeros((n, 3), np.int64)
        self.num_images = 0

    def _prepare(self, gt, pred, name: str) -> Tuple[np.ndarray, np.ndarray]:
        g = _as_label_map(gt, "ground truth", name)
        p = _as_label_map(pred, "prediction", name)
        if g.shape != p.shape:
            raise ValueError(f"{name}: the prediction is {p.shape[0]}x{p.shape[1]} but the ground truth "
                             f"is {g.shape[0]}x{g.shape[1]}")
        if self.reduce_zero_label:
            ign = np.uint32(self.ignore_index)
            keep = g == ign
            g = g - np.uint32(1)
            g[keep] = ign
            g[g == np.uint32(_MAX_U32)] = ign
        return g, p

    def _accumulate(self, g: np.ndarray, p: np.ndarray, name: str, conf: np.ndarray,
                    bstat: np.ndarray) -> None:
        h, w = g.shape
        d = dilation_pixels(h, w, self.dilation_ratio) if h and w else 1
        which, pos = _kernels.sem_accumulate(g, p, self.num_classes, self.ignore_index, d, conf, bstat)
        if which:
            arr = g if which == 1 else p
            y, x = divmod(int(pos), w)
            what = "ground truth" if which == 1 else "prediction"
            if which == 1 and self.reduce_zero_label:
                what += " (after reduce_zero_label)"
            raise ValueError(f"{name}: the {what} has value {int(arr[y, x])} at row {y}, column {x}, which "
                             f"is neither a class id (< {self.num_classes}) nor the ignore label "
                             f"{self.ignore_index}")

    def process(self, gt_map, pred_map, name: Optional[str] = None) -> None:
        """Add one image.

        Parameters
        ----------
        gt_map, pred_map : (H, W) arrays of non-negative integers
            Ground truth and predicted label maps of the same size.
        name : str, optional
            How the image is named in error messages.

        Raises
        ------
        ValueError, TypeError
            On maps of different sizes, colour images, non-integer maps or
            values that are neither class ids nor the ignore label.  Nothing
            is added then.
        """
        name = "image" if name is None else str(name)
        g, p = self._prepare(gt_map, pred_map, name)
        with self._lock:  # the kernel adds nothing when it finds bad input
            self._accumulate(g, p, name, self.confusion_matrix, self.boundary_counts)
            self.num_images += 1

    def _add(self, conf, bstat, count) -> None:
        with self._lock:
            self.confusion_matrix += conf
            self.boundary_counts += bstat
            self.num_images += count

    def _run_parallel(self, n: int, load) -> None:
        """``load(i) -> (gt, pred, name)``; every image is added, or none if one fails."""
        if n == 0:
            return

        def work(lo: int, hi: int):
            conf = np.zeros_like(self.confusion_matrix)
            bstat = np.zeros_like(self.boundary_counts)
            for i in range(lo, hi):
                gt, pred, name = load(i)
                g, p = self._prepare(gt, pred, name)
                self._accumulate(g, p, name, conf, bstat)
            return conf, bstat

        threads = min(self.num_threads, n)
        # one range (and one pair of accumulators) per thread
        bounds = np.linspace(0, n, threads + 1).astype(int)
        ranges = [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]
        parts = run_ranges(work, ranges, threads)
        conf = sum(c for c, _ in parts)
        bstat = sum(b for _, b in parts)
        self._add(conf, bstat, n)

    def process_batch(self, gt_maps: Sequence, pred_maps: Sequence,
                      names: Optional[Sequence[str]] = None) -> None:
        """Add several images, in parallel over images.

        Parameters
        ----------
        gt_maps, pred_maps : sequences of (H, W) arrays (sizes may differ between images)
        names : sequence of str, optional
            Names for error messages (default: ``"image <index>"``).
        """
        if len(gt_maps) != len(pred_maps):
            raise ValueError(f"{len(gt_maps)} ground truth maps but {len(pred_maps)} predictions")
        if names is not None and len(names) != len(gt_maps):
            raise ValueError(f"{len(names)} names for {len(gt_maps)} images")

        def load(i):
            return gt_maps[i], pred_maps[i], (names[i] if names is not None else f"image {i}")

        self._run_parallel(len(gt_maps), load)

    def process_files(self, gt_paths: Sequence, pred_paths: Sequence,
                      max_pixels: Optional[int] = DEFAULT_MAX_PIXELS) -> None:
        """Add pairs of PNG label maps, read and evaluated in parallel.

        Errors name the file at fault.  ``max_pixels``: largest image read
        (width x height, checked from each file's header; ``None``: no limit).
        """
        max_pixels = check_max_pixels(max_pixels)
        if len(gt_paths) != len(pred_paths):
            raise ValueError(f"{len(gt_paths)} ground truth files but {len(pred_paths)} predictions")

        def load(i):
            gp, pp = os.fspath(gt_paths[i]), os.fspath(pred_paths[i])
            gt = read_label_map(gp, max_pixels)
            pred = read_label_map(pp, max_pixels)
            if gt.shape != pred.shape:
                raise ValueError(f"{pp}: the prediction is {pred.shape[0]}x{pred.shape[1]} but the ground "
                                 f"truth {gp} is {gt.shape[0]}x{gt.shape[1]}")
            return gt, pred, f"{pp} (ground truth {gp})"

        self._run_parallel(len(gt_paths), load)

    # ------------------------------------------------------------------
    def evaluate(self) -> Dict[str, object]:
        """Metrics of the images processed so far.

        Returns
        -------
        dict
            ``"mIoU"``, ``"mBIoU"``, ``"aAcc"``, ``"mAcc"``, ``"fwIoU"``
            (floats, fractions in [0, 1], NaN when undefined); ``"IoU"``,
            ``"BoundaryIoU"``, ``"Acc"`` (per class, float arrays with NaN for
            classes absent from both maps); the sums they come from
            (``"intersection"``, ``"union"``, ``"gt_area"``, ``"pred_area"``,
            ``"boundary_intersection"``, ``"boundary_union"``, int64 arrays),
            ``"num_images"`` and ``"class_names"``.
        """
        n = self.num_classes
        conf = self.confusion_matrix
        inter = np.ascontiguousarray(conf[np.arange(n), np.arange(n)])
        gt_area = conf.sum(axis=1)
        pred_area = conf[:, :n].sum(axis=0)
        union = gt_area + pred_area - inter
        b_gt, b_pred, b_inter = (np.ascontiguousarray(self.boundary_counts[:, k]) for k in range(3))
        b_union = b_gt + b_pred - b_inter
        present = union > 0
        iou = _nan_div(inter, union)
        biou = np.where(present, _nan_div(b_inter, b_union), np.nan)
        acc = _nan_div(inter, gt_area)
        total = int(gt_area.sum())
        a_acc = float(inter.sum() / total) if total else math.nan
        fw = gt_area > 0
        fw_iou = float(np.sum(gt_area[fw] * iou[fw]) / total) if total else math.nan
        return {
            "mIoU": _nanmean(iou),
            "mBIoU": _nanmean(biou),
            "aAcc": a_acc,
            "mAcc": _nanmean(acc),
            "fwIoU": fw_iou,
            "IoU": iou,
            "BoundaryIoU": biou,
            "Acc": acc,
            "intersection": inter,
            "union": union,
            "gt_area": gt_area,
            "pred_area": pred_area,
            "boundary_intersection": b_inter,
            "boundary_union": b_union,
            "num_images": self.num_images,
            "class_names": list(self.class_names) if self.class_names is not None else
            [str(c) for c in range(n)],
        }


# ---------------------------------------------------------------------------
# folders
# ---------------------------------------------------------------------------

def pair_label_maps(gt_dir, pred_dir, gt_suffix: str = ".png",
                    pred_suffix: str = ".png") -> List[Tuple[str, str]]:
    """Pair ground truth and prediction PNGs by relative path.

    Every file under ``gt_dir`` (recursively, linked sub-folders included,
    a folder reached twice read once) whose name ends with
    ``gt_suffix`` is paired with the file of the same relative path under
    ``pred_dir``, its suffix replaced by ``pred_suffix``
    (``gt/a/x_gtFine_labelTrainIds.png`` with ``gt_suffix="_gtFine_labelTrainIds.png"``
    pairs with ``pred/a/x.png``).

    Returns
    -------
    list of (gt_path, pred_path), sorted by relative path

    Raises
    ------
    ValueError
        If a folder does not exist, there is no ground truth file, or a
        prediction file is missing (the message names it).
    """
    gt_dir, pred_dir = os.fspath(gt_dir), os.fspath(pred_dir)
    for what, folder in (("ground truth", gt_dir), ("prediction", pred_dir)):
        if not os.path.isdir(folder):
            raise ValueError(f"{what} folder not found: {folder}")
    if not gt_suffix or not pred_suffix:
        raise ValueError("the file name suffixes must not be empty")
    keys = []
    seen = set()
    for root, dirs, files in os.walk(gt_dir, followlinks=True):  # linked sub-folders are read too
        real = os.path.realpath(root)
        if real in seen:  # reached again through a link: counted once
            dirs[:] = []
            continue
        seen.add(real)
        dirs.sort()
        for f in files:
            if f.endswith(gt_suffix) and len(f) > len(gt_suffix):
                rel = os.path.relpath(os.path.join(root, f), gt_dir)
                keys.append(rel[: -len(gt_suffix)])
    keys.sort()
    if not keys:
        raise ValueError(f"no ground truth label maps (*{gt_suffix}) under {gt_dir}")
    pairs = []
    missing = []
    for k in keys:
        pp = os.path.join(pred_dir, k + pred_suffix)
        if not os.path.isfile(pp):
            missing.append(pp)
        pairs.append((os.path.join(gt_dir, k + gt_suffix), pp))
    if missing:
        more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
        raise ValueError(f"prediction file missing: {missing[0]}{more}")
    return pairs


def evaluate_folders(gt_dir, pred_dir, num_classes: int, ignore_index: int = 255,
                     dilation_ratio: float = 0.02, num_threads: Optional[int] = None,
                     class_names: Union[None, str, os.PathLike, Sequence[str]] = None,
                     gt_suffix: str = ".png",
                     pred_suffix: str = ".png", reduce_zero_label: bool = False,
                     max_pixels: Optional[int] = DEFAULT_MAX_PIXELS) -> Dict[str, object]:
    """mIoU and Boundary IoU of a folder of predicted PNG label maps.

    Ground truth and prediction files pair up by relative path
    (:func:`pair_label_maps`); the parameters are :class:`SemanticEvaluator`'s,
    and ``max_pixels`` :meth:`SemanticEvaluator.process_files`'s, except
    ``class_names``, which may also be the path of a file of names
    (:func:`~boundary_api.semantic.labelmaps.read_class_names`: one a line,
    or a ``.json`` list; what ``boundary-eval semantic --class-names`` gives).

    Returns
    -------
    dict
        :meth:`SemanticEvaluator.evaluate`'s result.
    """
    if isinstance(class_names, (str, os.PathLike)):
        from .labelmaps import read_class_names

        class_names = read_class_names(class_names, num_classes)
    ev = SemanticEvaluator(num_classes, ignore_index=ignore_index, dilation_ratio=dilation_ratio,
                           num_threads=num_threads, class_names=class_names,
                           reduce_zero_label=reduce_zero_label)
    pairs = pair_label_maps(gt_dir, pred_dir, gt_suffix, pred_suffix)
    log.info("evaluating %d label map pairs", len(pairs))
    ev.process_files([g for g, _ in pairs], [p for _, p in pairs], max_pixels=max_pixels)
    return ev.evaluate()
