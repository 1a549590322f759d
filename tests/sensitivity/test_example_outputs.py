"""The committed example outputs (examples/figures/) are what the documented
command regenerates: ``python examples/make_figures.py``."""
import csv
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "examples" / "figures"
PNGS = ["fig6_severity.png", "fig4_scale_error_sizes.png"]


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory):
    pytest.importorskip("shapely")
    pytest.importorskip("matplotlib")
    out = tmp_path_factory.mktemp("figures")
    proc = subprocess.run([sys.executable, str(ROOT / "examples" / "make_figures.py"), "--out", str(out)],
                          capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.reader(f))


@pytest.mark.slow
def test_curves_csv_is_what_the_command_writes(regenerated):
    committed, fresh = _rows(FIGURES / "curves.csv"), _rows(regenerated / "curves.csv")
    assert committed[0] == fresh[0]
    differing = [(a, b) for a, b in zip(committed, fresh) if a != b]
    assert len(committed) == len(fresh) and not differing, (
        f"{len(differing)} rows differ, e.g. {differing[:2]}: run `python examples/make_figures.py` and commit")


@pytest.mark.slow
@pytest.mark.parametrize("name", PNGS)
def test_figures_are_what_the_command_draws(regenerated, name):
    import cv2

    committed = cv2.imread(str(FIGURES / name), cv2.IMREAD_COLOR)
    fresh = cv2.imread(str(regenerated / name), cv2.IMREAD_COLOR)
    assert committed is not None and fresh is not None
    assert committed.shape == fresh.shape
    # the numbers are checked exactly above; the drawing may differ by
    # anti-aliasing between matplotlib releases, not by a curve
    diff = np.abs(committed.astype(np.int16) - fresh.astype(np.int16))
    assert diff.mean() < 1.0, f"{name} differs from what the command draws (mean |diff| {diff.mean():.2f})"


def test_the_command_is_documented():
    text = (ROOT / "docs" / "sensitivity.md").read_text()
    assert "python examples/make_figures.py" in text
    for name in PNGS:
        assert f"examples/figures/{name}" in text
