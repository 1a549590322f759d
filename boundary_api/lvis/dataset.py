"""``boundary_api.LVIS`` and ``LVISResults``: lvis' datasets, read and checked by this package."""
from __future__ import annotations

import copy
import logging
import os

import numpy as np

from ._original import _lvis
from .._io import InputBytes, KeyValueError, TypeValueError, add_note, loads_json, read_json, read_once
from ..instance._checks import (check_instances_dataset, check_results, describe_annotation, pycocotools_area_bbox,
                                refuse_unsafe_polygons, rle_strings_checked, terminated_for_pycocotools)
from ..instance._columns import load_result_columns
from ..instance._gt_columns import index_annotations, load_ground_truth_columns
from ..instance.cache import cache_for, cache_state, polygon_rles_of, restore_cache
from ..instance._dataset import _Materialized

__all__ = ["LVIS", "LVISResults"]


def _is_path(x) -> bool:
    return isinstance(x, (str, bytes, os.PathLike))


class _CheckedJson:
    """Routes lvis' ``_load_json`` to documents already read and checked;
    look-ups of unknown ids raise a KeyError naming the id."""

    #: refuse suspect input (the ``strict`` argument)
    _strict = False
    #: the problems of the input warned about that the package's own
    #: evaluation must not see: evaluators run lvis' code instead
    _input_problems = ()

    def __getstate__(self) -> dict:
        """``__dict__`` with the annotation cache, so that a pickled or
        copied dataset keeps what only the cache knows (the ground truths'
        own ``ignore`` flags an evaluation overwrote) and what it computed."""
        return cache_state(self, self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(restore_cache(self, state))

    def _load_json(self, path):
        pre = self.__dict__.get("_preloaded")
        if pre is not None and path in pre:
            return pre.pop(path)
        return read_json(path, "LVIS")

    def ann_to_rle(self, ann):
        """lvis' ``ann_to_rle``; a polygon on which pycocotools' C code
        crashes or never ends (non-finite or huge coordinates, an image with a
        side of no pixels) raises
        :class:`~boundary_api.instance._checks.UnsafePolygonError` instead."""
        kind = "result" if isinstance(self, _lvis.LVISResults) else "annotation"
        refuse_unsafe_polygons([ann], self.imgs, lambda a: describe_annotation(kind, a))
        return super().ann_to_rle(ann)

    def _load_helper(self, _dict, ids):
        try:
            return super()._load_helper(_dict, ids)
        except KeyError as exc:
            what = next((name for name in ("anns", "imgs", "cats") if self.__dict__.get(name) is _dict), "")
            kind = {"anns": "annotation", "imgs": "image", "cats": "category"}.get(what, "")
            key = exc.args[0] if exc.args else None
            raise KeyValueError(f"{kind} id {key!r} is not in this dataset".lstrip()) from None


def _run_original(fn, problems, source: str):
    """Run lvis' own code on input the checks let through; its failure comes
    through as it is (class and message), with a note naming the first
    problem found."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - lvis' own failure, explained
        add_note(exc, f"boundary_api: lvis' own code fails on this input ({problems[0] if problems else source})")
        raise


def _masks_for_lvis(anns, max_dets, source: str) -> list:
    """Before lvis' ``LVISResults`` computes the areas and boxes of the
    segmentation results it keeps (pycocotools' ``area`` and ``toBbox``): a
    box its C code crashes on is refused (:class:`UnsafeRLEError`), and a
    string it would read past its end gets a NUL after it, which it reads as
    it reads the byte after a string (here: 0) and stops at.  Returns the
    ``(segmentation, counts)`` to put back afterwards."""
    try:
        first = anns[0]
        if "bbox" in first or "segmentation" not in first:
            return []
        kept = _lvis.LVISResults.limit_dets_per_image(None, anns, max_dets) if max_dets >= 0 else anns
    except Exception:  # noqa: BLE001 - lvis' own code raises on it
        return []
    restore = []
    position = {id(a): i for i, a in enumerate(anns)}
    for ann in kept:
        seg = ann.get("segmentation") if type(ann) is dict else None
        if type(seg) is not dict:
            continue
        if "bbox" not in ann:
            pycocotools_area_bbox(seg, True, f"{source}: result #{position[id(ann)]} (image {ann.get('image_id')!r})")
        counts = terminated_for_pycocotools(seg)
        if counts is not None:
            restore.append((seg, seg["counts"]))
            seg["counts"] = counts
    return restore


def _install_index(obj, dataset: dict, anns: list) -> None:
    """``dataset`` and lvis' index of ``anns`` (``anns``, ``img_ann_map``,
    ``cat_img_map``, built as lvis builds them) set on ``obj``, with the empty
    ``img_ann_map`` entries its look-ups so far would have left
    (``obj._looked_up``)."""
    index, img_ann_map, cat_img_map = index_annotations(anns)
    for img_ids in obj._looked_up:
        for img_id in img_ids:
            img_ann_map[img_id]
    d = obj.__dict__
    d["dataset"], d["anns"], d["img_ann_map"], d["cat_img_map"] = dataset, index, img_ann_map, cat_img_map


class LVIS(_CheckedJson, _lvis.LVIS):
    """lvis' ``LVIS`` ground truth, with clear errors for bad files.

    Parameters
    ----------
    annotation_path : str or path-like
        LVIS annotation JSON.
    strict : bool, optional
        Refuse input that lvis loads but which is probably wrong (images
        without a size or without ``neg_category_ids``, annotations on
        unknown images, repeated annotation ids, annotations of unknown
        categories, ...).  Default False: such input is warned about
        (:class:`boundary_api.SuspectInputWarning`, one line) and
        :class:`LVISEval` runs lvis' own code on it ('segm', 'bbox') or
        refuses it ('boundary').  :class:`LVISResults` inherits it.

    Raises
    ------
    ValueError
        If the file is missing, not JSON, or not an LVIS dataset; where lvis
        fails too, also an instance of the class lvis raises
        (``FileNotFoundError``, ``json.JSONDecodeError``,
        ``AssertionError``, ``KeyError``, ``TypeError``).

    Notes
    -----
    A file in the LVIS ground-truth schema (integer ids, numeric areas,
    boxes, polygons or RLEs) is read natively into column arrays:
    ``imgs`` and ``cats`` are made at once, while the annotation dicts and
    lvis' index (``dataset``, ``anns``, ``img_ann_map``, ``cat_img_map``)
    are made, identical to lvis' own, the first time one of them is read,
    carrying what the evaluations run so far would have written into them
    (``ignore``, RLEs for 'segm').  :class:`LVISEval` evaluates such a
    ground truth from the arrays.  Other files (``.json.gz`` among them),
    and :meth:`from_dataset`, take lvis' path.
    """

    #: a ground truth parsed into columns (:class:`._gt_columns.GroundTruthColumns`)
    #: whose annotation dicts nobody has read yet; None once they exist
    _gt_columns = None

    dataset = _Materialized()
    anns = _Materialized()
    img_ann_map = _Materialized()
    cat_img_map = _Materialized()

    def __init__(self, annotation_path, _loaded=None, strict=False):
        self._strict = bool(strict)
        path = os.fspath(annotation_path) if _is_path(annotation_path) else annotation_path
        src = path
        if _loaded is None and isinstance(path, str):
            src = read_once(path, "ground truth")  # a pipe: read once, for both readers
            columns = load_ground_truth_columns(src, path, lvis=True)
            if columns is not None:
                self._set_columns(columns)
                return
        dataset = read_json(src, "ground truth") if _loaded is None else _loaded
        problems = check_instances_dataset(dataset, str(path), lvis=True, strict=self._strict)
        self._preloaded = {path: dataset}
        _run_original(lambda: super(LVIS, self).__init__(path), problems, str(path))
        self._input_problems = tuple(problems)

    @classmethod
    def _from_columns(cls, columns, strict: bool = False) -> "LVIS":
        """A ground truth already read as columns (the command line reads the
        file once to choose between COCO and LVIS)."""
        self = cls.__new__(cls)
        self._strict = bool(strict)
        self._set_columns(columns)
        return self

    def _set_columns(self, columns) -> None:
        """lvis' ``__init__`` for a ground truth read as columns: ``imgs``
        and ``cats`` indexed now (with lvis' log messages), the annotation
        dicts and their index made when first read (:meth:`_materialize`)."""
        self.logger = logging.getLogger(_lvis.LVIS.__module__)
        self.logger.info("Loading annotations.")
        self._preloaded = {}
        self.logger.info("Creating index.")
        self.imgs = {img["id"]: img for img in columns.images}
        self.cats = {cat["id"]: cat for cat in columns.categories}
        self.logger.info("Index created.")
        self._gt_columns = columns
        # image ids an evaluation looked up in img_ann_map (lvis' defaultdict
        # gains an empty entry for each): replayed when the index is made
        self._looked_up = []
        columns.computed = cache_for(self).computed

    def _dataset_header(self) -> dict:
        """``dataset`` without reading the annotations of a ground truth read
        as columns: every top-level entry in file order (``annotations`` an
        empty stand-in); otherwise ``dataset`` itself."""
        columns = self.__dict__.get("_gt_columns")
        if columns is None:
            return self.dataset
        return columns.header(loads_json)

    def _materialize(self) -> None:
        """The annotation dicts and lvis' index, parsed from the same bytes,
        then changed as the evaluations run on the columns would have
        changed them (in order)."""
        columns = self._gt_columns
        dataset = columns.dataset(loads_json)
        anns = dataset["annotations"]
        _install_index(self, dataset, anns)
        self._gt_columns = None
        del self._looked_up
        cache_for(self).adopt_ground_truth(anns, columns)
        for iou_type, rows in columns.log:
            _prepare_ground_truths(self, [anns[r] for r in rows.tolist()], iou_type)

    @classmethod
    def from_dataset(cls, dataset: dict, source: str = "ground truth", strict: bool = False) -> "LVIS":
        """Build from an already loaded LVIS dict (checked, not copied)."""
        return cls(source, _loaded=dataset, strict=strict)


class LVISResults(_CheckedJson, _lvis.LVISResults):
    """lvis' ``LVISResults`` (results capped at ``max_dets`` per image), with
    the results checked against the ground truth before lvis touches them.

    Parameters
    ----------
    lvis_gt : LVIS or str
        Ground truth object or path.
    results : str or list of dict
        Result file or list (compressed-RLE segmentations and/or boxes, scores).
    max_dets : int, optional
        Highest-scoring results kept per image (default 300; negative: all).
    strict : bool, optional
        Refuse results that lvis loads but which are probably wrong (RLEs
        whose size is not their image's, NaN or missing scores, categories
        not in the ground truth, ...); default: the ground truth's
        ``strict``.  Without it they are warned about.  Problems lvis fails
        on too raise a ``ValueError`` that is also of lvis' class
        (``AssertionError``, ``IndexError``, ``KeyError``, ``TypeError``).

    Notes
    -----
    A results file in the COCO results schema (integer image and category
    ids, numeric scores, boxes and/or compressed RLEs) is read into column
    arrays; ``LVISEval`` evaluates from them, and the result dicts, ``anns``,
    ``img_ann_map`` and ``cat_img_map`` are made, as lvis makes them, only
    when first read.  Other files and lists take lvis' path.
    """

    _is_results = True
    _rles_checked = False
    #: results parsed into columns (:class:`._columns.ResultColumns`, in
    #: lvis' order after the per-image cap) whose dicts nobody has read yet;
    #: None once they exist
    _columns = None

    dataset = _Materialized()
    anns = _Materialized()
    img_ann_map = _Materialized()
    cat_img_map = _Materialized()

    def __init__(self, lvis_gt, results, max_dets=300, _loaded=None, strict=None):
        if _is_path(lvis_gt):
            lvis_gt = LVIS(lvis_gt, strict=bool(strict))
        elif not isinstance(lvis_gt, _lvis.LVIS):
            # lvis raises TypeError here too
            raise TypeValueError(f"lvis_gt must be an LVIS object or a path, got {type(lvis_gt).__name__}")
        strict = getattr(lvis_gt, "_strict", False) if strict is None else bool(strict)
        self._strict = strict
        if isinstance(max_dets, bool) or not isinstance(max_dets, (int, np.integer)):
            raise TypeValueError(f"max_dets must be an integer, got {max_dets!r}")
        src = results
        if isinstance(results, InputBytes):  # a pipe already read (evaluate_files): its bytes, its name
            results = results.name
        if _is_path(results) and _loaded is None and isinstance(os.fspath(results), str):
            key = os.fspath(results)
            if not isinstance(src, InputBytes):
                src = read_once(key, "results")  # a pipe: read once, for both readers
            columns = load_result_columns(lvis_gt, src, key, strict=strict)
            if columns is not None:
                columns = _limit_dets_per_image(columns, int(max_dets))
            if columns is not None:
                self._init_from_columns(lvis_gt, columns)
                return
        if _is_path(results):
            key = os.fspath(results)
            anns = read_json(src if isinstance(src, InputBytes) else key, "results") if _loaded is None else _loaded
            source, arg = str(key), key
            self._preloaded = {key: anns}
        else:
            anns, source, arg = results, "results", results
        problems = check_results(anns, lvis_gt.imgs, lvis_gt.cats, source, strict=strict, original="lvis")
        # (asked before lvis adds boxes; it keeps the very segmentations
        # checked here, so the cache can trust them)
        checked = rle_strings_checked(anns, lvis_gt.imgs) and not problems
        restore = _masks_for_lvis(anns, max_dets, source) if problems else ()
        try:
            _run_original(lambda: super(LVISResults, self).__init__(lvis_gt, arg, max_dets), problems, source)
        finally:
            for seg, counts in restore:
                seg["counts"] = counts
        self._rles_checked = checked
        self._input_problems = tuple(problems)

    def _init_from_columns(self, lvis_gt, columns) -> None:
        """lvis' ``__init__`` for results parsed into columns: the GT dataset
        but its annotations is copied as lvis copies it, ``imgs`` and ``cats``
        indexed; the result dicts, ``anns``, ``img_ann_map`` and
        ``cat_img_map`` are made when first read (:meth:`_materialize`)."""
        self.logger = logging.getLogger(_lvis.results.__name__)
        self.logger.info("Loading and preparing results.")
        # (a ground truth read as columns: its entries but the annotations, unread)
        source = lvis_gt._dataset_header() if isinstance(lvis_gt, LVIS) else lvis_gt.dataset
        # one deepcopy (shared memo) of everything lvis would keep
        self._header = _copy_json({k: v for k, v in source.items() if k != "annotations"}, {})
        self._keys = list(source) if "annotations" in source else list(source) + ["annotations"]
        self.logger.info("Creating index.")
        self.imgs = {img["id"]: img for img in self._header["images"]}
        self.cats = {cat["id"]: cat for cat in self._header["categories"]}
        self.logger.info("Index created.")
        self._columns = columns
        self._rles_checked = columns.rles_checked
        # image ids an evaluation looked up in img_ann_map (lvis' defaultdict
        # gains an empty entry for each): replayed when the index is made
        self._looked_up = []
        columns.computed = cache_for(self).computed

    def _materialize(self) -> None:
        """Make the result dicts and lvis' index from the columns."""
        columns = self._columns
        anns = columns.annotations(style="lvis")
        header = self._header
        dataset = {k: anns if k == "annotations" else header[k] for k in self._keys}
        _install_index(self, dataset, anns)
        if columns.has_segmentation and columns.rles_checked:
            # the cache keeps the boundaries computed from the columns
            cache_for(self).adopt(anns, columns.seg_h, columns.seg_w)
        # the dicts may now be changed by their reader: evaluations read them from here on
        self._rles_checked = columns.rles_checked
        del self._header, self._keys, self._looked_up
        self._columns = None


def _prepare_ground_truths(lvis_gt, gts: list, iou_type: str) -> None:
    """What lvis' ``_prepare`` does to the selected ground-truth dicts: their
    segmentation made an RLE (``ann_to_rle``) for 'segm', ``ignore`` set to
    0 where absent."""
    if iou_type == "segm":
        polygons = polygon_rles_of(lvis_gt, [g for g in gts if type(g.get("segmentation")) is list])
        for gt in gts:
            rle = polygons.get(id(gt))
            gt["segmentation"] = rle if rle is not None else lvis_gt.ann_to_rle(gt)
    for gt in gts:
        if "ignore" not in gt:
            gt["ignore"] = 0


_ATOMIC = frozenset((str, int, float, bool, type(None)))


def _copy_json(x, memo: dict):
    """``copy.deepcopy(x, memo)``, quicker on the dicts and lists a JSON
    document is made of (the same copies: aliasing kept through ``memo``)."""
    t = type(x)
    if t in _ATOMIC:
        return x
    if t is dict:
        y = memo.get(id(x))
        if y is None:
            y = memo[id(x)] = {}
            for k, v in x.items():
                y[k if type(k) in _ATOMIC else copy.deepcopy(k, memo)] = \
                    v if type(v) in _ATOMIC else _copy_json(v, memo)
        return y
    if t is list:
        y = memo.get(id(x))
        if y is None:
            y = memo[id(x)] = []
            y.extend(v if type(v) in _ATOMIC else _copy_json(v, memo) for v in x)
        return y
    return copy.deepcopy(x, memo)


def _limit_dets_per_image(columns, max_dets: int):
    """lvis' ``limit_dets_per_image`` on columns: results grouped by image
    (first appearance), an image with more than ``max_dets`` keeping its
    ``max_dets`` best (stable by score, highest first); ``max_dets < 0``
    keeps the file order.  None when Python's comparison of the scores could
    differ from float64's, or when nothing is left (the general path then
    does what lvis does)."""
    if max_dets < 0:
        return columns
    score = columns.score
    if ((columns.int_kind & 1).astype(bool) & (np.abs(score) >= 2.0 ** 53)).any():
        return None
    n = columns.n
    max_dets = min(max_dets, n)  # (the same cut, in int64 range)
    _, first, group = np.unique(columns.image_id, return_index=True, return_inverse=True)
    group = group.reshape(-1)
    rank_of_group = np.empty(len(first), np.int64)
    rank_of_group[np.argsort(first, kind="stable")] = np.arange(len(first))
    sizes = np.bincount(group, minlength=len(first))
    big = sizes[group] > max_dets
    rows = np.arange(n, dtype=np.int64)
    key = rank_of_group[group]
    order = np.lexsort((rows, np.where(big, -score, 0.0), key))
    key = key[order]
    starts = np.flatnonzero(np.concatenate(([True], key[1:] != key[:-1])))
    counts = np.diff(np.concatenate((starts, [n])))
    within = np.arange(n) - np.repeat(starts, counts)
    order = order[within < max_dets]
    if len(order) == 0:
        return None
    return columns if len(order) == n and (order == rows).all() else columns.take(order)
