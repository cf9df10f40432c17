"""The simulated source: phases, a first-order thermal model and seeded noise on virtual time."""

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.clock import SimClock
from pytest_jetson.devices.device import simulated as simulated_device
from pytest_jetson.telemetry import TelemetryFactory
from pytest_jetson.telemetry.sampler import Sampler
from pytest_jetson.telemetry.sim_sensors import THERMAL_TAU_S, SimulatedSource


def workload(**kw):
    base = dict(power=12.0, idle_power=4.0, gpu_util=0.9, gpu_clock_mhz=612.0, max_gpu_clock_mhz=625.0, memory=2.5e9)
    base.update(kw)
    return types.SimpleNamespace(**base)


def run(clock, source, idle_before=5.0, load=60.0, idle_after=5.0, wl=None, interval="100ms"):
    with Sampler(source, interval=interval, clock=clock) as t:
        clock.advance(idle_before)
        t.set_load(wl or workload())
        clock.advance(load)
        t.end_load()
        clock.advance(idle_after)
    return t


def test_phases_idle_load_idle():
    clock = SimClock()
    t = run(clock, SimulatedSource(clock, seed=1))
    s, ser = t.summary, t.series
    assert s.source == "simulated" and s.duration == pytest.approx(70.0)
    assert len(ser) == 701 and ser.clock == "virtual"
    idle = ser.elapsed < 5.0
    load = (ser.elapsed >= 5.0) & (ser.elapsed < 65.0)
    assert np.mean(ser.board_power_w[idle]) == pytest.approx(4.0, rel=0.02)
    assert np.mean(ser.board_power_w[load]) == pytest.approx(12.0, rel=0.01)
    assert np.all(ser.memory_bytes[load] == 2.5e9) and np.all(ser.memory_bytes[idle] == 0)
    assert np.mean(ser.gpu_util[load]) == pytest.approx(90.0, abs=0.5)  # a fraction read as percent
    assert s.memory_peak_bytes == 2.5e9
    assert s.gpu_clock_min_mhz == 612.0 and not s.throttled
    # Energy: 10 s idle at 4 W + 60 s at 12 W, give or take the noise.
    assert s.energy_j == pytest.approx(10 * 4.0 + 60 * 12.0, rel=0.01)


def test_temperature_follows_a_first_order_lag():
    clock = SimClock()
    t = run(clock, SimulatedSource(clock, seed=0), idle_before=0.0, load=600.0, idle_after=0.0, interval="1s")
    tj = t.series.temps_c["gpu"]
    start = tj[0]
    steady = 25.0 + 3.0 * 12.0
    one_tau = tj[int(THERMAL_TAU_S)]
    # After one time constant the rise is 1 - 1/e of the way; after 15 it has settled.
    assert (one_tau - start) / (steady - start) == pytest.approx(1 - np.exp(-1), abs=0.02)
    assert tj[-1] == pytest.approx(steady, abs=0.5)
    assert np.all(np.diff(tj[: int(3 * THERMAL_TAU_S)]) > -0.5)


def test_heat_carries_over_to_the_next_window():
    clock = SimClock()
    src = SimulatedSource(clock, seed=0)
    first = run(clock, src, idle_before=0, load=60, idle_after=0)
    second = run(clock, src, idle_before=0, load=60, idle_after=0)
    assert second.series.temps_c["gpu"][0] > first.series.temps_c["gpu"][0] + 5


def test_seeded_noise_is_reproducible_and_percent_accepted():
    a = run(SimClock(), SimulatedSource(SimClock(), seed=7), wl=workload(gpu_util=90.0)).series
    clock = SimClock()
    b = run(clock, SimulatedSource(clock, seed=7), wl=workload(gpu_util=90.0)).series
    assert np.array_equal(a.board_power_w, b.board_power_w)
    c = run(SimClock(), SimulatedSource(SimClock(), seed=8)).series
    assert not np.array_equal(a.board_power_w, c.board_power_w)


def test_a_clock_below_the_mode_maximum_reads_as_throttling():
    clock = SimClock()
    t = run(clock, SimulatedSource(clock), wl=workload(gpu_clock_mhz=420.0))
    assert t.summary.throttled and "420 MHz" in t.summary.throttle_reasons[0]


def test_no_workload_is_an_idle_board():
    clock = SimClock()
    with Sampler(SimulatedSource(clock), interval="100ms", clock=clock) as t:
        clock.advance(2.0)
    assert t.summary.samples == 21 and t.summary.power_mean_w == pytest.approx(3.0, rel=0.02)
    assert t.summary.gpu_util_mean == 0.0


def test_factory_on_a_simulated_device_records_mode_and_energy_per_item():
    device = simulated_device("orin-nano")
    clock = SimClock()
    factory = TelemetryFactory(device, clock)
    with factory.sample(interval="50ms", workload=workload()) as t:
        clock.advance(10.0)
    t.items = 2000
    s = t.summary
    assert factory.source.name == "simulated" and factory.tried == []
    assert s.power_mode_start == device.power_mode.name == s.power_mode_end
    assert s.energy_per_item_j == pytest.approx(s.energy_j / 2000)
    assert s.power_mean_w == pytest.approx(12.0, rel=0.01)
    assert s.gpu_clock_max_mode_mhz == 625.0


def test_the_sessions_factory_is_one_so_the_board_stays_warm():
    from pytest_jetson.context import Context
    from pytest_jetson.settings import Settings

    ctx = Context.create(Settings(seed=3), simulated_device("orin-nano"))
    first = ctx.telemetry
    assert ctx.telemetry is first
    assert Context.create(Settings(seed=3), simulated_device("orin-nano")).telemetry is not first
    with first.sample(workload=workload()) as a:
        ctx.clock.advance(120.0)
    with ctx.telemetry.sample(workload=workload()) as b:
        ctx.clock.advance(1.0)
    assert b.series.temps_c["gpu"][0] > a.series.temps_c["gpu"][0] + 10


def test_a_sampler_around_plain_engine_calls_reads_the_engines_load():
    """No workload handed to the source: the engine announces its load on the clock they share."""
    from pytest_jetson.engines.simulated import SimulatedEngine

    clock = SimClock()
    dev = simulated_device("orin-nano")
    engine = SimulatedEngine("resnet50", dev, "int8", 8, clock=clock)
    factory = TelemetryFactory(dev, clock, source="simulated", interval="50ms")
    with factory.sample() as idle:
        clock.advance(2.0)
    with factory.sample() as busy:
        for _ in range(300):
            engine.infer()
    pred = engine.prediction
    assert busy.summary.power_mean_w == pytest.approx(pred.power, rel=0.03)
    assert busy.summary.gpu_util_mean == pytest.approx(100 * pred.gpu_util, abs=2)
    assert busy.summary.gpu_clock_mean_mhz == pytest.approx(pred.gpu_clock_mhz)
    # before any engine ran the board idled at the idle power the engine's prediction gives
    assert idle.summary.gpu_util_mean == 0
    assert idle.summary.power_mean_w < 0.5 * busy.summary.power_mean_w
    with factory.sample() as after:  # and it idles again once the engine stops
        clock.advance(2.0)
    assert after.summary.power_mean_w == pytest.approx(pred.idle_power, rel=0.03)


def test_the_telemetry_fixture_around_plain_infer_calls_shows_the_load(pytester):
    pytester.makepyfile(
        """
        def test_load(trt_engine, telemetry):
            engine = trt_engine("resnet50", precision="int8", batch=8)
            with telemetry.sample(interval="50ms") as t:
                for _ in range(300):
                    engine.infer()
            s = t.summary
            assert s.gpu_util_mean > 80, s
            assert abs(s.power_mean_w - engine.prediction.power) < 0.05 * engine.prediction.power, s
        """
    )
    result = pytester.runpytest("--jetson-device", "orin-nano", "-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=1)


def test_loads_are_read_from_the_clock_wherever_they_were_announced_from():
    """One record of what runs: a load handed to the source and one an engine or pool announces
    land on the same clock, in time order even when announced out of it."""
    clock = SimClock()
    src = SimulatedSource(clock, seed=0)
    early, late = workload(power=10.0), workload(power=20.0)
    clock.advance(10.0)
    src.set_load(late, 6.0, 8.0)
    clock.announce(early, 2.0, 4.0)  # what an engine that ran earlier would have said
    assert [rec[2] for rec in clock.loads] == [early, late]
    got = src.generate(0.0, 10.0, 1.0)
    power = dict(zip(got.t.tolist(), got.board_power_w.tolist()))
    assert power[3.0] == pytest.approx(10.0, rel=0.05) and power[7.0] == pytest.approx(20.0, rel=0.05)
    assert power[5.0] == pytest.approx(4.0, rel=0.05)  # idle between them, at the idle power


def _naive_edges(loads, a, b):
    return sorted({x for rec in loads for x in rec[:2] if a < x < b})


#: steps of a session: (gap before it, stretch length, grow the running stretch, how far back a
#: late announcement starts)
STEPS = st.lists(st.tuples(st.floats(0, 5), st.floats(0, 3), st.booleans(), st.floats(0, 4)), min_size=1,
                 max_size=30)


def _session(steps):
    """Stretches announced at the present, in the past, or left to grow: (clock, now, length,
    back) after each step."""
    clock = SimClock()
    rec = None
    for gap, length, grow, back in steps:
        clock.advance(gap)
        t = clock.now()
        if grow and rec is not None and rec[1] <= t:
            rec[1] = t + length  # the running stretch grows at the present
        else:
            rec = clock.announce(object(), t, t + length)
        clock.announce(object(), max(0.0, t - back), max(0.0, t - back) + length / 2)  # announced late
        yield clock, t, length, back


@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_load_edges_are_every_start_and_end_in_the_span(steps):
    """Asked about in spans that move forward (a source sampling) or look back (a second window):
    the same edges as a scan of every stretch."""
    for clock, t, length, back in _session(steps):
        for a, b in ((t - 1.0, t + length), (t - back - 1.0, t + 1.0)):
            assert clock.load_edges(a, b) == _naive_edges(clock.loads, a, b)


def _naive_load_at(loads, t):
    running = [rec for rec in loads if rec[0] <= t < rec[1]]
    # the latest to start; of two that start together, the later announced
    return max(reversed(running), key=lambda rec: rec[0])[2] if running else None


@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_the_load_at_a_time_is_the_latest_started_stretch_running_then(steps):
    """Asked forward (a source sampling) and back (a second window): the same load as a scan of
    every stretch."""
    for clock, t, length, back in _session(steps):
        for q in (t, t - back, t + length / 3, t - 0.5):
            assert clock.load_at(q) is _naive_load_at(clock.loads, q)


def test_a_windows_load_reads_between_hundreds_of_paced_calls():
    """A sampler's whole-window load around 300 calls at a camera's rate: between two calls the
    board runs the window's load, however many calls ago the window began."""
    clock = SimClock()
    src = SimulatedSource(clock, seed=0)
    window, call = workload(power=9.0), workload(power=20.0)
    src.set_load(window, 0.0)
    for k in range(300):
        clock.announce(call, k / 30, k / 30 + 0.01)
    clock.advance(10.0)
    src.end_load(10.0)
    assert clock.load_at(299 / 30 + 0.02) is window and clock.load_at(299 / 30 + 0.005) is call
    assert clock.load_at(10.5) is None


class _CountingList(list):
    """Counts the stretches read out of the clock's record."""

    read = 0

    def __getitem__(self, key):
        got = super().__getitem__(key)
        _CountingList.read += len(got) if isinstance(key, slice) else 1
        return got


def test_a_long_session_reads_the_recent_stretches_only():
    """A source walking forward through a session of 2,000 stretches looks at the few near the
    span it is asked about, not at every stretch since the session began (which made a suite of
    simulated tests quadratic)."""
    clock = SimClock()
    clock.loads = _CountingList()
    for _ in range(2000):
        t = clock.now()
        clock.announce(object(), t, t + 1.0)
        clock.advance(1.5)
        clock.load_edges(t - 0.5, clock.now())
        clock.load_at(t + 1.25)
    _CountingList.read = 0
    t = clock.now()
    clock.announce(object(), t, t + 1.0)
    clock.advance(1.5)
    assert clock.load_edges(t - 0.25, clock.now()) == [t, t + 1.0]
    assert clock.load_at(t + 0.5) is clock.loads[-1][2] and clock.load_at(t + 1.25) is None
    assert _CountingList.read <= 12
