"""Running a TensorRT engine with pycuda, timed the way trtexec times it (samples/common/
sampleInference.cpp).

- I/O (``io=``): ``"device"`` (the default, on every GPU) uses ``cudaMalloc`` buffers filled once:
  no copies in the timed loop (``trtexec --noDataTransfers``), the memory trtexec's engine reads.
  ``"mapped"`` puts inputs and outputs in page-locked host memory mapped into the GPU's address
  space: zero copies, as an application on unified memory runs; but the CUDA for Tegra application
  note lists pinned memory as uncached on Jetsons without I/O coherency (Nano, TX2: compute
  capability below 7.2), so kernels reading it run slower there than on device memory, and the
  figure would measure the memory type as much as the engine. ``"host"`` copies inputs in and
  outputs out around every inference (trtexec's default host latency). The simulator's default
  harness (``sim.harness_model``, "plugin") describes this default: no copies, a CUDA graph, two
  inferences in flight.
- The timed loop keeps two inferences in flight (trtexec's default ``--exposeDMA`` off): enqueue
  one, then wait for the one before it, so the GPU never idles while the host waits. CUDA events
  around each inference give its latency (first copy or kernel to last) and its GPU compute time
  (enqueue to kernels done: trtexec's "GPU Compute Time").
- CUDA graphs (``trtexec --useCudaGraph``): with cuda-python installed the enqueue is captured once
  per shape and replayed; without it, or when TensorRT's enqueue cannot be captured, the loop
  enqueues directly and says why.
- The caller's inputs (``engine(x)``): numpy arrays are written into the engine's page-locked
  buffers (zero copy when mapped; one host-to-device copy from there otherwise); arrays already on
  the GPU are bound in place for the call (``set_tensor_address``, or the bindings array before
  8.5) and restored after, with no copy and no CUDA graph (a graph replays the addresses it was
  captured with). A call at another size than the bound one sets the input shapes for it and
  runs without a graph too. ``outputs="device"`` returns the engine's own output buffers as
  ``DeviceView`` objects (``__cuda_array_interface__``), valid until the engine's next inference.
- Per-layer times (``Runner.profile_layers``, trtexec's ``--separateProfileRun``): a pass of its
  own after the timed window, on a second execution context with an ``IProfiler`` attached, so
  the gated figures never run with a profiler (TensorRT records events around every layer of a
  profiled enqueue, and a context with a profiler is not captured into a CUDA graph). The
  context reports after each synchronised enqueue (``enqueue_emits_profile`` off,
  ``report_to_profiler``), as trtexec's profiling run does.
- Teardown frees every buffer, event, stream and graph while the CUDA context is still current:
  pycuda skips (silently) frees whose context is gone, and as the CUDA runtime inside TensorRT
  keeps the primary context alive, such buffers would leak for the life of the process.
"""

import os
import threading
import time
from collections import deque
from contextlib import contextmanager
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Tuple

import numpy as np

from ..errors import EngineError
from .base import DeviceArray, loop_limits
from .cuda_graphs import Graph, capture, import_cudart

IO_MODES = ("mapped", "device", "host")
#: what ``io=None`` means, on an integrated GPU as on a discrete one (see the module docstring)
DEFAULT_IO = "device"
#: Inferences in flight in the timed loop (trtexec: 1 + overlap, overlap on by default).
IN_FLIGHT = 2
#: Inferences the profiling pass times (after one unprofiled warm-up on its own context)
PROFILE_RUNS = 10


# -- the CUDA context of this process -----------------------------------------------------------
class ProcessContext:
    """The primary context of device 0, retained once per process and shared by its engines.

    pycuda's context stack is per thread, and a stack still holding a context when it is destroyed
    (at thread exit; the main thread's at module cleanup) aborts the process; ``Context.pop()``
    pops the calling thread's stack only (pycuda src/cpp/cuda.hpp: ``context_stack_ptr``,
    ``context::pop``, ``context_stack::~context_stack``). So nothing is left pushed between calls:
    every use pushes the context on the calling thread and pops it there (``current``), whichever
    thread opens, runs or closes an engine (a timeout thread, a collection in another thread).
    """

    _lock = threading.Lock()
    _by_pid: Dict[int, "ProcessContext"] = {}

    def __init__(self, cuda: Any, index: int = 0) -> None:
        cuda.init()
        self.cuda = cuda
        self.device = cuda.Device(index)
        # the primary context is the one the CUDA runtime inside TensorRT uses too
        self.context = self.device.retain_primary_context()
        self.users = 0

    @classmethod
    def acquire(cls, cuda: Any) -> "ProcessContext":
        with cls._lock:
            ctx = cls._by_pid.get(os.getpid())
            if ctx is None:
                ctx = cls._by_pid[os.getpid()] = cls(cuda)
            ctx.users += 1
            return ctx

    @contextmanager
    def current(self) -> Iterator[None]:
        """The context current on the calling thread for the block, and off its stack after."""
        self.context.push()
        try:
            yield
        finally:
            self.context.pop()

    def release(self) -> None:
        with self._lock:
            self.users -= 1
            if self.users > 0:
                return
            self._by_pid.pop(os.getpid(), None)
        # pycuda releases a context from another thread than the one that retained it only while
        # it is current there (context::detach); detach drops it from this thread's stack itself
        self.context.push()
        self.context.detach()

    def attribute(self, name: str) -> Optional[int]:
        attr = getattr(self.cuda.device_attribute, name, None)
        if attr is None:
            return None
        try:
            return int(self.device.get_attribute(attr))
        except Exception:  # an attribute this driver does not know
            return None

    @property
    def gpu_name(self) -> str:
        return str(self.device.name())

    @property
    def compute_capability(self) -> str:
        major, minor = self.device.compute_capability()
        return f"{major}.{minor}"

    @property
    def sm_count(self) -> int:
        return int(self.attribute("MULTIPROCESSOR_COUNT") or 0)

    @property
    def integrated(self) -> bool:
        return bool(self.attribute("INTEGRATED"))


def layer_times(trt: Any) -> Any:
    """An ``IProfiler`` (a subclass of the binding's class) summing the milliseconds TensorRT
    reports per layer in its ``ms``, in the order it reports them. It keeps the binding's own
    ``__init__``: pybind11 requires a subclass that overrides it to call it."""

    def report_layer_time(self: Any, layer_name: str, ms: float) -> None:
        times = self.__dict__.setdefault("ms", {})
        times[layer_name] = times.get(layer_name, 0.0) + float(ms)

    return type("LayerTimes", (trt.IProfiler,), {"report_layer_time": report_layer_time})()


# -- buffers ------------------------------------------------------------------------------------
class Binding:
    """One I/O tensor: its host array (page-locked) and the device address TensorRT reads."""

    __slots__ = ("name", "index", "is_input", "dtype", "host", "device", "address", "view")

    def __init__(self, name: str, index: int, is_input: bool, dtype: Any) -> None:
        self.name, self.index, self.is_input, self.dtype = name, index, is_input, np.dtype(dtype)
        self.host: Any = None      # page-locked ndarray (its .base is pycuda's HostAllocation)
        self.device: Any = None    # DeviceAllocation (device/host modes)
        self.address = 0           # what TensorRT is given
        self.view: Any = None      # host view at the bound batch

    def allocate(self, cuda: Any, shape: Tuple[int, ...], io: str) -> None:
        if io == "mapped":
            self.host = cuda.pagelocked_empty(shape, self.dtype, mem_flags=cuda.host_alloc_flags.DEVICEMAP)
            self.address = int(self.host.base.get_device_pointer())
        else:
            self.host = cuda.pagelocked_empty(shape, self.dtype)
            self.device = cuda.mem_alloc(max(1, self.host.nbytes))
            self.address = int(self.device)

    def free(self) -> None:
        """Free explicitly, in the current context (see the module doc)."""
        self.view = None
        host, self.host = self.host, None
        if host is not None and getattr(host, "base", None) is not None and hasattr(host.base, "free"):
            host.base.free()
        device, self.device = self.device, None
        if device is not None:
            device.free()
        self.address = 0


class DeviceView:
    """An output left on the GPU: the engine's own buffer, exposed with ``__cuda_array_interface__``
    (version 3) so CuPy (``cupy.asarray(v)``), PyTorch (``torch.as_tensor(v, device="cuda")``) and
    Numba read it without a copy. Valid until the engine's next inference, which overwrites it,
    and never after the engine is closed: copy what must outlive either."""

    __slots__ = ("ptr", "shape", "dtype", "_engine")

    def __init__(self, ptr: int, shape: Tuple[int, ...], dtype: Any, engine: str) -> None:
        self.ptr, self.shape, self.dtype, self._engine = int(ptr), tuple(shape), np.dtype(dtype), engine

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        # stream None: the engine synchronised its stream before returning
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False),
                "strides": None, "version": 3, "stream": None}

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape)) * self.dtype.itemsize

    def __repr__(self) -> str:
        return f"<DeviceView of {self._engine}: {self.shape} {self.dtype} at {self.ptr:#x}>"


class Slot:
    """The events of one inference in flight."""

    def __init__(self, cuda: Any) -> None:
        flags = getattr(getattr(cuda, "event_flags", None), "BLOCKING_SYNC", 0)
        # start: first copy or kernel; compute start/end: around the enqueue; end: last copy
        self.start, self.c0, self.c1, self.end = (cuda.Event(flags) for _ in range(4))


class Runner:
    """Buffers, stream and events of one execution context; runs it once or back to back."""

    def __init__(self, cuda: Any, context: Any, bindings: List[Binding], io: str, v3: bool,
                 set_shapes: Callable[..., Dict[str, Tuple[int, ...]]], graphs: bool, name: str) -> None:
        self.cuda = cuda
        self.context = context
        self.bindings = bindings
        self.io = io
        self.v3 = v3
        self.set_shapes = set_shapes
        self.name = name
        self.stream = cuda.Stream()
        self.slots = [Slot(cuda) for _ in range(IN_FLIGHT)]
        # enqueueV2's array is indexed by binding index; other profiles' slots stay null
        self.ptrs = [0] * (max((b.index for b in bindings), default=-1) + 1)
        for b in bindings:
            self.ptrs[b.index] = b.address
        #: (batch, inputs at other sizes or None) the context's shapes are set for
        self.bound: Optional[Tuple[int, Any]] = None
        #: host seconds of the first enqueue through its completion: what a first inference costs
        self.first_s: Optional[float] = None
        #: host seconds of the last capture and instantiation of a graph (the warm-up excluded)
        self.capture_s: Optional[float] = None
        self.graph: Optional[Graph] = None
        self.graph_note = "off" if not graphs else ""
        self.cudart: Any = None
        if graphs:
            self.cudart, why = import_cudart()
            if self.cudart is None:
                self.graph_note = why
        self.failed = ""

    # -- shapes ---------------------------------------------------------------------------------
    def bind(self, batch: int, given: Optional[Dict[str, Tuple[int, ...]]] = None) -> Dict[str, Tuple[int, ...]]:
        """Set the shapes for ``batch`` (``given``: inputs at another size than the usual, as a
        caller's call has them) and the host views at them. At the usual sizes, as the timed
        loop runs, the inputs go to the device once and the enqueue is captured in a graph."""
        shapes = self.set_shapes(batch, given) if given else self.set_shapes(batch)
        for b in self.bindings:
            n = int(np.prod(shapes[b.name]))
            b.view = b.host.reshape(-1)[:n].reshape(shapes[b.name])
        self.bound = (batch, None if not given else tuple(sorted(given.items())))
        if given:
            if self.graph is not None:  # captured at other shapes
                self.graph.destroy()
                self.graph = None
            return shapes
        if self.io == "device":
            for b in self.bindings:
                if b.is_input:  # filled once: no copies in the loop
                    self.cuda.memcpy_htod_async(b.device, b.view, self.stream)
            self.stream.synchronize()
        self._capture()
        return shapes

    def _capture(self) -> None:
        if self.graph is not None:
            self.graph.destroy()
            self.graph = None
        if self.cudart is None or self.graph_note:
            return
        # trtexec enqueues once before capturing, so lazy initialisation stays out of the graph;
        # on the opened batch this is the engine's first enqueue, so latency_first is timed here
        t0 = time.perf_counter()
        self._enqueue_direct()
        self.stream.synchronize()
        t1 = time.perf_counter()
        if self.first_s is None:
            self.first_s = t1 - t0
        self.graph, self.graph_note = capture(self.cudart, int(self.stream.handle), self._enqueue_direct)
        self.capture_s = time.perf_counter() - t1 if self.graph is not None else None

    @property
    def graph_state(self) -> str:
        return "on" if self.graph is not None else (self.graph_note or "off")

    # -- one inference ----------------------------------------------------------------------------
    def _enqueue_direct(self) -> bool:
        if self.v3:
            return bool(self.context.execute_async_v3(self.stream.handle))
        return bool(self.context.execute_async_v2(bindings=self.ptrs, stream_handle=self.stream.handle))

    def _launch(self, slot: Slot, in_place: Any = ()) -> None:
        """Enqueue one inference on ``slot``; ``in_place``: inputs bound at the caller's device
        addresses (no copy for them, no graph)."""
        cuda, stream = self.cuda, self.stream
        slot.start.record(stream)
        if self.io == "host":
            for b in self.bindings:
                if b.is_input and b.name not in in_place:
                    cuda.memcpy_htod_async(b.device, b.view, stream)
        slot.c0.record(stream)
        ok = self.graph.launch() if self.graph is not None and not in_place else self._enqueue_direct()
        if not ok:
            raise EngineError(f"{self.name}: TensorRT failed to enqueue the batch")
        slot.c1.record(stream)
        if self.io == "host":
            for b in self.bindings:
                if not b.is_input:
                    cuda.memcpy_dtoh_async(b.view, b.device, stream)
        slot.end.record(stream)

    def run_once(self, batch: int, feeds: Optional[Dict[str, Any]] = None,
                 given: Optional[Dict[str, Tuple[int, ...]]] = None, on_device: bool = False) -> Dict[str, Any]:
        """One inference, synchronised, on the bound inputs or on ``feeds`` (numpy arrays copied
        in first, ``DeviceArray`` inputs bound in place); ``given``: inputs at another size than
        the usual. The outputs copied out (they outlive the engine), or with ``on_device`` the
        engine's own output buffers (``DeviceView``). ``last``: its device time (CUDA events)."""
        if (batch, None if not given else tuple(sorted(given.items()))) != self.bound:
            self.bind(batch, given)
        in_place = self._load(feeds) if feeds is not None else {}
        t0 = time.perf_counter()
        slot = self.slots[0]
        if in_place:
            self._bind_in_place(in_place)
        try:
            self._launch(slot, in_place)
            slot.end.synchronize()
        finally:
            if in_place:
                self._bind_in_place({})
        if self.io == "device" and not on_device:
            for b in self.bindings:
                if not b.is_input:
                    self.cuda.memcpy_dtoh_async(b.view, b.device, self.stream)
            self.stream.synchronize()
        if self.first_s is None:
            self.first_s = time.perf_counter() - t0
        self.last = slot.end.time_since(slot.start) * 1e-3
        if on_device:
            if self.io == "host":
                self.stream.synchronize()
            return {b.name: DeviceView(b.address, b.view.shape, b.dtype, self.name)
                    for b in self.bindings if not b.is_input}
        return {b.name: np.array(b.view) for b in self.bindings if not b.is_input}

    def _load(self, feeds: Dict[str, Any]) -> Dict[str, DeviceArray]:
        """Numpy inputs into the bound buffers; the inputs already on the GPU, by name."""
        in_place: Dict[str, DeviceArray] = {}
        for b in self.bindings:
            if not b.is_input:
                continue
            value = feeds[b.name]
            if isinstance(value, DeviceArray):
                in_place[b.name] = value
                continue
            b.view[...] = value
            if self.io == "device":  # the timed loop copies no inputs: they live on the device
                self.cuda.memcpy_htod_async(b.device, b.view, self.stream)
        if any(a.stream not in (None, 1) for a in in_place.values()):
            # written on another stream than the legacy default one ours waits for: the CUDA array
            # interface asks the consumer to synchronise with it; pycuda wraps no foreign stream,
            # so the whole context is synchronised
            self.cuda.Context.synchronize()
        return in_place

    def _bind_in_place(self, in_place: Dict[str, DeviceArray]) -> None:
        """Point TensorRT at the caller's device buffers (or, empty, back at the engine's own)."""
        for b in self.bindings:
            if not b.is_input:
                continue
            address = in_place[b.name].ptr if b.name in in_place else b.address
            if self.v3:
                if not self.context.set_tensor_address(b.name, address):
                    raise EngineError(f"{self.name}: TensorRT refused the address {address:#x} of "
                                      f"input {b.name!r}")
            else:
                self.ptrs[b.index] = address

    # -- back to back -----------------------------------------------------------------------------
    def timed_run(self, batch: int, now: Callable[[], float], until_t: Optional[float],
                  until_n: Optional[int], latencies: List[float], ends: List[float],
                  gpu_times: Optional[List[float]]) -> Optional[float]:
        """Run until the clock passes ``until_t`` or ``until_n`` inferences completed, with
        IN_FLIGHT in flight; one entry per completed inference. Returns the last completion time
        (None if nothing ran)."""
        if (batch, None) != self.bound:
            self.bind(batch)
        limit_t, limit_n = loop_limits(until_t, until_n)
        pending: Deque[Slot] = deque()
        free = list(self.slots)
        launched = 0
        last: Optional[float] = None
        while True:
            if free and launched != limit_n and (last is None or last < limit_t):
                slot = free.pop()
                self._launch(slot)
                pending.append(slot)
                launched += 1
                if len(pending) < IN_FLIGHT and launched != limit_n:
                    continue
            if not pending:
                break
            slot = pending.popleft()
            slot.end.synchronize()
            last = now()
            latencies.append(slot.end.time_since(slot.start) * 1e-3)  # time_since is in ms
            ends.append(last)
            if gpu_times is not None:
                gpu_times.append(slot.c1.time_since(slot.c0) * 1e-3)
            free.append(slot)
        return last

    # -- per-layer profile ------------------------------------------------------------------------
    def profile_layers(self, trt: Any, engine: Any, batch: int, runs: int = PROFILE_RUNS,
                       inspect: Optional[Callable[[Any], Any]] = None) -> Tuple[List[Tuple[str, float]], int, Any]:
        """Each layer's mean milliseconds per inference at ``batch`` over ``runs`` inferences of a
        second execution context with a profiler attached (name-based API only), in the order
        TensorRT reported them; ``inspect(context)``, called while that context lives, gives the
        third element (the inspector's layers at its shapes)."""
        if (batch, None) != self.bound:
            self.bind(batch)
        ctx = engine.create_execution_context()
        if ctx is None:
            raise EngineError(f"{self.name}: TensorRT could not create a second execution context for the "
                              "profiling pass (out of device memory?)")
        try:
            for b in self.bindings:
                if b.is_input and not ctx.set_input_shape(b.name, tuple(b.view.shape)):
                    raise EngineError(f"{self.name}: the profiling context refused input shape "
                                      f"{tuple(b.view.shape)} for {b.name!r}")
            for b in self.bindings:
                ctx.set_tensor_address(b.name, b.address)
            handle = self.stream.handle
            ctx.execute_async_v3(handle)  # lazy initialisation outside the profile
            self.stream.synchronize()
            times = layer_times(trt)
            ctx.profiler = times
            ctx.enqueue_emits_profile = False
            for _ in range(runs):
                if not ctx.execute_async_v3(handle):
                    raise EngineError(f"{self.name}: TensorRT failed to enqueue the profiling pass")
                self.stream.synchronize()
                ctx.report_to_profiler()
            inspected = inspect(ctx) if inspect is not None else None
        finally:
            self.stream.synchronize()
            del ctx  # its activation memory goes back before the next measurement
        return [(n, ms / runs) for n, ms in times.__dict__.get("ms", {}).items()], runs, inspected

    # -- teardown -------------------------------------------------------------------------------
    def close(self) -> None:
        """Free everything while the context is current (the caller makes sure it is)."""
        try:
            if self.stream is not None:
                self.stream.synchronize()
        finally:
            if self.graph is not None:
                self.graph.destroy()
                self.graph = None
            for b in self.bindings:
                b.free()
            self.slots = []
            self.stream = None
