"""JSON Lines / folders evaluated chunk by chunk, and shards on disk: the in-memory numbers."""
import contextlib
import io
import json
import os
import warnings

import numpy as np
import pytest

from boundary_api import COCO, LVIS, COCOeval, LVISEval
from boundary_api.scale.streaming import (evaluate_manifest, evaluate_shard, evaluate_streaming,
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


def test_chunks_and_images_without_detections_log_no_empty_ground_truth(tmp_path, coco_dets, caplog):
    """A chunk of images (and the empty results of one without detections) is
    this package's own making: the "ground truth has no annotations" warning is
    for the user's whole ground truth only (it once leaked through a logger
    filter named after the wrong module)."""
    first = min(d["image_id"] for d in coco_dets)
    path = _jsonl(tmp_path / "r.jsonl", [d for d in coco_dets if d["image_id"] != first])
    with caplog.at_level("WARNING"):
        evaluate_streaming(COCO_GT, path, "segm", chunk_images=1)
    assert [r.getMessage() for r in caplog.records if "no annotations" in r.getMessage()] == []


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


# ------------------------------------------------------------------ issue 25
def _folder_of_every_kind(folder, dets):
    """The results split over .json, .json.gz, .jsonl.gz, .ndjson and a sub-folder's .jsonl."""
    import gzip

    n = len(dets) // 5
    os.makedirs(folder / "sub" / "deeper")
    with open(folder / "a.json", "w") as f:
        json.dump(dets[:n], f)
    with gzip.open(folder / "b.json.gz", "wt") as f:
        json.dump(dets[n:2 * n], f)
    with gzip.open(folder / "c.jsonl.gz", "wt") as f:
        f.write("\n".join(json.dumps(d) for d in dets[2 * n:3 * n]))
    _jsonl(folder / "sub" / "d.ndjson", dets[3 * n:4 * n])
    _jsonl(folder / "sub" / "deeper" / "e.jsonl", dets[4 * n:])
    (folder / ".DS_Store").write_bytes(b"\x00\x01")
    return folder


def test_folder_reads_every_results_file_it_holds(tmp_path, coco_dets, coco_ref):
    folder = _folder_of_every_kind(tmp_path / "res", coco_dets)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a .DS_Store is passed over without a word
        assert len(list(iter_results(folder))) == len(coco_dets)
    _same(coco_ref["boundary"], evaluate_streaming(COCO_GT, folder, "boundary", chunk_images=40))


@pytest.mark.parametrize("name", ["notes.txt", "sub/results.json.bak", "sub/deeper/x.csv"])
def test_folder_with_an_unreadable_file_is_refused_naming_it(tmp_path, coco_dets, name):
    folder = _folder_of_every_kind(tmp_path / "res", coco_dets)
    (folder / name).write_text("x")
    with pytest.raises(ValueError, match="not a results file") as err:
        evaluate_streaming(COCO_GT, folder, "segm")
    assert str(folder / name) in str(err.value)
    assert os.listdir(tmp_path) == ["res"]


def test_folder_reached_twice_through_a_link_is_refused(tmp_path, coco_dets):
    folder = _folder_of_every_kind(tmp_path / "res", coco_dets)
    os.symlink(folder / "sub", folder / "again")
    with pytest.raises(ValueError, match="counted twice"):
        list(iter_results(folder))


def test_results_file_from_a_pipe(tmp_path, coco_dets, coco_ref):
    import gzip
    import threading

    payload = gzip.compress("\n".join(json.dumps(d) for d in coco_dets).encode())
    r, w = os.pipe()

    def feed():
        try:
            with os.fdopen(w, "wb") as f:
                f.write(payload)
        except BrokenPipeError:  # the reader stopped early (a failure the test reports)
            pass

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        got = evaluate_streaming(COCO_GT, f"/dev/fd/{r}", "segm", chunk_images=50)
    finally:
        os.close(r)
        writer.join()
    _same(coco_ref["segm"], got)


@pytest.fixture
def partial_manifests(tmp_path):
    path = shard_dataset(COCO_GT, tmp_path, 30, results=COCO_DT)
    with open(path) as f:
        doc = json.load(f)
    assert doc["num_shards"] == 4 and [s["index"] for s in doc["shards"]] == [0, 1, 2, 3]
    out = {"whole": path}

    def write(name, d):
        out[name] = str(tmp_path / f"{name}.json")
        with open(out[name], "w") as f:
            json.dump(d, f)

    write("missing", dict(doc, shards=doc["shards"][:1] + doc["shards"][2:]))
    write("twice", dict(doc, shards=doc["shards"] + doc["shards"][:1]))
    old = {k: v for k, v in doc.items() if k not in ("num_shards", "version")}
    old["shards"] = [{k: v for k, v in s.items() if k != "index"} for s in doc["shards"]]
    write("old", old)
    write("old_missing", dict(old, shards=old["shards"][1:]))
    write("bare", {"shards": old["shards"]})
    return out


def test_manifest_with_a_shard_entry_deleted_is_refused(partial_manifests, coco_ref):
    for name in ("missing", "old_missing", "bare"):
        with pytest.raises(ValueError, match="incomplete shard manifest.*allow_partial=True"):
            evaluate_manifest(partial_manifests[name], "segm")
    with pytest.raises(ValueError, match="listed more than once"):
        load_manifest(partial_manifests["twice"], allow_partial=True)
    # a manifest written before 'num_shards' is still read: its 'num_images' says it is whole
    _same(coco_ref["segm"], evaluate_manifest(partial_manifests["old"], "segm"))
    _same(coco_ref["segm"], evaluate_manifest(partial_manifests["whole"], "segm"))


def test_partial_manifest_when_asked_for(partial_manifests):
    with pytest.warns(UserWarning, match=r"3 of its 4 shards are listed \(missing: 1\); its shards hold 70 of "
                                         r"its 100 images; evaluating only those"):
        ev = evaluate_manifest(partial_manifests["missing"], "segm", allow_partial=True)
    assert len(ev.params.imgIds) == 70


def test_hidden_results_are_passed_over_with_a_warning(tmp_path, coco_dets):
    folder = tmp_path / "res"
    os.makedirs(folder / ".ipynb_checkpoints")
    _jsonl(folder / "r.jsonl", coco_dets)
    _jsonl(folder / ".ipynb_checkpoints" / "r-checkpoint.jsonl", coco_dets)  # a copy: not counted twice
    _jsonl(folder / ".old.jsonl", coco_dets[:3])
    with pytest.warns(UserWarning, match=r"hidden entries are not read as results: .*\.ipynb_checkpoints and 1 more"):
        assert len(list(iter_results(folder))) == len(coco_dets)


@pytest.mark.parametrize("stop", [KeyboardInterrupt, ValueError])
def test_interrupted_streaming_leaves_no_chunk_folder(tmp_path, coco_dets, monkeypatch, stop):
    """The Python side of the command line's SIGTERM / Ctrl-C cleanup (issue
    25): an evaluation stopped in its second chunk removes its chunk files."""
    import boundary_api.scale.streaming as streaming

    path = _jsonl(tmp_path / "r.jsonl", coco_dets)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    calls = []
    real = streaming._partial_of

    def stopping(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise stop("stopped")
        return real(*args, **kwargs)

    monkeypatch.setattr(streaming, "_partial_of", stopping)
    with pytest.raises(stop):
        evaluate_streaming(COCO_GT, path, "bbox", chunk_images=30, tmp_dir=str(scratch))
    assert len(calls) == 2
    assert os.listdir(scratch) == []


def test_streaming_inputs_of_a_file_and_of_a_manifest(tmp_path):
    from boundary_api.scale.streaming import streaming_inputs

    coco = streaming_inputs(COCO_GT)
    assert coco["dataset"] == json.load(open(COCO_GT)) and coco["lvis"] is False and coco["shards"] is None
    assert streaming_inputs(LVIS_GT)["lvis"] is True
    manifest = shard_dataset(LVIS_GT, tmp_path / "shards", 40)
    got = streaming_inputs(manifest=manifest)
    assert got["lvis"] is True and got["shards"] == load_manifest(manifest)
    assert got["dataset"] == json.load(open(got["shards"][0]["gt"]))
    with pytest.raises(ValueError, match="ground truth file not found"):
        streaming_inputs(str(tmp_path / "missing.json"))
    with pytest.raises(ValueError, match="either gt or manifest"):
        streaming_inputs(COCO_GT, manifest=manifest)
