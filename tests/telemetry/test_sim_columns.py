"""The simulated source generates a window as typed columns: the same series, summary and file a
``Reading`` per sample gave, and a long window at a short interval held at a few doubles a sample."""

import math
import tracemalloc
import types

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pytest_jetson.clock import SimClock
from pytest_jetson.telemetry.base import Reading
from pytest_jetson.telemetry.sampler import Sampler
from pytest_jetson.telemetry.series import Series
from pytest_jetson.telemetry.sim_sensors import POWER_NOISE, TEMP_NOISE_C, UTIL_NOISE_PCT, SimulatedSource


def one_at_a_time(src, start, end, interval):
    """The specification: the readings drawn one after another, a ``Reading`` each (what the
    source generated before its columns)."""
    if end < start:
        return []
    n = int(math.floor((end - start) / interval + 1e-9)) + 1
    times = [start + i * interval for i in range(n)]
    if times[-1] < end - 1e-12:
        times.append(end)
    src._advance_thermal(start)
    out, rng, prev = [], src._rng, start
    for t in times:
        src._advance_thermal(t)
        power, memory, util, clock, emc, wl, cpu, act = src._over(prev, t)
        prev = t
        p = max(0.0, power * (1.0 + POWER_NOISE * rng.standard_normal()))
        noise = rng.standard_normal()
        u = None if util is None else (0.0 if util == 0 else float(np.clip(util + UTIL_NOISE_PCT * noise, 0.0, 100.0)))
        act = act and {k: float(np.clip(v * (1.0 + 0.01 * UTIL_NOISE_PCT * noise), 0.0, 100.0))
                       for k, v in act.items()}
        temp = src._temp + TEMP_NOISE_C * rng.standard_normal()
        out.append(Reading(t=t, board_power_w=p, rails_w={"VDD_IN": p}, memory_bytes=memory, gpu_util=u,
                           gpu_clock_mhz=clock, emc_util=emc, temps_c={"gpu": temp, "cpu": temp - 1.5, "tj": temp + 0.5},
                           cpu_util=cpu, **(act or {})))
    return out


def load(power, util, busy_activity, cpu):
    wl = types.SimpleNamespace(power=power, idle_power=3.0, gpu_util=util, gpu_clock_mhz=612.0,
                               max_gpu_clock_mhz=625.0, memory=2.5e9, cpu_util=cpu)
    if busy_activity:
        wl.sm_active, wl.tensor_active, wl.issue_active, wl.dram_util = 0.8, 0.3, 0.5, 0.99
    return wl


def bits(series):
    """Every figure of a series, exactly (NaN equal to NaN, -0.0 apart from 0.0)."""
    cols = {"t": series.t, **{k: getattr(series, k) for k in ("board_power_w", "memory_bytes", "gpu_util",
            "gpu_clock_mhz", "emc_util", "cpu_util", "sm_active", "tensor_active", "issue_active", "dram_util")}}
    cols.update({f"rail {k}": v for k, v in series.rails_w.items()})
    cols.update({f"temp {k}": v for k, v in series.temps_c.items()})
    return {k: np.asarray(v, dtype=float).tobytes() for k, v in cols.items()}, series.clock, [list(r) for r in series.throttle]


# (idle before, load seconds, its power, its GPU load (0: idle GPU, None: unknown), activity known, CPU %)
LOADS = st.lists(st.tuples(st.floats(0, 2), st.floats(0, 3), st.floats(0.5, 40), st.sampled_from([0.0, 0.4, 0.97, 55.0, None]),
                           st.booleans(), st.sampled_from([0.0, 16.7])), min_size=1, max_size=4)


class OneAtATime(SimulatedSource):
    """The source as it was: a list of ``Reading``s per window."""

    def generate(self, start, end, interval):
        return one_at_a_time(self, start, end, interval)


def sampled(source, clock, interval, end, peeks):
    """The series a sampler records over ``[0, end]``, peeking at the fractions ``peeks``."""
    with Sampler(source, interval=interval, clock=clock) as sampler:
        for at in sorted(peeks):
            if at * end > clock.now():
                clock.advance(at * end - clock.now())
            sampler.peek()
        clock.advance(max(0.0, end - clock.now()))  # peeks may have summed a hair past it
    return sampler


@settings(max_examples=25, deadline=None)
@given(loads=LOADS, seed=st.integers(0, 2**32 - 1), interval=st.sampled_from([0.02, 0.05, 0.1, 0.37, 1.0]),
       peeks=st.lists(st.floats(0, 1), max_size=3))
@example(loads=[(1.0, 1 / 3, 1.0, 0.0, False, 0.0)], seed=0, interval=0.02, peeks=[1.0, 1 / 3])  # peeks past the end
def test_a_window_in_columns_is_the_window_a_reading_at_a_time(loads, seed, interval, peeks):
    """Generated in parts (peeks mid-window) or at once, the sampler's series, summary and file
    are those of the readings one at a time: the same noise stream, the same floats."""
    clock, spec_clock = SimClock(), SimClock()
    t = 0.0
    for idle, busy, power, util, activity, cpu in loads:
        for c in (clock, spec_clock):
            c.announce(load(power, util, activity, cpu), t + idle, t + idle + busy)
        t += idle + busy
    got = sampled(SimulatedSource(clock, seed=seed), clock, interval, t + 0.5, peeks)
    want = sampled(OneAtATime(spec_clock, seed=seed), spec_clock, interval, t + 0.5, peeks)
    assert bits(got.series) == bits(want.series)
    assert got.series.to_dict() == want.series.to_dict()
    assert got.summary.to_dict() == want.summary.to_dict()
    assert _summary_of(got.series) == _summary_of(want.series)


def _summary_of(series):
    from pytest_jetson.telemetry.summary import summarize

    return summarize(series, source="simulated", interval=None, power_basis="simulated board power",
                     memory_scope="simulated memory in use", max_gpu_clock_mhz=625.0)


def test_a_window_generated_at_once_matches_the_readings_one_at_a_time():
    clock, spec_clock = SimClock(), SimClock()
    for c in (clock, spec_clock):
        c.announce(load(12.0, 0.9, True, 0.0), 1.0, 4.0)
        c.announce(load(5.0, None, False, 16.7), 4.5, 6.0)
        c.advance(7.0)
    got = SimulatedSource(clock, seed=3).generate(0.0, 7.0, 0.1)
    want = Series.from_readings(one_at_a_time(SimulatedSource(spec_clock, seed=3), 0.0, 7.0, 0.1), clock="virtual")
    assert bits(got) == bits(want) and len(got) == 71
    assert np.isnan(got.gpu_util[(got.t > 4.5) & (got.t <= 6.0)]).all()  # a load that does not say
    assert (got.gpu_util[got.t < 1.0] == 0.0).all()  # an idle GPU reads exactly 0 %


def test_a_long_window_at_a_short_interval_holds_a_few_doubles_a_sample():
    """20,000 samples (200 s at 10 ms): at its peak the sampler held about 1.2 KB a sample as
    Readings (a dataclass, two dicts and a list each); as columns its 15 figures take 120 bytes,
    twice that while a window's columns are joined. Before: 1,106 held, 1,154 at the peak; now
    about 129 and 259."""
    n = 20_000
    clock = SimClock()
    clock.announce(load(12.0, 0.9, True, 0.0), 10.0, 190.0)
    warm = Sampler(SimulatedSource(clock, seed=1), interval="10ms", clock=clock)
    with warm:
        clock.advance(1.0)
    start = clock.now()
    tracemalloc.start()
    try:
        with Sampler(SimulatedSource(clock, seed=1), interval="10ms", clock=clock) as sampler:
            clock.advance(n * 0.01 - 0.005)
            sampler.peek()  # a window decided mid-way generates in two parts
            clock.advance(0.005)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(sampler.series) == n + 1 and sampler.series.t[0] == start
    assert held / n < 200
    assert peak / n < 450
