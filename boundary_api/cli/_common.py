"""Pieces every subcommand shares: the program name, argument types, input errors,
the help formatter and the check of the ``--json-out`` target."""
from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import shutil
import signal
import stat
import tempfile
from typing import Dict, List, Mapping, Optional

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


#: flags whose value is a JSON file read by some subcommand (aliases included)
#: (not --manifest: read once, and its relative shard paths need its own folder)
JSON_INPUT_FLAGS = ("--gt", "--gt-json-file", "--dt", "--dt-json-file", "--gt-json",
                    "--pred-json", "--pred-json-file", "--class-names")

#: copies of the non-seekable inputs of this run (pipes, /dev/stdin): copy -> path as given
SPOOLED: Dict[str, str] = {}


def given(path):
    """The path as the user gave it, for a copy :func:`spool_pipes` made."""
    return SPOOLED.get(path, path) if isinstance(path, str) else path


def as_given(text: str) -> str:
    """``text`` (an error message) with every spooled copy named as the user named it."""
    for copy, original in SPOOLED.items():
        text = text.replace(copy, original)
    return text


def _is_stream(path: str) -> bool:
    """An existing input that is neither a regular file nor a folder: a pipe,
    process substitution (``<(zcat x.gz)``), ``/dev/stdin``, a device."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _starts_with(path: str, char: bytes) -> bool:
    """Whether a file's first non-blank byte is ``char`` (gzip content is looked into)."""
    from .._io import starts_with

    return starts_with(path, char)


def _looks_like_json_lines(path: str) -> bool:
    """Whether a file's first non-blank character opens an object (JSON Lines)
    rather than a list."""
    return _starts_with(path, b"{")


def spool_pipes(argv: List[str], folder: "_LazyFolder") -> List[str]:
    """``argv`` with every JSON input that is a pipe or device (see
    :data:`JSON_INPUT_FLAGS`) replaced by a copy in ``folder`` (of :func:`spool_folder`).

    Such an input can be read once only, while a command may read a file more
    than once (a fast columnar reader first, a checking reader after it) or
    look at its start to choose how to read it.  A results copy whose content
    is JSON Lines is named ``*.jsonl`` (so that ``--dt <(zcat r.jsonl.gz)``
    streams).  The copies are registered in :data:`SPOOLED`.
    """
    out = list(argv)
    for n, arg in enumerate(out):
        flag, eq, value = arg.partition("=")
        if flag not in JSON_INPUT_FLAGS:
            continue
        if not eq:
            if n + 1 >= len(out):
                continue
            value = out[n + 1]
        if not value or not _is_stream(value):
            continue
        copy = os.path.join(folder.path(), f"input{len(SPOOLED)}")
        try:
            with open(value, "rb") as src, open(copy, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        except OSError as exc:
            raise InputError(f"{flag} {value}: cannot read it ({exc.strerror or exc})") from None
        if flag in ("--dt", "--dt-json-file") and _looks_like_json_lines(copy):
            suffix = ".jsonl"
        elif flag == "--class-names" and not _starts_with(copy, b"["):
            suffix = ".txt"  # a text file, one name a line
        else:
            suffix = ".json"
        os.replace(copy, copy + suffix)
        copy += suffix
        SPOOLED[copy] = value
        if eq:
            out[n] = f"{flag}={copy}"
        else:
            out[n + 1] = copy
    return out


class _LazyFolder:
    """A temporary folder made on first use (:meth:`path`)."""

    def __init__(self):
        self._path: Optional[str] = None

    def path(self) -> str:
        if self._path is None:
            self._path = tempfile.mkdtemp(prefix="boundary_api_input_")
        return self._path


@contextlib.contextmanager
def spool_folder():
    """Where :func:`spool_pipes` puts its copies: a temporary folder made only
    if there is something to copy, removed at the end (also on an error, an
    interruption or SIGTERM)."""
    folder = _LazyFolder()
    try:
        yield folder
    finally:
        if folder._path is not None:
            shutil.rmtree(folder._path, ignore_errors=True)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread like Ctrl-C's KeyboardInterrupt, so that
    every ``finally`` and ``with`` on the way out runs: temporary folders
    (streaming chunks, shards, copies of piped inputs) and a half-written
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
                   folders: Mapping[str, Optional[str]] = ()) -> None:
    """Refuse a ``--json-out`` target before anything is evaluated.

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
        raise InputError(f"--json-out {out}: is a symbolic link; give the path of a regular file")
    exists = os.path.exists(out)
    if exists:
        mode = os.stat(out).st_mode
        if stat.S_ISDIR(mode):
            raise InputError(f"--json-out {out}: is a directory")
        if not stat.S_ISREG(mode):
            raise InputError(f"--json-out {out}: is not a regular file (a FIFO, device or socket)")
        for flag, path in files.items():
            if path and os.path.exists(path) and os.path.samefile(out, path):
                raise InputError(f"--json-out {out} is the file given to {flag}; it would be overwritten")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise InputError(f"--json-out {out}: directory does not exist: {parent}")
    real_parent = os.path.realpath(parent)
    for flag, folder in folders.items():
        if folder and os.path.isdir(folder) and _inside(real_parent, os.path.realpath(folder)):
            raise InputError(f"--json-out {out} is inside the folder given to {flag} ({folder}); "
                             "write it elsewhere")
    if exists and not os.access(out, os.W_OK):
        raise InputError(f"--json-out {out}: the file is read-only")
    probe = f"{out}.tmp-{os.getpid()}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        raise InputError(f"--json-out {out}: cannot write there ({exc.strerror or exc})") from None
    os.close(fd)
    os.unlink(probe)
