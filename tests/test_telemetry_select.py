"""Choosing a source, jtop's control flow (a fake jtop module at the import boundary), the
sampler's own behaviour on the host source, and the factory the fixture wraps."""

import os
import sys
import threading
import time
import types

import pytest

from pytest_jetson.clock import SimClock
from pytest_jetson.errors import ConfigError, TelemetryError
from pytest_jetson.telemetry import TelemetryFactory
from pytest_jetson.telemetry import jtop as jtop_mod
from pytest_jetson.telemetry.base import TelemetryWarning
from pytest_jetson.telemetry.host import HostSource
from pytest_jetson.telemetry.jtop import JTOP_MISSING, JTOP_NOT_RUNNING, JtopSource
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
    with pytest.raises(TelemetryError, match=r"jtop is not available here: jetson-stats not installed"):
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


# -- jtop ------------------------------------------------------------------------------------------
class FakeJtop(threading.Thread):
    """Stands in for jtop.jtop (jetson-stats 4.x) to drive JtopSource's control flow: the
    service's figures, and the service stopping."""

    service_running = True

    def __init__(self, interval=0.5):
        super().__init__(daemon=True)
        self.interval = interval
        self.n = 0
        self._halt = threading.Event()
        self.closed = False

    def start(self):
        if not FakeJtop.service_running:
            raise RuntimeError("The jtop.service is not active. Please run:\nsudo systemctl restart jtop.service")
        super().start()

    def run(self):
        while not self._halt.wait(0.005):
            self.n += 1
            if not FakeJtop.service_running:
                return

    def close(self):
        self.closed = True
        self._halt.set()

    @property
    def stats(self):
        return {"time": self.n}

    @property
    def power(self):
        return {"rail": {"VDD_CPU_GPU_CV": {"power": 2000 + self.n, "avg": 1900}, "VDD_SOC": {"power": 1200}},
                "tot": {"power": 7000 + self.n, "avg": 6500, "name": "VDD_IN"}}

    @property
    def memory(self):
        return {"RAM": {"used": 2_000_000, "tot": 7_600_000}, "EMC": {"val": 30}}

    @property
    def gpu(self):
        return {"gpu": {"status": {"load": 95.0}, "freq": {"cur": 612000, "max": 624750}}}

    @property
    def temperature(self):
        return {"cpu": {"temp": 50.0, "online": True}, "cv0": {"temp": -256, "online": False}}

    @property
    def nvpmodel(self):
        return types.SimpleNamespace(name="15W", id=0)

    @property
    def jetson_clocks(self):
        return types.SimpleNamespace(status="running")


@pytest.fixture
def fake_jtop(monkeypatch, tmp_path):
    module = types.ModuleType("jtop")
    module.jtop = FakeJtop
    monkeypatch.setitem(sys.modules, "jtop", module)
    sock = tmp_path / "jtop.sock"
    sock.write_text("")
    monkeypatch.setattr(jtop_mod, "JTOP_SOCKET", str(sock))
    FakeJtop.service_running = True
    return sock


def test_jtop_is_preferred_when_its_service_runs(fake_jtop):
    source, tried = open_source("auto")
    assert isinstance(source, JtopSource) and tried == []


def test_jtop_service_down_is_said_with_the_command_and_auto_falls_back(fake_jtop, no_jetson):
    os.unlink(fake_jtop)
    monkey_module = types.ModuleType("jtop")
    monkey_module.jtop = FakeJtop
    sys.modules["jtop"] = monkey_module
    source, tried = open_source("auto", root=str(no_jetson))
    assert source.name == "host"
    assert tried[0] == ("jtop", JTOP_NOT_RUNNING)
    assert "sudo systemctl restart jtop.service" in JTOP_NOT_RUNNING


def test_jtop_readings_modes_and_clock(fake_jtop):
    with Sampler(JtopSource(), interval="10ms") as t:
        time.sleep(0.15)
    s = t.summary
    assert s.source == "jtop" and s.samples >= 3
    assert s.power_basis == "VDD_IN" and s.power_peak_w >= 7.0
    assert set(s.rails) == {"VDD_CPU_GPU_CV", "VDD_SOC"}
    assert s.memory_peak_bytes == 2_000_000 * 1024
    assert s.gpu_util_mean == 95.0 and s.emc_util_mean == 30.0
    assert s.temperatures_max_c == {"cpu": 50.0}
    assert s.gpu_clock_max_mode_mhz == pytest.approx(624.75) and not s.throttled
    assert (s.power_mode_start, s.jetson_clocks_start) == ("15W", True)


def test_jtop_service_stopping_mid_run_keeps_samples_and_warns(fake_jtop):
    with pytest.warns(TelemetryWarning, match="jtop stopped during the run"):
        with Sampler(JtopSource(), interval="10ms") as t:
            time.sleep(0.1)
            FakeJtop.service_running = False
            time.sleep(0.15)
    s = t.summary
    assert s.samples >= 2 and len(s.gaps) == 1
    assert s.gaps[0][1] - s.gaps[0][0] >= 0.1
    assert any(JTOP_NOT_RUNNING in w for w in s.warnings)


def test_jtop_start_failure_names_the_fix(fake_jtop):
    FakeJtop.service_running = False
    with pytest.raises(TelemetryError, match="sudo systemctl restart jtop.service"):
        JtopSource().start(0.1)


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


def test_jtop_service_running_slower_than_asked_is_not_a_gap(fake_jtop, monkeypatch):
    monkeypatch.setattr(FakeJtop, "interval", property(lambda self: 1.0, lambda self, v: None), raising=False)
    with Sampler(JtopSource(), interval="10ms") as t:
        time.sleep(0.1)
    assert t.summary.interval == 1.0 and t.summary.gaps == []


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
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout.strip() == "[]"
