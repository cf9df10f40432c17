"""A ``pytest_jetson_*`` hook that raises or returns what the plugin cannot use is a usage error
at start-up naming the plugin (the conftest) and the hook: never an internal error, never a crash
at session finish that loses the session's baselines and reports."""

import pytest

SUITE = '''
def test_a(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="0.2s")
'''


@pytest.fixture
def host(project_of):
    return project_of(SUITE)


@pytest.mark.parametrize("hook, body, message", [
    ("pytest_jetson_backends(config)", "raise RuntimeError('no board here')",
     "conftest.py: pytest_jetson_backends raised RuntimeError: no board here; fix the hook*"),
    ("pytest_jetson_telemetry_sources(config)", "return 1 / 0",
     "conftest.py: pytest_jetson_telemetry_sources raised ZeroDivisionError: division by zero; fix the hook*"),
    ("pytest_jetson_metrics(config)", "raise KeyError('x')",
     "conftest.py: pytest_jetson_metrics raised KeyError: 'x'; fix the hook*"),
    ("pytest_jetson_fingerprint(config, device)", "raise OSError('firmware file missing')",
     "conftest.py: pytest_jetson_fingerprint raised OSError: firmware file missing; fix the hook*"),
    ("pytest_jetson_fingerprint(config, device)", "return {'firmware': object()}",
     "conftest.py: pytest_jetson_fingerprint returned field 'firmware' = <object object at *>, not a JSON "
     "value (a string, a finite number, true/false or null, or a list or dict of them)*"),
    ("pytest_jetson_fingerprint(config, device)", "return {'clock': float('nan')}",
     "conftest.py: pytest_jetson_fingerprint returned field 'clock' = nan, not a JSON value*"),
    ("pytest_jetson_fingerprint(config, device)", "return {1: 'a'}",
     "conftest.py: pytest_jetson_fingerprint returned a field named 1 (int); name fields with strings*"),
    ("pytest_jetson_fingerprint(config, device)", "return ['firmware', '1.2']",
     "conftest.py: pytest_jetson_fingerprint must return a dict of fingerprint fields, not list*"),
    ("pytest_jetson_backends(config)", "raise SystemExit(3)",
     "conftest.py: pytest_jetson_backends raised SystemExit: 3; fix the hook*"),
    ("pytest_jetson_fingerprint(config, device)", "return {'firmware': 10 ** 400}",
     "conftest.py: pytest_jetson_fingerprint returned field 'firmware' = 1000000*: a 401-digit integer "
     "*every baseline recorded with it would be refused when read*"),
    ("pytest_jetson_fingerprint(config, device)", "return {'device': 'other'}",
     "conftest.py: pytest_jetson_fingerprint returned the field 'device', which pytest-jetson records itself*"),
    ("pytest_jetson_fingerprint(config, device)", "return {'model': 'mine'}",
     "conftest.py: pytest_jetson_fingerprint returned the field 'model', which pytest-jetson records itself*"),
])
def test_a_broken_hook_is_a_usage_error_naming_the_plugin_and_the_hook(host, hook, body, message):
    host.makeconftest(f"def {hook}:\n    {body}\n")
    r = host.runpytest("-p", "no:cacheprovider", "--jetson-update-baselines", "--jetson-report-json", "r.json")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "INTERNALERROR" not in r.stdout.str() + r.stderr.str()
    assert "Traceback" not in r.stdout.str() + r.stderr.str()


def test_good_fingerprint_fields_reach_the_baselines_and_report(host):
    host.makeconftest("def pytest_jetson_fingerprint(config, device):\n"
                      "    return {'firmware': '36.4', 'fan': {'profile': 'cool', 'pwm': 120}}\n")
    r = host.runpytest("-p", "no:cacheprovider", "--jetson-update-baselines", "--jetson-report-json", "r.json")
    assert r.ret == 0
    assert '"firmware": "36.4"' in (host.path / "baselines" / "orin-nano-8gb" / "test_suite.py.json").read_text()
