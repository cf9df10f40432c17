"""How long the simulator waits for a model's graph statistics, and a real build costs.

Run: python3 -m pytest benchmarks/test_bench_models.py --benchmark-only
"""

from __future__ import annotations

import pytest

from pytest_jetson.models import zoo
from pytest_jetson.models.graph import analyze

pytest.importorskip("pytest_benchmark")


def _cold_stats(name):
    zoo._stats.cache_clear()
    return zoo.stats(name)


@pytest.mark.parametrize("name", ["vgg19", "resnet152", "yolov8n"])
def test_bench_stats_cold(benchmark, name):
    stats = benchmark(_cold_stats, name)
    assert stats.params > 0


def test_bench_stats_cached(benchmark):
    zoo.stats("resnet50", batch=8)
    benchmark(zoo.stats, "resnet50", batch=8)


def test_bench_full_build_resnet50(benchmark):
    model = benchmark.pedantic(zoo.build, args=("resnet50",), rounds=3, iterations=1)
    assert len(model.graph.initializer) > 100


def test_bench_analyze_full_resnet50(benchmark):
    model = zoo.build("resnet50")
    stats = benchmark.pedantic(analyze, args=(model,), rounds=3, iterations=1)
    assert stats.params == 25_557_032


def test_bench_kernels_resnet152(benchmark):
    stats = zoo.stats("resnet152")

    def fuse():
        stats._kernels = None
        return stats.kernels()

    assert len(benchmark(fuse)) > 100
