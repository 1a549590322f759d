"""The per-pair path of :class:`CGF1Evaluator`: the official structure, step by step.

For input outside the native path's schema (a ground truth the column scanner does
not take, predictions that are not plain SAM 3 records, masks of another size, ...)
and for subclasses that override ``_select_best_scoring``: pycocotools ``COCO``
objects of the ground truths, each pair's predictions loaded against each file
(``loadRes`` without copying the images, as the official ``COCOCustom``), evaluated by
:class:`CGF1Eval` (pycocotools' ``_prepare``, this package's IoUs), the oracle, the
accumulation.  Whatever the official code raises on such input is raised here too
(pycocotools' own checks run).
"""
from __future__ import annotations

import contextlib
import copy
import io
import json
from collections import defaultdict

import numpy as np
import pycocotools.coco

from .._io import loads_json
from ..instance._mask_checks import pycocotools_area_bbox

__all__ = ["SacoCOCO", "coco_from_file", "evaluate", "select_best_scoring"]


class SacoCOCO(pycocotools.coco.COCO):
    """pycocotools' ``COCO`` whose ``loadRes`` shares the ground truth's images
    (as SAM 3's ``COCOCustom``: no copy and no new index of them per loaded
    pair) and checks the result's image ids against a set made once."""

    def createIndex(self):
        imgs = self.__dict__.get("imgs")
        super().createIndex()
        if imgs:
            self.imgs = imgs

    def loadRes(self, resFile):
        """pycocotools' ``loadRes`` (its branches on the first result: boxes,
        masks, keypoints, captions), without copying the images."""
        res = SacoCOCO()
        res.dataset["info"] = copy.deepcopy(self.dataset.get("info", {}))
        res.dataset["images"] = self.dataset["images"]
        if type(resFile) == str:  # noqa: E721 - as pycocotools tests it
            with open(resFile) as f:
                anns = json.load(f)
        elif type(resFile) == np.ndarray:  # noqa: E721
            anns = self.loadNumpyAnnotations(resFile)
        else:
            anns = resFile
        assert type(anns) == list, "results in not an array of objects"  # noqa: E721
        # copies: what the branches below add stays out of the caller's dicts (the official
        # loadRes adds it to them, and then fails on the numpy box it left there when the
        # same predictions are loaded against a second ground truth)
        anns = [dict(ann) if type(ann) is dict else ann for ann in anns]
        ids = [ann["image_id"] for ann in anns]
        if not hasattr(self, "img_id_set"):
            self.img_id_set = set(self.getImgIds())
        if not set(ids).issubset(self.img_id_set):
            missing = sorted({repr(i) for i in ids if i not in self.img_id_set})
            raise AssertionError("Results do not correspond to current coco set: the ground truth has no image "
                                 f"{', '.join(missing[:3])}")
        first = anns[0]
        if "caption" in first:
            keep = {img["id"] for img in res.dataset["images"]} & set(ids)
            res.dataset["images"] = [img for img in res.dataset["images"] if img["id"] in keep]
            for i, ann in enumerate(anns):
                ann["id"] = i + 1
        elif "bbox" in first and not first["bbox"] == []:
            res.dataset["categories"] = copy.deepcopy(self.dataset["categories"])
            for i, ann in enumerate(anns):
                x, y, w, h = ann["bbox"][0], ann["bbox"][1], ann["bbox"][2], ann["bbox"][3]
                if "segmentation" not in ann:
                    ann["segmentation"] = [[x, y, x, y + h, x + w, y + h, x + w, y]]
                ann["area"] = ann["bbox"][2] * ann["bbox"][3]
                ann["id"] = i + 1
                ann["iscrowd"] = 0
        elif "segmentation" in first:
            res.dataset["categories"] = copy.deepcopy(self.dataset["categories"])
            for i, ann in enumerate(anns):
                # pycocotools' area and box, also of a string its C code would read
                # past the end of (UnsafeRLEError where its box would crash)
                ann["area"], box = pycocotools_area_bbox(ann["segmentation"], "bbox" not in ann,
                                                         f"prediction {i} (image {ann['image_id']!r})")
                if box is not None:
                    ann["bbox"] = box
                ann["id"] = i + 1
                ann["iscrowd"] = 0
        elif "keypoints" in first:
            res.dataset["categories"] = copy.deepcopy(self.dataset["categories"])
            for i, ann in enumerate(anns):
                s = ann["keypoints"]
                xs, ys = s[0::3], s[1::3]
                x0, x1, y0, y1 = np.min(xs), np.max(xs), np.min(ys), np.max(ys)
                ann["area"] = (x1 - x0) * (y1 - y0)
                ann["id"] = i + 1
                ann["bbox"] = [x0, y0, x1 - x0, y1 - y0]
        res.dataset["annotations"] = anns
        res.imgs = self.imgs
        with contextlib.redirect_stdout(io.StringIO()):
            res.createIndex()
        return res


def coco_from_file(gt) -> SacoCOCO:
    """A :class:`SacoCOCO` of a read ground-truth file (its decoded JSON, or
    its columns' bytes decoded now), indexed as pycocotools indexes it."""
    coco = SacoCOCO()
    dataset = gt.dataset if gt.dataset is not None else gt.columns.dataset(loads_json)
    coco.dataset = dataset
    with contextlib.redirect_stdout(io.StringIO()):
        coco.createIndex()
    return coco


def check_predictions(objects, name: str) -> None:
    """What the official loop fails on, as it fails (the same class), in one
    clear line: predictions that are not a list of objects each with an
    ``image_id``.  (An empty JSON object is no prediction to it.)"""
    from .._io import KeyValueError, TypeValueError

    if isinstance(objects, dict) and not objects:
        return
    if not isinstance(objects, list):
        raise TypeValueError(f"{name}: predictions must be a JSON list of objects (as SAM 3's coco_writer.py "
                             f"writes them), got a JSON {_json_type(objects)}")
    for k, pred in enumerate(objects):
        if not isinstance(pred, dict):
            raise TypeValueError(f"{name}: prediction {k} is a JSON {_json_type(pred)}, not an object")
        if "image_id" not in pred:
            raise KeyValueError(f"{name}: prediction {k} has no 'image_id'")


def _json_type(value) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", int: "number", float: "number",
            type(None): "null"}.get(type(value), type(value).__name__)


def select_best_scoring(scorings):
    """The oracle over files (see :meth:`CGF1Evaluator._select_best_scoring`)."""
    if len(scorings) == 1:
        return scorings[0]
    first = scorings[0]
    assert first.ndim == 3, f"Expecting results in [numCats, numAreas, numImgs] format, got {first.shape}"
    assert first.shape[0] == 1, f"Expecting a single category, got {first.shape[0]}"
    for s in scorings:
        assert s.shape == first.shape, f"Shape mismatch: {s.shape}, {first.shape}"
    chosen = []
    for i in range(first.shape[-1]):
        best = first[:, :, i]
        for s in scorings[1:]:
            cur = s[:, :, i]
            if "local_F1s" in best[0, 0] and "local_F1s" in cur[0, 0]:
                if cur[0, 0]["local_F1s"].mean() > best[0, 0]["local_F1s"].mean():
                    best = cur
            elif "local_F1s" not in cur[0, 0]:
                best = cur
        chosen.append(best)
    out = np.stack(chosen, axis=-1)
    assert out.shape == first.shape
    return out


def evaluate(evaluator, preds):
    """The official ``CGF1Evaluator.evaluate`` loop (without its printing of
    the summary, which the caller does); returns the evaluation's ``Result``."""
    from tqdm import tqdm

    from .evaluator import Result
    from .metrics import summarize

    objects = preds.decoded()
    check_predictions(objects, preds.name)
    coco_gts, coco_evals = evaluator.coco_gts, evaluator.coco_evals
    assert len(coco_gts) == len(coco_evals), "Mismatch in number of ground truths and evaluators."
    by_image = defaultdict(list)
    for pred in objects if isinstance(objects, list) else []:
        by_image[pred["image_id"]].append(pred)
    chosen = []
    for img_id in tqdm(evaluator.eval_img_ids, disable=not evaluator.verbose):
        results = by_image[img_id]
        scorings = []
        for gt, ev in zip(coco_gts, coco_evals):
            ev.cocoDt = gt.loadRes(results) if results else SacoCOCO()
            ev.params.imgIds = [img_id]
            ev.params.useCats = False
            _, eval_imgs = ev._evaluate_pairs()
            scorings.append(eval_imgs)
        chosen.append(evaluator._select_best_scoring(scorings))
    if not chosen:
        raise ValueError(f"no pair to evaluate: no image of {evaluator._files[0].name} is exhaustively annotated "
                         "in every ground truth (the official evaluator fails here too: need at least one array "
                         "to concatenate)")
    first = coco_evals[0]
    eval_imgs = list(np.concatenate(chosen, axis=2).flatten())
    first.evalImgs = eval_imgs
    first.params.imgIds = evaluator.eval_img_ids
    first._paramsEval = copy.deepcopy(first.params)
    if evaluator.verbose:
        print("Accumulating results")
    first.accumulate()
    stats, lines = summarize(first.eval, first.params.iouThrs)
    return Result(evaluator.eval_img_ids, None, first.eval, stats, lines, np.asarray(first.params.iouThrs),
                  eval_imgs=eval_imgs)
