"""SA-Co (SAM 3's concept segmentation benchmark): cgF1 as SAM 3's evaluator computes it,
and Boundary cgF1.

:class:`CGF1Evaluator` and :class:`CGF1Eval` are drop-ins for ``sam3.eval.cgf1_eval``'s
classes (the same numbers, printed lines, returned dict and state), on the instance
engine (columns, IoU kernels, cached boundaries) with a GIL-free matching kernel;
``iou_type='boundary'`` scores masks by ``min(mask IoU, Boundary IoU)``.
:func:`evaluate_saco_files` is what ``boundary-eval saco`` calls;
:mod:`~boundary_api.saco.synthetic` writes SA-Co/Gold-like data.
"""
from .evaluator import CGF1Evaluator
from .metrics import CGF1_METRICS

__all__ = ["CGF1Eval", "CGF1Evaluator", "CGF1_METRICS"]


def __getattr__(name):
    # CGF1Eval (a pycocotools COCOeval) is imported when first used: the
    # native evaluation of files does not load pycocotools
    if name == "CGF1Eval":
        from .cgf1eval import CGF1Eval

        return CGF1Eval
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
