"""Properties of the simulated Jetson that must hold for every board, mode, model and precision."""

import dataclasses

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pytest_jetson.devices import catalog
from pytest_jetson.devices.device import Device
from pytest_jetson.sim import OutOfMemory, predict

MODELS = ("resnet18", "mobilenet_v2", "squeezenet1_1")
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def configs(draw):
    prof = catalog.get(draw(st.sampled_from(catalog.names())))
    mode = draw(st.sampled_from(prof.power_modes))
    precision = draw(st.sampled_from(prof.precisions))
    assume(precision != "fp4")
    return prof, mode, draw(st.sampled_from(MODELS)), precision


def _predict(prof, mode, model, precision, batch, processes=1):
    try:
        return predict(Device(profile=prof, power_mode=mode, simulated=True), model, precision, batch,
                       processes=processes)
    except OutOfMemory:
        assume(False)


@SETTINGS
@given(configs(), st.integers(1, 32), st.integers(1, 4), st.floats(1.05, 3.0))
def test_more_clock_never_means_less_throughput(cfg, batch, processes, factor):
    prof, mode, model, precision = cfg
    slow = _predict(prof, mode, model, precision, batch, processes)
    fast_mode = dataclasses.replace(mode, gpu_max_mhz=slow.max_gpu_clock_mhz * factor)
    fast = _predict(prof, fast_mode, model, precision, batch, processes)
    assert fast.throughput >= slow.throughput * (1 - 1e-6)
    assert fast.gpu_clock_mhz >= slow.gpu_clock_mhz * (1 - 1e-6)


@SETTINGS
@given(configs(), st.integers(1, 63), st.integers(1, 64))
def test_more_batch_never_means_less_memory(cfg, batch, more):
    prof, mode, model, precision = cfg
    small = _predict(prof, mode, model, precision, batch)
    big = _predict(prof, mode, model, precision, batch + more)
    assert big.memory > small.memory
    assert big.memory_per_process > small.memory_per_process


@SETTINGS
@given(configs(), st.integers(1, 16), st.integers(1, 7), st.integers(1, 4))
def test_more_processes_never_mean_more_per_process_throughput(cfg, batch, processes, more):
    prof, mode, model, precision = cfg
    few = _predict(prof, mode, model, precision, batch, processes)
    many = _predict(prof, mode, model, precision, batch, processes + more)
    assert many.per_process_throughput <= few.per_process_throughput * (1 + 1e-9)
    assert many.memory == pytest.approx(few.memory * (processes + more) / processes)


@SETTINGS
@given(configs(), st.integers(1, 32), st.integers(1, 4))
def test_budgets_hold_and_nothing_is_nan(cfg, batch, processes):
    prof, mode, model, precision = cfg
    p = _predict(prof, mode, model, precision, batch, processes)
    values = [p.throughput, p.latency, p.latency_p50, p.latency_p99, p.power, p.energy, p.memory]
    assert all(v == v and 0 < v < float("inf") for v in values)
    if mode.budget_w is not None and not any("even at the lowest" in n for n in p.notes):
        assert p.power <= mode.budget_w * (1 + 1e-6)
    assert p.energy == pytest.approx(p.power / p.throughput)
    assert p.latency == pytest.approx(batch / p.per_process_throughput)
