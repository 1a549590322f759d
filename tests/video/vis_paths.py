"""YouTube-VIS loading and evaluation through the public API, on the native
column path (files scanned into arrays, dicts made when read) or forced onto
the dict path (``read_json`` and Python dicts, as before the scanner), with
everything a user reads collected for comparison: printed lines, warnings,
errors, every evaluation's numbers, ``ious``, ``evalImgs``, ``_gts`` /
``_dts``, and the datasets' dicts and indexes.  Used by test_ytvis_columns.py
and the differential fuzz suite (tests/fuzz, family ``vis``)."""
import contextlib
import io
import re
import warnings
from unittest import mock

from boundary_api.instance._checks import SuspectInputWarning
from boundary_api.video import YTVOS, YTVOSeval, _ytvis_columns
from boundary_api.video.ytvos import tracks_of


@contextlib.contextmanager
def dict_path():
    """Within the block, YTVOS and loadRes never take the column path."""
    with mock.patch.object(_ytvis_columns, "load_ground_truth", lambda *a, **k: None), \
            mock.patch.object(_ytvis_columns, "load_results", lambda *a, **k: None):
        yield


def _lines(text):
    return [re.sub(r"t=\d+\.\d+s", "t=<t>s", line) for line in text.splitlines()]


def _dataset_view(obj):
    """What a user reads of a YTVOS (its dicts made if they were not)."""
    return {"dataset": obj.dataset, "anns": obj.anns, "vids": obj.vids, "cats": obj.cats,
            "vidToAnns": dict(obj.vidToAnns), "catToVids": dict(obj.catToVids),
            "getAnnIds": obj.getAnnIds(), "getVidIds": obj.getVidIds(), "getCatIds": obj.getCatIds()}


def _same_objects(groups, anns) -> bool:
    """Whether every dict of ``_gts``/``_dts`` is one of the dataset's (not a copy)."""
    ids = {id(a) for a in anns}
    return all(id(a) in ids for v in groups.values() for a in v)


def run(gt_file, results, steps, *, strict=False, get_boundary=False, dilation_ratio=0.02,
        read_between=False, columns=True) -> dict:
    """Load ``gt_file``, ``loadRes(results)`` and run ``steps`` (a list of
    ``(iouType, {param: value}, {YTVOSeval keyword: value})``) in that order;
    with ``read_between`` the dicts are read after the first evaluation (the
    others then run on dicts).  Returns what a user reads; ``paths`` says
    which objects were read as columns."""
    out: dict = {"paths": []}
    printed = io.StringIO()
    gt = dt = None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with contextlib.ExitStack() as stack:
            if not columns:
                stack.enter_context(dict_path())
            stack.enter_context(contextlib.redirect_stdout(printed))
            try:
                gt = YTVOS(gt_file, get_boundary=get_boundary, dilation_ratio=dilation_ratio, strict=strict)
                out["paths"].append(("gt", tracks_of(gt) is not None))
                dt = gt.loadRes(results)
                out["paths"].append(("results", tracks_of(dt) is not None))
                for k, (iou_type, params, kw) in enumerate(steps):
                    ev = YTVOSeval(gt, dt, iou_type, **kw)
                    for name, value in params.items():
                        setattr(ev.params, name, value)
                    ev.evaluate()
                    ev.accumulate()
                    ev.summarize()
                    out["paths"].append((f"evaluation {k}", ev._state is not None and ev._state.gt_columns
                                         is not None))
                    out[f"evaluation {k}"] = {
                        "stats": ev.stats, "eval": {n: ev.eval[n] for n in ("counts", "precision", "recall",
                                                                          "scores")},
                        "ious": dict(ev.ious), "evalImgs": ev.evalImgs, "_gts": dict(ev._gts),
                        "_dts": dict(ev._dts), "params": {n: getattr(ev.params, n) for n in (
                            "vidIds", "catIds", "iouThrs", "recThrs", "maxDets", "areaRng", "useCats")}}
                    out[f"evaluation {k} same dicts"] = (_same_objects(ev._gts, gt.dataset["annotations"])
                                                         and _same_objects(ev._dts, dt.dataset["annotations"]))
                    if read_between and k == 0:
                        gt.anns  # noqa: B018 - makes the dicts
                        dt.anns  # noqa: B018
            except Exception as exc:  # noqa: BLE001 - compared between the paths
                out["error"] = (type(exc).__name__, [c.__name__ for c in type(exc).__mro__], str(exc))
        out["printed"] = _lines(printed.getvalue())
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                if gt is not None:
                    out["gt"] = _dataset_view(gt)
                if dt is not None:
                    out["results"] = _dataset_view(dt)
        except Exception as exc:  # noqa: BLE001
            out["reading"] = (type(exc).__name__, str(exc))
    out["warnings"] = [(w.category.__name__, str(w.message)) for w in caught
                       if issubclass(w.category, (SuspectInputWarning, UserWarning))]
    return out


def compare(a: dict, b: dict, diff) -> str:
    """Where two :func:`run` outputs differ (``paths`` aside), "" when equal."""
    a = {k: v for k, v in a.items() if k != "paths"}
    b = {k: v for k, v in b.items() if k != "paths"}
    return diff(a, b)


def used_columns(out: dict) -> bool:
    return any(flag for _, flag in out["paths"])

