"""The telemetry fixture as a user meets it."""

import pytest


def test_telemetry_fixture_samples_the_simulated_board(pytester):
    pytester.makepyfile("""
        def test_sample(telemetry, trt_engine):
            engine = trt_engine("resnet18", precision="fp16", batch=4)
            with telemetry.sample(interval="50ms", workload=engine.prediction) as t:
                for _ in range(200):
                    engine.infer()
            s = t.summary
            assert s.source == "simulated"
            assert s.samples >= 2 and s.power_mean_w > 0 and s.power_peak_w >= s.power_mean_w
            assert len(t.series) == len(t.series.t) == s.samples
            print("SUMMARY", s.source, round(s.power_mean_w, 2))
    """)
    result = pytester.runpytest("-s", "--jetson-device", "orin-nano")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*SUMMARY simulated *"])


def test_telemetry_source_option_host(pytester):
    pytester.makepyfile("""
        import time
        def test_host(telemetry):
            with telemetry.sample(interval="20ms") as t:
                time.sleep(0.2)
            assert t.summary.source == "host"
            assert t.summary.power_mean_w is None
    """)
    result = pytester.runpytest("--jetson-telemetry", "host")
    result.assert_outcomes(passed=1)


def test_unavailable_named_source_fails_with_the_fix(pytester):
    pytester.makepyfile("""
        def test_jtop(telemetry):
            with telemetry.sample():
                pass
    """)
    result = pytester.runpytest("--jetson-telemetry", "jtop", "--jetson-backend", "onnxruntime")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # at start-up, not once per test
    result.stderr.fnmatch_lines(["*--jetson-telemetry jtop: telemetry source jtop is not available here*"])
