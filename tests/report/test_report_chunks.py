"""A report read a piece of its text at a time (``report_text``): what ``compare`` and ``history``
read is what reading it whole reads, wherever the pieces split it (a test, a number, a character
of several bytes, a gzip stream); a damaged report is the same error as when read whole; a walk
holds a piece of the text, not all of it; and a report changed between two walks is an error
naming it."""

import contextlib
import gzip
import json
import os
import tracemalloc
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_jetson.errors import BaselineError
from pytest_jetson.report import jsonreport, report_text
from pytest_jetson.run.measurement import Measurement


def _test(i, name="test"):
    m = Measurement(name=f"m{i}", backend="simulated", model="resnet18", precision="fp16", batch=1,
                    latencies=[0.01 + 0.0001 * (k % 7) for k in range(50)], duration=0.5 + i * 1e-3, items=50)
    nodeid = f"t.py::{name}_{i}"
    return {"nodeid": nodeid, "outcome": "none", "measurements": [dict(m.to_dict(), key=nodeid)],
            "keys": [nodeid], "fingerprint": {"device": "orin-nano-8gb"}, "bounds": [], "verdicts": [],
            "baseline_file": None, "staged": {}, "notes": [f"run {i}: ünï ✓ 𝛑"], "error": None, "where": []}


def _doc(n, name="test"):
    return {"kind": jsonreport.KIND, "schema": jsonreport.SCHEMA, "created": "2026-11-01T10:00:00Z",
            "device": {"device": "orin-nano-8gb"}, "tests": [_test(i, name) for i in range(n)],
            "zz_after": [1.5e-7, -12, 123456789]}


@contextlib.contextmanager
def _pieces_of(size):
    """Reads of ``size`` bytes, and gzip inflated ``size`` bytes at a time."""
    with contextlib.ExitStack() as stack:
        for name in ("CHUNK", "_GZIP_FEED", "_GZIP_PIECE"):
            stack.enter_context(mock.patch.object(report_text, name, size))
        yield


def _read(path):
    """The header and tests as ``stream`` reads them, or the error it gives."""
    try:
        head, tests = jsonreport.stream(path)
        return head, [r.to_json() for r in tests]
    except BaselineError as exc:
        return str(exc)


def _whole(path):
    """As ``_read``, with the text in one piece (as it was read before it came in pieces)."""
    with _pieces_of(1 << 30):
        return _read(path)


def test_a_report_of_several_chunks_reads_as_it_does_whole(tmp_path):
    path = jsonreport.write(tmp_path / "r.json", _doc(2500))
    text = path.read_bytes()
    assert len(text) > 8 * report_text.CHUNK
    # tests run across the boundaries of the chunks read
    starts = [text.index(f'"nodeid":"t.py::test_{i}"'.encode()) for i in range(2500)]
    ends = starts[1:] + [len(text)]
    assert any(s < k * report_text.CHUNK < e for k in range(1, 9) for s, e in zip(starts, ends))
    head, tests = jsonreport.stream(path)
    doc = jsonreport.load(path)
    assert [r.to_json() for r in tests] == [r.to_json() for r in jsonreport.results(doc, path)]
    del doc["tests"]
    assert head == doc


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunk=st.integers(1, 700), n=st.integers(0, 5), indent=st.sampled_from([None, 0, 2]),
       gz=st.booleans())
def test_any_chunk_size_reads_the_same_report(tmp_path, chunk, n, indent, gz):
    path = tmp_path / ("r.json.gz" if gz else "r.json")
    text = json.dumps(_doc(n), indent=indent, ensure_ascii=False)
    path.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    with _pieces_of(chunk):
        got = _read(path)
    assert got == _whole(path)
    assert not isinstance(got, str) and len(got[1]) == n


def _damages():
    """(name, change of the text) that damage a report somewhere, early or late."""
    return st.one_of(
        st.tuples(st.just("cut"), st.floats(0, 1)),
        st.tuples(st.just("byte"), st.floats(0, 1), st.sampled_from([b"x", b"{", b"]", b",", b"\"", b"\\", b"\xff",
                                                                     b"\n", b"9" * 30, b"1e999", b"NaN", b"\xf0\x9d"])),
    )


def _damaged(data, damage):
    at = int(damage[1] * len(data))
    if damage[0] == "cut":
        return data[:at]
    return data[:at] + damage[2] + data[at + 1:]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(chunk=st.integers(1, 300), damage=_damages(), indent=st.sampled_from([None, 1]), gz=st.booleans())
def test_a_damaged_report_is_the_same_error_in_pieces_as_whole(tmp_path, chunk, damage, indent, gz):
    path = tmp_path / "r.json"
    data = _damaged(json.dumps(_doc(3), indent=indent, ensure_ascii=False).encode(), damage)
    if gz:
        data = _damaged(gzip.compress(json.dumps(_doc(3), indent=indent).encode(), mtime=0), damage)
    path.write_bytes(data)
    with _pieces_of(chunk):
        got = _read(path)
    assert got == _whole(path)
    if isinstance(got, str):
        assert str(path) in got and "changed while" not in got


def test_an_error_reading_it_whole_raises_first_is_raised_first_in_pieces(tmp_path):
    path = tmp_path / "r.json"
    path.write_bytes(b"{nope" + json.dumps(_doc(40)).encode() + b"\xff")  # invalid JSON early, bad UTF-8 late
    with mock.patch.object(report_text, "CHUNK", 64):
        with pytest.raises(BaselineError, match=r"is not JSON \(binary content\)"):
            jsonreport.stream(path)
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b"{" + b" " * 5000 + b"\xff", mtime=0))
    with mock.patch.object(report_text, "MAX_REPORT_BYTES", 4096), _pieces_of(100):
        with pytest.raises(BaselineError, match="inflates to more than 4096 bytes"):
            jsonreport.stream(bomb)


def test_walking_a_report_holds_a_piece_of_its_text_not_all_of_it(tmp_path):
    path = jsonreport.write(tmp_path / "r.json", _doc(3000))
    size = path.stat().st_size
    assert size > 16 * report_text.CHUNK
    list(jsonreport.stream(jsonreport.write(tmp_path / "small.json", _doc(2)))[1])  # what a process reads once
    tracemalloc.start()
    try:
        head, tests = jsonreport.stream(path)
        n = sum(1 for _ in tests)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 3000
    # a few chunks of bytes and text and a test; reading it whole held all of it, twice while decoding
    assert peak < 6 * report_text.CHUNK, (peak, size)


def test_a_gzipped_report_is_walked_a_piece_at_a_time_too(tmp_path):
    path = tmp_path / "r.json.gz"
    jsonreport.write(path, _doc(3500))
    text_size = len(gzip.decompress(path.read_bytes()))
    assert text_size > 16 * report_text.CHUNK
    list(jsonreport.stream(jsonreport.write(tmp_path / "small.json.gz", _doc(2)))[1])  # what a process reads once
    tracemalloc.start()
    try:
        n = sum(1 for _ in jsonreport.stream(path)[1])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 3500 and peak < 6 * report_text.CHUNK, (peak, text_size)


def _rewrite_same_size(path):
    """Another report of the same size and times in the same file: only its bytes tell."""
    st_before = path.stat()
    text = path.read_text()
    other = text.replace("test_1", "test_7")
    assert other != text and len(other) == len(text)
    path.write_text(other)
    os.utime(path, ns=(st_before.st_atime_ns, st_before.st_mtime_ns))


def _replace(path):
    new = path.with_name("other.json")
    jsonreport.write(new, _doc(4, name="other"))
    os.replace(new, path)


@pytest.mark.parametrize("change", [
    _rewrite_same_size,
    _replace,
    lambda path: path.write_text(path.read_text()[:-100]),
    lambda path: path.write_text(path.read_text() + " "),
    lambda path: path.unlink(),
    lambda path: path.write_bytes(gzip.compress(path.read_bytes())),
])
def test_a_report_changed_between_two_walks_is_an_error_naming_it(tmp_path, change):
    path = jsonreport.write(tmp_path / "r.json", _doc(4))
    head, tests = jsonreport.passes(path)
    assert [r.nodeid for r in tests()] == [f"t.py::test_{i}" for i in range(4)]
    change(path)
    with pytest.raises(BaselineError) as exc:
        list(tests())
    assert str(exc.value) == (f"report {path} changed while it was being read (it is read more than once, a "
                              f"test at a time); run the command again once nothing writes to it")


def test_a_report_changed_while_it_is_walked_is_an_error_naming_it(tmp_path):
    path = jsonreport.write(tmp_path / "r.json", _doc(40))
    with mock.patch.object(report_text, "CHUNK", 512):
        head, tests = jsonreport.passes(path)
        walk = tests()
        next(walk)
        path.write_text(path.read_text()[: path.stat().st_size // 2])  # cut short under the walk
        with pytest.raises(BaselineError, match=f"report {path} changed while it was being read"):
            list(walk)


def test_walks_of_an_unchanged_report_read_the_same_tests(tmp_path):
    path = jsonreport.write(tmp_path / "r.json", _doc(30))
    with mock.patch.object(report_text, "CHUNK", 97):
        head, tests = jsonreport.passes(path)
        first = [r.to_json() for r in tests()]
        assert [r.to_json() for r in tests()] == first and len(first) == 30
