"""The sysfs source against a fake sysfs tree laid out like a real Jetson's."""

from pathlib import Path

import pytest

from pytest_jetson.telemetry.sampler import Sampler
from pytest_jetson.telemetry.select import open_source
from pytest_jetson.telemetry.sysfs import SysfsSource


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text + "\n")


@pytest.fixture
def orin_nano_root(tmp_path):
    """An Orin Nano (JetPack 6): one INA3221 under hwmon, GPU devfreq, thermal zones."""
    hw = "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon3"
    for n, (label, mv, ma) in enumerate([("VDD_IN", 5048, 1862), ("VDD_CPU_GPU_CV", 5032, 455), ("VDD_SOC", 5024, 352)], 1):
        write(tmp_path, f"{hw}/in{n}_label", label)
        write(tmp_path, f"{hw}/in{n}_input", str(mv))
        write(tmp_path, f"{hw}/curr{n}_input", str(ma))
    write(tmp_path, f"{hw}/in4_label", "sum of shunt voltages")  # present on real boards, not a rail
    write(tmp_path, "sys/devices/platform/gpu.0/load", "873")
    write(tmp_path, "sys/class/devfreq/17000000.gpu/cur_freq", "612000000")
    write(tmp_path, "sys/class/devfreq/17000000.gpu/max_freq", "624750000")
    zones = [("cpu-thermal", "48562", [("passive", "99000"), ("critical", "104500")]),
             ("gpu-thermal", "49625", [("passive", "99000")]),
             ("cv0-thermal", "-256000", [])]
    for i, (kind, temp, trips) in enumerate(zones):
        write(tmp_path, f"sys/class/thermal/thermal_zone{i}/type", kind)
        write(tmp_path, f"sys/class/thermal/thermal_zone{i}/temp", temp)
        for j, (ttype, ttemp) in enumerate(trips):
            write(tmp_path, f"sys/class/thermal/thermal_zone{i}/trip_point_{j}_type", ttype)
            write(tmp_path, f"sys/class/thermal/thermal_zone{i}/trip_point_{j}_temp", ttemp)
    write(tmp_path, "proc/meminfo", "MemTotal:        7802552 kB\nMemFree:         4316240 kB\nMemAvailable:    6204936 kB")
    return tmp_path


@pytest.fixture
def nano_jp4_root(tmp_path):
    """A Nano (JetPack 4): the ina3221x iio driver, power in mW."""
    dev = "sys/bus/i2c/drivers/ina3221x/6-0040/iio:device0"
    for k, (name, mw) in enumerate([("POM_5V_IN", 4520), ("POM_5V_GPU", 0), ("POM_5V_CPU", 1078)]):
        write(tmp_path, f"{dev}/rail_name_{k}", name)
        write(tmp_path, f"{dev}/in_power{k}_input", str(mw))
    write(tmp_path, "sys/devices/gpu.0/load", "0")
    return tmp_path


def test_hwmon_rails_power_is_volts_times_amps(orin_nano_root):
    r = SysfsSource(root=str(orin_nano_root)).read(1.0)
    assert r.rails_w == pytest.approx({"VDD_IN": 5.048 * 1.862, "VDD_CPU_GPU_CV": 5.032 * 0.455, "VDD_SOC": 5.024 * 0.352})
    assert r.board_power_w == pytest.approx(5.048 * 1.862)
    assert r.gpu_util == pytest.approx(87.3)
    assert r.gpu_clock_mhz == pytest.approx(612.0)
    assert r.temps_c == {"cpu-thermal": 48.562, "gpu-thermal": 49.625}
    assert r.memory_bytes == (7802552 - 6204936) * 1024


def test_iio_rails_of_jetpack4(nano_jp4_root):
    src = SysfsSource(root=str(nano_jp4_root))
    assert src.probe_instance() is None
    r = src.read(0.0)
    assert r.rails_w == {"POM_5V_IN": 4.52, "POM_5V_GPU": 0.0, "POM_5V_CPU": 1.078}
    assert r.board_power_w == 4.52 and src.power_basis == "POM_5V_IN"
    assert r.gpu_util == 0.0


def test_mode_limits_and_trip_points(orin_nano_root):
    src = SysfsSource(root=str(orin_nano_root))
    assert src.max_gpu_clock_mhz() == pytest.approx(624.75)
    assert src.trip_points_c() == {"cpu-thermal": 99.0, "gpu-thermal": 99.0}


def test_no_rails_is_explained(tmp_path):
    why = SysfsSource(root=str(tmp_path)).probe_instance()
    assert "no INA3221 power rails" in why


def test_auto_falls_back_to_sysfs_and_says_why(orin_nano_root, monkeypatch):
    monkeypatch.setenv("PATH", str(orin_nano_root))  # no tegrastats here
    source, tried = open_source("auto", root=str(orin_nano_root))
    assert source.name == "sysfs"
    assert [name for name, _ in tried] == ["jtop", "tegrastats"]


def test_sampler_on_sysfs_reads_changing_files(orin_nano_root):
    hw = orin_nano_root / "sys/bus/i2c/drivers/ina3221/1-0040/hwmon/hwmon3"
    src = SysfsSource(root=str(orin_nano_root))
    with Sampler(src, interval="10ms") as t:
        import time

        time.sleep(0.1)
        (hw / "curr1_input").write_text("3000\n")  # the load starts: 5.048 V x 3 A
        time.sleep(0.1)
    s = t.summary
    assert s.source == "sysfs" and s.power_basis == "VDD_IN"
    assert s.power_peak_w == pytest.approx(5.048 * 3.0)
    assert 5.048 * 1.862 < s.power_mean_w < 5.048 * 3.0
    assert s.rails["VDD_SOC"]["peak_w"] == pytest.approx(5.024 * 0.352)
    assert s.gpu_clock_max_mode_mhz == pytest.approx(624.75)
    assert not s.throttled  # 612 of 624.75 MHz is within 5 %
