"""Options a session cannot honour are usage errors at start-up, before any test runs."""

import pytest

SUITE = '''
def test_a(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''


@pytest.fixture
def suite(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    pytester.makepyfile(test_suite=SUITE)
    return pytester


@pytest.mark.parametrize("args, message", [
    (["--jetson-duration", "1e308"], "--jetson-duration: '1e308' is longer than a day (24 h)*"),
    (["--jetson-duration", "inf"], "--jetson-duration: cannot read 'inf' as a duration*"),
    (["--jetson-seed", "-1"], "--jetson-seed / ini jetson_seed: -1 is not a seed; seeds are whole numbers from 0 to 4294967295*"),
    (["--jetson-seed", str(2 ** 64)], "--jetson-seed / ini jetson_seed: * is not a seed*"),
    (["--jetson-telemetry-interval", "0"], "--jetson-telemetry-interval: 0.0 s is outside 10ms..60s*"),
    (["--jetson-telemetry-interval", "1ms"], "--jetson-telemetry-interval: 0.001 s is outside 10ms..60s*"),
])
def test_an_option_out_of_range_is_a_usage_error(suite, args, message):
    r = suite.runpytest("-p", "no:cacheprovider", *args)
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in r.stderr.str()


def test_options_in_range_run(suite):
    r = suite.runpytest("-p", "no:cacheprovider", "--jetson-seed", "4294967295", "--jetson-duration", "0.1s",
                        "--jetson-telemetry-interval", "10ms")
    assert r.ret == 0
