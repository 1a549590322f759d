"""Deprecated path (0.1.0's layout): use :mod:`boundary_api.masks.measures`; see ``boundary_api._deprecated``."""
from ._deprecated import alias

alias(__name__)
