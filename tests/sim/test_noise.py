"""Seeded per-iteration latency noise: reproducible, right-skewed, rare outliers, slow drift."""

import numpy as np
import pytest

from pytest_jetson.clock import SimClock
from pytest_jetson.sim import predict
from pytest_jetson.sim.noise import LatencyNoise

BASE = 1e-3


def test_same_seed_same_samples_different_seed_different():
    a = LatencyNoise(7).sample(BASE, 5000)
    b = LatencyNoise(7).sample(BASE, 5000)
    c = LatencyNoise(8).sample(BASE, 5000)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)
    # The stream continues across calls, the same way for the same seed.
    n1, n2 = LatencyNoise(3), LatencyNoise(3)
    assert np.array_equal(np.concatenate([n1.sample(BASE, 10), n1.sample(BASE, 10)]),
                          np.concatenate([n2.sample(BASE, 10), n2.sample(BASE, 10)]))


def test_jitter_is_centred_on_the_base_with_a_right_tail():
    x = LatencyNoise(1, drift=0.0).sample(BASE, 100_000)
    assert np.all(x > 0)
    assert np.mean(x) == pytest.approx(BASE, rel=0.02)
    p50, p99, p1 = np.percentile(x, [50, 99, 1])
    assert p99 - p50 > p50 - p1  # longer right tail than left
    assert np.mean(x) > p50


def test_outliers_are_rare_and_large():
    x = LatencyNoise(2, outlier_rate=0.01, drift=0.0, jitter=0.01).sample(BASE, 100_000)
    big = x > 1.4 * BASE
    assert 0.007 < big.mean() < 0.013
    assert x.max() <= 4.0 * BASE * 1.1
    none = LatencyNoise(2, outlier_rate=0.0, drift=0.0, jitter=0.01).sample(BASE, 100_000)
    assert (none > 1.4 * BASE).mean() == 0


def test_thermal_drift_slows_long_runs():
    noise = LatencyNoise(4, outlier_rate=0.0)
    early = noise.sample(BASE, 2000, t_start=0.0)
    late = LatencyNoise(4, outlier_rate=0.0).sample(BASE, 2000, t_start=900.0)
    assert np.mean(late) > np.mean(early) * 1.015
    assert noise.drift_factor(0.0) == pytest.approx(1.0)
    assert noise.drift_factor(1e6) == pytest.approx(1.03)


def test_a_simulated_ten_second_run_advances_the_virtual_clock():
    clock = SimClock()
    lat = LatencyNoise(5).sample(BASE, 10_000, t_start=clock.now())
    clock.advance(float(lat.sum()))
    assert clock.now() == pytest.approx(10.0, rel=0.05)


def test_prediction_samples_include_time_slice_waits():
    pred = predict("orin-nano-8gb", "resnet50", "int8", 1, processes=4)
    x = LatencyNoise(6, drift=0.0, outlier_rate=0.0).sample_prediction(pred, 50_000)
    assert np.mean(x) == pytest.approx(pred.latency, rel=0.03)
    assert np.percentile(x, 99) == pytest.approx(pred.latency_p99, rel=0.1)


def test_bad_arguments():
    assert LatencyNoise(0).sample(BASE, 0).size == 0
    with pytest.raises(ValueError):
        LatencyNoise(0).sample(float("nan"), 10)
    with pytest.raises(ValueError):
        LatencyNoise(0).sample(0.0, 10)
    with pytest.raises(ValueError):
        LatencyNoise(0, outlier_rate=2.0)
