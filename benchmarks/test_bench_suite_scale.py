"""Per-measurement cost along a simulated suite: flat from the first test to the last.

One session clock, one telemetry factory (as a session has), one simulated engine measured N
times for 0.2 s of virtual time each, with an idle gap between tests (so each test announces a
stretch of its own on the clock). The CPU time of each measurement is recorded; the figure is
the slope of a least-squares line through cost against the measurement's index (goal: about 0,
the suite linear) and the mean cost of the first and the last tenth. Measured side by side in the
same run: telemetry off, and a clock that scans every stretch since the session began (the former
``SimClock.load_edges``).

Run: python3 -m pytest benchmarks/test_bench_suite_scale.py --benchmark-only -s
(``JETSON_BENCH_SUITE_TESTS=N``: N measurements, default 300; the closing note used 3000 and
10000. ``JETSON_BENCH_SUITE_FORMER=0`` leaves out the former clock, which is quadratic.)
"""

import os
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


class _ScanningClock(SimClock):
    """The former clock: every stretch since the session began is looked at for each span."""

    def load_edges(self, a, b):
        import bisect

        i = bisect.bisect_right(self._starts, b)
        return sorted({x for rec in self.loads[:i] for x in rec[:2] if a < x < b})


def _suite(n, clock, telemetry):
    device = simulated("orin-nano")
    factory = TelemetryFactory(device, clock, source="simulated") if telemetry else None
    engine = open_engine("mobilenet_v2", backend="simulated", device=device, precision="int8", batch=1,
                         clock=clock)
    costs = np.empty(n)
    for i in range(n):
        clock.advance(0.5)  # the session between two tests: the board idles
        t0 = time.process_time()
        measure(engine, duration="0.2s", warmup="0.05s", telemetry=factory, profile=False)
        costs[i] = time.process_time() - t0
    return costs


def _figures(costs):
    n = len(costs)
    k = max(1, n // 10)
    slope = np.polyfit(np.arange(n), costs, 1)[0]
    return {"first_tenth_ms": round(float(np.mean(costs[:k])) * 1e3, 3),
            "last_tenth_ms": round(float(np.mean(costs[-k:])) * 1e3, 3),
            "slope_us_per_1000_tests": round(float(slope) * 1e9, 1),
            "growth_first_to_last": round(float(np.mean(costs[-k:]) / np.mean(costs[:k])), 3)}


def test_bench_per_measurement_cost_is_flat_along_the_suite(benchmark):
    runs = {}

    def campaign():
        runs["telemetry on"] = _suite(TESTS, SimClock(), True)
        runs["telemetry off"] = _suite(TESTS, SimClock(), False)
        if FORMER:
            runs["telemetry on, former clock"] = _suite(TESTS, _ScanningClock(), True)

    benchmark.pedantic(campaign, rounds=1, iterations=1)
    figures = {name: _figures(costs) for name, costs in runs.items()}
    benchmark.extra_info.update(tests=TESTS, **figures)
    print(f"\n{TESTS} simulated measurements, CPU per measurement:")
    for name, f in figures.items():
        print(f"  {name:<28} first tenth {f['first_tenth_ms']:.3f} ms, last tenth {f['last_tenth_ms']:.3f} ms "
              f"(x{f['growth_first_to_last']}), slope {f['slope_us_per_1000_tests']:+.1f} us per 1,000 tests")
