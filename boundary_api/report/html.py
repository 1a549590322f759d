"""One self-contained HTML file (figures as base64 PNG, inline CSS and JS, no
network), or the figures alone as PNG files."""
from __future__ import annotations

import base64
import html
import os
from typing import Dict

from ..diagnostics.tide import ERROR_TYPES
from .data import KINDS
from .figures import ERROR_LABELS, IOU_NAMES, main_label

__all__ = ["write_html", "write_pngs"]

_CSS = """
body{font-family:sans-serif;margin:24px;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:8px 0 16px}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f2f2f2}td:first-child,th:first-child{text-align:left}
th.sort{cursor:pointer}th.sort:hover{background:#e0e0ff}
.warn{background:#fff3cd;border:1px solid #e0c060;padding:8px 12px;margin:12px 0}
.thumbs img{margin:4px;border:1px solid #ddd}figure{margin:0}
"""

_JS = """
function sortTable(col){var t=document.getElementById('cats'),b=t.tBodies[0],r=[].slice.call(b.rows);
var d=t.getAttribute('data-dir')==='asc'?'desc':'asc';t.setAttribute('data-dir',d);
r.sort(function(x,y){var a=x.cells[col].getAttribute('data-v'),c=y.cells[col].getAttribute('data-v');
var p=parseFloat(a),q=parseFloat(c);if(isNaN(p)&&isNaN(q)){p=a;q=c}else{if(isNaN(p))return 1;if(isNaN(q))return -1}
return (p<q?-1:p>q?1:0)*(d==='asc'?1:-1)});r.forEach(function(x){b.appendChild(x)})}
"""


def _fmt(x, scale=100.0):
    return "–" if x is None else f"{scale * x:.1f}"


def _img(png: bytes, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode("ascii")}">'


def _note(data: dict, part: str, what: str) -> str:
    why = (data.get("notes") or {}).get(part, "not computed")
    return f"<p class='note' id='note_{part}'>{html.escape(what)}: not computed: {html.escape(why)}.</p>"


def write_html(path: str, data: dict, figs: Dict[str, bytes], title: str = "Boundary AP report") -> None:
    """Write the report as one HTML file (written to a temporary name, then renamed).

    The parts ``data`` holds as None (TIDE's breakdown, the boundary coverage;
    ``data["notes"]`` says why) are a one-line note in their section."""
    e = data["errors"]
    labels = list(data.get("kinds", KINDS["boundary"]))
    names = {k: k.capitalize() for k in labels}
    pair = labels == ["mask", "boundary"]
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style><script>{_JS}</script></head><body><h1>{html.escape(title)}</h1>"]
    if data.get("warning"):
        parts.append(f"<div class='warn' id='warning'>{html.escape(data['warning'])}</div>")
    parts.append("<h2>Summary</h2><table id='summary'><tr><th>metric</th>"
                 + "".join(f"<th>{names[k]}</th>" for k in labels)
                 + ("<th>Mask − Boundary</th>" if pair else "") + "</tr>")
    for name, v in data["summary"].items():
        row = "".join(f"<td>{_fmt(v[k])}</td>" for k in labels)
        if pair:
            gap = None if v["mask"] is None or v["boundary"] is None else v["mask"] - v["boundary"]
            row += f"<td>{_fmt(gap)}</td>"
        parts.append(f"<tr><td>{name}</td>{row}</tr>")
    parts.append("</table>")
    cov = data["coverage"]
    parts.append("<h3>Objects whose boundary band covers the whole mask (Boundary IoU = Mask IoU)</h3>")
    if cov is None:
        parts.append(_note(data, "boundary_coverage", "Boundary coverage"))
    else:
        parts.append("<table id='coverage'><tr><th>size</th><th>objects</th><th>covered</th><th>fraction</th></tr>")
        for s, c in cov.items():
            parts.append(f"<tr><td>{s}</td><td>{c['objects']}</td><td>{c['covered']}</td>"
                         f"<td>{_fmt(c['fraction'])}%</td></tr>")
        parts.append("</table>")
    parts.append("<h2>Error breakdown</h2>")
    if e is None:
        parts.append(_note(data, "errors", "Error breakdown"))
    else:
        parts.append("<p>ΔAP (x100) gained by fixing each error type alone (TIDE, "
                     f"IoU = {'box IoU' if 'box' in labels else 'min(mask IoU, boundary IoU)'}, foreground {data['settings']['pos_threshold']}, background "
                     f"{data['settings']['background_threshold']}; TIDE AP {_fmt(e['ap'])}). <b>boundary</b>: detections "
                     "that Mask IoU accepts but Boundary IoU rejects (also counted in the six).</p>"
                     "<table id='errors'><tr><th>error</th><th>all</th><th>small</th><th>medium</th><th>large</th>"
                     "<th>count</th></tr>")
        for t in ERROR_TYPES:
            row = [_fmt(e["errors"][t])] + [_fmt(e["per_size"][s]["errors"][t]) for s in ("small", "medium", "large")]
            parts.append(f"<tr><td>{ERROR_LABELS[t]}</td>" + "".join(f"<td>{v}</td>" for v in row)
                         + f"<td>{e['counts'][t]}</td></tr>")
        parts.append("</table>")
    for name, alt in (("errors.png", "error breakdown"), ("pr_curves.png", "precision-recall curves"),
                      ("scatter.png", "Mask AP against Boundary AP per category")):
        if name == "pr_curves.png":
            parts.append("<h2>Precision-recall curves</h2>")
        if name == "scatter.png":
            parts.append("<h2>Per category</h2>")
        if name in figs:
            parts.append(f"<figure>{_img(figs[name], alt)}</figure>")
    heads = ["category"] + [f"{names[k]} AP" for k in labels]
    if pair:
        heads += ["Mask − Boundary", "ΔAP boundary error"]
    parts.append("<p>Click a header to sort.</p><table id='cats' data-dir='desc'><thead><tr>"
                 + "".join(f"<th class='sort' onclick='sortTable({i})'>{h}</th>" for i, h in enumerate(heads))
                 + "</tr></thead><tbody>")
    sort_key = "gap" if pair else f"{labels[0]}_AP"
    rows = sorted(data["per_category"].values(),
                  key=lambda r: -(r[sort_key] if r[sort_key] is not None else -1e9))
    for r in rows:
        values = [r[f"{k}_AP"] for k in labels]
        if pair:
            be = None if e is None else e["per_category"].get(r["id"], {}).get("errors", {}).get("boundary")
            values += [r["gap"], be]
        cells = [(r["name"], html.escape(str(r["name"])))] + [("" if v is None else repr(v), _fmt(v)) for v in values]
        parts.append("<tr>" + "".join(f"<td data-v='{html.escape(str(v))}'>{s}</td>" for v, s in cells) + "</tr>")
    parts.append("</tbody></table>")
    diag = data.get("diagnostics")
    if diag:
        parts.extend(_diagnostics_html(diag, figs))
    thumbs = sorted(k for k in figs if k.startswith("worst_"))
    if thumbs:
        parts.append("<h2>Worst boundary errors</h2><p>Ground truth filled green, prediction outline red; "
                     "mask IoU / boundary IoU of the pair.</p><div class='thumbs'>")
        parts.extend(_img(figs[k], k) for k in thumbs)
        parts.append("</div>")
    elif e is None and "errors" in (data.get("notes") or {}):
        parts.append("<h2>Worst boundary errors</h2>" + _note(data, "errors", "Worst boundary errors (from the "
                                                             "error breakdown)"))
    parts.append("</body></html>\n")
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write("".join(parts))
    os.replace(tmp, path)


def _diagnostics_html(diag: dict, figs: Dict[str, bytes]) -> list:
    """The sections of issue 30: intervals, confusion, calibration, LRP."""
    parts = []
    labels = list(diag)
    main = main_label(diag)
    title = {k: k.capitalize() for k in labels}
    boot = diag[main].get("bootstrap")
    if boot:
        pct = f"{100 * boot['confidence']:g}%"
        parts.append(f"<h2>Confidence intervals</h2><p>{pct} bootstrap intervals over images ({boot['resamples']} "
                     f"resamples, seed {boot['seed']}): another evaluation set of the same size could give any "
                     "number in the interval.</p><table id='intervals'><tr><th>metric</th>"
                     + "".join(f"<th>{title[k]}</th><th>{title[k]} {pct}</th>" for k in labels) + "</tr>")
        for name in boot["metrics"]:
            row = ""
            for k in labels:
                m = diag[k]["bootstrap"]["metrics"][name]
                row += f"<td>{_fmt(m['value'])}</td><td>[{_fmt(m['ci'][0])}, {_fmt(m['ci'][1])}]</td>"
            parts.append(f"<tr><td>{name}</td>{row}</tr>")
        parts.append("</table>")
        if "intervals.png" in figs:
            parts.append(f"<figure>{_img(figs['intervals.png'], 'bootstrap intervals')}</figure>")
    cm = diag[main]["confusion"]
    parts.append(f"<h2>Confusion matrix</h2><p>Detections matched across categories at {IOU_NAMES[main]} "
                 f"{cm['iou_threshold']:g} (greedy, score order); the background row counts unmatched "
                 "detections, the background column missed objects.</p><table id='confusions'><tr>"
                 "<th>ground truth</th><th>detected as</th><th>count</th></tr>")
    for t in cm["top"]:
        parts.append(f"<tr><td>{html.escape(str(t['gt']))}</td><td>{html.escape(str(t['dt']))}</td>"
                     f"<td>{t['count']}</td></tr>")
    if not cm["top"]:
        parts.append("<tr><td colspan='3'>no confusion between categories</td></tr>")
    parts.append("</table>")
    if "confusion.png" in figs:
        parts.append(f"<figure>{_img(figs['confusion.png'], 'confusion matrix')}</figure>")
    parts.append("<h2>Calibration</h2><p>Are the scores the probability of a match? ECE and MCE of the scores "
                 "against being matched at the IoU threshold (10 bins of equal width).</p><table id='calibration'>"
                 "<tr><th></th><th>ECE</th><th>MCE</th><th>detections</th></tr>")
    for name in labels:
        c = diag[name]["calibration"]
        parts.append(f"<tr><td>{name} IoU {c['iou_threshold']:g}</td><td>{_fmt(c['ece'], 1.0)}</td>"
                     f"<td>{_fmt(c['mce'], 1.0)}</td><td>{c['count']}</td></tr>")
    parts.append("</table>")
    if "reliability.png" in figs:
        parts.append(f"<figure>{_img(figs['reliability.png'], 'reliability diagram')}</figure>")
    parts.append("<h2>LRP</h2><p>Optimal LRP (Oksuz et al.; x100, lower is better) and its components at each "
                 "category's optimal score threshold.</p><table id='lrp'><tr><th></th><th>oLRP</th>"
                 "<th>localisation</th><th>FP</th><th>FN</th></tr>")
    for name in labels:
        r = diag[name]["lrp"]
        parts.append(f"<tr><td>{name} IoU</td><td>{_fmt(r['olrp'])}</td><td>{_fmt(r['loc'])}</td>"
                     f"<td>{_fmt(r['fp'])}</td><td>{_fmt(r['fn'])}</td></tr>")
    parts.append(f"</table><table id='lrp_thresholds'><tr><th>category</th><th>oLRP ({main})</th>"
                 "<th>optimal score threshold</th></tr>")
    for r in sorted(diag[main]["lrp"]["per_category"].values(), key=lambda r: -(r["olrp"] or 0)):
        thr = "–" if r["threshold"] is None else f"{r['threshold']:.2f}"
        parts.append(f"<tr><td>{html.escape(str(r['name']))}</td><td>{_fmt(r['olrp'])}</td><td>{thr}</td></tr>")
    parts.append("</table>")
    return parts


def write_pngs(out_dir: str, figs: Dict[str, bytes]) -> None:
    """Write each figure as ``out_dir/<name>.png`` (the directory is created)."""
    os.makedirs(out_dir, exist_ok=True)
    for name, png in figs.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(png)
