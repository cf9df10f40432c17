"""An engine measured on the wall clock gets a real telemetry source by default, never the
simulated one, even in a session on the simulated device (its clock is virtual)."""

import pytest

CONFTEST = '''
import time

from pytest_jetson.clock import WallClock
from pytest_jetson.engines.base import Engine


class SleepEngine(Engine):
    backend = "sleepy"

    def __init__(self):
        super().__init__()
        self.name = self.model = "sleepy"
        self.precision, self.batch, self.max_batch = "fp16", 1, 1
        self.clock = WallClock()
        self.memory_bytes = 1 << 20

    def _infer(self, batch):
        time.sleep(0.002)
        return {}
'''

SUITE = '''
from conftest import SleepEngine


def test_wall_clock_engine(perf):
    m = perf.measure(SleepEngine(), duration="0.4s", warmup=0)
    print("SOURCE", m.telemetry.source, "SAMPLES", m.telemetry.samples)
    assert m.telemetry.source not in ("simulated", "none"), m.telemetry.source


def test_simulated_engine(trt_engine, perf):
    m = perf.measure(trt_engine("resnet18"), duration="0.4s", warmup=0)
    assert m.telemetry.source == "simulated"
'''


@pytest.fixture
def host(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path / "empty-root"))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def test_a_wall_clock_engine_in_the_default_session_is_sampled_for_real(host):
    r = host.runpytest("-p", "no:cacheprovider", "-s")
    r.assert_outcomes(passed=2)
    r.stdout.fnmatch_lines(["*SOURCE host SAMPLES *"])
