"""The sampler: reads a source at a fixed interval beside a measurement.

Real sources are read by a background thread on the monotonic clock (``time.perf_counter``).
The simulated source has no thread: the window's start and end are taken on the virtual clock
and the source generates the series for that window when the sampler stops::

    with Sampler(source, interval="50ms") as t:
        run_the_workload()
    t.summary.power_mean_w, t.series.board_power_w
"""

import math
import threading
import time
import warnings
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ..devices import detect
from ..errors import ConfigError
from ..units import parse_duration
from .base import Reading, Source, SourceDied, TelemetryWarning
from .series import Series
from .summary import TelemetrySummary, summarize

DEFAULT_INTERVAL = 0.1
MIN_INTERVAL = 0.01
#: Consecutive read errors after which a source counts as dead.
MAX_CONSECUTIVE_ERRORS = 5


def parse_interval(interval: Union[str, float, int, None]) -> float:
    if interval is None:
        return DEFAULT_INTERVAL
    seconds = parse_duration(interval, what="telemetry interval")
    if seconds is None or seconds < MIN_INTERVAL - 1e-12:
        raise ConfigError(
            f"telemetry interval {interval!r} is below the minimum of 10 ms; "
            "write interval='10ms' or longer"
        )
    return float(seconds)


def _detect_reader(fn_name: str) -> Callable[[], Any]:
    """A reader of the board's state through device detection (None where it cannot tell)."""

    def read() -> Any:
        try:
            return getattr(detect, fn_name)()
        except Exception:  # detection reads odd board files; a reader must never break a sampler
            return None

    return read


def _as_mode(value: Any) -> Optional[str]:
    if value is None:
        return None
    for attr in ("name", "mode"):
        inner = getattr(value, attr, None)
        if isinstance(inner, (str, int)):
            return str(inner)
    return str(value)


def _as_clocks(value: Any) -> Optional[bool]:
    if value is None or isinstance(value, bool):
        return value
    for attr in ("active", "enabled", "on", "status"):
        inner = getattr(value, attr, None)
        if isinstance(inner, bool):
            return inner
        if isinstance(inner, str):
            return inner.strip().lower() in ("on", "active", "running", "true", "1")
    if isinstance(value, str):
        return value.strip().lower() in ("on", "active", "running", "true", "1")
    return bool(value)


class Sampler:
    """Samples ``source`` every ``interval`` (seconds or a string such as ``"50ms"``; default
    100 ms, at least 10 ms) while the ``with`` block runs. After it: ``summary`` (a
    ``TelemetrySummary``) and ``series`` (a ``Series``). Set ``items`` to the inputs processed
    in the window to get energy per item."""

    def __init__(
        self,
        source: Source,
        interval: Union[str, float, None] = DEFAULT_INTERVAL,
        clock: Any = None,
        items: Optional[int] = None,
        tried: Sequence[Tuple[str, str]] = (),
        power_mode_reader: Optional[Callable[[], Any]] = None,
        jetson_clocks_reader: Optional[Callable[[], Any]] = None,
        max_gpu_clock_mhz: Optional[float] = None,
        trip_points_c: Optional[Dict[str, float]] = None,
        workload: Any = None,
    ) -> None:
        self.source = source
        #: For a simulated source: the load for the whole window (a Prediction), or None.
        self.workload = workload
        self.interval = parse_interval(interval)
        self.clock = clock
        self._items = items
        self.tried = list(tried)
        self._power_mode_reader = power_mode_reader or _detect_reader("read_power_mode")
        self._jetson_clocks_reader = jetson_clocks_reader or _detect_reader("read_jetson_clocks")
        self.max_gpu_clock_mhz = max_gpu_clock_mhz
        self.trip_points_c = trip_points_c
        self._readings: List[Reading] = []
        #: what a virtual source generated, a Series of typed columns per call (no Reading each)
        self._parts: List[Series] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._died: Optional[Tuple[float, str]] = None
        self._errors: List[str] = []
        self._warnings: List[str] = []
        self._mode_start: Tuple[Optional[str], Optional[bool]] = (None, None)
        self.start_time: Optional[float] = None
        self.end_time: Optional[float] = None
        self._series: Optional[Series] = None
        self._summary: Optional[TelemetrySummary] = None
        self._running = False
        #: virtual sampling: where the readings generated so far end (peek generates up to now)
        self._generated: Optional[float] = None

    # -- time --------------------------------------------------------------------------------
    @property
    def virtual(self) -> bool:
        return bool(getattr(self.source, "virtual", False))

    def now(self) -> float:
        if self.clock is not None and (self.virtual or getattr(self.clock, "kind", "") == "wall"):
            return float(self.clock.now())
        return time.perf_counter()

    # -- modes -------------------------------------------------------------------------------
    def _read_modes(self) -> Tuple[Optional[str], Optional[bool]]:
        mode = self.source.power_mode()
        if mode is None:
            mode = self._power_mode_reader()
        clocks = self.source.jetson_clocks()
        if clocks is None:
            clocks = self._jetson_clocks_reader()
        return _as_mode(mode), _as_clocks(clocks)

    # -- simulated load (no-op for real sources) ----------------------------------------------
    def set_load(self, workload: Any, t_start: Optional[float] = None, t_end: Optional[float] = None) -> None:
        """Tell a simulated source what runs from ``t_start`` to ``t_end`` (virtual seconds;
        None: now / until ``end_load`` or the sampler stops). Real sources ignore it."""
        setter = getattr(self.source, "set_load", None)
        if setter is not None:
            setter(workload, self.now() if t_start is None else t_start, t_end)

    def end_load(self, t_end: Optional[float] = None) -> None:
        ender = getattr(self.source, "end_load", None)
        if ender is not None:
            ender(self.now() if t_end is None else t_end)

    # -- life cycle --------------------------------------------------------------------------
    def start(self) -> "Sampler":
        if not self.virtual:
            self.source.start(self.interval)
        self._mode_start = self._read_modes()
        self.start_time = self.now()
        self._running = True
        if self.workload is not None:
            self.set_load(self.workload, self.start_time, None)
        if not self.virtual:
            self._thread = threading.Thread(target=self._run, name="pytest-jetson-telemetry", daemon=True)
            self._thread.start()
        return self

    def _run(self) -> None:
        interval = self.interval
        next_t = time.perf_counter()
        consecutive = 0
        while not self._stop.is_set():
            now = self.now()
            try:
                got = self.source.collect(now)
            except SourceDied as exc:
                self._died = (now, str(exc))
                return
            except Exception as exc:  # a flaky read costs a sample; five in a row end the source
                consecutive += 1
                self._errors.append(f"{type(exc).__name__}: {exc}")
                if consecutive >= MAX_CONSECUTIVE_ERRORS:
                    self._died = (now, f"{consecutive} reads failed in a row, last: {type(exc).__name__}: {exc}")
                    return
            else:
                consecutive = 0
                if got:
                    with self._lock:
                        self._readings.extend(got)
            next_t += interval
            delay = next_t - time.perf_counter()
            if delay < 0:
                # Behind schedule (a slow read, a busy machine): skip the missed ticks instead of
                # bursting reads to catch up, which would bunch the timestamps.
                next_t += math.ceil(-delay / interval) * interval
                delay = next_t - time.perf_counter()
            if delay > 0:
                self._wait(delay)

    def _wait(self, delay: float) -> None:
        # On the stop event, not in a sleep: stop() ends the thread at once instead of after the
        # rest of the interval (100 ms per measurement at the default interval).
        self._stop.wait(delay)

    def stop(self) -> "Sampler":
        if not self._running:
            return self
        self._running = False
        self.end_time = self.now()
        readings = self._last_readings()
        # Asked before the source stops: jtop answers these only while connected.
        mode_end = self._read_modes()
        max_clock = self.source.max_gpu_clock_mhz() or self.max_gpu_clock_mhz
        trips = self._trip_points()
        if not self.virtual:
            self.source.stop()
        self._series = self._collected(readings)
        self._parts = []  # held once, in the series
        gaps, warns, malformed = self._problems(self._series)
        self._summary = summarize(
            self._series,
            source=self.source.name,
            # Gaps are judged against the pace the source really keeps (jtop's service may run
            # slower than asked).
            interval=max(self.interval, getattr(self.source, "effective_interval", None) or 0.0),
            tried=self.tried,
            items=self.items,
            start=self.start_time,
            end=self.end_time,
            power_basis=getattr(self.source, "power_basis", None),
            memory_scope=getattr(self.source, "memory_scope", None),
            max_gpu_clock_mhz=max_clock,
            trip_points_c=trips,
            power_mode=(self._mode_start[0], mode_end[0]),
            jetson_clocks=(self._mode_start[1], mode_end[1]),
            gaps=gaps,
            malformed_lines=malformed,
            warnings=warns,
        )
        self._summary.series = self._series
        # Only what went wrong with the source is raised as a warning; gaps from a busy host
        # stay in the summary, where reports show them.
        for w in warns:
            warnings.warn(w, TelemetryWarning, stacklevel=3)
        return self

    def _last_readings(self) -> List[Reading]:
        """Every reading of the window: generated to its end (virtual), or the thread stopped
        and the source read once more (real)."""
        if self.virtual:
            self.end_load(self.end_time)
            self._generate(self.end_time, last=True)
            return self._readings
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=max(5.0, 10 * self.interval))
        try:
            self._readings.extend(self.source.collect(self.now()) if self._died is None else [])
        except Exception:
            pass
        return self._readings

    def _collected(self, readings: List[Reading]) -> Series:
        """The series of ``readings`` (polled) and of the parts generated so far, in time order."""
        clock = "virtual" if self.virtual else "wall"
        polled = Series.from_readings(readings, clock=clock)
        if not self._parts:
            return polled
        return Series.concat(self._parts + ([polled] if len(polled) else []), clock=clock)

    def _problems(self, series: Series) -> Tuple[List[Tuple[float, float]], List[str], int]:
        """(gaps, warnings, malformed lines): what went wrong with the source in the window."""
        gaps: List[Tuple[float, float]] = []
        warns: List[str] = []
        if self._died is not None:
            t_died, why = self._died
            last = float(series.t.max()) if len(series) else self.start_time
            gaps.append((float(last), float(self.end_time)))
            warns.append(
                f"telemetry source {self.source.name} stopped during the run ({why}); kept "
                f"{len(series)} samples, no data from {last - self.start_time:.3g} s to the end "
                f"({self.end_time - last:.3g} s)"
            )
        notes = getattr(self.source, "window_notes", None)
        if callable(notes):
            warns += notes(self.end_time)
        if self._errors and self._died is None:
            warns.append(f"telemetry source {self.source.name}: {len(self._errors)} failed reads, last: {self._errors[-1]}")
        malformed = int(getattr(self.source, "malformed_lines", 0) or 0)
        if malformed:
            last_bad = getattr(self.source, "last_malformed", None)
            warns.append(
                f"telemetry source {self.source.name}: skipped {malformed} line(s) it could not read"
                + (f" (last: {last_bad!r})" if last_bad else "")
            )
        if not len(series) and self.source.name != "none" and self._died is None:
            warns.append(
                f"telemetry source {self.source.name} gave no samples in {self.end_time - self.start_time:.3g} s"
            )
        return gaps, warns, malformed

    def _generate(self, until: float, last: bool = False) -> None:
        """Virtual sampling: the readings from where the last call stopped to ``until``, on the
        grid ``start + k * interval`` (and ``until`` itself when ``last``), so that a peek
        mid-window and the final readings are one series, each instant drawn once."""
        begin = self.start_time if self._generated is None else self._generated + self.interval
        if last:
            self._add(self.source.generate(begin, until, self.interval))
            self._generated = until
            return
        n = int(math.floor((until - begin) / self.interval + 1e-9))
        if n >= 0:
            end = begin + n * self.interval
            self._add(self.source.generate(begin, end, self.interval))
            self._generated = end

    def _add(self, generated: Any) -> None:
        self._parts.append(generated if isinstance(generated, Series)
                           else Series.from_readings(generated, clock="virtual"))

    def peek(self) -> TelemetrySummary:
        """The summary of the window so far, while sampling goes on (for a measurement that
        decides whether to extend itself). Warnings wait for the final summary."""
        if not self._running:
            return self.summary
        end = self.now()
        if self.virtual:
            self._generate(end)
        with self._lock:
            readings = list(self._readings)
        series = self._collected(readings)
        if self._parts and not readings:
            self._parts = [series]  # the next peek joins what comes after it to one part
        out = summarize(series, source=self.source.name, interval=self.interval, tried=self.tried,
                        items=self.items, start=self.start_time, end=end,
                        power_basis=getattr(self.source, "power_basis", None),
                        memory_scope=getattr(self.source, "memory_scope", None))
        out.series = series
        return out

    def __enter__(self) -> "Sampler":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- results -----------------------------------------------------------------------------
    @property
    def series(self) -> Series:
        if self._series is not None:
            return self._series
        with self._lock:
            readings = list(self._readings)
        return self._collected(readings) if self._parts else Series.from_readings(readings)

    @property
    def items(self) -> Optional[int]:
        return self._items

    @items.setter
    def items(self, n: Optional[int]) -> None:
        """Inputs processed in the window: the summary then reports energy per item."""
        self._items = None if n is None else int(n)
        if self._summary is not None:
            self._apply_items()

    @property
    def summary(self) -> TelemetrySummary:
        if self._summary is not None:
            return self._summary
        return summarize(self.series, source=self.source.name, interval=self.interval, tried=self.tried, items=self.items)

    def _trip_points(self) -> Optional[Dict[str, float]]:
        if self.trip_points_c is not None:
            return self.trip_points_c
        hook = getattr(self.source, "trip_points_c", None)
        try:
            return hook() if callable(hook) else None
        except Exception:
            return None

    def _apply_items(self) -> None:
        s = self._summary
        assert s is not None
        s.items = self.items
        s.energy_per_item_j = (
            s.energy_j / self.items if self.items and self.items > 0 and s.energy_j is not None else None
        )

    def __repr__(self) -> str:
        state = "running" if self._running else ("done" if self._summary else "idle")
        return f"<Sampler {self.source.name} every {self.interval * 1000:.0f} ms, {state}>"
