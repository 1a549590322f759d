"""Deprecated path (0.1.0's layout): use :mod:`boundary_api.masks.reference`; see ``boundary_api._deprecated``."""
from ._deprecated import alias

alias(__name__)
