"""Extending pytest-jetson from a conftest: a backend, a telemetry source and fingerprint fields,
and the usage errors a bad extension gets. Plus what the session writes at its end."""

import json

import pytest

# A backend whose engine sleeps a fixed time per batch on the wall clock, and a bench power supply
# read as a telemetry source: what a user adds for hardware the plugin does not know.
CONFTEST = '''
import time

from pytest_jetson.clock import WallClock
from pytest_jetson.engines import Backend
from pytest_jetson.engines.base import Engine
from pytest_jetson.telemetry import SourceSpec
from pytest_jetson.telemetry.base import Reading, Source


class SleepEngine(Engine):
    backend = "sleepy"

    def __init__(self, model, batch):
        super().__init__()
        self.name = self.model = str(model)
        self.precision, self.batch, self.max_batch = "fp16", batch, batch
        self.clock = WallClock()
        self.memory_bytes = 1 << 20

    def _infer(self, batch):
        time.sleep(0.002)


def open_sleepy(model, *, device, clock, seed, precision, batch, dla_core, **options):
    return SleepEngine(model, batch)


class BenchSupply(Source):
    name = "benchpsu"

    def collect(self, now):
        return [Reading(t=now, board_power_w=7.5)]


def pytest_jetson_backends(config):
    return [Backend("sleepy", open=open_sleepy, description="sleeps 2 ms per batch")]


def pytest_jetson_telemetry_sources(config):
    return [SourceSpec("benchpsu", open=lambda ctx: BenchSupply(), auto=5)]
'''

SUITE = '''
import pytest

@pytest.mark.perf(throughput="<= 1000/s", power="<= 10 W")
def test_sleepy(trt_engine, perf):
    m = perf.measure(trt_engine("anything", batch=1), iterations=30, warmup=0)
    assert m.backend == "sleepy"
    assert m.power == pytest.approx(7.5)
    assert m.telemetry.source == "benchpsu"
'''


@pytest.fixture
def host(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    return pytester


def test_a_conftest_adds_a_backend_and_a_telemetry_source(host):
    host.makeconftest(CONFTEST)
    host.makepyfile(test_suite=SUITE)
    r = host.runpytest("--jetson-backend", "sleepy", "--jetson-telemetry-interval", "10ms")
    r.assert_outcomes(passed=1)
    # a wall-clock backend without a board measures the host
    r.stdout.fnmatch_lines(["jetson: the sleepy backend on the host CPU (*), no Jetson board",
                            "jetson: baselines in baselines/host-*-sleepy/; jetson marks as on Jetson Orin Nano 8GB"])
    # the plugin's source ranks first in auto; named, it is a choice like the built-ins
    r = host.runpytest("--jetson-backend", "sleepy", "--jetson-telemetry", "benchpsu",
                       "--jetson-telemetry-interval", "10ms")
    r.assert_outcomes(passed=1)


def test_a_sessions_backends_and_sources_stay_in_that_session(host):
    from pytest_jetson.engines.backends import BACKENDS
    from pytest_jetson.telemetry.sources import SOURCES

    host.makeconftest(CONFTEST)
    host.makepyfile(test_suite=SUITE, test_tables='''
from pytest_jetson.engines.backends import BACKENDS
from pytest_jetson.plugin import jetson_context
from pytest_jetson.telemetry.sources import SOURCES

def test_the_session_has_its_own_tables(pytestconfig):
    ctx = jetson_context(pytestconfig)
    assert "sleepy" in ctx.backends and "benchpsu" in ctx.sources
    assert "sleepy" not in BACKENDS and "benchpsu" not in SOURCES
''')
    host.runpytest("--jetson-backend", "sleepy", "--jetson-telemetry-interval", "10ms").assert_outcomes(passed=2)
    # the built-in tables are what the next session (and a script) starts from
    assert BACKENDS.names() == ["tensorrt", "onnxruntime", "simulated"]
    assert SOURCES.names() == ["jtop", "tegrastats", "sysfs", "nvml", "host", "simulated"]
    host.makeconftest("")
    r = host.runpytest("--jetson-backend", "sleepy")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*'sleepy' is not a known engine backend*Known: tensorrt, onnxruntime, simulated"])


def test_an_unknown_backend_lists_the_registered_ones(host):
    host.makeconftest(CONFTEST)
    r = host.runpytest("--jetson-backend", "sleepi")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["*'sleepi' is not a known engine backend. Did you mean 'sleepy'? "
                            "Known: tensorrt, onnxruntime, simulated, sleepy*"])


@pytest.mark.parametrize("hook, entry, words", [
    ("pytest_jetson_backends", 'Backend("simulated", open=lambda *a, **k: None)',
     "registered the engine backend 'simulated', but pytest-jetson already registers one"),
    ("pytest_jetson_backends", 'Backend("nowhere", open=None)',
     "registered the engine backend 'nowhere' without an opener"),
    ("pytest_jetson_telemetry_sources", 'SourceSpec("host", open=lambda ctx: None)',
     "registered the telemetry source 'host', but pytest-jetson already registers one"),
    ("pytest_jetson_telemetry_sources", 'SourceSpec("auto", open=lambda ctx: None)',
     "registered the telemetry source 'auto'"),
    # a taken name is the fix to make, whatever else the row lacks
    ("pytest_jetson_backends", 'Backend("simulated", open=None)',
     "registered the engine backend 'simulated', but pytest-jetson already registers one"),
    ("pytest_jetson_backends", '"tvm"', ": pytest_jetson_backends returned 'tvm', not a pytest_jetson.engines.Backend"),
    ("pytest_jetson_telemetry_sources", '{"name": "psu"}',
     ": pytest_jetson_telemetry_sources returned {'name': 'psu'}, not a pytest_jetson.telemetry.SourceSpec"),
    ("pytest_jetson_metrics", '"fps"', ": pytest_jetson_metrics returned 'fps', not a pytest_jetson.metrics.Metric"),
])
def test_a_clashing_or_incomplete_extension_is_a_usage_error_naming_the_plugin(host, hook, entry, words):
    host.makeconftest(f'''
from pytest_jetson.engines import Backend
from pytest_jetson.telemetry import SourceSpec

def {hook}(config):
    return [{entry}]
''')
    host.makepyfile(test_a="def test_a():\n    pass\n")
    r = host.runpytest()
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"ERROR: conftest.py{'' if words.startswith(':') else ' '}{words}*"])
    # nothing leaks into the next session of the same interpreter
    host.makeconftest("")
    host.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize("hook", ["pytest_jetson_backends", "pytest_jetson_telemetry_sources",
                                  "pytest_jetson_metrics"])
def test_a_hook_that_returns_one_row_instead_of_a_list_is_told_how_to_return_it(host, hook):
    host.makeconftest(f'''
from pytest_jetson.engines import Backend
from pytest_jetson.metrics import Metric
from pytest_jetson.telemetry import SourceSpec

ROWS = {{"pytest_jetson_backends": Backend("tvm", open=print),
        "pytest_jetson_telemetry_sources": SourceSpec("psu", open=print),
        "pytest_jetson_metrics": Metric("fps_drop", "percent", "higher", "me", "d", "h")}}

def {hook}(config):
    return ROWS["{hook}"]
''')
    host.makepyfile(test_a="def test_a():\n    pass\n")
    r = host.runpytest()
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"ERROR: conftest.py: {hook} returned a * not a list; return a list of rows*"])


def test_fingerprint_fields_from_a_plugin_keep_baselines_apart(host, monkeypatch):
    host.makeconftest('''
import os

def pytest_jetson_fingerprint(config, device):
    return {"firmware": os.environ.get("FIRMWARE", "36.4")}
''')
    host.makepyfile(test_suite='''
import pytest

@pytest.mark.perf(throughput="5%")
def test_a(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="1s", warmup=0)
''')
    host.runpytest("--jetson-update-baselines").assert_outcomes(passed=1)
    entry = json.loads((host.path / "baselines/orin-nano-8gb/test_suite.py.json").read_text())
    assert entry["entries"]["test_suite.py::test_a"]["fingerprint"]["firmware"] == "36.4"
    monkeypatch.setenv("FIRMWARE", "36.5")
    r = host.runpytest()
    r.assert_outcomes(passed=1)
    assert ("skipped throughput 5% of test_suite.py::test_a: baseline not compared, recorded under another "
            "environment: firmware: 36.4 (baseline) vs 36.5 (now)") in " ".join(r.stdout.str().split())


PERF_SUITE = '''
import pytest

@pytest.mark.perf(throughput=">= 1/s")
def test_a(trt_engine, perf):
    perf.measure(trt_engine("resnet18"), duration="1s", warmup=0)
'''


def test_reports_are_written_without_the_terminal_plugin(host):
    host.makepyfile(test_suite=PERF_SUITE)
    r = host.runpytest_subprocess("-p", "no:terminal", "--jetson-report-json", "r.json",
                                  "--jetson-report-md", "r.md", "--jetson-update-baselines")
    assert r.ret == 0
    summary = json.loads((host.path / "r.json").read_text())["summary"]
    assert (summary["tests"], summary["passed"], summary["failed"]) == (1, 1, 0)
    assert (host.path / "r.md").read_text().startswith("## pytest-jetson perf gate")
    assert (host.path / "baselines/orin-nano-8gb/test_suite.py.json").exists()


def test_a_report_path_that_is_a_directory_is_named_and_the_others_still_written(host):
    # a directory there at start-up is a usage error (tests/report/test_files_targets.py); one
    # made while the tests ran is named when the reports are written, and the others still are
    host.makepyfile(test_suite=PERF_SUITE + """
import os

def test_b():
    os.mkdir("taken")
""")
    r = host.runpytest("--jetson-report-json", "taken", "--jetson-report-md", "r.md")
    r.assert_outcomes(passed=2)
    r.stdout.fnmatch_lines(["*pytest-jetson: --jetson-report-json taken is a directory, not a file; give a "
                            "file path such as taken/report*",
                            ])
    assert (host.path / "r.md").exists()
    assert "INTERNALERROR" not in r.stdout.str()


@pytest.mark.parametrize("fingerprint_hook", [False, True])
def test_a_run_without_perf_tests_loads_neither_numpy_nor_the_gate(host, fingerprint_hook):
    if fingerprint_hook:  # its fields are checked at start-up against the plugin's own, still without numpy
        host.makeconftest("def pytest_jetson_fingerprint(config, device):\n    return {'firmware': '36.4'}\n")
    host.makepyfile(test_plain='''
import sys

def test_plain():
    pass

def test_late():
    # by the last test, nothing of the gate's statistics nor numpy was imported
    assert "numpy" not in sys.modules
    light = ("pytest_jetson.gate.keys", "pytest_jetson.gate.fields", "pytest_jetson.gate.safe_read")
    assert not [m for m in sys.modules if m.startswith("pytest_jetson.gate.") and m not in light]
''')
    r = host.runpytest_subprocess("-p", "no:cacheprovider", "-p", "no:benchmark")
    r.assert_outcomes(passed=2)


def test_update_baselines_never_swallows_a_path(host):
    host.makepyfile(test_suite=PERF_SUITE)
    r = host.runpytest("--jetson-update-baselines", "test_suite.py")
    r.assert_outcomes(passed=1)
    assert (host.path / "baselines/orin-nano-8gb/test_suite.py.json").exists()


POOL_CONFTEST = '''
import time

from pytest_jetson.clock import WallClock
from pytest_jetson.engines import Backend
from pytest_jetson.engines.base import Engine


class SleepEngine(Engine):
    backend = "sleepy"

    def __init__(self, model, batch):
        super().__init__()
        self.name = self.model = str(model)
        self.precision, self.batch, self.max_batch = "fp16", batch, batch
        self.clock = WallClock()

    def _infer(self, batch):
        time.sleep(0.002)


def open_sleepy(model, *, device, clock, seed, precision, batch, dla_core, **options):
    return SleepEngine(model, batch)


def pytest_jetson_backends(config):
    return [Backend("sleepy", open=open_sleepy)]
'''


def test_a_plugins_backend_runs_in_pool_workers_through_its_import_path(host):
    host.makeconftest(POOL_CONFTEST)
    host.makepyfile(test_pool='''
def test_pool(process_pool, perf):
    m = perf.record(process_pool("anything", processes=2, duration="0.5s", warmup="0.1s",
                                 backend="sleepy", telemetry="none"))
    assert m.processes == 2 and m.backend == "sleepy"
    assert 100 < m.per_process_throughput.min < 600  # 2 ms a batch, one batch per call
''')
    host.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
