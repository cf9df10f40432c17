"""The sampler's own cost: CPU time it takes at 100 Hz with the host source (goal: under 2 %
of one core) and how far its timestamps stray from the 10 ms grid; plus parse_line's speed.

Run: python3 -m pytest tests/benchmarks/test_bench_telemetry.py --benchmark-only -s
Figures land in the benchmark's extra_info (``--benchmark-json``) and are printed with -s.
"""

import os
import time
from pathlib import Path

import numpy as np
import pytest

from pytest_jetson.telemetry.host import HostSource
from pytest_jetson.telemetry.sampler import Sampler
from pytest_jetson.telemetry.tegrastats import parse_line

pytest.importorskip("pytest_benchmark")

SECONDS = float(os.environ.get("PYTEST_JETSON_BENCH_SECONDS", "3"))
INTERVAL = 0.01
LINE = [x for x in (Path(__file__).parent.parent / "data" / "tegrastats" / "jp6_agx_orin.txt").read_text().splitlines()
        if x and not x.startswith("#")][0]


def _sample_for(seconds):
    """Sample the host source at 100 Hz while this thread sleeps; the process's CPU time over
    the window is then the sampler's (and the interpreter's idle housekeeping)."""
    sampler = Sampler(HostSource(), interval=INTERVAL)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with sampler:
        time.sleep(seconds)
    cpu1, wall1 = time.process_time(), time.perf_counter()
    return sampler, (cpu1 - cpu0) / (wall1 - wall0)


def test_bench_sampler_cpu_cost_and_jitter_at_100hz(benchmark):
    result = {}

    def run():
        result["sampler"], result["cost"] = _sample_for(SECONDS)

    benchmark.pedantic(run, rounds=1, iterations=1)
    sampler, cost = result["sampler"], result["cost"]
    t = sampler.series.t
    dt = np.diff(t)
    grid = t - t[0] - INTERVAL * np.round((t - t[0]) / INTERVAL)  # offset from the ideal 10 ms grid
    info = {
        "seconds": SECONDS,
        "interval_ms": INTERVAL * 1e3,
        "samples": int(t.size),
        "expected_samples": int(SECONDS / INTERVAL),
        "cpu_cost_pct_of_one_core": round(100.0 * cost, 3),
        "period_mean_ms": round(float(dt.mean()) * 1e3, 4),
        "period_std_ms": round(float(dt.std()) * 1e3, 4),
        "period_p99_ms": round(float(np.percentile(dt, 99)) * 1e3, 4),
        "period_max_ms": round(float(dt.max()) * 1e3, 4),
        "grid_offset_p50_ms": round(float(np.percentile(np.abs(grid), 50)) * 1e3, 4),
        "grid_offset_p99_ms": round(float(np.percentile(np.abs(grid), 99)) * 1e3, 4),
        "skipped_ticks": int(np.sum(np.maximum(np.round(dt / INTERVAL) - 1, 0))),
    }
    benchmark.extra_info.update(info)
    print("\ntelemetry sampler at 100 Hz (host source):", info)
    assert t.size > 0.5 * SECONDS / INTERVAL


def test_bench_parse_line(benchmark):
    sample = benchmark(parse_line, LINE)
    assert sample.complete
    benchmark.extra_info["line_chars"] = len(LINE)
