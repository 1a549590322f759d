"""Make the SA-Co goldens of tests/data/saco/ (see README.md there).

Writes the input sets with ``boundary_api.saco.synthetic`` (this package's environment),
then runs SAM 3's own ``CGF1Evaluator`` on each (``run_official.py``, in the official
evaluator's environment) and stores what it returned and computed::

    python tests/data/saco/make_goldens.py --sam3 /work/official/sam3 \\
        --official-python /work/venvs/official-sam3/bin/python
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

#: name -> (gold_like arguments, IoU types the official code is run with)
SETS = {
    "gold3": (dict(num_pairs=150, seed=101, height=120, width=160), ("segm", "bbox")),
    "gold1": (dict(num_pairs=80, seed=102, num_files=1, height=120, width=160), ("segm", "bbox")),
    "plain3": (dict(num_pairs=60, seed=103, adversarial=False, height=240, width=320), ("segm",)),
}

#: variants of a set's predictions: name -> (set, how, IoU types)
VARIANTS = {
    "empty": ("gold3", "[] (no prediction at all)", ("segm",)),
    "boxes_only": ("gold3", "no segmentation (the official loadRes makes each box a rectangle polygon)", ("segm",)),
    # (one file: with several, the official loadRes fails on the boxes it left in the dicts)
    "no_bbox": ("gold1", "no bbox (the official loadRes takes the mask's box)", ("bbox", "segm")),
    "malformed": ("gold3", "three masks pycocotools misreads (see malformed())", ("segm",)),
}


def malformed(preds, gt):
    """Copies of the predictions with three masks pycocotools reads otherwise than
    as valid masks but evaluates (no crash, no endless loop): in pairs of the first
    file that have ground truth, the first kept prediction (score >= 0.5) gets the
    counts ``"!!!garbage"``, the second a size one row taller than its counts cover;
    the first prediction below 0.5 gets ``"!!!garbage"`` too (the official IoU step
    reads it, its evaluation drops it)."""
    with_gt = {a["image_id"] for a in gt["annotations"] if not a["iscrowd"]}
    exhaustive = {i["id"] for i in gt["images"] if i["is_instance_exhaustive"]}
    out = [dict(p, segmentation=dict(p["segmentation"])) for p in preds]
    kept = [p for p in out if p["score"] >= 0.5 and p["image_id"] in with_gt & exhaustive]
    low = next(p for p in out if p["score"] < 0.5 and p["image_id"] in with_gt & exhaustive)
    kept[0]["segmentation"]["counts"] = "!!!garbage"
    size = kept[1]["segmentation"]["size"]
    kept[1]["segmentation"]["size"] = [size[0] + 1, size[1]]
    low["segmentation"]["counts"] = "!!!garbage"
    return out


def write_sets():
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
    from boundary_api.saco.synthetic import gold_like

    for name, (kwargs, _) in SETS.items():
        gts, preds = gold_like(**kwargs)
        for f, gt in enumerate(gts):
            with open(os.path.join(HERE, f"{name}_gt_{chr(97 + f)}.json"), "w") as fh:
                json.dump(gt, fh, separators=(",", ":"))
        with open(os.path.join(HERE, f"{name}_pred.json"), "w") as fh:
            json.dump(preds, fh, separators=(",", ":"))
    make = {
        "empty": lambda preds: [],
        "boxes_only": lambda preds: [{k: v for k, v in p.items() if k != "segmentation"} for p in preds],
        "no_bbox": lambda preds: [{k: v for k, v in p.items() if k != "bbox"} for p in preds],
        "malformed": lambda preds: malformed(preds, first_gt("gold3")),
    }
    for name, (base, _, _) in VARIANTS.items():
        with open(os.path.join(HERE, f"{base}_pred.json")) as fh:
            preds = json.load(fh)
        with open(os.path.join(HERE, f"{base}_pred_{name}.json"), "w") as fh:
            json.dump(make[name](preds), fh, separators=(",", ":"))


def first_gt(name):
    with open(gt_files(name)[0]) as fh:
        return json.load(fh)


def gt_files(name):
    n = SETS[name][0].get("num_files", 3)
    return [os.path.join(HERE, f"{name}_gt_{chr(97 + f)}.json") for f in range(n)]


def run_official(args):
    runs = [(name, os.path.join(HERE, f"{name}_pred.json"), t, f"{name}_official_{t}.json")
            for name, (_, types) in SETS.items() for t in types]
    runs += [(base, os.path.join(HERE, f"{base}_pred_{v}.json"), t, f"{base}_{v}_official_{t}.json")
             for v, (base, _, types) in VARIANTS.items() for t in types]
    for name, pred, iou_type, out in runs:
        cmd = [args.official_python, os.path.join(HERE, "run_official.py"), "--sam3", args.sam3,
               "--gt", *gt_files(name), "--dt", pred, "--iou-type", iou_type, "--out", os.path.join(HERE, out)]
        subprocess.run(cmd, check=True)
        # paths relative to the checkout in the stored output
        print("wrote", out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sam3", required=True, help="a checkout of facebookresearch/sam3")
    ap.add_argument("--official-python", required=True, help="python of an environment with numpy, scipy, "
                                                             "pycocotools and tqdm")
    ap.add_argument("--skip-data", action="store_true", help="keep the input files, run the official code only")
    args = ap.parse_args()
    if not args.skip_data:
        write_sets()
    run_official(args)


if __name__ == "__main__":
    main()
