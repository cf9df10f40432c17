"""What a long measurement costs in memory and time, per iteration or per telemetry sample, each
case in a fresh process: peak RSS above what the process held before the case (the kernel's
high-water mark, reset first), CPU and wall time.

* ``function-wall``: ``perf.measure(fn)`` of a no-op on the wall clock, ``N`` calls;
* ``function-sim``: the same on the simulated Orin Nano (host time measured and scaled per call);
* ``pool``: joining 8 workers' ``N`` latencies into the pool's;
* ``telemetry``: a simulated sampler over a window of ``N`` samples at 10 ms (a peek mid-way);
* ``engine-telemetry``: a simulated MobileNetV2 measured for ``N`` iterations with simulated
  telemetry every 10 ms.

Sizes are smoke sizes unless ``JETSON_BENCH_ITERATIONS`` (calls, latencies, iterations) and
``JETSON_BENCH_SAMPLES`` (telemetry samples) ask for more. No asserts on the figures: they are
stored in ``extra_info`` and printed. One case by hand, against any checkout on ``PYTHONPATH``::

    python benchmarks/test_bench_harness_memory.py function-sim 1000000
"""

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ITERATIONS = int(os.environ.get("JETSON_BENCH_ITERATIONS", "100000"))
SAMPLES = int(os.environ.get("JETSON_BENCH_SAMPLES", "20000"))
CASES = {"function-wall": ITERATIONS, "function-sim": ITERATIONS, "pool": ITERATIONS,
         "telemetry": SAMPLES, "engine-telemetry": ITERATIONS}


def _kib(field):
    with open("/proc/self/status") as f:
        return int(re.search(rf"{field}:\s+(\d+)", f.read()).group(1))


def _reset_peak():
    """Start the high-water mark of RSS again from the current RSS (Linux 4.0+); False where the
    kernel does not let it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        return False
    return True


def _noop():
    pass


def _prepare(case, n):
    """The case as a callable, everything it needs made and warmed before the count starts."""
    from pytest_jetson.run.recorder import Recorder

    if case in ("function-wall", "function-sim"):
        ctx = None
        if case == "function-sim":
            from pytest_jetson.context import Context
            from pytest_jetson.devices.device import simulated
            from pytest_jetson.settings import Settings

            ctx = Context.create(Settings(telemetry="none"), simulated("orin-nano"))
        Recorder(ctx).measure(_noop, iterations=1000, warmup=0, telemetry="none").summary()
        return lambda: Recorder(ctx).measure(_noop, iterations=n, warmup=0, telemetry="none").summary()
    if case == "pool":
        from pytest_jetson.run.measurement import Measurement, Samples
        from pytest_jetson.run.pool import assemble
        from pytest_jetson.run.pool_spec import WorkerSpec

        specs = [WorkerSpec(index=i, model="resnet50") for i in range(8)]
        workers = [Measurement(name=f"w{i}", batch=1, latencies=Samples([1e-3 + k * 1e-12 for k in range(n // 8)]),
                               duration=1.0, items=n // 8) for i in range(8)]

        def pool():
            p = assemble(specs, workers, backend="simulated", clock_kind="virtual", window=1.0, start_skew=0.0,
                         telemetry=None, environment={}, extra={})
            return p.summary()
        return pool
    if case == "telemetry":
        import types

        from pytest_jetson.clock import SimClock
        from pytest_jetson.telemetry.sampler import Sampler
        from pytest_jetson.telemetry.sim_sensors import SimulatedSource

        clock = SimClock()
        busy = types.SimpleNamespace(power=12.0, idle_power=4.0, gpu_util=0.9, gpu_clock_mhz=612.0,
                                     max_gpu_clock_mhz=625.0, memory=2.5e9, sm_active=0.8, tensor_active=0.3,
                                     issue_active=0.5, dram_util=0.6)
        window = n * 0.01

        def sample():
            clock.announce(busy, clock.now() + 0.1 * window, clock.now() + 0.9 * window)
            with Sampler(SimulatedSource(clock, seed=1), interval="10ms", clock=clock) as s:
                clock.advance(window / 2)
                s.peek()
                clock.advance(window / 2 - 0.005)
            return s.summary
        return sample
    if case == "engine-telemetry":
        from pytest_jetson.devices.device import simulated
        from pytest_jetson.engines import open_engine
        from pytest_jetson.run.harness import measure
        from pytest_jetson.telemetry import TelemetryFactory

        device = simulated("orin-nano")
        engine = open_engine("mobilenet_v2", backend="simulated", device=device, precision="int8")
        telemetry = TelemetryFactory(device, engine.clock, seed=1)

        def run(k):
            return measure(engine, iterations=k, warmup=0, profile=False, telemetry=telemetry,
                           telemetry_interval=0.01).summary()
        run(1000)
        return lambda: run(n)
    raise SystemExit(f"unknown case {case!r}; one of {', '.join(CASES)}")


def run_case(case, n):
    """One case in this process: its figures as a dict."""
    go = _prepare(case, n)
    rss0 = _kib("VmRSS")
    reset = _reset_peak()
    c0, t0 = time.process_time(), time.perf_counter()
    go()
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    peak = (_kib("VmHWM") - rss0) * 1024 if reset else None
    return {"case": case, "n": n, "cpu_s": round(cpu, 3), "wall_s": round(wall, 3),
            "peak_rss_mb": None if peak is None else round(peak / 1e6, 1),
            "peak_bytes_per_item": None if peak is None else round(peak / n, 1)}


def _in_a_fresh_process(case, n):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, __file__, case, str(n)], capture_output=True, text=True, env=env,
                         cwd=str(ROOT), timeout=3600)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("case", list(CASES))
def test_memory_and_time_of_a_long_measurement(benchmark, case):
    if benchmark.disabled:  # --benchmark-disable: run the code once, measure nothing
        benchmark(lambda: None)
        pytest.skip("benchmarks disabled")
    figures = {}
    benchmark.pedantic(lambda: figures.update(_in_a_fresh_process(case, CASES[case])), rounds=1, iterations=1)
    benchmark.extra_info.update(figures)
    print(f"\n{case}, n={figures['n']}: {figures['cpu_s']} s CPU, {figures['wall_s']} s wall, peak RSS "
          f"+{figures['peak_rss_mb']} MB ({figures['peak_bytes_per_item']} B per item)")


if __name__ == "__main__":
    print(json.dumps(run_case(sys.argv[1], int(sys.argv[2]))))
