"""Errors a user can cause. Each message names the thing at fault and the fix.

The plugin turns ``ConfigError`` into a pytest usage error (exit code 4, no traceback); the other
errors surface as test failures or errors with their message shown as is.
"""


class JetsonError(Exception):
    """Base of every error pytest-jetson raises on purpose."""


class ConfigError(JetsonError):
    """A bad option, ini value, device name or power mode."""


class ModelError(JetsonError):
    """A model name, ONNX file or graph that cannot be used."""


class EngineError(JetsonError):
    """An engine that cannot be built, loaded or run."""


class SimulationError(JetsonError):
    """A configuration the simulated device cannot run (for instance out of memory)."""


class WorkerError(JetsonError):
    """A pool worker that raised, crashed or hung."""


class TelemetryError(JetsonError):
    """A telemetry source that cannot start or died."""


class BoundError(JetsonError):
    """A malformed perf bound or an unknown metric."""


class BaselineError(JetsonError):
    """A baseline file that cannot be read or written."""
