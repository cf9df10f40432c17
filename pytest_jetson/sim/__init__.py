"""The simulated Jetson: a calibrated analytic model of DNN inference on each board.

``predict`` gives one configuration's throughput, latency, memory, power and energy from the
device profile and the network's graph, under the harness that measures it (``harness.py``: the
plugin's own loop by default, trtexec, CUDA graphs, ...); ``sweep`` evaluates a grid at once;
``noise.LatencyNoise`` turns a predicted latency into seeded per-iteration samples;
``calibration`` fits the constants to published results (``published.py``) and cross-validates
them. The virtual clock lives in ``pytest_jetson.clock`` (real backends use its wall clock too).
Names are imported on first use, so importing this package stays cheap.
"""

import importlib
from typing import Any

__all__ = ["OutOfMemory", "Prediction", "SweepResult", "predict", "sweep"]

_WHERE = {"OutOfMemory": "prediction", "Prediction": "prediction", "predict": "prediction",
          "SweepResult": "sweeps", "sweep": "sweeps"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        module = importlib.import_module(f"{__name__}.{_WHERE[name]}")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
