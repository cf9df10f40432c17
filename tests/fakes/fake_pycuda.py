"""FAKE pycuda (``pycuda`` + ``pycuda.driver``) for testing the TensorRT backend's control flow on a
machine without a GPU. Installed at the import boundary by ``fake_tensorrt.install``.

Device memory is numpy byte arrays addressed by fake pointers; a fake GPU clock (milliseconds)
advances on copies and kernel launches, so CUDA events give deterministic device times.
"""

import itertools
import types
from typing import Dict, List

import numpy as np

#: Simulated GPU time: copies cost COPY_MS_PER_MB, fake_tensorrt's kernels COMPUTE_MS_PER_ITEM.
COPY_MS_PER_MB = 0.1


class State:
    def __init__(self) -> None:
        self.memory: Dict[int, np.ndarray] = {}
        self.gpu_ms = 0.0
        self.next_ptr = itertools.count(0x10000, 0x10000)
        self.contexts: List[Context] = []
        self.freed = 0
        self.pushes = 0
        self.pops = 0


STATE = State()


def reset() -> None:
    global STATE
    STATE = State()


class Error(Exception):
    pass


def init(flags: int = 0) -> None:
    pass


class Context:
    def __init__(self, device: "Device") -> None:
        self.device = device
        self.detached = False

    def push(self) -> None:
        STATE.pushes += 1

    def pop(self) -> None:
        STATE.pops += 1

    def detach(self) -> None:
        self.detached = True


class Device:
    NAME = "Orin (fake)"
    CC = (8, 7)

    def __init__(self, index: int) -> None:
        self.index = index

    def name(self) -> str:
        return self.NAME

    def compute_capability(self):
        return self.CC

    def retain_primary_context(self) -> Context:
        ctx = Context(self)
        STATE.contexts.append(ctx)
        return ctx

    def make_context(self) -> Context:
        ctx = self.retain_primary_context()
        ctx.push()
        return ctx


class DeviceAllocation:
    def __init__(self, nbytes: int) -> None:
        self.ptr = next(STATE.next_ptr)
        STATE.memory[self.ptr] = np.zeros(nbytes, dtype=np.uint8)

    def __int__(self) -> int:
        return self.ptr

    def free(self) -> None:
        if STATE.memory.pop(self.ptr, None) is not None:
            STATE.freed += 1


def mem_alloc(nbytes: int) -> DeviceAllocation:
    return DeviceAllocation(int(nbytes))


def pagelocked_empty(shape, dtype) -> np.ndarray:
    return np.empty(shape, dtype=dtype)


def device_bytes(ptr: int) -> np.ndarray:
    return STATE.memory[int(ptr)]


def _advance_copy(nbytes: int) -> None:
    STATE.gpu_ms += COPY_MS_PER_MB * nbytes / 1e6


def memcpy_htod_async(dest, src: np.ndarray, stream=None) -> None:
    raw = np.ascontiguousarray(src).view(np.uint8).reshape(-1)
    device_bytes(dest)[: raw.size] = raw
    _advance_copy(raw.size)


def memcpy_dtoh_async(dest: np.ndarray, src, stream=None) -> None:
    raw = dest.reshape(-1).view(np.uint8)
    raw[:] = device_bytes(src)[: raw.size]
    _advance_copy(raw.size)


class Stream:
    _handles = itertools.count(0xABC0)

    def __init__(self) -> None:
        self.handle = next(self._handles)
        self.synchronized = 0

    def synchronize(self) -> None:
        self.synchronized += 1


class Event:
    def __init__(self) -> None:
        self.t = None

    def record(self, stream=None) -> None:
        self.t = STATE.gpu_ms

    def synchronize(self) -> None:
        pass

    def time_since(self, other: "Event") -> float:
        return self.t - other.t


def modules():
    """(pycuda package, pycuda.driver) module objects to put in sys.modules."""
    import sys

    driver = sys.modules[__name__]
    package = types.ModuleType("pycuda")
    package.__path__ = []  # a package, so `import pycuda.driver` resolves through sys.modules
    package.driver = driver
    return package, driver
