"""A pool's latencies are its workers' joined as C doubles: the same figures the joined list of
floats gave, and a long pool never holds them as float objects."""

import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.run.measurement import Measurement, Samples
from pytest_jetson.run.pool import assemble
from pytest_jetson.run.pool_spec import WorkerSpec

LATENCY_FIGURES = ("latency_mean", "latency_p50", "latency_p90", "latency_p95", "latency_p99", "latency_max")


def _pool(latencies_per_worker):
    specs = [WorkerSpec(index=i, model="resnet50", options={"precision": "int8", "batch": 1})
             for i in range(len(latencies_per_worker))]
    workers = [Measurement(name=f"worker {i}", batch=1, latencies=lat, duration=max(1.0, sum(lat)), items=len(lat),
                           clock="virtual", backend="simulated", model="resnet50", precision="int8")
               for i, lat in enumerate(latencies_per_worker)]
    return assemble(specs, workers, backend="simulated", clock_kind="virtual", window=1.0, start_skew=0.0,
                    telemetry=None, environment={}, extra={})


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.floats(1e-6, 10.0), max_size=40), min_size=1, max_size=5))
def test_the_pooled_latencies_and_their_figures_are_those_of_the_joined_list(per_worker):
    pool = _pool(per_worker)
    joined = [x for lat in per_worker for x in lat]
    as_list = Measurement(name="joined", batch=1, latencies=joined, duration=1.0, items=len(joined))
    assert pool.latencies == joined and pool.iterations == len(joined)
    for figure in LATENCY_FIGURES:
        assert getattr(pool, figure) == getattr(as_list, figure), figure
    summary = pool.to_dict()
    assert summary["latencies"] == joined
    assert {k: summary["summary"][k] for k in LATENCY_FIGURES} == {k: as_list.summary()[k] for k in LATENCY_FIGURES}


def test_a_long_pool_joins_its_latencies_at_8_bytes_each():
    """Four workers of 50,000 latencies: joining them held a float object and a pointer each
    (40 bytes) besides the C doubles they became; now 8."""
    n = 50_000
    workers = [Samples([1e-3 + k * 1e-9 for k in range(n)]) for _ in range(4)]
    _pool([Samples([1e-3])])  # first-call caches out of the count
    tracemalloc.start()
    try:
        pool = _pool(workers)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert pool.iterations == 4 * n and pool.latency_max == pytest.approx(1e-3 + (n - 1) * 1e-9)
    assert peak / (4 * n) < 16
