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
