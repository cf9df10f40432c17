"""The TensorRT backend: build (or load from the plan cache) an engine from ONNX, run it with pycuda.

Build: explicit-batch network from TensorRT's ONNX parser; precision fp32 (TF32 off), tf32, fp16
or int8 (with fp16 fallback; without a calibrator the tensors get placeholder dynamic ranges, as
``trtexec --int8`` does: right for timing, meaningless for accuracy); a dynamic batch gets one
optimization profile (1, batch, batch); DLA core with GPU fallback; a workspace limit; a timing
cache shared by every build on this TensorRT and GPU.

Run: page-locked host buffers and device buffers sized for the profile's maximum batch, one
stream; per call H2D copies, enqueue, D2H copies, synchronize. CUDA events around the copies
and the enqueue give the device time of each call (``last_device_time``) and of its compute alone
(``last_compute_time``), so the harness can separate host-side overhead.

Both runtime APIs are supported and picked by capability, not version strings: the name-based
one (``num_io_tensors``, ``set_input_shape``, ``set_tensor_address``, ``execute_async_v3``;
TensorRT 8.5+ and 10.x) and the binding-index one (``num_bindings``, ``set_binding_shape``,
``execute_async_v2``; JetPack 5's older TensorRT 8).

The CUDA context is the device's primary context, retained in the process that opens the engine
(never inherited across fork: a pool worker opens its own engine).
"""

import os
import threading
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..errors import EngineError, ModelError
from ..units import parse_size
from . import cache as plan_cache
from .base import (
    Engine,
    TensorSpec,
    check_open_batch,
    check_precision,
    engine_name,
    is_path,
    make_inputs,
    model_label,
    read_onnx_io,
    resolve_onnx,
)

INSTALL_HINT = (
    "on a Jetson, TensorRT's Python bindings come with JetPack: `sudo apt install python3-libnvinfer` "
    "(a virtualenv must be created with --system-site-packages to see them); pycuda: "
    "`pip install 'pytest-jetson[tensorrt]'` with the CUDA toolkit on PATH "
    "(`export PATH=/usr/local/cuda/bin:$PATH`). Without a board, use --jetson-backend simulated "
    "or onnxruntime"
)
#: Placeholder int8 dynamic range for tensors without calibration (what trtexec uses for timing).
INT8_PLACEHOLDER_RANGE = 4.0
DLA_PRECISIONS = ("fp16", "int8")


def import_tensorrt() -> Any:
    try:
        import tensorrt
    except ImportError as exc:
        raise EngineError(f"the tensorrt backend needs TensorRT's Python bindings ({exc}); {INSTALL_HINT}") from None
    return tensorrt


def import_pycuda() -> Any:
    try:
        import pycuda.driver as cuda
    except ImportError as exc:
        raise EngineError(f"the tensorrt backend needs pycuda ({exc}); {INSTALL_HINT}") from None
    return cuda


# -- the CUDA context of this process -----------------------------------------------------------
class _ProcessContext:
    """The primary context of device 0, retained once per process and shared by its engines."""

    _lock = threading.Lock()
    _by_pid: Dict[int, "_ProcessContext"] = {}

    def __init__(self, cuda: Any, index: int = 0) -> None:
        cuda.init()
        self.cuda = cuda
        self.device = cuda.Device(index)
        if hasattr(self.device, "retain_primary_context"):
            # the primary context is the one the CUDA runtime inside TensorRT uses too
            self.context = self.device.retain_primary_context()
            self.context.push()
        else:
            self.context = self.device.make_context()
        self.thread = threading.get_ident()
        self.users = 0

    @classmethod
    def acquire(cls, cuda: Any) -> "_ProcessContext":
        with cls._lock:
            ctx = cls._by_pid.get(os.getpid())
            if ctx is None:
                ctx = cls._by_pid[os.getpid()] = cls(cuda)
            ctx.users += 1
            return ctx

    def release(self) -> None:
        with self._lock:
            self.users -= 1
            if self.users > 0:
                return
            self._by_pid.pop(os.getpid(), None)
        if threading.get_ident() == self.thread:
            try:
                self.context.pop()
            finally:
                if hasattr(self.context, "detach"):
                    self.context.detach()

    @property
    def gpu_name(self) -> str:
        return str(self.device.name())

    @property
    def compute_capability(self) -> str:
        major, minor = self.device.compute_capability()
        return f"{major}.{minor}"


# -- logging ------------------------------------------------------------------------------------
def _make_logger(trt: Any) -> Any:
    """A TensorRT logger that keeps errors and warnings, so failures can quote them."""
    base = getattr(trt, "ILogger", None)
    if base is None:
        logger = trt.Logger(trt.Logger.WARNING)
        logger.messages = []
        return logger

    class _Logger(base):  # type: ignore[misc, valid-type]
        def __init__(self) -> None:
            base.__init__(self)
            self.messages: List[str] = []

        def log(self, severity: Any, msg: str) -> None:
            sev = getattr(trt.ILogger, "Severity", None)
            if sev is not None and severity in (getattr(sev, "INFO", None), getattr(sev, "VERBOSE", None)):
                return
            self.messages.append(str(msg))

    return _Logger()


def _quote(messages: List[str], n: int = 8) -> str:
    tail = [m for m in messages if m][-n:]
    return ("\n  TensorRT said:\n    " + "\n    ".join(tail)) if tail else ""


# -- building -----------------------------------------------------------------------------------
def _set_workspace(trt: Any, config: Any, workspace: Optional[int]) -> None:
    if workspace is None:
        return
    if hasattr(config, "set_memory_pool_limit"):
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, int(workspace))
    else:  # TensorRT < 8.4
        config.max_workspace_size = int(workspace)


def _set_precision(trt: Any, config: Any, precision: str) -> None:
    flag = trt.BuilderFlag
    if precision == "fp32":
        if hasattr(flag, "TF32"):
            config.clear_flag(flag.TF32)  # TF32 is on by default on Ampere and later
    elif precision == "tf32":
        if hasattr(flag, "TF32"):
            config.set_flag(flag.TF32)
    elif precision == "fp16":
        config.set_flag(flag.FP16)
    elif precision == "int8":
        config.set_flag(flag.INT8)
        config.set_flag(flag.FP16)  # layers without int8 kernels fall back to fp16, as trtexec does


def _placeholder_int8_ranges(network: Any) -> None:
    r = INT8_PLACEHOLDER_RANGE
    tensors = [network.get_input(i) for i in range(network.num_inputs)]
    for i in range(network.num_layers):
        layer = network.get_layer(i)
        tensors.extend(layer.get_output(j) for j in range(layer.num_outputs))
    for t in tensors:
        if t is None:
            continue
        if hasattr(t, "set_dynamic_range"):
            t.set_dynamic_range(-r, r)
        elif hasattr(t, "dynamic_range"):
            t.dynamic_range = (-r, r)


def _profile_shapes(shape: Tuple[int, ...], spec: TensorSpec, batch: int) -> Tuple[Tuple[int, ...], ...]:
    """(min, opt, max) shapes: the batch dimension from 1 to ``batch``, every other dynamic
    dimension fixed at what the ONNX spec resolved it to."""
    lo: List[int] = []
    opt: List[int] = []
    hi: List[int] = []
    for i, d in enumerate(shape):
        if d is not None and int(d) >= 0:
            dims = (int(d), int(d), int(d))
        elif i == 0:
            dims = (1, batch, batch)
        else:
            fixed = spec.shape[i] if i < len(spec.shape) else 1
            dims = (fixed, fixed, fixed)
        lo.append(dims[0])
        opt.append(dims[1])
        hi.append(dims[2])
    return tuple(lo), tuple(opt), tuple(hi)


def build_plan(trt: Any, path: Any, name: str, precision: str, batch: int, dla_core: Optional[int],
               workspace: Optional[int], inputs: List[TensorSpec], timing_cache: Optional[Any]) -> bytes:
    """Parse ``path`` with TensorRT's ONNX parser and build a serialized plan."""
    logger = _make_logger(trt)
    builder = trt.Builder(logger)
    flags = 0
    creation = getattr(trt, "NetworkDefinitionCreationFlag", None)
    if creation is not None and hasattr(creation, "EXPLICIT_BATCH"):
        flags = 1 << int(creation.EXPLICIT_BATCH)  # TensorRT 8; 10.x is explicit-batch only
    network = builder.create_network(flags)
    parser = trt.OnnxParser(network, logger)
    if hasattr(parser, "parse_from_file"):
        ok = parser.parse_from_file(str(path))  # resolves external weight files beside the graph
    else:
        with open(path, "rb") as f:
            ok = parser.parse(f.read())
    if not ok:
        errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        raise ModelError(
            f"{name}: TensorRT's ONNX parser rejected {str(path)!r}:\n    "
            + "\n    ".join(errors or ["(no parser errors reported)"])
            + f"\n  Fix: re-export the model with an opset and operators TensorRT {trt.__version__} supports "
            "(simplifying it with onnx-simplifier often helps), or pick a zoo model"
        )

    config = builder.create_builder_config()
    _set_workspace(trt, config, workspace)
    _set_precision(trt, config, precision)
    if dla_core is not None:
        config.default_device_type = trt.DeviceType.DLA
        config.DLA_core = int(dla_core)
        config.set_flag(trt.BuilderFlag.GPU_FALLBACK)

    by_name = {s.name: s for s in inputs}
    profile = None
    for i in range(network.num_inputs):
        tensor = network.get_input(i)
        shape = tuple(tensor.shape)
        if any(int(d) < 0 for d in shape):
            if profile is None:
                profile = builder.create_optimization_profile()
            spec = by_name.get(tensor.name, TensorSpec(tensor.name, tuple(max(1, int(d)) for d in shape), np.float32))
            profile.set_shape(tensor.name, *_profile_shapes(shape, spec, batch))
    if profile is not None:
        config.add_optimization_profile(profile)
    if precision == "int8" and getattr(config, "int8_calibrator", None) is None:
        _placeholder_int8_ranges(network)

    cache_obj = None
    if timing_cache is not None and hasattr(config, "create_timing_cache"):
        try:
            data = timing_cache.read_bytes() if timing_cache.is_file() else b""
        except OSError:
            data = b""
        cache_obj = config.create_timing_cache(data)
        if not config.set_timing_cache(cache_obj, False):
            # a timing cache from another TensorRT/GPU: start an empty one rather than fail
            cache_obj = config.create_timing_cache(b"")
            config.set_timing_cache(cache_obj, False)

    serialized = builder.build_serialized_network(network, config)
    if serialized is None:
        hint = "dla_core=None (GPU), " if dla_core is not None else ""
        raise EngineError(
            f"{name}: TensorRT could not build an engine from {str(path)!r}; try {hint}a larger "
            f"workspace= (now {workspace if workspace is not None else 'the default'}), another "
            f"precision than {precision}, or a smaller batch than {batch}" + _quote(logger.messages)
        )
    if cache_obj is not None and timing_cache is not None:
        try:
            plan_cache.write_atomic(timing_cache, bytes(config.get_timing_cache().serialize()))
        except OSError:
            pass  # the timing cache only speeds up the next build
    return bytes(serialized)


# -- the engine ---------------------------------------------------------------------------------
class _Binding:
    __slots__ = ("name", "index", "is_input", "dtype", "host", "device", "spec")

    def __init__(self, name: str, index: int, is_input: bool, dtype: Any) -> None:
        self.name, self.index, self.is_input, self.dtype = name, index, is_input, np.dtype(dtype)
        self.host: Any = None
        self.device: Any = None
        self.spec: Optional[TensorSpec] = None


class TensorRTEngine(Engine):
    backend = "tensorrt"

    def __init__(self, model: Any, precision: str = "fp16", batch: int = 1, dla_core: Optional[int] = None,
                 seed: int = 0, resolution: Any = None, workspace: Any = None, cache_dir: Any = None,
                 device: Any = None, timing_cache: bool = True) -> None:
        super().__init__()
        from ..clock import WallClock

        label = model_label(model)
        where = f"tensorrt engine {label!r}"
        self.precision = check_precision(precision, where)
        self.batch = check_open_batch(batch, where)
        self.model = str(model) if is_path(model) else label
        self.name = engine_name(label, self.precision, self.batch, dla_core)
        self.dla_core = dla_core
        self.clock = WallClock()  # latencies are what the host sees; CUDA events give device time
        self.last_compute_time: Optional[float] = None
        if dla_core is not None and self.precision not in DLA_PRECISIONS:
            raise EngineError(f"{self.name}: the DLA runs fp16 or int8, not {self.precision}; use "
                              "precision='fp16' or 'int8', or dla_core=None")
        if dla_core is not None and device is not None and hasattr(device, "profile"):
            count = getattr(device.profile, "dla_count", 0) or 0
            if not 0 <= int(dla_core) < count:
                raise EngineError(f"{self.name}: {device.name} has {count} DLA core(s), so dla_core="
                                  f"{dla_core} does not exist; use dla_core=None (GPU)")
        workspace_bytes = None if workspace is None else parse_size(workspace, f"{self.name}: workspace")

        self.path = resolve_onnx(model, where, resolution=resolution)
        specs, _outputs, fixed = read_onnx_io(self.path, self.batch, where)
        if fixed is not None and fixed != self.batch:
            raise EngineError(f"{self.name}: {str(self.path)!r} has a fixed batch of {fixed}; open it "
                              f"with batch={fixed} or export the ONNX with a dynamic batch dimension")

        self._trt = trt = import_tensorrt()
        self._cuda = cuda = import_pycuda()
        self._pid = os.getpid()
        self._ctx = _ProcessContext.acquire(cuda)
        try:
            self._open(trt, cuda, specs, workspace_bytes, cache_dir, timing_cache)
            self._bind(self.batch)
            self.inputs = [b.spec for b in self._bindings if b.is_input]
            self.outputs = [b.spec for b in self._bindings if not b.is_input]
            self._fill_inputs(seed)
        except BaseException:
            self._release()
            raise

    # -- build or load --------------------------------------------------------------------------
    def _open(self, trt: Any, cuda: Any, specs: List[TensorSpec], workspace: Optional[int],
              cache_dir: Any, use_timing_cache: bool) -> None:
        folder = plan_cache.default_cache_dir() if cache_dir is None else Path(cache_dir)
        key = plan_cache.PlanKey(
            onnx_sha256=plan_cache.onnx_digest(self.path), tensorrt=str(trt.__version__),
            gpu_name=self._ctx.gpu_name, compute_capability=self._ctx.compute_capability,
            options={"precision": self.precision, "batch": self.batch, "dla_core": self.dla_core,
                     "gpu_fallback": self.dla_core is not None, "workspace": workspace,
                     "int8": "placeholder-ranges" if self.precision == "int8" else None},
        )
        self.plan_path = plan_cache.plan_path(folder, self.name, key)
        timing = plan_cache.timing_cache_path(folder, key.tensorrt, key.gpu_name, key.compute_capability) \
            if use_timing_cache else None
        self._logger = _make_logger(trt)
        self._runtime = trt.Runtime(self._logger)
        if self.dla_core is not None:
            self._runtime.DLA_core = int(self.dla_core)
        self.built = False
        with plan_cache.lock(self.plan_path):
            plan = plan_cache.load(self.plan_path, key, self.name)
            engine = self._deserialize(plan) if plan is not None else None
            if plan is not None and engine is None:
                warnings.warn(
                    f"{self.name}: TensorRT could not load the cached plan {str(self.plan_path)!r} "
                    "(corrupt); rebuilding it" + _quote(self._logger.messages, 3),
                    plan_cache.PlanCacheWarning, stacklevel=4,
                )
            if engine is None:
                plan = build_plan(trt, self.path, self.name, self.precision, self.batch, self.dla_core,
                                  workspace, specs, timing)
                plan_cache.store(self.plan_path, key, plan)
                self.built = True
                engine = self._deserialize(plan)
                if engine is None:
                    raise EngineError(f"{self.name}: TensorRT built a plan it cannot load back"
                                      + _quote(self._logger.messages))
        self._engine = engine
        self._plan_bytes = len(plan)
        self._context = engine.create_execution_context()
        if self._context is None:
            raise EngineError(f"{self.name}: TensorRT could not create an execution context (out of "
                              "device memory?)" + _quote(self._logger.messages))
        self._v3 = hasattr(engine, "num_io_tensors") and hasattr(self._context, "execute_async_v3")
        self._bindings = self._discover(trt, specs)
        self.max_batch = self._profile_max_batch()
        self._allocate(cuda)
        self.stream = cuda.Stream()
        self._events = [cuda.Event() for _ in range(4)]
        act = getattr(engine, "device_memory_size_v2", None) or getattr(engine, "device_memory_size", 0) or 0
        io = sum(b.host.nbytes for b in self._bindings)
        self.memory_bytes = int(act) + self._plan_bytes + io

    def _deserialize(self, plan: Optional[bytes]) -> Any:
        if plan is None:
            return None
        try:
            return self._runtime.deserialize_cuda_engine(plan)
        except Exception:  # some TensorRT versions raise instead of returning None
            return None

    def _discover(self, trt: Any, specs: List[TensorSpec]) -> List[_Binding]:
        engine = self._engine
        out: List[_Binding] = []
        if self._v3:
            for i in range(engine.num_io_tensors):
                name = engine.get_tensor_name(i)
                is_input = engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT
                out.append(_Binding(name, i, is_input, trt.nptype(engine.get_tensor_dtype(name))))
        else:
            for i in range(engine.num_bindings):
                out.append(_Binding(engine.get_binding_name(i), i, bool(engine.binding_is_input(i)),
                                    trt.nptype(engine.get_binding_dtype(i))))
        return out

    def _engine_shape(self, b: _Binding) -> Tuple[int, ...]:
        e = self._engine
        shape = e.get_tensor_shape(b.name) if self._v3 else e.get_binding_shape(b.index)
        return tuple(int(d) for d in shape)

    def _profile_max_batch(self) -> int:
        best = None
        for b in self._bindings:
            if not b.is_input:
                continue
            shape = self._engine_shape(b)
            if shape and shape[0] >= 0:
                best = shape[0] if best is None else min(best, shape[0])
                continue
            if self._v3:
                _lo, _opt, hi = self._engine.get_tensor_profile_shape(b.name, 0)
            else:
                _lo, _opt, hi = self._engine.get_profile_shape(0, b.index)
            best = int(hi[0]) if best is None else min(best, int(hi[0]))
        return int(best or self.batch)

    def _input_shape(self, b: _Binding, batch: int) -> Tuple[int, ...]:
        shape = list(self._engine_shape(b))
        if shape:
            shape[0] = batch if shape[0] < 0 else shape[0]
        if self._v3 and any(d < 0 for d in shape):
            hi = self._engine.get_tensor_profile_shape(b.name, 0)[2]
            shape = [batch if i == 0 else int(hi[i]) for i in range(len(shape))]
        return tuple(shape)

    def _set_shapes(self, batch: int) -> Dict[str, Tuple[int, ...]]:
        """Set the input shapes for ``batch`` on the context; the shapes of every tensor."""
        ctx = self._context
        shapes: Dict[str, Tuple[int, ...]] = {}
        for b in self._bindings:
            if b.is_input:
                shape = self._input_shape(b, batch)
                ok = ctx.set_input_shape(b.name, shape) if self._v3 else ctx.set_binding_shape(b.index, shape)
                if ok is False:
                    raise EngineError(f"{self.name}: TensorRT refused input shape {shape} for {b.name!r}"
                                      f" (the profile allows batch 1..{getattr(self, 'max_batch', batch)})")
                shapes[b.name] = shape
        for b in self._bindings:
            if not b.is_input:
                shape = ctx.get_tensor_shape(b.name) if self._v3 else ctx.get_binding_shape(b.index)
                shapes[b.name] = tuple(int(d) for d in shape)
        return shapes

    def _allocate(self, cuda: Any) -> None:
        shapes = self._set_shapes(self.max_batch)
        for b in self._bindings:
            shape = shapes[b.name]
            b.host = cuda.pagelocked_empty(shape, b.dtype)
            b.device = cuda.mem_alloc(max(1, b.host.nbytes))
            if self._v3:
                self._context.set_tensor_address(b.name, int(b.device))
        self._bindings_ptrs = [int(b.device) for b in sorted(self._bindings, key=lambda x: x.index)]
        self._bound: Optional[int] = None

    def _bind(self, batch: int) -> None:
        shapes = self._set_shapes(batch)
        for b in self._bindings:
            b.spec = TensorSpec(b.name, shapes[b.name], b.dtype)
        self._views = [(b, b.host.reshape(-1)[: int(np.prod(shapes[b.name]))].reshape(shapes[b.name]))
                       for b in self._bindings]
        self._in_views = [(b.device, v) for b, v in self._views if b.is_input]
        self._out_views = [(b.device, v) for b, v in self._views if not b.is_input]
        self._outputs = {b.name: v for b, v in self._views if not b.is_input}
        self._bound = batch

    def _fill_inputs(self, seed: int) -> None:
        feeds = make_inputs([b.spec for b in self._bindings if b.is_input], self.max_batch, seed)
        for b in self._bindings:
            if b.is_input:
                b.host.reshape(-1)[:] = feeds[b.name].reshape(-1)

    # -- running --------------------------------------------------------------------------------
    def _infer(self, batch: int) -> Dict[str, np.ndarray]:
        if self.closed:
            raise EngineError(f"{self.name}: infer() on a closed engine")
        if os.getpid() != self._pid:
            raise EngineError(
                f"{self.name}: opened in process {self._pid}, used in process {os.getpid()}; a CUDA "
                "context does not survive fork: open the engine in the process that runs it"
            )
        pushed = threading.get_ident() != self._ctx.thread
        if pushed:
            self._ctx.context.push()
        try:
            return self._run(batch)
        finally:
            if pushed:
                self._ctx.context.pop()

    def _run(self, batch: int) -> Dict[str, np.ndarray]:
        cuda, stream, ev = self._cuda, self.stream, self._events
        if batch != self._bound:
            self._bind(batch)
        ev[0].record(stream)
        for dev, host in self._in_views:
            cuda.memcpy_htod_async(dev, host, stream)
        ev[1].record(stream)
        if self._v3:
            ok = self._context.execute_async_v3(stream.handle)
        else:
            ok = self._context.execute_async_v2(bindings=self._bindings_ptrs, stream_handle=stream.handle)
        if ok is False:
            raise EngineError(f"{self.name}: TensorRT failed to enqueue the batch" + _quote(self._logger.messages))
        ev[2].record(stream)
        for dev, host in self._out_views:
            cuda.memcpy_dtoh_async(host, dev, stream)
        ev[3].record(stream)
        stream.synchronize()
        # time_since is in milliseconds
        self.last_device_time = ev[3].time_since(ev[0]) * 1e-3
        self.last_compute_time = ev[2].time_since(ev[1]) * 1e-3
        return self._outputs

    # -- closing --------------------------------------------------------------------------------
    def _release(self) -> None:
        for b in getattr(self, "_bindings", []):
            if b.device is not None and hasattr(b.device, "free"):
                try:
                    b.device.free()
                except Exception:
                    pass  # the context may already be gone at interpreter exit
            b.device = b.host = None
        for attr in ("_context", "_engine", "_runtime", "stream", "_events"):
            if hasattr(self, attr):
                setattr(self, attr, None)
        ctx = getattr(self, "_ctx", None)
        if ctx is not None and os.getpid() == self._pid:
            self._ctx = None
            ctx.release()

    def close(self) -> None:
        if not self.closed:
            self._release()
        super().close()
