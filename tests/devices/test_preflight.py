"""`pytest-jetson preflight` on every recorded board tree: each check, its message, its fix and the
exit code."""

import json

import pytest
from board_trees import ALL, PAIRS, copy, tree, write

from pytest_jetson import preflight_checks as pf
from pytest_jetson.cli import preflight as preflight_cli
from pytest_jetson.devices.detect import ROOT_ENV, detect


def run(capsys, monkeypatch, root, *args):
    monkeypatch.setenv(ROOT_ENV, str(root))
    code = preflight_cli.main(["--samples", "1", *args])
    return code, capsys.readouterr().out


def checks(root, **kw):
    kw.setdefault("samples", 1)
    return {c.name: c for c in pf.run_checks(detect(root), root, **kw)}


@pytest.mark.parametrize("name,m", PAIRS, ids=ALL)
def test_every_check_on_every_board(name, m):
    other = next(v for k, v in sorted(m["mode_table"].items()) if v != m["power_mode"])
    other_id = next(k for k, v in m["mode_table"].items() if v == other)
    found = checks(tree(name), device=m["profile"], power_mode=m["power_mode"], require_clocks=True)
    assert list(found) == ["board", "device", "power mode", "jetson_clocks", "GPU idle", "CPU idle",
                           "thermal headroom", "free memory"]
    assert found["board"].status == pf.OK and found["board"].message.startswith(detect(tree(name)).profile.name)
    assert found["device"].status == pf.OK
    assert found["power mode"].status == pf.OK and m["power_mode"] in found["power mode"].message
    # jetson_clocks is off on every recorded board
    assert (found["jetson_clocks"].status, found["jetson_clocks"].fix) == (pf.FAIL, "sudo jetson_clocks")
    gpu = found["GPU idle"]
    if m["gpu_load_pct"] is None:  # Thor has no load file
        assert gpu.status == pf.SKIP and "nvidia-smi" in gpu.fix
    else:
        assert gpu.status == (pf.FAIL if m["gpu_load_pct"] > pf.MAX_GPU_LOAD_PCT else pf.OK)
        assert f"load {m['gpu_load_pct']:.0f}%" in gpu.message
    assert found["CPU idle"].status == pf.OK
    coolest_margin = min(m["trip_points_c"][z] - m["temps_c"][z] for z in m["trip_points_c"] if z in m["temps_c"])
    assert found["thermal headroom"].status == pf.OK
    assert found["thermal headroom"].message.startswith(f"{coolest_margin:.1f} C")
    free = m["memory_total_bytes"] - m["memory_used_bytes"]
    assert found["free memory"].status == (pf.OK if free >= pf.MIN_FREE_MEMORY else pf.FAIL)
    wrong = checks(tree(name), device="orin-nano" if m["profile"] != "orin-nano-8gb" else "agx-orin",
                   power_mode=other)
    assert wrong["device"].status == pf.FAIL and "--device " + m["profile"] in wrong["device"].fix
    assert wrong["power mode"].status == pf.FAIL
    assert wrong["power mode"].fix == f"sudo nvpmodel -m {other_id}"
    assert f"the board runs {m['power_mode']} (id {m['power_mode_id']})" in wrong["power mode"].message


def test_a_ready_board_passes_and_says_so(capsys, monkeypatch, tmp_path):
    root = copy("orin-nano-8gb-jp51", tmp_path / "t")
    devfreq = root / "sys/devices/17000000.ga10b/devfreq/17000000.ga10b"
    write(devfreq, "min_freq", (devfreq / "max_freq").read_text())  # what jetson_clocks does
    code, out = run(capsys, monkeypatch, root, "--device", "orin-nano", "--power-mode", "15W", "--require-jetson-clocks")
    assert code == 0, out
    assert "ok    power mode: 15W (id 0); --power-mode asks for 15W" in out
    assert "ok    jetson_clocks: on" in out and "preflight passed: the board is ready" in out


def test_not_a_jetson(capsys, monkeypatch, tmp_path):
    code, out = run(capsys, monkeypatch, tmp_path)
    assert code == 1 and "FAIL  board: not a Jetson" in out and "runner labelled for a Jetson" in out


def test_a_board_without_a_profile_stops_with_the_notes(capsys, monkeypatch, tmp_path):
    root = copy("nano-jp46", tmp_path / "t")
    write(root, "sys/firmware/devicetree/base/compatible", b"nvidia,p3542-0000+p3448-0003\x00nvidia,tegra210\x00")
    code, out = run(capsys, monkeypatch, root)
    assert code == 1
    assert "note  files: Jetson Nano 2GB (p3448-0003) has no pytest-jetson profile" in out
    assert "FAIL  board: Jetson Nano 2GB matches no known profile: add one under" in out
    assert "GPU idle" not in out  # the board's numbers would describe an unknown machine


def test_a_mode_the_board_does_not_have_names_its_modes(capsys, monkeypatch):
    code, out = run(capsys, monkeypatch, tree("agx-thor-jp70"), "--power-mode", "15W")
    assert code == 1
    assert ("FAIL  power mode: power mode '15W' does not exist on Jetson AGX Thor; this board's modes are: "
            "MAXN (id 0), 120W (id 1), 90W (id 2), 70W (id 3). Pass one of them to --power-mode") in out


def test_a_hot_board_has_no_thermal_headroom(capsys, monkeypatch, tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    write(root, "sys/devices/virtual/thermal/thermal_zone8/temp", 91500)  # tj-thermal, trip 99 C
    code, out = run(capsys, monkeypatch, root)
    assert code == 1
    assert ("FAIL  thermal headroom: 7.5 C (tj-thermal at 91.5 C, trip point 99 C) < 15 C: the clocks would "
            "throttle during the run: let the board cool down") in out


def test_busy_cpu_and_short_memory_name_their_fix(capsys, monkeypatch, tmp_path):
    root = copy("xavier-nx-jp51", tmp_path / "t")
    write(root, "proc/loadavg", "9.00 8.0 7.0 9/300 999")
    code, out = run(capsys, monkeypatch, root, "--min-free-memory", "4GiB")
    assert code == 1
    assert "FAIL  CPU idle: load 1.50 per core > 0.50: another job is running on the board" in out  # 6 cores
    assert "FAIL  free memory: 3.6 GiB available of 6.69 GiB < 4 GiB" in out and "free -h" in out


def test_a_busy_gpu(capsys, monkeypatch):
    code, out = run(capsys, monkeypatch, tree("orin-nano-8gb-jp60"))
    assert code == 1 and "FAIL  GPU idle: load 99% > 10%: another job is using the GPU" in out


def test_power_mode_comes_from_the_baselines(capsys, monkeypatch, tmp_path):
    base = tmp_path / "baselines" / "orin-nano-8gb"
    base.mkdir(parents=True)
    (base / "test_x.json").write_text(json.dumps({"schema": 1, "entries": {"t::a": {"fingerprint": {"power_mode": "7W"}}}}))
    code, out = run(capsys, monkeypatch, tree("orin-nano-8gb-jp51"), "--baselines", str(base))
    assert code == 1
    assert (f"FAIL  power mode: the board runs 15W (id 0); the baselines in {base} were recorded in 7W: "
            "sudo nvpmodel -m 1") in out


def test_baselines_in_several_modes_need_the_mode_named(capsys, monkeypatch, tmp_path):
    base = tmp_path / "baselines"
    base.mkdir()
    entries = {"t::a": {"fingerprint": {"power_mode": "15W"}}, "t::b": {"fingerprint": {"power_mode": "7W"}}}
    (base / "test_x.json").write_text(json.dumps({"schema": 1, "entries": entries}))
    root = tree("orin-nano-8gb-jp51")
    code, out = run(capsys, monkeypatch, root, "--baselines", str(base))
    assert code == 1 and "recorded in several power modes (15W, 7W): pass --power-mode" in out
    assert checks(root, baselines=base, power_mode="15W")["power mode"].status == pf.OK
    found = checks(root, baselines=base, power_mode="MAXN_SUPER")["power mode"]
    assert found.status == pf.FAIL and "does not exist" in found.message


def test_no_expected_mode_is_reported_not_passed():
    found = checks(tree("tx2-jp46"))["power mode"]
    assert found.status == pf.SKIP and found.message == "the board runs MAXN (id 0); nothing to check it against"


def test_preflight_and_the_plugin_agree_on_valid_modes():
    from pytest_jetson.devices.resolve import resolve_device
    from pytest_jetson.errors import ConfigError

    root = tree("orin-nano-8gb-super-jp62")
    for mode in ["15W", "25W", "MAXN_SUPER", "7W", "MAXN", "0", "3"]:
        check = checks(root, power_mode=mode)["power mode"]
        try:
            resolve_device("auto", power_mode=mode, detection=detect(root))
            plugin_valid = True
        except ConfigError as exc:
            plugin_valid = "not, " not in str(exc) and "runs power mode" in str(exc)
        preflight_valid = check.status == pf.OK or "the board runs" in check.message
        assert plugin_valid == preflight_valid, (mode, check)


# -- --wait: a board that cools down and falls idle while preflight waits ---------------------------
GPU_LOAD = "sys/devices/platform/bus@0/17000000.gpu/load"  # per mille
TJ_TEMP = "sys/devices/virtual/thermal/thermal_zone8/temp"  # tj-thermal, trip point 99 C


class Settling:
    """A clock and a sleep that write the board's next readings as time passes: the tree's files
    change between two re-checks as they would on a board that cools and whose other job ends."""

    def __init__(self, root, steps):
        self.root, self.steps, self.t, self.slept = root, list(steps), 0.0, []

    def now(self):
        return self.t

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.t += seconds
        if self.steps:
            for rel, value in self.steps.pop(0).items():
                write(self.root, rel, value)


def test_wait_lets_a_hot_busy_board_settle(capsys, monkeypatch, tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    write(root, TJ_TEMP, 91500)
    board = Settling(root, [{GPU_LOAD: 500}, {GPU_LOAD: 0, TJ_TEMP: 88000}, {TJ_TEMP: 60000}])
    monkeypatch.setenv(ROOT_ENV, str(root))
    code = preflight_cli.main(["--samples", "1", "--min-free-memory", "512MiB", "--wait", "2min", "--wait-poll", "10s"],
                              now=board.now, sleep=board.sleep)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "wait  up to 120 s for: GPU idle, thermal headroom" in out
    assert "wait  ready after 30 s" in out and board.slept == [10.0, 10.0, 10.0]
    assert "ok    GPU idle: load 0% (limit 10%)" in out
    assert "ok    thermal headroom: 39.0 C (tj-thermal at 60.0 C" in out
    assert "preflight passed: the board is ready" in out


def test_wait_gives_up_at_its_bound_with_the_fix(capsys, monkeypatch, tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")
    write(root, GPU_LOAD, 0)
    write(root, TJ_TEMP, 91500)
    board = Settling(root, [{TJ_TEMP: 90000}] * 10)  # the fan is off: it never cools enough
    monkeypatch.setenv(ROOT_ENV, str(root))
    code = preflight_cli.main(["--samples", "1", "--min-free-memory", "512MiB", "--wait", "25s", "--wait-poll", "10s"],
                              now=board.now, sleep=board.sleep)
    out = capsys.readouterr().out
    assert code == 1
    assert board.slept == [10.0, 10.0, 5.0]  # the last sleep stops at the bound
    assert "wait  gave up after 25 s: thermal headroom still failing" in out
    assert ("FAIL  thermal headroom: 9.0 C (tj-thermal at 90.0 C, trip point 99 C) < 15 C: the clocks would "
            "throttle during the run: let the board cool down") in out


def test_without_wait_a_busy_board_fails_at_once(capsys, monkeypatch):
    board = Settling(None, [])
    monkeypatch.setenv(ROOT_ENV, str(tree("orin-nano-8gb-jp60")))
    code = preflight_cli.main(["--samples", "1"], now=board.now, sleep=board.sleep)
    out = capsys.readouterr().out
    assert code == 1 and board.slept == [] and "wait  " not in out


def test_no_wait_fixes_the_wrong_board(capsys, monkeypatch):
    board = Settling(None, [])
    monkeypatch.setenv(ROOT_ENV, str(tree("orin-nano-8gb-jp60")))
    code = preflight_cli.main(["--samples", "1", "--device", "agx-orin", "--wait", "60s"],
                              now=board.now, sleep=board.sleep)
    out = capsys.readouterr().out
    assert code == 1 and board.slept == []
    assert "wait  not waiting: device, free memory failed too, and no wait fixes that" in out
