"""The generated MOSEv2 and LVOS cases behind tests/data/video/mosev2_golden.json
and lvos_golden.json.

As in ``vos_cases.py``: each case writes its files under a folder with
:mod:`boundary_api.video.synthetic` and returns the official runs ("jobs") to
make on them and the label arrays it wrote (fingerprinted).
``make_mose_lvos_golden.py`` runs MOSE-api's ``score.py`` and lvos-evaluation on
the jobs; the tests rebuild the same files and compare boundary_api.video (and
the oracle) with the stored results.  Job paths are relative to the case's folder.
"""
import os

import numpy as np

from boundary_api.video import synthetic as syn

from vos_cases import Cases, _keep, fingerprint  # noqa: F401  (the tests import fingerprint from here too)

CASES = Cases(("meta", "ann", "pred", "lvos_root", "res_path", "cwd", "unseen_videos", "unsupervised_videos"))
case, absolute, relative, build, builder = CASES.case, CASES.absolute, CASES.relative, CASES.build, CASES.builder


def _gone(labels, obj, a, b):
    """``labels`` with object ``obj`` removed from frames [a, b)."""
    out = np.array(labels)
    seg = out[a:b]
    seg[seg == obj] = 0
    return out


def _mjob(label, meta="gt/meta.json", ann="gt/Annotations", pred="pred", strict=True, **kw):
    j = dict(kind="mosev2", label=label, meta=meta, ann=ann, pred=pred, strict=strict)
    j.update(kw)
    return j


def _mose_set(root, arrays, gt, pred, gt_kw=(), **pred_kw):
    """``gt`` written as a MOSEv2 ground truth in root/gt (``gt_kw``: write_mosev2's
    options), ``pred`` as its predictions in root/pred, both kept in ``arrays``."""
    syn.write_mosev2(os.path.join(root, "gt"), gt, **dict(gt_kw))
    syn.write_mosev2_predictions(os.path.join(root, "pred"), pred, **pred_kw)
    _keep(arrays, "gt", gt)
    _keep(arrays, "pred", pred)


# ----------------------------------------------------------------------------
# MOSEv2
# ----------------------------------------------------------------------------

@case("mosev2", "disappear / reappear segments (two absences, an absence at the first evaluated frame, one "
      "to the end), late objects, tiny objects (adaptive radius 1 and 2 under a fractional cap), large "
      "objects (the uncut cap's off-centre disk), frame-edge, deforming and touching objects; 255 as an object "
      "id, an unlisted id in the ground truth, a listed id never present; predictions shifted, jittered, grown, "
      "eroded, noisy, with lost objects, empty frames and spurious ids; frame sizes 96x128, 200x260, 150x201")
def _mose_basic(root, arrays):
    a = syn.render_sequence(16, 96, 128, objects=3, seed=11, vanishing=(5, 9), tiny=2, deforming=True)
    a = _gone(a, 1, 11, 13)
    b = syn.render_sequence(14, 200, 260, objects=3, seed=12, late=1, edges=True, size=(0.02, 0.45))
    b = _gone(b, 2, 0, 4)
    b = _gone(b, 3, 9, 14)
    c = syn.render_sequence(12, 150, 201, objects=3, seed=13, touching=True, ids=[3, 255, 7], vanishing=(0, 3))
    c[:, 5:9, 5:40] = 9 * (c[:, 5:9, 5:40] == 0)           # an id the meta does not list
    gt = {"a": a, "b": b, "c": c}
    pred = {"a": syn.perturb(a, seed=1, shift=(1, -1), jitter=1, dilate=1, noise=0.002, missing=[2],
                             missing_frames=(3, 7)),
            "b": syn.perturb(b, seed=2, erode=1, jitter=2, spurious=1, empty_frames=[6]),
            "c": syn.perturb(c, seed=3, shift=(0, 2), noise=0.01, relabel={3: 7, 7: 3})}
    _mose_set(root, arrays, gt, pred, gt_kw={"objects": {"c": [3, 255, 7, 40]}})
    return [_mjob("basic")]


@case("mosev2", "the meta's objects as a list, null height and width (the first frame's size), 8-bit "
      "greyscale predictions, a submission folder descended into, frames 0 to 4 only (3 evaluated), a "
      "video with no object in any frame")
def _mose_layout(root, arrays):
    a = syn.render_sequence(10, 64, 90, objects=2, seed=21, tiny=1)
    b = syn.render_sequence(5, 70, 70, objects=1, seed=22, size=(0.3, 0.45))
    e = np.zeros((6, 40, 50), np.uint8)
    gt = {"vid_a": a, "vid_b": b, "empty": e}
    pred = {"vid_a": syn.perturb(a, seed=4, dilate=2), "vid_b": syn.perturb(b, seed=5, shift=(2, 2)),
            "empty": syn.perturb(e, seed=6, spurious=1, spurious_id=1)}
    _mose_set(root, arrays, gt, pred, gt_kw={"objects_as": "list", "sizes": {"vid_b": None},
                                             "objects": {"empty": [1, 2]}}, wrap="submission", mode="L")
    return [_mjob("layout")]


@case("mosev2", "what score.py scores silently: a missing prediction frame (the later frames shift), a video "
      "without a prediction folder (scored 0), 1- and 2-frame videos (no frame evaluated: 0), a single-video "
      "set whose prediction root is descended into (every video 0)")
def _mose_silent(root, arrays):
    a = syn.render_sequence(9, 48, 64, objects=2, seed=31, vanishing=(3, 5))
    b = syn.render_sequence(6, 48, 64, objects=1, seed=32)
    one, two = a[:1], a[:2]
    gt = {"shifted": a, "nopred": b, "one": one, "two": two}
    pred = {"shifted": syn.perturb(a, seed=7, jitter=1), "one": one, "two": two}
    _mose_set(root, arrays, gt, pred, skip={"shifted": [4]})
    syn.write_mosev2(os.path.join(root, "single"), {"solo": b})
    syn.write_mosev2_predictions(os.path.join(root, "single_pred"), {"solo": syn.perturb(b, seed=8, dilate=1)})
    return [_mjob("silent", strict=False),
            _mjob("single", meta="single/meta.json", ann="single/Annotations", pred="single_pred", strict=False)]


@case("mosev2", "score.py stops: a meta length other than the folder's file count, a prediction of another "
      "size, a ground-truth video missing from the meta, a prediction frame named without a number, too few "
      "prediction frames")
def _mose_errors(root, arrays):
    a = syn.render_sequence(6, 40, 48, objects=1, seed=41)
    big = syn.render_sequence(6, 42, 48, objects=1, seed=41)
    syn.write_mosev2(os.path.join(root, "len"), {"v": a}, lengths={"v": 7})
    # (a second folder in each prediction root: score.py descends into a root holding one folder)
    syn.write_mosev2_predictions(os.path.join(root, "pred"), {"v": a, "other": a})
    syn.write_mosev2(os.path.join(root, "size"), {"v": a})
    syn.write_mosev2_predictions(os.path.join(root, "pred_big"), {"v": big, "other": a})
    syn.write_mosev2(os.path.join(root, "nometa"), {"v": a})
    syn.write_mosev2(os.path.join(root, "nometa_other"), {"w": a})
    os.replace(os.path.join(root, "nometa_other", "meta.json"), os.path.join(root, "nometa", "meta.json"))
    syn.write_mosev2_predictions(os.path.join(root, "pred_names"), {"v": a, "other": a},
                                 names={"v": ["00000", "00001", "x2", "00003", "00004", "00005"]})
    syn.write_mosev2_predictions(os.path.join(root, "pred_short"), {"v": a[:4], "other": a})
    _keep(arrays, "gt", {"v": a, "big": big})
    return [_mjob("length", meta="len/meta.json", ann="len/Annotations"),
            _mjob("size", meta="size/meta.json", ann="size/Annotations", pred="pred_big"),
            _mjob("no_meta_entry", meta="nometa/meta.json", ann="nometa/Annotations"),
            _mjob("frame_name", meta="size/meta.json", ann="size/Annotations", pred="pred_names"),
            _mjob("short", meta="size/meta.json", ann="size/Annotations", pred="pred_short")]


def _real(root, arrays, h, w, frames, seed):
    gt, pred = {}, {}
    for k in range(2):
        g = syn.render_sequence(frames, h, w, objects=3, seed=seed + k, tiny=1, vanishing=(1, 3),
                                size=(0.01, 0.3), deforming=bool(k))
        gt[f"r{k}"] = g
        pred[f"r{k}"] = syn.perturb(g, seed=seed + k, jitter=2, dilate=1, noise=0.0005)
    _mose_set(root, arrays, gt, pred)
    return [_mjob(f"{h}p")]


@case("mosev2", "854x480 (the cap's disk(7.837)), small and large objects, 6 frames")
def _mose_real480(root, arrays):
    return _real(root, arrays, 480, 854, 6, 50)


@case("mosev2", "1920x1080 (disk(17.623)), 5 frames", slow=True)
def _mose_real1080(root, arrays):
    return _real(root, arrays, 1080, 1920, 5, 60)


# ----------------------------------------------------------------------------
# LVOS
# ----------------------------------------------------------------------------

def _ljob(label, task="semi-supervised", res="res", codalab=False, metric=("J", "F", "V"), method=False, **kw):
    j = dict(kind="lvos", label=label, lvos_root="LVOS", task=task, gt_set="valid", codalab=codalab,
             res_path=res, metric=list(metric), cwd="lists", method_script=method)
    j.update(kw)
    return j


def _lvos_set(root, arrays, gt, pred, *, unseen=(), unsupervised=(), objects=None, numbers=None, subset="valid"):
    syn.write_lvos(os.path.join(root, "LVOS"), gt, subset=subset, objects=objects, numbers=numbers, unseen=unseen,
                   unsupervised=unsupervised, lists_in=os.path.join(root, "lists"))
    syn.write_lvos_results(os.path.join(root, "res"), pred, numbers=numbers)
    _keep(arrays, "gt", gt)
    _keep(arrays, "pred", pred)


@case("lvos", "objects with their own frame ranges (late start, early end, absent inside), perturbed results, "
      "seen and unseen videos, evaluation_method.py's CSV files")
def _lvos_basic(root, arrays):
    a = syn.render_sequence(16, 96, 128, objects=2, seed=71, vanishing=(6, 9), late=1, tiny=1)
    a = _gone(a, 2, 12, 16)
    b = syn.render_sequence(13, 120, 160, objects=3, seed=72, deforming=True, touching=True)
    c = syn.render_sequence(11, 80, 100, objects=2, seed=73, edges=True)
    gt = {"vidB": b, "vidA": a, "vidC": c}
    pred = {"vidA": syn.perturb(a, seed=1, jitter=1, dilate=1, noise=0.003),
            "vidB": syn.perturb(b, seed=2, shift=(2, -1), missing=[3], missing_frames=(5, 9)),
            "vidC": syn.perturb(c, seed=3, erode=1, empty_frames=[4])}
    _lvos_set(root, arrays, gt, pred, unseen=["vidB"], unsupervised=["vidA"])
    return [_ljob("semi", method=True), _ljob("semi_JF", metric=("J", "F")), _ljob("semi_J", metric="J"),
            _ljob("semi_FV", metric=("F", "V"))]


@case("lvos", "string frame numbers, a range yielding fewer frames than frame_nums (trailing zeros), "
      "frame_nums 2 (no frame evaluated: NaN), frame_nums 3, 255 and an unlisted id in the ground truth, "
      "object keys out of order, no unseen video (NaN halves), codalab=True (the lists in the root)")
def _lvos_quirks(root, arrays):
    a = syn.render_sequence(12, 64, 80, objects=3, seed=81, ids=[1, 2, 255], tiny=0)
    a[:, 0:3, 0:10] = 4
    b = syn.render_sequence(8, 60, 60, objects=2, seed=82)
    gt = {"q1": a, "q2": b}
    pred = {"q1": syn.perturb(a, seed=4, jitter=1, dilate=1), "q2": syn.perturb(b, seed=5, noise=0.01)}
    objects = {"q1": {"2": {"frame_range": {"start": "00000005", "end": "00000051", "frame_nums": 12}},
                      "1": {"frame_range": {"start": 0, "end": 56, "frame_nums": "12"}},
                      "255": {"frame_range": {"start": 10, "end": 21, "frame_nums": 3}}},
               "q2": {"1": {"frame_range": {"start": 0, "end": 6, "frame_nums": 2}},
                      "2": {"frame_range": {"start": 5, "end": 36, "frame_nums": 7}}}}
    _lvos_set(root, arrays, gt, pred, unseen=[], objects=objects)
    syn.write_lvos(os.path.join(root, "LVOS_codalab"), gt, objects=objects, unseen=["q2"], unsupervised=["q1"])
    syn.write_lvos_results(os.path.join(root, "res_codalab"), pred)
    return [_ljob("quirks", method=True),
            _ljob("codalab", lvos_root="LVOS_codalab", res="res_codalab", codalab=True, cwd=None, method=False)]


@case("lvos", "unsupervised_multiple (proposals 1..20 and above, more proposals than objects, matching) and "
      "unsupervised_single (salient masks 0/255, 0/1, maps thresholded at 127, empty)")
def _lvos_unsup(root, arrays):
    a = syn.render_sequence(10, 60, 80, objects=3, seed=91, vanishing=(3, 6))
    b = syn.render_sequence(9, 50, 70, objects=2, seed=92)
    gt = {"u1": a, "u2": b}
    prop = {"u1": syn.proposals(a, 23, seed=1), "u2": syn.proposals(b, 4, seed=2)}
    _lvos_set(root, arrays, gt, prop, unseen=["u2"], unsupervised=["u1", "u2", "absent"])
    sal = {"u1": (a > 0).astype(np.uint8) * 255, "u2": (b > 0).astype(np.uint8)}
    sal["u1"][2] = 0
    sal["u2"][3] = np.where(b[3] > 0, 200, 30).astype(np.uint8)
    sal["u2"][3][:2, :2] = 0
    sal["u2"][4] = (np.arange(50 * 70).reshape(50, 70) % 256).astype(np.uint8)
    syn.write_lvos_results(os.path.join(root, "salient"), sal)
    bad = {k: np.array(v) for k, v in sal.items()}
    bad["u1"][4] = np.where(a[4] > 0, 200, 30).astype(np.uint8)
    syn.write_lvos_results(os.path.join(root, "salient_bad"), bad)
    _keep(arrays, "salient", sal)
    _keep(arrays, "salient_bad", bad)
    return [_ljob("multiple", task="unsupervised_multiple"),
            _ljob("single", task="unsupervised_single", res="salient"),
            _ljob("single_unknown_value", task="unsupervised_single", res="salient_bad")]


@case("lvos", "lvos-evaluation stops: a missing result frame (sys.exit, status 0), an object without "
      "frame_nums, a range yielding more frames than frame_nums, a result of another size, no unseen list")
def _lvos_errors(root, arrays):
    a = syn.render_sequence(8, 40, 50, objects=1, seed=95)
    gt = {"e": a}
    _lvos_set(root, arrays, gt, {"e": a})
    syn.write_lvos_results(os.path.join(root, "res_missing"), {"e": a}, skip={"e": [3]})
    syn.write_lvos_results(os.path.join(root, "res_big"), {"e": syn.render_sequence(8, 41, 50, 1, seed=95)})
    syn.write_lvos(os.path.join(root, "LVOS_nonums"), gt, objects={"e": {"1": {"frame_range": {"start": 0,
                                                                                           "end": 40}}}})
    syn.write_lvos(os.path.join(root, "LVOS_long"), gt, objects={"e": {"1": {"frame_range": {
        "start": 0, "end": 40, "frame_nums": 5}}}})
    return [_ljob("missing_frame", res="res_missing"), _ljob("no_frame_nums", lvos_root="LVOS_nonums"),
            _ljob("range_too_long", lvos_root="LVOS_long"), _ljob("other_size", res="res_big"),
            _ljob("no_unseen_list", cwd="LVOS/Annotations")]


@case("lvos", "854x480 frames, three objects with their own ranges")
def _lvos_real480(root, arrays):
    g = syn.render_sequence(7, 480, 854, objects=3, seed=99, tiny=1, late=1, size=(0.02, 0.3))
    _lvos_set(root, arrays, {"big": g}, {"big": syn.perturb(g, seed=9, jitter=2, dilate=1)}, unseen=["big"])
    return [_ljob("480p")]
