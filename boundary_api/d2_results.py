"""Compatibility path: see :mod:`boundary_api.integrations.d2_results`."""
from .integrations.d2_results import *  # noqa: F401,F403
from .integrations.d2_results import __all__  # noqa: F401
