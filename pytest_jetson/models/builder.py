"""A small ONNX graph builder that tracks shapes, so architectures read like their PyTorch source.

Two modes share every line of architecture code:

* full: weights are seeded random numpy arrays (deterministic per model name), ready for
  onnxruntime or TensorRT;
* structure-only: each weight initializer carries its name, type and dims but no bytes (it is
  marked as external data at a location that does not exist). Shape inference and
  :func:`pytest_jetson.models.graph.analyze` only need the dims, so vgg19's 575 MB of weights
  are never generated when the simulator only wants the graph's MACs and bytes.

Small constants that shape inference must read (Reshape targets, Split sizes, Clip bounds) are
always materialised.
"""

from __future__ import annotations

import math
import zlib
from typing import Dict, List, Sequence, Tuple

import numpy as np

OPSET = 17
IR_VERSION = 8  # the oldest IR that carries opset 17: keeps JetPack 5's onnxruntime/TensorRT happy
BATCH_DIM = "batch"
STRUCTURE_ONLY_LOCATION = "__pytest_jetson_structure_only__"
STRUCTURE_ONLY_KEY = "pytest_jetson.structure_only"

Shape = Tuple[int, ...]


def conv_out(size: int, k: int, stride: int, pad: int, dilation: int = 1, ceil: bool = False) -> int:
    span = size + 2 * pad - dilation * (k - 1) - 1
    out = (-(-span // stride) if ceil else span // stride) + 1
    if ceil and (out - 1) * stride >= size + pad:
        # PyTorch's rule: the last window must start inside the input or its left padding
        out -= 1
    return out


class Net:
    """Accumulates nodes and initializers; every method returns the output tensor's name.

    Shapes are tracked without the batch dimension, so ``shape(x)`` is ``(C, H, W)`` for images.
    """

    def __init__(self, name: str, input_shape: Shape, structure: bool = False,
                 batch: int | None = None, input_name: str = "input"):
        import onnx  # noqa: F401  (fail early and clearly if onnx is missing)

        self.name = name
        self.structure = structure
        self.batch = batch
        self.rng = np.random.default_rng(zlib.crc32(name.encode()))
        self.nodes: list = []
        self.inits: list = []
        self.shapes: Dict[str, Shape] = {}
        self.params = 0  # trainable parameters, as torch's model.parameters() counts them
        self._names: Dict[str, int] = {}
        self.input = input_name
        self.shapes[input_name] = tuple(input_shape)
        self.outputs: List[str] = []

    # --- naming and tensors -------------------------------------------------------------------

    def _unique(self, base: str) -> str:
        n = self._names.get(base, 0)
        self._names[base] = n + 1
        return base if n == 0 else f"{base}_{n}"

    def shape(self, x: str) -> Shape:
        return self.shapes[x]

    def weight(self, name: str, shape: Shape, init: str = "normal", fan_in: int = 1,
               trainable: bool = True) -> str:
        """A float32 weight: generated from the model's seed, or dims-only in structure mode."""
        from onnx import TensorProto, numpy_helper

        name = self._unique(name)
        count = int(np.prod(shape)) if shape else 1
        if trainable:
            self.params += count
        if self.structure:
            t = TensorProto()
            t.name = name
            t.data_type = TensorProto.FLOAT
            t.dims.extend(shape)
            t.data_location = TensorProto.EXTERNAL
            entry = t.external_data.add()
            entry.key = "location"
            entry.value = STRUCTURE_ONLY_LOCATION
            self.inits.append(t)
            return name
        if init == "ones":
            arr = np.ones(shape, np.float32)
        elif init == "zeros":
            arr = np.zeros(shape, np.float32)
        elif init == "arange":
            arr = np.arange(count, dtype=np.float32).reshape(shape)
        elif init == "small":
            arr = self.rng.uniform(0.05, 0.2, size=shape).astype(np.float32)
        elif init == "uniform01":
            arr = self.rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
        else:
            # He-normal keeps activations finite through 150 layers with random weights
            arr = self.rng.standard_normal(size=shape, dtype=np.float32)
            arr *= np.float32(math.sqrt(2.0 / max(fan_in, 1)))
        self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def const(self, name: str, value) -> str:
        """A constant that is always materialised (shape tensors, bounds, fixed tables)."""
        from onnx import numpy_helper

        name = self._unique(name)
        arr = np.asarray(value)
        self.inits.append(numpy_helper.from_array(arr, name))
        self.shapes[name] = tuple(arr.shape)
        return name

    def const_node(self, name: str, value) -> str:
        """A constant as a Constant node (what torch emits for tensors computed in forward)."""
        from onnx import numpy_helper

        arr = np.asarray(value)
        out = self.node("Constant", [], arr.shape, name, value=numpy_helper.from_array(arr, name + ".value"))
        self.shapes[out] = tuple(arr.shape)
        return out

    def node(self, op: str, inputs: Sequence[str], out_shape: Shape, name: str,
             n_out: int = 1, out_shapes: List[Shape] | None = None, **attrs) -> str:
        from onnx import helper

        name = self._unique(name)
        outs = [name] if n_out == 1 else [f"{name}_out{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=name, **attrs))
        if n_out == 1:
            self.shapes[outs[0]] = tuple(out_shape)
            return outs[0]
        for o, s in zip(outs, out_shapes or []):
            self.shapes[o] = tuple(s)
        return outs  # type: ignore[return-value]

    # --- layers -------------------------------------------------------------------------------

    def conv(self, x: str, cout: int, k, stride=1, pad=0, groups: int = 1, dilation=1,
             bias: bool = True, name: str = "conv", weight_init: str = "normal",
             trainable: bool = True) -> str:
        cin, h, w = self.shapes[x]
        kh, kw = (k, k) if isinstance(k, int) else k
        sh, sw = (stride, stride) if isinstance(stride, int) else stride
        ph, pw = (pad, pad) if isinstance(pad, int) else pad
        dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
        if cin % groups or cout % groups:
            raise ValueError(f"{name}: channels {cin}->{cout} not divisible by groups {groups}")
        fan_in = (cin // groups) * kh * kw
        wname = self.weight(name + ".weight", (cout, cin // groups, kh, kw), weight_init, fan_in,
                            trainable=trainable)
        inputs = [x, wname]
        if bias:
            inputs.append(self.weight(name + ".bias", (cout,), "zeros"))
        oh = conv_out(h, kh, sh, ph, dh)
        ow = conv_out(w, kw, sw, pw, dw)
        if oh < 1 or ow < 1:
            raise ValueError(f"{name}: input {h}x{w} is too small")
        return self.node("Conv", inputs, (cout, oh, ow), name, kernel_shape=[kh, kw],
                         strides=[sh, sw], pads=[ph, pw, ph, pw], dilations=[dh, dw], group=groups)

    def conv_transpose(self, x: str, cout: int, k: int, stride: int = 1, pad: int = 0,
                       bias: bool = True, name: str = "deconv") -> str:
        """torch's ConvTranspose2d (square kernel, no output padding, groups 1)."""
        cin, h, w = self.shapes[x]
        # each output element sums cin x k x k / stride^2 products: He-normal over that fan-in
        fan_in = max(cin * k * k // (stride * stride), 1)
        inputs = [x, self.weight(name + ".weight", (cin, cout, k, k), "normal", fan_in)]
        if bias:
            inputs.append(self.weight(name + ".bias", (cout,), "zeros"))
        oh = (h - 1) * stride - 2 * pad + k
        ow = (w - 1) * stride - 2 * pad + k
        if oh < 1 or ow < 1:
            raise ValueError(f"{name}: input {h}x{w} is too small")
        return self.node("ConvTranspose", inputs, (cout, oh, ow), name, kernel_shape=[k, k],
                         strides=[stride, stride], pads=[pad] * 4)

    def bn(self, x: str, name: str = "bn", eps: float = 1e-5, residual: bool = False) -> str:
        """``residual``: the last norm of a residual branch gets a small random scale, so random
        weights do not double the activations' variance at every block (fp16 engines of
        resnet152 would overflow)."""
        c = self.shapes[x][0]
        scale = self.weight(name + ".weight", (c,), "small" if residual else "uniform01")
        b = self.weight(name + ".bias", (c,), "zeros")
        # running statistics are buffers, not parameters (torchvision's counts exclude them)
        mean = self.weight(name + ".running_mean", (c,), "zeros", trainable=False)
        var = self.weight(name + ".running_var", (c,), "ones", trainable=False)
        return self.node("BatchNormalization", [x, scale, b, mean, var], self.shapes[x], name,
                         epsilon=eps)

    def relu(self, x: str, name: str = "relu") -> str:
        return self.node("Relu", [x], self.shapes[x], name)

    def relu6(self, x: str, name: str = "relu6") -> str:
        lo = self.const(name + ".min", np.array(0.0, np.float32))
        hi = self.const(name + ".max", np.array(6.0, np.float32))
        return self.node("Clip", [x, lo, hi], self.shapes[x], name)

    def sigmoid(self, x: str, name: str = "sigmoid") -> str:
        return self.node("Sigmoid", [x], self.shapes[x], name)

    def tanh(self, x: str, name: str = "tanh") -> str:
        return self.node("Tanh", [x], self.shapes[x], name)

    def silu(self, x: str, name: str = "silu") -> str:
        # torch exports nn.SiLU as Sigmoid + Mul; TensorRT fuses the pair into the producer
        s = self.sigmoid(x, name + ".sigmoid")
        return self.node("Mul", [x, s], self.shapes[x], name)

    def add(self, a: str, b: str, name: str = "add") -> str:
        return self.node("Add", [a, b], _broadcast(self.shapes[a], self.shapes[b]), name)

    def sub(self, a: str, b: str, name: str = "sub") -> str:
        return self.node("Sub", [a, b], _broadcast(self.shapes[a], self.shapes[b]), name)

    def mul(self, a: str, b: str, name: str = "mul") -> str:
        return self.node("Mul", [a, b], _broadcast(self.shapes[a], self.shapes[b]), name)

    def div(self, a: str, b: str, name: str = "div") -> str:
        return self.node("Div", [a, b], _broadcast(self.shapes[a], self.shapes[b]), name)

    def maxpool(self, x: str, k: int, stride: int, pad: int = 0, ceil: bool = False,
                name: str = "maxpool") -> str:
        c, h, w = self.shapes[x]
        out = (c, conv_out(h, k, stride, pad, ceil=ceil), conv_out(w, k, stride, pad, ceil=ceil))
        return self.node("MaxPool", [x], out, name, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4, ceil_mode=int(ceil))

    def avgpool(self, x: str, k: int, stride: int, pad: int = 0, name: str = "avgpool") -> str:
        c, h, w = self.shapes[x]
        out = (c, conv_out(h, k, stride, pad), conv_out(w, k, stride, pad))
        return self.node("AveragePool", [x], out, name, kernel_shape=[k, k], strides=[stride, stride],
                         pads=[pad] * 4)

    def global_avgpool(self, x: str, name: str = "avgpool") -> str:
        c = self.shapes[x][0]
        return self.node("GlobalAveragePool", [x], (c, 1, 1), name)

    def adaptive_avgpool(self, x: str, out: int, name: str = "avgpool") -> str:
        """torch's AdaptiveAvgPool2d exactly: a plain AveragePool when the size divides, else
        averaging matrices (the bins of adaptive pooling overlap and differ in size)."""
        c, h, w = self.shapes[x]
        if (h, w) == (out, out):
            return x  # identity at the default resolution, as in a torch export
        if h % out == 0 and w % out == 0 and h // out == w // out:
            return self.avgpool(x, h // out, h // out, name=name)
        # Constant nodes, not initializers: fixed averaging weights are not parameters
        ph = self.const_node(name + ".rows", _adaptive_matrix(h, out))
        pw = self.const_node(name + ".cols", _adaptive_matrix(w, out).T.copy())
        y = self.node("MatMul", [x, pw], (c, h, out), name + ".w")
        return self.node("MatMul", [ph, y], (c, out, out), name + ".h")

    def flatten(self, x: str, name: str = "flatten") -> str:
        return self.node("Flatten", [x], (int(np.prod(self.shapes[x])),), name, axis=1)

    def linear(self, x: str, nout: int, name: str = "fc") -> str:
        nin = self.shapes[x][0]
        w = self.weight(name + ".weight", (nout, nin), "normal", nin)
        b = self.weight(name + ".bias", (nout,), "zeros")
        return self.node("Gemm", [x, w, b], (nout,), name, transB=1)

    def concat(self, xs: List[str], axis: int = 1, name: str = "concat") -> str:
        shapes = [self.shapes[x] for x in xs]
        out = list(shapes[0])
        out[axis - 1] = sum(s[axis - 1] for s in shapes)
        return self.node("Concat", xs, tuple(out), name, axis=axis)

    def split(self, x: str, sizes: List[int], axis: int = 1, name: str = "split") -> List[str]:
        s = self.const(name + ".split", np.array(sizes, np.int64))
        base = self.shapes[x]
        shapes = []
        for n in sizes:
            sh = list(base)
            sh[axis - 1] = n
            shapes.append(tuple(sh))
        return self.node("Split", [x, s], (), name, n_out=len(sizes), out_shapes=shapes, axis=axis)

    def reshape(self, x: str, shape: Shape, name: str = "reshape") -> str:
        """Reshape keeping the (dynamic) batch dimension: ``shape`` excludes it."""
        s = self.const(name + ".shape", np.array((0,) + tuple(shape), np.int64))
        return self.node("Reshape", [x, s], tuple(shape), name)

    def transpose(self, x: str, perm: Sequence[int], name: str = "transpose") -> str:
        """``perm`` over the full tensor, batch included; the batch axis must stay first."""
        shp = (None,) + self.shapes[x]
        out = tuple(shp[p] for p in perm)[1:]
        return self.node("Transpose", [x], out, name, perm=list(perm))

    def softmax(self, x: str, axis: int, name: str = "softmax") -> str:
        return self.node("Softmax", [x], self.shapes[x], name, axis=axis)

    def upsample_nearest(self, x: str, factor: int, name: str = "upsample") -> str:
        c, h, w = self.shapes[x]
        roi = self.const(name + ".roi", np.array([], np.float32))
        scales = self.const(name + ".scales", np.array([1, 1, factor, factor], np.float32))
        return self.node("Resize", [x, roi, scales], (c, h * factor, w * factor), name,
                         mode="nearest", coordinate_transformation_mode="asymmetric",
                         nearest_mode="floor")

    def resize_bilinear(self, x: str, size: Tuple[int, int], name: str = "resize") -> str:
        """F.interpolate(size=..., mode="bilinear", align_corners=False), as torch exports it:
        the target size is assembled from the input's runtime batch and channels."""
        c = self.shapes[x][0]
        shp = self.node("Shape", [x], (4,), name + ".shape")
        starts = self.const(name + ".starts", np.array([0], np.int64))
        ends = self.const(name + ".ends", np.array([2], np.int64))
        nc = self.node("Slice", [shp, starts, ends], (2,), name + ".nc")
        hw = self.const(name + ".hw", np.array(size, np.int64))
        sizes = self.node("Concat", [nc, hw], (4,), name + ".sizes", axis=0)
        roi = self.const(name + ".roi", np.array([], np.float32))
        scales = self.const(name + ".scales", np.array([], np.float32))
        return self.node("Resize", [x, roi, scales, sizes], (c,) + tuple(size), name, mode="linear",
                         coordinate_transformation_mode="pytorch_half_pixel")

    # --- output -------------------------------------------------------------------------------

    def output(self, x: str) -> None:
        self.outputs.append(x)

    def model(self):
        from onnx import TensorProto, helper

        batch = self.batch if self.batch is not None else BATCH_DIM
        inp = helper.make_tensor_value_info(self.input, TensorProto.FLOAT,
                                            [batch] + list(self.shapes[self.input]))
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, [batch] + list(self.shapes[o]))
                for o in self.outputs]
        graph = helper.make_graph(self.nodes, self.name, [inp], outs, initializer=self.inits)
        model = helper.make_model(graph, producer_name="pytest-jetson",
                                  opset_imports=[helper.make_opsetid("", OPSET)])
        model.ir_version = IR_VERSION
        if self.structure:
            entry = model.metadata_props.add()
            entry.key = STRUCTURE_ONLY_KEY
            entry.value = "1"
        entry = model.metadata_props.add()
        entry.key = "pytest_jetson.params"
        entry.value = str(self.params)
        return model


def _broadcast(a: Shape, b: Shape) -> Shape:
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    return tuple(max(x, y) for x, y in zip(a, b))


def _adaptive_matrix(size: int, out: int) -> np.ndarray:
    """Rows average torch's adaptive-pool bins: [floor(i*size/out), ceil((i+1)*size/out))."""
    m = np.zeros((out, size), np.float32)
    for i in range(out):
        lo = (i * size) // out
        hi = -(-((i + 1) * size) // out)
        m[i, lo:hi] = 1.0 / (hi - lo)
    return m
