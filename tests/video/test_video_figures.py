"""examples/figures/mosev2_adaptive_f.csv (the numbers behind docs/video.md's figure
of MOSEv2's adaptive F) is what ``python examples/make_video_figures.py`` makes."""
import csv
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.slow
def test_committed_numbers_are_regenerated(tmp_path):
    subprocess.run([sys.executable, os.path.join(ROOT, "examples", "make_video_figures.py"), "--out",
                    str(tmp_path)], check=True, capture_output=True)
    for name in ("mosev2_adaptive_f.csv",):
        with open(tmp_path / name) as f, open(os.path.join(ROOT, "examples", "figures", name)) as g:
            assert list(csv.reader(f)) == list(csv.reader(g)), "run python examples/make_video_figures.py"
    assert (tmp_path / "fig_mosev2_adaptive_f.png").stat().st_size > 10000
