"""The Engine protocol every backend implements, and what backends share: model resolution and
input/output specs read from the ONNX graph.

An engine is built once, then ``infer(batch)`` runs one batch on inputs made when it was opened
and returns the outputs. Timing is the harness's job; an engine only says which clock its time
is on (``clock.kind``: ``"virtual"``, ``"wall"`` or ``"cuda"``) and, where the backend can tell,
the device time of the last call (``last_device_time``).
"""

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from ..errors import EngineError, ModelError

PRECISIONS = ("fp32", "tf32", "fp16", "int8")

ModelRef = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class TensorSpec:
    """One input or output. ``shape`` is for the engine's default batch (first dimension)."""

    name: str
    shape: Tuple[int, ...]
    dtype: Any  # numpy dtype

    def with_batch(self, batch: int) -> "TensorSpec":
        if not self.shape:
            return self
        return TensorSpec(self.name, (batch,) + tuple(self.shape[1:]), self.dtype)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * np.dtype(self.dtype).itemsize


class Engine:
    """Base of every backend. Subclasses set the attributes in ``__init__`` and implement
    ``_infer(batch)``; the base checks the batch against the engine's profile."""

    backend = "engine"

    def __init__(self) -> None:
        self.name: str = ""
        self.model: str = ""
        self.precision: str = ""
        self.batch: int = 1
        self.max_batch: int = 1
        self.inputs: List[TensorSpec] = []
        self.outputs: List[TensorSpec] = []
        self.memory_bytes: Optional[int] = None
        self.clock: Any = None
        self.prediction: Any = None
        self.last_device_time: Optional[float] = None
        self.closed = False

    # -- the protocol -------------------------------------------------------------------------
    def infer(self, batch: Optional[int] = None) -> Any:
        """Run one batch (default: the engine's batch) on the pre-made inputs; return outputs."""
        b = self.batch if batch is None else batch
        if b != self.batch:
            self.check_batch(b)
        return self._infer(b)

    def _infer(self, batch: int) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        self.closed = True

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- shared checks ------------------------------------------------------------------------
    def check_batch(self, batch: Any) -> int:
        if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
            raise EngineError(f"{self.name}: batch must be a positive integer, not {batch!r}")
        if batch > self.max_batch:
            raise EngineError(
                f"{self.name}: batch {batch} is larger than the engine's profile allows "
                f"(max batch {self.max_batch}); open the engine with batch={batch} "
                f"(trt_engine({self.model!r}, batch={batch}, ...))"
            )
        return int(batch)

    def describe(self) -> Dict[str, Any]:
        return {
            "name": self.name, "model": self.model, "backend": self.backend,
            "precision": self.precision, "batch": self.batch, "max_batch": self.max_batch,
            "memory_bytes": self.memory_bytes, "clock": getattr(self.clock, "kind", None),
        }

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name}>"


def engine_name(model: str, precision: str, batch: int, dla_core: Optional[int] = None) -> str:
    dla = f"-dla{dla_core}" if dla_core is not None else ""
    return f"{model}-{precision}-b{batch}{dla}"


def check_precision(precision: str, where: str) -> str:
    p = str(precision).lower()
    if p not in PRECISIONS:
        raise EngineError(f"{where}: precision {precision!r} is not one of {', '.join(PRECISIONS)}")
    return p


def check_open_batch(batch: Any, where: str) -> int:
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise EngineError(f"{where}: batch must be a positive integer, not {batch!r}")
    return int(batch)


def is_path(model: ModelRef) -> bool:
    """An ONNX path rather than a zoo name: a PathLike, or a string that looks like a file."""
    if isinstance(model, os.PathLike):
        return True
    s = str(model)
    return s.endswith(".onnx") or os.sep in s or "/" in s


def model_label(model: ModelRef) -> str:
    """The short name measurements carry: the zoo name, or the ONNX file's stem."""
    return Path(model).stem if is_path(model) else str(model)


def check_onnx_path(model: ModelRef, where: str) -> Path:
    path = Path(model)
    if not path.is_file():
        raise ModelError(
            f"{where}: ONNX file {str(path)!r} does not exist; pass an existing .onnx path or a "
            "zoo name (`pytest-jetson models` lists them)"
        )
    return path


def resolve_onnx(model: ModelRef, where: str, batch: Optional[int] = None,
                 resolution: Any = None) -> Path:
    """The ONNX file behind a model reference: the path as given, or the zoo's cached file
    (dynamic batch unless ``batch`` is given)."""
    if is_path(model):
        return check_onnx_path(model, where)
    from ..models import zoo

    try:
        return Path(zoo.path(str(model), batch=batch, resolution=resolution))
    except (KeyError, ValueError) as exc:
        raise ModelError(f"{where}: unknown model {model!r} ({exc}); pass a zoo name or an .onnx path") from None


# -- ONNX input/output specs ----------------------------------------------------------------------
_ONNX_DTYPES = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64,
                9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


def _np_dtype(elem_type: int) -> Any:
    return np.dtype(_ONNX_DTYPES.get(int(elem_type), np.float32))


def _value_info_spec(vi: Any, batch: int) -> Tuple[TensorSpec, bool]:
    """(spec with the batch dimension set, whether the first dimension is dynamic)."""
    tt = vi.type.tensor_type
    dims: List[int] = []
    dynamic_batch = False
    for i, d in enumerate(tt.shape.dim):
        if d.HasField("dim_value") and d.dim_value > 0:
            dims.append(int(d.dim_value))
        elif i == 0:
            dims.append(batch)
            dynamic_batch = True
        else:
            # a dynamic non-batch dimension: 1 keeps buffers allocatable; TensorRT needs a profile
            dims.append(1)
    return TensorSpec(vi.name, tuple(dims), _np_dtype(tt.elem_type)), dynamic_batch


def graph_io(model_proto: Any, batch: int) -> Tuple[List[TensorSpec], List[TensorSpec], Optional[int]]:
    """Inputs and outputs of an ONNX graph at ``batch``, and the graph's fixed batch (None when
    the first input dimension is dynamic)."""
    graph = model_proto.graph
    inits = {i.name for i in graph.initializer}
    inputs, outputs = [], []
    fixed: Optional[int] = None
    for vi in graph.input:
        if vi.name in inits:
            continue
        spec, dynamic = _value_info_spec(vi, batch)
        if not dynamic and spec.shape:
            fixed = spec.shape[0]
        inputs.append(spec)
    for vi in graph.output:
        spec, _ = _value_info_spec(vi, batch)
        if fixed is None and spec.shape:
            spec = spec.with_batch(batch)
        outputs.append(spec)
    return inputs, outputs, fixed


def read_onnx_io(path: Path, batch: int, where: str) -> Tuple[List[TensorSpec], List[TensorSpec], Optional[int]]:
    import onnx

    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:  # onnx raises DecodeError, OSError, ... for a file it cannot read
        raise ModelError(
            f"{where}: {str(path)!r} is not a readable ONNX file ({type(exc).__name__}: {exc}); "
            "re-export the model or pass a zoo name"
        ) from None
    return graph_io(proto, batch)


def make_inputs(specs: Sequence[TensorSpec], batch: int, seed: int = 0) -> Dict[str, np.ndarray]:
    """Seeded random inputs for one batch: what every backend feeds (the values do not change the
    time of a dense network; seeding keeps runs reproducible)."""
    rng = np.random.default_rng(seed)
    feeds = {}
    for spec in specs:
        shape = spec.with_batch(batch).shape
        dtype = np.dtype(spec.dtype)
        if dtype.kind == "f":
            feeds[spec.name] = rng.standard_normal(shape).astype(dtype)
        elif dtype.kind == "b":
            feeds[spec.name] = rng.integers(0, 2, size=shape).astype(dtype)
        else:
            feeds[spec.name] = rng.integers(0, 8, size=shape).astype(dtype)
    return feeds
