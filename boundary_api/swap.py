"""Opt-in: make ``pycocotools`` and ``lvis`` imports resolve to boundary_api.

Code that cannot be changed (torchmetrics' ``MeanAveragePrecision(backend=
"pycocotools")``, Detectron2's evaluators, MMDetection's metrics) imports its
evaluator from ``pycocotools`` or ``lvis``.  After :func:`init_as_pycocotools`
(or :func:`init_as_lvis`) those imports give boundary_api's classes:

>>> import boundary_api
>>> boundary_api.init_as_pycocotools()                      # doctest: +SKIP
>>> from pycocotools.cocoeval import COCOeval                # boundary_api.COCOeval

or, only for a block, with :func:`swapped`, which restores the originals on
exit::

    with boundary_api.swapped():
        metric.compute()

What is swapped
    ``sys.modules`` gets stand-in modules for ``pycocotools``,
    ``pycocotools.coco`` and ``pycocotools.cocoeval`` (``init_as_pycocotools``)
    and for ``lvis``, ``lvis.lvis``, ``lvis.results`` and ``lvis.eval``
    (``init_as_lvis``).  A stand-in holds everything its original module holds,
    except that ``COCO``, ``COCOeval``, ``LVIS``, ``LVISResults`` and
    ``LVISEval`` are boundary_api's (subclasses of the originals) and that the
    swapped submodules are the stand-ins.  ``pycocotools.mask`` is not
    swapped: its RLE functions are the reference that boundary_api itself
    uses.  The original modules are not modified.

Import order
    * imported after the call (``from pycocotools.cocoeval import COCOeval``
      at module level or inside a function, ``import pycocotools.cocoeval``):
      boundary_api's classes.
    * imported before the call: module-level names bound to the original
      package, modules or classes (``from pycocotools.cocoeval import
      COCOeval``, ``import pycocotools.coco as coco``, ``import lvis``) are
      rebound in every loaded module outside ``pycocotools``, ``lvis`` and
      ``boundary_api``, and the modules are listed in the log (``rebind=False``
      turns this off).  What such a module built from the original classes
      before the call stays as it was: a subclass defined at import time
      (Detectron2's ``COCOeval_opt``, its default ``use_fast_impl=True``
      evaluator) still derives from pycocotools' ``COCOeval``, an instance
      made before keeps its class, and a name kept elsewhere than in a
      module's globals (a default argument, a class attribute, a closure) is
      not found.  Swapping before Detectron2 is imported makes
      ``COCOeval_opt`` a subclass of boundary_api's ``COCOeval`` (its own C++
      matching and accumulation, boundary_api's preparation and IoUs; the
      same numbers as Detectron2's).
    * restoring (:func:`restore_originals`, the end of :func:`swapped`)
      puts back the original modules and the names rebound by the call;
      names imported from a stand-in while it was installed keep
      boundary_api's classes.

Every call logs (logger ``boundary_api.swap``, INFO) what it swapped and
which modules it rebound; a stand-in module says in its ``repr`` and
docstring that it is one, with the original at ``__boundary_api_original__``;
tracebacks through a swapped class show boundary_api's files.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import types
from typing import Dict, Iterator, List, Optional, Tuple

__all__ = ["init_as_pycocotools", "init_as_lvis", "restore_originals", "swapped", "is_swapped"]

logger = logging.getLogger(__name__)

_LIBRARIES = ("pycocotools", "lvis")
# modules whose own names are never rebound: the originals and this package
_NEVER_REBOUND = ("pycocotools", "lvis", "boundary_api")


class _StandIn(types.ModuleType):
    """A module in ``sys.modules`` that stands in for one of pycocotools' or lvis'."""

    def __repr__(self) -> str:
        original = self.__dict__.get("__boundary_api_original__")
        where = getattr(original, "__file__", None) or "built-in"
        return f"<module {self.__name__!r} (boundary_api stand-in for {where})>"


class _Swap:
    """One installed swap: the modules it replaced and the names it rebound."""

    def __init__(self, library: str):
        self.library = library
        self.replaced: Dict[str, Optional[types.ModuleType]] = {}  # sys.modules key -> previous entry
        self.stand_ins: Dict[str, types.ModuleType] = {}
        self.rebound: List[Tuple[dict, str, object, object]] = []  # (globals, name, original, new)


_active: Dict[str, _Swap] = {}


def _originals(library: str) -> Tuple[Dict[str, types.ModuleType], Dict[str, Tuple[type, type]]]:
    """The original modules to stand in for, and (original class, boundary_api class) by name."""
    if library == "pycocotools":
        from .coco import cocoeval as ours_eval, dataset as ours_coco  # imports the originals first

        pkg = ours_coco.pycocotools
        modules = {"pycocotools": pkg, "pycocotools.coco": pkg.coco, "pycocotools.cocoeval": pkg.cocoeval}
        classes = {
            "COCO": (pkg.coco.COCO, ours_coco.COCO),
            "COCOeval": (pkg.cocoeval.COCOeval, ours_eval.COCOeval),
        }
        return modules, classes
    from . import lvis as ours  # imports lvis (without its plotting module) first
    from .lvis import _original

    pkg = _original._lvis
    modules = {"lvis": pkg, "lvis.lvis": sys.modules["lvis.lvis"], "lvis.results": sys.modules["lvis.results"],
               "lvis.eval": _original._lvis_eval}
    classes = {
        "LVIS": (modules["lvis.lvis"].LVIS, ours.LVIS),
        "LVISResults": (modules["lvis.results"].LVISResults, ours.LVISResults),
        "LVISEval": (modules["lvis.eval"].LVISEval, ours.LVISEval),
    }
    return modules, classes


def _stand_in(original: types.ModuleType, replace: Dict[int, object], how: str) -> types.ModuleType:
    module = _StandIn(original.__name__)
    names = vars(module)
    for name, value in vars(original).items():
        names[name] = replace.get(id(value), value)
    names["__doc__"] = (f"boundary_api's stand-in for {original.__name__} (installed by boundary_api.{how}()); "
                        f"the original module is __boundary_api_original__.\n\n{original.__doc__ or ''}")
    names["__boundary_api_original__"] = original
    return module


def _is_rebindable(module_name: str, module) -> bool:
    if not isinstance(module, types.ModuleType) or isinstance(module, _StandIn):
        return False
    return module_name.split(".")[0] not in _NEVER_REBOUND


def _rebind(swap: _Swap, replace: Dict[int, object]) -> None:
    """Point module-level names bound to an original at its stand-in or class.

    ``replace`` maps ``id(original)``; the caller keeps the originals alive.
    """
    for module_name, module in list(sys.modules.items()):
        if not _is_rebindable(module_name, module):
            continue
        try:
            names = vars(module)
            items = list(names.items())
        except TypeError:
            continue
        for name, value in items:
            new = replace.get(id(value))
            if new is not None:
                names[name] = new
                swap.rebound.append((names, name, value, new))


def _install(library: str, how: str, rebind: bool) -> None:
    if library in _active:
        return
    modules, classes = _originals(library)
    swap = _Swap(library)
    # identity map original -> replacement: classes first, then modules (stand-ins)
    replace: Dict[int, object] = {id(orig): new for orig, new in classes.values()}
    for key, original in modules.items():
        swap.stand_ins[key] = _stand_in(original, replace, how)
    for key, original in modules.items():
        replace[id(original)] = swap.stand_ins[key]
    # a stand-in package's submodule attributes are the stand-ins too
    for key, module in swap.stand_ins.items():
        names = vars(module)
        for name, value in list(names.items()):
            if not name.startswith("__") and id(value) in replace:
                names[name] = replace[id(value)]
    for key, module in swap.stand_ins.items():
        swap.replaced[key] = sys.modules.get(key)
        sys.modules[key] = module
    if rebind:
        _rebind(swap, replace)
    _active[library] = swap
    rebound = sorted({f"{names.get('__name__', '?')}.{name}" for names, name, _, _ in swap.rebound})
    logger.info("%s now resolve to boundary_api (%s)%s", ", ".join(swap.stand_ins), ", ".join(classes),
                f"; rebound names imported before: {', '.join(rebound)}" if rebound else "")


def init_as_pycocotools(*, rebind: bool = True) -> None:
    """Make ``pycocotools.coco`` and ``pycocotools.cocoeval`` resolve to boundary_api.

    Afterwards ``from pycocotools.coco import COCO`` and ``from
    pycocotools.cocoeval import COCOeval`` give :class:`boundary_api.COCO`
    and :class:`boundary_api.COCOeval`, which equal pycocotools' results for
    ``bbox``, ``segm`` and ``keypoints`` and add ``iouType="boundary"``.
    Calling it again does nothing; :func:`restore_originals` undoes it.

    Parameters
    ----------
    rebind : bool, default True
        Also rebind module-level names that already hold pycocotools' package,
        modules or classes in modules loaded before this call (outside
        pycocotools, lvis and boundary_api).  The module docstring lists what
        this reaches and what it does not.
    """
    _install("pycocotools", "init_as_pycocotools", rebind)


def init_as_lvis(*, rebind: bool = True) -> None:
    """Make ``lvis`` (``LVIS``, ``LVISResults``, ``LVISEval``) resolve to boundary_api.

    Afterwards ``from lvis import LVIS, LVISResults, LVISEval`` (and the same
    names from ``lvis.lvis``, ``lvis.results``, ``lvis.eval``) give
    boundary_api's classes, which equal lvis' results and add
    ``iou_type="boundary"``.  Calling it again does nothing;
    :func:`restore_originals` undoes it.

    Parameters
    ----------
    rebind : bool, default True
        As for :func:`init_as_pycocotools`, for lvis' package, modules and classes.
    """
    _install("lvis", "init_as_lvis", rebind)


def _uninstall(library: str) -> None:
    swap = _active.pop(library, None)
    if swap is None:
        return
    for key, previous in swap.replaced.items():
        if sys.modules.get(key) is swap.stand_ins[key]:
            if previous is None:
                del sys.modules[key]
            else:
                sys.modules[key] = previous
    for names, name, original, new in reversed(swap.rebound):
        if names.get(name) is new:
            names[name] = original
    logger.info("%s restored to the original modules", ", ".join(swap.stand_ins))


def restore_originals(*libraries: str) -> None:
    """Undo :func:`init_as_pycocotools` and :func:`init_as_lvis`.

    Parameters
    ----------
    *libraries : {"pycocotools", "lvis"}
        What to restore (default: both).  Restoring what is not swapped does
        nothing.
    """
    for library in libraries or _LIBRARIES:
        if library not in _LIBRARIES:
            raise ValueError(f"library must be one of {', '.join(_LIBRARIES)}; got {library!r}")
        _uninstall(library)


def is_swapped(library: str) -> bool:
    """Whether ``"pycocotools"`` or ``"lvis"`` currently resolves to boundary_api."""
    if library not in _LIBRARIES:
        raise ValueError(f"library must be one of {', '.join(_LIBRARIES)}; got {library!r}")
    return library in _active


@contextlib.contextmanager
def swapped(pycocotools: bool = True, lvis: bool = True, *, rebind: bool = True) -> Iterator[None]:
    """Context manager: :func:`init_as_pycocotools` / :func:`init_as_lvis` for a block.

    On exit, what this block swapped is restored (a library already swapped
    before the block stays swapped).

    Parameters
    ----------
    pycocotools, lvis : bool, default True
        Which libraries to swap.
    rebind : bool, default True
        See :func:`init_as_pycocotools`.
    """
    mine = [name for name, wanted in (("pycocotools", pycocotools), ("lvis", lvis))
            if wanted and name not in _active]
    try:
        for name in mine:
            _install(name, "swapped", rebind)
        yield
    finally:
        for name in reversed(mine):
            _uninstall(name)
