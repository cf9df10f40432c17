"""The sysfs source on every recorded board tree: rails and board power (INA3221 under iio on
JetPack 4, under hwmon on 5 and later, the Thor carrier's INA238), GPU clock and load, EMC,
temperatures, trip points and throttling; and odd files in the tree."""

import os
import threading
import time

import pytest
from board_trees import ALL, PAIRS, copy, tree, write

from pytest_jetson.telemetry.sampler import Sampler
from pytest_jetson.telemetry.select import open_source
from pytest_jetson.telemetry.sysfs import SysfsSource

#: An INA3221 reports whole mA: at 19 V a rail is known to within 10 mW.
RAIL_MW = 10.0


@pytest.mark.parametrize("name,m", PAIRS, ids=ALL)
def test_every_board_reads_as_its_tools_print_it(name, m):
    src = SysfsSource(root=str(tree(name)))
    assert src.probe_instance() is None
    r = src.read(1.0)
    expected_rails = dict(m["rails_mw"])
    if m["board_rail"] == "VIN":
        expected_rails["VIN"] = m["board_power_mw"]
    assert set(r.rails_w) == set(expected_rails)
    for rail, mw in expected_rails.items():
        assert r.rails_w[rail] * 1000 == pytest.approx(mw, abs=RAIL_MW), rail
    assert src.power_basis == (m["board_rail"] or "sum of rails")
    assert r.board_power_w * 1000 == pytest.approx(m["board_power_mw"], abs=RAIL_MW * len(expected_rails))
    assert r.gpu_clock_mhz == pytest.approx(m["gpu_clock_mhz"])
    assert src.max_gpu_clock_mhz() == pytest.approx(m["gpu_max_mhz"])
    assert r.gpu_util == m["gpu_load_pct"]
    assert r.emc_util == pytest.approx(m["emc_load_pct"])
    assert r.temps_c == m["temps_c"]
    assert src.trip_points_c() == m["trip_points_c"]
    assert r.memory_bytes == m["memory_used_bytes"]
    assert r.throttle == []


def test_orin_on_jetpack5_has_a_gpu_clock():
    """Its devfreq node is 17000000.ga10b, a name the source did not know."""
    r = SysfsSource(root=str(tree("orin-nano-8gb-jp51"))).read(0.0)
    assert r.gpu_clock_mhz == pytest.approx(306.0) and r.gpu_util == 0.0


def test_thor_board_power_is_the_carrier_vin_rail_not_the_module_rails():
    src = SysfsSource(root=str(tree("agx-thor-jp70")))
    r = src.read(0.0)
    module = r.rails_w["VDD_GPU"] + r.rails_w["VDD_CPU_SOC_MSS"] + r.rails_w["VIN_SYS_5V0"]
    assert src.power_basis == "VIN" and r.board_power_w == pytest.approx(28.906)
    assert module == pytest.approx(8.29, abs=0.01) and r.board_power_w > 3 * module


def test_jetpack4_iio_rails_are_milliwatts():
    r = SysfsSource(root=str(tree("nano-jp46"))).read(0.0)
    assert r.rails_w == {"POM_5V_IN": 4.52, "POM_5V_GPU": 0.0, "POM_5V_CPU": 1.078}
    assert r.board_power_w == 4.52


def test_unconnected_channels_and_the_shunt_sum_are_not_rails():
    r = SysfsSource(root=str(tree("agx-orin-64gb-jp64"))).read(0.0)
    assert "NC" not in r.rails_w and not any("shunt" in k for k in r.rails_w)
    assert r.board_power_w == pytest.approx(2.34 + 0.39 + 4.025 + 0.301, abs=0.01)


def test_a_zone_past_its_passive_trip_is_reported_as_throttling(tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    write(root, "sys/devices/virtual/thermal/thermal_zone1/temp", 99500)  # gpu-thermal, passive at 99 C
    src = SysfsSource(root=str(root))
    r = src.read(0.0)
    assert r.throttle == ["thermal zone gpu-thermal at 99.5 C, at or past its passive trip point 99 C "
                          "(the kernel slows the clocks there)"]
    with Sampler(src, interval="10ms") as t:
        time.sleep(0.05)
    assert t.summary.throttled and any("gpu-thermal" in reason for reason in t.summary.throttle_reasons)


def test_no_power_monitor_is_explained(tmp_path):
    why = SysfsSource(root=str(tmp_path)).probe_instance()
    assert "no INA3221/INA238 power monitor under" in why


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_odd_files_cost_a_value_never_a_hang(tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    hw = root / "sys/devices/platform/i2c-1/1-0040/hwmon/hwmon1"
    src = SysfsSource(root=str(root))
    assert src.probe_instance() is None  # rails found while the files were sane
    (hw / "curr2_input").unlink()
    os.mkfifo(hw / "curr2_input")
    write(hw, "curr3_input", "5²4")
    write(root, "sys/devices/platform/bus@0/17000000.gpu/load", "9" * 5000)
    box = {}
    worker = threading.Thread(target=lambda: box.update(r=src.read(0.0)), daemon=True)
    worker.start()
    worker.join(10)
    assert not worker.is_alive(), "a FIFO hung the read"
    r = box["r"]
    assert set(r.rails_w) == {"VDD_IN"} and r.gpu_util is None
    assert r.board_power_w == pytest.approx(16.32, abs=0.01)


def test_auto_falls_back_to_sysfs_and_says_why(monkeypatch, tmp_path):
    import sys

    monkeypatch.setenv("PATH", str(tmp_path))  # no tegrastats here
    monkeypatch.setitem(sys.modules, "jtop", None)
    source, tried = open_source("auto", root=str(tree("xavier-nx-jp51")))
    assert source.name == "sysfs"
    assert [name for name, _ in tried] == ["jtop", "tegrastats"]


def test_the_sysroot_is_where_a_plain_source_reads(monkeypatch):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tree("tx2-jp46")))
    assert SysfsSource().read(0.0).board_power_w == pytest.approx(1.649)
    assert SysfsSource(root="/").root == tree("tx2-jp46")


def test_sampler_on_sysfs_reads_changing_files(tmp_path):
    root = copy("orin-nano-8gb-jp51", tmp_path / "t")
    hw = root / "sys/devices/platform/i2c-1/1-0040/hwmon/hwmon3"
    src = SysfsSource(root=str(root))
    with Sampler(src, interval="10ms") as t:
        time.sleep(0.1)
        write(hw, "curr1_input", 3000)  # the load starts: 5 V x 3 A
        time.sleep(0.1)
    s = t.summary
    assert s.source == "sysfs" and s.power_basis == "VDD_IN"
    assert s.power_peak_w == pytest.approx(15.0)
    assert 5.25 < s.power_mean_w < 15.0
    assert s.rails["VDD_SOC"]["peak_w"] == pytest.approx(2.72)
    assert s.gpu_clock_max_mode_mhz == pytest.approx(624.75)
    assert s.emc_util_mean == pytest.approx(15.0)


def test_the_class_probe_says_why_for_a_root(tmp_path):
    assert SysfsSource.probe(str(tree("agx-thor-jp70"))) is None
    assert "no INA3221/INA238 power monitor" in SysfsSource.probe(str(tmp_path))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc")
def test_files_stay_open_between_samples_and_close_on_stop():
    from pytest_jetson.telemetry.host import HostSource

    def open_fds():
        return len(os.listdir("/proc/self/fd"))

    before = open_fds()
    sources = [SysfsSource(root=str(tree(ALL[0]))), HostSource()]
    for src in sources:
        src.read(1.0)
    held = open_fds()
    assert held > before + 2  # the rails, clocks, zones and the stat file, kept for the next sample
    for src in sources:
        src.read(2.0)
    assert open_fds() == held  # read again in place, not reopened
    for src in sources:
        src.stop()
    assert open_fds() == before
