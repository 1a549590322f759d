"""YouTube-VIS files as column arrays: the fast path of ``YTVOS`` and ``loadRes``.

A ground truth or results file in the common schema (see
:mod:`._scan`) is scanned natively into per-track and per-frame arrays: ids,
crowd flags, scores, each frame's RLE as a string in the file (or, unescaped,
in a side buffer) or as uncompressed counts in a uint16 array.  The checks
the YouTube-VIS API makes on loading are made on the arrays; a file that
fails one (or that the scanner does not take) is left to the general path,
which parses it with the JSON reader and words every warning and error as
before.

The dicts the original keeps (``dataset``, ``anns``, ``vidToAnns``,
``catToVids``) are made only when somebody reads them, by parsing the same
bytes with the same JSON reader, and then carry everything ``loadRes`` and
the evaluations run so far would have written into them: each evaluation
logs, in order, what it would have changed (:meth:`Tracks.log`), and the
dicts replay that log when they are made.
"""
from __future__ import annotations

import gzip
import json
from collections import defaultdict
from typing import Callable, List, Optional

import numpy as np

from .. import _io
from ..masks import _rle

__all__ = ["Tracks", "read_input", "load_ground_truth", "load_results"]

#: frame kinds of the scanner
ABSENT, STRING, COUNTS, POLYGONS = 0, 1, 2, 3
#: sums of integer areas below this are exact in float64 whatever their order
_EXACT = float(2 ** 52)


def video_length(v: dict) -> Optional[int]:
    """A video's frame count as the YouTube-VIS checks take it (``length``, else
    the number of ``file_names``, else None)."""
    n = v.get('length')
    if isinstance(n, int) and not isinstance(n, bool):
        return n
    names = v.get('file_names')
    return len(names) if isinstance(names, list) else None


class Input:
    """A user's file read once: ``data`` its bytes (gzip content
    decompressed), :meth:`again` the same bytes as the general path's input
    (:class:`.._io.InputBytes`: a pipe is not read twice)."""

    def __init__(self, name: str, raw: bytes):
        self.name = name
        self.raw = raw
        self.data = raw

    def again(self) -> "_io.InputBytes":
        return _io.InputBytes(self.name, self.raw)


def read_input(path, what: str) -> Optional[Input]:
    """:class:`Input` of a user's file, or None when it cannot be read here
    (the general path then reads it and words why).  (Read into ``bytes``:
    a NumPy buffer on huge pages was no faster once the scan's own pages
    are counted.)"""
    src = _io.read_once(path, what)
    if isinstance(src, _io.InputBytes):
        got = Input(src.name, src.data)
    else:
        try:
            name = _io._fs_name(src)
            with open(name, "rb") as f:
                raw = f.read()
        except (OSError, TypeError, ValueError, MemoryError):
            return None
        got = Input(name, raw)
    if got.raw[:2] == _io._GZIP_MAGIC:
        try:
            got.data = gzip.decompress(got.raw)
        except Exception:  # noqa: BLE001 - the general path words it
            return _Undecodable(got)
    return got


class _Undecodable(Input):
    """A file this path cannot read (bad gzip): only the general path's input."""

    def __init__(self, got: Input):
        super().__init__(got.name, got.raw)
        self.data = None


def _decoder(size: int) -> Callable:
    """The JSON reader the general path uses on a document of ``size`` bytes
    (:func:`.._io._loads`), for parts of it: the same objects."""
    fast = _io._fast_decoder() if size >= _io.SMALL_JSON else None

    def decode(view):
        if fast is not None:
            try:
                return fast(view)
            except Exception:  # noqa: BLE001 - json decides, as _loads does
                pass
        return json.loads(bytes(view))

    return decode


def _plain_int(v) -> bool:
    return type(v) is int and -(1 << 62) < v < (1 << 62)


def _ranges(start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """The concatenated ``arange(start[i], start[i] + length[i])``."""
    total = int(length.sum())
    if total == 0:
        return np.zeros(0, np.int64)
    first = np.concatenate(([0], np.cumsum(length)[:-1]))
    return np.repeat(start - first, length) + np.arange(total, dtype=np.int64)


def distinct(a: np.ndarray) -> np.ndarray:
    """``np.unique(a)`` of a 1-d array, without its import of ``numpy.ma``
    (30 ms: a tenth of a ground truth's reading)."""
    a = np.sort(a)
    return a[np.concatenate(([True], a[1:] != a[:-1]))] if len(a) else a


def _distinct_inverse(a: np.ndarray):
    """``np.unique(a, return_inverse=True)`` likewise."""
    order = np.argsort(a, kind="stable")
    s = a[order]
    first = np.concatenate(([True], s[1:] != s[:-1])) if len(s) else np.zeros(0, bool)
    inv = np.empty(len(a), np.int64)
    inv[order] = np.cumsum(first) - 1
    return s[first], inv


def _sums(values: np.ndarray, start: np.ndarray, length: np.ndarray) -> np.ndarray:
    """Per range, the sum of ``values[start:start + length]`` (exact for ints)."""
    cum = np.concatenate(([0], np.cumsum(values)))
    return cum[start + length] - cum[start]


class _IgnoreMarks:
    """What the engine's ``leave_ignore_flags`` appends its marks to: each
    becomes a step of the ground truth's log (the ``_ignore`` flags the
    original's ``evaluateVid`` leaves in the dicts)."""

    def __init__(self, tracks: "Tracks"):
        self._tracks = tracks

    def append(self, mark) -> None:
        rows, flags = mark
        rows, flags = np.asarray(rows).tolist(), np.asarray(flags, np.int64).tolist()

        def replay(anns: list) -> None:
            for r, flag in zip(rows, flags):
                anns[r]["_ignore"] = flag

        self._tracks.log(replay)


class GroundTruthView:
    """A ground truth's tracks as the instance engine reads columns
    (``Evaluation.from_columns``): video ids in place of image ids, the
    mean frame area in place of the area."""

    def __init__(self, tracks: "Tracks"):
        self.image_id = tracks.video_id
        self.category_id = tracks.category_id
        self.ann_id = tracks.ann_id
        self.area = tracks.avg_area
        self.iscrowd = tracks.iscrowd
        self.ignore_marks = _IgnoreMarks(tracks)


class ResultsView:
    """Results' tracks as the instance engine reads result columns."""

    def __init__(self, tracks: "Tracks"):
        self.image_id = tracks.video_id
        self.category_id = tracks.category_id
        self.score = tracks.score
        self.area = tracks.avg_area
        self._score_int = tracks.score_int

    def score_values(self, rows: np.ndarray) -> list:
        """Scores of ``rows`` as the JSON reader gives them (int or float)."""
        rows = np.asarray(rows, np.int64)
        vals = self.score[rows].tolist()
        for j in np.flatnonzero(self._score_int[rows]).tolist():
            vals[j] = int(vals[j])
        return vals


class Tracks:
    """The tracks of one YouTube-VIS file (ground truth or results), one
    array entry per track in file order, their frames flattened.

    Attributes
    ----------
    kind : {'gt', 'results'}
    n : int
    video_id, category_id : ndarray of int64
    ann_id : ndarray of int64
        The annotation ids (results: ``1 .. n``, as ``loadRes`` numbers them).
    iscrowd : ndarray of int64
        (results: zeros)
    height, width : ndarray of int64
        A track's own ``height`` / ``width`` where they are ints >= 0, else
        -1 (the size of its absent frames' empty bands).
    score : ndarray of float64, score_int : ndarray of uint8
        (results) the score, and whether it was an integer in the file.
    frame0, nframes : ndarray of int64
        Each track's frame entries.
    frame_kind, frame_h, frame_w, frame_which, frame_start, frame_len, frame_area
        Per frame entry: absent / string / uncompressed counts / polygons
        (``ABSENT``, ``STRING``, ``COUNTS``, ``POLYGONS``), the RLE size,
        where its bytes lie (``buffers[frame_which][frame_start:][:frame_len]``;
        polygons: ``poly_end``'s entries), its pixels (results; ground-truth
        counts).
    avg_area : ndarray of float64
        The track's ``avg_area`` (mean non-zero frame area, 0 without one).
    buffers : list
        The scanned file and the scanner's side buffers.
    header : dict
        A ground truth's top-level members but ``annotations``, decoded
        (``videos``, ``categories``, ...), in file order; for results the
        ``videos`` and ``categories`` ``loadRes`` gives them.
    """

    def __init__(self, kind: str, data: bytes, chunks: list, header: dict, source: str):
        self.kind = kind
        self.data = data
        self.source = source
        self.header = header
        names = (_scan_module().GT_TRACK if kind == "gt" else _scan_module().RESULT_TRACK)
        frame_names = _scan_module().FRAME
        buffers = [data]
        parts: dict = {k: [] for k in names + frame_names + ("area_value", "area_kind", "poly_coords", "poly_end")}
        nf = nr = npoly = ncoord = 0
        for ch in chunks:
            side, counts = len(buffers), len(buffers) + 1
            buffers.append(ch["side"])
            buffers.append(ch["counts"].view(np.uint8))
            which = ch["frame_which"]
            ch = dict(ch, frame_which=np.array([0, side, counts, -1], np.int64)[which])
            ch["frame0"] = ch["frame0"] + nf
            ch["frame_start"] = np.where(which == 3, ch["frame_start"] + npoly, ch["frame_start"])
            ch["poly_end"] = ch["poly_end"] + ncoord
            if kind == "gt":
                ch["area0"] = ch["area0"] + nr
            for k in parts:
                parts[k].append(ch[k])
            nf += len(which)
            nr += len(ch["area_kind"])
            npoly += len(ch["poly_end"])
            ncoord += len(ch["poly_coords"])
        cols = {k: (np.concatenate(v) if len(v) > 1 else v[0]) if v else np.zeros(0) for k, v in parts.items()}
        self.buffers = buffers
        self.n = n = len(cols["video_id"])
        self.video_id = np.asarray(cols["video_id"], np.int64)
        self.category_id = np.asarray(cols["category_id"], np.int64)
        self.frame0 = np.asarray(cols["frame0"], np.int64)
        self.nframes = np.asarray(cols["nframes"], np.int64)
        self.frame_kind = np.asarray(cols["frame_kind"], np.uint8)
        self.frame_h = np.asarray(cols["frame_h"], np.int64)
        self.frame_w = np.asarray(cols["frame_w"], np.int64)
        self.frame_which = np.asarray(cols["frame_which"], np.int64)
        self.frame_start = np.asarray(cols["frame_start"], np.int64)
        self.frame_len = np.asarray(cols["frame_len"], np.int64)
        self.frame_area = np.asarray(cols["frame_area"], np.int64)
        self.height = np.asarray(cols["height"], np.int64)
        self.width = np.asarray(cols["width"], np.int64)
        self.poly_coords = np.asarray(cols["poly_coords"], np.float64)
        self.poly_end = np.asarray(cols["poly_end"], np.int64)
        if kind == "gt":
            self.ann_id = np.asarray(cols["ann_id"], np.int64)
            self.iscrowd = np.asarray(cols["iscrowd"], np.int64)
            self.area0 = np.asarray(cols["area0"], np.int64)
            self.nareas = np.asarray(cols["nareas"], np.int64)
            self.area_value = np.asarray(cols["area_value"], np.float64)
            self.area_kind = np.asarray(cols["area_kind"], np.uint8)
            self.score = self.score_int = None
        else:
            self.ann_id = np.arange(1, n + 1, dtype=np.int64)
            self.iscrowd = np.zeros(n, np.int64)
            self.score = np.asarray(cols["score"], np.float64)
            self.score_int = np.asarray(cols["score_int"], np.uint8)
        #: polygon frames rasterised so far (as ``_toMask`` converts them, once):
        #: where their strings lie (``raster_which`` -1: not yet) and their size
        self.raster_which = self.raster_start = self.raster_len = self.raster_h = self.raster_w = None
        self.header_spans: dict = {}
        self.avg_area = np.zeros(n, np.float64)
        #: what the evaluations run on the columns would have changed in the
        #: dicts, in order: ``step(annotation_list)``
        self._log: List[Callable] = []
        #: the annotation list once the dicts are made
        self.materialized: Optional[list] = None
        self._rows_by_video = None

    # ------------------------------------------------------------ the log
    def log(self, step: Callable) -> None:
        """Note ``step(annotations)``: a change an evaluation would have made
        to the dicts (replayed on them when they are made, in order)."""
        if self.materialized is not None:
            step(self.materialized)
        else:
            self._log.append(step)

    # ------------------------------------------------------------ selection
    def select(self, vid_ids, cat_ids) -> Optional[np.ndarray]:
        """The rows ``loadAnns(getAnnIds(vidIds=vid_ids, catIds=cat_ids))``
        gives, in its order (``cat_ids`` None: no category filter); None when
        an id is not a plain integer (the dict path then selects)."""
        cat_ids = [] if cat_ids is None else cat_ids
        if not all(type(v) is int or isinstance(v, np.integer) for v in list(vid_ids) + list(cat_ids)):
            return None
        if len(vid_ids) == 0:
            rows = np.arange(self.n, dtype=np.int64)
        else:
            by_video = self.rows_by_video()
            parts = [by_video[v] for v in vid_ids if v in by_video]
            rows = np.concatenate(parts) if parts else np.zeros(0, np.int64)
        if len(cat_ids):
            uniq = distinct(self.category_id)
            allowed = np.array([c for c in uniq.tolist() if c in cat_ids], np.int64)
            rows = rows[np.isin(self.category_id[rows], allowed)]
        return rows

    def rows_by_video(self) -> dict:
        """``{video_id: rows}`` (file order), as ``vidToAnns`` groups them."""
        if self._rows_by_video is None:
            order = np.argsort(self.video_id, kind="stable")
            vids = self.video_id[order]
            cuts = np.flatnonzero(np.concatenate(([True], vids[1:] != vids[:-1]))) if len(vids) else []
            bounds = list(cuts) + [len(vids)]
            self._rows_by_video = {int(vids[a]): order[a:b] for a, b in zip(bounds[:-1], bounds[1:])}
        return self._rows_by_video

    # ------------------------------------------------------------ frames
    def frame_rows(self, rows: np.ndarray):
        """The frame entries of tracks ``rows`` in order, and each track's
        first entry and count in that list."""
        f0, nf = self.frame0[rows], self.nframes[rows]
        idx = _ranges(f0, nf)
        first = np.concatenate(([0], np.cumsum(nf)[:-1])).astype(np.int64) if len(nf) else np.zeros(0, np.int64)
        return idx, first, nf

    def frames_of(self, frames: np.ndarray, which_offset: int = 0):
        """``(kind, h, w, which, start, length)`` of frame entries as the tube
        kernel reads them: ``which`` indexes ``buffers`` (shifted by
        ``which_offset``), polygons rasterised (:meth:`rasterize`) are
        strings of their video's size."""
        kind = self.frame_kind[frames]
        h, w = self.frame_h[frames], self.frame_w[frames]
        which = self.frame_which[frames] + which_offset
        start, length = self.frame_start[frames], self.frame_len[frames]
        poly = np.flatnonzero(kind == POLYGONS)
        if len(poly):
            f = frames[poly]
            if (self.raster_which is None) or (self.raster_which[f] < 0).any():
                raise AssertionError("polygon frames not rasterised")  # pragma: no cover
            kind, h, w, which, start, length = (a.copy() for a in (kind, h, w, which, start, length))
            kind[poly] = STRING
            h[poly], w[poly] = self.raster_h[f], self.raster_w[f]
            which[poly] = self.raster_which[f] + which_offset
            start[poly], length[poly] = self.raster_start[f], self.raster_len[f]
        return kind, h, w, which, start, length

    def rasterize(self, frames: np.ndarray, heights: np.ndarray, widths: np.ndarray,
                  num_threads: int) -> bool:
        """Rasterise the polygon frames ``frames`` (those not done yet) at the
        given sizes, as ``_toMask`` does with ``polygons_to_rle``; False (and
        nothing done) when one is not what it takes (it then raises)."""
        from ..masks.polygons import POLYGON_COORD_LIMIT, rle_chunks_of_flat_polygons

        n_all = len(self.frame_kind)
        if self.raster_which is None:
            self.raster_which = np.full(n_all, -1, np.int64)
            self.raster_start, self.raster_len, self.raster_h, self.raster_w = (
                np.zeros(n_all, np.int64) for _ in range(4))
        todo = self.raster_which[frames] < 0
        frames, heights, widths = frames[todo], np.asarray(heights)[todo], np.asarray(widths)[todo]
        if not len(frames):
            return True
        if (heights < 1).any() or (widths < 1).any():
            return False
        npoly = self.frame_len[frames]
        pidx = _ranges(self.frame_start[frames], npoly)
        pend = self.poly_end[pidx]
        pbeg = np.where(pidx > 0, self.poly_end[np.maximum(pidx - 1, 0)], 0)
        plen = pend - pbeg
        if ((plen < 6) | (plen % 2 == 1)).any():
            return False
        coords = np.ascontiguousarray(self.poly_coords[_ranges(pbeg, plen)])
        if not (np.abs(5.0 * coords + 0.5) < POLYGON_COORD_LIMIT).all():
            return False
        poly_off = np.concatenate(([0], np.cumsum(plen))).astype(np.int64)
        ann_off = np.concatenate(([0], np.cumsum(npoly))).astype(np.int64)
        for (lo, hi), (buf, offs) in rle_chunks_of_flat_polygons(coords, poly_off, ann_off, heights, widths,
                                                                  num_threads):
            offs = np.asarray(offs, np.int64)
            f = frames[lo:hi]
            self.raster_which[f] = len(self.buffers)
            self.raster_start[f] = offs[:-1]
            self.raster_len[f] = np.diff(offs)
            self.buffers.append(buf)
        self.raster_h[frames] = heights
        self.raster_w[frames] = widths
        return True

    # ------------------------------------------------------------ the dicts
    def annotation_dicts(self) -> list:
        """The annotation dicts, parsed from the same bytes by the same JSON
        reader as the general path, with what ``loadRes`` and the logged
        evaluations would have written into them."""
        decode = _decoder(len(self.data))
        if self.kind == "gt":
            s, e = self.header_spans["annotations"]
            anns = decode(memoryview(self.data)[s:e])
        else:
            anns = decode(memoryview(self.data))
            self._derive_results(anns)
        self.materialized = anns
        log, self._log = self._log, []
        for step in log:
            step(anns)
        return anns

    def _derive_results(self, anns: list) -> None:
        """What ``loadRes`` sets in each result (``areas``, ``bboxes``, ``id``,
        ``avg_area``, ``iscrowd``), from the frames' areas and boxes."""
        from .ytvos import _set_result_fields

        present = np.flatnonzero(self.frame_kind != ABSENT)
        _, _, _, which, start, length = self.frames_of(present)
        table = _rle.StringTable.from_buffers(self.buffers, which, start, length)
        _, box = _rle.area_bbox(table, np.ascontiguousarray(self.frame_h[present]))
        _set_result_fields(anns, self.frame_area[present].astype(np.uint32), box)

    def grouped(self, owner, rows: np.ndarray) -> defaultdict:
        """``_gts`` / ``_dts`` of an evaluation that selected ``rows``: the
        owner's dicts (made now if not yet) grouped by video and category."""
        owner.dataset  # noqa: B018 - makes the dicts
        anns = self.materialized
        out: defaultdict = defaultdict(list)
        for r in np.asarray(rows).tolist():
            a = anns[r]
            out[a['video_id'], a['category_id']].append(a)
        return out


def _scan_module():
    from . import _scan

    return _scan


# ----------------------------------------------------------------- loading
def load_ground_truth(data: bytes, num_threads: int) -> Optional[Tracks]:
    """A ground truth's :class:`Tracks`, or None when the file is outside
    the scanner's schema or the YouTube-VIS API would warn about it or
    refuse it (the general path then does)."""
    scanned = _scan_module().scan_ground_truth(data, num_threads)
    if scanned is None:
        return None
    view = memoryview(data)
    header: dict = {}
    spans: dict = {}
    try:
        for key, s, e in scanned["members"]:
            name = key.decode("utf-8")
            spans[name] = (s, e)
            if name != "annotations":
                # (json, not msgspec, whose import costs more than these small parts: on
                # strict JSON, which the scanner checked, the two give the same objects)
                header[name] = json.loads(bytes(view[s:e]))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    videos, categories = header.get("videos"), header.get("categories")
    if not isinstance(videos, list) or not isinstance(categories, list) or "annotations" not in spans:
        return None  # (the general path loads such files as the original does, and says what they lack)
    if not all(isinstance(v, dict) and "id" in v for v in videos):
        return None
    if not all(isinstance(c, dict) and "id" in c for c in categories):
        return None
    t = Tracks("gt", data, scanned["chunks"], header, "ground truth")
    t.header_spans = spans
    if t.n and len(distinct(t.ann_id)) != t.n:
        return None  # repeated ids: anns keeps the last, the dict path says so
    sizes = {}
    for v in videos:
        sizes[v['id']] = (v.get('height'), v.get('width'), video_length(v))
    if not _frames_fit(t, sizes):
        return None
    t.avg_area = _gt_avg_area(t)
    return t


def _frames_fit(t: Tracks, sizes: dict) -> bool:
    """Whether every track is of a known video, has its video's frame count
    (where that is known) and RLEs of its size: the YouTube-VIS checks that
    would otherwise warn."""
    if not t.n:
        return True
    uniq, inv = _distinct_inverse(t.video_id)
    h = np.zeros(len(uniq), np.int64)
    w = np.zeros(len(uniq), np.int64)
    n = np.full(len(uniq), -1, np.int64)
    for i, vid in enumerate(uniq.tolist()):
        s = sizes.get(vid)
        if s is None:
            return False
        vh, vw, vn = s
        if not (_plain_int(vh) and _plain_int(vw)) or (vn is not None and not _plain_int(vn)):
            return False
        h[i], w[i] = vh, vw
        if vn is not None:
            n[i] = vn
    inv = inv.reshape(-1)
    want = n[inv]
    if ((want >= 0) & (want != t.nframes)).any():
        return False
    track = np.repeat(np.arange(t.n), t.nframes)
    rle = (t.frame_kind == STRING) | (t.frame_kind == COUNTS)  # (polygons take the video's size)
    return bool(((t.frame_h == h[inv][track]) & (t.frame_w == w[inv][track]) | ~rle).all())


def _gt_avg_area(t: Tracks) -> np.ndarray:
    """Each annotation's ``avg_area`` as the original's ``_toMask`` computes
    it: ``np.array([a for a in areas if a]).mean()``, 0 without one."""
    kind, val = t.area_kind, t.area_value
    truthy = (kind != 0) & (val != 0)
    count = _sums(truthy.astype(np.int64), t.area0, t.nareas)
    floats = _sums((truthy & (kind == 2)).astype(np.int64), t.area0, t.nareas)
    ints = np.where(truthy & (kind == 1), val, 0.0)
    out = np.zeros(t.n, np.float64)
    exact = float(np.abs(ints).sum()) < _EXACT
    plain = (count > 0) & (floats == 0) if exact else np.zeros(t.n, bool)
    if plain.any():
        total = _sums(ints, t.area0, t.nareas)
        out[plain] = total[plain] / count[plain]
    for r in np.flatnonzero((count > 0) & ~plain).tolist():
        a0, na = int(t.area0[r]), int(t.nareas[r])
        sel = truthy[a0:a0 + na]
        vals = val[a0:a0 + na][sel]
        if (kind[a0:a0 + na][sel] == 1).all():
            out[r] = np.array([int(v) for v in vals.tolist()]).mean()
        else:
            out[r] = np.array(vals).mean()
    return out


def load_results(data: bytes, gt, num_threads: int) -> Optional[Tracks]:
    """Results' :class:`Tracks` checked against the ground truth ``gt`` (a
    YTVOS) as ``loadRes`` checks them, with each track's ``avg_area``; None
    when the file is outside the schema or ``loadRes`` would warn or refuse."""
    chunks = _scan_module().scan_results(data, num_threads)
    if chunks is None:
        return None
    t = Tracks("results", data, chunks, {}, "results")
    if not t.n or (t.frame_area < 0).any():
        return None
    uniq_v = distinct(t.video_id)
    if set(uniq_v.tolist()) - set(gt.getVidIds()):
        return None
    if set(distinct(t.category_id).tolist()) - set(gt.cats):
        return None
    sizes = {}
    vids = gt.vids
    for vid in uniq_v.tolist():
        video = vids.get(vid)
        if not isinstance(video, dict):
            return None
        sizes[vid] = (video.get('height'), video.get('width'), video_length(video))
    if not _frames_fit(t, sizes):
        return None
    area = np.where(t.frame_kind != ABSENT, t.frame_area, 0)
    count = _sums((area > 0).astype(np.int64), t.frame0, t.nframes)
    total = _sums(area, t.frame0, t.nframes)
    if int(total.max(initial=0)) >= 1 << 52:
        return None
    nz = count > 0
    t.avg_area[nz] = total[nz] / count[nz]
    return t
