"""One suite on the simulated board and the host, as a user runs it: a change of what runs is gated
against its baseline and named; what the host cannot measure, and bounds limited to other
backends, are skipped with the reason, said once."""

import json

import pytest

from pytest_jetson.gate.family import confidence_for

PRECISION_SUITE = '''
import os
import pytest

@pytest.mark.perf(throughput="5%", latency_mean="5%")
def test_detector(trt_engine, perf):
    perf.measure(trt_engine("resnet18", precision=os.environ["PRECISION"]), duration="0.5s", warmup=0)
'''

POWER_SUITE = '''
import pytest

@pytest.mark.perf(power="<= 30 W", throughput=">= 1/s")
def test_one(trt_engine, perf):
    perf.measure(trt_engine("squeezenet1_1", precision="fp32"), duration="0.3s", warmup="0.05s")

@pytest.mark.perf(power="<= 30 W", energy="<= 10 J")
def test_two(trt_engine, perf):
    perf.measure(trt_engine("squeezenet1_1", precision="fp32"), duration="0.3s", warmup="0.05s")
'''

LIMITED_SUITE = '''
import pytest

@pytest.mark.perf(throughput=">= 1000000/s", latency_mean="1%", latency_p99="1%", backends=["simulated"])
@pytest.mark.perf(latency_p50="<= 10 s", throughput="90%")
def test_limited(trt_engine, perf):
    perf.measure(trt_engine("squeezenet1_1", precision="fp32"), duration="0.3s", warmup="0.05s")
'''

@pytest.fixture
def suite(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    return pytester


def run(pytester, *args):
    return pytester.runpytest("-p", "no:cacheprovider", "-W", "ignore::pytest.PytestAssertRewriteWarning",
                              "--jetson-device", "orin-nano", *args)


def words(result):
    """The run's output with its line wrapping undone."""
    return " ".join(result.stdout.str().split())


def test_fp16_turned_fp32_fails_with_the_default_flags_naming_the_change(suite, monkeypatch):
    suite.makepyfile(test_suite=PRECISION_SUITE)
    monkeypatch.setenv("PRECISION", "fp16")
    run(suite, "--jetson-update-baselines").assert_outcomes(passed=1)
    path = suite.path / "baselines/orin-nano-8gb/test_suite.py.json"
    stored = path.read_text()

    monkeypatch.setenv("PRECISION", "fp32")
    r = run(suite, "--jetson-report-json", "r.json", "--jetson-report-md", "r.md")
    r.assert_outcomes(failed=1)
    r.stdout.fnmatch_lines([
        "*perf bound failed: precision fp16 -> fp32: throughput * is *% worse than the baseline *"
        "(a regression past the tolerance 5%*",
        "*what runs changed since the baseline (precision fp16 -> fp32)*",
    ])
    out = r.stdout.str()
    assert "re-record" not in out and "another environment" not in out
    assert path.read_text() == stored  # storing the new workload takes --jetson-update-baselines
    verdicts = json.loads((suite.path / "r.json").read_text())["tests"][0]["verdicts"]
    assert {v["reason"] for v in verdicts} == {"regression"}
    assert all(v["workload_diffs"] == [["precision", "fp16", "fp32"]] and not v["env_diffs"] for v in verdicts)
    assert all(v["message"].startswith("precision fp16 -> fp32: ") for v in verdicts)
    assert "precision fp16 -> fp32: throughput" in (suite.path / "r.md").read_text()

    assert ("what runs changed since the baseline: precision fp16 -> fp32 in test_suite.py::test_detector "
            "(compared across the change; --jetson-update-baselines stores the new workload's baseline)"
            ) in out

    r = run(suite, "--jetson-update-baselines")
    r.assert_outcomes(passed=1)
    r.stdout.fnmatch_lines(["*baselines: wrote 1 entry to baselines/orin-nano-8gb/test_suite.py.json*"])
    assert "what runs changed" not in r.stdout.str().split("perf gate")[1]
    entry = json.loads(path.read_text())["entries"]["test_suite.py::test_detector"]
    assert entry["fingerprint"]["precision"] == "fp32" and entry["fingerprint"]["resolution"] == "224x224"
    run(suite).assert_outcomes(passed=1)


def test_another_power_mode_is_still_not_compared(suite, monkeypatch):
    suite.makepyfile(test_suite=PRECISION_SUITE)
    monkeypatch.setenv("PRECISION", "fp16")
    run(suite, "--jetson-update-baselines", "--jetson-power-mode", "7W").assert_outcomes(passed=1)
    monkeypatch.setenv("PRECISION", "fp32")
    r = run(suite)
    r.assert_outcomes(passed=1)
    assert ("baseline not compared, recorded under another environment: power_mode: 7W (baseline) vs "
            "15W (now) (what runs changed too: precision fp16 -> fp32)") in words(r)


def test_power_on_the_host_is_skipped_with_the_reason_said_once(suite):
    pytest.importorskip("onnxruntime")
    suite.makepyfile(test_suite=POWER_SUITE)
    r = run(suite, "--jetson-backend", "onnxruntime", "--jetson-report-json", "r.json")
    r.assert_outcomes(passed=2)
    assert r.ret == 0
    text = words(r)
    said = ("skipped 2 bounds of 2 tests: power not measured on backend onnxruntime: the host has no "
            "power sensor (telemetry source 'host' reads none)")
    assert text.count(said) == 1
    assert text.count("energy not measured on backend onnxruntime") == 1
    assert "perf bound error" not in text
    verdicts = {v["metric"]: v for t in json.loads((suite.path / "r.json").read_text())["tests"]
                for v in t["verdicts"]}
    assert (verdicts["power"]["outcome"], verdicts["power"]["reason"]) == ("skip", "not_measured")
    assert verdicts["throughput"]["outcome"] == "pass"


def test_power_with_telemetry_turned_off_is_an_error_naming_the_fix(suite):
    pytest.importorskip("onnxruntime")
    suite.makepyfile(test_suite=POWER_SUITE)
    r = run(suite, "--jetson-backend", "onnxruntime", "--jetson-telemetry", "none")
    r.assert_outcomes(failed=2)
    r.stdout.fnmatch_lines(["*perf bound error: power '<= 30 W' cannot be checked: no power reading: no "
                            "telemetry ran for this measurement*"])


def test_a_bound_limited_to_the_simulated_backend_is_not_checked_on_the_host(suite):
    pytest.importorskip("onnxruntime")
    suite.makepyfile(test_suite=LIMITED_SUITE)
    run(suite, "--jetson-backend", "onnxruntime", "--jetson-update-baselines").assert_outcomes(passed=1)
    r = run(suite, "--jetson-backend", "onnxruntime", "--jetson-report-json", "r.json")
    r.assert_outcomes(passed=1)
    assert ("skipped throughput >= 1000000/s, latency_mean 1%, latency_p99 1% of "
            "test_suite.py::test_limited: limited to backends simulated (this run: backend onnxruntime)"
            ) in words(r)
    verdicts = json.loads((suite.path / "r.json").read_text())["tests"][0]["verdicts"]
    limited = [v for v in verdicts if v["reason"] == "not_applicable"]
    assert len(limited) == 3 and all(v["outcome"] == "skip" for v in limited)
    # the session counted one comparison, the one it could make: its level is that of a family of one
    compared = [v for v in verdicts if v["metric"] == "throughput" and v["kind"] == "relative"]
    assert compared[0]["confidence"] == pytest.approx(confidence_for(1, 0.01, inconclusive_fails=False))
    # on the simulated board the same bounds are checked
    sim = run(suite)
    sim.assert_outcomes(failed=1)
    sim.stdout.fnmatch_lines(["*perf bound failed: throughput * violates the bound >= *('>= 1000000/s')",
                              "other bounds: *latency_mean '1%' skip; latency_p99 '1%' skip"])
