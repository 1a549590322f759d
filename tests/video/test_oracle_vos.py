"""The video object segmentation oracle (oracle_vos.py) against the official
tools' golden values (tests/data/video/*.json, made by make_vos_golden.py) on
every generated case, and against brute-force definitions with hypothesis."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from hypothesis.extra import numpy as hnp

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import oracle_vos as ov  # noqa: E402
import vos_cases  # noqa: E402

DATA = os.path.join(os.path.dirname(HERE), "data", "video")


def _load(name):
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


DAVIS = _load("davis_golden.json")
SAV = _load("sav_golden.json")


_num = vos_cases.num
close = vos_cases.close
TOL = vos_cases.TOL
_params = vos_cases.job_params


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Each case's files, written once per module."""
    return vos_cases.builder(tmp_path_factory)


# what the oracle refuses where the official code stops, and how the official code stops
DAVIS_ERRORS = {
    "nojpg_refused": ("images_missing", "FileNotFoundError"),
    "semi_above": ("index_above_object_count", "SystemExit"),
    "unsup_21": ("too_many_proposals", "SystemExit"),
    "semi_hole": ("result_missing", "SystemExit"),
    "semi_size": ("size_mismatch", "ValueError"),
    "unsup_size": ("size_mismatch", "ValueError"),
    "semi_rgb": ("not_indexed", "ValueError"),
    "annotation_missing": ("annotation_missing", "AttributeError"),
    "semi_two_frames": ("no_frames", "IndexError"),
    "blank_line": ("images_missing", "FileNotFoundError"),
    "bad_subset": ("bad_subset", "ValueError"),
    "bad_task": ("bad_task", "ValueError"),
    "bad_metric": ("temporal_metric", "ValueError"),
    "no_metric": ("no_metric", "ValueError"),
    "missing_root": ("root_missing", "FileNotFoundError"),
}

SAV_ERRORS = {
    "hole": ("prediction_missing", "AssertionError"),
    "size": ("size_mismatch", "AssertionError"),
    "two": ("several_objects", "AssertionError"),
    "edge": ("object_never_in_ground_truth", "AssertionError"),
    "short": ("object_never_in_ground_truth", "AssertionError"),
    "extra_strict": ("videos_differ", "SystemExit"),
    "missing_strict": ("videos_differ", "SystemExit"),
    "none": ("no_videos", "TypeError"),
}


@pytest.mark.parametrize("name", [n for n in vos_cases.CASES if not vos_cases.CASES[n].slow])
def test_fingerprint(name, built):
    """The generator still writes the data the golden values were made from."""
    doc = DAVIS if vos_cases.CASES[name].kind == "davis" else SAV
    assert built(name)[2] == doc["cases"][name]["fingerprint"]


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in vos_cases.CASES if vos_cases.CASES[n].slow])
def test_fingerprint_slow(name, built):
    doc = DAVIS if vos_cases.CASES[name].kind == "davis" else SAV
    assert built(name)[2] == doc["cases"][name]["fingerprint"]


def test_every_case_has_golden_values():
    assert set(DAVIS["cases"]) | set(SAV["cases"]) == set(vos_cases.CASES)
    assert DAVIS["official"]["davis2017-evaluation"]["commit"] == "ac7c43fca936f9722837b7fbd337d284ba37004b"
    assert SAV["official"]["sav"]["commit"] == "2b90b9f5ceec907a1c18123530e92e794ad901a4"


# ----------------------------------------------------------------------------
# DAVIS
# ----------------------------------------------------------------------------

def _check_davis_result(mine, gold):
    assert list(mine) == list(gold)
    for m in gold:
        assert list(mine[m]) == ["M", "R", "D", "M_per_object"]
        for k in ("M", "R", "D"):
            assert close(mine[m][k], gold[m][k]), (m, k)
        assert list(mine[m]["M_per_object"]) == list(gold[m]["M_per_object"])
        assert close(list(mine[m]["M_per_object"].values()), list(gold[m]["M_per_object"].values()))


@pytest.mark.parametrize("name,k", _params(DAVIS))
def test_davis_golden(name, k, built):
    root, jobs, _ = built(name)
    job = jobs[k]
    gold = DAVIS["cases"][name]["jobs"][k]["result"]
    kw = dict(sequences=job.get("sequences", "all"), codalab=job.get("codalab", False))
    metric = job.get("metric", ["J", "F"])
    if "error" in gold:
        kind, official = DAVIS_ERRORS[job["label"]]
        assert gold["error"]["type"] == official
        with pytest.raises(ov.Refusal) as e:
            ov.davis_evaluate(job["davis_root"], job["task"], job["gt_set"], job["res_path"], metric=metric, **kw)
        assert e.value.kind == kind
        return
    assert job["label"] not in DAVIS_ERRORS
    compare_davis(job, gold)


def compare_davis(job, gold):
    """The oracle on ``job``'s files against the official ``gold`` result."""
    kw = dict(sequences=job.get("sequences", "all"), codalab=job.get("codalab", False))
    metric = job.get("metric", ["J", "F"])
    # among equally good matchings, the one scipy's solver chose
    prefer = {g["sequence"]: (g["matching"]["rows"], g["matching"]["cols"])
              for g in gold["per_sequence"] if "matching" in g}
    mine = ov.davis_evaluate(job["davis_root"], job["task"], job["gt_set"], job["res_path"], metric=metric,
                             prefer=prefer, **kw)
    _check_davis_result(mine["result"], gold["evaluate"])
    assert [s["sequence"] for s in mine["per_sequence"]] == [s["sequence"] for s in gold["per_sequence"]]
    for s, g in zip(mine["per_sequence"], gold["per_sequence"]):
        assert s["frames"] == (g["frames"][1:-1] if job["task"] == "semi-supervised" else g["frames"])
        for m in ("J", "F"):
            if m in metric:
                assert close(s[m], g[m]), (s["sequence"], m)
            if m + "_all" in g:
                assert close(s[m + "_all"], g[m + "_all"]), (s["sequence"], m)
        if "matching" in g:
            chosen = (g["matching"]["rows"], g["matching"]["cols"])
            assert chosen in [(list(r), list(c)) for r, c in s["matchings"]]
            assert close(g["matching"]["cost"], (-np.asarray(s["score"])).tolist())
    if "method" in gold:
        _check_method_csv(mine["result"], gold["method"], job["gt_set"])


def _check_method_csv(result, method, gt_set):
    """evaluation_method.py's two CSV files ('%.3f') from the oracle's numbers."""
    g = method["csv"][f"global_results-{gt_set}.csv"].splitlines()
    assert g[0] == "J&F-Mean,J-Mean,J-Recall,J-Decay,F-Mean,F-Recall,F-Decay"
    assert g[1] == ",".join(f"{v:.3f}" for v in ov.davis_global(result))
    s = method["csv"][f"per-sequence_results-{gt_set}.csv"].splitlines()
    assert s[0] == "Sequence,J-Mean,F-Mean"
    assert s[1:] == [f"{n},{result['J']['M_per_object'][n]:.3f},{result['F']['M_per_object'][n]:.3f}"
                     for n in result["J"]["M_per_object"]]


def _davis_jobs_with_values():
    for name, c in DAVIS["cases"].items():
        for j in c["jobs"]:
            if "evaluate" in j["result"]:
                yield pytest.param(j, id=f"{name}-{j['job']['label']}")


@pytest.mark.parametrize("job", list(_davis_jobs_with_values()))
def test_davis_statistics_from_stored_frames(job):
    """Mean, Recall and Decay of every object from the per-frame values the official code
    computed (no files: the quick tier's check of the long sequences' Decay)."""
    r = job["result"]
    for m, stats in r["evaluate"].items():
        rows = [row for s in r["per_sequence"] for row in s[m]]
        assert len(rows) == len(stats["M"])
        for k, row in enumerate(rows):
            row = [_num(x) for x in row]
            assert close(list(ov.statistics(row)), [stats["M"][k], stats["R"][k], stats["D"][k]]), (m, k)


def test_davis_golden_covers_the_quirks():
    """The stored cases hold what the lead's drop-in must reproduce."""
    dec = DAVIS["cases"]["decay"]["jobs"][0]["result"]
    d = dec["evaluate"]["J"]["D"]
    assert any(x == "NaN" for x in d)  # 257 and 300 evaluated frames: the last bin is empty
    names = list(dec["evaluate"]["J"]["M_per_object"])
    assert names[0] == "len5_1"
    # the unsupervised rows follow the matched proposals, not the objects
    seqs = {s["sequence"]: s for s in DAVIS["cases"]["matching"]["jobs"][0]["result"]["per_sequence"]}
    assert seqs["perm"]["matching"]["cols"] != sorted(seqs["perm"]["matching"]["cols"])
    assert seqs["many"]["res_objects"] == 7 and len(seqs["many"]["J_all"]) == 7
    # a tie whose rows differ: the solver's choice is part of the official result
    assert seqs["tie"]["J"][0] != seqs["tie"]["J"][1]
    assert (seqs["tie"]["matching"]["rows"], seqs["tie"]["matching"]["cols"]) == ([0, 1], [1, 0])


# ----------------------------------------------------------------------------
# SA-V
# ----------------------------------------------------------------------------

@pytest.mark.parametrize("name,k", _params(SAV))
def test_sav_golden(name, k, built):
    root, jobs, _ = built(name)
    job = jobs[k]
    gold = SAV["cases"][name]["jobs"][k]["result"]
    label = job["label"].rsplit("skip", 1)[0].rstrip("_")
    strict = job.get("strict", True)
    if "error" in gold:
        kind, official = SAV_ERRORS[label]
        assert gold["error"]["type"] == official
        with pytest.raises(ov.Refusal) as e:
            ov.sav_evaluate(job["gt_root"], job["pred_root"], job["skip_first_and_last"], strict)
        assert e.value.kind == kind
        return
    compare_sav(job, gold)


def compare_sav(job, gold):
    """The oracle on ``job``'s folders against the official ``gold`` result."""
    mine = ov.sav_evaluate(job["gt_root"], job["pred_root"], job["skip_first_and_last"], job.get("strict", True))
    b = gold["benchmark"]
    for key in ("global_jf", "global_j", "global_f"):
        assert close(mine[key], b[key][0]), key
    assert len(b["videos"]) == 1
    assert [v[0] for v in mine["videos"]] == [v[0] for v in b["videos"][0]]
    for (n, mj, mf), (_, gj, gf) in zip(mine["videos"], b["videos"][0]):
        assert [k for k, _ in mj] == [k for k, _ in gj], n  # keys: types and order
        assert [type(k) for k, _ in mj] == [type(k) for k, _ in gj], n
        assert close([v for _, v in mj], [v for _, v in gj]) and close([v for _, v in mf], [v for _, v in gf]), n
    assert ov.sav_csv(mine) == gold["results_csv"]
    for pv, gv in zip(mine["per_frame"], gold["per_frame"]):
        assert pv["video"] == gv["video"]
        assert len(pv["objects"]) == len(gv["objects"])
        for po, go in zip(pv["objects"], gv["objects"]):
            assert po["obj_id"] == go["obj_id"]
            for m in ("iou", "f"):
                assert [k for k, _ in po[m]] == [k for k, _ in go[m]]
                assert close([v for _, v in po[m]], [v for _, v in go[m]])


def test_sav_golden_covers_the_quirks():
    names = SAV["cases"]["sav_names"]["jobs"][0]["result"]["results_csv"]
    assert "vid         ,700," in names and "vid         ,a00," in names  # '{:03}' on a string
    lay = SAV["cases"]["sav_davislayout"]["jobs"][0]["result"]["benchmark"]["videos"][0]
    assert [k for k, _ in lay[0][1]] == [3, 200, 11]  # the set's order, not sorted
    per = SAV["cases"]["sav_basic"]["jobs"][0]["result"]["per_frame"][0]["objects"][0]
    assert per["iou"][0][0] is True  # per-object layout: the evaluator's key is True


# ----------------------------------------------------------------------------
# The oracle against brute-force definitions
# ----------------------------------------------------------------------------

def _bmap_brute(m):
    h, w = m.shape
    b = np.zeros((h, w), bool)
    for y in range(h):
        for x in range(w):
            for dy, dx in ((0, 1), (1, 0), (1, 1)):
                if y + dy < h and x + dx < w and m[y, x] != m[y + dy, x + dx]:
                    b[y, x] = True
    return b


def _near(a, b, r):
    """For each set pixel of ``a``: is a set pixel of ``b`` within distance r?"""
    ys, xs = np.nonzero(b)
    count = 0
    for y, x in zip(*np.nonzero(a)):
        if np.any((ys - y) ** 2 + (xs - x) ** 2 <= r * r):
            count += 1
    return count


def _f_brute(g, p, void=None, bound_th=0.008):
    if void is not None:
        g, p = g & ~void, p & ~void
    h, w = g.shape
    r = bound_th if bound_th >= 1 else math.ceil(bound_th * math.sqrt(h * h + w * w))
    bg, bp = _bmap_brute(g), _bmap_brute(p)
    ng, nf = bg.sum(), bp.sum()
    if nf == 0 and ng == 0:
        return 1.0
    if nf == 0 or ng == 0:
        return 0.0  # P = 1, R = 0 or P = 0, R = 1
    prec, rec = _near(bp, bg, r) / nf, _near(bg, bp, r) / ng
    return 0.0 if prec + rec == 0 else 2 * prec * rec / (prec + rec)


def _blobby(draw, h, w):
    """A mask that is empty, full, random noise or a few rectangles."""
    kind = draw(st.sampled_from(["noise", "rects", "empty", "full"]))
    if kind == "empty":
        return np.zeros((h, w), bool)
    if kind == "full":
        return np.ones((h, w), bool)
    if kind == "noise":
        return draw(hnp.arrays(bool, (h, w)))
    m = np.zeros((h, w), bool)
    for _ in range(draw(st.integers(1, 3))):
        y0, x0 = draw(st.integers(0, h - 1)), draw(st.integers(0, w - 1))
        m[y0:y0 + draw(st.integers(1, h)), x0:x0 + draw(st.integers(1, w))] = True
    return m


@st.composite
def masks(draw, max_side=12):
    h, w = draw(st.integers(1, max_side)), draw(st.integers(1, max_side))
    return _blobby(draw, h, w), _blobby(draw, h, w), _blobby(draw, h, w)


THRESHOLDS = st.sampled_from([0.008, 0.1, 0.3, 1, 2, 3.0])


def _check_f(m, bound_th, use_void):
    g, p, v = m
    void = v if use_void else None
    assert ov.f_measure(g, p, void, bound_th) == pytest.approx(_f_brute(g, p, void, bound_th), abs=TOL)


def _check_dilate(g, r):
    h, w = g.shape
    expect = np.zeros((h, w), bool)
    ys, xs = np.nonzero(g)
    for y in range(h):
        for x in range(w):
            expect[y, x] = bool(np.any((ys - y) ** 2 + (xs - x) ** 2 <= r * r))
    np.testing.assert_array_equal(ov.dilate_disk(g, float(r)), expect)


def _check_jaccard(m, use_void):
    g, p, v = m
    keep = ~v if use_void else np.ones_like(g)
    inter = sum(1 for a, b, k in zip(g.ravel(), p.ravel(), keep.ravel()) if a and b and k)
    union = sum(1 for a, b, k in zip(g.ravel(), p.ravel(), keep.ravel()) if (a or b) and k)
    assert ov.jaccard(g, p, v if use_void else None) == (1.0 if union == 0 else inter / union)


@settings(max_examples=60, deadline=None)
@given(masks(), THRESHOLDS, st.booleans())
def test_f_measure_brute_force(m, bound_th, use_void):
    _check_f(m, bound_th, use_void)


@settings(max_examples=60, deadline=None)
@given(masks())
def test_boundary_map_brute_force(m):
    np.testing.assert_array_equal(ov.boundary_map(m[0]), _bmap_brute(m[0]))


@settings(max_examples=60, deadline=None)
@given(masks(), st.integers(0, 6))
def test_dilate_disk_brute_force(m, r):
    _check_dilate(m[0], r)


@settings(max_examples=60, deadline=None)
@given(masks(), st.booleans())
def test_jaccard_brute_force(m, use_void):
    _check_jaccard(m, use_void)


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(masks(24), THRESHOLDS, st.booleans(), st.integers(0, 9))
def test_brute_force_sweep(m, bound_th, use_void, r):
    """The larger sweep: F, the boundary map, the dilation and J on masks up to 24x24."""
    _check_f(m, bound_th, use_void)
    np.testing.assert_array_equal(ov.boundary_map(m[1]), _bmap_brute(m[1]))
    _check_dilate(m[2], r)
    _check_jaccard(m, use_void)


def test_disk_radius():
    assert ov.disk_radius(480, 854) == 8.0
    assert ov.disk_radius(1080, 1920) == 18.0
    assert ov.disk_radius(1, 1) == 1.0
    assert ov.disk_radius(7, 5, bound_th=3) == 3
    assert len(ov.disk_offsets(1)) == 5 and len(ov.disk_offsets(2)) == 13


def test_disk_offsets_equal_scikit_image():
    morph = pytest.importorskip("skimage.morphology")
    for r in range(0, 25):
        fp = morph.disk(float(r))
        got = np.zeros_like(fp)
        for dy, dx in ov.disk_offsets(float(r)):
            got[dy + r, dx + r] = 1
        np.testing.assert_array_equal(got, fp)


def _official_bins(n):
    """The bins as db_statistics slices them, written with NumPy as it does
    (uint8 edges, the stop ``edge + 1`` in the edges' type)."""
    with np.errstate(invalid="ignore", over="ignore"):
        ids = np.round(np.linspace(1, n, 5) + 1e-10) - 1
        exact = ids.astype(np.int64)
        wrapped = ids.astype(np.uint8)
        return ([(int(exact[i]), int(exact[i + 1] + 1)) for i in range(4)],
                [(int(wrapped[i]), int(wrapped[i + 1] + 1)) for i in range(4)])


@pytest.mark.parametrize("n", list(range(1, 70)) + [254, 255, 256, 257, 258, 300, 301, 400, 511, 512, 513, 1000,
                                                    1021, 1022, 1024, 1025])
def test_decay_bins(n):
    exact, wrapped = _official_bins(n)
    assert ov.decay_bins(n, quirk=False) == exact
    numpy2 = int(np.__version__.split(".")[0]) >= 2
    assert ov.decay_bins(n, numpy2=numpy2) == wrapped


def test_decay_quirk_starts_at_256_frames_with_numpy2():
    """The last bin's stop is 255 + 1 in uint8 = 0 at exactly 256 frames (NumPy >= 2)."""
    assert ov.decay_bins(255) == ov.decay_bins(255, quirk=False)
    assert ov.decay_bins(256)[3] == (191, 0)
    assert ov.decay_bins(256, numpy2=False)[3] == (191, 256) == ov.decay_bins(256, quirk=False)[3]
    assert ov.decay_bins(300)[3] == (224, 44)
    assert ov.decay_bins(400)[3] == (43, 144)  # not empty, just wrong
    assert ov.decay_bins(1020)[0] == (0, 0)    # the first bin empties too (1019-1022 frames)
    assert ov.decay_bins(1024)[0] == (0, 1)    # a first bin of one frame


def test_statistics():
    v = np.array([1.0, 0.0, 0.6, 0.5, 0.4])
    m, r, d = ov.statistics(v)
    assert m == pytest.approx(0.5) and r == pytest.approx(0.4)
    assert d == pytest.approx(np.mean(v[0:2]) - np.mean(v[3:5]))
    long = np.linspace(1, 0, 300)
    _, _, dq = ov.statistics(long)
    assert math.isnan(dq)  # the last bin wraps to an empty slice
    _, _, dc = ov.statistics(long, quirk=False)
    assert dc > 0.7


def test_assignments():
    s = np.array([[0.9, 0.1], [0.2, 0.8], [0.95, 0.7]])
    assert ov.assignments(s) == [([1, 2], [1, 0])]
    assert len(ov.assignments(np.ones((3, 2)))) == 6


def test_boundary_iou_frame():
    g = np.zeros((40, 50), bool)
    g[5:30, 10:40] = True
    assert ov.boundary_iou(g, g) == 1.0
    assert ov.boundary_iou(g, np.zeros_like(g)) == 0.0
    assert ov.boundary_iou(np.zeros_like(g), np.zeros_like(g)) == 1.0
    assert ov.boundary_iou(np.zeros_like(g), np.zeros_like(g), both_empty=0.0) == 0.0
    from boundary_api.masks import reference
    p = np.roll(g, 2, axis=1)
    assert ov.boundary_iou(g, p) == reference.boundary_iou(g.astype(np.uint8), p.astype(np.uint8), 0.02)
    void = np.zeros_like(g)
    void[:, :25] = True
    assert ov.boundary_iou(g, p, void=void) != ov.boundary_iou(g, p)


# ----------------------------------------------------------------------------
# Live: the official code itself, where a checkout is present
# ----------------------------------------------------------------------------

def _official():
    davis, sav = os.environ.get("BOUNDARY_API_DAVIS2017"), os.environ.get("BOUNDARY_API_SAV")
    python = os.environ.get("BOUNDARY_API_VOS_PYTHON", sys.executable)
    if not davis or not sav or not os.path.isdir(davis) or not os.path.isdir(sav):
        pytest.skip("set BOUNDARY_API_DAVIS2017 and BOUNDARY_API_SAV to checkouts of the official code")
    probe = subprocess.run([python, "-c", "import pandas, scipy, skimage, cv2, PIL, tqdm"], capture_output=True)
    if probe.returncode:
        pytest.skip(f"{python} lacks the official code's dependencies (BOUNDARY_API_VOS_PYTHON)")
    return python, davis, sav


@pytest.mark.slow
def test_live_official_on_a_fresh_preset(tmp_path):
    """A preset generated now (seed 17), both DAVIS tasks and SA-V's layouts, the
    official code run on it and the oracle compared with what it returned."""
    python, davis, sav = _official()
    from boundary_api.video import synthetic

    r = synthetic.make_preset("small", tmp_path / "set", seed=17, sav=True)
    jobs = [dict(kind="davis", label=t, davis_root=r["davis_root"], task=t, gt_set="val",
                 res_path=r["results"][t], full=True) for t in ("semi-supervised", "unsupervised")]
    jobs += [dict(kind="sav", label="sav", gt_root=r["sav_gt"], pred_root=r["sav_pred"], skip_first_and_last=s,
                  per_frame=True) for s in (True, False)]
    jobs.append(dict(kind="sav", label="davislike", gt_root=os.path.join(r["davis_root"], "Annotations", "480p"),
                     pred_root=r["results"]["semi-supervised"], skip_first_and_last=True, per_frame=True))
    with open(tmp_path / "jobs.json", "w") as f:
        json.dump(jobs, f)
    subprocess.run([python, os.path.join(HERE, "official_vos.py"), str(tmp_path / "jobs.json"),
                    str(tmp_path / "out.json"), "--davis2017", davis, "--sav", sav], check=True)
    with open(tmp_path / "out.json") as f:
        out = json.load(f)["results"]
    for job, res in zip(jobs, out):
        assert "error" not in res, (job["label"], res.get("error"))
        (compare_davis if job["kind"] == "davis" else compare_sav)(job, res)
