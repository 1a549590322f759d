"""boundary_api.instance._scan_results: the releasing scan of a file mapping.

``load_result_columns`` maps a results file and scans it with ``_release``:
the scan writes nothing, gives the pages behind its cursor(s) back every
``_release`` bytes and leaves the counts escaped; ``gather_counts`` then
copies them out unescaped (giving pages back behind it too).  Whatever the
file, the outcome must be the in-place scan's: ``None`` exactly when it gives
``None``, else the same columns bit for bit and, after the gather, the same
strings at the offsets ``compact_counts`` gives them, with the mapping and
the file unchanged.  The release step is one page here, so pages are given
back all through these files (and inside strings, numbers and escapes).
"""
import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api import COCO
from boundary_api._io import InputBytes
from boundary_api.instance import _scan_results
from boundary_api.instance._columns import load_result_columns, map_file
from conftest import COCO_DT, COCO_GT
from test_scan import RLE_ALPHABET, dump_raw

PAGE = 4096
ALPHABETS = [RLE_ALPHABET, "\\\"/0aO", '},{ "\\/ab', RLE_ALPHABET + "\\\\\\\\"]


def big_file(seed, n, alphabet, raw):
    """``n`` results with long counts strings (a few pages in all)."""
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        obj = {"image_id": rnd.randrange(1, 10 ** 6), "category_id": rnd.randrange(1, 91),
               "score": rnd.random()}
        if rnd.random() < 0.7:
            obj["bbox"] = [rnd.random() * 100 for _ in range(4)]
        if rnd.random() < 0.9:
            counts = "".join(rnd.choice(alphabet) for _ in range(rnd.randrange(0, 600)))
            obj["segmentation"] = {"size": [rnd.randrange(1, 999), rnd.randrange(1, 999)],
                                   "counts": counts}
        out.append(obj)
    if raw:
        tokens = {"score": json.dumps, "bbox": lambda b: [json.dumps(x) for x in b]}
        return dump_raw([{k: tokens.get(k, lambda x: x)(v) for k, v in o.items()} for o in out],
                        rnd).encode()
    return json.dumps(out, indent=rnd.choice([None, 1])).encode()


def release_same(tmp_path, data, threads=(1, 2, 3), release=PAGE):
    """Scan ``data`` in place (one thread) and from a mapping of it with
    ``_release`` (each of ``threads``, split forced); assert they agree."""
    ref_buf = bytearray(data)
    ref = _scan_results.scan_results(ref_buf, 1)
    if ref is not None:
        ref_start = ref["counts_start"].copy()
        used = _scan_results.compact_counts(ref_buf, ref_start, ref["counts_len"])
    path = tmp_path / "res.json"
    path.write_bytes(data)
    outcomes = []
    for k in threads:
        mapped = map_file(str(path))
        if not data:
            assert mapped is None
            assert ref is None
            return None
        buf, region = mapped
        mapped = None
        trace = []
        got = _scan_results.scan_results(buf, k, _min_parallel_bytes=1, _trace=trace, _release=release)
        assert bytes(buf) == data   # nothing written, every page given back reads as the file's
        outcomes.append(trace)
        if ref is None:
            assert got is None, (k, trace)
        else:
            assert got is not None, (k, trace)
            assert sorted(got) == sorted(list(ref) + ["counts_esc"])
            for key, want in ref.items():
                if key in ("counts_start", "counts_len"):
                    continue
                assert got[key].dtype == want.dtype and got[key].tobytes() == want.tobytes(), key
            counts = _scan_results.gather_counts(buf, got["counts_start"], got["counts_len"],
                                                 got["counts_esc"], release)
            assert bytes(buf) == data
            assert got["counts_len"].tobytes() == ref["counts_len"].tobytes()
            assert got["counts_start"].tobytes() == ref_start.tobytes()
            assert bytes(counts[:used]) == bytes(ref_buf[:used])
        del buf
        region.close()
    assert path.read_bytes() == data
    return outcomes


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32), st.integers(1, 60), st.sampled_from(ALPHABETS), st.booleans())
def test_releasing_scan_equals_in_place_scan(tmp_path, seed, n, alphabet, raw):
    data = big_file(seed, n, alphabet, raw)
    traces = release_same(tmp_path, data)
    if len(data) > 3 * PAGE and n > 3:
        assert ("split", 2, -1) in traces[1] or traces[1][0][0] == "fallback"


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32), st.sampled_from(ALPHABETS), st.data())
def test_truncated_or_mutated_file_refused_alike(tmp_path, seed, alphabet, data):
    # a cut (a truncated last object, a cut inside a string, number or escape)
    # or one changed byte anywhere, pages given back all around it
    full = big_file(seed, 30, alphabet, False)
    cut = data.draw(st.integers(0, len(full)))
    release_same(tmp_path, full[:cut], threads=(1, 2))
    i = data.draw(st.integers(0, len(full) - 1))
    b = data.draw(st.sampled_from(b' ",:{}[]\\0a'))
    release_same(tmp_path, full[:i] + bytes([b]) + full[i + 1:], threads=(1, 2))


def test_file_of_one_page_or_less(tmp_path):
    small = b'[{"image_id": 1, "category_id": 2, "score": 0.5, "segmentation": {"size": [4, 4], "counts": "a\\\\/b\\""}}]'
    for data in (small, small + b" " * (PAGE - len(small)), small + b" " * (PAGE + 1 - len(small)), b""):
        release_same(tmp_path, data)


def test_release_step_larger_than_file(tmp_path):
    release_same(tmp_path, big_file(3, 40, RLE_ALPHABET, False), release=1 << 30)


def test_gather_counts_refuses_bad_ranges():
    buf = np.frombuffer(b"abcdefgh", np.uint8).copy()
    z = np.zeros(1, np.int64)
    with pytest.raises(ValueError):
        _scan_results.gather_counts(buf, np.array([0, 1], np.int64), np.array([1], np.int64), z)
    with pytest.raises(ValueError):
        _scan_results.gather_counts(buf, np.array([6], np.int64), np.array([3], np.int64), z - 1)
    with pytest.raises(ValueError):
        _scan_results.gather_counts(buf, np.array([5, 2], np.int64), np.array([2, 2], np.int64),
                                    np.array([-1, -1], np.int64))
    with pytest.raises(ValueError):
        _scan_results.gather_counts(buf, np.array([0], np.int64), np.array([2], np.int64),
                                    np.array([2], np.int64))
    start = np.array([1, 0, 5], np.int64)
    got = _scan_results.gather_counts(buf, start, np.array([3, 0, 2], np.int64),
                                      np.array([-1, -1, -1], np.int64))
    assert bytes(got[:5]) == b"bcdfg" and start.tolist() == [0, 3, 3]


def test_map_file_leaves_pipes_and_read_inputs_to_the_reader(tmp_path):
    assert map_file(InputBytes("x", b"[]")) is None
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    assert map_file(str(empty)) is None
    assert map_file(str(tmp_path / "missing.json")) is None
    assert map_file(str(tmp_path)) is None


@pytest.mark.parametrize("dt", [COCO_DT, "bbox"])
def test_load_result_columns_mapped_equals_read(dt, monkeypatch, tmp_path):
    from boundary_api.instance import _columns

    gt = COCO(COCO_GT)
    if dt == "bbox":   # boxes only: no counts to gather
        with open(COCO_DT) as f:
            res = json.load(f)
        dt = str(tmp_path / "bbox.json")
        with open(dt, "w") as f:
            json.dump([{k: r[k] for k in ("image_id", "category_id", "score")} | {"bbox": [1, 2, 3, 4]}
                       for r in res], f)
    mapped = load_result_columns(gt, dt, dt)
    assert mapped is not None
    monkeypatch.setattr(_columns, "map_file", lambda path: None)
    read = load_result_columns(gt, dt, dt)
    assert (mapped is None) == (read is None)
    if mapped is None:
        return
    for key in ("image_id", "category_id", "score", "bbox", "area", "seg_h", "seg_w",
                "counts_start", "counts_len", "int_kind", "key_order", "mask_area"):
        a, b = getattr(mapped, key), getattr(read, key)
        assert (a is None) == (b is None), key
        if a is not None:
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), key
    if read.has_segmentation:   # (boxes only: the read keeps the file, the mapped path no counts)
        assert bytes(mapped.buf) == bytes(read.buf)
    else:
        assert not mapped.counts_len.any() and len(mapped.buf) == 1


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2 ** 32), st.integers(1, 60), st.sampled_from(ALPHABETS), st.integers(2, 5))
def test_gather_on_threads_gives_every_row_its_string(tmp_path, seed, n, alphabet, k):
    # k runs of rows copied side by side (the split forced): each row's
    # string is the in-place scan's, the rows in order without overlap
    data = big_file(seed, n, alphabet, False)
    ref_buf = bytearray(data)
    ref = _scan_results.scan_results(ref_buf, 1)
    assert ref is not None
    ref_start = ref["counts_start"].copy()
    _scan_results.compact_counts(ref_buf, ref_start, ref["counts_len"])
    want = [bytes(ref_buf[s:s + ln]) for s, ln in zip(ref_start.tolist(), ref["counts_len"].tolist())]
    path = tmp_path / "res.json"
    path.write_bytes(data)
    buf, region = map_file(str(path))
    got = _scan_results.scan_results(buf, 1, _release=PAGE)
    counts = _scan_results.gather_counts(buf, got["counts_start"], got["counts_len"], got["counts_esc"],
                                         PAGE, k, 1)
    assert bytes(buf) == data
    del buf
    region.close()
    start, length = got["counts_start"], got["counts_len"]
    assert length.tobytes() == ref["counts_len"].tobytes()
    assert [bytes(counts[s:s + ln]) for s, ln in zip(start.tolist(), length.tolist())] == want
    ends = start + length
    assert (start[1:] >= ends[:-1]).all() and ends[-1] <= len(counts)
