"""The package version (one place; pyproject.toml carries the same string, checked by the tests)."""
__version__ = "0.1.0"
