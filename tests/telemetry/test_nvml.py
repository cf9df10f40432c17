"""The NVML source on a real NVIDIA GPU: readings plausible, and changing under load.

Skips cleanly without nvidia-ml-py or a GPU. The load is 2 GiB of device memory set over and
over through the CUDA driver API (ctypes, no CUDA toolkit needed).
"""

import ctypes
import threading
import time

import pytest

from pytest_jetson.telemetry.nvml import NvmlSource
from pytest_jetson.telemetry.sampler import Sampler
from pytest_jetson.telemetry.select import open_source

pytestmark = pytest.mark.gpu
GIB = 1024 ** 3


@pytest.fixture(scope="module")
def gpu():
    pynvml = pytest.importorskip("pynvml", reason="nvidia-ml-py not installed")
    why = NvmlSource.probe()
    if why:
        pytest.skip(why)
    return pynvml


class DriverLoad:
    """Keeps the GPU busy: cuMemsetD32 over ``size`` bytes in a loop, on a thread."""

    def __init__(self, size=2 * GIB):
        try:
            self.cuda = ctypes.CDLL("libcuda.so.1")
        except OSError:
            pytest.skip("libcuda.so.1 not loadable: no CUDA driver to put load on the GPU")
        self.size = size
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.error = None

    def _check(self, rc, what):
        if rc != 0:
            raise RuntimeError(f"{what} failed with CUDA error {rc}")

    def run(self):
        cu = self.cuda
        try:
            dev, ctx, ptr = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_uint64()
            self._check(cu.cuInit(0), "cuInit")
            self._check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
            self._check(cu.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")
            self._check(cu.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(self.size)), "cuMemAlloc")
            self.ready.set()
            n = ctypes.c_size_t(self.size // 4)
            value = 0
            while not self.stop.is_set():
                for _ in range(50):
                    value += 1
                    self._check(cu.cuMemsetD32_v2(ptr, ctypes.c_uint(value), n), "cuMemsetD32")
                self._check(cu.cuCtxSynchronize(), "cuCtxSynchronize")
            cu.cuMemFree_v2(ptr)
            cu.cuCtxDestroy_v2(ctx)
        except Exception as exc:
            self.error = exc
            self.ready.set()

    def __enter__(self):
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()
        self.ready.wait(30)
        if self.error:
            pytest.skip(f"cannot load the GPU: {self.error}")
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(30)


def test_auto_picks_nvml_on_a_gpu_host(gpu, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no tegrastats
    source, tried = open_source("auto", root=str(tmp_path))
    assert source.name == "nvml"
    assert [n for n, _ in tried] == ["jtop", "tegrastats", "sysfs"]


def test_nvml_readings_are_plausible_and_follow_the_load(gpu):
    with Sampler(NvmlSource(), interval="50ms") as idle:
        time.sleep(1.5)
    with DriverLoad() as load:
        time.sleep(1.0)  # let clocks and power ramp up
        with Sampler(NvmlSource(), interval="50ms") as busy:
            time.sleep(3.0)
    assert load.error is None
    a, b = idle.summary, busy.summary
    print("idle:", a.to_dict())
    print("busy:", b.to_dict())
    for s in (a, b):
        assert s.source == "nvml" and s.samples >= 10
        assert 1.0 < s.power_mean_w < 2000.0
        assert 0 < s.temperature_max_c < 110
        assert s.gpu_clock_mean_mhz > 0 and s.gpu_clock_max_mode_mhz >= s.gpu_clock_mean_mhz * 0.5
        assert s.memory_peak_bytes is not None and s.memory_scope == "GPU memory used"
        assert s.energy_j > 0
    assert b.memory_peak_bytes - a.memory_peak_bytes >= 1.5 * GIB
    assert b.gpu_util_mean > a.gpu_util_mean + 20
    assert b.power_mean_w > a.power_mean_w * 1.05
    assert len(set(busy.series.board_power_w.tolist())) > 1, "power readings change between samples"
