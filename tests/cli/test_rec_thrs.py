"""--rec-thrs 11: PASCAL VOC2007 11-point interpolated AP from the instance command, equal
to pycocotools' COCOeval with params.recThrs = linspace(0, 1, 11)."""
import contextlib
import io
import json

import numpy as np
import pytest
from pycocotools.coco import COCO
from pycocotools.cocoeval import COCOeval

from boundary_api.cli import instance_parser, main
from conftest import COCO_DT, COCO_GT

NAMES = ["AP", "AP50", "AP75", "APs", "APm", "APl", "AR1", "AR10", "AR100", "ARs", "ARm", "ARl"]


def _metrics(doc):
    m = doc.get("metrics", doc)
    return [m[k] for k in NAMES]


@pytest.mark.parametrize("iou", ["segm", "bbox"])
def test_eleven_point_ap_equals_pycocotools(tmp_path, capsys, iou):
    out = tmp_path / "m.json"
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", iou, "--rec-thrs", "11",
                 "--json-out", str(out), "-q"]) == 0
    with contextlib.redirect_stdout(io.StringIO()):
        gt = COCO(COCO_GT)
        ev = COCOeval(gt, gt.loadRes(COCO_DT), iou)
        ev.params.recThrs = np.linspace(0, 1, 11)
        ev.evaluate()
        ev.accumulate()
        ev.summarize()
    np.testing.assert_allclose(_metrics(json.loads(out.read_text())), ev.stats, rtol=0, atol=1e-12)
    # the 11 points: precision at recall 0, 0.1, .., 1 (VOC2007), not COCO's 101
    assert ev.eval["precision"].shape[1] == 11
    out101 = tmp_path / "m101.json"
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--iou-type", iou, "--json-out", str(out101), "-q"]) == 0
    assert _metrics(json.loads(out101.read_text()))[0] != _metrics(json.loads(out.read_text()))[0]


def test_rec_thrs_flag_is_checked(capsys):
    assert instance_parser().parse_args([]).rec_thrs == 101
    with pytest.raises(SystemExit) as e:
        main(["--gt", COCO_GT, "--dt", COCO_DT, "--rec-thrs", "1"])
    assert e.value.code == 2
    assert "at least 2" in capsys.readouterr().err


def test_eleven_point_ap_on_lvis_equals_lvis_own_loops(tmp_path, capsys):
    from boundary_api.lvis import LVISEval
    from conftest import LVIS_DT, LVIS_GT

    out = tmp_path / "m.json"
    assert main(["--gt", LVIS_GT, "--dt", LVIS_DT, "--iou-type", "segm", "--rec-thrs", "11",
                 "--json-out", str(out), "-q"]) == 0
    with contextlib.redirect_stdout(io.StringIO()):
        slow = LVISEval(LVIS_GT, LVIS_DT, iou_type="segm", use_fast_impl=False)  # lvis' own accumulate
        slow.params.rec_thrs = np.linspace(0, 1, 11)
        slow.run()
    assert slow.eval["precision"].shape[1] == 11
    doc = json.loads(out.read_text())
    got = doc.get("metrics", doc)
    want = slow.get_results()
    np.testing.assert_allclose([got[k] for k in want], list(want.values()), rtol=0, atol=1e-12)
