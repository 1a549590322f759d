"""Shared private helpers for reading user files (used by every paradigm)."""
from __future__ import annotations

import json
import math
import numbers
import os
from typing import Any


def read_json(path, what: str) -> Any:
    """Load a JSON file, raising ValueError that names ``what`` and the path
    if it is missing, unreadable or not valid JSON."""
    try:
        fspath = os.fspath(path)
    except TypeError:
        raise TypeError(f"{what}: expected a file path, got {type(path).__name__}") from None
    if not os.path.exists(fspath):
        raise ValueError(f"{what} file not found: {fspath}")
    if os.path.isdir(fspath):
        raise ValueError(f"{what} file is a directory: {fspath}")
    try:
        with open(fspath, "rb") as f:
            return json.load(f)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{what} file is not valid JSON: {fspath} "
                         f"(line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except UnicodeDecodeError:
        raise ValueError(f"{what} file is not valid JSON text: {fspath}") from None
    except OSError as exc:
        raise ValueError(f"cannot read {what} file {fspath}: {exc.strerror or exc}") from None


def finite_number(v) -> bool:
    """A real number (not a bool) that is finite; cheap for plain floats and ints."""
    if type(v) is float:
        return math.isfinite(v)
    if type(v) is int:
        return True
    return not isinstance(v, bool) and isinstance(v, numbers.Real) and math.isfinite(v)
