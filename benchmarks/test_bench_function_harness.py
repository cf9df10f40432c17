"""The cost of measuring a function: ``perf.measure(fn)`` per call against a bare
``time.perf_counter`` loop around the same function and against pytest-benchmark's
``benchmark(fn)``, on a no-op and on a 20 us busy function; and one ``perf.stage`` enter/exit.

Ratios are measured in one run, the loops interleaved (best of ``ROUNDS``), so a busy neighbour
hurts all alike. Each figure is stored in ``extra_info`` (see ``--benchmark-json``) and printed;
there are no timing asserts, this machine is shared. ``JETSON_BENCH_CALLS`` sets the calls per
loop (a smoke size by default):

    JETSON_BENCH_CALLS=200000 python -m pytest benchmarks/test_bench_function_harness.py -s
"""

import os
import time

import pytest

import pytest_jetson
from pytest_jetson.run.recorder import Recorder

CALLS = int(os.environ.get("JETSON_BENCH_CALLS", "20000"))
ROUNDS = 5


def noop():
    pass


def busy_20us():
    end = time.perf_counter() + 20e-6
    while time.perf_counter() < end:
        pass


FUNCTIONS = {"noop": noop, "busy_20us": busy_20us}


def _bare(fn, n):
    """Per call: a bare loop around ``fn``, timed as a whole."""
    now = time.perf_counter
    t0 = now()
    for _ in range(n):
        fn()
    return (now() - t0) / n


def _bare_timed(fn, n):
    """Per call: the same loop reading the clock once per call and keeping each latency, what
    any per-call measurement has to do at least."""
    now = time.perf_counter
    lat = []
    append = lat.append
    prev = now()
    for _ in range(n):
        fn()
        t = now()
        append(t - prev)
        prev = t
    return sum(lat) / n


def _perf_measure(fn, n):
    """Per call: wall time of perf.measure(fn) / calls, and the latency it reports."""
    t0 = time.perf_counter()
    m = Recorder().measure(fn, iterations=n, warmup=0, telemetry="none")
    return (time.perf_counter() - t0) / n, m.latency_mean


def _skip_if_disabled(benchmark):
    if benchmark.disabled:  # --benchmark-disable: run the code once, measure nothing
        benchmark(lambda: None)
        pytest.skip("benchmarks disabled")


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_perf_measure_cost_per_call(benchmark, name):
    _skip_if_disabled(benchmark)
    fn = FUNCTIONS[name]
    n = CALLS if name == "noop" else max(1000, CALLS // 20)
    bare, timed, wall, reported = [], [], [], []
    for _ in range(ROUNDS):
        bare.append(_bare(fn, n))
        timed.append(_bare_timed(fn, n))
        w, r = _perf_measure(fn, n)
        wall.append(w)
        reported.append(r)
    benchmark(fn)  # pytest-benchmark's own figure for the same function, in the same run
    pb = benchmark.stats.stats.min
    b, t, w, r = min(bare), min(timed), min(wall), min(reported)
    benchmark.extra_info.update(bare_s=b, bare_timed_s=t, perf_measure_wall_s=w, perf_measure_reported_s=r,
                                pytest_benchmark_s=pb, added_per_call_s=w - b,
                                ratio_wall_to_bare=w / b, ratio_reported_to_bare=r / b,
                                ratio_pytest_benchmark_to_bare=pb / b)
    print(f"\n{name}: per call bare {b * 1e9:.0f} ns, bare with a clock read {t * 1e9:.0f} ns, "
          f"perf.measure {w * 1e9:.0f} ns wall (adds {(w - b) * 1e9:.0f} ns; reports {r * 1e9:.0f} ns), "
          f"pytest-benchmark reports {pb * 1e9:.0f} ns; ratios to bare: perf.measure {w / b:.2f}x wall, "
          f"{r / b:.2f}x reported, pytest-benchmark {pb / b:.2f}x (best of {ROUNDS} rounds of {n})")


def _with_stages(k):
    def pipeline():
        for _ in range(k):
            with pytest_jetson.stage("s"):
                pass
    return pipeline


def test_stage_enter_exit_cost(benchmark):
    """One ``perf.stage`` enter/exit inside a measurement (wall clock), and outside one."""
    _skip_if_disabled(benchmark)
    k, n = 10, max(1000, CALLS // 10)
    inside, base = [], []
    for _ in range(ROUNDS):
        base.append(_perf_measure(_with_stages(0), n)[1])
        inside.append(_perf_measure(_with_stages(k), n)[1])
    per_stage = (min(inside) - min(base)) / k
    outside = min(_bare(_with_stages(k), n) for _ in range(ROUNDS)) / k
    stage = pytest_jetson.stage("s")

    def enter_exit():
        with stage:
            pass

    benchmark(enter_exit)
    benchmark.extra_info.update(stage_in_measurement_s=per_stage, stage_outside_s=outside)
    print(f"\nperf.stage enter/exit: {per_stage * 1e9:.0f} ns inside a measurement, {outside * 1e9:.0f} ns "
          f"outside one (a new stage object each time; best of {ROUNDS} rounds of {n} calls x {k})")
