"""Sensitivity curves on the shipped LVIS sample: the paper's qualitative findings as
numbers (Figures 4, 6, 7), determinism, and the files behind the figures."""
import csv
import json
import math

import numpy as np
import pytest

from boundary_api.sensitivity.curves import (LARGE_AREA, SIZE_BIN, sample_instances,
                                               sensitivity_analysis)
from boundary_api.masks.measures import measures
from conftest import COCO_GT, LVIS_GT

MEASURES = ["mask_iou", "trimap_iou", "f_measure", "boundary_iou"]
RADII = (0, 2, 4, 8, 12, 16, 20, 24)


@pytest.fixture(scope="module")
def scale():
    return sensitivity_analysis(LVIS_GT, errors=["dilation", "erosion"], measures=MEASURES, samples=6, seed=0,
                                severities={"dilation": RADII, "erosion": RADII},
                                fixed_severities={"dilation": (4,), "erosion": (4,)})


def test_samples_are_seeded_and_of_the_requested_sizes():
    a = sample_instances(LVIS_GT, 10, seed=3, min_area=LARGE_AREA)
    b = sample_instances(LVIS_GT, 10, seed=3, min_area=LARGE_AREA)
    c = sample_instances(LVIS_GT, 10, seed=4, min_area=LARGE_AREA)
    assert [x.ann_id for x in a] == [x.ann_id for x in b] != [x.ann_id for x in c]
    assert len(a) == 10 and all(x.area > LARGE_AREA for x in a)
    sized = sample_instances(COCO_GT, 3, seed=0, per_size_bin=True)
    bins = [x.size_bin for x in sized]
    assert bins == sorted(bins) and max(np.bincount(bins)) <= 3 and len(set(bins)) > 10
    assert all(int(math.sqrt(x.area) // SIZE_BIN) == x.size_bin for x in sized)


def test_records_are_mean_and_std_of_the_measures(scale):
    # recompute one point by hand: dilation by 4 of the large sample
    from boundary_api.sensitivity.perturbations import apply_error
    import pycocotools.mask as mask_utils

    insts = sample_instances(LVIS_GT, 6, seed=0, min_area=LARGE_AREA)
    preds = [apply_error("dilation", x.segmentation, x.height, x.width, 4) for x in insts]
    vals = measures([x.rle for x in insts], [mask_utils.encode(np.asfortranarray(p)) for p in preds],
                    names=MEASURES, pairwise=True)
    for m in MEASURES:
        row = [r for r in scale.records if r["sample"] == "large" and r["error"] == "dilation"
               and r["severity"] == 4 and r["measure"] == m]
        assert len(row) == 1 and row[0]["n"] == 6
        assert row[0]["mean"] == pytest.approx(vals[m].mean(), abs=1e-12)
        assert row[0]["std"] == pytest.approx(vals[m].std(), abs=1e-12)
    # severity 0 is a perfect score for every measure
    for m in MEASURES:
        assert scale.curve(m, "dilation")[1][0] == 1.0


def test_mask_iou_grows_with_object_size_at_fixed_dilation(scale):
    x, mu, _ = scale.curve("mask_iou", "dilation", "sized", 4)
    assert len(x) >= 10
    assert np.corrcoef(x, mu)[0, 1] > 0.6
    assert mu[x < 32].mean() < mu[(x >= 64) & (x < 160)].mean() < mu[x >= 200].mean()


def test_boundary_iou_is_flat_for_large_objects_and_mask_iou_for_small_ones(scale):
    x, b, _ = scale.curve("boundary_iou", "dilation", "sized", 4)
    _, m, _ = scale.curve("mask_iou", "dilation", "sized", 4)
    big = x >= 96
    assert b[big].max() - b[big].min() < 0.25 < m.max() - m.min()
    assert b[big].std() < m.std() / 2
    # objects thinner than d: the boundary region is the whole mask
    assert b[x < SIZE_BIN] == pytest.approx(m[x < SIZE_BIN], abs=1e-12)
    assert np.abs(b[x < 2 * SIZE_BIN] - m[x < 2 * SIZE_BIN]).max() < 0.02
    # and Boundary IoU is well below Mask IoU for large objects
    assert (b[big] < m[big] - 0.15).all()


def test_trimap_iou_favours_dilation_over_erosion(scale):
    _, dil, _ = scale.curve("trimap_iou", "dilation")
    _, ero, _ = scale.curve("trimap_iou", "erosion")
    assert (dil[1:] > ero[1:]).all()
    # Boundary IoU, symmetric, treats them alike
    _, bd, _ = scale.curve("boundary_iou", "dilation")
    _, be, _ = scale.curve("boundary_iou", "erosion")
    assert np.abs(bd[:4] - be[:4]).max() < 0.05 < (dil - ero).max()


def test_f_measure_ignores_small_errors_then_drops_steeply(scale):
    r, f, _ = scale.curve("f_measure", "dilation")
    _, m, _ = scale.curve("mask_iou", "dilation")
    _, b, _ = scale.curve("boundary_iou", "dilation")
    assert (f[r <= 8] > 0.97).all() and b[r == 8][0] < 0.6
    assert f[-1] < 0.35
    assert np.max(-np.diff(f)) > 2 * np.max(-np.diff(m))


def test_deterministic_whatever_the_threads():
    kw = dict(errors=["boundary_localization", "object_localization", "inner_mask"], measures=["boundary_iou"],
              samples=3, seed=5, severities={"boundary_localization": (0, 2), "object_localization": (3,),
                                             "inner_mask": (2,)},
              fixed_severities={"boundary_localization": (1,), "object_localization": (3,), "inner_mask": (1,)})
    one = sensitivity_analysis(COCO_GT, num_threads=1, **kw)
    two = sensitivity_analysis(COCO_GT, num_threads=2, **kw)
    assert one.records == two.records
    other = sensitivity_analysis(COCO_GT, num_threads=2, **{**kw, "seed": 6})
    assert other.records != one.records


def test_csv_and_json_hold_every_record(scale, tmp_path):
    scale.write_csv(str(tmp_path / "c.csv"))
    rows = list(csv.DictReader(open(tmp_path / "c.csv")))
    assert len(rows) == len(scale.records)
    assert float(rows[5]["mean"]) == pytest.approx(scale.records[5]["mean"], abs=1e-12)
    doc = json.loads(json.dumps(scale.to_json()))
    assert doc["curves"] == scale.records and doc["settings"]["samples"] == 6


@pytest.mark.parametrize("kw, message", [
    ({"errors": ["shear"]}, "unknown error type"),
    ({"measures": ["dice"]}, "unknown measure"),
    ({"samples": 0}, "samples must be"),
    ({"seed": -1}, "seed must be"),
    ({"severities": {"dilation": (1.5,)}, "errors": ["dilation"]}, "whole numbers"),
    ({"severities": {"erosion": ()}, "errors": ["erosion"]}, "no severities"),
])
def test_bad_arguments(kw, message):
    with pytest.raises(ValueError, match=message):
        sensitivity_analysis(LVIS_GT, **kw)


def test_no_large_objects():
    data = json.load(open(COCO_GT))
    data["annotations"] = [a for a in data["annotations"] if a["area"] < 500]
    with pytest.raises(ValueError, match="no non-crowd object of more than 9216 pixels"):
        sensitivity_analysis(data, errors=["dilation"], samples=2)
