"""The package version, defined once.

``pyproject.toml`` reads it for the distribution metadata
(``[tool.setuptools.dynamic]``), ``boundary_api.__version__`` re-exports it,
and the command line and the result files report it.  PEP 440: ``X.Y.Z.devN``
between releases, ``X.Y.Z`` for a release (see CHANGELOG.md).
"""

__version__ = "0.2.0.dev0"
