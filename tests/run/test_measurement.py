"""Measurements: metrics derived from samples and telemetry, and their JSON form."""

import json

import pytest

from pytest_jetson.metrics import METRICS
from pytest_jetson.run.measurement import Measurement, PoolMeasurement, Samples


def make(latencies=(0.010, 0.011, 0.012, 0.020), batch=8, duration=None, **kw):
    latencies = list(latencies)
    duration = sum(latencies) if duration is None else duration
    return Measurement(name="resnet50", batch=batch, latencies=latencies, duration=duration,
                       items=batch * len(latencies), **kw)


def test_metrics_from_latencies():
    m = make()
    assert m.throughput == pytest.approx(32 / 0.053)
    assert m.latency_mean == pytest.approx(0.01325)
    assert m.latency_max == 0.020
    assert m.latency_p50 == pytest.approx(0.0115)
    assert m.latency_p50 <= m.latency_p90 <= m.latency_p95 <= m.latency_p99 <= m.latency_max


def test_unmeasured_metrics_are_none_not_zero():
    m = make()
    assert m.power is None and m.energy is None and m.memory is None and m.gpu_util is None


def test_engine_memory_stands_in_when_no_telemetry():
    assert make(engine_memory=123456).memory == 123456


def test_json_round_trip_keeps_every_metric():
    m = make(engine_memory=1 << 20, stable=True, windows=[600.0, 601.0], environment={"device": "orin-nano-8gb"})
    back = Measurement.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.summary() == m.summary()
    assert back.environment == m.environment and back.stable is True


def test_pool_round_trip_and_per_process_spread():
    workers = [make((0.01,) * 4), make((0.02,) * 4)]
    pool = PoolMeasurement(name="pool", batch=8, latencies=[x for w in workers for x in w.latencies],
                           duration=0.08, items=64, workers=workers, start_skew=0.001)
    spread = pool.per_process_throughput
    assert spread.min == pytest.approx(400) and spread.max == pytest.approx(800)
    assert pool.metric("per_process_throughput") == pytest.approx(400)  # the worst worker
    back = Measurement.from_dict(json.loads(json.dumps(pool.to_dict())))
    assert isinstance(back, PoolMeasurement) and back.processes == 2 and back.start_skew == 0.001


def test_unknown_metric_is_a_key_error():
    with pytest.raises(KeyError):
        make().metric("speed")
    assert set(METRICS) >= {"throughput", "latency_p99", "memory", "power", "energy"}


def test_samples_are_held_as_c_doubles_and_read_like_a_list():
    """A measurement of 20,000 simulated iterations keeps 8 bytes per latency (a list of floats
    held about 32), and its samples still index, iterate, compare and pickle as a list did."""
    import pickle
    import tracemalloc

    from pytest_jetson.devices.device import simulated
    from pytest_jetson.engines import open_engine
    from pytest_jetson.run.harness import measure

    engine = open_engine("mobilenet_v2", backend="simulated", device=simulated("orin-nano"), precision="int8")
    measure(engine, iterations=100, warmup=0, profile=False)  # first-call caches out of the count

    def held(n):
        tracemalloc.start()
        try:
            m = measure(engine, iterations=n, warmup=0, profile=False)
            return m, tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()

    small = held(20_000)[1]
    m, large = held(60_000)
    assert len(m.latencies) == m.iterations == 60_000
    # each iteration more: 8 bytes and the slack of growing (the engine's own state is the same)
    assert (large - small) / 40_000 < 9
    assert m.latencies == list(m.latencies) and m.latencies[-1] == list(m.latencies)[-1]
    back = pickle.loads(pickle.dumps(m))
    assert back.latencies == m.latencies and back.summary() == m.summary()
    assert json.loads(json.dumps(m.to_dict()))["latencies"] == list(m.latencies)


def test_the_summary_reads_the_samples_once(monkeypatch):
    """Every latency percentile of a summary comes from one pass over the samples, not one
    conversion and sort per metric."""
    import numpy as np

    calls = []
    real = np.percentile
    monkeypatch.setattr(np, "percentile", lambda *a, **k: calls.append(1) or real(*a, **k))
    m = make([0.01 + 0.001 * (i % 7) for i in range(1000)])
    first = m.summary()
    assert m.summary() == first and len(calls) == 1
    m.latencies.append(0.5)  # more samples: computed again, with the new one
    assert m.summary()["latency_max"] == 0.5 and len(calls) == 2


def test_a_summarised_report_of_a_long_run_never_turns_its_samples_into_lists():
    """The JSON report's summary of a measurement (the default) is what summarising its whole
    dict gives, made without a list of its samples (ten million floats in a list are 320 MB)."""
    import tracemalloc

    import numpy as np

    from pytest_jetson.gate.session import TestResult
    from pytest_jetson.report import jsonreport

    n = 300_000
    lat = Samples.of(np.random.default_rng(1).lognormal(-6.0, 0.1, n))
    m = Measurement(name="m", batch=1, latencies=lat, duration=float(np.sum(lat)), items=n,
                    clock="virtual", windows=[1000.0] * 10, device_latencies=Samples(lat))
    whole = m.to_dict()
    light = m.to_dict(samples=False)
    assert light["latencies"] == [] and light["device_latencies"] is None and len(whole["latencies"]) == n
    assert {k: v for k, v in light.items() if k not in ("latencies", "device_latencies")} == \
        {k: v for k, v in whole.items() if k not in ("latencies", "device_latencies")}
    result = TestResult(nodeid="t::x", keys=["t::x"], measurements=[m], fingerprint={})
    m.summary()
    tracemalloc.start()
    try:
        doc = jsonreport.test_json(result)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert doc["measurements"][0] == jsonreport.summarise(dict(whole, key="t::x"), m, 0.99)
    assert peak / n < 28
