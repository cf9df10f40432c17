"""The Engine contract as declared on the base class: what a backend gets by default, and running
on the caller's inputs (``engine(inputs)``) on the simulated and onnxruntime backends."""

import numpy as np
import pytest
from fakes.onnx_models import tiny_onnx

from pytest_jetson.clock import SimClock
from pytest_jetson.devices.device import simulated
from pytest_jetson.engines import open_engine
from pytest_jetson.engines.base import Engine, TensorSpec, Unsupported, make_inputs
from pytest_jetson.errors import EngineError
from pytest_jetson.models.reference import ModelRef, resolve
from pytest_jetson.run.harness import measure


class Minimal(Engine):
    """Only what a backend must write: its attributes and ``_infer``."""

    backend = "minimal"

    def __init__(self):
        super().__init__()
        self.name, self.model, self.precision = "minimal-fp16-b1", "minimal", "fp16"
        self.clock = SimClock()

    def _infer(self, batch):
        self.clock.advance(0.01)


def test_the_defaults_a_backend_gets():
    engine = Minimal()
    m = measure(engine, iterations=5, warmup=0)  # the base's timed loop
    assert m.latencies == [pytest.approx(0.01)] * 5
    assert engine.measurement_extra(1) == {} and engine.memory_bytes is None
    assert engine.last_device_time is None and m.engine_memory is None
    assert not hasattr(engine, "prediction")  # the simulator's, not every engine's
    with pytest.raises(NotImplementedError, match="the minimal backend does not say what inputs it takes"):
        engine(np.zeros((1, 4), np.float32))
    with pytest.raises(EngineError, match="does not say what outputs it returns"):
        engine.output_specs  # noqa: B018
    engine.inputs = [TensorSpec("x", (1, 4), np.float32)]
    with pytest.raises(Unsupported, match="minimal-fp16-b1: the minimal backend runs only on the "
                                          r"inputs it makes itself \(engine.infer\(\)\), not on the caller's"):
        engine(np.zeros((1, 4), np.float32))


def test_an_engine_without_infer_says_what_it_lacks():
    class Empty(Engine):
        pass

    with pytest.raises(Unsupported, match="Empty does not implement _infer"):
        Empty().infer()


@pytest.fixture
def sim_engine():
    return open_engine("resnet50", backend="simulated", device=simulated("orin-nano"), clock=SimClock(),
                       precision="int8", batch=8)


def test_the_simulated_engine_runs_on_the_callers_inputs_on_the_virtual_clock(sim_engine):
    (spec,) = sim_engine.input_specs
    assert (spec.shape, np.dtype(spec.dtype)) == ((8, 3, 224, 224), np.float32)
    (out_spec,) = sim_engine.output_specs
    clock = sim_engine.clock
    t0 = clock.now()
    out = sim_engine(np.ones((2, 3, 224, 224), np.float32))
    assert list(out) == [out_spec.name]
    assert out[out_spec.name].shape == (2,) + out_spec.shape[1:]
    assert out[out_spec.name].dtype == np.dtype(out_spec.dtype)
    assert clock.now() - t0 == pytest.approx(sim_engine.prediction_for(2).latency, rel=0.2)
    assert clock.load_at(t0) is sim_engine.prediction_for(2)  # announced: telemetry sees it
    out[out_spec.name][:] = 1  # the caller owns what it got
    assert not sim_engine([np.ones((2, 3, 224, 224), np.float32)])[out_spec.name].any()


def test_inputs_that_do_not_fit_are_named_with_the_fix(sim_engine):
    name = sim_engine.input_specs[0].name
    with pytest.raises(EngineError, match=rf"input '{name}' is float64; the engine takes float32 \(convert "
                                          r"with \.astype\)"):
        sim_engine(np.zeros((1, 3, 224, 224)))
    with pytest.raises(EngineError, match=r"has shape \(1, 3, 112, 112\); the engine takes \(batch, 3, 224, 224\)"):
        sim_engine(np.zeros((1, 3, 112, 112), np.float32))
    with pytest.raises(EngineError, match="batch 9 is larger than the engine's profile allows"):
        sim_engine(np.zeros((9, 3, 224, 224), np.float32))
    with pytest.raises(EngineError, match="the engine has no input 'image'"):
        sim_engine({name: np.zeros((1, 3, 224, 224), np.float32), "image": 0})
    with pytest.raises(EngineError, match="2 inputs given, the engine takes 1"):
        sim_engine([np.zeros((1, 3, 224, 224), np.float32)] * 2)


def test_onnxruntime_runs_the_callers_inputs_for_real(tmp_path):
    engine = open_engine(tiny_onnx(tmp_path / "tiny.onnx", features=16), backend="onnxruntime", device=None,
                         precision="fp32", batch=4)
    assert engine.input_specs == [TensorSpec("x", (4, 16), np.dtype(np.float32))]
    premade = make_inputs(engine.input_specs, 4, seed=0)["x"]  # what infer() runs on
    np.testing.assert_array_equal(engine({"x": premade})["y"], engine.infer()["y"])
    x = np.abs(np.random.default_rng(1).standard_normal((2, 16))).astype(np.float32)
    y = engine(x)["y"]
    assert y.shape == (2, 16) and (y >= 0).all()
    assert not np.array_equal(y, engine(2 * x)["y"])  # the outputs follow the inputs


@pytest.mark.parametrize("model, kind, name, display", [
    ("resnet50", "zoo", "resnet50", "resnet50"),
    ("models/tiny.onnx", "onnx", "tiny", "models/tiny.onnx"),
    ("tiny.onnx", "onnx", "tiny", "tiny.onnx"),
    ("plans/net.engine", "plan", "net", "plans/net.engine"),
    ("net.PLAN", "plan", "net", "net.PLAN"),
])
def test_a_model_reference_says_what_it_names(model, kind, name, display):
    ref = resolve(model)
    assert (ref.kind, ref.name, ref.display, str(ref)) == (kind, name, display, display)
    assert (ref.path is None) == (kind == "zoo") and ref.is_file == (kind != "zoo")
    assert resolve(ref) is ref


def test_a_path_object_is_a_file_whatever_its_name(tmp_path):
    ref = resolve(tmp_path / "weights")
    assert ref == ModelRef(name="weights", path=tmp_path / "weights", kind="onnx", display=str(tmp_path / "weights"))
