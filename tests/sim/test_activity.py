"""GPU activity on the simulated board: SM, tensor-core, issue-slot and DRAM figures from the
per-kernel model, and how they move with what the study varied (processes, batch, precision)."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_jetson import sim
from pytest_jetson.sim.activity import kernel_shares
from pytest_jetson.sim.costs import Costs

SHARES = ("sm_active", "tensor_active", "issue_active", "dram_util")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=st.sampled_from(["resnet50", "yolov8n", "mobilenet_v2", "squeezenet1_1", "shufflenet_v2_x1_0"]),
       precision=st.sampled_from(["int8", "fp16", "tf32"]), batch=st.sampled_from([1, 2, 8]),
       processes=st.sampled_from([1, 2, 4]))
def test_activity_is_a_share_and_orders_as_the_counters_do(model, precision, batch, processes):
    p = sim.predict("orin-nano", model, precision, batch, processes=processes)
    for name in SHARES:
        assert 0.0 <= getattr(p, name) <= 1.0, name
    # a tensor-core cycle is an SM-active cycle, and the MMAs issue while the tensor core works
    assert p.tensor_active <= p.sm_active <= p.gpu_util + 1e-9
    assert p.tensor_active <= p.issue_active <= p.sm_active + 1e-9
    assert p.dram_util == pytest.approx(p.emc_util)


def test_time_slicing_lowers_sm_and_tensor_activity_as_the_study_saw():
    ps = [sim.predict("orin-nano", "resnet50", "int8", 1, processes=n) for n in (1, 2, 4, 8)]
    sm = [p.sm_active for p in ps]
    tc = [p.tensor_active for p in ps]
    assert sm == sorted(sm, reverse=True) and tc == sorted(tc, reverse=True)
    assert sm[-1] < 0.9 * sm[0] and tc[-1] < 0.9 * tc[0]


def test_a_board_without_tensor_cores_keeps_them_idle_and_its_cuda_cores_issue():
    p = sim.predict("nano", "resnet50", "fp16", 1)
    assert p.tensor_active == 0.0
    assert p.issue_active > 0.5  # the convolutions' FMAs issue on CUDA cores


def test_fp32_without_tf32_runs_on_cuda_cores_and_reads_no_tensor_activity():
    """The plugin's TensorRT backend builds fp32 without TF32: a layer that falls back to fp32 is
    what a tensor_active bound catches."""
    fp32 = sim.predict("orin-nano", "resnet50", "fp32", 1)
    tf32 = sim.predict("orin-nano", "resnet50", "fp32", 1, harness="trtexec")
    assert fp32.precision == "fp32" and tf32.precision == "tf32"
    assert fp32.tensor_active == 0.0 < tf32.tensor_active


def test_a_bigger_batch_fills_more_sms():
    one = sim.predict("orin-nano", "resnet50", "int8", 1)
    eight = sim.predict("orin-nano", "resnet50", "int8", 8)
    assert eight.sm_active > one.sm_active + 0.1
    assert eight.tensor_active > one.tensor_active


def test_dla_instances_leave_the_gpu_nearly_idle():
    p = sim.predict("agx-orin", "resnet50", "int8", 8, accelerator="dla")
    assert p.sm_active < 0.05 and p.tensor_active < 0.05
    assert p.dram_util > 0.05  # the DLA's traffic is still DRAM traffic


def test_a_memory_bound_kernel_stalls_with_few_issue_slots_and_a_compute_bound_one_does_not():
    f, bw, sm = 625e6, 68e9, 8
    # 1 MB moved in 16 us at 68 GB/s; the compute one 62.5 us of tensor-core work
    mem = Costs(a=[1e3], b=[1e6], bytes=[1e6], n=1, tensor=[0.0], alu=[100.0], fill=[1.0])
    cmp = Costs(a=[5e4], b=[1e4], bytes=[1e4], n=1, tensor=[3e4], alu=[100.0], fill=[1.0])
    km = kernel_shares(mem, f, bw, sm, kernel_cycles=0.0).shares()
    kc = kernel_shares(cmp, f, bw, sm, kernel_cycles=0.0).shares()
    assert km["sm"] == pytest.approx(1.0) and km["issue"] < 0.05 and km["tensor"] == 0.0
    assert kc["tensor"] == pytest.approx(0.6) and kc["issue"] >= kc["tensor"]


def test_half_filled_kernels_and_launch_gaps_lower_sm_activity():
    f, bw, sm = 625e6, 68e9, 8
    half = Costs(a=[6.25e4], b=[0.0], bytes=[0.0], n=1, tensor=[0.0], alu=[0.0], fill=[0.5])
    assert kernel_shares(half, f, bw, sm, kernel_cycles=0.0).shares()["sm"] == pytest.approx(0.5)
    full = Costs(a=[6.25e4], b=[0.0], bytes=[0.0], n=1, tensor=[0.0], alu=[0.0], fill=[1.0])
    # 62.5k cycles of work plus as long a fixed cost, half its SMs busy: 75%
    assert kernel_shares(full, f, bw, sm, kernel_cycles=6.25e4).shares()["sm"] == pytest.approx(0.75)
