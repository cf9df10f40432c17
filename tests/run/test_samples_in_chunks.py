"""The harness runs the engine's loop a chunk at a time and keeps the samples as C doubles: what a
measurement reports is what one plain loop would give, across chunk boundaries, whichever loop the
engine runs; a long run never holds its samples as Python floats."""

import sys
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.clock import SimClock
from pytest_jetson.engines.base import Engine
from pytest_jetson.errors import EngineError
from pytest_jetson.run.harness import CHUNK, measure
from pytest_jetson.run.measurement import Samples


class StepEngine(Engine):
    """Each call moves a virtual clock by the next step of a script (repeated)."""

    backend = "stepping"

    def __init__(self, steps, device=None):
        super().__init__()
        self.name, self.model, self.precision = "stepping", "stepping", "fp16"
        self.clock = SimClock()
        self.steps, self.calls, self.device = steps, 0, device

    def _infer(self, batch):
        self.calls += 1
        self.clock.advance(self.steps[self.calls % len(self.steps)])
        if self.device is not None:
            self.last_device_time = self.device(self.calls)


class ListLoopEngine(StepEngine):
    """The same engine with a loop of its own, as a backend writes one: lists appended to."""

    def timed_run(self, batch, t_start, until_t, until_n, latencies, ends, device_times):
        return super().timed_run(batch, t_start, until_t, until_n, latencies, ends, device_times)


class DuckEngine:
    """An object that only runs like an engine (``infer`` and a ``clock``), measured adapted."""

    name, backend, model, precision, batch, max_batch = "duck", "duck", "duck", "fp16", 1, 1
    memory_bytes = last_device_time = None

    def __init__(self, steps):
        self.clock, self.steps, self.calls = SimClock(), steps, 0

    def infer(self, batch=None):
        self.calls += 1
        self.clock.advance(self.steps[self.calls % len(self.steps)])


def plain(steps, start, until_t, until_n):
    """The specification: one iteration at a time on a clock at ``start``."""
    lat, ends = [], []
    t, prev, n, calls = start, start, 0, 0
    limit_t = float("inf") if until_t is None else until_t - 1e-9
    while (until_n is None or n < until_n) and prev < limit_t:
        calls += 1
        t += steps[calls % len(steps)]
        lat.append(t - prev)
        ends.append(t)
        prev, n = t, n + 1
    return lat, ends


def windows(ends, t0, parts=10):
    count, out, start = len(ends), [], t0
    for k in range(min(parts, count)):
        lo, hi = count * k // min(parts, count), count * (k + 1) // min(parts, count)
        out.append((hi - lo) / (ends[hi - 1] - start))
        start = ends[hi - 1]
    return out


@settings(max_examples=25, deadline=None)
@given(steps=st.lists(st.sampled_from([1e-4, 1e-3, 0.0123, 0.25]), min_size=1, max_size=3),
       iterations=st.one_of(st.none(), st.integers(1, 3 * CHUNK + 7),
                            st.sampled_from([CHUNK - 1, CHUNK, CHUNK + 1, 2 * CHUNK])),
       seconds=st.one_of(st.none(), st.floats(0.01, 40.0)),
       loop=st.sampled_from([StepEngine, ListLoopEngine, DuckEngine]))
def test_a_measurement_reports_what_one_plain_loop_gives_across_chunks(steps, iterations, seconds, loop):
    if iterations is None and seconds is None:
        iterations = CHUNK + 3
    engine = loop(steps)
    m = measure(engine, iterations=iterations, duration=seconds, warmup=0, profile=False)
    lat, ends = plain(steps, 0.0, seconds, iterations)
    assert type(m.latencies) is Samples and m.latencies == lat
    assert m.duration == ends[-1] and m.windows == windows(ends, 0.0)
    assert engine.calls == len(lat)


class DeviceTimedEngine(StepEngine):
    reports_device_time = True


def test_device_times_are_kept_across_chunks_and_dropped_when_one_is_missing():
    every = DeviceTimedEngine([1e-3], device=lambda call: call * 1e-6)
    m = measure(every, iterations=CHUNK + 5, warmup=0, profile=False)
    assert m.device_latencies == [k * 1e-6 for k in range(1, CHUNK + 6)]
    # one iteration in the second chunk the backend could not time: the run has no device times
    gap = DeviceTimedEngine([1e-3], device=lambda call: None if call == CHUNK + 2 else 1e-6)
    m = measure(gap, iterations=CHUNK + 5, warmup=0, profile=False)
    assert m.device_latencies is None and m.host_overhead is None


def test_gaps_are_taken_alike_with_and_without_numpy(monkeypatch):
    ends = Samples([3.0, 3.1, 3.1000001, 7.5])
    with_numpy = Samples([9.0])
    with_numpy.take_gaps(ends, 1, 3.0)
    monkeypatch.setitem(sys.modules, "numpy", None)  # a pool worker of a host engine
    without = Samples([9.0])
    without.take_gaps(ends, 1, 3.0)
    assert with_numpy == without == [9.0, 3.1 - 3.0, 3.1000001 - 3.1, 7.5 - 3.1000001]


def test_a_loop_that_appends_something_else_than_a_number_is_named():
    class Broken(ListLoopEngine):
        def timed_run(self, batch, t_start, until_t, until_n, latencies, ends, device_times):
            prev = super().timed_run(batch, t_start, until_t, until_n, latencies, ends, device_times)
            latencies[-1] = "late"
            return prev

    with pytest.raises(EngineError, match=r"stepping: its timed loop appended a latency that is not a "
                                          r"number \('late' \(str\)"):
        measure(Broken([1e-3]), iterations=10, warmup=0, profile=False)


@pytest.mark.parametrize("loop", [StepEngine, ListLoopEngine])
def test_a_long_run_never_holds_its_samples_as_python_floats(loop):
    """At its peak a run holds its latencies and end times as C doubles (16 bytes an iteration)
    and one chunk of lists; a whole run of Python floats in lists held over 64."""
    n = 8 * CHUNK
    engine = loop([1e-3, 2e-3])
    measure(engine, iterations=100, warmup=0, profile=False)  # first-call caches out of the count
    tracemalloc.start()
    try:
        m = measure(engine, iterations=n, warmup=0, profile=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert m.iterations == n
    assert peak / n < 28
