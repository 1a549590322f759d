"""What a native cgF1 evaluation imports: nothing of the per-pair path.

``boundary-eval saco`` on SA-Co files in the native schema evaluates on columns; the
per-pair structure (pycocotools' ``COCO``, ``CGF1Eval``, tqdm) and the other protocol
packages are loaded only when asked for, and the predictions are read by the
instance results scanner (no saco scanner of its own).
"""
import os

from conftest import modules_after

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "saco")


def test_native_saco_evaluation_imports_no_per_pair_path():
    gts = [os.path.join(DATA, f"gold3_gt_{c}.json") for c in "abc"]
    dt = os.path.join(DATA, "gold3_pred.json")
    mods = modules_after(f"""
        import contextlib, io, warnings
        warnings.simplefilter("ignore")
        from boundary_api.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(["saco", "--gt", *{gts!r}, "--dt", {dt!r}, "--not-strict", "-q",
                         "--iou-type", "segm", "boundary"]) == 0
    """)
    assert "boundary_api.saco._pairs" in mods and "boundary_api.instance._scan_results" in mods
    for name in ("pycocotools.coco", "scipy", "tqdm", "boundary_api.saco._loops", "boundary_api.saco.cgf1eval",
                 "boundary_api.instance._engine", "boundary_api.masks.measures", "boundary_api.coco",
                 "boundary_api.lvis", "boundary_api.video", "matplotlib", "numpy.ma", "urllib.request"):
        assert name not in mods, name
