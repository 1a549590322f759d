"""Differential fuzzing of the RLE codec (issue 40, item 5), through the public
API, in child processes with a memory cap and a timeout (fuzz_runner.py):
ground truths and 'segm' results of compressed RLE strings (and uncompressed
crowd RLEs) loaded and evaluated by boundary_api and by pycocotools: the areas
and boxes ``loadRes`` computes from the strings (pycocotools' ``area`` and
``toBbox``), every IoU (``iou``), every per-image match, the accumulated
precision / recall / scores and the summary; and each RLE's boundary
(``rle_to_boundary``: the package's decoder and encoder) against
pycocotools' ``encode`` of the NumPy/OpenCV oracle's boundary of
pycocotools' ``decode``.

Masks: empty, full, single pixels, borders, thin images (1 x N, N x 1),
stripes, checkerboards, noise, rectangles; strings as pycocotools writes
them and non-canonical ones (runs split by empty runs), which pycocotools
decodes to the same mask.  Left out, as issue 40 item 3 (branch trust3)
handles them: RLE sizes of 0 or 0.5, image sizes like 5e-324, counts given
as floats.
"""
import json

import numpy as np
import pycocotools.mask as mask_utils
import pytest

from fuzz_json import counts_to_string, runs_of
from fuzz_runner import describe, run_cases

pytestmark = pytest.mark.slow

SEED = 40_06
RATIOS = (0.001, 0.005, 0.008, 0.02, 0.05, 0.2, 1.0, 3.0)


def mask_of(rng, h, w) -> np.ndarray:
    kind = int(rng.integers(10))
    if h * w > 4096 and kind in (4, 5, 6, 7):
        kind = 8   # (masks of a run or two per pixel: small images only, to keep the suite quick)
    m = np.zeros((h, w), np.uint8)
    if kind == 0:
        pass
    elif kind == 1:
        m[:] = 1
    elif kind == 2:
        m[int(rng.integers(h)), int(rng.integers(w))] = 1
    elif kind == 3:
        m[0, :] = m[-1, :] = 1
        m[:, 0] = m[:, -1] = 1
    elif kind == 4:
        m[::2] = 1
    elif kind == 5:
        m[:, ::2] = 1
    elif kind == 6:
        m = ((np.add.outer(np.arange(h), np.arange(w)) % 2) == 0).astype(np.uint8)
    elif kind == 7:
        m = (rng.random((h, w)) < rng.random()).astype(np.uint8)
    else:
        for _ in range(int(rng.integers(1, 5))):
            y, x = int(rng.integers(h)), int(rng.integers(w))
            m[y:y + int(rng.integers(1, h + 1)), x:x + int(rng.integers(1, w + 1))] = 1
    return m


def rle_strings(rng, mask: np.ndarray, empty_runs: bool):
    """(the RLE given to the readers, pycocotools' own RLE of the mask): the
    given one is pycocotools' string, or one with overlong numbers, or (with
    ``empty_runs``) one with runs split by empty runs; each decodes to the mask."""
    h, w = mask.shape
    canonical = {"size": [h, w], "counts": mask_utils.encode(np.asfortranarray(mask))["counts"].decode("ascii")}
    counts = runs_of(mask)
    r = rng.random()
    if empty_runs and r < 0.8:
        out = []
        for c in counts:
            if c > 1 and rng.random() < 0.4:
                a = int(rng.integers(1, c))
                out += [a, 0, c - a]
            else:
                out.append(c)
        if rng.random() < 0.2:
            out += [0, 0]   # empty runs at the end
        given = {"size": [h, w], "counts": counts_to_string(out, rng, 0.2)}
    elif r < 0.6:
        given = canonical
    else:
        given = {"size": [h, w], "counts": counts_to_string(counts, rng, 0.5)}
    assert np.array_equal(mask_utils.decode(dict(given, counts=given["counts"].encode())), mask)
    return given, canonical


def size(rng):
    r = rng.random()
    if r < 0.1:
        return 1, int(rng.integers(1, 200))
    if r < 0.2:
        return int(rng.integers(1, 200)), 1
    if r < 0.25:
        return int(rng.integers(100, 400)), int(rng.integers(100, 400))
    return int(rng.integers(1, 64)), int(rng.integers(1, 64))


def case(rng, empty_runs: bool = False) -> dict:
    """One ground truth and its results; with ``empty_runs``, also the same
    files with pycocotools' own strings (``gt_ref``, ``dt_ref``): pycocotools'
    box and IoU of strings with empty runs are not the masks' (its toBbox
    counts an empty run's end as a pixel, its iou stops early when two runs
    end together before an empty one), so the reference is pycocotools on
    the canonical strings, and boundary_api must give the masks' values."""
    images, anns, results, boundaries = [], [], [], []
    refs_gt, refs_dt = [], []
    cats = [{"id": c, "name": f"c{c}"} for c in range(1, int(rng.integers(2, 4)))]
    aid = 1
    for iid in range(1, int(rng.integers(2, 4))):
        h, w = size(rng)
        images.append({"id": iid, "height": h, "width": w, "file_name": f"{iid}.jpg"})
        for _ in range(int(rng.integers(0, 5))):
            m = mask_of(rng, h, w)
            crowd = int(rng.random() < 0.2)
            if crowd and rng.random() < 0.5:
                seg = ref = {"size": [h, w], "counts": runs_of(m)}
            else:
                seg, ref = rle_strings(rng, m, empty_runs)
            box = [float(v) for v in mask_utils.toBbox(mask_utils.encode(np.asfortranarray(m)))]
            ann = {"id": aid, "image_id": iid, "category_id": cats[int(rng.integers(len(cats)))]["id"],
                   "segmentation": seg, "area": float(m.sum()), "bbox": box, "iscrowd": crowd}
            anns.append(ann)
            refs_gt.append(dict(ann, segmentation=ref))
            aid += 1
            if isinstance(seg["counts"], str):
                boundaries.append((seg, float(rng.choice(RATIOS))))
        for _ in range(int(rng.integers(1, 7))):
            m = mask_of(rng, h, w)
            seg, ref = rle_strings(rng, m, empty_runs)
            score = float(rng.choice([0.5, 0.25, 0.9])) if rng.random() < 0.3 else float(rng.random())
            res = {"image_id": iid, "category_id": cats[int(rng.integers(len(cats)))]["id"],
                   "segmentation": seg, "score": score}
            results.append(res)
            refs_dt.append(dict(res, segmentation=ref))
            boundaries.append((seg, float(rng.choice(RATIOS))))
    gt = {"images": images, "annotations": anns, "categories": cats}
    out = {"gt": json.dumps(gt).encode(), "dt": json.dumps(results).encode(), "boundaries": boundaries,
           "n_rles": len(anns) + len(results)}
    if empty_runs:
        out["gt_ref"] = json.dumps(dict(gt, annotations=refs_gt)).encode()
        out["dt_ref"] = json.dumps(refs_dt).encode()
        out["family_kind"] = "RLE case, strings with empty runs"
    else:
        out["family_kind"] = "RLE case, pycocotools' and overlong strings"
    return out


def test_rles_equal_pycocotools():
    rng = np.random.default_rng(SEED)
    cases = [case(rng) for _ in range(400)] + [case(rng, empty_runs=True) for _ in range(150)]
    result = run_cases("rle", cases)
    result["kinds"]["RLEs (ground truth and results)"] = sum(c["n_rles"] for c in cases)
    result["kinds"]["boundaries (rle_to_boundary)"] = sum(len(c["boundaries"]) for c in cases)
    assert not result["failures"], describe(result)
    assert result["counts"].get("same", 0) == len(cases)
