"""The generated video object segmentation cases behind tests/data/video/*.json.

Each case writes its files under a folder with :mod:`boundary_api.video.synthetic`
and returns the official evaluator runs ("jobs") to make on them and the label
arrays it wrote (their fingerprint is stored with the golden values, so a
change of the generator is noticed).  ``make_vos_golden.py`` runs the official
code on the jobs; the tests rebuild the same files and check the oracle (and,
later, boundary_api.video) against the stored results.

Job paths are relative to the case's folder.
"""
import hashlib
import json
import math
import os
import shutil

import numpy as np

from boundary_api.video import synthetic as syn


class Case:
    def __init__(self, name, kind, covers, build, slow=False):
        self.name, self.kind, self.covers, self.build, self.slow = name, kind, covers, build, slow

    def make(self, root):
        """Write the case's files under ``root``; returns (jobs, arrays)."""
        os.makedirs(root, exist_ok=True)
        arrays = {}
        jobs = self.build(root, arrays)
        return jobs, arrays


class Cases(dict):
    """A family of generated cases, by name (this module's, ``mose_lvos_cases.py``'s):
    :meth:`case` adds one; ``path_keys`` are the job fields that hold paths, relative
    to the case's folder where they are stored."""

    def __init__(self, path_keys):
        super().__init__()
        self.path_keys = tuple(path_keys)

    def case(self, kind, covers, slow=False):
        """Decorator: the function ``_<name>(root, arrays)`` as case ``name``."""
        def deco(fn):
            name = fn.__name__.lstrip("_")
            self[name] = Case(name, kind, covers, fn, slow)
            return fn
        return deco

    def _paths(self, job, fn):
        out = dict(job)
        for k in self.path_keys:
            if out.get(k) is not None:
                out[k] = fn(out[k])
        return out

    def absolute(self, job, root):
        """A job with its paths joined to ``root``."""
        return self._paths(job, lambda p: os.path.join(root, p))

    def relative(self, job, root):
        """A job with its paths made relative to ``root`` (as stored)."""
        return self._paths(job, lambda p: os.path.relpath(p, root))

    def build(self, name, root, fresh=True):
        """Write case ``name`` under ``root`` (emptied first); returns (jobs with absolute paths, arrays)."""
        if fresh and os.path.exists(root):
            shutil.rmtree(root)
        jobs, arrays = self[name].make(root)
        return [self.absolute(j, root) for j in jobs], arrays

    def builder(self, tmp_path_factory):
        """``get(name) -> (root, jobs, fingerprint)``: each case's files written once."""
        cache = {}

        def get(name):
            if name not in cache:
                root = str(tmp_path_factory.mktemp(name))
                jobs, arrays = self.build(name, root)
                cache[name] = (root, jobs, fingerprint(arrays))
            return cache[name]
        return get

    def fixture(self):
        """The module-scoped pytest fixture ``built``: :meth:`builder`'s ``get``."""
        import pytest

        def built(tmp_path_factory):
            return self.builder(tmp_path_factory)
        return pytest.fixture(scope="module", name="built")(built)


CASES = Cases(("davis_root", "res_path", "gt_root", "pred_root"))
case, absolute, relative, build, builder = CASES.case, CASES.absolute, CASES.relative, CASES.build, CASES.builder


def fingerprint(arrays):
    """sha256 of the label arrays a case wrote (names, shapes, dtypes, bytes)."""
    h = hashlib.sha256()
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(name.encode())
        h.update(repr((a.shape, a.dtype.str)).encode())
        h.update(a.tobytes())
    return h.hexdigest()


def _keep(arrays, prefix, d):
    for k, v in d.items():
        arrays[f"{prefix}/{k}"] = np.asarray(v)


def _davis(root, arrays, gt, *, void=None, unsup=None, semi=None, unsup_res=None, subset="val", **kw):
    syn.write_davis(os.path.join(root, "DAVIS"), gt, void=void, unsupervised=unsup, subset=subset, **kw)
    _keep(arrays, "gt", gt)
    if void:
        _keep(arrays, "void", void)
    if unsup:
        _keep(arrays, "gt_unsup", unsup)
    if semi is not None:
        syn.write_davis_results(os.path.join(root, "semi"), semi)
        _keep(arrays, "semi", semi)
    if unsup_res is not None:
        syn.write_davis_results(os.path.join(root, "unsup"), unsup_res)
        _keep(arrays, "unsup", unsup_res)


def _job(task, label=None, res=None, subset="val", **kw):
    j = dict(kind="davis", label=label or ("semi" if task == "semi-supervised" else "unsup"),
             davis_root="DAVIS", task=task, gt_set=subset,
             res_path=res or ("semi" if task == "semi-supervised" else "unsup"))
    j.update(kw)
    return j


SEMI, UNSUP = "semi-supervised", "unsupervised"

# ----------------------------------------------------------------------------
# DAVIS 2017, semi-supervised and unsupervised
# ----------------------------------------------------------------------------


@case("davis", "moving, deforming, touching, vanishing/reappearing and frame-edge objects; results "
      "jittered, dilated, eroded, noisy, shifted, with an object missing in late frames and an empty "
      "frame; ImageSets order not sorted; void band and boxes (unsupervised); evaluation_method.py's "
      "CSV files and tables")
def _basic(root, arrays):
    a = syn.render_sequence(12, 24, 32, 2, seed=11)
    b = syn.render_sequence(9, 17, 23, 3, seed=12, deforming=True, touching=True)
    c = syn.render_sequence(10, 33, 65, 3, seed=13, vanishing=True, edges=True, moving=True)
    gt = {"c_edges": c, "a_move": a, "b_deform": b}
    void = {k: syn.void_mask(v, seed=i, band=1, boxes=1, box_size=0.15) for i, (k, v) in enumerate(gt.items())}
    semi = {"a_move": syn.perturb(a, seed=1, jitter=1, dilate=1),
            "b_deform": syn.perturb(b, seed=2, erode=1, noise=0.02),
            "c_edges": syn.perturb(c, seed=3, shift=(2, -3), missing=[2], missing_frames=(5, 10), empty_frames=[4])}
    unsup = {"a_move": syn.proposals(a, 4, seed=4), "b_deform": syn.proposals(b, 3, seed=5),
             "c_edges": syn.proposals(syn.perturb(c, seed=6, dilate=1), 6, seed=6)}
    _davis(root, arrays, gt, void=void, semi=semi, unsup_res=unsup)
    return [_job(SEMI, method_script=True), _job(UNSUP, method_script=True, full=True)]


@case("davis", "odd frame sizes 1x1, 1x17, 17x1, 2x2, 7x5 with tiny objects, void and full-frame objects")
def _sizes(root, arrays):
    gt = {}
    for i, (h, w) in enumerate([(1, 1), (1, 17), (17, 1), (2, 2), (7, 5)]):
        gt[f"s{h}x{w}"] = syn.render_sequence(6, h, w, 2, seed=20 + i, tiny=1)
    gt["full"] = np.ones((5, 4, 6), np.uint8)  # one object covering every frame
    gt["full"][2, 1:3, 2:4] = 2
    gt["full"][0, 0, 0] = 2
    void = {k: syn.void_mask(v, seed=1, band=0, boxes=1, box_size=0.3) for k, v in gt.items()}
    semi = {k: syn.perturb(v, seed=30 + i, jitter=1, noise=0.1) for i, (k, v) in enumerate(gt.items())}
    unsup = {k: syn.proposals(v, 3, seed=40 + i) for i, (k, v) in enumerate(gt.items())}
    _davis(root, arrays, gt, void=void, semi=semi, unsup_res=unsup)
    return [_job(SEMI), _job(UNSUP, full=True)]


@case("davis", "object counting: later objects absent from the first frame (not counted; in the semi "
      "results they are removed), id gaps in the first frame (an always-empty object), the first frame "
      "without any object in one sequence, 255 (void) in semi-supervised annotations")
def _counting(root, arrays):
    late = syn.render_sequence(8, 20, 24, 1, seed=50, late=2)
    gap = syn.render_sequence(7, 16, 16, 2, seed=51, ids=[1, 3])
    empty0 = syn.render_sequence(6, 12, 14, 0, seed=52, late=1)
    voidy = syn.render_sequence(6, 12, 14, 2, seed=53)
    voidy[:, 5:7, :] = 255
    gt = {"late": late, "gap": gap, "empty0": empty0, "voidy": voidy}
    semi = {"late": syn.perturb(late, seed=1, missing=[2, 3], dilate=1),
            "gap": syn.perturb(gap, seed=2, jitter=1),
            "empty0": np.zeros_like(empty0),
            "voidy": syn.perturb(np.where(voidy == 255, 0, voidy), seed=3, erode=1)}
    unsup = {k: syn.proposals(np.where(v == 255, 0, v), 4, seed=60 + i) for i, (k, v) in enumerate(gt.items())}
    _davis(root, arrays, gt, semi=semi, unsup_res=unsup)
    return [_job(SEMI), _job(UNSUP)]


@case("davis", "semi-supervised results: first and last frames absent (never read) and an index above the "
      "object count only in the first frame; result with fewer objects (zero padding); an all-empty result "
      "(no object at all); a result id gap; grayscale ('L') PNGs instead of palette")
def _semi_results(root, arrays):
    a = syn.render_sequence(7, 15, 19, 3, seed=70)
    b = syn.render_sequence(6, 15, 19, 3, seed=71)
    c = syn.render_sequence(6, 15, 19, 2, seed=72)
    d = syn.render_sequence(6, 15, 19, 3, seed=73)
    gt = {"a": a, "b": b, "c": c, "d": d}
    ra = syn.perturb(a, seed=1, jitter=1)
    ra[0, :3, :3] = 9  # never read: the first frame
    rb = syn.perturb(b, seed=2, missing=[2, 3])
    rd = syn.perturb(d, seed=3, missing=[2])
    res = {"a": ra, "b": rb, "c": np.zeros_like(c), "d": rd}
    syn.write_davis(os.path.join(root, "DAVIS"), gt, tasks=(SEMI,), mode="L")
    _keep(arrays, "gt", gt)
    syn.write_davis_results(os.path.join(root, "semi"), {"a": ra}, skip=(0, -1))
    syn.write_davis_results(os.path.join(root, "semi"), {k: v for k, v in res.items() if k != "a"}, mode="L")
    _keep(arrays, "semi", res)
    return [_job(SEMI)]


@case("davis", "tiny objects of 1-3 pixels (moving), tiny results, misses by one pixel")
def _tiny(root, arrays):
    gt = {"tiny": syn.render_sequence(9, 21, 29, 0, seed=80, tiny=4),
          "tiny2": syn.render_sequence(7, 9, 11, 1, seed=81, tiny=2, size=(0.05, 0.1))}
    semi = {"tiny": syn.perturb(gt["tiny"], seed=1, shift=(1, 0)), "tiny2": syn.perturb(gt["tiny2"], seed=2, dilate=1)}
    unsup = {k: syn.proposals(syn.perturb(v, seed=5, shift=(0, 1)), 5, seed=3) for k, v in gt.items()}
    void = {"tiny": syn.void_mask(gt["tiny"], band=1), "tiny2": syn.void_mask(gt["tiny2"], band=0, boxes=2)}
    _davis(root, arrays, gt, void=void, semi=semi, unsup_res=unsup)
    return [_job(SEMI), _job(UNSUP)]


@case("davis", "Decay's uint8 bins: sequences whose evaluated frames number 3, 256, 257, 298, 299, 300 and 400 "
      "(semi-supervised drops two), 300 and 301 frames unsupervised (the statistics are also checked "
      "in the quick tier from the stored per-frame values)", slow=True)
def _decay(root, arrays):
    gt, semi, unsup = {}, {}, {}
    for i, n in enumerate([5, 258, 259, 302, 402]):
        g = syn.render_sequence(n, 4, 5, 2, seed=90 + i, deforming=True)
        gt[f"len{n}"] = g
        semi[f"len{n}"] = syn.perturb(g, seed=i, jitter=1, noise=0.05)
        unsup[f"len{n}"] = syn.proposals(syn.perturb(g, seed=i + 10, jitter=1), 3, seed=i)
    g = syn.render_sequence(301, 4, 5, 2, seed=99)
    gt["len301"] = g
    semi["len301"] = syn.perturb(g, seed=9, noise=0.1)
    unsup["len301"] = syn.proposals(g, 2, seed=9)
    gt["len300u"] = syn.render_sequence(300, 3, 4, 1, seed=98)
    semi["len300u"] = syn.perturb(gt["len300u"], seed=8, noise=0.1)
    unsup["len300u"] = syn.proposals(syn.perturb(gt["len300u"], seed=8, noise=0.1), 2, seed=8)
    _davis(root, arrays, gt, semi=semi, unsup_res=unsup)
    return [_job(SEMI), _job(UNSUP)]


@case("davis", "unsupervised matching: more proposals than objects (rows in matched-proposal order, "
      "names seq_1.. by row), fewer proposals than objects (padding), a permutation of the ground truth, "
      "all-empty proposals, exactly 20 proposals, duplicate proposals, fully void frames, ties between "
      "matchings whose rows differ (empty proposals for a vanishing and a steady object); "
      "matching on J only and on F only")
def _matching(root, arrays):
    base = syn.render_sequence(8, 18, 22, 3, seed=100, touching=True)
    two = syn.render_sequence(8, 18, 22, 2, seed=101)
    tie = syn.render_sequence(9, 12, 14, 2, seed=102, vanishing=(2, 6))
    gt = {"many": two, "few": base, "perm": base, "empty": base, "twenty": two, "dups": two, "voidall": two,
          "tie": tie, "tie3": base}
    many = syn.proposals(syn.perturb(two, seed=1, jitter=1), 7, seed=1)
    few = syn.proposals(base, 1, seed=2)
    perm = syn.perturb(base, relabel={1: 3, 2: 1, 3: 2})
    twenty = syn.proposals(syn.perturb(two, seed=3, dilate=1), 20, seed=3)
    dups = syn.perturb(two, relabel={1: 4, 2: 2})  # proposal 4 = object 1, 2 = object 2 ...
    dups[:, :, :11][two[:, :, :11] == 1] = 1  # ... and proposal 1 = the left part of object 1, 3 none
    voidall = syn.proposals(two, 3, seed=4)
    void = {"voidall": np.zeros(two.shape, bool), "empty": syn.void_mask(base, band=1)}
    void["voidall"][[2, 5]] = True
    void["voidall"][3, :9] = True
    # tie: the result is empty, so both objects go to padded (empty) proposals; which one gets
    # which (the rows' order) is the solver's choice, and the rows differ (object 2 vanishes)
    # tie3: proposals 2 and 3 are empty, equally good for object 2 (the same rows either way)
    tie3 = syn.perturb(base, missing=[2, 3])
    tie3[4:][base[4:] == 3] = 4
    res = {"many": many, "few": few, "perm": perm, "empty": np.zeros_like(base), "twenty": twenty, "dups": dups,
           "voidall": voidall, "tie": np.zeros_like(tie), "tie3": tie3}
    _davis(root, arrays, gt, void=void, unsup_res=res, tasks=(UNSUP,))
    return [_job(UNSUP, full=True), _job(UNSUP, label="unsup_J", metric=["J"]),
            _job(UNSUP, label="unsup_F", metric=["F"], full=True)]


@case("davis", "DAVISEvaluation arguments: sequences given as a list (its order) and as a string, "
      "codalab=True without JPEGs, metric='J' (a string), metric=('F',), subset test-dev (ImageSets/2019 for "
      "the unsupervised task), a duplicated ImageSets line")
def _arguments(root, arrays):
    x = syn.render_sequence(6, 10, 12, 2, seed=110)
    y = syn.render_sequence(5, 10, 12, 1, seed=111)
    gt = {"x": x, "y": y}
    semi = {"x": syn.perturb(x, seed=1, jitter=1), "y": syn.perturb(y, seed=2, dilate=1)}
    unsup = {"x": syn.proposals(x, 3, seed=3), "y": syn.proposals(y, 2, seed=4)}
    _davis(root, arrays, gt, semi=semi, unsup_res=unsup, imageset=["y", "x", "y"])
    syn.write_davis(os.path.join(root, "DAVIS"), gt, subset="test-dev", imageset=["x", "y"])
    syn.write_davis(os.path.join(root, "NOJPG"), gt, images="none")
    return [_job(SEMI, label="semi_list", sequences=["x", "y"]), _job(SEMI, label="semi_str", sequences="x"),
            _job(SEMI, label="semi_dup"), _job(SEMI, label="semi_metric_str", metric="J"),
            _job(SEMI, label="semi_F", metric=["F"]),
            _job(UNSUP, label="unsup_testdev", subset="test-dev"), _job(SEMI, label="semi_testdev", subset="test-dev"),
            _job(SEMI, label="codalab", davis_root="NOJPG", codalab=True),
            _job(SEMI, label="nojpg_refused", davis_root="NOJPG")]


@case("davis", "where the official code stops: index above the object count (sys.exit), more than 20 "
      "proposals (sys.exit), a missing result frame (sys.exit), a result of another size, an RGB result, "
      "fewer annotation PNGs than JPEGs, a 2-frame sequence (no frame left), a blank ImageSets line, bad "
      "subset / task / metric, a missing root")
def _errors(root, arrays):
    g = syn.render_sequence(5, 8, 10, 2, seed=120)
    _keep(arrays, "gt", {"g": g})
    syn.write_davis(os.path.join(root, "DAVIS"), {"g": g})
    syn.write_davis_results(os.path.join(root, "above"), {"g": syn.perturb(g, seed=1, spurious=1, spurious_id=3)})
    syn.write_davis_results(os.path.join(root, "p21"), {"g": syn.proposals(g, 21, seed=2)})
    syn.write_davis_results(os.path.join(root, "hole"), {"g": g}, skip=[2])
    syn.write_davis_results(os.path.join(root, "size"), {"g": g})
    syn.write_label_png(os.path.join(root, "size", "g", "00002.png"), np.zeros((8, 11), np.uint8))
    syn.write_davis_results(os.path.join(root, "rgb"), {"g": g}, mode="RGB")
    # an annotation missing (fewer PNGs than JPEGs)
    syn.write_davis(os.path.join(root, "HOLE"), {"g": g})
    os.remove(os.path.join(root, "HOLE", "Annotations", "480p", "g", "00004.png"))
    os.remove(os.path.join(root, "HOLE", "Annotations_unsupervised", "480p", "g", "00004.png"))
    short = syn.render_sequence(2, 8, 10, 1, seed=121)
    _keep(arrays, "short", {"short": short})
    syn.write_davis(os.path.join(root, "SHORT"), {"short": short})
    syn.write_davis_results(os.path.join(root, "short"), {"short": short})
    syn.write_davis(os.path.join(root, "BLANK"), {"g": g}, imageset=["g", ""])
    return [_job(SEMI, label="semi_above", res="above"), _job(UNSUP, label="unsup_21", res="p21"),
            _job(SEMI, label="semi_hole", res="hole"), _job(SEMI, label="semi_size", res="size"),
            _job(UNSUP, label="unsup_size", res="size"), _job(SEMI, label="semi_rgb", res="rgb"),
            _job(SEMI, label="annotation_missing", davis_root="HOLE", res="size"),
            _job(SEMI, label="semi_two_frames", davis_root="SHORT", res="short"),
            _job(UNSUP, label="unsup_two_frames", davis_root="SHORT", res="short"),
            _job(SEMI, label="blank_line", davis_root="BLANK", res="size"),
            _job(SEMI, label="bad_subset", subset="validation", res="size"),
            _job("semisupervised", label="bad_task", res="size"),
            _job(SEMI, label="bad_metric", metric=["T"], res="size"),
            _job(SEMI, label="no_metric", metric=["B"], res="size"),
            _job(SEMI, label="missing_root", davis_root="NOWHERE", res="size")]


@case("davis", "realistic size: 480x854 (semi and unsupervised, void band)", slow=True)
def _real480(root, arrays):
    gt = {f"r{i}": syn.render_sequence(6, 480, 854, 3, seed=130 + i, deforming=bool(i), touching=True)
          for i in range(2)}
    void = {k: syn.void_mask(v, band=2) for k, v in gt.items()}
    semi = {k: syn.perturb(v, seed=i, jitter=3, dilate=2, noise=0.001) for i, (k, v) in enumerate(gt.items())}
    unsup = {k: syn.proposals(syn.perturb(v, seed=i, jitter=2), 5, seed=i) for i, (k, v) in enumerate(gt.items())}
    _davis(root, arrays, gt, void=void, semi=semi, unsup_res=unsup)
    return [_job(SEMI, method_script=True), _job(UNSUP)]


@case("davis", "realistic size: 1080x1920 (semi and unsupervised)", slow=True)
def _real1080(root, arrays):
    g = syn.render_sequence(4, 1080, 1920, 2, seed=140, deforming=True, edges=True)
    gt = {"hd": g}
    _davis(root, arrays, gt, void={"hd": syn.void_mask(g, band=3)},
           semi={"hd": syn.perturb(g, seed=1, jitter=4, erode=2, noise=0.0005)},
           unsup_res={"hd": syn.proposals(syn.perturb(g, seed=2, dilate=3), 4, seed=2)})
    return [_job(SEMI), _job(UNSUP)]


# ----------------------------------------------------------------------------
# SA-V (both layouts), each with skip_first_and_last True and False
# ----------------------------------------------------------------------------

def _sav_jobs(label="", gt="gt", pred="pred", vos=False, **kw):
    return [dict(kind="sav", label=f"{label}skip{int(s)}", gt_root=gt, pred_root=pred, skip_first_and_last=s,
                 per_frame=True, vos_benchmark=vos, **kw) for s in (True, False)]


@case("sav", "per-object layout: every 4th frame annotated, predictions on every frame (extra frames "
      "ignored); a late object whose folder starts at its first appearance; vanishing objects; predictions "
      "that appear before the ground truth; missing, dilated, shifted predictions")
def _sav_basic(root, arrays):
    vids = {"v1": syn.render_sequence(25, 24, 32, 2, seed=200, late=1),
            "v2": syn.render_sequence(21, 20, 20, 3, seed=201, vanishing=True, deforming=True),
            "v3": syn.render_sequence(17, 13, 31, 2, seed=202, touching=True)}
    preds = {"v1": syn.perturb(vids["v1"], seed=1, jitter=1),
             "v2": syn.perturb(vids["v2"], seed=2, dilate=1, missing=[3], missing_frames=(10, 21)),
             "v3": syn.perturb(vids["v3"], seed=3, shift=(1, 2), empty_frames=[8])}
    # in v1 the late object (3) is predicted from the first frame on
    preds["v1"][:, 0:3, 0:3] = 3
    every4 = {k: list(range(0, v.shape[0], 4)) for k, v in vids.items()}
    for k, v in vids.items():
        syn.write_sav(os.path.join(root, "gt"), {k: v}, frames=every4[k], span=True)
        syn.write_sav(os.path.join(root, "pred"), {k: preds[k]},
                      objects={k: [int(i) for i in np.unique(v) if i]})
    _keep(arrays, "gt", vids)
    _keep(arrays, "pred", preds)
    return _sav_jobs()


@case("sav", "DAVIS-like layout (indexed PNGs): ids 3, 11 and 200 (keys ints, in the set's order), "
      "255 as an object, predictions of ids the ground truth never has (not reported), an object predicted "
      "before it appears, sparse annotated frames; vos-benchmark on the same folders")
def _sav_davislayout(root, arrays):
    a = syn.render_sequence(14, 19, 23, 2, seed=210, late=1, ids=[11, 3, 200])
    b = syn.render_sequence(12, 16, 16, 2, seed=211, ids=[255, 9], vanishing=True)
    c = syn.render_sequence(10, 9, 12, 2, seed=212, ids=[1, 17])
    vids = {"alpha": a, "beta": b, "gamma": c}
    preds = {"alpha": syn.perturb(a, seed=1, jitter=1, spurious=1, spurious_id=42),
             "beta": syn.perturb(b, seed=2, erode=1),
             "gamma": syn.perturb(c, seed=3, dilate=1, relabel={17: 9})}
    preds["alpha"][:2][a[:2] == 0] = 0
    preds["alpha"][0:2, -2:, -2:] = 200  # the late object, predicted in the first two frames
    syn.write_sav(os.path.join(root, "gt"), {k: v for k, v in vids.items() if k != "gamma"}, layout="davis")
    syn.write_sav(os.path.join(root, "gt"), {"gamma": c}, layout="davis", frames=[0, 3, 6, 9])
    syn.write_sav(os.path.join(root, "pred"), preds, layout="davis")
    _keep(arrays, "gt", vids)
    _keep(arrays, "pred", preds)
    return _sav_jobs(vos=True)


@case("sav", "odd frame sizes 1x1, 1x9, 9x1, 7x5 in both layouts; tiny objects")
def _sav_sizes(root, arrays):
    vids = {f"s{h}x{w}": syn.render_sequence(7, h, w, 2, seed=220 + i, tiny=1)
            for i, (h, w) in enumerate([(1, 1), (1, 9), (9, 1), (7, 5)])}
    preds = {k: syn.perturb(v, seed=i, jitter=1, noise=0.1) for i, (k, v) in enumerate(vids.items())}
    for k, v in vids.items():
        ids = [int(i) for i in np.unique(v) if i]
        syn.write_sav(os.path.join(root, "gt"), {k: v})
        syn.write_sav(os.path.join(root, "pred"), {k: preds[k]}, objects={k: ids})
    syn.write_sav(os.path.join(root, "gtd"), vids, layout="davis")
    syn.write_sav(os.path.join(root, "predd"), preds, layout="davis")
    _keep(arrays, "gt", vids)
    _keep(arrays, "pred", preds)
    return _sav_jobs() + _sav_jobs("davis_", "gtd", "predd", vos=True)


@case("sav", "per-object folder names that are not three digits ('7', 'a', '0012'): the results.csv "
      "formats them with {:03} (a string is padded on the right); palette and 0/1 PNGs")
def _sav_names(root, arrays):
    v = syn.render_sequence(9, 12, 15, 3, seed=230)
    p = syn.perturb(v, seed=1, jitter=1)
    names = {1: "7", 2: "a", 3: "0012"}
    syn.write_sav(os.path.join(root, "gt"), {"vid": v}, object_names=names, value=1, mode="P")
    syn.write_sav(os.path.join(root, "pred"), {"vid": p}, object_names=names, objects={"vid": [1, 2, 3]})
    _keep(arrays, "gt", {"vid": v})
    _keep(arrays, "pred", {"vid": p})
    return _sav_jobs()


@case("sav", "long videos (300 frames, tiny frames) in both layouts")
def _sav_long(root, arrays):
    v = syn.render_sequence(300, 4, 6, 2, seed=240, deforming=True, late=1)
    p = syn.perturb(v, seed=1, jitter=1, noise=0.05)
    syn.write_sav(os.path.join(root, "gt"), {"long": v}, span=True)
    syn.write_sav(os.path.join(root, "pred"), {"long": p}, objects={"long": [1, 2, 3]})
    syn.write_sav(os.path.join(root, "gtd"), {"long": v}, layout="davis")
    syn.write_sav(os.path.join(root, "predd"), {"long": p}, layout="davis")
    _keep(arrays, "gt", {"long": v})
    _keep(arrays, "pred", {"long": p})
    return _sav_jobs() + _sav_jobs("davis_", "gtd", "predd")


@case("sav", "where sav_benchmark stops or surprises: a missing prediction frame, another size, two "
      "objects in one per-object PNG, an object absent from every evaluated frame (AssertionError with "
      "the skip, not without), one- and two-frame objects, strict with a missing / an extra video (exit), "
      "strict=False with them, an empty video folder, no video at all")
def _sav_errors(root, arrays):
    v = syn.render_sequence(6, 8, 9, 2, seed=250)
    _keep(arrays, "gt", {"v": v})
    syn.write_sav(os.path.join(root, "gt"), {"v": v})
    syn.write_sav(os.path.join(root, "hole"), {"v": v})
    os.remove(os.path.join(root, "hole", "v", "001", "00003.png"))
    syn.write_sav(os.path.join(root, "size"), {"v": v})
    syn.write_mask_png(os.path.join(root, "size", "v", "000", "00002.png"), np.ones((8, 10)))
    syn.write_sav(os.path.join(root, "two"), {"v": v})
    syn.write_label_png(os.path.join(root, "two", "v", "000", "00002.png"), v[2])
    # an object visible only in the first and last annotated frames
    edge = v.copy()
    edge[1:-1][edge[1:-1] == 2] = 0
    syn.write_sav(os.path.join(root, "gt_edge"), {"v": edge})
    syn.write_sav(os.path.join(root, "pred_edge"), {"v": v})
    _keep(arrays, "edge", {"v": edge})
    # objects annotated in one and two frames only
    syn.write_sav(os.path.join(root, "gt_short"), {"v": v}, frames=[0])
    syn.write_sav(os.path.join(root, "gt_short"), {"w": v}, frames=[2, 3])
    syn.write_sav(os.path.join(root, "pred_short"), {"v": v, "w": v})
    # strict: an extra / a missing video
    syn.write_sav(os.path.join(root, "pred_extra"), {"v": v, "x": v})
    syn.write_sav(os.path.join(root, "gt_two"), {"v": v, "w": v})
    # an empty video folder in both; no video at all
    syn.write_sav(os.path.join(root, "gt_empty"), {"v": v})
    syn.write_sav(os.path.join(root, "pred_empty"), {"v": v})
    os.makedirs(os.path.join(root, "gt_empty", "e"))
    os.makedirs(os.path.join(root, "pred_empty", "e"))
    os.makedirs(os.path.join(root, "none_gt"))
    os.makedirs(os.path.join(root, "none_pred"))
    j = []
    for label, gt, pred, extra in [("hole_", "gt", "hole", {}), ("size_", "gt", "size", {}),
                                   ("two_", "gt", "two", {}), ("edge_", "gt_edge", "pred_edge", {}),
                                   ("short_", "gt_short", "pred_short", {}),
                                   ("extra_strict_", "gt", "pred_extra", {}),
                                   ("extra_loose_", "gt", "pred_extra", {"strict": False}),
                                   ("missing_strict_", "gt_two", "gt", {}),
                                   ("missing_loose_", "gt_two", "gt", {"strict": False}),
                                   ("empty_", "gt_empty", "pred_empty", {}), ("none_", "none_gt", "none_pred", {})]:
        j += _sav_jobs(label, gt, pred, **extra)
    return j


@case("sav", "realistic sizes: 480x854 and 1080x1920 in the DAVIS-like layout, 480x854 per object", slow=True)
def _sav_real(root, arrays):
    a = syn.render_sequence(6, 480, 854, 3, seed=260, deforming=True, touching=True)
    b = syn.render_sequence(4, 1080, 1920, 2, seed=261, edges=True)
    pa, pb = syn.perturb(a, seed=1, jitter=3, dilate=2), syn.perturb(b, seed=2, jitter=4, erode=2, noise=0.0005)
    syn.write_sav(os.path.join(root, "gt"), {"a": a, "b": b}, layout="davis")
    syn.write_sav(os.path.join(root, "pred"), {"a": pa, "b": pb}, layout="davis")
    syn.write_sav(os.path.join(root, "gts"), {"a": a})
    syn.write_sav(os.path.join(root, "preds"), {"a": pa}, objects={"a": [1, 2, 3]})
    _keep(arrays, "gt", {"a": a, "b": b})
    _keep(arrays, "pred", {"a": pa, "b": pb})
    return _sav_jobs() + _sav_jobs("sav_", "gts", "preds")


# ----------------------------------------------------------------------------
# what the tests of the stored values share
# ----------------------------------------------------------------------------
TOL = 1e-12
#: where the golden files are
DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "video")


def golden(name):
    """The stored golden file ``tests/data/video/<name>``."""
    with open(os.path.join(DATA, name)) as f:
        return json.load(f)


def stored_job(get, doc, name, k):
    """``(job, stored result)`` of job ``k`` of case ``name`` of the golden ``doc``,
    the job as ``get`` (:meth:`Cases.builder`'s) built it, after checking that the
    generator still makes the data the golden values were made on."""
    root, jobs, fp = get(name)
    assert fp == doc["cases"][name]["fingerprint"], "the generator no longer makes the stored data"
    return jobs[k], doc["cases"][name]["jobs"][k]["result"]


def num(x):
    """A stored number (non-finite floats are stored as strings)."""
    if isinstance(x, str):
        return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}[x]
    return x


def close(a, b, tol=TOL):
    """Numbers (or nested lists / arrays) equal to ``tol``, NaN equal to NaN."""
    if isinstance(a, (list, tuple, np.ndarray)) or isinstance(b, (list, tuple, np.ndarray)):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b))
    a, b = float(num(a)), float(num(b))
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= tol


def job_params(doc):
    """``(case, job index)`` of every stored job, as pytest parameters (slow cases marked)."""
    import pytest

    out = []
    for name, c in doc["cases"].items():
        for k, j in enumerate(c["jobs"]):
            marks = [pytest.mark.slow] if c["slow"] else []
            out.append(pytest.param(name, k, id=f"{name}-{j['job']['label']}", marks=marks))
    return out


def need(names):
    """Skip the calling test unless every environment variable of ``names`` is set
    (the live comparisons with official checkouts)."""
    import pytest

    missing = [n for n in names if not os.environ.get(n)]
    if missing:
        pytest.skip(f"no official checkout: set {', '.join(missing)}")
