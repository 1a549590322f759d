"""Synthetic video object segmentation data, written as the official tools read it.

(This module is longer than 800 lines because it holds the drawing of videos, the
results made from them and the writers of every layout the official tools read, which
share their helpers; the tests, the benchmarks and the command line's demo use it.)

Deterministic (every random choice from ``numpy.random.default_rng(seed)``)
label-map videos, results made from them, and writers of the layouts
davis2017-evaluation and SA-V's ``sav_benchmark`` read: a DAVIS root with
results folders (:func:`write_davis`, :func:`write_davis_results`: palette PNGs
whose indices are object ids, 255 = void) and SA-V's per-object and DAVIS-like
layouts (:func:`write_sav`); MOSEv2's annotations, ``meta.json`` and
predictions (:func:`write_mosev2`, :func:`write_mosev2_predictions`) and LVOS'
root with its ``<set>_meta.json`` of per-object frame ranges and a results
folder (:func:`write_lvos`, :func:`write_lvos_results`).  A video is a ``(T, H, W)`` uint8 array of ids
(0 = background): :func:`render_sequence` draws it, :func:`void_mask` marks
void, :func:`perturb` and :func:`proposals` make results, :func:`make_preset`
writes a whole benchmark set (``PRESETS``).  Pillow is imported on the first
write only.

>>> from boundary_api.video import synthetic
>>> synthetic.render_sequence(5, 7, 9, objects=2, seed=1, touching=True).shape
(5, 7, 9)
"""
from __future__ import annotations

import json
import os
import time
from typing import Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "render_sequence",
    "void_mask",
    "perturb",
    "proposals",
    "frame_names",
    "write_label_png",
    "write_mask_png",
    "write_davis",
    "write_davis_results",
    "write_sav",
    "write_mosev2",
    "write_mosev2_predictions",
    "lvos_ranges",
    "write_lvos",
    "write_lvos_results",
    "PRESETS",
    "make_preset",
    "write_demo",
]

Labels = np.ndarray  # (T, H, W) uint8 object ids


# ----------------------------------------------------------------------------
# Drawing
# ----------------------------------------------------------------------------

def _reflect(x: float, hi: float) -> float:
    """``x`` folded into ``[0, hi]`` (a point bouncing between two walls)."""
    if hi <= 0:
        return 0.0
    period = 2.0 * hi
    x = x % period
    return period - x if x > hi else x


def _draw_blob(out: np.ndarray, label: int, cy: float, cx: float, ry: float, rx: float,
               lobes: int = 0, amp: float = 0.0, phase: float = 0.0) -> None:
    """Paint an ellipse (with ``lobes`` bumps of relative size ``amp`` on its outline) into ``out``."""
    h, w = out.shape
    reach = 1.0 + abs(amp)
    y0, y1 = max(0, int(np.floor(cy - ry * reach)) - 1), min(h, int(np.ceil(cy + ry * reach)) + 2)
    x0, x1 = max(0, int(np.floor(cx - rx * reach)) - 1), min(w, int(np.ceil(cx + rx * reach)) + 2)
    if y0 >= y1 or x0 >= x1:
        return
    dy = (np.arange(y0, y1, dtype=np.float64)[:, None] - cy) / ry
    dx = (np.arange(x0, x1, dtype=np.float64)[None, :] - cx) / rx
    rr = dy * dy + dx * dx
    if lobes and amp:
        limit = (1.0 + amp * np.sin(lobes * np.arctan2(dy, dx) + phase)) ** 2
    else:
        limit = 1.0
    out[y0:y1, x0:x1][rr <= limit] = label


_TINY_SHAPES = (((0, 0),), ((0, 0), (0, 1)), ((0, 0), (1, 0)), ((0, 0), (1, 1)), ((0, 0), (0, 1), (1, 0)),
                ((0, 0), (0, 1), (0, 2)))


def render_sequence(frames: int, height: int, width: int, objects: int = 2, *, seed: int = 0,
                    moving: bool = True, deforming: bool = False, touching: bool = False,
                    vanishing: Union[bool, Tuple[int, int]] = False, tiny: int = 0, edges: bool = False,
                    late: int = 0, ids: Optional[Sequence[int]] = None,
                    size: Tuple[float, float] = (0.12, 0.3)) -> Labels:
    """A ground-truth video: ``frames`` label maps of ``height x width`` pixels.

    Parameters
    ----------
    frames, height, width : int
        The video's length and frame size (any size from 1x1 up).
    objects : int
        Regular objects (filled ellipses), present from the first frame.
    seed : int
        Seed of ``numpy.random.default_rng``: the same arguments give the same video.
    moving : bool
        Objects move (bouncing off the frame's sides); otherwise they stay put.
    deforming : bool
        Outlines wobble (lobes that turn from frame to frame) and sizes pulse.
    touching : bool
        The second regular object is glued to the first (drawn over its side), so
        the two share a boundary in every frame where both are visible.
    vanishing : bool or (int, int)
        The last regular object is absent in frames ``[a, b)`` and reappears
        after them (``True``: the middle third of the video).
    tiny : int
        Tiny objects of 1 to 3 pixels, drawn last (always visible).
    edges : bool
        Every other regular object sits on a side or a corner of the frame (cut
        by it) and slides along it.
    late : int
        Objects that first appear after the first frame, with ids after the
        regular ones: the first frame then holds fewer objects than later frames
        (DAVIS counts the objects of the first frame only).
    ids : sequence of int, optional
        The ids of the objects in the order regular, late, tiny (default
        ``1, 2, ...``); any values in 1..255 (gaps, large ids, 255 itself).
    size : (float, float)
        Range of the regular objects' radii as a fraction of the frame's sides.

    Returns
    -------
    numpy.ndarray
        ``(frames, height, width)`` uint8 object ids, 0 = background.
    """
    frames, height, width = int(frames), int(height), int(width)
    if frames < 1 or height < 1 or width < 1:
        raise ValueError(f"frames, height and width must be positive, got {frames}, {height}, {width}")
    n = int(objects) + int(late) + int(tiny)
    ids = list(range(1, n + 1)) if ids is None else [int(i) for i in ids]
    if len(ids) != n or any(not 1 <= i <= 255 for i in ids):
        raise ValueError(f"ids must be {n} values in 1..255, got {ids}")
    rng = np.random.default_rng(seed)
    out = np.zeros((frames, height, width), np.uint8)
    speed = (0.02 * max(height, width) + 0.3) if moving else 0.0
    specs = []
    for k in range(int(objects) + int(late)):
        ry = max(0.6, rng.uniform(*size) * height)
        rx = max(0.6, rng.uniform(*size) * width)
        cy, cx = rng.uniform(0, height - 1), rng.uniform(0, width - 1)
        vy, vx = rng.uniform(-1, 1, 2) * speed
        edge = int(rng.integers(0, 6)) if edges and k < objects and k % 2 == 0 else None
        start = 0 if k < objects else int(rng.integers(1, max(2, frames // 2 + 1)))
        specs.append(dict(ry=ry, rx=rx, cy=cy, cx=cx, vy=vy, vx=vx, edge=edge, start=start,
                          lobes=int(rng.integers(2, 6)), amp=0.3 if deforming else 0.0,
                          phase=rng.uniform(0, 2 * np.pi), omega=rng.uniform(0.2, 0.6),
                          pulse=rng.uniform(0, 2 * np.pi)))
    gone = None
    if vanishing and objects:
        gone = (frames // 3, max(frames // 3 + 1, 2 * frames // 3)) if vanishing is True else tuple(vanishing)
    tiny_specs = [dict(y=int(rng.integers(0, height)), x=int(rng.integers(0, width)),
                       shape=_TINY_SHAPES[int(rng.integers(0, len(_TINY_SHAPES)))],
                       vy=int(rng.integers(-1, 2)), vx=int(rng.integers(-1, 2))) for _ in range(int(tiny))]
    for t in range(frames):
        frame = out[t]
        centres = []
        for k, s in enumerate(specs):
            cy = _reflect(s["cy"] + s["vy"] * t, height - 1)
            cx = _reflect(s["cx"] + s["vx"] * t, width - 1)
            e = s["edge"]  # pinned to a side (0-3) or a corner (4-5)
            cy = {0: 0.0, 4: 0.0, 1: height - 1.0, 5: height - 1.0}.get(e, cy)
            cx = {2: 0.0, 4: 0.0, 3: width - 1.0, 5: width - 1.0}.get(e, cx)
            scale = 1.0 + (0.25 * np.sin(0.3 * t + s["pulse"]) if s["amp"] else 0.0)
            ry, rx = s["ry"] * scale, s["rx"] * scale
            if touching and k == 1 and specs:
                c0y, c0x, r0y, r0x = centres[0]
                # beside the first object (on the side with room), overlapping it by about a pixel
                cy, cx = c0y, c0x + r0x + rx - 1.0
                if cx > width - 1 - 0.5 * rx:
                    cx = c0x - r0x - rx + 1.0
            centres.append((cy, cx, ry, rx))
            if t < s["start"] or (gone and k == objects - 1 and gone[0] <= t < gone[1]):
                continue
            _draw_blob(frame, ids[k], cy, cx, ry, rx, s["lobes"], s["amp"], s["phase"] + s["omega"] * t)
        for j, s in enumerate(tiny_specs):
            step = t // 3 if moving else 0
            y0 = int(_reflect(s["y"] + s["vy"] * step, height - 1))
            x0 = int(_reflect(s["x"] + s["vx"] * step, width - 1))
            for dy, dx in s["shape"]:
                frame[min(y0 + dy, height - 1), min(x0 + dx, width - 1)] = ids[len(specs) + j]
    return out


def _grow(mask: np.ndarray, r: int) -> np.ndarray:
    """``mask`` dilated ``r`` times by the 4-neighbour cross (last two axes)."""
    out = mask.copy()
    for _ in range(int(r)):
        m = out.copy()
        m[..., 1:, :] |= out[..., :-1, :]
        m[..., :-1, :] |= out[..., 1:, :]
        m[..., :, 1:] |= out[..., :, :-1]
        m[..., :, :-1] |= out[..., :, 1:]
        out = m
    return out


def _shrink(mask: np.ndarray, r: int) -> np.ndarray:
    """``mask`` eroded ``r`` times by the 4-neighbour cross (outside the frame does not erode)."""
    return ~_grow(~mask, r)


def _box(mask: np.ndarray, r: int):
    """The index (all frames, rows, columns) of ``mask``'s bounding box grown by
    ``r`` pixels, clipped to the frame: growing or shrinking by ``r`` steps
    inside it gives what it gives on the whole frame.  None when empty."""
    rows, cols = np.flatnonzero(mask.any(axis=(0, 2))), np.flatnonzero(mask.any(axis=(0, 1)))
    if rows.size == 0:
        return None
    h, w = mask.shape[1:]
    return (slice(None), slice(max(0, rows[0] - r), min(h, rows[-1] + r + 1)),
            slice(max(0, cols[0] - r), min(w, cols[-1] + r + 1)))


def _ids(labels: np.ndarray) -> list:
    """The nonzero ids of a uint8 array, ascending."""
    seen = np.zeros(256, bool)
    seen[np.asarray(labels, np.uint8).ravel()] = True
    return [int(i) for i in np.flatnonzero(seen) if i]


def void_mask(labels: Labels, *, seed: int = 0, band: int = 1, boxes: int = 0,
              box_size: float = 0.2) -> np.ndarray:
    """Void regions for a video: a band along every object boundary and a few boxes.

    Parameters
    ----------
    labels : (T, H, W) array
        The video's object ids.
    seed : int
        Seed of ``numpy.random.default_rng`` (places the boxes).
    band : int
        Half-width in pixels of the void band on both sides of each object's
        outline (0: none).
    boxes : int
        Rectangles that stay void in every frame, each about ``box_size`` of
        the frame's sides.
    box_size : float
        The boxes' size as a fraction of the frame's sides.

    Returns
    -------
    numpy.ndarray
        ``(T, H, W)`` bool, True = void (DAVIS writes 255 there).
    """
    labels = np.asarray(labels)
    void = np.zeros(labels.shape, bool)
    if band > 0:
        for i in _ids(labels):
            m = labels == i
            box = _box(m, band)
            sub = m[box]
            void[box] |= _grow(sub, band) & ~_shrink(sub, band)
    rng = np.random.default_rng(seed)
    _, h, w = labels.shape
    for _ in range(int(boxes)):
        bh, bw = max(1, int(round(box_size * h))), max(1, int(round(box_size * w)))
        y, x = int(rng.integers(0, max(1, h - bh + 1))), int(rng.integers(0, max(1, w - bw + 1)))
        void[:, y:y + bh, x:x + bw] = True
    return void


def _shift(frame: np.ndarray, dy: int, dx: int) -> np.ndarray:
    out = np.zeros_like(frame)
    h, w = frame.shape
    if abs(dy) >= h or abs(dx) >= w:
        return out
    out[max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] = \
        frame[max(-dy, 0):h + min(-dy, 0), max(-dx, 0):w + min(-dx, 0)]
    return out


def perturb(labels: Labels, *, seed: int = 0, shift: Tuple[int, int] = (0, 0), jitter: int = 0,
            dilate: int = 0, erode: int = 0, noise: float = 0.0, missing: Iterable[int] = (),
            missing_frames: Optional[Tuple[int, int]] = None, spurious: int = 0,
            spurious_id: Optional[int] = None, empty_frames: Iterable[int] = (),
            relabel: Optional[Mapping[int, int]] = None) -> Labels:
    """A result made from a ground-truth video.

    The steps run in this order: ``relabel``, ``missing``, ``erode``,
    ``dilate``, ``shift`` / ``jitter``, ``noise``, ``spurious``, ``empty_frames``.

    Parameters
    ----------
    labels : (T, H, W) array
        The ground truth's object ids (never changed).
    seed : int
        Seed of ``numpy.random.default_rng``.
    shift : (int, int)
        Every frame moved by ``(dy, dx)`` pixels (what leaves the frame is lost,
        background comes in).
    jitter : int
        Each frame moved further by a random ``(dy, dx)`` in ``[-jitter, jitter]``.
    dilate, erode : int
        Each object grown into the background / shrunk by that many steps of the
        4-neighbour cross.
    noise : float
        Share of each frame's pixels set to a random id (0 or one of the video's ids).
    missing : iterable of int
        Ids removed (background) ...
    missing_frames : (int, int), optional
        ... in frames ``[a, b)`` only (default: every frame).
    spurious : int
        Blobs of a new id added in every frame, each moving on its own.
    spurious_id : int, optional
        Their id (default: one above the largest id of ``labels``); an id above
        the ground truth's object count makes DAVIS' semi-supervised evaluation stop.
    empty_frames : iterable of int
        Frames (negative counts from the end) that become all background.
    relabel : mapping of int to int, optional
        Ids changed before anything else (``{1: 2, 2: 1}`` swaps two objects).

    Returns
    -------
    numpy.ndarray
        ``(T, H, W)`` uint8 ids.
    """
    gt = np.asarray(labels, np.uint8)
    rng = np.random.default_rng(seed)
    out = gt.copy()
    if relabel:
        lut = np.arange(256, dtype=np.uint8)
        for a, b in relabel.items():
            lut[int(a)] = int(b)
        out = lut[out]
    t_all = out.shape[0]
    for i in missing:
        a, b = missing_frames if missing_frames is not None else (0, t_all)
        seg = out[a:b]
        seg[seg == int(i)] = 0
    present = _ids(out)
    if erode:
        for i in present:
            m = out == i
            box = _box(m, erode)
            if box is not None:
                sub = out[box]
                sub[m[box] & ~_shrink(m[box], erode)] = 0
    if dilate:
        for i in present:
            m = out == i
            box = _box(m, dilate)
            if box is not None:
                sub = out[box]
                sub[_grow(m[box], dilate) & (sub == 0)] = i
    if shift != (0, 0) or jitter:
        for t in range(t_all):
            dy, dx = int(shift[0]), int(shift[1])
            if jitter:
                jy, jx = rng.integers(-int(jitter), int(jitter) + 1, 2)
                dy, dx = dy + int(jy), dx + int(jx)
            out[t] = _shift(out[t], dy, dx)
    if noise:
        choices = np.array([0] + _ids(gt), np.uint8)
        for t in range(t_all):
            k = int(round(noise * out[t].size))
            idx = rng.choice(out[t].size, size=k, replace=False) if k else []
            out[t].reshape(-1)[idx] = choices[rng.integers(0, len(choices), size=k)]
    if spurious:
        sid = int(spurious_id) if spurious_id is not None else min(255, int(gt.max()) + 1)
        _, h, w = out.shape
        for _ in range(int(spurious)):
            cy, cx = rng.uniform(0, h - 1), rng.uniform(0, w - 1)
            vy, vx = rng.uniform(-1, 1, 2) * (0.02 * max(h, w) + 0.3)
            r = max(0.6, rng.uniform(0.03, 0.1) * min(h, w))
            for t in range(t_all):
                _draw_blob(out[t], sid, _reflect(cy + vy * t, h - 1), _reflect(cx + vx * t, w - 1), r, r)
    for t in empty_frames:
        out[int(t)] = 0
    return out


def proposals(labels: Labels, n: int, *, seed: int = 0, split: bool = True) -> Labels:
    """An unsupervised result with proposal ids ``1..n`` (the largest, ``n``, always used).

    The ground truth's objects get distinct random proposal ids (objects beyond
    ``n`` are left out); with ``split`` and room left, one object is cut in two
    proposals (the rows below its centre get another id); the remaining ids are
    blobs in the background, each present in a random run of frames.

    Parameters
    ----------
    labels : (T, H, W) array
        The ground truth (void already removed or not: 255 counts as an object).
    n : int
        Number of proposal ids (more than 20 makes DAVIS' unsupervised
        evaluation stop).
    seed : int
        Seed of ``numpy.random.default_rng``.
    split : bool
        Cut one object in two proposals.

    Returns
    -------
    numpy.ndarray
        ``(T, H, W)`` uint8 proposal ids.
    """
    gt = np.asarray(labels, np.uint8)
    n = int(n)
    if not 1 <= n <= 255:
        raise ValueError(f"n must be in 1..255, got {n}")
    rng = np.random.default_rng(seed)
    objs = _ids(gt)
    order = rng.permutation(n) + 1
    out = np.zeros_like(gt)
    used = 0
    for i in objs[:n]:
        out[gt == i] = order[used]
        used += 1
    if split and objs and used < n:
        i = objs[0]
        ys = np.nonzero(gt == i)[1]
        cut = int(np.median(ys)) + 1 if ys.size else 0
        part = (gt == i)
        part[:, :cut] = False
        out[part] = order[used]
        used += 1
    t_all, h, w = gt.shape
    for k in range(used, n):
        a = int(rng.integers(0, t_all))
        b = int(rng.integers(a + 1, t_all + 1))
        cy, cx = rng.uniform(0, h - 1), rng.uniform(0, w - 1)
        r = max(0.6, rng.uniform(0.03, 0.12) * min(h, w))
        for t in range(a, b):
            _draw_blob(out[t], int(order[k]), cy, cx, r, r * rng.uniform(0.7, 1.4))
    if n not in _ids(out):  # the largest proposal id must be in some frame
        out[0, 0, 0] = n
    return out


# ----------------------------------------------------------------------------
# Files
# ----------------------------------------------------------------------------

_PALETTE = None
_TINY_JPEG = None


def _palette() -> list:
    """The PASCAL VOC colour map DAVIS' PNGs carry: entry ``i``'s colour bits
    are the bits of ``i`` dealt out to red, green and blue in turn, most
    significant bit first."""
    global _PALETTE
    if _PALETTE is None:
        _PALETTE = [sum(((i >> (3 * j + c)) & 1) << (7 - j) for j in range(8)) for i in range(256) for c in range(3)]
    return _PALETTE


def frame_names(frames: int, start: int = 0, step: int = 1) -> list:
    """DAVIS / SA-V frame names ``00000, 00001, ...`` (``start + k * step``, five digits)."""
    return [f"{start + k * step:05d}" for k in range(int(frames))]


def write_label_png(path, labels: np.ndarray, *, mode: str = "P", compress_level: int = 1) -> None:
    """One frame of object ids as a PNG.

    Parameters
    ----------
    path : str or os.PathLike
        The file (its folder is created).
    labels : (H, W) array
        Ids 0..255.
    mode : {"P", "L", "RGB"}
        ``"P"``: palette PNG whose indices are the ids (what DAVIS ships and reads);
        ``"L"``: 8-bit grayscale with the ids as values; ``"RGB"``: the palette's
        colours (an input the official readers refuse or misread).
    compress_level : int
        zlib level (1: fast).
    """
    from PIL import Image

    if mode not in ("P", "L", "RGB"):
        raise ValueError(f"mode must be 'P', 'L' or 'RGB', got {mode!r}")
    a = np.ascontiguousarray(labels, dtype=np.uint8)
    os.makedirs(os.path.dirname(os.fspath(path)) or ".", exist_ok=True)
    if mode == "RGB":
        a = np.ascontiguousarray(np.array(_palette(), np.uint8).reshape(256, 3)[a])
    img = Image.frombytes(mode, a.shape[1::-1], a.tobytes())
    if mode == "P":
        img.putpalette(_palette())
    img.save(os.fspath(path), format="PNG", compress_level=int(compress_level))


def write_mask_png(path, mask: np.ndarray, *, value: int = 255, mode: str = "L", compress_level: int = 1) -> None:
    """One binary mask as a PNG (SA-V's per-object layout): ``value`` on the
    object, 0 elsewhere; ``mode`` as in :func:`write_label_png`."""
    m = (np.asarray(mask) != 0).astype(np.uint8) * np.uint8(value)
    write_label_png(path, m, mode=mode, compress_level=compress_level)


def _write_jpeg(path, shape, images: str) -> None:
    global _TINY_JPEG
    if images == "none":
        return
    from PIL import Image

    if images == "tiny":  # DAVIS' reader only lists the .jpg names
        if _TINY_JPEG is None:
            import io

            buf = io.BytesIO()
            Image.new("L", (1, 1), 128).save(buf, format="JPEG")
            _TINY_JPEG = buf.getvalue()
        with open(path, "wb") as f:
            f.write(_TINY_JPEG)
        return
    Image.new("RGB", (shape[1], shape[0]), (96, 96, 96)).save(path, format="JPEG", quality=50)


def write_davis(root, sequences: Mapping[str, Labels], *, subset: str = "val",
                tasks: Sequence[str] = ("semi-supervised", "unsupervised"),
                void: Optional[Mapping[str, np.ndarray]] = None,
                unsupervised: Optional[Mapping[str, Labels]] = None,
                names: Optional[Mapping[str, Sequence[str]]] = None, images: str = "tiny",
                imageset: Optional[Sequence[str]] = None, sets: bool = True, resolution: str = "480p",
                mode: str = "P", compress_level: int = 1):
    """A DAVIS-2017 root as davis2017-evaluation reads it.

    Parameters
    ----------
    root : str or os.PathLike
        The folder to write (created; existing files are overwritten).
    sequences : mapping of str to (T, H, W) array
        Sequence name to ground truth, in the order of the ImageSets file.
    subset : str
        The set's name: ``ImageSets/<year>/<subset>.txt``.  The semi-supervised
        task reads ``ImageSets/2017``, the unsupervised one ``ImageSets/2019``
        for ``test-dev`` and ``test-challenge`` (both are written where needed).
    tasks : sequence of str
        Which annotation folders to write: ``Annotations`` (semi-supervised,
        the ids as given) and ``Annotations_unsupervised`` (void as 255).
    void : mapping of str to (T, H, W) bool array, optional
        Void pixels per sequence, written as 255 in the unsupervised annotations.
    unsupervised : mapping of str to (T, H, W) array, optional
        Other ground truth for the unsupervised annotations (default: ``sequences``).
    names : mapping of str to list of str, optional
        Frame names per sequence (default ``00000, 00001, ...``).
    images : {"tiny", "frame", "none"}
        JPEGs: a valid 1x1 JPEG per frame (the official reader only lists
        them), a gray frame-sized JPEG, or none.
    imageset : sequence of str, optional
        The ImageSets file's lines as written (default: the sequence names).
    sets : bool
        Write the ImageSets file(s) (``False``: leave them to the caller).
    resolution : str
        The resolution folder (``480p``).
    mode, compress_level
        As in :func:`write_label_png`.

    Returns
    -------
    str
        ``root``.
    """
    root = os.fspath(root)
    lines = list(sequences) if imageset is None else list(imageset)
    years = {"2017"}
    if "unsupervised" in tasks and subset in ("test-dev", "test-challenge"):
        years = {"2019"} | ({"2017"} if "semi-supervised" in tasks else set())
    for year in sorted(years) if sets else ():
        os.makedirs(os.path.join(root, "ImageSets", year), exist_ok=True)
        with open(os.path.join(root, "ImageSets", year, f"{subset}.txt"), "w") as f:
            f.write("".join(line + "\n" for line in lines))
    for seq, labels in sequences.items():
        labels = np.asarray(labels, np.uint8)
        fn = list(names[seq]) if names and seq in names else frame_names(labels.shape[0])
        img_dir = os.path.join(root, "JPEGImages", resolution, seq)
        os.makedirs(img_dir, exist_ok=True)
        for t, name in enumerate(fn):
            _write_jpeg(os.path.join(img_dir, name + ".jpg"), labels.shape[1:], images)
        if "semi-supervised" in tasks:
            d = os.path.join(root, "Annotations", resolution, seq)
            for t, name in enumerate(fn):
                write_label_png(os.path.join(d, name + ".png"), labels[t], mode=mode, compress_level=compress_level)
        if "unsupervised" in tasks:
            u = np.array(unsupervised[seq] if unsupervised and seq in unsupervised else labels, np.uint8)
            if void is not None and seq in void:
                u[np.asarray(void[seq], bool)] = 255
            d = os.path.join(root, "Annotations_unsupervised", resolution, seq)
            for t, name in enumerate(fn):
                write_label_png(os.path.join(d, name + ".png"), u[t], mode=mode, compress_level=compress_level)
    return root


def write_davis_results(folder, results: Mapping[str, Labels], *,
                        names: Optional[Mapping[str, Sequence[str]]] = None, skip: Iterable[int] = (),
                        mode: str = "P", compress_level: int = 1):
    """A DAVIS results folder ``<folder>/<seq>/<frame>.png`` (palette PNGs of ids).

    Parameters
    ----------
    folder : str or os.PathLike
        The results folder (created).
    results : mapping of str to (T, H, W) array
        Sequence name to result ids.
    names : mapping of str to list of str, optional
        Frame names per sequence (default ``00000, 00001, ...``).
    skip : iterable of int
        Frame indices (negative from the end) not written, in every sequence
        (DAVIS' semi-supervised task never reads the first and the last).
    mode, compress_level
        As in :func:`write_label_png`.

    Returns
    -------
    str
        ``folder``.
    """
    folder = os.fspath(folder)
    for seq, labels in results.items():
        labels = np.asarray(labels, np.uint8)
        fn = list(names[seq]) if names and seq in names else frame_names(labels.shape[0])
        leave = {int(t) % labels.shape[0] for t in skip}
        os.makedirs(os.path.join(folder, seq), exist_ok=True)
        for t, name in enumerate(fn):
            if t not in leave:
                write_label_png(os.path.join(folder, seq, name + ".png"), labels[t], mode=mode,
                                compress_level=compress_level)
    return folder


def write_sav(root, videos: Mapping[str, Labels], *, layout: str = "sav", frames: Optional[Sequence[int]] = None,
              names: Optional[Sequence[str]] = None, objects: Optional[Mapping[str, Sequence[int]]] = None,
              object_names: Optional[Mapping[int, str]] = None, span: bool = False, value: int = 255,
              mode: Optional[str] = None, compress_level: int = 1):
    """Ground truth or predictions in one of the layouts SA-V's evaluator reads.

    Parameters
    ----------
    root : str or os.PathLike
        The folder (``gt_root`` or ``pred_root``; created).
    videos : mapping of str to (T, H, W) array
        Video name to ids.
    layout : {"sav", "davis"}
        ``"sav"``: ``<video>/<obj>/<frame>.png``, one binary PNG per object and
        frame; ``"davis"``: ``<video>/<frame>.png`` with the ids.
    frames : sequence of int, optional
        The frames written (the annotated ones: SA-V annotates every 4th frame of
        its 24 fps videos); default all.
    names : sequence of str, optional
        The frame names (default ``00000, 00001, ...`` by frame index).
    objects : mapping of str to sequence of int, optional
        Per video, the ids that get a folder (layout ``"sav"``; default: every
        nonzero id of the video).  Give the ground truth's ids when writing
        predictions, so that the folders match.
    object_names : mapping of int to str, optional
        Folder name of an id (default: its rank among the video's objects,
        ``000, 001, ...``).
    span : bool
        Layout ``"sav"``: an object's folder holds only the frames from its first
        appearance on (sparse per object), instead of every written frame.
    value : int
        The PNG value of object pixels in layout ``"sav"`` (255; any nonzero).
    mode : str, optional
        PNG mode (default ``"L"`` for ``"sav"``, ``"P"`` for ``"davis"``).
    compress_level : int
        zlib level.

    Returns
    -------
    str
        ``root``.
    """
    root = os.fspath(root)
    if layout not in ("sav", "davis"):
        raise ValueError(f"layout must be 'sav' or 'davis', got {layout!r}")
    for vid, labels in videos.items():
        labels = np.asarray(labels, np.uint8)
        idx = list(range(labels.shape[0])) if frames is None else [int(t) for t in frames]
        fn = list(names) if names is not None else [f"{t:05d}" for t in range(labels.shape[0])]
        if layout == "davis":
            for t in idx:
                write_label_png(os.path.join(root, vid, fn[t] + ".png"), labels[t], mode=mode or "P",
                                compress_level=compress_level)
            continue
        ids = _ids(labels) if not objects or vid not in objects \
            else [int(i) for i in objects[vid]]
        for rank, i in enumerate(ids):
            folder = os.path.join(root, vid, (object_names or {}).get(i, f"{rank:03d}"))
            os.makedirs(folder, exist_ok=True)
            seen = [t for t in idx if (labels[t] == i).any()]
            first = seen[0] if (span and seen) else None
            for t in idx:
                if first is not None and t < first:
                    continue
                write_mask_png(os.path.join(folder, fn[t] + ".png"), labels[t] == i, value=value,
                               mode=mode or "L", compress_level=compress_level)
    return root


def write_mosev2(root, videos: Mapping[str, Labels], *, objects: Optional[Mapping[str, Sequence]] = None,
                 meta: str = "meta.json", lengths: Optional[Mapping[str, int]] = None,
                 sizes: Optional[Mapping[str, Optional[Tuple[int, int]]]] = None, objects_as: str = "dict",
                 mode: str = "P", compress_level: int = 1) -> dict:
    """A MOSEv2 validation set as MOSE-api's ``score.py`` reads it.

    Writes ``<root>/Annotations/<video>/00000.png, ...`` (palette PNGs of
    object ids; any id, 255 included, is just an object id there) and
    ``<root>/<meta>``: ``{"videos": {video: {"objects": {"1": {"frames":
    [...]}, ...}, "length": T, "height": H, "width": W}}}``.

    Parameters
    ----------
    root : str or os.PathLike
        Created.
    videos : mapping of str to (T, H, W) array
        Video name to ids.
    objects : mapping of str to sequence, optional
        Per video, the object ids the meta lists, in that order (default:
        every nonzero id of the video, ascending); ids absent from the video
        are allowed (never-present objects).
    meta : str
        The meta file's name inside ``root``.
    lengths, sizes : mapping, optional
        Per video, a ``length`` or ``(height, width)`` written into the meta
        instead of the true ones (``None`` as size: ``null`` height and width,
        which score.py replaces by the first frame's size).
    objects_as : {"dict", "list"}
        The meta's ``objects`` as a dict keyed by id strings or a list of ints.
    mode, compress_level
        As in :func:`write_label_png`.

    Returns
    -------
    dict
        ``{"meta": path, "gt_root": path}``.
    """
    root = os.fspath(root)
    ann = os.path.join(root, "Annotations")
    doc = {}
    for vid, labels in videos.items():
        labels = np.asarray(labels)
        for t in range(labels.shape[0]):
            write_label_png(os.path.join(ann, vid, f"{t:05d}.png"), labels[t], mode=mode,
                            compress_level=compress_level)
        ids = [int(i) for i in (objects[vid] if objects and vid in objects else _ids(labels))]
        size = (sizes or {}).get(vid, labels.shape[1:])
        h, w = (None, None) if size is None else (int(size[0]), int(size[1]))
        objs = {str(i): {"frames": [f"{t:05d}" for t in range(labels.shape[0]) if (labels[t] == i).any()]}
                for i in ids} if objects_as == "dict" else ids
        doc[vid] = {"objects": objs, "length": int((lengths or {}).get(vid, labels.shape[0])), "height": h,
                    "width": w}
    os.makedirs(root, exist_ok=True)
    meta_path = os.path.join(root, meta)
    with open(meta_path, "w") as f:
        json.dump({"videos": doc}, f)
    return {"meta": meta_path, "gt_root": ann}


def write_mosev2_predictions(folder, results: Mapping[str, Labels], *, skip: Mapping[str, Iterable[int]] = None,
                             names: Optional[Mapping[str, Sequence[str]]] = None, wrap: Optional[str] = None,
                             mode: str = "P", compress_level: int = 1) -> str:
    """Predictions ``<folder>/[<wrap>/]<video>/00000.png, ...`` (palette PNGs of ids).

    Parameters
    ----------
    folder : str or os.PathLike
        The prediction root given to the scorer (created).
    results : mapping of str to (T, H, W) array
    skip : mapping of str to iterable of int, optional
        Per video, frames not written (a missing prediction frame).
    names : mapping of str to list of str, optional
        Per video, the frame names (default ``00000, 00001, ...``).
    wrap : str, optional
        Put the videos into one folder of that name inside ``folder`` (a
        submission zip's top folder; score.py descends into it).

    Returns
    -------
    str
        ``folder``.
    """
    folder = os.fspath(folder)
    base = os.path.join(folder, wrap) if wrap else folder
    for vid, labels in results.items():
        labels = np.asarray(labels)
        fn = list(names[vid]) if names and vid in names else [f"{t:05d}" for t in range(labels.shape[0])]
        leave = {int(t) % labels.shape[0] for t in (skip or {}).get(vid, ())}
        os.makedirs(os.path.join(base, vid), exist_ok=True)
        for t in range(labels.shape[0]):
            if t not in leave:
                write_label_png(os.path.join(base, vid, fn[t] + ".png"), labels[t], mode=mode,
                                compress_level=compress_level)
    return folder


def lvos_ranges(labels: Labels, numbers: Sequence[int], step: int = 5) -> Dict[str, dict]:
    """Each object's LVOS frame range: from the first annotated frame number
    where it is present to one past the last, and ``frame_nums`` the number of
    frames ``range(start, end, step)`` yields (as LVOS' meta gives them)."""
    labels = np.asarray(labels)
    out = {}
    for i in _ids(labels):
        seen = [numbers[t] for t in range(labels.shape[0]) if (labels[t] == i).any()]
        start, end = seen[0], seen[-1] + 1
        out[str(i)] = {"frame_range": {"start": start, "end": end, "frame_nums": len(range(start, end, step))}}
    return out


def write_lvos(root, videos: Mapping[str, Labels], *, subset: str = "valid",
               numbers: Optional[Mapping[str, Sequence[int]]] = None,
               objects: Optional[Mapping[str, Mapping[str, dict]]] = None, unseen: Iterable[str] = (),
               unsupervised: Iterable[str] = (), lists_in: Optional[str] = None, mode: str = "P",
               compress_level: int = 1) -> dict:
    """An LVOS root as lvos-evaluation's ``LVOS`` reads it.

    Writes ``<root>/Annotations/<video>/<frame:08d>.png`` (palette PNGs of
    ids) and ``<root>/<subset>_meta.json``: ``{"videos": {video: {"objects":
    {"1": {"frame_range": {"start", "end", "frame_nums"}}, ...}}}}``, and the
    two lists lvos-evaluation reads (``unseen_videos.txt``,
    ``unsupervised_videos.txt``) into ``lists_in``.

    Parameters
    ----------
    root : str or os.PathLike
        Created.
    videos : mapping of str to (T, H, W) array
        The annotated frames of each video (LVOS annotates every 5th frame).
    subset : {"valid", "test"}
    numbers : mapping of str to sequence of int, optional
        Per video, the frame number of each annotated frame (default ``0, 5,
        10, ...``).
    objects : mapping of str to mapping, optional
        Per video, the meta's objects (default :func:`lvos_ranges`); give
        ranges that disagree with the annotations, strings, or objects without
        ``frame_nums`` to make the cases the evaluator stumbles on.
    unseen, unsupervised : iterable of str
        The two lists' lines.
    lists_in : str, optional
        Where to write them (default ``root``: lvos-evaluation's codalab mode
        reads them there, otherwise from the current directory).

    Returns
    -------
    dict
        ``{"lvos_root": root, "meta": path}``.
    """
    root = os.fspath(root)
    doc = {}
    for vid, labels in videos.items():
        labels = np.asarray(labels)
        nums = list(numbers[vid]) if numbers and vid in numbers else [5 * t for t in range(labels.shape[0])]
        for t in range(labels.shape[0]):
            write_label_png(os.path.join(root, "Annotations", vid, f"{nums[t]:08d}.png"), labels[t], mode=mode,
                            compress_level=compress_level)
        objs = objects[vid] if objects and vid in objects else lvos_ranges(labels, nums)
        doc[vid] = {"objects": objs}
    os.makedirs(root, exist_ok=True)
    meta_path = os.path.join(root, f"{subset}_meta.json")
    with open(meta_path, "w") as f:
        json.dump({"videos": doc}, f)
    where = os.fspath(lists_in) if lists_in is not None else root
    os.makedirs(where, exist_ok=True)
    for name, lines in (("unseen_videos.txt", unseen), ("unsupervised_videos.txt", unsupervised)):
        with open(os.path.join(where, name), "w") as f:
            f.write("".join(f"{line}\n" for line in lines))
    return {"lvos_root": root, "meta": meta_path}


def write_lvos_results(folder, results: Mapping[str, Labels], *,
                       numbers: Optional[Mapping[str, Sequence[int]]] = None,
                       skip: Optional[Mapping[str, Iterable[int]]] = None, mode: str = "P",
                       compress_level: int = 1) -> str:
    """An LVOS results folder ``<folder>/<video>/<frame:08d>.png`` (frame
    numbers as in :func:`write_lvos`; ``skip``: per video, indices not
    written)."""
    folder = os.fspath(folder)
    for vid, labels in results.items():
        labels = np.asarray(labels)
        nums = list(numbers[vid]) if numbers and vid in numbers else [5 * t for t in range(labels.shape[0])]
        leave = {int(t) % labels.shape[0] for t in (skip or {}).get(vid, ())}
        os.makedirs(os.path.join(folder, vid), exist_ok=True)
        for t in range(labels.shape[0]):
            if t not in leave:
                write_label_png(os.path.join(folder, vid, f"{nums[t]:08d}.png"), labels[t], mode=mode,
                                compress_level=compress_level)
    return folder


# ----------------------------------------------------------------------------
# Presets
# ----------------------------------------------------------------------------

#: Benchmark sets.  ``davis_val_like``: DAVIS-2017 val's shape (30 sequences,
#: 1,999 frames of 854x480, 2-3 objects); ``davis_val_like_1080p``: the same at
#: 1920x1080; ``small``: 4 short sequences of 64x96 for quick runs.
PRESETS: Dict[str, dict] = {
    "davis_val_like": dict(sequences=30, frames=1999, height=480, width=854, objects=(2, 3),
                           lengths=(25, 104)),
    "davis_val_like_1080p": dict(sequences=30, frames=1999, height=1080, width=1920, objects=(2, 3),
                                 lengths=(25, 104)),
    "small": dict(sequences=4, frames=40, height=64, width=96, objects=(2, 3), lengths=(6, 14)),
}


def _lengths(rng, n: int, total: int, lo: int, hi: int) -> list:
    """``n`` lengths in ``[lo, hi]`` summing to ``total``."""
    lens = [int(x) for x in rng.integers(lo, hi + 1, n)]
    while sum(lens) != total:
        k = int(rng.integers(0, n))
        if sum(lens) < total and lens[k] < hi:
            lens[k] += 1
        elif sum(lens) > total and lens[k] > lo:
            lens[k] -= 1
    return lens


def _preset_sequence(args) -> int:
    """Render and write one sequence of a preset (run in a worker process)."""
    root, name, k, seed, frames, h, w, n_obj, sav = args
    rng = np.random.default_rng([seed, k])
    gt = render_sequence(frames, h, w, n_obj, seed=int(rng.integers(2 ** 31)), deforming=bool(k % 2),
                         touching=(k % 3 == 0), vanishing=(k % 5 == 1), edges=(k % 4 == 2))
    void = void_mask(gt, seed=k, band=2)
    semi = perturb(gt, seed=int(rng.integers(2 ** 31)), jitter=2, dilate=int(rng.integers(0, 3)),
                   erode=int(rng.integers(0, 2)), noise=0.0005,
                   missing=[n_obj] if k % 6 == 3 else (), missing_frames=(frames // 2, frames))
    unsup = proposals(gt, int(rng.integers(n_obj, 9)), seed=int(rng.integers(2 ** 31)))
    write_davis(os.path.join(root, "DAVIS"), {name: gt}, void={name: void}, sets=False)
    write_davis_results(os.path.join(root, "results", "semi-supervised"), {name: semi})
    write_davis_results(os.path.join(root, "results", "unsupervised"), {name: unsup})
    if sav:
        # every 4th frame annotated (every frame in short sequences); objects that sav_benchmark
        # can score with its default skip of each object's first and last frames
        annotated = list(range(0, frames, 4)) if frames >= 12 else list(range(frames))
        objs = {name: _ids(gt[annotated[1:-1]])}
        write_sav(os.path.join(root, "sav", "gt"), {name: gt}, frames=annotated, objects=objs)
        write_sav(os.path.join(root, "sav", "pred"), {name: semi}, objects=objs)
    return frames


def make_preset(name: str, root, *, seed: int = 0, processes: int = 1, sav: bool = False) -> dict:
    """Write a benchmark set of ``PRESETS`` under ``root``.

    Layout: ``root/DAVIS`` (a DAVIS root, set ``val``, both tasks),
    ``root/results/semi-supervised`` and ``root/results/unsupervised``, and with
    ``sav`` also ``root/sav/gt`` and ``root/sav/pred`` (SA-V's per-object layout,
    every 4th frame annotated).  SA-V's DAVIS-like layout is
    ``root/DAVIS/Annotations/480p`` against ``root/results/semi-supervised``.

    Parameters
    ----------
    name : str
        A key of ``PRESETS``.
    root : str or os.PathLike
        Output folder.
    seed : int
        Seed; the files do not depend on ``processes``.
    processes : int
        Worker processes (one sequence per task).
    sav : bool
        Also write the SA-V per-object layout.

    Returns
    -------
    dict
        The paths (``davis_root``, ``results``, ``sav_gt``, ``sav_pred``), ``sequences``,
        ``frames`` and ``seconds`` taken.
    """
    if name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; one of {sorted(PRESETS)}")
    p = PRESETS[name]
    root = os.fspath(root)
    rng = np.random.default_rng(seed)
    lens = _lengths(rng, p["sequences"], p["frames"], *p["lengths"])
    objs = [int(x) for x in rng.integers(p["objects"][0], p["objects"][1] + 1, p["sequences"])]
    names = [f"seq{k:03d}" for k in range(p["sequences"])]
    start = time.perf_counter()
    jobs = [(root, names[k], k, seed, lens[k], p["height"], p["width"], objs[k], sav) for k in range(len(names))]
    if processes > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=int(processes)) as pool:
            list(pool.map(_preset_sequence, jobs))
    else:
        for job in jobs:
            _preset_sequence(job)
    os.makedirs(os.path.join(root, "DAVIS", "ImageSets", "2017"), exist_ok=True)
    with open(os.path.join(root, "DAVIS", "ImageSets", "2017", "val.txt"), "w") as f:
        f.write("".join(n + "\n" for n in names))
    return dict(davis_root=os.path.join(root, "DAVIS"),
                results={t: os.path.join(root, "results", t) for t in ("semi-supervised", "unsupervised")},
                sav_gt=os.path.join(root, "sav", "gt") if sav else None,
                sav_pred=os.path.join(root, "sav", "pred") if sav else None,
                sequences=names, frames=sum(lens), seconds=time.perf_counter() - start)


def write_demo(kind: str, folder, *, seed: int = 0) -> dict:
    """A small generated set to try the evaluators on (``boundary-eval vos --demo``).

    Parameters
    ----------
    kind : {'davis', 'sav', 'mosev2', 'lvos'}
        'davis': ``<folder>/DAVIS`` (3 sequences of 24 frames of 120x160, the
        semi-supervised and unsupervised annotations, void in the latter) and
        ``<folder>/results`` (semi-supervised results: shifted, grown and noisy
        copies, an object lost for a while); 'sav': ``<folder>/gt`` and
        ``<folder>/pred`` in SA-V's per-object layout; 'mosev2':
        ``<folder>/MOSEv2`` (``meta.json`` and ``Annotations``) and
        ``<folder>/pred``; 'lvos': ``<folder>/LVOS`` (``valid_meta.json``,
        ``Annotations``, the two video lists) and ``<folder>/results``.
    folder : str or os.PathLike
        Created if missing; it must not hold files already.

    Returns
    -------
    dict
        The paths written (``davis_root`` and ``results``; ``gt_root`` and
        ``pred_root`` (and ``meta``); ``lvos_root``, ``results``,
        ``unseen_videos`` and ``unsupervised_videos``).
    """
    if kind not in ("davis", "sav", "mosev2", "lvos"):
        raise ValueError(f"kind must be 'davis', 'sav', 'mosev2' or 'lvos', got {kind!r}")
    folder = os.fspath(folder)
    if os.path.isdir(folder) and os.listdir(folder):
        raise ValueError(f"demo folder {folder} is not empty")
    os.makedirs(folder, exist_ok=True)
    shapes = (("bear", 2, dict(moving=True)), ("kite", 3, dict(deforming=True, touching=True)),
              ("car", 1, dict(vanishing=(8, 14))))
    truth = {name: render_sequence(24, 120, 160, objects=n, seed=seed + k, **kw)
             for k, (name, n, kw) in enumerate(shapes)}
    results = {name: perturb(labels, seed=seed + k, shift=(1, 2), jitter=1, dilate=k % 2, noise=0.01,
                             missing_frames=(10, 13) if k == 0 else None)
               for k, (name, labels) in enumerate(truth.items())}
    if kind == "mosev2":
        paths = write_mosev2(os.path.join(folder, "MOSEv2"), truth)
        write_mosev2_predictions(os.path.join(folder, "pred"), results)
        return {"meta": paths["meta"], "gt_root": paths["gt_root"], "pred_root": os.path.join(folder, "pred")}
    if kind == "lvos":
        root = os.path.join(folder, "LVOS")
        write_lvos(root, truth, unseen=["car"], unsupervised=["bear"])
        write_lvos_results(os.path.join(folder, "results"), results)
        return {"lvos_root": root, "results": os.path.join(folder, "results"),
                "unseen_videos": os.path.join(root, "unseen_videos.txt"),
                "unsupervised_videos": os.path.join(root, "unsupervised_videos.txt")}
    if kind == "davis":
        root = os.path.join(folder, "DAVIS")
        write_davis(root, truth, void={name: void_mask(labels, seed=seed) for name, labels in truth.items()},
                    unsupervised=truth)
        write_davis_results(os.path.join(folder, "results"), results)
        return {"davis_root": root, "results": os.path.join(folder, "results")}
    write_sav(os.path.join(folder, "gt"), truth)
    write_sav(os.path.join(folder, "pred"), results)
    return {"gt_root": os.path.join(folder, "gt"), "pred_root": os.path.join(folder, "pred")}
