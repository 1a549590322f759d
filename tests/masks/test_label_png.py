"""Label maps read from PNG files (issue 40, item 4, and the native decoder of
``boundary_api.masks._png``): ``read_label_map`` gives exactly Pillow's
``np.array(Image.open(path))`` for every single-channel kind (palette at 1, 2,
4, 8 bits: the indices; greyscale at 1, 2, 4, 8, 16 bits, Pillow's values), by
the package's own decoder where it takes the file and by Pillow elsewhere;
the C interface (``png_decode_labels``, two bytes a value) agrees; the size
guard refuses bombs before allocating; ``read_mask_file`` takes Pillow's
values too (palette indices, not colours)."""
import io
import struct
import threading
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from boundary_api.masks import _png
from boundary_api.masks.imagefiles import ImageTooLargeError, read_label_map, read_mask_file
from pngfiles import (CHANNELS, DEPTHS, STRATEGIES, chunk, default_palette, random_samples, retag, with_size,
                      write_png)

LABEL_KINDS = [(ct, d) for ct in (0, 3) for d in DEPTHS[ct]]


def pillow(blob: bytes):
    """Pillow's array of a file, or the exception class it raises."""
    try:
        with Image.open(io.BytesIO(blob)) as im:
            return np.array(im)
    except Exception as exc:  # noqa: BLE001 (Pillow's, whatever it is)
        return type(exc)


def assert_pillow_values(got: np.ndarray, want: np.ndarray):
    """Same shape and values; the dtype Pillow's, except uint8 0/1 for its bool."""
    assert got.shape == want.shape
    if want.dtype == bool:
        assert got.dtype == np.uint8
        want = want.astype(np.uint8)
    else:
        assert got.dtype == want.dtype.newbyteorder("=")
    np.testing.assert_array_equal(got, want)


def native(blob: bytes):
    """``_png.png_label_map`` checked against the C interface's two-byte output."""
    got = _png.png_label_map(blob)
    wide = _png._label_map_u16(blob)
    if got is None:
        assert wide is None
        return None
    assert wide is not None and wide.dtype == np.uint16
    np.testing.assert_array_equal(wide, got)
    return got


@pytest.mark.parametrize("color_type, depth", LABEL_KINDS)
def test_every_kind_every_filter_equals_pillow(color_type, depth):
    rng = np.random.default_rng(depth * 10 + color_type)
    for h, w in ((1, 1), (1, 17), (9, 1), (7, 9), (13, 31), (40, 65)):
        for flat in (True, False):
            s = random_samples(rng, h, w, 1, depth, flat)
            for filters in ((0,), (1,), (2,), (3,), (4,), (0, 1, 2, 3, 4), tuple(rng.integers(0, 5, h))):
                blob = write_png(s, color_type, depth, filters=filters)
                got = native(blob)
                assert got is not None
                assert_pillow_values(got, pillow(blob))
                if color_type == 3 or depth in (1, 8, 16):
                    np.testing.assert_array_equal(got, s)  # the samples themselves


def test_pillow_values_of_sub_byte_grey():
    """Pillow scales 2- and 4-bit grey to 0..255 (mode L), keeps 1-bit as 0/1
    (mode 1) and palette indices as they are; so does the decoder."""
    s = np.arange(16, dtype=np.uint8).reshape(2, 8)
    np.testing.assert_array_equal(native(write_png(s % 4, 0, 2)), (s % 4) * 85)
    np.testing.assert_array_equal(native(write_png(s, 0, 4)), s * 17)
    np.testing.assert_array_equal(native(write_png(s % 2, 0, 1)), s % 2)
    np.testing.assert_array_equal(native(write_png(s % 4, 3, 2)), s % 4)
    np.testing.assert_array_equal(native(write_png(s, 3, 4)), s)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(LABEL_KINDS), st.integers(1, 12), st.integers(1, 40), st.integers(0, 2 ** 32 - 1),
       st.integers(0, 9), st.sampled_from(STRATEGIES), st.integers(1, 4), st.booleans(), st.integers(9, 15),
       st.integers(1, 9))
def test_generated_files_equal_pillow(kind, h, w, seed, level, strategy, pieces, flat, wbits, mem_level):
    color_type, depth = kind
    rng = np.random.default_rng(seed)
    s = random_samples(rng, h, w, 1, depth, flat)
    blob = write_png(s, color_type, depth, filters=tuple(rng.integers(0, 5, h)), level=level, strategy=strategy,
                     pieces=pieces, wbits=wbits, mem_level=mem_level)
    got = native(blob)
    assert got is not None
    assert_pillow_values(got, pillow(blob))


def test_large_flat_map_spanning_many_deflate_windows():
    rng = np.random.default_rng(5)
    h, w = 480, 854
    lab = np.zeros((h, w), np.uint8)
    for k in range(1, 30):
        y, x = rng.integers(0, h), rng.integers(0, w)
        lab[y:y + rng.integers(1, 200), x:x + rng.integers(1, 300)] = k
    for filters in ((0,), (1,), (2,), (4,), (0, 1, 2, 3, 4)):
        for level in (0, 1, 9):
            blob = write_png(lab, 3, 8, filters=filters, level=level, pieces=3)
            np.testing.assert_array_equal(native(blob), lab)
    # written by Pillow (8 bits with a full palette; Pillow writes fewer bits
    # when the palette is short)
    for palette in (default_palette(256), default_palette(2)):
        im = Image.fromarray(lab, "P")
        im.putpalette(palette.tobytes())
        buf = io.BytesIO()
        im.save(buf, "PNG")
        assert_pillow_values(native(buf.getvalue()), pillow(buf.getvalue()))


def test_chunks_pillow_reads_the_same_way_are_decoded(tmp_path):
    """tRNS, a palette of any length up to 256 colours or none, text and other
    ancillary chunks: decoded natively, Pillow's values."""
    rng = np.random.default_rng(2)
    s = random_samples(rng, 6, 11, 1, 8, False)
    g = s % 2
    cases = [
        write_png(s, 3, 8, trns=b"\0\x80\xff"),
        write_png(s, 3, 8, trns=b""),
        write_png(s, 3, 8, palette=False),
        write_png(s, 3, 8, palette=default_palette(3)),
        write_png(s, 0, 8, trns=b"\0\x07"),
        write_png(g, 0, 1, trns=b"\0\x01"),
        write_png(s, 0, 8, before=[(b"gAMA", bytes(4)), (b"pHYs", bytes(9)), (b"sRGB", b"\0"),
                                   (b"cHRM", bytes(32)), (b"tEXt", b"Title\0x"), (b"eXIf", b"junk"),
                                   (b"prVt", b"anything")],
                  after=[(b"tEXt", b"after\0y"), (b"tIME", bytes(7))]),
        write_png(s, 0, 8, before=[(b"PLTE", b"abc")]),  # a palette in a grey image: ignored
    ]
    for blob in cases:
        assert _png.png_label_header(blob) is not None
        assert_pillow_values(native(blob), pillow(blob))
        path = tmp_path / "x.png"
        path.write_bytes(blob)
        assert_pillow_values(read_label_map(path), pillow(blob))


def test_files_left_to_pillow_still_give_pillow_values(tmp_path):
    """Interlaced files, chunks Pillow interprets in ways the decoder does not
    follow, unknown critical chunks, wrong CRCs, colour: not decoded natively;
    read_label_map then gives Pillow's values or refuses the file as Pillow does."""
    rng = np.random.default_rng(3)
    s = random_samples(rng, 9, 13, 1, 4, False)
    cases = [
        write_png(s, 3, 4, interlace=1),
        write_png(s, 0, 4, interlace=1, filters=(0, 1, 2, 3, 4)),
        write_png(s, 0, 4, before=[(b"zTXt", b"k\0\0" + zlib.compress(b"text"))]),
        write_png(s, 0, 4, before=[(b"iCCP", b"p\0\0" + zlib.compress(b"profile"))]),
        write_png(s, 0, 4, before=[(b"ABCD", b"critical, unknown")]),
        write_png(s, 3, 4, before=[(b"PLTE", bytes(769))], palette=False),
        write_png(s, 3, 4, after=[(b"PLTE", bytes(6))]),
        write_png(s, 0, 4, trns=b"\0"),          # Pillow: "Truncated tRNS chunk"
        write_png(s, 0, 4, after=[(b"gAMA", b"")]),
    ]
    for blob in cases:
        assert _png.png_label_header(blob) is None
        path = tmp_path / "x.png"
        path.write_bytes(blob)
        want = pillow(blob)
        if isinstance(want, np.ndarray):
            assert_pillow_values(read_label_map(path), want)
        else:
            with pytest.raises(ValueError, match="x.png"):
                read_label_map(path)
    # a wrong CRC in the image data (Pillow does not check it there)
    blob = write_png(s, 0, 4)
    bad = retag(blob, len(blob) - 13, blob[len(blob) - 13] ^ 1, False)
    assert _png.png_label_header(bad) is None
    path.write_bytes(bad)
    assert_pillow_values(read_label_map(path), pillow(bad))


def test_damaged_image_data_is_pillow_s_to_judge(tmp_path):
    """Every truncation and some byte changes of a file: the decoder refuses,
    or gives Pillow's values; read_label_map gives Pillow's values or one
    ValueError naming the file when Pillow raises."""
    rng = np.random.default_rng(4)
    blob = write_png(random_samples(rng, 5, 9, 1, 8, True), 3, 8, level=9, filters=(1, 4))
    path = tmp_path / "d.png"
    # (every truncation and thousands of mutations: tests/fuzz/test_png_fuzz.py)
    variants = [blob[:n] for n in range(0, len(blob), 9)]
    variants += [retag(blob, int(i), int(v), True) for i, v in zip(rng.integers(8, len(blob), 20),
                                                                    rng.integers(0, 256, 20))]
    for bad in variants:
        want = pillow(bad)
        got = native(bad)
        if got is not None:
            assert_pillow_values(got, want)
        path.write_bytes(bad)
        if isinstance(want, np.ndarray) and want.ndim == 2:
            assert_pillow_values(read_label_map(path), want)
        else:
            with pytest.raises(ValueError, match="d.png") as info:
                read_label_map(path)
            assert "\n" not in str(info.value)


def test_read_label_map_other_formats_and_modes(tmp_path):
    lab = (np.arange(60, dtype=np.int64).reshape(6, 10) * 997) % 65536
    Image.fromarray(lab.astype(np.int32), "I").save(tmp_path / "i.tif")
    Image.fromarray(lab.astype(np.uint16)).save(tmp_path / "i16.tif")
    Image.fromarray((lab % 200).astype(np.uint8), "L").save(tmp_path / "l.bmp")
    Image.fromarray((lab % 2).astype(bool)).save(tmp_path / "b.png")
    Image.fromarray((lab % 2).astype(bool)).save(tmp_path / "b.tif")
    for name in ("i.tif", "i16.tif", "l.bmp", "b.png", "b.tif"):
        got = read_label_map(tmp_path / name)
        with Image.open(tmp_path / name) as im:
            want = np.array(im)
        assert_pillow_values(got, want)
        assert got.flags.c_contiguous and got.flags.writeable
    # a 16-bit PNG written by Pillow, and by OpenCV
    import cv2

    cv2.imwrite(str(tmp_path / "cv16.png"), lab.astype(np.uint16))
    got = read_label_map(tmp_path / "cv16.png")
    assert got.dtype == np.uint16
    np.testing.assert_array_equal(got, lab)


@pytest.mark.parametrize("color_type, depth", [(2, 8), (6, 8), (4, 8), (2, 16), (4, 16)])
def test_several_channels_are_refused_in_one_line(tmp_path, color_type, depth):
    s = random_samples(np.random.default_rng(0), 4, 5, CHANNELS[color_type], depth, False)
    path = tmp_path / "c.png"
    path.write_bytes(write_png(s, color_type, depth))
    with pytest.raises(ValueError, match=r"c\.png: expected a single-channel label map .* channels"):
        read_label_map(path)


def test_header_claiming_a_huge_image_is_refused_before_allocating(tmp_path):
    import tracemalloc

    blob = write_png(np.zeros((4, 4), np.uint8), 3, 1)
    for w, h in ((40000, 40000), (2 ** 31 - 1, 2 ** 31 - 1), (1, 2 ** 31 - 1)):
        bomb = with_size(blob, w, h)
        tracemalloc.start()
        try:
            assert _png.png_label_map(bomb) is None and _png.png_label_header(bomb) is None
            path = tmp_path / "bomb.png"
            path.write_bytes(bomb)
            with pytest.raises(ValueError, match="bomb.png"):
                read_label_map(path, max_pixels=None if w * h < 2 ** 31 else 2 ** 62)
            with pytest.raises(ImageTooLargeError, match="bomb.png"):
                read_label_map(path, max_pixels=100)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 1 << 22


def test_decoding_in_threads_gives_the_same_maps():
    """The decoder runs without the GIL, several files at once."""
    rng = np.random.default_rng(6)
    files = []
    for i in range(24):
        ct, d = LABEL_KINDS[i % len(LABEL_KINDS)]
        s = random_samples(rng, int(rng.integers(50, 120)), int(rng.integers(50, 200)), 1, d, True)
        files.append(write_png(s, ct, d, filters=(0, 1, 2, 3, 4), pieces=2))
    want = [native(b) for b in files]
    got = [None] * len(files)

    def work(k):
        for i in range(k, len(files), 4):
            for _ in range(5):
                got[i] = _png.png_label_map(files[i])

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for a, b in zip(got, want):
        np.testing.assert_array_equal(a, b)


def test_reused_scratch():
    rng = np.random.default_rng(8)
    scratch = np.empty(1 << 16, np.uint8)
    for i in range(10):
        ct, d = LABEL_KINDS[i % len(LABEL_KINDS)]
        s = random_samples(rng, int(rng.integers(1, 60)), int(rng.integers(1, 90)), 1, d, False)
        blob = write_png(s, ct, d, pieces=1 + i % 3)
        np.testing.assert_array_equal(_png.png_label_map(blob, scratch), native(blob))


# ---------------------------------------------------------------------------
# read_mask_file: Pillow's values, foreground = any nonzero value
# ---------------------------------------------------------------------------

def test_mask_of_a_palette_png_is_its_nonzero_indices(tmp_path):
    m = np.zeros((6, 8), np.uint8)
    m[1:4, 2:7] = 1
    im = Image.fromarray(m, "P")
    im.putpalette([255, 255, 255, 0, 0, 0])  # index 0 white, index 1 black
    im.save(tmp_path / "p.png")
    np.testing.assert_array_equal(read_mask_file(tmp_path / "p.png"), m)
    (tmp_path / "p4.png").write_bytes(write_png(m * 3, 3, 4))
    np.testing.assert_array_equal(read_mask_file(tmp_path / "p4.png"), m)


def test_mask_of_a_1_bit_png_and_of_rgb_with_trns(tmp_path):
    m = np.zeros((5, 9), np.uint8)
    m[2:, 3:8] = 1
    (tmp_path / "b.png").write_bytes(write_png(m, 0, 1))
    got = read_mask_file(tmp_path / "b.png")
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, m)
    rgb = np.zeros((5, 9, 3), np.uint8)
    rgb[m == 1] = (0, 9, 0)
    # black transparent: still background (OpenCV gives it an alpha of 255)
    (tmp_path / "t.png").write_bytes(write_png(rgb, 2, 8, trns=struct.pack(">HHH", 0, 0, 0)))
    np.testing.assert_array_equal(read_mask_file(tmp_path / "t.png"), m)
    (tmp_path / "g.png").write_bytes(write_png(m, 0, 8, trns=struct.pack(">H", 0)))
    np.testing.assert_array_equal(read_mask_file(tmp_path / "g.png"), m)


def test_chunk_helper_round_trip():
    blob = write_png(np.zeros((2, 2), np.uint8), 0, 8)
    assert blob.endswith(chunk(b"IEND", b""))
