"""The RLE string decoder of the kernels (``_rle._decode`` / ``_rle._rle_total``)
against a plain Python decoder that reads one count after the other, against
the previous decoder (kept in ``_rle`` as the reference) and pycocotools, its
two window passes (SSE2, SWAR) against each other, the areas and boxes it
gives against pycocotools, and the encoder against pycocotools."""
import numpy as np
import pycocotools.mask as mask_utils
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api.masks import _rle

M64 = (1 << 64) - 1


def _signed(x):
    x &= M64
    return x - (1 << 64) if x >> 63 else x


def reference_decode(s: bytes):
    """(total, ones-intervals) of a compressed RLE string, or (-1, None): the
    loop pycocotools' ``rleFrString`` runs, with 64-bit counts, a count of at
    most 13 characters, each count in 0 .. 2**32-1, and the x86 shift (by 65
    mod 64 bits) for the sign of a 13th character."""
    p = m = pos = prev1 = prev2 = 0
    runs = []
    while p < len(s):
        x = k = 0
        more = True
        while more:
            if p >= len(s) or k > 12:
                return -1, None
            c = s[p] - 48
            if c < 0 or c > 63:
                return -1, None
            x = (x | ((c & 0x1F) << (5 * k))) & M64
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x = (x | (M64 << ((5 * k) & 63))) & M64
        x = _signed(x)
        if m > 2:
            x = _signed(x + prev2)
        if x < 0 or x > 2**32 - 1:
            return -1, None
        if m & 1 and x:
            if runs and runs[-1][1] == pos:
                runs[-1][1] = pos + x
            else:
                runs.append([pos, pos + x])
        pos += x
        prev2, prev1 = prev1, x
        m += 1
    return pos, runs


def _box_of(runs, h):
    if not runs:
        return [0.0, 0.0, 0.0, 0.0]
    x0, x1 = runs[0][0] // h, (runs[-1][1] - 1) // h + 1
    y0, y1 = h, 0
    for s, e in runs:
        if s // h != (e - 1) // h:
            y0, y1 = 0, h
            break
        y0, y1 = min(y0, s - s // h * h), max(y1, e - s // h * h)
    return [float(x0), float(y0), float(x1 - x0), float(y1 - y0)]


_ODD = bytes([47, 112, 32, 200])  # outside the alphabet '0'..'o'


def _alphabet(raw: bytes) -> bytes:
    """Random bytes as RLE characters, about one in 60 outside the alphabet."""
    return bytes(_ODD[b & 3] if b >= 252 else 48 + (b & 63) for b in raw)


_strings = st.one_of(
    st.binary(max_size=40).map(_alphabet),
    # long counts: continuation characters ('P'..'o') ended by a last one
    st.tuples(st.binary(max_size=6), st.integers(0, 15), st.integers(48, 79))
      .map(lambda t: _alphabet(t[0]) + b"P" * t[1] + bytes([t[2]])),
    # past the decoder's 256-character chunks
    st.binary(min_size=200, max_size=700).map(lambda b: bytes(48 + (c & 63) for c in b)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_strings)
def test_decoder_equals_the_one_count_at_a_time_loop(s):
    total, runs = reference_decode(s)
    for hw in {(1, 1), (max(total, 1), 1)}:
        h, w = np.array([hw[0]], np.int64), np.array([hw[1]], np.int64)
        status = int(_rle.check_strings(_rle.StringTable([s]), h, w)[0])
        want = 1 if total < 0 else (0 if total == hw[0] * hw[1] else 2)
        assert status == want
        st2, area, box = _rle.check_area_bbox(_rle.StringTable([s]), h, w)
        assert int(st2[0]) == want
        if want == 0:
            assert int(area[0]) == sum(e - s0 for s0, e in runs)
            assert box[0].tolist() == _box_of(runs, hw[0])


def test_thirteen_character_counts_as_before():
    # a 13th character's sign shifts by 65 mod 64: the count is -2, and
    # with the count two places before (3) added, 1
    for s in (b"532" + b"P" * 12 + b"A", b"532" + b"P" * 12 + b"@"):
        assert reference_decode(s)[0] == 11
        assert _rle.check_strings(_rle.StringTable([s]), np.array([11], np.int64),
                                  np.array([1], np.int64)).tolist() == [0]
    for s in (b"532" + b"P" * 13 + b"A", b"532" + b"P" * 11 + b"A", b"53P"):
        assert _rle.check_strings(_rle.StringTable([s]), np.array([1], np.int64),
                                  np.array([1], np.int64)).tolist() == [1]


@pytest.mark.parametrize("seed", range(3))
def test_area_and_box_equal_pycocotools(seed):
    rng = np.random.default_rng(seed)
    counts, hs, ws, areas, boxes = [], [], [], [], []
    for _ in range(400):
        h, w = (int(v) for v in rng.integers(1, 70, 2))
        m = np.zeros((h, w), np.uint8)
        for _ in range(int(rng.integers(0, 5))):
            y, x = int(rng.integers(0, h)), int(rng.integers(0, w))
            m[y:y + int(rng.integers(1, h + 1)), x:x + int(rng.integers(1, 4))] = 1  # far apart columns too
        if rng.random() < 0.3:
            m |= (rng.random((h, w)) < 0.05).astype(np.uint8)
        rle = mask_utils.encode(np.asfortranarray(m))
        counts.append(rle["counts"])
        hs.append(h)
        ws.append(w)
        areas.append(int(mask_utils.area(rle)))
        boxes.append(mask_utils.toBbox(rle).tolist())
    h, w = np.array(hs, np.int64), np.array(ws, np.int64)
    area, box = _rle.area_bbox(_rle.StringTable(counts), h)
    assert area.tolist() == areas and box.tolist() == boxes
    status, area2, box2 = _rle.check_area_bbox(_rle.StringTable(counts), h, w)
    assert not status.any() and area2.tolist() == areas and box2.tolist() == boxes


# --------------------------------------------------------------------------
# the encoder (``_rle._encode``): with a radius past the box the boundary is
# the whole mask, so ``_boundary_probe`` decodes a string and encodes its runs
# back; the result must be pycocotools' string byte for byte, in particular
# counts 0-2 written as they are and later ones as differences (negative ones
# too), empty and full masks, masks starting or ending at a corner
def _mask_cases():
    rng = np.random.default_rng(27)
    cases = [np.zeros((1, 1), np.uint8), np.ones((1, 1), np.uint8), np.zeros((3, 5), np.uint8),
             np.ones((4, 3), np.uint8)]
    corner = np.zeros((5, 4), np.uint8)
    corner[0, 0] = 1
    corner[-1, -1] = 1
    cases.append(corner)
    for _ in range(60):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        p = rng.choice([0.02, 0.3, 0.5, 0.9])
        cases.append((rng.random((h, w)) < p).astype(np.uint8))
    big = np.zeros((300, 400), np.uint8)   # long runs: counts of 2-4 characters, large differences
    big[10:290, 7:9] = 1
    big[0:3, 100:380] = 1
    big[150, 390] = 1
    cases.append(big)
    return cases


@pytest.mark.parametrize("k", range(66))
def test_encoder_equals_pycocotools(k):
    from boundary_api.masks import _boundary

    m = _mask_cases()[k]
    h, w = m.shape
    want = mask_utils.encode(np.asfortranarray(m))["counts"]
    got, _ = _boundary._boundary_probe(want, h, w, max(h, w))
    assert got == want


# --------------------------------------------------------------------------
# the decoder (64-character windows, two counts per 8-byte load) against the
# previous decoder, kept in ``_rle`` as ``_decode_ref_impl``, against the
# plain loop above and, for masks of a reasonable size, pycocotools: the same
# totals, the same maximal intervals, -1 for the same strings
def encode_counts(counts) -> bytes:
    """COCO's compressed string of ``counts`` (any integers: a difference of
    any size, or a count that is out of range once decoded, too)."""
    out = bytearray()
    for i, c in enumerate(counts):
        x = c - counts[i - 2] if i > 2 else c
        more = True
        while more:
            ch = x & 0x1F
            x >>= 5
            more = x != -1 if ch & 0x10 else x != 0
            out.append(48 + (ch | (0x20 if more else 0)))
    return bytes(out)


def _raw(groups) -> bytes:
    """A string from counts given as their 5-bit groups (a count of up to 14
    characters, the last one's bit 4 its sign), whatever values they make."""
    out = bytearray()
    for g in groups:
        out += bytes(48 + 0x20 + (v & 31) for v in g[:-1]) + bytes([48 + (g[-1] & 31)])
    return bytes(out)


_count = st.one_of(
    st.integers(0, 31),                      # 1 character
    st.integers(0, 1023),                    # 2 characters
    st.just(0),                              # empty runs: neighbours merge
    st.integers(0, 2**32 - 1),               # up to 7 characters
    st.integers(2**32 - 40, 2**32 - 1),      # the largest counts
    st.integers(2**25, 2**30),               # 6 characters
)
_valid = st.lists(_count, max_size=120).map(encode_counts)
_structured = st.lists(st.lists(st.integers(0, 31), min_size=1, max_size=14), max_size=40).map(_raw)
_out_of_range = st.lists(st.integers(-2**33, 2**33), max_size=30).map(encode_counts)


def _damage(s: bytes, data) -> bytes:
    """s with one of: a byte replaced by any byte, cut short, a byte
    inserted, a run of continuation characters inserted."""
    how = data.draw(st.sampled_from(["replace", "cut", "insert", "long"]))
    if not s:
        return bytes([data.draw(st.integers(0, 255))])
    i = data.draw(st.integers(0, len(s) - 1))
    if how == "replace":
        return s[:i] + bytes([data.draw(st.integers(0, 255))]) + s[i + 1:]
    if how == "cut":
        return s[:i]
    if how == "insert":
        return s[:i] + bytes([data.draw(st.integers(0, 255))]) + s[i:]
    return s[:i] + b"P" * data.draw(st.integers(1, 20)) + s[i:]


def _check_decoders(strings):
    table = _rle.StringTable(list(strings))
    new = _rle._decode_table(table)
    old = _rle._decode_table(table, reference=True)
    for a, b in zip(new, old):
        assert np.array_equal(a, b)
    assert np.array_equal(_rle._decode_table(table, runs=False)[0], new[0])
    assert np.array_equal(_rle._decode_table(table, reference=True, runs=False)[0], new[0])
    totals, offsets, runs = new
    for i, s in enumerate(strings):
        total, want = reference_decode(s)
        assert int(totals[i]) == total, s
        got = runs[offsets[i]:offsets[i + 1]].reshape(-1, 2).tolist()
        assert got == (want or [])
        if 0 <= total <= 200_000:
            m = mask_utils.decode({"size": [max(total, 1), 1], "counts": s}).ravel() if total else np.zeros(0)
            ones = np.flatnonzero(m)
            assert ones.tolist() == [p for a, b in got for p in range(a, b)]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_valid, _structured, _out_of_range), min_size=1, max_size=8))
def test_decoder_equals_the_previous_one_on_strings(strings):
    _check_decoders(strings)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(_valid, _structured), st.data())
def test_decoder_equals_the_previous_one_on_damaged_strings(s, data):
    damaged = [_damage(s, data) for _ in range(4)]
    _check_decoders([s] + damaged)


def test_decoder_at_window_and_copy_boundaries():
    # strings of every length around the 64-character windows and the
    # padded copy of the last 71 characters, with a bad character, a cut or
    # a continuation at every place of some of them
    rng = np.random.default_rng(5)
    strings = []
    for n in range(1, 200):
        counts = rng.choice([0, 1, 5, 31, 32, 700, 1023, 1024, 40000, 2**31], n).tolist()
        s = encode_counts(counts)
        strings.append(s)
        strings.append(s[:-1])
        if n % 17 == 0:
            for i in range(len(s)):
                strings.append(s[:i] + b"p" + s[i + 1:])
                strings.append(s[:i] + b"/" + s[i + 1:])
                strings.append(s[:i] + b"P" + s[i + 1:])
                strings.append(s[:i] + b"\xff" + s[i + 1:])
    strings += [b"", b"0", b"P", b"1" * 64, b"1" * 65, b"P" * 13 + b"0", b"P" * 12 + b"0",
                b"1" + b"P" * 12 + b"A" + b"1" * 70, b"1" + b"P" * 13 + b"A" + b"1" * 70]
    _check_decoders(strings)


def test_decoder_on_the_results_files():
    import json
    import os

    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    strings = []
    for f in ("coco/instances_val2014_fakesegm100_results.json", "lvis/lvis_val_100_results_jitter.json"):
        with open(os.path.join(here, "data", f)) as fh:
            strings += [r["segmentation"]["counts"].encode() for r in json.load(fh)]
    table = _rle.StringTable(strings)
    for a, b in zip(_rle._decode_table(table), _rle._decode_table(table, reference=True)):
        assert np.array_equal(a, b)
    assert (_rle._decode_table(table)[0] > 0).all()


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.binary(min_size=64, max_size=64).map(_alphabet),
                 st.binary(min_size=64, max_size=64).map(lambda b: bytes(48 + (c & 63) for c in b)),
                 st.binary(min_size=64, max_size=64)))
def test_window_pass_sse2_and_swar(chars):
    # the pass that finds the counts' last characters: the SSE2 one the
    # kernels use on x86 and the SWAR one of other CPUs give the same mask
    # of a good window, and both see a bad character
    _, mask, bad, swar_mask, swar_bad = _rle._window_masks(chars)
    want_bad = any(not 48 <= c <= 111 for c in chars)
    assert bad == want_bad and swar_bad == want_bad
    if not want_bad:
        want = sum(1 << k for k, c in enumerate(chars) if not (c - 48) & 0x20)
        assert mask == want and swar_mask == want


def test_a_malformed_string_leaves_the_buffer_as_it_was():
    # decoded one after the other into one buffer: a malformed string adds
    # nothing, the next mask starts where the last good one ended (and is not
    # merged into it)
    good = encode_counts([3, 4, 0, 2, 1])
    strings = [good, good[:-1] + b"P", good, b"3" + b"p" * 70, good, encode_counts([0, 5])]
    totals, offsets, runs = _rle._decode_table(_rle.StringTable(strings))
    assert totals.tolist() == [10, -1, 10, -1, 10, 5]
    assert offsets.tolist() == [0, 2, 2, 4, 4, 6, 8]
    assert runs.tolist() == [3, 9, 3, 9, 3, 9, 0, 5]
