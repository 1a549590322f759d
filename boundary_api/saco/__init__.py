"""SA-Co, SAM 3's concept segmentation benchmark: cgF1 exactly as SAM 3's evaluator computes
it, and Boundary cgF1 (``iou_type='boundary'``).  :class:`CGF1Evaluator` and :class:`CGF1Eval`
are drop-ins for ``sam3.eval.cgf1_eval``'s classes, on the instance engine; what
``boundary-eval saco`` calls is :func:`~boundary_api.saco.files.evaluate_saco_files`;
:mod:`~boundary_api.saco.synthetic` writes SA-Co/Gold-like data."""
from .evaluator import CGF1Evaluator
from .files import evaluate_saco_files
from .metrics import CGF1_METRICS

__all__ = ["CGF1Eval", "CGF1Evaluator", "CGF1_METRICS", "evaluate_saco_files"]


def __getattr__(name):
    # CGF1Eval (a pycocotools COCOeval) is imported when first used: the
    # native evaluation of files does not load pycocotools
    if name == "CGF1Eval":
        from .cgf1eval import CGF1Eval

        return CGF1Eval
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
