"""The HTML report opened in a real headless browser: every figure renders (no
broken image), nothing is fetched from the network, the category table sorts.

Needs Chromium (Debian: ``apt-get install chromium``); skips when no browser
binary is on PATH."""
import json
import re
import subprocess

import pytest

from boundary_api.cli import main
from conftest import BROWSER, BROWSERS, COCO_DT, COCO_GT

pytestmark = pytest.mark.skipif(BROWSER is None, reason=f"no headless browser found on PATH ({', '.join(BROWSERS)})")

# an image that must come out broken (proves the check can fail), then, after
# load: each image's natural width and the gap column after sorting
PROBE = """<img id="broken" alt="broken on purpose" src="data:image/png;base64,AAAAAAAA"><script>
window.addEventListener('load', function () {
  var imgs = [].slice.call(document.images).map(function (i) { return i.complete ? i.naturalWidth : -1; });
  var broken = imgs.pop();
  sortTable(3);
  var asc = [].slice.call(document.getElementById('cats').tBodies[0].rows).map(function (r) { return r.cells[3].getAttribute('data-v'); });
  var out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify({imgs: imgs, broken: broken, asc: asc, remote: performance.getEntriesByType('resource').map(function (e) { return e.name; })});
  document.body.appendChild(out);
});
</script></body>"""


def _probe(html_path, tmp_path):
    text = open(html_path, encoding="utf-8").read()
    probe = tmp_path / "probe.html"
    probe.write_text(text.replace("</body>", PROBE, 1), encoding="utf-8")
    out = subprocess.run([BROWSER, "--headless", "--disable-gpu", "--no-sandbox", "--disable-extensions",
                          f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000",
                          "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=120)
    m = re.search(r'<pre id="probe">(.*?)</pre>', out.stdout, re.S)
    assert m, out.stderr[-2000:]
    return json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&"))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "report.html"
    assert main(["report", "--gt", COCO_GT, "--dt", COCO_DT, "--out", str(path), "--worst", "2"]) == 0
    return path


def test_every_figure_renders_in_chromium(report, tmp_path):
    res = _probe(report, tmp_path)
    assert res["broken"] == 0  # the probe does see a broken image
    # errors, PR curves, scatter, bootstrap intervals, confusion heat map, reliability diagram, 2 thumbnails
    assert len(res["imgs"]) == 3 + 3 + 2
    assert all(w > 0 for w in res["imgs"]), res["imgs"]
    assert [r for r in res["remote"] if not r.startswith(("data:", "file:"))] == []
    gaps = [float(v) for v in res["asc"] if v != ""]
    assert gaps == sorted(gaps) and len(gaps) > 10
    assert all(v == "" for v in res["asc"][len(gaps):])  # categories without AP last
