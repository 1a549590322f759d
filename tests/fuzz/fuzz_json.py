"""Generated COCO / LVIS JSON for the differential fuzz suite: small ground
truths and results files that are valid but unusual JSON, written by this
module's own serialiser (every escape of every string character, surrogate
pairs and lone surrogates, every spelling of every number, any whitespace,
duplicate keys, extra fields, deep nesting, shuffled keys).

Everything is drawn from a ``numpy.random.Generator``: the same seed gives
the same files.
"""
from __future__ import annotations

import json
import math
import random

import numpy as np
import pycocotools.mask as mask_utils

WHITESPACE = ["", "", "", " ", "  ", "\n", "\t", "\r\n", " \n\t "]
SHORT_ESCAPES = {'"': '\\"', "\\": "\\\\", "/": "\\/", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r",
                 "\t": "\\t"}
# pieces of free text: ASCII, accents, CJK, emoji (outside the BMP), controls, quotes
TEXT = ["a", "Z", "0", " ", "_", "-", "é", "ß", "猫", "😀", "𝄞", "\n", "\t", "\x01", "\x1f", "\x7f", '"', "\\", "/",
        "\u2028", "\ufeff", "\ufffd"]
# lone surrogates: json.loads reads them from escapes (pycocotools too); put in text only
LONE = ["\ud800", "\udbff", "\udc00", "\udfff"]
# (issue 40, item 3, handled on branch trust3, is kept out of these files: RLE
# sizes of 0 or 0.5, image sizes like 5e-324, RLE counts as floats, polygon
# coordinates and scores written as integers of hundreds of digits)


class Writer:
    """A JSON serialiser that spells every value in a randomly chosen valid way."""

    def __init__(self, rng, unusual: float = 0.5):
        # (Python's generator, seeded from ``rng``: a draw per character)
        self.r = random.Random(int(rng.integers(2 ** 63)))
        self.unusual = unusual  # how often an unusual spelling is chosen

    def _p(self, p=None) -> bool:
        return self.r.random() < (self.unusual if p is None else p)

    def ws(self) -> str:
        return self.r.choice(WHITESPACE) if self._p() else ""

    def string(self, s: str) -> str:
        out = ['"']
        for ch in s:
            code = ord(ch)
            if ch in SHORT_ESCAPES and (ch in '"\\' or code < 0x20 or self._p(0.5)):
                if ch in '"\\' or ch in "\b\f\n\r\t" or ch == "/":
                    out.append(SHORT_ESCAPES[ch] if self._p(0.7) else f"\\u{code:04x}")
                    continue
            if code < 0x20 or 0xD800 <= code <= 0xDFFF or (self._p(0.15) and code < 0x10000):
                out.append(f"\\u{code:04x}" if self._p(0.5) else f"\\u{code:04X}")
            elif code >= 0x10000 and self._p(0.5):
                hi = 0xD800 + ((code - 0x10000) >> 10)
                lo = 0xDC00 + ((code - 0x10000) & 0x3FF)
                out.append(f"\\u{hi:04x}\\u{lo:04X}")
            else:
                out.append(ch)
        out.append('"')
        return "".join(out)

    def integer(self, v: int) -> str:
        if v == 0 and self._p(0.3):
            return "-0"   # json.loads: the int 0
        return str(v)

    def floating(self, v: float) -> str:
        """A spelling of ``v`` (json.loads of it may round to another double:
        both readers read the same bytes)."""
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        if not self._p():
            return repr(v)
        kind = int(self.r.randrange(8))
        if kind == 0:
            t = f"{v:.17g}"
            return t if ("." in t or "e" in t) else t + ".0"
        if kind == 1:
            return f"{v:.16e}".replace("e", "E")
        if kind == 2:
            m, e = f"{v:.17e}".split("e")
            return f"{m}e{int(e):+04d}"                                   # 1.5e+005
        if kind == 3 and v == int(v) and abs(v) < 1e15:
            k = int(self.r.randrange(1, 5))
            return f"{int(v) * 10 ** k}e-{k}"                            # 2.0 as 20000e-4
        if kind == 4:
            return repr(v).replace("e", "E") if "e" in repr(v) else repr(v) + "0" * int(self.r.randrange(1, 6))
        if kind == 5:
            m, e = f"{v:.17e}".split("e")
            return m + "0" * int(self.r.randrange(20, 400)) + "e" + e   # a long mantissa
        if kind == 6 and abs(v) < 1e6:
            return f"{v:.{int(self.r.randrange(0, 40))}f}" + ("" if self._p(0.5) else "e0")
        t = f"{v:.25g}"
        return t if ("." in t or "e" in t) else t + "e0"

    def value(self, v, depth=0) -> str:
        if v is None:
            return "null"
        if v is True:
            return "true"
        if v is False:
            return "false"
        if isinstance(v, int):
            return self.integer(v)
        if isinstance(v, float):
            return self.floating(v)
        if isinstance(v, str):
            return self.string(v)
        if isinstance(v, Raw):
            return v.text
        if isinstance(v, Dup):
            return self.obj(v.items, depth)
        if isinstance(v, dict):
            return self.obj(list(v.items()), depth)
        if isinstance(v, (list, tuple)):
            if not v:
                return "[" + self.ws() + "]"
            return "[" + ",".join(self.ws() + self.value(x, depth + 1) + self.ws() for x in v) + "]"
        raise TypeError(type(v))

    def obj(self, items, depth) -> str:
        if not items:
            return "{" + self.ws() + "}"
        return "{" + ",".join(self.ws() + self.string(k) + self.ws() + ":" + self.ws() + self.value(x, depth + 1)
                              + self.ws() for k, x in items) + "}"

    def dumps(self, v) -> bytes:
        return (self.ws() + self.value(v) + self.ws()).encode("utf-8", "surrogatepass")


class Dup:
    """An object written with these (key, value) pairs, repeated keys and all."""

    def __init__(self, items):
        self.items = list(items)


def with_duplicates(rng, d: dict, p: float):
    """``d`` as a :class:`Dup` whose keys may come twice (a decoy value first,
    the real one last: json.loads keeps the last one, at the first one's place)."""
    items = list(d.items())
    if not items or rng.random() >= p:
        return d
    out = []
    for k, v in items:
        if rng.random() < 0.3:
            out.append((k, decoy(rng, v)))
        out.append((k, v))
    if rng.random() < 0.5:
        k, v = items[int(rng.integers(len(items)))]
        out.append((k, v))   # the same value once more, later
    return Dup(out)


def decoy(rng, v):
    """A value of another kind for a key written twice."""
    choices = [None, "decoy", -1, 1.5, [1, 2], {"x": 1}, True]
    return choices[int(rng.integers(len(choices)))]


def number(rng, lo, hi, as_int_p=0.5):
    """A number in [lo, hi]: an int or a float (sometimes integral)."""
    if rng.random() < as_int_p:
        return int(rng.integers(int(lo), int(hi) + 1))
    v = float(rng.uniform(lo, hi))
    r = rng.random()
    if r < 0.2:
        return float(round(v))
    if r < 0.35:
        return round(v, int(rng.integers(0, 4)))
    return v


def text(rng, n_max=8, lone=False) -> str:
    pool = TEXT + (LONE if lone else [])
    return "".join(pool[int(rng.integers(len(pool)))] for _ in range(int(rng.integers(0, n_max + 1))))


def extra_value(rng, depth=0):
    """A random JSON value for an extra field (nested, any kind)."""
    r = rng.random()
    if depth > 3 or r < 0.4:
        kind = int(rng.integers(7))
        return [None, True, False, int(rng.integers(-10 ** 6, 10 ** 6)),
                float(rng.normal() * 10.0 ** int(rng.integers(-5, 5))),
                text(rng, lone=rng.random() < 0.2), int(rng.integers(0, 2 ** 62)) * 10 ** int(rng.integers(0, 8))][kind]
    if r < 0.7:
        return [extra_value(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))]
    return {text(rng, 5) or "k": extra_value(rng, depth + 1) for _ in range(int(rng.integers(0, 4)))}


class Raw:
    """JSON text written as it is."""

    def __init__(self, text: str):
        self.text = text


def deep_value(depth: int, kind: str) -> Raw:
    """A list or object nested ``depth`` levels, as text."""
    if kind == "list":
        return Raw("[" * depth + "1" + "]" * depth)
    return Raw('{"a":' * depth + "1" + "}" * depth)


EXTRA_KEYS = ["extra", "attributes", "ignore", "is_fake", "note", "caption_en", "ñame", "", "id2", "source",
              "🙂", "meta"]


def add_extras(rng, d: dict, p: float) -> dict:
    if rng.random() < p:
        for _ in range(int(rng.integers(1, 4))):
            d[EXTRA_KEYS[int(rng.integers(len(EXTRA_KEYS)))]] = extra_value(rng)
    return d


def shuffled(rng, d: dict, p: float) -> dict:
    if rng.random() >= p:
        return d
    keys = list(d)
    rng.shuffle(keys)
    return {k: d[k] for k in keys}


def random_mask(rng, h, w):
    m = np.zeros((h, w), np.uint8)
    for _ in range(int(rng.integers(0, 4))):
        y, x = int(rng.integers(0, h)), int(rng.integers(0, w))
        m[y:y + int(rng.integers(1, h + 1)), x:x + int(rng.integers(1, w + 1))] = 1
    if rng.random() < 0.2:
        m ^= (rng.random((h, w)) < 0.2).astype(np.uint8)
    return m


def rle_string(mask: np.ndarray) -> dict:
    r = mask_utils.encode(np.asfortranarray(mask))
    return {"size": [int(r["size"][0]), int(r["size"][1])], "counts": r["counts"].decode("ascii")}


def rle_list(mask: np.ndarray) -> dict:
    """The uncompressed RLE (a list of counts) of a mask."""
    return {"size": [int(mask.shape[0]), int(mask.shape[1])], "counts": runs_of(mask)}


def runs_of(mask: np.ndarray) -> list:
    """Run lengths of a mask in column-major order, background first."""
    flat = mask.flatten(order="F").astype(np.int8)
    bounds = np.concatenate([[0], np.flatnonzero(np.diff(flat)) + 1, [flat.size]])
    counts = np.diff(bounds).tolist()
    return [0] + counts if flat.size and flat[0] else counts


def counts_to_string(counts, rng=None, overlong: float = 0.0) -> str:
    """COCO's compressed RLE string of a list of run lengths (written here from
    the format's description: each count, from the fourth on as the difference
    with the count two places before, in 5-bit groups, low first, each group
    with a continuation bit and the sign in the last group, plus 48).  With
    ``overlong``, that share of the numbers gets extra groups (0, or 31 for
    negative numbers), which decoders read as the same number, up to 6
    groups in all (pycocotools shifts the groups as C ints: beyond 30 bits
    its result is undefined)."""
    out = []
    for i, c in enumerate(counts):
        x = int(c) - (int(counts[i - 2]) if i > 2 else 0)
        extra = int(rng.integers(1, 4)) if rng is not None and rng.random() < overlong else 0
        groups = 0
        while True:
            ch = x & 0x1F
            x >>= 5
            groups += 1
            more = not ((ch & 0x10) == 0 and x == 0 or (ch & 0x10) != 0 and x == -1)
            if not more and extra and groups < 6:
                more, extra = True, extra - 1
            if more:
                ch |= 0x20
            out.append(chr(ch + 48))
            if not more:
                break
    return "".join(out)


def polygon(rng, h, w):
    n = int(rng.integers(3, 8))
    pts = []
    for _ in range(n):
        pts += [number(rng, 0, w, 0.3), number(rng, 0, h, 0.3)]
    return pts


def ground_truth(rng, lvis: bool = False, p: float = 0.4) -> dict:
    """A small COCO (or LVIS) ground truth with unusual content."""
    n_img = int(rng.integers(1, 4))
    cat_ids = sorted(set(int(rng.integers(1, 10 ** int(rng.integers(1, 6)))) for _ in range(int(rng.integers(1, 4)))))
    images = []
    for _ in range(n_img):
        iid = int(rng.integers(0, 10 ** int(rng.integers(1, 18))))
        while any(i["id"] == iid for i in images):
            iid += 1
        h, w = int(rng.integers(1, 50)), int(rng.integers(1, 50))
        img = {"id": iid, "height": h, "width": w, "file_name": text(rng, 10) + ".jpg"}
        if lvis:
            img["neg_category_ids"] = [c for c in cat_ids if rng.random() < 0.3]
            img["not_exhaustive_category_ids"] = [c for c in cat_ids if rng.random() < 0.3]
        if rng.random() < p:
            img["license"] = int(rng.integers(0, 9))
        images.append(shuffled(rng, add_extras(rng, img, p * 0.5), p))
    anns = []
    aid = int(rng.integers(1, 10 ** int(rng.integers(1, 12))))
    for _ in range(int(rng.integers(1, 7))):
        img = images[int(rng.integers(len(images)))]
        h, w = img["height"], img["width"]
        kind = rng.random()
        mask = random_mask(rng, h, w)
        crowd = 0
        if kind < 0.5:
            seg = [polygon(rng, h, w) for _ in range(int(rng.integers(1, 3)))]
        elif kind < 0.75 and not lvis:
            seg, crowd = rle_list(mask), 1
        else:
            seg = rle_string(mask)
            crowd = int(rng.random() < 0.3) if not lvis else 0
        x, y = number(rng, 0, w), number(rng, 0, h)
        ann = {"id": aid, "image_id": img["id"], "category_id": cat_ids[int(rng.integers(len(cat_ids)))],
               "segmentation": seg, "area": number(rng, 0, h * w), "bbox": [x, y, number(rng, 0, w), number(rng, 0, h)]}
        if not lvis or rng.random() < 0.3:
            ann["iscrowd"] = crowd
        if rng.random() < p * 0.2:
            ann["area"] = [float("nan"), float("inf"), 1e308, -0.0][int(rng.integers(4))]
        anns.append(shuffled(rng, add_extras(rng, ann, p * 0.5), p))
        aid += int(rng.integers(1, 1000))
    cats = []
    for c in cat_ids:
        cat = {"id": c, "name": text(rng, 6, lone=rng.random() < 0.2) or "c", "supercategory": text(rng, 4)}
        if lvis:
            cat["frequency"] = "rcf"[int(rng.integers(3))]
            cat["synset"] = text(rng, 5)
            cat["image_count"] = int(rng.integers(0, 9))
        cats.append(shuffled(rng, add_extras(rng, cat, p * 0.5), p))
    doc = {"images": images, "annotations": anns, "categories": cats}
    if rng.random() < p:
        doc["info"] = {"description": text(rng, 12, lone=True), "year": int(rng.integers(1900, 2100)),
                       "version": number(rng, 0, 10)}
    if rng.random() < p:
        doc["licenses"] = [{"id": 1, "name": text(rng, 5), "url": "http:\u002f\u002fexample.org"}]
    if rng.random() < p * 0.5:
        # deep nesting, kept clear of Python's recursion limit (within a few
        # levels of it, json's refusal depends on the caller's stack depth)
        depth = int(rng.choice([2, 10, 50, 200, 600, 900, 1200, 5000]))
        doc["deep"] = deep_value(depth, "list" if rng.random() < 0.5 else "dict")
    doc = shuffled(rng, add_extras(rng, doc, p * 0.3), p)
    return with_duplicates(rng, doc, p * 0.2) if rng.random() < p else doc


def results(rng, gt: dict, p: float = 0.4, lvis: bool = False) -> list:
    """Results for the images of ``gt``: boxes, RLE masks or both (sometimes
    polygons with boxes, keypoints), scores in every spelling."""
    images = gt["images"] if isinstance(gt, dict) else dict(gt.items)["images"]
    cats = gt["categories"] if isinstance(gt, dict) else dict(gt.items)["categories"]
    cat_ids = [c["id"] for c in cats]
    style = rng.random()
    out = []
    for _ in range(int(rng.integers(1, 8))):
        img = images[int(rng.integers(len(images)))]
        h, w = img["height"], img["width"]
        r = {"image_id": img["id"], "category_id": cat_ids[int(rng.integers(len(cat_ids)))]}
        score = number(rng, 0, 1, 0.1)
        if rng.random() < p * 0.1:
            score = [1e-320, 5e-324, 1.0000000000000002, 0.9999999999999999][int(rng.integers(4))]
        r["score"] = score
        bbox = [number(rng, 0, w), number(rng, 0, h), number(rng, 0, w), number(rng, 0, h)]
        if style < 0.35:
            r["bbox"] = bbox
        elif style < 0.8:
            r["segmentation"] = rle_string(random_mask(rng, h, w))
            if rng.random() < 0.3:
                r["bbox"] = bbox
        elif style < 0.9 and not lvis:
            r["bbox"] = bbox
            r["segmentation"] = [polygon(rng, h, w)]
        elif not lvis:
            r["bbox"] = bbox
            r["keypoints"] = [number(rng, 0, w) if k % 3 != 2 else int(rng.integers(0, 3)) for k in range(9)]
        else:
            r["bbox"] = bbox
        out.append(shuffled(rng, add_extras(rng, r, p * 0.4), p))
    out = [with_duplicates(rng, r, p * 0.2) for r in out]
    return out


def encode_doc(rng, doc, p: float = 0.5) -> bytes:
    return Writer(rng, p).dumps(doc)


def mutate(rng, raw: bytes) -> bytes:
    """1 to 4 bytes set, inserted or deleted, drawn toward JSON's own characters."""
    special = b'"\\,:[]{}0123456789eE+-.utfn \x00\x80\xff\xed\xef\xbb\xbf'
    out = bytearray(raw)
    for _ in range(int(rng.integers(1, 5))):
        if not out:
            out.append(int(rng.integers(256)))
            continue
        op = int(rng.integers(3))
        i = int(rng.integers(len(out)))
        b = special[int(rng.integers(len(special)))] if rng.random() < 0.7 else int(rng.integers(256))
        if op == 0:
            out[i] = b
        elif op == 1:
            out.insert(i, b)
        else:
            del out[i]
    return bytes(out)


def plain(doc):
    """``doc`` with every :class:`Dup` replaced by the dict json.loads makes of it."""
    if isinstance(doc, Raw):
        return None   # (deep nesting: not needed where plain values are)
    if isinstance(doc, Dup):
        d = {}
        for k, v in doc.items:
            d[k] = plain(v)
        return d
    if isinstance(doc, dict):
        return {k: plain(v) for k, v in doc.items()}
    if isinstance(doc, list):
        return [plain(v) for v in doc]
    return doc
