"""The module paths kept from 0.1.0's layout, in one place.

Each old path is a three-line module that calls :func:`alias`: importing it warns
(``DeprecationWarning`` naming the new path and the release that removes the old one)
and gives the new module itself, so ``boundary_api.measures.boundary_iou`` is
``boundary_api.masks.measures.boundary_iou``.  ``docs/architecture.md`` lists them too
(``tests/test_layout.py`` checks the two agree).
"""
import importlib
import sys
import warnings

#: old module -> (new module, the release that removes the old path)
MOVED_MODULES = {
    "boundary_api.measures": ("boundary_api.masks.measures", "0.3.0"),
    "boundary_api.reference": ("boundary_api.masks.reference", "0.3.0"),
    "boundary_api.detectron2": ("boundary_api.integrations.detectron2", "0.3.0"),
    "boundary_api.d2_results": ("boundary_api.integrations.d2_results", "0.3.0"),
}


def alias(old: str) -> None:
    """Warn that ``old`` moved and make it the new module (in ``sys.modules``)."""
    new, removal = MOVED_MODULES[old]
    # stacklevel 3: past this function and the alias module, to the import statement
    # (the import machinery's own frames are skipped by the warnings module)
    warnings.warn(f"{old} is deprecated: import {new} instead ({old} is removed in {removal})",
                  DeprecationWarning, stacklevel=3)
    sys.modules[old] = importlib.import_module(new)
