"""Sensitivity curves of the segmentation measures (Cheng et al., CVPR 2021, section 3).

Ground-truth instance masks are sampled (seeded) from a COCO or LVIS file;
every error type of :mod:`boundary_api.sensitivity.perturbations` is applied at a range
of severities and every measure of :mod:`boundary_api.measures` compares the
erroneous mask with the ground truth.  Two samples are drawn:

* ``large``: up to ``samples`` objects of more than 96^2 pixels; each error
  type at every severity gives one point per measure (mean and standard
  deviation over the objects): the paper's Figures 6, 8 (inner holes) and 9
  (mF-measure against Boundary IoU);
* ``sized``: up to ``samples`` objects in each object-size bin (the square root
  of the mask's area in steps of 16 pixels, i.e. bins of 16^2-pixel steps of
  side); each error at its fixed severities gives one point per measure and
  bin: Figures 4 (Mask IoU, Trimap IoU, F-measure under dilation and erosion)
  and 7.

Everything is deterministic given ``seed``, whatever the number of threads:
each (object, error, severity) draws from its own generator seeded by
``(seed, annotation id, error, severity)``.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pycocotools.mask as mask_utils

from ..instance._files import load_ground_truth_json
from .._parallel import resolve_threads, run_ranges
from ..masks.boundary import check_dilation_ratio
from ..masks.measures import MEASURES, measures as compute_measures
from .perturbations import ERRORS, apply_error, segmentation_mask

__all__ = [
    "DEFAULT_SEVERITIES",
    "FIXED_SEVERITIES",
    "SIZE_BIN",
    "LARGE_AREA",
    "Instance",
    "SensitivityResult",
    "sample_instances",
    "sensitivity_analysis",
]

#: Severities of the curves for large objects (pixels; holes for inner_mask).
DEFAULT_SEVERITIES: Dict[str, Tuple[float, ...]] = {
    "dilation": (0, 1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 18, 20, 24),
    "erosion": (0, 1, 2, 3, 4, 6, 8, 10, 12, 14, 16, 18, 20, 24),
    "boundary_localization": (0, 0.5, 1, 1.5, 2, 3, 4, 5, 6, 8, 10),
    "object_localization": (0, 1, 2, 3, 4, 6, 8, 10, 12, 16, 20, 24),
    "boundary_approximation": (0, 0.5, 1, 1.5, 2, 3, 4, 5, 6, 8, 10),
    "inner_mask": (0, 1, 2, 3, 4, 6, 8, 10),
}

#: Severities at which the curves across object sizes are drawn.
FIXED_SEVERITIES: Dict[str, Tuple[float, ...]] = {
    "dilation": (1, 4),
    "erosion": (1, 4),
    "boundary_localization": (2,),
    "object_localization": (4,),
    "boundary_approximation": (2,),
    "inner_mask": (3,),
}

#: Width of an object-size bin, in pixels of sqrt(area).
SIZE_BIN = 16
#: Objects of more than this many pixels are "large" (COCO's definition).
LARGE_AREA = 96 ** 2


@dataclass
class Instance:
    """One sampled ground-truth object: its annotation, image size, mask (RLE) and area."""

    ann_id: int
    segmentation: object
    height: int
    width: int
    rle: dict
    area: int

    @property
    def size_bin(self) -> int:
        return int(math.sqrt(self.area) // SIZE_BIN)


@dataclass
class SensitivityResult:
    """The numbers behind every curve.

    ``records`` holds one dict per (curve, point, measure): ``sample``
    (``"large"`` or ``"sized"``), ``error``, ``severity``, ``size_lo`` and
    ``size_hi`` (the bin's sqrt-area range in pixels, ``None`` for the large
    sample), ``measure``, ``mean``, ``std`` and ``n`` (objects).  ``settings``
    records how they were made.
    """

    settings: dict
    records: List[dict] = field(default_factory=list)

    def curve(self, measure: str, error: str, sample: str = "large", severity: Optional[float] = None
              ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(x, mean, std)`` of one curve: over severities for the large sample,
        over size bins (x = bin centre) at ``severity`` for the sized one."""
        rows = [r for r in self.records if r["measure"] == measure and r["error"] == error
                and r["sample"] == sample and (severity is None or r["severity"] == severity)]
        if sample == "large":
            rows.sort(key=lambda r: r["severity"])
            x = [r["severity"] for r in rows]
        else:
            if severity is None:
                raise ValueError("the sized curves need a severity")
            rows.sort(key=lambda r: r["size_lo"])
            x = [(r["size_lo"] + r["size_hi"]) / 2 for r in rows]
        return (np.asarray(x, float), np.asarray([r["mean"] for r in rows], float),
                np.asarray([r["std"] for r in rows], float))

    def to_json(self) -> dict:
        return {"settings": self.settings, "curves": self.records}

    def write_csv(self, path: str) -> None:
        import csv

        cols = ["sample", "error", "severity", "size_lo", "size_hi", "measure", "mean", "std", "n"]
        tmp = f"{path}.tmp-{os.getpid()}"
        with open(tmp, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=cols)
            wr.writeheader()
            for r in self.records:
                wr.writerow({k: ("" if r[k] is None else r[k]) for k in cols})
        os.replace(tmp, path)


# --------------------------------------------------------------------------
# sampling
# --------------------------------------------------------------------------

def _load(gt) -> Tuple[dict, str]:
    if isinstance(gt, (str, os.PathLike)):
        data, name = load_ground_truth_json(gt), os.fspath(gt)
    else:
        data, name = gt, "ground truth"
    if not isinstance(data, dict) or not isinstance(data.get("annotations"), list) \
            or not isinstance(data.get("images"), list):
        raise ValueError(f"{name}: not a COCO/LVIS instances file (needs 'images' and 'annotations' lists)")
    return data, name


def sample_instances(gt, samples: int, seed: int = 0, min_area: float = 0, per_size_bin: bool = False,
                     num_threads: Optional[int] = None) -> List[Instance]:
    """Seeded sample of non-crowd ground-truth objects with more than ``min_area`` pixels.

    Parameters
    ----------
    gt : str, os.PathLike or dict
        COCO or LVIS instances file (or its loaded dict).
    samples : int
        Objects to draw (per size bin with ``per_size_bin``); fewer if the file
        has fewer.
    seed : int
        Sampling seed.
    min_area : float
        Keep objects whose rasterized mask has more pixels than this.
    per_size_bin : bool
        Draw up to ``samples`` objects from each :data:`SIZE_BIN` bin.

    Returns
    -------
    list of Instance, ordered by annotation id within each bin.
    """
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise ValueError(f"samples must be a positive integer, got {samples!r}")
    data, name = _load(gt)
    size = {img["id"]: (int(img["height"]), int(img["width"])) for img in data["images"]}
    anns = [a for a in data["annotations"]
            if not a.get("iscrowd", 0) and a.get("image_id") in size and a.get("segmentation")]
    # the annotation's area decides the candidates cheaply; the mask's area decides the bin
    anns.sort(key=lambda a: a["id"])

    def make(a) -> Instance:
        h, w = size[a["image_id"]]
        try:
            m = segmentation_mask(a["segmentation"], h, w)
        except (ValueError, TypeError) as exc:
            raise type(exc)(f"{name}: annotation {a.get('id')}: {exc}") from None
        rle = mask_utils.encode(np.asfortranarray(m))
        return Instance(int(a["id"]), a["segmentation"], h, w, rle, int(m.sum()))

    rng = np.random.default_rng(seed)
    threads = resolve_threads(num_threads)

    def build(cands) -> List[Instance]:
        out: List[Optional[Instance]] = [None] * len(cands)

        def work(lo, hi):
            for i in range(lo, hi):
                out[i] = make(cands[i])
        run_ranges(work, [(i, min(i + 16, len(cands))) for i in range(0, len(cands), 16)], threads)
        return [x for x in out if x is not None and x.area > min_area]

    if not per_size_bin:
        cands = [a for a in anns if float(a.get("area", 0)) > min_area * 0.8]
        order = rng.permutation(len(cands))
        picked: List[Instance] = []
        # draw in rounds so that objects whose mask falls below min_area are replaced
        for start in range(0, len(order), samples):
            picked += build([cands[i] for i in order[start:start + samples]])
            if len(picked) >= samples:
                break
        return sorted(picked[:samples], key=lambda x: x.ann_id)
    bins: Dict[int, List[dict]] = {}
    for a in anns:
        bins.setdefault(int(math.sqrt(max(0.0, float(a.get("area", 0)))) // SIZE_BIN), []).append(a)
    chosen = []
    for b in sorted(bins):
        group = bins[b]
        idx = rng.permutation(len(group))[:samples]
        chosen += [group[i] for i in sorted(idx)]
    inst = build(chosen)
    byb: Dict[int, List[Instance]] = {}
    for x in inst:
        byb.setdefault(x.size_bin, []).append(x)
    return [x for b in sorted(byb) for x in sorted(byb[b], key=lambda x: x.ann_id)[:samples]]


# --------------------------------------------------------------------------
# the analysis
# --------------------------------------------------------------------------

def _seed(seed: int, inst: Instance, error: str, severity: float) -> np.random.Generator:
    return np.random.default_rng([seed, inst.ann_id & 0xFFFFFFFF, ERRORS.index(error),
                                  int(round(severity * 1000))])


def _erroneous(insts: Sequence[Instance], error: str, severity: float, seed: int, threads: int) -> List[dict]:
    out: List[Optional[dict]] = [None] * len(insts)

    def work(lo, hi):
        for i in range(lo, hi):
            x = insts[i]
            m = apply_error(error, x.segmentation, x.height, x.width, severity, _seed(seed, x, error, severity))
            out[i] = mask_utils.encode(np.asfortranarray(m))
    step = max(1, len(insts) // (threads * 4) or 1)
    run_ranges(work, [(i, min(i + step, len(insts))) for i in range(0, len(insts), step)], threads)
    return out  # type: ignore[return-value]


def _summaries(values: Mapping[str, np.ndarray], groups: Dict[Tuple, np.ndarray], base: dict) -> List[dict]:
    rows = []
    for key, idx in groups.items():
        for name, v in values.items():
            sel = v[idx]
            rows.append({**base, "size_lo": key[0], "size_hi": key[1], "measure": name,
                         "mean": float(sel.mean()) if len(sel) else None,
                         "std": float(sel.std()) if len(sel) else None, "n": int(len(sel))})
    return rows


def _check_severities(errors, table, name) -> Dict[str, Tuple[float, ...]]:
    out = {}
    for e in errors:
        vals = tuple(table.get(e, ()))
        if not vals:
            raise ValueError(f"{name}: no severities for error {e!r}")
        for v in vals:
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not math.isfinite(v) or v < 0:
                raise ValueError(f"{name}[{e!r}]: severities must be finite numbers >= 0, got {v!r}")
            if e in ("dilation", "erosion", "inner_mask") and v != int(v):
                raise ValueError(f"{name}[{e!r}]: severities of {e} must be whole numbers, got {v!r}")
        out[e] = vals
    return out


def sensitivity_analysis(gt, errors: Sequence[str] = ERRORS, measures: Sequence[str] = MEASURES,
                         samples: int = 100, seed: int = 0,
                         severities: Optional[Mapping[str, Sequence[float]]] = None,
                         fixed_severities: Optional[Mapping[str, Sequence[float]]] = None,
                         dilation_ratio: float = 0.02, sized: bool = True,
                         num_threads: Optional[int] = None, progress: bool = False) -> SensitivityResult:
    """Mean and standard deviation of every measure under every error type.

    Parameters
    ----------
    gt : str, os.PathLike or dict
        COCO or LVIS instances file (the paper uses LVIS v0.5 val).
    errors : sequence of str
        Error types (default: all of :data:`~boundary_api.sensitivity.perturbations.ERRORS`).
    measures : sequence of str
        Measures (default: all of :data:`boundary_api.measures.MEASURES`).
    samples : int
        Large objects, and objects per size bin.
    seed : int
        Seed of the sampling and of the random errors.
    severities, fixed_severities : mapping, optional
        Per error type: the severities of the large-object curves (default
        :data:`DEFAULT_SEVERITIES`) and of the curves across sizes (default
        :data:`FIXED_SEVERITIES`).
    dilation_ratio : float
        ``d`` of the band-based measures (0.02 of the image diagonal).
    sized : bool
        Also compute the curves across object sizes.
    num_threads : int, optional
        Threads for the error generation and the measures (default: all cores).
    progress : bool
        Show a progress bar (on a terminal).

    Returns
    -------
    SensitivityResult
    """
    errors = list(errors)
    bad = [e for e in errors if e not in ERRORS]
    if bad or not errors:
        raise ValueError(f"unknown error type(s) {bad}; choose from {list(ERRORS)}")
    measures = list(measures)
    bad = [m for m in measures if m not in MEASURES]
    if bad or not measures:
        raise ValueError(f"unknown measure(s) {bad}; choose from {list(MEASURES)}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    ratio = check_dilation_ratio(dilation_ratio)
    sev = _check_severities(errors, {**DEFAULT_SEVERITIES, **dict(severities or {})}, "severities")
    fixed = _check_severities(errors, {**FIXED_SEVERITIES, **dict(fixed_severities or {})}, "fixed_severities")
    threads = resolve_threads(num_threads)
    data, name = _load(gt)

    large = sample_instances(data, samples, seed, min_area=LARGE_AREA, num_threads=threads)
    if not large:
        raise ValueError(f"{name}: no non-crowd object of more than {LARGE_AREA} pixels to sample")
    sized_insts = sample_instances(data, samples, seed, per_size_bin=True, num_threads=threads) if sized else []
    jobs = [("large", e, s, large) for e in errors for s in sev[e]]
    jobs += [("sized", e, s, sized_insts) for e in errors for s in fixed[e]] if sized else []

    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=sum(len(j[3]) for j in jobs), desc="sensitivity", unit="mask", disable=None)
    records: List[dict] = []
    try:
        for sample, e, s, insts in jobs:
            preds = _erroneous(insts, e, s, seed, threads)
            vals = compute_measures([x.rle for x in insts], preds, ratio, names=measures, pairwise=True,
                                    num_threads=threads)
            if sample == "large":
                groups = {(None, None): np.arange(len(insts))}
            else:
                bins = np.array([x.size_bin for x in insts])
                groups = {(int(b * SIZE_BIN), int((b + 1) * SIZE_BIN)): np.flatnonzero(bins == b)
                          for b in np.unique(bins)}
            records += _summaries(vals, groups, {"sample": sample, "error": e, "severity": float(s)})
            if bar is not None:
                bar.update(len(insts))
    finally:
        if bar is not None:
            bar.close()
    settings = {
        "gt": name, "errors": errors, "measures": measures, "samples": samples, "seed": seed,
        "dilation_ratio": ratio, "severities": {e: list(map(float, sev[e])) for e in errors},
        "fixed_severities": {e: list(map(float, fixed[e])) for e in errors},
        "size_bin": SIZE_BIN, "large_area": LARGE_AREA, "large_objects": len(large),
        "sized_objects": len(sized_insts),
    }
    return SensitivityResult(settings, records)
