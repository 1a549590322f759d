"""Diagnostics of an instance evaluation: why a score is what it is (TIDE, confusion,
calibration, LRP) and whether a gain is real (bootstrap intervals, paired comparison)."""
from .tide import ERROR_TYPES, SIZES, ImageIoUs, analyze_errors, boundary_coverage, pr_curves

__all__ = ["ERROR_TYPES", "SIZES", "analyze_errors", "pr_curves", "boundary_coverage", "ImageIoUs"]
