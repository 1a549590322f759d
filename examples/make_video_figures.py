"""Regenerate docs/video.md's figure of MOSEv2's object-adaptive F beside Boundary IoU.

    python examples/make_video_figures.py [--out examples/figures]

A disc of radius R in an 854x480 frame, predicted shifted by 3 pixels (and, in a
second series, grown by 2 pixels), for R from 1 to 120: the tolerance radii
(DAVIS' F: ceil(0.008 x diagonal) = 8; MOSEv2's F_new: ceil(0.1 x sqrt(area)),
capped at the uncut 7.837; Boundary IoU's band: round(0.02 x diagonal) = 20) and
the scores J, F, F_new and Boundary IoU, computed by the package's frame kernel
(boundary_api.video).  Writes fig_mosev2_adaptive_f.png and mosev2_adaptive_f.csv
(the numbers behind it).  Deterministic.
"""
import argparse
import csv
import os

import numpy as np

from boundary_api.masks.boundary import dilation_pixels
from boundary_api.video import _jf

HERE = os.path.dirname(os.path.abspath(__file__))
H, W = 480, 854
RADII = (1, 2, 3, 4, 5, 6, 8, 10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100, 120)
COLUMNS = ("error", "radius", "area", "r_F", "r_F_new", "d_B", "J", "F", "F_new", "B")


def _disc(r, dy=0, dx=0):
    yy, xx = np.mgrid[:H, :W]
    return (((yy - H // 2 - dy) ** 2 + (xx - W // 2 - dx) ** 2) <= r * r).astype(np.uint16)


def rows():
    """The figure's numbers: one row per error kind and disc radius."""
    cap, _ = _jf.adaptive_footprints(H, W)
    opts = _jf.CountOptions(want_f=True, want_b=True, adaptive_th=0.1)
    out = []
    for error in ("shift 3 px", "grow 2 px"):
        for r in RADII:
            gt = _disc(r)
            pred = _disc(r, 3, 0) if error.startswith("shift") else _disc(r + 2)
            c = _jf.dense_counts(_jf.count_frames([(gt, pred)], opts, None, 1), [1], [1])
            area = int(c["area_gt"][0, 0])
            ra = float(np.ceil(0.1 * np.sqrt(area)))
            out.append({
                "error": error, "radius": r, "area": area, "r_F": float(np.ceil(cap)) if ra < cap else cap,
                "r_F_new": ra if ra < cap else cap, "d_B": dilation_pixels(H, W, 0.02),
                "J": float(_jf.j_values_smoothed(c["inter"][0, 0], c["area_res"][0], c["area_gt"][0])[0]),
                "F": float(_jf.f_values(c["fg"][0, 0], c["gm"][0, 0], c["nb_res"][0], c["nb_gt"][0])[0]),
                "F_new": float(_jf.f_values(c["fg_new"][0, 0], c["gm_new"][0, 0], c["nb_res"][0], c["nb_gt"][0])[0]),
                "B": float(_jf.b_values(c["band_inter"][0, 0], c["band_res"][0], c["band_gt"][0])[0])})
    return out


def write_csv(data, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        for row in data:
            w.writerow({k: (f"{v:.6f}" if isinstance(v, float) else v) for k, v in row.items()})


def plot(data, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), dpi=90)
    first = [r for r in data if r["error"] == "shift 3 px"]
    x = [r["radius"] for r in first]
    ax = axes[0]
    ax.plot(x, [r["r_F"] for r in first], "o-", label="F (DAVIS; MOSEv2 'F')")
    ax.plot(x, [r["r_F_new"] for r in first], "s-", label="F_new (MOSEv2, adaptive)")
    ax.plot(x, [r["d_B"] for r in first], "^-", label="Boundary IoU band d")
    ax.plot(x, x, ":", color="grey", label="object radius")
    ax.set(xscale="log", xlabel="object radius (px)", ylabel="tolerance / band (px)", ylim=(0, 22),
           title="854x480: how far a boundary may be off")
    ax.legend(fontsize=8)
    for ax, error in zip(axes[1:], ("shift 3 px", "grow 2 px")):
        sel = [r for r in data if r["error"] == error]
        for key, style in (("J", "k--"), ("F", "o-"), ("F_new", "s-"), ("B", "^-")):
            ax.plot([r["radius"] for r in sel], [r[key] for r in sel], style, label=key)
        ax.set(xscale="log", xlabel="object radius (px)", ylabel="score", ylim=(0, 1.02),
               title={"shift 3 px": "a disc predicted 3 pixels off", "grow 2 px": "a disc predicted 2 pixels too big"}[error])
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=os.path.join(HERE, "figures"))
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    data = rows()
    write_csv(data, os.path.join(args.out, "mosev2_adaptive_f.csv"))
    plot(data, os.path.join(args.out, "fig_mosev2_adaptive_f.png"))
    print(f"wrote fig_mosev2_adaptive_f.png and mosev2_adaptive_f.csv to {args.out}")


if __name__ == "__main__":
    main()
