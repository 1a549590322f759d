"""Benchmarks of boundary_api against its peers (scripts, not part of the package).

``python -m benchmarks`` (from the repository root, after ``pip install ".[bench]"``)
runs :mod:`run_all`: see ``python -m benchmarks --help`` and ``benchmarks/README.md``.
"""
