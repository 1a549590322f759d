"""boundary_api.panoptic.pq_compute_files: pq_compute of two files with the
ground truth's categories (what boundary-eval panoptic runs), refusing suspect
input by default, pipes read once."""
import json
import os
import threading

import pytest

from boundary_api.panoptic import pq_compute, pq_compute_files

from conftest import DATA

PAN = os.path.join(DATA, "panoptic")
GT_JSON = os.path.join(PAN, "panoptic_examples.json")
GT_DIR = os.path.join(PAN, "panoptic_examples")
PRED_JSON = os.path.join(PAN, "pred_down4.json")
PRED_DIR = os.path.join(PAN, "pred_down4")


@pytest.mark.parametrize("iou_type", ["boundary", "segm"])
def test_the_numbers_are_pq_computes_and_the_categories_the_files(iou_type, capsys):
    expected = pq_compute(GT_JSON, PRED_JSON, iou_type=iou_type, print_progress=False)
    table = capsys.readouterr().out
    got = pq_compute_files(GT_JSON, PRED_JSON, iou_type=iou_type)
    assert capsys.readouterr().out == table  # the table only, as pq_compute(print_progress=False)
    assert got["results"] == expected
    cats = json.load(open(GT_JSON))["categories"]
    assert got["categories"] == {c["id"]: c for c in cats}
    assert set(got["results"]["per_class"]) <= set(got["categories"])
    assert got["seconds"] > 0


def test_default_iou_type_is_boundary():
    assert pq_compute_files(GT_JSON, PRED_JSON)["results"] == \
        pq_compute(GT_JSON, PRED_JSON, iou_type="boundary", print_progress=False)


def test_suspect_input_is_refused_by_default(tmp_path):
    pred = json.load(open(PRED_JSON))
    pred["annotations"].append(dict(pred["annotations"][0]))  # an image with two predictions
    path = tmp_path / "pred_down4.json"
    path.write_text(json.dumps(pred))
    with pytest.raises(ValueError, match="has more than one prediction"):
        pq_compute_files(GT_JSON, str(path), pred_folder=PRED_DIR)
    with pytest.warns(UserWarning, match="has more than one prediction"):
        pq_compute_files(GT_JSON, str(path), pred_folder=PRED_DIR, strict=False)


def test_a_pipe_is_read_once_and_needs_its_folder(tmp_path):
    fifo = tmp_path / "gt.fifo"
    os.mkfifo(fifo)
    data = open(GT_JSON, "rb").read()

    def write():
        with open(fifo, "wb") as f:
            f.write(data)

    for folder, ok in ((None, False), (GT_DIR, True)):
        writer = threading.Thread(target=write)
        writer.start()
        try:
            if ok:
                got = pq_compute_files(str(fifo), PRED_JSON, gt_folder=folder)
                assert got["results"] == pq_compute(GT_JSON, PRED_JSON, iou_type="boundary", print_progress=False)
            else:
                with pytest.raises(ValueError, match=f"{fifo} is a pipe, so its PNG folder cannot be found "
                                                     "next to it: give gt_folder"):
                    pq_compute_files(str(fifo), PRED_JSON, gt_folder=folder)
        finally:
            writer.join(timeout=30)


def test_missing_file_is_a_value_error(tmp_path):
    with pytest.raises(ValueError, match="ground truth JSON file not found"):
        pq_compute_files(str(tmp_path / "missing.json"), PRED_JSON)
