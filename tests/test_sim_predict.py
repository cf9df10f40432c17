"""The simulated Jetson reproduces the research's findings and rejects what a board cannot run."""

import json
import math
from types import SimpleNamespace

import pytest

from pytest_jetson.devices import registry
from pytest_jetson.devices.device import Device
from pytest_jetson.devices.profile import PowerMode
from pytest_jetson.errors import ConfigError, SimulationError
from pytest_jetson.sim import OutOfMemory, Prediction, predict, sweep

NANO = "orin-nano-8gb"  # the seeds' Orin Nano (original firmware, 15 W mode)


# -- SEEDS.md section 1: concurrent ResNet50 int8 on the Orin Nano ------------------------------

def test_seeds_resnet50_int8_throughput_per_process_rises_from_500_to_1000_with_batch():
    b1 = predict(NANO, "resnet50", "int8", 1)
    b8 = predict(NANO, "resnet50", "int8", 8)
    assert b1.per_process_throughput == pytest.approx(500, rel=0.2)
    assert b8.per_process_throughput == pytest.approx(1000, rel=0.2)


def test_seeds_eight_processes_drop_to_about_200_per_process():
    one = predict(NANO, "resnet50", "int8", 8, processes=1)
    eight = predict(NANO, "resnet50", "int8", 8, processes=8)
    # ~200 img/s per process (the model gives about 140: the GPU saturates and time-slices).
    assert 120 <= eight.per_process_throughput <= 260
    assert eight.per_process_throughput < 0.3 * one.per_process_throughput
    assert eight.bound == "contention"
    # ... while the aggregate does not fall below one process's (time-slicing fills idle gaps).
    assert eight.throughput >= one.throughput


def test_seeds_memory_is_processes_times_model_plus_two_batches():
    def mem(batch, n):
        return predict(NANO, "resnet50", "int8", batch, processes=n)

    for n in (1, 2, 4, 8):
        assert mem(4, n).memory == pytest.approx(n * mem(4, 1).memory)
        assert mem(4, n).memory_per_process == pytest.approx(mem(4, 1).memory)
    # Linear in batch: a fixed engine + context part and a per-batch part (I/O twice + workspace).
    m1, m2, m4 = (mem(b, 1).memory for b in (1, 2, 4))
    assert m4 - m2 == pytest.approx(2 * (m2 - m1))
    p = mem(8, 1)
    io_per_batch = 2 * 8 * (3 * 224 * 224 + 1000) * 4
    assert p.breakdown["io"] == pytest.approx(io_per_batch)
    assert p.breakdown["weights"] == pytest.approx(25.6e6, rel=0.05)  # ~25.6 M params at 1 byte


def test_seeds_int8_needs_less_energy_per_image_than_fp16_and_tf32():
    e = {p: predict(NANO, "resnet50", p, 8).energy for p in ("int8", "fp16", "tf32", "fp32")}
    assert e["int8"] < e["fp16"] < e["tf32"] < e["fp32"]
    thr = {p: predict(NANO, "resnet50", p, 8).throughput for p in ("int8", "fp16", "tf32")}
    assert thr["int8"] == max(thr.values())


def test_seeds_power_rises_with_batch_then_plateaus():
    power = [predict(NANO, "resnet50", "int8", b).power for b in (1, 2, 4, 8, 16)]
    assert power == sorted(power)
    rise = power[3] - power[0]
    assert rise > 0.5
    assert power[4] - power[3] < 0.25 * rise


def test_activations_spill_from_l2_as_the_batch_grows():
    per_item = [predict(NANO, "resnet50", "int8", b).breakdown["dram_bytes_per_item"] for b in (1, 8, 64)]
    # Batch 1 reads every weight per image; by batch 8 weights are shared, by 64 activations spill.
    assert per_item[0] > per_item[1] < per_item[2]
    assert per_item[0] > 25.5e6  # ResNet50's weights at int8, read once per batch
    # Thor's 32 MiB L2 keeps far more of a batch-8 ResNet50 on chip than the Orin Nano's 2 MiB.
    thor = predict("agx-thor", "resnet50", "int8", 8).breakdown["dram_bytes_per_item"]
    assert thor < 0.8 * per_item[1]


def test_dvfs_caps_the_clock_at_the_budget_and_throughput_plateaus():
    # Orin NX 16GB Super at 10 W: the mode allows 612 MHz, but a busy GPU there would exceed the budget.
    preds = [predict("orin-nx-16gb-super", "resnet50", "fp16", b, power_mode="10W") for b in (8, 32, 64)]
    for p in preds:
        assert p.gpu_clock_mhz < p.max_gpu_clock_mhz
        assert p.power <= 10.0 + 1e-6
        assert any("DVFS" in n for n in p.notes)
    assert preds[2].throughput < 1.2 * preds[1].throughput


def test_maxn_is_not_the_most_energy_efficient_mode():
    import dataclasses

    prof = registry.get("agx-orin-64gb")
    maxn = prof.power_mode("MAXN")
    # The named nvpmodel modes plus MAXN with the GPU clock lowered step by step, as the energy
    # roofline study swept power modes.
    modes = list(prof.power_modes) + [dataclasses.replace(maxn, name=f"MAXN@{f}", gpu_max_mhz=float(f))
                                      for f in range(300, 1300, 100)]
    res = sweep("agx-orin-64gb", "resnet50", precisions=["int8"], batches=[8], power_modes=modes)
    rows = {r["power_mode"]: r for r in res.to_rows()}
    best = res.best_mode()
    assert best["power_mode"] != "MAXN"
    assert best["energy"] < 0.95 * rows["MAXN"]["energy"]
    assert rows["MAXN"]["latency"] == min(r["latency"] for r in rows.values())  # fastest, not most frugal


def test_gpu_bound_work_follows_the_gpu_clock_host_bound_work_the_cpu_clock():
    import dataclasses

    modes = ("15W", "25W", "MAXN_SUPER")  # GPU 612/918/1020 MHz
    thr = [predict("orin-nano-8gb-super", "resnet50", "fp16", 8, power_mode=m).throughput for m in modes]
    assert thr == sorted(thr)
    prof = registry.get("orin-nano-8gb-super")
    base = prof.power_mode("MAXN_SUPER")
    slow_cpu = dataclasses.replace(base, name="slow-cpu", cpu_max_mhz=base.cpu_max_mhz / 2)

    def run(mode, model, batch):
        return predict(Device(profile=prof, power_mode=mode, simulated=True), model, "int8", batch)

    small, small_slow = run(base, "mobilenet_v2", 1), run(slow_cpu, "mobilenet_v2", 1)
    big, big_slow = run(base, "resnet50", 32), run(slow_cpu, "resnet50", 32)
    assert small_slow.bound == "launch"
    assert small_slow.throughput < 0.8 * small.throughput  # batch-1 MobileNetV2 waits on the CPU ...
    # ... a batch-32 ResNet50 only through its input copies.
    assert big_slow.throughput / big.throughput > small_slow.throughput / small.throughput + 0.15
    assert big_slow.bound == "compute"


# -- architectures ---------------------------------------------------------------------------

def test_nano_runs_int8_as_fp16_with_a_warning():
    p8 = predict("nano", "resnet18", "int8", 1)
    p16 = predict("nano", "resnet18", "fp16", 1)
    assert p8.precision == "fp16" and p8.requested_precision == "int8"
    assert any("int8 runs as fp16" in n for n in p8.notes)
    assert p8.throughput == pytest.approx(p16.throughput)


def test_volta_int8_uses_dp4a_and_beats_fp16_only_modestly():
    i8 = predict("agx-xavier", "resnet50", "int8", 8, power_mode="MAXN")
    f16 = predict("agx-xavier", "resnet50", "fp16", 8, power_mode="MAXN")
    assert i8.precision == "int8"
    # Volta's tensor cores do fp16 only: int8 (dp4a on CUDA cores) is not the 2x it is on Ampere.
    assert i8.throughput < 1.5 * f16.throughput


def test_tf32_is_rejected_where_the_device_lacks_it():
    with pytest.raises(ConfigError, match="tf32.*not available on .*Xavier"):
        predict("agx-xavier", "resnet50", "tf32", 1)


def test_thor_runs_fp8_faster_than_fp16():
    assert predict("agx-thor", "resnet50", "fp8", 16).throughput > predict("agx-thor", "resnet50", "fp16", 16).throughput


# -- DLA -------------------------------------------------------------------------------------

@pytest.mark.parametrize("device", ["orin-nano", "nano", "tx2"])
def test_boards_without_dla_reject_it(device):
    with pytest.raises(ConfigError, match="no DLA"):
        predict(device, "resnet50", "fp16", 1, accelerator="dla")


def test_dla_falls_back_for_global_pool_and_contends_with_a_gpu_instance():
    dev = "agx-orin-32gb"
    d = predict(dev, "resnet50", "fp16", 1, accelerator="dla", power_mode="MAXN")
    assert any("fall back to the GPU" in n for n in d.notes)
    gains = {}
    for b in (1, 64):
        gpu = predict(dev, "resnet50", "fp16", b, power_mode="MAXN")
        both = predict(dev, "resnet50", "fp16", b, processes=2, accelerator="gpu+dla", power_mode="MAXN")
        two_gpu = predict(dev, "resnet50", "fp16", b, processes=2, power_mode="MAXN")
        gains[b] = (both.throughput - gpu.throughput) / gpu.throughput
        if b == 64:
            # Tayal: CUDA+TC+DLA below two instances on CUDA+TC at batch 64.
            assert both.throughput < two_gpu.throughput
    assert gains[1] > 0.05  # a DLA beside the GPU adds throughput at small batch ...
    assert gains[64] < gains[1]  # ... less and less as the GPU instance saturates the GPU and DRAM


def test_dla_needs_fp16_or_int8_and_gpu_dla_needs_two_instances():
    with pytest.raises(ConfigError, match="fp16 or int8"):
        predict("agx-orin", "resnet50", "fp32", 1, accelerator="dla")
    with pytest.raises(ConfigError, match="processes=2"):
        predict("agx-orin", "resnet50", "fp16", 1, accelerator="gpu+dla")


# -- bad input -------------------------------------------------------------------------------

@pytest.mark.parametrize("batch", [0, -1, 1.5, True, "8"])
def test_bad_batch_is_a_clear_error(batch):
    with pytest.raises(ConfigError, match="batch"):
        predict(NANO, "resnet50", "int8", batch)


def test_bad_processes_precision_accelerator():
    with pytest.raises(ConfigError, match="processes"):
        predict(NANO, "resnet50", "int8", 1, processes=0)
    with pytest.raises(ConfigError, match="fp64.*choose one of"):
        predict(NANO, "resnet50", "fp64", 1)
    with pytest.raises(ConfigError, match="fp8"):
        predict(NANO, "resnet50", "fp8", 1)
    with pytest.raises(ConfigError, match="accelerator"):
        predict(NANO, "resnet50", "int8", 1, accelerator="npu")


def test_out_of_memory_says_needed_available_and_the_fix():
    with pytest.raises(OutOfMemory) as info:
        predict(NANO, "resnet50", "int8", 8, processes=40)
    err = info.value
    assert isinstance(err, SimulationError)
    assert err.needed > err.available > 0
    text = str(err)
    assert "needs" in text and "available" in text and "at most" in text and "processes" in text


def test_memory_pressure_near_full_memory_slows_every_process(monkeypatch):
    from pytest_jetson.sim import constants

    # fp32 batch 16: ~0.69 GB per process on an 8 GB Orin Nano; 10 processes fill ~96% of it.
    roomy = predict(NANO, "resnet50", "fp32", 16, processes=6)
    tight = predict(NANO, "resnet50", "fp32", 16, processes=10)
    assert any("memory pressure" in n for n in tight.notes)
    assert not any("memory pressure" in n for n in roomy.notes)
    monkeypatch.setitem(constants.ARCH_DEFAULTS, "pressure", 0.0)
    unpressed = predict(NANO, "resnet50", "fp32", 16, processes=10)
    assert tight.per_process_throughput < 0.9 * unpressed.per_process_throughput
    assert roomy.per_process_throughput == pytest.approx(
        predict(NANO, "resnet50", "fp32", 16, processes=6).per_process_throughput)


def test_unknown_ops_are_listed_and_costed_for_memory_only():
    k = SimpleNamespace(name="conv", op_type="Conv", kind="conv", macs=10**8, flops=2 * 10**8, weight_elems=10**5,
                        input_elems=150528, output_elems=200704, out_channels=64, spatial=3136, groups=1)
    odd = SimpleNamespace(name="x", op_type="MyPlugin", kind="other", macs=0, flops=0, weight_elems=0,
                          input_elems=200704, output_elems=200704, out_channels=64, spatial=3136, groups=1)
    stats = SimpleNamespace(name="handmade", params=10**5, macs=10**8, batch=1, input_shape=(1, 3, 224, 224),
                            output_shapes=[(1, 64, 56, 56)], unknown_ops=["MyPlugin"], kernels=lambda: [k, odd])
    p = predict(NANO, stats, "fp16", 4)
    assert any("MyPlugin" in n and "memory traffic only" in n for n in p.notes)
    for v in (p.throughput, p.latency, p.latency_p99, p.power, p.energy, p.memory):
        assert math.isfinite(v) and v > 0


def test_unknown_mode_clock_falls_back_with_a_note():
    p = predict("orin-nano-8gb-super", "resnet18", "fp16", 1, power_mode="7W")
    assert any("unknown" in n and "MHz" in n for n in p.notes)
    full = predict("orin-nano-8gb-super", "resnet18", "fp16", 1, power_mode="15W")
    assert p.max_gpu_clock_mhz < full.max_gpu_clock_mhz
    assert p.throughput < full.throughput


@pytest.mark.parametrize("device", registry.names())
def test_every_profile_and_mode_predicts_finite_numbers(device):
    prof = registry.get(device)
    prec = "int8" if "int8" in prof.precisions else prof.precisions[0]
    for mode in prof.power_modes:
        p = predict(device, "mobilenet_v2", prec, 4, power_mode=mode.name)
        d = json.loads(json.dumps(p.to_dict()))  # plain JSON: reports store it as is
        for key in ("throughput", "per_process_throughput", "latency", "latency_p50", "latency_p99", "memory",
                    "power", "idle_power", "energy", "gpu_clock_mhz", "gpu_util", "emc_util"):
            assert math.isfinite(d[key]) and d[key] >= 0, (device, mode.name, key, d[key])
        assert 0 < p.gpu_util <= 1 and 0 <= p.emc_util <= 1
        assert p.idle_power < p.power
        assert p.bound in ("compute", "memory", "launch", "contention")
        assert p.latency_p50 <= p.latency_p99


def test_prediction_takes_a_device_object_and_an_onnx_path(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_JETSON_CACHE", str(tmp_path))
    from pytest_jetson.models import zoo

    path = zoo.path("squeezenet1_1")
    prof = registry.get(NANO)
    dev = Device(profile=prof, power_mode=prof.power_mode("15W"), simulated=True)
    by_path = predict(dev, str(path), "fp16", 2)
    by_name = predict(NANO, "squeezenet1_1", "fp16", 2)
    assert isinstance(by_path, Prediction)
    assert by_path.throughput == pytest.approx(by_name.throughput, rel=1e-6)
    assert by_path.device == NANO and by_path.power_mode == "15W"


def test_power_gated_sms_slow_a_low_power_mode():
    p = predict("orin-nano-8gb", "resnet50", "int8", 8, power_mode="7W")
    assert any("4 of 8 SMs active" in n for n in p.notes)
    assert p.throughput < 0.6 * predict("orin-nano-8gb", "resnet50", "int8", 8).throughput


def test_a_profile_outside_the_registry_runs():
    import dataclasses

    prof = dataclasses.replace(registry.get("agx-orin-64gb"), id="my-carrier-board", family="custom")
    p = predict(Device(profile=prof, power_mode=prof.default_mode, simulated=True), "resnet18", "fp16", 2)
    assert p.device == "my-carrier-board"
    assert any("no published idle power" in n for n in p.notes)


def test_a_synthetic_power_mode_runs():
    prof = registry.get("agx-orin-64gb")
    mode = PowerMode(name="custom", id=None, budget_w=None, gpu_max_mhz=800.0, emc_max_mhz=2133.0,
                     cpu_online=4, cpu_max_mhz=1500.0)
    p = predict(Device(profile=prof, power_mode=mode, simulated=True), "resnet50", "int8", 8)
    assert p.power_mode == "custom" and p.gpu_clock_mhz == pytest.approx(800.0)


def test_time_slicing_spreads_latency():
    one = predict(NANO, "resnet50", "int8", 1)
    four = predict(NANO, "resnet50", "int8", 1, processes=4)
    assert one.latency_p99 == pytest.approx(one.latency)
    assert four.latency_p50 < four.latency_p99
    assert four.latency > one.latency
