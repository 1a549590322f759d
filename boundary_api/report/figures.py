"""The report's figures, drawn with matplotlib (imported inside each function,
never at import time; Agg canvases, no pyplot state)."""
from __future__ import annotations

import io
import os
from typing import Dict, Optional

import numpy as np
import pycocotools.mask as mask_utils

from ..diagnostics.tide import ERROR_TYPES
from ..masks.imagefiles import check_image_file
from .data import KINDS

__all__ = ["figures", "figure_errors", "figure_pr_curves", "figure_scatter", "figure_thumbnail", "figure_reliability",
           "figure_confusion", "figure_intervals", "figure_frame_values", "figure_frame_outlines", "to_png"]

ERROR_LABELS = {"cls": "classification", "loc": "localization", "both": "cls + loc", "dupe": "duplicate",
                "bkg": "background", "miss": "missed", "boundary": "boundary"}
SIZES = ("all", "small", "medium", "large")
#: colour and line style of each evaluation of the report
STYLES = {"mask": ("#4c72b0", "-"), "boundary": ("#c44e52", "--"), "box": ("#55a868", "-")}


def _figure(w, h):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), dpi=100)
    FigureCanvasAgg(fig)
    return fig


def to_png(fig) -> bytes:
    """The figure as PNG bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def figure_errors(errors: dict, what: str = "min(mask, boundary) IoU"):
    """Bars of each error type's ΔAP (x100), overall and per size."""
    fig = _figure(9, 3.2)
    groups = [("all", errors["errors"])] + [(s, errors["per_size"][s]["errors"]) for s in SIZES[1:]]
    for n, (label, values) in enumerate(groups):
        ax = fig.add_subplot(1, len(groups), n + 1)
        heights = [100.0 * values[t] for t in ERROR_TYPES]
        colors = ["#c44e52" if t == "boundary" else "#4c72b0" for t in ERROR_TYPES]
        ax.barh(range(len(ERROR_TYPES)), heights, color=colors)
        ax.set_yticks(range(len(ERROR_TYPES)))
        ax.set_yticklabels([ERROR_LABELS[t] for t in ERROR_TYPES] if n == 0 else [])
        ax.invert_yaxis()
        ax.set_title(label)
        ax.set_xlabel("ΔAP")
    fig.suptitle(f"AP gained by fixing each error type (TIDE, {what})")
    fig.tight_layout()
    return fig


def figure_pr_curves(pr: dict, rec_thrs):
    """Precision-recall curves of each evaluation (Mask and Boundary AP, or box
    AP) per size and IoU threshold."""
    fig = _figure(9, 6.5)
    for n, size in enumerate(SIZES):
        ax = fig.add_subplot(2, 2, n + 1)
        for kind in pr:
            style = STYLES.get(kind, (None, "-"))[1]
            for thr, prec in pr[kind][size].items():
                ax.plot(rec_thrs, prec, style, label=f"{kind} IoU={thr:g}")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.02)
        ax.set_title(size)
        ax.set_xlabel("recall")
        ax.set_ylabel("precision")
        ax.grid(alpha=0.3)
        if n == 0:
            ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def figure_scatter(per_category: dict, label: int = 5):
    """Per-category Mask AP (x) against Boundary AP (y); the ``label`` categories
    farthest below the diagonal are named."""
    fig = _figure(5, 5)
    ax = fig.add_subplot(1, 1, 1)
    rows = [r for r in per_category.values() if r["mask_AP"] is not None and r["boundary_AP"] is not None]
    x = np.array([r["mask_AP"] for r in rows], dtype=np.float64)
    y = np.array([r["boundary_AP"] for r in rows], dtype=np.float64)
    ax.plot([0, 1], [0, 1], color="0.6", lw=1)
    ax.scatter(x, y, s=14, color="#4c72b0")
    for i in np.argsort(y - x, kind="mergesort")[:label]:
        ax.annotate(rows[i]["name"], (x[i], y[i]), fontsize=7, xytext=(3, -8), textcoords="offset points")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("Mask AP")
    ax.set_ylabel("Boundary AP")
    ax.set_title("per category (below the diagonal: poor outlines)")
    fig.tight_layout()
    return fig


def _thicken(m, k):
    out = m.copy()
    for _ in range(k):
        grown = out.copy()
        grown[1:, :] |= out[:-1, :]
        grown[:-1, :] |= out[1:, :]
        grown[:, 1:] |= out[:, :-1]
        grown[:, :-1] |= out[:, 1:]
        out = grown
    return out


def _outline(m):
    inner = m.copy()
    inner[1:, :] &= m[:-1, :]
    inner[:-1, :] &= m[1:, :]
    inner[:, 1:] &= m[:, :-1]
    inner[:, :-1] &= m[:, 1:]
    return m & ~inner


def _load_image(images_dir, info):
    from PIL import Image

    path = os.path.join(images_dir, info.get("file_name", ""))
    if not os.path.isfile(path):
        return None
    check_image_file(path, "image")  # a decompression-bomb guard, from the header
    with Image.open(path) as im:
        arr = np.asarray(im.convert("RGB"), dtype=np.float64) / 255.0
    return arr if arr.shape[:2] == (info["height"], info["width"]) else None


def figure_thumbnail(row: dict, coco_gt, coco_dt, images_dir: Optional[str] = None, margin: int = 8):
    """One boundary error: ground truth filled (green), prediction outline (red),
    cropped around both, on a blank canvas or over the image from ``images_dir``."""
    gt_m = mask_utils.decode(coco_gt.annToRLE(row["gt"])).astype(bool)
    dt_m = mask_utils.decode(coco_dt.annToRLE(row["dt"])).astype(bool)
    info = coco_gt.imgs[row["image_id"]]
    base = _load_image(images_dir, info) if images_dir else None
    canvas = np.ones(gt_m.shape + (3,)) if base is None else base * 0.7
    green, red = np.array([0.2, 0.7, 0.3]), np.array([0.85, 0.1, 0.1])
    ys, xs = np.nonzero(gt_m | dt_m)
    y0, y1 = max(0, ys.min() - margin), min(gt_m.shape[0], ys.max() + margin + 1)
    x0, x1 = max(0, xs.min() - margin), min(gt_m.shape[1], xs.max() + margin + 1)
    width = max(y1 - y0, x1 - x0) // 150  # outlines stay visible in the 240-pixel thumbnail
    canvas[gt_m] = canvas[gt_m] * 0.45 + green * 0.55
    canvas[_thicken(_outline(gt_m), width)] = green * 0.7
    canvas[_thicken(_outline(dt_m), width)] = red
    fig = _figure(2.4, 2.6)
    ax = fig.add_axes([0, 0, 1, 0.86])
    ax.imshow(canvas[y0:y1, x0:x1], interpolation="nearest")
    ax.set_axis_off()
    name = coco_gt.cats.get(row["gt"]["category_id"], {}).get("name", "")
    fig.text(0.5, 0.93, f"{name} img {row['image_id']}\nmask {row['mask_iou']:.2f} / boundary "
             f"{row['boundary_iou']:.2f}", ha="center", va="center", fontsize=7)
    return fig


#: colour of each per-frame measure of video object segmentation
MEASURE_COLORS = {"J": "#4c72b0", "F": "#55a868", "B": "#c44e52"}


def figure_frame_values(name: str, frames, values: Dict[str, np.ndarray], marked=()):
    """One object's per-frame measures (J, F, B) over its frames; the frames
    ``marked`` (positions) circled."""
    fig = _figure(8, 2.5)
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(len(frames))
    for m, v in values.items():
        v = np.asarray(v, np.float64)
        ax.plot(x, v, marker=".", ms=3, lw=1, color=MEASURE_COLORS.get(m), label=f"{m} (mean {np.mean(v):.3f})")
        if len(marked):
            ax.plot(x[list(marked)], v[list(marked)], "o", mfc="none", ms=8, color=MEASURE_COLORS.get(m))
    step = max(1, len(frames) // 8)
    ax.set_xticks(x[::step])
    ax.set_xticklabels([frames[i] for i in range(0, len(frames), step)], fontsize=7)
    ax.set_xlim(-0.5, max(len(frames) - 0.5, 0.5))
    ax.set_ylim(-0.02, 1.02)
    ax.set_xlabel("frame")
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=7, ncol=len(values))
    ax.set_title(name, fontsize=9)
    fig.tight_layout()
    return fig


def figure_frame_outlines(gt_mask, result_mask, image=None, caption: str = "", margin: int = 16):
    """One frame: the ground truth's outline (green) and the result's (red),
    over the frame's image (or, without one, over the ground truth filled),
    cropped around both masks."""
    gt_m, dt_m = np.asarray(gt_mask, bool), np.asarray(result_mask, bool)
    canvas = np.ones(gt_m.shape + (3,)) if image is None else np.asarray(image, np.float64) * 0.75
    green, red = np.array([0.2, 0.7, 0.3]), np.array([0.85, 0.1, 0.1])
    if image is None:
        canvas[gt_m] = canvas[gt_m] * 0.45 + green * 0.55
    ys, xs = np.nonzero(gt_m | dt_m)
    if len(ys):
        y0, y1 = max(0, ys.min() - margin), min(gt_m.shape[0], ys.max() + margin + 1)
        x0, x1 = max(0, xs.min() - margin), min(gt_m.shape[1], xs.max() + margin + 1)
    else:
        y0, y1, x0, x1 = 0, gt_m.shape[0], 0, gt_m.shape[1]
    width = max(y1 - y0, x1 - x0) // 150  # outlines stay visible in the small figure
    canvas[_thicken(_outline(gt_m), width)] = green
    canvas[_thicken(_outline(dt_m), width)] = red
    fig = _figure(2.6, 2.8)
    ax = fig.add_axes([0, 0, 1, 0.86])
    ax.imshow(canvas[y0:y1, x0:x1], interpolation="nearest")
    ax.set_axis_off()
    fig.text(0.5, 0.93, caption, ha="center", va="center", fontsize=7)
    return fig


def figure_reliability(diagnostics: dict):
    """Reliability diagram: per score bin, the fraction of detections matched
    (at the calibration's IoU) against the mean score, of each evaluation."""
    fig = _figure(5, 4.6)
    ax = fig.add_subplot(1, 1, 1)
    ax.plot([0, 1], [0, 1], color="#999999", lw=1, ls="--", label="calibrated")
    for name in diagnostics:
        color = STYLES.get(name, ("#4c72b0", "-"))[0]
        cal = diagnostics[name]["calibration"]
        pts = [(b["confidence"], b["accuracy"], b["count"]) for b in cal["bins"] if b["count"]]
        if pts:
            x, y, n = zip(*pts)
            ece = "n/a" if cal["ece"] is None else f"{cal['ece']:.3f}"
            ax.plot(x, y, marker="o", color=color, label=f"{name} IoU (ECE {ece})")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_xlabel("mean score of the bin")
    first = next(iter(diagnostics.values()))
    ax.set_ylabel(f"fraction matched at IoU {first['calibration']['iou_threshold']:g}")
    ax.legend(loc="upper left", fontsize=8)
    ax.set_title("Reliability diagram")
    fig.tight_layout()
    return fig


def figure_confusion(confusion: dict, top: int = 25, what: str = "Boundary IoU"):
    """Heat map of the normalised confusion matrix (rows: ground truth, columns:
    detected; background last), on the ``top`` categories with the most ground
    truths and detections."""
    m = np.asarray(confusion["matrix"], np.float64)
    K = m.shape[0] - 1
    weight = m[:K].sum(axis=1) + m[:, :K].sum(axis=0)
    keep = sorted(np.argsort(-weight, kind="stable")[:top].tolist())
    idx = keep + [K]
    sub = m[np.ix_(idx, idx)]
    rows = sub.sum(axis=1, keepdims=True)
    norm = np.divide(sub, rows, out=np.zeros(sub.shape), where=rows > 0)
    labels = [confusion["names"][k] for k in keep] + ["background"]
    fig = _figure(8, 7.5)
    ax = fig.add_subplot(1, 1, 1)
    im = ax.imshow(norm, cmap="viridis", vmin=0, vmax=1)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=90, fontsize=6)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.set_xlabel("detected")
    ax.set_ylabel("ground truth")
    ax.set_title(f"Confusion at {what} {confusion['iou_threshold']:g} (rows normalised)")
    fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


def figure_intervals(diagnostics: dict):
    """The headline numbers of each evaluation with their bootstrap intervals."""
    fig = _figure(9, 3.4)
    ax = fig.add_subplot(1, 1, 1)
    offsets = (0.0,) if len(diagnostics) == 1 else (-0.15, 0.15)
    for off, name in zip(offsets, diagnostics):
        color = STYLES.get(name, ("#4c72b0", "-"))[0]
        boot = diagnostics[name].get("bootstrap")
        if not boot:
            continue
        names = list(boot["metrics"])
        for i, n in enumerate(names):
            m = boot["metrics"][n]
            if m["value"] is None or m["ci"][0] is None:
                continue
            # (a percentile interval need not contain the plain value)
            ax.vlines([i + off], [100 * m["ci"][0]], [100 * m["ci"][1]], color=color, lw=2)
            ax.plot([i + off], [100 * m["value"]], "o", color=color, label=name if i == 0 else None)
        ax.set_xticks(range(len(names)))
        ax.set_xticklabels(names)
    ax.set_ylabel("x100")
    ax.legend(fontsize=8)
    ax.set_title("Headline numbers with bootstrap intervals over images")
    fig.tight_layout()
    return fig


#: how the report names each evaluation's IoU
IOU_NAMES = {"mask": "Mask IoU", "boundary": "Boundary IoU", "box": "box IoU"}


def main_label(diagnostics: dict) -> str:
    """The evaluation whose confusion matrix the report shows: boundary, else the only one."""
    return "boundary" if "boundary" in diagnostics else next(iter(diagnostics))


def figures(data: dict, coco_gt=None, coco_dt=None, images_dir: Optional[str] = None) -> Dict[str, bytes]:
    """Every figure of the report as PNG bytes, by file name.

    Thumbnails (``worst_NN.png``) need ``coco_gt`` and ``coco_dt``.
    """
    out = {}
    if data.get("errors") is not None:  # (None: not computed; data["notes"] says why)
        box = "box" in data.get("kinds", {})
        out["errors.png"] = to_png(figure_errors(data["errors"], "box IoU" if box else "min(mask, boundary) IoU"))
    out["pr_curves.png"] = to_png(figure_pr_curves(data["pr"], data["rec_thrs"]))
    if set(data.get("kinds", KINDS["boundary"])) >= {"mask", "boundary"}:
        out["scatter.png"] = to_png(figure_scatter(data["per_category"]))
    diag = data.get("diagnostics")
    if diag:
        main = main_label(diag)
        if diag[main].get("bootstrap"):
            out["intervals.png"] = to_png(figure_intervals(diag))
        out["confusion.png"] = to_png(figure_confusion(diag[main]["confusion"], what=IOU_NAMES[main]))
        out["reliability.png"] = to_png(figure_reliability(diag))
    if coco_gt is not None and coco_dt is not None:
        for n, row in enumerate(data["worst"]):
            out[f"worst_{n:02d}.png"] = to_png(figure_thumbnail(row, coco_gt, coco_dt, images_dir))
    return out
