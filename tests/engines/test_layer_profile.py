"""Per-layer profiles beside a measurement: what each backend says, and that saying it never moves
the measured figures."""

import json

import pytest
from fakes.onnx_models import conv_onnx

from pytest_jetson.clock import SimClock
from pytest_jetson.engines.layer_profile import LayerProfile, LayerTime, digest, from_structure, structure
from pytest_jetson.engines.simulated import SimulatedEngine
from pytest_jetson.run.harness import measure
from pytest_jetson.run.measurement import Measurement


def _run(seed, profile, model="resnet50", precision="int8", batch=4):
    clock = SimClock()
    engine = SimulatedEngine(model, "orin-nano", precision, batch, clock=clock, seed=seed)
    first = measure(engine, duration="1s", warmup="0.2s", profile=profile)
    second = measure(engine, duration="1s", warmup="0s", profile=profile)
    return first, second, clock.now()


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_profiling_a_simulated_engine_moves_neither_its_samples_nor_its_clock(seed):
    on = _run(seed, True)
    off = _run(seed, False)
    for a, b in zip(on[:2], off[:2]):
        assert a.latencies == b.latencies and a.duration == b.duration and a.windows == b.windows
        assert a.profile is not None and b.profile is None
    assert on[2] == off[2]


def test_the_profile_travels_with_the_measurement_through_its_file():
    m = _run(0, True)[0]
    d = json.loads(json.dumps(m.to_dict()))
    back = Measurement.from_dict(d)
    assert back.profile.digest == m.profile.digest
    assert [x.name for x in back.profile.layers] == [x.name for x in m.profile.layers]
    assert back.profile.total == pytest.approx(m.profile.total, rel=1e-3)
    assert d["profile"]["columns"][:5] == ["name", "type", "precision", "time", "share"]
    # the simulator's profile is its prediction: no inference was run for it
    assert back.profile.source == "simulator" and back.profile.runs == 0
    assert sum(x.share for x in back.profile.layers) == pytest.approx(1.0, abs=1e-3)


def test_a_measurement_without_a_profile_writes_no_profile_field():
    m = _run(0, False)[0]
    assert "profile" not in m.to_dict()
    assert Measurement.from_dict(m.to_dict()).profile is None


def test_the_profile_is_per_inference_of_the_batch_and_matches_the_prediction():
    engine = SimulatedEngine("resnet50", "orin-nano", "fp16", 8, seed=0)
    p = engine.layer_profile(8)
    assert p.total == pytest.approx(engine.prediction.gpu_time, rel=1e-9)
    assert p.reformats == 2
    assert p.layers[0].type == "Reformat" and p.layers[1].name == "conv1 + bn1 + relu"


def test_a_dla_engine_says_it_has_no_layer_profile():
    engine = SimulatedEngine("resnet50", "agx-orin", "int8", 1, dla_core=0, seed=0)
    m = measure(engine, duration="0.2s", warmup="0s")
    assert m.profile.layers == [] and "DLA" in m.profile.notes[0]


class _Broken(SimulatedEngine):
    def layer_profile(self, batch):
        raise RuntimeError("the profiler wrote no trace")


def test_a_profiler_that_fails_leaves_a_note_not_an_error():
    engine = _Broken("resnet18", "orin-nano", "fp16", 1, seed=0)
    m = measure(engine, duration="0.2s", warmup="0s")
    assert m.throughput > 0
    assert m.profile.layers == []
    assert m.profile.notes == ["no per-layer profile: RuntimeError: the profiler wrote no trace"]


def test_the_structure_kept_with_a_baseline_is_small_and_digests_the_whole():
    p = SimulatedEngine("yolov8n", "orin-nano", "int8", 1, seed=0).layer_profile(1)
    s = structure(p)
    assert s["layers"] == len(p.layers) > 64
    assert s["digest"] == p.digest and s["reformats"] == p.reformats
    assert sum(s["precisions"].values()) == len(p.layers)
    # the 64 slowest and every reformat, in execution order; every name as a 6-digit hash
    slowest = {x.name for x in p.top(64)} | {x.name for x in p.layers if x.is_reformat}
    assert [r[0] for r in s["rows"]] == [x.name for x in p.layers if x.name in slowest]
    assert len(s["names"]) == 6 * len(p.layers)
    kept, n, hashes = from_structure(json.loads(json.dumps(s)))
    assert n == len(p.layers) and len(hashes) == n and len(kept.layers) == len(s["rows"])
    assert len(json.dumps(s, separators=(",", ":"))) < 10000
    small = structure(SimulatedEngine("resnet18", "orin-nano", "int8", 1, seed=0).layer_profile(1))
    assert len(small["rows"]) == small["layers"] and "names" not in small


def test_the_digest_sees_fusion_and_precision_but_not_times_or_tactics():
    a = [LayerTime("conv1 + relu1", "Convolution", "int8", 1e-4, tactic="0x1")]
    assert digest(a) == digest([LayerTime("conv1 + relu1", "Convolution", "int8", 2e-4, tactic="0x2")])
    assert digest(a) != digest([LayerTime("conv1 + relu1", "Convolution", "fp16", 1e-4)])
    assert digest(a) != digest([LayerTime("conv1", "Convolution", "int8", 1e-4),
                                LayerTime("relu1", "PointWise", "int8", 1e-5)])
    assert LayerProfile("x", a).to_dict()["digest"] == digest(a)


def test_onnxruntime_profiles_its_nodes_on_a_session_of_its_own(tmp_path):
    from pytest_jetson.engines.onnxruntime import PROFILE_RUNS, OnnxRuntimeEngine

    engine = OnnxRuntimeEngine(str(conv_onnx(tmp_path / "c.onnx", channels=8, size=32)), "fp32", 2)
    m = measure(engine, iterations=30, warmup=0)
    p = m.profile
    assert m.iterations == 30  # the profiling pass is not part of the timed window
    assert p.source == "onnxruntime" and p.runs == PROFILE_RUNS
    names = [x.name for x in p.layers]
    # the names are the nodes onnxruntime ran: its own after a layout rewrite (NCHWc on CPUs with
    # wide vectors renames /pool/MaxPool to p1_nchwc and adds a reorder), the ONNX file's otherwise
    assert all(names) and len(set(names)) == len(names)
    assert {x.type for x in p.layers} >= {"Conv", "MaxPool", "GlobalAveragePool"}
    assert all(x.time > 0 and x.precision == "fp32" for x in p.layers)
    assert sum(x.share for x in p.layers) == pytest.approx(1.0)
    assert Measurement.from_dict(json.loads(json.dumps(m.to_dict()))).profile.digest == p.digest


def test_an_onnxruntime_that_cannot_profile_leaves_a_note(tmp_path, monkeypatch):
    import onnxruntime

    from pytest_jetson.engines.onnxruntime import OnnxRuntimeEngine

    engine = OnnxRuntimeEngine(str(conv_onnx(tmp_path / "c.onnx")), "fp32", 1)

    class NoProfiling(onnxruntime.SessionOptions):
        def __setattr__(self, name, value):
            if name == "enable_profiling":
                raise AttributeError("this build has no profiler")
            super().__setattr__(name, value)

    monkeypatch.setattr(onnxruntime, "SessionOptions", NoProfiling)
    m = measure(engine, iterations=5, warmup=0)
    assert m.iterations == 5 and m.profile.layers == []
    assert "onnxruntime could not profile this engine (AttributeError: this build has no profiler)" in m.profile.notes[0]


def test_a_trace_without_node_timings_is_said():
    from pytest_jetson.engines.onnxruntime import profile_from_trace

    assert profile_from_trace([{"cat": "Session", "name": "model_run", "ts": 0, "dur": 5}]).notes == [
        "onnxruntime's profile held no node timings"]
    assert profile_from_trace("not a trace").layers == []
