"""Build script: the package metadata lives in pyproject.toml; this file only
declares the Cython extensions (sources in cython_ext/, modules in boundary_api/)."""
import sys

from Cython.Build import cythonize
from setuptools import Extension, setup

# Plain optimisation only: no -ffast-math, results must stay bit-exact; and no fused
# multiply-adds (GCC contracts a*b+c by default where the CPU has FMA, e.g. aarch64),
# so that every platform rounds as the C source is written, as pycocotools does on x86-64.
extra = ["/O2"] if sys.platform == "win32" else ["-O3", "-ffp-contract=off"]

# cython_ext/_mask.pyx includes the kernel files cython_ext/_*.pxi (one module).
extensions = [
    Extension(module, [source], extra_compile_args=extra)
    for module, source in (
        ("boundary_api.masks._mask", "cython_ext/_mask.pyx"),      # RLE, boundary, IoU, panoptic kernels
        ("boundary_api.instance._eval", "cython_ext/_eval.pyx"),   # matching and accumulation
        ("boundary_api.instance._scan", "cython_ext/_scan.pyx"),   # results / ground-truth JSON -> columns
    )
]

setup(
    ext_modules=cythonize(
        extensions,
        compiler_directives={"language_level": "3", "boundscheck": False, "wraparound": False},
    ),
)
