"""The ``perf`` recorder: what a test measured, in order, for the gate to check afterwards."""

from typing import Any, Callable, Dict, List, Optional

from ..engines.base import as_engine
from ..errors import ConfigError
from ..metrics import METRICS
from . import max_rate as rate_search
from .harness import measure
from .measurement import Measurement


def environment_of(context: Any, engine: Any) -> Dict[str, Any]:
    """The fingerprint a baseline must share with this run: device + what the engine runs."""
    env: Dict[str, Any] = {}
    if context is not None:
        env.update(context.fingerprint())
    engine = as_engine(engine)
    env.update(precision=engine.precision, batch=engine.batch, backend=engine.backend,
               model=engine.model, accelerator=accelerator_of(engine.dla_core))
    return env


def accelerator_of(dla_core: Any) -> str:
    """'gpu', or 'dla0' / 'dla1' for an engine on a DLA core (with GPU fallback)."""
    return "gpu" if dla_core is None else f"dla{int(dla_core)}"


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

    #: ``parse(metric, text) -> Bound`` for perf.max_rate's bounds: the plugin hands the gate's
    #: parser in (data flows run -> gate, so run/ does not import it)
    parse_bound: Optional[Callable[[str, Any], Any]] = None
    #: the seed of this test's arrival schedules (the plugin's: session seed and test id)
    seed: Optional[int] = None

    def max_rate(self, engine: Any, duration: Any = None, probe_duration: Any = "1s", warmup: Any = "1s",
                 tolerance: float = rate_search.TOLERANCE, max_probes: int = rate_search.MAX_PROBES,
                 **kw: Any) -> Measurement:
        """Find the highest arrival rate at which ``engine`` (or a function) meets the bounds
        given by metric name (``latency_p99="<= 33 ms"``, ``deadline_miss="<= 1 %"``; a string
        the plugin parses, or a predicate on the value) and record a measurement of ``duration``
        at that rate, with metric ``max_rate`` and the search in ``extra["max_rate_probes"]``.

        Probes are short measurements (``probe_duration``, no telemetry, not recorded): first
        back to back (the upper bound), then a search on the rate (``run.max_rate.search``).
        Other keywords go to every measurement (``deadline=``, ``items=``, ...).
        """
        held = rate_search.checks({k: kw.pop(k) for k in list(kw) if k in METRICS}, self.parse_bound)
        if "rate" in kw:
            raise ConfigError(f"perf.max_rate: rate={kw['rate']!r} is what the search finds; drop it")
        if self.seed is not None:
            kw.setdefault("seed", self.seed)

        def probe(rate: Optional[float], warm: Any) -> Measurement:
            # back to back (the upper bound) there is no arrival for a deadline to count from
            own = kw if rate is not None else {k: v for k, v in kw.items() if k != "deadline"}
            m = self.measure(engine, duration=probe_duration, warmup=warm, rate=rate,
                             telemetry="none", extend=None, **own)
            self.measurements.pop()  # a probe is not what the test recorded
            return m

        peak_m = probe(None, warmup)
        peak = peak_m.iterations / peak_m.duration if peak_m.duration > 0 else 0.0
        found = rate_search.search(lambda r: probe(r, 0), lambda m: rate_search.meets(held, m), peak,
                                   tolerance, max_probes, figure=lambda m: rate_search.figure(held, m),
                                   what=rate_search.describe(held))
        m = self.measure(engine, duration=duration, warmup=0, rate=found.rate, **kw)
        m.extra.update(max_rate=found.rate, max_rate_peak=found.peak,
                       max_rate_probes=[p.to_dict() for p in found.probes])
        return m

    @property
    def last(self) -> Measurement:
        return self.measurements[-1]
