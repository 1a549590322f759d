"""The bundled demo files are what the project's generator makes."""
import json

from boundary_api.cli.demo import demo_paths, make_demo, write_demo


def test_bundled_demo_is_reproducible(tmp_path):
    gt_path, dt_path = demo_paths()
    write_demo(str(tmp_path / "gt.json"), str(tmp_path / "dt.json"))
    assert json.loads((tmp_path / "gt.json").read_text()) == json.load(open(gt_path))
    assert json.loads((tmp_path / "dt.json").read_text()) == json.load(open(dt_path))


def test_demo_content():
    gt, results = make_demo(num_images=5, seed=1)
    assert len(gt["images"]) == 5
    assert {a["category_id"] for a in gt["annotations"]} <= {1, 2, 3}
    assert all(isinstance(a["segmentation"], list) for a in gt["annotations"])
    assert all(isinstance(r["segmentation"]["counts"], str) and 0 < r["score"] <= 1 for r in results)
