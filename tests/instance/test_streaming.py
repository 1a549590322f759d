"""JSON Lines / folders evaluated chunk by chunk, and shards on disk: the in-memory numbers."""
import contextlib
import io
import json
import os

import numpy as np
import pytest

from boundary_api import COCO, LVIS, COCOeval, LVISEval
from boundary_api.instance.streaming import (evaluate_manifest, evaluate_shard, evaluate_streaming,
                                             iter_results, load_manifest, shard_dataset)
from conftest import COCO_DT, COCO_GT, LVIS_DT, LVIS_GT
from synth import fresh, make_lvis_dataset


def _silent(fn, *a, **k):
    with contextlib.redirect_stdout(io.StringIO()):
        return fn(*a, **k)


def _jsonl(path, dets):
    with open(path, "w") as f:
        for d in dets:
            f.write(json.dumps(d) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def coco_dets():
    with open(COCO_DT) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def coco_ref():
    out = {}
    for iou in ("segm", "boundary"):
        gt = _silent(COCO, COCO_GT)
        ev = COCOeval(gt, _silent(gt.loadRes, COCO_DT), iou)
        _silent(ev.evaluate)
        _silent(ev.accumulate)
        _silent(ev.summarize)
        out[iou] = ev
    return out


def _same(ref, got):
    for key in ("precision", "recall") + (("scores",) if "scores" in ref.eval else ()):
        assert np.array_equal(got.eval[key], ref.eval[key]), key
    if hasattr(ref, "stats") and not isinstance(ref, LVISEval):
        assert np.array_equal(got.stats, ref.stats)
    else:
        assert list(got.results.items()) == list(ref.results.items())


@pytest.mark.parametrize("iou", ("segm", "boundary"))
@pytest.mark.parametrize("chunk", (1, 13, 1000))
def test_jsonl_streaming_equals_in_memory(tmp_path, coco_dets, coco_ref, iou, chunk):
    path = _jsonl(tmp_path / "r.jsonl", coco_dets)
    _same(coco_ref[iou], evaluate_streaming(COCO_GT, path, iou, chunk_images=chunk))


def test_folder_of_result_files_in_any_order(tmp_path, coco_dets, coco_ref):
    """A folder of JSON list and JSON Lines files, each image's detections split over files in order."""
    folder = tmp_path / "results"
    folder.mkdir()
    parts = np.array_split(np.arange(len(coco_dets)), 5)
    for n, idx in enumerate(parts):
        chunk = [coco_dets[i] for i in idx]
        if n % 2:
            (folder / f"part{n}.json").write_text(json.dumps(chunk))
        else:
            _jsonl(folder / f"part{n}.jsonl", chunk)
    assert sum(1 for _ in iter_results(folder)) == len(coco_dets)
    _same(coco_ref["segm"], evaluate_streaming(COCO_GT, folder, "segm", chunk_images=30))


def test_lvis_streaming_caps_each_image_as_lvis_does(tmp_path):
    with open(LVIS_DT) as f:
        dets = json.load(f)
    ref = LVISEval(LVIS_GT, fresh(dets), "boundary", max_dets=7)
    ref.run()
    path = _jsonl(tmp_path / "r.jsonl", dets)
    _same(ref, evaluate_streaming(LVIS_GT, path, "boundary", chunk_images=17, max_dets=7))


def test_generated_lvis_with_empty_chunks(tmp_path):
    gt, dets = make_lvis_dataset(seed=7, num_images=20)
    # images 1..4 lose their detections: chunks of 2 images without any
    dets = [d for d in dets if d["image_id"] > 4]
    ref = LVISEval(LVIS.from_dataset(fresh(gt)), fresh(dets), "segm")
    ref.run()
    got = evaluate_streaming(fresh(gt), _jsonl(tmp_path / "r.jsonl", dets), "segm", chunk_images=2)
    _same(ref, got)


def test_shards_on_disk(tmp_path, coco_dets, coco_ref):
    manifest = shard_dataset(COCO_GT, tmp_path / "shards", 23, results=_jsonl(tmp_path / "r.jsonl", coco_dets))
    shards = load_manifest(manifest)
    assert len(shards) == 5
    assert sorted(i for s in shards for i in s["img_ids"]) == sorted(_silent(COCO, COCO_GT).getImgIds())
    with open(shards[0]["gt"]) as f:
        first = json.load(f)
    assert {a["image_id"] for a in first["annotations"]} <= set(shards[0]["img_ids"])
    assert len(first["categories"]) == 80
    _same(coco_ref["boundary"], evaluate_manifest(manifest, "boundary"))
    assert evaluate_shard(shards[1], "segm").num_images == 23


def test_bad_input_is_named(tmp_path, coco_dets):
    path = tmp_path / "r.jsonl"
    path.write_text(json.dumps(coco_dets[0]) + "\n{not json\n")
    with pytest.raises(ValueError, match="line 2 is not valid JSON"):
        evaluate_streaming(COCO_GT, path, "segm")
    path.write_text(json.dumps(dict(coco_dets[0], image_id=-5)) + "\n")
    with pytest.raises(ValueError, match="image_id -5 is not an image"):
        evaluate_streaming(COCO_GT, path, "segm")
    path.write_text("\n")
    with pytest.raises(ValueError, match="empty"):
        evaluate_streaming(COCO_GT, path, "segm")
    with pytest.raises(ValueError, match="chunk_images"):
        evaluate_streaming(COCO_GT, path, "segm", chunk_images=0)
    with pytest.raises(ValueError, match="does not exist"):
        evaluate_streaming(COCO_GT, tmp_path / "missing.jsonl", "segm")
    box = dict(coco_dets[1], bbox=[1, 1, 5, 5])
    path.write_text(json.dumps(coco_dets[0]) + "\n" + json.dumps(box) + "\n")
    with pytest.raises(ValueError, match="mixes results"):
        evaluate_streaming(COCO_GT, path, "segm")
    os.makedirs(tmp_path / "shards")
    shard_dataset(COCO_GT, tmp_path / "shards", 50)
    with pytest.raises(ValueError, match="already exists"):
        shard_dataset(COCO_GT, tmp_path / "shards", 50)
