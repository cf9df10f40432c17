"""Calls at an arrival rate: the rate grammar, the schedules, the queue (Lindley's recursion), and
what a measurement at a rate reports (latency from arrival, jitter, deadline_miss) on the
virtual clock, where the expected figures follow from the engine's latencies."""

import math
import statistics
from itertools import cycle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.clock import SimClock, WallClock
from pytest_jetson.devices.device import simulated
from pytest_jetson.engines.base import Engine
from pytest_jetson.engines.simulated import SimulatedEngine
from pytest_jetson.errors import ConfigError, EngineError
from pytest_jetson.metrics import METRICS
from pytest_jetson.run import arrival
from pytest_jetson.run.arrival import Arrivals, arrival_loop, parse_deadline, parse_rate
from pytest_jetson.run.harness import measure
from pytest_jetson.run.measurement import Measurement


class ScriptedEngine(Engine):
    """A virtual-clock engine whose calls take the scripted times in turn."""

    backend = "scripted"

    def __init__(self, latencies, clock=None, name="scripted"):
        super().__init__()
        self.name, self.model, self.precision = name, "scripted-model", "fp16"
        self.clock = clock or SimClock()
        self._lat = cycle(latencies)

    def infer(self, batch=None):
        self.clock.advance(next(self._lat))
        return {}


def lindley(arrivals, services):
    """Latency from arrival of each call of a single-server queue, by Lindley's recursion on the
    waits (W_1 = 0, W_k+1 = max(0, W_k + S_k - gap_k)): computed apart from the harness."""
    out, wait = [], 0.0
    for k, (a, s) in enumerate(zip(arrivals, services)):
        if k:
            wait = max(0.0, wait + services[k - 1] - (a - arrivals[k - 1]))
        out.append(wait + s)
    return out


class ListSchedule:
    """A schedule of given arrival times (what ``Arrivals.schedule`` yields, made up)."""

    def __init__(self, times):
        self.times, self.i = list(times), 0

    def peek(self):
        return self.times[self.i] if self.i < len(self.times) else math.inf

    def __next__(self):
        t = self.peek()
        self.i += 1
        return t


# -- the grammar ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, rate, kind", [
    (30, 30.0, "fixed"), (12.5, 12.5, "fixed"), ("30/s", 30.0, "fixed"), ("30 fps", 30.0, "fixed"),
    ("30Hz", 30.0, "fixed"), ("120/min", 2.0, "fixed"), ("fixed: 30 / s", 30.0, "fixed"),
    ("poisson:30/s", 30.0, "poisson"), ("Poisson: 2.5e1 fps", 25.0, "poisson"),
])
def test_rates_as_written(text, rate, kind):
    spec = parse_rate(text, "t")
    assert spec.rate == pytest.approx(rate) and spec.kind == kind
    assert spec.period == pytest.approx(1 / rate)


def test_no_rate_is_back_to_back():
    assert parse_rate(None, "t") is None
    assert parse_deadline(None, None, "t") is None


def test_a_rate_without_unit_says_how_to_write_it():
    with pytest.raises(ConfigError) as err:
        parse_rate("30", "resnet50")
    text = str(err.value)
    assert "resnet50: rate='30'" in text
    assert "write rate='30/s' (fixed arrivals) or rate='poisson:30/s'" in text


@pytest.mark.parametrize("bad, why", [
    (0, "not a positive rate"), (-5, "not a positive rate"), ("0/s", "not a positive rate"),
    ("poisson:-1/s", "not a positive rate"), (float("inf"), "not a finite rate"),
    (float("nan"), "not a finite rate"), ("inf/s", "not a finite rate"), (True, "is a bool"),
    ([30], "is a list"), ("fast", "cannot be read"), ("30/h", "cannot be read"),
    ("uniform:30/s", "arrivals 'uniform'"),
])
def test_bad_rates_are_named_with_the_grammar(bad, why):
    with pytest.raises(ConfigError) as err:
        parse_rate(bad, "e")
    text = str(err.value)
    assert f"rate={bad!r}" in text and why in text
    assert "rate='poisson:30/s'" in text


def test_a_deadline_is_one_period_by_default_or_a_duration():
    spec = parse_rate("25/s", "t")
    assert parse_deadline(None, spec, "t") == pytest.approx(0.04)
    assert parse_deadline("10ms", spec, "t") == pytest.approx(0.010)
    assert parse_deadline(0.5, spec, "t") == 0.5
    with pytest.raises(ConfigError, match=r"deadline='0ms' must be a positive duration"):
        parse_deadline("0ms", spec, "t")
    with pytest.raises(ConfigError, match=r"deadline='10ms' needs an arrival rate.*rate='30/s'"):
        parse_deadline("10ms", None, "t")


# -- schedules ------------------------------------------------------------------------------------
def test_fixed_arrivals_are_whole_periods_from_the_start_without_drift():
    s = Arrivals(30.0).schedule(5.0, seed=1)
    times = [next(s) for _ in range(30001)]
    assert times[0] == 5.0 and times[1] == pytest.approx(5.0 + 1 / 30)
    assert times[30000] == pytest.approx(5.0 + 1000.0, abs=1e-9)


def test_peek_keeps_the_arrival_for_the_next_stretch():
    s = Arrivals(10.0).schedule(0.0, seed=1)
    assert s.peek() == s.peek() == 0.0
    assert next(s) == 0.0 and s.peek() == pytest.approx(0.1)


def test_poisson_arrivals_are_reproducible_per_seed_with_the_rate_as_mean():
    spec = Arrivals(30.0, "poisson")
    a = [t for t, _ in zip(spec.schedule(0.0, seed=7), range(20000))]
    b = [t for t, _ in zip(spec.schedule(0.0, seed=7), range(20000))]
    c = [t for t, _ in zip(spec.schedule(0.0, seed=8), range(20000))]
    assert a == b and a != c
    gaps = np.diff([0.0] + a)
    assert (gaps > 0).all()
    assert gaps.mean() == pytest.approx(1 / 30, rel=0.03)
    assert gaps.std() == pytest.approx(1 / 30, rel=0.05)  # exponential: std = mean


def test_the_seed_of_a_stream_depends_on_the_run_seed_and_what_is_measured():
    assert arrival.stream_seed(0, "a") == arrival.stream_seed(0, "a")
    assert len({arrival.stream_seed(0, "a"), arrival.stream_seed(1, "a"), arrival.stream_seed(0, "b")}) == 3


# -- the queue ------------------------------------------------------------------------------------
@settings(max_examples=200, deadline=None)
@given(gaps=st.lists(st.floats(0.0, 0.1), min_size=1, max_size=60),
       services=st.lists(st.floats(1e-4, 0.1), min_size=60, max_size=60))
def test_latency_from_arrival_follows_lindleys_recursion(gaps, services):
    arrivals = list(np.cumsum(gaps))
    clock = SimClock()
    script = iter(services)
    lat, ends, arr, serv = [], [], [], []
    end = arrival_loop(lambda: clock.advance(next(script)), clock, ListSchedule(arrivals), None,
                       len(arrivals), lat, ends, None, arr, None, serv)
    n = len(arrivals)
    assert arr == arrivals and len(lat) == n
    assert lat == pytest.approx(lindley(arrivals, services[:n]), abs=1e-9)
    assert serv == pytest.approx(services[:n])
    assert end == ends[-1] == pytest.approx(arrivals[-1] + lat[-1])


def test_the_loop_leaves_an_arrival_past_the_window_for_later():
    clock = SimClock()
    s = Arrivals(10.0).schedule(0.0, seed=0)
    lat, ends = [], []
    arrival_loop(lambda: clock.advance(0.01), clock, s, 0.5, None, lat, ends)
    assert len(lat) == 5 and s.peek() == pytest.approx(0.5)
    arrival_loop(lambda: clock.advance(0.01), clock, s, 1.0, None, lat, ends)
    assert len(lat) == 10 and lat == pytest.approx([0.01] * 10)


def test_input_preparation_stays_out_of_the_timed_call():
    class Prepared(ScriptedEngine):
        prepared = 0

        def prepare(self):
            self.prepared += 1
            self.clock.advance(0.005)  # a slow frame decode, before the arrival

        def call(self):
            self.clock.advance(0.010)

    engine = Prepared([0.5])
    m = measure(engine, iterations=20, rate="30/s", warmup=0)
    assert engine.prepared == 21  # the first before the run, each next one after a call
    assert m.latencies == pytest.approx([0.010] * 20)


# -- measurements at a rate --------------------------------------------------------------------------
def test_a_fixed_rate_on_the_virtual_clock():
    engine = ScriptedEngine([0.010, 0.020])
    m = measure(engine, duration="2s", rate="30/s", warmup=0)
    assert m.iterations == 60 and m.duration == pytest.approx(2.0)
    assert m.throughput == pytest.approx(30.0)
    assert m.latencies == pytest.approx([0.010, 0.020] * 30)  # no queue: each call its own time
    # completions alternate 1/30 + 10 ms and 1/30 - 10 ms apart
    assert m.jitter == pytest.approx(statistics.stdev(np.diff(np.cumsum([0.0] + [1 / 30] * 59)
                                                              + np.array([0.010, 0.020] * 30))))
    assert m.jitter == pytest.approx(0.010, rel=0.02)
    assert m.deadline_miss == 0.0
    assert m.extra["rate"] == 30.0 and m.extra["arrivals"] == "fixed"
    assert m.extra["deadline"] == pytest.approx(1 / 30)


def test_deadline_miss_is_the_share_of_calls_late_from_arrival():
    engine = ScriptedEngine([0.010, 0.010, 0.010, 0.025])
    m = measure(engine, duration="4s", rate="30/s", deadline="20ms", warmup=0)
    assert m.deadline_miss == pytest.approx(25.0)
    assert m.metric("deadline_miss") == pytest.approx(25.0)
    assert m.metric_samples("deadline_miss") == [0.0, 0.0, 0.0, 100.0] * 30
    assert METRICS["deadline_miss"].worse == "higher" and METRICS["jitter"].worse == "higher"
    assert METRICS["max_rate"].worse == "lower"


def test_poisson_arrivals_queue_as_the_recursion_says():
    engine = ScriptedEngine([0.010, 0.030])
    m = measure(engine, duration="20s", rate="poisson:30/s", deadline="33ms", warmup=0)
    assert m.extra["arrivals"] == "poisson"
    sched = Arrivals(30.0, "poisson").schedule(0.0, m.extra["arrival_seed"])
    arrivals = [next(sched) for _ in range(m.iterations)]
    expected = lindley(arrivals, [0.010, 0.030] * (m.iterations // 2 + 1))
    assert m.latencies == pytest.approx(expected, abs=1e-9)
    assert m.deadline_miss == pytest.approx(100.0 * np.mean(np.array(expected) > 0.033))
    assert 0 < m.deadline_miss < 50  # some queueing behind the 30 ms calls
    assert m.throughput == pytest.approx(30.0, rel=0.08)
    again = measure(ScriptedEngine([0.010, 0.030]), duration="20s", rate="poisson:30/s", warmup=0)
    assert again.latencies == m.latencies  # the same seed, the same arrivals


def test_a_simulated_engine_at_30_per_s_on_an_idle_gpu_between_frames():
    clock = SimClock()
    engine = SimulatedEngine("resnet18", simulated("orin-nano"), precision="fp16", clock=clock, seed=3)
    back = measure(engine, duration="2s", warmup=0)
    service = np.asarray(back.latencies)
    assert service.mean() < 1 / 30 / 2  # the engine is well within the period
    busy_before = sum(end - start for start, end, _ in clock.loads)
    m = measure(engine, duration="10s", rate="30/s", warmup=0)
    assert m.iterations == 300 and m.throughput == pytest.approx(30.0)
    assert m.latency_mean == pytest.approx(service.mean(), rel=0.05)  # no queueing at this rate
    assert m.deadline_miss == 0.0
    # fixed arrivals and no queue: completions at k/30 + S_k, their intervals T + S_k+1 - S_k
    ends = np.arange(300) / 30 + np.asarray(m.latencies)
    assert m.jitter == pytest.approx(statistics.stdev(np.diff(ends)), rel=1e-6)
    assert 0 < m.jitter < service.max() - service.min()
    busy = sum(end - start for start, end, _ in clock.loads) - busy_before
    assert busy == pytest.approx(sum(m.latencies), rel=1e-6)  # idle between frames: nothing announced


def test_back_to_back_has_no_arrival_metrics_and_says_what_they_need():
    m = measure(ScriptedEngine([0.01]), duration="1s", warmup=0)
    assert m.jitter is None and m.deadline_miss is None and m.max_rate is None
    assert "rate" not in m.extra
    for name in ("jitter", "deadline_miss"):
        assert "needs rate=" in METRICS[name].hint
    assert "perf.max_rate" in METRICS["max_rate"].hint


def test_the_arrival_figures_survive_a_file():
    m = measure(ScriptedEngine([0.010, 0.025]), duration="1s", rate="30/s", deadline="20ms", warmup=0)
    back = Measurement.from_dict(m.to_dict())
    assert back.jitter == m.jitter and back.deadline_miss == m.deadline_miss == 50.0
    assert back.to_dict()["summary"]["deadline_miss"] == 50.0


def test_iterations_at_a_rate_close_the_window_on_whole_periods():
    m = measure(ScriptedEngine([0.010]), iterations=15, rate="30/s", warmup="0.1s")
    assert m.iterations == 15 and m.duration == pytest.approx(0.5)
    assert m.throughput == pytest.approx(30.0)


def test_an_adaptive_run_at_a_rate_stops_once_stable():
    m = measure(ScriptedEngine([0.010]), rate="30/s", warmup=0)
    assert m.extra["mode"] == "adaptive" and m.stable is True
    assert all(w == pytest.approx(30.0) for w in m.windows)


def test_the_extension_goes_on_with_the_same_schedule():
    seen = []

    def extend(so_far, measured):
        seen.append(so_far)
        return 1.0 if measured < 2 else None

    m = measure(ScriptedEngine([0.010, 0.020]), duration="1s", rate="30/s", warmup=0, extend=extend)
    assert m.extra["looks"] == 2 and m.duration == pytest.approx(2.0)
    assert m.iterations == 60 and m.latencies == pytest.approx([0.010, 0.020] * 30)
    assert seen[0].jitter is not None and seen[0].deadline_miss == 0.0


def test_a_wall_clock_run_waits_for_its_arrivals():
    class Quick(ScriptedEngine):
        def infer(self, batch=None):
            return {}

    m = measure(Quick([0], clock=WallClock()), iterations=5, rate="200/s", warmup=0)
    assert m.clock == "wall" and m.iterations == 5
    assert m.duration >= 5 / 200 - 1e-9  # waited for each arrival and the window's last period
    assert all(lat >= 0 for lat in m.latencies)


# -- bad load ---------------------------------------------------------------------------------------
def test_a_rate_never_kept_up_with_is_an_error_naming_rate_served_rate_and_fix():
    with pytest.raises(EngineError) as err:
        measure(ScriptedEngine([0.050]), duration="3s", rate="30/s", warmup=0)
    text = str(err.value)
    assert "rate='30/s'" in text and "served only 20 calls/s" in text
    assert "lower rate=" in text and "perf.max_rate" in text


def test_poisson_overload_is_caught_too():
    with pytest.raises(EngineError, match=r"rate='poisson:30/s'.*served only"):
        measure(ScriptedEngine([0.045]), duration="10s", rate="poisson:30/s", warmup=0)


@pytest.mark.parametrize("script", [
    [0.010] * 44 + [0.400] + [0.010] * 15,   # one stall: the queue drains afterwards
    [0.010] * 59 + [0.600],                  # a stall at the very end
])
def test_a_stall_is_not_an_overload(script):
    m = measure(ScriptedEngine(script), iterations=60, rate="30/s", warmup=0)
    assert m.iterations == 60 and m.deadline_miss > 0


def test_near_saturation_a_stable_queue_is_not_an_overload():
    m = measure(ScriptedEngine([0.031, 0.033, 0.032]), duration="20s", rate="poisson:30/s", warmup=0)
    assert m.iterations > 400


def test_a_call_slower_than_its_deadline_every_time_is_an_error():
    with pytest.raises(EngineError) as err:
        measure(ScriptedEngine([0.020, 0.025]), duration="2s", rate="30/s", deadline="15ms", warmup=0)
    text = str(err.value)
    assert "deadline=15 ms" in text and "the fastest took 20 ms" in text


def test_the_checks_can_be_turned_off_for_a_search():
    m = measure(ScriptedEngine([0.050]), duration="3s", rate="30/s", warmup=0, strict=False)
    assert m.deadline_miss > 90
