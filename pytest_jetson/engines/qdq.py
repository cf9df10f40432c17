"""Explicit INT8 quantization for timing: Q/DQ nodes with placeholder scales, written into the ONNX.

TensorRT 10.1 deprecated implicit quantization (per-tensor dynamic ranges, calibrators) in favour
of explicit quantization: QuantizeLinear/DequantizeLinear pairs in the graph say where INT8 runs.
A model that carries no Q/DQ of its own and is asked for ``int8`` on such a TensorRT gets them
here, where a quantization tool would put them: on the activation and the weight inputs of every
Conv, ConvTranspose, Gemm and MatMul. Weights get per-output-channel scales from their own
largest magnitude (as a quantizer would); activations get the placeholder range trtexec uses for
uncalibrated INT8 (``--int8`` without ``--calib``). Right for timing, meaningless for accuracy,
exactly as trtexec's placeholder ranges are.
"""

from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from ..fileio import write_atomic

QDQ_OPS = ("QuantizeLinear", "DequantizeLinear")
QUANTIZED_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul")
#: The activation range trtexec gives tensors without calibration data (sampleEngines.cpp,
#: setTensorDynamicRange: outputs +-4); the scale maps it onto int8's +-127.
PLACEHOLDER_RANGE = 4.0
#: Per-axis QuantizeLinear needs opset 13.
PER_AXIS_OPSET = 13


def has_qdq(model: Any) -> bool:
    """Whether the graph already says where INT8 runs (QAT or post-training quantized)."""
    return any(node.op_type in QDQ_OPS for node in model.graph.node)


def _opset(model: Any) -> int:
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            return int(entry.version)
    return 0


def _weight_scales(w: np.ndarray, axis: Optional[int]) -> np.ndarray:
    if axis is None:
        peak = float(np.max(np.abs(w))) if w.size else 0.0
        return np.asarray(max(peak, 1e-8) / 127.0, dtype=np.float32)
    moved = np.moveaxis(np.abs(w), axis, 0).reshape(w.shape[axis], -1)
    peak = moved.max(axis=1) if moved.size else np.zeros(w.shape[axis])
    return (np.maximum(peak, 1e-8) / 127.0).astype(np.float32)


def insert_qdq(model: Any, activation_range: float = PLACEHOLDER_RANGE) -> Any:
    """A copy of ``model`` with Q/DQ pairs in front of every quantizable input (see the module)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    per_axis = _opset(out) >= PER_AXIS_OPSET
    inits: Dict[str, Any] = {i.name: i for i in graph.initializer}
    done: Dict[str, str] = {}
    new_inits: List[Any] = []
    nodes: List[Any] = []
    act_scale = np.asarray(activation_range / 127.0, dtype=np.float32)

    def pair(tensor: str, scale: np.ndarray, axis: Optional[int]) -> str:
        if tensor in done:
            return done[tensor]
        base = f"{tensor}__pj_qdq"
        zero = np.zeros(scale.shape, dtype=np.int8)
        new_inits.append(numpy_helper.from_array(scale, f"{base}_scale"))
        new_inits.append(numpy_helper.from_array(zero, f"{base}_zero"))
        attrs = {} if axis is None else {"axis": axis}
        nodes.append(helper.make_node("QuantizeLinear", [tensor, f"{base}_scale", f"{base}_zero"],
                                      [f"{base}_q"], name=f"{base}_Q", **attrs))
        nodes.append(helper.make_node("DequantizeLinear", [f"{base}_q", f"{base}_scale", f"{base}_zero"],
                                      [f"{base}_dq"], name=f"{base}_DQ", **attrs))
        done[tensor] = f"{base}_dq"
        return done[tensor]

    for node in graph.node:
        if node.op_type in QUANTIZED_OPS:
            n_inputs = 2
            for k in range(min(n_inputs, len(node.input))):
                name = node.input[k]
                if not name:
                    continue
                init = inits.get(name)
                if init is None:
                    node.input[k] = pair(name, act_scale, None)
                elif init.data_type == TensorProto.FLOAT:
                    w = numpy_helper.to_array(init)
                    # output channels: axis 0 of Conv weights, 1 of ConvTranspose's; Gemm/MatMul
                    # weights get one scale (their layout depends on transB)
                    axis = None
                    if per_axis and w.ndim >= 2 and node.op_type in ("Conv", "ConvTranspose"):
                        axis = 0 if node.op_type == "Conv" else 1
                    node.input[k] = pair(name, _weight_scales(w, axis), axis)
        nodes.append(node)
    del graph.node[:]
    graph.node.extend(nodes)
    graph.initializer.extend(new_inits)
    return out


def qdq_copy(source: Path, target: Path) -> Path:
    """Write ``source`` with placeholder Q/DQ to ``target`` (atomically; weights kept inline or
    beside it as the source has them) and return ``target``."""
    import onnx

    model = onnx.load(str(source))  # external weights are loaded, so the copy stands alone
    write_atomic(target, insert_qdq(model).SerializeToString())
    return target
