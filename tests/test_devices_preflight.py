"""`pytest-jetson preflight` on fake boards: each check, its message and its exit code."""

import json

import pytest
from boards import write_board

from pytest_jetson.cli import preflight as preflight_cli


@pytest.fixture
def board(tmp_path, monkeypatch):
    def make(name="orin-nano", gpu_load=0, loadavg="0.10 0.20 0.30 1/100 999", **kw):
        root = write_board(tmp_path / "root", name, **kw)
        (root / "sys/devices/gpu.0").mkdir(parents=True, exist_ok=True)
        (root / "sys/devices/gpu.0/load").write_text(f"{gpu_load}\n")
        (root / "proc/loadavg").write_text(loadavg + "\n")
        (root / "proc/cpuinfo").write_text("processor\t: 0\nprocessor\t: 1\n")
        monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(root))
        return root
    return make


def run(capsys, *args):
    code = preflight_cli.main(["--samples", "1", *args])
    return code, capsys.readouterr().out


def test_ready_board_passes(board, capsys):
    board(clocks=True)
    code, out = run(capsys, "--device", "orin-nano", "--power-mode", "15W", "--require-jetson-clocks")
    assert code == 0, out
    assert "ok    power mode: 15W" in out and "preflight passed" in out


def test_not_a_jetson(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(tmp_path))
    code, out = run(capsys)
    assert code == 1 and "FAIL  not a Jetson" in out


def test_wrong_power_mode_names_the_fix(board, capsys):
    board(mode=1)
    code, out = run(capsys, "--power-mode", "15W")
    assert code == 1
    assert "FAIL  power mode: the board runs 7W, the baselines need 15W: sudo nvpmodel -m 0" in out


def test_power_mode_comes_from_the_baselines(board, capsys, tmp_path):
    board(mode=1)
    base = tmp_path / "baselines" / "orin-nano-8gb"
    base.mkdir(parents=True)
    (base / "test_x.json").write_text(json.dumps({"schema": 1, "entries": {"t::a": {"fingerprint": {"power_mode": "15W"}}}}))
    code, out = run(capsys, "--baselines", str(base))
    assert code == 1 and "the baselines need 15W" in out


def test_clocks_off_and_busy_gpu_and_cpu(board, capsys):
    board(gpu_load=873, loadavg="3.50 3.0 2.0 5/100 999")
    code, out = run(capsys, "--require-jetson-clocks")
    assert code == 1
    assert "FAIL  jetson_clocks: off: sudo jetson_clocks" in out
    assert "FAIL  GPU busy: load 87% > 10%" in out
    assert "FAIL  CPU busy: load 1.75 per core > 0.50" in out


def test_wrong_board(board, capsys):
    board()
    code, out = run(capsys, "--device", "agx-orin")
    assert code == 1 and "FAIL  device: expected Jetson AGX Orin" in out


def test_baselines_in_several_modes_need_the_mode_named(board, capsys, tmp_path):
    board(mode=0)
    base = tmp_path / "baselines" / "orin-nano-8gb"
    base.mkdir(parents=True)
    entries = {"t::a": {"fingerprint": {"power_mode": "15W"}}, "t::b": {"fingerprint": {"power_mode": "7W"}}}
    (base / "test_x.json").write_text(json.dumps({"schema": 1, "entries": entries}))
    code, out = run(capsys, "--baselines", str(base))
    assert code == 1 and "recorded in several power modes (15W, 7W); pass --power-mode" in out
    code, out = run(capsys, "--baselines", str(base), "--power-mode", "15W")
    assert code == 0, out


def test_no_baselines_in_the_named_mode(board, capsys, tmp_path):
    board(mode=1)
    base = tmp_path / "baselines" / "orin-nano-8gb"
    base.mkdir(parents=True)
    (base / "test_x.json").write_text(json.dumps({"schema": 1, "entries": {"t::a": {"fingerprint": {"power_mode": "15W"}}}}))
    code, out = run(capsys, "--baselines", str(base), "--power-mode", "7W")
    assert code == 1 and "no baselines in" in out and "recorded in power mode 7W" in out
