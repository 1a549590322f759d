"""Figures of the sensitivity analysis in the paper's layout (matplotlib, Agg backend).

Each function takes a :class:`~boundary_api.sensitivity.curves.SensitivityResult`
and returns a matplotlib Figure; :func:`save_figures` writes all that the result
can draw as PNG and SVG.
"""
from __future__ import annotations

import os
from typing import Dict, List, Optional

from ..masks.measures import MEASURE_LABELS
from .curves import LARGE_AREA, SensitivityResult

__all__ = ["LABELS", "ERROR_LABELS", "severity_figure", "size_figure", "scale_figure", "inner_mask_figure",
           "mf_vs_boundary_figure", "save_figures"]

LABELS = MEASURE_LABELS
ERROR_LABELS = {
    "dilation": ("Scale error: dilation", "kernel radius (px)"),
    "erosion": ("Scale error: erosion", "kernel radius (px)"),
    "boundary_localization": ("Boundary localization error", "noise std (px)"),
    "object_localization": ("Object localization error", "shift (px)"),
    "boundary_approximation": ("Boundary approximation error", "simplify tolerance (px)"),
    "inner_mask": ("Inner mask error", "number of holes"),
}
_COLORS = {
    "pixel_accuracy": "#8c564b", "mask_iou": "#1f77b4", "trimap_iou": "#2ca02c", "f_measure": "#ff7f0e",
    "mf_measure": "#9467bd", "boundary_iou": "#d62728", "min_mask_boundary_iou": "#7f7f7f",
    "multiscale_iou": "#17becf",
}


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _grid(n: int, width: float = 4.0, height: float = 3.2):
    plt = _plt()
    cols = min(3, max(1, n))
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows + 0.6), squeeze=False)
    for ax in axes.reshape(-1)[n:]:
        ax.set_visible(False)
    return fig, list(axes.reshape(-1)[:n])


def _line(ax, res: SensitivityResult, measure: str, error: str, sample: str = "large",
          severity: Optional[float] = None, label: Optional[str] = None, style: str = "-", band: bool = True,
          color: Optional[str] = None):
    x, mu, sd = res.curve(measure, error, sample, severity)
    if not len(x):
        return
    c = color or _COLORS.get(measure)
    ax.plot(x, mu, style, color=c, marker="o", ms=3, lw=1.5, label=label or LABELS.get(measure, measure))
    if band:
        ax.fill_between(x, mu - sd, mu + sd, color=c, alpha=0.12, lw=0)


def _finish(fig, axes, title: str):
    for ax in axes:
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(len(labels), 4), frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.09 if len(labels) <= 4 else 0.13, 1, 0.97))
    return fig


def severity_figure(res: SensitivityResult, measures: Optional[List[str]] = None):
    """Figure 6: every measure against the severity of every error type, for
    objects larger than 96^2 pixels (mean, with a band of one std)."""
    errors = res.settings["errors"]
    measures = measures or res.settings["measures"]
    fig, axes = _grid(len(errors))
    for ax, e in zip(axes, errors):
        for m in measures:
            _line(ax, res, m, e)
        ax.set_title(ERROR_LABELS[e][0], fontsize=10)
        ax.set_xlabel(ERROR_LABELS[e][1])
    return _finish(fig, axes, f"Sensitivity for objects larger than {int(LARGE_AREA ** 0.5)}$^2$ pixels "
                              f"(n = {res.settings['large_objects']}, mean ± std)")


def size_figure(res: SensitivityResult, measures: Optional[List[str]] = None):
    """Figure 7: every measure against the object size, each error type at its
    (largest) fixed severity."""
    errors = res.settings["errors"]
    measures = measures or res.settings["measures"]
    fig, axes = _grid(len(errors))
    for ax, e in zip(axes, errors):
        s = res.settings["fixed_severities"][e][-1]
        for m in measures:
            _line(ax, res, m, e, "sized", s, band=False)
        ax.set_title(f"{ERROR_LABELS[e][0]} ({_sev(e, s)})", fontsize=10)
        ax.set_xlabel("object size: sqrt(area) (px)")
    return _finish(fig, axes, "Sensitivity across object sizes (bins of 16 px of sqrt(area), mean)")


def _sev(error: str, s: float) -> str:
    return f"{s:g} holes" if error == "inner_mask" else f"{s:g} px"


def scale_figure(res: SensitivityResult):
    """Figure 4: Mask IoU, Trimap IoU and F-measure across object sizes under
    dilation (solid) and erosion (dashed) at the fixed radii."""
    have = [m for m in ("mask_iou", "trimap_iou", "f_measure") if m in res.settings["measures"]]
    fig, axes = _grid(len(have))
    plt = _plt()
    cmap = plt.get_cmap("viridis")
    for ax, m in zip(axes, have):
        for e, style in (("dilation", "-"), ("erosion", "--")):
            if e not in res.settings["errors"]:
                continue
            radii = res.settings["fixed_severities"][e]
            for k, s in enumerate(radii):
                c = cmap(0.15 + 0.7 * k / max(1, len(radii) - 1))
                _line(ax, res, m, e, "sized", s, label=f"{e} {s:g} px", style=style, band=False, color=c)
        ax.set_title(LABELS[m], fontsize=10)
        ax.set_xlabel("object size: sqrt(area) (px)")
    return _finish(fig, axes, "Scale errors across object sizes")


def inner_mask_figure(res: SensitivityResult, measures: Optional[List[str]] = None):
    """Figure 8: inner mask errors, against the number of holes (large objects)
    and across object sizes at the fixed number of holes."""
    measures = measures or res.settings["measures"]
    fig, axes = _grid(2, width=5.0)
    for m in measures:
        _line(axes[0], res, m, "inner_mask")
    s = res.settings["fixed_severities"]["inner_mask"][-1]
    for m in measures:
        _line(axes[1], res, m, "inner_mask", "sized", s, band=False)
    axes[0].set_xlabel("number of holes")
    axes[0].set_title(f"objects > {int(LARGE_AREA ** 0.5)}$^2$ px", fontsize=10)
    axes[1].set_xlabel("object size: sqrt(area) (px)")
    axes[1].set_title(f"{s:g} holes", fontsize=10)
    return _finish(fig, axes, "Inner mask error")


def mf_vs_boundary_figure(res: SensitivityResult):
    """Figure 9: mF-measure against Boundary IoU for every error type (large objects)."""
    errors = res.settings["errors"]
    fig, axes = _grid(len(errors))
    for ax, e in zip(axes, errors):
        for m in ("mf_measure", "boundary_iou"):
            _line(ax, res, m, e)
        ax.set_title(ERROR_LABELS[e][0], fontsize=10)
        ax.set_xlabel(ERROR_LABELS[e][1])
    return _finish(fig, axes, "mF-measure and Boundary IoU")


def save_figures(res: SensitivityResult, out_dir: str, formats=("png", "svg"), dpi: int = 110) -> Dict[str, List[str]]:
    """Write every figure ``res`` can draw to ``out_dir`` as ``fig<N>_<name>.<fmt>``;
    returns ``{figure name: [paths]}``."""
    plt = _plt()
    s = res.settings
    errors, measures, sized = s["errors"], s["measures"], s["sized_objects"] > 0
    todo = [("fig6_severity", lambda: severity_figure(res))]
    if sized:
        todo.append(("fig7_object_size", lambda: size_figure(res)))
        if ({"dilation", "erosion"} & set(errors)) and ({"mask_iou", "trimap_iou", "f_measure"} & set(measures)):
            todo.append(("fig4_scale_error_sizes", lambda: scale_figure(res)))
    if "inner_mask" in errors and sized:
        todo.append(("fig8_inner_mask", lambda: inner_mask_figure(res)))
    if {"mf_measure", "boundary_iou"} <= set(measures):
        todo.append(("fig9_mf_vs_boundary_iou", lambda: mf_vs_boundary_figure(res)))
    os.makedirs(out_dir, exist_ok=True)
    written: Dict[str, List[str]] = {}
    for name, make in todo:
        fig = make()
        paths = []
        for fmt in formats:
            path = os.path.join(out_dir, f"{name}.{fmt}")
            fig.savefig(path, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None)
            paths.append(path)
        plt.close(fig)
        written[name] = paths
    return written
