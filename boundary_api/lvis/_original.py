"""lvis' own package, imported once for this package: without its plotting module until
used, and with ``urllib.request`` deferred (see :mod:`boundary_api.instance._dataset`)."""
from __future__ import annotations

import importlib
import sys
import types



def _import_lvis_without_vis() -> types.ModuleType:
    """Import the ``lvis`` package without loading ``lvis.vis`` yet.

    ``lvis/__init__.py`` imports its plotting module, which imports OpenCV and
    ``matplotlib.pyplot`` (about 0.7 s here, most of a small evaluation) and
    which no evaluation uses.  While the package initialises, a stand-in
    ``lvis.vis`` answers its ``from lvis.vis import LVISVis``; afterwards the
    stand-in is gone and the package loads the real module on first use of
    ``lvis.LVISVis`` or ``lvis.vis`` (``import lvis.vis`` works as usual).
    Everything else the package does on import (its logging set-up) is
    unchanged.  Nothing is done when lvis or lvis.vis is already loaded.
    """
    if "lvis" in sys.modules or "lvis.vis" in sys.modules:
        return importlib.import_module("lvis")
    stand_in = types.ModuleType("lvis.vis")

    class LVISVis:  # placeholder while lvis/__init__ runs
        pass

    stand_in.LVISVis = LVISVis
    sys.modules["lvis.vis"] = stand_in
    try:
        package = importlib.import_module("lvis")
    except ImportError:
        # another lvis version needing more from lvis.vis: import it plainly
        sys.modules.pop("lvis.vis", None)
        sys.modules.pop("lvis", None)
        return importlib.import_module("lvis")
    finally:
        if sys.modules.get("lvis.vis") is stand_in:
            del sys.modules["lvis.vis"]
    names = vars(package)
    for name, value in (("LVISVis", LVISVis), ("vis", stand_in)):
        if names.get(name) is value:
            del names[name]

    def __getattr__(name):
        if name in ("LVISVis", "vis"):
            vis = importlib.import_module("lvis.vis")
            names["LVISVis"] = vis.LVISVis
            return vis if name == "vis" else vis.LVISVis
        raise AttributeError(f"module 'lvis' has no attribute {name!r}")

    package.__getattr__ = __getattr__
    return package


from ..instance._dataset import urllib_request_deferred  # noqa: E402


with urllib_request_deferred():
    _lvis = _import_lvis_without_vis()
    import lvis.eval as _lvis_eval  # noqa: E402
