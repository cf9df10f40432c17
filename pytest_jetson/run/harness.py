"""The timed loop: warm up, then run ``engine.infer`` back to back on the engine's clock.

Three ways to stop: after ``duration`` (engine-clock seconds), after ``iterations``, or, with
neither, adaptively the way Triton's perf_analyzer does it: measure in windows until the last
three windows' throughput agree within ``stability`` (default 2 %) or ``max_duration`` passes.
The Measurement covers every timed window (the telemetry sampled alongside covers the same
span) and says whether the last three were stable.

The loop itself is the engine's (``Engine.timed_run``): it reads the clock once per iteration
(each iteration starts where the previous ended), so the latency of an iteration is everything
the caller pays for it, and adds no more than a clock read and a list append to a bare loop
around the same engine.

With ``rate=`` the same runs (duration, iterations, adaptive, extension) are paced by an arrival
schedule instead (``run.arrival``): a call per arrival, latency counted from its arrival (queueing
included), the window closing at its end time even when the last stretch is idle, so throughput
is items over the window. The warm-up stays back to back. A rate the engine can never keep up
with, or a deadline every call misses, is an error after the run (``strict``); ``perf.max_rate``
counts such a probe as a rate not met.
"""

from dataclasses import dataclass
from operator import sub
from typing import Any, Callable, Dict, List, Optional, Tuple

from ..engines.base import STALL_ITERATIONS, Engine, as_engine, default_loop, loop_limits
from ..engines.layer_profile import LayerProfile
from ..errors import ConfigError, EngineError
from ..units import LONGEST_MEASUREMENT_S, MAX_ITERATIONS, format_duration, parse_duration
from . import arrival
from .measurement import Measurement, Samples
from .window import MeasuredWindow

DEFAULT_WINDOW = 1.0  # s, adaptive mode; perf_analyzer's default is 5 s, too slow for a suite
STABLE_WINDOWS = 3
FIXED_WINDOWS = 10  # per-window throughputs a fixed run is split into (for rank tests)
#: Iterations per call of the engine's timed loop, whose lists then move into C doubles: a few
#: hundred kilobytes of floats, still in cache when moved; the loop's own check for a clock that
#: never moves counts this many in one call.
CHUNK = STALL_ITERATIONS


def _engine_name(engine: Engine) -> str:
    return str(engine.name or type(engine).__name__)


def _check_simulated_length(engine: Engine, name: str, what: str, given: Any, seconds: Optional[float]) -> None:
    """On the virtual clock a duration costs iterations, not time: one the simulated engine's
    predicted latency turns into more than ``MAX_ITERATIONS`` is refused before it runs (it
    would run for hours and hold gigabytes of samples). Real engines are bounded by the clock."""
    if not seconds or getattr(engine.clock, "kind", None) != "virtual":
        return
    per_call = getattr(getattr(engine, "prediction", None), "latency", None)
    if not isinstance(per_call, (int, float)) or not per_call > 0:
        return
    calls = seconds / per_call
    if calls > MAX_ITERATIONS:
        longest = MAX_ITERATIONS * per_call
        raise ConfigError(f"{name}: {what}: {given} on the simulated device would take about {calls:.3g} "
                          f"iterations, more than {MAX_ITERATIONS:,} (the samples would not fit in memory); "
                          f"measure for at most {format_duration(longest)}")


def _check_plan(name: str, duration: Optional[float], iterations: Any) -> Tuple[Optional[float], Optional[int]]:
    if iterations is not None:
        if isinstance(iterations, bool) or not isinstance(iterations, int):
            try:
                if float(iterations) != int(iterations):
                    raise ValueError
                iterations = int(iterations)
            except (TypeError, ValueError):
                raise ConfigError(f"{name}: iterations={iterations!r} is not a whole number; "
                                  "pass e.g. iterations=1000") from None
        if iterations > MAX_ITERATIONS:
            raise ConfigError(f"{name}: iterations={iterations!r} is more than {MAX_ITERATIONS:,}, the most one "
                              f"measurement keeps samples of (at 8 bytes or more per sample); pass fewer")
    dur_zero = duration is not None and duration <= 0
    it_zero = iterations is not None and iterations <= 0
    if (dur_zero and (iterations is None or it_zero)) or (it_zero and (duration is None or dur_zero)):
        raise ConfigError(
            f"{name}: duration and iterations are both zero or negative (duration={duration!r}, "
            f"iterations={iterations!r}), so nothing would be measured; pass "
            "duration='10s' or iterations=1000 (or neither, for an adaptive run until stable)"
        )
    return (None if dur_zero else duration), (None if it_zero else iterations)


def _windows_by_count(ends: List[float], t0: float, batch: int, n: int = FIXED_WINDOWS) -> List[float]:
    """Split a run into up to ``n`` chunks of consecutive iterations; throughput of each."""
    count = len(ends)
    n = min(n, count)
    out = []
    start_t = t0
    for k in range(n):
        lo, hi = (count * k) // n, (count * (k + 1)) // n
        if hi <= lo:
            continue
        end_t = ends[hi - 1]
        span = end_t - start_t
        if span > 0:
            out.append((hi - lo) * batch / span)
        start_t = end_t
    return out


def stable_within(values: List[float], band: float) -> bool:
    """Every value within ``band`` (a fraction) of their mean, as perf_analyzer checks."""
    if not values:
        return False
    mean = sum(values) / len(values)
    if mean <= 0:
        return False
    return all(abs(v - mean) <= band * mean for v in values)


def _reports_device_time(engine: Engine) -> bool:
    """Whether each infer call reports the device's own time (the backend's row says, through
    ``open_engine``)."""
    return bool(engine.reports_device_time)


@dataclass
class _Plan:
    """What a measurement was asked for, checked: durations in engine-clock seconds."""

    name: str
    batch: int
    duration: Optional[float]
    iterations: Optional[int]
    warmup: float
    max_duration: Optional[float]
    window: Optional[float]
    stability: float
    arrivals: Optional[arrival.Arrivals] = None
    deadline: Optional[float] = None
    seed: int = 0
    strict: bool = True

    @property
    def mode(self) -> str:
        if self.duration is None and self.iterations is None:
            return "adaptive"
        if self.duration is None:
            return "iterations"
        return "duration" if self.iterations is None else "duration+iterations"


def _plan(engine: Engine, duration: Any, iterations: Any, warmup: Any, batch: Optional[int],
          stability: float, max_duration: Any, window: Any, rate: Any = None, deadline: Any = None,
          seed: Any = None, strict: bool = True) -> _Plan:
    name = _engine_name(engine)
    longest = LONGEST_MEASUREMENT_S
    dur = parse_duration(duration, f"{name}: duration", at_most=longest)
    dur, its = _check_plan(name, dur, iterations)
    warm = parse_duration(warmup, f"{name}: warmup", at_most=longest) or 0.0
    max_dur = parse_duration(max_duration, f"{name}: max_duration", at_most=longest)
    win = parse_duration(window, f"{name}: window", at_most=longest)
    for what, given, seconds in (("duration", duration, dur), ("warmup", warmup, warm)):
        _check_simulated_length(engine, name, what, given, seconds)
    if win is not None and win <= 0:
        raise ConfigError(f"{name}: window={window!r} must be a positive duration such as '1s'")
    if not 0 < float(stability) < 1:
        raise ConfigError(f"{name}: stability={stability!r} must be a fraction in (0, 1), e.g. 0.02 for 2 %")
    b = engine.batch if batch is None else batch
    if b != engine.batch:
        b = engine.check_batch(b)
    spec = arrival.parse_rate(rate, name)
    dl = arrival.parse_deadline(deadline, spec, name)
    # the session's seed (a simulated engine carries it) and what is measured draw the arrivals
    base = seed if seed is not None else getattr(engine, "seed", 0)
    return _Plan(name, b, dur, its, warm, max_dur, win, float(stability), spec, dl,
                 arrival.stream_seed(base, name), bool(strict))


class _Run:
    """The samples of one measurement as they grow: latencies, end times, device times.

    The engine's loop appends to lists (``Engine.timed_run``: the cheapest thing a timed loop
    can do); it runs ``CHUNK`` iterations a call, after which the lists move into C doubles
    (``Samples.take``) and are emptied. A run never holds its samples as Python floats (32
    bytes each per list): 8 bytes a value per series, plus one chunk."""

    def __init__(self, engine: Engine, plan: _Plan, t0: float) -> None:
        self.engine = engine
        self.plan = plan
        self.lat = Samples()
        self.ends = Samples()
        self.dev: Optional[Samples] = Samples() if _reports_device_time(engine) else None
        #: False once an iteration reported no device time (then the run has none)
        self.dev_complete = True
        # what one call of the loop appends to, emptied into the samples after it
        self._lat: List[float] = []
        self._ends: List[float] = []
        self._dev: Optional[List[Any]] = None if self.dev is None else []
        #: whether the engine runs the default loop (``Engine.end_times``) without device times
        self._default_loop = self.dev is None and default_loop(engine)
        self.t0 = self.t_end = t0
        self.windows: List[float] = []
        self.stable: Optional[bool] = None
        self.looks = 1
        # at a rate: the schedule (shared by every stretch of the run) and what each call adds
        spec = plan.arrivals
        self.schedule = None if spec is None else spec.schedule(t0, plan.seed)
        self.arrived = Samples()
        self.services = Samples()
        self._arrived: List[float] = []
        self._services: List[float] = []
        #: 0 or 100 per call: small ints, one shared object each (8 bytes a value in a list)
        self.missed: List[int] = []

    def until(self, until_t: Optional[float], until_n: Optional[int] = None) -> None:
        """Run on until the clock passes ``until_t`` or ``until_n`` more iterations ran, a chunk
        at a time."""
        limit_t = loop_limits(until_t, None)[0]
        left = until_n
        first = True
        while left is None or left > 0:
            step = CHUNK if left is None else min(CHUNK, left)
            if self.schedule is None:
                ran = self._back_to_back(until_t, step, first)
            else:
                ran = self._at_rate(until_t, step)
            first = False
            if ran < step or self.t_end >= limit_t:
                return
            if left is not None:
                left -= ran

    def _back_to_back(self, until_t: Optional[float], step: int, first: bool) -> int:
        # a later chunk starts at a fresh clock read: moving the last chunk's samples is the
        # harness's time, not the first iteration's (it would show in latency_max)
        engine = self.engine
        start = self.t_end if first else engine.clock.now()
        if self._default_loop:
            # the default loop keeps end times only; the latencies are their gaps, taken here
            before = len(self.ends)
            try:
                self.t_end = engine.end_times(self.plan.batch, start, until_t, step, self._ends)
            finally:
                self.ends.take(self._ends)
                self.lat.take_gaps(self.ends, before, start)
            return len(self.ends) - before
        lat = self._lat
        try:
            self.t_end = engine.timed_run(self.plan.batch, start, until_t, step, lat, self._ends, self._dev)
            return len(lat)
        finally:
            self._keep()

    def _at_rate(self, until_t: Optional[float], step: int) -> int:
        engine, batch, dev = self.engine, self.plan.batch, self._dev
        call, prepare = _call_of(engine, batch)
        after = None if dev is None else (lambda: dev.append(engine.last_device_time))
        lat = self._lat
        try:
            end = arrival.arrival_loop(call, engine.clock, self.schedule, until_t, step, lat,
                                       self._ends, self.plan.deadline, self._arrived, self.missed,
                                       self._services, prepare, after)
            ran = len(lat)
        finally:
            self._keep()  # before waiting: an idle stretch absorbs it
        # the window closes at the duration asked for or, by count, at the next arrival (whole
        # periods), unless the last call ran past it; an idle end is waited out, so telemetry
        # and the next stretch start there
        nxt = self.schedule.peek()
        close = nxt if until_t is None else min(until_t, nxt)
        close = max(close, self.t_end if end is None else end)
        arrival.wait_until(engine.clock, close)
        self.t_end = close
        return ran

    def _keep(self) -> None:
        """Move what the last chunk appended into the run's samples."""
        try:
            self.lat.take(self._lat)
        except TypeError as exc:
            raise EngineError(f"{self.plan.name}: its timed loop appended a latency that is not a number "
                              f"({exc}); Engine.timed_run appends seconds as floats") from None
        self.ends.take(self._ends)
        if self._dev is not None:
            if self.dev_complete and any(d is None for d in self._dev):
                self.dev_complete = False  # an iteration the backend could not time on the device
            if self.dev_complete:
                self.dev.take(self._dev)  # type: ignore[union-attr]
            del self._dev[:]
        if self.schedule is not None:
            self.arrived.take(self._arrived)
            self.services.take(self._services)

    def device_latencies(self) -> Optional[Samples]:
        """The device times of every iteration, or None where the backend could not give one
        for each."""
        return self.dev if self.dev_complete and self.dev is not None else None

    def rate_extra(self) -> Dict[str, Any]:
        """What a measurement at a rate carries (none for a run back to back)."""
        spec = self.plan.arrivals
        if spec is None:
            return {}
        return arrival.summary(spec, self.plan.deadline, self.plan.seed, self.ends, self.missed)

    def rate_problem(self) -> Optional[str]:
        """Why the rate could not be served (see ``arrival.keep_up_problem``), or None."""
        spec = self.plan.arrivals
        if spec is None or not self.plan.strict:
            return None
        return (arrival.keep_up_problem(self.arrived, self.lat, self.services, spec, self.plan.name)
                or arrival.deadline_problem(self.lat, self.services, self.plan.deadline, self.plan.name))

    def fixed(self, window: MeasuredWindow, environment: Optional[dict], extend: Any) -> None:
        """A run by duration and/or iterations, extended while ``extend`` asks for more."""
        plan = self.plan
        dur = plan.duration
        self.until(None if dur is None else self.t0 + dur, plan.iterations)
        if extend is None or dur is None or plan.mode != "duration":
            return
        measured = 1.0
        while self.lat:
            # a provisional measurement (copies: the samples grow on) for the comparison to look at
            dev = self.device_latencies()
            so_far = _measurement(self.engine, plan.name, plan.batch, Samples(self.lat),
                                  None if dev is None else Samples(dev), self.t_end - self.t0,
                                  window.peek(len(self.lat) * plan.batch),
                                  _windows_by_count(self.ends, self.t0, plan.batch), None, environment,
                                  self.rate_extra())
            more = extend(so_far, measured)
            if not more or more <= 0:
                return
            self.until(self.t_end + more * dur)
            measured += more
            self.looks += 1

    def adaptive(self, warm: "_WarmUp") -> None:
        """Windows until the last three agree within ``stability`` or ``max_duration`` passes."""
        plan = self.plan
        if plan.window is None:
            est = warm.mean
            period = plan.arrivals.period if plan.arrivals is not None else 0.0
            plan.window = max(DEFAULT_WINDOW, 10 * est, 10 * period)
        deadline = self.t0 + (plan.max_duration if plan.max_duration is not None else 60.0)
        start = self.t0
        self.stable = False
        while True:
            n_before = len(self.lat)
            self.until(self.t_end + plan.window)
            n_win = len(self.lat) - n_before
            self.windows.append(n_win * plan.batch / (self.t_end - start) if self.t_end > start else 0.0)
            start = self.t_end
            if len(self.windows) >= STABLE_WINDOWS and stable_within(self.windows[-STABLE_WINDOWS:], plan.stability):
                self.stable = True
                return
            if self.t_end >= deadline:
                return

    def extra(self, warm_iterations: int) -> Dict[str, Any]:
        plan = self.plan
        extra: Dict[str, Any] = {"mode": plan.mode, "warmup": plan.warmup, "warmup_iterations": warm_iterations}
        if plan.mode == "adaptive":
            extra.update(window=plan.window, stability=plan.stability, max_duration=plan.max_duration)
        if self.looks > 1:
            extra.update(looks=self.looks, requested_duration=plan.duration)
        extra.update(self.rate_extra())
        # what the engine says of how it ran (I/O mode, CUDA graphs, build time, prediction)
        extra.update(self.engine.measurement_extra(plan.batch))
        return extra


def measure(engine: Engine, duration: Any = None, iterations: Any = None, warmup: Any = "1s",
            batch: Optional[int] = None, stability: float = 0.02, max_duration: Any = "60s",
            window: Any = None, telemetry: Any = None, environment: Optional[dict] = None,
            before_window: Optional[Callable[[], Any]] = None,
            telemetry_interval: Optional[float] = None,
            extend: Optional[Callable[[Measurement, float], Optional[float]]] = None,
            rate: Any = None, deadline: Any = None, seed: Any = None, strict: bool = True,
            profile: bool = True) -> Measurement:
    """Measure ``engine`` and return a Measurement on the engine's clock.

    ``engine``: an ``Engine``; an object that only runs like one (``infer(batch)`` and a
    ``clock``, such as a wrapper forwarding to an engine) is measured through ``as_engine``.

    ``duration`` and ``iterations`` may both be given: the run stops at whichever comes first.
    ``before_window`` is called after the warm-up, right before the timed window (a pool's start
    barrier). ``telemetry``: None or "none" (no sampling), a sampler, or a telemetry factory
    (see ``window.MeasuredWindow.around``).

    ``extend(measurement, measured)``: asked after a measurement of ``duration`` with what was
    measured so far (``measured``: in requested durations, 1.0 the first time); it returns how many
    more requested durations to measure on, back to back in the same window, or None to stop (the
    gate's sequential comparison, ``gate.extend``). Only a measurement by duration extends.

    ``rate``: None (back to back) or an arrival rate (``run.arrival.parse_rate``: "30/s",
    "poisson:30/s", 30); latencies then count from each call's arrival and the measurement gets
    ``jitter`` and ``deadline_miss`` (``deadline``: a duration, default one period). ``seed``
    draws Poisson arrivals (default: the engine's seed), mixed with the engine's name.
    ``strict``: a rate the engine cannot keep up with, or a deadline every call misses, raises
    ``arrival.RateError`` after the run.

    ``profile``: after the window, ask the engine for its per-layer profile
    (``Engine.layer_profile``: a pass of its own, outside the measured figures) into
    ``Measurement.profile``; a backend that fails to profile leaves a note there, never an error.
    """
    engine = as_engine(engine)
    plan = _plan(engine, duration, iterations, warmup, batch, stability, max_duration, window,
                 rate, deadline, seed, strict)
    now = engine.clock.now

    # warm-up: at least one iteration when asked for, so first-call costs stay out of the window
    warm = _WarmUp()
    if plan.warmup > 0:
        warm.run(engine, plan.batch, plan.warmup)

    if before_window is not None:
        before_window()

    measured = MeasuredWindow.around(telemetry, telemetry_interval, what=plan.name, clock=engine.clock)
    with measured:
        if plan.arrivals is not None:
            _ready_first(engine, plan.batch)  # its input ready before the first arrival
        run = _Run(engine, plan, now())
        if plan.mode == "adaptive":
            run.adaptive(warm)
        else:
            run.fixed(measured, environment, extend)
            run.windows = _windows_by_count(run.ends, run.t0, plan.batch)
        if run.schedule is None:
            run.ends = Samples()  # read: gone before the window's telemetry is made as it closes
    summary = measured.finish(len(run.lat) * plan.batch)
    windows = run.windows
    extra = run.extra(warm.count)
    extra.update(measured.extra())
    m = _measurement(engine, plan.name, plan.batch, run.lat, run.device_latencies(), run.t_end - run.t0,
                     summary, windows, run.stable, environment, extra)
    m.telemetry_series = measured.series()
    if profile:
        m.profile = layer_profile(engine, plan.batch)
    problem = run.rate_problem()
    if problem:
        raise arrival.RateError(problem)
    return m


class _WarmUp:
    """The warm-up, run back to back ``CHUNK`` iterations at a time: only how many ran and
    their mean latency are kept (the adaptive window's first guess)."""

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0

    @property
    def mean(self) -> float:
        return self.total / self.count if self.count else 0.0

    def run(self, engine: Engine, batch: int, seconds: float) -> None:
        now = engine.clock.now
        t = now()
        until_t = t + seconds
        limit_t = loop_limits(until_t, None)[0]
        default = default_loop(engine)
        lat: List[float] = []
        ends: List[float] = []
        while True:
            start = t
            if default:
                t = engine.end_times(batch, start, until_t, CHUNK, ends)
                lat = list(map(sub, ends, [start, *ends]))
            else:
                t = engine.timed_run(batch, start, until_t, CHUNK, lat, ends, None)
            ran = len(lat)
            self.count += ran
            self.total += sum(lat)
            del lat[:], ends[:]
            if ran < CHUNK or t >= limit_t:
                return
            t = now()


def layer_profile(engine: Engine, batch: int) -> Optional[LayerProfile]:
    """The engine's per-layer profile at ``batch``; where profiling itself fails, an empty
    profile whose note says why (a perf test never fails for want of a profile)."""
    try:
        return engine.layer_profile(batch)
    except Exception as exc:  # a profiler's failure must not cost the measurement
        return LayerProfile(str(getattr(engine, "backend", "") or ""),
                            notes=[f"no per-layer profile: {type(exc).__name__}: {exc}"])


def _ready_first(engine: Engine, batch: int) -> None:
    prepare = _call_of(engine, batch)[1]
    if prepare is not None:
        prepare()


def _call_of(engine: Engine, batch: int) -> Tuple[Callable[[], Any], Optional[Callable[[], Any]]]:
    """The timed call at each arrival and what readies its input beforehand: a workload that
    splits the two (``prepare()`` then ``call()``, a measured function) keeps the preparation out
    of the timed region; an engine runs ``infer(batch)`` on its pre-made inputs."""
    prepare, call = getattr(engine, "prepare", None), getattr(engine, "call", None)
    if callable(prepare) and callable(call):
        return call, prepare
    infer = engine.infer
    return (lambda: infer(batch)), None


def _measurement(engine: Engine, name: str, b: int, lat: Samples, dev: Optional[Samples],
                 duration: float, summary: Any, windows: List[float], stable: Optional[bool],
                 environment: Optional[dict], extra: Dict[str, Any]) -> Measurement:
    host_overhead = None
    device_latencies = dev if dev else None
    if device_latencies is not None:
        host_overhead = max(0.0, (sum(lat) - sum(device_latencies)) / len(lat))
    return Measurement(
        name=name,
        batch=int(b),
        latencies=lat,
        duration=float(duration),
        items=int(len(lat) * b),
        clock=str(getattr(engine.clock, "kind", "wall")),
        backend=str(engine.backend),
        model=str(engine.model),
        precision=str(engine.precision),
        stable=stable,
        windows=windows,
        host_overhead=host_overhead,
        device_latencies=device_latencies,
        engine_memory=engine.memory_bytes,
        telemetry=summary,
        environment=dict(environment or {}),
        extra=extra,
    )
