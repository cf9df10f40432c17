"""Which device synchronisation ends a ``perf.stage`` on a board, so that GPU work the stage
enqueued asynchronously is counted in the stage that enqueued it, not in the next one.

Only libraries the process has already imported are used (``sys.modules``): importing one here
would cost seconds and may create a CUDA context the pipeline never wanted. Each library's own
call waits for the work it knows of:

* PyTorch: ``torch.cuda.synchronize()``, once ``torch.cuda.is_initialized()``;
* CuPy: ``cupy.cuda.runtime.deviceSynchronize()``;
* PyCUDA: ``pycuda.driver.Context.synchronize()``, when a context is current;
* cuda-python: ``cudaDeviceSynchronize()`` of ``cuda.bindings.runtime`` (12.x and later) or
  ``cuda.cudart`` (11.x).

Each synchronises the whole device from its context, so a stage's end also waits for work other
threads enqueued; where that matters, pass ``perf.stage(name, sync=stream.synchronize)``.
"""

import sys
from typing import Any, Callable, List, Optional

Sync = Callable[[], Any]


def _torch() -> Optional[Sync]:
    torch = sys.modules.get("torch")
    torch_cuda = getattr(torch, "cuda", None)  # not "cuda": that name is pycuda's in this package
    initialized = getattr(torch_cuda, "is_initialized", None)
    if torch_cuda is None or initialized is None or not initialized():
        return None
    return torch_cuda.synchronize


def _cupy() -> Optional[Sync]:
    cupy = sys.modules.get("cupy")
    runtime = getattr(getattr(cupy, "cuda", None), "runtime", None)
    return getattr(runtime, "deviceSynchronize", None)


def _pycuda() -> Optional[Sync]:
    driver = sys.modules.get("pycuda.driver")
    context = getattr(driver, "Context", None)
    if context is None or context.get_current() is None:
        return None
    return context.synchronize


def _cuda_python() -> Optional[Sync]:
    for name in ("cuda.bindings.runtime", "cuda.cudart"):
        sync = getattr(sys.modules.get(name), "cudaDeviceSynchronize", None)
        if sync is not None:
            return sync
    return None


#: in the order tried; every one found is called
FINDERS = (_torch, _cupy, _pycuda, _cuda_python)


def imported_syncs() -> List[Sync]:
    """The synchronisations of the GPU libraries already imported (none found: empty)."""
    return [s for s in (find() for find in FINDERS) if s is not None]


def device_sync() -> Optional[Sync]:
    """One call that synchronises the device through every GPU library already imported, or
    None when the process has imported none."""
    syncs = imported_syncs()
    if not syncs:
        return None
    if len(syncs) == 1:
        return syncs[0]

    def sync_all() -> None:
        for sync in syncs:
            sync()

    return sync_all


def choose(sync: Any, board: bool) -> Optional[Sync]:
    """The synchronisation a stage ends with: ``sync`` when it is a callable; None for False;
    for None (the default) the imported libraries' on a board and nothing on the simulator or a
    host; for True the imported libraries' anywhere."""
    if callable(sync):
        return sync
    if sync is False or (sync is None and not board):
        return None
    return device_sync()
