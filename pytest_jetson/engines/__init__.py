"""Engines: one small protocol (``base.Engine``) and one module per backend.

``open_engine`` is the one entry point; it imports a backend's module (and its optional
dependency) only when that backend is asked for, so importing this package stays cheap.
"""

from typing import Any, Optional

from ..errors import ConfigError
from .base import BACKENDS, Engine, TensorSpec

__all__ = ["BACKENDS", "Engine", "TensorSpec", "open_engine"]


def open_engine(model: Any, *, backend: str, device: Any, precision: str = "fp16", batch: int = 1,
                dla_core: Optional[int] = None, clock: Any = None, seed: int = 0,
                resolution: Any = None, workspace: Any = None, cache_dir: Any = None,
                processes: int = 1, threads: Optional[int] = None, **options: Any) -> Engine:
    """Build (or load from cache) an engine for ``model`` (a zoo name or an ONNX path).

    ``processes`` only matters for simulated engines: the prediction is the contended one for one
    of that many processes sharing the device. ``threads`` only for onnxruntime: its intra-op
    threads (pool workers use 1, so N workers compete for cores as N processes would).
    ``options``: the tensorrt backend's own (``io``, ``cuda_graph``, ``input_shape``,
    ``precision_fallback``, ``timing_cache``); other backends take none.
    """
    if options and backend in ("simulated", "onnxruntime"):
        raise ConfigError(f"{model!r}: option(s) {', '.join(sorted(options))} are for the tensorrt "
                          f"backend only; the {backend} backend takes none")
    if backend == "simulated":
        from .simulated import SimulatedEngine

        return SimulatedEngine(model, device, precision=precision, batch=batch, dla_core=dla_core,
                               clock=clock, seed=seed, resolution=resolution, processes=processes)
    if backend == "onnxruntime":
        from .onnxruntime import OnnxRuntimeEngine

        if dla_core is not None:
            raise ConfigError(
                f"{model!r}: dla_core={dla_core} needs the tensorrt backend on a board with DLA; "
                "drop dla_core or use --jetson-backend tensorrt"
            )
        return OnnxRuntimeEngine(model, precision=precision, batch=batch, seed=seed,
                                 resolution=resolution, threads=threads)
    if backend == "tensorrt":
        from .tensorrt import TensorRTEngine

        return TensorRTEngine(model, precision=precision, batch=batch, dla_core=dla_core,
                              seed=seed, resolution=resolution, workspace=workspace,
                              cache_dir=cache_dir, device=device, **options)
    raise ConfigError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}; use --jetson-backend "
                      "tensorrt, onnxruntime or simulated")
