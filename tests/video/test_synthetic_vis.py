"""boundary_api.video.synthetic_vis: deterministic, valid YouTube-VIS data that holds the
cases it is meant to hold, and the stored cases (tests/data/video/vis/) are what it makes."""
import hashlib
import json

import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vis_cases as vc
from boundary_api.video import synthetic_vis as sv

#: the scenarios with 720x1280 frames or 40 videos: slow tier
BIG = {"large_frames", "mixed"}


def _params(names):
    return [pytest.param(n, marks=[pytest.mark.slow] if n in BIG else []) for n in names]


def _canonical_sha(obj):
    if isinstance(obj, str):
        return hashlib.sha256(obj.encode()).hexdigest()
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _decode(seg, h, w):
    if seg is None or seg == []:
        return None
    if isinstance(seg, list):
        return mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(seg, h, w)))
    if isinstance(seg["counts"], list):
        return mask_utils.decode(mask_utils.frPyObjects(seg, h, w))
    return mask_utils.decode(seg)


def _fmt(seg):
    if seg is None:
        return "none"
    if isinstance(seg, list):
        return "polygon"
    return "uncompressed" if isinstance(seg["counts"], list) else "rle"


def _check_valid(gt, results, float_areas=False):
    """Every field of the format, every frame of its video's size, areas and boxes of the masks."""
    vids = {v["id"]: v for v in gt["videos"]}
    for v in gt["videos"]:
        assert len(v["file_names"]) == v["length"]
    ids = [a["id"] for a in gt["annotations"]]
    assert ids == list(range(1, len(ids) + 1))
    for a in gt["annotations"]:
        v = vids[a["video_id"]]
        assert (a["height"], a["width"], a["length"]) == (v["height"], v["width"], 1)
        assert len(a["segmentations"]) == len(a["areas"]) == len(a["bboxes"]) == v["length"]
        for seg, area, box in zip(a["segmentations"], a["areas"], a["bboxes"]):
            m = _decode(seg, v["height"], v["width"])
            if m is None:
                assert area is None and box is None
                continue
            assert m.shape == (v["height"], v["width"])
            if isinstance(seg, list) and float_areas:
                assert isinstance(area, float)
            else:
                assert area == int(m.sum())
            assert box == [float(x) for x in mask_utils.toBbox(mask_utils.encode(np.asfortranarray(m)))]
    for r in results:
        v = vids[r["video_id"]]
        assert set(r) >= {"video_id", "category_id", "score", "segmentations"}
        assert len(r["segmentations"]) == v["length"]
        for seg in r["segmentations"]:
            assert seg is None or (isinstance(seg["counts"], str) and seg["size"] == [v["height"], v["width"]])
    json.dumps(gt), json.dumps(results)  # JSON-ready


def test_deterministic():
    a = sv.generate(seed=5)
    assert json.dumps(a) == json.dumps(sv.generate(seed=5))
    assert json.dumps(a) != json.dumps(sv.generate(seed=6))


@pytest.mark.parametrize("name", _params(sv.SCENARIOS))
def test_scenarios_are_valid(name):
    gt, results = sv.scenario(name)
    _check_valid(gt, results, float_areas=sv.SCENARIOS[name].float_polygon_areas)


def test_unknown_scenario():
    with pytest.raises(KeyError, match="unknown scenario 'nope'"):
        sv.scenario("nope")


def _presence(a):
    p = [s is not None for s in a["segmentations"]]
    first, last = p.index(True) if any(p) else None, len(p) - 1 - p[::-1].index(True) if any(p) else None
    return p, first, last


def test_lifecycle_holds_its_cases():
    gt, results = sv.scenario("lifecycle")
    late = early = reappear = 0
    for a in gt["annotations"]:
        p, first, last = _presence(a)
        if first is None:
            continue
        late += first > 0
        early += last < len(p) - 1
        reappear += not all(p[first:last + 1])
    assert late and early and reappear
    formats = {_fmt(s) for a in gt["annotations"] for s in a["segmentations"]}
    assert formats == {"none", "polygon", "rle", "uncompressed"}
    assert any(0 in a["areas"] for a in gt["annotations"])  # an all-zero frame given as RLE
    assert any(s is None for r in results for s in r["segmentations"])
    assert any(s is not None and mask_utils.area(s) == 0 for r in results for s in r["segmentations"])
    gt_pairs = {(a["video_id"], a["category_id"]) for a in gt["annotations"]}
    assert any((r["video_id"], r["category_id"]) not in gt_pairs for r in results)  # wrong categories
    assert any(not any(a["video_id"] == v["id"] for a in gt["annotations"]) for v in gt["videos"])


def test_touching_tiny_holds_its_cases():
    gt, _ = sv.scenario("touching_tiny")
    sizes = {(v["height"], v["width"]) for v in gt["videos"]}
    assert {(1, 37), (29, 1), (7, 9)} <= sizes
    vids = {v["id"]: v for v in gt["videos"]}
    tiny = touching = 0
    by_video = {}
    for a in gt["annotations"]:
        v = vids[a["video_id"]]
        masks = [_decode(s, v["height"], v["width"]) for s in a["segmentations"]]
        tiny += any(m is not None and 0 < m.sum() <= 6 for m in masks)
        by_video.setdefault(a["video_id"], []).append(masks)
    for tracks in by_video.values():
        for i in range(len(tracks)):
            for j in range(i + 1, len(tracks)):
                for a, b in zip(tracks[i], tracks[j]):
                    if a is None or b is None or not a.any() or not b.any() or (a & b).any():
                        continue
                    grown = np.zeros((a.shape[0] + 2, a.shape[1] + 2), np.uint8)
                    grown[1:-1, 1:-1] = a
                    near = (grown[:-2, 1:-1] | grown[2:, 1:-1] | grown[1:-1, :-2] | grown[1:-1, 2:])
                    touching += bool((near & b).any())
    assert tiny and touching


def test_crowds_and_ties_and_many_results():
    gt, _ = sv.scenario("crowds")
    assert any(a["iscrowd"] for a in gt["annotations"]) and any(not a["iscrowd"] for a in gt["annotations"])
    gt, results = sv.scenario("ties_many")
    per_video = {}
    for r in results:
        per_video[r["video_id"]] = per_video.get(r["video_id"], 0) + 1
    assert max(per_video.values()) > 100
    assert len({r["score"] for r in results}) <= 4
    with_gt = {a["category_id"] for a in gt["annotations"]}
    assert any(r["category_id"] not in with_gt for r in results)
    assert any(c["id"] not in with_gt for c in gt["categories"])


@pytest.mark.slow
def test_large_frames():
    gt, _ = sv.scenario("large_frames")
    assert (720, 1280) in {(v["height"], v["width"]) for v in gt["videos"]}
    # an area range past "small" (avg_area > 128**2)
    assert any(max([x for x in a["areas"] if x] or [0]) > 128 ** 2 for a in gt["annotations"])


@pytest.mark.parametrize("case", _params(vc.CASES))
def test_stored_inputs_are_what_the_generator_makes(case):
    gen = vc.load_golden(case)["generator"]
    if gen["function"] == "scenario":
        gt, results = sv.scenario(gen["name"], seed=gen["seed"])
    else:
        c = sv.suspect_inputs(seed=gen["seed"])[gen["name"]]
        gt, results = c["gt"], c["results"]
    assert _canonical_sha(gt) == gen["gt_sha256"]
    assert _canonical_sha(results) == gen["results_sha256"]
    stored_gt, stored_results = vc.load_inputs(case)
    assert _canonical_sha(stored_gt) == gen["gt_sha256"]
    assert _canonical_sha(stored_results) == gen["results_sha256"]


def test_suspect_inputs_hold_their_defects():
    cases = sv.suspect_inputs()
    assert set(cases) == {c[len("suspect_"):] for c in vc.SUSPECT_CASES}

    def length(gt, vid):
        return next(v["length"] for v in gt["videos"] if v["id"] == vid)

    c = cases["gt_length_short"]
    a = c["gt"]["annotations"][0]
    assert len(a["segmentations"]) == length(c["gt"], a["video_id"]) - 1
    c = cases["gt_length_long"]
    a = c["gt"]["annotations"][0]
    assert len(a["segmentations"]) == length(c["gt"], a["video_id"]) + 1
    for name, delta in (("result_length_short", -1), ("result_length_long", 1)):
        r = cases[name]["results"][0]
        assert len(r["segmentations"]) == length(cases[name]["gt"], r["video_id"]) + delta
    r = cases["result_rle_other_size"]["results"][0]
    assert r["segmentations"][0]["size"] == [16, 12]
    assert cases["gt_rle_other_size"]["gt"]["annotations"][0]["segmentations"][-1]["size"] == [14, 19]
    c = cases["unknown_video"]
    assert c["results"][-1]["video_id"] not in {v["id"] for v in c["gt"]["videos"]}
    c = cases["unknown_category"]
    assert c["results"][-1]["category_id"] not in {k["id"] for k in c["gt"]["categories"]}
    assert cases["empty_results"]["results"] == []
    assert all("segmentations" not in r for r in cases["result_without_segmentations"]["results"])
    assert all("height" not in r and r["segmentations"][-1] is None
               for r in cases["result_none_frames_no_size"]["results"])
    assert all("height" not in a and a["segmentations"][0] is None
               for a in cases["gt_none_frames_no_size"]["gt"]["annotations"])
    assert cases["empty_list_frames"]["gt"]["annotations"][0]["segmentations"][0] == []
    assert all("segmentations_refined" in a for a in cases["segmentations_refined"]["gt"]["annotations"])
    assert isinstance(cases["invalid_json"]["results"], str) and isinstance(cases["invalid_json_gt"]["gt"], str)
    for name in ("invalid_json", "invalid_json_gt"):
        with pytest.raises(json.JSONDecodeError):
            json.loads(cases[name]["results"] if name == "invalid_json" else cases[name]["gt"])


def test_ytvis_val_like_small():
    gt, results = sv.ytvis_val_like(seed=1, num_videos=3, frame_sizes=(((36, 48), 0.5), ((20, 30), 0.5)))
    _check_valid(gt, results)
    assert len(gt["videos"]) == 3 and len(gt["annotations"]) == 9 and len(gt["categories"]) == 40
    assert all(24 <= v["length"] <= 36 for v in gt["videos"])
    per_video = {}
    for r in results:
        per_video[r["video_id"]] = per_video.get(r["video_id"], 0) + 1
        assert all(s is not None for s in r["segmentations"])  # every frame, as models write them
    assert all(10 <= n <= 20 for n in per_video.values())
    assert all(isinstance(s["counts"], list) for a in gt["annotations"] for s in a["segmentations"] if s)
    assert any(s is None for a in gt["annotations"] for s in a["segmentations"])


def test_ytvis_val_like_realistic_sizes():
    a = sv.ytvis_val_like(seed=2, num_videos=2)
    assert json.dumps(a) == json.dumps(sv.ytvis_val_like(seed=2, num_videos=2))
    gt, results = a
    assert all((v["height"], v["width"]) in {(720, 1280), (480, 640), (360, 640)} for v in gt["videos"])
    sizes = {v["id"]: [v["height"], v["width"]] for v in gt["videos"]}
    assert all(s["size"] == sizes[r["video_id"]] for r in results for s in r["segmentations"])


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 3), st.data())
def test_runs_are_the_dense_masks(h, w, n, data):
    """The preset's masks from per-column runs are the masks the runs describe, encoded
    as pycocotools encodes them."""
    x0 = data.draw(st.integers(0, w - 1))
    cols = data.draw(st.integers(0, w - x0))
    lo = np.array(data.draw(st.lists(st.integers(0, h - 1), min_size=n * cols, max_size=n * cols)),
                  np.int64).reshape(n, cols)
    hi = np.array(data.draw(st.lists(st.integers(-1, h - 1), min_size=n * cols, max_size=n * cols)),
                  np.int64).reshape(n, cols)
    counts = sv._run_counts(x0, lo, hi, h, w)
    rles = sv._compress(counts, h, w)
    for f in range(n):
        dense = np.zeros((h, w), np.uint8)
        for j in range(cols):
            if hi[f, j] >= lo[f, j]:
                dense[lo[f, j]:hi[f, j] + 1, x0 + j] = 1
        enc = mask_utils.encode(np.asfortranarray(dense))
        assert rles[f] == {"size": [h, w], "counts": enc["counts"].decode()}
        assert mask_utils.decode(mask_utils.frPyObjects({"counts": counts[f].tolist(), "size": [h, w]},
                                                        h, w)).tolist() == dense.tolist()


def test_public_api_is_documented():
    for name in sv.__all__:
        obj = getattr(sv, name)
        if callable(obj):
            doc = obj.__doc__ or ""
            assert "Parameters" in doc and ("Returns" in doc or isinstance(obj, type)), name
