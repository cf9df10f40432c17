"""The simulated backend: outputs of the right shapes, virtual time from the simulator, seeded noise."""

import numpy as np
import pytest
from fakes.onnx_models import tiny_onnx
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_jetson import sim
from pytest_jetson.clock import SimClock
from pytest_jetson.devices.device import simulated
from pytest_jetson.engines import open_engine
from pytest_jetson.errors import EngineError, ModelError, SimulationError
from pytest_jetson.run.harness import measure

ORIN_NANO = simulated("orin-nano")


def _open(model="resnet50", device=ORIN_NANO, **kw):
    return open_engine(model, backend="simulated", device=device, **kw)


def test_outputs_have_the_graphs_shapes_and_the_clock_moves_by_the_predicted_latency():
    clock = SimClock()
    engine = _open(precision="int8", batch=8, clock=clock)
    assert engine.name == "resnet50-int8-b8" and engine.backend == "simulated"
    assert engine.inputs[0].shape == (8, 3, 224, 224)
    assert engine.clock is clock and clock.kind == "virtual"
    out = engine.infer()
    (name, array), = out.items()
    assert array.shape == (8, 1000) and array.dtype == np.float32
    assert engine.infer(2)[name].shape == (2, 1000)
    before = clock.now()
    for _ in range(200):
        engine.infer()
    mean = (clock.now() - before) / 200
    assert mean == pytest.approx(engine.prediction.latency, rel=0.05)
    assert engine.memory_bytes == pytest.approx(engine.prediction.memory, rel=1e-6)


def test_a_simulated_ten_second_measurement_matches_the_prediction():
    engine = _open(precision="fp16", batch=4)
    m = measure(engine, duration="10s")
    assert m.clock == "virtual"
    assert m.duration == pytest.approx(10.0, abs=2 * engine.prediction.latency)
    assert m.throughput == pytest.approx(engine.prediction.throughput, rel=0.05)
    assert m.latency_p99 > m.latency_p50  # the noise has a right tail
    assert m.extra["prediction"]["throughput"] == pytest.approx(engine.prediction.throughput)


def test_same_seed_same_latencies_other_seed_other_latencies():
    def run(seed):
        return measure(_open(batch=1, seed=seed), iterations=50, warmup=0).latencies

    assert run(3) == run(3)
    assert run(3) != run(4)


def test_adaptive_run_on_the_simulator_is_stable():
    m = measure(_open(batch=1, precision="int8"))
    assert m.stable is True
    assert m.duration < 10


def test_engines_share_one_clock():
    clock = SimClock()
    a = _open(batch=1, clock=clock)
    b = _open("mobilenet_v2", batch=1, clock=clock)
    a.infer()
    t = clock.now()
    b.infer()
    assert clock.now() > t > 0


def test_engines_announce_what_they_run_on_the_clock():
    clock = SimClock()
    a = _open(batch=1, clock=clock)
    b = _open("mobilenet_v2", batch=1, clock=clock)
    start = clock.now()
    for _ in range(50):
        a.infer()
    middle = clock.now()
    for _ in range(20):
        b.infer()
    end = clock.now()
    clock.advance(1.0)  # then nothing runs
    # one stretch per run of back-to-back inferences, with its prediction as the load
    assert [(rec[0], rec[1], rec[2]) for rec in clock.loads] == [(start, middle, a.prediction),
                                                                 (middle, end, b.prediction)]
    assert clock.load_at((start + middle) / 2) is a.prediction
    assert clock.load_at(middle) is b.prediction
    assert clock.load_at(clock.now() - 0.5) is None


def test_processes_give_the_contended_latency_of_one_of_them():
    alone = _open(batch=1, precision="int8")
    shared = _open(batch=1, precision="int8", processes=4)
    assert shared.prediction.latency > alone.prediction.latency
    assert shared.memory_bytes < shared.prediction.memory  # one process's share


def test_onnx_path_is_simulated_from_its_graph(tmp_path):
    path = tiny_onnx(tmp_path / "tiny.onnx", features=64)
    engine = _open(path, batch=4)
    assert engine.model == str(path) and engine.name == "tiny-fp16-b4"
    assert engine.infer()["y"].shape == (4, 64)


def test_batch_above_the_profile_is_a_clear_error():
    engine = _open(batch=2)
    with pytest.raises(EngineError, match=r"resnet50-fp16-b2: batch 16 is larger.*batch=16"):
        engine.infer(16)


def test_dla_core_on_a_board_without_dla_is_a_clear_error():
    with pytest.raises(EngineError, match=r"Orin Nano.*0 DLA core.*dla_core=None"):
        _open(dla_core=0)


def test_dla_core_on_an_orin_nx_runs_on_the_dla():
    nx = simulated("orin-nx-16gb")
    gpu = _open(device=nx, precision="int8")
    dla = _open(device=nx, precision="int8", dla_core=1)
    assert dla.name == "resnet50-int8-b1-dla1"
    assert dla.prediction.latency != gpu.prediction.latency
    with pytest.raises(EngineError, match="dla_core=5"):
        _open(device=nx, dla_core=5)


def test_missing_onnx_and_unknown_zoo_name_are_model_errors(tmp_path):
    with pytest.raises(ModelError, match=r"missing\.onnx.*does not exist"):
        _open(tmp_path / "missing.onnx")
    with pytest.raises(ModelError, match="unknown zoo model 'resnet5'"):
        _open("resnet5")


def test_out_of_memory_comes_from_the_simulator():
    # matched by name: in-process pytester runs elsewhere in the suite may re-import sim modules
    with pytest.raises(SimulationError) as info:
        _open("vgg19", batch=512)
    assert type(info.value).__name__ == sim.OutOfMemory.__name__
    assert "out of memory" in str(info.value)


def test_closed_engine_refuses_to_run():
    with _open(batch=1) as engine:
        engine.infer()
    with pytest.raises(EngineError, match="closed"):
        engine.infer()


def test_measuring_another_batch_uses_that_batchs_prediction():
    engine = _open(batch=8, precision="int8")
    m = measure(engine, duration="2s", batch=2, warmup=0)
    assert m.batch == 2 and m.items == 2 * m.iterations
    assert m.extra["prediction"]["latency"] == pytest.approx(engine.prediction_for(2).latency)
    assert m.latency_mean == pytest.approx(engine.prediction_for(2).latency, rel=0.05)


def _chunked_and_plain(plan, **kw):
    """The same calls of ``timed_run`` on two engines of one seed: one running its chunked loop,
    one made to run ``infer`` back to back (an instance ``infer`` tells it apart)."""
    out = []
    for plain in (False, True):
        clock = SimClock()
        engine = _open("mobilenet_v2", clock=clock, seed=3, **kw)
        if plain:
            engine.infer = engine.infer
        runs = []
        for seconds, count, behind in plan:
            lat, ends = [], []
            t = clock.now() - behind
            last = engine.timed_run(engine.batch, t, None if seconds is None else t + seconds, count, lat, ends, None)
            runs.append((last, lat, ends, clock.now()))
        out.append((runs, [list(rec[:2]) for rec in clock.loads]))
    return out


@settings(max_examples=30, deadline=None)
@given(plan=st.lists(st.tuples(st.one_of(st.none(), st.sampled_from([0.0, 0.001, 0.5, 3.0, 7.3])),
                               st.one_of(st.none(), st.sampled_from([0, 1, 5, 2047, 2048, 2049, 5000])),
                               st.sampled_from([0.0, 0.01])),
                     min_size=1, max_size=4).map(
    lambda plan: [(s, 3000 if s is None and n is None else n, b) for s, n, b in plan]))
def test_the_chunked_loop_gives_what_infer_back_to_back_gives(plan):
    """Same latencies, end times, clock and announced stretches, across noise chunks and limits."""
    chunked, plain = _chunked_and_plain(plan)
    assert chunked == plain


def test_a_replaced_infer_is_still_what_the_loop_calls():
    engine = _open("mobilenet_v2")
    calls = []
    infer = engine.infer
    engine.infer = lambda batch=None: calls.append(batch) or infer(batch)
    measure(engine, iterations=50, warmup=0, profile=False)
    assert len(calls) == 50


def test_a_layer_profile_is_planned_once_per_batch_and_handed_out_fresh(monkeypatch):
    # a suite measures one cached engine in test after test: its per-kernel plan is the same
    # prediction each time and must not be costed again (it was most of a simulated test's CPU)
    import pytest_jetson.engines.simulated as simulated_module

    calls = []
    real = simulated_module.layer_times
    monkeypatch.setattr(simulated_module, "layer_times", lambda *a, **k: calls.append(a) or real(*a, **k))
    e = _open("resnet18", batch=2)
    first, second = e.layer_profile(1), e.layer_profile(1)
    assert len(calls) == 1
    assert [(x.name, x.time, x.share) for x in first.layers] == [(x.name, x.time, x.share) for x in second.layers]
    first.layers[0].share = 1.0  # a caller's changes stay its own
    assert e.layer_profile(1).layers[0].share != 1.0
    e.layer_profile(2)
    assert len(calls) == 2
