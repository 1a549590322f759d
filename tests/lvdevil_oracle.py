"""The oracle of Fixed AP and Pooled AP: large-vocab-devil's own scripts
(Dave et al. 2021, github.com/achalddave/large-vocab-devil,
``scripts/evaluate_ap_fixed.py`` and ``scripts/evaluate_ap_pooled.py``) run
unchanged on lvis 0.5.3, and the data sets the tests compare on.

Their code is not part of this repository.  Point ``LVDEVIL_DIR`` at a
checkout of it (default ``/tmp/lvdevil``); :func:`available` says whether one
is there.  Around a run, and only for its duration:

- ``numpy.float`` answers ``float`` (lvis' and large-vocab-devil's
  ``accumulate`` call it; it is gone since numpy 1.24): the only change the
  numbers could see, and it does not change them;
- ``lvdevil.utils.logger`` is a stand-in whose ``setup_logger`` returns a
  plain ``logging`` logger (the original, detectron2's, needs fvcore and
  termcolor and only sets up log files);
- ``lvis.LVISEval.print_results`` records the evaluator's ``results`` (the
  scripts print them with three decimals and log two);
- for ``iou_type='boundary'``, which the scripts do not know, they run with
  ``--type segm`` and ``lvis.LVISEval.compute_iou`` returns
  ``min(mask IoU, boundary IoU)``: pycocotools' IoU of the masks and of their
  boundaries (``boundary_api.masks.boundary.rle_to_boundary``).

Run as a script to write ``tests/data/lvis_fixed_pooled.json`` (the golden
numbers the quick tests compare with)::

    LVDEVIL_DIR=/tmp/lvdevil python tests/lvdevil_oracle.py
"""
from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import runpy
import sys
import tempfile
import types

import numpy as np

TESTS = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(TESTS, "data")
LVIS_GT = os.path.join(DATA, "lvis", "lvis_val_100.json")
LVIS_DT = os.path.join(DATA, "lvis", "lvis_val_100_results_jitter.json")
GOLDEN = os.path.join(DATA, "lvis_fixed_pooled.json")

SCRIPTS = {"fixed": "scripts/evaluate_ap_fixed.py", "pooled": "scripts/evaluate_ap_pooled.py"}


def lvdevil_dir() -> str:
    return os.environ.get("LVDEVIL_DIR", "/tmp/lvdevil")


def available() -> bool:
    """Whether a large-vocab-devil checkout is at :func:`lvdevil_dir`."""
    root = lvdevil_dir()
    return all(os.path.isfile(os.path.join(root, p)) for p in
               (*SCRIPTS.values(), "lvdevil/eval_wrapper.py"))


# ----------------------------------------------------------------- the data
#: categories of lvis_val_100.json given more than 10,000 detections in the
#: crowded set: a frequent one, a common one and the only rare one
CROWDED_CATS = (45, 523, 954)
CROWDED_COUNTS = (10_650, 10_013, 10_120)


def make_crowded_results(path: str, seed: int = 0) -> str:
    """Write the crowded results set: the bundled 2865 jittered results, then
    more than 10,000 results for each of :data:`CROWDED_CATS` (shifted copies
    of their ground truths, and boxes on other images), every score rounded
    to two decimals (many ties, at rank 10,000 too); every result has a box
    (``toBbox`` of its mask), so that 'segm' sees the scripts drop it."""
    import pycocotools.mask as mask_utils

    rng = np.random.RandomState(seed)
    with open(LVIS_GT) as f:
        gt = json.load(f)
    with open(LVIS_DT) as f:
        base = json.load(f)
    imgs = {im["id"]: im for im in gt["images"]}
    img_ids = sorted(imgs)

    def encode(mask):
        rle = mask_utils.encode(np.asfortranarray(mask.astype(np.uint8)))
        rle["counts"] = rle["counts"].decode("ascii")
        return rle

    out = []
    for r in base:
        r = dict(r)
        r["bbox"] = mask_utils.toBbox(r["segmentation"]).tolist()
        out.append(r)
    for cat, count in zip(CROWDED_CATS, CROWDED_COUNTS):
        variants = []  # (image id, rle): shifted ground truths of the category
        for ann in gt["annotations"]:
            if ann["category_id"] != cat:
                continue
            im = imgs[ann["image_id"]]
            h, w = im["height"], im["width"]
            mask = mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(ann["segmentation"], h, w)))
            for _ in range(6):
                dy, dx = rng.randint(-8, 9, size=2)
                variants.append((im["id"], encode(np.roll(np.roll(mask, dy, 0), dx, 1))))
        boxes = []  # (image id, rle): boxes on random images
        for _ in range(60):
            im = imgs[img_ids[rng.randint(len(img_ids))]]
            h, w = im["height"], im["width"]
            x0, y0 = rng.randint(0, w - 20), rng.randint(0, h - 20)
            bw, bh = rng.randint(8, min(200, w - x0)), rng.randint(8, min(200, h - y0))
            mask = np.zeros((h, w), np.uint8)
            mask[y0:y0 + bh, x0:x0 + bw] = 1
            boxes.append((im["id"], encode(mask)))
        for _ in range(count):
            img_id, rle = variants[rng.randint(len(variants))] if rng.rand() < 0.6 \
                else boxes[rng.randint(len(boxes))]
            out.append({"image_id": img_id, "category_id": cat, "segmentation": rle,
                        "score": round(float(rng.rand()), 2),
                        "bbox": mask_utils.toBbox(rle).tolist()})
    order = rng.permutation(len(out))  # categories interleaved in the file
    out = [out[i] for i in order]
    with open(path, "w") as f:
        json.dump(out, f)
    return path


def make_rounded_results(path: str) -> str:
    """Write the bundled results with every score rounded to one decimal:
    ties everywhere, at a small K's cut too."""
    with open(LVIS_DT) as f:
        base = json.load(f)
    for r in base:
        r["score"] = round(r["score"], 1)
    with open(path, "w") as f:
        json.dump(base, f)
    return path


# --------------------------------------------------------------- the oracle
@contextlib.contextmanager
def _patched(iou_type: str, captured: list):
    import lvis
    import lvis.eval as lvis_eval

    saved_modules = {k: sys.modules.get(k) for k in ("lvdevil.utils.logger",)}
    stand_in = types.ModuleType("lvdevil.utils.logger")
    stand_in.setup_logger = lambda output=None, distributed_rank=0, *, color=True, name="lvdevil", \
        abbrev_name=None: logging.getLogger(name)
    sys.modules["lvdevil.utils.logger"] = stand_in
    had_float = "float" in np.__dict__
    np.float = float  # numpy 2: lvis' and large-vocab-devil's accumulate call np.float
    cls = lvis_eval.LVISEval
    saved = {name: cls.__dict__[name] for name in ("print_results", "compute_iou")}

    def print_results(self):
        captured.append(self)

    cls.print_results = print_results
    if iou_type == "boundary":
        cls.compute_iou = _min_mask_boundary_iou
    sys.path.insert(0, lvdevil_dir())
    try:
        yield
    finally:
        sys.path.remove(lvdevil_dir())
        for name, fn in saved.items():
            setattr(cls, name, fn)
        if not had_float:
            del np.float
        for k, v in saved_modules.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
        assert lvis.LVISEval is cls


def _min_mask_boundary_iou(self, img_id, cat_id):
    """lvis' ``compute_iou`` with ``min(mask IoU, boundary IoU)`` (dilation
    ratio 0.02) in place of the mask IoU."""
    import pycocotools.mask as mask_utils
    from boundary_api.masks.boundary import rle_to_boundary

    gt, dt = self._get_gt_dt(img_id, cat_id)
    if len(gt) == 0 and len(dt) == 0:
        return []
    idx = np.argsort([-d["score"] for d in dt], kind="mergesort")
    dt = [dt[i] for i in idx]
    g = [a["segmentation"] for a in gt]
    d = [a["segmentation"] for a in dt]
    crowd = [0] * len(g)
    miou = mask_utils.iou(d, g, crowd)
    if len(g) == 0 or len(d) == 0:
        return miou

    def bound(rles):
        out = []
        for r in rles:
            b = rle_to_boundary(r, 0.02)
            out.append(b)
        return out

    biou = mask_utils.iou(bound(d), bound(g), crowd)
    return np.minimum(miou, biou)


def run_original(ap: str, gt_path: str, dt_path: str, iou_type: str = "segm", dets_per_cat: int = 10000,
                 extra=()):
    """Run large-vocab-devil's script for ``ap`` ('fixed' or 'pooled') on the
    files; returns ``(results, evaluator)``: lvis' ``results`` OrderedDict as
    a dict and the evaluator the script ran."""
    captured = []
    script = os.path.join(lvdevil_dir(), SCRIPTS[ap])
    with tempfile.TemporaryDirectory() as out_dir, _patched(iou_type, captured):
        argv = sys.argv
        sys.argv = [script, gt_path, dt_path, out_dir, "--type", "bbox" if iou_type == "bbox" else "segm",
                    "--dets-per-cat", str(dets_per_cat), *extra]
        lvis_logger = logging.getLogger("lvis")
        level = lvis_logger.level
        lvis_logger.setLevel(logging.ERROR)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                runpy.run_path(script, run_name="__main__")
        finally:
            sys.argv = argv
            lvis_logger.setLevel(level)
    (ev,) = captured
    return {k: float(v) for k, v in ev.results.items()}, ev


#: the golden cases: (name, ap, results file ('bundled' or 'crowded'), iou type, dets per category)
CASES = [(f"{ap}-{data}-{iou}-{k}", ap, data, iou, k)
         for ap in ("fixed", "pooled")
         for data, k in (("bundled", 10000), ("bundled", 5), ("rounded", 3), ("crowded", 10000))
         for iou in ("segm", "bbox", "boundary")]


def results_path(data: str, folder: str) -> str:
    """The results file of a case's data set ('bundled', 'rounded' or
    'crowded'), made in ``folder`` if it is generated."""
    if data == "bundled":
        return LVIS_DT
    path = os.path.join(folder, f"{data}_results.json")
    if not os.path.exists(path):
        (make_rounded_results if data == "rounded" else make_crowded_results)(path)
    return path


def main() -> None:  # pragma: no cover - writes the golden file
    logging.basicConfig(level=logging.WARNING)
    doc = {"source": "large-vocab-devil 87dcb5e scripts/evaluate_ap_{fixed,pooled}.py on lvis 0.5.3 "
                     "(tests/lvdevil_oracle.py)", "cases": []}
    only = set(sys.argv[1:])  # names of cases to (re)compute; the others are kept
    if only and os.path.exists(GOLDEN):
        with open(GOLDEN) as f:
            doc["cases"] = [c for c in json.load(f)["cases"] if c["name"] not in only]
    with tempfile.TemporaryDirectory() as folder:
        for name, ap, data, iou, k in CASES:
            if only and name not in only:
                continue
            res, _ = run_original(ap, LVIS_GT, results_path(data, folder), iou, k)
            print(name, res, flush=True)
            doc["cases"].append({"name": name, "ap": ap, "data": data, "iou_type": iou, "dets_per_cat": k,
                                 "results": {key: v.hex() for key, v in res.items()}})
    order = [c[0] for c in CASES]
    doc["cases"].sort(key=lambda c: order.index(c["name"]))
    with open(GOLDEN, "w") as f:
        json.dump(doc, f, indent=1)


if __name__ == "__main__":
    main()
