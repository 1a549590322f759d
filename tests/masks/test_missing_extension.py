"""Importing the source tree, where the Cython extension is not built (issue 9, item 11):
the error says what is wrong and what to do, instead of "cannot import name '_rle' ...
(most likely due to a circular import)"."""
import importlib.machinery
import os
import shutil
import subprocess
import sys

import boundary_api


def _source_copy(tmp_path):
    """The package's Python sources without any compiled module: what the repository
    root holds after a non-editable `pip install .`."""
    src = os.path.dirname(boundary_api.__file__)
    root = tmp_path / "checkout"
    shutil.copytree(src, root / "boundary_api",
                    ignore=shutil.ignore_patterns("*.so", "*.pyd", "__pycache__"))
    return root


def test_import_from_a_source_tree_says_what_to_do(tmp_path):
    root = _source_copy(tmp_path)
    for code in ("import boundary_api", "from boundary_api.cli import main",
                 "import boundary_api.masks.boundary"):
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
        assert proc.returncode == 1
        last = proc.stderr.strip().splitlines()[-1]
        assert last == (
            "ImportError: boundary_api's compiled extension (boundary_api.masks._rle) is missing: Python "
            f"imported the source tree at {root}, where nothing is compiled (this happens when running "
            "`python`, `python -m pytest` or `import boundary_api` from the repository root after "
            "`pip install .`). Either build the extension in place with `pip install -e .` (for development), "
            "or run from a directory outside the source tree so that the installed package is imported.")
        assert "circular import" not in proc.stderr


def test_a_broken_extension_is_named(tmp_path):
    root = _source_copy(tmp_path)
    bad = root / "boundary_api" / "masks" / ("_rle" + importlib.machinery.EXTENSION_SUFFIXES[0])
    bad.write_bytes(b"not a shared object")
    proc = subprocess.run([sys.executable, "-c", "import boundary_api"], capture_output=True, text=True, cwd=root)
    assert proc.returncode == 1
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"ImportError: boundary_api's compiled extension {bad} could not be loaded (")
    assert last.endswith("rebuild it with `pip install -e .` in the source tree, or reinstall boundary_api")
