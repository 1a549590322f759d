"""``boundary_api.LVISEval``: lvis' LVISEval with ``iou_type='boundary'``."""
from __future__ import annotations

import copy
import datetime
import importlib
import logging
import os
import sys
import types
from collections import defaultdict
from typing import Optional

import numpy as np


def _import_lvis_without_vis() -> types.ModuleType:
    """Import the ``lvis`` package without loading ``lvis.vis`` yet.

    ``lvis/__init__.py`` imports its plotting module, which imports OpenCV and
    ``matplotlib.pyplot`` (about 0.7 s here, most of a small evaluation) and
    which no evaluation uses.  While the package initialises, a stand-in
    ``lvis.vis`` answers its ``from lvis.vis import LVISVis``; afterwards the
    stand-in is gone and the package loads the real module on first use of
    ``lvis.LVISVis`` or ``lvis.vis`` (``import lvis.vis`` works as usual).
    Everything else the package does on import (its logging set-up) is
    unchanged.  Nothing is done when lvis or lvis.vis is already loaded.
    """
    if "lvis" in sys.modules or "lvis.vis" in sys.modules:
        return importlib.import_module("lvis")
    stand_in = types.ModuleType("lvis.vis")

    class LVISVis:  # placeholder while lvis/__init__ runs
        pass

    stand_in.LVISVis = LVISVis
    sys.modules["lvis.vis"] = stand_in
    try:
        package = importlib.import_module("lvis")
    except ImportError:
        # another lvis version needing more from lvis.vis: import it plainly
        sys.modules.pop("lvis.vis", None)
        sys.modules.pop("lvis", None)
        return importlib.import_module("lvis")
    finally:
        if sys.modules.get("lvis.vis") is stand_in:
            del sys.modules["lvis.vis"]
    names = vars(package)
    for name, value in (("LVISVis", LVISVis), ("vis", stand_in)):
        if names.get(name) is value:
            del names[name]

    def __getattr__(name):
        if name in ("LVISVis", "vis"):
            vis = importlib.import_module("lvis.vis")
            names["LVISVis"] = vis.LVISVis
            return vis if name == "vis" else vis.LVISVis
        raise AttributeError(f"module 'lvis' has no attribute {name!r}")

    package.__getattr__ = __getattr__
    return package


from .coco import urllib_request_deferred  # noqa: E402

with urllib_request_deferred():
    _lvis = _import_lvis_without_vis()
    import lvis.eval as _lvis_eval  # noqa: E402

from ._engine import (Evaluation, Lazy, LazyEvaluator, instance_dict, leave_ignore_flags, reset_lazy,
                      sorted_unique, touch_pairs)
from .._io import (InputBytes, KeyValueError, TypeValueError, input_error_class, loads_json, read_json, read_once,
                   warn_large_dilation_ratio)
from ._checks import check_instances_dataset, check_results, rle_strings_checked
from ._columns import load_result_columns, select_rows
from ._gt_columns import ground_truths_by_pair, index_annotations, load_ground_truth_columns
from .cache import cache_for, cache_state, polygon_rles_of, restore_cache
from .coco import _Materialized, masks_unusable
from .._parallel import resolve_threads
from ..masks.boundary import check_dilation_ratio
from ..lvis import fixed_pooled

__all__ = ["LVIS", "LVISResults", "LVISEval"]

IOU_TYPES = ("segm", "bbox", "boundary")


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

    def _load_helper(self, _dict, ids):
        try:
            return super()._load_helper(_dict, ids)
        except KeyError as exc:
            what = next((name for name in ("anns", "imgs", "cats") if self.__dict__.get(name) is _dict), "")
            kind = {"anns": "annotation", "imgs": "image", "cats": "category"}.get(what, "")
            key = exc.args[0] if exc.args else None
            raise KeyValueError(f"{kind} id {key!r} is not in this dataset".lstrip()) from None


def _run_original(fn, problems, source: str):
    """Run lvis' own code on input the checks let through; a failure is
    raised as the class lvis raises (and ValueError), naming the first
    problem found."""
    try:
        fn()
    except (KeyError, TypeError, IndexError, AttributeError, AssertionError) as exc:
        raise input_error_class(type(exc))(problems[0] if problems else f"{source}: {exc!r}") from None


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
        if _is_path(results) and _loaded is None and isinstance(os.fspath(results), str):
            key = os.fspath(results)
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
        checked = rle_strings_checked(anns) and not problems
        _run_original(lambda: super(LVISResults, self).__init__(lvis_gt, arg, max_dets), problems, source)
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


def _pair_flags(columns, rows, *tests) -> list:
    """For each ``test(image_id, category_id)`` (Python ints), its answer
    on every row where ``rows`` is true (asked once per distinct pair),
    False elsewhere."""
    sel = np.flatnonzero(rows)
    outs = [np.zeros(columns.n, bool) for _ in tests]
    if not len(sel):
        return outs
    imgs, img_inv = np.unique(columns.image_id[sel], return_inverse=True)
    cats, cat_inv = np.unique(columns.category_id[sel], return_inverse=True)
    nc = len(cats)
    keys, inverse = np.unique(img_inv.reshape(-1).astype(np.int64) * nc + cat_inv.reshape(-1),
                              return_inverse=True)
    pairs = list(zip(imgs[keys // nc].tolist(), cats[keys % nc].tolist()))
    inverse = inverse.reshape(-1)
    for out, test in zip(outs, tests):
        answers = np.fromiter((bool(test(i, c)) for i, c in pairs), bool, len(pairs))
        out[sel] = answers[inverse]
    return outs


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


def _accumulate_lvis_on_any_numpy(ev) -> None:
    """Run lvis' own ``LVISEval.accumulate`` on ``ev``.

    lvis 0.5.3 calls ``np.float``, removed in numpy 1.24; the function is run
    with a module namespace whose ``np`` also answers ``float``.  Neither
    numpy nor lvis is changed.
    """
    fn = _lvis_eval.LVISEval.accumulate
    if "float" in np.__dict__:
        return fn(ev)

    class _NumpyWithFloat:
        float = float

        def __getattr__(self, name):
            return getattr(np, name)

    namespace = dict(fn.__globals__)
    namespace["np"] = _NumpyWithFloat()
    types.FunctionType(fn.__code__, namespace, fn.__name__, fn.__defaults__, fn.__closure__)(ev)


log = logging.getLogger(__name__)


class LVISEval(LazyEvaluator, _lvis_eval.LVISEval):
    """LVIS evaluation with Boundary AP, a drop-in for ``lvis.LVISEval``.

    ``iou_type='boundary'`` uses ``min(mask IoU, boundary IoU)``; 'segm' and
    'bbox' give lvis' numbers.  The federated rules (negative and
    not-exhaustive categories), the per-image detection cap and the
    frequency groups (APr/APc/APf) are lvis' own.  ``run()``,
    ``evaluate()``, ``accumulate()``, ``summarize()``, ``print_results()``,
    ``get_results()``, ``results``, ``eval``, ``eval_imgs`` and ``params``
    behave as in lvis, on numpy 1.x and 2.x.

    Parameters
    ----------
    lvis_gt : LVIS or str
        Ground truth object or annotation path.
    lvis_dt : LVISResults, str or list of dict
        Results object, result file or list.
    iou_type : {'segm', 'bbox', 'boundary'}
    max_dets : int, optional
        Detections kept per image when results are loaded here (default 300;
        with ``ap='fixed'`` or ``'pooled'``, -1: no limit).
    dilation_ratio : float, optional
        Boundary width as a fraction of the image diagonal (default 0.02).
    use_fast_impl : bool, optional
        Match and accumulate in Cython (default); ``False`` runs lvis' own
        loops on the same IoUs with identical results.
    num_threads : int, optional
        Threads for the kernels (default: all cores).
    ap : {'standard', 'fixed', 'pooled'}, keyword-only
        'standard' (default): lvis' AP.  'fixed': Fixed AP (Dave et al.
        2021): results given as a file or list are cut to the
        ``dets_per_cat`` best of each category over the whole dataset, with
        no limit per image, then scored with lvis' AP (``AP`` ... ``APf``,
        and ``AR@-1`` ...).  'pooled': Pooled AP, the same results
        accumulated over all categories at once (``AP``) and over each
        frequency group (``APr``, ``APc``, ``APf``), area range 'all' only.
        See docs/lvis_fixed_pooled.md.
    dets_per_cat : int or None, keyword-only
        K of Fixed / Pooled AP (default 10,000; None: no limit).  Results
        already loaded (an :class:`LVISResults`) are evaluated as given, with
        a warning if some category has more than K.

    Notes
    -----
    With the fast implementation ``eval['dt_pointers']`` is not filled.
    Results read as columns (``LVISResults(gt, path)``) are evaluated from
    their arrays, and so is a ground truth read as columns (``LVIS(path)``)
    alongside them; lvis' ``_gts``/``_dts`` lists and the annotation dicts
    are then made only if something reads them.

    Which path runs.  ``evaluate()`` takes the native path (IoUs, matching
    and later ``accumulate()`` in Cython) only when ``use_fast_impl`` is true
    and the subclass overrides none of ``_prepare``, ``_get_gt_dt``,
    ``compute_iou`` and ``evaluate_img``; otherwise it runs as lvis'
    ``evaluate`` does, calling ``self._prepare()``, ``self.compute_iou`` for
    every image and category (the native IoUs of all pairs at once when
    ``compute_iou`` is this class's own) and ``self.evaluate_img``.
    ``accumulate()`` uses the kernels only after a native evaluation whose
    ``eval_imgs`` nobody has read or assigned since; otherwise it is lvis'
    ``accumulate`` on ``eval_imgs``.  An overridden ``accumulate`` or
    ``summarize`` is always the one called.  The path taken is logged
    (``logging``, level INFO, logger ``boundary_api.instance.lvis``).

    After a native evaluation ``eval_imgs``, ``ious`` (a dict), ``_gts`` and
    ``_dts`` (``defaultdict(list)``, with the entries lvis' loops add) are
    built the first time they are read, ``vars(ev)`` included.  An evaluated
    object pickles and copies (with those attributes built); the copy
    accumulates with lvis' loops, to the same numbers.
    """

    _state: Optional[Evaluation] = None
    #: run lvis' own evaluation code (inputs it accepts that this package's
    #: checks flagged: the numbers are lvis')
    _reference = False
    #: the attributes a native evaluation builds when first read
    _LAZY = ("eval_imgs", "ious", "_gts", "_dts")
    eval_imgs = Lazy("_build_eval_imgs")
    ious = Lazy("_build_ious")
    _gts = Lazy("_build_gts")
    _dts = Lazy("_build_dts")
    #: the methods the native path stands in for; overriding one of them in
    #: a subclass makes ``evaluate()`` call it as lvis does
    _NATIVE_METHODS = ("_prepare", "_get_gt_dt", "compute_iou", "evaluate_img")
    _EVAL_IMGS_STYLE = "lvis"

    #: 'standard', 'fixed' or 'pooled' (the ``ap`` argument)
    ap = "standard"
    #: Fixed / Pooled AP's K (the ``dets_per_cat`` argument)
    dets_per_cat = fixed_pooled.DEFAULT_DETS_PER_CAT

    def __init__(self, lvis_gt, lvis_dt, iou_type="segm", max_dets=None, dilation_ratio=0.02,
                 use_fast_impl=True, num_threads=None, *, ap="standard",
                 dets_per_cat=fixed_pooled.DEFAULT_DETS_PER_CAT):
        if iou_type not in IOU_TYPES:
            raise ValueError(f"iou_type must be one of {', '.join(IOU_TYPES)}; got {iou_type!r}")
        self.ap = fixed_pooled.check_ap(ap)
        self.dets_per_cat = fixed_pooled.check_dets_per_cat(dets_per_cat)
        if max_dets is None:
            max_dets = 300 if self.ap == "standard" else -1
        self.dilation_ratio = check_dilation_ratio(dilation_ratio)
        self.use_fast_impl = bool(use_fast_impl)
        self.num_threads = resolve_threads(num_threads)
        if _is_path(lvis_gt):
            lvis_gt = LVIS(lvis_gt)
        if self.ap != "standard" and (_is_path(lvis_dt) or isinstance(lvis_dt, list)):
            lvis_dt = fixed_pooled.load_results(lvis_gt, lvis_dt, iou_type, self.dets_per_cat, max_dets=max_dets)
        elif _is_path(lvis_dt) or isinstance(lvis_dt, list):
            lvis_dt = LVISResults(lvis_gt, lvis_dt, max_dets=max_dets)
        elif self.ap != "standard":
            fixed_pooled.check_loaded(lvis_dt, self.dets_per_cat)
        super().__init__(lvis_gt, lvis_dt, iou_type="segm" if iou_type == "boundary" else iou_type)
        self.params.iou_type = iou_type
        self.params.max_dets = max_dets
        if self.ap == "pooled":
            fixed_pooled.only_area_all(self.params)
        problems = tuple(p for o in (lvis_gt, lvis_dt) for p in getattr(o, "_input_problems", ()))
        if problems:
            if iou_type == "boundary":
                raise ValueError(f"iou_type='boundary' cannot evaluate input that failed the checks "
                                 f"(load it with strict=True to see every problem): {problems[0]}")
            self._reference = True  # lvis' own code, on what it accepts
        if iou_type == "boundary":
            warn_large_dilation_ratio(self.dilation_ratio, logging.getLogger(__name__))

    def _prepare(self):
        """lvis' ``_prepare``; with 'boundary' and an overridden
        ``compute_iou``, segmentations are made RLEs as for 'segm' (what an
        overriding ``compute_iou`` finds in ``_gts``/``_dts`` in lvis)."""
        super()._prepare()
        if self.params.iou_type == "boundary" and "compute_iou" in self._overridden():
            for table, dataset in ((self._gts, self.lvis_gt), (self._dts, self.lvis_dt)):
                for anns in table.values():
                    self._to_mask(anns, dataset)

    def evaluate(self):
        """Run per-image evaluation (lvis' ``evaluate``).

        Native unless ``use_fast_impl`` is false or a subclass overrides
        ``_prepare``, ``_get_gt_dt``, ``compute_iou`` or ``evaluate_img``
        (then those are called as lvis calls them); see the class notes.
        """
        if self.params.iou_type == "segm" and not self._reference \
                and not (getattr(self.lvis_gt, "_strict", False) or getattr(self.lvis_dt, "_strict", False)):
            self._reference = masks_unusable(self.lvis_gt, self.lvis_dt)
        if self._reference:
            self._state = None
            try:
                return super().evaluate()
            except Exception as exc:  # noqa: BLE001 - lvis' own failure, named
                problems = tuple(p for o in (self.lvis_gt, self.lvis_dt) for p in getattr(o, "_input_problems", ()))
                cls = input_error_class(type(exc))
                if not issubclass(cls, type(exc)):
                    raise
                why = f" ({problems[0]})" if problems else ""
                raise cls(f"lvis' evaluation fails on this input{why}: {type(exc).__name__}: {exc}") from exc
        p = self.params
        self.logger.info("Running per image evaluation.")
        self.logger.info("Evaluate annotation type *{}*".format(p.iou_type))
        p.img_ids = sorted_unique(p.img_ids)
        cat_ids = p.cat_ids if p.use_cats else [-1]
        gts, dts = self._gts, self._dts  # (built now if they come from the previous evaluation)
        self._state = None
        self._gts, self._dts = gts, dts
        overridden = self._overridden()
        if overridden or not self.use_fast_impl:
            why = (f"{type(self).__name__} overrides {', '.join(overridden)}" if overridden
                   else "use_fast_impl=False")
            log.info("LVISEval.evaluate: lvis' loops (%s)", why)
            self._evaluate_loops(p, cat_ids, native_iou="compute_iou" not in overridden)
            return
        log.info("LVISEval.evaluate: native matching")
        if self._evaluate_columns():
            return
        self._prepare()
        state = self._pairs(p, cat_ids)
        state.compute_ious(p.iou_type, self.lvis_gt, self.lvis_dt, self.dilation_ratio, self.num_threads)
        base_gts, base_dts = self._gts, self._dts
        state.build_gts = lambda: base_gts
        state.build_dts = lambda: base_dts
        self._finish_native(state)

    def _pairs(self, p, cat_ids) -> Evaluation:
        """The evaluated pairs of ``_gts``/``_dts`` (as ``_prepare`` left them)."""
        return Evaluation(self._gts, self._dts, p.img_ids, cat_ids, bool(p.use_cats),
                          gather=lambda img_id: self._get_gt_dt(img_id, -1), max_det=None,
                          crowd_key=None,
                          dt_extra_ignore=lambda d: d["category_id"] in self.img_nel[d["image_id"]])

    def _evaluate_loops(self, p, cat_ids, native_iou: bool) -> None:
        """lvis' ``evaluate`` after the logging: ``self._prepare()``,
        ``self.compute_iou`` per pair (all pairs at once natively when it is
        this class's own), ``self.evaluate_img`` per image, category and
        area range."""
        self._prepare()
        if native_iou:
            state = self._pairs(p, cat_ids)
            state.compute_ious(p.iou_type, self.lvis_gt, self.lvis_dt, self.dilation_ratio, self.num_threads)
            if p.use_cats:
                # the entries lvis' compute_iou loop adds to _gts/_dts, in its order
                # (without categories the pooling above added them)
                touch_pairs(self._gts, p.img_ids, cat_ids, True, ())
                touch_pairs(self._dts, p.img_ids, cat_ids, True, ())
            self.ious = state.iou_dict().copy()
        else:
            compute_iou = self.compute_iou
            self.ious = {(img_id, cat_id): compute_iou(img_id, cat_id)
                         for img_id in p.img_ids for cat_id in cat_ids}
        evaluate_img = self.evaluate_img
        self.eval_imgs = [evaluate_img(img_id, cat_id, area_rng)
                          for cat_id in cat_ids for area_rng in p.area_rng for img_id in p.img_ids]

    def _finish_native(self, state) -> None:
        """Match ``state`` (its IoUs computed) in the kernels and make it the
        evaluation that ``eval_imgs``, ``ious``, ``_gts`` and ``_dts`` are
        built from."""
        p = self.params
        state.match(p.area_rng, p.iou_thrs, crowd_rule=False, num_threads=self.num_threads)
        state.use_cats = bool(p.use_cats)
        # (lvis pools an image's categories under the key (image, -1))
        state.pooled_cats = [-1] if p.cat_ids else []
        leave_ignore_flags(state)  # (lvis' evaluate_img leaves them)
        self._state = state
        reset_lazy(self, self._LAZY)

    def _evaluate_columns(self) -> bool:
        """``evaluate`` for results loaded as columns, without a dict per
        result; False (nothing done) when the general path must run."""
        p = self.params
        dt = self.lvis_dt
        columns = dt.__dict__.get("_columns") if isinstance(dt, LVISResults) else None
        if (columns is None or not self.use_fast_impl or not p.use_cats or not p.cat_ids
                or p.iou_type not in IOU_TYPES
                or any(self._gts.values()) or any(self._dts.values())):
            # (lvis' _prepare adds to what an earlier evaluation left in _gts/_dts)
            return False
        if p.iou_type != "bbox":
            if not columns.has_segmentation:
                return False
            try:
                columns.check_rles()
            except ValueError:
                return False  # the general path names the result as it does
        img_ids = list(p.img_ids)
        cat_ids = list(p.cat_ids)
        gtc = self._ground_truth_columns()
        if gtc is not None:
            gts = None
            gt_rows, gt_order, img_nl, img_pl = self._select_ground_truth_columns(gtc)
        else:
            gts, img_nl, img_pl = self._prepare_gts()
        # lvis' get_ann_ids(img_ids, cat_ids): area in (0, inf), then the federated rule
        keep = (columns.area > 0) & (columns.area < np.inf)
        keep &= select_rows(columns.category_id, cat_ids) >= 0
        keep &= select_rows(columns.image_id, img_ids) >= 0
        nel = self.img_nel
        federated, extra = _pair_flags(columns, keep, lambda i, c: c in img_nl[i] or c in img_pl[i],
                                       lambda i, c: c in nel[i])
        keep &= federated
        dt._looked_up.append(img_ids)
        if gtc is not None:
            state = Evaluation.from_columns(None, columns, img_ids, cat_ids, True, cat_ids, max_det=None,
                                            crowd_key=None, dt_keep=keep, dt_extra_ignore=extra,
                                            gt_columns=gtc, gt_selected=gt_rows, gt_ignore=gtc.own_ignore)
            state.build_gts = lambda: self._ground_truths_by_pair(gt_order)
        else:
            state = Evaluation.from_columns(gts, columns, img_ids, cat_ids, True, cat_ids, max_det=None,
                                            crowd_key=None, dt_keep=keep, dt_extra_ignore=extra)
            base_gts = self._gts
            state.build_gts = lambda: base_gts
        iou_type = p.iou_type
        cat_sel = cat_ids if cat_ids else None

        def build_dts():
            # lvis' _dts from the (now made) result dicts, as its _prepare selects them
            anns = dt.load_anns(dt.get_ann_ids(img_ids=img_ids, cat_ids=cat_sel))
            if iou_type == "segm":
                self._to_mask(anns, dt)
            out = defaultdict(list)
            for a in anns:
                i, c = a["image_id"], a["category_id"]
                if c not in img_nl[i] and c not in img_pl[i]:
                    continue
                out[i, c].append(a)
            return out

        state.build_dts = build_dts
        state.compute_ious(p.iou_type, self.lvis_gt, dt, self.dilation_ratio, self.num_threads)
        self._finish_native(state)
        return True

    def _prepare_gts(self):
        """The ground-truth half of lvis' ``_prepare`` (selection, masks for
        'segm', ``ignore``, ``_gts``, ``img_nel``, ``freq_groups``); returns
        the selected ground truths and lvis' per-image negative and present
        category lookups."""
        p = self.params
        cat_sel = p.cat_ids if p.cat_ids else None
        gts = self.lvis_gt.load_anns(self.lvis_gt.get_ann_ids(img_ids=p.img_ids, cat_ids=cat_sel))
        if p.iou_type == "segm":
            self._to_mask(gts, self.lvis_gt)
        for gt in gts:
            if "ignore" not in gt:
                gt["ignore"] = 0
        for gt in gts:
            self._gts[gt["image_id"], gt["category_id"]].append(gt)
        img_nl, img_pl = self._image_lookups((ann["image_id"], ann["category_id"]) for ann in gts)
        return gts, img_nl, img_pl

    def _image_lookups(self, gt_pairs):
        """The rest of lvis' ``_prepare`` once the ground truths are selected
        (``gt_pairs``: their (image id, category id)): ``img_nel`` and
        ``freq_groups`` set, the per-image negative (``img_nl``) and present
        (``img_pl``) category lookups returned."""
        p = self.params
        img_data = self.lvis_gt.load_imgs(ids=p.img_ids)
        img_nl = {d["id"]: d["neg_category_ids"] for d in img_data}
        img_pl = defaultdict(set)
        for img_id, cat_id in gt_pairs:
            img_pl[img_id].add(cat_id)
        self.img_nel = {d["id"]: d["not_exhaustive_category_ids"] for d in img_data}
        self.freq_groups = self._prepare_freq_group()
        return img_nl, img_pl

    def _ground_truth_columns(self):
        """The ground truth's columns when this evaluation can read them
        (unread dicts, every box or mask it needs usable, every evaluated
        image and category known, so that lvis' look-ups cannot fail), else
        None (the dicts are then made and read)."""
        gt = self.lvis_gt
        gtc = gt.__dict__.get("_gt_columns") if isinstance(gt, LVIS) else None
        if gtc is None:
            return None
        if not gtc.ids_unique():
            # (lvis' load_anns gives, for a repeated annotation id, the last such annotation each time)
            return None
        p = self.params
        try:
            if not (all(i in gt.imgs for i in p.img_ids) and all(c in gt.cats for c in p.cat_ids)):
                return None
        except TypeError:  # unhashable ids: lvis fails on them, and so do the dicts
            return None
        if p.iou_type == "bbox":
            return gtc if gtc.has_bbox.all() else None
        return gtc if gtc.masks_ready(self.num_threads) else None

    def _select_ground_truth_columns(self, gtc):
        """lvis' ground-truth selection (``get_ann_ids(img_ids, cat_ids)``:
        evaluated images and categories, area in (0, inf)) on columns.

        Returns the selected rows in file order and in lvis' order (by
        evaluated image, then file order), and lvis' per-image negative and
        present category lookups.  The selection and the images looked up
        are logged, so that dicts made later carry what lvis' ``_prepare``
        would have written into them.
        """
        p = self.params
        img_ids = list(p.img_ids)
        g_img = select_rows(gtc.image_id, img_ids)
        keep = (g_img >= 0) & (select_rows(gtc.category_id, list(p.cat_ids)) >= 0)
        keep &= (gtc.area > 0) & (gtc.area < np.inf)
        rows = np.flatnonzero(keep)
        order = rows[np.lexsort((rows, g_img[rows]))]
        gtc.log.append((p.iou_type, order))
        self.lvis_gt._looked_up.append(img_ids)
        pairs = set(zip(gtc.image_id[rows].tolist(), gtc.category_id[rows].tolist()))
        img_nl, img_pl = self._image_lookups(pairs)
        return rows, order, img_nl, img_pl

    def _ground_truths_by_pair(self, rows) -> defaultdict:
        """lvis' ``_gts`` of an evaluation run on ground-truth columns (the
        dicts are made now): ``rows`` in lvis' selection order."""
        return ground_truths_by_pair(self.lvis_gt.dataset["annotations"], rows)

    def compute_iou(self, img_id, cat_id):
        """IoU matrix of one image and category, (detections x ground truths)."""
        if self._reference:
            return super().compute_iou(img_id, cat_id)
        gt, dt = self._get_gt_dt(img_id, cat_id)
        if len(gt) == 0 and len(dt) == 0:
            return []
        state = Evaluation({(img_id, cat_id): gt}, {(img_id, cat_id): dt}, [img_id], [cat_id], True,
                           max_det=None, crowd_key=None)
        state.compute_ious(self.params.iou_type, self.lvis_gt, self.lvis_dt, self.dilation_ratio, 1)
        return state.iou_matrix(0)

    def summarize(self):
        """lvis' ``summarize``; with ``ap='pooled'`` the pooled AP of all
        categories (``AP``) and of each frequency group (``APr``, ``APc``,
        ``APf``), area range 'all'."""
        if self.ap == "pooled":
            return fixed_pooled.summarize_pooled(self)
        return super().summarize()

    def accumulate(self):
        """Accumulate per-image results into ``eval`` (lvis' ``accumulate``).

        Native after a native ``evaluate()`` whose ``eval_imgs`` nobody has
        read or assigned since, and for parameters of the evaluation's
        shape; otherwise lvis' own ``accumulate`` on ``eval_imgs``.  With
        ``ap='pooled'``, precision and recall per pool of categories
        (:func:`.fixed_pooled.accumulate_pooled`; ``eval['precision']`` is
        ``T x R x 4 x A``, pools all, r, c, f).
        """
        state = self._matched_state()
        p = self.params
        K = len(p.cat_ids) if p.use_cats else 1
        A, T, R = len(p.area_rng), len(p.iou_thrs), len(p.rec_thrs)
        same_shape = state is not None and (K, A, T, len(p.img_ids)) == (
            len(state.cat_ids), len(state.area_rng), state.dt_flags.shape[1], len(state.img_ids))
        if self.ap == "pooled":
            if not p.use_cats:
                raise ValueError("ap='pooled' pools categories: params.use_cats must be true")
            self.logger.info("Accumulating evaluation results.")
            log.info("LVISEval.accumulate: pooled (%s)", "native" if same_shape else "on eval_imgs")
            return fixed_pooled.accumulate_pooled(self, state if same_shape else None)
        if (state is None or state.nan_scores or np.isnan(np.asarray(p.rec_thrs, np.float64)).any()
                or not same_shape):
            # lvis' loops (on the same matching) sort NaN scores, index NaN
            # recall thresholds and read eval_imgs as they do
            log.info("LVISEval.accumulate: lvis' accumulate on eval_imgs")
            return _accumulate_lvis_on_any_numpy(self)
        log.info("LVISEval.accumulate: native")
        self.logger.info("Accumulating evaluation results.")
        if not (K and A and len(p.img_ids)):
            self.logger.warning("Please run evaluate first.")  # (lvis, for an empty eval_imgs)
        precision, recall, _ = state.accumulate(
            range(K), range(A), [np.iinfo(np.int64).max], range(len(p.img_ids)), p.rec_thrs,
            K, A, 1, with_scores=False, num_threads=self.num_threads)
        self.eval = {
            "params": p,
            "counts": [T, R, K, A],
            "date": datetime.datetime.now().strftime("%Y-%m-%d %H:%M:%S"),
            "precision": precision[..., 0],
            "recall": recall[..., 0],
        }
