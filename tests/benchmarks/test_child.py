"""What the benchmark children share (``benchmarks/_child.py``): the phases a
run is timed in, and the LVIS results faster-coco-eval is given.  No benchmark
runs here: the evaluators are stand-ins."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import _child  # noqa: E402


class _Evaluator:
    """Records the calls of a pycocotools-style evaluator."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda: self.calls.append(name)


def test_run_eval_phases_and_calls():
    t = _child.Timer(0.0)
    ev = _child.run_eval(t, _Evaluator(), after=["print_results"])
    assert ev.calls == ["evaluate", "accumulate", "summarize", "print_results"]
    assert list(t.phases) == ["evaluate", "accumulate+summarize"]
    t = _child.Timer()
    t.lap("load")
    ev = _child.run_eval(t, _Evaluator(), split=True)
    assert ev.calls == ["evaluate", "accumulate", "summarize"]
    assert list(t.phases) == ["load", "evaluate", "accumulate", "summarize"]
    assert all(v >= 0 for v in t.phases.values())


def test_faster_lvis_results_keeps_the_best_per_image_then_the_scored_categories(tmp_path):
    class _GT:
        dataset = {"images": [{"id": 1, "neg_category_ids": [7]}, {"id": 2}],
                   "annotations": [{"image_id": 1, "category_id": 5}, {"image_id": 2, "category_id": 5}]}

    anns = [{"image_id": 1, "category_id": 5, "score": 0.1}, {"image_id": 1, "category_id": 7, "score": 0.9},
            {"image_id": 1, "category_id": 9, "score": 0.8}, {"image_id": 2, "category_id": 9, "score": 0.5},
            {"image_id": 2, "category_id": 5, "score": 0.4}]
    path = tmp_path / "dt.json"
    path.write_text(json.dumps(anns))
    # the two best of each image, in score order
    kept = _child.faster_lvis_results(_GT, str(path), 2, prefilter=False)
    assert [(a["image_id"], a["score"]) for a in kept] == [(1, 0.9), (1, 0.8), (2, 0.5), (2, 0.4)]
    # then only categories present on the image or verified absent there
    kept = _child.faster_lvis_results(_GT, str(path), 2)
    assert [(a["image_id"], a["category_id"]) for a in kept] == [(1, 7), (2, 5)]


def test_the_children_share_the_marker_and_import_only_the_standard_library():
    import _harness
    import _run_one

    assert _harness.MARKER == _run_one.MARKER == _child.MARKER
    assert _harness.LVIS_KEYS == _run_one.LVIS_KEYS == _child.LVIS_KEYS
    code = ("import sys; sys.path.insert(0, %r); import _child; "
            "print(sorted(m for m in ('numpy', 'boundary_api', 'pycocotools') if m in sys.modules))"
            % str(ROOT / "benchmarks"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
