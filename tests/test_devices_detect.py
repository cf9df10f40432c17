"""Detection of a real board from its files, through a fake root directory."""

import pytest
from boards import write_board
from hypothesis import given
from hypothesis import strategies as st

from pytest_jetson.devices import detect as d
from pytest_jetson.devices.resolve import resolve_device
from pytest_jetson.errors import ConfigError
from pytest_jetson.settings import Settings


def test_host_without_board_files_is_not_a_jetson(tmp_path):
    found = d.detect(tmp_path)
    assert not found.is_jetson
    assert found.profile is None and found.l4t is None and found.jetpack is None


def test_orin_nano_devkit_is_detected_with_its_software(tmp_path):
    found = d.detect(write_board(tmp_path, "orin-nano", clocks=True))
    assert found.profile.id == "orin-nano-8gb"
    assert found.model_string == "NVIDIA Jetson Orin Nano Developer Kit"  # NUL stripped
    assert found.l4t == "36.3.0" and found.jetpack == "6.0"
    assert found.power_mode == "15W"
    assert found.jetson_clocks is True
    assert found.tensorrt == "8.6.2"


def test_super_power_table_picks_the_super_profile(tmp_path):
    found = d.detect(write_board(tmp_path, "orin-nano-super"))
    assert found.profile.id == "orin-nano-8gb-super"
    assert found.power_mode == "MAXN_SUPER"
    assert found.jetpack == "6.2"
    assert found.jetson_clocks is False


def test_nano_on_jetpack_4(tmp_path):
    found = d.detect(write_board(tmp_path, "nano"))
    assert found.profile.id == "nano"
    assert found.l4t == "32.7.1" and found.jetpack == "4.6.1"
    assert found.power_mode == "5W"


def test_unknown_l4t_release_is_shown_raw(tmp_path):
    release = "# R41 (release), REVISION: 1.0, GCID: 1, BOARD: generic, EABI: aarch64, DATE: x\n"
    found = d.detect(write_board(tmp_path, "orin-nano", release=release))
    assert found.l4t == "41.1.0"
    assert found.jetpack == "L4T R41.1.0"


def test_garbled_release_and_odd_model_string_never_raise(tmp_path):
    found = d.detect(write_board(tmp_path, "orin-nano", release="garbage\x00\xff",
                                 model=b"\xff\xfeNVIDIA Jetson Orin Nano Developer Kit\x00\x00\x00"))
    assert found.l4t is None and found.jetpack is None
    assert found.profile is not None and found.profile.id == "orin-nano-8gb"


def test_power_mode_id_missing_from_the_table_is_reported_as_its_id(tmp_path):
    found = d.detect(write_board(tmp_path, "orin-nano", mode=7))
    assert found.power_mode == "7"


@given(st.text(max_size=200))
def test_release_parser_never_raises(text):
    d.jetpack_for(text)
    d._RELEASE.search(text)


@pytest.mark.parametrize("l4t, jetpack", [("32.4.4", "4.4.1"), ("35.3.1", "5.1.1"), ("36.4.0", "6.1"),
                                          ("36.4.3", "6.2"), ("36.9.9", "L4T R36.9.9")])
def test_l4t_to_jetpack(l4t, jetpack):
    assert d.jetpack_for(l4t) == jetpack


def test_auto_uses_the_detected_board(tmp_path):
    found = d.detect(write_board(tmp_path, "orin-nano", clocks=True))
    device = resolve_device(Settings(device="auto"), found)
    assert not device.simulated and device.profile.id == "orin-nano-8gb"
    assert device.power_mode.name == "15W" and device.jetson_clocks is True
    assert device.header_line() == (
        "jetson: Jetson Orin Nano 8GB (real) · power mode 15W · jetson_clocks on · JetPack 6.0 · TensorRT 8.6.2"
    )


def test_auto_on_a_host_simulates_an_orin_nano(tmp_path):
    device = resolve_device(Settings(device="auto"), d.detect(tmp_path))
    assert device.simulated and device.profile.id == "orin-nano-8gb"
    assert device.header_line() == "jetson: Jetson Orin Nano 8GB (simulated) · power mode 15W · JetPack - · TensorRT -"


def test_another_board_than_the_one_present_is_a_usage_error(tmp_path):
    found = d.detect(write_board(tmp_path, "orin-nano"))
    with pytest.raises(ConfigError, match=r"asks for Jetson AGX Orin.*this board is Jetson Orin Nano 8GB.*--jetson-simulate"):
        resolve_device(Settings(device="agx-orin"), found)
    device = resolve_device(Settings(device="agx-orin", simulate=True), found)
    assert device.simulated and device.profile.family == "agx-orin"


def test_expected_power_mode_must_match_the_board(tmp_path):
    found = d.detect(write_board(tmp_path, "orin-nano"))
    with pytest.raises(ConfigError, match=r"runs power mode 15W, not 7W.*sudo nvpmodel -m 1"):
        resolve_device(Settings(device="auto", power_mode="7W"), found)
