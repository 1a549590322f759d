"""The suspect-input family of the differential fuzz suite (issue 45): ground
truths and results with masks pycocotools' C code misreads, crashes on or never
ends on, evaluated by boundary_api and by pycocotools (lvis), one evaluation
per case.

The property: where the original gives a number, boundary_api gives the same
number (with or without a warning); where it crashes or never ends,
boundary_api raises one clear error (:class:`UnsafeRLEError` or
:class:`UnsafePolygonError`); where it raises, boundary_api raises too.  A
polygon with a non-finite or huge coordinate is refused whatever the original
makes of it (C leaves the conversion of such a number to an int undefined):
documented in docs/known_differences.md.

Cases are made by :func:`case` from a seeded generator; :func:`compare` runs
one in a worker (fuzz_worker.py), the original under an alarm that ends the
worker when it never returns (the runner then tells whose death it was).
"""
from __future__ import annotations

import json
import math
import signal

import numpy as np

#: seconds the original may take on a case before it counts as never ending
#: (every case is a few masks of at most 40 x 40 pixels: milliseconds)
HANG_SECONDS = 2

# ----------------------------------------------------------------- generation


def _mask(rng, h, w):
    m = np.zeros((max(h, 0), max(w, 0)), np.uint8)
    if m.size:
        y, x = int(rng.integers(h)), int(rng.integers(w))
        m[y:y + int(rng.integers(1, h + 1)), x:x + int(rng.integers(1, w + 1))] = 1
    return m


#: characters of garbage strings: the format's own, others, beyond ASCII
ALPHABETS = ("0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmno", "0123456789:;<=>?",
             "!~p{|}0O`", "".join(chr(i) for i in range(1, 256)))


def _garbage(rng) -> str:
    alphabet = ALPHABETS[int(rng.integers(len(ALPHABETS)))]
    return "".join(alphabet[int(rng.integers(len(alphabet)))] for _ in range(int(rng.integers(0, 14))))


def _image_size(rng):
    r = rng.random()
    if r < 0.55:
        return int(rng.integers(1, 41)), int(rng.integers(1, 41))
    if r < 0.65:
        return 0, int(rng.integers(1, 41))
    if r < 0.75:
        return int(rng.integers(1, 41)), 0
    if r < 0.8:
        return 0.5, int(rng.integers(1, 41))
    if r < 0.85:
        return 5e-324, int(rng.integers(1, 41))
    if r < 0.9:
        return float(rng.integers(1, 41)) + 0.7, int(rng.integers(1, 41))
    return 1, int(rng.integers(1, 41))


def _size_int(v):
    return int(v) if isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 else 0


def _segmentation(rng, h, w, gt: bool):
    """(segmentation, documented): one mask of any kind pycocotools reads."""
    from fuzz_json import counts_to_string, runs_of
    hi, wi = _size_int(h), _size_int(w)
    r = rng.random()
    if r < 0.25:  # polygons, sometimes several
        polys = []
        for _ in range(int(rng.integers(1, 3))):
            k = int(rng.integers(3, 6))
            polys.append([round(float(v), 1) for v in rng.uniform(-3, max(wi, hi, 1) + 3, 2 * k)])
        if rng.random() < 0.04:  # documented: a NaN or huge coordinate
            polys[0][int(rng.integers(len(polys[0])))] = float("nan") if rng.random() < 0.5 else 3e6
            return polys, True
        return polys, False
    size = [h, w]
    if rng.random() < 0.1:  # an RLE of its own size (another size, or one of no pixels)
        size = [int(rng.integers(0, 41)), int(rng.integers(0, 41))]
    sh, sw = _size_int(size[0]), _size_int(size[1])
    counts = runs_of(_mask(rng, sh, sw)) or [0]
    r = rng.random()
    if r < 0.35:
        s = counts_to_string(counts)
    elif r < 0.5:  # counts that cover fewer or more pixels
        counts = list(counts)
        counts[-1] = max(0, counts[-1] + int(rng.integers(-5, 6)))
        if rng.random() < 0.5:
            counts += [int(rng.integers(0, 9)), int(rng.integers(0, 9))]
        s = counts_to_string(counts)
    elif r < 0.62:
        s = _garbage(rng)
    elif r < 0.72:  # a string whose last count runs past its end
        s = counts_to_string(counts) + "`"[:1] * int(rng.integers(1, 3))
    else:
        s = None
    if s is not None:
        return {"size": size, "counts": s}, False
    if gt:  # uncompressed counts (crowd regions), covering their size or not, floats or not
        counts = list(counts)
        if rng.random() < 0.4:
            counts[-1] = max(0, counts[-1] + int(rng.integers(-3, 4)))
        if rng.random() < 0.3:
            counts = [float(c) for c in counts]
        return {"size": size, "counts": counts}, False
    return {"size": size, "counts": counts_to_string(counts)}, False


def case(rng) -> dict:
    """One ground truth and its results, and the evaluation to run."""
    lib = "lvis" if rng.random() < 0.2 else "coco"
    iou = "bbox" if rng.random() < 0.3 else "segm"
    n_cats = int(rng.integers(1, 3))
    cats = [{"id": c, "name": f"c{c}"} for c in range(1, n_cats + 1)]
    if lib == "lvis":
        for c in cats:
            c["frequency"] = "f"
    images, anns, results = [], [], []
    documented = False
    for iid in range(1, int(rng.integers(2, 4))):
        h, w = _image_size(rng)
        img = {"id": iid, "height": h, "width": w, "file_name": f"{iid}.jpg"}
        if lib == "lvis":
            img.update(neg_category_ids=[], not_exhaustive_category_ids=[])
        images.append(img)
        for _ in range(int(rng.integers(0, 4))):
            seg, doc = _segmentation(rng, h, w, gt=True)
            documented |= doc and iou == "segm"
            crowd = int(type(seg) is dict and type(seg["counts"]) is list) if lib == "coco" else 0
            ann = {"id": len(anns) + 1, "image_id": iid, "category_id": int(rng.integers(1, n_cats + 1)),
                   "segmentation": seg, "area": float(rng.integers(1, 200)),
                   "bbox": [float(v) for v in rng.integers(0, 20, 4)], "iscrowd": crowd}
            if lib == "lvis":
                del ann["iscrowd"]
            anns.append(ann)
        for _ in range(int(rng.integers(1, 4))):
            seg, doc = _segmentation(rng, h, w, gt=False)
            if type(seg) is not dict:  # (results: compressed RLEs)
                seg = {"size": [h, w], "counts": _garbage(rng)}
            res = {"image_id": iid, "category_id": int(rng.integers(1, n_cats + 1)), "segmentation": seg,
                   "score": round(float(rng.random()), 2)}
            if iou == "bbox" or rng.random() < 0.3:
                res["bbox"] = [float(v) for v in rng.integers(0, 20, 4)]
            results.append(res)
    if iou == "bbox":  # (box results: each has one, the first decides the kind)
        for res in results:
            res.setdefault("bbox", [1.0, 1.0, 3.0, 3.0])
    gt = {"images": images, "annotations": anns, "categories": cats}
    out = {"gt": json.dumps(gt).encode(), "dt": json.dumps(results).encode(), "lib": lib, "iou": iou,
           "documented": documented, "family_kind": f"{lib} {iou}"}
    # The original reads a string whose last count runs past its end beyond
    # the string (what it reads there is whatever memory follows, and it may
    # write past its buffer): its reference is the same evaluation with a NUL
    # after each such string, which it reads as boundary_api reads the end of
    # the string (docs/known_differences.md)
    if any(_past_end(a.get("segmentation")) for a in anns + results):
        for a in anns + results:
            if _past_end(a.get("segmentation")):
                a["segmentation"]["counts"] += "\0"
        out["gt_ref"] = json.dumps(gt).encode()
        out["dt_ref"] = json.dumps(results).encode()
        out["family_kind"] += ", strings read past their end"
    return out


def _past_end(seg) -> bool:
    """A compressed RLE string whose last count runs past its end."""
    if type(seg) is not dict or type(seg.get("counts")) is not str or not seg["counts"]:
        return False
    return bool((seg["counts"].encode()[-1] - 48) & 0x20)


# ----------------------------------------------------------------- comparison

def _evaluate(lib: str, original: bool, gt_path: str, dt_path: str, iou: str) -> dict:
    """What one evaluation gives: stats, IoUs and the loaded results' areas and
    boxes (the library's printing swallowed by the caller)."""
    from fuzz_compare import coco_evaluation

    if lib == "coco":
        if original:
            from pycocotools.coco import COCO
            from pycocotools.cocoeval import COCOeval
        else:
            from boundary_api import COCO, COCOeval
        out = coco_evaluation(COCO, COCOeval, gt_path, dt_path, iou)
        stats, ious, dt_anns = out["stats"], out["ious"], out["anns"]
    else:
        if original:
            np.float = float  # (lvis' accumulate, as on numpy < 1.24)
            from lvis import LVIS, LVISEval, LVISResults
        else:
            from boundary_api import LVIS, LVISEval, LVISResults
        gt = LVIS(gt_path)
        dt = LVISResults(gt, dt_path)
        ev = LVISEval(gt, dt, iou)
        ev.run()
        stats, ious, dt_anns = dict(ev.get_results()), dict(ev.ious), dt.anns
    anns = {k: (a.get("area"), a.get("bbox")) for k, a in dt_anns.items()}
    return {"stats": stats, "ious": ious, "anns": anns}


def compare(case: dict, side: str) -> dict:
    from fuzz_compare import _call, _write, diff

    gt_path = _write("gt.json", case["gt"])
    dt_path = _write("dt.json", case["dt"])
    gt_ref = _write("gt_ref.json", case["gt_ref"]) if "gt_ref" in case else gt_path
    dt_ref = _write("dt_ref.json", case["dt_ref"]) if "dt_ref" in case else dt_path
    lib, iou = case["lib"], case["iou"]

    def ours():
        return _evaluate(lib, False, gt_path, dt_path, iou)

    def theirs():
        signal.alarm(HANG_SECONDS)   # (never returning ends the worker: the runner tells it from a crash)
        try:
            return _evaluate(lib, True, gt_ref, dt_ref, iou)
        finally:
            signal.alarm(0)

    if side == "ours":
        _, err = _call(ours)
        return {"status": "ran", "refused": None if err is None else type(err).__name__,
                "message": None if err is None else str(err)[:300]}
    if side == "theirs":
        _call(theirs)
        return {"status": "ran"}
    (a, ea), (b, eb) = _call(ours), _call(theirs)
    if ea is not None and case["documented"] and type(ea).__name__ == "UnsafePolygonError":
        return {"status": "documented", "detail": str(ea)[:200]}
    if ea is not None and eb is not None:
        if type(ea).__name__ != type(eb).__name__:
            return {"status": "mismatch", "detail": f"ours raised {type(ea).__name__}: {str(ea)[:200]}; the "
                                                    f"original {type(eb).__name__}: {str(eb)[:200]}"}
        return {"status": "both_refused", "detail": type(eb).__name__}
    if ea is not None:
        return {"status": "theirs_only", "detail": f"ours: {type(ea).__name__}: {str(ea)[:300]}"}
    if eb is not None:
        return {"status": "ours_only", "detail": f"theirs: {type(eb).__name__}: {str(eb)[:300]}"}
    d = diff(a, b)
    return {"status": "mismatch", "detail": d} if d else {"status": "same"}
