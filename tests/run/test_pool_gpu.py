"""Pools on a real NVIDIA GPU (skipped without one): workers spawned after the parent initialised
CUDA, and the time slicing of one GPU between processes (no MPS, as on a Jetson).

The engine is a plain CUDA workload (a chain of fp16 matmuls through torch), opened by each worker
through ``engine_factory``: what matters here is the pool's process handling around CUDA, not a
model. Run on a GPU machine: ``python3 -m pytest tests/run/test_pool_gpu.py -q``.
"""

import time

import pytest

from pytest_jetson.engines.base import Engine
from pytest_jetson.run.pool import run_pool

pytestmark = pytest.mark.gpu


def _cuda():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    return torch


class _Wall:
    kind = "wall"

    @staticmethod
    def now():
        return time.perf_counter()


class TorchEngine(Engine):
    """One "inference": ``depth`` fp16 matmuls of ``size`` x ``size`` on the GPU, synchronised."""

    backend = "torch-cuda"

    def __init__(self, size, depth):
        import torch

        super().__init__()
        self.name = f"matmul{size}x{depth}"
        self.model, self.precision, self.batch = "matmul", "fp16", 1
        self.clock = _Wall()
        self.x = torch.randn(size, size, device="cuda", dtype=torch.float16)
        self.w = torch.randn(size, size, device="cuda", dtype=torch.float16) / size ** 0.5
        self.depth = depth
        torch.cuda.synchronize()
        self.memory_bytes = int(torch.cuda.memory_allocated())

    def _infer(self, batch):
        import torch

        y = self.x
        for _ in range(self.depth):
            y = y @ self.w
        torch.cuda.synchronize()
        return y


def open_torch_engine(model, *, backend=None, device=None, seed=0, processes=1, size=4096, depth=8, **_):
    return TorchEngine(size, depth)


def _pool(n):
    factory = f"{__name__}:open_torch_engine"
    return run_pool(("matmul", {"engine_factory": factory}), processes=n, backend="onnxruntime",
                    duration="1s", warmup="0.3s")


def test_workers_spawned_after_cuda_init_in_the_parent_share_the_gpu():
    torch = _cuda()
    torch.zeros(1, device="cuda")  # the parent holds a CUDA context: fork would now be unsafe
    one, four = _pool(1), _pool(4)
    assert four.processes == 4 and four.start_skew is not None
    # one GPU, time-sliced: four processes share what one had ...
    assert four.per_process_throughput.mean < 0.5 * one.throughput
    # ... and together do not get much more than one process alone (the matmuls saturate it)
    assert four.throughput < 1.5 * one.throughput
    for w in four.workers:
        assert w.engine_memory and w.engine_memory > 0
