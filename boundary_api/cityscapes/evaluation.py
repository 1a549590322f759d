"""Cityscapes instance segmentation: AP and Boundary AP, as cityscapesScripts computes AP.

A drop-in for cityscapesScripts' ``evalInstanceLevelSemanticLabeling`` (and for
the Boundary IoU reference's fork of it) on the same files::

    from boundary_api.cityscapes import evaluate_cityscapes, print_results

    res = evaluate_cityscapes("gtFine/val", "results/", iou_type="boundary")
    print_results(res)                # cityscapesScripts' table
    res["AP"], res["AP50"], res["per_class"]["car"]["AP"]

Inputs are cityscapesScripts' formats: ground truth
``<gt_dir>/<city>/<city>_<seq>_<frame>_gtFine_instanceIds.png`` (a label id for
stuff, ``label_id * 1000 + k`` for instances, label ids of instance classes
below 1000 for *groups*); results one ``<city>_<seq>_<frame>*.txt`` per image
anywhere under ``result_dir``, each line ``relPath labelID confidence`` with
``relPath`` a PNG (relative to the text file) whose nonzero pixels are the mask.

Rules (cityscapesScripts'): the 8 classes with instances that are evaluated
(person, rider, car, truck, bus, train, motorcycle, bicycle); a prediction is
paired with each ground-truth segment of its class it intersects (in boundary
mode: whose mask *and* boundary it intersects); at each threshold of
``0.5, 0.55, ..., 0.95`` a pair matches when its overlap is strictly greater;
ground truth counts when its id is >= 1000 and it has >= 100 pixels; a second
match of one ground truth is a false positive (the higher score is kept); an
unmatched prediction is a false positive unless the fraction of its pixels on
void, on groups and on small instances exceeds the threshold.  AP is
cityscapesScripts' step integration of the precision/recall curve with a
(recall 0, precision 1) point added; NaN for a class without ground truth, 0
for a class with ground truth but no (counted) predictions.  ``AP`` and
``AP50`` are means over the classes that are not NaN.

``iou_type="segm"`` gives cityscapesScripts' numbers; ``"boundary"`` uses
``min(mask IoU, Boundary IoU)`` as the overlap, the boundary being the inner
band of width ``d = max(1, round(dilation_ratio * image diagonal))`` (pixels at
the image edge count as boundary), computed per segment on run lengths.

The result dict holds cityscapesScripts' result dictionary key for key and
type for type (numpy float64 averages, its distance settings), beside this
package's ``AP``, ``AP50`` and ``per_class`` summary.  Bad input raises an
exception naming the file and line, of cityscapesScripts' class and a
ValueError: :class:`CityscapesInputError` (also a ``SystemExit``) where it
prints an error and exits, :class:`CityscapesKeyError` (also a ``KeyError``)
for an unknown label id, :class:`CityscapesFileNotFoundError` (also a
``FileNotFoundError``) for a missing image or mask.  What it accepts silently
(lists of different lengths, empty lists, a repeated ground-truth file) is
accepted with a warning, refused with ``strict=True``.

Differences from cityscapesScripts: no ``gtInstances.json`` cache and no
``matches.json`` are written (nothing is written at all); blank lines and
extra spaces in prediction files are accepted; a confidence that is not
finite is refused.
"""
from __future__ import annotations

import logging
import math
import numbers
import os
from typing import Dict, List, Optional, Sequence

import numpy as np

from .._parallel import resolve_threads, run_ranges, split_by_cost
from . import _kernels
from ..masks import _idmaps
from ..masks.boundary import check_dilation_ratio, dilation_pixels
from ..masks.imagefiles import DEFAULT_MAX_PIXELS, check_max_pixels

from .files import (CLASSES, CityscapesFileNotFoundError, CityscapesInputError, CityscapesKeyError,
                    DISTANCE_THRESHOLDS, IOU_TYPES, LABELS, MIN_REGION_SIZE, MIN_REGION_SIZES,
                    MIN_STEREO_DENSITIES, OVERLAPS, _CLASS_OF_LABEL, _PngMask, _VOID_LABELS, _mask_source,
                    _read_png, _suspect, find_ground_truth, find_predictions, read_prediction_file)

__all__ = [
    "evaluate_cityscapes",
    "evaluate_img_lists",
    "CityscapesInputError",
    "CityscapesKeyError",
    "CityscapesFileNotFoundError",
    "evaluate_arrays",
    "find_ground_truth",
    "find_predictions",
    "read_prediction_file",
    "print_results",
    "CLASSES",
    "OVERLAPS",
]

logger = logging.getLogger(__name__)


# ----------------------------------------------------------------------------
# one image
# ----------------------------------------------------------------------------
class _GroundTruth:
    """Segments of the evaluated classes in one ground-truth id map.

    ``index`` maps every pixel to 1..K (the K segments, in id order), K+1
    (void) or 0 (anything else); ``bindex`` holds the segments' boundaries
    the same way (0 off them).
    """

    def __init__(self, ids: np.ndarray, name: str, iou_type: str, ratio: float):
        if ids.ndim != 2 or ids.size == 0:
            raise ValueError(f"{name}: ground truth must be a non-empty 2-D id map, got shape {ids.shape}")
        if not np.issubdtype(ids.dtype, np.integer):
            raise ValueError(f"{name}: ground truth ids must be integers, got dtype {ids.dtype}")
        self.shape = ids.shape
        if ids.dtype == np.uint16:  # the format's type
            ids = np.ascontiguousarray(ids)
            counts = _kernels.cs_hist16(ids)
            present = np.flatnonzero(counts)
            counts = counts[present]
        else:
            flat = ids.reshape(-1)
            lo = int(flat.min())
            if lo < 0:
                raise ValueError(f"{name}: negative ground truth id {lo}")
            if int(flat.max()) < (1 << 22):
                counts = np.bincount(flat, minlength=1)
                present = np.flatnonzero(counts)
                counts = counts[present]
            else:
                present, counts = np.unique(flat, return_counts=True)
        hi = int(present[-1])
        label = np.where(present < 1000, present, present // 1000)
        unknown = [int(v) for v, lab in zip(present, label) if int(lab) not in LABELS]
        if unknown:
            raise ValueError(f"{name}: pixel value {unknown[0]} is not a Cityscapes id "
                             f"(label id, or label id * 1000 + instance number)")
        cls = np.array([_CLASS_OF_LABEL.get(int(lab), -1) for lab in label], np.int64)
        sel = cls >= 0
        self.inst_id = present[sel].astype(np.int64)
        self.cls = cls[sel]
        self.pixels = counts[sel].astype(np.int64)
        k = len(self.inst_id)
        lut = np.zeros(hi + 1, np.uint32)
        lut[self.inst_id] = np.arange(1, k + 1, dtype=np.uint32)
        void = present[np.isin(present, _VOID_LABELS)]
        lut[void] = k + 1
        self.k = k + 2
        if ids.dtype == np.uint16:
            self.index = _kernels.cs_relabel16(np.ascontiguousarray(ids), lut)
        else:
            self.index = np.ascontiguousarray(lut[ids])
        self.d = dilation_pixels(ids.shape[0], ids.shape[1], ratio) if iou_type == "boundary" else 0
        if iou_type == "boundary" and k:
            self.bindex, bpix = _idmaps.pan_segment_boundaries(self.index, np.arange(1, k + 1, dtype=np.uint32), self.d)
            self.bpixels = bpix.astype(np.int64)
        else:
            self.bindex = None
            self.bpixels = np.zeros(k, np.int64)


def _image_records(gt: _GroundTruth, preds, name: str):
    """Per-image pairing: ground truth (class, id, pixels, boundary pixels) and
    predictions (class, score, pixels, boundary pixels, void pixels, pairs)."""
    boundary = gt.d > 0
    out_preds = []
    for source, label_id, score, load in preds:
        c = _CLASS_OF_LABEL.get(label_id, -1)
        if c < 0:
            continue  # a label that is not evaluated
        mask = load()
        if len(mask.shape) != 2 or mask.shape != gt.shape:
            raise ValueError(f"{source}: mask is {'x'.join(map(str, mask.shape))} but the ground truth "
                             f"{name} is {gt.shape[0]}x{gt.shape[1]}")
        stats = None
        if isinstance(mask, _PngMask):
            stats = _kernels.cs_png_mask_stats(mask.zdata, mask.shape[0], mask.shape[1], gt.index, gt.bindex,
                                            gt.k, gt.d)
            if stats is None:  # not decodable here: Pillow reads it (or says what is wrong)
                mask = _read_png(mask.path, mask.what, True)
        if stats is None:
            if mask.dtype != np.uint8:
                mask = (mask != 0).view(np.uint8) if mask.dtype == bool else (mask != 0).astype(np.uint8)
            mask = np.ascontiguousarray(mask)
            stats = _kernels.cs_mask_stats(mask, gt.index, gt.bindex, gt.k, gt.d)
        area, inter, barea, binter = stats
        if area == 0:
            continue  # empty masks are skipped
        seg = np.flatnonzero(inter[1:gt.k - 1]) if gt.k > 2 else np.zeros(0, np.int64)
        seg = seg[gt.cls[seg] == c]
        if boundary:
            seg = seg[binter[1:][seg] > 0]
        out_preds.append((c, float(score), int(area), int(barea), int(inter[gt.k - 1]),
                          seg, inter[1:][seg].astype(np.int64), binter[1:][seg].astype(np.int64)))
    return (gt.cls, gt.inst_id, gt.pixels, gt.bpixels), out_preds


# ----------------------------------------------------------------------------
# accumulation
# ----------------------------------------------------------------------------
def _average_precision(y_true: np.ndarray, y_score: np.ndarray, hard_fns: int) -> float:
    """cityscapesScripts' AP of one class and threshold (step integration of
    the precision/recall curve plus the point recall 0, precision 1)."""
    if len(y_score) == 0:
        return 0.0  # only the added point: the curve encloses no area
    order = np.argsort(y_score)
    scores = y_score[order]
    cum = np.cumsum(y_true[order])
    _, first = np.unique(scores, return_index=True)
    before = np.where(first > 0, cum[first - 1], 0.0)
    n_true = cum[-1]
    tp = n_true - before
    fp = len(scores) - first - tp
    fn = before + hard_fns
    precision = np.append(tp / (tp + fp), 1.0)
    recall = np.append(tp / (tp + fn), 0.0)
    widths = np.convolve(np.concatenate(([recall[0]], recall, [0.0])), [-0.5, 0.0, 0.5], "valid")
    return float(np.dot(precision, widths))


def _accumulate(images, boundary: bool) -> np.ndarray:
    """AP per class and threshold, shape (len(CLASSES), len(OVERLAPS))."""
    ap = np.zeros((len(CLASSES), len(OVERLAPS)))
    for c in range(len(CLASSES)):
        g_pix, g_bpix, g_id = [], [], []
        p_score, p_pix, p_void = [], [], []
        pair_p, pair_g, pair_i, pair_b = [], [], [], []
        n_g = n_p = 0
        for (cls, inst_id, pixels, bpixels), preds in images:
            local = np.full(len(cls), -1, np.int64)
            mine = np.flatnonzero(cls == c)
            local[mine] = np.arange(n_g, n_g + len(mine))
            g_pix.append(pixels[mine])
            g_bpix.append(bpixels[mine])
            g_id.append(inst_id[mine])
            n_g += len(mine)
            for pc, score, area, barea, void, seg, inter, binter in preds:
                if pc != c:
                    continue
                p_score.append(score)
                p_pix.append((area, barea))
                p_void.append(void)
                pair_p.append(np.full(len(seg), n_p, np.int64))
                pair_g.append(local[seg])
                pair_i.append(inter)
                pair_b.append(binter)
                n_p += 1
        g_pix = np.concatenate(g_pix) if g_pix else np.zeros(0, np.int64)
        g_bpix = np.concatenate(g_bpix) if g_bpix else np.zeros(0, np.int64)
        g_id = np.concatenate(g_id) if g_id else np.zeros(0, np.int64)
        eligible = (g_id >= 1000) & (g_pix >= MIN_REGION_SIZE)
        have_gt, have_pred = bool(eligible.any()), n_p > 0
        if not have_gt:
            ap[c] = np.nan
            continue
        if not have_pred:
            ap[c] = 0.0
            continue
        p_score = np.array(p_score, np.float64)
        p_area = np.array([a for a, _ in p_pix], np.int64)
        p_barea = np.array([b for _, b in p_pix], np.int64)
        p_void = np.array(p_void, np.int64)
        pp = np.concatenate(pair_p)
        pg = np.concatenate(pair_g)
        pi = np.concatenate(pair_i)
        pb = np.concatenate(pair_b)
        overlap = pi / (g_pix[pg] + p_area[pp] - pi)
        if boundary:
            overlap = np.minimum(overlap, pb / (g_bpix[pg] + p_barea[pp] - pb))
        # pixels an unmatched prediction has on groups and small instances
        # (a small group counts twice, as in cityscapesScripts)
        weight = (g_id[pg] < 1000).astype(np.int64) + (g_pix[pg] < MIN_REGION_SIZE)
        ignored = p_void + np.bincount(pp, weights=pi * weight, minlength=n_p).astype(np.int64)
        ignore_frac = ignored / p_area
        pair_ok = eligible[pg]
        n_eligible = int(eligible.sum())
        for t, th in enumerate(OVERLAPS):
            hit = overlap > th
            m = np.flatnonzero(hit & pair_ok)
            # per matched ground truth: the best score is a true positive,
            # every other matching prediction a false positive
            order = np.lexsort((-p_score[pp[m]], pg[m]))
            mg, ms = pg[m][order], p_score[pp[m]][order]
            first = np.ones(len(mg), bool)
            first[1:] = mg[1:] != mg[:-1]
            tp_scores, dup_scores = ms[first], ms[~first]
            hard_fns = n_eligible - len(tp_scores)
            found = np.zeros(n_p, bool)
            found[pp[hit]] = True
            fp_scores = p_score[~found & (ignore_frac <= th)]
            y_score = np.concatenate((tp_scores, dup_scores, fp_scores))
            y_true = np.concatenate((np.ones(len(tp_scores)), np.zeros(len(dup_scores) + len(fp_scores))))
            ap[c, t] = _average_precision(y_true, y_score, hard_fns)
    return ap


def _summarize(ap: np.ndarray, iou_type: str, ratio: Optional[float], n_images: int) -> dict:
    o50 = int(np.flatnonzero(np.isclose(OVERLAPS, 0.5))[0])
    with np.errstate(all="ignore"), _quiet_nan_warnings():
        # numpy float64, as cityscapesScripts' np.nanmean / np.average give them
        all_ap = np.nanmean(ap) if ap.size else np.float64("nan")
        all_ap50 = np.nanmean(ap[:, o50]) if ap.size else np.float64("nan")
    per_class, classes = {}, {}
    for c, name in enumerate(CLASSES):
        a, a50 = np.average(ap[c]), np.average(ap[c, o50:o50 + 1])
        per_class[name] = {"AP": float(a), "AP50": float(a50), "AP_per_threshold": [float(v) for v in ap[c]]}
        classes[name] = {"ap": a, "ap50%": a50}
    return {
        # cityscapesScripts' result dictionary, key for key and type for type
        # (its distance-dependent entries are for stereo data it does not use
        # either: resultApMatrix has the first distance range only)
        "averages": {"allAp": all_ap, "allAp50%": all_ap50, "classes": classes},
        "overlaps": OVERLAPS.tolist(),
        "minRegionSizes": list(MIN_REGION_SIZES),
        "distanceThresholds": list(DISTANCE_THRESHOLDS),
        "minStereoDensities": list(MIN_STEREO_DENSITIES),
        "instLabels": list(CLASSES),
        "resultApMatrix": [ap.tolist()],
        # this package's summary (Python floats)
        "AP": float(all_ap),
        "AP50": float(all_ap50),
        "per_class": per_class,
        "thresholds": [float(v) for v in OVERLAPS],
        "iou_type": iou_type,
        "dilation_ratio": ratio,
        "n_images": n_images,
    }


class _quiet_nan_warnings:
    def __enter__(self):
        import warnings

        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._w.__exit__(*exc)


# ----------------------------------------------------------------------------
# public entry points
# ----------------------------------------------------------------------------
def _check_options(iou_type, dilation_ratio, num_threads):
    if iou_type not in IOU_TYPES:
        raise ValueError(f"iou_type must be 'segm' or 'boundary', got {iou_type!r}")
    ratio = check_dilation_ratio(dilation_ratio)
    return ratio, resolve_threads(num_threads)


def _run(n_images: int, costs, work, iou_type: str, ratio: float, threads: int) -> dict:
    def block(lo, hi):
        return [work(i) for i in range(lo, hi)]

    ranges = split_by_cost(np.asarray(costs, np.float64), threads * 4)
    images = [r for part in run_ranges(block, ranges, threads) for r in part]
    ap = _accumulate(images, iou_type == "boundary")
    return _summarize(ap, iou_type, ratio if iou_type == "boundary" else None, n_images)


def evaluate_img_lists(prediction_files: Sequence, gt_files: Sequence, *, iou_type: str = "boundary",
                       dilation_ratio: float = 0.005, num_threads: Optional[int] = None,
                       max_pixels: Optional[int] = DEFAULT_MAX_PIXELS, strict: bool = False) -> dict:
    """Evaluate explicit lists of files (cityscapesScripts' ``evaluateImgLists``).

    Parameters
    ----------
    prediction_files : sequence of path
        One prediction text file per ground-truth file, in the same order.
    gt_files : sequence of path
        ``*_gtFine_instanceIds.png`` files.
    iou_type, dilation_ratio, num_threads, max_pixels
        As for :func:`evaluate_cityscapes`.
    strict : bool, optional
        Refuse (ValueError) what cityscapesScripts accepts silently and this
        function only warns about: lists of different lengths (the pairs up
        to the shorter length are evaluated), empty lists (every AP NaN), a
        ground-truth file listed twice (its last pairing counts), a mask
        listed twice in a prediction file (its last line counts).

    Returns
    -------
    dict
        As for :func:`evaluate_cityscapes`.
    """
    ratio, threads = _check_options(iou_type, dilation_ratio, num_threads)
    max_pixels = check_max_pixels(max_pixels)
    gt_files = [os.fspath(p) for p in gt_files]
    prediction_files = [os.fspath(p) for p in prediction_files]
    if len(gt_files) != len(prediction_files):
        _suspect(f"{len(prediction_files)} prediction files for {len(gt_files)} ground truth files; the "
                 f"first {min(len(gt_files), len(prediction_files))} pairs are evaluated", strict)
        n = min(len(gt_files), len(prediction_files))
        gt_files, prediction_files = gt_files[:n], prediction_files[:n]
    if not gt_files:
        _suspect("no ground truth files to evaluate: every AP is NaN", strict)
        return _summarize(np.full((len(CLASSES), len(OVERLAPS)), np.nan), iou_type,
                          ratio if iou_type == "boundary" else None, 0)
    # a repeated ground truth: its first place, its last prediction file (as
    # cityscapesScripts' dictionary of matches keyed by the file)
    pairs: Dict[str, List[str]] = {}
    for gt, pred in zip(gt_files, prediction_files):
        key = os.path.abspath(gt)
        if key in pairs:
            _suspect(f"ground truth file listed more than once: {gt}; its last pairing counts", strict)
            pairs[key][1] = pred
        else:
            pairs[key] = [gt, pred]
    gt_files = [g for g, _ in pairs.values()]
    prediction_files = [p for _, p in pairs.values()]
    pred_lists = [read_prediction_file(p, strict) for p in prediction_files]

    def work(i):
        gt = _GroundTruth(_read_png(gt_files[i], "ground truth image", False, max_pixels), gt_files[i],
                          iou_type, ratio)
        preds = [(m, lab, s, (lambda m=m: _mask_source(m, f"mask of {prediction_files[i]}", max_pixels)))
                 for m, lab, s in pred_lists[i]]
        return _image_records(gt, preds, gt_files[i])

    return _run(len(gt_files), [len(p) + 4 for p in pred_lists], work, iou_type, ratio, threads)


def evaluate_cityscapes(gt_dir, result_dir, *, iou_type: str = "boundary", dilation_ratio: float = 0.005,
                        num_threads: Optional[int] = None, max_pixels: Optional[int] = DEFAULT_MAX_PIXELS,
                        strict: bool = False) -> dict:
    """Cityscapes instance segmentation AP / Boundary AP of a results folder.

    Parameters
    ----------
    gt_dir : path
        Ground-truth folder such as ``gtFine/val`` (``<city>/*_gtFine_instanceIds.png``).
    result_dir : path
        Results folder: one ``<city>_<seq>_<frame>*.txt`` per ground-truth
        image (searched recursively), lines ``relPath labelID confidence``.
    iou_type : {"boundary", "segm"}, optional
        ``"boundary"``: Boundary AP (overlap ``min(mask IoU, Boundary IoU)``);
        ``"segm"``: cityscapesScripts' mask AP.
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (0.005, the
        paper's value for Cityscapes).  Unused for ``"segm"``.
    num_threads : int, optional
        Threads over images (default: all cores).
    max_pixels : int or None, optional
        Largest PNG (width x height) read, checked from each file's header
        before decoding: a decompression-bomb guard (default ``2**27``;
        ``None``: no limit).
    strict : bool, optional
        Refuse (ValueError) a mask listed twice in a prediction file, which
        cityscapesScripts accepts (its last line counts) and this function
        accepts with a warning.

    Returns
    -------
    dict
        ``"AP"``, ``"AP50"`` (NaN-means over classes), ``"per_class"``
        ``{name: {"AP", "AP50", "AP_per_threshold"}}``, ``"thresholds"``, and
        cityscapesScripts' keys ``"averages"`` (``allAp``, ``allAp50%``,
        ``classes``), ``"overlaps"``, ``"instLabels"``, ``"resultApMatrix"``.
        Fractions in [0, 1]; NaN for a class without ground truth.

    Raises
    ------
    ValueError
        Missing folders, an image without (or with several) prediction files,
        malformed lines, unknown label ids, unreadable or wrongly sized masks,
        ground-truth pixel values that are not Cityscapes ids.  Where
        cityscapesScripts exits (missing folders or prediction files,
        malformed lines) a :class:`CityscapesInputError`, also a SystemExit;
        an unknown label id a :class:`CityscapesKeyError`, also a KeyError; a
        missing image or mask a :class:`CityscapesFileNotFoundError`, also a
        FileNotFoundError.
    """
    gt_files = find_ground_truth(gt_dir)
    return evaluate_img_lists(find_predictions(gt_files, result_dir), gt_files, iou_type=iou_type,
                              dilation_ratio=dilation_ratio, num_threads=num_threads, max_pixels=max_pixels,
                              strict=strict)


def evaluate_arrays(gt_id_maps: Sequence, predictions: Sequence, *, iou_type: str = "boundary",
                    dilation_ratio: float = 0.005, num_threads: Optional[int] = None) -> dict:
    """The same evaluation on in-memory data.

    Parameters
    ----------
    gt_id_maps : sequence of (H, W) integer arrays
        Ground-truth id maps, as in ``*_gtFine_instanceIds.png``.
    predictions : sequence of sequences of dict
        For each image, its predictions: ``{"mask": (H, W) array (nonzero =
        foreground), "label_id": Cityscapes label id, "score": float}``.
    iou_type, dilation_ratio, num_threads, max_pixels
        As for :func:`evaluate_cityscapes`.

    Returns
    -------
    dict
        As for :func:`evaluate_cityscapes`.
    """
    ratio, threads = _check_options(iou_type, dilation_ratio, num_threads)
    gts, preds = list(gt_id_maps), list(predictions)
    if len(gts) != len(preds):
        raise ValueError(f"{len(preds)} prediction lists for {len(gts)} ground truth maps")
    if not gts:
        raise ValueError("no ground truth to evaluate")
    checked = []
    for i, plist in enumerate(preds):
        rows = []
        for j, p in enumerate(plist):
            where = f"predictions[{i}][{j}]"
            if not isinstance(p, dict) or not {"mask", "label_id", "score"} <= set(p):
                raise ValueError(f"{where}: expected a dict with 'mask', 'label_id' and 'score'")
            lab, score = p["label_id"], p["score"]
            if isinstance(lab, bool) or not isinstance(lab, numbers.Integral) or int(lab) not in LABELS:
                raise ValueError(f"{where}: unknown Cityscapes label id {lab!r}")
            if isinstance(score, bool) or not isinstance(score, numbers.Real) or not math.isfinite(score):
                raise ValueError(f"{where}: score must be a finite number, got {score!r}")
            mask = np.asarray(p["mask"])
            rows.append((where, int(lab), float(score), (lambda m=mask: m)))
        checked.append(rows)

    def work(i):
        ids = np.asarray(gts[i])
        gt = _GroundTruth(ids, f"gt_id_maps[{i}]", iou_type, ratio)
        return _image_records(gt, checked[i], f"gt_id_maps[{i}]")

    return _run(len(gts), [len(p) + 4 for p in checked], work, iou_type, ratio, threads)


def print_results(results: dict, file=None) -> None:
    """Print cityscapesScripts' table (class, AP, AP_50%) of a result dict."""
    import sys

    out = file or sys.stdout
    line_len = 50
    print("", file=out)
    print("#" * line_len, file=out)
    print("{:<15}:{:>15}{:>15}".format("what", "AP", "AP_50%"), file=out)
    print("#" * line_len, file=out)
    for name in CLASSES:
        c = results["averages"]["classes"][name]
        print("{:<15}:{:>15.3f}{:>15.3f}".format(name, c["ap"], c["ap50%"]), file=out)
    print("-" * line_len, file=out)
    print("{:<15}:{:>15.3f}{:>15.3f}".format("average", results["AP"], results["AP50"]), file=out)
    print("", file=out)
