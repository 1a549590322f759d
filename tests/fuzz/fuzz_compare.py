"""The comparisons of the differential fuzz suite, run in a worker process
(fuzz_worker.py): one function per family, taking a case and the side(s) to run,
returning ``{"status": ..., "detail": ...}``.

Statuses: ``same`` (both sides accepted the input and every value compared
is equal, types included), ``both_refused`` (both raised), ``documented``
(the difference the case is labelled with, listed in docs/known_differences.md,
and no other), ``ours_only`` / ``theirs_only`` (only that side accepted the
input), ``mismatch`` (both accepted, some value differs), ``ran`` (one side
alone ran, for telling whose crash a dead worker's case was).
"""
from __future__ import annotations

import contextlib
import io
import math
import os
import struct

import numpy as np


# --------------------------------------------------------------------------- values

def diff(a, b, where="") -> str:
    """Where ``a`` and ``b`` first differ (types exact, floats bit for bit,
    NaN equal to NaN, dict keys in order), or "" when they are equal."""
    if isinstance(a, dict) and isinstance(b, dict):
        if list(a) != list(b):
            return f"{where}: keys {list(a)[:12]} != {list(b)[:12]}"
        for k in a:
            d = diff(a[k], b[k], f"{where}[{k!r}]")
            if d:
                return d
        return ""
    if type(a) is not type(b):
        return f"{where}: type {type(a).__name__} != {type(b).__name__} ({a!r:.80} vs {b!r:.80})"
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{where}: length {len(a)} != {len(b)}"
        for k, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y, f"{where}[{k}]")
            if d:
                return d
        return ""
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return f"{where}: array {a.dtype}{a.shape} != {b.dtype}{b.shape}"
        if a.dtype.kind == "f":
            # bit for bit, NaN equal to NaN (whatever its payload)
            same = np.array_equal(a, b, equal_nan=True) and np.array_equal(np.signbit(a), np.signbit(b))
        else:
            same = np.array_equal(a, b)
        return "" if same else f"{where}: arrays differ"
    if isinstance(a, (float, np.floating)):
        if math.isnan(a) and math.isnan(b):
            return ""
        if struct.pack("<d", float(a)) != struct.pack("<d", float(b)):
            return f"{where}: {a!r} != {b!r}"
        return ""
    if a != b:
        return f"{where}: {a!r:.120} != {b!r:.120}"
    return ""


def _call(fn):
    """(value, None) or (None, exception) of ``fn()``, its printing swallowed."""
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            return fn(), None
    except Exception as exc:  # either library's refusal, whatever its class
        return None, exc


def _outcome(ours, theirs, compare, expect=None):
    """The status of a case from both sides' (value, exception) pairs."""
    (a, ea), (b, eb) = ours, theirs
    if ea is not None and eb is not None:
        return {"status": "both_refused", "detail": f"{type(ea).__name__} / {type(eb).__name__}"}
    if ea is not None:
        documented = expect and expect.startswith("theirs_only") or type(ea).__name__ in DOCUMENTED_REFUSALS
        status = "documented" if documented else "theirs_only"
        return {"status": status, "detail": f"{expect or ''} ours: {type(ea).__name__}: {str(ea)[:300]}"}
    if eb is not None:
        status = "documented" if expect and expect.startswith("ours_only") else "ours_only"
        return {"status": status, "detail": f"{expect or ''} theirs: {type(eb).__name__}: {str(eb)[:300]}"}
    d = compare(a, b)
    return {"status": "mismatch", "detail": d} if d else {"status": "same"}


def _one_side(side, ours_fn, theirs_fn):
    """One side alone (its exception swallowed): whose crash a case is."""
    _call(ours_fn if side == "ours" else theirs_fn)
    return {"status": "ran"}


# --------------------------------------------------------------------------- JSON

def _write(name: str, data: bytes) -> str:
    with open(name, "wb") as f:
        f.write(data)
    return os.path.abspath(name)


def _safe_segmentation(seg) -> bool:
    if isinstance(seg, list):
        for poly in seg:
            if not isinstance(poly, list):
                return False
            for v in poly:
                if not isinstance(v, (int, float)) or isinstance(v, bool) or not abs(v) <= 1e6:
                    return False
    return True


#: boundary_api's refusals of input the originals load: docs/known_differences.md
DOCUMENTED_REFUSALS = {
    "UnsafePolygonError": "polygons with NaN, infinite or huge (> 1e6) coordinates are refused",
}


def _coco_view(c):
    """Every value a user reads from a loaded pycocotools COCO."""
    view = {"dataset": c.dataset, "anns": c.anns, "imgs": c.imgs, "cats": c.cats,
            "imgToAnns": dict(c.imgToAnns), "catToImgs": dict(c.catToImgs),
            "getAnnIds": c.getAnnIds(), "getImgIds": c.getImgIds(), "getCatIds": c.getCatIds()}
    rles = {}
    for aid, ann in c.anns.items():
        # (pycocotools' C code crashes or exhausts memory on polygons of
        # non-finite or huge coordinates, which boundary_api refuses on load)
        if "segmentation" in ann and ann.get("image_id") in c.imgs and _safe_segmentation(ann["segmentation"]):
            rles[aid] = _call(lambda: c.annToRLE(ann))
    view["annToRLE"] = {k: (v if e is None else f"raised {type(e).__name__}") for k, (v, e) in rles.items()}
    return view


def _lvis_view(c):
    view = {"dataset": c.dataset, "anns": c.anns, "imgs": c.imgs, "cats": c.cats,
            "img_ann_map": dict(c.img_ann_map), "cat_img_map": dict(c.cat_img_map),
            "get_ann_ids": c.get_ann_ids(), "get_img_ids": c.get_img_ids(), "get_cat_ids": c.get_cat_ids()}
    return view


def compare_json(case: dict, side: str):
    """A ground truth or results file loaded by boundary_api and by the
    original (pycocotools' COCO / loadRes, lvis' LVIS / LVISResults)."""
    api = case["api"]
    path = _write("input.json", case["data"])
    if api in ("coco_res", "lvis_res"):
        gt_path = _write("gt.json", case["gt"])
    if api.startswith("coco"):
        import pycocotools.coco

        import boundary_api

        view = _coco_view
        if api == "coco_gt":
            def ours():
                return boundary_api.COCO(path)

            def theirs():
                return pycocotools.coco.COCO(path)
        else:
            gt_ours, err = _call(lambda: boundary_api.COCO(gt_path))
            gt_theirs, err2 = _call(lambda: pycocotools.coco.COCO(gt_path))
            if err or err2:
                return {"status": "error", "detail": f"ground truth not loaded: {err!r} {err2!r}"}

            def ours():
                return gt_ours.loadRes(path)

            def theirs():
                return gt_theirs.loadRes(path)
    else:
        import lvis

        import boundary_api

        view = _lvis_view
        if api == "lvis_gt":
            def ours():
                return boundary_api.LVIS(path)

            def theirs():
                return lvis.LVIS(path)
        else:
            gt_ours, err = _call(lambda: boundary_api.LVIS(gt_path))
            gt_theirs, err2 = _call(lambda: lvis.LVIS(gt_path))
            if err or err2:
                return {"status": "error", "detail": f"ground truth not loaded: {err!r} {err2!r}"}

            def ours():
                return boundary_api.LVISResults(gt_ours, path)

            def theirs():
                return lvis.LVISResults(gt_theirs, path)
    if side != "both":
        return _one_side(side, lambda: view(ours()), lambda: view(theirs()))
    a = _call(lambda: view(ours()))
    b = _call(lambda: view(theirs()))
    if "ref_data" in case:
        # a documented refusal of the original: it must refuse, and what
        # boundary_api reads must be what the original reads from the same
        # document written as it can read it
        if b[1] is None:
            return {"status": "mismatch",
                    "detail": f"the original read an input documented as refused ({case['expect']})"}
        if a[1] is not None:
            return {"status": "theirs_only", "detail": f"{case['expect']}: ours: {type(a[1]).__name__}: {a[1]}"}
        _write("input.json", case["ref_data"])
        b = _call(lambda: view(theirs()))
        out = _outcome(a, b, diff)
        return {"status": "documented", "detail": case["expect"]} if out["status"] == "same" else out
    return _outcome(a, b, diff, case.get("expect"))


# --------------------------------------------------------------------------- RLE

def coco_evaluation(lib_coco, lib_eval, gt_path, dt_path, iou_type):
    """What a COCO evaluation by ``lib_coco`` / ``lib_eval`` (pycocotools' classes or
    the drop-ins) gives: the loaded results, IoUs, matches, accumulation and stats."""
    gt = lib_coco(gt_path)
    dt = gt.loadRes(dt_path)
    ev = lib_eval(gt, dt, iou_type)
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    ious = {k: v for k, v in ev.ious.items()}
    return {"anns": dt.anns, "ious": ious, "evalImgs": ev.evalImgs,
            "precision": ev.eval["precision"], "recall": ev.eval["recall"], "scores": ev.eval["scores"],
            "stats": ev.stats}


def _without_segmentations(out):
    out["anns"] = {k: {f: v for f, v in a.items() if f != "segmentation"} for k, a in out["anns"].items()}
    return out


def compare_rle(case: dict, side: str):
    """RLEs through the public API: the results' areas and boxes computed by
    ``loadRes`` from the strings (pycocotools' area / toBbox), the IoUs,
    matches and AP of a 'segm' evaluation (pycocotools' iou), against
    pycocotools; and each RLE's boundary (``rle_to_boundary``: the package's
    decoder and encoder) against pycocotools' encode of the NumPy/OpenCV
    oracle's boundary of pycocotools' decode."""
    import pycocotools.coco
    import pycocotools.cocoeval
    import pycocotools.mask as mask_utils

    import boundary_api
    from boundary_api.masks import reference, rle_to_boundary

    gt_path = _write("gt.json", case["gt"])
    dt_path = _write("dt.json", case["dt"])
    # strings with empty runs: the reference is pycocotools on the canonical
    # strings of the same masks (pycocotools' box and IoU of such strings are
    # not the masks'); the segmentations then differ in their spelling only
    ref = "gt_ref" in case
    gt_ref = _write("gt_ref.json", case["gt_ref"]) if ref else gt_path
    dt_ref = _write("dt_ref.json", case["dt_ref"]) if ref else dt_path

    def ours():
        out = coco_evaluation(boundary_api.COCO, boundary_api.COCOeval, gt_path, dt_path, "segm")
        return _without_segmentations(out) if ref else out

    def theirs():
        out = coco_evaluation(pycocotools.coco.COCO, pycocotools.cocoeval.COCOeval, gt_ref, dt_ref, "segm")
        return _without_segmentations(out) if ref else out

    if side != "both":
        return _one_side(side, ours, theirs)
    out = _outcome(_call(ours), _call(theirs), diff)
    if out["status"] != "same":
        return out
    for rle, ratio in case["boundaries"]:
        got, err = _call(lambda: rle_to_boundary(dict(rle), ratio))
        if err is not None:
            return {"status": "theirs_only", "detail": f"rle_to_boundary: {type(err).__name__}: {err}"}
        mask = mask_utils.decode(dict(rle, counts=rle["counts"].encode()))
        want = mask_utils.encode(np.asfortranarray(reference.mask_to_boundary(mask, ratio).astype(np.uint8)))
        g = got["counts"] if isinstance(got["counts"], bytes) else got["counts"].encode()
        if g != want["counts"] or list(got["size"]) != list(want["size"]):
            return {"status": "mismatch", "detail": f"rle_to_boundary of {rle} at {ratio}"}
    return out


# --------------------------------------------------------------------------- PNG

def _pillow(path):
    from PIL import Image

    with Image.open(path) as im:
        return im.mode, np.array(im)


def _panoptic_rule(mode, arr):
    """The ids of Pillow's values: rgb2id of RGB(A), a single channel as is
    (LA's alpha dropped); None: refused."""
    if mode in ("RGB", "RGBA"):
        a = arr.astype(np.uint32)
        return a[..., 0] | (a[..., 1] << 8) | (a[..., 2] << 16)
    if mode == "LA":
        arr = arr[..., 0]
    if arr.ndim == 2:
        return arr.astype(np.uint32)
    return None


LABEL_MODES = ("1", "L", "P", "I", "I;16", "I;16B", "I;16L")


def compare_png(case: dict, side: str):
    """A PNG file read by boundary_api's readers and by Pillow: the native
    label-map and panoptic decoders (when they take the file, Pillow's values),
    ``read_label_map`` (Pillow's values, or a ValueError where Pillow fails or
    the image has several channels), ``read_panoptic_png`` (rgb2id of Pillow's
    RGB, a single channel as ids) and ``read_mask_file`` (any nonzero value of
    Pillow's array); an image over ``max_pixels`` refused before decoding."""
    from boundary_api.masks import _idmaps, _png
    from boundary_api.masks.imagefiles import ImageTooLargeError, read_label_map, read_mask_file
    from boundary_api.panoptic import read_panoptic_png

    data = case["data"]
    path = _write("x.png", data)
    limit = case.get("max_pixels", "default")
    kw = {} if limit == "default" else {"max_pixels": limit}
    if side == "theirs":
        _call(lambda: _pillow(path))
        return {"status": "ran"}
    if side == "ours":
        for fn in (lambda: _png.png_label_map(data), lambda: _png.pan_png_ids(data),
                   lambda: read_label_map(path, **kw), lambda: read_panoptic_png(path, **kw),
                   lambda: read_mask_file(path, **kw)):
            _call(fn)
        return {"status": "ran"}
    size = None
    if len(data) >= 24 and data[12:16] == b"IHDR":
        size = int.from_bytes(data[16:20], "big") * int.from_bytes(data[20:24], "big")
    too_large = size is not None and (limit == "default" and size > 2 ** 27 or limit not in ("default", None)
                                      and size > limit)
    pil, perr = _call(lambda: _pillow(path))
    problems = []
    # the native decoders: a file they take is one Pillow reads, to the same
    # values (they set no size limit of their own: a bomb Pillow refuses by
    # its size is their callers' to refuse, as the readers below do)
    from PIL import Image

    bomb = size is not None and size > 2 * Image.MAX_IMAGE_PIXELS
    nat, nerr = _call(lambda: None if bomb else _png.png_label_map(data))
    if nerr is not None and not isinstance(nerr, MemoryError):
        problems.append(f"png_label_map raised {nerr!r}")
    if nat is not None:
        if pil is None:
            problems.append(f"png_label_map decoded a file Pillow refuses ({perr!r})")
        else:
            want = pil[1].astype(np.uint8) if pil[1].dtype == bool else pil[1]
            if pil[0] not in LABEL_MODES or want.shape != nat.shape or not np.array_equal(want, nat) \
                    or nat.dtype != want.dtype.newbyteorder("="):
                problems.append(f"png_label_map differs from Pillow (mode {pil[0]})")
    ids, ierr = _call(lambda: None if bomb else _png.pan_png_ids(data))
    if ierr is not None and not isinstance(ierr, MemoryError):
        problems.append(f"pan_png_ids raised {ierr!r}")
    if ids is not None:
        want = None if pil is None else _panoptic_rule(*pil)
        if want is None or not np.array_equal(want, ids):
            problems.append(f"pan_png_ids differs from Pillow ({perr!r})")
        runs, rerr = _call(lambda: _png.pan_png_runs(data))
        if runs is None or runs[:2] != ids.shape or not np.array_equal(
                _idmaps.pan_runs_to_ids(runs[2], runs[3], *runs[:2]), ids):
            problems.append(f"pan_png_runs differs from pan_png_ids ({rerr!r})")
    # the public readers
    for name, fn, rule in (
            ("read_label_map", lambda: read_label_map(path, **kw),
             lambda m, a: (a.astype(np.uint8) if a.dtype == bool else a) if m in LABEL_MODES else None),
            ("read_panoptic_png", lambda: read_panoptic_png(path, **kw), _panoptic_rule),
            ("read_mask_file", lambda: read_mask_file(path, **kw),
             lambda m, a: ((a.any(axis=2) if a.ndim == 3 else a) != 0).astype(np.uint8))):
        got, err = _call(fn)
        if err is not None and not isinstance(err, ValueError):
            problems.append(f"{name} raised {type(err).__name__} (not a ValueError): {err}")
        elif err is not None and "\n" in str(err):
            problems.append(f"{name}: a message of several lines")
        if too_large:
            if not isinstance(err, ImageTooLargeError):
                problems.append(f"{name} did not refuse an image over the limit ({err!r})")
            continue
        want = None if pil is None else rule(*pil)
        if want is None:
            if err is None:
                problems.append(f"{name} accepted a file Pillow refuses or that is no {name[5:]} "
                                f"({perr!r}, mode {pil and pil[0]})")
        elif err is not None:
            if not isinstance(err, ImageTooLargeError) or "into memory" not in str(err):
                problems.append(f"{name} refused a file Pillow reads: {err}")
        else:
            want = np.asarray(want)
            if got.shape != want.shape or not np.array_equal(got, want):
                problems.append(f"{name} differs from Pillow's values (mode {pil[0]})")
            elif name == "read_label_map" and got.dtype != want.dtype.newbyteorder("="):
                problems.append(f"read_label_map dtype {got.dtype}, Pillow's {want.dtype}")
    if problems:
        return {"status": "mismatch", "detail": "; ".join(problems)}
    if pil is None:
        return {"status": "both_refused", "detail": type(perr).__name__}
    if nat is not None or ids is not None:
        return {"status": "same, decoded natively"}
    return {"status": "same"}


def compare_suspect(case: dict, side: str):
    """Masks pycocotools misreads, crashes or hangs on (fuzz_suspect.py)."""
    from fuzz_suspect import compare

    return compare(case, side)


def compare_vis(case: dict, side: str):
    """YouTube-VIS files: the native scanner against the JSON reader (fuzz_vis.py)."""
    from fuzz_vis import compare_vis as compare

    return compare(case, side)


def compare_saco(case: dict, side: str):
    """SA-Co predictions: the native reader against the JSON reader (fuzz_saco.py)."""
    from fuzz_saco import compare_saco as compare

    return compare(case, side)


FAMILIES = {"json": compare_json, "rle": compare_rle, "png": compare_png, "vis": compare_vis,
            "suspect": compare_suspect, "saco": compare_saco}
