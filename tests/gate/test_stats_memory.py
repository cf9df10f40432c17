"""A measurement's statistics read its samples where they are: the baseline entry of a long run
copies them no more than the sorting and the quantiles need, and nothing of their size stays
once the measurement is gone."""

import gc
import tracemalloc

import numpy as np
import pytest

from pytest_jetson.gate.entries import make_entry
from pytest_jetson.gate.stats import metric_stats
from pytest_jetson.run.measurement import Measurement, Samples

N = 400_000


def _measurement():
    lat = Samples.of(np.random.default_rng(0).lognormal(-6.0, 0.1, N))
    return Measurement(name="m", batch=1, latencies=lat, duration=float(np.sum(lat)), items=N,
                       clock="virtual", windows=[N / 10 / float(np.sum(lat[:N // 10]))] * 10)


def test_a_baseline_entry_copies_the_samples_no_more_than_sorting_needs():
    m = _measurement()
    m.summary()  # the measurement's own figures, computed once
    tracemalloc.start()
    try:
        entry = make_entry(m, {})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert entry["metrics"]["latency_p99"]["value"] == pytest.approx(m.latency_p99, rel=1e-5)
    # the sorted samples, a quantile's working copy, a deviation's: 8 bytes each
    assert peak / N < 24


def test_nothing_the_size_of_the_samples_stays_after_the_statistics():
    m = _measurement()
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        for metric in ("latency_mean", "latency_p50", "latency_p99", "latency_max", "throughput"):
            metric_stats(m, metric)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert held < N  # a sorted copy of the latencies would be 8 bytes a sample
