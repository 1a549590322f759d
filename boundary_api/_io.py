"""Shared private helpers for reading user files (used by every paradigm)."""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import math
import numbers
import os
import shutil
import stat
import tempfile
import zlib
from typing import Any, Iterator

_GZIP_MAGIC = b"\x1f\x8b"

#: msgspec's decoder (an optional accelerator: 2-3x faster than json on COCO
#: files, same values), imported on first use: the columnar readers never
#: need it, and its import is ~15 ms of every process; None when absent
_FAST_DECODE: list = []


def _fast_decoder():
    if not _FAST_DECODE:
        try:
            import msgspec
            _FAST_DECODE.append(msgspec.json.Decoder().decode)
        except ImportError:  # pragma: no cover - msgspec is optional
            _FAST_DECODE.append(None)
    return _FAST_DECODE[0]


#: documents shorter than this (bytes) are parsed by ``json`` itself: for them
#: importing msgspec (~10 ms) costs more than it saves (the images and
#: categories of a ground truth the column scanner reads, small files)
SMALL_JSON = 1 << 18


def _loads(data: bytes) -> Any:
    """``json.loads(data)``, by msgspec when it is installed and accepts the
    document (and the document is not small: :data:`SMALL_JSON`).

    msgspec gives the same Python objects as ``json`` for every document it
    accepts (integers of any size stay ``int``, floats are correctly rounded,
    the last of duplicate keys wins); what only ``json`` accepts (``NaN``,
    ``Infinity``, numbers overflowing to infinity, a UTF-8 byte order mark,
    lone surrogate escapes, UTF-16/32 text) and every invalid document go
    to ``json``, which decides and words the error.
    """
    if len(data) < SMALL_JSON:
        return json.loads(data if isinstance(data, (bytes, bytearray, str)) else bytes(data))
    fast_decode = _fast_decoder()
    if fast_decode is not None:
        try:
            return fast_decode(data)
        except Exception:  # noqa: BLE001 - json decides, with its own messages
            pass
    return json.loads(data)


def _plain_str(self) -> str:
    return BaseException.__str__(self)


def named_as(original_name: str):
    """Class decorator: the exception class takes the class name of the
    library it stands in for (``type(exc).__name__ == "KeyError"``, also in
    tracebacks and ``repr``) while it stays importable, and picklable, under
    the name it is defined with (``KeyValueError``, ``PanopticKeyError``, ...).

    Code written for pycocotools, lvis, panopticapi or cityscapesScripts
    that compares exception class names (Detectron2's tests do) then sees
    the original's, and ``except KeyError`` / ``except ValueError`` both
    keep catching it.
    """
    def rename(cls: type) -> type:
        cls._import_name = (cls.__module__, cls.__qualname__)
        cls.__name__ = cls.__qualname__ = original_name
        cls.__reduce__ = _reduce_renamed
        return cls
    return rename


def _reduce_renamed(self):
    """Pickle a renamed exception by the name it is importable under."""
    where = type(self).__dict__.get("_import_name")
    if where is None:  # a subclass of a renamed class, not renamed itself
        return BaseException.__reduce__(self)
    return _rebuild_renamed, (where, self.args), self.__dict__ or None


def _rebuild_renamed(where, args):
    module, name = where
    if module is None:  # made by input_error_class for another library's class
        cls = input_error_class(name)
    else:
        import importlib

        cls = importlib.import_module(module)
        for part in name.split("."):
            cls = getattr(cls, part)
    try:
        return cls(*args)
    except TypeError:  # an __init__ of other arguments (JSONValueError): made, then given its args
        pass
    for base in cls.__mro__:  # (the first __new__ that can make it: OSError's for an OSError)
        try:
            exc = base.__new__(cls)
            break
        except TypeError:
            continue
    exc.args = args
    return exc


def _input_error_class(base: type, alias: str = None) -> type:
    """``ValueError`` combined with ``base``: what this package raises where
    the library it replaces raises ``base`` (a caller's ``except base`` and
    ``except ValueError`` both catch it), named ``base``'s name and printing
    the message as given; importable as ``alias`` from this module."""
    bases = (base,) if issubclass(base, ValueError) else (ValueError, base)
    cls = type(alias or base.__name__, bases,
               {"__str__": _plain_str, "__module__": __name__,
                "__doc__": f"Bad input where the replaced library raises {base.__name__}."})
    cls = named_as(base.__name__)(cls)
    if alias is None:
        cls._import_name = (None, base)
    return cls


#: ValueError + KeyError, IndexError, TypeError, AssertionError, FileNotFoundError
#: and IsADirectoryError: raised where pycocotools / lvis raise the second class,
#: named as that class (``type(exc).__name__ == "KeyError"``); these names are
#: where they are imported from
KeyValueError = _input_error_class(KeyError, "KeyValueError")
IndexValueError = _input_error_class(IndexError, "IndexValueError")
TypeValueError = _input_error_class(TypeError, "TypeValueError")
AssertionValueError = _input_error_class(AssertionError, "AssertionValueError")
FileNotFoundValueError = _input_error_class(FileNotFoundError, "FileNotFoundValueError")
IsADirectoryValueError = _input_error_class(IsADirectoryError, "IsADirectoryValueError")
AttributeValueError = _input_error_class(AttributeError, "AttributeValueError")

_INPUT_ERROR_CLASSES = {KeyError: KeyValueError, IndexError: IndexValueError, TypeError: TypeValueError,
                        AssertionError: AssertionValueError, FileNotFoundError: FileNotFoundValueError,
                        IsADirectoryError: IsADirectoryValueError, AttributeError: AttributeValueError}


def input_error_class(original: type) -> type:
    """The class to raise, with this package's message, where the replaced
    library raises ``original``: a subclass of both ``ValueError`` and
    ``original`` (``original`` itself if it is a ValueError already), named
    as ``original``."""
    if original is ValueError or not issubclass(original, Exception):
        return ValueError
    cls = _INPUT_ERROR_CLASSES.get(original)
    if cls is None:
        try:
            cls = _INPUT_ERROR_CLASSES[original] = _input_error_class(original)
        except TypeError:  # a class that cannot be combined with ValueError
            return ValueError
    return cls


def add_note(exc: BaseException, note: str) -> None:
    """Add this package's explanation to an exception raised by the replaced
    library's own code, which is then re-raised unchanged (its class and
    message): an exception note (shown under the message by tracebacks
    from Python 3.11); before 3.11, also chained as the exception's cause
    (a ``ValueError`` with the note, shown above it) unless it has one."""
    if hasattr(exc, "add_note"):
        exc.add_note(note)
        return
    exc.__notes__ = list(getattr(exc, "__notes__", ())) + [note]
    if exc.__cause__ is None:
        exc.__cause__ = ValueError(note)


@named_as("JSONDecodeError")
class JSONValueError(json.JSONDecodeError):
    """A file that is not valid JSON (a ``json.JSONDecodeError``, as
    pycocotools and lvis raise), with this package's message."""

    def __init__(self, message: str, exc: json.JSONDecodeError):
        super().__init__(exc.msg, exc.doc, exc.pos)
        self.args = (message,)

    def __str__(self) -> str:
        return self.args[0]


@named_as("UnicodeDecodeError")
class UnicodeValueError(UnicodeDecodeError):
    """A file that is not UTF-8 text (a ``UnicodeDecodeError``, as
    pycocotools and lvis raise), with this package's message."""

    def __init__(self, message: str, exc: UnicodeDecodeError):
        super().__init__(exc.encoding, exc.object, exc.start, exc.end, exc.reason)
        self.message = message

    def __str__(self) -> str:
        return self.message


def loads_json(data) -> Any:
    """:func:`_loads` for any bytes-like object (a NumPy uint8 buffer too)."""
    return _loads(data)


class InputBytes:
    """The whole content of an input that can be read only once (a pipe,
    process substitution, ``/dev/stdin``, a character device), read into
    memory by :func:`read_once`.

    Every reader of a user's file that may read it more than once (the
    column scanners, then the general path on their fallback) takes it where
    it takes a path, and names the input by :attr:`name`.  It is not
    path-like on purpose: a reader that would reopen the input fails
    instead of waiting forever on a pipe that has no writer any more.

    Attributes
    ----------
    name : str
        The path the bytes were read from (for messages).
    data : bytes
        The whole content, as read (gzip content is not decompressed).
    """

    __slots__ = ("name", "data")

    def __init__(self, name: str, data: bytes):
        self.name = name
        self.data = data

    def __repr__(self) -> str:
        return f"InputBytes({self.name!r}, {len(self.data)} bytes)"

    def __str__(self) -> str:
        return self.name


def _fs_name(path) -> str:
    """``path`` (str, bytes or path-like) as a str, or TypeError."""
    fspath = os.fspath(path)
    return os.fsdecode(fspath) if isinstance(fspath, bytes) else fspath


def read_once(path, what: str):
    """``path`` itself when it names a regular file (or nothing that exists,
    or is no path at all: the reader then words the problem), otherwise its
    whole content as :class:`InputBytes`.

    A pipe, a process substitution (``/dev/fd/N``), ``/dev/stdin`` or any
    other file that is not a regular file cannot be rewound or reopened:
    readers that try a fast path first and fall back to the general one
    would read it twice (and the second open of a FIFO waits for a writer
    that never comes).  Reading it once here lets them all read the same
    bytes.

    Raises
    ------
    ValueError
        (also of the ``OSError`` subclass met) when the input cannot be read.
    """
    if isinstance(path, InputBytes):
        return path
    try:
        name = _fs_name(path)
    except TypeError:
        return path
    if _PEEKED and name in _PEEKED:  # its start was looked at (first_content_byte)
        peeked = _read_peeked(name, what)
        if peeked is not None:
            return peeked
    try:
        mode = os.stat(name).st_mode
    except (ValueError, OSError):
        return path
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return path
    try:
        with open(name, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise input_error_class(type(exc))(f"cannot read {what} file {name}: {exc.strerror or exc}") from None
    return InputBytes(name, data)


def read_json(path, what: str) -> Any:
    """Load a JSON file, raising ValueError that names ``what`` and the path
    if it is missing, unreadable or not valid JSON.

    A gzip-compressed file (``.json.gz``, recognised by its content, not its
    name) is decompressed transparently.  JSON nested too deeply for Python's
    parser is a ValueError, not a RecursionError.  ``path`` may be
    :class:`InputBytes` (an input already read by :func:`read_once`); a
    pipe is read once.
    """
    path = read_once(path, what)
    if isinstance(path, InputBytes):
        fspath, data = path.name, path.data
    else:
        try:
            fspath = _fs_name(path)
        except TypeError:
            raise TypeError(f"{what}: expected a file path, got {type(path).__name__}") from None
        if not os.path.exists(fspath):
            raise FileNotFoundValueError(f"{what} file not found: {fspath}")
        if os.path.isdir(fspath):
            raise IsADirectoryValueError(f"{what} file is a directory: {fspath}")
        data = None
    try:
        if data is None:
            # read once: a pipe (``--gt <(zcat gt.json.gz)``, /dev/stdin) cannot be reopened or rewound
            with open(fspath, "rb") as f:
                data = f.read()
        if data[:2] == _GZIP_MAGIC:
            data = gzip.decompress(data)
        return _loads(data)
    except json.JSONDecodeError as exc:
        raise JSONValueError(f"{what} file is not valid JSON: {fspath} "
                             f"(line {exc.lineno}, column {exc.colno}: {exc.msg})", exc) from None
    except UnicodeDecodeError as exc:
        raise UnicodeValueError(f"{what} file is not valid JSON text: {fspath}", exc) from None
    except RecursionError:
        raise ValueError(f"{what} file is nested too deeply to be read: {fspath}") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ValueError(f"{what} file is not a valid gzip file: {fspath} ({exc})") from None
    except OSError as exc:
        raise input_error_class(type(exc))(f"cannot read {what} file {fspath}: {exc.strerror or exc}") from None


class _Prefixed(io.RawIOBase):
    """A raw binary stream: ``head`` (bytes already read), then the rest of ``raw``."""

    def __init__(self, head: bytes, raw):
        super().__init__()
        self._head = head
        self._raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self._head:
            n = min(len(buffer), len(self._head))
            buffer[:n] = self._head[:n]
            self._head = self._head[n:]
            return n
        return self._raw.readinto(buffer)

    def readall(self) -> bytes:
        head, self._head = self._head, b""
        return head + self._raw.readall()


@contextlib.contextmanager
def open_input(path) -> Iterator[io.BufferedIOBase]:
    """A user's file opened for reading once, from its start, in binary.

    Gzip-compressed content (recognised by its first bytes, not its name) is
    decompressed on the fly.  Nothing is rewound or reopened, so pipes and
    process substitution (``<(zcat results.jsonl.gz)``, ``/dev/stdin``) work
    like regular files.
    """
    peeked = _take_peeked(_fs_name(path)) if _PEEKED else None  # its start already read
    raw = peeked.raw if peeked is not None else open(path, "rb", buffering=0)
    try:
        head = peeked.head if peeked is not None else b""
        while len(head) < len(_GZIP_MAGIC):
            chunk = raw.read(len(_GZIP_MAGIC) - len(head))
            if not chunk:
                break
            head += chunk
        stream = io.BufferedReader(_Prefixed(head, raw), buffer_size=1 << 20)
        if head[:2] == _GZIP_MAGIC:
            stream = gzip.GzipFile(fileobj=stream, mode="rb")
        yield stream
    finally:
        raw.close()


def starts_with(path, char: bytes) -> bool:
    """Whether a file's first non-blank byte is ``char`` (gzip content is
    looked into); False when it cannot be read or is empty.  A pipe keeps
    the bytes looked at (:func:`first_content_byte`)."""
    return first_content_byte(path) == char


#: integers of smaller magnitude are finite as floats; beyond, float() decides
_FLOAT_SAFE_INT = 1 << 1023


def finite_number(v) -> bool:
    """A real number (not a bool) that is finite, as a float too (an integer
    beyond the float range is not); cheap for plain floats and ints."""
    if type(v) is float:
        return math.isfinite(v)
    if type(v) is int:
        return -_FLOAT_SAFE_INT < v < _FLOAT_SAFE_INT or _fits_float(v)
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        return False
    try:
        return math.isfinite(v)
    except OverflowError:  # an Integral beyond the float range
        return False


def _fits_float(v) -> bool:
    try:
        float(v)
    except OverflowError:
        return False
    return True


_PLAIN_NUMBERS = frozenset((float, int))


def finite_numbers(values) -> bool:
    """``all(finite_number(v) for v in values)``, in C for a list of plain
    floats and ints: their sum is finite only if every one of them is (an
    infinity or NaN anywhere makes it infinite or NaN); an overflowing sum
    or any other type takes the item-by-item check (as do integers beyond
    the float range, whose sum may be small)."""
    types = set(map(type, values))
    if types <= _PLAIN_NUMBERS:
        try:
            if math.isfinite(sum(values)) and (
                    int not in types or -_FLOAT_SAFE_INT < min(values) and max(values) < _FLOAT_SAFE_INT):
                return True
        except OverflowError:  # ints beyond the float range
            pass
    return all(finite_number(v) for v in values)


def warn_large_dilation_ratio(dilation_ratio: float, logger: logging.Logger) -> None:
    """Log a warning when a dilation ratio of 1 or more is used for a boundary
    evaluation: the boundary then covers every mask entirely (Mask AP / PQ),
    which usually means a percentage was given instead of a fraction."""
    if dilation_ratio >= 1:
        logger.warning("dilation ratio %g is at least the whole image diagonal: every boundary is "
                       "the entire mask, so this reports mask IoU (the ratio is a fraction: 0.02 "
                       "means 2%%)", dilation_ratio)


# ------------------------------------------------------------ inputs read once
# The first bytes of a pipe, looked at to choose how to read it, are kept here
# with the still-open pipe, so that the reader chosen gets the whole content:
# a pipe (``--dt <(zcat r.jsonl.gz)``, ``/dev/stdin``, a FIFO) is read once,
# by this process, without a copy on disk.  Keyed by the name the user gave,
# which every message keeps.

#: most bytes looked at by :func:`first_content_byte` (beyond: "not decided")
_PEEK_LIMIT = 1 << 24


class _Peeked:
    """A pipe whose first bytes (``head``) have been read from ``raw``."""

    __slots__ = ("raw", "head")

    def __init__(self, raw, head: bytes):
        self.raw = raw
        self.head = head


_PEEKED: dict = {}


def is_stream(path) -> bool:
    """Whether ``path`` names an existing input that is neither a regular file
    nor a folder (a pipe, process substitution, ``/dev/stdin``, a device):
    one that can be read once only."""
    if isinstance(path, InputBytes):
        return True
    try:
        name = _fs_name(path)
        if name in _PEEKED:
            return True
        mode = os.stat(name).st_mode
    except (TypeError, ValueError, OSError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _first_non_blank(head: bytes, final: bool) -> bytes:
    """The first non-blank byte of ``head`` (gzip content decompressed as far
    as it goes), b"" when there is none yet."""
    if head[:2] == _GZIP_MAGIC:
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head)
        except zlib.error:
            return b"" if not final else b"\x00"
    return head.lstrip()[:1]


def first_content_byte(path) -> bytes:
    """The first non-blank byte of a user's file (gzip content looked into),
    b"" when it is empty, cannot be read or does not say within 16 MiB.

    A regular file is opened and closed.  A pipe is read only as far as
    needed, and what was read stays with it: the next :func:`read_once`,
    :func:`read_json` or :func:`open_input` of the same name gets the whole
    content, from its first byte.
    """
    if isinstance(path, InputBytes):
        return _first_non_blank(path.data, True)
    if not is_stream(path):
        try:
            with open_input(path) as f:
                while True:
                    block = f.read(1 << 12)
                    if not block:
                        return b""
                    block = block.lstrip()
                    if block:
                        return block[:1]
        except (OSError, EOFError, ValueError, TypeError):
            return b""
    name = _fs_name(path)
    peeked = _PEEKED.get(name)
    if peeked is None:
        try:
            raw = open(name, "rb", buffering=0)
        except OSError:
            return b""
        peeked = _PEEKED[name] = _Peeked(raw, b"")
    while True:
        found = _first_non_blank(peeked.head, False)
        if found or len(peeked.head) >= _PEEK_LIMIT:
            return found
        try:
            chunk = peeked.raw.read(1 << 16)
        except OSError:
            return b""
        if not chunk:
            return _first_non_blank(peeked.head, True)
        peeked.head += chunk


def _take_peeked(name):
    """The pipe ``name`` whose start :func:`first_content_byte` read (removed
    from the registry: it is handed to one reader), or None; None too when
    ``name`` now names another file (a ``/dev/fd/N`` reused in a long-running
    process)."""
    peeked = _PEEKED.pop(name, None) if _PEEKED else None
    if peeked is None:
        return None
    try:
        same = os.path.samestat(os.fstat(peeked.raw.fileno()), os.stat(name))
    except (OSError, ValueError):
        same = False
    if not same:
        peeked.raw.close()
        return None
    return peeked


def _read_peeked(name, what: str):
    """The whole content of the pipe ``name`` if its start was read, as
    :class:`InputBytes`, else None."""
    peeked = _take_peeked(name)
    if peeked is None:
        return None
    try:
        data = peeked.head + peeked.raw.readall()
    except OSError as exc:
        raise input_error_class(type(exc))(f"cannot read {what} file {name}: {exc.strerror or exc}") from None
    finally:
        peeked.raw.close()
    return InputBytes(name, data)


def write_text_atomic(path, text: str) -> None:
    """Write ``text`` (UTF-8, line ends as given) to ``path`` atomically:
    to ``PATH.tmp-PID`` beside it, then renamed over it; on any failure,
    interruption included, the temporary file is removed."""
    tmp = f"{os.fspath(path)}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextlib.contextmanager
def temporary_folder(prefix: str, dir: str | None = None) -> Iterator[str]:
    """A temporary folder (``tempfile.mkdtemp``) removed when the block ends,
    also when an interruption (Ctrl-C, or the command line's SIGTERM, both
    ``KeyboardInterrupt``) arrives while it is being removed: the removal is
    finished first, then the interruption raised.  ``TemporaryDirectory``
    leaves the rest of the folder behind in that case."""
    folder = None
    try:
        folder = tempfile.mkdtemp(prefix=prefix, dir=dir)
        yield folder
    finally:
        interrupted = None
        while folder is not None:
            try:
                shutil.rmtree(folder, ignore_errors=True)
                folder = None
            except KeyboardInterrupt as exc:
                interrupted = exc
        if interrupted is not None:
            raise interrupted
