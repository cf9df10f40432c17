"""Cost rules per ONNX op: multiply-accumulates, FLOPs, trainable parameters, kernel kind.

MACs count only the multiply-accumulates of Conv, ConvTranspose, Gemm and MatMul (what
torchvision's and Ultralytics' model tables count), and the input and recurrent products of LSTM,
GRU and RNN layers at every step. FLOPs are 2 x MACs plus bias adds plus a
per-element cost for everything else (one for simple arithmetic, more for transcendental
functions): an estimate of the arithmetic a roofline needs, not a published figure.
"""

from __future__ import annotations

from typing import Dict, Sequence, Tuple

# Inputs (by position) that are trainable parameters when they are initializers. Other
# initializers (BatchNorm running statistics, shape tensors, anchors) are constants, not params.
PARAM_INPUTS: Dict[str, Tuple[int, ...]] = {
    "Conv": (1, 2), "ConvTranspose": (1, 2), "Gemm": (0, 1, 2), "MatMul": (0, 1),
    "BatchNormalization": (1, 2), "InstanceNormalization": (1, 2), "LayerNormalization": (1, 2),
    "GroupNormalization": (1, 2), "PRelu": (1,),
    # quantized graphs: weight, and bias where there is one
    "QLinearConv": (3, 8), "ConvInteger": (1,), "QLinearMatMul": (0, 3), "MatMulInteger": (0, 1),
    # recurrent layers: input weights W, recurrent weights R, biases B (and LSTM's peepholes P)
    "LSTM": (1, 2, 3, 7), "GRU": (1, 2, 3), "RNN": (1, 2, 3),
}
#: Gates per recurrent cell: each is a product with the input and one with the hidden state.
RECURRENT_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}
#: Per-gate-element work of a cell's pointwise update (sigmoids and tanh at 4, products and sums).
_RECURRENT_POINTWISE = {"LSTM": 6, "GRU": 6, "RNN": 5}
BIAS_INPUT = {"Conv": 2, "ConvTranspose": 2, "Gemm": 2, "QLinearConv": 8}

# per output element
ELEMENTWISE_COST: Dict[str, int] = {
    "Add": 1, "Sub": 1, "Mul": 1, "Div": 1, "Max": 1, "Min": 1, "Sum": 1, "Mean": 1, "Neg": 1,
    "Abs": 1, "Relu": 1, "LeakyRelu": 2, "PRelu": 2, "Clip": 2, "Floor": 1, "Ceil": 1, "Round": 1,
    "Sign": 1, "Reciprocal": 1, "Equal": 1, "Greater": 1, "Less": 1, "GreaterOrEqual": 1,
    "LessOrEqual": 1, "Not": 1, "And": 1, "Or": 1, "Xor": 1, "Where": 1, "Mod": 1,
    "Sigmoid": 4, "HardSigmoid": 2, "HardSwish": 3, "Tanh": 4, "Exp": 4, "Log": 4, "Sqrt": 4,
    "Pow": 4, "Erf": 4, "Elu": 3, "Selu": 3, "Celu": 3, "Softplus": 4, "Softsign": 2,
    "Mish": 6, "Gelu": 8, "Sin": 4, "Cos": 4,
    "BatchNormalization": 2, "InstanceNormalization": 5, "LayerNormalization": 5,
    "GroupNormalization": 5, "LpNormalization": 3,
}

POOL_OPS = {"MaxPool", "AveragePool", "LpPool"}
GLOBAL_POOL_OPS = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "ReduceMean", "ReduceMax",
                   "ReduceMin", "ReduceSum", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSumExp",
                   "ReduceSumSquare", "ArgMax", "ArgMin"}
CONCAT_OPS = {"Concat", "Split", "Slice"}
SOFTMAX_OPS = {"Softmax", "LogSoftmax", "Hardmax"}
RESIZE_OPS = {"Resize", "Upsample"}
# Moves or reinterprets data without arithmetic.
MOVE_OPS = {"Transpose", "Pad", "Expand", "Tile", "Gather", "GatherElements", "GatherND",
            "ScatterND", "ScatterElements", "DepthToSpace", "SpaceToDepth", "Cast", "TopK",
            "NonMaxSuppression", "NonZero", "CumSum", "Range", "ConstantOfShape", "EyeLike",
            "Trilu", "ReverseSequence", "OneHot"}
# No kernel at all in TensorRT: metadata changes and build-time constants.
VIEW_OPS = {"Constant", "Shape", "Size", "Identity", "Dropout", "Reshape", "Flatten", "Squeeze",
            "Unsqueeze"}
HEAD_OPS = {"Conv", "ConvTranspose", "Gemm", "MatMul", "QLinearConv", "ConvInteger", "QLinearMatMul",
            "MatMulInteger"}
# Quantize/dequantize: one multiply-add per element (TensorRT fuses them into int8 kernels).
QDQ_OPS = {"QuantizeLinear", "DequantizeLinear"}
ACTIVATIONS = {"Relu", "Clip", "Sigmoid", "LeakyRelu", "Tanh", "HardSigmoid", "HardSwish", "Elu",
               "Selu", "Softplus", "PRelu", "Gelu", "Mish"}

KNOWN_OPS = (set(PARAM_INPUTS) | set(ELEMENTWISE_COST) | POOL_OPS | GLOBAL_POOL_OPS | CONCAT_OPS
             | SOFTMAX_OPS | RESIZE_OPS | MOVE_OPS | VIEW_OPS | HEAD_OPS | QDQ_OPS)


def _prod(xs: Sequence[int]) -> int:
    p = 1
    for x in xs:
        p *= int(x)
    return p


def kind(op: str, groups: int = 1, in_channels: int | None = None) -> str:
    if op in ("Conv", "ConvTranspose", "QLinearConv", "ConvInteger"):
        return "depthwise" if groups > 1 and in_channels == groups else "conv"
    if op in ("Gemm", "MatMul", "QLinearMatMul", "MatMulInteger") or op in RECURRENT_GATES:
        return "gemm"
    if op in POOL_OPS or op in GLOBAL_POOL_OPS:
        return "pool"
    if op in ELEMENTWISE_COST or op in QDQ_OPS:
        return "elementwise"
    if op in RESIZE_OPS:
        return "resize"
    if op in CONCAT_OPS:
        return "concat"
    if op in SOFTMAX_OPS:
        return "softmax"
    return "other"


def _conv_macs(op: str, attrs: dict, in_shapes: list, out) -> int:
    at = 3 if op == "QLinearConv" else 1
    w = in_shapes[at] if len(in_shapes) > at else None
    if out is None or w is None or len(w) < 2:
        return 0
    return _prod(out) * _prod(w[1:])


def _conv_transpose_macs(op: str, attrs: dict, in_shapes: list, out) -> int:
    # every input element is scattered through the whole kernel
    x, w = in_shapes[0], in_shapes[1] if len(in_shapes) > 1 else None
    if x is None or w is None or len(w) < 2:
        return 0
    return _prod(x) * _prod(w[1:])


def _gemm_macs(op: str, attrs: dict, in_shapes: list, out) -> int:
    a = in_shapes[0]
    if out is None or a is None or len(a) != 2:
        return 0
    k = a[0] if attrs.get("transA", 0) else a[1]
    return _prod(out) * int(k)


def _matmul_macs(op: str, attrs: dict, in_shapes: list, out) -> int:
    a = in_shapes[0]
    if out is None or not a:
        return 0
    return _prod(out) * int(a[-1])


def _recurrent_macs(op: str, attrs: dict, in_shapes: list, out) -> int:
    # X is (seq, batch, input) or, with layout=1, (batch, seq, input): every step of every
    # sequence multiplies the input by W and the previous hidden state by R
    x = in_shapes[0]
    w = in_shapes[1] if len(in_shapes) > 1 else None
    r = in_shapes[2] if len(in_shapes) > 2 else None
    if x is None or w is None or r is None or len(x) != 3:
        return 0
    return int(x[0]) * int(x[1]) * (_prod(w) + _prod(r))


_MACS = {"Conv": _conv_macs, "LSTM": _recurrent_macs, "GRU": _recurrent_macs, "RNN": _recurrent_macs, "ConvInteger": _conv_macs, "QLinearConv": _conv_macs,
         "ConvTranspose": _conv_transpose_macs, "Gemm": _gemm_macs,
         "MatMul": _matmul_macs, "MatMulInteger": _matmul_macs, "QLinearMatMul": _matmul_macs}


def macs(op: str, attrs: dict, in_shapes: list, out_shapes: list) -> int:
    """Multiply-accumulates of one node; shapes are tuples (None where unknown)."""
    rule = _MACS.get(op)
    if rule is None:
        return 0
    return rule(op, attrs, in_shapes, out_shapes[0] if out_shapes else None)


def flops(op: str, attrs: dict, in_shapes: list, out_shapes: list, mac: int) -> int:
    out = out_shapes[0] if out_shapes else None
    out_elems = _prod(out) if out is not None else 0
    if op in BIAS_INPUT:
        at = BIAS_INPUT[op]
        return 2 * mac + (out_elems if len(in_shapes) > at and in_shapes[at] is not None else 0)
    if op in HEAD_OPS:
        return 2 * mac
    if op in RECURRENT_GATES:
        gate_elems = mac // max(1, sum(in_shapes[1][2:]) + sum(in_shapes[2][2:])) if mac else 0
        return 2 * mac + _RECURRENT_POINTWISE[op] * gate_elems
    if op in QDQ_OPS:
        return 2 * out_elems
    if op in ELEMENTWISE_COST:
        return ELEMENTWISE_COST[op] * out_elems
    if op in POOL_OPS:
        return out_elems * _prod(attrs.get("kernel_shape", [1]))
    if op in GLOBAL_POOL_OPS:
        return _prod(in_shapes[0]) if in_shapes and in_shapes[0] is not None else 0
    if op in SOFTMAX_OPS:
        return 5 * out_elems
    if op in RESIZE_OPS:
        mode = attrs.get("mode", b"nearest")
        mode = mode.decode() if isinstance(mode, bytes) else mode
        return {"linear": 4, "cubic": 16}.get(mode, 0) * out_elems
    return 0
