"""Differential fuzzing of the JSON readers (issue 40, item 5): COCO and LVIS
ground truths and results files loaded through the public API
(``boundary_api.COCO``, ``COCO.loadRes``, ``LVIS``, ``LVISResults``) and by the
originals (pycocotools, lvis: ``json.load``), in child processes with a memory
cap and a timeout (fuzz_runner.py); every value a user reads (``dataset``, the
indexes, the id lists, ``annToRLE``) must be equal, types included, or both
must refuse the file.

The inputs, from fixed seeds (fuzz_json.py): valid but unusual JSON (every
escape, surrogate pairs and lone surrogates, every spelling of every number,
NaN and Infinity, whitespace, duplicate keys, extra fields, nesting up to
5000 levels, shuffled keys); every truncation of four small files; random
byte mutations; text encodings pycocotools cannot read (a UTF-8 BOM, UTF-16,
UTF-32, raw lone surrogates), which boundary_api reads, as
docs/known_differences.md says.
"""
import json

import numpy as np
import pytest

import fuzz_json as F
from fuzz_runner import describe, run_cases

pytestmark = pytest.mark.slow

SEED = 40_05


def _gt_bytes(rng, lvis):
    """A plain ground truth (json.dumps) for results files to be loaded against."""
    return json.dumps(F.plain(F.ground_truth(rng, lvis=lvis, p=0.0))).encode()


def valid_cases(rng, n_coco_gt, n_coco_res, n_lvis_gt, n_lvis_res):
    cases = []
    for api, n in (("coco_gt", n_coco_gt), ("lvis_gt", n_lvis_gt)):
        for _ in range(n):
            gt = F.ground_truth(rng, lvis=api == "lvis_gt")
            cases.append({"api": api, "data": F.encode_doc(rng, gt), "family_kind": "valid " + api})
    for api, n in (("coco_res", n_coco_res), ("lvis_res", n_lvis_res)):
        lvis = api == "lvis_res"
        for _ in range(n):
            gt = F.ground_truth(rng, lvis=lvis, p=0.0)
            res = F.results(rng, gt, lvis=lvis)
            cases.append({"api": api, "gt": json.dumps(gt).encode(), "data": F.encode_doc(rng, res),
                          "family_kind": "valid " + api})
    return cases


def encoding_cases(rng, n):
    """Text pycocotools and lvis refuse (they read UTF-8 text) and boundary_api
    reads, as json.loads reads bytes: documented differences.  What
    boundary_api reads must equal what the original reads from the same
    document in UTF-8 with escapes (``ref_data``)."""
    cases = []
    for k in range(n):
        api = ("coco_gt", "coco_res", "lvis_gt", "lvis_res")[k % 4]
        lvis = api.startswith("lvis")
        gt = F.plain(F.ground_truth(rng, lvis=lvis, p=0.0))
        doc = gt if api.endswith("gt") else F.results(rng, gt, lvis=lvis, p=0.0)
        text = json.dumps(F.plain(doc), ensure_ascii=bool(k % 2))
        try:
            text.encode("utf-16")
        except UnicodeEncodeError:   # a lone surrogate: escaped
            text = json.dumps(F.plain(doc))
        base = {"api": api, "gt": json.dumps(gt).encode()}
        for name, data in (("utf-8 bom", b"\xef\xbb\xbf" + text.encode()), ("utf-16", text.encode("utf-16")),
                           ("utf-16-le", text.encode("utf-16-le")), ("utf-16-be", text.encode("utf-16-be")),
                           ("utf-32", text.encode("utf-32")), ("utf-32-le", text.encode("utf-32-le")),
                           ("utf-32-be", text.encode("utf-32-be"))):
            cases.append(dict(base, data=data, ref_data=text.encode(), expect="ours_only: " + name,
                              family_kind="encoding " + name))
        # a lone surrogate written raw (WTF-8), in a field the scanners read
        # (an image's file_name, a result's extra field): json.loads(bytes)
        # reads it, the originals' UTF-8 text refuses it
        lone = "x\ud800y" if k % 3 else "\udfff"
        if api.endswith("res"):
            changed = [dict(doc[0], note=lone)] + doc[1:]
        else:
            changed = dict(doc, images=[dict(doc["images"][0], file_name=lone)] + doc["images"][1:])
        raw = json.dumps(changed, ensure_ascii=False)
        cases.append(dict(base, data=raw.encode("utf-8", "surrogatepass"), ref_data=json.dumps(changed).encode(),
                          expect="ours_only: raw lone surrogate", family_kind="encoding raw lone surrogate"))
    return cases


def _small(rng, lvis):
    """A ground truth of one image and one annotation (a few hundred bytes)."""
    while True:
        gt = F.ground_truth(rng, lvis=lvis, p=0.3)
        if isinstance(gt, F.Dup):
            continue
        gt.pop("deep", None)
        ann = gt["annotations"][0]
        gt["annotations"] = [ann]
        gt["images"] = [i for i in gt["images"] if i["id"] == ann["image_id"]]
        return gt


def truncation_cases(rng):
    """Every prefix of four small files (one per API)."""
    cases = []
    for api in ("coco_gt", "coco_res", "lvis_gt", "lvis_res"):
        lvis = api.startswith("lvis")
        while True:
            gt = _small(rng, lvis)
            data = F.encode_doc(rng, gt) if api.endswith("gt") else F.encode_doc(
                rng, F.results(rng, gt, lvis=lvis)[:2])
            if 150 <= len(data) <= 900:
                break
        gt_bytes = json.dumps(F.plain(gt)).encode()
        for n in range(len(data)):
            cases.append({"api": api, "gt": gt_bytes, "data": data[:n], "family_kind": "truncation " + api})
    return cases


def mutation_cases(rng, n):
    cases = []
    for k in range(n):
        api = ("coco_gt", "coco_res", "coco_gt", "coco_res", "lvis_gt", "lvis_res")[k % 6]
        lvis = api.startswith("lvis")
        gt = F.ground_truth(rng, lvis=lvis, p=0.2)
        if isinstance(gt, dict):
            gt.pop("deep", None)
        data = F.encode_doc(rng, gt, 0.3) if api.endswith("gt") else F.encode_doc(rng, F.results(rng, F.plain(gt),
                                                                                                    lvis=lvis), 0.3)
        cases.append({"api": api, "gt": json.dumps(F.plain(gt)).encode(), "data": F.mutate(rng, data),
                      "family_kind": "mutation " + api})
    return cases


def _check(result):
    assert not result["failures"], describe(result)


def test_valid_unusual_json_loads_as_json_and_the_originals_load_it():
    rng = np.random.default_rng(SEED)
    _check(run_cases("json-valid", valid_cases(rng, 600, 600, 200, 200)))


def test_text_encodings_pycocotools_refuses():
    rng = np.random.default_rng(SEED + 1)
    result = run_cases("json-encodings", encoding_cases(rng, 12))
    _check(result)
    assert result["counts"].get("documented", 0) > 0


def test_every_truncation_of_small_files():
    rng = np.random.default_rng(SEED + 2)
    _check(run_cases("json-truncations", truncation_cases(rng)))


def test_random_byte_mutations():
    rng = np.random.default_rng(SEED + 3)
    _check(run_cases("json-mutations", mutation_cases(rng, 1500)))
