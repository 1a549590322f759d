"""The differential fuzz suite's SA-Co family (run by fuzz_worker.py): a predictions file
read by ``boundary_api.saco`` and evaluated with ``CGF1Evaluator`` ('segm', 'bbox',
'boundary') twice: with the native reader (the instance results scanner with
``other_keys``), and with the values of every file it accepts taken from ``json.loads``
instead (:func:`json_columns`; a file it refuses is decoded by the JSON reader on both
sides).  Both sides take the same evaluation path, so what differs is only what was
read: the printed lines, the warnings, the class of an error, the returned dicts,
``stats``, ``eval`` and ``evalImgs`` must be equal, and every column read natively must
equal json.loads' value (ids ints, floats bit for bit, counts strings)."""
import contextlib
import io
import json
import os
import re
import struct
import warnings
from unittest import mock

IOU_TYPES = ("segm", "bbox", "boundary")


def _write(name, data):
    with open(name, "wb") as f:
        f.write(data)
    return os.path.abspath(name)


def _f64(x) -> bytes:
    return struct.pack("<d", float(x))


def columns_against_json(preds, data: bytes) -> str:
    """Where the columns of ``preds`` (read natively) differ from ``json.loads(data)``;
    "" when every value is equal (floats bit for bit, ids ints)."""
    doc = json.loads(data)
    if not isinstance(doc, list) or len(doc) != preds.n:
        return f"{len(doc) if isinstance(doc, list) else type(doc).__name__} predictions != {preds.n} rows"
    for i, obj in enumerate(doc):
        for key, col in (("image_id", preds.image_id), ("category_id", preds.category_id)):
            if type(obj[key]) is not int or obj[key] != int(col[i]):
                return f"row {i}: {key} {obj[key]!r} != {int(col[i])}"
        if _f64(obj["score"]) != _f64(preds.score[i]):
            return f"row {i}: score {obj['score']!r} != {float(preds.score[i])!r}"
        if ("bbox" in obj) != preds.has_bbox or ("segmentation" in obj) != preds.has_segmentation:
            return f"row {i}: keys {sorted(obj)} (has_bbox {preds.has_bbox}, has_segmentation {preds.has_segmentation})"
        if preds.has_bbox and [_f64(v) for v in obj["bbox"]] != [_f64(v) for v in preds.bbox[i]]:
            return f"row {i}: bbox {obj['bbox']!r} != {preds.bbox[i].tolist()}"
        if preds.has_segmentation:
            seg = obj["segmentation"]
            s, n = int(preds.counts_start[i]), int(preds.counts_len[i])
            got = bytes(preds.counts[s:s + n]).decode("latin-1")
            if seg["size"] != [int(preds.seg_h[i]), int(preds.seg_w[i])] or seg["counts"] != got:
                return f"row {i}: segmentation {seg!r} != size {[int(preds.seg_h[i]), int(preds.seg_w[i])]}, {got!r}"
    return ""


def json_columns(preds, data: bytes) -> None:
    """Replace the columns of ``preds`` (read natively) by ``json.loads(data)``'s values."""
    import numpy as np

    doc = json.loads(data)
    n = len(doc)
    preds.image_id = np.array([o["image_id"] for o in doc], np.int64).reshape(n)
    preds.category_id = np.array([o["category_id"] for o in doc], np.int64).reshape(n)
    preds.score = np.array([float(o["score"]) for o in doc], np.float64).reshape(n)
    preds.bbox = np.array([[float(v) for v in o["bbox"]] if preds.has_bbox else [0.0] * 4 for o in doc],
                          np.float64).reshape(n, 4)
    sizes = np.array([o["segmentation"]["size"] if preds.has_segmentation else [0, 0] for o in doc],
                     np.int64).reshape(n, 2)
    preds.seg_h, preds.seg_w = sizes[:, 0].copy(), sizes[:, 1].copy()
    strings = [o["segmentation"]["counts"].encode("ascii") if preds.has_segmentation else b"" for o in doc]
    preds.counts_len = np.array([len(x) for x in strings], np.int64).reshape(n)
    preds.counts_start = np.concatenate(([0], np.cumsum(preds.counts_len)[:-1])).astype(np.int64)[:n]
    preds.counts = np.frombuffer(b"".join(strings) + b"\0", np.uint8).copy()


def run(gt_paths, pred_path, data: bytes, columns: bool = True) -> dict:
    """Read ``pred_path`` and evaluate it against ``gt_paths`` for each IoU type,
    with the native reader or (``columns=False``) with json.loads' values in its
    columns; what a user reads, and ``fast`` (whether the file was read into
    columns)."""
    from boundary_api.instance import SuspectInputWarning
    from boundary_api.saco import CGF1Evaluator, _inputs

    native = _inputs._columns

    def from_json(out, buf, num_threads):
        if not native(out, buf, num_threads):
            return False
        json_columns(out, bytes(buf))
        return True

    out: dict = {}
    printed = io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.ExitStack() as stack:
        warnings.simplefilter("always")
        if not columns:
            stack.enter_context(mock.patch.object(_inputs, "_columns", from_json))
        stack.enter_context(contextlib.redirect_stdout(printed))
        try:
            preds = _inputs.read_predictions(pred_path)
            out["fast"] = preds.fast
            if preds.fast:
                out["column_diff"] = columns_against_json(preds, data)
        except Exception as exc:  # noqa: BLE001 - compared between the readers
            out["fast"] = False
            out["read error"] = type(exc).__name__
        for iou in IOU_TYPES:
            try:
                ev = CGF1Evaluator(list(gt_paths), iou)
                result = ev.evaluate(pred_path)
                first = ev.coco_evals[0]
                out[iou] = {"result": result, "stats": first.stats, "eval_img_ids": ev.eval_img_ids,
                            "eval": {k: v for k, v in first.eval.items() if k != "params"},
                            "evalImgs": first.evalImgs}
            except Exception as exc:  # noqa: BLE001
                out[iou] = ("error", type(exc).__name__, [c.__name__ for c in type(exc).__mro__])
    out["printed"] = [re.sub(r"t=\d+\.\d+s", "t=<t>s", line) for line in printed.getvalue().splitlines()]
    out["warnings"] = [(w.category.__name__, str(w.message)) for w in caught
                       if issubclass(w.category, (SuspectInputWarning, UserWarning))]
    return out


def compare_saco(case: dict, side: str):
    from fuzz_compare import diff

    gt_paths = [_write(f"gt_{k}.json", g) for k, g in enumerate(case["gts"])]
    pred_path = _write("predictions.json", case["data"])

    def ours():
        return run(gt_paths, pred_path, case["data"])

    def theirs():
        return run(gt_paths, pred_path, case["data"], columns=False)

    if side != "both":
        (ours if side == "ours" else theirs)()
        return {"status": "ran"}
    a, b = ours(), theirs()
    if a.get("column_diff"):
        return {"status": "mismatch", "detail": "columns against json.loads: " + a["column_diff"]}
    fast = a.pop("fast")
    if fast != b.pop("fast"):
        return {"status": "mismatch", "detail": "read natively on one side only"}
    a.pop("column_diff", None)
    b.pop("column_diff", None)
    d = diff(a, b)
    if d:
        return {"status": "mismatch", "detail": d}
    errors = [a[k] for k in IOU_TYPES if isinstance(a[k], tuple)]
    native = ", read natively" if fast else ""
    if len(errors) == len(IOU_TYPES):
        return {"status": "both_refused" + native, "detail": errors[0][1]}
    return {"status": "same" + native}
