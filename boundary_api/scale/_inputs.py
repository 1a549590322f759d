"""Which results the streaming evaluation reads (light: the command line asks
before choosing a subcommand, without importing the evaluation)."""
from __future__ import annotations

import os

from .._io import first_content_byte, is_stream

__all__ = ["STREAM_SUFFIXES", "streams_results"]

#: names of results files read line by line (JSON Lines), whatever their content
STREAM_SUFFIXES = (".jsonl", ".ndjson", ".jsonl.gz", ".ndjson.gz")


def streams_results(path) -> bool:
    """Whether results at ``path`` are for the streaming evaluation: a folder,
    a ``*.jsonl`` / ``*.ndjson`` file (either possibly ``.gz``), or a pipe
    (``--dt <(zcat r.jsonl.gz)``, ``/dev/stdin``) whose content opens an
    object, i.e. JSON Lines rather than a JSON list.

    A pipe is looked into without being used up: the bytes read stay with it
    for the reader that follows (:func:`boundary_api._io.first_content_byte`).
    """
    try:
        name = os.fsdecode(os.fspath(path))
    except TypeError:
        return False
    if name.endswith(STREAM_SUFFIXES) or os.path.isdir(name):
        return True
    return is_stream(name) and first_content_byte(name) == b"{"
