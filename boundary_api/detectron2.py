"""Compatibility path: see :mod:`boundary_api.integrations.detectron2` (needs Detectron2)."""
from .integrations.detectron2 import *  # noqa: F401,F403
from .integrations.detectron2 import __all__  # noqa: F401
