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
        results.append(TestResult(nodeid=key, keys=[key], measurements=[m],
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


def model_report(path, models, seed=0, scale=1.0):
    """A report whose tests ran these models (zoo names or ONNX paths relative to the root)."""
    results = []
    for i, model in enumerate(models):
        m = measurement(scale, seed=seed + i)
        m.model = model
        key = f"tests/perf/test_x.py::test_{i}"
        results.append(TestResult(nodeid=key, keys=[key], measurements=[m],
                                  fingerprint=baseline.fingerprint(m, FP)))
    jsonreport.write(path, jsonreport.build(results, Settings(), Device()))
    return path


@pytest.mark.parametrize("spelling", ["models/tinynet.onnx", "./models/tinynet.onnx", "tinynet"])
def test_compare_takes_a_model_by_zoo_name_or_onnx_path(tmp_path, capsys, monkeypatch, spelling):
    monkeypatch.chdir(tmp_path)
    old = model_report(tmp_path / "old.json", ["models/tinynet.onnx", "resnet50"])
    new = model_report(tmp_path / "new.json", ["models/tinynet.onnx", "resnet50"], seed=5, scale=1.3)
    assert compare_main([str(old), str(new), "--model", spelling, "--metric", "throughput"]) == 1
    out = capsys.readouterr().out
    assert "tests/perf/test_x.py::test_0" in out and "test_1" not in out
    assert compare_main([str(old), str(new), "--model", "resnet50", "--metric", "throughput"]) == 1
    assert "test_0" not in capsys.readouterr().out
    assert compare_main([str(old), str(new), "--model", "vgg16"]) == 2
    assert "--model vgg16: no measurement of it in" in capsys.readouterr().err


def test_show_takes_a_model_by_zoo_name_or_onnx_path(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "150")
    store = baseline.BaselineStore(tmp_path / "baselines", "orin-nano-8gb")
    for i, model in enumerate(["models/tinynet.onnx", "resnet50"]):
        m = measurement(seed=i)
        m.model = model
        key = f"tests/perf/test_x.py::test_{i}"
        store.update(key, {key: baseline.make_entry(m, baseline.fingerprint(m, FP))})
    assert show_main([str(tmp_path / "baselines"), "--model", str(tmp_path / "models" / "tinynet.onnx")]) == 0
    out = capsys.readouterr().out
    assert "test_0" in out and "test_1" not in out and out.splitlines()[-1] == "1 entry in 1 file"
    assert show_main([str(tmp_path / "baselines"), "--model", "yolov8n"]) == 2
    assert "models there: models/tinynet.onnx, resnet50" in capsys.readouterr().err


def test_show_orders_entries_naturally(tmp_path, capsys):
    store = baseline.BaselineStore(tmp_path / "baselines", "orin-nano-8gb")
    m = measurement()
    for b in (16, 2, 1, 8):
        key = f"tests/perf/test_x.py::test_one[b{b}]"
        store.update(key, {key: baseline.make_entry(m, baseline.fingerprint(m, FP))})
    assert show_main([str(tmp_path / "baselines")]) == 0
    entries = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line.startswith("  test_one")]
    assert entries == ["test_one[b1]", "test_one[b2]", "test_one[b8]", "test_one[b16]"]


def test_a_report_path_that_is_a_directory_is_an_error_naming_it(tmp_path, capsys):
    good = report(tmp_path / "good.json", {"test_a": 1.0})
    assert compare_main([str(tmp_path), str(good)]) == 2
    assert f"report {tmp_path} is a directory; pass the JSON file" in capsys.readouterr().err
