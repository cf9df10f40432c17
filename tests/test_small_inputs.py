"""Small inputs the plugin used to take or misname: ``budget=True`` is no budget; a FIFO or a
directory given as an ``.onnx`` file is named for what it is."""

import os

import pytest

from pytest_jetson.engines.base import check_onnx_path
from pytest_jetson.errors import ConfigError, ModelError
from pytest_jetson.options import check_budget


@pytest.mark.parametrize("value", [True, False])
def test_a_bool_is_not_a_budget(value):
    with pytest.raises(ConfigError, match=f"budget: {value!r} is not a measurement budget"):
        check_budget(value, "budget")
    assert check_budget(3, "budget") == 3.0 and check_budget("1.5", "budget") == 1.5


def test_a_fifo_onnx_is_named_a_fifo_not_missing(tmp_path):
    fifo = tmp_path / "model.onnx"
    os.mkfifo(str(fifo))
    with pytest.raises(ModelError, match=r"model\.onnx' is a named pipe \(FIFO\), not an ONNX file; pass "
                                         r"the path of a regular \.onnx file"):
        check_onnx_path(str(fifo), "trt_engine")


def test_a_directory_onnx_is_named_a_directory(tmp_path):
    (tmp_path / "model.onnx").mkdir()
    with pytest.raises(ModelError, match=r"is a directory, not an ONNX file"):
        check_onnx_path(str(tmp_path / "model.onnx"), "trt_engine")


def test_a_missing_onnx_still_does_not_exist(tmp_path):
    with pytest.raises(ModelError, match="does not exist"):
        check_onnx_path(str(tmp_path / "gone.onnx"), "trt_engine")


def test_an_input_too_big_to_make_is_an_engine_error_naming_it(tmp_path):
    pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    from onnx import TensorProto, helper

    from pytest_jetson.engines.onnxruntime import OnnxRuntimeEngine
    from pytest_jetson.errors import EngineError

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "H", "W"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "H", "W"])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "relu.onnx"))
    with pytest.raises(EngineError, match=r"input 'x' of shape 1x1000000x1000000 \(float32\) would need "
                                          r"7450\.6 GiB to make, more than half of this machine's .*; open the "
                                          r"model with a smaller input_shape= or batch="):
        OnnxRuntimeEngine(str(tmp_path / "relu.onnx"), input_shape=(10 ** 6, 10 ** 6))
    assert OnnxRuntimeEngine(str(tmp_path / "relu.onnx"), input_shape=(4, 4)).inputs[0].shape[1:] == (4, 4)
