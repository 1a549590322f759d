"""Decompression bombs: every reader of image files refuses an image larger than
its pixel limit from the file's header, before decoding (issue 25, item 9):
semantic label maps, the Table-1 ``measures`` command, Cityscapes ground truth
and masks, panoptic PNGs, report thumbnails.  A real bomb (a valid 40000 x 40000
paletted PNG of a few hundred kilobytes that decodes to 1.6 GB) is refused with
one line naming the file (exit 2 on the command line, an ``ImageTooLargeError``,
a ValueError, in Python), and the peak memory of the process stays small."""
import os
import shutil
import struct
import subprocess
import sys
import textwrap
import zlib

import numpy as np
import pytest
from PIL import Image

from boundary_api.cli import main
from boundary_api.masks.imagefiles import (DEFAULT_MAX_PIXELS, ImageTooLargeError, check_image_file,
                                           image_file_size)
from conftest import DATA

SIDE = 40000
CS = os.path.join(DATA, "cityscapes", "visible")


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png_bomb(path, side=SIDE, color_type=3, depth=1):
    """A complete, valid PNG of side x side pixels, all 0: paletted 1-bit by
    default (Pillow and OpenCV expand it to a byte or more per pixel)."""
    row = b"\0" * (1 + (side * depth + 7) // 8)
    z = zlib.compressobj(9)
    parts = [z.compress(row) for _ in range(side)]
    parts.append(z.flush())
    data = b"".join(parts)
    ihdr = struct.pack(">IIBBBBB", side, side, depth, color_type, 0, 0, 0)
    extra = _chunk(b"PLTE", b"\0\0\0\xff\xff\xff") if color_type == 3 else b""
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + extra + _chunk(b"IDAT", data) + _chunk(b"IEND", b""))
    return path


def write_header_bomb(path, side=SIDE, color_type=0, depth=8):
    """A PNG whose header declares side x side pixels of the given kind, with
    a short image stream (the readers must not get as far as the stream)."""
    ihdr = struct.pack(">IIBBBBB", side, side, depth, color_type, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(b"\0" * 4000))
                + _chunk(b"IEND", b""))
    return path


@pytest.fixture(scope="module")
def bomb(tmp_path_factory):
    root = tmp_path_factory.mktemp("bomb")
    path = write_png_bomb(str(root / "bomb.png"))
    assert os.path.getsize(path) < 1_000_000
    # the same construction at a small size is a PNG that Pillow decodes
    with Image.open(write_png_bomb(str(root / "small.png"), side=300)) as im:
        assert im.size == (300, 300) and im.mode == "P" and not np.asarray(im).any()
    return path


def _one_line_refusal(capsys, path):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert err[0].startswith("boundary-eval: error:") and path in err[0] and "pixels" in err[0]
    assert "Traceback" not in err[0]


# ---------------------------------------------------------------------------
# the header check
# ---------------------------------------------------------------------------

def test_header_size_and_limit(bomb, tmp_path):
    assert image_file_size(bomb) == (SIDE, SIDE)
    with pytest.raises(ImageTooLargeError, match="bomb.png is 40000x40000 = 1600000000 pixels"):
        check_image_file(bomb, "label map")
    assert issubclass(ImageTooLargeError, ValueError)
    assert check_image_file(bomb, max_pixels=None) == (SIDE, SIDE)
    assert check_image_file(bomb, max_pixels=SIDE * SIDE) == (SIDE, SIDE)
    small = tmp_path / "small.jpg"
    Image.fromarray(np.zeros((3, 5), np.uint8)).save(small)     # not a PNG: Pillow's header parser
    assert check_image_file(small, max_pixels=15) == (5, 3)
    with pytest.raises(ImageTooLargeError):
        check_image_file(small, max_pixels=14)
    (tmp_path / "junk.png").write_bytes(b"not an image")
    with pytest.raises(ValueError, match="cannot read image"):
        check_image_file(tmp_path / "junk.png")
    assert DEFAULT_MAX_PIXELS == 2 ** 27


# ---------------------------------------------------------------------------
# semantic evaluation
# ---------------------------------------------------------------------------

def _semantic_dirs(tmp_path, bomb, where):
    gt, pred = tmp_path / "gt", tmp_path / "pred"
    gt.mkdir()
    pred.mkdir()
    small = np.zeros((4, 6), np.uint8)
    for d in (gt, pred):
        Image.fromarray(small).save(d / "a.png")
    shutil.copy(bomb, (gt if where == "gt" else pred) / "b.png")
    Image.fromarray(small).save((pred if where == "gt" else gt) / "b.png")
    return str(gt), str(pred), str((gt if where == "gt" else pred) / "b.png")


@pytest.mark.parametrize("where", ["gt", "pred"])
def test_semantic_python(bomb, tmp_path, where):
    from boundary_api.semantic import SemanticEvaluator, evaluate_folders
    from boundary_api.semantic.labelmaps import read_label_map

    gt, pred, path = _semantic_dirs(tmp_path, bomb, where)
    with pytest.raises(ImageTooLargeError, match=f"label map {path} is 40000x40000"):
        read_label_map(path)
    with pytest.raises(ImageTooLargeError, match="b.png"):
        evaluate_folders(gt, pred, num_classes=3)
    ev = SemanticEvaluator(3)
    with pytest.raises(ImageTooLargeError, match="b.png"):
        ev.process_files([os.path.join(gt, "b.png")], [os.path.join(pred, "b.png")])
    # a limit the image fits in: Pillow's own limit still refuses it, as the same error class
    with pytest.raises(ImageTooLargeError, match="too large"):
        read_label_map(path, max_pixels=None)


def test_semantic_cli(bomb, tmp_path, capsys):
    gt, pred, path = _semantic_dirs(tmp_path, bomb, "pred")
    assert main(["semantic", "--gt-dir", gt, "--pred-dir", pred, "--num-classes", "3"]) == 2
    _one_line_refusal(capsys, path)
    # --max-pixels lowers the limit below a genuine image
    ok_gt, ok_pred = tmp_path / "g2", tmp_path / "p2"
    ok_gt.mkdir()
    ok_pred.mkdir()
    Image.fromarray(np.zeros((4, 6), np.uint8)).save(ok_gt / "a.png")
    Image.fromarray(np.zeros((4, 6), np.uint8)).save(ok_pred / "a.png")
    args = ["semantic", "--gt-dir", str(ok_gt), "--pred-dir", str(ok_pred), "--num-classes", "3"]
    assert main(args + ["--max-pixels", "24"]) == 0
    capsys.readouterr()
    assert main(args + ["--max-pixels", "23"]) == 2
    _one_line_refusal(capsys, str(ok_gt / "a.png"))


# ---------------------------------------------------------------------------
# the Table-1 measures command
# ---------------------------------------------------------------------------

def test_measures_cli(bomb, tmp_path, capsys):
    small = tmp_path / "small.png"
    Image.fromarray(np.zeros((4, 6), np.uint8)).save(small)
    assert main(["measures", str(small), bomb]) == 2
    _one_line_refusal(capsys, bomb)
    assert main(["measures", bomb, str(small)]) == 2
    _one_line_refusal(capsys, bomb)
    assert main(["measures", str(small), str(small), "--max-pixels", "23"]) == 2
    _one_line_refusal(capsys, str(small))
    # beyond OpenCV's own limit (2**30 pixels) with the guard lifted: still one line
    assert main(["measures", str(small), bomb, "--max-pixels", str(SIDE * SIDE)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and bomb in err[0]


# ---------------------------------------------------------------------------
# Cityscapes instance evaluation
# ---------------------------------------------------------------------------

def _cityscapes_copy(tmp_path, bomb, where):
    root = tmp_path / "cs"
    shutil.copytree(CS, root)
    gt = sorted((root / "gtFine" / "val").rglob("*_gtFine_instanceIds.png"))[0]
    name = gt.name.replace("_gtFine_instanceIds.png", "")
    if where == "gt":
        target = gt
    else:
        pred_txt = root / "results" / f"{name}_pred.txt"
        rel = pred_txt.read_text().split()[0]
        target = root / "results" / rel
    shutil.copy(bomb, target)
    return str(root / "gtFine" / "val"), str(root / "results"), str(target)


@pytest.mark.parametrize("where", ["gt", "mask"])
def test_cityscapes_python_and_cli(bomb, tmp_path, capsys, where):
    from boundary_api.cityscapes import evaluate_cityscapes

    gt_dir, res_dir, path = _cityscapes_copy(tmp_path, bomb, where)
    with pytest.raises(ImageTooLargeError, match="40000x40000"):
        evaluate_cityscapes(gt_dir, res_dir, num_threads=1)
    assert main(["cityscapes", "--gt-dir", gt_dir, "--result-dir", res_dir, "--threads", "1"]) == 2
    _one_line_refusal(capsys, os.path.basename(path))


def test_cityscapes_grey_fast_path(tmp_path):
    """8- and 16-bit grey PNGs go to the package's own inflater: refused first."""
    from boundary_api.cityscapes.files import _mask_source, _read_png

    for depth in (8, 16):
        path = write_header_bomb(str(tmp_path / f"grey{depth}.png"), depth=depth)
        with pytest.raises(ImageTooLargeError, match=f"grey{depth}.png is 40000x40000"):
            _read_png(path, "ground truth image", False)
    with pytest.raises(ImageTooLargeError, match="grey8.png"):
        _mask_source(str(tmp_path / "grey8.png"), "mask")


# ---------------------------------------------------------------------------
# peak memory: every reader in one fresh process
# ---------------------------------------------------------------------------

def test_peak_memory_stays_small(bomb, tmp_path):
    """Every reader meets the bomb in one subprocess; its peak RSS stays far below
    the 1.6 GB (Pillow) or more that decoding takes."""
    for sub in ("sem", "csg", "csm"):
        (tmp_path / sub).mkdir()
    sem_gt, sem_pred, _ = _semantic_dirs(tmp_path / "sem", bomb, "pred")
    cs_gt, cs_res, _ = _cityscapes_copy(tmp_path / "csg", bomb, "gt")
    cs_gt2, cs_res2, _ = _cityscapes_copy(tmp_path / "csm", bomb, "mask")
    script = textwrap.dedent(f"""
        import resource, sys
        import numpy as np
        from boundary_api.cli import main
        from boundary_api.masks.imagefiles import ImageTooLargeError
        from boundary_api.semantic.labelmaps import read_label_map
        from boundary_api.semantic import evaluate_folders
        from boundary_api.cityscapes import evaluate_cityscapes
        from boundary_api.panoptic import read_panoptic_png
        from boundary_api.report.figures import _load_image
        bomb = {bomb!r}
        calls = [
            lambda: read_label_map(bomb),
            lambda: evaluate_folders({sem_gt!r}, {sem_pred!r}, num_classes=3, num_threads=1),
            lambda: evaluate_cityscapes({cs_gt!r}, {cs_res!r}, num_threads=1),
            lambda: evaluate_cityscapes({cs_gt2!r}, {cs_res2!r}, num_threads=1),
            lambda: read_panoptic_png(bomb),
            lambda: _load_image({os.path.dirname(bomb)!r}, {{"file_name": "bomb.png", "height": 1, "width": 1}}),
        ]
        for call in calls:
            try:
                call()
            except ImageTooLargeError:
                pass
            else:
                sys.exit("not refused")
        for argv in (["semantic", "--gt-dir", {sem_gt!r}, "--pred-dir", {sem_pred!r}, "--num-classes", "3"],
                     ["measures", bomb, bomb],
                     ["cityscapes", "--gt-dir", {cs_gt!r}, "--result-dir", {cs_res!r}, "--threads", "1"],
                     ["cityscapes", "--gt-dir", {cs_gt2!r}, "--result-dir", {cs_res2!r}, "--threads", "1"]):
            assert main(argv) == 2, argv
        # VmHWM, not ru_maxrss: on Linux ru_maxrss carries the forking parent's
        # peak over exec (the test process's own, hundreds of MB in a full run)
        print(next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmHWM:")))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    peak_kib = int(out.stdout.strip().splitlines()[-1])
    assert peak_kib < 600 * 1024, peak_kib
