"""Panoptic PNGs: a decompression-bomb guard (a pixel limit checked from the file's header,
with an override in pq_compute and on the command line), issue 9 item 4."""
import json
import os
import shutil
import struct
import zlib

import cv2
import numpy as np
import pytest

from boundary_api.cli import main
from boundary_api.panoptic import pq_compute, read_panoptic_png
from boundary_api.panoptic.idmaps import DEFAULT_MAX_PIXELS
from conftest import DATA

PAN = os.path.join(DATA, "panoptic")


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_bomb(path, width, height):
    """A PNG of a few hundred bytes whose header declares width x height RGB pixels."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(b"\0" * 1000))
                + _chunk(b"IEND", b""))


@pytest.fixture
def sample(tmp_path):
    dst = tmp_path / "panoptic"
    shutil.copytree(PAN, dst)
    gt = json.loads((dst / "panoptic_examples.json").read_text())
    return dst, gt


def test_default_limit_refuses_a_bomb_before_decoding(tmp_path):
    bomb = tmp_path / "bomb.png"
    write_bomb(bomb, 60000, 60000)
    assert os.path.getsize(bomb) < 200
    assert DEFAULT_MAX_PIXELS == 2 ** 27
    with pytest.raises(ValueError) as exc:
        read_panoptic_png(bomb)
    assert str(exc.value) == (f"panoptic PNG {bomb} is 60000x60000 = 3600000000 pixels, more than the limit of "
                              "134217728 (a guard against decompression bombs); raise it with max_pixels=... "
                              "(command line: --max-pixels) if the image is genuine")
    # without a limit the decoders' own guards still end in a ValueError, never cv2.error
    with pytest.raises(ValueError, match="too large to read"):
        read_panoptic_png(bomb, max_pixels=None)
    for bad in (0, -5, 1.5, True):
        with pytest.raises(ValueError, match="max_pixels must be a positive integer or None"):
            read_panoptic_png(bomb, max_pixels=bad)


def test_limit_and_override_on_real_pngs(sample):
    folder, gt = sample
    png = folder / "panoptic_examples" / gt["annotations"][0]["file_name"]
    ids = read_panoptic_png(png)
    h, w = ids.shape
    assert np.array_equal(read_panoptic_png(png, max_pixels=h * w), ids)
    with pytest.raises(ValueError, match=f"is {w}x{h} = {w * h} pixels, more than the limit of {w * h - 1} "):
        read_panoptic_png(png, max_pixels=w * h - 1)
    # other formats: the size comes from Pillow's header reader
    bmp = folder / "ids.bmp"
    cv2.imwrite(str(bmp), np.zeros((30, 50, 3), np.uint8))
    with pytest.raises(ValueError, match=r"is 50x30 = 1500 pixels, more than the limit of 1000 "):
        read_panoptic_png(bmp, max_pixels=1000)
    assert read_panoptic_png(bmp, max_pixels=1500).shape == (30, 50)


def test_pq_compute_and_command_line(sample, capsys):
    folder, gt = sample
    gt_json, pred_json = str(folder / "panoptic_examples.json"), str(folder / "pred_down4.json")
    sizes = [read_panoptic_png(folder / "panoptic_examples" / a["file_name"]).size for a in gt["annotations"]]
    small = min(sizes) - 1
    with pytest.raises(ValueError, match="more than the limit of"):
        pq_compute(gt_json, pred_json, num_threads=1, max_pixels=small)
    capsys.readouterr()
    full = pq_compute(gt_json, pred_json, num_threads=1, max_pixels=max(sizes))
    assert pq_compute(gt_json, pred_json, num_threads=1, max_pixels=None) == full
    argv = ["panoptic", "--gt-json", gt_json, "--pred-json", pred_json, "--threads", "1"]
    assert main(argv + ["--max-pixels", str(small)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"boundary-eval: error: panoptic PNG {folder}")
    assert "more than the limit of" in err and "--max-pixels" in err
    # a bomb among the ground truth PNGs: one line, exit 2
    write_bomb(folder / "panoptic_examples" / gt["annotations"][0]["file_name"], 50000, 50000)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "50000x50000 = 2500000000 pixels" in err
