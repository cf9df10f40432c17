"""A metric a plugin adds with one row (and the code that measures it) gets the statistics of a
built-in one: its baseline entry carries an error and its relative bound is decided from it. And
the usage errors a bad metric row gets."""

import json

import pytest

# An EMC meter read as a telemetry source (the code that measures it: one column of the series,
# summarised as its mean), a backend that sleeps 2 ms per batch, and the metric's row.
CONFTEST = '''
import os
import random
import time

from pytest_jetson.clock import WallClock
from pytest_jetson.engines import Backend
from pytest_jetson.engines.base import Engine
from pytest_jetson.metrics import Metric
from pytest_jetson.telemetry import SourceSpec
from pytest_jetson.telemetry.base import Reading, Source


class SleepEngine(Engine):
    backend = "sleepy"

    def __init__(self, model, batch):
        super().__init__()
        self.name = self.model = str(model)
        self.precision, self.batch, self.max_batch = "fp16", batch, batch
        self.clock = WallClock()

    def _infer(self, batch):
        time.sleep(0.002)


class EmcMeter(Source):
    name = "emcmeter"

    def __init__(self):
        self.rng = random.Random(7)

    def collect(self, now):
        level = float(os.environ.get("EMC_LEVEL", "40"))
        return [Reading(t=now, board_power_w=7.5, emc_util=level * (1 + 0.02 * self.rng.gauss(0, 1)))]


def pytest_jetson_backends(config):
    return [Backend("sleepy", open=lambda model, batch=1, **kw: SleepEngine(model, batch))]


def pytest_jetson_telemetry_sources(config):
    return [SourceSpec("emcmeter", open=lambda ctx: EmcMeter(), auto=5)]


def pytest_jetson_metrics(config):
    return [Metric("emc_util", "percent", "higher", "telemetry", "mean EMC utilisation",
                   "no telemetry source reads the EMC", summary="emc_util_mean", series="emc_util",
                   reduction="mean", estimator="series_mean")]
'''

SUITE = '''
import pytest

@pytest.mark.perf(emc_util="5%")
def test_emc(trt_engine, perf):
    perf.measure(trt_engine("anything", batch=1), iterations=150, warmup=0)
'''

ARGS = ("--jetson-backend", "sleepy", "--jetson-telemetry", "emcmeter", "--jetson-telemetry-interval", "10ms",
        "-p", "no:cacheprovider")


@pytest.fixture
def host(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    return pytester


def _verdict(path):
    (test,) = json.loads(path.read_text())["tests"]
    (verdict,) = [v for v in test["verdicts"] if v["metric"] == "emc_util"]
    return verdict


def test_a_plugin_metric_is_recorded_with_its_error_and_gated_on_it(host, monkeypatch):
    host.makeconftest(CONFTEST)
    host.makepyfile(test_emc=SUITE)
    host.runpytest(*ARGS, "--jetson-update-baselines").assert_outcomes(passed=1)
    (path,) = (host.path / "baselines").glob("*/test_emc.py.json")
    entry = json.loads(path.read_text())["entries"]["test_emc.py::test_emc"]["metrics"]["emc_util"]
    assert entry["value"] == pytest.approx(40, rel=0.02)
    assert 0 < entry["se_log"] < 0.01 and entry["df"] >= 4 and entry["n"] >= 8

    # the same level again: within the tolerance, decided from the errors
    r = host.runpytest(*ARGS, "--jetson-report-json", "same.json")
    r.assert_outcomes(passed=1)
    same = _verdict(host.path / "same.json")
    assert same["outcome"] == "pass" and same["basis"] == "statistics" and same["within_se"] > 0

    # 50 % more EMC traffic: a regression, significant against the recorded error
    monkeypatch.setenv("EMC_LEVEL", "60")
    r = host.runpytest(*ARGS, "--jetson-report-json", "worse.json")
    r.assert_outcomes(failed=1)
    worse = _verdict(host.path / "worse.json")
    assert worse["outcome"] == "fail" and worse["basis"] == "statistics"
    assert worse["change"] == pytest.approx(0.5, rel=0.1)
    assert worse["p_value"] < 1e-6


@pytest.mark.parametrize("row, words", [
    ('Metric("power", "power", "higher", "telemetry", "d", "h", summary="power_mean_w")',
     "registered the metric 'power', but pytest-jetson already registers one under that name"),
    # a taken name is the fix to make, whatever else the row lacks
    ('Metric("throughput", "rate", "lower", "me", "d", "h")',
     "registered the metric 'throughput', but pytest-jetson already registers one under that name"),
    ('Metric("emc", "loudness", "higher", "telemetry", "d", "h", summary="emc_util_mean")',
     "registered the metric 'emc': dimension 'loudness': one of rate, time, bytes*"),
    ('Metric("emc", "percent", "up", "telemetry", "d", "h", summary="emc_util_mean")',
     "registered the metric 'emc': worse 'up': one of higher, lower"),
    ('Metric("emc", "percent", "higher", "telemetry", "d", "h", summary="emc_util_mean", estimator="bootstrap")',
     "registered the metric 'emc': estimator 'bootstrap': one of batch_means, *"),
    ('Metric("emc", "percent", "higher", "telemetry", "d", "h", estimator="series_mean")',
     "registered the metric 'emc': estimator 'series_mean' needs series=*"),
    ('Metric("emc", "percent", "higher", "telemetry", "d", "h")',
     "registered the metric 'emc': no value to read*"),
])
def test_a_clashing_or_incomplete_metric_is_a_usage_error_naming_the_plugin(host, row, words):
    host.makeconftest(f'''
from pytest_jetson.metrics import Metric

def pytest_jetson_metrics(config):
    return [{row}]
''')
    host.makepyfile(test_a="def test_a():\n    pass\n")
    r = host.runpytest()
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines([f"ERROR: conftest.py {words}*"])
    host.makeconftest("")
    host.runpytest().assert_outcomes(passed=1)


def test_a_metric_registered_twice_is_refused_and_leaves_nothing_behind(host):
    from pytest_jetson.metrics import METRICS

    before = list(METRICS)
    host.makeconftest('''
from pytest_jetson.metrics import Metric

ROW = Metric("emc", "percent", "higher", "telemetry", "d", "h", summary="emc_util_mean")

def pytest_jetson_metrics(config):
    return [ROW, ROW]
''')
    host.makepyfile(test_a="def test_a():\n    pass\n")
    r = host.runpytest()
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    r.stderr.fnmatch_lines(["ERROR: conftest.py registered the metric 'emc', but conftest.py already registers*"])
    assert list(METRICS) == before


def test_a_plugin_metric_is_gone_after_its_session(host):
    from pytest_jetson.metrics import METRICS

    host.makeconftest(CONFTEST)
    host.makepyfile(test_a="def test_a():\n    from pytest_jetson.metrics import METRICS\n"
                           "    assert METRICS['emc_util'].plugin == 'conftest.py'\n")
    host.runpytest().assert_outcomes(passed=1)
    assert "emc_util" not in METRICS
