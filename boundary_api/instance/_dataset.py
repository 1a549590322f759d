"""What the COCO and LVIS datasets of this package share (neither imports the other):
pycocotools' and lvis' attributes built on first read from columns, the check of masks
not verified on loading, and the deferred ``urllib.request`` import."""
from __future__ import annotations

import contextlib
import sys
import types
from typing import Optional

from ._checks import NotEvaluatedHere, warn_suspect
from .cache import cache_for


@contextlib.contextmanager
def urllib_request_deferred():
    """While the block runs, ``from urllib.request import urlretrieve`` gets
    a stand-in that imports the real function when called.

    pycocotools and lvis import ``urlretrieve`` at module level, for their
    ``download`` methods only; ``urllib.request`` brings ``http.client`` and
    ``email`` (about 40 ms, a tenth of a small evaluation).  Afterwards the
    stand-in is gone, so ``import urllib.request`` anywhere loads the real
    module.  Nothing is done when ``urllib.request`` is loaded already.
    """
    if "urllib.request" in sys.modules:
        yield
        return
    stand_in = types.ModuleType("urllib.request")

    def urlretrieve(*args, **kwargs):
        from urllib.request import urlretrieve as real

        return real(*args, **kwargs)

    stand_in.urlretrieve = urlretrieve
    sys.modules["urllib.request"] = stand_in
    try:
        yield
    finally:
        if sys.modules.get("urllib.request") is stand_in:
            del sys.modules["urllib.request"]
        urllib = sys.modules.get("urllib")
        if urllib is not None and getattr(urllib, "request", None) is stand_in:
            del urllib.request


class _Materialized:
    """An attribute pycocotools keeps (``dataset``, ``anns``, ``imgToAnns``,
    ``catToImgs``): an ordinary attribute, except on a ground truth or results
    read as columns, where the first read builds the dicts and the index."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, objtype=None):
        if obj is None:
            return self
        d = obj.__dict__
        try:
            return d[self.name]
        except KeyError:
            if d.get("_columns") is None and d.get("_gt_columns") is None:
                raise AttributeError(self.name) from None
        obj._materialize()
        return d[self.name]

    def __set__(self, obj, value):
        obj.__dict__[self.name] = value


def masks_unusable(*objs) -> Optional[str]:
    """Why a mask of the given ground truth or results (boundary_api objects
    whose masks were not all checked on loading) is not one this package
    evaluates, or None.  The replaced library's code then evaluates it as it
    does; a problem of the input (an RLE string that does not decode to its
    image, ...) is warned about, a mask that is merely not this package's to
    evaluate (a missing segmentation, on which the library fails; an RLE on
    an image without a size) is not.  (A mask on which the library's C code
    crashes or never ends is refused where the library is about to make it:
    :mod:`._mask_checks`.)  The masks checked are cached for the
    evaluation."""
    for obj in objs:
        if obj is None or not hasattr(obj, "_input_problems") or getattr(obj, "_rles_checked", False):
            continue
        gtc = obj.__dict__.get("_gt_columns")
        if gtc is not None and gtc.masks_ready():
            continue
        columns = obj.__dict__.get("_columns")
        try:
            if columns is not None and columns.has_segmentation:
                columns.check_rles()
                continue
            anns = list(obj.anns.values())
            if not getattr(obj, "_is_results", False):
                # (ground-truth polygons were checked on loading and are rasterised
                # by the evaluation itself; RLEs and missing masks are checked here)
                anns = [a for a in anns if type(a.get("segmentation")) is not list]
            cache_for(obj).masks(anns)
        except NotEvaluatedHere as exc:
            return str(exc)
        except ValueError as exc:
            warn_suspect(f"{exc}; evaluated as {'lvis' if hasattr(obj, 'img_ann_map') else 'pycocotools'} "
                         "evaluates it (strict=True refuses it)")
            return str(exc)
    return None
