"""boundary_api._io: user files read once from their start, so that pipes work (issue 25)."""
import gzip
import json
import os
import threading

import pytest

from boundary_api._io import open_input, read_json


def _pipe(payload: bytes):
    """A path to the read end of a pipe that receives ``payload``, and the writer thread."""
    r, w = os.pipe()

    def feed():
        try:
            with os.fdopen(w, "wb") as f:
                f.write(payload)
        except BrokenPipeError:  # the reader stopped early (a failure the test reports)
            pass

    thread = threading.Thread(target=feed)
    thread.start()
    return r, thread


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
def test_read_json_from_a_pipe(compress):
    doc = {"images": [{"id": i} for i in range(5000)]}
    data = json.dumps(doc).encode()
    r, thread = _pipe(gzip.compress(data) if compress else data)
    try:
        assert read_json(f"/dev/fd/{r}", "ground truth") == doc
    finally:
        os.close(r)
        thread.join()


def test_bad_json_from_a_pipe_is_named():
    r, thread = _pipe(b"[1, 2")
    try:
        with pytest.raises(ValueError, match=f"results file is not valid JSON: /dev/fd/{r}"):
            read_json(f"/dev/fd/{r}", "results")
    finally:
        os.close(r)
        thread.join()


@pytest.mark.parametrize("payload", [b"", b"x", b"\x1f", b"{}\n" * 100000])
def test_open_input_gives_every_byte(tmp_path, payload):
    r, thread = _pipe(payload)
    try:
        with open_input(f"/dev/fd/{r}") as f:
            assert f.read() == payload
    finally:
        os.close(r)
        thread.join()
    path = tmp_path / "x.gz"
    path.write_bytes(gzip.compress(payload))
    with open_input(path) as f:
        assert b"".join(f) == payload


@pytest.mark.parametrize("compress", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("reader", ["read_once", "read_json", "open_input"])
def test_a_pipe_looked_into_keeps_every_byte(compress, reader):
    """first_content_byte reads a pipe's start (past 64 KiB of blanks) without
    using it up: the reader after it gets the whole content, read once."""
    from boundary_api._io import InputBytes, first_content_byte, is_stream, read_once

    data = b" " * 100_000 + json.dumps([{"a": i} for i in range(20000)]).encode()
    r, thread = _pipe(gzip.compress(data) if compress else data)
    name = f"/dev/fd/{r}"
    try:
        assert is_stream(name)
        assert first_content_byte(name) == b"["
        assert first_content_byte(name) == b"["  # asked again: the same answer, nothing more used up
        if reader == "read_once":
            got = read_once(name, "results")
            assert isinstance(got, InputBytes) and got.name == name
            assert (gzip.decompress(got.data) if compress else got.data) == data
        elif reader == "read_json":
            assert read_json(name, "results") == json.loads(data)
        else:
            with open_input(name) as f:
                assert f.read() == data
    finally:
        os.close(r)
        thread.join()


def test_first_content_byte_of_files(tmp_path):
    from boundary_api._io import first_content_byte, is_stream

    (tmp_path / "a.jsonl.gz").write_bytes(gzip.compress(b'\n {"a": 1}\n'))
    (tmp_path / "empty").write_bytes(b"")
    assert first_content_byte(tmp_path / "a.jsonl.gz") == b"{"
    assert first_content_byte(tmp_path / "empty") == b""
    assert first_content_byte(tmp_path / "missing") == b""
    assert not is_stream(tmp_path / "a.jsonl.gz") and not is_stream(tmp_path) and not is_stream(tmp_path / "x")
    from boundary_api._io import InputBytes, read_once

    r, thread = _pipe(b"")
    try:
        assert first_content_byte(f"/dev/fd/{r}") == b""
        got = read_once(f"/dev/fd/{r}", "results")  # takes (and closes) what was looked at
        assert isinstance(got, InputBytes) and got.data == b""
    finally:
        os.close(r)
        thread.join()


# ------------------------------------------ issue 40: the originals' class names
def _renamed_classes():
    from boundary_api import _io
    from boundary_api.cityscapes import CityscapesFileNotFoundError, CityscapesInputError, CityscapesKeyError
    from boundary_api.instance._checks import NotAListError
    from boundary_api.panoptic import PanopticKeyError

    return [(_io.KeyValueError, KeyError), (_io.IndexValueError, IndexError), (_io.TypeValueError, TypeError),
            (_io.AssertionValueError, AssertionError), (_io.FileNotFoundValueError, FileNotFoundError),
            (_io.IsADirectoryValueError, IsADirectoryError), (_io.AttributeValueError, AttributeError),
            (NotAListError, AssertionError), (PanopticKeyError, KeyError), (CityscapesKeyError, KeyError),
            (CityscapesFileNotFoundError, FileNotFoundError), (CityscapesInputError, SystemExit)]


@pytest.mark.parametrize("cls, original", _renamed_classes(), ids=lambda c: getattr(c, "_import_name", ("", ""))[1])
def test_input_errors_carry_the_originals_class_name(cls, original):
    """Named as the original (type(e).__name__, repr, tracebacks), caught by
    ``except original`` and ``except ValueError``, the message as given, and
    pickled under the name it is imported by."""
    import pickle
    import traceback

    exc = cls("results: result #0 has no 'image_id'")
    assert type(exc).__name__ == type(exc).__qualname__ == original.__name__
    assert isinstance(exc, original) and isinstance(exc, ValueError)
    assert str(exc) == "results: result #0 has no 'image_id'"
    assert repr(exc) == f"{original.__name__}(\"results: result #0 has no 'image_id'\")"
    line = traceback.format_exception_only(type(exc), exc)[-1]
    assert line == f"{cls.__module__}.{original.__name__}: results: result #0 has no 'image_id'\n"
    again = pickle.loads(pickle.dumps(exc))
    assert type(again) is cls and str(again) == str(exc)
    if original is SystemExit:
        assert again.code == exc.code == str(exc)


def test_input_error_class_of_another_librarys_class():
    import pickle

    from boundary_api._io import input_error_class

    cls = input_error_class(json.JSONDecodeError)
    assert cls is input_error_class(json.JSONDecodeError)
    assert cls.__name__ == "JSONDecodeError" and issubclass(cls, json.JSONDecodeError)
    assert input_error_class(ValueError) is ValueError and input_error_class(KeyboardInterrupt) is ValueError
    cls = input_error_class(LookupError)
    exc = pickle.loads(pickle.dumps(cls("a message")))
    assert type(exc) is cls and type(exc).__name__ == "LookupError" and str(exc) == "a message"


def test_json_and_text_errors_carry_the_originals_class_name(tmp_path):
    import pickle

    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(json.JSONDecodeError) as info:
        read_json(str(bad), "results")
    assert type(info.value).__name__ == "JSONDecodeError" and isinstance(info.value, ValueError)
    assert str(info.value) == f"results file is not valid JSON: {bad} (line 1, column 2: " \
                              "Expecting property name enclosed in double quotes)"
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is type(info.value) and str(again) == str(info.value) and again.lineno == 1
    bad.write_bytes(b'["\xff"]')
    with pytest.raises(UnicodeDecodeError) as info:
        read_json(str(bad), "results")
    assert type(info.value).__name__ == "UnicodeDecodeError"


def test_add_note_leaves_class_and_message():
    from boundary_api._io import add_note

    exc = KeyError("score")
    add_note(exc, "boundary_api: why")
    assert type(exc) is KeyError and str(exc) == "'score'" and exc.__notes__ == ["boundary_api: why"]


def test_finite_number_of_integers_beyond_the_float_range():
    from boundary_api._io import finite_number, finite_numbers

    assert finite_number(2 ** 1023) and finite_number(-(2 ** 1023)) and finite_number(2 ** 1024 - 2 ** 970 - 1)
    assert not finite_number(2 ** 1024 - 2 ** 970) and not finite_number(10 ** 400)
    assert not finite_numbers([10 ** 400, -(10 ** 400)]) and not finite_numbers([1.0, 10 ** 400])
    assert finite_numbers([1, 2.5, -(2 ** 1000)]) and not finite_number(True)


def test_temporary_folder_is_removed_when_an_interruption_cuts_its_removal_short(tmp_path, monkeypatch):
    """Ctrl-C or the command line's SIGTERM (a KeyboardInterrupt) arriving while the
    folder is being removed: the removal is finished, then the interruption raised
    (tempfile.TemporaryDirectory leaves the rest of the folder behind)."""
    import shutil

    from boundary_api import _io

    real = shutil.rmtree
    calls = []

    def interrupted_once(path, ignore_errors=False):
        calls.append(path)
        if len(calls) == 1:
            os.remove(os.path.join(path, "a"))  # part of the folder removed, then the signal
            raise KeyboardInterrupt
        real(path, ignore_errors=ignore_errors)

    monkeypatch.setattr(_io.shutil, "rmtree", interrupted_once)
    with pytest.raises(KeyboardInterrupt):
        with _io.temporary_folder("boundary_api_test_", str(tmp_path)) as folder:
            for name in ("a", "b"):
                with open(os.path.join(folder, name), "w") as f:
                    f.write(name)
    assert len(calls) == 2 and os.listdir(tmp_path) == []
    # an error of the block itself still comes through, the folder removed
    monkeypatch.setattr(_io.shutil, "rmtree", real)
    with pytest.raises(ZeroDivisionError):
        with _io.temporary_folder("boundary_api_test_", str(tmp_path)):
            1 / 0
    assert os.listdir(tmp_path) == []
