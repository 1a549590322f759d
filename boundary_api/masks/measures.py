"""The segmentation measures of the Boundary IoU paper, side by side.

Cheng et al., "Boundary IoU: Improving Object-Centric Image Segmentation
Evaluation" (CVPR 2021) compare Mask IoU, pixel accuracy, Trimap IoU, the
boundary F-measure and Boundary IoU (its Table 1); Ahmadzadeh et al.,
"Multiscale IOU: A Metric for Evaluation of Salient Object Detection with Fine
Structures" (ICIP 2021) add Multiscale IoU.  This module computes all of them
with one definition of "boundary", on COCO run-length encodings, in Cython.

Definitions (``G`` ground truth, ``P`` prediction, ``|X|`` pixel count):

* contour ``X_1``: the pixels of ``X`` with a background pixel among their 8
  neighbours, pixels outside the image counting as background (exactly
  :func:`~boundary_api.masks.mask_to_boundary` at ``d = 1``);
* band ``X_d``: ``X_1`` dilated by a ``(2d+1) x (2d+1)`` square, clipped to the
  image (the pixels within Chebyshev distance ``d`` of the contour, both sides);
* ``d = dilation_pixels(h, w, dilation_ratio)`` as for Boundary IoU.

=====================  ==========================================================
pixel accuracy         ``|G & P| / |G|``
Mask IoU               ``|G & P| / |G | P|``
Trimap IoU             ``|G_d & G & P| / |G_d & (G | P)|``
F-measure              ``2 p r / (p + r)``, ``p = |P_1 & G_d| / |P_1|``,
                       ``r = |G_1 & P_d| / |G_1|`` (the paper's approximate form)
mF-measure             the mean of the F-measure over a list of ratios
                       (default :data:`MF_DILATION_RATIOS`)
Boundary IoU           ``|B(G) & B(P)| / |B(G) | B(P)|`` with the package's boundary
                       ``B(X) = X AND NOT erode(X, (2d+1)^2)`` (as
                       :func:`~boundary_api.masks.boundary_iou`)
min(Mask, Boundary)    the IoU of Boundary AP
Multiscale IoU         area under ``r(delta) = n(s(G) & s(P)) / n(s(G))`` over
                       ``delta = 1, 2, 4, .., 512`` (trapezoids, spacing 1/9)
=====================  ==========================================================

Boundary IoU's ``B(X)`` is ``X & X_{d-1}``: the pixels of ``X`` within distance
``d`` of the background, i.e. ``d`` pixels deep, as in the paper's reference code,
whereas ``X & X_d`` (Trimap IoU's inner band) is ``d + 1`` pixels deep.  The
issue's formula ``(G_d & G)`` for Boundary IoU is read with the package's
boundary, so that ``boundary_iou`` here is the function Boundary AP uses.

**0/0.**  Every ratio whose denominator is 0 is 0, as pycocotools and the
package do for the IoU of two empty masks: pixel accuracy with empty ``G``;
Mask, Boundary and Trimap IoU with both masks empty (Trimap IoU: empty ``G``);
precision with empty ``P``, recall with empty ``G``, and ``F = 0`` when
``p + r = 0``; Multiscale IoU's ``r(delta)`` with empty ``G``.  No function
returns NaN.

**Multiscale IoU** (the paper's choices, followed here): the "boundary" of an
object is its contour ``X_1`` (the paper's edge map of the binary mask; one
public implementation runs a Sobel filter instead, which marks pixels on both
sides of the edge, and adds 1 to numerator and denominator: not offered
here); ``s(X, delta)`` are the cells of a ``delta x delta`` grid anchored at the
image's top-left corner that hold a contour pixel, cells cut by the right and
bottom image edges counting as cells; ``r`` divides by the ground truth's cell
count, so MIoU is not symmetric; ``MIoU = sum_k (r_k + r_{k+1}) / 2 / (n - 1)``
over ``delta_k = 2^k``, ``k = 0 .. n-1`` (``n = num_scales = 10``), i.e. the area
under ``r`` with the scale axis mapped to [0, 1].

Every function takes two masks (``(H, W)`` arrays, nonzero = foreground, or COCO
RLE dicts) and returns a float, or two lists of them and returns a
``len(gt) x len(pred)`` float64 matrix (all masks of one call the same size), or,
with ``pairwise=True``, two lists of equal length and returns the ``len(gt)``
values of the pairs ``(gt[i], pred[i])`` (each pair its own size and ``d``).
Lists run on ``num_threads`` threads (default: all cores), the kernels
releasing the GIL.
"""
from __future__ import annotations

import functools
import numbers
import os
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import pycocotools.mask as mask_utils

from . import _measures, _rle
from .._parallel import resolve_threads, run_ranges, split_by_cost
from .imagefiles import DEFAULT_MAX_PIXELS
from .boundary import _as_mask_list, _normalize_rle, check_dilation_ratio, check_rle_strings, dilation_pixels

__all__ = [
    "MEASURE_LABELS",
    "MF_DILATION_RATIOS",
    "MEASURES",
    "pixel_accuracy",
    "mask_iou",
    "trimap_iou",
    "f_measure",
    "mf_measure",
    "boundary_iou",
    "min_mask_boundary_iou",
    "multiscale_iou",
    "measures",
    "measures_of_files",
    "crowd_iof",
    "box_iou",
    "label_jaccard",
]

#: Default ratios of the mF-measure: ``k / 800`` for ``k = 1 .. 17``, i.e. ``d`` =
#: 1, 2, .., 17 pixels on a 640 x 480 image (diagonal 800 pixels, the COCO size),
#: the range of the paper's appendix, scaled with the image like Boundary IoU's d.
MF_DILATION_RATIOS: Tuple[float, ...] = tuple(k / 800 for k in range(1, 18))

#: The names :func:`measures` returns, in order.
MEASURES: Tuple[str, ...] = ("pixel_accuracy", "mask_iou", "trimap_iou", "f_measure", "mf_measure",
                             "boundary_iou", "min_mask_boundary_iou", "multiscale_iou")
#: how the measures are named in tables and figures
MEASURE_LABELS = {
    "pixel_accuracy": "Pixel accuracy",
    "mask_iou": "Mask IoU",
    "trimap_iou": "Trimap IoU",
    "f_measure": "F-measure",
    "mf_measure": "mF-measure",
    "boundary_iou": "Boundary IoU",
    "min_mask_boundary_iou": "min(Mask, Boundary IoU)",
    "multiscale_iou": "Multiscale IoU",
}

# feature slots (see cython_ext/_measures.pxi)
_MASK, _CONTOUR, _BOUNDARY, _BAND0 = 0, 1, 2, 3


# --------------------------------------------------------------------------
# input
# --------------------------------------------------------------------------

class _Masks:
    """RLE count strings of one side, their sizes, and whether one mask was given."""

    __slots__ = ("counts", "h", "w", "single", "name")

    def __init__(self, masks, name: str):
        self.name = name
        items, self.single = _as_mask_list(masks, name)  # the mask layer's one reading of inputs
        counts, hs, ws = [], [], []
        for i, x in enumerate(items):
            where = name if self.single else f"{name}[{i}]"
            if isinstance(x, dict):
                c, h, w = _normalize_rle(x, where)
            else:
                a = np.asarray(x)
                if a.ndim != 2 or a.size == 0:
                    raise ValueError(f"{where}: a mask must be a non-empty 2-D array, got shape {a.shape}")
                if a.dtype == object or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
                    raise TypeError(f"{where}: a mask must be a numeric or boolean array, got dtype {a.dtype}")
                c = mask_utils.encode(np.asfortranarray(a != 0, dtype=np.uint8))["counts"]
                h, w = a.shape
            counts.append(c)
            hs.append(h)
            ws.append(w)
        self.counts = counts
        self.h = np.array(hs, np.int64)
        self.w = np.array(ws, np.int64)

    def __len__(self):
        return len(self.counts)

    def sizes(self) -> set:
        return set(zip(self.h.tolist(), self.w.tolist()))

    def one_size(self, other: "_Masks") -> Optional[Tuple[int, int]]:
        """The (h, w) every mask of both sides has, or None (mixed sizes, or no masks)."""
        hs = np.concatenate([self.h, other.h])
        ws = np.concatenate([self.w, other.w])
        if len(hs) == 0 or (hs != hs[0]).any() or (ws != ws[0]).any():
            return None
        return int(hs[0]), int(ws[0])

    def check(self):
        check_rle_strings(self.counts, self.h, self.w, lambda i: self.name if self.single else f"{self.name}[{i}]")


def _ratios(dilation_ratio, name="dilation_ratio") -> List[float]:
    if isinstance(dilation_ratio, (str, bytes)) or not isinstance(dilation_ratio, Iterable):
        raise TypeError(f"{name} must be a sequence of ratios, got {dilation_ratio!r}")
    out = [check_dilation_ratio(r) for r in dilation_ratio]
    if not out:
        raise ValueError(f"{name} must hold at least one ratio")
    return out


@functools.lru_cache(maxsize=4096)
def _d_of(h: int, w: int, ratio: float) -> int:
    # a d beyond max(h, w) erodes or dilates nothing more (the kernels take int64)
    return min(dilation_pixels(h, w, ratio), max(h, w))


def _d_table(m: _Masks, ratios: Sequence[float]) -> np.ndarray:
    """``d`` of every item (rows) for every ratio (columns)."""
    if not len(m) or not len(ratios):
        return np.zeros((len(m), len(ratios)), np.int64)
    row_of: Dict[Tuple[int, int], int] = {}
    index = [row_of.setdefault(hw, len(row_of)) for hw in zip(m.h.tolist(), m.w.tolist())]
    rows = np.array([[_d_of(h, w, r) for r in ratios] for h, w in row_of], np.int64)
    return rows[index] if len(row_of) > 1 else np.repeat(rows, len(m), axis=0)


def _check_scales(num_scales) -> int:
    if isinstance(num_scales, bool) or not isinstance(num_scales, numbers.Integral) or not 2 <= num_scales <= 30:
        raise ValueError(f"num_scales must be an integer from 2 to 30, got {num_scales!r}")
    return int(num_scales)


# --------------------------------------------------------------------------
# the engine: features per mask, intersection counts per pair
# --------------------------------------------------------------------------

def _features(m: _Masks, bands: np.ndarray, bnd_d: np.ndarray, contour: bool, inner: bool,
              n_scales: int, threads: int):
    n = len(m)
    table = _rle.StringTable(m.counts)
    args = (table, m.h, m.w, np.ascontiguousarray(bands, np.int64), np.ascontiguousarray(bnd_d, np.int64),
            int(contour), int(inner), n_scales)
    try:
        if n <= 4 or threads <= 1:
            return _measures.measure_features(*args, 0, n)
        ranges = split_by_cost(np.fromiter((len(c) for c in m.counts), np.float64, n), threads * 4)
        parts = run_ranges(lambda lo, hi: _measures.measure_features(*args, lo, hi), ranges, threads)
    except ValueError:
        m.check()  # names the bad item
        raise
    flats, offs, areas, base = [], [], [], 0
    for flat, off, area in parts:
        flats.append(flat)
        offs.append(off + base)
        areas.append(area)
        base += len(flat)
    return np.concatenate(flats), np.concatenate(offs), np.concatenate(areas)


def _counts(gf, pf, spec: List[Tuple[int, int]], threads: int, pairwise: bool) -> np.ndarray:
    G, P, K = len(gf[1]), len(pf[1]), len(spec)
    sp = np.asarray(spec, np.int64).reshape(K, 2)
    if pairwise:
        out = np.zeros((G, K), np.int64)
        if G == 0:
            return out
        if threads <= 1 or G < 64:
            _measures.pair_counts_diag(gf[0], gf[1], pf[0], pf[1], sp, out, 0, G)
            return out
        ranges = split_by_cost(np.diff(gf[1][:, [0, -1]], axis=1).reshape(-1).astype(np.float64), threads * 4)
        run_ranges(lambda lo, hi: _measures.pair_counts_diag(gf[0], gf[1], pf[0], pf[1], sp, out, lo, hi),
                   ranges, threads)
        return out
    out = np.zeros((G, P, K), np.int64)
    if G == 0 or P == 0:
        return out
    if threads <= 1 or G * P < 64:
        _measures.pair_counts(gf[0], gf[1], pf[0], pf[1], sp, out, 0, G)
        return out
    ranges = split_by_cost(np.full(G, float(P)), threads * 4)
    run_ranges(lambda lo, hi: _measures.pair_counts(gf[0], gf[1], pf[0], pf[1], sp, out, lo, hi), ranges, threads)
    return out


def _div(num, den) -> np.ndarray:
    num = np.asarray(num, np.float64)
    den = np.asarray(den, np.float64)
    return np.divide(num, den, out=np.zeros(np.broadcast(num, den).shape), where=den != 0)


def _f(p_hits, p_total, r_hits, r_total):
    p = _div(p_hits, p_total)
    r = _div(r_hits, r_total)
    return _div(2 * p * r, p + r)


def _compute(gt, pred, names: Sequence[str], dilation_ratio=0.02, mf_ratios=MF_DILATION_RATIOS,
             num_scales: int = 10, num_threads: Optional[int] = None, iscrowd=None, pairwise: bool = False):
    """The measures ``names``: ({name: G x P matrix, or (n,) for pairwise}, single flag)."""
    g, p = _Masks(gt, "gt"), _Masks(pred, "pred")
    threads = resolve_threads(num_threads)
    want = set(names)
    if pairwise:
        if g.single or p.single:
            raise TypeError("pairwise=True needs two lists of masks (gt[i] is compared with pred[i])")
        if len(g) != len(p):
            raise ValueError(f"pairwise=True needs as many gt as pred masks, got {len(g)} and {len(p)}")
        bad = np.flatnonzero((g.h != p.h) | (g.w != p.w))
        if len(bad):
            i = int(bad[0])
            raise ValueError(f"gt[{i}] is {g.h[i]}x{g.w[i]} but pred[{i}] is {p.h[i]}x{p.w[i]}")
    else:
        sizes = g.sizes() | p.sizes()
        if len(sizes) > 1:
            for side in (g, p):
                if len(side.sizes()) > 1:
                    raise ValueError(f"all masks must have the same size, got {sorted(side.sizes())} in {side.name}")
            raise ValueError(f"gt and pred masks must have the same size, got {sorted(sizes)}")
    ratio = check_dilation_ratio(dilation_ratio)
    fm = bool(want & {"f_measure", "mf_measure"})
    biou = bool(want & {"boundary_iou", "min_mask_boundary_iou"})
    n_scales = _check_scales(num_scales) if "multiscale_iou" in want else 0
    inner = "trimap_iou" in want
    # band columns: one per distinct ratio (Trimap/F's first), or per distinct d when
    # every mask has one size
    need = [ratio] if want & {"trimap_iou", "f_measure"} else []
    mf_list = _ratios(mf_ratios, "mf ratios") if "mf_measure" in want else []
    uniq = list(dict.fromkeys(need + mf_list))
    one = g.one_size(p)
    if one is not None:
        d_u = [_d_of(one[0], one[1], r) for r in uniq]
        cols = list(dict.fromkeys(d_u))
        col_of = {r: cols.index(d) for r, d in zip(uniq, d_u)}
        bands_g = np.tile(np.array(cols, np.int64), (len(g), 1)).reshape(len(g), len(cols))
        bands_p = np.tile(np.array(cols, np.int64), (len(p), 1)).reshape(len(p), len(cols))
        d = _d_of(one[0], one[1], ratio) if biou else 0
        bnd_g = np.full(len(g), d, np.int64)
        bnd_p = np.full(len(p), d, np.int64)
    else:
        cols = uniq
        col_of = {r: j for j, r in enumerate(uniq)}
        bands_g = _d_table(g, uniq)
        bands_p = _d_table(p, uniq)
        bnd_g = _d_table(g, [ratio])[:, 0] if biou else np.zeros(len(g), np.int64)
        bnd_p = _d_table(p, [ratio])[:, 0] if biou else np.zeros(len(p), np.int64)
    nb = len(cols)
    nb_p = nb if fm else 0
    gf = _features(g, bands_g, bnd_g, fm, inner, n_scales, threads)
    pf = _features(p, bands_p[:, :nb_p], bnd_p, fm, False, n_scales, threads)
    spec: List[Tuple[int, int]] = [(_MASK, _MASK)]
    at = {}

    def ask(key, sg, sp):
        at[key] = len(spec)
        spec.append((sg, sp))

    if inner:
        ask("trimap_in", _BAND0 + nb, _MASK)
        ask("trimap_band", _BAND0, _MASK)
    if fm:
        for c in range(nb):
            ask(("p", c), _BAND0 + c, _CONTOUR)
            ask(("r", c), _CONTOUR, _BAND0 + c)
    if biou:
        ask("bnd", _BOUNDARY, _BOUNDARY)
    for k in range(n_scales):
        ask(("cells", k), 4 + nb + k, 4 + nb_p + k)
    cnt = _counts(gf, pf, spec, threads, pairwise)
    if pairwise:
        def GA(slot):
            return gf[2][:, slot]

        def PA(slot):
            return pf[2][:, slot]
    else:
        def GA(slot):
            return gf[2][:, slot][:, None]

        def PA(slot):
            return pf[2][:, slot][None, :]
    inter = cnt[..., 0]
    f_all = None
    if fm:  # the F-measure of every band column at once
        f_all = _f(cnt[..., [at[("p", c)] for c in range(nb)]], PA(_CONTOUR)[..., None],
                   cnt[..., [at[("r", c)] for c in range(nb)]], GA(_CONTOUR)[..., None])
    out: Dict[str, np.ndarray] = {}
    for name in names:
        if name == "pixel_accuracy":
            v = _div(inter, GA(_MASK))
        elif name == "mask_iou":
            union = GA(_MASK) + PA(_MASK) - inter
            if iscrowd is not None:
                crowd = np.asarray(iscrowd, bool).reshape(-1 if pairwise else (-1, 1))
                union = np.where(crowd, PA(_MASK), union)
            v = _div(inter, union)
        elif name == "crowd_iof":
            v = _div(inter, np.broadcast_to(PA(_MASK), inter.shape))
        elif name == "trimap_iou":
            ti = cnt[..., at["trimap_in"]]
            v = _div(ti, GA(_BAND0 + nb) + cnt[..., at["trimap_band"]] - ti)
        elif name == "f_measure":
            v = f_all[..., col_of[ratio]]
        elif name == "mf_measure":
            v = np.mean(f_all[..., [col_of[r] for r in mf_list]], axis=-1)
        elif name in ("boundary_iou", "min_mask_boundary_iou"):
            bi = cnt[..., at["bnd"]]
            v = _div(bi, GA(_BOUNDARY) + PA(_BOUNDARY) - bi)
            if name == "min_mask_boundary_iou":
                v = np.minimum(v, _div(inter, GA(_MASK) + PA(_MASK) - inter))
        elif name == "multiscale_iou":
            r = _div(cnt[..., [at[("cells", k)] for k in range(n_scales)]],
                     np.stack([GA(4 + nb + k) for k in range(n_scales)], axis=-1))   # (..., scales)
            v = ((r[..., :-1] + r[..., 1:]) / 2).sum(axis=-1) / (n_scales - 1)
        else:  # pragma: no cover - names come from this module
            raise ValueError(f"unknown measure {name!r}")
        out[name] = np.ascontiguousarray(np.broadcast_to(v, inter.shape), dtype=np.float64)
    return out, g.single and p.single


def _one(name, gt, pred, **kw):
    res, single = _compute(gt, pred, [name], **kw)
    v = res[name]
    return float(v.reshape(-1)[0]) if single else v


# --------------------------------------------------------------------------
# public functions
# --------------------------------------------------------------------------

_PARAMS = """
    Parameters
    ----------
    gt, pred : (H, W) array, COCO RLE dict, or list of them
        Ground truth and predicted binary masks (nonzero = foreground), all of
        one size (with ``pairwise``, one size per pair).{extra}
    pairwise : bool, optional
        Two lists of equal length: compare ``gt[i]`` with ``pred[i]`` only.
    num_threads : int, optional
        Threads for lists (default: all cores).

    Returns
    -------
    float; a (len(gt), len(pred)) float64 ndarray when lists are given; a
    (len(gt),) ndarray with ``pairwise=True``.
"""
_RATIO = """
    dilation_ratio : float, optional
        ``d = dilation_pixels(h, w, dilation_ratio)`` (default 0.02, COCO)."""
_UNUSED = """
    dilation_ratio : float, optional
        Accepted for a uniform signature; this measure has no band."""


def _doc(text, extra=_RATIO):
    return text + _PARAMS.format(extra=extra)


def pixel_accuracy(gt, pred, dilation_ratio: float = 0.02, *, pairwise: bool = False,
                   num_threads: Optional[int] = None):
    check_dilation_ratio(dilation_ratio)
    return _one("pixel_accuracy", gt, pred, num_threads=num_threads, pairwise=pairwise)


pixel_accuracy.__doc__ = _doc("""Pixel accuracy ``|G & P| / |G|`` (0 when ``G`` is empty).

    Not symmetric; blind to false positives (a full-image prediction scores 1).
""", _UNUSED)


def mask_iou(gt, pred, dilation_ratio: float = 0.02, *, iscrowd=None, pairwise: bool = False,
             num_threads: Optional[int] = None):
    check_dilation_ratio(dilation_ratio)
    if iscrowd is not None:
        n = 1 if isinstance(gt, dict) or (isinstance(gt, np.ndarray) and gt.ndim == 2) else len(gt)
        iscrowd = np.asarray(iscrowd).reshape(-1)
        if len(iscrowd) != n:
            raise ValueError(f"iscrowd must have one flag per ground truth ({n}), got {len(iscrowd)}")
    return _one("mask_iou", gt, pred, num_threads=num_threads, iscrowd=iscrowd, pairwise=pairwise)


mask_iou.__doc__ = _doc("""Mask IoU ``|G & P| / |G | P|`` (0 when both are empty).

    Equals ``pycocotools.mask.iou(pred, gt, iscrowd).T``; with ``iscrowd`` (one
    flag per ground truth) a crowd ground truth scores ``|G & P| / |P|`` as COCO
    does (see :func:`crowd_iof`).
""", _UNUSED + """
    iscrowd : sequence of bool, optional
        One flag per ground truth.""")


def crowd_iof(gt, pred, *, pairwise: bool = False,
              num_threads: Optional[int] = None):
    return _one("crowd_iof", gt, pred, num_threads=num_threads, pairwise=pairwise)


crowd_iof.__doc__ = _doc("""Intersection over the prediction's area ``|G & P| / |P|``, how COCO scores a
    detection against a crowd region (0 when ``P`` is empty).
""", "")


def trimap_iou(gt, pred, dilation_ratio: float = 0.02, *, pairwise: bool = False,
               num_threads: Optional[int] = None):
    return _one("trimap_iou", gt, pred, dilation_ratio=dilation_ratio, num_threads=num_threads, pairwise=pairwise)


trimap_iou.__doc__ = _doc("""Trimap IoU ``|G_d & G & P| / |G_d & (G | P)|`` (0 when ``G`` is empty).

    Mask IoU inside the ground truth's two-sided band ``G_d``; not symmetric and
    blind to prediction errors away from the ground truth's contour.
""")


def f_measure(gt, pred, dilation_ratio: float = 0.02, *, pairwise: bool = False,
              num_threads: Optional[int] = None):
    return _one("f_measure", gt, pred, dilation_ratio=dilation_ratio, num_threads=num_threads, pairwise=pairwise)


f_measure.__doc__ = _doc("""Boundary F-measure ``2 p r / (p + r)``, ``p = |P_1 & G_d| / |P_1|``,
    ``r = |G_1 & P_d| / |G_1|`` (precision and recall of contour pixels within
    ``d`` of the other contour; 0/0 = 0 and ``F = 0`` when ``p + r = 0``).
""")


def mf_measure(gt, pred, dilation_ratio: Sequence[float] = MF_DILATION_RATIOS, *, pairwise: bool = False,
               num_threads: Optional[int] = None):
    return _one("mf_measure", gt, pred, mf_ratios=dilation_ratio, num_threads=num_threads, pairwise=pairwise)


mf_measure.__doc__ = _doc("""mF-measure: the mean of :func:`f_measure` over a list of dilation ratios.

    The default :data:`MF_DILATION_RATIOS` is ``k / 800`` for ``k = 1 .. 17``:
    ``d`` = 1 .. 17 pixels on a 640 x 480 image; on other sizes each ratio gives
    ``dilation_pixels(h, w, ratio)`` (so small images repeat ``d = 1``; every
    ratio counts once in the mean).
""", """
    dilation_ratio : sequence of float, optional
        The ratios to average over (default :data:`MF_DILATION_RATIOS`).""")


def boundary_iou(gt, pred, dilation_ratio: float = 0.02, *, pairwise: bool = False,
                 num_threads: Optional[int] = None):
    return _one("boundary_iou", gt, pred, dilation_ratio=dilation_ratio, num_threads=num_threads, pairwise=pairwise)


boundary_iou.__doc__ = _doc("""Boundary IoU ``|B(G) & B(P)| / |B(G) | B(P)|`` (0 when both are empty).

    ``B(X) = X AND NOT erode(X, (2d+1)^2)``: the same numbers as
    :func:`boundary_api.masks.boundary_iou`.
""")


def min_mask_boundary_iou(gt, pred, dilation_ratio: float = 0.02, *, pairwise: bool = False,
                          num_threads: Optional[int] = None):
    return _one("min_mask_boundary_iou", gt, pred, dilation_ratio=dilation_ratio, num_threads=num_threads,
                pairwise=pairwise)


min_mask_boundary_iou.__doc__ = _doc("""``min(Mask IoU, Boundary IoU)``: the IoU of Boundary AP.
""")


def multiscale_iou(gt, pred, dilation_ratio=None, *, num_scales: int = 10, pairwise: bool = False,
                   num_threads: Optional[int] = None):
    if dilation_ratio is not None:
        check_dilation_ratio(dilation_ratio)
    return _one("multiscale_iou", gt, pred, num_scales=num_scales, num_threads=num_threads, pairwise=pairwise)


multiscale_iou.__doc__ = _doc("""Multiscale IoU (Ahmadzadeh et al., ICIP 2021).

    ``r_k = n(s(G, 2^k) & s(P, 2^k)) / n(s(G, 2^k))`` where ``s(X, delta)`` are the
    cells of a ``delta x delta`` grid (anchored at the top-left corner; partial
    cells at the right/bottom edges count) holding a pixel of the contour
    ``X_1``; ``MIoU = sum_k (r_k + r_{k+1}) / 2 / (num_scales - 1)``, the area under
    ``r`` on [0, 1].  ``r_k = 0`` when ``G`` is empty.  Not symmetric.
""", """
    dilation_ratio : None, optional
        Accepted for a uniform signature; MIoU uses the contour (d = 1).
    num_scales : int, optional
        Grid sizes ``1, 2, .., 2^(num_scales-1)`` (default 10, the paper's).""")


def measures(gt, pred, dilation_ratio: float = 0.02, *, mf_ratios: Sequence[float] = MF_DILATION_RATIOS,
             num_scales: int = 10, names: Optional[Sequence[str]] = None, pairwise: bool = False,
             num_threads: Optional[int] = None) -> Dict[str, object]:
    """Every measure of the module in one pass.

    Each mask is decoded once and its contour, boundary, bands and grid cells
    computed once, whatever the number of measures; each pair costs a few
    run-length intersections.

    Parameters
    ----------
    gt, pred : (H, W) array, COCO RLE dict, or list of them
        Ground truth and predicted binary masks, all of one size.
    dilation_ratio : float, optional
        ``d`` of Trimap IoU, the F-measure and Boundary IoU (default 0.02).
    mf_ratios : sequence of float, optional
        Ratios of the mF-measure (default :data:`MF_DILATION_RATIOS`).
    num_scales : int, optional
        Grid sizes of Multiscale IoU (default 10).
    names : sequence of str, optional
        A subset of :data:`MEASURES` to compute (default: all).
    pairwise : bool, optional
        With two lists of equal length, compare ``gt[i]`` with ``pred[i]`` only and
        return 1-D arrays; pairs may differ in size (each its own ``d``).
    num_threads : int, optional
        Threads for lists (default: all cores).

    Returns
    -------
    dict
        ``{name: value}`` in the order of :data:`MEASURES` (or of ``names``):
        floats for two masks, ``(len(gt), len(pred))`` matrices for two lists,
        ``(len(gt),)`` arrays with ``pairwise=True``.

    Examples
    --------
    >>> g = np.zeros((20, 20), np.uint8); g[5:15, 5:15] = 1
    >>> round(measures(g, g)["boundary_iou"], 3)
    1.0
    """
    names = list(MEASURES if names is None else names)
    bad = [n for n in names if n not in MEASURES]
    if bad:
        raise ValueError(f"unknown measure(s) {bad}; choose from {list(MEASURES)}")
    res, single = _compute(gt, pred, names, dilation_ratio=dilation_ratio, mf_ratios=mf_ratios,
                           num_scales=num_scales, num_threads=num_threads, pairwise=pairwise)
    if single:
        return {k: float(v[0, 0]) for k, v in res.items()}
    return res


def measures_of_files(gt_path, pred_path, dilation_ratio: float = 0.02, *, num_scales: int = 10,
                      max_pixels: Optional[int] = DEFAULT_MAX_PIXELS,
                      what: Sequence[str] = ("ground truth mask", "predicted mask")) -> Dict[str, float]:
    """:func:`measures` of two masks read from files (what ``boundary-eval
    measures`` runs).

    Parameters
    ----------
    gt_path, pred_path : str or path-like
        Image files (any nonzero pixel is foreground) or ``.json`` files
        holding a COCO RLE (:func:`~boundary_api.masks.imagefiles.read_mask_file`).
    dilation_ratio, num_scales
        As for :func:`measures`.
    max_pixels : int or None
        Largest image (width x height) read, checked from the header.
    what : (str, str)
        How messages name the two files.

    Returns
    -------
    dict
        ``{name: float}`` in the order of :data:`MEASURES`.

    Raises
    ------
    ValueError
        One line naming the file(s) and the problem (masks of different
        sizes included).
    """
    from .imagefiles import read_mask_file

    gt = read_mask_file(gt_path, what[0], max_pixels)
    pred = read_mask_file(pred_path, what[1], max_pixels)
    try:
        return measures(gt, pred, dilation_ratio, num_scales=num_scales, num_threads=1)
    except ValueError as exc:
        raise ValueError(f"{os.fspath(gt_path)}, {os.fspath(pred_path)}: {exc}") from None


# --------------------------------------------------------------------------
# the basics: boxes and label sets
# --------------------------------------------------------------------------

def _boxes(b, name: str) -> Tuple[np.ndarray, bool]:
    a = np.asarray(b, dtype=np.float64)
    single = a.ndim == 1 and a.size == 4
    if a.size == 0:
        a = np.zeros((0, 4))
    elif not (single or (a.ndim == 2 and a.shape[1] == 4)):
        raise ValueError(f"{name} must be a box [4] or boxes [N, 4], got shape {np.shape(b)}")
    a = a.reshape(-1, 4)
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: box coordinates must be finite")
    return a, single


def box_iou(gt, pred, box_format: str = "xywh", *, iscrowd=None):
    """IoU of boxes, equal to pycocotools' (``pycocotools.mask.iou(pred, gt, iscrowd).T``).

    Parameters
    ----------
    gt, pred : array_like, shape (4,) or (N, 4)
        Boxes ``[x, y, width, height]`` (``box_format="xywh"``, COCO) or
        ``[x0, y0, x1, y1]`` (``"xyxy"``; converted to xywh first).
    box_format : {"xywh", "xyxy"}
    iscrowd : sequence of bool, optional
        One flag per ground truth: crowd boxes score intersection over the
        prediction's area, as COCO does.

    Returns
    -------
    float, or (len(gt), len(pred)) ndarray.  Boxes that do not overlap by a
    positive width and height score 0.
    """
    if box_format not in ("xywh", "xyxy"):
        raise ValueError(f"box_format must be 'xywh' or 'xyxy', got {box_format!r}")
    g, gs = _boxes(gt, "gt")
    p, ps = _boxes(pred, "pred")
    if box_format == "xyxy":
        g = np.concatenate([g[:, :2], g[:, 2:] - g[:, :2]], axis=1)
        p = np.concatenate([p[:, :2], p[:, 2:] - p[:, :2]], axis=1)
    crowd = np.zeros(len(g), bool) if iscrowd is None else np.asarray(iscrowd, bool).reshape(-1)
    if len(crowd) != len(g):
        raise ValueError(f"iscrowd must have one flag per ground truth ({len(g)}), got {len(crowd)}")
    G, P = g[:, None, :], p[None, :, :]
    # pycocotools' bbIou, term for term
    ga = G[..., 2] * G[..., 3]
    da = P[..., 2] * P[..., 3]
    w = np.minimum(P[..., 2] + P[..., 0], G[..., 2] + G[..., 0]) - np.maximum(P[..., 0], G[..., 0])
    h = np.minimum(P[..., 3] + P[..., 1], G[..., 3] + G[..., 1]) - np.maximum(P[..., 1], G[..., 1])
    i = w * h
    u = np.where(crowd[:, None], da, da + ga - i)
    ok = (w > 0) & (h > 0)
    out = np.zeros(ok.shape)
    np.divide(i, u, out=out, where=ok)
    if gs and ps:
        return float(out[0, 0])
    return out


def label_jaccard(y_true, y_pred, average: Optional[str] = None):
    """Jaccard index of label sets (multi-label classification).

    Parameters
    ----------
    y_true, y_pred : array_like of shape (n_samples, n_classes)
        Label indicator matrices (nonzero = the label is present).
    average : {None, "macro", "micro", "samples"}
        ``None``: per class ``|T_c & P_c| / |T_c | P_c|`` over samples (array);
        ``"macro"``: their mean; ``"micro"``: total intersections over total
        unions; ``"samples"``: the mean over samples of each sample's label-set
        Jaccard.  0/0 is 0 (a class nobody has or predicts scores 0 and counts
        in the macro mean), as in scikit-learn with ``zero_division=0``.

    Returns
    -------
    ndarray of shape (n_classes,) or float.
    """
    t = np.asarray(y_true)
    p = np.asarray(y_pred)
    if t.ndim != 2 or t.shape != p.shape:
        raise ValueError(f"y_true and y_pred must be 2-D indicator arrays of one shape, got {t.shape} and {p.shape}")
    if average not in (None, "macro", "micro", "samples"):
        raise ValueError(f"average must be None, 'macro', 'micro' or 'samples', got {average!r}")
    t, p = t != 0, p != 0
    inter, union = t & p, t | p
    if average == "micro":
        return float(_div(inter.sum(), union.sum()))
    if average == "samples":
        return float(np.mean(_div(inter.sum(axis=1), union.sum(axis=1)))) if len(t) else 0.0
    per_class = _div(inter.sum(axis=0), union.sum(axis=0))
    if average == "macro":
        return float(per_class.mean()) if per_class.size else 0.0
    return per_class
