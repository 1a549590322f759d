"""Pieces every subcommand shares: the program name, argument types, input errors,
the help formatter and the check of the ``--json-out`` target."""
from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import signal
import stat
from typing import Mapping, Optional

PROG = "boundary-eval"

#: largest --dilation-ratio accepted: any ratio >= 1 already makes every
#: boundary the whole mask, larger ones are typing mistakes
MAX_RATIO = 1000.0


class InputError(ValueError):
    """Bad input found by the command line itself."""


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Adds "(default: X)" to a flag's help only when the help does not already
    speak of its default and the default is an actual value."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


class ExamplesHelpFormatter(HelpFormatter):
    """:class:`HelpFormatter` that keeps a text of several lines (an epilog of
    examples) as written instead of wrapping it into one paragraph."""

    def _fill_text(self, text, width, indent):
        if "\n" in text.strip("\n"):
            return "".join(indent + line for line in text.splitlines(keepends=True))
        return super()._fill_text(text, width, indent)


def add_common_flags(p: argparse.ArgumentParser) -> None:
    """--version and -q, on every subcommand."""
    from .._version import __version__

    p.add_argument("--version", action="version", version=f"{PROG} (boundary_api) {__version__}",
                   help="print the version and exit")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print only the summary table (warnings and errors still go to stderr)")


def ratio(text: str) -> float:
    """``--dilation-ratio``: a finite number in (0, MAX_RATIO].

    0 is refused: it would not give an empty boundary but d = 1 pixel on every
    image (the Python API accepts it with a warning)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    if value == 0:
        raise argparse.ArgumentTypeError(
            "must be > 0: 0 does not give an empty boundary but the thinnest one, d = 1 pixel on every "
            "image; give the fraction of the image diagonal you mean (e.g. 0.001)")
    if value > MAX_RATIO:
        raise argparse.ArgumentTypeError(
            f"{text!r} is far too large: the ratio is a fraction of the image diagonal (0.02 means 2%), "
            "and any value of 1 or more already makes the boundary the whole mask")
    return value


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


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, so that
    every ``finally`` and ``with`` on the way out runs: temporary folders
    (streaming chunks, shards) and a half-written
    ``--json-out`` are removed, a local Dask cluster is shut down."""


class _Termination:
    deferred = 0  # > 0 inside deferred_termination()
    pending = False


def _on_sigterm(signum, frame):
    if _Termination.deferred:
        _Termination.pending = True
        return
    raise Terminated()


@contextlib.contextmanager
def terminate_cleanly():
    """SIGTERM raises :class:`Terminated` while the command runs (main thread only)."""
    try:
        previous = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    _Termination.pending = False
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def deferred_termination():
    """SIGTERM waits until the block is over (then raises :class:`Terminated`):
    for steps that cannot be undone half-way, such as a Dask cluster starting
    its workers."""
    _Termination.deferred += 1
    try:
        yield
    finally:
        _Termination.deferred -= 1
    if not _Termination.deferred and _Termination.pending:
        _Termination.pending = False
        raise Terminated()


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_out_path(out: Optional[str], files: Mapping[str, Optional[str]] = (),
                   folders: Mapping[str, Optional[str]] = (), flag: str = "--json-out") -> None:
    """Refuse a ``--json-out`` target (or the target of ``flag``) before anything is evaluated.

    Refused, with the path as the user gave it: a symbolic link, a directory,
    anything but a regular file (FIFO, device, socket), one of the input
    ``files`` (flag -> path), a path inside one of the input ``folders``
    (flag -> folder), a directory that does not exist, and a place where no
    file can be created or an existing read-only file.  A probe file
    ``PATH.tmp-PID`` is created and removed to check the last point.
    """
    if out is None:
        return
    files = dict(files)
    folders = dict(folders)
    if os.path.islink(out):
        raise InputError(f"{flag} {out}: is a symbolic link; give the path of a regular file")
    exists = os.path.exists(out)
    if exists:
        mode = os.stat(out).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"{flag} {out}: is a directory")
        if not stat.S_ISREG(mode):
            raise InputError(f"{flag} {out}: is not a regular file (a FIFO, device or socket)")
        for given, path in files.items():
            if path and os.path.exists(path) and os.path.samefile(out, path):
                raise InputError(f"{flag} {out} is the file given to {given}; it would be overwritten")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise InputError(f"{flag} {out}: directory does not exist: {parent}")
    real_parent = os.path.realpath(parent)
    for given, folder in folders.items():
        if folder and os.path.isdir(folder) and _inside(real_parent, os.path.realpath(folder)):
            raise InputError(f"{flag} {out} is inside the folder given to {given} ({folder}); "
                             "write it elsewhere")
    if exists and not os.access(out, os.W_OK):
        raise InputError(f"{flag} {out}: the file is read-only")
    probe = f"{out}.tmp-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise InputError(f"{flag} {out}: cannot write there ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)
