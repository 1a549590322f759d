"""Run SAM 3's official cgF1 evaluator on SA-Co/Gold-like files and dump what it computed.

Runs in the official evaluator's own environment (numpy, scipy, pycocotools, tqdm; no torch):
``sam3/eval/cgf1_eval.py`` is loaded on its own from a sam3 checkout by file path (importlib),
so that the ``sam3`` package's ``__init__`` (which imports the model and torch) never runs::

    python run_official.py --sam3 /path/to/sam3 --gt a.json b.json c.json --dt preds.json \\
        --iou-type segm --out golden.json

The output holds the evaluator's returned dict, its ``stats``, the accumulated ``eval``
arrays, every ``evalImgs`` entry (per pair, after the oracle) and the printed lines.
"""
import argparse
import contextlib
import importlib.util
import io
import json
import os
import sys
import time

import numpy as np


def load_cgf1(sam3_root):
    path = os.path.join(sam3_root, "sam3", "eval", "cgf1_eval.py")
    spec = importlib.util.spec_from_file_location("cgf1_eval", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def plain(v):
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, float) and v != v:
        return "nan"
    if isinstance(v, list):
        return [plain(x) for x in v]
    return v


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--sam3", required=True)
    ap.add_argument("--gt", nargs="+", required=True)
    ap.add_argument("--dt", required=True)
    ap.add_argument("--iou-type", default="segm")
    ap.add_argument("--out")
    ap.add_argument("--time-only", action="store_true", help="run and print the wall time only")
    args = ap.parse_args(argv)
    cgf1 = load_cgf1(args.sam3)
    t0 = time.perf_counter()
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        ev = cgf1.CGF1Evaluator(args.gt if len(args.gt) > 1 else args.gt[0], iou_type=args.iou_type)
        out = ev.evaluate(args.dt)
    wall = time.perf_counter() - t0
    if args.time_only:
        print(json.dumps({"wall": wall}))
        return
    e0 = ev.coco_evals[0]
    entries = []
    for r in e0.evalImgs:
        entries.append({k: plain(v) for k, v in r.items()})
    res = {
        "result": {k: plain(v) for k, v in out.items()},
        "stats": plain(e0.stats),
        "eval": {k: plain(v) for k, v in e0.eval.items() if k != "params"},
        "eval_img_ids": plain(ev.eval_img_ids),
        "evalImgs": entries,
        "printed": [line for line in buf.getvalue().splitlines() if not line.startswith("Done (t=")],
    }
    text = json.dumps(res)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        print(text)


if __name__ == "__main__":
    main()
