"""The history store (``--jetson-history``) at the size of a team's year: ``RUNS`` stored runs of a
suite of ``METRICS`` metrics (100 tests, 3 metrics each at full size), each point a value with its
interval, baseline and tolerance. Figures: the time to append one run, the time of
``pytest-jetson history STORE --no-plots`` (read every run, analyse every metric's trend, print
the findings) and the store's size on disk.

Run: ``python3 -m pytest benchmarks/test_bench_history_store.py -q -s``; the closing note's
figures come from ``JETSON_BENCH_STORE_RUNS=1000 JETSON_BENCH_STORE_METRICS=300`` (the smoke size
is 60 runs of 30 metrics).
"""

import contextlib
import io
import math
import os
import random
import time

from pytest_jetson.cli import main as cli_main
from pytest_jetson.report import history_store
from pytest_jetson.report.run_history import Point

RUNS = int(os.environ.get("JETSON_BENCH_STORE_RUNS", "60"))
METRICS = int(os.environ.get("JETSON_BENCH_STORE_METRICS", "30"))
NAMES = ("throughput", "latency_p99", "power")


def make_store(path, runs=RUNS, metrics=METRICS):
    rng = random.Random(0)
    tests = max(1, metrics // len(NAMES))
    device = {"device": "orin-nano-8gb", "power_mode": "15W", "simulated": False, "jetpack": "6.2"}
    target = {"id": "orin-nano-8gb", "title": "Jetson Orin Nano 8GB (real)", "backend": "tensorrt"}
    for run in range(runs):
        commit = {"id": f"{rng.getrandbits(160):040x}", "branch": "main", "dirty": False,
                  "time": f"2026-{1 + run * 12 // runs:02d}-01T10:00:00+00:00", "author_time": None,
                  "project": "vision", "source": "git"}
        points = {}
        for t in range(tests):
            for k, name in enumerate(NAMES):
                base = 100.0 * (1 + t + k)
                value = base * math.exp(rng.gauss(0, 0.01))
                points[(f"tests/perf/test_m{t // 10}.py::test_{t}", name)] = Point(
                    value=value, ci=(value * 0.99, value * 1.01), baseline=base, tolerance=0.05, outcome="pass")
        created = f"2026-{1 + run * 12 // runs:02d}-{1 + run % 28:02d}T{run % 24:02d}:00:00Z"
        head = history_store.header(device, target, {"commit": commit, "machine": {"hostname": "nano-1",
                                                                                   "serial": "1424321012345"}},
                                    created)
        history_store.append(path, head, points)


def test_history_over_a_stored_year_of_runs(benchmark, tmp_path):
    store = tmp_path / "history.sqlite"
    t0 = time.perf_counter()
    make_store(store)
    per_append = (time.perf_counter() - t0) / RUNS
    assert history_store.count(store) == RUNS

    def history():
        with contextlib.redirect_stdout(io.StringIO()) as out:
            assert cli_main(["history", str(store), "--no-plots"]) == 0
        return out.getvalue()

    text = benchmark.pedantic(history, rounds=3 if RUNS <= 100 else 1, iterations=1)
    size = sum(p.stat().st_size for p in tmp_path.iterdir())
    benchmark.extra_info.update(runs=RUNS, metrics=METRICS, store_bytes=size, append_s=per_append)
    print(f"\n{RUNS} runs x {METRICS} metrics: history {benchmark.stats.stats.median:.2f} s, "
          f"store {size / 2 ** 20:.1f} MiB ({size / RUNS / 1024:.1f} KiB a run), "
          f"append {per_append * 1e3:.1f} ms a run")
    assert text.startswith(f"history of {RUNS} runs")
