"""The same user code against panopticapi's ``pq_compute`` and boundary_api's
(issue 24): values, the type of every value, printed lines, what is accepted
(with a warning here; ``strict=True`` refuses) and the exception classes.

panopticapi is not a dependency.  ``restated_pq_compute`` below restates its
behaviour (written from reading ``panopticapi/evaluation.py``, not copied):
every comparison runs against it, and, where panopticapi is importable (e.g.
``pip install --no-deps panopticapi-lite``), the restatement is checked
against the original on the same inputs.
"""
import contextlib
import io
import json
import os
import re
import shutil
import warnings
from collections import Counter

import numpy as np
import pytest
from PIL import Image

from boundary_api._parallel import default_threads
from boundary_api.panoptic import PanopticKeyError, pq_compute
from conftest import DATA

PAN = os.path.join(DATA, "panoptic")
GROUPS = ("All", "Things", "Stuff")
# the workers panopticapi uses (multiprocessing.cpu_count(), patched below to
# this where they differ) and boundary_api's default thread count
CORES = default_threads()


# ---------------------------------------------------------------------------
# panopticapi's behaviour, restated
# ---------------------------------------------------------------------------

def restated_pq_compute(gt_json_file, pred_json_file, gt_folder=None, pred_folder=None):
    """panopticapi's ``pq_compute`` on one process: its checks, its numpy
    types, its exceptions and its printed lines (the per-core lines worker
    after worker, as its workers print them when they run one at a time)."""
    with open(gt_json_file) as f:
        gt_doc = json.load(f)
    with open(pred_json_file) as f:
        pred_doc = json.load(f)
    gt_folder = gt_json_file.replace(".json", "") if gt_folder is None else gt_folder
    pred_folder = pred_json_file.replace(".json", "") if pred_folder is None else pred_folder
    cats = {c["id"]: c for c in gt_doc["categories"]}
    print("Evaluation panoptic segmentation metrics:")
    print("Ground truth:")
    print(f"\tSegmentation folder: {gt_folder}")
    print(f"\tJSON file: {gt_json_file}")
    print("Prediction:")
    print(f"\tSegmentation folder: {pred_folder}")
    print(f"\tJSON file: {pred_json_file}")
    for folder, what in ((gt_folder, "ground truth"), (pred_folder, "predicted")):
        if not os.path.isdir(folder):
            raise Exception(f"Folder {folder} with {what} segmentations doesn't exist")
    by_image = {}
    for ann in pred_doc["annotations"]:
        by_image[ann["image_id"]] = ann                     # a repeated image: the last counts
    pairs = []
    for ann in gt_doc["annotations"]:
        if ann["image_id"] not in by_image:
            raise Exception(f"no prediction for the image with id: {ann['image_id']}")
        pairs.append((ann, by_image[ann["image_id"]]))

    def ids_of(path):
        a = np.array(Image.open(path), dtype=np.uint32)
        return a[..., 0] + 256 * a[..., 1] + 65536 * a[..., 2]

    sizes = [len(part) for part in np.array_split(np.arange(len(pairs)), CORES)]
    print(f"Number of cores: {CORES}, images per core: {sizes[0]}")
    # per category: [iou sum, tp, fp, fn]; the IoU sum starts as a Python float
    acc = {}
    start = 0
    for core, size in enumerate(sizes):
        for k, (g_ann, p_ann) in enumerate(pairs[start:start + size]):
            if k % 100 == 0:
                print(f"Core: {core}, {k} from {size} images processed")
            gt = ids_of(os.path.join(gt_folder, g_ann["file_name"]))
            pred = ids_of(os.path.join(pred_folder, p_ann["file_name"]))
            gsegs = {s["id"]: dict(s) for s in g_ann["segments_info"]}  # a repeated id: the last counts
            psegs = {s["id"]: dict(s) for s in p_ann["segments_info"]}
            unseen = set(psegs)
            for v, c in zip(*np.unique(pred, return_counts=True)):
                if v not in psegs:
                    if v == 0:
                        continue
                    raise KeyError(f"image {g_ann['image_id']}: segment {v} in the PNG, not in the JSON")
                psegs[v]["area"] = c                            # a numpy integer
                unseen.discard(v)
                if psegs[v]["category_id"] not in cats:
                    raise KeyError(f"image {g_ann['image_id']}: unknown category_id {psegs[v]['category_id']}")
            if unseen:
                raise KeyError(f"image {g_ann['image_id']}: segments {sorted(unseen)} in the JSON, not in the PNG")
            keys, counts = np.unique(gt.astype(np.uint64) * 2 ** 24 + pred, return_counts=True)
            inter = {(int(k) >> 24, int(k) & (2 ** 24 - 1)): c for k, c in zip(keys, counts)}
            hit_g, hit_p = set(), set()
            for (g, p), n in inter.items():
                if g not in gsegs or p not in psegs or gsegs[g]["iscrowd"] == 1:
                    continue
                if gsegs[g]["category_id"] != psegs[p]["category_id"]:
                    continue
                iou = n / (psegs[p]["area"] + gsegs[g]["area"] - n - inter.get((0, p), 0))
                if iou > 0.5:
                    s = acc.setdefault(gsegs[g]["category_id"], [0.0, 0, 0, 0])
                    s[0] += iou
                    s[1] += 1
                    hit_g.add(g)
                    hit_p.add(p)
            crowd = {}
            for g, info in gsegs.items():
                if g in hit_g:
                    continue
                if info["iscrowd"] == 1:
                    crowd[info["category_id"]] = g
                else:
                    acc.setdefault(info["category_id"], [0.0, 0, 0, 0])[3] += 1
            for p, info in psegs.items():
                if p in hit_p:
                    continue
                off = inter.get((0, p), 0)
                if info["category_id"] in crowd:
                    off += inter.get((crowd[info["category_id"]], p), 0)
                if off / info["area"] > 0.5:
                    continue
                acc.setdefault(info["category_id"], [0.0, 0, 0, 0])[2] += 1
        print(f"Core: {core}, all {size} images processed")
        start += size
    results = {}
    for name, thing in (("All", None), ("Things", True), ("Stuff", False)):
        totals = [0, 0, 0]     # integer zeros: the types follow what is added
        n = 0
        per_class = {}
        for cid, info in cats.items():
            if thing is not None and (info["isthing"] == 1) != thing:
                continue
            iou, tp, fp, fn = acc.get(cid, [0.0, 0, 0, 0])
            if tp + fp + fn == 0:
                per_class[cid] = {"pq": 0.0, "sq": 0.0, "rq": 0.0}
                continue
            n += 1
            d = tp + 0.5 * fp + 0.5 * fn
            per_class[cid] = {"pq": iou / d, "sq": iou / tp if tp else 0, "rq": tp / d}
            for i, key in enumerate(("pq", "sq", "rq")):
                totals[i] += per_class[cid][key]
        results[name] = {"pq": totals[0] / n, "sq": totals[1] / n, "rq": totals[2] / n, "n": n}
        if name == "All":
            results["per_class"] = per_class
    print("{:10s}| {:>5s}  {:>5s}  {:>5s} {:>5s}".format("", "PQ", "SQ", "RQ", "N"))
    print("-" * 38)
    for name in GROUPS:
        r = results[name]
        print("{:10s}| {:5.1f}  {:5.1f}  {:5.1f} {:5d}".format(name, 100 * r["pq"], 100 * r["sq"],
                                                              100 * r["rq"], r["n"]))
    print("Time elapsed: 0.00 seconds")
    return results


def _originals():
    out = [pytest.param(restated_pq_compute, id="restated")]
    try:
        from panopticapi import evaluation
    except ImportError:
        return out

    class OneAtATime:
        """Stands in for panopticapi's process pool: each worker's task runs
        when it is handed over, one after the other, in this process (the
        same split and the same per-worker code).  The workers' printed lines
        then come in a fixed order and all before the call returns or fails
        (a pool's workers flush or finish them at any time)."""

        def __init__(self, processes=None):
            self.processes = processes

        def apply_async(self, fn, args=()):
            try:
                value, error = fn(*args), None
            except Exception as exc:   # noqa: BLE001 - re-raised by get(), as a pool does
                value, error = None, exc

            class Result:
                def get(self):
                    if error is not None:
                        raise error
                    return value

            return Result()

        def close(self):
            pass

    def original(*args, **kw):
        """panopticapi's pq_compute with its pool replaced by OneAtATime and
        its core count the number of cores this process may run on."""
        saved = evaluation.multiprocessing.Pool, evaluation.multiprocessing.cpu_count
        evaluation.multiprocessing.Pool = OneAtATime
        evaluation.multiprocessing.cpu_count = lambda: CORES
        try:
            return evaluation.pq_compute(*args, **kw)
        finally:
            evaluation.multiprocessing.Pool, evaluation.multiprocessing.cpu_count = saved

    return out + [pytest.param(original, id="panopticapi")]


ORIGINALS = _originals()


# ---------------------------------------------------------------------------
# running the same user code
# ---------------------------------------------------------------------------

class Outcome:
    """Result or exception, printed lines and warnings of one call.  Printed
    lines are taken from file descriptor 1 (``capfd``): panopticapi's workers
    are other processes."""

    def __init__(self, capfd, fn, *args, **kw):
        self.result = self.error = None
        capfd.readouterr()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                self.result = fn(*args, **kw)
            except Exception as exc:   # noqa: BLE001 - compared below
                self.error = exc
        self.lines = capfd.readouterr().out.splitlines()
        self.warnings = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]


def user_code(capfd, pq, files):
    """What a user writes: pq_compute(gt_json, pred_json, gt_folder, pred_folder)."""
    return Outcome(capfd, pq, files["gt_json"], files["pred_json"], files["gt_dir"], files["pred_dir"])


@pytest.fixture
def files(tmp_path):
    """A writable copy of the COCO panoptic samples (shift-by-3 predictions)."""
    shutil.copytree(PAN, tmp_path / "p")
    root = tmp_path / "p"
    return {"gt_json": str(root / "panoptic_examples.json"), "gt_dir": str(root / "panoptic_examples"),
            "pred_json": str(root / "pred_shift3.json"), "pred_dir": str(root / "pred_shift3")}


def edit(path, fn):
    with open(path) as f:
        doc = json.load(f)
    fn(doc)
    with open(path, "w") as f:
        json.dump(doc, f)


def _retag_category_8(doc):
    """Both predicted segments of category 8 relabelled 7 (known): category 8
    gets false negatives and no true positive (its SQ is panopticapi's int 0)."""
    for ann in doc["annotations"]:
        for seg in ann["segments_info"]:
            if seg["category_id"] == 8:
                seg["category_id"] = 7


def assert_same_results(ours, theirs, tol=1e-12):
    assert set(ours) == set(theirs) == {"All", "Things", "Stuff", "per_class"}
    for g in GROUPS:
        assert set(ours[g]) == set(theirs[g]) == {"pq", "sq", "rq", "n"}
        for key, value in theirs[g].items():
            assert type(ours[g][key]) is type(value), (g, key, type(ours[g][key]), type(value))
            assert abs(ours[g][key] - value) <= tol, (g, key)
    assert list(ours["per_class"]) == list(theirs["per_class"])
    for cid, value in theirs["per_class"].items():
        mine = ours["per_class"][cid]
        # boundary_api adds tp, fp, fn (docs/known_differences.md)
        assert set(mine) - set(value) == {"tp", "fp", "fn"}
        for key in ("pq", "sq", "rq"):
            assert type(mine[key]) is type(value[key]), (cid, key, type(mine[key]), type(value[key]))
            assert abs(mine[key] - value[key]) <= tol, (cid, key)


def assert_same_lines(ours, theirs):
    """Identical lines, except the workers' progress lines (their order between
    workers is the operating system's in panopticapi) and the elapsed time."""
    def split(lines):
        core = [x for x in lines if x.startswith("Core: ")]
        rest = [re.sub(r"[0-9.]+ seconds$", "T seconds", x) for x in lines if not x.startswith("Core: ")]
        return core, rest

    ours_core, ours_rest = split(ours)
    their_core, their_rest = split(theirs)
    assert ours_rest == their_rest
    assert Counter(ours_core) == Counter(their_core)
    for lines in (ours_core, their_core):     # each worker's lines in its own order
        for c in range(CORES):
            mine = [x for x in lines if x.startswith(f"Core: {c},")]
            assert mine[-1].startswith(f"Core: {c}, all ")
    assert ours_core == sorted(ours_core, key=lambda x: int(x.split(",")[0][6:]))


# ---------------------------------------------------------------------------
# the comparisons
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("original", ORIGINALS)
@pytest.mark.parametrize("retag", [False, True], ids=["as-is", "category-without-tp"])
def test_values_types_and_printed_lines(files, original, retag, capfd):
    if retag:
        edit(files["pred_json"], _retag_category_8)
    theirs = user_code(capfd, original, files)
    ours = user_code(capfd, pq_compute, files)
    assert theirs.error is None and ours.error is None
    assert_same_results(ours.result, theirs.result)
    assert_same_lines(ours.lines, theirs.lines)
    assert ours.warnings == []
    if retag:
        assert type(ours.result["per_class"][8]["sq"]) is int and ours.result["per_class"][8]["sq"] == 0
    assert type(ours.result["All"]["pq"]) is np.float64 and type(ours.result["All"]["rq"]) is float


@pytest.mark.parametrize("original", ORIGINALS)
def test_default_folders_are_printed(files, original, capfd):
    theirs = Outcome(capfd, original, files["gt_json"], files["pred_json"], None, files["pred_dir"])
    ours = Outcome(capfd, pq_compute, files["gt_json"], files["pred_json"], None, files["pred_dir"])
    assert theirs.error is None and ours.error is None
    assert_same_lines(ours.lines, theirs.lines)


def _duplicate_pred_segment(doc):
    segs = doc["annotations"][0]["segments_info"]
    segs.append(dict(segs[0]))


def _duplicate_pred_segment_other_category(doc):
    segs = doc["annotations"][1]["segments_info"]
    first = next(s for s in segs if s["category_id"] == 8)
    segs.append(dict(first, category_id=7))         # the last entry counts


def _duplicate_gt_segment(doc):
    segs = doc["annotations"][1]["segments_info"]
    segs.insert(3, dict(segs[0]))


def _unknown_gt_category(doc):
    doc["annotations"][0]["segments_info"][2]["category_id"] = 100000


def _duplicate_pred_image(doc):
    doc["annotations"].insert(0, json.loads(json.dumps(doc["annotations"][1])))
    doc["annotations"][0]["segments_info"] = []      # overridden by the later entry


def _duplicate_category(doc):
    cats = doc["categories"]
    cats.append(dict(cats[0]))


def _isthing_two(doc):
    next(c for c in doc["categories"] if c["id"] == 8)["isthing"] = 2     # counts as stuff


ACCEPTED = [
    ("pred", _duplicate_pred_segment, "segment id 3937500 appears more than once"),
    ("pred", _duplicate_pred_segment_other_category, "appears more than once"),
    ("gt", _duplicate_gt_segment, "segment id 3937500 appears more than once"),
    ("gt", _unknown_gt_category, "unknown category_id 100000"),
    ("pred", _duplicate_pred_image, "image 439180 has more than one prediction"),
    ("gt", _duplicate_category, "category id 1 appears more than once"),
    ("gt", _isthing_two, "category 8 has an 'isthing' of neither 0 nor 1"),
]


@pytest.mark.parametrize("original", ORIGINALS)
@pytest.mark.parametrize("which,change,warning", ACCEPTED, ids=[c[1].__name__[1:] for c in ACCEPTED])
def test_accepted_with_a_warning_and_refused_when_strict(files, original, which, change, warning, capfd):
    edit(files[f"{which}_json"], change)
    theirs = user_code(capfd, original, files)
    ours = user_code(capfd, pq_compute, files)
    assert theirs.error is None and ours.error is None
    assert_same_results(ours.result, theirs.result)
    assert len(ours.warnings) == 1 and warning in ours.warnings[0], ours.warnings
    assert_same_lines(ours.lines, theirs.lines)
    with pytest.raises(ValueError, match=warning):
        with contextlib.redirect_stdout(io.StringIO()):
            pq_compute(files["gt_json"], files["pred_json"], files["gt_dir"], files["pred_dir"], strict=True)


def _png_segment_not_in_json(doc):
    doc["annotations"][0]["segments_info"].pop(0)


def _json_segment_not_in_png(doc):
    doc["annotations"][0]["segments_info"].append({"id": 77, "category_id": 1})


def _unknown_pred_category(doc):
    doc["annotations"][0]["segments_info"][0]["category_id"] = 100000


def _no_prediction(doc):
    doc["annotations"].pop(0)


def _gt_without(key):
    def change(doc):
        if key in ("annotations", "categories"):
            del doc[key]
        elif key == "isthing":
            del doc["categories"][0]["isthing"]
        elif key in ("file_name", "segments_info"):
            del doc["annotations"][0][key]
        else:                                   # a segment field; segment 0 has a match
            del doc["annotations"][0]["segments_info"][0][key]
    change.__name__ = f"_gt_without_{key}"
    return change


def _pred_segment_without(key):
    def change(doc):
        del doc["annotations"][0]["segments_info"][0][key]
    change.__name__ = f"_pred_segment_without_{key}"
    return change


REFUSED = [
    ("pred", _png_segment_not_in_json, KeyError, "3937500"),
    ("pred", _json_segment_not_in_png, KeyError, "77"),
    ("pred", _unknown_pred_category, KeyError, "100000"),
    ("pred", _no_prediction, Exception, "no prediction for the image with id"),
    ("pred", _pred_segment_without("category_id"), KeyError, "category_id"),
    ("pred", _pred_segment_without("id"), KeyError, "id"),
] + [("gt", _gt_without(k), KeyError, k)
     for k in ("annotations", "categories", "isthing", "file_name", "segments_info", "id", "category_id",
               "area")]


@pytest.mark.parametrize("original", ORIGINALS)
@pytest.mark.parametrize("which,change,error,text", REFUSED, ids=[c[1].__name__[1:] for c in REFUSED])
def test_refused_with_the_original_exception_class(files, original, which, change, error, text, capfd):
    edit(files[f"{which}_json"], change)
    theirs = user_code(capfd, original, files)
    ours = user_code(capfd, pq_compute, files)
    assert isinstance(theirs.error, error), repr(theirs.error)
    assert isinstance(ours.error, error) and isinstance(ours.error, ValueError), repr(ours.error)
    if error is KeyError:
        assert type(theirs.error) is KeyError and isinstance(ours.error, PanopticKeyError)
        assert type(ours.error).__name__ == "KeyError"  # the original's class name (issue 40)
        assert text in str(theirs.error) and text in str(ours.error)
        assert not str(ours.error).startswith("'")   # the message as is, not quoted
    # both printed the files before failing
    assert ours.lines[:7] == theirs.lines[:7]


def test_restated_matches_the_golden_values(capfd):
    """The restatement against the reference numbers (tests/data/panoptic_eval.json)."""
    from conftest import golden_cases

    for case in golden_cases("panoptic_eval.json"):
        if case["iou_type"] != "segm":
            continue
        res = Outcome(capfd, restated_pq_compute, case["gt_json"], case["pred_json"], case["gt_folder"],
                      case["pred_folder"]).result
        for g in GROUPS:
            for k in ("pq", "sq", "rq", "n"):
                assert abs(res[g][k] - case["results"][g][k]) <= 1e-12
