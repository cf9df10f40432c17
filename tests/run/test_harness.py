"""The harness: fixed and adaptive runs, warm-up, windows, device time, bad input, the recorder."""

import json
import math
from itertools import cycle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson.clock import SimClock
from pytest_jetson.context import Context
from pytest_jetson.devices.device import simulated
from pytest_jetson.engines.base import Engine
from pytest_jetson.errors import ConfigError, EngineError
from pytest_jetson.run.harness import measure, stable_within
from pytest_jetson.run.measurement import Measurement
from pytest_jetson.run.recorder import Recorder
from pytest_jetson.settings import Settings


class ScriptedEngine(Engine):
    """An engine on a virtual clock whose per-iteration latencies follow a script: it lets the
    tests know exactly what the harness should report."""

    backend = "scripted"

    def __init__(self, latencies, batch=1, clock=None, name="scripted-fp16-b1"):
        super().__init__()
        self.precision = "fp16"
        self.model = "scripted-model"
        self.name = name
        self.batch = self.max_batch = batch
        self.clock = clock or SimClock()
        self._lat = cycle(latencies)
        self.memory_bytes = 123456
        self.calls = []

    def infer(self, batch=None):
        self.calls.append(batch)
        self.clock.advance(next(self._lat))
        return {}


class DeviceTimedEngine(ScriptedEngine):
    """Reports a device time below its clock time, as the TensorRT backend does with CUDA events."""

    backend = "tensorrt"
    reports_device_time = True

    def infer(self, batch=None):
        self.clock.advance(0.010)
        self.last_device_time = 0.008
        return {}


def test_fixed_duration_on_the_virtual_clock():
    engine = ScriptedEngine([0.010], batch=4)
    m = measure(engine, duration="1s", warmup="0.1s")
    assert m.clock == "virtual"
    assert m.iterations == 100
    assert m.items == 400
    assert m.duration == pytest.approx(1.0)
    assert m.throughput == pytest.approx(400.0)
    assert m.latency_p99 == pytest.approx(0.010)
    assert m.engine_memory == 123456
    assert m.stable is None
    assert len(m.windows) == 10 and all(w == pytest.approx(400.0) for w in m.windows)
    assert m.extra["warmup_iterations"] == 10


def test_iterations_and_percentiles():
    engine = ScriptedEngine([0.001 * (i + 1) for i in range(100)])
    m = measure(engine, iterations=100, warmup=0)
    assert m.iterations == 100
    assert m.latency_max == pytest.approx(0.100)
    assert m.latency_p50 == pytest.approx(0.0505)
    assert m.latency_mean == pytest.approx(0.0505)


def test_duration_and_iterations_stop_at_whichever_comes_first():
    engine = ScriptedEngine([0.010])
    assert measure(engine, duration="10s", iterations=5, warmup=0).iterations == 5
    assert measure(engine, duration="0.05s", iterations=1000, warmup=0).iterations == 5


def test_warmup_stays_out_of_the_window():
    # the first calls are slow (a cold engine); one second of warm-up absorbs them
    lat = [0.5, 0.5] + [0.010] * 1000
    engine = ScriptedEngine(lat)
    m = measure(engine, iterations=50, warmup="1s")
    assert m.latency_max == pytest.approx(0.010)


def test_before_window_runs_after_warmup_and_before_timing():
    engine = ScriptedEngine([0.010])
    seen = []
    m = measure(engine, iterations=10, warmup="0.5s", before_window=lambda: seen.append(engine.clock.now()))
    assert seen == [pytest.approx(0.5)]
    assert m.duration == pytest.approx(0.1)


def test_adaptive_stops_when_three_windows_agree():
    engine = ScriptedEngine([0.010])
    m = measure(engine, warmup=0, window="1s")
    assert m.stable is True
    assert len(m.windows) == 3
    assert m.duration == pytest.approx(3.0)
    assert m.extra["mode"] == "adaptive"


def test_adaptive_gives_up_at_max_duration_and_says_unstable():
    # throughput alternates between windows by far more than 2 %
    lat = [0.010] * 100 + [0.020] * 50
    engine = ScriptedEngine(lat)
    m = measure(engine, warmup=0, window="1s", max_duration="8s")
    assert m.stable is False
    assert m.duration >= 8.0
    assert not stable_within(m.windows[-3:], 0.02)


def test_adaptive_stability_band_is_honoured():
    # windows differ by ~5 %: unstable at 2 %, stable at 10 %
    lat = [0.010] * 100 + [0.0105] * 95
    assert measure(ScriptedEngine(lat), warmup=0, window="1s", max_duration="10s").stable is False
    assert measure(ScriptedEngine(lat), warmup=0, window="1s", max_duration="10s", stability=0.1).stable is True


@pytest.mark.parametrize("duration, iterations", [(0, 0), ("0s", None), (None, 0), (0, -1)])
def test_zero_duration_and_iterations_is_a_clear_error(duration, iterations):
    engine = ScriptedEngine([0.01], name="resnet50-int8-b8")
    with pytest.raises(ConfigError, match=r"resnet50-int8-b8.*both zero.*duration='10s'"):
        measure(engine, duration=duration, iterations=iterations)


def test_bad_arguments_name_the_engine():
    engine = ScriptedEngine([0.01], name="yolo-b1")
    with pytest.raises(ConfigError, match="yolo-b1.*duration"):
        measure(engine, duration="ten seconds")
    with pytest.raises(ConfigError, match="yolo-b1.*stability"):
        measure(engine, stability=2)
    with pytest.raises(ConfigError, match="yolo-b1.*iterations"):
        measure(engine, iterations=-5)


def test_a_clock_that_never_moves_is_reported_not_looped_on():
    engine = ScriptedEngine([0.0], name="frozen")
    with pytest.raises(EngineError, match="frozen.*clock did not move"):
        measure(engine, duration="1s", warmup=0)


def test_an_object_that_is_no_engine_is_refused_with_the_fix():
    class Duck:
        def infer(self, batch=None):
            return {}

    with pytest.raises(EngineError, match="Duck: the harness measures engines, subclasses of "
                                          "pytest_jetson.engines.Engine.*has no infer.batch. and clock"):
        measure(Duck(), iterations=5, warmup=0)


def test_a_wrapper_forwarding_to_an_engine_is_measured_as_the_engine():
    """An object that only runs like an engine (here a proxy that doubles every latency) is
    measured through the contract: its engine's attributes, extras and device time."""

    class Doubled:
        def __init__(self, inner):
            self._inner = inner

        def infer(self, batch=None):
            t0 = self._inner.clock.now()
            self._inner.infer(batch)
            self._inner.clock.advance(self._inner.clock.now() - t0)

        def __getattr__(self, name):
            return getattr(self._inner, name)

    class Noted(DeviceTimedEngine):
        def measurement_extra(self, batch):
            return {"io": "mapped"}

    m = measure(Doubled(Noted([0.0])), iterations=10, warmup=0)
    assert m.latencies == [pytest.approx(0.020)] * 10 and m.device_latencies == [pytest.approx(0.008)] * 10
    assert (m.name, m.backend, m.model, m.engine_memory) == ("scripted-fp16-b1", "tensorrt", "scripted-model", 123456)
    assert m.extra["io"] == "mapped"


def test_what_the_engine_adds_lands_in_the_measurement_extra():
    class Noted(ScriptedEngine):
        def measurement_extra(self, batch):
            return {"io": "mapped", "batch_seen": batch}

    m = measure(Noted([0.01], batch=2), iterations=5, warmup=0)
    assert (m.extra["io"], m.extra["batch_seen"], m.extra["mode"]) == ("mapped", 2, "iterations")
    assert "prediction" not in measure(ScriptedEngine([0.01]), iterations=5, warmup=0).extra


def test_device_time_separates_host_overhead():
    engine = DeviceTimedEngine([0.0])
    m = measure(engine, iterations=20, warmup=0)
    assert m.device_latencies == [pytest.approx(0.008)] * 20
    assert m.host_overhead == pytest.approx(0.002)


def test_a_backend_without_device_time_reports_none():
    m = measure(ScriptedEngine([0.01]), iterations=5, warmup=0)
    assert m.device_latencies is None and m.host_overhead is None


def test_measurement_round_trips_through_json():
    m = measure(ScriptedEngine([0.01, 0.012]), warmup=0, window="0.5s", environment={"device": "x"})
    back = Measurement.from_dict(json.loads(json.dumps(m.to_dict())))
    assert back.latencies == m.latencies
    assert back.windows == m.windows
    assert back.stable == m.stable
    assert back.throughput == pytest.approx(m.throughput)
    assert back.environment == {"device": "x"}


@settings(max_examples=40, deadline=None)
@given(lat=st.lists(st.floats(1e-4, 0.05), min_size=1, max_size=20), batch=st.integers(1, 16),
       iterations=st.integers(1, 300))
def test_throughput_is_items_over_clock_time(lat, batch, iterations):
    engine = ScriptedEngine(lat, batch=batch)
    m = measure(engine, iterations=iterations, warmup=0)
    assert m.items == iterations * batch
    assert m.duration == pytest.approx(sum(m.latencies))
    assert m.throughput == pytest.approx(m.items / sum(m.latencies))
    assert min(m.latencies) >= min(lat) * (1 - 1e-9)
    # the per-window figures are consistent with the whole: their harmonic mean, weighted by
    # items, is the overall throughput
    assert all(math.isfinite(w) and w > 0 for w in m.windows)


# -- the recorder ---------------------------------------------------------------------------------
def _context(**settings_kw):
    return Context.create(Settings(telemetry="none", **settings_kw), simulated("orin-nano"))


def test_recorder_measures_records_and_fingerprints():
    ctx = _context()
    perf = Recorder(ctx)
    engine = ScriptedEngine([0.01], clock=ctx.clock)
    m = perf.measure(engine, iterations=10, warmup=0)
    assert perf.measurements == [m]
    assert m.environment["device"] == "orin-nano-8gb"
    assert m.environment["simulated"] is True
    assert (m.environment["precision"], m.environment["batch"], m.environment["backend"]) == ("fp16", 1, "scripted")
    assert m.environment["model"] == "scripted-model"
    assert m.telemetry is None


def test_jetson_duration_overrides_every_duration_and_iterations():
    ctx = _context(duration=0.5)
    perf = Recorder(ctx)
    engine = ScriptedEngine([0.01], clock=ctx.clock)
    assert perf.measure(engine, duration="10s", warmup=0).duration == pytest.approx(0.5)
    assert perf.measure(engine, iterations=3, warmup=0).iterations == 50


def test_recorder_passes_a_sampler_through():
    class FakeSampler:
        """Stands in for telemetry.Sampler: a context manager with a summary."""

        def __init__(self):
            self.items = None
            self.entered = self.exited = 0
            self.summary = type("S", (), {"items": None, "energy_j": 2.0, "energy_per_item_j": None,
                                          "power_mean_w": 7.5})()

        def __enter__(self):
            self.entered += 1
            return self

        def __exit__(self, *exc):
            self.exited += 1

    ctx = _context()
    sampler = FakeSampler()
    m = Recorder(ctx).measure(ScriptedEngine([0.01], clock=ctx.clock), iterations=20, warmup=0,
                              telemetry=sampler)
    assert (sampler.entered, sampler.exited) == (1, 1)
    assert sampler.items == 20
    assert m.power == 7.5
    assert m.energy == pytest.approx(0.1)


def test_recorder_attaches_simulated_telemetry_by_default():
    from pytest_jetson.engines import open_engine

    ctx = Context.create(Settings(), simulated("orin-nano"))  # telemetry: auto
    engine = open_engine("resnet50", backend="simulated", device=ctx.device, clock=ctx.clock,
                         precision="int8", batch=8)
    m = Recorder(ctx).measure(engine, duration="5s", warmup="0.5s")
    assert m.telemetry.source == "simulated"
    assert m.telemetry.items == m.items
    assert m.power == pytest.approx(engine.prediction.power, rel=0.05)
    assert m.energy == pytest.approx(engine.prediction.energy, rel=0.05)
    assert Measurement.from_dict(json.loads(json.dumps(m.to_dict()))).power == pytest.approx(m.power)


def test_the_wall_clock_is_read_by_perf_counter_itself():
    """A timed loop reads the clock once per iteration: the wall clock's ``now`` is
    ``time.perf_counter`` itself, no Python call around it."""
    import time

    from pytest_jetson.clock import WallClock

    assert WallClock().now is time.perf_counter and WallClock.now is time.perf_counter
