"""A function measured on the simulated board keeps its per-call host seconds as C doubles: a long
measurement holds a few doubles a call, and the timing it reports is the one the list of floats
gave (the mean of the measured calls' host seconds, summed in order)."""

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson import clock as clock_module
from pytest_jetson.context import Context
from pytest_jetson.devices.device import simulated
from pytest_jetson.run import host_time
from pytest_jetson.run.harness import measure
from pytest_jetson.run.recorder import Recorder
from pytest_jetson.settings import Settings


def _context():
    return Context.create(Settings(telemetry="none"), simulated("orin-nano"))


def _measured(ctx, fn, n):
    """The workload and its finished measurement of ``n`` calls (what ``perf.measure`` runs)."""
    w = Recorder(ctx)._workload(fn, None, None, None)
    m = w.finish(measure(w, iterations=n, warmup=0, telemetry="none", profile=False))
    m.summary()
    return w, m


def test_a_long_measurement_holds_its_host_seconds_as_c_doubles():
    """100,000 calls: held while the workload lives, its latencies and host seconds at 8 bytes
    each (a list of floats held 40 a call more); at the peak, the end times and a chunk of lists
    besides. Before: 40.6 held, 55.5 at the peak; now about 17 and 32."""
    n = 100_000
    ctx = _context()

    def noop():
        pass

    _measured(ctx, noop, 1000)  # first-call caches and imports out of the count
    tracemalloc.start()
    try:
        w, m = _measured(ctx, noop, n)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert m.iterations == n and len(w.host_seconds) == n
    assert held / n < 28
    assert peak / n < 44


@settings(max_examples=30, deadline=None)
@given(steps=st.lists(st.sampled_from([1e-6, 3.3e-5, 0.001, 0.0123]), min_size=1, max_size=5),
       warmup=st.sampled_from([0, "5ms", "40ms"]), iterations=st.integers(1, 60))
def test_the_host_time_reported_is_the_mean_of_the_measured_calls(steps, warmup, iterations):
    """Each call's host seconds as the board's clock takes them from the host timer (a fake one,
    so they are exact); the timing's ``host_measured_s`` is their mean over the measured calls,
    the warm-up's left out, summed in order as a list of them gave it."""
    now, calls = [100.0], []

    def step():
        before = now[0]
        now[0] += steps[len(calls) % len(steps)]
        calls.append(now[0] - before)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(clock_module, "_perf_counter", lambda: now[0])
        mp.setattr(clock_module, "_cpu_clock", lambda: now[0])
        mp.setitem(host_time._HOST, "seconds", host_time.REFERENCE_SECONDS)
        m = Recorder(_context()).measure(step, iterations=iterations, warmup=warmup)
    measured = calls[-m.iterations:]
    assert m.iterations == iterations and len(calls) >= iterations
    assert m.extra["timing"]["host_measured_s"] == sum(measured) / len(measured)
