"""A user's function measured like an engine: ``perf.measure(fn, items=N, inputs=frames)``.

``FunctionWorkload`` wraps the function in the Engine contract, so the harness runs it unchanged
(warm-up, duration / iterations / adaptive stop, the gate's extension, the telemetry window):
``infer(batch)`` makes exactly one call, and ``timed_run`` is the harness's loop for it. A loop
of its own (arrival rates) calls ``prepare()`` (fetch the next input, outside its timing) and then
``call()`` (one timed call on it).

* ``items``: items each call processes (the Measurement's batch), a positive integer;
* ``inputs``: what each call gets as its one argument, cycled. A list, tuple, array (one input
  per first-axis entry) or other re-iterable is read once; an iterator or generator is consumed
  lazily (an endless one never runs out; one that runs out is an error). Each input is fetched
  before the call's clock starts: fetching is not the function's time. Without ``inputs`` the
  function is called with no argument.

Time per call is on the session's clock. On the simulated board (a ``SimClock``) engine calls
inside the function advance virtual time as they always do, and the function's own host code is
measured and scaled to the board's CPU (``run.host_time``; see ``SimClock.host_begin``);
``Measurement.extra["timing"]`` says how much of a call each part was. Elsewhere a call's time
is ``time.perf_counter`` time.

A function that raises stops the measurement: nothing is recorded and the exception goes on
with the function's own frames first (``Recorder.measure`` trims the harness's).
"""

import itertools
import time
from typing import Any, Callable, Dict, Iterator, List, Optional

from ..clock import WallClock
from ..engines.base import STALL_ITERATIONS, Engine, loop_limits
from ..errors import ConfigError, EngineError
from .measurement import Measurement, Samples
from .stages import StageLog

_NO_INPUT = object()  # the function takes no argument
_PENDING = object()  # call(): the input prepare() readied


def check_items(items: Any, name: str) -> int:
    if isinstance(items, bool) or not isinstance(items, int) or items < 1:
        try:
            ok = not isinstance(items, (bool, float, str)) and int(items) == items and int(items) >= 1
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ConfigError(f"perf.measure({name}): items={items!r} is not a positive whole number; pass "
                              "how many items (frames, images) one call processes, e.g. items=8")
    return int(items)


def function_name(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__)


class _Inputs:
    """The inputs of successive calls: a materialised sequence cycled, or an iterator read lazily."""

    def __init__(self, inputs: Any, name: str) -> None:
        self.name = name
        try:
            it = iter(inputs)
        except TypeError:
            raise ConfigError(f"perf.measure({name}): inputs={type(inputs).__name__} is not iterable; "
                              "pass a list, an array of frames or a generator") from None
        self.count: Optional[int] = None
        if it is inputs:  # an iterator: possibly endless, read as needed
            self.next: Callable[[], Any] = self._lazy(it)
            return
        items = list(inputs)
        if not items:
            raise ConfigError(f"perf.measure({name}): inputs is empty; pass at least one input")
        self.count = len(items)
        self.next = itertools.cycle(items).__next__

    def _lazy(self, it: Iterator[Any]) -> Callable[[], Any]:
        taken = [0]

        def take() -> Any:
            for x in it:
                taken[0] += 1
                return x
            raise ConfigError(f"perf.measure({self.name}): the inputs iterator ran out after {taken[0]} "
                              "inputs; pass a list (cycled), or an endless generator (itertools.cycle)")

        return take


class FunctionWorkload(Engine):
    """``fn`` as an Engine the harness can measure (see the module's documentation)."""

    reports_device_time = False

    def __init__(self, fn: Callable[..., Any], items: Any = 1, inputs: Any = None, name: Optional[str] = None,
                 clock: Any = None, backend: str = "host", host_scale: Any = None,
                 host_load: Optional[Callable[[Any], Any]] = None, board: bool = False) -> None:
        super().__init__()
        if not callable(fn):
            raise ConfigError(f"perf.measure: {type(fn).__name__} is neither an engine nor a function")
        self.fn = fn
        self.name = str(name) if name else function_name(fn)
        self.model = self.name
        self.precision = ""
        self.batch = self.max_batch = check_items(items, self.name)
        self.backend = str(backend)  # type: ignore[misc]
        self.clock = clock if clock is not None else WallClock()
        self.inputs_ = None if inputs is None else _Inputs(inputs, self.name)
        self._pending: Any = _PENDING
        #: board seconds per host second (``run.host_time.HostScale``) on a virtual clock, else None
        self.host_scale = host_scale if getattr(self.clock, "kind", None) == "virtual" else None
        self._host_load = host_load
        self.stages = StageLog(self.clock, board=board)
        #: calls made so far (warm-up included); the host seconds of each, on a virtual clock, as
        #: C doubles (8 bytes a call: a long measurement would otherwise keep a float object each)
        self.calls = 0
        self.host_seconds = Samples()
        #: the exception the function raised, for the recorder to tell it from the harness's own
        self.raised: Optional[BaseException] = None

    def check_batch(self, batch: Any) -> int:
        if batch != self.batch:
            raise EngineError(f"perf.measure({self.name}): batch={batch!r} does not apply to a function; "
                              "say how many items one call processes with items=")
        return int(batch)

    # -- one call ---------------------------------------------------------------------------------
    def prepare(self) -> Any:
        """Fetch the next call's input (outside the timed region): returned, and kept for the
        next ``call()`` made without one."""
        self._pending = x = _NO_INPUT if self.inputs_ is None else self.inputs_.next()
        return x

    def call(self, prepared: Any = _PENDING) -> Any:
        """One call of the function on ``prepared`` (default: what ``prepare`` readied, fetched
        now if nothing was), stage times kept; on a virtual clock its host time is measured and
        added."""
        if prepared is _PENDING:
            prepared = self._pending if self._pending is not _PENDING else self.prepare()
            self._pending = _PENDING
        fn = self.fn
        scale = self.host_scale
        try:
            if scale is not None:
                clock = self.clock
                clock.host_begin(scale.scale, self._host_load)
                try:
                    out = fn() if prepared is _NO_INPUT else fn(prepared)
                finally:
                    self.host_seconds.append(clock.host_end())
            else:
                out = fn() if prepared is _NO_INPUT else fn(prepared)
        except BaseException as exc:
            self.raised = exc
            raise
        self.calls += 1
        if self.stages.dirty:
            self.stages.end_call(self.calls)
        return out

    def infer(self, batch: Optional[int] = None) -> Any:
        return self.call()

    def _infer(self, batch: int) -> Any:
        return self.call()

    # -- the harness's loop -----------------------------------------------------------------------
    def timed_run(self, batch: int, t_start: float, until_t: Optional[float], until_n: Optional[int],
                  latencies: List[float], ends: List[float], device_times: Optional[List[float]]) -> float:
        """Calls back to back from ``t_start`` until ``until_t`` or ``until_n`` calls: one clock
        read per call without inputs or on a virtual clock (where nothing between calls moves
        it); with inputs on a wall clock, the input is fetched before a second read starts the
        call's clock."""
        if self.host_scale is not None or self.inputs_ is None:
            return self._run_back_to_back(t_start, until_t, until_n, latencies, ends)
        return self._run_fed(t_start, until_t, until_n, latencies, ends)

    def _now(self) -> Callable[[], float]:
        # the wall clock's reading without its method's frame: a call's share of the loop
        return time.perf_counter if type(self.clock) is WallClock else self.clock.now

    def _run_back_to_back(self, t_start: float, until_t: Optional[float], until_n: Optional[int],
                          latencies: List[float], ends: List[float]) -> float:
        now = self._now()
        prev = t_start
        limit_t, limit_n = loop_limits(until_t, until_n)
        append_lat, append_end = latencies.append, ends.append
        stages = self.stages
        n = 0
        if self.host_scale is None:  # the wall clock, no inputs: the bare loop
            fn = self.fn
            calls = self.calls
            try:
                while n != limit_n and prev < limit_t:
                    fn()
                    t = now()
                    append_lat(t - prev)
                    append_end(t)
                    prev = t
                    n += 1
                    if stages.dirty:
                        stages.end_call(calls + n)
            except BaseException as exc:
                self.raised = exc
                raise
            finally:
                self.calls = calls + n
            return prev
        call, prepare = self.call, self.prepare
        while n != limit_n and prev < limit_t:
            prepare()
            call()
            t = now()
            append_lat(t - prev)
            append_end(t)
            prev = t
            n += 1
            if n == STALL_ITERATIONS and t == t_start:
                raise EngineError(f"perf.measure({self.name}): the virtual clock did not move in "
                                  f"{STALL_ITERATIONS} calls")
        return prev

    def _run_fed(self, t_start: float, until_t: Optional[float], until_n: Optional[int],
                 latencies: List[float], ends: List[float]) -> float:
        now = self._now()
        prev = t_start
        limit_t, limit_n = loop_limits(until_t, until_n)
        append_lat, append_end = latencies.append, ends.append
        take, fn, stages = self.inputs_.next, self.fn, self.stages  # type: ignore[union-attr]
        calls = self.calls
        n = 0
        try:
            while n != limit_n and prev < limit_t:
                x = take()
                t0 = now()
                fn(x)
                t = now()
                append_lat(t - t0)
                append_end(t)
                prev = t
                n += 1
                if stages.dirty:
                    stages.end_call(calls + n)
        except ConfigError:
            raise
        except BaseException as exc:
            self.raised = exc
            raise
        finally:
            self.calls = calls + n
        return prev

    # -- what the measurement carries ---------------------------------------------------------------
    def measurement_extra(self, batch: int) -> Dict[str, Any]:
        out: Dict[str, Any] = {"function": self.name, "items_per_call": self.batch}
        if self.inputs_ is not None:
            out["inputs"] = self.inputs_.count if self.inputs_.count is not None else "iterator"
        return out

    def finish(self, m: Measurement) -> Measurement:
        """Attach what only the function knows to the harness's Measurement of it: its stages
        and how its time splits (``extra["timing"]``)."""
        n = len(m.latencies)
        first, last = self.calls - n + 1, self.calls
        m.stages = stage_measurements(self.stages, m, first, last)
        m.extra["timing"] = self.timing(m)
        return m

    def timing(self, m: Measurement) -> Dict[str, Any]:
        """Mean seconds per call: simulated (engines on the virtual clock), host measured, and
        host scaled to the board; on a wall clock everything is measured, nothing scaled."""
        n = len(m.latencies)
        mean = (sum(m.latencies) / n) if n else 0.0
        scale = self.host_scale
        if scale is None:
            return {"simulated_s": 0.0, "host_measured_s": mean, "host_scale": 1.0, "host_scaled_s": mean,
                    "basis": "measured (time.perf_counter), not scaled"}
        measured = _mean_of_last(self.host_seconds, n)
        scaled = measured * scale.scale
        out = {"simulated_s": max(0.0, mean - scaled), "host_measured_s": measured,
               "host_scale": scale.scale, "host_scaled_s": scaled,
               "basis": (f"engines simulated; host Python measured and scaled x{scale.scale:.2f} to the "
                         f"board's CPU ({scale.board_cpu})")}
        out.update({k: v for k, v in scale.to_dict().items() if k != "host_scale"})
        if scale.board_score is None:
            out["basis"] = "engines simulated; host Python measured, not scaled (the board's CPU figure is unknown)"
        return out


def _mean_of_last(values: Samples, n: int) -> float:
    """The mean of the last ``n`` values (0.0 for none), summed in order where they lie: the
    sum a list slice gives, without copying them."""
    with memoryview(values) as view:
        last = view[max(0, len(values) - n):]
        try:
            return sum(last) / len(last) if len(last) else 0.0
        finally:
            last.release()  # a viewed array cannot grow


def stage_measurements(log: StageLog, parent: Measurement, first_call: int, last_call: int) -> Dict[str, Measurement]:
    """One Measurement per stage that ran in the calls ``first_call`` .. ``last_call`` (the
    parent's measured calls), with the parent's duration, items, batch, clock and environment."""
    out: Dict[str, Measurement] = {}
    calls = last_call - first_call + 1
    for name, times in log.per_stage(first_call, last_call).items():
        out[name] = Measurement(
            name=name, batch=parent.batch, latencies=times, duration=parent.duration,
            items=parent.items, clock=parent.clock, backend=parent.backend, model=parent.model,
            precision=parent.precision, environment=dict(parent.environment),
            extra={"stage": name, "calls": len(times), "of_calls": calls},
        )
    return out
