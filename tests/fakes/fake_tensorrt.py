"""FAKE ``tensorrt`` module for testing the TensorRT backend's control flow without a GPU.

It mirrors the parts of TensorRT's Python API the backend uses, in two flavours chosen with
``configure``: ``api="v3"`` (TensorRT 10: name-based tensors, ``execute_async_v3``, no
EXPLICIT_BATCH flag) and ``api="v2"`` (JetPack 5's TensorRT 8: binding indices,
``execute_async_v2``). The "parser" reads the ONNX file with onnx and rejects operators listed in
``UNSUPPORTED``; the "plan" is JSON; the "kernel" writes each sample's input mean into its output,
so tests can see data go through the H2D copy, the enqueue and the D2H copy.
Every call the tests care about is recorded in ``LOG``.
"""

import json
import sys
from typing import Any, Dict, List

import numpy as np

from . import fake_pycuda

__version__ = "10.3.0"
API = "v3"
UNSUPPORTED = {"FancyOp"}
COMPUTE_MS_PER_ITEM = 2.0
#: When True, build_serialized_network fails (returns None) after logging an error.
FAIL_BUILD = False
#: When True the real pycuda is in use (a GPU test): the "kernel" is a device-to-device copy of
#: the first input into the first output, so data really goes through GPU memory.
REAL_CUDA = False
LOG: Dict[str, Any] = {}


def reset(version: str = "10.3.0", api: str = "v3") -> None:
    global __version__, API, FAIL_BUILD, LOG
    __version__, API, FAIL_BUILD = version, api, False
    LOG = {"builds": 0, "configs": [], "enqueue_v3": 0, "enqueue_v2": 0, "ranges": 0, "runtimes": []}
    _sync_flavour()


def _sync_flavour() -> None:
    if API == "v2":
        NetworkDefinitionCreationFlag.EXPLICIT_BATCH = 0
    elif hasattr(NetworkDefinitionCreationFlag, "EXPLICIT_BATCH"):
        del NetworkDefinitionCreationFlag.EXPLICIT_BATCH


def install(monkeypatch, version: str = "10.3.0", api: str = "v3", real_pycuda: bool = False) -> Any:
    """Put the fakes in sys.modules (``tensorrt``, and unless ``real_pycuda`` also ``pycuda`` and
    ``pycuda.driver``) for one test."""
    global REAL_CUDA
    fake_pycuda.reset()
    reset(version, api)
    REAL_CUDA = real_pycuda
    monkeypatch.setitem(sys.modules, "tensorrt", sys.modules[__name__])
    if not real_pycuda:
        package, driver = fake_pycuda.modules()
        monkeypatch.setitem(sys.modules, "pycuda", package)
        monkeypatch.setitem(sys.modules, "pycuda.driver", driver)
    return sys.modules[__name__]


# -- enums -----------------------------------------------------------------------------------------
class NetworkDefinitionCreationFlag:
    EXPLICIT_BATCH = 0


class MemoryPoolType:
    WORKSPACE = "WORKSPACE"


class BuilderFlag:
    FP16, INT8, TF32, GPU_FALLBACK = "FP16", "INT8", "TF32", "GPU_FALLBACK"


class DeviceType:
    GPU, DLA = "GPU", "DLA"


class TensorIOMode:
    INPUT, OUTPUT = "INPUT", "OUTPUT"


class DataType:
    FLOAT, HALF, INT8, INT32 = "FLOAT", "HALF", "INT8", "INT32"


_NP = {"FLOAT": np.float32, "HALF": np.float16, "INT8": np.int8, "INT32": np.int32}
_FROM_ONNX = {1: "FLOAT", 10: "HALF", 3: "INT8", 6: "INT32", 7: "INT32"}


def nptype(dtype: str):
    return _NP[dtype]


class ILogger:
    class Severity:
        INTERNAL_ERROR, ERROR, WARNING, INFO, VERBOSE = range(5)

    def __init__(self) -> None:
        pass


class Logger(ILogger):
    WARNING = ILogger.Severity.WARNING

    def __init__(self, level=None) -> None:
        super().__init__()

    def log(self, severity, msg) -> None:
        pass


# -- network and parser ----------------------------------------------------------------------------
class Tensor:
    def __init__(self, name: str, shape, dtype: str = "FLOAT") -> None:
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.dynamic_range = None

    def set_dynamic_range(self, lo: float, hi: float) -> bool:
        self.dynamic_range = (lo, hi)
        LOG["ranges"] += 1
        return True


class Layer:
    def __init__(self, outputs: List[Tensor]) -> None:
        self.outputs = outputs

    @property
    def num_outputs(self) -> int:
        return len(self.outputs)

    def get_output(self, i: int) -> Tensor:
        return self.outputs[i]


class Network:
    def __init__(self, flags: int) -> None:
        self.flags = flags
        self.inputs: List[Tensor] = []
        self.outputs: List[Tensor] = []
        self.layers: List[Layer] = []

    num_inputs = property(lambda self: len(self.inputs))
    num_layers = property(lambda self: len(self.layers))

    def get_input(self, i: int) -> Tensor:
        return self.inputs[i]

    def get_layer(self, i: int) -> Layer:
        return self.layers[i]


class ParserError:
    def __init__(self, desc: str, node: int = -1) -> None:
        self._desc, self._node = desc, node

    def desc(self) -> str:
        return self._desc

    def __str__(self) -> str:
        return f"In node {self._node}: {self._desc}"


def _dims(vi) -> List[int]:
    return [d.dim_value if d.HasField("dim_value") else -1 for d in vi.type.tensor_type.shape.dim]


class OnnxParser:
    def __init__(self, network: Network, logger) -> None:
        self.network, self.logger = network, logger
        self.errors: List[ParserError] = []

    @property
    def num_errors(self) -> int:
        return len(self.errors)

    def get_error(self, i: int) -> ParserError:
        return self.errors[i]

    def parse_from_file(self, path: str) -> bool:
        import onnx

        try:
            model = onnx.load(path)
        except Exception as exc:
            self.errors.append(ParserError(f"Failed to parse ONNX model: {exc}"))
            return False
        inits = {i.name for i in model.graph.initializer}
        for n, node in enumerate(model.graph.node):
            if node.op_type in UNSUPPORTED:
                self.errors.append(ParserError(
                    f"No importer registered for op: {node.op_type}. Attempting to import as plugin.", n))
        if self.errors:
            return False
        for vi in model.graph.input:
            if vi.name not in inits:
                elem = _FROM_ONNX.get(vi.type.tensor_type.elem_type, "FLOAT")
                self.network.inputs.append(Tensor(vi.name, _dims(vi), elem))
        for node in model.graph.node:
            self.network.layers.append(Layer([Tensor(o, ()) for o in node.output]))
        for vi in model.graph.output:
            self.network.outputs.append(Tensor(vi.name, _dims(vi)))
        return True


# -- builder ---------------------------------------------------------------------------------------
class OptimizationProfile:
    def __init__(self) -> None:
        self.shapes: Dict[str, tuple] = {}

    def set_shape(self, name: str, lo, opt, hi) -> None:
        self.shapes[name] = (tuple(lo), tuple(opt), tuple(hi))


class TimingCache:
    def __init__(self, data: bytes) -> None:
        self.data = bytes(data) or b"fake-timing-cache"

    def serialize(self) -> bytes:
        return self.data


class BuilderConfig:
    def __init__(self) -> None:
        self.flags = {BuilderFlag.TF32}  # as in TensorRT: TF32 on by default
        self.pools: Dict[str, int] = {}
        self.default_device_type = DeviceType.GPU
        self.DLA_core = -1
        self.profiles: List[OptimizationProfile] = []
        self.int8_calibrator = None
        self.timing_cache = None
        self.timing_cache_loaded = None

    def set_memory_pool_limit(self, pool: str, size: int) -> None:
        self.pools[pool] = size

    def set_flag(self, flag: str) -> None:
        self.flags.add(flag)

    def clear_flag(self, flag: str) -> None:
        self.flags.discard(flag)

    def add_optimization_profile(self, profile: OptimizationProfile) -> int:
        self.profiles.append(profile)
        return len(self.profiles) - 1

    def create_timing_cache(self, data: bytes) -> TimingCache:
        self.timing_cache_loaded = bytes(data)
        return TimingCache(data)

    def set_timing_cache(self, cache: TimingCache, ignore_mismatch: bool) -> bool:
        self.timing_cache = cache
        return True

    def get_timing_cache(self) -> TimingCache:
        return self.timing_cache


class Builder:
    def __init__(self, logger) -> None:
        self.logger = logger

    def create_network(self, flags: int = 0) -> Network:
        return Network(flags)

    def create_builder_config(self) -> BuilderConfig:
        return BuilderConfig()

    def create_optimization_profile(self) -> OptimizationProfile:
        return OptimizationProfile()

    def build_serialized_network(self, network: Network, config: BuilderConfig):
        LOG["builds"] += 1
        LOG["configs"].append(config)
        LOG["network_flags"] = network.flags
        if FAIL_BUILD:
            self.logger.log(ILogger.Severity.ERROR, "fake: no implementation obeys reformatting-free rules")
            return None
        tensors = []
        for t in network.inputs:
            prof = None
            if any(d < 0 for d in t.shape):
                prof = config.profiles[0].shapes[t.name]
            tensors.append({"name": t.name, "mode": "INPUT", "dtype": t.dtype, "shape": list(t.shape),
                            "profile": prof})
        for t in network.outputs:
            tensors.append({"name": t.name, "mode": "OUTPUT", "dtype": "FLOAT", "shape": list(t.shape)})
        plan = {"fake_plan": True, "version": __version__, "tensors": tensors,
                "flags": sorted(config.flags), "dla_core": config.DLA_core}
        return b"FAKEPLAN" + json.dumps(plan).encode()


# -- runtime ---------------------------------------------------------------------------------------
class Runtime:
    def __init__(self, logger) -> None:
        self.logger = logger
        self.DLA_core = -1
        LOG["runtimes"].append(self)

    def deserialize_cuda_engine(self, data: bytes):
        if not bytes(data).startswith(b"FAKEPLAN"):
            self.logger.log(ILogger.Severity.ERROR, "fake: Serialization assertion magicTagRead failed")
            return None
        try:
            plan = json.loads(bytes(data)[len(b"FAKEPLAN"):].decode())
        except ValueError:
            self.logger.log(ILogger.Severity.ERROR, "fake: plan is corrupt")
            return None
        return EngineV3(plan) if API == "v3" else EngineV2(plan)


class _EngineBase:
    def __init__(self, plan: dict) -> None:
        self.plan = plan
        self.tensors = plan["tensors"]
        self.device_memory_size = 1 << 20

    def _max(self, t) -> tuple:
        return tuple(t["profile"][2]) if t.get("profile") else tuple(t["shape"])


class EngineV3(_EngineBase):
    @property
    def num_io_tensors(self) -> int:
        return len(self.tensors)

    def _t(self, name: str) -> dict:
        return next(t for t in self.tensors if t["name"] == name)

    def get_tensor_name(self, i: int) -> str:
        return self.tensors[i]["name"]

    def get_tensor_mode(self, name: str) -> str:
        return self._t(name)["mode"]

    def get_tensor_dtype(self, name: str) -> str:
        return self._t(name)["dtype"]

    def get_tensor_shape(self, name: str) -> tuple:
        return tuple(self._t(name)["shape"])

    def get_tensor_profile_shape(self, name: str, profile: int):
        return [tuple(s) for s in self._t(name)["profile"]]

    def create_execution_context(self):
        return ContextV3(self)


class EngineV2(_EngineBase):
    @property
    def num_bindings(self) -> int:
        return len(self.tensors)

    def get_binding_name(self, i: int) -> str:
        return self.tensors[i]["name"]

    def binding_is_input(self, i: int) -> bool:
        return self.tensors[i]["mode"] == "INPUT"

    def get_binding_dtype(self, i: int) -> str:
        return self.tensors[i]["dtype"]

    def get_binding_shape(self, i: int) -> tuple:
        return tuple(self.tensors[i]["shape"])

    def get_profile_shape(self, profile: int, i: int):
        return [tuple(s) for s in self.tensors[i]["profile"]]

    def create_execution_context(self):
        return ContextV2(self)


class _ContextBase:
    def __init__(self, engine: _EngineBase) -> None:
        self.engine = engine
        self.shapes: Dict[str, tuple] = {}
        self.addresses: Dict[str, int] = {}

    def _set(self, t: dict, shape) -> bool:
        hi = self.engine._max(t)
        if len(shape) != len(hi) or any(s > h for s, h in zip(shape, hi)):
            return False
        self.shapes[t["name"]] = tuple(shape)
        return True

    def _batch(self) -> int:
        ins = [self.shapes[t["name"]] for t in self.engine.tensors if t["mode"] == "INPUT"]
        return ins[0][0]

    def _out_shape(self, t: dict) -> tuple:
        shape = list(t["shape"])
        if shape and shape[0] < 0:
            shape[0] = self._batch()
        return tuple(shape)

    def _compute(self, ptrs: Dict[str, int]) -> bool:
        if REAL_CUDA:
            return self._compute_on_gpu(ptrs)
        batch = self._batch()
        first_in = next(t for t in self.engine.tensors if t["mode"] == "INPUT")
        in_shape = self.shapes[first_in["name"]]
        raw = fake_pycuda.device_bytes(ptrs[first_in["name"]])
        x = raw[: int(np.prod(in_shape)) * 4].view(np.float32).reshape(batch, -1)
        means = x.mean(axis=1)
        for t in self.engine.tensors:
            if t["mode"] == "OUTPUT":
                shape = self._out_shape(t)
                out = np.repeat(means[:, None], int(np.prod(shape[1:])), axis=1).astype(np.float32)
                fake_pycuda.device_bytes(ptrs[t["name"]])[: out.nbytes] = out.reshape(-1).view(np.uint8)
        fake_pycuda.STATE.gpu_ms += COMPUTE_MS_PER_ITEM * batch
        return True


    def _compute_on_gpu(self, ptrs: Dict[str, int]) -> bool:
        import pycuda.driver as cuda

        first_in = next(t for t in self.engine.tensors if t["mode"] == "INPUT")
        first_out = next(t for t in self.engine.tensors if t["mode"] == "OUTPUT")
        n = min(int(np.prod(self.shapes[first_in["name"]])), int(np.prod(self._out_shape(first_out))))
        cuda.memcpy_dtod(ptrs[first_out["name"]], ptrs[first_in["name"]], n * 4)
        return True


class ContextV3(_ContextBase):
    def set_input_shape(self, name: str, shape) -> bool:
        return self._set(self.engine._t(name), shape)

    def get_tensor_shape(self, name: str) -> tuple:
        t = self.engine._t(name)
        return self.shapes[name] if t["mode"] == "INPUT" else self._out_shape(t)

    def set_tensor_address(self, name: str, ptr: int) -> bool:
        self.addresses[name] = int(ptr)
        return True

    def execute_async_v3(self, stream_handle: int) -> bool:
        LOG["enqueue_v3"] += 1
        return self._compute(self.addresses)


class ContextV2(_ContextBase):
    def set_binding_shape(self, i: int, shape) -> bool:
        return self._set(self.engine.tensors[i], shape)

    def get_binding_shape(self, i: int) -> tuple:
        t = self.engine.tensors[i]
        return self.shapes[t["name"]] if t["mode"] == "INPUT" else self._out_shape(t)

    def execute_async_v2(self, bindings: List[int], stream_handle: int) -> bool:
        LOG["enqueue_v2"] += 1
        ptrs = {t["name"]: bindings[i] for i, t in enumerate(self.engine.tensors)}
        return self._compute(ptrs)


reset()
