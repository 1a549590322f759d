"""Pieces every subcommand shares: the program name, argument types, input errors."""
from __future__ import annotations

import argparse
import contextlib
import io
import os
from typing import List, Optional

from ..masks.boundary import check_dilation_ratio

PROG = "boundary-eval"


class InputError(ValueError):
    """Bad input found by the command line itself."""


def ratio(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    try:
        return check_dilation_ratio(value)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


@contextlib.contextmanager
def quiet(enabled: bool):
    if not enabled:
        yield
        return
    with contextlib.redirect_stdout(io.StringIO()):
        yield


def check_out_path(out: Optional[str], inputs: List[str]) -> None:
    if out is None:
        return
    for path in inputs:
        if path and os.path.exists(path) and os.path.exists(out) and os.path.samefile(out, path):
            raise InputError(f"--json-out {out} is one of the input files; it would be overwritten")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise InputError(f"--json-out: directory does not exist: {parent}")
