"""Panoptic Quality (PQ) and Boundary PQ on COCO-format panoptic segmentation.

:func:`pq_compute` has the signature, the return value and the printed table
of the COCO panoptic API's ``pq_compute`` (github.com/cocodataset/panopticapi),
and follows its rules:

* a ground truth segment and a predicted segment of the same category match
  when their IoU is above 0.5 (so at most one match per segment); crowd ground
  truth segments never match;
* the union of a pair leaves out the predicted pixels that lie on VOID (id 0)
  in the ground truth;
* unmatched non-crowd ground truth segments are false negatives;
* an unmatched predicted segment is a false positive unless more than half of
  it lies on VOID or on a crowd region of its category;
* PQ, SQ and RQ are averaged over the categories that have at least one true
  positive, false positive or false negative, for All, Things and Stuff.

With ``iou_type="boundary"`` the IoU of a pair, both for matching and in the
SQ sum, is ``min(mask IoU, boundary IoU)``: Boundary PQ (Cheng et al.,
"Boundary IoU: Improving Object-Centric Image Segmentation Evaluation",
CVPR 2021).  The boundary of a segment is computed on its own mask with the
same kernel as the instance evaluation (:mod:`boundary_api.masks.boundary`):
``M AND NOT erode(M)``, a ``(2d+1) x (2d+1)`` square, outside the image
counting as background, ``d = dilation_pixels(h, w, dilation_ratio)``.  As in
the published reference, the boundary union of a pair also leaves out the
predicted boundary pixels that lie on VOID.  Boundaries are only computed for
pairs whose mask IoU is above 0.5 (no other pair can match), so Boundary PQ
costs little more than PQ.

Cityscapes
----------
The same function evaluates Cityscapes panoptic segmentation once the ground
truth is converted to the COCO panoptic format, as ``cityscapesscripts`` does::

    CITYSCAPES_DATASET=/data/cityscapes csCreatePanopticImgs   # writes, under gtFine/,
    #   cityscapes_panoptic_val.json  and  cityscapes_panoptic_val/*_panoptic.png

    pq_compute("gtFine/cityscapes_panoptic_val.json", "pred.json",
               gt_folder="gtFine/cityscapes_panoptic_val", pred_folder="pred/",
               iou_type="boundary", dilation_ratio=0.005)

Predictions use the same format, with the Cityscapes label ids (not train
ids) as ``category_id`` and ``image_id`` equal to the ground truth's
(``<city>_<seq>_<frame>``).  The paper's Cityscapes setting is a boundary
width of 0.5% of the image diagonal, ``dilation_ratio=0.005`` (COCO: 0.02).

Boundaries never depend on segment ids (``boundary_mode="per_segment"``, the
default).  The published reference builds the boundaries on one label map,
overwriting each segment's interior with a marker (largest category id + 1),
so a segment whose id equals that marker (e.g. with Cityscapes train ids) or
the id 0 listed as a segment gets another boundary, and renaming segment ids
can change its Boundary PQ.  ``boundary_mode="reference"`` reproduces that,
for published numbers; both modes give the same result on every image where
no segment id equals the marker and no segment has the id 0.

Otherwise the results equal the reference's.  Differences, all on input it
would mishandle: segment ids must be unique within an image, each image may
have one prediction and every category_id must be a known category
(otherwise a ValueError); a missing ``iscrowd`` counts as 0; single-channel
PNGs are read as ids; a group with no category to average (e.g. no Stuff
categories) reports zeros and ``n = 0`` instead of failing with
ZeroDivisionError.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..masks import _boundary, _idmaps
from . import _kernels
from .._io import read_json
from .._parallel import resolve_threads, run_ranges
from ..masks.boundary import check_dilation_ratio, dilation_pixels
from ._checks import (PanopticKeyError, _check_categories, _folder, _gt_segments, _pred_segments,
                      default_folder, suspect)
from .._io import warn_large_dilation_ratio
from .idmaps import _MAX_ID, DEFAULT_MAX_PIXELS, _Buffers, _read_runs, check_max_pixels

__all__ = ["pq_compute"]

log = logging.getLogger(__name__)

VOID = 0
_GROUPS = (("All", None), ("Things", True), ("Stuff", False))

#: how segment boundaries are built for Boundary PQ (see the module notes)
BOUNDARY_MODES = ("per_segment", "reference")

# ---------------------------------------------------------------------------
# per image
# ---------------------------------------------------------------------------

class _Job:
    __slots__ = ("image_id", "gt_path", "pred_path", "gt_segs", "pred_segs")

    def __init__(self, image_id, gt_path, pred_path, gt_segs, pred_segs):
        self.image_id = image_id
        self.gt_path = gt_path
        self.pred_path = pred_path
        self.gt_segs = gt_segs
        self.pred_segs = pred_segs


def _read(path: str, what: str, image_id, max_pixels: Optional[int], buffers: Optional[_Buffers]):
    """``(height, width, ends, ids)``: the image's runs (``_idmaps.pan_ids_to_runs``)."""
    return _read_runs(path, max_pixels, buffers, f"image {image_id!r}: {what} PNG not found: {path}")


def _evaluate_image(job: _Job, boundary: bool, ratio: float, marker: Optional[int],
                    max_pixels: Optional[int] = DEFAULT_MAX_PIXELS,
                    buffers: Optional[_Buffers] = None) -> Dict[int, list]:
    """Per-category [iou_sum, tp, fp, fn] of one image (``buffers``: decoding
    memory reused from image to image)."""
    image_id = job.image_id
    gt = _read(job.gt_path, "ground truth", image_id, max_pixels, buffers)
    pred = _read(job.pred_path, "prediction", image_id, max_pixels, buffers)
    if gt[:2] != pred[:2]:
        raise ValueError(f"image {image_id!r}: the prediction PNG is {pred[0]}x{pred[1]} "
                         f"but the ground truth PNG is {gt[0]}x{gt[1]}")
    gt_segs, pred_segs = job.gt_segs, job.pred_segs

    # (pairs of ids on some pixel, in (gt id, pred id) order, and their counts)
    g_ids, p_ids, inters = _kernels.pan_run_pair_counts(gt[2], gt[3], pred[2], pred[3])

    pred_area: Dict[int, int] = {}
    on_void: Dict[int, int] = {}
    for g, p, c in zip(g_ids, p_ids, inters):
        pred_area[p] = pred_area.get(p, 0) + c
        if g == VOID:
            on_void[p] = c
    for p in sorted(pred_area):
        if p not in pred_segs and p != VOID:
            raise PanopticKeyError(f"image {image_id!r}: segment {p} is in the prediction PNG but not in "
                                   "the prediction JSON")
    missing = [p for p in pred_segs if p not in pred_area]
    if missing:
        raise PanopticKeyError(f"image {image_id!r}: segment(s) {missing} of the prediction JSON are not in "
                               "the prediction PNG")

    # candidate pairs, in (gt id, pred id) order as in the reference
    matches: List[list] = []   # [gt id, pred id, iou]
    for g, p, inter in zip(g_ids, p_ids, inters):
        gs = gt_segs.get(g)
        if gs is None:
            continue
        pc = pred_segs.get(p)
        if pc is None or gs[1] or gs[0] != pc:
            continue
        union = pred_area[p] + gs[2] - inter - on_void.get(p, 0)
        if union <= 0:
            raise ValueError(f"image {image_id!r}: ground truth segment {g} has 'area' {gs[2]} in the JSON, "
                             f"smaller than its overlap with predicted segment {p} ({inter} pixels)")
        iou = inter / union
        if iou > 0.5:
            matches.append([g, p, iou])

    if boundary and matches:
        _apply_boundary_iou(matches, gt, pred, gt_segs, pred_segs, ratio, marker)

    stats: Dict[int, list] = {}

    def cat_stat(cat):
        s = stats.get(cat)
        if s is None:
            s = stats[cat] = [0.0, 0, 0, 0]
        return s

    gt_matched = set()
    pred_matched = set()
    for g, p, iou in matches:
        if iou > 0.5:
            s = cat_stat(gt_segs[g][0])
            s[1] += 1
            s[0] += iou
            gt_matched.add(g)
            pred_matched.add(p)

    crowd_of_cat: Dict[int, int] = {}
    for g, (cat, crowd, _area) in gt_segs.items():
        if g in gt_matched:
            continue
        if crowd:
            crowd_of_cat[cat] = g
            continue
        cat_stat(cat)[3] += 1

    pair_count = None
    for p, cat in pred_segs.items():
        if p in pred_matched:
            continue
        ignored = on_void.get(p, 0)
        if cat in crowd_of_cat:
            if pair_count is None:
                pair_count = dict(zip(zip(g_ids, p_ids), inters))
            ignored += pair_count.get((crowd_of_cat[cat], p), 0)
        if ignored / pred_area[p] > 0.5:
            continue
        cat_stat(cat)[2] += 1
    return stats


def _apply_boundary_iou(matches: List[list], gt: tuple, pred: tuple, gt_segs, pred_segs,
                        ratio: float, marker: Optional[int]) -> None:
    """Replace each pair's mask IoU by min(mask IoU, boundary IoU), in place
    (``gt``, ``pred``: the images as :func:`_read` gives them)."""
    h, w = gt[0], gt[1]
    d = dilation_pixels(h, w, ratio)
    # marker: the reference's interior marker, None unless boundary_mode="reference"
    if marker is not None and (marker == VOID or marker in gt_segs or marker in pred_segs or VOID in gt_segs):
        stats = _literal_boundary_stats(matches, _idmaps.pan_runs_to_ids(gt[2], gt[3], h, w),
                                        _idmaps.pan_runs_to_ids(pred[2], pred[3], h, w),
                                        gt_segs, pred_segs, d, marker)
    else:
        # (distinct: a segment matches at most once, unless a JSON 'area' is wrong)
        g_sel = sorted({m[0] for m in matches})
        p_sel = sorted({m[1] for m in matches})
        g_index = {g: i for i, g in enumerate(g_sel)}
        p_index = {p: i for i, p in enumerate(p_sel)}
        pair_g = np.array([g_index[m[0]] for m in matches], np.int64)
        pair_p = np.array([p_index[m[1]] for m in matches], np.int64)
        g_sel = np.array(g_sel, np.uint32)
        p_sel = np.array(p_sel, np.uint32)
        stats = zip(*_kernels.pan_run_boundary_pairs(gt[2], gt[3], pred[2], pred[3], h, w,
                                                     g_sel, p_sel, pair_g, pair_p, d))
    for m, (g_area, p_area, inter, p_void) in zip(matches, stats):
        union = p_area + g_area - inter - p_void
        biou = inter / union if union > 0 else 0.0
        m[2] = min(m[2], biou)


def _literal_boundary_stats(matches, gt, pred, gt_segs, pred_segs, d, marker):
    """Boundary statistics exactly as the reference builds them.

    Used only with ``boundary_mode="reference"``, for the rare images where
    a segment id equals the reference's interior marker (largest category id
    + 1), the marker is 0, or the ground truth lists a segment with id 0:
    segments are processed in JSON order on one label map, each segment's
    interior being overwritten by the marker before the next segment's mask
    is taken.
    """
    def label_map(ids, segs):
        bmap = ids.copy()
        area = {}
        for sid in segs:
            if not 0 <= sid <= _MAX_ID:
                area[sid] = 0
                continue
            mask = bmap == sid
            bnd = _boundary.boundary_dense(mask.view(np.uint8), d).view(bool)
            bmap[mask] = marker
            bmap[bnd] = sid
            area[sid] = int(np.count_nonzero(bnd))
        return bmap, area

    gb, g_area = label_map(gt, gt_segs)
    pb, p_area = label_map(pred, pred_segs)
    keys, counts = _kernels.pan_pair_counts(gb, pb)
    count = dict(zip(keys.tolist(), counts.tolist()))
    return [(g_area[g], p_area[p], count.get(g << 32 | p, 0), count.get(VOID << 32 | p, 0))
            for g, p, _ in matches]


# ---------------------------------------------------------------------------
# averages and the table
# ---------------------------------------------------------------------------

def _pq_average(stat: Dict[int, list], categories: Dict[int, dict], isthing: Optional[bool]):
    """Per-category and averaged PQ, SQ, RQ, with the COCO panoptic API's
    types: numpy float64 where it sums numpy IoUs (categories with a true
    positive, and averages over them), a Python float or int 0 elsewhere."""
    pq = sq = rq = 0
    n = 0
    per_class: Dict[int, dict] = {}
    for label, info in categories.items():
        if isthing is not None and (info["isthing"] == 1) != isthing:
            continue
        iou, tp, fp, fn = stat.get(label, (0.0, 0, 0, 0))
        if tp + fp + fn == 0:
            per_class[label] = {"pq": 0.0, "sq": 0.0, "rq": 0.0, "tp": 0, "fp": 0, "fn": 0}
            continue
        if tp:
            iou = np.float64(iou)   # a sum of numpy IoUs in the COCO panoptic API
        n += 1
        denom = tp + 0.5 * fp + 0.5 * fn
        pq_class = iou / denom
        sq_class = iou / tp if tp != 0 else 0
        rq_class = tp / denom
        per_class[label] = {"pq": pq_class, "sq": sq_class, "rq": rq_class, "tp": tp, "fp": fp, "fn": fn}
        pq += pq_class
        sq += sq_class
        rq += rq_class
    if n == 0:
        return {"pq": 0.0, "sq": 0.0, "rq": 0.0, "n": 0}, per_class
    return {"pq": pq / n, "sq": sq / n, "rq": rq / n, "n": n}, per_class


def _print_core_lines(n: int, cores: int) -> None:
    """The COCO panoptic API's progress lines, for its split of ``n`` images
    over ``cores`` workers (``numpy.array_split``), worker after worker."""
    sizes = [n // cores + (1 if p < n % cores else 0) for p in range(cores)]
    print("Number of cores: {}, images per core: {}".format(cores, sizes[0]))
    for p, k in enumerate(sizes):
        for idx in range(0, k, 100):
            print("Core: {}, {} from {} images processed".format(p, idx, k))
        print("Core: {}, all {} images processed".format(p, k))


def _print_table(results: dict) -> None:
    print("{:10s}| {:>5s}  {:>5s}  {:>5s} {:>5s}".format("", "PQ", "SQ", "RQ", "N"))
    print("-" * (10 + 7 * 4))
    for name, _ in _GROUPS:
        r = results[name]
        print("{:10s}| {:5.1f}  {:5.1f}  {:5.1f} {:5d}".format(
            name, 100 * r["pq"], 100 * r["sq"], 100 * r["rq"], r["n"]))


# ---------------------------------------------------------------------------
# public entry point
# ---------------------------------------------------------------------------

def pq_compute(gt_json_file, pred_json_file, gt_folder=None, pred_folder=None,
               iou_type: str = "segm", dilation_ratio: float = 0.02,
               num_threads: Optional[int] = None,
               max_pixels: Optional[int] = DEFAULT_MAX_PIXELS,
               boundary_mode: str = "per_segment", strict: bool = False,
               print_progress: bool = True) -> Dict[str, Any]:
    """Panoptic Quality, or Boundary PQ, of COCO-format panoptic predictions.

    Drop-in for the COCO panoptic API's ``pq_compute`` (same rules, return
    value and printed table), with ``iou_type="boundary"`` for Boundary PQ.

    Parameters
    ----------
    gt_json_file : str or os.PathLike
        COCO panoptic ground truth JSON (``annotations`` with ``image_id``,
        ``file_name`` and ``segments_info`` of ``id``, ``category_id``,
        ``area``, ``iscrowd``; ``categories`` with ``id`` and ``isthing``).
    pred_json_file : str or os.PathLike
        Predictions JSON: ``annotations`` with ``image_id``, ``file_name`` and
        ``segments_info`` of ``id`` and ``category_id``.
    gt_folder, pred_folder : str or os.PathLike, optional
        Folders of the PNGs; default: the JSON path without ``.json``.
    iou_type : {"segm", "boundary"}, optional
        ``"segm"``: PQ with mask IoU.  ``"boundary"``: Boundary PQ, with
        ``min(mask IoU, boundary IoU)``.
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (boundary only):
        0.02 for COCO, 0.005 for Cityscapes (the paper's settings).
    num_threads : int, optional
        Images evaluated in parallel (default: all cores).  The result does
        not depend on it.
    max_pixels : int or None, optional
        Largest PNG (width x height) read, checked from each file's header
        before decoding: a decompression-bomb guard (default
        ``2**27``; ``None``: no limit).
    boundary_mode : {"per_segment", "reference"}, optional
        ``"per_segment"`` (default): each segment's boundary is computed on
        its own mask, so the result does not depend on segment ids.
        ``"reference"``: the published reference's label-map construction,
        which differs where a segment id equals the largest category id + 1
        or the id 0 is listed as a segment; only to reproduce published
        numbers (see ``docs/known_differences.md``).
    strict : bool, optional
        Refuse (ValueError) input the COCO panoptic API accepts and this
        function only warns about: a segment id listed twice in an image (the
        last entry counts), a ground truth segment of an unknown category (it
        counts for no category), an image with two predictions (the last
        counts) or two ground truth annotations (evaluated twice), a category
        listed twice (the last counts) or with an ``isthing`` other than 0
        or 1 (stuff).
    print_progress : bool, optional
        Print the COCO panoptic API's lines around the table (the files,
        ``Number of cores: ...``, ``Core: i, ... images processed``,
        ``Time elapsed: ...``); the table is always printed.

    Returns
    -------
    dict
        ``{"All": {"pq", "sq", "rq", "n"}, "per_class": {category_id: {"pq",
        "sq", "rq", "tp", "fp", "fn"}}, "Things": {...}, "Stuff": {...}}``,
        values as fractions, of the COCO panoptic API's types (numpy float64
        where it sums numpy IoUs, else float; ``sq`` int 0 for a category
        with false positives or negatives but no true positive).  A category without true positives, false
        positives or false negatives has PQ, SQ and RQ 0 (as in the COCO
        panoptic API) and ``tp + fp + fn == 0``: its PQ is undefined.

    Raises
    ------
    ValueError
        On missing files or folders, malformed JSON, an image without a
        prediction, or PNGs of different sizes.  A segment in a prediction
        PNG but not in its JSON (or the reverse) or a predicted segment of an
        unknown category, or a missing JSON field the COCO panoptic API needs,
        raises a ``PanopticKeyError``, a subclass of both ValueError and
        KeyError (the COCO panoptic API's class).
    TypeError
        On arguments of the wrong type.

    Examples
    --------
    >>> res = pq_compute("panoptic_val2017.json", "pred.json",
    ...                  iou_type="boundary")               # doctest: +SKIP
    """
    start = time.perf_counter()
    if iou_type not in ("segm", "boundary"):
        raise ValueError(f"iou_type must be 'segm' or 'boundary', got {iou_type!r}")
    if boundary_mode not in BOUNDARY_MODES:
        raise ValueError(f"boundary_mode must be 'per_segment' or 'reference', got {boundary_mode!r}")
    ratio = check_dilation_ratio(dilation_ratio)
    threads = resolve_threads(num_threads)
    max_pixels = check_max_pixels(max_pixels)
    boundary = iou_type == "boundary"
    if boundary:
        warn_large_dilation_ratio(ratio, log)

    gt_src = os.fspath(gt_json_file) if isinstance(gt_json_file, (str, os.PathLike)) else gt_json_file
    pred_src = os.fspath(pred_json_file) if isinstance(pred_json_file, (str, os.PathLike)) else pred_json_file
    gt_json = read_json(gt_src, "ground truth JSON")
    pred_json = read_json(pred_src, "prediction JSON")
    # the COCO panoptic API prints the files once it has the categories
    # (before any other check)
    cats = gt_json.get("categories") if isinstance(gt_json, dict) else None
    if print_progress and isinstance(cats, list) and all(isinstance(c, dict) and "id" in c for c in cats):
        def shown(folder, src):
            folder = default_folder(src) if folder is None else folder
            return os.fspath(folder) if isinstance(folder, (str, os.PathLike)) else folder

        print("Evaluation panoptic segmentation metrics:")
        print("Ground truth:")
        print(f"\tSegmentation folder: {shown(gt_folder, gt_src)}")
        print(f"\tJSON file: {gt_src}")
        print("Prediction:")
        print(f"\tSegmentation folder: {shown(pred_folder, pred_src)}")
        print(f"\tJSON file: {pred_src}")
    categories = _check_categories(gt_json, gt_src, strict)
    if not isinstance(pred_json, dict) or not isinstance(pred_json.get("annotations"), list):
        raise ValueError(f"{pred_src}: not a COCO panoptic prediction file (no list of 'annotations')")
    gt_dir = _folder(gt_folder, gt_src, "ground truth")
    pred_dir = _folder(pred_folder, pred_src, "predicted")
    log.info("ground truth: %s (PNGs in %s); predictions: %s (PNGs in %s)", gt_src, gt_dir, pred_src, pred_dir)

    preds: Dict[Any, Tuple[str, Dict[int, int]]] = {}
    for i, ann in enumerate(pred_json["annotations"]):
        segs = _pred_segments(ann, i, pred_src, categories, strict)
        if ann["image_id"] in preds:
            suspect(f"{pred_src}: image {ann['image_id']!r} has more than one prediction; the last counts",
                    strict, stacklevel=3)
        preds[ann["image_id"]] = (ann["file_name"], segs)
    jobs: List[_Job] = []
    seen = set()
    for i, ann in enumerate(gt_json["annotations"]):
        segs = _gt_segments(ann, i, gt_src, categories, strict)
        image_id = ann["image_id"]
        if image_id in seen:
            suspect(f"{gt_src}: image {image_id!r} has more than one ground truth annotation; each is "
                    "evaluated", strict, stacklevel=3)
        seen.add(image_id)
        if image_id not in preds:
            raise ValueError(f"no prediction for the image with id {image_id!r} in {pred_src}")
        pred_file, pred_segs = preds[image_id]
        jobs.append(_Job(image_id, os.path.join(gt_dir, ann["file_name"]),
                         os.path.join(pred_dir, pred_file), segs, pred_segs))
    extra = len(set(preds) - seen)
    if extra > 0:
        log.warning("%d predicted image(s) have no ground truth and are ignored", extra)

    # the reference's interior marker (boundary_mode="reference" only); it
    # only matters if a segment id equals it or the id 0 is a segment
    marker = max(categories) + 1 if boundary and boundary_mode == "reference" else None
    if marker is not None and not 0 <= marker <= _MAX_ID:
        marker = None

    failed = threading.Event()

    def run(lo: int, hi: int):
        out = []
        buffers = _Buffers()
        for job in jobs[lo:hi]:
            if failed.is_set():
                break
            try:
                out.append(_evaluate_image(job, boundary, ratio, marker, max_pixels, buffers))
            except BaseException:
                failed.set()
                raise
        return out

    n = len(jobs)
    chunk = max(1, min(16, n // (4 * threads) if threads > 1 else 16))
    ranges = [(lo, min(n, lo + chunk)) for lo in range(0, n, chunk)]
    per_image = run_ranges(run, ranges, threads, progress="Boundary PQ" if boundary else "PQ", total=n)
    if print_progress:
        _print_core_lines(n, threads)

    # accumulate image by image, in the ground truth's order
    stat: Dict[int, list] = {}
    for part in per_image:
        for img in part:
            for cat, (iou, tp, fp, fn) in img.items():
                s = stat.get(cat)
                if s is None:
                    s = stat[cat] = [0.0, 0, 0, 0]
                s[0] += iou
                s[1] += tp
                s[2] += fp
                s[3] += fn

    results: Dict[str, Any] = {}
    for name, isthing in _GROUPS:
        results[name], per_class = _pq_average(stat, categories, isthing)
        if results[name]["n"] == 0:
            log.warning("%s: no category with a true positive, false positive or false negative; "
                        "reporting 0", name)
        if name == "All":
            results["per_class"] = per_class
    _print_table(results)
    if print_progress:
        print("Time elapsed: {:0.2f} seconds".format(time.perf_counter() - start))
    log.info("%s of %d images in %.2f s", "Boundary PQ" if boundary else "PQ", n, time.perf_counter() - start)
    return results

