"""The video object segmentation report (``boundary-eval vos --report``, issue 46 item 11):
one self-contained page with, per object, J, F and B over the frames and its worst frames'
outlines over the JPEG (or the ground truth where there is none), drawn with the report
package's figure code; opened in headless Chromium where there is one."""
import base64
import io
import json
import re
import subprocess

import numpy as np
import pytest

from boundary_api.report.video import vos_figures, worst_frames, write_vos_report
from boundary_api.video import evaluate_davis, synthetic
from conftest import BROWSER


def _set(root, images):
    truth = {"cat": synthetic.render_sequence(6, 40, 56, objects=1, seed=3)}
    synthetic.write_davis(root / "DAVIS", truth, images=images)
    synthetic.write_davis_results(root / "res", {"cat": synthetic.perturb(truth["cat"], shift=(2, 1))})
    return evaluate_davis(str(root / "DAVIS"), str(root / "res"), metrics=("J", "F", "B"))


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    return _set(tmp_path_factory.mktemp("vosrep"), "frame")


def _pngs(text):
    from PIL import Image

    return [Image.open(io.BytesIO(base64.b64decode(b))) for b in re.findall(r"base64,([A-Za-z0-9+/=]+)", text)]


@pytest.mark.slow
def test_page_holds_each_object_its_values_and_worst_frames(result, tmp_path):
    path = tmp_path / "r.html"
    write_vos_report(str(path), result, title="DAVIS report", worst=1)
    text = path.read_text()
    obj = result.objects[0]
    assert obj.name == "cat_1" and "id='obj-cat_1'" in text
    images = _pngs(text)
    assert len(images) == 1 + 1 and all(im.size[0] > 100 for im in images)
    assert "http://" not in text and "https://" not in text and "<script" not in text and "<link" not in text
    # the summary and the per-object means are the evaluation's
    for name in ("J-Mean", "F-Mean", "B-Mean"):
        assert f"{result.metrics[name]:.3f}" in text
    marked = worst_frames(obj.values, 1)
    assert marked == [int(np.argmin(obj.values["B"]))]
    for t in marked:
        assert f"alt=\"cat_1 frame {obj.frames[t]}\"" in text
    assert list(tmp_path.iterdir()) == [path]


def test_outlines_over_the_jpeg_or_the_ground_truth(result, tmp_path):
    """With the frame's JPEG (gray here) the canvas is the darkened image; without one the
    ground truth is filled green."""
    with_jpeg = vos_figures(result, worst=1)["cat_1"]["frames"][0][2]
    plain = _set(tmp_path, "tiny")  # 1x1 JPEGs: not the frame's size, so not used
    without = vos_figures(plain, worst=1)["cat_1"]["frames"][0][2]
    from PIL import Image

    a = np.asarray(Image.open(io.BytesIO(with_jpeg)).convert("RGB"), np.float64)
    b = np.asarray(Image.open(io.BytesIO(without)).convert("RGB"), np.float64)
    green = lambda im: ((im[..., 1] > im[..., 0] + 40) & (im[..., 1] > im[..., 2] + 40)).mean()  # noqa: E731
    assert green(b) > green(a)  # the filled ground truth
    assert (np.abs(a - a.mean(axis=2, keepdims=True)).max(axis=2) < 8).mean() > 0.5  # mostly the gray frame


@pytest.mark.slow
@pytest.mark.skipif(BROWSER is None, reason="no headless browser found on PATH")
def test_every_figure_renders_in_chromium(result, tmp_path):
    path = tmp_path / "r.html"
    write_vos_report(str(path), result, worst=3)
    probe = ("<script>window.addEventListener('load', function () {var o = document.createElement('pre');"
             "o.id = 'probe'; o.textContent = JSON.stringify({imgs: [].slice.call(document.images).map("
             "function (i) { return i.complete ? i.naturalWidth : -1; }), remote: performance.getEntriesByType("
             "'resource').map(function (e) { return e.name; })}); document.body.appendChild(o);});</script></body>")
    page = tmp_path / "probe.html"
    page.write_text(path.read_text().replace("</body>", probe, 1))
    out = subprocess.run([BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--disable-extensions",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom",
                          page.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="probe">(.*?)</pre>', out.stdout, re.S)
    assert m, out.stderr[-2000:]
    res = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))
    assert len(res["imgs"]) == 4 and all(w > 0 for w in res["imgs"])
    assert [r for r in res["remote"] if not r.startswith(("data:", "file:"))] == []
