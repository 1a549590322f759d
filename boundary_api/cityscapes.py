"""Short path: see :mod:`boundary_api.instance.cityscapes` (Cityscapes instance AP / Boundary AP)."""
from .instance.cityscapes import *  # noqa: F401,F403
from .instance.cityscapes import __all__  # noqa: F401
