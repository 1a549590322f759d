"""Instance segmentation evaluation of two files: a COCO or LVIS ground truth
and a results file, read, checked and evaluated by one call
(:func:`evaluate_files`, what ``boundary-eval --gt GT.json --dt RESULTS.json``
runs).

The protocol follows the ground truth: LVIS rules for an LVIS file (images
with ``neg_category_ids``, categories with ``frequency``), COCO rules
otherwise.  Both files are read as columns when they are in the schemas (the
fast readers of :class:`~boundary_api.coco.COCO` and
:class:`~boundary_api.lvis.LVIS`), else as dicts, checked one by one so that
the error names the file, the record and the problem.
"""
from __future__ import annotations

import contextlib
import io
import logging
import sys
import time
import warnings
from typing import Any, Dict, Mapping, Optional

import numpy as np

from ._io import read_once
from .instance._files import input_name

__all__ = ["InstanceEvaluation", "evaluate_files", "iou_types_of", "table_title", "IOU_TYPES"]

log = logging.getLogger("boundary_api")

#: IoU types of :func:`evaluate_files` -> what they report (the title of the table)
IOU_TYPES = {"boundary": "Boundary AP", "segm": "Mask AP", "bbox": "Box AP"}

#: detections per image when ``max_dets`` is not given
DEFAULT_MAX_DETS = {False: 100, True: 300}

#: LVIS' AP, Fixed AP, Pooled AP (``ap`` of :func:`evaluate_files`; boundary_api.lvis.fixed_pooled)
AP_KINDS = ("standard", "fixed", "pooled")

#: K of Fixed and Pooled AP when ``dets_per_cat`` is not given (the paper's)
DEFAULT_DETS_PER_CAT = 10000


def table_title(lvis: bool, iou_type: str, dilation_ratio: float, max_dets: int) -> str:
    """The line above an instance table: the rules, what was measured (the IoU
    type, with its dilation ratio) and the detections per image."""
    label = IOU_TYPES[iou_type] + (f" (dilation ratio {dilation_ratio:g})" if iou_type == "boundary" else "")
    return f"{'LVIS' if lvis else 'COCO'} {label}, up to {max_dets} detections per image:"


class InstanceEvaluation:
    """What :func:`evaluate_files` gives: the finished evaluation and its numbers.

    Attributes
    ----------
    lvis : bool
        Whether LVIS rules were used (else COCO's).
    iou_type : str
        ``"boundary"``, ``"segm"`` or ``"bbox"``.
    dilation_ratio : float
        The boundary width asked for (used by ``"boundary"`` only).
    max_dets : int
        Detections kept per image (-1: no limit, Fixed and Pooled AP).
    ap : {"standard", "fixed", "pooled"}
        LVIS' AP, or Fixed / Pooled AP (Dave et al. 2021) of the
        ``dets_per_cat`` best results of each category.
    dets_per_cat : int or None
        K of Fixed / Pooled AP (None for standard AP).
    rec_thrs : int
        Number of recall points of the interpolated precision.
    gt : COCO or LVIS
        The ground truth as loaded.
    evaluator : COCOeval or LVISEval
        The finished evaluation (``evaluate()`` and ``accumulate()`` done; LVIS:
        ``run()``).
    metrics : dict
        Summary metric name -> value: COCO's 12 lines, every one at
        ``max_dets`` (``AP AP50 AP75 APs APm APl AR1 AR10 AR<max_dets> ARs ARm
        ARl``), or LVIS' ``get_results()``; -1 where undefined.
    seconds : float
        Wall time of reading, checking and evaluating.
    """

    def __init__(self, *, lvis: bool, iou_type: str, dilation_ratio: float, max_dets: int, rec_thrs: int,
                 gt, evaluator, metrics: Dict[str, float], seconds: float, ap: str = "standard",
                 dets_per_cat: Optional[int] = None):
        self.lvis = lvis
        self.ap = ap
        self.dets_per_cat = dets_per_cat
        self.iou_type = iou_type
        self.dilation_ratio = dilation_ratio
        self.max_dets = max_dets
        self.rec_thrs = rec_thrs
        self.gt = gt
        self.evaluator = evaluator
        self.metrics = metrics
        self.seconds = seconds
        self._per_category: Optional[Dict[Any, Dict[str, Any]]] = None

    @property
    def kind(self) -> str:
        """``"lvis"`` or ``"coco"``."""
        return "lvis" if self.lvis else "coco"

    @property
    def title(self) -> str:
        """The line above the table (:func:`table_title`; for Fixed and Pooled
        AP, the protocol and its K)."""
        title = table_title(self.lvis, self.iou_type, self.dilation_ratio, self.max_dets)
        if self.ap == "standard":
            return title
        label = title.split(", up to")[0].replace("LVIS ", f"LVIS {self.ap.capitalize()} ", 1)
        limit = f"up to {self.max_dets} per image" if self.max_dets >= 0 else "no limit per image"
        return f"{label}, the top {self.dets_per_cat} results of each category, {limit}:"

    @property
    def settings(self) -> Dict[str, Any]:
        """The settings beyond the IoU type, ratio and ``max_dets`` that the
        numbers depend on (``rec_thrs``; ``ap`` and ``dets_per_cat`` for Fixed
        and Pooled AP)."""
        extra: Dict[str, Any] = {"rec_thrs": self.rec_thrs}
        if self.ap != "standard":
            extra.update(ap=self.ap, dets_per_cat=self.dets_per_cat)
        return extra

    @property
    def per_category(self) -> Dict[Any, Dict[str, Any]]:
        """Category id -> ``{"name", ("frequency" for LVIS), "AP", "AP50",
        "AP75", "APs", "APm", "APl"}`` (NaN where a category has no ground
        truth in a range), in the evaluated category order; empty for Pooled
        AP, which ranks all categories together."""
        if self._per_category is None and self.ap == "pooled":
            self._per_category = {}
        if self._per_category is None:
            from .instance.results import per_category_metrics

            cats = self.gt.cats
            out = {}
            for cat_id, row in per_category_metrics(self.evaluator).items():
                entry = {"name": cats[cat_id].get("name")}
                if self.lvis:
                    entry["frequency"] = cats[cat_id].get("frequency")
                entry.update(row)
                out[cat_id] = entry
            self._per_category = out
        return self._per_category

    def print_table(self) -> None:
        """Print the summary table: pycocotools' 12 lines (every one at
        ``max_dets``) or lvis' ``print_results()``."""
        if self.lvis:
            self.evaluator.print_results()
        else:
            from .instance.results import coco_summary

            coco_summary(self.evaluator, show=True)

    def __repr__(self) -> str:
        ap = self.metrics.get("AP")
        return f"InstanceEvaluation({self.kind}, {self.iou_type}, AP={ap!r})"


def _check_arguments(iou_type, dilation_ratio, lvis, max_dets, rec_thrs, ap="standard",
                     dets_per_cat=DEFAULT_DETS_PER_CAT) -> None:
    if ap not in AP_KINDS:
        raise ValueError(f"ap must be one of {', '.join(map(repr, AP_KINDS))}, got {ap!r}")
    if dets_per_cat is not None and (isinstance(dets_per_cat, bool) or not isinstance(dets_per_cat, (int, np.integer))
                                     or dets_per_cat < 1):
        raise ValueError(f"dets_per_cat must be an integer >= 1 or None, got {dets_per_cat!r}")
    if ap != "standard" and lvis is False:
        raise ValueError(f"ap={ap!r} is LVIS' Fixed / Pooled AP; it needs LVIS rules (lvis=None or True)")
    if iou_type not in IOU_TYPES:
        raise ValueError(f"iou_type must be one of {sorted(IOU_TYPES)}, got {iou_type!r}")
    if isinstance(dilation_ratio, bool) or not isinstance(dilation_ratio, (int, float, np.number)) \
            or not np.isfinite(dilation_ratio) or dilation_ratio < 0:
        raise ValueError(f"dilation_ratio must be a finite number >= 0, got {dilation_ratio!r}")
    if lvis not in (None, True, False):
        raise ValueError(f"lvis must be None (from the ground truth), True or False, got {lvis!r}")
    if max_dets is not None and (isinstance(max_dets, bool) or not isinstance(max_dets, (int, np.integer))
                                 or max_dets < 1):
        raise ValueError(f"max_dets must be an integer >= 1, got {max_dets!r}")
    if isinstance(rec_thrs, bool) or not isinstance(rec_thrs, (int, np.integer)) or rec_thrs < 2:
        raise ValueError(f"rec_thrs must be an integer >= 2 (recall 0 and 1), got {rec_thrs!r}")


def evaluate_files(gt, dt, *, iou_type: str = "boundary", dilation_ratio: float = 0.02,
                   lvis: Optional[bool] = None, max_dets: Optional[int] = None, rec_thrs: int = 101,
                   num_threads: Optional[int] = None, use_fast_impl: bool = True,
                   strict: bool = True, params: Optional[Mapping[str, Any]] = None, ap: str = "standard",
                   dets_per_cat: Optional[int] = DEFAULT_DETS_PER_CAT) -> InstanceEvaluation:
    """Read, check and evaluate a COCO or LVIS ground truth and a results file.

    Prints what pycocotools / lvis print while loading and evaluating (not
    the summary table: :meth:`InstanceEvaluation.print_table`); suspect input
    is warned about (``warnings.warn``) as by :class:`~boundary_api.coco.COCO`.

    Parameters
    ----------
    gt : str or path-like
        Ground truth: COCO or LVIS instances JSON (``.json`` or gzip content).
        A pipe or ``/dev/stdin`` is read once.
    dt : str or path-like
        Results: a JSON list of ``{image_id, category_id, segmentation
        (compressed RLE) or bbox, score}``.  A pipe is read once.
    iou_type : {"boundary", "segm", "bbox"} or sequence of them
        ``"boundary"``: min(mask IoU, Boundary IoU), i.e. Boundary AP;
        ``"segm"``: Mask AP; ``"bbox"``: box AP.  A sequence (e.g.
        ``("segm", "boundary")``) evaluates each type, in its order, on one
        load of the files, and returns ``{iou_type: InstanceEvaluation}``.
    dilation_ratio : float
        Boundary width as a fraction of the image diagonal (``"boundary"``).
    lvis : bool, optional
        None: LVIS rules for an LVIS ground truth, COCO rules otherwise;
        True: LVIS rules; False: COCO rules.
    max_dets : int, optional
        Detections kept per image: 100 for COCO (``maxDets [1, 10, N]``), 300
        for LVIS and no limit for Fixed / Pooled AP when not given.
    rec_thrs : int
        Recall points at which the interpolated precision is sampled (101 as
        COCO, 11 as PASCAL VOC2007).
    num_threads : int, optional
        Threads of the kernels (default: all cores).
    use_fast_impl : bool
        False matches and accumulates with pycocotools' / lvis' own Python
        loops (same numbers).
    strict : bool
        Refuse suspect input (True) rather than warn about it.  The checks
        that name both files (results that look like a ground truth, box-only
        results for a mask evaluation, categories the ground truth lacks, a
        ground-truth annotation without segmentation) refuse either way.
    params : mapping, optional
        Further attributes of the evaluator's ``params`` (COCO names such as
        ``iouThrs``, LVIS names such as ``iou_thrs``), set after ``max_dets``
        and ``rec_thrs``, before evaluating.
    ap : {"standard", "fixed", "pooled"}
        LVIS only: lvis' AP, or Fixed AP / Pooled AP (Dave, Dollar, Ramanan,
        Kirillov, Girshick 2021) of the ``dets_per_cat`` best results of each
        category over the whole dataset (:mod:`boundary_api.lvis.fixed_pooled`).
        A COCO ground truth with ``ap`` other than "standard" is refused.
    dets_per_cat : int or None
        K of Fixed / Pooled AP (default 10,000; None keeps every result); a
        warning counts the categories with fewer results.

    Returns
    -------
    InstanceEvaluation, or dict of them
        One, or one per IoU type when ``iou_type`` is a sequence.

    Raises
    ------
    ValueError
        (also of the class pycocotools / lvis raise, e.g. ``FileNotFoundError``
        or ``json.JSONDecodeError``) for bad arguments, unreadable files and
        bad input, as one line naming the file and the problem.
    """
    types = iou_types_of(iou_type)
    for kind in types:
        _check_arguments(kind, dilation_ratio, lvis, max_dets, rec_thrs, ap, dets_per_cat)
    if params is not None and not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping of parameter names to values, got {type(params).__name__}")
    if ap != "standard" and "bbox" in types and len(types) > 1:
        raise ValueError(f"ap={ap!r} loads the results of 'bbox' and of the mask IoU types differently (boxes "
                         "dropped for masks): evaluate them in two calls")
    tic = time.time()
    # a pipe is read once here, so that the fast readers and their fallbacks read the same bytes
    gt = read_once(gt, "ground truth")
    dt = read_once(dt, "results")
    # loaded once, for the IoU type that needs the most of the files (masks before boxes)
    load_as = next((kind for kind in types if kind in ("segm", "boundary")), types[0])
    request = _Request(gt, dt, load_as, lvis, max_dets, num_threads, strict)
    request.params = dict(params or {})
    request.ap, request.dets_per_cat = ap, dets_per_cat
    loaded = request.as_columns()
    if loaded is None:
        loaded = request.as_dicts()
    is_lvis, gt_obj, dt_obj = loaded
    if ap != "standard" and not is_lvis:
        raise ValueError(f"ap={ap!r} is LVIS' Fixed / Pooled AP; {request.gt_name} is not an LVIS ground truth "
                         "(lvis=True evaluates it with LVIS rules)")
    out = {}
    for kind in types:
        request.iou_type = kind
        evaluate = _evaluate_lvis if is_lvis else _evaluate_coco
        ev, metrics, used_dets = evaluate(gt_obj, dt_obj, request, dilation_ratio, rec_thrs, use_fast_impl)
        out[kind] = InstanceEvaluation(lvis=is_lvis, iou_type=kind, dilation_ratio=dilation_ratio,
                                       max_dets=used_dets, rec_thrs=int(rec_thrs), gt=gt_obj, evaluator=ev,
                                       metrics=metrics, seconds=time.time() - tic, ap=ap,
                                       dets_per_cat=dets_per_cat if ap != "standard" else None)
    return out if not isinstance(iou_type, str) else out[iou_type]


def iou_types_of(iou_type) -> list:
    """The IoU types of an ``iou_type`` argument: one name, or a sequence of
    distinct names (evaluated in that order on one load of the files)."""
    if isinstance(iou_type, str):
        return [iou_type]
    try:
        types = list(iou_type)
    except TypeError:
        raise ValueError(f"iou_type must be a name or a sequence of names, got {iou_type!r}") from None
    if not types or not all(isinstance(t, str) for t in types):
        raise ValueError(f"iou_type must be a name or a non-empty sequence of names, got {iou_type!r}")
    if len(set(types)) != len(types):
        raise ValueError(f"iou_type lists an IoU type twice: {types}")
    return types


class _Request:
    """The inputs and settings of one :func:`evaluate_files` call, and the two
    ways of loading them."""

    def __init__(self, gt, dt, iou_type, lvis, max_dets, num_threads, strict):
        self.gt, self.dt = gt, dt
        self.gt_name, self.dt_name = input_name(gt), input_name(dt)
        self.iou_type = iou_type
        self.lvis = lvis
        self.max_dets = max_dets
        self.num_threads = num_threads
        self.strict = strict
        self.masks = iou_type in ("segm", "boundary")

    ap = "standard"
    dets_per_cat = DEFAULT_DETS_PER_CAT

    def lvis_max_dets(self) -> int:
        if self.max_dets is not None:
            return self.max_dets
        return DEFAULT_MAX_DETS[True] if self.ap == "standard" else -1

    def lvis_results(self, gt, loaded=None):
        """``LVISResults(gt, dt)``; for Fixed / Pooled AP loaded as the paper's
        scripts load them (the top ``dets_per_cat`` of each category)."""
        from .lvis import LVISResults

        if self.ap == "standard":
            kw = {} if loaded is None else {"_loaded": loaded}
            return LVISResults(gt, self.dt, max_dets=self.lvis_max_dets(), strict=self.strict if loaded is not None
                               else True, **kw)
        from .lvis.fixed_pooled import load_results

        return load_results(gt, self.dt if loaded is None else loaded, self.iou_type, self.dets_per_cat,
                            max_dets=self.lvis_max_dets(), strict=self.strict if loaded is not None else True)

    # ------------------------------------------------------------------ columns
    def as_columns(self):
        """Ground truth and results read as columns (``COCO(path)`` and
        ``loadRes(path)``, or ``LVIS(path)`` and ``LVISResults(gt, path)``),
        when both files are in the schemas and pass every check made here:
        ``(lvis, gt, dt)``; else None (the files are then read as dicts and
        checked one by one, which words the problem)."""
        from .coco import dataset as coco_module
        from .instance._files import looks_like_lvis

        printed = io.StringIO()  # shown only if this path is taken (else the dict path prints its own)
        try:
            with contextlib.redirect_stdout(printed):
                tic = time.time()
                gtc = None if self.lvis else coco_module.load_ground_truth_columns(self.gt, self.gt_name,
                                                                                  num_threads=self.num_threads)
                if gtc is not None and (self.lvis is False or not looks_like_lvis(
                        {"images": gtc.images, "categories": gtc.categories})):
                    loaded = self._coco_columns(coco_module.COCO._from_columns(gtc, tic, strict=True), gtc)
                elif self.lvis is False:
                    loaded = None
                else:
                    loaded = self._lvis_columns()
        except (ValueError, TypeError):
            return None
        if loaded is not None:
            sys.stdout.write(printed.getvalue())
        return loaded

    def _coco_columns(self, gt, gtc):
        if self.masks and not gtc.masks_ready(self.num_threads):
            return None
        dt = gt.loadRes(self.dt, strict=True)
        cols = dt._columns
        if cols is None or (self.masks and not cols.has_segmentation):
            return None
        if not _known_categories(cols, gt):
            return None
        return False, gt, dt

    def _lvis_columns(self):
        from .instance._files import looks_like_lvis
        from .instance._gt_columns import load_ground_truth_columns
        from .lvis import LVIS

        gtc = load_ground_truth_columns(self.gt, self.gt_name, lvis=True, num_threads=self.num_threads)
        if gtc is None or not (self.lvis or looks_like_lvis({"images": gtc.images, "categories": gtc.categories})):
            return None
        if self.masks and not gtc.masks_ready(self.num_threads):
            return None
        gt = LVIS._from_columns(gtc, strict=True)
        dt = self.lvis_results_as_columns(gt)
        return None if dt is None else (True, gt, dt)

    def lvis_results_as_columns(self, gt):
        """LVIS results read as columns (``LVISResults(gt, path)``) when the
        file is in the schema and passes every check made here; else None."""
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            try:
                dt = self.lvis_results(gt)
            except (ValueError, TypeError):
                return None
        if dt._columns is not None:  # (else the dict path loads it again, and warns then)
            for w in said:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        cols = dt._columns
        if cols is None or (self.masks and not cols.has_segmentation):
            return None
        return dt if _known_categories(cols, gt) else None

    # ------------------------------------------------------------------ dicts
    def as_dicts(self):
        """Both files read as dicts and checked one by one
        (:mod:`boundary_api.instance._files`): ``(lvis, gt, dt)``."""
        from .instance._files import read_ground_truth_file

        gt_data, lvis = read_ground_truth_file(self.gt, self.iou_type, lvis=self.lvis)
        if lvis:
            from .lvis import LVIS

            gt = LVIS(self.gt, _loaded=gt_data, strict=self.strict)
            dt = self.lvis_results_as_columns(gt)
            if dt is None:
                dt = self.lvis_results(gt, loaded=self._read_results(gt_data))
            return True, gt, dt
        from .coco.dataset import COCO

        dt_data = self._read_results(gt_data)
        gt = COCO.from_dataset(gt_data, self.gt_name, strict=self.strict)
        dt = gt.loadRes(dt_data, _source=self.dt_name, strict=self.strict)
        return False, gt, dt

    def _read_results(self, gt_data):
        from .instance._files import read_results_file

        return read_results_file(self.dt, gt_data, self.gt_name, self.iou_type)


def _known_categories(cols, gt) -> bool:
    """Whether every result's category is in the ground truth (else the dict
    path words the error)."""
    return set(np.unique(cols.category_id).tolist()) <= gt.cats.keys()


def _set_params(ev, params: Mapping[str, Any]) -> None:
    for name, value in params.items():
        if not hasattr(ev.params, name):
            raise ValueError(f"params: the evaluator has no parameter {name!r}")
        setattr(ev.params, name, value)


def _evaluate_lvis(gt, dt, request, dilation_ratio, rec_thrs, use_fast_impl):
    from .lvis import LVISEval

    max_dets = request.lvis_max_dets()
    ev = LVISEval(gt, dt, iou_type=request.iou_type, max_dets=max_dets, dilation_ratio=dilation_ratio,
                  use_fast_impl=use_fast_impl, num_threads=request.num_threads, ap=request.ap,
                  dets_per_cat=request.dets_per_cat)
    ev.params.rec_thrs = np.linspace(0.0, 1.0, rec_thrs)
    _set_params(ev, request.params)
    ev.run()
    return ev, dict(ev.get_results()), max_dets


def _evaluate_coco(gt, dt, request, dilation_ratio, rec_thrs, use_fast_impl):
    from .coco.cocoeval import COCOeval
    from .instance.results import coco_summary

    max_dets = request.max_dets if request.max_dets is not None else DEFAULT_MAX_DETS[False]
    ev = COCOeval(gt, dt, iouType=request.iou_type, dilation_ratio=dilation_ratio,
                  use_fast_impl=use_fast_impl, num_threads=request.num_threads)
    ev.params.recThrs = np.linspace(0.0, 1.0, rec_thrs)
    if request.max_dets is not None:
        ev.params.maxDets = [1, min(10, max_dets), max_dets]
    _set_params(ev, request.params)
    ev.evaluate()
    ev.accumulate()
    # AP at max_dets, not pycocotools' -1 at 100 (issue 25)
    return ev, coco_summary(ev, show=False), max_dets
