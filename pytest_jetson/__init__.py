"""pytest-jetson: performance regression testing of DNN inference on NVIDIA Jetson boards.

``pytest_jetson.stage(name)`` marks a named stage of pipeline code (see ``run.stages``): inside a
function measured by ``perf.measure`` its time is a stage of the measurement; elsewhere it does
nothing. Its module imports nothing heavy (no numpy), so importing the plugin stays cheap.
"""

from .run.stages import stage

__version__ = "0.1.0"

__all__ = ["__version__", "stage"]
