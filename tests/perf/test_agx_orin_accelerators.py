"""ResNet50 on the accelerators of an AGX Orin (the multi-accelerator study, SEEDS.md section 2),
in MAXN, and across its power modes (the energy-roofline study, section 5): run the suite once per
mode (``--jetson-power-mode MODE_15W`` ...) to gate, or record, each mode's entries."""

import pytest

pytestmark = pytest.mark.jetson("agx-orin", "agx-orin-32gb")

BATCHES = [1, 2, 4, 8, 16, 32, 64]
maxn = pytest.mark.jetson(power_mode="MAXN")


@maxn
@pytest.mark.perf(throughput="5%", latency_mean="5%", power="10%", energy="10%")
@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"b{b}")
def test_gpu(trt_engine, perf, batch):
    perf.measure(trt_engine("resnet50", precision="fp16", batch=batch), duration="5s", warmup="1s")


@maxn
@pytest.mark.perf(throughput="5%", latency_mean="5%")
@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"b{b}")
def test_dla(trt_engine, perf, batch):
    """DLA at fp16; layers it cannot run (GlobalAveragePool, ...) fall back to the GPU."""
    perf.measure(trt_engine("resnet50", precision="fp16", batch=batch, dla_core=0),
                 duration="10s", warmup="1s")


@maxn
@pytest.mark.perf(throughput="10%", per_process_throughput="15%")
@pytest.mark.parametrize("batch", BATCHES, ids=lambda b: f"b{b}")
def test_gpu_beside_dla(process_pool, perf, batch):
    """One instance on the GPU and one on DLA 0 at once: they contend for the GPU (fallback
    layers) and for memory bandwidth."""
    perf.record(process_pool([("resnet50", {"precision": "fp16", "batch": batch}),
                              ("resnet50", {"precision": "fp16", "batch": batch, "dla_core": 0})],
                             duration="20s", warmup="1s"))


POWER_MODES = ["MAXN", "MODE_15W", "MODE_30W", "MODE_50W"]


@pytest.mark.perf(latency_mean="5%", energy="5%", power="10%")
@pytest.mark.parametrize("mode", [pytest.param(m, marks=pytest.mark.jetson(power_mode=m), id=m)
                                  for m in POWER_MODES])
@pytest.mark.parametrize("precision", ["int8", "fp16"])
def test_power_mode(trt_engine, perf, precision, mode):
    """Run once per power mode (``--jetson-power-mode MODE``): latency and energy per image of
    each mode, for the latency/energy Pareto front (``pytest-jetson plot``)."""
    perf.measure(trt_engine("resnet50", precision=precision, batch=8), duration="5s", warmup="1s")
