"""The package's own PNG decoder for panoptic id maps (``_png.pan_png_ids``, used by
``read_panoptic_png``, and ``_png.pan_png_runs``, the same straight into runs, used by
``pq_compute``; every test checks both): every filter type, pixel kind and Deflate
block type against ids computed from the pixels, and OpenCV; and every file it does
not take (or that is damaged) left to the label-map decoder or Pillow, whose values
``read_panoptic_png`` gives."""
import os
import struct
import zlib

import cv2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from boundary_api.masks import _idmaps, _png
from boundary_api.panoptic import _kernels as panoptic_kernels
from boundary_api.panoptic import read_panoptic_png
from boundary_api.panoptic.idmaps import _Buffers, _read_ids, _read_other, _read_runs
from pngfiles import chunk, filter_rows, retag

# colour type, bit depth and channels of the kinds decoded natively
KINDS = {"rgb": (2, 8, 3), "rgba": (6, 8, 4), "gray8": (0, 8, 1), "gray16": (0, 16, 1)}
STRATEGIES = [zlib.Z_DEFAULT_STRATEGY, zlib.Z_FILTERED, zlib.Z_HUFFMAN_ONLY, zlib.Z_RLE, zlib.Z_FIXED]


def _decode(blob):
    """``_png.pan_png_ids(blob)``, checked against ``_png.pan_png_runs(blob)``:
    both refuse the file, or the runs are those of the id map."""
    ids = _png.pan_png_ids(blob)
    runs = _png.pan_png_runs(blob)
    if ids is None:
        assert runs is None
        return None
    assert runs is not None and runs[:2] == ids.shape
    want_ends, want_ids = _idmaps.pan_ids_to_runs(ids)
    np.testing.assert_array_equal(runs[2], want_ends)
    np.testing.assert_array_equal(runs[3], want_ids)
    assert runs[2].dtype == np.int64 and runs[3].dtype == np.uint32
    np.testing.assert_array_equal(_idmaps.pan_runs_to_ids(runs[2], runs[3], *ids.shape), ids)
    return ids


def encode(pixels: np.ndarray, kind: str, filters=None, level=6, strategy=zlib.Z_DEFAULT_STRATEGY,
           pieces=1, text_before=False, text_after=False, interlace=0) -> bytes:
    """A PNG file written by the test's own encoder: pixels (H, W, C) uint8, or (H, W)
    uint16 for gray16, with the given filter type per row and Deflate settings."""
    color, depth, _ = KINDS[kind]
    h, w = pixels.shape[:2]
    if kind == "gray16":
        raw = pixels.astype(">u2").view(np.uint8).reshape(h, 2 * w)
    else:
        raw = pixels.reshape(h, -1)
    bpp = raw.shape[1] // w
    if filters is None:
        filters = [y % 5 for y in range(h)]
    comp = zlib.compressobj(level, zlib.DEFLATED, 15, 9, strategy)
    z = comp.compress(filter_rows(raw, bpp, filters)) + comp.flush()
    cuts = np.linspace(0, len(z), pieces + 1).astype(int)
    body = chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color, 0, 0, interlace))
    if text_before:
        body += chunk(b"tEXt", b"Comment\0before")
    for a, b in zip(cuts[:-1], cuts[1:]):
        body += chunk(b"IDAT", z[a:b])
    if text_after:
        body += chunk(b"tEXt", b"Comment\0after")
    return b"\x89PNG\r\n\x1a\n" + body + chunk(b"IEND", b"")


def oracle_ids(pixels: np.ndarray, kind: str) -> np.ndarray:
    if kind in ("gray8", "gray16"):
        return pixels.astype(np.uint32)
    p = pixels.astype(np.uint32)
    return p[..., 0] | (p[..., 1] << 8) | (p[..., 2] << 16)


@st.composite
def images(draw, max_h=12, max_w=24):
    kind = draw(st.sampled_from(sorted(KINDS)))
    h = draw(st.integers(1, max_h))
    w = draw(st.integers(1, max_w))
    channels = KINDS[kind][2]
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    high = 1 << 16 if kind == "gray16" else 256
    dtype = np.uint16 if kind == "gray16" else np.uint8
    shape = (h, w) if channels == 1 else (h, w, channels)
    if draw(st.booleans()):  # flat regions, as in segmentation maps
        palette = rng.integers(0, high, size=(int(rng.integers(1, 5)),) + shape[2:])
        pixels = np.empty(shape, dtype)
        pixels[...] = palette[0]
        for _ in range(int(rng.integers(0, 6))):
            y0, x0 = rng.integers(0, h), rng.integers(0, w)
            pixels[y0:y0 + int(rng.integers(1, h + 1)), x0:x0 + int(rng.integers(1, w + 1))] = \
                palette[int(rng.integers(0, len(palette)))]
    else:
        pixels = rng.integers(0, high, size=shape).astype(dtype)
    filters = draw(st.lists(st.integers(0, 4), min_size=h, max_size=h))
    return kind, pixels, filters


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(images(), st.integers(0, 9), st.sampled_from(STRATEGIES), st.integers(1, 3), st.booleans(), st.booleans())
def test_every_filter_kind_and_block_type_gives_the_pixels(tmp_path_factory, image, level, strategy, pieces,
                                                            before, after):
    kind, pixels, filters = image
    blob = encode(pixels, kind, filters, level, strategy, pieces, before, after)
    want = oracle_ids(pixels, kind)
    got = _decode(blob)
    assert got is not None and got.dtype == np.uint32 and got.flags.c_contiguous
    np.testing.assert_array_equal(got, want)
    # the file is a valid PNG: OpenCV reads the same ids from it
    path = str(tmp_path_factory.mktemp("png") / "x.png")
    with open(path, "wb") as f:
        f.write(blob)
    np.testing.assert_array_equal(_read_other(path), want)
    np.testing.assert_array_equal(read_panoptic_png(path), want)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_large_flat_images_with_long_matches(kind):
    """Images bigger than the Deflate window and the checksum's blocks, flat regions
    (the decoder's four-pixel shortcuts), every filter type row by row."""
    rng = np.random.default_rng(7)
    h, w = 301, 517
    channels = KINDS[kind][2]
    high = 1 << 16 if kind == "gray16" else 256
    shape = (h, w) if channels == 1 else (h, w, channels)
    pixels = np.zeros(shape, np.uint16 if kind == "gray16" else np.uint8)
    for _ in range(40):
        y0, x0 = rng.integers(0, h), rng.integers(0, w)
        pixels[y0:y0 + int(rng.integers(1, 120)), x0:x0 + int(rng.integers(1, 200))] = \
            rng.integers(0, high, size=shape[2:])
    for filters in ([int(f) for f in rng.integers(0, 5, h)], [1] * h, [2] * h, [4] * h):
        # (level 0: stored blocks; pan_png_runs inflates a slice of rows at a
        # time, and these images span several slices)
        for level in (0, 1, 9):
            got = _decode(encode(pixels, kind, filters, level))
            np.testing.assert_array_equal(got, oracle_ids(pixels, kind))
    for strategy in (zlib.Z_FIXED, zlib.Z_RLE, zlib.Z_HUFFMAN_ONLY):
        got = _decode(encode(pixels, kind, [1] * h, 6, strategy))
        np.testing.assert_array_equal(got, oracle_ids(pixels, kind))


def test_files_written_by_opencv_and_pillow(tmp_path):
    rng = np.random.default_rng(3)
    ids = rng.integers(0, 1 << 24, size=(37, 53)).astype(np.uint32)
    ids[5:30, 10:40] = 123456
    rgb = np.stack([ids & 255, (ids >> 8) & 255, ids >> 16], axis=-1).astype(np.uint8)
    cv2.imwrite(str(tmp_path / "cv.png"), rgb[..., ::-1])
    Image.fromarray(rgb).save(tmp_path / "pil.png")
    Image.fromarray(np.dstack([rgb, np.full(ids.shape, 200, np.uint8)])).save(tmp_path / "rgba.png")
    gray = (ids & 65535).astype(np.uint16)
    cv2.imwrite(str(tmp_path / "g16.png"), gray)
    for name, want in (("cv.png", ids), ("pil.png", ids), ("rgba.png", ids), ("g16.png", gray)):
        blob = (tmp_path / name).read_bytes()
        np.testing.assert_array_equal(_decode(blob), want)
        np.testing.assert_array_equal(read_panoptic_png(tmp_path / name), want)


def test_shipped_coco_panoptic_pngs_equal_opencv():
    from conftest import DATA

    root = os.path.join(DATA, "panoptic")
    paths = [os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs if f.endswith(".png")]
    assert paths
    for path in paths:
        with open(path, "rb") as f:
            got = _decode(f.read())
        assert got is not None
        np.testing.assert_array_equal(got, _read_other(path))


def _idat_span(blob: bytes):
    pos = 8
    while pos < len(blob):
        length = struct.unpack(">I", blob[pos:pos + 4])[0]
        if blob[pos + 4:pos + 8] == b"IDAT":
            return pos + 8, pos + 8 + length
        pos += 12 + length
    raise AssertionError("no IDAT")


def _flat_rgb():
    px = np.zeros((6, 9, 3), np.uint8)
    px[2:5, 3:8] = (10, 20, 30)
    return px


def test_kinds_it_does_not_take_are_left_to_the_other_readers(tmp_path):
    px = _flat_rgb()
    # interlaced, palette, grey + alpha, 16-bit colour: left to the other readers
    assert _decode(encode(px, "rgb", interlace=1)) is None
    pal = Image.fromarray(px).convert("P")
    pal.save(tmp_path / "pal.png")
    assert _decode((tmp_path / "pal.png").read_bytes()) is None
    # (a palette image's ids are its indices, as Pillow reads it: issue 40, item 4)
    np.testing.assert_array_equal(read_panoptic_png(tmp_path / "pal.png"), np.asarray(pal).astype(np.uint32))
    Image.fromarray(px[..., 0]).convert("LA").save(tmp_path / "la.png")
    assert _decode((tmp_path / "la.png").read_bytes()) is None
    cv2.imwrite(str(tmp_path / "rgb16.png"), px.astype(np.uint16) * 257)
    assert _decode((tmp_path / "rgb16.png").read_bytes()) is None
    # a transparency chunk changes nothing in Pillow's values: decoded, unless
    # shorter than Pillow requires
    blob = encode(px, "rgb")
    trns = blob[:33] + chunk(b"tRNS", b"\0\0\0\0\0\0") + blob[33:]
    np.testing.assert_array_equal(_decode(trns), oracle_ids(px, "rgb"))
    assert _decode(blob[:33] + chunk(b"tRNS", b"\0\0\0\0") + blob[33:]) is None
    # not a PNG at all, or empty
    assert _decode(b"") is None
    assert _decode(b"GIF89a" + bytes(40)) is None


def test_damaged_files_are_refused():
    px = _flat_rgb()
    blob = encode(px, "rgb", level=9)
    assert _decode(blob) is not None
    a, b = _idat_span(blob)
    # a wrong CRC anywhere
    for i in (20, a, b - 1, len(blob) - 1):
        assert _decode(retag(blob, i, blob[i] ^ 1, False)) is None
    # right CRCs but a wrong checksum of the data (last 4 bytes of the zlib stream)
    for i in range(b - 4, b):
        assert _decode(retag(blob, i, blob[i] ^ 0x10, True)) is None
    # an unknown filter type (5) in row 0, with a valid stream checksum and chunk CRC
    stored = encode(px, "rgb", filters=[0] * 6, level=0)
    a, b = _idat_span(stored)
    data = bytearray(zlib.decompress(stored[a:b]))
    data[0] = 5
    wrong = stored[:a - 8] + chunk(b"IDAT", zlib.compress(bytes(data), 0)) + stored[b + 4:]
    assert _decode(wrong) is None
    # every truncation
    for n in range(len(blob)):
        assert _decode(blob[:n]) is None


@pytest.mark.parametrize("fix_crc", [False, True], ids=["crc-as-is", "crc-fixed"])
def test_mutations_never_crash_and_never_give_a_wrong_image(fix_crc):
    """Every byte of a file set to every value (with or without the chunk's CRC
    fixed; 49,152 files, under a second): the decoder refuses it, or it gives exactly
    the image OpenCV reads."""
    px = _flat_rgb()
    blob = encode(px, "rgb", level=9)
    accepted = 0
    for i in range(len(blob)):
        for value in range(256):
            bad = retag(blob, i, value, fix_crc)
            got = _decode(bad)
            if got is None:
                continue
            accepted += 1
            arr = cv2.imdecode(np.frombuffer(bad, np.uint8), cv2.IMREAD_UNCHANGED)
            assert arr is not None and arr.ndim == 3, (i, value)
            np.testing.assert_array_equal(got, panoptic_kernels.pan_color_to_id(np.ascontiguousarray(arr), True))
    # the unchanged byte values at least, and the bytes no reader looks at
    assert accepted >= len(blob)


def test_damaged_file_is_a_clear_error(tmp_path):
    blob = encode(_flat_rgb(), "rgb")
    a, b = _idat_span(blob)
    path = tmp_path / "bad.png"
    path.write_bytes(retag(blob, (a + b) // 2, blob[(a + b) // 2] ^ 0xFF, False))
    with pytest.raises(ValueError, match="bad.png"):
        read_panoptic_png(path)


def test_reused_buffers_give_fresh_results(tmp_path):
    """pq_compute's workers reuse decoding memory from image to image: images of
    growing and shrinking sizes and kinds read through one set of buffers equal
    fresh reads."""
    rng = np.random.default_rng(11)
    buffers = _Buffers()
    for i, (h, w, kind) in enumerate([(5, 7, "rgb"), (40, 33, "rgba"), (3, 2, "gray8"), (64, 80, "gray16"),
                                      (10, 10, "rgb")]):
        channels = KINDS[kind][2]
        shape = (h, w) if channels == 1 else (h, w, channels)
        dtype = np.uint16 if kind == "gray16" else np.uint8
        pixels = rng.integers(0, 1 << (16 if kind == "gray16" else 8), size=shape).astype(dtype)
        path = tmp_path / f"{i}.png"
        path.write_bytes(encode(pixels, kind))
        got = _read_ids(str(path), None, buffers, i % 2)
        assert got.shape == (h, w)
        np.testing.assert_array_equal(got, oracle_ids(pixels, kind))
        np.testing.assert_array_equal(got, read_panoptic_png(path))
        runs = _read_runs(str(path), None, buffers)
        assert runs[:2] == (h, w)
        np.testing.assert_array_equal(_idmaps.pan_runs_to_ids(runs[2], runs[3], h, w), oracle_ids(pixels, kind))


def test_header_promising_more_than_the_data_holds_is_refused_before_allocating():
    """Deflate expands at most 1032 times: a few hundred bytes cannot hold a
    40000 x 40000 image, so no memory is set aside for one (numpy's allocations
    are seen by tracemalloc)."""
    import tracemalloc

    blob = bytearray(encode(_flat_rgb(), "rgb"))
    blob[16:24] = struct.pack(">II", 40000, 40000)
    blob[29:33] = struct.pack(">I", zlib.crc32(bytes(blob[12:29])) & 0xFFFFFFFF)
    tracemalloc.start()
    try:
        assert _png.pan_png_ids(bytes(blob)) is None
        assert _png.pan_png_runs(bytes(blob)) is None
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_bomb_read_with_reused_buffers_sets_no_memory_aside(tmp_path):
    """pq_compute's workers size their buffers from the header only when the
    file could hold that many pixels."""
    blob = bytearray(encode(_flat_rgb(), "rgb"))
    blob[16:24] = struct.pack(">II", 20000, 20000)
    blob[29:33] = struct.pack(">I", zlib.crc32(bytes(blob[12:29])) & 0xFFFFFFFF)
    path = tmp_path / "bomb.png"
    path.write_bytes(bytes(blob))
    buffers = _Buffers()
    with pytest.raises(ValueError, match="bomb.png"):
        _read_ids(str(path), None, buffers, 0)
    with pytest.raises(ValueError, match="bomb.png"):
        _read_runs(str(path), None, buffers)
    assert buffers.scratch.size == 0 and buffers.ids[0].size == 0


def _pillow_ids(path):
    """The ids Pillow's values give: rgb2id of RGB(A), a single channel (the
    alpha of LA dropped) as it is."""
    with Image.open(path) as im:
        mode, arr = im.mode, np.array(im)
    if mode in ("RGB", "RGBA"):
        a = arr.astype(np.uint32)
        return a[..., 0] | (a[..., 1] << 8) | (a[..., 2] << 16)
    if mode == "LA":
        arr = arr[..., 0]
    return arr.astype(np.uint32)


def test_every_png_kind_gives_pillow_s_values(tmp_path):
    """Issue 40, item 4: a 1-bit PNG gives ids 0/1 (not 0/255), a palette PNG its
    indices, 2/4-bit grey Pillow's scaled values, a grey or colour image with a
    tRNS chunk its samples; read_panoptic_png and the runs of pq_compute alike."""
    from pngfiles import CHANNELS, DEPTHS, random_samples, write_png

    rng = np.random.default_rng(12)
    for color_type, depths in DEPTHS.items():
        for depth in depths:
            for interlace in (0, 1):
                s = random_samples(rng, 11, 19, CHANNELS[color_type], depth, True)
                trns = {0: struct.pack(">H", int(s.flat[0])), 2: bytes(6), 3: b"\0"}.get(color_type)
                for extra in ({}, {"trns": trns} if trns is not None else {}):
                    path = tmp_path / f"{color_type}_{depth}_{interlace}.png"
                    path.write_bytes(write_png(s, color_type, depth, interlace=interlace, **extra))
                    want = _pillow_ids(path)
                    got = read_panoptic_png(path)
                    assert got.dtype == np.uint32
                    np.testing.assert_array_equal(got, want)
                    runs = _read_runs(str(path), None, _Buffers())
                    np.testing.assert_array_equal(_idmaps.pan_runs_to_ids(runs[2], runs[3], *runs[:2]), want)
    m = np.zeros((4, 9), np.uint8)
    m[1:3, 2:6] = 1
    path = tmp_path / "one_bit.png"
    path.write_bytes(write_png(m, 0, 1))
    np.testing.assert_array_equal(read_panoptic_png(path), m)
