"""How the simulated board's cost model responds to a change: the per-kernel fixed cost split into
clock cycles and microseconds, shape changes priced over TensorRT's tactics, int8 and Winograd
per architecture."""

import numpy as np
import pytest

from pytest_jetson import sim
from pytest_jetson.sim import constants, plan
from pytest_jetson.sim.calibration import TIME_PARAMS
from pytest_jetson.sim.core import kernel_fixed_s
from pytest_jetson.sim.costs import gpu_costs
from pytest_jetson.sim.hardware import resolve
from pytest_jetson.sim.workload import KIND, load

SUPER = "orin-nano-8gb-super"


def test_a_kernels_fixed_cost_is_part_cycles_part_microseconds():
    c = dict(kernel_cycles=2000.0, kernel_us=4.0, graph_kernel_frac=0.25)
    slow, fast = kernel_fixed_s(c, 500e6, 0.0), kernel_fixed_s(c, 1000e6, 0.0)
    assert slow == pytest.approx(4e-6 + 4e-6) and fast == pytest.approx(2e-6 + 4e-6)
    # a CUDA graph shortens the launch gap, not the kernel's own ramp
    assert kernel_fixed_s(c, 1000e6, 1.0) == pytest.approx(2e-6 + 1e-6)


def test_fitted_host_enqueue_is_near_what_trtexec_logs():
    """trtexec: 0.63 ms of enqueue for yolov5s int8's 76 kernels on an AGX Xavier at its
    fastest mode; the shipped constants charge within a factor 1.5 of it."""
    assert {p.name for p in TIME_PARAMS} >= {"kernel_cycles", "kernel_us", "launch_us"}
    p = sim.predict("agx-xavier", "yolov5s", "int8", power_mode="fastest", harness="trtexec")
    assert 0.63e-3 / 1.5 < p.host_time < 0.63e-3 * 1.5


def test_a_faster_clock_speeds_a_small_network_up_by_less_than_the_clock_ratio():
    """yolov8n from 15 W (612 MHz) to MAXN_SUPER (1020 MHz) on an Orin Nano: part of each kernel's
    fixed cost is microseconds, so the time scales by more than 612/1020 = 0.60."""
    slow = sim.predict(SUPER, "yolov8n", "fp16", power_mode="15W", harness="trtexec")
    fast = sim.predict(SUPER, "yolov8n", "fp16", power_mode="MAXN_SUPER", harness="trtexec")
    assert fast.gpu_clock_mhz / slow.gpu_clock_mhz == pytest.approx(1020 / 612, rel=0.01)
    assert fast.latency / slow.latency > 0.62


@pytest.mark.parametrize("change", [dict(resolution=336), dict(precision="int8")])
def test_the_default_harness_shows_a_change_to_a_small_network(change):
    """mobilenet_v2 under the plugin's default loop (CUDA graph, device buffers) is not hidden by
    host work: a bigger input reads slower, int8 faster."""
    base = sim.predict("orin-nano", "mobilenet_v2")
    other = sim.predict("orin-nano", "mobilenet_v2", **change)
    assert base.harness == "plugin" and base.bound != "launch"
    ratio = other.latency / base.latency
    assert ratio > 1.3 if "resolution" in change else ratio < 0.85


def _steps(model, sizes, device="orin-nano-8gb"):
    t = [sim.predict(device, model, resolution=s).latency for s in sizes]
    macs = [load(model, s, None).macs for s in sizes]
    return [(t[i] / t[i - 1] - 1.0, macs[i] / macs[i - 1] - 1.0) for i in range(1, len(sizes))]


def test_resnet50_input_size_steps_follow_the_macs():
    """224 -> 256 -> 260 px at batch 1 on an Orin Nano: no plateau where MACs grow 31%, no cliff
    where the feature maps' rounding adds 11%."""
    for dt, dm in _steps("resnet50", (224, 256, 260)):
        assert 0.25 * dm <= dt <= 2.0 * dm, (dt, dm)


def test_crossing_a_power_of_two_input_side_is_no_cliff():
    """At 256 px every feature map of a ResNet fills whole 128-row tiles and at 264 px every one
    spills into another: averaged over where the tactics' tile and wave edges fall, the steps
    around it follow the MACs within a factor two (one tactic's charge gave a plateau below 256
    and +2.6x the MAC change above it)."""
    for dt, dm in _steps("resnet50", (240, 248, 256, 264, 272)):
        assert 0.25 * dm <= dt <= 2.0 * dm, (dt, dm)


def test_xavier_int8_is_priced_on_voltas_own_efficiency():
    """MLPerf ResNet-50 offline (GPU and both DLAs): AGX Orin is about 3.06x an AGX Xavier in int8;
    on its own, Xavier's int8 is well under twice its fp16."""
    run = dict(power_mode="fastest", harness="graphs", accelerator="gpu+dla", processes=3)
    x = sim.predict("agx-xavier", "resnet50", "int8", 64, **run)
    o = sim.predict("agx-orin-64gb", "resnet50", "int8", 64, **run)
    assert 2.8 < o.throughput / x.throughput < 3.3
    i8, f16 = (sim.predict("agx-xavier", "resnet50", p, power_mode="fastest").throughput for p in ("int8", "fp16"))
    assert 1.2 < i8 / f16 < 2.2
    assert constants.constants("ampere")["int8_arch"] == 1.0


@pytest.mark.parametrize("device, gains", [("nano", True), ("agx-xavier", False), ("orin-nano-8gb", False)])
def test_winograd_prices_3x3_convolutions_where_tensorrt_uses_it(device, gains):
    """Winograd 3x3 tactics win on CUDA cores (the Nano's Maxwell); on tensor cores (Xavier's fp16,
    Orin) the implicit GEMMs do, whatever the Winograd constant."""
    hw = resolve(device, None)
    c = plan.device_constants(hw, [])
    e = plan.KernelTables(load("resnet18", None, None), hw, c).engine("fp16")
    with_w = gpu_costs(e, hw.arch, hw.sm_count, hw.has_tensor_cores, 1, dict(c, wino_gain=1.5)).a.sum()
    without = gpu_costs(e, hw.arch, hw.sm_count, hw.has_tensor_cores, 1, dict(c, wino_gain=1.0)).a.sum()
    assert (with_w < 0.95 * without) if gains else with_w == pytest.approx(without)


def test_winograd_follows_the_convolutions_own_stride_not_the_bytes_it_reads():
    """A ResNet basic block's second 3x3 also reads its residual (a fused add): it is still a
    stride-1 3x3 and takes the Winograd gain on the Nano; the strided 3x3s do not."""
    from pytest_jetson.sim.engine import plan as build

    hw = resolve("nano", None)
    c = plan.device_constants(hw, [])
    w = load("resnet18", None, None)
    e = build(w, "fp16", arch=hw.arch)
    with_w, without = (gpu_costs(e, hw.arch, hw.sm_count, hw.has_tensor_cores, 1, dict(c, wino_gain=g)).a
                       for g in (1.5, 1.0))
    src = e.source
    three = (src >= 0) & (w.k_ksize[np.maximum(src, 0)] == 9) & (e.kind == KIND["conv"])
    stride1 = three & (w.k_stride[np.maximum(src, 0)] == 1)
    residual = stride1 & (e.in_bytes > 1.5 * e.cin_g * e.spatial * 2.0)
    assert residual.sum() >= 4  # the fused adds are there to be told apart
    assert np.all(with_w[stride1] < 0.95 * without[stride1])
    assert np.allclose(with_w[three & ~stride1], without[three & ~stride1])


def test_a_thin_layers_loop_overhead_grows_with_the_element_size(monkeypatch):
    """A tile's fixed loop cost is partly its first operand stages' fill, whose bytes grow with
    the element size: against a cost that is latency alone, yolo11n's tile kernels take longer in
    TF32, the same in fp16 and less in int8; and the YOLO11 ladder in fp32 (Ultralytics on an Orin
    Nano Super: n -> x 8.86x) is not steeper than the board's by more than 15%."""
    from pytest_jetson.sim import costs
    from pytest_jetson.sim.engine import plan as build

    hw = resolve(SUPER, None)
    c = plan.device_constants(hw, [])
    w = load("yolo11n", None, None)

    def tile_time(precision, fill_exp):
        monkeypatch.setattr(costs, "K0_FILL_EXP", fill_exp)
        e = build(w, precision, arch=hw.arch)
        a = gpu_costs(e, hw.arch, hw.sm_count, hw.has_tensor_cores, 1, c).a
        return float(np.sum(a[e.kind == KIND["conv"]]))

    shipped = costs.K0_FILL_EXP
    assert 0.0 < shipped < 1.0
    assert tile_time("tf32", shipped) > 1.02 * tile_time("tf32", 0.0)
    assert tile_time("fp16", shipped) == pytest.approx(tile_time("fp16", 0.0))
    assert tile_time("int8", shipped) < 0.99 * tile_time("int8", 0.0)
    monkeypatch.setattr(costs, "K0_FILL_EXP", shipped)
    n, x = (sim.predict(SUPER, m, "fp32", harness="python-sync", power_mode="fastest")
            for m in ("yolo11n", "yolo11x"))
    assert n.precision == "tf32"
    assert x.latency / n.latency < 8.858 * 1.15


def test_the_nanos_fitted_winograd_gain_is_within_what_f2x2_3x3_allows():
    gain = plan.device_constants(resolve("nano", None), [])["wino_gain"]
    assert 1.0 < gain <= 2.25


@pytest.mark.parametrize("model, gated", [("yolov5s", True), ("resnet50", False)])
def test_a_dla_runs_a_gated_activation_as_passes_of_its_own(model, gated):
    """NVDLA's post-processor applies its lookup table last, so a SiLU (x * sigmoid(x)) after a
    convolution costs a sigmoid pass and a product pass over the layer's output; a ReLU stays fused."""
    from pytest_jetson.sim.costs import DLA_GATED_PASSES, dla_costs
    from pytest_jetson.sim.engine import plan as build

    e = build(load(model, None), "int8", arch="ampere")
    on_dla = e.dla_ok & (e.source >= 0)
    own = float((e.in_bytes[on_dla] + e.out_bytes[on_dla] + e.weight_bytes[on_dla]).sum())
    moved = float(dla_costs(e, "ampere", "int8", 1, dict(constants.constants("ampere"))).bytes.sum())
    if gated:
        assert moved > own * (1.0 + DLA_GATED_PASSES * 0.1)
    else:
        assert moved == pytest.approx(own)


def test_a_tile_kernels_epilogue_drain_weighs_on_a_thin_layer_in_fp32_more_than_in_int8():
    """A convolution stores its outputs after its main loop at ``store_bpc`` bytes per SM per
    cycle: yolo11n's thin, 640 px layers pay for it by bytes per element (fp32 four times int8),
    a slower store path costs more, and the fitted rate stays within what an SM's ports move."""
    hw = resolve(SUPER, None)
    c = plan.device_constants(hw, [])
    assert 16.0 <= c["store_bpc"] <= 64.0
    tables = plan.KernelTables(load("yolo11n", None, None), hw, c)
    extra = {}
    for p in ("fp32", "int8"):
        e = tables.engine(p)
        fast, slow = (gpu_costs(e, hw.arch, hw.sm_count, hw.has_tensor_cores, 1, dict(c, store_bpc=v)).a.sum()
                      for v in (64.0, 16.0))
        assert slow > fast
        extra[p] = slow - fast
    assert extra["fp32"] > 2.0 * extra["int8"]


def test_a_written_byte_costs_the_dram_write_roofs_share_more_bus_time():
    """The DRAM microbenchmarks (Orin Nano, 15 W: read 62.3 GB/s, write 58.2 GB/s) set the bus
    time of a kernel's writes relative to its reads; reads alone are unchanged."""
    assert constants.constants("ampere")["write_cost"] == pytest.approx(62.268 / 58.162, rel=1e-3)
    hw = resolve(SUPER, None)
    c = plan.device_constants(hw, [])
    e = plan.KernelTables(load("resnet18", None, None), hw, c).engine("fp16")
    same, more = (gpu_costs(e, hw.arch, hw.sm_count, hw.has_tensor_cores, 1, dict(c, write_cost=w))
                  for w in (1.0, 1.5))
    assert more.b.sum() > same.b.sum() and more.bytes.sum() == pytest.approx(same.bytes.sum())
