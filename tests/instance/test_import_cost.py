"""What an evaluation imports: nothing it does not use.

Small evaluations are dominated by imports; these tests pin the modules the
evaluation path leaves out (they are loaded as usual if anything asks).
"""
from pathlib import Path

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from boundary_api.instance._engine import sorted_unique
from conftest import child_env, modules_after

DATA = Path(__file__).resolve().parents[1] / "data"


def test_coco_evaluation_imports_no_http_no_numpy_ma_no_matplotlib():
    mods = modules_after(f"""
        import contextlib, io
        from boundary_api import COCO, COCOeval
        with contextlib.redirect_stdout(io.StringIO()):
            gt = COCO({str(DATA / 'coco' / 'instances_val2014_100.json')!r})
            dt = gt.loadRes({str(DATA / 'coco' / 'instances_val2014_fakesegm100_results.json')!r})
            ev = COCOeval(gt, dt, 'boundary'); ev.evaluate(); ev.accumulate(); ev.summarize()
    """)
    for name in ("urllib.request", "http.client", "numpy.ma", "matplotlib", "cv2", "tqdm"):
        assert name not in mods, name


def test_urlretrieve_still_works_when_asked():
    mods = modules_after("""
        import boundary_api.coco.dataset
        import pycocotools.coco as pc
        import urllib.request
        assert urllib.request.urlretrieve.__module__ == 'urllib.request'
        assert callable(pc.urlretrieve)
    """)
    assert "urllib.request" in mods


@given(st.lists(st.integers(-2**62, 2**62), max_size=30))
def test_sorted_unique_is_np_unique(values):
    a, b = sorted_unique(values), list(np.unique(np.asarray(values, dtype=np.int64)))
    assert repr(a) == repr(b) and [type(x) for x in a] == [type(x) for x in b]


def test_sorted_unique_other_types():
    for values in ([], [True, False], [1.5, float("nan"), 1.5], ["b", "a", "b"], np.array([3, 3, 1], np.int32)):
        assert repr(sorted_unique(values)) == repr(list(np.unique(values)))


def _modules_after_here(code: str) -> set:
    """:func:`conftest.modules_after` with the boundary_api this test imports
    (put first on the child's path: another copy may be installed beside it)."""
    import subprocess
    import sys
    import textwrap

    import boundary_api

    env = child_env()
    code = textwrap.dedent(code) + (f"\nimport boundary_api, sys\nassert boundary_api.__file__ == "
                                    f"{boundary_api.__file__!r}\nprint(' '.join(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    return set(out.stdout.strip().splitlines()[-1].split())


def test_box_and_mask_evaluations_import_neither_the_measures_nor_msgspec():
    mods = _modules_after_here(f"""
        import contextlib, io
        from boundary_api import COCO, COCOeval
        with contextlib.redirect_stdout(io.StringIO()):
            gt = COCO({str(DATA / 'coco' / 'instances_val2014_100.json')!r})
            dt = gt.loadRes({str(DATA / 'coco' / 'instances_val2014_fakesegm100_results.json')!r})
            for iou in ('bbox', 'segm'):
                ev = COCOeval(gt, dt, iou); ev.evaluate(); ev.accumulate(); ev.summarize()
    """)
    for name in ("boundary_api.masks.measures", "boundary_api.masks._measures", "boundary_api.masks.iou",
                 "msgspec"):
        assert name not in mods, name


def test_lazy_mask_layer_names_still_resolve():
    mods = _modules_after_here("""
        import boundary_api.masks as m
        from boundary_api import boundary_iou
        assert m.boundary_iou is boundary_iou
        assert m.measures.boundary_iou is not None and m.iou.boundary_iou is boundary_iou
        assert {'boundary_iou', 'iou', 'measures'} <= set(dir(m))
    """)
    assert "boundary_api.masks.measures" in mods
