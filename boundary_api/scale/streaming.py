"""Results larger than memory: image shards, JSON Lines, chunk-by-chunk evaluation.

* :func:`iter_results` reads results one detection at a time from a JSON Lines
  file (one JSON object per line), a JSON list, or a folder of such files.
* :func:`evaluate_streaming` routes the detections once to per-chunk files
  (``chunk_images`` images each) in a temporary folder, then evaluates chunk
  after chunk into :class:`~boundary_api.scale.partials.Partial` objects, so
  the peak memory depends on the chunk and the compact partials, not on the
  results' size.  The numbers equal one ``COCOeval`` / ``LVISEval`` bit for bit.
* :func:`shard_dataset` splits a ground truth (and optionally its results)
  into image shards on disk with a ``manifest.json``; :func:`evaluate_shard`
  evaluates one shard from its files (what a distributed worker runs).

Detections of one image keep their relative order through the routing, so
ties (the libraries' stable sorts, LVIS' per-image cap) are broken as in one
evaluation.
"""
from __future__ import annotations

import contextlib
import gzip
import io
import json
import logging
import os
import shutil
import warnings
import zlib
from typing import Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..instance import _checks
from ..instance._files import load_ground_truth_json, looks_like_lvis
from .._io import open_input, read_json, temporary_folder
from ._inputs import STREAM_SUFFIXES, streams_results  # noqa: F401 (re-exported)
from .partials import Partial, accumulate_partial, evaluate_partial, merge_partials

try:  # a faster parser when installed; the standard one otherwise
    import orjson as _orjson

    _loads = _orjson.loads
except ImportError:  # pragma: no cover - depends on the environment
    _orjson = None
    _loads = json.loads

__all__ = ["iter_results", "evaluate_streaming", "shard_dataset", "evaluate_shard",
           "load_manifest", "looks_like_lvis", "streaming_inputs", "streams_results", "temporary_shards"]

log = logging.getLogger(__name__)

PathLike = Union[str, os.PathLike]
_RESULT_SUFFIXES = (".jsonl", ".ndjson", ".json")
#: bytes of routed lines buffered in memory before they are appended to the chunk files
_FLUSH_BYTES = 32 << 20


# ------------------------------------------------------------------------ reading
def _is_result_file(name: str) -> bool:
    return name.endswith(_RESULT_SUFFIXES) or name.endswith(tuple(x + ".gz" for x in _RESULT_SUFFIXES))


def _result_files(path: PathLike) -> List[str]:
    """The results files ``path`` stands for: itself, or every file a folder
    holds, sub-folders included, in name order.

    Nothing a folder holds is skipped silently: a file that is not a results
    file (``*.jsonl``, ``*.ndjson``, ``*.json``, each possibly ``.gz``) is
    refused, naming it.  Hidden entries (names starting with a dot:
    ``.DS_Store``, ``.ipynb_checkpoints/`` and its copies of results) are
    passed over, with a one-line warning naming those that are folders or
    results files.
    """
    path = os.fspath(path)
    if os.path.isdir(path):
        files: List[str] = []
        seen = set()
        hidden: List[str] = []

        def walk(folder: str) -> None:
            real = os.path.realpath(folder)
            if real in seen:
                raise ValueError(f"{folder}: the folder is reached twice (a link to a folder already read); "
                                 "its results would be counted twice")
            seen.add(real)
            for name in sorted(os.listdir(folder)):
                full = os.path.join(folder, name)
                if name.startswith("."):
                    if os.path.isdir(full) or _is_result_file(name):
                        hidden.append(full)
                    continue
                if os.path.isdir(full):
                    walk(full)
                elif _is_result_file(name):
                    files.append(full)
                else:
                    raise ValueError(f"{full}: not a results file (*.jsonl, *.ndjson or *.json, "
                                     "optionally .gz); move it out of the results folder")

        walk(path)
        if hidden:
            more = f" and {len(hidden) - 1} more" if len(hidden) > 1 else ""
            warnings.warn(f"{path}: hidden entries are not read as results: {hidden[0]}{more}", stacklevel=3)
        if not files:
            raise ValueError(f"{path}: folder has no result files (*.jsonl, *.ndjson, *.json, optionally .gz)")
        return files
    if not os.path.exists(path):
        raise ValueError(f"{path}: results file does not exist")
    return [path]


def _iter_lines(path: str) -> Iterator[Tuple[int, bytes, dict]]:
    """(line number, raw line, parsed object) of a JSON Lines file, or of a JSON list.

    The file is read once from its start (gzip content decompressed), so a
    pipe works as well as a regular file.
    """
    try:
        with open_input(path) as f:
            started = False
            for n, line in enumerate(f, 1):
                s = line.strip()
                if not s:
                    continue
                if not started and s.startswith(b"["):
                    # a JSON list: read whole (one file of a folder is expected to be small)
                    try:
                        doc = _loads(line + f.read())
                    except ValueError as exc:
                        raise ValueError(f"{path}: not valid JSON ({exc})") from None
                    if not isinstance(doc, list):
                        raise ValueError(f"{path}: results must be a list of objects")
                    for m, obj in enumerate(doc, 1):
                        yield m, None, obj
                    return
                started = True
                try:
                    obj = _loads(s)
                except ValueError as exc:
                    raise ValueError(f"{path}: line {n} is not valid JSON ({exc})") from None
                yield n, s, obj
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ValueError(f"{path}: not a valid gzip file ({exc})") from None


def iter_results(path: PathLike) -> Iterator[dict]:
    """Detections one by one from a JSON Lines file, a JSON list file, or a folder of them.

    Parameters
    ----------
    path : str or path-like
        ``*.jsonl`` (one JSON object per line, blank lines skipped), a
        ``*.json`` list (either possibly gzip-compressed, and possibly a
        pipe), or a folder: every ``*.jsonl`` / ``*.ndjson`` / ``*.json``
        file (or ``.gz`` of one) it holds, sub-folders included, in name
        order; any other file in it is refused (ValueError naming it),
        hidden entries (names starting with a dot) are passed over.

    Yields
    ------
    dict
    """
    for f in _result_files(path):
        for n, _, obj in _iter_lines(f):
            if not isinstance(obj, dict):
                raise ValueError(f"{f}: result at line/entry {n} is not an object")
            yield obj


def _dumps(obj) -> bytes:
    if _orjson is not None:
        return _orjson.dumps(obj)
    return json.dumps(obj, separators=(",", ":")).encode()


class _Router:
    """Appends raw result lines to one file per chunk, through a bounded buffer."""

    def __init__(self, folder: str, n: int):
        self.paths = [os.path.join(folder, f"chunk_{c:06d}.jsonl") for c in range(n)]
        self.buf: Dict[int, List[bytes]] = {}
        self.size = 0
        self.counts = np.zeros(n, np.int64)
        for p in self.paths:
            open(p, "wb").close()

    def add(self, c: int, line: bytes) -> None:
        self.buf.setdefault(c, []).append(line)
        self.size += len(line) + 1
        self.counts[c] += 1
        if self.size >= _FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        for c, lines in self.buf.items():
            with open(self.paths[c], "ab") as f:
                f.write(b"\n".join(lines) + b"\n")
        self.buf = {}
        self.size = 0


def _route(results: PathLike, chunk_of: Dict[int, int], folder: str, n: int) -> np.ndarray:
    """Route every detection of ``results`` to its chunk's file; returns counts per chunk."""
    router = _Router(folder, n)
    has_box = None
    for f in _result_files(results):
        for lineno, raw, obj in _iter_lines(f):
            if not isinstance(obj, dict):
                raise ValueError(f"{f}: result at line/entry {lineno} is not an object")
            img = obj.get("image_id")
            c = chunk_of.get(img) if isinstance(img, (int, np.integer)) and not isinstance(img, bool) else None
            if c is None:
                if isinstance(img, float) and img.is_integer():
                    c = chunk_of.get(int(img))
                if c is None:
                    raise ValueError(f"{f}: line/entry {lineno}: image_id {img!r} is not an image of the "
                                     "ground truth")
            box = "bbox" in obj and obj["bbox"] != []
            if has_box is None:
                has_box = box
            elif box != has_box:
                # pycocotools and lvis pick the result format from the first result
                raise ValueError(f"{f}: line/entry {lineno}: mixes results with and without 'bbox'; "
                                 "all results must have the same fields")
            router.add(c, raw if raw is not None else _dumps(obj))
    router.flush()
    if not router.counts.sum():
        raise ValueError(f"{os.fspath(results)}: results are empty: there is nothing to evaluate")
    return router.counts


def _read_chunk(path: str) -> List[dict]:
    with open(path, "rb") as f:
        return [_loads(line) for line in f if line.strip()]


# ---------------------------------------------------------------- ground truth
def _load_gt(gt) -> dict:
    if isinstance(gt, dict):
        return gt
    if isinstance(gt, (str, bytes, os.PathLike)):
        return load_ground_truth_json(os.fspath(gt))
    dataset = getattr(gt, "dataset", None)
    if isinstance(dataset, dict):
        return dataset
    raise TypeError(f"gt must be a path, a dataset dict or a COCO/LVIS object, got {type(gt).__name__}")


class _GtIndex:
    """Image records and annotations of a ground truth grouped by image."""

    def __init__(self, dataset: dict, lvis: bool, source: str, strict: bool = True):
        from ..instance._checks import check_instances_dataset

        check_instances_dataset(dataset, source, lvis=lvis, strict=strict)
        self.dataset = dataset
        self.lvis = lvis
        self.images = {img["id"]: img for img in dataset["images"]}
        self.anns: Dict[int, list] = {}
        for a in dataset.get("annotations", []):
            self.anns.setdefault(a["image_id"], []).append(a)
        self.rest = {k: v for k, v in dataset.items() if k not in ("images", "annotations")}

    def img_ids(self) -> List[int]:
        return sorted(self.images)

    def subset(self, ids: Sequence[int]) -> dict:
        out = dict(self.rest)
        out["images"] = [self.images[i] for i in ids]
        out["annotations"] = [a for i in ids for a in self.anns.get(i, ())]
        return out


def _gt_object(dataset: dict, lvis: bool, source: str, strict: bool = True):
    # (one chunk or shard of images: the whole ground truth was checked, and warned about, once already)
    with _checks.no_empty_warning():
        return _gt_object_of(dataset, lvis, source, strict)


def _gt_object_of(dataset: dict, lvis: bool, source: str, strict: bool = True):
    with contextlib.redirect_stdout(io.StringIO()):
        if lvis:
            from ..lvis import LVIS

            return LVIS.from_dataset(dataset, source, strict=strict)
        from ..coco.dataset import COCO

        return COCO.from_dataset(dataset, source, strict=strict)


def _partial_of(gt_data: dict, dets: List[dict], img_ids: Sequence[int], lvis: bool, iou_type: str,
                source: str, strict: bool = True, **kwargs) -> Partial:
    # (the results are loaded by the ground truth object: with its strictness)
    gt = _gt_object(gt_data, lvis, source, strict)
    return evaluate_partial(gt, dets, iou_type, img_ids, **kwargs)


# ---------------------------------------------------------------------- streaming
def evaluate_streaming(gt, results: PathLike, iou_type: str = "segm", chunk_images: int = 1000, *,
                       lvis: Optional[bool] = None, dilation_ratio: float = 0.02, max_dets: int = 300,
                       params: Optional[dict] = None, num_threads: Optional[int] = None,
                       tmp_dir: Optional[PathLike] = None, verbose: bool = False, strict: bool = True):
    """Evaluate results from disk chunk by chunk of images.

    Parameters
    ----------
    gt : str, path-like, dict or COCO/LVIS object
        Ground truth (COCO or LVIS instances).
    results : str or path-like
        JSON Lines file, JSON list file, or folder of them (see :func:`iter_results`).
    iou_type : {'segm', 'bbox', 'boundary'}
    chunk_images : int, optional
        Images per chunk (default 1000): the memory of one chunk's
        detections, masks and IoUs is what the evaluation needs at once.
    lvis : bool, optional
        LVIS rules; default: chosen from the ground truth.
    dilation_ratio, max_dets, params, num_threads
        As in :func:`~boundary_api.scale.partials.evaluate_partial`.
    tmp_dir : str, optional
        Where the per-chunk files go (default: the system's temporary folder);
        removed at the end.
    verbose : bool, optional
        Print the summary as the libraries do.
    strict : bool, optional
        Refuse suspect input (default), as the in-memory command line does:
        results of categories not in the ground truth, repeated annotation
        ids, ... (see ``boundary_api.COCO``); False warns about it.

    Returns
    -------
    COCOeval or LVISEval
        With ``eval`` and ``stats`` (COCO) / ``results`` (LVIS), as from
        :func:`~boundary_api.scale.partials.accumulate_partial`.
    """
    if isinstance(chunk_images, bool) or not isinstance(chunk_images, (int, np.integer)) or chunk_images < 1:
        raise ValueError(f"chunk_images must be a positive integer, got {chunk_images!r}")
    source = os.fspath(gt) if isinstance(gt, (str, os.PathLike)) else "ground truth"
    dataset = _load_gt(gt)
    if lvis is None:
        lvis = looks_like_lvis(dataset)
    index = _GtIndex(dataset, lvis, source, strict)
    ids = index.img_ids()
    chunks = [ids[i:i + chunk_images] for i in range(0, len(ids), chunk_images)]
    chunk_of = {img: c for c, chunk in enumerate(chunks) for img in chunk}
    partials = []
    with temporary_folder("boundary_api_chunks_", tmp_dir) as folder:
        counts = _route(results, chunk_of, folder, len(chunks))
        log.info("routed %d detections to %d chunks", int(counts.sum()), len(chunks))
        for c, chunk in enumerate(chunks):
            path = os.path.join(folder, f"chunk_{c:06d}.jsonl")
            dets = _read_chunk(path)
            os.remove(path)
            partials.append(_partial_of(index.subset(chunk), dets, chunk, lvis, iou_type,
                                        f"{source} (chunk {c})", strict, dilation_ratio=dilation_ratio,
                                        max_dets=max_dets, params=params, num_threads=num_threads))
            del dets
            log.info("chunk %d/%d: %d images, %d detections", c + 1, len(chunks), len(chunk), counts[c])
    return accumulate_partial(merge_partials(partials), img_ids=ids, verbose=verbose,
                              num_threads=num_threads)


# ------------------------------------------------------------------------- shards
def shard_dataset(gt, out_dir: PathLike, images_per_shard: int = 1000,
                  results: Optional[PathLike] = None, *, source: Optional[str] = None) -> str:
    """Split a ground truth (and its results) into image shards on disk.

    Writes ``shard_NNNNN.gt.json`` (the shard's images and their annotations,
    every category and other top-level field kept) and, with ``results``,
    ``shard_NNNNN.dt.jsonl`` (the shard's detections, one per line, in their
    original order), plus ``manifest.json``::

        {"version": 2, "kind": "coco" | "lvis", "num_images": N, "num_shards": S,
         "shards": [{"index": 0, "gt": "shard_00000.gt.json", "dt": "shard_00000.dt.jsonl",
                     "img_ids": [...]}, ...]}

    Paths in the manifest are relative to the manifest's folder.  ``num_shards``
    and ``num_images`` let :func:`load_manifest` refuse a manifest that lost an
    entry.

    Parameters
    ----------
    gt : str, path-like, dict or COCO/LVIS object
    out_dir : str or path-like
        Created if needed; must not already hold a manifest.
    images_per_shard : int, optional
    results : str or path-like, optional
        Results to split along (JSON Lines, JSON list or folder; a pipe too).
    source : str, optional
        The ground truth's name in messages when ``gt`` is a dict already
        read (e.g. by :func:`streaming_inputs` from a pipe).

    Returns
    -------
    str
        Path of ``manifest.json``.
    """
    if isinstance(images_per_shard, bool) or not isinstance(images_per_shard, (int, np.integer)) \
            or images_per_shard < 1:
        raise ValueError(f"images_per_shard must be a positive integer, got {images_per_shard!r}")
    out_dir = os.fspath(out_dir)
    manifest = os.path.join(out_dir, "manifest.json")
    if os.path.exists(manifest):
        raise ValueError(f"{manifest} already exists; choose an empty folder")
    os.makedirs(out_dir, exist_ok=True)
    if source is None:
        source = os.fspath(gt) if isinstance(gt, (str, os.PathLike)) else "ground truth"
    dataset = _load_gt(gt)
    lvis = looks_like_lvis(dataset)
    index = _GtIndex(dataset, lvis, source)
    ids = index.img_ids()
    shards = [ids[i:i + images_per_shard] for i in range(0, len(ids), images_per_shard)]
    entries = []
    for s, chunk in enumerate(shards):
        name = f"shard_{s:05d}.gt.json"
        tmp = os.path.join(out_dir, name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(_dumps(index.subset(chunk)))
        os.replace(tmp, os.path.join(out_dir, name))
        entries.append({"index": s, "gt": name, "img_ids": list(chunk)})
    if results is not None:
        chunk_of = {img: c for c, chunk in enumerate(shards) for img in chunk}
        with temporary_folder(".routing_", out_dir) as folder:
            _route(results, chunk_of, folder, len(shards))
            for s in range(len(shards)):
                name = f"shard_{s:05d}.dt.jsonl"
                shutil.move(os.path.join(folder, f"chunk_{s:06d}.jsonl"), os.path.join(out_dir, name))
                entries[s]["dt"] = name
    doc = {"version": MANIFEST_VERSION, "kind": "lvis" if lvis else "coco", "num_images": len(ids),
           "num_shards": len(entries), "shards": entries}
    with open(manifest + ".tmp", "w") as f:
        json.dump(doc, f)
    os.replace(manifest + ".tmp", manifest)
    return manifest


@contextlib.contextmanager
def temporary_shards(gt, images_per_shard: int = 1000, results: Optional[PathLike] = None, *,
                     source: Optional[str] = None) -> Iterator[str]:
    """:func:`shard_dataset` into a temporary folder, removed when the block
    ends (also on an error or an interruption); yields the manifest's path."""
    with temporary_folder("boundary_api_shards_") as folder:
        yield shard_dataset(gt, folder, images_per_shard, results, source=source)


#: version of the manifest layout written by :func:`shard_dataset`
MANIFEST_VERSION = 2


def streaming_inputs(gt=None, *, manifest: Optional[PathLike] = None, allow_partial: bool = False) -> dict:
    """What a streaming or cluster evaluation starts from, read and checked:
    the ground truth (of ``gt``, or of the first shard of ``manifest``), the
    rules it asks for and the manifest's shards.

    Parameters
    ----------
    gt : str, path-like or dict, optional
        The ground truth (COCO or LVIS instances JSON), when no manifest is given.
    manifest : str or path-like, optional
        A :func:`shard_dataset` manifest (:func:`load_manifest`), instead of ``gt``.
    allow_partial : bool, optional
        As for :func:`load_manifest`.

    Returns
    -------
    dict
        ``{"dataset": the ground truth dict ({} for a manifest without
        shards), "lvis": whether it is LVIS (:func:`looks_like_lvis`),
        "shards": the manifest's shards, or None}``.

    Raises
    ------
    ValueError
        An unreadable or invalid file, an incomplete manifest.
    """
    if (gt is None) == (manifest is None):
        raise ValueError("give either gt or manifest")
    shards = None
    if manifest is not None:
        shards = load_manifest(manifest, allow_partial=allow_partial)
        dataset = load_ground_truth_json(shards[0]["gt"], "ground truth shard") if shards else {}
    else:
        dataset = _load_gt(gt)
    return {"dataset": dataset, "lvis": looks_like_lvis(dataset), "shards": shards}


def load_manifest(path: PathLike, *, allow_partial: bool = False) -> List[dict]:
    """The shards of a :func:`shard_dataset` manifest, with absolute paths.

    A manifest says how many shards and images make it whole (``num_shards``
    and ``num_images``; a shard entry carries its ``index``), so an entry
    deleted or lost is noticed: an incomplete manifest is refused unless
    ``allow_partial`` is True (then a one-line warning says how much of it is
    evaluated).  A manifest written before ``num_shards`` existed is checked
    by its ``num_images``; one that has neither is refused unless
    ``allow_partial``.

    Parameters
    ----------
    path : str or path-like
    allow_partial : bool, optional
        Accept a manifest whose shard entries do not cover all of it.

    Raises
    ------
    ValueError
        Not a manifest, an entry without ``gt`` / ``img_ids``, a shard index
        or image given twice, or an incomplete manifest without
        ``allow_partial``.
    """
    path = os.fspath(path)
    doc = read_json(path, "shard manifest")
    if not isinstance(doc, dict) or not isinstance(doc.get("shards"), list):
        raise ValueError(f"{path}: not a shard manifest (no 'shards' list)")
    base = os.path.dirname(os.path.abspath(path))
    stream = os.path.exists(path) and not os.path.isfile(path)  # a pipe: no folder to resolve paths in
    out = []
    for n, s in enumerate(doc["shards"]):
        if not isinstance(s, dict) or "gt" not in s or not isinstance(s.get("img_ids"), list):
            raise ValueError(f"{path}: shard {n} needs 'gt' and 'img_ids'")
        s = dict(s)
        for key in ("gt", "dt"):
            if key in s:
                if stream and not os.path.isabs(s[key]):
                    raise ValueError(f"{path}: shard paths are relative to the manifest's folder, which a "
                                     "pipe does not have; give the manifest file itself")
                s[key] = os.path.join(base, s[key])
        out.append(s)
    _check_complete(path, doc, out, allow_partial)
    return out


def _count(doc: dict, key: str, path: str) -> Optional[int]:
    value = doc.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{path}: '{key}' must be a non-negative integer, got {value!r}")
    return value


def _check_complete(path: str, doc: dict, shards: List[dict], allow_partial: bool) -> None:
    """Refuse (or, with ``allow_partial``, warn about) a manifest whose shard
    entries do not make up the whole it declares."""
    num_shards = _count(doc, "num_shards", path)
    num_images = _count(doc, "num_images", path)
    indices = [s.get("index") for s in shards]
    if num_shards is not None:
        bad = [i for i in indices if isinstance(i, bool) or not isinstance(i, int) or not 0 <= i < num_shards]
        if bad:
            raise ValueError(f"{path}: shard index {bad[0]!r} is not one of 0..{num_shards - 1}")
        if len(set(indices)) != len(indices):
            twice = sorted({i for i in indices if indices.count(i) > 1})
            raise ValueError(f"{path}: shard {twice[0]} is listed more than once")
    ids = [i for s in shards for i in s["img_ids"]]
    if len(set(ids)) != len(ids):
        raise ValueError(f"{path}: an image is in more than one shard; it would be counted twice")
    problems = []
    if num_shards is not None and len(shards) < num_shards:
        missing = sorted(set(range(num_shards)) - set(indices))
        listed = ", ".join(map(str, missing[:5])) + (", ..." if len(missing) > 5 else "")
        problems.append(f"{len(shards)} of its {num_shards} shards are listed (missing: {listed})")
    if num_images is not None and len(ids) != num_images:
        problems.append(f"its shards hold {len(ids)} of its {num_images} images")
    if num_shards is None and num_images is None:
        problems.append("it does not say how many shards or images make it whole (written by another tool?)")
    if not problems:
        return
    message = f"{path}: incomplete shard manifest: " + "; ".join(problems)
    if not allow_partial:
        raise ValueError(message + "; pass allow_partial=True (--allow-partial) to evaluate only those")
    warnings.warn(message + "; evaluating only those (allow_partial)", stacklevel=3)


def evaluate_shard(shard: dict, iou_type: str = "segm", *, dilation_ratio: float = 0.02,
                   max_dets: int = 300, params: Optional[dict] = None,
                   num_threads: Optional[int] = None) -> Partial:
    """The :class:`Partial` of one shard read from its files.

    Parameters
    ----------
    shard : dict
        ``{"gt": path, "dt": path, "img_ids": [...]}`` (an entry of
        :func:`load_manifest`); ``dt`` may be a JSON Lines or JSON list file.
    iou_type, dilation_ratio, max_dets, params, num_threads
        As in :func:`~boundary_api.scale.partials.evaluate_partial`.
    """
    if not isinstance(shard, dict) or "gt" not in shard or "dt" not in shard:
        raise ValueError("shard must be a dict with 'gt' and 'dt' paths")
    dataset = load_ground_truth_json(shard["gt"], "ground truth shard")
    lvis = looks_like_lvis(dataset)
    ids = shard.get("img_ids")
    if ids is None:
        ids = sorted(img["id"] for img in dataset.get("images", []))
    dets = list(iter_results(shard["dt"]))
    return _partial_of(dataset, dets, ids, lvis, iou_type, shard["gt"], dilation_ratio=dilation_ratio,
                       max_dets=max_dets, params=params, num_threads=num_threads)


def evaluate_manifest(manifest: PathLike, iou_type: str = "segm", *, verbose: bool = False,
                      num_threads: Optional[int] = None, allow_partial: bool = False, **kwargs):
    """Evaluate every shard of a manifest in this process, merge and accumulate.

    An incomplete manifest (a shard entry missing) is refused unless
    ``allow_partial`` (see :func:`load_manifest`); the other keyword
    arguments are those of :func:`evaluate_shard`.
    """
    shards = load_manifest(manifest, allow_partial=allow_partial)
    parts = [evaluate_shard(s, iou_type, num_threads=num_threads, **kwargs) for s in shards]
    return accumulate_partial(merge_partials(parts), img_ids=[i for s in shards for i in s["img_ids"]],
                              verbose=verbose, num_threads=num_threads)


__all__.append("evaluate_manifest")
