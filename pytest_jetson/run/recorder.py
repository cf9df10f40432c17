"""The ``perf`` recorder: what a test measured, in order, for the gate to check afterwards."""

from typing import Any, Callable, Dict, List, Optional, Sequence

from ..engines.base import as_engine
from .harness import measure
from .measurement import Measurement


def environment_of(context: Any, engine: Any) -> Dict[str, Any]:
    """The fingerprint of this run: the device's (where it runs) and the engine's workload (what
    runs: model, precision, batch, its input resolution where it has one, accelerator); the
    gate compares a baseline across a workload change and says it (``gate.checks``)."""
    env: Dict[str, Any] = {}
    if context is not None:
        env.update(context.fingerprint())
    engine = as_engine(engine)
    env.update(precision=engine.precision, batch=engine.batch, backend=engine.backend,
               model=engine.model, accelerator=accelerator_of(engine.dla_core))
    resolution = resolution_of(getattr(engine, "inputs", None) or [])
    if resolution is not None:
        env["resolution"] = resolution
    return env


def accelerator_of(dla_core: Any) -> str:
    """'gpu', or 'dla0' / 'dla1' for an engine on a DLA core (with GPU fallback)."""
    return "gpu" if dla_core is None else f"dla{int(dla_core)}"


def resolution_of(inputs: Sequence[Any]) -> Optional[str]:
    """'224x224': height x width of the first image input (batch, channels and height and width
    in either order, the channels 4 or fewer); None for an engine without one."""
    for spec in inputs:
        dims = tuple(getattr(spec, "shape", ()) or ())[1:]
        if len(dims) != 3 or not all(isinstance(d, int) and d > 0 for d in dims):
            continue
        if dims[0] <= 4 < min(dims[1:]):  # NCHW
            return f"{dims[1]}x{dims[2]}"
        if dims[2] <= 4 < min(dims[:2]):  # NHWC
            return f"{dims[0]}x{dims[1]}"
    return None


class Recorder:
    """Collects the Measurements of one test. ``measure`` runs the harness; ``record`` takes a
    Measurement made elsewhere (a pool, a script, a file)."""

    def __init__(self, context: Any = None, extension: Optional[Callable[[int], Any]] = None) -> None:
        self.context = context
        self.measurements: List[Measurement] = []
        #: ``extension(index)``: the ``extend`` callback of the index-th measurement (None: the
        #: measurement is not extended). The plugin sets it for tests with relative bounds.
        self.extension = extension

    def record(self, measurement: Measurement) -> Measurement:
        if not isinstance(measurement, Measurement):
            raise TypeError(
                f"perf.record() takes a Measurement (from perf.measure or process_pool), "
                f"not {type(measurement).__name__}"
            )
        self.measurements.append(measurement)
        return measurement

    def measure(self, engine: Any, duration: Any = None, iterations: Any = None, warmup: Any = "1s",
                **kw: Any) -> Measurement:
        """Measure ``engine`` with the harness (see ``run.harness.measure``) and record it.

        ``--jetson-duration`` overrides the length of every measurement: it replaces
        ``duration`` and ``iterations`` alike, so a whole suite can be shortened for a smoke run.
        Telemetry follows ``--jetson-telemetry`` (default auto; ``none`` disables it) unless
        ``telemetry=`` is passed. A test with relative bounds may measure longer than ``duration``:
        the gate extends a measurement whose comparison cannot decide yet (``gate.extend``), up to
        its budget.
        """
        settings = getattr(self.context, "settings", None)
        override: Optional[float] = getattr(settings, "duration", None)
        if override is not None:
            duration, iterations = override, None
        if "telemetry" not in kw:
            kw["telemetry"] = getattr(self.context, "telemetry", None)
        if "telemetry_interval" not in kw and settings is not None:
            kw["telemetry_interval"] = getattr(settings, "telemetry_interval", None)
        env = environment_of(self.context, engine)
        env.update(kw.pop("environment", None) or {})
        if self.extension is not None and "extend" not in kw:
            kw["extend"] = self.extension(len(self.measurements))
        m = measure(engine, duration=duration, iterations=iterations, warmup=warmup, environment=env, **kw)
        return self.record(m)

    @property
    def last(self) -> Measurement:
        return self.measurements[-1]
