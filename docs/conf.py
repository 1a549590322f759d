"""Sphinx configuration of boundary_api's documentation.

Build (from the repository root, with the package installed)::

    pip install -r docs/requirements.txt
    sphinx-build -W -b html docs docs/_build/html

Pages are Markdown (MyST); the API reference is generated from the numpydoc
docstrings; the command-line reference runs ``boundary-eval ... --help`` at
build time (``docs/_ext/clihelp.py``), so it cannot drift from the code.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "_ext"))

import boundary_api  # noqa: E402  (the installed package: the version and the API reference)

project = "boundary_api"
author = "boundary_api developers"
copyright = "boundary_api developers"
release = boundary_api.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "clihelp",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "requirements.txt"]

myst_enable_extensions = ["dollarmath"]
myst_heading_anchors = 3

autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_member_order = "bysource"
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_validation_checks = set()
# Compiled extension modules are documented through the Python modules that wrap them.
suppress_warnings = ["myst.header"]

html_theme = "alabaster"
html_title = f"boundary_api {release}"
html_static_path = ["_static"]
# A wider page than alabaster's 940 px (the text column holds 100 columns of code at
# 1280 px; _static/custom.css, checked by tests/test_docs_browser.py).
html_theme_options = {
    "page_width": "1200px",
    "sidebar_width": "220px",
    "body_max_width": "none",
}

# Detectron2 and torch are not dependencies (Detectron2 is not on PyPI); the
# integration modules are documented against stand-ins.
autodoc_mock_imports = ["detectron2", "torch"]
