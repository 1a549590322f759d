"""Diagnostics of an instance evaluation: why a score is what it is.  TIDE's error
breakdown with a boundary error type, PR curves and boundary coverage (``tide``)."""
from .tide import ERROR_TYPES, SIZES, ImageIoUs, analyze_errors, boundary_coverage, pr_curves

__all__ = ["ERROR_TYPES", "SIZES", "analyze_errors", "pr_curves", "boundary_coverage", "ImageIoUs"]
