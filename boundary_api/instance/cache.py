"""One cache of per-annotation RLEs and boundary RLEs, shared by every evaluator.

Masks are converted to compressed RLE once per annotation, and boundaries
computed once per annotation and dilation ratio, for as long as the dataset
object (a pycocotools/lvis ground truth or results object) lives.  Evaluating
several result files against one ground truth therefore extracts the ground
truth boundaries once; so does periodic evaluation during training.

Entries are keyed by the annotation dict itself (its identity), so editing a
mask in place after it was cached is not seen.
"""
from __future__ import annotations

import logging
import sys
import weakref
from collections import Counter
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from ..masks.boundary import boundary_counts, check_dilation_ratio, check_rle_strings, dilation_pixels_array

__all__ = ["AnnotationCache", "cache_for"]

log = logging.getLogger(__name__)


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
        self._rle: Dict[int, tuple] = {}
        self._boundary: Dict[float, Dict[int, bytes]] = {}
        self.computed: Counter = Counter()

    def _to_rle(self, ann):
        ds = self._dataset()
        conv = getattr(ds, "annToRLE", None) or getattr(ds, "ann_to_rle")
        return conv(ann)

    def _describe(self, ann) -> str:
        ds = self._dataset()
        kind = "result" if _is_results(ds) else "annotation"
        return f"{kind} id {ann.get('id')!r} (image {ann.get('image_id')!r})"

    def masks(self, anns: Sequence[dict]) -> Tuple[list, np.ndarray, np.ndarray]:
        """Compressed RLE counts and image height/width of each annotation.

        Raises
        ------
        ValueError
            If a segmentation is missing, its size is not its image's, or its
            counts are not a valid RLE of that size.
        """
        get = self._rle.get
        entries = [get(id(a)) for a in anns]
        if any(e is None for e in entries):
            missing = {id(a): a for a, e in zip(anns, entries) if e is None}
            self._add_masks(list(missing.values()))
            entries = [get(id(a)) for a in anns]
        counts = [e[1] for e in entries]
        h = np.fromiter((e[2] for e in entries), np.int64, len(entries))
        w = np.fromiter((e[3] for e in entries), np.int64, len(entries))
        return counts, h, w

    def _add_masks(self, anns: List[dict]) -> None:
        ds = self._dataset()
        imgs = ds.imgs
        new = []
        for a in anns:
            img = imgs.get(a.get("image_id"))
            if img is None:
                raise ValueError(f"{self._describe(a)}: image is not in the dataset")
            h, w = img["height"], img["width"]
            seg = a.get("segmentation")
            if seg is None:
                raise ValueError(f"{self._describe(a)}: has no 'segmentation'")
            if type(seg) is dict and type(seg.get("counts")) in (str, bytes):
                rle = seg  # compressed already: what annToRLE would return
            else:
                try:
                    rle = self._to_rle(a)
                except Exception as exc:  # malformed polygons and the like
                    raise ValueError(f"{self._describe(a)}: cannot read its segmentation ({exc})") from None
            size = rle.get("size")
            if size is None or len(size) != 2 or size[0] != h or size[1] != w:
                raise ValueError(f"{self._describe(a)}: segmentation size {size} is not "
                                 f"the image's [{h}, {w}]")
            # the annotation itself is kept (pinned) so that its id() stays its key
            new.append((a, rle["counts"], int(h), int(w)))
        if not getattr(ds, "_rles_checked", False):
            check_rle_strings([e[1] for e in new], np.array([e[2] for e in new], np.int64),
                              np.array([e[3] for e in new], np.int64), lambda i: self._describe(new[i][0]))
        for e in new:
            self._rle[id(e[0])] = e
        self.computed["masks"] += len(new)

    def boundaries(self, anns: Sequence[dict], dilation_ratio: float,
                   num_threads: Optional[int] = None) -> list:
        """Compressed boundary RLE counts of each annotation, computing only
        those not cached yet (in parallel)."""
        ratio = check_dilation_ratio(dilation_ratio)
        table = self._boundary.setdefault(ratio, {})
        missing = list({id(a): a for a in anns if id(a) not in table}.values())
        if missing:
            counts, h, w = self.masks(missing)
            d = dilation_pixels_array(h, w, ratio)
            out = boundary_counts(counts, h, w, d, num_threads, progress="boundaries")
            for a, b in zip(missing, out):
                table[id(a)] = b
            self.computed["boundaries"] += len(missing)
            log.debug("computed %d boundaries (ratio %g)", len(missing), ratio)
        # every annotation with a boundary also has a pinned RLE entry, so its id is stable
        return [table[id(a)] for a in anns]


def _is_results(ds) -> bool:
    if getattr(ds, "_is_results", False):
        return True
    lvis_results = getattr(sys.modules.get("lvis"), "LVISResults", None)
    return lvis_results is not None and isinstance(ds, lvis_results)


_CACHES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


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
