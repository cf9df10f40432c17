"""Per-layer MACs, FLOPs, parameters and bytes of any ONNX graph.

``analyze`` never reads weight bytes: it copies the graph with every large initializer reduced to
its dims (external data is never loaded), substitutes the batch size, runs ONNX shape inference
and applies the per-op rules of :mod:`pytest_jetson.models.ops`. ``GraphStats.kernels()`` groups
layers the way TensorRT fuses them (Conv + BatchNorm + activation + residual Add), which is the
unit the simulated device times.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from ..errors import ModelError
from . import ops

# Constants up to this many elements keep their bytes in the analysis copy: shape inference must
# read Reshape targets, Split sizes and Resize scales; weights are far larger.
_SMALL_CONSTANT = 64
# Build-time ops that hand a weight on unchanged in meaning (QDQ int8 exports, fp16 casts).
_WEIGHT_PASS = {"DequantizeLinear", "Cast", "Identity", "Reshape", "Transpose", "Squeeze", "Unsqueeze",
                "Flatten"}

Shape = Tuple[int, ...]


@dataclass
class LayerStats:
    """One ONNX node. Element counts are per tensor element; bytes use each tensor's own dtype."""

    name: str
    op_type: str
    macs: int = 0
    flops: int = 0
    params: int = 0
    weight_elems: int = 0
    weight_bytes: int = 0
    input_elems: int = 0  # activations read (constants excluded)
    output_elems: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    kind: str = "other"
    out_channels: int = 0
    spatial: int = 1
    groups: int = 1
    kernel_size: int = 1  # kernel window elements (kh x kw) of a Conv or pool
    stride: int = 1  # largest stride of a Conv or pool
    in_channels: int = 0  # channels of the first input
    free: bool = False  # no kernel in TensorRT: a view (Reshape, Flatten) or build-time constant
    known: bool = True
    bias: bool = False  # Conv/Gemm with a bias input
    #: an LSTM, GRU or RNN: (steps, batch, directions, gates x hidden, input size, hidden size)
    recurrent: Tuple[int, ...] = ()
    inputs: List[str] = field(default_factory=list, repr=False)  # activation tensor names
    outputs: List[str] = field(default_factory=list, repr=False)


@dataclass
class KernelStats:
    """Layers TensorRT runs as one kernel. ``input_elems``: activations read from DRAM (the first
    layer's inputs plus a fused residual); ``output_elems``: the last layer's output."""

    name: str
    op_type: str
    kind: str
    macs: int
    flops: int
    weight_elems: int
    input_elems: int
    output_elems: int
    layers: List[str]
    out_channels: int = 0
    spatial: int = 1
    groups: int = 1
    params: int = 0
    kernel_size: int = 1
    stride: int = 1
    in_channels: int = 0
    _inputs: List[str] = field(default_factory=list, repr=False, compare=False)
    _outputs: List[str] = field(default_factory=list, repr=False, compare=False)

    @property
    def inputs(self) -> List[str]:
        """Activation tensors the kernel reads (names in the graph)."""
        return list(self._inputs)

    @property
    def outputs(self) -> List[str]:
        return list(self._outputs)


@dataclass
class GraphStats:
    """A graph analysed at one batch size. ``macs``/``flops``/activation counts are totals for the
    whole batch; ``params`` and weights do not depend on it. ``params`` counts trainable
    parameters as torch does (BatchNorm running statistics and fixed constants are not)."""

    name: str
    batch: int
    params: int
    macs: int
    flops: int
    layers: List[LayerStats]
    unknown_ops: List[str]
    input_shape: Shape
    output_shapes: List[Shape]
    weight_elems: int = 0
    weight_bytes: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    #: operators ONNX could not infer the output of, taken as keeping their input's shape
    assumed_shapes: List[str] = field(default_factory=list)
    _skeleton: object = field(default=None, repr=False, compare=False)
    _kernels: List[KernelStats] | None = field(default=None, repr=False, compare=False)
    _tensor_elems: Dict[str, int] = field(default_factory=dict, repr=False, compare=False)
    _graph_outputs: Tuple[str, ...] = field(default=(), repr=False, compare=False)
    _inputs: Tuple[str, ...] = field(default=(), repr=False, compare=False)
    _peak: int | None = field(default=None, repr=False, compare=False)
    _input_shapes: Dict[str, Shape] | None = field(default=None, repr=False, compare=False)

    @property
    def peak_activation_elems(self) -> int:
        """Largest set of activations alive at once (network input included) when the fused
        kernels run in order: what an engine holds besides its weights, per batch."""
        if self._peak is None:
            self._peak = _peak_live(self.kernels(), self.layers, self._tensor_elems, list(self._inputs),
                                    set(self._graph_outputs))
        return self._peak

    @property
    def gmacs(self) -> float:
        return self.macs / 1e9

    def tensor_elems(self, name: str) -> int:
        """Elements of an activation tensor (whole batch); 0 when its shape is unknown."""
        return int(self._tensor_elems.get(name, 0))

    @property
    def graph_outputs(self) -> Tuple[str, ...]:
        return tuple(self._graph_outputs)

    def kernels(self) -> List[KernelStats]:
        if self._kernels is None:
            self._kernels = _fuse(self.layers, self._tensor_elems, set(self._graph_outputs))
        return self._kernels

    def to_batch(self, batch: int) -> GraphStats:
        """The same graph analysed at another batch size (MACs and activations scale, weights not)."""
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise ModelError(f"{self.name}: batch {batch!r} must be a positive int")
        if batch == self.batch:
            return self
        return _analyze_skeleton(self._skeleton, batch, self.name, self._input_shapes)


def analyze(path_or_model, batch: int = 1, input_shapes=None) -> GraphStats:
    """Analyse an ONNX file (path), an ``onnx.ModelProto`` or a zoo model's name at ``batch``.

    ``input_shapes`` sizes the inputs' dynamic dimensions besides the batch (a height and width
    exported as dynamic): a mapping of input name to shape, or one shape for every input; a shape
    is given with or without the batch dimension. Raises
    :class:`~pytest_jetson.errors.ModelError` for a file that is not ONNX or is truncated, for an
    input with a dynamic dimension besides the batch that ``input_shapes`` does not size, and for a
    given shape that contradicts the graph.
    """
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise ModelError(f"batch {batch!r} must be a positive int")
    model, where = _load(path_or_model)
    skeleton = _skeleton(model, where)
    return _analyze_skeleton(skeleton, batch, model.graph.name or where, _normal_shapes(input_shapes))


def input_dims(path_or_model) -> Dict[str, Tuple[int | str | None, ...]]:
    """The graph's inputs (initializers excluded) and their dims: an int where fixed, the
    dimension's name (or None) where dynamic."""
    model, _where = _load(path_or_model)
    g = model.graph
    inits = {t.name for t in g.initializer}
    return {vi.name: tuple(d if not isinstance(d, int) or d > 0 else None for d in (_dims(vi.type) or ()))
            for vi in g.input if vi.name not in inits}


def _normal_shapes(input_shapes) -> Dict[str, Shape] | Shape | None:
    if input_shapes is None:
        return None
    if isinstance(input_shapes, dict):
        return {str(k): tuple(int(d) for d in v) for k, v in input_shapes.items()}
    return tuple(int(d) for d in input_shapes)


# --- loading ----------------------------------------------------------------------------------


def _load(obj):
    import onnx

    if isinstance(obj, onnx.ModelProto):
        _check_model(obj, f"model {obj.graph.name or '<unnamed>'!r}")
        return obj, obj.graph.name or "<model>"
    if isinstance(obj, (bytes, bytearray)):
        where = "<bytes>"
        data = bytes(obj)
    elif isinstance(obj, (str, os.PathLike)):
        where = os.fspath(obj)
        if not os.path.isfile(where):
            # zoo names resolve in models.zoo (zoo.stats), which builds on this module
            raise ModelError(f"ONNX file {where} does not exist: pass an existing .onnx path, or "
                             f"analyse a zoo model with pytest_jetson.models.zoo.stats(name)")
        try:
            with open(where, "rb") as f:
                data = f.read()
        except OSError as exc:
            raise ModelError(f"cannot read ONNX file {where}: {exc}") from None
    else:
        raise ModelError(f"cannot analyse {obj!r}: pass an .onnx path or an onnx.ModelProto")
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # protobuf raises DecodeError or RuntimeWarning-ish errors by version
        raise ModelError(f"{where} is not a valid ONNX file ({exc.__class__.__name__}): it may be "
                         "truncated or another format; re-export it") from None
    _check_model(model, where)
    return model, where


def _check_model(model, where: str) -> None:
    """Catch files that happen to parse as protobuf but are not (complete) ONNX models."""
    g = model.graph
    if model.ir_version <= 0 or not model.opset_import or not g.node or not g.output:
        raise ModelError(f"{where} is not a complete ONNX model (no graph, opset or outputs): it may be "
                         "truncated or another format; re-export it")
    known = {i.name for i in g.input} | {t.name for t in g.initializer} | {""}
    for node in g.node:
        for name in node.input:
            if name not in known:
                raise ModelError(f"{where}: node {node.name or node.op_type!r} reads {name!r}, which "
                                 "nothing produces: the file is truncated or corrupt; re-export it")
        known.update(node.output)
    for o in g.output:
        if o.name not in known:
            raise ModelError(f"{where}: graph output {o.name!r} is never produced: the file is "
                             "truncated or corrupt; re-export it")


def _skeleton(model, where: str):
    """A copy of the graph with large initializers reduced to dims (no weight bytes)."""
    import onnx
    from onnx import TensorProto

    sk = onnx.ModelProto()
    sk.ir_version = model.ir_version
    sk.opset_import.extend(model.opset_import)
    g = sk.graph
    g.name = model.graph.name
    for node in model.graph.node:
        copy = g.node.add()
        copy.CopyFrom(node)
        if node.op_type == "Constant":
            for a in copy.attribute:
                if a.name == "value" and _numel(a.t.dims) > _SMALL_CONSTANT:
                    _strip(a.t)  # old exporters put weights in Constant nodes
    g.input.extend(model.graph.input)
    g.output.extend(model.graph.output)
    for o in g.output:
        # re-inferred at the requested batch
        o.type.tensor_type.ClearField("shape")
    for t in model.graph.initializer:
        if _numel(t.dims) <= _SMALL_CONSTANT and t.data_location != TensorProto.EXTERNAL:
            g.initializer.add().CopyFrom(t)
            continue
        s = g.initializer.add()
        s.name = t.name
        s.data_type = t.data_type
        s.dims.extend(t.dims)
        _strip(s)
    sk.doc_string = where
    if model.functions:
        # torch's dynamo exporter wraps modules in model-local functions; count what they contain
        sk.functions.extend(model.functions)
        try:
            from onnx import inliner

            sk = inliner.inline_local_functions(sk)
            sk.doc_string = where
        except Exception:  # older onnx: the calls stay opaque and are listed as unknown ops
            pass
    return sk


def _numel(dims) -> int:
    n = 1
    for d in dims:
        n *= int(d)
    return n


def _strip(t) -> None:
    """Keep a tensor's name, type and dims; mark its data as external at a place that does not
    exist, so shape inference sees the shape and nothing can read the bytes."""
    from onnx import TensorProto

    for f in ("raw_data", "float_data", "int32_data", "int64_data", "double_data", "uint64_data",
              "string_data"):
        t.ClearField(f)
    del t.external_data[:]
    t.data_location = TensorProto.EXTERNAL
    e = t.external_data.add()
    e.key, e.value = "location", "__pytest_jetson_structure_only__"


def _dims(type_proto) -> List | None:
    tt = type_proto.tensor_type
    if not tt.HasField("shape"):
        return None
    return [d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in tt.shape.dim]


# --- analysis ---------------------------------------------------------------------------------


def _analyze_skeleton(sk, batch: int, name: str, input_shapes=None) -> GraphStats:
    import onnx

    where = sk.doc_string or name
    model = onnx.ModelProto()
    model.CopyFrom(sk)
    init_names = {t.name for t in model.graph.initializer}
    input_shape = _set_batch(model.graph, init_names, batch, where, input_shapes)
    inferred = _infer(model, where)
    assumed: List[str] = []
    # An operator ONNX cannot infer (a custom op, a plugin) leaves its output and everything after
    # it unsized, which would cost the rest of the network nothing: take it as keeping its input's
    # shape (what activation-like plugins do) and infer again, until nothing more is learnt.
    for _ in range(len(model.graph.node)):
        if not _assume_unknown_shapes(inferred.graph, model.graph, assumed):
            break
        inferred = _infer(model, where)
    g = inferred.graph
    tensors = _Tensors(g, init_names)
    layers: List[LayerStats] = []
    unknown = set()
    for idx, node in enumerate(g.node):
        if not _is_known(node):
            unknown.add(node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}.{node.op_type}")
        layers.append(_layer(node, idx, tensors))

    return GraphStats(
        name=name, batch=batch, layers=layers, unknown_ops=sorted(unknown), input_shape=input_shape,
        assumed_shapes=assumed,
        output_shapes=[_output_shape(o, tensors) for o in g.output],
        **{total: sum(getattr(x, total) for x in layers) for total in _TOTALS},
        _inputs=tuple(i.name for i in g.input if i.name not in init_names),
        _skeleton=sk, _tensor_elems={n: _prod(s) for n, s in tensors.shapes.items()},
        _graph_outputs=tuple(o.name for o in g.output), _input_shapes=input_shapes)


def _infer(model, where: str):
    import onnx

    try:
        return onnx.shape_inference.infer_shapes(model, check_type=False, strict_mode=False, data_prop=True)
    except Exception as exc:
        raise ModelError(f"{where}: shape inference failed ({exc}): the graph is inconsistent; re-export it") from None


def _assume_unknown_shapes(inferred, g, assumed: List[str]) -> bool:
    """Declare in ``g`` the outputs of operators ONNX cannot infer as shaped like their first
    sized input; the operators so sized are appended to ``assumed``. False when none was."""
    known = {}
    for vi in list(inferred.input) + list(inferred.value_info) + list(inferred.output):
        dims = _dims(vi.type)
        if dims and all(isinstance(d, int) and d > 0 for d in dims):
            known[vi.name] = vi
    declared = {vi.name for vi in g.value_info}
    added = False
    for node in inferred.node:
        if _is_known(node):
            continue
        source = next((known[n] for n in node.input if n in known), None)
        if source is None:
            continue
        for out in node.output:
            if out and out not in known and out not in declared:
                vi = g.value_info.add()
                vi.CopyFrom(source)
                vi.name = out
                added = True
                label = f"{node.name or out} ({node.op_type})"
                if label not in assumed:
                    assumed.append(label)
    return added


# GraphStats fields that are the sum of the same LayerStats field
_TOTALS = ("params", "macs", "flops", "weight_elems", "weight_bytes", "bytes_read", "bytes_written")


def _output_shape(o, tensors: _Tensors) -> Shape:
    s = tensors.shapes.get(o.name)
    return s if s is not None else tuple(_dims(o.type) or ())


def _set_batch(g, init_names: set, batch: int, where: str, input_shapes=None) -> Shape:
    """Fix every graph input's batch axis at ``batch`` (and its other dynamic dimensions at
    ``input_shapes``); the first input's shape."""
    input_shape: Shape = ()
    for vi in g.input:
        if vi.name in init_names:
            continue
        given = input_shapes.get(vi.name) if isinstance(input_shapes, dict) else input_shapes
        shape = _batched_input(vi, batch, where, given)
        if not input_shape:
            input_shape = tuple(int(x.dim_value) for x in shape.dim)
    return input_shape


def _batched_input(vi, batch: int, where: str, given: Shape | None = None):
    dims = _dims(vi.type)
    if dims is None:
        raise ModelError(f"{where}: input {vi.name!r} has no shape: export it with a static shape (dynamic batch "
                         "only)")
    if given is not None:
        if len(given) == len(dims) - 1:
            given = (batch,) + tuple(given)
        if len(given) != len(dims):
            raise ModelError(f"{where}: the shape {tuple(given)} given for input {vi.name!r} has {len(given)} "
                             f"dimensions, the input has {len(dims)} ({_shown(dims)})")
    shape = vi.type.tensor_type.shape
    missing = []
    for axis, d in enumerate(dims):
        if isinstance(d, int) and d > 0:
            if axis == 0 and d != batch:
                raise ModelError(f"{where}: input {vi.name!r} has a fixed batch of {d}, not {batch}: export it with a dynamic batch axis or use batch={d}")
            if axis and given is not None and given[axis] != d:
                raise ModelError(f"{where}: the shape {tuple(given)} given for input {vi.name!r} sets dimension "
                                 f"{axis} to {given[axis]}; the graph fixes it at {d} ({_shown(dims)})")
            continue
        if axis == 0:
            size = batch
        elif given is not None and given[axis] > 0:
            size = int(given[axis])
        else:
            missing.append(axis)
            continue
        shape.dim[axis].Clear()
        shape.dim[axis].dim_value = size
    if missing:
        raise ModelError(f"{where}: input {vi.name!r} has dynamic dimension(s) {', '.join(map(str, missing))} "
                         f"besides the batch ({_shown(dims)}); give its size: {dynamic_fix(dims)}")
    return shape


def dynamic_fix(dims, shape_arg: str = "input_shape=", resolution_arg: str = "resolution=") -> str:
    """How to size an input's dynamic dimensions: its shape without the batch (the fixed ones
    filled in), or, for an image whose height and width alone are dynamic, its resolution."""
    rank = len(dims)
    names = ["H" if a == rank - 2 and rank == 4 else "W" if a == rank - 1 and rank == 4 else f"D{a}"
             for a in range(rank)]
    shape = tuple(str(d) if isinstance(d, int) and d > 0 else names[a] for a, d in enumerate(dims))[1:]
    example = "(" + ", ".join(shape) + ("," if len(shape) == 1 else "") + ")"
    text = f"{shape_arg}{example} without the batch, or a dict by input name"
    image = rank == 4 and isinstance(dims[1], int) and dims[1] > 0
    if image and resolution_arg:
        text += f"; or {resolution_arg}(H, W) (an int for a square)"
    return text


def _shown(dims) -> str:
    # Paddle2ONNX writes a dynamic dimension as -1: shown as unnamed
    return "x".join(str(d) if isinstance(d, int) and d > 0 else (d if isinstance(d, str) and d else "?")
                    for d in dims)


class _Tensors:
    """Shapes and dtypes of an inferred graph's tensors, and which of them are known when the
    engine is built: ``static`` (constants and shape arithmetic), ``param_source`` (initializers
    and what casts or dequantizes them)."""

    def __init__(self, g, init_names: set) -> None:
        import onnx

        self.shapes: Dict[str, Shape | None] = {}
        self.dtypes: Dict[str, int] = {}
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            self._note(vi)
        for t in g.initializer:
            self.shapes[t.name] = tuple(int(d) for d in t.dims)
            self.dtypes[t.name] = t.data_type
        self.static = {t.name for t in g.initializer}
        self.param_source = set(init_names)
        consts: List[str] = []
        for node in g.node:
            if node.op_type != "Constant":
                continue
            for a in node.attribute:
                if a.name == "value" and a.type == onnx.AttributeProto.TENSOR:
                    self.shapes[node.output[0]] = tuple(int(d) for d in a.t.dims)
                    self.dtypes[node.output[0]] = a.t.data_type
                    consts.append(node.output[0])
        # An exporter holds its weights either in initializers (torch: Constant nodes are then
        # tensors computed in forward, not parameters) or, older ones, all in Constant nodes.
        if not any(n in init_names for node in g.node for pos, n in enumerate(node.input)
                   if pos in ops.PARAM_INPUTS.get(node.op_type, ())):
            self.param_source.update(consts)

    def _note(self, vi) -> None:
        dims = _dims(vi.type)
        self.dtypes[vi.name] = vi.type.tensor_type.elem_type
        if dims is not None and all(isinstance(d, int) and d > 0 for d in dims):
            self.shapes[vi.name] = tuple(int(d) for d in dims)
        elif dims == []:
            self.shapes[vi.name] = ()

    def elems(self, name: str) -> int:
        return _prod(self.shapes.get(name))

    def nbytes(self, name: str) -> int:
        return self.elems(name) * _itemsize(self.dtypes.get(name))

    def follow(self, node) -> bool:
        """Whether ``node`` runs at build time; records what it makes static (and a weight that
        a quantize or cast hands on as the same parameter)."""
        op = node.op_type
        is_static = op in ("Constant", "Shape", "Size") or all(n in self.static for n in node.input if n)
        if is_static:
            self.static.update(node.output)
            if op in _WEIGHT_PASS and node.input and node.input[0] in self.param_source:
                self.param_source.update(node.output)
        return is_static


def _is_known(node) -> bool:
    return node.op_type in ops.KNOWN_OPS and node.domain in ("", "ai.onnx")


def _layer(node, idx: int, tensors: _Tensors) -> LayerStats:
    from onnx import helper

    op = node.op_type
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    in_shapes = [tensors.shapes.get(n) if n else None for n in node.input]
    out_shapes = [tensors.shapes.get(n) for n in node.output]
    known = _is_known(node)
    is_static = tensors.follow(node)
    mac = ops.macs(op, attrs, in_shapes, out_shapes) if known else 0
    layer = LayerStats(name=node.name or f"{op}_{idx}", op_type=op, macs=mac,
                       flops=ops.flops(op, attrs, in_shapes, out_shapes, mac) if known else 0,
                       known=known)
    if not is_static:  # build-time nodes: their consumers account for what they produce
        _count_inputs(layer, node, tensors)
    for n in node.output:
        if n:
            layer.output_elems += tensors.elems(n)
            layer.bytes_written += tensors.nbytes(n)
            layer.outputs.append(n)
    _set_geometry(layer, node, attrs, in_shapes, out_shapes)
    if op in ops.RECURRENT_GATES and known:
        layer.recurrent = _recurrent_geometry(attrs, in_shapes)
    # Q/DQ pairs fold into the int8 kernels next to them when TensorRT builds the engine
    layer.free = op in ops.VIEW_OPS or op in ops.QDQ_OPS or is_static
    return layer


def _count_inputs(layer: LayerStats, node, tensors: _Tensors) -> None:
    """Split a node's inputs into weights (static tensors) and activations read."""
    param_slots = ops.PARAM_INPUTS.get(node.op_type, ())
    for pos, n in enumerate(node.input):
        if not n:
            continue
        elems = tensors.elems(n)
        size = tensors.nbytes(n)
        if n not in tensors.static:
            layer.input_elems += elems
            layer.bytes_read += size
            layer.inputs.append(n)
            continue
        if pos in param_slots and n in tensors.param_source:
            layer.params += elems
        if _is_float(tensors.dtypes.get(n)) or pos in param_slots:
            layer.weight_elems += elems
            layer.weight_bytes += size


def _set_geometry(layer: LayerStats, node, attrs: dict, in_shapes: list, out_shapes: list) -> None:
    """Channels, spatial size, groups, kernel window, stride and bias: what the cost model and
    the fusion rules read besides the counts."""
    op = node.op_type
    out = out_shapes[0] if out_shapes else None
    if out is not None and len(out) >= 2:
        layer.out_channels = int(out[1])
        layer.spatial = _prod(out[2:])
    layer.groups = int(attrs.get("group", 1))
    ks = attrs.get("kernel_shape")
    if ks:
        layer.kernel_size = int(_prod(ks))
    elif op in ("Conv", "ConvTranspose") and len(in_shapes) > 1 and in_shapes[1] is not None:
        layer.kernel_size = int(_prod(in_shapes[1][2:]))
    layer.stride = int(max(attrs.get("strides", [1]) or [1]))
    bias_at = ops.BIAS_INPUT.get(op)
    layer.bias = bias_at is not None and len(node.input) > bias_at and bool(node.input[bias_at])
    x = in_shapes[0] if in_shapes else None
    layer.in_channels = int(x[1]) if x is not None and len(x) > 1 else 0
    layer.kind = ops.kind(op, layer.groups, int(x[1]) if x is not None and len(x) > 1 else None)


def _recurrent_geometry(attrs: dict, in_shapes: list) -> Tuple[int, ...]:
    x, w, r = (in_shapes + [None, None, None])[:3]
    if x is None or w is None or r is None or len(x) != 3 or len(w) != 3 or len(r) != 3:
        return ()
    steps, batch = (x[1], x[0]) if attrs.get("layout", 0) else (x[0], x[1])
    return int(steps), int(batch), int(w[0]), int(w[1]), int(w[2]), int(r[2])


def _peak_live(kernels: List[KernelStats], layers: List[LayerStats], elems: Dict[str, int],
               inputs: List[str], outputs: set) -> int:
    """Peak of the activations alive at once when the fused kernels run in file order; views
    (Reshape, Flatten) alias their input instead of allocating."""
    alias: Dict[str, str] = {}

    def root(n: str) -> str:
        while n in alias:
            n = alias[n]
        return n

    for layer in layers:
        if layer.free and len(layer.inputs) == 1:
            for o in layer.outputs:
                alias[o] = layer.inputs[0]
    uses: Dict[str, int] = {}
    for k in kernels:
        for n in set(root(t) for t in k._inputs):
            uses[n] = uses.get(n, 0) + 1
    for n in outputs:
        uses[root(n)] = uses.get(root(n), 0) + 1
    live = {n: elems.get(n, 0) for n in inputs}
    peak = sum(live.values())
    for k in kernels:
        for o in k._outputs:
            live[o] = elems.get(o, 0)
        peak = max(peak, sum(live.values()))
        for n in set(root(t) for t in k._inputs):
            uses[n] = uses.get(n, 0) - 1
            if uses[n] <= 0:
                live.pop(n, None)
    return peak


def _prod(shape) -> int:
    if shape is None:
        return 0
    p = 1
    for d in shape:
        p *= int(d)
    return p


_ITEMSIZE = {1: 4, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 10: 2, 11: 8, 12: 4, 13: 8, 16: 2}


def _itemsize(dtype: int | None) -> int:
    return _ITEMSIZE.get(dtype or 1, 4)


def _is_float(dtype: int | None) -> bool:
    return dtype in (1, 10, 11, 16) or dtype is None


# --- TensorRT-style fusion --------------------------------------------------------------------


def _folded_weights(group: List[LayerStats]) -> int:
    """Weights the fused kernel reads: a BatchNorm after a Conv/Gemm folds into its weights and
    one bias per output channel, as TensorRT does when it builds the engine."""
    head = group[0]
    if head.op_type not in ops.HEAD_OPS or not any(x.op_type == "BatchNormalization" for x in group):
        return sum(x.weight_elems for x in group)
    rest = sum(x.weight_elems for x in group[1:] if x.op_type != "BatchNormalization")
    return head.weight_elems + (0 if head.bias else head.out_channels) + rest


def _fuse(layers: List[LayerStats], elems: Dict[str, int], graph_outputs: set) -> List[KernelStats]:
    chains = _Chains(layers, graph_outputs)
    kernels: List[KernelStats] = []
    order: List[int] = []
    for i, head in enumerate(layers):
        if chains.taken[i] or head.free:
            continue
        chains.taken[i] = True
        if head.recurrent:
            steps = _recurrent_kernels(head, elems)
            order.extend([chains.index[id(head)]] * len(steps))
            kernels.extend(steps)
            continue
        group, shortcuts = [head], []
        if head.op_type in ops.HEAD_OPS or head.kind == "elementwise":
            group, shortcuts = chains.grow(head)
        order.append(max(chains.index[id(x)] for x in group))
        kernels.append(_kernel(group, shortcuts, elems))
    # a kernel runs when its last fused layer can: a residual Add waits for the shortcut branch
    return [k for _, k in sorted(zip(order, kernels), key=lambda p: p[0])]


def _kernel(group: List[LayerStats], shortcuts: List[str], elems: Dict[str, int]) -> KernelStats:
    head, last = group[0], group[-1]
    residual = 0
    for t in shortcuts:
        residual += elems.get(t, 0)
    return KernelStats(
        name=head.name, op_type=head.op_type, kind=head.kind,
        macs=sum(x.macs for x in group), flops=sum(x.flops for x in group),
        weight_elems=_folded_weights(group),
        input_elems=head.input_elems + residual, output_elems=last.output_elems,
        layers=[x.name for x in group], out_channels=head.out_channels or last.out_channels,
        spatial=head.spatial, groups=head.groups, params=sum(x.params for x in group),
        kernel_size=head.kernel_size, stride=head.stride, in_channels=head.in_channels,
        _inputs=list(head.inputs) + shortcuts, _outputs=list(last.outputs))


def _recurrent_kernels(layer: LayerStats, elems: Dict[str, int]) -> List[KernelStats]:
    """An LSTM, GRU or RNN as TensorRT runs it: one GEMM of every step's input by W, then a loop
    whose every step multiplies the previous hidden state by R and updates the cell in its
    epilogue. The steps depend on each other, so each is a kernel of its own: a long sequence is
    many small, latency-bound GEMMs, not one large one."""
    steps, batch, dirs, width, n_in, hidden = layer.recurrent
    rows = batch * dirs  # the directions run side by side: one batched GEMM per step
    r_elems = min(layer.weight_elems, dirs * width * hidden)
    name = layer.name
    gates = [f"{name}.gates.{t}" for t in range(steps)]
    for g in gates:
        elems[g] = rows * width
    proj_macs = steps * rows * width * n_in
    step_macs = rows * width * hidden
    pointwise = (layer.flops - 2 * layer.macs) // max(1, steps)
    out = [KernelStats(
        name=name + ".input", op_type=layer.op_type, kind="gemm", macs=proj_macs, flops=2 * proj_macs,
        weight_elems=layer.weight_elems - r_elems, input_elems=layer.input_elems,
        output_elems=steps * rows * width, layers=[name], out_channels=width, params=layer.params,
        in_channels=n_in, _inputs=list(layer.inputs), _outputs=gates)]
    state: List[str] = []
    for t in range(steps):
        last = t == steps - 1
        h = list(layer.outputs) if last else [f"{name}.h.{t}"]
        if not last:
            elems[h[0]] = rows * hidden
        out.append(KernelStats(
            name=f"{name}.step.{t}", op_type=layer.op_type, kind="gemm", macs=step_macs,
            flops=2 * step_macs + pointwise, weight_elems=r_elems,
            input_elems=rows * (width + hidden), output_elems=rows * width, layers=[name],
            out_channels=width, in_channels=hidden, _inputs=[gates[t]] + state, _outputs=h))
        state = h[:1]
    return out


def _stage(n: LayerStats, stage: Dict[str, bool]) -> str | None:
    """What ``n`` adds to a kernel that has fused the stages in ``stage`` so far: "bn", "act",
    "add" (a residual), "post" (an activation after the residual), "" (a bias or scale by a
    constant), or None when ``n`` starts a kernel of its own. The order is TensorRT's:
    Conv -> BatchNorm -> activation -> residual Add -> activation."""
    op, single = n.op_type, len(n.inputs) == 1
    if op == "BatchNormalization" and not any(stage.values()):
        return "bn"
    if op in ops.ACTIVATIONS and single and not stage["post"]:
        return "post" if stage["add"] else "act"
    if op in ("Add", "Sub", "Mul", "Div", "Sum") and single:
        return ""
    # exporters write a residual as Add or as the variadic Sum of two (Caffe2, older MXNet)
    if op in ("Add", "Sum") and len(n.inputs) == 2 and not stage["add"]:
        return "add"
    return None


class _Chains:
    """Which layer reads each tensor, and which layers a kernel has already taken."""

    def __init__(self, layers: List[LayerStats], graph_outputs: set) -> None:
        self.layers = layers
        self.graph_outputs = graph_outputs
        self.consumers: Dict[str, List[int]] = {}
        for i, layer in enumerate(layers):
            for n in layer.inputs:
                self.consumers.setdefault(n, []).append(i)
        self.taken = [False] * len(layers)
        self.index = {id(x): i for i, x in enumerate(layers)}

    def sole(self, t: str) -> int | None:
        """The one untaken layer that reads ``t``, unless ``t`` is also a graph output."""
        c = self.consumers.get(t, [])
        if len(c) == 1 and t not in self.graph_outputs and not self.taken[c[0]]:
            return c[0]
        return None

    def silu(self, t: str) -> Tuple[LayerStats, LayerStats] | None:
        """``(sigmoid, mul)`` when ``t`` feeds exactly x * sigmoid(x) (SiLU), both untaken."""
        c = self.consumers.get(t, [])
        if len(c) != 2 or t in self.graph_outputs or any(self.taken[j] for j in c):
            return None
        a, b = self.layers[c[0]], self.layers[c[1]]
        sig, mul = (a, b) if a.op_type == "Sigmoid" else (b, a)
        if sig.op_type == "Sigmoid" and mul.op_type == "Mul" and sig.outputs \
                and set(mul.inputs) == {t, sig.outputs[0]} \
                and self.consumers.get(sig.outputs[0], []) == [self.index[id(mul)]]:
            return sig, mul
        return None

    def grow(self, head: LayerStats) -> Tuple[List[LayerStats], List[str]]:
        """The layers fused after ``head`` into one kernel, and the residual inputs it reads."""
        group = [head]
        shortcuts: List[str] = []
        stage = {"bn": False, "act": False, "add": False, "post": False}
        out = head.outputs[0] if len(head.outputs) == 1 else None
        while out is not None:
            nxt = self.sole(out)
            if nxt is None:
                pair = self.silu(out)
                if pair is None:
                    break
                for x in pair:
                    self.taken[self.index[id(x)]] = True
                group += list(pair)
                out = pair[1].outputs[0]
                continue
            n = self.layers[nxt]
            step = _stage(n, stage)
            if step is None:
                break
            if step:
                stage[step] = True
            if step == "add":
                shortcuts.append(n.inputs[0] if n.inputs[1] == out else n.inputs[1])
            self.taken[nxt] = True
            group.append(n)
            out = n.outputs[0] if len(n.outputs) == 1 else None
        return group, shortcuts
