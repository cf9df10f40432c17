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
