"""Telemetry beside a real harness run on the simulated device: the Measurement's power, energy,
memory and temperature come from the sampler and agree with the simulator's prediction."""

import json

import pytest

from pytest_jetson.devices.device import simulated
from pytest_jetson.engines import open_engine
from pytest_jetson.run.harness import measure
from pytest_jetson.run.measurement import Measurement
from pytest_jetson.telemetry import TelemetryFactory, TelemetrySummary


def test_perf_measure_with_the_factory_on_a_simulated_orin_nano():
    device = simulated("orin-nano")
    engine = open_engine("resnet50", backend="simulated", device=device, precision="int8", batch=8)
    factory = TelemetryFactory(device, engine.clock)
    m = measure(engine, duration="10s", telemetry=factory)
    pred = engine.prediction
    t = m.telemetry
    assert isinstance(t, TelemetrySummary) and t.source == "simulated"
    assert t.duration == pytest.approx(m.duration, rel=0.05)
    assert t.items == m.items
    assert m.power == pytest.approx(pred.power, rel=0.02)
    assert m.energy == pytest.approx(pred.energy, rel=0.03)
    assert m.memory == pred.memory
    assert m.gpu_util == pytest.approx(100 * pred.gpu_util, abs=1.0)
    assert 25.0 < m.temperature < 95.0
    assert t.power_mode_start == device.power_mode.name and not t.mode_changed
    assert len(t.series) == t.samples  # kept in memory for plots
    back = Measurement.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.power == m.power and back.telemetry.series is None
