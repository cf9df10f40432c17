"""Pools on the simulated device: the simulator's contention model, no processes, same result."""

import json

import psutil
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.clock import SimClock
from pytest_jetson.context import Context
from pytest_jetson.devices.device import simulated
from pytest_jetson.errors import ConfigError, SimulationError
from pytest_jetson.run.measurement import Measurement, PoolMeasurement
from pytest_jetson.run.pool import run_pool
from pytest_jetson.settings import Settings
from pytest_jetson.sim import predict


def _ctx(**settings):
    return Context.create(Settings(**settings), simulated("orin-nano"))


def test_shape_of_a_simulated_pool():
    clock = SimClock()
    m = run_pool("resnet50", processes=4, precision="int8", batch=1, duration="5s", warmup="1s", clock=clock)
    assert isinstance(m, PoolMeasurement)
    assert m.processes == 4 and len(m.workers) == 4
    assert m.clock == "virtual" and m.backend == "simulated"
    assert m.start_skew == 0.0
    # the shared virtual clock moved by warm-up plus window, in no real time to speak of
    assert clock.now() == pytest.approx(6.0)
    assert m.items == sum(w.items for w in m.workers)
    assert len(m.latencies) == sum(len(w.latencies) for w in m.workers)
    assert m.throughput == pytest.approx(sum(w.throughput for w in m.workers), rel=0.01)
    spread = m.per_process_throughput
    assert spread.min <= spread.mean <= spread.max
    assert spread.mean == pytest.approx(m.throughput / 4, rel=0.01)
    for w in m.workers:
        assert w.duration == pytest.approx(5.0, abs=0.05)
        assert w.latency_p99 >= w.latency_p50 > 0
        assert w.precision == "int8" and w.model == "resnet50"
    assert m.environment["processes"] == 4
    assert m.environment["device"] == "orin-nano-8gb"
    # per-window samples of the aggregate, for the gate's rank tests
    assert len(m.windows) == 10
    assert sum(m.windows) / 10 == pytest.approx(m.throughput, rel=0.05)
    assert m.metric_samples("per_process_throughput") == [w.throughput for w in m.workers]


def test_workers_follow_the_simulators_contended_latency():
    m = run_pool("resnet50", processes=4, precision="int8", duration="10s", warmup="0s")
    pred = predict(simulated("orin-nano"), "resnet50", "int8", 1, processes=4)
    for w in m.workers:
        assert w.latency_mean == pytest.approx(pred.latency, rel=0.1)
        assert w.memory == pytest.approx(pred.memory_per_process)
    assert m.throughput == pytest.approx(pred.throughput, rel=0.1)


def test_per_process_throughput_falls_and_memory_adds_up_as_processes_rise():
    runs = {n: run_pool("resnet50", processes=n, precision="int8", duration="2s", warmup="0s")
            for n in (1, 2, 4, 8)}
    per = [runs[n].per_process_throughput.mean for n in (1, 2, 4, 8)]
    assert per == sorted(per, reverse=True) and per[-1] < per[0] / 2
    one = runs[1].memory
    for n, m in runs.items():
        assert m.memory == pytest.approx(n * one, rel=1e-6)
        assert len(m.per_process_memory) == n


def test_same_seed_same_numbers_and_workers_have_their_own_noise():
    a = run_pool("resnet50", processes=3, duration="1s", seed=7)
    b = run_pool("resnet50", processes=3, duration="1s", seed=7)
    c = run_pool("resnet50", processes=3, duration="1s", seed=8)
    assert a.latencies == b.latencies
    assert a.latencies != c.latencies
    assert a.workers[0].latencies[:20] != a.workers[1].latencies[:20]


def test_context_supplies_device_clock_seed_and_duration_override():
    ctx = _ctx(seed=3, duration=0.5, telemetry="none")
    m = run_pool("resnet50", processes=2, context=ctx, duration="10s", warmup="0.1s")
    assert ctx.clock.now() == pytest.approx(0.6)
    assert m.workers[0].duration == pytest.approx(0.5, abs=0.01)
    again = run_pool("resnet50", processes=2, context=_ctx(seed=3, duration=0.5), warmup="0.1s",
                     telemetry="none")
    assert again.latencies == m.latencies


def test_duration_override_shorter_than_the_warmup_shrinks_the_warmup():
    ctx = _ctx(duration=0.5, telemetry="none")
    run_pool("resnet50", processes=2, context=ctx)  # default warm-up 1 s
    assert ctx.clock.now() == pytest.approx(1.0)


def test_telemetry_of_the_whole_pool():
    m = run_pool("resnet50", processes=4, precision="int8", context=_ctx(), duration="3s", warmup="0s")
    assert m.telemetry is not None and m.telemetry.source == "simulated"
    assert m.power is not None and m.power > 0
    # the board holds every process's memory at once
    assert m.memory == pytest.approx(sum(w.memory for w in m.workers))
    assert m.energy == pytest.approx(m.telemetry.energy_j / m.items)
    assert run_pool("resnet50", processes=2, context=_ctx(), telemetry="none").telemetry is None


def test_mixed_pool_time_slices_the_models():
    dev = simulated("orin-nano")
    m = run_pool([("resnet50", {"precision": "int8"}), ("yolov8n", {"processes": 2})],
                 duration="4s", warmup="0s")
    assert [w.model for w in m.workers] == ["resnet50", "yolov8n", "yolov8n"]
    assert m.model == "resnet50+yolov8n" and m.precision == "mixed"
    assert m.name == "pool[1x resnet50 int8 batch 1 + 2x yolov8n fp16 batch 1]"
    alone = {name: predict(dev, name, p, 1).throughput for name, p in (("resnet50", "int8"), ("yolov8n", "fp16"))}
    # everyone is slower than alone (the small fast resnet50 int8 most: it waits for two
    # yolov8n slices every round), and the pool holds the sum of the processes' memory
    assert m.workers[0].throughput < alone["resnet50"] / 2
    assert m.workers[1].throughput < alone["yolov8n"]
    assert m.workers[1].throughput == pytest.approx(m.workers[2].throughput, rel=0.05)
    mem = [predict(dev, "resnet50", "int8", 1).memory_per_process] + 2 * [predict(dev, "yolov8n", "fp16", 1).memory_per_process]
    assert m.memory == pytest.approx(sum(mem))


def test_predicted_out_of_memory_is_a_clear_simulation_error():
    with pytest.raises(SimulationError) as info:
        run_pool("resnet50", processes=64, precision="fp32", batch=16)
    msg = str(info.value)
    assert "64 process" in msg and "out of memory" in msg and "at most" in msg


def test_mixed_pool_that_does_not_fit():
    with pytest.raises(SimulationError, match=r"does not fit.*Fix: fewer processes"):
        run_pool([("resnet50", {"precision": "fp32", "batch": 16, "processes": 9}),
                  ("yolov8n", {"batch": 16, "processes": 9})])


def test_no_processes_are_started_on_the_simulated_device():
    before = {p.pid for p in psutil.Process().children(recursive=True)}
    run_pool("resnet50", processes=8, duration="1s")
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= before


def test_round_trips_through_json():
    m = run_pool([("resnet50", {"precision": "int8"}), ("yolov8n", {})], duration="1s")
    back = Measurement.from_dict(json.loads(json.dumps(m.to_dict())))
    assert isinstance(back, PoolMeasurement)
    assert back.per_process_throughput == m.per_process_throughput
    assert back.start_skew == 0.0 and back.processes == 2
    assert back.summary()["per_process_throughput"] == m.per_process_throughput.min


def test_zero_duration_is_rejected():
    with pytest.raises(ConfigError, match="positive duration"):
        run_pool("resnet50", processes=2, duration="0s", warmup="0s")


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 8), batch=st.sampled_from([1, 2, 4]), precision=st.sampled_from(["int8", "fp16"]),
       seed=st.integers(0, 2 ** 16))
def test_pool_invariants(n, batch, precision, seed):
    clock = SimClock()
    m = run_pool("resnet18", processes=n, batch=batch, precision=precision, duration="1s", warmup="0.5s",
                 seed=seed, clock=clock)
    assert clock.now() == pytest.approx(1.5)
    assert m.processes == n and m.batch == batch
    assert m.items == sum(w.items for w in m.workers) == batch * len(m.latencies)
    spread = m.per_process_throughput
    assert spread.min <= spread.mean <= spread.max
    assert m.throughput == pytest.approx(n * spread.mean, rel=0.02)
    assert m.memory == pytest.approx(n * m.workers[0].memory)
    # every worker ran the whole window and not an iteration more
    for w in m.workers:
        assert 1.0 <= w.duration < 1.0 + max(w.latencies)


def _conv_onnx(path, channels):
    """A small real ONNX network: four 3x3 convolutions of ``channels`` on a 224 x 224 image."""
    import onnx

    from pytest_jetson.models.builder import Net

    net = Net(f"c{channels}", (3, 224, 224))
    x = net.relu(net.conv(net.input, channels, 3, 2, 1, name="c1"))
    for i in range(3):
        x = net.relu(net.conv(x, channels, 3, 1, 1, name=f"c{i + 2}"))
    net.output(x)
    onnx.save(net.model(), str(path))
    return str(path)


@pytest.mark.parametrize("processes", [1, 2, 4, 8])
def test_a_model_with_more_compute_shows_at_every_process_count(tmp_path, processes):
    """Twice the channels is about 3-4x the GPU's work: the pool's throughput says so however many
    processes time-slice the GPU (a regression gate on a pool must see a compute regression)."""
    small, big = _conv_onnx(tmp_path / "c32.onnx", 32), _conv_onnx(tmp_path / "c64.onnx", 64)
    runs = [run_pool(m, processes=processes, precision="fp16", duration="2s", warmup="0s", seed=1)
            for m in (small, big)]
    assert runs[1].throughput < 0.75 * runs[0].throughput
