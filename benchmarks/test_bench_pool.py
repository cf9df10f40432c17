"""The pool's own overhead: start-up per worker beyond its engine's load, and the start skew.

Run: python3 -m pytest benchmarks/test_bench_pool.py --benchmark-only

The timed call is a whole pool (spawn, load, warm-up, window, report, clean-up); ``extra_info``
holds what matters for a measurement's quality, per worker and over every round:

- ``startup_overhead_s``: from ``Process.start()`` in the parent to the worker's engine being
  ready, minus the engine's own load time (interpreter start, imports, pipes);
- ``start_skew_ms``: spread of the workers' window starts (goal: under 5 ms on a 2-core host);
- ``overhead_s``: the call's wall time beyond warm-up plus window.
"""

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from pytest_jetson.run.pool import run_pool

pytest.importorskip("pytest_benchmark")
# the fake engines live in tests/fakes (imported as ``fakes``); spawned workers inherit this path
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # pool_baseline

FAKE = ("fake", {"engine_factory": "fakes.pools:open_fake", "delay": 0.001})
WINDOW, WARMUP = 0.2, 0.05


def _record(benchmark, pools, walls):
    over = [w.extra["startup_overhead_s"] for m in pools for w in m.workers]
    spawn = [w.extra["spawn_s"] for m in pools for w in m.workers]
    load = [w.extra["load_s"] for m in pools for w in m.workers]
    skew = [m.start_skew * 1e3 for m in pools]
    benchmark.extra_info.update(
        processes=pools[0].processes,
        rounds=len(pools),
        startup_overhead_s_mean=float(np.mean(over)),
        startup_overhead_s_max=float(np.max(over)),
        spawn_s_mean=float(np.mean(spawn)),
        engine_load_s_mean=float(np.mean(load)),
        start_skew_ms_mean=float(np.mean(skew)),
        start_skew_ms_median=float(np.median(skew)),
        start_skew_ms_max=float(np.max(skew)),
        overhead_s_mean=float(np.mean(walls)) - (WINDOW + WARMUP),
    )


@pytest.mark.parametrize("processes", [2, 4])
def test_bench_pool_overhead(benchmark, processes):
    """A near-empty engine (1 ms sleeps): what is left is the pool's own cost."""
    pools, walls = [], []

    def once():
        t = time.perf_counter()
        m = run_pool(FAKE, processes=processes, backend="onnxruntime", duration=WINDOW, warmup=WARMUP)
        walls.append(time.perf_counter() - t)
        pools.append(m)
        return m

    # few rounds: every round is a real pool (seconds), and the suite runs benchmarks too
    m = benchmark.pedantic(once, rounds=3, iterations=1)
    assert m.processes == processes
    _record(benchmark, pools, walls)


def test_bench_pool_onnxruntime(benchmark):
    """Two real onnxruntime workers on a small model: load time next to the pool's overhead."""
    pytest.importorskip("onnxruntime")
    from pytest_jetson.models import zoo

    zoo.path("squeezenet1_1", resolution=64)
    pools, walls = [], []

    def once():
        t = time.perf_counter()
        m = run_pool("squeezenet1_1", processes=2, backend="onnxruntime", resolution=64,
                     precision="fp32", duration=WINDOW, warmup=WARMUP)
        walls.append(time.perf_counter() - t)
        pools.append(m)
        return m

    benchmark.pedantic(once, rounds=2, iterations=1)
    _record(benchmark, pools, walls)


def test_bench_simulated_pool(benchmark):
    """Eight simulated processes for a 10 s window: the contention model's cost in real time."""
    m = benchmark(run_pool, "resnet50", processes=8, precision="int8", duration="10s", warmup="1s")
    assert m.processes == 8


def test_bench_no_orphans_at_random_moments(benchmark, tmp_path):
    """20 SIGINTs and 20 SIGKILLs of a pool's parent at seeded random moments (spawn, engine load,
    warm-up, window), each worker with a child of its own: how many processes were left behind
    (goal: none), and how long the last one took to go.

    Run: python3 -m pytest benchmarks/test_bench_pool.py -k orphans --benchmark-only -s
    """
    import random
    import signal
    import sys
    from pathlib import Path

    if not sys.platform.startswith("linux"):
        pytest.skip("PR_SET_PDEATHSIG is Linux's")
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from orphans import signal_and_count, start_parent, wait_for

    rng = random.Random(15)
    results = []

    def campaign():
        for sig in [signal.SIGINT] * 20 + [signal.SIGKILL] * 20:
            proc, token = start_parent(tmp_path, {"child": True, "fault": "hang-native", "fault_worker": 1,
                                                  "fault_after": 50})
            wait_for(token, 2)
            delay = rng.uniform(0.0, 2.0)
            time.sleep(delay)
            r = signal_and_count(proc, token, sig)
            r["delay"] = delay
            results.append(r)

    benchmark.pedantic(campaign, rounds=1, iterations=1)
    left = sum(len(r["left"]) for r in results)
    by_sig = {}
    for r in results:
        by_sig.setdefault(r["signal"], []).append(r)
    summary = {
        name: {"runs": len(rs), "orphans": sum(len(r["left"]) for r in rs),
               "processes_alive_at_signal_mean": float(np.mean([r["alive_before"] for r in rs])),
               "seconds_to_none_left_max": float(np.max([r["seconds"] for r in rs])),
               "seconds_to_none_left_median": float(np.median([r["seconds"] for r in rs]))}
        for name, rs in by_sig.items()
    }
    benchmark.extra_info.update(summary)
    print("\n" + "\n".join(f"{k}: {v}" for k, v in summary.items()))
    assert left == 0, [r for r in results if r["left"]]


def test_bench_pool_spin_up_against_multiprocessing_alone(benchmark):
    """The whole pool call against multiprocessing doing what its workers do (spawn, open the
    same engine, run the window, send the latencies back, join; ``benchmarks/pool_baseline.py``),
    side by side in interleaved rounds (JETSON_BENCH_ROUNDS, default 3) at a 10 ms window:
    goal at most 1.3x. Also against the stricter baseline whose children end with ``os._exit``
    as a pool's workers do (``fast_exit``): what is left there is the pool's own work (imports
    of the harness and the device, barriers, reaper, sweep). extra_info: the medians and ratios.

    The first pool of a process also starts its reaper (one per process): a warm-up pool runs
    before the timed rounds, as the second pool of a session would."""
    import os

    import pool_baseline

    rounds = int(os.environ.get("JETSON_BENCH_ROUNDS", "3"))
    factory, options = FAKE[1]["engine_factory"], {"delay": FAKE[1]["delay"]}
    window, processes = 0.01, 2
    pool, alone, alone_fast = [], [], []

    def once():
        run_pool(FAKE, processes=processes, backend="onnxruntime", duration=window, warmup=0)
        for _ in range(rounds):
            alone.append(pool_baseline.run(processes, factory, options, window))
            alone_fast.append(pool_baseline.run(processes, factory, options, window, fast_exit=True))
            t = time.perf_counter()
            run_pool(FAKE, processes=processes, backend="onnxruntime", duration=window, warmup=0)
            pool.append(time.perf_counter() - t)

    benchmark.pedantic(once, rounds=1, iterations=1)
    ratio = float(np.median(pool) / np.median(alone))
    strict = float(np.median(pool) / np.median(alone_fast))
    benchmark.extra_info.update(processes=processes, rounds=rounds, pool_s_median=float(np.median(pool)),
                                multiprocessing_s_median=float(np.median(alone)), ratio=ratio,
                                multiprocessing_fast_exit_s_median=float(np.median(alone_fast)),
                                ratio_to_fast_exit=strict)
    print(f"\npool of {processes}: {np.median(pool):.3f} s, multiprocessing alone {np.median(alone):.3f} s: "
          f"{ratio:.2f}x; its children ending with os._exit {np.median(alone_fast):.3f} s: {strict:.2f}x "
          f"(medians of {rounds} interleaved rounds)")
