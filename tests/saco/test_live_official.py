"""boundary_api.saco against SAM 3's own evaluator run live, where a checkout of it is
present (skipped cleanly otherwise; the stored golden values always run): fresh sets
from the generator with seeds the stored ones do not use, i.e. sets made the same way
but never seen by the tests before, every value and every per-pair entry compared.

Environment (tests/data/saco/README.md says how to build it):

- ``BOUNDARY_API_SAM3``: a checkout of facebookresearch/sam3;
- ``BOUNDARY_API_SAM3_PYTHON``: a Python with numpy, scipy, pycocotools and tqdm.
"""
import json
import os
import subprocess

import pytest

from boundary_api.saco.synthetic import write_gold_like

from .test_goldens import PerPair, run, same

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "saco")
ENV = ("BOUNDARY_API_SAM3", "BOUNDARY_API_SAM3_PYTHON")

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("seed,files,iou_type", [(2001, 3, "segm"), (2002, 3, "bbox"), (2003, 1, "segm"),
                                                 (2004, 2, "segm")])
def test_fresh_sets_equal_the_official_evaluator(tmp_path, seed, files, iou_type):
    missing = [n for n in ENV if not os.environ.get(n)]
    if missing:
        pytest.skip(f"no official checkout: set {', '.join(missing)}")
    paths = write_gold_like(str(tmp_path), 150, seed, num_files=files)
    out = tmp_path / "official.json"
    subprocess.run([os.environ["BOUNDARY_API_SAM3_PYTHON"], os.path.join(DATA, "run_official.py"), "--sam3",
                    os.environ["BOUNDARY_API_SAM3"], "--gt", *paths["gt"], "--dt", paths["dt"], "--iou-type",
                    iou_type, "--out", str(out)], check=True, capture_output=True)
    want = json.loads(out.read_text())
    for cls in (None, PerPair):
        from boundary_api.saco import CGF1Evaluator

        ev, result, printed = run(cls or CGF1Evaluator, paths["gt"], paths["dt"], iou_type)
        for k, v in want["result"].items():
            assert same(result[k], v), (seed, k)
        for got, exp in zip(ev.coco_evals[0].evalImgs, want["evalImgs"]):
            for k, v in exp.items():
                g = got[k]
                assert same(g.tolist() if hasattr(g, "tolist") else g, v), (seed, exp["image_id"], k)
