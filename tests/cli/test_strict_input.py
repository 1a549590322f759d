"""The command line loads with strict=True: what the Python API accepts with a
warning (pycocotools / lvis accept it) is refused in one line, exit 2, in
memory and when streaming alike (issue 24 item 2, issue 25 items 5, 6, 8)."""
import copy
import json

import pytest

from boundary_api.cli import main
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT

GT = json.load(open(COCO_GT))
DT = json.load(open(COCO_DT))
LGT = json.load(open(LVIS_GT))


def _write(tmp_path, name, obj):
    path = tmp_path / name
    path.write_text(json.dumps(obj))
    return str(path)


def _edited(doc, edit):
    doc = copy.deepcopy(doc)
    edit(doc)
    return doc


def _refused(argv, capsys, message):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") == 1, err
    assert err.startswith("boundary-eval: error: ")
    assert message in err, err


def _jsonl(tmp_path, name, results):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in results))
    return str(path)


def test_suspect_ground_truth_is_refused(tmp_path, capsys):
    first = GT["annotations"][0]
    cases = [
        (lambda g: g["images"][0].pop("height"),
         f"(image {GT['images'][0]['id']}): its polygons need the image's size, but the image has no valid "
         f"'height' and 'width' (got None, {GT['images'][0]['width']})"),
        (lambda g: g["annotations"][1].update(id=first["id"]), "1 annotation(s) repeat the id of another annotation"),
        (lambda g: [a.update(category_id=999) for a in g["annotations"][:40]],
         "40 annotation(s) have category ids not in 'categories' (999)"),
        (lambda g: g.update(images=[]), f"annotation id {first['id']} refers to image {first['image_id']}, "
                                        "which is not in 'images'"),
        (lambda g: next(a for a in g["annotations"] if a["iscrowd"])["segmentation"].update(size=[10, 10]),
         "RLE size [10, 10] is not the image's"),
    ]
    for k, (edit, message) in enumerate(cases):
        gt = _write(tmp_path, f"gt{k}.json", _edited(GT, edit))
        for iou in ("bbox", "segm"):
            _refused(["--gt", gt, "--dt", COCO_DT, "--iou-type", iou], capsys, message)
        # the same rule when streaming
        _refused(["--gt", gt, "--dt", _jsonl(tmp_path, "r.jsonl", DT), "--chunk-images", "10"], capsys, message)


def test_suspect_results_are_refused(tmp_path, capsys):
    cases = [
        (lambda r: r[3]["segmentation"].update(size=[10, 10]), "RLE size [10, 10] is not the image's"),
        (lambda r: r[2].update(score=float("nan")), "has an invalid score nan"),
        (lambda r: [d.update(category_id=1000) for d in r[:5]],
         "results use category ids that"),
    ]
    for k, (edit, message) in enumerate(cases):
        results = _edited(DT, edit)
        dt = _write(tmp_path, f"dt{k}.json", results)
        _refused(["--gt", COCO_GT, "--dt", dt], capsys, message)
        # the same rule when streaming (results of unknown categories were only warned about)
        if k == 2:
            _refused(["--gt", COCO_GT, "--dt", _jsonl(tmp_path, f"dt{k}.jsonl", results), "--chunk-images", "10"],
                     capsys, "category ids not in the ground truth")


def test_lvis_without_images_or_with_repeated_ids(tmp_path, capsys):
    first = LGT["annotations"][0]
    no_images = _write(tmp_path, "no_images.json", _edited(LGT, lambda g: g.update(images=[])))
    _refused(["--gt", no_images, "--dt", LVIS_DT, "--lvis"], capsys, "which is not in 'images'")
    repeated = _write(tmp_path, "repeated.json",
                      _edited(LGT, lambda g: g["annotations"][1].update(id=first["id"])))
    _refused(["--gt", repeated, "--dt", LVIS_DT], capsys, "repeat the id of another annotation")


@pytest.mark.parametrize("iou", ["segm", "boundary"])
def test_box_only_results_are_refused_for_masks(tmp_path, capsys, iou):
    boxes = [{k: v for k, v in r.items() if k != "segmentation"} | {"bbox": [1.0, 2.0, 3.0, 4.0]} for r in DT]
    _refused(["--gt", COCO_GT, "--dt", _write(tmp_path, "boxes.json", boxes), "--iou-type", iou], capsys,
             "only has boxes")


def test_images_without_size_are_accepted_where_nothing_needs_it(tmp_path, capsys):
    """Issue 40: boxes need no image size (torchmetrics' files have none); a mask
    evaluation of the RLEs on such an image is refused in one line, naming it."""
    gt = {"images": [{"id": 1}], "categories": [{"id": 1, "name": "a"}],
          "annotations": [{"id": 1, "image_id": 1, "category_id": 1, "bbox": [1, 1, 5, 5], "area": 25, "iscrowd": 0,
                           "segmentation": {"size": [10, 10], "counts": [11, 5, 5, 79]}}]}
    dt = [{"image_id": 1, "category_id": 1, "bbox": [1, 1, 5, 5], "score": 0.9}]
    gt_path, dt_path = _write(tmp_path, "gt.json", gt), _write(tmp_path, "dt.json", dt)
    assert main(["--gt", gt_path, "--dt", dt_path, "--iou-type", "bbox"]) == 0
    assert capsys.readouterr().err == ""
    for iou in ("segm", "boundary"):
        _refused(["--gt", gt_path, "--dt", dt_path, "--iou-type", iou], capsys,
                 f"{gt_path}: annotation id 1 (image 1): its image has no valid 'height' and 'width' (got None, None), "
                 f"which --iou-type {iou} needs")
