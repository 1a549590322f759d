"""A PNG writer for the tests: every colour type and bit depth PNG allows,
Adam7 interlacing, any filter type per row, any zlib level and strategy,
the image stream cut into several IDAT chunks, and extra chunks (PLTE, tRNS,
ancillary text) where the test wants them.  The tests compare what the
package's readers give for such files with what Pillow gives.

The pixels are given as raw samples: an (H, W) or (H, W, C) integer array of
values below ``2**depth`` (palette indices for colour type 3).
"""
import struct
import zlib

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"

#: channels of each colour type
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}
#: bit depths each colour type allows
DEPTHS = {0: (1, 2, 4, 8, 16), 2: (8, 16), 3: (1, 2, 4, 8), 4: (8, 16), 6: (8, 16)}
STRATEGIES = (zlib.Z_DEFAULT_STRATEGY, zlib.Z_FILTERED, zlib.Z_HUFFMAN_ONLY, zlib.Z_RLE, zlib.Z_FIXED)

# Adam7 passes: (first row, first column, row step, column step)
ADAM7 = ((0, 0, 8, 8), (0, 4, 8, 8), (4, 0, 8, 4), (0, 2, 4, 4), (2, 0, 4, 2), (0, 1, 2, 2), (1, 0, 2, 1))


def chunk(kind: bytes, data: bytes) -> bytes:
    """One chunk with its length and CRC."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = np.abs(p - a), np.abs(p - b), np.abs(p - c)
    return np.where((pa <= pb) & (pa <= pc), a, np.where(pb <= pc, b, c))


def pack_rows(samples: np.ndarray, depth: int) -> np.ndarray:
    """(H, W*C) samples -> (H, row bytes) uint8, packed as PNG stores them
    (sub-byte samples most significant bits first, 16 bits big-endian)."""
    h, n = samples.shape
    s = samples.astype(np.uint32)
    if depth == 16:
        return s.astype(">u2").view(np.uint8).reshape(h, 2 * n)
    if depth == 8:
        return s.astype(np.uint8)
    per = 8 // depth
    width = (n + per - 1) // per
    padded = np.zeros((h, width * per), np.uint32)
    padded[:, :n] = s
    padded = padded.reshape(h, width, per)
    shifts = np.array([8 - depth * (k + 1) for k in range(per)], np.uint32)
    return (padded << shifts).sum(axis=2).astype(np.uint8)


def filter_rows(raw: np.ndarray, bpp: int, filters) -> bytes:
    """PNG-filter the (H, row bytes) image, row y with filter type ``filters[y]``."""
    out = bytearray()
    prev = np.zeros(raw.shape[1], np.int64)
    for y in range(raw.shape[0]):
        f = int(filters[y % len(filters)])
        cur = raw[y].astype(np.int64)
        left = np.concatenate([np.zeros(bpp, np.int64), cur[:-bpp]])[:len(cur)]
        upleft = np.concatenate([np.zeros(bpp, np.int64), prev[:-bpp]])[:len(cur)]
        if f == 0:
            line = cur
        elif f == 1:
            line = cur - left
        elif f == 2:
            line = cur - prev
        elif f == 3:
            line = cur - (left + prev) // 2
        else:
            line = cur - _paeth(left, prev, upleft)
        out.append(f)
        out += (line % 256).astype(np.uint8).tobytes()
        prev = cur
    return bytes(out)


def image_data(samples: np.ndarray, depth: int, interlace: int = 0, filters=(0, 1, 2, 3, 4)) -> bytes:
    """The filtered, uncompressed image data of ``samples`` ((H, W) or (H, W, C))."""
    if samples.ndim == 2:
        samples = samples[:, :, None]
    channels = samples.shape[2]
    bpp = max(1, channels * depth // 8)
    if not interlace:
        h, w = samples.shape[:2]
        return filter_rows(pack_rows(samples.reshape(h, w * channels), depth), bpp, filters)
    out = b""
    for y0, x0, dy, dx in ADAM7:
        sub = samples[y0::dy, x0::dx]
        if sub.shape[0] and sub.shape[1]:
            h, w = sub.shape[:2]
            out += filter_rows(pack_rows(sub.reshape(h, w * channels), depth), bpp, filters)
    return out


def write_png(samples, color_type: int, depth: int, *, palette=None, trns: bytes = None, interlace: int = 0,
              filters=(0, 1, 2, 3, 4), level: int = 6, strategy: int = zlib.Z_DEFAULT_STRATEGY, pieces: int = 1,
              before=(), after=(), mem_level: int = 9, wbits: int = 15) -> bytes:
    """A PNG file of the raw ``samples``.

    Parameters
    ----------
    samples : (H, W) or (H, W, C) integer array of values below ``2**depth``
    color_type, depth : int
        As in IHDR (not checked: the tests also write invalid combinations).
    palette : (N, 3) uint8 array, optional
        The PLTE chunk (written for colour type 3 unless ``palette`` is False).
    trns : bytes, optional
        The tRNS chunk's data.
    interlace : 0 or 1
    filters : sequence of int
        Filter type of row y (of each pass): ``filters[y % len(filters)]``.
    level, strategy, mem_level, wbits
        zlib's settings.
    pieces : int
        The zlib stream cut into this many IDAT chunks (some may be empty).
    before, after : sequence of (bytes, bytes)
        Extra chunks (type, data) before the first IDAT and after the last.
    """
    samples = np.asarray(samples)
    h, w = samples.shape[:2]
    comp = zlib.compressobj(level, zlib.DEFLATED, wbits, mem_level, strategy)
    z = comp.compress(image_data(samples, depth, interlace, filters)) + comp.flush()
    body = chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, interlace))
    for kind, data in before:
        body += chunk(kind, data)
    if color_type == 3 and palette is not False:
        if palette is None:
            palette = default_palette(1 << depth)
        body += chunk(b"PLTE", np.asarray(palette, np.uint8).tobytes())
    if trns is not None:
        body += chunk(b"tRNS", trns)
    cuts = np.linspace(0, len(z), pieces + 1).astype(int)
    for a, b in zip(cuts[:-1], cuts[1:]):
        body += chunk(b"IDAT", z[a:b])
    for kind, data in after:
        body += chunk(kind, data)
    return SIGNATURE + body + chunk(b"IEND", b"")


def default_palette(n: int) -> np.ndarray:
    """``n`` colours, none of them black (index 0 included), all different."""
    i = np.arange(n, dtype=np.int64)
    return np.stack([255 - i % 256, (37 * i + 11) % 256, (91 * i + 200) % 256], axis=1).astype(np.uint8)


def random_samples(rng, h: int, w: int, channels: int, depth: int, flat: bool = True) -> np.ndarray:
    """Samples of an image: flat rectangles of a few values (as segmentation
    maps are) or noise."""
    high = 1 << depth
    shape = (h, w) if channels == 1 else (h, w, channels)
    if not flat:
        return rng.integers(0, high, size=shape, dtype=np.int64).astype(np.uint16 if depth == 16 else np.uint8)
    values = rng.integers(0, high, size=(int(rng.integers(1, 6)),) + shape[2:], dtype=np.int64)
    out = np.empty(shape, np.uint16 if depth == 16 else np.uint8)
    out[...] = values[0]
    for _ in range(int(rng.integers(0, 8))):
        y0, x0 = int(rng.integers(0, h)), int(rng.integers(0, w))
        out[y0:y0 + int(rng.integers(1, h + 1)), x0:x0 + int(rng.integers(1, w + 1))] = \
            values[int(rng.integers(0, len(values)))]
    return out


def retag(blob: bytes, index: int, value: int, fix_crc: bool) -> bytes:
    """Byte ``index`` of a PNG file set to ``value``; with ``fix_crc`` the CRC of
    the chunk holding it is recomputed, so only the content is wrong."""
    b = bytearray(blob)
    b[index] = value
    if fix_crc:
        pos = 8
        while pos + 8 <= len(b):
            length = struct.unpack(">I", bytes(b[pos:pos + 4]))[0]
            if pos + 4 <= index < pos + 8 + length and pos + 12 + length <= len(b):
                crc = zlib.crc32(bytes(b[pos + 4:pos + 8 + length])) & 0xFFFFFFFF
                b[pos + 8 + length:pos + 12 + length] = struct.pack(">I", crc)
            pos += 12 + length
    return bytes(b)


def with_size(blob: bytes, width: int, height: int) -> bytes:
    """The file with IHDR claiming ``width`` x ``height`` (its CRC fixed)."""
    b = bytearray(blob)
    b[16:24] = struct.pack(">II", width, height)
    b[29:33] = struct.pack(">I", zlib.crc32(bytes(b[12:29])) & 0xFFFFFFFF)
    return bytes(b)
