"""One cache of per-annotation RLEs and boundary RLEs, shared by every evaluator.

Masks are converted to compressed RLE once per annotation, and boundaries
computed once per annotation and dilation ratio, for as long as the dataset
object (a pycocotools/lvis ground truth or results object) lives.  Evaluating
several result files against one ground truth therefore extracts the ground
truth boundaries once; so does periodic evaluation during training.

Entries are keyed by the annotation dict itself (its identity).  Each entry
also keeps the segmentation object it was made from: an annotation whose
``segmentation`` was replaced, whose RLE ``counts`` were replaced, or whose
polygon / uncompressed counts lists were edited in place is converted again,
and its boundaries are recomputed if its mask changed.

The cache also remembers each ground truth's own ``ignore`` flag (see
:meth:`AnnotationCache.own_ignore_flags`), which pycocotools' evaluation
overwrites in the annotation dicts.
"""
from __future__ import annotations

import copy
import itertools
import logging
import sys
import weakref
from collections import Counter
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from .._parallel import progress_bar
from ._checks import NotEvaluatedHere, _valid_size, check_polygons, flatten_polygons, polygons_valid
from ..masks.polygons import polygons_to_rle, rle_chunks_of_flat_polygons
from ..masks.boundary import boundary_counts, check_dilation_ratio, check_rle_strings, dilation_pixels_array

__all__ = ["AnnotationCache", "cache_for"]

log = logging.getLogger(__name__)

#: annotations from which converting masks shows a progress bar (on a terminal)
PROGRESS_FROM = 200000


class AnnotationCache:
    """RLE and boundary RLE strings of the annotations of one dataset object.

    Parameters
    ----------
    dataset : pycocotools ``COCO`` or lvis ``LVIS`` / ``LVISResults``
        Supplies image sizes (``imgs``) and the polygon/RLE conversion
        (``annToRLE`` or ``ann_to_rle``).

    Attributes
    ----------
    computed : collections.Counter
        How many mask RLEs (``'masks'``) and boundaries (``'boundaries'``) were
        computed so far: a cache hit adds nothing.
    """

    def __init__(self, dataset):
        self._dataset = weakref.ref(dataset)
        # id(ann) -> (ann, counts, h, w, segmentation, its counts, snapshot of its lists)
        self._rle: Dict[int, tuple] = {}
        self._boundary: Dict[float, Dict[int, bytes]] = {}
        # id(ann) -> [ann, its own 'ignore' value, truth of 'ignore' when last seen],
        # for the ground truths whose own flag pycocotools' overwrite would lose
        self._ignore: Dict[int, list] = {}
        self._ignore_all_seen = False
        self.computed: Counter = Counter()

    # ---------------------------------------------------------------- pickling
    def __getstate__(self) -> dict:
        """The tables, keyed by the annotation dicts themselves, and the
        dataset (held strongly here, weakly once loaded): the keys are
        ``id()`` values, which do not survive pickling or copying."""
        state = self.__dict__.copy()
        state["_dataset"] = self._dataset()
        keys = {k: e[0] for k, e in self._rle.items()}
        state["_rle"] = list(self._rle.values())
        state["_ignore"] = list(self._ignore.values())
        # every annotation with a boundary has an RLE entry, which holds its dict
        state["_boundary"] = {ratio: [(keys[k], b) for k, b in table.items() if k in keys]
                              for ratio, table in self._boundary.items()}
        return state

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        dataset = state.pop("_dataset")
        self.__dict__.update(state)
        self._dataset = weakref.ref(dataset) if dataset is not None else lambda: None
        self._rle = {id(e[0]): e for e in state["_rle"]}
        self._ignore = {id(e[0]): e for e in state["_ignore"]}
        self._boundary = {ratio: {id(a): b for a, b in pairs} for ratio, pairs in state["_boundary"].items()}
        if dataset is not None and dataset not in _CACHES:
            _CACHES[dataset] = self

    def _to_rle(self, ann):
        ds = self._dataset()
        conv = getattr(ds, "annToRLE", None) or getattr(ds, "ann_to_rle")
        return conv(ann)

    def _describe(self, ann) -> str:
        ds = self._dataset()
        kind = "result" if _is_results(ds) else "annotation"
        return f"{kind} id {ann.get('id')!r} (image {ann.get('image_id')!r})"

    def _entries(self, anns: Sequence[dict]) -> list:
        """Up-to-date entries of ``anns``: made for those not cached yet, made
        again for those whose segmentation changed since."""
        get = self._rle.get
        # a hit needs the same segmentation object and, for a compressed RLE
        # (e[6] is None), the same counts string; lists are compared with a copy
        entries = [e if (e := get(id(a))) is not None and (s := a.get("segmentation")) is e[4]
                   and (s.get("counts") is e[5] if e[6] is None else _unchanged(a, e)) else None
                   for a in anns]
        if None in entries:
            self._add_masks(list({id(a): a for a, e in zip(anns, entries) if e is None}.values()))
            entries = [get(id(a)) for a in anns]
        return entries

    def masks(self, anns: Sequence[dict]) -> Tuple[list, np.ndarray, np.ndarray]:
        """Compressed RLE counts and image height/width of each annotation.

        Raises
        ------
        ValueError
            If a segmentation is missing, its size is not its image's, or its
            counts are not a valid RLE of that size.
        """
        return _columns(self._entries(anns))

    def _add_masks(self, anns: List[dict]) -> None:
        ds = self._dataset()
        imgs = ds.imgs
        new = []
        # polygons (most ground truths) are checked and rasterised in one batch
        polygon_rles = polygon_rles_of(ds, [a for a in anns if type(a.get("segmentation")) is list],
                                       describe=self._describe, strict=True)
        bar = _progress_bar(len(anns))
        for k, a in enumerate(anns):
            if bar is not None and k & 4095 == 4095:
                bar.update(4096)
            img = imgs.get(a.get("image_id"))
            if img is None:
                raise ValueError(f"{self._describe(a)}: image is not in the dataset")
            seg = a.get("segmentation")
            if seg is None:
                raise NotEvaluatedHere(f"{self._describe(a)}: has no 'segmentation'")
            h, w = img.get("height"), img.get("width")
            if not _valid_size(h, w):
                raise NotEvaluatedHere(f"{self._describe(a)}: its image has no size (height {h!r}, "
                                       f"width {w!r})")
            if type(seg) is dict and type(seg.get("counts")) in (str, bytes):
                rle = seg  # compressed already: what annToRLE would return
            elif type(seg) is list and id(a) in polygon_rles:
                rle = polygon_rles[id(a)]
            else:
                if type(seg) is list:  # pycocotools' C code crashes on some polygons
                    check_polygons(seg, h, w, self._describe(a))
                try:
                    rle = self._to_rle(a)
                except Exception as exc:  # malformed polygons and the like
                    raise ValueError(f"{self._describe(a)}: cannot read its segmentation ({exc})") from None
            size = rle.get("size")
            if size is None or len(size) != 2 or size[0] != h or size[1] != w:
                raise ValueError(f"{self._describe(a)}: segmentation size {size} is not "
                                 f"the image's [{h}, {w}]")
            # the annotation itself is kept (pinned) so that its id() stays its key;
            # the segmentation object (and a copy of its lists) tell later whether it changed
            seg_counts = seg.get("counts") if type(seg) is dict else None
            if type(seg) is dict:
                snapshot = list(seg_counts) if type(seg_counts) is list else None
            else:
                # polygons: lists of numbers, so a copy of each list is a snapshot
                snapshot = [list(p) if type(p) is list else copy.deepcopy(p) for p in seg] \
                    if type(seg) is list else copy.deepcopy(seg)
            new.append((a, rle["counts"], int(h), int(w), seg, seg_counts, snapshot))
        if bar is not None:
            bar.close()
        old = [self._rle.get(id(e[0])) for e in new]
        # a new segmentation object with the very same RLE (pycocotools'
        # evaluation replaces polygons by their RLE) keeps its boundaries
        same = [o is not None and o[1] == e[1] for e, o in zip(new, old)]
        # results loaded by boundary_api.COCO were checked when loaded; a
        # segmentation changed since was not
        trusted = getattr(ds, "_rles_checked", False)
        check = [e for e, o, s in zip(new, old, same) if not s and (o is not None or not trusted)]
        if check:
            check_rle_strings([e[1] for e in check], np.array([e[2] for e in check], np.int64),
                              np.array([e[3] for e in check], np.int64), lambda i: self._describe(check[i][0]))
        for e, o, s in zip(new, old, same):
            key = id(e[0])
            if o is not None and not s:
                # another mask: its boundaries go too
                for table in self._boundary.values():
                    table.pop(key, None)
            self._rle[key] = e
        self.computed["masks"] += len(new) - sum(same)

    def adopt(self, anns: Sequence[dict], heights: np.ndarray, widths: np.ndarray) -> None:
        """Take over results whose compressed RLEs were checked before their
        dicts existed: they are not converted or checked again unless their
        segmentation changes."""
        rle = self._rle
        for a, h, w in zip(anns, heights.tolist(), widths.tolist()):
            seg = a["segmentation"]
            rle[id(a)] = (a, seg["counts"], h, w, seg, seg["counts"], None)

    def adopt_ground_truth(self, anns: Sequence[dict], columns) -> None:
        """Take over the RLEs and boundaries a ground truth read as columns
        (:class:`._gt_columns.GroundTruthColumns`) made before its dicts
        existed; ``anns`` are those dicts, in file order.

        The ``_ignore`` flags the evaluations run on the columns would have
        left in the dicts are set here too (before the owner replays their
        ``ignore`` changes, which keep the key placed first: an absent
        ``ignore`` is placed now, as 0, the value lvis gives it and
        pycocotools' replay overwrites).
        """
        for rows, flags in getattr(columns, "ignore_marks", ()):
            for r, flag in zip(rows.tolist(), flags.tolist()):
                ann = anns[r]
                ann.setdefault("ignore", 0)
                ann["_ignore"] = flag
        made = columns.made_masks()
        if made is None:
            return
        counts, heights, widths = made
        rle = self._rle
        for a, c, h, w in zip(anns, counts, heights.tolist(), widths.tolist()):
            seg = a.get("segmentation")
            if type(seg) is list:
                snapshot = [list(p) if type(p) is list else copy.deepcopy(p) for p in seg]
                rle[id(a)] = (a, c, h, w, seg, None, snapshot)
            elif type(seg) is dict:
                sc = seg.get("counts")
                rle[id(a)] = (a, sc if type(sc) in (str, bytes) else c, h, w, seg, sc,
                              list(sc) if type(sc) is list else None)
        for ratio, values in columns.made_boundaries().items():
            table = self._boundary.setdefault(ratio, {})
            for a, b in zip(anns, values):
                if b is not None:
                    table[id(a)] = b

    def boundaries(self, anns: Sequence[dict], dilation_ratio: float,
                   num_threads: Optional[int] = None) -> list:
        """Compressed boundary RLE counts of each annotation, computing only
        those not cached yet (in parallel)."""
        return self._boundaries(anns, self._entries(anns), dilation_ratio, num_threads)

    def masks_and_boundaries(self, anns: Sequence[dict], dilation_ratio: float,
                             num_threads: Optional[int] = None) -> Tuple[list, np.ndarray, np.ndarray, list]:
        """:meth:`masks` and :meth:`boundaries` of ``anns`` in one pass."""
        entries = self._entries(anns)
        counts, h, w = _columns(entries)
        return counts, h, w, self._boundaries(anns, entries, dilation_ratio, num_threads)

    def _boundaries(self, anns, entries, dilation_ratio, num_threads) -> list:
        ratio = check_dilation_ratio(dilation_ratio)
        table = self._boundary.setdefault(ratio, {})
        missing = list({id(e[0]): e for e in entries if id(e[0]) not in table}.values())
        if missing:
            counts, h, w = _columns(missing)
            d = dilation_pixels_array(h, w, ratio)
            out = boundary_counts(counts, h, w, d, num_threads, progress="boundaries")
            for e, b in zip(missing, out):
                table[id(e[0])] = b
            self.computed["boundaries"] += len(missing)
            log.debug("computed %d boundaries (ratio %g)", len(missing), ratio)
        # every annotation with a boundary also has a pinned RLE entry, so its id is stable
        return [table[id(a)] for a in anns]

    # ------------------------------------------------------------ ignore flags
    def own_ignore_flags(self, anns: Iterable[dict]) -> list:
        """Each ground truth's own ``ignore`` value (0 when it has none).

        pycocotools' evaluation (and so Detectron2's, and this package's
        'segm'/'bbox') overwrites ``ignore`` in the annotation dicts with
        ``iscrowd``; the Boundary IoU reference keeps the annotation's own
        flag (``ignore or iscrowd``).  Only a set flag on a non-crowd ground
        truth is lost that way, so only those are remembered, the first time
        an annotation is seen here.  A later value that differs from the one
        seen last and from what pycocotools writes (``iscrowd``) counts as
        the user's change; setting ``ignore`` back to the ``iscrowd`` value
        cannot be told from pycocotools' overwrite.
        """
        table = self._ignore
        out = []
        for a in anns:
            cur = a.get("ignore", 0)
            now = bool(cur)
            e = table.get(id(a))
            if e is None:
                if now and not ("iscrowd" in a and a["iscrowd"]):
                    table[id(a)] = [a, cur, now]  # pinned, so that its id stays its key
                out.append(cur)
                continue
            if now != e[2] and now != bool("iscrowd" in a and a["iscrowd"]):
                e[1] = cur  # changed by the user since it was last seen
            e[2] = now
            out.append(e[1])
        return out

    def note_ignore_flags(self, anns: Iterable[dict]) -> None:
        """Record the ``ignore`` values just written into ``anns``."""
        table = self._ignore
        for a in anns:
            e = table.get(id(a))
            if e is not None:
                e[2] = bool(a.get("ignore", 0))

    def remember_ignore_flags(self) -> None:
        """Remember the own ``ignore`` value of every annotation of the
        dataset (once per dataset object), before an evaluation overwrites them."""
        if self._ignore_all_seen:
            return
        ds = self._dataset()
        if getattr(ds, "_gt_columns", None) is not None:
            return  # the flags are in the columns; remembered when the dicts are made
        anns = list(getattr(ds, "anns", {}).values())
        # only a set flag is ever remembered: most ground truths have none
        if any(map(dict.get, anns, itertools.repeat("ignore"))):
            self.own_ignore_flags(anns)
        self._ignore_all_seen = True


def polygon_rles_of(dataset, anns: List[dict], describe=None, strict: bool = False,
                    num_threads: Optional[int] = None) -> Dict[int, dict]:
    """``annToRLE`` of annotations with polygon segmentations, in one native batch.

    Returns ``id(ann) -> {'size': [h, w], 'counts': bytes}``, byte for byte
    what pycocotools' ``annToRLE`` returns, for every annotation whose image
    is known and whose polygons :func:`._checks.check_polygons` accepts.
    With ``strict``, the first annotation it does not accept raises that
    check's ValueError (named by ``describe(ann)``); otherwise such
    annotations are left out (the caller converts them its own way).
    """
    imgs = dataset.imgs
    sel, heights, widths = [], [], []
    for a in anns:
        img = imgs.get(a.get("image_id"))
        if img is not None and type(img.get("height")) is int and type(img.get("width")) is int \
                and img["height"] >= 1 and img["width"] >= 1:
            sel.append(a)
            heights.append(img["height"])
            widths.append(img["width"])
    if not sel:
        return {}
    h = np.array(heights, np.int64)
    w = np.array(widths, np.int64)
    segs = [a["segmentation"] for a in sel]
    flat = flatten_polygons(segs)
    ok = polygons_valid(*flat, h, w) if flat is not None else np.zeros(len(sel), bool)
    if ok.all():  # the usual case: rasterise the arrays just flattened
        counts = [data[a:b] for _, (data, offs) in rle_chunks_of_flat_polygons(*flat, h, w, num_threads)
                  for a, b in zip(offs[:-1].tolist(), offs[1:].tolist())]
        return {id(a): {"size": [hh, ww], "counts": c} for a, hh, ww, c in zip(sel, heights, widths, counts)}
    for j in np.flatnonzero(~ok).tolist():
        try:  # (a flattening that failed on, say, booleans: the check may accept them)
            check_polygons(segs[j], heights[j], widths[j], describe(sel[j]) if describe else "annotation")
            ok[j] = True
        except ValueError:
            if strict:
                raise
    keep = np.flatnonzero(ok).tolist()
    sel = [sel[j] for j in keep]
    heights = [heights[j] for j in keep]
    widths = [widths[j] for j in keep]
    counts = polygons_to_rle([segs[j] for j in keep], h[keep], w[keep], num_threads)
    return {id(a): {"size": [hh, ww], "counts": c} for a, hh, ww, c in zip(sel, heights, widths, counts)}


def _columns(entries: list) -> Tuple[list, np.ndarray, np.ndarray]:
    """RLE counts, heights and widths of cache entries."""
    counts = [e[1] for e in entries]
    h = np.fromiter((e[2] for e in entries), np.int64, len(entries))
    w = np.fromiter((e[3] for e in entries), np.int64, len(entries))
    return counts, h, w


def _unchanged(ann: dict, entry: tuple) -> bool:
    """Whether ``ann``'s segmentation is still the one ``entry`` was made from."""
    seg = ann.get("segmentation")
    if seg is not entry[4]:
        return False
    try:
        if type(seg) is dict:
            return seg.get("counts") is entry[5] and (entry[6] is None or bool(seg["counts"] == entry[6]))
        return bool(seg == entry[6])
    except (TypeError, ValueError):  # lists of arrays: cannot tell, so convert again
        return False


def _progress_bar(n: int):
    """A tqdm bar over the masks being converted, for large inputs on a terminal."""
    if n < PROGRESS_FROM:
        return None
    return progress_bar(n, "masks")


def _is_results(ds) -> bool:
    if getattr(ds, "_is_results", False):
        return True
    lvis_results = getattr(sys.modules.get("lvis"), "LVISResults", None)
    return lvis_results is not None and isinstance(ds, lvis_results)


_CACHES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def cache_state(dataset, state: dict) -> dict:
    """``state`` (a dataset's ``__dict__`` being pickled or copied) with the
    dataset's cache, if it has one, so that the copy keeps what the cache
    alone knows (the ground truths' own ``ignore`` flags that an evaluation
    overwrote) and the masks and boundaries computed so far."""
    cache = _CACHES.get(dataset)
    if cache is not None:
        state = dict(state)
        state["_annotation_cache"] = cache
    return state


def restore_cache(dataset, state: dict) -> dict:
    """``state`` without the cache :func:`cache_state` added, which becomes
    ``dataset``'s cache."""
    cache = state.get("_annotation_cache")
    if cache is None:
        return state
    state = dict(state)
    del state["_annotation_cache"]
    cache._dataset = weakref.ref(dataset)
    _CACHES[dataset] = cache
    return state


def cache_for(dataset) -> AnnotationCache:
    """The cache that belongs to ``dataset`` (created on first use).

    Parameters
    ----------
    dataset : pycocotools ``COCO``, lvis ``LVIS`` or ``LVISResults``

    Returns
    -------
    AnnotationCache
    """
    cache = _CACHES.get(dataset)
    if cache is None:
        cache = AnnotationCache(dataset)
        _CACHES[dataset] = cache
    return cache
