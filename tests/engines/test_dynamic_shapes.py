"""``engine(x)`` on the caller's inputs in every form, and dynamic input sizes (a detector
exported with dynamic height and width) opened with ``input_shape=``: on the simulator (priced
per shape) and on real onnxruntime (outputs computed at each call's size)."""

import numpy as np
import onnx
import pytest
from fakes.onnx_models import seg_onnx, tiny_onnx
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

from pytest_jetson import sim
from pytest_jetson.clock import SimClock
from pytest_jetson.devices.device import simulated
from pytest_jetson.engines import open_engine
from pytest_jetson.engines.base import device_array
from pytest_jetson.engines.simulated import OutputShapeWarning
from pytest_jetson.errors import EngineError

ORIN_NANO = simulated("orin-nano")
FRAME = (1, 3, 480, 640)


@pytest.fixture
def det(tmp_path):
    return seg_onnx(tmp_path / "det.onnx")


def _sim(model, **kw):
    return open_engine(model, backend="simulated", device=ORIN_NANO, **kw)


def _ort(model, **kw):
    pytest.importorskip("onnxruntime")
    return open_engine(model, backend="onnxruntime", device=None, precision="fp32", **kw)


class FakeCupy:
    """What CuPy, PyTorch and Numba arrays expose: ``__cuda_array_interface__`` (version 3)."""

    def __init__(self, shape, dtype=np.float32, ptr=0x7F0000, strides=None):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": np.dtype(dtype).str,
                                         "data": (ptr, False), "strides": None if strides is None else tuple(strides),
                                         "version": 3}


@pytest.mark.parametrize("form", ["array", "list", "dict", "keyword"])
def test_every_call_form_gives_the_outputs_by_name(tmp_path, form):
    engine = _ort(tiny_onnx(tmp_path / "tiny.onnx", features=8), batch=2)
    x = np.ones((2, 8), np.float32)
    call = {"array": lambda: engine(x), "list": lambda: engine([x]), "dict": lambda: engine({"x": x}),
            "keyword": lambda: engine(x=x)}[form]
    out = call()
    assert list(out) == ["y"] and out["y"].shape == (2, 8)
    np.testing.assert_allclose(out["y"], engine.session.run(None, {"x": x})[0])


def test_both_forms_at_once_or_none_is_a_clear_error(tmp_path):
    engine = _sim(tiny_onnx(tmp_path / "tiny.onnx", features=8))
    x = np.ones((1, 8), np.float32)
    with pytest.raises(EngineError, match=r"inputs given both positionally and by name \(x\); pass engine\(x\)"):
        engine(x, x=x)
    with pytest.raises(EngineError, match=r"no inputs given; the engine takes 'x' \(batch, 8\) float32"):
        engine()
    with pytest.raises(EngineError, match="the engine has no input 'images'; the inputs are x"):
        engine(images=x)
    with pytest.raises(EngineError, match="outputs='gpu' is not 'host'"):
        engine(x, outputs="gpu")


def test_a_dynamic_height_and_width_without_input_shape_names_the_dims_and_the_fix(det):
    for opener in (_sim, _ort):
        with pytest.raises(EngineError, match=r"input 'x' has dynamic dimension\(s\) 2, 3 besides the batch "
                                              r"\(\?x3x\?x\?\); open it with input_shape=\(3, H, W\)"):
            opener(det)


def test_input_shape_that_contradicts_the_model_is_a_clear_error(det):
    with pytest.raises(EngineError, match="input_shape gives dimension 1 of 'x' as 4, the model fixes it at 3"):
        _sim(det, input_shape=(4, 480, 640))
    with pytest.raises(EngineError, match=r"input_shape=\(480, 640\) has 2 dimensions, input 'x' has 4"):
        _sim(det, input_shape=(480, 640))
    with pytest.raises(EngineError, match="input_shape names 'images', which is no input of the model; its inputs are x"):
        _sim(det, input_shape={"images": (3, 480, 640)})


def test_simulated_dynamic_model_takes_the_opened_shape_and_prices_it_from_the_graph(det):
    engine = _sim(det, input_shape=(3, 480, 640))
    by_name = _sim(det, input_shape={"x": (1, 3, 480, 640)})
    assert engine.inputs[0].shape == FRAME and engine.outputs[0].shape == (1, 1, 480, 640)
    assert by_name.prediction.latency == engine.prediction.latency
    at_shape = sim.predict(ORIN_NANO, det, "fp16", 1, input_shape=(3, 480, 640))
    assert engine.prediction.latency == pytest.approx(at_shape.latency)
    assert engine.infer()["y"].shape == (1, 1, 480, 640)
    # resolution= sizes height and width as for a zoo model; disagreeing with input_shape is an error
    assert _sim(det, resolution=(480, 640)).prediction.latency == engine.prediction.latency
    with pytest.raises(EngineError, match=r"input_shape=\(3, 480, 640\) and resolution=320 disagree"):
        _sim(det, input_shape=(3, 480, 640), resolution=320)


def test_simulated_call_at_another_size_is_priced_at_that_size_once(det):
    clock = SimClock()
    engine = _sim(det, input_shape=(3, 480, 640), clock=clock)
    small = sim.predict(ORIN_NANO, det, "fp16", 1, input_shape=(3, 48, 320))
    large = sim.predict(ORIN_NANO, det, "fp16", 1, input_shape=(3, 960, 960))
    assert small.latency < engine.prediction.latency < large.latency
    took = []
    for shape in [(1, 3, 48, 320)] * 50 + [(1, 3, 960, 960)] * 50:
        t0 = clock.now()
        out = engine(np.zeros(shape, np.float32))
        took.append(clock.now() - t0)
        assert out["y"].shape == (1, 1) + shape[2:]
    assert np.mean(took[:50]) == pytest.approx(small.latency, rel=0.05)
    assert np.mean(took[50:]) == pytest.approx(large.latency, rel=0.05)
    assert len(engine._predictions) == 3  # opened shape, and one per new size: cached
    assert engine.prediction_at(1, (3, 48, 320)).latency == pytest.approx(small.latency)
    # a size outside what the graph takes (another channel count) is refused, naming both
    with pytest.raises(EngineError, match=r"input 'x' has shape \(1, 4, 48, 320\); the engine takes "
                                          r"\(batch, 3, 1\.\., 1\.\.\)"):
        engine(np.zeros((1, 4, 48, 320), np.float32))


def test_a_fixed_size_model_refuses_another_size_naming_both(tmp_path):
    engine = _sim("resnet50")
    with pytest.raises(EngineError, match=r"input 'input' has shape \(1, 3, 112, 112\); the engine takes "
                                          r"\(batch, 3, 224, 224\)"):
        engine(np.zeros((1, 3, 112, 112), np.float32))
    assert engine.input_ranges == {}
    # a zoo model takes input_shape= as its resolution
    assert _sim("resnet50", input_shape=(3, 160, 160)).inputs[0].shape == (1, 3, 160, 160)


def test_simulated_engine_takes_arrays_on_the_gpu_it_never_reads(det):
    engine = _sim(det, input_shape=(3, 480, 640))
    assert engine(FakeCupy(FRAME))["y"].shape == (1, 1, 480, 640)
    with pytest.raises(EngineError, match=r"input 'x' is float16; the engine takes float32"):
        engine(FakeCupy(FRAME, dtype=np.float16))


def test_onnxruntime_dynamic_model_runs_real_outputs_at_each_calls_size(det):
    engine = _ort(det, input_shape=(3, 480, 640))
    assert engine.inputs[0].shape == FRAME and engine.outputs[0].shape == (1, 1, 480, 640)
    assert engine.infer()["y"].shape == (1, 1, 480, 640)  # infer() runs at input_shape
    rng = np.random.default_rng(1)
    for shape in [(1, 3, 48, 320), (1, 3, 64, 96), FRAME]:
        x = rng.standard_normal(shape).astype(np.float32)
        y = engine(x)["y"]
        assert y.shape == (shape[0], 1) + shape[2:]
        np.testing.assert_allclose(y, engine.session.run(None, {"x": x})[0], rtol=1e-6)
        assert 0 <= y.min() and y.max() <= 1 and y.std() > 0.1  # a sigmoid's real output, not zeros


def test_onnxruntime_refuses_arrays_on_the_gpu_naming_the_fix(det):
    engine = _ort(det, input_shape=(3, 480, 640))
    with pytest.raises(EngineError, match=r"input 'x' is an array on the GPU \(FakeCupy\); the onnxruntime "
                                          r"backend runs on the host: pass a numpy array \(CuPy: x.get\(\)"):
        engine(FakeCupy(FRAME))


def test_an_output_shape_inference_cannot_size_is_said_not_guessed_silently(tmp_path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, "height", "width"])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, [4, "n"])  # NonZero: sized by the values
    graph = helper.make_graph([helper.make_node("NonZero", ["x"], ["y"])], "nz", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    path = tmp_path / "nz.onnx"
    onnx.save(model, str(path))
    with pytest.warns(OutputShapeWarning, match=r"nz-fp16-b1: ONNX shape inference cannot size output\(s\) 'y' "
                                                r"at the input size given; the simulated engine returns them at"):
        engine = _sim(path, input_shape=(3, 8, 8))
    assert "y" in engine(np.zeros((1, 3, 8, 8), np.float32))


@settings(max_examples=200, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), perm_seed=st.integers(0, 1000),
       step=st.integers(1, 2))
def test_an_array_on_the_gpu_is_contiguous_exactly_when_numpy_would_say_so(shape, perm_seed, step):
    """What TensorRT can read from a caller's pointer: dense C order (size-1 axes stride anyhow)."""
    a = np.zeros([d * step for d in shape], np.float32)[tuple(slice(None, None, step) for _ in shape)]
    a = a.transpose(np.random.default_rng(perm_seed).permutation(len(shape)))
    seen = device_array(FakeCupy(a.shape, strides=a.strides))
    assert seen.contiguous == a.flags.c_contiguous
    assert device_array(FakeCupy(a.shape)).contiguous  # strides None: C order by the interface's rule


def test_the_simulators_own_host_time_in_calls_is_counted_apart(det):
    engine = _sim(det, input_shape=(3, 64, 64))
    assert engine.host_time_s == 0.0
    before = engine.clock.now()
    engine(np.zeros((1, 3, 64, 64), np.float32))
    first = engine.host_time_s
    engine(np.zeros((1, 3, 96, 128), np.float32))  # a new size: analysed and priced in the call
    assert engine.host_time_s > first > 0
    counted = engine.host_time_s
    engine.infer()  # the harness's path: nothing to price, nothing counted
    assert engine.host_time_s == counted
    assert engine.clock.now() > before  # the board's time went on the virtual clock, apart
