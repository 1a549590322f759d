"""Hostile and mistaken input on the command line: one line `boundary-eval: error: ...`,
exit status 2, never a traceback (issue 9, items 6 and 7), and .json.gz read transparently."""
import copy
import gzip
import json
import os
import shutil
import subprocess

import pytest

from boundary_api.cli import main
from conftest import COCO_DT, COCO_GT, DATA, LVIS_DT, LVIS_GT, golden_cases
from test_output_files import console_script

GT = json.load(open(COCO_GT))
DT = json.load(open(COCO_DT))


def _write(tmp_path, name, obj, raw=None):
    path = tmp_path / name
    path.write_text(raw if raw is not None else json.dumps(obj))
    return str(path)


def _polygon_ann(gt):
    return next(a for a in gt["annotations"] if isinstance(a["segmentation"], list))


def _gt_with(tmp_path, name, edit):
    gt = copy.deepcopy(GT)
    edit(gt)
    return _write(tmp_path, name, gt)


def _set_polygon(poly):
    def edit(gt):
        _polygon_ann(gt)["segmentation"] = poly
    return edit


def _cases(tmp_path):
    """(argv, expected text in the one error line)."""
    ann = _polygon_ann(GT)
    where = f"annotation id {ann['id']} (image {ann['image_id']})"
    img = next(i for i in GT["images"] if i["id"] == ann["image_id"])
    gt_poly = {name: _gt_with(tmp_path, f"{name}.json", _set_polygon(poly)) for name, poly in [
        ("two_coords", [[1.0, 2.0]]), ("four_coords", [[1, 2, 3, 4]]), ("odd", [[1, 2, 3, 4, 5, 6, 7]]),
        ("empty_poly", [[]]), ("no_polys", []), ("text", [["a", "b", "c", "d", "e", "f"]]),
        ("huge", [[1e30, 1, 2, 3, 4, 5]]), ("inf", [[1, 2, 3, 4, 5, float("inf")]]),
        ("nested", [[[1, 2], [3, 4], [5, 6]]])]}
    nan_gt = copy.deepcopy(GT)
    _polygon_ann(nan_gt)["segmentation"] = [[float("nan"), 1, 2, 3, 4, 5]]
    nan_path = _write(tmp_path, "nan.json", None, raw=json.dumps(nan_gt))  # NaN, as Python writes it
    images_obj = _gt_with(tmp_path, "images_obj.json",
                          lambda g: g.update(images={str(i["id"]): i for i in g["images"]}))
    images_int = _gt_with(tmp_path, "images_int.json", lambda g: g.update(images=[i["id"] for i in g["images"]]))
    seg_null = _gt_with(tmp_path, "seg_null.json", lambda g: g["annotations"][0].update(segmentation=None))
    seg_str = _gt_with(tmp_path, "seg_str.json", lambda g: g["annotations"][0].update(segmentation="x"))
    crowd = next(a for a in GT["annotations"] if a["iscrowd"])
    crowd_img = next(i for i in GT["images"] if i["id"] == crowd["image_id"])
    rle_size = _gt_with(tmp_path, "rle_size.json", lambda g: next(
        a for a in g["annotations"] if a["id"] == crowd["id"])["segmentation"].update(size=[10, 10]))
    rle_counts = _gt_with(tmp_path, "rle_counts.json", lambda g: next(
        a for a in g["annotations"] if a["id"] == crowd["id"])["segmentation"].update(counts=[-1, 5]))
    deep = _write(tmp_path, "deep.json", None, raw="[" * 200000 + "]" * 200000)
    res_null = [dict(r) for r in DT]
    res_null[5]["segmentation"] = None
    res_null = _write(tmp_path, "res_null.json", res_null)
    boxes = [{"image_id": r["image_id"], "category_id": r["category_id"], "bbox": [1, 2, 30, 40],
              "score": r["score"]} for r in DT]
    boxes_path = _write(tmp_path, "boxes.json", boxes)
    box_poly = [dict(b) for b in boxes]
    box_poly[7]["segmentation"] = [[float("nan"), 1, 2, 3, 4, 5]]
    box_poly = _write(tmp_path, "box_poly.json", None, raw=json.dumps(box_poly))
    return [
        (["--gt", COCO_DT, "--dt", COCO_GT],
         f"{COCO_DT}: not a COCO ground truth (expected a JSON object with 'images', 'annotations' and "
         "'categories', got a list): it looks like a results file (were the ground truth and the results "
         "swapped?)"),
        (["--gt", COCO_GT, "--dt", COCO_GT],
         f"{COCO_GT}: results must be a list of objects, got a JSON object: it looks like a ground truth "
         "file (were --gt and --dt swapped?)"),
        (["--gt", images_obj, "--dt", COCO_DT],
         f"{images_obj}: not a COCO ground truth (no list of 'images': 'images' is an object)"),
        (["--gt", images_int, "--dt", COCO_DT],
         f"{images_int}: images[0] is not an object (got an integer {GT['images'][0]['id']})"),
        (["--gt", deep, "--dt", COCO_DT], f"ground truth file is nested too deeply to be read: {deep}"),
        (["--gt", COCO_GT, "--dt", deep], f"results file is nested too deeply to be read: {deep}"),
        (["--gt", seg_null, "--dt", COCO_DT],
         f"{seg_null}: annotation id {GT['annotations'][0]['id']} (image {GT['annotations'][0]['image_id']}) "
         "has no 'segmentation', which --iou-type boundary needs"),
        (["--gt", seg_str, "--dt", COCO_DT],
         f"{seg_str}: annotation id {GT['annotations'][0]['id']} has a 'segmentation' that is neither a list "
         "of polygons nor an RLE {'size', 'counts'} (got a string)"),
        (["--gt", rle_size, "--dt", COCO_DT],
         f"{rle_size}: annotation id {crowd['id']} (image {crowd['image_id']}): RLE size [10, 10] is not the "
         f"image's [{crowd_img['height']}, {crowd_img['width']}]"),
        (["--gt", rle_counts, "--dt", COCO_DT, "--iou-type", "segm"],
         f"{rle_counts}: annotation id {crowd['id']} (image {crowd['image_id']}): RLE counts must be "
         "non-negative integers, got -1"),
        (["--gt", COCO_GT, "--dt", res_null],
         f"{res_null}: result #5 (image {DT[5]['image_id']}) has 'segmentation': null"),
        (["--gt", COCO_GT, "--dt", boxes_path],
         f"--iou-type boundary needs results with a 'segmentation' (compressed RLE); {boxes_path} only has "
         "boxes (use --iou-type bbox)"),
        (["--gt", COCO_GT, "--dt", boxes_path, "--iou-type", "segm"], "--iou-type segm needs results"),
        (["--gt", COCO_GT, "--dt", box_poly, "--iou-type", "bbox"],
         f"{box_poly}: result #7 (image {boxes[7]['image_id']}): polygon 0 has a non-finite coordinate nan"),
        (["--gt", gt_poly["two_coords"], "--dt", COCO_DT],
         f"{gt_poly['two_coords']}: {where}: polygon 0 has 2 coordinates; a polygon needs an even number of "
         "them, at least 6 (3 points)"),
        (["--gt", gt_poly["four_coords"], "--dt", COCO_DT], "polygon 0 has 4 coordinates"),
        (["--gt", gt_poly["odd"], "--dt", COCO_DT], "polygon 0 has 7 coordinates"),
        (["--gt", gt_poly["empty_poly"], "--dt", COCO_DT], "polygon 0 has 0 coordinates"),
        (["--gt", gt_poly["no_polys"], "--dt", COCO_DT], f"{where}: 'segmentation' is an empty list of polygons"),
        (["--gt", gt_poly["text"], "--dt", COCO_DT], "polygon 0 has a coordinate that is not a number: 'a'"),
        (["--gt", gt_poly["nested"], "--dt", COCO_DT], "polygon 0 has 3 coordinates"),
        (["--gt", gt_poly["huge"], "--dt", COCO_DT],
         f"{where}: polygon 0 has a coordinate far outside the {img['width']}x{img['height']} image: 1e+30"),
        (["--gt", gt_poly["inf"], "--dt", COCO_DT], "polygon 0 has a non-finite coordinate inf"),
        (["--gt", nan_path, "--dt", COCO_DT], f"{nan_path}: {where}: polygon 0 has a non-finite coordinate nan"),
        (["--gt", COCO_GT, "--dt", COCO_DT, "--max-dets", "0"], "argument --max-dets: must be >= 1, got 0"),
    ]


def test_bad_input_one_line_exit_2(tmp_path, capsys):
    cases = _cases(tmp_path)
    for argv, message in cases:
        if "argument --" in message:  # argparse's usage errors exit from main, as always
            with pytest.raises(SystemExit) as exc:
                main(argv)
            code = exc.value.code
        else:
            code = main(argv)
        assert code == 2, argv
        captured = capsys.readouterr()
        err = captured.err
        assert "Traceback" not in err
        if "argument --" in message:
            assert err.splitlines()[-1] == f"boundary-eval: error: {message}"
        else:
            assert err.count("\n") == 1, err
            assert err.startswith("boundary-eval: error: ")
            assert message in err, (argv, err)


@pytest.mark.parametrize("value", ["1e20", "1e309", "1001"])
def test_huge_dilation_ratio_is_a_usage_error(capsys, value):
    with pytest.raises(SystemExit) as exc:
        main(["--gt", COCO_GT, "--dt", COCO_DT, "--dilation-ratio", value])
    assert exc.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    if value == "1e309":  # float('1e309') is inf
        assert last == "boundary-eval: error: argument --dilation-ratio: must be a finite number >= 0, got '1e309'"
    else:
        assert last.startswith(f"boundary-eval: error: argument --dilation-ratio: '{value}' is far too large: "
                               "the ratio is a fraction of the image diagonal (0.02 means 2%)")


def test_real_process_never_shows_a_traceback(tmp_path):
    """The same inputs in a real `boundary-eval` process, run from a temporary directory."""
    cases = _cases(tmp_path)
    picked = [c for c in cases if any(k in c[1] for k in ("swapped", "nested too deeply", "far outside",
                                                        "non-finite coordinate nan", "empty list"))]
    picked.append((["--gt", COCO_GT, "--dt", COCO_DT, "--dilation-ratio", "1e20"], "is far too large"))
    assert len(picked) >= 7
    for argv, message in picked:
        proc = subprocess.run([console_script(), *argv], capture_output=True, text=True, cwd=tmp_path, timeout=120)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert message in proc.stderr.splitlines()[-1]
        if "usage:" not in proc.stderr:
            assert proc.stderr.count("\n") == 1, proc.stderr


def test_json_gz_is_read_transparently(tmp_path, capsys):
    plain = tmp_path / "plain.json"
    gz_out = tmp_path / "gz.json"
    gt_gz = tmp_path / "gt.json.gz"
    dt_gz = tmp_path / "dt.json.gz"
    with gzip.open(gt_gz, "wt") as f:
        json.dump(GT, f)
    with gzip.open(dt_gz, "wt") as f:
        json.dump(DT, f)
    assert main(["--gt", COCO_GT, "--dt", COCO_DT, "--json-out", str(plain), "-q"]) == 0
    assert main(["--gt", str(gt_gz), "--dt", str(dt_gz), "--json-out", str(gz_out), "-q"]) == 0
    a, b = json.loads(plain.read_text()), json.loads(gz_out.read_text())
    assert b["settings"]["inputs"] == {"--gt": str(gt_gz), "--dt": str(dt_gz)}
    assert {k: v for k, v in a.items() if k != "settings"} == {k: v for k, v in b.items() if k != "settings"}
    # LVIS too (its loader reads through the same function)
    lvis_gz = tmp_path / "lvis.json.gz"
    with gzip.open(lvis_gz, "wb") as f:
        f.write(open(LVIS_GT, "rb").read())
    out = tmp_path / "lvis.json"
    assert main(["--gt", str(lvis_gz), "--dt", LVIS_DT, "--json-out", str(out), "-q"]) == 0
    assert json.loads(out.read_text())["settings"]["kind"] == "lvis"
    # panoptic JSONs too; the default PNG folder of x.json.gz is x
    pan = tmp_path / "pan"
    shutil.copytree(os.path.join(DATA, "panoptic"), pan)
    for name in ("panoptic_examples.json", "pred_down4.json"):
        with gzip.open(pan / (name + ".gz"), "wb") as f:
            f.write((pan / name).read_bytes())
        (pan / name).unlink()
    pq_out = tmp_path / "pq.json"
    assert main(["panoptic", "--gt-json", str(pan / "panoptic_examples.json.gz"), "--pred-json",
                 str(pan / "pred_down4.json.gz"), "--json-out", str(pq_out), "--threads", "1", "-q"]) == 0
    case = next(c for c in golden_cases("panoptic_eval.json") if c["name"] == "panoptic-down4-boundary-0.02")
    assert abs(json.loads(pq_out.read_text())["PQ"] - case["results"]["All"]["pq"]) <= 1e-12
    # a truncated gzip file is one clear error
    broken = tmp_path / "broken.json.gz"
    broken.write_bytes(gt_gz.read_bytes()[:200])
    assert main(["--gt", str(broken), "--dt", COCO_DT]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == (f"boundary-eval: error: ground truth file is not a valid gzip file: {broken} "
                                    "(Compressed file ended before the end-of-stream marker was reached)")


def _edit_results(tmp_path, name, edit):
    res = [dict(r) for r in DT]
    edit(res)
    return _write(tmp_path, name, res)


def test_ids_are_quoted_with_repr(tmp_path, capsys):
    cats = [c["id"] for c in GT["categories"]]
    # a string "1000" is not the integer 1000, and not a contiguous-id mistake
    str_cat = _edit_results(tmp_path, "str_cat.json", lambda r: r[0].update(category_id="1000"))
    assert main(["--gt", COCO_GT, "--dt", str_cat]) == 2
    err = capsys.readouterr().err
    assert err == (f"boundary-eval: error: {str_cat}: results use category ids that {COCO_GT} does not have: "
                   "'1000' (the results' ids are strings, the ground truth's are integers)\n")
    # the same id as a string that IS a ground-truth category: still quoted, still no contiguous hint
    str_known = _edit_results(tmp_path, "str_known.json", lambda r: r[0].update(category_id=str(cats[0])))
    assert main(["--gt", COCO_GT, "--dt", str_known]) == 2
    err = capsys.readouterr().err
    assert f"does not have: '{cats[0]}' (the results' ids are strings" in err and "contiguous" not in err
    # integer ids renumbered 0..K-1: the contiguous-id hint
    contiguous = _edit_results(tmp_path, "contig.json",
                               lambda r: [x.update(category_id=cats.index(x["category_id"])) for x in r])
    assert main(["--gt", COCO_GT, "--dt", contiguous]) == 2
    err = capsys.readouterr().err
    assert err.rstrip().endswith("(were categories mapped to contiguous ids?)")
    # an unknown integer id far away from 0..K: no hint
    far = _edit_results(tmp_path, "far.json", lambda r: r[0].update(category_id=123456))
    assert main(["--gt", COCO_GT, "--dt", far]) == 2
    assert capsys.readouterr().err.rstrip().endswith("does not have: 123456")
    # image ids: a string "1000" reads as '1000'
    str_img = _edit_results(tmp_path, "str_img.json", lambda r: r[0].update(image_id=str(r[0]["image_id"])))
    assert main(["--gt", COCO_GT, "--dt", str_img]) == 2
    err = capsys.readouterr().err
    assert err == (f"boundary-eval: error: {str_img}: results refer to image ids not in the ground truth: "
                   f"'{DT[0]['image_id']}' (the results' ids are strings, the ground truth's are integers)\n")


def test_errors_about_results_name_the_file(tmp_path, capsys):
    problems = [
        lambda r: r[2].update(score=float("nan")),
        lambda r: r[2].pop("category_id"),
        lambda r: r[2].update(segmentation=dict(r[2]["segmentation"], counts="!!!")),
        lambda r: r[2].update(segmentation=dict(r[2]["segmentation"], size=[3, 3])),
        lambda r: r.__setitem__(2, 17),
        lambda r: r[2].update(category_id=[1]),
    ]
    for k, edit in enumerate(problems):
        path = _edit_results(tmp_path, f"r{k}.json", edit)
        for extra in ([], ["--lvis"]) if k < 2 else ([],):
            gt = COCO_GT if not extra else LVIS_GT
            if extra:
                path = _edit_results(tmp_path, f"l{k}.json",
                                     lambda r: [r.clear(), r.extend(json.load(open(LVIS_DT))), edit(r)])
            assert main(["--gt", gt, "--dt", path, *extra]) == 2
            err = capsys.readouterr().err
            assert err.startswith(f"boundary-eval: error: {path}: "), err
            assert err.count("\n") == 1


def test_command_line_errors_use_flag_names(tmp_path, capsys):
    boxes = [{"image_id": r["image_id"], "category_id": r["category_id"], "bbox": [1, 2, 30, 40],
              "score": r["score"]} for r in json.load(open(LVIS_DT))]
    path = _write(tmp_path, "lvis_boxes.json", boxes)
    assert main(["--gt", LVIS_GT, "--dt", path]) == 2
    err = capsys.readouterr().err
    assert "--iou-type boundary needs results with a 'segmentation'" in err
    assert "iouType" not in err and "iou_type" not in err
    with pytest.raises(SystemExit) as exc:
        main(["--gt", COCO_GT, "--dt", COCO_DT, "--threads", "-1"])
    assert exc.value.code == 2
    assert "argument --threads: must be >= 1" in capsys.readouterr().err
