"""``--jetson-layer-profile=off``: no profiling pass after any measurement (so onnxruntime's
profiler never runs either), no profile in the JSON report; the measured figures stay the same."""

import json

SUITE = '''
import pytest

@pytest.mark.perf(throughput=">= 1/s")
def test_sim(trt_engine, perf):
    perf.measure(trt_engine("resnet50", precision="int8", batch=2), duration="500ms", warmup="0s")
'''


def _report(project_of, *args):
    pytester = project_of(SUITE)
    result = pytester.runpytest("--jetson-device", "orin-nano", "-p", "no:cacheprovider",
                                "--jetson-report-json=report.json", "--jetson-report-samples=all", *args)
    result.assert_outcomes(passed=1)
    return json.loads((pytester.path / "report.json").read_text())


def _measurement(doc):
    (test,) = doc["tests"]
    (m,) = test["measurements"]
    return m


def test_off_leaves_out_the_profile_and_moves_no_figure(project_of):
    on = _report(project_of)
    off = _report(project_of, "--jetson-layer-profile=off")
    assert _measurement(on)["profile"]["source"] == "simulator"
    assert "profile" not in _measurement(off)
    assert off["settings"]["layer_profile"] == "off" and on["settings"]["layer_profile"] == "on"
    for key in ("latencies", "windows", "duration", "summary"):
        assert _measurement(on)[key] == _measurement(off)[key]


def test_a_value_other_than_on_or_off_is_a_usage_error_naming_both(project_of):
    pytester = project_of(SUITE)
    result = pytester.runpytest("--jetson-layer-profile=maybe", "-p", "no:cacheprovider")
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--jetson-layer-profile*maybe*on*off*"])
