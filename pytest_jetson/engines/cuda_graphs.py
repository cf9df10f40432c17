"""CUDA graphs through cuda-python (``trtexec --useCudaGraph``): capture TensorRT's enqueue once per
shape, replay it with ``cudaGraphLaunch``.

Every cudart call here has one signature in every cuda-python from 11.8.7 to 13.x (the tables in
tests/fakes/cuda_api are read from those wheels). ``cudaGraphInstantiate`` has not: 11.8 takes
``(graph, pLogBuffer, bufferSize)``, 12 and later ``(graph, flags)``; ``cudaGraphInstantiateWithFlags
(graph, flags)`` is the same everywhere. Graphs are an optimisation: whatever fails on this path
leaves the engine enqueueing directly, with the reason in ``extra["cuda_graph"]``.
"""

import sys
import threading
import warnings
from importlib import metadata
from typing import Any, Callable, Optional, Set, Tuple


class CudaGraphWarning(UserWarning):
    """CUDA graphs were asked for and are off for a reason the user can fix."""


#: (cuda-python version, driver version) pairs already warned about: once per session.
_WARNED: Set[Tuple[str, int]] = set()
_WARNED_LOCK = threading.Lock()


def import_cudart() -> Tuple[Optional[Any], str]:
    """(cuda-python's runtime module, "") or (None, why not)."""
    try:
        from cuda.bindings import runtime as cudart  # cuda-python 12.6 and later (and 11.8.7)
        return cudart, ""
    except ImportError:
        pass
    try:
        from cuda import cudart  # type: ignore[no-redef]  # older cuda-python
        return cudart, ""
    except ImportError:
        return None, "cuda-python is not installed (pip install 'pytest-jetson[cudagraph]')"


class Graph:
    """One captured enqueue, replayed with ``launch``."""

    def __init__(self, cudart: Any, stream_handle: int, enqueue: Callable[[], bool]) -> None:
        self.cudart = cudart
        self.stream = stream_handle
        self.exec: Any = None
        mode = cudart.cudaStreamCaptureMode.cudaStreamCaptureModeThreadLocal
        self._check(cudart.cudaStreamBeginCapture(stream_handle, mode), "cudaStreamBeginCapture")
        ok = False
        try:
            ok = bool(enqueue())
        finally:
            err, graph = cudart.cudaStreamEndCapture(stream_handle)
        if not ok or err != cudart.cudaError_t.cudaSuccess or graph is None:
            cudart.cudaGetLastError()  # clear the capture's error
            if graph is not None and err == cudart.cudaError_t.cudaSuccess:
                cudart.cudaGraphDestroy(graph)
            raise RuntimeError("TensorRT's enqueue cannot be captured into a CUDA graph")
        try:
            err, self.exec = cudart.cudaGraphInstantiateWithFlags(graph, 0)
            self._check((err,), "cudaGraphInstantiateWithFlags")
        finally:
            cudart.cudaGraphDestroy(graph)

    def _check(self, result: Any, what: str) -> None:
        err = result[0] if isinstance(result, tuple) else result
        if err != self.cudart.cudaError_t.cudaSuccess:
            raise RuntimeError(f"{what} failed: {err}")

    def launch(self) -> bool:
        (err,) = self.cudart.cudaGraphLaunch(self.exec, self.stream)
        return err == self.cudart.cudaError_t.cudaSuccess

    def destroy(self) -> None:
        if self.exec is not None:
            self.cudart.cudaGraphExecDestroy(self.exec)
            self.exec = None


def capture(cudart: Any, stream_handle: int, enqueue: Callable[[], bool]) -> Tuple[Optional[Graph], str]:
    """(the graph, "") or (None, why not): never raises, so that opening an engine never fails
    for want of a graph."""
    try:
        return Graph(cudart, stream_handle, enqueue), ""
    except Exception as exc:  # a cuda-python of another signature, a driver it cannot use, ...
        why = _driver_too_old(cudart) or str(exc)
        return None, f"{why}; enqueued directly"


def _cuda_python_version(cudart: Any) -> str:
    for name in ("cuda.bindings", "cuda"):
        version = getattr(sys.modules.get(name), "__version__", None)
        if version:
            return str(version)
    for dist in ("cuda-bindings", "cuda-python"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return ""


def _major(version: str) -> int:
    head = version.split(".")[0]
    return int(head) if head.isdigit() else 0


def _driver_too_old(cudart: Any) -> str:
    """Why graphs are off when cuda-python's CUDA major is above the driver's (the ``cudagraph``
    extra resolves to cuda-python 13, which JetPack 5 and 6 drivers cannot run), warned once per
    session; "" when that is not the reason."""
    try:
        err, driver = cudart.cudaDriverGetVersion()
        driver = int(driver) if err == cudart.cudaError_t.cudaSuccess else 0
    except Exception:
        return ""
    version = _cuda_python_version(cudart)
    if not driver or not version or _major(version) <= driver // 1000:
        return ""
    major, minor = driver // 1000, (driver % 1000) // 10
    line = f"cuda-python>={major}.8,<{major + 1}" if major == 11 else f"cuda-python>={major},<{major + 1}"
    why = (f"cuda-python {version} needs a CUDA {_major(version)} driver and this driver is CUDA "
           f"{major}.{minor}: pip install '{line}'")
    with _WARNED_LOCK:
        first = (version, driver) not in _WARNED
        _WARNED.add((version, driver))
    if first:
        warnings.warn(f"CUDA graphs are off: {why}", CudaGraphWarning, stacklevel=2)
    return why
