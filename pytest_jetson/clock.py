"""A virtual clock: simulated time that advances only when the simulated device does work.

A simulated 10 s measurement advances this clock by 10 s in a few milliseconds of real time.
Every simulated engine, pool and telemetry source of one run shares one ``SimClock``.
"""

import threading


class SimClock:
    """Monotonic virtual seconds since creation (``now``), moved forward by ``advance``."""

    kind = "virtual"

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> float:
        if seconds < 0:
            raise ValueError(f"a clock cannot go back ({seconds} s)")
        with self._lock:
            self._now += seconds
            return self._now

    def __repr__(self) -> str:
        return f"SimClock(now={self._now:.6f})"


class WallClock:
    """The host's monotonic clock, with the same interface as ``SimClock``."""

    kind = "wall"

    def now(self) -> float:
        import time

        return time.perf_counter()

    def advance(self, seconds: float) -> float:
        import time

        time.sleep(seconds)
        return self.now()
