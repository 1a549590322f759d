"""Plain NumPy oracle of the tube IoUs of YouTube-VIS (youtubevos/cocoapi ``ytvoseval``)
and HQ-YTVIS (SysCV/vmt ``cocoapi_hq``), written from the definitions, slow and literal.

A track is a list of frames, each a decoded mask (2-D uint8 array) or ``None`` where the
object is absent (``None`` and ``[]`` in the JSON: anything Python finds false).  The
official definitions, as their code computes them:

- tube mask IoU = sum over frames of the intersections / sum over frames of the unions,
  over ``zip(dt_frames, gt_frames)`` (the longer track's extra frames are dropped); a
  frame where one track is absent adds the other's area to the union; two masks of
  different sizes add nothing (pycocotools' ``merge`` of RLEs of different sizes is an
  empty 0x0 RLE); an empty union gives 0.
- tube boundary IoU (HQ-YTVIS): the same sum over per-frame boundary bands, the band of a
  frame being ``mask - erode(mask)`` at ``d = max(1, int(round(ratio * diagonal)))`` of
  that mask's own size (:func:`boundary_api.masks.reference.mask_to_boundary`).  An
  absent frame has an empty band of the annotation's ``height`` x ``width`` (not
  "absent": it merges with the other band, so another size adds nothing), and the
  results' bands are made at ratio 0.02 whatever the ground truth's ratio
  (``loadRes`` builds ``YTVOS(get_boundary=...)`` with the default ratio).
- HQ-YTVIS' IoU = min(tube mask IoU, tube boundary IoU), crowd ground truth keeping the
  mask IoU.  youtubevos' crowd ground truth has the plain tube mask IoU too.
- avg_area = NumPy's mean of the ``areas`` that are true (not ``None``, not 0), 0 if none.

Only the polygon rasterisation is pycocotools' (the definition of a polygon's pixels).
"""
import numpy as np
import pycocotools.mask as mask_utils

from boundary_api.masks.reference import mask_to_boundary

__all__ = [
    "avg_area",
    "boundary_band",
    "decode_counts_string",
    "decode_frame",
    "iou_matrices",
    "track_frames",
    "tube_boundary_iou",
    "tube_iou_matrix",
    "tube_mask_iou",
]


def decode_counts_string(s) -> list:
    """The run lengths of a COCO compressed RLE string (LEB128-like 5-bit groups, each
    count after the second a difference to the count two before)."""
    if isinstance(s, bytes):
        s = s.decode("ascii")
    counts, p = [], 0
    while p < len(s):
        x, k, more = 0, 0, True
        while more:
            c = ord(s[p]) - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and (c & 0x10):
                x |= -1 << (5 * k)
        if len(counts) > 2:
            x += counts[-2]
        counts.append(x)
    return counts


def _runs_to_mask(counts, h, w) -> np.ndarray:
    flat = np.zeros(h * w, np.uint8)
    pos, val = 0, 0
    for c in counts:
        flat[pos:pos + c] = val
        pos += c
        val ^= 1
    return flat.reshape((w, h)).T.copy()


def decode_frame(seg, height, width):
    """One frame of a JSON segmentation as a mask, ``None`` where the object is absent.

    Compressed and uncompressed RLEs have their own ``size``; polygons are rasterised
    at the video's ``height`` x ``width``.
    """
    if not seg:
        return None
    if isinstance(seg, list):
        return mask_utils.decode(mask_utils.merge(mask_utils.frPyObjects(seg, height, width)))
    h, w = int(seg["size"][0]), int(seg["size"][1])
    counts = seg["counts"] if isinstance(seg["counts"], list) else decode_counts_string(seg["counts"])
    return _runs_to_mask(counts, h, w)


def track_frames(segmentations, height, width) -> list:
    """The frames of a track (``None`` where absent)."""
    return [decode_frame(s, height, width) for s in segmentations]


def _area(m) -> int:
    return int(np.count_nonzero(m))


def tube_mask_iou(dt_frames, gt_frames) -> float:
    """Tube IoU of two tracks by ytvoseval's definition (see the module's docstring)."""
    inter = union = 0
    for d, g in zip(dt_frames, gt_frames):
        if d is not None and g is not None:
            if d.shape == g.shape:
                inter += _area(np.logical_and(d, g))
                union += _area(np.logical_or(d, g))
        elif g is not None:
            union += _area(g)
        elif d is not None:
            union += _area(d)
    return inter / union if union > 0 else 0.0


def boundary_band(mask, ratio, absent_shape=None):
    """The boundary band of one frame; an absent frame has an empty band of
    ``absent_shape`` (``KeyError`` when that is not known, as HQ-YTVIS' ``ann['height']``)."""
    if mask is None:
        if absent_shape is None:
            raise KeyError("height")
        return np.zeros(tuple(absent_shape), np.uint8)
    return mask_to_boundary(mask, ratio)


def tube_boundary_iou(dt_bands, gt_bands) -> float:
    """Tube IoU of two tracks of bands (no absent frame: absent frames are empty bands)."""
    inter = union = 0
    for d, g in zip(dt_bands, gt_bands):
        if d.shape == g.shape:
            inter += _area(np.logical_and(d, g))
            union += _area(np.logical_or(d, g))
    return inter / union if union > 0 else 0.0


def tube_iou_matrix(dt_tracks, gt_tracks, gt_iscrowd=None, iou_type="segm", gt_ratio=0.02, dt_ratio=0.02,
                    dt_absent_shapes=None, gt_absent_shapes=None, gt_band_tracks=None):
    """The ``len(dt) x len(gt)`` matrix of tube IoUs.

    Parameters
    ----------
    dt_tracks, gt_tracks : list of list of (2-D array or None)
        Frames of the results (in their evaluation order) and of the ground truth.
    gt_iscrowd : list of int, optional
        Crowd flags of the ground truth (the boundary IoU keeps the mask IoU for crowds).
    iou_type : {"segm", "boundary"}
    gt_ratio, dt_ratio : float
        Dilation ratios of the ground truth's and the results' bands (HQ-YTVIS: the
        results' at 0.02 whatever the ground truth's).
    dt_absent_shapes, gt_absent_shapes : list of (int, int) or None
        Per track, the size of the empty band of an absent frame (the annotation's
        ``height``, ``width``); ``None``: unknown (an absent frame raises ``KeyError``).
    gt_band_tracks : list of list, optional
        Frames the ground truth's bands are made from, when not ``gt_tracks`` (HQ-YTVIS
        makes them from ``segmentations_refined`` where an annotation has it).
    """
    ious = np.zeros((len(dt_tracks), len(gt_tracks)))
    for i, d in enumerate(dt_tracks):
        for j, g in enumerate(gt_tracks):
            ious[i, j] = tube_mask_iou(d, g)
    if iou_type == "segm":
        return ious
    dt_absent_shapes = dt_absent_shapes or [None] * len(dt_tracks)
    gt_absent_shapes = gt_absent_shapes or [None] * len(gt_tracks)
    gt_band_tracks = gt_band_tracks or gt_tracks
    gt_iscrowd = gt_iscrowd or [0] * len(gt_tracks)
    d_bands = [[boundary_band(m, dt_ratio, s) for m in t] for t, s in zip(dt_tracks, dt_absent_shapes)]
    g_bands = [[boundary_band(m, gt_ratio, s) for m in t] for t, s in zip(gt_band_tracks, gt_absent_shapes)]
    for i in range(len(dt_tracks)):
        for j in range(len(gt_tracks)):
            if not gt_iscrowd[j]:
                ious[i, j] = min(ious[i, j], tube_boundary_iou(d_bands[i], g_bands[j]))
    return ious


def avg_area(areas):
    """Mean of the true (not ``None``, not 0) areas, 0 (an int) when there is none.

    The mean is NumPy's (``np.array(kept).mean()``, as the official code computes it):
    for float areas its pairwise summation (eight partial sums from the ninth value on)
    is not Python's ``sum(kept) / len(kept)``, and the last bit differs for about a
    third of the tracks of 9 or more float areas.
    """
    kept = [a for a in areas if a]
    return float(np.array(kept).mean()) if kept else 0


def _size(ann):
    return (ann["height"], ann["width"]) if "height" in ann and "width" in ann else None


def iou_matrices(gt, results, iou_type="segm", dilation_ratio=0.02, result_dilation_ratio=0.02,
                 max_dets=100, use_cats=True, hq=False):
    """Every tube IoU matrix of an evaluation, keyed ``(video_id, category_id)`` as
    ``YTVOSeval.ious`` (``category_id`` -1 without categories).

    Results are taken per video in file order, per category, sorted by decreasing score
    (stable), the first ``max_dets`` kept; ground truth in file order.  A pair with neither
    ground truth nor results has ``[]``.  ``hq``: HQ-YTVIS' reading of the ground truth
    (bands from ``segmentations_refined`` where an annotation has it).
    """
    vids = {v["id"]: v for v in gt["videos"]}
    cat_ids = sorted(c["id"] for c in gt["categories"])
    vid_ids = sorted(vids)

    def frames(ann, key="segmentations"):
        v = vids[ann["video_id"]]
        return track_frames(ann[key], v["height"], v["width"])

    gts, dts = {}, {}
    for a in gt["annotations"]:
        gts.setdefault((a["video_id"], a["category_id"]), []).append(a)
    for r in results:
        dts.setdefault((r["video_id"], r["category_id"]), []).append(r)
    out = {}
    for vid in vid_ids:
        for cat in (cat_ids if use_cats else [-1]):
            keys = [(vid, cat)] if use_cats else [(vid, c) for c in cat_ids]
            g = [a for k in keys for a in gts.get(k, [])]
            d = [r for k in keys for r in dts.get(k, [])]
            if not g and not d:
                out[(vid, cat)] = []
                continue
            order = np.argsort([-r["score"] for r in d], kind="mergesort")
            d = [d[i] for i in order][:max_dets]
            band_src = None
            if iou_type == "boundary":
                band_src = [frames(a, "segmentations_refined" if hq and "segmentations_refined" in a
                                   else "segmentations") for a in g]
            out[(vid, cat)] = tube_iou_matrix(
                [frames(r) for r in d], [frames(a) for a in g], [int(a["iscrowd"]) for a in g], iou_type,
                gt_ratio=dilation_ratio, dt_ratio=result_dilation_ratio,
                dt_absent_shapes=[_size(r) for r in d], gt_absent_shapes=[_size(a) for a in g],
                gt_band_tracks=band_src)
    return out
