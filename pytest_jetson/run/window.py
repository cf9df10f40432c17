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
"""

from typing import Any, Optional

from ..errors import ConfigError


class MeasuredWindow:
    def __init__(self, sampler: Any = None) -> None:
        self.sampler = sampler
        self._open = False

    @classmethod
    def around(cls, telemetry: Any, interval: Optional[float] = None, what: str = "perf.measure") -> "MeasuredWindow":
        """A window sampled by ``telemetry``: None, False or "none" (no sampling), a sampler (a
        context manager with ``summary``, used as is) or a factory with ``sample(interval=...)``
        (the session's ``TelemetryFactory``)."""
        if telemetry is None or telemetry is False or telemetry == "none":
            return cls(None)
        if hasattr(telemetry, "__enter__"):
            return cls(telemetry)
        if hasattr(telemetry, "sample"):
            return cls(telemetry.sample() if interval is None else telemetry.sample(interval=interval))
        raise ConfigError(f"{what}: telemetry={telemetry!r} is neither 'none', a sampler nor a "
                          "telemetry factory (the telemetry fixture)")

    # -- the span ---------------------------------------------------------------------------
    def open(self) -> None:
        if self.sampler is not None and not self._open:
            self.sampler.__enter__()
            self._open = True

    def close(self) -> None:
        if self._open:
            self._open = False
            self.sampler.__exit__(None, None, None)

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
        return summary() if callable(summary) else summary

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
