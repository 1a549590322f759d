"""``YTVOSeval``: YouTube-VIS AP (youtubevos/cocoapi's ``ytvoseval.YTVOSeval``)
and HQ-YTVIS' Tube-Boundary AP (SysCV/vmt ``cocoapi_hq``) on the instance
engine: tube IoUs from the tube kernel, pycocotools' matching, accumulation
and summary from the engine."""
from __future__ import annotations

import contextlib
import logging
import numbers
import time
import warnings
from collections import defaultdict
from typing import Optional

import numpy as np
import pycocotools.cocoeval

from . import _tubes, _ytvis_columns
from .ytvos import _TRACK_FIELDS, _missing_member, score_problem, tracks_of
from .._io import input_error_class
from .._parallel import resolve_threads, run_ranges, split_by_cost
from ..instance._cocolike import (copy_params, iou_type_as, native_accumulate, native_lists, start_evaluate,
                                  summarize_detections, summary_lines, warn_missing_summary_max_dets)
from ..instance._checks import warn_suspect
from ..instance._engine import Evaluation, leave_ignore_flags
from ..instance._lazy import Lazy, LazyEvaluator, reset_lazy, touch_pairs
from ..masks import _rle
from ..masks.boundary import check_dilation_ratio, dilation_pixels_array
from ..masks.polygons import polygons_to_rle

__all__ = ["YTVOSeval", "Params"]

IOU_TYPES = ("segm", "boundary", "bbox", "keypoints")

log = logging.getLogger(__name__)


class Params:
    """Evaluation parameters of YouTube-VIS (pycocotools' ``Params`` over
    videos): ``vidIds``, ``catIds``, ``iouThrs``, ``recThrs``, ``maxDets``
    (1, 10, 100), ``areaRng`` (all, small < 128², medium < 256², large, on a
    track's mean per-frame area), ``areaRngLbl``, ``useCats``, ``iouType``.
    ``imgIds`` is not read (as in the original: see :attr:`imgIds`)."""

    def setDetParams(self):
        self.vidIds = []
        self.catIds = []
        self.iouThrs = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
        self.recThrs = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
        self.maxDets = [1, 10, 100]
        self.areaRng = [[0 ** 2, 1e5 ** 2], [0 ** 2, 128 ** 2], [128 ** 2, 256 ** 2], [256 ** 2, 1e5 ** 2]]
        self.areaRngLbl = ['all', 'small', 'medium', 'large']
        self.useCats = 1

    def setKpParams(self):
        self.vidIds = []
        self.catIds = []
        self.iouThrs = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
        self.recThrs = np.linspace(.0, 1.00, int(np.round((1.00 - .0) / .01)) + 1, endpoint=True)
        self.maxDets = [20]
        self.areaRng = [[0 ** 2, 1e5 ** 2], [32 ** 2, 96 ** 2], [96 ** 2, 1e5 ** 2]]
        self.areaRngLbl = ['all', 'medium', 'large']
        self.useCats = 1

    def __init__(self, iouType='segm'):
        if iouType in ('segm', 'bbox', 'boundary'):
            self.setDetParams()
        elif iouType == 'keypoints':
            self.setKpParams()
        else:
            raise input_error_class(Exception)('iouType not supported')
        self.iouType = iouType
        self.useSegm = None

    @property
    def imgIds(self):
        """Not a parameter of the YouTube-VIS API, whose evaluation reads
        ``vidIds`` only: a value assigned here is kept and has no effect (as
        there, where it is a new attribute nobody reads).  Until one is
        assigned it reads as ``vidIds`` (what pycocotools' own loops, the
        fallback of ``accumulate``, read)."""
        d = self.__dict__
        if d.get('_loops') or '_imgIds' not in d:
            return self.vidIds
        return d['_imgIds']

    @imgIds.setter
    def imgIds(self, value):
        warnings.warn("params.imgIds has no effect on a YouTube-VIS evaluation, as in the YouTube-VIS API: it "
                      "evaluates the videos of params.vidIds (set that to evaluate some videos only)", UserWarning,
                      stacklevel=2)
        self.__dict__['_imgIds'] = value


@contextlib.contextmanager
def _as_pycocotools(*params):
    """``imgIds`` read as ``vidIds`` by pycocotools' own loops, whatever
    was assigned to it (which the YouTube-VIS API never reads)."""
    flagged = [p for p in params if isinstance(p, Params)]
    for p in flagged:
        p.__dict__['_loops'] = True
    try:
        yield
    finally:
        for p in flagged:
            p.__dict__.pop('_loops', None)


class YTVOSeval(LazyEvaluator, pycocotools.cocoeval.COCOeval):
    """Video instance segmentation AP, a drop-in for YouTube-VIS' ``YTVOSeval``.

    ``iouType='segm'`` gives YouTube-VIS / OVIS AP (youtubevos/cocoapi):
    COCO's AP where the IoU of two tracks is the sum over frames of their
    intersections over the sum over frames of their unions, and the area
    ranges read a track's mean non-empty per-frame area (``avg_area``).
    ``iouType='boundary'`` gives HQ-YTVIS' Tube-Boundary AP (SysCV/vmt
    ``cocoapi_hq``): ``min(tube mask IoU, tube Boundary IoU)``, the Boundary
    IoU bands made per frame at ``dilation_ratio`` of the frame diagonal, and
    the tube mask IoU for crowd ground truth.  ``evaluate()``,
    ``accumulate()``, ``summarize()`` (the same 12 lines), ``params``,
    ``stats``, ``eval``, ``evalImgs`` and ``ious`` are used as in the original.

    Parameters
    ----------
    cocoGt, cocoDt : YTVOS
        Ground truth and results (``cocoGt.loadRes(...)``).
    iouType : {'segm', 'boundary'}
        ('bbox' and 'keypoints' are refused: the original's code for them
        does not run on videos.)
    dilation_ratio : float, optional
        Band width for 'boundary', as a fraction of the frame diagonal, for
        ground truth and results alike.  Default (None): as cocoapi_hq, the
        ground truth's bands at the ratio its ``YTVOS(..., dilation_ratio=...)``
        was made with and the results' at their ``YTVOS``'s, which ``loadRes``
        makes 0.02 whatever the ground truth's is (the same unless the ground
        truth was loaded with another ratio; a warning is logged then).
    use_fast_impl : bool, optional
        Match and accumulate in the kernels (default); ``False`` runs the
        Python loops of the original on the same IoUs (same results).
    num_threads : int, optional
        Threads for the kernels (default: all cores); results do not depend on it.

    Notes
    -----
    Which path runs: ``evaluate()`` is native (tube IoUs, matching and
    accumulation in the kernels) unless ``use_fast_impl`` is false or a
    subclass overrides ``_prepare``, ``computeIoU``, ``computeBoundaryIoU``
    or ``evaluateVid``; then those are called as the original calls them
    (the native tube IoUs of every pair at once when the IoU method is this
    class's own).  ``accumulate()`` uses the kernels after a native
    evaluation whose ``evalImgs`` nobody has read or assigned since, else
    pycocotools' ``accumulate`` (the original's) on ``evalImgs``.  The path
    taken is logged (logger ``boundary_api.video.ytvoseval``).
    """

    _state: Optional[Evaluation] = None
    _LAZY = ("evalImgs", "ious", "_gts", "_dts")
    evalImgs = Lazy("_build_eval_imgs")
    ious = Lazy("_build_ious")
    _gts = Lazy("_build_gts")
    _dts = Lazy("_build_dts")
    _NATIVE_METHODS = ("_prepare", "computeIoU", "computeBoundaryIoU", "evaluateVid")
    _EVAL_IMGS_STYLE = "ytvos"

    def __init__(self, cocoGt=None, cocoDt=None, iouType='segm', dilation_ratio=None, use_fast_impl=True,
                 num_threads=None):
        if not iouType:
            print('iouType not specified. use default iouType segm')
        if dilation_ratio is None:
            # as cocoapi_hq: each side's bands at the ratio its YTVOS was made with
            # (loadRes makes the results' at the default 0.02, whatever the ground truth's)
            self.dilation_ratio = check_dilation_ratio(getattr(cocoGt, "dilation_ratio", 0.02))
            self._dt_dilation_ratio = check_dilation_ratio(getattr(cocoDt, "dilation_ratio", 0.02))
        else:
            self.dilation_ratio = self._dt_dilation_ratio = check_dilation_ratio(dilation_ratio)
        self.use_fast_impl = bool(use_fast_impl)
        self.num_threads = resolve_threads(num_threads)
        self.cocoGt = cocoGt
        self.cocoDt = cocoDt
        self.params = {}
        self.evalVids = defaultdict(list)
        self.eval = {}
        self._gts = defaultdict(list)
        self._dts = defaultdict(list)
        self.params = Params(iouType=iouType)
        self._paramsEval = {}
        self.stats = []
        self.ious = {}
        if cocoGt is not None:
            self.params.vidIds = sorted(cocoGt.getVidIds())
            self.params.catIds = sorted(cocoGt.getCatIds())

    # ------------------------------------------------------------ _prepare
    def _prepare(self):
        """Select the annotations of ``params``, make every present frame a
        compressed RLE (in place, as the original), set ``avg_area``, the
        ground truths' ``ignore`` flags, and group them into ``_gts``/``_dts``."""
        p = self.params
        if p.useCats:
            gts = self.cocoGt.loadAnns(self.cocoGt.getAnnIds(vidIds=p.vidIds, catIds=p.catIds))
            dts = self.cocoDt.loadAnns(self.cocoDt.getAnnIds(vidIds=p.vidIds, catIds=p.catIds))
        else:
            gts = self.cocoGt.loadAnns(self.cocoGt.getAnnIds(vidIds=p.vidIds))
            dts = self.cocoDt.loadAnns(self.cocoDt.getAnnIds(vidIds=p.vidIds))
        _check_tracks(gts, dts, self.cocoGt, self.cocoDt)
        if p.iouType in ('segm', 'boundary'):
            _to_rle(gts, self.cocoGt, "ground truth", self.num_threads)
            _to_rle(dts, self.cocoDt, "results", self.num_threads)
        for gt in gts:
            gt['ignore'] = gt['ignore'] if 'ignore' in gt else 0
            gt['ignore'] = 'iscrowd' in gt and gt['iscrowd']
        self._gts = defaultdict(list)
        self._dts = defaultdict(list)
        for gt in gts:
            self._gts[gt['video_id'], gt['category_id']].append(gt)
        for dt in dts:
            self._dts[dt['video_id'], dt['category_id']].append(dt)
        self.evalVids = defaultdict(list)
        self.eval = {}

    # ------------------------------------------------------------ evaluate
    def evaluate(self):
        """Run per-video evaluation (the original's ``evaluate``); native
        unless ``use_fast_impl`` is false or a subclass overrides a method
        the native path stands in for (see the class notes)."""
        tic = time.time()
        p = self.params
        start_evaluate(p, "vidIds")
        if p.iouType not in ('segm', 'boundary'):
            raise ValueError(f"iouType {p.iouType!r} cannot be evaluated on videos: the YouTube-VIS API's code for "
                             "it does not run (its tube IoU merges masks); use 'segm' or 'boundary'")
        self.params = p
        self._state = None
        _check_has_annotations(self.cocoGt)
        overridden = self._overridden()
        if overridden or not self.use_fast_impl:
            why = f"{type(self).__name__} overrides {', '.join(overridden)}" if overridden else "use_fast_impl=False"
            log.info("YTVOSeval.evaluate: the original's loops (%s)", why)
            self._evaluate_loops(p, overridden)
        else:
            log.info("YTVOSeval.evaluate: native matching")
            self._evaluate_native(p)
        self._paramsEval = copy_params(self.params)
        print('DONE (t={:0.2f}s).'.format(time.time() - tic))

    def _pairs(self, p) -> Evaluation:
        cat_ids = p.catIds if p.useCats else [-1]
        gts, dts = self._gts, self._dts

        def gather(vid):
            return ([g for c in p.catIds for g in gts[vid, c]], [d for c in p.catIds for d in dts[vid, c]])

        return Evaluation(gts, dts, p.vidIds, cat_ids, bool(p.useCats), gather=gather, max_det=p.maxDets[-1],
                          crowd_key="iscrowd", area_key="avg_area")

    def _evaluate_native(self, p) -> None:
        if self._evaluate_columns(p):
            return
        self._prepare()
        state = self._pairs(p)
        state.ious = self._tube_ious(state, p.iouType)
        state.match(p.areaRng, p.iouThrs, crowd_rule=True, num_threads=self.num_threads)
        base_gts, base_dts = self._gts, self._dts
        state.build_gts = lambda: base_gts
        state.build_dts = lambda: base_dts
        state.use_cats = bool(p.useCats)
        state.pooled_cats = list(p.catIds)
        leave_ignore_flags(state)  # (the original's evaluateVid leaves them)
        self._state = state
        reset_lazy(self, self._LAZY)

    # ------------------------------------------------------------ columns
    def _evaluate_columns(self, p) -> bool:
        """The native evaluation of a ground truth and results both read as
        columns whose dicts nobody has made (False, nothing done, otherwise):
        ``_prepare``'s selection on the arrays, what it would change in the
        dicts logged for when they are made, ``_gts``, ``_dts``, ``ious`` and
        ``evalImgs`` made when read."""
        gt_owner, dt_owner = self.cocoGt, self.cocoDt
        gtc, dtc = tracks_of(gt_owner), tracks_of(dt_owner)
        if gtc is None or dtc is None or gtc.kind != "gt" or dtc.kind != "results":
            return False
        cats = p.catIds if p.useCats else None
        if not p.useCats and len(set(map(_hashable, p.catIds))) != len(p.catIds):
            return False  # (the original pools a repeated category twice)
        gsel = gtc.select(p.vidIds, cats)
        dsel = dtc.select(p.vidIds, cats)
        if gsel is None or dsel is None:
            return False
        # what _prepare's _to_rle reads of the videos (as it reads them now, for the dicts made later)
        videos = _videos_read(gtc, gsel, gt_owner.vids, True)
        dvideos = _videos_read(dtc, dsel, dt_owner.vids, False)
        if videos is None or dvideos is None:
            return False  # (a lookup _to_rle would fail on: the dict path says so)
        gf = gtc.frame_rows(gsel)[0]
        poly = gf[gtc.frame_kind[gf] == _ytvis_columns.POLYGONS]
        if len(poly):
            vid = np.repeat(gtc.video_id[gsel], gtc.nframes[gsel])[gtc.frame_kind[gf] == _ytvis_columns.POLYGONS]
            hw = [(videos[v].get('height'), videos[v].get('width')) for v in vid.tolist()]
            if not all(_ytvis_columns._plain_int(h) and _ytvis_columns._plain_int(w) for h, w in hw):
                return False
            hw = np.array(hw, np.int64).reshape(-1, 2)
            if not gtc.rasterize(poly, hw[:, 0], hw[:, 1], self.num_threads):
                return False  # (polygons_to_rle refuses one: the dict path raises its error)
        log.info("YTVOSeval.evaluate: native, on the files' columns")
        threads = self.num_threads

        def prepare_gts(anns):
            gts = [anns[r] for r in gsel.tolist()]
            _to_rle(gts, _Videos(videos), "ground truth", threads)
            for gt in gts:
                gt['ignore'] = gt['ignore'] if 'ignore' in gt else 0
                gt['ignore'] = 'iscrowd' in gt and gt['iscrowd']

        def prepare_dts(anns):
            _to_rle([anns[r] for r in dsel.tolist()], _Videos(dvideos), "results", threads)

        gtc.log(prepare_gts)
        dtc.log(prepare_dts)
        self.evalVids = defaultdict(list)
        self.eval = {}
        cat_ids = p.catIds if p.useCats else [-1]
        state = Evaluation.from_columns(None, _ytvis_columns.ResultsView(dtc), p.vidIds, cat_ids, bool(p.useCats),
                                        p.catIds, p.maxDets[-1], crowd_key="iscrowd",
                                        gt_columns=_ytvis_columns.GroundTruthView(gtc), gt_selected=gsel,
                                        gt_ignore=gtc.iscrowd != 0)
        state.ious = self._tube_ious_columns(state, p.iouType, gtc, dtc)
        state.match(p.areaRng, p.iouThrs, crowd_rule=True, num_threads=threads)
        state.build_gts = lambda: gtc.grouped(gt_owner, gsel)
        state.build_dts = lambda: dtc.grouped(dt_owner, dsel)
        state.use_cats = bool(p.useCats)
        state.pooled_cats = list(p.catIds)
        leave_ignore_flags(state)  # (noted in the ground truth's log)
        self._state = state
        reset_lazy(self, self._LAZY)
        return True

    def _tube_ious_columns(self, state: Evaluation, iou_type: str, gtc, dtc) -> np.ndarray:
        """:meth:`_tube_ious` of tracks read as columns."""
        out = np.zeros(int(state.pair_o[-1]), np.float64)
        if not len(out):
            return out
        grows, drows = state.gt_rows, state.dt_rows
        G = len(grows)
        gf, g0, gn = gtc.frame_rows(grows)
        df, d0, dn = dtc.frame_rows(drows)
        gk, gh, gw, gb, gs, gl = gtc.frames_of(gf)
        dk, dh, dw, db, ds, dl = dtc.frames_of(df, len(gtc.buffers))
        table = _rle.StringTable.from_buffers(gtc.buffers + dtc.buffers, np.concatenate((gb, db)),
                                              np.concatenate((gs, ds)), np.concatenate((gl, dl)))
        kind = np.concatenate((gk, dk))
        absent = kind == _ytvis_columns.ABSENT
        fh = np.where(absent, -1, np.concatenate((gh, dh)))
        fw = np.where(absent, 0, np.concatenate((gw, dw)))
        nf = np.concatenate((gn, dn))
        f0 = np.concatenate((g0, d0 + len(gf))).astype(np.int64)
        minus = np.full(len(fh), -1, np.int64)
        masks = _FrameTable(table, fh, fw, minus, minus, f0, nf)
        bands = None
        if iou_type == 'boundary':
            # (the same frames; an absent one compared at its annotation's own size)
            ah = np.repeat(np.concatenate((gtc.height[grows], dtc.height[drows])), nf)
            aw = np.repeat(np.concatenate((gtc.width[grows], dtc.width[drows])), nf)
            ok = (ah >= 0) & (aw >= 0)
            bands = _FrameTable(table, fh, fw, np.where(absent, np.where(ok, ah, -1), fh),
                                np.where(absent, np.where(ok, aw, -1), fw), f0, nf)

        def describe(k):
            if k < G:
                r = int(grows[k])
                return "ground truth", int(gtc.ann_id[r]), int(gtc.video_id[r])
            r = int(drows[k - G])
            return "result", r + 1, int(dtc.video_id[r])

        return self._run_tubes(state, 1 if iou_type == 'boundary' else 0, masks, bands, G, describe, out, kind)

    def _evaluate_loops(self, p, overridden) -> None:
        self._prepare()
        cat_ids = p.catIds if p.useCats else [-1]
        name = "computeBoundaryIoU" if p.iouType == 'boundary' else "computeIoU"
        if name not in overridden:
            state = self._pairs(p)
            state.ious = self._tube_ious(state, p.iouType)
            touch_pairs(self._gts, p.vidIds, cat_ids, bool(p.useCats), p.catIds)
            touch_pairs(self._dts, p.vidIds, cat_ids, bool(p.useCats), p.catIds)
            self.ious = _ytvos_iou_dict(state)
        else:
            computeIoU = getattr(self, name)
            self.ious = {(vidId, catId): computeIoU(vidId, catId) for vidId in p.vidIds for catId in cat_ids}
        evaluateVid = self.evaluateVid
        maxDet = p.maxDets[-1]
        self.evalImgs = [evaluateVid(vidId, catId, areaRng, maxDet)
                         for catId in cat_ids for areaRng in p.areaRng for vidId in p.vidIds]

    def _tube_ious(self, state: Evaluation, iou_type: str) -> np.ndarray:
        """The IoUs of every pair of ``state``, in its layout (tube kernel)."""
        out = np.zeros(int(state.pair_o[-1]), np.float64)
        if not len(out):
            return out
        anns = state.gt_anns + state.dt_anns
        G = len(state.gt_anns)
        masks = _frame_table([a['segmentations'] for a in anns])
        bands = None
        if iou_type == 'boundary':
            bands = _frame_table([a.get('segmentations_refined', a['segmentations']) for a in anns],
                                 [(a.get('height'), a.get('width')) for a in anns])

        def describe(k):
            ann = anns[k]
            return "ground truth" if k < G else "result", ann.get('id'), ann.get('video_id')

        return self._run_tubes(state, 1 if iou_type == 'boundary' else 0, masks, bands, G, describe, out)

    def _run_tubes(self, state: Evaluation, mode: int, masks, bands, G: int, describe, out: np.ndarray,
                   kind: Optional[np.ndarray] = None) -> np.ndarray:
        """The tube kernel over every pair of ``state`` into ``out``: the
        tracks' frames in ``masks`` (ground truths first, ``G`` of them),
        their bands' in ``bands`` (mode 1), ``kind`` the frames' kinds where
        some are uncompressed counts; ``describe(track)`` names a track for
        an error (kind, id, video)."""
        extra = {} if kind is None else dict(fkind=kind)
        if mode == 1:
            if self._dt_dilation_ratio != self.dilation_ratio:
                log.warning("YTVOSeval: the ground truth's boundary bands at dilation_ratio %s, the results' at %s, "
                            "as cocoapi_hq makes them (YTVOSeval(..., dilation_ratio=r) uses one ratio)",
                            self.dilation_ratio, self._dt_dilation_ratio)
            ratio = np.full(len(bands.fh), self._dt_dilation_ratio)
            ratio[:bands.f0[G] if G < len(bands.f0) else len(bands.fh)] = self.dilation_ratio
            fd = np.zeros(len(bands.fh), np.int64)
            present = bands.fh >= 0
            fd[present] = np.minimum(_dilation_pixels(bands.fh[present], bands.fw[present], ratio[present]),
                                     np.maximum(bands.fh[present], bands.fw[present]))
            extra.update(bands=bands.table, bfh=bands.fh, bfw=bands.fw, bsh=bands.sh, bsw=bands.sw, bfd=fd,
                         band_f0=bands.f0, band_nf=bands.nf)
            if kind is not None:
                extra.update(bkind=kind)
        gt_track = np.arange(G, dtype=np.int64)
        dt_track = np.arange(G, len(masks.f0), dtype=np.int64)
        costs = (np.diff(state.pair_g) * np.diff(state.pair_d) + 1) * np.maximum(1, _pair_frames(state, masks.nf, G))
        ranges = split_by_cost(costs, self.num_threads * 8 if self.num_threads > 1 else 1)
        empty = np.zeros(len(out), np.uint8)
        try:
            run_ranges(lambda lo, hi: _tubes.tube_ious(mode, masks.table, masks.fh, masks.fw, masks.f0, masks.nf,
                                                       gt_track, dt_track, state.gt_crowd, state.pair_g,
                                                       state.pair_d, state.pair_o, out, lo, hi, empty, **extra),
                       ranges, self.num_threads)
        except _tubes.BadMask as exc:
            t = bands if exc.band else masks
            k = int(np.searchsorted(t.f0, exc.frame, side="right")) - 1
            which, ann_id, video_id = describe(k)
            raise ValueError(f"{which} annotation {ann_id!r} (video {video_id!r}), frame "
                             f"{exc.frame - t.f0[k]}: the RLE counts do not decode to its "
                             f"{t.fh[exc.frame]}x{t.fw[exc.frame]} pixels") from None
        if empty.any():
            _print_empty_unions(state, empty, mode)
        return out

    # -------------------------------------------------- the original's methods
    def computeIoU(self, vidId, catId):
        """Tube mask IoUs of one video and category (detections x ground truths)."""
        return self._one_pair(vidId, catId, 'segm')

    def computeBoundaryIoU(self, vidId, catId):
        """HQ-YTVIS' tube boundary IoUs of one video and category."""
        return self._one_pair(vidId, catId, 'boundary')

    def _pair_tracks(self, vidId, catId):
        """The ground truths and results one video and category compares (all
        categories pooled without ``useCats``), as the original selects them."""
        p = self.params
        if p.useCats:
            return self._gts[vidId, catId], self._dts[vidId, catId]
        return ([g for c in p.catIds for g in self._gts[vidId, c]],
                [d for c in p.catIds for d in self._dts[vidId, c]])

    def _one_pair(self, vidId, catId, iou_type):
        p = self.params
        gt, dt = self._pair_tracks(vidId, catId)
        if len(gt) == 0 and len(dt) == 0:
            return []
        state = Evaluation({(vidId, catId): gt}, {(vidId, catId): dt}, [vidId], [catId], True,
                           max_det=p.maxDets[-1], area_key="avg_area")
        state.ious = self._tube_ious(state, iou_type)
        return _ytvos_iou_dict(state)[vidId, catId]

    def evaluateVid(self, vidId, catId, aRng, maxDet):
        """Per video and category matching (the original's ``evaluateVid``,
        pycocotools' ``evaluateImg`` on ``avg_area``): the engine's matching
        of this one pair on ``self.ious[vidId, catId]``, so that an
        overridden ``computeIoU`` (or edited ``ious``) is what is matched;
        the ground truths keep the ``_ignore`` flags the original leaves."""
        p = self.params
        gt, dt = self._pair_tracks(vidId, catId)
        if len(gt) == 0 and len(dt) == 0:
            return None
        state = Evaluation({(vidId, catId): gt}, {(vidId, catId): dt}, [vidId], [catId], True, max_det=maxDet,
                           crowd_key="iscrowd", area_key="avg_area")
        ious = self.ious[vidId, catId]
        out = np.zeros(int(state.pair_o[-1]), np.float64)
        if len(ious) and len(out):
            out[:] = np.asarray(ious, np.float64)[:state.num_dt].reshape(-1)
        state.ious = out
        state.match([aRng], p.iouThrs, crowd_rule=True, num_threads=1)
        leave_ignore_flags(state)
        entry = state.eval_entry(0, 0, "ytvos")
        entry['aRng'] = aRng
        return entry

    def computeOks(self, vidId, catId):
        raise ValueError("keypoints cannot be evaluated on videos")

    def accumulate(self, p=None):
        """Accumulate per-video results into ``eval`` (the original's
        ``accumulate``): native after a native ``evaluate()`` whose
        ``evalImgs`` nobody has read or assigned since, else pycocotools'
        loops on ``evalImgs``."""
        state = self._matched_state()
        if state is None:
            log.info("YTVOSeval.accumulate: the original's accumulate on evalImgs")
            with _as_pycocotools(self.params if p is None else p, self._paramsEval):
                return super().accumulate(p)
        if p is None:
            p = self.params
        p.catIds = p.catIds if p.useCats == 1 else [-1]
        lists = native_lists(p, self._paramsEval, state, ids="vidIds")
        if lists is None:
            log.info("YTVOSeval.accumulate: the original's accumulate (parameters unlike the evaluation's)")
            with _as_pycocotools(p, self._paramsEval):
                return super().accumulate(p)
        log.info("YTVOSeval.accumulate: native")
        self.eval = native_accumulate(p, state, self.num_threads, lists)

    def summarize(self):
        """Compute and print the 12 summary metrics (the original's lines)."""
        warn_missing_summary_max_dets(self.params)
        if self.eval:
            try:
                lines = summary_lines(self.params)
            except (AttributeError, IndexError, KeyError, TypeError):
                lines = None
            if lines is not None:
                self.stats = summarize_detections(self, lines)
                return
        with iou_type_as(self.params, "segm"):
            super().summarize()

    def __str__(self):
        self.summarize()
        return ""

    def _build_ious(self, state) -> dict:
        return _ytvos_iou_dict(state)


def _pair_frames(state: Evaluation, nf: np.ndarray, G: int) -> np.ndarray:
    """The longest track of each pair (for splitting the IoU step)."""
    return np.maximum(_range_max(nf[:G], state.pair_g), _range_max(nf[G:], state.pair_d))


def _range_max(values: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """``values[bounds[i]:bounds[i + 1]].max()`` per range, 0 for an empty one."""
    out = np.zeros(len(bounds) - 1, np.int64)
    lo, hi = bounds[:-1], bounds[1:]
    full = np.flatnonzero(hi > lo)
    if len(full) and len(values):
        out[full] = np.maximum.reduceat(np.asarray(values, np.int64), lo[full])
        # (reduceat runs each range up to the next start: the empty ranges between
        # them are skipped, so every range's end is the next non-empty one's start)
    return out


class _FrameTable:
    """Per-frame compressed RLE strings of a list of tracks, for the tube kernel:
    ``table`` (strings), ``fh``/``fw`` (the mask's size; ``fh`` -1 where the
    track has no mask), ``sh``/``sw`` (the size a frame is compared at: the
    mask's, or for a frame without one the size given for its track, -1 if
    none), ``f0``/``nf`` (each track's first entry and frame count)."""

    def __init__(self, table, fh, fw, sh, sw, f0, nf):
        self.table, self.fh, self.fw, self.sh, self.sw, self.f0, self.nf = table, fh, fw, sh, sw, f0, nf


def _frame_table(tracks, absent_sizes=None) -> _FrameTable:
    strings, fh, fw, sh, sw, f0, nf = [], [], [], [], [], [], []
    for i, segs in enumerate(tracks):
        f0.append(len(fh))
        nf.append(len(segs))
        ah = aw = -1
        if absent_sizes is not None:
            h, w = absent_sizes[i]
            if _is_size(h) and _is_size(w):
                ah, aw = int(h), int(w)
        for seg in segs:
            if seg:
                size = seg['size']
                strings.append(seg['counts'])
                fh.append(size[0])
                fw.append(size[1])
                sh.append(size[0])
                sw.append(size[1])
            else:
                strings.append(b"")
                fh.append(-1)
                fw.append(0)
                sh.append(ah)
                sw.append(aw)
    a = lambda v: np.array(v, np.int64)  # noqa: E731
    return _FrameTable(_rle.StringTable(strings), a(fh), a(fw), a(sh), a(sw), a(f0), a(nf))


class _Videos:
    """What ``_to_rle`` reads of a dataset (its ``vids``)."""

    def __init__(self, vids: dict):
        self.vids = vids


def _videos_read(tracks, rows: np.ndarray, vids: dict, sizes: bool) -> Optional[dict]:
    """The videos ``_to_rle`` looks up for the present frames of ``rows``
    (with their ``height`` and ``width`` where ``sizes``: a ground truth's
    counts and polygons are converted at them), as they are now; None when
    one is missing (``_to_rle`` would fail)."""
    present = tracks.nframes[rows] > 0
    rows = rows[present]
    if not len(rows):
        return {}
    has = _range_max((tracks.frame_kind != _ytvis_columns.ABSENT).astype(np.int64),
                     np.concatenate(([0], np.cumsum(tracks.nframes)))) > 0
    out = {}
    for v in _ytvis_columns.distinct(tracks.video_id[rows[has[rows]]]).tolist():
        video = vids.get(v)
        if video is None:
            return None
        if sizes:
            try:
                out[v] = {'height': video['height'], 'width': video['width']}
            except (KeyError, TypeError):
                return None
        else:
            out[v] = {}
    return out


def _hashable(v):
    try:
        hash(v)
        return v
    except TypeError:
        return id(v)


def _is_size(v) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0


def _dilation_pixels(h: np.ndarray, w: np.ndarray, ratio: np.ndarray) -> np.ndarray:
    """``dilation_pixels`` per frame, each at its own ratio."""
    out = np.zeros(len(h), np.int64)
    for r in np.unique(ratio):
        sel = ratio == r
        out[sel] = dilation_pixels_array(h[sel], w[sel], float(r))
    return out


def _print_empty_unions(state: Evaluation, empty: np.ndarray, mode: int) -> None:
    """What YouTube-VIS' ``computeIoU`` prints for each detection and ground
    truth whose summed union is empty, in its order (video, then category;
    the mask IoUs, then, for 'boundary', the boundary ones)."""
    order = sorted(range(state.num_pairs), key=lambda i: (state.pair_img[i], state.pair_cat[i]))
    for i in order:
        o0, o1 = int(state.pair_o[i]), int(state.pair_o[i + 1])
        flags = empty[o0:o1]
        if not flags.any():
            continue
        vid, cat = state.img_ids[state.pair_img[i]], state.cat_ids[state.pair_cat[i]]
        line = "Mask sizes in video {} and category {} may not match!".format(vid, cat)
        for bit in ((1, 2) if mode == 1 else (1,)):
            for _ in range(int(np.count_nonzero(flags & bit))):
                print(line)


def _ytvos_iou_dict(state: Evaluation, gts=None, dts=None, p=None) -> dict:
    """``ious`` as the original builds it, for every (video, category) of
    the evaluation: ``[]`` where a pair has neither ground truths nor
    detections, a (D, G) array otherwise (empty when one side is)."""
    pos = {}
    for i in range(state.num_pairs):
        pos[state.img_ids[state.pair_img[i]], state.cat_ids[state.pair_cat[i]]] = i
    out = {}
    for vid in state.img_ids:
        for cat in state.cat_ids:
            i = pos.get((vid, cat))
            if i is None:
                out[vid, cat] = []
                continue
            G = int(state.pair_g[i + 1] - state.pair_g[i])
            D = int(state.pair_d[i + 1] - state.pair_d[i])
            out[vid, cat] = state.iou_matrix(i) if G and D else np.zeros((D, G))
    return out


def _check_has_annotations(gt) -> None:
    """A ground truth without ``annotations`` (YouTube-VIS' own valid and test
    files) evaluates to -1 everywhere, as in the original: warned about, and
    refused by a ground truth loaded with ``strict=True``."""
    if gt is None or tracks_of(gt) is not None or not isinstance(gt.dataset, dict) or 'annotations' in gt.dataset:
        return
    error = _missing_member(gt, 'annotations', 'YTVOSeval.evaluate')
    if getattr(gt, '_strict', False):
        raise error
    warn_suspect(f"{error}: every AP is undefined (-1), as in the YouTube-VIS API (strict=True refuses it)")


def _check_tracks(gts: list, dts: list, cocoGt, cocoDt) -> None:
    """What the original's evaluation fails on in the tracks it selected,
    raised as it fails (``KeyError``, ``TypeError``) with a message naming the
    file, the track and the field: a ground truth without ``segmentations``,
    ``areas`` or ``iscrowd``, a result without a numeric ``score``."""
    for gt in gts:
        for key in ('segmentations', 'areas', 'iscrowd'):
            if key not in gt:
                source = getattr(cocoGt, '_source', 'the ground truth')
                raise input_error_class(KeyError)(f"{source}: annotation id {gt.get('id')!r} has no {key!r} "
                                                  f"({_TRACK_FIELDS[key]})")
    for dt in dts:
        if 'score' in dt and isinstance(dt['score'], numbers.Real):
            continue
        source = getattr(cocoDt, '_source', 'results')
        ann_id = dt.get('id')
        problem = score_problem(dt, f"{source}: result {ann_id - 1}" if type(ann_id) is int
                                else f"{source}: result id {ann_id!r}")
        if problem is not None:
            raise problem


def _to_rle(anns: list, dataset, what: str, num_threads: int) -> None:
    """The original's ``_toMask``: every present frame a compressed RLE (in
    place: polygons rasterised in one native batch, uncompressed RLE with
    pycocotools), and ``avg_area`` from ``areas``."""
    from pycocotools import mask as maskUtils

    polys, where, hs, ws = [], [], [], []
    for ann in anns:
        # (cocoapi_hq also converts a ground truth's 'segmentations_refined', its bands' masks)
        for key in ('segmentations', 'segmentations_refined'):
            segs = ann.get(key) if key != 'segmentations' else ann['segmentations']
            if segs is None:
                continue
            for i, a in enumerate(segs):
                if not a:
                    continue
                v = dataset.vids[ann['video_id']]
                if type(a) == list:
                    polys.append(a)
                    where.append((segs, i))
                    hs.append(v['height'])
                    ws.append(v['width'])
                elif type(a['counts']) == list:
                    segs[i] = maskUtils.frPyObjects(a, v['height'], v['width'])
        try:
            areas = ann['areas']
        except KeyError:
            raise input_error_class(KeyError)(f"{what} annotation {ann.get('id')!r} has no 'areas'") from None
        nonzero = [a for a in areas if a]
        ann['avg_area'] = 0 if len(nonzero) == 0 else np.array(nonzero).mean()
    if polys:
        counts = polygons_to_rle(polys, hs, ws, num_threads)
        for (segs, i), c, h, w in zip(where, counts, hs, ws):
            segs[i] = {'size': [h, w], 'counts': c}
