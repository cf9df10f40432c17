"""The sampler's own cost: CPU time it takes at 100 Hz (goal: under 2 % of one core) with a source
that does no work (the sampler's machinery alone), the host source and the sysfs source on a
recorded board tree; how far its timestamps stray from the 10 ms grid; how long stop() takes; and
parse_line's speed. Each cost is also measured, in the same run, for a sampler that sleeps out
its last interval instead of waiting on the stop event (the former implementation), as a ratio.

Run: python3 -m pytest benchmarks/test_bench_telemetry.py --benchmark-only -s
(PYTEST_JETSON_BENCH_SECONDS, 2 s per source, and PYTEST_JETSON_BENCH_WINDOWS, 20 stop() windows,
lengthen the run).
Figures land in the benchmark's extra_info (``--benchmark-json``) and are printed with -s.
"""

import math
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pytest_jetson.telemetry.base import Reading, Source
from pytest_jetson.telemetry.host import HostSource
from pytest_jetson.telemetry.sampler import Sampler
from pytest_jetson.telemetry.sysfs import SysfsSource
from pytest_jetson.telemetry.tegrastats import parse_line

pytest.importorskip("pytest_benchmark")

SECONDS = float(os.environ.get("PYTEST_JETSON_BENCH_SECONDS", "2"))
WINDOWS = int(os.environ.get("PYTEST_JETSON_BENCH_WINDOWS", "20"))
INTERVAL = 0.01
DATA = Path(__file__).resolve().parents[1] / "tests" / "data"
LINE = [x for x in (DATA / "tegrastats" / "jp6_agx_orin.txt").read_text().splitlines()
        if x and not x.startswith("#")][0]
BOARD = DATA / "boards" / "orin-nano-8gb-jp60"


class Idle(Source):
    """A source that does no work: what remains is the sampler's own cost."""

    name = "idle"

    def collect(self, now):
        return [Reading(t=now)]


class SleepingSampler(Sampler):
    """The former wait: sleep out delays up to 100 ms, wait on the event only beyond."""

    def _wait(self, delay):
        if delay > 0.1:
            self._stop.wait(delay)
        else:
            time.sleep(delay)


def _cost(source, seconds, cls=Sampler):
    """CPU time of this process per wall second while sampling at 100 Hz and this thread sleeps."""
    sampler = cls(source, interval=INTERVAL)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    with sampler:
        time.sleep(seconds)
    cpu1, wall1 = time.process_time(), time.perf_counter()
    return sampler, (cpu1 - cpu0) / (wall1 - wall0)


def _idle_cost(seconds):
    cpu0, wall0 = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    return (time.process_time() - cpu0) / (time.perf_counter() - wall0)


def test_bench_sampler_cpu_cost_and_jitter_at_100hz(benchmark):
    result = {}

    def run():
        result["baseline"] = _idle_cost(SECONDS)
        result["idle"] = _cost(Idle(), SECONDS)
        result["idle_sleeping"] = _cost(Idle(), SECONDS, SleepingSampler)
        result["host"] = _cost(HostSource(), SECONDS)
        result["sysfs"] = _cost(SysfsSource(root=str(BOARD)), SECONDS)

    benchmark.pedantic(run, rounds=1, iterations=1)
    sampler = result["host"][0]
    t = sampler.series.t
    dt = np.diff(t)
    grid = t - t[0] - INTERVAL * np.round((t - t[0]) / INTERVAL)  # offset from the ideal 10 ms grid
    pct = {k: round(100.0 * v[1], 3) for k, v in result.items() if k != "baseline"}
    info = {
        "seconds": SECONDS,
        "interval_ms": INTERVAL * 1e3,
        "python": sys.version.split()[0],
        "process_idle_pct": round(100.0 * result["baseline"], 3),
        "cpu_cost_pct_of_one_core": pct,
        "event_vs_sleep_cost_ratio": round(result["idle"][1] / result["idle_sleeping"][1], 3),
        "samples_host": int(t.size),
        "expected_samples": int(SECONDS / INTERVAL),
        "period_mean_ms": round(float(dt.mean()) * 1e3, 4),
        "period_std_ms": round(float(dt.std()) * 1e3, 4),
        "period_p99_ms": round(float(np.percentile(dt, 99)) * 1e3, 4),
        "grid_offset_p50_ms": round(float(np.percentile(np.abs(grid), 50)) * 1e3, 4),
        "grid_offset_p99_ms": round(float(np.percentile(np.abs(grid), 99)) * 1e3, 4),
        "skipped_ticks": int(np.sum(np.maximum(np.round(dt / INTERVAL) - 1, 0))),
    }
    benchmark.extra_info.update(info)
    print("\ntelemetry sampler at 100 Hz:", info)
    assert t.size > 0.5 * SECONDS / INTERVAL
    assert all(math.isfinite(v) for v in pct.values())


def _stop_latencies(cls, windows, interval=0.1, seed=0):
    """stop() latency of ``windows`` windows at the default 100 ms interval, each stopped at a
    random point of its interval."""
    rng = random.Random(seed)
    out = []
    for _ in range(windows):
        sampler = cls(Idle(), interval=interval).start()
        time.sleep(rng.uniform(0.0, interval) + interval)
        t0 = time.perf_counter()
        sampler.stop()
        out.append(time.perf_counter() - t0)
    return np.array(out)


def test_bench_stop_latency(benchmark):
    result = {}

    def run():
        result["event"] = _stop_latencies(Sampler, WINDOWS)
        result["sleep"] = _stop_latencies(SleepingSampler, WINDOWS)

    benchmark.pedantic(run, rounds=1, iterations=1)
    info = {"windows": WINDOWS, "interval_ms": 100}
    for key, lat in result.items():
        info[f"{key}_mean_ms"] = round(float(lat.mean()) * 1e3, 3)
        info[f"{key}_p50_ms"] = round(float(np.percentile(lat, 50)) * 1e3, 3)
        info[f"{key}_p99_ms"] = round(float(np.percentile(lat, 99)) * 1e3, 3)
    info["sleep_over_event_mean"] = round(float(result["sleep"].mean() / result["event"].mean()), 1)
    benchmark.extra_info.update(info)
    print("\nsampler stop() latency:", info)
    assert result["event"].size == WINDOWS


def test_bench_parse_line(benchmark):
    sample = benchmark(parse_line, LINE)
    assert sample.complete
    benchmark.extra_info["line_chars"] = len(LINE)
