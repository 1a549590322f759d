"""A video object segmentation report (``boundary-eval vos --report``): one
self-contained HTML page with, per object, J, F (and B) over its frames and
the outlines of its worst frames, drawn with this package's figure code.

It reads a finished evaluation (``boundary_api.video.VOSResult``: the global
numbers, ``per_object`` and ``objects``, each object's frames, values and
files), and the worst frames' label maps and images again.
"""
from __future__ import annotations

import html
import os
from typing import Dict, List, Optional

import numpy as np

from .._io import write_text_atomic
from ..masks.imagefiles import check_image_file, read_label_map
from .figures import figure_frame_outlines, figure_frame_values, to_png
from .html import _CSS, _img

__all__ = ["worst_frames", "vos_figures", "write_vos_report"]


def worst_frames(values: Dict[str, np.ndarray], count: int) -> List[int]:
    """The positions of the ``count`` worst frames of one object: lowest B
    where it was measured, else lowest F, else J (ties: the earlier frame)."""
    key = next(m for m in ("B", "F", "J") if m in values)
    v = np.asarray(values[key], np.float64)
    return sorted(np.argsort(v, kind="stable")[:count].tolist())


def _mask(path: str, label: int, binary: bool) -> np.ndarray:
    labels = read_label_map(path, what="label map")
    return labels != 0 if binary else labels == label


def _image(path: Optional[str], shape) -> Optional[np.ndarray]:
    """A frame's image as RGB floats in [0, 1], or None (no image, or one
    of another size than its label maps)."""
    if not path or not os.path.isfile(path):
        return None
    from PIL import Image

    check_image_file(path, "image")  # (a decompression-bomb guard, from the header)
    with Image.open(path) as im:
        rgb = np.asarray(im.convert("RGB"), dtype=np.float64) / 255.0
    return rgb if rgb.shape[:2] == tuple(shape) else None


def vos_figures(result, worst: int = 3) -> Dict[str, dict]:
    """The report's figures as PNG bytes, per object (in the rows' order):
    ``{name: {'values': png, 'frames': [(frame, {measure: value}, png), ...]}}``."""
    out = {}
    for obj in result.objects:
        marked = worst_frames(obj.values, worst) if obj.frames else []
        entry = {"values": to_png(figure_frame_values(obj.name, obj.frames, obj.values, marked)), "frames": []}
        for t in marked:
            gt = _mask(obj.annotations[t], obj.gt_label, obj.binary)
            res = _mask(obj.results[t], obj.result_label, obj.binary)
            values = {m: float(v[t]) for m, v in obj.values.items()}
            caption = f"{obj.name}, frame {obj.frames[t]}\n" + "  ".join(f"{m} {v:.3f}" for m, v in values.items())
            fig = figure_frame_outlines(gt, res, _image(obj.images[t], gt.shape), caption)
            entry["frames"].append((obj.frames[t], values, to_png(fig)))
        out[obj.name] = entry
    return out


def _fmt(v) -> str:
    return "–" if v is None or (isinstance(v, float) and v != v) else f"{v:.3f}"


def write_vos_report(path: str, result, *, title: str = "Video object segmentation report", worst: int = 3) -> None:
    """Write the report of a finished DAVIS or SA-V evaluation
    (``evaluate_davis`` / ``evaluate_sav``) as one HTML file that needs no
    network (figures inline as PNG; written to a temporary name, then
    renamed).

    Parameters
    ----------
    path : str
    result : boundary_api.video.VOSResult
    title : str
    worst : int
        The worst frames shown per object (lowest B, else F).
    """
    figs = vos_figures(result, worst)
    names = result.settings["metrics"]
    unit = " (percent)" if result.kind == "sav" else ""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>",
             f"<h2>Summary{unit}</h2><table id='summary'><tr>"
             + "".join(f"<th>{html.escape(k)}</th>" for k in result.metrics) + "</tr><tr>"
             + "".join(f"<td>{_fmt(v)}</td>" for v in result.metrics.values()) + "</tr></table>"]
    parts.append("<h2>Per object</h2><p>Mean of each measure over the object's evaluated frames"
                 f"{unit}; worst frames by {next(m for m in ('B', 'F', 'J') if m in names)}.</p>"
                 "<table id='objects'><tr><th>object</th><th>frames</th>"
                 + "".join(f"<th>{m}</th>" for m in names) + "</tr>")
    for obj in result.objects:
        parts.append(f"<tr><td><a href='#{html.escape(_anchor(obj.name))}'>{html.escape(obj.name)}</a></td>"
                     f"<td>{len(obj.frames)}</td>"
                     + "".join(f"<td>{_fmt(float(np.mean(obj.values[m])) if len(obj.frames) else None)}</td>"
                               for m in names) + "</tr>")
    parts.append("</table><p>Outlines: ground truth green, result red, over the frame (the ground truth "
                 "filled where there is no image).</p>")
    for obj in result.objects:
        entry = figs[obj.name]
        parts.append(f"<h3 id='{html.escape(_anchor(obj.name))}'>{html.escape(obj.name)}</h3>")
        parts.append(f"<figure>{_img(entry['values'], f'{obj.name}: per-frame values')}</figure>")
        parts.append("<div class='thumbs'>")
        for frame, _, png in entry["frames"]:
            parts.append(_img(png, f"{obj.name} frame {frame}"))
        parts.append("</div>")
    parts.append("</body></html>\n")
    write_text_atomic(path, "".join(parts))


def _anchor(name: str) -> str:
    return "obj-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in name)
