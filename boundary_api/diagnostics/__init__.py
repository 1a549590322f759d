"""Error analysis of instance evaluations: TIDE, bootstrap intervals and comparison,
confusion matrix, calibration and LRP, for Boundary, Mask and Box IoU."""
