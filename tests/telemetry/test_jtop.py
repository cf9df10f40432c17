"""The jtop source against the real jetson-stats: its client and its service, the service reading a
recorded board tree (tests/jtop_service.py). The test extra installs jetson-stats 4.3 on Python 3.8
(the line JetPack 5 boards run) and 7.2 on newer Pythons, so the two CI interpreters cover both."""

import re
import socket
import subprocess
import sys
import time
import warnings

import pytest
from board_trees import copy, meta, tree

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform != "linux", reason="the service runs on Linux"),
    # jetson-stats' own: its platform report uses a deprecated distro call
    pytest.mark.filterwarnings("ignore:distro.linux_distribution:DeprecationWarning"),
]

jtop = pytest.importorskip("jtop")
import jtop.service  # noqa: E402, F811  (importorskip binds only the package)
from jtop_service import FAKE_BIN, JtopService  # noqa: E402

from pytest_jetson.errors import TelemetryError  # noqa: E402
from pytest_jetson.telemetry import TelemetryFactory  # noqa: E402
from pytest_jetson.telemetry import jtop as jtop_source  # noqa: E402
from pytest_jetson.telemetry.base import TelemetryWarning  # noqa: E402
from pytest_jetson.telemetry.jtop import JtopSource, close_client  # noqa: E402
from pytest_jetson.telemetry.sampler import Sampler  # noqa: E402
from pytest_jetson.telemetry.select import open_source  # noqa: E402

VERSION = jtop.__version__
MAJOR = int(VERSION.split(".")[0])
#: A jetson-stats release other than the installed one, for a service left running on it.
OTHER = "4.2.12" if MAJOR >= 7 else "7.2.2"


@pytest.fixture
def service(tmp_path, monkeypatch):
    """Start the real service over a board tree; the client finds it where JTOP_PIPE says."""
    started = []
    monkeypatch.setattr(jtop.service, "JTOP_PIPE", str(tmp_path / "no-service.sock"))

    def start(name, version=None, board=None):
        svc = JtopService(board or tree(name), tmp_path / f"svc{len(started)}", version=version)
        started.append(svc)
        monkeypatch.setattr(jtop.service, "JTOP_PIPE", svc.socket)
        return svc

    close_client()
    yield start
    close_client()
    for svc in started:
        svc.stop()


def wait_samples(t, n, at_least, timeout=15.0):
    """Sleep ``at_least`` seconds, then until sampler ``t`` holds ``n`` samples: the service
    publishes on its own clock, which a loaded machine stretches."""
    time.sleep(at_least)
    end = time.monotonic() + timeout
    while t.peek().samples < n and time.monotonic() < end:
        time.sleep(0.05)
    return t.peek().samples


def first_reading(src, timeout=15.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = src.collect(time.perf_counter())
        if got:
            return got[0]
        time.sleep(0.05)
    raise AssertionError("no reading from the jtop service")


BOARDS = ["nano-jp46", "orin-nano-8gb-jp51", "orin-nano-8gb-super-jp62", "agx-orin-64gb-jp64", "agx-thor-jp70"]


@pytest.mark.parametrize("name", BOARDS)
def test_readings_through_the_real_client_and_service(service, name):
    m = meta(name)
    svc = service(name)
    assert JtopSource.probe() is None, svc.output()
    src = JtopSource()
    src.start(0.1)
    r = first_reading(src)
    # jtop keys the GPU by its device-tree name; Thor's GPU has none (jetson-stats issue #885)
    assert src.gpu_name == m["gpu_name"]
    if m["gpu_name"] is not None:
        assert r.gpu_clock_mhz == pytest.approx(m["gpu_clock_mhz"])
        assert r.gpu_util == m["gpu_load_pct"]
        assert src.max_gpu_clock_mhz() == pytest.approx(m["gpu_max_mhz"])
    else:
        assert r.gpu_clock_mhz is None and r.gpu_util is None
    for rail, mw in m["rails_mw"].items():
        assert r.rails_w[rail] * 1000 == pytest.approx(mw, abs=10), rail
    if m["board_rail"] == "VIN" and MAJOR < 7:
        # jetson-stats 4.x knows no INA238: its total is the module rails' sum
        assert src.power_basis == "sum of rails"
        assert r.board_power_w == pytest.approx(sum(m["rails_mw"].values()) / 1000, abs=0.03)
    else:
        assert src.power_basis == (m["board_rail"] or "sum of rails")
        assert r.board_power_w * 1000 == pytest.approx(m["board_power_mw"], abs=40)
    assert r.memory_bytes == m["memory_used_bytes"]
    if m["board_rail"] == "VIN" and MAJOR < 7:
        assert r.emc_util is None  # Thor's EMC paths came with jetson-stats 7 (pull request #825)
    else:
        assert r.emc_util == pytest.approx(m["emc_load_pct"], abs=1)  # jtop divides in integers
    for zone, temp in m["temps_c"].items():
        assert temp in r.temps_c.values(), zone
    assert src.power_mode() == m["power_mode"] and src.jetson_clocks() is False
    assert src.effective_interval == pytest.approx(0.1)


def test_freshness_comes_from_the_service_not_the_clock(service):
    svc = service("orin-nano-8gb-jp60")
    src = JtopSource()
    src.start(0.1)
    first_reading(src)
    svc.pause()  # the reader stops; the manager keeps serving its last data
    time.sleep(0.5)
    src.collect(time.perf_counter())
    client = jtop_source._Shared.client
    stamps = {client.stats["time"] for _ in range(3) if time.sleep(0.05) is None}
    assert len(stamps) == 3  # jtop's own 'time' moves on while the data is stale...
    time.sleep(0.4)
    assert src.collect(time.perf_counter()) == []  # ...so the source asks the service's uptime
    svc.resume()
    assert first_reading(src) is not None


def test_a_stalled_service_leaves_a_gap_not_repeated_samples(service):
    svc = service("orin-nano-8gb-jp60")
    factory = TelemetryFactory(source="jtop", interval="20ms")
    with factory.sample() as t:
        before = wait_samples(t, 2, 0.6)
        svc.pause()
        time.sleep(1.0)
        svc.resume()
        wait_samples(t, before + 2, 0.6)
    s = t.summary
    assert s.source == "jtop" and s.samples >= 4
    assert any(b - a >= 0.8 for a, b in s.gaps), s.gaps


def test_a_stalled_service_is_bridged_by_the_board_files(service, monkeypatch):
    svc = service("orin-nano-8gb-jp60")
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(svc.tree))  # this process reads the same board
    factory = TelemetryFactory(source="jtop", interval="20ms")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with factory.sample() as t:
            time.sleep(0.6)
            svc.pause()
            time.sleep(1.5)
            svc.resume()
            time.sleep(0.6)
    s = t.summary
    assert s.source == "jtop" and not any(b - a >= 1.0 for a, b in s.gaps), s.gaps
    said = [w for w in s.warnings if "read from the board's files" in w]
    assert said and any("read from the board's files" in str(w.message) for w in caught)
    assert s.power_mean_w is not None and s.power_mean_w > 0


def test_one_client_serves_the_session(service, monkeypatch):
    service("orin-nano-8gb-jp51")
    made = []

    class Counting(jtop.jtop):
        def __init__(self, *a, **kw):
            made.append(self)
            super().__init__(*a, **kw)

    monkeypatch.setattr(jtop, "jtop", Counting)
    factory = TelemetryFactory(source="jtop", interval="50ms")
    opened = None
    for _ in range(3):
        with factory.sample() as t:
            wait_samples(t, 1, 0.4)
        assert t.summary.samples >= 1 and t.summary.power_mean_w == pytest.approx(5.25, abs=0.05)
        # the first window may retry a client the service was too slow to answer (a loaded
        # machine); every later window uses the one that started
        opened = len(made) if opened is None else opened
    assert len(made) == opened and sum(c.is_alive() for c in made) == 1 and made[-1].is_alive()


def test_jetson_clocks_is_read_from_the_service(service):
    svc = service("orin-nano-8gb-jp51")
    src = JtopSource()
    src.start(0.1)
    first_reading(src)
    assert src.jetson_clocks() is False, svc.output()
    subprocess.run([sys.executable, str(FAKE_BIN / "jetson_clocks")], env={"PYTEST_JETSON_SYSROOT": str(svc.tree)},
                   check=True)
    end = time.monotonic() + 30
    while src.jetson_clocks() is not True and time.monotonic() < end:
        time.sleep(0.1)
    assert src.jetson_clocks() is True, svc.output()


def test_a_service_slower_than_asked_is_not_a_gap(service):
    service("orin-nano-8gb-jp51")
    first = jtop.jtop(interval=0.5)  # another client (a jtop window) started the service's timer
    first.start()
    try:
        with Sampler(JtopSource(), interval="20ms") as t:
            time.sleep(1.6)
        assert t.summary.interval == pytest.approx(0.5) and t.summary.gaps == []
    finally:
        first.close()


# -- when the service is not there or not the right one -------------------------------------------
def test_no_service_is_said_with_the_command_and_auto_falls_back(service, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no tegrastats either
    why = JtopSource.probe()
    assert why.startswith("the jtop service is not running: sudo systemctl restart jtop.service")
    assert ("jtop --install-service" in why) == (MAJOR >= 7)
    source, tried = open_source("auto", root=str(tree("orin-nano-8gb-jp60")))
    assert source.name == "sysfs" and tried[0] == ("jtop", why)
    with pytest.raises(TelemetryError, match="jtop is not available here: the jtop service is not running"):
        open_source("jtop")


def test_a_dead_service_socket_is_not_running(service, tmp_path):
    path = tmp_path / "stale.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))  # bound, never listening: what a crashed service leaves behind
    jtop.service.JTOP_PIPE = str(path)
    try:
        assert JtopSource.probe().startswith("the jtop service is not running")
    finally:
        sock.close()


def test_a_service_of_another_version_names_both_fixes(service, monkeypatch, tmp_path):
    service("orin-nano-8gb-jp60", version=OTHER)
    monkeypatch.setenv("PATH", str(tmp_path))
    why = JtopSource.probe()
    assert why == (f"the jtop service runs jetson-stats {OTHER} but this Python has {VERSION}: restart the "
                   f"service on {VERSION} (sudo systemctl restart jtop.service), or install the service's "
                   f"version here (pip install jetson-stats=={OTHER})")
    source, tried = open_source("auto", root=str(tree("orin-nano-8gb-jp60")))
    assert source.name == "sysfs" and tried[0] == ("jtop", why)


STOPPED = "the jtop service stopped answering: sudo systemctl restart jtop.service"


def test_the_service_stopping_mid_run_keeps_samples_and_warns(service):
    svc = service("orin-nano-8gb-jp51")
    with pytest.warns(TelemetryWarning, match="jtop stopped during the run"):
        with Sampler(JtopSource(), interval="20ms") as t:
            wait_samples(t, 2, 0.8)
            svc.stop()
            time.sleep(1.0)
    s = t.summary
    # the gap from the last sample to the end; a loaded machine may add gaps between samples
    last = float(t.series.t.max())
    assert s.samples >= 2 and s.gaps and s.gaps[-1][0] == pytest.approx(last) and s.gaps[-1][1] - s.gaps[-1][0] >= 0.8
    assert any(STOPPED in w for w in s.warnings), s.warnings


@pytest.mark.parametrize("exc", [
    jtop.JtopException("Lost connection with jtop server"),  # EOFError inside jtop's reading loop
    jtop.JtopException("Error connection"),  # the service's shared data came back empty
    ConnectionResetError(104, "Connection reset by peer"),  # the keep-alive met the closed socket
    BrokenPipeError(32, "Broken pipe"),
    EOFError(),
])
def test_a_client_that_lost_its_service_says_the_service_stopped(exc):
    """What the real client's thread stores when the service goes away mid-run: jtop wraps some of
    it, the socket's own errors come through bare; each reads as a stopped service, never as a
    client that could not start."""
    assert jtop_source.explain(exc, running=True) == STOPPED


def test_a_refused_connection_is_a_service_not_running_at_start_and_stopped_mid_run():
    refused = ConnectionRefusedError(111, "Connection refused")
    assert jtop_source.explain(refused).startswith("the jtop service is not running: sudo systemctl")
    assert jtop_source.explain(refused, running=True) == STOPPED


def test_a_board_tree_with_odd_files_still_serves(service, tmp_path):
    """jtop reads what the plugin's own readers refuse; the source takes what the service sends."""
    board = copy("orin-nano-8gb-jp60", tmp_path / "odd")
    (board / "sys/devices/virtual/thermal/thermal_zone8/temp").write_text("not a number\n")
    service("orin-nano-8gb-jp60", board=board)
    src = JtopSource()
    src.start(0.1)
    r = first_reading(src)
    assert "tj" not in {k.lower() for k in r.temps_c} and r.gpu_util == 99.0


def test_importing_the_source_does_not_import_jtop():
    out = subprocess.run([sys.executable, "-c", "import sys, pytest_jetson.telemetry.jtop; print('jtop' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert re.match(r"\d+\.\d+", VERSION)
