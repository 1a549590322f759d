"""Generated YouTube-VIS ground truths and results files for the tests of the
native reader (test_ytvis_columns.py, the fuzz family ``vis``): small videos,
tracks whose frames are absent (``null``, ``[]``, ``{}``), compressed or
uncompressed RLEs or polygons, scores and areas of every spelling, optional
keys in any order, and now and then what the YouTube-VIS API warns about or
refuses (another frame count or RLE size, unknown videos and categories,
repeated ids, keys outside the schema), written by the fuzz suite's JSON
writer (any blanks, every number spelling, escapes; counts strings escaped
only as encoders escape them)."""
import os
import sys

import numpy as np
import pycocotools.mask as mask_utils

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "fuzz"))

import fuzz_json as F  # noqa: E402


class Counts(str):
    """A compressed RLE string (escaped as JSON encoders do: ``\\\\``, maybe ``\\/``)."""


class VisWriter(F.Writer):
    """The fuzz suite's writer; keys escaped only now and then (an encoder
    never escapes ASCII keys, and the scanner takes no escaped key)."""

    def value(self, v, depth=0):
        if isinstance(v, Counts):
            slash = self._p(0.3)
            return '"' + "".join("\\\\" if c == "\\" else ("\\/" if c == "/" and slash else c) for c in v) + '"'
        return super().value(v, depth)

    def obj(self, items, depth) -> str:
        if not items:
            return "{" + self.ws() + "}"
        return "{" + ",".join(self.ws() + (self.string(k) if self._p(0.002) else '"' + k + '"') + self.ws() + ":"
                              + self.ws() + self.value(x, depth + 1) + self.ws() for k, x in items) + "}"


def encode(rng, doc, unusual: float = 0.5) -> bytes:
    return VisWriter(rng, unusual).dumps(doc)


def _mask(rng, h, w):
    return F.random_mask(rng, h, w)


def _rle_string(mask):
    r = mask_utils.encode(np.asfortranarray(mask))
    return {"size": [int(mask.shape[0]), int(mask.shape[1])], "counts": Counts(r["counts"].decode("ascii"))}


class Knobs:
    """How often each unusual thing happens (0 for valid, column-path input)."""

    def __init__(self, suspect: float):
        self.suspect = suspect


def _frame(rng, h, w, gt: bool, k: Knobs):
    r = rng.random()
    if r < 0.25:
        return None
    if r < 0.3:
        return [[], {}][int(rng.integers(2))]
    sh, sw = h, w
    if rng.random() < k.suspect * 0.1:
        sh, sw = h + 1, w
    mask = _mask(rng, sh, sw)
    if gt and r < 0.55:
        rle = F.rle_list(mask)
        if rng.random() < 0.1:
            rle["counts"] = rle["counts"] + [0]           # (an empty run: same mask)
        if rng.random() < k.suspect * 0.05:
            rle["counts"] = rle["counts"][:-1] or [1]    # (not h x w pixels: the kernel refuses it)
        return F.shuffled(rng, rle, 0.5)
    if gt and r < 0.65:
        return [F.polygon(rng, h, w) for _ in range(int(rng.integers(1, 3)))]
    rle = _rle_string(mask)
    if rng.random() < k.suspect * 0.03:
        rle["counts"] = Counts(rle["counts"] + "0")      # (not h x w pixels)
    return F.shuffled(rng, rle, 0.5)


def _area(rng, seg):
    if not seg:
        return None if rng.random() < 0.8 else 0
    return F.number(rng, 0, 500, 0.7)


def documents(rng, suspect: float = 0.3):
    """``(ground truth, results)`` as Python objects (the ground truth maybe a
    :class:`fuzz_json.Dup`)."""
    k = Knobs(suspect)
    videos = []
    for _ in range(int(rng.integers(1, 4))):
        vid = int(rng.integers(0, 10 ** int(rng.integers(1, 16))))
        while any(v["id"] == vid for v in videos):
            vid += 1
        n = int(rng.integers(1, 6))
        v = {"id": vid, "width": int(rng.integers(1, 11)), "height": int(rng.integers(1, 11)), "length": n,
             "file_names": [f"v{vid}/{i:05d}.jpg" for i in range(n)]}
        if rng.random() < 0.2:
            del v["length"]
        if rng.random() < 0.2:
            v["date"] = F.text(rng, 6)
        videos.append(F.shuffled(rng, v, 0.3))
    cat_ids = sorted({int(rng.integers(1, 10 ** int(rng.integers(1, 5)))) for _ in range(int(rng.integers(1, 4)))})
    cats = [F.shuffled(rng, {"id": c, "name": F.text(rng, 5) or "c", "supercategory": "object"}, 0.3)
            for c in cat_ids]
    anns = []
    aid = int(rng.integers(1, 10 ** int(rng.integers(1, 12))))
    for v in videos:
        n = len(v["file_names"])
        for _ in range(int(rng.integers(0, 4))):
            frames = n + (int(rng.integers(-1, 2)) if rng.random() < k.suspect * 0.1 else 0)
            segs = [_frame(rng, v["height"], v["width"], True, k) for _ in range(max(frames, 0))]
            ann = {"id": aid, "video_id": v["id"], "category_id": cat_ids[int(rng.integers(len(cat_ids)))],
                   "segmentations": segs, "areas": [_area(rng, s) for s in segs],
                   "bboxes": [None if not s else [F.number(rng, 0, 9) for _ in range(4)] for s in segs],
                   "iscrowd": int(rng.random() < 0.2), "width": v["width"], "height": v["height"], "length": 1}
            if rng.random() < 0.15:
                del ann["width"], ann["height"]
            elif rng.random() < 0.1:
                ann["height"] = float(ann["height"])
            if rng.random() < 0.1:
                ann["ignore"] = int(rng.integers(2))
            if rng.random() < k.suspect * 0.1:
                ann[["note", "segmentations_refined", "Id"][int(rng.integers(3))]] = segs
            if rng.random() < k.suspect * 0.05:
                ann["video_id"] += 1
            if rng.random() < k.suspect * 0.05 and anns:
                aid = anns[-1]["id"]                      # (a repeated id)
            anns.append(F.shuffled(rng, ann, 0.5))
            aid += int(rng.integers(1, 50))
    gt = {"videos": videos, "annotations": anns, "categories": cats}
    if rng.random() < 0.3:
        gt["info"] = {"description": F.text(rng, 8), "year": 2021}
    if rng.random() < 0.2:
        gt["licenses"] = []
    gt = F.shuffled(rng, gt, 0.5)
    results = []
    for v in videos:
        for _ in range(int(rng.integers(0, 5))):
            n = len(v["file_names"]) + (int(rng.integers(-1, 2)) if rng.random() < k.suspect * 0.1 else 0)
            r = {"video_id": v["id"], "score": F.number(rng, 0, 1, 0.1),
                 "category_id": cat_ids[int(rng.integers(len(cat_ids)))],
                 "segmentations": [_frame(rng, v["height"], v["width"], False, k) for _ in range(max(n, 0))]}
            if rng.random() < k.suspect * 0.05:
                r["category_id"] = max(cat_ids) + 1
            if rng.random() < 0.3:
                r["height"], r["width"] = v["height"], v["width"]
            if rng.random() < 0.1:
                r[["bboxes", "id", "iscrowd", "areas", "avg_area"][int(rng.integers(5))]] = [] \
                    if rng.random() < 0.8 else 7
            if rng.random() < k.suspect * 0.05:
                r["extra"] = 1
            results.append(F.shuffled(rng, r, 0.5))
    if not results:
        v = videos[0]
        results.append({"video_id": v["id"], "category_id": cat_ids[0], "score": 0.5,
                        "segmentations": [None] * len(v["file_names"])})
    if rng.random() < k.suspect * 0.05:
        gt = F.with_duplicates(rng, gt, 1.0)
    return gt, results


def small_documents(rng):
    """A small valid ground truth and results file (for every truncation)."""
    while True:
        gt, res = documents(rng, suspect=0.0)
        if isinstance(gt, F.Dup):
            continue
        gt["videos"] = gt["videos"][:1]
        vid = gt["videos"][0]["id"]
        gt["annotations"] = [a for a in gt["annotations"] if a["video_id"] == vid][:2]
        res = [r for r in res if r["video_id"] == vid][:2]
        if not gt["annotations"] or not res:
            continue
        g, r = encode(rng, gt, 0.2), encode(rng, res, 0.2)
        if 200 <= len(g) <= 1500 and len(r) <= 1200 and accepted(g, r):
            return g, r


def accepted(gt: bytes, res: bytes) -> bool:
    """Whether the scanner takes both files (no escaped key, ...)."""
    from boundary_api.video import _scan

    return _scan.scan_ground_truth(gt, 1) is not None and _scan.scan_results(res, 1) is not None


def draw_case(data, valid: bool = False):
    """A ground truth, results and evaluation steps from hypothesis' ``data``."""
    from hypothesis import strategies as st

    seed = data.draw(st.integers(0, 2 ** 63 - 1))
    suspect = 0.0 if valid else data.draw(st.sampled_from([0.0, 0.0, 0.3, 1.0]))
    unusual = data.draw(st.sampled_from([0.0, 0.2, 0.6]))
    rng = np.random.default_rng(seed)
    gt, res = documents(rng, suspect)
    steps = [(data.draw(st.sampled_from(["segm", "boundary"])), {}, {})]
    if data.draw(st.booleans()):
        params = {}
        if data.draw(st.booleans()):
            params["useCats"] = 0
        if data.draw(st.booleans()):
            params["maxDets"] = [1, 2, data.draw(st.integers(1, 5))]
        steps.append((data.draw(st.sampled_from(["segm", "boundary"])), params, {}))
    return encode(rng, gt, unusual), encode(rng, res, unusual), steps


# ------------------------------------------------------------ the scanner's values
def values_of(out, kind, raw):
    """Per track of a scan of ``raw``: its scalars and frames as the scanner read them."""
    from boundary_api.video._ytvis_columns import Tracks

    t = Tracks(kind, raw, out["chunks"] if kind == "gt" else out, {}, "")
    tracks = []
    for r in range(t.n):
        frames = []
        for f in range(int(t.frame0[r]), int(t.frame0[r] + t.nframes[r])):
            k = int(t.frame_kind[f])
            if k == 0:
                frames.append(None)
                continue
            if k == 3:
                polys = []
                for p in range(int(t.frame_start[f]), int(t.frame_start[f] + t.frame_len[f])):
                    a = int(t.poly_end[p - 1]) if p else 0
                    polys.append(t.poly_coords[a:int(t.poly_end[p])].tolist())
                frames.append(("p", polys))
                continue
            buf = t.buffers[int(t.frame_which[f])]
            s, n = int(t.frame_start[f]), int(t.frame_len[f])
            h, w = int(t.frame_h[f]), int(t.frame_w[f])
            if k == 1:
                frames.append(("s", h, w, bytes(memoryview(buf)[s:s + n]).decode("ascii")))
            else:
                frames.append(("c", h, w, counts_of(bytes(memoryview(buf)[s:s + n]))))
        track = {"video_id": int(t.video_id[r]), "category_id": int(t.category_id[r]),
                 "height": int(t.height[r]), "width": int(t.width[r]), "frames": frames}
        if kind == "gt":
            a0, na = int(t.area0[r]), int(t.nareas[r])
            track.update(id=int(t.ann_id[r]), iscrowd=int(t.iscrowd[r]), areas=[
                None if t.area_kind[i] == 0 else (int(t.area_value[i]) if t.area_kind[i] == 1
                                                  else float(t.area_value[i])) for i in range(a0, a0 + na)])
        else:
            track["score"] = int(t.score[r]) if t.score_int[r] else float(t.score[r])
            track["frame_area"] = t.frame_area[t.frame0[r]:t.frame0[r] + t.nframes[r]].tolist()
        tracks.append(track)
    return tracks


def counts_of(raw: bytes) -> list:
    """Uncompressed counts as the scanner stores them (uint16 words, 0xFFFF
    then the high and low words of a larger count)."""
    words = np.frombuffer(raw, np.uint16).tolist()
    out, i = [], 0
    while i < len(words):
        v = words[i]
        i += 1
        if v == 0xFFFF:
            v = (words[i] << 16) | words[i + 1]
            i += 2
        out.append(v)
    return out


def _size(v):
    return v if type(v) is int and v >= 0 else -1


def expected_values(doc, kind):
    """:func:`values_of` from the JSON reader's objects."""
    anns = doc["annotations"] if kind == "gt" else doc
    out = []
    for a in anns:
        frames = []
        for s in a["segmentations"]:
            if not s:
                frames.append(None)
            elif isinstance(s, list):
                frames.append(("p", [[float(x) for x in poly] for poly in s]))
            elif isinstance(s["counts"], str):
                frames.append(("s", s["size"][0], s["size"][1], s["counts"]))
            else:
                frames.append(("c", s["size"][0], s["size"][1], s["counts"]))
        track = {"video_id": a["video_id"], "category_id": a["category_id"], "height": _size(a.get("height")),
                 "width": _size(a.get("width")), "frames": frames}
        if kind == "gt":
            track.update(id=a["id"], iscrowd=a["iscrowd"], areas=a["areas"])
        else:
            track["score"] = a["score"]
            track["frame_area"] = [0 if not s else int(mask_utils.area(dict(s, counts=s["counts"].encode())))
                                   for s in a["segmentations"]]
        out.append(track)
    return out
