"""FAKE ``tensorrt``, exact to one TensorRT release at a time, for testing the backend without a GPU.

``install(monkeypatch, version)`` puts a fresh ``tensorrt`` module in ``sys.modules`` holding the
classes and enums this fake models, gated by ``tensorrt_api/tensorrt-<version>.json``: the members
that release's Python bindings define (see tensorrt_api/README.md for how they were derived from
NVIDIA/TensorRT's sources at the release tag; docs.nvidia.com's Python API pages for 8.2.1,
8.5.2, 10.3.0, 10.13.3 and 11.1.0 are generated from them). Any other member raises
AttributeError, as the real module does; a deprecated member warns DeprecationWarning with the
binding's own message; a member the release has but this fake does not model raises
NotImplementedError, so a test never passes on behaviour nobody wrote down.

Behaviour, where the backend depends on it:
- The "parser" reads the ONNX with onnx: inputs with -1 for dynamic dimensions, one layer per node
  named like TensorRT names them, ops in ``UNSUPPORTED`` rejected with TensorRT 8's parser message.
- The "builder" records each config in ``LOG`` and writes a JSON "plan" with the version and the
  compute capability it was built for; DLA builds log the "Layers running on DLA/GPU" sections in
  the format of samples/sampleCudla/README.md (NVIDIA/TensorRT), with layers of ops in
  ``DLA_UNSUPPORTED``, and every layer when a profile is not static, on the GPU.
- The "runtime" refuses plans the way TensorRT does, logging the messages recorded in public
  reports: foreign bytes (NVIDIA/TensorRT#2195), another TensorRT version
  (SthPhoenix/InsightFace-REST#84), another GPU (wayyeah/PointPillarTensorRT-ROS#7).
- Output shapes follow the input shapes set on a context: the batch, and each dynamic dimension
  named (``dim_param``) like a dimension of an input, as an exporter's dynamic axes name a
  detector's height and width on its input and on its map (TensorRT infers them through the
  layers; this fake only by name, and refuses outputs it cannot size).
- The "kernel" writes each sample's input mean into its outputs (so data going through the buffers
  is visible) and costs ``COMPUTE_MS_PER_ITEM`` of fake_pycuda's GPU clock.
"""

import json
import sys
import types
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from . import fake_pycuda

API_DIR = Path(__file__).parent / "tensorrt_api"
VERSIONS = ("8.2.1", "8.5.2", "10.3.0", "10.13.3")
UNSUPPORTED = {"FancyOp"}
#: Ops the fake DLA cannot run (TensorRT's DLA supports convolutions, pooling, activations,
#: element-wise and a few more; softmax over channels and gathers are GPU-only in its docs).
DLA_UNSUPPORTED = {"Softmax", "Gather", "TopK"}
COMPUTE_MS_PER_ITEM = 2.0
#: Set by tests: the builder fails (returns None) after logging an error.
FAIL_BUILD = False
#: Total global memory of the fake GPU (bytes): TensorRT 8.3+'s default workspace limit.
DEVICE_MEMORY = 8 << 30
#: DLA cores the fake Builder/Runtime report.
DLA_CORES = 0
#: When True the real pycuda is in use (a GPU machine): the "kernel" is a device-to-device copy.
REAL_CUDA = False
LOG: Dict[str, Any] = {}
API: Dict[str, Any] = {}
VERSION = ""


def _major_minor(v: str):
    parts = [int(x) for x in v.split(".")[:2]]
    return parts[0], parts[1]


def load_api(version: str) -> Dict[str, Any]:
    return json.loads((API_DIR / f"tensorrt-{version}.json").read_text())


# -- the gate ------------------------------------------------------------------------------------
class _Gated:
    """Members outside the release's table raise AttributeError; deprecated ones warn."""

    _binding = ""

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("_"):
            return object.__getattribute__(self, name)
        _check(type(self)._binding, name)
        try:
            return object.__getattribute__(self, name)
        except AttributeError:
            raise NotImplementedError(f"fake tensorrt {VERSION}: {type(self)._binding}.{name} exists in "
                                      "this release but the fake does not model it") from None

    def __setattr__(self, name: str, value: Any) -> None:
        if not name.startswith("_"):
            _check(type(self)._binding, name)
        object.__setattr__(self, name, value)


def _check(binding: str, name: str) -> None:
    members = API["classes"].get(binding)
    if members is None:
        return  # a class the tables do not cover (ILogger, Logger): modelled as documented
    if name not in members:
        raise AttributeError(f"'tensorrt.{binding}' object has no attribute '{name}' (TensorRT {VERSION})")
    message = members[name]
    if message:
        warnings.warn(message, DeprecationWarning, stacklevel=3)


class _EnumValue:
    def __init__(self, enum: str, name: str, value: int) -> None:
        self.enum, self.name, self.value = enum, name, value

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, _EnumValue) and (other.enum, other.name) == (self.enum, self.name)

    def __hash__(self) -> int:
        return hash((self.enum, self.name))

    def __repr__(self) -> str:
        return f"<{self.enum}.{self.name}: {self.value}>"


#: Values the backend relies on (from NvInfer.h): NetworkDefinitionCreationFlag::kEXPLICIT_BATCH = 0.
_KNOWN_VALUES = {("NetworkDefinitionCreationFlag", "EXPLICIT_BATCH"): 0}


def _enum(name: str) -> Optional[type]:
    members = API["classes"].get(name)
    if members is None:
        return None
    attrs = {}
    for i, m in enumerate(sorted(members)):
        attrs[m] = _EnumValue(name, m, _KNOWN_VALUES.get((name, m), 100 + i))
    return type(name, (), attrs)


# -- logging -------------------------------------------------------------------------------------
class _Severity:
    INTERNAL_ERROR = _EnumValue("Severity", "INTERNAL_ERROR", 0)
    ERROR = _EnumValue("Severity", "ERROR", 1)
    WARNING = _EnumValue("Severity", "WARNING", 2)
    INFO = _EnumValue("Severity", "INFO", 3)
    VERBOSE = _EnumValue("Severity", "VERBOSE", 4)


class ILogger:
    """pyCore.cpp: ``py::class_<ILogger, PyLogger>`` with ``Severity`` exported into its scope."""

    Severity = _Severity
    INTERNAL_ERROR, ERROR, WARNING, INFO, VERBOSE = (_Severity.INTERNAL_ERROR, _Severity.ERROR,
                                                      _Severity.WARNING, _Severity.INFO, _Severity.VERBOSE)

    def __init__(self) -> None:
        pass

    def log(self, severity: Any, msg: str) -> None:
        raise NotImplementedError  # pure virtual in the binding


class Logger(ILogger):
    def __init__(self, min_severity: Any = _Severity.WARNING) -> None:
        super().__init__()
        self.min_severity = min_severity

    def log(self, severity: Any, msg: str) -> None:
        pass


def _emit(logger: Any, severity: Any, msg: str) -> None:
    # the one logger TensorRT 8.0-8.2 keep per process is the first one they were given
    target = LOG["first_logger"] if _major_minor(VERSION) <= (8, 2) and LOG.get("first_logger") else logger
    LOG.setdefault("messages", []).append((int(severity), msg))
    target.log(severity, msg)


def _remember_logger(logger: Any) -> None:
    LOG.setdefault("first_logger", logger)


# -- network and parser --------------------------------------------------------------------------
_LAYER_TYPES = {"Conv": "CONVOLUTION", "ConvTranspose": "DECONVOLUTION", "MatMul": "MATRIX_MULTIPLY",
                "Gemm": "MATRIX_MULTIPLY", "Relu": "ACTIVATION", "Sigmoid": "ACTIVATION", "Add": "ELEMENTWISE",
                "Mul": "ELEMENTWISE", "MaxPool": "POOLING", "AveragePool": "POOLING",
                "GlobalAveragePool": "REDUCE", "Concat": "CONCATENATION", "Softmax": "SOFTMAX",
                "QuantizeLinear": "QUANTIZE", "DequantizeLinear": "DEQUANTIZE", "Flatten": "SHUFFLE",
                "Reshape": "SHUFFLE", "Gather": "GATHER"}
_FROM_ONNX = {1: "FLOAT", 10: "HALF", 3: "INT8", 6: "INT32", 7: "INT32"}


class ITensor(_Gated):
    _binding = "ITensor"

    def __init__(self, name: str, shape, dtype: str = "FLOAT") -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_shape", tuple(shape))
        object.__setattr__(self, "_range", None)
        object.__setattr__(self, "_dim_names", [""] * len(tuple(shape)))

    name = property(lambda self: self._name)
    shape = property(lambda self: self._shape)

    @property
    def dynamic_range(self):
        return self._range

    def set_dynamic_range(self, lo: float, hi: float) -> bool:
        object.__setattr__(self, "_range", (lo, hi))
        LOG["ranges"] += 1
        return True


class ILayer(_Gated):
    _binding = "ILayer"

    def __init__(self, name: str, op: str, inputs: List[ITensor], outputs: List[ITensor]) -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_op", op)
        object.__setattr__(self, "_inputs", inputs)
        object.__setattr__(self, "_outputs", outputs)

    name = property(lambda self: self._name)
    num_inputs = property(lambda self: len(self._inputs))
    num_outputs = property(lambda self: len(self._outputs))

    @property
    def type(self):
        return getattr(_MODULE.LayerType, _LAYER_TYPES.get(self._op, "IDENTITY"))

    def get_input(self, i: int) -> ITensor:
        return self._inputs[i]

    def get_output(self, i: int) -> ITensor:
        return self._outputs[i]


class INetworkDefinition(_Gated):
    _binding = "INetworkDefinition"

    def __init__(self, flags: int) -> None:
        object.__setattr__(self, "_flags", flags)
        object.__setattr__(self, "_inputs", [])
        object.__setattr__(self, "_outputs", [])
        object.__setattr__(self, "_layers", [])

    num_inputs = property(lambda self: len(self._inputs))
    num_layers = property(lambda self: len(self._layers))
    num_outputs = property(lambda self: len(self._outputs))

    def get_input(self, i: int) -> ITensor:
        return self._inputs[i]

    def get_layer(self, i: int) -> ILayer:
        return self._layers[i]

    def get_output(self, i: int) -> ITensor:
        return self._outputs[i]


class ParserError(_Gated):
    _binding = "ParserError"

    def __init__(self, desc: str, node: int = -1) -> None:
        object.__setattr__(self, "_desc", desc)
        object.__setattr__(self, "_node", node)

    def desc(self) -> str:
        return self._desc

    def node(self) -> int:
        return self._node

    def __str__(self) -> str:
        return f"In node {self._node}: {self._desc}"


def _dims(vi) -> List[int]:
    return [d.dim_value if d.HasField("dim_value") else -1 for d in vi.type.tensor_type.shape.dim]


def _dim_names(vi) -> List[str]:
    return [d.dim_param if not d.HasField("dim_value") else "" for d in vi.type.tensor_type.shape.dim]


class OnnxParser(_Gated):
    _binding = "OnnxParser"

    def __init__(self, network: INetworkDefinition, logger) -> None:
        object.__setattr__(self, "_network", network)
        object.__setattr__(self, "_logger", logger)
        object.__setattr__(self, "_errors", [])

    @property
    def num_errors(self) -> int:
        return len(self._errors)

    def get_error(self, i: int) -> ParserError:
        return self._errors[i]

    def parse(self, data: bytes) -> bool:
        import onnx

        try:
            model = onnx.load_from_string(bytes(data))
        except Exception as exc:
            self._errors.append(ParserError(f"Failed to parse ONNX model: {exc}"))
            return False
        return self._load(model)

    def parse_from_file(self, path: str) -> bool:
        import onnx

        try:
            model = onnx.load(path)
        except Exception as exc:
            self._errors.append(ParserError(f"Failed to parse ONNX model: {exc}"))
            return False
        LOG["parsed_paths"].append(path)
        return self._load(model)

    def _load(self, model) -> bool:
        for n, node in enumerate(model.graph.node):
            if node.op_type in UNSUPPORTED:
                self._errors.append(ParserError(
                    f"No importer registered for op: {node.op_type}. Attempting to import as plugin.", n))
        if self._errors:
            return False
        net = self._network
        inits = {i.name for i in model.graph.initializer}
        tensors: Dict[str, ITensor] = {}
        for vi in model.graph.input:
            if vi.name not in inits:
                t = ITensor(vi.name, _dims(vi), _FROM_ONNX.get(vi.type.tensor_type.elem_type, "FLOAT"))
                object.__setattr__(t, "_dim_names", _dim_names(vi))
                tensors[vi.name] = t
                net._inputs.append(t)
        for n, node in enumerate(model.graph.node):
            ins = [tensors.setdefault(x, ITensor(x, ())) for x in node.input if x and x not in inits]
            outs = [tensors.setdefault(x, ITensor(x, ())) for x in node.output]
            name = node.name or f"(Unnamed Layer* {n}) [{node.op_type}]"
            net._layers.append(ILayer(name, node.op_type, ins, outs))
        for vi in model.graph.output:
            t = tensors.get(vi.name) or ITensor(vi.name, _dims(vi))
            object.__setattr__(t, "_shape", tuple(_dims(vi)))
            object.__setattr__(t, "_dim_names", _dim_names(vi))
            net._outputs.append(t)
        return True


# -- builder -------------------------------------------------------------------------------------
class IOptimizationProfile(_Gated):
    _binding = "IOptimizationProfile"

    def __init__(self) -> None:
        object.__setattr__(self, "_shapes", {})

    def set_shape(self, input: str, min, opt, max) -> None:  # noqa: A002 - the binding's names
        self._shapes[input] = (tuple(min), tuple(opt), tuple(max))

    def get_shape(self, input: str):
        return self._shapes[input]


class ITimingCache(_Gated):
    _binding = "ITimingCache"

    def __init__(self, data: bytes) -> None:
        object.__setattr__(self, "_data", bytes(data) or b"fake-timing-cache")

    def serialize(self):
        return IHostMemory(self._data)


class IHostMemory(_Gated):
    _binding = "IHostMemory"

    def __init__(self, data: bytes) -> None:
        object.__setattr__(self, "_data", bytes(data))

    nbytes = property(lambda self: len(self._data))

    def __bytes__(self) -> bytes:
        return self._data


class IBuilderConfig(_Gated):
    _binding = "IBuilderConfig"

    def __init__(self) -> None:
        m = _MODULE
        object.__setattr__(self, "_flags", {m.BuilderFlag.TF32} if hasattr(m.BuilderFlag, "TF32") else set())
        object.__setattr__(self, "_pools", {})
        object.__setattr__(self, "_profiles", [])
        object.__setattr__(self, "_timing", None)
        object.__setattr__(self, "_loaded_timing", None)
        object.__setattr__(self, "_device", m.DeviceType.GPU)
        object.__setattr__(self, "_dla", -1)
        # NvInfer.h, getMaxWorkspaceSize: at 8.2.1 "By default the workspace size is 0, which means
        # there is no temporary memory"; at 8.5.2 (8.3 added memory pools) "the size of total
        # global memory in the device"; 10.0 removed the property
        object.__setattr__(self, "_workspace", 0 if _major_minor(VERSION) < (8, 3) else DEVICE_MEMORY)
        # IBuilderConfig::getProfilingVerbosity (NvInfer.h): "the default is kLAYER_NAMES_ONLY"
        object.__setattr__(self, "_verbosity", m.ProfilingVerbosity.LAYER_NAMES_ONLY)

    # properties in the binding
    default_device_type = property(lambda self: self._device,
                                   lambda self, v: object.__setattr__(self, "_device", v))
    DLA_core = property(lambda self: self._dla, lambda self, v: object.__setattr__(self, "_dla", int(v)))
    max_workspace_size = property(lambda self: self._workspace,
                                  lambda self, v: object.__setattr__(self, "_workspace", int(v)))
    int8_calibrator = property(lambda self: None, lambda self, v: None)
    profiling_verbosity = property(lambda self: self._verbosity,
                                   lambda self, v: object.__setattr__(self, "_verbosity", v))

    def set_memory_pool_limit(self, pool, pool_size: int) -> None:
        self._pools[pool.name] = int(pool_size)

    def set_flag(self, flag) -> None:
        self._flags.add(flag)

    def clear_flag(self, flag) -> None:
        self._flags.discard(flag)

    def get_flag(self, flag) -> bool:
        return flag in self._flags

    def add_optimization_profile(self, profile: IOptimizationProfile) -> int:
        self._profiles.append(profile)
        return len(self._profiles) - 1

    def create_timing_cache(self, serialized_timing_cache: bytes) -> ITimingCache:
        object.__setattr__(self, "_loaded_timing", bytes(serialized_timing_cache))
        return ITimingCache(serialized_timing_cache)

    def set_timing_cache(self, cache: ITimingCache, ignore_mismatch: bool) -> bool:
        object.__setattr__(self, "_timing", cache)
        return True

    def get_timing_cache(self) -> ITimingCache:
        return self._timing


def _device_cc() -> str:
    major, minor = fake_pycuda.Device.CC
    return f"{major}.{minor}"


class Builder(_Gated):
    _binding = "Builder"

    def __init__(self, logger) -> None:
        _remember_logger(logger)
        object.__setattr__(self, "_logger", logger)
        LOG["builders"] += 1

    num_DLA_cores = property(lambda self: DLA_CORES)
    platform_has_fast_int8 = property(lambda self: _device_cc() not in ("5.3", "6.2"))

    def create_network(self, flags: int = 0) -> INetworkDefinition:
        return INetworkDefinition(flags)

    def create_builder_config(self) -> IBuilderConfig:
        return IBuilderConfig()

    def create_optimization_profile(self) -> IOptimizationProfile:
        return IOptimizationProfile()

    def build_serialized_network(self, network: INetworkDefinition, config: IBuilderConfig):
        m = _MODULE
        LOG["builds"] += 1
        LOG["configs"].append(config)
        LOG["network_flags"] = network._flags
        if FAIL_BUILD:
            _emit(self._logger, _Severity.ERROR, "fake: no implementation obeys reformatting-free rules")
            return None
        tensors = []
        static = True
        for t in network._inputs:
            prof, profs = None, None
            if any(d < 0 for d in t.shape):
                profs = [p._shapes[t.name] for p in config._profiles]
                prof = profs[0]
                static = static and prof[0] == prof[2]
            tensors.append({"name": t.name, "mode": "INPUT", "dtype": "FLOAT", "shape": list(t.shape),
                            "profile": prof, "profiles": profs, "dim_names": list(t._dim_names)})
        for t in network._outputs:
            tensors.append({"name": t.name, "mode": "OUTPUT", "dtype": "FLOAT", "shape": list(t.shape),
                            "dim_names": list(t._dim_names)})
        on_dla = config._device == m.DeviceType.DLA
        gpu_layers = [lay for lay in network._layers if not on_dla or not static or lay._op in DLA_UNSUPPORTED]
        if on_dla:
            dla_layers = [lay for lay in network._layers if lay not in gpu_layers]
            if not dla_layers:
                _emit(self._logger, _Severity.WARNING,
                      "setDefaultDeviceType was called but no layer in the network can run on DLA.")
            _placement_log(self._logger, dla_layers, gpu_layers)
        qdq = any(lay._op in ("QuantizeLinear", "DequantizeLinear") for lay in network._layers)
        plan = {"fake_plan": True, "version": VERSION, "cc": _device_cc(), "tensors": tensors,
                "profiles": max(1, len(config._profiles)),
                "flags": sorted(f.name for f in config._flags), "dla_core": config._dla if on_dla else -1,
                "layers": [lay.name for lay in network._layers], "qdq": qdq,
                "ops": [lay._op for lay in network._layers], "verbosity": config._verbosity.name,
                "gpu_layers": [lay.name for lay in gpu_layers]}
        return IHostMemory(b"FAKEPLAN" + json.dumps(plan).encode())


def _placement_log(logger, dla_layers, gpu_layers) -> None:
    """The DLA/GPU placement section of the build log in this release's layout: 8.x's (recorded
    in tests/data/tensorrt_logs/trt8_*.log: dashed headings, one ``[DlaLayer]`` line per subgraph,
    no trailing commas) or 10.x's (sampleCudla's README at v10.15)."""
    if int(VERSION.split(".")[0]) < 10:
        _emit(logger, _Severity.INFO, "---------- Layers Running on DLA ---------- ")
        if dla_layers:
            _emit(logger, _Severity.INFO, f"[DlaLayer] {{ForeignNode[{dla_layers[0].name}...{dla_layers[-1].name}]}}")
        _emit(logger, _Severity.INFO, "---------- Layers Running on GPU ----------")
        for lay in gpu_layers:
            _emit(logger, _Severity.INFO, f"[GpuLayer] {_LAYER_TYPES.get(lay._op, 'IDENTITY')}: {lay.name}")
        return
    _emit(logger, _Severity.INFO, "")
    _emit(logger, _Severity.INFO, "--------------- Layers running on DLA:")
    if dla_layers:
        _emit(logger, _Severity.INFO, f"[DlaLayer] {{ForeignNode[{dla_layers[0].name}...{dla_layers[-1].name}]}},")
    _emit(logger, _Severity.INFO, "--------------- Layers running on GPU:")
    for lay in gpu_layers:
        _emit(logger, _Severity.INFO, f"[GpuLayer] {_LAYER_TYPES.get(lay._op, 'IDENTITY')}: {lay.name},")


# -- runtime -------------------------------------------------------------------------------------
class Runtime(_Gated):
    _binding = "Runtime"

    def __init__(self, logger) -> None:
        _remember_logger(logger)
        object.__setattr__(self, "_logger", logger)
        object.__setattr__(self, "_dla", -1)
        LOG["runtimes"].append(self)

    DLA_core = property(lambda self: self._dla, lambda self, v: object.__setattr__(self, "_dla", int(v)))
    num_DLA_cores = property(lambda self: DLA_CORES)

    def deserialize_cuda_engine(self, serialized_engine: bytes):
        data = bytes(serialized_engine)
        if not data.startswith(b"FAKEPLAN"):
            # NVIDIA/TensorRT#2195 (bytes that are no plan of this TensorRT)
            _emit(self._logger, _Severity.ERROR, "1: [stdArchiveReader.cpp::StdArchiveReader::35] Error Code 1: "
                  "Serialization (Serialization assertion safeVersionRead == safeSerializationVersion "
                  "failed.Version tag does not match. Note: Current Version: 0, Serialized Engine Version: 96)")
            _emit(self._logger, _Severity.ERROR, "4: [runtime.cpp::deserializeCudaEngine::50] Error Code 4: "
                  "Internal Error (Engine deserialization failed.)")
            return None
        try:
            plan = json.loads(data[len(b"FAKEPLAN"):].decode())
        except ValueError:
            _emit(self._logger, _Severity.ERROR, "4: [runtime.cpp::deserializeCudaEngine::50] Error Code 4: "
                  "Internal Error (Engine deserialization failed.)")
            return None
        if plan["version"] != VERSION:  # SthPhoenix/InsightFace-REST#84
            _emit(self._logger, _Severity.ERROR, f"6: The engine plan file is not compatible with this version "
                  f"of TensorRT, expecting library version {VERSION} got {plan['version']}, please rebuild.")
            return None
        if plan["cc"] != _device_cc():  # wayyeah/PointPillarTensorRT-ROS#7
            _emit(self._logger, _Severity.ERROR, f"6: The engine plan file is generated on an incompatible "
                  f"device, expecting compute {plan['cc']} got compute {_device_cc()}, please rebuild.")
            return None
        return ICudaEngine(plan)


#: "Format/Datatype" of a layer's output in the engine inspector's DETAILED JSON, per the precision
#: the build's flags allow: the INT8 text is the Developer Guide's example (Engine Inspector);
#: the others follow its wording ("Row major linear FP32 format" is trtexec's name for kLINEAR FP32)
_FORMATS = {"INT8": "Thirty-two wide channel vectorized row major Int8 format.",
            "FP16": "Channel major FP16 format where channel % 8 == 0",
            "FP32": "Row major linear FP32 format"}
#: ParameterType of the inspector's layers, per ONNX op (the builder's own LayerType names)
_PARAMETER_TYPES = {"Conv": "Convolution", "ConvTranspose": "Deconvolution", "MatMul": "MatrixMultiply",
                    "Gemm": "MatrixMultiply", "Relu": "Activation", "Sigmoid": "Activation",
                    "Add": "ElementWise", "Mul": "ElementWise", "MaxPool": "Pooling",
                    "AveragePool": "Pooling", "GlobalAveragePool": "Reduce", "Softmax": "SoftMax",
                    "Concat": "Concatenation", "Reshape": "Shuffle", "Flatten": "Shuffle", "Transpose": "Shuffle"}


def _plan_precision(plan: dict) -> str:
    flags = set(plan.get("flags") or ())
    return "INT8" if "INT8" in flags else "FP16" if "FP16" in flags else "FP32"


def _inspected_layers(plan: dict, context: Any) -> List[Any]:
    """The engine's layers as the inspector describes them. DETAILED: one object per layer in the
    Developer Guide's layout (Name, LayerType, Inputs/Outputs with Dimensions and, once an
    execution context with its input shapes is set, Format/Datatype: "when the engine is built
    with dynamic shapes [...] the tensor format information is not shown"), ParameterType,
    TacticName, TacticValue; an engine whose inputs TensorRT takes in FP32 but runs in FP16/INT8
    starts with the reformat it inserts ("Reformatting CopyNode for Input Tensor 0 to <layer>").
    Otherwise (LAYER_NAMES_ONLY, the default) the layer names alone, DLA subgraphs as one
    ForeignNode."""
    gpu = set(plan["gpu_layers"])
    if plan.get("verbosity") != "DETAILED":
        dla = [n for n in plan["layers"] if n not in gpu]
        return ([f"{{ForeignNode[{dla[0]}...{dla[-1]}]}}"] if dla else []) + sorted(gpu)
    precision = _plan_precision(plan)
    first_in = next(t for t in plan["tensors"] if t["mode"] == "INPUT")
    shape = list(context._shapes.get(first_in["name"], first_in["shape"])) if context is not None \
        else list(first_in["shape"])

    def tensor(name: str, fmt: str) -> Dict[str, Any]:
        d: Dict[str, Any] = {"Name": name, "Dimensions": shape}
        if context is not None:
            d["Format/Datatype"] = fmt
        return d

    out: List[Any] = []
    layers = [(n, op) for n, op in zip(plan["layers"], plan.get("ops") or []) if n in gpu]
    if precision != "FP32" and layers:
        out.append({"Name": f"Reformatting CopyNode for Input Tensor 0 to {layers[0][0]}", "LayerType": "Reformat",
                    "Inputs": [tensor(first_in["name"], _FORMATS["FP32"])],
                    "Outputs": [tensor(f"{first_in['name']} copy", _FORMATS[precision])],
                    "ParameterType": "Reformat", "Origin": "REFORMAT", "TacticValue": "0x0000000000000000"})
    for i, (name, op) in enumerate(layers):
        out.append({"Name": name, "LayerType": "CaskConvolution" if op == "Conv" else _PARAMETER_TYPES.get(op, op),
                    "Inputs": [tensor(f"{name}_in", _FORMATS[precision])],
                    "Outputs": [tensor(f"{name}_out", _FORMATS[precision])],
                    "ParameterType": _PARAMETER_TYPES.get(op, op),
                    "TacticName": f"fake_{precision.lower()}_{op.lower()}_kernel" if op == "Conv" else "",
                    "TacticValue": f"0x{i + 1:016x}"})
    return out


class EngineInspector(_Gated):
    _binding = "EngineInspector"

    def __init__(self, engine: "ICudaEngine") -> None:
        object.__setattr__(self, "_engine", engine)
        object.__setattr__(self, "_context", None)

    execution_context = property(lambda self: self._context,
                                 lambda self, v: object.__setattr__(self, "_context", v))

    def get_engine_information(self, format) -> str:  # noqa: A002 - the binding's name
        plan = self._engine._plan
        return json.dumps({"Layers": _inspected_layers(plan, self._context),
                           "Bindings": [t["name"] for t in plan["tensors"]]})


class IProfiler:
    """The binding's trampoline class (pyCore.cpp: ``py::class_<IProfiler, PyProfiler>`` with
    ``py::init<>()`` and ``report_layer_time``, pure virtual: a subclass overrides it)."""

    _binding = "IProfiler"

    def __init__(self) -> None:
        pass

    def report_layer_time(self, layer_name: str, ms: float) -> None:
        raise RuntimeError('Tried to call pure virtual function "IProfiler::report_layer_time"')


class _InvalidDims:
    """A ``Dims`` with ``nbDims == -1``: its ``__getitem__`` has no valid index, so iterating it
    yields nothing, and ``len()`` of it fails as CPython fails a negative ``__len__``."""

    def __len__(self) -> int:
        return -1

    def __getitem__(self, i: int) -> int:
        raise IndexError(i)


class ICudaEngine(_Gated):
    _binding = "ICudaEngine"

    def __init__(self, plan: dict) -> None:
        object.__setattr__(self, "_plan", plan)
        object.__setattr__(self, "_tensors", plan["tensors"])

    device_memory_size = property(lambda self: 1 << 20)
    device_memory_size_v2 = property(lambda self: 1 << 20)
    num_io_tensors = property(lambda self: len(self._tensors))
    # NvInferRuntime.h at 8.2.1, getNbBindings: "There are separate binding indices for each
    # optimization profile [...] the first getNbBindings() / K bindings are used by profile number
    # 0, the following getNbBindings() / K bindings are used by profile number 1 etc."
    num_bindings = property(lambda self: len(self._tensors) * self._plan.get("profiles", 1))
    num_optimization_profiles = property(lambda self: self._plan.get("profiles", 1))
    num_layers = property(lambda self: len(self._plan["layers"]))
    profiling_verbosity = property(lambda self: getattr(_MODULE.ProfilingVerbosity,
                                                        self._plan.get("verbosity") or "LAYER_NAMES_ONLY"))

    def _t(self, name: str) -> dict:
        return next(t for t in self._tensors if t["name"] == name)

    def _max(self, t) -> tuple:
        return tuple(t["profile"][2]) if t.get("profile") else tuple(t["shape"])

    def _min(self, t) -> tuple:
        return tuple(t["profile"][0]) if t.get("profile") else tuple(t["shape"])

    # name-based API (8.5+)
    def get_tensor_name(self, index: int) -> str:
        return self._tensors[index]["name"]

    def get_tensor_mode(self, name: str):
        return getattr(_MODULE.TensorIOMode, self._t(name)["mode"])

    def get_tensor_dtype(self, name: str):
        return getattr(_MODULE.DataType, self._t(name)["dtype"])

    def get_tensor_shape(self, name: str) -> tuple:
        return tuple(self._t(name)["shape"])

    def get_tensor_profile_shape(self, name: str, profile_index: int):
        return [tuple(s) for s in self._profile_of(self._t(name), profile_index)]

    def _profile_of(self, t: dict, k: int) -> list:
        return (t.get("profiles") or [t["profile"]])[k]

    # binding-index API (8.2; deprecated in 8.5, removed in 10): one set of bindings per profile
    def _nth(self, index: int) -> dict:
        return self._tensors[index % len(self._tensors)]

    def get_binding_name(self, index: int) -> str:
        # getBindingName (8.2.1): "For optimization profiles with an index k > 0, the name is
        # mangled by appending " [profile k]""
        k = index // len(self._tensors)
        return self._nth(index)["name"] + (f" [profile {k}]" if k else "")

    def binding_is_input(self, index: int) -> bool:
        return self._nth(index)["mode"] == "INPUT"

    def get_binding_dtype(self, index: int):
        return getattr(_MODULE.DataType, self._nth(index)["dtype"])

    def get_binding_shape(self, index: int) -> tuple:
        return tuple(self._nth(index)["shape"])

    def get_profile_shape(self, profile_index: int, binding: int):
        # getProfileDimensions (NvInferRuntime.h at 8.2.1): the binding "must belong to the given
        # profile, or be between 0 and bindingsPerProfile-1"; else "Dims with nbDims=-1"
        per = len(self._tensors)
        if not (binding // per == profile_index or binding < per) or profile_index >= self.num_optimization_profiles:
            return [_InvalidDims()] * 3
        return [tuple(s) for s in self._profile_of(self._nth(binding), profile_index)]

    def create_execution_context(self):
        return IExecutionContext(self)

    def create_engine_inspector(self) -> EngineInspector:
        return EngineInspector(self)


class IExecutionContext(_Gated):
    _binding = "IExecutionContext"

    def __init__(self, engine: ICudaEngine) -> None:
        object.__setattr__(self, "_engine", engine)
        object.__setattr__(self, "_shapes", {})
        object.__setattr__(self, "_addresses", {})
        object.__setattr__(self, "_profiler", None)
        object.__setattr__(self, "_emits", True)
        object.__setattr__(self, "_timed", False)
        LOG["contexts"] += 1

    profiler = property(lambda self: self._profiler, lambda self, v: object.__setattr__(self, "_profiler", v))
    enqueue_emits_profile = property(lambda self: self._emits,
                                     lambda self, v: object.__setattr__(self, "_emits", bool(v)))

    def _layer_times(self) -> List[Any]:
        """(layer name, ms) of one inference: ``COMPUTE_MS_PER_ITEM`` per item, shared by the
        inspector's layers in proportion to their position (1, 2, 3...) so that shares differ."""
        names = [x if isinstance(x, str) else x["Name"] for x in _inspected_layers(self._engine._plan, self)]
        weights = list(range(1, len(names) + 1))
        total = COMPUTE_MS_PER_ITEM * self._batch()
        return [(n, total * w / sum(weights)) for n, w in zip(names, weights)]

    def report_to_profiler(self) -> bool:
        # "calculate layer timing [...] for the previous inference launch" (the binding's doc)
        if self._profiler is None or not self._timed:
            return False
        for name, ms in self._layer_times():
            self._profiler.report_layer_time(name, ms)
        object.__setattr__(self, "_timed", False)
        return True

    def _set(self, t: dict, shape) -> bool:
        hi, lo = self._engine._max(t), self._engine._min(t)
        if len(shape) != len(hi) or any(s > h or s < m for s, h, m in zip(shape, hi, lo)):
            _emit(LOG["first_logger"], _Severity.ERROR,
                  f"3: [executionContext.cpp::setInputShape::2013] Error Code 3: API Usage Error (Parameter "
                  f"check failed, condition: engineDims.d[i] == dims.d[i] || ...: {t['name']} {tuple(shape)})")
            return False
        self._shapes[t["name"]] = tuple(shape)
        return True

    def _batch(self) -> int:
        ins = [self._shapes[t["name"]] for t in self._engine._tensors if t["mode"] == "INPUT"]
        return ins[0][0]

    def _out_shape(self, t: dict) -> tuple:
        shape = list(t["shape"])
        if shape and shape[0] < 0:
            shape[0] = self._batch()
        names = t.get("dim_names") or []
        for i in range(1, len(shape)):
            if shape[i] < 0:
                shape[i] = self._named_size(names[i] if i < len(names) else "", t["name"])
        return tuple(shape)

    def _named_size(self, name: str, output: str) -> int:
        for t in self._engine._tensors:
            if t["mode"] == "INPUT" and name and name in (t.get("dim_names") or []):
                return self._shapes[t["name"]][t["dim_names"].index(name)]
        raise NotImplementedError(f"fake tensorrt: output {output!r} has a dynamic dimension no input "
                                  "dimension names; the fake cannot size it")

    # name-based API
    def set_input_shape(self, name: str, shape) -> bool:
        return self._set(self._engine._t(name), shape)

    def get_tensor_shape(self, name: str) -> tuple:
        t = self._engine._t(name)
        return self._shapes[name] if t["mode"] == "INPUT" else self._out_shape(t)

    def set_tensor_address(self, name: str, memory: int) -> bool:
        self._addresses[name] = int(memory)
        return True

    def execute_async_v3(self, stream_handle: int) -> bool:
        LOG["enqueue_v3"] += 1
        object.__setattr__(self, "_timed", self._profiler is not None)
        if self._profiler is not None:
            LOG["profiled_enqueues"] += 1
            if self._emits:  # the enqueue reports the layer times itself
                self.report_to_profiler()
        fake_pycuda.STATE.trace.append(("enqueue", stream_handle))
        return self._compute(self._addresses, stream_handle)

    # binding-index API
    # a context starts on profile 0; a binding of another profile is "out of range for the
    # currently selected optimization profile" (setBindingDimensions, NvInferRuntime.h at 8.2.1)
    def set_binding_shape(self, binding: int, shape) -> bool:
        if binding >= len(self._engine._tensors):
            return False  # "false if an error occurs"; the message it logs is not recorded
        return self._set(self._engine._tensors[binding], shape)

    def get_binding_shape(self, binding: int):
        if binding >= len(self._engine._tensors):
            return _InvalidDims()
        t = self._engine._tensors[binding]
        return self._shapes[t["name"]] if t["mode"] == "INPUT" else self._out_shape(t)

    def execute_async_v2(self, bindings: List[int], stream_handle: int) -> bool:
        LOG["enqueue_v2"] += 1
        fake_pycuda.STATE.trace.append(("enqueue", stream_handle))
        ptrs = {t["name"]: bindings[i] for i, t in enumerate(self._engine._tensors)}
        return self._compute(ptrs, stream_handle)

    def _compute(self, ptrs: Dict[str, int], stream_handle: int) -> bool:
        if REAL_CUDA:
            return self._compute_on_gpu(ptrs, stream_handle)
        batch = self._batch()
        tensors = self._engine._tensors
        first_in = next(t for t in tensors if t["mode"] == "INPUT")
        in_shape = self._shapes[first_in["name"]]
        outs = [t for t in tensors if t["mode"] == "OUTPUT"]

        def kernel() -> None:
            raw = fake_pycuda.device_bytes(ptrs[first_in["name"]])
            x = raw[: int(np.prod(in_shape)) * 4].view(np.float32).reshape(batch, -1)
            means = x.mean(axis=1)
            for t in outs:
                shape = self._out_shape(t)
                out = np.repeat(means[:, None], int(np.prod(shape[1:])), axis=1).astype(np.float32)
                fake_pycuda.device_bytes(ptrs[t["name"]])[: out.nbytes] = out.reshape(-1).view(np.uint8)

        fake_pycuda.launch(stream_handle, kernel, COMPUTE_MS_PER_ITEM * batch)
        return True

    def _compute_on_gpu(self, ptrs: Dict[str, int], stream_handle: int) -> bool:
        import pycuda.driver as cuda

        tensors = self._engine._tensors
        first_in = next(t for t in tensors if t["mode"] == "INPUT")
        first_out = next(t for t in tensors if t["mode"] == "OUTPUT")
        n = min(int(np.prod(self._shapes[first_in["name"]])), int(np.prod(self._out_shape(first_out))))
        cuda.memcpy_dtod_async(ptrs[first_out["name"]], ptrs[first_in["name"]], n * 4,
                               _STREAMS.get(stream_handle))
        return True


_STREAMS: Dict[int, Any] = {}


# -- the module ----------------------------------------------------------------------------------
def nptype(trt_type):
    mapping = {"FLOAT": np.float32, "HALF": np.float16, "INT8": np.int8, "INT32": np.int32,
               "INT64": np.int64, "BOOL": np.bool_, "UINT8": np.uint8}
    if trt_type.name in mapping:
        return mapping[trt_type.name]
    raise TypeError("Could not resolve TensorRT datatype to an equivalent numpy datatype.")


def nptype_8(trt_type):
    """``nptype`` as TensorRT 8.2.1 and 8.5.2 ship it (python/packaging/tensorrt/__init__.py at the
    8.2.1 and 8.5.2 tags of NVIDIA/TensorRT): the table is built on every call with ``np.bool``,
    which numpy 1.24 removed (numpy 2.0 brought it back), so there it raises AttributeError for
    every type. 8.5.2 added ``uint8``; 8.5.3 changed ``np.bool`` to ``np.bool_``."""
    import numpy as np

    data_type = _MODULE.DataType
    mapping = {
        data_type.FLOAT: np.float32,
        data_type.HALF: np.float16,
        data_type.INT8: np.int8,
        data_type.INT32: np.int32,
        data_type.BOOL: np.bool,  # as at the tags; the fault modelled here
    }
    if VERSION == "8.5.2":
        mapping[data_type.UINT8] = np.uint8
    if trt_type in mapping:
        return mapping[trt_type]
    raise TypeError("Could not resolve TensorRT datatype to an equivalent numpy datatype.")


_CLASSES = (ITensor, ILayer, INetworkDefinition, ParserError, OnnxParser, IOptimizationProfile, ITimingCache,
            IHostMemory, IBuilderConfig, Builder, Runtime, EngineInspector, ICudaEngine, IExecutionContext,
            IProfiler)
_ENUMS = ("BuilderFlag", "NetworkDefinitionCreationFlag", "LayerType", "LayerInformationFormat", "MemoryPoolType",
          "DeviceType", "TensorIOMode", "DataType", "ProfilingVerbosity")
_MODULE: Any = None


def reset(version: str = "10.3.0") -> Any:
    """Make the ``tensorrt`` module of ``version`` (the one ``install`` puts in sys.modules)."""
    global API, VERSION, FAIL_BUILD, DLA_CORES, LOG, _MODULE
    API, VERSION, FAIL_BUILD, DLA_CORES = load_api(version), version, False, 0
    LOG = {"builds": 0, "builders": 0, "configs": [], "enqueue_v3": 0, "enqueue_v2": 0, "ranges": 0,
           "runtimes": [], "contexts": 0, "profiled_enqueues": 0, "parsed_paths": [], "messages": []}
    module = types.ModuleType("tensorrt")
    module.__doc__ = f"FAKE tensorrt {version} (tests/fakes/fake_tensorrt.py)"
    module.__version__ = version
    documented = set(API["module"])
    for cls in _CLASSES:
        if cls._binding in documented:
            setattr(module, cls.__name__, cls)
    for name in _ENUMS:
        enum = _enum(name)
        if enum is not None:
            setattr(module, name, enum)
    module.ILogger, module.Logger = ILogger, Logger
    module.nptype = nptype_8 if version in ("8.2.1", "8.5.2") else nptype

    def __getattr__(name: str) -> Any:
        if name in documented:
            raise NotImplementedError(f"fake tensorrt {version}: {name} exists in this release but the "
                                      "fake does not model it")
        raise AttributeError(f"module 'tensorrt' has no attribute '{name}' (TensorRT {version})")

    module.__getattr__ = __getattr__  # type: ignore[attr-defined]
    _MODULE = module
    return module


def install(monkeypatch, version: str = "10.3.0", real_pycuda: bool = False) -> Any:
    """Put a fake ``tensorrt`` of ``version`` (and unless ``real_pycuda`` a fake pycuda) in
    sys.modules for one test; returns the tensorrt module."""
    global REAL_CUDA
    fake_pycuda.reset()
    module = reset(version)
    REAL_CUDA = real_pycuda
    monkeypatch.setitem(sys.modules, "tensorrt", module)
    if not real_pycuda:
        package, driver = fake_pycuda.modules()
        monkeypatch.setitem(sys.modules, "pycuda", package)
        monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    return module


def messages(worst: int = 2) -> List[str]:
    return [m for s, m in LOG.get("messages", []) if s <= worst]


reset()
