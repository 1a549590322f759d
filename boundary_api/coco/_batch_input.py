"""The input side of :class:`boundary_api.coco.incremental.IncrementalEvaluator`:
torchmetrics-style per-image dicts checked and read into NumPy (any array type,
torch tensors on any device), boxes converted, masks compressed to RLE."""
from __future__ import annotations

import numpy as np

__all__ = ["check_side", "encode_masks", "to_numpy", "xywh", "is_torch", "Image"]


def is_torch(x) -> bool:
    t = type(x)
    return t.__module__.startswith("torch") and hasattr(x, "detach") and hasattr(x, "device")


def to_numpy(x, what: str) -> np.ndarray:
    """``x`` as a host NumPy array: NumPy arrays as they are, torch tensors
    (any device) through ``.cpu()``, other arrays through ``__array__`` or DLPack."""
    if isinstance(x, np.ndarray):
        return x
    if is_torch(x):
        return x.detach().cpu().numpy()
    try:
        return np.asarray(x)
    except Exception:  # noqa: BLE001 - try DLPack next
        pass
    if hasattr(x, "__dlpack__"):
        return np.from_dlpack(x)
    raise TypeError(f"{what}: cannot read a {type(x).__name__} as an array")


def shape_of(x) -> tuple:
    shape = getattr(x, "shape", None)
    if shape is None:
        shape = np.shape(x)
    return tuple(int(s) for s in shape)


def xywh(boxes: np.ndarray, box_format: str) -> np.ndarray:
    """Boxes as pycocotools' ``[x, y, w, h]``, float64; the arithmetic done in
    the boxes' own float type (as torchvision's ``box_convert`` does), then
    widened."""
    b = np.asarray(boxes)
    if b.dtype.kind not in "fiu":
        raise TypeError(f"boxes must be numbers, got dtype {b.dtype}")
    b = b.reshape(-1, 4)
    if b.dtype.kind in "iu":
        b = b.astype(np.float64)
    if box_format == "xywh":
        out = b
    elif box_format == "xyxy":
        out = np.stack([b[:, 0], b[:, 1], b[:, 2] - b[:, 0], b[:, 3] - b[:, 1]], axis=1)
    else:  # cxcywh
        half_w = b[:, 2] / b.dtype.type(2)
        half_h = b[:, 3] / b.dtype.type(2)
        x1 = b[:, 0] - half_w
        y1 = b[:, 1] - half_h
        x2 = b[:, 0] + half_w
        y2 = b[:, 1] + half_h
        out = np.stack([x1, y1, x2 - x1, y2 - y1], axis=1)
    return np.ascontiguousarray(out, np.float64)


class Image:
    """One image's input, checked and ready for the background thread."""

    __slots__ = ("key", "h", "w", "gt", "dt", "evaluated")

    def __init__(self, key, h, w, gt, dt, evaluated=True):
        self.key, self.h, self.w, self.gt, self.dt, self.evaluated = key, h, w, gt, dt, evaluated


def check_side(item: dict, n: int, side: str, need_masks: bool, need_boxes: bool, is_pred: bool) -> dict:
    """One image's dict of ``preds`` or ``target``, its structure checked (shapes only:
    nothing is read from a device here)."""
    keys = ["labels"] + (["scores"] if is_pred else [])
    if need_boxes:
        keys.append("boxes")
    if need_masks:
        keys.append("masks")
    for k in keys:
        if k not in item:
            raise ValueError(f"image {n}: every dict of {side} needs '{k}'")
    shape = shape_of(item["labels"])
    if len(shape) > 1:
        raise ValueError(f"image {n}: {side} 'labels' must be 1-D, got shape {shape}")
    num = shape[0] if shape else 1
    out = {"n": num, "labels": item["labels"]}
    for k in ("scores", "iscrowd", "area"):
        if k in item and (k != "scores" or is_pred) and (k == "scores" or not is_pred):
            s = shape_of(item[k])
            if (s[0] if s else 1) != num or len(s) > 1:
                raise ValueError(f"image {n}: {side} '{k}' has shape {s} for {num} labels")
            out[k] = item[k]
    if need_boxes:
        s = shape_of(item["boxes"])
        if not ((len(s) == 2 and s[1] == 4 and s[0] == num) or (num == 0 and s in ((0,), (0, 4)))):
            raise ValueError(f"image {n}: {side} 'boxes' must be ({num}, 4), got shape {s}")
        out["boxes"] = item["boxes"]
    if need_masks:
        s = shape_of(item["masks"])
        if len(s) != 3 or s[0] != num:
            if num == 0 and (len(s) == 1 and s[0] == 0 or len(s) == 3 and s[0] == 0):
                out["masks"] = None
            else:
                raise ValueError(f"image {n}: {side} 'masks' must be ({num}, H, W), got shape {s}")
        else:
            if s[1] < 1 or s[2] < 1:
                raise ValueError(f"image {n}: {side} 'masks' of an empty image {s[1:]}")
            out["masks"] = item["masks"]
            out["hw"] = (s[1], s[2])
    return out

def encode_masks(masks, im: Image) -> list:
    """Compressed RLE counts (bytes) of ``(N, H, W)`` masks, as pycocotools encodes them."""
    if masks is None:
        return []
    import pycocotools.mask as mask_utils

    arr = to_numpy(masks, "masks")
    if arr.shape[0] == 0:
        return []
    binary = arr.view(np.uint8) if arr.dtype == bool else (arr != 0).view(np.uint8)
    fortran = np.asfortranarray(binary.transpose(1, 2, 0))
    return [r["counts"] for r in mask_utils.encode(fortran)]
