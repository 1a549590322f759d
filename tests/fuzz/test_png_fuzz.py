"""Differential fuzzing of the PNG decoders (issue 40, item 5; the label-map
decoder of item 4): PNG files read by boundary_api's readers and by Pillow,
in child processes with a memory cap and a timeout (fuzz_runner.py;
the comparison: fuzz_compare.compare_png).  Every file the native decoders
(``_png.png_label_map``, ``_png.pan_png_ids``) take must be one Pillow reads,
to the same values; ``read_label_map``, ``read_panoptic_png`` and
``read_mask_file`` must give Pillow's values (or their rule on them), or
refuse in one line where Pillow fails; an image over ``max_pixels`` must be
refused before decoding.

The files, from fixed seeds: the tests' own writer (tests/pngfiles.py) at
every colour type and bit depth (grey 1/2/4/8/16, palette 1/2/4/8, RGB, RGBA,
grey + alpha, 8 and 16 bits), interlaced or not, every filter type, every
zlib level and strategy, window and memory level, the data cut into several
IDAT chunks (some empty), transparency and palette chunks of every length,
ancillary chunks Pillow reads (text, gamma, ICC profiles, ...); Pillow's and
OpenCV's writers at every compression setting; then damaged copies: every
truncation of small files, bytes changed with and without the chunk's CRC
fixed, CRCs broken, chunks inserted, and headers claiming huge sizes.
"""
import io
import struct
import zlib

import cv2
import numpy as np
import pytest
from PIL import Image

from fuzz_runner import describe, run_cases
from pngfiles import (CHANNELS, DEPTHS, STRATEGIES, chunk, default_palette, random_samples, retag, with_size,
                      write_png)

pytestmark = pytest.mark.slow

SEED = 40_07

ANCILLARY = [(b"tEXt", b"Title\0label map"), (b"gAMA", struct.pack(">I", 45455)), (b"pHYs", bytes(9)),
             (b"sRGB", b"\0"), (b"cHRM", bytes(32)), (b"tIME", bytes(7)), (b"bKGD", b"\0\0"), (b"prVt", b"x" * 40),
             (b"zTXt", b"k\0\0" + zlib.compress(b"text")), (b"iTXt", b"k\0\0\0\0\0text"),
             (b"iCCP", b"p\0\0" + zlib.compress(b"not a profile")), (b"eXIf", b"MM\0*"),
             # as Pillow requires them not
             (b"gAMA", b"\0"), (b"pHYs", b"\0"), (b"sRGB", b""), (b"zTXt", b"k\0\x05zz"), (b"iCCP", b"p\0\x01"),
             (b"acTL", b"\0\0\0\x01\0\0\0\0")]


def _size(rng):
    r = rng.random()
    if r < 0.1:
        return 1, int(rng.integers(1, 70))
    if r < 0.2:
        return int(rng.integers(1, 70)), 1
    if r < 0.22:
        return 480, 854
    return int(rng.integers(1, 40)), int(rng.integers(1, 70))


def own_writer_files(rng, n):
    out = []
    kinds = [(ct, d) for ct, ds in DEPTHS.items() for d in ds]
    for k in range(n):
        ct, depth = kinds[k % len(kinds)]
        h, w = _size(rng)
        if h * w > 10000 and ct not in (0, 3):
            h, w = 40, 60
        s = random_samples(rng, h, w, CHANNELS[ct], depth, flat=rng.random() < 0.7)
        kw = dict(interlace=int(rng.random() < 0.2), filters=tuple(int(f) for f in rng.integers(0, 5, 7)),
                  level=int(rng.integers(0, 10)), strategy=int(rng.choice(STRATEGIES)),
                  pieces=int(rng.integers(1, 5)), wbits=int(rng.integers(9, 16)), mem_level=int(rng.integers(1, 10)))
        r = rng.random()
        if ct == 3 and r < 0.3:
            kw["palette"] = [False, default_palette(int(rng.integers(1, 257))), default_palette(256)][k % 3]
        if r > 0.7:
            trns_len = {0: 2, 2: 6, 3: int(rng.integers(0, 300))}.get(ct, 2)
            if rng.random() < 0.2:
                trns_len = int(rng.integers(0, trns_len + 1))
            kw["trns"] = bytes(rng.integers(0, 256, trns_len, dtype=np.uint8))
        if rng.random() < 0.3:
            kw["before"] = [ANCILLARY[int(rng.integers(len(ANCILLARY)))] for _ in range(int(rng.integers(1, 3)))]
        if rng.random() < 0.2:
            kw["after"] = [ANCILLARY[int(rng.integers(len(ANCILLARY)))]]
        out.append(("own writer", write_png(s, ct, depth, **kw)))
    return out


def pillow_files(rng, n):
    out = []
    modes = ["1", "L", "P", "P2", "P4", "P1", "I;16", "RGB", "RGBA", "LA"]
    for k in range(n):
        mode = modes[k % len(modes)]
        h, w = _size(rng)
        if mode in ("P2", "P4", "P1", "P"):
            depth = {"P1": 1, "P2": 2, "P4": 4, "P": 8}[mode]
            im = Image.fromarray(random_samples(rng, h, w, 1, depth, rng.random() < 0.7), "P")
            im.putpalette(default_palette(1 << depth).tobytes())
            kw = {"bits": depth} if depth < 8 else {}
        elif mode == "1":
            im = Image.fromarray(random_samples(rng, h, w, 1, 1, True).astype(bool))
            kw = {}
        elif mode == "I;16":
            im = Image.fromarray(random_samples(rng, h, w, 1, 16, rng.random() < 0.7))
            kw = {}
        else:
            c = {"L": 1, "RGB": 3, "RGBA": 4, "LA": 2}[mode]
            im = Image.fromarray(random_samples(rng, h, w, c, 8, rng.random() < 0.7), mode)
            kw = {}
        buf = io.BytesIO()
        im.save(buf, "PNG", compress_level=int(rng.integers(0, 10)), optimize=bool(rng.random() < 0.3), **kw)
        out.append(("Pillow writer", buf.getvalue()))
    return out


def opencv_files(rng, n):
    out = []
    strategies = [cv2.IMWRITE_PNG_STRATEGY_DEFAULT, cv2.IMWRITE_PNG_STRATEGY_FILTERED,
                  cv2.IMWRITE_PNG_STRATEGY_HUFFMAN_ONLY, cv2.IMWRITE_PNG_STRATEGY_RLE, cv2.IMWRITE_PNG_STRATEGY_FIXED]
    for k in range(n):
        h, w = _size(rng)
        kind = k % 6
        if kind == 0:
            img = random_samples(rng, h, w, 1, 8, True)
        elif kind == 1:
            img = random_samples(rng, h, w, 1, 16, rng.random() < 0.5)
        elif kind == 2:
            img = random_samples(rng, h, w, 3, 8, True)
        elif kind == 3:
            img = random_samples(rng, h, w, 4, 8, rng.random() < 0.5)
        elif kind == 4:
            img = random_samples(rng, h, w, 3, 16, True)
        else:
            img = random_samples(rng, h, w, 1, 1, True) * 255
        params = [cv2.IMWRITE_PNG_COMPRESSION, int(rng.integers(0, 10)),
                  cv2.IMWRITE_PNG_STRATEGY, int(rng.choice(strategies))]
        if kind == 5 and rng.random() < 0.7:
            params += [cv2.IMWRITE_PNG_BILEVEL, 1]
        ok, enc = cv2.imencode(".png", img, params)
        assert ok
        out.append(("OpenCV writer", enc.tobytes()))
    return out


def _chunks(blob):
    """(offset, length, type) of each chunk."""
    pos, out = 8, []
    while pos + 8 <= len(blob):
        length = struct.unpack(">I", blob[pos:pos + 4])[0]
        out.append((pos, length, blob[pos + 4:pos + 8]))
        pos += 12 + length
    return out


def damaged(rng, files, n_mut, n_trunc_files):
    out = []
    small = [b for _, b in files if len(b) < 400]
    for blob in small[:n_trunc_files]:
        out += [("truncation", blob[:k]) for k in range(len(blob))]
    for _ in range(n_mut):
        blob = files[int(rng.integers(len(files)))][1]
        r = rng.random()
        if r < 0.45:
            i = int(rng.integers(8, len(blob)))
            out.append(("byte changed, CRC fixed" if r < 0.3 else "byte changed",
                        retag(blob, i, int(rng.integers(256)), r < 0.3)))
        elif r < 0.6:
            pos, length, _ = _chunks(blob)[int(rng.integers(len(_chunks(blob))))]
            i = pos + 8 + length + int(rng.integers(4))
            if i < len(blob):
                out.append(("CRC broken", retag(blob, i, blob[i] ^ (1 << int(rng.integers(8))), False)))
        elif r < 0.8:
            pos, length, _ = _chunks(blob)[int(rng.integers(len(_chunks(blob))))]
            kinds = [b"IHDR", b"PLTE", b"tRNS", b"IDAT", b"IEND", b"ABCD", b"gAMA", b"zTXt", b"fcTL"]
            kind = kinds[int(rng.integers(len(kinds)))]
            data = bytes(rng.integers(0, 256, int(rng.integers(0, 20)), dtype=np.uint8))
            out.append(("chunk inserted", blob[:pos] + chunk(kind, data) + blob[pos:]))
        else:
            # the stream of a valid file with its checksum or its end damaged
            idat = [c for c in _chunks(blob) if c[2] == b"IDAT"]
            pos, length, _ = idat[-1]
            if length >= 4:
                j = pos + 8 + length - 1 - int(rng.integers(min(length, 8)))
                out.append(("image data changed, CRC fixed", retag(blob, j, int(rng.integers(256)), True)))
    return out


def huge(rng, files):
    """Headers claiming huge sizes (short data), and a real bomb."""
    out = []
    sizes = [(40000, 40000), (2 ** 31 - 1, 1), (1, 2 ** 31 - 1), (2 ** 31 - 1, 2 ** 31 - 1), (20000, 20000),
             (10000, 10000), (12000, 11000), (65536, 2049)]
    for blob in [b for _, b in files[:12]]:
        for w, h in sizes:
            for limit in ("default", None, 100, 2 ** 40):
                out.append(("huge claimed size", with_size(blob, w, h), limit))
    side = 20000
    z = zlib.compressobj(9)
    row = b"\0" * (1 + (side + 7) // 8)
    data = b"".join(z.compress(row) for _ in range(side)) + z.flush()
    bomb = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 1, 3, 0, 0, 0))
            + chunk(b"PLTE", bytes(6)) + chunk(b"IDAT", data) + chunk(b"IEND", b""))
    for limit in ("default", None, 2 ** 40):
        out.append(("decompression bomb", bomb, limit))
    return out


def test_png_files_read_as_pillow_reads_them():
    rng = np.random.default_rng(SEED)
    files = own_writer_files(rng, 1400) + pillow_files(rng, 300) + opencv_files(rng, 240)
    more = damaged(rng, files, 900, 4)
    cases = [{"data": b, "family_kind": k} for k, b in files + more]
    cases += [{"data": b, "max_pixels": lim, "family_kind": k} for k, b, lim in huge(rng, files)]
    result = run_cases("png", cases)
    assert not result["failures"], describe(result)
