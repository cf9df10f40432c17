"""Per-measurement cost along a simulated suite: flat from the first test to the last.

One session clock, one telemetry factory (as a session has), one simulated engine measured N
times for 0.2 s of virtual time each, with an idle gap between tests (so each test announces a
stretch of its own on the clock). Side by side: telemetry on, telemetry off and (optionally) a
clock that scans every stretch since the session began (the former ``SimClock.load_edges``).

The variants run interleaved, one measurement of each in turn, not one suite after the other: on
a shared machine the CPU time of the same work drifts by tens of percent over a minute (other
jobs on the cores and their caches), and suites run one after the other read that drift as
growth of the first one. Figures per variant:

* CPU time: the mean and the median of the first and the last tenth (the median ignores bursts
  of other work), the slope of a least-squares line through cost against the index, and the
  median ratio of each test to the telemetry-off test run just beside it in the first and the
  last tenth (drift cancels in the ratio; growth of one variant does not);
* work: Python bytecodes executed per measurement (a count, not a time: the same on a busy
  machine as on a quiet one) over ten more tests after the tenth and ten after the last (traced,
  so not timed);
* state: memory blocks left allocated per step (one test of every variant) from the first tenth
  to the end (``sys.getallocatedblocks``), what the sessions keep per test.

Goal: the work ratio last/first about 1 (the suite linear) and a few blocks per test (each
clock's record of the test's stretch: a list and its two floats); the assertions are on those counts, never on times.

Run: python3 -m pytest benchmarks/test_bench_suite_scale.py --benchmark-only -s
(``JETSON_BENCH_SUITE_TESTS=N``: N measurements of each variant, default 300; the closing note used
3000 and 10000. ``JETSON_BENCH_SUITE_FORMER=0`` leaves out the former clock, which is quadratic.)
"""

import os
import sys
import time

import numpy as np
import pytest

from pytest_jetson.clock import SimClock
from pytest_jetson.devices.device import simulated
from pytest_jetson.engines import open_engine
from pytest_jetson.run.harness import measure
from pytest_jetson.telemetry.factory import TelemetryFactory

pytest.importorskip("pytest_benchmark")

TESTS = int(os.environ.get("JETSON_BENCH_SUITE_TESTS", "300"))
FORMER = os.environ.get("JETSON_BENCH_SUITE_FORMER", "1") != "0"
#: measurements whose bytecodes are counted, at each end of the suite
COUNTED = 10


class _ScanningClock(SimClock):
    """The former clock: every stretch since the session began is looked at for each span."""

    def load_edges(self, a, b):
        import bisect

        i = bisect.bisect_right(self._starts, b)
        return sorted({x for rec in self.loads[:i] for x in rec[:2] if a < x < b})


class _Suite:
    """One session's clock, telemetry and engine, measured one test at a time."""

    def __init__(self, n, clock, telemetry):
        device = simulated("orin-nano")
        self.clock = clock
        self.factory = TelemetryFactory(device, clock, source="simulated") if telemetry else None
        self.engine = open_engine("mobilenet_v2", backend="simulated", device=device, precision="int8",
                                  batch=1, clock=clock)
        self.costs = np.empty(n)
        self.bytecodes = {"first": 0, "last": 0}
        self.blocks = []

    def _measure(self):
        self.clock.advance(0.5)  # the session between two tests: the board idles
        measure(self.engine, duration="0.2s", warmup="0.05s", telemetry=self.factory, profile=False)

    def test(self, i):
        t0 = time.process_time()
        self._measure()
        self.costs[i] = time.process_time() - t0

    def count(self, end):
        """Ten more tests, their bytecodes counted (tracing slows them: they are not timed)."""
        before = _Bytecodes.count
        sys.settrace(_Bytecodes.trace)
        try:
            for _ in range(COUNTED):
                self._measure()
        finally:
            sys.settrace(None)
        self.bytecodes[end] = _Bytecodes.count - before


class _Bytecodes:
    count = 0

    @staticmethod
    def trace(frame, event, arg):
        frame.f_trace_opcodes = True
        if event == "opcode":
            _Bytecodes.count += 1
        return _Bytecodes.trace


def _campaign(n, variants):
    suites = {name: _Suite(n, clock, telemetry) for name, (clock, telemetry) in variants.items()}
    k = max(1, n // 10)
    for i in range(n):
        if i == min(COUNTED, n - 1):  # past the first calls' warm-up
            for suite in suites.values():
                suite.count("first")
        for suite in suites.values():
            suite.test(i)
        if i in (min(k, n - 2), n - 1):
            # blocks alive at each end, each suite on its own: the others' are the same per step
            for suite in suites.values():
                suite.blocks.append((i, sys.getallocatedblocks()))
    for suite in suites.values():
        suite.count("last")
    return suites


def _figures(suite, off):
    costs = suite.costs
    n = len(costs)
    k = max(1, n // 10)
    paired = costs / off.costs  # each against the telemetry-off test run just beside it
    slope = np.polyfit(np.arange(n), costs, 1)[0]
    (i0, b0), (i1, b1) = suite.blocks[0], suite.blocks[-1]
    return {"first_tenth_ms": round(float(np.mean(costs[:k])) * 1e3, 3),
            "last_tenth_ms": round(float(np.mean(costs[-k:])) * 1e3, 3),
            "first_tenth_median_ms": round(float(np.median(costs[:k])) * 1e3, 3),
            "last_tenth_median_ms": round(float(np.median(costs[-k:])) * 1e3, 3),
            "slope_us_per_1000_tests": round(float(slope) * 1e9, 1),
            "growth_first_to_last": round(float(np.mean(costs[-k:]) / np.mean(costs[:k])), 3),
            "median_growth_first_to_last": round(float(np.median(costs[-k:]) / np.median(costs[:k])), 3),
            "to_off_first_tenth": round(float(np.median(paired[:k])), 3),
            "to_off_last_tenth": round(float(np.median(paired[-k:])), 3),
            "bytecodes_first": suite.bytecodes["first"] // COUNTED,
            "bytecodes_last": suite.bytecodes["last"] // COUNTED,
            "work_growth_first_to_last": round(suite.bytecodes["last"] / suite.bytecodes["first"], 3),
            # all suites step together: the blocks the step left are the variants' together
            "blocks_per_step": round((b1 - b0) / max(1, i1 - i0), 2)}


def test_bench_per_measurement_cost_is_flat_along_the_suite(benchmark):
    runs = {}

    def campaign():
        variants = {"telemetry on": (SimClock(), True), "telemetry off": (SimClock(), False)}
        if FORMER:
            variants["telemetry on, former clock"] = (_ScanningClock(), True)
        runs.update(_campaign(TESTS, variants))

    benchmark.pedantic(campaign, rounds=1, iterations=1)
    figures = {name: _figures(suite, runs["telemetry off"]) for name, suite in runs.items()}
    benchmark.extra_info.update(tests=TESTS, **figures)
    print(f"\n{TESTS} simulated measurements of each variant, interleaved; CPU per measurement:")
    for name, f in figures.items():
        print(f"  {name:<28} first tenth {f['first_tenth_ms']:.3f} ms, last tenth {f['last_tenth_ms']:.3f} ms "
              f"(x{f['growth_first_to_last']}; medians {f['first_tenth_median_ms']:.3f} -> "
              f"{f['last_tenth_median_ms']:.3f} ms, x{f['median_growth_first_to_last']}), "
              f"slope {f['slope_us_per_1000_tests']:+.1f} us per 1,000 tests; "
              f"to telemetry off beside it x{f['to_off_first_tenth']} -> x{f['to_off_last_tenth']}; "
              f"bytecodes {f['bytecodes_first']} -> {f['bytecodes_last']} (x{f['work_growth_first_to_last']})")
    print(f"  blocks left allocated per step (all variants): {figures['telemetry on']['blocks_per_step']}")
    for name in ("telemetry on", "telemetry off"):
        assert figures[name]["work_growth_first_to_last"] < 1.05, (name, figures[name])
    # the clocks' records of each test's stretch (a list and its two floats), a few more at most
    assert figures["telemetry on"]["blocks_per_step"] < 8 * len(runs), figures["telemetry on"]
    if FORMER and TESTS >= 50:  # the count sees a scan that grows with the suite (given some suite)
        assert figures["telemetry on, former clock"]["work_growth_first_to_last"] > 1.05, figures
