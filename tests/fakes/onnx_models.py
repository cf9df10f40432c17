"""Small real ONNX files for engine and harness tests (real onnxruntime runs them in microseconds)."""

from pathlib import Path
from typing import Optional

import numpy as np


def tiny_onnx(path: Path, features: int = 64, layers: int = 2, batch: Optional[int] = None) -> Path:
    """A stack of MatMul + Relu on a (batch, features) input; dynamic batch unless ``batch``."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    dim = batch if batch is not None else "batch"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [dim, features])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [dim, features])
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        w = numpy_helper.from_array(rng.standard_normal((features, features)).astype(np.float32), f"w{i}")
        inits.append(w)
        out = "y" if i == layers - 1 else f"h{i}"
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
        nodes.append(helper.make_node("Relu", [f"m{i}"], [out]))
        prev = out
    graph = helper.make_graph(nodes, "tiny", [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def conv_onnx(path: Path, channels: int = 4, size: Optional[int] = 16, softmax: bool = False,
              qdq: bool = False, only_softmax: bool = False) -> Path:
    """A small CNN on (batch, 3, size, size) images (``size=None``: dynamic height and width):
    Conv, Relu, MaxPool, Conv, GlobalAveragePool, Flatten, optionally Softmax (a layer TensorRT's
    DLA does not run). ``qdq``: Q/DQ in front of the first Conv, as a quantized export has them.
    ``only_softmax``: a graph of nothing but a Softmax."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    h = size if size is not None else "height"
    w = size if size is not None else "width"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, h, w])
    if only_softmax:
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, h, w])
        graph = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], name="/softmax/Softmax", axis=1)],
                                  "soft", [x], [y])
    else:
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", channels])
        inits = [numpy_helper.from_array(rng.standard_normal((channels, 3, 3, 3)).astype(np.float32), "w1"),
                 numpy_helper.from_array(rng.standard_normal((channels, channels, 3, 3)).astype(np.float32), "w2")]
        nodes = []
        first = "x"
        if qdq:
            inits += [numpy_helper.from_array(np.asarray(0.05, np.float32), "s"),
                      numpy_helper.from_array(np.asarray(0, np.int8), "z")]
            nodes += [helper.make_node("QuantizeLinear", ["x", "s", "z"], ["xq"], name="/quant/Q"),
                      helper.make_node("DequantizeLinear", ["xq", "s", "z"], ["xdq"], name="/quant/DQ")]
            first = "xdq"
        nodes += [
            helper.make_node("Conv", [first, "w1"], ["c1"], name="/conv1/Conv", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c1"], ["r1"], name="/relu1/Relu"),
            helper.make_node("MaxPool", ["r1"], ["p1"], name="/pool/MaxPool", kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("Conv", ["p1", "w2"], ["c2"], name="/conv2/Conv", pads=[1, 1, 1, 1]),
            helper.make_node("GlobalAveragePool", ["c2"], ["g"], name="/gap/GlobalAveragePool"),
            helper.make_node("Flatten", ["g"], ["f" if softmax else "y"], name="/flatten/Flatten"),
        ]
        if softmax:
            nodes.append(helper.make_node("Softmax", ["f"], ["y"], name="/softmax/Softmax", axis=1))
        graph = helper.make_graph(nodes, "convnet", [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def seg_onnx(path: Path, channels: int = 4, size: Optional[int] = None) -> Path:
    """A dense-prediction CNN (as a text detector's head): (batch, 3, H, W) images to a
    (batch, 1, H, W) probability map through Conv, Relu, Conv, Sigmoid. ``size=None``: dynamic
    height and width, named ``height`` and ``width`` on the input and on the output."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    h = size if size is not None else "height"
    w = size if size is not None else "width"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, h, w])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 1, h, w])
    inits = [numpy_helper.from_array(rng.standard_normal((channels, 3, 3, 3)).astype(np.float32), "w1"),
             numpy_helper.from_array(rng.standard_normal((1, channels, 3, 3)).astype(np.float32), "w2")]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="/conv1/Conv", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], name="/relu1/Relu"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="/conv2/Conv", pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["c2"], ["y"], name="/sigmoid/Sigmoid"),
    ]
    graph = helper.make_graph(nodes, "segnet", [x], [y], initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path
