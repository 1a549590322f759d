"""boundary_api.instance._scan_results: the split (multi-thread) results scan against one thread.

``scan_results(buf, num_threads=k)`` may cut a file at candidate object starts
and scan the chunks side by side.  Whatever the input, the outcome must be the
one-thread scan's: the same columns bit for bit, the same buffer afterwards
(unescaped counts in the same places), and ``None`` exactly when the
one-thread scan gives ``None``, with the buffer untouched.  The files here are
small, so the split is forced with ``_min_parallel_bytes=1``; ``_trace`` tells
which way each scan went, so that the tests also prove that the split itself
(not only its fallback) runs.
"""
import json
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from boundary_api.instance import _scan_results
from boundary_api.instance._columns import load_result_columns
from conftest import COCO_DT, COCO_GT, LVIS_DT, guarded_views
from test_scan import REFUSED, RLE_ALPHABET, SMALL, assert_columns, dump_raw, result_list

THREADS = (2, 3, 5)
# counts alphabets: pycocotools' characters; escape-heavy; characters that
# build false object starts ("},{" and friends) inside strings
TRICKY = '},{ "\\/'
ALPHABETS = [RLE_ALPHABET, "\\\"/0aO", TRICKY + "ab", '},{"image_id":1,"score":2']
FALSE_STARTS = ["},{", "} , {", "a", "\\", "/", '},{"image_id":1,"category_id":2,"score":3}']


def scan_same(data, threads=THREADS, min_bytes=1):
    """Scan ``data`` on one thread and split on each of ``threads``; assert
    that all agree (columns, buffer, None with the buffer untouched).

    Returns the one-thread columns (or None), its buffer afterwards and the
    traces of the split scans.
    """
    data = bytes(data)
    ref_buf = bytearray(data)
    ref = _scan_results.scan_results(ref_buf, 1)
    if ref is None:
        assert ref_buf == data
    traces = []
    for k in threads:
        buf = bytearray(data)
        trace = []
        got = _scan_results.scan_results(buf, k, _min_parallel_bytes=min_bytes, _trace=trace)
        traces.append(trace)
        if ref is None:
            assert got is None, (k, trace)
            assert buf == data, (k, trace)
            continue
        assert got is not None, (k, trace)
        assert buf == ref_buf, (k, trace)
        assert sorted(got) == sorted(ref)
        for key, want in ref.items():
            assert got[key].dtype == want.dtype and got[key].shape == want.shape, key
            # bit for bit (floats through their integer view: -0.0, inf)
            assert got[key].tobytes() == want.tobytes(), (key, k, trace)
    return ref, ref_buf, traces


def kinds(traces):
    """The first step of every trace: 'split', 'refused', 'fallback' or 'single'."""
    return [t[0][0] for t in traces]


@st.composite
def results_file(draw):
    """A valid results file of up to 40 objects: random key order, whitespace,
    escapes (``\\/`` for ``/`` at random) and counts that may hold ``},{``."""
    results = []
    for _ in range(draw(st.integers(1, 5))):
        part = draw(result_list(raw=True))
        for obj in part:
            seg = obj.get("segmentation")
            if seg is not None:
                seg["counts"] = draw(st.one_of(
                    st.text(alphabet=draw(st.sampled_from(ALPHABETS)), max_size=60),
                    # false object starts, often: the candidate search lands in strings
                    st.lists(st.sampled_from(FALSE_STARTS), max_size=30).map("".join)))
        results.extend(part)
    rnd = draw(st.randoms(use_true_random=False))
    return dump_raw(results, rnd).encode()


# --------------------------------------------------------------------------- valid files

@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results_file())
def test_generated_files_split_equal_one_thread(data):
    ref, ref_buf, traces = scan_same(data)
    assert_columns(ref, data, ref_buf)   # and all of them equal json.loads' view
    assert set(kinds(traces)) <= {"split", "fallback", "single"}   # single: one object


def test_generated_files_mostly_split():
    # the split must really run (not always fall back) on ordinary files
    rnd = random.Random(1)
    seen = []
    for seed in range(30):
        objs = [{"image_id": rnd.randrange(100), "category_id": rnd.randrange(9),
                 "score": rnd.random(),
                 "segmentation": {"size": [5, 7],
                                  "counts": "".join(rnd.choice(RLE_ALPHABET + "\\/") for _ in range(40))}}
                for _ in range(rnd.randrange(5, 60))]
        data = json.dumps(objs, indent=rnd.choice([None, 1])).encode()
        _, _, traces = scan_same(data)
        seen += kinds(traces)
    assert set(seen) == {"split"}


def test_json_dumps_of_real_files_split_equal_one_thread():
    for path in (COCO_DT, LVIS_DT):
        with open(path, "rb") as f:
            data = f.read()
        ref, _, traces = scan_same(data, threads=(2, 3, 5, 16))
        assert ref is not None and set(kinds(traces)) == {"split"}
        # with the default threshold these small files are not split
        trace = []
        assert _scan_results.scan_results(bytearray(data), 4, _trace=trace) is not None
        assert trace == [("single", 1, -1)]


# --------------------------------------------------------------------------- false starts

def test_candidate_inside_a_string_falls_back():
    # one long counts string holds "},{" in the second half of the file: the
    # candidate found from the middle on is inside the string
    fake = "x" * 600 + '},{"image_id":1,"category_id":2,"score":3}' + "y" * 100
    objs = [{"image_id": 1, "category_id": 2, "score": 0.5,
             "segmentation": {"size": [1, 1], "counts": fake}},
            {"image_id": 3, "category_id": 4, "score": 0.25,
             "segmentation": {"size": [1, 1], "counts": "a\\/b"}}]
    data = json.dumps(objs).encode().replace(b"/", b"\\/")
    assert len(data) // 2 < data.index(b"},{") < data.index(b"}}, {")
    ref, _, traces = scan_same(data, threads=(2,))
    assert ref is not None and len(ref["score"]) == 2
    assert traces == [[("fallback", 2, 0), ("single", 1, -1)]]


def test_false_start_whose_chunk_parses_still_falls_back():
    # the string holds a complete valid tail of objects: the chunk starting
    # inside it parses (and even ends with "]"), yet chunk 0 does not arrive there
    tail = '},{"image_id":9,"category_id":9,"score":9}]'
    head = '[{"image_id":1,"category_id":2,"score":0.5,"segmentation":{"size":[1,1],"counts":"'
    body = "z" * 400 + tail.replace('"', "'") + "z" * 10
    data = (head + body + '"}},{"image_id":2,"category_id":3,"score":1}]').encode()
    ref, _, traces = scan_same(data, threads=(2,))
    assert ref is not None and len(ref["score"]) == 2


def test_array_ending_before_a_candidate_is_refused_like_one_thread():
    # after the closing bracket come more objects: a candidate lies there
    first = json.dumps([{"image_id": 1, "category_id": 2, "score": 0.5,
                         "segmentation": {"size": [1, 1], "counts": "q" * 200}}])
    data = (first[:-1] + "}]" + ',{"image_id":1,"category_id":2,"score":1}]' * 5).encode()
    ref, _, traces = scan_same(data, threads=(2, 3))
    assert ref is None


def test_refusal_in_a_later_chunk_is_final_and_leaves_the_buffer():
    objs = [{"image_id": i, "category_id": 1, "score": 0.5,
             "segmentation": {"size": [1, 1], "counts": "a\\b/c" * 20}} for i in range(40)]
    data = json.dumps(objs).encode().replace(b"/", b"\\/")
    bad = data[:-20] + data[-20:].replace(b"}}", b"}, \"area\": 1}", 1)
    ref, _, traces = scan_same(bad, threads=(2, 3, 5))
    assert ref is None
    for (k, trace) in zip((2, 3, 5), traces):
        assert trace == [("refused", k, k - 1)], trace


# --------------------------------------------------------------------------- bad files

def _many_small(n=12):
    return (SMALL.rstrip()[:-1] + b"".join(b"," + SMALL.strip()[1:-1] for _ in range(n)) + b"]\n")


def test_every_truncation_splits_like_one_thread():
    data = _many_small(2)
    for cut in range(len(data) + 1):
        scan_same(data[:cut])


def test_every_single_byte_mutation_splits_like_one_thread():
    data = _many_small(1)
    for i in range(len(data)):
        for b in b' ",:{}\\':
            if data[i] != b:
                scan_same(data[:i] + bytes([b]) + data[i + 1:], threads=(2,))


@pytest.mark.slow
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(results_file(), st.data())
def test_random_mutations_split_like_one_thread(data, draw):
    raw = bytearray(data)
    for _ in range(draw.draw(st.integers(1, 4))):
        op = draw.draw(st.sampled_from(["set", "insert", "delete", "truncate", "fool"]))
        i = draw.draw(st.integers(0, len(raw) - 1))
        if op == "set":
            raw[i] = draw.draw(st.sampled_from(b'\x00 ",:[]{}\\/0a\x80'))
        elif op == "insert":
            raw[i:i] = draw.draw(st.sampled_from([b"},{", b"} , {", b'"', b"\\", b"]", b",", b"{"]))
        elif op == "delete" and len(raw) > 1:
            del raw[i]
        elif op == "truncate":
            del raw[i:]
        elif op == "fool":
            raw[i:i] = b'},{"image_id":1,"category_id":2,"score":3}'
        if not raw:
            break
    scan_same(bytes(raw))


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_inputs_stay_refused_split(name):
    data = REFUSED[name].encode("utf-8")
    ref, _, _ = scan_same(data)
    assert ref is None
    if data.startswith(b"["):
        # the same refusal after good objects: it falls in a later chunk
        good = b'{"image_id": 1, "category_id": 2, "score": 0.5}, '
        ref, _, _ = scan_same(b"[" + good * 30 + data[1:])
        assert ref is None


# --------------------------------------------------------------------------- arguments

@pytest.mark.parametrize("bad", [0, -1])
def test_num_threads_below_one_is_a_value_error(bad):
    with pytest.raises(ValueError, match="num_threads"):
        _scan_results.scan_results(bytearray(SMALL), bad)


@pytest.mark.parametrize("bad", [True, 1.5, "2", None])
def test_num_threads_not_an_integer_is_a_type_error(bad):
    with pytest.raises(TypeError, match="num_threads"):
        _scan_results.scan_results(bytearray(SMALL), bad)


def test_numpy_integer_thread_count_is_accepted():
    trace = []
    cols = _scan_results.scan_results(bytearray(_many_small()), np.int64(2), _min_parallel_bytes=1, _trace=trace)
    assert cols is not None and trace == [("split", 2, -1)]


# --------------------------------------------------------------------------- end to end

def test_load_result_columns_same_for_every_thread_count(monkeypatch):
    from boundary_api import COCO

    gt = COCO(COCO_GT)
    one = load_result_columns(gt, COCO_DT, COCO_DT, num_threads=1)
    monkeypatch.setattr(_scan_results, "MIN_PARALLEL_BYTES", 1)
    # the real scanner, recording which way it went
    traces, scan = [], _scan_results.scan_results
    monkeypatch.setattr(_scan_results, "scan_results", lambda buf, k, **kw: scan(buf, k, _trace=traces, **kw))
    for k in (2, 3):
        got = load_result_columns(gt, COCO_DT, COCO_DT, num_threads=k)
        assert traces.pop() == ("split", k, -1)
        assert got.n == one.n and got.kind == one.kind
        for key in ("image_id", "category_id", "score", "bbox", "area", "seg_h", "seg_w",
                    "counts_start", "counts_len", "int_kind", "key_order", "mask_area"):
            a, b = getattr(one, key), getattr(got, key)
            assert (a is None) == (b is None), key
            if a is not None:
                assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), key
        assert bytes(got.buf) == bytes(one.buf)


def test_absurd_thread_count_is_capped():
    data = _many_small(300)
    trace = []
    cols = _scan_results.scan_results(bytearray(data), 10 ** 9, _min_parallel_bytes=1, _trace=trace)
    assert trace == [("split", _scan_results.MAX_CHUNKS, -1)]
    ref, ref_buf, _ = scan_same(data, threads=())
    assert all(cols[key].tobytes() == ref[key].tobytes() for key in ref)


def test_split_scan_stays_inside_the_buffer():
    # every truncation, placed right before / right after a PROT_NONE page: a
    # read outside the buffer (candidate search, chunk scan) would fault
    full = _many_small(1)
    for cut in range(1, len(full) + 1):
        data = full[:cut]
        want, want_buf, _ = scan_same(data, threads=())
        for view in guarded_views(data):
            for k in (2, 3):
                view[:] = data
                got = _scan_results.scan_results(view, k, _min_parallel_bytes=1)
                assert (got is None) == (want is None)
                assert bytes(view) == bytes(want_buf)
                if got is not None:
                    assert all(got[key].tobytes() == want[key].tobytes() for key in want)
