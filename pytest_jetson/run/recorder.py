"""The ``perf`` recorder: what a test measured, in order, for the gate to check afterwards."""

from types import TracebackType
from typing import Any, Callable, Dict, List, Optional, Sequence

from ..clock import WallClock
from ..engines.base import Engine, as_engine
from ..engines.cache import model_digest
from ..errors import ConfigError
from ..metrics import METRICS
from . import max_rate as rate_search
from .function import FunctionWorkload
from .harness import measure
from .host_time import host_loads, host_scale
from .measurement import Measurement
from .outputs import OutputsRecord, check_unique, prepare
from .stages import ACTIVE, Stage, measure_range


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
    digest = model_digest(engine)
    if digest is not None:
        env["model_sha256"] = digest
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
        #: ``perf.check_outputs`` calls, judged by the gate after the body (``gate.outputs``)
        self.output_checks: List[OutputsRecord] = []
        #: ``golden(name) -> Path``: where this test's golden outputs live (the plugin sets it)
        self.golden: Optional[Callable[[str], Any]] = None

    def record(self, measurement: Measurement) -> Measurement:
        if not isinstance(measurement, Measurement):
            raise TypeError(
                f"perf.record() takes a Measurement (from perf.measure or process_pool), "
                f"not {type(measurement).__name__}"
            )
        self.measurements.append(measurement)
        return measurement

    def measure(self, target: Any, duration: Any = None, iterations: Any = None, warmup: Any = "1s",
                items: Any = None, inputs: Any = None, name: Optional[str] = None, **kw: Any) -> Measurement:
        """Measure ``target`` with the harness (see ``run.harness.measure``) and record it.

        ``target``: an engine (or an object that runs like one: ``infer`` and a ``clock``),
        measured as always; or any other callable, measured as a function
        (``run.function.FunctionWorkload``): ``items`` per call (default 1), ``inputs`` handed
        one per call (cycled), ``name`` (default the function's qualified name), its
        ``perf.stage`` times in ``Measurement.stages``. Other keywords (``rate=``,
        ``deadline=``, ``telemetry=``, ...) go to the harness.

        ``--jetson-duration`` overrides the length of every measurement: it replaces
        ``duration`` and ``iterations`` alike, so a whole suite can be shortened for a smoke run.
        Telemetry follows ``--jetson-telemetry`` (default auto; ``none`` disables it) unless
        ``telemetry=`` is passed. A test with relative bounds may measure longer than ``duration``:
        the gate extends a measurement whose comparison cannot decide yet (``gate.extend``), up to
        its budget.
        """
        __tracebackhide__ = True
        settings = getattr(self.context, "settings", None)
        override: Optional[float] = getattr(settings, "duration", None)
        if override is not None:
            duration, iterations = override, None
        if "telemetry" not in kw:
            kw["telemetry"] = getattr(self.context, "telemetry", None)
        if "profile" not in kw and getattr(settings, "layer_profile", "on") == "off":
            kw["profile"] = False  # --jetson-layer-profile=off: no profiling pass after the window
        if "telemetry_interval" not in kw and settings is not None:
            kw["telemetry_interval"] = getattr(settings, "telemetry_interval", None)
        workload = self._workload(target, items, inputs, name)
        env = environment_of(self.context, workload if workload is not None else target)
        env.update(kw.pop("environment", None) or {})
        if self.extension is not None and "extend" not in kw:
            kw["extend"] = self.extension(len(self.measurements))
        device = getattr(self.context, "device", None)
        on_board = device is not None and not getattr(device, "simulated", True)
        what = getattr(workload if workload is not None else target, "name", None) or type(target).__name__
        nvtx_range = measure_range(len(self.measurements), str(what), on_board)  # nsys reads it back
        if workload is None:
            with nvtx_range:
                m = measure(target, duration=duration, iterations=iterations, warmup=warmup, environment=env, **kw)
            return self.record(m)
        token = ACTIVE.set(workload.stages)
        failure: Optional[BaseException] = None
        try:
            with nvtx_range:
                m = measure(workload, duration=duration, iterations=iterations, warmup=warmup, environment=env, **kw)
        except Exception as exc:
            if exc is not workload.raised:
                raise
            failure = exc
        finally:
            ACTIVE.reset(token)
        if failure is not None:
            # the function's own exception, from its own frames: the harness's would bury them
            raise failure.with_traceback(_user_frames(failure.__traceback__))
        return self.record(workload.finish(m))

    def _workload(self, target: Any, items: Any, inputs: Any, name: Optional[str]) -> Optional[FunctionWorkload]:
        """The function ``target`` wrapped for the harness, or None for an engine."""
        if _is_engine(target):
            given = [k for k, v in (("items", items), ("inputs", inputs)) if v is not None]
            if given:
                raise ConfigError(f"perf.measure({getattr(target, 'name', '') or type(target).__name__}): "
                                  f"{given[0]}= is for functions; an engine runs on its own inputs at its "
                                  "batch (open it with batch=N), or wrap it: perf.measure(lambda x: engine(x), "
                                  "inputs=...)")
            return None
        if not callable(target):
            raise ConfigError(
                f"perf.measure() takes an engine (trt_engine(...)) or a function to call, not "
                f"{type(target).__name__}")
        ctx = self.context
        clock = getattr(ctx, "clock", None) or WallClock()
        simulated = getattr(clock, "kind", None) == "virtual"
        device = getattr(ctx, "device", None)
        scale = load = None
        if simulated:
            scale = host_scale(device)
            load = host_loads(device)
        board = device is not None and not getattr(device, "simulated", True)
        backend = getattr(ctx, "backend", None) or "host"
        return FunctionWorkload(target, items=1 if items is None else items, inputs=inputs, name=name,
                                clock=clock, backend=backend, host_scale=scale, host_load=load, board=board)

    def stage(self, name: str, sync: Any = None) -> Stage:
        """``perf.stage(name)``: a named stage of the function being measured (``run.stages``)."""
        return Stage(name, sync)

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

    def check_outputs(self, engine_or_outputs: Any, inputs: Any = None, reference: Any = "onnxruntime",
                      atol: Optional[float] = None, rtol: Optional[float] = None,
                      cosine: Optional[float] = None, topk: Any = None, tolerances: Any = None,
                      name: Optional[str] = None, model: Any = None,
                      precision: Optional[str] = None) -> OutputsRecord:
        """Check outputs against a reference; the gate judges them after the test body, beside
        the perf bounds, and a mismatch fails the test (``run.outputs``, ``gate.outputs``).

        ``engine_or_outputs``: an engine (run here on ``inputs``: given, replayed from the
        golden file, or made from the session's seed) or outputs by name. ``reference``:
        ``"onnxruntime"`` (the engine's ONNX on the CPU; ``model=`` for outputs),
        ``"golden"`` (recorded with ``--jetson-update-baselines``) or ``{name: array}``.
        ``atol``/``rtol``/``cosine``/``topk=(k, share)``: for every output (default: the
        precision's, ``run.outputs.DEFAULT_TOLERANCES``); ``tolerances={name: {...}}`` per
        output. On the simulated device nothing is run and the check is reported skipped."""
        check_unique(self.output_checks, name or "")
        record = prepare(self.context, engine_or_outputs, inputs=inputs, reference=reference,
                         name=name or "", golden=self.golden, model=model, precision=precision,
                         atol=atol, rtol=rtol, cosine=cosine, topk=topk, tolerances=tolerances)
        self.output_checks.append(record)
        return record

    @property
    def last(self) -> Measurement:
        return self.measurements[-1]


def _is_engine(obj: Any) -> bool:
    """An Engine, or an object that runs like one (``infer`` and a ``clock``: ``as_engine``)."""
    return isinstance(obj, Engine) or (callable(getattr(obj, "infer", None))
                                       and getattr(obj, "clock", None) is not None)


def _user_frames(tb: Optional[TracebackType]) -> Optional[TracebackType]:
    """The traceback from the measured function's frame on (the frames below the function
    workload's own), or all of it where that frame is not found."""
    own = {FunctionWorkload.call.__code__, FunctionWorkload._run_back_to_back.__code__,
           FunctionWorkload._run_fed.__code__}
    found = None
    t = tb
    while t is not None:
        if t.tb_frame.f_code in own and t.tb_next is not None:
            found = t.tb_next  # the innermost: the loop calls ``call`` on a virtual clock
        t = t.tb_next
    return found if found is not None else tb
