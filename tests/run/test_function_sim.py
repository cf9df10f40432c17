"""The simulated board runs the user's Python: host time measured and scaled to the board's CPU,
added in place on the virtual clock, with telemetry that follows (GPU busy only in engines, CPU
load in the host part).

The host's timer is replaced by a fake one the test functions advance, so host time is exact
here; the real timer is the benchmarks' and the plugin tests' business.
"""

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson import clock as clock_module
from pytest_jetson.context import Context
from pytest_jetson.devices.catalog import profiles
from pytest_jetson.devices.device import simulated
from pytest_jetson.devices.profile import PROFILE_DIR, load_profile
from pytest_jetson.engines import open_engine
from pytest_jetson.errors import ConfigError
from pytest_jetson.run import host_time
from pytest_jetson.run.recorder import Recorder
from pytest_jetson.settings import Settings


@pytest.fixture
def host(monkeypatch):
    """A fake host timer (``host[0]`` seconds), and the host as fast as the reference core."""
    now = [100.0]
    monkeypatch.setattr(clock_module, "_perf_counter", lambda: now[0])
    monkeypatch.setattr(clock_module, "_cpu_clock", lambda: now[0])
    monkeypatch.setitem(host_time._HOST, "seconds", host_time.REFERENCE_SECONDS)
    return now


def _context(device="orin-nano", power_mode=None, telemetry="none"):
    return Context.create(Settings(telemetry=telemetry), simulated(device, power_mode))


def _engine(ctx, model="resnet50"):
    return open_engine(model, backend="simulated", device=ctx.device, clock=ctx.clock, precision="int8", batch=1)


def test_host_time_is_scaled_by_the_host_over_the_board_score(host):
    ctx = _context("orin-nano")
    board = host_time.board_score(ctx.device)
    assert board == pytest.approx(ctx.device.profile.cpu_single_core["score"])

    def postprocess():
        host[0] += 0.001  # one host millisecond

    m = Recorder(ctx).measure(postprocess, iterations=10, warmup=0)
    scale = host_time.REFERENCE_SCORE / board
    assert m.latencies == pytest.approx([0.001 * scale] * 10)
    t = m.extra["timing"]
    assert t["host_scale"] == pytest.approx(scale)
    assert t["host_measured_s"] == pytest.approx(0.001)
    assert t["host_scaled_s"] == pytest.approx(0.001 * scale)
    assert t["simulated_s"] == pytest.approx(0.0, abs=1e-12)
    assert t["board_cpu"] == "Arm Cortex-A78AE" and t["benchmark"] == "Geekbench 5 single-core"


def test_a_slower_board_cpu_makes_the_same_host_code_slower(host):
    def step():
        host[0] += 0.001

    nano = Recorder(_context("nano", "MAXN")).measure(step, iterations=5, warmup=0).latency_mean
    orin = Recorder(_context("agx-orin-64gb", "MAXN")).measure(step, iterations=5, warmup=0).latency_mean
    assert nano / orin == pytest.approx(903 / 237, rel=0.01)


def test_a_power_mode_with_a_lower_cpu_clock_is_slower(host):
    maxn = _context("nano", "MAXN")
    low = _context("nano", "5W")
    assert host_time.board_score(low.device) == pytest.approx(237 * 918 / 1479)

    def step():
        host[0] += 0.001

    fast = Recorder(maxn).measure(step, iterations=3, warmup=0).latency_mean
    slow = Recorder(low).measure(step, iterations=3, warmup=0).latency_mean
    assert slow / fast == pytest.approx(1479 / 918)


def test_engine_time_and_host_time_add_in_place_never_backwards(host):
    ctx = _context()
    engine = _engine(ctx)
    lat = engine.prediction.latency

    def pipeline():
        host[0] += 0.002
        engine.infer()
        host[0] += 0.001

    m = Recorder(ctx).measure(pipeline, iterations=20, warmup=0)
    scale = m.extra["timing"]["host_scale"]
    assert m.latency_mean == pytest.approx(0.003 * scale + lat, rel=0.05)
    assert m.extra["timing"]["simulated_s"] == pytest.approx(lat, rel=0.05)
    # the clock's record: host stretches and engine stretches alternate, none overlaps another
    loads = ctx.clock.loads
    for a, b in zip(loads, loads[1:]):
        assert a[0] <= a[1] <= b[0] + 1e-12
    kinds = {type(rec[2]).__name__ for rec in loads}
    assert kinds == {"HostLoad", "Prediction"}


def test_the_engines_own_bookkeeping_is_not_host_time(host, monkeypatch):
    ctx = _context()
    engine = _engine(ctx)
    step = engine._step

    def slow_step(batch):
        host[0] += 0.05  # the simulator's own work: must not count as the function's
        return step(batch)

    monkeypatch.setattr(engine, "_step", slow_step)
    m = Recorder(ctx).measure(engine.infer, iterations=10, warmup=0)
    assert m.extra["timing"]["host_measured_s"] == pytest.approx(0.0, abs=1e-9)
    assert m.latency_mean == pytest.approx(engine.prediction.latency, rel=0.05)


def test_stages_on_the_simulated_board_split_engine_and_scaled_host_time(host):
    ctx = _context()
    engine = _engine(ctx)
    perf = Recorder(ctx)

    def pipeline():
        with perf.stage("preprocess"):
            host[0] += 0.001
        with perf.stage("infer"):
            engine.infer()
        with perf.stage("postprocess"):
            host[0] += 0.003

    m = perf.measure(pipeline, iterations=20, warmup=0)
    scale = m.extra["timing"]["host_scale"]
    assert m.stages["preprocess"].latency_mean == pytest.approx(0.001 * scale)
    assert m.stages["postprocess"].latency_mean == pytest.approx(0.003 * scale)
    assert m.stages["infer"].latency_mean == pytest.approx(engine.prediction.latency, rel=0.05)
    total = sum(s.latency_mean for s in m.stages.values())
    assert m.latency_mean == pytest.approx(total, rel=1e-6)


def test_gpu_is_busy_only_while_an_engine_runs_and_cpu_load_follows_the_host_part(host):
    ctx = _context(telemetry="auto")
    engine = _engine(ctx)
    perf = Recorder(ctx)
    alone = perf.measure(engine, duration="2s", warmup="0.2s")
    scale = host_time.REFERENCE_SCORE / host_time.board_score(ctx.device)
    host_s = engine.prediction.latency / scale  # as long on the board as the engine

    def half_host():
        host[0] += host_s
        engine.infer()

    m = perf.measure(half_host, duration="2s", warmup="0.2s")
    assert m.telemetry.source == "simulated"
    assert m.gpu_util == pytest.approx(alone.gpu_util / 2, rel=0.15)
    cores = ctx.device.power_mode.cpu_online
    assert m.telemetry.cpu_util_mean == pytest.approx(100.0 / cores / 2, rel=0.15)
    assert alone.telemetry.cpu_util_mean == 0.0
    # board power between idle and the engine's: the CPU share is small, the GPU idles half the time
    assert engine.prediction.idle_power < m.power < alone.power


def test_a_board_without_a_cpu_figure_adds_host_time_unscaled(host, monkeypatch):
    ctx = _context()
    monkeypatch.setattr(host_time, "board_score", lambda device: None)

    def step():
        host[0] += 0.001

    m = Recorder(ctx).measure(step, iterations=3, warmup=0)
    assert m.latencies == pytest.approx([0.001] * 3)
    assert "not scaled" in m.extra["timing"]["basis"]


def test_every_profile_gives_its_cpu_single_core_figure_and_source():
    for prof in profiles().values():
        single = prof.cpu_single_core
        assert single and single["score"] > 0 and single["benchmark"] == "Geekbench 5 single-core", prof.id
        assert single["source"] and single["mhz"] == prof.cpu_max_mhz, prof.id


@pytest.mark.parametrize("block", [{"score": 0}, {"score": "fast"}, {"mhz": 1500}, [600], {"score": 600, "mhz": True}])
def test_a_malformed_cpu_single_core_is_an_error_naming_the_file(tmp_path, block):
    src = PROFILE_DIR / "nano.json"
    data = json.loads(src.read_text())
    data["cpu"]["single_core"] = block
    path = tmp_path / "board.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=r"board.json: cpu.single_core must be"):
        load_profile(path)


def test_the_host_speed_is_measured_once_per_process(monkeypatch):
    monkeypatch.setattr(host_time, "_HOST", {})
    runs = []
    monkeypatch.setattr(host_time, "measure_host", lambda: runs.append(1) or 2 * host_time.REFERENCE_SECONDS)
    assert host_time.host_score() == pytest.approx(host_time.REFERENCE_SCORE / 2)
    host_time.host_score()
    assert runs == [1]


def test_the_reference_workload_does_python_and_numpy_work():
    assert np.isfinite(host_time._reference_work())
    assert 0 < host_time.measure_host(repeats=1) < 5.0


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 0.01), st.integers(0, 2)), min_size=1, max_size=6))
def test_virtual_time_is_engine_time_plus_scaled_host_time_and_never_goes_back(steps):
    """Any mix of host stretches and engine calls: each call's latency is its engine time plus
    its host time times the scale, and the clock's stretches never overlap."""
    now = [0.0]
    old = clock_module._perf_counter, clock_module._cpu_clock
    clock_module._perf_counter = clock_module._cpu_clock = lambda: now[0]
    host_time._HOST["seconds"] = host_time.REFERENCE_SECONDS
    try:
        ctx = _context()
        engine = _engine(ctx, "mobilenet_v2")
        lat = engine.prediction.latency

        def pipeline():
            for host_s, engine_calls in steps:
                now[0] += host_s
                for _ in range(engine_calls):
                    engine.infer()

        m = Recorder(ctx).measure(pipeline, iterations=5, warmup=0)
    finally:
        clock_module._perf_counter, clock_module._cpu_clock = old
        host_time._HOST.clear()
    scale = m.extra["timing"]["host_scale"]
    host_s = sum(h for h, _ in steps)
    calls = sum(c for _, c in steps)
    assert m.latency_mean == pytest.approx(host_s * scale + calls * lat, rel=0.05, abs=1e-12)
    loads = ctx.clock.loads
    assert all(a[1] <= b[0] + 1e-12 and a[0] <= a[1] for a, b in zip(loads, loads[1:]))


def test_a_wait_and_the_schedulers_gaps_are_not_host_work(monkeypatch):
    """A host stretch counts the smaller of wall and CPU time: sleeping (or being descheduled on
    a busy runner: wall time passes, CPU time does not) adds nothing; CPU work counts."""
    import time

    host_time._HOST["seconds"] = host_time.REFERENCE_SECONDS
    try:
        ctx = _context()

        def waits():
            time.sleep(0.02)

        def works():
            t0 = time.process_time()
            while time.process_time() - t0 < 0.02:
                pass

        waited = Recorder(ctx).measure(waits, iterations=3, warmup=0)
        worked = Recorder(ctx).measure(works, iterations=3, warmup=0)
    finally:
        host_time._HOST.clear()
    assert waited.extra["timing"]["host_measured_s"] < 0.002
    assert worked.extra["timing"]["host_measured_s"] == pytest.approx(0.02, rel=0.5)
