"""Synthetic YouTube-VIS data: ground truth and results in the 2019/2021 JSON format.

(This module is longer than 800 lines because it holds three generators that share the
format's helpers: dense adversarial scenarios, the suspect-input cases and the run-based
benchmark preset.)

The evaluators of video instance segmentation (YouTube-VIS AP, HQ-YTVIS Tube-Boundary AP)
are tested and benchmarked on data made here, never on real videos: every generator is
deterministic (``numpy.random.default_rng(seed)``) and returns plain JSON-ready Python
objects, a ground-truth ``dict`` and a results ``list``.

Ground truth (``dict``)
    ``videos``: ``id``, ``width``, ``height``, ``length``, ``file_names``;
    ``annotations``: ``id``, ``video_id``, ``category_id``, ``segmentations`` (one entry per
    frame: compressed RLE, uncompressed RLE, polygons, or ``None`` where the object is
    absent), ``bboxes`` and ``areas`` (``None`` where absent), ``iscrowd``, ``width``,
    ``height``, ``length`` (1, as in the released files); ``categories``: ``id``, ``name``,
    ``supercategory``.
Results (``list``)
    ``video_id``, ``category_id``, ``score``, ``segmentations`` (per frame: compressed RLE
    with a ``str`` ``counts``, or ``None``).

Entry points:

- :func:`generate` with a :class:`SyntheticVisConfig`: small adversarial sets (objects
  appearing late, leaving early, reappearing; absent frames; touching and tiny objects;
  crowds; score ties; more than 100 results in a video; results for categories without
  ground truth; odd frame sizes; shifted, dilated, eroded and noisy copies of tracks,
  false positives, wrong categories; all-zero masks given as RLE).
- :func:`scenario` and :data:`SCENARIOS`: the named configurations the tests use.
- :func:`ytvis_val_like`: a YouTube-VIS-2019-val-sized set for benchmarks (about 300
  videos of ~30 frames at 720x1280 and 480x640), built from per-column runs so that it
  takes seconds, not minutes.
- :func:`suspect_inputs`: small cases of input the official code accepts badly or
  refuses (a segmentation list whose length is not the video's, an RLE of another size,
  a result for an unknown video, ...).
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Dict, List, Optional, Sequence, Tuple

import cv2
import numpy as np
import pycocotools.mask as mask_utils

__all__ = [
    "SCENARIOS",
    "SyntheticVisConfig",
    "generate",
    "scenario",
    "suspect_inputs",
    "ytvis_val_like", "write_demo"]

#: visibility patterns of a track over the frames of its video
PATTERNS = ("full", "late", "early", "reappear", "single")
#: per-frame formats of a ground-truth segmentation
GT_FORMATS = ("rle", "uncompressed", "polygon")


@dataclasses.dataclass(frozen=True)
class SyntheticVisConfig:
    """What :func:`generate` makes.  Ranges ``(lo, hi)`` are inclusive.

    Parameters
    ----------
    num_videos : int
        Number of videos.
    frame_sizes : sequence of (int, int)
        ``(height, width)`` of the videos, used in turn (video ``i`` gets
        ``frame_sizes[i % len(frame_sizes)]``).
    num_frames : (int, int)
        Range of the number of frames of a video.
    num_categories : int
        Number of categories (ids ``1..num_categories``).
    categories_without_gt : int
        The last this many categories get no ground truth (results may still name them).
    tracks_per_video : (int, int)
        Range of the number of ground-truth tracks of a video.
    videos_without_gt : int
        The last this many videos get no ground truth (results may still name them).
    patterns : sequence of str
        Visibility patterns drawn for the tracks: ``"full"`` (every frame), ``"late"``
        (appears after the first frame), ``"early"`` (leaves before the last frame),
        ``"reappear"`` (absent for a while in the middle), ``"single"`` (one frame).
        Absent frames are ``None``.
    gt_formats : sequence of str
        Formats drawn for the ground truth: ``"rle"`` (compressed, ``str`` counts),
        ``"uncompressed"`` (``counts`` a list of ints), ``"polygon"``.
    mixed_formats : bool
        Draw the format per frame instead of per track.
    crowd_fraction : float
        Share of tracks made crowds (``iscrowd=1``, a large region over several blobs).
    empty_frame_fraction : float
        Share of a track's present frames whose mask is all zeros (given as RLE, area 0).
    touching_fraction : float
        Share of tracks made as a pair cut out of one shape (the two touch).
    tiny_fraction : float
        Share of tracks of 1-6 pixels.
    float_polygon_areas : bool
        Give polygon frames the polygon's own area (a float, as COCO does) instead of the
        area of the rasterised mask.
    results_per_track : (int, int)
        Range of the number of results made from each ground-truth track.
    false_positives : (int, int)
        Range of the number of results per video that follow no track.
    wrong_category_fraction : float
        Share of results made from a track but given another category.
    results_for_categories_without_gt : int
        Results per video (on a few videos) of the categories without ground truth.
    result_none_fraction : float
        Share of a result's frames that are ``None`` (else frames without the object are
        all-zero RLEs).
    temporal_jitter : bool
        Let results start late, stop early or continue where the track is absent.
    score_levels : int or None
        Scores drawn from this many values ``k / score_levels`` (many ties); ``None``:
        uniform scores rounded to 6 decimals.
    crowded_video_results : int
        Extra results (duplicates and noise, tied scores) in the first video, so that it
        has more than ``maxDets=100``.
    result_size_keys : bool
        Give each result the ``height`` and ``width`` of its video (HQ-YTVIS' boundary
        code needs them for ``None`` frames of results).
    """

    num_videos: int = 6
    frame_sizes: Sequence[Tuple[int, int]] = ((48, 64), (37, 53))
    num_frames: Tuple[int, int] = (5, 9)
    num_categories: int = 4
    categories_without_gt: int = 1
    tracks_per_video: Tuple[int, int] = (1, 4)
    videos_without_gt: int = 1
    patterns: Sequence[str] = PATTERNS
    gt_formats: Sequence[str] = GT_FORMATS
    mixed_formats: bool = False
    crowd_fraction: float = 0.0
    empty_frame_fraction: float = 0.0
    touching_fraction: float = 0.0
    tiny_fraction: float = 0.0
    float_polygon_areas: bool = False
    results_per_track: Tuple[int, int] = (1, 3)
    false_positives: Tuple[int, int] = (0, 2)
    wrong_category_fraction: float = 0.1
    results_for_categories_without_gt: int = 1
    result_none_fraction: float = 0.0
    temporal_jitter: bool = True
    score_levels: Optional[int] = None
    crowded_video_results: int = 0
    result_size_keys: bool = False


# ---------------------------------------------------------------------------
# RLE helpers
# ---------------------------------------------------------------------------

def _as_str(rle: dict) -> dict:
    """A compressed RLE with ``str`` counts (as JSON holds it)."""
    c = rle["counts"]
    return {"size": [int(rle["size"][0]), int(rle["size"][1])],
            "counts": c.decode("ascii") if isinstance(c, bytes) else c}


def _encode(mask: np.ndarray) -> dict:
    """Compressed RLE (``str`` counts) of a 2-D mask."""
    return _as_str(mask_utils.encode(np.asfortranarray(mask, dtype=np.uint8)))


def _uncompressed(mask: np.ndarray) -> dict:
    """Uncompressed RLE (``counts`` a list of ints, first run of zeros) of a 2-D mask."""
    flat = np.asarray(mask, np.uint8).ravel(order="F")
    change = np.flatnonzero(np.diff(flat)) + 1
    edges = np.concatenate([[0], change, [flat.size]])
    runs = np.diff(edges).tolist()
    if flat.size and flat[0]:
        runs = [0] + runs
    return {"counts": [int(r) for r in runs], "size": [int(mask.shape[0]), int(mask.shape[1])]}


def _bbox(rle: dict) -> List[float]:
    return [float(v) for v in mask_utils.toBbox(rle)]


def _score(rng, cfg: SyntheticVisConfig) -> float:
    if cfg.score_levels:
        return float(int(rng.integers(1, cfg.score_levels + 1)) / cfg.score_levels)
    return round(float(rng.uniform(0.001, 1.0)), 6)


# ---------------------------------------------------------------------------
# dense shapes (small frames)
# ---------------------------------------------------------------------------

def _shape(rng, h: int, w: int, cy: float, cx: float, ry: float, rx: float, kind: int) -> np.ndarray:
    """A mask of one of four kinds centred near ``(cy, cx)``; may cross the border."""
    yy, xx = np.mgrid[:h, :w]
    m = np.zeros((h, w), np.uint8)
    ry, rx = max(ry, 0.6), max(rx, 0.6)
    r = ((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2
    if kind == 0:  # ellipse
        m[r <= 1] = 1
    elif kind == 1:  # box
        m[int(max(0, np.floor(cy - ry))):int(max(0, np.ceil(cy + ry))),
          int(max(0, np.floor(cx - rx))):int(max(0, np.ceil(cx + rx)))] = 1
    elif kind == 2:  # ring: a hole
        m[(r <= 1) & (r >= 0.3)] = 1
    else:  # two blobs: two components
        m[r <= 0.5] = 1
        r2 = ((yy - cy - ry) / (ry / 2 + 0.5)) ** 2 + ((xx - cx + rx) / (rx / 2 + 0.5)) ** 2
        m[r2 <= 1] = 1
    return m


def _polygon(rng, cy: float, cx: float, ry: float, rx: float, parts: int) -> List[List[float]]:
    """A star-shaped polygon (or two) around ``(cy, cx)``, coordinates ``x, y`` in pixels."""
    polys = []
    for p in range(parts):
        n = int(rng.integers(3, 9))
        ang = np.sort(rng.uniform(0, 2 * np.pi, n))
        rad = rng.uniform(0.5, 1.0, n)
        oy, ox = (0.0, 0.0) if p == 0 else (ry * 1.2, rx * 1.2)
        xs = cx + ox + rx * rad * np.cos(ang)
        ys = cy + oy + ry * rad * np.sin(ang)
        poly = np.empty(2 * n)
        poly[0::2], poly[1::2] = np.round(xs, 2), np.round(ys, 2)
        polys.append([float(v) for v in poly])
    return polys


def _polygon_area(polys: List[List[float]]) -> float:
    """The summed shoelace area of the parts (what COCO stores for polygons)."""
    total = 0.0
    for p in polys:
        x, y = np.asarray(p[0::2]), np.asarray(p[1::2])
        total += 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))
    return total


def _visibility(rng, n: int, pattern: str) -> np.ndarray:
    present = np.ones(n, bool)
    if n == 1:
        return present
    if pattern == "late":
        present[: int(rng.integers(1, n))] = False
    elif pattern == "early":
        present[int(rng.integers(1, n)):] = False
    elif pattern == "reappear" and n >= 3:
        a = int(rng.integers(1, n - 1))
        b = int(rng.integers(a + 1, n))
        present[a:b] = False
    elif pattern == "single":
        present[:] = False
        present[int(rng.integers(0, n))] = True
    return present


class _Track:
    """A ground-truth track while it is made: per-frame masks (``None`` where absent) and
    the per-frame JSON segmentations and areas."""

    def __init__(self, masks, segs, areas, category, crowd):
        self.masks, self.segs, self.areas = masks, segs, areas
        self.category, self.crowd = category, crowd


def _motion(rng, h, w, n, tiny):
    cy, cx = rng.uniform(-0.1 * h, 1.1 * h), rng.uniform(-0.1 * w, 1.1 * w)
    vy, vx = rng.normal(0, 0.04 * h), rng.normal(0, 0.04 * w)
    if tiny:
        ry, rx = rng.uniform(0.2, 1.3), rng.uniform(0.2, 1.3)
        cy, cx = rng.uniform(0, h), rng.uniform(0, w)
        vy, vx = rng.choice([-1.0, 0.0, 1.0]), rng.choice([-1.0, 0.0, 1.0])
    else:
        ry, rx = rng.uniform(0.08, 0.35) * h + 0.5, rng.uniform(0.08, 0.35) * w + 0.5
    grow = rng.uniform(-0.04, 0.04)
    return [(cy + vy * t, cx + vx * t, ry * (1 + grow * t), rx * (1 + grow * t)) for t in range(n)]


def _make_track(rng, cfg, h, w, n, category, crowd=False, tiny=False, masks=None):
    """One ground-truth track; ``masks`` given: the present frames' masks (touching pairs)."""
    if masks is None:
        present = _visibility(rng, n, str(rng.choice(list(cfg.patterns))))
        path = _motion(rng, h, w, n, tiny)
        kind = int(rng.integers(0, 4)) if not tiny else int(rng.integers(0, 2))
        if crowd:
            kind = 3
            path = [(cy, cx, ry * 1.5, rx * 1.5) for cy, cx, ry, rx in path]
        masks = [(_shape(rng, h, w, *path[t], kind) if present[t] else None) for t in range(n)]
    else:
        path = None
    track_format = str(rng.choice(list(cfg.gt_formats)))
    segs, areas, out_masks = [], [], []
    for t in range(n):
        m = masks[t]
        if m is None:
            segs.append(None), areas.append(None), out_masks.append(None)
            continue
        fmt = str(rng.choice(list(cfg.gt_formats))) if cfg.mixed_formats else track_format
        if cfg.empty_frame_fraction and rng.random() < cfg.empty_frame_fraction:
            m = np.zeros((h, w), np.uint8)
            fmt = "rle" if fmt == "polygon" else fmt
        if fmt == "polygon" and path is not None and not crowd and min(h, w) > 2:
            cy, cx, ry, rx = path[t]
            polys = _polygon(rng, cy, cx, max(ry, 1.0), max(rx, 1.0), 1 + int(rng.random() < 0.25))
            m = mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(polys, h, w)))
            seg = polys
            area = _polygon_area(polys) if cfg.float_polygon_areas else int(m.sum())
        elif fmt == "uncompressed":
            seg, area = _uncompressed(m), int(m.sum())
        else:
            seg, area = _encode(m), int(m.sum())
        segs.append(seg), areas.append(area), out_masks.append(m)
    return _Track(out_masks, segs, areas, category, crowd)


def _touching_pair(rng, cfg, h, w, n, cats):
    """Two tracks cut out of one shape along a row or a column: they touch."""
    present = _visibility(rng, n, str(rng.choice(list(cfg.patterns))))
    path = _motion(rng, h, w, n, False)
    kind = int(rng.integers(0, 3))
    axis = int(rng.integers(0, 2))
    a_masks, b_masks = [], []
    for t in range(n):
        if not present[t]:
            a_masks.append(None), b_masks.append(None)
            continue
        m = _shape(rng, h, w, *path[t], kind)
        cut = int(round(path[t][axis]))
        a, b = m.copy(), m.copy()
        if axis == 0:
            a[cut:], b[:cut] = 0, 0
        else:
            a[:, cut:], b[:, :cut] = 0, 0
        a_masks.append(a), b_masks.append(b)
    c1 = int(rng.choice(cats))
    c2 = c1 if rng.random() < 0.7 else int(rng.choice(cats))
    return [_make_track(rng, cfg, h, w, n, c1, masks=a_masks),
            _make_track(rng, cfg, h, w, n, c2, masks=b_masks)]


# ---------------------------------------------------------------------------
# results from tracks (dense)
# ---------------------------------------------------------------------------

def _shifted(m, dy, dx):
    out = np.zeros_like(m)
    h, w = m.shape
    ys, yd = (slice(0, h - dy), slice(dy, h)) if dy >= 0 else (slice(-dy, h), slice(0, h + dy))
    xs, xd = (slice(0, w - dx), slice(dx, w)) if dx >= 0 else (slice(-dx, w), slice(0, w + dx))
    out[yd, xd] = m[ys, xs]
    return out


def _spatial(rng, kind, params, m):
    """One of the spatial changes of a result's frame, ``params`` fixed per result."""
    if kind == "shift":
        return _shifted(m, *params)
    if kind == "dilate":
        return cv2.dilate(m, np.ones((3, 3), np.uint8), iterations=params)
    if kind == "erode":
        return cv2.erode(m, np.ones((3, 3), np.uint8), iterations=params)
    if kind == "noise":  # flip pixels near the outline
        edge = cv2.dilate(m, np.ones((3, 3), np.uint8)) != cv2.erode(m, np.ones((3, 3), np.uint8))
        flip = edge & (rng.random(m.shape) < params)
        return (m ^ flip).astype(np.uint8)
    return m.copy()


def _results_for_track(rng, cfg, track: _Track, vid, h, w, cats, cats_without_gt):
    out = []
    n = len(track.masks)
    present = [t for t in range(n) if track.masks[t] is not None]
    if not present:
        return out
    for _ in range(int(rng.integers(cfg.results_per_track[0], cfg.results_per_track[1] + 1))):
        kind = str(rng.choice(["same", "shift", "dilate", "erode", "noise"]))
        params = {"shift": (int(rng.integers(-3, 4)), int(rng.integers(-3, 4))),
                  "dilate": int(rng.integers(1, 3)), "erode": int(rng.integers(1, 3)),
                  "noise": float(rng.uniform(0.1, 0.5))}.get(kind)
        frames = []
        first, last = present[0], present[-1]
        if cfg.temporal_jitter and rng.random() < 0.4:
            first = min(last, first + int(rng.integers(0, 3)))
            last = max(first, last - int(rng.integers(0, 3)))
        extend = cfg.temporal_jitter and rng.random() < 0.3
        near = None
        for t in range(n):
            m = track.masks[t]
            if m is not None:
                near = m
            inside = first <= t <= last
            if m is not None and inside:
                frames.append(_spatial(rng, kind, params, m))
            elif extend and near is not None:  # the result goes on where the track is absent
                frames.append(_spatial(rng, kind, params, near))
            else:
                frames.append(None)
        cat = track.category
        if rng.random() < cfg.wrong_category_fraction:
            cat = int(rng.choice(cats + cats_without_gt))
        out.append(_result(rng, cfg, vid, cat, frames, h, w))
    return out


def _result(rng, cfg, vid, cat, frames, h, w, score=None):
    segs = []
    for m in frames:
        if m is None:
            if cfg.result_none_fraction and rng.random() < cfg.result_none_fraction:
                segs.append(None)
            else:
                segs.append(_encode(np.zeros((h, w), np.uint8)))
        else:
            segs.append(_encode(m))
    r = {"video_id": vid, "category_id": int(cat), "score": _score(rng, cfg) if score is None else score,
         "segmentations": segs}
    if cfg.result_size_keys:
        r["height"], r["width"] = h, w
    return r


def _random_frames(rng, cfg, h, w, n):
    present = _visibility(rng, n, str(rng.choice(list(cfg.patterns))))
    path = _motion(rng, h, w, n, rng.random() < cfg.tiny_fraction)
    kind = int(rng.integers(0, 4))
    return [(_shape(rng, h, w, *path[t], kind) if present[t] else None) for t in range(n)]


# ---------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------

def generate(config: Optional[SyntheticVisConfig] = None, seed: int = 0, **overrides):
    """Ground truth and results of YouTube-VIS format.

    Parameters
    ----------
    config : SyntheticVisConfig, optional
        What to make; the defaults when omitted.
    seed : int
        Seed of ``numpy.random.default_rng``: the same seed and configuration give the
        same data.
    **overrides
        Fields of :class:`SyntheticVisConfig` replacing those of ``config``.

    Returns
    -------
    gt : dict
        Ground truth (``videos``, ``annotations``, ``categories``).
    results : list of dict
        Results (``video_id``, ``category_id``, ``score``, ``segmentations``).

    Examples
    --------
    >>> from boundary_api.video.synthetic_vis import generate
    >>> gt, results = generate(seed=3, num_videos=2)
    >>> sorted(gt)
    ['annotations', 'categories', 'videos']
    """
    cfg = dataclasses.replace(config or SyntheticVisConfig(), **overrides)
    rng = np.random.default_rng(seed)
    cats_all = list(range(1, cfg.num_categories + 1))
    n_empty = min(cfg.categories_without_gt, cfg.num_categories - 1)
    cats = cats_all[: cfg.num_categories - n_empty]
    cats_without_gt = cats_all[cfg.num_categories - n_empty:]
    categories = [{"id": c, "name": f"category{c}", "supercategory": "object"} for c in cats_all]
    videos, annotations, results = [], [], []
    for i in range(cfg.num_videos):
        vid = i + 1
        h, w = (int(v) for v in cfg.frame_sizes[i % len(cfg.frame_sizes)])
        n = int(rng.integers(cfg.num_frames[0], cfg.num_frames[1] + 1))
        videos.append({"id": vid, "width": w, "height": h, "length": n,
                       "file_names": [f"video{vid:04d}/{t:05d}.jpg" for t in range(n)]})
        tracks: List[_Track] = []
        if i < cfg.num_videos - cfg.videos_without_gt:
            k = int(rng.integers(cfg.tracks_per_video[0], cfg.tracks_per_video[1] + 1))
            while len(tracks) < k:
                if rng.random() < cfg.touching_fraction and min(h, w) >= 4:
                    tracks.extend(_touching_pair(rng, cfg, h, w, n, cats))
                    continue
                crowd = rng.random() < cfg.crowd_fraction
                tiny = not crowd and rng.random() < cfg.tiny_fraction
                tracks.append(_make_track(rng, cfg, h, w, n, int(rng.choice(cats)), crowd, tiny))
        for tr in tracks:
            annotations.append({
                "id": len(annotations) + 1, "video_id": vid, "category_id": tr.category,
                "segmentations": tr.segs,
                "bboxes": [None if s is None else _bbox(_frame_rle(s, h, w)) for s in tr.segs],
                "areas": tr.areas, "iscrowd": int(tr.crowd), "width": w, "height": h, "length": 1})
            results.extend(_results_for_track(rng, cfg, tr, vid, h, w, cats, cats_without_gt))
        for _ in range(int(rng.integers(cfg.false_positives[0], cfg.false_positives[1] + 1))):
            results.append(_result(rng, cfg, vid, int(rng.choice(cats_all)), _random_frames(rng, cfg, h, w, n), h, w))
        if cats_without_gt and i % 3 == 0:
            for _ in range(cfg.results_for_categories_without_gt):
                results.append(_result(rng, cfg, vid, int(rng.choice(cats_without_gt)),
                                       _random_frames(rng, cfg, h, w, n), h, w))
        if i == 0 and cfg.crowded_video_results:
            base = [tr for tr in tracks if any(m is not None for m in tr.masks)]
            for j in range(cfg.crowded_video_results):
                if base and j % 2 == 0:
                    tr = base[j % len(base)]
                    frames = [None if m is None else _spatial(rng, "noise", 0.3, m) for m in tr.masks]
                    cat = tr.category
                else:
                    frames, cat = _random_frames(rng, cfg, h, w, n), int(rng.choice(cats))
                results.append(_result(rng, cfg, vid, cat, frames, h, w,
                                       score=float(int(rng.integers(1, 5)) / 4)))
    order = rng.permutation(len(results))  # results files are in no particular order
    results = [results[j] for j in order]
    return {"videos": videos, "annotations": annotations, "categories": categories}, results


def _frame_rle(seg, h, w):
    """The compressed RLE of one JSON frame segmentation (for boxes)."""
    if isinstance(seg, list):
        return mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
    if isinstance(seg["counts"], list):
        return mask_utils.frPyObjects(seg, h, w)
    return seg


#: the named configurations of :func:`scenario`: what each one is for
SCENARIOS: Dict[str, SyntheticVisConfig] = {
    # lifecycles and formats: late, early, reappearing and single-frame tracks, absent
    # frames (None) in ground truth and results, all three ground-truth formats mixed per
    # frame, all-zero frames, temporal jitter of results, wrong categories
    "lifecycle": SyntheticVisConfig(
        num_videos=8, frame_sizes=((48, 64), (37, 53), (64, 48)), num_frames=(4, 10),
        mixed_formats=True, empty_frame_fraction=0.1, result_none_fraction=0.3,
        wrong_category_fraction=0.15, result_size_keys=True),
    # touching and tiny objects on odd and degenerate frame sizes (1xN, Nx1, 7x9, ...)
    "touching_tiny": SyntheticVisConfig(
        num_videos=10, frame_sizes=((1, 37), (29, 1), (7, 9), (13, 17), (5, 5), (31, 47), (2, 3)),
        num_frames=(3, 7), tracks_per_video=(2, 4), touching_fraction=0.5, tiny_fraction=0.4,
        empty_frame_fraction=0.1, result_none_fraction=0.2, gt_formats=("rle", "uncompressed"),
        result_size_keys=True),
    # crowds: crowd tracks among ordinary ones, results on them
    "crowds": SyntheticVisConfig(
        num_videos=6, frame_sizes=((40, 56),), num_frames=(4, 8), tracks_per_video=(2, 5),
        crowd_fraction=0.35, results_per_track=(1, 4), result_none_fraction=0.2,
        result_size_keys=True),
    # tied scores, more than 100 results in one video, results of categories without
    # ground truth, polygons with their float areas
    "ties_many": SyntheticVisConfig(
        num_videos=5, frame_sizes=((24, 32),), num_frames=(3, 6), num_categories=5,
        categories_without_gt=2, score_levels=4, crowded_video_results=130,
        results_for_categories_without_gt=3, float_polygon_areas=True,
        gt_formats=("polygon", "rle"), result_size_keys=True),
    # polygons on long tracks with their float areas: avg_area is NumPy's mean (pairwise
    # summation), which is not Python's sum / len for 9 or more float areas
    "float_areas": SyntheticVisConfig(
        num_videos=6, frame_sizes=((40, 50), (31, 29)), num_frames=(12, 20), tracks_per_video=(2, 4),
        videos_without_gt=0, patterns=("full", "full", "late"), gt_formats=("polygon",),
        float_polygon_areas=True, results_per_track=(1, 2), result_size_keys=True),
    # realistic frame sizes, few frames (the official code loops in Python)
    "large_frames": SyntheticVisConfig(
        num_videos=4, frame_sizes=((720, 1280), (480, 640), (721, 1279), (151, 199)), num_frames=(2, 3),
        tracks_per_video=(1, 3), results_per_track=(1, 2), false_positives=(0, 1),
        videos_without_gt=0, result_none_fraction=0.2, gt_formats=("uncompressed", "rle", "polygon"),
        result_size_keys=True),
    # everything at once on more videos (slow tier)
    "mixed": SyntheticVisConfig(
        num_videos=40, frame_sizes=((48, 64), (1, 23), (33, 45), (64, 64), (9, 7)), num_frames=(2, 12),
        num_categories=6, categories_without_gt=1, tracks_per_video=(0, 5), videos_without_gt=3,
        mixed_formats=True, crowd_fraction=0.1, empty_frame_fraction=0.05, touching_fraction=0.2,
        tiny_fraction=0.15, float_polygon_areas=True, results_per_track=(0, 4), false_positives=(0, 3),
        result_none_fraction=0.15, score_levels=20, crowded_video_results=110, result_size_keys=True),
}


def scenario(name: str, seed: int = 0):
    """The ground truth and results of a named configuration of :data:`SCENARIOS`.

    Parameters
    ----------
    name : str
        A key of :data:`SCENARIOS`.
    seed : int
        Seed of the generator.

    Returns
    -------
    gt : dict
    results : list of dict
    """
    if name not in SCENARIOS:
        raise KeyError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    return generate(SCENARIOS[name], seed=seed)


# ---------------------------------------------------------------------------
# suspect inputs
# ---------------------------------------------------------------------------

def suspect_inputs(seed: int = 0) -> Dict[str, dict]:
    """Small cases of input that the official evaluators accept badly or refuse.

    Each case is a small valid set (a few videos of 12x16 frames) with one defect.

    Parameters
    ----------
    seed : int
        Seed of the generator.

    Returns
    -------
    dict
        Case name -> ``{"gt": dict or str, "results": list or str, "note": str}``; a ``str``
        is the text of a file that is not JSON.
        The cases:

        - ``gt_length_short``, ``gt_length_long``: a ground-truth ``segmentations`` list
          shorter / longer than the video.
        - ``result_length_short``, ``result_length_long``: the same for a result.
        - ``result_rle_other_size``: a result frame whose RLE is of another size than the
          video (transposed), ``gt_rle_other_size``: the same in the ground truth.
        - ``unknown_video``: a result for a video id not in the ground truth.
        - ``unknown_category``: a result of a category id not in the ground truth.
        - ``empty_results``: an empty results list.
        - ``result_without_segmentations``: results with ``bboxes`` only.
        - ``result_none_frames_no_size``: results with ``None`` frames and no
          ``height``/``width`` keys; ``result_none_frames_other_size``: with a
          ``height``/``width`` that is not the video's.
        - ``gt_none_frames_no_size``: ground truth with ``None`` frames and no
          ``height``/``width`` keys; ``gt_none_frames_other_size``: with them swapped.
        - ``empty_list_frames``: frames given as ``[]`` (an empty polygon list).
        - ``segmentations_refined``: ground truth carrying ``segmentations_refined`` beside
          ``segmentations`` (HQ-YTVIS reads one or the other depending on the step).
        - ``all_empty_union``: a result and a track that are empty in every frame.
        - ``invalid_json``: a results file that is not JSON; ``invalid_json_gt``: a
          ground-truth file that is not JSON (``gt`` is then a ``str``).
    """
    base_cfg = SyntheticVisConfig(num_videos=3, frame_sizes=((12, 16),), num_frames=(3, 4),
                                  num_categories=2, categories_without_gt=0, tracks_per_video=(1, 2),
                                  videos_without_gt=0, patterns=("full", "late"), gt_formats=("rle",),
                                  results_per_track=(1, 2), false_positives=(0, 0),
                                  wrong_category_fraction=0.0, results_for_categories_without_gt=0,
                                  temporal_jitter=False, result_size_keys=True)
    cases: Dict[str, dict] = {}

    def base(k):
        gt, res = generate(base_cfg, seed=seed * 1000 + k)
        return gt, res

    def add(name, k, note, edit):
        gt, res = base(k)
        res = edit(gt, res)
        cases[name] = {"gt": gt, "results": res, "note": note}

    def gt_short(gt, res):
        a = gt["annotations"][0]
        for key in ("segmentations", "bboxes", "areas"):
            a[key] = a[key][:-1]
        return res

    def gt_long(gt, res):
        a = gt["annotations"][0]
        v = gt["videos"][a["video_id"] - 1]
        m = np.zeros((v["height"], v["width"]), np.uint8)
        m[2:6, 3:9] = 1
        a["segmentations"].append(_encode(m)), a["areas"].append(int(m.sum())), a["bboxes"].append(_bbox(_encode(m)))
        return res

    def res_short(gt, res):
        res[0]["segmentations"] = res[0]["segmentations"][:-1]
        return res

    def res_long(gt, res):
        v = gt["videos"][res[0]["video_id"] - 1]
        m = np.zeros((v["height"], v["width"]), np.uint8)
        m[1:5, 2:7] = 1
        res[0]["segmentations"].append(_encode(m))
        return res

    def res_other_size(gt, res):
        r = res[0]
        v = gt["videos"][r["video_id"] - 1]
        m = np.zeros((v["width"], v["height"]), np.uint8)  # transposed
        m[3:9, 2:8] = 1
        r["segmentations"][0] = _encode(m)
        return res

    def gt_other_size(gt, res):
        a = gt["annotations"][0]
        v = gt["videos"][a["video_id"] - 1]
        m = np.zeros((v["height"] + 2, v["width"] + 3), np.uint8)
        m[3:9, 2:8] = 1
        a["segmentations"][-1], a["areas"][-1], a["bboxes"][-1] = _encode(m), int(m.sum()), _bbox(_encode(m))
        return res

    def unknown_video(gt, res):
        r = copy.deepcopy(res[0])
        r["video_id"] = max(v["id"] for v in gt["videos"]) + 7
        return res + [r]

    def unknown_category(gt, res):
        r = copy.deepcopy(res[0])
        r["category_id"] = max(c["id"] for c in gt["categories"]) + 5
        r["score"] = 0.999
        return res + [r]

    def no_segmentations(gt, res):
        return [{"video_id": r["video_id"], "category_id": r["category_id"], "score": r["score"],
                 "bboxes": [_bbox(s) for s in r["segmentations"]]} for r in res]

    def none_no_size(gt, res):
        for r in res:
            r["segmentations"][-1] = None
            r.pop("height", None), r.pop("width", None)
        return res

    def gt_none_no_size(gt, res):
        for a in gt["annotations"]:
            a["segmentations"][0], a["areas"][0], a["bboxes"][0] = None, None, None
            del a["height"], a["width"]
        return res

    def empty_lists(gt, res):
        a = gt["annotations"][0]
        a["segmentations"][0], a["areas"][0], a["bboxes"][0] = [], None, None
        res[0]["segmentations"][-1] = []
        return res

    def refined(gt, res):
        for a in gt["annotations"]:
            a["segmentations_refined"] = [
                None if s is None else _encode(_spatial(None, "dilate", 1, mask_utils.decode(s)))
                for s in a["segmentations"]]
        return res

    def res_none_other_size(gt, res):
        for r in res:
            r["segmentations"][-1] = None
            r["height"], r["width"] = r["height"] + 1, r["width"] + 2
        return res

    def gt_none_other_size(gt, res):
        for a in gt["annotations"]:
            a["segmentations"][0], a["areas"][0], a["bboxes"][0] = None, None, None
            a["height"], a["width"] = a["width"], a["height"]
        return res

    def all_empty(gt, res):
        a = gt["annotations"][0]
        v = gt["videos"][a["video_id"] - 1]
        z = _encode(np.zeros((v["height"], v["width"]), np.uint8))
        a["segmentations"] = [dict(z) for _ in a["segmentations"]]
        a["areas"] = [0 for _ in a["areas"]]
        a["bboxes"] = [[0.0, 0.0, 0.0, 0.0] for _ in a["bboxes"]]
        res.append({"video_id": a["video_id"], "category_id": a["category_id"], "score": 0.5,
                    "segmentations": [dict(z) for _ in a["segmentations"]]})
        return res

    add("gt_length_short", 1, "a ground-truth segmentations list one frame shorter than the video", gt_short)
    add("gt_length_long", 2, "a ground-truth segmentations list one frame longer than the video", gt_long)
    add("result_length_short", 3, "a result's segmentations list one frame shorter than the video", res_short)
    add("result_length_long", 4, "a result's segmentations list one frame longer than the video", res_long)
    add("result_rle_other_size", 5, "a result's first frame is an RLE of the transposed size", res_other_size)
    add("gt_rle_other_size", 6, "a ground-truth frame is an RLE of another size than its video", gt_other_size)
    add("unknown_video", 7, "a result for a video id the ground truth does not have", unknown_video)
    add("unknown_category", 8, "a result of a category id the ground truth does not have", unknown_category)
    add("empty_results", 9, "an empty results list", lambda gt, res: [])
    add("result_without_segmentations", 10, "results with per-frame bboxes and no segmentations",
        no_segmentations)
    add("result_none_frames_no_size", 11, "results whose last frame is None, without height/width",
        none_no_size)
    add("gt_none_frames_no_size", 12, "ground truth whose first frame is None, without height/width",
        gt_none_no_size)
    add("result_none_frames_other_size", 17, "results whose last frame is None, with a height/width "
        "that is not the video's", res_none_other_size)
    add("gt_none_frames_other_size", 18, "ground truth whose first frame is None, with height and width "
        "swapped", gt_none_other_size)
    add("empty_list_frames", 13, "a ground-truth and a result frame given as [] (no polygon)", empty_lists)
    add("segmentations_refined", 14, "ground truth with segmentations_refined (dilated by one pixel) "
        "beside segmentations", refined)
    add("all_empty_union", 15, "a track and a result that are all-zero RLEs in every frame", all_empty)
    gt, res = base(16)
    cases["invalid_json"] = {"gt": gt, "results": '[{"video_id": 1, "score": 0.5,',
                             "note": "a results file cut in the middle (not JSON)"}
    gt, res = base(19)
    cases["invalid_json_gt"] = {"gt": '{"videos": [{"id": 1, "width": 16,', "results": res,
                                "note": "a ground-truth file cut in the middle (not JSON)"}
    return cases


# ---------------------------------------------------------------------------
# the benchmark preset: per-column runs instead of dense frames
# ---------------------------------------------------------------------------

def _run_counts(x0: int, lo: np.ndarray, hi: np.ndarray, h: int, w: int) -> List[np.ndarray]:
    """Uncompressed RLE counts (column-major, first run of zeros) of masks given by runs:
    frame ``t`` holds rows ``lo[t, j]..hi[t, j]`` of column ``x0 + j`` (``hi < lo``: an
    empty column).  Made from the runs of all frames at once, never as dense frames."""
    n = lo.shape[0]
    t, j = np.nonzero(hi >= lo)
    if t.size == 0:
        return [np.array([h * w], np.int64) for _ in range(n)]
    starts = (x0 + j) * h + lo[t, j]
    ends = starts + (hi[t, j] - lo[t, j] + 1)
    same = t[1:] == t[:-1]
    joined = same & (starts[1:] == ends[:-1])  # a run that goes on in the next column
    first = np.concatenate([[True], ~joined])
    last = np.concatenate([~joined, [True]])
    s, e, f = starts[first], ends[last], t[first]
    new_frame = np.concatenate([[True], f[1:] != f[:-1]])
    prev_e = np.concatenate([[0], e[:-1]])
    prev_e[new_frame] = 0
    pairs = np.empty(2 * s.size, np.int64)
    pairs[0::2], pairs[1::2] = s - prev_e, e - s
    bounds = np.searchsorted(f, np.arange(n + 1))
    out = []
    for k in range(n):
        a, b = bounds[k], bounds[k + 1]
        if a == b:
            out.append(np.array([h * w], np.int64))
            continue
        tail = h * w - e[b - 1]
        c = pairs[2 * a:2 * b]
        out.append(np.concatenate([c, [tail]]) if tail else c)
    return out


def _compress(counts: List[np.ndarray], h: int, w: int) -> List[dict]:
    """Compressed RLEs (``str`` counts) of uncompressed counts."""
    objs = mask_utils.frPyObjects([{"counts": c.astype(np.uint32), "size": [h, w]} for c in counts], h, w)
    return [_as_str(o) for o in objs]


def _blob_runs(h, w, cy, cx, ry, rx, wobble, phase):
    """Runs ``(x0, lo, hi)`` of deformed ellipses (one per frame; the arguments are
    arrays over frames) clipped to the frame, over the columns any of them may touch."""
    rx = np.maximum(rx, 1.0)
    x0 = max(0, int(np.floor((cx - rx).min())))
    x1 = min(w, int(np.ceil((cx + rx).max())) + 1)
    x = np.arange(x0, max(x0, x1))[None, :]
    u = (x - cx[:, None]) / rx[:, None]
    half = ry[:, None] * np.sqrt(np.clip(1 - u * u, 0, None)) * (1 + wobble * np.sin(3 * np.pi * u + phase[:, None]))
    centre = cy[:, None] + 0.3 * ry[:, None] * wobble * np.cos(2 * np.pi * u + phase[:, None])
    lo = np.maximum(np.floor(centre - half).astype(np.int64), 0)
    hi = np.minimum(np.ceil(centre + half).astype(np.int64) - 1, h - 1)
    hi[np.abs(u) >= 1] = -1
    return x0, lo, hi


def _preset_track(rng, n):
    """Shape parameters (fractions of the frame, an array of frames x 6) of one moving,
    deforming blob, and the frames where it is present."""
    cy, cx = rng.uniform(0.2, 0.8), rng.uniform(0.2, 0.8)
    ry, rx = rng.uniform(0.08, 0.3), rng.uniform(0.05, 0.25)
    vy, vx = rng.normal(0, 0.005), rng.normal(0, 0.005)
    grow, wobble, phase = rng.uniform(-0.01, 0.01), rng.uniform(0.0, 0.25), rng.uniform(0, 2 * np.pi)
    present = _visibility(rng, n, str(rng.choice(["full"] * 5 + ["late", "early", "reappear"])))
    t = np.arange(n)
    params = np.stack([cy + vy * t, cx + vx * t, ry * (1 + grow * t), rx * (1 + grow * t),
                       np.full(n, wobble), phase + 0.1 * t], axis=1)
    return params, present


def _preset_counts(rng, params, h, w, dy=0.0, dx=0.0, grow=0.0, amp=0):
    """Counts of the blobs of ``params`` (frames x 6) moved by ``dy, dx``, grown by ``grow``
    pixels, their run ends moved by up to ``amp`` rows."""
    x0, lo, hi = _blob_runs(h, w, params[:, 0] * h + dy, params[:, 1] * w + dx, params[:, 2] * h + grow,
                            params[:, 3] * w + grow, params[0, 4], params[:, 5])
    if amp:
        lo = np.clip(lo + rng.integers(-amp, amp + 1, lo.shape), 0, h - 1)
        hi = np.where(hi >= 0, np.clip(hi + rng.integers(-amp, amp + 1, hi.shape), -1, h - 1), -1)
    return _run_counts(x0, lo, hi, h, w)


def ytvis_val_like(seed: int = 0, num_videos: int = 300, num_frames: Tuple[int, int] = (24, 36),
                   tracks_per_video: int = 3, results_per_video: Tuple[int, int] = (10, 20),
                   num_categories: int = 40,
                   frame_sizes: Sequence[Tuple[Tuple[int, int], float]] = (((720, 1280), 0.6),
                                                                           ((480, 640), 0.3),
                                                                           ((360, 640), 0.1))):
    """A YouTube-VIS-2019-val-sized set for benchmarks.

    Videos of ``num_frames`` frames at realistic sizes, ``tracks_per_video`` ground-truth
    tracks each (moving, deforming blobs; some appear late, leave early or reappear; the
    ground truth as uncompressed RLE with ``None`` for absent frames, as in the released
    annotation files), and ``results_per_video`` results per video as a model writes them
    (every frame a compressed RLE, all zeros where the object is not seen): shifted,
    grown, shrunk and noisy copies of the tracks, some starting late, some with another
    category, and false positives; scores with two decimals (ties).

    Parameters
    ----------
    seed : int
        Seed of ``numpy.random.default_rng``.
    num_videos : int
        Number of videos (YouTube-VIS 2019 val has 302).
    num_frames : (int, int)
        Inclusive range of the frames per video.
    tracks_per_video : int
        Ground-truth tracks per video.
    results_per_video : (int, int)
        Inclusive range of the results per video.
    num_categories : int
        Number of categories (YouTube-VIS 2019 has 40).
    frame_sizes : sequence of ((int, int), float)
        ``((height, width), weight)`` of the frame sizes drawn.

    Returns
    -------
    gt : dict
    results : list of dict

    Notes
    -----
    Every mask is made from per-column runs, never as a dense frame, so that the default
    300 videos (about 9,000 frames, 160,000 masks) take seconds rather than minutes.
    """
    rng = np.random.default_rng(seed)
    sizes = [s for s, _ in frame_sizes]
    weights = np.array([p for _, p in frame_sizes], float)
    weights /= weights.sum()
    cats = list(range(1, num_categories + 1))
    categories = [{"id": c, "name": f"category{c}", "supercategory": "object"} for c in cats]
    videos, annotations, results = [], [], []
    for i in range(num_videos):
        vid = i + 1
        h, w = (int(v) for v in sizes[int(rng.choice(len(sizes), p=weights))])
        n = int(rng.integers(num_frames[0], num_frames[1] + 1))
        videos.append({"id": vid, "width": w, "height": h, "length": n,
                       "file_names": [f"video{vid:04d}/{5 * t:05d}.jpg" for t in range(n)]})
        empty = _compress([np.array([h * w])], h, w)[0]
        tracks = []
        for _ in range(tracks_per_video):
            (params, present), cat = _preset_track(rng, n), int(rng.choice(cats))
            counts = _preset_counts(rng, params, h, w)
            rles = _compress(counts, h, w)
            areas = mask_utils.area(rles)
            boxes = mask_utils.toBbox(rles)
            annotations.append({
                "id": len(annotations) + 1, "video_id": vid, "category_id": cat,
                "segmentations": [{"counts": c.tolist(), "size": [h, w]} if p else None
                                  for c, p in zip(counts, present)],
                "bboxes": [[float(v) for v in b] if p else None for b, p in zip(boxes, present)],
                "areas": [int(a) if p else None for a, p in zip(areas, present)],
                "iscrowd": 0, "width": w, "height": h, "length": 1})
            tracks.append((params, present, cat))
        k = int(rng.integers(results_per_video[0], results_per_video[1] + 1))
        n_fp = int(rng.integers(1, 4))
        for j in range(k):
            if j >= k - n_fp:  # a false positive
                (params, present), cat = _preset_track(rng, n), int(rng.choice(cats))
            else:
                params, present, cat = tracks[j % len(tracks)]
                if rng.random() < 0.1:
                    cat = int(rng.choice(cats))
            dy, dx = (float(v) for v in rng.integers(-12, 13, 2))
            grow = float(rng.integers(-6, 7))
            amp = int(rng.integers(0, 4))
            first = int(rng.integers(0, 3))
            rles = _compress(_preset_counts(rng, params, h, w, dy, dx, grow, amp), h, w)
            segs = [r if p and t >= first else dict(empty) for t, (r, p) in enumerate(zip(rles, present))]
            results.append({"video_id": vid, "category_id": cat,
                            "score": round(float(rng.uniform(0.01, 1.0)), 2), "segmentations": segs})
    return {"videos": videos, "annotations": annotations, "categories": categories}, results


def write_demo(folder, *, seed: int = 0) -> dict:
    """A small generated YouTube-VIS set to try the evaluators on (``boundary-eval vis --demo``):
    ``<folder>/valid.json`` (ground truth: tracks appearing late, leaving early and
    reappearing, absent frames, RLE and polygons) and ``<folder>/results.json``.

    Parameters
    ----------
    folder : str or os.PathLike
        Where to write the two files; made if missing, refused (``ValueError``) if not empty.
    seed : int
        Seed of the generator (the ``lifecycle`` scenario of :data:`SCENARIOS`).

    Returns
    -------
    dict
        ``{"gt": path, "dt": path}``.
    """
    import json
    import os

    folder = os.fspath(folder)
    if os.path.isdir(folder) and os.listdir(folder):
        raise ValueError(f"demo folder {folder} is not empty")
    os.makedirs(folder, exist_ok=True)
    gt, results = scenario("lifecycle", seed=seed)
    paths = {"gt": os.path.join(folder, "valid.json"), "dt": os.path.join(folder, "results.json")}
    for key, doc in (("gt", gt), ("dt", results)):
        with open(paths[key], "w") as f:
            json.dump(doc, f)
    return paths
