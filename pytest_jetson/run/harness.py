"""The timed loop: warm up, then run ``engine.infer`` back to back on the engine's clock.

Three ways to stop: after ``duration`` (engine-clock seconds), after ``iterations``, or, with
neither, adaptively the way Triton's perf_analyzer does it: measure in windows until the last
three windows' throughput agree within ``stability`` (default 2 %) or ``max_duration`` passes.
The Measurement covers every timed window (the telemetry sampled alongside covers the same
span) and says whether the last three were stable.

The loop reads the clock once per iteration (each iteration starts where the previous ended), so
the latency of an iteration is everything the caller pays for it, and the harness adds no more
than a clock read and a list append to a bare loop around the same engine.
"""

from typing import Any, Callable, Dict, List, Optional, Tuple

from ..errors import ConfigError, EngineError
from ..units import parse_duration
from .measurement import Measurement
from .window import MeasuredWindow

DEFAULT_WINDOW = 1.0  # s, adaptive mode; perf_analyzer's default is 5 s, too slow for a suite
STABLE_WINDOWS = 3
FIXED_WINDOWS = 10  # per-window throughputs a fixed run is split into (for rank tests)
#: Iterations after which a clock that has not moved is reported instead of looped on forever.
STALL_ITERATIONS = 10000


def _engine_name(engine: Any) -> str:
    return str(getattr(engine, "name", None) or type(engine).__name__)


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


def _prediction(engine: Any, batch: int) -> Any:
    for_batch = getattr(engine, "prediction_for", None)
    return for_batch(batch) if for_batch is not None else getattr(engine, "prediction", None)


def _reports_device_time(engine: Any) -> bool:
    """Whether each infer call reports the device's own time (the backend's row says)."""
    from ..engines.registry import BACKENDS

    name = getattr(engine, "backend", "")
    return name in BACKENDS and BACKENDS.get(name).device_time


# -- the loop ---------------------------------------------------------------------------------------
def _run_until(engine: Any, batch: int, now: Callable[[], float], t_start: float,
               until_t: Optional[float], until_n: Optional[int], lat: List[float], ends: List[float],
               dev: Optional[List[float]]) -> float:
    """Run back to back from ``t_start`` until the clock passes ``until_t`` or ``until_n`` more
    iterations ran; append latencies and end times. Returns the last end time."""
    timed_run = getattr(engine, "timed_run", None)
    if timed_run is not None:
        # hook: an engine that runs the timed loop itself (TensorRT keeps inferences in flight
        # and times each with CUDA events, as trtexec does); same lists, same return value
        return timed_run(batch, t_start, until_t, until_n, lat, ends, dev)
    infer = engine.infer
    prev = t_start
    n = 0
    # a nanosecond of slack: ten virtual 10 ms steps add up to 0.0999..., not 0.1
    limit_t = float("inf") if until_t is None else until_t - 1e-9
    limit_n = -1 if until_n is None else until_n
    append_lat, append_end = lat.append, ends.append
    if dev is None:
        while n != limit_n and prev < limit_t:
            infer(batch)
            t = now()
            append_lat(t - prev)
            append_end(t)
            prev = t
            n += 1
            if n == STALL_ITERATIONS and t == t_start:
                _stalled(engine)
    else:
        append_dev = dev.append
        while n != limit_n and prev < limit_t:
            infer(batch)
            t = now()
            append_lat(t - prev)
            append_end(t)
            append_dev(engine.last_device_time)
            prev = t
            n += 1
            if n == STALL_ITERATIONS and t == t_start:
                _stalled(engine)
    return prev


def _stalled(engine: Any) -> None:
    raise EngineError(
        f"{_engine_name(engine)}: its clock did not move in {STALL_ITERATIONS} iterations; a "
        "simulated engine must advance its virtual clock (SimClock.advance) in infer()"
    )


def measure(engine: Any, duration: Any = None, iterations: Any = None, warmup: Any = "1s",
            batch: Optional[int] = None, stability: float = 0.02, max_duration: Any = "60s",
            window: Any = None, telemetry: Any = None, environment: Optional[dict] = None,
            before_window: Optional[Callable[[], Any]] = None,
            telemetry_interval: Optional[float] = None,
            extend: Optional[Callable[[Measurement, float], Optional[float]]] = None) -> Measurement:
    """Measure ``engine`` and return a Measurement on the engine's clock.

    ``duration`` and ``iterations`` may both be given: the run stops at whichever comes first.
    ``before_window`` is called after the warm-up, right before the timed window (a pool's start
    barrier). ``telemetry``: None or "none" (no sampling), a sampler, or a telemetry factory
    (see ``window.MeasuredWindow.around``).

    ``extend(measurement, measured)``: asked after a measurement of ``duration`` with what was
    measured so far (``measured``: in requested durations, 1.0 the first time); it returns how many
    more requested durations to measure on, back to back in the same window, or None to stop (the
    gate's sequential comparison, ``gate.extend``). Only a measurement by duration extends.
    """
    name = _engine_name(engine)
    dur = parse_duration(duration, f"{name}: duration")
    dur, its = _check_plan(name, dur, iterations)
    warm = parse_duration(warmup, f"{name}: warmup") or 0.0
    max_dur = parse_duration(max_duration, f"{name}: max_duration")
    win = parse_duration(window, f"{name}: window")
    if win is not None and win <= 0:
        raise ConfigError(f"{name}: window={window!r} must be a positive duration such as '1s'")
    if not 0 < float(stability) < 1:
        raise ConfigError(f"{name}: stability={stability!r} must be a fraction in (0, 1), e.g. 0.02 for 2 %")
    b = getattr(engine, "batch", 1) if batch is None else batch
    if b != getattr(engine, "batch", b) and hasattr(engine, "check_batch"):
        b = engine.check_batch(b)

    clock = engine.clock
    now = clock.now
    wants_device_time = _reports_device_time(engine)

    # warm-up: at least one iteration when asked for, so first-call costs stay out of the window
    warm_lat: List[float] = []
    if warm > 0:
        t = now()
        _run_until(engine, b, now, t, t + warm, None, warm_lat, [], None)

    if before_window is not None:
        before_window()

    lat: List[float] = []
    ends: List[float] = []
    dev: Optional[List[float]] = [] if wants_device_time else None
    windows: List[float] = []
    stable: Optional[bool] = None
    looks = 1
    window = MeasuredWindow.around(telemetry, telemetry_interval, what=name)
    with window:
        window.load(_prediction(engine, b))
        t0 = now()
        if dur is not None or its is not None:
            t_end = _run_until(engine, b, now, t0, None if dur is None else t0 + dur, its, lat, ends, dev)
            mode = "iterations" if dur is None else ("duration" if its is None else "duration+iterations")
            measured = 1.0
            while extend is not None and mode == "duration" and lat:
                # a provisional measurement (copies: the lists grow on) for the comparison to look at
                so_far = _measurement(engine, name, b, list(lat), None if dev is None else list(dev),
                                      t_end - t0, window.peek(len(lat) * b),
                                      _windows_by_count(ends, t0, b), None, environment, {})
                more = extend(so_far, measured)
                if not more or more <= 0:
                    break
                t_end = _run_until(engine, b, now, t_end, t_end + more * dur, None, lat, ends, dev)
                measured += more
                looks += 1
        else:
            mode = "adaptive"
            if win is None:
                est = (sum(warm_lat) / len(warm_lat)) if warm_lat else 0.0
                win = max(DEFAULT_WINDOW, 10 * est)
            deadline = t0 + (max_dur if max_dur is not None else 60.0)
            bounds: List[float] = [t0]
            t_end = t0
            stable = False
            while True:
                n_before = len(lat)
                t_end = _run_until(engine, b, now, t_end, t_end + win, None, lat, ends, dev)
                n_win = len(lat) - n_before
                windows.append(n_win * b / (t_end - bounds[-1]) if t_end > bounds[-1] else 0.0)
                bounds.append(t_end)
                if len(windows) >= STABLE_WINDOWS and stable_within(windows[-STABLE_WINDOWS:], stability):
                    stable = True
                    break
                if t_end >= deadline:
                    break
    items = len(lat) * b
    summary = window.finish(items)
    if mode != "adaptive":
        windows = _windows_by_count(ends, t0, b)
    extra = {"mode": mode, "warmup": warm, "warmup_iterations": len(warm_lat)}
    if mode == "adaptive":
        extra.update(window=win, stability=float(stability), max_duration=max_dur)
    if looks > 1:
        extra.update(looks=looks, requested_duration=dur)
    # hook: what the engine says of how it ran (I/O mode, CUDA graphs, build time, placement)
    engine_extra = getattr(engine, "measurement_extra", None)
    if engine_extra is not None:
        extra.update(engine_extra())
    prediction = _prediction(engine, b)
    if prediction is not None and hasattr(prediction, "to_dict"):
        extra["prediction"] = prediction.to_dict()
    window.keep_series(extra)
    return _measurement(engine, name, b, lat, dev, t_end - t0, summary, windows, stable, environment, extra)


def _measurement(engine: Any, name: str, b: int, lat: List[float], dev: Optional[List[float]],
                 duration: float, summary: Any, windows: List[float], stable: Optional[bool],
                 environment: Optional[dict], extra: Dict[str, Any]) -> Measurement:
    device_latencies = None
    host_overhead = None
    if dev and all(d is not None for d in dev):
        device_latencies = [float(d) for d in dev]
        host_overhead = max(0.0, (sum(lat) - sum(device_latencies)) / len(lat))
    return Measurement(
        name=name,
        batch=int(b),
        latencies=lat,
        duration=float(duration),
        items=int(len(lat) * b),
        clock=str(getattr(engine.clock, "kind", "wall")),
        backend=str(getattr(engine, "backend", "")),
        model=str(getattr(engine, "model", "")),
        precision=str(getattr(engine, "precision", "")),
        stable=stable,
        windows=windows,
        host_overhead=host_overhead,
        device_latencies=device_latencies,
        engine_memory=getattr(engine, "memory_bytes", None),
        telemetry=summary,
        environment=dict(environment or {}),
        extra=extra,
    )
