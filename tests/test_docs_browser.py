"""The manual as a reader sees it: built with Sphinx (as .ci/run builds it) and
rendered in headless Chromium at two common laptop window widths, where no code
block of any page may scroll sideways (issue 41: the theme's narrow column once
cut the examples' comments and every ``--help`` text off behind a scroll bar).

Slow tier (the build takes 15-30 s).  Skips without Sphinx and the docs'
extensions (``pip install -r docs/requirements.txt``) or without Chromium
(Debian: ``apt-get install chromium``; .ci/run installs both).

How: one probe page in the built site holds every page in an iframe of each
width; after load, a script reads ``scrollWidth`` and ``clientWidth`` of every
``pre`` in each frame (file: pages may read each other with
``--allow-file-access-from-files``) and writes the result into the DOM, which
``--dump-dom`` prints.  A code block that overflows inside a narrow box on the
probe page itself proves the measurement can fail.
"""
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BROWSER

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(BROWSER is None, reason="no headless browser found on PATH (chromium)"),
]

ROOT = Path(__file__).resolve().parent.parent
WIDTHS = (1366, 1280)  # window widths, CSS px
HEIGHT = 900

PROBE = """<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>
<div style="width: 200px"><pre id="control" style="overflow-x: auto">%s</pre></div>
%s
<script>
window.addEventListener('load', function () {
  function measure(doc) {
    return [].slice.call(doc.querySelectorAll('pre')).map(function (p) {
      return {sw: p.scrollWidth, cw: p.clientWidth, line: (p.textContent.split('\\n')[0] || '').slice(0, 80)};
    });
  }
  var frames = [].slice.call(document.querySelectorAll('iframe')).map(function (f) {
    var doc = f.contentDocument;
    return {page: f.getAttribute('data-page'), width: f.offsetWidth,
            body: doc ? doc.querySelector('div.body').clientWidth : -1,
            page_sw: doc ? doc.documentElement.scrollWidth : -1,
            page_cw: doc ? doc.documentElement.clientWidth : -1,
            pres: doc ? measure(doc) : null};
  });
  var out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify({control: measure(document)[0], frames: frames});
  document.body.appendChild(out);
});
</script></body></html>"""


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    for module in ("sphinx", "myst_parser", "numpydoc"):
        pytest.importorskip(module, reason="pip install -r docs/requirements.txt")
    out = tmp_path_factory.mktemp("docs-html")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           str(ROOT / "docs"), str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def pages(site):
    """Every page of the manual (not the generated index and search pages)."""
    skip = {"genindex.html", "search.html", "py-modindex.html"}
    return sorted(p.name for p in site.glob("*.html") if p.name not in skip and not p.name.startswith("_"))


def probe(site, names, tmp_path):
    frames = "\n".join(f'<iframe data-page="{name}" src="{name}" style="width: {w}px; height: {HEIGHT}px; '
                       f'border: 0; display: block"></iframe>' for name in names for w in WIDTHS)
    path = site / "_probe.html"
    path.write_text(PROBE % ("x" * 200, frames), encoding="utf-8")
    try:
        out = subprocess.run([BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-extensions",
                              "--no-first-run", "--disable-background-networking", "--disable-component-update",
                              "--disable-sync", "--allow-file-access-from-files",
                              f"--user-data-dir={tmp_path / 'profile'}", f"--window-size={max(WIDTHS) + 100},{HEIGHT}",
                              "--virtual-time-budget=20000", "--dump-dom", path.as_uri()],
                             capture_output=True, text=True, timeout=300)
    finally:
        path.unlink()
    m = re.search(r'<pre id="probe">(.*?)</pre>', out.stdout, re.S)
    assert m, out.stderr[-2000:]
    text = m.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    return json.loads(text)


@pytest.fixture(scope="module")
def probed(site, tmp_path_factory):
    names = pages(site)
    return names, probe(site, names, tmp_path_factory.mktemp("chromium"))


def test_no_code_block_scrolls_at_laptop_widths(probed):
    names, res = probed
    assert {"index.html", "cli.html", "coco_lvis.html", "changelog.html"} <= set(names)
    # the measurement sees an overflowing block
    assert res["control"]["sw"] > res["control"]["cw"]
    assert len(res["frames"]) == len(names) * len(WIDTHS)
    clipped = []
    for frame in res["frames"]:
        assert frame["pres"] is not None, f"{frame['page']}: the frame could not be read"
        assert frame["width"] in WIDTHS
        clipped += [f"{frame['page']} at {frame['width']} px: {p['sw']} > {p['cw']} px: {p['line']!r}"
                    for p in frame["pres"] if p["sw"] > p["cw"]]
    assert not clipped, "code blocks that scroll sideways:\n" + "\n".join(clipped)
    # the CLI page shows every --help text, each in a block
    cli = [f for f in res["frames"] if f["page"] == "cli.html"]
    assert all(len(f["pres"]) >= 12 for f in cli)


def test_no_page_scrolls_sideways(probed):
    """Nothing else (a table, a long word) makes a whole page wider than the window."""
    _, res = probed
    wide = [f"{f['page']} at {f['width']} px: {f['page_sw']} > {f['page_cw']} px"
            for f in res["frames"] if f["page_sw"] > f["page_cw"]]
    assert not wide, "pages wider than the window:\n" + "\n".join(wide)
