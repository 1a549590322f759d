"""The segmentation measures side by side (Mask IoU, pixel accuracy, Trimap IoU,
F-measure, mF-measure, Boundary IoU, Multiscale IoU) and the basics (box IoU, crowd
IoF, label-set Jaccard); they live in :mod:`boundary_api.masks.measures`."""
from .masks.measures import (  # noqa: F401
    MEASURE_LABELS,
    MEASURES,
    MF_DILATION_RATIOS,
    __all__,
    boundary_iou,
    box_iou,
    crowd_iof,
    f_measure,
    label_jaccard,
    mask_iou,
    measures,
    mf_measure,
    min_mask_boundary_iou,
    multiscale_iou,
    pixel_accuracy,
    trimap_iou,
)
