"""A pool's throughput error comes from each worker's own iterations, not the pooled list."""

import numpy as np

from pytest_jetson.gate.stats import metric_stats
from pytest_jetson.run.measurement import Measurement, PoolMeasurement


def worker(mean, n, seed):
    lat = list(np.random.default_rng(seed).normal(mean, mean * 0.02, n))
    return Measurement(name=f"w{seed}", batch=8, latencies=lat, duration=sum(lat), items=8 * n)


def pool(workers):
    lat = [x for w in workers for x in w.latencies]  # worker after worker, as pools pool them
    return PoolMeasurement(name="pool", batch=8, latencies=lat, duration=max(w.duration for w in workers),
                           items=sum(w.items for w in workers), workers=workers)


def test_two_tenants_of_different_speed_are_not_noise():
    fast, slow = worker(0.005, 2000, 1), worker(0.050, 200, 2)
    st = metric_stats(pool([fast, slow]), "throughput")
    # 2% jitter per iteration over hundreds of iterations: well under 1% on the total
    assert st.se_log < 0.005
    low, high = st.ci
    assert low < st.value < high and (high - low) / st.value < 0.03


def test_a_worker_too_short_to_judge_makes_the_estimate_more_cautious_not_less():
    good = metric_stats(pool([worker(0.005, 2000, 1), worker(0.050, 200, 2)]), "throughput")
    short = metric_stats(pool([worker(0.005, 2000, 1), worker(0.050, 2, 2)]), "throughput")
    assert short.se_log is None or short.se_log > good.se_log
