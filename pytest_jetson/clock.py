"""A virtual clock: simulated time that advances only when the simulated device does work.

A simulated 10 s measurement advances this clock by 10 s in a few milliseconds of real time.
Every simulated engine, pool and telemetry source of one run shares one ``SimClock``. It is also
the one record of what runs when: engines and pools announce on it what they run (``announce``),
and a telemetry source on the same clock reads the board under whatever load is running,
whoever started it (``load_at``).
"""

import bisect
import threading
import time
from typing import Any, List, Optional


class SimClock:
    """Monotonic virtual seconds since creation (``now``), moved forward by ``advance``."""

    kind = "virtual"

    def __init__(self, start: float = 0.0) -> None:
        self._now = float(start)
        self._lock = threading.Lock()
        #: [start, end, load] of every busy stretch announced, in order of start.
        self.loads: List[List[Any]] = []
        self._starts: List[float] = []

    def now(self) -> float:
        return self._now

    def announce(self, load: Any, start: float, end: float) -> List[Any]:
        """Record that ``load`` (a Prediction) runs from ``start`` to ``end``; the returned record's
        end may be moved later by its owner while the stretch continues."""
        rec = [float(start), float(end), load]
        with self._lock:
            if self._starts and rec[0] < self._starts[-1]:  # a stretch announced after a later one
                i = bisect.bisect_right(self._starts, rec[0])
                self.loads.insert(i, rec)
                self._starts.insert(i, rec[0])
            else:
                self.loads.append(rec)
                self._starts.append(rec[0])
        return rec

    def load_at(self, t: float) -> Optional[Any]:
        """The load announced as running at virtual time ``t`` (the latest to start), or None."""
        i = bisect.bisect_right(self._starts, t)
        for rec in reversed(self.loads[max(0, i - 64):i]):
            if rec[0] <= t < rec[1]:
                return rec[2]
        return None

    def first_load(self) -> Optional[Any]:
        return self.loads[0][2] if self.loads else None

    def load_edges(self, a: float, b: float) -> List[float]:
        """Starts and ends of announced stretches strictly between ``a`` and ``b``."""
        i = bisect.bisect_right(self._starts, b)
        out = set()
        for rec in self.loads[:i]:
            for x in rec[:2]:
                if a < x < b:
                    out.add(x)
        return sorted(out)

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
        return time.perf_counter()

    def advance(self, seconds: float) -> float:
        time.sleep(seconds)
        return self.now()
