"""Over-current throttle counters read around every measured window, on a recorded Orin tree with
the counter files a real Orin has.

The paths and format are those of NVIDIA's ``tegra23x-oc-event`` kernel driver (Jetson Linux r35/r36
kernel sources, drivers/thermal/tegra23x_oc_event.c): a hwmon device registered with the name
``soctherm_oc`` under the platform device ``soctherm-oc-event``, attributes ``oc{1,2,3}_event_cnt``
and ``oc{1,2,3}_throt_en``, each printed as ``"%u\\n"``. jetson-stats 7.2.2 finds them the same way
(``jtop/gui/psysfs.py``: the hwmon whose ``name`` is ``soctherm_oc``, then ``oc*_event_cnt``). The
recorded trees do not carry them (no capture of one board's files was found), so the test adds
them here; the hwmon index is a stand-in (it differs between boards and boots).
"""

import os

import pytest
from board_trees import copy, write

from pytest_jetson.clock import WallClock
from pytest_jetson.devices.catalog import get
from pytest_jetson.devices.device import Device, simulated
from pytest_jetson.run.harness import measure
from pytest_jetson.run.window import MeasuredWindow
from pytest_jetson.telemetry import TelemetryFactory
from pytest_jetson.telemetry.throttle_counters import ThrottleCounters, find_oc_counters

OC_DEVICE = "sys/devices/platform/soctherm-oc-event/hwmon/hwmon3"


def with_oc_counters(root, counts=(0, 0, 0)):
    for k, count in enumerate(counts, 1):
        write(root, f"{OC_DEVICE}/oc{k}_event_cnt", count)
        write(root, f"{OC_DEVICE}/oc{k}_throt_en", 1)
    write(root, f"{OC_DEVICE}/name", "soctherm_oc")
    os.symlink("../../devices/platform/soctherm-oc-event/hwmon/hwmon3", root / "sys/class/hwmon/hwmon3")
    return root


def real_orin(root):
    profile = get("orin-nano-8gb")
    device = Device(profile=profile, power_mode=profile.default_mode, simulated=False)
    return TelemetryFactory(device, WallClock(), source="sysfs", interval="20ms", root=str(root))


class Busy:
    """An engine on the wall clock; ``during`` runs at its ``at``-th inference (a board event)."""

    clock = WallClock()
    backend, model, precision, batch = "test", "busy", "fp16", 1

    def __init__(self, at=None, during=None):
        self.calls, self.at, self.during = 0, at, during

    def infer(self, batch=None):
        self.calls += 1
        if self.calls == self.at:
            self.during()


def test_the_counters_are_found_by_the_hwmon_name(tmp_path):
    root = with_oc_counters(copy("orin-nano-8gb-jp60", tmp_path / "t"), (0, 15, 37))
    found = find_oc_counters(root)
    assert sorted(found) == ["oc1", "oc2", "oc3"]
    assert ThrottleCounters(str(root)).read() == {"oc1": 0, "oc2": 15, "oc3": 37}


def test_a_measurement_during_which_the_board_throttled_says_so(tmp_path):
    root = with_oc_counters(copy("orin-nano-8gb-jp60", tmp_path / "t"), (0, 15, 37))
    factory = real_orin(root)

    def events():
        write(root, f"{OC_DEVICE}/oc3_event_cnt", 40)
        write(root, f"{OC_DEVICE}/oc2_event_cnt", 16)

    window = MeasuredWindow.around(factory, interval=0.02)
    engine = Busy(at=5, during=events)
    with window:
        for _ in range(20):
            engine.infer()
    summary = window.finish(20)
    assert window.extra() == {"throttle_events": {"oc2": 1, "oc3": 3}}
    assert summary.throttled and "over-current: oc2 +1, oc3 +3" in summary.throttle_reasons
    assert ("the board throttled during the measurement: 4 over-current event(s) (oc2 +1, oc3 +3); its figures "
            "are not the board's unthrottled speed (check the power supply)") in summary.warnings
    # events before the next window are not counted in it
    write(root, f"{OC_DEVICE}/oc1_event_cnt", 2)
    m = measure(Busy(), iterations=20, warmup=0, telemetry=factory)
    assert not any("throttled" in w for w in m.telemetry.warnings) and "throttle_events" not in m.extra
    assert not any(r.startswith("over-current") for r in m.telemetry.throttle_reasons)


def test_through_the_harness_the_warning_reaches_the_measurement(tmp_path):
    root = with_oc_counters(copy("orin-nano-8gb-jp60", tmp_path / "t"))
    engine = Busy(at=3, during=lambda: write(root, f"{OC_DEVICE}/oc1_event_cnt", 1))
    m = measure(engine, iterations=10, warmup=0, telemetry=real_orin(root))
    assert m.telemetry.throttled
    assert any(w.startswith("the board throttled during the measurement: 1 over-current event(s) (oc1 +1)")
               for w in m.telemetry.warnings)
    assert m.extra["throttle_events"] == {"oc1": 1}
    assert "throttle_events" in m.to_dict()["extra"]  # kept in reports


def test_a_board_without_counters_says_so_once_and_measures_on(tmp_path):
    root = copy("orin-nano-8gb-jp60", tmp_path / "t")  # no soctherm_oc device (as on Xavier, TX2, Nano)
    factory = real_orin(root)
    first = measure(Busy(), iterations=5, warmup=0, telemetry=factory)
    second = measure(Busy(), iterations=5, warmup=0, telemetry=factory)
    note = [w for w in first.telemetry.warnings if "throttle counters" in w]
    assert note == ["over-current throttle counters cannot be read on this board (no hwmon device named "
                    "soctherm_oc under /sys/class/hwmon (NVIDIA's over-current event driver of Orin and Thor)): "
                    "throttling during measurements is judged from clocks and temperatures only"]
    assert not [w for w in second.telemetry.warnings if "throttle counters" in w]
    assert first.items == second.items == 5


def test_unreadable_counter_files_are_said_once(tmp_path):
    root = with_oc_counters(copy("orin-nano-8gb-jp60", tmp_path / "t"))
    for k in (1, 2, 3):
        write(root, f"{OC_DEVICE}/oc{k}_event_cnt", "")  # the BPMP did not answer: an empty read
    m = measure(Busy(), iterations=5, warmup=0, telemetry=real_orin(root))
    assert any("throttle counters cannot be read" in w and "oc1_event_cnt" in w for w in m.telemetry.warnings)
    assert m.items == 5


@pytest.mark.parametrize("telemetry", ["factory", "sampler", None])
def test_a_simulated_device_reads_and_says_nothing(tmp_path, monkeypatch, telemetry):
    root = with_oc_counters(copy("orin-nano-8gb-jp60", tmp_path / "t"))
    monkeypatch.setenv("PYTEST_JETSON_SYSROOT", str(root))
    reads = []
    monkeypatch.setattr(ThrottleCounters, "read", lambda self: reads.append(self) or {})
    device = simulated("orin-nano")
    factory = TelemetryFactory(device, WallClock(), source="host", interval="20ms")
    given = {"factory": factory, "sampler": factory.sample(), None: None}[telemetry]
    m = measure(Busy(), iterations=5, warmup=0, telemetry=given)
    assert reads == []
    assert m.telemetry is None or not [w for w in m.telemetry.warnings if "throttle" in w]


def test_a_throttled_measurement_is_noted_beside_its_verdicts():
    from pytest_jetson.gate.session import TestResult, throttle_notes
    from pytest_jetson.gate.verdict import Verdict
    from pytest_jetson.report import render
    from pytest_jetson.run.measurement import Measurement

    calm = Measurement(name="a", batch=1, latencies=[0.01] * 5, duration=0.05, items=5)
    hot = Measurement(name="b", batch=1, latencies=[0.01] * 5, duration=0.05, items=5,
                      extra={"throttle_events": {"oc2": 2}})
    notes = throttle_notes([("t::x|a", calm), ("t::x|b", hot)])
    assert notes == ["t::x|b: the board throttled during the measurement: 2 over-current event(s) (oc2 +2); "
                     "its figures are not the board's unthrottled speed (check the power supply)"]
    v = Verdict(metric="throughput", outcome="fail", reason="bound_violated", bound=">= 900/s", kind="absolute",
                value=800.0)
    result = TestResult(nodeid="t::x", verdicts=[v], notes=notes)
    assert render.failure_section(result).splitlines()[-1] == "note: " + notes[0]
