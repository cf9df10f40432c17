"""The TensorRT backend: an engine from ONNX (built, or loaded from the plan cache) or from a plan
file, run with pycuda and measured the way trtexec measures it.

Building is ``tensorrt_build`` (shapes, precisions, INT8 scales, DLA placement), running and timing
``tensorrt_run`` (zero-copy or device buffers, two inferences in flight, CUDA events, CUDA graphs),
the plan cache ``cache``. This module ties them to the Engine protocol and owns the errors a user
can cause: each names the model, the board and the fix, and quotes TensorRT where it spoke.

Both runtime APIs are supported and picked by capability: the name-based one (``num_io_tensors``,
``set_input_shape``, ``set_tensor_address``, ``execute_async_v3``; TensorRT 8.5 and later) and the
binding-index one (``num_bindings``, ``set_binding_shape``, ``execute_async_v2``; TensorRT 8.2 of
JetPack 4.6, the newest a Nano or TX2 runs). The CUDA context is the device's primary context,
retained in the process that opens the engine (never inherited across fork).
"""

import os
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ..clock import WallClock
from ..errors import EngineError
from ..models.reference import PLAN, resolve
from ..units import parse_size
from . import cache as plan_cache
from . import tensorrt_build as tb
from .base import (
    DeviceArray,
    Engine,
    TensorSpec,
    check_open_batch,
    check_precision,
    engine_name,
    make_inputs,
    read_onnx_io,
    resolve_onnx,
)
from .layer_profile import REFORMAT, LayerProfile, LayerTime
from .qdq import has_qdq, qdq_copy
from .tensorrt_dtypes import numpy_dtype
from .tensorrt_run import DEFAULT_IO, IO_MODES, PROFILE_RUNS, Binding, DeviceView, ProcessContext, Runner

INSTALL_HINT = (
    "on a Jetson, TensorRT's Python bindings come with JetPack: `sudo apt install python3-libnvinfer` "
    "(a virtualenv must be created with --system-site-packages to see them); pycuda: "
    "`pip install 'pytest-jetson[tensorrt]'` with the CUDA toolkit on PATH "
    "(`export PATH=/usr/local/cuda/bin:$PATH`). Without a board, use --jetson-backend simulated "
    "or onnxruntime"
)
DLA_PRECISIONS = tb.DLA_PRECISIONS
#: Alignment TensorRT requires of a tensor's address (NvInferRuntime.h, setTensorAddress)
ALIGNMENT = 256
#: The optimization profile an execution context starts on, and the one every engine runs
PROFILE = 0

# kept importable under their old names
_ProcessContext = ProcessContext


def merge_profile(times: List[Tuple[str, float]], runs: int, inspected: List["tb.InspectedLayer"],
                  note: Optional[str]) -> LayerProfile:
    """The profiler's (layer name, ms per inference) in its order, each with what the inspector
    says of the layer of that name (a layer it does not describe keeps its name only)."""
    by_name = {x.name: x for x in inspected}
    layers = []
    for name, ms in times:
        x = by_name.get(name) or tb.InspectedLayer(name)
        kind = x.type or (REFORMAT if name.startswith("Reformatting CopyNode") else "")
        layers.append(LayerTime(name=name, type=kind, precision=x.precision, time=ms * 1e-3,
                                tactic=x.tactic, size=x.size, format=x.format or None))
    notes = [note] if note else []
    if not layers:
        notes.append("TensorRT's profiler reported no layer times")
    return LayerProfile("tensorrt", layers, runs=runs, notes=notes).with_shares()


class PrecisionFallbackWarning(UserWarning):
    """An engine was built in another precision than asked for (the result says which, and why)."""


class PlanNoteWarning(UserWarning):
    """A cached plan is used with a caveat (built in another power mode)."""


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


def _device_index(obj: Any) -> Optional[int]:
    """The CUDA device an array says it is on (PyTorch: ``.device.index``, CuPy: ``.device.id``);
    None where it does not say."""
    device = getattr(obj, "device", None)
    for attr in ("index", "id"):
        value = getattr(device, attr, None)
        if isinstance(value, int):
            return value
    return None


class TensorRTEngine(Engine):
    backend = "tensorrt"
    reports_device_time = True  # CUDA events around each enqueue

    def __init__(self, model: Any, precision: str = "fp16", batch: int = 1, dla_core: Optional[int] = None,
                 seed: int = 0, resolution: Any = None, workspace: Any = None, cache_dir: Any = None,
                 device: Any = None, timing_cache: bool = True, io: Optional[str] = None,
                 cuda_graph: bool = True, input_shape: Any = None, precision_fallback: bool = True) -> None:
        super().__init__()
        ref = resolve(model)
        label = ref.name
        where = f"tensorrt engine {label!r}"
        self.requested_precision = check_precision(precision, where)
        self.precision = self.requested_precision
        self.batch = check_open_batch(batch, where)
        self.model = ref.display
        self.label = label
        self.name = engine_name(label, self.precision, self.batch, dla_core)
        self.dla_core = dla_core
        self.device = device
        self.clock = WallClock()  # host time: throughput is items over the host's wall clock
        self.notes: List[str] = []
        self.placement: Optional[tb.Placement] = None
        self.build_time: Optional[float] = None
        self.build_time_source: Optional[str] = None
        self.latency_first: Optional[float] = None
        self.default_workspace: Optional[int] = None  # what the build set where TensorRT's was 0
        self._check_options(io, dla_core, device)
        workspace_bytes = None if workspace is None else parse_size(workspace, f"{self.name}: workspace")
        self.plan_file = ref.kind == PLAN
        self.path = self._locate(ref, where, resolution)

        self._trt = trt = import_tensorrt()
        self._cuda = cuda = import_pycuda()
        self._pid = os.getpid()
        self._ctx: Optional[ProcessContext] = ProcessContext.acquire(cuda)
        self._runner: Optional[Runner] = None
        try:
            with self._ctx.current():
                self.board = self._board(device)
                self.io = io or DEFAULT_IO
                if not self.plan_file:
                    self.precision, note = tb.effective_precision(
                        self.name, self.precision, self.board, dla_core is not None, precision_fallback)
                    if note:
                        self.notes.append(note)
                        self.name = engine_name(label, self.precision, self.batch, dla_core)
                        warnings.warn(f"{self.name}: {note}", PrecisionFallbackWarning, stacklevel=3)
                self._open(trt, workspace_bytes, cache_dir, timing_cache, resolution, input_shape)
                self._bind_all(trt, cuda, cuda_graph, seed)
                runner = self._runner
                assert runner is not None
                runner.run_once(self.batch)
                # the first enqueue after open, where it ran: this call, or the warm-up before a
                # CUDA graph's capture (lazy loading is paid there, not in the replay)
                self.latency_first = runner.first_s
        except BaseException:
            self._release()
            raise

    def _check_options(self, io: Optional[str], dla_core: Optional[int], device: Any) -> None:
        if io is not None and io not in IO_MODES:
            raise EngineError(f"{self.name}: io={io!r} is not one of {', '.join(IO_MODES)}")
        if dla_core is None:
            return
        if self.precision not in DLA_PRECISIONS:
            raise EngineError(f"{self.name}: the DLA runs fp16 or int8, not {self.precision}; use "
                              "precision='fp16' or 'int8', or dla_core=None")
        if device is not None and hasattr(device, "profile"):
            count = getattr(device.profile, "dla_count", 0) or 0
            if not 0 <= int(dla_core) < count:
                raise EngineError(f"{self.name}: {device.name} has {count} DLA core(s), so dla_core="
                                  f"{dla_core} does not exist; use dla_core=None (GPU)")

    def _locate(self, ref: Any, where: str, resolution: Any) -> Path:
        """The plan file, or the ONNX file to build from (checked for a batch it can take)."""
        if self.plan_file:
            if not ref.path.is_file():
                raise EngineError(f"{where}: plan file {str(ref.path)!r} does not exist; pass an "
                                  "existing .engine/.plan file, an .onnx path or a zoo name")
            return ref.path
        path = resolve_onnx(ref.display if ref.is_file else ref.name, where, resolution=resolution)
        _specs, _outputs, fixed = read_onnx_io(path, self.batch, where)
        if fixed is not None and fixed != self.batch:
            raise EngineError(f"{self.name}: {str(path)!r} has a fixed batch of {fixed}; open "
                              f"it with batch={fixed} or export the ONNX with a dynamic batch dimension")
        return path

    # -- the board ------------------------------------------------------------------------------
    def _board(self, device: Any) -> tb.Board:
        ctx = self._ctx
        assert ctx is not None
        label = getattr(device, "name", None) if device is not None and not getattr(device, "simulated", True) \
            else None
        return tb.Board(label=str(label or ctx.gpu_name), compute_capability=ctx.compute_capability)

    # -- build or load --------------------------------------------------------------------------
    def _key(self, trt: Any, workspace: Optional[int], resolution: Any, input_shape: Any,
             mode: Optional[str]) -> plan_cache.PlanKey:
        ctx = self._ctx
        assert ctx is not None
        return plan_cache.PlanKey(
            onnx_sha256=plan_cache.onnx_digest(self.path), tensorrt=str(trt.__version__),
            module=plan_cache.module_identity(self.device, ctx.gpu_name), sm_count=ctx.sm_count,
            compute_capability=ctx.compute_capability,
            options={"precision": self.precision, "batch": self.batch, "dla_core": self.dla_core,
                     "gpu_fallback": self.dla_core is not None,
                     "workspace": tb.effective_workspace(trt, workspace),
                     "int8": mode, "resolution": resolution,
                     "input_shape": None if input_shape is None else repr(input_shape),
                     "profiling_verbosity": tb.PROFILING_VERBOSITY},
        )

    def _power_mode(self) -> Optional[str]:
        mode = getattr(self.device, "power_mode", None)
        return None if mode is None or getattr(self.device, "simulated", True) else str(mode.name)

    def _open(self, trt: Any, workspace: Optional[int], cache_dir: Any, use_timing_cache: bool,
              resolution: Any, input_shape: Any) -> None:
        self._logger = tb.process_logger(trt)
        if self.plan_file:
            plan = self.path.read_bytes()
            self.plan_path = self.path
            self.built = False
            self._runtime, engine = self._deserialize(trt, plan)
            if engine is None:
                raise EngineError(
                    f"{self.name}: TensorRT {trt.__version__} cannot load the plan file "
                    f"{str(self.path)!r} on {self.board.label}: it is corrupt, not a TensorRT plan, "
                    "or was built by another TensorRT version or for another GPU. Fix: rebuild it "
                    "on this board with this TensorRT (trtexec --onnx=... --saveEngine=...), or pass "
                    "the .onnx and let pytest-jetson build and cache it" + tb.quote(self._last_errors, 6)
                )
            self._finish_open(trt, engine, plan)
            return
        folder = plan_cache.default_cache_dir() if cache_dir is None else Path(cache_dir)
        mode = None
        if self.precision == "int8":
            import onnx

            mode = tb.int8_mode(trt, has_qdq(onnx.load(str(self.path), load_external_data=False)))
        key = self._key(trt, workspace, resolution, input_shape, mode)
        self.plan_path = plan_cache.plan_path(folder, self.name, key)
        timing = plan_cache.timing_cache_path(folder, key) if use_timing_cache else None
        self.built = False
        with plan_cache.lock(self.plan_path):
            found = plan_cache.load_with_header(self.plan_path, key, self.name)
            engine = None
            plan: Optional[bytes] = None
            if found is not None:
                plan, header = found
                self._runtime, engine = self._deserialize(trt, plan)
                if engine is None:
                    warnings.warn(
                        f"{self.name}: TensorRT could not load the cached plan {str(self.plan_path)!r} "
                        "(corrupt); rebuilding it" + tb.quote(self._last_errors, 3),
                        plan_cache.PlanCacheWarning, stacklevel=4,
                    )
                else:
                    self._from_header(header.get("built") or {})
            if engine is None:
                qdq_path = None
                if mode == "placeholder-qdq":
                    qdq_path = qdq_copy(self.path, folder / f"{self.plan_path.stem}.qdq.onnx")
                request = tb.Request(self.name, self.path, self.precision, self.batch, self.dla_core,
                                     workspace, int8_mode=mode)
                try:
                    done = tb.build(trt, request, self.board, resolution=resolution if self._is_user_onnx()
                                    else None, input_shape=input_shape, timing_cache=timing,
                                    qdq_path=qdq_path)
                finally:
                    if qdq_path is not None:
                        qdq_path.unlink()
                plan = done.plan
                self._runtime, engine = self._deserialize(trt, plan)
                if engine is None:
                    raise EngineError(f"{self.name}: TensorRT built a plan it cannot load back"
                                      + tb.quote(self._last_errors))
                if self.dla_core is not None and done.placement is None:
                    done.placement = tb.placement_from_inspector(trt, engine, done.layer_names, int(self.dla_core))
                self.placement = done.placement
                self.build_time, self.build_time_source = done.seconds, "built in this session"
                self.default_workspace = request.default_workspace
                built = {"seconds": done.seconds, "power_mode": self._power_mode(),
                         "placement": None if done.placement is None else done.placement.to_dict(),
                         "default_workspace": self.default_workspace}
                plan_cache.store(self.plan_path, key, plan, built)
                self.built = True
        assert plan is not None
        self._finish_open(trt, engine, plan)

    def _is_user_onnx(self) -> bool:
        # a zoo model is built at its resolution already; a user's ONNX takes it as H, W
        return resolve(self.model).is_file

    def _from_header(self, built: Dict[str, Any]) -> None:
        if built.get("seconds") is not None:
            self.build_time, self.build_time_source = float(built["seconds"]), "plan cache"
        if built.get("default_workspace"):
            self.default_workspace = int(built["default_workspace"])
        if built.get("placement"):
            self.placement = tb.Placement.from_dict(built["placement"])
        then, now = built.get("power_mode"), self._power_mode()
        if then and now and then != now:
            note = (f"the cached plan was built in power mode {then} and is used in {now}: tactics "
                    "were timed at other clocks (delete it from the plan cache to rebuild here)")
            self.notes.append(note)
            warnings.warn(f"{self.name}: {note}", PlanNoteWarning, stacklevel=5)

    def _deserialize(self, trt: Any, plan: bytes) -> Tuple[Any, Any]:
        runtime = trt.Runtime(self._logger)
        if self.dla_core is not None:
            runtime.DLA_core = int(self.dla_core)
        mark = self._logger.heard.mark()
        try:
            engine = runtime.deserialize_cuda_engine(plan)
        except Exception:  # some TensorRT versions raise instead of returning None
            engine = None
        self._last_errors = self._logger.heard.since(mark, 1)
        return runtime, engine

    def _finish_open(self, trt: Any, engine: Any, plan: bytes) -> None:
        self._engine = engine
        self._plan_bytes = len(plan)
        self._context = engine.create_execution_context()
        if self._context is None:
            raise EngineError(f"{self.name}: TensorRT could not create an execution context on "
                              f"{self.board.label} (out of device memory?)" + tb.quote(self._logger.heard.since(0, 1)))
        self._v3 = hasattr(engine, "num_io_tensors") and hasattr(self._context, "execute_async_v3")

    # -- bindings -------------------------------------------------------------------------------
    def _discover(self, trt: Any) -> List[Binding]:
        engine = self._engine
        out: List[Binding] = []
        if self._v3:
            for i in range(engine.num_io_tensors):
                name = engine.get_tensor_name(i)
                is_input = engine.get_tensor_mode(name) == trt.TensorIOMode.INPUT
                dtype = numpy_dtype(engine.get_tensor_dtype(name), f"{self.name} ({name!r})")
                out.append(Binding(name, i, is_input, dtype))
        else:
            # each optimization profile has its own bindings, profile k's offset by k * per profile
            # (NvInferRuntime.h, getNbBindings); the context runs PROFILE, so those are the ones
            per = engine.num_bindings // max(1, int(engine.num_optimization_profiles))
            for i in range(PROFILE * per, (PROFILE + 1) * per):
                name = engine.get_binding_name(i)
                dtype = numpy_dtype(engine.get_binding_dtype(i), f"{self.name} ({name!r})")
                out.append(Binding(name, i, bool(engine.binding_is_input(i)), dtype))
        return out

    def _engine_shape(self, b: Binding) -> Tuple[int, ...]:
        e = self._engine
        shape = e.get_tensor_shape(b.name) if self._v3 else e.get_binding_shape(b.index)
        return tuple(int(d) for d in shape)

    def _profile(self, b: Binding) -> Tuple[Tuple[int, ...], Tuple[int, ...], Tuple[int, ...]]:
        if self._v3:
            lo, opt, hi = self._engine.get_tensor_profile_shape(b.name, PROFILE)
        else:
            lo, opt, hi = self._engine.get_profile_shape(PROFILE, b.index)
        return tuple(map(int, lo)), tuple(map(int, opt)), tuple(map(int, hi))

    def _profile_batches(self) -> Tuple[int, int]:
        """(smallest, largest) batch every input's profile allows."""
        lo_b, hi_b = 1, None
        for b in self._bindings:
            if not b.is_input:
                continue
            shape = self._engine_shape(b)
            if shape and shape[0] >= 0:
                lo_b, hi_b = max(lo_b, shape[0]), shape[0] if hi_b is None else min(hi_b, shape[0])
                continue
            lo, _opt, hi = self._profile(b)
            lo_b = max(lo_b, lo[0])
            hi_b = hi[0] if hi_b is None else min(hi_b, hi[0])
        return lo_b, int(hi_b or self.batch)

    def _input_shape(self, b: Binding, batch: int, largest: bool = False) -> Tuple[int, ...]:
        """The input's shape at ``batch``: its dynamic dimensions besides the batch at the profile's
        usual size (``opt``), or at its largest (what buffers are allocated for)."""
        shape = list(self._engine_shape(b))
        if any(d < 0 for d in shape):
            _lo, opt, hi = self._profile(b)
            size = hi if largest else opt
            shape = [batch if i == 0 else (size[i] if d < 0 else d) for i, d in enumerate(shape)]
        return tuple(shape)

    def _set_shapes(self, batch: int, given: Optional[Dict[str, Tuple[int, ...]]] = None,
                    largest: bool = False) -> Dict[str, Tuple[int, ...]]:
        """Set the input shapes for ``batch`` on the context (``given``: inputs at another size,
        shapes without the batch); the shapes of every tensor."""
        ctx = self._context
        shapes: Dict[str, Tuple[int, ...]] = {}
        for b in self._bindings:
            if b.is_input:
                shape = self._input_shape(b, batch, largest)
                if given and b.name in given:
                    shape = (batch,) + tuple(given[b.name])
                mark = self._logger.heard.mark()
                ok = ctx.set_input_shape(b.name, shape) if self._v3 else ctx.set_binding_shape(b.index, shape)
                if ok is False:
                    lo, _opt, hi = self._profile(b)
                    raise EngineError(
                        f"{self.name}: TensorRT refused input shape {shape} for {b.name!r} on "
                        f"{self.board.label}: the engine's profile covers {lo} to {hi}. Open the "
                        f"engine with batch={batch}"
                        + ("" if not given else " and input_shape= a (smallest, usual, largest) range "
                           "that holds this size")
                        + tb.quote(self._logger.heard.since(mark, 1), 4))
                shapes[b.name] = shape
        for b in self._bindings:
            if not b.is_input:
                shape = ctx.get_tensor_shape(b.name) if self._v3 else ctx.get_binding_shape(b.index)
                shapes[b.name] = tuple(int(d) for d in shape)
        return shapes

    def _bind_all(self, trt: Any, cuda: Any, cuda_graph: bool, seed: int) -> None:
        self._bindings = self._bindings_list = self._discover(trt)
        lo, hi = self._profile_batches()
        self.max_batch = hi
        if self.plan_file:
            if not lo <= self.batch <= hi:
                raise EngineError(f"{self.name}: the plan file's profile covers batch {lo} to {hi}, "
                                  f"not {self.batch}; open it with batch={hi}")
        shapes = self._set_shapes(self.max_batch, largest=True)
        for b in self._bindings:
            b.allocate(cuda, shapes[b.name], self.io)
            if self._v3:
                self._context.set_tensor_address(b.name, b.address)
        # inputs before the first bind: binding copies them and captures the graph, once
        self._fill_inputs(seed)
        self._runner = Runner(cuda, self._context, self._bindings, self.io, self._v3, self._set_shapes,
                              graphs=cuda_graph, name=self.name)
        shapes = self._runner.bind(self.batch)
        specs = {b.name: TensorSpec(b.name, shapes[b.name], b.dtype) for b in self._bindings}
        self.inputs = [specs[b.name] for b in self._bindings if b.is_input]
        self.outputs = [specs[b.name] for b in self._bindings if not b.is_input]
        self._input_ranges = self._ranges()
        act = getattr(self._engine, "device_memory_size_v2", None)
        if act is None:  # before TensorRT 10.1 (deprecated from there)
            act = getattr(self._engine, "device_memory_size", 0)
        io_bytes = sum(b.host.nbytes for b in self._bindings)
        self.memory_bytes = int(act or 0) + self._plan_bytes + io_bytes

    def _ranges(self) -> Dict[str, Tuple[Tuple[int, ...], Tuple[Optional[int], ...]]]:
        """Inputs whose profile spans sizes besides the batch: name -> (min, max) without it."""
        out: Dict[str, Tuple[Tuple[int, ...], Tuple[Optional[int], ...]]] = {}
        for b in self._bindings:
            if b.is_input and any(d < 0 for d in self._engine_shape(b)[1:]):
                lo, _opt, hi = self._profile(b)
                if tuple(lo[1:]) != tuple(hi[1:]):
                    out[b.name] = (tuple(lo[1:]), tuple(hi[1:]))
        return out

    def _fill_inputs(self, seed: int) -> None:
        feeds = make_inputs([TensorSpec(b.name, b.host.shape, b.dtype) for b in self._bindings if b.is_input],
                            self.max_batch, seed)
        for b in self._bindings:
            if b.is_input:
                b.host.reshape(-1)[:] = feeds[b.name].reshape(-1)

    # -- running --------------------------------------------------------------------------------
    def _check_usable(self) -> None:
        if self.closed:
            raise EngineError(f"{self.name}: infer() on a closed engine")
        if os.getpid() != self._pid:
            raise EngineError(
                f"{self.name}: opened in process {self._pid}, used in process {os.getpid()}; a CUDA "
                "context does not survive fork: open the engine in the process that runs it"
            )

    def _in_context(self, fn: Any, *args: Any) -> Any:
        self._check_usable()
        ctx = self._ctx
        assert ctx is not None
        with ctx.current():
            return fn(*args)

    def _infer(self, batch: int) -> Dict[str, np.ndarray]:
        runner = self._runner
        assert runner is not None
        out = self._in_context(runner.run_once, batch)
        self.last_device_time = runner.last
        return out

    #: arrays already on the GPU are bound in place (set_tensor_address / the bindings array)
    device_inputs = True

    def _run(self, feeds: Dict[str, Any], batch: int) -> Dict[str, np.ndarray]:
        # the caller's host inputs go into the bound buffers, so a later infer() runs on them too
        return self._call(feeds, batch, False)

    def _run_on_device(self, feeds: Dict[str, Any], batch: int) -> Dict[str, DeviceView]:
        return self._call(feeds, batch, True)

    def _call(self, feeds: Dict[str, Any], batch: int, on_device: bool) -> Any:
        runner = self._runner
        assert runner is not None
        for name, value in feeds.items():
            if isinstance(value, DeviceArray):
                self._check_device_input(name, value)
        spec_shape = {s.name: tuple(s.shape[1:]) for s in self.inputs}
        given = {name: tuple(feeds[name].shape[1:]) for name in self._input_ranges
                 if tuple(feeds[name].shape[1:]) != spec_shape[name]}
        out = self._in_context(runner.run_once, batch, feeds, given or None, on_device)
        self.last_device_time = runner.last
        return out

    def _check_device_input(self, name: str, arr: DeviceArray) -> None:
        where = f"{self.name}: input {name!r} on the GPU ({type(arr.obj).__name__})"
        if not arr.contiguous:
            raise EngineError(f"{where} is not contiguous (strides {arr.strides} for shape {arr.shape}); "
                              "TensorRT reads dense C-order tensors: pass a contiguous copy "
                              "(CuPy: cupy.ascontiguousarray(x); PyTorch: x.contiguous())")
        if arr.ptr == 0:
            raise EngineError(f"{where} has a null device pointer (freed, or an empty array)")
        if arr.ptr % ALIGNMENT:
            # NvInferRuntime.h, setTensorAddress: "The pointer must have at least 256-byte alignment."
            raise EngineError(f"{where} starts at {arr.ptr:#x}, not on a {ALIGNMENT}-byte boundary as "
                              "TensorRT requires (a slice into a larger array?): pass a fresh contiguous "
                              "copy (CuPy: x.copy(); PyTorch: x.clone())")
        device = _device_index(arr.obj)
        if device is not None and device != 0:
            raise EngineError(f"{where} is on CUDA device {device}; the engine runs on device 0 "
                              "(move it with .to('cuda:0') / cupy.cuda.Device(0))")

    def timed_run(self, batch: int, t_start: float, until_t: Optional[float], until_n: Optional[int],
                  latencies: List[float], ends: List[float], gpu_times: Optional[List[float]]) -> float:
        """The harness's timed loop, run here: back to back with inferences in flight (see
        ``tensorrt_run``). Appends one latency (CUDA events, first copy or kernel to last), one
        host completion time and one GPU compute time per inference; returns the last
        completion time (``t_start`` when nothing ran)."""
        if batch != self.batch:
            batch = self.check_batch(batch)
        runner = self._runner
        assert runner is not None
        last = self._in_context(runner.timed_run, batch, self.clock.now, until_t, until_n,
                                latencies, ends, gpu_times)
        return t_start if last is None else last

    def layer_profile(self, batch: int) -> LayerProfile:
        """Each layer's mean time per inference from TensorRT's ``IProfiler`` on a context of its
        own, after the timed window (``Runner.profile_layers``), with its type, precision, format
        and tactic from the engine inspector; what either could not say is in the notes."""
        if batch != self.batch:
            batch = self.check_batch(batch)
        runner = self._runner
        assert runner is not None
        if not self._v3:
            return LayerProfile("tensorrt", notes=[
                f"{self.name}: no per-layer profile with TensorRT {self._trt.__version__}'s binding-index API "
                "(a second execution context needs an optimization profile of its own there); "
                "trtexec --loadEngine=PLAN --dumpProfile --separateProfileRun gives one"])
        trt, engine = self._trt, self._engine
        times, runs, (inspected, note) = self._in_context(
            runner.profile_layers, trt, engine, batch, PROFILE_RUNS,
            lambda ctx: tb.inspect_layers(trt, engine, ctx, self.name))
        return merge_profile(times, runs, inspected, note)

    def measurement_extra(self, batch: Optional[int] = None) -> Dict[str, Any]:
        runner = self._runner
        extra: Dict[str, Any] = {
            "io": self.io, "inflight": 2, "cuda_graph": runner.graph_state if runner is not None else "off",
            "build_time": self.build_time, "build_time_source": self.build_time_source,
            "latency_first": self.latency_first, "board": self.board.label,
            "tensorrt": str(getattr(self._trt, "__version__", "")),
        }
        if runner is not None and runner.capture_s is not None:
            extra["cuda_graph_capture_s"] = runner.capture_s
        if self.placement is not None:
            extra["placement"] = self.placement.describe()
            extra["gpu_layers"] = list(self.placement.gpu_layers)
        if self.default_workspace is not None:
            extra["workspace"] = (f"{self.default_workspace >> 20} MiB, trtexec's default: this TensorRT's "
                                  "builder defaults to 0 bytes")
        if self.requested_precision != self.precision:
            extra["requested_precision"] = self.requested_precision
        if self.notes:
            extra["notes"] = list(self.notes)
        return extra

    def describe(self) -> Dict[str, Any]:
        d = super().describe()
        d.update(self.measurement_extra(self.batch))
        return d

    # -- closing --------------------------------------------------------------------------------
    def _release(self) -> None:
        ctx = self._ctx
        here = ctx is not None and os.getpid() == self._pid
        if here:
            # on whichever thread closes: the frees and TensorRT's teardown in the context, and
            # the context off this thread's stack again after (see ProcessContext)
            with ctx.current():  # type: ignore[union-attr]
                self._drop()
            self._ctx = None
            ctx.release()  # type: ignore[union-attr]
        else:
            self._runner = None  # a forked child: the parent's CUDA objects are not its own
            self._drop()

    def _drop(self) -> None:
        runner, self._runner = self._runner, None
        try:
            if runner is not None:
                runner.close()
        finally:
            for attr in ("_context", "_engine", "_runtime"):
                setattr(self, attr, None)
            self._bindings = []

    def close(self) -> None:
        if not self.closed:
            self._release()
        super().close()
