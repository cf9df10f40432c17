"""`pytest-jetson compare OLD.json NEW.json` and `pytest-jetson show baselines/`."""

import json

import numpy as np
import pytest

from pytest_jetson.cli.compare import main as compare_main
from pytest_jetson.cli.show import main as show_main
from pytest_jetson.gate import baseline
from pytest_jetson.gate.session import TestResult
from pytest_jetson.report import jsonreport
from pytest_jetson.run.measurement import Measurement
from pytest_jetson.settings import Settings

FP = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": True}


class Device:
    def fingerprint(self):
        return dict(FP)


def measurement(scale=1.0, seed=0, n=1500):
    rng = np.random.default_rng(seed)
    lat = list(0.01 * scale * rng.lognormal(0, 0.05, n))
    return Measurement(name="m", batch=8, latencies=lat, duration=float(sum(lat)), items=8 * n,
                       precision="int8")


def report(path, scales, seed=0, fp=FP):
    results = []
    for i, (name, scale) in enumerate(scales.items()):
        m = measurement(scale, seed=seed + i)
        key = f"tests/perf/test_x.py::{name}"
        results.append(TestResult(nodeid=key, keys=[key], measurements=[dict(m.to_dict(), key=key)],
                                  fingerprint=baseline.fingerprint(m, fp),
                                  bounds=[{"metric": "throughput", "kind": "relative", "tolerance": 0.1}]))
    jsonreport.write(path, jsonreport.build(results, Settings(), Device()))
    return path


def test_compare_same_code_exits_zero(tmp_path, capsys):
    old = report(tmp_path / "old.json", {"test_a": 1.0, "test_b": 1.0})
    new = report(tmp_path / "new.json", {"test_a": 1.0, "test_b": 1.0}, seed=10)
    assert compare_main([str(old), str(new)]) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and "tests/perf/test_x.py::test_a" not in out  # nothing to look at
    assert out.splitlines()[-1] == "tests: 2 compared, 0 with a regression · metrics: 8 pass · -v lists every metric"
    assert compare_main([str(old), str(new), "-v"]) == 0
    lines = capsys.readouterr().out.splitlines()
    i = lines.index("tests/perf/test_x.py::test_a")  # the test once, its metrics under it
    assert {line.split()[0] for line in lines[i + 1:i + 5]} == {"throughput", "latency_mean", "latency_p50",
                                                               "latency_p99"}


def test_compare_regression_exits_one_using_the_tests_tolerance(tmp_path, capsys):
    old = report(tmp_path / "old.json", {"test_a": 1.0, "test_b": 1.0})
    new = report(tmp_path / "new.json", {"test_a": 1.08, "test_b": 1.2}, seed=10)
    assert compare_main([str(old), str(new), "--metric", "throughput"]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    fail = [line for line in lines if "FAIL" in line]
    assert len(fail) == 1 and lines[lines.index(fail[0]) - 1] == "tests/perf/test_x.py::test_b"
    assert "test_a" not in out  # 8% is inside the test's 10% tolerance
    assert "tolerance 10%" in out


def test_compare_reports_environment_mismatch(tmp_path, capsys):
    old = report(tmp_path / "old.json", {"test_a": 1.0})
    new = report(tmp_path / "new.json", {"test_a": 1.5}, fp=dict(FP, power_mode="7W"))
    assert compare_main([str(old), str(new)]) == 0
    assert "power_mode: 15W (baseline) vs 7W (now)" in capsys.readouterr().out
    assert compare_main([str(old), str(new), "--allow-env-mismatch"]) == 1


@pytest.mark.parametrize("content", ["not json", '{"kind": "other"}'])
def test_compare_bad_input_exits_two_naming_the_file(tmp_path, capsys, content):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    good = report(tmp_path / "good.json", {"test_a": 1.0})
    assert compare_main([str(bad), str(good)]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "--jetson-report-json" in err


def test_show_lists_entries_and_flags_bad_files(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "150")
    store = baseline.BaselineStore(tmp_path / "baselines", "orin-nano-8gb")
    m = measurement()
    store.update("tests/perf/test_x.py::test_a",
                 {"tests/perf/test_x.py::test_a": baseline.make_entry(m, baseline.fingerprint(m, FP))})
    assert show_main([str(tmp_path / "baselines")]) == 0
    lines = capsys.readouterr().out.splitlines()
    i = lines.index("orin-nano-8gb/tests/perf/test_x.py.json")  # the file once, its entries under it
    assert lines[i + 1].split()[0] == "test_a" and "15W, int8, batch 8, simulated" in lines[i + 1]
    assert lines[-1] == "1 entry in 1 file"
    (tmp_path / "baselines" / "orin-nano-8gb" / "broken.json").write_text("{")
    assert show_main([str(tmp_path / "baselines")]) == 1
    assert "broken.json is not valid JSON" in capsys.readouterr().err
    assert show_main([str(tmp_path / "nowhere")]) == 2


def test_report_json_is_valid_strict_json(tmp_path):
    path = report(tmp_path / "r.json", {"test_a": 1.0})
    doc = json.loads(path.read_text(), parse_constant=lambda c: pytest.fail(c))
    assert doc["tests"][0]["measurements"][0]["key"] == "tests/perf/test_x.py::test_a"
