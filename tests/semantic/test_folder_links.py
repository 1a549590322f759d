"""pair_label_maps reads linked sub-folders of the ground truth (issue 25: a
linked city folder was skipped silently, the metrics computed on fewer images)."""
import os

import numpy as np
from PIL import Image

from boundary_api.semantic.evaluator import pair_label_maps


def _png(path, value):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    Image.fromarray(np.full((4, 4), value, np.uint8)).save(path)


def test_linked_sub_folders_are_read_once(tmp_path):
    store, gt, pred = tmp_path / "store", tmp_path / "gt", tmp_path / "pred"
    _png(str(gt / "a" / "a1.png"), 1)  # one city in the folder, one linked into it
    _png(str(store / "b" / "b1.png"), 1)
    for city in ("a", "b"):
        _png(str(pred / city / f"{city}1.png"), 1)
    os.symlink(store / "b", gt / "b")
    os.symlink(gt, gt / "b" / "loop")  # a link back up is not followed twice
    pairs = pair_label_maps(gt, pred)
    assert [os.path.relpath(g, gt) for g, _ in pairs] == ["a/a1.png", "b/b1.png"]
