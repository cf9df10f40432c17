"""FAKE pycuda (``pycuda`` + ``pycuda.driver``) for testing the TensorRT backend without a GPU.
Installed at the import boundary by ``fake_tensorrt.install``.

It has the names and signatures of pycuda's driver module as its wrapper defines them
(inducer/pycuda src/wrapper/wrap_cudadrv.cpp; doc/driver.rst): ``init``, ``Device`` (``name``,
``compute_capability``, ``get_attribute``, ``retain_primary_context``, ``make_context``),
``Context`` (``push``, static ``pop``, ``detach``, static ``synchronize``), ``device_attribute``,
``mem_alloc`` (DeviceAllocation: ``free``, ``int()``), ``pagelocked_empty(shape, dtype,
order="C", mem_flags=0)`` (an ndarray whose ``.base`` is a HostAllocation: ``free``,
``get_device_pointer``), ``host_alloc_flags`` (PORTABLE, DEVICEMAP, WRITECOMBINED), ``Stream``
(``synchronize``, ``is_done``, ``handle``), ``Event(flags)`` (``record``, ``synchronize``,
``query``, ``time_since``, ``time_till``), ``event_flags``, ``memcpy_htod_async``,
``memcpy_dtoh_async``, ``memcpy_dtod_async``.

And pycuda's behaviour where it matters (src/cpp/cuda.hpp): every allocation, stream and event
belongs to the context current when it was made; freeing one whose context has been detached is
skipped *silently* (``CUDAPP_CATCH_CLEANUP_ON_DEAD_CONTEXT``), and from a thread the context is
not current in it is skipped with a UserWarning; freeing twice raises LogicError. Skipped frees are
counted in ``STATE.leaked``: the CUDA runtime inside TensorRT keeps the primary context alive, so
on a board they are leaked for the life of the process.

Contexts are per thread, as in pycuda (cuda.hpp at inducer/pycuda 19bed90): each thread has its own
context stack (``boost::thread_specific_ptr<context_stack> context_stack_ptr``, cuda.hpp 544-587,
cuda.cpp 6); ``push`` puts a context on the calling thread's stack (``context_push``, 887-895);
the static ``Context.pop()`` pops the calling thread's, and raises on an empty one ("cannot pop
non-current context", 722-745); ``detach`` releases the context when it is current in the calling
thread or was made there, and from any other thread silently does nothing but mark it invalid
("leaked out-of-thread context", 661-703). A stack still holding a context when it is destroyed
(at thread exit, and at module cleanup for the main thread) makes pycuda print "The context stack
was not empty upon module cleanup" and ``abort()`` (901-916), even after pycuda.autoinit's
``context.pop()`` at exit (pycuda/autoinit.py): ``abort_at_exit()`` says whether that would happen.

Device memory is numpy byte arrays addressed by fake pointers (a DEVICEMAP host allocation's
device pointer addresses the host array itself: zero copy). A fake GPU clock in milliseconds
advances with copies (``COPY_MS_PER_MB``) and kernels, per stream, so events give exact times.
"""

import itertools
import threading
import types
import warnings
import weakref
from typing import Any, Dict, List, Optional

import numpy as np

COPY_MS_PER_MB = 0.1


class Error(Exception):
    pass


class LogicError(Error):
    pass


class State:
    def __init__(self) -> None:
        self.memory: Dict[int, np.ndarray] = {}
        self.next_ptr = itertools.count(0x10000, 0x10000)
        self.contexts: List[Context] = []
        #: each thread's context stack, by thread id (pycuda's is thread-local)
        self.stacks: Dict[int, List[Context]] = {}
        #: contexts really released by detach (cuDevicePrimaryCtxRelease / cuCtxDetach)
        self.released = 0
        self.tails: Dict[int, float] = {}
        self.freed = 0
        self.leaked = 0
        self.pushes = 0
        self.pops = 0
        self.host_allocs = 0
        self.mapped_allocs = 0
        self.copies = 0
        #: ("htod" | "dtoh" | "dtod", device address, bytes) per copy, in order: which buffer a copy hit
        self.copy_log: List[Any] = []
        #: ("enqueue", stream) and ("sync", None) in order: shows inferences in flight
        self.trace: List[Any] = []
        #: allocations, streams and events not yet freed (weakly held: pycuda frees on collection)
        self.live: Any = weakref.WeakValueDictionary()

    @property
    def stack(self) -> List["Context"]:
        """The calling thread's context stack."""
        return self.stacks.setdefault(threading.get_ident(), [])


STATE = State()


def abort_at_exit() -> List[int]:
    """The threads whose context stack is not empty: for any, pycuda aborts the process when the
    stack is destroyed (``context_stack::~context_stack``, cuda.hpp 901-916)."""
    return [thread for thread, stack in STATE.stacks.items() if stack]


def reset() -> None:
    global STATE
    STATE = State()
    Device.NAME, Device.CC, Device.SMS, Device.INTEGRATED = "Orin", (8, 7), 8, 1


def init(flags: int = 0) -> None:
    pass


class device_attribute:  # noqa: N801 - pycuda's name
    MULTIPROCESSOR_COUNT = "MULTIPROCESSOR_COUNT"
    INTEGRATED = "INTEGRATED"
    CAN_MAP_HOST_MEMORY = "CAN_MAP_HOST_MEMORY"


class host_alloc_flags:  # noqa: N801
    PORTABLE, DEVICEMAP, WRITECOMBINED = 1, 2, 4


class event_flags:  # noqa: N801
    DEFAULT, BLOCKING_SYNC, DISABLE_TIMING, INTERPROCESS = 0, 1, 2, 4


class Context:
    def __init__(self, device: "Device") -> None:
        self.device = device
        self.valid = True
        self.thread = threading.get_ident()

    def push(self) -> None:
        STATE.pushes += 1
        STATE.stack.append(self)

    @staticmethod
    def pop() -> None:
        STATE.pops += 1
        if not STATE.stack:
            raise LogicError("cuCtxPopCurrent failed: invalid device context")
        STATE.stack.pop()

    def detach(self) -> None:
        if not self.valid:
            raise LogicError("context::detach failed: cannot detach from invalid context")
        stack = STATE.stack
        active = bool(stack) and stack[-1] is self
        if active or self.thread == threading.get_ident():
            STATE.released += 1
        # else: the out-of-thread branch: nothing released, no word said
        self.valid = False
        if active:  # current_context(this) drops it from the calling thread's stack only
            while stack and (stack[-1] is self or not stack[-1].valid):
                stack.pop()

    @staticmethod
    def synchronize() -> None:
        pass


class Device:
    NAME = "Orin"
    CC = (8, 7)
    SMS = 8
    INTEGRATED = 1

    def __init__(self, number: int) -> None:
        self.number = number

    @staticmethod
    def count() -> int:
        return 1

    def name(self) -> str:
        return self.NAME

    def compute_capability(self):
        return self.CC

    def get_attribute(self, attr: Any) -> int:
        return {"MULTIPROCESSOR_COUNT": self.SMS, "INTEGRATED": self.INTEGRATED, "CAN_MAP_HOST_MEMORY": 1}[attr]

    def retain_primary_context(self) -> Context:
        ctx = Context(self)
        STATE.contexts.append(ctx)
        return ctx

    def make_context(self, flags: int = 0) -> Context:
        ctx = self.retain_primary_context()
        ctx.push()
        return ctx


def _current() -> Context:
    if not STATE.stack or not STATE.stack[-1].valid:
        raise LogicError("cuMemAlloc failed: invalid device context")
    return STATE.stack[-1]


class _ContextDependent:
    """What pycuda's context_dependent objects do when they are freed (cuda.hpp)."""

    kind = "allocation"

    def __init__(self) -> None:
        self.context = _current()
        self.valid = True
        self.state = STATE  # a collection after fake_pycuda.reset() must not touch the new state
        STATE.live[id(self)] = self

    def _release(self) -> bool:
        """True when really freed; False when skipped (dead or out-of-thread context)."""
        self.state.live.pop(id(self), None)
        self.valid = False
        ctx = self.context
        if not ctx.valid:
            self.state.leaked += 1  # "in dead context was implicitly cleaned up": silently nothing
            return False
        if (not self.state.stack or self.state.stack[-1] is not ctx) and threading.get_ident() != ctx.thread:
            warnings.warn(f"{self.kind} in out-of-thread context could not be cleaned up", UserWarning,
                          stacklevel=3)
            self.state.leaked += 1
            return False
        self.state.freed += 1
        return True

    def __del__(self) -> None:
        if getattr(self, "valid", False):
            try:
                self._release_memory()
            except Exception:
                pass

    def _release_memory(self) -> None:
        self._release()


class DeviceAllocation(_ContextDependent):
    kind = "device_allocation"

    def __init__(self, nbytes: int) -> None:
        super().__init__()
        self.ptr = next(self.state.next_ptr)
        self.state.memory[self.ptr] = np.zeros(nbytes, dtype=np.uint8)

    def __int__(self) -> int:
        return self.ptr

    __index__ = __int__

    def free(self) -> None:
        if not self.valid:
            raise LogicError("device_allocation::free failed: invalid resource handle")
        self._release_memory()

    def _release_memory(self) -> None:
        if self._release():
            self.state.memory.pop(self.ptr, None)


class HostAllocation(_ContextDependent):
    """``pycuda.driver.HostAllocation`` (PagelockedHostAllocation): the base of a page-locked array."""

    kind = "pagelocked_host_allocation"

    def __init__(self, nbytes: int, flags: int) -> None:
        super().__init__()
        self.flags = flags
        self.buffer = bytearray(max(1, nbytes))
        self.mapped: Optional[int] = None
        self.state.host_allocs += 1

    def get_device_pointer(self) -> int:
        if not self.flags & host_alloc_flags.DEVICEMAP:
            raise LogicError("cuMemHostGetDevicePointer failed: invalid value")
        if self.mapped is None:
            self.mapped = next(self.state.next_ptr)
            self.state.memory[self.mapped] = np.frombuffer(self.buffer, dtype=np.uint8)
            self.state.mapped_allocs += 1
        return self.mapped

    def get_flags(self) -> int:
        return self.flags

    def free(self) -> None:
        if not self.valid:
            raise LogicError("pagelocked_host_allocation::free failed: invalid resource handle")
        self._release_memory()

    def _release_memory(self) -> None:
        if self._release() and self.mapped is not None:
            self.state.memory.pop(self.mapped, None)


def mem_alloc(bytes: int) -> DeviceAllocation:  # noqa: A002 - pycuda's parameter name
    return DeviceAllocation(int(bytes))


def pagelocked_empty(shape, dtype, order: str = "C", mem_flags: int = 0) -> np.ndarray:
    dtype = np.dtype(dtype)
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    nbytes = int(np.prod(shape)) * dtype.itemsize
    alloc = HostAllocation(nbytes, mem_flags)
    raw = np.frombuffer(alloc.buffer, dtype=np.uint8)[:nbytes].view(dtype).reshape(shape, order=order)
    # like pycuda's, the array's base is the allocation (here a stand-in forwarding to it)
    return np.asarray(_Exporter(alloc, raw))


class _Exporter:
    """Exports the allocation's memory to numpy, so it becomes the array's ``.base``."""

    def __init__(self, alloc: HostAllocation, array: np.ndarray) -> None:
        self.alloc = alloc
        self.raw = array
        self.__array_interface__ = dict(array.__array_interface__)

    def free(self) -> None:
        self.alloc.free()

    def get_device_pointer(self) -> int:
        return self.alloc.get_device_pointer()

    def get_flags(self) -> int:
        return self.alloc.get_flags()


def device_bytes(ptr: int) -> np.ndarray:
    try:
        return STATE.memory[int(ptr)]
    except KeyError:
        raise LogicError(f"fake pycuda: {int(ptr):#x} is no live device address (freed?)") from None


def _handle(stream: Any) -> int:
    return 0 if stream is None else int(stream.handle)


def launch(stream_handle: int, fn: Any, ms: float) -> None:
    """Run ``fn`` as GPU work on a stream costing ``ms`` of the fake GPU clock."""
    fn()
    STATE.tails[int(stream_handle)] = STATE.tails.get(int(stream_handle), 0.0) + ms


def _copied(stream: Any, fn: Any, nbytes: int) -> None:
    STATE.copies += 1
    launch(_handle(stream), fn, _copy_ms(nbytes))


def _copy_ms(nbytes: int) -> float:
    return COPY_MS_PER_MB * nbytes / 1e6


def memcpy_htod_async(dest, src: np.ndarray, stream=None) -> None:
    raw = np.ascontiguousarray(src).view(np.uint8).reshape(-1)
    STATE.copy_log.append(("htod", int(dest), raw.size))

    def copy() -> None:
        device_bytes(dest)[: raw.size] = raw

    _copied(stream, copy, raw.size)


def memcpy_dtoh_async(dest: np.ndarray, src, stream=None) -> None:
    STATE.copy_log.append(("dtoh", int(src), dest.nbytes))
    def copy() -> None:
        raw = dest.reshape(-1).view(np.uint8)
        raw[:] = device_bytes(src)[: raw.size]

    _copied(stream, copy, dest.nbytes)


def memcpy_dtod_async(dest, src, size: int, stream=None) -> None:
    STATE.copy_log.append(("dtod", int(dest), size))
    def copy() -> None:
        device_bytes(dest)[:size] = device_bytes(src)[:size]

    _copied(stream, copy, size)


class Stream(_ContextDependent):
    kind = "stream"
    _handles = itertools.count(0xABC0)

    def __init__(self, flags: int = 0) -> None:
        super().__init__()
        self.handle = next(self._handles)
        self.synchronized = 0

    def synchronize(self) -> None:
        self.synchronized += 1

    def is_done(self) -> bool:
        return True


class Event(_ContextDependent):
    kind = "event"

    def __init__(self, flags: int = 0) -> None:
        super().__init__()
        self.flags = flags
        self.t: Optional[float] = None

    def record(self, stream=None) -> "Event":
        self.t = STATE.tails.get(_handle(stream), 0.0)
        return self

    def synchronize(self) -> "Event":
        STATE.trace.append(("sync", None))
        return self

    def query(self) -> bool:
        return True

    def time_since(self, event: "Event") -> float:
        if self.t is None or event.t is None:
            raise LogicError("cuEventElapsedTime failed: invalid resource handle")
        return self.t - event.t

    def time_till(self, event: "Event") -> float:
        return event.time_since(self)


def modules():
    """(pycuda package, pycuda.driver) module objects to put in sys.modules."""
    import sys

    driver = sys.modules[__name__]
    package = types.ModuleType("pycuda")
    package.__path__ = []  # a package, so `import pycuda.driver` resolves through sys.modules
    package.driver = driver
    return package, driver


reset()
