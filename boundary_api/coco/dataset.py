"""``boundary_api.COCO``: pycocotools' COCO with checked loading."""
from __future__ import annotations

import copy
import os
import time

import numpy as np


from ..instance._dataset import _Materialized, urllib_request_deferred

with urllib_request_deferred():
    import pycocotools.coco


from ..masks import _rle
from .._io import KeyValueError, add_note, input_error_class, loads_json, read_json, read_once
from ..instance._checks import (check_instances_dataset, check_results, describe_annotation, pycocotools_area_bbox,
                                refuse_unsafe_polygons, results_images_sized, terminated_for_pycocotools)
from ..instance._columns import load_result_columns
from ..instance._gt_columns import index_annotations, load_ground_truth_columns
from ..instance.cache import cache_for, cache_state, polygon_rles_of, restore_cache

__all__ = ["COCO"]


class COCO(pycocotools.coco.COCO):
    """pycocotools ``COCO``, with the same interface and printed messages.

    It loads what pycocotools loads, with the same dicts and value types;
    input that pycocotools evaluates silently but which is probably wrong
    (polygons on an image without a size, an annotation on an unknown image,
    an RLE whose size is not its image's, a NaN score, repeated annotation
    ids, annotations of unknown categories, ...) is warned about
    (:class:`boundary_api.SuspectInputWarning`, one line naming the problem)
    and ``COCOeval`` then gives pycocotools' numbers by running pycocotools'
    own code; a field pycocotools' evaluation reads and fails without (a
    missing score, area or iscrowd) is not warned about: that evaluation's
    own error comes with a note naming it.  ``strict=True`` refuses such
    input instead (``ValueError``).  Where pycocotools fails on loading the
    input, the error names the problem and is an instance of the class
    pycocotools raises, with its name (``KeyError``, ``IndexError``,
    ``TypeError``, ``AssertionError``, ``FileNotFoundError``,
    ``json.JSONDecodeError``), and of ``ValueError``.

    A file in the standard schema is read natively into column arrays, and
    the annotation dicts (``dataset``, ``anns``, ``imgToAnns``,
    ``catToImgs``) are made, identical, the first time one of them is read;
    :class:`COCOeval` evaluates such objects from the arrays.

    Parameters
    ----------
    annotation_file : str or path-like, optional
        COCO instances JSON file.
    strict : bool, optional
        Refuse suspect input (default False: warn).  :meth:`loadRes`
        inherits it.
    """

    #: True for objects made by :meth:`loadRes`
    _is_results = False
    #: True when loadRes had to make segmentations from boxes
    _segm_from_bbox = False
    #: True when loadRes already checked every RLE against its image
    _rles_checked = False
    #: refuse suspect input (the ``strict`` argument)
    _strict = False
    #: the problems of the input warned about that the package's own
    #: evaluation must not see: evaluators run pycocotools' code instead
    _input_problems = ()
    #: results parsed into columns (:class:`._columns.ResultColumns`) whose
    #: dicts nobody has read yet; None once they exist
    _columns = None
    #: a ground truth parsed into columns (:class:`._gt_columns.GroundTruthColumns`)
    #: whose annotation dicts nobody has read yet; None once they exist
    _gt_columns = None

    dataset = _Materialized()
    anns = _Materialized()
    imgToAnns = _Materialized()
    catToImgs = _Materialized()

    def __getstate__(self) -> dict:
        """``__dict__`` with the annotation cache, so that a pickled or
        copied dataset keeps what only the cache knows (the ground truths'
        own ``ignore`` flags an evaluation overwrote) and what it computed."""
        return cache_state(self, self.__dict__)

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(restore_cache(self, state))

    def __init__(self, annotation_file=None, strict=False):
        super().__init__()
        self._strict = bool(strict)
        if annotation_file is None:
            return
        print("loading annotations into memory...")
        tic = time.time()
        if isinstance(annotation_file, (str, bytes, os.PathLike)):
            source = os.fsdecode(annotation_file)
            # a pipe is read once here: the fallback below reads the same bytes
            annotation_file = read_once(annotation_file, "ground truth")
            columns = load_ground_truth_columns(annotation_file, source)
            if columns is not None:
                print("Done (t={:0.2f}s)".format(time.time() - tic))
                self._set_columns(columns)
                return
        self._load_dicts(annotation_file, tic)

    @classmethod
    def _from_columns(cls, columns, tic: float, strict: bool = False) -> "COCO":
        """What ``COCO(path)`` gives for a file already read as columns."""
        coco = cls(strict=strict)
        print("loading annotations into memory...")
        print("Done (t={:0.2f}s)".format(time.time() - tic))
        coco._set_columns(columns)
        return coco

    def _load_dicts(self, annotation_file, tic: float) -> None:
        dataset = read_json(annotation_file, "ground truth")
        print("Done (t={:0.2f}s)".format(time.time() - tic))
        self._set_dataset(dataset, str(annotation_file))

    @classmethod
    def from_dataset(cls, dataset: dict, source: str = "ground truth", strict: bool = False) -> "COCO":
        """Build from an already loaded COCO instances dict (checked, not copied)."""
        coco = cls(strict=strict)
        coco._set_dataset(dataset, source)
        return coco

    def _set_dataset(self, dataset, source: str) -> None:
        self.dataset = dataset
        self._source = source
        self.createIndex()

    def createIndex(self):
        """pycocotools' ``createIndex``; for a ground truth, after checking
        its ``dataset`` (also when user code assigned it, as in
        ``coco = COCO(); coco.dataset = d; coco.createIndex()``)."""
        source = self.__dict__.pop("_source", "ground truth")
        if self._is_results:
            return super().createIndex()
        dataset = self.dataset
        problems = check_instances_dataset(dataset, source, strict=self._strict)
        try:
            super().createIndex()
        except Exception as exc:  # noqa: BLE001 - pycocotools' own failure on what the checks let through
            add_note(exc, f"boundary_api: pycocotools' own createIndex fails on this input "
                          f"({problems[0] if problems else source})")
            raise
        self._input_problems = tuple(problems)
        # the ground truths' own 'ignore' flags, before any evaluation overwrites them
        cache_for(self).remember_ignore_flags()

    def _set_columns(self, columns) -> None:
        """A ground truth read as columns: images and categories indexed now,
        the annotation dicts made when first read."""
        print("creating index...")
        self.imgs = {img["id"]: img for img in columns.images}
        self.cats = {cat["id"]: cat for cat in columns.categories}
        for name in ("dataset", "anns", "imgToAnns", "catToImgs"):
            self.__dict__.pop(name, None)
        self._gt_columns = columns
        columns.computed = cache_for(self).computed
        print("index created!")

    def _header(self) -> dict:
        """``info``, ``images`` and ``categories`` without making annotation dicts."""
        columns = self.__dict__.get("_gt_columns")
        if columns is None:
            return self.dataset
        return {"images": columns.images, "categories": columns.categories}

    def loadAnns(self, ids=[]):  # noqa: B006 - pycocotools' signature
        """pycocotools' ``loadAnns``; an unknown id raises a KeyError naming it."""
        try:
            return super().loadAnns(ids)
        except KeyError as exc:
            raise _unknown_id("annotation", exc) from None

    def loadImgs(self, ids=[]):  # noqa: B006 - pycocotools' signature
        """pycocotools' ``loadImgs``; an unknown id raises a KeyError naming it."""
        try:
            return super().loadImgs(ids)
        except KeyError as exc:
            raise _unknown_id("image", exc) from None

    def loadCats(self, ids=[]):  # noqa: B006 - pycocotools' signature
        """pycocotools' ``loadCats``; an unknown id raises a KeyError naming it."""
        try:
            return super().loadCats(ids)
        except KeyError as exc:
            raise _unknown_id("category", exc) from None

    def getCatIds(self, catNms=[], supNms=[], catIds=[]):  # noqa: B006 - pycocotools' signature
        """pycocotools' ``getCatIds`` (reads only the categories)."""
        if self.__dict__.get("_gt_columns") is None:
            return super().getCatIds(catNms, supNms, catIds)
        cats = self._gt_columns.categories
        catNms = catNms if _is_array_like(catNms) else [catNms]
        supNms = supNms if _is_array_like(supNms) else [supNms]
        catIds = catIds if _is_array_like(catIds) else [catIds]
        cats = cats if len(catNms) == 0 else [cat for cat in cats if cat["name"] in catNms]
        cats = cats if len(supNms) == 0 else [cat for cat in cats if cat["supercategory"] in supNms]
        cats = cats if len(catIds) == 0 else [cat for cat in cats if cat["id"] in catIds]
        return [cat["id"] for cat in cats]

    def annToRLE(self, ann):
        """pycocotools' ``annToRLE``; a polygon on which its C code crashes or
        never ends (non-finite or huge coordinates, an image with a side of
        no pixels) raises :class:`~boundary_api.instance._checks.UnsafePolygonError`
        instead."""
        refuse_unsafe_polygons([ann], self.imgs, self._describe_ann)
        return super().annToRLE(ann)

    def annToMask(self, ann):
        """pycocotools' ``annToMask`` (through :meth:`annToRLE`); an RLE
        string whose last count runs past its end is decoded as pycocotools
        decodes it when the byte after the string is 0, without its reading
        past the end."""
        rle = self.annToRLE(ann)
        counts = terminated_for_pycocotools(rle)
        return _mask_utils().decode(rle if counts is None else dict(rle, counts=counts))

    def _describe_ann(self, ann) -> str:
        return describe_annotation("result" if getattr(self, "_is_results", False) else "annotation", ann)

    def loadRes(self, resFile, _source=None, strict=None):
        """Load results (file path, list of dicts or Nx7 array) as a result COCO.

        pycocotools' ``loadRes``: the same printed lines, the same changes to
        the result dicts (ids, areas, boxes and ``iscrowd`` added; from RLEs
        ``area`` a ``numpy.uint32`` and ``bbox`` a float64 array), the same
        object returned (a ``boundary_api.COCO`` made as ``COCO()``, whatever
        subclass this ground truth is), after checking the results against
        this ground truth.

        Parameters
        ----------
        resFile : str, path-like, list of dict or numpy.ndarray
        strict : bool, optional
            Refuse suspect results (default: this object's ``strict``).

        Raises
        ------
        ValueError
            Naming the problem; where pycocotools fails on the results too, a
            subclass of the class it raises: ``FileNotFoundError``,
            ``json.JSONDecodeError``, ``AssertionError`` (not a list, unknown
            image ids), ``IndexError`` (empty), ``KeyError`` (a missing key),
            ``TypeError``.
        """
        strict = self._strict if strict is None else bool(strict)
        print("Loading and preparing results...")
        tic = time.time()
        if isinstance(resFile, np.ndarray):
            anns = self.loadNumpyAnnotations(resFile)
            source = "results array"
        elif isinstance(resFile, (str, bytes, os.PathLike)):
            source = os.fsdecode(resFile)
            resFile = read_once(resFile, "results")  # a pipe: read once, for both readers
            columns = load_result_columns(self, resFile, source, strict=strict)
            if columns is not None:
                return self._results_from_columns(columns, tic, strict)
            anns = read_json(resFile, "results")
        else:
            anns = resFile
            source = "results" if _source is None else str(_source)
        problems = check_results(anns, self.imgs, self.cats, source, strict=strict)

        res = COCO(strict=strict)  # (pycocotools makes a plain COCO(), not one of this class)
        res._is_results = True
        gtc = self.__dict__.get("_gt_columns")
        if gtc is not None:
            res.dataset["info"] = gtc.info()
            res.dataset["images"] = list(gtc.images)
            categories = gtc.categories
        else:
            res.dataset["info"] = copy.deepcopy(self.dataset.get("info", {}))
            res.dataset["images"] = [img for img in self.dataset["images"]]
            categories = self.dataset.get("categories")
        first = anns[0]
        try:
            if "caption" in first:
                img_ids = {img["id"] for img in res.dataset["images"]} & {ann["image_id"] for ann in anns}
                res.dataset["images"] = [img for img in res.dataset["images"] if img["id"] in img_ids]
                for i, ann in enumerate(anns):
                    ann["id"] = i + 1
            elif "bbox" in first and not first["bbox"] == []:
                res.dataset["categories"] = copy.deepcopy(categories)
                for i, ann in enumerate(anns):
                    bb = ann["bbox"]
                    x1, x2, y1, y2 = [bb[0], bb[0] + bb[2], bb[1], bb[1] + bb[3]]
                    if "segmentation" not in ann:
                        ann["segmentation"] = [[x1, y1, x1, y2, x2, y2, x2, y1]]
                        res._segm_from_bbox = True
                    ann["area"] = bb[2] * bb[3]
                    ann["id"] = i + 1
                    ann["iscrowd"] = 0
            elif "segmentation" in first:
                res.dataset["categories"] = copy.deepcopy(categories)
                if problems or not results_images_sized(anns, self.imgs):
                    # as pycocotools computes them, from each RLE on its own (with its own size)
                    # (pycocotools' C code reads some of them past their end or
                    # crashes on them: computed as it computes them, or refused)
                    for i, ann in enumerate(anns):
                        box = "bbox" not in ann
                        ann["area"], bb = pycocotools_area_bbox(
                            ann["segmentation"], box, f"{source}: result #{i} (image {ann['image_id']!r})")
                        if box:
                            ann["bbox"] = bb
                        ann["id"] = i + 1
                        ann["iscrowd"] = 0
                else:
                    # compressed RLEs, checked above: areas and boxes in one pass,
                    # of pycocotools' types (numpy.uint32, float64 arrays)
                    heights = np.array([self.imgs[a["image_id"]]["height"] for a in anns], np.int64)
                    table = _rle.StringTable([a["segmentation"]["counts"] for a in anns])
                    areas, boxes = _rle.area_bbox(table, heights)
                    boxes = np.asarray(boxes, np.float64)
                    for i, (ann, area, box) in enumerate(zip(anns, areas.astype(np.uint32), boxes)):
                        ann["area"] = area
                        if "bbox" not in ann:
                            ann["bbox"] = box
                        ann["id"] = i + 1
                        ann["iscrowd"] = 0
                    # every RLE was decoded and checked above: the cache need not do it again
                    res._rles_checked = True
            elif "keypoints" in first:
                res.dataset["categories"] = copy.deepcopy(categories)
                for i, ann in enumerate(anns):
                    s = ann["keypoints"]
                    x, y = s[0::3], s[1::3]
                    x0, x1, y0, y1 = np.min(x), np.max(x), np.min(y), np.max(y)
                    ann["area"] = (x1 - x0) * (y1 - y0)
                    ann["id"] = i + 1
                    ann["bbox"] = [x0, y0, x1 - x0, y1 - y0]
            print("DONE (t={:0.2f}s)".format(time.time() - tic))
            res.dataset["annotations"] = anns
            res.createIndex()
        except (KeyError, TypeError, IndexError, AttributeError) as exc:  # a problem the checks let through
            raise input_error_class(type(exc))(problems[0] if problems else f"{source}: {exc!r}") from None
        res._input_problems = tuple(problems)
        return res

    def _results_from_columns(self, columns, tic: float, strict: bool = False) -> "COCO":
        """The results object of :meth:`loadRes` for results parsed into
        columns: evaluations read the columns, the dicts are made when first
        read."""
        res = COCO(strict=strict)
        res._is_results = True
        header = self._header()
        gtc = self.__dict__.get("_gt_columns")
        res.imgs = {img["id"]: img for img in header["images"]}
        # a ground truth read as columns: its 'info' is read from its bytes when needed
        # (the value it had here, as the deep copy pycocotools makes now)
        res._header = {"info": gtc.info if gtc is not None else copy.deepcopy(header.get("info", {})),
                       "images": [img for img in header["images"]],
                       "categories": copy.deepcopy(header["categories"])}
        res.cats = {cat["id"]: cat for cat in res._header["categories"]}
        res._segm_from_bbox = not columns.has_segmentation
        res._rles_checked = columns.rles_checked
        del res.__dict__["dataset"], res.__dict__["anns"]
        del res.__dict__["imgToAnns"], res.__dict__["catToImgs"]
        res._columns = columns
        columns.computed = cache_for(res).computed
        print("DONE (t={:0.2f}s)".format(time.time() - tic))
        print("creating index...")
        print("index created!")
        return res

    def _materialize(self) -> None:
        """Make the annotation dicts and pycocotools' index from the columns."""
        if self.__dict__.get("_gt_columns") is not None:
            return self._materialize_ground_truth()
        columns = self._columns
        anns = columns.annotations()
        info = self._header["info"]
        dataset = {"info": info() if callable(info) else info, "images": self._header["images"],
                   "categories": self._header["categories"], "annotations": anns}
        self._install(dataset)
        if columns.has_segmentation and columns.rles_checked:
            # the cache need not check these RLE strings again
            cache_for(self).adopt(anns, columns.seg_h, columns.seg_w)
        # the dicts may now be changed by their reader: evaluations read them from here on
        self._rles_checked = columns.rles_checked
        self._columns = None

    def _install(self, dataset: dict) -> None:
        """``dataset`` and pycocotools' annotation index (``createIndex``'s
        ``anns``, ``imgToAnns``, ``catToImgs``; ``imgs`` and ``cats`` are
        already those of ``dataset``), without its prints."""
        index, img_to_anns, cat_to_imgs = index_annotations(dataset["annotations"])
        d = self.__dict__
        d["dataset"], d["anns"], d["imgToAnns"], d["catToImgs"] = dataset, index, img_to_anns, cat_to_imgs

    def _materialize_ground_truth(self) -> None:
        """The ground truth's dicts, parsed from the same bytes, then changed
        as the evaluations run on the columns would have changed them."""
        columns = self._gt_columns
        dataset = columns.dataset(loads_json)
        anns = dataset["annotations"]
        self._install(dataset)
        self._gt_columns = None
        cache = cache_for(self)
        cache.remember_ignore_flags()
        cache.adopt_ground_truth(anns, columns)
        for iou_type, rows in columns.log:
            prepare_ground_truths(self, [anns[r] for r in rows.tolist()], iou_type)


def prepare_ground_truths(coco, gts: list, iou_type: str, num_threads=None) -> None:
    """What pycocotools' ``_prepare`` does to the selected ground-truth dicts
    (for 'boundary', the Boundary IoU reference's ``ignore`` rule)."""
    if iou_type == "boundary":
        cache = cache_for(coco)
        for gt, own in zip(gts, cache.own_ignore_flags(gts)):
            gt["ignore"] = own or ("iscrowd" in gt and gt["iscrowd"])
        cache.note_ignore_flags(gts)
        return
    if iou_type == "segm":  # pycocotools leaves the ground truths' RLEs in place
        polygons = polygon_rles_of(coco, [g for g in gts if type(g.get("segmentation")) is list],
                                   num_threads=num_threads)
        for gt in gts:
            rle = polygons.get(id(gt))
            gt["segmentation"] = rle if rle is not None else coco.annToRLE(gt)
    for gt in gts:
        gt["ignore"] = gt["ignore"] if "ignore" in gt else 0
        gt["ignore"] = "iscrowd" in gt and gt["iscrowd"]


def _unknown_id(what: str, exc: KeyError) -> KeyError:
    """A KeyError (and ValueError) naming the id a look-up did not find."""
    key = exc.args[0] if exc.args else None
    return KeyValueError(f"{what} id {key!r} is not in this dataset")


def _mask_utils():
    import pycocotools.mask

    return pycocotools.mask


def _is_array_like(obj) -> bool:
    return hasattr(obj, "__iter__") and hasattr(obj, "__len__")
