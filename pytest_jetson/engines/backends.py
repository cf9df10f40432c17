"""The engine backends, one row each: how to open one, what it supports, whether it runs here.

Everything that depends on the backend reads this table: the ``--jetson-backend`` choices and
default ("tensorrt on a board, simulated elsewhere"), ``open_engine``'s dispatch, whether the
harness asks an engine for device time, how a pool runs and its default deadline. A plugin or
conftest adds a backend through the ``pytest_jetson_backends`` hook (see ``hookspecs``)::

    from pytest_jetson.engines import Backend

    def pytest_jetson_backends(config):
        return [Backend("tvm", open=my_package.open_tvm_engine, description="Apache TVM")]

An opener is called as ``open(model, *, device, clock, seed, precision, batch, dla_core,
**options)`` and returns an ``Engine`` (see ``engines.base``); it may ignore what it does not use.
A backend brings its pools the same way: ``pool=`` is a runner, called as ``runner(run)`` with a
``run.pool_spec.PoolRun`` and returning a ``PoolMeasurement`` (a callable, or its import path
``"module:function"``); without one its pools are real spawned processes opening its engines.
"""

import importlib.util
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Optional

from ..errors import ConfigError
from ..named_table import Registry


def _always() -> Optional[str]:
    return None


def _no_version() -> Optional[str]:
    return None


def distribution_version(*names: str) -> Optional[str]:
    """The installed version of the first of these distributions (without importing it)."""
    from importlib import metadata

    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


@dataclass(frozen=True)
class Backend:
    """One engine backend.

    ``clock``: "virtual" runs on the session's simulated clock (no real work), "wall" on the
    host's. ``device_time``: each ``infer`` call reports the device's own time of the call
    (``engine.last_device_time``). ``pool``: the pool runner, a callable taking a
    ``run.pool_spec.PoolRun`` or its import path (``"module:function"``); None: ``pools`` says,
    "processes" (real spawned processes; the opener must be importable by reference), "model"
    (the simulator's contention model) or "none" (no pools). ``pool_deadline_s``: the default
    time limit of a pool beyond its warm-up and window, engine builds included. ``pool_options``:
    options every pool worker opens its engine with unless its workload sets them. ``default_for``: "board" or "host", where it is the
    session's default. ``available()``: None when usable here, else why not and the fix.
    ``title``: its name for people (the run's header); ``version()``: the version of what runs
    the engines, when the device's fingerprint does not already hold it (None: nothing to add).
    """

    name: str
    open: Callable[..., Any]
    available: Callable[[], Optional[str]] = _always
    clock: str = "wall"
    device_time: bool = False
    pools: str = "processes"
    pool: Any = None
    pool_deadline_s: float = 300.0
    pool_options: Dict[str, Any] = field(default_factory=dict, hash=False)
    default_for: Optional[str] = None
    description: str = ""
    plugin: str = "pytest-jetson"
    title: str = ""
    version: Callable[[], Optional[str]] = _no_version

    @property
    def simulated(self) -> bool:
        return self.clock == "virtual"

    @property
    def runs_pools(self) -> bool:
        return self.pool is not None or self.pools != "none"

    def pool_runner(self) -> Optional[Callable[[Any], Any]]:
        """The function that runs this backend's pools (None: it has none)."""
        ref = self.pool if self.pool is not None else POOL_RUNNERS.get(self.pools)
        if not isinstance(ref, str):
            return ref
        try:
            return import_reference(ref)
        except (ImportError, AttributeError) as exc:
            raise ConfigError(f"{self.plugin} registered the engine backend {self.name!r} with the pool "
                              f"runner {ref!r}, which cannot be imported ({exc}); give pool= a function "
                              "or the 'module:function' path of one") from None


#: The runners the ``pools`` kinds name (a row's ``pool`` wins over its ``pools``).
POOL_RUNNERS: Dict[str, Optional[str]] = {
    "processes": "pytest_jetson.run.pool:run_processes",
    "model": "pytest_jetson.run.pool_sim:run_pool",
    "none": None,
}


def import_reference(ref: str) -> Any:
    """The object an import path (``"module:qualname"``) names."""
    module, _, name = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def importable(module: str) -> bool:
    """Whether ``import module`` would find it, without importing it (a ``None`` in sys.modules,
    as tests use to hide a package, counts as missing)."""
    if module in sys.modules:
        return sys.modules[module] is not None
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


TENSORRT_HINT = (
    "on a Jetson, TensorRT's Python bindings come with JetPack: `sudo apt install python3-libnvinfer` "
    "(a virtualenv must be created with --system-site-packages to see them); pycuda: "
    "`pip install 'pytest-jetson[tensorrt]'` with the CUDA toolkit on PATH "
    "(`export PATH=/usr/local/cuda/bin:$PATH`). Without a board, use --jetson-backend simulated "
    "or onnxruntime"
)
ONNXRUNTIME_HINT = "pip install 'pytest-jetson[onnxruntime]' (or pip install onnxruntime)"


def _tensorrt_available() -> Optional[str]:
    if not importable("tensorrt"):
        return f"the tensorrt backend needs TensorRT's Python bindings; {TENSORRT_HINT}"
    if not importable("pycuda"):
        return f"the tensorrt backend needs pycuda; {TENSORRT_HINT}"
    return None


def _onnxruntime_available() -> Optional[str]:
    if not importable("onnxruntime"):
        return f"the onnxruntime backend needs onnxruntime: {ONNXRUNTIME_HINT}"
    return None


def _open_simulated(model: Any, *, device: Any, clock: Any = None, seed: int = 0, precision: str = "fp16",
                    batch: int = 1, dla_core: Optional[int] = None, resolution: Any = None,
                    processes: int = 1, input_shape: Any = None, **_: Any) -> Any:
    from .simulated import SimulatedEngine

    return SimulatedEngine(model, device, precision=precision, batch=batch, dla_core=dla_core,
                           clock=clock, seed=seed, resolution=resolution, processes=processes,
                           input_shape=input_shape)


def _open_onnxruntime(model: Any, *, device: Any = None, clock: Any = None, seed: int = 0,
                      precision: str = "fp16", batch: int = 1, dla_core: Optional[int] = None,
                      resolution: Any = None, threads: Optional[int] = None, input_shape: Any = None,
                      **_: Any) -> Any:
    from .onnxruntime import OnnxRuntimeEngine

    if dla_core is not None:
        raise ConfigError(
            f"{model!r}: dla_core={dla_core} needs the tensorrt backend on a board with DLA; "
            "drop dla_core or use --jetson-backend tensorrt"
        )
    return OnnxRuntimeEngine(model, precision=precision, batch=batch, seed=seed,
                             resolution=resolution, threads=threads, input_shape=input_shape)


def _open_tensorrt(model: Any, *, device: Any = None, clock: Any = None, seed: int = 0,
                   precision: str = "fp16", batch: int = 1, dla_core: Optional[int] = None,
                   resolution: Any = None, workspace: Any = None, cache_dir: Any = None,
                   io: Optional[str] = None, cuda_graph: bool = True, input_shape: Any = None,
                   precision_fallback: bool = True, timing_cache: bool = True, **_: Any) -> Any:
    from .tensorrt import TensorRTEngine

    return TensorRTEngine(model, precision=precision, batch=batch, dla_core=dla_core, seed=seed,
                          resolution=resolution, workspace=workspace, cache_dir=cache_dir,
                          device=device, io=io, cuda_graph=cuda_graph, input_shape=input_shape,
                          precision_fallback=precision_fallback, timing_cache=timing_cache)


BACKENDS: "Registry[Backend]" = Registry("engine backend", "--jetson-backend")
BACKENDS.register(Backend(
    "tensorrt", open=_open_tensorrt, available=_tensorrt_available, device_time=True,
    pool_deadline_s=1800.0, default_for="board", title="TensorRT",
    description="TensorRT engines run with pycuda on the board's GPU or DLA"))
BACKENDS.register(Backend(
    "onnxruntime", open=_open_onnxruntime, available=_onnxruntime_available, title="ONNX Runtime",
    version=lambda: distribution_version("onnxruntime", "onnxruntime-gpu", "onnxruntime-openvino"),
    pool_options={"threads": 1}, description="ONNX Runtime on the host CPU: real inference without a board"))
BACKENDS.register(Backend(
    "simulated", open=_open_simulated, clock="virtual", pool="pytest_jetson.run.pool_sim:run_pool",
    default_for="host",
    title="the simulator", description="the simulated Jetson: a calibrated model of the board on a virtual clock"))


def default_backend(device: Any) -> Backend:
    """The backend a session uses when none is named: the one registered for a board (a real
    device) or for a host (a simulated device)."""
    where = "host" if getattr(device, "simulated", True) else "board"
    for backend in BACKENDS:
        if backend.default_for == where:
            return backend
    return BACKENDS.get("simulated")


def open_by_reference(model: Any, *, opener: str, device: Any = None, seed: int = 0,
                      precision: str = "fp16", batch: int = 1, dla_core: Optional[int] = None,
                      backend: Optional[str] = None, **options: Any) -> Any:
    """Open an engine in a spawned pool worker through a backend opener's import path
    (``"module:qualname"``): a plugin's backend is registered only in the process that loaded it."""
    opened = import_reference(opener)
    return opened(model, device=device, clock=None, seed=seed, precision=precision, batch=batch,
                  dla_core=dla_core, **options)
