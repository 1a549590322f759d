"""YouTube-VIS files read natively into columns (video/_scan.pyx,
video/_ytvis_columns.py) against the dict path they stand in for: on every
stored case and on hypothesis-generated documents, YTVOS / loadRes / YTVOSeval
give the same printed lines, warnings, errors, numbers, ``ious``,
``evalImgs``, ``_gts`` / ``_dts`` and, when read, the same dicts (types and
key order included) as with the scanner switched off; and the scanner itself
stays inside its buffer, refuses what is not JSON, and cuts a file between
threads without changing its columns."""
import json
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "fuzz"))

import vis_cases as vc  # noqa: E402
import vis_paths  # noqa: E402
from fuzz_compare import diff  # noqa: E402
from conftest import guarded_views  # noqa: E402

from boundary_api.video import _scan  # noqa: E402

import vis_docs  # noqa: E402


def _both(gt_path, results, steps, **kw):
    cols = vis_paths.run(gt_path, results, steps, **kw)
    dicts = vis_paths.run(gt_path, results, steps, columns=False, **kw)
    assert not vis_paths.used_columns(dicts)
    d = vis_paths.compare(cols, dicts, diff)
    assert not d, d
    return cols


def _steps(spec):
    return [(spec["iouType"], spec.get("params", {}), {})]


def _stored_runs():
    out = []
    for case in vc.CASES:
        golden = vc.load_golden(case)
        seen = set()
        for run in golden["runs"]:
            spec = vc.run_record(golden, run)["spec"]
            key = json.dumps({k: v for k, v in spec.items() if k != "n_derived"}, sort_keys=True)
            if key in seen:
                continue
            seen.add(key)
            out.append(pytest.param(case, spec, id=f"{case}-{run}"))
    return out


@pytest.mark.parametrize("case,spec", _stored_runs())
def test_stored_case_columns_equal_dicts(case, spec, tmp_path):
    gt_path, res_path = vc.write_inputs(case, tmp_path)
    results = res_path
    if spec.get("results_as_list"):
        with open(res_path) as f:
            results = json.load(f)
    out = _both(gt_path, results, _steps(spec), get_boundary=spec.get("get_boundary", False),
                dilation_ratio=spec.get("dilation_ratio", 0.02))
    if not case.startswith("suspect_") and spec["iouType"] != "bbox":
        # the valid scenarios are read as columns (so that this test compares something)
        assert dict(out["paths"])["gt"], out["paths"]
        assert dict(out["paths"])["results"] or spec.get("results_as_list"), out["paths"]
        assert out["paths"][-1][1] or spec.get("results_as_list"), out["paths"]


@pytest.mark.parametrize("case", vc.SCENARIO_CASES)
@pytest.mark.parametrize("read_between", [False, True])
def test_evaluations_in_turn_leave_the_same_dicts(case, read_between, tmp_path):
    """Two evaluations of the same objects (the dicts made between them or
    only at the end) with parameters of every kind: what each would have
    written into the dicts is there, in order."""
    gt_path, res_path = vc.write_inputs(case, tmp_path)
    gt, _ = vc.load_inputs(case)
    vids = sorted(v["id"] for v in gt["videos"])
    cats = sorted(c["id"] for c in gt["categories"])
    steps = [("segm", {"vidIds": vids[::2] or vids, "maxDets": [1, 3, 7]}, {}),
             ("boundary", {"catIds": cats[:2] + cats[:1], "useCats": 0, "areaRng": [[0, 1e10], [0, 30]],
                           "areaRngLbl": ["all", "small"]}, {"dilation_ratio": 0.05}),
             ("segm", {"catIds": cats[1:], "iouThrs": np.array([0.1, 0.5, 0.55])}, {"num_threads": 1}),
             ("segm", {"vidIds": [], "catIds": []}, {}),
             ("boundary", {"vidIds": [vids[0], 10 ** 12], "catIds": [cats[0], 10 ** 12]}, {"num_threads": 3})]
    _both(gt_path, res_path, steps, get_boundary=True, read_between=read_between)


def test_suspect_input_refused_alike_with_strict(tmp_path):
    for case in vc.SUSPECT_CASES:
        gt_path, res_path = vc.write_inputs(case, tmp_path)
        _both(gt_path, res_path, [("segm", {}, {})], strict=True)


# ------------------------------------------------------------ generated documents
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_generated_documents_columns_equal_dicts(tmp_path_factory, data):
    folder = tmp_path_factory.mktemp("doc")
    gt_bytes, res_bytes, steps = vis_docs.draw_case(data)
    gt_path, res_path = folder / "gt.json", folder / "results.json"
    gt_path.write_bytes(gt_bytes)
    res_path.write_bytes(res_bytes)
    _both(str(gt_path), str(res_path), steps, get_boundary=True)


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_generated_documents_columns_equal_dicts_many(tmp_path_factory, data):
    test_generated_documents_columns_equal_dicts.hypothesis.inner_test(tmp_path_factory, data)


# ------------------------------------------------------------ the scanner itself
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_scanner_cuts_between_threads_without_changing_the_columns(data):
    gt_bytes, res_bytes, _ = vis_docs.draw_case(data, valid=True)
    threads = data.draw(st.integers(2, 7))
    for kind, raw, scan in (("gt", gt_bytes, _scan.scan_ground_truth), ("results", res_bytes, _scan.scan_results)):
        one = scan(raw, 1)
        many = scan(raw, threads, _min_parallel_bytes=0)
        assert (one is None) == (many is None)
        if one is None:
            continue
        a = vis_docs.values_of(one, kind, raw)
        b = vis_docs.values_of(many, kind, raw)
        assert not diff(a, b), diff(a, b)


def test_scanner_reads_nothing_outside_the_buffer_and_refuses_every_truncation():
    rng = np.random.default_rng(39)
    gt, res = vis_docs.small_documents(rng)
    for raw, scan in ((gt, _scan.scan_ground_truth), (res, _scan.scan_results)):
        assert scan(raw, 1) is not None
        for n in range(len(raw)):
            for view in guarded_views(raw[:n]):
                got = scan(view, 1)
                if got is not None:
                    json.loads(raw[:n])  # (only a prefix that is the whole document without trailing blanks)
            for view in guarded_views(raw[:n]):
                scan(view, 3, _min_parallel_bytes=0)


def test_scanner_values_are_the_json_readers():
    """Every number spelling, escape and blank the scanner takes gives the
    value json.loads gives."""
    rng = np.random.default_rng(3939)
    taken = 0
    for _ in range(200):
        gt_doc, res_doc = vis_docs.documents(rng, suspect=0.0)
        for doc, scan, kind in ((gt_doc, _scan.scan_ground_truth, "gt"), (res_doc, _scan.scan_results, "results")):
            raw = vis_docs.encode(rng, doc)
            got = scan(raw, 1)
            if got is None:
                continue
            taken += 1
            want = json.loads(raw)
            assert not diff(vis_docs.values_of(got, kind, raw), vis_docs.expected_values(want, kind))
    assert taken > 100


# ------------------------------------------------------------ the tube kernel on columns
def _blob(rng, h, w):
    """A mask of ellipses, maybe with a hole or stripes: columns of one run and of several."""
    yy, xx = np.mgrid[:h, :w]
    m = np.zeros((h, w), np.uint8)
    for _ in range(int(rng.integers(0, 3))):
        cy, cx = rng.uniform(-5, h + 5), rng.uniform(-5, w + 5)
        ry, rx = rng.uniform(1, h), rng.uniform(1, w)
        m |= (((yy - cy) / ry) ** 2 + ((xx - cx) / rx) ** 2 <= 1).astype(np.uint8)
    r = rng.random()
    if r < 0.2:
        m[int(rng.integers(h)):, :][: max(1, h // 5)] = 0            # a horizontal cut: two runs a column
    elif r < 0.3:
        m[:, int(rng.integers(w))] = 1                               # a full column
    elif r < 0.4:
        m[rng.random((h, w)) < 0.05] ^= 1
    return m


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2 ** 63 - 1), iou_type=st.sampled_from(["segm", "boundary"]))
def test_tube_ious_on_columns_equal_the_oracle(seed, iou_type, tmp_path_factory):
    """Ground truth as uncompressed counts, strings or polygons, results as
    strings, read as columns: the tube kernel's IoUs (column tables where a
    mask's columns hold one run each, the interval merge elsewhere) are the
    oracle's."""
    import oracle_vis as ovis

    rng = np.random.default_rng(seed)
    h, w, n = int(rng.integers(1, 90)), int(rng.integers(1, 60)), int(rng.integers(1, 5))

    def frame(gt):
        if rng.random() < 0.15:
            return None
        m = _blob(rng, h, w)
        r = rng.random()
        if gt and r < 0.5:
            return vis_docs.F.rle_list(m)
        if gt and r < 0.6:
            return [vis_docs.F.polygon(rng, h, w)]
        return {k: str(v) for k, v in vis_docs._rle_string(m).items()} | {"size": [h, w]}

    gt = {"videos": [{"id": 1, "height": h, "width": w, "length": n}], "categories": [{"id": 1}, {"id": 2}],
          "annotations": [{"id": i + 1, "video_id": 1, "category_id": int(rng.integers(1, 3)),
                           "iscrowd": int(rng.random() < 0.2), "height": h, "width": w,
                           "segmentations": (segs := [frame(True) for _ in range(n)]),
                           "areas": [None if not s else 1 for s in segs]} for i in range(int(rng.integers(1, 4)))]}
    res = [{"video_id": 1, "category_id": int(rng.integers(1, 3)), "score": float(rng.random()),
            "height": h, "width": w, "segmentations": [frame(False) for _ in range(n)]}
           for _ in range(int(rng.integers(1, 6)))]
    folder = tmp_path_factory.mktemp("tubes")
    (folder / "gt.json").write_text(json.dumps(gt))
    (folder / "res.json").write_text(json.dumps(res))
    import contextlib
    import io

    from boundary_api.video import YTVOS, YTVOSeval
    from boundary_api.video.ytvos import tracks_of

    with contextlib.redirect_stdout(io.StringIO()):
        ytgt = YTVOS(str(folder / "gt.json"))
        ytdt = ytgt.loadRes(str(folder / "res.json"))
        assert tracks_of(ytgt) is not None and tracks_of(ytdt) is not None
        ev = YTVOSeval(ytgt, ytdt, iou_type)
        ev.evaluate()
        assert ev._state.gt_columns is not None
    want = ovis.iou_matrices(gt, res, iou_type)
    for key, value in want.items():
        got = ev.ious[key]
        if isinstance(value, list):
            assert got == []
        else:
            assert np.asarray(got).shape == value.shape and np.all(np.abs(np.asarray(got) - value) <= 1e-12), key


def test_vars_pickle_and_copy_show_what_the_dict_path_holds(tmp_path):
    """``vars()``, pickling and copying a YTVOS read as columns (before and after
    an evaluation) give what the dict path holds: its dicts made first."""
    import contextlib
    import copy
    import io
    import pickle

    from boundary_api.video import YTVOS, YTVOSeval
    from boundary_api.video.ytvos import tracks_of

    gt_path, res_path = vc.write_inputs("lifecycle", tmp_path)

    def load(columns):
        with contextlib.ExitStack() as stack:
            stack.enter_context(contextlib.redirect_stdout(io.StringIO()))
            if not columns:
                stack.enter_context(vis_paths.dict_path())
            gt = YTVOS(gt_path)
            dt = gt.loadRes(res_path)
            return gt, dt

    def plain(obj):
        return {k: v for k, v in vars(obj).items()}

    for evaluate in (False, True):
        (gt, dt), (gt2, dt2) = load(True), load(False)
        assert tracks_of(gt) is not None and tracks_of(dt) is not None
        if evaluate:
            for a, b in ((gt, dt), (gt2, dt2)):
                with contextlib.redirect_stdout(io.StringIO()):
                    ev = YTVOSeval(a, b, "segm")
                    ev.evaluate()
        assert not diff(pickle.loads(pickle.dumps(dt)).dataset, dt2.dataset)
        assert not diff(copy.deepcopy(gt).dataset, gt2.dataset)
        assert tracks_of(gt) is None and tracks_of(dt) is None   # (made by the copies)
        assert not diff(plain(gt), plain(gt2)) and not diff(plain(dt), plain(dt2))
    gt, _ = load(True)
    assert sorted(vars(gt)) == sorted(vars(load(False)[0]))


def test_large_uncompressed_counts_are_kept_exactly(tmp_path):
    """Counts of 65,534 to 2**32 - 1 (the scanner's escaped words) read back as
    written, and evaluated as the dict path evaluates them."""
    h, w = 300, 300
    cases = [[65534, 1, 90000 - 65535], [65535, 24465], [65536, 24464], [0, 70000, 20000], [90000],
             [0, 90000], [10, 65535, 0, 24455]]
    gt = {"videos": [{"id": 1, "height": h, "width": w, "length": len(cases)}],
          "categories": [{"id": 1}],
          "annotations": [{"id": 1, "video_id": 1, "category_id": 1, "iscrowd": 0, "areas": [1] * len(cases),
                           "segmentations": [{"size": [h, w], "counts": c} for c in cases]}]}
    raw = json.dumps(gt).encode()
    got = vis_docs.values_of(_scan.scan_ground_truth(raw, 1), "gt", raw)
    assert [f[3] for f in got[0]["frames"]] == cases
    counts = [4294967295, 0, 2147483646]   # (3 x (2**31 - 1) pixels, the largest side the scanner takes)
    big = {"videos": [{"id": 1, "height": 3, "width": 2147483647, "length": 1}], "categories": [{"id": 1}],
           "annotations": [{"id": 1, "video_id": 1, "category_id": 1, "iscrowd": 0, "areas": [1],
                            "segmentations": [{"size": [3, 2147483647], "counts": counts}]}]}
    raw = json.dumps(big).encode()
    assert vis_docs.values_of(_scan.scan_ground_truth(raw, 1), "gt", raw)[0]["frames"][0][3] == counts
    big["annotations"][0]["segmentations"][0]["counts"] = [4294967296]
    assert _scan.scan_ground_truth(json.dumps(big).encode(), 1) is None   # (beyond uint32: the dict path)
    gt_path = tmp_path / "gt.json"
    gt_path.write_bytes(json.dumps(gt).encode())
    from pycocotools import mask as mask_utils

    rng = np.random.default_rng(5)
    res = [{"video_id": 1, "category_id": 1, "score": 0.5,
            "segmentations": [{"size": [h, w], "counts": mask_utils.encode(np.asfortranarray(
                _blob(rng, h, w)))["counts"].decode()} for _ in cases]}]
    res_path = tmp_path / "res.json"
    res_path.write_text(json.dumps(res))
    out = _both(str(gt_path), str(res_path), [("segm", {}, {}), ("boundary", {}, {})])
    assert dict(out["paths"])["gt"] and dict(out["paths"])["evaluation 0"]
