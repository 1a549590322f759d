"""``YTVOS``: YouTube-VIS / OVIS ground truth and results, a drop-in for the
youtubevos/cocoapi fork's ``pycocotools.ytvos.YTVOS`` (and HQ-YTVIS'
``cocoapi_hq`` one, whose ``get_boundary`` and ``dilation_ratio`` it takes)."""
from __future__ import annotations

import copy
import itertools
import logging
import numbers
import os
import time
from collections import defaultdict
from typing import Optional

import numpy as np

from .._io import input_error_class, read_json
from .._parallel import resolve_threads
from ..instance._checks import _type_hint, describe_unknown_ids, hashable, warn_suspect
from ..instance._lazy import instance_dict
from ..masks import _rle
from ..masks.boundary import check_dilation_ratio
from . import _ytvis_columns
from ._ytvis_columns import video_length as _video_length

__all__ = ["YTVOS"]

log = logging.getLogger(__name__)


def _isArrayLike(obj):
    return hasattr(obj, '__iter__') and hasattr(obj, '__len__')


def _assertion(message: str) -> Exception:
    return input_error_class(AssertionError)(message)


class _Materialized:
    """``dataset``, ``anns``, ``vidToAnns``, ``catToVids``: ordinary
    attributes, except on a :class:`YTVOS` read as columns, where the first
    read (or assignment) makes the dicts and the index."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        d = instance_dict(obj)
        try:
            value = d[self.name]
        except KeyError:
            raise AttributeError(self.name) from None
        if value is _PENDING:
            obj._materialize()
            value = d[self.name]
        return value

    def __set__(self, obj, value):
        d = instance_dict(obj)
        if d.get("_tracks") is not None:
            obj._materialize()
        d[self.name] = value

    def __delete__(self, obj):
        d = instance_dict(obj)
        if d.get("_tracks") is not None:
            obj._materialize()
        try:
            del d[self.name]
        except KeyError:
            raise AttributeError(self.name) from None


#: the value of a dict attribute not made yet (its place in ``vars()`` kept)
_PENDING = object()


def tracks_of(obj):
    """The columns a YTVOS read as columns still evaluates from (its dicts
    not made), else None (any other object too)."""
    try:
        return instance_dict(obj).get("_tracks")
    except (TypeError, AttributeError):
        return None


class _Instance:
    """(A base that gives :class:`YTVOS` instances their attribute dict, which
    ``YTVOS.__dict__`` then shows with the dicts made.)"""


class YTVOS(_Instance):
    """A YouTube-VIS dataset: videos, categories and tracks (annotations with
    one segmentation per frame), indexed as the YouTube-VIS API indexes them.

    Parameters
    ----------
    annotation_file : str, optional
        A YouTube-VIS JSON file (``videos``, ``annotations``, ``categories``).
    get_boundary : bool, optional
        Accepted for HQ-YTVIS' ``cocoapi_hq`` (which makes every annotation's
        ``boundary_list`` when loading): here boundaries are made by
        ``YTVOSeval(..., iouType='boundary')`` when needed, per frame, and
        this only records the ratio.
    dilation_ratio : float, optional
        The boundary width HQ-YTVIS' loader would use (default 0.02);
        :class:`YTVOSeval` takes it as its default.
    strict : bool, optional
        Refuse input that is probably a mistake (a segmentation list whose
        length is not its video's, an RLE of another size than its video,
        ...) instead of warning (``SuspectInputWarning``) and evaluating it
        as the original does.

    Notes
    -----
    Prints what the original prints ("loading annotations into memory...",
    "creating index..."). The methods and attributes are the original's:
    ``dataset``, ``anns``, ``cats``, ``vids``, ``vidToAnns``, ``catToVids``,
    ``getAnnIds``, ``getCatIds``, ``getVidIds``, ``loadAnns``, ``loadCats``,
    ``loadVids``, ``loadRes``, ``annToRLE``, ``annToMask``.

    A file in the common schema (tracks of RLE frames) is read natively into
    column arrays, which :class:`YTVOSeval` evaluates; the annotation dicts
    (``dataset``, ``anns``, ``vidToAnns``, ``catToVids``) are made, identical,
    the first time one of them is read or assigned.
    """

    dataset = _Materialized()
    anns = _Materialized()
    vidToAnns = _Materialized()
    catToVids = _Materialized()

    def __init__(self, annotation_file=None, get_boundary=False, dilation_ratio=0.02, *, strict=False):
        self.dataset, self.anns, self.cats, self.vids = dict(), dict(), dict(), dict()
        self.vidToAnns, self.catToVids = defaultdict(list), defaultdict(list)
        self.get_boundary = bool(get_boundary)
        self.dilation_ratio = check_dilation_ratio(dilation_ratio)
        self._strict = bool(strict)
        self._input_problems: tuple = ()
        self._source = "the ground truth"
        if annotation_file is not None:
            self._source = f"ground truth {os.fspath(annotation_file)}"
            print('loading annotations into memory...')
            tic = time.time()
            source = annotation_file
            read = annotation_file
            got = _ytvis_columns.read_input(annotation_file, "ground truth")
            if got is not None:
                tracks = None if got.data is None else _ytvis_columns.load_ground_truth(
                    got.data, resolve_threads(None))
                if tracks is not None:
                    print('Done (t={:0.2f}s)'.format(time.time() - tic))
                    self._set_tracks(tracks)
                    return
                read = got.again()  # (the general path reads these very bytes)
                del got
            dataset = read_json(read, "ground truth")
            del read
            if type(dataset) != dict:
                raise _assertion(f'annotation file format {type(dataset)} not supported '
                                 f'(ground truth {os.fspath(source)}: a YouTube-VIS file is a JSON object)')
            print('Done (t={:0.2f}s)'.format(time.time() - tic))
            self.dataset = dataset
            self._input_problems = _check_ground_truth(dataset, os.fspath(source), self._strict)
            self.createIndex()

    def createIndex(self):
        """Index annotations, videos and categories by id (as the original)."""
        print('creating index...')
        self.anns, self.vidToAnns, self.catToVids, self.vids, self.cats = _index(self.dataset)
        print('index created!')

    # ------------------------------------------------------------ columns
    def _set_tracks(self, tracks) -> None:
        """Read as columns (:class:`._ytvis_columns.Tracks`): videos and
        categories indexed now, the annotation dicts made when first read."""
        print('creating index...')
        d = instance_dict(self)
        for name in ("dataset", "anns", "vidToAnns", "catToVids"):
            d[name] = _PENDING
        self.vids = {vid['id']: vid for vid in tracks.header['videos']}
        self.cats = {cat['id']: cat for cat in tracks.header['categories']}
        d["_tracks"] = tracks
        print('index created!')

    def _materialize(self) -> None:
        """Make the dicts of a dataset read as columns (what the original
        holds, with what ``loadRes`` and the evaluations run so far wrote
        into them); the columns are not used from then on."""
        d = instance_dict(self)
        tracks = d.pop("_tracks", None)
        if tracks is None:
            return
        anns = tracks.annotation_dicts()
        if tracks.kind == "gt":
            dataset = {name: anns if name == "annotations" else tracks.header[name] for name in tracks.header_spans}
        else:
            dataset = dict(tracks.header)
            dataset['annotations'] = anns
        d["dataset"] = dataset
        d["anns"], d["vidToAnns"], d["catToVids"], _, _ = _index(dataset)

    def _header(self, key: str, needed_by: str = ""):
        """``dataset[key]`` of a top-level member other than the annotations,
        without making the annotation dicts; where it is missing, the
        original's ``KeyError`` naming the file, the member and what needs it."""
        tracks = tracks_of(self)
        try:
            return self.dataset[key] if tracks is None else tracks.header[key]
        except KeyError:
            if not needed_by or not isinstance(self.dataset, dict):
                raise
            raise _missing_member(self, key, needed_by) from None

    def _annotations(self, needed_by: str) -> list:
        """``dataset['annotations']``, or the original's ``KeyError`` naming
        the file and why it has none (YouTube-VIS' own valid/test files)."""
        try:
            return self.dataset['annotations']
        except KeyError:
            if not isinstance(self.dataset, dict):
                raise
            raise _missing_member(self, 'annotations', needed_by) from None

    @property
    def __dict__(self):
        """The instance's attributes as the original's: ``vars(ytvos)``
        makes the dicts of a dataset read as columns first."""
        self._materialize()
        return instance_dict(self)

    @__dict__.setter
    def __dict__(self, value):
        d = instance_dict(self)
        d.clear()
        d.update(value)

    def __getstate__(self) -> dict:
        """The attributes with the dicts made (the columns do not pickle)."""
        return dict(self.__dict__)

    def info(self):
        """Print the dataset's ``info`` entries."""
        for key, value in self._header('info', 'info()').items():
            print('{}: {}'.format(key, value))

    def getAnnIds(self, vidIds=[], catIds=[], areaRng=[], iscrowd=None):
        """Ids of the annotations of the given videos and categories, with
        ``avg_area`` strictly inside ``areaRng`` and the given crowd flag
        (an empty filter is no filter)."""
        vidIds = vidIds if _isArrayLike(vidIds) else [vidIds]
        catIds = catIds if _isArrayLike(catIds) else [catIds]
        if len(vidIds) == len(catIds) == len(areaRng) == 0:
            anns = self._annotations('getAnnIds (and so YTVOSeval.evaluate)')
        else:
            if not len(vidIds) == 0:
                lists = [self.vidToAnns[vidId] for vidId in vidIds if vidId in self.vidToAnns]
                anns = list(itertools.chain.from_iterable(lists))
            else:
                anns = self._annotations('getAnnIds (and so YTVOSeval.evaluate)')
            anns = anns if len(catIds) == 0 else [ann for ann in anns if ann['category_id'] in catIds]
            anns = anns if len(areaRng) == 0 else [ann for ann in anns
                                                   if areaRng[0] < ann['avg_area'] < areaRng[1]]
        if iscrowd is not None:
            return [ann['id'] for ann in anns if ann['iscrowd'] == iscrowd]
        return [ann['id'] for ann in anns]

    def getCatIds(self, catNms=[], supNms=[], catIds=[]):
        """Ids of the categories with the given names, supercategories and ids."""
        catNms = catNms if _isArrayLike(catNms) else [catNms]
        supNms = supNms if _isArrayLike(supNms) else [supNms]
        catIds = catIds if _isArrayLike(catIds) else [catIds]
        cats = self._header('categories', 'getCatIds (and so YTVOSeval)')
        if not len(catNms) == len(supNms) == len(catIds) == 0:
            cats = cats if len(catNms) == 0 else [cat for cat in cats if cat['name'] in catNms]
            cats = cats if len(supNms) == 0 else [cat for cat in cats if cat['supercategory'] in supNms]
            cats = cats if len(catIds) == 0 else [cat for cat in cats if cat['id'] in catIds]
        return [cat['id'] for cat in cats]

    def getVidIds(self, vidIds=[], catIds=[]):
        """Ids of the given videos that have annotations of all the given categories."""
        vidIds = vidIds if _isArrayLike(vidIds) else [vidIds]
        catIds = catIds if _isArrayLike(catIds) else [catIds]
        if len(vidIds) == len(catIds) == 0:
            ids = self.vids.keys()
        else:
            ids = set(vidIds)
            for i, catId in enumerate(catIds):
                if i == 0 and len(ids) == 0:
                    ids = set(self.catToVids[catId])
                else:
                    ids &= set(self.catToVids[catId])
        return list(ids)

    def loadAnns(self, ids=[]):
        """The annotations with the given ids."""
        if _isArrayLike(ids):
            return [self.anns[id] for id in ids]
        elif type(ids) == int:
            return [self.anns[ids]]

    def loadCats(self, ids=[]):
        """The categories with the given ids."""
        if _isArrayLike(ids):
            return [self.cats[id] for id in ids]
        elif type(ids) == int:
            return [self.cats[ids]]

    def loadVids(self, ids=[]):
        """The videos with the given ids."""
        if _isArrayLike(ids):
            return [self.vids[id] for id in ids]
        elif type(ids) == int:
            return [self.vids[ids]]

    def loadRes(self, resFile, *, strict=None):
        """Results (a JSON file or a list of dicts: ``video_id``,
        ``category_id``, ``score``, ``segmentations`` with one compressed RLE
        or ``None`` per frame) as a :class:`YTVOS` object, with each result's
        ``areas``, ``bboxes``, ``avg_area``, ``id`` and ``iscrowd`` set as
        the original sets them (in the given dicts).

        Parameters
        ----------
        resFile : str, list of dict
        strict : bool, optional
            Default: the ground truth's ``strict``.
        """
        strict = self._strict if strict is None else bool(strict)
        res = YTVOS(get_boundary=self.get_boundary, strict=strict)
        res.dataset['videos'] = [img for img in self._header('videos', 'loadRes')]
        print('Loading and preparing results...')
        tic = time.time()
        source = "results"
        if isinstance(resFile, (str, os.PathLike)):
            source = f"results file {os.fspath(resFile)}"
            read = resFile
            got = _ytvis_columns.read_input(resFile, "results")
            if got is not None:
                tracks = None if got.data is None else _ytvis_columns.load_results(
                    got.data, self, resolve_threads(None))
                if tracks is not None:
                    res._source = source
                    res.dataset['categories'] = copy.deepcopy(self._header('categories', 'loadRes'))
                    print('DONE (t={:0.2f}s)'.format(time.time() - tic))
                    tracks.header = dict(res.dataset)
                    res._set_tracks(tracks)
                    return res
                read = got.again()  # (the general path reads these very bytes)
                del got
            anns = read_json(read, "results")
            del read
        elif type(resFile) == np.ndarray:
            raise input_error_class(TypeError)("results as a NumPy array are not supported (the YouTube-VIS API "
                                               "has no loadNumpyAnnotations): give a list of dicts or a file")
        else:
            anns = resFile
        if type(anns) != list:
            raise _assertion(f'results in not an array of objects ({source} holds a {type(anns).__name__})')
        try:
            annsVidIds = [ann['video_id'] for ann in anns]
        except (KeyError, TypeError):
            bad = next(i for i, a in enumerate(anns) if not isinstance(a, dict) or 'video_id' not in a)
            what = "is not an object" if not isinstance(anns[bad], dict) else "has no 'video_id'"
            raise input_error_class(KeyError if isinstance(anns[bad], dict) else TypeError)(
                f"{source}: result {bad} {what}") from None
        try:
            unknown = set(annsVidIds) - set(self.getVidIds())
        except TypeError:
            bad = next(i for i, v in enumerate(annsVidIds) if not hashable(v))
            raise input_error_class(TypeError)(f"{source}: result {bad} has an invalid 'video_id' "
                                               f"{annsVidIds[bad]!r:.40} (a video id of the ground truth)") from None
        if unknown:
            shown = sorted(unknown, key=repr)
            raise _assertion(f'Results do not correspond to current coco set ({source}: video ids not in the '
                             f'ground truth: {", ".join(map(repr, shown[:10]))}'
                             f'{f" (and {len(shown) - 10} more)" if len(shown) > 10 else ""}'
                             f'{_type_hint(shown, self.getVidIds())})')
        if not anns:
            raise input_error_class(IndexError)(f"{source} holds no result (the YouTube-VIS API cannot load "
                                                "an empty list)")
        if 'segmentations' in anns[0]:
            res.dataset['categories'] = copy.deepcopy(self._header('categories', 'loadRes'))
            res._input_problems = _prepare_results(anns, self.vids, self.cats, source, strict)
        elif not all(isinstance(a, dict) and 'id' in a for a in anns):
            # (the original leaves such results without ids: its index then fails on 'id')
            raise input_error_class(KeyError)(_no_segmentations(anns[0], source))
        res._source = source
        print('DONE (t={:0.2f}s)'.format(time.time() - tic))
        res.dataset['annotations'] = anns
        res.createIndex()
        return res

    def annToRLE(self, ann, frameId):
        """Frame ``frameId`` of an annotation as a compressed RLE (polygons
        and uncompressed RLE converted with pycocotools)."""
        from pycocotools import mask as maskUtils

        t = self.vids[ann['video_id']]
        h, w = t['height'], t['width']
        segm = ann['segmentations'][frameId]
        if type(segm) == list:
            rles = maskUtils.frPyObjects(segm, h, w)
            return maskUtils.merge(rles)
        if type(segm['counts']) == list:
            return maskUtils.frPyObjects(segm, h, w)
        return segm

    def annToMask(self, ann, frameId):
        """Frame ``frameId`` of an annotation as a binary (H, W) uint8 mask."""
        from pycocotools import mask as maskUtils

        return maskUtils.decode(self.annToRLE(ann, frameId))


# ---------------------------------------------------------------------- checks
def _video_sizes(videos) -> dict:
    return {v['id']: (v.get('height'), v.get('width'), _video_length(v)) for v in videos
            if isinstance(v, dict) and 'id' in v}


def _rle_parts(seg, what: str):
    """(counts, h, w) of a compressed RLE dict; ValueError naming ``what`` otherwise."""
    if not isinstance(seg, dict) or 'counts' not in seg or 'size' not in seg:
        raise input_error_class(TypeError)(f"{what} is not an RLE ({{'size': [h, w], 'counts': ...}}) nor None")
    counts, size = seg['counts'], seg['size']
    if not (isinstance(size, (list, tuple)) and len(size) == 2
            and all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x >= 0 for x in size)):
        raise ValueError(f"{what} has an RLE size that is not [height, width]: {size!r}")
    return counts, int(size[0]), int(size[1])


def _refuse_or_warn(strict: bool, message: str, problems: list,
                    then: str = "evaluated as the YouTube-VIS API evaluates it") -> None:
    problems.append(message)
    if strict:
        raise ValueError(message + " (strict=True)")
    warn_suspect(f"{message}: {then} (strict=True refuses it)")


#: what each top-level member of a YouTube-VIS file holds (for the messages)
_MEMBERS = {
    'videos': "a list of {'id', 'width', 'height', 'length', 'file_names'}",
    'categories': "a list of {'id', 'name'}",
    'annotations': "a list of tracks {'id', 'video_id', 'category_id', 'segmentations', 'areas', 'bboxes', "
                   "'iscrowd'}",
    'info': "an object",
}

#: what each field of a ground-truth track holds, and what reads it
_TRACK_FIELDS = {
    'segmentations': "one RLE, polygon list or null per frame, which the evaluation reads",
    'areas': "each frame's mask area, or null, from which the evaluation takes the track's area",
    'iscrowd': "0, or 1 for a crowd track, which the evaluation reads",
}


def _missing_member(obj, key: str, needed_by: str) -> Exception:
    """The original's ``KeyError`` for a top-level member that a file lacks,
    naming the file, the member, what needs it and why it may be missing."""
    source = getattr(obj, '_source', 'the dataset')
    if key == 'annotations':
        why = ("YouTube-VIS' valid.json and test.json are distributed without them: their results are scored "
               "by the challenge's server; evaluating needs a ground truth with annotations")
    else:
        why = f"{_MEMBERS.get(key, 'the member')} is expected there"
    return input_error_class(KeyError)(f"{source} has no {key!r}, which {needed_by} needs ({why})")


def _no_segmentations(first, source: str) -> str:
    """Why results without ``segmentations`` cannot be loaded, with the likely fix."""
    message = f"{source}: result 0 has no 'segmentations' (one compressed RLE, or null, per frame of its video)"
    if isinstance(first, dict) and 'segmentation' in first:
        return message + ("; it has 'segmentation', COCO's field for one image: YouTube-VIS results give a "
                          "list 'segmentations', one entry per frame")
    if isinstance(first, dict) and 'bboxes' in first:
        return message + "; box results cannot be evaluated on videos (the YouTube-VIS API's box IoU does not run)"
    return message


def _check_ground_truth(dataset: dict, source: str, strict: bool) -> tuple:
    """The ground truth's fields, checked where the YouTube-VIS API needs
    them: what its loader fails on is refused (the original's class); what
    it loads but an evaluation fails on (no ``videos`` or ``categories``,
    tracks without ``segmentations``, ``areas`` or ``iscrowd``) is warned
    about (refused with ``strict``), and the evaluation, if it comes, names
    it; a file without ``annotations`` (YouTube-VIS' own valid and test
    files) loads as there, and cannot be evaluated."""
    what = f"ground truth {source}"
    for key in ('videos', 'annotations', 'categories'):
        if key in dataset and not isinstance(dataset[key], list):
            raise ValueError(f"{what}: {key!r} is not a list ({_MEMBERS[key]})")
    problems: list = []
    for key in ('videos', 'categories'):
        if key not in dataset:
            _refuse_or_warn(strict, f"{what} has no {key!r} ({_MEMBERS[key]})", problems,
                            "loaded as the YouTube-VIS API loads it, but YTVOSeval and loadRes need it")
    sizes = _video_sizes(dataset.get('videos', ()))
    missing: dict = {}
    for i, ann in enumerate(dataset.get('annotations', ())):
        name = f"{what}: annotation {i}"
        if not isinstance(ann, dict):
            raise input_error_class(TypeError)(f"{name} is not an object")
        fatal = ('id', 'video_id') + (('category_id',) if 'categories' in dataset else ())
        for key in fatal:  # (the original's index reads them)
            if key not in ann:
                raise input_error_class(KeyError)(f"{name} has no {key!r}")
        name = f"{what}: annotation {i} (id {ann['id']!r})"
        for key in ('category_id', 'segmentations', 'areas', 'iscrowd'):
            if key not in ann:
                missing.setdefault(key, []).append(name)
        segs = ann.get('segmentations')
        if segs is None:
            continue
        if not isinstance(segs, list):
            raise ValueError(f"{name}: 'segmentations' is not a list (one entry per frame)")
        video = sizes.get(ann['video_id'])
        if video is None:
            _refuse_or_warn(strict, f"{name} is of video {ann['video_id']!r}, which is not in 'videos'", problems)
            continue
        h, w, n = video
        if n is not None and len(segs) != n:
            _refuse_or_warn(strict, f"{name} has {len(segs)} segmentations for a video of {n} frames", problems)
        for f, seg in enumerate(segs):
            if not seg or isinstance(seg, list):
                continue  # (absent; a polygon is rasterised at the video's size)
            counts, sh, sw = _rle_parts(seg, f"{name}, frame {f}")
            if (sh, sw) != (h, w):
                _refuse_or_warn(strict, f"{name}, frame {f}: an RLE of {sh}x{sw} in a video of {h}x{w}", problems)
    for key, names in missing.items():
        who = f"{names[0]} and {len(names) - 1} more have" if len(names) > 1 else f"{names[0]} has"
        form = _TRACK_FIELDS.get(key, "a category of 'categories'")
        _refuse_or_warn(strict, f"{who} no {key!r} ({form})", problems,
                        "loaded as the YouTube-VIS API loads it, but an evaluation fails on it")
    return tuple(problems)


def score_problem(ann: dict, what: str) -> Optional[Exception]:
    """The error the original's evaluation raises on a result's score (it
    negates the score to sort: ``KeyError`` without one, ``TypeError`` for
    one that is not a number), with this package's message; None for a
    usable score."""
    if 'score' not in ann:
        return input_error_class(KeyError)(f"{what} has no 'score' (every result needs one: a number, the "
                                           "track's confidence)")
    score = ann['score']
    if not isinstance(score, numbers.Real):
        shown = "null" if score is None else f"{score!r:.40}"
        return input_error_class(TypeError)(f"{what} has a 'score' that is not a number: {shown} (give the "
                                            "track's confidence as a JSON number)")
    return None


def _prepare_results(anns: list, vids: dict, cats: dict, source: str, strict: bool) -> tuple:
    """What the original's ``loadRes`` adds to each result (``areas``,
    ``bboxes``, ``id``, ``avg_area``, ``iscrowd``), the masks' areas and
    boxes computed natively, and the checks."""
    problems: list = []
    strings, hs, ws, where = [], [], [], []
    for i, ann in enumerate(anns):
        what = f"{source}: result {i}"
        if not isinstance(ann, dict):
            raise input_error_class(TypeError)(f"{what} is not an object")
        if 'category_id' not in ann:  # (the original's index reads it)
            raise input_error_class(KeyError)(f"{what} has no 'category_id'")
        if not hashable(ann['category_id']):
            raise input_error_class(TypeError)(f"{what} has an invalid 'category_id' {ann['category_id']!r:.40}")
        segs = ann.get('segmentations')
        if not isinstance(segs, list):
            raise input_error_class(KeyError if segs is None else TypeError)(
                f"{what} has no 'segmentations' list (one compressed RLE or null per frame of its video)")
        if strict:
            problem = score_problem(ann, what)
            if problem is not None:
                raise problem
    unknown = sorted({a['category_id'] for a in anns} - set(cats), key=repr)
    if unknown:
        _refuse_or_warn(strict, f"{source}: results of categories that are not in the ground truth: "
                                f"{describe_unknown_ids(unknown, cats)}", problems)
    for i, ann in enumerate(anns):
        what = f"{source}: result {i}"
        segs = ann['segmentations']
        video = vids.get(ann.get('video_id'))
        vh, vw, n = (video.get('height'), video.get('width'), _video_length(video)) if video else (None, None, None)
        if n is not None and len(segs) != n:
            _refuse_or_warn(strict, f"{what} has {len(segs)} segmentations for a video of {n} frames", problems)
        for f, seg in enumerate(segs):
            if not seg:
                continue
            counts, h, w = _rle_parts(seg, f"{what}, frame {f}")
            if not isinstance(counts, (str, bytes)):
                raise input_error_class(TypeError)(f"{what}, frame {f}: results need compressed RLE counts (a "
                                                   "string), as the YouTube-VIS API reads them")
            if (h, w) != (vh, vw):
                _refuse_or_warn(strict, f"{what}, frame {f}: an RLE of {h}x{w} in a video of {vh}x{vw}", problems)
            strings.append(counts)
            hs.append(h)
            ws.append(w)
            where.append((i, f))
    status, area, box = _rle.check_area_bbox(_rle.StringTable(strings), np.array(hs, np.int64),
                                             np.array(ws, np.int64))
    if status.any():
        k = int(np.flatnonzero(status)[0])
        i, f = where[k]
        why = "is not a valid RLE string" if status[k] == 1 else f"does not hold {hs[k]}x{ws[k]} pixels"
        raise ValueError(f"{source}: result {i}, frame {f}: the RLE counts {why}")
    _set_result_fields(anns, area.astype(np.uint32), box)
    return tuple(problems)


def _set_result_fields(anns: list, area32: np.ndarray, box: np.ndarray) -> None:
    """What the original's ``loadRes`` sets in each result, given the areas
    (uint32) and boxes of its present frames, in order."""
    k = 0
    for id, ann in enumerate(anns):
        ann['areas'] = []
        if 'bboxes' not in ann:
            ann['bboxes'] = []
        for seg in ann['segmentations']:
            if seg:
                ann['areas'].append(area32[k])
                if len(ann['bboxes']) < len(ann['areas']):
                    ann['bboxes'].append(box[k].copy())
                k += 1
            else:
                ann['areas'].append(None)
                if len(ann['bboxes']) < len(ann['areas']):
                    ann['bboxes'].append(None)
        ann['id'] = id + 1
        nonzero = [a for a in ann['areas'] if a]
        ann['avg_area'] = 0 if len(nonzero) == 0 else np.array(nonzero).mean()
        ann['iscrowd'] = 0


def _index(dataset: dict):
    """``anns``, ``vidToAnns``, ``catToVids``, ``vids``, ``cats`` of a
    dataset, as the original's ``createIndex`` builds them."""
    anns, cats, vids = {}, {}, {}
    vidToAnns, catToVids = defaultdict(list), defaultdict(list)
    try:
        if 'annotations' in dataset:
            for ann in dataset['annotations']:
                vidToAnns[ann['video_id']].append(ann)
                anns[ann['id']] = ann
        if 'videos' in dataset:
            for vid in dataset['videos']:
                vids[vid['id']] = vid
        if 'categories' in dataset:
            for cat in dataset['categories']:
                cats[cat['id']] = cat
        if 'annotations' in dataset and 'categories' in dataset:
            for ann in dataset['annotations']:
                catToVids[ann['category_id']].append(ann['video_id'])
    except KeyError as exc:
        raise input_error_class(KeyError)(f"an entry of the dataset has no {exc.args[0]!r}") from None
    except TypeError as exc:
        raise input_error_class(TypeError)(f"the dataset is not a YouTube-VIS dataset ({exc})") from None
    return anns, vidToAnns, catToVids, vids, cats
