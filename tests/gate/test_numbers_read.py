"""Every number read from a baseline file or a report is bounded and finite, and a key given twice is
refused: one damaged figure fails the tests that use it, with a message naming the file and the
field, and never crashes the session, its other results or its reports."""

import json
import math
import os
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_jetson.errors import BaselineError
from pytest_jetson.gate.safe_read import MAX_INT_DIGITS, JSONProblem, loads
from pytest_jetson.report import jsonreport

SUITE = """
import pytest

@pytest.mark.perf(throughput="5%")
def test_one(trt_engine, perf):
    perf.measure(trt_engine("mobilenet_v2"), duration="0.2s")

@pytest.mark.perf(throughput="5%")
def test_two(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
"""

DAMAGE = {
    "a 400-digit integer": ('"value": ', '"value": 1' + "0" * 400 + ', "was": '),
    "se_log 1e308": ('"se_log": ', '"se_log": 1e308, "was": '),
    "a value beyond any figure": ('"value": ', '"value": -1e300, "was": '),
    "a float beyond a double": ('"value": ', '"value": 1e999, "was": '),
    "a key twice": ('"value": ', '"value": 1, "value": '),
}


def _damage(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.fixture
def recorded(project_of):
    tester = project_of(SUITE)
    result = tester.runpytest("--jetson-device", "orin-nano", "--jetson-update-baselines")
    result.assert_outcomes(passed=2)
    (path,) = (tester.path / "baselines").rglob("*.json")
    return tester, path


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("update", ["", "--jetson-update-baselines=force"])
def test_a_damaged_number_fails_the_tests_that_read_it_and_keeps_the_session(recorded, damage, update):
    tester, path = recorded
    _damage(path, *DAMAGE[damage])
    before = path.read_bytes()
    report = tester.path / "report.json"
    args = ["--jetson-device", "orin-nano", f"--jetson-report-json={report}"] + ([update] if update else [])
    result = tester.runpytest(*args)
    out = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in out and "Traceback" not in out
    assert str(path.name) in out
    assert "pytest-jetson perf gate" in out  # the session's own summary survives
    assert json.loads(report.read_text())["tests"]  # and its report
    assert path.read_bytes() == before  # a file it cannot read is never rewritten


@pytest.mark.parametrize("command", ["show", "diff"])
def test_show_and_diff_name_the_damaged_field(recorded, command):
    tester, path = recorded
    subprocess.run(["git", "init", "-q"], cwd=tester.path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tester.path, check=True)
    subprocess.run(["git", "-c", "user.email=a@b", "-c", "user.name=a", "commit", "-qm", "x"],
                   cwd=tester.path, check=True)
    _damage(path, *DAMAGE["se_log 1e308"])
    args = [sys.executable, "-m", "pytest_jetson.cli", command] + ([str(path)] if command == "show" else [])
    proc = subprocess.run(args, cwd=tester.path, capture_output=True, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert "'se_log' must be a number from 0 to 10" in proc.stdout + proc.stderr


@pytest.mark.parametrize("text, why", [
    ('{"a": 1, "a": 2}', "appears twice"),
    ('{"a": 1' + "0" * (MAX_INT_DIGITS + 1) + "}", "digit integer"),
    ('{"a": 1e400}', "too large"),
    ('{"a": NaN}', "not a number JSON allows"),
    ('{"a": -Infinity}', "not a number JSON allows"),
    ('{"a": ', "not valid JSON"),
])
def test_strict_loads_says_what_is_wrong(text, why):
    with pytest.raises(JSONProblem, match=why):
        loads(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.text(max_size=5)
    | st.integers(min_value=-(10 ** MAX_INT_DIGITS - 1), max_value=10 ** MAX_INT_DIGITS - 1)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4),
    max_leaves=20)


@given(json_values)
def test_strict_loads_reads_everything_the_plugin_writes(value):
    assert loads(json.dumps(value, allow_nan=False)) == value


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_every_float_read_is_finite(x):
    assert math.isfinite(loads(json.dumps({"x": x}))["x"])


def test_a_report_that_is_a_fifo_is_refused_unread(tmp_path):
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    with pytest.raises(BaselineError, match=r"report .* is a named pipe \(FIFO\)"):
        jsonreport.load(fifo)


def test_a_report_linked_to_a_device_is_refused_unread(tmp_path):
    link = tmp_path / "report.json"
    link.symlink_to("/dev/zero")
    with pytest.raises(BaselineError, match="report .* is a character device"):
        jsonreport.load(link)


def test_a_report_with_a_key_twice_is_refused(tmp_path):
    path = tmp_path / "report.json"
    path.write_text('{"kind": "pytest-jetson-report", "kind": "x", "schema": 1, "tests": []}')
    with pytest.raises(BaselineError, match="'kind' appears twice"):
        jsonreport.load(path)
