"""``boundary_api.LVISEval``: lvis' LVISEval with ``iou_type='boundary'``."""
from __future__ import annotations

import datetime
import logging
import types
from collections import defaultdict
from typing import Optional

import numpy as np



from ._original import _lvis_eval
from .dataset import LVIS, LVISResults, _is_path
from ..instance._engine import Evaluation, _distinct_sorted, leave_ignore_flags, sorted_unique
from ..instance._lazy import Lazy, LazyEvaluator, instance_dict, reset_lazy, touch_pairs
from .._io import add_note, warn_large_dilation_ratio
from ..instance._checks import (UnsafePolygonError, UnsafeRLEError, pycocotools_iou, refuse_unsafe_polygons,
                                describe_annotation as _describe)
from ..instance import _summary
from ..instance._columns import select_rows
from ..instance._gt_columns import ground_truths_by_pair
from ..instance._dataset import masks_unusable
from .._parallel import resolve_threads
from ..masks.boundary import check_dilation_ratio
from . import fixed_pooled

__all__ = ["LVISEval"]


IOU_TYPES = ("segm", "bbox", "boundary")


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


def _pair_membership(columns, rows, *tables) -> Optional[list]:
    """:func:`_pair_flags` for the tests ``c in t[i]`` (true if in any of a
    group's tables): ``tables`` are groups of ``{image_id: collection of
    category ids}``.  Vectorised when every image looked up is in every
    table and every id is a plain int; None otherwise (then ask
    :func:`_pair_flags`, which words any problem as before)."""
    sel = np.flatnonzero(rows)
    outs = [np.zeros(columns.n, bool) for _ in tables]
    if not len(sel):
        return outs
    img = columns.image_id[sel]
    cat = columns.category_id[sel]
    imgs = _distinct_sorted(np.sort(img))  # (np.unique would import numpy.ma)
    cats = _distinct_sorted(np.sort(cat))
    nc = len(cats)
    key = np.searchsorted(imgs, img) * nc + np.searchsorted(cats, cat)
    img_list = imgs.tolist()
    for out, group in zip(outs, tables):
        allowed_img, allowed_cat = [], []
        for i in img_list:
            for table in group:
                try:
                    coll = table[i]
                except (KeyError, TypeError, IndexError):
                    return None
                for c in coll:
                    if type(c) is not int:
                        return None
                    allowed_img.append(i)
                    allowed_cat.append(c)
        if not allowed_img:
            continue
        a_img = np.searchsorted(imgs, np.array(allowed_img, np.int64))
        try:
            a_cat_ids = np.array(allowed_cat, np.int64)
        except OverflowError:
            return None
        a_cat = np.searchsorted(cats, a_cat_ids)
        found = (a_cat < nc) & (cats[np.minimum(a_cat, nc - 1)] == a_cat_ids)
        allowed = a_img[found] * nc + a_cat[found]
        out[sel] = np.isin(key, allowed)
    return outs


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
    (``logging``, level INFO, logger ``boundary_api.lvis``).

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
        deferred = False
        if self.params.iou_type == "segm" and not self._reference \
                and not (getattr(self.lvis_gt, "_strict", False) or getattr(self.lvis_dt, "_strict", False)):
            # results read as columns: their strings are checked where the IoU
            # step decodes them (one decode each), or by _evaluate_columns; a
            # bad one then leads here as when it was checked first
            deferred = self._results_checked_later()
            why = masks_unusable(self.lvis_gt, *(() if deferred else (self.lvis_dt,)))
            if why is not None:
                self._reference, self._reference_why = True, why
        if self._reference:
            return self._evaluate_reference()
        p = self.params
        # (held while a bad string may still hand the evaluation to lvis, which logs them itself)
        held = ["Running per image evaluation.", "Evaluate annotation type *{}*".format(p.iou_type)]
        if not deferred:
            for line in held:
                self.logger.info(line)
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
        done = self._evaluate_columns()
        # (warns when a string is bad)
        why = masks_unusable(self.lvis_dt) if deferred and not done else None
        if why is not None:
            self._reference, self._reference_why = True, why
            return self._evaluate_reference()
        if deferred:
            for line in held:
                self.logger.info(line)
        if done:
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

    def _evaluate_reference(self):
        """lvis' own ``evaluate`` (input it evaluates otherwise than this
        package).  Masks its C code (pycocotools') would crash or hang on
        are refused first; an exception of lvis' own code comes through as
        it is (its class and message), with a note naming the input's
        problem."""
        self._state = None
        p = self.params
        try:
            if p.iou_type == "segm":
                cat_ids = p.cat_ids if p.cat_ids else None  # (lvis' own selection, as its _prepare makes it)
                # (the polygons its _prepare rasterises; RLEs are refused where
                # their IoU is computed, compute_iou)
                for dataset, kind in ((self.lvis_gt, "ground truth annotation"), (self.lvis_dt, "result")):
                    refuse_unsafe_polygons(dataset.load_anns(dataset.get_ann_ids(img_ids=p.img_ids, cat_ids=cat_ids)),
                                           dataset.imgs, lambda a, kind=kind: _describe(kind, a))
            return super().evaluate()
        except (UnsafePolygonError, UnsafeRLEError):
            raise
        except Exception as exc:  # noqa: BLE001 - lvis' own failure, explained
            problems = tuple(p for o in (self.lvis_gt, self.lvis_dt) for p in getattr(o, "_input_problems", ()))
            why = problems[0] if problems else self.__dict__.get("_reference_why")
            if why:
                add_note(exc, f"boundary_api: lvis' own evaluation fails on this input ({why})")
            raise

    def _results_checked_later(self) -> bool:
        """Whether Mask AP's results are columns whose RLE strings
        :meth:`_evaluate_columns` checks (in the IoU step where it can): the
        native path, strings not yet checked."""
        dt = self.lvis_dt
        columns = dt.__dict__.get("_columns") if isinstance(dt, LVISResults) else None
        return (columns is not None and columns.has_segmentation and not columns.rles_checked
                and not getattr(dt, "_rles_checked", False) and hasattr(dt, "_input_problems")
                and self.use_fast_impl and not self._overridden() and columns.sizes_ok())

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
        if p.iou_type != "bbox" and not columns.has_segmentation:
            return False
        # Mask and Boundary AP on ground-truth columns check the results' strings in
        # the IoU step, where it decodes them (see Evaluation.compute_ious);
        # otherwise (and on the dict path, which fills _gts first) here
        fused = p.iou_type in ("boundary", "segm") and not columns.rles_checked and columns.sizes_ok()
        gtc = self._ground_truth_columns() if fused else None
        fused = fused and gtc is not None
        if p.iou_type != "bbox" and not fused:
            try:
                columns.check_rles(self.num_threads)
            except ValueError:
                return False  # the general path names the result as it does
        img_ids = list(p.img_ids)
        cat_ids = list(p.cat_ids)
        if not fused:
            gtc = self._ground_truth_columns()
        # what the selection below logs, undone if a result's string is bad
        undo = (len(gtc.log), len(self.lvis_gt._looked_up), len(dt._looked_up)) if fused else None
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
        flags = _pair_membership(columns, keep, (img_nl, img_pl), (nel,))
        if flags is None:
            flags = _pair_flags(columns, keep, lambda i, c: c in img_nl[i] or c in img_pl[i],
                                lambda i, c: c in nel[i])
        federated, extra = flags
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
        try:
            state.compute_ious(p.iou_type, self.lvis_gt, dt, self.dilation_ratio, self.num_threads)
        except ValueError:
            if not fused or columns.rles_checked or not self._some_rle_bad(columns):
                raise
            # a bad string: nothing done, as when the check above refuses it
            del gtc.log[undo[0]:], self.lvis_gt._looked_up[undo[1]:], dt._looked_up[undo[2]:]
            return False
        self._finish_native(state)
        return True

    def _some_rle_bad(self, columns) -> bool:
        """Whether the results' check refuses a string (after the IoU step
        raised, to tell the check's error from any other)."""
        try:
            columns.check_rles(self.num_threads)
        except ValueError:
            return True
        return False

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
            if self.params.iou_type == "segm":
                ious = self._reference_mask_ious(img_id, cat_id)
                if ious is not None:
                    return ious
            return super().compute_iou(img_id, cat_id)
        gt, dt = self._get_gt_dt(img_id, cat_id)
        if len(gt) == 0 and len(dt) == 0:
            return []
        state = Evaluation({(img_id, cat_id): gt}, {(img_id, cat_id): dt}, [img_id], [cat_id], True,
                           max_det=None, crowd_key=None)
        state.compute_ious(self.params.iou_type, self.lvis_gt, self.lvis_dt, self.dilation_ratio, 1)
        return state.iou_matrix(0)

    def _reference_mask_ious(self, img_id, cat_id):
        """lvis' 'segm' ``compute_iou`` where pycocotools' C code would misread
        a mask (:func:`~boundary_api.instance._mask_checks.pycocotools_iou`):
        the same masks selected, the same array computed here, or the masks
        it crashes or never ends on refused; None where its own code runs."""
        try:
            gt, dt = self._get_gt_dt(img_id, cat_id)
            if not gt and not dt:
                return None  # (its own [])
            order = np.argsort([-d["score"] for d in dt], kind="mergesort")
            dt = [dt[i] for i in order]
            d_segs, g_segs = [d["segmentation"] for d in dt], [g["segmentation"] for g in gt]
        except (KeyError, TypeError, ValueError, IndexError):  # (lvis' own code raises)
            return None
        return pycocotools_iou(d_segs, g_segs, [0] * len(gt), lambda i: _describe("result", dt[i]),
                               lambda j: _describe("ground truth annotation", gt[j]))

    def _summarize(self, summary_type, iou_thr=None, area_rng="all", freq_group_idx=None):
        """lvis' ``_summarize``: the mean of the same values, taken in the same
        order, so the same float.  lvis copies one area range out of the
        precision array (39 MB at 1,203 categories) and compares and selects
        twice, 13 times per ``summarize``; here one area range is a view (its
        elements in the order of lvis' copy) and the values are selected once."""
        batch = instance_dict(self).get("_summary_batch")
        if batch is not None:
            value = batch.get((summary_type, iou_thr, area_rng, freq_group_idx))
            if value is not None:
                return value
        key = "precision" if summary_type == "ap" else "recall"
        s = self.eval.get(key) if type(self.eval) is dict else None
        if type(s) is not np.ndarray or s.ndim != (4 if key == "precision" else 3):
            return super()._summarize(summary_type, iou_thr=iou_thr, area_rng=area_rng,
                                      freq_group_idx=freq_group_idx)
        aidx = [idx for idx, _area_rng in enumerate(self.params.area_rng_lbl) if _area_rng == area_rng]
        if s.dtype == np.float64 and len(aidx) == 1:
            values = _summary_values(s, key, iou_thr, self.params.iou_thrs, aidx[0],
                                     self.freq_groups[freq_group_idx]
                                     if key == "precision" and freq_group_idx is not None else None)
            if values is not None:
                return -1 if len(values) == 0 else np.mean(values)
        if iou_thr is not None:
            s = s[np.where(iou_thr == self.params.iou_thrs)[0]]
        if key == "precision" and freq_group_idx is not None:
            s = s[:, :, self.freq_groups[freq_group_idx], aidx]
        elif len(aidx) == 1:
            s = s[..., aidx[0]:aidx[0] + 1]  # lvis' s[..., aidx], as a view
        else:
            s = s[..., aidx]
        kept = s[s > -1]
        if len(kept) == 0:
            return -1
        return np.mean(kept)

    def summarize(self):
        """lvis' ``summarize``; with ``ap='pooled'`` the pooled AP of all
        categories (``AP``) and of each frequency group (``APr``, ``APc``,
        ``APf``), area range 'all'."""
        if self.ap == "pooled":
            return fixed_pooled.summarize_pooled(self)
        # lvis' nine AP lines read the same precision array: gathered in one
        # pass here, each then taken by the _summarize call lvis makes (a
        # subclass's own _summarize is left to do its own)
        batch = _ap_summaries(self) if type(self)._summarize is LVISEval._summarize else None
        instance_dict(self)["_summary_batch"] = batch
        try:
            return super().summarize()
        finally:
            instance_dict(self).pop("_summary_batch", None)

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


def _summary_values(s: np.ndarray, key: str, iou_thr, iou_thrs, a: int, group) -> Optional[np.ndarray]:
    """The values lvis' ``_summarize`` averages, ``s[s > -1]`` of its
    selection, in its order, gathered in one pass (``_summary.summary_values``);
    None where the indices are not plain in-range integers (NumPy's indexing
    then decides, as in lvis)."""
    K, A = s.shape[-2], s.shape[-1]
    if not 0 <= a < A:
        return None
    if iou_thr is not None:
        t_idx = np.where(iou_thr == iou_thrs)[0].astype(np.int64)
    else:
        t_idx = np.arange(s.shape[0], dtype=np.int64)
    if group is None:
        k_idx = np.arange(K, dtype=np.int64)
    else:
        k_idx = np.asarray(group)
        if k_idx.ndim != 1 or k_idx.dtype.kind not in "iu" or len(k_idx) == 0:
            return None
        k_idx = k_idx.astype(np.int64)
        if k_idx.min() < 0 or k_idx.max() >= K:
            return None
    if key == "recall":
        s = s[:, None]  # (T, 1, K, A): one "recall threshold"
    out = np.empty(len(t_idx) * s.shape[1] * len(k_idx), np.float64)
    n = _summary.summary_values(s, t_idx, k_idx, a, out)
    return out[:n]


def _summary_threads(ev) -> int:
    """The evaluator's ``num_threads`` (1 if it has none that is valid)."""
    n = getattr(ev, "num_threads", 1)
    return n if type(n) is int and n >= 1 else 1


#: lvis' ``summarize``: the AP lines it asks ``_summarize`` for
_AP_LINES = [(None, "all", None), (0.50, "all", None), (0.75, "all", None), (None, "small", None),
             (None, "medium", None), (None, "large", None), (None, "all", 0), (None, "all", 1),
             (None, "all", 2)]


def _ap_summaries(ev) -> Optional[dict]:
    """The values of lvis' AP lines (``_summarize('ap', ...)`` keyed by its
    arguments), each the mean of the same elements in the same order as
    lvis takes it, from one pass over the precision array
    (``_summary.summary_gather``); lines whose selection is not plain
    (an area label not there once, a frequency group not strictly
    increasing in-range indices) are left out and computed by ``_summarize``."""
    s = ev.eval.get("precision") if type(ev.eval) is dict else None
    if type(s) is not np.ndarray or s.ndim != 4 or s.dtype != np.float64:
        return None
    p = ev.params
    T, R, K, A = s.shape
    t_mask = np.zeros(T, np.uint32)
    k_mask = np.zeros(K, np.uint32)
    a_mask = np.zeros(A, np.uint32)
    lines = []
    for iou_thr, area_rng, group in _AP_LINES:
        aidx = [idx for idx, lbl in enumerate(p.area_rng_lbl) if lbl == area_rng]
        if len(aidx) != 1 or not 0 <= aidx[0] < A:
            continue
        if iou_thr is None:
            t_idx = np.arange(T)
        else:
            t_idx = np.where(iou_thr == p.iou_thrs)[0]
            if len(t_idx) and t_idx.max() >= T:
                continue
        if group is None:
            k_idx = np.arange(K)
        else:
            try:
                k_idx = np.asarray(ev.freq_groups[group])
            except (AttributeError, IndexError, TypeError, KeyError):
                continue
            if (k_idx.ndim != 1 or k_idx.dtype.kind not in "iu" or len(k_idx) == 0
                    or k_idx.min() < 0 or k_idx.max() >= K or (len(k_idx) > 1 and (np.diff(k_idx) <= 0).any())):
                continue
        bit = np.uint32(1 << len(lines))
        t_mask[t_idx] |= bit
        k_mask[k_idx] |= bit
        a_mask[aidx[0]] |= bit
        lines.append(("ap", iou_thr, area_rng, group))
    if not lines:
        return None
    out, offset = _summary.summary_gather(s, t_mask, k_mask, a_mask, len(lines), _summary_threads(ev))
    values = {}
    for b, line in enumerate(lines):
        kept = out[offset[b]:offset[b + 1]]
        values[line] = -1 if len(kept) == 0 else np.mean(kept)
    return values

