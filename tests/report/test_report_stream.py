"""Reading a report a test at a time (``jsonreport.stream``, what ``compare`` and ``history`` use):
the same header and results as reading it whole, in any layout JSON allows, and the same clear
errors for a damaged file."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.errors import BaselineError
from pytest_jetson.report import jsonreport, report_text
from pytest_jetson.run.measurement import Measurement


def _test(i):
    m = Measurement(name=f"m{i}", backend="simulated", model="resnet18", precision="fp16", batch=1,
                    latencies=[0.01 + 0.0001 * (k % 7) for k in range(50)], duration=0.5, items=50)
    return {"nodeid": f"t.py::test_{i}", "outcome": "none", "measurements": [dict(m.to_dict(), key=f"t.py::test_{i}")],
            "keys": [f"t.py::test_{i}"], "fingerprint": {"device": "orin-nano-8gb"}, "bounds": [], "verdicts": [],
            "baseline_file": None, "staged": {}, "notes": [], "error": None, "where": []}


def _doc(n, extra=None):
    doc = {"kind": jsonreport.KIND, "schema": jsonreport.SCHEMA, "created": "2026-11-01T10:00:00Z",
           "device": {"device": "orin-nano-8gb"}, "tests": [_test(i) for i in range(n)]}
    doc.update(extra or {})
    return doc


def _same(path):
    head, tests = jsonreport.stream(path)
    streamed = [r.to_json() for r in tests]
    doc = jsonreport.load(path)
    whole = [r.to_json() for r in jsonreport.results(doc, path)]
    del doc["tests"]
    return head == doc and streamed == whole


@settings(max_examples=25, deadline=None)
@given(n=st.integers(0, 4), indent=st.sampled_from([None, 1, 2]), sort=st.booleans(), tests_first=st.booleans(),
       trailing=st.booleans())
def test_streamed_reports_read_as_whole_ones(tmp_path_factory, n, indent, sort, tests_first, trailing):
    doc = _doc(n, {"zz_after": {"a": [1, 2]}} if trailing else None)
    if tests_first:
        doc = {"tests": doc.pop("tests"), **doc}
    path = tmp_path_factory.mktemp("r") / "r.json"
    path.write_text(json.dumps(doc, indent=indent, sort_keys=sort))
    assert _same(path)


def test_the_plugins_own_report_is_streamed_a_test_at_a_time(tmp_path):
    path = jsonreport.write(tmp_path / "r.json", _doc(3))
    walk = report_text.Walk(iter([path.read_text()]))
    walk.members(first=True)
    assert walk.at_tests and "tests" not in walk.head and walk.head["kind"] == jsonreport.KIND
    assert [t["nodeid"] for t in walk.tests()] == ["t.py::test_0", "t.py::test_1", "t.py::test_2"]
    assert _same(path)


@pytest.mark.parametrize("damage, words", [
    (lambda text: text[: len(text) * 2 // 3], "is not valid JSON"),
    (lambda text: text.replace('"kind"', '"schema":1,"kind"', 1), "appears twice"),
    (lambda text: text.replace('"nodeid":"t.py::test_1"', '"nodeid":"t.py::test_1","nodeid":"x"'), "appears twice"),
    (lambda text: text.replace('"duration":0.5', '"duration":1e999', 1), "too large for a number"),
    (lambda text: text.rstrip() + "{}", "is not valid JSON"),
    (lambda text: text.replace('"tests":[', '"tests":[' + "[" * 100000, 1), "nested too deeply"),
])
def test_a_damaged_report_is_the_same_clear_error_streamed(tmp_path, damage, words):
    path = jsonreport.write(tmp_path / "r.json", _doc(3))
    path.write_text(damage(path.read_text()))
    with pytest.raises(BaselineError, match=words) as whole:
        list(jsonreport.results(jsonreport.load(path), path))
    with pytest.raises(BaselineError, match=words) as streamed:
        list(jsonreport.stream(path)[1])
    assert str(path) in str(streamed.value) and "Traceback" not in str(streamed.value)
    assert str(whole.value).split(";")[0].split("(")[0] == str(streamed.value).split(";")[0].split("(")[0]
