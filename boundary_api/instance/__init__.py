"""The instance-segmentation engine that the COCO and LVIS evaluators share
(:mod:`boundary_api.coco`, :mod:`boundary_api.lvis`): the columnar readers of ground
truth and results (``_columns``, ``_gt_columns``, Cython ``_scan_*``), their input checks
(``_checks``), the per-annotation cache of masks and boundaries (``cache``), matching
and accumulation (``_engine``, Cython ``_eval``) and the per-category tables
(``results``).  It knows no protocol: nothing here imports ``coco`` or ``lvis``."""
from ._checks import SuspectInputWarning
from .cache import AnnotationCache, cache_for

__all__ = ["AnnotationCache", "cache_for", "SuspectInputWarning"]
