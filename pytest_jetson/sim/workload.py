"""A network as the simulator sees it: TensorRT-style fused kernels and the tensors between them.

``GraphStats.kernels()`` groups layers the way TensorRT fuses them (conv + BatchNorm + activation
+ residual add count once). Here each kernel becomes a row of arrays (per item of the batch), and
the activation tensors between kernels become edges, so an engine plan (``engine.py``) can say in
which precision each tensor is stored and where TensorRT inserts reformats. Views (Reshape,
Flatten, Split, Slice) are no kernels: their outputs alias their input. Each Split or Slice output
is still recorded (``v_*``): the TensorRT of older boards copies it in a kernel of its own
(``engine.SLICE_COPY_ARCHS``).
"""

from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Dict, List, Tuple

import numpy as np

from ..errors import ModelError
from ..models import graph, zoo
from ..models.reference import PLAN, resolve

KINDS = ("conv", "depthwise", "gemm", "pool", "elementwise", "resize", "concat", "softmax", "other",
         "reformat")
KIND = {k: i for i, k in enumerate(KINDS)}
#: Kernel kinds NVDLA cannot run: TensorRT falls back to the GPU for them (a resize only where it
#: is not a nearest-neighbour one by a whole factor: ``_dla_ok``).
DLA_UNSUPPORTED = ("resize", "softmax", "other")
#: The largest whole scale factor NVDLA's nearest-neighbour resize takes per side (TensorRT's DLA
#: layer restrictions, from 8.2 on).
DLA_RESIZE_MAX = 32
#: Ops that TensorRT runs as views (an offset into their input), never as kernels.
VIEW_KERNELS = ("Split", "Slice")
#: Special-function-unit operations per element of an activation (exponentials, reciprocals):
#: a sigmoid is an exp and a reciprocal. Other elementwise ops take one CUDA-core op per element.
SFU_OPS = {"Sigmoid": 2, "Tanh": 2, "Exp": 1, "Log": 1, "Sqrt": 1, "Reciprocal": 1, "Div": 1, "Erf": 2,
           "Gelu": 3, "Softplus": 2, "Mish": 4, "Elu": 1, "Selu": 1, "Celu": 1, "Pow": 2, "Softmax": 2,
           "LogSoftmax": 3}
_NO_OPS = ("Conv", "ConvTranspose", "Gemm", "MatMul", "BatchNormalization", "Identity", "Dropout",
           "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Transpose",
           "MaxPool", "AveragePool", "GlobalAveragePool", "GlobalMaxPool", "Resize", "Upsample")


@dataclass
class Workload:
    name: str
    params: int
    macs: int
    op: List[str]
    kind: np.ndarray        # index into KINDS
    k_macs: np.ndarray      # per item
    k_flops: np.ndarray
    k_weights: np.ndarray   # elements
    k_out: np.ndarray       # output elements per item
    k_channels: np.ndarray  # output channels
    k_spatial: np.ndarray   # output positions per item (H x W)
    k_groups: np.ndarray
    k_ksize: np.ndarray     # kernel window elements (kh x kw)
    k_stride: np.ndarray
    k_cin: np.ndarray       # input channels
    k_sfu: np.ndarray       # special-function ops per output element (a fused sigmoid: 2)
    k_simple: np.ndarray    # other elementwise ops per output element (a fused add, a ReLU: 1 each)
    dla_ok: np.ndarray      # bool per kernel
    e_kernel: np.ndarray    # edges: the kernel reading ...
    e_tensor: np.ndarray    # ... this tensor (index into t_*) ...
    e_elems: np.ndarray     # ... this many elements of it per item
    t_producer: np.ndarray  # kernel writing the tensor; -1 for a graph input
    t_output: np.ndarray    # bool: the tensor is (a view of) a graph output
    t_elems: np.ndarray     # elements per item
    io_in: int              # graph input elements per item
    io_out: int
    unknown_ops: Tuple[str, ...] = ()
    notes: List[str] = field(default_factory=list)
    # each output of a Split or Slice that runs as a view: its elements per item, the tensor it is
    # cut from (index into t_*), the kernel that runs next (a copy of it runs just before) and the
    # slicing layer's name
    v_elems: np.ndarray = field(default_factory=lambda: np.zeros(0))
    v_tensor: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    v_at: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    v_name: Tuple[str, ...] = ()

    @property
    def n_kernels(self) -> int:
        return int(self.kind.size)


def _elems_per_item(shape: Any) -> int:
    dims = list(shape or ())[1:]
    n = 1
    for d in dims:
        if isinstance(d, (int, np.integer)) and d > 0:
            n *= int(d)
    return n


def _aliases(stats: Any) -> Dict[str, str]:
    """View layers' outputs -> their input (Reshape, Flatten, Squeeze...), from the layer list."""
    alias: Dict[str, str] = {}
    for layer in getattr(stats, "layers", None) or []:
        ins = getattr(layer, "inputs", None) or []
        if getattr(layer, "free", False) and len(ins) == 1:
            for o in getattr(layer, "outputs", None) or []:
                alias[o] = ins[0]
    return alias


def _root(alias: Dict[str, str], name: str) -> str:
    seen = 0
    while name in alias and seen < 1000:
        name, seen = alias[name], seen + 1
    return name


def _costed_kernels(stats: Any, all_ks: List[Any], alias: Dict[str, str]) -> List[Any]:
    """The kernels that cost time: Split and Slice of one input become views (aliases)."""
    views = [k for k in all_ks if str(getattr(k, "op_type", "")) in VIEW_KERNELS
             and len(getattr(k, "_inputs", None) or []) == 1]
    for k in views:
        for o in k._outputs:
            alias[o] = k._inputs[0]
    return [k for k in all_ks if not any(k is v for v in views)] or all_ks


def _views(stats: Any, all_ks: List[Any], ks: List[Any], alias: Dict[str, str], edges: "_Edges",
           b: int) -> Dict[str, Any]:
    """Every output of a Split or Slice that ``_costed_kernels`` made a view (``Workload.v_*``)."""
    costed = {id(k): i for i, k in enumerate(ks)}
    elems: List[float] = []
    tensor: List[int] = []
    at: List[int] = []
    names: List[str] = []
    nxt = 0
    for k in all_ks:
        if id(k) in costed:
            nxt = costed[id(k)] + 1
            continue
        root = edges.index.get(_root(alias, k._inputs[0]))
        if root is None:
            continue
        for o in k._outputs:
            elems.append(stats.tensor_elems(o) / b)
            tensor.append(root)
            at.append(min(nxt, max(len(ks) - 1, 0)))
            names.append(str(getattr(k, "name", "") or getattr(k, "op_type", "Slice")))
    return dict(v_elems=np.array(elems, dtype=float), v_tensor=np.array(tensor, dtype=np.int64),
                v_at=np.array(at, dtype=np.int64), v_name=tuple(names))


class _Edges:
    """Tensors (by name, with their producer and size per item) and the kernel -> tensor reads."""

    def __init__(self) -> None:
        self.index: Dict[str, int] = {}
        self.producer: List[int] = []
        self.elems: List[float] = []
        self.kernel: List[int] = []
        self.tensor_of: List[int] = []
        self.read: List[float] = []

    def tensor(self, name: str, elems: float, producer: int = -1) -> int:
        if name not in self.index:
            self.index[name] = len(self.producer)
            self.producer.append(producer)
            self.elems.append(elems)
        elif producer >= 0:
            self.producer[self.index[name]] = producer
            self.elems[self.index[name]] = elems
        return self.index[name]

    def edge(self, kernel: int, tensor: int, elems: float) -> None:
        self.kernel.append(kernel)
        self.tensor_of.append(tensor)
        self.read.append(elems)

    def outputs(self, names: List[str]) -> np.ndarray:
        t_out = np.zeros(len(self.producer), bool)
        for name in names:
            if name in self.index:
                t_out[self.index[name]] = True
        return t_out


def _named_edges(edges: _Edges, stats: Any, ks: List[Any], alias: Dict[str, str], b: int) -> List[str]:
    """Edges from the tensor names the kernels read and write; the graph outputs' roots."""
    for i, k in enumerate(ks):
        for o in k._outputs:
            edges.tensor(_root(alias, o), stats.tensor_elems(o) / b, i)
    for i, k in enumerate(ks):
        for name in k._inputs:
            root = _root(alias, name)
            edges.edge(i, edges.tensor(root, stats.tensor_elems(root) / b), stats.tensor_elems(name) / b)
    return [_root(alias, o) for o in getattr(stats, "graph_outputs", ())]


def _chain_edges(edges: _Edges, ks: List[Any], b: int) -> List[str]:
    """Stats without tensor names: each kernel reads the one before it, the first the input."""
    prev = edges.tensor("<input>", float(getattr(ks[0], "input_elems", 0) or 0) / b)
    for i, k in enumerate(ks):
        edges.edge(i, prev, float(getattr(k, "input_elems", 0) or 0) / b)
        prev = edges.tensor(f"<k{i}>", float(getattr(k, "output_elems", 0) or 0) / b, i)
    return [f"<k{len(ks) - 1}>"]


def _side_scale(ks: List[Any], spatial: np.ndarray, b: int) -> np.ndarray:
    """Each kernel's output side over its input side (a resize's scale factor; 0 where unknown)."""
    cin = _column(ks, "in_channels", False, b)
    inp = _column(ks, "input_elems", True, b)
    ratio = np.divide(spatial * cin, inp, out=np.zeros(len(ks)), where=inp > 0)
    return np.sqrt(np.maximum(ratio, 0.0))


def _column(ks: List[Any], attr: str, per_item: bool, b: int, default: float = 0.0) -> np.ndarray:
    v = np.array([float(getattr(k, attr, default) or default) for k in ks])
    return v / b if per_item else v


def _dla_ok(kind: np.ndarray, spatial: np.ndarray, ops: List[str], flops: np.ndarray,
            scale: np.ndarray) -> np.ndarray:
    """Kernels NVDLA runs. GlobalAveragePool (a pool down to 1x1) is the layer the seeds name as
    falling back. A resize runs there when it is nearest-neighbour (no arithmetic: a linear one
    interpolates) by a whole factor of 1 to 32 per side: YOLO's upsampling stays on the DLA, as
    the cuDLA samples' standalone YOLOv5s loadable (built with no GPU fallback at all) shows."""
    def nearest(i: int) -> bool:
        s = scale[i]
        return flops[i] == 0 and 1.0 <= s <= DLA_RESIZE_MAX and abs(s - round(s)) < 1e-6

    return np.array([
        (KINDS[kd] not in DLA_UNSUPPORTED or (KINDS[kd] == "resize" and nearest(i)))
        and not (KINDS[kd] == "pool" and (sp <= 1 or "Global" in op))
        for i, (kd, sp, op) in enumerate(zip(kind, spatial, ops))
    ])


def _elementwise_work(stats: Any, ks: List[Any]) -> Tuple[np.ndarray, np.ndarray]:
    """Special-function and simple ops per output element of each kernel: a conv's fused epilogue
    (its BatchNorm folds into the weights; activations and a residual add do not), or the op
    itself."""
    op_of = {str(getattr(x, "name", "")): str(getattr(x, "op_type", "")) for x in getattr(stats, "layers", None) or []}
    sfu, simple = [], []
    for k in ks:
        names = list(getattr(k, "layers", None) or [])
        if KIND.get(str(getattr(k, "kind", ""))) in (KIND["conv"], KIND["depthwise"], KIND["gemm"]):
            names = names[1:]
        fused = [op_of.get(n, "") for n in names]
        sfu.append(float(sum(SFU_OPS.get(o, 0) for o in fused)))
        simple.append(float(sum(1 for o in fused if o and o not in SFU_OPS and o not in _NO_OPS)))
    return np.array(sfu), np.array(simple)


def _unknown_ops(stats: Any, notes: List[str]) -> Tuple[str, ...]:
    unknown = tuple(sorted(set(map(str, getattr(stats, "unknown_ops", ()) or ()))))
    if unknown:
        notes.append("operators without a cost model: " + ", ".join(unknown) + "; each is costed as a "
                     "memory-bound kernel that reads its inputs and writes its outputs once (no arithmetic)")
    assumed = list(getattr(stats, "assumed_shapes", None) or ())
    if assumed:
        notes.append(f"output shape of {', '.join(assumed[:5])}{' ...' if len(assumed) > 5 else ''} not "
                     "inferable: taken as its input's, and the layers after it sized from that")
    return unknown


def _outputs_or_inputs(k_out: np.ndarray, kind: np.ndarray, edges: _Edges, n: int, notes: List[str]) -> np.ndarray:
    """Kernel outputs, an operator whose output shape inference could not give taken as large
    as what it reads."""
    k_in = np.bincount(np.array(edges.kernel, dtype=np.int64), weights=np.array(edges.read, dtype=float),
                       minlength=n)
    blind = (k_out <= 0) & (kind == KIND["other"])
    if np.any(blind):
        k_out = np.where(blind, k_in, k_out)
        notes.append(f"{int(blind.sum())} operator(s) with no inferable output shape: each assumed to "
                     "write as much as it reads")
    return k_out


def from_stats(stats: Any) -> Workload:
    """Any GraphStats-like object (``kernels()``, ``params``, ``macs``, ``batch`` ...) -> Workload.

    Objects without tensor names (hand-made stats) are read as a chain: each kernel reads the one
    before it, the first the graph input.
    """
    b = max(1, int(getattr(stats, "batch", 1) or 1))
    all_ks = list(stats.kernels())
    if not all_ks:
        raise ModelError(f"model {getattr(stats, 'name', '?')!r} has no layers the simulator can cost; "
                         "pass a model with at least one operator")
    alias = _aliases(stats)
    ks = _costed_kernels(stats, all_ks, alias)
    named = all(getattr(k, "_inputs", None) is not None and hasattr(stats, "tensor_elems") for k in ks)
    edges = _Edges()
    outputs = _named_edges(edges, stats, ks, alias, b) if named else _chain_edges(edges, ks, b)
    views = _views(stats, all_ks, ks, alias, edges, b) if named and len(ks) < len(all_ks) else {}

    def arr(attr: str, per_item: bool, default: float = 0.0) -> np.ndarray:
        return _column(ks, attr, per_item, b, default)

    kind = np.array([KIND.get(str(getattr(k, "kind", "other")), KIND["other"]) for k in ks])
    spatial = arr("spatial", False, 1.0)
    ops = [str(getattr(k, "op_type", "")) for k in ks]
    outs = getattr(stats, "output_shapes", None) or []
    io_out = sum(_elems_per_item(s) for s in outs) or int(arr("output_elems", True)[-1])
    io_in = _elems_per_item(getattr(stats, "input_shape", None)) or int(arr("input_elems", True)[0])
    notes: List[str] = []
    unknown = _unknown_ops(stats, notes)
    sfu, simple = _elementwise_work(stats, ks)
    k_out = _outputs_or_inputs(arr("output_elems", True), kind, edges, len(ks), notes)
    return Workload(
        name=str(getattr(stats, "name", "model")),
        params=int(getattr(stats, "params", 0) or 0),
        macs=int(float(getattr(stats, "macs", 0) or 0) / b),
        op=ops, kind=kind, k_macs=arr("macs", True), k_flops=arr("flops", True),
        k_weights=arr("weight_elems", False), k_out=k_out,
        k_channels=arr("out_channels", False, 1.0), k_spatial=spatial, k_groups=arr("groups", False, 1.0),
        k_ksize=arr("kernel_size", False, 1.0), k_stride=arr("stride", False, 1.0),
        k_cin=arr("in_channels", False, 0.0), k_sfu=sfu, k_simple=simple,
        dla_ok=_dla_ok(kind, spatial, ops, arr("flops", True), _side_scale(ks, spatial, b)), e_kernel=np.array(edges.kernel, dtype=np.int64),
        e_tensor=np.array(edges.tensor_of, dtype=np.int64), e_elems=np.array(edges.read, dtype=float),
        t_producer=np.array(edges.producer, dtype=np.int64), t_output=edges.outputs(outputs),
        t_elems=np.array(edges.elems, dtype=float), io_in=int(io_in), io_out=int(io_out),
        unknown_ops=unknown, notes=notes, **views,
    )


@lru_cache(maxsize=64)
def _zoo_workload(name: str, resolution: Any) -> Workload:
    return from_stats(zoo.stats(name, resolution=resolution, batch=1))


@lru_cache(maxsize=32)
def _file_stats(path: str, mtime: float, shapes: Any) -> Any:
    return graph.analyze(path, batch=1, input_shapes=None if shapes is None else dict(shapes))


@lru_cache(maxsize=32)
def _file_workload(path: str, mtime: float, shapes: Any = None) -> Workload:
    return from_stats(_file_stats(path, mtime, shapes))


@lru_cache(maxsize=32)
def _file_inputs(path: str, mtime: float) -> Dict[str, Tuple[Any, ...]]:
    return graph.input_dims(path)


def file_shapes(path: Any, resolution: Any = None, input_shape: Any = None) -> Any:
    """The sizes of an ONNX file's dynamic input dimensions, from ``input_shape`` (a shape, with or
    without the batch, for every input, or a dict by input name) or ``resolution`` (an int or
    (height, width): the last two dimensions of a 4-D input), as a hashable key (sorted
    (name, shape without batch) pairs; None where the file has no dynamic dimension besides the
    batch). A shape that disagrees with the file or with ``resolution`` is an error."""
    p = Path(path)
    dims = _file_inputs(str(p.resolve()), p.stat().st_mtime)
    hw = None
    if resolution is not None:
        hw = (int(resolution), int(resolution)) if isinstance(resolution, (int, np.integer)) else \
            tuple(int(x) for x in resolution)
    out = []
    for name, d in dims.items():
        rest = tuple(d[1:])
        if input_shape is not None:
            given = input_shape.get(name) if isinstance(input_shape, dict) else input_shape
        else:
            given = None
        if given is not None:
            given = tuple(int(x) for x in given)
            if len(given) == len(d):
                given = given[1:]
            if len(given) != len(rest):
                raise ModelError(f"{p}: input_shape={given} has {len(given)} dimensions besides the batch; "
                                 f"input {name!r} has {len(rest)} ({_shown(d)}): give its shape without the "
                                 "batch, e.g. input_shape=(3, 480, 640)")
            if hw is not None and len(d) == 4 and given[1:] != hw:
                raise ModelError(f"{p}: input_shape={given} and resolution={resolution!r} disagree on the "
                                 f"height and width of input {name!r}; give one of them")
        elif hw is not None and len(d) == 4:
            given = tuple(rest[:1]) + hw
        if given is not None and min(given, default=1) < 1:
            # read as "not given" further down, a 0 was blamed on the file's dynamic dimensions
            raise ModelError(f"{p}: the shape given for input {name!r} ({'x'.join(map(str, given))}) has a "
                             "size below 1; give positive sizes, e.g. input_shape=(3, 480, 640) or "
                             "resolution=(480, 640)")
        if given is None:
            if any(x is None or isinstance(x, str) for x in rest):
                continue  # graph.analyze names the dimension and the fix
            given = rest
        for axis, (fixed, size) in enumerate(zip(rest, given), start=1):
            if isinstance(fixed, int) and fixed != size:
                raise ModelError(f"{p}: input {name!r} is {_shown(d)}, its dimension {axis} fixed at "
                                 f"{fixed}; the shape given ({'x'.join(map(str, given))}) sets it to {size}")
        out.append((name, tuple(given)))
    dynamic = any(any(not isinstance(x, int) for x in d[1:]) for d in dims.values())
    return tuple(sorted(out)) if dynamic else None


def _shown(dims: Any) -> str:
    return "x".join(str(x) if isinstance(x, int) else (x or "?") for x in dims)


def file_stats(path: Any, shapes: Any = None) -> Any:
    """The graph analysis (batch 1) of an ONNX file at ``shapes`` (a ``file_shapes`` key), cached."""
    p = Path(path)
    return _file_stats(str(p.resolve()), p.stat().st_mtime, shapes)


def load(model: Any, resolution: Any = None, input_shape: Any = None) -> Workload:
    """A zoo name, an ONNX path, a GraphStats(-like) object or a Workload -> Workload.

    For an ONNX file, ``resolution`` and ``input_shape`` size the inputs' dynamic dimensions
    (``file_shapes``); for a zoo name, ``resolution`` builds it at that size."""
    if isinstance(model, Workload):
        return model
    if hasattr(model, "kernels"):
        return from_stats(model)
    ref = resolve(model) if isinstance(model, (str, Path)) else None
    if ref is not None and ref.kind == PLAN:
        raise ModelError(f"{model}: a TensorRT plan holds no graph the simulator can read; pass the "
                         ".onnx file it was built from")
    if ref is not None and ref.is_file:
        p = Path(model)
        if not p.exists():
            raise ModelError(f"ONNX file {p} does not exist; pass an existing .onnx path or a zoo name")
        shapes = file_shapes(p, resolution, input_shape)
        return _file_workload(str(p.resolve()), p.stat().st_mtime, shapes)
    if isinstance(model, str):
        if input_shape is not None:
            raise ModelError(f"{model}: input_shape= sizes an ONNX file's dynamic dimensions; a zoo "
                             "model is built at resolution= (an int, or (height, width))")
        res = tuple(resolution) if isinstance(resolution, list) else resolution
        return _zoo_workload(model, res)
    raise ModelError(f"model {model!r} is not a zoo name, an .onnx path or GraphStats; pass one of those")
