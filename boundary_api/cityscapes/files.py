"""Cityscapes' files: the label table, finding ground-truth and prediction files,
reading prediction lists and PNG masks, the protocol's constants (classes, overlaps,
minimum region sizes) (refused from the header when too large), and the
exceptions of cityscapesScripts' classes that bad input raises."""
from __future__ import annotations

import bisect
import logging
import math
import os
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from . import _kernels
from .._io import named_as
from ..masks import _png
from ..masks.imagefiles import DEFAULT_MAX_PIXELS, ImageTooLargeError, _pillow_bomb_limit, check_image_file

logger = logging.getLogger(__name__)


@named_as("SystemExit")
class CityscapesInputError(ValueError, SystemExit):
    """Input that cityscapesScripts refuses by printing an error and exiting
    (``SystemExit``): a missing or malformed prediction file, an image without
    (or with several) prediction files.  Also a ValueError, as every input
    error of this package; uncaught, it ends the program with its message, as
    cityscapesScripts does."""

    def __init__(self, message: str):
        ValueError.__init__(self, message)
        self.code = message

    __str__ = BaseException.__str__


@named_as("KeyError")
class CityscapesKeyError(ValueError, KeyError):
    """An unknown Cityscapes label id (cityscapesScripts: KeyError)."""

    __str__ = BaseException.__str__   # the message as is (KeyError would quote it)


@named_as("FileNotFoundError")
class CityscapesFileNotFoundError(ValueError, FileNotFoundError):
    """A missing ground-truth image or mask (cityscapesScripts: Pillow's
    FileNotFoundError)."""

    def __init__(self, message: str):
        ValueError.__init__(self, message)

    __str__ = BaseException.__str__


def _suspect(message: str, strict: bool) -> None:
    """Input cityscapesScripts accepts silently: a warning, or with
    ``strict=True`` a ValueError."""
    if strict:
        raise ValueError(message)
    warnings.warn(message, stacklevel=3)


# Cityscapes labels: id -> (name, has instances, ignored in evaluation).
# (cityscapesscripts.helpers.labels; the test suite checks this table against it.)
LABELS: Dict[int, Tuple[str, bool, bool]] = {
    0: ("unlabeled", False, True), 1: ("ego vehicle", False, True),
    2: ("rectification border", False, True), 3: ("out of roi", False, True),
    4: ("static", False, True), 5: ("dynamic", False, True), 6: ("ground", False, True),
    7: ("road", False, False), 8: ("sidewalk", False, False), 9: ("parking", False, True),
    10: ("rail track", False, True), 11: ("building", False, False), 12: ("wall", False, False),
    13: ("fence", False, False), 14: ("guard rail", False, True), 15: ("bridge", False, True),
    16: ("tunnel", False, True), 17: ("pole", False, False), 18: ("polegroup", False, True),
    19: ("traffic light", False, False), 20: ("traffic sign", False, False),
    21: ("vegetation", False, False), 22: ("terrain", False, False), 23: ("sky", False, False),
    24: ("person", True, False), 25: ("rider", True, False), 26: ("car", True, False),
    27: ("truck", True, False), 28: ("bus", True, False), 29: ("caravan", True, True),
    30: ("trailer", True, True), 31: ("train", True, False), 32: ("motorcycle", True, False),
    33: ("bicycle", True, False), -1: ("license plate", False, True),
}
#: The evaluated classes, in cityscapesScripts' order.
CLASSES: Tuple[str, ...] = tuple(n for i, (n, inst, ign) in sorted(LABELS.items(), key=lambda kv: (kv[0] < 0, kv[0]))
                                 if inst and not ign)
_CLASS_OF_LABEL = {i: CLASSES.index(n) for i, (n, _, _) in LABELS.items() if n in CLASSES}
_VOID_LABELS = np.array(sorted(i for i, (_, _, ign) in LABELS.items() if ign and i >= 0), np.int64)
#: Overlap thresholds (cityscapesScripts' ``np.arange(0.5, 1., 0.05)``).
OVERLAPS = np.arange(0.5, 1.0, 0.05)
MIN_REGION_SIZE = 100
# cityscapesScripts' settings for its three distance ranges (stereo data,
# not used: only the first range, [MIN_REGION_SIZE, inf m, any density], is
# evaluated, by cityscapesScripts as well); reported in the result dict
MIN_REGION_SIZES = (MIN_REGION_SIZE, 1000, 1000)
DISTANCE_THRESHOLDS = (float("inf"), 100.0, 50.0)
MIN_STEREO_DENSITIES = (-float("inf"), 0.5, 0.5)
GT_SUFFIX = "_gtFine_instanceIds.png"
IOU_TYPES = ("segm", "boundary")


# ----------------------------------------------------------------------------
# finding and reading files
# ----------------------------------------------------------------------------
def find_ground_truth(gt_dir) -> List[str]:
    """Ground-truth files ``<gt_dir>/*/*_gtFine_instanceIds.png``, sorted.

    Raises
    ------
    ValueError
        If ``gt_dir`` is not a folder or holds no such file.
    """
    gt_dir = os.fspath(gt_dir)
    if not os.path.isdir(gt_dir):
        raise CityscapesInputError(f"ground truth folder not found: {gt_dir}")
    found = []
    for city in sorted(os.listdir(gt_dir)):
        sub = os.path.join(gt_dir, city)
        if os.path.isdir(sub):
            found.extend(os.path.join(sub, f) for f in sorted(os.listdir(sub)) if f.endswith(GT_SUFFIX))
    if not found:
        raise CityscapesInputError(f"no ground truth images in {gt_dir}: expected <city>/*{GT_SUFFIX}")
    return found


def _core_name(gt_file: str) -> str:
    base = os.path.basename(gt_file)
    parts = base[:-len(GT_SUFFIX)].split("_") if base.endswith(GT_SUFFIX) else []
    if len(parts) != 3 or not all(parts):
        raise ValueError(f"not a Cityscapes ground truth file name (<city>_<seq>_<frame>{GT_SUFFIX}): {gt_file}")
    return "_".join(parts)


def find_predictions(gt_files: Sequence[str], result_dir) -> List[str]:
    """The prediction file of every ground-truth file, as cityscapesScripts finds it.

    For ``<city>_<seq>_<frame>_gtFine_instanceIds.png`` that is the one file
    named ``<city>_<seq>_<frame>*.txt`` anywhere under ``result_dir``.

    Raises
    ------
    ValueError
        If ``result_dir`` is not a folder, or an image has no prediction file
        or more than one.
    """
    result_dir = os.fspath(result_dir)
    if not os.path.isdir(result_dir):
        raise CityscapesInputError(f"results folder not found: {result_dir}")
    txt = sorted((name, os.path.join(root, name)) for root, _, names in os.walk(result_dir)
                 for name in names if name.endswith(".txt"))
    names = [n for n, _ in txt]
    out = []
    for gt in gt_files:
        core = _core_name(gt)
        i = bisect.bisect_left(names, core)
        hits = []
        while i < len(names) and names[i].startswith(core):
            hits.append(txt[i][1])
            i += 1
        if not hits:
            raise CityscapesInputError(f"no prediction file {core}*.txt under {result_dir} for ground truth {gt}")
        if len(hits) > 1:
            raise CityscapesInputError(f"several prediction files for ground truth {gt}: {', '.join(hits)}")
        out.append(hits[0])
    return out


def read_prediction_file(path, strict: bool = False) -> List[Tuple[str, int, float]]:
    """Lines ``relPath labelID confidence`` of a prediction file.

    A mask listed twice counts once, with its last line, as in
    cityscapesScripts, and a warning; ``strict=True`` refuses it.

    Returns
    -------
    list of (mask_path, label_id, confidence)
        ``mask_path`` is absolute (``relPath`` is relative to the file's
        folder).  A mask listed twice counts once, with its last label and
        confidence (as in cityscapesScripts).

    Raises
    ------
    CityscapesInputError
        On a missing file, a line without exactly three fields or an absolute
        path (where cityscapesScripts exits): a ValueError and a SystemExit.
    CityscapesKeyError
        On a label id that is not a Cityscapes label id (cityscapesScripts:
        KeyError): a ValueError and a KeyError.
    ValueError
        On a label id or confidence that is not a number, or a confidence
        that is not finite.  Blank lines and extra spaces are fine.
    """
    path = os.fspath(path)
    try:
        with open(path, "r") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        raise CityscapesInputError(f"prediction file not found: {path}") from None
    except UnicodeDecodeError:
        raise ValueError(f"prediction file is not text: {path}") from None
    folder = os.path.dirname(os.path.abspath(path))
    preds: Dict[str, Tuple[int, float]] = {}
    for n, line in enumerate(lines, 1):
        fields = line.split()
        if not fields:
            continue
        where = f"{path}, line {n}"
        if len(fields) != 3:
            raise CityscapesInputError(f"{where}: expected 'relPath labelID confidence', got {line.strip()!r}")
        rel, lab, conf = fields
        if os.path.isabs(rel):
            raise CityscapesInputError(f"{where}: the mask path must be relative to the prediction file, "
                                       f"got {rel!r}")
        try:
            label = float(lab)
            label_id = int(label)
        except (ValueError, OverflowError):
            raise ValueError(f"{where}: label id is not a number: {lab!r}") from None
        if label_id not in LABELS:
            raise CityscapesKeyError(f"{where}: unknown Cityscapes label id {lab!r} (regular ids -1..33, "
                                     "not train ids)")
        try:
            score = float(conf)
        except ValueError:
            raise ValueError(f"{where}: confidence is not a number: {conf!r}") from None
        if not math.isfinite(score):
            raise ValueError(f"{where}: confidence must be finite, got {conf!r}")
        mask = os.path.abspath(os.path.join(folder, rel))
        if mask in preds:
            _suspect(f"{where}: mask {rel} is listed more than once; its last line counts", strict)
        preds[mask] = (label_id, score)
    return [(m, lab, s) for m, (lab, s) in preds.items()]


_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _native_gray(blob: bytes, depths) -> bool:
    """Whether a file is a greyscale PNG of one of these bit depths that Pillow
    reads as the package's decoders do (non-interlaced, every chunk's CRC
    right, no chunk Pillow reads differently: ``_png.png_label_header``)."""
    info = _png.png_label_header(blob) if blob[:8] == _PNG_SIGNATURE else None
    return info is not None and info["color_type"] == 0 and info["depth"] in depths


def _idat(blob: bytes) -> Optional[Tuple[bytes, int, int]]:
    """(zlib stream, height, width) of a PNG file's bytes, or None."""
    w, h = int.from_bytes(blob[16:20], "big"), int.from_bytes(blob[20:24], "big")
    parts, i, n = [], 8, len(blob)
    while i + 8 <= n:
        size = int.from_bytes(blob[i:i + 4], "big")
        kind = blob[i + 4:i + 8]
        if kind == b"IDAT":
            parts.append(blob[i + 8:i + 8 + size])
        elif kind == b"IEND":
            break
        i += 12 + size
    if not parts or h < 1 or w < 1 or h * w > (1 << 31):
        return None
    return (parts[0] if len(parts) == 1 else b"".join(parts)), h, w


def _fast_gray(blob: bytes, depth: int) -> Optional[np.ndarray]:
    """A greyscale PNG (8 or 16 bit) decoded by the package's inflater (see
    ``_cityscapes.pxi``), or None to leave the file to Pillow."""
    found = _idat(blob)
    if found is None:
        return None
    z, h, w = found
    raw = _kernels.cs_png_gray(z, h, w, depth // 8)
    if raw is None or depth == 8:
        return raw
    return raw.view(">u2").astype(np.uint16)


class _PngMask:
    """An 8-bit greyscale PNG mask not decoded yet: the kernel decodes and
    scans it row by row (``cs_png_mask_stats``)."""

    __slots__ = ("path", "what", "zdata", "shape")

    def __init__(self, path, what, zdata, h, w):
        self.path, self.what, self.zdata, self.shape = path, what, zdata, (h, w)


def _mask_source(path: str, what: str, max_pixels: Optional[int] = DEFAULT_MAX_PIXELS):
    """A mask file as a :class:`_PngMask` when it is a plain 8-bit greyscale
    PNG, else as the array Pillow's mode "L" gives."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        blob = b""
    if blob:
        check_image_file(path, what, max_pixels, blob[:24])
    if _native_gray(blob, (8,)):
        found = _idat(blob)
        if found is not None:
            return _PngMask(path, what, *found)
    return _read_png(path, what, True, max_pixels)


def _read_png(path: str, what: str, mask: bool, max_pixels: Optional[int] = DEFAULT_MAX_PIXELS) -> np.ndarray:
    """Pixels of an image file as cityscapesScripts reads them: a mask as
    Pillow's mode "L" gives it (``convert("L")``, uint8), ground truth as
    ``np.array(Image.open(path))``.  8-bit greyscale masks and every
    single-channel ground truth PNG the package's label-map decoder takes
    are decoded here (the same pixels, much faster), anything else by
    Pillow.  An image of more than ``max_pixels`` pixels is refused from its
    header, before decoding."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError:
        blob = b""
    if blob:
        check_image_file(path, what, max_pixels, blob[:24])
    if mask and _native_gray(blob, (8,)):
        arr = _fast_gray(blob, 8)
        if arr is not None:
            return arr
    if not mask and blob[:8] == _PNG_SIGNATURE and not _pillow_bomb_limit(
            int.from_bytes(blob[16:20], "big"), int.from_bytes(blob[20:24], "big")):
        # ground truth: np.array(Image.open(path)), as cityscapesScripts reads it
        try:
            arr = _png.png_label_map(blob)
        except MemoryError:
            raise ImageTooLargeError(f"{what} {path} is too large to read into memory") from None
        if arr is not None:
            return arr
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as img:
            if mask and img.mode != "L":
                img = img.convert("L")
            return np.asarray(img)
    except FileNotFoundError:
        raise CityscapesFileNotFoundError(f"{what} not found: {path}") from None
    except Image.DecompressionBombError as exc:  # Pillow's own limit, with max_pixels=None
        raise ImageTooLargeError(f"{what} {path} is too large to read: {exc}") from None
    except MemoryError:
        raise ImageTooLargeError(f"{what} {path} is too large to read into memory") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise ValueError(f"cannot read {what} {path}: {exc}") from None
