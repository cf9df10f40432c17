"""FAKE cuda-python runtime (``cuda.cudart`` / ``cuda.bindings.runtime``) for the CUDA-graph path.

``install(monkeypatch, version)`` puts the import paths the real wheel of ``version`` provides in
sys.modules. Its functions, their parameter counts, how many values each returns and the enum
values come from ``cuda_api/cuda-<version>.json``, which ``cuda_api/generate.py`` reads out of the
real wheels: a call with the wrong number of arguments raises TypeError as Cython's wrapper does
(cuda-python 11.8's ``cudaGraphInstantiate`` takes ``(graph, pLogBuffer, bufferSize)``), and every
call returns a tuple whose first item is a ``cudaError_t``.

Behaviour, on top of fake_pycuda's GPU clock: work that fake TensorRT launches on a capturing
stream is recorded into the graph instead of run, and ``cudaGraphLaunch`` replays it. With
``driver=`` below the wheel's CUDA major (cuda-python 13 on a JetPack 5 or 6 driver) every call
returns ``cudaErrorInsufficientDriver``, as the real runtime does.
"""

import enum
import itertools
import json
import sys
import types
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from . import fake_pycuda

API = Path(__file__).resolve().parent / "cuda_api"
VERSIONS = sorted(p.stem[len("cuda-"):] for p in API.glob("cuda-*.json"))


def table(version: str) -> Dict[str, Any]:
    return json.loads((API / f"cuda-{version}.json").read_text())


class State:
    def __init__(self) -> None:
        self.capturing: Dict[int, List[Tuple[Any, float]]] = {}
        self.graphs: Dict[int, List[Tuple[Any, float]]] = {}
        self.execs: Dict[int, List[Tuple[Any, float]]] = {}
        self.launches = 0
        self.calls: List[str] = []


STATE = State()
_ids = itertools.count(0x7000)


class _Runtime:
    """The behaviour behind each function; the module checks the arguments first."""

    def __init__(self, module: Any, driver: int, runtime: int) -> None:
        self.m = module
        self.driver = driver
        self.runtime = runtime

    def ok(self, *values: Any) -> Tuple[Any, ...]:
        return (self.m.cudaError_t.cudaSuccess, *values)

    def cudaStreamBeginCapture(self, stream: Any, mode: Any) -> Tuple[Any, ...]:
        STATE.capturing[int(stream)] = []
        return self.ok()

    def cudaStreamEndCapture(self, stream: Any) -> Tuple[Any, ...]:
        work = STATE.capturing.pop(int(stream), None)
        if work is None:
            return (self.m.cudaError_t.cudaErrorInvalidValue, None)
        graph = next(_ids)
        STATE.graphs[graph] = work
        return self.ok(graph)

    def _instantiate(self, graph: Any) -> Tuple[Any, ...]:
        exec_ = next(_ids)
        STATE.execs[exec_] = list(STATE.graphs[int(graph)])
        return self.ok(exec_)

    def cudaGraphInstantiate(self, graph: Any, *rest: Any) -> Tuple[Any, ...]:
        result = self._instantiate(graph)
        # 11.8: (err, pGraphExec, pErrorNode)
        return result + (None,) * (self.m._RETURNS["cudaGraphInstantiate"] - len(result))

    def cudaGraphInstantiateWithFlags(self, graph: Any, flags: Any) -> Tuple[Any, ...]:
        return self._instantiate(graph)

    def cudaGraphLaunch(self, exec_: Any, stream: Any) -> Tuple[Any, ...]:
        STATE.launches += 1
        for fn, ms in STATE.execs[int(exec_)]:
            _REAL_LAUNCH(int(stream), fn, ms)
        return self.ok()

    def cudaGraphDestroy(self, graph: Any) -> Tuple[Any, ...]:
        del STATE.graphs[int(graph)]
        return self.ok()

    def cudaGraphExecDestroy(self, exec_: Any) -> Tuple[Any, ...]:
        del STATE.execs[int(exec_)]
        return self.ok()

    def cudaGetLastError(self) -> Tuple[Any, ...]:
        return self.ok()

    def cudaDriverGetVersion(self) -> Tuple[Any, ...]:
        return self.ok(self.driver)

    def cudaRuntimeGetVersion(self) -> Tuple[Any, ...]:
        return self.ok(self.runtime)


_REAL_LAUNCH = fake_pycuda.launch
#: What answers without a usable driver (what a program calls to find out why).
_ALWAYS = ("cudaDriverGetVersion", "cudaRuntimeGetVersion")


def _launch(stream_handle: int, fn: Any, ms: float) -> None:
    """fake_pycuda.launch while installed: work on a capturing stream goes into its graph."""
    work = STATE.capturing.get(int(stream_handle))
    if work is not None:
        work.append((fn, ms))
        return
    _REAL_LAUNCH(stream_handle, fn, ms)


def _function(module: Any, runtime: _Runtime, name: str, spec: Dict[str, Any]) -> Any:
    params = spec["params"]

    def call(*args: Any) -> Tuple[Any, ...]:
        if len(args) != len(params):
            # Cython's own message for a def with positional parameters
            raise TypeError(f"{name}() takes exactly {len(params)} positional argument"
                            f"{'' if len(params) == 1 else 's'} ({len(args)} given)")
        STATE.calls.append(name)
        # minor-version compatibility: a driver of the runtime's CUDA major suffices
        if runtime.driver // 1000 < runtime.runtime // 1000 and name not in _ALWAYS:
            none = (None,) * (spec["returns"] - 1)
            return (module.cudaError_t.cudaErrorInsufficientDriver, *none)
        return getattr(runtime, name)(*args)

    call.__name__ = call.__qualname__ = name
    return call


def module(version: str, driver: Optional[int] = None) -> types.ModuleType:
    """The runtime module of cuda-python ``version``; ``driver``: the driver's CUDA version as
    cudaDriverGetVersion gives it (11040 for JetPack 5's CUDA 11.4); by default it suffices."""
    spec = table(version)
    mod = types.ModuleType("cuda.bindings.runtime")
    for enum_name, members in spec["enums"].items():
        setattr(mod, enum_name, enum.IntEnum(enum_name, members))
    major, minor = (int(x) for x in version.split(".")[:2])
    runtime_version = major * 1000 + minor * 10
    rt = _Runtime(mod, runtime_version if driver is None else driver, runtime_version)
    mod._RETURNS = {name: f["returns"] for name, f in spec["functions"].items()}
    for name, f in spec["functions"].items():
        setattr(mod, name, _function(mod, rt, name, f))
    mod.__version__ = version
    return mod


def install(monkeypatch: Any, version: str, driver: Optional[int] = None) -> types.ModuleType:
    """Put cuda-python ``version``'s runtime module under the import paths its wheel provides."""
    global STATE
    STATE = State()
    runtime = module(version, driver)
    paths = table(version)["modules"]
    package = types.ModuleType("cuda")
    package.__path__ = []  # a package, so that "from cuda import cudart" looks for the attribute
    monkeypatch.setitem(sys.modules, "cuda", package)
    if "cuda.bindings.runtime" in paths:
        bindings = types.ModuleType("cuda.bindings")
        bindings.__path__ = []
        bindings.runtime = runtime
        bindings.__version__ = version
        package.bindings = bindings
        monkeypatch.setitem(sys.modules, "cuda.bindings", bindings)
        monkeypatch.setitem(sys.modules, "cuda.bindings.runtime", runtime)
    else:
        monkeypatch.setitem(sys.modules, "cuda.bindings", None)
    if "cuda.cudart" in paths:
        package.cudart = runtime
        monkeypatch.setitem(sys.modules, "cuda.cudart", runtime)
    else:
        monkeypatch.setitem(sys.modules, "cuda.cudart", None)
    monkeypatch.setattr(fake_pycuda, "launch", _launch)
    return runtime
