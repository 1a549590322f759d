"""Instance segmentation (Boundary AP): the COCO and LVIS drop-in evaluators, the engine
they share (``_engine``, Cython ``_eval``), the per-annotation cache and the input checks;
Cityscapes' instance evaluation (``cityscapes``, cityscapesScripts' files and rules)."""
from ._checks import SuspectInputWarning
from .cache import AnnotationCache, cache_for
from .coco import COCO
from .cocoeval import COCOeval

__all__ = ["COCO", "COCOeval", "LVIS", "LVISResults", "LVISEval", "AnnotationCache", "cache_for",
           "SuspectInputWarning"]


def __getattr__(name):
    # lvis (and the matplotlib it imports) is loaded only when used
    if name in ("LVIS", "LVISResults", "LVISEval"):
        from . import lvis

        value = getattr(lvis, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
