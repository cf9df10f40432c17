"""Choosing a source, the sampler's own behaviour on the host source, and the factory the fixture
wraps. The jtop source is tested against the real jetson-stats in test_telemetry_jtop.py."""

import os
import sys
import time
import types

import pytest

from pytest_jetson.clock import SimClock
from pytest_jetson.errors import ConfigError, TelemetryError
from pytest_jetson.telemetry import TelemetryFactory
from pytest_jetson.telemetry.base import TelemetryWarning
from pytest_jetson.telemetry.host import HostSource
from pytest_jetson.telemetry.jtop import JTOP_MISSING
from pytest_jetson.telemetry.sampler import Sampler
from pytest_jetson.telemetry.select import open_source


@pytest.fixture
def no_jetson(monkeypatch, tmp_path):
    """A host without tegrastats, INA3221 or jetson-stats, whatever this machine has."""
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setitem(sys.modules, "jtop", None)  # import jtop -> ImportError
    monkeypatch.setitem(sys.modules, "pynvml", None)
    return tmp_path


def test_auto_on_a_plain_host_is_host_and_every_skip_is_explained(no_jetson):
    source, tried = open_source("auto", root=str(no_jetson))
    assert source.name == "host"
    assert [n for n, _ in tried] == ["jtop", "tegrastats", "sysfs", "nvml"]
    why = dict(tried)
    assert why["jtop"] == JTOP_MISSING
    assert "pip install 'pytest-jetson[nvml]'" in why["nvml"]


def test_a_named_source_that_is_missing_raises_with_the_fix(no_jetson):
    with pytest.raises(TelemetryError, match=r"jtop is not available here: jetson-stats is not installed"):
        open_source("jtop")
    with pytest.raises(ConfigError, match="not a known telemetry source"):
        open_source("perfmon")
    assert open_source("none")[0].name == "none"


def test_a_simulated_device_gets_the_simulated_source():
    device = types.SimpleNamespace(simulated=True, power_mode=None)
    source, tried = open_source("auto", device=device, clock=SimClock())
    assert source.name == "simulated" and tried == []
    with pytest.raises(TelemetryError, match="virtual clock"):
        open_source("simulated", device=device, clock=None)


def test_no_power_source_explains_itself_to_a_power_bound(no_jetson):
    factory = TelemetryFactory(device=None, clock=None, root=str(no_jetson))
    with factory.sample(interval="20ms") as t:
        time.sleep(0.1)
    s = t.summary
    assert s.source == "host" and s.power_mean_w is None and s.memory_peak_bytes > 0
    text = s.explain_missing("power")
    assert "'host' does not measure power" in text and "tried tegrastats: tegrastats not found" in text


# -- the sampler on the host source ---------------------------------------------------------------
def test_host_sampler_timestamps_are_monotonic_and_near_the_interval():
    with Sampler(HostSource(), interval="20ms") as t:
        time.sleep(0.3)
    ts = t.series.t
    assert len(ts) >= 5
    assert all(b > a for a, b in zip(ts, ts[1:]))
    assert t.summary.interval == 0.02
    assert t.summary.duration == pytest.approx(0.3, abs=0.2)


def test_host_source_counts_children(tmp_path):
    import subprocess

    child = subprocess.Popen([sys.executable, "-c", "x = bytearray(150 * 1024 * 1024); import time; time.sleep(3)"])
    try:
        time.sleep(0.8)
        with_children = HostSource().read(time.perf_counter()).memory_bytes
        alone = HostSource(children=False).read(time.perf_counter()).memory_bytes
    finally:
        child.kill()
        child.wait()
    assert with_children - alone >= 100 * 1024 * 1024


def test_a_source_that_keeps_failing_counts_as_dead():
    class Flaky(HostSource):
        name = "flaky"

        def collect(self, now):
            raise OSError("read error")

    with pytest.warns(TelemetryWarning, match="5 reads failed in a row"):
        with Sampler(Flaky(), interval="10ms") as t:
            time.sleep(0.15)
    assert t.summary.samples == 0 and len(t.summary.gaps) == 1


def test_items_set_after_the_run_give_energy_per_item():
    clock = SimClock()
    factory = TelemetryFactory(types.SimpleNamespace(simulated=True, power_mode="MAXN"), clock)
    wl = types.SimpleNamespace(power=10.0, idle_power=4.0, gpu_util=1.0, gpu_clock_mhz=1300.0, memory=1e9)
    with factory.sample(workload=wl) as t:
        clock.advance(1.0)
    assert t.summary.energy_per_item_j is None
    t.items = 100
    assert t.summary.items == 100 and t.summary.energy_per_item_j == pytest.approx(t.summary.energy_j / 100)
    assert t.summary.power_mode_start == "MAXN"


def test_host_source_without_procfs_uses_psutil():
    src = HostSource()
    src._procfs = False  # as on macOS or Windows
    src.start(0.01)
    first = src.read(time.perf_counter())
    sum(i * i for i in range(200000))
    second = src.read(time.perf_counter() + 0.05)
    assert first.memory_bytes > 10 * 1024 * 1024 and first.cpu_util is None
    assert second.cpu_util is not None and second.cpu_util >= 0


def test_importing_telemetry_loads_no_optional_dependency():
    import subprocess

    code = (
        "import sys, pytest_jetson.telemetry as t; t.TelemetryFactory; "
        "import pytest_jetson.telemetry.jtop, pytest_jetson.telemetry.nvml; "
        "print(sorted(m for m in ('jtop', 'pynvml', 'psutil') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    assert out.stdout.strip() == "[]"
