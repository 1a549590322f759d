"""Build script: the package metadata lives in pyproject.toml; this file only
declares the Cython extensions (sources in cython_ext/, modules in boundary_api/)."""
import sys

from Cython.Build import cythonize
from setuptools import Extension, setup

# Plain optimisation only: no -ffast-math, results must stay bit-exact.
extra = ["/O2"] if sys.platform == "win32" else ["-O3"]

extensions = [
    Extension(f"boundary_api.{name}", [f"cython_ext/{name}.pyx"], extra_compile_args=extra)
    for name in ("_mask", "_eval")
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={"language_level": "3", "boundscheck": False, "wraparound": False},
    ),
)
