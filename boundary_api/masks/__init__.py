"""The mask layer every evaluator shares: boundary extraction, Boundary IoU of mask pairs,
the compiled kernels (``_rle``, ``_boundary``, ...) and the NumPy/OpenCV oracle (``reference``)."""
import importlib.machinery as _machinery
import os as _os


def _missing_extension_error(exc: ImportError) -> ImportError:
    """The error to raise when the compiled kernels cannot be imported: say
    why (Python imported the source tree, where nothing is compiled) and what
    to do, instead of Python's "cannot import name '_rle' ... (most likely
    due to a circular import)".  ``_rle`` stands for all the compiled modules:
    every other one needs it."""
    here = _os.path.dirname(_os.path.abspath(__file__))
    built = [f for f in _os.listdir(here) if f.startswith("_rle.")
             and f.endswith(tuple(_machinery.EXTENSION_SUFFIXES))]
    if built:
        return ImportError(f"boundary_api's compiled extension {_os.path.join(here, built[0])} "
                           f"could not be loaded ({exc}); rebuild it with `pip install -e .` in the "
                           "source tree, or reinstall boundary_api")
    return ImportError(
        f"boundary_api's compiled extension (boundary_api.masks._rle) is missing: Python imported "
        f"the source tree at {_os.path.dirname(_os.path.dirname(here))}, where nothing is compiled "
        "(this happens when running `python`, `python -m pytest` or `import boundary_api` from the "
        "repository root after `pip install .`). Either build the extension in place with "
        "`pip install -e .` (for development), or run from a directory outside the source tree "
        "so that the installed package is imported.")


try:
    from . import _rle  # noqa: F401  (the first of the compiled kernels)
except ImportError as _exc:
    raise _missing_extension_error(_exc) from None

from .boundary import dilation_pixels, mask_to_boundary, rle_to_boundary  # noqa: E402

__all__ = ["boundary_iou", "dilation_pixels", "mask_to_boundary", "rle_to_boundary"]

#: modules imported on first use: ``boundary_iou`` needs the measures of the paper
#: (``measures``, ``_measures``), which no COCO / LVIS evaluation uses; loading them
#: with the package was ~15% of ``from boundary_api import COCO``
_LAZY_MODULES = ("iou", "measures")


def __getattr__(name):
    if name == "boundary_iou":
        from .iou import boundary_iou

        globals()[name] = boundary_iou
        return boundary_iou
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__) | set(_LAZY_MODULES))
