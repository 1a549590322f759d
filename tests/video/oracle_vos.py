"""Plain NumPy oracle of the video object segmentation measures and protocols.

Written from the definitions (davis2017-evaluation's ``db_eval_iou``,
``db_eval_boundary`` / ``f_measure`` / ``_seg2bmap``, ``db_statistics``, its
loader and ``DAVISEvaluation``; SA-V's ``sav_benchmark``), never from their
code, and deliberately literal: whole frames, one object at a time, no
streaming.  The tests check it against the golden values the official code
produced (tests/data/video/*.json) and against brute-force definitions with
hypothesis; boundary_api.video is then checked against both.

Per frame
    :func:`jaccard` (J, optionally with void), :func:`boundary_map` (the DAVIS
    boundary), :func:`disk_radius`, :func:`disk_offsets`, :func:`dilate_disk`,
    :func:`f_measure` (F, its empty cases), :func:`boundary_iou` (the paper's
    Boundary IoU through boundary_api.masks.reference).
Statistics
    :func:`decay_bins`, :func:`statistics` (Mean, Recall, Decay; the uint8 quirk
    or the corrected bins), :func:`assignments` (the matching of proposals).
Protocols
    :func:`davis_evaluate` (a DAVIS root and a results folder, both tasks),
    :func:`sav_evaluate` and :func:`sav_csv` (SA-V's folders, both layouts).
MOSEv2 (MOSE-api's ``metricsv2.py``, from its definitions)
    :func:`disk_kernel` (scikit-image's ``disk`` of any radius, off-centre when
    fractional), :func:`dilate_kernel` (OpenCV's ``dilate`` around the kernel's
    centre), :func:`f_with_kernel`, :func:`mosev2_jaccard` (J + 1 smoothed),
    :func:`mosev2_radii` and :func:`mosev2_f` (F and the object-adaptive F_new).
"""
import itertools
import math
import os

import numpy as np

__all__ = [
    "Refusal", "jaccard", "boundary_map", "disk_radius", "disk_offsets", "dilate_disk", "f_measure",
    "boundary_iou", "decay_bins", "statistics", "assignments", "davis_evaluate", "sav_iou", "sav_evaluate",
    "sav_csv", "disk_kernel", "dilate_kernel", "f_with_kernel", "mosev2_jaccard", "mosev2_radii", "mosev2_f",
]


class Refusal(Exception):
    """Input the official tool stops on; ``kind`` names the condition."""

    def __init__(self, kind, detail=""):
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind


# ----------------------------------------------------------------------------
# Per frame
# ----------------------------------------------------------------------------

def jaccard(gt, pred, void=None):
    """Region similarity J of one frame: |G & P| / |G | P| over the non-void
    pixels; 1.0 when that union is empty (nothing to find, nothing found).

    Parameters
    ----------
    gt, pred : (H, W) array
        Ground-truth and predicted masks (nonzero = object).
    void : (H, W) array, optional
        Pixels left out of both counts.
    """
    g, p = np.asarray(gt) != 0, np.asarray(pred) != 0
    keep = np.ones(g.shape, bool) if void is None else ~(np.asarray(void) != 0)
    inter = int(np.count_nonzero(g & p & keep))
    union = int(np.count_nonzero((g | p) & keep))
    return 1.0 if union == 0 else inter / union


def boundary_map(mask):
    """DAVIS' boundary map of a mask: a pixel is on the boundary when it differs
    from one of its east, south and south-east neighbours that lie inside the
    frame (so the last row looks east only, the last column south only, the
    bottom-right pixel never differs, and the frame's edge is no boundary).

    Returns
    -------
    (H, W) bool array
    """
    m = np.asarray(mask) != 0
    b = np.zeros(m.shape, bool)
    b[:, :-1] |= m[:, :-1] != m[:, 1:]      # east
    b[:-1, :] |= m[:-1, :] != m[1:, :]      # south
    b[:-1, :-1] |= m[:-1, :-1] != m[1:, 1:]  # south-east
    return b


def disk_radius(height, width, bound_th=0.008):
    """The tolerance of F in pixels: ``bound_th`` itself when it is 1 or more,
    else ``ceil(bound_th * sqrt(height**2 + width**2))`` (a float, as the official)."""
    if bound_th >= 1:
        return bound_th
    return float(math.ceil(bound_th * math.sqrt(height * height + width * width)))


def disk_offsets(radius):
    """The disk's offsets ``(dy, dx)`` with ``dy**2 + dx**2 <= radius**2``, for
    ``dy, dx`` in ``-radius..radius`` (scikit-image's ``morphology.disk``)."""
    r = int(math.floor(radius))
    return [(dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1) if dy * dy + dx * dx <= radius * radius]


def dilate_disk(bmap, radius):
    """Pixels within Euclidean distance ``radius`` of a set pixel (the frame's
    outside adds nothing): row by row, each row offset ``dy`` widened by the
    largest ``dx`` of the disk at that ``dy``."""
    b = np.asarray(bmap, bool)
    out = np.zeros(b.shape, bool)
    if not b.any():
        return out
    # only the set pixels' bounding box grown by the radius can be reached
    r = int(math.floor(radius))
    ys, xs = np.nonzero(b.any(axis=1))[0], np.nonzero(b.any(axis=0))[0]
    y0, y1 = max(0, ys[0] - r), min(b.shape[0], ys[-1] + r + 1)
    x0, x1 = max(0, xs[0] - r), min(b.shape[1], xs[-1] + r + 1)
    out[y0:y1, x0:x1] = _dilate_window(b[y0:y1, x0:x1], radius)
    return out


def _dilate_window(b, radius):
    h, w = b.shape
    out = np.zeros((h, w), bool)
    halfwidth = {}
    for dy, dx in disk_offsets(radius):
        halfwidth[dy] = max(halfwidth.get(dy, -1), dx)
    # running counts along x: any set pixel in [x - k, x + k]
    csum = np.zeros((h, w + 1), np.int64)
    np.cumsum(b, axis=1, out=csum[:, 1:])
    x = np.arange(w)
    for dy, k in halfwidth.items():
        lo, hi = np.clip(x - k, 0, w), np.clip(x + k + 1, 0, w)
        widened = (csum[:, hi] - csum[:, lo]) > 0
        # output row y takes source row y + dy
        ys, ye = max(0, -dy), min(h, h - dy)
        if ys < ye:
            out[ys:ye] |= widened[ys + dy:ye + dy]
    return out


def f_measure(gt, pred, void=None, bound_th=0.008):
    """Boundary F of one frame.

    The masks lose their void pixels first; their boundary maps
    (:func:`boundary_map`) are compared with a tolerance of
    :func:`disk_radius` pixels: precision = predicted boundary pixels within
    the tolerance of the ground truth's boundary / predicted boundary pixels,
    recall the other way round, F = 2PR / (P + R).  Empty cases: both
    boundaries empty P = R = 1; only the prediction's P = 1, R = 0; only the
    ground truth's P = 0, R = 1; P + R = 0 gives F = 0.
    """
    g, p = np.asarray(gt) != 0, np.asarray(pred) != 0
    if void is not None:
        keep = ~(np.asarray(void) != 0)
        g, p = g & keep, p & keep
    h, w = g.shape
    r = disk_radius(h, w, bound_th)
    return boundary_f(boundary_map(g), boundary_map(p), lambda b: dilate_disk(b, r))


def boundary_f(bg, bp, dilate):
    """F of the boundary maps ``bg`` (ground truth) and ``bp`` (prediction),
    each within the tolerance ``dilate`` (a function of a map) of the other:
    precision = predicted boundary pixels in ``dilate(bg)`` / predicted
    boundary pixels, recall the other way round, F = 2PR / (P + R); the empty
    cases of :func:`f_measure`."""
    n_gt, n_fg = int(bg.sum()), int(bp.sum())
    if n_fg == 0 and n_gt > 0:
        precision, recall = 1, 0
    elif n_fg > 0 and n_gt == 0:
        precision, recall = 0, 1
    elif n_fg == 0 and n_gt == 0:
        precision, recall = 1, 1
    else:
        precision = int((bp & dilate(bg)).sum()) / float(n_fg)
        recall = int((bg & dilate(bp)).sum()) / float(n_gt)
    if precision + recall == 0:
        return 0.0
    return float(2 * precision * recall / (precision + recall))


def boundary_iou(gt, pred, dilation_ratio=0.02, void=None, both_empty=1.0):
    """The paper's Boundary IoU of two masks of one frame (boundary_api.masks.reference:
    the band ``mask - erode(mask)`` of width ``d = dilation_pixels(h, w, ratio)``).

    ``void`` pixels are removed from both masks before the bands are made and
    left out of the counts; ``both_empty`` is the value when both masks are
    empty (1.0, as J and F count a frame where the object is absent and not
    predicted; the image measure gives 0.0 there).
    """
    from boundary_api.masks import reference

    g, p = np.asarray(gt) != 0, np.asarray(pred) != 0
    keep = np.ones(g.shape, bool) if void is None else ~(np.asarray(void) != 0)
    g, p = g & keep, p & keep
    if not g.any() and not p.any():
        return both_empty
    bg = reference.mask_to_boundary(g.astype(np.uint8), dilation_ratio).astype(bool) & keep
    bp = reference.mask_to_boundary(p.astype(np.uint8), dilation_ratio).astype(bool) & keep
    union = int((bg | bp).sum())
    return int((bg & bp).sum()) / union if union else both_empty


# ----------------------------------------------------------------------------
# Statistics
# ----------------------------------------------------------------------------

def decay_bins(n, quirk=True, numpy2=True):
    """The four Decay bins of ``n`` frames, as slices ``(start, stop)``.

    The five bin edges are ``e_i = round(1 + i (n - 1) / 4) - 1`` (halves
    rounded up); bin ``i`` holds frames ``e_i`` to ``e_(i+1)`` inclusive, so
    consecutive bins share their edge frame.  With ``quirk`` the edges are
    uint8, as the official code casts them: each edge is taken modulo 256 and,
    with ``numpy2`` (NumPy 2's scalar arithmetic, NEP 50), the stop
    ``e_(i+1) + 1`` is computed in uint8 as well, so an edge of 255 (modulo
    256) gives a stop of 0 and an empty bin; NumPy 1 computed that stop as an
    int.  Without ``quirk``: the bins as intended.
    """
    edges = [(2 * (4 + i * (n - 1)) + 4) // 8 - 1 for i in range(5)]
    if not quirk:
        return [(edges[i], edges[i + 1] + 1) for i in range(4)]
    edges = [e % 256 for e in edges]
    return [(edges[i], (edges[i + 1] + 1) % 256 if numpy2 else edges[i + 1] + 1) for i in range(4)]


def _nanmean(values):
    v = np.asarray(values, np.float64)
    v = v[~np.isnan(v)]
    return float(np.mean(v)) if v.size else float("nan")


def statistics(values, quirk=True, numpy2=True):
    """(Mean, Recall, Decay) of one object's per-frame values.

    Mean ignores NaN; Recall = share of frames above 0.5; Decay = mean of the
    first bin minus mean of the last (:func:`decay_bins`; an empty bin is NaN).
    """
    v = np.asarray(values, np.float64)
    mean = _nanmean(v)
    recall = float(np.mean(v > 0.5)) if v.size else float("nan")
    bins = decay_bins(len(v), quirk, numpy2)
    first = v[bins[0][0]:bins[0][1]]
    last = v[bins[3][0]:bins[3][1]]
    return mean, recall, _nanmean(first) - _nanmean(last)


def assignments(score):
    """Every matching of objects (columns) to distinct proposals (rows) with the
    largest total ``score``, as (rows, cols) lists ordered by row (brute force).

    Returns a list: one entry when the best matching is unique.
    """
    s = np.asarray(score, np.float64)
    n_p, n_o = s.shape
    best, found = None, []
    for perm in itertools.permutations(range(n_p), n_o):
        total = math.fsum(s[p, o] for o, p in enumerate(perm))
        if best is None or total > best + 1e-12:
            best, found = total, [perm]
        elif abs(total - best) <= 1e-12:
            found.append(perm)
    out = []
    for perm in found:
        pairs = sorted((p, o) for o, p in enumerate(perm))
        out.append(([p for p, _ in pairs], [o for _, o in pairs]))
    return out


# ----------------------------------------------------------------------------
# DAVIS 2017
# ----------------------------------------------------------------------------

def _read(path):
    from PIL import Image

    with Image.open(path) as im:
        return np.array(im)


def _sequence_names(davis_root, task, gt_set, sequences):
    if sequences != "all":
        return list(sequences) if isinstance(sequences, list) else [sequences]
    year = "2019" if task == "unsupervised" and gt_set in ("test-dev", "test-challenge") else "2017"
    path = os.path.join(davis_root, "ImageSets", year, f"{gt_set}.txt")
    if not os.path.exists(path):
        raise Refusal("imageset_missing", path)
    with open(path) as f:
        names = [line.strip() for line in f.readlines()]
    return list(dict.fromkeys(names))  # a repeated name is evaluated once, where it first appears


def davis_evaluate(davis_root, task, gt_set, res_path, sequences="all", metric=("J", "F"), codalab=False,
                   quirk=True, max_proposals=20, prefer=None):
    """DAVIS 2017 evaluation by the definitions.

    Sequences in the ImageSets file's order (or as given); a sequence's frames
    are its annotation PNGs, sorted by name; void = 255 (removed from the
    objects); its objects are ``1..max id of the first annotation frame``.
    Semi-supervised: the first and last frames are left out (their results are
    never read), the result's objects are ``1..max id`` of the frames read, an id
    above the object count is refused, missing objects are empty masks; no void.
    Unsupervised: void counts; proposals ``1..max id`` (more than
    ``max_proposals`` refused, fewer than the objects padded with empty ones),
    every proposal scored against every object by the mean over frames of J
    and F ((J + F) / 2 when both metrics), objects matched to distinct proposals
    with the best total; rows in the order of their proposal.  Row ``ii`` of a
    sequence is named ``<seq>_<ii + 1>``.  Where several matchings have the
    best total (and their rows differ) the official result is the solver's
    choice: ``prefer`` maps a sequence to the (rows, cols) to take among the
    best ones (it must be one of them); otherwise the first is taken.

    Returns
    -------
    dict
        ``result``: ``{'J': {'M', 'R', 'D', 'M_per_object'}, 'F': ...}`` as the
        official ``evaluate``; ``per_sequence``: name, per-row per-frame ``J``
        and ``F`` (lists of lists), ``J_all`` / ``F_all`` (proposal x object x
        frame, unsupervised), ``matchings`` (all optimal matchings), ``frames``.
    """
    metric = list(metric) if isinstance(metric, (list, tuple)) else [metric]
    if "T" in metric:
        raise Refusal("temporal_metric")
    if "J" not in metric and "F" not in metric:
        raise Refusal("no_metric")
    if gt_set not in ("train", "val", "test-dev", "test-challenge"):
        raise Refusal("bad_subset", gt_set)
    if task not in ("semi-supervised", "unsupervised"):
        raise Refusal("bad_task", task)
    if not os.path.exists(davis_root):
        raise Refusal("root_missing", davis_root)
    ann = "Annotations" if task == "semi-supervised" else "Annotations_unsupervised"
    result = {m: {"M": [], "R": [], "D": [], "M_per_object": {}} for m in ("J", "F") if m in metric}
    per_seq = []
    names = _sequence_names(davis_root, task, gt_set, sequences)
    found = {}
    for seq in names:  # the loader lists every sequence before anything is evaluated
        img_dir = os.path.join(davis_root, "JPEGImages", "480p", seq)
        imgs = sorted(f for f in os.listdir(img_dir) if f.endswith(".jpg")) if os.path.isdir(img_dir) else []
        if not imgs and not codalab:
            raise Refusal("images_missing", seq)
        ann_dir = os.path.join(davis_root, ann, "480p", seq)
        pngs = sorted(f for f in os.listdir(ann_dir) if f.endswith(".png")) if os.path.isdir(ann_dir) else []
        found[seq] = (imgs, pngs)
    for seq in names:
        imgs, pngs = found[seq]
        if len(pngs) < len(imgs):
            raise Refusal("annotation_missing", seq)
        frames = [f[:-4] for f in pngs]
        labels = np.stack([_read(os.path.join(davis_root, ann, "480p", seq, f)) for f in pngs])
        void = labels == 255
        labels = np.where(void, 0, labels)
        n_obj = int(labels[0].max())
        if task == "semi-supervised":
            frames, labels, void = frames[1:-1], labels[1:-1], None
            if not frames:
                raise Refusal("no_frames", seq)
        res = []
        for f in frames:
            p = os.path.join(res_path, seq, f + ".png")
            if not os.path.exists(p):
                raise Refusal("result_missing", f"{seq}/{f}")
            a = _read(p)
            if a.ndim != 2:
                raise Refusal("not_indexed", p)
            if a.shape != labels.shape[1:]:
                raise Refusal("size_mismatch", p)
            res.append(a)
        res = np.stack(res)
        n_res = int(res.max())
        if task == "semi-supervised" and n_res > n_obj:
            raise Refusal("index_above_object_count", seq)
        if task == "unsupervised" and n_res > max_proposals:
            raise Refusal("too_many_proposals", seq)
        n_res = max(n_res, n_obj)
        rows = []
        info = {"sequence": seq, "frames": frames}
        if task == "semi-supervised":
            for i in range(1, n_obj + 1):
                rows.append(([jaccard(labels[t] == i, res[t] == i) for t in range(len(frames))],
                             [f_measure(labels[t] == i, res[t] == i) for t in range(len(frames))]))
        else:
            j_all = np.zeros((n_res, n_obj, len(frames)))
            f_all = np.zeros((n_res, n_obj, len(frames)))
            for i in range(1, n_obj + 1):
                for p in range(1, n_res + 1):
                    for t in range(len(frames)):
                        if "J" in metric:
                            j_all[p - 1, i - 1, t] = jaccard(labels[t] == i, res[t] == p, void[t])
                        if "F" in metric:
                            f_all[p - 1, i - 1, t] = f_measure(labels[t] == i, res[t] == p, void[t])
            if "J" in metric and "F" in metric:
                score = (j_all.mean(axis=2) + f_all.mean(axis=2)) / 2
            else:
                score = j_all.mean(axis=2) if "J" in metric else f_all.mean(axis=2)
            found_m = assignments(score) if n_obj else [([], [])]
            info.update(J_all=j_all.tolist(), F_all=f_all.tolist(), score=score.tolist(), matchings=found_m)
            prow, pcol = found_m[0]
            if prefer and seq in prefer:
                want = tuple(list(x) for x in prefer[seq])
                if want not in [(list(r), list(c)) for r, c in found_m]:
                    raise AssertionError(f"{seq}: {want} is not a best matching")
                prow, pcol = want
            for p, i in zip(prow, pcol):
                rows.append((j_all[p, i].tolist(), f_all[p, i].tolist()))
        info["J"] = [r[0] for r in rows]
        info["F"] = [r[1] for r in rows]
        per_seq.append(info)
        for ii, (jv, fv) in enumerate(rows):
            for m, v in (("J", jv), ("F", fv)):
                if m in result:
                    M, R, D = statistics(v, quirk)
                    result[m]["M"].append(M)
                    result[m]["R"].append(R)
                    result[m]["D"].append(D)
                    result[m]["M_per_object"][f"{seq}_{ii + 1}"] = M
    return {"result": result, "per_sequence": per_seq}


def davis_global(result):
    """evaluation_method.py's global row: J&F-Mean, J-Mean, J-Recall, J-Decay,
    F-Mean, F-Recall, F-Decay (means over all objects)."""
    J, F = result["J"], result["F"]
    jm, fm = np.mean(J["M"]), np.mean(F["M"])
    return [float((jm + fm) / 2.0), float(jm), float(np.mean(J["R"])), float(np.mean(J["D"])), float(fm),
            float(np.mean(F["R"])), float(np.mean(F["D"]))]


# ----------------------------------------------------------------------------
# SA-V
# ----------------------------------------------------------------------------

def sav_iou(gt, pred):
    """SA-V's per-frame IoU: |G & P| / (|G| + |P| - |G & P|), 1 when both are empty."""
    g, p = np.asarray(gt) != 0, np.asarray(pred) != 0
    inter, total = int((g & p).sum()), int(g.sum()) + int(p.sum())
    return 1 if inter == total else inter / (total - inter)


def _sav_video(gt_frames, pred_frames):
    """Per-object per-frame lists of one evaluator (frames already chosen).

    An object's lists start at the first frame where it is in the ground truth
    or in the prediction (the objects seen so far, in either); only objects of
    the ground truth are reported.  The objects are kept in a Python set
    updated frame by frame, as the official evaluator does, so that the
    reported order is its set's iteration order.
    """
    in_gt, in_pred = set(), set()
    iou, bf = {}, {}
    for g, p in zip(gt_frames, pred_frames):
        gids = [v for v in np.unique(g).tolist() if v != 0]
        pids = [v for v in np.unique(p).tolist() if v != 0]
        in_gt.update(set(gids))
        in_pred.update(set(pids))
        for obj in in_gt.union(in_pred):
            go, po = g == obj, p == obj
            iou.setdefault(obj, []).append(sav_iou(go, po))
            bf.setdefault(obj, []).append(f_measure(go, po))
    return in_gt, iou, bf


def sav_evaluate(gt_root, pred_root, skip_first_and_last=True, strict=True):
    """SA-V's benchmark (one dataset) by the definitions.

    Videos: the folders of ``gt_root`` (with ``strict``, the two roots must
    hold the same folders; otherwise the videos of both), sorted.  A video
    whose entries all end in ``.png`` is DAVIS-like (indexed frames, objects
    keyed by int id); otherwise each entry is an object's folder of binary PNGs
    (nonzero = object; more than one value besides 0 is refused), keyed by the
    folder's name.  Frames: the ground truth's files, sorted, without the first
    and last with ``skip_first_and_last``; each must exist in the prediction.
    Per object: mean of its per-frame IoU and F times 100; globally the means
    over every reported object of every video, J&F their mean.

    Returns
    -------
    dict
        ``global_jf``, ``global_j``, ``global_f``, ``videos``: list of
        ``[name, [[key, J], ...], [[key, F], ...]]``; ``per_frame``: per video the
        per-object lists.
    """
    gt_videos = sorted(v for v in os.listdir(gt_root) if os.path.isdir(os.path.join(gt_root, v)))
    pred_videos = sorted(v for v in os.listdir(pred_root) if os.path.isdir(os.path.join(pred_root, v)))
    if strict:
        if set(gt_videos) != set(pred_videos):
            raise Refusal("videos_differ")
        videos = gt_videos
    else:
        videos = sorted(set(gt_videos) & set(pred_videos))
    if not videos:
        raise Refusal("no_videos")
    out, per_frame, all_j, all_f = [], [], [], []
    for vid in videos:
        vg, vp = os.path.join(gt_root, vid), os.path.join(pred_root, vid)
        entries = sorted(os.listdir(vg))
        davis_like = all(e.endswith(".png") for e in entries)
        units = [(None, vg, vp, entries)] if davis_like else \
            [(e, os.path.join(vg, e), os.path.join(vp, e), sorted(os.listdir(os.path.join(vg, e)))) for e in entries]
        j_out, f_out, frames_out = [], [], []
        for key, g_dir, p_dir, frames in units:
            if skip_first_and_last:
                frames = frames[1:-1]
            gts, preds = [], []
            for f in frames:
                pp = os.path.join(p_dir, f)
                if not os.path.exists(pp):
                    raise Refusal("prediction_missing", pp)
                g, p = _read(os.path.join(g_dir, f)), _read(pp)
                if g.shape[-2:] != p.shape[-2:]:
                    raise Refusal("size_mismatch", pp)
                if not davis_like:
                    if len(np.unique(g)) > 2 or len(np.unique(p)) > 2:
                        raise Refusal("several_objects", pp)
                    g, p = g > 0, p > 0
                gts.append(g)
                preds.append(p)
            in_gt, iou, bf = _sav_video(gts, preds)
            frames_out.append({"obj_id": key, "iou": [[k, v] for k, v in iou.items()],
                               "f": [[k, v] for k, v in bf.items()]})
            if davis_like:
                for k in in_gt:
                    j_out.append([k, float(np.mean(iou[k]) * 100)])
                    f_out.append([k, float(np.mean(bf[k]) * 100)])
            else:
                if len(in_gt) != 1:
                    raise Refusal("object_never_in_ground_truth", f"{vid}/{key}")
                (k,) = in_gt
                j_out.append([key, float(np.mean(iou[k]) * 100)])
                f_out.append([key, float(np.mean(bf[k]) * 100)])
        out.append([vid, j_out, f_out])
        per_frame.append({"video": vid, "objects": frames_out})
        all_j += [v for _, v in j_out]
        all_f += [v for _, v in f_out]
    gj, gf = float(np.mean(all_j)) if all_j else float("nan"), float(np.mean(all_f)) if all_f else float("nan")
    return {"global_jf": (gj + gf) / 2, "global_j": gj, "global_f": gf, "videos": out, "per_frame": per_frame}


def sav_csv(res):
    """The results.csv sav_benchmark writes for :func:`sav_evaluate`'s result:
    a header, the global row and one row per object, the first column padded to
    the longest video name (at least ``Global score``), the object key formatted
    with ``{:03}`` (ints zero-padded, strings padded with zeros on the right)."""
    ml = max([len(v[0]) for v in res["videos"]] + [len("Global score")])
    lines = [f'{"sequence":<{ml}},{"obj":>3}, {"J&F":>4}, {"J":>4}, {"F":>4}',
             f'{"Global score":<{ml}},{"":>3}, {res["global_jf"]:.1f}, {res["global_j"]:.1f}, {res["global_f"]:.1f}']
    for name, js, fs in res["videos"]:
        for (key, j), (_, f) in zip(js, fs):
            lines.append(f"{name:<{ml}},{key:03}, {(j + f) / 2:>4.1f}, {j:>4.1f}, {f:>4.1f}")
    return "".join(line + "\n" for line in lines)


# ----------------------------------------------------------------------------
# MOSEv2 (metricsv2.py): J + 1 smoothed, F at a fractional radius, the adaptive F_new
# ----------------------------------------------------------------------------

def disk_kernel(radius):
    """scikit-image's ``disk(radius)`` for any radius >= 0: a square grid whose
    coordinates are ``np.arange(-radius, radius + 1)`` on both axes, a cell set
    when the squares of its two coordinates add up to at most ``radius ** 2``.
    For a fractional radius the grid is not centred on 0 (the disk is
    off-centre in its kernel)."""
    L = np.arange(-radius, radius + 1)
    return (L[:, None] ** 2 + L[None, :] ** 2) <= radius ** 2


def dilate_kernel(bmap, kernel):
    """OpenCV's ``dilate(bmap, kernel)``: a pixel is set when ``bmap`` is set at
    the pixel moved by ``(i - kh // 2, j - kw // 2)`` for some set cell (i, j)
    of the kernel (pixels outside the frame count as unset)."""
    b = np.asarray(bmap, bool)
    k = np.asarray(kernel, bool)
    h, w = b.shape
    out = np.zeros((h, w), bool)
    ay, ax = k.shape[0] // 2, k.shape[1] // 2
    for i, j in zip(*np.nonzero(k)):
        dy, dx = int(i) - ay, int(j) - ax
        ys, ye = max(0, -dy), min(h, h - dy)
        xs, xe = max(0, -dx), min(w, w - dx)
        if ys < ye and xs < xe:
            out[ys:ye, xs:xe] |= b[ys + dy:ye + dy, xs + dx:xe + dx]
    return out


def f_with_kernel(gt, pred, kernel):
    """The boundary F of one frame with the boundary maps dilated by ``kernel``
    (:func:`dilate_kernel`), DAVIS' empty cases (:func:`boundary_f`)."""
    return boundary_f(boundary_map(np.asarray(gt) != 0), boundary_map(np.asarray(pred) != 0),
                      lambda b: dilate_kernel(b, kernel))


def mosev2_jaccard(gt, pred):
    """MOSEv2's J: (|G & P| + 1) / (|G | P| + 1), 1 when both are empty."""
    g, p = np.asarray(gt) != 0, np.asarray(pred) != 0
    inter, union = int(np.count_nonzero(g & p)), int(np.count_nonzero(g | p))
    return 1.0 if union == 0 else (inter + 1) / (union + 1)


def mosev2_radii(gt_area, height, width, th=0.1, cap=None):
    """The radii of F and F_new for a ground truth of ``gt_area`` pixels:
    ``a = ceil(th * sqrt(area))`` (an empty ground truth: ``ceil(th *
    diagonal)``), the cap ``0.008 * diagonal`` (not rounded); below the cap F
    uses ``ceil(cap)`` and F_new ``a``, else both the cap itself."""
    diag = float(np.linalg.norm((height, width)))
    cap = 0.008 * diag if cap is None else cap
    a = float(np.ceil(th * np.sqrt(gt_area))) if gt_area else float(np.ceil(th * diag))
    if min(cap, a) < cap:
        return float(np.ceil(cap)), a
    return cap, cap


def mosev2_f(gt, pred, th=0.1, cap=None):
    """(F, F_new) of one frame as MOSEv2 computes them."""
    g = np.asarray(gt) != 0
    rf, rn = mosev2_radii(int(g.sum()), g.shape[0], g.shape[1], th, cap)
    f = f_with_kernel(gt, pred, disk_kernel(rf))
    return f, (f if rn == rf else f_with_kernel(gt, pred, disk_kernel(rn)))
