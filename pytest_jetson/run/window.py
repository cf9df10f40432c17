"""The measured window with telemetry around it: what the harness and the pool share.

A window opens a sampler (when telemetry is on) right before the timed span, closes it right
after, and hands the measurement its telemetry summary (with energy per item once the items are
known) and its series (for timeline plots). What runs in the window a simulated source reads
from the virtual clock, where engines and pools announce it (``SimClock.announce``)::

    window = MeasuredWindow.around(telemetry, interval=0.1, what="perf.measure")
    with window:
        ... the timed span ...
    summary = window.finish(items)
    series = window.series()
    measurement.extra.update(window.extra())

On a real board the over-current throttle counters are read right before and right after the
span (``telemetry.throttle_counters``): events in between go to ``extra()["throttle_events"]``,
and the summary says the board throttled. Read outside the span, they cost it nothing.
"""

from typing import TYPE_CHECKING, Any, Dict, Optional

from ..errors import ConfigError

if TYPE_CHECKING:
    from ..telemetry.throttle_counters import ThrottleCounters


class MeasuredWindow:
    def __init__(self, sampler: Any = None, counters: Optional["ThrottleCounters"] = None) -> None:
        self.sampler = sampler
        self.counters = counters
        self.throttle_events: Dict[str, int] = {}
        self._open = False
        self._before: Optional[Dict[str, int]] = None

    @classmethod
    def around(cls, telemetry: Any, interval: Optional[float] = None, what: str = "perf.measure",
               clock: Any = None) -> "MeasuredWindow":
        """A window sampled by ``telemetry``: None, False or "none" (no sampling), a sampler (a
        context manager with ``summary``, used as is) or a factory with ``sample(interval=...)``
        (the session's ``TelemetryFactory``; for what runs on ``clock``, its ``for_clock``)."""
        if telemetry is None or telemetry is False or telemetry == "none":
            return cls(None)
        if hasattr(telemetry, "__enter__"):
            return cls(telemetry)
        if clock is not None and hasattr(telemetry, "for_clock"):
            telemetry = telemetry.for_clock(clock)
        if hasattr(telemetry, "sample"):
            # the board's counters (and the sysfs readers behind them) only where telemetry is
            # sampled: a window without it, a pool worker's, imports none of them
            from ..telemetry.throttle_counters import counters_for

            return cls(telemetry.sample() if interval is None else telemetry.sample(interval=interval),
                       counters_for(telemetry))
        raise ConfigError(f"{what}: telemetry={telemetry!r} is neither 'none', a sampler nor a "
                          "telemetry factory (the telemetry fixture)")

    # -- the span ---------------------------------------------------------------------------
    def open(self) -> None:
        if self._open:
            return
        if self.counters is not None:
            self._before = self.counters.read()
        if self.sampler is not None:
            self.sampler.__enter__()
        self._open = True

    def close(self) -> None:
        if not self._open:
            return
        self._open = False
        if self.sampler is not None:
            self.sampler.__exit__(None, None, None)
        if self.counters is not None:
            self.throttle_events = self.counters.increments(self._before, self.counters.read())

    def __enter__(self) -> "MeasuredWindow":
        self.open()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- the results ------------------------------------------------------------------------
    def finish(self, items: int) -> Any:
        """The telemetry summary of the closed window, with ``items`` for energy per item (None
        without telemetry)."""
        self.close()
        if self.sampler is None:
            return None
        try:
            self.sampler.items = items
        except AttributeError:
            pass  # a sampler without items: the summary keeps what it computed
        summary = getattr(self.sampler, "summary", None)
        summary = summary() if callable(summary) else summary
        self._annotate(summary)
        return summary

    def extra(self) -> Dict[str, Any]:
        """What the measurement's ``extra`` records of the window: over-current events, if any."""
        return {"throttle_events": dict(self.throttle_events)} if self.throttle_events else {}

    def _annotate(self, summary: Any) -> None:
        """The summary says the board throttled in the window, or (once per session) that its
        counters cannot be read."""
        warnings = getattr(summary, "warnings", None)
        if self.counters is None or not isinstance(warnings, list):
            return
        if self.throttle_events:
            from ..telemetry.throttle_counters import describe

            warnings.append(describe(self.throttle_events))
            reasons = getattr(summary, "throttle_reasons", None)
            if isinstance(reasons, list):
                reasons.append("over-current: " + ", ".join(f"{k} +{v}" for k, v in sorted(self.throttle_events.items())))
                summary.throttled = True
        note = self.counters.note()
        if note:
            warnings.append(note)

    def peek(self, items: int) -> Any:
        """The telemetry summary of the window so far, sampling going on (None without telemetry
        or with a sampler that cannot tell before it stops)."""
        peek = getattr(self.sampler, "peek", None) if self._open else None
        if peek is None:
            return None
        try:
            self.sampler.items = items
        except AttributeError:
            pass
        return peek()

    def series(self) -> Any:
        """The window's telemetry time series (``telemetry.series.Series``), None without samples."""
        series = getattr(self.sampler, "series", None) if self.sampler is not None else None
        return series if series is not None and hasattr(series, "to_dict") and len(series) else None
