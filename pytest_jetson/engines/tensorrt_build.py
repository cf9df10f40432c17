"""Building a TensorRT plan from ONNX the way trtexec does (samples/common/sampleEngines.cpp).

- Shapes: the batch dimension's profile is (1, batch, batch) on the GPU and static (batch, batch,
  batch) on a DLA, which runs static shapes only. Every other dynamic dimension needs a real size
  (``input_shape=`` or ``resolution=``); none is ever guessed.
- Precisions as TensorRT means them: fp32 clears TF32 (``trtexec --noTF32``), tf32 keeps it (it
  is TensorRT's default on Ampere and later), fp16 adds FP16, int8 adds INT8 and FP16 (``--int8
  --fp16``: layers without INT8 kernels run FP16). Uncalibrated INT8 needs placeholder scales: a
  graph with Q/DQ of its own gets none; before TensorRT 10.1 the network's tensors get
  placeholder dynamic ranges (as trtexec does); from 10.1, where those calls are deprecated, the
  ONNX gets placeholder Q/DQ nodes instead (``qdq``).
- A board without fast INT8 (Maxwell Nano/TX1, Pascal TX2) builds fp16 and says so, or errors
  when asked to (``precision_fallback=False``); TF32 before Ampere is an error.
- DLA: default device DLA with GPU fallback; where the layers ran is read from TensorRT's build
  log (``Layers running on DLA/GPU``), else from the engine inspector; a DLA request that lands
  nowhere on the DLA is an error.
- Layer information: plans are built with ``ProfilingVerbosity.DETAILED`` (``trtexec
  --profilingVerbosity=detailed``; every supported TensorRT has it), so the engine inspector says
  each fused layer's type, precision, format and tactic (``inspect_layers``). The plan cache keys
  on it (``PROFILING_VERBOSITY``).
- One TensorRT logger per process: TensorRT 8.0-8.2 keep the first logger they were given, so a
  runtime created before a builder would otherwise swallow the builder's errors.
"""

import json
import os
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..errors import EngineError, ModelError
from ..fileio import write_atomic
from .base import given_profile, given_shape
from .dla_log import names_in, placement_counts

#: trtexec's --workspace default before TensorRT 8.3 (samples/common/sampleOptions.h at 8.2.1:
#: ``defaultWorkspace{16}``, in MiB)
TRTEXEC_WORKSPACE = 16 << 20


def effective_workspace(trt: Any, workspace: Optional[int]) -> Optional[int]:
    """The workspace a build gets for ``workspace=`` (None: TensorRT's own default): what the
    plan cache keys on, so a plan built under one default is not reused under another. Before
    the memory pools of 8.3 that default was 0 bytes and the build sets trtexec's 16 MiB."""
    if workspace is not None:
        return int(workspace)
    parts = re.findall(r"\d+", str(getattr(trt, "__version__", "")))[:2]
    pools = len(parts) < 2 or (int(parts[0]), int(parts[1])) >= (8, 3)
    return None if pools else TRTEXEC_WORKSPACE
#: Placeholder int8 dynamic range of uncalibrated tensors, before TensorRT 10.1 (trtexec:
#: layer inputs +-2, outputs +-4, pooling outputs as their input).
RANGE_IN, RANGE_OUT = 2.0, 4.0
#: TensorRT versions whose Python API deprecates implicit quantization (DeprecationWarning).
IMPLICIT_INT8_DEPRECATED = (10, 1)
#: Compute capabilities without fast INT8 in TensorRT: Maxwell sm_53 (Nano, TX1) and Pascal
#: sm_62 (TX2); ``Builder.platform_has_fast_int8`` is False there (deprecated from 10.5).
NO_FAST_INT8 = ("5.3", "6.2")
FAST_INT8_QUERY_DEPRECATED = (10, 5)
DLA_PRECISIONS = ("fp16", "int8")
#: The ProfilingVerbosity plans are built with (part of the plan cache key: a plan built with
#: less says only its layers' names)
PROFILING_VERBOSITY = "DETAILED"


def version_tuple(trt: Any) -> Tuple[int, int]:
    parts = re.findall(r"\d+", str(getattr(trt, "__version__", "0")))
    return (int(parts[0]) if parts else 0, int(parts[1]) if len(parts) > 1 else 0)


# -- logging ------------------------------------------------------------------------------------
class _Messages:
    """What the process's TensorRT logger has heard (INFO and up), with positions to quote from."""

    def __init__(self) -> None:
        self.lines: List[Tuple[int, str]] = []
        self.lock = threading.Lock()

    def add(self, severity: int, msg: str) -> None:
        with self.lock:
            self.lines.append((severity, str(msg)))
            if len(self.lines) > 20000:  # a long session: keep the recent part
                del self.lines[:10000]

    def mark(self) -> int:
        return len(self.lines)

    def since(self, mark: int, worst: int = 2) -> List[str]:
        """Messages since ``mark`` at ``worst`` severity or worse (0 internal error, 1 error,
        2 warning, 3 info)."""
        return [m for s, m in self.lines[mark:] if s <= worst]


_LOGGERS: Dict[int, Any] = {}


def process_logger(trt: Any) -> Any:
    """The one TensorRT logger of this process, with ``.heard`` (a ``_Messages``)."""
    logger = _LOGGERS.get(os.getpid())
    if logger is not None:
        return logger
    heard = _Messages()
    verbose = 4

    class Logger(trt.ILogger):  # type: ignore[misc, name-defined]
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.heard = heard

        def log(self, severity: Any, msg: str) -> None:
            level = int(severity)
            if level < verbose:
                heard.add(level, msg)

    logger = _LOGGERS[os.getpid()] = Logger()
    return logger


def quote(lines: Sequence[str], n: int = 8) -> str:
    tail = [m for m in lines if m][-n:]
    return ("\n  TensorRT said:\n    " + "\n    ".join(tail)) if tail else ""


# -- the board, as a build sees it ----------------------------------------------------------------
@dataclass
class Board:
    """What a build needs to know of the GPU: for messages and for precision/DLA decisions."""

    label: str
    compute_capability: str
    dla_cores: Optional[int] = None  # None: unknown, TensorRT's builder says

    @property
    def fast_int8(self) -> bool:
        return self.compute_capability not in NO_FAST_INT8

    @property
    def has_tf32(self) -> bool:
        try:
            return float(self.compute_capability) >= 8.0
        except ValueError:
            return True


@dataclass
class Request:
    """One build: what to build and for which board."""

    name: str
    onnx: Path
    precision: str
    batch: int
    dla_core: Optional[int]
    workspace: Optional[int]
    shapes: Dict[str, Tuple[Tuple[int, ...], Tuple[int, ...], Tuple[int, ...]]] = field(default_factory=dict)
    int8_mode: Optional[str] = None  # "qdq-in-model", "placeholder-ranges", "placeholder-qdq"
    default_workspace: Optional[int] = None  # set by the build where TensorRT's default was 0 bytes


@dataclass
class Placement:
    """Where a DLA engine's layers ran."""

    dla_core: int
    layers: int
    gpu_layers: List[str]
    dla_subgraphs: int
    source: str

    def describe(self) -> str:
        return f"dla{self.dla_core}, {len(self.gpu_layers)} of {self.layers} layers on the GPU"

    def to_dict(self) -> Dict[str, Any]:
        return {"dla_core": self.dla_core, "layers": self.layers, "gpu_layers": list(self.gpu_layers),
                "dla_subgraphs": self.dla_subgraphs, "source": self.source, "summary": self.describe()}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "Placement":
        return cls(int(d["dla_core"]), int(d["layers"]), list(d.get("gpu_layers", [])),
                   int(d.get("dla_subgraphs", 0)), str(d.get("source", "plan cache")))


# -- shapes ---------------------------------------------------------------------------------------
def _resolution_hw(resolution: Any) -> Optional[Tuple[int, int]]:
    if resolution is None:
        return None
    if isinstance(resolution, int):
        return int(resolution), int(resolution)
    h, w = resolution
    return int(h), int(w)


def explicit_shape(name: str, input_name: str, rank: int, batch: int, input_shape: Any) -> Optional[List[int]]:
    """The user's ``input_shape=`` for one input, as a full shape (batch first), or None."""
    return given_shape(name, input_name, rank, batch, input_shape)


def profile_shapes(name: str, input_name: str, dims: Sequence[int], batch: int, dla: bool,
                   resolution: Any = None, input_shape: Any = None,
                   ) -> Optional[Tuple[Tuple[int, ...], Tuple[int, ...], Tuple[int, ...]]]:
    """(min, opt, max) for one network input with dynamic dimensions (None when it has none).

    The batch dimension runs 1..batch (static at ``batch`` on a DLA); every other dynamic
    dimension takes its size from ``input_shape`` (one shape, or a (smallest, usual, largest)
    triple: a range of sizes the engine takes from call to call) or ``resolution`` (height,
    width of a 4-D input) and is an error without one: a guessed 1 would benchmark a 1x1 image."""
    dims = [int(d) for d in dims]
    if not any(d < 0 for d in dims):
        return None
    triple = given_profile(name, input_name, len(dims), batch, input_shape)
    hw = _resolution_hw(resolution)
    lo: List[int] = []
    opt: List[int] = []
    hi: List[int] = []
    missing = []
    for i, d in enumerate(dims):
        if i == 0 and d < 0:
            first = batch if dla else 1
            lo.append(first)
            opt.append(batch)
            hi.append(batch)
            continue
        if triple is not None:
            sizes = [t[i] for t in triple]
            if d >= 0 and any(size != d for size in sizes):
                raise EngineError(f"{name}: input_shape gives dimension {i} of {input_name!r} as "
                                  f"{sizes[1] if sizes[1] != d else max(sizes)}, the model fixes it at {d}")
            if dla and sizes[0] != sizes[2]:
                raise EngineError(f"{name}: the DLA runs static shapes only; give input_shape one "
                                  f"shape, not a range, or dla_core=None")
            lo.append(sizes[0])
            opt.append(sizes[1])
            hi.append(sizes[2])
            continue
        if d >= 0:
            size = d
        elif hw is not None and len(dims) == 4 and i in (2, 3):
            size = hw[i - 2]
        else:
            missing.append(i)
            size = -1
        lo.append(size)
        opt.append(size)
        hi.append(size)
    if missing:
        shown = "x".join("?" if d < 0 else str(d) for d in dims)
        raise EngineError(
            f"{name}: input {input_name!r} has dynamic dimensions besides the batch ({shown}, "
            f"dimension(s) {', '.join(map(str, missing))}); TensorRT needs real sizes for its "
            "profile. Pass input_shape=(3, 640, 640) (one item, without the batch) or "
            "resolution=640 for an image model"
        )
    return tuple(lo), tuple(opt), tuple(hi)


# -- precision ------------------------------------------------------------------------------------
def effective_precision(name: str, precision: str, board: Board, dla: bool,
                        fallback: bool = True) -> Tuple[str, Optional[str]]:
    """(precision to build, note) for ``precision`` on ``board``; errors where it cannot run."""
    if precision == "tf32" and not board.has_tf32:
        raise EngineError(
            f"{name}: tf32 needs an Ampere or newer GPU (Orin, Thor); {board.label} has compute "
            f"capability {board.compute_capability}. Use precision='fp32' or 'fp16'"
        )
    if precision == "int8" and not board.fast_int8 and not dla:
        why = (f"{board.label} (sm_{board.compute_capability.replace('.', '')}) has no fast INT8 in "
               "TensorRT (platform_has_fast_int8 is False)")
        if not fallback:
            raise EngineError(f"{name}: int8 requested, but {why}. Use precision='fp16', or "
                              "precision_fallback=True to build fp16 and label the result so")
        return "fp16", f"int8 requested; {why}, so the engine was built fp16"
    return precision, None


def set_precision(trt: Any, config: Any, precision: str) -> None:
    flag = trt.BuilderFlag
    # TensorRT 11 keeps TF32 and drops FP16/INT8 (BuilderFlag in its bindings): fp32 and tf32 build
    if precision in ("fp16", "int8") and not hasattr(flag, "FP16"):
        raise EngineError(
            f"TensorRT {trt.__version__} has no weakly-typed precision flags (BuilderFlag.FP16/INT8 "
            "were removed in TensorRT 11): it builds strongly typed networks from an ONNX already "
            "converted to fp16 (ModelOpt AutoCast) or carrying Q/DQ, which pytest-jetson does not "
            "do yet. Use precision='fp32' or 'tf32', or TensorRT 10 (JetPack 6 or 7)"
        )
    if precision == "fp32":
        if hasattr(flag, "TF32"):
            config.clear_flag(flag.TF32)  # on by default on Ampere and later
    elif precision == "tf32":
        config.set_flag(flag.TF32)
    elif precision == "fp16":
        config.set_flag(flag.FP16)
    elif precision == "int8":
        config.set_flag(flag.INT8)
        config.set_flag(flag.FP16)


def int8_mode(trt: Any, model_has_qdq: bool) -> str:
    """How uncalibrated INT8 gets its scales on this TensorRT (see the module doc)."""
    if model_has_qdq:
        return "qdq-in-model"
    if version_tuple(trt) >= IMPLICIT_INT8_DEPRECATED:
        return "placeholder-qdq"
    return "placeholder-ranges"


def placeholder_ranges(trt: Any, network: Any) -> int:
    """trtexec's placeholder dynamic ranges on every layer input and output that has none
    (TensorRT < 10.1 only: the calls are deprecated from 10.1). Returns the tensors set."""
    pooling = getattr(trt.LayerType, "POOLING", None)
    concat = getattr(trt.LayerType, "CONCATENATION", None)
    count = 0
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        for j in range(layer.num_inputs):
            t = layer.get_input(j)
            if t is not None and t.dynamic_range is None:
                r = RANGE_OUT if layer.type == concat else RANGE_IN
                t.set_dynamic_range(-r, r)
                count += 1
        for j in range(layer.num_outputs):
            t = layer.get_output(j)
            if t is not None and t.dynamic_range is None:
                r = RANGE_IN if layer.type == pooling else RANGE_OUT
                t.set_dynamic_range(-r, r)
                count += 1
    return count


# -- DLA placement --------------------------------------------------------------------------------
def placement_from_log(messages: List[str], layer_names: List[str], dla_core: int) -> Optional[Placement]:
    """Where layers ran, from the build log's "Layers running on DLA/GPU" sections (TensorRT
    prints them at INFO for every DLA build); None when the log has no such section."""
    counts = placement_counts(messages, layer_names)
    if counts is None:
        return None
    on_gpu, dla_subgraphs = counts
    return Placement(dla_core, len(layer_names), on_gpu, dla_subgraphs, "build log")


def placement_from_inspector(trt: Any, engine: Any, layer_names: List[str], dla_core: int) -> Optional[Placement]:
    """Where layers ran, from the engine's own layer list: DLA subgraphs are ``ForeignNode``s."""
    try:
        inspector = engine.create_engine_inspector()
        info = json.loads(inspector.get_engine_information(trt.LayerInformationFormat.JSON))
    except Exception:  # an engine without an inspector, or built without layer names
        return None
    layers = info.get("Layers", []) if isinstance(info, dict) else []
    names = [str(x.get("Name", x)) if isinstance(x, dict) else str(x) for x in layers]
    dla = [n for n in names if "ForeignNode" in n]
    gpu = [n for n in names if "ForeignNode" not in n and " nvm" not in n and "copy finish" not in n]
    on_gpu = [n for n in layer_names if n and any(names_in(entry, n) for entry in gpu)]
    return Placement(dla_core, len(layer_names), on_gpu, len(dla), "engine inspector")


# -- the engine inspector's layers ---------------------------------------------------------------
#: a layer's precision, from the words of its output's "Format/Datatype" (first match wins)
_PRECISION_WORDS = (("bfloat16", "bf16"), ("fp8", "fp8"), ("int8", "int8"), ("int4", "int4"),
                    ("fp16", "fp16"), ("half", "fp16"), ("fp32", "fp32"), ("float", "fp32"),
                    ("int32", "int32"), ("int64", "int64"), ("bool", "bool"))
#: inspector layer types (LayerType or ParameterType) that are reformats
_REFORMAT_TYPES = ("Reformat", "Reformatting")
#: the longest format text kept per layer
FORMAT_CHARS = 60


@dataclass
class InspectedLayer:
    """One layer of the engine as its inspector describes it: TensorRT's name, its type
    (``ParameterType``, else ``LayerType``; reformats as "Reformat"), the precision and format of
    its first output, its tactic (``TacticName``, else ``TacticValue``), and output elements per
    item where the dimensions are known."""

    name: str
    type: str = ""
    precision: str = ""
    format: str = ""
    tactic: Optional[str] = None
    size: Optional[int] = None


def format_precision(text: str) -> Tuple[str, str]:
    """(precision, format) of an inspector "Format/Datatype" such as "Thirty-two wide channel
    vectorized row major Int8 format." -> ("int8", "Thirty-two wide channel vectorized row major
    Int8")."""
    low = text.lower()
    precision = next((p for word, p in _PRECISION_WORDS if word in low), "")
    fmt = re.sub(r"\s*format\.?\s*$", "", text.strip(), flags=re.I)
    return precision, fmt[:FORMAT_CHARS]


def _elements(dims: Any) -> Optional[int]:
    if not isinstance(dims, list) or len(dims) < 2 or not all(isinstance(d, int) and d >= 0 for d in dims):
        return None
    n = 1
    for d in dims[1:]:
        n *= d
    return n


def reduce_inspector(info: Any, name: str = "engine") -> Tuple[List[InspectedLayer], Optional[str]]:
    """The inspector's JSON (``get_engine_information(LayerInformationFormat.JSON)``, parsed) as
    the engine's layers after fusion, and a note where it says less than DETAILED does: names
    only (the engine was built with another ProfilingVerbosity), or nothing."""
    layers = info.get("Layers") if isinstance(info, dict) else None
    if not isinstance(layers, list) or not layers:
        return [], (f"{name}: the engine inspector lists no layers (the engine was built with "
                    "ProfilingVerbosity.NONE?): rebuild it with detailed layer information "
                    "(trtexec --profilingVerbosity=detailed), or pass the .onnx and let pytest-jetson build it")
    out: List[InspectedLayer] = []
    detailed = True
    for x in layers:
        if not isinstance(x, dict):
            detailed = False
            out.append(InspectedLayer(str(x)))
            continue
        kind = str(x.get("ParameterType") or x.get("LayerType") or "")
        if kind in _REFORMAT_TYPES or str(x.get("LayerType", "")) in _REFORMAT_TYPES:
            kind = "Reformat"
        outputs = [t for t in x.get("Outputs") or [] if isinstance(t, dict)]
        precision, fmt = format_precision(str(outputs[0].get("Format/Datatype", ""))) if outputs else ("", "")
        tactic = x.get("TacticName") or x.get("TacticValue")
        out.append(InspectedLayer(str(x.get("Name", "")), kind, precision, fmt,
                                  None if tactic in (None, "") else str(tactic),
                                  _elements(outputs[0].get("Dimensions")) if outputs else None))
    if not detailed:
        return out, (f"{name}: the engine was built without detailed layer information (only its layers' "
                     "names), so their types, precisions and tactics are unknown: rebuild it with "
                     "trtexec --profilingVerbosity=detailed, or pass the .onnx and let pytest-jetson build it")
    return out, None


def inspect_layers(trt: Any, engine: Any, context: Any = None, name: str = "engine"
                   ) -> Tuple[List[InspectedLayer], Optional[str]]:
    """The engine's layers from its inspector; ``context``: an execution context with its input
    shapes set, without which a dynamic-shape engine's inspector leaves formats out."""
    try:
        inspector = engine.create_engine_inspector()
        if context is not None:
            inspector.execution_context = context
        info = json.loads(inspector.get_engine_information(trt.LayerInformationFormat.JSON))
    except Exception as exc:  # a TensorRT without an inspector, or a plan it cannot describe
        return [], f"{name}: the engine inspector could not be read ({type(exc).__name__}: {exc})"
    return reduce_inspector(info, name)


# -- the build ------------------------------------------------------------------------------------
@dataclass
class Built:
    plan: bytes
    seconds: float
    placement: Optional[Placement]
    layer_names: List[str]
    log: List[str]


def _parse(trt: Any, builder: Any, logger: Any, req: Request, board: Board, onnx: Path) -> Tuple[Any, Any]:
    flags = 0
    creation = trt.NetworkDefinitionCreationFlag
    if version_tuple(trt) < (10, 0):
        flags = 1 << int(creation.EXPLICIT_BATCH)  # 10.x is explicit-batch only (flag deprecated)
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    mark = logger.heard.mark()
    if hasattr(parser, "parse_from_file"):
        ok = parser.parse_from_file(str(onnx))  # resolves external weight files beside the graph
    else:
        with open(onnx, "rb") as f:
            ok = parser.parse(f.read())
    if not ok:
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        raise ModelError(
            f"{req.name}: TensorRT {trt.__version__}'s ONNX parser rejected {str(req.onnx)!r} on "
            f"{board.label}:\n    " + "\n    ".join(errors or ["(no parser errors reported)"])
            + quote(logger.heard.since(mark, 1), 4)
            + "\n  Fix: re-export the model with an opset and operators this TensorRT supports "
            "(simplifying it with onnx-simplifier often helps), or pick a zoo model"
        )
    return network, parser


def _check_dla_core(builder: Any, req: Request, board: Board) -> None:
    cores = int(builder.num_DLA_cores)
    if not 0 <= int(req.dla_core) < cores:  # type: ignore[arg-type]
        raise EngineError(
            f"{req.name}: {board.label} has {cores} DLA core(s) (TensorRT's Builder.num_DLA_cores), "
            f"so dla_core={req.dla_core} does not exist; use dla_core=None (GPU)"
            + ("" if cores else " or a board with DLA (Xavier, AGX Orin, Orin NX)")
        )


def _configure(trt: Any, builder: Any, req: Request, dla: bool) -> Any:
    """A builder config with the request's workspace, precision and DLA core (GPU fallback on)."""
    config = builder.create_builder_config()
    if req.workspace is not None:
        if hasattr(config, "set_memory_pool_limit"):
            config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(req.workspace))
        else:  # TensorRT < 8.4
            config.max_workspace_size = int(req.workspace)
    elif not hasattr(config, "set_memory_pool_limit") and config.max_workspace_size == 0:
        # before the memory pools of 8.3 the workspace defaults to 0 bytes (NvInfer.h at 8.2.1), so
        # tactics needing scratch memory were skipped; trtexec 8.2 builds with 16 MiB
        config.max_workspace_size = req.default_workspace = TRTEXEC_WORKSPACE
    set_precision(trt, config, req.precision)
    verbosity = getattr(trt, "ProfilingVerbosity", None)
    if hasattr(verbosity, PROFILING_VERBOSITY):
        config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
    if dla:
        config.default_device_type = trt.DeviceType.DLA
        config.DLA_core = int(req.dla_core)  # type: ignore[arg-type]
        config.set_flag(trt.BuilderFlag.GPU_FALLBACK)
    return config


def _add_profile(builder: Any, config: Any, network: Any, req: Request, dla: bool, resolution: Any,
                 input_shape: Any) -> None:
    """One optimization profile for the inputs with a dynamic dimension (recorded in ``req.shapes``)."""
    profile = None
    for i in range(network.num_inputs):
        tensor = network.get_input(i)
        shapes = profile_shapes(req.name, tensor.name, tuple(tensor.shape), req.batch, dla,
                                resolution=resolution, input_shape=input_shape)
        if shapes is None:
            continue
        if profile is None:
            profile = builder.create_optimization_profile()
        profile.set_shape(tensor.name, *shapes)
        req.shapes[tensor.name] = shapes
    if profile is not None:
        config.add_optimization_profile(profile)


def _load_timing_cache(config: Any, timing_cache: Optional[Path]) -> Any:
    """The timing cache the build reads and extends; None where there is none to keep."""
    if timing_cache is None or not hasattr(config, "create_timing_cache"):
        return None
    try:
        data = timing_cache.read_bytes() if timing_cache.is_file() else b""
    except OSError:
        data = b""
    cache_obj = config.create_timing_cache(data)
    if not config.set_timing_cache(cache_obj, False):
        cache_obj = config.create_timing_cache(b"")  # another TensorRT's cache: start afresh
        config.set_timing_cache(cache_obj, False)
    return cache_obj


def _dla_placement(log: List[str], layer_names: List[str], req: Request, board: Board, logger: Any,
                   mark: Any) -> Optional[Placement]:
    """Where the layers ran, from the build log; an error when none of them runs on the DLA."""
    placement = placement_from_log(log, layer_names, int(req.dla_core))  # type: ignore[arg-type]
    if placement is not None and placement.dla_subgraphs == 0:
        raise EngineError(
            f"{req.name}: asked for dla_core={req.dla_core} on {board.label}, but no layer of "
            f"{str(req.onnx)!r} runs on the DLA: every layer fell back to the GPU, so a "
            "result would say DLA and measure the GPU. Use dla_core=None, or a model whose "
            "layers the DLA supports (convolutions, pooling, activations in fp16/int8)"
            + quote(logger.heard.since(mark, 2), 6)
        )
    return placement


def build(trt: Any, req: Request, board: Board, resolution: Any = None, input_shape: Any = None,
          timing_cache: Optional[Path] = None, qdq_path: Optional[Path] = None) -> Built:
    """Parse ``req.onnx`` and build a serialized plan (see the module doc for every choice)."""
    logger = process_logger(trt)
    builder = trt.Builder(logger)
    dla = req.dla_core is not None
    if dla:
        _check_dla_core(builder, req, board)
    onnx = req.onnx
    if req.precision == "int8" and req.int8_mode == "placeholder-qdq":
        onnx = qdq_path if qdq_path is not None else onnx
    network, _parser = _parse(trt, builder, logger, req, board, onnx)
    layer_names = [str(network.get_layer(i).name) for i in range(network.num_layers)]
    config = _configure(trt, builder, req, dla)
    _add_profile(builder, config, network, req, dla, resolution, input_shape)
    if req.precision == "int8" and req.int8_mode == "placeholder-ranges":
        placeholder_ranges(trt, network)
    cache_obj = _load_timing_cache(config, timing_cache)

    mark = logger.heard.mark()
    t0 = time.perf_counter()
    serialized = builder.build_serialized_network(network, config)
    seconds = time.perf_counter() - t0
    log = logger.heard.since(mark, 3)
    if serialized is None:
        hint = "dla_core=None (GPU), " if dla else ""
        raise EngineError(
            f"{req.name}: TensorRT {trt.__version__} could not build an engine from "
            f"{str(req.onnx)!r} on {board.label}; try {hint}a larger workspace= (now "
            f"{req.workspace if req.workspace is not None else 'the default'}), another precision "
            f"than {req.precision}, or a smaller batch than {req.batch}" + quote(logger.heard.since(mark, 1))
        )
    placement = _dla_placement(log, layer_names, req, board, logger, mark) if dla else None
    if cache_obj is not None and timing_cache is not None:
        try:
            write_atomic(timing_cache, bytes(config.get_timing_cache().serialize()))
        except OSError:
            pass  # the timing cache only speeds up the next build
    return Built(bytes(serialized), seconds, placement, layer_names, log)
