"""boundary_api: Boundary IoU, Boundary AP and Boundary PQ.

Drop-in evaluators for pycocotools and lvis that add ``iouType='boundary'``
(Cheng, Girshick, Dollar, Berg, Kirillov: "Boundary IoU: Improving
Object-Centric Image Segmentation Evaluation", CVPR 2021), with the boundary
extraction and the IoU step in Cython.

>>> from boundary_api import COCO, COCOeval            # instead of pycocotools'
>>> gt = COCO("instances_val2017.json")                  # doctest: +SKIP
>>> ev = COCOeval(gt, gt.loadRes("segm.json"), iouType="boundary")  # doctest: +SKIP
>>> ev.evaluate(); ev.accumulate(); ev.summarize()       # doctest: +SKIP

``LVIS``, ``LVISResults``, ``LVISEval`` and ``pq_compute`` (panoptic) are
imported from here too; ``init_as_pycocotools()``, ``init_as_lvis()`` and the
``swapped()`` context manager make ``pycocotools`` / ``lvis`` imports resolve to
this package (``boundary_api.swap``).  Only the mask layer is loaded on import; every
other name when first used, so that ``boundary_api.panoptic`` does not pay
for the instance evaluators, nor those for the ``lvis`` package (and its
matplotlib import).
"""


def _import_numpy_without_blas_spin() -> None:
    """Import NumPy, its OpenBLAS told to let idle threads sleep at once.

    OpenBLAS starts its worker threads when NumPy is imported, and idle
    workers spin for a while (about 0.1 s of a core each here) before they
    sleep: that spin competed with the evaluators' own threads for the cores
    of a short evaluation.  ``OPENBLAS_THREAD_TIMEOUT`` (read once, when the
    library loads) is set to its minimum for NumPy's import and removed
    again, so child processes do not inherit it.  Nothing is done when NumPy
    is imported already or the variable (or OpenBLAS' older name,
    ``GOTO_THREAD_TIMEOUT``) is set: set it yourself to keep another value.
    Other BLAS libraries ignore it.
    """
    import os
    import sys

    if "numpy" in sys.modules or "OPENBLAS_THREAD_TIMEOUT" in os.environ or "GOTO_THREAD_TIMEOUT" in os.environ:
        return
    os.environ["OPENBLAS_THREAD_TIMEOUT"] = "4"
    try:
        import numpy  # noqa: F401
    finally:
        os.environ.pop("OPENBLAS_THREAD_TIMEOUT", None)


_import_numpy_without_blas_spin()

from . import masks  # noqa: E402  (the compiled kernels: a missing or broken build is reported on import)

from ._version import __version__  # noqa: E402

__all__ = [
    "COCO",
    "COCOeval",
    "LVIS",
    "LVISResults",
    "LVISEval",
    "pq_compute",
    "dilation_pixels",
    "mask_to_boundary",
    "rle_to_boundary",
    "boundary_iou",
    "AnnotationCache",
    "cache_for",
    "init_as_pycocotools",
    "init_as_lvis",
    "restore_originals",
    "swapped",
    "SuspectInputWarning",
    "IncrementalEvaluator",
]

_LAZY = {
    "COCO": "coco", "COCOeval": "coco", "AnnotationCache": "instance", "cache_for": "instance",
    "SuspectInputWarning": "instance",
    "LVIS": "lvis", "LVISResults": "lvis", "LVISEval": "lvis",
    "pq_compute": "panoptic",
    "IncrementalEvaluator": "coco.incremental",
    "init_as_pycocotools": "swap", "init_as_lvis": "swap", "restore_originals": "swap", "swapped": "swap",
    "boundary_iou": "masks", "dilation_pixels": "masks", "mask_to_boundary": "masks", "rle_to_boundary": "masks",
}


def __getattr__(name):
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
