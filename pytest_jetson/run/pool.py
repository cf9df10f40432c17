"""Process pools: N inference processes on one board, measured over one shared window.

The research behind pytest-jetson runs 1, 2, 4 and 8 processes at once and watches per-process
throughput, memory and latency fall; ``run_pool`` is that experiment as one call::

    from pytest_jetson.run.pool import run_pool
    m = run_pool("resnet50", processes=4, precision="int8", batch=1, duration="5s")
    m.throughput, m.per_process_throughput.min, m.start_skew, m.workers[0].latency_p99

    run_pool([("resnet50", {"precision": "int8"}), ("yolov8n", {"processes": 2})])  # 3 tenants

Each backend's row says how its pools run (``Backend.pool``, a runner taking a ``PoolRun``). Real
backends (tensorrt, onnxruntime) run real ``spawn``-ed processes (``run_processes``, ``pool_procs``):
each opens its engine before a barrier, all warm up together, leave a second barrier together and
measure the same window; engine builds are never in the window. On the simulated device the pool
is the simulator's contention model (``pool_sim.run_pool``), with no processes and the same
result shape.

The result is a ``PoolMeasurement``: the pool's latencies are every worker's latencies pooled,
its items the sum, its duration the common window (the workers' mean window), so ``throughput``
is the aggregate; ``workers`` holds each worker's own Measurement; ``start_skew`` is the spread
of the workers' window starts (0 on the simulated device); ``telemetry`` is one sampler run in
the parent over the whole window (the host source sees the workers as the parent's children).
"""

from types import SimpleNamespace
from typing import Any, Dict, List, Optional

from ..clock import WallClock
from ..devices.device import as_device, simulated
from ..engines.backends import BACKENDS, default_backend
from ..engines.cache import model_digest
from ..errors import ConfigError
from ..telemetry.factory import TelemetryFactory
from ..telemetry.sources import SOURCES
from ..units import LONGEST_MEASUREMENT_S, format_duration, parse_duration
from .measurement import Measurement, PoolMeasurement, Samples
from .pool_procs import ProcessPool
from .pool_spec import PoolRun, WorkerSpec, worker_specs
from .recorder import accelerator_of
from .window import MeasuredWindow


def run_pool(workloads: Any, *, context: Any = None, device: Any = None, backend: Optional[str] = None,
             processes: Optional[int] = None, duration: Any = "5s", warmup: Any = "1s",
             deadline: Any = None, clock: Any = None, seed: Optional[int] = None,
             telemetry: Any = None, **options: Any) -> PoolMeasurement:
    """Run ``workloads`` as a pool and return its PoolMeasurement.

    ``workloads``: a model (zoo name or ONNX path) or ``(model, options)`` repeated
    ``processes`` times (default 1), or a list of workloads, one process each (an entry's
    ``"processes"`` option repeats it). ``options`` (``precision=``, ``batch=``, ...) apply to
    every workload that does not set them. ``context``: the session's Context (device, backend,
    clock, seed, ``--jetson-duration``, telemetry settings); explicit arguments win over it.
    ``deadline``: time limit of the whole run, engine builds included (default 30 min for
    tensorrt, 5 min for onnxruntime, plus warm-up and window); a worker still opening its engine
    then is reported as hung. Once every engine is open, a worker that has not reported within
    warm-up + window + max(5 s, warm-up + window) is reported as hung too. ``seed`` (default: the
    context's, else 0) seeds the simulated noise, a different stream per worker. ``telemetry``:
    None (the context's source, none without a context), "none", a source name, a
    ``TelemetryFactory`` or a sampler.
    """
    specs = worker_specs(workloads, processes, options)
    settings = getattr(context, "settings", None)
    window = _window_length(duration, settings)
    warm = parse_duration(warmup, "process_pool warmup", at_most=LONGEST_MEASUREMENT_S) or 0.0
    if window < warm and getattr(settings, "duration", None) is not None:
        # --jetson-duration asks for quick runs everywhere: the warm-up shrinks with the window
        warm = window
    if window < warm:
        raise ConfigError(
            f"process_pool: the window ({format_duration(window)}) is shorter than the warm-up "
            f"({format_duration(warm)}); a pool measures after every worker has warmed up, so pass "
            f"a duration of at least the warm-up, or a shorter warmup= such as '{_short(window)}'"
        )
    dev = _device(device, context)
    spec = _backend(backend, context, dev)
    if seed is None:
        seed = int(getattr(context, "seed", 0) or 0)
    limit = parse_duration(deadline, "process_pool deadline", at_most=2 * LONGEST_MEASUREMENT_S)
    if limit is None:
        # builds are inside the deadline: a cold TensorRT build of a big model on a Nano takes minutes
        limit = spec.pool_deadline_s + warm + window
    elif limit <= 0:
        raise ConfigError(f"process_pool: deadline={deadline!r} must be a positive duration such as '10min'")
    runner = spec.pool_runner()
    if runner is None:
        raise ConfigError(f"process_pool: the {spec.name} backend runs no pools; use one of "
                          f"{', '.join(b.name for b in _backends(context) if b.runs_pools)}")
    return runner(PoolRun(specs=specs, device=dev, backend=spec, window=window, warmup=warm,
                          deadline=limit, seed=seed, clock=clock, context=context, telemetry=telemetry))


def _backends(context: Any = None) -> Any:
    """The session's table of backends (plugins' included); the built-in one without a session."""
    return getattr(context, "backends", None) or BACKENDS


def _backend(name: Optional[str], context: Any, device: Any) -> Any:
    if name:
        try:
            return _backends(context).get(name)
        except ConfigError as exc:
            raise ConfigError(f"process_pool: {exc}") from None
    if context is not None:
        return context.backend_spec
    return default_backend(device)


# -- inputs -----------------------------------------------------------------------------------------
def _window_length(duration: Any, settings: Any) -> float:
    override = getattr(settings, "duration", None)
    if override is not None:
        return float(override)
    window = parse_duration(duration, "process_pool duration", at_most=LONGEST_MEASUREMENT_S)
    if window is None or window <= 0:
        raise ConfigError(f"process_pool: duration={duration!r} must be a positive duration such as '5s'")
    return window


def _short(window: float) -> str:
    return f"{max(window / 5, 0.001) * 1000:.0f}ms"


def _device(device: Any, context: Any) -> Any:
    if device is not None:
        return as_device(device)
    if context is not None:
        return context.device
    return simulated("orin-nano")


def environment(device: Any, backend: str, specs: List[WorkerSpec], context: Any = None) -> Dict[str, Any]:
    # the session's fingerprint (a host's, with real engines and no board) for the session's device
    same = context is not None and getattr(context, "device", None) is device
    env = dict(context.fingerprint() if same else device.fingerprint())
    env.update(backend=backend, processes=len(specs))
    precisions = {s.precision for s in specs}
    batches = {s.batch for s in specs}
    env["precision"] = precisions.pop() if len(precisions) == 1 else "mixed"
    env["batch"] = batches.pop() if len(batches) == 1 else "mixed"
    accelerators = sorted({accelerator_of(s.options.get("dla_core")) for s in specs})
    env["accelerator"] = "+".join(accelerators)
    env["workloads"] = [s.describe() for s in specs]
    return env


def add_model_digests(env: Dict[str, Any], workers: List[Measurement],
                      files: List[Optional[Dict[str, Any]]]) -> None:
    """The fingerprint's ``model_sha256``, as a single-process measurement's has it: each worker's
    (the file it measured, ``files``: its engine's ``path`` and ``model``, as
    ``cache.model_digest`` reads them), and the pool's (each file's once, in worker order, as its
    ``model`` names them) where every worker measured a file."""
    digests = [model_digest(SimpleNamespace(**(f or {}))) for f in files]
    for w, digest in zip(workers, digests):
        if digest is not None:
            w.environment["model_sha256"] = digest
    if digests and all(d is not None for d in digests):
        env["model_sha256"] = "+".join(dict.fromkeys(d for d in digests if d is not None))


# -- telemetry --------------------------------------------------------------------------------------
def measured_window(telemetry: Any, context: Any, device: Any, clock: Any, seed: int) -> MeasuredWindow:
    """One measured window for the whole pool. ``telemetry`` None: the session's source (the
    context's factory when the pool runs on the session's clock; a factory of the same source on
    the pool's own clock otherwise, e.g. real processes beside a simulated session)."""
    if telemetry is None:
        settings = getattr(context, "settings", None)
        if settings is None or settings.telemetry == "none":
            return MeasuredWindow(None)
        same_clock = getattr(context.clock, "kind", None) == getattr(clock, "kind", "wall")
        if same_clock:
            return MeasuredWindow.around(context.telemetry, what="process_pool")
        sources = getattr(context, "sources", None) or SOURCES
        named = settings.telemetry
        telemetry = "auto" if named in sources and sources.get(named).simulated else named
        interval: Optional[float] = settings.telemetry_interval
    else:
        interval = None
    if isinstance(telemetry, str) and telemetry != "none":
        telemetry = TelemetryFactory(device, clock, source=telemetry, seed=seed,
                                     sources=getattr(context, "sources", None) or SOURCES,
                                     **({} if interval is None else {"interval": interval}))
    return MeasuredWindow.around(telemetry, what="process_pool")


# -- real processes ---------------------------------------------------------------------------------
def run_processes(run: PoolRun) -> PoolMeasurement:
    """The pool runner of backends with real engines: one spawned process per worker."""
    row = run.backend
    backend, device, context, seed = row.name, run.device, run.context, run.seed
    window, warm = run.window, run.warmup
    specs = [_with_defaults(s, row.pool_options) for s in run.specs]
    opener = _opener_ref(row)
    if opener is not None:
        specs = [s if s.engine_factory is not None else
                 WorkerSpec(index=s.index, model=s.model, options=dict(s.options, opener=opener),
                            engine_factory="pytest_jetson.engines.backends:open_by_reference")
                 for s in specs]
    # Real processes are measured for real, on the wall clock, also beside a simulated session.
    measured = measured_window(run.telemetry, context, device, WallClock(), seed)
    pool = ProcessPool(specs, backend=backend, device=device, duration=window, warmup=warm,
                       deadline=run.deadline, seed=seed, on_window_start=measured.open,
                       on_window_end=measured.close)
    try:
        states = pool.run()
    finally:
        measured.close()
    env = environment(device, backend, specs, context)
    workers: List[Measurement] = []
    starts = []
    for st in states:
        res = st.result
        m = res["measurement"]
        spec = st.spec
        m.name = f"worker {spec.index}: {spec.describe()}"
        m.model = spec.model_name
        wenv = dict(env)
        wenv.update(m.environment)
        wenv.update(precision=spec.precision, batch=spec.batch, model=spec.model_name,
                    accelerator=accelerator_of(spec.options.get("dla_core")))
        m.environment = wenv
        loaded = st.loaded or {}
        m.extra.update(
            worker=spec.index,
            pid=st.extra.get("pid"),
            load_s=loaded.get("load_s"),
            spawn_s=(loaded["t_main"] - st.t_spawn) if "t_main" in loaded else None,
            # time to ready beyond the engine's own load: interpreter start, imports, pipes
            startup_overhead_s=(loaded["t_loaded"] - st.t_spawn - loaded["load_s"]) if loaded else None,
            peak_rss_bytes=res.get("peak_rss"),
        )
        starts.append(res.get("t0"))
        workers.append(m)
    skew = None
    if starts and all(t is not None for t in starts):
        first = min(starts)
        skew = max(starts) - first
        for m, t in zip(workers, starts):
            m.extra["window_start"] = t - first
        ends = [t + m.duration for m, t in zip(workers, starts)]
        span = {"window_span_s": max(ends) - first, "window_overlap_s": max(0.0, min(ends) - max(starts))}
    else:
        span = {}
    add_model_digests(env, workers, [st.result.get("model_file") for st in states])
    tele = measured.finish(sum(w.items for w in workers))
    extra: Dict[str, Any] = {"warmup": warm}
    extra.update(measured.extra())
    extra.update(span)
    for option in row.pool_options:
        extra[f"{option}_per_worker"] = [s.options.get(option) for s in specs]
    pool = assemble(specs, workers, backend=backend, clock_kind="wall", window=window,
                    start_skew=skew, telemetry=tele, environment=env, extra=extra)
    pool.telemetry_series = measured.series()
    return pool


def _opener_ref(spec: Any) -> Optional[str]:
    """A plugin's backend exists only in the process whose conftest registered it: spawned
    workers open its engines through the opener's import path instead (None for built-ins)."""
    if spec.plugin == "pytest-jetson":
        return None
    fn = spec.open
    module, name = getattr(fn, "__module__", None), getattr(fn, "__qualname__", "")
    if not module or module == "__main__" or "<" in name:
        raise ConfigError(
            f"process_pool: the {spec.name} backend ({spec.plugin}) opens engines with {fn!r}, which "
            "a spawned worker cannot import; make it a module-level function of an importable module")
    return f"{module}:{name}"


def _with_defaults(spec: WorkerSpec, defaults: Dict[str, Any]) -> WorkerSpec:
    """The backend's pool defaults (onnxruntime: one thread per worker, so N workers mean N busy
    cores and the pool measures process contention, not thread oversubscription) under the
    workload's own options."""
    if not defaults or all(k in spec.options for k in defaults):
        return spec
    return WorkerSpec(index=spec.index, model=spec.model, options=dict(defaults, **spec.options),
                      engine_factory=spec.engine_factory)


# -- the result -------------------------------------------------------------------------------------
def pool_name(specs: List[WorkerSpec]) -> str:
    kinds: Dict[str, int] = {}
    for s in specs:
        kinds[s.describe()] = kinds.get(s.describe(), 0) + 1
    return "pool[" + " + ".join(f"{n}x {k}" for k, n in kinds.items()) + "]"


def assemble(specs: List[WorkerSpec], workers: List[Measurement], *, backend: str, clock_kind: str,
             window: float, start_skew: Optional[float], telemetry: Any, environment: Dict[str, Any],
             extra: Dict[str, Any]) -> PoolMeasurement:
    """The PoolMeasurement of ``workers`` (see the module doc for what the pool's figures mean)."""
    # C doubles, copied array to array: a long pool never holds its latencies as float objects
    pooled = Samples()
    for w in workers:
        pooled.extend(w.latencies)
    durations = [w.duration for w in workers if w.duration > 0]
    memories = [w.engine_memory for w in workers]
    extra = dict(extra)
    extra.update(processes=len(workers), window=window, workloads=[s.describe() for s in specs])
    return PoolMeasurement(
        name=pool_name(specs),
        batch=_one_or({s.batch for s in specs}, min(s.batch for s in specs)),
        latencies=pooled,
        duration=float(sum(durations) / len(durations) if durations else window),
        items=int(sum(w.items for w in workers)),
        windows=_pool_windows(workers),
        clock=clock_kind,
        backend=backend,
        model="+".join(dict.fromkeys(s.model_name for s in specs)),
        precision=_one_or({s.precision for s in specs}, "mixed"),
        engine_memory=int(sum(memories)) if memories and all(m is not None for m in memories) else None,
        telemetry=telemetry,
        environment=environment,
        extra=extra,
        workers=workers,
        start_skew=start_skew,
    )


def _one_or(values: set, otherwise: Any) -> Any:
    """The value every worker shares, else ``otherwise``."""
    return next(iter(values)) if len(values) == 1 else otherwise


def _pool_windows(workers: List[Measurement]) -> List[float]:
    """The pool's throughput per sub-window: the workers' k-th windows added up (each worker's
    run is cut into the same number of consecutive chunks, which line up in time)."""
    if len({len(w.windows) for w in workers}) != 1:
        return []
    return [float(sum(col)) for col in zip(*(w.windows for w in workers))]
