"""Engines: one small protocol (``base.Engine``), one module per backend, and the table of
backends (``backends.BACKENDS``) that dispatch reads.

``open_engine`` is the one entry point; it imports a backend's module (and its optional
dependency) only when that backend is asked for. ``Engine`` and ``TensorSpec`` are imported on
first use, so importing this package (the plugin does, for the backend table) loads neither numpy
nor any backend.
"""

import importlib
import inspect
from typing import Any, Optional

from ..errors import EngineError
from ..named_table import Registry
from .backends import BACKENDS, Backend

__all__ = ["BACKENDS", "Backend", "Engine", "TensorSpec", "Unsupported", "as_engine", "open_engine"]

#: Options an opener may be given beside precision, batch and dla_core; each backend uses those it
#: knows (a simulated engine has no workspace, onnxruntime no CUDA graphs) and ignores the rest,
#: so a suite written for the board runs unchanged on the simulator or the host.
OPTIONS = frozenset({"resolution", "input_shape", "processes", "threads", "workspace", "cache_dir",
                     "io", "cuda_graph", "precision_fallback", "timing_cache"})

_WHERE = {"Engine": "base", "TensorSpec": "base", "Unsupported": "base", "as_engine": "base"}


def open_engine(model: Any, *, backend: str, device: Any, precision: str = "fp16", batch: int = 1,
                dla_core: Optional[int] = None, clock: Any = None, seed: int = 0,
                backends: "Optional[Registry[Backend]]" = None, **options: Any) -> Any:
    """Build (or load from cache) an engine for ``model`` (a zoo name or an ONNX path) with the
    backend called ``backend``: a row of ``backends``, the session's table (the built-in
    ``backends.BACKENDS`` when not given).

    ``options`` go to the backend's opener: ``resolution`` and ``input_shape`` (all), ``processes``
    (simulated: the contended prediction for one of that many processes), ``threads`` (onnxruntime
    intra-op threads), ``workspace``, ``cache_dir``, ``io``, ``cuda_graph``, ``precision_fallback``
    and ``timing_cache`` (tensorrt). An opener ignores what it does not use.
    """
    spec = (BACKENDS if backends is None else backends).get(backend)
    unknown = sorted(set(options) - _accepted(spec.open))
    if unknown:
        raise EngineError(f"{unknown[0]}={options[unknown[0]]!r} is not an engine option; the "
                          f"options are precision, batch, dla_core, {', '.join(sorted(OPTIONS))}")
    why = spec.available()
    if why:
        raise EngineError(why)
    engine = spec.open(model, device=device, clock=clock, seed=seed, precision=precision, batch=batch,
                       dla_core=dla_core, **options)
    if spec.device_time:
        engine.reports_device_time = True
    return engine


def _accepted(opener: Any) -> "frozenset[str]":
    try:
        params = inspect.signature(opener).parameters.values()
    except (TypeError, ValueError):
        return OPTIONS
    return OPTIONS | {p.name for p in params if p.kind == p.KEYWORD_ONLY}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
