"""Detection of a real board from its files: every recorded board tree, the part-number table, the
ways a Super firmware shows, and the odd files a board (or a broken image) can have."""

import os
import re
import threading
from pathlib import Path

import pytest
from board_trees import ALL, PAIRS, copy, tree, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_jetson.cli import devices as devices_cli
from pytest_jetson.devices import detect as d
from pytest_jetson.devices.catalog import profiles
from pytest_jetson.devices.resolve import board_power_mode, resolve_device
from pytest_jetson.errors import ConfigError


@pytest.mark.parametrize("name,m", PAIRS, ids=ALL)
def test_every_recorded_board_is_identified_from_its_files(name, m):
    found = d.detect(tree(name))
    assert found.profile is not None and found.profile.id == m["profile"]
    assert found.matched_by == "compatible"
    assert found.compatible == tuple(m["compatible"])
    assert found.model_string == m["model"]
    assert found.super_firmware is m["super_firmware"]
    assert (found.l4t, found.jetpack) == (m["l4t"], m["jetpack"])
    assert found.power_mode == m["power_mode"] and found.power_mode_id == m["power_mode_id"]
    assert found.mode_table == {int(k): v for k, v in m["mode_table"].items()}
    assert found.jetson_clocks is False
    assert found.memory_bytes == m["memory_total_bytes"]
    assert found.is_jetson and found.notes == ()


def test_orin_on_jetpack5_is_found_though_its_model_lacks_jetson():
    found = d.detect(tree("orin-nano-8gb-jp51"))
    assert "jetson" not in found.model_string.lower()
    assert d.match_profile(found.model_string, found.memory_bytes, []) is None  # the old way failed
    assert found.profile.id == "orin-nano-8gb" and found.part_number == "p3767-0003"


def test_host_without_board_files_is_not_a_jetson(tmp_path):
    found = d.detect(tmp_path)
    assert not found.is_jetson and found.profile is None and found.notes == ()
    assert found.l4t is None and found.jetpack is None and found.compatible == ()


def test_the_part_number_table_agrees_with_the_profiles():
    for profile in profiles().values():
        for alias in profile.aliases:
            if re.fullmatch(r"p\d{4}-\d{4}", alias):
                assert profile.id in d.MODULES[alias].profiles, alias
    for part, module in d.MODULES.items():
        assert all(p in profiles() for p in module.profiles), part


def test_agx_orin_devkit_module_is_told_apart_by_memory(tmp_path):
    root = copy("agx-orin-64gb-jp64", tmp_path / "t")
    write(root, "sys/firmware/devicetree/base/compatible",
          b"nvidia,p3737-0000+p3701-0000\x00nvidia,p3701-0000\x00nvidia,tegra234\x00")
    assert d.detect(root).profile.id == "agx-orin-64gb"
    write(root, "proc/meminfo", "MemTotal:       30536100 kB\nMemAvailable:   20000000 kB")
    assert d.detect(root).profile.id == "agx-orin-32gb"


def test_a_module_without_a_profile_is_named_not_mistaken(tmp_path):
    root = copy("agx-xavier-jp51", tmp_path / "t")
    write(root, "proc/meminfo", "MemTotal:       15826756 kB\nMemAvailable:   15000000 kB")
    found = d.detect(root)
    assert found.profile is None and found.is_jetson
    assert any("15.1 GiB" in n and "matches no profile" in n for n in found.notes), found.notes
    nano2 = copy("nano-jp46", tmp_path / "n")
    write(nano2, "sys/firmware/devicetree/base/compatible", b"nvidia,p3542-0000+p3448-0003\x00nvidia,tegra210\x00")
    found = d.detect(nano2)
    assert found.profile is None and found.module == "Jetson Nano 2GB"
    assert any("has no pytest-jetson profile" in n for n in found.notes)
    with pytest.raises(ConfigError, match=r"looks like a Jetson \(Jetson Nano 2GB\).*--jetson-simulate"):
        resolve_device("nano", detection=found)


def test_an_unknown_part_number_falls_back_to_the_model_string(tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    write(root, "sys/firmware/devicetree/base/compatible", b"nvidia,p9999-0000\x00nvidia,tegra234\x00")
    found = d.detect(root)
    assert found.profile.id == "orin-nano-8gb" and found.matched_by == "model"
    assert any("p9999-0000" in n for n in found.notes)


@pytest.mark.parametrize("how", ["compatible", "model", "table"])
def test_super_firmware_shows_three_ways(tmp_path, how):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    assert d.detect(root).profile.id == "orin-nano-8gb"
    if how == "compatible":
        write(root, "sys/firmware/devicetree/base/compatible",
              b"nvidia,p3768-0000+p3767-0005-super\x00nvidia,p3767-0005\x00nvidia,tegra234\x00")
    elif how == "model":
        write(root, "sys/firmware/devicetree/base/model", b"NVIDIA Jetson Orin Nano Engineering Reference Developer Kit Super\x00")
    else:
        conf = (tree("orin-nano-8gb-super-jp62") / "etc/nvpmodel.conf").read_text()
        write(root, "etc/nvpmodel.conf", conf)
    found = d.detect(root)
    assert found.super_firmware is True and found.profile.id == "orin-nano-8gb-super"


# -- odd files --------------------------------------------------------------------------------------
def _detect_within(root, seconds=10.0):
    box = {}
    worker = threading.Thread(target=lambda: box.update(found=d.detect(root)), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "detect() blocked"
    return box["found"]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_in_place_of_the_model_neither_hangs_nor_raises(tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    model = root / "sys/firmware/devicetree/base/model"
    model.unlink()
    os.mkfifo(model)
    found = _detect_within(root)
    assert found.model_string is None and found.profile.id == "orin-nano-8gb"
    assert any("model is a FIFO, not a file: ignored" in n for n in found.notes)


def test_a_link_to_dev_zero_is_not_read(tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    (root / "etc/nv_tegra_release").unlink()
    os.symlink("/dev/zero", root / "etc/nv_tegra_release")
    found = _detect_within(root)
    assert found.l4t is None and found.profile.id == "orin-nano-8gb"
    assert "/etc/nv_tegra_release is a device file, not a file: ignored" in found.notes


def test_an_oversized_file_is_ignored_with_a_note(tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    write(root, "sys/firmware/devicetree/base/model", b"NVIDIA " * 100_000)
    found = d.detect(root)
    assert found.model_string is None and found.profile.id == "orin-nano-8gb"
    assert any("longer than" in n for n in found.notes)


def test_absurd_numbers_count_as_absent_with_a_note(tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    write(root, "var/lib/nvpmodel/status", "pmode:" + "9" * 5000 + " fmode:quiet")
    devfreq = root / "sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu"
    write(devfreq, "max_freq", "6²4750000")
    write(root, "proc/meminfo", "MemTotal:       " + "7" * 40 + " kB\nMemAvailable:  100 kB")
    found = d.detect(root)
    assert found.power_mode is None and found.jetson_clocks is None and found.memory_bytes is None
    assert found.profile.id == "orin-nano-8gb"  # the part number still names the board
    text = " ".join(found.notes)
    assert "power-mode id " + "9" * 24 + "... (5000 characters) is not an nvpmodel id" in text
    assert "max_freq holds '6²4750000', not a clock in Hz" in text
    assert "MemTotal " + "7" * 24 + "... (40 characters) kB is not a Jetson's memory" in text


def test_a_huge_mode_id_in_the_table_drops_that_mode_only(tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    conf = root / "etc/nvpmodel.conf"
    text = conf.read_text().replace("< POWER_MODEL ID=1 NAME=7W >", "< POWER_MODEL ID=" + "1" * 5000 + " NAME=7W >")
    write(root, "etc/nvpmodel.conf", text)
    found = d.detect(root)
    assert found.mode_table == {0: "15W"} and found.power_mode == "15W"
    assert any("is not an nvpmodel id: that mode is ignored" in n for n in found.notes)


def test_a_directory_in_place_of_a_file(tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    (root / "proc/meminfo").unlink()
    (root / "proc/meminfo").mkdir()
    found = d.detect(root)
    assert found.memory_bytes is None and "/proc/meminfo is a directory, not a file: ignored" in found.notes


IDENTITY = ["sys/firmware/devicetree/base/model", "sys/firmware/devicetree/base/compatible",
            "etc/nv_tegra_release", "var/lib/nvpmodel/status", "proc/meminfo",
            "sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu/max_freq"]


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(which=st.sampled_from(IDENTITY), data=st.binary(max_size=300))
def test_detect_never_raises_whatever_a_file_holds(tmp_path_factory, which, data):
    root = copy("orin-nano-8gb-jp60", tmp_path_factory.mktemp("t") / "t")
    write(root, which, data)
    found = d.detect(root)
    assert isinstance(found.notes, tuple)
    if which != "sys/firmware/devicetree/base/compatible":
        assert found.profile is not None  # the part number still names the board


@given(st.text(max_size=200))
def test_release_parser_never_raises(text):
    d.jetpack_for(text)
    d._RELEASE.search(text)


@pytest.mark.parametrize("l4t, jetpack", [("32.4.4", "4.4.1"), ("35.3.1", "5.1.1"), ("36.4.0", "6.1"),
                                          ("36.4.3", "6.2"), ("38.2.0", "7.0"), ("36.9.9", "L4T R36.9.9")])
def test_l4t_to_jetpack(l4t, jetpack):
    assert d.jetpack_for(l4t) == jetpack


# -- what the session makes of it -----------------------------------------------------------------
@pytest.mark.parametrize("name,m", PAIRS, ids=ALL)
def test_auto_runs_on_the_detected_board_in_its_mode(name, m):
    device = resolve_device("auto", detection=d.detect(tree(name)))
    assert not device.simulated and device.profile.id == m["profile"]
    assert device.power_mode.name == m["power_mode"] and device.jetson_clocks is False
    assert device.jetpack == m["jetpack"]


def test_another_board_than_the_one_present_is_a_usage_error():
    found = d.detect(tree("orin-nano-8gb-jp51"))
    with pytest.raises(ConfigError, match=r"asks for Jetson AGX Orin.*this board is Jetson Orin Nano 8GB.*--jetson-simulate"):
        resolve_device("agx-orin", detection=found)
    device = resolve_device("agx-orin", simulate=True, detection=found)
    assert device.simulated and device.profile.family == "agx-orin"


def test_expected_power_mode_must_match_the_board():
    found = d.detect(tree("orin-nano-8gb-jp51"))
    with pytest.raises(ConfigError, match=r"runs power mode 15W, not 7W.*sudo nvpmodel -m 1"):
        resolve_device("auto", power_mode="7W", detection=found)


def test_a_mode_of_the_profile_the_board_table_lacks_is_refused_by_name():
    found = d.detect(tree("orin-nano-8gb-super-jp62"))  # JetPack 6.2's table has no 7W (id 3)
    with pytest.raises(ConfigError, match=r"power mode 7W is not in this board's nvpmodel table.*"
                                          r"15W \(id 0\), 25W \(id 1\), MAXN_SUPER \(id 2\).*--jetson-power-mode"):
        board_power_mode(found.profile, found, "7W")
    with pytest.raises(ConfigError, match=r"'30W' does not exist on .*this board's modes are: 15W \(id 0\), "
                                          r"25W \(id 1\), MAXN_SUPER \(id 2\)\. Pass one of them to --power-mode"):
        board_power_mode(found.profile, found, "30W", option="--power-mode")
    assert board_power_mode(found.profile, found, "2").name == "MAXN_SUPER"


# -- pytest-jetson devices --detect ---------------------------------------------------------------
def test_devices_detect_prints_what_was_read(monkeypatch, capsys):
    monkeypatch.setenv(d.ROOT_ENV, str(tree("orin-nano-8gb-jp51")))
    assert devices_cli.main(["--detect"]) == 0
    out = capsys.readouterr().out
    assert "board        Jetson Orin Nano 8GB (orin-nano-8gb)" in out
    assert "found by     part number p3767-0003 in /proc/device-tree/compatible" in out
    assert "model        NVIDIA Orin Nano Developer Kit" in out
    assert "L4T          35.3.1 (JetPack 5.1.1)" in out
    assert "power mode   15W (id 0; table: 15W (0)*, 7W (1))" in out
    assert "notes        none" in out
    assert max(len(line) for line in out.splitlines()) <= 100


def test_devices_detect_shows_the_notes_of_odd_files(monkeypatch, capsys, tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    write(root, "var/lib/nvpmodel/status", "pmode:" + "9" * 5000)
    monkeypatch.setenv(d.ROOT_ENV, str(root))
    assert devices_cli.main(["--detect"]) == 0
    out = capsys.readouterr().out
    assert "power mode   unknown" in out and "is not an nvpmodel id" in out


def test_devices_detect_on_a_host_and_as_json(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv(d.ROOT_ENV, str(tmp_path))
    assert devices_cli.main(["--detect"]) == 0
    assert "not a Jetson" in capsys.readouterr().out
    monkeypatch.setenv(d.ROOT_ENV, str(tree("agx-thor-jp70")))
    assert devices_cli.main(["--detect", "--json"]) == 0
    import json

    data = json.loads(capsys.readouterr().out)
    assert data["profile"] == "agx-thor" and data["part_number"] == "p3834-0008" and data["notes"] == []


# -- pytest start-up on odd files ------------------------------------------------------------------
TEST_DEVICE = """
def test_device(jetson_device):
    print("DEVICE", jetson_device.id, jetson_device.power_mode.name, jetson_device.simulated)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_pytest_starts_on_a_board_with_odd_files(pytester, monkeypatch, tmp_path):
    root = copy("orin-nano-8gb-jp51", tmp_path / "t")
    write(root, "var/lib/nvpmodel/status", "pmode:" + "9" * 5000)
    write(root, "proc/meminfo", "MemTotal:       " + "9" * 60 + " kB")
    devfreq = root / "sys/devices/17000000.ga10b/devfreq/17000000.ga10b"
    write(devfreq, "min_freq", "3²6000000")
    (root / "etc/nv_tegra_release").unlink()
    os.mkfifo(root / "etc/nv_tegra_release")
    monkeypatch.setenv(d.ROOT_ENV, str(root))
    pytester.makepyfile(TEST_DEVICE)
    result = pytester.runpytest_subprocess("-s", timeout=120)
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["jetson: Jetson Orin Nano 8GB (real) · power mode 15W · JetPack - · TensorRT -",
                                 "*DEVICE orin-nano-8gb 15W False"])


# -- TensorRT's version from NvInferVersion.h (headers recorded in tests/data/tensorrt_headers) ----
HEADERS = Path(__file__).resolve().parents[1] / "data" / "tensorrt_headers"
_DPKG = "Package: tensorrt\nStatus: install ok installed\nVersion: 10.3.0.30-1+cuda12.5\n\n"


def _with_header(tmp_path, header_text):
    root = copy("agx-thor-jp70", tmp_path / "board")
    write(root, "usr/include/aarch64-linux-gnu/NvInferVersion.h", header_text)
    write(root, "var/lib/dpkg/status", _DPKG)  # what detection fell back to: a stale package
    return root


@pytest.mark.parametrize("header,version", [("NvInferVersion-10.13.0.h", "10.13.0"),
                                            ("NvInferVersion-8.5.2.h", "8.5.2")])
def test_tensorrt_version_is_read_from_the_real_header_old_and_new(tmp_path, header, version):
    root = _with_header(tmp_path, (HEADERS / header).read_text(encoding="utf-8"))
    found = d.detect(root)
    assert found.tensorrt == version
    assert not [n for n in found.notes if "TensorRT" in n or "NV_TENSORRT" in n]


def test_a_header_whose_version_names_no_number_says_so_once_and_uses_dpkg(tmp_path):
    text = (HEADERS / "NvInferVersion-10.13.0.h").read_text(encoding="utf-8")
    text = re.sub(r"(?m)^#define TRT_\w+_ENTERPRISE \d+\n", "", text)  # a layout this code does not know
    found = d.detect(_with_header(tmp_path, text))
    assert found.tensorrt == "10.3.0.30"
    said = [n for n in found.notes if "NV_TENSORRT" in n]
    assert said == ["/usr/include/aarch64-linux-gnu/NvInferVersion.h: NV_TENSORRT_MAJOR is "
                    "'TRT_MAJOR_ENTERPRISE', which the header does not define as a number; TensorRT's "
                    "version taken from dpkg (10.3.0.30)"]


# nvfancontrol's files as on a JetPack 5/6 board: the configuration's layout as NVIDIA ships it
# (and as MLPerf's Orin submission notes quote it), the status lines in the form `nvfancontrol -q`
# prints and jetson-stats parses (jtop/core/fan.py: "<fan>:FAN_PROFILE:<value>").
NVFAN_CONF = """POLLING_INTERVAL 2
<FAN 1>
\tTMARGIN ENABLED
\tFAN_PROFILE quiet {
\t\t#TEMP \tHYST\tPWM\tRPM
\t\t0\t0 \t0 \t0
\t}
\tFAN_PROFILE cool {
\t\t#TEMP \tHYST\tPWM\tRPM
\t\t0\t0 \t255 \t2900
\t}
\tFAN_DEFAULT_CONTROL close_loop
\tFAN_DEFAULT_PROFILE quiet
\tFAN_DEFAULT_GOVERNOR pid
"""
NVFAN_STATUS = "FAN1:FAN_PROFILE:cool\nFAN1:FAN_GOVERNOR:pid\nFAN1:FAN_CONTROL:close_loop\n"


def test_the_running_fan_profile_enters_the_fingerprint(tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "b")
    write(root, d.NVFAN_CONF, NVFAN_CONF)
    assert d.detect(root).fan_profile == "quiet"  # the default, until the daemon says otherwise
    write(root, d.NVFAN_STATUS, NVFAN_STATUS)
    found = d.detect(root)
    assert found.fan_profile == "cool"
    device = resolve_device("auto", root=root)
    assert device.fingerprint()["fan_profile"] == "cool"
    assert "fan cool" in device.header_line()


def test_a_board_without_nvfancontrol_has_no_fan_profile_field(tmp_path):
    device = resolve_device("auto", root=tree("nano-jp46"))
    assert device.fan_profile is None and "fan_profile" not in device.fingerprint()
