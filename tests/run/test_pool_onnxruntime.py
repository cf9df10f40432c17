"""Real pools of onnxruntime processes on this machine, and what physics allows them.

Each worker's session runs one intra-op thread, so N processes need N cores: past the machine's
cores, the aggregate throughput cannot grow and each process gets a smaller share. The machine is
shared (other suites run beside this one), so bounds use the single-core service time of the
undisturbed iterations (a low percentile of the latencies), not one noisy throughput figure.
"""

import os

import numpy as np
import psutil
import pytest

from pytest_jetson.errors import WorkerError
from pytest_jetson.run.pool import run_pool

pytest.importorskip("onnxruntime")

MODEL = "squeezenet1_1"
RES = 64
#: Slack on physical bounds: timers, turbo clocks and cache effects, not a fudge for failures.
SLACK = 1.2


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


@pytest.fixture(scope="module")
def model_file():
    from pytest_jetson.models import zoo

    # built once here, so workers load it from the cache and load times are loads, not builds
    return zoo.path(MODEL, resolution=RES)


def _pool(n, duration="1s"):
    return run_pool(MODEL, processes=n, backend="onnxruntime", resolution=RES, precision="fp32",
                    duration=duration, warmup="0.2s")


def test_two_onnxruntime_workers(model_file):
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    m = _pool(2, duration="0.5s")
    assert m.backend == "onnxruntime" and m.clock == "wall" and m.processes == 2
    assert m.extra["threads_per_worker"] == [1, 1]
    for w in m.workers:
        assert w.backend == "onnxruntime" and w.model == MODEL and w.precision == "fp32"
        assert w.iterations > 10 and w.throughput > 0
        assert w.engine_memory and w.engine_memory > 0
        assert w.extra["load_s"] > 0
    assert m.memory == pytest.approx(sum(w.engine_memory for w in m.workers))
    assert m.start_skew is not None and m.start_skew >= 0
    left = {p.pid for p in psutil.Process().children(recursive=True)} - before
    assert all("resource_tracker" in " ".join(psutil.Process(p).cmdline()) for p in left)


def test_one_sampler_watches_the_whole_pool(model_file):
    m = run_pool(MODEL, processes=2, backend="onnxruntime", resolution=RES, precision="fp32",
                 duration="0.5s", warmup="0.1s", telemetry="host")
    t = m.telemetry
    assert t is not None and t.source == "host" and t.samples >= 2
    assert t.duration == pytest.approx(0.5, abs=0.25)  # the window, not the spawn and load
    # the host source follows the parent's process tree, so it sees both workers' memory
    assert m.memory == t.memory_peak_bytes >= sum(w.engine_memory for w in m.workers)
    assert all(w.telemetry is None for w in m.workers)


@pytest.mark.slow
def test_throughput_physics_of_1_2_4_processes(model_file):
    runs = {n: _pool(n) for n in (1, 2, 4)}
    cores = _cores()
    # one process's single-core service time: its undisturbed iterations
    service = min(float(np.percentile(m.latencies, 10)) for m in runs.values())
    one_core = 1.0 / service  # items/s one core sustains (batch 1)
    for n, m in runs.items():
        busy = min(n, cores)
        # the pool cannot do more than its busy cores can
        assert m.throughput <= busy * one_core * SLACK, (n, m.throughput, one_core)
        # and no process gets more than its share of them
        assert m.per_process_throughput.mean <= busy / n * one_core * SLACK, (n, m.per_process_throughput)
    if cores < 4:
        # 4 single-threaded processes on fewer cores: each gets clearly less than one alone
        assert runs[4].per_process_throughput.mean < runs[1].per_process_throughput.mean
        assert runs[4].per_process_throughput.mean < 0.8 * one_core


def test_a_model_a_worker_cannot_load_names_the_worker_and_the_model():
    with pytest.raises(WorkerError) as info:
        run_pool("no_such_model", processes=2, backend="onnxruntime", duration="0.5s", warmup="0.1s")
    msg = str(info.value)
    assert "pool worker" in msg and "model 'no_such_model'" in msg
    assert "could not open its engine" in msg and "ModelError" in msg
