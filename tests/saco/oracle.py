"""A plain NumPy / SciPy oracle of cgF1 (SAM 3's ``CGF1Evaluator``), written from its
definition for the tests: masks decoded to arrays, IoUs by counting pixels, boundaries
by the OpenCV definition (``boundary_api.masks.reference``), SciPy's
``linear_sum_assignment`` per pair, the official formulas and epsilons.  No kernel of
the package is used."""
import math
from collections import defaultdict

import numpy as np
import pycocotools.mask as mask_utils
from scipy.optimize import linear_sum_assignment

from boundary_api.masks.reference import mask_to_boundary

THRS = np.linspace(.5, 0.95, int(np.round((0.95 - .5) / .05)) + 1, endpoint=True)
NAMES = ["cgF1", "precision", "recall", "F1", "positive_macro_F1", "positive_micro_F1", "positive_micro_precision"]
IMAGE_LEVEL = ["IL_precision", "IL_recall", "IL_F1", "IL_FPR", "IL_MCC"]


def _mask(seg, h, w):
    if isinstance(seg, list):
        rle = mask_utils.merge(mask_utils.frPyObjects(seg, h, w))
    elif isinstance(seg["counts"], list):
        rle = mask_utils.frPyObjects(seg, h, w)
    else:
        rle = seg
    return mask_utils.decode(rle).astype(bool)


def _box_iou(d, g):
    # pycocotools' box IoU (x, y, w, h)
    w = min(d[0] + d[2], g[0] + g[2]) - max(d[0], g[0])
    if w <= 0:
        return 0.0
    h = min(d[1] + d[3], g[1] + g[3]) - max(d[1], g[1])
    if h <= 0:
        return 0.0
    i = w * h
    return i / (d[2] * d[3] + g[2] * g[3] - i)


def pair_ious(dts, gts, iou_type, h, w, ratio=0.02):
    """The ``(D, G)`` IoU matrix of a pair (no crowd among ``gts``)."""
    out = np.zeros((len(dts), len(gts)))
    if iou_type == "bbox":
        for i, d in enumerate(dts):
            for j, g in enumerate(gts):
                out[i, j] = _box_iou(d["bbox"], g["bbox"])
        return out
    dm = [_mask(d["segmentation"], h, w) for d in dts]
    gm = [_mask(g["segmentation"], h, w) for g in gts]
    if iou_type == "boundary":
        db = [mask_to_boundary(m, ratio).astype(bool) for m in dm]
        gb = [mask_to_boundary(m, ratio).astype(bool) for m in gm]
    for i in range(len(dts)):
        for j in range(len(gts)):
            inter = int((dm[i] & gm[j]).sum())
            if inter == 0:
                continue
            iou = inter / int((dm[i] | gm[j]).sum())
            if iou_type == "boundary":
                bi = int((db[i] & gb[j]).sum())
                biou = bi / int((db[i] | gb[j]).sum()) if bi else 0.0
                iou = min(iou, biou)
            out[i, j] = iou
    return out


def entry(ious, nd, ng):
    """(kind, TP, FP, FN, F1) of one pair against one file; kind 'TN', 'FN' or 'S'."""
    T = len(THRS)
    if nd == 0:
        return ("TN" if ng == 0 else "FN", np.zeros(T, np.int64), np.zeros(T, np.int64),
                np.full(T, ng, np.int64), np.zeros(T))
    if ng == 0:
        tp = np.zeros(T, np.int64)
    else:
        r, c = linear_sum_assignment(-ious)
        s = ious[r, c]
        tp = np.array([(s >= t).sum() for t in THRS], np.int64)
    fp, fn = nd - tp, ng - tp
    p = tp / (tp + fp + 1e-4)
    rc = tp / (tp + fn + 1e-4)
    f1 = 2 * p * rc / (p + rc + 1e-4)
    return ("S", tp, fp, fn, f1)


def evaluate(gts, preds, iou_type, ratio=0.02, threshold=0.5):
    """cgF1 of ``preds`` (a list of dicts) against ground-truth datasets
    ``gts``: ``(values by the official dict's names, chosen entries per pair)``."""
    files = []
    for gt in gts:
        imgs = {img["id"]: img for img in gt["images"]}
        cats = sorted({c["id"] for c in gt["categories"]})
        by_img = defaultdict(list)
        for a in gt["annotations"]:
            by_img[a["image_id"]].append(a)
        files.append((imgs, cats, by_img))
    excluded = {img["id"] for gt in gts[1:] for img in gt["images"] if not img["is_instance_exhaustive"]}
    pairs = [img["id"] for img in gts[0]["images"] if img["is_instance_exhaustive"] and img["id"] not in excluded]
    by_img = defaultdict(list)
    for p in preds:
        by_img[p["image_id"]].append(p)
    chosen = []
    for pid in pairs:
        options = []
        for imgs, cats, anns in files:
            h, w = imgs[pid]["height"], imgs[pid]["width"]
            g = [a for c in cats for a in anns[pid] if a["category_id"] == c and not a.get("iscrowd")]
            d = [p for c in cats for p in by_img[pid] if p["category_id"] == c and p["score"] >= threshold]
            if d and "segmentation" not in d[0] and iou_type != "bbox":
                # the official loadRes: a box-only result's mask is its box's rectangle polygon
                d = [dict(p, segmentation=[[p["bbox"][0], p["bbox"][1], p["bbox"][0], p["bbox"][1] + p["bbox"][3],
                                            p["bbox"][0] + p["bbox"][2], p["bbox"][1] + p["bbox"][3],
                                            p["bbox"][0] + p["bbox"][2], p["bbox"][1]]]) for p in d]
            if d and "bbox" not in d[0] and iou_type == "bbox":
                d = [dict(p, bbox=list(mask_utils.toBbox(p["segmentation"]))) for p in d]
            ious = pair_ious(d, g, iou_type, h, w, ratio) if d and g else np.zeros((len(d), len(g)))
            options.append(entry(ious, len(d), len(g)))
        best = options[0]
        for cur in options[1:]:
            if best[0] != "TN" and cur[0] != "TN":
                if cur[4].mean() > best[4].mean():
                    best = cur
            elif cur[0] == "TN":
                best = cur
        chosen.append(best)
    return accumulate(chosen, iou_type), chosen


def accumulate(chosen, iou_type):
    T = len(THRS)
    TP, FP, FN, pmFP = (np.zeros(T, np.int64) for _ in range(4))
    local = np.zeros(T)
    valid = 0
    il = dict(TP=0, FP=0, TN=0, FN=0)
    for kind, tp, fp, fn, f1, *_ in chosen:
        if kind == "TN":
            il["TN"] += 1
            continue
        TP += tp
        FP += fp
        FN += fn
        if kind == "FN":
            il["FN"] += 1
            pmFP += fp
            continue
        has_gt = (tp + fn)[0] > 0
        if has_gt:
            il["TP"] += 1
            local += f1
            pmFP += fp
            valid += 1
        else:
            il["FP"] += 1
    prec = TP / (TP + FP + 1e-4)
    pm_prec = TP / (TP + pmFP + 1e-4)
    rec = TP / (TP + FN + 1e-4)
    f1 = 2 * prec * rec / (prec + rec + 1e-4)
    pm_f1 = 2 * pm_prec * rec / (pm_prec + rec + 1e-4)
    with np.errstate(invalid="ignore", divide="ignore"):
        macro = local / valid
    il_rec = il["TP"] / (il["TP"] + il["FN"] + 1e-6)
    il_prec = il["TP"] / (il["TP"] + il["FP"] + 1e-6)
    il_f1 = 2 * il_prec * il_rec / (il_prec + il_rec + 1e-6)
    il_fpr = il["FP"] / (il["FP"] + il["TN"] + 1e-6)
    mcc = float(il["TP"] * il["TN"] - il["FP"] * il["FN"]) / (
        (float(il["TP"] + il["FP"]) * float(il["TP"] + il["FN"]) * float(il["TN"] + il["FP"])
         * float(il["TN"] + il["FN"])) ** 0.5 + 1e-6)
    ev = {"precision": prec, "recall": rec, "F1": f1, "positive_macro_F1": macro, "positive_micro_F1": pm_f1,
          "positive_micro_precision": pm_prec, "cgF1": pm_f1 * mcc, "IL_precision": il_prec,
          "IL_recall": il_rec, "IL_F1": il_f1, "IL_FPR": il_fpr, "IL_MCC": mcc}

    def avg(s):
        kept = s[s > -1]
        return -1 if len(kept) == 0 else float(np.mean(kept))

    out = {}
    for n in NAMES:
        out[f"cgF1_eval_{iou_type}_{n}"] = avg(ev[n])
    for n in IMAGE_LEVEL:
        out[f"cgF1_eval_{iou_type}_{n}"] = float(ev[n])
    for thr, k in ((0.5, 0), (0.75, 5)):
        for n in NAMES:
            out[f"cgF1_eval_{iou_type}_{n}@{thr}"] = avg(ev[n][[k]])
    return out


def same(a, b, tol=0.0):
    """Equal numbers (NaN equal to NaN), within ``tol``."""
    a, b = float(a), float(b)
    return (math.isnan(a) and math.isnan(b)) or abs(a - b) <= tol
