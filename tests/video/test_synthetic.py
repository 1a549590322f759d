"""boundary_api.video.synthetic: the generated videos have the properties their
parameters promise, the writers produce the layouts the official readers list
and decode, and everything is deterministic."""
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from boundary_api.video import synthetic as syn


def _read(path):
    with Image.open(path) as im:
        return im.mode, np.array(im)


def test_deterministic_and_seeded():
    a = syn.render_sequence(6, 20, 30, 3, seed=4, deforming=True, tiny=2, late=1)
    b = syn.render_sequence(6, 20, 30, 3, seed=4, deforming=True, tiny=2, late=1)
    c = syn.render_sequence(6, 20, 30, 3, seed=5, deforming=True, tiny=2, late=1)
    assert a.dtype == np.uint8 and a.shape == (6, 20, 30)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    np.testing.assert_array_equal(syn.perturb(a, seed=1, jitter=2, noise=0.1), syn.perturb(a, seed=1, jitter=2, noise=0.1))
    np.testing.assert_array_equal(syn.proposals(a, 7, seed=2), syn.proposals(a, 7, seed=2))


@pytest.mark.parametrize("h,w", [(1, 1), (1, 17), (17, 1), (7, 5), (33, 65)])
def test_odd_sizes(h, w):
    v = syn.render_sequence(4, h, w, 2, seed=1, tiny=1, edges=True, touching=True, deforming=True)
    assert v.shape == (4, h, w)
    assert syn.perturb(v, seed=1, jitter=3, dilate=2, erode=1, noise=0.2, spurious=1).shape == v.shape
    assert syn.proposals(v, 5, seed=1).max() == 5
    assert syn.void_mask(v, band=1, boxes=2).shape == v.shape


def test_scenarios():
    late = syn.render_sequence(10, 30, 40, 2, seed=3, late=2)
    assert int(late[0].max()) <= 2 and set(np.unique(late)) >= {3, 4}  # later objects after frame 0
    van = syn.render_sequence(9, 30, 40, 2, seed=3, vanishing=(3, 6))
    present = [(f == 2).any() for f in van]
    assert present[:3] == [True] * 3 and present[3:6] == [False] * 3 and present[6:] == [True] * 3
    tiny = syn.render_sequence(5, 30, 40, 0, seed=3, tiny=3)
    for i in (1, 2, 3):
        assert all(1 <= (f == i).sum() <= 3 for f in tiny)
    touch = syn.render_sequence(5, 40, 60, 2, seed=3, touching=True)
    for f in touch:  # some pixel of 1 has a 4-neighbour of 2
        a, b = f == 1, f == 2
        assert (a[:, :-1] & b[:, 1:]).any() or (a[:, 1:] & b[:, :-1]).any() or (a[:-1] & b[1:]).any() \
            or (a[1:] & b[:-1]).any()
    edge = syn.render_sequence(5, 40, 60, 1, seed=3, edges=True)
    for f in edge:
        m = f == 1
        assert m[0].any() or m[-1].any() or m[:, 0].any() or m[:, -1].any()
    ids = syn.render_sequence(3, 20, 20, 2, seed=3, ids=[7, 255])
    assert set(np.unique(ids)) <= {0, 7, 255}
    with pytest.raises(ValueError):
        syn.render_sequence(3, 20, 20, 2, ids=[1])
    with pytest.raises(ValueError):
        syn.render_sequence(0, 20, 20)


def test_perturb_steps():
    v = syn.render_sequence(4, 30, 40, 2, seed=8, size=(0.2, 0.3))
    assert ((syn.perturb(v, dilate=1) == 1).sum() >= (v == 1).sum())
    assert ((syn.perturb(v, erode=1) == 1).sum() < (v == 1).sum())
    s = syn.perturb(v, shift=(2, -3))
    np.testing.assert_array_equal(s[:, 2:, :-3], v[:, :-2, 3:])
    assert not (syn.perturb(v, missing=[1]) == 1).any()
    m = syn.perturb(v, missing=[2], missing_frames=(2, 4))
    assert (m[:2] == 2).any() and not (m[2:] == 2).any()
    assert (syn.perturb(v, spurious=1) == 3).all(axis=(1, 2)).sum() == 0
    assert all((f == 3).any() for f in syn.perturb(v, spurious=1))
    assert (syn.perturb(v, spurious=1, spurious_id=9) == 9).any()
    e = syn.perturb(v, empty_frames=[0, -1])
    assert not e[0].any() and not e[-1].any() and e[1].any()
    r = syn.perturb(v, relabel={1: 2, 2: 1})
    np.testing.assert_array_equal(r == 1, v == 2)
    n = syn.perturb(v, seed=1, noise=0.1)
    assert 0 < (n != v).mean() <= 0.1


def test_proposals():
    v = syn.render_sequence(6, 30, 40, 3, seed=9)
    p = syn.proposals(v, 8, seed=1)
    assert p.max() == 8 and set(np.unique(p)) <= set(range(9))
    assert syn.proposals(v, 2, seed=1).max() <= 2
    assert syn.proposals(v, 21, seed=1).max() == 21
    with pytest.raises(ValueError):
        syn.proposals(v, 0)


def test_void_mask():
    v = np.zeros((2, 20, 20), np.uint8)
    v[:, 5:15, 5:15] = 1
    band = syn.void_mask(v, band=1)
    assert band[0, 5, 5] and band[0, 4, 5] and not band[0, 10, 10] and not band[0, 0, 0]
    box = syn.void_mask(v, band=0, boxes=1, box_size=0.25)
    assert box[0].sum() == 25 and np.array_equal(box[0], box[1])


def test_write_davis_layout(tmp_path):
    a = syn.render_sequence(4, 10, 12, 2, seed=1)
    b = syn.render_sequence(3, 10, 12, 1, seed=2)
    void = {"a": syn.void_mask(a, band=1)}
    root = syn.write_davis(tmp_path / "D", {"b": b, "a": a}, void=void)
    assert open(os.path.join(root, "ImageSets", "2017", "val.txt")).read() == "b\na\n"
    assert sorted(os.listdir(os.path.join(root, "JPEGImages", "480p", "a"))) == \
        ["00000.jpg", "00001.jpg", "00002.jpg", "00003.jpg"]
    with Image.open(os.path.join(root, "JPEGImages", "480p", "a", "00000.jpg")) as im:
        assert im.format == "JPEG"
    mode, arr = _read(os.path.join(root, "Annotations", "480p", "a", "00002.png"))
    assert mode == "P"
    np.testing.assert_array_equal(arr, a[2])
    _, u = _read(os.path.join(root, "Annotations_unsupervised", "480p", "a", "00002.png"))
    np.testing.assert_array_equal(u, np.where(void["a"][2], 255, a[2]))
    syn.write_davis(tmp_path / "T", {"a": a}, subset="test-dev")
    assert os.path.exists(tmp_path / "T" / "ImageSets" / "2019" / "test-dev.txt")
    assert os.path.exists(tmp_path / "T" / "ImageSets" / "2017" / "test-dev.txt")
    res = syn.write_davis_results(tmp_path / "R", {"a": a}, skip=(0, -1))
    assert sorted(os.listdir(os.path.join(res, "a"))) == ["00001.png", "00002.png"]
    syn.write_davis(tmp_path / "N", {"a": a}, names={"a": ["x0", "x4", "x8", "x9"]}, images="frame", mode="L")
    mode, arr = _read(tmp_path / "N" / "Annotations" / "480p" / "a" / "x4.png")
    assert mode == "L" and np.array_equal(arr, a[1])
    with Image.open(tmp_path / "N" / "JPEGImages" / "480p" / "a" / "x4.jpg") as im:
        assert im.size == (12, 10)


def test_write_label_png_modes(tmp_path):
    lab = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    syn.write_label_png(tmp_path / "p.png", lab)
    syn.write_label_png(tmp_path / "r.png", lab, mode="RGB")
    mode, arr = _read(tmp_path / "p.png")
    assert mode == "P" and np.array_equal(arr, lab)
    with Image.open(tmp_path / "p.png") as im:
        pal = im.getpalette()
    assert pal[3:6] == [128, 0, 0] and pal[6:9] == [0, 128, 0] and pal[3 * 255:3 * 256] == [224, 224, 192]
    mode, arr = _read(tmp_path / "r.png")
    assert mode == "RGB" and arr.shape == (3, 4, 3)
    with pytest.raises(ValueError):
        syn.write_label_png(tmp_path / "x.png", lab, mode="I")


def test_write_sav_layouts(tmp_path):
    v = syn.render_sequence(9, 10, 12, 2, seed=1, late=1)
    syn.write_sav(tmp_path / "g", {"v": v}, frames=[0, 4, 8], span=True)
    objs = sorted(os.listdir(tmp_path / "g" / "v"))
    assert objs == ["000", "001", "002"]
    first3 = next(t for t in (0, 4, 8) if (v[t] == 3).any())
    assert sorted(os.listdir(tmp_path / "g" / "v" / "002")) == [f"{t:05d}.png" for t in (0, 4, 8) if t >= first3]
    mode, arr = _read(tmp_path / "g" / "v" / "000" / "00004.png")
    assert mode == "L" and set(np.unique(arr)) <= {0, 255} and np.array_equal(arr > 0, v[4] == 1)
    syn.write_sav(tmp_path / "p", {"v": v}, objects={"v": [2]}, object_names={2: "7"}, value=1, mode="P")
    assert os.listdir(tmp_path / "p" / "v") == ["7"] and len(os.listdir(tmp_path / "p" / "v" / "7")) == 9
    syn.write_sav(tmp_path / "d", {"v": v}, layout="davis", frames=[1, 2])
    assert sorted(os.listdir(tmp_path / "d" / "v")) == ["00001.png", "00002.png"]
    with pytest.raises(ValueError):
        syn.write_sav(tmp_path / "x", {"v": v}, layout="mose")


def test_frame_names():
    assert syn.frame_names(3) == ["00000", "00001", "00002"]
    assert syn.frame_names(2, start=4, step=4) == ["00004", "00008"]


def _tree(root):
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if f.endswith(".png"):
                out[os.path.relpath(p, root)] = _read(p)[1].tobytes()
            else:
                out[os.path.relpath(p, root)] = open(p, "rb").read()
    return out


@pytest.mark.slow
def test_preset_same_with_processes(tmp_path):
    one = syn.make_preset("small", tmp_path / "one", seed=3, sav=True)
    two = syn.make_preset("small", tmp_path / "two", seed=3, processes=2, sav=True)
    assert _tree(tmp_path / "one") == _tree(tmp_path / "two")
    assert sorted(os.listdir(two["sav_gt"])) == two["sequences"]


def test_preset_small(tmp_path):
    one = syn.make_preset("small", tmp_path / "one", seed=3)
    assert one["frames"] == 40 and one["sequences"] == ["seq000", "seq001", "seq002", "seq003"]
    assert one["sav_gt"] is None and sorted(os.listdir(one["results"]["unsupervised"])) == one["sequences"]
    lines = open(os.path.join(one["davis_root"], "ImageSets", "2017", "val.txt")).read().split()
    assert lines == one["sequences"]
    n = sum(len(os.listdir(os.path.join(one["davis_root"], "Annotations", "480p", s))) for s in lines)
    assert n == 40
    with pytest.raises(ValueError):
        syn.make_preset("nope", tmp_path / "x")


def test_import_is_light():
    code = "import sys, boundary_api.video.synthetic; print('PIL' in sys.modules, 'cv2' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
