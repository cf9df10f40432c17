"""onnxruntime's refusals over an input's dimensions read as the engine's own message, naming the
input, its shape and the fix: a dimension the model fixes at 0, the batch fixed at 0, named
dimensions the given input_shape does not fit (onnxruntime's error at run time), and a dimension
too big for this machine."""

import numpy as np
import pytest

from pytest_jetson.engines import open_engine
from pytest_jetson.errors import EngineError, ModelError

pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")


def _model(path, dims, reshape_to=None):
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    if reshape_to is None:
        nodes, inits = [helper.make_node("Relu", ["x"], ["y"])], []
    else:
        nodes = [helper.make_node("Reshape", ["x", "s"], ["y"])]
        inits = [helper.make_tensor("s", TensorProto.INT64, [len(reshape_to)], list(reshape_to))]
    graph = helper.make_graph(nodes, "g", [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def _open(path, **kw):
    return open_engine(path, backend="onnxruntime", device=None, precision="fp32", **kw)


@pytest.mark.parametrize("dims, which", [(["N", 3, 0, 4], "dimension 2"), ([0, 3], "the batch")])
def test_a_dimension_fixed_at_zero_is_named(tmp_path, dims, which):
    path = _model(tmp_path / "empty.onnx", dims)
    with pytest.raises(ModelError) as info:
        _open(path)
    msg = str(info.value)
    assert f"input 'x' of {str(path)!r} has {which} fixed at 0" in msg
    assert "no elements" in msg and "re-export the model" in msg
    assert "ONNXRuntimeError" not in msg


def test_named_dimensions_the_input_shape_does_not_fit_are_the_engines_error(tmp_path):
    path = _model(tmp_path / "reshape.onnx", ["N", "C"], reshape_to=(1, 12))
    with pytest.raises(EngineError) as info:
        _open(path, input_shape=(5,))
    msg = str(info.value)
    assert msg.startswith("reshape-fp32-b1: onnxruntime could not run the model on x 1x5 (float32): ")
    assert "the model declares x NxC" in msg and "input_shape=" in msg and "\n" not in msg
    with _open(path, input_shape=(12,)) as engine:  # the size the graph needs runs
        assert engine(x=np.ones((1, 12), np.float32))["y"].shape == (1, 12)


def test_a_dimension_too_big_for_this_machine_is_refused_before_any_memory_is_taken(tmp_path):
    path = _model(tmp_path / "huge.onnx", ["N", 3, 200000, 200000])
    with pytest.raises(EngineError, match="input 'x' of shape 1x3x200000x200000 .* would need .* GiB"):
        _open(path)
